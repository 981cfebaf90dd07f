"""Random histories of machines sharing a vault through `vaultmem sync`: does every clone's
ledger still verify after every sync, and do the clones end with the same notes?

bench/git_merge.py merges clones once, at the end. People sync now and then while they
work, so merges cross (A merges B's push while B goes on, then B merges A's merge) and a
pull may fast-forward to someone else's merge. Here each history starts from a bare remote
with a few memories; `--clones` clones then take `--steps` random steps, each on a random
clone: add, grade, correct, archive, restore, resolve a contest, edit a body by hand (a line
added, or a word changed), rename or delete a note file by hand, `verify`, `vaultmem sync`,
or a plain `git pull` (after `verify` and a commit, as the README's plain-git recipe). A true
conflict is settled as a person would (keep both sides' lines in a body, our side in the
properties, keep a note one side deleted and the other changed), then synced again. At the
end every clone syncs twice.

It counts, over all histories:

- broken chains: `verify --strict` after a sync (or plain pull) reports a break, a torn
  record or tampering (the ledger's trust promise; the goal is 0);
- left unrecorded: a sync's merge left a note whose text its last record does not vouch for
  (the next sync records it as a hand edit; a plain pull's are counted apart);
- end not clean: `verify --strict` fails after the final syncs, or `git status` is not
  clean, or the clones hold different notes (goal 0).

    python bench/sync_histories.py [--histories 40] [--steps 24] [--clones 3] [--seed 1]
    python bench/sync_histories.py --vaultmem /path/to/other/checkout   # another version

Prints one markdown table; exits 0.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPS = ("grade", "grade", "add", "edit", "edit", "sync", "sync", "sync", "correct", "archive",
       "restore", "resolve", "rename", "delete", "verify", "plain pull")


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done


def cli(root: Path, *args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from vaultmem.cli.main import cli as vaultmem

    result = CliRunner().invoke(vaultmem, ["--vault", str(root), *args], catch_exceptions=False)
    return result.exit_code, result.output


def settle(root: Path) -> None:
    """A person's resolution of a true conflict: in the properties our side, in the body both
    sides' lines; a note deleted on one side and changed on the other is kept."""
    for rel in git(root, "diff", "--name-only", "--diff-filter=U").stdout.split():
        path = git(root, "rev-parse", "--show-toplevel").stdout.strip() / Path(rel)
        if not path.exists():
            git(root, "rm", "-q", rel)
            continue
        kept, side, fences = [], None, 0
        for line in path.read_text().splitlines(keepends=True):
            if line.startswith(("<<<<<<<", "|||||||", ">>>>>>>")) or (line.startswith("=======") and side):
                side = {"<": "ours", "|": "base", ">": None, "=": "theirs"}[line[0]]
                continue
            if line.strip() == "---" and side is None:
                fences += 1
            if side == "base" or (side == "theirs" and fences < 2):
                continue
            kept.append(line)
        path.write_text("".join(kept))
        git(root, "add", rel)
    git(root, "commit", "-q", "--no-edit")


def broken(output: str) -> bool:
    return any(word in output for word in ("break:", "torn:", "tampering:"))


