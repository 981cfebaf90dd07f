"""The note format: markdown text <-> `Note`, touching only vaultmem's keys.

A note is YAML frontmatter with flat properties, then the body. Reading takes
defaults for anything missing (a hand-written note is a valid memory).
Rendering an existing file edits its frontmatter line by line: a property whose
value did not change keeps its exact original lines, unknown properties and the
body keep their bytes, and line endings stay as the file had them. Values are
written the way Obsidian's own property editor writes them (block lists with
two-space indent, double quotes only where YAML needs them, empty = `key:`).

Hostile or odd files (see `load_frontmatter`): a UTF-8 byte-order mark is read
past and kept; YAML aliases (`*name`) and a property written twice make the
note unreadable with a one-line problem instead of being expanded or guessed.

No file I/O here: the vault reads and writes, this module only transforms text.
"""

from __future__ import annotations

import json
import math
import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import replace
from datetime import datetime
from functools import lru_cache
from typing import NamedTuple

import yaml

from vaultmem.core.model import CARD_STATES, SKILL_SECTIONS, STATUSES, TIERS, TYPES, Note
from vaultmem.core.plain_block import read_plain_block
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
# Properties vaultmem does not model but finds notes by (`Note.present` names them when the file has them):
# an imported note's id in the store it came from.
LOOKUP_KEYS = ("original_id",)
_LIST_KEYS = ("tags", "sessions", "days", "projects", "contested_with")
_BOOL_KEYS = ("explicit", "contested", "redacted")
_TEXT_KEYS = ("id", "namespace", "source", "supersedes", "superseded_by")
_DATETIME_KEYS = ("due", "last_review", "created", "updated", "decayed", "promoted")

# libyaml's loader when present: parsing thousands of notes is a hot path. What vaultmem writes
# must read back as the same value under it (`_plain_is_safe`).
_StrictLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_StrictLoader):
    """The loader notes are read with: YAML 1.1 as PyYAML reads it, except that a value matching
    the integer pattern that is no integer ("0x_", "0b_": a digit group left empty) is its text,
    as YAML 1.2 and Obsidian read it, not an error that makes the whole note unreadable."""


def _int_or_text(loader, node):
    try:
        return loader.construct_yaml_int(node)
    except ValueError:
        return loader.construct_scalar(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _int_or_text)
# Bumped when a note the reader refused may read now (2: "0x_" and the like are text): a catalog made
# under an older reader reads the notes it refused again (store/catalog.py).
READER_VERSION = 2

# A UTF-8 byte-order mark, as Windows editors put before the first `---`.
BOM = "\ufeff"

# What a YAML double-quoted string cannot hold raw: no-printables, and YAML 1.1's extra line breaks.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")

_FENCE = re.compile(r"---[ \t]*(\r?\n|$)")

# What git writes into a file it could not merge: `<<<<<<< ours`, `=======`, `>>>>>>> theirs`.
_CONFLICT_MARKERS = re.compile(r"^(<{7}|>{7})(?: |\r?$)", re.MULTILINE)


def has_conflict_markers(text: str) -> bool:
    """Whether `text` holds both ends of a conflict git left unresolved (at the left edge)."""
    if "<<<<<<<" not in text:
        return False
    return len({match.group(1) for match in _CONFLICT_MARKERS.finditer(text)}) == 2


# An `id:` line as a file states it, read without parsing the file (broken YAML, a merge conflict).
ID_LINE = re.compile(r"^id:[ \t]*[\"']?([\w.-]+)[\"']?[ \t]*\r?$", re.MULTILINE | re.ASCII)


def conflict_error(path: str, text: str = "") -> NoteError:
    if len(set(ID_LINE.findall(text))) > 1:  # two notes, one name: keeping "the right lines" drops one
        return NoteError(path, f"unresolved merge conflict in {path}: two different notes got this file name "
                               "on two machines", "`vaultmem sync` keeps both (theirs beside it as NAME-2.md) and "
                                                  "finishes the merge")
    return NoteError(path, f"unresolved merge conflict in {path}",
                     "keep the right lines, delete the <<<<<<< ======= >>>>>>> markers, then `git add` the file")


# ---------------------------------------------------------------- splitting

