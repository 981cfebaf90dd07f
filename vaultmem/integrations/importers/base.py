"""What every importer yields, and the names of the files they read.

A reader turns a foreign file or folder into records: `Incoming` (a memory or
skill to write with `Vault.add`, which merges a near-duplicate into a
recurrence of the existing note instead of a copy), `Restore` (a whole
vaultmem note file, written byte for byte through `exporters.restore_file`) or
`Skip` (something the source holds that is not imported, with the reason).
The file-name constants and `clean_namespace` (a foreign grouping as a
vaultmem namespace) live here too, because format detection, the readers and
`run_import` all use them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db", ".db3")
MARKDOWN_SUFFIXES = (".md", ".markdown")
# Files whose bullets are each a memory (agent instruction and memory files).
BULLET_FILES = ("claude.md", "claude.local.md", "agents.md", "memory.md", "gemini.md", "copilot-instructions.md",
                ".cursorrules", ".windsurfrules")
MAX_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Incoming:
    """A memory (or skill) read from a foreign store, not yet written."""

    text: str
    namespace: str = ""  # the source's own grouping ("" = none); cleaned and prefixed by -n later
    tags: tuple[str, ...] = ()
    source: str = ""  # where it came from: file path plus row id, line or note name
    created: datetime | None = None
    kind: str = "memory"  # memory | skill
    title: str | None = None
    tier: str | None = None
    extra: dict = field(default_factory=dict)  # "status": "archived" archives it after adding


@dataclass(frozen=True)
class Restore:
    """A complete vaultmem note file, to be recreated at `rel` with exactly `text`."""

    rel: str
    text: str
    source: str


@dataclass(frozen=True)
class LogLine:
    """One line of a vault log an export carries (`reviews.jsonl`, `archive.jsonl`), to be appended
    unless the vault has it."""

    log: str
    record: dict
    source: str


@dataclass(frozen=True)
class Skip:
    source: str
    reason: str


Record = Incoming | Restore | LogLine | Skip


def clean_namespace(text: str | None) -> str:
    """A foreign grouping ("user:prefs", "My Notes/Work") as a vaultmem namespace ("user/prefs", "My-Notes/Work")."""
    parts = []
    for part in re.split(r"[/:\\]+", str(text or "")):
        part = re.sub(r"[^\w.-]+", "-", part.strip()).strip("-.")
        if part:
            parts.append(part)
    return "/".join(parts)
