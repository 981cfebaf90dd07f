"""How long a running watcher keeps requests waiting while another process holds the index lock.

Another process writes the indexes at length: `vaultmem reindex`, a big import, a first
embedding without a watcher. Each run: a fresh vault of six memories and a `vaultmem watch`
process; `--holds` times a process takes `.vaultmem/index.lock` for a random 0.5-4 s, and
meanwhile a client sends the watcher what agents and editors do, at random moments: a recall of a
known memory, an add of a new one, a grade, a note written by hand (then asked for by its word
until the watcher finds it). Each request's wait is timed and its answer checked (the recall's
first hit is the memory asked about; the add added; the grade graded).

    python bench/index_lock_held.py                    # 6 runs of 10 holds
    python bench/index_lock_held.py --before 85a748f   # the same, alternating with that commit

`--client cli` sends the same requests as `vaultmem` commands, each a new process, with no
watcher running (what a hook or a script without a watcher does).

`--before REV` runs every other run on a `git archive` of REV (bench/reindex_live.py's
`alternating`). The stand-in embedder keeps the model out of the timing. Prints one markdown table.
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from recall_perf import machine_facts, pct  # noqa: E402
from reindex_live import alternating  # noqa: E402

from vaultmem.service.client import ask  # noqa: E402

MEMORIES = ["Deploys go out through the teal pipeline", "The staging database is Postgres 16",
            "Backups run nightly at 02:00 UTC", "Alice owns the billing service",
            "Release notes are written in the changelog folder", "The VPN certificate expires in March"]
HOLD = "import sys, time\nfrom filelock import FileLock\nwith FileLock(sys.argv[1]):\n    print('held', flush=True)\n" \
       "    time.sleep(float(sys.argv[2]))\n"
HAND = "---\nid: hand{n:04d}\ntype: memory\nnamespace: work\n---\nThe {word} checklist is pinned in the ops channel.\n"
OPS = ("recall", "add", "grade", "hand note found")
FOUND_WITHIN = 10.0  # seconds a hand note is asked for before it counts as not found


def cli_ask(vault: Path, env: dict, work: Path, request: dict) -> dict | None:
    """`request` (a watcher request: recall, add or grade) run as a `vaultmem` command in a new
    process; its answer in the watcher's shape."""
    op, args = request["op"], request.get("args", {})
    argv = (["recall", request["query"]] if op == "recall" else
            ["add", "-n", args["namespace"], args["text"]] if op == "add" else
            ["grade", args["note_id"], args["rating"]])
    done = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(vault), "--json", *argv], env=env,
                          cwd=work, capture_output=True, text=True, timeout=600)
    if done.returncode:
        return None
    data = json.loads(done.stdout)
    return {"ok": True, "hits": data} if op == "recall" else {"ok": True, "data": data}


