"""File primitives shared by every writer: atomic replace, moves, append-only logs,
and reading a note's bytes with clear errors. No knowledge of notes' meaning.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

from vaultmem.errors import NoteError


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` so a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".vaultmem-tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def rewrite_and_move(source: Path, text: str, target: Path) -> None:
    """Rewrite a note in place, then rename it: a move, never a copy plus a delete,
    so a crash cannot leave the note in two places."""
    atomic_write(source, text)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.rename(source, target)
    fsync_dir(source.parent)
    fsync_dir(target.parent)


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def append_jsonl(path: Path, record: dict) -> None:
    """Append one JSON line (the logs are append-only; callers hold the write lock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_text(path: Path, max_bytes: int) -> str:
    """A note's text, or NoteError for what is not a readable markdown note."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise NoteError(path, f"cannot be read ({exc.strerror})", "check the file's permissions") from None
    return decode_note(path, data, max_bytes)


def decode_note(path: Path, data: bytes, max_bytes: int) -> str:
    """A note file's bytes as text, or NoteError naming what is wrong with them."""
    if len(data) > max_bytes:
        raise NoteError(path, f"is {len(data):,} bytes, over the {max_bytes:,}-byte limit for notes",
                        "split it into smaller notes or raise notes.max_note_bytes in .vaultmem/config.yaml")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise NoteError(path, "is UTF-16 text, not UTF-8", "re-save it as UTF-8")
    if b"\x00" in data:
        raise NoteError(path, "is binary, not a markdown note", "move it out of the vault's note folders")
    try:
        # A UTF-8 byte-order mark stays in the text: the note parser reads past it and
        # a rewrite keeps it, so the file's bytes change only where a property did.
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteError(path, "is not UTF-8 text", "re-save it as UTF-8") from None
