"""Three-way merges of a vault's files: text in, text out. git's merge drivers call these
(integrations/gitvault.py) with the common ancestor, our side and their side of one file.

- The logs (`reviews.jsonl`, `archive.jsonl`): the union of both sides' lines, each once,
  ordered by time (ties by the line itself, so both merge orders give the same file).
- The ledger: our lines, then their lines we lack, then one `merge` record joining the two
  heads (see store/ledger.py for the DAG `verify` walks). Nothing is re-hashed.
- A note: property by property. The FSRS card is the replay of both sides' grades since the
  base when the grades are known, else the card of the side graded last with `reps` and
  `lapses` counting both sides; lists are unioned; a change on one side is kept; `updated`
  is the later one. The body goes through git's text merge (passed in as `merge_text`, so
  this module stays pure); a true body conflict keeps git's markers in the body.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from vaultmem.config import Config
from vaultmem.core.model import Note
from vaultmem.core.note import ALL_KEYS, has_conflict_markers, parse, render, unmodelled_properties
from vaultmem.core.schedule import replay
from vaultmem.core.tiers import MAX_EVIDENCE
from vaultmem.errors import BadInput, NoteError
from vaultmem.timefmt import parse_datetime

GENESIS = "0" * 64  # the `prev` of a ledger's first record

CARD_FIELDS = ("state", "step", "stability", "difficulty", "due", "last_review", "reps", "lapses")
_LIST_FIELDS = ("tags", "sessions", "days", "projects", "contested_with")
_FLAG_FIELDS = ("explicit", "contested", "redacted")
_EVIDENCE_FIELDS = ("sessions", "days", "projects")

# (base, ours, theirs) -> (merged text, conflicts left as markers)
TextMerge = Callable[[str, str, str], tuple[str, bool]]


# ---------------------------------------------------------------- logs

def _lines(text: str) -> list[str]:
    """The lines of a JSON-lines file, each ending in "\\n" (a torn last line too).
    Split on "\\n" only: a JSON string may hold U+2028, which str.splitlines would cut."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return [part + "\n" for part in parts]


def _record(line: str) -> dict | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def merge_log(base: str, ours: str, theirs: str, time_key: str) -> str:
    """The union of two append-only logs, each line once, ordered by `time_key`.

    A line without a readable time takes the time of the line before it in its own
    file, so it stays next to its neighbours. Ties are ordered by the line text:
    the result depends only on the set of lines, never on which side merged.
    """
    del base  # a union needs no ancestor: a line is kept if either side has it
    keyed: dict[str, tuple[str, str]] = {}
    for text in (ours, theirs):
        previous = ""
        for line in _lines(text):
            record = _record(line)
            stamp = record.get(time_key) if record else None
            previous = stamp if isinstance(stamp, str) else previous
            keyed.setdefault(line, (previous, line))
    return "".join(line for _time, line in sorted(keyed.values()))


# ---------------------------------------------------------------- ledger

def ledger_record_hash(record: dict) -> str:
    """The hash of one ledger line: its fields without `hash`, in canonical JSON (sorted keys,
    no spaces, UTF-8), SHA-256 hex. store/ledger.py uses it as `record_hash`."""
    body = {k: v for k, v in record.items() if k != "hash"}
    canonical = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _tip(records: Sequence[dict | None]) -> dict | None:
    return next((r for r in reversed(records) if r and isinstance(r.get("hash"), str)), None)


