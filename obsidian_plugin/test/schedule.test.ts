/**
 * Why the plugin does not call ts-fsrs's scheduler: it counts elapsed days by UTC
 * calendar date, Python's `fsrs` by whole days of real time. The sequence and the
 * values are those measured with Python's fsrs 6.x and ts-fsrs 5.4.2 (desired retention 0.9,
 * steps 1 m / 10 m, relearning 10 m, fuzz off); every other case is in the vectors.
 */
import { describe, expect, it } from "vitest";
import { createEmptyCard, fsrs, generatorParameters, Rating } from "ts-fsrs";
import { gradeNote } from "../src/ops";
import { parseDateText } from "../src/pyvalues";
import type { Rating as Grade } from "../src/schedule";
import { MemoryIO } from "./memory-io";

async function replay(sequence: [Grade, string][]): Promise<string[]> {
  const path = "memories/work/fact.md";
  const io = new MemoryIO({ [path]: "---\nid: fact1\n---\nA fact.\n" }, parseDateText("2026-01-05T09:00:00"));
  const notes = [];
  for (const [rating, at] of sequence) notes.push(await gradeNote(io, path, rating, parseDateText(at)).then(() => io.files.get(path)!));
  return notes;
}

describe("FSRS as the Python side schedules it", () => {
  it("counts 23 h 50 min across midnight as a same-day review, where ts-fsrs's scheduler counts a day", async () => {
    const early: [Grade, string][] = [["good", "2026-01-05T09:00:00"], ["good", "2026-01-05T09:10:00"], ["good", "2026-01-06T09:00:00"]];
    const ours = await replay(early);
    expect(ours[2]).toContain("\nstability: 2.3065\n"); // short-term stability, as Python
    const scheduler = fsrs(generatorParameters({ request_retention: 0.9, enable_fuzz: false, maximum_interval: 36500, learning_steps: ["1m", "10m"], relearning_steps: ["10m"] }));
    let card = createEmptyCard(new Date("2026-01-05T09:00:00Z"));
    for (const [, at] of early) card = scheduler.next(card, new Date(at + "Z"), Rating.Good).card;
    expect(card.stability.toFixed(4)).toBe("7.3192");
  });
});

describe("a note whose properties are not closed", () => {
  it("is refused, not rewritten with new properties above the person's own (as the CLI)", async () => {
    const path = "memories/dev/onedash.md";
    const text = "---\ntags: [oops]\nThe only marker is at the top and never closed, about pelicans\n";
    const io = new MemoryIO({ [path]: text }, parseDateText("2026-01-05T09:00:00"));
    await expect(gradeNote(io, path, "good", parseDateText("2026-01-05T10:00:00"))).rejects.toThrow("no --- line closes them");
    expect(io.files.get(path)).toBe(text);
  });
});
