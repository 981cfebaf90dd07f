"""Scheduling: FSRS-6 through the `fsrs` package, and strength. Pure functions of (note, now, config).

Two separate signals:
- the FSRS card (state, step, stability, difficulty, due, last_review): when a
  memory should be confirmed again, and how likely it is still right
  (retrievability, computed at query time, never stored);
- strength: how much a memory has earned its place. +reward for each good/easy
  grade (capped at 1.0), times `decay` for each idle period without a grade,
  never below `floor`.

Fuzzing is off: an agent's memory has no daily review load to spread, and a
vault must give the same schedule on every machine.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache

from vaultmem.config import Config
from vaultmem.core.model import RATINGS, Note, Rating
from vaultmem.errors import BadInput

STATE_NAMES = {1: "learning", 2: "review", 3: "relearning"}
STATE_NUMBERS = {name: number for number, name in STATE_NAMES.items()}


@lru_cache(maxsize=8)
def _scheduler(desired_retention: float, maximum_interval_days: int):
    import fsrs

    return fsrs.Scheduler(
        desired_retention=desired_retention,
        maximum_interval=maximum_interval_days,
        enable_fuzzing=False,
    )


def scheduler(config: Config):
    """The `fsrs.Scheduler` for this vault's settings."""
    return _scheduler(config.desired_retention, config.maximum_interval_days)


def to_card(note: Note):
    """The note's FSRS state as an `fsrs.Card`."""
    import fsrs

    return fsrs.Card(
        card_id=0,
        state=fsrs.State(STATE_NUMBERS[note.state]),
        step=note.step,
        stability=note.stability,
        difficulty=note.difficulty,
        due=note.due,
        last_review=note.last_review,
    )


def parse_rating(text: str) -> Rating:
    rating = str(text).strip().lower()
    if rating not in RATINGS:
        raise BadInput(f"unknown rating {text!r}; use one of: {', '.join(RATINGS)}")
    return rating


def grade(note: Note, rating: Rating, now: datetime, config: Config) -> tuple[dict, dict]:
    """Review `note` with `rating` at `now`.

    Returns (changes to apply to the note, review-log record). A lapse is an
    `again` on a memory FSRS had graduated to review; the lapse that reaches
    `leech_lapses` suspends the memory (left out of recall until a person
    restores it; a restored one is suspended again by its next lapse, not by
    its next grade).
    """
    import fsrs

    rating = parse_rating(rating)
    card, _log = scheduler(config).review_card(to_card(note), fsrs.Rating[rating.capitalize()], review_datetime=now)
    lapses = note.lapses + (1 if rating == "again" and note.state == "review" else 0)
    strength, _ = idle_decay(note, now, config)
    if rating in ("good", "easy"):
        strength = min(1.0, strength + config.strength_reward)
    elif rating == "again":  # it was wrong: it weakens as a good grade strengthens (once it never did, and
        # a memory wrong at every grade, still learning, so never a lapse, ranked level with a right one)
        strength = max(config.strength_floor, strength - config.strength_reward)
    status = note.status
    if lapses > note.lapses and lapses >= config.leech_lapses:
        status = "suspended"
    elif status == "stale":
        status = "active"
    changes = {
        "state": STATE_NAMES[int(card.state)],
        "step": card.step,
        "stability": _round(card.stability),
        "difficulty": _round(card.difficulty),
        "due": card.due.replace(microsecond=0),
        "last_review": now,
        "reps": note.reps + 1,
        "lapses": lapses,
        "strength": round(strength, 4),
        "status": status,
        "updated": now,
        "decayed": None,
    }
    record = {
        "id": note.id,
        "rating": rating,
        "rating_value": int(fsrs.Rating[rating.capitalize()]),
        "review_datetime": now.isoformat(),
        "state_before": note.state,
        "stability_before": note.stability,
        "difficulty_before": note.difficulty,
        "elapsed_days": _elapsed_days(note.last_review, now),
        "state": changes["state"],
        "stability": changes["stability"],
        "difficulty": changes["difficulty"],
        "due": changes["due"].isoformat(),
    }
    return changes, record


def retrievability(note: Note, now: datetime, config: Config) -> float | None:
    """Probability the memory is still recalled right now; None if never graded."""
    if note.last_review is None or not note.stability:
        return None
    return float(scheduler(config).get_card_retrievability(to_card(note), now))


def idle_anchor(note: Note) -> datetime:
    """Since when idle decay is unaccounted for: the last grade or change by vaultmem,
    the last decay step, or creation. (`updated`, not `created`, is when a
    backfilled memory entered the vault: an import does not start out decayed.)
    A memory that was graded is not idle before its review date: FSRS scheduled it
    that far ahead because it is expected to hold until then (counted from its last
    grade, a memory that helped at every review lost strength over months-long
    intervals and was archived before it was next due)."""
    candidates = [note.created, note.updated]
    if note.last_review:
        candidates += [note.last_review, note.due]
    if note.decayed:
        candidates.append(note.decayed)
    return max(candidates)


def idle_decay(note: Note, now: datetime, config: Config) -> tuple[float, datetime | None]:
    """Strength after the whole idle periods since the anchor, and the new anchor.

    The anchor advances by whole periods only, and each period's strength is
    rounded as it would be stored, so running decay daily or monthly gives the
    same strength to the digit. Once at the floor the anchor stays at the
    moment the floor was reached: `decayed` then says since when.
    """
    period = timedelta(days=config.strength_idle_days)
    anchor = idle_anchor(note)
    if note.strength <= config.strength_floor or now <= anchor or period.total_seconds() <= 0:
        return note.strength, note.decayed
    periods = int((now - anchor) / period)
    if periods == 0:
        return note.strength, note.decayed
    # One period at a time, each stored to 4 decimals as a run would store it, up to the floor: a
    # decay run daily and one a month later then write the same strength (and the same `decayed`)
    # to the digit (the power at once differed from the daily steps in the last digit: a git diff
    # for nothing). A strength that never falls (decay 1) uses every period.
    strength, used = note.strength, 0
    while used < periods and strength > config.strength_floor:
        strength = round(max(config.strength_floor, strength * config.strength_decay), 4)
        used += 1
        if config.strength_decay >= 1:
            used = periods
    return strength, anchor + used * period


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _elapsed_days(last_review: datetime | None, now: datetime) -> float | None:
    if last_review is None:
        return None
    return round((now - last_review).total_seconds() / 86400, 4)


def label(note: Note, now: datetime, config: Config) -> str:
    """How sure the memory is, in one word: new, learning, strong, fading or weak.

    strong: retrievability above 0.8; fading: 0.5 to 0.8; weak: below 0.5.
    A superseded, archived, suspended or contested memory says so instead: it is
    never plain fact (`recall --all` shows the hidden ones).
    """
    if note.status in ("superseded", "archived", "suspended"):
        return note.status
    if note.contested:
        return "contested"
    if note.reps == 0:
        return "new"
    if note.state != "review":
        return "learning"
    value = retrievability(note, now, config)
    if value is None:
        return "new"
    if value > 0.8:
        return "strong"
    return "fading" if value >= 0.5 else "weak"


def replay(note: Note, reviews: list[dict], config: Config) -> dict:
    """The note's card, strength and status after its review-log lines `reviews` (oldest
    first), graded again from `note` one by one: what a merge of two histories holds."""
    from dataclasses import replace

    from vaultmem.timefmt import parse_datetime

    changes: dict = {}
    for record in reviews:
        changes, _log = grade(note, record["rating"], parse_datetime(record["review_datetime"]), config)
        note = replace(note, **changes)
    return changes
