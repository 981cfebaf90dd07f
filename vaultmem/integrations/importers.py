"""`vaultmem import`: the memory stores people already have, read into the vault.

One small reader per format turns a file or folder into records:

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
path). Reading never writes anything; `run_import` does the writing.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import yaml

from ..clock import parse_datetime
from ..errors import BadInput, NoteError, NotFound, SecretFound, VaultmemError
from ..files import read_text
from ..model import TYPES
from ..note import skill_body, slugify, split_frontmatter

FORMATS = ("agentmemory-sr", "skillmem", "agent-brain", "markdown", "claude-md", "jsonl")
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db", ".db3")
MARKDOWN_SUFFIXES = (".md", ".markdown")
# Files whose bullets are each a memory (agent instruction and memory files).
BULLET_FILES = ("claude.md", "claude.local.md", "agents.md", "memory.md", "gemini.md", "copilot-instructions.md",
                ".cursorrules", ".windsurfrules")
MAX_FILE_BYTES = 4 * 1024 * 1024


# ---------------------------------------------------------------- records

@dataclass(frozen=True)
class Incoming:
    """A memory (or skill) read from a foreign store, not yet written."""

    text: str
    namespace: str = ""  # the source's own grouping ("" = none); cleaned and prefixed by -n later
    tags: tuple[str, ...] = ()
    source: str = ""  # where it came from: file path plus row id, line or note name
    created: datetime | None = None
    kind: str = "memory"  # memory | skill
    title: str | None = None
    tier: str | None = None
    extra: dict = field(default_factory=dict)  # "status": "archived" archives it after adding


@dataclass(frozen=True)
class Restore:
    """A complete vaultmem note file, to be recreated at `rel` with exactly `text`."""

    rel: str
    text: str
    source: str


@dataclass(frozen=True)
class Skip:
    source: str
    reason: str


Record = Incoming | Restore | Skip


# ---------------------------------------------------------------- detection

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


def clean_namespace(text: str | None) -> str:
    """A foreign grouping ("user:prefs", "My Notes/Work") as a vaultmem namespace ("user/prefs", "My-Notes/Work")."""
    parts = []
    for part in re.split(r"[/:\\]+", str(text or "")):
        part = re.sub(r"[^\w.-]+", "-", part.strip()).strip("-.")
        if part:
            parts.append(part)
    return "/".join(parts)


# ---------------------------------------------------------------- agentmemory-sr

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


# ---------------------------------------------------------------- skillmem

_SKILL_LINE = re.compile(r"^\*\*(trigger|steps|outcome|lessons):\*\*\s?(.*)$", re.IGNORECASE)


def read_skillmem(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Record]:
    """skillmem (github.com/liza-studio/skillmem): `skillmem export-all DIR` writes
    `DIR/<kind>/<slug>.md` with frontmatter `name` (slug), `description` (title),
    `metadata: {type: kind, ...}`, `project`, `tags`, `topics`, `created_at` (epoch);
    its SQLite `memory.db` has the same fields in table `memory_items`."""
    if path.is_file() and (path.suffix.lower() in SQLITE_SUFFIXES or _is_sqlite(path)):
        yield from _skillmem_db(path)
        return
    for file, rel in _markdown_files(path):
        try:
            text = read_text(file, max_bytes)
            meta, body = _split(text)
        except (NoteError, BadInput) as exc:
            yield Skip(str(file), _reason(exc))
            continue
        if not isinstance(meta, dict):
            meta = {}
        inner = meta.get("metadata") if isinstance(meta.get("metadata"), dict) else {}
        status = "archived" if (meta.get("lifecycle") == "archived" or meta.get("archived") is True) else None
        yield _skillmem_record(
            str(file), kind=str(inner.get("type") or meta.get("type") or (rel.split("/")[0] if "/" in rel else "note")),
            slug=meta.get("name") or file.stem, title=meta.get("description") or meta.get("title"),
            body=body, project=meta.get("project"), tags=_list(meta.get("tags")) + _list(meta.get("topics")),
            created=meta.get("created_at"), status=status,
            extra={k: meta[k] for k in ("strength", "pinned", "truncated", "origin") if k in meta},
        )


def _skillmem_db(path: Path) -> Iterator[Record]:
    with _connect(path) as db:
        columns = _columns(db, "memory_items")
        if not {"slug", "body"} <= columns:
            raise BadInput(f"{path} has no skillmem `memory_items` table")
        for row in db.execute("SELECT * FROM memory_items ORDER BY created_at, id"):
            row = dict(row)
            where = f"{path}#{row.get('slug') or row.get('id')}"
            if row.get("deleted_at"):
                yield Skip(where, "deleted in skillmem")
                continue
            if row.get("body_path"):
                yield Skip(where, "its body is kept in a separate file; run `skillmem export-all DIR` "
                                  "and import DIR to get the whole text")
                continue
            yield _skillmem_record(
                where, kind=str(row.get("kind") or "note"), slug=row.get("slug"), title=row.get("title"),
                body=row.get("body") or "", project=row.get("project"),
                tags=_list(_json(row.get("tags"))) + _list(_json(row.get("topics"))), created=row.get("created_at"),
                status="archived" if row.get("lifecycle") == "archived" else None,
                extra={k: row[k] for k in ("strength", "pinned", "origin") if k in row},
            )


def _skillmem_record(where, kind, slug, title, body, project, tags, created, status, extra) -> Incoming:
    kind = kind.strip().lower() or "note"
    title = str(title or "").strip() or None
    body = _text(body)
    namespace = clean_namespace(project) or ("" if kind == "skill" else clean_namespace(kind))
    extra = dict(extra, skillmem_kind=kind, skillmem_slug=slug)
    if status:
        extra["status"] = status
    if kind == "skill":
        sections = {name: "" for name in ("trigger", "steps", "outcome", "lessons")}
        rest, current = [], None
        for line in body.splitlines():
            match = _SKILL_LINE.match(line.strip())
            if match:
                current = match.group(1).lower()
                sections[current] = match.group(2).strip()
            elif current and line.strip():
                sections[current] = (sections[current] + "\n" + line.rstrip()).strip()
            elif line.strip():
                rest.append(line.rstrip())
        if not sections["steps"] and rest:
            sections["steps"] = "\n".join(rest)
        name = title or str(slug or "skill")
        text = skill_body(name, sections["trigger"], sections["steps"], sections["outcome"], sections["lessons"])
        if not sections["steps"]:
            text = ""  # a skill without steps is nothing to learn
        return Incoming(text, namespace, tuple(tags), where, _when(created), "skill", name, extra=extra)
    return Incoming(_with_title(body, title), namespace, tuple(tags), where, _when(created), "memory", title,
                    extra=extra)


# ---------------------------------------------------------------- Agent Brain / generic stores

# Field names that hold a memory's text, its group, its tags and its date, in order of preference.
TEXT_FIELDS = ("content", "text", "memory", "fact", "body", "value", "observation", "note", "summary", "message")
GROUP_FIELDS = ("namespace", "category", "scope", "project", "topic", "type", "kind", "memory_type")
TAG_FIELDS = ("tags", "keywords", "labels", "categories")
DATE_FIELDS = ("created_at", "created", "createdAt", "timestamp", "date", "time", "added_at", "updated_at")
GONE_FIELDS = ("deleted_at", "deleted", "is_deleted", "forgotten", "expired")
TABLE_PREFERENCE = ("memories", "memory", "facts", "notes", "items", "entries", "knowledge", "observations")


def read_agent_brain(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Record]:
    """Agent Brain's `memory.json` or SQLite file, read by shape, not by schema.

    No single "Agent Brain" schema could be pinned down (several projects use the
    name), so this reads what such stores hold: a JSON list of records, an object
    with a `memories`/`items`/`entries`/`facts` list, an object of key -> value,
    the knowledge-graph JSON lines of the MCP memory server (`memory.json`: entities
    with `observations`, and relations), or a SQLite table with a text-like column
    (`content`, `text`, `memory`, `fact`, ...) and optional namespace/category,
    tags, created_at and importance columns.
    """
    if path.is_file() and (path.suffix.lower() in SQLITE_SUFFIXES or _is_sqlite(path)):
        yield from _generic_db(path)
        return
    raw = _read_raw(path)
    try:
        data = json.loads(raw)
        lines = None
    except json.JSONDecodeError:
        data, lines = None, [line for line in raw.splitlines() if line.strip()]
    if lines is not None:
        for number, line in enumerate(lines, 1):
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                yield Skip(f"{path}:{number}", "not a JSON line")
                continue
            yield from _json_item(item, f"{path}:{number}")
        return
    if isinstance(data, dict):
        for key in ("memories", "items", "entries", "facts", "notes", "data", "entities", "observations"):
            if isinstance(data.get(key), list):
                for index, item in enumerate(data[key]):
                    yield from _json_item(item, f"{path}#{key}[{index}]")
                for index, item in enumerate(data.get("relations") or []):
                    yield from _json_item(dict(item, type="relation") if isinstance(item, dict) else item,
                                          f"{path}#relations[{index}]")
                return
        for key, value in data.items():
            if isinstance(value, dict):
                yield from _json_item(dict(value, _key=key), f"{path}#{key}")
            elif isinstance(value, (str, int, float)) and str(value).strip():
                yield Incoming(f"{key}: {value}", source=f"{path}#{key}")
        return
    if isinstance(data, list):
        for index, item in enumerate(data):
            yield from _json_item(item, f"{path}#{index}")
        return
    raise BadInput(f"{path} holds neither a list nor an object of memories")


def _json_item(item, where: str) -> Iterator[Record]:
    if isinstance(item, str):
        yield Incoming(item, source=where)
        return
    if not isinstance(item, dict):
        yield Skip(where, "not a memory record")
        return
    if item.get("type") == "entity" or ("entityType" in item and "observations" in item):
        name = str(item.get("name") or "").strip()
        kind = clean_namespace(item.get("entityType"))
        for index, observation in enumerate(item.get("observations") or []):
            if isinstance(observation, dict):  # versioned observations: {content, superseded_by, ...}
                if observation.get("superseded_by"):
                    continue
                observation = next((observation[k] for k in TEXT_FIELDS if observation.get(k)), "")
            text = str(observation).strip()
            yield Incoming(f"{name}: {text}" if name else text, kind, tuple(t for t in (kind,) if t),
                           f"{where} {name} observation {index + 1}".strip())
        return
    if item.get("type") == "relation" or {"from", "to", "relationType"} <= set(item):
        yield Incoming(f"{item.get('from')} {str(item.get('relationType', '')).replace('_', ' ')} {item.get('to')}",
                       "relations", source=where)
        return
    if any(_truthy(item.get(k)) for k in GONE_FIELDS):
        yield Skip(where, "deleted or forgotten in the source")
        return
    text = next((item[k] for k in TEXT_FIELDS if isinstance(item.get(k), str) and item[k].strip()),
                next(("" for k in TEXT_FIELDS if isinstance(item.get(k), str)), None))
    key = item.get("_key") or item.get("key") or item.get("id")
    if text is None:
        yield Skip(where, "no text field (content, text, memory, fact, ...)")
        return
    if item.get("_key") and not item.get("content") and not item.get("text"):
        text = f"{item['_key']}: {text}"
    group = next((item[k] for k in GROUP_FIELDS if isinstance(item.get(k), str) and item[k].strip()), "")
    tags = [t for k in TAG_FIELDS for t in _list(_json(item.get(k)))]
    yield Incoming(_text(text), clean_namespace(group), tuple(tags),
                   where if not key or str(key) in where else f"{where} ({key})",
                   _when(next((item[k] for k in DATE_FIELDS if item.get(k)), None)),
                   extra=_status(item) | {k: item[k] for k in ("importance", "priority", "confidence") if k in item})


def _generic_db(path: Path) -> Iterator[Record]:
    with _connect(path) as db:
        tables = {t: _columns(db, t) for t in _table_names(db)}
        candidates = [t for t, cols in tables.items() if any(c.lower() in TEXT_FIELDS for c in cols)]
        if not candidates:
            raise BadInput(f"{path} has no table with a text column ({', '.join(TEXT_FIELDS[:4])}, ...); "
                           "give --format if it is another store")
        candidates.sort(key=lambda t: (TABLE_PREFERENCE.index(t.lower()) if t.lower() in TABLE_PREFERENCE
                                       else len(TABLE_PREFERENCE), t))
        table = candidates[0]
        for row in db.execute(f'SELECT rowid AS _rowid, * FROM "{table}"'):
            row = {k: v for k, v in dict(row).items()}
            lower = {k.lower(): v for k, v in row.items()}
            where = f"{path}#{table}/{lower.get('id') or row['_rowid']}"
            lower.pop("id", None)
            lower.pop("key", None)
            yield from _json_item(lower, where)


# ---------------------------------------------------------------- markdown notes and CLAUDE.md

def read_markdown(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Record]:
    """A folder of notes (an Obsidian vault, a notes directory) or one note: one memory
    per note, its subfolders as the namespace, its title as a heading. A note that has
    vaultmem properties (id, type, ...) is restored as it is; a skillmem export file and
    a CLAUDE.md-like file are read as such."""
    for file, rel in _markdown_files(path):
        if file.name.lower() in BULLET_FILES:
            yield from read_claude_md(file, max_bytes)
            continue
        try:
            text = read_text(file, max_bytes)
            meta, body = _split(text)
        except (NoteError, BadInput) as exc:
            yield Skip(str(file), _reason(exc))
            continue
        if _is_vaultmem(meta):
            yield Restore(_vault_rel(rel, meta, file), text, str(file))
            continue
        if _is_skillmem(meta):
            yield from read_skillmem(file, max_bytes)
            continue
        meta = meta if isinstance(meta, dict) else {}
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        title = str(meta.get("title") or file.stem).strip()
        created = _when(next((meta[k] for k in ("created", "date", "created_at") if meta.get(k)), None))
        if created is None:
            created = datetime.fromtimestamp(file.stat().st_mtime, timezone.utc).replace(microsecond=0)
        yield Incoming(_with_title(body, title), clean_namespace(folder), tuple(_list(meta.get("tags"))),
                       str(file), created, "memory", title, extra=_status(meta))


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def read_claude_md(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Record]:
    """CLAUDE.md, AGENTS.md, MEMORY.md and other agent instruction files: one memory per
    top-level bullet (nested bullets and continuation lines stay with it), the nearest
    heading above it as a tag. Code blocks, comments and prose paragraphs are not memories."""
    if path.is_dir():
        files = [f for f, _rel in _markdown_files(path)]
        files += [path / n for n in BULLET_FILES if (path / n).is_file() and (path / n) not in files]
        for file in files:
            yield from read_claude_md(file, max_bytes)
        return
    try:
        text = read_text(path, max_bytes)
    except NoteError as exc:
        yield Skip(str(path), _reason(exc))
        return
    _block, body = split_frontmatter(text)
    offset = text[: len(text) - len(body)].count("\n")
    heading, bullet, indent, column, start = "", [], 0, 0, 0
    in_fence = in_comment = False

    def flush():
        if not bullet:
            return None
        lines, code = [bullet[0]], False
        for raw in bullet[1:]:
            width = len(raw) - len(raw.lstrip(" "))
            line = raw[min(width, column):]
            code ^= bool(_FENCE.match(line))
            if not code and not line.startswith((" ", "\t")) and not _BULLET.match(line) and not _FENCE.match(line):
                lines[-1] += " " + line.strip()  # a wrapped line of the same paragraph
            else:
                lines.append(line)
        tags = tuple(t for t in (slugify(heading) if heading else "",) if t and t != "note")
        return Incoming("\n".join(lines).strip(), "", tags, f"{path}:{start}")

    for number, line in enumerate(body.splitlines(), offset + 1):
        if in_comment:
            in_comment = "-->" not in line
            continue
        if _FENCE.match(line):
            in_fence = not in_fence
            if bullet and line.startswith((" ", "\t")):
                bullet.append(line)
            else:
                record = flush()
                if record:
                    yield record
                bullet = []
            continue
        if in_fence:
            if bullet and line.startswith((" ", "\t")):
                bullet.append(line)
            continue
        if line.lstrip().startswith("<!--"):
            in_comment = "-->" not in line
            continue
        match = _HEADING.match(line)
        if match:
            record = flush()
            if record:
                yield record
            bullet, heading = [], match.group(2)
            continue
        match = _BULLET.match(line)
        if match and (not bullet or len(match.group(1)) <= indent):
            record = flush()
            if record:
                yield record
            indent, start = len(match.group(1)), number
            column = len(match.group(0)) - len(match.group(2))
            bullet = [match.group(2)]
            continue
        if bullet and line.strip() and (line.startswith((" ", "\t")) or match):
            bullet.append(line)
            continue
        if bullet and not line.strip():
            continue  # a blank line inside a list
        if bullet:
            record = flush()
            if record:
                yield record
            bullet = []
    record = flush()
    if record:
        yield record


# ---------------------------------------------------------------- vaultmem export

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
        if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not isinstance(item.get("text"), str):
            yield Skip(where, "not a vaultmem export line (needs \"path\" and \"text\")")
            continue
        yield Restore(item["path"], item["text"], where)


# ---------------------------------------------------------------- helpers

def _markdown_files(path: Path) -> Iterator[tuple[Path, str]]:
    """Markdown files under `path` (sorted), with their path relative to it. Hidden
    folders (.obsidian, .git, .vaultmem, .trash) and `templates` folders are not notes."""
    if path.is_file():
        yield path, path.name
        return
    found = []
    for folder, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d.lower() not in ("templates", "node_modules"))
        for name in files:
            if name.lower().endswith(MARKDOWN_SUFFIXES) and not name.startswith("."):
                full = Path(folder) / name
                found.append((full, full.relative_to(path).as_posix()))
    yield from sorted(found, key=lambda item: item[1])


def _split(text: str) -> tuple[dict | None, str]:
    block, body = split_frontmatter(text)
    if block is None:
        return None, body
    try:
        meta = yaml.safe_load(block)
    except yaml.YAMLError:
        raise BadInput("broken YAML frontmatter; fix it, then import again") from None
    return (meta if isinstance(meta, dict) else None), body


def _frontmatter_of(path: Path):
    try:
        return _split(read_text(path, MAX_FILE_BYTES))[0]
    except (NoteError, BadInput):
        return None


def _is_vaultmem(meta) -> bool:
    """A note vaultmem wrote (or one written for it): an id, and a namespace or scheduling state."""
    return (isinstance(meta, dict) and meta.get("id") not in (None, "")
            and str(meta.get("type") or "memory").strip().lower() in TYPES
            and any(k in meta for k in ("namespace", "due", "strength", "state", "tier")))


def _is_skillmem(meta) -> bool:
    inner = meta.get("metadata") if isinstance(meta, dict) else None
    return isinstance(inner, dict) and (inner.get("node_type") == "memory" or ("type" in inner and "name" in meta))


def _vault_rel(rel: str, meta: dict, file: Path) -> str:
    """Where a note with vaultmem properties goes: its own path if it already sits in a
    vault's note folder, else where vaultmem would have put it."""
    parts = rel.split("/")
    for index, part in enumerate(parts[:-1]):
        if part in ("memories", "skills", "archive"):
            return "/".join(parts[index:])
    folder = "skills" if str(meta.get("type")).strip().lower() == "skill" else "memories"
    namespace = clean_namespace(meta.get("namespace")) or "default"
    return f"{folder}/{namespace}/{file.name}"


