"""The client side of the recall service: ask the vault's watcher over its Unix socket.

Light to import (os, json, socket, hashlib): the recall fast path and the
Claude Code hooks run it on every agent prompt. The server side is
`service/server.py`; the socket's place is decided here, for both.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket

PROTOCOL = 1
CONNECT_TIMEOUT = 0.2
MAX_MESSAGE = 16 * 1024 * 1024


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


def ask(vault_root: str, request: dict, timeout: float = 5.0) -> dict | None:
    """Send one request to the vault's watcher; None when no watcher answers."""
    path = socket_path(vault_root)
    if not os.path.exists(path):
        return None
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(CONNECT_TIMEOUT)
        client.connect(path)
        client.settimeout(timeout)
        client.sendall(json.dumps(dict(request, protocol=PROTOCOL)).encode("utf-8") + b"\n")
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


def ask_watcher(vault, query, top_k=None, namespace=None, kind=None, include_hidden=False) -> dict | None:
    """The watcher's recall answer, or None (none running, disabled, or it failed): then recall in-process."""
    if os.environ.get("VAULTMEM_NO_SERVER"):
        return None
    from vaultmem.store.discovery import discover_root

    request = {"op": "recall", "query": query, "top_k": top_k, "namespace": namespace, "kind": kind,
               "include_hidden": include_hidden, "now": os.environ.get("VAULTMEM_NOW")}
    answer = ask(discover_root(vault), request)
    return answer if answer and answer.get("ok") else None
