"""The ledger: `.vaultmem/ledger.jsonl`, a SHA-256 hash chain of every change to a note.

Each line records one act (add, grade, supersede, archive, an edit made by
hand...) with the note's id and path, the hash of the note's text after it
(Unicode NFC, LF line endings, so an editor or a checkout that re-encodes
the same text does not look like an edit), the time, the previous line's
hash and its own. Changing, dropping or reordering a line breaks the chain;
editing a note without a record shows as an unrecorded edit. The file is
meant to be committed with the vault.

In git the chain branches and joins (a DAG): each branch appends to its own
tip, and a merge (core/merge.py, git's merge driver) keeps our lines, then
their lines, then one `merge` record whose `prev` is our tip and whose
`parents` are both tips, with `seq` one more than the larger of theirs. Its
`detail.notes` lists the notes both sides changed (id -> both content hashes):
their merged text is accepted as theirs. The tip is always the last complete
line, so an ordinary append (CLI or Obsidian plugin) chains from it.

Callers hold the vault's write lock while appending. What this module knows
of the files comes in as arguments: it reads and writes only the ledger and
its derived state (two tables in the catalog's SQLite file).
"""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from vaultmem.core.merge import GENESIS, ledger_record_hash
from vaultmem.store.files import file_stamp, in_batch, lines_from_end

# The hash of one ledger line: its fields (without `hash`) in canonical JSON (core/merge.py, which
# writes merge records, defines it; `vaultmem.store.ledger.record_hash` is the name callers use).
record_hash = ledger_record_hash


# Operations; the last two are written when vaultmem finds a change it did not make.
OPS = ("add", "recur", "grade", "edit", "supersede", "contest", "resolve", "archive", "restore", "promote",
       "decay", "import", "external-edit", "external-delete", "re-anchor")


def content_hash(text: str) -> str:
    """The hash of a note's text as a person sees it (NFC, LF), hex."""
    normalized = unicodedata.normalize("NFC", text).replace("\r\n", "\n")
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


@dataclass
class LedgerState:
    """What the chain says now: its tip, and each note's last record."""

    offset: int = 0
    seq: int = 0
    tip: str = GENESIS
    last: dict[str, dict] = field(default_factory=dict)


@dataclass(frozen=True)
class Problem:
    kind: str  # "break", "torn", "unrecorded edit", "untracked note", "missing note", "unreadable note", "duplicate id"
    where: str  # "ledger.jsonl line 12" or the note's path
    detail: str
    note_id: str = ""  # the note concerned (none for a break)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "where": self.where, "detail": self.detail, "id": self.note_id or None}


