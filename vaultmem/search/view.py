"""The recall engine's view of the vault: per note, only what filtering and vector search need.

Kept in step with the catalog's change feed by search/engine.py; a filter over 100k notes is a
vectorised comparison, and each note's rows in the vector stores are looked up by slot."""

from __future__ import annotations

import numpy as np

from vaultmem.core.model import HIDDEN_STATUSES, in_namespace
from vaultmem.search.crosslingual_fill import ROW_FIELD as CROSSLINGUAL_ROW

MODEL_ROW = "row"  # a note's row in the vault model's vectors (CROSSLINGUAL_ROW: in the cross-lingual one's)
ROW_FIELDS = (MODEL_ROW, CROSSLINGUAL_ROW)


class View:
    """One slot per note: path, id, and type/namespace/status as small integer codes
    in numpy arrays, so a filter over 100k notes is a vectorised comparison.
    Slots of removed notes are marked dead and reused by the next new note."""

    def __init__(self):
        self.paths: list[str | None] = []
        self.ids: list[str | None] = []
        self._slot: dict[str, int] = {}
        self._free: list[int] = []
        self._codes: dict[str, dict[str, int]] = {"type": {}, "namespace": {}, "status": {}}
        self._names: dict[str, list[str]] = {"type": [], "namespace": [], "status": []}
        size = 1024
        self._arrays = {"type": np.zeros(size, np.int32), "namespace": np.zeros(size, np.int32),
                        "status": np.zeros(size, np.int32), "row": np.full(size, -1, np.int64),
                        "xrow": np.full(size, -1, np.int64), "alive": np.zeros(size, bool)}
        self._masks: dict = {}
        # Slots whose namespace or model row changed, in order, while NamespaceBlocks follows them
        # (`follow_changes`; None otherwise: a watcher's view keeps no log). Cut (and `log_epoch`
        # bumped, so its reader starts over) once longer than the view.
        self.changed_slots: list[int] | None = None
        self.log_epoch = 0

    @classmethod
    def of(cls, summaries) -> "View":
        view = cls()
        for path, note_id, kind, namespace, status, _digest in summaries:
            view.put(path, note_id, kind, namespace, status)
        return view

    @property
    def count(self) -> int:
        return len(self._slot)

    def slot(self, path: str) -> int | None:
        return self._slot.get(path)

    def _code(self, field: str, value: str) -> int:
        codes = self._codes[field]
        if value not in codes:
            codes[value] = len(codes)
            self._names[field].append(value)
        return codes[value]

    def put(self, path: str, note_id: str, kind: str, namespace: str, status: str) -> None:
        slot = self._slot.get(path)
        if new := slot is None:
            slot = self._free.pop() if self._free else len(self.paths)
            if slot == len(self.paths):
                self.paths.append(None)
                self.ids.append(None)
            if slot >= len(self._arrays["alive"]):
                for name, array in self._arrays.items():
                    grown = np.full(len(array) * 2, -1 if name in ROW_FIELDS else 0, array.dtype)
                    grown[: len(array)] = array
                    self._arrays[name] = grown
            self._slot[path] = slot
            for name in ROW_FIELDS:
                self._arrays[name][slot] = -1
        self.paths[slot], self.ids[slot] = path, note_id
        self._arrays["type"][slot] = self._code("type", kind)
        code = self._code("namespace", namespace)
        if new or self._arrays["namespace"][slot] != code:
            self._arrays["namespace"][slot] = code
            self._log(slot)
        self._arrays["status"][slot] = self._code("status", status)
        self._arrays["alive"][slot] = True
        self._masks = {}

    def drop(self, path: str) -> None:
        slot = self._slot.pop(path, None)
        if slot is None:
            return
        self._arrays["alive"][slot] = False
        for name in ROW_FIELDS:
            self._arrays[name][slot] = -1
        self.paths[slot] = self.ids[slot] = None
        self._free.append(slot)
        self._masks = {}
        self._log(slot)

    def follow_changes(self, follow: bool = True) -> None:
        """Keep `changed_slots` from now on (a new log: `log_epoch` moves), or stop keeping it."""
        self.changed_slots = [] if follow else None
        self.log_epoch += 1

    def _log(self, slot: int) -> None:
        if self.changed_slots is None:
            return
        self.changed_slots.append(slot)
        if len(self.changed_slots) > max(4096, len(self.paths)):
            self.changed_slots = []
            self.log_epoch += 1

    def set_row(self, path: str, row: int, field: str = MODEL_ROW) -> None:
        slot = self._slot.get(path)
        if slot is not None and self._arrays[field][slot] != row:
            self._arrays[field][slot] = row
            if field == MODEL_ROW:
                self._log(slot)

    def row(self, path: str, field: str = MODEL_ROW) -> int | None:
        slot = self._slot.get(path)
        if slot is None or self._arrays[field][slot] < 0:
            return None
        return int(self._arrays[field][slot])

    def rows_or_zero(self, field: str = MODEL_ROW) -> np.ndarray:
        """Each slot's vector row (0 where it has none: masked out by `has_row`)."""
        rows = self._arrays[field][: len(self.paths)]
        return np.where(rows >= 0, rows, 0)

    def namespace_code(self, namespace: str) -> int | None:
        return self._codes["namespace"].get(namespace)

    def placed(self, slot: int) -> tuple[int | None, int]:
        """A slot's (namespace code, model row); (None, -1) once dropped."""
        if not self._arrays["alive"][slot]:
            return None, -1
        return int(self._arrays["namespace"][slot]), int(self._arrays[MODEL_ROW][slot])

    def members(self, code: int) -> np.ndarray:
        """The live slots of a namespace (by its code) that have a model row."""
        n = len(self.paths)
        return np.flatnonzero(self._arrays["alive"][:n] & (self._arrays["namespace"][:n] == code)
                              & (self._arrays[MODEL_ROW][:n] >= 0))

    def of_kind_and_status(self, slots, kind: str | None, include_hidden=False) -> np.ndarray:
        """Which of `slots` (an index array, or a slice) hold a note of `kind` (any kind when
        None) with a status the query may return: `mask`'s filter, for these slots only."""
        allowed = self._codes_where("status", slots, lambda name: _status_allowed(name, include_hidden))
        if kind:
            allowed &= self._arrays["type"][slots] == self._codes["type"].get(kind, -1)
        return allowed

    def has_row(self, field: str = MODEL_ROW) -> np.ndarray:
        n = len(self.paths)
        return self._arrays["alive"][:n] & (self._arrays[field][:n] >= 0)

    def mask(self, namespace: str | None, kind: str | None, include_hidden, exact: bool = False) -> np.ndarray:
        """Which slots a query may return (cached until the notes change)."""
        key = (namespace, kind, include_hidden, exact)
        if key not in self._masks:
            every = slice(0, len(self.paths))
            allowed = self._arrays["alive"][every] & self.of_kind_and_status(every, kind, include_hidden)
            if namespace:
                allowed &= self._codes_where("namespace", every, lambda name: (
                    name == namespace if exact else in_namespace(name, namespace)))
            self._masks[key] = allowed
        return self._masks[key]

    def _codes_where(self, field: str, slots, wanted) -> np.ndarray:
        """Which of `slots` (an index array, or a slice) hold a `field` value that `wanted(value)`
        accepts: one lookup per slot in a table of the codes (np.isin sorts, ~5x slower at 10k
        notes, and the mask is made again after every change: each of an import's checks)."""
        table = np.array([bool(wanted(name)) for name in self._names[field]] + [False])
        return table[self._arrays[field][slots]]


def _status_allowed(status: str, include_hidden) -> bool:
    if status not in HIDDEN_STATUSES:
        return True
    return include_hidden is True or (include_hidden == "history" and status == "superseded")
