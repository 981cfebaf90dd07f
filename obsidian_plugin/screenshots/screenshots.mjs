// Screenshots of the review view and the provenance panel, mounted on the stand-in app with the
// files of a real vault (the demo vault by default), in headless Chromium. Not part of CI.
//   node screenshots/screenshots.mjs [VAULT] [NOW as YYYY-MM-DDTHH:MM:SS]
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const plugin = resolve(here, "..");
const vaultRoot = resolve(process.argv[2] ?? join(plugin, "..", "demo-vault"));
const now = process.argv[3] ? Date.parse(process.argv[3] + "Z") / 1000 : Math.floor(Date.now() / 1000);

function walk(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else out.push(full);
  }
  return out;
}

const files = {};
for (const folder of ["memories", "skills", "archive"]) {
  for (const full of walk(join(vaultRoot, folder))) {
    if (full.endsWith(".md")) files[relative(vaultRoot, full)] = [readFileSync(full, "utf-8"), Math.floor(statSync(full).mtimeMs / 1000)];
  }
}
for (const log of ["reviews.jsonl", "config.yaml", "ledger.jsonl"]) {
  try {
    files[`.vaultmem/${log}`] = [readFileSync(join(vaultRoot, ".vaultmem", log), "utf-8"), now];
  } catch {}
}
const notes = Object.keys(files).filter((p) => p.endsWith(".md"));
const active = notes.find((p) => /^supersedes: /m.test(files[p][0])) ?? notes[0];

const bundle = await build({
  entryPoints: [join(here, "page.ts")], bundle: true, write: false, format: "iife", platform: "browser",
  alias: { obsidian: join(plugin, "test", "obsidian-standin.ts") }, logLevel: "warning",
});
const css = readFileSync(join(here, "theme.css"), "utf-8") + readFileSync(join(plugin, "styles.css"), "utf-8");
const work = mkdtempSync(join(tmpdir(), "vaultmem-shots-"));
const shots = [["review", "theme-light", "review-view.png"], ["provenance", "theme-dark", "provenance-panel.png"]];
for (const [view, theme, out] of shots) {
  const data = { name: basename(vaultRoot), files, now, active, view };
  const html = `<!doctype html><html><head><meta charset="utf-8"><style>${css}</style></head>
<body class="${theme}"><div class="window"><div class="editor"><h1 id="note-title"></h1><pre id="note-body"></pre></div>
<div id="side"></div><div class="statusbar" id="status"></div></div>
<script>const VAULT = ${JSON.stringify(data).replace(/</g, "\\u003c")};</script>
<script>${bundle.outputFiles[0].text}</script></body></html>`;
  const page = join(work, `${view}.html`);
  writeFileSync(page, html);
  execFileSync("chromium", ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", `--user-data-dir=${join(work, "profile-" + view)}`,
    "--hide-scrollbars", "--window-size=1200,760", "--virtual-time-budget=3000", `--screenshot=${join(plugin, out)}`, `file://${page}`],
    { stdio: "inherit" });
  console.log(`wrote ${out} (${view}, ${theme}, ${notes.length} notes from ${vaultRoot}, active ${active})`);
}
