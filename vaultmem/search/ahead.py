"""Embedding an import's next texts while its current ones are added.

`Vault.add_many` with the checks on embeds a batch's texts first (one model run per
64 texts), then adds them one by one (the check, the file, the catalog, the vector
row). Taken in turns, the model leaves the adds waiting and the adds leave a core
idle: the model runs on every core, an add's Python on one. Here the next batch's
texts are embedded in a background thread while this batch is added, so the two
share the cores; the next batch takes the vectors ready (waiting for the run only if
it is still going) and embeds at once only what is missing.

Only for a model that may run in two threads at once (ONNX Runtime sessions and the
tokenizers library may, `Embedder.concurrent`); with another the texts are embedded
in turn as before. Nothing here touches the vault: the vectors are the model's, the
same as a run in the calling thread gives.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

Embed = Callable[[dict[str, str]], dict[str, np.ndarray]]  # text hash -> text, to text hash -> vector


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
