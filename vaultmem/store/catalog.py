"""The catalog: every note file of the vault, parsed once, in a SQLite file that
updates one note at a time.

`.vaultmem/cache/catalog.sqlite` holds, per note file: its stamp (mtime, size),
the hash of its bytes, the parsed note as JSON, or the one-line problem that
keeps it out (broken YAML, binary, too big). Commands read only what they need:
`grade ID` looks up one row by id, `add` asks whether a file name is taken,
recall fetches its candidates; nothing is unpickled (a file planted in the
cache can hold data, never code). It is derived: deleting it costs one
re-parse of the vault, with identical results.

Freshness without a watcher, bounded per call (`refresh`):
- every call stats the note folders (a few hundred at most); a folder whose
  mtime moved is listed again. Editors save by writing a temp file and renaming
  it over the note, and a rename, a new file or a deletion moves its folder's
  mtime, so these are seen by the next call;
- a full stat of every note file at most every FULL_CHECK_SECONDS (and always
  on `reindex` and `verify`) catches what does not touch a folder: a file
  rewritten in place, a folder whose mtime the filesystem did not change.
A stamp that moved with the same bytes (a copied or restored vault, `touch`)
costs one hash and no re-parse, re-index or re-embedding.

Every change bumps a generation number; `changes_since(gen)` is the feed that
long-lived readers (the recall engine, the watcher) follow instead of
re-reading the vault.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

from vaultmem.core.model import HIDDEN_STATUSES, Note
from vaultmem.core.note import ID_LINE, READER_VERSION
from vaultmem.errors import NoteError
from vaultmem.store.files import file_identity, open_folder

NOTE_FOLDERS = ("memories", "skills", "archive")
SCHEMA_VERSION = 6  # 4: notes a rowid table; 5: an unreadable note keeps the id its `id:` line states;
# 6: digests as 16-byte blobs, no folder column, a row's JSON without its columns, datetimes as seconds
# Tables of other modules in this file that a new catalog schema keeps: the vectors' map of
# text hash -> row (search/vectors.py), so an upgrade re-parses the vault but runs the model on
# nothing (a 10k vault: a minute or more). Its module renames it if its own layout changes.
KEPT_ACROSS_VERSIONS = frozenset({"vectors"})
FULL_CHECK_SECONDS = 10.0
OPEN_ATTEMPTS = 20  # tries to open the file while another process deletes its folder (reindex)
RACY_NS = 50_000_000  # a folder changed this recently (50 ms) may change again within its mtime's tick
_DATETIME_FIELDS = ("due", "last_review", "created", "updated", "decayed", "promoted")
_TUPLE_FIELDS = ("tags", "sessions", "days", "projects", "contested_with")
# What a row's JSON array holds: every field but those the row has as columns (path, id, type,
# namespace, status) and `present` (which properties the file has: a bit per property name, as
# one integer, at the end).
_COLUMN_FIELDS = ("id", "type", "namespace", "status")
_NOTE_FIELDS = tuple(f.name for f in fields(Note) if f.name not in ("path", "present", *_COLUMN_FIELDS))
# What a query selects to rebuild a note (note_from_row).
NOTE_COLUMNS = "path, id, type, namespace, status, note"
_PROPERTY_BITS = {name: 1 << i for i, name in enumerate(sorted(
    ("id", "type", "namespace", "tags", "status", "tier", "strength", "state", "step", "stability", "difficulty",
     "due", "last_review", "reps", "lapses", "created", "updated", "decayed", "source", "explicit", "sessions",
     "days", "projects", "promoted", "supersedes", "superseded_by", "contested", "contested_with", "redacted")))}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS notes (
    path TEXT PRIMARY KEY,
    stem TEXT NOT NULL,
    id TEXT,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    hash BLOB NOT NULL,
    gen INTEGER NOT NULL,
    type TEXT,
    namespace TEXT,
    status TEXT,
    note TEXT,
    problem TEXT,
    indexed INTEGER,
    indexed_doc BLOB
);
CREATE INDEX IF NOT EXISTS notes_id ON notes(id);
CREATE INDEX IF NOT EXISTS notes_stem ON notes(stem);
CREATE INDEX IF NOT EXISTS notes_gen ON notes(gen);
-- `indexed`: the generation of the row the BM25 index holds (a row rewritten since has a newer one)
CREATE INDEX IF NOT EXISTS notes_unindexed ON notes(path) WHERE indexed IS NOT gen;
-- the unreadable notes (pending_index and problems ask often: a scan of 100k rows took 50-130 ms)
CREATE INDEX IF NOT EXISTS notes_unreadable ON notes(path) WHERE note IS NULL;
CREATE TABLE IF NOT EXISTS removed (path TEXT PRIMARY KEY, gen INTEGER NOT NULL, indexed INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS removed_gen ON removed(gen);
CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL) WITHOUT ROWID;
"""


_DIGITS = frozenset("0123456789")


def stated_id(data: bytes) -> str | None:
    """The `id:` line of a file that does not parse (broken YAML, a merge conflict), if it has one."""
    match = ID_LINE.search(data[:4096].decode("utf-8", "replace"))
    return match.group(1) if match else None


def is_note_path(rel: str) -> bool:
    """Whether a vault-relative path is a note: `.md` under a note folder, no hidden part."""
    parts = rel.split("/")
    return (len(parts) >= 2 and parts[0] in NOTE_FOLDERS and rel.endswith(".md")
            and not any(part.startswith(".") for part in parts))


