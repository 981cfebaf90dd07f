"""What the word-by-word relevance check (search/relevance.py) costs recall, A/B in one process.

    python bench/relevance_cost.py VAULT            # a vault with its indexes built
    python bench/recall_perf.py --sizes 10000       # first, to have the 10k synthetic vault, then:
    python bench/relevance_cost.py /tmp/vaultmem-bench/10000-s1234

One warm RecallEngine; each of recall_perf's 50 queries is asked with the model's
`min_agreement` and without it (no word check), in alternating order, twice.
Prints p50/p95 of both, the median of the paired differences (robust to a busy
machine: both calls of a pair see the same load), how many queries ran the check
and how many came back empty. Reads the vault, writes nothing but its caches.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from recall_perf import ab_engine, paired_ab, pct, queries  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args, engine = ab_engine(argv, __doc__.splitlines()[0])
    if engine.embedder is None or getattr(engine.embedder, "min_agreement", None) is None:
        raise SystemExit(f"the model has no word-by-word check: {engine.model_problem or engine.embedder}")
    agreement = engine.embedder.min_agreement
    qs = queries(args.seed, 50)
    ms, found = paired_ab(engine, qs, lambda on: setattr(engine.embedder, "min_agreement", agreement if on else None))
    engine.embedder.min_agreement = agreement
    paired = statistics.median(b - a for a, b in zip(ms[False], ms[True]))
    ran = sum(any("agreement" in h.signals for h in with_) or (bool(without) and not with_)
              for without, with_ in zip(found[False], found[True]))
    print(f"vault {args.vault}: {engine.sync()['notes']} notes; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs\n")
    print("| recall (warm, in-process, top 5) | p50 ms | p95 ms | empty |")
    print("|---|---:|---:|---:|")
    for check, name in ((False, "without the word check"), (True, f"with it (min_agreement {agreement})")):
        empty = sum(not hits for hits in found[check])
        print(f"| {name} | {statistics.median(ms[check]):.1f} | {pct(ms[check], 95):.1f} | {empty}/{len(qs)} |")
    print(f"\npaired difference (median): {paired:+.2f} ms; the check ran for {ran} of {len(qs)} queries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