def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Split text into (frontmatter block without fences, body), losslessly.

    A file that opens with `---` but never closes it has no frontmatter: its
    first line is a horizontal rule in the body. A leading byte-order mark is
    part of neither (`render` puts it back).
    """
    if text.startswith(BOM):
        text = text[1:]
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


_PROPERTY_LINE = re.compile(r"^[A-Za-z_][\w .-]*:(\s|$)")


def unclosed_properties(text: str) -> bool:
    """Whether `text` opens a properties block (a --- line, then `key: value` lines) whose
    closing --- line is missing: Obsidian and vaultmem then read it all as text, and a rewrite
    would put new properties above it, leaving the person's own in the text."""
    if split_frontmatter(text)[0] is not None:
        return False
    lines = text.lstrip(BOM).splitlines()[:40]
    if not lines or lines[0].rstrip() != "---":
        return False
    following = [line for line in lines[1:] if line.strip()][:1]
    return bool(following) and bool(_PROPERTY_LINE.match(following[0]))


def _segments(block: str, keys: list[tuple[str | None, int]]) -> list[tuple[str | None, str]]:
    """Top-level entries of a frontmatter block: [(key or None, exact text)].

    `keys` are the top-level keys with the line each starts on, as YAML found
    them (so a multi-line quoted value or flow map is never mistaken for a key).
    Lines between two keys (continuations, list items, blanks, comments) belong
    to the entry above them, so replacing an entry never disturbs its neighbours.
    """
    lines = block.splitlines(keepends=True)
    starts = [line for _key, line in keys]
    segments: list[tuple[str | None, str]] = []
    if not starts or starts[0] > 0:
        segments.append((None, "".join(lines[:starts[0] if starts else len(lines)])))
    for index, (key, line) in enumerate(keys):
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        segments.append((key, "".join(lines[line:end])))
    return [(key, text) for key, text in segments if text or key is not None]


# ---------------------------------------------------------------- reading

class Frontmatter(NamedTuple):
    """A frontmatter block as read: its properties, and where each top-level key starts."""

    data: dict
    keys: list[tuple[str | None, int]]  # (key text, or None for a complex key; 0-based line in the block)
    editable: bool  # every key opens its own line at column 0 (block style): entries can be edited line by line


def load_frontmatter(block: str, path) -> Frontmatter:
    """`_load_frontmatter`, remembered for the last few blocks: a rewrite reads the same
    block to parse it and to edit it, and `render` leaves what the edited block reads as
    for the catalog. Callers never mutate what they get (a NoteError is not remembered)."""
    key = (block, str(path))
    with _REMEMBERED_LOCK:
        found = _REMEMBERED.get(key)
        if found is not None:
            _REMEMBERED.move_to_end(key)
            return found
    return _remember(key, _load_frontmatter(block, path))


def _remember(key: tuple[str, str], frontmatter: Frontmatter) -> Frontmatter:
    with _REMEMBERED_LOCK:
        _REMEMBERED[key] = frontmatter
        if len(_REMEMBERED) > REMEMBERED_BLOCKS:
            _REMEMBERED.popitem(last=False)
    return frontmatter


REMEMBERED_BLOCKS = 2048  # a decay batch (500 notes) reads 2 blocks per note before cataloguing them
_REMEMBERED: OrderedDict[tuple[str, str], Frontmatter] = OrderedDict()
_REMEMBERED_LOCK = threading.Lock()


def _load_frontmatter(block: str, path) -> Frontmatter:
    """Read a frontmatter block with the safe loader, refusing what would turn a note against the vault.

    - YAML aliases (`*name`): a few hundred bytes of nested aliases expand to
      gigabytes (an "alias bomb"). Obsidian never writes them, so any alias is
      refused rather than budgeted.
    - A property written twice: YAML loaders keep the last silently; vaultmem
      refuses it, naming the key and its lines, instead of guessing which one
      the person meant (and a rewrite would have two entries to edit).
    - Nesting deeper than libyaml's limit (1000 levels) and nonsense values
      (`2026-02-30`, `!!float abc`) are broken YAML.
    Size is bounded before this (`notes.max_note_bytes`, store/files.py).
    Raises NoteError naming the file and the fix. A block of the plain shape vaultmem
    writes is read without the loader (core/plain_block.py): the same result, a tenth
    of the time.
    """
    plain = read_plain_block(block)
    if plain is not None:
        return Frontmatter(plain[0], plain[1], True)
    return _load_with_yaml(block, path)


