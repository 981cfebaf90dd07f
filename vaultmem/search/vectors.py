"""The embedding cache: one vector per note text, in an `.npy` matrix.

Rows are keyed by a hash of the text embedded (and the model's name), so a
note is embedded once, an edited note only is re-embedded, and a note moved
or renamed keeps its vector. The cache lives under
`.vaultmem/index/vectors/<model>/` (`vectors.npy` + `rows.json`) and is
derived: deleting it costs one re-embedding, with identical results.
Search is a brute-force matrix product: at the scale of one person's or one
agent's memory (up to ~100k notes) that is a few milliseconds, no vector
database needed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np

STORE_VERSION = 1
EMBED_BATCH = 64


def text_hash(model_name: str, text: str) -> str:
    return hashlib.sha1(f"{model_name}\x00{text}".encode("utf-8")).hexdigest()


def folder_name(model_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model_name)[:80] or "model"


class VectorStore:
    """Vectors of the vault's notes for one embedding model."""

    def __init__(self, folder: Path, model_name: str):
        self.folder = Path(folder)
        self.model_name = model_name
        self.dim = 0
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.hashes: list[str] = []
        self.row_of_hash: dict[str, int] = {}
        self.row_of_path: dict[str, int] = {}
        self.stamp_of_path: dict[str, list] = {}
        self.paths: list[str] = []
        self.path_rows = np.zeros(0, dtype=np.int64)
        self._dirty = False
        self._load()

    # ------------------------------------------------------------ persistence

    def _load(self) -> None:
        try:
            meta = json.loads((self.folder / "rows.json").read_text(encoding="utf-8"))
            if meta.get("version") != STORE_VERSION or meta.get("model") != self.model_name:
                return
            matrix = np.load(self.folder / "vectors.npy", allow_pickle=False)
            if matrix.ndim != 2 or matrix.shape[0] != len(meta["hashes"]):
                return
        except (OSError, ValueError, KeyError):
            return  # no cache yet, or a damaged one: re-embed
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.dim = matrix.shape[1]
        self.hashes = list(meta["hashes"])
        self.row_of_hash = {h: i for i, h in enumerate(self.hashes)}
        self.stamp_of_path = {p: v for p, v in meta.get("paths", {}).items() if v[1] in self.row_of_hash}

    def save(self) -> None:
        """Write the cache if it changed (atomically: temp files, then rename)."""
        if not self._dirty:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp_vectors = self.folder / f".vectors.{os.getpid()}.npy"
        tmp_rows = self.folder / f".rows.{os.getpid()}.json"
        np.save(tmp_vectors, self.matrix, allow_pickle=False)
        tmp_rows.write_text(json.dumps({"version": STORE_VERSION, "model": self.model_name, "hashes": self.hashes,
                                         "paths": self.stamp_of_path}),
                            encoding="utf-8")
        os.replace(tmp_vectors, self.folder / "vectors.npy")
        os.replace(tmp_rows, self.folder / "rows.json")
        self._dirty = False

    # ------------------------------------------------------------ keeping in step

    def sync(self, notes: dict[str, tuple[tuple, object]], embedder, text_of=str) -> int:
        """Make every note's row the vector of its current text; returns how many were embedded.

        `notes` maps path -> (file stamp, note) for every note; `text_of(note)`
        is the text to embed, computed only for notes whose stamp changed.
        """
        changed = {p: (stamp, text_of(item)) for p, (stamp, item) in notes.items()
                   if p not in self.stamp_of_path or self.stamp_of_path[p][0] != list(stamp)}
        removed = [p for p in self.stamp_of_path if p not in notes]
        if not changed and not removed and self.paths:
            return 0
        return self.update(changed, removed, embedder)

    def update(self, changed: dict[str, tuple[tuple, str]], removed, embedder) -> int:
        """Embed the `changed` notes' texts where new, drop `removed` paths; returns how many were embedded."""
        digests = {path: text_hash(self.model_name, text) for path, (_stamp, text) in changed.items()}
        missing: dict[str, str] = {}
        for path, digest in digests.items():
            if digest not in self.row_of_hash and digest not in missing:
                missing[digest] = changed[path][1]
        if missing:
            # Longest first over the whole set, so each batch pads to texts of its own length.
            items = sorted(missing.items(), key=lambda item: len(item[1]), reverse=True)
            vectors = [embedder.embed([text for _, text in items[i:i + EMBED_BATCH]], kind="passage")
                       for i in range(0, len(items), EMBED_BATCH)]
            new = np.vstack(vectors).astype(np.float32)
            if self.dim != new.shape[1]:
                self.matrix, self.hashes, self.row_of_hash = np.zeros((0, new.shape[1]), np.float32), [], {}
                self.stamp_of_path = {}
            self.dim = new.shape[1]
            start_row = len(self.hashes)
            self.matrix = np.vstack([self.matrix, new])
            for offset, (digest, _text) in enumerate(items):
                self.hashes.append(digest)
                self.row_of_hash[digest] = start_row + offset
        for path in removed:
            self.stamp_of_path.pop(path, None)
        for path, digest in digests.items():
            self.stamp_of_path[path] = [list(changed[path][0]), digest]
        if changed or removed:
            self._dirty = True
        used = {digest for _stamp, digest in self.stamp_of_path.values()}
        if len(self.hashes) > 1.5 * len(used) + 64:
            self._compact(used)
        self.row_of_path = {path: self.row_of_hash[digest] for path, (_s, digest) in self.stamp_of_path.items()}
        self.paths = list(self.row_of_path)
        self.path_rows = np.fromiter(self.row_of_path.values(), dtype=np.int64, count=len(self.paths))
        return len(missing)

    def _compact(self, used: set[str]) -> None:
        keep = [i for i, digest in enumerate(self.hashes) if digest in used]
        self.matrix = self.matrix[keep]
        self.hashes = [self.hashes[i] for i in keep]
        self.row_of_hash = {digest: i for i, digest in enumerate(self.hashes)}
        self._dirty = True

    # ------------------------------------------------------------ search

    def search(self, query_vector: np.ndarray, limit: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        """[(path, cosine)] best first; `mask` (aligned with `self.paths`) keeps only some notes."""
        if not self.paths or self.matrix.shape[0] == 0:
            return []
        scores = (self.matrix @ query_vector.astype(np.float32))[self.path_rows]
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        limit = min(limit, len(self.paths))
        top = np.argpartition(-scores, limit - 1)[:limit]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.paths[i], float(scores[i])) for i in top if np.isfinite(scores[i])]

    def vector_of(self, path: str) -> np.ndarray | None:
        row = self.row_of_path.get(path)
        return None if row is None else self.matrix[row]
