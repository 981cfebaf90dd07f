"""A three-way merge of two texts by lines that never drops a line either side added.

The write path needs it for one rare race (store/files.py): a person's save S1 lands
in the instant between vaultmem's check and its atomic exchange, so vaultmem's text is
in place for the two renames it takes to put S1 back; an editor that rereads the file
then can save S2 on top of vaultmem's text, and S2 lacks S1. Merging S1 and S2 with
vaultmem's text as the common base keeps both saves, whichever text S2 was built on:
on S1, every S1 change is in S2 already and S2 comes out unchanged.

Where both sides changed the same lines differently, the side that contains the
other's lines wins (an editor that typed more on top of S1); otherwise both are kept,
the first side's lines first: a duplicated line is a nuisance, a lost one is not.
"""

from __future__ import annotations

from difflib import SequenceMatcher


def merge_texts(base: str, first: str, second: str) -> str:
    """`first` and `second`, both derived from `base`, merged line by line."""
    if first == second or second == base:
        return first
    if first == base:
        return second
    base_lines, a, b = (text.splitlines(keepends=True) for text in (base, first, second))
    to_a, to_b = _line_map(base_lines, a), _line_map(base_lines, b)
    merged: list[str] = []
    i = ja = jb = 0  # the next unmerged line of base, first and second
    for k in sorted(set(to_a) & set(to_b)):
        if k < i or to_a[k] < ja or to_b[k] < jb:
            continue
        merged += _chunk(base_lines[i:k], a[ja:to_a[k]], b[jb:to_b[k]])
        merged.append(base_lines[k])
        i, ja, jb = k + 1, to_a[k] + 1, to_b[k] + 1
    merged += _chunk(base_lines[i:], a[ja:], b[jb:])
    text = "".join(merged)
    if text and not text.endswith("\n") and (first.endswith("\n") or second.endswith("\n")):
        text += "\n"
    return text


def _line_map(base: list[str], other: list[str]) -> dict[int, int]:
    """base line number -> the line of `other` it stays as (the lines neither side touched)."""
    matcher = SequenceMatcher(None, base, other, autojunk=False)
    return {block.a + n: block.b + n for block in matcher.get_matching_blocks() for n in range(block.size)}


def _chunk(base: list[str], a: list[str], b: list[str]) -> list[str]:
    """One region between lines both sides kept: a change on one side wins; two changes
    are joined unless one already holds the other."""
    if a == base or a == b:
        return b
    if b == base:
        return a
    if _contains(b, a):
        return b
    if _contains(a, b):
        return a
    return _with_line_ends(a) + b


def _contains(outer: list[str], inner: list[str]) -> bool:
    """Every line of `inner`, in order, among the lines of `outer`."""
    lines = iter(outer)
    return all(any(line == candidate for candidate in lines) for line in inner)


def _with_line_ends(lines: list[str]) -> list[str]:
    """`lines` with a final line end, so the next side's first line starts a line."""
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + "\n"]
    return lines
