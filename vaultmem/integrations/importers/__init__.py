"""`vaultmem import`: the memory stores people already have, read into the vault.

One small reader per format turns a file or folder into records (base.py):

- `Incoming`: a memory or skill to write with `Vault.add` (which merges a
  near-duplicate into a recurrence of the existing note instead of a copy);
- `Restore`: a whole vaultmem note file (an export line, a note with vaultmem
  properties in a folder), written byte for byte through `exporters.restore_file`;
- `Skip`: something the source holds that is not imported, with the reason.

Formats (`detect` picks one from the path; `--format` forces it):

| format | what | each record |
|---|---|---|
| agentmemory-sr | its SQLite file: table `memories` (id, content, namespace, source, created_at, state, ...) | a row (`suspended` leeches are skipped) |
| skillmem | an `export-all` folder (`<kind>/<slug>.md`, frontmatter `name`, `description`, `metadata.type`, `project`, `tags`, `topics`, `created_at`) or its SQLite `memory_items` table | a memory; `kind: skill` becomes a vaultmem skill |
| agent-brain | a `memory.json` (a list, `{"memories": [...]}`, `{key: value}`, or knowledge-graph JSON lines of entities and relations) or any SQLite file with a memory-like table | an entry, an observation, a relation, a row |
| markdown | a folder of notes (or one note) | a note; one with vaultmem properties is restored as it is |
| claude-md | CLAUDE.md, AGENTS.md, MEMORY.md and the like | a bullet (with its nested lines), the heading above it as a tag |
| jsonl | a `vaultmem export --jsonl` file | a note file, restored byte for byte |

Every record says where it came from (`path#row`, `path:line`, the note's
path). Reading never writes anything; `run_import` (run.py) does the writing.

This module picks the format and its reader; each format's reader is its own
module (agentmemory_sr, skillmem, agent_brain, markdown, claude_md,
vaultmem_export), and the helpers they share are in common.py.
"""  # noqa: E501 - the format table's rows are one line each (Markdown tables cannot wrap)

from __future__ import annotations

import os
from pathlib import Path

from vaultmem.errors import BadInput, NotFound
from vaultmem.integrations.importers.agent_brain import read_agent_brain
from vaultmem.integrations.importers.agentmemory_sr import read_agentmemory_sr
from vaultmem.integrations.importers.base import (
    BULLET_FILES,
    MARKDOWN_SUFFIXES,
    MAX_FILE_BYTES,
    SQLITE_SUFFIXES,
    Record,
    clean_namespace,
)
from vaultmem.integrations.importers.claude_md import read_claude_md
from vaultmem.integrations.importers.common import (
    _first_json_line,
    _frontmatter_of,
    _is_sqlite,
    _markdown_files,
    _tables,
)
from vaultmem.integrations.importers.markdown import read_markdown
from vaultmem.integrations.importers.skillmem import _is_skillmem, read_skillmem
from vaultmem.integrations.importers.vaultmem_export import read_jsonl

FORMATS = ("agentmemory-sr", "skillmem", "agent-brain", "markdown", "claude-md", "jsonl")


def detect(path: Path) -> str:
    """The format of `path`, from its name and, for SQLite and JSON lines, its content."""
    if path.is_dir():
        if (path / ".skillmem-export.json").is_file():
            return "skillmem"
        first = next(_markdown_files(path), None)
        return "skillmem" if first and _is_skillmem(_frontmatter_of(first[0])) else "markdown"
    name = path.name.lower()
    suffix = path.suffix.lower()
    if suffix in SQLITE_SUFFIXES or _is_sqlite(path):
        tables = _tables(path)
        if "memories" in tables and {"content", "namespace", "due", "stability"} <= tables["memories"]:
            return "agentmemory-sr"
        if "memory_items" in tables and {"slug", "kind", "body"} <= tables["memory_items"]:
            return "skillmem"
        return "agent-brain"
    if name in BULLET_FILES:
        return "claude-md"
    if suffix in MARKDOWN_SUFFIXES:
        return "skillmem" if _is_skillmem(_frontmatter_of(path)) else "markdown"
    if suffix == ".jsonl":
        first = _first_json_line(path)
        return "jsonl" if isinstance(first, dict) and {"path", "text"} <= set(first) else "agent-brain"
    if suffix == ".json":
        return "agent-brain"
    raise BadInput(f"cannot tell the format of {path}; give --format "
                   f"({'|'.join(FORMATS)})")


def read(path: Path, fmt: str = "auto", max_bytes: int = MAX_FILE_BYTES) -> tuple[str, list[Record]]:
    """(format, records) for `path`; raises NotFound or BadInput for what cannot be read at all."""
    path = Path(os.path.expanduser(str(path)))
    if not path.exists():
        raise NotFound(f"{path} does not exist; give the file or folder to import")
    path = path.resolve()
    if fmt in (None, "", "auto"):
        fmt = detect(path)
    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r}; use one of: auto, {', '.join(FORMATS)}")
    readers = {
        "agentmemory-sr": read_agentmemory_sr, "skillmem": read_skillmem, "agent-brain": read_agent_brain,
        "markdown": read_markdown, "claude-md": read_claude_md, "jsonl": read_jsonl,
    }
    return fmt, list(readers[fmt](path, max_bytes))


def fields_of(fmt: str) -> dict[str, str]:
    """What an import of `fmt` does with each field of the source: kept, mapped (to what) or dropped (why)."""
    from vaultmem.integrations.importers import agent_brain, agentmemory_sr, skillmem

    return {"agentmemory-sr": agentmemory_sr.FIELDS, "skillmem": skillmem.FIELDS,
            "agent-brain": agent_brain.FIELDS}.get(fmt, {})


def default_namespace(path: Path, fmt: str) -> str:
    """The namespace for records whose source names none (and no -n was given)."""
    if fmt == "markdown" and path.is_dir():
        base = path.name
    elif fmt in ("markdown", "claude-md"):
        base = path.parent.name
    elif fmt == "skillmem":
        return "skillmem"
    else:
        base = path.stem
    return clean_namespace(base.lstrip(".")) or "imported"
