"""Property-based tests of the note parser and writer (core/note.py `parse` and `render`).

Whatever a file holds (any unicode, huge bodies, aliases, a property twice, every
property with a value of the wrong kind: lists where numbers go, numbers where
dates go, nested maps, nulls), reading it gives a Note or a NoteError, never
another exception. When it reads, writing it back keeps the body and every
unknown property byte for byte, an unchanged note renders to exactly its text,
and a change to one property changes only that property's lines.
"""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import datetime, timezone

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vaultmem.core import note as note_module
from vaultmem.core.model import CARD_STATES, STATUSES, TIERS, Note
from vaultmem.core.note import ALL_KEYS, BOM, load_frontmatter, parse, render, split_frontmatter
from vaultmem.errors import NoteError

T0 = datetime(2026, 1, 5, 9, tzinfo=timezone.utc)
DEFAULTS = {
    "id": "hand-written", "type": "memory", "namespace": "default", "tags": (), "status": "active", "tier": "L1",
    "strength": 0.5, "state": "learning", "step": 0, "stability": None, "difficulty": None, "due": T0,
    "last_review": None, "reps": 0, "lapses": 0, "created": T0, "updated": T0, "decayed": None, "source": "",
}
PATH = "memories/x/note.md"
FIELDS = tuple(f.name for f in fields(Note) if f.name not in ("present",))
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- strategies

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-10**30, max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40), st.dates(),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.sampled_from(["", " ", "[[Infra overview]]", "#db", "a, b c", "memory", "skill", "L2", "review",
                     "suspended", "2026-02-30", "yes", "1e999", ".nan", "-.inf", "0x1f", "~", "*not an alias*"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=8)
unknown_keys = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda k: k not in ALL_KEYS)
keys = st.one_of(st.sampled_from(ALL_KEYS), unknown_keys)


@st.composite
def entries(draw) -> str:
    """One top-level property as YAML text, in the styles people and tools write: block
    lists and maps, flow `[a, b]` for flat ones, a comment after it."""
    key, value = draw(keys), draw(values)
    style = draw(st.sampled_from(["block", "flow", "comment"]))
    text = yaml.safe_dump({key: value}, allow_unicode=True, sort_keys=False, width=10**9,
                          default_flow_style=style == "flow")
    if style == "flow":  # "{key: [a, b]}\n" on one line: the entry without its braces
        text = text[1:-2] + "\n"
    return text + ("# a comment a person left\n" if style == "comment" else "")


aliased = st.sampled_from([
    "base: &base [a, b]\ntags: *base\n",
    "projects: &p x\nmood: *p\n",
    "a: &a [lol, lol]\nb: &b [*a, *a]\nc: &c [*b, *b]\nprojects: *c\n",
])
bodies = st.one_of(
    st.text(),
    st.text(st.sampled_from("ab \n-#:\r\t\u00e9\u4e2d\U0001f600")),
    st.builds(lambda piece, times: piece * times, st.text(min_size=1, max_size=12), st.integers(0, 60_000)),
    st.just("---\nlooks: like frontmatter\n---\nbut is body\n"),
)


@st.composite
def note_files(draw) -> str:
    """A note file: maybe a BOM, maybe CRLF, frontmatter of generated entries (a key may
    repeat), sometimes with anchors and aliases among them, then any body."""
    parts = draw(st.lists(entries(), max_size=8))
    if draw(st.sampled_from([False, False, False, True])):
        parts.insert(draw(st.integers(0, len(parts))), draw(aliased))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = f"---\n{''.join(parts)}---\n".replace("\n", newline) + draw(bodies)
    return (BOM if draw(st.booleans()) else "") + text


def read(text: str) -> Note | None:
    """The parsed note, or None for a NoteError (the only failure allowed)."""
    try:
        return parse(text, PATH, DEFAULTS)
    except NoteError as exc:
        assert "\n" not in str(exc) and exc.path == PATH
        return None


def fields_of(note: Note) -> dict:
    return {name: getattr(note, name) for name in FIELDS}


def entry_texts(text: str) -> list[tuple[str | None, str]]:
    """The frontmatter's top-level entries [(key, exact text)], delimited by the lines YAML gives the keys."""
    block, _body = split_frontmatter(text)
    lines = block.splitlines(keepends=True)
    starts = [line for _key, line in load_frontmatter(block, PATH).keys]
    bounds = list(zip(starts, starts[1:] + [len(lines)]))
    return [(key, "".join(lines[a:b])) for (key, _line), (a, b) in zip(load_frontmatter(block, PATH).keys, bounds)]


def body_of(text: str) -> str:
    return split_frontmatter(text)[1]


# ---------------------------------------------------------------- properties

@SETTINGS
@given(st.text())
@example("\ufeff---\nid: x\n---\n")
@example("---\n" + "[" * 5000 + "\n---\n")
@example("---\n- a\n- b\n---\nlist frontmatter\n")
def test_any_text_reads_as_a_note_or_a_note_error(text):
    note = read(text)
    if note is None:
        return
    try:
        written = render(note, text)
    except NoteError as exc:
        assert "cannot edit line by line" in exc.problem, exc
        return
    assert fields_of(read(written)) == fields_of(note) and body_of(written) == note.body


