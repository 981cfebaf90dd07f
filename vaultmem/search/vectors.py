"""The embedding cache: one vector per distinct note text, appended in place.

`.vaultmem/index/vectors/<model>/vectors.npy` is an ordinary `.npy` matrix
(int8, one row per text embedded) that grows by appending rows and
rewriting the 128-byte header: an add costs one row, not a rewrite of the
file. A row is the unit vector scaled so its largest component is 127 and
rounded; read back and re-normalised it gives cosines within 0.003 of the
float32 ones (measured on 10k MiniLM rows: mean error 0.0003), at a quarter
of the disk (384 bytes a note for MiniLM). Two tables in the catalog's SQLite file say which row holds which text
(`vectors`: text hash -> row) and which row each note file uses now
(`vector_rows`: path -> row, with the file hash it was computed for). A note
whose text is unchanged (a grade, a move, a copied vault) keeps its row
without running the model.

Rows of texts no note uses any more stay in the file until `reindex`
rebuilds it: an edit of a memory's text is rare next to reviews, which do
not touch it. The cache is derived: deleting it costs one re-embedding, with
identical results. Search is a brute-force matrix product over the rows read
back as float32 (kept in memory, extended as the file grows): at the scale
of one person's or one agent's memory (up to ~100k notes) that
is a few milliseconds, no vector database needed.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vaultmem.store.catalog import rows_in, transaction
from vaultmem.store.files import file_stamp

EMBED_BATCH = 64
FILL_CHUNK = 4 * EMBED_BATCH  # texts embedded between two writes of the file and the text map
# A search allowed fewer than 1 in SUBSET_SHARE of the rows gathers those rows instead of
# multiplying the whole matrix (gathering costs about as much per row as the product).
SUBSET_SHARE = 4
SETTLED_NS = 50_000_000  # 50 ms: longer than any filesystem clock's tick
DTYPE = np.dtype("i1")
# `vectors` survives a new catalog schema (catalog.KEPT_ACROSS_VERSIONS): give it another name
# if its own layout ever changes.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, text_hash TEXT NOT NULL, row INTEGER NOT NULL,
                                    PRIMARY KEY (model, text_hash)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vector_rows (model TEXT NOT NULL, path TEXT NOT NULL, hash TEXT NOT NULL,
                                        row INTEGER NOT NULL, PRIMARY KEY (model, path)) WITHOUT ROWID;
"""


def text_hash(model_name: str, text: str) -> str:
    return hashlib.blake2b(f"{model_name}\x00{text}".encode("utf-8"), digest_size=16).hexdigest()


def folder_name(model_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model_name)[:80] or "model"


@dataclass
class _Held:
    """What a held store appended in memory only (VectorStore.held): written on leaving."""

    file_rows: int  # rows in the file when the hold began
    file_id: tuple | None  # and which file that was
    vectors: list[np.ndarray] = field(default_factory=list)  # int8 rows, in order from file_rows
    texts: dict[str, int] = field(default_factory=dict)  # text hash -> row
    paths: dict[str, tuple[int, str]] = field(default_factory=dict)  # path -> (row, file hash)
    dropped: set[str] = field(default_factory=set)  # paths whose row was forgotten