def content_digest(data: bytes) -> bytes:
    """A file's fingerprint for change detection (not the ledger's hash: nothing is proven with it);
    16 raw bytes, as the catalog stores it."""
    return hashlib.blake2b(data, digest_size=16).digest()


# ---------------------------------------------------------------- notes as rows

def note_to_json(note: Note) -> str:
    """A note as a JSON array of its fields in the dataclass's order (no key names: 10k notes
    would store them 10k times), datetimes as seconds since 1970 (UTC, whole seconds, as notes
    hold them); the schema version changes when the fields do."""
    values = []
    for name in _NOTE_FIELDS:
        value = getattr(note, name)
        if isinstance(value, datetime):
            value = _seconds(value)
        elif isinstance(value, (tuple, frozenset)):
            value = sorted(value) if isinstance(value, frozenset) else list(value)
        values.append(value)
    present = 0
    others = []
    for name in note.present:
        if name in _PROPERTY_BITS:
            present |= _PROPERTY_BITS[name]
        else:
            others.append(name)
    values.append([present, *sorted(others)])
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def note_from_row(path: str, note_id: str, note_type: str, namespace: str, status: str, text: str) -> Note:
    """The note of a row selected as NOTE_COLUMNS."""
    values = json.loads(text)
    bits, *others = values.pop()
    data = dict(zip(_NOTE_FIELDS, values))
    data.update(path=path, id=note_id, type=note_type, namespace=namespace, status=status)
    data["present"] = _present_set(bits, tuple(others))
    for name in _SHARED_TEXT_FIELDS:
        data[name] = sys.intern(data[name])
    for name in _DATETIME_FIELDS:
        if data.get(name) is not None:
            data[name] = _from_seconds(data[name])
    for name in _TUPLE_FIELDS:
        data[name] = tuple(data.get(name) or ())
    return Note(**data)


# A Note is frozen and made from its row alone: the same row (every column, the JSON text
# included) gives an equal Note, shared. Bounded: 4,096 of them (~6 MB), whatever the vault's size.
_recent_note = functools.lru_cache(maxsize=4096)(note_from_row)


def _seconds(value: datetime) -> int | str:
    """A note's datetime as whole seconds since 1970 (9 bytes of JSON, not 25); one that holds
    a fraction or lies outside what every platform converts back stays ISO text."""
    if value.tzinfo is None or value.microsecond or not 1900 <= value.year <= 9999:
        return value.isoformat()
    return int(value.timestamp())


def _from_seconds(value: int | str) -> datetime:
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    return datetime.fromtimestamp(value, timezone.utc)


# Fields with a few values shared by many notes: one string each, not one per note.
_SHARED_TEXT_FIELDS = ("type", "namespace", "status", "tier", "state")


@functools.lru_cache(maxsize=1024)
def _present_set(bits: int, others: tuple[str, ...]) -> frozenset[str]:
    """One frozenset per distinct set of properties (most notes have the same few): 10k
    notes held 10k copies, a third of the catalog's memory."""
    return frozenset([name for name, bit in _PROPERTY_BITS.items() if bits & bit] + list(others))


def _stem(rel: str) -> str:
    return rel.rpartition("/")[2].removesuffix(".md")


# ---------------------------------------------------------------- the catalog

