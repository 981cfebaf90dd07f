"""Writes through the watcher: `add` and `grade` sent over its socket.

When a watcher serves the vault, a short-lived CLI process hands it the write
instead of doing it itself: the watcher has the model and the indexes loaded,
so an add's duplicate/contradiction check costs a query, not a model load.
The watcher runs the same Vault operation under the same write lock; the
answer is the JSON data the CLI prints. What the client knows of its
environment (session, project, pinned clock) goes with the request; a watcher
whose clock is pinned differently answers "no", and the client writes itself.
"""

from __future__ import annotations

import os

from vaultmem.errors import VaultmemError

WRITE_OPS = ("add", "grade")


def handle_write(vault, request: dict) -> dict:
    """The watcher's side: run one write; a refusal travels back with its exit code."""
    if request.get("now") != os.environ.get("VAULTMEM_NOW"):
        return {"ok": False, "error": "the watcher's clock is pinned differently; write in-process"}
    args = dict(request.get("args") or {})
    try:
        if request["op"] == "add":
            from vaultmem.clock import parse_datetime

            if args.get("created"):
                args["created"] = parse_datetime(args["created"], what="--created")
            data = added_data(vault.add(args.pop("text"), args.pop("namespace"), **args), vault.config)
        else:
            from vaultmem.clock import now
            from vaultmem.core.present import note_dict

            data = note_dict(vault.grade(args.pop("note_id"), args.pop("rating"), **args), now(), vault.config)
    except VaultmemError as exc:
        return {"ok": True, "refused": {"message": str(exc), "exit_code": exc.exit_code}}
    return {"ok": True, "data": data}


def send_write(vault_root, op: str, args: dict) -> dict | None:
    """The client's side: the data of a write the watcher made, or None (no watcher: write here).

    A refusal is raised here as the same error, with the same exit code.
    """
    if os.environ.get("VAULTMEM_NO_SERVER"):
        return None
    from vaultmem.service.server import ask
    from vaultmem.store.lock import lock_wait

    # The watcher may wait that long for the write lock, then do the work: give up only after both.
    answer = ask(str(vault_root), {"op": op, "args": args, "now": os.environ.get("VAULTMEM_NOW")},
                 timeout=lock_wait() + 30.0)
    if not answer or not answer.get("ok"):
        return None
    if "refused" in answer:
        error = VaultmemError(answer["refused"]["message"])
        error.exit_code = answer["refused"]["exit_code"]
        raise error
    return answer["data"]


def added_data(added, config) -> dict:
    """What an add did, as the JSON the CLI prints."""
    from vaultmem.clock import now
    from vaultmem.core.present import note_dict

    return note_dict(added.note, now(), config, {
        "action": added.action, "superseded": list(added.superseded), "contested": list(added.contested),
        "reason": added.reason, "redacted_kinds": list(added.redacted)})