def _with_title(body: str, title: str | None) -> str:
    """The body, with `# title` first unless it already opens with a heading or the title."""
    text = _text(body)
    if not title or not text:
        return text
    first = text.splitlines()[0].strip()
    if first.startswith("#") or title.strip().lower() in first.lower():
        return text
    return f"# {title.strip()}\n\n{text}"


def _text(value) -> str:
    return str(value or "").replace("\r\n", "\n").strip()


def _list(value) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip().lstrip("#") for v in value if str(v).strip().lstrip("#")]
    return [t.lstrip("#") for t in re.split(r"[,\s]+", str(value)) if t.lstrip("#")]


def _json(value):
    if isinstance(value, str) and value.strip().startswith(("[", "{")):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _truthy(value) -> bool:
    return bool(value) and str(value).strip().lower() not in ("0", "false", "no", "none", "null")


def _status(item: dict) -> dict:
    status = str(item.get("status") or item.get("lifecycle") or "").strip().lower()
    if status == "archived" or _truthy(item.get("archived")):
        return {"status": "archived"}
    return {}


def _when(value) -> datetime | None:
    """A date from what stores use: ISO text, epoch seconds or milliseconds."""
    if value in (None, "") or isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)) or re.fullmatch(r"\d{9,13}(\.\d+)?", str(value).strip()):
            seconds = float(value)
            if seconds > 1e11:
                seconds /= 1000
            return datetime.fromtimestamp(seconds, timezone.utc).replace(microsecond=0)
        return parse_datetime(value)
    except (BadInput, ValueError, OverflowError, OSError):
        return None


