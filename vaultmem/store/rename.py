"""Atomic renames the standard library lacks: swap two files, and move without replacing.

Swapping is how vaultmem rewrites a note without losing a save made at the
same moment: the new text goes in with one atomic exchange, and what comes out
is exactly what was there (the text vaultmem read, or a person's save that
landed in between, which is then kept and re-applied). A plain rename cannot
do this: it overwrites whatever is there, unseen.

- Linux: `renameat2(RENAME_EXCHANGE | RENAME_NOREPLACE)` (glibc 2.28+, kernel 3.15+,
  ext4/xfs/btrfs/tmpfs and most local filesystems).
- macOS: `renamex_np(RENAME_SWAP | RENAME_EXCL)` (APFS and HFS+).
- Elsewhere, or on a filesystem that refuses (some network mounts): `exchange`
  returns False and callers compare-then-replace, which leaves a window of a
  few microseconds; `move_no_replace` falls back to a hard link plus unlink,
  which never replaces either.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from functools import lru_cache
from pathlib import Path

_AT_FDCWD = -100
_LINUX_NOREPLACE, _LINUX_EXCHANGE = 1, 2
_MAC_SWAP, _MAC_EXCL = 0x2, 0x4
# errnos meaning "this system or filesystem cannot do that rename", not "that rename failed".
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}


@lru_cache(maxsize=1)
def _native():
    """(function, exchange flag, no-replace flag, takes dir fds) from libc, or None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    if sys.platform.startswith("linux") and hasattr(libc, "renameat2"):
        function = libc.renameat2
        function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        return function, _LINUX_EXCHANGE, _LINUX_NOREPLACE, True
    if sys.platform == "darwin" and hasattr(libc, "renamex_np"):
        function = libc.renamex_np
        function.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
        return function, _MAC_SWAP, _MAC_EXCL, False
    return None


def _call(source: Path, target: Path, which: int, folder: int | None = None) -> bool:
    """One native rename with flag `which` (0: exchange, 1: no-replace); False when unsupported.
    `folder`: an open descriptor of the folder both files are in, taken by name in it where
    the system allows (Linux)."""
    native = _native()
    if native is None:
        return False
    function, exchange_flag, noreplace_flag, with_dirs = native
    flag = exchange_flag if which == 0 else noreplace_flag
    if with_dirs and folder is not None:
        return _checked(function(folder, os.fsencode(source.name), folder, os.fsencode(target.name), flag), target)
    old, new = os.fsencode(source), os.fsencode(target)
    return _checked(function(_AT_FDCWD, old, _AT_FDCWD, new, flag) if with_dirs else function(old, new, flag), target)


def _checked(result: int, target: Path) -> bool:
    """True when the rename was made, False when the system cannot make it; else its OSError."""
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(target))


def exchange(first: Path, second: Path, folder: int | None = None) -> bool:
    """Swap two existing files atomically. False where the system cannot (nothing moved);
    FileNotFoundError when either is gone. `folder`: an open descriptor of the folder both
    are in: the swap happens in that folder even if a person renamed it meanwhile (Linux)."""
    return _call(first, second, 0, folder)


def move_no_replace(source: Path, target: Path) -> None:
    """Rename `source` to `target`, failing with FileExistsError rather than replace a
    file that is there (a plain rename on POSIX replaces it silently)."""
    if _call(source, target, 1):
        return
    if os.name == "nt":
        os.rename(source, target)  # Windows never replaces on rename
        return
    try:
        os.link(source, target)  # fails if target exists
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOENT, errno.EXDEV):
            raise
        if os.path.lexists(target):  # no hard links here (FAT, some mounts): check, then rename
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target)) from None
        os.rename(source, target)
        return
    os.unlink(source)
