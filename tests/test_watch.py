"""`vaultmem watch`: hand edits, editor saves, renames and deletions reach recall within a second."""

from __future__ import annotations

import json
import os
import select
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest

from vaultmem.service.client import ask, socket_path
from vaultmem.vault import Vault

from .conftest import run_process


@pytest.fixture
def watcher(vault_dir):
    """A real `vaultmem watch` process on the test vault, stopped with SIGTERM afterwards."""
    process = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(vault_dir), "watch"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([process.stdout], [], [], 120)
    line = process.stdout.readline() if ready else ""
    if "serving recall" not in line:
        process.kill()
        pytest.fail(f"watcher did not start: {line!r} {process.stderr.read()[-2000:]}")
    yield process
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=20)


def recall_ids(vault_dir, query):
    answer = ask(str(vault_dir), {"op": "recall", "query": query, "top_k": 5})
    assert answer is not None and answer["ok"], answer
    return [(h["id"], h["path"]) for h in answer["hits"]]


def wait_until(check, seconds=10.0):
    """Polls `check` until it is true; returns the seconds it took (fails past `seconds`)."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if check():
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds}s")


def test_socket_is_private_and_removed_on_stop(vault_dir, watcher):
    path = socket_path(str(vault_dir))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    watcher.send_signal(signal.SIGTERM)
    watcher.wait(timeout=20)
    assert not os.path.exists(path)


def test_cli_recall_goes_through_the_watcher_and_falls_back_without_it(run, vault_dir, watcher):
    note = run.json("add", "The printer on floor two needs a PIN", "-n", "office")
    wait_until(lambda: recall_ids(vault_dir, "printer pin")[:1] == [(note["id"], note["path"])])
    served = json.loads(run_process("--vault", str(vault_dir), "recall", "printer pin", "--json").stdout)
    assert served[0]["id"] == note["id"]
    watcher.send_signal(signal.SIGTERM)
    watcher.wait(timeout=20)
    alone = json.loads(run_process("--vault", str(vault_dir), "recall", "printer pin", "--json").stdout)
    assert [h["id"] for h in alone] == [h["id"] for h in served]


def test_hand_edit_reaches_recall_through_the_watcher(run, vault_dir, watcher):
    note = run.json("add", "The wiki lives on Confluence", "-n", "docs")
    path = vault_dir / note["path"]
    wait_until(lambda: recall_ids(vault_dir, "wiki")[:1] == [(note["id"], note["path"])])
    path.write_text(path.read_text().replace("Confluence", "Notion since the zebrafish migration"))
    # How fast is measured in bench/recall_perf.py; here only that it arrives without any command.
    wait_until(lambda: recall_ids(vault_dir, "zebrafish migration")[:1] == [(note["id"], note["path"])])


def test_editor_save_by_rename_and_swap_files(vault_dir, watcher):
    folder = vault_dir / "memories" / "editor"
    folder.mkdir(parents=True)
    # vim / Obsidian style: write a temp file, then rename it over the note.
    (folder / ".note.md.swp").write_bytes(b"\x00swap junk about quokkas")
    tmp = folder / "note.md~tmp"
    tmp.write_text("Quokkas live on Rottnest Island\n")
    os.replace(tmp, folder / "note.md")
    wait_until(lambda: recall_ids(vault_dir, "quokkas") == [("note", "memories/editor/note.md")])
    (folder / "4913").write_text("vim's write test file")
    time.sleep(0.4)
    assert recall_ids(vault_dir, "quokkas") == [("note", "memories/editor/note.md")]


def test_rename_keeps_identity_and_history(run, vault_dir, watcher):
    note = run.json("add", "Standups start at 9:30 sharp", "-n", "team")
    run("grade", note["id"], "good")
    old = vault_dir / note["path"]
    new = vault_dir / "memories" / "rituals" / "standup time.md"
    new.parent.mkdir(parents=True)
    os.rename(old, new)
    wait_until(lambda: recall_ids(vault_dir, "standup") == [(note["id"], "memories/rituals/standup time.md")])
    graded = run.json("grade", note["id"], "good")
    assert graded["reps"] == 2 and graded["path"] == "memories/rituals/standup time.md"


def test_deleted_note_leaves_recall(run, vault_dir, watcher):
    note = run.json("add", "Temporary note about the llama parade", "-n", "misc")
    wait_until(lambda: recall_ids(vault_dir, "llama parade")[:1] == [(note["id"], note["path"])])
    os.unlink(vault_dir / note["path"])
    wait_until(lambda: recall_ids(vault_dir, "llama parade") == [])


def test_second_watcher_on_the_same_vault_is_refused(vault_dir, watcher):
    result = run_process("--vault", str(vault_dir), "watch", check=False)
    assert result.returncode != 0 and "already" in result.stderr


def test_watcher_leaves_current_caches_when_it_stops(run, vault_dir, watcher):
    note = run.json("add", "Caches are written back on exit", "-n", "misc")
    wait_until(lambda: recall_ids(vault_dir, "caches written back")[:1] == [(note["id"], note["path"])])
    watcher.send_signal(signal.SIGTERM)
    watcher.wait(timeout=20)
    status = run.json("health")["recall"]
    assert status["index_stale"] == 0 and status["embeddings_stale"] == 0


def test_a_hand_edit_seen_by_the_watcher_is_recorded_not_flagged(vault_dir, watcher):
    note = json.loads(run_process("--vault", str(vault_dir), "add", "Invoices go out on the 1st", "-n", "billing",
                                  "--json").stdout)
    path = vault_dir / note["path"]
    path.write_text(path.read_text().replace("the 1st", "the 5th"))
    ledger = vault_dir / ".vaultmem" / "ledger.jsonl"

    def recorded():
        records = [json.loads(line) for line in ledger.read_text().splitlines()]
        return records[-1]["op"] == "external-edit" and records[-1]["id"] == note["id"]

    wait_until(recorded)
    assert run_process("--vault", str(vault_dir), "verify", "--strict", check=False).returncode == 0
    path.unlink()
    wait_until(lambda: json.loads(ledger.read_text().splitlines()[-1])["op"] == "external-delete")
    assert run_process("--vault", str(vault_dir), "verify", "--strict", check=False).returncode == 0


def test_a_watcher_started_with_idle_exit_stops_when_no_one_asks(vault_dir):
    process = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(vault_dir),
                                "watch", "--idle-exit", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready and "serving recall" in process.stdout.readline()
        assert process.wait(timeout=30) == 0
        assert not os.path.exists(socket_path(str(vault_dir)))
    finally:
        if process.poll() is None:
            process.kill()


def test_adds_and_grades_are_written_by_the_watcher(vault_dir, watcher):
    request = {"op": "add", "now": os.environ.get("VAULTMEM_NOW"),
               "args": {"text": "The VPN gateway is vpn2.example.org", "namespace": "infra", "tags": ["vpn"]}}
    answer = ask(str(vault_dir), request, timeout=60)
    assert answer["ok"] and answer["data"]["action"] == "added", answer
    assert (vault_dir / answer["data"]["path"]).is_file()
    graded = json.loads(run_process("--vault", str(vault_dir), "grade", answer["data"]["id"], "good", "--json").stdout)
    assert graded["reps"] == 1 and graded["id"] == answer["data"]["id"]
    missing = run_process("--vault", str(vault_dir), "grade", "nosuchid", "good", check=False)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "no note with id" in missing.stderr
    # A client whose clock is pinned otherwise writes in-process, with its own time.
    later = run_process("--vault", str(vault_dir), "add", "Printers live on VLAN 40", "-n", "infra", "--json",
                        env={"VAULTMEM_NOW": "2026-03-01T10:00:00"})
    assert json.loads(later.stdout)["created"] == "2026-03-01T10:00:00"


def _engine_with_one_note(vault_dir):
    from vaultmem.search.engine import RecallEngine
    from vaultmem.vault import Vault

    note = Vault(vault_dir).add("Temporary note about the llama parade", "misc").note
    engine = RecallEngine(Vault(vault_dir))  # the watcher's engine, on its own Vault object
    engine.sync()
    assert [h.note.id for h in engine.recall("llama parade", sync=False)] == [note.id]
    return engine, note


def test_a_deletion_event_takes_the_note_out_of_the_indexes(vault_dir):
    """What the watcher does for a deleted file, in-process and deterministic."""
    engine, note = _engine_with_one_note(vault_dir)
    os.unlink(vault_dir / note.path)
    assert engine.apply([note.path])["notes"] == 0
    engine.vault.record_external_edits([note.path])
    assert engine.recall("llama parade", sync=False) == []


def test_a_deletion_seen_first_by_the_ledger_scan_still_leaves_the_indexes(vault_dir):
    """The watcher's order when the file goes while it records the previous batch's edits: the
    ledger's scan updates the catalog first, and the engine still hears of the deletion (it
    follows the catalog's generations, not a diff of its own)."""
    engine, note = _engine_with_one_note(vault_dir)
    os.unlink(vault_dir / note.path)
    engine.vault.record_external_edits([note.path])  # the previous batch's step, after its apply
    engine.apply([note.path])  # then the deletion's own event batch
    assert engine.recall("llama parade", sync=False) == []