class Catalog:
    """The notes of one vault, as a SQLite table kept in step with the files.

    `read_note(rel, text)` turns a file's text into a Note (or raises NoteError);
    the catalog owns when to call it, never what a note means.
    """

    # The test suite turns this on: a note a writer hands over (wrote(..., note=)) is then
    # checked against what its file parses to.
    check_known_notes = False

    def __init__(self, root: Path, db_file: Path, read_note: Callable[[str, str], Note],
                 max_bytes: int = 1 << 20):
        self.root = Path(root)
        self.db_file = Path(db_file)
        self.read_note = read_note
        self.max_bytes = max_bytes
        # One connection per thread: the watcher writes from its socket threads while its
        # main loop follows file events, and a sqlite3 connection's transaction is not
        # something two threads can share.
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._notes_cache: tuple[int, list[Note]] | None = None
        self._checked_at = 0.0
        self._file_id: tuple[int, int] | None = None  # (device, inode) of the file the connections opened

    # ------------------------------------------------------------ connection

    @property
    def db(self) -> sqlite3.Connection:
        if getattr(self._local, "db", None) is None:
            if self._connections and self.replaced():
                # Made anew by another process (a reindex) since this catalog opened it: a connection
                # by its path would read the new, half-built file (or make one in the folder being
                # deleted). This thread reads through a connection on this catalog's own file until
                # its owner starts over (RecallEngine.follow_replaced_caches).
                self._local.db = self._connections[0]
                return self._local.db
            for attempt in range(OPEN_ATTEMPTS):
                try:
                    opened = self._open()
                except (sqlite3.OperationalError, OSError) as exc:
                    # Its folder deleted, or made again, while it opened the file (a reindex
                    # starting): tried again. Any other trouble, or this one for good, is raised.
                    if not _deleted_under_it(exc) or attempt == OPEN_ATTEMPTS - 1:
                        raise
                    continue
                if opened is not None:
                    break
            else:
                raise sqlite3.OperationalError(f"{self.db_file} was deleted each time it was opened")
            db, identity = opened
            if self._file_id is None:
                self._file_id = identity
            self._local.db = db
            self._connections.append(db)
        return self._local.db

    def _open(self) -> tuple[sqlite3.Connection, tuple[int, int]] | None:
        """A new connection to the catalog's file, which it makes (with its folder) if missing,
        and the identity of the file it opened (replaced() compares it with the file there later);
        None when the file was deleted or replaced while it opened it."""
        self.db_file.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.db_file, timeout=60, isolation_level=None, check_same_thread=False)
        identity = file_identity(self.db_file)
        try:
            self._prepare(db)
        except BaseException as exc:
            db.close()
            if isinstance(exc, sqlite3.DatabaseError) and file_identity(self.db_file) != identity:
                return None  # (e.g. "attempt to write a readonly database": SQLite saw its file deleted)
            raise
        if identity is None or file_identity(self.db_file) != identity:
            db.close()
            return None
        return db, identity

    def _prepare(self, db: sqlite3.Connection) -> None:
        """Its settings, and the tables of this vaultmem's schema (made, or made again)."""
        db.execute("PRAGMA busy_timeout = 60000")
        try:
            db.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError:
            pass  # a filesystem without shared memory: the default journal still works
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA journal_size_limit = 4194304")  # the WAL shrinks back after a checkpoint
        version = _meta(db, "version")
        if version is not None and version != str(SCHEMA_VERSION):
            # A catalog of another vaultmem: derived, so start it again (the ledger's and the
            # vectors' tables too, which live in the same file), but for the tables whose
            # rows do not depend on it.
            for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                if table not in KEPT_ACROSS_VERSIONS:
                    db.execute(f'DROP TABLE IF EXISTS "{table}"')
        db.executescript(_SCHEMA)
        if version is None or version != str(SCHEMA_VERSION):
            db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (str(SCHEMA_VERSION),))
        if _meta(db, "reader") != str(READER_VERSION):
            # Made under another reader (core/note.py): the notes it refused are read again at the
            # next refresh, a full check, not only once their bytes change (their stamp and hash
            # are forgotten). Readable rows stay: a new rule reads what the old one read alike.
            db.execute("UPDATE notes SET mtime_ns = -1, hash = x'' WHERE note IS NULL")
            db.execute("DELETE FROM meta WHERE key = 'full_check_at'")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('reader', ?)", (str(READER_VERSION),))

    def close(self) -> None:
        for db in self._connections:
            try:
                db.close()
            except sqlite3.ProgrammingError:
                pass  # made in another thread that is gone
        self._connections = []
        self._local = threading.local()
        self._file_id = None

    def replaced(self) -> bool:
        """Whether the file this catalog's connections read is no longer the one at its path:
        deleted, or made anew by another process (`reindex`). The connections still work, on
        the old file, but see nothing written to the new one."""
        return self._file_id is not None and file_identity(self.db_file) != self._file_id

    def transaction(self):
        return transaction(self.db)

    @property
    def generation(self) -> int:
        return int(_meta(self.db, "gen") or 0)

    def _next_generation(self) -> int:
        gen = self.generation + 1
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('gen', ?)", (str(gen),))
        return gen

    # ------------------------------------------------------------ freshness

    def refresh(self, full: bool = False) -> set[str]:
        """Bring the table in step with the files (see the module doc); returns the paths that changed."""
        now = time.time()
        last_full = float(_meta(self.db, "full_check_at") or 0)
        if full or now - last_full >= FULL_CHECK_SECONDS or abs(now - last_full) > 86400:
            changed = self._full_check()
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('full_check_at', ?)", (repr(now),))
            return changed
        return self._folder_check()

    def _full_check(self) -> set[str]:
        files, folders = _scan(self.root)
        known = {path: (mtime, size) for path, mtime, size in self.db.execute("SELECT path, mtime_ns, size FROM notes")}
        changed = [rel for rel, stamp in files.items() if known.get(rel) != stamp]
        gone = [rel for rel in known if rel not in files]
        touched, unsure = self._apply(changed, gone, files)
        folders.update((folder, -1) for folder in unsure)
        with self.transaction():
            self.db.execute("DELETE FROM folders")
            self.db.executemany("INSERT INTO folders VALUES (?, ?)", folders.items())
        return touched

    def _folder_check(self) -> set[str]:
        """Re-list only the folders whose mtime moved (a file in them was added, renamed or deleted).

        Which moved is seen without a lock; the listing and what it changes happen inside one
        transaction, from the records as the previous check left them: two checks at once
        (the watcher's rescan and a request, two commands) take turns instead of each writing
        what it saw at its own moment, which could record a folder as listed without the notes
        another check had just dropped, hiding them from recall until the full check."""
        known = dict(self.db.execute("SELECT path, mtime_ns FROM folders"))
        if not known:
            return self._full_check()
        if not self._moved_folders(known):
            return set()
        with self.transaction():
            known = dict(self.db.execute("SELECT path, mtime_ns FROM folders"))
            moved = self._moved_folders(known)
            return self._list_again(known, moved) if moved else set()

    def _moved_folders(self, known: dict[str, int]) -> list[str]:
        """The recorded folders whose mtime is not the one recorded (or that are gone), and
        note folders never recorded (a clone has no empty archive/ until a pull brings the
        first archived note)."""
        moved = []
        for folder, mtime in known.items():
            try:
                if os.stat(self.root / folder).st_mtime_ns != mtime:
                    moved.append(folder)
            except OSError:
                moved.append(folder)
        return moved + [top for top in NOTE_FOLDERS if top not in known and (self.root / top).is_dir()]

    def _list_again(self, known: dict[str, int], moved: list[str]) -> set[str]:
        files: dict[str, tuple[int, int]] = {}
        folders: dict[str, int] = {}
        for folder in moved:
            # Only this folder's own entries; a sub-folder we did not know is new: all of it.
            found_files, found_folders = _scan(self.root, folder, recursive=False)
            for sub in [f for f in found_folders if f != folder and f not in known]:
                sub_files, sub_folders = _scan(self.root, sub)
                found_files.update(sub_files)
                found_folders.update(sub_folders)
            files.update(found_files)
            folders.update({f: m for f, m in found_folders.items() if f == folder or f not in known})
        gone_folders = [f for f in moved if f not in folders]
        listed = {f for f in moved if f in folders} | {f for f in folders if f not in known}
        known_files = {}
        for folder in listed:
            known_files.update(self._stamps_under(folder, recursive=False))
        for folder in gone_folders:
            known_files.update(self._stamps_under(folder, recursive=True))
        changed = [rel for rel, stamp in files.items() if known_files.get(rel) != stamp]
        gone = [rel for rel in known_files if rel not in files]
        touched, unsure = self._apply(changed, gone, files, gone_folders)
        folders.update((folder, -1) for folder in unsure)
        self.db.executemany("INSERT OR REPLACE INTO folders VALUES (?, ?)", folders.items())
        return touched

    def _stamps_under(self, folder: str, recursive: bool) -> dict[str, tuple[int, int]]:
        """(mtime, size) of the catalogued notes in `folder` (`recursive`: and in its sub-folders),
        read by a range of the path key: every path under `folder/` sorts between `folder/` and
        `folder0` ('0' follows '/')."""
        start = len(folder) + 1
        return {path: (mtime, size) for path, mtime, size in self.db.execute(
                    "SELECT path, mtime_ns, size FROM notes WHERE path > ? AND path < ?", (folder + "/", folder + "0"))
                if recursive or "/" not in path[start:]}

    def refresh_paths(self, paths: Iterable[str]) -> set[str]:
        """Re-check just these files (the watcher's events); returns those that changed."""
        files, gone = {}, []
        for rel in paths:
            stamp = _stamp_of(self.root / rel)
            if stamp is None:
                gone.append(rel)
            else:
                files[rel] = stamp
        known = {path: (mtime, size) for path, mtime, size in rows_in(
            self.db, "SELECT path, mtime_ns, size FROM notes WHERE path IN ({marks})", [*files, *gone])}
        changed = [rel for rel, stamp in files.items() if known.get(rel) != stamp]
        return self._apply(changed, [rel for rel in gone if rel in known], files)[0]

    def _apply(self, changed: list[str], gone: list[str], stamps: dict[str, tuple[int, int]],
               gone_folders: Iterable[str] = ()) -> tuple[set[str], set[str]]:
        """Re-read `changed` files (a same-bytes file only gets its new stamp) and drop `gone`
        ones, and the folder records of `gone_folders` (folders that were not there to list);
        returns (the paths whose rows changed, the folders the caller must record as unknown,
        so that the next check lists them: their rows may not be what they hold).

        As the files are once inside the transaction (no other check or write of the catalog
        runs then): a file listed as gone that is there again is kept, one whose stamp moved
        since it was listed is read again, and a gone folder that is back (renamed away and
        back: its own mtime never moves) keeps all its rows. Two checks at once (the watcher's
        rescan and a request, two processes) each list at their own moment, and a person may
        rename a folder while it is listed: before, rows went missing while their folder was
        recorded as listed, so recall missed those notes until the full check."""
        gone_folders = list(gone_folders)
        if not changed and not gone and not gone_folders:
            return set(), set()
        vanished: list[str] = []  # listed, then not there to read (moved, deleted, its folder renamed)
        rows, restamped = self._read_changed(changed, stamps, vanished)
        with self.transaction():
            moved = {row[0] for row in rows if _stamp_of(self.root / row[0]) != (row[3], row[4])}
            moved |= {item[2] for item in restamped if _stamp_of(self.root / item[2]) != item[:2]}
            if moved:
                rows = [row for row in rows if row[0] not in moved]
                restamped = [item for item in restamped if item[2] not in moved]
                now = {rel: stamp for rel in moved if (stamp := _stamp_of(self.root / rel)) is not None}
                vanished += [rel for rel in moved if rel not in now]
                again, again_restamped = self._read_changed(list(now), now, vanished)
                rows += again
                restamped += again_restamped
            back = [folder for folder in gone_folders if os.path.isdir(self.root / folder)]
            gone = [rel for rel in dict.fromkeys([*gone, *vanished]) if _stamp_of(self.root / rel) is None
                    and not any(rel.startswith(folder + "/") for folder in back)]
            for folder in gone_folders:
                if folder not in back:
                    self.db.execute("DELETE FROM folders WHERE path = ? OR (path > ? AND path < ?)",
                                    (folder, folder + "/", folder + "0"))
            touched = {row[0] for row in rows} | set(gone)
            self.db.executemany("UPDATE notes SET mtime_ns = ?, size = ? WHERE path = ?", restamped)
            if rows or gone:
                gen = self._next_generation()
                self._write_rows(rows, gen)
                self._remove(gone, gen)
        _shrink_wal(self.db, len(rows) + len(gone) + len(restamped))
        return touched, {rel.rpartition("/")[0] for rel in vanished} | set(back)

    def _read_changed(self, changed: list[str], stamps: dict[str, tuple[int, int]],
                      vanished: list[str]) -> tuple[list[tuple], list[tuple]]:
        """(rows of the `changed` files, (mtime, size, path) of those whose bytes the catalog
        holds already); a file that cannot be read goes to `vanished`."""
        rows, restamped = [], []
        for rel in changed:
            try:
                data = (self.root / rel).read_bytes()
            except OSError:
                vanished.append(rel)
                continue
            digest = content_digest(data)
            old = self.db.execute("SELECT hash FROM notes WHERE path = ?", (rel,)).fetchone()
            mtime, size = stamps[rel]
            if old is not None and old[0] == digest:
                restamped.append((mtime, size, rel))
                continue
            rows.append(self._row(rel, data, digest, mtime, size))
        return rows, restamped

    def _row(self, rel: str, data: bytes, digest: bytes, mtime: int, size: int, note: Note | None = None) -> tuple:
        """The row of a file with these bytes; `note`: what they parse to, when the writer knows
        (a note it rendered: core.note.as_read_back), so they are not parsed again."""
        try:
            if note is None:
                note = self.read_note(rel, _decode(self.root / rel, data, self.max_bytes))
            elif self.check_known_notes:
                self._check_known(rel, data, note)
            return (rel, _stem(rel), note.id, mtime, size, digest, note.type, note.namespace, note.status,
                    note_to_json(note), None)
        except NoteError as exc:
            # The id it names, if a line says it: `grade ID` on a broken note names its problem.
            return (rel, _stem(rel), stated_id(data), mtime, size, digest, None, None, None, None,
                    f"{exc.problem}; {exc.fix}")

    def _check_known(self, rel: str, data: bytes, note: Note) -> None:
        """The test suite's check (check_known_notes) that a writer's note is what its file reads as."""
        read = self.read_note(rel, _decode(self.root / rel, data, self.max_bytes))
        if note_to_json(read) != note_to_json(note) or (read.id, read.type, read.namespace, read.status) != \
                (note.id, note.type, note.namespace, note.status):
            raise AssertionError(f"{rel}: the note written is not the note read back:\n{note}\n{read}")

    def _write_rows(self, rows: list[tuple], gen: int) -> None:
        self.db.executemany(
            "INSERT INTO notes (path, stem, id, mtime_ns, size, hash, type, namespace, status, note, problem, "
            "gen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET stem = excluded.stem, id = excluded.id, "
            "mtime_ns = excluded.mtime_ns, size = excluded.size, hash = excluded.hash, type = excluded.type, "
            "namespace = excluded.namespace, status = excluded.status, note = excluded.note, "
            "problem = excluded.problem, gen = excluded.gen",
            [(*row, gen) for row in rows])
        self.db.executemany("DELETE FROM removed WHERE path = ?", [(row[0],) for row in rows])
        self._notes_cache = None

    def _remove(self, paths: list[str], gen: int) -> None:
        for rel in paths:
            row = self.db.execute("SELECT indexed FROM notes WHERE path = ?", (rel,)).fetchone()
            if row is None:
                continue
            self.db.execute("DELETE FROM notes WHERE path = ?", (rel,))
            self.db.execute("INSERT OR REPLACE INTO removed VALUES (?, ?, ?)", (rel, gen, int(row[0] is not None)))
        self._notes_cache = None

    # ------------------------------------------------------------ vaultmem's own writes

    def wrote(self, rel: str, text: str, moved_from: str | None = None,
              before: dict[str, int | None] | None = None, note: Note | None = None) -> None:
        """Record a file vaultmem just wrote (the text is known: no re-read, no folder scan).
        `before`: its folders' mtimes just before the write (`folder_mtimes`); `note`: what
        the text parses to, when the writer knows (see _row)."""
        self.wrote_many([(rel, text, note)], [moved_from] if moved_from else [], before)

    def wrote_many(self, files: list[tuple], moved_from: list[str] = (),
                   before: dict[str, int | None] | None = None) -> None:
        """`wrote` for many files (decay, a batch's contests): one generation, one statement.
        `files`: (path, text) or (path, text, note or None)."""
        rows = []
        for rel, text, *known in files:
            data = text.encode("utf-8")
            try:
                info = os.stat(self.root / rel)
            except FileNotFoundError:  # moved on already (a person's rename): the next refresh finds it
                continue
            rows.append(self._row(rel, data, content_digest(data), info.st_mtime_ns, info.st_size, *known))
        if not rows:
            return
        with self.transaction():
            gen = self._next_generation()
            self._write_rows(rows, gen)
            self._remove(list(moved_from), gen)
            self._note_folders({row[0]: (row[3], row[4]) for row in rows}, moved_from, before or {})

    def _note_folders(self, written: dict[str, tuple[int, int]], moved_from: Iterable[str],
                      before: dict[str, int | None]) -> None:
        """Our own write moved the mtimes of these files' folders: take the new ones, so the
        next call does not list them again.

        Only a folder nobody changed since it was last listed (or since our last write into
        it): its mtime just `before` our write is the one recorded. Else a file a person saved
        there meanwhile (an import writes for seconds with no check in between) would be
        hidden until the full check; the folder is listed by the next call instead. Only a
        file's own folder, and only while the file is still as written (and a moved one still
        gone) once that folder's mtime is taken: a person's rename of it in between leaves the
        old mtime, so the folder is listed again. A parent folder is never taken: its mtime
        moves only when a sub-folder is made or removed, ours or a person's made in the same
        instant, and taking it would hide that sub-folder until the full check. (A person's
        change to another file of the same folder between `before` and our write is still
        caught by the full check.)"""
        expected: dict[str, dict[str, tuple[int, int] | None]] = {}
        for rel, stamp in [*written.items(), *((rel, None) for rel in moved_from)]:
            expected.setdefault(rel.rpartition("/")[0], {})[rel] = stamp
        recorded = dict(rows_in(self.db, "SELECT path, mtime_ns FROM folders WHERE path IN ({marks})", expected))
        stamps = []
        for folder, files in sorted(expected.items()):
            if before.get(folder) is None or before[folder] != recorded.get(folder):
                continue  # changed since it was listed (or never listed): the next call lists it
            try:
                mtime = os.stat(self.root / folder).st_mtime_ns
            except OSError:
                continue
            if all(_stamp_of(self.root / rel) == stamp for rel, stamp in files.items()):
                stamps.append((folder, mtime))
        self.db.executemany("INSERT OR REPLACE INTO folders VALUES (?, ?)", stamps)

    # ------------------------------------------------------------ reading

    def by_id(self, note_id: str) -> list[Note]:
        return [note_from_row(*row) for row in self.db.execute(
            f"SELECT {NOTE_COLUMNS} FROM notes WHERE id = ? AND note IS NOT NULL ORDER BY path", (note_id,))]

    def by_stem(self, stem: str) -> list[Note]:
        return [note_from_row(*row) for row in self.db.execute(
            f"SELECT {NOTE_COLUMNS} FROM notes WHERE stem = ? AND note IS NOT NULL ORDER BY path", (stem,))]

    def problem_of(self, ref: str) -> tuple[str, str] | None:
        """(path, problem) of an unreadable note with this id or file name."""
        row = self.db.execute("SELECT path, problem FROM notes WHERE (id = ? OR stem = ?) AND problem IS NOT NULL "
                              "ORDER BY path", (ref, ref)).fetchone()
        return None if row is None else (row[0], row[1])

    def stems_numbered(self, stem: str) -> set[str]:
        """`stem` and the `stem-N` names taken, in one indexed lookup (a new note's name is the
        first free one: many notes that start alike would otherwise cost a query per number)."""
        # A range of the index (every name from `stem` up to `stem.`, which holds `stem-...`), the
        # numbered ones picked here: a GLOB's pattern made SQLite plan the query anew on every add.
        numbered = len(stem) + 1
        return {name for (name,) in self.db.execute(
            "SELECT stem FROM notes WHERE stem >= ? AND stem < ?", (stem, stem + "."))
            if name == stem or (name[numbered - 1:numbered] == "-" and name[numbered:numbered + 1] in _DIGITS)}

    def id_taken(self, note_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM notes WHERE id = ? LIMIT 1", (note_id,)).fetchone() is not None

    def at(self, paths: Iterable[str]) -> dict[str, Note]:
        """The notes at these paths (those that exist and parse). A row read again unchanged
        gives the Note made of it before (`_recent_note`): an add's check and a recall ask for
        the same nearest notes again and again, and making one is most of the cost."""
        return {row[0]: _recent_note(*row) for row in rows_in(
            self.db, f"SELECT {NOTE_COLUMNS} FROM notes WHERE path IN ({{marks}}) AND note IS NOT NULL", paths)}

    @property
    def notes(self) -> list[Note]:
        """Every readable note, by path (loaded once per generation)."""
        gen = self.generation
        if self._notes_cache is None or self._notes_cache[0] != gen:
            self._notes_cache = (gen, [note_from_row(*row) for row in self.db.execute(
                f"SELECT {NOTE_COLUMNS} FROM notes WHERE note IS NOT NULL ORDER BY path")])
        return self._notes_cache[1]

    @property
    def problems(self) -> list[tuple[str, str]]:
        """(path, problem) of every note file that does not parse."""
        return [(path, problem) for path, _id, problem in self.unreadable()]

    def unreadable(self) -> list[tuple[str, str | None, str]]:
        """(path, the id the file states if any, its problem) of every note file that does not
        parse: it is there, so the note it held is not gone."""
        # `note IS NULL` (a problem's row has no note) lets the partial index answer: every recall
        # through the watcher asks, and a scan of 100k rows took 130 ms of its 210.
        return list(self.db.execute(
            "SELECT path, id, problem FROM notes WHERE note IS NULL AND problem IS NOT NULL ORDER BY path"))

    def paths(self) -> list[str]:
        return [path for (path,) in self.db.execute("SELECT path FROM notes ORDER BY path")]

    def hashes(self) -> dict[str, str]:
        """path -> hash of the file's bytes, for every note that parses."""
        return dict(self.db.execute("SELECT path, hash FROM notes WHERE note IS NOT NULL"))

    def summaries(self) -> list[tuple[str, str, str, str, str, str]]:
        """(path, id, type, namespace, status, file hash) of every readable note: what recall
        needs to filter and map vectors, without parsing any note."""
        return list(self.db.execute(
            "SELECT path, id, type, namespace, status, hash FROM notes WHERE note IS NOT NULL"))

    def session_order(self) -> list[tuple[str, str, datetime]]:
        """(path, first session, created) of every readable note that has a session: the order
        of a conversation's memories (search/neighbours.py), read without parsing the notes."""
        sessions, created = _NOTE_FIELDS.index("sessions"), _NOTE_FIELDS.index("created")
        return [(path, session, _from_seconds(when)) for path, session, when in self.db.execute(
            f"SELECT path, json_extract(note, '$[{sessions}][0]'), json_extract(note, '$[{created}]') FROM notes "
            f"WHERE note IS NOT NULL AND json_extract(note, '$[{sessions}][0]') IS NOT NULL")]

    def hashes_of(self, paths: Iterable[str]) -> dict[str, str]:
        return dict(rows_in(self.db, "SELECT path, hash FROM notes WHERE path IN ({marks}) AND note IS NOT NULL",
                            paths))

    def newest_first(self, paths: Iterable[str]) -> list[str]:
        """The notes among `paths`, those a recall shows by default first, then the newest
        (`created`) first: the order a vector cache that lags behind is filled in."""
        created = _NOTE_FIELDS.index("created")
        rows = rows_in(self.db, f"SELECT path, status, json_extract(note, '$[{created}]') FROM notes "
                                "WHERE path IN ({marks}) AND note IS NOT NULL", paths)
        rows.sort(key=lambda row: (row[1] in HIDDEN_STATUSES, -(row[2] or 0), row[0]))
        return [path for path, _status, _created in rows]

    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM notes WHERE note IS NOT NULL").fetchone()[0]

    # ------------------------------------------------------------ change feeds

    def changes_since(self, gen: int) -> tuple[int, dict[str, Note], list[str]]:
        """(current generation, notes changed since `gen` by path, paths removed or unreadable since)."""
        current = self.generation
        if current == gen:
            return current, {}, []
        changed, removed = {}, []
        for row in self.db.execute(f"SELECT {NOTE_COLUMNS} FROM notes WHERE gen > ?", (gen,)):
            if row[-1] is None:
                removed.append(row[0])
            else:
                changed[row[0]] = note_from_row(*row)
        removed += [path for (path,) in self.db.execute("SELECT path FROM removed WHERE gen > ?", (gen,))]
        return current, changed, removed

    def pending_index(self) -> tuple[dict[str, tuple[Note, int, bytes | None]], list[str]]:
        """What the BM25 index lacks: notes whose current row it has not seen
        (path -> (note, the row's generation, digest of the document it holds)), and paths it
        holds that are gone or unreadable now."""
        changed = {row[0]: (note_from_row(*row[:6]), row[6], row[7]) for row in self.db.execute(
            f"SELECT {NOTE_COLUMNS}, gen, indexed_doc FROM notes WHERE indexed IS NOT gen AND note IS NOT NULL")}
        unreadable = [path for (path,) in self.db.execute(
            "SELECT path FROM notes WHERE note IS NULL AND indexed_doc IS NOT NULL")]
        removed = [path for (path,) in self.db.execute("SELECT path FROM removed WHERE indexed = 1")]
        return changed, removed + unreadable

    def mark_indexed(self, done: dict[str, tuple[int, bytes]], removed: list[str]) -> None:
        """The BM25 index now holds these notes (path -> (the row's generation, document digest))
        and none of `removed`. A row rewritten since keeps its newer generation: still pending."""
        with self.transaction():
            self.db.executemany("UPDATE notes SET indexed = ?, indexed_doc = ? WHERE path = ? AND gen = ?",
                                [(gen, doc, path, gen) for path, (gen, doc) in done.items()])
            self.db.executemany("UPDATE notes SET indexed = NULL, indexed_doc = NULL WHERE path = ? AND note IS NULL",
                                [(path,) for path in removed])
            self.db.executemany("UPDATE removed SET indexed = 0 WHERE path = ?", [(path,) for path in removed])
            self.db.execute("DELETE FROM removed WHERE indexed = 0 AND gen < ?", (self.generation - 10_000,))

    def settle_after_indexing(self, rows: int, rebuilt: bool = False) -> None:
        """After an indexing that marked `rows` rows (in one or several `mark_indexed`): when they
        were a quarter of the catalog or more (at least BIG_TRANSACTION), or the caches were just
        rebuilt (`reindex`), most rows just grew by their index state, so the pages they split are
        packed again; else a big WAL is folded back into the file."""
        if rebuilt or (rows >= BIG_TRANSACTION and 4 * rows >= self.count()):
            compact(self.db)
        else:
            _shrink_wal(self.db, rows)

    def forget_index(self) -> None:
        """The BM25 index was deleted or rebuilt from nothing: every note is pending again."""
        with self.transaction():
            self.db.execute("UPDATE notes SET indexed = NULL, indexed_doc = NULL")
            self.db.execute("UPDATE removed SET indexed = 0")


BIG_TRANSACTION = 1000


def _shrink_wal(db: sqlite3.Connection, rows: int) -> None:
    """After a transaction of many rows, fold the WAL back into the file and truncate it:
    a rebuild would otherwise leave tens of MB of WAL beside the catalog."""
    if rows >= BIG_TRANSACTION and not db.in_transaction:
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:
            pass  # busy: the next big write tries again


def compact(db: sqlite3.Connection) -> None:
    """Rewrite the file without the free space a bulk build leaves (rows written, then
    updated as they were indexed): a quarter of the catalog after `reindex`."""
    if not db.in_transaction:
        try:
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:
            pass  # another process has it open in a transaction: the next reindex tries again


class transaction:  # noqa: N801 - used as a function: `with transaction(db):`
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error); nests as a no-op."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db
        self.outer = False

    def __enter__(self):
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
            self.outer = True
        return self.db

    def __exit__(self, kind, _value, _tb):
        if self.outer:
            self.db.execute("COMMIT" if kind is None else "ROLLBACK")
        return False


