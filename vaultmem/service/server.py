"""The local recall service: `vaultmem watch` answers recall over a Unix socket.

An agent hook starts a new `vaultmem recall` process on every prompt; loading
the embedding model and opening the indexes each time would cost most of a
second. The watcher keeps them loaded, and the CLI becomes a thin client
that sends one JSON line and prints the answer; when no watcher runs (or it
does not answer in time) the CLI recalls in-process instead.

The socket lives in a folder only this user can enter
(`<tmp>/vaultmem-<uid>/`, mode 0700; the socket itself 0600), named by a hash
of the vault's path, so it works for vaults in synced folders and long paths.
The watcher refuses a folder that is not safely this user's (another user's,
a symlink, open to others), as the clients do. The client side (`ask`,
`ask_watcher`, `socket_path`) is service/client.py, which the recall fast
path and the hooks import on every prompt.

Connections cost no thread while they send their request: one thread reads
every connection (a selector), and only a whole request goes to the small
pool of WORKERS that answer. A connection that has not sent its request
within READ_TIMEOUT is closed, and so is the oldest unread one when
MAX_CONNECTIONS are open, so idle or stuck clients cannot starve the service.
"""

from __future__ import annotations

import json
import os
import sys

# `ask` is re-exported for callers that still import it from here (ops/corrections.py).
from vaultmem.errors import UnsafeSocket, VaultmemError
from vaultmem.service.client import ANSWERING, MAX_REQUEST, PROTOCOL, ask, socket_path, socket_problem

__all__ = ["ask", "prepare_socket", "private_socket_dir", "serve", "socket_path"]

READ_TIMEOUT = 3.0  # seconds a client has to send its request line
REPLY_TIMEOUT = 30.0  # seconds a client has to take its answer
MAX_CONNECTIONS = 64  # open at once (reading or being answered)
WORKERS = 8  # requests answered at once; recall is serialised by the engine, writes by the write lock
INTERNAL_ERROR = "internal error in the watcher (its log has the details); the client recalls in-process"


