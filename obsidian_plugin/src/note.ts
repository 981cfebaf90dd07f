/**
 * The note format, as vaultmem/core/note.py reads and rewrites it: text <-> Note.
 *
 * A rewrite edits the frontmatter line by line: a property whose value did not
 * change keeps its exact lines; unknown properties, comments, the body, CRLF and a
 * byte-order mark keep their bytes. This is why grading goes through
 * `app.vault.process` with this module and never through `processFrontMatter`
 * (which re-serialises the whole block). Pure: no Obsidian, no I/O.
 */
import { Alias, isMap, isScalar, isSeq, parseDocument, Scalar, visit, type Node as YamlNode } from "yaml";
import { floatRepr, formatStamp, parseDateText, pyStr, PyFloat, resolvePlain, resolvesToString, type PyDate, type PyDateTime, type PyValue } from "./pyvalues";

export const KEY_ORDER = [
  "id", "type", "namespace", "tags", "status", "tier", "strength",
  "state", "step", "stability", "difficulty", "due", "last_review", "reps", "lapses",
  "created", "updated", "decayed", "source",
] as const;
export const OPTIONAL_KEYS = [
  "explicit", "sessions", "days", "projects", "promoted",
  "supersedes", "superseded_by", "contested", "contested_with", "redacted",
] as const;
export const ALL_KEYS: readonly string[] = [...KEY_ORDER, ...OPTIONAL_KEYS];
const LIST_KEYS = new Set(["tags", "sessions", "days", "projects", "contested_with"]);
const BOOL_KEYS = new Set(["explicit", "contested", "redacted"]);
const TEXT_KEYS = new Set(["id", "namespace", "source", "supersedes", "superseded_by"]);
const DATETIME_KEYS = new Set(["due", "last_review", "created", "updated", "decayed", "promoted"]);
const FLOAT_KEYS = new Set(["strength", "stability", "difficulty"]);
const INT_KEYS = new Set(["step", "reps", "lapses"]);
const ALLOWED: Record<string, readonly string[]> = {
  type: ["memory", "skill"],
  status: ["active", "stale", "archived", "suspended", "superseded"],
  tier: ["L0", "L1", "L2", "L3"],
  state: ["learning", "review", "relearning"],
};
export const HIDDEN_STATUSES = new Set(["archived", "suspended", "superseded"]);
const BOM = "\ufeff";
const YAML_UNSAFE = /[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]/g;
const FENCE = /^---[ \t]*(\r?\n|$)/;

export interface Note {
  id: string; type: string; namespace: string; tags: string[]; status: string; tier: string;
  strength: number; state: string; step: number | null; stability: number | null; difficulty: number | null;
  due: number; last_review: number | null; reps: number; lapses: number;
  created: number; updated: number; decayed: number | null; source: string;
  explicit: boolean; sessions: string[]; days: string[]; projects: string[]; promoted: number | null;
  supersedes: string; superseded_by: string; contested: boolean; contested_with: string[]; redacted: boolean;
  body: string; path: string; present: Set<string>;
}

/** A note that vaultmem cannot read or rewrite, with what to do (the CLI's NoteError). */
export class NoteError extends Error {
  constructor(readonly path: string, readonly problem: string, readonly fix: string) {
    super(`${path}: ${problem}; ${fix}`);
  }
}

// ---------------------------------------------------------------- splitting

/** (frontmatter block without fences, body), losslessly; a BOM belongs to neither. */
export function splitFrontmatter(raw: string): [string | null, string] {
  const text = raw.startsWith(BOM) ? raw.slice(1) : raw;
  const opening = FENCE.exec(text);
  if (!opening) return [null, text];
  let pos = opening[0].length;
  while (pos < text.length) {
    const newlineAt = text.indexOf("\n", pos);
    const lineEnd = newlineAt === -1 ? text.length : newlineAt + 1;
    if (text.slice(pos, lineEnd).trimEnd() === "---") return [text.slice(opening[0].length, pos), text.slice(lineEnd)];
    pos = lineEnd;
  }
  return [null, text];
}

/** Whether `raw` opens a properties block (a --- line, then `key: value` lines) whose closing ---
 * is missing (note.py's `unclosed_properties`): a rewrite would leave the person's properties in the text. */
