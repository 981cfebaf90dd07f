"""The Obsidian plugin: the built bundle shipped in the package, and installing it into a vault.

`obsidian_plugin/` (TypeScript) builds `main.js`; the package ships it with the
manifest and the styles as `vaultmem.obsidian_plugin` package data, so
`vaultmem obsidian install` needs no Node. Installing copies the three files
into `VAULT/.obsidian/plugins/vaultmem/` and adds `vaultmem` to
`.obsidian/community-plugins.json`, keeping every plugin already listed.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from vaultmem.errors import BadInput
from vaultmem.store.files import atomic_write

PLUGIN_ID = "vaultmem"
BUNDLE_FILES = ("main.js", "manifest.json", "styles.css")


def bundle() -> dict[str, str]:
    """The shipped plugin files, name -> text."""
    package = resources.files("vaultmem.obsidian_plugin")
    files = {}
    for name in BUNDLE_FILES:
        source = package.joinpath(name)
        if not source.is_file():
            raise BadInput(f"the Obsidian plugin's {name} is missing from this installation; "
                           "build it with `npm ci && npm run build` in obsidian_plugin/ and reinstall vaultmem")
        files[name] = source.read_text(encoding="utf-8")
    return files


def install(vault_root: Path) -> dict:
    """Put the plugin into the vault's `.obsidian/` and enable it; returns what was done."""
    obsidian = Path(vault_root) / ".obsidian"
    target = obsidian / "plugins" / PLUGIN_ID
    files = bundle()
    changed = []
    for name, text in files.items():
        path = target / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            atomic_write(path, text)
            changed.append(name)
    enabled_now = _enable(obsidian / "community-plugins.json")
    return {"plugin_dir": str(target), "version": json.loads(files["manifest.json"])["version"],
            "updated": changed, "enabled": enabled_now}


def _enable(path: Path) -> bool:
    """Add the plugin to community-plugins.json (a JSON list of ids); True if it was not there."""
    plugins: list = []
    if path.exists():
        try:
            plugins = json.loads(path.read_text(encoding="utf-8") or "[]")
        except ValueError:
            plugins = None
        if not isinstance(plugins, list):
            raise BadInput(f"{path} is not a JSON list of plugin ids; fix it (Obsidian writes [\"id\", ...]) "
                           "and run `vaultmem obsidian install` again")
    if PLUGIN_ID in plugins:
        return False
    atomic_write(path, json.dumps([*plugins, PLUGIN_ID], indent=2, ensure_ascii=False))
    return True