def _load_with_yaml(block: str, path) -> Frontmatter:
    """`_load_frontmatter` through PyYAML's safe loader: any block, and the error for a broken one."""
    loader = _Loader(block)
    try:
        node = loader.get_single_node()
        if node is None:
            return Frontmatter({}, [], True)
        if not isinstance(node, yaml.MappingNode):
            raise NoteError(path, "frontmatter is not a set of properties",
                            "write it as 'key: value' lines between the --- fences")
        if "*" in block:  # no '*', no alias: the common case skips the walk
            _refuse_aliases(node, block, path)
        keys = []
        editable = not node.flow_style
        first_line: dict[str, int] = {}
        for key_node, _value in node.value:
            line = key_node.start_mark.line
            name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if name is not None:
                if name in first_line:
                    raise NoteError(path, f"property {_shown(name)} is written twice (lines {first_line[name] + 2} "
                                    f"and {line + 2}), so which one holds is unclear",
                                    f"keep one {_shown(name)} in the note's properties")
                first_line[name] = line
            if key_node.start_mark.column != 0 or (keys and keys[-1][1] == line):
                editable = False
            keys.append((name, line))
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 2}" if where is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise NoteError(path, f"broken YAML frontmatter{line} ({problem})",
                        "fix the frontmatter by hand; vaultmem will not touch this file until then") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # what the constructor raises for a value YAML's grammar allows: a 30th of February
        why = str(exc).splitlines()[0] if str(exc) else "bad value"
        raise NoteError(path, f"broken YAML frontmatter{_unreadable_value(loader, node)} ({why})",
                        "fix the frontmatter by hand; vaultmem will not touch this file until then") from None
    finally:
        loader.dispose()
    return Frontmatter({str(k): v for k, v in data.items()}, keys, editable)


def _unreadable_value(loader, node) -> str:
    """' in property due (line 9)': which value of a mapping the constructor refused, for the error
    (or '' when it cannot be told)."""
    for key_node, value_node in getattr(node, "value", ()):
        try:
            loader.construct_object(value_node, deep=True)
        except (ValueError, TypeError, OverflowError, RecursionError, yaml.YAMLError):
            name = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            return f" in property {_shown(name)} (line {key_node.start_mark.line + 2})"
    return ""


def _shown(value) -> str:
    """A value for a one-line message: its repr (newlines escaped), cut short."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _refuse_aliases(root: yaml.Node, block: str, path) -> None:
    """NoteError if a node is reached twice: the composer hands out the anchored node again for each alias."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise NoteError(path, f"frontmatter uses a YAML alias{_first_alias(block)}, which vaultmem does not expand",
                            "write the value out in full instead of *name")
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))


def _first_alias(block: str) -> str:
    """' (*name at line N)' for the first alias of `block` (only on the error path: a second parse)."""
    try:
        for event in yaml.parse(block, Loader=_Loader):
            if isinstance(event, yaml.AliasEvent):
                return f" (*{event.anchor} at line {event.start_mark.line + 2})"
    except yaml.YAMLError:
        pass
    return ""


def parse(text: str, path: str, defaults: dict) -> Note:
    """Read a note. `defaults` supplies every field a hand-written note may lack.

    Raises NoteError (naming the file and the fix) for broken YAML, a
    frontmatter that is not a set of properties, an alias or a repeated
    property (`load_frontmatter`), or a property of the wrong kind.
    """
    if has_conflict_markers(text):
        raise conflict_error(path, text)
    block, body = split_frontmatter(text)
    data = load_frontmatter(block, path).data if block is not None else {}

    values = dict(defaults)
    for key in ALL_KEYS:
        if key in data and data[key] is not None and data[key] != "":
            values[key] = _read_known(path, key, data[key])
        elif key in data and key in ("last_review", "decayed", "step", "stability", "difficulty", "source"):
            values[key] = None if key != "source" else ""
    present = frozenset(k for k in ALL_KEYS + LOOKUP_KEYS if k in data)
    return Note(body=body, path=path, present=present, **values)


