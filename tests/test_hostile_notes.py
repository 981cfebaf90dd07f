"""Hostile or odd note files cannot be turned against the vault (issue 10).

A byte-order mark, a YAML alias bomb, a property written twice, a value of the
wrong kind, an oversized memory: each is either read correctly or becomes one
unreadable note with a one-line problem that `health` names, while every other
note keeps working. Commands that could blow up on a regression run in a
subprocess with a memory cap and a timeout, so a failure fails, it never takes
the machine down.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from vaultmem.errors import BadInput, NoteError
from vaultmem.vault import Vault

from .conftest import run_process

BOM = b"\xef\xbb\xbf"
MEMORY_CAP = 2 * 1024 ** 3  # far above what any command needs, far below what a bomb takes


def vaultmem(vault_dir: Path, *args: str, expect: int = 0) -> subprocess.CompletedProcess:
    """`python -m vaultmem --vault VAULT ARGS` with 2 GB of address space and a minute at most."""
    def cap_memory():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    result = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(vault_dir), *args],
                            capture_output=True, text=True, timeout=60, preexec_fn=cap_memory, env=dict(os.environ))
    assert result.returncode == expect, f"exit {result.returncode}: {result.stdout}{result.stderr}"
    return result


def alias_bomb(key: str) -> str:
    """The billion laughs in well under 1 KB: nine levels of nine aliases, the last one as `key`."""
    lines = ["---", "id: bomb", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    lines += [f"{key}: *i", "---", "Billion laughs.", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- byte-order mark

def test_a_note_saved_with_a_bom_is_read_and_its_bom_kept_on_rewrite(run, vault_dir):
    path = vault_dir / "memories" / "win" / "notepad.md"
    path.parent.mkdir(parents=True)
    original = BOM + (b"---\r\nid: winnote\r\ntags:\r\n  - windows\r\nmood: calm  # set by hand\r\n"
                      b"reps: 0\r\n---\r\nSaved in Notepad: the deploy window is Tuesday.\r\n")
    path.write_bytes(original)

    shown = run.json("show", "winnote")
    assert shown["id"] == "winnote" and shown["tags"] == ["windows"]
    assert run.json("health")["problems"] == []

    run("grade", "winnote", "good")
    after = path.read_bytes()
    assert after.startswith(BOM + b"---\r\n"), "the mark stays first, before the one frontmatter block"
    assert after.count(b"---\r\n") == 2, "no second frontmatter block"
    assert b"\r\nmood: calm  # set by hand\r\n" in after
    assert after.endswith(b"---\r\nSaved in Notepad: the deploy window is Tuesday.\r\n")
    assert b"\n" not in after.replace(b"\r\n", b""), "line endings kept"
    assert run.json("show", "winnote")["reps"] == 1
    assert run.json("show", "winnote")["tags"] == ["windows"]


def test_a_bom_note_without_properties_gets_them_after_its_bom(vault, vault_dir):
    path = vault_dir / "memories" / "win" / "plain.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(BOM + b"Just text, no properties.\n")
    vault.grade("plain", "good")
    after = path.read_bytes()
    assert after.startswith(BOM + b"---\n") and after.endswith(b"---\nJust text, no properties.\n")
    assert after.count(BOM) == 1
    assert vault.get("plain").reps == 1


def test_a_utf16_note_is_one_problem_naming_the_fix(run, vault_dir):
    path = vault_dir / "memories" / "win" / "unicode.md"
    path.parent.mkdir(parents=True)
    path.write_bytes("---\nid: wide\n---\nUTF-16 from Notepad\n".encode("utf-16"))
    problems = run.json("health")["problems"]
    assert problems == [{"path": "memories/win/unicode.md",
                         "problem": "is UTF-16 text, not UTF-8; re-save it as UTF-8"}]


# ---------------------------------------------------------------- alias bombs

@pytest.mark.parametrize("key", ["tags", "projects", "mood"])
def test_an_alias_bomb_is_one_unreadable_note_and_the_rest_of_the_vault_works(vault_dir, key):
    good = Vault(vault_dir).add("Staging runs Postgres 16 on port 5433", "x").note.id  # before the bomb: in-process
    bomb = vault_dir / "memories" / "x" / "bomb.md"
    bomb.write_text(alias_bomb(key))
    assert bomb.stat().st_size < 1024
    before = bomb.read_bytes()

    health = json.loads(vaultmem(vault_dir, "health", "--json").stdout)
    problem = {p["path"]: p["problem"] for p in health["problems"]}["memories/x/bomb.md"]
    assert "YAML alias (*a at line 4)" in problem and "\n" not in problem
    assert health["first"].startswith("memories/x/bomb.md: ")

    listed = json.loads(vaultmem(vault_dir, "list", "--json").stdout)
    assert [n["id"] for n in listed] == [good]
    hits = json.loads(vaultmem(vault_dir, "recall", "which port is the staging database on", "--json").stdout)
    assert [h["id"] for h in hits] == [good]
    assert json.loads(vaultmem(vault_dir, "grade", good, "good", "--json").stdout)["reps"] == 1
    vaultmem(vault_dir, "decay")

    refused = vaultmem(vault_dir, "grade", "bomb", "good", expect=2)
    assert refused.stderr.count("\n") == 1 and "memories/x/bomb.md" in refused.stderr and "alias" in refused.stderr
    assert bomb.read_bytes() == before, "an unreadable note is never rewritten"
    catalog = vault_dir / ".vaultmem" / "cache" / "catalog.sqlite"
    assert catalog.stat().st_size < 1024 ** 2


def test_importing_files_with_alias_bombs_skips_them_and_imports_the_rest(vault_dir, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "bomb.md").write_text(alias_bomb("tags"))
    (folder / "fine.md").write_text("---\ntags: [ok]\n---\nA fine imported note.\n")
    report = json.loads(vaultmem(vault_dir, "import", str(folder), "--json").stdout)
    assert [a["path"] for a in report["added"]] == ["memories/notes/fine.md"]
    assert "YAML alias" in report["skipped"][0]["reason"] and report["skipped"][0]["source"].endswith("bomb.md")

    export = tmp_path / "export.jsonl"
    export.write_text(json.dumps({"path": "memories/x/bomb.md", "text": alias_bomb("id")}) + "\n")
    report = json.loads(vaultmem(vault_dir, "import", str(export), "--json", expect=2).stdout)
    assert "YAML alias" in report["errors"][0]["reason"]
    assert not (vault_dir / "memories" / "x" / "bomb.md").exists()


def test_an_anchor_without_an_alias_is_plain_yaml(vault, vault_dir):
    path = vault_dir / "memories" / "x" / "anchored.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nid: anch\ntags: &t [db]\nsource: \"*bold* text\"\n---\nAnchored but never aliased.\n")
    note = vault.get("anch")
    assert note.tags == ("db",) and note.source == "*bold* text"


# ---------------------------------------------------------------- duplicate keys and wrong kinds

def test_a_property_written_twice_is_refused_naming_the_key_and_lines(run, vault_dir):
    path = vault_dir / "memories" / "x" / "twice.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nid: twice\ntags: [a]\nstatus: active\ntags: [b]\n---\nWhich tags?\n")
    before = path.read_bytes()
    problems = {p["path"]: p["problem"] for p in run.json("health")["problems"]}
    assert problems["memories/x/twice.md"] == ("property 'tags' is written twice (lines 3 and 5), so which one "
                                               "holds is unclear; keep one 'tags' in the note's properties")
    result = run("grade", "twice", "good", expect=2)
    assert "written twice" in result.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize("line, expected", [
    ("reps: .inf", "'reps' is inf, expected a whole number"),
    ("strength: .nan", "'strength' is nan, expected a number"),
    ("due: 2026-02-30", "broken YAML frontmatter in property 'due' (line 3) (day is out of range for month)"),
    ("due: [2026-01-01]", "'due' is [datetime.date(2026, 1, 1)], expected a datetime"),
    ("tags: {a: 1}", "'tags' is {'a': 1}, expected a list of words"),
    ("projects: [[a, b]]", "'projects' is [['a', 'b']], expected a list of words"),
    ("lapses: 1e999", "'lapses' is '1e999', expected a whole number"),
    ("stability: !!float abc", "broken YAML frontmatter in property 'stability' (line 3) (could not convert string "
                               "to float: 'abc')"),
])
def test_a_value_of_the_wrong_kind_is_one_problem_not_a_crash(vault, vault_dir, line, expected):
    path = vault_dir / "memories" / "x" / "odd.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nid: odd\n{line}\n---\nOdd value.\n")
    vault.add("A healthy memory", "x")
    (problem,) = [m for p, m in vault.catalog(fresh=True).problems if p == "memories/x/odd.md"]
    assert expected in problem and "\n" not in problem
    assert [n.body for n in vault.notes()] == ["A healthy memory\n"]


# ---------------------------------------------------------------- edits that YAML, not a regex, delimits

def test_a_key_inside_a_multiline_value_is_not_taken_for_a_property(vault, vault_dir):
    path = vault_dir / "memories" / "x" / "multi.md"
    path.parent.mkdir(parents=True)
    # YAML allows these continuation lines at the left edge; they look like keys to a line scanner
    text = ('---\nid: multi\nmeta: {a: 1,\ntags: 2}\nquote: "first line\ntags: not a property"\nreps: 0\n---\n'
            "Body.\n")
    path.write_text(text)
    vault.grade("multi", "good")
    vault.update_note("multi", lambda n: {"tags": ("new",)})
    after = path.read_text()
    assert "meta: {a: 1,\ntags: 2}\n" in after and 'quote: "first line\ntags: not a property"\n' in after
    note = vault.get("multi")
    assert note.tags == ("new",) and note.reps == 1


def test_properties_written_as_one_flow_map_are_refused_on_write_and_left_alone(vault, vault_dir):
    path = vault_dir / "memories" / "x" / "flow.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\n{id: flow, tags: [a]}\n---\nFlow style.\n")
    before = path.read_bytes()
    assert vault.get("flow").tags == ("a",), "readable"
    with pytest.raises(NoteError) as caught:
        vault.grade("flow", "good")
    assert "one {...} map" in str(caught.value)
    assert path.read_bytes() == before


# ---------------------------------------------------------------- size limits on writes

def test_a_memory_over_the_note_size_limit_is_refused_before_anything_is_written(run, vault, vault_dir):
    huge = "word " * 399_999 + "words"  # 2 MB
    files_before = sorted(p for p in vault_dir.rglob("*") if p.is_file() and ".vaultmem" not in p.parts)

    with pytest.raises(BadInput) as caught:
        vault.add(huge, "x")
    assert "2,000,000 bytes, over the 1,000,000-byte limit" in str(caught.value)
    assert "notes.max_note_bytes" in str(caught.value)
    with pytest.raises(BadInput):
        vault.learn("Big skill", "when", huge, "done", "none", "x")

    result = run("add", huge, "-n", "x", expect=2)
    assert "over the 1,000,000-byte limit" in result.stderr and result.stderr.count("\n") == 1
    export = vault_dir.parent / "export.jsonl"
    export.write_text(json.dumps({"path": "memories/x/huge.md", "text": f"---\nid: huge\n---\n{huge}"}) + "\n")
    imported = run("import", str(export), "--json", expect=2)
    assert "over the 1,000,000-byte limit" in imported.stdout

    files_after = sorted(p for p in vault_dir.rglob("*") if p.is_file() and ".vaultmem" not in p.parts)
    assert files_after == files_before
    assert vault.notes() == []


def test_a_memory_just_under_the_limit_is_written_and_reads_back(vault, vault_dir):
    vault.config = replace(vault.config, max_note_bytes=20_000)
    text = "x" * 19_000
    added = vault.add(text, "x")
    assert (vault_dir / added.note.path).stat().st_size <= 20_000
    assert vault.get(added.note.id).body == text + "\n"
    with pytest.raises(BadInput):
        vault.add("y" * 20_001, "x")


def test_an_oversized_memory_through_mcp_is_a_tool_error_and_nothing_is_written(vault_dir, tmp_path):
    from tests.test_mcp import error_of, run_session

    async def body(session):
        message = error_of(await session.call_tool("add", {"text": "word " * 400_000 + "s", "namespace": "x"}))
        assert "over the 1,000,000-byte limit" in message and "nothing was written" in message
        message = error_of(await session.call_tool("learn", {"title": "Huge", "namespace": "x",
                                                             "steps": "step " * 400_000}))
        assert "over the 1,000,000-byte limit" in message
        added = await session.call_tool("add", {"text": "A normal memory after the refusals", "namespace": "x"})
        assert not added.is_error, added

    run_session(vault_dir, tmp_path, body)
    assert [p.name for p in (vault_dir / "memories").rglob("*.md")] == ["a-normal-memory-after-the-refusals.md"]


HEX_NOTE = "---\nid: hex00001\ntype: memory\nnamespace: work\nsource: 0b_\ntags: [0x_, db]\n---\nThe widget hex note.\n"


def test_a_value_yaml_takes_for_a_number_it_cannot_read_is_its_text(run, vault_dir):
    """"0x_" matches YAML 1.1's hex pattern and PyYAML's int() refuses it: the whole note was
    unreadable. Obsidian (YAML 1.2) reads it as text, and so does vaultmem now; a grade rewrites
    only its own lines."""
    note = vault_dir / "memories" / "work" / "hex.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(HEX_NOTE)
    found = run.json("recall", "widget hex")
    assert [hit["id"] for hit in found] == ["hex00001"]
    shown = run.json("show", "hex00001")
    assert (shown["source"], shown["tags"]) == ("0b_", ["0x_", "db"])
    assert "problems: none" in run("health").stdout
    run("grade", "hex00001", "good")
    text = note.read_text()
    assert "\nsource: 0b_\n" in text and "\ntags: [0x_, db]\n" in text, text


def test_a_note_an_older_reader_refused_is_read_again_without_being_edited(run, vault_dir):
    """A catalog keeps a note's problem while its bytes stay the same: one made by a vaultmem that
    refused a value reads that note again once a newer one reads such values (its READER_VERSION)."""
    import sqlite3

    note = vault_dir / "memories" / "work" / "hex.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(HEX_NOTE)
    run("recall", "widget")  # catalogued, readable
    db = sqlite3.connect(vault_dir / ".vaultmem" / "cache" / "catalog.sqlite")
    with db:  # as the older reader left it: unreadable, under its version
        db.execute("UPDATE notes SET note = NULL, problem = 'broken YAML frontmatter (invalid literal for int())'")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'reader'")
    db.close()
    result = run_process("--vault", str(vault_dir), "recall", "widget hex", "--json")
    assert [hit["id"] for hit in json.loads(result.stdout)] == ["hex00001"] and "skipped" not in result.stderr


def test_properties_left_without_their_closing_line_are_named_by_health(run, vault_dir):
    """Delete a note's closing --- by mistake and Obsidian (and vaultmem) read its properties as
    text: the note is still readable, but health says what happened instead of staying silent."""
    note = run.json("add", "The build cache lives on ci-cache-02", "-n", "x")
    path = vault_dir / note["path"]
    head, _fence, body = path.read_text().partition("\n---\n")
    path.write_text(head + "\n" + body)
    problems = {p["path"]: p["problem"] for p in run.json("health")["problems"]}
    assert "no --- line closes them" in problems[note["path"]]
    path.write_text(head + "\n---\n" + body)
    assert not run.json("health")["problems"]


def test_a_note_whose_properties_are_not_closed_is_never_rewritten(run, vault_dir):
    """A hand note opening with --- and a property, never closed: a grade put a new properties
    block above it, leaving the person's tag in the text. It is named and left as it is."""
    folder = vault_dir / "memories" / "dev"
    folder.mkdir(parents=True)
    path = folder / "onedash.md"
    text = "---\ntags: [oops]\nThe only marker is at the top and never closed, about pelicans\n"
    path.write_text(text)
    refused = run("grade", "onedash", "good", expect=2).output
    assert "no --- line closes them" in refused and "add the closing ---" in refused
    assert path.read_text() == text
    problems = {p["path"]: p["problem"] for p in run.json("health")["problems"]}
    assert "no --- line closes them" in problems["memories/dev/onedash.md"]
    run.json("decay", "--days", "0")
    assert path.read_text() == text
