"""`decay` of a whole vault: how long the daily rewrite of every note's strength takes.

    python bench/decay.py                          # 10k notes, 3 runs
    python bench/decay.py --sizes 2000,10000 --runs 5
    python bench/decay.py --before 425d9d5         # and a checkout of that commit, alternating

The vault is peers.py's: N generated memories written by `Vault.add_many` (checks off) with
the clock pinned, built once per size by this checkout. Each run copies it afresh into a
folder on the same filesystem (`--work-dir`, default: a temp folder under /tmp; a decay's
cost is mostly the filesystem's), then runs `Vault.decay()` in a new process with the clock
60 days later: every note's strength moves, none is archived (as peers.py's row 8). Per run:
notes rewritten, wall time, and the process's user and system CPU time (the system time is
the files: temp files made, exchanged, deleted). With `--before REV` the runs alternate
between that commit (`git archive` into a temp folder, imported first through PYTHONPATH)
and this checkout, so a busy machine skews both alike; each run says where it imported
vaultmem from.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall_perf as rp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WRITTEN = "2026-06-01T09:00:00"  # the clock while the memories are written
LATER = "2026-07-31T09:00:00"  # and 60 days later, when they decay

BUILD = """
import json, sys
from vaultmem import Vault
items = [{"text": text, "namespace": namespace, "merge": False, "supersede": False}
         for text, namespace in json.load(open(sys.argv[2]))]
Vault.open(sys.argv[1], create=True).add_many(items)
"""

CHILD = """
import json, os, resource, sys, time
import vaultmem
from vaultmem import Vault
vault = Vault.open(sys.argv[1])
vault.catalog(full=True)  # the catalog built before the clock starts
before = resource.getrusage(resource.RUSAGE_SELF)
started = time.perf_counter()
steps = vault.decay()
wall = time.perf_counter() - started
after = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"changed": len(steps), "wall_s": wall, "user_s": after.ru_utime - before.ru_utime,
                  "sys_s": after.ru_stime - before.ru_stime, "load": os.getloadavg()[0],
                  "imported_from": os.path.dirname(vaultmem.__file__)}))
"""


def checkout(rev: str, into: Path) -> Path:
    """The package of commit `rev`, unpacked into `into` (for PYTHONPATH)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "vaultmem"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def child(script: str, args: list[str], now: str, work: Path, pythonpath: str | None = None) -> str:
    """Run `script` in a new interpreter, in `work` (not the repository: `-c` puts the working
    folder first on the path), with the clock at `now`; its stdout."""
    env = dict(os.environ, VAULTMEM_NOW=now, VAULTMEM_NO_SERVER="1", VAULTMEM_AUTOWATCH="off",
               VAULTMEM_AUTODECAY="off")
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, cwd=work, capture_output=True,
                          text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"bench/decay.py: a child failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def build_vault(size: int, seed: int, work: Path) -> Path:
    """peers.py's `size` memories, written by this checkout at WRITTEN."""
    import peers

    memories = work / f"memories-{size}.json"
    memories.write_text(json.dumps(peers.make_data(size, seed, peers.Reps(True))["memories"]))
    vault = work / f"source-{size}"
    child(BUILD, [str(vault), str(memories)], WRITTEN, work)
    return vault


def one_run(source: Path, work: Path, pythonpath: str | None) -> dict:
    copy = work / "vault"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("*.lock", "hooks", "*.log"))
    os.sync()  # the copy's pages on disk first: else the decay's filesystem syncs flush them too
    out = child(CHILD, [str(copy)], LATER, work, pythonpath)
    shutil.rmtree(copy, ignore_errors=True)
    return json.loads(out.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    lines = ["| notes | code | runs | notes rewritten | wall s, each run | wall s, median | user s, median "
             "| system s, median |", "|---:|---|---:|---:|---|---:|---:|---:|"]
    for size, code in dict.fromkeys((r["size"], r["code"]) for r in rows):
        runs = [r for r in rows if r["size"] == size and r["code"] == code]
        med = {k: statistics.median(r[k] for r in runs) for k in ("wall_s", "user_s", "sys_s")}
        each = ", ".join(f"{r['wall_s']:.2f}" for r in runs)
        lines.append(f"| {size:,} | {code} | {len(runs)} | {runs[0]['changed']:,} | {each} | {med['wall_s']:.2f} | "
                     f"{med['user_s']:.2f} | {med['sys_s']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seed", type=int, default=20260105)
    p.add_argument("--before", help="also measure this commit, alternating with this checkout")
    p.add_argument("--work-dir", default="/tmp", help="where the vaults go (a temp folder in it; default /tmp)")
    p.add_argument("--json", help="write the rows here too")
    args = p.parse_args(argv)
    rows = []
    print("\n".join(rp.machine_facts()), file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="vaultmem-decay-code-") as code_dir:
        codes = [("this checkout", None)]
        if args.before:
            codes.insert(0, (f"before ({args.before})", str(checkout(args.before, Path(code_dir)))))
        with tempfile.TemporaryDirectory(prefix="vaultmem-decay-", dir=args.work_dir) as work_dir:
            work = Path(work_dir)
            for size in (int(s) for s in args.sizes.split(",")):
                source = build_vault(size, args.seed, work)
                for run in range(args.runs):
                    for code, pythonpath in codes:
                        row = {"size": size, "code": code, "run": run + 1, **one_run(source, work, pythonpath)}
                        print(f"[{size}] {code} run {run + 1}: {row}", file=sys.stderr, flush=True)
                        rows.append(row)
                shutil.rmtree(source, ignore_errors=True)
    rp.print_report("vaultmem: decay of a whole vault", table(rows), rows, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
