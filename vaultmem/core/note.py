"""The note format: markdown text <-> `Note`, touching only vaultmem's keys.

A note is YAML frontmatter with flat properties, then the body. Reading takes
defaults for anything missing (a hand-written note is a valid memory).
Rendering an existing file edits its frontmatter line by line: a property whose
value did not change keeps its exact original lines, unknown properties and the
body keep their bytes, and line endings stay as the file had them. Values are
written the way Obsidian's own property editor writes them (block lists with
two-space indent, double quotes only where YAML needs them, empty = `key:`).

No file I/O here: the vault reads and writes, this module only transforms text.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import replace
from datetime import datetime
from functools import lru_cache

import yaml

from vaultmem.core.model import CARD_STATES, SKILL_SECTIONS, STATUSES, TIERS, TYPES, Note
from vaultmem.errors import BadInput, NoteError
from vaultmem.timefmt import format_datetime, parse_datetime

# The fixed order of vaultmem's properties in every note it writes.
KEY_ORDER = (
    "id", "type", "namespace", "tags", "status", "tier", "strength",
    "state", "step", "stability", "difficulty", "due", "last_review", "reps", "lapses",
    "created", "updated", "decayed", "source",
)
# Properties written only once they hold something (or when the file has them),
# so a plain memory stays short. They follow KEY_ORDER, in this order.
OPTIONAL_KEYS = (
    "explicit", "sessions", "days", "projects", "promoted",
    "supersedes", "superseded_by", "contested", "contested_with", "redacted",
)
ALL_KEYS = KEY_ORDER + OPTIONAL_KEYS
_LIST_KEYS = ("tags", "sessions", "days", "projects", "contested_with")
_BOOL_KEYS = ("explicit", "contested", "redacted")
_TEXT_KEYS = ("id", "namespace", "source", "supersedes", "superseded_by")
_DATETIME_KEYS = ("due", "last_review", "created", "updated", "decayed", "promoted")

# libyaml's loader when present: parsing thousands of notes is a hot path.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FENCE = re.compile(r"---[ \t]*(\r?\n|$)")
_KEY_LINE = re.compile(r"""^(?P<key>[^\s#'"\-?:][^:]*?|"[^"]*"|'[^']*'):(?:[ \t\r]|$)""")


# ---------------------------------------------------------------- splitting

def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Split text into (frontmatter block without fences, body), losslessly.

    A file that opens with `---` but never closes it has no frontmatter: its
    first line is a horizontal rule in the body.
    """
    opening = _FENCE.match(text)
    if not opening:
        return None, text
    pos = opening.end()
    while pos < len(text):
        newline_at = text.find("\n", pos)
        line_end = len(text) if newline_at == -1 else newline_at + 1
        if text[pos:line_end].rstrip() == "---":
            return text[opening.end():pos], text[line_end:]
        pos = line_end
    return None, text


def _segments(block: str) -> list[tuple[str | None, str]]:
    """Top-level entries of a frontmatter block: [(key or None, exact text)].

    Continuation lines (indented, list items, blanks, comments) belong to the
    entry above them, so replacing an entry never disturbs its neighbours.
    """
    segments: list[tuple[str | None, str]] = []
    for line in block.splitlines(keepends=True):
        match = _KEY_LINE.match(line)
        if match:
            segments.append((match.group("key").strip("'\""), line))
        elif segments:
            key, text = segments[-1]
            segments[-1] = (key, text + line)
        else:
            segments.append((None, line))
    return segments


# ---------------------------------------------------------------- reading

def parse(text: str, path: str, defaults: dict) -> Note:
    """Read a note. `defaults` supplies every field a hand-written note may lack.

    Raises NoteError (naming the file and the fix) for broken YAML, a
    frontmatter that is not a set of properties, or a property of the wrong kind.
    """
    block, body = split_frontmatter(text)
    data: dict = {}
    if block is not None:
        try:
            loaded = yaml.load(block, Loader=_Loader)
        except yaml.YAMLError as exc:
            where = getattr(exc, "problem_mark", None)
            line = f" at line {where.line + 2}" if where is not None else ""
            problem = getattr(exc, "problem", None) or "syntax error"
            raise NoteError(path, f"broken YAML frontmatter{line} ({problem})",
                            "fix the frontmatter by hand; vaultmem will not touch this file until then") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise NoteError(path, "frontmatter is not a set of properties",
                            "write it as 'key: value' lines between the --- fences")
        data = {str(k): v for k, v in loaded.items()}

    values = dict(defaults)
    for key in ALL_KEYS:
        if key in data and data[key] is not None and data[key] != "":
            values[key] = _read_field(path, key, data[key])
        elif key in data and key in ("last_review", "decayed", "step", "stability", "difficulty", "source"):
            values[key] = None if key != "source" else ""
    present = frozenset(k for k in ALL_KEYS if k in data)
    return Note(body=body, path=path, present=present, **values)


def _read_field(path: str, key: str, value):
    """Normalise one known property, or raise NoteError saying what is wrong."""
    def bad(expected: str):
        return NoteError(path, f"property {key!r} is {value!r}, expected {expected}",
                         f"correct '{key}' in the note's properties")
    try:
        if key in _TEXT_KEYS:
            if isinstance(value, (list, dict)):
                raise bad("text")
            return str(value).strip()
        if key == "tags":
            items = value if isinstance(value, list) else re.split(r"[,\s]+", str(value))
            return tuple(t for t in (str(i).strip().lstrip("#") for i in items if i is not None) if t)
        if key in _LIST_KEYS:
            items = value if isinstance(value, list) else [value]
            return tuple(dict.fromkeys(str(i).strip() for i in items if i is not None and str(i).strip()))
        if key in _BOOL_KEYS:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("true", "yes", "1"):
                return True
            if text in ("false", "no", "0"):
                return False
            raise bad("true or false")
        if key in ("type", "status", "tier", "state"):
            allowed = {"type": TYPES, "status": STATUSES, "tier": TIERS, "state": CARD_STATES}[key]
            text = str(value).strip()
            text = text.upper() if key == "tier" else text.lower()
            if text not in allowed:
                raise bad("one of " + "|".join(allowed))
            return text
        if key in ("strength", "stability", "difficulty"):
            if isinstance(value, bool):
                raise bad("a number")
            return float(value)
        if key in ("step", "reps", "lapses"):
            if isinstance(value, bool) or float(value) != int(float(value)):
                raise bad("a whole number")
            return int(float(value))
        if key in _DATETIME_KEYS:
            try:
                return parse_datetime(value, what=key)
            except BadInput:
                raise bad("a datetime like 2026-11-30T14:05:00 (UTC)") from None
    except (TypeError, ValueError):
        what = {"strength": "a number", "stability": "a number", "difficulty": "a number"}.get(key, "a whole number")
        raise bad(what) from None
    raise AssertionError(key)


# ---------------------------------------------------------------- writing

def field_values(note: Note) -> dict:
    """The note's properties to write, in order: all of KEY_ORDER, and the
    optional ones that hold something or that the file already has."""
    values = {key: getattr(note, key) for key in KEY_ORDER}
    for key in OPTIONAL_KEYS:
        value = getattr(note, key)
        if key in note.present or value not in (False, (), "", None):
            values[key] = value
    return values


def render(note: Note, original: str | None = None) -> str:
    """The file text for `note`.

    With `original`, only properties whose value changed (or that were missing)
    are rewritten; everything else keeps its bytes. The body written is
    `note.body`, so callers that do not change the body keep it exactly.
    """
    newline = "\r\n" if original and "\r\n" in original else "\n"
    wanted = field_values(note)
    if original is None:
        lines = "".join(_render_entry(k, v, newline) for k, v in wanted.items())
        return f"---{newline}{lines}---{newline}{note.body}"

    block, _old_body = split_frontmatter(original)
    if block is None:
        lines = "".join(_render_entry(k, v, newline) for k, v in wanted.items())
        return f"---{newline}{lines}---{newline}{note.body}"

    opening = _FENCE.match(original).group(0)
    closing_at = len(original) - len(_old_body)
    closing = original[len(opening) + len(block):closing_at]
    segments = _segments(block)
    current = {}
    try:
        current = yaml.load(block, Loader=_Loader) or {}
    except yaml.YAMLError:
        raise NoteError(note.path, "broken YAML frontmatter",
                        "fix it by hand before vaultmem writes this file") from None

    out: list[tuple[str | None, str]] = []
    for key, text in segments:
        if key in wanted:
            old = current.get(key)
            old_value = _safe_read(note.path, key, old)
            if old_value == _comparable(key, wanted[key]) and _ends_with_newline(text):
                out.append((key, text))
            else:
                out.append((key, _render_entry(key, wanted[key], newline)))
        else:
            if not _ends_with_newline(text):
                text += newline
            out.append((key, text))
    present = {k for k, _ in out}
    for index, key in enumerate(ALL_KEYS):
        if key in present or key not in wanted:
            continue
        earlier = [k for k in ALL_KEYS[:index] if k in present]
        position = 0
        if earlier:
            position = max(i for i, (k, _) in enumerate(out) if k == earlier[-1]) + 1
        out.insert(position, (key, _render_entry(key, wanted[key], newline)))
        present.add(key)
    return opening + "".join(text for _, text in out) + closing + note.body


def _ends_with_newline(text: str) -> bool:
    return text.endswith("\n")


def _safe_read(path: str, key: str, value):
    if value is None or value == "":
        return None if key not in _LIST_KEYS else ()
    try:
        return _comparable(key, _read_field(path, key, value))
    except NoteError:
        return object()  # never equal: the property gets rewritten


def _comparable(key: str, value):
    if value == "" or value == ():
        return None if key not in _LIST_KEYS else ()
    if isinstance(value, float):
        return round(value, 6)
    return value


def _render_entry(key: str, value, newline: str) -> str:
    if isinstance(value, (list, tuple)):
        if not value:
            return f"{key}: []{newline}"
        items = "".join(f"  - {_scalar(v)}{newline}" for v in value)
        return f"{key}:{newline}{items}"
    rendered = _scalar(value)
    return f"{key}:{newline}" if rendered == "" else f"{key}: {rendered}{newline}"


def _scalar(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = f"{value:.6f}".rstrip("0").rstrip(".")
        return text if text not in ("", "-0") else "0"
    if isinstance(value, datetime):
        return format_datetime(value)
    text = str(value)
    if text == "":
        return ""
    return text if _plain_is_safe(text) else json.dumps(text, ensure_ascii=False)


@lru_cache(maxsize=4096)
def _plain_is_safe(text: str) -> bool:
    """True when `text` reads back from YAML as the same string, unquoted (cached: the
    same ids, namespaces and links are written again and again)."""
    if (text != text.strip() or "\n" in text or "\r" in text
            or text.startswith(("'", '"', "-", "?", "!", "&", "*", "%", "@", "`", "|", ">", "{", "["))):
        return False
    try:
        return yaml.load(f"k: {text}", Loader=_Loader) == {"k": text}
    except yaml.YAMLError:
        return False


# ---------------------------------------------------------------- new notes

def slugify(title: str, max_length: int = 60) -> str:
    """A readable file name: lower case, words joined by '-', any script kept."""
    normalized = unicodedata.normalize("NFKC", title).lower()
    words = re.findall(r"\w+", normalized)
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_length and slug:
            break
        slug = candidate[:max_length]
    return slug.strip("_") or "note"


def skill_body(title: str, trigger: str, steps: str, outcome: str, lessons: str) -> str:
    """A skill's body: its title and the four sections `learn` fills and recall indexes."""
    parts = [f"# {title.strip()}\n"]
    for name, content in zip(SKILL_SECTIONS, (trigger, steps, outcome, lessons)):
        parts.append(f"\n## {name}\n{(content or '').strip()}\n")
    return "".join(parts)


def with_changes(note: Note, **changes) -> Note:
    """A copy of `note` with `changes` applied (fields only, never the file)."""
    return replace(note, **changes)
