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

    python bench/reindex_writers.py                      # 30 rounds on this checkout
    python bench/reindex_writers.py --code /tmp/before   # the vaultmem package of another checkout

The stand-in embedder keeps the model out of the timing. Prints one markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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


def vaultmem(env: dict, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "vaultmem", *args], env=env, check=True, capture_output=True,
                          text=True, cwd=env["PYTHONPATH"]).stdout


def base_vault(work: Path, env: dict) -> tuple[Path, dict]:
    base = work / "base"
    vaultmem(env, "init", str(base))
    known = {text: json.loads(vaultmem(env, "--vault", str(base), "--json", "add", "-n", "work", text))["id"]
             for text in KNOWN}
    subprocess.run([sys.executable, "-c", IMPORTER, str(base), "999", "400"], env=env, check=True, capture_output=True,
                   cwd=env["PYTHONPATH"])
    vaultmem(env, "--vault", str(base), "reindex")
    return base, known


def one_round(base: Path, known: dict, vault: Path, env: dict, rng: random.Random, tally: dict) -> None:
    shutil.copytree(base, vault, symlinks=True)
    python = [sys.executable, "-c"]
    here = {"env": env, "cwd": env["PYTHONPATH"]}  # the code to test first on the path (-c and -m put the cwd first)
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
        tally["examples"].append(err.strip().splitlines()[-1][:200])
    for importer in importers:
        out, err = importer.communicate()
        if importer.returncode or out.strip() != "0":
            tally["import failed"] += 1
            tally["examples"].append((err.strip().splitlines() or [out])[-1][:200])
    for reader in readers:
        for want, got, took in json.loads(reader.communicate()[0] or "[]"):
            tally["recalls"] += 1
            tally["slow"] += took > 1.0
            if got is not None and got not in known.values():
                tally["failed"] += 1
                tally["examples"].append(got[:200])
            elif got is None:
                tally["empty"] += 1
            elif got != want:
                tally["wrong"] += 1
    shutil.rmtree(vault)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--code", help="a checkout whose vaultmem package the processes import (default: this one)")
    args = p.parse_args()
    code = Path(args.code or ROOT).resolve()
    env = dict(os.environ, VAULTMEM_MODEL="stand-in", VAULTMEM_AUTOWATCH="off", VAULTMEM_AUTODECAY="off",
               VAULTMEM_NO_SERVER="1", PYTHONPATH=str(code))
    rng = random.Random(args.seed)
    tally = {"recalls": 0, "wrong": 0, "empty": 0, "failed": 0, "slow": 0, "import failed": 0, "reindex failed": 0,
             "examples": []}
    work = Path(tempfile.mkdtemp(prefix="reindex-writers-"))
    began = time.monotonic()
    try:
        base, known = base_vault(work, env)
        for n in range(args.rounds):
            one_round(base, known, work / f"round{n}", env, rng, tally)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"## reindex beside importers and readers ({args.rounds} rounds, seed {args.seed}, code {code}, "
          f"{time.monotonic() - began:.0f} s, load {os.getloadavg()[0]:.1f})\n")
    print("| recalls | wrong | empty | failed | over 1 s | importers failed | reindexes failed |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {tally['recalls']} | {tally['wrong']} | {tally['empty']} | {tally['failed']} | {tally['slow']} "
          f"| {tally['import failed']} | {tally['reindex failed']} |")
    for example in dict.fromkeys(tally["examples"]):
        print(f"\n- {example}")


if __name__ == "__main__":
    main()
