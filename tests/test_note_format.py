"""The note format: hand-written notes, byte-for-byte preservation, Obsidian style."""

from __future__ import annotations

import difflib

import pytest
import yaml

from vaultmem.core.note import KEY_ORDER, parse, render, split_frontmatter

from .conftest import T0


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_new_note_has_every_key_in_fixed_order(run, vault_dir):
    note = run.json("add", "Staging runs Postgres 16", "-n", "work", "--tags", "db,infra",
                    "--source", "[[Infra overview]]")
    text = (vault_dir / note["path"]).read_text()
    block, body = split_frontmatter(text)
    keys = [line.split(":")[0] for line in block.splitlines() if not line.startswith(" ")]
    # Evidence properties follow, and only those that hold something.
    assert keys == [*KEY_ORDER, "sessions", "days", "projects"]
    assert body == "Staging runs Postgres 16\n"
    # Obsidian's style: block list with two-space indent, wikilink quoted, empty value bare.
    assert "tags:\n  - db\n  - infra\n" in block
    assert 'source: "[[Infra overview]]"\n' in block
    assert "last_review:\n" in block
    assert f"created: {T0}\n" in block


def test_hand_written_note_without_frontmatter_is_a_memory(run, vault_dir):
    path = vault_dir / "memories" / "home" / "wifi-password-hint.md"
    path.parent.mkdir(parents=True)
    path.write_text("The wifi password is on the fridge.\n")
    before = path.read_bytes()
    listed = run.json("list")
    assert [n["id"] for n in listed] == ["wifi-password-hint"]
    assert listed[0]["namespace"] == "home" and listed[0]["status"] == "active"
    hits = run.json("recall", "wifi password")
    assert hits[0]["id"] == "wifi-password-hint"
    assert path.read_bytes() == before, "reading must never write"

    run("grade", "wifi-password-hint", "good")
    after = path.read_text()
    block, body = split_frontmatter(after)
    assert body == "The wifi password is on the fridge.\n"
    data = yaml.safe_load(block)
    assert data["id"] == "wifi-password-hint" and data["reps"] == 1 and data["namespace"] == "home"


def test_grade_changes_only_scheduling_lines_and_keeps_unknown_keys(run, vault_dir):
    path = vault_dir / "memories" / "work" / "deploy-rule.md"
    path.parent.mkdir(parents=True)
    original = (
        "---\n"
        "id: dep1\n"
        "aliases:\n"
        "  - deploy rule\n"
        "namespace: work\n"
        "custom_score:   7   # a person's comment\n"
        "tags: [ops, 'deploy']\n"
        "cssclasses: wide\n"
        "---\n"
        "Deploys go through **staging** first.\n\n\n"
        "Trailing text ünïcödé 🚀 stays.\n"
    )
    path.write_text(original)
    run("grade", "dep1", "good")
    after = path.read_text()
    # The person's keys, their formatting and the body are untouched.
    for line in ("aliases:\n  - deploy rule\n", "custom_score:   7   # a person's comment\n",
                 "tags: [ops, 'deploy']\n", "cssclasses: wide\n", "id: dep1\n", "namespace: work\n"):
        assert line in after
    assert after.endswith("---\nDeploys go through **staging** first.\n\n\nTrailing text ünïcödé 🚀 stays.\n")
    # A second grade touches only what a grade changes.
    before_second = after
    run("grade", "dep1", "good", now="2026-01-06T09:00:00")
    changed = changed_lines(before_second, path.read_text())
    diff_keys = {line[1:].split(":")[0] for line in changed if not line[1:].startswith("  - ")}
    assert diff_keys <= {"state", "step", "stability", "difficulty", "due", "last_review", "reps", "strength",
                         "updated"}
    assert {"reps", "due", "last_review"} <= diff_keys
    # ...plus one more day of evidence appended to the evidence lists (a good grade is a use).
    assert sorted(line for line in changed if line[1:].startswith("  - ")) == ['+  - "2026-01-06"',
                                                                               "+  - day-2026-01-06"]


def test_crlf_note_keeps_crlf(run, vault_dir):
    path = vault_dir / "memories" / "win" / "crlf.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"---\r\nid: crlf1\r\nnamespace: win\r\n---\r\nLine one\r\nLine two\r\n")
    run("grade", "crlf1", "easy")
    data = path.read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert data.endswith(b"---\r\nLine one\r\nLine two\r\n")
    assert b"reps: 1\r\n" in data


