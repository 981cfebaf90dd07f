"""Claude Code hooks: the settings they go in, and the runner Claude Code calls.

Installing merges five entries into a Claude Code settings file, each a
`command` hook that runs `<this python> -m vaultmem hook EVENT`:

    SessionStart       review + prompt block as additional context
    UserPromptSubmit   recall on the prompt: the few relevant memories, with ids
    PreToolUse (Bash)  deny invented vaultmem flags and namespace-less adds, with the right syntax
    Stop, SessionEnd   capture what the user asked to remember, corrections, preferences
                       and lessons from the transcript (capture.py) as L0/L1 memories

Our entries are the hooks whose command runs `vaultmem hook` (by any path or
interpreter), so installing again updates them in place instead of adding a
copy, and uninstalling removes exactly them: other tools' hooks, matchers and
keys are never touched. Before a file changes, its previous bytes are kept
next to it as `settings.json.vaultmem-backup`.

Every hook fails open: an exception, a broken vault, a missing model or a
hook over its time budget prints nothing and exits 0 (one line goes to
`.vaultmem/hooks/hooks.log` in the vault when there is one). The only
deliberate refusal is PreToolUse's deny, sent as JSON with exit 0.
`VAULTMEM_HOOKS=off` disables every hook; `VAULTMEM_HOOK_SESSION_START`,
`VAULTMEM_HOOK_USER_PROMPT`, `VAULTMEM_HOOK_STOP` (Stop and SessionEnd) and
`VAULTMEM_HOOK_PRE_TOOL` set to `off` disable one.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import shlex
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

BACKUP_SUFFIX = ".vaultmem-backup"
HOOK_THREAD = "vaultmem-hook"
MAX_CONTEXT_CHARS = 8000  # Claude Code cuts additionalContext at ~10,000 characters
PROMPT_TOKENS = 1400
REVIEW_LIMIT = 8
RECALL_K = 4
RECALL_LINE_CHARS = 300
OFF_VALUES = {"off", "0", "false", "no", "disable", "disabled"}


@dataclass(frozen=True)
class HookSpec:
    event: str  # Claude Code's event name
    name: str  # the argument of `vaultmem hook`
    matcher: str | None  # tool-name matcher (PreToolUse only)
    timeout: int  # seconds Claude Code waits before killing the command
    budget: float  # seconds vaultmem allows itself; past it, output nothing
    switch: str  # environment variable that turns this hook off


HOOKS = (
    HookSpec("SessionStart", "session-start", None, 15, 5.0, "VAULTMEM_HOOK_SESSION_START"),
    HookSpec("UserPromptSubmit", "user-prompt-submit", None, 10, 3.0, "VAULTMEM_HOOK_USER_PROMPT"),
    HookSpec("PreToolUse", "pre-tool-use", "Bash", 10, 2.0, "VAULTMEM_HOOK_PRE_TOOL"),
    HookSpec("Stop", "stop", None, 30, 15.0, "VAULTMEM_HOOK_STOP"),
    HookSpec("SessionEnd", "session-end", None, 30, 15.0, "VAULTMEM_HOOK_STOP"),
)
HOOK_NAMES = tuple(spec.name for spec in HOOKS)


def spec_for(event: str) -> HookSpec | None:
    """The hook for `session-start`, `SessionStart`, `session_start`... or None."""
    key = re.sub(r"[^a-z]", "", (event or "").lower())
    for spec in HOOKS:
        if key in (spec.name.replace("-", ""), spec.event.lower()):
            return spec
    return None


# ---------------------------------------------------------------- settings files

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


def hook_command(base: str, spec: HookSpec, vault: str | None = None) -> str:
    command = f"{base} hook {spec.name}"
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
    from ..errors import BadInput

    return BadInput(message)


def merge_hooks(settings: dict, command: str, vault: str | None = None) -> dict:
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
        wanted = {"type": "command", "command": hook_command(command, spec, vault), "timeout": spec.timeout}
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
    from ..files import atomic_write

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


def install(path: Path, command: str | None = None, vault: str | None = None, dry_run: bool = False) -> SettingsChange:
    """Merge vaultmem's hooks into the settings file at `path` (created if missing)."""
    return _apply(path, lambda s: merge_hooks(s, command or base_command(), vault), dry_run)


