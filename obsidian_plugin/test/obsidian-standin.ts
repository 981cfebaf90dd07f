/**
 * A small stand-in for the `obsidian` module: what the plugin uses of it, in memory.
 * An in-memory vault (files, folders, mtimes, `process`, the adapter for .vaultmem/),
 * a FileManager that moves files, a frontmatter cache, a workspace with leaves, and
 * the Plugin / ItemView / Notice classes. Tests and the screenshot page mount the
 * real plugin on it; nothing here decides what the plugin writes.
 */
import { parse } from "yaml";

export class TAbstractFile {
  constructor(public vault: Vault, public path: string) {}
  get name(): string {
    return this.path.split("/").pop()!;
  }
  get parent(): TFolder | null {
    const at = this.path.lastIndexOf("/");
    return new TFolder(this.vault, at < 0 ? "" : this.path.slice(0, at));
  }
}

export class TFile extends TAbstractFile {
  get basename(): string {
    return this.name.replace(/\.[^.]*$/, "");
  }
  get extension(): string {
    return this.name.includes(".") ? this.name.split(".").pop()! : "";
  }
  get stat(): { mtime: number; ctime: number; size: number } {
    const mtime = this.vault.mtimes.get(this.path) ?? 0;
    return { mtime, ctime: mtime, size: (this.vault.files.get(this.path) ?? "").length };
  }
}

export class TFolder extends TAbstractFile {}

type Listener = (...args: unknown[]) => void;

class Events {
  private listeners = new Map<string, Listener[]>();
  on(name: string, callback: Listener): { name: string; callback: Listener } {
    this.listeners.set(name, [...(this.listeners.get(name) ?? []), callback]);
    return { name, callback };
  }
  trigger(name: string, ...args: unknown[]): void {
    for (const callback of this.listeners.get(name) ?? []) callback(...args);
  }
}

