"""The `vaultmem` console script: fast paths for recall and hooks, else the full CLI.

Agent hooks run `vaultmem recall ...` on every prompt. When a watcher serves
the vault, the answer is one socket round trip away, and importing click and
the CLI would cost more than the recall itself. So a plain recall command line
is parsed here, by hand, and sent to the watcher; anything else (another
command, an unusual option, `--help`, no watcher, an error) goes to the full
click CLI, which gives the same result in-process. `vaultmem hook EVENT`
(Claude Code runs it on every prompt and every Bash call) skips click too.
"""

from __future__ import annotations

import functools
import os
import sys

_FLAGS = {"--json": "as_json", "-q": "quiet", "--quiet": "quiet", "--all": "include_hidden", "--explain": "explain"}
# core.model.TYPES, spelled out: importing core.model would cost this path dataclasses and typing
# (~10 ms on every prompt); tests/test_startup.py holds the two equal.
_TYPES = ("memory", "skill")
# claude_code.HOOK_OPTIONS, spelled out for the same reason (tests/test_startup.py holds them equal).
_HOOK_FLAGS = ("--core-only",)
_VALUES = {"--vault": "vault", "-k": "top_k", "--top-k": "top_k", "-n": "namespace", "--namespace": "namespace",
           "--type": "kind"}


def parse_recall(argv: list[str]) -> dict | None:
    """Options of a plain `[--vault V] recall QUERY [options]`; None when unsure."""
    options: dict = {"as_json": False, "quiet": False, "include_hidden": False, "explain": False}
    words = list(argv)
    seen_command = False
    query = None
    while words:
        word = words.pop(0)
        if "=" in word and word.startswith("--"):
            word, value = word.split("=", 1)
            words.insert(0, value)
        if word in _FLAGS:
            options[_FLAGS[word]] = True
        elif word in _VALUES:
            if not words:
                return None
            options[_VALUES[word]] = words.pop(0)
        elif word == "recall" and not seen_command:
            seen_command = True
        elif seen_command and query is None and not word.startswith("-"):
            query = word
        else:
            return None
    if not seen_command or query is None:
        return None
    if "top_k" in options:
        if not options["top_k"].isdigit() or not 1 <= int(options["top_k"]) <= 1000:
            return None
        options["top_k"] = int(options["top_k"])
    if options.get("kind") not in (None, *_TYPES):
        return None
    namespace = options.get("namespace")
    if namespace is not None and (namespace != namespace.strip() or namespace.startswith("/")
                                  or namespace.endswith("/")):
        return None  # not in the stored form: the full CLI normalises it (core.model.namespace_filter)
    options["query"] = query
    return options


def fast_recall(argv: list[str]) -> bool:
    """Answer a recall through the watcher; False when the full CLI must do it."""
    if os.environ.get("VAULTMEM_NO_SERVER"):
        return False
    options = parse_recall(argv)
    if options is None:
        return False
    from vaultmem.service.client import ask_watcher

    answer = ask_watcher(options.get("vault"), options["query"], options.get("top_k"), options.get("namespace"),
                         options.get("kind"), options["include_hidden"])
    if answer is None:
        return False
    from vaultmem.cli.output import print_recall

    print_recall(answer["hits"], answer.get("problems", []), answer.get("model_problem"),
                 options["as_json"], options["quiet"], options["explain"], answer.get("crosslingual_problem"),
                 answer.get("unembedded", 0), answer.get("crosslingual_coverage"))
    return True


def fast_hook(argv: list[str]) -> bool:
    """Run `[--vault V] hook [EVENT] [--vault V]` without click; False for anything else."""
    words, vault, event = list(argv), None, None
    if len(words) >= 2 and words[0] == "--vault":
        vault, words = words[1], words[2:]
    if not words or words[0] != "hook":
        return False
    rest = words[1:]
    if rest and not rest[0].startswith("-"):
        event, rest = rest[0], rest[1:]
    flags = frozenset(word for word in rest if word in _HOOK_FLAGS)
    rest = [word for word in rest if word not in _HOOK_FLAGS]
    if len(rest) == 2 and rest[0] == "--vault":
        vault, rest = rest[1], []
    if rest:
        return False  # options only the full command knows (--help): let click answer
    from vaultmem.integrations.claude_code import main as run_hook_process

    run_hook_process(event or "", vault, check=functools.partial(check_bash, vault=vault), options=flags)
    return True


def check_bash(command: str, cwd: str | None = None, vault: str | None = None,
               prefix: str | None = None) -> str | None:
    """PreToolUse's judge of a Bash line against the full command tree (loads click only when asked);
    `vault`: the hooks' --vault, which the agent's commands must name too; `prefix`: how the
    agent calls vaultmem (the commands it is told to run instead start with it)."""
    from vaultmem.cli.command_check import check_command
    from vaultmem.cli.main import cli

    return check_command(command, cwd, root=cli, vault=vault, prefix=prefix)


# Commands that run for hours: they keep numpy's BLAS threads (one_blas_thread).
_LONG_LIVED = frozenset({"watch", "mcp"})


def one_blas_thread(argv: list[str]) -> None:
    """A command that ends in a moment runs numpy's BLAS on one thread (unless the user's
    OPENBLAS_NUM_THREADS says otherwise). OpenBLAS starts a thread per core when numpy loads,
    and its threads spin after every product: ~0.06-0.1 s of CPU in a recall or a hook that
    lasts ~0.25 s, taken from the agent and the editor on every prompt, and no faster at a
    vault's size (a 10k x 384 product: 0.26 ms on two threads, 0.28 on one). The watcher and
    the MCP server keep them: at 100k notes they halve a recall's product (6.9 ms, 12.8)."""
    if not _LONG_LIVED & set(argv):
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> None:
    one_blas_thread(sys.argv[1:])  # before anything imports numpy
    try:
        if not (fast_recall(sys.argv[1:]) or fast_hook(sys.argv[1:])):
            from vaultmem.cli.main import main as full_cli

            full_cli()
        code = 0
    except SystemExit as done:
        if not isinstance(done.code, (int, type(None))):
            raise  # a message for Python to print: its own exit
        code = done.code or 0
    exit_now(code)


def exit_now(code: int) -> None:
    """End the process once its work is done, without the interpreter's teardown.

    The teardown (freeing the model's session and every module's objects) cost a recall
    without a watcher ~0.12 s of its ~0.65 s, on every such call of a hook or a script.
    What a normal exit does for the program is done first: other threads that are not
    daemons are waited for, atexit callbacks run (logging's flush, finalizers of temporary
    folders), and stdout and stderr are flushed. Objects are not finalized: every file
    vaultmem writes is closed (and renamed into place) by then, and SQLite keeps what was
    committed whether or not its connection is closed.
    """
    import atexit
    import threading

    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    wait_for_threads = getattr(threading, "_shutdown", None)
    if run_exit_functions is None or wait_for_threads is None:  # not CPython: the normal exit
        sys.exit(code)
    # What the interpreter's own exit runs first, in its order: the threading module's exit hooks
    # (a worker pool left running is told to stop), then every non-daemon thread is waited for.
    wait_for_threads()
    run_exit_functions()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader gone (`| head`) or a closed stream: nothing left to say
            pass
    os._exit(code)
