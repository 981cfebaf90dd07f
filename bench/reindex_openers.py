"""`reindex` while other processes open the vault's catalog as new processes do, again and again.

A process that starts while `reindex` deletes the caches makes or opens the catalog in the
folder being deleted. Each run: a vault of 20 memories (the stand-in embedder), two processes
(forked) that each open a new `Vault`'s catalog and count its notes in a loop, and
`--reindexes` calls of `rebuild_indexes` meanwhile. Counts the reindexes that raised, the opens
that raised (by their error) and the openers that died (a signal), and how long an open took.
Threads of one process would not do: SQLite's locks between connections of one process are
its own, and opening a catalog the same process deletes can crash it (SIGBUS on the -shm map).

    python bench/reindex_openers.py [--runs 10] [--reindexes 30]
    python bench/reindex_openers.py --code /path/to/a/worktree    # another commit's vaultmem

Prints one markdown table row per run and a total.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import queue
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_perf import machine_facts  # noqa: E402


def keep_opening(vault_dir: Path, stop, results) -> None:
    """An opener: a new `Vault`'s catalog opened and counted, again and again, until `stop`."""
    from vaultmem.vault import Vault

    times: list[float] = []
    errors: collections.Counter = collections.Counter()
    while not stop.is_set():
        began = time.perf_counter()
        try:
            Vault(vault_dir).catalog(refresh=False).count()
        except Exception as exc:  # noqa: BLE001 - counted: what a new process would die of
            errors[f"{type(exc).__name__}: {exc}"[:70]] += 1
        times.append(time.perf_counter() - began)
    results.put((times, errors))


def one_run(reindexes: int, openers: int) -> dict:
    from vaultmem.search.engine import rebuild_indexes
    from vaultmem.vault import Vault, init_vault

    work = Path(tempfile.mkdtemp(prefix="vaultmem-reindex-openers-"))
    vault_dir = work / "vault"
    init_vault(vault_dir)
    Vault(vault_dir).add_many([{"text": f"Runbook {i} lives in the ops wiki", "namespace": "work", "merge": False,
                                "supersede": False} for i in range(20)])
    fork = multiprocessing.get_context("fork")
    stop, results = fork.Event(), fork.Queue()
    children = [fork.Process(target=keep_opening, args=(vault_dir, stop, results)) for _ in range(openers)]
    for child in children:
        child.start()
    failed: collections.Counter = collections.Counter()
    times: list[float] = []
    errors: collections.Counter = collections.Counter()
    try:
        for _ in range(reindexes):
            try:
                rebuild_indexes(Vault(vault_dir))
            except Exception as exc:  # noqa: BLE001 - counted
                failed[f"{type(exc).__name__}: {exc}"[:70]] += 1
    finally:
        stop.set()
        for _child in children:  # read before joining: a child ends only once its answer is taken
            try:
                child_times, child_errors = results.get(timeout=30)
            except queue.Empty:
                break  # (an opener died: counted below)
            times += child_times
            errors.update(child_errors)
        for child in children:
            child.join(timeout=60)
            if child.exitcode:
                errors[f"opener died (exit {child.exitcode})"] += 1
        shutil.rmtree(work, ignore_errors=True)
    times.sort()
    return {"opens": len(times), "open errors": errors, "reindex errors": failed,
            "p50 ms": 1000 * times[len(times) // 2] if times else 0.0, "max s": times[-1] if times else 0.0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--reindexes", type=int, default=30, help="per run")
    p.add_argument("--openers", type=int, default=2, help="threads opening the catalog")
    p.add_argument("--code", help="a checkout whose vaultmem to run (default: this one)")
    args = p.parse_args()
    os.environ.setdefault("VAULTMEM_MODEL", "stand-in")
    if args.code:
        sys.path.insert(0, str(Path(args.code).resolve()))
    import vaultmem

    began = time.monotonic()
    rows = [one_run(args.reindexes, args.openers) for _ in range(args.runs)]
    print(f"# bench/reindex_openers.py --runs {args.runs} --reindexes {args.reindexes} --openers {args.openers}"
          + (f" --code {args.code}" if args.code else "") + ": "
          f"{time.monotonic() - began:.0f} s, vaultmem from {Path(vaultmem.__file__).parent}\n")
    for line in machine_facts():
        print(line)
    print("\n| run | reindexes failed | opens | opens failed | open p50 ms / max s | errors |")
    print("|---|---:|---:|---:|---|---|")
    total = collections.Counter()
    for n, row in enumerate(rows, 1):
        errors = row["open errors"] + row["reindex errors"]
        total.update(errors)
        print(f"| {n} | {sum(row['reindex errors'].values())} | {row['opens']} | {sum(row['open errors'].values())} "
              f"| {row['p50 ms']:.1f} / {row['max s']:.2f} | {'; '.join(f'{k} ×{v}' for k, v in errors.items())} |")
    print(f"| all | {sum(sum(r['reindex errors'].values()) for r in rows)} of {args.runs * args.reindexes} "
          f"| {sum(r['opens'] for r in rows)} | {sum(sum(r['open errors'].values()) for r in rows)} | | "
          f"{'; '.join(f'{k} ×{v}' for k, v in total.items())} |")


if __name__ == "__main__":
    main()
