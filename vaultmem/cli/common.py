"""What every command shares: the error-to-exit-code edge, --vault/--json/-q, and output helpers.

Errors become exit codes in one place, `VaultmemGroup.invoke`: every command
(those of subgroups such as `hooks` too) runs inside it. `common` only records
the command's -q where that place can see it (the context's shared `meta`).
"""

from __future__ import annotations

import functools
import math
import os
import sqlite3

import click

from vaultmem.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, VaultmemError

# ctx.meta key (meta is shared by every context of one invocation): -q given before or after the command.
QUIET = "vaultmem.quiet"
# What SQLite says of a file that is damaged or not a database at all (not of a lock or a full disk).
DAMAGED_DATABASE = ("database disk image is malformed", "file is not a database")


class VaultmemGroup(click.Group):
    """Turns vaultmem's errors into one line on stderr and their exit code, never a traceback:
    VaultmemError -> its exit_code, Ctrl-C -> EXIT_INTERRUPTED, anything else -> EXIT_INTERNAL.
    A command's usage error (a bad option value, a missing argument) is click's message on one
    line, naming the command's --help, with exit 2 (click printed the usage and a hint around it)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except VaultmemError as exc:
            _fail(ctx, str(exc), exc.exit_code)
        except click.UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError" or exc.ctx is None:
                raise  # `vaultmem hooks` alone: its help, as click shows it
            path = exc.ctx.command_path
            where = f"{path.split(' ', 1)[1]}: " if " " in path else ""
            _fail(ctx, f"{where}{exc.format_message()} (`{path} --help` shows the syntax)", exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            _fail(ctx, "interrupted", EXIT_INTERRUPTED)
        except Exception as exc:  # noqa: BLE001 - the promise is one line, not a traceback
            if os.environ.get("VAULTMEM_DEBUG"):
                raise
            if isinstance(exc, sqlite3.DatabaseError) and str(exc) in DAMAGED_DATABASE:
                # The catalog's SQLite file (the only database vaultmem keeps) is derived from the notes.
                _fail(ctx, f"the vault's catalog (.vaultmem/cache/catalog.sqlite) is damaged ({exc}); run "
                      "`vaultmem reindex` to make it again from the notes, which are untouched", EXIT_INTERNAL)
            _fail(ctx, f"internal error: {type(exc).__name__}: {exc} (set VAULTMEM_DEBUG=1 for the traceback)",
                  EXIT_INTERNAL)


class Number(click.FloatRange):
    """click's FloatRange, refusing nan and infinity too: every comparison with nan is false,
    so a plain range let `--min-score nan` through."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if number is not None and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def _fail(ctx, message: str, code: int):
    if not _quiet(ctx):
        click.echo(f"vaultmem: {message}", err=True)
    ctx.exit(code)


def _quiet(ctx) -> bool:
    if ctx.meta.get(QUIET):
        return True
    while ctx is not None:
        if ctx.params.get("quiet"):
            return True
        ctx = ctx.parent
    return False


def common(func):
    """--vault, --json and -q on every command (also accepted before the command)."""
    @click.option("--vault", "vault_path", type=click.Path(file_okay=False), default=None,
                  help="The vault folder (default: $VAULTMEM_VAULT, the nearest folder with .vaultmem/, "
                       "or the user's default vault).")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON for agents.")
    @click.option("-q", "--quiet", is_flag=True, help="Print nothing; the exit code says how it went.")
    @functools.wraps(func)
    def wrapper(*args, vault_path=None, as_json=False, quiet=False, **kwargs):
        ctx = click.get_current_context()
        # the group's options, and the top's for a sub-group's command (`vaultmem --vault V git install`)
        parent = {**ctx.find_root().params, **(ctx.parent.params if ctx.parent else {})}
        out = Output(as_json or parent.get("as_json", False), quiet or parent.get("quiet", False))
        ctx.meta[QUIET] = out.quiet  # for VaultmemGroup.invoke, which turns errors into exit codes
        return func(*args, out=out, vault_path=vault_path or parent.get("vault_path"), **kwargs)

    return wrapper


class Output:
    def __init__(self, as_json: bool, quiet: bool):
        self.as_json = as_json
        self.quiet = quiet

    def emit(self, data, human: str | None = None) -> None:
        if self.quiet:
            return
        if self.as_json:
            from vaultmem.cli.output import to_json

            click.echo(to_json(data))
        elif human is not None:
            click.echo(human.rstrip("\n"))


def _vault(vault_path):
    from vaultmem.vault import Vault

    return Vault.open(vault_path)


def _vault_root(vault_path):
    """The vault's folder without opening it (no config, no catalog): enough to hand a
    write to the watcher. A folder that is no vault yet goes through `_vault` (which
    creates the default vault or says what to do)."""
    from vaultmem.store.discovery import STATE_DIR, discover

    root = discover(vault_path)
    return root if (root / STATE_DIR).is_dir() else _vault(vault_path).root


def _warn_problems(vault, out) -> None:
    from vaultmem.cli.output import warn_skipped

    if not out.quiet:
        warn_skipped(vault.catalog().problems)


def _note_json(note, now, config, extra: dict | None = None) -> dict:
    from vaultmem.core.present import note_dict

    return note_dict(note, now, config, extra)


from vaultmem.cli.output import short as _short  # noqa: E402,F401 - shared with the light recall path
from vaultmem.cli.output import table as _table  # noqa: E402,F401


def _note_rows(notes, now, config):
    from vaultmem.core.schedule import label

    return [[n.id, n.namespace, n.status, n.tier, f"{n.strength:.2f}", label(n, now, config), _short(n.title, 50)]
            for n in notes]


NOTE_HEADERS = ["ID", "NAMESPACE", "STATUS", "TIER", "STRENGTH", "LABEL", "TITLE"]


def _parse_created(value):
    if value is None:
        return None
    from vaultmem.timefmt import parse_datetime

    return parse_datetime(value, what="--created")


def _split_tags(values) -> list[str]:
    tags = []
    for value in values or ():
        tags.extend(t for t in value.replace(",", " ").split() if t)
    return tags

def _emit_added(out, data: dict, verb: str) -> None:
    """Print what an add did (`data`: service.writes.added_data, made here or by the watcher)."""
    if data["action"] == "recurrence":
        human = f"already known: {data['id']}  {data['path']} (recorded as a recurrence; {data['reason']})"
    else:
        human = f"{verb} {data['id']}  {data['path']}"
        for other in data["superseded"]:
            human += f"\nsupersedes {other}"
        for other in data["contested"]:
            human += f"\ncontested with {other} (both marked contested: true)"
        if data["redacted_kinds"]:
            human += f"\nredacted: {', '.join(data['redacted_kinds'])} masked"
    out.emit(data, human)
