"""Decay rewrites every note of a vault in batches. Each batch's old files, swapped out by
the exchanges, take the next batch's new texts instead of being deleted while new files are
made (files.SpareFiles). What a person or another program could still see of an old file
must never change, and no note may end up with another's text."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from vaultmem import vault as vault_module
from vaultmem.store import files
from vaultmem.vault import Vault

from .conftest import T0

WORDS = ("harbor lantern quartz meadow cobalt falcon orchid glacier saffron tundra ember willow "
         "basalt juniper marble nectar onyx prairie quill russet sierra thistle umber velvet").split()


def _notes(vault_dir: Path, count: int) -> dict[str, Path]:
    """`count` unrelated memories in three namespaces: id -> file."""
    vault = Vault(vault_dir)
    rng = random.Random(count)
    made = {}
    for number in range(count):
        text = f"Fact {number}: the {' '.join(rng.sample(WORDS, 4))} record is number {1000 + number}"
        note = vault.add(text, f"ns{number % 3}", merge=False, supersede=False).note
        made[note.id] = vault_dir / note.path
    return made


def _decay(vault_dir: Path, monkeypatch, days: float) -> list:
    """Decay `days` after the notes were written (every note's strength moves; none is archived)."""
    later = datetime.fromisoformat(T0) + timedelta(days=days)
    monkeypatch.setenv("VAULTMEM_NOW", later.isoformat(timespec="seconds"))
    return Vault(vault_dir).decay()


def _temp_files(vault_dir: Path) -> list[Path]:
    return [p for p in vault_dir.rglob("*") if p.name.endswith(files.TEMP_SUFFIX)]


def _holds_only_itself(note_id: str, text: str) -> bool:
    return re.findall(r"^id: (\S+)$", text, re.M) == [note_id] and len(re.findall(r"Fact \d+:", text)) == 1


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(vault_module, "REWRITE_BATCH", 4)


def test_decay_in_batches_gives_every_note_its_own_new_text_and_makes_few_files(
        vault_dir, monkeypatch, small_batches):
    notes = _notes(vault_dir, 25)
    before = {note_id: path.read_text() for note_id, path in notes.items()}
    made = []
    real_mkstemp = files.tempfile.mkstemp

    def counted(*args, **kwargs):  # files made in this vault (not by a thread an earlier test left running)
        if Path(kwargs.get("dir") or "").is_relative_to(vault_dir):
            made.append(1)
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(files.tempfile, "mkstemp", counted)
    steps = _decay(vault_dir, monkeypatch, 20)
    assert len(steps) == 25
    for note_id, path in notes.items():
        after = path.read_text()
        assert after != before[note_id] and _holds_only_itself(note_id, after)
        assert after.split("\n---\n", 1)[1] == before[note_id].split("\n---\n", 1)[1]  # the body is untouched
        assert os.stat(path).st_nlink == 1 and os.stat(path).st_mode & 0o777 == 0o644
    assert _temp_files(vault_dir) == []
    assert len(made) <= 4 + 1  # the first batch's files, then the old ones again (the ledger may make one)


def test_a_program_holding_an_old_note_open_still_reads_the_old_text(vault_dir, monkeypatch, small_batches):
    notes = _notes(vault_dir, 12)
    held = {note_id: open(path, "rb") for note_id, path in notes.items()}  # noqa: SIM115 (closed below)
    try:
        before = {note_id: handle.read() for note_id, handle in held.items()}
        _decay(vault_dir, monkeypatch, 20)
        for note_id, handle in held.items():
            handle.seek(0)
            assert handle.read() == before[note_id]  # as after a delete: the old file, whole
            assert notes[note_id].read_bytes() != before[note_id]
    finally:
        for handle in held.values():
            handle.close()
    assert _temp_files(vault_dir) == []


def test_a_hard_link_to_a_note_keeps_the_old_text(vault_dir, tmp_path, monkeypatch, small_batches):
    notes = _notes(vault_dir, 12)
    backups = tmp_path / "backup"  # a snapshot made with hard links (cp -al, rsnapshot)
    backups.mkdir()
    before = {}
    for note_id, path in notes.items():
        os.link(path, backups / f"{note_id}.md")
        before[note_id] = path.read_bytes()
    _decay(vault_dir, monkeypatch, 20)
    for note_id, path in notes.items():
        assert (backups / f"{note_id}.md").read_bytes() == before[note_id]
        assert path.read_bytes() != before[note_id]


EDITOR = textwrap.dedent("""
    import os, random, sys, time
    paths, stop, seed, progress = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    count = 0
    while not os.path.exists(stop):
        time.sleep(rng.uniform(0, 0.003))
        path = rng.choice(paths)
        try:
            text = open(path, encoding="utf-8").read()
            new = text.rstrip() + f"\\nedit-mark-{count}\\n"
            how = "rename" if rng.random() < 0.5 else "in-place"
            if how == "rename":  # as most editors save
                temp = path + f".editor-{count}"
                open(temp, "w", encoding="utf-8").write(new)
                os.replace(temp, path)
            else:  # as nano, or vim with backupcopy=yes, save
                with open(path, "r+", encoding="utf-8") as handle:
                    handle.write(new)
                    handle.truncate()
            print(count, how, flush=True)
            count += 1
            with open(progress, "w") as handle:  # how many saves so far, for the test to wait on
                handle.write(str(count))
        except FileNotFoundError:
            continue
""")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_saves_racing_batched_decays_are_kept_and_never_land_in_another_note(
        vault_dir, tmp_path, monkeypatch, small_batches, seed):
    """A person saves random notes (by rename and in place) while decays rewrite the vault
    again and again: no note ever holds another's text, and every save made by rename is
    in its note or kept beside it. (A save in place that lands in the old file after the
    exchange can be lost, with or without spare files: it writes into a file that is no
    longer the note.)"""
    notes = _notes(vault_dir, 16)
    stop, progress = tmp_path / "stop", tmp_path / "progress"
    editor = subprocess.Popen([sys.executable, "-c", EDITOR, ",".join(str(p) for p in notes.values()), str(stop),
                               str(seed), str(progress)], stdout=subprocess.PIPE, text=True)
    rng = random.Random(seed)

    def saves_so_far() -> int:
        try:
            return int(progress.read_text() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    try:
        # 39 decays at least, more while the editor has made fewer than 100 saves (a loaded machine
        # gives it less time: it made 97 once); 99 days is far from any note going stale to archive/
        for day in range(1, 100):
            if day >= 40 and saves_so_far() >= 100:
                break
            _decay(vault_dir, monkeypatch, day + rng.random())
            for note_id, path in notes.items():
                assert _holds_only_itself(note_id, path.read_text())
            if rng.random() < 0.3:
                os.sched_yield()
    finally:
        stop.touch()
        editor.wait(timeout=60)
    saves = dict(line.split() for line in editor.stdout.read().splitlines())
    assert len(saves) >= 100
    texts = "".join(path.read_text() for path in notes.values())
    kept_aside = "".join(p.read_text() for p in vault_dir.rglob(f".*{files.KEPT_ASIDE}*"))
    marks = set(re.findall(r"edit-mark-(\d+)", texts + kept_aside))
    assert {count for count, how in saves.items() if how == "rename"} <= marks
    for note_id, path in notes.items():
        assert _holds_only_itself(note_id, path.read_text())
    assert _temp_files(vault_dir) == []


@pytest.mark.skipif(getattr(files, "_F_SETLEASE", None) is None, reason="leases are Linux only")
def test_a_program_opening_an_old_file_while_it_is_checked_does_not_kill_vaultmem(tmp_path, monkeypatch):
    """The check takes a write lease for an instant; a process opening the file then breaks
    it, and the kernel signals the holder (by default with SIGIO, which ends a process)."""
    old = tmp_path / ".old.md.1234.vaultmem-tmp"
    old.write_text("the old text\n")
    seen = os.stat(old)
    real_fcntl = files.fcntl.fcntl
    openers = []

    def with_an_opener_meanwhile(fd, command, arg=0):
        result = real_fcntl(fd, command, arg)
        if command == files._F_SETLEASE and arg == files.fcntl.F_WRLCK:
            openers.append(subprocess.Popen([sys.executable, "-c", f"print(open({str(old)!r}).read())"],
                                            stdout=subprocess.PIPE, text=True))
            time.sleep(0.5)  # the opener waits on the lease, which breaks: the kernel signals us
        return result

    monkeypatch.setattr(files.fcntl, "fcntl", with_an_opener_meanwhile)
    spares = files.SpareFiles()
    spares.keep(old, seen)
    assert openers and openers[0].communicate(timeout=30)[0] == "the old text\n\n"


def test_decay_deletes_the_temp_files_a_crash_left_and_nothing_else(vault_dir, monkeypatch, run):
    notes = _notes(vault_dir, 3)
    folder = next(iter(notes.values())).parent
    crashed = folder / f".{next(iter(notes.values())).name}.dead1234{files.TEMP_SUFFIX}"
    crashed.write_text("a new text never put in place")
    an_hour_ago = time.time() - 2 * files.LEFTOVER_AFTER
    os.utime(crashed, (an_hour_ago, an_hour_ago))
    being_written = folder / f".other.md.live5678{files.TEMP_SUFFIX}"  # another write's, under way
    being_written.write_text("in the making")
    persons = folder / ".my-private-draft.md"
    persons.write_text("a person's hidden file")
    os.utime(persons, (an_hour_ago, an_hour_ago))
    assert run.json("health")["leftover_temps"] == [crashed.relative_to(vault_dir).as_posix()]  # health says so
    text = run("health").stdout
    assert "leftover temp files: 1, left by writes that never finished" in text and crashed.name in text
    _decay(vault_dir, monkeypatch, 20)
    assert not crashed.exists()
    assert run.json("health")["leftover_temps"] == []
    assert being_written.exists() and persons.exists()


def test_an_adds_few_contests_sync_their_own_files_and_decay_syncs_the_filesystem_once(vault_dir, monkeypatch):
    """A filesystem sync waits for everything other programs wrote to the disk (a copy, a build):
    an add's rewrites of the few notes it contests sync those files and their folder instead,
    each new text on disk before it replaces the note. A batch of many (decay) syncs the
    filesystem, twice in all."""
    whole, synced = [], []
    real_fsync = os.fsync
    monkeypatch.setattr(files, "sync_filesystem", lambda folder: whole.append(folder))
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")) or real_fsync(fd))
    vault = Vault(vault_dir)
    older = vault.add("Valve V3 opens at dawn", "farm").note
    synced.clear()
    added = vault.add("Valve V3 opens at dusk", "farm")
    assert added.contested == (older.id,) and whole == []
    assert "contested: true" in (vault_dir / older.path).read_text(encoding="utf-8")
    temp = next(name for name in synced if Path(name).name.startswith(f".{Path(older.path).name}.")
                and name.endswith(files.TEMP_SUFFIX))  # the contested note's new text...
    assert str((vault_dir / older.path).parent) in synced[synced.index(temp):]  # ... then its folder's rename
    made = _notes(vault_dir, files.SYNC_ONE_BY_ONE + 4)
    whole.clear()
    assert len(_decay(vault_dir, monkeypatch, days=30)) >= len(made)
    assert len(whole) == 2
