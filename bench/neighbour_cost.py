"""What neighbour context (search/neighbours.py) costs recall, A/B in one process.

    python bench/recall_perf.py --sizes 10000       # first, to have the 10k synthetic vault, then:
    python bench/neighbour_cost.py /tmp/vaultmem-bench/10000-s1234

recall_perf's synthetic notes have no session, so this gives the warm engine an order
as if they had been captured in conversations of RUN notes each (consecutive paths,
one second apart): every candidate then has neighbours, the worst case. Each of
recall_perf's 50 queries is asked with that order and with none (no neighbour
context), alternately, twice; prints p50/p95 of both and the median of the paired
differences (robust to a busy machine). Reads the vault, writes nothing but its caches.
"""

from __future__ import annotations

import os
import statistics
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from recall_perf import ab_engine, paired_ab, pct, queries  # noqa: E402

RUN = 20  # notes per synthetic conversation


def main(argv: list[str] | None = None) -> int:
    args, engine = ab_engine(argv, __doc__.splitlines()[0])
    from vaultmem.search.neighbours import SessionOrder

    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    paths = sorted(p for p, *_rest in engine.vault.catalog().summaries())
    ordered = SessionOrder.of((p, f"synthetic-{i // RUN}", start + timedelta(seconds=i)) for i, p in enumerate(paths))
    orders = {False: SessionOrder(), True: ordered}
    qs = queries(args.seed, 50)
    ms, _found = paired_ab(engine, qs, lambda on: setattr(engine, "_order", orders[on]))
    paired = statistics.median(b - a for a, b in zip(ms[False], ms[True]))
    print(f"vault {args.vault}: {len(paths)} notes in conversations of {RUN}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs\n")
    print("| recall (warm, in-process, top 5) | p50 ms | p95 ms |")
    print("|---|---:|---:|")
    for on, name in ((False, "without neighbour context"), (True, "with it")):
        print(f"| {name} | {statistics.median(ms[on]):.1f} | {pct(ms[on], 95):.1f} |")
    print(f"\npaired difference (median): {paired:+.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
