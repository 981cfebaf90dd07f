"""Writes are safe: concurrent processes lose nothing, a person's edit is never overwritten."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from vaultmem.vault import Vault

from .conftest import run_process


@pytest.mark.slow
def test_concurrent_grades_from_several_processes_lose_nothing(run, vault_dir):
    note = run.json("add", "Graded from many processes at once", "-n", "x")

    def grade(_):
        return run_process("--vault", str(vault_dir), "grade", note["id"], "good", "-q", check=False).returncode

    with ThreadPoolExecutor(max_workers=6) as pool:
        codes = list(pool.map(grade, range(12)))
    assert codes == [0] * 12
    assert run.json("show", note["id"])["reps"] == 12
    log = (vault_dir / ".vaultmem" / "reviews.jsonl").read_text().splitlines()
    assert len(log) == 12 and all(json.loads(line)["id"] == note["id"] for line in log)


@pytest.mark.slow
def test_concurrent_adds_from_several_processes_all_land(run, vault_dir):
    def add(i):
        # Same title in two namespaces: file names must still be unique vault-wide.
        return run_process("--vault", str(vault_dir), "add", "Same first line", "-n", "xy"[i % 2], "--json",
                           "--allow-duplicate", check=False)

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(add, range(10)))
    assert [r.returncode for r in results] == [0] * 10
    notes = run.json("list")
    stems = {n["path"].rsplit("/", 1)[1] for n in notes}
    assert len(notes) == 10 and len({n["id"] for n in notes}) == 10 and len(stems) == 10


def test_a_person_saving_during_a_write_is_not_overwritten(vault_dir, monkeypatch):
    """Simulates an editor writing the file in place between vaultmem's read and its write."""
    from vaultmem.store import files

    vault = Vault(vault_dir)
    note = vault.add("Original text", "x").note
    path = vault_dir / note.path
    real_read = files._read_with_identity
    calls = {"n": 0}

    def read_then_person_saves(p):
        data, info = real_read(p)
        calls["n"] += 1
        if calls["n"] == 1:  # right after vaultmem's first read, the person saves
            path.write_text(data.decode().replace("Original text", "Original text, corrected by a person"))
        return data, info

    monkeypatch.setattr(files, "_read_with_identity", read_then_person_saves)
    graded = vault.grade(note.id, "good")
    final = path.read_text()
    assert "corrected by a person" in final and "reps: 1" in final
    assert graded.reps == 1


def test_atomic_write_leaves_no_temp_files(run, vault_dir):
    note = run.json("add", "Temp files", "-n", "x")
    for _ in range(5):
        run("grade", note["id"], "good")
    leftovers = [p for p in vault_dir.rglob("*") if p.name.endswith(".vaultmem-tmp")]
    assert leftovers == []


def test_threads_sharing_a_fresh_vault_share_one_write_lock(vault_dir):
    """Each thread that asked a fresh Vault for its write lock at the same moment could make its
    own: one then held the lock while another's nested write took a second WriteLock of the
    same process, found the file locked, and waited on itself for 60 s (LockTimeout). Asked by
    eight threads at once, 200 times: one lock, one catalog, one ledger each time."""
    import random
    import threading

    for _round in range(200):
        vault = Vault(vault_dir)
        start = threading.Barrier(8)
        got = []

        def ask():
            start.wait()
            time.sleep(random.random() / 2000)
            got.append((vault.write_lock(), vault.catalog(refresh=False), vault.ledger))

        threads = [threading.Thread(target=ask) for _ in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert len({id(lock) for lock, _c, _l in got}) == 1
        assert len({id(catalog) for _w, catalog, _l in got}) == 1 and len({id(led) for _w, _c, led in got}) == 1


def test_threads_sharing_one_vault_all_add(vault_dir, monkeypatch):
    """Three threads adding through one fresh Vault: every add lands, none waits on its own process."""
    monkeypatch.setenv("VAULTMEM_LOCK_WAIT", "10")
    for round_ in range(5):
        vault = Vault(vault_dir)
        with ThreadPoolExecutor(3) as pool:
            results = list(pool.map(lambda i: vault.add(f"Round {round_} thread {i} fact about widget w{i}", "work",
                                                        merge=False, supersede=False), range(3)))
        assert all(r.action == "added" for r in results)
