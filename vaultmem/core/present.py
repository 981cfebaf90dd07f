"""Notes as data: the JSON shape every command, the recall server and the API share."""

from __future__ import annotations

from datetime import datetime

from vaultmem.core.note import field_values
from vaultmem.core.schedule import label, retrievability
from vaultmem.timefmt import format_datetime


def note_dict(note, now, config, extra: dict | None = None) -> dict:
    """A note's properties (datetimes in the vault's UTC form) plus what is derived now."""
    data = {}
    for key, value in field_values(note).items():
        if isinstance(value, datetime):
            value = format_datetime(value)
        elif isinstance(value, tuple):
            value = list(value)
        data[key] = value
    r = retrievability(note, now, config)
    data.update(title=note.title, summary=note.summary, text=note.text, path=note.path,
                retrievability=None if r is None else round(r, 4), label=label(note, now, config))
    data.update(extra or {})
    return data


def hit_dicts(hits, now, config) -> list[dict]:
    return [note_dict(h.note, now, config, {"score": round(h.score, 6), "signals": h.signals}) for h in hits]
