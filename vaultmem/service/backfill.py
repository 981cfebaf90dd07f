"""The watcher's thread that gives every note its cross-lingual vector.

A routed recall embeds only a budget of the notes that lack one (search/crosslingual_fill.py).
In the watcher, this thread embeds the rest: woken by a routed recall that left some lacking,
and at start when the vault was routed on before (its cross-lingual vectors exist). It asks
the engine for everything at once, and the engine takes its locks a batch at a time, so
English recalls, edits and writes through the socket go on meanwhile. A vault nobody asked in
another language never wakes it: the cross-lingual model is never loaded for it.
"""

from __future__ import annotations

import threading

IDLE_WAIT = 1.0  # how often an idle thread looks at the stop flag


class BackgroundFill:
    """One thread per watcher, started by the first request."""

    def __init__(self, engine, log=print):
        self.engine = engine
        self.log = log
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()

    def request(self) -> None:
        """Fill what lacks a vector now (or after the fill under way)."""
        self._wake.set()
        with self._starting:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="vaultmem-crosslingual-fill", daemon=True)
                self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the batch under way (a batch stored is kept; the next fill goes on from it)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._wake.wait(IDLE_WAIT):
                continue
            self._wake.clear()
            try:
                self.engine.fill_crosslingual(stop=self._stop)
            except Exception as exc:  # noqa: BLE001 - the watcher keeps serving; the next routed query retries
                self.log(f"vaultmem watch: could not fill the cross-lingual vectors: {exc}")


def start_background_fill(engine, log=print) -> BackgroundFill:
    """Attach a fill thread to `engine`, and start it now if the vault was routed on before."""
    fill = BackgroundFill(engine, log)
    engine.fill_in_background(fill.request)
    if engine.crosslingual_in_use():
        fill.request()
    return fill
