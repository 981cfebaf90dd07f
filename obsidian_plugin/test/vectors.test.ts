/**
 * Replays every case the Python side wrote (vaultmem/integrations/obsidian_vectors.py):
 * the same note, ledger and config, the same grades at the same instants, and the
 * note text, review-log line and ledger lines must come out byte for byte.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ARCHIVE_LOG, archiveNote, gradeNote, restoreNote, REVIEWS } from "../src/ops";
import { LEDGER } from "../src/ledger";
import { parseDateText } from "../src/pyvalues";
import type { Rating } from "../src/schedule";
import { MemoryIO } from "./memory-io";

interface Step { at: string; rating: Rating; session: string; project: string; note?: string; ledger_appended?: string; review_appended?: string; error?: string }
interface Move { op: "archive" | "restore"; at: string; path: string; note: string; ledger_appended: string; archive_appended: string }
interface Case { name: string; config: string; path: string; mtime: string; note: string; ledger: string; reviews: string; steps: Step[]; moves?: Move[] }

const vectors = JSON.parse(readFileSync(new URL("./vectors/grade.json", import.meta.url), "utf-8")) as { cases: Case[] };

describe("grade vectors from the Python CLI", () => {
  it("has at least 200 cases", () => {
    expect(vectors.cases.length).toBeGreaterThanOrEqual(200);
  });

  it.each(vectors.cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const io = new MemoryIO({ [c.path]: c.note, [LEDGER]: c.ledger, [REVIEWS]: c.reviews }, parseDateText(c.mtime));
    if (c.config) io.files.set(".vaultmem/config.yaml", c.config);
    for (const [index, step] of c.steps.entries()) {
      const where = `step ${index + 1} (${step.rating} at ${step.at})`;
      const ledgerBefore = io.files.get(LEDGER) ?? "";
      const reviewsBefore = io.files.get(REVIEWS) ?? "";
      const noteBefore = io.files.get(c.path);
      if (step.error) {
        await expect(gradeNote(io, c.path, step.rating, parseDateText(step.at), step), where).rejects.toThrow(step.error.split(";")[0]);
        expect(io.files.get(c.path), where).toBe(noteBefore);
        expect(io.files.get(LEDGER) ?? "", where).toBe(ledgerBefore);
        break;
      }
      await gradeNote(io, c.path, step.rating, parseDateText(step.at), step);
      expect(io.files.get(c.path), `${where}: the note`).toBe(step.note);
      expect((io.files.get(REVIEWS) ?? "").slice(reviewsBefore.length), `${where}: the review log`).toBe(step.review_appended);
      expect((io.files.get(LEDGER) ?? "").slice(ledgerBefore.length), `${where}: the ledger`).toBe(step.ledger_appended);
      io.mtimes.set(c.path, parseDateText(step.at));
    }
    let path = c.path;
    for (const move of c.moves ?? []) {
      const ledgerBefore = io.files.get(LEDGER) ?? "";
      const logBefore = io.files.get(ARCHIVE_LOG) ?? "";
      const at = parseDateText(move.at);
      const note = move.op === "archive" ? await archiveNote(io, path, at) : await restoreNote(io, path, at);
      expect(note.path, move.op).toBe(move.path);
      expect(io.files.has(path), `${move.op}: the old file is gone`).toBe(false);
      path = move.path;
      expect(io.files.get(path), `${move.op}: the note`).toBe(move.note);
      expect((io.files.get(LEDGER) ?? "").slice(ledgerBefore.length), `${move.op}: the ledger`).toBe(move.ledger_appended);
      expect((io.files.get(ARCHIVE_LOG) ?? "").slice(logBefore.length), `${move.op}: archive.jsonl`).toBe(move.archive_appended);
    }
  });

  it("covers what a vault holds", () => {
    const names = vectors.cases.map((c) => c.name).join(" ");
    for (const kind of ["added", "handwritten", "edited", "archived", "quick-leech"]) expect(names).toContain(kind);
    const steps = vectors.cases.flatMap((c) => c.steps);
    expect(steps.some((s) => s.note?.includes("status: suspended"))).toBe(true);
    expect(steps.some((s) => s.note?.includes("state: relearning"))).toBe(true);
    expect(vectors.cases.some((c) => c.note.includes("\r\n"))).toBe(true);
    expect(vectors.cases.filter((c) => c.moves).length).toBeGreaterThan(20);
  });
});
