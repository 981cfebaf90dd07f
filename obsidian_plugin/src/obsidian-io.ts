/**
 * `VaultIO` on Obsidian's own APIs only (desktop and mobile): notes through
 * `app.vault` (`process` for an atomic read-modify-write), moves through
 * `app.fileManager.renameFile` (links keep resolving), and `.vaultmem/` logs
 * through the vault's adapter (Obsidian does not index dot-folders). No Node `fs`.
 */
import { type App, TFile } from "obsidian";
import type { VaultIO } from "./ops";

export class ObsidianIO implements VaultIO {
  constructor(private app: App) {}

  private file(path: string): TFile {
    const file = this.app.vault.getAbstractFileByPath(path);
    if (!(file instanceof TFile)) throw new Error(`${path} is not a note in this vault`);
    return file;
  }

  async read(path: string): Promise<string | null> {
    const file = this.app.vault.getAbstractFileByPath(path);
    if (file instanceof TFile) return this.app.vault.read(file);
    if (!(await this.app.vault.adapter.exists(path))) return null;
    return this.app.vault.adapter.read(path);
  }

  process(path: string, change: (text: string) => string): Promise<string> {
    return this.app.vault.process(this.file(path), change);
  }

  async append(path: string, text: string): Promise<void> {
    if (await this.app.vault.adapter.exists(path)) await this.app.vault.adapter.append(path, text);
    else await this.app.vault.adapter.write(path, text);
  }

  mtime(path: string): number {
    return Math.floor(this.file(path).stat.mtime / 1000);
  }

  async move(from: string, to: string): Promise<void> {
    if (this.app.vault.getAbstractFileByPath(to)) throw new Error(`${to} already exists; move one of them aside first`);
    const folder = to.slice(0, to.lastIndexOf("/"));
    if (folder && !this.app.vault.getAbstractFileByPath(folder)) await this.app.vault.createFolder(folder);
    await this.app.fileManager.renameFile(this.file(from), to);
  }
}