_LAST_FIELDS = ("op", "path", "content", "time", "seq")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger_tip (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger_last (id TEXT PRIMARY KEY, op TEXT, path TEXT, content TEXT, time TEXT, seq INTEGER)
    WITHOUT ROWID;
"""


class Ledger:
    """The ledger file, with what it says now (tip, each note's last record) kept in
    SQLite tables beside the catalog: derived, read incrementally (only the lines
    appended since), and plain data."""

    def __init__(self, path: Path, db=None):
        self.path = Path(path)
        self._db_source = db  # a sqlite3 connection, or a callable returning one
        self._ready_on = None  # the connection last made sure to have the tables (see `db`)
        self._left_as = None  # the file's stat right after this object's own last append

    @property
    def db(self):
        db = self._db_source() if callable(self._db_source) else self._db_source
        if db is not self._ready_on:
            # Another connection than last time (one per thread of the watcher, or one to the file
            # a `reindex` by another process made anew): the tables may not exist in it yet.
            for statement in filter(str.strip, _SCHEMA.split(";")):
                db.execute(statement)  # not executescript: it would commit a transaction under way
            self._ready_on = db
        return db

    def forget_connection(self) -> None:
        """Let go of the last connection used (its catalog was dropped: it should close)."""
        self._ready_on = None

    # ------------------------------------------------------------ writing

    def append(self, op: str, note_id: str, path: str, text: str | None, time: str, detail: dict | None = None) -> dict:
        """Add one record at the tip of the chain (caller holds the write lock)."""
        return self.append_many([(op, note_id, path, text, time, detail)])[0]

    def append_many(self, entries: list[tuple]) -> list[dict]:
        """Add records (op, note id, path, text, time, detail) at the tip, in one write
        and one fsync (caller holds the write lock)."""
        offset, seq, tip = self._catch_up()
        records, lines = [], []
        for op, note_id, path, text, time, detail in entries:
            seq += 1
            record = {"seq": seq, "time": time, "op": op, "id": note_id, "path": path,
                      "content": None if text is None else content_hash(text), "prev": tip}
            if detail:
                record["detail"] = detail
            record["hash"] = tip = record_hash(record)
            records.append(record)
            lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        data = "".join(lines).encode("utf-8")
        try:
            handle = open(self.path, "ab")
        except FileNotFoundError:  # (its folder is made on the first append, not checked on each)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "ab")
        with handle:
            if handle.seek(0, os.SEEK_END) > offset:
                # The last append was cut short (a crash mid-line): end that fragment
                # here, so it stays a line of its own that `verify` reports as torn.
                data = b"\n" + data
            handle.write(data)
            handle.flush()
            if not in_batch():  # else the batch's one sync (files.batched_durability)
                os.fsync(handle.fileno())
            end = handle.tell()
            left_as = os.fstat(handle.fileno())
        self._take(records, offset, end, lines[-1].encode("utf-8"))
        self._left_as = file_stamp(left_as) if left_as.st_size == end else None
        return records

    # ------------------------------------------------------------ reading

    def _catch_up(self) -> tuple[int, int, str]:
        """Read the lines appended since last time into the tables; returns (offset, seq, tip)."""
        offset, seq, tip = self._tip()
        try:
            info = self.path.stat()
        except FileNotFoundError:
            info = None
        size = info.st_size if info else 0
        if info and size == offset and file_stamp(info) == self._left_as:
            return offset, seq, tip  # just as our own last append left it (a batch of adds): nothing to read
        self._left_as = None
        if size < offset or (size == 0 and offset) or (offset and not self._same_last_line()):
            # The file was cut, emptied or replaced (a checkout of an older commit or of another
            # branch does this too, keeping its size or growing): read it again, remembering
            # what it held for `verify` to judge, unless it still holds the tip read last (a pull
            # that fast-forwarded to a merge puts our records after theirs: nothing was lost).
            self._reset(lost=None if tip != GENESIS and self._holds_record(tip) else (seq, tip))
            offset, seq, tip = 0, 0, GENESIS
        if size > offset:
            with open(self.path, "rb") as handle:
                handle.seek(offset)
                data = handle.read(size - offset)
            complete = data[: data.rfind(b"\n") + 1]
            records = []
            for raw in complete.splitlines():
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue  # `verify` reports it; the rest of the chain stays usable
                if isinstance(record, dict):
                    records.append(record)
            if complete:
                self._take(records, offset, offset + len(complete), _last_line(complete))
                offset, seq, tip = self._tip()
        return offset, seq, tip

    def _holds_record(self, record_hash: str) -> bool:
        """Whether a line of the file is the record with this hash (its ancestors then are too,
        or `verify` finds the chain broken)."""
        wanted = record_hash.encode("ascii", "replace")
        try:
            for line in lines_from_end(self.path):  # (the tip read last is near the end, as a rule)
                if wanted in line:  # as its own hash, or as the `prev` of the record after it
                    try:
                        if json.loads(line).get("hash") == record_hash:
                            return True
                    except (ValueError, AttributeError):
                        continue
        except OSError:
            pass
        return False

    def _same_last_line(self) -> bool:
        """Whether the last line read is still where it was, with the same bytes: a file
        that kept its length but changed before that point is another file."""
        values = dict(self.db.execute("SELECT key, value FROM ledger_tip WHERE key IN ('line_start', 'line_sha', "
                                      "'offset')"))
        if "line_sha" not in values:
            return True  # read before this check existed
        start, end = int(values["line_start"]), int(values["offset"])
        try:
            with open(self.path, "rb") as handle:
                handle.seek(start)
                line = handle.read(end - start)
        except OSError:
            return False
        return hashlib.sha256(line).hexdigest() == values["line_sha"]

    def _tip(self) -> tuple[int, int, str]:
        values = dict(self.db.execute("SELECT key, value FROM ledger_tip"))
        return int(values.get("offset", 0)), int(values.get("seq", 0)), values.get("tip", GENESIS)

    def _take(self, records: list[dict], start: int, end: int, last_line: bytes) -> None:
        db = self.db
        began = not db.in_transaction
        if began:
            db.execute("BEGIN IMMEDIATE")
        try:
            offset, seq, tip = self._tip()
            if offset != start:
                return  # another process read these lines first
            for record in records:
                seq = record.get("seq", seq + 1) if isinstance(record.get("seq"), int) else seq + 1
                tip = record.get("hash", tip)
                note_id = record.get("id")
                if note_id:
                    db.execute("INSERT OR REPLACE INTO ledger_last VALUES (?, ?, ?, ?, ?, ?)",
                               (note_id, *(record.get(k) for k in _LAST_FIELDS)))
                elif record.get("op") == "merge":
                    self._take_merge(record)
            db.executemany("INSERT OR REPLACE INTO ledger_tip VALUES (?, ?)",
                           [("offset", str(end)), ("seq", str(seq)), ("tip", tip),
                            ("line_start", str(end - len(last_line))),
                            ("line_sha", hashlib.sha256(last_line).hexdigest())])
        finally:
            if began:
                db.execute("COMMIT")

    def _take_merge(self, record: dict) -> None:
        """A note both sides changed has a merged text no record hashes: its last record
        becomes the merge, holding both sides' hashes (check_notes accepts the merged text)."""
        notes = (record.get("detail") or {}).get("notes")
        for note_id, contents in (notes.items() if isinstance(notes, dict) else ()):
            row = self.db.execute("SELECT path FROM ledger_last WHERE id = ?", (note_id,)).fetchone()
            merged = json.dumps(contents) if isinstance(contents, list) else None
            self.db.execute("INSERT OR REPLACE INTO ledger_last VALUES (?, ?, ?, ?, ?, ?)",
                            (note_id, "merge", row[0] if row else "", merged, record.get("time"), record.get("seq")))

    def _reset(self, lost: tuple[int, str] | None = None) -> None:
        lost = lost if lost and lost[0] else self.lost()
        self.db.execute("DELETE FROM ledger_tip")
        self.db.execute("DELETE FROM ledger_last")
        if lost:
            self.db.executemany("INSERT INTO ledger_tip VALUES (?, ?)", [("lost_seq", str(lost[0])),
                                                                         ("lost_tip", lost[1])])

    def lost(self) -> tuple[int, str] | None:
        """(records, tip) the file held when it was last seen longer than it is now, if it was."""
        values = dict(self.db.execute("SELECT key, value FROM ledger_tip WHERE key LIKE 'lost_%'"))
        return (int(values["lost_seq"]), values["lost_tip"]) if "lost_seq" in values else None

    def forget_lost(self) -> None:
        """The shorter file was judged consistent (an older checkout) or re-anchored."""
        self.db.execute("DELETE FROM ledger_tip WHERE key LIKE 'lost_%'")

    def state(self) -> LedgerState:
        """The chain's tip and every note's last record."""
        offset, seq, tip = self._catch_up()
        last = {row[0]: dict(zip(_LAST_FIELDS, row[1:])) for row in
                self.db.execute("SELECT id, op, path, content, time, seq FROM ledger_last")}
        return LedgerState(offset, seq, tip, last)

    def last(self, note_id: str) -> dict | None:
        self._catch_up()
        row = self.db.execute("SELECT op, path, content, time, seq FROM ledger_last WHERE id = ?",
                              (note_id,)).fetchone()
        return None if row is None else dict(zip(_LAST_FIELDS, row))

    def ids_last_at(self, path: str) -> list[str]:
        """Notes whose last record puts them at `path` with text (a file deleted there was theirs)."""
        self._catch_up()
        return [note_id for (note_id,) in self.db.execute(
            "SELECT id FROM ledger_last WHERE path = ? AND content IS NOT NULL", (path,))]

    def ids_last_under(self, folder: str) -> list[str]:
        """Notes whose last record puts them, with text, under `folder` (ending in "/")."""
        self._catch_up()
        return [note_id for (note_id,) in self.db.execute(
            "SELECT id FROM ledger_last WHERE path >= ? AND path < ? AND content IS NOT NULL",
            (folder, folder[:-1] + chr(ord("/") + 1)))]

    def records(self) -> Iterator[tuple[int, dict | None, str]]:
        """Every line as (line number, record or None if unreadable, raw text)."""
        if not self.path.exists():
            return
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            for number, raw in enumerate(handle, 1):
                try:
                    record = json.loads(raw)
                except ValueError:
                    record = None
                yield number, record if isinstance(record, dict) else None, raw

    def history(self, note_id: str) -> list[dict]:
        return [r for _n, r, _raw in self.records() if r and r.get("id") == note_id]


# ---------------------------------------------------------------- checking

def _last_line(data: bytes) -> bytes:
    """The last complete line of `data` (which ends with a newline), newline included."""
    return data[data.rfind(b"\n", 0, len(data) - 1) + 1:]


def check_chain(lines) -> list[Problem]:
    """Breaks in the chain: unreadable lines, a `prev` that names no earlier record, a hash
    that does not match, a wrong `seq`, a branch no `merge` record joins.

    The chain is a DAG (see merge records in the module docstring): each record follows
    one earlier record (`prev`), a merge record follows two or more earlier records
    (`parents`), and at the end one head is left, the last line's record. A line removed,
    inserted or moved leaves a record following nothing before it, or a second head; a
    line copied repeats a hash.
    """
    problems = []
    seqs: dict[str, int] = {GENESIS: 0}
    heads: dict[str, str] = {}  # hash -> where, for records nothing follows yet
    last = GENESIS  # the hash of the last readable record
    damaged: str | None = None  # an unreadable line, judged by the record after it
    for number, record, _raw in lines:
        where = f"ledger.jsonl line {number}"
        if record is None:
            if damaged:
                problems.append(Problem("break", damaged, "not a JSON record; the line was damaged or edited"))
            damaged = where
            continue
        if damaged:
            # The chain going on from a record before it: an append cut short (a crash),
            # nothing lost. Otherwise a record was damaged or replaced (what follows it
            # follows a hash no readable line has). In a merged file the next line may
            # start the other branch, so any earlier record will do.
            torn = record.get("prev") in seqs
            problems.append(Problem("torn" if torn else "break", damaged,
                                    TORN if torn else "not a JSON record; the line was damaged or edited"))
            damaged = None
        parents = _parents(record)
        if parents is None:
            problems.append(Problem("break", where, "a merge record whose `parents` do not start with its `prev`"))
            parents = [record.get("prev")]
        unknown = [p for p in parents if p not in seqs]
        if unknown:
            problems.append(Problem("break", where, "does not follow the line before it (a line was removed, "
                                                    "inserted or reordered)"))
            heads.pop(last, None)  # the chain goes on here: that one break, not also a branch left open
        # (A merge record's other parent may have been followed already: the side merged went on
        # from it before a later merge brought the merge in, as in git's criss-cross histories.)
        own = record.get("hash")
        if isinstance(own, str) and own in seqs:
            problems.append(Problem("break", where, "the same record as an earlier line (a line was copied)"))
        if record_hash(record) != own:
            problems.append(Problem("break", where, "its hash does not match its content (the line was edited)"))
        elif not unknown:  # (after a missing line, "does not follow" says it: no sequence to expect)
            expected = max((seqs.get(p, 0) for p in parents), default=0) + 1
            if record.get("seq") != expected:
                problems.append(Problem("break", where, f"sequence {record.get('seq')} after {expected - 1}"))
        for parent in parents:
            heads.pop(parent, None)
        if isinstance(own, str):
            seqs[own] = record.get("seq") if isinstance(record.get("seq"), int) else 0
            heads[own] = where
            last = own
    if damaged:
        problems.append(Problem("torn", damaged, TORN))
    for head, where in heads.items():
        if head != last:
            problems.append(Problem("break", where, "a branch no merge record joins (a line was inserted, "
                                                    "or a merge record removed)"))
    return problems


def _parents(record: dict) -> list | None:
    """The records a record follows: its `prev`, or a merge record's `parents` (None if they disagree)."""
    if record.get("op") != "merge":
        return [record.get("prev")]
    parents = record.get("parents")
    if not isinstance(parents, list) or len(parents) < 2 or parents[0] != record.get("prev"):
        return None
    return parents


TORN = "an incomplete record (an append cut short by a crash); the chain goes on from the record before it"


def check_notes(last: dict[str, dict], files: dict[str, tuple[str, str]],
                unreadable: Iterable[tuple[str, str | None, str]] = ()) -> list[Problem]:
    """Notes whose text differs from the last recorded hash, notes never recorded,
    recorded notes no file holds any more, and recorded notes whose file is there but
    cannot be read now. `files`: id -> (path, content hash); `unreadable`: (path, the id
    the file states or None, its problem) of files that do not parse (broken YAML, a merge
    conflict, binary bytes): such a note is not missing, and it no longer matches its
    record either, which nothing can record until the file is fixed."""
    unreadable_by_id = {note_id: (path, problem) for path, note_id, problem in unreadable if note_id}
    unreadable_by_path = {path: problem for path, _note_id, problem in unreadable}
    problems = []
    for note_id, (path, digest) in sorted(files.items(), key=lambda item: item[1][0]):
        record = last.get(note_id)
        if record is None:
            problems.append(Problem("untracked note", path, f"{note_id} has no ledger record (made by hand or "
                                                            "before the ledger existed)", note_id))
        elif record.get("content") != digest and record.get("op") != "merge":
            # (a note both sides of a merge changed holds the merged text: the merge record vouches for it)
            problems.append(Problem("unrecorded edit", path, f"{note_id} changed since its last record "
                                                             f"({record.get('op')} at {record.get('time')})", note_id))
    for note_id, record in sorted(last.items()):
        if note_id in files or record.get("content") is None:
            continue
        recorded_at = record.get("path") or ""
        path, problem = unreadable_by_id.get(note_id) or (recorded_at, unreadable_by_path.get(recorded_at))
        if problem is not None:
            problems.append(Problem("unreadable note", path, f"{note_id} was recorded ({record.get('op')} at "
                                                             f"{record.get('time')}) but its file cannot be read "
                                                             f"now: {problem}", note_id))
        else:
            problems.append(Problem("missing note", recorded_at or note_id,
                                    f"{note_id} was recorded ({record.get('op')} at {record.get('time')}) "
                                    "but no file holds it now", note_id))
    return problems