class VectorStore:
    """The vectors of one embedding model for one vault.

    Appends happen under the caller's index lock (one writer at a time);
    readers map the file and see rows up to the count in its header.
    """

    def __init__(self, folder: Path, model_name: str, db_source, source_replaced: Callable[[], bool] | None = None):
        self.folder = Path(folder)
        self.file = self.folder / "vectors.npy"
        self.model_name = model_name
        self.model = hashlib.blake2b(model_name.encode("utf-8"), digest_size=4).hexdigest()  # its key in the tables
        self._db_source = db_source  # a callable: the catalog's connection for the calling thread
        # Whether that catalog's file was made anew by another process (a reindex): its tables
        # point into the rows read so far, not into the new file's.
        self._source_replaced = source_replaced
        self.db.executescript(_SCHEMA)
        self._rows = np.zeros((0, 0), dtype=np.float32)  # float32 rows read so far; capacity grows by an eighth
        self._rows_read = 0
        self.epoch = 0  # moves whenever the rows read so far are dropped: a row number may then mean another vector
        self._file_id: tuple[int, int] | None = None  # (device, inode) of the file those rows came from
        self._read_at: tuple | None = None  # the file's stat when `matrix` last read it
        self._held: _Held | None = None  # rows appended in memory only, while held
        self.dim = 0
        self._drop_if_damaged()

    def _drop_if_damaged(self) -> None:
        """A vector file that is not the int8 matrix the tables point into (damaged,
        replaced, planted, or the float32 file of an older version) is dropped with the
        model's rows: every text is embedded again, as after deleting the cache. (The file
        is read as raw bytes after its header: nothing is ever unpickled.)"""
        rows, _dim, _offset = _header(self.file)
        highest = self.db.execute("SELECT max(row) FROM vectors WHERE model = ?", (self.model,)).fetchone()[0]
        # Rows no table points into (the catalog was deleted, or rebuilt by a newer schema) would
        # only be appended to again: every text is embedded anew either way, so the file goes too.
        orphaned = highest is None and rows > 0
        if not orphaned and (highest is None or highest < rows) and (rows or not self.file.exists()
                                                                     or _is_ours(self.file)):
            return
        if self.file.exists():
            self.file.unlink()
        self.db.execute("DELETE FROM vectors WHERE model = ?", (self.model,))
        self.db.execute("DELETE FROM vector_rows WHERE model = ?", (self.model,))
        self.db.commit()

    @property
    def db(self):
        return self._db_source()

    # ------------------------------------------------------------ the matrix

    @property
    def matrix(self) -> np.ndarray:
        """Every row written so far, as float32 unit rows (read once; only rows appended
        since the last call are read again)."""
        if self._held is not None:
            return self._rows[: self._rows_read]  # the file is as the hold found it, plus rows in memory
        try:
            info = os.stat(self.file)
            file_id = (info.st_dev, info.st_ino)
        except FileNotFoundError:
            info = file_id = None
        stamp = None if info is None else file_stamp(info)
        if stamp is not None and stamp == self._read_at:
            return self._rows[: self._rows_read]  # not written since it was read: no header to parse
        if file_id != self._file_id and self._source_replaced and self._source_replaced():
            # The map of rows this store reads was made for the file it read before, if any: the one
            # at the path now is another (a reindex by another process), whose rows would be other
            # texts' vectors. Until the engine starts over on both (follow_replaced_caches).
            return self._rows[: self._rows_read]
        rows, dim, offset = _header(self.file)
        if rows < self._rows_read or dim != self.dim or file_id != self._file_id:
            # Replaced (deleted by hand, or dropped as damaged) or cut: read it again.
            self._rows, self._rows_read, self.dim = np.zeros((0, dim), dtype=np.float32), 0, dim
            self.epoch += 1
            self._file_id = file_id
        if rows > self._rows_read:
            with open(self.file, "rb") as handle:
                handle.seek(offset + self._rows_read * dim)
                fresh = np.frombuffer(handle.read((rows - self._rows_read) * dim), dtype=DTYPE)
            self._extend(fresh.reshape(-1, dim))
        # A file changed in the last tick of the filesystem clock may change again with the same
        # stamp (rows, then their header): trusted only once it is older than that.
        settled = stamp is not None and time.time_ns() - info.st_mtime_ns > SETTLED_NS
        self._read_at = stamp if settled else None
        return self._rows[: self._rows_read]

    def _extend(self, fresh: np.ndarray) -> None:
        """Rows read from the file (or appended while held), int8, after those read so far."""
        fresh = fresh.astype(np.float32)
        fresh /= np.maximum(np.linalg.norm(fresh, axis=1, keepdims=True), 1e-12)
        rows = self._rows_read + len(fresh)
        if rows > len(self._rows):
            # Room for an eighth more (appends stay amortised O(1)): doubling left a watcher at
            # 100k notes holding twice the matrix, 150 MB unused, after its first add. Room on the
            # first read too: the next add copied the whole matrix (at 100k: 40 ms in a fresh
            # process, 1.4 s in one that had just embedded the vault). Pages never written are
            # never resident.
            grown = np.empty((rows + rows // 8 + 256, self.dim), dtype=np.float32)
            grown[: self._rows_read] = self._rows[: self._rows_read]
            self._rows = grown
        self._rows[self._rows_read: rows] = fresh
        self._rows_read = rows

    @contextmanager
    def held(self) -> Iterator[None]:
        """For a stretch of writes under the caller's index lock (one of add_many's batches):
        new rows go into the matrix in memory and reach the file and the tables once, on
        leaving (one append instead of one a note, and no header read in between: nobody
        else writes the file meanwhile). Readers elsewhere see those notes without a row
        until then (found by their words). A process that dies inside loses only those rows:
        the tables never point past the file's end, and the notes get their vectors at the
        next sync. Left as it was if the file was replaced meanwhile (a reindex could not,
        without the lock; a person could)."""
        if self._held is not None:
            yield
            return
        self.matrix  # noqa: B018 - read whole first: the rows held go after it
        rows, _dim, _offset = _header(self.file)
        if rows != self._rows_read:  # (a file replaced under a reader that keeps the old rows)
            yield
            return
        self._held = _Held(rows, self._file_id)
        try:
            yield
        finally:
            held, self._held = self._held, None
            self._write_held(held)

    def _write_held(self, held: _Held) -> None:
        """The rows, text map and note rows a hold kept in memory, to the file and the tables."""
        try:
            info = os.stat(self.file)
            file_id = (info.st_dev, info.st_ino)
        except FileNotFoundError:
            file_id = None
        rows, _dim, _offset = _header(self.file)
        if (rows, file_id if rows else None) != (held.file_rows, held.file_id if held.file_rows else None):
            # Not the file the rows were counted from: they are dropped (embedded again when next
            # needed), and the file read again from its start.
            self._rows_read, self._file_id, self._read_at = 0, None, None
            self.epoch += 1
            return
        if held.vectors:
            self._append(np.vstack(held.vectors), quantized=True)  # at held.file_rows (checked above)
            info = os.stat(self.file)
            # The rows are in memory already: the next read takes the new header, no rows.
            self._file_id, self._read_at = (info.st_dev, info.st_ino), None
        with transaction(self.db):
            self._record_texts(held.texts)
            self._record_paths(held.paths, held.dropped)

    def _record_texts(self, texts: dict[str, int]) -> None:
        """The text map: text hash -> row."""
        self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                            [(self.model, digest, row) for digest, row in texts.items()])

    def _record_paths(self, paths: dict[str, tuple[int, str]], dropped) -> None:
        """The notes' rows: path -> (row, file hash), and the paths that have none any more."""
        self.db.executemany("INSERT OR REPLACE INTO vector_rows VALUES (?, ?, ?, ?)",
                            [(self.model, path, digest, row) for path, (row, digest) in paths.items()])
        self.db.executemany("DELETE FROM vector_rows WHERE model = ? AND path = ?",
                            [(self.model, path) for path in dropped])

    @property
    def rows_read(self) -> int:
        """How many rows of the file this store has read (kept even once the file is deleted)."""
        return self._rows_read

    def vector(self, row: int) -> np.ndarray | None:
        """The row's vector; None for a row this store cannot read (see `matrix`)."""
        rows = self._rows if row < self._rows_read else self.matrix
        return np.asarray(rows[row]) if row < len(rows) else None

    def _append(self, vectors: np.ndarray, quantized: bool = False) -> int:
        """Write rows at the end of the file; returns the first new row's number."""
        vectors = vectors if quantized else quantize(vectors)
        rows, dim, offset = _header(self.file)
        if rows and dim != vectors.shape[1]:
            raise ValueError(f"{self.file}: rows of {dim} values, the model gives {vectors.shape[1]}")
        self.folder.mkdir(parents=True, exist_ok=True)
        if not rows:
            _write_empty(self.file, vectors.shape[1])
            rows, dim, offset = _header(self.file)
        with open(self.file, "r+b") as handle:
            handle.truncate(offset + rows * dim * DTYPE.itemsize)  # drop a row half-written by a crash
            handle.seek(0, os.SEEK_END)
            handle.write(vectors.tobytes())
            handle.flush()
            _rewrite_header(handle, rows + len(vectors), dim, offset)
        return rows

    # ------------------------------------------------------------ which row is which note

    def rows_of_paths(self, paths=None) -> dict[str, tuple[int, str]]:
        """path -> (row, file hash it was computed for), for every note with a vector
        (or just `paths`)."""
        rows = self._row_count()
        if paths is None:
            found = self.db.execute("SELECT path, row, hash FROM vector_rows WHERE model = ?", (self.model,))
        else:
            paths = list(paths)
            found = rows_in(self.db, "SELECT path, row, hash FROM vector_rows WHERE model = ? AND path IN ({marks})",
                            paths, self.model)
        have = {path: (row, digest) for path, row, digest in found if row < rows}
        if self._held is not None:  # (an add's sync asks for one path: the batch's held ones are not all gone through)
            held = self._held
            for path in held.dropped if paths is None else (p for p in paths if p in held.dropped):
                have.pop(path, None)
            have.update(held.paths if paths is None else ((p, held.paths[p]) for p in paths if p in held.paths))
        return have

    def _row_count(self) -> int:
        """Rows there are: in the file (its header), or while held, in memory."""
        return self._rows_read if self._held is not None else _header(self.file)[0]

    def stored(self, digests) -> dict[str, int]:
        """text hash -> row, for the texts among `digests` (text hashes) that have a row in the file."""
        rows_now, digests = self._row_count(), set(digests)
        found = {digest: row for digest, row in rows_in(
            self.db, "SELECT text_hash, row FROM vectors WHERE model = ? AND text_hash IN ({marks})",
            digests, self.model) if row < rows_now}
        if self._held is not None:
            found.update((digest, row) for digest, row in self._held.texts.items() if digest in digests)
        return found

    def unstored(self, texts) -> dict[str, str]:
        """text hash -> text, for those of `texts` the file holds no vector of: what the model must run on."""
        by_hash = {text_hash(self.model_name, text): text for text in texts}
        stored = self.stored(by_hash)
        return {digest: text for digest, text in by_hash.items() if digest not in stored}

    def stale(self, hashes: dict[str, str], have: dict[str, tuple[int, str]] | None = None) -> list[str]:
        """The paths of `hashes` (path -> file hash) whose note has no row computed for that hash
        (`have`: rows_of_paths' answer when the caller holds it already)."""
        have = self.rows_of_paths() if have is None else have
        return [path for path, digest in hashes.items() if have.get(path, (None, None))[1] != digest]

    def update(self, changed: dict[str, tuple[str, str]], removed, embedder,
               known: dict | None = None, limit: int | None = None,
               progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, int], int]:
        """Give each `changed` note (path -> (file hash, text to embed)) the row of its text,
        embedding only texts never seen (or found in `known`: text hash -> vector);
        forget `removed` paths. Returns (path -> row for the changed notes, texts embedded).

        `limit`: run the model on at most that many texts; the notes whose texts are left
        get no row now (they are missing from the result) and the caller fills them later.
        The model's vectors go into the file and the text map FILL_CHUNK texts at a time,
        so a process stopped mid-way (a hook over its budget, Ctrl-C) keeps all it embedded
        but the last chunk: the next one finds those texts and runs the model on the rest.
        `progress(done, total)` hears of the texts through the model: before the first chunk
        and after each."""
        by_hash = {path: text_hash(self.model_name, text) for path, (_digest, text) in changed.items()}
        existing = self.stored(set(by_hash.values()))
        missing: dict[str, str] = {}
        for path, digest in by_hash.items():
            if digest not in existing and digest not in missing:
                missing[digest] = changed[path][1]
        known = known or {}
        # Shortest first: each batch pads to texts of its own length, and a bounded fill
        # covers the most notes for its time.
        items = sorted(missing.items(), key=lambda item: len(item[1]))
        fresh = [item for item in items if item[0] not in known]
        fresh = fresh if limit is None else fresh[:max(0, limit)]
        at_hand = [(digest, known[digest]) for digest, _text in items if digest in known]
        for start in range(0, len(at_hand), FILL_CHUNK):
            self._place(at_hand[start:start + FILL_CHUNK], existing)
        for start in range(0, len(fresh), FILL_CHUNK):
            if progress is not None:
                progress(start, len(fresh))
            self._place(list(embed_texts(embedder, dict(fresh[start:start + FILL_CHUNK])).items()), existing)
        if progress is not None and fresh:
            progress(len(fresh), len(fresh))
        rows = {path: existing[digest] for path, digest in by_hash.items() if digest in existing}
        if self._held is not None:
            for path in removed:
                self._held.paths.pop(path, None)
                self._held.dropped.add(path)
            self._held.paths.update((path, (row, changed[path][0])) for path, row in rows.items())
            self._held.dropped.difference_update(rows)  # (forgotten, then back: a note moved away and back)
            return rows, len(fresh)
        self._record_paths({path: (row, changed[path][0]) for path, row in rows.items()}, removed)
        if len(changed) + len(removed) >= 1000 and not self.db.in_transaction:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # as the catalog does after big writes
        return rows, len(fresh)

    def _place(self, vectors: list[tuple[str, np.ndarray]], existing: dict[str, int]) -> None:
        """Append (text hash, vector) pairs to the file and the text map; `existing` learns their rows."""
        if not vectors:
            return
        if self._held is not None:
            rows = quantize(np.vstack([vector for _digest, vector in vectors]))
            if not self.dim:
                self.dim, self._rows = rows.shape[1], np.zeros((0, rows.shape[1]), dtype=np.float32)
            elif rows.shape[1] != self.dim:
                raise ValueError(f"{self.file}: rows of {self.dim} values, the model gives {rows.shape[1]}")
            first = self._rows_read
            self._held.vectors.append(rows)
            self._extend(rows)
            for offset, (digest, _vector) in enumerate(vectors):
                existing[digest] = self._held.texts[digest] = first + offset
            return
        first = self._append(np.vstack([vector for _digest, vector in vectors]))
        if self._rows_read:
            # A store searched already reads its new rows now: they stay with it if a reindex
            # replaces the file. One never searched (reindex's own, an import's) reads none.
            self.matrix  # noqa: B018 - read for its side effect
        placed = {digest: first + offset for offset, (digest, _vector) in enumerate(vectors)}
        existing.update(placed)
        self._record_texts(placed)

    def search(self, query_vector: np.ndarray, rows: np.ndarray, limit: int,
               mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """[(position in `rows`, cosine)] best first, among the allowed positions of `rows`."""
        matrix = self.matrix
        if not len(rows) or matrix.shape[0] == 0:
            return []
        if (outside := rows >= matrix.shape[0]).any():
            # Rows this store has not read (the file it may read holds fewer, see `matrix`): left out.
            rows = np.where(outside, 0, rows)
            mask = ~outside if mask is None else mask & ~outside
        query_vector = query_vector.astype(np.float32)
        if mask is not None and (allowed := np.flatnonzero(mask)).size * SUBSET_SHARE < len(rows):
            # A few allowed (one namespace, as add's check asks): only their rows are multiplied.
            if not allowed.size:
                return []
            scores = matrix[rows[allowed]] @ query_vector
            positions = allowed
        else:
            scores = (matrix @ query_vector)[rows]
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            positions = None
        return [(int(i if positions is None else positions[i]), score) for i, score in top_scores(scores, limit)]


def top_scores(scores: np.ndarray, limit: int, keys: np.ndarray | None = None) -> list[tuple[int, float]]:
    """[(index, score)] of the `limit` highest finite scores, best first; equal scores (the
    same text twice) in the order of `keys` (default: of the indices), the cut included, so
    the answer does not depend on the order the scores come in."""
    limit = min(limit, len(scores))
    if limit <= 0:
        return []
    top = np.argpartition(-scores, limit - 1)[:limit]
    kth = scores[top].min()
    top = np.flatnonzero(scores >= kth if np.isfinite(kth) else np.isfinite(scores))  # with every tie of the last
    top = top[np.lexsort((top if keys is None else keys[top], -scores[top]))][:limit]
    return [(int(i), float(scores[i])) for i in top if np.isfinite(scores[i])]


def embed_texts(embedder, texts: dict[str, str]) -> dict[str, np.ndarray]:
    """text hash -> vector of each of `texts` (text hash -> text), shortest first (each batch
    pads to texts of its own length), EMBED_BATCH at a time."""
    vectors: dict[str, np.ndarray] = {}
    order = sorted(texts, key=lambda digest: len(texts[digest]))
    for start in range(0, len(order), EMBED_BATCH):
        batch = order[start:start + EMBED_BATCH]
        vectors.update(zip(batch, embedder.embed([texts[d] for d in batch], kind="passage")))
    return vectors


def quantize(vectors: np.ndarray) -> np.ndarray:
    """Unit rows as int8: each scaled so its largest component is 127 (the scale is not
    kept: a row is re-normalised when read, which cancels it)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.maximum(np.abs(vectors).max(axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(np.rint(vectors * (127.0 / peak)).astype(DTYPE))


# ---------------------------------------------------------------- .npy header in place

def _is_ours(file: Path) -> bool:
    try:
        with open(file, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            _shape, _fortran, dtype = (np.lib.format.read_array_header_1_0(handle) if version == (1, 0)
                                       else np.lib.format.read_array_header_2_0(handle))
    except (OSError, ValueError):
        return False
    return dtype == DTYPE


# The header vaultmem writes (numpy's own text for an int8 matrix, version 1.0), read without
# numpy's parser: that one evaluates the header as Python literals, ~0.15 ms a read, and an add
# reads it about five times. Any other header goes to numpy's parser.
_OUR_HEADER = re.compile(rb"\x93NUMPY\x01\x00..\{'descr': '\|i1', 'fortran_order': False, "
                         rb"'shape': \((\d+), (\d+)\), \} *\n", re.DOTALL)


def _header(file: Path) -> tuple[int, int, int]:
    """(rows, dim, data offset) from an .npy file's header; (0, 0, 0) when there is none."""
    try:
        with open(file, "rb") as handle:
            start = handle.read(128)
            size = os.fstat(handle.fileno()).st_size
            if (ours := _OUR_HEADER.fullmatch(start)) is not None:
                shape, _dtype, offset = (int(ours[1]), int(ours[2])), DTYPE, len(start)
            else:
                handle.seek(0)
                version = np.lib.format.read_magic(handle)
                shape, _fortran, _dtype = (np.lib.format.read_array_header_1_0(handle) if version == (1, 0)
                                           else np.lib.format.read_array_header_2_0(handle))
                offset = handle.tell()
    except (OSError, ValueError):
        return 0, 0, 0
    if len(shape) != 2 or _dtype != DTYPE:
        return 0, 0, 0
    rows, dim = shape
    # A header written ahead of its rows (a crash between the two) counts only whole rows on disk.
    rows = min(rows, (size - offset) // (dim * DTYPE.itemsize)) if dim else 0
    return rows, dim, offset


def _header_bytes(rows: int, dim: int) -> bytes:
    """Magic string and header of a (rows, dim) int8 .npy file, padded as numpy pads it."""
    import io

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": DTYPE.str, "fortran_order": False, "shape": (rows, dim)})
    return buffer.getvalue()


def _write_empty(file: Path, dim: int) -> None:
    tmp = file.with_name(f".vectors.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(_header_bytes(0, dim))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, file)


def _rewrite_header(handle, rows: int, dim: int, offset: int) -> None:
    header = _header_bytes(rows, dim)  # magic string included
    if len(header) != offset:
        raise ValueError("vector file header would change size")  # not before 10^40 rows
    handle.seek(0)
    handle.write(header)
    handle.flush()  # no fsync: a cache (a header that outruns its rows is cut back to whole rows on read)
