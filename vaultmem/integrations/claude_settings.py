"""Claude Code settings files: where they are, and putting vaultmem's hooks in and out.

Installing merges one entry per hook in claude_code.HOOKS (SessionStart,
UserPromptSubmit, PreToolUse on Bash, Stop, SessionEnd) into a Claude Code
settings file: the user's (`~/.claude/settings.json`, or under
`$CLAUDE_CONFIG_DIR`), the project's `.claude/settings.json`, or its
personal `.claude/settings.local.json`. Each entry is a `command` hook that
runs `<this python> -m vaultmem hook EVENT`.

Our entries are the hooks whose command runs `vaultmem hook` (by any path or
interpreter), so installing again updates them in place instead of adding a
copy, and uninstalling removes exactly them: other tools' hooks, matchers and
keys are never touched. Before a file changes, its previous bytes are kept
next to it as `settings.json.vaultmem-backup`.

Apart from the runner because this is the part that edits the user's files,
once, at install; the hooks it writes (HOOKS, with their timeouts and
matchers) are the runner's, read from claude_code.py.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vaultmem.integrations.claude_code import CORE_ONLY, HOOKS, HookSpec

BACKUP_SUFFIX = ".vaultmem-backup"


def user_settings_path() -> Path:
    """~/.claude/settings.json (or `$CLAUDE_CONFIG_DIR/settings.json`, as Claude Code reads it)."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "settings.json"


def project_settings_path(project: str | os.PathLike | None = None, local: bool = False) -> Path:
    """<project>/.claude/settings.json, or settings.local.json (personal, not committed)."""
    root = Path(project or os.getcwd()).expanduser().resolve()
    return root / ".claude" / ("settings.local.json" if local else "settings.json")


def base_command() -> str:
    """How a hook runs vaultmem: this interpreter by absolute path, so it works outside the venv."""
    return f"{shlex.quote(sys.executable)} -m vaultmem"


def hook_command(base: str, spec: HookSpec, vault: str | None = None, core_only: bool = False) -> str:
    command = f"{base} hook {spec.name}"
    if core_only and spec.name == "session-start":
        command += f" {CORE_ONLY}"
    if vault:
        command += f" --vault {shlex.quote(str(Path(vault).expanduser().resolve()))}"
    return command


def is_ours(command) -> bool:
    """True for a command that runs `vaultmem hook ...` (console script or `python -m vaultmem`)."""
    if not isinstance(command, str) or "vaultmem" not in command:
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return any(word == "hook" and i > 0 and os.path.basename(words[i - 1]) == "vaultmem"
               for i, word in enumerate(words))


def _bad_settings(message: str):
    from vaultmem.errors import BadInput

    return BadInput(message)


def merge_hooks(settings: dict, command: str, vault: str | None = None, core_only: bool = False) -> dict:
    """`settings` with vaultmem's hooks in it (a new dict; the argument is not changed).

    An existing vaultmem entry is updated in place (a second copy of it is
    dropped); a missing one is appended as its own matcher group. Everything
    else keeps its place and value.
    """
    if not isinstance(settings, dict):
        raise _bad_settings("the settings file does not hold a JSON object; fix it by hand first")
    out = copy.deepcopy(settings)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise _bad_settings('"hooks" in the settings file is not an object; fix it by hand first')
    for spec in HOOKS:
        wanted = {"type": "command", "command": hook_command(command, spec, vault, core_only), "timeout": spec.timeout}
        groups = hooks.setdefault(spec.event, [])
        if not isinstance(groups, list):
            raise _bad_settings(f'"hooks.{spec.event}" in the settings file is not a list; fix it by hand first')
        found = False
        for group in list(groups):
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                continue
            kept = []
            for hook in inner:
                if isinstance(hook, dict) and is_ours(hook.get("command")):
                    if found:
                        continue
                    found = True
                    hook = {**hook, **wanted}
                kept.append(hook)
            if len(kept) != len(inner):
                if kept:
                    group["hooks"] = kept
                else:
                    groups.remove(group)
            else:
                group["hooks"] = kept
            if spec.matcher and kept and all(isinstance(h, dict) and is_ours(h.get("command")) for h in kept):
                group["matcher"] = spec.matcher  # our own group: an older install's matcher is brought up to date
        if not found:
            groups.append({"matcher": spec.matcher, "hooks": [wanted]} if spec.matcher else {"hooks": [wanted]})
    return out


