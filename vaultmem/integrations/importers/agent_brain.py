"""Agent Brain and other JSON or SQLite memory stores, read by shape.

No single "Agent Brain" schema could be pinned down (several projects use the
name), so there is no one upstream repository to follow: this reads what such
stores hold, a `memory.json` that is a list of records, an object with a
`memories`/`items`/`entries`/`facts` list or an object of key -> value, the
knowledge-graph JSON lines of the MCP memory server (`memory.json`: entities
with `observations`, and relations), or the most memory-like table of a SQLite
file (one with a `content`, `text`, `memory`, `fact`, ... column, and optional
namespace/category, tags, created_at and importance columns). Field names are
tried in order of preference (the `*_FIELDS` tuples). It is also what `detect`
falls back to for JSON and SQLite files no other reader claims. Records marked
deleted or forgotten are skipped, and so are superseded observations.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from vaultmem.errors import BadInput
from vaultmem.integrations.importers.base import (
    MAX_FILE_BYTES,
    SQLITE_SUFFIXES,
    Incoming,
    Record,
    Skip,
    clean_namespace,
)
from vaultmem.integrations.importers.common import (
    _columns,
    _connect,
    _is_sqlite,
    _json,
    _list,
    _read_raw,
    _status,
    _table_names,
    _text,
    _truthy,
    _when,
)

FIELDS = {
    "id, key": "kept as the original_id property (`vaultmem show OLD_ID` finds the note)",
    "content, text, memory, fact, ...": "kept as the note's text (the first such field)",
    "namespace, category, scope, project, ...": "mapped to the namespace",
    "tags, keywords, labels, categories": "kept as tags",
    "created_at, created, timestamp, ...": "kept as created",
    "superseded_by (supersededBy), supersedes": "kept: the older record is superseded by the newer one's note "
                                                "(a link both ways); superseded with no link when the newer one "
                                                "is not in the file",
    "status": "kept: archived -> archive/, stale, superseded (and historical, agent-memory's word for it); "
              "deleted or forgotten records are skipped",
    "strength": "kept when it is 0-1",
    "importance, priority, confidence": "dropped: vaultmem earns strength by grades",
    "access_count, uses, last_accessed": "dropped: vaultmem counts grades on its own FSRS card",
    "observations (knowledge graph)": "kept, one memory each; a superseded observation is imported superseded",
    "relations (knowledge graph)": "kept as 'from relation to' memories",
}

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
            extra = {}
            if isinstance(observation, dict):  # versioned observations: {id, content, superseded_by, ...}
                extra = _lineage(observation)
                observation = next((observation[k] for k in TEXT_FIELDS if observation.get(k)), "")
            text = str(observation).strip()
            yield Incoming(f"{name}: {text}" if name else text, kind, tuple(t for t in (kind,) if t),
                           f"{where} {name} observation {index + 1}".strip(), extra=extra)
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
                   extra=_status(item) | _lineage(item) | _strength(item))


def _lineage(item: dict) -> dict:
    """The record's own id, its supersede links (ids of the other records) and a superseded status."""
    extra = {}
    original = item.get("id") if item.get("id") not in (None, "") else item.get("_key")
    if original not in (None, ""):
        extra["original_id"] = str(original)
    for key, spellings in (("superseded_by", ("superseded_by", "supersededBy")), ("supersedes", ("supersedes",))):
        value = next((_json(item[k]) for k in spellings if item.get(k) not in (None, "", [], False)), None)
        if value not in (None, "", [], False):
            extra[key] = value
    status = str(item.get("status") or "").strip().lower()
    if extra.get("superseded_by") or status in ("superseded", "historical"):  # historical: agent-memory's word
        extra["status"] = "superseded"
    elif status == "stale":
        extra["status"] = "stale"
    return extra


def _strength(item: dict) -> dict:
    value = item.get("strength")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return {"strength": value}
    return {}


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
            lower["id"] = lower.get("id") if lower.get("id") not in (None, "") else None
            lower.pop("key", None)
            yield from _json_item(lower, where)
