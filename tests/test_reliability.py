"""Reliability: a person's saves and moves during vaultmem's writes, copies, symlinks,
contradicting adds in parallel. The long runs are bench/reliability.py; these are the
same races with fewer rounds, so a regression fails the suite."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import pytest

from vaultmem.core.model import Note
from vaultmem.errors import BadInput, ConflictError, NoteError
from vaultmem.store import files
from vaultmem.vault import Vault

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
reliability = importlib.import_module("reliability")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_editor_saves_racing_grades_are_never_lost(tmp_path, seed):
    row = reliability.race(tmp_path / "vault", "save", grades=120, via="api", seed=seed)
    assert row["events"] >= 200, row  # the editor really saved throughout
    assert row["lost"] == 0 and row["dupes"] == 0 and row["failed"] == 0, (row["first failure"], row)


@pytest.mark.slow
def test_moves_racing_grades_never_duplicate_and_lose_no_grade(tmp_path):
    row = reliability.race(tmp_path / "vault", "move", grades=80, via="api", seed=3, pause=0.05)
    assert row["events"] >= 20, row
    assert row["dupes"] == 0 and row["failed"] == 0, (row["first failure"], row)
    assert row["reps"] == row["writes ok"] > 0, row  # every grade that said ok is in the file


@pytest.mark.slow
def test_folder_renames_racing_grades_count_every_grade_once(tmp_path):
    row = reliability.race(tmp_path / "vault", "folder", grades=80, via="api", seed=4, pause=0.05)
    assert row["events"] >= 20, row
    assert row["dupes"] == 0 and row["failed"] == 0, (row["first failure"], row)
    assert row["reps"] == row["writes ok"] > 0, row  # none lost, none made twice


@pytest.mark.slow
def test_moves_racing_archives_and_restores_never_fail_or_duplicate(tmp_path):
    """vaultmem's own moves (archive, restore) against a person's: each finds the note again
    where the person put it. Before, 1 in 20 failed: a raw FileNotFoundError, or "no note with id"."""
    row = reliability.race(tmp_path / "vault", "move", grades=80, via="api", seed=5, pause=0.05, op="archive")
    assert row["events"] >= 20, row
    assert row["dupes"] == 0 and row["failed"] == 0 and row["writes ok"] > 0, (row["first failure"], row)


@pytest.mark.slow
def test_notes_saved_by_hand_during_an_unchecked_bulk_add_are_listed_right_after(tmp_path):
    """Before, about half of them stayed hidden from recall until the full check (up to 10 s
    later): the adds after each save took its folder's new mtime as if they had listed it."""
    row = reliability.saves_during_bulk_add(tmp_path / "vault", 400, checked=False, seed=6)
    assert row["events"] >= 10 and row["writes ok"] == 400, row
    assert row["hidden"] == 0, (row["first failure"], row)


