"""The line merge the write path uses for a save displaced by its exchange (core/linemerge.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vaultmem.core.linemerge import merge_texts

BASE = "---\nreps: 1\n---\nbody\n"  # our text: the grade applied on the old file


def test_a_save_built_on_ours_gets_the_displaced_saves_lines_and_keeps_its_own():
    displaced = "---\nreps: 0\n---\nbody\nfirst\n"
    built_on_ours = BASE + "second\n"
    assert merge_texts(BASE, displaced, built_on_ours) == "---\nreps: 0\n---\nbody\nfirst\nsecond\n"


def test_a_save_built_on_the_displaced_one_comes_out_unchanged():
    displaced = "---\nreps: 0\n---\nbody\nfirst\n"
    typed_on = "---\nreps: 0\n---\nbody\nfirst\nmore\n"
    assert merge_texts(BASE, displaced, typed_on) == typed_on


def test_a_line_deleted_on_one_side_stays_deleted():
    base = "a\nb\nc\n"
    assert merge_texts(base, "a\nb\nc\nd\n", "a\nc\n") == "a\nc\nd\n"


def test_two_different_rewrites_of_one_line_keep_both():
    assert merge_texts("a\nold\nz\n", "a\nmine\nz\n", "a\ntheirs\nz\n") == "a\nmine\ntheirs\nz\n"


def test_a_last_line_without_line_end_is_not_glued_to_the_next_side():
    assert merge_texts("a\n", "a\nx", "a\ny\n") == "a\nx\ny\n"


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "e\n"]), max_size=8)


@given(lines, lines, lines)
def test_every_line_either_side_added_is_in_the_merge(base, first, second):
    merged = merge_texts("".join(base), "".join(first), "".join(second)).splitlines(keepends=True)
    for side in (first, second):
        for line in set(side) - set(base):
            assert merged.count(line) >= 1, (base, first, second, merged)
