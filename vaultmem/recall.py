"""Recall: find the memories that answer a query, best first.

The lexical signal is Whoosh BM25 over the vault (index/bm25.py), synced with
the files before every query, so recall is never stale even without the
watcher. Hidden notes (archived, suspended, superseded) are left out unless
asked for. Reading only: recall never writes a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import clock
from .index.bm25 import Bm25Index
from .model import HIDDEN_STATUSES, STATUSES, Note
from .schedule import label, retrievability

VISIBLE_STATUSES = tuple(s for s in STATUSES if s not in HIDDEN_STATUSES)


@dataclass(frozen=True)
class Hit:
    note: Note
    score: float
    label: str
    signals: dict = field(default_factory=dict)


def bm25_index(vault) -> Bm25Index:
    return Bm25Index(vault.state_dir / "index" / "bm25")


def sync_index(vault, rebuild: bool = False) -> int:
    """Index every note whose file changed since the last sync; returns how many."""
    catalog = vault.catalog()
    notes = {path: (entry.note, entry.stamp) for path, entry in catalog.entries.items() if entry.note is not None}
    return bm25_index(vault).sync(notes, rebuild=rebuild)


def recall(vault, query: str, top_k: int | None = None, namespace: str | None = None,
           kind: str | None = None, include_hidden: bool = False) -> list[Hit]:
    """The `top_k` notes that best match `query`."""
    top_k = top_k or vault.config.recall_top_k
    sync_index(vault)
    statuses = None if include_hidden else VISIBLE_STATUSES
    ranked = bm25_index(vault).search(query, limit=top_k, namespace=namespace, kind=kind, statuses=statuses)
    by_id = {n.id: n for n in vault.catalog().notes}
    now = clock.now()
    hits = []
    for rank, (note_id, score) in enumerate(ranked, start=1):
        note = by_id.get(note_id)
        if note is None:
            continue
        r = retrievability(note, now, vault.config)
        hits.append(Hit(note, score, label(note, now, vault.config),
                        {"bm25": round(score, 4), "bm25_rank": rank,
                         "retrievability": None if r is None else round(r, 4), "strength": note.strength}))
    return hits
