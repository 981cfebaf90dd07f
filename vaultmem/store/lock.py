"""The vault's write lock, with a bounded wait that ends in a clear error.

Every write to a vault takes `.vaultmem/write.lock` (a file lock, so it
holds across processes: the watcher, hooks, CLI commands). A process that
hangs while holding it must not turn every other command into an opaque
timeout: after VAULTMEM_LOCK_WAIT seconds (default 60) the waiter gives up
with `LockTimeout`, which names the lock file, how long it waited and, where
the system tells (Linux's /proc/locks), which process holds it.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from vaultmem.errors import BadInput, LockTimeout, NotFound

DEFAULT_WAIT = 60.0
WAIT_VARIABLE = "VAULTMEM_LOCK_WAIT"


def lock_wait() -> float:
    """Seconds a write waits for the lock: $VAULTMEM_LOCK_WAIT, else 60."""
    raw = os.environ.get(WAIT_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_WAIT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise BadInput(f"{WAIT_VARIABLE}={raw!r} is not a number of seconds; set it to e.g. 60, or unset it")
    return seconds


class WriteLock:
    """A re-entrant lock on one file, shared by every process that opens it.

    Re-entrant per thread (the same thread may nest `with`); two threads of one
    process exclude each other like two processes do.
    """

    def __init__(self, path: str | os.PathLike, wait: float | None = None):
        from filelock import FileLock

        self.path = Path(path)
        self.wait = lock_wait() if wait is None else wait
        self._lock = FileLock(str(self.path), timeout=self.wait)
        self._nested = threading.local()  # .depth: takes inside this thread's own hold

    def acquire(self, wait: float | None = None) -> None:
        """Take the lock, waiting at most `wait` seconds (default: the lock's wait)."""
        from filelock import Timeout

        if self._lock.is_locked:  # this thread holds it (a batch's adds): no trip through filelock
            self._nested.depth = getattr(self._nested, "depth", 0) + 1
            return
        if not self.path.parent.is_dir():
            # filelock would make the folder again: a vault moved or deleted under a long-lived
            # process (the watcher, the MCP server) would come back, empty, at its old path.
            raise NotFound(f"{self.path.parent.parent} is no vault any more (its {self.path.parent.name}/ folder is "
                           "gone: moved, renamed or deleted); nothing was written. Open the vault where it is now")
        wait = self.wait if wait is None else wait
        started = time.monotonic()
        try:
            self._lock.acquire(timeout=wait)
        except Timeout:
            raise LockTimeout(self.path, time.monotonic() - started, lock_holder(self.path)) from None

    def release(self) -> None:
        if getattr(self._nested, "depth", 0):
            self._nested.depth -= 1
            return
        self._lock.release()

    @property
    def is_locked(self) -> bool:
        """Whether this process (this thread) holds it."""
        return self._lock.is_locked

    def __enter__(self) -> "WriteLock":
        self.acquire()
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()

    @contextmanager
    def for_reading(self, wait: float):
        """Hold the lock if it comes free within `wait` seconds, else go on without it.

        For reports that only read (`health`): a consistent view when it can be
        had, and an answer either way. Yields None, or the LockTimeout that says
        who holds the lock (the view may then be in the middle of a write).
        """
        try:
            self.acquire(wait)
        except LockTimeout as busy:
            yield busy
            return
        try:
            yield None
        finally:
            self.release()


def lock_holder(path: str | os.PathLike) -> str | None:
    """Which process holds a file lock on `path`, as "pid N (command)"; None where the system does not say.

    Reads /proc/locks (Linux): flock locks are listed by device and inode.
    """
    try:
        info = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            lines = locks.read().splitlines()
    except OSError:
        return None
    wanted = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6:
            continue  # "->" marks a process waiting for the lock, not holding it
        pid, where = fields[4], fields[5]
        if where == wanted and pid.isdigit() and int(pid) > 0:
            command = _command_line(int(pid))
            return f"pid {pid}" + (f" ({command})" if command else "")
    return None


def _command_line(pid: int, limit: int = 80) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            words = file.read().split(b"\0")
    except OSError:
        return ""
    text = " ".join(" ".join(w.decode("utf-8", "replace").split()) for w in words if w)  # one line, always
    return text if len(text) <= limit else text[: limit - 3] + "..."
