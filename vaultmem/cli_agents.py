"""Agent integration commands: Claude Code hooks, the skill file, the MCP server, import and export."""

from __future__ import annotations

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
