"""What the catalog's format costs against pickle, which it replaced because a
planted pickle runs code on load (issue: caches that cannot run code).

On an existing vault (make one with bench/peers.py --keep, or any vault), it
times, from a cold process each time:
- loading every note: the SQLite catalog (rows of JSON) vs the same notes
  pickled into one file (what the old cache did);
- finding one note by id: one indexed SQLite row vs unpickling everything;
- the size of each on disk.

    python bench/cache_format.py VAULT [--repeat 5]
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LOAD_SQLITE = """
import sys, time
from vaultmem.store.catalog import NOTE_COLUMNS, note_from_row
import sqlite3
t = time.perf_counter()
db = sqlite3.connect(sys.argv[1])
notes = [note_from_row(*row) for row in db.execute(f"SELECT {NOTE_COLUMNS} FROM notes WHERE note IS NOT NULL")]
print((time.perf_counter() - t) * 1000, len(notes))
"""
LOAD_PICKLE = """
import sys, time, pickle
t = time.perf_counter()
with open(sys.argv[1], "rb") as handle:
    notes = pickle.load(handle)
print((time.perf_counter() - t) * 1000, len(notes))
"""
ONE_SQLITE = """
import sys, time, sqlite3
from vaultmem.store.catalog import NOTE_COLUMNS, note_from_row
t = time.perf_counter()
db = sqlite3.connect(sys.argv[1])
found = db.execute(f"SELECT {NOTE_COLUMNS} FROM notes WHERE id = ?", (sys.argv[2],))
rows = [note_from_row(*row) for row in found]
print((time.perf_counter() - t) * 1000, len(rows))
"""
ONE_PICKLE = """
import sys, time, pickle
t = time.perf_counter()
with open(sys.argv[1], "rb") as handle:
    rows = [n for n in pickle.load(handle) if n.id == sys.argv[2]]
print((time.perf_counter() - t) * 1000, len(rows))
"""


def timed(script: str, *args: str, repeat: int) -> float:
    """Median milliseconds of `script` (each run a fresh interpreter, imports excluded)."""
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True)
        runs.append(float(out.stdout.split()[0]))
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from vaultmem.vault import Vault

    vault = Vault(args.vault)
    notes = vault.catalog(full=True).notes
    db = vault.cache_dir / "catalog.sqlite"
    with tempfile.TemporaryDirectory() as work:
        pickled = Path(work) / "catalog.pickle"
        with open(pickled, "wb") as handle:
            pickle.dump(notes, handle, protocol=pickle.HIGHEST_PROTOCOL)
        some_id = notes[len(notes) // 2].id
        rows = [
            ("load every note", timed(LOAD_SQLITE, str(db), repeat=args.repeat),
             timed(LOAD_PICKLE, str(pickled), repeat=args.repeat)),
            ("find one note by id", timed(ONE_SQLITE, str(db), some_id, repeat=args.repeat),
             timed(ONE_PICKLE, str(pickled), some_id, repeat=args.repeat)),
        ]
        sizes = (db.stat().st_size / 1e6, pickled.stat().st_size / 1e6)
    print(f"{len(notes)} notes in {args.vault}\n")
    print("| | SQLite catalog (ms) | pickle (ms) | ratio |")
    print("|---|---|---|---|")
    for name, sqlite_ms, pickle_ms in rows:
        print(f"| {name} | {sqlite_ms:.1f} | {pickle_ms:.1f} | {sqlite_ms / pickle_ms:.2f}x |")
    print(f"| size on disk (MB) | {sizes[0]:.1f} | {sizes[1]:.1f} | {sizes[0] / sizes[1]:.2f}x |")


if __name__ == "__main__":
    main()
