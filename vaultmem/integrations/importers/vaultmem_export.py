"""vaultmem's own `export --jsonl` file, read back for the round trip.

Reads what `vaultmem export --jsonl` writes (vaultmem/integrations/
exporters.py, in this repository): one JSON object per line with a note's
`path` relative to the vault and its exact `text`. Each line becomes a
`Restore`, so `run_import` recreates the note file byte for byte (frontmatter,
unknown properties and CRLF line endings included) through
`exporters.restore_file` instead of adding its text as a new memory; a line
that is not JSON or lacks `path` and `text` is skipped. A line of the review or
archive log (`log`, `record`) becomes a `LogLine`, appended unless the vault has it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from vaultmem.integrations.exporters import EXPORTED_LOGS
from vaultmem.integrations.importers.base import MAX_FILE_BYTES, LogLine, Record, Restore, Skip
from vaultmem.integrations.importers.common import _read_raw


def read_jsonl(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Record]:
    """A `vaultmem export --jsonl` file: one object per note with its relative `path`
    and its exact `text`; each becomes a note file again."""
    raw = _read_raw(path)
    for number, line in enumerate(raw.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Skip(where, f"not JSON ({exc.msg})")
            continue
        if isinstance(item, dict) and item.get("log") in EXPORTED_LOGS and isinstance(item.get("record"), dict):
            yield LogLine(item["log"], item["record"], where)
            continue
        if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not isinstance(item.get("text"), str):
            yield Skip(where, "not a vaultmem export line (needs \"path\" and \"text\")")
            continue
        yield Restore(item["path"], item["text"], where)
