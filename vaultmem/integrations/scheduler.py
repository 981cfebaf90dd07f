"""`vaultmem schedule`: a daily `vaultmem decay` run by the operating system's own scheduler.

One job per vault, named after a short hash of the vault's path (so two vaults
get two jobs), running `<this python> -m vaultmem --vault VAULT decay -q --by schedule`:

| backend | where | installs with | catches up a missed day |
|---|---|---|---|
| systemd | `$XDG_CONFIG_HOME/systemd/user/vaultmem-decay-HASH.{service,timer}` | `systemctl --user enable --now` | yes (`Persistent=true`) |
| cron | the user's crontab, one line ending `# vaultmem-decay-HASH` | `crontab -` | no (the SessionStart hook does) |
| launchd | `~/Library/LaunchAgents/org.vaultmem.decay-HASH.plist` | `launchctl load -w` | yes (a missed interval runs at wake) |
| schtasks | a scheduled task `vaultmem-decay-HASH` | `schtasks /Create ... /F` | no |

`detect` picks systemd on Linux when `systemctl --user` answers, else cron;
launchd on macOS; schtasks on Windows. Installing twice leaves one job (the
files and the crontab line are replaced, `/F` replaces the task); uninstalling
removes exactly what install wrote and leaves other crontab lines and unit files
alone. Every command goes through `run` (and every file through `Paths`), so
tests drive this with temporary homes and stand-in `systemctl`/`crontab`
programs on PATH; `dry_run` returns the plan without writing or running anything.
"""  # noqa: E501 - the backends table's rows are one line each

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BACKENDS = ("systemd", "cron", "launchd", "schtasks")
DEFAULT_AT = "03:30"

# (argv) -> (exit code, stdout + stderr); input text for `crontab -`.
Runner = Callable[[list[str], str | None], tuple[int, str]]


def run_command(argv: list[str], stdin: str | None = None) -> tuple[int, str]:
    """Run a scheduler's command; a missing program is exit 127, as a shell says."""
    import subprocess  # here, not at the top: every CLI command imports this module to register `schedule`

    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return 127, f"{argv[0]}: not found"
    except subprocess.TimeoutExpired:
        return 124, f"{argv[0]}: timed out"
    return done.returncode, (done.stdout + done.stderr).strip()


@dataclass
class Plan:
    """What install or uninstall does (or, dry run, would do): files and commands."""

    backend: str
    job: str
    command: str
    write: dict[str, str] = field(default_factory=dict)  # path -> text
    remove: list[str] = field(default_factory=list)
    first: list[list[str]] = field(default_factory=list)  # run before, failures ignored (unload what may not be loaded)
    run: list[list[str]] = field(default_factory=list)  # run after the files are written
    then: list[list[str]] = field(default_factory=list)  # run after the files are removed
    crontab: str | None = None  # the new crontab (cron only)
    done: list[str] = field(default_factory=list)  # what happened, in order
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"backend": self.backend, "job": self.job, "command": self.command, "write": sorted(self.write),
                "remove": self.remove,
                "run": [shlex.join(argv) for argv in (*self.first, *self.run, *self.then)], "crontab": self.crontab,
                "done": self.done, "problems": self.problems}


def job_name(vault_root: Path) -> str:
    digest = hashlib.sha256(str(Path(vault_root).resolve()).encode("utf-8")).hexdigest()[:8]
    return f"vaultmem-decay-{digest}"


def decay_argv(vault_root: Path) -> list[str]:
    return [sys.executable, "-m", "vaultmem", "--vault", str(Path(vault_root).resolve()), "decay", "-q",
            "--by", "schedule"]


def detect(run: Runner = run_command, platform: str = sys.platform) -> str:
    """The scheduler of this machine."""
    if platform == "darwin":
        return "launchd"
    if platform.startswith("win"):
        return "schtasks"
    import shutil

    if shutil.which("systemctl"):
        code, _out = run(["systemctl", "--user", "show-environment"], None)
        if code == 0:
            return "systemd"
    return "cron"


def _parse_at(at: str) -> tuple[int, int]:
    from vaultmem.errors import BadInput

    try:
        hour, minute = (int(part) for part in at.split(":"))
        if 0 <= hour < 24 and 0 <= minute < 60:
            return hour, minute
    except ValueError:
        pass
    raise BadInput(f"--at {at!r}: give a time of day as HH:MM, e.g. {DEFAULT_AT}")


def _systemd_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path.home() / ".config") / "systemd" / "user"


def _launchd_path(job: str) -> Path:
    return Path.home() / "Library" / "LaunchAgents" / f"org.vaultmem.{job.removeprefix('vaultmem-')}.plist"


def _crontab_lines(run: Runner) -> list[str]:
    code, text = run(["crontab", "-l"], None)
    return text.splitlines() if code == 0 else []  # "no crontab for user" exits 1


