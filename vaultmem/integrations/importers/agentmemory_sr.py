"""agentmemory-sr's SQLite store, read as memories.

Reads the one SQLite file of agentmemory-sr
(github.com/nickvasilescu/agentmemory-sr): table `memories` (id, content,
namespace, source, created_at ISO, state new|learning|review|relearning|
suspended|buried, stability, difficulty, reps, lapses, ...), one memory per
row in created_at order, its namespace kept and its own `source` noted in the
record's source. Its FSRS state (state, reps, lapses, stability, difficulty)
rides along in `Incoming.extra`; `run_import` does not carry it over into the
new note's schedule. A `suspended` row is skipped because agentmemory-sr
suspends leeches, memories that kept being graded wrong. The file is opened
read-only, so importing never changes the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vaultmem.errors import BadInput
from vaultmem.integrations.importers.base import MAX_FILE_BYTES, Incoming, Record, Skip, clean_namespace
from vaultmem.integrations.importers.common import _columns, _connect, _text, _when


def read_agentmemory_sr(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Record]:
    """agentmemory-sr (github.com/nickvasilescu/agentmemory-sr): one SQLite file, table
    `memories` (id, content, namespace, source, created_at ISO, state new|learning|review|
    relearning|suspended|buried, stability, difficulty, reps, lapses, ...)."""
    with _connect(path) as db:
        columns = _columns(db, "memories")
        if not {"content"} <= columns:
            raise BadInput(f"{path} has no agentmemory-sr `memories` table with a `content` column")
        order = "created_at, rowid" if "created_at" in columns else "rowid"
        for row in db.execute(f"SELECT rowid AS _rowid, * FROM memories ORDER BY {order}"):
            row = dict(row)
            where = f"{path}#{row.get('id') or row['_rowid']}"
            if str(row.get("state") or "").lower() == "suspended":
                yield Skip(where, "suspended in agentmemory-sr (a leech: it kept being graded wrong)")
                continue
            origin = str(row.get("source") or "").strip()
            yield Incoming(
                text=_text(row.get("content")), namespace=clean_namespace(row.get("namespace")),
                source=where + (f" (from {origin})" if origin else ""), created=_when(row.get("created_at")),
                extra={k: row.get(k) for k in ("state", "reps", "lapses", "stability", "difficulty") if k in row},
            )
