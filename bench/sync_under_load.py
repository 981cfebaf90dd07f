"""What an add waits for on disk when another program writes to the same disk.

    python bench/sync_under_load.py [--reps 6] [--mb 1024] [--dir /some/disk/folder]

An add that contests older notes rewrites them; those new texts are made durable
before the add returns. This times `Vault.add` of such memories (each contests 6-7
older notes, in one namespace, with the vault's model) with the disk quiet, and
while `dd` writes `--mb` MB of zeros to a file beside the vault without syncing them
(a copy, a build, a download). A whole-filesystem sync (syncfs) waits for those
megabytes too; a sync of vaultmem's own files does not. `--dir` must be on a real
disk: on tmpfs (/dev/shm) every sync is free and the two rows are the same.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("VAULTMEM_NO_SERVER", "1")  # in-process: what the add itself waits for

from vaultmem import Vault  # noqa: E402
from vaultmem.store import files  # noqa: E402

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
DIRTY_FIRST = 0.8  # seconds dd writes before the add starts: its pages pile up unsynced


def _release_train(team: int, shift: int = 0) -> str:
    return f"The release train of team {team} ships every {DAYS[(team + shift) % 7]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="vaultmem-sync-", dir=args.dir))
    syncs = [0]
    whole_sync = files.sync_filesystem

    def counted(where):
        syncs[0] += 1
        whole_sync(where)

    files.sync_filesystem = counted
    try:
        vault = Vault.open(folder / "vault", create=True)
        for team in range(20):
            vault.add(_release_train(team), namespace="work")
        rows = []
        for label in ("quiet", f"while dd writes {args.mb:,} MB beside it"):
            times, rewrites, whole = [], [], 0
            for rep in range(args.reps):
                team = rep + (args.reps if label != "quiet" else 0)
                writer = None
                if label != "quiet":
                    writer = subprocess.Popen(["dd", "if=/dev/zero", f"of={folder}/big", "bs=1M", f"count={args.mb}"],
                                              stderr=subprocess.DEVNULL)
                    time.sleep(DIRTY_FIRST)
                before = syncs[0]
                start = time.perf_counter()
                added = vault.add(_release_train(team, shift=3), namespace="work")
                times.append((time.perf_counter() - start) * 1000)
                whole += syncs[0] - before
                rewrites.append(len(added.contested) + len(added.superseded))
                if writer is not None:
                    writer.wait()
                    os.unlink(folder / "big")
                subprocess.run(["sync"], check=False)
            rows.append((label, statistics.median(times), max(times), statistics.median(rewrites), whole, times))
        print(f"- {args.reps} adds per row, each contesting or superseding older notes; vault in {folder.parent}")
        print()
        print("| disk | add p50 ms | add max ms | notes rewritten (p50) | filesystem syncs | each add ms |")
        print("|---|---:|---:|---:|---:|---|")
        for label, p50, worst, rewritten, whole, times in rows:
            print(f"| {label} | {p50:.0f} | {worst:.0f} | {rewritten:.0f} | {whole} | "
                  f"{' '.join(f'{t:.0f}' for t in times)} |")
    finally:
        files.sync_filesystem = whole_sync
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