def test_a_turn_of_the_loop_that_fails_is_logged_and_the_watcher_goes_on_following_the_vault(vault, capsys,
                                                                                           monkeypatch):
    """An unexpected error in the loop (a full disk, a bug) used to end its thread silently: the
    watcher went on serving, with answers that never again saw an edit."""
    from vaultmem.search.engine import engine_for
    from vaultmem.service import watch

    monkeypatch.setattr(watch, "RETRY_AFTER", 0.2, raising=False)
    engine = engine_for(vault)
    failures = []
    real_apply = engine.apply

    def apply_failing_once(paths, lock_wait=None):
        if not failures:
            failures.append(paths)
            raise OSError(28, "No space left on device")
        return real_apply(paths, lock_wait)

    monkeypatch.setattr(engine, "apply", apply_failing_once)
    stop = threading.Event()
    thread = threading.Thread(target=watch.run_watcher, args=(engine, stop), daemon=True)
    thread.start()
    try:
        wait_until(lambda: engine._synced_at > 0)  # the first scan is done
        path = vault.root / "memories" / "misc" / "yak.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("---\nid: yak00001\n---\nThe yak shaving checklist lives in the wiki.\n")
        wait_until(lambda: [h.note.id for h in engine.recall("yak shaving", sync=False)] == ["yak00001"])
        assert failures and thread.is_alive()
        assert "could not follow the vault's changes" in capsys.readouterr().out
    finally:
        stop.set()
        thread.join(timeout=10)


