// Bundles src/main.ts into main.js for Obsidian (CommonJS, `obsidian` left to the app).
// Deterministic: no timestamps, no source maps, so CI can compare the shipped bundle.
import { build } from "esbuild";

await build({
  entryPoints: ["src/main.ts"],
  bundle: true,
  format: "cjs",
  platform: "browser",
  target: "es2020",
  external: ["obsidian", "electron", "@codemirror/*", "@lezer/*"],
  outfile: "main.js",
  legalComments: "none",
  logLevel: "warning",
  banner: { js: "/* vaultmem Obsidian plugin. Built from obsidian_plugin/src by esbuild; do not edit. */" },
});