def remove_hooks(settings: dict) -> dict:
    """`settings` without vaultmem's hooks (a new dict).

    A matcher group, event list or `hooks` object is removed only when taking
    our entries out left it empty, so install then uninstall gives back the
    original settings (except an event list that was already empty: it goes too).
    """
    if not isinstance(settings, dict):
        raise _bad_settings("the settings file does not hold a JSON object; fix it by hand first")
    out = copy.deepcopy(settings)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        changed = False
        for group in list(groups):
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                continue
            kept = [h for h in inner if not (isinstance(h, dict) and is_ours(h.get("command")))]
            if len(kept) != len(inner):
                changed = True
                if kept:
                    group["hooks"] = kept
                else:
                    groups.remove(group)
        if changed and not groups:
            del hooks[event]
            if not hooks:
                del out["hooks"]
    return out


def installed_events(settings) -> dict[str, str]:
    """{event: command} of the vaultmem hooks in these settings."""
    found = {}
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    for event, groups in (hooks or {}).items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for hook in (group.get("hooks") or []) if isinstance(group, dict) else ():
                if isinstance(hook, dict) and is_ours(hook.get("command")):
                    found.setdefault(event, hook["command"])
    return found


def read_settings(path: Path) -> tuple[dict, str | None]:
    """(settings, the file's text) — ({}, None) for a file that does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        raise _bad_settings(f"{path} cannot be read ({exc.strerror})") from None
    if not text.strip():
        return {}, text
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _bad_settings(f"{path} is not valid JSON ({exc}); fix it by hand, then run this again") from None
    if not isinstance(data, dict):
        raise _bad_settings(f"{path} does not hold a JSON object; fix it by hand, then run this again")
    return data, text


def render_settings(settings: dict, like: str | None = None) -> str:
    """JSON text in the style of the file it replaces (its indent, or one line if it was one
    line; 2 spaces for a new file)."""
    indent: str | int | None = 2
    if like and like.strip():
        m = re.search(r"^([ \t]+)\S", like, re.MULTILINE)
        if m:
            indent = m.group(1)
        elif "\n" not in like.strip():
            indent = None
    text = json.dumps(settings, indent=indent, ensure_ascii=False)
    return text + ("\n" if like is None or like.endswith("\n") or not like.strip() else "")


@dataclass
class SettingsChange:
    path: Path
    changed: bool
    backup: Path | None
    events: dict  # {event: command} of vaultmem hooks after the change
    text: str  # the file's new text
    disabled_all: bool = False  # the file sets disableAllHooks

    def to_dict(self) -> dict:
        return {"settings": str(self.path), "changed": self.changed,
                "backup": str(self.backup) if self.backup else None, "hooks": self.events,
                "disable_all_hooks": self.disabled_all}


def _apply(path: Path, change: Callable[[dict], dict], dry_run: bool) -> SettingsChange:
    from vaultmem.store.files import atomic_write

    path = Path(path).expanduser()
    settings, old_text = read_settings(path)
    new = change(settings)
    changed = new != settings
    text = render_settings(new, old_text) if changed else (old_text or "")
    backup = None
    if changed and not dry_run:
        if old_text is not None:
            backup = path.with_name(path.name + BACKUP_SUFFIX)
            atomic_write(backup, old_text)
        # A settings file kept in a dotfiles repo is often a symlink: write where it points.
        atomic_write(path.resolve() if path.is_symlink() else path, text)
    return SettingsChange(path, changed, backup, installed_events(new), text, bool(new.get("disableAllHooks")))


def install(path: Path, command: str | None = None, vault: str | None = None, dry_run: bool = False,
            core_only: bool = False) -> SettingsChange:
    """Merge vaultmem's hooks into the settings file at `path` (created if missing); `core_only`:
    SessionStart injects only L2 and L3 memories."""
    return _apply(path, lambda s: merge_hooks(s, command or base_command(), vault, core_only), dry_run)


def uninstall(path: Path, dry_run: bool = False) -> SettingsChange:
    """Take vaultmem's hooks out of the settings file at `path`; nothing else changes. When that
    leaves the settings as install found them, the file gets its bytes back from the backup (and
    the backup goes), or goes itself when install made it: a file a team keeps in git ends as it
    was, not reformatted."""
    from vaultmem.errors import BadInput
    from vaultmem.store.files import atomic_write

    path = Path(path).expanduser()
    if not path.exists():
        return SettingsChange(path, False, None, {}, "")
    settings, _text = read_settings(path)
    after = remove_hooks(settings)
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    try:
        before, before_text = read_settings(backup)  # ({}, None) without one: install made the file
    except BadInput:
        before, before_text = None, None  # a backup that does not read: not a state to go back to
    if after == settings or after != before:
        return _apply(path, remove_hooks, dry_run)
    if not dry_run:
        target = path.resolve() if path.is_symlink() else path
        if before_text is not None:
            atomic_write(target, before_text)
            backup.unlink()
        else:
            target.unlink()  # install made the file, and nothing else is in it
    return SettingsChange(path, True, None, installed_events(after), before_text or "")
