"""Neighbour context: the memory said just before this one, in the same conversation.

A reply is understood from the turn it answers: "yes, last weekend, it was great!"
holds the answer to "what did Caroline do last weekend?" only together with the
question before it ("did you go hiking?"). So a memory gains a share of the
relevance of its predecessor in the conversation (with_neighbour_context).

The order of a conversation comes from the files alone, so a reindex rebuilds it:
a memory's session is the first of its `sessions` (the session `add` recorded it
in; provenance.py), and its place in the session is its `created` time. Memories
of one session with the same `created` second have no order between them (none is
the predecessor of another); neither have memories added by hand outside any
session (their session is the day, `day-YYYY-MM-DD`: not one conversation), nor
two more than NEIGHBOUR_GAP_S apart. Nothing is written: the order lives in the
engine's memory, built from the catalog and kept in step with its change feed.

Ranking only: the neighbour's share never makes a hit pass the relevance floor
(search/relevance.py judges a note by its own words and meaning), so a note with
no evidence of its own cannot enter the results on its neighbour's.

Pure: imports no other vaultmem module.
"""

from __future__ import annotations

import bisect
from datetime import datetime

# A memory gains this share of its predecessor's score. Set once, a priori (a third of
# what the turn it answers says); bench/locomo.py reports it per conversation.
NEIGHBOUR_WEIGHT = 0.3
NEIGHBOUR_GAP_S = 3600.0  # further apart than this, two memories of a session are not neighbours
_NO_SESSION_PREFIX = "day-"  # tiers.session_key: acts outside any agent session count per day


def conversation_of(session: str | None) -> str | None:
    """The conversation of a memory first recorded in `session`, or None for none."""
    return session if session and not session.startswith(_NO_SESSION_PREFIX) else None


class SessionOrder:
    """Per session, its memories sorted by `created` (epoch seconds); per memory, where it is."""

    def __init__(self):
        self._place: dict[str, tuple[str, float]] = {}  # path -> (session, created)
        self._sessions: dict[str, list[tuple[float, str]]] = {}  # session -> [(created, path)] sorted

    @classmethod
    def of(cls, rows) -> "SessionOrder":
        """From (path, first session, created) rows (Catalog.session_order)."""
        order = cls()
        for path, session, created in rows:
            order.put(path, session, created)
        return order

    def put(self, path: str, session: str | None, created: datetime | None) -> None:
        """Place (or move) the memory at `path`: first recorded in `session`, at `created`."""
        self.drop(path)
        session = conversation_of(session)
        if session is None or created is None:
            return
        when = created.timestamp()
        self._place[path] = (session, when)
        bisect.insort(self._sessions.setdefault(session, []), (when, path))

    def drop(self, path: str) -> None:
        place = self._place.pop(path, None)
        if place is None:
            return
        items = self._sessions[place[0]]
        items.remove((place[1], path))
        if not items:
            del self._sessions[place[0]]

    def _where(self, path: str) -> tuple[list[tuple[float, str]], float] | None:
        """(its session's memories in order, its own time), or None for a memory with no order."""
        place = self._place.get(path)
        return None if place is None else (self._sessions[place[0]], place[1])

    def predecessor(self, path: str) -> str | None:
        """The memory said last before `path` in its session (at an earlier second, within the gap)."""
        where = self._where(path)
        if where is None:
            return None
        items, when = where
        i = bisect.bisect_left(items, (when, ""))
        if i == 0:
            return None
        before_when = items[i - 1][0]
        if when - before_when > NEIGHBOUR_GAP_S:
            return None
        # Several memories at that second: no one of them is the one just before.
        if i >= 2 and items[i - 2][0] == before_when:
            return None
        return items[i - 1][1]

    def successor(self, path: str) -> str | None:
        """The memory whose predecessor `path` is, if any."""
        where = self._where(path)
        if where is None:
            return None
        items, when = where
        i = bisect.bisect_right(items, (when, "\U0010ffff"))
        after = items[i][1] if i < len(items) else None
        return after if after and self.predecessor(after) == path else None


def with_neighbour_context(fused: list, predecessor, weight: float | None = None) -> list:
    """Each candidate gains `weight` times its predecessor's own score (when the predecessor is a
    candidate too), best first again. `fused`: [(path, score, signals)]; `predecessor`: path -> path
    or None. The signals that abstention and --explain show stay the note's own, plus
    `neighbour` (what was added)."""
    weight = NEIGHBOUR_WEIGHT if weight is None else weight
    own = {path: score for path, score, _s in fused}
    out = []
    for path, score, signals in fused:
        before = predecessor(path)
        share = weight * own.get(before, 0.0) if before else 0.0
        if share:
            signals["neighbour"] = round(share, 4)
        out.append((path, score + share, signals))
    out.sort(key=lambda item: (-item[1], item[0]))
    return out