export function unclosedProperties(raw: string): boolean {
  if (splitFrontmatter(raw)[0] !== null) return false;
  const lines = (raw.startsWith(BOM) ? raw.slice(1) : raw).split(/\r\n|\n|\r/).slice(0, 40);
  if (!lines.length || lines[0].trimEnd() !== "---") return false;
  const following = lines.slice(1).find((line) => line.trim() !== "");
  return following !== undefined && /^[A-Za-z_][\w .-]*:(\s|$)/.test(following);
}

function splitLines(block: string): string[] {
  return block.match(/[^\r\n]*(?:\r\n|\n|\r)|[^\r\n]+$/g) ?? [];
}

// ---------------------------------------------------------------- reading

export interface Frontmatter {
  data: Record<string, PyValue>;
  keys: [string | null, number][];
  editable: boolean;
}

function toPy(node: unknown): PyValue {
  if (node === null || node === undefined) return null;
  if (isScalar(node)) {
    const scalar = node as Scalar;
    const text = String(scalar.value ?? "");
    if (scalar.tag === "tag:yaml.org,2002:str" || (scalar.type !== "PLAIN" && scalar.type !== undefined)) return text;
    return resolvePlain(text);
  }
  if (isSeq(node)) return node.items.map((item) => toPy(item));
  if (isMap(node)) {
    const out: Record<string, PyValue> = {};
    for (const pair of node.items) out[String(isScalar(pair.key) ? pair.key.value : pair.key)] = toPy(pair.value);
    return out;
  }
  return null;
}

function lineOf(text: string, offset: number): [number, number] {
  let line = 0;
  let lineStart = 0;
  for (let i = 0; i < offset; i++) {
    if (text[i] === "\n") {
      line++;
      lineStart = i + 1;
    }
  }
  return [line, offset - lineStart];
}

/** The block's properties and where each top-level key starts; refuses aliases, repeats and broken YAML. */
export function loadFrontmatter(block: string, path: string): Frontmatter {
  const broken = (problem: string) => new NoteError(path, `broken YAML frontmatter (${problem})`,
    "fix the frontmatter by hand; vaultmem will not touch this file until then");
  const doc = parseDocument(block, { schema: "failsafe", version: "1.1", uniqueKeys: false });
  if (doc.errors.length) throw broken(doc.errors[0].message.split("\n")[0]);
  const root = doc.contents as YamlNode | null;
  if (root === null || (isScalar(root) && (root.value === null || root.value === ""))) return { data: {}, keys: [], editable: true };
  if (!isMap(root)) {
    throw new NoteError(path, "frontmatter is not a set of properties", "write it as 'key: value' lines between the --- fences");
  }
  let alias = false;
  visit(doc, { Alias: (_key: unknown, _node: Alias) => { alias = true; } });
  if (alias) throw new NoteError(path, "frontmatter uses a YAML alias, which vaultmem does not expand", "write the value out in full instead of *name");
  const keys: [string | null, number][] = [];
  const seen = new Set<string>();
  let editable = !root.flow;
  const data: Record<string, PyValue> = {};
  for (const pair of root.items) {
    const keyNode = pair.key as Scalar | null;
    const start = keyNode && (keyNode as Scalar).range ? (keyNode as Scalar).range![0] : 0;
    const [line, column] = lineOf(block, start);
    const name = isScalar(keyNode) ? String(keyNode.value) : null;
    if (name !== null) {
      if (seen.has(name)) {
        throw new NoteError(path, `property '${name}' is written twice, so which one holds is unclear`, `keep one '${name}' in the note's properties`);
      }
      seen.add(name);
      data[name] = toPy(pair.value);
    }
    if (column !== 0 || (keys.length && keys[keys.length - 1][1] === line)) editable = false;
    keys.push([name, line]);
  }
  return { data, keys, editable };
}

export type Defaults = Omit<Note, "body" | "path" | "present" | "explicit" | "sessions" | "days" | "projects" | "promoted" | "supersedes" | "superseded_by" | "contested" | "contested_with" | "redacted">;

const OPTIONAL_DEFAULTS = {
  explicit: false, sessions: [] as string[], days: [] as string[], projects: [] as string[], promoted: null,
  supersedes: "", superseded_by: "", contested: false, contested_with: [] as string[], redacted: false,
};

