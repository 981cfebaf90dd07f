"""Helpers the readers share: SQLite inspection, dates, frontmatter, loose field values.

A read-only SQLite connection and its table and column lists (never creating
or changing the file), the markdown files of a folder and their YAML
frontmatter, a date from ISO text or epoch seconds or milliseconds, and the
coercions foreign stores need (text, tag lists, JSON kept in a column, truthy
flags, an archived status). None of them belongs to one format, which is why
they are here and not in a reader's module.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from vaultmem.core.note import load_frontmatter, split_frontmatter
from vaultmem.errors import BadInput, NoteError
from vaultmem.integrations.importers.base import MARKDOWN_SUFFIXES, MAX_FILE_BYTES
from vaultmem.store.files import read_text
from vaultmem.timefmt import parse_datetime


def _markdown_files(path: Path) -> Iterator[tuple[Path, str]]:
    """Markdown files under `path` (sorted), with their path relative to it. Hidden
    folders (.obsidian, .git, .vaultmem, .trash) and `templates` folders are not notes."""
    if path.is_file():
        yield path, path.name
        return
    found = []
    for folder, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d.lower() not in ("templates", "node_modules"))
        for name in files:
            if name.lower().endswith(MARKDOWN_SUFFIXES) and not name.startswith("."):
                full = Path(folder) / name
                found.append((full, full.relative_to(path).as_posix()))
    yield from sorted(found, key=lambda item: item[1])


def _split(text: str) -> tuple[dict | None, str]:
    """(properties, body); the vault's own frontmatter reader, so a file with an alias
    bomb or a property written twice is refused here as it would be in the vault."""
    block, body = split_frontmatter(text)
    if block is None:
        return None, body
    try:
        meta = dict(load_frontmatter(block, "frontmatter").data)  # its own copy: the reader remembers blocks
    except NoteError as exc:
        if "not a set of properties" in exc.problem:
            return None, body
        raise BadInput(f"{exc.problem}; fix it, then import again") from None
    return meta, body


def _frontmatter_of(path: Path):
    try:
        return _split(read_text(path, MAX_FILE_BYTES))[0]
    except (NoteError, BadInput):
        return None


def _with_title(body: str, title: str | None) -> str:
    """The body, with `# title` first unless it already opens with a heading or the title."""
    text = _text(body)
    if not title or not text:
        return text
    first = text.splitlines()[0].strip()
    if first.startswith("#") or title.strip().lower() in first.lower():
        return text
    return f"# {title.strip()}\n\n{text}"


def _text(value) -> str:
    return str(value or "").replace("\r\n", "\n").strip()


def _list(value) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip().lstrip("#") for v in value if str(v).strip().lstrip("#")]
    return [t.lstrip("#") for t in re.split(r"[,\s]+", str(value)) if t.lstrip("#")]


def _json(value):
    if isinstance(value, str) and value.strip().startswith(("[", "{")):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _truthy(value) -> bool:
    return bool(value) and str(value).strip().lower() not in ("0", "false", "no", "none", "null")


def _status(item: dict) -> dict:
    status = str(item.get("status") or item.get("lifecycle") or "").strip().lower()
    if status == "archived" or _truthy(item.get("archived")):
        return {"status": "archived"}
    return {}


def _when(value) -> datetime | None:
    """A date from what stores use: ISO text, epoch seconds or milliseconds."""
    if value in (None, "") or isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)) or re.fullmatch(r"\d{9,13}(\.\d+)?", str(value).strip()):
            seconds = float(value)
            if seconds > 1e11:
                seconds /= 1000
            return datetime.fromtimestamp(seconds, timezone.utc).replace(microsecond=0)
        return parse_datetime(value)
    except (BadInput, ValueError, OverflowError, OSError):
        return None


def _reason(exc: Exception) -> str:
    if isinstance(exc, NoteError):
        return exc.problem
    return str(exc)


def _read_raw(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"{path} cannot be read ({exc.strerror})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not UTF-8 text") from None


def _first_json_line(path: Path):
    try:
        with open(path, encoding="utf-8-sig") as handle:
            for line in handle:
                if line.strip():
                    return json.loads(line)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return None


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


class _connect:
    """A read-only SQLite connection (never creates or changes the file), closed on exit."""

    def __init__(self, path: Path):
        if not _is_sqlite(path):
            raise BadInput(f"{path} is not a SQLite database")
        try:
            self.db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise BadInput(f"{path} cannot be opened: {exc}") from None
        self.db.row_factory = sqlite3.Row

    def __enter__(self) -> sqlite3.Connection:
        return self.db

    def __exit__(self, *exc):
        self.db.close()
        if exc[0] is not None and issubclass(exc[0], sqlite3.Error):
            raise BadInput(f"cannot read the database: {exc[1]}") from None


def _table_names(db: sqlite3.Connection) -> list[str]:
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    shadow = ("_fts", "_data", "_idx", "_content", "_docsize", "_config")
    return [n for n in names if not n.startswith("sqlite_") and not n.endswith(shadow)]


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f'PRAGMA table_info("{table}")')}


def _tables(path: Path) -> dict[str, set[str]]:
    try:
        with _connect(path) as db:
            return {t: _columns(db, t) for t in _table_names(db)}
    except BadInput:
        return {}
