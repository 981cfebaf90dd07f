"""Recall: find the memories that answer a query, best first.

Two rankings of the vault's notes are fused:
- lexical: Whoosh BM25F over title, body, tags and namespace (index/bm25.py);
- semantic: cosine similarity of sentence embeddings (index/embed.py, cached
  in index/vectors.py), which finds a memory when the words differ. Below the
  model's `min_similarity` a note is not a match, so a query about nothing in
  the vault returns nothing rather than the least unrelated notes.

Fusion (`fuse`) adds the two signals, each on a 0..1 scale, over the union
of both candidate lists, then applies two mild multipliers, so relevance
decides and memory state only breaks near-ties:

    lexical    = bm25 / best bm25 of this query * coverage
                 (coverage: the IDF-weighted share of the query's terms the
                  note contains, so one common word matched is weak evidence)
    semantic   = (cosine - floor) / (1 - floor), at least 0
                 (floor: the model's min_similarity, below which texts are unrelated)
    relevance  = 0.5 * lexical + 0.5 * semantic
    confidence = 0.5 * R + 0.5 * strength     (R: FSRS retrievability now;
                                                0.9 for a never-graded note)
    time       = 1.25 if the note was created in a window the query names
                 ("last spring", "in March 2024"), else 1
    score      = relevance * (0.8 + 0.2 * confidence) * time

Adding scores rather than fusing ranks (RRF) keeps the weaker signal from
dragging the stronger one down: a note that ranks 1st lexically on one word
and a note that matches the query's meaning are not equals.

Then newer beats older: when two results are on the same subject (same
namespace, and cosine >= 0.9, or cosine >= 0.65 with at least 60% of the
shorter note's content words shared), the newer one is placed above the
older, unless the query asks how things were ("before we switched", "used
to") or names a time window. A relevant memory whose retrievability is low still surfaces, labelled
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

from vaultmem import clock
from vaultmem.core.model import HIDDEN_STATUSES, STATUSES, Note
from vaultmem.core.schedule import label, retrievability
from vaultmem.core.timeq import time_intent
from vaultmem.errors import ModelUnavailable

VISIBLE_STATUSES = tuple(s for s in STATUSES if s not in HIDDEN_STATUSES)
LEXICAL_WEIGHT = 0.5
CANDIDATES = 30
SAME_SUBJECT_COSINE = 0.9
SAME_SUBJECT_MIN_COSINE = 0.65
SAME_SUBJECT_OVERLAP = 0.6
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
        from vaultmem.search.bm25 import Bm25Index

        self.vault = vault
        self.bm25 = Bm25Index(vault.state_dir / "index" / "bm25")
        self.use_embeddings = use_embeddings
        self.embedder = None
        self.model_problem: str | None = None
        self.vectors = None
        self._notes_by_path: dict[str, Note] = {}
        self._by_id: dict[str, Note] = {}
        self._masks: dict = {}
        self._synced_catalog = None
        self._lock = threading.RLock()
        self._file_lock = None
        self._synced_at = 0.0

    # ------------------------------------------------------------ model

    def model_spec(self) -> str:
        return os.environ.get("VAULTMEM_MODEL") or self.vault.config.model

    def _load_model(self) -> None:
        if self.embedder is not None or self.model_problem is not None or not self.use_embeddings:
            return
        from vaultmem.search.embed import load_embedder
        from vaultmem.search.vectors import VectorStore, folder_name

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
            if catalog is self._synced_catalog and not rebuild:
                return {"indexed": 0, "embedded": 0, "notes": len(self._notes_by_path)}
            entries = {p: (e.note, e.stamp) for p, e in catalog.entries.items() if e.note is not None}
            embedded = 0
            self._load_model()
            with self._index_lock():
                changed = self.bm25.sync(entries, rebuild=rebuild)
                if self.vectors is not None:
                    embedded = self.vectors.sync({p: (stamp, n) for p, (n, stamp) in entries.items()},
                                                 self.embedder, text_of=embed_text)
                    self.vectors.save()
            self._set_notes(entries)
            self._synced_catalog = catalog
            return {"indexed": changed, "embedded": embedded, "notes": len(entries)}

    def _index_lock(self):
        """Processes bringing the same indexes in step take turns (Whoosh allows one writer)."""
        from filelock import FileLock

        if self._file_lock is None:
            self.vault.state_dir.mkdir(parents=True, exist_ok=True)
            self._file_lock = FileLock(str(self.vault.state_dir / "index.lock"), timeout=300)
        return self._file_lock

    def apply(self, paths) -> dict:
        """Re-read just `paths` (relative; the watcher's events) and update both indexes."""
        from vaultmem.store.catalog import refresh_paths

        with self._lock:
            if not self._synced_at:
                return self.sync()
            catalog, touched = refresh_paths(self.vault.root, self.vault.catalog(), paths, self.vault.read_note)
            self.vault.adopt_catalog(catalog)
            self._synced_catalog = catalog
            if not touched:
                return {"indexed": 0, "embedded": 0, "notes": len(self._notes_by_path)}
            changed = {p: (catalog.entries[p].note, catalog.entries[p].stamp) for p in touched
                       if p in catalog.entries and catalog.entries[p].note is not None}
            removed = [p for p in touched if p not in changed]
            embedded = 0
            with self._index_lock():
                indexed = self.bm25.update(changed, removed, persist=False)
                if self.vectors is not None:
                    embedded = self.vectors.update({p: (s, embed_text(n)) for p, (n, s) in changed.items()},
                                                   removed, self.embedder)
            entries = {p: (e.note, e.stamp) for p, e in catalog.entries.items() if e.note is not None}
            self._set_notes(entries)
            return {"indexed": indexed, "embedded": embedded, "notes": len(entries)}

    def status(self) -> dict:
        """How current the caches are and whether the model loads (for `health`); writes nothing."""
        from vaultmem.search.vectors import VectorStore, folder_name

        stamps = {p: list(e.stamp) for p, e in self.vault.catalog().entries.items() if e.note is not None}
        indexed = self.bm25._manifest()["stamps"] if self.bm25.manifest_file.exists() else {}
        stale_index = (sum(1 for p, s in stamps.items() if indexed.get(p) != s)
                       + sum(1 for p in indexed if p not in stamps))
        self._load_model()
        stale_vectors = None
        if self.embedder is not None:
            store = self.vectors if self.vectors is not None else VectorStore(
                self.vault.state_dir / "index" / "vectors" / folder_name(self.embedder.name), self.embedder.name)
            stale_vectors = sum(1 for p, s in stamps.items() if store.stamp_of_path.get(p, [None])[0] != s)
        return {"model": self.embedder.name if self.embedder else None, "model_problem": self.model_problem,
                "index_stale": stale_index, "embeddings_stale": stale_vectors}

    def warm_up(self) -> None:
        """Open the searcher and run the model once, so the first real query is not the slow one."""
        with self._lock:
            if not self._synced_at:
                self.sync()
            self._search("warm up", 1, None, None, False, clock.now())

    def save(self) -> None:
        """Persist what is only in memory (the embedding cache)."""
        with self._lock:
            self.bm25.save_manifest()
            if self.vectors is not None:
                self.vectors.save()

    def _set_notes(self, entries: dict) -> None:
        self._masks = {}
        self._notes_by_path = {p: n for p, (n, _s) in entries.items()}
        self._by_id = {n.id: n for n in self._notes_by_path.values()}
        self._synced_at = time.monotonic()

    # ------------------------------------------------------------ search

    def recall(self, query: str, top_k: int | None = None, namespace: str | None = None,
               kind: str | None = None, include_hidden: bool | str = False, sync: bool = True, now=None) -> list[Hit]:
        """The `top_k` notes that best answer `query`.

        `include_hidden`: True for every status, "history" to add superseded
        notes (what was believed before). `sync=False` skips the freshness
        scan: for a caller that keeps the engine current itself (the watcher).
        """
        with self._lock:
            if sync or not self._synced_at:
                self.sync()
            return self._search(query, top_k or self.vault.config.recall_top_k, namespace, kind, include_hidden,
                                now or clock.now())

    def similar(self, text: str, namespace: str, kind: str | None = None,
                limit: int = 8) -> list[tuple[Note, float | None]]:
        """Visible notes of exactly `namespace` closest to `text`, for `add`.

        Lexical and semantic candidates, each with its similarity to `text` on
        the model's own scale: 0 at its `min_similarity` (unrelated), 1 for the
        same text; None when the model is unavailable.
        """
        with self._lock:
            self.sync()
            lexical = self.bm25.search(text, limit=limit, namespace=namespace, kind=kind, statuses=VISIBLE_STATUSES)
            paths = [self._by_id[i].path for i, _s, _c in lexical if i in self._by_id]
            cosines: dict[str, float] = {}
            if self.vectors is not None:
                vector = self.embedder.embed([text], kind="passage")[0]
                cosines = self._cosines(vector, self._mask(namespace, kind, False), limit, paths)
            floor = getattr(self.embedder, "min_similarity", 0.0) if self.embedder is not None else 0.0
            found = []
            for path in dict.fromkeys([*paths, *cosines]):
                note = self._notes_by_path.get(path)
                if note is None or note.namespace != namespace or note.is_hidden:
                    continue
                cosine = cosines.get(path)
                found.append((note, None if cosine is None else max(0.0, (cosine - floor) / (1.0 - floor))))
            found.sort(key=lambda item: -(item[1] or 0.0))
            return found

    def _mask(self, namespace, kind, include_hidden):
        """Which rows of the vector store a query may return, cached until the notes change."""
        import numpy as np

        key = (namespace, kind, include_hidden)
        if key not in self._masks:
            notes = self._notes_by_path
            self._masks[key] = np.fromiter(
                (p in notes and self._allowed(notes[p], namespace, kind, include_hidden) for p in self.vectors.paths),
                dtype=bool, count=len(self.vectors.paths))
        return self._masks[key]

    def _allowed(self, note: Note, namespace, kind, include_hidden) -> bool:
        if note.is_hidden and not (include_hidden is True
                                   or (include_hidden == "history" and note.status == "superseded")):
            return False
        if kind and note.type != kind:
            return False
        if namespace:
            ns = namespace.strip("/")
            if note.namespace != ns and not note.namespace.startswith(ns + "/"):
                return False
        return True

    def _search(self, query, top_k, namespace, kind, include_hidden, now) -> list[Hit]:
        statuses = {True: None, "history": (*VISIBLE_STATUSES, "superseded")}.get(include_hidden, VISIBLE_STATUSES)
        limit = max(CANDIDATES, top_k * 3)
        lexical = self.bm25.search(query, limit=limit, namespace=namespace, kind=kind, statuses=statuses)
        lexical_paths = []
        for note_id, score, coverage in lexical:
            note = self._by_id.get(note_id)
            if note is not None:
                lexical_paths.append((note.path, score, coverage))
        cosines: dict[str, float] = {}
        floor = 0.0
        if self.vectors is not None and query.strip():
            mask = self._mask(namespace, kind, include_hidden)
            query_vector = self.embedder.embed([query], kind="query")[0]
            floor = getattr(self.embedder, "min_similarity", 0.0)
            cosines = self._cosines(query_vector, mask, limit, [p for p, _s, _c in lexical_paths], floor)
        intent = time_intent(query, now)
        fused = fuse(lexical_paths, cosines, floor, self._notes_by_path, now, self.vault.config, intent)
        fused = self._newer_first(fused, intent)
        hits = []
        for path, score, signals in fused[:top_k]:
            note = self._notes_by_path[path]
            hits.append(Hit(note, score, label(note, now, self.vault.config), signals))
        return hits

    def _cosines(self, vector, mask, limit: int, also: list[str], floor: float = float("-inf")) -> dict[str, float]:
        """Cosine to `vector` of the `limit` nearest allowed notes (those at or above
        `floor`), and of every path in `also` (the lexical candidates), whatever it is."""
        cosines = {p: s for p, s in self.vectors.search(vector, limit=limit, mask=mask) if s >= floor}
        for path in also:
            if path not in cosines and (row := self.vectors.vector_of(path)) is not None:
                cosines[path] = float(row @ vector)
        return cosines

    def _same_subject(self, a: Note, b: Note) -> bool:
        """Two memories about the same thing: close in meaning and mostly the same words.

        Embeddings alone cannot tell "we deploy with Jenkins" / "with GitHub
        Actions" (an update, cosine ~0.72) from two chat lines about one topic
        (also ~0.75); shared content words can.
        """
        va, vb = self.vectors.vector_of(a.path), self.vectors.vector_of(b.path)
        if va is None or vb is None:
            return False
        cosine = float(va @ vb)
        if cosine >= SAME_SUBJECT_COSINE:
            return True
        if cosine < SAME_SUBJECT_MIN_COSINE:
            return False
        ta, tb = _content_terms(a), _content_terms(b)
        return bool(ta and tb) and len(ta & tb) / min(len(ta), len(tb)) >= SAME_SUBJECT_OVERLAP

    def _newer_first(self, fused: list, intent) -> list:
        """Same subject, same namespace: the newer memory goes above the older one."""
        if self.vectors is None or intent.prefer == "older" or intent.has_window or len(fused) < 2:
            return fused
        head = fused[: max(10, CANDIDATES // 2)]
        order = list(head)
        for i in range(len(head)):
            for j in range(i + 1, len(head)):
                older_path, newer_path = head[i][0], head[j][0]
                older, newer = self._notes_by_path[older_path], self._notes_by_path[newer_path]
                if newer.created <= older.created or newer.namespace != older.namespace:
                    continue
                if not self._same_subject(older, newer):
                    continue
                pos_old = next(k for k, item in enumerate(order) if item[0] == older_path)
                pos_new = next(k for k, item in enumerate(order) if item[0] == newer_path)
                if pos_new > pos_old:
                    item = order.pop(pos_new)
                    item[2]["moved_above"] = older.id
                    order.insert(pos_old, item)
        return order + fused[len(head):]


def _content_terms(note: Note) -> frozenset[str]:
    from vaultmem.search.bm25 import _query_analyzer

    return frozenset(t.text for t in _query_analyzer()(note.text))


def scope(include_hidden: bool = False, history: bool = False) -> bool | str:
    """Which hidden notes a recall may return: all (True), superseded ones ("history"), or none."""
    return True if include_hidden else ("history" if history else False)


def fuse(lexical: list[tuple[str, float, float]], cosines: dict[str, float], semantic_floor: float,
         notes: dict, now, config, intent=None) -> list[tuple[str, float, dict]]:
    """Score fusion of the two signals, weighted by memory state and time (see module doc).

    `lexical`: [(path, bm25, coverage)] best first; `cosines`: path -> cosine
    for every candidate (from either ranking).
    """
    top_bm25 = max((score for _p, score, _c in lexical), default=0.0) or 1.0
    signals: dict[str, dict] = {}
    for rank, (path, score, coverage) in enumerate(lexical, start=1):
        signals[path] = {"bm25": round(score, 4), "bm25_rank": rank, "coverage": round(coverage, 3),
                         "lexical": score / top_bm25 * coverage}
    for path, cosine in cosines.items():
        entry = signals.setdefault(path, {"lexical": 0.0})
        entry["cosine"] = round(cosine, 4)
        entry["semantic"] = max(0.0, (cosine - semantic_floor) / (1.0 - semantic_floor))
    results = []
    for path, s in signals.items():
        note = notes.get(path)
        if note is None:
            continue
        relevance = LEXICAL_WEIGHT * s.pop("lexical") + (1 - LEXICAL_WEIGHT) * s.pop("semantic", 0.0)
        r = retrievability(note, now, config)
        confidence = 0.5 * (NEVER_GRADED_RETRIEVABILITY if r is None else r) + 0.5 * note.strength
        in_window = bool(intent and intent.has_window and intent.contains(note.created))
        score = relevance * (0.8 + 0.2 * confidence) * (TIME_WINDOW_BOOST if in_window else 1.0)
        s.update(relevance=round(relevance, 4), retrievability=None if r is None else round(r, 4),
                 strength=note.strength, in_time_window=in_window)
        results.append((path, score, s))
    results.sort(key=lambda item: (-item[1], item[0]))
    return results


# ---------------------------------------------------------------- module-level API

_ENGINES: dict = {}


def engine_for(vault) -> RecallEngine:
    """One engine per vault folder in this process (API users get warm indexes)."""
    key = (str(vault.root), os.environ.get("VAULTMEM_MODEL") or vault.config.model)
    engine = _ENGINES.get(key)
    if engine is None or engine.vault.config != vault.config:
        engine = _ENGINES[key] = RecallEngine(vault)
    return engine


def rebuild_indexes(vault) -> dict:
    """Delete every derived cache of the vault and build it again from the notes."""
    import shutil

    for key in [k for k in _ENGINES if k[0] == str(vault.root)]:
        del _ENGINES[key]
    for cache in (vault.cache_dir, vault.state_dir / "index"):
        if cache.exists():
            shutil.rmtree(cache)
    vault.forget_catalog()
    return engine_for(vault).sync(rebuild=True)


def recall(vault, query: str, top_k: int | None = None, namespace: str | None = None,
           kind: str | None = None, include_hidden: bool = False) -> list[Hit]:
    """The `top_k` notes that best answer `query` (see the module doc for how)."""
    return engine_for(vault).recall(query, top_k, namespace, kind, include_hidden)
