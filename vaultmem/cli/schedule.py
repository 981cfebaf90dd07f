"""`vaultmem schedule install|uninstall|status`: the daily decay, run by the system's scheduler
(the work is in integrations/scheduler.py; when decay last ran is ops/upkeep.py)."""

from __future__ import annotations

import click

from vaultmem.cli.common import _vault, common
from vaultmem.integrations.scheduler import BACKENDS, DEFAULT_AT


def _vault_of(vault_path):
    """The vault: this command's --vault, else the one given before `schedule` (`vaultmem --vault V schedule ...`)."""
    return _vault(vault_path or click.get_current_context().find_root().params.get("vault_path"))


def _backend_option(func):
    return click.option("--backend", type=click.Choice(BACKENDS), default=None,
                        help="The scheduler (default: systemd or cron on Linux, launchd on macOS, "
                             "schtasks on Windows).")(func)


@click.group()
def schedule():
    """Run `vaultmem decay` every day without anyone asking: a systemd user timer or a
    crontab line on Linux, a launchd agent on macOS, a scheduled task on Windows.

    \b
    Example: vaultmem schedule install --at 03:30
             vaultmem schedule status
             vaultmem schedule uninstall
    """


@schedule.command(name="install")
@_backend_option
@click.option("--at", "at", default=DEFAULT_AT, show_default=True, help="Time of day, HH:MM (local time).")
@click.option("--dry-run", is_flag=True, help="Show the files and commands; write and run nothing.")
@common
def schedule_install(backend, at, dry_run, out, vault_path):
    """Install the daily decay of this vault (again: replaces it, still one job).

    Example: vaultmem schedule install --vault ~/vaults/agent
    """
    from vaultmem.integrations import scheduler

    vault = _vault_of(vault_path)
    plan = scheduler.plan_install(vault.root, backend or scheduler.detect(), at)
    _finish(out, plan if dry_run else scheduler.apply(plan), dry_run, "installed")


@schedule.command(name="uninstall")
@_backend_option
@click.option("--dry-run", is_flag=True, help="Show the files and commands; write and run nothing.")
@common
def schedule_uninstall(backend, dry_run, out, vault_path):
    """Remove exactly what `schedule install` made for this vault.

    Example: vaultmem schedule uninstall
    """
    from vaultmem.integrations import scheduler

    vault = _vault_of(vault_path)
    plan = scheduler.plan_uninstall(vault.root, backend or scheduler.detect())
    _finish(out, plan if dry_run else scheduler.apply(plan), dry_run, "uninstalled")


@schedule.command(name="status")
@_backend_option
@common
def schedule_status(backend, out, vault_path):
    """Whether this vault's daily decay is installed, and when decay last ran (by whom).

    Example: vaultmem schedule status --json
    """
    from vaultmem.integrations import scheduler
    from vaultmem.ops.upkeep import read_stamp

    vault = _vault_of(vault_path)
    info = scheduler.status(vault.root, backend or scheduler.detect())
    stamp = read_stamp(vault)
    info["last_decay"] = {k: stamp.get(k) for k in ("last_run", "by", "changed")} if stamp.get("last_run") else None
    state = "installed" if info["installed"] else "not installed"
    human = f"{info['backend']} {info['job']}: {state}" + (f" ({info['where']})" if info["installed"] else "")
    if info.get("detail"):
        human += f"\n  {info['detail']}"
    last = info["last_decay"]
    human += (f"\nlast decay: {last['last_run']} by {last['by']}, {last['changed']} notes changed" if last
              else "\nlast decay: never recorded")
    out.emit(info, human)


def _finish(out, plan, dry_run: bool, verb: str) -> None:
    from vaultmem.errors import EXIT_BAD_INPUT

    data = dict(plan.to_dict(), dry_run=dry_run)
    if dry_run:
        lines = [f"would write {path}" for path in plan.write] + [f"would remove {path}" for path in plan.remove]
        lines += [f"would run {step}" for step in data["run"]]
        if plan.crontab is not None:
            lines.append("would set the crontab to:\n" + plan.crontab.rstrip())
        human = "\n".join(lines) or "nothing to change"
    else:
        human = f"{verb} {plan.job} ({plan.backend})" if plan.done else f"{plan.job} ({plan.backend}): nothing to do"
        human += "".join(f"\n  {step}" for step in plan.done)
        human += "".join(f"\n  problem: {problem}" for problem in plan.problems)
    out.emit(data, human)
    if plan.problems and not dry_run:
        click.get_current_context().exit(EXIT_BAD_INPUT)


COMMANDS = (schedule,)
