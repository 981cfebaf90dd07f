"""What a caller can pass wrong, through the API and the CLI: each is refused with a one-line
BadInput (exit 2) naming it and nothing is written, or taken as the documented kind of value;
never an internal error, and never a note that breaks the vault for the next command."""

from __future__ import annotations

import subprocess
import sys
from datetime import date, datetime

import pytest

from vaultmem.errors import BadInput, NotFound
from vaultmem.vault import Vault

from .conftest import run_process
from .test_secrets import written


def test_created_as_a_naive_datetime_a_date_or_text_is_utc_and_the_cli_goes_on_working(vault_dir):
    """A naive datetime from the API was stored in the catalog as it came, and every later
    command that compared dates (list, health, review, decay) ended in an internal error."""
    vault = Vault(vault_dir)
    given = {"naive": datetime(2025, 3, 1, 9), "date": date(2025, 3, 2), "text": "2025-03-03T10:30:00"}
    for name, created in given.items():
        note = vault.add(f"Backfilled fact {name} about the Lisbon offsite", "work", created=created,
                         merge=False, supersede=False).note
        assert note.created.tzinfo is not None
    for command in (["list"], ["health"], ["review"], ["decay", "--dry-run"]):
        assert run_process("--vault", str(vault_dir), *command, check=False).returncode == 0, command
    created = sorted(n.created.isoformat() for n in Vault(vault_dir).notes())
    assert created == ["2025-03-01T09:00:00+00:00", "2025-03-02T00:00:00+00:00", "2025-03-03T10:30:00+00:00"]


@pytest.mark.parametrize("arguments, named", [
    ({"text": 5, "namespace": "w"}, "the memory's text must be text"),
    ({"text": "caf\udce9 opens", "namespace": "w"}, "not valid UTF-8"),
    ({"text": "\u200b\u200b", "namespace": "w"}, "text is empty"),
    ({"text": "!!! ...", "namespace": "w"}, "no letter or digit"),
    ({"text": "A fact", "namespace": "w", "kind": "fact"}, "neither memory nor skill"),
    ({"text": "A fact", "namespace": "w", "created": "the other day"}, "created"),
    ({"text": "A fact", "namespace": ".secret"}, "no part may start with '.'"),
    ({"text": "A fact", "namespace": "team/.x"}, "no part may start with '.'"),
    ({"text": "A fact", "namespace": "n" * 300}, "at most 100 bytes"),
    ({"text": "A fact", "namespace": 7}, "the namespace must be text"),
    ({"text": "A fact", "namespace": "w", "tags": 5}, "tags must be a list of text, not int"),
])
def test_an_argument_add_cannot_take_is_refused_naming_it_and_nothing_is_written(vault_dir, arguments, named):
    vault = Vault(vault_dir)
    vault.add("A note already there", "w")
    before = written(vault_dir)
    with pytest.raises(BadInput, match=named):
        vault.add(**arguments)
    assert written(vault_dir) == before


def test_one_string_of_tags_is_one_tag(vault_dir):
    assert Vault(vault_dir).add("The DB backups run nightly", "ops", tags="db").note.tags == ("db",)


def test_text_in_another_encoding_is_bad_input_on_the_command_line(vault_dir):
    def vaultmem(*args, stdin: bytes | None = None):
        return subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(vault_dir), *args],
                              input=stdin, capture_output=True, timeout=120)

    latin1 = "caf\xe9".encode("latin-1")
    for result in (vaultmem("add", latin1 + b" opens at 8", "-n", "w"), vaultmem("recall", latin1),
                   vaultmem("add", "-", "-n", "w", stdin=latin1 + b" opens at 8\n")):
        assert result.returncode == 2 and b"UTF-8" in result.stderr and b"internal error" not in result.stderr


def test_a_year_before_1000_is_written_so_that_it_reads_back(run, vault_dir):
    note = run.json("add", "The abbey was founded", "-n", "history", "--created", "0801-01-01")
    assert "created: 0801-01-01T00:00:00" in (vault_dir / note["path"]).read_text()
    run("reindex")
    assert run.json("show", note["id"])["created"] == "0801-01-01T00:00:00"
    run("verify", "--strict")


