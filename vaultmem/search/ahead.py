"""Embedding an import's next texts while its current ones are added.

`Vault.add_many` with the checks on embeds a batch's texts first (one model run per
64 texts), then adds them one by one (the check, the file, the catalog, the vector
row). Taken in turns, the model leaves the adds waiting and the adds leave a core
idle: the model runs on every core, an add's Python on one. Here the next batch's
texts are embedded in the background while this batch is added, so the two share the
cores; the next batch takes the vectors ready (waiting for the run only if it is still
going) and embeds at once only what is missing.

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
    """One background run at a time, and the vectors it left that were not taken yet."""

    def __init__(self, embed: Embed):
        self._embed = embed
        self._pool: ThreadPoolExecutor | None = None
        self._running: Future | None = None
        self._running_for: set[str] = set()
        self._done: dict[str, np.ndarray] = {}

    def take(self, digests) -> dict[str, np.ndarray]:
        """The vectors of `digests` (text hashes) embedded ahead, waiting for the run in
        progress if it holds one of them; they are handed over (not kept here). A run that
        failed gives nothing: the caller embeds those texts itself (and hears the error)."""
        wanted = set(digests)
        if self._running is not None and (wanted & self._running_for or self._running.done()):
            self._collect()
        return {digest: self._done.pop(digest) for digest in wanted if digest in self._done}

    def start(self, texts: dict[str, str]) -> None:
        """Embed `texts` (text hash -> text) in the background, those not embedded or under
        way already; nothing starts while a run is still going (the caller's next `take`
        ends it, and asks again)."""
        if self._running is not None:
            return
        todo = {digest: text for digest, text in texts.items() if digest not in self._done}
        if not todo:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vaultmem-embed-ahead")
        self._running_for = set(todo)
        self._running = self._pool.submit(self._embed, todo)

    def _collect(self) -> None:
        running, self._running, self._running_for = self._running, None, set()
        try:
            self._done.update(running.result())
        except Exception:  # noqa: BLE001 - the texts are embedded again in the caller, which reports it
            pass

    def close(self) -> None:
        """Done with embedding ahead (the import ended): the run under way is let finish (its
        vectors stay to be taken), and a second process, if any, ends."""
        if self._running is not None:
            self._collect()
        close = getattr(self._embed, "close", None)
        if close is not None:
            close()
