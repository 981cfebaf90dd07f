"""CLAUDE.md-style agent instruction and memory files, read one bullet at a time.

Reads CLAUDE.md, CLAUDE.local.md, AGENTS.md, MEMORY.md, GEMINI.md,
copilot-instructions.md, .cursorrules and .windsurfrules (`BULLET_FILES`), or
a folder holding them. They have no schema and no single upstream repository:
each is free markdown an agent reads at the start of a session, where the
facts worth keeping are list items. So each top-level bullet is one memory
(nested bullets and continuation lines stay with it, a wrapped line is joined
to its paragraph), the nearest heading above it is a tag, and its source is
`path:line`; code blocks, HTML comments and prose paragraphs are not memories.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from vaultmem.core.note import slugify, split_frontmatter
from vaultmem.errors import NoteError
from vaultmem.integrations.importers.base import BULLET_FILES, MAX_FILE_BYTES, Incoming, Record, Skip
from vaultmem.integrations.importers.common import _markdown_files, _reason
from vaultmem.store.files import read_text

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
