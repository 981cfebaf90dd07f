/**
 * The ledger, `.vaultmem/ledger.jsonl`, as vaultmem/store/ledger.py writes it: one JSON
 * record per line, keys sorted, each with the SHA-256 of the note's text (NFC, LF) and
 * the hash of the record before it. The tip is the last complete line (also after a
 * git merge, which ends the file with its merge record); a torn last line is ended
 * with "\n" first so it stays a line of its own. Pure except for Web Crypto.
 */
import { pyJson } from "./pyvalues";

export const LEDGER = ".vaultmem/ledger.jsonl";
export const GENESIS = "0".repeat(64);

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The hash of a note's text as a person sees it (NFC, LF). */
export function contentHash(text: string): Promise<string> {
  return sha256(text.normalize("NFC").replace(/\r\n/g, "\n"));
}

/** Every complete line of the ledger that reads as a record, in order. */
export function records(ledger: string): Record<string, unknown>[] {
  const complete = ledger.slice(0, ledger.lastIndexOf("\n") + 1);
  const out: Record<string, unknown>[] = [];
  for (const line of complete.split("\n")) {
    if (!line.trim()) continue;
    try {
      const record = JSON.parse(line);
      if (record && typeof record === "object" && !Array.isArray(record)) out.push(record);
    } catch {
      // a damaged line: `vaultmem verify` reports it; the chain goes on from the record before it
    }
  }
  return out;
}

/** The last record about `id`, if any. */
export function lastFor(ledger: string, id: string): Record<string, unknown> | undefined {
  return records(ledger).filter((r) => r.id === id).pop();
}

export interface Entry { op: string; id: string; path: string; text: string | null; time: string; detail?: Record<string, unknown> | null }

/** The text to append to `ledger` for `entries` (chained from its tip), and the records. */
export async function appendText(ledger: string, entries: Entry[]): Promise<string> {
  const all = records(ledger);
  const tip = all[all.length - 1];
  let seq = tip && Number.isInteger(tip.seq) ? (tip.seq as number) : all.length;
  let prev = tip && typeof tip.hash === "string" ? tip.hash : GENESIS;
  let out = ledger && !ledger.endsWith("\n") ? "\n" : "";
  for (const entry of entries) {
    seq += 1;
    const record: Record<string, unknown> = {
      seq, time: entry.time, op: entry.op, id: entry.id, path: entry.path,
      content: entry.text === null ? null : await contentHash(entry.text), prev,
    };
    if (entry.detail && Object.keys(entry.detail).length) record.detail = entry.detail;
    record.hash = prev = await sha256(pyJson(record, true));
    out += pyJson(record) + "\n";
  }
  return out;
}
