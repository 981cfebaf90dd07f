"""The error tree and every exit code. Every error vaultmem raises on purpose carries
the exit code the CLI returns for it and a one-line message that names the problem
and the fix.

    VaultmemError (exit 2)          anything vaultmem refuses, with a message
    ├── NotFound (exit 1)           an id, note or namespace that does not exist
    ├── BadInput (exit 2)           a bad rating, date, option or argument
    │   └── SecretFound (exit 2)    the text holds a secret or personal data; nothing was written
    ├── NoteError (exit 2)          a note file that cannot be read (broken YAML, binary, too big)
    ├── ConflictError (exit 3)      a file kept changing under a write, or one is in a move's way; nothing written
    ├── ModelUnavailable (exit 2)   the embedding model cannot be loaded (recall falls back to BM25)
    ├── UnsafeSocket (exit 2)       the watcher's socket folder is not this user's alone; `watch` refuses it
    └── LockTimeout (exit 75)       another process held the vault's write lock past the wait
                                    (VAULTMEM_LOCK_WAIT, default 60 s); safe to run again

Exit codes without an error class (the CLI sets them; the README lists them all):

    EXIT_LEDGER_BROKEN (4)   `verify` found a break in the ledger (with --strict: any difference)
    EXIT_INTERNAL (70)       an unexpected exception, shown as one line (VAULTMEM_DEBUG=1: the traceback),
                             or a damaged catalog, named with its fix (`vaultmem reindex`)
    EXIT_INTERRUPTED (130)   Ctrl-C (128 + SIGINT, as shells report it)

`import` exits EXIT_BAD_INPUT when records failed and EXIT_CONFLICT when some
already exist with other text, after printing its report.
"""

from __future__ import annotations

# Exit codes, documented in the README.
EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_CONFLICT = 3
EXIT_LEDGER_BROKEN = 4
EXIT_INTERNAL = 70  # EX_SOFTWARE in sysexits.h
EXIT_LOCKED = 75  # EX_TEMPFAIL in sysexits.h: a temporary failure, the same command may succeed later
EXIT_INTERRUPTED = 130


class VaultmemError(Exception):
    """Base class: a refusal with a message fit to show a person as one line."""

    exit_code = EXIT_BAD_INPUT


class NotFound(VaultmemError):
    exit_code = EXIT_NOT_FOUND


class BadInput(VaultmemError):
    exit_code = EXIT_BAD_INPUT


class SecretFound(BadInput):
    """A write refused by the redaction filter; `findings` says what (never the secret)."""

    def __init__(self, message: str, findings=()):
        self.findings = list(findings)
        super().__init__(message)


class NoteError(VaultmemError):
    """A note file vaultmem cannot read; the rest of the vault keeps working."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, path, problem: str, fix: str = "fix it by hand, then run the command again"):
        self.path = str(path)
        self.problem = problem
        self.fix = fix
        super().__init__(f"{self.path}: {problem}; {fix}")


class ConflictError(VaultmemError):
    exit_code = EXIT_CONFLICT


class ModelUnavailable(VaultmemError):
    exit_code = EXIT_BAD_INPUT


class UnsafeSocket(VaultmemError):
    """The folder of the watcher's socket could be someone else's: the watcher will not serve from it,
    and clients ignore it (they recall in-process instead)."""

    exit_code = EXIT_BAD_INPUT


class LockTimeout(VaultmemError):
    """The vault's write lock stayed held longer than the wait. Raised before anything is
    written under it, so the same command can simply be run again."""

    exit_code = EXIT_LOCKED

    def __init__(self, lock_path, waited: float, holder: str | None = None):
        self.lock_path = str(lock_path)
        self.waited = waited
        self.holder = holder
        who = holder or "another process (a vaultmem watcher, hook or command)"
        what = "index lock" if self.lock_path.endswith("index.lock") else "write lock"
        super().__init__(f"the vault's {what} {self.lock_path} is held by {who}; gave up after "
                         f"{waited:.0f} s. It is safe to run the command again once that process is done "
                         "(stop it if it hangs; VAULTMEM_LOCK_WAIT sets the wait)")
