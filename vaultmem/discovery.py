"""Which vault a command works on. Light to import: the recall client runs on every prompt.

1. `--vault PATH`; 2. `VAULTMEM_VAULT`; 3. the nearest ancestor of the working
directory that has `.vaultmem/`; 4. the default vault in the user's data
directory (created on first use by `Vault.open`).
"""

from __future__ import annotations

import os
from pathlib import Path

STATE_DIR = ".vaultmem"


def default_vault_path() -> Path:
    """The vault used when nothing else names one, in the user's data directory."""
    import platformdirs

    return Path(platformdirs.user_data_dir("vaultmem", appauthor=False)) / "vault"


def discover(explicit: str | os.PathLike | None = None, cwd: Path | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser().resolve()
    from_env = os.environ.get("VAULTMEM_VAULT")
    if from_env:
        return Path(from_env).expanduser().resolve()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / STATE_DIR).is_dir():
            return folder
    return default_vault_path()
