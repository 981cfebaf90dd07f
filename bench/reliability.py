"""Races a person's editor against vaultmem's writes, many times with random timing.

Each race runs a real editor in another process (saving by temp file +
rename, as Obsidian and most editors do, or moving the note back and forth
between two folders and, every third move, into a folder made just before) while
vaultmem grades the same note, through the Python API or the CLI (with or without
a running `vaultmem watch` answering it), with random
pauses on both sides. A third API race has vaultmem archive and restore the note in
turn while the editor moves it (a move of its own against the person's; the editor
finds the note wherever vaultmem put it); a fourth grades, and a fifth adds notes, while
the person renames the note's folder back and forth. Afterwards it counts what a user would notice:

- saves: the editor's saves made while grades ran; each appends a marker line
  to the body, on top of the file as it found it;
- lost: markers in neither the final file nor a save kept aside (a save vaultmem overwrote);
- aside: markers only in a save vaultmem kept beside the note (`.NAME.saved-…`) when it
  swapped a save out and the editor kept saving too fast for it to merge it back in
  (the grade then fails with an error naming that file);
- dupes: extra files holding the note's id (a move turned into a copy);
- failed: writes that failed for any reason but ConflictError (exit 3, "try again"),
  an error that is not vaultmem's own one-line error (a raw FileNotFoundError) included.

A person saving new notes into the folders a bulk add (`Vault.add_many`, checks off
and on) writes to, meanwhile: right after it, a command started then must find each
of them (`hidden`: notes it did not list, which only the full check, up to 10 s
later, would have found).

Two readers checking the vault at once (a watcher's rescan and a request, two
commands) while the person renames the note's folder back and forth: once the person
stops, a reader started then (its folder check, no full check) must list the note
(`hidden`: rounds in which it did not).

Another race adds contradicting memories from parallel processes ("service
alpha listens on port N"): every older one must end superseded exactly once,
each supersede linked both ways, one active at the end.

    python bench/reliability.py [--grades 400] [--cli-grades 150] [--adds 8x25]

The test suite runs the same races with fewer rounds (tests/test_reliability.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MARKER = "edit-mark-"
# The editor's longest pause between two saves / two moves (seconds, random below it): saves
# far faster than a person types; a move every 25 ms on average, far faster than anyone moves.
PAUSE = {"save": 0.004, "move": 0.05, "folder": 0.05}
WHAT = {"save": "saves", "move": "moves", "folder": "folder renames"}


# ---------------------------------------------------------------- the editor (another process)

def editor(path: Path, stop: Path, mode: str, seed: int, pause: float) -> None:
    """Save or move the note, or rename its folder, until `stop` exists; print how many times."""
    rng = random.Random(seed)
    folders = [path.parent, path.parent.parent / (path.parent.name + "-moved")]
    vault = path.parents[2]  # the note is at VAULT/memories/NAMESPACE/
    count = 0
    current = path
    while not stop.exists():
        time.sleep(rng.uniform(0, pause))
        try:
            if mode == "save":
                text = current.read_text(encoding="utf-8")
                temp = current.with_name(f".{current.name}.editor-{count}")
                temp.write_text(f"{text.rstrip()}\n{MARKER}{count}\n", encoding="utf-8")
                os.replace(temp, current)
            elif mode == "folder":  # the namespace renamed back and forth, the note in it
                there = folders[1] if current.parent == folders[0] else folders[0]
                if there.exists():  # vaultmem made it again meanwhile (an add): set that one aside
                    os.rename(there, there.with_name(f"{there.name}-{count}"))
                os.rename(current.parent, there)
                current = there / current.name
            else:
                # Mostly back and forth between two folders; every third move into a folder made
                # just before (a person sorting notes into a new sub-folder).
                folder = folders[0].with_name(f"{folders[0].name}-new-{count}") if count % 3 == 2 \
                    else folders[(count + 1) % 2]
                target = folder / current.name
                target.parent.mkdir(parents=True, exist_ok=True)
                os.rename(current, target)
                current = target
            count += 1
        except OSError as exc:  # gone (vaultmem moved it), or a folder made again in that instant
            if not isinstance(exc, FileNotFoundError) and mode != "folder":
                raise
            if mode == "move":  # vaultmem moved it (archive, restore): the person finds it where it is now
                current = next((p for p in vault.rglob(current.name)
                                if not any(part.startswith(".") for part in p.relative_to(vault).parts)), current)
            continue
    print(count)


def writer(vault: Path, stop: Path, seed: int, pause: float) -> None:
    """Save new notes into the bulk add's folders until `stop` exists; print how many."""
    rng = random.Random(seed)
    count = 0
    while not stop.exists():
        time.sleep(rng.uniform(0, pause))
        folder = vault / "memories" / rng.choice(BULK_NAMESPACES)
        folder.mkdir(parents=True, exist_ok=True)
        temp = folder / f".hand-{count}.md.tmp"
        temp.write_text(f"---\nid: hand{count}\ntype: memory\nnamespace: {folder.name}\n---\n"
                        f"A note saved by hand, number {count}, while the import ran\n", encoding="utf-8")
        os.replace(temp, folder / f"hand-{count}.md")
        count += 1
    print(count, flush=True)


