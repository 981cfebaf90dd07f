"""Whoosh's segment files read where they lie, not copied, and their missing columns remembered.

Whoosh maps a segment file and hands each part of it (terms, postings, lengths)
to a `BufferFile` over a view of the map; but `BufferFile` then wraps the view
in `io.BytesIO`, which copies it. Every open reader so held a private copy of
the whole index: 68 MB at 100k notes, in the watcher and every process that
recalls. `read_in_place` gives `BufferFile` a reader over the view instead, so
the pages stay the kernel's (shared, dropped under pressure) and nothing is copied.
"""

from __future__ import annotations

import io

_done = False


class _ViewReader:
    """The read side of a file over a memoryview: what Whoosh's readers call on it."""

    def __init__(self, view: memoryview):
        self._view = view
        self._pos = 0

    def read(self, size: int | None = -1) -> bytes:
        end = len(self._view) if size is None or size < 0 else min(len(self._view), self._pos + size)
        data = self._view[self._pos:end].tobytes()
        self._pos = max(self._pos, end)
        return data

    def readline(self, size: int | None = -1) -> bytes:
        end = len(self._view) if size is None or size < 0 else min(len(self._view), self._pos + size)
        found = bytes(self._view[self._pos:end]).find(b"\n")  # rare: Whoosh reads its parts by offset
        return self.read((found + 1) if found >= 0 else end - self._pos)

    def __iter__(self):
        while line := self.readline():
            yield line

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._view)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._view = memoryview(b"")


def read_in_place() -> None:
    """Make Whoosh's `BufferFile` read a memoryview in place (idempotent)."""
    global _done
    if _done:
        return
    from whoosh.filedb import structfile

    plain_init = structfile.BufferFile.__init__

    def __init__(self, buf, name=None, onclose=None):
        plain_init(self, b"" if isinstance(buf, memoryview) else buf, name=name, onclose=onclose)
        if isinstance(buf, memoryview):
            self._buf = buf
            self.file = _ViewReader(buf)

    structfile.BufferFile.__init__ = __init__
    _done = True


def remember_missing_columns() -> None:
    """Make Whoosh remember which columns a segment lacks (idempotent).

    Writing a segment, Whoosh asks for every posting the length of its field in its document;
    for a field that keeps no lengths (the ID and keyword fields) the answer is a lookup of a
    column file that is not there, a `stat` each time, and the files of a segment never change:
    10k notes made 160k such calls, 10-15% of indexing them (2.45 -> 2.15 s)."""
    from whoosh.codec import whoosh3

    reader = whoosh3.W3PerDocReader
    if getattr(reader.has_column, "remembers_missing", False):
        return
    plain_has_column = reader.has_column

    def has_column(self, fieldname):
        missing = self.__dict__.setdefault("_missing_columns", set())
        if fieldname in missing:
            return False
        if plain_has_column(self, fieldname):
            return True
        missing.add(fieldname)
        return False

    has_column.remembers_missing = True
    reader.has_column = has_column
