"""The PreToolUse check: vaultmem invocations in a Bash line, checked against the CLI.

Claude Code's PreToolUse hook (claude_code.pre_tool_use) hands over each Bash
command that mentions vaultmem. The line is split into simple commands; each
vaultmem invocation (`vaultmem ...`, `python -m vaultmem ...`, behind env,
sudo, `uv run`...) is parsed by click against the real command tree. An
unknown option, a usage error, or an add/learn without a namespace gives a
reason to deny that carries the right syntax (`synopsis`) and an example;
whatever it cannot judge (shell expansions, unbalanced quotes, --help) is
allowed.

Part of the CLI because it reads the CLI's command tree, which it is given
(`root`, the click group) rather than importing `cli.main`, whose command
modules call it. The hook runner (integrations/claude_code.py) does not import
it: the CLI hands it a checker (`vaultmem hook`), so integrations never import
the CLI. The skill file gets its syntax lines from `synopses` the same way.
"""

from __future__ import annotations

import os
import re
import shlex

from vaultmem.ops.provenance import default_namespace

_WRAPPERS = {"env", "sudo", "time", "nohup", "exec", "command", "nice", "caffeinate", "timeout"}
_RUNNERS = {"uv", "poetry", "pipx", "pdm", "hatch", "rye"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
# An add whose text opens with "[tag] " or "[tag1, tag2] " (how some memory tools take tags).
_TAG_PREFIX = re.compile(r"^\s*\[([\w./#, -]{1,80})\]\s+(\S.*)$", re.DOTALL)


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


def check_command(command: str, cwd: str | None = None, *, root, vault: str | None = None,
                  prefix: str | None = None) -> str | None:
    """Why a Bash command's vaultmem invocation would fail (with the right syntax), or None to allow.

    `root` is the CLI's click group (`vaultmem.cli.main.cli`, or the running command's root); it is
    passed in because the command modules that call this are part of that group. `vault`: the
    vault the hooks were installed for (`--vault`), which a command without one would miss.
    `prefix`: how the agent calls vaultmem (the hooks know: vaultmem may not be on its PATH).
    """
    for words in shell_commands(command):
        args = vaultmem_args(words)
        if args is None:
            continue
        named = any(word.startswith("VAULTMEM_VAULT=") for word in words)
        reason = check_args(args, cwd=cwd, root=root, vault=None if named else vault, prefix=prefix)
        if reason:
            return reason
    return None


_REQUIRED_OPTIONS = {("add", "namespace"), ("learn", "namespace"), ("learn", "steps")}
_SHARED_OPTIONS = {"vault_path", "as_json", "quiet", "help"}
# Commands about the set-up, not a vault's memories: they need no --vault to reach the session's.
_SETUP_COMMANDS = {"init", "hooks", "schedule", "install-skill", "mcp", "git", "hook"}


def check_args(args: list[str], cwd: str | None = None, *, root, vault: str | None = None,
               prefix: str | None = None) -> str | None:
    """Check vaultmem arguments against the command tree under `root`; a reason to deny, or None.
    `vault`: the session's vault (see check_command); `prefix`: how the agent calls vaultmem, which
    the commands a reason suggests start with (vaultmem [--vault VAULT] unless given)."""
    import click

    if not args or any(a in ("-h", "--help", "--version") for a in args):
        return None
    if any("$" in a or "`" in a for a in args):
        return None  # expanded by the shell: the words we see are not the ones vaultmem gets
    path = ["vaultmem"]
    group, parent = root, None
    try:
        ctx = top = group.make_context("vaultmem", list(args), resilient_parsing=False)
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
        cmd = _command_at(root, path)
        if isinstance(cmd, click.Group):
            return (f"{exc.format_message()} `{' '.join(path)}` commands: {', '.join(sorted(cmd.commands))}. "
                    f"See `{' '.join(path)} COMMAND --help`.")
        return (f"`{' '.join(path)}` has no option {exc.option_name}. {exc.format_message()} "
                f"Correct syntax: {synopsis(cmd, path)}. Fix the command and run it again.{_example(cmd)}")
    except click.exceptions.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            return None  # `vaultmem hooks` alone prints help: harmless
        cmd = _command_at(root, path)
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
    if prefix is None:
        prefix = f"vaultmem --vault {shlex.quote(vault)}" if vault else "vaultmem"
    tagged = _TAG_PREFIX.match(ctx.params.get("text") or "") if name == "add" else None
    if name in ("add", "learn") and not (ctx.params.get("namespace") or "").strip():
        cmd = _command_at(root, path)
        text = ctx.params.get("text") or ctx.params.get("title") or "TEXT"
        example = f"{prefix} {name} {shlex.quote(tagged.group(2).strip() if tagged else text)} " \
                  f"-n {default_namespace(cwd=cwd)}"
        if tagged:  # the text's "[tag]" too, or the command suggested is denied next for it
            example += f" --tags {shlex.quote(_tags(tagged.group(1)))}"
        if name == "learn":
            example += " --steps \"1. ... 2. ...\""
        return (f"`vaultmem {name}` needs a namespace: -n NAMESPACE (e.g. -n work or -n projects/api). "
                f"Correct syntax: {synopsis(cmd, path)}. For this project: {example}")
    if tagged:
        namespace = ctx.params.get("namespace")
        return (f"Tags go in --tags, not in the text (\"[{tagged.group(1)}] ...\" would be stored as words). "
                f"Run instead: {prefix} add {shlex.quote(tagged.group(2).strip())} -n {shlex.quote(namespace)} "
                f"--tags {shlex.quote(_tags(tagged.group(1)))}")
    if vault and path[1:2] and path[1] not in _SETUP_COMMANDS and "vault_path" in ctx.params \
            and not ctx.params.get("vault_path") and not top.params.get("vault_path"):
        return (f"This session's memories are in the vault {vault}, which this command would not use "
                f"(without --vault it takes $VAULTMEM_VAULT, the folder's vault or the default one). "
                f"Run instead: {prefix} {' '.join(shlex.quote(a) for a in args)}")
    return None


def _tags(written: str) -> str:
    return ",".join(t for t in re.split(r"[,\s]+", written) if t)


def _command_at(root, path: list[str]):
    command = root
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


def synopses(root, names) -> dict[str, str]:
    """{name: synopsis} for the commands of `root` among `names` (unknown names are left out)."""
    return {name: synopsis(root.commands[name], ["vaultmem", name]) for name in names if name in root.commands}


def _example(command) -> str:
    for line in (command.help or "").splitlines():
        if line.strip().startswith("Example:"):
            return " " + line.strip()
    return ""
