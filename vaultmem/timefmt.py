"""The vault's datetime convention, as pure parsing and formatting (no clock, no environment).

Convention (documented in the README and declared as `datetime` in
.obsidian/types.json): every datetime in a note is UTC, written without an
offset as `YYYY-MM-DDTHH:MM:SS`, the form Obsidian's Date & time property
reads and writes. Inside vaultmem datetimes are timezone-aware UTC, as the
`fsrs` package requires. Reading the clock is `vaultmem.clock.now`.
"""

from __future__ import annotations

from datetime import date, datetime, timezone

from vaultmem.errors import BadInput

STORED_FORMAT = "%Y-%m-%dT%H:%M:%S"


def parse_datetime(value, what: str = "datetime") -> datetime:
    """Read a datetime from text, a `datetime` or a `date` (as YAML gives them).

    A value without an offset is UTC (the vault convention); a value with an
    offset is converted to UTC. Raises BadInput naming `what` on nonsense.
    """
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    else:
        text = str(value).strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text.replace(" ", "T", 1) if len(text) > 10 else text)
        except ValueError:
            raise BadInput(
                f"{what}: {value!r} is not a date or datetime; use ISO form like 2026-11-30 or 2026-11-30T14:05:00"
            ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc).replace(microsecond=0)


def format_datetime(value: datetime | None) -> str | None:
    """The stored form: UTC, no offset, seconds precision."""
    if value is None:
        return None
    utc = value.astimezone(timezone.utc)
    return f"{utc.year:04d}{utc.strftime(STORED_FORMAT[2:])}"  # (%Y writes year 1 as "1", which reads back as nothing)
