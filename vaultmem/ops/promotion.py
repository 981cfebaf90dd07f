"""Promotion on disk: staging what the evidence earns (tiers.py decides) and adopting it.

`promote` is a dry run that writes its proposals to
`.vaultmem/staged/promotions.json`, where a person can read them and delete
any to veto it; `promote --adopt` applies the staged ones whose evidence still
holds, each recorded on the ledger.
"""

from __future__ import annotations

import json

from vaultmem import clock
from vaultmem.core.model import TIERS, Note
from vaultmem.errors import BadInput, NoteError, NotFound
from vaultmem.store.files import atomic_write


def promote(vault, adopt: bool = False) -> list[dict]:
    """Plan promotions (tiers.py) and stage them for a person to review, or
    with `adopt` apply the staged ones whose evidence still holds."""
    from vaultmem.core.tiers import next_tier, plan_promotions

    now = clock.now()
    with vault.write_lock():
        if not adopt:
            proposals = [p.as_dict() for p in plan_promotions(vault.notes(), now, vault.config)]
            atomic_write(
                vault.staged_promotions,
                json.dumps({"staged": clock.format_datetime(now), "proposals": proposals}, indent=2) + "\n",
            )
            return proposals
        try:
            staged = json.loads(vault.staged_promotions.read_text(encoding="utf-8")).get("proposals", [])
        except FileNotFoundError:
            raise NotFound("nothing is staged; run `vaultmem promote` first to see and stage proposals") from None
        except ValueError:
            raise BadInput(f"{vault.staged_promotions} is not valid JSON; run `vaultmem promote` again") from None
        done = []
        for item in staged:
            try:
                note = vault.get(item["id"])
            except (NotFound, NoteError, BadInput):
                continue
            earned = next_tier(note, now, vault.config)
            if note.tier != item.get("from") or earned is None:
                continue  # changed since staging: the next `promote` re-plans it
            target = item["to"] if TIERS.index(item["to"]) <= TIERS.index(earned[0]) else earned[0]
            vault.update_note(
                note.id,
                lambda n, t=target: {"tier": t, "promoted": now, "updated": now},
                op="promote",
                detail={"from": note.tier, "to": target, "reason": item.get("reason", "")},
            )
            done.append({**item, "to": target})
        vault.staged_promotions.unlink(missing_ok=True)
        return done


def set_tier(vault, note_id: str, tier: str, reason: str = "set by hand") -> Note:
    """Promote or demote one memory explicitly (a person's call, not evidence)."""
    tier = tier.upper()
    if tier not in TIERS:
        raise BadInput(f"unknown tier {tier!r}; use one of: {', '.join(TIERS)}")
    now = clock.now()
    _before, after = vault.update_note(
        note_id,
        lambda n: {"tier": tier, "promoted": now, "updated": now} if n.tier != tier else {},
        op="promote",
        detail={"to": tier, "reason": reason},
    )
    return after