def uninstall(path: Path, dry_run: bool = False) -> SettingsChange:
    """Take vaultmem's hooks out of the settings file at `path`; nothing else changes."""
    path = Path(path).expanduser()
    if not path.exists():
        return SettingsChange(path, False, None, {}, "")
    return _apply(path, remove_hooks, dry_run)


# ---------------------------------------------------------------- the runner

class _Run:
    """What one hook invocation knows: its input, environment, and the vault once opened."""

    def __init__(self, spec: HookSpec, payload: dict, env: Mapping[str, str], vault_path: str | None):
        self.spec = spec
        self.payload = payload
        self.env = env
        self.vault_path = vault_path
        self.root: Path | None = None

    @property
    def cwd(self) -> str | None:
        cwd = self.payload.get("cwd")
        return cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None

    def vault(self):
        """The vault: --vault, $VAULTMEM_VAULT, the session folder's, or the default one (made on first use)."""
        from ..discovery import default_vault_path, discover_root
        from ..vault import Vault

        root = discover_root(self.vault_path, cwd=self.cwd)
        is_default = not self.vault_path and not os.environ.get("VAULTMEM_VAULT") and root == str(default_vault_path())
        vault = Vault.open(root, create=is_default)
        self.root = vault.root
        return vault

    def log(self, message: str) -> None:
        """One line in `.vaultmem/hooks/hooks.log` of the vault, when there is one. Never raises."""
        try:
            root = self.root
            if root is None:
                from ..discovery import STATE_DIR, discover_root

                found = discover_root(self.vault_path, cwd=self.cwd)
                if not os.path.isdir(os.path.join(found, STATE_DIR)):
                    return
                root = Path(found)
            folder = hooks_dir(root)
            path = folder / "hooks.log"
            if path.exists() and path.stat().st_size > 1_000_000:
                os.replace(path, folder / "hooks.log.1")
            from .. import clock

            stamp = clock.format_datetime(clock.now())
            line = " ".join(message.split())[:2000]
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(f"{stamp} {self.spec.name}: {line}\n")
        except Exception:  # noqa: BLE001,S110 - logging must never cost the session
            pass


def hooks_dir(root: Path) -> Path:
    """`.vaultmem/hooks/` of a vault: the hooks' log and capture state, ignored by git."""
    from ..discovery import STATE_DIR

    folder = Path(root) / STATE_DIR / "hooks"
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# vaultmem hooks: log and capture state, local to this machine\n*\n", encoding="utf-8")
    return folder


def is_disabled(spec: HookSpec, env: Mapping[str, str]) -> bool:
    return any((env.get(name) or "").strip().lower() in OFF_VALUES for name in ("VAULTMEM_HOOKS", spec.switch))


def _budget(spec: HookSpec, env: Mapping[str, str]) -> float:
    try:
        value = float(env.get("VAULTMEM_HOOK_BUDGET") or spec.budget)
    except ValueError:
        return spec.budget
    return value if value > 0 else spec.budget


