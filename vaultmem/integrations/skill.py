"""The skill file: SKILL.md for a Claude Code skills folder (`vaultmem install-skill`).

The template (integrations/SKILL.md) says when to recall and how to grade;
the exact syntax of the commands it names (SKILL_COMMANDS) is handed in by
the CLI, which reads it off its own command tree (cli/command_check.synopsis),
so it cannot drift from the real options. Apart from the hooks: a skill is
read by the agent, not run by Claude Code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

# The commands whose syntax the skill spells out, in this order.
SKILL_COMMANDS = ("recall", "add", "learn", "grade", "grade-batch", "correct", "show", "review", "prompt", "list")


def skill_text(syntax: Mapping[str, str]) -> str:
    """SKILL.md: when to recall, how to grade, and the exact syntax of the commands it names.

    `syntax` maps a command name to its synopsis (`vaultmem add TEXT -n NAMESPACE ...`);
    commands of SKILL_COMMANDS it lacks are left out.
    """
    from importlib.resources import files

    template = files("vaultmem.integrations").joinpath("SKILL.md").read_text(encoding="utf-8")
    lines = [f"    {syntax[name]}" for name in SKILL_COMMANDS if name in syntax]
    return template.replace("{{commands}}", "\n".join(lines))


def install_skill(folder: str | os.PathLike, syntax: Mapping[str, str], force: bool = False) -> tuple[Path, bool]:
    """Write SKILL.md into `folder` (into `folder/vaultmem/` when `folder` is a `skills` folder).

    `syntax` is as for `skill_text`. Returns (path, changed). A SKILL.md that is not
    vaultmem's is kept unless `force`.
    """
    from vaultmem.errors import BadInput
    from vaultmem.store.files import atomic_write

    folder = Path(folder).expanduser()
    if folder.name == "skills":
        folder = folder / "vaultmem"
    path = folder / "SKILL.md"
    text = skill_text(syntax)
    if path.exists():
        old = path.read_text(encoding="utf-8", errors="replace")
        if old == text:
            return path, False
        if not force and not re.search(r"^name:\s*vaultmem\s*$", old, re.MULTILINE):
            raise BadInput(f"{path} exists and is not vaultmem's skill; choose another folder or pass --force")
    atomic_write(path, text)
    return path, True
