"""The watcher: file events -> index updates, and the recall service. No business logic.

A watchdog observer reports every change under the vault. Events for note
files (`.md` under memories/, skills/, archive/, no hidden part) are
collected and, once they pause for DEBOUNCE seconds (at most MAX_DELAY after
the first), handed to the recall engine, which re-reads just those files.
This covers editors that save by writing a temp file and renaming it over the
note (Obsidian, vim, VS Code), moves and renames (a rename keeps the note's
id, so it keeps its history), and deletions. Temp and swap files, `.obsidian/`,
`.vaultmem/` and `.git/` are ignored. A folder moved or deleted, or a missed
event, is caught by a full stat scan (RESCAN_EVERY seconds, and on start).
"""

from __future__ import annotations

import os
import threading
import time
import traceback
import warnings

from vaultmem.errors import LockTimeout
from vaultmem.store.catalog import NOTE_FOLDERS, is_note_path

DEBOUNCE = 0.15
MAX_DELAY = 0.5
RESCAN_EVERY = 60.0
IDLE_POLL = 0.05  # how often an idle loop looks at the stop flag and the rescan clock
# How long applying an edit waits for another process's index writes before trying again later:
# meanwhile the engine is free for requests (a reindex holds the index lock for minutes).
APPLY_LOCK_WAIT = 0.5
# After a turn of the loop failed (logged): the pause before it tries again, with a full check.
RETRY_AFTER = 10.0
CACHE_CHECK_EVERY = 1.0  # how often it checks that its caches are still those on disk (a reindex elsewhere)


class ChangeCollector:
    """Gathers note paths from watchdog events; a folder event asks for a full rescan."""

    def __init__(self, root: str):
        self.root = os.path.realpath(root)
        self.paths: set[str] = set()
        self.rescan = False
        self.first_at: float | None = None
        self.last_at = 0.0
        self.lock = threading.Lock()
        self.wake = threading.Event()

    def relative(self, path: str) -> str | None:
        full = os.path.realpath(path) if os.path.exists(path) else os.path.abspath(path)
        if not full.startswith(self.root + os.sep):
            return None
        return full[len(self.root) + 1:].replace(os.sep, "/")

    def add_event(self, event) -> None:
        for attr in ("src_path", "dest_path"):
            raw = getattr(event, attr, None)
            if not raw:
                continue
            rel = self.relative(os.fsdecode(raw))
            if rel is None:
                continue
            top = rel.split("/", 1)[0]
            if top not in NOTE_FOLDERS:
                continue
            if event.is_directory:
                if event.event_type in ("moved", "deleted") and attr == "src_path":
                    # "folder/": the notes recorded under it are looked for after the rescan (a
                    # folder deleted or moved out of the vault sends no event per file)
                    self.record((rel + "/",), rescan=True)
                continue
            if is_note_path(rel):
                self.record((rel,))

    def record(self, paths=(), rescan: bool = False) -> None:
        """Note paths to apply (from events, or put back by a batch that could not be applied)."""
        with self.lock:
            self.paths.update(paths)
            self.rescan = self.rescan or rescan
            now = time.monotonic()
            self.first_at = self.first_at or now
            self.last_at = now
        self.wake.set()

    def _due_at(self) -> float:
        """When the batch is due (caller holds the lock): DEBOUNCE after the last event, at
        most MAX_DELAY after the first."""
        return min(self.last_at + DEBOUNCE, self.first_at + MAX_DELAY)

    def due_in(self) -> float | None:
        """Seconds until the batch collected so far is due; None when there is none. The
        loop sleeps exactly that long, so an edit waits DEBOUNCE, not DEBOUNCE plus a poll."""
        with self.lock:
            if self.first_at is None:
                return None
            return max(0.0, self._due_at() - time.monotonic())

    def take_when_settled(self) -> tuple[set[str], bool] | None:
        """The batch once events paused (or waited long enough); None if not yet."""
        with self.lock:
            if self.first_at is None or time.monotonic() < self._due_at():
                return None
            batch, rescan = self.paths, self.rescan
            self.paths, self.rescan, self.first_at = set(), False, None
            return batch, rescan


def request_handler(engine):
    """What the recall service answers: `ping`, `recall` with the CLI's options, and
    `similar` (an add's search for memories it repeats or contradicts)."""
    from vaultmem import clock
    from vaultmem.core.present import hit_dicts
    from vaultmem.service.writes import WRITE_OPS, handle_write

    def handle(request: dict) -> dict:
        op = request.get("op")
        if op == "ping":
            return {"ok": True, "vault": str(engine.vault.root)}
        if op == "similar":
            pairs = engine.similar(request.get("text", ""), request.get("namespace", ""), request.get("kind"),
                                   int(request.get("limit") or 8))
            return {"ok": True, "similar": [[note.id, cosine] for note, cosine in pairs]}
        if op in WRITE_OPS:
            return handle_write(engine.vault, request)
        if op != "recall":
            return {"ok": False, "error": f"unknown op {op!r}"}
        now = clock.parse_datetime(request["now"]) if request.get("now") else clock.now()
        hits = engine.recall(request.get("query", ""), request.get("top_k"), request.get("namespace"),
                             request.get("kind"), _scope(request.get("include_hidden")), sync=False, now=now,
                             min_score=_score(request.get("min_score")))
        problems = engine.vault.catalog().problems
        coverage = engine.crosslingual_coverage_for(request.get("query", ""))
        return {"ok": True, "hits": hit_dicts(hits, now, engine.vault.config),
                "problems": [list(p) for p in problems], "model_problem": engine.model_problem,
                "crosslingual_problem": engine.crosslingual_problem_for(request.get("query", "")),
                "unembedded": engine.unembedded,
                "crosslingual_coverage": coverage.as_dict() if coverage else None}

    return handle