/** Read a note; `defaults` supplies what a hand-written note lacks. Throws NoteError. */
export function parseNote(text: string, path: string, defaults: Defaults): Note {
  const [block, body] = splitFrontmatter(text);
  const data = block !== null ? loadFrontmatter(block, path).data : {};
  const values: Record<string, unknown> = { ...OPTIONAL_DEFAULTS, ...defaults };
  for (const key of ALL_KEYS) {
    if (!(key in data)) continue;
    const value = data[key];
    if (value !== null && value !== "") values[key] = readField(path, key, value);
    else if (["last_review", "decayed", "step", "stability", "difficulty", "source"].includes(key)) {
      values[key] = key === "source" ? "" : null;
    }
  }
  const present = new Set(ALL_KEYS.filter((key) => key in data));
  return { ...(values as object), body, path, present } as Note;
}

function isDate(value: PyValue): value is PyDate {
  return typeof value === "object" && value !== null && (value as PyDate).kind === "date";
}
function isDateTime(value: PyValue): value is PyDateTime {
  return typeof value === "object" && value !== null && (value as PyDateTime).kind === "datetime";
}

function pyFloat(value: PyValue): number {
  if (typeof value === "number") return value;
  if (value instanceof PyFloat) return value.value;
  if (typeof value === "string") {
    const text = value.trim().replace(/_/g, "").toLowerCase();
    if (/^[-+]?(inf|infinity|nan)$/.test(text)) return text.includes("nan") ? NaN : Infinity;
    if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/.test(text)) throw new TypeError("not a number");
    return Number(text);
  }
  throw new TypeError("not a number");
}

