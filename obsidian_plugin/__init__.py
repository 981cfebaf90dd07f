"""The built Obsidian plugin (main.js, manifest.json, styles.css), shipped as package data for `vaultmem obsidian install`."""