def merge_ledger(base: str, ours: str, theirs: str) -> str:
    """Our ledger, their records we lack, then one `merge` record joining both heads.

    When one side holds everything the other has (a fast-forward), that side is the
    result and no merge record is written. The merge record is made only of what the
    two files say (its time is the latest of their records), so two machines merging
    the same heads write the same record. It lists the notes both sides changed
    (`detail.notes`: id -> [our content hash, their content hash]): their merged text is
    new, and `verify` accepts it as the merge of two recorded versions.
    """
    del base  # the common prefix of both sides is the ancestor that matters
    mine, other = _lines(ours), _lines(theirs)
    have = set(mine)
    mine_records = [_record(line) for line in mine]
    known = {r.get("hash") for r in mine_records if r}
    new = [line for line in other if line not in have and (_record(line) or {}).get("hash") not in known]
    if not new:
        return "".join(mine)
    if set(mine) <= set(other):
        return "".join(other)  # fast-forward: they have everything we have
    prefix = 0
    while prefix < min(len(mine), len(other)) and mine[prefix] == other[prefix]:
        prefix += 1
    our_tail = [r for r in mine_records[prefix:] if r]
    their_records = [_record(line) for line in new]
    their_tail = [r for r in their_records if r]
    their_records_all = [_record(line) for line in other]
    our_tip, their_tip = _tip(mine_records), _tip(their_records_all)
    if our_tip is None or their_tip is None or our_tip["hash"] in {r.get("hash") for r in their_records_all if r}:
        # nothing to join: one side added no record (only a torn fragment, say); or no chain
        # to join at all, which the chain check reports
        return "".join(mine + new)
    record = {
        "seq": max(_int(our_tip.get("seq")), _int(their_tip.get("seq"))) + 1,
        "time": max(str(r.get("time") or "") for r in our_tail + their_tail + [our_tip, their_tip]),
        "op": "merge", "id": "", "path": "", "content": None,
        "prev": our_tip["hash"], "parents": [our_tip["hash"], their_tip["hash"]],
    }
    # Changed since the two sides parted: records one side has and the other lacks (after a
    # criss-cross merge, records past the common prefix may be on both sides already).
    theirs_known = {r.get("hash") for r in their_records_all if r}
    both = _changed_on_both([r for r in our_tail if r.get("hash") not in theirs_known], their_tail)
    if both:
        record["detail"] = {"notes": both}
    record["hash"] = ledger_record_hash(record)
    return "".join(mine + new) + json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _changed_on_both(ours: list[dict], theirs: list[dict]) -> dict[str, list]:
    """Notes whose last record differs on the two sides: id -> [our content, their content]."""
    def last(records):
        found: dict[str, dict] = {}
        for record in records:
            if record.get("id"):
                found[record["id"]] = record
        return found

    mine, other = last(ours), last(theirs)
    return {note_id: [mine[note_id].get("content"), other[note_id].get("content")]
            for note_id in sorted(mine.keys() & other.keys())
            if mine[note_id].get("content") != other[note_id].get("content")}


# ---------------------------------------------------------------- notes

@dataclass(frozen=True)
class NoteMerge:
    text: str
    conflict: bool  # a true conflict: the text holds git's markers
    card: str = ""  # how the FSRS card was merged: "", "one side", "replayed", "later side"


def merge_note(base: str, ours: str, theirs: str, path: str, defaults: dict, config: Config,
               merge_text: TextMerge, reviews: tuple[list[dict], list[dict]] | None = None) -> NoteMerge:
    """Merge three versions of one note file, property by property.

    `reviews`: the review-log lines of this note on our side and on theirs (oldest
    first), when known: the card is then the replay (schedule.replay)
    of both sides' grades since the base, in time order. Without them, or when the
    logs do not account for every grade, the card is that of the side graded last,
    with `reps` and `lapses` counting both sides' grades since the base.
    A file that is not a readable note (or two different notes, an add/add) is
    merged as plain text.
    """
    if ours == theirs or base == theirs:
        return NoteMerge(ours, has_conflict_markers(ours))
    if base == ours:
        return NoteMerge(theirs, has_conflict_markers(theirs))
    try:
        b = parse(base, path, defaults) if base.strip() else None
        o, t = parse(ours, path, defaults), parse(theirs, path, defaults)
        extra = [unmodelled_properties(text, path) for text in (base, ours, theirs)]
    except NoteError:
        b = o = t = None
    if b is None and o is not None and t is not None and o.id != t.id and _same_fact(o, t):
        return _one_of_two_adds(o, t, ours, theirs)
    if o is None or t is None or b is None or o.id != t.id or b.id != o.id:
        text, conflict = merge_text(base, ours, theirs)
        return NoteMerge(text, conflict)
    original = ours
    if extra[1] != extra[2]:
        if extra[1] == extra[0]:
            original = theirs  # only they changed properties vaultmem does not know: write on their lines
        elif extra[2] != extra[0]:
            text, conflict = merge_text(base, ours, theirs)  # both did, differently: a person decides
            return NoteMerge(text, conflict)
    fields, card = _merge_fields(b, o, t, config, reviews, path.startswith("archive/"))
    body, conflict = merge_text(b.body, o.body, t.body)
    merged = replace(o, **fields, body=body, present=o.present | t.present)
    return NoteMerge(render(merged, original), conflict or has_conflict_markers(body), card)


def _same_fact(o: Note, t: Note) -> bool:
    """Two notes added under one file name that say the same (the same fact learned on two
    machines): same kind, namespace and text, up to whitespace."""
    return o.type == t.type and o.namespace == t.namespace and " ".join(o.body.split()) == " ".join(t.body.split())


def _one_of_two_adds(o: Note, t: Note, ours: str, theirs: str) -> NoteMerge:
    """The same fact added on both sides (one file name, two ids): one note, the one whose id
    sorts first (so both merge orders agree), with both sides' evidence, tags and `explicit`,
    and the card of the side reviewed more. The other id's add and grades stay on the ledger and
    in the review log; `verify` records its note as gone. (A text merge left markers in the
    properties: two ids, two `created`.)"""
    keep, other, text = (o, t, ours) if o.id < t.id else (t, o, theirs)
    fields = {key: _merge_list((), getattr(keep, key), getattr(other, key), MAX_EVIDENCE) for key in _EVIDENCE_FIELDS}
    fields.update(tags=_merge_list((), keep.tags, other.tags, None), explicit=keep.explicit or other.explicit)
    if other.reps > keep.reps:
        fields.update({key: getattr(other, key) for key in (*CARD_FIELDS, "strength")})
    merged = replace(keep, **fields, present=keep.present | other.present)
    return NoteMerge(render(merged, text), False)


