/**
 * The screenshot page: the real plugin mounted on the stand-in app (test/obsidian-standin.ts),
 * on the files of a real vault that screenshots.mjs embeds. Not part of the plugin bundle.
 */
import { App, TFile, useApp, Vault } from "obsidian";
import { VaultmemPlugin } from "../src/main";
import { PROVENANCE_VIEW, REVIEW_VIEW } from "../src/views";

declare const VAULT: { name: string; files: Record<string, [string, number]>; now: number; active: string; view: string };

async function main(): Promise<void> {
  const vault = new Vault(VAULT.name);
  vault.clock = () => VAULT.now * 1000;
  for (const [path, [text, mtime]] of Object.entries(VAULT.files)) vault.put(path, text, mtime * 1000);
  const app = useApp(new App(vault));
  document.getElementById("side")!.append(app.workspace.root);
  const plugin = new VaultmemPlugin(app as never, { id: "vaultmem", version: "0.1.0" } as never);
  plugin.now = () => VAULT.now;
  await plugin.onload();
  document.getElementById("status")!.append(plugin.statusEl);
  const file = new TFile(vault, VAULT.active);
  app.workspace.openFile(file);
  document.getElementById("note-title")!.textContent = file.basename;
  document.getElementById("note-body")!.textContent = vault.files.get(VAULT.active) ?? "";
  await plugin.openView(VAULT.view === "review" ? REVIEW_VIEW : PROVENANCE_VIEW);
  await plugin.refreshAll();
  document.body.dataset.ready = "yes";
}

void main();
