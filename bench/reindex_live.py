"""What a running watcher answers while `vaultmem reindex` rebuilds the caches beside it.

Each run: a fresh vault of six memories and a `vaultmem watch` process; a client asks the
watcher the same recall all the time (as the prompt hook does) while `reindex` runs
`--reindexes` times in a row, a note written by hand at a random moment around each one.
Every answer is classed: right (hits, all of them the six memories), empty, wrong (a hit that
is not one of them), an error from the watcher, or none (no answer within the client's 5 s:
the CLI then recalls in-process), and whether the watcher died (its exit status).

    python bench/reindex_live.py                     # 20 runs of 12 reindexes
    python bench/reindex_live.py --before 8e4bff0    # the same, alternating with that commit

`--before REV` runs every other run on a `git archive` of REV (the watcher and the reindex
processes import it through PYTHONPATH, from a folder outside this checkout). The stand-in
embedder keeps the model out of the timing. Prints one markdown table.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("right", "empty", "wrong", "error", "none")
NOTE = "---\nid: hand{n:04d}\ntype: memory\nnamespace: work\n---\nThe quokka{n}x runbook lives in the ops wiki.\n"


def checkout(rev: str, into: Path) -> Path:
    """A `git archive` of `rev` under `into` (outside the repository, so PYTHONPATH wins)."""
    folder = into / f"vaultmem-{rev}"
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def alternating(runs: int, before: str | None, work: Path, after: str = "this checkout"):
    """(run, arm, code folder or None) for `runs` runs of each arm, taking turns: a `git archive`
    of `before` first (when asked), then this checkout, so load on the machine falls on both."""
    arms = {after: None}
    if before:
        arms = {f"before ({before})": checkout(before, work), **arms}
    for run in range(runs):
        for arm, code in arms.items():
            yield run, arm, code


def counted_cells(counts, kinds, total: int) -> str:
    """Table cells "n (share%)", one per kind, shares of `total`."""
    return " | ".join(f"{counts[k]} ({100 * counts[k] / max(total, 1):.1f}%)" for k in kinds)


def one_run(seed: int, reindexes: int, code: Path | None, work: Path) -> collections.Counter:
    env = dict(os.environ, VAULTMEM_MODEL="stand-in", VAULTMEM_AUTOWATCH="off", VAULTMEM_AUTODECAY="off")
    env.pop("VAULTMEM_VAULT", None)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    vault = work / f"vault-{seed}"

    def vaultmem(*args):
        done = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(vault), *args], env=env, cwd=work,
                              capture_output=True, text=True)
        if done.returncode:
            counts["failed " + args[0]] += 1
            print(f"seed {seed}: `vaultmem {' '.join(args)}` exit {done.returncode}: {done.stderr.strip()[-2000:]}",
                  file=sys.stderr)
        return done

    subprocess.run([sys.executable, "-m", "vaultmem", "init", str(vault)], env=env, cwd=work, check=True,
                   capture_output=True)
    watcher = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(vault), "watch"], env=env, cwd=work,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    watcher.stdout.readline()  # "watching ...": it serves from now on
    counts: collections.Counter = collections.Counter()
    ids = {json.loads(vaultmem("add", f"Deploy step {i} runs the teal pipeline on Fridays", "-n", "work",
                               "--json").stdout)["id"] for i in range(6)}
    from vaultmem.service.client import ask  # this checkout's client: the protocol is the same

    rng = random.Random(seed)
    stop = threading.Event()

    def keep_asking():
        while not stop.is_set():
            answer = ask(str(vault), {"op": "recall", "query": "teal pipeline", "top_k": 3})
            if answer is None:
                counts["none"] += 1
            elif not answer.get("ok"):
                counts["error"] += 1
            elif not answer["hits"]:
                counts["empty"] += 1
            else:
                counts["right" if {hit["id"] for hit in answer["hits"]} <= ids else "wrong"] += 1
            time.sleep(rng.uniform(0, 0.02))

    asker = threading.Thread(target=keep_asking)
    asker.start()
    try:
        for n in range(reindexes):
            path = vault / "memories" / "work" / f"hand-{n}.md"
            editor = threading.Timer(rng.uniform(0, 0.4), path.write_text, (NOTE.format(n=n),))
            editor.start()
            time.sleep(rng.uniform(0, 0.2))
            vaultmem("reindex", "-q")
            editor.join()
    finally:
        stop.set()
        asker.join()
        counts["died"] += watcher.poll() is not None
        watcher.terminate()
        watcher.wait(timeout=30)
    return counts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--reindexes", type=int, default=12, help="reindexes per run")
    p.add_argument("--before", help="a commit to compare with, run by turns")
    p.add_argument("--seed", type=int, default=1000, help="of the first run (each run the next)")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    work = Path(tempfile.mkdtemp(prefix="vaultmem-reindex-live-"))
    try:
        totals = collections.defaultdict(collections.Counter)
        for run, arm, code in alternating(args.runs, args.before, work):
            totals[arm] += one_run(args.seed + run, args.reindexes, code, work)
        print(f"`python bench/reindex_live.py --runs {args.runs} --reindexes {args.reindexes}"
              + (f" --before {args.before}`" if args.before else "`")
              + f" on {platform.node()}, {os.cpu_count()} cores, load average at the end"
              f" {os.getloadavg()[0]:.1f}\n")
        print("| code | runs × reindexes | answers | " + " | ".join(KINDS) + " | watcher died | reindex failed |")
        print("|---|---:|---:|" + "---:|" * len(KINDS) + "---:|---:|")
        for arm, counts in totals.items():
            answers = sum(counts[k] for k in KINDS)
            cells = counted_cells(counts, KINDS, answers)
            print(f"| {arm} | {args.runs} × {args.reindexes} | {answers} | {cells} "
                  f"| {counts['died']} of {args.runs} | {counts['failed reindex']} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
