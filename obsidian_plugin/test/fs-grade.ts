/**
 * The plugin's grade, archive and restore on a real folder, for the Python suite's
 * end-to-end test (tests/test_obsidian.py): the same code the plugin runs, with
 * Node's fs in place of Obsidian's Vault (test only; the plugin never uses fs).
 *
 *   node fs-grade.cjs VAULT PATH RATING|archive|restore NOW [PROJECT]
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { archiveNote, gradeNote, restoreNote, type VaultIO } from "../src/ops";
import { parseDateText } from "../src/pyvalues";
import type { Rating } from "../src/schedule";

class FsIO implements VaultIO {
  constructor(private root: string) {}
  async read(path: string): Promise<string | null> {
    const full = join(this.root, path);
    return existsSync(full) ? readFileSync(full, "utf-8") : null;
  }
  async process(path: string, change: (text: string) => string): Promise<string> {
    const next = change(readFileSync(join(this.root, path), "utf-8"));
    const temp = join(this.root, path + ".tmp");
    writeFileSync(temp, next);
    renameSync(temp, join(this.root, path));
    return next;
  }
  async append(path: string, text: string): Promise<void> {
    mkdirSync(dirname(join(this.root, path)), { recursive: true });
    appendFileSync(join(this.root, path), text);
  }
  mtime(path: string): number {
    return Math.floor(statSync(join(this.root, path)).mtimeMs / 1000);
  }
  async move(from: string, to: string): Promise<void> {
    if (existsSync(join(this.root, to))) throw new Error(`${to} already exists`);
    mkdirSync(dirname(join(this.root, to)), { recursive: true });
    renameSync(join(this.root, from), join(this.root, to));
  }
}

const [vault, path, act, now, project] = process.argv.slice(2);
const io = new FsIO(vault);
const at = parseDateText(now);
const done = act === "archive" ? archiveNote(io, path, at)
  : act === "restore" ? restoreNote(io, path, at)
  : gradeNote(io, path, act as Rating, at, { project: project ?? "" });
done.then((note) => console.log(note.path), (error) => {
  console.error(String(error.message ?? error));
  process.exit(2);
});
