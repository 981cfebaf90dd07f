"""Audit: the files against the ledger (ledger.py keeps the chain, this compares).

`verify` walks the chain and hashes every note; changes made by hand are
legitimate, so unless asked to only report it records them as external edits
(and vanished notes as external deletions). The watcher calls
`record_external_edits` for the paths it saw change.
"""

from __future__ import annotations

from collections.abc import Iterable

from vaultmem import clock
from vaultmem.core.model import Note
from vaultmem.core.note import parse
from vaultmem.errors import NoteError
from vaultmem.store.files import read_text

# How long a report (verify without recording) waits for a busy write lock before it reads without it.
REPORT_LOCK_WAIT = 2.0


def verify(vault, record: bool = True) -> dict:
    """Walk the ledger's chain and compare every note with its last record.

    With `record`, changes made by hand (unrecorded edits, notes never
    recorded) are appended as `external-edit`, and notes gone as
    `external-delete`: they are legitimate, and now on the record.
    Breaks of the chain are only ever reported.
    """
    lock = vault.write_lock()
    if record:
        with lock:
            return _compare(vault, record)
    # Only a report: a write lock held by a stuck process must not stop it (`health`).
    with lock.for_reading(min(lock.wait, REPORT_LOCK_WAIT)) as busy:
        return dict(_compare(vault, record),
                    write_lock=None if busy is None else {"holder": busy.holder, "lock": busy.lock_path})


def _compare(vault, record: bool) -> dict:
    """verify's work, under the lock or (a report) without it."""
    from vaultmem.store.ledger import check_chain, check_notes, content_hash

    catalog = vault.catalog(full=True)
    files: dict[str, tuple[str, str]] = {}
    texts: dict[str, tuple[Note, str]] = {}
    for note in catalog.notes:
        try:
            text = read_text(vault.root / note.path, vault.config.max_note_bytes)
        except NoteError:
            continue
        files[note.id] = (note.path, content_hash(text))
        texts[note.id] = (note, text)
    breaks = check_chain(vault.ledger.records())
    changes = check_notes(vault.ledger.state().last, files)
    recorded = []
    if record:
        for problem in changes:
            note_id = problem.note_id
            if problem.kind in ("unrecorded edit", "untracked note") and note_id in texts:
                note, text = texts[note_id]
                vault.record(
                    "external-edit",
                    note,
                    text,
                    {"noticed_by": "verify", "first_seen": problem.kind == "untracked note"},
                )
                recorded.append(problem)
            elif problem.kind == "missing note":
                _record_gone(vault, note_id, (vault.ledger.last(note_id) or {}).get("path", ""), "verify")
                recorded.append(problem)
    return {
        "breaks": [p.as_dict() for p in breaks],
        "changes": [p.as_dict() for p in changes],
        "recorded": len(recorded),
        "notes": len(files),
    }


def record_external_edits(vault, paths: Iterable[str]) -> int:
    """Record hand edits of `paths` (the watcher's events) in the ledger; returns how many."""
    from vaultmem.store.ledger import content_hash

    count = 0
    with vault.write_lock():
        for rel in paths:
            path = vault.root / rel
            if not path.exists():
                count += record_deletion(vault, rel)
                continue
            try:
                text = read_text(path, vault.config.max_note_bytes)
                note = parse(text, rel, vault.defaults_for(rel, path))
            except NoteError:
                continue
            last = vault.ledger.last(note.id)
            if last is None or last.get("content") != content_hash(text):
                vault.record("external-edit", note, text, {"noticed_by": "watcher", "first_seen": last is None})
                count += 1
    return count


def record_deletion(vault, rel: str) -> int:
    """A note file gone by hand: record it, unless its note lives on elsewhere (moved, archived)."""
    gone = vault.ledger.ids_last_at(rel)
    catalog = vault.catalog(fresh=True)
    deleted = [note_id for note_id in gone if not catalog.id_taken(note_id)]
    for note_id in deleted:
        _record_gone(vault, note_id, rel, "watcher")
    return len(deleted)


def _record_gone(vault, note_id: str, path: str, noticed_by: str) -> None:
    """A note deleted by hand, on the ledger (there is no text left to hash)."""
    vault.ledger.append("external-delete", note_id, path, None, clock.format_datetime(clock.now()),
                        {"noticed_by": noticed_by})
