/**
 * vaultmem in Obsidian: the review queue, grades, archive and restore, the status bar
 * and the provenance panel, writing exactly what the `vaultmem` CLI writes (ops.ts).
 * Only Vault, FileManager, MetadataCache and Workspace APIs: works on mobile too.
 */
import { Notice, Plugin, TFile, type WorkspaceLeaf } from "obsidian";
import type { Config } from "./config";
import { type Note } from "./note";
import { ObsidianIO } from "./obsidian-io";
import { ARCHIVE_DIR, archiveNote, canRestore, gradeNote, loadConfig, readNote, restoreNote, REVIEWS } from "./ops";
import { formatStamp } from "./pyvalues";
import { RATINGS, type Rating, retrievability } from "./schedule";
import { PROVENANCE_VIEW, ProvenanceView, REVIEW_VIEW, ReviewView } from "./views";

const NOTE_FOLDERS = ["memories", "skills", ARCHIVE_DIR];
const HOTKEY_KEYS: Record<Rating, string> = { again: "1", hard: "2", good: "3", easy: "4" };

/** Whether a path is a vaultmem note (store/catalog.py's `is_note_path`). */
export function isNotePath(path: string): boolean {
  const parts = path.split("/");
  return parts.length >= 2 && NOTE_FOLDERS.includes(parts[0]) && path.endsWith(".md") && !parts.some((p) => p.startsWith("."));
}

export class VaultmemPlugin extends Plugin {
  io!: ObsidianIO;
  statusEl!: HTMLElement;
  reviewLimit = 20;
  /** The clock, in seconds (a parameter so tests and screenshots can pin it). */
  now: () => number = () => Math.floor(Date.now() / 1000);
  private writes: Promise<unknown> = Promise.resolve();
  private refreshing: Promise<unknown> = Promise.resolve();

  async onload(): Promise<void> {
    this.io = new ObsidianIO(this.app);
    this.registerView(REVIEW_VIEW, (leaf: WorkspaceLeaf) => new ReviewView(leaf, this));
    this.registerView(PROVENANCE_VIEW, (leaf: WorkspaceLeaf) => new ProvenanceView(leaf, this));
    this.addRibbonIcon("brain", "vaultmem review", () => this.openView(REVIEW_VIEW));
    this.statusEl = this.addStatusBarItem();
    this.statusEl.classList.add("vaultmem-status");

    this.addCommand({ id: "open-review", name: "Open the review queue", callback: () => this.openView(REVIEW_VIEW) });
    this.addCommand({
      id: "show-provenance", name: "Show provenance of this memory",
      checkCallback: (checking: boolean) => this.onNote(checking, () => this.openView(PROVENANCE_VIEW)),
    });
    for (const rating of RATINGS) {
      this.addCommand({
        id: `grade-${rating}`, name: `Grade this memory: ${rating}`,
        hotkeys: [{ modifiers: ["Mod", "Shift"], key: HOTKEY_KEYS[rating] }],
        checkCallback: (checking: boolean) => this.onNote(checking, (file) => this.grade(file.path, rating),
          (f) => !f.path.startsWith(ARCHIVE_DIR + "/") && !["suspended", "superseded"].includes(String(this.frontmatter(f).status ?? ""))),
      });
    }
    this.addCommand({
      id: "archive", name: "Archive this memory",
      checkCallback: (checking: boolean) => this.onNote(checking, (file) => this.act(() => archiveNote(this.io, file.path, this.now()), "archived"),
        (f) => !f.path.startsWith(ARCHIVE_DIR + "/")),
    });
    this.addCommand({
      id: "restore", name: "Restore this memory",
      checkCallback: (checking: boolean) => this.onNote(checking, (file) => this.act(() => restoreNote(this.io, file.path, this.now()), "restored"),
        (f) => f.path.startsWith(ARCHIVE_DIR + "/") || ["suspended", "archived", "stale"].includes(String(this.frontmatter(f).status ?? ""))),
    });

    this.registerEvent(this.app.workspace.on("file-open", () => void this.refreshAll()));
    // Obsidian saves open notes every few seconds while one types: refresh once things are quiet.
    this.registerEvent(this.app.metadataCache.on("changed", () => this.refreshSoon()));
    this.app.workspace.onLayoutReady(() => void this.refreshAll());
  }

  private refreshTimer: number | null = null;

  private refreshSoon(): void {
    if (this.refreshTimer !== null) window.clearTimeout(this.refreshTimer);
    this.refreshTimer = window.setTimeout(() => {
      this.refreshTimer = null;
      void this.refreshAll();
    }, 500);
  }

