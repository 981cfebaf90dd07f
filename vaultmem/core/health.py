"""Health: what state the vault is in and what a person should fix first. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from vaultmem.config import Config
from vaultmem.core.instructions import instruction_reason
from vaultmem.core.model import STATUSES, TIERS, Note
from vaultmem.core.note import unclosed_properties


def instruction_warnings(notes: Sequence[Note]) -> list[dict]:
    """Notes an agent is shown that read as instructions to it (instructions.py), by file name:
    warnings, not problems, since a person may have meant it; they decide."""
    found = []
    for note in notes:
        reason = None if note.is_hidden else instruction_reason(note.text)
        if reason:
            found.append({"path": note.path, "warning": f"looks like an instruction to an agent: {reason}; "
                          f"agents see it at every session start, so edit it or `vaultmem archive {note.id}`"})
    return sorted(found, key=lambda w: w["path"])


def shared_ids(notes: Sequence[Note]) -> dict[str, list[str]]:
    """Each id more than one file holds (a note copied by hand), with those files' paths, in
    order: health lists them, and verify, whose records of such an id cannot say which file they
    vouch for."""
    paths: dict[str, list[str]] = {}
    for note in notes:
        paths.setdefault(note.id, []).append(note.path)
    return {note_id: sorted(held) for note_id, held in sorted(paths.items()) if len(held) > 1}


def health_report(notes: Sequence[Note], unreadable: Sequence[tuple[str, str]], now: datetime, config: Config,
                  ledger: dict | None = None, recall: dict | None = None) -> dict:
    """Counts, queues and problems of the vault's `notes`; `unreadable` is (path, problem) for the files
    that could not be read (the catalog's `problems`), `ledger` is `Vault.verify(record=False)`, `recall` the
    engine's status. `first` is the one thing a person should fix first (None when all is well)."""
    visible = [n for n in notes if not n.is_hidden]
    problems = [{"path": path, "problem": problem} for path, problem in unreadable]

    for note_id, paths in shared_ids(notes).items():
        problems.append({"path": paths[0], "problem": f"id {note_id!r} is used by {len(paths)} files "
                         f"({', '.join(paths)}); give all but one a new id"})
    for note in notes:
        in_archive = note.path.startswith("archive/")
        if in_archive != (note.status == "archived"):
            where = "archive/" if in_archive else "outside archive/"
            problems.append({"path": note.path, "problem": f"status is {note.status} but the file is {where}; "
                             f"run `vaultmem restore {note.id}` or `vaultmem archive {note.id}`"})
    for note in notes:
        if not note.present and unclosed_properties(note.body):
            problems.append({"path": note.path, "problem": "opens with --- and properties but no --- line closes "
                             "them, so they read as text (and vaultmem will not rewrite it); close them "
                             "with a --- line"})
    # A note that does not parse is still named: a link to it is not broken (its own problem is listed).
    links = {n.link for n in notes} | {f"[[{path.rsplit('/', 1)[-1].removesuffix('.md')}]]"
                                       for path, _problem in unreadable}
    for note in notes:
        for name, link in (("superseded_by", note.superseded_by), ("supersedes", note.supersedes)):
            if link and link not in links:
                problems.append({"path": note.path, "problem": f"{name} links to {link}, which no note is named "
                                 "now (a file renamed or deleted by hand?); point the link at the note's name"})
    # (a leech a person restored is in use again by their decision: not listed until its next lapse)
    leeches = sorted(n.id for n in notes if n.status == "suspended" and n.lapses >= config.leech_lapses)
    due = [n for n in visible if n.due <= now]
    by_link = {n.link: n for n in notes}
    contested = sorted({tuple(sorted((n.id, by_link[link].id))) for n in visible if n.contested
                        for link in n.contested_with if link in by_link})
    ledger = ledger or {"breaks": [], "changes": []}
    unrecorded = [c for c in ledger["changes"] if c["kind"] in ("unrecorded edit", "missing note")]
    recall = recall or {}
    warnings = instruction_warnings(notes)
    first = None
    if ledger.get("tampering"):
        first = (f"{ledger['tampering'][0]}: restore .vaultmem/ledger.jsonl from git, "
                 "or `vaultmem verify --re-anchor` to put the gap on record")
    elif ledger["breaks"]:
        first = (f"the ledger's chain is broken at {ledger['breaks'][0]['where']}: "
                 "restore .vaultmem/ledger.jsonl from git")
    elif problems:
        first = f"{problems[0]['path']}: {problems[0]['problem']}"
    elif unrecorded:
        first = (f"{len(unrecorded)} changes made outside vaultmem are not on record (e.g. {unrecorded[0]['where']}); "
                 "check them, then `vaultmem verify` records them")
    elif recall.get("model_problem"):
        first = f"recall is lexical only: {recall['model_problem']}"
    elif contested:
        first = f"{len(contested)} contested pairs (e.g. {' vs '.join(contested[0])}): `vaultmem resolve` the right one"
    elif leeches:
        first = f"{len(leeches)} leeches keep being forgotten (e.g. {leeches[0]}): rewrite or `vaultmem correct` them"
    elif warnings:
        first = f"{warnings[0]['path']}: {warnings[0]['warning']}"
    return {
        "notes": len(notes),
        "by_status": {s: sum(1 for n in notes if n.status == s) for s in STATUSES},
        "by_tier": {t: sum(1 for n in notes if n.tier == t) for t in TIERS},
        "by_type": dict(sorted(Counter(n.type for n in notes).items())),
        "due": len(due),
        "overdue": sum(1 for n in due if now - n.due > timedelta(days=1)),
        "leeches": leeches,
        "stale": sum(1 for n in notes if n.status == "stale"),
        "contested": [list(pair) for pair in contested],
        "ledger": {"breaks": ledger["breaks"], "tampering": ledger.get("tampering", []),
                   "torn": ledger.get("torn", []), "unrecorded": unrecorded,
                   "untracked": sum(1 for c in ledger["changes"] if c["kind"] == "untracked note")},
        "problems": problems,
        "warnings": warnings,
        "first": first,
    }
