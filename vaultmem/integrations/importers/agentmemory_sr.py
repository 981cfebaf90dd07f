"""agentmemory-sr's SQLite store, read as memories with everything it knew about them.

Reads the one SQLite file of agentmemory-sr
(github.com/nickvasilescu/agentmemory-sr, schema version 1): table `memories`
(id, content, namespace, source, created_at, updated_at, the FSRS card:
stability, difficulty, due, last_review, state new|learning|review|relearning|
suspended|buried, step, and reps, lapses, retrieval and usage counters),
`review_log` (every grade with the card before and after) and
`grade_history` (every grade with its context). One memory per row in
created_at order. What each field becomes is `FIELDS`, shown in the import
report: the card is kept as it was (a memory due in a week is still due in a
week), the review log goes to reviews.jsonl with its original times, a
suspended leech stays suspended, a memory agentmemory-sr demoted as
"superseded by new memory: ID" is superseded by that memory's note, and the
row's id stays as `original_id`. The file is opened read-only, so importing
never changes the store.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from vaultmem.errors import BadInput
from vaultmem.integrations.importers.base import MAX_FILE_BYTES, Incoming, Record, clean_namespace
from vaultmem.integrations.importers.common import _columns, _connect, _table_names, _text, _when

FIELDS = {
    "id": "kept as the original_id property (`vaultmem show OLD_ID` finds the note)",
    "content": "kept as the note's text",
    "namespace": "kept",
    "source": "kept in source, after the row it came from",
    "created_at": "kept as created",
    "updated_at": "dropped: updated is when vaultmem wrote the note (so an import does not start out decayed)",
    "stability, difficulty, due, last_review, step, reps, lapses": "kept (the FSRS card as it was)",
    "state": "mapped: new/learning/review/relearning kept as the card state; suspended -> status suspended; "
             "buried -> active (vaultmem does not bury)",
    "fsrs_card_id": "dropped: agentmemory-sr's internal card number",
    "usage_count, retrieval_count, last_used, last_retrieved": "mapped: strength = initial + reward per good/easy "
                                                                "grade of the review log; the counters are dropped",
    "review_log": "kept in .vaultmem/reviews.jsonl with the original times (imported_from names the row)",
    "grade_history.context": "kept as each review's comment; 'superseded by new memory: ID' -> a supersede link",
}
_SUPERSEDED = re.compile(r"superseded by new memory:\s*(\S+)")
_CARD_STATES = {"learning": "learning", "review": "review", "relearning": "relearning"}


def read_agentmemory_sr(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Record]:
    """agentmemory-sr (github.com/nickvasilescu/agentmemory-sr): one SQLite file, tables
    `memories` (id, content, namespace, source, created_at, the FSRS card, counters),
    `review_log` and `grade_history`."""
    with _connect(path) as db:
        columns = _columns(db, "memories")
        if not {"content"} <= columns:
            raise BadInput(f"{path} has no agentmemory-sr `memories` table with a `content` column")
        tables = set(_table_names(db))
        reviews = _by_memory(db, "review_log", "reviewed_at") if "review_log" in tables else {}
        grades = _by_memory(db, "grade_history", "graded_at") if "grade_history" in tables else {}
        order = "created_at, rowid" if "created_at" in columns else "rowid"
        for row in db.execute(f"SELECT rowid AS _rowid, * FROM memories ORDER BY {order}"):
            row = dict(row)
            original = row.get("id") or row["_rowid"]
            where = f"{path}#{original}"
            origin = str(row.get("source") or "").strip()
            history = _history(reviews.get(str(original), []), grades.get(str(original), []))
            newer = [m.group(1) for g in grades.get(str(original), []) for m in [_SUPERSEDED.search(
                str(g.get("context") or ""))] if m]
            yield Incoming(
                text=_text(row.get("content")), namespace=clean_namespace(row.get("namespace")),
                source=where + (f" (from {origin})" if origin else ""), created=_when(row.get("created_at")),
                extra=_state(row) | {
                    "original_id": str(original), "reviews": history, "superseded_by": newer[-1:],
                    "good_grades": sum(1 for r in history if r["rating"] in ("good", "easy")),
                },
            )


def _state(row: dict) -> dict:
    """The card and status of a row, as vaultmem's properties."""
    state = str(row.get("state") or "new").lower()
    card = {}
    for key in ("stability", "difficulty"):
        if row.get(key) is not None:
            card[key] = round(float(row[key]), 4)
    for key in ("due", "last_review"):
        when = _when(row.get(key))
        if when is not None:
            card[key] = when
    for key in ("reps", "lapses"):
        if row.get(key) is not None:
            card[key] = int(row[key])
    if state in _CARD_STATES:
        card["state"] = _CARD_STATES[state]
    elif state == "suspended":  # agentmemory-sr overwrites the card state with `suspended`
        card["state"] = "review" if card.get("reps") and card.get("stability") else "learning"
    if card.get("state") == "review":
        card["step"] = None
    elif row.get("step") is not None:
        card["step"] = int(row["step"])
    extra = {"card": card}
    if state == "suspended":
        extra["status"] = "suspended"
    return extra


def _by_memory(db, table: str, time_column: str) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {}
    if "memory_id" not in _columns(db, table):
        return rows
    for row in db.execute(f'SELECT * FROM "{table}" ORDER BY {time_column}, id'):
        rows.setdefault(str(row["memory_id"]), []).append(dict(row))
    return rows


def _history(reviews: list[dict], grades: list[dict]) -> list[dict]:
    """The review log of one memory in reviews.jsonl's shape; each grade's context as its comment.
    agentmemory-sr writes one review_log and one grade_history row per grade, in the same order."""
    contexts = [g.get("context") for g in grades] if len(grades) == len(reviews) else [None] * len(reviews)
    source = reviews or [{"grade": g.get("grade"), "reviewed_at": g.get("graded_at")} for g in grades]
    if not reviews:
        contexts = [g.get("context") for g in grades]
    history = []
    for review, context in zip(source, contexts):
        when = _when(review.get("reviewed_at"))
        rating = str(review.get("grade") or "").lower()
        if when is None or rating not in ("again", "hard", "good", "easy"):
            continue
        history.append({
            "rating": rating, "rating_value": ("again", "hard", "good", "easy").index(rating) + 1,
            "review_datetime": when.isoformat(), "state_before": review.get("state_before"),
            "stability_before": review.get("stability_before"), "difficulty_before": review.get("difficulty_before"),
            "state": review.get("state_after"), "stability": review.get("stability_after"),
            "difficulty": review.get("difficulty_after"), "comment": context or None,
        })
    return history
