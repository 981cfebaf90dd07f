"""Recall: find the memories that answer a query, best first.

Two rankings of the vault's notes are fused:
- lexical: Whoosh BM25F over title, body, tags and namespace (index/bm25.py);
- semantic: cosine similarity of sentence embeddings (index/embed.py, cached
  in index/vectors.py), which finds a memory when the words differ. Below the
  model's `min_similarity` a note is not a match, so a query about nothing in
  the vault returns nothing rather than the least unrelated notes.

Fusion (`fuse`) is reciprocal rank fusion, K = 60, of the two ranks, then two
mild multipliers, so relevance decides and memory state only breaks near-ties:

    rrf        = sum over rankings of 1 / (60 + rank)
    confidence = 0.5 * R + 0.5 * strength     (R: FSRS retrievability now;
                                                0.9 for a never-graded note)
    time       = 1.25 if the note was created in a window the query names
                 ("last spring", "in March 2024"), else 1
    score      = rrf * (0.8 + 0.2 * confidence) * time

Then newer beats older: when two results are on the same subject (cosine of
their embeddings >= 0.8, same namespace), the newer one is placed above the
older, unless the query asks how things were ("before we switched", "used
to"). A relevant memory whose retrievability is low still surfaces, labelled
`fading` or `weak`, so the agent can reinforce it.

Archived, suspended and superseded notes are left out unless asked for.
Before answering, the engine brings the indexes in step with the files (a
stat scan, or the watcher's events), so recall is never stale. If the
embedding model cannot load, recall is lexical only and says why.
Reading only: recall never writes a note.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from . import clock
from .errors import ModelUnavailable
from .model import HIDDEN_STATUSES, STATUSES, Note
from .schedule import label, retrievability
from .timeq import time_intent

VISIBLE_STATUSES = tuple(s for s in STATUSES if s not in HIDDEN_STATUSES)
RRF_K = 60
CANDIDATES = 50
SAME_SUBJECT_COSINE = 0.8
NEVER_GRADED_RETRIEVABILITY = 0.9
TIME_WINDOW_BOOST = 1.25


@dataclass(frozen=True)
class Hit:
    note: Note
    score: float
    label: str
    signals: dict = field(default_factory=dict)


def embed_text(note: Note) -> str:
    """What gets embedded for a note: its text without markdown heading marks, plus tags."""
    lines = [line.lstrip("#").strip() for line in note.body.splitlines()]
    text = " ".join(line for line in lines if line)
    if note.tags:
        text += " (" + ", ".join(note.tags) + ")"
    return text


class RecallEngine:
    """Indexes of one vault, loaded once and kept in step with its files.

    A CLI call builds one per process; the watcher and long-lived API users
    keep one, so queries skip model loading and index opening.
    """

    def __init__(self, vault, use_embeddings: bool = True):
        from .index.bm25 import Bm25Index

        self.vault = vault
        self.bm25 = Bm25Index(vault.state_dir / "index" / "bm25")
        self.use_embeddings = use_embeddings
        self.embedder = None
        self.model_problem: str | None = None
        self.vectors = None
        self._notes_by_path: dict[str, Note] = {}
        self._by_id: dict[str, Note] = {}
        self._lock = threading.RLock()
        self._synced_at = 0.0

    # ------------------------------------------------------------ model

    def model_spec(self) -> str:
        return os.environ.get("VAULTMEM_MODEL") or self.vault.config.model

    def _load_model(self) -> None:
        if self.embedder is not None or self.model_problem is not None or not self.use_embeddings:
            return
        from .index.embed import load_embedder
        from .index.vectors import VectorStore, folder_name

        try:
            spec = self.model_spec()
            self.embedder = load_embedder(None if spec == "default" else spec)
        except ModelUnavailable as exc:
            self.model_problem = str(exc)
            return
        folder = self.vault.state_dir / "index" / "vectors" / folder_name(self.embedder.name)
        self.vectors = VectorStore(folder, self.embedder.name)

    # ------------------------------------------------------------ keeping in step

    def sync(self, rebuild: bool = False) -> dict:
        """Bring both indexes in step with the files (a stat scan); returns what was updated."""
        with self._lock:
            catalog = self.vault.catalog(fresh=True)
            entries = {p: (e.note, e.stamp) for p, e in catalog.entries.items() if e.note is not None}
            changed = self.bm25.sync(entries, rebuild=rebuild)
            embedded = 0
            self._load_model()
            if self.vectors is not None:
                embedded = self.vectors.sync({p: (stamp, embed_text(n)) for p, (n, stamp) in entries.items()},
                                             self.embedder)
                self.vectors.save()
            self._set_notes(entries)
            return {"indexed": changed, "embedded": embedded, "notes": len(entries)}

    def apply(self, paths) -> dict:
        """Re-read just `paths` (relative; the watcher's events) and update both indexes."""
        from .catalog import refresh_paths

        with self._lock:
            if not self._synced_at:
                return self.sync()
            catalog, touched = refresh_paths(self.vault.root, self.vault.catalog(), paths, self.vault.read_note)
            self.vault.adopt_catalog(catalog)
            if not touched:
                return {"indexed": 0, "embedded": 0, "notes": len(self._notes_by_path)}
            changed = {p: (catalog.entries[p].note, catalog.entries[p].stamp) for p in touched
                       if p in catalog.entries and catalog.entries[p].note is not None}
            removed = [p for p in touched if p not in changed]
            indexed = self.bm25.update(changed, removed)
            embedded = 0
            if self.vectors is not None:
                embedded = self.vectors.update({p: (s, embed_text(n)) for p, (n, s) in changed.items()},
                                               removed, self.embedder)
            entries = {p: (e.note, e.stamp) for p, e in catalog.entries.items() if e.note is not None}
            self._set_notes(entries)
            return {"indexed": indexed, "embedded": embedded, "notes": len(entries)}

    def warm_up(self) -> None:
        """Open the searcher and run the model once, so the first real query is not the slow one."""
        with self._lock:
            if not self._synced_at:
                self.sync()
            self._search("warm up", 1, None, None, False, clock.now())

    def save(self) -> None:
        """Persist what is only in memory (the embedding cache)."""
        with self._lock:
            if self.vectors is not None:
                self.vectors.save()

    def _set_notes(self, entries: dict) -> None:
        self._notes_by_path = {p: n for p, (n, _s) in entries.items()}
        self._by_id = {n.id: n for n in self._notes_by_path.values()}
        self._synced_at = time.monotonic()

    # ------------------------------------------------------------ search

    def recall(self, query: str, top_k: int | None = None, namespace: str | None = None,
               kind: str | None = None, include_hidden: bool = False, sync: bool = True, now=None) -> list[Hit]:
        """The `top_k` notes that best answer `query`.

        `sync=False` skips the freshness scan: for a caller that keeps the
        engine current itself (the watcher).
        """
        with self._lock:
            if sync or not self._synced_at:
                self.sync()
            return self._search(query, top_k or self.vault.config.recall_top_k, namespace, kind, include_hidden,
                                now or clock.now())

    def _allowed(self, note: Note, namespace, kind, include_hidden) -> bool:
        if not include_hidden and note.is_hidden:
            return False
        if kind and note.type != kind:
            return False
        if namespace:
            ns = namespace.strip("/")
            if note.namespace != ns and not note.namespace.startswith(ns + "/"):
                return False
        return True

    def _search(self, query, top_k, namespace, kind, include_hidden, now) -> list[Hit]:
        import numpy as np

        statuses = None if include_hidden else VISIBLE_STATUSES
        limit = max(CANDIDATES, top_k * 3)
        lexical = self.bm25.search(query, limit=limit, namespace=namespace, kind=kind, statuses=statuses)
        lexical_paths = []
        for note_id, score in lexical:
            note = self._by_id.get(note_id)
            if note is not None:
                lexical_paths.append((note.path, score))
        semantic = []
        if self.vectors is not None and query.strip():
            mask = np.fromiter((self._allowed(self._notes_by_path[p], namespace, kind, include_hidden)
                                if p in self._notes_by_path else False for p in self.vectors.paths),
                               dtype=bool, count=len(self.vectors.paths))
            query_vector = self.embedder.embed([query], kind="query")[0]
            floor = getattr(self.embedder, "min_similarity", 0.0)
            semantic = [(p, s) for p, s in self.vectors.search(query_vector, limit=limit, mask=mask) if s >= floor]
        intent = time_intent(query, now)
        fused = fuse(lexical_paths, semantic, self._notes_by_path, now, self.vault.config, intent)
        fused = self._newer_first(fused, intent)
        hits = []
        for path, score, signals in fused[:top_k]:
            note = self._notes_by_path[path]
            hits.append(Hit(note, score, label(note, now, self.vault.config), signals))
        return hits

    def _newer_first(self, fused: list, intent) -> list:
        """Same subject, same namespace: the newer memory goes above the older one."""
        if self.vectors is None or intent.prefer == "older" or len(fused) < 2:
            return fused
        head = fused[: max(10, CANDIDATES // 2)]
        order = list(head)
        for i in range(len(head)):
            for j in range(i + 1, len(head)):
                older_path, newer_path = head[i][0], head[j][0]
                older, newer = self._notes_by_path[older_path], self._notes_by_path[newer_path]
                if newer.created <= older.created or newer.namespace != older.namespace:
                    continue
                a, b = self.vectors.vector_of(older_path), self.vectors.vector_of(newer_path)
                if a is None or b is None or float(a @ b) < SAME_SUBJECT_COSINE:
                    continue
                pos_old = next(k for k, item in enumerate(order) if item[0] == older_path)
                pos_new = next(k for k, item in enumerate(order) if item[0] == newer_path)
                if pos_new > pos_old:
                    item = order.pop(pos_new)
                    item[2]["moved_above"] = older.id
                    order.insert(pos_old, item)
        return order + fused[len(head):]


def fuse(lexical: list[tuple[str, float]], semantic: list[tuple[str, float]], notes: dict, now, config,
         intent=None) -> list[tuple[str, float, dict]]:
    """Reciprocal rank fusion of the two rankings, weighted by memory state and time (see module doc)."""
    signals: dict[str, dict] = {}
    for rank, (path, score) in enumerate(lexical, start=1):
        signals.setdefault(path, {})["bm25"] = round(score, 4)
        signals[path]["bm25_rank"] = rank
    for rank, (path, score) in enumerate(semantic, start=1):
        signals.setdefault(path, {})["cosine"] = round(score, 4)
        signals[path]["cosine_rank"] = rank
    results = []
    for path, s in signals.items():
        note = notes.get(path)
        if note is None:
            continue
        rrf = sum(1.0 / (RRF_K + s[key]) for key in ("bm25_rank", "cosine_rank") if key in s)
        r = retrievability(note, now, config)
        confidence = 0.5 * (NEVER_GRADED_RETRIEVABILITY if r is None else r) + 0.5 * note.strength
        in_window = bool(intent and intent.has_window and intent.contains(note.created))
        score = rrf * (0.8 + 0.2 * confidence) * (TIME_WINDOW_BOOST if in_window else 1.0)
        s.update(rrf=round(rrf, 6), retrievability=None if r is None else round(r, 4),
                 strength=note.strength, in_time_window=in_window)
        results.append((path, score, s))
    results.sort(key=lambda item: (-item[1], item[0]))
    return results


# ---------------------------------------------------------------- module-level API

_ENGINES: dict = {}


def engine_for(vault) -> RecallEngine:
    """One engine per vault folder in this process (API users get warm indexes)."""
    key = str(vault.root)
    engine = _ENGINES.get(key)
    if engine is None or engine.vault.config != vault.config:
        engine = _ENGINES[key] = RecallEngine(vault)
    return engine


def sync_index(vault, rebuild: bool = False) -> dict:
    return engine_for(vault).sync(rebuild=rebuild)


def recall(vault, query: str, top_k: int | None = None, namespace: str | None = None,
           kind: str | None = None, include_hidden: bool = False) -> list[Hit]:
    """The `top_k` notes that best answer `query` (see the module doc for how)."""
    return engine_for(vault).recall(query, top_k, namespace, kind, include_hidden)