def _read_known(path: str, key: str, value):
    """`_read_field`, remembered per (key, kind of value, value): a vault's notes share most
    values (statuses, tiers, numbers, days), and every read and rewrite reads each of them."""
    if isinstance(value, list):
        if not all(type(item) is str for item in value):
            return _read_field(path, key, value)
        remembered = (key, list, tuple(value))
    else:
        remembered = (key, type(value), value)  # the type: True == 1, but `reps: true` is an error
    try:
        return _READ[remembered]
    except KeyError:
        pass
    except TypeError:  # unhashable: a map where a value belongs (the read names the problem)
        return _read_field(path, key, value)
    found = _read_field(path, key, value)  # a NoteError is not remembered: it names the file
    if len(_READ) >= _READ_LIMIT:
        _READ.clear()
    _READ[remembered] = found
    return found


_READ: dict[tuple, object] = {}  # every value is immutable: str, tuple, bool, int, float, datetime
_READ_LIMIT = 8192


def _read_field(path: str, key: str, value):
    """Normalise one known property, or raise NoteError saying what is wrong."""
    def bad(expected: str):
        return NoteError(path, f"property {key!r} is {_shown(value)}, expected {expected}",
                         f"correct '{key}' in the note's properties")
    try:
        if key in _TEXT_KEYS:
            if isinstance(value, (list, dict)):
                raise bad("text")
            return str(value).strip()
        if key in _LIST_KEYS:
            if isinstance(value, dict) or (isinstance(value, list)
                                           and any(isinstance(i, (list, dict)) for i in value)):
                raise bad("a list of words")
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
            if isinstance(value, bool) or not math.isfinite(float(value)):
                raise bad("a number")
            return float(value)
        if key in ("step", "reps", "lapses"):
            if isinstance(value, bool) or float(value) != int(float(value)):
                raise bad("a whole number")
            return int(float(value))
        if key in _DATETIME_KEYS:
            try:
                return parse_datetime(value, what=key)
            except (BadInput, OverflowError):
                raise bad("a datetime like 2026-11-30T14:05:00 (UTC)") from None
    except (TypeError, ValueError, OverflowError):
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


def as_read_back(note: Note) -> Note:
    """The note `parse` gives for `render(note, original)`, where `original` is None (a new
    file) or the text `note` was parsed from before its change: the same fields (render
    checks that what it rewrites reads back), with `present` naming the properties the file
    then has (the original's, and every one render writes). What a written note's catalog
    row holds without reading its file back (tests check it against `parse`)."""
    written = {key for key in field_values(note) if key in _READ_BACK_KEYS}
    return replace(note, present=frozenset(note.present | written))


_READ_BACK_KEYS = frozenset(ALL_KEYS + LOOKUP_KEYS)


def render(note: Note, original: str | None = None) -> str:
    """The file text for `note`.

    With `original`, only properties whose value changed (or that were missing)
    are rewritten; everything else keeps its bytes, a byte-order mark included.
    The body written is `note.body`, so callers that do not change the body keep
    it exactly. Raises NoteError, writing nothing, for a frontmatter it cannot
    edit line by line (a `{...}` map, indented keys) or a result that would not
    read back as `note`.
    """
    bom = BOM if original is not None and original.startswith(BOM) else ""
    if bom:
        original = original[1:]
    newline = "\r\n" if original and "\r\n" in original else "\n"
    wanted = field_values(note)
    block, _old_body = split_frontmatter(original) if original is not None else (None, "")
    if block is None and original is not None and unclosed_properties(original):
        raise NoteError(note.path, "it opens with --- and properties, but no --- line closes them",
                        "add the closing --- line under the properties, then run the command again")
    if block is None:
        lines = "".join(_render_entry(k, v, newline) for k, v in wanted.items())
        return f"{bom}---{newline}{lines}---{newline}{note.body}"

    opening = _FENCE.match(original).group(0)
    closing_at = len(original) - len(_old_body)
    closing = original[len(opening) + len(block):closing_at]
    frontmatter = load_frontmatter(block, note.path)
    if not frontmatter.editable:
        raise NoteError(note.path, "its properties are written as one {...} map or indented, "
                        "which vaultmem cannot edit line by line",
                        "write them as 'key: value' lines starting at the left edge")
    current = frontmatter.data

    out: list[tuple[str | None, str]] = []
    changed: set[str] = set()  # the entries rewritten or added: the only ones to check
    for key, text in _segments(block, frontmatter.keys):
        if key in wanted:
            old_value = _safe_read(note.path, key, current.get(key))
            if old_value == _comparable(key, wanted[key]) and _ends_with_newline(text):
                out.append((key, text))
            else:
                out.append((key, _extended_list(text, old_value, wanted[key], newline)
                            or _render_entry(key, wanted[key], newline)))
                changed.add(key)
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
        changed.add(key)
    new_block = "".join(text for _, text in out)
    if not _check_entries_read_back(note, wanted, out, new_block, changed, current):
        _check_reads_back(note, wanted, new_block)
    return bom + opening + new_block + closing + note.body


