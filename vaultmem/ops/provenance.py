"""Where an act happens: the session and the project, for promotion evidence.

A session is what an agent calls one conversation (Claude Code's
`session_id`); a project is the work it happens in (the git repository's
folder name, else the working folder's name). Callers that know them pass
them; otherwise `$VAULTMEM_SESSION` / `$VAULTMEM_PROJECT` are read, and a
command run by hand without either counts as its own session of the day.
The project also names where captured memories go (`default_namespace`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path


def current_session(explicit: str | None = None) -> str:
    """The session an act belongs to ('' when nothing says)."""
    return (explicit or os.environ.get("VAULTMEM_SESSION") or "").strip()


def current_project(explicit: str | None = None, cwd: str | os.PathLike | None = None, folder: bool = False) -> str:
    """The project: given, `$VAULTMEM_PROJECT`, or the enclosing git repository's name; outside
    one, none ("" : the project evidence that promotes to L3 was earned by running commands
    from two folders, even the vault's own), or with `folder` the folder's name (a namespace
    for what a session in it captures)."""
    name = (explicit or os.environ.get("VAULTMEM_PROJECT") or "").strip()
    if name:
        return name
    try:
        here = Path(cwd or os.getcwd()).resolve()
    except OSError:
        return ""
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate.name
    return here.name if folder else ""


def default_namespace(cwd: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """Where captured memories go: `$VAULTMEM_NAMESPACE`, else `projects/<project>`, else `inbox`."""
    env = os.environ if env is None else env
    given = (env.get("VAULTMEM_NAMESPACE") or "").strip().strip("/")
    if given:
        return given
    project = re.sub(r"[^\w.-]+", "-", current_project(cwd=cwd, folder=True) or "").strip("-.")
    return f"projects/{project}" if project else "inbox"


def project_root(cwd: str | os.PathLike | None = None) -> Path | None:
    """The git repository enclosing `cwd`; None outside one (a bare folder is no project to be
    relative to: the same path would read differently from another folder)."""
    try:
        folder = Path(cwd or os.getcwd()).resolve()
    except OSError:
        return None
    return next((c for c in (folder, *folder.parents) if (c / ".git").exists()), None)


def portable_path(path: str | os.PathLike, cwd: str | os.PathLike | None = None, home: str | None = None) -> str:
    """A file path as a note's `source` keeps it: relative to the project's git repository (`notes/plan.md`), else to
    the home folder (`~/.claude/projects/...`), else as it is. An absolute path would carry the
    user's name and machine layout into a vault shared in git."""
    try:
        target = Path(os.path.expanduser(str(path))).resolve()
    except OSError:
        return str(path)
    root = project_root(cwd)
    if root is not None and root != Path(root.anchor) and root in target.parents:
        return target.relative_to(root).as_posix()
    base = Path(home or os.path.expanduser("~")).resolve()
    if base != Path(base.anchor) and base in target.parents:
        return "~/" + target.relative_to(base).as_posix()
    return str(target)
