"""`vaultmem reindex` while other processes import and recall, many times with random timing.

Each round copies a vault of three known memories and ~400 imported ones, then starts at random
moments: `vaultmem reindex`, one or two importers (`Vault.add_many` with its checks, 150-300
memories each) and two readers (new processes, each a `Vault` recalling the three known
memories by their own text in a loop for 1-4 s). It counts what a user would notice:

- wrong: a recall whose first hit is another memory; empty: one that found nothing;
- failed: a recall that raised (a process's traceback is the bug, not an answer);
- importer / reindex failures: a non-zero exit, or an import that refused an item;
- slow: recalls over 1 s (a reindex holds the index lock for its whole run: a reader waits at
  most 0.25 s for it, then answers from what is stored).

    python bench/reindex_writers.py                     # 30 rounds on this checkout
    python bench/reindex_writers.py --before 481366e    # the same, round by round with that commit

`--before REV` runs every other round on a `git archive` of REV (reindex_live.py's `alternating`).
The stand-in embedder keeps the model out of the timing. Prints one markdown table.
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
from reindex_live import alternating  # noqa: E402

KNOWN = ["The staging database is Postgres 16 on port 5433", "Deploys go out through the teal pipeline",
         "Alice owns the billing service and its invoices"]

IMPORTER = """
import sys, random
from vaultmem.vault import Vault
seed, count = int(sys.argv[2]), int(sys.argv[3])
r = random.Random(seed)
words = ["amber", "basil", "cedar", "dune", "ember", "fjord", "grove", "heath", "inlet", "jade"]
items = [{"text": f"Batch {seed} item {i}: the {r.choice(words)} {r.choice(words)} ledger {seed}x{i} closes at "
          f"{i % 24}:00", "namespace": "bulk"} for i in range(count)]
results = Vault(sys.argv[1]).add_many(items)
print(sum(not hasattr(result, "note") for result in results))
"""

READER = """
import sys, json, time
from vaultmem.vault import Vault
vault, known, out = Vault(sys.argv[1]), json.loads(sys.argv[2]), []
end = time.time() + float(sys.argv[3])
while time.time() < end:
    for text, note_id in known.items():
        began = time.monotonic()
        try:
            hits = vault.recall(text, k=3)
            out.append([note_id, hits[0].note.id if hits else None, time.monotonic() - began])
        except Exception as exc:
            out.append([note_id, f"{type(exc).__name__}: {exc}", time.monotonic() - began])
print(json.dumps(out))
"""


def environment(code: Path | None) -> dict:
    env = dict(os.environ, VAULTMEM_MODEL="stand-in", VAULTMEM_AUTOWATCH="off", VAULTMEM_AUTODECAY="off",
               VAULTMEM_NO_SERVER="1")
    env.pop("VAULTMEM_VAULT", None)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def base_vault(folder: Path, here: dict) -> tuple[Path, dict]:
    """A vault of the three known memories and 400 imported ones, indexed, made by the arm's code."""
    def vaultmem(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "vaultmem", *args], **here, check=True, capture_output=True,
                              text=True).stdout

    base = folder / "base"
    vaultmem("init", str(base))
    known = {text: json.loads(vaultmem("--vault", str(base), "--json", "add", "-n", "work", text))["id"]
             for text in KNOWN}
    subprocess.run([sys.executable, "-c", IMPORTER, str(base), "999", "400"], **here, check=True, capture_output=True)
    vaultmem("--vault", str(base), "reindex")
    return base, known


def one_round(base: Path, known: dict, vault: Path, here: dict, rng: random.Random, tally: collections.Counter,
              examples: list[str]) -> None:
    shutil.copytree(base, vault, symlinks=True)
    python = [sys.executable, "-c"]
    readers = []
    if rng.random() < 0.5:  # one reader already running when the reindex starts
        readers.append(subprocess.Popen([*python, READER, str(vault), json.dumps(known), "4"], **here,
                                        stdout=subprocess.PIPE, text=True))
    time.sleep(rng.uniform(0, 0.6))
    reindex = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(vault), "reindex"], **here,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    importers = [subprocess.Popen([*python, IMPORTER, str(vault), str(rng.randrange(10_000)),
                                   str(rng.choice([150, 300]))], **here, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(rng.choice([1, 2]))]
    time.sleep(rng.uniform(0, 1.0))
    readers.append(subprocess.Popen([*python, READER, str(vault), json.dumps(known), str(rng.uniform(1, 3))],
                                    **here, stdout=subprocess.PIPE, text=True))
    _out, err = reindex.communicate()
    if reindex.returncode:
        tally["reindex failed"] += 1
        examples.append(err.strip().splitlines()[-1][:200])
    for importer in importers:
        out, err = importer.communicate()
        if importer.returncode or out.strip() != "0":
            tally["import failed"] += 1
            examples.append((err.strip().splitlines() or [out])[-1][:200])
    for reader in readers:
        for want, got, took in json.loads(reader.communicate()[0] or "[]"):
            tally["recalls"] += 1
            tally["slow"] += took > 1.0
            if got is not None and got not in known.values():
                tally["failed"] += 1
                examples.append(got[:200])
            elif got is None:
                tally["empty"] += 1
            elif got != want:
                tally["wrong"] += 1
    shutil.rmtree(vault)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--before", help="a git revision to run every other round on, for comparison")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="reindex-writers-"))
    began = time.monotonic()
    tallies: dict[str, collections.Counter] = {}
    examples: dict[str, list[str]] = collections.defaultdict(list)
    bases: dict[str, tuple[Path, dict]] = {}
    try:
        for n, arm, code in alternating(args.rounds, args.before, work, "after (this checkout)"):
            # cwd outside any checkout: `-c` and `-m` put the working folder first on the path.
            here = {"env": environment(code), "cwd": work}
            if arm not in bases:
                (folder := work / f"arm{len(bases)}").mkdir()
                bases[arm] = base_vault(folder, here)
            rng = random.Random(args.seed + n)  # both arms: the same timings, round by round
            one_round(*bases[arm], bases[arm][0].parent / f"round{n}", here, rng,
                      tallies.setdefault(arm, collections.Counter()), examples[arm])
            print(f"round {n + 1}/{args.rounds} {arm}: done", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"# bench/reindex_writers.py: {args.rounds} rounds of reindex beside importers and readers, seed "
          f"{args.seed}, {time.monotonic() - began:.0f} s\n")
    for line in machine_facts():
        print(line)
    print("\n| code | recalls | wrong | empty | failed | over 1 s | importers failed | reindexes failed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for arm, tally in tallies.items():
        print(f"| {arm} | {tally['recalls']} | {tally['wrong']} | {tally['empty']} | {tally['failed']} "
              f"| {tally['slow']} | {tally['import failed']} | {tally['reindex failed']} |")
    for arm, seen in examples.items():
        for example in dict.fromkeys(seen):
            print(f"\n- {arm}: {example}")


if __name__ == "__main__":
    main()