def _check_entries_read_back(note: Note, wanted: dict, out: list[tuple[str | None, str]], block: str,
                             changed: set[str], current: dict) -> bool:
    """`_check_reads_back` for the rewritten entries alone, when that says the same: every
    entry of a block-style frontmatter starts its own line at the left edge and holds its
    own value (no alias reaches across), so the entries kept byte for byte still read as
    they did. What the new block reads as is then known without parsing it again, and is
    remembered for the catalog's read of the file (`block`: the entries of `out`, joined).
    False: the whole block must be checked."""
    if any(key is None for key, _text in out[1:]) or any(key not in current and key not in changed
                                                          for key, _text in out if key is not None):
        return False  # a complex key, or one YAML reads as another type (`true:`, `1:`)
    if any(c in block for c in _ODD_BREAKS) or block.count("\r") != block.count("\r\n"):
        return False  # line breaks YAML and str.splitlines count differently
    entries = "".join(text for key, text in out if key in changed)
    try:
        fresh = load_frontmatter(entries, note.path).data if entries else {}
    except NoteError:
        return False  # the whole block's check names the problem
    if set(fresh) != changed:
        return False
    _check_values_read_back(note, {key: wanted[key] for key in changed}, fresh)
    data, keys, line = {}, [], 0
    for key, text in out:
        if key is not None:
            data[key] = fresh[key] if key in changed else current[key]
            keys.append((key, line))
        line += len(text.splitlines())
    _remember((block, str(note.path)), Frontmatter(data, keys, True))
    return True


# Line breaks other than \n and \r\n: where YAML's line numbers and str.splitlines may part.
_ODD_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def unmodelled_properties(text: str, path: str) -> dict:
    """The properties of a note's file that vaultmem does not model (a person's own, an import's
    `original_id`), as read. NoteError for a frontmatter that does not read."""
    block, _body = split_frontmatter(text)
    if block is None:
        return {}
    return {k: v for k, v in load_frontmatter(block, path).data.items() if k not in ALL_KEYS}


def with_properties(text: str, properties: dict, path: str = "") -> str:
    """`text` with properties vaultmem does not model set (an imported note's
    `original_id`): an existing entry is replaced, a new one goes last; every
    other line keeps its bytes. vaultmem's own keys are refused (render sets those)."""
    if not properties:
        return text
    clash = sorted(set(properties) & set(ALL_KEYS))
    if clash:
        raise ValueError(f"{', '.join(clash)} are vaultmem's properties; set them through the note")
    bom = BOM if text.startswith(BOM) else ""
    block, body = split_frontmatter(text)
    if block is None:
        raise NoteError(path, "has no properties to add to", "write the note through vaultmem first")
    newline = "\r\n" if "\r\n" in text else "\n"
    frontmatter = load_frontmatter(block, path)
    if not frontmatter.editable:
        raise NoteError(path, "its properties are written as one {...} map or indented, "
                        "which vaultmem cannot edit line by line",
                        "write them as 'key: value' lines starting at the left edge")
    out = [[key, part] for key, part in _segments(block, frontmatter.keys)]
    for key, value in properties.items():
        entry = _render_entry(key, value, newline)
        existing = next((item for item in out if item[0] == key), None)
        if existing is not None:
            existing[1] = entry
        else:
            if out and not _ends_with_newline(out[-1][1]):
                out[-1][1] += newline
            out.append([key, entry])
    start = len(bom) + _FENCE.match(text[len(bom):]).end()
    return text[:start] + "".join(part for _key, part in out) + text[start + len(block):len(text) - len(body)] + body


