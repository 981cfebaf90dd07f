"""The names people's scripts and CLAUDE.md rules already use (agentmemory-sr, skillmem,
Agent Brain, agent-memory), as aliases or small commands over vaultmem's own operations.

An alias is the same command under another name (one implementation; its help
says what it stands for). The small commands each make one library call:

| name | stands for |
|---|---|
| `search QUERY` | `recall QUERY` |
| `import-vault PATH` | `import PATH` |
| `success ID` | `grade ID good` |
| `skills` | the skills, strongest first, strength drawn as a bar |
| `tags [PREFIX]` | every tag with its count; a prefix takes `a` and `a/b` |
| `export-all DIR` | every note file (archived and superseded too) copied into DIR, paths kept |
| `supersede OLD NEW` | OLD is superseded by NEW (both exist) |
"""

from __future__ import annotations

import copy
import inspect

import click

from vaultmem.cli.common import _note_json, _short, _table, _vault, _warn_problems, common
from vaultmem.errors import EXIT_CONFLICT

BAR_WIDTH = 10


def alias(command: click.Command, name: str) -> click.Command:
    """`command` under another name: the same callback and options, its help saying what it stands for."""
    twin = copy.copy(command)
    twin.name = name
    twin.short_help = f"Same as `{command.name}` (the name other memory tools use)."
    # The command's docstring cleaned first: below a new first line its indentation would show.
    twin.help = (f"Same as `vaultmem {command.name}` (the name other memory tools use).\n\n"
                 f"{inspect.cleandoc(command.help or '')}")
    return twin


def strength_bar(strength: float, width: int = BAR_WIDTH) -> str:
    """Strength 0-1 as a bar of `width` cells (skillmem's `skills-top` shows one too)."""
    filled = max(0, min(width, round(strength * width)))
    return "█" * filled + "░" * (width - filled)


@click.command()
@click.argument("note_id")
@click.option("-c", "--comment", help="Why: kept in the review log.")
@common
def success(note_id, comment, out, vault_path):
    """The memory helped: same as `vaultmem grade ID good`.

    Example: vaultmem success k3f9x2ab
    """
    from vaultmem.clock import now as clock_now

    vault = _vault(vault_path)
    note = vault.grade(note_id, "good", comment)
    out.emit(_note_json(note, clock_now(), vault.config), f"graded {note.id} good: strength {note.strength:.2f}")


@click.command()
@click.option("-n", "--namespace", help="Only this namespace (and the ones below it).")
@click.option("--all", "include_hidden", is_flag=True, help="Include archived, suspended and superseded skills.")
@common
def skills(namespace, include_hidden, out, vault_path):
    """The skills, strongest first, with strength drawn as a bar.

    Example: vaultmem skills -n work
    """
    from vaultmem.clock import now as clock_now
    from vaultmem.core.model import in_namespace
    from vaultmem.core.schedule import label

    vault = _vault(vault_path)
    now = clock_now()
    found = [n for n in vault.notes(include_hidden) if n.type == "skill" and in_namespace(n.namespace, namespace)]
    _warn_problems(vault, out)
    found.sort(key=lambda n: (-n.strength, n.title))
    rows = [[n.id, strength_bar(n.strength), f"{n.strength:.2f}", label(n, now, vault.config), n.namespace,
             _short(n.title, 50)] for n in found]
    human = _table(rows, ["ID", "STRENGTH", "", "LABEL", "NAMESPACE", "TITLE"]) if rows else "no skills yet"
    out.emit([_note_json(n, now, vault.config, {"bar": strength_bar(n.strength)}) for n in found], human)


@click.command()
@click.argument("prefix", required=False, default="")
@click.option("--all", "include_hidden", is_flag=True, help="Count archived, suspended and superseded notes too.")
@common
def tags(prefix, include_hidden, out, vault_path):
    """Every tag with how many notes have it; PREFIX takes the tag and the ones below
    it (`infra` takes `infra` and `infra/db`) and tags that start with it.

    Example: vaultmem tags infra
    """
    from collections import Counter

    vault = _vault(vault_path)
    wanted = prefix.strip().lstrip("#").casefold()
    counts = Counter(tag for note in vault.notes(include_hidden) for tag in set(note.tags)
                     if tag.casefold().startswith(wanted))
    _warn_problems(vault, out)
    found = sorted(counts.items(), key=lambda item: (item[0].casefold(), item[0]))
    human = _table([[tag, str(count)] for tag, count in found], ["TAG", "NOTES"]) if found else (
        f"no tags starting with {prefix!r}" if prefix else "no tags yet")
    out.emit([{"tag": tag, "notes": count} for tag, count in found], human)


@click.command(name="export-all")
@click.argument("folder", type=click.Path(file_okay=False))
@common
def export_all(folder, out, vault_path):
    """Copy every note file (archived and superseded too) into FOLDER, paths kept;
    `vaultmem import FOLDER` into an empty vault gives back the same files. A file already
    in FOLDER with other text is never replaced: it is named, and the exit code is 3.

    Example: vaultmem export-all ~/backups/agent-notes
    """
    from vaultmem.integrations.exporters import export_folder

    vault = _vault(vault_path)
    count, left_out = export_folder(vault, folder)
    if not out.quiet:
        for item in left_out:
            click.echo(f"vaultmem: warning: left out {item['path']}: {item['problem']}", err=True)
    out.emit({"exported": count, "folder": folder, "left_out": left_out}, f"exported {count} notes to {folder}")
    if any(item.get("conflict") for item in left_out):  # the folder is no copy of the vault: say so, as import does
        click.get_current_context().exit(EXIT_CONFLICT)


@click.command()
@click.argument("old_id")
@click.argument("new_id")
@click.option("--reason", default="superseded by hand", show_default=True, help="Why: kept on the ledger.")
@common
def supersede(old_id, new_id, reason, out, vault_path):
    """OLD is superseded by NEW, two notes that exist: OLD leaves recall (`recall --history`
    still finds it) and both link to each other. `correct` writes the new one for you.

    Example: vaultmem supersede k3f9x2ab m4n5p6q7
    """
    from vaultmem.clock import now as clock_now
    from vaultmem.ops.corrections import supersede_pair

    vault = _vault(vault_path)
    vault.screen_names(reason=reason)
    old, new = supersede_pair(vault, old_id, new_id, reason)
    now = clock_now()
    out.emit({"superseded": _note_json(old, now, vault.config), "by": _note_json(new, now, vault.config)},
             f"{old.id} superseded by {new.id}")


def aliases(cli: click.Group) -> tuple[click.Command, ...]:
    """The aliases of commands the group already has."""
    return alias(cli.commands["recall"], "search"), alias(cli.commands["import"], "import-vault")


COMMANDS = (success, skills, tags, export_all, supersede)
