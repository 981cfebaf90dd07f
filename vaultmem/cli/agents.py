"""Agent integration commands: Claude Code hooks, the skill file, the MCP server, import and export."""

from __future__ import annotations

import click

from vaultmem.cli.common import _vault, common
from vaultmem.errors import EXIT_BAD_INPUT, EXIT_CONFLICT

# ---------------------------------------------------------------- the MCP server (`vaultmem mcp`)

@click.command()
@common
def mcp(out, vault_path):
    """Serve the vault to an agent over MCP (stdio): recall, get, list, add, learn, grade,
    review, prompt, correct and why as typed tools. Needs `pip install 'vaultmem[mcp]'`.

    Runs until the client closes stdin. The vault is chosen like every command's.

    Example: claude mcp add vaultmem -- vaultmem mcp --vault ~/vaults/agent
    """
    from vaultmem.errors import BadInput

    try:
        from vaultmem.integrations.mcp_server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic", "anyio"):
            raise
        raise BadInput("the MCP server needs the mcp package: pip install 'vaultmem[mcp]'") from exc
    serve(vault_path)


# ---------------------------------------------------------------- import and export (`vaultmem import`, `export`)

@click.command(name="import")
@click.argument("path", type=click.Path(exists=False))
@click.option("-n", "--namespace", help="Put everything under this namespace; the source's own namespaces "
                                         "become sub-namespaces of it (exported vaultmem notes keep their paths).")
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "agentmemory-sr", "skillmem", "agent-brain", "markdown", "claude-md",
                                 "jsonl"]),
              help="What PATH is (auto: from its name and content).")
@click.option("--dry-run", is_flag=True, help="Say what would be imported; write nothing.")
@click.option("--redact", is_flag=True, help="Import a memory holding a secret with it masked, instead of skipping it.")
@common
def import_(path, namespace, fmt, dry_run, redact, out, vault_path):
    """Import memories from another store: an agentmemory-sr SQLite file, a skillmem
    export folder (or its memory.db), an Agent Brain memory.json or SQLite file, a
    CLAUDE.md (one memory per bullet), a folder of markdown notes (one per note), or
    a `vaultmem export --jsonl` file (every note file recreated exactly).

    Every memory records where it came from in `source`. A repeat, or a memory the
    vault already has, is merged instead of written twice; a memory holding a secret
    is skipped (or masked with --redact). Prints counts: added, merged, skipped (with
    the reason), errors. Exit code 2 when any record failed, 3 when an exported note
    exists in the vault with other text (a conflict, left as it is).

    \b
    Examples:
      vaultmem import ~/.agentmemory/memory.db
      vaultmem import ./CLAUDE.md -n projects/api --dry-run
      vaultmem import backup.jsonl --vault ~/vaults/new
    """
    from vaultmem.integrations.importers.run import run_import

    vault = _vault(vault_path)
    report = run_import(vault, path, fmt=fmt, namespace=namespace, dry_run=dry_run, redact=redact)
    out.emit(report.to_dict(), report.summary())
    if report.errors:
        click.get_current_context().exit(EXIT_BAD_INPUT)
    if report.conflicts:
        click.get_current_context().exit(EXIT_CONFLICT)


