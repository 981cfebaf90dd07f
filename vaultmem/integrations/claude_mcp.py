"""Registering `vaultmem mcp` with Claude Code, for `vaultmem init --claude-code`.

- Project scope: the server goes into the project's `.mcp.json` (the file Claude
  Code reads for a project and a team can commit), merged: other servers and keys
  are kept, a second run changes nothing.
- User and local scope: Claude Code keeps these in its own `~/.claude.json`,
  which it rewrites while running, so vaultmem asks the `claude` program
  (`claude mcp add --scope user|local vaultmem -- ... mcp`) rather than editing the
  file; an existing `vaultmem` server is left as it is. Without `claude` on PATH
  the command to run is returned instead.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from vaultmem.integrations.scheduler import Runner, run_command

SERVER_NAME = "vaultmem"


@dataclass
class McpRegistration:
    scope: str
    changed: bool
    how: str  # the file written, or the command run (or to run)
    todo: str | None = None  # a command the person has to run (no `claude` program found)

    def to_dict(self) -> dict:
        return {"scope": self.scope, "changed": self.changed, "how": self.how, "todo": self.todo}


def server_argv(vault_root: Path, command: str | None = None) -> list[str]:
    base = shlex.split(command) if command else [sys.executable, "-m", "vaultmem"]
    return [*base, "mcp", "--vault", str(Path(vault_root).resolve())]


def register(vault_root: Path, scope: str = "user", project: Path | None = None, command: str | None = None,
             dry_run: bool = False, run: Runner = run_command) -> McpRegistration:
    argv = server_argv(vault_root, command)
    if scope == "project":
        return _project_file((project or Path.cwd()) / ".mcp.json", argv, dry_run)
    add = ["claude", "mcp", "add", "--scope", scope, SERVER_NAME, "--", *argv]
    if shutil.which("claude") is None:
        return McpRegistration(scope, False, shlex.join(add), todo=shlex.join(add))
    code, _out = run(["claude", "mcp", "get", SERVER_NAME], None)
    if code == 0:
        return McpRegistration(scope, False, f"claude mcp get {SERVER_NAME}: already registered")
    if dry_run:
        return McpRegistration(scope, True, shlex.join(add))
    code, out = run(add, None)
    if code != 0:
        from vaultmem.errors import BadInput

        raise BadInput(f"`{shlex.join(add)}` failed ({out.splitlines()[-1] if out else f'exit {code}'}); "
                       "run it yourself once Claude Code is set up")
    return McpRegistration(scope, True, shlex.join(add))


def _project_file(path: Path, argv: list[str], dry_run: bool) -> McpRegistration:
    from vaultmem.errors import BadInput
    from vaultmem.store.files import atomic_write

    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path} is not valid JSON ({exc}); fix it by hand, then run this again") from None
    servers = data.get("mcpServers", {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise BadInput(f"{path}: \"mcpServers\" is not an object; fix it by hand, then run this again")
    wanted = {"type": "stdio", "command": argv[0], "args": argv[1:]}
    if servers.get(SERVER_NAME) == wanted:
        return McpRegistration("project", False, str(path))
    new = dict(data, mcpServers=dict(servers, **{SERVER_NAME: wanted}))
    if not dry_run:
        atomic_write(path, json.dumps(new, indent=2, ensure_ascii=False) + "\n")
    return McpRegistration("project", True, str(path))
