"""Many machines sharing one vault through git: clones that work apart, then merge.

A remote (a bare repository) starts with a vault of seed memories, each graded
once. Each of `--clones` clones then makes `--ops` random operations through the
API, committing every 50: add a memory, grade one (seed memories are graded on
every clone, so the same notes are graded on many sides), correct one, archive
one, or edit a body by hand (a line of its own per clone, as a person adds a
remark). Then the clones are merged into the remote one by one in random order:
each pulls (a git merge, with vaultmem's drivers or without) and pushes.

It reports what a person would notice:

- conflicts: files git stopped on that a person must resolve, outside true body
  conflicts (the same lines of a note's text changed on two sides); the goal is 0;
- body conflicts: those true text conflicts (resolved here by keeping both lines);
- reviews lost: grades made on some clone missing from the remote's review log at
  the end (or there twice);
- merge time per clone (the `git pull`), the ledger's size, and `verify --strict`
  on a fresh clone of the result.

    python bench/git_merge.py [--clones 8] [--ops 200] [--seed 1] [--plain]

`--plain` also runs the same operations with plain git (no drivers) for comparison.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("VAULTMEM_MODEL", "stand-in")  # merging is measured, not recall: no model load
os.environ["VAULTMEM_NO_SERVER"] = "1"
os.environ["VAULTMEM_AUTOWATCH"] = "off"

from vaultmem.errors import VaultmemError  # noqa: E402
from vaultmem.integrations import gitvault  # noqa: E402
from vaultmem.vault import Vault, init_vault  # noqa: E402

VERBOSE = "-v" in sys.argv
START = datetime(2026, 1, 5, 9, 0, 0)
SUBJECTS = ["postgres", "redis", "kafka", "nginx", "grafana", "vault", "consul", "argo", "celery", "minio",
            "rabbitmq", "etcd", "jaeger", "traefik", "clickhouse", "keycloak", "sentry", "loki", "envoy", "harbor"]


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd}: {done.stderr.strip() or done.stdout.strip()}")
    return done


def at(moment: datetime) -> None:
    os.environ["VAULTMEM_NOW"] = moment.strftime("%Y-%m-%dT%H:%M:%S")


def make_remote(work: Path, seeds: int, drivers: bool) -> Path:
    origin = work / "origin"
    git(work, "init", "-q", "-b", "main", str(origin))
    init_vault(origin)
    if drivers:
        gitvault.install(origin)
    vault = Vault(origin)
    at(START)
    for number in range(seeds):
        subject = SUBJECTS[number % len(SUBJECTS)]
        vault.add(f"Seed fact {number}: {subject} runs on host s{number} port {5000 + number}.\n\n"
                  f"Owner: team {number % 5}.", "seed", merge=False, supersede=False)
    at(START + timedelta(hours=1))
    for note in vault.notes():
        vault.grade(note.id, "good")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "seed")
    remote = work / "remote.git"
    git(work, "clone", "-q", "--bare", str(origin), str(remote))
    return remote


def clone(remote: Path, target: Path, drivers: bool) -> Path:
    git(remote.parent, "clone", "-q", str(remote), str(target))
    if drivers:
        gitvault.install(target)
    return target


def work_on(root: Path, index: int, ops: int, rng: random.Random) -> list[str]:
    """`ops` random operations on one clone; returns the review lines it wrote."""
    vault = Vault(root)
    log = root / ".vaultmem/reviews.jsonl"
    before = set(log.read_text().splitlines())
    for op in range(ops):
        at(START + timedelta(days=1, minutes=10 * op + index))
        notes = [n for n in vault.notes() if n.status == "active"]
        roll = rng.random()
        try:
            if roll < 0.25 or not notes:
                subject = rng.choice(SUBJECTS)
                vault.add(f"Clone {index} note {op}: {subject} setting {rng.randrange(10**6)} is on", f"c{index}",
                          merge=False, supersede=False)
            elif roll < 0.85:
                vault.grade(rng.choice(notes).id, rng.choice(["again", "hard", "good", "good", "easy"]))
            elif roll < 0.90:
                target = rng.choice(notes)
                vault.correct(target.id, f"Clone {index} corrects {target.id}: now {rng.randrange(10**6)}")
            elif roll < 0.94:
                vault.archive(rng.choice(notes).id, reason="bench")
            else:
                note = rng.choice(notes)
                path = root / note.path
                text = path.read_text()
                path.write_text(text.replace("\n\nOwner:", f"\n\nRemark from clone {index} at op {op}.\n\nOwner:", 1)
                                if "\n\nOwner:" in text else text + f"\nRemark from clone {index} at op {op}.\n")
                vault.verify()
        except VaultmemError:
            continue
        if op % 50 == 49:
            commit(root, f"clone {index}: ops to {op}")
    commit(root, f"clone {index}: done")
    return [line for line in log.read_text().splitlines() if line and line not in before]


def commit(root: Path, message: str) -> None:
    Vault(root).verify()  # hand edits on the record, as `vaultmem sync` does
    git(root, "add", "-A")
    if git(root, "diff", "--cached", "--quiet", check=False).returncode:
        git(root, "commit", "-q", "-m", message)


def merge_in(root: Path, drivers: bool) -> tuple[float, int, int]:
    """Pull into one clone (and with the drivers `vaultmem git resolve`, as `vaultmem sync`
    does) and push; (seconds of the pull, conflicts, true body conflicts)."""
    started = time.perf_counter()
    git(root, "pull", "-q", "--no-rebase", "--no-edit", check=False)
    if drivers:
        gitvault.resolve_moves(root)
    seconds = time.perf_counter() - started
    unmerged = [p for p in git(root, "diff", "--name-only", "--diff-filter=U").stdout.splitlines() if p]
    if VERBOSE and unmerged:
        print(git(root, "status", "--porcelain").stdout, file=sys.stderr)
    conflicts = body = 0
    for rel in unmerged:
        text = (root / rel).read_text(errors="replace") if (root / rel).exists() else ""
        head, _sep, rest = text.partition("\n---\n")
        if rel.endswith(".md") and "<<<<<<<" in rest and "<<<<<<<" not in head:
            body += 1
            (root / rel).write_text(keep_both(text))
        else:
            conflicts += 1
            if VERBOSE:
                print(f"--- {rel}\n{text[:1500]}", file=sys.stderr)
            git(root, "checkout", "--ours", "--", rel, check=False)  # what a person might do in a hurry
        git(root, "add", "--", rel)
    if git(root, "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False).returncode == 0:
        git(root, "commit", "-q", "--no-edit")
    git(root, "push", "-q")
    return seconds, conflicts, body


def keep_both(text: str) -> str:
    """A person's resolution of a body conflict: both sides' lines."""
    return "\n".join(line for line in text.split("\n")
                     if not line.startswith(("<<<<<<< ", ">>>>>>> ")) and line != "=======")


def run(clones: int, ops: int, seed: int, drivers: bool, work: Path) -> dict:
    rng = random.Random(seed)
    remote = make_remote(work, 40, drivers)
    roots = [clone(remote, work / f"clone{i}", drivers) for i in range(clones)]
    started = time.perf_counter()
    written = [work_on(root, i, ops, rng) for i, root in enumerate(roots)]
    ops_seconds = time.perf_counter() - started
    order = list(range(clones))
    rng.shuffle(order)
    times, conflicts, body = [], 0, 0
    for index in order:
        seconds, hard, soft = merge_in(roots[index], drivers)
        times.append(seconds)
        conflicts += hard
        body += soft
    final = clone(remote, work / "final", drivers)
    log = [line for line in (final / ".vaultmem/reviews.jsonl").read_text().splitlines() if line]
    counts = {}
    for line in log:
        counts[line] = counts.get(line, 0) + 1
    made = [line for lines in written for line in lines]
    lost = sum(1 for line in made if counts.get(line, 0) != 1)
    ledger = final / ".vaultmem/ledger.jsonl"
    verify = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(final), "verify", "--strict", "-q"],
                            capture_output=True, text=True).returncode
    return {"drivers": drivers, "grades": len(made), "lost": lost, "conflicts": conflicts, "body": body,
            "merge_median": statistics.median(times), "merge_max": max(times),
            "ledger_lines": sum(1 for _ in ledger.open()), "ledger_kb": ledger.stat().st_size / 1024,
            "merges": sum(1 for line in ledger.open() if '"op": "merge"' in line), "verify": verify,
            "ops_seconds": ops_seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clones", type=int, default=8)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-v", action="store_true", help="print each conflict")
    parser.add_argument("--plain", action="store_true", help="also run without the drivers (plain git)")
    args = parser.parse_args()
    rows = []
    for drivers in ([True, False] if args.plain else [True]):
        with tempfile.TemporaryDirectory(prefix="vaultmem-git-bench-") as folder:
            rows.append(run(args.clones, args.ops, args.seed, drivers, Path(folder)))
    print(f"{args.clones} clones x {args.ops} operations, merged into one remote in random order (seed {args.seed})\n")
    print("| merging | grades made | reviews lost | conflicts to resolve | true body conflicts | merge time per clone "
          "(median / max) | ledger | merge records | verify --strict |")
    print("|---|---:|---:|---:|---:|---|---|---:|---|")
    for row in rows:
        print(f"| {'vaultmem drivers' if row['drivers'] else 'plain git'} | {row['grades']} | {row['lost']} | "
              f"{row['conflicts']} | {row['body']} | {row['merge_median']:.2f} s / {row['merge_max']:.2f} s | "
              f"{row['ledger_lines']} lines, {row['ledger_kb']:.0f} KB | {row['merges']} | "
              f"{'exit 0' if row['verify'] == 0 else 'exit ' + str(row['verify'])} |")


if __name__ == "__main__":
    main()