def private_socket_dir(path: str) -> None:
    """Create the socket's folder for this user only; refuse one that is not safely this user's."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except FileExistsError:
        pass  # a dangling symlink or a file: socket_problem names it
    problem = socket_problem(path)
    if problem:
        raise UnsafeSocket(f"will not serve from {folder}: {problem}")


def prepare_socket(vault_root: str) -> str:
    """The socket's path, once its folder is safe and no other watcher serves the vault.

    `vaultmem watch` calls it before loading the model, so a refusal costs nothing.
    """
    path = socket_path(vault_root)
    private_socket_dir(path)
    if os.path.lexists(path) and ask(vault_root, {"op": "ping"}, timeout=1.0) is not None:
        raise VaultmemError(f"a watcher already serves {vault_root} (socket {path}); stop it first")
    return path


def serve(vault_root: str, handle, ready=None, stop_event=None, log=None) -> None:
    """Answer requests with `handle(request) -> dict` until `stop_event` is set.

    `handle` runs on up to WORKERS threads at once and must be thread-safe (the
    engine locks). `log(text)` gets what an operator needs to see (the
    traceback of a request that failed); default: stderr.
    """
    import socket
    import threading

    path = prepare_socket(vault_root)
    if os.path.lexists(path):
        os.unlink(path)  # a stale socket of a watcher that died
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    listener.listen(128)

    def answer(request):
        ANSWERING.path = path  # what answering asks of this socket, it does itself (client.ask)
        try:
            return handle(request)
        finally:
            ANSWERING.path = None

    loop = _ConnectionLoop(listener, answer, log or _log_to_stderr)
    thread = threading.Thread(target=loop.run, name="vaultmem-socket", daemon=True)
    thread.start()
    try:
        if ready:
            ready(path)
        stop_event = stop_event or threading.Event()
        while not stop_event.wait(1.0):  # (a timed wait: the main thread runs a signal's handler within 1 s)
            pass
    finally:
        loop.stop()
        thread.join(timeout=5)
        listener.close()
        if os.path.lexists(path):
            os.unlink(path)


class _ConnectionLoop:
    """Accepts and reads every connection on one thread; whole requests go to the worker pool."""

    def __init__(self, listener, handle, log):
        import selectors
        import threading
        from concurrent.futures import ThreadPoolExecutor

        self.listener = listener
        self.handle = handle
        self.log = log
        self.selector = selectors.DefaultSelector()
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="vaultmem-request")
        self.reading: dict = {}  # connection -> [bytearray, deadline]; in accept order, oldest first
        self.answering = 0
        self.counter_lock = threading.Lock()
        self.stopping = threading.Event()

    def run(self) -> None:
        import selectors
        import time

        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ)
        while not self.stopping.is_set():
            for key, _events in self.selector.select(timeout=0.2):
                if key.fileobj is self.listener:
                    self._accept()
                else:
                    self._read(key.fileobj)
            now = time.monotonic()
            for connection in [c for c, (_b, deadline) in self.reading.items() if deadline < now]:
                self._drop(connection)  # idle: it had READ_TIMEOUT to send one line
        for connection in list(self.reading):
            self._drop(connection)
        self.selector.close()

    def stop(self) -> None:
        self.stopping.set()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def _accept(self) -> None:
        import selectors
        import time

        while True:
            try:
                connection, _address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of file descriptors, say: let the clients recall in-process
                self.log(f"vaultmem watch: cannot accept a connection: {exc}")
                return
            with self.counter_lock:
                full = len(self.reading) + self.answering >= MAX_CONNECTIONS
            if full and self.reading:
                self._drop(next(iter(self.reading)))  # the oldest still-silent connection makes room
            elif full:
                connection.close()  # every slot is answering a request: this client recalls itself
                continue
            connection.setblocking(False)
            self.reading[connection] = [bytearray(), time.monotonic() + READ_TIMEOUT]
            self.selector.register(connection, selectors.EVENT_READ)

    def _read(self, connection) -> None:
        buffer = self.reading[connection][0]
        try:
            chunk = connection.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(connection)
            return
        if not chunk and not buffer:
            self._drop(connection)  # connected and left without a word
            return
        buffer += chunk
        end = buffer.find(b"\n")
        if end > MAX_REQUEST or (end < 0 and len(buffer) > MAX_REQUEST):
            self._dispatch(connection, None, f"request too large: over {MAX_REQUEST} bytes")
        elif end >= 0:
            self._dispatch(connection, bytes(buffer[:end]), None)
        elif not chunk:
            self._dispatch(connection, bytes(buffer), None)  # the client closed its side without a newline

    def _dispatch(self, connection, line: bytes | None, error: str | None) -> None:
        self.selector.unregister(connection)
        del self.reading[connection]
        with self.counter_lock:
            self.answering += 1
        try:
            self.pool.submit(self._answer, connection, line, error)
        except RuntimeError:  # the pool is shut down: the service is stopping
            self._finished(connection)

    def _answer(self, connection, line: bytes | None, error: str | None) -> None:
        """On a worker: the request's answer, written back; never raises."""
        try:
            answer = self._reply(line, error)
            connection.setblocking(True)
            connection.settimeout(REPLY_TIMEOUT)
            connection.sendall(answer)
        except OSError:
            pass  # the client went away or stopped reading: its own fallback takes over
        finally:
            self._finished(connection)

    def _reply(self, line: bytes | None, error: str | None) -> bytes:
        """The encoded answer to one request line (or to one refused unread); a failure is a
        generic error, logged here."""
        if error:
            answer = {"ok": False, "error": error}
        else:
            try:
                request = json.loads(line.decode("utf-8"))
            except ValueError:
                answer = {"ok": False, "error": "bad request: not one line of JSON"}
            else:
                answer = self._handle(request)
        try:
            return json.dumps(dict(answer, protocol=PROTOCOL), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError):
            return json.dumps(self._internal_error(), ensure_ascii=False).encode("utf-8")

    def _handle(self, request) -> dict:
        if not isinstance(request, dict):
            return {"ok": False, "error": "bad request: not a JSON object"}
        if request.get("protocol") != PROTOCOL:
            return {"ok": False, "error": "protocol mismatch"}
        try:
            return self.handle(request)
        except VaultmemError as exc:  # a refusal: its message is made for a person
            return {"ok": False, "error": str(exc)}
        except Exception:  # noqa: BLE001 - one bad request must not stop the service
            return self._internal_error()

    def _internal_error(self) -> dict:
        """A reply that shows no internals (the traceback is logged; sent too only with VAULTMEM_DEBUG=1)."""
        import traceback

        trace = traceback.format_exc()
        self.log(f"vaultmem watch: a request failed:\n{trace.rstrip()}")
        answer = {"ok": False, "error": INTERNAL_ERROR, "protocol": PROTOCOL}
        if os.environ.get("VAULTMEM_DEBUG"):
            answer["traceback"] = trace
        return answer

    def _drop(self, connection) -> None:
        try:
            self.selector.unregister(connection)
        except (KeyError, ValueError):
            pass
        self.reading.pop(connection, None)
        connection.close()

    def _finished(self, connection) -> None:
        connection.close()
        with self.counter_lock:
            self.answering -= 1


def _log_to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