BULK_NAMESPACES = ("imported", "team")


def saves_during_bulk_add(root: Path, adds: int, checked: bool, seed: int = 0, pause: float = 0.02) -> dict:
    """A person saves new notes into the folders `adds` bulk adds go to; afterwards a new
    reader lists the vault at once: `hidden` counts the person's notes it does not list."""
    from vaultmem.vault import Vault, init_vault

    init_vault(root)
    vault = Vault(root)
    rng = random.Random(seed)
    items = [{"text": f"Imported fact {i}: service {rng.choice('abcdefgh')}{i} runs on port {1000 + i}",
              "namespace": rng.choice(BULK_NAMESPACES)} for i in range(adds)]
    if not checked:
        items = [{**item, "merge": False, "supersede": False} for item in items]
    stop = root.parent / f"{root.name}.stop"
    person = subprocess.Popen([sys.executable, __file__, "--writer", str(root), str(stop), str(seed), str(pause)],
                              stdout=subprocess.PIPE, text=True)
    try:
        results = vault.add_many(items)
    finally:
        stop.touch()
        saves = int(person.communicate(timeout=60)[0] or 0)
    listed = {note.id for note in Vault(root).notes()}
    hidden = [f"hand{i}" for i in range(saves) if f"hand{i}" not in listed]
    return {"race": f"new notes saved during a bulk add ({'checks on' if checked else 'checks off'})",
            "events": saves, "writes ok": sum(not isinstance(r, Exception) for r in results),
            "failed": sum(isinstance(r, Exception) for r in results), "hidden": len(hidden),
            "first failure": f"{hidden[0]} not listed" if hidden else ""}


def checker(vault: Path, stop: Path) -> None:
    """Check the vault's files over and over (folder checks only) until `stop` exists."""
    from vaultmem.store import catalog as catalog_module
    from vaultmem.vault import Vault

    catalog_module.FULL_CHECK_SECONDS = 3600.0  # it would mend what the race counts
    reader = Vault(vault)
    while not stop.exists():
        reader.catalog(fresh=True)