def history(seed: int, steps: int, clones: int, work: Path, counts: Counter) -> None:
    from vaultmem.store.template import init_vault
    from vaultmem.vault import Vault

    rng = random.Random(seed)
    top = Path(tempfile.mkdtemp(prefix=f"h{seed}-", dir=work))
    origin = top / "origin"
    git(top, "init", "-q", str(origin))
    init_vault(origin)
    cli(origin, "git", "install")
    os.environ["VAULTMEM_NOW"] = "2026-02-01T09:00:00"
    vault = Vault(origin)
    for i in range(4):
        vault.add(f"Service s{i} listens on port {8000 + i} in staging", "work", merge=False, supersede=False)
    vault.verify()
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "base")
    remote = top / "remote.git"
    git(top, "clone", "-q", "--bare", str(origin), str(remote))
    roots = []
    for name in "abcdefgh"[:clones]:
        git(top, "clone", "-q", str(remote), str(top / name))
        cli(top / name, "git", "install")
        roots.append(top / name)

    def sync(root: Path) -> None:
        code, out = cli(root, "sync")
        counts["syncs"] += 1
        if code == 3:
            counts["conflicts a person settled"] += 1
            settle(root)
            code, out = cli(root, "sync")
        code, out = cli(root, "verify", "--strict")
        if broken(out):
            counts["broken chains"] += 1
        elif code:
            counts["left unrecorded by a sync"] += 1

    for step in range(steps):
        root = rng.choice(roots)
        vault = Vault(root)
        os.environ["VAULTMEM_NOW"] = f"2026-02-{step % 27 + 2:02d}T{rng.randint(8, 20):02d}:00:00"
        notes = vault.notes()
        op = rng.choice(OPS)
        note = rng.choice(notes) if notes else None
        try:
            if op == "sync":
                sync(root)
            elif op == "plain pull":
                cli(root, "verify")
                git(root, "add", "-A")
                git(root, "commit", "-qm", "work", check=False)
                git(root, "pull", "--no-rebase", "--no-edit", "-q", check=False)
                if git(root, "diff", "--name-only", "--diff-filter=U").stdout.strip():
                    settle(root)
                git(root, "push", "-q", check=False)
                code, out = cli(root, "verify", "--strict")
                counts["plain pulls"] += 1
                if broken(out):
                    counts["broken chains"] += 1
                elif code:
                    counts["left unrecorded by a plain pull"] += 1
            elif op == "verify":
                cli(root, "verify")
            elif op == "add":
                vault.add(f"Machine {root.name} learned fact {step} about widget w{rng.randint(0, 99)}", "work")
            elif op == "restore":
                archived = [n for n in vault.notes(include_hidden=True) if n.status == "archived"]
                if archived:
                    vault.restore(rng.choice(archived).id)
            elif op == "resolve":
                contested = [n for n in notes if n.contested]
                if contested:
                    vault.resolve(rng.choice(contested).id, both=rng.random() < 0.5)
            elif note is None:
                continue
            elif op == "grade":
                vault.grade(note.id, rng.choice(["good", "hard", "again"]))
            elif op == "correct":
                vault.correct(note.id, f"Corrected on {root.name} at step {step}: port {9000 + step}")
            elif op == "archive":
                vault.archive(note.id)
            elif op == "edit":
                path = root / note.path
                text = path.read_text()
                path.write_text(text + f"\nA line by hand, {step} on {root.name}.\n" if rng.random() < 0.5
                                else text.replace(" on ", f" ({root.name} {step}) on ", 1))
            elif op == "rename":
                path = root / note.path
                path.rename(path.with_name(f"renamed-{step}-{path.name}"))
            elif op == "delete":
                (root / note.path).unlink()
        except Exception as exc:  # noqa: BLE001 - a refusal (a suspended note, a contest gone): counted
            counts[f"refused: {type(exc).__name__}"] += 1
    os.environ["VAULTMEM_NOW"] = "2026-03-01T09:00:00"
    for root in roots + roots:
        sync(root)
    views = []
    for root in roots:
        code, _out = cli(root, "verify", "--strict")
        dirty = git(root, "status", "--porcelain").stdout.strip()
        views.append(sorted((p.relative_to(root).as_posix(), p.read_text()) for p in root.rglob("*.md")
                            if not {".git", ".obsidian", "templates"} & set(p.relative_to(root).parts)))
        if code or dirty:
            counts["end not clean"] += 1
    if any(view != views[0] for view in views):
        counts["clones differ at the end"] += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=40)
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--clones", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--vaultmem", default=str(ROOT), help="the checkout whose vaultmem runs (default: this one)")
    args = parser.parse_args()
    checkout = str(Path(args.vaultmem).resolve())
    sys.path.insert(0, checkout)
    # (git runs the merge drivers in processes of their own: they import the same checkout)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))
    os.environ["VAULTMEM_NO_SERVER"] = "1"
    work = Path(tempfile.mkdtemp(prefix="vaultmem-sync-histories-"))
    config = work / "gitconfig"
    config.write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    os.environ["GIT_CONFIG_GLOBAL"], os.environ["GIT_CONFIG_NOSYSTEM"] = str(config), "1"
    counts: Counter = Counter()
    start = time.perf_counter()
    try:
        for number in range(args.histories):
            history(args.seed * 100_000 + number, args.steps, args.clones, work, counts)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    import vaultmem

    print(f"## sync histories: {args.histories} histories of {args.steps} steps on {args.clones} clones "
          f"(seed {args.seed}, vaultmem from {Path(vaultmem.__file__).parent.parent}, "
          f"{time.perf_counter() - start:.0f} s)\n")
    print("| measure | count |\n|---|---:|")
    for key in ("syncs", "plain pulls", "conflicts a person settled", "broken chains", "left unrecorded by a sync",
                "left unrecorded by a plain pull", "end not clean", "clones differ at the end"):
        print(f"| {key} | {counts[key]} |")
    for key in sorted(k for k in counts if k.startswith("refused")):
        print(f"| {key} (a step the vault refused) | {counts[key]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