def _reason(exc: Exception) -> str:
    if isinstance(exc, NoteError):
        return exc.problem
    return str(exc)


def _read_raw(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"{path} cannot be read ({exc.strerror})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not UTF-8 text") from None


def _first_json_line(path: Path):
    try:
        with open(path, encoding="utf-8-sig") as handle:
            for line in handle:
                if line.strip():
                    return json.loads(line)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return None


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


class _connect:
    """A read-only SQLite connection (never creates or changes the file), closed on exit."""

    def __init__(self, path: Path):
        if not _is_sqlite(path):
            raise BadInput(f"{path} is not a SQLite database")
        try:
            self.db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise BadInput(f"{path} cannot be opened: {exc}") from None
        self.db.row_factory = sqlite3.Row

    def __enter__(self) -> sqlite3.Connection:
        return self.db

    def __exit__(self, *exc):
        self.db.close()
        if exc[0] is not None and issubclass(exc[0], sqlite3.Error):
            raise BadInput(f"cannot read the database: {exc[1]}") from None


def _table_names(db: sqlite3.Connection) -> list[str]:
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    shadow = ("_fts", "_data", "_idx", "_content", "_docsize", "_config")
    return [n for n in names if not n.startswith("sqlite_") and not n.endswith(shadow)]


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f'PRAGMA table_info("{table}")')}


