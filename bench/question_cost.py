"""What the question discount (search/questions.py) costs recall, A/B in one process.

    python bench/recall_perf.py --sizes 10000       # first, to have the 10k synthetic vault, then:
    python bench/question_cost.py /tmp/vaultmem-bench/10000-s1234

Each of recall_perf's 50 queries is asked with the discount on and off (QUESTION_DISCOUNT
0), alternately, twice, in one warm engine; prints p50/p95 of both and the median of the
paired differences (robust to a busy machine), and how many queries' hits differ (the
synthetic notes are statements, so none should). Reads the vault, writes nothing but its caches.
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
    from vaultmem.search import questions

    discount = questions.QUESTION_DISCOUNT
    qs = queries(args.seed, 50)
    ms, found = paired_ab(engine, qs, lambda on: setattr(questions, "QUESTION_DISCOUNT", discount if on else 0.0))
    questions.QUESTION_DISCOUNT = discount
    paired = statistics.median(b - a for a, b in zip(ms[False], ms[True]))
    differ = sum([h.note.id for h in a] != [h.note.id for h in b] for a, b in zip(found[False], found[True]))
    print(f"vault {args.vault}: {engine._view.count} notes; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs\n")
    print("| recall (warm, in-process, top 5) | p50 ms | p95 ms |")
    print("|---|---:|---:|")
    for on, name in ((False, "without the question discount"), (True, f"with it ({discount})")):
        print(f"| {name} | {statistics.median(ms[on]):.1f} | {pct(ms[on], 95):.1f} |")
    print(f"\npaired difference (median): {paired:+.2f} ms; queries whose hits differ: {differ} of {len(qs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
