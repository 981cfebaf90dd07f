"""What `add`'s contradiction and duplicate checks do on real conversation data.

Every turn of each LoCoMo conversation is added, in order and with its date,
through `Vault.add` with the checks on (one namespace per conversation), and
the outcome of each add is counted: a new note, a recurrence of an existing
one, a supersede, a contest. Chat turns are rarely contradictions, so
supersedes and contests here are mostly false alarms: this measures how much
noise the checks put into a vault, and what an add costs with them.

    python bench/add_checks.py [--conversations 26 30] [--samples 5]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h  # noqa: E402
import locomo  # noqa: E402


def outcome(added) -> str:
    if added.action == "recurrence":
        return "recurrence"
    if added.superseded:
        return "supersede"
    return "contest" if added.contested else "added"


def run(name: str, conv: dict, workdir: Path, samples: int) -> tuple[dict, list[str]]:
    import vaultmem

    root = workdir / f"conv-{name}"
    vaultmem.init_vault(root)
    vault = vaultmem.Vault(root)
    counts: collections.Counter = collections.Counter()
    examples: list[str] = []
    start = time.perf_counter()
    for memory in locomo.memories(conv):
        h.pin_clock(memory.created)
        added = vault.add(memory.text, "chat", created=memory.created, source=memory.key, redact=True)
        kind = outcome(added)
        counts[kind] += 1
        if kind != "added" and len(examples) < samples:
            examples.append(f"{name} {kind}: {memory.text[:80]!r} ({added.reason[:80]})")
    total = sum(counts.values())
    row = {"turns": total, **{k: counts[k] for k in ("added", "recurrence", "supersede", "contest")},
           "flagged %": round(100 * (counts["supersede"] + counts["contest"]) / max(1, total), 1),
           "ms/add": round(1000 * (time.perf_counter() - start) / max(1, total), 1)}
    return row, examples


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", nargs="*", default=["26", "30"], help="LoCoMo conversation ids")
    parser.add_argument("--samples", type=int, default=5, help="flagged adds to print per conversation")
    args = parser.parse_args(argv)
    rows, examples = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, conv in locomo.load_conversations(locomo.DATA_DIR, args.conversations):
            row, found = run(name, conv, Path(tmp), args.samples)
            rows.append((f"conversation {name}", row))
            examples += found
    columns = ["turns", "added", "recurrence", "supersede", "contest", "flagged %", "ms/add"]
    print("| | " + " | ".join(columns) + " |\n|" + "---|" * (len(columns) + 1))
    for label, row in rows:
        print(f"| {label} | " + " | ".join(str(row[c]) for c in columns) + " |")
    for line in examples:
        print("  " + line)


if __name__ == "__main__":
    main()