@pytest.mark.parametrize("when", ["before vaultmem's move", "right after it"])
def test_archive_and_restore_follow_a_note_a_person_moves_meanwhile(vault, monkeypatch, when):
    """The person sorts the note into another folder just before vaultmem moves it, or just
    after: vaultmem finds it where they put it and archives (restores) it from there."""
    import vaultmem.vault as vault_module

    note = vault.add("The staging database listens on port 5433", "work", merge=False, supersede=False).note
    real_move = vault_module.move
    sorted_into = []  # where the person put it, once per command
    armed = [True]  # the person moves it once, during the next command's own move

    def person_sorts_it(source, target):
        if not armed:
            return real_move(source, target)
        armed.clear()
        moving = source if when == "before vaultmem's move" else target
        if moving is target:
            real_move(source, target)
        elsewhere = vault.root / "memories" / f"sorted-{len(sorted_into)}" / source.name
        elsewhere.parent.mkdir()
        os.rename(moving, elsewhere)
        sorted_into.append(elsewhere.relative_to(vault.root).as_posix())
        if moving is source:
            real_move(source, target)  # the file is gone: FileNotFoundError, as in a real race

    monkeypatch.setattr(vault_module, "move", person_sorts_it)
    archived = Vault(vault.root).archive(note.id)
    assert (archived.path, archived.status) == (f"archive/{sorted_into[0]}", "archived")
    armed.append(True)
    restored = Vault(vault.root).restore(note.id)
    assert restored.status == "active"
    holders = [p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*.md") if note.id in p.read_text()]
    assert holders == [restored.path] == [sorted_into[1]]


def test_a_folder_renamed_as_a_grade_lands_gets_the_grade_once(vault, monkeypatch):
    """A person renames the note's folder (its namespace) just after vaultmem's exchange put
    the new text in: the grade is done, and counted once (the steps after the exchange
    used to fail on the old folder name, and the grade was made again on top)."""
    note = vault.add("The staging database listens on port 5433", "work", merge=False, supersede=False).note
    real_exchange = files.exchange
    renamed = []

    def person_renames_the_folder(first, second, folder=None):
        done = real_exchange(first, second, folder)
        if not renamed:
            os.rename(vault.root / "memories" / "work", vault.root / "memories" / "job")
            renamed.append(True)
        return done

    monkeypatch.setattr(files, "exchange", person_renames_the_folder)
    graded = Vault(vault.root).grade(note.id, "good")
    assert renamed and graded.reps == 1
    again = Vault(vault.root).get(note.id)
    assert (again.path, again.reps) == (f"memories/job/{Path(note.path).name}", 1)
    assert [p.name for p in (vault.root / "memories" / "job").iterdir()] == [Path(note.path).name]  # no temp left


def test_an_add_whose_folder_a_person_renames_as_it_lands_is_made_again_and_leaves_no_temp(vault, monkeypatch):
    first = vault.add("The staging database listens on port 5433", "work", merge=False, supersede=False).note
    real_move = files.move_no_replace
    renamed = []

    def person_renames_the_folder(source, target):
        if not renamed:
            os.rename(vault.root / "memories" / "work", vault.root / "memories" / "job")
            renamed.append(True)
        return real_move(source, target)

    monkeypatch.setattr(files, "move_no_replace", person_renames_the_folder)
    added = Vault(vault.root).add("The build server is called hopper", "work", merge=False, supersede=False)
    assert renamed and added.note.path.startswith("memories/work/")
    assert "hopper" in (vault.root / added.note.path).read_text()
    assert sorted(p.relative_to(vault.root).as_posix() for p in (vault.root / "memories").rglob("*.md")) == sorted(
        [added.note.path, first.path.replace("memories/work/", "memories/job/")])
    assert not [p for p in vault.root.rglob(".*") if p.suffix == files.TEMP_SUFFIX]  # no temp left behind


def test_a_note_that_moves_each_time_it_is_looked_up_is_a_try_again_not_a_missing_note(vault, monkeypatch):
    """Listed by the catalog each time and gone from there each time: exit 3 ("try again"),
    which a hook retries, not exit 1 ("no note with id"), which says it does not exist."""
    from vaultmem.errors import EXIT_CONFLICT
    from vaultmem.store.catalog import Catalog

    note = vault.add("The staging database listens on port 5433", "work", merge=False, supersede=False).note
    real_refresh_paths = Catalog.refresh_paths
    moves = []

    def person_moves_it_on(self, paths):
        changed = real_refresh_paths(self, paths)
        for rel in paths:
            if (vault.root / rel).is_file():
                target = vault.root / "memories" / f"sorted-{len(moves)}" / Path(rel).name
                target.parent.mkdir()
                os.rename(vault.root / rel, target)
                moves.append(target)
        return changed

    monkeypatch.setattr(Catalog, "refresh_paths", person_moves_it_on)
    with pytest.raises(ConflictError, match="kept moving") as caught:
        Vault(vault.root).grade(note.id, "good")
    assert caught.value.exit_code == EXIT_CONFLICT and len(moves) >= 2
    monkeypatch.setattr(Catalog, "refresh_paths", real_refresh_paths)
    assert Vault(vault.root).grade(note.id, "good").path == moves[-1].relative_to(vault.root).as_posix()


def test_a_save_landing_inside_the_write_goes_back_and_gets_the_change(tmp_path, monkeypatch):
    """The person saves between vaultmem's check and its exchange: their save is swapped
    out, put straight back, and the change re-applied on top of it."""
    path = tmp_path / "note.md"
    path.write_text("---\nreps: 0\n---\nbody\n")
    real_exchange = files.exchange
    calls = []

    def person_saves_first(tmp, target, folder=None):
        if not calls:
            os.replace(_save(target, "---\nreps: 0\n---\nbody\nperson's line\n"), target)
        calls.append(target)
        return real_exchange(tmp, target, folder)

    monkeypatch.setattr(files, "exchange", person_saves_first)
    base, new = files.rewrite(path, lambda text: text.replace("reps: 0", "reps: 1"), bytes.decode)
    assert path.read_text() == "---\nreps: 1\n---\nbody\nperson's line\n" == new
    assert "person's line" in base
    assert not list(tmp_path.glob(".*"))  # no temp file left


ORIGINAL = "---\nreps: 0\n---\nbody\n"
FIRST_SAVE = ORIGINAL + "first save\n"


def _race_in_the_exchange(monkeypatch, second_save):
    """The person saves between vaultmem's check and its exchange (so that save is swapped
    out and our text is in place for an instant); `second_save(target, real_exchange)` runs
    in place of the exchange that puts it back, as the person's next move in that instant."""
    real_exchange = files.exchange
    calls = []

    def person(tmp, target, folder=None):
        calls.append(target)
        if len(calls) == 1:
            os.replace(_save(target, FIRST_SAVE), target)
        elif len(calls) == 2:
            return second_save(target, lambda: real_exchange(tmp, target, folder))
        return real_exchange(tmp, target, folder)

    monkeypatch.setattr(files, "exchange", person)


def _grade(text: str) -> str:
    return text.replace("reps: 0", "reps: 1")


@pytest.mark.parametrize("when", ["before the swap back", "after the swap back"])
def test_a_save_built_on_our_text_in_the_exchange_window_keeps_the_save_it_displaced(tmp_path, monkeypatch, when):
    """The editor rereads the file while our text is in place and saves on top of it: that
    save lacks the first one. Both saves end up in the note, with the change."""
    path = tmp_path / "note.md"
    path.write_text(ORIGINAL)

    def reread_and_save(target, swap_back):
        seen = target.read_text()  # vaultmem's text, in place for this instant
        assert "reps: 1" in seen and "first save" not in seen
        if when == "before the swap back":
            os.replace(_save(target, seen + "second save\n"), target)
            return swap_back()
        done = swap_back()
        os.replace(_save(target, seen + "second save\n"), target)
        return done

    _race_in_the_exchange(monkeypatch, reread_and_save)
    files.rewrite(path, _grade, bytes.decode)
    assert path.read_text() == "---\nreps: 1\n---\nbody\nfirst save\nsecond save\n"
    assert not list(tmp_path.glob(".*"))


def test_a_save_built_on_our_first_text_displaced_in_a_later_round_keeps_both_saves(tmp_path, monkeypatch):
    """The editor reads our text in the first window and saves only in the next round's
    window: that save lacks the first one, and comes out in turn. Both end up in the note."""
    path = tmp_path / "note.md"
    path.write_text(ORIGINAL)
    real_exchange = files.exchange
    calls, read = [], []

    def person(tmp, target, folder=None):
        calls.append(target)
        if len(calls) == 1:
            os.replace(_save(target, FIRST_SAVE), target)
        elif len(calls) == 2:
            read.append(target.read_text())  # our first text, in place for this instant
        elif len(calls) == 3:
            os.replace(_save(target, read[0] + "second save\n"), target)
        return real_exchange(tmp, target, folder)

    monkeypatch.setattr(files, "exchange", person)
    files.rewrite(path, _grade, bytes.decode)
    assert len(calls) >= 5  # two rounds displaced a save, the third went in
    assert path.read_text() == "---\nreps: 1\n---\nbody\nfirst save\nsecond save\n"


def test_a_save_built_on_the_first_save_in_the_exchange_window_is_kept_as_typed(tmp_path, monkeypatch):
    """An editor whose buffer holds the first save and who typed on: nothing doubled."""
    path = tmp_path / "note.md"
    path.write_text(ORIGINAL)

    def typed_on(target, swap_back):
        os.replace(_save(target, FIRST_SAVE + "typed on\n"), target)
        return swap_back()

    _race_in_the_exchange(monkeypatch, typed_on)
    files.rewrite(path, _grade, bytes.decode)
    assert path.read_text() == "---\nreps: 1\n---\nbody\nfirst save\ntyped on\n"


def test_a_displaced_save_that_cannot_be_merged_is_kept_beside_the_note_and_named(tmp_path, monkeypatch):
    path = tmp_path / "note.md"
    path.write_text(ORIGINAL)

    def refuse_the_merge(text):
        if "first save" in text:
            raise NoteError("note.md", "cannot take the change")
        return _grade(text)

    def reread_and_save(target, swap_back):
        os.replace(_save(target, target.read_text() + "second save\n"), target)
        return swap_back()

    _race_in_the_exchange(monkeypatch, reread_and_save)
    with pytest.raises(ConflictError) as raised:
        files.rewrite(path, refuse_the_merge, bytes.decode)
    kept = [p for p in tmp_path.glob(".note.md.saved-*")]
    assert len(kept) == 1 and kept[0].name in str(raised.value)
    assert kept[0].read_text() == FIRST_SAVE
    assert "second save" in path.read_text()  # the newest save stays in place, untouched


def test_health_names_a_save_kept_aside_until_it_is_deleted(vault, run):
    note = vault.add("Original text", "x").note
    path = vault.root / note.path
    aside = path.with_name(f".{path.name}{files.KEPT_ASIDE}20261201T120000-42")
    aside.write_text(path.read_text() + "the person's line\n")
    problems = run.json("health")["problems"]
    assert [p["path"] for p in problems] == [note.path] and aside.name in problems[0]["problem"]
    aside.unlink()
    assert run.json("health")["problems"] == []


def test_a_save_that_cannot_take_the_change_stays_and_the_error_names_it(tmp_path, vault_dir):
    vault = Vault(vault_dir)
    note = vault.add("Original text", "x").note
    path = vault_dir / note.path
    real_read = files._read_with_identity
    calls = []

    def person_breaks_the_yaml(p):
        result = real_read(p)
        if not calls:
            calls.append(p)
            os.replace(_save(p, "---\nid: [unclosed\n---\nhalf-typed\n"), p)
        return result

    files._read_with_identity = person_breaks_the_yaml
    try:
        with pytest.raises(NoteError) as raised:
            vault.grade(note.id, "good")
    finally:
        files._read_with_identity = real_read
    assert note.path in str(raised.value)
    assert path.read_text() == "---\nid: [unclosed\n---\nhalf-typed\n"  # the person's text, untouched


def test_without_exchange_the_check_still_catches_a_save(tmp_path, monkeypatch):
    """Where renameat2/renamex_np are missing, compare-then-replace still re-applies."""
    monkeypatch.setattr(files, "exchange", lambda a, b, folder=None: False)
    path = tmp_path / "note.md"
    path.write_text("---\nreps: 0\n---\nbody\n")
    seen = []

    def compute(text):
        if not seen:
            os.replace(_save(path, text + "added by a person\n"), path)
        seen.append(text)
        return text.replace("reps: 0", "reps: 1")

    files.rewrite(path, compute, bytes.decode)
    assert path.read_text() == "---\nreps: 1\n---\nbody\nadded by a person\n"


def test_a_copied_note_does_not_stop_decay_of_the_rest(vault_dir, run):
    vault = Vault(vault_dir)
    first = vault.add("The build server is ci-01", "x").note
    other = vault.add("Deploys happen on Tuesdays", "x").note
    copy = vault_dir / "memories" / "x" / "copy-of-first.md"
    copy.write_text((vault_dir / first.path).read_text())
    before = (vault_dir / other.path).read_text()
    result = run("decay", now="2026-09-01T09:00:00")
    assert result.exit_code == 0
    assert not (vault_dir / other.path).exists() or (vault_dir / other.path).read_text() != before
    health = run.json("health", now="2026-09-01T09:00:00")
    assert any(first.id in p["problem"] for p in health["problems"])


def test_a_namespace_folder_linking_outside_the_vault_is_refused(vault_dir, tmp_path, run):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (vault_dir / "memories").mkdir(exist_ok=True)
    (vault_dir / "memories" / "linked").symlink_to(outside, target_is_directory=True)
    result = run("add", "This would land outside", "-n", "linked", expect=2)
    assert "outside the vault" in result.output and "memories/linked" in result.output
    assert list(outside.iterdir()) == []
    with pytest.raises(BadInput):
        Vault(vault_dir).add("Nor through the API", "linked/deeper")


def test_a_note_created_under_the_same_name_meanwhile_is_not_replaced(vault_dir, monkeypatch):
    """The name is free when chosen, then someone creates it: the new note takes another."""
    vault = Vault(vault_dir)
    vault.add("warm up the catalog", "x")
    target = vault_dir / "memories" / "x" / "deploy-checklist.md"
    real_create = files.create_new
    import vaultmem.vault as vault_module

    def someone_creates_it_first(path, text):
        if path == target and not target.exists():
            target.write_text("a person's own note\n")
        return real_create(path, text)

    monkeypatch.setattr(vault_module, "create_new", someone_creates_it_first)
    added = vault.add("Deploy checklist", "x").note
    assert target.read_text() == "a person's own note\n"
    assert added.path == "memories/x/deploy-checklist-2.md"


def test_archiving_never_replaces_a_file_already_in_archive(vault_dir):
    vault = Vault(vault_dir)
    note = vault.add("Old fact", "x").note
    squatter = vault_dir / "archive" / note.path
    squatter.parent.mkdir(parents=True)
    squatter.write_text("someone else's file\n")
    with pytest.raises(ConflictError):
        vault.archive(note.id)
    assert squatter.read_text() == "someone else's file\n"
    assert (vault_dir / note.path).exists()


@pytest.mark.slow
@pytest.mark.real_model
def test_contradicting_adds_in_parallel_end_like_one_after_another(tmp_path):
    parallel = reliability.contradicting_adds(tmp_path / "parallel", processes=4, per_process=6)
    assert parallel["failed"] == 0 and parallel["lost"] == 0, parallel
    assert parallel["dupes"] == 0 and parallel["unlinked"] == 0, parallel  # none superseded twice, all linked
    serial = reliability.contradicting_adds(tmp_path / "serial", processes=1, per_process=24)
    assert parallel["active"] == serial["active"] == 1, (parallel, serial)


def _save(path: Path, text: str) -> Path:
    """A temp file beside `path` with `text`, as an editor writes before its rename."""
    temp = path.with_name(f".{path.name}.editor")
    temp.write_text(text)
    return temp


# ---------------------------------------------------------------- the ledger's own damage

def _ledger(vault_dir: Path) -> Path:
    return vault_dir / ".vaultmem" / "ledger.jsonl"


def test_a_torn_ledger_append_is_isolated_not_glued(vault_dir, run):
    vault = Vault(vault_dir)
    note = vault.add("Before the crash", "x").note
    ledger = _ledger(vault_dir)
    lines = ledger.read_text().splitlines()
    with open(ledger, "a") as handle:  # a crash mid-append leaves half a line
        handle.write(lines[-1][: len(lines[-1]) // 2])
    vault = Vault(vault_dir)
    vault.grade(note.id, "good")
    after = ledger.read_text().splitlines()
    assert after[-2] == lines[-1][: len(lines[-1]) // 2]  # the fragment on its own line
    result = run.json("verify")
    assert result["breaks"] == [] and len(result["torn"]) == 1
    assert result["torn"][0]["where"] == f"ledger.jsonl line {len(lines) + 1}"
    run("verify")  # exit 0: nothing is broken
    run("verify", "--strict", expect=4)  # but CI is told
    Vault(vault_dir).grade(note.id, "good")  # and the chain goes on
    assert json.loads(run("verify", "--strict", "--json", expect=4).stdout)["breaks"] == []


def _graded_vault(vault_dir: Path) -> tuple[Vault, Note]:
    vault = Vault(vault_dir)
    note = vault.add("The cache server is redis-02", "x").note
    vault.add("Backups run nightly at 02:00", "x")
    os.environ["VAULTMEM_NOW"] = "2026-01-06T10:00:00"  # a day later (isolated_env restores it)
    vault.grade(note.id, "good")
    return vault, note


@pytest.mark.parametrize("damage", ["delete", "empty"])
def test_a_deleted_or_emptied_ledger_is_tampering_and_verify_does_not_rebase(vault_dir, run, damage):
    _graded_vault(vault_dir)
    ledger = _ledger(vault_dir)
    if damage == "delete":
        ledger.unlink()
    else:
        ledger.write_text("")
    health = run.json("health")
    assert health["ledger"]["tampering"] and "ledger.jsonl" in health["first"]
    result = run("verify", expect=4)
    assert "tampering" in result.output and "nothing was recorded" in result.output
    assert not ledger.exists() or ledger.read_text() == ""  # nothing silently re-based
    run("verify", "--re-anchor")
    records = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert records[0]["op"] == "re-anchor" and "reason" in records[0]["detail"]
    assert not run.json("health")["ledger"]["tampering"]


def test_a_cut_ledger_tail_is_tampering_not_unrecorded_edits(vault_dir, run):
    vault, note = _graded_vault(vault_dir)
    run.json("verify")  # vaultmem has seen the whole ledger
    vault.grade(note.id, "hard")
    ledger = _ledger(vault_dir)
    lines = ledger.read_text().splitlines(keepends=True)
    ledger.write_text("".join(lines[:-2]))  # the last two records cut off
    result = run("verify", expect=4)
    assert "tampering" in result.output and "recorded" not in result.output.split("tampering")[0]
    assert ledger.read_text() == "".join(lines[:-2])


def test_a_cut_tail_is_caught_even_without_the_cache(vault_dir, run):
    """The derived state may be deleted too; the review log still says grades happened."""
    import shutil

    vault, note = _graded_vault(vault_dir)
    ledger = _ledger(vault_dir)
    lines = ledger.read_text().splitlines(keepends=True)
    ledger.write_text("".join(lines[:-1]))  # the grade's record gone
    shutil.rmtree(vault_dir / ".vaultmem" / "cache")
    assert run.json("health")["ledger"]["tampering"]


def test_a_grade_from_a_clock_ahead_is_not_a_cut_tail(vault_dir, run):
    """A grade timed later than records written after it (another machine's clock, VAULTMEM_NOW,
    the demo's simulated days) is on record: verify finds it there and stays quiet. Cutting
    the ledger before it, even with many records after the grade, is still caught."""
    vault, note = _graded_vault(vault_dir)  # graded "a day later"
    os.environ["VAULTMEM_NOW"] = "2026-01-06T09:00:00"  # the next records an hour before the grade
    vault.add_many([{"text": f"Service s{i} listens on port {8000 + i}", "namespace": "x"} for i in range(400)])
    result = run.json("verify")
    assert result["tampering"] == [] and result["changes"] == []
    assert not run.json("health")["ledger"]["tampering"]

    ledger = _ledger(vault_dir)
    lines = ledger.read_text().splitlines(keepends=True)
    graded_at = next(i for i, line in enumerate(lines) if json.loads(line)["op"] == "grade")
    ledger.write_text("".join(lines[:graded_at]))  # the grade and the 400 adds after it cut off
    result = run("verify", expect=4)
    assert "tampering" in result.output and note.id in result.output


def test_an_older_checkout_of_the_ledger_is_not_tampering(vault_dir, run):
    """Shorter ledger, but every note matches its last record: a checkout, not a cut."""
    vault, note = _graded_vault(vault_dir)
    ledger = _ledger(vault_dir)
    path = vault_dir / note.path
    old_ledger, old_note = ledger.read_text(), path.read_text()
    reviews = vault_dir / ".vaultmem" / "reviews.jsonl"
    old_reviews = reviews.read_text()
    run.json("verify")
    vault.grade(note.id, "good")
    ledger.write_text(old_ledger)  # `git checkout HEAD~1 -- .` in effect
    path.write_text(old_note)
    reviews.write_text(old_reviews)
    result = run.json("verify")
    assert result["tampering"] == [] and result["breaks"] == []