def rows_in(db: sqlite3.Connection, query: str, keys: Iterable, *before) -> list[tuple]:
    """Rows of `query` (with `{marks}` where the placeholders of an IN list go) for `keys`,
    asked in chunks below SQLite's limit on variables; `before`: parameters ahead of the list."""
    keys = list(keys)
    found: list[tuple] = []
    for start in range(0, len(keys), 500):
        chunk = keys[start:start + 500]
        found += db.execute(query.format(marks=",".join("?" * len(chunk))), (*before, *chunk)).fetchall()
    return found


def _deleted_under_it(exc: Exception) -> bool:
    """Whether opening the catalog failed the ways it does when another process deletes the
    folder meanwhile (not a lock, a damaged file, or a full disk)."""
    if isinstance(exc, sqlite3.OperationalError):
        return str(exc) in ("unable to open database file", "disk I/O error", "locking protocol",
                            "attempt to write a readonly database")
    return isinstance(exc, (FileExistsError, FileNotFoundError))


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else row[0]


def folder_mtimes(root: Path, rels: Iterable[str | None]) -> dict[str, int | None]:
    """The mtimes of the folders of these note files (None: no such folder), taken just
    before vaultmem writes or moves them (`Catalog.wrote`'s `before`)."""
    mtimes: dict[str, int | None] = {}
    for folder in {rel.rpartition("/")[0] for rel in rels if rel}:
        try:
            mtimes[folder] = os.stat(root / folder).st_mtime_ns
        except OSError:
            mtimes[folder] = None
    return mtimes