@SETTINGS
@given(note_files())
@example("---\ntags: [a]\ntags: [b]\n---\nbody\n")
@example("---\na: &a [x]\nb: [*a, *a]\nprojects: *a\n---\n")
@example("---\nreps: [1, 2]\ndue: 12\nstrength: {a: 1}\nstatus: null\n---\n")
def test_hostile_frontmatter_reads_or_fails_cleanly_and_writes_back_losslessly(text):
    note = read(text)
    if note is None:
        return
    try:
        written = render(note, text)
    except NoteError as exc:
        assert "cannot edit line by line" in exc.problem, exc  # a {...} map: left alone, nothing written
        return
    assert body_of(written) == body_of(text) == note.body, "the body is kept byte for byte"
    assert written.startswith(BOM) == text.startswith(BOM)
    assert fields_of(read(written)) == fields_of(note), "what was written reads back as the note"
    kept = [entry for entry in entry_texts(text) if entry[0] not in ALL_KEYS]
    assert [entry for entry in entry_texts(written) if entry[0] not in ALL_KEYS] == kept, \
        "unknown properties are kept byte for byte, in order"
    assert render(read(written), written) == written, "an unchanged note renders to exactly its text"


changes = st.one_of(
    st.tuples(st.just("tags"), st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
                                                 min_size=1, max_size=10).map(str.strip).filter(
                                                     lambda t: t and not t.startswith("#")), max_size=3).map(tuple)),
    st.tuples(st.just("reps"), st.integers(0, 10**6)),
    st.tuples(st.just("strength"), st.floats(0, 1).map(lambda f: round(f, 6))),  # written to 6 places
    st.tuples(st.just("status"), st.sampled_from(STATUSES)),
    st.tuples(st.just("tier"), st.sampled_from(TIERS)),
    st.tuples(st.just("state"), st.sampled_from(CARD_STATES)),
    st.tuples(st.just("source"), st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
                                         max_size=30).map(str.strip)),
    st.tuples(st.just("due"), st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)).map(
        lambda d: d.replace(microsecond=0, tzinfo=timezone.utc))),
    st.tuples(st.just("contested"), st.booleans()),
)


@SETTINGS
@given(note_files(), changes)
def test_a_change_to_one_property_changes_only_its_lines(text, change):
    note = read(text)
    if note is None:
        return
    try:
        before = render(note, text)
    except NoteError:
        return
    key, value = change
    after = render(replace(read(before), **{key: value}), before)
    assert getattr(read(after), key) == value
    assert body_of(after) == body_of(before)
    assert [e for e in entry_texts(after) if e[0] != key] == [e for e in entry_texts(before) if e[0] != key]


@SETTINGS
@given(note_files(), changes)
@example("---\ntrue: 1\nreps: 0\n---\n", ("reps", 3))
@example("---\r\nreps: 0\r\n---\r\nbody\r\n", ("reps", 3))
def test_what_a_rewrite_remembers_of_its_block_is_what_parsing_it_gives(text, change):
    """render checks only the entries it rewrote and remembers what the new block reads
    as (the catalog then reads the file without parsing it again): that must be exactly
    what a full parse of the written block gives."""
    note = read(text)
    if note is None:
        return
    try:
        before = render(note, text)
        key, value = change
        after = render(replace(read(before), **{key: value}), before)
    except NoteError:
        return
    block, _body = split_frontmatter(after.removeprefix(BOM))
    remembered = note_module._REMEMBERED.get((block, PATH))
    assert remembered is not None  # render left it for the catalog (by the entries' check or the whole block's)
    assert remembered == note_module._load_with_yaml(block, PATH)


@SETTINGS
@given(st.builds(
    Note, id=st.text(min_size=1, max_size=20).map(str.strip).filter(bool), type=st.sampled_from(["memory", "skill"]),
    namespace=st.from_regex(r"[a-z0-9_.-]{1,8}(/[a-z0-9_.-]{1,8}){0,2}", fullmatch=True),
    tags=st.lists(st.from_regex(r"[\w-]{1,10}", fullmatch=True), max_size=3).map(tuple),
    status=st.sampled_from(STATUSES), tier=st.sampled_from(TIERS), strength=st.floats(0, 1).map(lambda f: round(f, 6)),
    state=st.sampled_from(CARD_STATES), step=st.none() | st.integers(0, 5),
    stability=st.none() | st.floats(0.01, 10**4).map(lambda f: round(f, 4)),
    difficulty=st.none() | st.floats(1, 10).map(lambda f: round(f, 4)),
    due=st.just(T0), last_review=st.none() | st.just(T0), reps=st.integers(0, 10**4), lapses=st.integers(0, 99),
    created=st.just(T0), updated=st.just(T0), decayed=st.none() | st.just(T0),
    source=st.text(max_size=30).map(str.strip), body=bodies, path=st.just(PATH),
    sessions=st.lists(st.from_regex(r"[\w-]{1,10}", fullmatch=True), max_size=2, unique=True).map(tuple),
    contested=st.booleans(), redacted=st.booleans(),
))
def test_a_note_vaultmem_writes_reads_back_and_renders_unchanged(note):
    text = render(note)
    again = read(text)
    assert again is not None
    assert {k: v for k, v in fields_of(again).items()} == fields_of(note)
    assert render(again, text) == text
