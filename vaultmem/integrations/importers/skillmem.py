"""skillmem's exports and database, read as memories and skills.

Reads skillmem (github.com/liza-studio/skillmem): the folder `skillmem
export-all DIR` writes, `DIR/<kind>/<slug>.md` with frontmatter `name` (slug),
`description` (title), `metadata: {type: kind, ...}`, `project`, `tags`,
`topics`, `created_at` (epoch), or its SQLite `memory.db`, whose table
`memory_items` has the same fields. The project becomes the namespace (else
the kind, except for skills), tags and topics become tags, an archived item is
archived after it is added, and a `kind: skill` item becomes a vaultmem skill,
its `**trigger:**`, `**steps:**`, `**outcome:**` and `**lessons:**` lines
mapped onto the skill's sections (one without steps is nothing to learn and
ends up skipped as empty). Deleted rows are skipped, and so are rows whose
body skillmem keeps in a separate file, since only `export-all` writes that
text out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from vaultmem.core.note import skill_body
from vaultmem.errors import BadInput, NoteError
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
    _markdown_files,
    _reason,
    _split,
    _text,
    _when,
    _with_title,
)
from vaultmem.store.files import read_text

FIELDS = {
    "slug (name)": "kept as the original_id property (`vaultmem show SLUG` finds the note)",
    "title (description)": "kept as the title (the first line, or a skill's heading)",
    "body": "kept; a skill's **trigger:**/**steps:**/**outcome:**/**lessons:** lines -> its sections",
    "kind (metadata.type)": "mapped: skill -> a vaultmem skill, any other kind -> a memory (the kind names the "
                            "namespace when there is no project)",
    "project": "mapped to the namespace",
    "tags, topics": "kept as tags",
    "created_at": "kept as created",
    "strength": "mapped: x 0.5 (skillmem starts a memory at 1.0, vaultmem at 0.5), within 0.05-1.0",
    "lifecycle": "kept: archived -> archive/, stale -> stale",
    "supersedes_id": "kept as a supersede link when both rows are imported",
    "deleted_at": "dropped: deleted rows are skipped",
    "updated_at, last_accessed_at, last_decayed_at": "dropped: vaultmem's updated is the import time",
    "access_count, confirmed_count, failure_count": "dropped: vaultmem counts grades on its own FSRS card",
    "pinned, visibility, origin, trusted_at, owner_seal, ttl_days, freshness_until": "dropped: no vaultmem "
                                                                                    "equivalent",
    "memory_history, mem_links": "dropped",
}
SKILLMEM_NEW_STRENGTH = 1.0  # what skillmem gives a new memory; vaultmem's strength_initial is 0.5

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
        status = "archived" if (meta.get("lifecycle") == "archived" or meta.get("archived") is True) else (
            "stale" if meta.get("lifecycle") == "stale" else None)
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
        slugs = {row[0]: row[1] for row in db.execute("SELECT id, slug FROM memory_items")}
        for row in db.execute("SELECT * FROM memory_items ORDER BY created_at, id"):
            row = dict(row)
            row["supersedes"] = slugs.get(row.get("supersedes_id"))
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
                status=row.get("lifecycle") if row.get("lifecycle") in ("archived", "stale") else None,
                extra={k: row[k] for k in ("strength", "pinned", "origin", "supersedes") if row.get(k) is not None},
            )


def _skillmem_record(where, kind, slug, title, body, project, tags, created, status, extra) -> Incoming:
    kind = kind.strip().lower() or "note"
    title = str(title or "").strip() or None
    body = _text(body)
    namespace = clean_namespace(project) or ("" if kind == "skill" else clean_namespace(kind))
    extra = dict(extra, skillmem_kind=kind, skillmem_slug=slug, original_id=slug)
    if isinstance(extra.get("strength"), (int, float)) and not isinstance(extra["strength"], bool):
        extra["strength"] = 0.5 * extra["strength"] / SKILLMEM_NEW_STRENGTH
    else:
        extra.pop("strength", None)
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


def _is_skillmem(meta) -> bool:
    inner = meta.get("metadata") if isinstance(meta, dict) else None
    return isinstance(inner, dict) and (inner.get("node_type") == "memory" or ("type" in inner and "name" in meta))