def test_a_vault_moved_away_under_an_open_vault_is_not_made_again_at_its_old_path(vault_dir, tmp_path):
    """A long-lived process (the watcher, the MCP server, an API user) keeps its Vault while a
    person moves the folder: a write then says the vault is gone, and no empty vault with the
    new note appears where it was."""
    vault = Vault(vault_dir)
    note = vault.add("The QA sign-off is on Wednesdays", "work").note
    moved = tmp_path / "moved-vault"
    vault_dir.rename(moved)
    with pytest.raises(NotFound, match="moved, renamed or deleted"):
        vault.add("The release is on Thursdays", "work")
    with pytest.raises((NotFound, BadInput)):
        vault.grade(note.id, "good")
    # Reads say so too: they said "no note with id ..." or answered with an empty vault.
    for read in (lambda: vault.get(note.id), lambda: vault.notes(), lambda: vault.review(), lambda: vault.prompt()):
        with pytest.raises(NotFound, match="moved, renamed or deleted"):
            read()
    assert not vault_dir.exists()
    assert Vault(moved).get(note.id).reps == 0


def test_recall_and_decay_refuse_counts_they_cannot_use(vault_dir):
    vault = Vault(vault_dir)
    vault.add("The wiki lives at wiki.internal", "w")
    for k in (0, -1, 2.5, True):
        with pytest.raises(BadInput, match="whole number"):
            vault.recall("where is the wiki", k=k)
    assert vault.recall("where is the wiki", k=1)
    for query in ("", "   "):  # nothing to look for is bad input, not "no matching memories"
        with pytest.raises(BadInput, match="the query is empty"):
            vault.recall(query)
    result = run_process("--vault", str(vault_dir), "recall", " ", check=False)
    assert result.returncode == 2 and "the query is empty" in result.stderr
    for days in (-5, float("nan"), "soon"):
        with pytest.raises(BadInput, match="number of days"):
            vault.decay(days)


def test_conflicts_of_no_text_is_refused_as_add_refuses_it_and_list_takes_a_lowercase_tier(run):
    run.json("add", "The wiki lives at wiki.internal", "-n", "w")
    assert "text is empty" in run("conflicts", "  ", "-n", "w", expect=2).stderr
    assert [n["tier"] for n in run.json("list", "--tier", "l1")] == ["L1"]


@pytest.mark.parametrize("arguments, said", [
    (["recall", "x", "-k", "0"], "vaultmem: recall: Invalid value for '-k'"),
    (["list", "--status", "bogus"], "vaultmem: list: Invalid value for '--status'"),
    (["add"], "vaultmem: add: Missing argument 'TEXT'"),
    (["bogus"], "vaultmem: No such command 'bogus'"),
])
def test_a_usage_error_is_one_line_naming_the_command_and_its_help(vault_dir, arguments, said):
    """click printed the usage, a hint and the error on three lines; errors are one line."""
    result = run_process("--vault", str(vault_dir), *arguments, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(said)
    assert "--help` shows the syntax" in result.stderr


@pytest.mark.parametrize("call, named", [
    (lambda v: v.review(limit=-1), "limit -1 should be a whole number, 1 or more"),
    (lambda v: v.review(limit="5"), "limit '5' should be a whole number"),
    (lambda v: v.prompt(max_tokens=-5), "max_tokens -5 should be a whole number, 50 or more"),
    (lambda v: v.recall("the wiki", kind="skillz"), "kind 'skillz' is neither memory nor skill"),
    (lambda v: v.recall("the wiki", min_score=-3), "min_score -3 should be a number from 0 to 1"),
    (lambda v: v.recall("the wiki", min_score="a"), "min_score 'a' should be a number from 0 to 1"),
    (lambda v: v.grade_batch(["abc"]), "grade_batch takes \\(id, rating\\) pairs"),
])
def test_the_api_refuses_what_the_cli_refuses(vault_dir, call, named):
    """Each was accepted (an empty answer: review(limit=-1) dropped the last note due) or a
    TypeError/ValueError: a one-line BadInput naming the argument, as the CLI's options give."""
    vault = Vault(vault_dir)
    vault.add("The wiki lives at wiki.internal", "w")
    with pytest.raises(BadInput, match=named):
        call(vault)


def test_the_api_names_the_notes_it_cannot_read(vault_dir):
    """The CLI warns of a note recall skipped and MCP lists it; an API caller got [] and nothing."""
    vault = Vault(vault_dir)
    note = vault.add("The wiki lives at wiki.internal", "w").note
    path = vault_dir / note.path
    path.write_text(path.read_text().replace("tags:", "tags: [unclosed", 1))
    assert vault.recall("where is the wiki") == []
    assert [p for p, _problem in vault.problems()] == [note.path]
