"""Creating a vault: the template copied into a new or existing (Obsidian) folder."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from vaultmem.config import DEFAULT_CONFIG_TEXT
from vaultmem.store.discovery import STATE_DIR
from vaultmem.store.files import atomic_write


def init_vault(root: Path) -> list[str]:
    """Create a vault at `root`, or add what is missing to an existing folder.

    Copies `vault_template/` file by file, never replacing a file that exists
    (an Obsidian vault keeps its own settings and notes). Returns what was added.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    added: list[str] = []
    template = resources.files("vaultmem.vault_template")
    for rel in _template_files(template):
        target = root / rel
        if target.name == ".gitkeep":
            if not target.parent.exists():
                target.parent.mkdir(parents=True)
                added.append(Path(rel).parent.as_posix() + "/")
            continue
        source = template.joinpath(*Path(rel).parts).read_text(encoding="utf-8")
        if target.exists():
            merged = _merge_into_existing(rel, target.read_text(encoding="utf-8"), source)
            if merged is not None:
                atomic_write(target, merged)
                added.append(f"{rel} (merged)")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
        added.append(rel)
    state = root / STATE_DIR
    if not state.is_dir():
        state.mkdir()
        added.append(f"{STATE_DIR}/")
    config = state / "config.yaml"
    if not config.exists():
        config.write_text(DEFAULT_CONFIG_TEXT, encoding="utf-8")
        added.append(f"{STATE_DIR}/config.yaml")
    return added


def _merge_into_existing(rel: str, existing: str, ours: str) -> str | None:
    """What an existing vault lacks of two shared files, added without changing the rest.

    `.obsidian/types.json` gains the types of vaultmem's properties it does not
    declare yet (a person's own choices win); `.gitignore` gains missing lines.
    Anything else that exists is left alone. None means nothing to change.
    """
    if rel == ".obsidian/types.json":
        try:
            data = json.loads(existing)
        except ValueError:
            return None  # a person's broken file: not ours to repair
        types = data.setdefault("types", {}) if isinstance(data, dict) else None
        if not isinstance(types, dict):
            return None
        missing = {k: v for k, v in json.loads(ours)["types"].items() if k not in types}
        if not missing:
            return None
        types.update(missing)
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if rel == ".gitignore":
        have = {line.strip() for line in existing.splitlines()}
        lines = [line for line in ours.splitlines()
                 if line.strip() and not line.startswith("#") and line.strip() not in have]
        if not lines:
            return None
        sep = "" if existing.endswith("\n") or not existing else "\n"
        return existing + sep + "# vaultmem: derived state\n" + "\n".join(lines) + "\n"
    return None


def _template_files(template) -> list[str]:
    found = []
    stack = [(template, "")]
    while stack:
        node, prefix = stack.pop()
        for child in node.iterdir():
            name = child.name
            if name in ("__pycache__", "__init__.py"):
                continue
            rel = f"{prefix}{name}"
            if child.is_dir():
                stack.append((child, rel + "/"))
            else:
                found.append(rel)
    return sorted(found)