def test_writes_arriving_together_do_not_wait_on_the_watcher_asking_itself(vault_dir, watcher):
    """More adds and grades at once than the watcher has workers: an add's duplicate check ran
    through the watcher's own socket, so with every worker taken (one holding the write lock,
    the rest waiting for it) each add waited out the 5 s timeout, one after the other."""
    from vaultmem.service.server import WORKERS

    first = ask(str(vault_dir), {"op": "add", "now": os.environ.get("VAULTMEM_NOW"),
                                 "args": {"text": "The fax machine is on floor 2", "namespace": "office"}}, timeout=60)
    assert first["ok"], first
    requests = [{"op": "add", "now": os.environ.get("VAULTMEM_NOW"),
                 "args": {"text": f"Bike rack R{i} holds {i + 3} bikes", "namespace": f"racks{i}"}}
                for i in range(WORKERS + 2)]
    requests += [{"op": "grade", "now": os.environ.get("VAULTMEM_NOW"),
                  "args": {"note_id": first["data"]["id"], "rating": "good"}} for _ in range(4)]
    answers = [None] * len(requests)

    def send(i):
        answers[i] = ask(str(vault_dir), requests[i], timeout=120)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.monotonic() - start
    assert all(answer and answer["ok"] for answer in answers), answers
    assert took < 10, f"{len(requests)} writes took {took:.1f} s"


@pytest.mark.parametrize("how", ["deleted", "moved out of the vault", "renamed"])
def test_a_folder_deleted_or_moved_away_has_its_notes_recorded_as_gone(vault_dir, watcher, tmp_path, how):
    """A folder removed at once sends one event for the folder, none per note: the watcher looks
    up the notes recorded under it (a folder renamed inside the vault keeps its notes)."""
    import shutil

    from vaultmem.vault import Vault

    folder = vault_dir / "memories" / "garden"
    folder.mkdir(parents=True)
    for i in range(3):
        (folder / f"n{i}.md").write_text(f"Hand note {i} about tomatoes in bed {i}\n")
    vault = Vault(vault_dir)
    assert vault.verify()["recorded"] == 3
    wait_until(lambda: len(recall_ids(vault_dir, "tomatoes bed")) == 3)  # the watcher knows the folder
    if how == "deleted":
        shutil.rmtree(folder)
    elif how == "renamed":
        folder.rename(vault_dir / "memories" / "allotment")
    else:
        shutil.move(str(folder), str(tmp_path / "elsewhere"))
    ledger = vault_dir / ".vaultmem" / "ledger.jsonl"

    def gone() -> int:
        return sum('"external-delete"' in line for line in ledger.read_text().splitlines())

    if how == "renamed":
        time.sleep(2.0)  # the watcher's rescan and recording have had their time
        assert gone() == 0
    else:
        wait_until(lambda: gone() == 3)
    result = Vault(vault_dir).verify(record=False)
    assert result["changes"] == [] and result["tampering"] == []


def test_the_watcher_takes_a_config_edited_while_it_runs(vault_dir, capsys):
    """It kept the settings it started with while every other process read the new ones (a hook
    failed on a bad value the watcher went on ignoring). Now a readable change takes effect and
    an unreadable one is named, keeping the settings it had."""
    from vaultmem.service.watch import follow_config

    vault = Vault(vault_dir)
    clocks: dict = {}
    follow_config(vault, clocks)  # the config as the watcher starts
    config = vault_dir / ".vaultmem" / "config.yaml"
    config.write_text("recall:\n  top_k: 3\n")
    os.utime(config, ns=(config.stat().st_atime_ns, config.stat().st_mtime_ns + 10_000_000))
    follow_config(vault, clocks)
    assert vault.config.recall_top_k == 3 and "in effect now" in capsys.readouterr().out
    config.write_text("recall:\n  top_k: -5\n")
    os.utime(config, ns=(config.stat().st_atime_ns, config.stat().st_mtime_ns + 20_000_000))
    follow_config(vault, clocks)
    assert vault.config.recall_top_k == 3
    assert "recall.top_k should be from 1 to 1000" in capsys.readouterr().out
