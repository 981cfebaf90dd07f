"""Agent integration commands: Claude Code hooks, the skill file, the MCP server, import and export."""

from __future__ import annotations

import click

from .cli import cli, common


# ---------------------------------------------------------------- the MCP server (`vaultmem mcp`)

@cli.command()
@common
def mcp(out, vault_path):
    """Serve the vault to an agent over MCP (stdio): recall, get, list, add, learn, grade,
    review, prompt, correct and why as typed tools. Needs `pip install 'vaultmem[mcp]'`.

    Runs until the client closes stdin. The vault is chosen like every command's.

    Example: claude mcp add vaultmem -- vaultmem mcp --vault ~/vaults/agent
    """
    from .errors import BadInput

    try:
        from .integrations.mcp_server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic", "anyio"):
            raise
        raise BadInput("the MCP server needs the mcp package: pip install 'vaultmem[mcp]'") from exc
    serve(vault_path)


# ---------------------------------------------------------------- import and export (`vaultmem import`, `export`)

@cli.command(name="import")
@click.argument("path", type=click.Path(exists=False))
@click.option("-n", "--namespace", help="Put everything under this namespace; the source's own namespaces "
                                         "become sub-namespaces of it.")
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
    from .integrations.importers import run_import

    vault = _vault_for_import(vault_path)
    report = run_import(vault, path, fmt=fmt, namespace=namespace, dry_run=dry_run, redact=redact)
    out.emit(report.to_dict(), report.summary())
    if report.errors:
        click.get_current_context().exit(2)
    if report.conflicts:
        click.get_current_context().exit(3)


@cli.command()
@click.option("--jsonl", "as_jsonl", is_flag=True, default=True,
              help="One JSON object per note: path, text (the whole file) and id, namespace, type, status, tier "
                   "(the only format; the default).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@common
def export(as_jsonl, output, out, vault_path):
    """Dump every note, archived and superseded ones too, as JSON lines. Importing the
    file into an empty vault (`vaultmem import FILE`) gives back the same files.

    \b
    Examples:
      vaultmem export --jsonl > backup.jsonl
      vaultmem export --jsonl -o backup.jsonl
    """
    import sys

    from .integrations.exporters import write_export

    vault = _vault_for_import(vault_path)
    if output:
        count = write_export(vault, output)
        if out.as_json:
            out.emit({"exported": count, "output": output})
        elif not out.quiet:
            click.echo(f"exported {count} notes to {output}", err=True)
    else:
        count = write_export(vault, stream=sys.stdout)
        if not out.quiet and not out.as_json:
            click.echo(f"exported {count} notes", err=True)


def _vault_for_import(vault_path):
    from .vault import Vault

    return Vault.open(vault_path)
