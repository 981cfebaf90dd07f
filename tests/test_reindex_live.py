"""`reindex` while other processes have the caches open: they go on answering from the files they
had until the new ones are complete, then start over on those (none keeps reading deleted files
for the rest of its life, which a watcher or an MCP server would)."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pytest

from vaultmem.search.engine import engine_for
from vaultmem.service.client import ask
from vaultmem.vault import Vault

from .conftest import run_process
from .test_watch import wait_until, watcher  # noqa: F401 - the fixture

NOTE = """---
id: {id}
type: memory
namespace: work
---
{text}
"""


def deleted_caches(pid: int | str) -> list[str]:
    """The files under a .vaultmem/ folder that process `pid` holds open although they were deleted."""
    held = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if ".vaultmem" in target and target.endswith("(deleted)"):
            held.append(target)
    return held


def hand_note(vault_dir: Path, n: int) -> tuple[str, str]:
    """A note written by hand (as an editor would), found by its own odd word."""
    word = f"quokka{n}x"
    path = vault_dir / "memories" / "work" / f"hand-{n}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(NOTE.format(id=f"hand{n:04d}", text=f"The {word} runbook lives in the ops wiki."))
    return f"hand{n:04d}", word


def ids(hits) -> list[str]:
    return [hit["id"] for hit in hits]


def served_ids(vault_dir: Path, query: str, top_k: int = 5) -> list[str] | None:
    """The watcher's answer; None when it gave none in time (the client would recall in-process)."""
    answer = ask(str(vault_dir), {"op": "recall", "query": query, "top_k": top_k})
    return ids(answer["hits"]) if answer and answer.get("ok") else None


def test_a_watcher_ends_on_the_caches_of_reindexes_run_beside_it(run, vault_dir, watcher):  # noqa: F811
    teal = {run.json("add", f"Deploy step {i} runs the teal pipeline on Fridays", "-n", "work")["id"] for i in range(6)}
    rng = random.Random(28)
    answers, stop = [], threading.Event()

    def keep_asking():  # a hook's recalls, all the time
        while not stop.is_set():
            answers.append(ask(str(vault_dir), {"op": "recall", "query": "teal pipeline", "top_k": 3}))
            time.sleep(rng.uniform(0, 0.02))

    asker = threading.Thread(target=keep_asking)
    asker.start()
    written = []
    try:
        for n in range(12):  # hand edits at random moments before, during and after each reindex
            editor = threading.Timer(rng.uniform(0, 0.4), lambda n=n: written.append(hand_note(vault_dir, n)))
            editor.start()
            time.sleep(rng.uniform(0, 0.2))
            run("reindex")
            editor.join()
    finally:
        stop.set()
        asker.join()
    # What it answered meanwhile was right, when it answered (one that fails or takes too long
    # is answered by the client in-process: see the README's Freshness).
    assert {hit["id"] for answer in answers if answer and answer.get("ok") for hit in answer["hits"]} <= teal
    assert sum(bool(answer and answer.get("ok") and answer["hits"]) for answer in answers) > len(answers) / 2
    for note_id, word in written:
        wait_until(lambda: (served_ids(vault_dir, word) or [])[:1] == [note_id])
    wait_until(lambda: not deleted_caches(watcher.pid))
    # What it answers now is what a process that never saw the old caches answers.
    for query in ("teal pipeline fridays", "runbook ops wiki", "quokka3x"):
        alone = run_process("--vault", str(vault_dir), "recall", query, "-k", "5", "--json",
                            env={"VAULTMEM_NO_SERVER": "1"})
        assert served_ids(vault_dir, query) == ids(json.loads(alone.stdout))


def test_a_long_lived_engine_starts_over_on_caches_another_process_rebuilt(vault_dir):
    vault = Vault(vault_dir)  # as the MCP server or an API user keeps one
    vault.add("The staging database is Postgres 15", namespace="work")
    staging = vault.recall("staging database")[0].note
    assert staging.text.strip() == "The staging database is Postgres 15"
    run_process("--vault", str(vault_dir), "reindex")
    note_id, word = hand_note(vault_dir, 1)
    assert [hit.note.id for hit in vault.recall(word)][:1] == [note_id]
    assert deleted_caches("self") == []
    assert engine_for(vault).vault.catalog().count() == 2
    assert vault.recall("staging database")[0].note.id == staging.id