def checks_during_folder_renames(root: Path, rounds: int, seed: int = 0, readers: int = 2,
                                 filler: int = 2000) -> dict:
    """`rounds` times: `readers` processes check the files over and over while the editor
    renames the note's folder back and forth; then a new reader's folder check must list the
    note. The full check, which would mend what this counts, is held off meanwhile (and run
    between rounds)."""
    from vaultmem.store import catalog as catalog_module
    from vaultmem.vault import Vault, init_vault

    init_vault(root)
    note = Vault(root).add(f"Checks {seed}: the staging database listens on port 5433", "race",
                           merge=False, supersede=False).note
    # Other notes in its folder: a check that lists the folder takes a while (a vault of some size).
    Vault(root).add_many([{"text": f"Filler {i}: service {i} answers on port {2000 + i}", "namespace": "race",
                           "merge": False, "supersede": False} for i in range(filler)])
    name = Path(note.path).name
    rng = random.Random(seed)
    hidden = renames = 0
    failures: list[str] = []
    full_every, catalog_module.FULL_CHECK_SECONDS = catalog_module.FULL_CHECK_SECONDS, 3600.0
    try:
        for round_ in range(rounds):
            stop = root.parent / f"stop-checks-{seed}-{round_}"
            where = next(p for p in (root / "memories").rglob(name))
            checkers = [subprocess.Popen([sys.executable, __file__, "--checker", str(root), str(stop)])
                        for _ in range(readers)]
            time.sleep(0.3)  # the checkers under way
            editor = _start_editor(where, stop, "folder", seed * 1000 + round_, PAUSE["folder"] / 5)
            time.sleep(rng.uniform(0.1, 0.4))
            stop.touch()
            renames += int(editor.communicate(timeout=60)[0] or 0)
            for process in checkers:
                process.wait(60)
            time.sleep(0.06)  # past the folder's racy window: a check trusts its mtime
            if note.id not in {n.id for n in Vault(root).notes()}:
                hidden += 1
                failures.append(f"round {round_}: not listed")
            Vault(root).catalog(full=True)  # mended for the next round
    finally:
        catalog_module.FULL_CHECK_SECONDS = full_every
    return {"race": f"folder renames during {readers} checks at once", "events": renames, "writes ok": rounds,
            "hidden": hidden, "first failure": failures[0] if failures else ""}


def _start_watcher(root: Path) -> subprocess.Popen:
    """`vaultmem watch` on the vault, once it serves: the CLI's grades then go through it."""
    watcher = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(root), "watch"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = watcher.stdout.readline()
    if "serving recall" not in line:
        watcher.kill()
        raise RuntimeError(f"the watcher did not start: {line!r}")
    threading.Thread(target=watcher.stdout.read, daemon=True).start()  # its later lines never fill the pipe
    return watcher


def _start_editor(path: Path, stop: Path, mode: str, seed: int, pause: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "--editor", str(path), str(stop), mode, str(seed), str(pause)],
                            stdout=subprocess.PIPE, text=True)


# ---------------------------------------------------------------- races