def _check_reads_back(note: Note, wanted: dict, block: str) -> None:
    """The last guard before a write: the edited frontmatter must read back as the
    properties meant, or nothing is written (never a file that no longer parses)."""
    try:
        data = load_frontmatter(block, note.path).data
    except NoteError as exc:
        raise NoteError(note.path, f"vaultmem's edit of its properties would not read back ({exc.problem})",
                        "report this; the file was left as it was") from None
    _check_values_read_back(note, wanted, data)


def _check_values_read_back(note: Note, wanted: dict, data: dict) -> None:
    """NoteError unless each property of `wanted` reads back from `data` as meant."""
    for key, value in wanted.items():
        if _safe_read(note.path, key, data.get(key)) != _comparable(key, value):
            raise NoteError(note.path, f"vaultmem's edit of property {key!r} would not read back",
                            "report this; the file was left as it was")


def _ends_with_newline(text: str) -> bool:
    return text.endswith("\n")


def _safe_read(path: str, key: str, value):
    if value is None or value == "":
        return None if key not in _LIST_KEYS else ()
    try:
        return _comparable(key, _read_known(path, key, value))
    except NoteError:
        return object()  # never equal: the property gets rewritten


def _comparable(key: str, value):
    if value == "" or value == ():
        return None if key not in _LIST_KEYS else ()
    if isinstance(value, float):
        return round(value, 6)
    return value


_LIST_ITEM = re.compile(r"^([ \t]*-[ \t]+)\S")


def _extended_list(text: str, old, new, newline: str) -> str | None:
    """A block list that only gained items at its end (a grade's new day or session): the
    person's lines kept as they are (`- 2026-03-01` is not re-quoted), the new items written
    after them as theirs are. None when the list changed otherwise, or is not one item a line."""
    if not (isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)) and old
            and len(new) > len(old) and tuple(new[:len(old)]) == tuple(old)):
        return None
    lines = text.splitlines(keepends=True)
    items = [_LIST_ITEM.match(line) for line in lines[1:]]
    if lines[0].rstrip().rsplit(":", 1)[-1].strip() or len(items) != len(old) or not all(items):
        return None  # a flow list ([a, b]), comments or continuation lines: written anew
    kept = text if _ends_with_newline(text) else text + newline
    return kept + "".join(f"{items[-1].group(1)}{_scalar(v)}{newline}" for v in new[len(old):])


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
    if _plain_is_safe(text):
        return text
    # JSON's double quotes are YAML's, but JSON leaves raw what YAML refuses (DEL, C1
    # controls) or reads as a line break (NEL, U+2028/9): those are escaped too.
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


@lru_cache(maxsize=4096)
def _plain_is_safe(text: str) -> bool:
    """True when `text` reads back from YAML as the same string, unquoted (cached: the
    same ids, namespaces and links are written again and again)."""
    if (text != text.strip() or "\n" in text or "\r" in text
            or text.startswith(("'", '"', "-", "?", "!", "&", "*", "%", "@", "`", "|", ">", "{", "["))):
        return False
    plain = read_plain_block(f"k: {text}\n")  # exact where it answers (core/plain_block.py), and cheap
    if plain is not None:
        return plain[0] == {"k": text}
    try:
        return yaml.load(f"k: {text}", Loader=_StrictLoader) == {"k": text}
    except (yaml.YAMLError, ValueError):  # ValueError: "0x_" matches YAML's int pattern, int() refuses it
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
        parts.append(f"\n## {name}\n{_inside_a_section((content or '').strip())}\n")
    return "".join(parts)


def _inside_a_section(text: str) -> str:
    """A section's text with its own `#` and `##` headings made `###`: as written they would end
    the section (a trigger given as "## When ..." left the skill without one)."""
    return re.sub(r"(?m)^#{1,2}(?=[ \t])", "###", text)


def with_changes(note: Note, **changes) -> Note:
    """A copy of `note` with `changes` applied (fields only, never the file)."""
    return replace(note, **changes)