/** One known property, normalised as note.py's `_read_field`, or NoteError. */
export function readField(path: string, key: string, value: PyValue): unknown {
  const bad = (expected: string) => new NoteError(path, `property '${key}' is ${describe(value)}, expected ${expected}`, `correct '${key}' in the note's properties`);
  const isList = Array.isArray(value);
  const isMapValue = typeof value === "object" && value !== null && !isList && !(value instanceof PyFloat) && !isDate(value) && !isDateTime(value);
  if (TEXT_KEYS.has(key)) {
    if (isList || isMapValue) throw bad("text");
    return pyStr(value).trim();
  }
  if (LIST_KEYS.has(key)) {
    if (isMapValue || (isList && (value as PyValue[]).some((i) => Array.isArray(i) || (typeof i === "object" && i !== null && !(i instanceof PyFloat) && !isDate(i) && !isDateTime(i))))) {
      throw bad("a list of words");
    }
    if (key === "tags") {
      const items = isList ? (value as PyValue[]) : pyStr(value).split(/[,\s]+/);
      return items.filter((i) => i !== null).map((i) => pyStr(i).trim().replace(/^#+/, "")).filter((t) => t);
    }
    const items = isList ? (value as PyValue[]) : [value];
    return [...new Set(items.filter((i) => i !== null).map((i) => pyStr(i).trim()).filter((t) => t))];
  }
  if (BOOL_KEYS.has(key)) {
    if (typeof value === "boolean") return value;
    const text = pyStr(value).trim().toLowerCase();
    if (["true", "yes", "1"].includes(text)) return true;
    if (["false", "no", "0"].includes(text)) return false;
    throw bad("true or false");
  }
  if (key in ALLOWED) {
    if (isList || isMapValue) throw bad(`one of ${ALLOWED[key].join("|")}`);
    let text = pyStr(value).trim();
    text = key === "tier" ? text.toUpperCase() : text.toLowerCase();
    if (!ALLOWED[key].includes(text)) throw bad(`one of ${ALLOWED[key].join("|")}`);
    return text;
  }
  if (FLOAT_KEYS.has(key)) {
    let number: number;
    try {
      if (typeof value === "boolean") throw new TypeError();
      number = pyFloat(value);
    } catch {
      throw bad("a number");
    }
    if (!Number.isFinite(number)) throw bad("a number");
    return number;
  }
  if (INT_KEYS.has(key)) {
    let number: number;
    try {
      if (typeof value === "boolean") throw new TypeError();
      number = pyFloat(value);
    } catch {
      throw bad("a whole number");
    }
    if (!Number.isFinite(number) || number !== Math.trunc(number)) throw bad("a whole number");
    return number;
  }
  if (DATETIME_KEYS.has(key)) {
    try {
      if (isDateTime(value)) return value.epoch;
      if (isDate(value)) return Date.UTC(value.y, value.m - 1, value.d) / 1000;
      if (isList || isMapValue || typeof value === "boolean") throw new TypeError();
      return parseDateText(pyStr(value));
    } catch {
      throw bad("a datetime like 2026-11-30T14:05:00 (UTC)");
    }
  }
  throw new Error(key);
}

function describe(value: PyValue): string {
  const text = typeof value === "string" ? `'${value}'` : JSON.stringify(value);
  return text.length <= 80 ? text : text.slice(0, 77) + "...";
}

// ---------------------------------------------------------------- writing

/** The properties to write, in order: every KEY_ORDER key, and the optional ones that hold something or are in the file. */
export function fieldValues(note: Note): [string, unknown][] {
  const values: [string, unknown][] = KEY_ORDER.map((key) => [key, (note as unknown as Record<string, unknown>)[key]]);
  for (const key of OPTIONAL_KEYS) {
    const value = (note as unknown as Record<string, unknown>)[key];
    const empty = value === false || value === "" || value === null || (Array.isArray(value) && value.length === 0);
    if (note.present.has(key) || !empty) values.push([key, value]);
  }
  return values;
}

const NEVER = Symbol("never equal");

function comparable(key: string, value: unknown): unknown {
  if (value === "" || (Array.isArray(value) && value.length === 0)) return LIST_KEYS.has(key) ? [] : null;
  if (FLOAT_KEYS.has(key) && typeof value === "number") return Number(value.toFixed(6));
  return value;
}

function safeRead(path: string, key: string, value: PyValue | undefined): unknown {
  if (value === null || value === undefined || value === "") return LIST_KEYS.has(key) ? [] : null;
  try {
    return comparable(key, readField(path, key, value));
  } catch {
    return NEVER;
  }
}

function same(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => item === b[i]);
  return a === b;
}

/** The file text for `note`; with `original`, only the properties whose value changed are rewritten. */
export function renderNote(note: Note, original?: string): string {
  let bom = "";
  if (original !== undefined && original.startsWith(BOM)) {
    bom = BOM;
    original = original.slice(1);
  }
  const newline = original && original.includes("\r\n") ? "\r\n" : "\n";
  const wanted = fieldValues(note);
  const wantedMap = new Map(wanted);
  const [block, oldBody] = original !== undefined ? splitFrontmatter(original) : [null, ""];
  if (block === null && original !== undefined && unclosedProperties(original)) {
    throw new NoteError(note.path, "it opens with --- and properties, but no --- line closes them",
      "add the closing --- line under the properties, then run the command again");
  }
  if (block === null) {
    return `${bom}---${newline}${wanted.map(([k, v]) => renderEntry(k, v, newline)).join("")}---${newline}${note.body}`;
  }
  const text = original!;
  const opening = FENCE.exec(text)![0];
  const closing = text.slice(opening.length + block.length, text.length - oldBody.length);
  const frontmatter = loadFrontmatter(block, note.path);
  if (!frontmatter.editable) {
    throw new NoteError(note.path, "its properties are written as one {...} map or indented, which vaultmem cannot edit line by line",
      "write them as 'key: value' lines starting at the left edge");
  }
  const out: [string | null, string][] = [];
  for (const [key, segment] of segments(block, frontmatter.keys)) {
    let piece = segment;
    if (key !== null && wantedMap.has(key)) {
      const oldValue = safeRead(note.path, key, frontmatter.data[key]);
      if (!(same(oldValue, comparable(key, wantedMap.get(key))) && piece.endsWith("\n"))) {
        piece = extendedList(piece, oldValue, wantedMap.get(key), key, newline) ?? renderEntry(key, wantedMap.get(key), newline);
      }
    } else if (!piece.endsWith("\n")) {
      piece += newline;
    }
    out.push([key, piece]);
  }
  const present = new Set(out.map(([k]) => k));
  ALL_KEYS.forEach((key, index) => {
    if (present.has(key) || !wantedMap.has(key)) return;
    const earlier = ALL_KEYS.slice(0, index).filter((k) => present.has(k));
    let position = 0;
    if (earlier.length) {
      const last = earlier[earlier.length - 1];
      for (let i = 0; i < out.length; i++) if (out[i][0] === last) position = i + 1;
    }
    out.splice(position, 0, [key, renderEntry(key, wantedMap.get(key), newline)]);
    present.add(key);
  });
  const newBlock = out.map(([, piece]) => piece).join("");
  checkReadsBack(note, wanted, newBlock);
  return bom + opening + newBlock + closing + note.body;
}

function segments(block: string, keys: [string | null, number][]): [string | null, string][] {
  const lines = splitLines(block);
  const starts = keys.map(([, line]) => line);
  const result: [string | null, string][] = [];
  if (!starts.length || starts[0] > 0) result.push([null, lines.slice(0, starts.length ? starts[0] : lines.length).join("")]);
  keys.forEach(([key, line], index) => {
    const end = index + 1 < starts.length ? starts[index + 1] : lines.length;
    result.push([key, lines.slice(line, end).join("")]);
  });
  return result.filter(([key, text]) => text || key !== null);
}

function checkReadsBack(note: Note, wanted: [string, unknown][], block: string): void {
  let data: Record<string, PyValue>;
  try {
    data = loadFrontmatter(block, note.path).data;
  } catch (error) {
    throw new NoteError(note.path, `vaultmem's edit of its properties would not read back (${(error as Error).message})`, "report this; the file was left as it was");
  }
  for (const [key, value] of wanted) {
    if (!same(safeRead(note.path, key, data[key]), comparable(key, value))) {
      throw new NoteError(note.path, `vaultmem's edit of property '${key}' would not read back`, "report this; the file was left as it was");
    }
  }
}

/** A block list that only gained items at its end (note.py's `_extended_list`): the person's lines
 * kept as they are, the new items written after them as theirs are; null when it changed otherwise. */
function extendedList(segment: string, oldValue: unknown, value: unknown, key: string, newline: string): string | null {
  if (!Array.isArray(oldValue) || !Array.isArray(value) || !oldValue.length || value.length <= oldValue.length) return null;
  if (!oldValue.every((item, i) => item === value[i])) return null;
  const lines = splitLines(segment);
  const items = lines.slice(1).map((line) => /^([ \t]*-[ \t]+)\S/.exec(line));
  const head = lines[0].trimEnd();
  if (head.slice(head.lastIndexOf(":") + 1).trim() || items.length !== oldValue.length || items.some((m) => !m)) return null;
  const kept = segment.endsWith("\n") ? segment : segment + newline;
  const prefix = items[items.length - 1]![1];
  return kept + value.slice(oldValue.length).map((v) => `${prefix}${scalar(key, v)}${newline}`).join("");
}

function renderEntry(key: string, value: unknown, newline: string): string {
  if (Array.isArray(value)) {
    if (!value.length) return `${key}: []${newline}`;
    return `${key}:${newline}${value.map((v) => `  - ${scalar(key, v)}${newline}`).join("")}`;
  }
  const rendered = scalar(key, value);
  return rendered === "" ? `${key}:${newline}` : `${key}: ${rendered}${newline}`;
}

function scalar(key: string, value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") {
    if (DATETIME_KEYS.has(key)) return formatStamp(value);
    if (!FLOAT_KEYS.has(key)) return String(value);
    const text = value.toFixed(6).replace(/0+$/, "").replace(/\.$/, "");
    return text === "" || text === "-0" ? "0" : text;
  }
  const text = String(value);
  if (text === "") return "";
  if (plainIsSafe(text)) return text;
  return JSON.stringify(text).replace(YAML_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

const plainCache = new Map<string, boolean>();

/** Whether `text` reads back from YAML as the same string unquoted (PyYAML's rules). */
export function plainIsSafe(text: string): boolean {
  const known = plainCache.get(text);
  if (known !== undefined) return known;
  let safe = !(text !== text.trim() || /[\n\r]/.test(text) || /^['"\-?!&*%@`|>{[]/.test(text));
  if (safe) {
    const doc = parseDocument(`k: ${text}`, { schema: "failsafe", version: "1.1" });
    const root = doc.contents;
    safe = !doc.errors.length && isMap(root) && root.items.length === 1 && isScalar(root.items[0].value)
      && (root.items[0].value as Scalar).type === "PLAIN" && (root.items[0].value as Scalar).value === text
      && resolvesToString(text);
  }
  if (plainCache.size > 4096) plainCache.clear();
  plainCache.set(text, safe);
  return safe;
}

export { floatRepr };