def _merge_fields(b: Note, o: Note, t: Note, config: Config, reviews, archived: bool) -> tuple[dict, str]:
    later = o if (o.updated, o.last_review or o.updated) >= (t.updated, t.last_review or t.updated) else t
    fields = {}
    for key in ALL_KEYS:
        if key in CARD_FIELDS or key == "strength":
            continue
        mine, other, old = getattr(o, key), getattr(t, key), getattr(b, key)
        if mine == other or other == old:
            fields[key] = mine
        elif mine == old:
            fields[key] = other
        elif key in _LIST_FIELDS:
            fields[key] = _merge_list(old, mine, other, MAX_EVIDENCE if key in _EVIDENCE_FIELDS else None)
        elif key in _FLAG_FIELDS:
            fields[key] = mine or other
        elif key == "updated":
            fields[key] = max(mine, other)
        elif key == "status" and "archived" in (mine, other):
            # where git put the file decides (archived on one side, superseded or suspended on the other)
            fields[key] = "archived" if archived else (other if mine == "archived" else mine)
        else:
            fields[key] = getattr(later, key)  # both changed it differently: the side that changed last
    card, how = _merge_card(b, o, t, config, reviews)
    status = card.pop("status", None)
    fields.update(card)
    if status == "suspended":
        fields["status"] = status  # the replayed grades made it a leech
    return fields, how


def _merge_list(base: tuple, ours: tuple, theirs: tuple, limit: int | None) -> tuple:
    """Items both keep, and items either side added; an item one side removed stays removed.
    Our order first, then their new items; evidence lists keep their last `limit`."""
    def kept(item):
        return (item in ours and item in theirs) or item not in base

    merged = tuple(dict.fromkeys(i for i in (*ours, *theirs) if kept(i)))
    return merged[-limit:] if limit else merged


def _reviewed(side: Note, base: Note) -> bool:
    return side.reps != base.reps or side.last_review != base.last_review


def _merge_card(b: Note, o: Note, t: Note, config: Config, reviews) -> tuple[dict, str]:
    """The FSRS card, strength and (when grades changed it) status of the merged note."""
    card_keys = (*CARD_FIELDS, "strength", "decayed")
    ours_graded, theirs_graded = _reviewed(o, b), _reviewed(t, b)
    if not (ours_graded and theirs_graded):
        if ours_graded or theirs_graded:
            side = o if ours_graded else t
            return {k: getattr(side, k) for k in card_keys}, "one side"
        # neither graded: per property (idle decay on one side changes strength and decayed)
        merged = {}
        for key in card_keys:
            mine, other, old = getattr(o, key), getattr(t, key), getattr(b, key)
            merged[key] = other if mine == old else mine
        return merged, ""
    grades = _grades_since_base(b, o, t, reviews)
    if grades is not None:
        replayed = replay(b, grades, config)
        return {**{k: replayed[k] for k in card_keys if k in replayed}, "status": replayed.get("status")}, "replayed"
    later = o if (o.last_review or o.updated) >= (t.last_review or t.updated) else t
    other = t if later is o else o
    merged = {k: getattr(later, k) for k in card_keys}
    merged["reps"] = o.reps + t.reps - b.reps
    merged["lapses"] = o.lapses + t.lapses - b.lapses
    gain = max(0.0, other.strength - b.strength)
    merged["strength"] = round(min(1.0, later.strength + gain), 4)
    return merged, "later side"


def _grades_since_base(b: Note, o: Note, t: Note, reviews) -> list[dict] | None:
    """Both sides' review lines since the base, in time order; None unless the logs hold
    exactly the grades the cards count (a log that lost or gained lines is not replayed)."""
    if reviews is None:
        return None
    picked = []
    for side, lines in zip((o, t), reviews):
        count = side.reps - b.reps
        if count <= 0 or len(lines) < count:
            return None
        picked.append(lines[len(lines) - count:])
    merged = {json.dumps(r, sort_keys=True): r for r in (*picked[0], *picked[1])}
    if len(merged) != len(picked[0]) + len(picked[1]):
        return None  # the same grade on both sides: not two grades
    try:
        return sorted(merged.values(), key=lambda r: parse_datetime(r.get("review_datetime")))
    except (BadInput, TypeError, ValueError):
        return None  # an unreadable time: not replayable