export class Vault extends Events {
  files = new Map<string, string>();
  mtimes = new Map<string, number>();
  clock = () => Date.now();
  adapter = {
    read: async (path: string) => {
      const text = this.files.get(path);
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
    exists: async (path: string) => this.files.has(path) || [...this.files.keys()].some((p) => p.startsWith(path + "/")),
    write: async (path: string, text: string) => this.put(path, text),
    append: async (path: string, text: string) => this.put(path, (this.files.get(path) ?? "") + text),
  };
  constructor(private name = "agent-vault") {
    super();
  }
  getName(): string {
    return this.name;
  }
  put(path: string, text: string, mtime = this.clock()): void {
    this.files.set(path, text);
    this.mtimes.set(path, mtime);
  }
  getAbstractFileByPath(path: string): TFile | TFolder | null {
    if (this.files.has(path)) return new TFile(this, path);
    if ([...this.files.keys()].some((p) => p.startsWith(path + "/"))) return new TFolder(this, path);
    return null;
  }
  getMarkdownFiles(): TFile[] {
    return [...this.files.keys()].filter((p) => p.endsWith(".md") && !p.split("/").some((part) => part.startsWith(".")))
      .sort().map((p) => new TFile(this, p));
  }
  async read(file: TFile): Promise<string> {
    return this.adapter.read(file.path);
  }
  async cachedRead(file: TFile): Promise<string> {
    return this.read(file);
  }
  async process(file: TFile, change: (text: string) => string): Promise<string> {
    const next = change(await this.read(file));
    this.put(file.path, next);
    this.trigger("modify", file);
    return next;
  }
  async createFolder(_path: string): Promise<void> {}
}

export class FileManager {
  constructor(private vault: Vault) {}
  async renameFile(file: TFile, newPath: string): Promise<void> {
    if (this.vault.files.has(newPath)) throw new Error(`Destination file already exists: ${newPath}`);
    this.vault.put(newPath, this.vault.files.get(file.path)!, this.vault.mtimes.get(file.path));
    this.vault.files.delete(file.path);
    this.vault.mtimes.delete(file.path);
    const old = file.path;
    file.path = newPath;
    this.vault.trigger("rename", file, old);
  }
}

export class MetadataCache extends Events {
  constructor(private vault: Vault) {
    super();
  }
  getFileCache(file: TFile): { frontmatter?: Record<string, unknown> } | null {
    const text = this.vault.files.get(file.path);
    if (text === undefined) return null;
    const match = /^\ufeff?---\r?\n([\s\S]*?)\r?\n---/.exec(text);
    if (!match) return {};
    try {
      return { frontmatter: parse(match[1]) ?? undefined };
    } catch {
      return {};
    }
  }
}

export class WorkspaceLeaf {
  view: ItemView | null = null;
  constructor(public workspace: Workspace) {}
  async setViewState(state: { type: string; active?: boolean }): Promise<void> {
    const factory = this.workspace.factories.get(state.type);
    if (!factory) throw new Error(`no view ${state.type}`);
    this.view = factory(this);
    this.workspace.root.append(this.view.containerEl);
    await this.view.onOpen();
  }
}

export class Workspace extends Events {
  factories = new Map<string, (leaf: WorkspaceLeaf) => ItemView>();
  leaves: WorkspaceLeaf[] = [];
  active: TFile | null = null;
  opened: string[] = [];
  root: HTMLElement = document.createElement("div");
  onLayoutReady(callback: () => void): void {
    callback();
  }
  getActiveFile(): TFile | null {
    return this.active;
  }
  getLeavesOfType(type: string): WorkspaceLeaf[] {
    return this.leaves.filter((leaf) => leaf.view?.getViewType() === type);
  }
  getRightLeaf(_split: boolean): WorkspaceLeaf {
    const leaf = new WorkspaceLeaf(this);
    this.leaves.push(leaf);
    return leaf;
  }
  revealLeaf(_leaf: WorkspaceLeaf): void {}
  async openLinkText(link: string, _source: string): Promise<void> {
    this.opened.push(link);
  }
  openFile(file: TFile | null): void {
    this.active = file;
    this.trigger("file-open", file);
  }
}

export class App {
  vault: Vault;
  fileManager: FileManager;
  metadataCache: MetadataCache;
  workspace = new Workspace();
  constructor(vault = new Vault()) {
    this.vault = vault;
    this.fileManager = new FileManager(vault);
    this.metadataCache = new MetadataCache(vault);
  }
}

export interface Command {
  id: string;
  name: string;
  hotkeys?: { modifiers: string[]; key: string }[];
  callback?: () => unknown;
  checkCallback?: (checking: boolean) => boolean | void;
}

export class Plugin {
  commands: Command[] = [];
  statusBar: HTMLElement[] = [];
  ribbon: { icon: string; title: string; callback: () => unknown }[] = [];
  constructor(public app: App, public manifest: { id: string; version: string }) {}
  addCommand(command: Command): Command {
    this.commands.push(command);
    return command;
  }
  addStatusBarItem(): HTMLElement {
    const item = document.createElement("div");
    item.className = "status-bar-item";
    this.statusBar.push(item);
    return item;
  }
  addRibbonIcon(icon: string, title: string, callback: () => unknown): HTMLElement {
    this.ribbon.push({ icon, title, callback });
    return document.createElement("div");
  }
  registerView(type: string, factory: (leaf: WorkspaceLeaf) => ItemView): void {
    this.app.workspace.factories.set(type, factory);
  }
  registerEvent(_ref: unknown): void {}
  register(_cleanup: () => void): void {}
  registerInterval(id: number): number {
    return id;
  }
  /** The stand-in's own helper: a command as Obsidian's palette would run it (null when hidden). */
  run(id: string): boolean {
    const command = this.commands.find((c) => c.id === id || c.id === `${this.manifest.id}:${id}`);
    if (!command) throw new Error(`no command ${id}`);
    if (command.checkCallback) {
      if (!command.checkCallback(true)) return false;
      command.checkCallback(false);
      return true;
    }
    command.callback?.();
    return true;
  }
}

export abstract class ItemView {
  containerEl: HTMLElement;
  contentEl: HTMLElement;
  app: App;
  constructor(public leaf: WorkspaceLeaf) {
    this.app = (leaf.workspace as unknown as { app?: App }).app ?? currentApp!;
    this.containerEl = document.createElement("div");
    this.containerEl.className = "workspace-leaf-content";
    this.contentEl = document.createElement("div");
    this.contentEl.className = "view-content";
    this.containerEl.append(this.contentEl);
  }
  abstract getViewType(): string;
  abstract getDisplayText(): string;
  getIcon(): string {
    return "document";
  }
  async onOpen(): Promise<void> {}
  async onClose(): Promise<void> {}
  registerEvent(_ref: unknown): void {}
}

let currentApp: App | null = null;
/** The app views take in the stand-in (Obsidian gives each view its app). */
export function useApp(app: App): App {
  currentApp = app;
  return app;
}

export const notices: string[] = [];
export class Notice {
  constructor(message: string) {
    notices.push(message);
  }
}
