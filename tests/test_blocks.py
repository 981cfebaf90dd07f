"""search/blocks.py: an import's per-namespace vectors answer as the whole-matrix search does,
through every change the view can see."""

from __future__ import annotations

import random

import numpy as np
import pytest

from vaultmem.search.blocks import NamespaceBlocks
from vaultmem.search.vectors import VectorStore
from vaultmem.search.view import View

NAMESPACES = ("farm", "garden", "farm/barn", "office")
STATUSES = ("active", "active", "stale", "suspended", "superseded", "archived")
DIM = 16


class _Store:
    """What the blocks and VectorStore.search read of a store: its float32 rows and their epoch."""

    def __init__(self, rng: np.random.Generator):
        self.rng, self.epoch = rng, 0
        self.rows = np.zeros((0, DIM), np.float32)
        self.matrix = self.rows

    def append(self, count: int = 1) -> int:
        vectors = self.rng.standard_normal((count, DIM)).astype(np.float32)
        self.rows = np.vstack([self.rows, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)])
        self.matrix = self.rows
        return len(self.rows) - 1

    def read_anew(self) -> None:
        """The file replaced (a reindex elsewhere): the same row numbers, other vectors."""
        self.rows = self.rng.standard_normal(self.rows.shape).astype(np.float32)
        self.rows /= np.linalg.norm(self.rows, axis=1, keepdims=True)
        self.matrix = self.rows
        self.epoch += 1


def _whole_matrix(view: View, store: _Store, query, namespace: str, kind, limit: int):
    mask = view.mask(namespace, kind, False, exact=True) & view.has_row()
    return VectorStore.search(store, query, view.rows_or_zero(), limit, mask)


@pytest.mark.parametrize("seed", range(4))
def test_blocks_find_what_the_whole_matrix_finds_through_random_changes(seed):
    """Notes added, dropped (their slots reused), moved between namespaces, hidden, re-embedded,
    given rows the store has not read yet, the store read anew and the view's log cut: after
    each step every namespace's nearest notes are the same, in the same order."""
    rng, rand = np.random.default_rng(seed), random.Random(seed)
    view, store = View(), _Store(rng)
    blocks = NamespaceBlocks(view, store)
    paths: list[str] = []
    for step in range(400):
        action = "read_anew" if step % 97 == 96 else "flood" if step == 250 else \
            rand.choice(["add", "add", "add", "drop", "move", "status", "embed", "unread"])
        if action == "add" or not paths:
            path = f"memories/{step}.md"
            paths.append(path)
            view.put(path, f"id{step}", rand.choice(["memory", "skill"]), rand.choice(NAMESPACES), "active")
            if rand.random() < 0.8:
                view.set_row(path, store.append())
        elif action == "drop":
            view.drop(paths.pop(rand.randrange(len(paths))))
        elif action in ("move", "status"):
            path = rand.choice(paths)
            slot = view.slot(path)
            kind = view._names["type"][view._arrays["type"][slot]]
            namespace = rand.choice(NAMESPACES) if action == "move" else view._names["namespace"][
                view._arrays["namespace"][slot]]
            view.put(path, view.ids[slot], kind, namespace, rand.choice(STATUSES))
        elif action == "embed":
            view.set_row(rand.choice(paths), store.append() if rand.random() < 0.8 else -1)
        elif action == "unread":  # a row another process wrote, which the store reads at its next append
            row = store.append()
            view.set_row(rand.choice(paths), row)
            store.matrix = store.rows[:row]
        elif action == "read_anew":
            store.read_anew()
        elif action == "flood":  # more changes than the view keeps a log of (each to a row of its own: no ties)
            first, count = len(store.rows), max(4096, len(view.paths)) + 1 - len(view.changed_slots)  # the cut last
            store.append(count)
            for row in range(first, first + count):
                view.set_row(rand.choice(paths), row)
        query = rng.standard_normal(DIM).astype(np.float32)
        for namespace in NAMESPACES:
            for kind in (None, "memory"):
                limit = rand.choice([1, 3, 8])
                expected = _whole_matrix(view, store, query, namespace, kind, limit)
                found = blocks.nearest(query, namespace, kind, limit)
                assert [slot for slot, _score in found] == [slot for slot, _score in expected], (step, action)
                assert np.allclose([s for _slot, s in found], [s for _slot, s in expected], atol=1e-5)


def test_an_imports_blocks_and_their_log_of_changes_are_let_go_when_it_ends(vault_dir):
    """They are a second copy of the rows: a process that goes on serving recalls (a watcher, an
    MCP server) must not keep them, nor a log of every change after the import."""
    from vaultmem.search.engine import existing_engine
    from vaultmem.vault import Vault

    vault = Vault(vault_dir)
    vault.add_many([{"text": f"Sensor {i} in greenhouse {i % 3} reads humidity every {i + 2} minutes",
                     "namespace": "farm"} for i in range(12)], batch=5)
    engine = existing_engine(vault)
    assert engine._namespace_blocks is None and engine._view.changed_slots is None
    vault.add("Sensor 40 in greenhouse 1 reads humidity every hour", "farm")
    assert engine._view.changed_slots is None
