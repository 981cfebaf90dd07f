"""Tiers are earned: the evidence a memory gathers and the gates that promote it. Pure.

    L0 observed    captured from a session, not yet confirmed
    L1 remembered  a memory in its own right (what `add` writes)
    L2 session     loaded into every session's prompt
    L3 durable     holds across projects

Evidence is recurrence: the memory was added again (a near-duplicate add
counts for the existing note) or graded good/easy after being recalled. Each
act records its session, its calendar day and its project in the note's
flat `sessions`, `days` and `projects` lists, so a person can read in
Obsidian why a memory was promoted. Recall alone writes nothing (reading
must not churn git), so a memory gains evidence by being used and graded.

Gates (config `promotion:`): L0 -> L1 after `l1_sessions` sessions (or at
once if stated explicitly); L1 -> L2 after `l2_sessions` sessions over
`l2_days` days (`l2_sessions_explicit` if stated explicitly); L2 -> L3 once
held in `l3_projects` projects and at L2 for `l3_days_held` days. Contested
and redacted memories never promote on evidence alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from vaultmem.config import Config
from vaultmem.core.model import TIERS, Note, Tier

# Evidence lists keep the most recent entries only: enough for every gate,
# and a memory used daily for years does not grow a thousand-line property.
MAX_EVIDENCE = 20


def session_key(session: str, day: str) -> str:
    """A session id, or for acts outside any agent session, the day (one session per day)."""
    return session or f"day-{day}"


def with_evidence(note: Note, session: str, project: str, now: datetime, explicit: bool = False) -> dict:
    """Property changes recording one more act of recurrence for `note`."""
    day = now.date().isoformat()
    changes = {
        "sessions": _added(note.sessions, session_key(session, day)),
        "days": _added(note.days, day),
        "projects": _added(note.projects, project) if project else note.projects,
    }
    if explicit and not note.explicit:
        changes["explicit"] = True
    return {k: v for k, v in changes.items() if getattr(note, k) != v}


def _added(items: tuple[str, ...], item: str) -> tuple[str, ...]:
    if item in items:
        return items
    return (*items, item)[-MAX_EVIDENCE:]


@dataclass(frozen=True)
class Proposal:
    note: Note
    to_tier: Tier
    reason: str

    def as_dict(self) -> dict:
        return {"id": self.note.id, "path": self.note.path, "from": self.note.tier, "to": self.to_tier,
                "reason": self.reason}


def blocked(note: Note) -> str | None:
    """Why a memory may not promote on evidence at all (None if it may)."""
    if note.is_hidden:
        return f"it is {note.status}"
    if note.contested:
        return "it is contested"
    if note.redacted:
        return "it was redacted"
    return None


def next_tier(note: Note, now: datetime, config: Config) -> tuple[str, str] | None:
    """(tier, reason) the evidence earns beyond the current tier, or None."""
    if blocked(note):
        return None
    tier, reasons = note.tier, []
    sessions, days, projects = len(note.sessions), len(note.days), len(note.projects)
    if tier == "L0" and (note.explicit or sessions >= config.l1_sessions):
        tier = "L1"
        reasons.append("stated explicitly" if note.explicit else f"seen in {sessions} sessions")
    if tier == "L1":
        needed = config.l2_sessions_explicit if note.explicit else config.l2_sessions
        if sessions >= needed and days >= config.l2_days:
            tier = "L2"
            reasons.append(f"{sessions} sessions over {days} days" + (" (stated explicitly)" if note.explicit else ""))
    if tier == "L2" and note.tier == "L2":
        held_since = note.promoted or note.created
        held_days = (now - held_since).total_seconds() / 86400
        if projects >= config.l3_projects and held_days >= config.l3_days_held:
            tier = "L3"
            reasons.append(f"held in {projects} projects, at L2 for {held_days:.0f} days, uncontested")
    if TIERS.index(tier) <= TIERS.index(note.tier):
        return None
    return tier, "; ".join(reasons)


def plan_promotions(notes: list[Note], now: datetime, config: Config) -> list[Proposal]:
    """Every memory whose evidence earns a higher tier, highest target first."""
    proposals = []
    for note in notes:
        earned = next_tier(note, now, config)
        if earned:
            proposals.append(Proposal(note, *earned))
    proposals.sort(key=lambda p: (-TIERS.index(p.to_tier), p.note.path))
    return proposals