def test_a_thread_that_first_reads_a_replaced_catalog_reads_the_catalogs_own_file(vault_dir):
    """The watcher's request threads open their catalog connections when first used: one that does
    so while a reindex rebuilds the file would read the new, half-built one by its path."""
    vault = Vault(vault_dir)
    for i in range(3):
        vault.add(f"Deploy step {i} runs the teal pipeline", namespace="work")
    catalog = vault.catalog()
    assert catalog.count() == 3
    catalog.db_file.unlink()  # as reindex does, then makes a new one
    sqlite3.connect(catalog.db_file).close()
    counted = []
    reader = threading.Thread(target=lambda: counted.append(catalog.count()))
    reader.start()
    reader.join()
    assert catalog.replaced() and counted == [3]


def test_an_open_vault_goes_on_writing_after_another_process_rebuilt_its_catalog(vault_dir):
    """The ledger's tables live in the catalog's file: after a reindex elsewhere made that file anew,
    an open Vault's next writes record through the new one (they crashed: no such table)."""
    vault = Vault(vault_dir)
    first = vault.add("The staging database is Postgres 15", namespace="work")
    run_process("--vault", str(vault_dir), "reindex")
    assert vault.recall("staging database")[0].note.id == first.note.id  # the engine starts over
    second = vault.add("Deploys go out through the teal pipeline", namespace="work")
    vault.grade(first.note.id, "good")
    vault.add_many([{"text": f"Runbook {i} lives in the ops wiki", "namespace": "work"} for i in range(3)])
    assert vault.recall("teal pipeline")[0].note.id == second.note.id
    report = run_process("--vault", str(vault_dir), "--json", "verify", check=False)
    assert report.returncode == 0, report.stdout + report.stderr


IMPORT = """
import sys
from vaultmem.vault import Vault
items = [{"text": f"Import line {i}: the amber ledger {i} closes at {i % 24}:00", "namespace": "bulk"}
         for i in range(int(sys.argv[2]))]
print("start", flush=True)
results = Vault(sys.argv[1]).add_many(items, batch=40)
print(sum(hasattr(r, "note") for r in results), flush=True)
"""


def test_a_long_import_lets_other_writers_and_readers_in_between_its_batches(vault_dir):
    """add_many takes the write lock and the catalog batch after batch: without a gap between them
    the others, who poll for both, are let in only when the import ends (or time out first)."""
    vault = Vault(vault_dir)
    vault.add("The staging database is Postgres 15", namespace="work")
    # 800 adds: several times as long as the three rounds below take (~2 s here), so they all
    # land in the middle of the import, on a slower machine as well as on this one.
    importer = subprocess.Popen([sys.executable, "-c", IMPORT, str(vault_dir), "800"],
                                stdout=subprocess.PIPE, text=True)
    assert importer.stdout.readline().strip() == "start"
    time.sleep(0.5)
    timings = []
    for n in range(3):
        time.sleep(random.uniform(0, 0.3))
        note_id, word = hand_note(vault_dir, n)
        began = time.monotonic()
        assert [hit.note.id for hit in vault.recall(word)][:1] == [note_id]
        added = vault.add(f"Release train {n} leaves on Thursday", namespace="work")
        timings.append(time.monotonic() - began)
        assert added.action == "added"
    still_importing = importer.poll() is None
    out, _ = importer.communicate(timeout=120)
    assert out.strip() == "800" and importer.returncode == 0
    assert still_importing, "the import ended first: make it longer for this machine"
    assert max(timings) < 2.0, timings




HOLD_REINDEX = """
import sys
from vaultmem.search.engine import engine_for
from vaultmem.store.files import remove_tree
from vaultmem.vault import Vault
vault = Vault(sys.argv[1])
with engine_for(vault)._index_lock():  # what rebuild_indexes does first; then it builds for a while
    print("locked", flush=True)
    sys.stdin.readline()
    for cache in (vault.cache_dir, vault.state_dir / "index"):
        remove_tree(cache)
    print("deleted", flush=True)
    sys.stdin.readline()
"""

RECALL_LATER = """
import json, sys
from vaultmem.vault import Vault
vault = Vault(sys.argv[1])
vault.catalog().count()  # its catalog open, nothing searched yet
print("open", flush=True)
for query in sys.stdin:
    print(json.dumps([hit.note.id for hit in vault.recall(query.strip(), k=5)]), flush=True)
"""


def tell(process, line: str = "") -> None:
    process.stdin.write(line + "\n")
    process.stdin.flush()


