"""Audit: the files against the ledger (ledger.py keeps the chain, this compares).

`verify` walks the chain and hashes every note; changes made by hand are
legitimate, so unless asked to only report it records them as external edits
(and vanished notes as external deletions). The watcher calls
`record_external_edits` for the paths it saw change.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from vaultmem import clock
from vaultmem.core.model import Note
from vaultmem.core.note import parse
from vaultmem.errors import NoteError
from vaultmem.store.files import lines_from_end, read_text

# How long a report (verify without recording) waits for a busy write lock before it reads without it.
REPORT_LOCK_WAIT = 2.0


def verify(vault, record: bool = True, re_anchor: bool = False) -> dict:
    """Walk the ledger's chain and compare every note with its last record.

    With `record`, changes made by hand (unrecorded edits, notes never
    recorded) are appended as `external-edit`, and notes gone as
    `external-delete`: they are legitimate, and now on the record.
    Breaks of the chain are only ever reported. When the ledger itself looks
    cut, emptied or deleted (`tampering`), nothing is recorded, since that
    would hide the gap, unless `re_anchor`: then one `re-anchor` record says
    what was missing, and recording goes on from there.
    """
    lock = vault.write_lock()
    if record:
        with lock:
            return _compare(vault, record, re_anchor)
    # Only a report: a write lock held by a stuck process must not stop it (`health`).
    with lock.for_reading(min(lock.wait, REPORT_LOCK_WAIT)) as busy:
        return dict(_compare(vault, record, re_anchor),
                    write_lock=None if busy is None else {"holder": busy.holder, "lock": busy.lock_path})


def _compare(vault, record: bool, re_anchor: bool = False) -> dict:
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
    chain = check_chain(vault.ledger.records())
    breaks = [p for p in chain if p.kind != "torn"]
    changes = check_notes(vault.ledger.state().last, files, catalog.unreadable()) + _shared_ids(catalog.notes)
    tampering = ledger_tampering(vault, changes)
    recorded = []
    if tampering and re_anchor:
        lost = vault.ledger.lost()
        vault.ledger.append("re-anchor", "", "", None, clock.format_datetime(clock.now()),
                            {"reason": tampering[0], **({"lost_records": lost[0], "lost_tip": lost[1]}
                                                        if lost else {})})
        vault.ledger.forget_lost()
    if record and (not tampering or re_anchor):
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
        "torn": [p.as_dict() for p in chain if p.kind == "torn"],
        "tampering": [] if re_anchor else tampering,
        "re_anchored": bool(tampering and re_anchor),
        "changes": [p.as_dict() for p in changes],
        "recorded": len(recorded),
        "notes": len(files),
    }


def _shared_ids(notes) -> list:
    """One id in two files (a note copied by hand): the ledger's records of that id cannot say
    which file they vouch for, so verify does not call every note matched ("ok" with two files
    of one id, while health listed them)."""
    from vaultmem.core.health import shared_ids
    from vaultmem.store.ledger import Problem

    return [Problem("duplicate id", paths[0], f"{note_id} is the id of {len(paths)} files ({', '.join(paths)}); "
                    "give all but one a new id", note_id) for note_id, paths in shared_ids(notes).items()]


def ledger_tampering(vault, changes) -> list[str]:
    """Signs that the ledger lost records: the file was deleted, emptied or its tail cut.

    Hand edits are legitimate, but a ledger that lost its own records looks
    exactly like a vault full of hand edits, so before anything is recorded
    three things are checked: the ledger is shorter than vaultmem last saw it
    while notes no longer match their records (a checkout of an older commit
    shortens it too, but then every note matches); the review log holds grades
    while the ledger is missing or empty; the ledger lacks the record of the
    review log's last grade (every grade writes both). That last one is looked
    for, not judged by its time: a grade made on a machine whose clock runs
    ahead, or at a time given by VAULTMEM_NOW, may be later than records
    written after it, and no record is missing then.
    """
    from vaultmem.timefmt import parse_datetime

    signs = []
    ledger = vault.ledger
    unexplained = [c for c in changes if c.kind in ("unrecorded edit", "missing note")]
    lost = ledger.lost()
    if lost and unexplained:
        signs.append(f"ledger.jsonl lost records: it held {lost[0]} (tip {lost[1][:12]}) when last read and is "
                     f"shorter now, and {len(unexplained)} notes no longer match their records")
    elif lost:
        ledger.forget_lost()  # an older checkout: shorter, but consistent with the notes
    grades = _last_lines(vault.reviews_log)
    empty = not ledger.path.exists() or ledger.path.stat().st_size == 0
    if empty and grades:
        signs.append(f"ledger.jsonl is {'missing' if not ledger.path.exists() else 'empty'} but reviews.jsonl "
                     "holds grades: the ledger was deleted or emptied")
    elif grades and not empty:
        try:
            when = parse_datetime(grades[-1].get("review_datetime", ""))
        except (ValueError, TypeError):
            when = None  # a review line vaultmem did not write: nothing to look for
        note_id = grades[-1].get("id")
        if when is not None and isinstance(note_id, str) and not _holds_grade(ledger.path, note_id, when):
            signs.append(f"reviews.jsonl has a grade of {note_id} at {grades[-1].get('review_datetime')} that "
                         "ledger.jsonl does not record: the ledger's tail was cut")
    return signs


GRADE_TIME_SLACK = 2.0  # seconds between a grade's review-log time and its ledger record's


def _holds_grade(ledger_path, note_id: str, when) -> bool:
    """Whether the ledger records a grade of `note_id` made at `when` (within a second or two:
    the two lines are written one after the other), or a `re-anchor` after it (the gap is on
    record). Read from the end, where it almost always is; a ledger whose tail was cut is read
    to its start."""
    import json

    from vaultmem.timefmt import parse_datetime

    wanted = f'"{note_id}"'.encode("utf-8")
    try:
        for raw in lines_from_end(ledger_path):
            if b'"re-anchor"' not in raw and (b'"grade"' not in raw or wanted not in raw):
                continue  # most lines: not parsed
            try:
                record = json.loads(raw)
                if record.get("op") == "re-anchor":
                    return True  # a gap put on record (verify --re-anchor) after what was lost
                if (record.get("op") == "grade" and record.get("id") == note_id and
                        abs((parse_datetime(record.get("time", "")) - when).total_seconds()) <= GRADE_TIME_SLACK):
                    return True
            except (ValueError, TypeError, AttributeError):
                continue
    except FileNotFoundError:
        return False
    return False


def _last_lines(path, count: int = 1) -> list[dict]:
    """The last JSON records of a log (reading only its end)."""
    import json

    try:
        tail = list(itertools.islice(lines_from_end(path), count + 1))
    except FileNotFoundError:
        return []
    records = []
    for raw in reversed(tail):
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records[-count:]


def record_external_edits(vault, paths: Iterable[str]) -> int:
    """Record hand edits of `paths` (the watcher's events) in the ledger; returns how many."""
    count = 0
    with vault.write_lock():
        for rel in paths:
            path = vault.root / rel
            if rel.endswith("/") or not path.exists():  # ("folder/": a folder deleted or moved away)
                count += record_deletion(vault, rel)
                continue
            try:
                text = read_text(path, vault.config.max_note_bytes)
                note = parse(text, rel, vault.defaults_for(rel, path))
            except NoteError:
                continue
            # The same test as before vaultmem rewrites a note: a merge record vouches for the text
            # a merge made (its notes changed on both sides), which no other record hashes.
            entry = vault.unseen_edit(note, text, "watcher")
            if entry:
                vault.ledger.append_many([entry])
                count += 1
    return count


def record_deletion(vault, rel: str) -> int:
    """A note file gone by hand (or every note of a folder, `rel` ending in "/"): record it,
    unless its note lives on elsewhere (moved, archived)."""
    gone = vault.ledger.ids_last_under(rel) if rel.endswith("/") else vault.ledger.ids_last_at(rel)
    catalog = vault.catalog(fresh=True)
    deleted = [note_id for note_id in gone if not catalog.id_taken(note_id)]
    for note_id in deleted:
        _record_gone(vault, note_id, (vault.ledger.last(note_id) or {}).get("path") or rel, "watcher")
    return len(deleted)


def _record_gone(vault, note_id: str, path: str, noticed_by: str) -> None:
    """A note deleted by hand, on the ledger (there is no text left to hash)."""
    vault.ledger.append("external-delete", note_id, path, None, clock.format_datetime(clock.now()),
                        {"noticed_by": noticed_by})
