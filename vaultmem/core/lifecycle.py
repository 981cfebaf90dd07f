"""Lifecycle decisions: which notes decay, go stale or get archived, and what
is due for review. Pure functions of (notes, now, config); the vault applies them.

    active --(idle stale_after_days x (1 + stale_per_use x uses))--> stale
    --(at the strength floor archive_after_floor_days)--> archived (moved to archive/, restorable)

Idle time counts from the last grade or change, or from the review date FSRS set when
that is later: a memory confirmed and not due yet is not idle. `uses` are the grades that
were not lapses (`reps - lapses`): a memory that
helped six times is given seven times as long before it goes stale, as Agent
Brain's rule does (30 days x (1 + uses)); `stale_per_use: 0` gives every
memory the same threshold.

A grade or an edit makes a stale note active again. Suspended (leech) and
superseded notes are left alone (a person decides about them), but for one thing: a
superseded note goes to archive/ with the note that superseded it (its history).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from vaultmem.config import Config
from vaultmem.core.model import Note
from vaultmem.core.schedule import idle_decay, retrievability


@dataclass(frozen=True)
class DecayStep:
    """What decay does to one note: property changes, and whether it moves to archive/."""

    note: Note
    changes: dict = field(default_factory=dict)
    archive: bool = False


def last_touched(note: Note) -> datetime:
    """The latest of creation, last edit by vaultmem, and last grade."""
    return max(t for t in (note.created, note.updated, note.last_review) if t is not None)


def idle_since(note: Note) -> datetime:
    """Since when the note has waited unused: its last touch, or its review date when it was
    graded and FSRS scheduled it later (not idle before then: see schedule.idle_anchor)."""
    touched = last_touched(note)
    return max(touched, note.due) if note.last_review is not None and note.due is not None else touched


def uses(note: Note) -> int:
    """How often the memory was used and helped: its grades that were not lapses."""
    return max(0, note.reps - note.lapses)


def stale_threshold(note: Note, config: Config, stale_after_days: float | None = None) -> timedelta:
    """How long `note` may go untouched before it is stale: the base threshold
    (`stale_after_days`, or the override of one decay run) scaled by its uses."""
    base = config.stale_after_days if stale_after_days is None else stale_after_days
    return timedelta(days=base * (1 + config.stale_per_use * uses(note)))


def decay_step(note: Note, now: datetime, config: Config, stale_after_days: float | None = None) -> DecayStep | None:
    """The decay of one note at `now`, or None when nothing changes."""
    if note.status not in ("active", "stale"):
        return None
    strength, decayed = idle_decay(note, now, config)
    changes = {}
    if strength != note.strength or decayed != note.decayed:
        changes.update(strength=strength, decayed=decayed)
    status = note.status
    if status == "active" and now - idle_since(note) >= stale_threshold(note, config, stale_after_days):
        status = "stale"
        changes["status"] = status
    at_floor_since = decayed or note.decayed
    archive = (
        status == "stale"
        and strength <= config.strength_floor
        and at_floor_since is not None
        and now - at_floor_since >= timedelta(days=config.archive_after_floor_days)
    )
    if archive:
        changes["status"] = "archived"
    if not changes:
        return None
    return DecayStep(note, changes, archive)


def plan_decay(notes, now: datetime, config: Config, stale_after_days: float | None = None) -> list[DecayStep]:
    """Each note's decay step, and the history of what goes to archive/ with it: a superseded
    note whose successor is archived (now or before) is archived too. Left in memories/, the old
    fact outlived the correction that replaced it: `recall --history` answered with it alone."""
    notes = list(notes)
    steps = [s for s in (decay_step(n, now, config, stale_after_days) for n in notes) if s is not None]
    gone = [s.note.link for s in steps if s.archive] + [n.link for n in notes if n.status == "archived"]
    return steps + [DecayStep(older, {"status": "archived"}, archive=True) for older in history_of(notes, gone)]


def history_of(notes, links: list[str]) -> list[Note]:
    """The superseded notes still outside archive/ that the notes named by `links` superseded,
    and those they superseded, in turn: what goes to archive/ with them."""
    older_of: dict[str, list[Note]] = {}
    for note in notes:
        if note.status == "superseded" and note.superseded_by and not note.path.startswith("archive/"):
            older_of.setdefault(note.superseded_by, []).append(note)
    found, gone = [], list(links)
    while gone:
        for older in older_of.pop(gone.pop(), []):
            found.append(older)
            gone.append(older.link)
    return found


def due_for_review(notes, now: datetime, config: Config) -> list[tuple[Note, float | None]]:
    """Visible notes whose FSRS due date has passed, most at risk first.

    Risk is low retrievability; never-graded notes (no retrievability yet)
    come first, oldest first, since they have had no confirmation at all.
    """
    due = [(n, retrievability(n, now, config)) for n in notes if not n.is_hidden and n.due <= now]
    return sorted(due, key=lambda pair: (pair[1] is not None, pair[1] or 0.0, pair[0].due))
