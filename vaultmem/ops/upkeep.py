"""When decay last ran, and whether a daily one is due: what lets the vault keep itself.

Decay is idempotent over a day (idle periods are whole weeks, staleness is a
threshold), so running it from a timer, from the SessionStart hook and by hand
on the same day changes nothing twice. The stamp lives in
`.vaultmem/cache/decay.json` (local and git-ignored; deleting it only means the
next chance runs decay again):

    {"last_run": when the last decay finished, "by": who ran it, "changed": notes it changed,
     "started": when a background run was last started}

`claim_if_due` is how the SessionStart hook starts at most one background decay
per day across sessions: it records `started` before spawning, and a start in
the last CLAIM_HOURS counts as running.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from vaultmem import clock
from vaultmem.store.files import atomic_write

DUE_HOURS = 20.0  # a daily run, with slack for a timer that fires a little early or late
CLAIM_HOURS = 1.0  # a background run started this recently is taken to be still running


def stamp_path(vault):
    return vault.cache_dir / "decay.json"


def read_stamp(vault) -> dict:
    """The stamp, {} when there is none or it cannot be read (then decay is due)."""
    try:
        data = json.loads(stamp_path(vault).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _when(value) -> datetime | None:
    try:
        return clock.parse_datetime(value) if value else None
    except Exception:  # noqa: BLE001 - a damaged stamp means "due", never an error
        return None


def is_due(stamp: dict, now: datetime) -> bool:
    """Whether a daily decay is due: none finished in the last DUE_HOURS, and none started
    in the last CLAIM_HOURS (a run in progress)."""
    last, started = _when(stamp.get("last_run")), _when(stamp.get("started"))
    if started is not None and timedelta(0) <= now - started < timedelta(hours=CLAIM_HOURS):
        return False
    return last is None or now - last >= timedelta(hours=DUE_HOURS) or now < last


def _write(vault, stamp: dict) -> None:
    path = stamp_path(vault)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(stamp, sort_keys=True) + "\n")


def record_run(vault, by: str, changed: int) -> dict:
    """Note that a decay finished now (any caller: the CLI, a timer, the hook's background run)."""
    stamp = {k: v for k, v in read_stamp(vault).items() if k == "started"}
    stamp.update(last_run=clock.format_datetime(clock.now()), by=by, changed=changed)
    _write(vault, stamp)
    return stamp


def claim_if_due(vault) -> bool:
    """True (and `started` recorded) when a daily decay is due and no one is running one."""
    now = clock.now()
    stamp = read_stamp(vault)
    if not is_due(stamp, now):
        return False
    stamp["started"] = clock.format_datetime(now)
    _write(vault, stamp)
    return True
