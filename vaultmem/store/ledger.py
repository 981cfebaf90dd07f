"""The ledger: `.vaultmem/ledger.jsonl`, a SHA-256 hash chain of every change to a note.

Each line records one act (add, grade, supersede, archive, an edit made by
hand...) with the note's id and path, the hash of the note's text after it
(Unicode NFC, LF line endings, so an editor or a checkout that re-encodes
the same text does not look like an edit), the time, the previous line's
hash and its own. Changing, dropping or reordering a line breaks the chain;
editing a note without a record shows as an unrecorded edit. The file is
meant to be committed with the vault.

Callers hold the vault's write lock while appending. What this module knows
of the files comes in as arguments: it reads and writes only the ledger and
its derived cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

GENESIS = "0" * 64
CACHE_VERSION = 1

# Operations; the last two are written when vaultmem finds a change it did not make.
OPS = ("add", "recur", "grade", "edit", "supersede", "contest", "resolve", "archive", "restore", "promote",
       "decay", "import", "external-edit", "external-delete")


def content_hash(text: str) -> str:
    """The hash of a note's text as a person sees it (NFC, LF), hex."""
    normalized = unicodedata.normalize("NFC", text).replace("\r\n", "\n")
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


def record_hash(record: dict) -> str:
    """The hash of one ledger line: its fields (without `hash`) in canonical JSON."""
    body = {k: v for k, v in record.items() if k != "hash"}
    canonical = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class LedgerState:
    """What the chain says now: its tip, and each note's last record."""

    offset: int = 0
    seq: int = 0
    tip: str = GENESIS
    last: dict[str, dict] = field(default_factory=dict)

    def take(self, record: dict) -> None:
        self.seq = record.get("seq", self.seq + 1)
        self.tip = record.get("hash", self.tip)
        note_id = record.get("id")
        if note_id:
            self.last[note_id] = {k: record.get(k) for k in ("op", "path", "content", "time", "seq")}


@dataclass(frozen=True)
class Problem:
    kind: str  # "break", "unrecorded edit", "untracked note", "missing note"
    where: str  # "ledger.jsonl line 12" or the note's path
    detail: str
    note_id: str = ""  # the note concerned (none for a break)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "where": self.where, "detail": self.detail, "id": self.note_id or None}


class Ledger:
    def __init__(self, path: Path, cache_path: Path | None = None):
        self.path = Path(path)
        self.cache_path = cache_path
        self._state: LedgerState | None = None

    # ------------------------------------------------------------ writing

    def append(self, op: str, note_id: str, path: str, text: str | None, time: str, detail: dict | None = None) -> dict:
        """Add one record at the tip of the chain (caller holds the write lock)."""
        state = self.state()
        record = {"seq": state.seq + 1, "time": time, "op": op, "id": note_id, "path": path,
                  "content": None if text is None else content_hash(text), "prev": state.tip}
        if detail:
            record["detail"] = detail
        record["hash"] = record_hash(record)
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        state.take(record)
        state.offset += len(line.encode("utf-8"))
        return record

    # ------------------------------------------------------------ reading

    def state(self) -> LedgerState:
        """The chain's tip and each note's last record, reading only lines added since last time."""
        state = self._state or self._load_cache() or LedgerState()
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            self._state = LedgerState()
            return self._state
        if size < state.offset:
            state = LedgerState()  # the file was replaced or cut: read it again
        if size > state.offset:
            with open(self.path, "rb") as handle:
                handle.seek(state.offset)
                data = handle.read()
            complete = data[: data.rfind(b"\n") + 1]
            for raw in complete.splitlines():
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue  # `verify` reports it; the rest of the chain stays usable
                if isinstance(record, dict):
                    state.take(record)
            state.offset += len(complete)
            self._save_cache(state)
        self._state = state
        return state

    def last(self, note_id: str) -> dict | None:
        return self.state().last.get(note_id)

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

    def _load_cache(self) -> LedgerState | None:
        if self.cache_path is None:
            return None
        try:
            with open(self.cache_path, "rb") as handle:
                version, state = pickle.load(handle)
            return state if version == CACHE_VERSION and isinstance(state, LedgerState) else None
        except Exception:  # noqa: BLE001 - a missing or damaged cache only means reading the ledger again
            return None

    def _save_cache(self, state: LedgerState) -> None:
        if self.cache_path is None:
            return
        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.cache_path.with_suffix(".tmp")
            with open(tmp, "wb") as handle:
                pickle.dump((CACHE_VERSION, state), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.cache_path)
        except OSError:
            pass  # the cache is an optimisation


# ---------------------------------------------------------------- checking

def check_chain(lines) -> list[Problem]:
    """Breaks in the chain: unreadable lines, a wrong `prev`, a hash that does not match."""
    problems = []
    tip, seq = GENESIS, 0
    for number, record, _raw in lines:
        where = f"ledger.jsonl line {number}"
        if record is None:
            problems.append(Problem("break", where, "not a JSON record; the line was damaged or edited"))
            continue
        if record.get("prev") != tip:
            problems.append(Problem("break", where, "does not follow the line before it (a line was removed, "
                                                    "inserted or reordered)"))
        if record_hash(record) != record.get("hash"):
            problems.append(Problem("break", where, "its hash does not match its content (the line was edited)"))
        elif record.get("seq") != seq + 1:
            problems.append(Problem("break", where, f"sequence {record.get('seq')} after {seq}"))
        tip, seq = (record.get("hash", tip),
                    record.get("seq", seq + 1) if isinstance(record.get("seq"), int) else seq + 1)
    return problems


def check_notes(last: dict[str, dict], files: dict[str, tuple[str, str]]) -> list[Problem]:
    """Notes whose text differs from the last recorded hash, notes never recorded,
    and recorded notes no file holds any more. `files`: id -> (path, content hash)."""
    problems = []
    for note_id, (path, digest) in sorted(files.items(), key=lambda item: item[1][0]):
        record = last.get(note_id)
        if record is None:
            problems.append(Problem("untracked note", path, f"{note_id} has no ledger record (made by hand or "
                                                            "before the ledger existed)", note_id))
        elif record.get("content") != digest:
            problems.append(Problem("unrecorded edit", path, f"{note_id} changed since its last record "
                                                             f"({record.get('op')} at {record.get('time')})", note_id))
    for note_id, record in sorted(last.items()):
        if note_id not in files and record.get("content") is not None:
            problems.append(Problem("missing note", record.get("path") or note_id,
                                    f"{note_id} was recorded ({record.get('op')} at {record.get('time')}) "
                                    "but no file holds it now", note_id))
    return problems
