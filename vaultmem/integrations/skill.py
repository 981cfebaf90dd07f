"""The skill file: SKILL.md for a Claude Code skills folder (`vaultmem install-skill`).

The template (integrations/SKILL.md) says when to recall and how to grade;
the exact syntax of the commands it names is filled in from the CLI itself
(command_check.synopsis), so it cannot drift from the real options. Apart
from the hooks: a skill is read by the agent, not run by Claude Code.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from vaultmem.integrations.command_check import synopsis


def skill_text() -> str:
    """SKILL.md: when to recall, how to grade, and the exact syntax of the commands it names."""
    from importlib.resources import files

    from vaultmem.cli.main import cli

    template = files("vaultmem.integrations").joinpath("SKILL.md").read_text(encoding="utf-8")
    lines = []
    for name in ("recall", "add", "learn", "grade", "grade-batch", "correct", "show", "review", "prompt", "list"):
        command = cli.commands.get(name)
        if command is not None:
            lines.append(f"    {synopsis(command, ['vaultmem', name])}")
    return template.replace("{{commands}}", "\n".join(lines))


def install_skill(folder: str | os.PathLike, force: bool = False) -> tuple[Path, bool]:
    """Write SKILL.md into `folder` (into `folder/vaultmem/` when `folder` is a `skills` folder).

    Returns (path, changed). A SKILL.md that is not vaultmem's is kept unless `force`.
    """
    from vaultmem.errors import BadInput
    from vaultmem.store.files import atomic_write

    folder = Path(folder).expanduser()
    if folder.name == "skills":
        folder = folder / "vaultmem"
    path = folder / "SKILL.md"
    text = skill_text()
    if path.exists():
        old = path.read_text(encoding="utf-8", errors="replace")
        if old == text:
            return path, False
        if not force and not re.search(r"^name:\s*vaultmem\s*$", old, re.MULTILINE):
            raise BadInput(f"{path} exists and is not vaultmem's skill; choose another folder or pass --force")
    atomic_write(path, text)
    return path, True
