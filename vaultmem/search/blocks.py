"""Each namespace's vectors side by side, for an import's checks (`RecallEngine.similar`).

An add compares its text with the notes of its own namespace. Gathering those rows out of
the whole matrix for every add cost in proportion to the vault: at 100k notes ~4 ms of a
15 ms checked add, for ~5,000 rows copied out of 150 MB. A block holds a copy of one
namespace's rows, multiplied in place, and follows the view's changes (`View.changed_slots`)
instead of being gathered again. Blocks are built on first use and live for one import
(add_many): they hold up to a second copy of the matrix, which a watcher should not keep.
"""

from __future__ import annotations

import numpy as np

from vaultmem.search.vectors import top_scores


class _Block:
    """One namespace's slots, their rows, and a copy of those rows' vectors (in no order)."""

    def __init__(self, slots: np.ndarray, rows: np.ndarray, vectors: np.ndarray):
        self.n = len(slots)
        self.slots, self.rows, self.vectors = slots.astype(np.int64), rows.astype(np.int64), vectors
        self.position = {int(slot): i for i, slot in enumerate(self.slots)}

    def put(self, slot: int, row: int, vector: np.ndarray) -> None:
        i = self.position.get(slot)
        if i is None:
            if self.n == len(self.slots):
                room = max(16, self.n + self.n // 4)
                self.slots, self.rows = np.resize(self.slots, room), np.resize(self.rows, room)
                grown = np.empty((room, vector.shape[0]), np.float32)
                grown[: self.n] = self.vectors[: self.n]
                self.vectors = grown
            i, self.n = self.n, self.n + 1
            self.position[slot] = i
            self.slots[i] = slot
        elif self.rows[i] == row:
            return
        self.rows[i], self.vectors[i] = row, vector

    def remove(self, slot: int) -> None:
        i = self.position.pop(slot)
        last = self.n - 1
        if i != last:  # the last entry moves into the gap
            moved = int(self.slots[last])
            self.slots[i], self.rows[i], self.vectors[i] = moved, self.rows[last], self.vectors[last]
            self.position[moved] = i
        self.n = last


class NamespaceBlocks:
    """The blocks of one view over one vector store; `nearest` is View.mask + VectorStore.search
    for an exact namespace, in time proportional to that namespace."""

    def __init__(self, view, store):
        self.view, self.store = view, store
        view.follow_changes()
        self._blocks: dict[int, _Block] = {}
        self._home: dict[int, int] = {}  # slot -> the namespace code of the block holding it
        self._unread: set[int] = set()  # slots whose row the store has not read yet (see `matrix`)
        self._epoch = (view.log_epoch, store.epoch)
        self._read = len(view.changed_slots)

    def nearest(self, vector: np.ndarray, namespace: str, kind: str | None,
                limit: int) -> list[tuple[int, float]]:
        """[(slot, cosine)] best first: the `limit` notes of exactly `namespace` (and `kind`)
        with a status a recall shows, nearest to `vector`."""
        matrix = self.store.matrix  # (reads the rows others appended first)
        self._follow(matrix)
        code = self.view.namespace_code(namespace)
        if code is None:
            return []
        block = self._blocks.get(code) or self._build(code, matrix)
        if not block.n:
            return []
        slots = block.slots[: block.n]
        scores = np.where(self.view.of_kind_and_status(slots, kind),
                          block.vectors[: block.n] @ vector.astype(np.float32), -np.inf)
        return [(int(slots[i]), score) for i, score in top_scores(scores, limit, keys=slots)]

    def _follow(self, matrix: np.ndarray) -> None:
        """Apply the view's changes since the last call (all blocks dropped when the view cut
        its log or the store read its rows anew: a row number then means another vector)."""
        if (self.view.log_epoch, self.store.epoch) != self._epoch:
            self._blocks.clear()
            self._home.clear()
            self._unread.clear()
            self._epoch = (self.view.log_epoch, self.store.epoch)
            self._read = len(self.view.changed_slots)
            return
        changed = self.view.changed_slots[self._read:]
        self._read = len(self.view.changed_slots)
        for slot in dict.fromkeys([*changed, *self._unread]):
            self._place(slot, matrix)

    def _place(self, slot: int, matrix: np.ndarray) -> None:
        code, row = self.view.placed(slot)
        self._unread.discard(slot)
        if row >= len(matrix):  # placed once the store has read it
            if code in self._blocks:
                self._unread.add(slot)
            row = -1
        home = self._home.get(slot)
        target = code if row >= 0 else None
        if home is not None and home != target:
            self._blocks[home].remove(slot)
            del self._home[slot]
        if target is not None and (block := self._blocks.get(target)) is not None:
            block.put(slot, row, matrix[row])
            self._home[slot] = target

    def _build(self, code: int, matrix: np.ndarray) -> _Block:
        slots = self.view.members(code)
        rows = self.view.rows_or_zero()[slots]
        readable = rows < len(matrix)
        self._unread.update(int(slot) for slot in slots[~readable])
        slots, rows = slots[readable], rows[readable]
        block = self._blocks[code] = _Block(slots, rows, matrix[rows])
        self._home.update(dict.fromkeys(block.position, code))
        return block
