"""The local recall service: `vaultmem watch` answers recall over a Unix socket.

An agent hook starts a new `vaultmem recall` process on every prompt; loading
the embedding model and opening the indexes each time would cost most of a
second. The watcher keeps them loaded, and the CLI becomes a thin client
that sends one JSON line and prints the answer; when no watcher runs (or it
does not answer in time) the CLI recalls in-process instead.

The socket lives in a folder only this user can enter
(`<tmp>/vaultmem-<uid>/`, mode 0700; the socket itself 0600), named by a hash
of the vault's path, so it works for vaults in synced folders and long paths.
The client side (`ask`, `ask_watcher`, `socket_path`) is service/client.py,
which the recall fast path and the hooks import on every prompt.
"""

from __future__ import annotations

import json
import os

# `ask` is re-exported for callers that still import it from here (ops/corrections.py).
from vaultmem.service.client import MAX_MESSAGE, PROTOCOL, ask, socket_path

__all__ = ["ask", "private_socket_dir", "serve", "socket_path"]


def private_socket_dir(path: str) -> None:
    """Create the socket's folder for this user only, and refuse one someone else owns."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.stat(folder)
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to another user; remove it or set TMPDIR")
    os.chmod(folder, 0o700)


def serve(vault_root: str, handle, ready=None, stop_event=None) -> None:
    """Answer requests with `handle(request) -> dict` until `stop_event` is set.

    One thread per connection; `handle` must be thread-safe (the engine locks).
    """
    import socketserver
    import threading

    path = socket_path(vault_root)
    private_socket_dir(path)
    if os.path.exists(path):
        if ask(vault_root, {"op": "ping"}, timeout=1.0) is not None:
            raise RuntimeError(f"a watcher already serves {vault_root}")
        os.unlink(path)

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            try:
                line = self.rfile.readline(MAX_MESSAGE)
                request = json.loads(line.decode("utf-8"))
                if request.get("protocol") != PROTOCOL:
                    answer = {"ok": False, "error": "protocol mismatch"}
                else:
                    answer = handle(request)
            except Exception as exc:  # noqa: BLE001 - one bad request must not stop the service
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                if os.environ.get("VAULTMEM_DEBUG"):
                    import traceback

                    answer["traceback"] = traceback.format_exc()
            answer["protocol"] = PROTOCOL
            self.wfile.write(json.dumps(answer, ensure_ascii=False).encode("utf-8"))

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

    old_umask = os.umask(0o177)
    try:
        server = Server(path, Handler)
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    try:
        if ready:
            ready(path)
        (stop_event or threading.Event()).wait()
    finally:
        server.shutdown()
        server.server_close()
        if os.path.exists(path):
            os.unlink(path)
