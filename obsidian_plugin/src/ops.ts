/**
 * What the plugin writes: grade, archive and restore, each leaving the bytes
 * `vaultmem grade|archive|restore` leaves (vault.py): the note rewritten line by
 * line, a hand edit since the last record put on the ledger first, then the act's
 * own ledger record, and the review log or archive log line.
 *
 * Everything goes through `VaultIO`, which the plugin implements with Obsidian's
 * Vault, FileManager and DataAdapter APIs (obsidian-io.ts) and tests with memory.
 */
import type { Config } from "./config";
import { parseConfig } from "./config";
import { appendText, type Entry, contentHash, lastFor, LEDGER } from "./ledger";
import { type Defaults, type Note, NoteError, parseNote, renderNote } from "./note";
import { formatStamp, pyJson } from "./pyvalues";
import { grade as scheduleGrade, type Rating, withEvidence } from "./schedule";

export const REVIEWS = ".vaultmem/reviews.jsonl";
export const ARCHIVE_LOG = ".vaultmem/archive.jsonl";
export const CONFIG = ".vaultmem/config.yaml";
export const ARCHIVE_DIR = "archive";

export interface VaultIO {
  /** Any file's text (notes and .vaultmem/ files), or null when there is none. */
  read(path: string): Promise<string | null>;
  /** Atomic read-modify-write of a note (`app.vault.process`); returns the text written. */
  process(path: string, change: (text: string) => string): Promise<string>;
  /** Append to a .vaultmem/ log, creating it if needed. */
  append(path: string, text: string): Promise<void>;
  /** The note's modification time, in seconds. */
  mtime(path: string): number;
  /** Move a note so links keep resolving (`app.fileManager.renameFile`); refuses an existing target. */
  move(from: string, to: string): Promise<void>;
}

/** What a hand-written note means where a property is missing (vault.py's `defaults_for`). */
export function defaultsFor(path: string, mtime: number, config: Config): Defaults {
  let parts = path.split("/");
  const archived = parts[0] === ARCHIVE_DIR;
  if (archived) parts = parts.slice(1);
  const type = parts[0] === "skills" ? "skill" : "memory";
  const namespace = parts.slice(1, -1).join("/") || "default";
  const stem = path.split("/").pop()!.replace(/\.[^.]*$/, "");
  const modified = Math.floor(mtime);
  return {
    id: stem, type, namespace, tags: [], status: archived ? "archived" : "active", tier: config.default_tier,
    strength: config.strength_initial, state: "learning", step: 0, stability: null, difficulty: null, due: modified,
    last_review: null, reps: 0, lapses: 0, created: modified, updated: modified, decayed: null, source: "",
  };
}

export async function loadConfig(io: VaultIO): Promise<Config> {
  return parseConfig(await io.read(CONFIG));
}

export async function readNote(io: VaultIO, path: string, config: Config, text?: string): Promise<Note> {
  const content = text ?? (await io.read(path));
  if (content === null) throw new Error(`${path} does not exist`);
  return parseNote(content, path, defaultsFor(path, io.mtime(path), config));
}

interface Rewritten { before: Note; after: Note; base: string; text: string }

/** Apply `change` to the note as it is now, atomically; record a hand edit, then `op`. */
async function rewrite(io: VaultIO, path: string, config: Config, now: number, op: string,
  change: (note: Note) => Partial<Note>, detail: Record<string, unknown> | null, movedFrom?: string): Promise<Rewritten> {
  let result: Rewritten | undefined;
  const mtime = io.mtime(path);
  await io.process(path, (base) => {
    const before = parseNote(base, path, defaultsFor(path, mtime, config));
    const after: Note = { ...before, ...change(before) };
    const text = renderNote(after, base);
    result = { before, after, base, text };
    return text;
  });
  const done = result!;
  if (done.text !== done.base || movedFrom) {
    const ledger = (await io.read(LEDGER)) ?? "";
    const entries: Entry[] = [];
    const last = lastFor(ledger, done.before.id);
    if (!last || last.content !== (await contentHash(done.base))) {
      const seen: Record<string, unknown> = { noticed_by: op };
      if (!last) seen.first_seen = true;
      entries.push({ op: "external-edit", id: done.before.id, path: done.before.path, text: done.base, time: formatStamp(now), detail: seen });
    }
    entries.push({ op, id: done.after.id, path: done.after.path, text: done.text, time: formatStamp(now), detail });
    await io.append(LEDGER, await appendText(ledger, entries));
  }
  return done;
}

