/** A vault in memory behind the same `VaultIO` the plugin gives its operations. */
import type { VaultIO } from "../src/ops";

export class MemoryIO implements VaultIO {
  files = new Map<string, string>();
  mtimes = new Map<string, number>();

  constructor(files: Record<string, string> = {}, mtime = 0) {
    for (const [path, text] of Object.entries(files)) {
      this.files.set(path, text);
      this.mtimes.set(path, mtime);
    }
  }

  async read(path: string): Promise<string | null> {
    return this.files.get(path) ?? null;
  }

  async process(path: string, change: (text: string) => string): Promise<string> {
    const text = this.files.get(path);
    if (text === undefined) throw new Error(`${path} does not exist`);
    const next = change(text);
    this.files.set(path, next);
    return next;
  }

  async append(path: string, text: string): Promise<void> {
    this.files.set(path, (this.files.get(path) ?? "") + text);
  }

  mtime(path: string): number {
    return this.mtimes.get(path) ?? 0;
  }

  async move(from: string, to: string): Promise<void> {
    if (this.files.has(to)) throw new Error(`${to} already exists`);
    this.files.set(to, this.files.get(from)!);
    this.mtimes.set(to, this.mtimes.get(from)!);
    this.files.delete(from);
    this.mtimes.delete(from);
  }
}
