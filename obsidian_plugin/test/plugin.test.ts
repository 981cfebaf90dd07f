// @vitest-environment happy-dom
/**
 * The plugin mounted on the stand-in app: commands hidden where they mean nothing,
 * a grade from a command and from the review queue, archive and restore, the status
 * bar and the provenance panel, as a person would see them.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { App, notices, TFile, useApp, Vault } from "obsidian";
import { VaultmemPlugin } from "../src/main";
import { LEDGER } from "../src/ledger";
import { ARCHIVE_LOG, REVIEWS } from "../src/ops";
import { parseDateText } from "../src/pyvalues";
import { PROVENANCE_VIEW, REVIEW_VIEW } from "../src/views";

const NOW = parseDateText("2026-02-01T12:00:00");
const note = (id: string, extra: string, body: string) =>
  `---\nid: ${id}\ntype: memory\nnamespace: work\ntags: []\nstatus: active\ntier: L1\nstrength: 0.5\n${extra}created: 2026-01-01T09:00:00\nupdated: 2026-01-01T09:00:00\ndecayed:\nsource: "[[Infra overview]]"\n---\n${body}\n`;
const NEW = "state: learning\nstep: 0\nstability:\ndifficulty:\ndue: 2026-01-01T09:00:00\nlast_review:\nreps: 0\nlapses: 0\n";
const FADING = "state: review\nstep:\nstability: 3.0\ndifficulty: 5.0\ndue: 2026-01-20T09:00:00\nlast_review: 2026-01-10T09:00:00\nreps: 3\nlapses: 0\n";
const WEAK = "state: review\nstep:\nstability: 0.1\ndifficulty: 5.0\ndue: 2026-01-12T09:00:00\nlast_review: 2026-01-10T09:00:00\nreps: 3\nlapses: 0\n";
const LATER = "state: review\nstep:\nstability: 90.0\ndifficulty: 5.0\ndue: 2026-05-01T09:00:00\nlast_review: 2026-01-30T09:00:00\nreps: 3\nlapses: 0\n";

let app: App;
let plugin: VaultmemPlugin;

async function mount(files: Record<string, string>): Promise<void> {
  const vault = new Vault("agent-vault");
  vault.clock = () => NOW * 1000;
  for (const [path, text] of Object.entries(files)) vault.put(path, text);
  app = useApp(new App(vault));
  document.body.replaceChildren(app.workspace.root);
  plugin = new VaultmemPlugin(app as never, { id: "vaultmem", version: "0.1.0" } as never);
  plugin.now = () => NOW;
  await plugin.onload();
}

function open(path: string): void {
  app.workspace.openFile(new TFile(app.vault, path));
}

async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 0));
  await plugin.idle();
}

beforeEach(async () => {
  notices.length = 0;
  await mount({
    "memories/work/new-fact.md": note("new1", NEW, "A new fact, never graded."),
    "memories/work/fading.md": note("fade1", FADING, "A fact fading away."),
    "memories/work/weak.md": note("weak1", WEAK, "A weak fact."),
    "memories/work/later.md": note("late1", LATER, "Confirmed recently."),
    "Daily/2026-02-01.md": "Just a daily note.\n",
    "Infra overview.md": "# Infra\n",
  });
});

describe("commands", () => {
  it("are hidden on a note that is not a vaultmem memory", () => {
    open("Daily/2026-02-01.md");
    for (const id of ["grade-good", "archive", "restore", "show-provenance"]) expect(plugin.run(id), id).toBe(false);
    expect(plugin.run("open-review")).toBe(true);
  });

  it("hide restore on an active note and archive on an archived one", async () => {
    open("memories/work/fading.md");
    expect(plugin.run("restore")).toBe(false);
    expect(plugin.run("archive")).toBe(true);
    await settle();
    expect(app.vault.files.has("archive/memories/work/fading.md")).toBe(true);
    open("archive/memories/work/fading.md");
    expect(plugin.run("archive")).toBe(false);
    expect(plugin.run("grade-good")).toBe(false);
    expect(plugin.run("restore")).toBe(true);
    await settle();
    expect(app.vault.files.has("memories/work/fading.md")).toBe(true);
    const log = app.vault.files.get(ARCHIVE_LOG)!.trim().split("\n").map((l) => JSON.parse(l));
    expect(log.map((r) => r.op)).toEqual(["archive", "restore"]);
    expect(log[0]).toMatchObject({ from: "memories/work/fading.md", to: "archive/memories/work/fading.md", reason: "manual" });
  });

  it("hide grading on a suspended leech (as the CLI refuses it) and offer restore", async () => {
    const leech = note("leech1", FADING.replace("lapses: 0", "lapses: 8"), "Wrong again and again.").replace("status: active", "status: suspended");
    app.vault.put("memories/work/leech.md", leech);
    open("memories/work/leech.md");
    for (const rating of ["again", "hard", "good", "easy"]) expect(plugin.run(`grade-${rating}`), rating).toBe(false);
    expect(plugin.run("restore")).toBe(true);
    await settle();
    expect(app.vault.files.get("memories/work/leech.md")).toContain("status: active");
    // A second chance, as the CLI gives it: a grade that recalls it keeps it in use.
    expect(plugin.run("grade-good")).toBe(true);
    await settle();
    expect(app.vault.files.get("memories/work/leech.md")).toContain("status: active");
  });

  it("hide grading on a superseded memory (as the CLI refuses it: it is history)", async () => {
    const old = note("old1", FADING, "Staging runs Postgres 15.").replace("status: active", "status: superseded");
    app.vault.put("memories/work/old.md", old);
    open("memories/work/old.md");
    for (const rating of ["again", "hard", "good", "easy"]) expect(plugin.run(`grade-${rating}`), rating).toBe(false);
  });

  it("grade the open note with hotkeys, changing only the FSRS, strength and updated lines", async () => {
    open("memories/work/fading.md");
    const before = app.vault.files.get("memories/work/fading.md")!;
    const command = plugin.commands.find((c) => c.id === "grade-good")!;
    expect(command.hotkeys).toEqual([{ modifiers: ["Mod", "Shift"], key: "3" }]);
    expect(plugin.run("grade-good")).toBe(true);
    await settle();
    const after = app.vault.files.get("memories/work/fading.md")!;
    const changed = after.split("\n").filter((line) => !before.split("\n").includes(line)).map((l) => l.split(":")[0]);
    expect(changed).toEqual(expect.arrayContaining(["strength", "stability", "difficulty", "due", "last_review", "reps", "updated"]));
    expect(changed.every((key) => ["strength", "stability", "difficulty", "due", "last_review", "reps", "updated", "sessions", "days", "projects", "  - day-2026-02-01", '  - "2026-02-01"', "  - agent-vault"].includes(key)), changed.join()).toBe(true);
    const review = JSON.parse(app.vault.files.get(REVIEWS)!.trim());
    expect(review).toMatchObject({ id: "fade1", rating: "good", state_before: "review", elapsed_days: 22.125, path: "memories/work/fading.md" });
    const ledger = app.vault.files.get(LEDGER)!.trim().split("\n").map((l) => JSON.parse(l));
    expect(ledger.map((r) => r.op)).toEqual(["external-edit", "grade"]);
    expect(ledger[1].prev).toBe(ledger[0].hash);
  });
});

describe("review view", () => {
  it("lists what is due, most at risk first, with labels, and a grade updates it at once", async () => {
    await plugin.openView(REVIEW_VIEW);
    const ids = () => [...document.querySelectorAll<HTMLElement>(".vaultmem-item")].map((i) => i.dataset.id);
    expect(ids()).toEqual(["new1", "weak1", "fade1"]);
    const labels = [...document.querySelectorAll(".vaultmem-label")].map((l) => l.textContent);
    expect(labels).toEqual(["new", "weak", "fading"]);
    const good = document.querySelector<HTMLButtonElement>('[data-id="weak1"] .vaultmem-grade-good')!;
    expect(good.textContent).toBe("Good");
    good.click();
    await settle();
    expect(ids()).toEqual(["new1", "fade1"]);
    for (const id of ["new1", "fade1"]) {
      document.querySelector<HTMLButtonElement>(`[data-id="${id}"] .vaultmem-grade-easy`)!.click();
      await settle();
    }
    expect(ids()).toEqual([]); // easy graduates a new card and pushes a review days out
    expect(document.querySelector(".vaultmem-empty")!.textContent).toContain("Nothing is due");
  });

  it("writes one grade at a time: quick clicks on two notes keep the ledger a chain", async () => {
    await plugin.openView(REVIEW_VIEW);
    document.querySelector<HTMLButtonElement>('[data-id="weak1"] .vaultmem-grade-hard')!.click();
    document.querySelector<HTMLButtonElement>('[data-id="fade1"] .vaultmem-grade-again')!.click();
    await settle();
    const ledger = app.vault.files.get(LEDGER)!.trim().split("\n").map((l) => JSON.parse(l));
    expect(ledger.map((r) => [r.op, r.id])).toEqual([["external-edit", "weak1"], ["grade", "weak1"], ["external-edit", "fade1"], ["grade", "fade1"]]);
    ledger.forEach((record, i) => expect(record.seq).toBe(i + 1));
    for (let i = 1; i < ledger.length; i++) expect(ledger[i].prev).toBe(ledger[i - 1].hash);
  });

  it("says so when nothing is due", async () => {
    await mount({ "memories/work/later.md": note("late1", LATER, "Confirmed recently.") });
    await plugin.openView(REVIEW_VIEW);
    expect(document.querySelector(".vaultmem-empty")!.textContent).toContain("Nothing is due");
  });
});

describe("status bar and provenance", () => {
  it("shows strength, retrievability, due date and tier for a memory, nothing for other notes", async () => {
    open("memories/work/fading.md");
    await settle();
    expect(plugin.statusEl.textContent).toMatch(/^strength 0\.50 · R \d+% · due 2026-01-20 · L1$/);
    open("Daily/2026-02-01.md");
    await settle();
    expect(plugin.statusEl.textContent).toBe("");
  });

  it("links the source, the supersede chain both ways, contests and the recent grades", async () => {
    await mount({
      "memories/work/old.md": note("old1", WEAK, "Postgres 14.").replace("---\nP", "superseded_by: \"[[middle]]\"\n---\nP"),
      "memories/work/middle.md": note("mid1", FADING, "Postgres 15.").replace("---\nP", "supersedes: \"[[old]]\"\nsuperseded_by: \"[[new]]\"\ncontested: true\ncontested_with:\n  - \"[[other]]\"\n---\nP"),
      "memories/work/new.md": note("new1", NEW, "Postgres 16.").replace("---\nP", "supersedes: \"[[middle]]\"\n---\nP"),
      ".vaultmem/reviews.jsonl": '{"id": "mid1", "rating": "hard", "review_datetime": "2026-01-10T09:00:00+00:00", "state_before": "learning", "state": "review"}\n',
    });
    open("memories/work/middle.md");
    await plugin.openView(PROVENANCE_VIEW);
    const links = [...document.querySelectorAll<HTMLElement>(".vaultmem-provenance .internal-link")].map((a) => a.dataset.href);
    expect(links).toEqual(["Infra overview", "old", "new", "other"]);
    expect(document.querySelector(".vaultmem-grades")!.textContent).toContain("hard");
    document.querySelector<HTMLElement>('[data-href="old"]')!.click();
    expect(app.workspace.opened).toEqual(["old"]);
  });
});

describe("what cannot be written", () => {
  it("leaves a note with broken properties where it is, and says why", async () => {
    await mount({ "memories/work/broken.md": "---\nid: b1\nstrength: [1, 2]\n---\nBroken.\n" });
    open("memories/work/broken.md");
    expect(plugin.run("archive")).toBe(true);
    await settle();
    expect(app.vault.files.get("memories/work/broken.md")).toBe("---\nid: b1\nstrength: [1, 2]\n---\nBroken.\n");
    expect(app.vault.files.has("archive/memories/work/broken.md")).toBe(false);
    expect(plugin.run("grade-good")).toBe(true);
    await settle();
    expect(notices.join("\n")).toContain("property 'strength'");
    expect(app.vault.files.has(LEDGER)).toBe(false);
  });
});
