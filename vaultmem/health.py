"""Health: what state the vault is in and what a person should fix first. Pure."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from .catalog import Catalog
from .config import Config
from .model import STATUSES, TIERS


def health_report(catalog: Catalog, now: datetime, config: Config) -> dict:
    notes = catalog.notes
    visible = [n for n in notes if not n.is_hidden]
    problems = [{"path": path, "problem": problem} for path, problem in catalog.problems]

    ids = Counter(n.id for n in notes)
    for note_id, count in sorted(ids.items()):
        if count > 1:
            paths = sorted(n.path for n in notes if n.id == note_id)
            problems.append({"path": paths[0], "problem": f"id {note_id!r} is used by {count} files ({', '.join(paths)}); give all but one a new id"})
    for note in notes:
        in_archive = note.path.startswith("archive/")
        if in_archive != (note.status == "archived"):
            where = "archive/" if in_archive else "outside archive/"
            problems.append({"path": note.path, "problem": f"status is {note.status} but the file is {where}; "
                             f"run `vaultmem restore {note.id}` or `vaultmem archive {note.id}`"})
    leeches = sorted(n.id for n in notes if n.lapses >= config.leech_lapses)
    due = [n for n in visible if n.due <= now]
    return {
        "notes": len(notes),
        "by_status": {s: sum(1 for n in notes if n.status == s) for s in STATUSES},
        "by_tier": {t: sum(1 for n in notes if n.tier == t) for t in TIERS},
        "by_type": dict(sorted(Counter(n.type for n in notes).items())),
        "due": len(due),
        "overdue": sum(1 for n in due if now - n.due > timedelta(days=1)),
        "leeches": leeches,
        "problems": problems,
    }
