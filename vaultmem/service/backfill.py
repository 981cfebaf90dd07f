"""The watcher's thread that gives notes the vectors they lack, one batch at a time.

Two kinds of vectors can be missing, and one thread fills both, in this order:

1. the vault's model (MiniLM): the notes a bounded sync left without one (the watcher
   serves after one sync of at most FILL_TURN texts, `RecallEngine.embed_limit`: a vault's
   first use, a big import or `git pull`). Woken when a sync leaves some; FILL_TURN texts a
   turn, shortest first (the most notes covered soonest), until none is left;
2. the cross-lingual model: the notes a routed recall left without one
   (search/crosslingual_fill.py). Woken by such a recall, and at start when the vault was
   routed on before (its cross-lingual vectors exist). A vault nobody asked in another
   language never loads that model.

Each batch's texts are read under the engine's lock, run through the model without it and
stored under it, so recalls, edits and writes through the socket go on meanwhile; a note
edited in between waits for its new text. While the vault's model fills, the heap's free
pages go back to the system every TRIM_EVERY turns and at the end (give_back_memory).
"""

from __future__ import annotations

import threading

IDLE_WAIT = 1.0  # how often an idle thread looks at the stop flag
RETRY_AFTER = 10.0  # seconds before a fill that failed (its model, its disk) is tried again
# Texts per turn of the vault's model: a fraction of a second even for long notes on a busy
# machine, so stopping (the watcher's exit) waits at most that long.
FILL_TURN = 16
# Every this many turns, and when the fill ends, the heap's free pages go back to the system:
# glibc keeps what the model's batches of every size freed (a watcher that embedded a 10k vault
# held ~460 MB afterwards, ~290 MB with this; no slower).
TRIM_EVERY = 25


class BackgroundFill:
    """One thread per watcher, started by the first request."""

    def __init__(self, engine, log=print):
        self.engine = engine
        self.log = log
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._crosslingual = False  # a routed recall (or the vault's past) asked for those vectors
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()

    def request(self, crosslingual: bool = False) -> None:
        """Fill what lacks a vector now (or after the fill under way): the vault's model's
        always, the cross-lingual model's too when `crosslingual` (once asked, kept asked)."""
        self._crosslingual = self._crosslingual or crosslingual
        self._wake.set()
        with self._starting:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="vaultmem-fill", daemon=True)
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
                self._fill_vault_model()
                if self._crosslingual and not self._stop.is_set():
                    self.engine.fill_crosslingual(stop=self._stop)
            except Exception as exc:  # noqa: BLE001 - the watcher keeps serving; the next request retries
                self.log(f"vaultmem watch: could not fill the notes' vectors: {exc}")
                self._stop.wait(RETRY_AFTER)  # the watcher asks again every IDLE_POLL: not that often

    def _fill_vault_model(self) -> None:
        turns = 0
        while self.engine.unembedded and not self._stop.is_set():
            turns += 1
            left = self.engine.fill(FILL_TURN)
            if not left or turns % TRIM_EVERY == 0:
                give_back_memory()


def start_background_fill(engine, log=print) -> BackgroundFill:
    """Attach a fill thread to `engine`, and start it now if notes lack a vector of the vault's
    model (a bounded first sync) or the vault was routed on before."""
    fill = BackgroundFill(engine, log)
    engine.fill_in_background(lambda: fill.request(crosslingual=True))
    routed_before = engine.crosslingual_in_use()
    if engine.unembedded or routed_before:
        fill.request(crosslingual=routed_before)
    return fill


def give_back_memory() -> None:
    """Return the heap's free pages to the system (glibc's malloc_trim); nothing elsewhere."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