@click.command()
@click.option("--jsonl", "as_jsonl", is_flag=True, default=True,
              help="One JSON object per note: path, text (the whole file) and id, namespace, type, status, tier "
                   "(the only format; the default).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@common
def export(as_jsonl, output, out, vault_path):
    """Dump every note, archived and superseded ones too, as JSON lines, then the review and
    archive logs (the grades' history). Importing the file into an empty vault (`vaultmem
    import FILE`) gives back the same files and logs.

    \b
    Examples:
      vaultmem export --jsonl > backup.jsonl
      vaultmem export --jsonl -o backup.jsonl
    """
    import sys

    from vaultmem.integrations.exporters import write_export

    vault = _vault(vault_path)
    count, left_out, logged = write_export(vault, output, stream=None if output else sys.stdout)
    if not out.quiet:
        for item in left_out:
            click.echo(f"vaultmem: warning: left out {item['path']}: {item['problem']}", err=True)
    if output and out.as_json:
        out.emit({"exported": count, "log_lines": logged, "output": output, "left_out": left_out})
    elif not out.quiet:
        click.echo(f"exported {count} notes and {logged} lines of the review and archive logs"
                   + (f" to {output}" if output else ""), err=True)


# ---------------------------------------------------------------- Claude Code hooks and the skill file
# (`vaultmem hooks install|uninstall|status`, `vaultmem hook EVENT`, `vaultmem install-skill DIR`;
#  the work is in integrations/claude_code.py, claude_settings.py and skill.py; the CLI hands them
#  what only it knows: the command checker and the commands' syntax, from cli/command_check.py)


def _settings_target(user, project, local, settings):
    from pathlib import Path

    from vaultmem.errors import BadInput
    from vaultmem.integrations.claude_settings import project_settings_path, user_settings_path

    if sum(bool(x) for x in (user, project, local, settings)) > 1:
        raise BadInput("choose one of --user, --project, --local and --settings")
    if settings:
        return Path(settings).expanduser()
    if project or local:
        return project_settings_path(local=local)
    return user_settings_path()


def _settings_options(func):
    func = click.option("--settings", "settings", type=click.Path(dir_okay=False),
                         help="This settings file instead.")(func)
    func = click.option("--local", is_flag=True,
                         help="The project's .claude/settings.local.json (personal, not committed).")(func)
    func = click.option("--project", is_flag=True,
                         help="The project's .claude/settings.json (the current folder's; shared with the team).")(func)
    func = click.option("--user", is_flag=True,
                         help="~/.claude/settings.json: every project on this machine (the default).")(func)
    func = click.option("--claude-code", "claude_code", is_flag=True, default=True,
                         help="Claude Code's settings (the only agent supported so far).")(func)
    return func


@click.group()
def hooks():
    """Install vaultmem's hooks into Claude Code: memories at session start, recall on
    every prompt, capture at the end of a turn, and a check of vaultmem commands.

    \b
    Example: vaultmem hooks install --claude-code
             vaultmem hooks install --claude-code --project --dry-run
             vaultmem hooks uninstall --claude-code
    """


def _report_change(out, change, verb: str, dry_run: bool) -> None:
    data = dict(change.to_dict(), dry_run=dry_run)
    if dry_run:
        human = (f"would write {change.path}:\n{change.text.rstrip()}" if change.changed
                 else f"{change.path}: nothing to change")
    elif change.changed:
        human = f"{verb}: {change.path}" + (f" (previous version kept as {change.backup})" if change.backup else "")
    else:
        human = f"{change.path}: nothing to change"
    if change.events and not dry_run:
        human += "\nhooks: " + ", ".join(change.events)
    if change.disabled_all:
        human += "\nnote: this file sets disableAllHooks, so Claude Code runs no hooks"
    out.emit(data, human)


@hooks.command(name="install")
@_settings_options
@click.option("--command", "command", default=None,
              help="How the hooks run vaultmem, e.g. `vaultmem` when it is on every PATH "
                   "(default: this Python by absolute path, `python -m vaultmem`).")
@click.option("--core-only", is_flag=True,
              help="SessionStart injects only the core memories (L2, L3), not the learning and review queues.")
@click.option("--dry-run", is_flag=True, help="Show the settings file it would write; write nothing.")
@common
def hooks_install(claude_code, user, project, local, settings, command, core_only, dry_run, out, vault_path):
    """Merge vaultmem's hooks into a Claude Code settings file.

    Other hooks and settings are kept as they are; running it again changes
    nothing; the previous file is kept as settings.json.vaultmem-backup.
    With --vault the hooks always use that vault; without, each session's
    vault is found from its folder like any command's. The default command
    names this machine's Python: for a --project file shared with a team,
    consider --local, or --command vaultmem.

    Example: vaultmem hooks install --claude-code --user
    """
    from vaultmem.integrations.claude_settings import install

    target = _settings_target(user, project, local, settings)
    _report_change(out, install(target, command=command, vault=vault_path, dry_run=dry_run, core_only=core_only),
                   "installed", dry_run)


@hooks.command(name="uninstall")
@_settings_options
@click.option("--dry-run", is_flag=True, help="Show the settings file it would write; write nothing.")
@common
def hooks_uninstall(claude_code, user, project, local, settings, dry_run, out, vault_path):
    """Remove exactly the hooks `vaultmem hooks install` added; nothing else changes.

    Example: vaultmem hooks uninstall --claude-code --user
    """
    from vaultmem.integrations.claude_settings import uninstall

    target = _settings_target(user, project, local, settings)
    _report_change(out, uninstall(target, dry_run=dry_run), "uninstalled", dry_run)


@hooks.command(name="status")
@click.option("--claude-code", "claude_code", is_flag=True, default=True,
              help="Claude Code's settings (the only agent supported so far).")
@common
def hooks_status(claude_code, out, vault_path):
    """Which Claude Code settings files have vaultmem's hooks, and which are switched off.

    Example: vaultmem hooks status --claude-code --json
    """
    import os

    from vaultmem.integrations import claude_code as cc
    from vaultmem.integrations import claude_settings as cs

    files = []
    for scope, path in (("user", cs.user_settings_path()), ("project", cs.project_settings_path()),
                        ("local", cs.project_settings_path(local=True))):
        try:
            events = cs.installed_events(cs.read_settings(path)[0]) if path.exists() else {}
            problem = None
        except Exception as exc:  # noqa: BLE001 - a broken file is reported, not fatal
            events, problem = {}, str(exc)
        files.append({"scope": scope, "settings": str(path), "exists": path.exists(), "hooks": events,
                      "problem": problem})
    off = [spec.name for spec in cc.HOOKS if cc.is_disabled(spec, os.environ)]
    lines = [f"{f['scope']:8} {f['settings']}: "
             + (f"problem: {f['problem']}" if f["problem"] else
                ", ".join(f["hooks"]) if f["hooks"] else ("no vaultmem hooks" if f["exists"] else "no file"))
             for f in files]
    lines.append("switched off: " + (", ".join(off) if off else "none"))
    out.emit({"files": files, "disabled": off}, "\n".join(lines))


# Unknown events and options are ignored, not usage errors: exit 2 from a PreToolUse
# hook would block every Bash command (say, after a downgrade of vaultmem).
@click.command(name="hook", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("event", required=False, default="")
@click.option("--vault", "vault_path", type=click.Path(file_okay=False), default=None, help="The vault folder.")
@click.option("--core-only", is_flag=True, help="SessionStart: only the core memories (L2, L3).")
def hook(event, vault_path, core_only):
    """Run one Claude Code hook: reads the event's JSON on stdin, prints what Claude Code reads.

    EVENT is session-start, user-prompt-submit, pre-tool-use, stop or
    session-end (default: the input's hook_event_name). Called by the entries `vaultmem hooks install` writes. Fails
    open: on any problem, an unknown event, or past its time budget it prints
    nothing and exits 0. Switch hooks off with VAULTMEM_HOOKS=off, or one with
    VAULTMEM_HOOK_SESSION_START, VAULTMEM_HOOK_USER_PROMPT, VAULTMEM_HOOK_STOP
    (Stop and SessionEnd) or VAULTMEM_HOOK_PRE_TOOL set to off.

    Example: echo '{"prompt": "how do we deploy", "cwd": "."}' | vaultmem hook user-prompt-submit
    """
    import functools

    from vaultmem.cli.command_check import check_command
    from vaultmem.integrations import claude_code as cc
    from vaultmem.integrations.claude_code import main

    root = click.get_current_context().find_root().command
    main(event, vault_path, check=functools.partial(check_command, root=root, vault=vault_path),
         options=frozenset([cc.CORE_ONLY] if core_only else []))


@click.command(name="install-skill")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Replace a SKILL.md there that is not vaultmem's.")
@common
def install_skill(folder, force, out, vault_path):
    """Write the vaultmem SKILL.md: when to recall, how to grade, the exact command syntax.

    For Claude Code: ~/.claude/skills/vaultmem (every project) or
    .claude/skills/vaultmem (this project); a folder named `skills` gets a
    vaultmem/ folder inside.

    Example: vaultmem install-skill ~/.claude/skills/vaultmem
    """
    from vaultmem.cli.command_check import synopses
    from vaultmem.integrations.skill import SKILL_COMMANDS
    from vaultmem.integrations.skill import install_skill as write_skill

    root = click.get_current_context().find_root().command
    path, changed = write_skill(folder, synopses(root, SKILL_COMMANDS), force=force)
    out.emit({"skill": str(path), "changed": changed}, f"{'wrote' if changed else 'unchanged'}: {path}")


COMMANDS = (mcp, import_, export, hooks, hook, install_skill)
