"""A write lock held too long: writes give up with exit 75 and a message that says what to do;
`health` still answers and says who holds the lock."""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest

from vaultmem import Vault
from vaultmem.errors import EXIT_LOCKED, LockTimeout

from .conftest import run_process

HAS_PROC_LOCKS = os.path.exists("/proc/locks")
HOLD = ("import sys, time\nfrom filelock import FileLock\nlock = FileLock(sys.argv[1])\nlock.acquire()\n"
        "print('held', flush=True)\ntime.sleep(float(sys.argv[2]))\nlock.release()\nprint('released', flush=True)\n")


@contextmanager
def lock_held(vault_dir, seconds: float = 300.0, name: str = "write.lock"):
    """Inside the block another process holds the vault's write lock, or another of its locks
    (`name` in .vaultmem/), for `seconds` or until the block ends."""
    lock = vault_dir / ".vaultmem" / name
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), str(seconds)], stdout=subprocess.PIPE,
                               text=True)
    try:
        ready, _, _ = select.select([process.stdout], [], [], 30)
        assert ready and process.stdout.readline().strip() == "held"
        yield process
    finally:
        process.kill()
        process.wait(timeout=10)


def assert_lock_message(stderr: str, vault_dir, holder, waited: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    line = lines[0]
    assert line.startswith(f"vaultmem: the vault's write lock {vault_dir / '.vaultmem' / 'write.lock'} is held by ")
    assert f"gave up after {waited} s" in line and "safe to run the command again" in line
    assert "VAULTMEM_LOCK_WAIT" in line
    if HAS_PROC_LOCKS:
        assert f"held by pid {holder.pid} (" in line and "filelock" in line  # the process and its command line


# The waits below are 0.6 s, not the default 60: long enough to give up after "1 s" (the message
# rounds to whole seconds), short enough that a test spends little of its time asleep.
SHORT_WAIT = {"VAULTMEM_LOCK_WAIT": "0.6"}


@pytest.mark.slow
def test_add_and_grade_give_up_with_exit_75_and_say_who_holds_the_lock(run, vault_dir):
    note = run.json("add", "Backups run at 02:00 UTC", "-n", "ops")
    wait = SHORT_WAIT
    with lock_held(vault_dir) as holder:
        for args in (["add", "Restores are tested monthly", "-n", "ops"], ["grade", note["id"], "good"]):
            started = time.monotonic()
            result = run_process("--vault", str(vault_dir), *args, env=wait, check=False)
            assert result.returncode == EXIT_LOCKED == 75, result.stderr
            assert time.monotonic() - started < 15
            assert_lock_message(result.stderr, vault_dir, holder, "1")
        quiet = run_process("--vault", str(vault_dir), "add", "x y z", "-n", "ops", "-q", env=wait, check=False)
        assert quiet.returncode == 75 and quiet.stderr == ""
    # Nothing was written while it waited; with the lock free the same commands work.
    assert [n.text for n in Vault(vault_dir).notes()] == ["Backups run at 02:00 UTC"]
    run_process("--vault", str(vault_dir), "add", "Restores are tested monthly", "-n", "ops", env=wait)
    graded = json.loads(run_process("--vault", str(vault_dir), "grade", note["id"], "good", "--json",
                                    env=wait).stdout)
    assert graded["reps"] == 1


@pytest.mark.slow
def test_health_answers_while_the_lock_is_held_and_names_the_holder(run, vault_dir):
    run.json("add", "Backups run at 02:00 UTC", "-n", "ops")
    free = run_process("--vault", str(vault_dir), "health").stdout
    assert "write lock: free" in free
    with lock_held(vault_dir) as holder:
        started = time.monotonic()
        result = run_process("--vault", str(vault_dir), "health", check=False)  # the default 60 s wait
        assert result.returncode == 0 and time.monotonic() - started < 20, result.stderr
        [line] = [line for line in result.stdout.splitlines() if line.startswith("write lock:")]
        assert str(vault_dir / ".vaultmem" / "write.lock") in line and "exit 75" in line
        if HAS_PROC_LOCKS:
            assert f"held by pid {holder.pid} (" in line
        assert "notes: 1" in result.stdout and "ledger: 0 breaks" in result.stdout
        # The same report as JSON (the bound on the default wait is checked above: this one may wait less).
        data = json.loads(run_process("--vault", str(vault_dir), "health", "--json", env=SHORT_WAIT).stdout)
        assert data["write_lock"]["lock"] == str(vault_dir / ".vaultmem" / "write.lock")
        assert data["notes"] == 1 and data["ledger"]["breaks"] == []


def test_the_python_api_raises_lock_timeout(vault_dir, monkeypatch):
    monkeypatch.setenv("VAULTMEM_LOCK_WAIT", "0.3")
    vault = Vault(vault_dir)
    with lock_held(vault_dir) as holder:
        with pytest.raises(LockTimeout) as caught:
            vault.add("Restores are tested monthly", "ops")
    assert caught.value.exit_code == 75 and caught.value.lock_path.endswith("write.lock")
    assert 0.3 <= caught.value.waited < 5
    if HAS_PROC_LOCKS:
        assert caught.value.holder.startswith(f"pid {holder.pid} (")
    assert vault.add("Restores are tested monthly", "ops").action == "added"  # the same object works after


@pytest.mark.slow
def test_a_lock_freed_within_the_wait_lets_the_write_through(vault_dir, monkeypatch):
    """Random hold times below the wait: every add waits for the holder, then succeeds."""
    monkeypatch.setenv("VAULTMEM_LOCK_WAIT", "5")
    vault = Vault(vault_dir)
    facts = ["The VPN needs a hardware token", "Invoices are due on the 5th", "The cat is called Miso",
             "Staging runs Postgres 16", "Lunch is at noon on Fridays", "The wiki moved to Notion"]
    for fact in facts:
        hold = random.uniform(0.2, 0.8)  # at least 0.2 s: each add's wait is checked against its hold
        with lock_held(vault_dir, hold) as holder:
            started = time.monotonic()
            added = vault.add(fact, f"ops/{len(fact)}")
            waited = time.monotonic() - started
            assert holder.stdout.readline().strip() == "released"  # the holder finished before the add wrote
        assert added.action == "added" and hold - 0.2 < waited < 5
    assert sorted(n.text for n in vault.notes()) == sorted(facts)


def test_a_bad_lock_wait_is_one_line_with_the_fix(run, vault_dir):
    result = run_process("--vault", str(vault_dir), "add", "x", "-n", "ops", env={"VAULTMEM_LOCK_WAIT": "soon"},
                         check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == ("vaultmem: VAULTMEM_LOCK_WAIT='soon' is not a number of seconds; "
                                     "set it to e.g. 60, or unset it")


def test_writes_through_the_watcher_give_up_the_same_way(run, vault_dir):
    """A watcher that waits for the lock on the client's behalf sends the refusal back with its code."""
    note = run.json("add", "Backups run at 02:00 UTC", "-n", "ops")
    process = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(vault_dir), "watch"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, **SHORT_WAIT))
    try:
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready and "serving recall" in process.stdout.readline()
        with lock_held(vault_dir) as holder:
            for args in (["add", "Restores are tested monthly", "-n", "ops"], ["grade", note["id"], "good"]):
                result = run_process("--vault", str(vault_dir), *args, env=SHORT_WAIT, check=False)
                assert result.returncode == 75, result.stderr
                assert_lock_message(result.stderr, vault_dir, holder, "1")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