def run_hook(event: str, stdin_text: str, env: Mapping[str, str] | None = None,
             vault_path: str | None = None) -> tuple[str, int]:
    """Run one hook on the JSON Claude Code sent; returns (stdout text, exit code).

    `event` is `session-start`, `SessionStart`...; empty: the input's `hook_event_name`.

    Never raises and always exits 0: a failure, or running past the time
    budget, gives ('', 0) and a line in the vault's hooks log. The work runs
    in a daemon thread named `vaultmem-hook`; on a timeout it is abandoned, so
    a process running this should exit promptly (`os._exit`) afterwards.
    """
    env = os.environ if env is None else env
    try:
        try:
            payload = json.loads(stdin_text) if stdin_text and stdin_text.strip() else {}
        except ValueError:
            payload = {}
        payload = payload if isinstance(payload, dict) else {}
        spec = spec_for(event or str(payload.get("hook_event_name") or ""))
        if spec is None or is_disabled(spec, env):
            return "", 0
        run = _Run(spec, payload, env, vault_path)
        budget = _budget(spec, env)
        box: dict = {}

        def work():
            sink = io.StringIO()
            try:
                with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                    box["result"] = HANDLERS[spec.name](run)
            except BaseException as exc:  # noqa: BLE001 - fail open, whatever it was
                box["error"] = f"{type(exc).__name__}: {exc}"
                box["trace"] = traceback.format_exc()
            if sink.getvalue().strip():
                run.log("output: " + sink.getvalue().strip()[:500])

        worker = threading.Thread(target=work, name=HOOK_THREAD, daemon=True)
        started = time.monotonic()
        worker.start()
        worker.join(budget)
        if worker.is_alive():
            run.log(f"gave up after {budget:g} s (over budget); nothing was sent to Claude Code")
            return "", 0
        if "error" in box:
            run.log(f"failed after {time.monotonic() - started:.2f} s: {box['error']}")
            if env.get("VAULTMEM_DEBUG"):
                sys.stderr.write(box["trace"])
            return "", 0
        result = box.get("result")
        if not result:
            return "", 0
        return (json.dumps(result, ensure_ascii=False) if isinstance(result, dict) else str(result)), 0
    except BaseException:  # noqa: BLE001 - the promise is: never cost the session
        return "", 0


def abandoned_worker() -> bool:
    """True when a hook's work outlived its budget and is still running in this process."""
    return any(t.name == HOOK_THREAD and t.is_alive() for t in threading.enumerate())


def context_output(event: str, text: str) -> dict:
    """The JSON Claude Code reads as additional context (a bare additionalContext is ignored)."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def _clip(text: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    """At most `limit` characters, cut at a line end."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > 0 else limit].rstrip() + "\n"


