"""What an add costs as the vault grows: `Vault.add_many` into an empty vault at several
sizes, checks off (as an import with --no-checks would), wall and CPU ms per add.

    python bench/add_scaling.py                          # 1k, 10k and 100k memories
    python bench/add_scaling.py --sizes 1000,10000 --checked 2000

The memories are bench/peers.py's (same generator, same seed), so the figures line up
with its rows 1c and 2c. `--checked N` also times N adds with the checks on (the real
model embeds every text) into a vault that already holds that size's memories (added
without the checks and embedded before the clock starts): what a checked add costs at
that size, not an import's first adds. Each size is a fresh vault in a temp folder,
deleted afterwards; nothing else should run meanwhile. Prints one markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from peers import MemoryGen  # noqa: E402  (bench/ is not a package)

from vaultmem import Vault  # noqa: E402


def _items(memories: list, checked: bool) -> list[dict]:
    return [{"text": text, "namespace": ns} if checked else
            {"text": text, "namespace": ns, "merge": False, "supersede": False} for text, ns in memories]


def timed_adds(memories: list, checked: bool, already: list = ()) -> tuple[float, float]:
    """(wall ms per add, CPU ms per add) of one add_many of `memories` into a new vault that
    holds `already` (added without the checks, and embedded, before the clock starts)."""
    folder = Path(tempfile.mkdtemp(prefix="vaultmem-add-scaling-"))
    try:
        vault = Vault.open(folder / "vault", create=True)
        if already:
            vault.add_many(_items(already, checked=False))
        if checked:
            vault.recall("load the model and embed the notes before the clock starts", k=1)
        cpu, wall = time.process_time(), time.perf_counter()
        vault.add_many(_items(memories, checked))
        n = len(memories)
        return (time.perf_counter() - wall) / n * 1000, (time.process_time() - cpu) / n * 1000
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--checked", type=int, default=0,
                    help="also time N adds with checks on into a vault already holding each size's memories")
    ap.add_argument("--seed", type=int, default=20260105)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    gen = MemoryGen(args.seed)
    memories = [gen.next() for _ in range(max(sizes) + args.checked)]
    print(f"- {platform.platform()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    print("\n| memories | checks off: wall ms/add | CPU ms/add |"
          + (f" checks on, {args.checked:,} more: wall ms/add |" if args.checked else ""))
    print("|---:|---:|---:|" + ("---:|" if args.checked else ""))
    for n in sizes:
        wall, cpu = timed_adds(memories[:n], checked=False)
        row = f"| {n:,} | {wall:.2f} | {cpu:.2f} |"
        if args.checked:
            row += f" {timed_adds(memories[n:n + args.checked], checked=True, already=memories[:n])[0]:.2f} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
