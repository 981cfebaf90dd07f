"""Embedding an import's next texts while its current ones are added.

`Vault.add_many` with the checks on embeds a batch's texts first (one model run per
64 texts), then adds them one by one (the check, the file, the catalog, the vector
row). Taken in turns, the model leaves the adds waiting and the adds leave a core
idle: the model runs on every core, an add's Python on one. Here the next batches'
texts are embedded in the background while this batch is added, so the two share the
cores; a batch takes the vectors ready, embeds itself what the background has not
started on, and waits only for the run going.

The background is a second process for an ONNX model (search/embed_worker.py: a
thread there would hand the interpreter lock back and forth with the adds, and cost
them as much as it saved), else a thread, for a model that may run in two threads at
once (`Embedder.concurrent`); with another the texts are embedded in turn as before.
Nothing here touches the vault: the vectors are the model's, the same as a run in the
calling thread gives.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

Embed = Callable[[dict[str, str]], dict[str, np.ndarray]]  # text hash -> text, to text hash -> vector


class InBackground:
    """How texts are embedded ahead: by a second process running the same model when the
    embedder says how to load it there (`settings`), else (or once that process fails:
    the rest of the import goes on without it) by `embedder` in the calling thread."""

    def __init__(self, embedder):
        from vaultmem.search.embed_worker import EmbedWorker

        self._embedder = embedder
        settings = getattr(embedder, "settings", None)
        self._worker = EmbedWorker(settings) if settings else None

    def __call__(self, texts: dict[str, str]) -> dict[str, np.ndarray]:
        from vaultmem.search.vectors import embed_texts

        if self._worker is not None:
            try:
                return dict(zip(texts, self._worker.embed(list(texts.values()))))
            except (OSError, EOFError, RuntimeError, ValueError):
                self._worker = None
        return embed_texts(self._embedder, texts)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()


class EmbedAhead:
    """Short runs queued on one background thread, in order, for the next few batches,
    and the vectors they left that were not taken yet. A batch whose texts are in runs not
    started yet drops those runs and embeds the texts itself (`holding`), waiting only for
    the run going: in a checked 10k import the model and the adds each take ~35 s of CPU,
    and with one run a batch ahead the adds waited 5-6 s for vectors early on, while the
    background sat idle for the last 4-10 s (run alone, 42-44 s; this way 40-42)."""

    def __init__(self, embed: Embed):
        self._embed = embed
        self._pool: ThreadPoolExecutor | None = None
        self._runs: list[tuple[Future, set[str]]] = []  # queued or running, oldest first
        self._done: dict[str, np.ndarray] = {}

    def take(self, digests) -> dict[str, np.ndarray]:
        """The vectors of `digests` (text hashes) embedded ahead, waiting for the runs that
        hold one of them (and those before them); they are handed over (not kept here). A
        run that failed gives nothing: the caller embeds those texts itself (and hears the
        error)."""
        wanted = set(digests)
        last = max((i for i, (_run, texts) in enumerate(self._runs) if wanted & texts), default=-1)
        while self._runs and (last >= 0 or self._runs[0][0].done()):
            self._collect()
            last -= 1
        return {digest: self._done.pop(digest) for digest in wanted if digest in self._done}

    def holding(self, digests, drop_queued: bool = False) -> set[str]:
        """Those of `digests` embedded ahead or in a run queued or going. `drop_queued`: runs
        holding one of them that have not started are dropped first (the caller embeds their
        texts itself rather than wait behind the run going)."""
        digests = set(digests)
        if drop_queued:
            self._runs = [(run, texts) for run, texts in self._runs if not (texts & digests and run.cancel())]
        held = {digest for digest in digests if digest in self._done}
        for _run, texts in self._runs:
            held |= texts & digests
        return held

    def start(self, texts: dict[str, str]) -> None:
        """Queue a run on `texts` (text hash -> text), those not embedded or queued already."""
        queued = set().union(*(texts for _run, texts in self._runs)) if self._runs else set()
        todo = {digest: text for digest, text in texts.items() if digest not in self._done and digest not in queued}
        if not todo:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vaultmem-embed-ahead")
        self._runs.append((self._pool.submit(self._embed, todo), set(todo)))

    def _collect(self) -> None:
        run, _texts = self._runs.pop(0)
        try:
            self._done.update(run.result())
        except Exception:  # noqa: BLE001 - the texts are embedded again in the caller, which reports it
            pass

    def close(self) -> None:
        """Done with embedding ahead (the import ended): the runs queued are let finish (their
        vectors stay to be taken), and a second process, if any, ends."""
        while self._runs:
            self._collect()
        close = getattr(self._embed, "close", None)
        if close is not None:
            close()
