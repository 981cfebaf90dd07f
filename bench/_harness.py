"""Shared helpers of the retrieval benchmarks (bench/locomo.py, bench/longmemeval.py).

What a benchmark does is always the same: build one fresh vault per haystack
through the real API (`Vault.add`), pin the clock after the last memory, ask
each question through `vaultmem.search.engine.recall` (the function the CLI calls),
and score where the evidence turns landed. This module holds those steps and
the metrics, so the two scripts differ only in how they read their data.

Metrics, per question, from the 1-based ranks of its evidence memories among
the `top_k` hits (an evidence memory not returned has no rank):

- hit@k: at least one evidence memory in the top k;
- recall_all@k: every evidence memory in the top k;
- MRR@k: 1 / rank of the first evidence memory if it is within the top k, else 0.

A k larger than the `top_k` asked for is capped by it (nothing past top_k is seen).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

import vaultmem  # noqa: E402
from vaultmem.search.engine import recall  # noqa: E402
from vaultmem.vault import init_vault  # noqa: E402

NAMESPACE_DEFAULT = "bench"


# ------------------------------------------------------------------ results

@dataclass
class QueryResult:
    """One question: where its evidence landed among the hits."""

    group: str                    # conversation / haystack the question was asked against
    qid: str
    category: str
    question: str
    evidence: list[str]           # dataset ids of the evidence turns (normalised)
    ranks: dict[str, int | None]  # evidence id -> 1-based rank among the hits, or None
    retrieved: list[str]          # dataset ids of the hits, best first
    ms: float                     # wall time of the recall call

    @property
    def first_rank(self) -> int | None:
        found = [r for r in self.ranks.values() if r is not None]
        return min(found) if found else None

    def to_json(self) -> dict:
        d = asdict(self)
        d["first_rank"] = self.first_rank
        d["ms"] = round(self.ms, 2)
        return d


def ranks_of(evidence: Sequence[str], retrieved: Sequence[str]) -> dict[str, int | None]:
    """Evidence id -> its 1-based position in `retrieved` (first occurrence), or None."""
    position: dict[str, int] = {}
    for i, key in enumerate(retrieved, start=1):
        position.setdefault(key, i)
    return {e: position.get(e) for e in evidence}


def hit_at(result: QueryResult, k: int) -> float:
    r = result.first_rank
    return 1.0 if r is not None and r <= k else 0.0


def recall_all_at(result: QueryResult, k: int) -> float:
    return 1.0 if result.ranks and all(r is not None and r <= k for r in result.ranks.values()) else 0.0


def mrr_at(result: QueryResult, k: int) -> float:
    r = result.first_rank
    return 1.0 / r if r is not None and r <= k else 0.0


METRICS = {
    "hit@1": lambda r: hit_at(r, 1),
    "hit@5": lambda r: hit_at(r, 5),
    "hit@10": lambda r: hit_at(r, 10),
    "recall_all@10": lambda r: recall_all_at(r, 10),
    "MRR@5": lambda r: mrr_at(r, 5),
    "MRR@10": lambda r: mrr_at(r, 10),
}


def summarize(results: Sequence[QueryResult], metrics: Iterable[str] = METRICS) -> dict:
    """{'n': count, metric: mean} over `results` (means are None when n == 0)."""
    out: dict = {"n": len(results)}
    for name in metrics:
        fn = METRICS[name]
        out[name] = (sum(fn(r) for r in results) / len(results)) if results else None
    return out


def grouped(results: Sequence[QueryResult], order: Sequence[str] | None = None) -> list[tuple[str, list[QueryResult]]]:
    """[('overall', all), (category, its results) ...] in `order` (default: sorted)."""
    cats: dict[str, list[QueryResult]] = {}
    for r in results:
        cats.setdefault(r.category, []).append(r)
    keys = list(order) if order is not None else sorted(cats)
    keys += [k for k in sorted(cats) if k not in keys]
    return [("overall", list(results))] + [(k, cats.get(k, [])) for k in keys]


def markdown_table(rows: Sequence[tuple[str, dict]], columns: Sequence[str]) -> str:
    """Rows of (label, summary) as a markdown table with n and `columns`."""
    head = ["", "n", *columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, summary in rows:
        cells = [label, str(summary["n"])]
        for c in columns:
            v = summary.get(c)
            cells.append("–" if v is None else f"{v:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); nan for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def timing_line(results: Sequence[QueryResult], build_s: Sequence[float], warm_s: Sequence[float],
                what: str = "haystack") -> str:
    ms = [r.ms for r in results]
    med = statistics.median(ms) if ms else math.nan
    add = f"add {statistics.mean(build_s):.1f} s mean" if build_s else "add – (vaults reused)"
    return (f"time per query: median {med:.1f} ms, p95 {percentile(ms, 95):.1f} ms (n={len(ms)}); "
            f"per {what}: {add}, "
            f"index warm-up (first recall) {statistics.median(warm_s) if warm_s else math.nan:.2f} s median, "
            f"{max(warm_s) if warm_s else math.nan:.2f} s max")


def write_json(path: str | os.PathLike, payload: dict) -> None:
    Path(path).write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")


def finish(summary: dict, results: list, json_out: str | None) -> dict:
    """Write the per-question results where asked, and return the summary with them."""
    if json_out:
        write_json(json_out, {**summary, "questions": [r.to_json() for r in results]})
    summary["results"] = results
    return summary


# ------------------------------------------------------------------ vaults

@dataclass
class Memory:
    key: str          # the dataset's id of this turn (goes into `source` too)
    text: str
    created: datetime  # aware UTC
    session: str = ""  # the conversation session it was said in (provenance, as an agent's capture gives)


@dataclass
class BuiltVault:
    vault: "vaultmem.Vault"
    ids: dict[str, str]                 # dataset key -> note id
    keys: dict[str, str] = field(default_factory=dict)  # note id -> dataset key
    add_s: float = 0.0
    reused: bool = False


def pin_clock(when: datetime) -> None:
    """Set VAULTMEM_NOW (read by vaultmem.clock at every call)."""
    os.environ["VAULTMEM_NOW"] = when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def build_vault(root: Path, memories: Sequence[Memory], namespace: str = NAMESPACE_DEFAULT,
                reuse: bool = False) -> BuiltVault:
    """A fresh vault at `root` with one note per memory, added with `Vault.add`.

    With `reuse`, a vault this function built before at `root` (same keys and
    texts, recorded in `bench-map.json`) is kept, and only its derived caches
    (`.vaultmem/index`, `.vaultmem/cache`) are deleted, so the first recall
    builds its indexes from scratch as in a fresh run.
    """
    root = Path(root)
    map_file = root / "bench-map.json"
    fingerprint = _fingerprint(memories, namespace)
    if reuse and map_file.is_file():
        try:
            saved = json.loads(map_file.read_text(encoding="utf-8"))
        except ValueError:
            saved = {}
        if saved.get("fingerprint") == fingerprint:
            for derived in ("index", "cache"):
                shutil.rmtree(root / ".vaultmem" / derived, ignore_errors=True)
            ids = saved["ids"]
            return BuiltVault(vaultmem.Vault(root), ids, {v: k for k, v in ids.items()}, 0.0, True)
    if root.exists():
        shutil.rmtree(root)
    init_vault(root)
    vault = vaultmem.Vault(root)
    ids: dict[str, str] = {}
    t0 = time.perf_counter()
    for m in memories:
        note = vault.add(m.text, namespace=namespace, created=m.created, source=m.key, supersede=False, merge=False,
                         redact=True, session=m.session or None).note
        ids[m.key] = note.id
    add_s = time.perf_counter() - t0
    if reuse:
        map_file.write_text(json.dumps({"fingerprint": fingerprint, "ids": ids}), encoding="utf-8")
    return BuiltVault(vault, ids, {v: k for k, v in ids.items()}, add_s, False)


def _fingerprint(memories: Sequence[Memory], namespace: str) -> str:
    import hashlib

    h = hashlib.sha256(namespace.encode())
    for m in memories:
        h.update(f"\x00{m.key}\x01{m.text}\x02{m.created.isoformat()}\x03{m.session}".encode())
    return h.hexdigest()


def warm_up(built: BuiltVault, query: str, top_k: int) -> float:
    """The first recall of a vault (builds its indexes); seconds, result discarded."""
    t0 = time.perf_counter()
    recall(built.vault, query, top_k=top_k)
    return time.perf_counter() - t0


def ask(built: BuiltVault, group: str, qid: str, category: str, question: str,
        evidence: Sequence[str], top_k: int) -> QueryResult:
    """One question through `vaultmem.search.engine.recall`, scored against `evidence` (dataset keys)."""
    t0 = time.perf_counter()
    hits = recall(built.vault, question, top_k=top_k)
    ms = (time.perf_counter() - t0) * 1000
    retrieved = [built.keys.get(h.note.id, f"?{h.note.id}") for h in hits]
    return QueryResult(group, qid, str(category), question, list(evidence),
                       ranks_of(evidence, retrieved), retrieved, ms)