def _tables(path: Path) -> dict[str, set[str]]:
    try:
        with _connect(path) as db:
            return {t: _columns(db, t) for t in _table_names(db)}
    except BadInput:
        return {}


# ---------------------------------------------------------------- writing into the vault

@dataclass
class Report:
    """What an import did (or, with dry_run, would do), one entry per record."""

    path: str
    format: str
    dry_run: bool = False
    added: list[dict] = field(default_factory=list)
    merged: list[dict] = field(default_factory=list)  # a recurrence of an existing memory, or a repeat
    unchanged: list[dict] = field(default_factory=list)  # a restored note the vault already has, identical
    conflicts: list[dict] = field(default_factory=list)  # a restored note the vault has with other text
    skipped: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        lists = ("added", "merged", "unchanged", "conflicts", "skipped", "errors")
        return {"path": self.path, "format": self.format, "dry_run": self.dry_run,
                "counts": {name: len(getattr(self, name)) for name in lists},
                **{name: getattr(self, name) for name in lists}}

    def summary(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        parts = [f"{verb} {len(self.added)}", f"merged {len(self.merged)}"]
        if self.unchanged or self.conflicts:
            parts += [f"unchanged {len(self.unchanged)}", f"conflicts {len(self.conflicts)}"]
        parts += [f"skipped {len(self.skipped)}", f"errors {len(self.errors)}"]
        lines = [f"{self.format} {self.path}: " + ", ".join(parts)]
        for name, label in (("conflicts", "conflict"), ("skipped", "skipped"), ("errors", "error")):
            lines += [f"  {label}: {item['source']}: {item['reason']}" for item in getattr(self, name)]
        return "\n".join(lines)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def run_import(vault, path, fmt: str = "auto", namespace: str | None = None, dry_run: bool = False,
               redact: bool = False) -> Report:
    """Read `path` and write what it holds into `vault`.

    Memories go through `Vault.add` (the redaction filter, and near-duplicates
    merged into a recurrence); an exact repeat, inside the import or of a memory
    the namespace already has, is merged without writing anything, so importing
    the same file twice changes nothing. Imports never supersede or contest
    existing memories. Whole note files (an export, a note with vaultmem
    properties) are restored byte for byte; one that exists with other text is a
    conflict and is left alone. Nothing is written with `dry_run`.
    """
    from ..vault import check_namespace
    from .exporters import NoteIndex, restore_file

    source_path = Path(os.path.expanduser(str(path))).resolve()
    base = check_namespace(namespace) if namespace else ""
    fmt, records = read(source_path, fmt, vault.config.max_note_bytes)
    report = Report(str(source_path), fmt, dry_run)
    fallback = default_namespace(source_path, fmt)
    known = _known_texts(vault)
    seen: dict[tuple, str] = {}
    index = NoteIndex.of(vault)
    incoming = sorted((r for r in records if isinstance(r, Incoming)),
                      key=lambda r: (r.created is None, r.created or datetime.min.replace(tzinfo=timezone.utc)))
    for record in [r for r in records if not isinstance(r, Incoming)] + incoming:
        if isinstance(record, Skip):
            report.skipped.append({"source": record.source, "reason": record.reason})
        elif isinstance(record, Restore):
            try:
                action, detail = restore_file(vault, record.rel, record.text, record.source, dry_run, index)
            except SecretFound as exc:
                report.skipped.append({"source": record.source, "reason": f"secret found: {exc}"})
                continue
            except VaultmemError as exc:
                report.errors.append({"source": record.source, "reason": str(exc)})
                continue
            entry = dict(detail, source=record.source)
            {"added": report.added, "unchanged": report.unchanged, "conflict": report.conflicts}[action].append(entry)
        else:
            _add_one(vault, record, base, fallback, known, seen, report, dry_run, redact)
    return report


def _known_texts(vault) -> dict[tuple, str]:
    known = {}
    for note in vault.notes(include_hidden=True):
        known.setdefault((note.namespace, note.type, _norm(note.text)), note.id)
    return known


def _add_one(vault, record: Incoming, base: str, fallback: str, known: dict, seen: dict, report: Report,
             dry_run: bool, redact: bool) -> None:
    from ..vault import check_namespace

    text = record.text.strip()
    if not text:
        report.skipped.append({"source": record.source, "reason": "empty"})
        return
    sub = clean_namespace(record.namespace)
    try:
        namespace = check_namespace("/".join(p for p in (base, sub) if p) or fallback)
    except BadInput as exc:
        report.errors.append({"source": record.source, "reason": str(exc)})
        return
    key = (namespace, record.kind, _norm(text))
    if key in seen:
        report.merged.append({"id": seen[key], "namespace": namespace, "source": record.source,
                              "reason": "repeated in the import"})
        return
    if key in known:
        seen[key] = known[key]
        report.merged.append({"id": known[key], "namespace": namespace, "source": record.source,
                              "reason": "already in the vault"})
        return
    if dry_run:
        _predict(vault, record, text, namespace, key, seen, report, redact)
        return
    try:
        result = _call_add(vault, record, text, namespace, redact)
    except SecretFound as exc:
        report.skipped.append({"source": record.source, "reason": f"secret found: {exc}"})
        return
    except VaultmemError as exc:
        report.errors.append({"source": record.source, "reason": str(exc)})
        return
    note = getattr(result, "note", result)
    action = getattr(result, "action", "added")
    seen[key] = note.id
    entry = {"id": note.id, "namespace": namespace, "path": note.path, "source": record.source}
    if action == "recurrence":
        report.merged.append(dict(entry, reason=getattr(result, "reason", "") or "same memory"))
        return
    known[(note.namespace, note.type, _norm(note.text))] = note.id
    if record.extra.get("status") == "archived":
        try:
            note = vault.archive(note.id, reason="import")
            entry.update(path=note.path, status="archived")
        except VaultmemError as exc:
            report.errors.append({"source": record.source, "reason": f"added as {note.id}, not archived: {exc}"})
    report.added.append(entry)


def _call_add(vault, record: Incoming, text: str, namespace: str, redact: bool):
    """`Vault.add`, merging near-duplicates but never superseding what the vault holds
    (an imported fact may well be older than the memory it seems to contradict)."""
    return vault.add(text, namespace, tags=record.tags, source=record.source, created=record.created,
                     tier=record.tier, kind=record.kind, title=record.title, redact=redact, supersede=False,
                     merge=True)


def _predict(vault, record: Incoming, text: str, namespace: str, key: tuple, seen: dict, report: Report,
             redact: bool) -> None:
    """What `add` would do, without writing: refused for a secret, merged, or added."""
    from ..redact import Policy, describe, scan

    findings = scan(text, Policy(emails=getattr(vault.config, "redact_emails", False),
                                 phones=getattr(vault.config, "redact_phones", False)))
    if findings and not redact:
        report.skipped.append({"source": record.source, "reason": f"secret found: the text holds {describe(findings)}"})
        return
    seen[key] = None
    try:
        related = vault.related(text, namespace, record.kind) if hasattr(vault, "related") else []
    except Exception:  # noqa: BLE001 - a prediction; the real add decides
        related = []
    duplicate = next((r for r in related if r.relation == "duplicate"), None)
    if duplicate is not None:
        seen[key] = duplicate.note.id
        report.merged.append({"id": duplicate.note.id, "namespace": namespace, "source": record.source,
                              "reason": duplicate.reason})
    else:
        report.added.append({"id": None, "namespace": namespace, "source": record.source})

