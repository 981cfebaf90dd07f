"""core/plain_block.py: the blocks it reads, it reads exactly as PyYAML does; the blocks
vaultmem writes, it reads (else every rewrite and refresh silently goes the slow way)."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vaultmem import Vault
from vaultmem.core import note as note_module
from vaultmem.core.model import Note
from vaultmem.core.note import render, split_frontmatter
from vaultmem.core.plain_block import read_plain_block
from vaultmem.errors import NoteError

PATH = "memories/x/note.md"
SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Values near the edge of the plain shape: YAML 1.1's other types, indicators, quoting, comments.
TRICKY = ["0.5", "0", "-5", "-x", "0123", "0o17", "0x1f", "1_000", "1:20", "190:20:30", "1e5", "1.0e+5", ".5",
          ".inf", "-.inf", ".nan", "~", "null", "Null", "yes", "No", "on", "OFF", "true", "y", "n", "<<", "=",
          "2026-02-30", "2026-12-02", "2026-12-02T00:02:26", "2026-12-02 10:30:00 +02:00", "2026-1-5",
          "2026-12-02T00:02:26.5Z", "'it''s'", "'x'", "''", '"x"', '""', '"a\\tb"', '"a"b', "[]", "[a]", "[a, b]",
          "{}", "{a: 1}", "&a x", "*a", "!!str 5", "!x y", "|", ">", "C#", "a #b", "a# b", "a: b", "a:b", "a:",
          "a ", "- x", "#c", "%x", "@x", "`x", "?x", "? x", ",x", "a, b", "it's", 'say "hi"', "[[Infra]]",
          "https://example.com/a?b=c", "x" * 40, "a\tb", "é", "day-2026-12-02", "L1", "memory"]
values = st.one_of(st.sampled_from(TRICKY), st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12))
key_texts = st.one_of(st.sampled_from(["id", "tags", "strength", "due", "my-key", "_x", "yes", "on", "null", "Null",
                                       "true", "a.b", "Key", "1", "~", "y", "<<"]),
                      st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,6}", fullmatch=True))


@st.composite
def lines(draw) -> str:
    kind = draw(st.sampled_from(["entry"] * 6 + ["empty-key", "item", "item", "odd"]))
    if kind == "entry":
        return draw(key_texts) + draw(st.sampled_from([": ", ":  ", ":", " : ", ":\t"])) + draw(values)
    if kind == "empty-key":
        return draw(key_texts) + draw(st.sampled_from([":", ": ", ": []"]))
    if kind == "item":
        return draw(st.sampled_from(["  ", "", "   ", "    ", "\t"])) + draw(st.sampled_from(["- ", "-", "-  "])) \
            + draw(values)
    return draw(st.sampled_from(["# a comment", "", "  continued", "---", "...", "%YAML 1.1", "  key: v", "- - x",
                                 "key: |", "  text", "? complex", ": value"]))


blocks = st.builds(lambda parts, end: "\n".join(parts) + end, st.lists(lines(), min_size=1, max_size=6),
                   st.sampled_from(["\n", "\n", "", "\r\n"]))


def typed(value):
    """A value with its type, nan equal to nan, for comparing two readings exactly."""
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, dict):
        return ("dict", {k: typed(v) for k, v in value.items()})
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


@SETTINGS
@given(blocks)
@example("id: x\ntags:\n  - a\n  - b\nreps: 0\n")
@example("tags:\n- a\n- b\nnext: 1:20\n")
@example("yes: 1\n")
@example("a: 1\na: 2\n")
@example("tags:\n  - a\n - b\n")
@example("source: a\n  b\n")
@example("due: 2026-02-30\n")
def test_a_block_read_the_plain_way_reads_exactly_as_yaml_reads_it(block):
    assert_read_as_yaml_reads_it(block)


@pytest.mark.parametrize("value", TRICKY)
def test_each_tricky_value_reads_as_yaml_reads_it_or_goes_the_full_way(value):
    for block in (f"k: {value}\n", f"k:\n  - {value}\n", f"k:\n- a\n- {value}\n", f"{value}: 1\n"):
        assert_read_as_yaml_reads_it(block)


def assert_read_as_yaml_reads_it(block: str) -> None:
    plain = read_plain_block(block)
    if plain is None:
        return  # the full loader's business
    data, keys = plain
    try:
        full = note_module._load_with_yaml(block, PATH)
    except NoteError as exc:
        raise AssertionError(f"read plainly, but YAML refuses it: {exc}") from None
    assert typed(data) == typed(full.data)
    assert keys == full.keys and full.editable


T0 = datetime(2026, 1, 5, 9, tzinfo=timezone.utc)
words = st.from_regex(r"[a-z][a-z0-9-]{0,9}", fullmatch=True)


@SETTINGS
@given(st.builds(
    Note, id=st.from_regex(r"[a-z0-9]{8}", fullmatch=True), type=st.sampled_from(["memory", "skill"]),
    namespace=st.from_regex(r"[a-z0-9_-]{1,8}(/[a-z0-9_-]{1,8}){0,2}", fullmatch=True),
    tags=st.lists(words, max_size=3).map(tuple), status=st.sampled_from(["active", "stale", "suspended"]),
    tier=st.sampled_from(["L0", "L1", "L2", "L3"]), strength=st.floats(0, 1).map(lambda f: round(f, 6)),
    state=st.sampled_from(["learning", "review", "relearning"]), step=st.none() | st.integers(0, 5),
    stability=st.none() | st.floats(0.01, 10**4).map(lambda f: round(f, 4)),
    difficulty=st.none() | st.floats(1, 10).map(lambda f: round(f, 4)),
    due=st.just(T0), last_review=st.none() | st.just(T0), reps=st.integers(0, 10**4), lapses=st.integers(0, 99),
    created=st.just(T0), updated=st.just(T0), decayed=st.none() | st.just(T0),
    source=st.sampled_from(["", "[[Infra overview]]", "https://example.com/runbook", "D1:3", "chat 2026-01-05"]),
    body=st.just("Body.\n"), path=st.just(PATH), sessions=st.lists(words, max_size=2, unique=True).map(tuple),
    projects=st.lists(words, max_size=2, unique=True).map(tuple), contested=st.booleans(),
    contested_with=st.lists(words, max_size=2, unique=True).map(tuple),
))
def test_every_block_vaultmem_writes_for_plain_text_is_read_the_plain_way(note):
    block, _body = split_frontmatter(render(note))
    assert read_plain_block(block) is not None, block


def test_the_notes_an_add_and_a_grade_write_are_read_the_plain_way(vault_dir):
    vault = Vault(vault_dir)
    added = vault.add("Staging runs Postgres 16 on port 5433, see https://example.com/db?x=1", "work/infra",
                      tags=["db", "infra"], source="[[Infra overview]]")
    vault.grade(added.note.id, "good")
    for path in (vault_dir / "memories").rglob("*.md"):
        block, _body = split_frontmatter(path.read_text(encoding="utf-8"))
        assert read_plain_block(block) is not None, path


def test_text_yaml_takes_for_a_number_it_cannot_read_is_written_quoted_and_reads_back(vault_dir):
    """"0x_" and "0b_" match YAML's hex and binary patterns, and PyYAML's int() then refuses
    them: a note holding one must quote it, not fail to render (hypothesis found "0x_")."""
    vault = Vault(vault_dir)
    added = vault.add("A namespace that looks like hex", "0x_", tags=["0b_", "+0x_"])
    block, _body = split_frontmatter((vault_dir / added.note.path).read_text(encoding="utf-8"))
    assert 'namespace: "0x_"' in block
    again = vault.get(added.note.id)
    assert (again.namespace, set(again.tags)) == ("0x_", {"0b_", "+0x_"})