def race(root: Path, mode: str, grades: int, via: str = "api", seed: int = 0, pause: float = 0.004,
         op: str = "grade") -> dict:
    """One note, `grades` writes through `via` while the editor saves or moves it: grades, or
    (API only) `op="archive"`: archive and restore in turn, which move the note themselves;
    `op="add"`: new notes in the note's folder (then `lost` counts adds that said ok and are
    in no file, `dupes` those in two, and failed adds that left a temp file count as failed)."""
    from vaultmem.errors import ConflictError, VaultmemError
    from vaultmem.vault import Vault, init_vault

    if not (root / ".vaultmem").exists():
        init_vault(root)
    vault = Vault(root)
    note = vault.add(f"Race {mode} {seed}: the staging database listens on port 5433", "race",
                     merge=False, supersede=False).note
    stop = root.parent / f"stop-{mode}-{seed}"
    stop.unlink(missing_ok=True)
    rng = random.Random(seed)
    watcher = _start_watcher(root) if via == "watcher" else None
    process = _start_editor(root / note.path, stop, mode, seed, pause)
    ok = conflicts = 0
    failures: list[str] = []
    added: list[str] = []
    env = dict(os.environ) if watcher else dict(os.environ, VAULTMEM_NO_SERVER="1")
    try:
        for _ in range(grades):
            time.sleep(rng.uniform(0, pause))
            if via == "api":
                try:
                    writer = Vault(root)
                    if op == "grade":
                        writer.grade(note.id, "good")
                    elif op == "add":
                        added.append(writer.add(f"Fact {len(added)}: port {6000 + len(added)} is service "
                                                f"{len(added)}'s", "race", merge=False, supersede=False).note.id)
                    elif writer.get(note.id).status == "archived":
                        writer.restore(note.id)
                    else:
                        writer.archive(note.id)
                    ok += 1
                except ConflictError:
                    conflicts += 1
                except VaultmemError as exc:
                    failures.append(str(exc))
                except OSError as exc:  # not a clear one-line error: what a user must never see
                    failures.append(f"{type(exc).__name__}: {exc}")
            else:
                done = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(root), "grade", note.id,
                                       "good", "-q"], env=env, capture_output=True, text=True)
                if done.returncode == 0:
                    ok += 1
                elif done.returncode == 3:
                    conflicts += 1
                else:
                    failures.append(done.stderr.strip())
    finally:
        stop.touch()
        saves = int((process.communicate(timeout=60)[0] or "0").strip() or 0)
        if watcher:
            watcher.terminate()
            watcher.wait(timeout=30)
    holders = [p for p in root.rglob("*.md") if f"id: {note.id}" in p.read_text(encoding="utf-8")]
    text = holders[0].read_text(encoding="utf-8") if holders else ""
    kept = set(re.findall(rf"{MARKER}(\d+)", text))
    aside = {m for kept_file in root.rglob(".*.saved-*")
             for m in re.findall(rf"{MARKER}(\d+)", kept_file.read_text(encoding="utf-8"))} - kept
    lost = saves - len(kept | aside) if mode == "save" else 0
    reps = _reps(text) if op == "grade" else ""
    dupes = max(0, len(holders) - 1)
    if op == "add":
        every = "".join(p.read_text(encoding="utf-8") for p in root.rglob("*.md"))
        lost = sum(1 for i in added if f"id: {i}\n" not in every)
        dupes = sum(1 for i in added if every.count(f"id: {i}\n") > 1)
        failures += [f"temp file left: {p.name}" for p in root.rglob(".*.vaultmem-tmp")]
    writes = {"grade": "grades", "archive": "archives/restores", "add": "adds"}[op]
    return {"race": f"{WHAT[mode]} during {writes} ({via})", "events": saves,
            "writes ok": ok, "conflicts": conflicts, "failed": len(failures), "lost": lost,
            "aside": len(aside) if mode == "save" else 0,
            "dupes": dupes, "reps": reps, "first failure": failures[0] if failures else ""}


# A save made from an older read replaces the grades made since (the person's file wins), so
# `reps` counts every grade only in the moves and folder races: there it must equal "writes ok".


def _reps(text: str) -> int:
    found = re.search(r"^reps: (\d+)", text, re.M)
    return int(found.group(1)) if found else -1


def contradicting_adds(root: Path, processes: int, per_process: int, model: str = "default") -> dict:
    """`processes` processes each add `per_process` "service alpha listens on port N" at once
    (with the real model by default: whether two texts contradict is the model's call)."""
    from vaultmem.vault import Vault, init_vault

    init_vault(root)
    env = dict(os.environ, VAULTMEM_MODEL=model)
    script = ("import sys; from vaultmem.vault import Vault; v = Vault(sys.argv[1]); base = int(sys.argv[2])\n"
              "for i in range(int(sys.argv[3])):\n"
              "    v.add(f'service alpha listens on port {base + i}', 'svc')\n")
    started = time.perf_counter()
    workers = [subprocess.Popen([sys.executable, "-c", script, str(root), str(9000 + 100 * p), str(per_process)],
                                env=env) for p in range(processes)]
    codes = [w.wait() for w in workers]
    seconds = time.perf_counter() - started
    notes = Vault(root).notes(include_hidden=True)
    by_link = {n.link: n for n in notes}
    active = [n for n in notes if n.status == "active"]
    superseded = [n for n in notes if n.status == "superseded"]
    unlinked = [n for n in superseded if not n.superseded_by or n.superseded_by not in by_link
                or by_link[n.superseded_by].supersedes != n.link]
    supersedes = [n.supersedes for n in notes if n.supersedes]
    twice = len(supersedes) - len(set(supersedes))
    return {"race": f"contradicting adds ({processes} processes x {per_process})", "events": len(notes),
            "writes ok": "", "conflicts": "", "failed": sum(1 for c in codes if c), "lost": processes * per_process
            - len(notes), "dupes": twice, "reps": "", "active": len(active), "unlinked": len(unlinked),
            "seconds": round(seconds, 1)}


