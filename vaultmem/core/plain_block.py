"""Frontmatter blocks of the plain shape vaultmem writes, read without the YAML loader.

Nearly every block in a vault is one vaultmem wrote: `key: value` lines and short
`  - item` lists of plain or simply quoted scalars. Reading one through PyYAML is
mostly its constructor, in Python: a decay, a reindex or a catalog refresh reads
thousands, and that was a fifth of a decay's time. `read_plain_block` reads exactly
that shape, each scalar resolved and built by PyYAML's own resolver and
constructors (so a value means what the full loader makes of it, `0.5`, `yes`,
`2026-01-05` alike), and answers None for anything else: a comment, a flow
collection, an escape, an indented or repeated key, a tab, a non-ASCII character,
a value the constructor refuses. The caller then uses the full loader, which also
names what is wrong with a broken block.
"""

from __future__ import annotations

import re

import yaml

_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*))?")
_ITEM_LINE = re.compile(r"( *)- (.*)")
_DOUBLE_QUOTED = re.compile(r'"([^"\\]*)"')
_SINGLE_QUOTED = re.compile(r"'([^']*)'")
# Plain scalars: no indicator first (a leading '-' only before a digit), no ': ' or ' #'
# inside, no flow brackets, no trailing ':' or space.
_PLAIN = re.compile(r"(?:-(?=[0-9])|[^-?:,\[\]{}#&*!|>'\"%@`\s])[^\[\]{}]*")
_UNPLAIN = re.compile(r": | #|[: ]\Z")
_ODD_CHARACTERS = re.compile(r"[^\x20-\x7e\n]")
# The tags of values a note's properties hold; anything else (a merge key `<<`, `=`) goes the full way.
_SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "timestamp"))
_STR = "tag:yaml.org,2002:str"

_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_BUILT: dict[str, object] = {}  # scalar text -> its value (all immutable): the same few recur everywhere
_BUILT_LIMIT = 8192
_KEYS: set[str] = set()  # key texts YAML reads as strings (not `yes:`, `null:`)


class _NotPlain(Exception):
    """The block is outside the plain shape: the full loader reads it."""


def read_plain_block(block: str) -> tuple[dict, list[tuple[str, int]]] | None:
    """(properties, [(key, 0-based line)]) of a plain block, or None: read it with the YAML loader."""
    if not block.endswith("\n") or _ODD_CHARACTERS.search(block):
        return None
    data: dict = {}
    keys: list[tuple[str, int]] = []
    items: list | None = None  # the list the lines below the current key add to
    indent: str | None = None  # its items' indentation
    try:
        for number, line in enumerate(block[:-1].split("\n")):
            key_line = _KEY_LINE.fullmatch(line)
            if key_line:
                key, text = key_line.groups()
                if key in data or not _is_text_key(key):
                    return None
                keys.append((key, number))
                if text is None:
                    data[key] = None
                    items, indent = [], None
                else:
                    data[key] = [] if text == "[]" else _scalar(text)
                    items = None
                continue
            item_line = _ITEM_LINE.fullmatch(line)
            if not item_line or items is None or (indent is not None and item_line.group(1) != indent):
                return None
            if not items:
                data[keys[-1][0]] = items
            indent = item_line.group(1)
            items.append(_scalar(item_line.group(2)))
    except _NotPlain:
        return None
    return (data, keys) if keys else None


def _is_text_key(key: str) -> bool:
    if key in _KEYS:
        return True
    if _RESOLVER.resolve(yaml.ScalarNode, key, (True, False)) != _STR:
        return False
    _KEYS.add(key)
    return True


def _scalar(text: str):
    """The value of one scalar written on its own, or _NotPlain."""
    try:
        return _BUILT[text]
    except KeyError:
        pass
    value = _build(text)
    if len(_BUILT) >= _BUILT_LIMIT:
        _BUILT.clear()
    _BUILT[text] = value
    return value


def _build(text: str):
    for quoted in (_DOUBLE_QUOTED, _SINGLE_QUOTED):
        found = quoted.fullmatch(text)
        if found:
            return found.group(1)
    if not _PLAIN.fullmatch(text) or _UNPLAIN.search(text):
        raise _NotPlain
    tag = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))
    if tag not in _SCALAR_TAGS:
        raise _NotPlain
    try:
        return _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, text))
    except (ValueError, TypeError, OverflowError):
        raise _NotPlain from None  # a 30th of February: the full loader says so