def one_run(seed: int, holds: int, code: Path | None, work: Path, client: str = "watcher") -> dict[str, list]:
    """{op: [(seconds, right)]} for one watcher (or, `client` "cli", none: a process per request)
    and `holds` holds of the index lock, on a vault of its own (each arm of a run makes the same notes)."""
    env = dict(os.environ, VAULTMEM_MODEL="stand-in", VAULTMEM_AUTOWATCH="off", VAULTMEM_AUTODECAY="off")
    env.pop("VAULTMEM_VAULT", None)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    rng = random.Random(seed)
    vault = Path(tempfile.mkdtemp(prefix=f"vault-{seed}-", dir=work))
    subprocess.run([sys.executable, "-m", "vaultmem", "init", str(vault)], env=env, cwd=work, check=True,
                   capture_output=True)
    known = {}
    for text in MEMORIES:
        out = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(vault), "--json", "add", "-n", "work",
                              text], env=env, cwd=work, check=True, capture_output=True, text=True).stdout
        known[text] = json.loads(out)["id"]
    watcher = None
    if client == "watcher":
        watcher = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(vault), "watch"], env=env,
                                   cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert "serving recall" in watcher.stdout.readline()
        send = lambda request: ask(str(vault), request, timeout=60.0)  # noqa: E731
    else:
        send = lambda request: cli_ask(vault, env, work, request)  # noqa: E731
    results: dict[str, list] = collections.defaultdict(list)
    try:
        def timed(op: str, request: dict, check) -> dict | None:
            started = time.monotonic()
            answer = send(request)
            results[op].append((time.monotonic() - started, bool(answer and answer.get("ok") and check(answer))))
            return answer

        n = 0
        for _hold in range(holds):
            seconds = rng.uniform(0.5, 4.0)
            holder = subprocess.Popen([sys.executable, "-c", HOLD, str(vault / ".vaultmem" / "index.lock"),
                                       str(seconds)], stdout=subprocess.PIPE, text=True)
            assert holder.stdout.readline().strip() == "held"
            ends = time.monotonic() + seconds
            while time.monotonic() < ends:
                time.sleep(rng.uniform(0.0, 0.2))
                n += 1
                op = rng.choice(OPS)
                if op == "recall":
                    text = rng.choice(MEMORIES)
                    timed(op, {"op": "recall", "query": text},
                          lambda a, text=text: bool(a["hits"]) and a["hits"][0]["id"] == known[text])
                elif op == "add":
                    timed(op, {"op": "add", "args": {"text": f"Runbook {n} names owl{n}q as its on-call contact",
                                                     "namespace": "work"}},
                          lambda a: a["data"]["action"] == "added")
                elif op == "grade":
                    timed(op, {"op": "grade", "args": {"note_id": rng.choice(list(known.values())), "rating": "good"}},
                          lambda a: a["data"]["reps"] >= 1)
                else:
                    word = f"heron{n}z"
                    (vault / "memories" / "work" / f"hand-{n}.md").write_text(HAND.format(n=n, word=word))
                    started, found = time.monotonic(), False
                    while not found and time.monotonic() - started < FOUND_WITHIN:
                        answer = send({"op": "recall", "query": word})
                        found = bool(answer and answer.get("ok") and answer["hits"]
                                     and answer["hits"][0]["id"] == f"hand{n:04d}")
                        if not found:
                            time.sleep(0.05)
                    results[op].append((time.monotonic() - started, found))
            holder.wait()
    finally:
        if watcher is not None:
            watcher.terminate()
            watcher.wait(timeout=30)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--holds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--before", help="a git revision to run every other run on, for comparison")
    parser.add_argument("--client", choices=("watcher", "cli"), default="watcher",
                        help="send the requests to a watcher (default) or run each as a vaultmem command")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vm-ilh-"))
    try:
        totals = collections.defaultdict(lambda: collections.defaultdict(list))
        for run, arm, code in alternating(args.runs, args.before, work, "after (this checkout)"):
            for op, values in one_run(args.seed + run, args.holds, code, work, args.client).items():
                totals[arm][op].extend(values)
            print(f"run {run + 1}/{args.runs} {arm}: done", file=sys.stderr, flush=True)
        print(f"# bench/index_lock_held.py: {args.runs} runs x {args.holds} holds of the index lock (0.5-4 s), "
              f"requests {'to a watcher' if args.client == 'watcher' else 'as vaultmem commands, no watcher'}\n")
        for line in machine_facts():
            print(line)
        print("\n| code | request | count | p50 ms | p95 ms | max ms | over 1 s | not right |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for arm, ops in totals.items():
            for op in OPS:
                values = ops.get(op, [])
                waits = [1000 * s for s, _right in values]
                wrong = sum(1 for _s, right in values if not right)
                over = sum(1 for w in waits if w > 1000)
                print(f"| {arm} | {op} | {len(values)} | {pct(waits, 50):.0f} | {pct(waits, 95):.0f} | "
                      f"{max(waits, default=0):.0f} | {over} | {wrong} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
