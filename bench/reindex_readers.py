"""New processes recalling (`vaultmem recall`, no watcher: a hook's) just as `vaultmem reindex` starts.

A process that opened the caches an instant before a reindex deleted them must still answer: from
the new caches, its notes found by their words until they are indexed again. Each round starts
`vaultmem reindex` on a vault of ~800 memories (the real model: its embedding is most of the
reindex) and, one after another from its start, eight `vaultmem recall` processes, each a random
0-0.15 s after the one before, asking for one memory by its words. Each answer is classed: right
(that memory first), empty, wrong (another first), failed (an exit status other than 0 or 1),
with its time.

    python bench/reindex_readers.py                    # 20 rounds on this checkout
    python bench/reindex_readers.py --before 1a2b3c4   # the same, round by round with that commit

`--before REV` runs every other round on a `git archive` of REV (reindex_live.py's `alternating`).
Prints one markdown table.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_perf import machine_facts  # noqa: E402
from reindex_live import alternating, counted_cells  # noqa: E402

KINDS = ("right", "empty", "wrong", "failed")
WANTED = "The teal pipeline deploys staging on Fridays"
BUILD = """
import sys
from vaultmem.vault import Vault, init_vault
init_vault(sys.argv[1])
vault = Vault(sys.argv[1])
vault.add_many([{"text": f"Service {i} logs to the amber bucket number {i} every hour", "namespace": "work",
                 "merge": False, "supersede": False} for i in range(int(sys.argv[2]))]
               + [{"text": sys.argv[3], "namespace": "work"}])
assert vault.recall("teal pipeline staging")  # both indexes built, as a vault in use has them
"""


def one_round(vault: Path, code: Path | None, rng: random.Random, readers: int, gap: float) -> list:
    """(kind, seconds) of each reader started around one reindex."""
    env = dict(os.environ, VAULTMEM_NO_SERVER="1", VAULTMEM_AUTOWATCH="off", VAULTMEM_AUTODECAY="off")
    env.pop("VAULTMEM_VAULT", None)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    cli = [sys.executable, "-m", "vaultmem", "--vault", str(vault)]
    # Started outside this checkout (`-m` puts the working folder first on sys.path): PYTHONPATH decides.
    reindex = subprocess.Popen([*cli, "reindex", "-q"], env=env, cwd=vault.parent, stderr=subprocess.PIPE, text=True)
    started = []
    for _reader in range(readers):
        time.sleep(rng.uniform(0, gap))
        started.append((time.monotonic(), subprocess.Popen([*cli, "recall", "teal pipeline staging", "--json"],
                                                           env=env, cwd=vault.parent, stdout=subprocess.PIPE,
                                                           stderr=subprocess.PIPE, text=True)))
    answers = []
    for began, process in started:
        out, err = process.communicate()
        seconds = time.monotonic() - began
        if process.returncode not in (0, 1):
            print(f"recall exit {process.returncode}: {err.strip()[-500:]}", file=sys.stderr)
            answers.append(("failed", seconds))
            continue
        hits = json.loads(out) if out.strip() else []
        answers.append(("empty" if not hits else "right" if hits[0]["text"].strip() == WANTED else "wrong", seconds))
    _out, err = reindex.communicate()
    if reindex.returncode:
        print(f"reindex exit {reindex.returncode}: {err.strip()[-500:]}", file=sys.stderr)
        answers.append(("reindex failed", 0.0))
    return answers


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--notes", type=int, default=800)
    p.add_argument("--readers", type=int, default=8, help="recall processes per round")
    p.add_argument("--gap", type=float, default=0.15, help="at most this many seconds between two readers' starts")
    p.add_argument("--before", help="a commit to compare with, round by round")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vaultmem-reindex-readers-"))
    began = time.monotonic()
    try:
        vaults: dict = {}
        results = collections.defaultdict(list)
        for n, arm, code in alternating(args.rounds, args.before, work):
            if arm not in vaults:  # each arm's vault built by its own code
                vaults[arm] = work / f"vault-{len(vaults)}"
                env = dict(os.environ, VAULTMEM_AUTOWATCH="off", **({"PYTHONPATH": str(code)} if code else {}))
                subprocess.run([sys.executable, "-c", BUILD, str(vaults[arm]), str(args.notes), WANTED], env=env,
                               cwd=work, check=True)
            rng = random.Random(args.seed + n)  # both arms: the same timings, round by round
            results[arm] += one_round(vaults[arm], code, rng, args.readers, args.gap)
            print(f"round {n + 1}/{args.rounds} {arm}: done", file=sys.stderr, flush=True)
        print(f"# bench/reindex_readers.py --rounds {args.rounds} --notes {args.notes} --readers {args.readers}"
              + (f" --before {args.before}" if args.before else "") + f": seed {args.seed}, "
              f"{time.monotonic() - began:.0f} s\n")
        for line in machine_facts():
            print(line)
        print()
        print("| code | recalls | " + " | ".join(KINDS) + " | p50 / max s | reindex failed |")
        print("|---|---:|" + "---:|" * len(KINDS) + "---|---:|")
        for arm, answers in results.items():
            counts = collections.Counter(kind for kind, _s in answers)
            times = sorted(s for kind, s in answers if kind in KINDS)
            recalls = len(times)
            cells = counted_cells(counts, KINDS, recalls)
            print(f"| {arm} | {recalls} | {cells} | {times[len(times) // 2]:.2f} / {times[-1]:.2f} "
                  f"| {counts['reindex failed']} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