def plan_install(vault_root: Path, backend: str, at: str = DEFAULT_AT, run: Runner = run_command) -> Plan:
    hour, minute = _parse_at(at)
    job = job_name(vault_root)
    argv = decay_argv(vault_root)
    command = shlex.join(argv)
    plan = Plan(backend, job, command)
    if backend == "systemd":
        folder = _systemd_dir()
        plan.write[str(folder / f"{job}.service")] = (
            "[Unit]\nDescription=vaultmem: idle decay and the lifecycle of the vault "
            f"{Path(vault_root).resolve()}\n\n[Service]\nType=oneshot\nExecStart={command}\n")
        plan.write[str(folder / f"{job}.timer")] = (
            f"[Unit]\nDescription=vaultmem: daily decay ({job})\n\n[Timer]\n"
            f"OnCalendar=*-*-* {hour:02d}:{minute:02d}:00\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n")
        plan.run = [["systemctl", "--user", "daemon-reload"],
                    ["systemctl", "--user", "enable", "--now", f"{job}.timer"]]
    elif backend == "cron":
        lines = _crontab_lines(run)
        kept = [line for line in lines if not line.rstrip().endswith(f"# {job}")]
        wanted = [*kept, f"{minute} {hour} * * * {command} # {job}"]
        plan.crontab = None if wanted == lines else "\n".join(wanted) + "\n"  # already there: nothing to change
    elif backend == "launchd":
        path = _launchd_path(job)
        arguments = "".join(f"    <string>{_xml(word)}</string>\n" for word in argv)
        plan.write[str(path)] = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
            '<plist version="1.0">\n<dict>\n'
            f"  <key>Label</key>\n  <string>{path.stem}</string>\n"
            f"  <key>ProgramArguments</key>\n  <array>\n{arguments}  </array>\n"
            f"  <key>StartCalendarInterval</key>\n  <dict>\n    <key>Hour</key>\n    <integer>{hour}</integer>\n"
            f"    <key>Minute</key>\n    <integer>{minute}</integer>\n  </dict>\n"
            "</dict>\n</plist>\n")
        plan.first = [["launchctl", "unload", str(path)]]
        plan.run = [["launchctl", "load", "-w", str(path)]]
    elif backend == "schtasks":
        from subprocess import list2cmdline

        plan.run = [["schtasks", "/Create", "/TN", job, "/TR", list2cmdline(argv), "/SC", "DAILY",
                     "/ST", f"{hour:02d}:{minute:02d}", "/F"]]
    else:
        raise _unknown(backend)
    return plan


def plan_uninstall(vault_root: Path, backend: str, run: Runner = run_command) -> Plan:
    job = job_name(vault_root)
    plan = Plan(backend, job, shlex.join(decay_argv(vault_root)))
    if backend == "systemd":
        folder = _systemd_dir()
        files = [folder / f"{job}.timer", folder / f"{job}.service"]
        if any(f.exists() for f in files):
            plan.run = [["systemctl", "--user", "disable", "--now", f"{job}.timer"]]
        plan.remove = [str(f) for f in files if f.exists()]
        if plan.remove:
            plan.then = [["systemctl", "--user", "daemon-reload"]]
    elif backend == "cron":
        lines = _crontab_lines(run)
        kept = [line for line in lines if not line.rstrip().endswith(f"# {job}")]
        if len(kept) != len(lines):
            plan.crontab = "\n".join(kept) + "\n" if kept else ""
    elif backend == "launchd":
        path = _launchd_path(job)
        if path.exists():
            plan.run = [["launchctl", "unload", "-w", str(path)]]
            plan.remove = [str(path)]
    elif backend == "schtasks":
        code, _out = run(["schtasks", "/Query", "/TN", job], None)
        if code == 0:
            plan.run = [["schtasks", "/Delete", "/TN", job, "/F"]]
    else:
        raise _unknown(backend)
    return plan


def apply(plan: Plan, run: Runner = run_command) -> Plan:
    """Write the files, replace the crontab, run the commands, remove the files; each step noted
    in `done`. A command that fails is a problem, not an exception: the rest still runs (an
    uninstall must remove the files even when `systemctl` is gone)."""
    from vaultmem.store.files import atomic_write

    for argv in plan.first:
        run(argv, None)
    for path, text in plan.write.items():
        target = Path(path)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            atomic_write(target, text)
            plan.done.append(f"wrote {path}")
    if plan.crontab is not None:
        code, out = run(["crontab", "-"], plan.crontab)
        (plan.done if code == 0 else plan.problems).append("crontab updated" if code == 0 else f"crontab -: {out}")
    for argv in plan.run:
        _run_step(plan, run, argv)
    for path in plan.remove:
        Path(path).unlink(missing_ok=True)
        plan.done.append(f"removed {path}")
    for argv in plan.then:
        _run_step(plan, run, argv)
    return plan


def _run_step(plan: Plan, run: Runner, argv: list[str]) -> None:
    code, out = run(argv, None)
    if code == 0:
        plan.done.append(f"ran {shlex.join(argv)}")
    else:
        plan.problems.append(f"{shlex.join(argv)} exited {code}: {out}")


def status(vault_root: Path, backend: str, run: Runner = run_command) -> dict:
    """Whether this vault's job is installed with `backend`, where, and what it runs."""
    job = job_name(vault_root)
    info: dict = {"backend": backend, "job": job, "installed": False, "where": None, "detail": None}
    if backend == "systemd":
        timer = _systemd_dir() / f"{job}.timer"
        info.update(installed=timer.exists(), where=str(timer))
        if timer.exists():
            code, out = run(["systemctl", "--user", "is-enabled", f"{job}.timer"], None)
            info["detail"] = out if out else ("enabled" if code == 0 else "not enabled")
    elif backend == "cron":
        line = next((line for line in _crontab_lines(run) if line.rstrip().endswith(f"# {job}")), None)
        info.update(installed=line is not None, where="crontab", detail=line)
    elif backend == "launchd":
        path = _launchd_path(job)
        info.update(installed=path.exists(), where=str(path))
    elif backend == "schtasks":
        code, out = run(["schtasks", "/Query", "/TN", job], None)
        info.update(installed=code == 0, where=job, detail=out if code == 0 else None)
    else:
        raise _unknown(backend)
    return info


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _unknown(backend: str):
    from vaultmem.errors import BadInput

    return BadInput(f"unknown scheduler {backend!r}; use one of: {', '.join(BACKENDS)}")