export interface GradeOptions { session?: string; project?: string; comment?: string | null }

/** `vaultmem grade ID RATING` on the note at `path`. */
export async function gradeNote(io: VaultIO, path: string, rating: Rating, now: number, options: GradeOptions = {}): Promise<Note> {
  const config = await loadConfig(io);
  let record: Record<string, unknown> = {};
  const done = await rewrite(io, path, config, now, "grade", (note) => {
    if (note.status === "archived") {
      throw new NoteError(path, `${note.id} is archived`, `\`vaultmem restore ${note.id}\` first`);
    }
    if (note.status === "suspended") {
      // As the CLI: grading a leech would quietly put a memory that kept being wrong back in use.
      throw new NoteError(path, `${note.id} is suspended (a leech: graded wrong ${note.lapses} times)`,
        `check it, fix its text if needed, then \`vaultmem restore ${note.id}\` to grade it again`);
    }
    if (note.status === "superseded") {
      // As the CLI: a superseded note is history; its grade would count as evidence for the fact replaced.
      throw new NoteError(path, `${note.id} is superseded by ${note.superseded_by || "a newer memory"}`,
        "grade the memory in force instead (this one is kept as history)");
    }
    const [changes, log] = scheduleGrade(note, rating, now, config);
    record = log;
    if (rating === "good" || rating === "easy") Object.assign(changes, withEvidence(note, options.session ?? "", options.project ?? "", now));
    return changes;
  }, { rating });
  const line = { ...record, comment: options.comment || null, path: done.after.path, status: done.after.status };
  await io.append(REVIEWS, pyJson(line) + "\n");
  return done.after;
}

/** `vaultmem archive ID`: move the note to archive/ (same relative path), log a snapshot of its text. */
export async function archiveNote(io: VaultIO, path: string, now: number, reason = "manual"): Promise<Note> {
  if (path.startsWith(ARCHIVE_DIR + "/")) throw new Error(`${path} is already archived`);
  const config = await loadConfig(io);
  const note = await readNote(io, path, config);
  const target = `${ARCHIVE_DIR}/${path}`;
  const done = await moved(io, path, target, () => rewrite(io, target, config, now, "archive", () => ({ status: "archived" }), { reason }, path));
  await io.append(ARCHIVE_LOG, pyJson({ op: "archive", id: note.id, from: path, to: target, reason, time: formatStamp(now), text: done.base }) + "\n");
  return done.after;
}

/** Move a note, then change it where it is; if the change fails, the note goes back where it was (vault.py's `_move`). */
async function moved(io: VaultIO, from: string, to: string, change: () => Promise<Rewritten>): Promise<Rewritten> {
  await io.move(from, to);
  try {
    return await change();
  } catch (error) {
    await io.move(to, from);
    throw error;
  }
}

/** Whether `restore` means something for this note: archived, or a suspended leech, or stale. */
export function canRestore(note: Note): boolean {
  return note.path.startsWith(ARCHIVE_DIR + "/") || ["suspended", "archived", "stale"].includes(note.status);
}

/** `vaultmem restore ID`: back from archive/ where it was, or un-suspend a leech. */
export async function restoreNote(io: VaultIO, path: string, now: number): Promise<Note> {
  const config = await loadConfig(io);
  const note = await readNote(io, path, config);
  const changes = { status: "active", updated: now, decayed: now };
  if (path.startsWith(ARCHIVE_DIR + "/")) {
    const target = path.slice(ARCHIVE_DIR.length + 1);
    const done = await moved(io, path, target, () => rewrite(io, target, config, now, "restore", () => changes, null, path));
    await io.append(ARCHIVE_LOG, pyJson({ op: "restore", id: note.id, from: path, to: target, time: formatStamp(now) }) + "\n");
    return done.after;
  }
  if (!canRestore(note)) throw new Error(`${note.id} is ${note.status}, not archived or suspended; nothing to restore`);
  const done = await rewrite(io, path, config, now, "restore", () => changes, null);
  await io.append(ARCHIVE_LOG, pyJson({ op: "restore", id: note.id, from: path, to: path, time: formatStamp(now), status_before: note.status }) + "\n");
  return done.after;
}
