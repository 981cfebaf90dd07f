"""What an import keeps beyond the text: schedule, history, identity, chains and statuses.

A reader puts what the source knew about a record in `Incoming.extra`:

- `card`: the FSRS card as vaultmem's properties (state, step, stability,
  difficulty, due, last_review, reps, lapses), already mapped to vaultmem's values;
- `strength` (or `good_grades`: strength earned as vaultmem would have from
  that many good/easy grades), `status` (stale, archived, suspended, superseded);
- `original_id`: the record's id in the source, kept as the `original_id`
  property so `vaultmem show OLD_ID` and old references still resolve;
- `aliases`: the names a note was linked by in the source (a markdown note's
  file name), kept as Obsidian's `aliases` property so its `[[links]]` resolve;
- `reviews`: its review history, appended to `.vaultmem/reviews.jsonl` with
  the original times, in the review log's own shape;
- `superseded_by` / `supersedes`: original ids of the records of a chain.

`keep_state` applies one record's state right after `Vault.add` created its
note; `link_chains` links the chains once every record is in (the newer one
may come later in the file). Each reader also declares, per source field,
whether it is kept, mapped (to what) or dropped (why): `Report.fields`.
"""

from __future__ import annotations

from vaultmem.errors import VaultmemError
from vaultmem.integrations.importers.base import Incoming
from vaultmem.store.files import append_jsonl

# Statuses a record can arrive in; "archived" moves the note to archive/ (run.py does that).
KEPT_STATUSES = ("stale", "suspended", "superseded")


def keep_state(vault, note_id: str, record: Incoming, report) -> str:
    """Give the note just added for `record` the card, strength, status and original id the
    source had, and append its review history. Returns the note's status."""
    extra = record.extra
    changes = dict(extra.get("card") or {})
    config = vault.config
    if extra.get("strength") is not None:
        changes["strength"] = round(min(1.0, max(config.strength_floor, float(extra["strength"]))), 4)
    elif extra.get("good_grades"):  # strength as vaultmem would have earned it from the same grades
        earned = config.strength_initial + config.strength_reward * extra["good_grades"]
        changes["strength"] = round(min(1.0, earned), 4)
    status = extra.get("status")
    if status in KEPT_STATUSES:
        changes["status"] = status
    properties = {"original_id": str(extra["original_id"])} if extra.get("original_id") not in (None, "") else {}
    if extra.get("aliases"):  # Obsidian's own property: the names links to the note may use
        properties["aliases"] = list(extra["aliases"])
    after = None
    if changes or properties:
        try:
            _before, after = vault.update_note(note_id, lambda n: changes, op="import",
                                               detail={"source": record.source}, properties=properties)
        except VaultmemError as exc:
            report.errors.append({"source": record.source, "reason": f"added as {note_id} without its state: {exc}"})
            return ""
    for review in extra.get("reviews") or ():
        append_jsonl(vault.reviews_log, dict(review, id=note_id, imported_from=record.source))
    return after.status if after is not None else ""


def link_chains(vault, imported: dict[str, str], chains: list[tuple[str, str, str]], report) -> int:
    """Link the supersede chains of an import: `chains` are (older original id, newer original id,
    source); `imported` maps original ids to the new note ids. A chain whose other end was not
    imported leaves the record's own status as the source had it. Returns the links made."""
    from vaultmem.ops.corrections import supersede_pair

    linked = set()
    for older, newer, source in chains:
        if older not in imported or newer not in imported or (older, newer) in linked:
            continue
        try:
            supersede_pair(vault, imported[older], imported[newer], reason=f"superseded in {source}",
                           chain=True)
            linked.add((older, newer))
        except VaultmemError as exc:
            report.errors.append({"source": source, "reason": f"supersede chain not linked: {exc}"})
    return len(linked)