def _one_line(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- SessionStart

USAGE_HINT = ('vaultmem: look things up with `vaultmem recall "QUERY" -k 5`; save a durable fact with '
              '`vaultmem add "TEXT" -n NAMESPACE`; after using a memory, `vaultmem grade ID good` '
              '(it helped) or `vaultmem grade ID again` (it was wrong).')


def session_start(run: _Run) -> dict:
    vault = run.vault()
    block = vault.prompt(max_tokens=PROMPT_TOKENS)
    shown = {line.note.id for line in block.lines}
    due = [n for n in vault.review(limit=REVIEW_LIMIT + len(shown)) if n.id not in shown][:REVIEW_LIMIT]
    parts = []
    if due:
        parts.append("Due for review in vaultmem: when one of these comes up, check it and grade it "
                     "(vaultmem grade ID good if it holds, again if it is wrong):\n"
                     + "\n".join(f"- [{n.id}] ({n.namespace}, {n.tier}) {_one_line(n.summary, 200)}" for n in due))
    if block.text.strip():
        parts.append(block.text.strip())
    if not parts:
        parts.append("vaultmem: no memories yet in this vault.")
    parts.append(USAGE_HINT)
    return context_output("SessionStart", _clip("\n\n".join(parts) + "\n"))


# ---------------------------------------------------------------- UserPromptSubmit

def user_prompt_submit(run: _Run) -> dict | None:
    prompt = run.payload.get("prompt")
    if not isinstance(prompt, str) or len(prompt.strip()) < 3 or prompt.lstrip().startswith("/"):
        return None
    query = prompt.strip()[:1000]
    lines = _recall_lines(run, query)
    if not lines:
        return None
    text = ("Memories from vaultmem that may bear on this prompt (id, namespace, label):\n" + "\n".join(lines)
            + "\nIf you use one, grade it: vaultmem grade ID good (it helped) or vaultmem grade ID again (it was wrong).")
    return context_output("UserPromptSubmit", _clip(text))


def _recall_lines(run: _Run, query: str) -> list[str]:
    """Recall through the vault's watcher when one runs (no model load), else in-process."""
    from ..discovery import discover_root
    from ..entry import ask_watcher

    answer = ask_watcher(discover_root(run.vault_path, cwd=run.cwd), query, RECALL_K)
    if answer is not None:
        return [f"- [{h['id']}] ({h['namespace']}, {h.get('label', '')}) {_one_line(h.get('text', ''), RECALL_LINE_CHARS)}"
                for h in answer.get("hits", [])]
    vault = run.vault()
    return [f"- [{h.note.id}] ({h.note.namespace}, {h.label}) {_one_line(h.note.text, RECALL_LINE_CHARS)}"
            for h in vault.recall(query, k=RECALL_K)]


# ---------------------------------------------------------------- PreToolUse

def pre_tool_use(run: _Run) -> dict | None:
    if run.payload.get("tool_name") != "Bash":
        return None
    tool_input = run.payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or "vaultmem" not in command:
        return None
    reason = check_command(command, cwd=run.cwd)
    if reason is None:
        return None
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


_WRAPPERS = {"env", "sudo", "time", "nohup", "exec", "command", "nice", "caffeinate", "timeout"}
_RUNNERS = {"uv", "poetry", "pipx", "pdm", "hatch", "rye"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")


def shell_commands(command: str) -> list[list[str]]:
    """The simple commands of a shell line (split at ; && || | & ( ) and newlines), redirections dropped.

    [] when the line cannot be parsed (unbalanced quotes): nothing to check.
    """
    lexer = shlex.shlex(command, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace_split = True
    lexer.whitespace = " \t\r"
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    commands, current, skip_target = [], [], False
    for token in tokens:
        if token and all(ch in "();<>|&\n" for ch in token):
            if token[0] in "<>" or token.startswith("&>"):
                if current and current[-1].isdigit():
                    current.pop()  # 2>/dev/null: the 2 belongs to the redirection
                skip_target = True  # the file (or descriptor) it redirects to
                continue
            if current:
                commands.append(current)
            current, skip_target = [], False
            continue
        if skip_target:
            skip_target = False
            continue
        current.append(token)
    if current:
        commands.append(current)
    return commands


def vaultmem_args(words: list[str]) -> list[str] | None:
    """The arguments of a vaultmem invocation (`vaultmem ...`, `python -m vaultmem ...`), else None."""
    i = 0
    while i < len(words) and (_ASSIGNMENT.match(words[i]) or words[i] in _WRAPPERS):
        i += 1
    if i + 1 < len(words) and words[i] in _RUNNERS and words[i + 1] == "run":
        i += 2
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    if i >= len(words):
        return None
    program = os.path.basename(words[i])
    if program == "vaultmem":
        return words[i + 1:]
    if _PYTHON.match(program) and words[i + 1:i + 3] == ["-m", "vaultmem"]:
        return words[i + 3:]
    return None


def check_command(command: str, cwd: str | None = None) -> str | None:
    """Why a Bash command's vaultmem invocation would fail (with the right syntax), or None to allow."""
    for words in shell_commands(command):
        args = vaultmem_args(words)
        if args is None:
            continue
        reason = check_args(args, cwd=cwd)
        if reason:
            return reason
    return None


_REQUIRED_OPTIONS = {("add", "namespace"), ("learn", "namespace"), ("learn", "steps")}
_SHARED_OPTIONS = {"vault_path", "as_json", "quiet", "help"}


def check_args(args: list[str], cwd: str | None = None) -> str | None:
    """Check vaultmem arguments against the real command tree; a reason to deny, or None."""
    import click

    from ..cli import cli

    if not args or any(a in ("-h", "--help", "--version") for a in args):
        return None
    if any("$" in a or "`" in a for a in args):
        return None  # expanded by the shell: the words we see are not the ones vaultmem gets
    path = ["vaultmem"]
    group, parent = cli, None
    try:
        ctx = group.make_context("vaultmem", list(args), resilient_parsing=False)
        while True:
            rest = list(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", None) or []) \
                + list(ctx.args)
            if not rest:
                return None
            name, command, rest = group.resolve_command(ctx, rest)
            path.append(name)
            parent = ctx
            ctx = command.make_context(name, list(rest), parent=parent)
            if not isinstance(command, click.Group):
                break
            group = command
    except click.exceptions.NoSuchOption as exc:
        cmd = _command_at(path)
        if isinstance(cmd, click.Group):
            return (f"{exc.format_message()} `{' '.join(path)}` commands: {', '.join(sorted(cmd.commands))}. "
                    f"See `{' '.join(path)} COMMAND --help`.")
        return (f"`{' '.join(path)}` has no option {exc.option_name}. {exc.format_message()} "
                f"Correct syntax: {synopsis(cmd, path)}. Fix the command and run it again.{_example(cmd)}")
    except click.exceptions.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            return None  # `vaultmem hooks` alone prints help: harmless
        cmd = _command_at(path)
        if isinstance(cmd, click.Group):
            names = ", ".join(sorted(cmd.commands))
            return (f"{exc.format_message()} `{' '.join(path)}` commands: {names}. "
                    f"See `{' '.join(path)} COMMAND --help`.")
        return (f"{exc.format_message()} Correct syntax: {synopsis(cmd, path)}. "
                f"Fix the command and run it again.{_example(cmd)}")
    except click.exceptions.ClickException:
        return None
    except click.exceptions.Exit:
        return None
    name = path[-1] if len(path) == 2 else ""
    if name in ("add", "learn") and not (ctx.params.get("namespace") or "").strip():
        cmd = _command_at(path)
        text = ctx.params.get("text") or ctx.params.get("title") or "TEXT"
        example = f"vaultmem {name} {shlex.quote(text)} -n {default_namespace(cwd=cwd)}"
        if name == "learn":
            example += " --steps \"1. ... 2. ...\""
        return (f"`vaultmem {name}` needs a namespace: -n NAMESPACE (e.g. -n work or -n projects/api). "
                f"Correct syntax: {synopsis(cmd, path)}. For this project: {example}")
    return None


def _command_at(path: list[str]):
    from ..cli import cli

    command = cli
    for name in path[1:]:
        command = command.commands.get(name, command) if hasattr(command, "commands") else command
    return command


def synopsis(command, path: list[str]) -> str:
    """`vaultmem add TEXT -n NAMESPACE [-t TAGS] ...`: every argument and option of a command."""
    import click

    name = path[-1] if path else ""
    parts = list(path)
    for param in command.params:
        if isinstance(param, click.Argument):
            word = (param.metavar or param.name or "").upper()
            word += "..." if param.nargs == -1 else ""
            parts.append(word if param.required else f"[{word}]")
    for param in command.params:
        if not isinstance(param, click.Option) or param.name in _SHARED_OPTIONS or param.hidden:
            continue
        flag = min(param.opts, key=len)
        if param.is_flag:
            word = flag
        elif isinstance(param.type, click.Choice):
            word = f"{flag} {'|'.join(map(str, param.type.choices))}"
        else:
            word = f"{flag} {(param.metavar or param.name or '').upper()}"
        parts.append(word if param.required or (name, param.name) in _REQUIRED_OPTIONS else f"[{word}]")
    if any(getattr(p, "name", "") == "as_json" for p in command.params):
        parts.append("[--json]")
    return " ".join(parts)


def _example(command) -> str:
    for line in (command.help or "").splitlines():
        if line.strip().startswith("Example:"):
            return " " + line.strip()
    return ""


def default_namespace(cwd: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """Where captured memories go: `$VAULTMEM_NAMESPACE`, else `projects/<project>`, else `inbox`."""
    from ..provenance import current_project

    env = os.environ if env is None else env
    given = (env.get("VAULTMEM_NAMESPACE") or "").strip().strip("/")
    if given:
        return given
    project = re.sub(r"[^\w.-]+", "-", current_project(cwd=cwd) or "").strip("-.")
    return f"projects/{project}" if project else "inbox"


# ---------------------------------------------------------------- Stop / SessionEnd

def capture(run: _Run) -> None:
    """Add what the new part of the transcript holds worth remembering; nothing is printed."""
    from filelock import FileLock

    from ..capture import observations
    from ..errors import VaultmemError
    from ..provenance import current_project

    transcript = run.payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript.strip():
        return
    transcript_path = Path(transcript).expanduser()
    if not transcript_path.is_file():
        return
    vault = run.vault()
    session = str(run.payload.get("session_id") or "").strip()
    state_path = hooks_dir(vault.root) / "capture" / f"{_safe_name(session or str(transcript_path))}.json"
    state_path.parent.mkdir(parents=True, exist_ok=True)
    namespace = default_namespace(cwd=run.cwd, env=run.env)
    project = current_project(cwd=run.cwd)
    seen_path = state_path.parent / "seen-messages.txt"
    with FileLock(str(state_path) + ".lock", timeout=_budget(run.spec, run.env)):
        start = _read_state(state_path, transcript_path)
        entries, end = _read_new_lines(transcript_path, start)
        found = observations([entry for _line, entry, _end in entries])
        by_index: dict[int, list] = {}
        for item in found:
            by_index.setdefault(item.message_index, []).append(item)
        seen = _seen_messages(seen_path) if by_index else set()
        for index, (line_no, entry, after) in enumerate(entries):
            if index not in by_index:
                continue
            uuid = entry.get("uuid") if isinstance(entry.get("uuid"), str) else None
            if uuid in seen:
                continue  # the same message in a resumed or forked session's transcript
            for item in by_index[index]:
                try:
                    vault.add(item.text, namespace, tags=("captured", item.kind),
                              source=f"{transcript_path}#L{line_no}", tier=item.tier, session=session or None,
                              project=project or None, explicit=item.kind == "explicit", redact=True)
                except VaultmemError as exc:
                    run.log(f"not captured (line {line_no}): {exc}")
            if uuid:
                with open(seen_path, "a", encoding="utf-8") as handle:
                    handle.write(uuid + "\n")
            _write_state(state_path, transcript_path, after)  # a timeout after this line keeps it captured once
        if end != start:
            _write_state(state_path, transcript_path, end)


def _seen_messages(path: Path) -> set[str]:
    """Ids (`uuid`) of transcript messages already captured, in any session."""
    try:
        return set(path.read_text(encoding="utf-8").split())
    except OSError:
        return set()


def _safe_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")
    if len(name) > 100 or not name:
        import hashlib

        name = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
    return name


def _read_state(path: Path, transcript: Path) -> tuple[int, int]:
    """(byte offset, line number) already read of this transcript; (0, 0) when new or it shrank."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        offset, line = int(data["offset"]), int(data["line"])
        if data.get("transcript") != str(transcript) or offset > transcript.stat().st_size:
            return 0, 0
        return offset, line
    except (OSError, ValueError, KeyError, TypeError):
        return 0, 0


def _write_state(path: Path, transcript: Path, position: tuple[int, int]) -> None:
    from ..files import atomic_write

    offset, line = position
    atomic_write(path, json.dumps({"transcript": str(transcript), "offset": offset, "line": line}) + "\n")


def _read_new_lines(transcript: Path, start: tuple[int, int]) -> tuple[list[tuple[int, dict, tuple[int, int]]],
                                                                      tuple[int, int]]:
    """The complete JSONL lines after `start`: [(line number, entry, position after it)], and the
    position after the last complete line. A last line without its newline is still being
    written: it is left for the next run."""
    offset, line_no = start
    with open(transcript, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    entries = []
    for raw in data.splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            break
        offset += len(raw)
        line_no += 1
        try:
            entry = json.loads(raw.decode("utf-8", errors="replace"))
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append((line_no, entry, (offset, line_no)))
    return entries, (offset, line_no)


HANDLERS: dict[str, Callable[[_Run], object]] = {
    "session-start": session_start,
    "user-prompt-submit": user_prompt_submit,
    "pre-tool-use": pre_tool_use,
    "stop": capture,
    "session-end": capture,
}


# ---------------------------------------------------------------- the skill file

def skill_text() -> str:
    """SKILL.md: when to recall, how to grade, and the exact syntax of the commands it names."""
    from importlib.resources import files

    from ..cli import cli

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
    from ..errors import BadInput
    from ..files import atomic_write

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