@pytest.mark.parametrize("deleted", ["before its recall", "while its recall waits for the index lock"])
def test_a_process_that_opened_the_caches_just_before_a_reindex_deleted_them_still_answers(vault_dir, deleted):
    """A hook's recall that opened the catalog before a reindex deleted the caches, and had read no
    index or vector file yet, answered nothing until the reindex ended (nothing open to answer from)."""
    first = Vault(vault_dir)
    wanted = {first.add(text, namespace="work").note.id for text in (
        "The teal pipeline builds the docs site", "Staging deploys go through the teal pipeline",
        "The teal pipeline runs the nightly browser tests")}
    lunch = first.add("Lunch is at noon in the canteen", namespace="work").note.id
    assert first.recall("teal pipeline")  # every note in both indexes
    started = [subprocess.Popen([sys.executable, "-c", script, str(vault_dir)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True) for script in (RECALL_LATER, HOLD_REINDEX)]
    reader, holder = started
    try:
        assert reader.stdout.readline().strip() == "open"
        assert holder.stdout.readline().strip() == "locked"
        if deleted == "before its recall":
            tell(holder)
            assert holder.stdout.readline().strip() == "deleted"
            tell(reader, "teal pipeline")
        else:
            tell(reader, "teal pipeline")
            time.sleep(0.1)  # it reads the catalog, then waits up to 0.25 s for the lock
            tell(holder)
            assert holder.stdout.readline().strip() == "deleted"
        assert set(json.loads(reader.stdout.readline())) == wanted
        tell(holder)  # the reindex ends (the caches as the reader left them)
        assert holder.wait(timeout=60) == 0
        tell(reader, "canteen lunch")
        assert json.loads(reader.stdout.readline())[:1] == [lunch]
    finally:
        for process in started:
            process.kill()
            process.communicate()


def test_reindex_and_processes_opening_the_catalog_meanwhile_neither_fail(vault_dir):
    """A process starting while `reindex` deletes the caches makes its catalog in the folder being
    deleted: the reindex failed ("Directory not empty"), or the process did ("unable to open
    database file", its folder deleted between making it and opening the file)."""
    from vaultmem.search.engine import rebuild_indexes

    Vault(vault_dir).add_many([{"text": f"Runbook {i} lives in the ops wiki", "namespace": "work", "merge": False,
                                "supersede": False} for i in range(20)])
    stop, failures, opened = threading.Event(), [], []

    def keep_opening():  # new processes' first step, again and again
        while not stop.is_set():
            try:
                opened.append(Vault(vault_dir).catalog(refresh=False).count())
            except Exception:  # noqa: BLE001 - what a user would see
                failures.append(traceback.format_exc())

    openers = [threading.Thread(target=keep_opening) for _ in range(2)]
    for opener in openers:
        opener.start()
    try:
        for _ in range(12):
            rebuild_indexes(Vault(vault_dir))
    finally:
        stop.set()
        for opener in openers:
            opener.join()
    assert failures == [] and opened, "\n".join(failures[:3])
    assert [hit.note.text.strip() for hit in Vault(vault_dir).recall("runbook 7 ops wiki")][:1] == \
        ["Runbook 7 lives in the ops wiki"]


def test_caches_a_killed_reindex_left_aside_go_at_the_next_and_git_ignores_them(vault_dir):
    """reindex moves each cache folder aside before deleting it (a database's -wal and -shm files go
    with it in one rename); a reindex killed in between leaves the folder aside: the next deletes it."""
    from vaultmem.search.engine import rebuild_indexes

    vault = Vault(vault_dir)
    vault.add("The staging database is Postgres 16", namespace="work")
    left = vault.state_dir / ".cache.deleting-4242-0badf00d"
    (left / "sub").mkdir(parents=True)
    (left / "sub" / "catalog.sqlite-wal").write_bytes(b"x" * 100)
    subprocess.run(["git", "init", "-q", str(vault_dir)], check=True)
    ignored = subprocess.run(["git", "-C", str(vault_dir), "check-ignore", "-q", str(left / "sub")])
    assert ignored.returncode == 0
    rebuild_indexes(Vault(vault_dir))
    assert not left.exists()
    assert sorted(p.name for p in vault.state_dir.iterdir() if ".deleting-" in p.name) == []
    assert Vault(vault_dir).recall("staging database")[0].note.text.startswith("The staging database")
