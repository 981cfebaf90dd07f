"""Folders of markdown notes (an Obsidian vault, a notes directory), read as memories.

Reads a folder of notes, or one note, which follows no upstream schema: one
memory per note, its subfolders as the namespace, its `title` (or file name)
as a heading, its `tags` and its `created`/`date` property kept (the file's
modification time when it has none). Hidden folders and `templates` folders
are not notes. A note with vaultmem properties (an id, a type, and a namespace
or scheduling state) is restored byte for byte instead of added again, so a
copied vault comes back as it was; a skillmem export file goes to skillmem.py
and a CLAUDE.md-like file to claude_md.py, because a folder of notes often
holds those too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from vaultmem.core.model import TYPES
from vaultmem.errors import BadInput, NoteError
from vaultmem.integrations.importers.base import (
    BULLET_FILES,
    MAX_FILE_BYTES,
    Incoming,
    Record,
    Restore,
    Skip,
    clean_namespace,
)
from vaultmem.integrations.importers.claude_md import read_claude_md
from vaultmem.integrations.importers.common import _list, _markdown_files, _reason, _split, _status, _when, _with_title
from vaultmem.integrations.importers.skillmem import _is_skillmem, read_skillmem
from vaultmem.store.files import read_text


def read_markdown(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Record]:
    """A folder of notes (an Obsidian vault, a notes directory) or one note: one memory
    per note, its subfolders as the namespace, its title as a heading. A note that has
    vaultmem properties (id, type, ...) is restored as it is; a skillmem export file and
    a CLAUDE.md-like file are read as such."""
    for file, rel in _markdown_files(path):
        if file.name.lower() in BULLET_FILES:
            yield from read_claude_md(file, max_bytes)
            continue
        try:
            text = read_text(file, max_bytes)
            meta, body = _split(text)
        except (NoteError, BadInput) as exc:
            yield Skip(str(file), _reason(exc))
            continue
        if _is_vaultmem(meta):
            yield Restore(_vault_rel(rel, meta, file), text, str(file))
            continue
        if _is_skillmem(meta):
            yield from read_skillmem(file, max_bytes)
            continue
        meta = meta if isinstance(meta, dict) else {}
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        title = str(meta.get("title") or file.stem).strip()
        created = _when(next((meta[k] for k in ("created", "date", "created_at") if meta.get(k)), None))
        if created is None and DAILY_NOTE.match(file.stem):  # a daily note: its day, not when it was last saved
            created = _when(file.stem)
        if created is None:
            created = datetime.fromtimestamp(file.stat().st_mtime, timezone.utc).replace(microsecond=0)
        extra = dict(_status(meta), **_identity(meta, file))
        yield Incoming(_with_title(body, title), clean_namespace(folder), tuple(_list(meta.get("tags"))),
                       str(file), created, "memory", title, extra=extra)


DAILY_NOTE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _identity(meta: dict, file: Path) -> dict:
    """What lets the note be found again by its old names: its own `id` as `original_id`
    (`vaultmem show ID`), and its file name among its `aliases`, so Obsidian still resolves the
    `[[File name]]` links of the other notes to it (vaultmem names the file after its text)."""
    out = {}
    if isinstance(meta.get("id"), (str, int)) and not isinstance(meta.get("id"), bool) and str(meta["id"]).strip():
        out["original_id"] = str(meta["id"]).strip()
    aliases = [str(a) for a in _list(meta.get("aliases"))]
    out["aliases"] = list(dict.fromkeys([file.stem, *aliases]))
    return out


def _is_vaultmem(meta) -> bool:
    """A note vaultmem wrote (or one written for it): an id, and a namespace or scheduling state."""
    return (isinstance(meta, dict) and meta.get("id") not in (None, "")
            and str(meta.get("type") or "memory").strip().lower() in TYPES
            and any(k in meta for k in ("namespace", "due", "strength", "state", "tier")))


def _vault_rel(rel: str, meta: dict, file: Path) -> str:
    """Where a note with vaultmem properties goes: its own path if it already sits in a
    vault's note folder, else where vaultmem would have put it."""
    parts = rel.split("/")
    for index, part in enumerate(parts[:-1]):
        if part in ("memories", "skills", "archive"):
            return "/".join(parts[index:])
    folder = "skills" if str(meta.get("type")).strip().lower() == "skill" else "memories"
    namespace = clean_namespace(meta.get("namespace")) or "default"
    return f"{folder}/{namespace}/{file.name}"
