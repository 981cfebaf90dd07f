"""Time: the one place the clock (and `VAULTMEM_NOW`) is read.

The datetime convention and the pure helpers are in `vaultmem.timefmt`
(re-exported here): every datetime in a note is UTC, written without an offset
as `YYYY-MM-DDTHH:MM:SS`. `VAULTMEM_NOW` pins the clock for reproducible runs
and tests.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

from vaultmem.timefmt import STORED_FORMAT, format_datetime, parse_datetime

__all__ = ["STORED_FORMAT", "format_datetime", "now", "parse_datetime"]


def now() -> datetime:
    """The current time in UTC, or VAULTMEM_NOW when it is set."""
    pinned = os.environ.get("VAULTMEM_NOW")
    if pinned:
        return parse_datetime(pinned, what="VAULTMEM_NOW")
    return datetime.now(timezone.utc).replace(microsecond=0)
