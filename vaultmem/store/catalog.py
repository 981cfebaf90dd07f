"""The catalog: every note file of the vault, parsed, kept fresh by stat.

Listing, review and recall need every note's properties; parsing thousands of
YAML blocks on every command would be slow, so parsed notes are cached in
`.vaultmem/cache/catalog.pickle` keyed by (path, mtime, size, inode). Any file whose
stamp changed is parsed again; deleting the cache only costs one re-parse.
Files that cannot be read become `problems` (one line each) and are skipped,
so one broken note never stops the rest of the vault.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path

from vaultmem.core.model import Note
from vaultmem.errors import NoteError

NOTE_FOLDERS = ("memories", "skills", "archive")
CACHE_VERSION = 4
# The cache file is re-written once this many notes differ from it.
SAVE_AFTER = 32


@dataclass
class Entry:
    stamp: tuple[int, ...]
    note: Note | None
    problem: str | None = None


@dataclass
class Catalog:
    """Notes by path, plus the files that could not be read."""

    entries: dict[str, Entry] = field(default_factory=dict)
    lag: int = 0  # notes re-read since the cache file was written (not saved)

    @property
    def notes(self) -> list[Note]:
        return [e.note for e in self.entries.values() if e.note is not None]

    @property
    def problems(self) -> list[tuple[str, str]]:
        return sorted((path, e.problem) for path, e in self.entries.items() if e.problem)

    def stamps(self) -> dict[str, tuple[int, ...]]:
        return {path: e.stamp for path, e in self.entries.items() if e.note is not None}


def note_files(root: Path) -> dict[str, tuple[int, ...]]:
    """Every `.md` file under the note folders: relative path -> (mtime_ns, size, inode).

    Hidden files and folders (editor swap files, `.trash`) are not notes.
    """
    found: dict[str, tuple[int, ...]] = {}
    prefix = len(str(root)) + 1
    for folder in NOTE_FOLDERS:
        stack = [os.path.join(root, folder)]
        while stack:
            try:
                with os.scandir(stack.pop()) as entries:
                    for entry in entries:
                        name = entry.name
                        if name.startswith("."):
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif name.endswith(".md") and entry.is_file(follow_symlinks=False):
                            info = entry.stat(follow_symlinks=False)
                            rel = entry.path[prefix:].replace(os.sep, "/")
                            found[rel] = (info.st_mtime_ns, info.st_size, info.st_ino)
            except OSError:
                continue
    return found


def refresh(root: Path, cache_file: Path, read_note, previous: Catalog | None = None) -> Catalog:
    """The catalog as the files are now; `read_note(rel_path)` parses one file.

    Starts from `previous` (a long-lived process) or the cache file. Writes
    the cache back only once it lags the files by more than SAVE_AFTER notes:
    re-parsing a few changed notes is cheaper than re-writing the whole cache
    after every grade, and a read-only command on an unchanged vault writes
    nothing.
    """
    old = previous if previous is not None else _load(cache_file)
    current = note_files(root)
    catalog = Catalog()
    gone = set(old.entries) - set(current)
    changed = bool(gone)
    # How far the cache file is behind the files: what differs from it now.
    lag = len(gone) + (old.lag if previous is not None else 0)
    for rel, stamp in current.items():
        known = old.entries.get(rel)
        if known is not None and known.stamp == stamp:
            catalog.entries[rel] = known
            continue
        changed = True
        lag += 1
        try:
            catalog.entries[rel] = Entry(stamp, read_note(rel))
        except NoteError as exc:
            catalog.entries[rel] = Entry(stamp, None, f"{exc.problem}; {exc.fix}")
    catalog.lag = lag
    if not changed and previous is not None:
        return previous  # unchanged: the same object, so callers can skip their own work
    if changed and (lag > SAVE_AFTER or not old.entries):
        _save(cache_file, catalog)
        catalog.lag = 0
    return catalog


def refresh_paths(root: Path, catalog: Catalog, paths, read_note) -> tuple[Catalog, set[str]]:
    """`catalog` with just `paths` re-read (the watcher's events); returns (catalog, paths that changed)."""
    entries = dict(catalog.entries)
    changed = set()
    for rel in paths:
        full = os.path.join(root, rel)
        try:
            info = os.stat(full)
            stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
        except OSError:
            if entries.pop(rel, None) is not None:
                changed.add(rel)
            continue
        previous = entries.get(rel)
        if previous is not None and previous.stamp == stamp:
            continue
        try:
            entries[rel] = Entry(stamp, read_note(rel))
        except NoteError as exc:
            entries[rel] = Entry(stamp, None, f"{exc.problem}; {exc.fix}")
        changed.add(rel)
    return Catalog(entries, catalog.lag + len(changed)), changed


def is_note_path(rel: str) -> bool:
    """Whether a vault-relative path is a note: `.md` under a note folder, no hidden part."""
    parts = rel.split("/")
    return (len(parts) >= 2 and parts[0] in NOTE_FOLDERS and rel.endswith(".md")
            and not any(part.startswith(".") for part in parts))


def _load(cache_file: Path) -> Catalog:
    try:
        with open(cache_file, "rb") as handle:
            version, entries = pickle.load(handle)
        if version == CACHE_VERSION:
            return Catalog(entries)
    except Exception:  # a missing, old or damaged cache is only a slower start
        pass
    return Catalog()


def _save(cache_file: Path, catalog: Catalog) -> None:
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_name(f".{cache_file.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as handle:
            pickle.dump((CACHE_VERSION, catalog.entries), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, cache_file)
    except OSError:
        pass  # a read-only vault still answers; it is just not cached
