"""The notes' cross-lingual vectors, given a budget at a time.

A query routed to the cross-lingual model (search/crosslingual.py) is searched against that
model's own vectors of the notes (a second VectorStore; the view's `xrow`). Running the model
over every note of a 10k vault takes 20 s to 2 minutes (75-480 texts a second), so nobody
waits for all of it:

- matching (no model): which notes have a row for their current text (rows kept by earlier
  processes are reused), and which lack one; before every routed query and every batch;
- a batch: FILL_BATCH notes lacking a row. Their texts are read under the engine's lock,
  embedded without it, and stored under it and the index file lock: English recalls, edits
  and writes through the watcher wait at most for one store, never for the model;
- a routed recall embeds batches for about FILL_SECONDS (at least one), unless a fill is
  already under way, then answers with the notes that have a row (BM25 still sees every
  note), and says how many that is (`Coverage`);
- the watcher fills on a thread of its own (service/backfill.py): there a routed recall
  embeds only what one batch holds (the edits since the last one), and wakes the thread for
  more; `reindex` fills them all. A process killed mid-fill leaves whole batches (and at
  worst rows no note points to), and the next fill goes on.

Notes a recall shows by default come first, newest first: what an agent most likely asks about.

This module is a part of RecallEngine (search/engine.py) kept apart: it reads the engine's
view and catalog and takes its locks. It imports no model.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass

from vaultmem.store.files import file_identity

# A routed recall embeds notes lacking a cross-lingual vector for about this long (at least one
# batch), then answers: at USE's 75-480 texts/s, 40-240 notes per query; the hooks' budget is 3 s
# and USE's load takes 1.2-4 s of it. Time, not a count: the count that fits varies sixfold with
# the texts' length and the machine's load, and the wait is what a hook feels.
FILL_SECONDS = 0.5
# Notes embedded and stored together: one batch of the model (USE's throughput falls by half below
# 16 texts a batch) and the longest the engine's lock waits on a fill's store.
FILL_BATCH = 32
# Notes changed since the rows were last matched, kept by path; past this many (a watcher that saw
# a big import and no query in another language) the next match looks at every note instead.
DIRTY_MAX = 20_000
ROW_FIELD = "xrow"  # the view's field for a note's row in the cross-lingual vectors


@dataclass(frozen=True)
class Coverage:
    """How many of the notes a routed query searched by meaning; the rest only by words."""

    covered: int
    notes: int
    filling: bool  # a watcher is giving the rest theirs in the background

    @property
    def complete(self) -> bool:
        return self.covered >= self.notes

    def as_dict(self) -> dict:
        return {"covered": self.covered, "notes": self.notes, "filling": self.filling}


class CrossLingualRows:
    """Which notes of an engine's view have a current cross-lingual row, which lack one (in the
    order they will get one), and the filling of those."""

    def __init__(self, engine):
        self.engine = engine
        self.gen = -1  # the catalog generation the view's rows reflect (-1: match every note)
        self.dirty: set[str] = set()  # paths changed or removed since
        self.file: tuple | None = None  # (device, inode) of the vector file the rows point into
        self.missing: dict[str, None] = {}  # paths lacking a row, in the order they get one
        self.on_missing = None  # the watcher's: called when a routed recall leaves notes lacking one
        self._filling = threading.Lock()  # one fill at a time

    def forget(self) -> None:
        """The view's rows say nothing any more (a new view, a replaced file): match every note."""
        self.gen, self.dirty, self.missing = -1, set(), {}

    def note_changes(self, changed, removed) -> None:
        if self.gen >= 0:
            self.dirty.update(removed)
            self.dirty.update(changed)
            if len(self.dirty) > DIRTY_MAX:
                self.forget()

    def match(self) -> None:
        """Give each note of the view whose text has a row that row, and list those lacking one:
        every note the first time, then only those changed since. Runs no model; the caller
        holds the engine's lock."""
        engine = self.engine
        if engine.vault.catalog_replaced():
            return  # a reindex elsewhere is making the caches anew: the rows matched so far answer meanwhile
        store, view = engine.crosslingual_vectors, engine._view
        if file_identity(store.file) != self.file:  # replaced or deleted by another process
            self.forget()
        if self.gen == engine._gen and self.gen >= 0:
            return
        catalog = engine.vault.catalog(refresh=False)
        paths = None if self.gen < 0 else list(self.dirty)
        have, hashes, stale, gone = engine._compare_rows(catalog, store, paths)
        for path, (row, digest) in have.items():
            view.set_row(path, row if hashes.get(path) == digest else -1, ROW_FIELD)
        for path in stale:
            view.set_row(path, -1, ROW_FIELD)
        earlier = {} if paths is None else {p: None for p in self.missing if p not in self.dirty}
        self.missing = {**dict.fromkeys(catalog.newest_first(stale)), **earlier}  # edits are the newest
        if gone:
            with engine._writing_indexes() as ours:
                if not ours:
                    return
                store.update({}, gone, None)
        self.gen, self.dirty, self.file = engine._gen, set(), file_identity(store.file)

    def for_query(self) -> Coverage:
        """What a routed recall does first (engine lock held): match, embed for FILL_SECONDS
        unless a fill is under way, and ask the watcher (if any) to fill what is still lacking.
        In the watcher only a few (edits since the last query: one batch) are embedded here, as
        before; more are left to its thread, so nothing waits on them."""
        self.match()
        if self.missing and (self.on_missing is None or len(self.missing) <= FILL_BATCH):
            self.fill(FILL_SECONDS, wait=False)
        if self.missing and self.on_missing is not None:
            self.on_missing()
        return self.coverage()

    def coverage(self) -> Coverage:
        view = self.engine._view
        return Coverage(int(view.has_row(ROW_FIELD).sum()), view.count, self.on_missing is not None)

    def fill(self, seconds: float | None, stop: threading.Event | None = None, wait: bool = True) -> int:
        """Embed notes lacking a row, a batch at a time, for about `seconds` (at least one batch;
        None: until none lacks one) or until `stop` is set. Another fill under way: wait for it,
        or with `wait` false return at once. Returns how many texts were embedded."""
        if not self._filling.acquire(blocking=wait):
            return 0
        try:
            started, embedded = time.monotonic(), 0
            while not (stop is not None and stop.is_set()):
                began = time.monotonic()
                done = self._batch()
                if done is None:
                    break
                embedded += done
                now = time.monotonic()
                if seconds is not None and now - started + (now - began) > seconds:
                    break  # the next batch, as long as this one, would end past the budget
            return embedded
        finally:
            self._filling.release()

    def _batch(self) -> int | None:
        """Give the next FILL_BATCH notes lacking a row theirs; None when none lacks one."""
        from vaultmem.errors import LockTimeout
        from vaultmem.search.passages import embed_text
        from vaultmem.search.vectors import embed_texts

        engine = self.engine
        with engine._lock:
            self.match()
            batch = list(itertools.islice(self.missing, FILL_BATCH))
            if not batch or engine.vault.catalog_replaced():
                return None  # none lacks one, or a reindex elsewhere fills the new caches
            busy = engine.index_busy()  # another process writes the indexes: no rows could be stored now
            if not busy:
                catalog = engine.vault.catalog(refresh=False)
                notes, hashes = catalog.at(batch), catalog.hashes_of(batch)
                work = {path: (hashes[path], embed_text(notes[path]))
                        for path in batch if path in notes and path in hashes}
                for path in batch:
                    if path not in work:  # unreadable or gone since the match: the next one sees it
                        self.missing.pop(path, None)
                store, model = engine.crosslingual_vectors, engine.crosslingual
                wanted = store.unstored(text for _digest, text in work.values())
        if busy:
            engine.pause_for_index()
            return 0
        vectors = embed_texts(model, wanted)  # the slow part, without the engine's lock
        with engine._lock:
            try:
                with engine.storing() as ours:
                    if not ours or engine.crosslingual_vectors is not store:
                        return len(vectors)  # a reindex elsewhere made the caches anew: these rows go nowhere
                    rows, _embedded = store.update(work, [], model, vectors)
            except LockTimeout:  # taken by another process since: these notes stay missing, for a later batch
                return 0
            current = catalog.hashes_of(work)
            for path, row in rows.items():
                # A note changed meanwhile keeps lacking its row: the next match lists it again.
                if path in self.missing and current.get(path) == work[path][0] and engine._view.slot(path) is not None:
                    engine._view.set_row(path, row, ROW_FIELD)
                    del self.missing[path]
            self.file = file_identity(store.file)
        return len(vectors)