def test_parse_render_round_trip_is_identity():
    text = render(parse("---\nid: a1\nnamespace: x\n---\nbody\n", "memories/x/a1.md", _defaults()), None)
    note = parse(text, "memories/x/a1.md", _defaults())
    assert render(note, text) == text


def test_unchanged_values_keep_their_original_spelling():
    original = "---\nid: a1\nnamespace: x\nstrength: 0.50\ndue: 2026-01-05 09:00:00\ntags: []\n---\nbody\n"
    note = parse(original, "memories/x/a1.md", _defaults())
    rendered = render(note, original)
    assert "strength: 0.50\n" in rendered and "due: 2026-01-05 09:00:00\n" in rendered


@pytest.mark.parametrize("text, problem", [
    ("---\nid: [unclosed\n---\nbody\n", "broken YAML"),
    ("---\n- a\n- b\n---\nbody\n", "not a set of properties"),
    ("---\nstrength: high\n---\nbody\n", "'strength'"),
    ("---\nstatus: forgotten\n---\nbody\n", "'status'"),
    ("---\ndue: next tuesday\n---\nbody\n", "'due'"),
], ids=["broken-yaml", "list-frontmatter", "bad-number", "bad-status", "bad-date"])
def test_bad_frontmatter_is_one_clear_error(text, problem):
    from vaultmem.errors import NoteError

    with pytest.raises(NoteError) as caught:
        parse(text, "memories/x/bad.md", _defaults())
    message = str(caught.value)
    assert "memories/x/bad.md" in message and problem in message and "\n" not in message


def test_unclosed_fence_is_body_not_frontmatter():
    block, body = split_frontmatter("---\nnot closed\n")
    assert block is None and body == "---\nnot closed\n"


def test_types_json_declares_every_property(vault_dir):
    import json

    types = json.loads((vault_dir / ".obsidian" / "types.json").read_text())["types"]
    assert set(KEY_ORDER) <= set(types)
    assert types["strength"] == "number" and types["due"] == "datetime" and types["tags"] == "tags"


def _defaults():
    from vaultmem.clock import parse_datetime

    t = parse_datetime(T0)
    return {"id": "x", "type": "memory", "namespace": "default", "tags": (), "status": "active", "tier": "L1",
            "strength": 0.5, "state": "learning", "step": 0, "stability": None, "difficulty": None, "due": t,
            "last_review": None, "reps": 0, "lapses": 0, "created": t, "updated": t, "decayed": None, "source": ""}


@pytest.mark.parametrize(("note_namespace", "wanted", "expected"), [
    ("work/infra", "work", True), ("work/infra", "work/", True), ("work/infra", "/work/infra/", True),
    ("work", "work", True), ("workshop", "work", False), ("work", "work/infra", False),
    ("anything", None, True), ("anything", "", True), ("anything", "/", True)])
def test_in_namespace_takes_the_namespace_and_the_ones_below_it(note_namespace, wanted, expected):
    from vaultmem.core.model import in_namespace

    assert in_namespace(note_namespace, wanted) is expected


def test_a_note_made_from_the_obsidian_template_takes_its_folder_as_namespace(run, vault_dir):
    """Obsidian's Templates plugin copies templates/memory.md into the note as it is."""
    for name in ("memory", "skill"):
        template = (vault_dir / "templates" / f"{name}.md").read_text()
        assert "namespace: default" not in template
        folder = vault_dir / ("memories" if name == "memory" else "skills") / "work" / "infra"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"from-{name}-template.md").write_text(template.replace("{{title}}", "Deploy"))
        assert run.json("show", f"from-{name}-template")["namespace"] == "work/infra"


def test_a_grade_appends_to_a_list_a_person_wrote_without_rewriting_its_items(vault, vault_dir, monkeypatch):
    """A person's `days:` list written their way (unquoted, no indent): a grade on a new day adds
    one line after it, in their item style, and leaves their lines alone (quiet git diffs)."""
    note = vault.add("The printer is on floor 3", "office").note
    path = vault_dir / note.path
    text = path.read_text()
    start = text.index("days:\n")
    end = text.index("\n", text.index("  - ", start)) + 1
    path.write_text(text[:start] + "days:\n- 2025-12-01\n- 2026-01-04\n" + text[end:])
    vault.verify()
    monkeypatch.setenv("VAULTMEM_NOW", "2026-03-02T10:00:00")
    vault.grade(note.id, "good")
    after = path.read_text()
    assert "days:\n- 2025-12-01\n- 2026-01-04\n- \"2026-03-02\"\n" in after
    assert vault.get(note.id).days == ("2025-12-01", "2026-01-04", "2026-03-02")
