"""The client side of the recall service: ask the vault's watcher over its Unix socket.

Light to import (os, stat, json, socket, hashlib): the recall fast path and
the Claude Code hooks run it on every agent prompt. The server side is
`service/server.py`; the socket's place is decided here, for both.

The socket's folder is in a shared temp folder, where another user could
create `vaultmem-<uid>/` first and answer recall with memories of their own
making. So a client talks only to a socket that is its user's, in a folder
that is its user's alone (`socket_problem`); otherwise it recalls in-process.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import threading

PROTOCOL = 1
CONNECT_TIMEOUT = 0.2
MAX_MESSAGE = 16 * 1024 * 1024  # a reply
MAX_REQUEST = 1024 * 1024  # a request: a query or a note's text, with room to spare


# The socket the calling thread is answering a request of (service/server.serve sets it in its
# workers). Work done for a request (an add's duplicate check, holding the write lock) must not
# ask that same socket: the answer would wait for a free worker, each of them waiting for that
# lock (5 s an add, then exit 75), so it is done in-process.
ANSWERING = threading.local()


def socket_path(vault_root: str) -> str:
    """Where the watcher of `vault_root` listens."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    digest = hashlib.sha256(os.path.realpath(vault_root).encode("utf-8")).hexdigest()[:16]
    return os.path.join(_temp_dir(), f"vaultmem-{uid}", f"{digest}.sock")


def _temp_dir() -> str:
    """The user's temp folder ($TMPDIR, $TEMP, $TMP, else /tmp), without importing `tempfile`."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        if os.environ.get(name):
            return os.environ[name]
    return "/tmp" if os.name != "nt" else os.path.expanduser("~\\AppData\\Local\\Temp")


def socket_problem(path: str) -> str | None:
    """Why the socket at `path` must not be trusted (one line), or None when it is safe to talk to.

    Safe: its folder is a real folder (no symlink) owned by this user with no
    access for group or others, and the socket, if there, is a socket owned by
    this user. Nobody but this user (and root) can then have put it there.
    """
    if not hasattr(os, "getuid"):
        return None  # Windows: no Unix permissions to check (and no AF_UNIX watcher before 10)
    uid = os.getuid()
    folder = os.path.dirname(path)
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot check {folder}: {exc.strerror}"
    if stat.S_ISLNK(info.st_mode):
        return f"{folder} is a symlink, not a folder vaultmem made; remove it"
    if not stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a folder; remove it"
    if info.st_uid != uid:
        return (f"{folder} belongs to uid {info.st_uid}, not to you (uid {uid}): another user may pose as "
                "your watcher; remove it (as root) or point TMPDIR at a folder of your own")
    if stat.S_IMODE(info.st_mode) & 0o077:
        return (f"{folder} has mode {stat.S_IMODE(info.st_mode):o}, open to other users; "
                f"`chmod 700 {folder}` or remove it")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot check {path}: {exc.strerror}"
    if not stat.S_ISSOCK(info.st_mode):
        return f"{path} is not a socket; remove it"
    if info.st_uid != uid:
        return f"{path} belongs to uid {info.st_uid}, not to you (uid {uid}); remove it"
    return None


def ask(vault_root: str, request: dict, timeout: float = 5.0) -> dict | None:
    """Send one request to the vault's watcher; None when no watcher answers, or when its socket
    is not safely this user's (`socket_problem`): the caller then does the work itself."""
    path = socket_path(vault_root)
    if getattr(ANSWERING, "path", None) == path or not os.path.exists(path) or socket_problem(path):
        return None
    message = json.dumps(dict(request, protocol=PROTOCOL)).encode("utf-8") + b"\n"
    if len(message) > MAX_REQUEST:
        return None  # the watcher would refuse it
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(CONNECT_TIMEOUT)
        client.connect(path)
        client.settimeout(timeout)
        client.sendall(message)
        client.shutdown(socket.SHUT_WR)
        chunks, size = [], 0
        while True:
            chunk = client.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_MESSAGE:
                return None
        answer = json.loads(b"".join(chunks).decode("utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        client.close()
    if not isinstance(answer, dict) or answer.get("protocol") != PROTOCOL:
        return None
    return answer


def watcher_status(vault_root: str) -> dict:
    """For `health`: the socket's path, whether a watcher answers on it, and why it is ignored if it is."""
    path = socket_path(vault_root)
    problem = socket_problem(path)
    running = problem is None and ask(vault_root, {"op": "ping"}, timeout=1.0) is not None
    return {"socket": path, "running": running, "problem": problem}


def ask_watcher(vault, query, top_k=None, namespace=None, kind=None, include_hidden=False,
                min_score=None) -> dict | None:
    """The watcher's recall answer, or None (none running, disabled, or it failed): then recall in-process."""
    if os.environ.get("VAULTMEM_NO_SERVER"):
        return None
    from vaultmem.store.discovery import discover_root

    request = {"op": "recall", "query": query, "top_k": top_k, "namespace": namespace, "kind": kind,
               "include_hidden": include_hidden, "now": os.environ.get("VAULTMEM_NOW"), "min_score": min_score}
    answer = ask(discover_root(vault), request)
    return answer if answer and answer.get("ok") else None