# ---------------------------------------------------------------- table

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grades", type=int, default=400,
                        help="API grades per race (saves, moves, folder renames; half as many archives/restores)")
    parser.add_argument("--cli-grades", type=int, default=150, help="CLI grades per race")
    parser.add_argument("--rounds", type=int, default=3, help="repeat each API race with another seed")
    parser.add_argument("--adds", default="8x25", help="PROCESSESxADDS for the contradicting adds")
    parser.add_argument("--bulk", type=int, default=1500, help="adds per bulk add (checks off; a third of it on)")
    parser.add_argument("--check-rounds", type=int, default=40, help="rounds of checks at once during folder renames")
    args = parser.parse_args()
    os.environ.setdefault("VAULTMEM_MODEL", "stand-in")
    rows = []
    with tempfile.TemporaryDirectory(prefix="vaultmem-reliability-") as work:
        work = Path(work)
        for seed in range(args.rounds):
            for mode in ("save", "move"):
                rows.append(race(work / f"api-{mode}-{seed}", mode, args.grades, "api", seed, PAUSE[mode]))
            rows.append(race(work / f"api-archive-{seed}", "move", args.grades // 2, "api", seed, PAUSE["move"],
                             op="archive"))
            rows.append(race(work / f"api-folder-{seed}", "folder", args.grades, "api", seed, PAUSE["folder"]))
            rows.append(race(work / f"api-folder-adds-{seed}", "folder", args.grades // 2, "api", seed,
                             PAUSE["folder"], op="add"))
        if args.cli_grades:
            for mode in ("save", "move"):
                rows.append(race(work / f"cli-{mode}", mode, args.cli_grades, "cli", 99, PAUSE[mode] * 5))
            rows.append(race(work / "watcher-folder", "folder", args.cli_grades, "watcher", 99, PAUSE["folder"]))
        for seed in range(args.rounds):
            rows.append(saves_during_bulk_add(work / f"bulk-off-{seed}", args.bulk, False, seed))
            rows.append(saves_during_bulk_add(work / f"bulk-on-{seed}", args.bulk // 3, True, seed))
        for seed in range(args.rounds):
            rows.append(checks_during_folder_renames(work / f"checks-{seed}", args.check_rounds, seed))
        processes, per = (int(x) for x in args.adds.split("x"))
        rows.append(contradicting_adds(work / "adds-parallel", processes, per))
        rows.append(contradicting_adds(work / "adds-one-process", 1, processes * per))
    columns = ["race", "events", "writes ok", "reps", "conflicts", "failed", "lost", "aside", "dupes", "hidden",
               "active", "unlinked"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    raced = [r for r in rows if "lost" in r and "during" in r["race"]]
    total, lost, dupes = (sum(r[key] for r in raced) for key in ("events", "lost", "dupes"))
    print(f"\n{total} editor saves/moves raced against vaultmem's writes; lost {lost}, duplicated {dupes}")
    hidden = [r for r in rows if "hidden" in r]
    print(f"{sum(r['events'] for r in hidden)} notes saved or folders renamed during bulk adds and checks; "
          f"hidden from the next command: {sum(r['hidden'] for r in hidden)} notes or rounds")
    for row in rows:
        if row.get("first failure"):
            print(f"first failure in {row['race']}: {row['first failure']}")
    print(json.dumps({"rows": rows}), file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--editor":
        editor(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--checker":
        checker(Path(sys.argv[2]), Path(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--writer":
        writer(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    else:
        main()