  onunload(): void {
    if (this.refreshTimer !== null) window.clearTimeout(this.refreshTimer);
  }

  private frontmatter(file: TFile): Record<string, unknown> {
    return this.app.metadataCache.getFileCache(file)?.frontmatter ?? {};
  }

  /** A command on the open note: hidden unless it is a vaultmem note (and `when` holds). */
  private onNote(checking: boolean, run: (file: TFile) => unknown, when: (file: TFile) => boolean = () => true): boolean {
    const file = this.app.workspace.getActiveFile();
    if (!file || !isNotePath(file.path) || !when(file)) return false;
    if (!checking) void run(file);
    return true;
  }

  async openView(type: string): Promise<void> {
    let leaf = this.app.workspace.getLeavesOfType(type)[0];
    if (!leaf) {
      leaf = this.app.workspace.getRightLeaf(false)!;
      await leaf.setViewState({ type, active: true });
    }
    this.app.workspace.revealLeaf(leaf);
  }

  openNote(path: string): void {
    void this.app.workspace.openLinkText(path, "");
  }

  /** One write at a time (two quick grades must not both chain from the same ledger tip), then a refresh. */
  private act(action: () => Promise<Note>, done: string): Promise<void> {
    const run = async () => {
      try {
        const note = await action();
        new Notice(`vaultmem: ${note.id} ${done}`);
      } catch (error) {
        new Notice(`vaultmem: ${(error as Error).message}`);
      }
      await this.refreshAll();
    };
    const next = this.writes.then(run);
    this.writes = next;
    return next;
  }

  /** Resolves once every write started so far, and the refresh after it, is done. */
  async idle(): Promise<void> {
    await this.writes;
    await this.refreshing;
  }

  /** Grade the note at `path` as `vaultmem grade` would, from the project of this vault. */
  async grade(path: string, rating: Rating): Promise<void> {
    await this.act(() => gradeNote(this.io, path, rating, this.now(), { project: this.app.vault.getName() }), `graded ${rating}`);
  }

  async activeNote(): Promise<Note | null> {
    const file = this.app.workspace.getActiveFile();
    if (!file || !isNotePath(file.path)) return null;
    try {
      return await readNote(this.io, file.path, await loadConfig(this.io));
    } catch {
      return null;
    }
  }

  /** Every readable note (unreadable ones are `vaultmem health`'s to report). */
  async loadNotes(includeHidden = false): Promise<{ notes: Note[]; config: Config }> {
    const config = await loadConfig(this.io);
    const notes: Note[] = [];
    for (const file of this.app.vault.getMarkdownFiles()) {
      if (!isNotePath(file.path)) continue;
      try {
        const note = await readNote(this.io, file.path, config, await this.app.vault.cachedRead(file));
        if (includeHidden || !["archived", "suspended", "superseded"].includes(note.status)) notes.push(note);
      } catch {
        continue;
      }
    }
    return { notes, config };
  }

  /** The note's last grades from `.vaultmem/reviews.jsonl`, newest first. */
  async recentGrades(id: string, limit = 8): Promise<Record<string, unknown>[]> {
    const text = (await this.io.read(REVIEWS)) ?? "";
    const found: Record<string, unknown>[] = [];
    for (const line of text.split("\n")) {
      try {
        const record = JSON.parse(line);
        if (record && record.id === id) found.push(record);
      } catch {
        continue;
      }
    }
    return found.reverse().slice(0, limit);
  }

  async refreshStatus(): Promise<void> {
    const note = await this.activeNote();
    if (!note) {
      this.statusEl.textContent = "";
      return;
    }
    const config = await loadConfig(this.io);
    const r = retrievability(note, this.now(), config);
    this.statusEl.textContent = `strength ${note.strength.toFixed(2)} · R ${r === null ? "–" : `${Math.round(r * 100)}%`} · due ${formatStamp(note.due).slice(0, 10)} · ${note.tier}`;
  }

  refreshAll(): Promise<void> {
    const run = async () => {
      await this.refreshStatus();
      for (const type of [REVIEW_VIEW, PROVENANCE_VIEW]) {
        for (const leaf of this.app.workspace.getLeavesOfType(type)) await (leaf.view as ReviewView | ProvenanceView).refresh();
      }
    };
    const next = this.refreshing.then(run, run);
    this.refreshing = next.catch(() => undefined);
    return next;
  }
}

export default VaultmemPlugin;

export { canRestore };