def run_watcher(engine, stop_event: threading.Event, on_update=None) -> None:
    """Keep `engine` in step with the vault until `stop_event` is set, while a thread gives
    notes the vectors they lack (service/backfill.py): those its bounded syncs left
    (`RecallEngine.embed_limit`), and the cross-lingual ones once a query was routed."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    from vaultmem.service.backfill import give_back_memory, start_background_fill

    # watchdog warns when a folder it watches is deleted and made again (a reindex's .vaultmem/
    # index, a checkout's folders): harmless, it watches the new one.
    warnings.filterwarnings("ignore", message="Callback with id .* already exists", category=RuntimeWarning)
    collector = ChangeCollector(str(engine.vault.root))
    engine.serving = True  # requests never wait for another process's index writes

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):
            if event.event_type in ("created", "modified", "moved", "deleted"):
                collector.add_event(event)

    observer = Observer()
    observer.schedule(Handler(), str(engine.vault.root), recursive=True)
    observer.start()
    fill = None
    try:
        result = engine.sync(full=True)
        give_back_memory()  # a first build's BM25 pool and catalog parse
        if on_update:
            on_update("scan", result)
        fill = start_background_fill(engine, log=lambda text: print(text, flush=True))
        clocks = {"scan": time.monotonic(), "cache check": time.monotonic()}
        while not stop_event.is_set():
            due = collector.due_in()
            collector.wake.wait(timeout=IDLE_POLL if due is None else due)
            collector.wake.clear()
            try:
                _turn(engine, collector, clocks, on_update)
            except Exception:  # noqa: BLE001 - ended here, the watcher would serve stale answers from now on
                print(f"vaultmem watch: could not follow the vault's changes; a full check in {RETRY_AFTER:.0f} s:\n"
                      + traceback.format_exc().rstrip(), flush=True)
                collector.record(rescan=True)
                stop_event.wait(RETRY_AFTER)
            if engine.unembedded:  # a sync (here or a request's) left more than it embeds: a big pull
                fill.request()
    finally:
        if fill is not None:
            fill.stop()
        observer.stop()
        observer.join(timeout=5)


def _turn(engine, collector: ChangeCollector, clocks: dict, on_update) -> None:
    """One turn of the watcher's loop: apply the edits that settled, else a full check every
    RESCAN_EVERY, else a look for caches a reindex elsewhere made anew."""
    from vaultmem.search.engine import REOPENED

    batch = collector.take_when_settled()
    now = time.monotonic()
    if batch is not None:
        paths, rescan = batch
        # Another process writing the indexes at length (a reindex, a big import): the notes
        # go into the view (found by their words) without waiting, holding the engine, for it.
        wait = 0 if engine.index_busy() else APPLY_LOCK_WAIT
        try:
            result = engine.sync(full=True, lock_wait=wait) if rescan else engine.apply(paths, lock_wait=wait)
        except LockTimeout:
            collector.record(paths, rescan)  # again after DEBOUNCE
            return
        result = dict(result, recorded=_record_hand_edits(engine.vault, paths))
        if on_update:
            on_update("rescan" if rescan else "update", result)
    elif now - clocks["scan"] > RESCAN_EVERY:
        try:
            engine.sync(full=True, lock_wait=APPLY_LOCK_WAIT)
            clocks["scan"] = now
        except LockTimeout:  # (as above) the next turn tries again
            pass
    elif now - clocks["cache check"] > CACHE_CHECK_EVERY:
        clocks["cache check"] = now
        follow_config(engine.vault, clocks)
        if engine.follow_replaced_caches() == REOPENED and on_update:  # a reindex elsewhere, done
            on_update("reopened", engine.reopened)


def follow_config(vault, clocks: dict) -> None:
    """A config.yaml edited while the watcher runs takes effect (it kept the settings it started
    with, while every other process read the new ones); one that cannot be read is named in the
    log, and the settings it had stay. (A new `recall.model` needs a restart of the watcher.)"""
    from vaultmem.config import load_config
    from vaultmem.errors import BadInput

    path = vault.state_dir / "config.yaml"
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = None
    if clocks.setdefault("config", stamp) == stamp:
        return
    clocks["config"] = stamp
    try:
        vault.config = load_config(path)
    except BadInput as exc:
        print(f"vaultmem watch: config.yaml changed but cannot be used: {exc}; keeping the settings it had",
              flush=True)
        return
    print("vaultmem watch: config.yaml changed: its settings are in effect now", flush=True)


def exit_when_idle(handle, seconds: float, stop_event: threading.Event):
    """Wrap a request handler so the service stops after `seconds` without a request."""
    last = [time.monotonic()]

    def handle_and_note(request: dict) -> dict:
        last[0] = time.monotonic()
        return handle(request)

    def watchdog():
        while not stop_event.wait(min(30.0, seconds / 4)):
            if time.monotonic() - last[0] > seconds:
                stop_event.set()

    threading.Thread(target=watchdog, name="vaultmem-idle", daemon=True).start()
    return handle_and_note


def _record_hand_edits(vault, paths) -> int:
    """Put edits a person made on the ledger as external edits (never fatal to the watcher)."""
    try:
        return vault.record_external_edits(paths)
    except Exception as exc:  # noqa: BLE001 - the watcher keeps serving recall; `verify` catches up
        print(f"vaultmem watch: could not record hand edits: {exc}", flush=True)
        return 0


def _score(value) -> float | None:
    """A request's relevance floor: a number from 0 to 1, else the vault's own."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1 \
        else None


def _scope(value):
    """Which hidden notes a recall request may see: True (all), "history" (superseded) or none."""
    return value if value in (True, "history") else False

