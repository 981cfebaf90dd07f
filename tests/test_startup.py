"""Agent hooks start the CLI on every prompt: the thin paths must not import heavy modules."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("yaml", "fsrs", "whoosh", "numpy", "onnxruntime", "tokenizers", "watchdog")


def imported_modules(code: str) -> set[str]:
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                            capture_output=True, text=True, check=True)
    return {line.split("|")[-1].strip().split(".")[0] for line in result.stderr.splitlines() if "|" in line}


def test_help_and_recall_client_import_nothing_heavy():
    code = ("import sys; from vaultmem.cli.main import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "from vaultmem.service.client import ask; from vaultmem.store.discovery import discover")
    loaded = imported_modules(code)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_registering_the_commands_starts_no_process_machinery():
    """Every CLI call imports the command tree; what a command needs to run a program
    (subprocess, shutil: the scheduler, git) is imported when that command runs."""
    loaded = imported_modules("import vaultmem.cli.main")
    assert not loaded & {"subprocess", "shutil"}, sorted(loaded & {"subprocess", "shutil"})


def test_package_import_is_lazy():
    loaded = imported_modules("import vaultmem")
    assert not loaded & set(HEAVY)
    import vaultmem

    assert vaultmem.Vault.__name__ == "Vault" and "Vault" in vaultmem.__all__


def _blas_after_entry(argv: list[str], env: dict | None = None) -> tuple[int | None, str | None]:
    """(threads of a process that ran the entry's BLAS setting for `argv` and imported numpy,
    its OPENBLAS_NUM_THREADS)."""
    import os

    code = ("import os, sys; from vaultmem.cli.entry import one_blas_thread; one_blas_thread(sys.argv[1:]);"
            "import numpy; numpy.ones((64, 64)) @ numpy.ones(64);"
            "tasks = len(os.listdir('/proc/self/task')) if os.path.isdir('/proc/self/task') else -1;"
            "print(tasks, os.environ.get('OPENBLAS_NUM_THREADS'))")
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True,
                         env={**clean, **(env or {})}).stdout.split()
    return (None if out[0] == "-1" else int(out[0])), (None if out[1] == "None" else out[1])


def test_a_short_command_runs_numpy_on_one_thread_and_long_lived_ones_keep_theirs():
    """OpenBLAS's threads cost a short command (a hook's recall) ~0.1 s of CPU for nothing."""
    threads, setting = _blas_after_entry(["recall", "where is the staging db", "-k", "3"])
    assert setting == "1"
    assert threads in (None, 1)  # no thread but the main one (where /proc tells)
    assert _blas_after_entry(["watch", "--vault", "v"])[1] is None
    assert _blas_after_entry(["mcp"])[1] is None
    assert _blas_after_entry(["recall", "x"], {"OPENBLAS_NUM_THREADS": "3"})[1] == "3"  # the user's choice


def test_every_public_name_resolves_and_the_api_covers_the_cli_operations():
    import vaultmem

    for name in vaultmem.__all__:
        assert getattr(vaultmem, name).__name__ == name
    operations = ("add", "learn", "recall", "get", "notes", "grade", "grade_batch", "review", "prompt", "correct",
                  "why", "promote", "set_tier", "verify", "archive", "restore", "decay", "related", "import_file")
    for operation in operations:
        method = getattr(vaultmem.Vault, operation)
        assert method.__doc__, f"Vault.{operation} is undocumented"


def test_fast_recall_parses_plain_command_lines_and_defers_the_rest():
    from vaultmem.cli.entry import parse_recall

    parsed = parse_recall(["--vault", "/v", "recall", "how do we deploy", "-k", "3", "--json", "--namespace=work"])
    assert parsed["query"] == "how do we deploy" and parsed["top_k"] == 3 and parsed["namespace"] == "work"
    assert parsed["vault"] == "/v" and parsed["as_json"] is True
    for deferred in (["recall"], ["recall", "q", "--help"], ["recall", "q", "-k", "0"], ["recall", "q", "--type", "x"],
                     ["list"], ["recall", "q", "extra"], ["recall", "q", "--bogus"],
                     ["recall", "q", "-n", "work/"], ["recall", "q", "-n", " work"]):
        assert parse_recall(deferred) is None, deferred


def test_fast_recall_knows_the_note_types():
    from vaultmem.cli import entry
    from vaultmem.core.model import TYPES

    assert entry._TYPES == TYPES


def test_fast_recall_client_imports_nothing_heavy():
    code = ("import sys; sys.argv = ['vaultmem', 'recall', 'x']\n"
            "from vaultmem.cli.entry import parse_recall; from vaultmem.service.client import ask; "
            "from vaultmem.cli.output import print_recall")
    loaded = imported_modules(code)
    assert not loaded & (set(HEAVY) | {"click", "tempfile"}), sorted(loaded & (set(HEAVY) | {"click", "tempfile"}))


def test_a_hook_on_a_bash_command_that_is_not_vaultmem_loads_nothing_but_the_runner():
    """Claude Code runs the PreToolUse hook on every Bash call: it must cost a Python start, no more."""
    payload = '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls -la"}}'
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "vaultmem", "hook", "pre-tool-use"],
                            input=payload, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout == ""
    loaded = {line.split("|")[-1].strip().split(".")[0] for line in result.stderr.splitlines() if "|" in line}
    assert not loaded & (set(HEAVY) | {"click"}), sorted(loaded & (set(HEAVY) | {"click"}))


def test_fast_hook_knows_the_hook_flags():
    from vaultmem.cli import entry
    from vaultmem.integrations.claude_code import HOOK_OPTIONS

    assert entry._HOOK_FLAGS == HOOK_OPTIONS


EXIT_SCRIPT = """
import atexit, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from vaultmem.cli.entry import exit_now

def late():
    time.sleep(0.3)
    print("thread done", flush=True)

atexit.register(lambda: print("atexit ran"))
threading.Thread(target=late).start()
pool = ThreadPoolExecutor(2)  # never shut down: its idle workers are told to stop, not waited on forever
pool.submit(print, "pool ran", flush=True).result()
print("output kept", end="")
sys.stderr.write("warning kept")
exit_now(int(sys.argv[1]))
"""


def test_the_quick_exit_still_does_what_an_exit_does_for_the_program():
    """The command skips the interpreter's teardown (0.1 s of a recall), not what a program relies on
    at exit: threads that are not daemons finish, atexit callbacks run, buffered output is written,
    and the exit code is kept; a worker pool left running does not hang it."""
    for code in (0, 3):
        result = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, str(code)], capture_output=True, text=True,
                                timeout=30)
        assert result.returncode == code
        out = result.stdout
        assert "pool ran" in out and "output kept" in out and "thread done" in out, out
        assert out.endswith("atexit ran\n"), out
        assert result.stderr == "warning kept"


def test_the_command_keeps_its_exit_codes_and_a_closed_pipe_is_no_traceback(tmp_path):
    vault = tmp_path / "vault"
    assert subprocess.run([sys.executable, "-m", "vaultmem", "init", str(vault)], capture_output=True).returncode == 0
    usage = subprocess.run([sys.executable, "-m", "vaultmem", "--no-such-option"], capture_output=True, text=True)
    assert usage.returncode == 2 and "No such option" in usage.stderr
    missing = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(tmp_path / "none"), "recall", "x"],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "is not a vaultmem vault" in missing.stderr
    # A reader gone before the command writes (`vaultmem ... | head -0`): it ends quietly.
    listing = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(vault), "--help"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    listing.stdout.close()
    _out, err = listing.communicate(timeout=60)
    assert b"Traceback" not in err and b"Exception ignored" not in err, err
