"""Which vault a command works on. Light to import: the recall client runs on every prompt.

1. `--vault PATH`; 2. `VAULTMEM_VAULT`; 3. the nearest ancestor of the working
directory that has `.vaultmem/`; 4. the default vault in the user's data
directory (created on first use by `Vault.open`).
"""

from __future__ import annotations

import os

STATE_DIR = ".vaultmem"


def default_vault_path():
    """The vault used when nothing else names one, in the user's data directory."""
    from pathlib import Path

    import platformdirs

    return Path(platformdirs.user_data_dir("vaultmem", appauthor=False)) / "vault"


def discover_root(explicit=None, cwd=None) -> str:
    """The vault folder as a string, with os.path only (no pathlib: the recall fast path)."""
    if explicit:
        return os.path.realpath(os.path.expanduser(os.fspath(explicit)))
    from_env = os.environ.get("VAULTMEM_VAULT")
    if from_env:
        return os.path.realpath(os.path.expanduser(from_env))
    folder = os.path.realpath(os.fspath(cwd) if cwd else os.getcwd())
    orphan = None  # the nearest folder with notes but no .vaultmem/ (deleted, or a copy without it)
    while True:
        if os.path.isdir(os.path.join(folder, STATE_DIR)):
            return folder
        if orphan is None and _holds_notes(folder):
            orphan = folder
        parent = os.path.dirname(folder)
        if parent == folder:
            default = str(default_vault_path())
            if orphan is not None and orphan not in _warned:
                _warned.add(orphan)  # (once a process: the hooks ask more than once)
                import sys

                print(f"vaultmem: warning: {orphan} holds notes but no {STATE_DIR}/ (deleted, or copied without "
                      f"it): this command uses the default vault {default}; `vaultmem init {orphan}` makes that "
                      "folder a vault again (its notes untouched), or give --vault", file=sys.stderr)
            return default
        folder = parent


_warned: set[str] = set()  # the folders warned of in this process


def _holds_notes(folder: str) -> bool:
    """Whether `folder` looks like a vault that lost its state: a memories/ folder with a note."""
    memories = os.path.join(folder, "memories")
    if not os.path.isdir(memories):
        return False
    for _root, _dirs, files in os.walk(memories):
        if any(name.endswith(".md") for name in files):
            return True
    return False


def discover(explicit=None, cwd=None):
    """The vault folder as a Path."""
    from pathlib import Path

    return Path(discover_root(explicit, cwd))
