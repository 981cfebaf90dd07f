"""A vault that keeps itself: the daily decay from the system's scheduler (`vaultmem schedule`)
and from the SessionStart hook, and the core-only session block.

The schedulers are driven for real through stand-in `systemctl`, `crontab`, `launchctl` and
`schtasks` programs on PATH that log their arguments and keep the crontab in a file, with
HOME and XDG_CONFIG_HOME in a temporary folder: no test touches the user's crontab or units.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from vaultmem.clock import format_datetime, parse_datetime
from vaultmem.vault import Vault

from .conftest import T0

STAND_IN = """#!/bin/sh
echo "$(basename "$0") $*" >> "$FAKE_LOG"
if [ "$(basename "$0")" = crontab ]; then
  case "$1" in
    -l) [ -f "$FAKE_CRONTAB" ] && cat "$FAKE_CRONTAB" && exit 0; echo "no crontab for $USER" >&2; exit 1;;
    -) cat > "$FAKE_CRONTAB";;
  esac
fi
if [ "$(basename "$0")" = schtasks ] && [ "$1" = /Query ]; then
  [ -f "$FAKE_TASK" ] && exit 0; exit 1
fi
if [ "$(basename "$0")" = schtasks ] && [ "$1" = /Create ]; then touch "$FAKE_TASK"; fi
if [ "$(basename "$0")" = schtasks ] && [ "$1" = /Delete ]; then rm -f "$FAKE_TASK"; fi
exit 0
"""


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A home with stand-in schedulers on PATH; returns the log of what they were asked."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("systemctl", "crontab", "launchctl", "schtasks"):
        program = bin_dir / name
        program.write_text(STAND_IN)
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
    home = tmp_path / "home"
    home.mkdir()
    log = tmp_path / "scheduler.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("FAKE_CRONTAB", str(tmp_path / "crontab.txt"))
    monkeypatch.setenv("FAKE_TASK", str(tmp_path / "task"))
    log.write_text("")
    return log


def test_systemd_timer_install_is_idempotent_and_uninstall_removes_it(run, vault_dir, machine, tmp_path):
    units = tmp_path / "home" / ".config" / "systemd" / "user"
    preview = run.json("schedule", "install", "--backend", "systemd", "--dry-run")
    assert preview["dry_run"] and not units.exists() and machine.read_text() == "", "a dry run writes and runs nothing"
    done = run.json("schedule", "install", "--backend", "systemd", "--at", "04:15")
    job = done["job"]
    timer, service = units / f"{job}.timer", units / f"{job}.service"
    assert "OnCalendar=*-*-* 04:15:00" in timer.read_text() and "Persistent=true" in timer.read_text()
    assert f"--vault {vault_dir.resolve()} decay -q --by schedule" in service.read_text()
    assert f"systemctl --user enable --now {job}.timer" in machine.read_text()
    before = {p.name: p.read_text() for p in units.iterdir()}
    run.json("schedule", "install", "--backend", "systemd", "--at", "04:15")
    assert {p.name: p.read_text() for p in units.iterdir()} == before, "installing again changes nothing"
    assert run.json("schedule", "status", "--backend", "systemd")["installed"] is True
    (units / "someone-else.timer").write_text("[Timer]\n")
    run.json("schedule", "uninstall", "--backend", "systemd")
    assert sorted(p.name for p in units.iterdir()) == ["someone-else.timer"]
    assert f"systemctl --user disable --now {job}.timer" in machine.read_text()
    assert run.json("schedule", "status", "--backend", "systemd")["installed"] is False


def test_cron_line_keeps_the_other_lines(run, vault_dir, machine, tmp_path):
    crontab = tmp_path / "crontab.txt"
    crontab.write_text("0 1 * * * backup.sh\n")
    job = run.json("schedule", "install", "--backend", "cron")["job"]
    lines = crontab.read_text().splitlines()
    assert lines[0] == "0 1 * * * backup.sh" and lines[1].startswith("30 3 * * * ") and lines[1].endswith(f"# {job}")
    assert len(lines) == 2
    again = run.json("schedule", "install", "--backend", "cron")
    assert again["crontab"] is None and crontab.read_text().splitlines() == lines, "one line, however often"
    other = tmp_path / "other-vault"
    Vault.open(other, create=True)
    run.json("schedule", "install", "--backend", "cron", "--vault", str(other))
    assert len(crontab.read_text().splitlines()) == 3, "a second vault gets its own job"
    run.json("schedule", "uninstall", "--backend", "cron")
    remaining = crontab.read_text().splitlines()
    assert remaining[0] == "0 1 * * * backup.sh" and job not in crontab.read_text() and len(remaining) == 2


def test_launchd_and_scheduled_task(run, machine, tmp_path):
    job = run.json("schedule", "install", "--backend", "launchd", "--at", "05:00")["job"]
    plist = tmp_path / "home" / "Library" / "LaunchAgents" / f"org.vaultmem.{job.removeprefix('vaultmem-')}.plist"
    text = plist.read_text()
    assert "<key>Hour</key>\n    <integer>5</integer>" in text and "<string>decay</string>" in text
    assert f"launchctl load -w {plist}" in machine.read_text()
    run.json("schedule", "uninstall", "--backend", "launchd")
    assert not plist.exists() and f"launchctl unload -w {plist}" in machine.read_text()

    run.json("schedule", "install", "--backend", "schtasks")
    assert f"schtasks /Create /TN {job} /TR" in machine.read_text() and "/SC DAILY /ST 03:30 /F" in machine.read_text()
    assert run.json("schedule", "status", "--backend", "schtasks")["installed"] is True
    run.json("schedule", "uninstall", "--backend", "schtasks")
    assert f"schtasks /Delete /TN {job} /F" in machine.read_text()
    assert run.json("schedule", "status", "--backend", "schtasks")["installed"] is False


def test_a_bad_time_is_refused(run, machine):
    assert "HH:MM" in run("schedule", "install", "--backend", "cron", "--at", "25:00", expect=2).output


def test_status_says_when_decay_last_ran(run, machine):
    assert run.json("schedule", "status", "--backend", "cron")["last_decay"] is None
    run("decay")
    last = run.json("schedule", "status", "--backend", "cron")["last_decay"]
    assert last == {"last_run": T0, "by": "cli", "changed": 0}


# ---------------------------------------------------------------- the SessionStart hook

def _days_after(days: float) -> str:
    return format_datetime(parse_datetime(T0) + timedelta(days=days))


def session_start(vault_dir: Path, tmp_path: Path, *flags: str, **env) -> subprocess.CompletedProcess:
    payload = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "SessionStart", "source": "startup"}
    full_env = dict(os.environ, VAULTMEM_NO_SERVER="1", VAULTMEM_VAULT=str(vault_dir), **env)
    result = subprocess.run([sys.executable, "-m", "vaultmem", "hook", "session-start", *flags],
                            input=json.dumps(payload), env=full_env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return result


def test_session_start_runs_a_due_daily_decay_in_the_background(vault_dir, tmp_path):
    note = Vault(vault_dir).add("The old build server is jenkins-01", "infra")
    later = _days_after(31)
    session_start(vault_dir, tmp_path, VAULTMEM_AUTODECAY="on", VAULTMEM_NOW=later)
    stamp_file = vault_dir / ".vaultmem" / "cache" / "decay.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "last_run" not in json.loads(stamp_file.read_text()):
        time.sleep(0.2)
    stamp = json.loads(stamp_file.read_text())
    assert stamp["by"] == "session-start" and stamp["last_run"] == later and stamp["changed"] == 1
    assert Vault(vault_dir).get(note.note.id).status == "stale"

    session_start(vault_dir, tmp_path, VAULTMEM_AUTODECAY="on", VAULTMEM_NOW=_days_after(31.5))
    assert json.loads(stamp_file.read_text()) == stamp, "once a day: a second session the same day starts none"
    session_start(vault_dir, tmp_path, VAULTMEM_AUTODECAY="off", VAULTMEM_NOW=_days_after(40))
    assert json.loads(stamp_file.read_text()) == stamp, "VAULTMEM_AUTODECAY=off starts none"


def test_a_daily_decay_is_claimed_once(vault):
    from vaultmem.ops import upkeep

    assert upkeep.claim_if_due(vault) is True
    assert upkeep.claim_if_due(vault) is False, "started a moment ago: taken to be running"
    upkeep.record_run(vault, "session-start", 3)
    assert upkeep.is_due(upkeep.read_stamp(vault), parse_datetime(_days_after(0.5))) is False
    assert upkeep.is_due(upkeep.read_stamp(vault), parse_datetime(_days_after(1))) is True
    upkeep.stamp_path(vault).write_text("{broken")
    assert upkeep.claim_if_due(vault) is True, "a damaged stamp means due, never an error"


def test_core_only_session_start_injects_only_l2_and_l3(vault_dir, tmp_path):
    v = Vault(vault_dir)
    core = v.add("Deploys go through the staging branch", "work", tier="L2")
    durable = v.add("Answer in British English", "prefs", tier="L3")
    captured = v.add("The coffee machine is on the third floor", "office", tier="L0")
    remembered = v.add("Staging runs Postgres 16 on port 5433", "work/infra")
    full = session_start(vault_dir, tmp_path).stdout
    assert all(f"[{n.note.id}]" in full for n in (core, durable, captured, remembered))
    only = session_start(vault_dir, tmp_path, "--core-only").stdout
    assert f"[{core.note.id}]" in only and f"[{durable.note.id}]" in only
    assert f"[{captured.note.id}]" not in only and f"[{remembered.note.id}]" not in only
    assert [m["id"] for m in json.loads(subprocess.run(
        [sys.executable, "-m", "vaultmem", "--vault", str(vault_dir), "prompt", "--core-only", "--json"],
        capture_output=True, text=True, check=True).stdout)["memories"]] == [durable.note.id, core.note.id]


def test_hooks_install_core_only(tmp_path):
    from click.testing import CliRunner

    from vaultmem.cli.main import cli

    settings = tmp_path / "settings.json"
    CliRunner().invoke(cli, ["hooks", "install", "--settings", str(settings), "--core-only"], catch_exceptions=False)
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["SessionStart"][0]["hooks"][0]["command"].endswith("hook session-start --core-only")
    assert "--core-only" not in json.dumps({k: v for k, v in hooks.items() if k != "SessionStart"})
    CliRunner().invoke(cli, ["hooks", "install", "--settings", str(settings)], catch_exceptions=False)
    hooks = json.loads(settings.read_text())["hooks"]
    assert len(hooks["SessionStart"]) == 1 and hooks["SessionStart"][0]["hooks"][0]["command"].endswith(
        "hook session-start"), "installed again without it: updated in place"