def _stamp_of(path: Path) -> tuple[int, int] | None:
    """(mtime_ns, size) of a file, None when it is not there."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _decode(path: Path, data: bytes, max_bytes: int) -> str:
    from vaultmem.store.files import decode_note

    return decode_note(path, data, max_bytes)


def _scan(root: Path, start: str | None = None,
          recursive: bool = True) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """Note files (rel -> (mtime_ns, size)) and folders (rel -> mtime_ns) under `start`
    (default: every note folder); without `recursive`, `start`'s own files and the
    names of its sub-folders. Hidden files and folders (swap files, `.trash`) are not notes.

    A folder's mtime is taken before it is listed, so a change during the listing moves
    it past what is recorded and the next check lists the folder again. A change in the
    same clock tick as that stat would not move it: an mtime that recent is recorded
    as unknown (RACY_NS), so the folder is listed again next time too. A file that
    vanishes while its folder is listed (moved or deleted) is just not there.

    A folder renamed while it is listed (a person renaming a namespace, or a folder above
    it) keeps its own mtime: its files are looked at through the folder opened (`_listing`),
    so the listing is whole, and a sub-folder that cannot be opened by its path any more
    leaves its parent's mtime unknown, so the parent is listed again next time. Before,
    the files of a renamed folder went missing from the listing while the folder was
    recorded as listed: once renamed back, recall missed them until the full check."""
    files: dict[str, tuple[int, int]] = {}
    folders: dict[str, int] = {}
    prefix = len(str(root)) + 1
    stack: list[tuple[str, str | None]] = [(os.path.join(root, start), None)] if start else \
        [(os.path.join(root, f), None) for f in NOTE_FOLDERS]
    while stack:
        folder, parent = stack.pop()
        rel = folder[prefix:].replace(os.sep, "/")
        try:
            mtime, found = _listing(folder)
        except OSError:  # the folder itself is gone (or unreadable)
            if parent in folders:
                folders[parent] = -1  # it was there when its parent was listed: a rename under way
            continue
        folders[rel] = mtime
        for name, kind, stamp in found:
            path = os.path.join(folder, name)
            if kind == "dir":
                if recursive:
                    stack.append((path, rel))
                else:
                    folders[path[prefix:].replace(os.sep, "/")] = stamp[0]
            else:
                files[path[prefix:].replace(os.sep, "/")] = stamp
    return files, folders


def _listing(folder: str) -> tuple[int, list[tuple[str, str, tuple[int, int]]]]:
    """(the folder's mtime, or -1 when too recent to trust (RACY_NS); (name, "dir" or "note",
    (mtime_ns, size)) of each sub-folder and note file in it), read through the folder opened
    once where the platform allows it (files.open_folder), so a rename of it meanwhile changes nothing."""
    before = time.time_ns()
    disturbed = False  # an entry gone before it was looked at: the folder is listed again next time
    with open_folder(folder) as handle:
        mtime = (os.stat(folder) if handle is None else os.fstat(handle)).st_mtime_ns
        found = []
        with os.scandir(folder if handle is None else handle) as entries:
            for entry in entries:  # (statted inside: an entry of a folder read by descriptor needs it open)
                name = entry.name
                if name.startswith("."):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        found.append((name, "dir", (entry.stat(follow_symlinks=False).st_mtime_ns, 0)))
                    elif name.endswith(".md") and entry.is_file(follow_symlinks=False):
                        info = entry.stat(follow_symlinks=False)
                        found.append((name, "note", (info.st_mtime_ns, info.st_size)))
                except OSError:  # moved or deleted since the listing (or, by path, the folder renamed)
                    disturbed = True
    return (mtime if mtime < before - RACY_NS and not disturbed else -1), found
