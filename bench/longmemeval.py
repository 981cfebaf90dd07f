"""LongMemEval turn-level retrieval benchmark for `vaultmem recall`.

    python bench/longmemeval.py path/to/longmemeval_oracle.json
    python bench/longmemeval.py longmemeval_oracle.json --limit 50 --json /tmp/lme.json

The file is a list of questions, each with question_id, question_type,
question, answer, question_date, haystack_session_ids, haystack_dates and
haystack_sessions (a list of sessions, each a list of turns
{"role", "content", "has_answer"?}). Dates look like "2023/05/20 (Sat) 02:21".

Protocol (turn level): per question, one fresh vault holding every turn of
its haystack, one memory per turn through `Vault.add` (text
"<role>: <content>", created at its session's date, UTC), the clock pinned
to the question's date. The query is the question; the evidence is the turns
marked `has_answer: true`. Questions with no such turn (the abstention
questions, `_abs`) are skipped and counted. Reported: hit@5 and MRR@5 (the
figures usually compared, e.g. 0.871 / 0.622), plus hit@1 and hit@10, overall
and per question_type.

The published oracle file has sha256 821a2034…38620c; another file is run
anyway, with a warning.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as h  # noqa: E402

ORACLE_SHA256 = "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"
COLUMNS = ["hit@1", "hit@5", "hit@10", "MRR@5", "MRR@10"]
TYPES = ["single-session-user", "single-session-assistant", "single-session-preference",
         "multi-session", "knowledge-update", "temporal-reasoning"]
NAMESPACE = "lme"
_DATE = re.compile(r"(\d{4})[/-](\d{1,2})[/-](\d{1,2})(?:\s*\([^)]*\))?(?:\s+(\d{1,2}):(\d{2}))?")


def parse_date(text: str) -> datetime | None:
    """'2023/05/20 (Sat) 02:21' (or '2023-05-20') -> aware UTC datetime; None if unreadable."""
    m = _DATE.search(str(text or ""))
    if not m:
        return None
    y, mo, d, hh, mm = m.groups()
    try:
        return datetime(int(y), int(mo), int(d), int(hh or 0), int(mm or 0), tzinfo=timezone.utc)
    except ValueError:
        return None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def turn_key(session_index: int, turn_index: int) -> str:
    return f"s{session_index}:t{turn_index}"


def memories_and_evidence(item: dict) -> tuple[list[h.Memory], list[str]]:
    """One memory per turn of the haystack, and the keys of the has_answer turns."""
    sessions = item.get("haystack_sessions") or []
    dates = item.get("haystack_dates") or []
    fallback = parse_date(item.get("question_date")) or datetime(2000, 1, 1, tzinfo=timezone.utc)
    mems: list[h.Memory] = []
    evidence: list[str] = []
    for si, session in enumerate(sessions):
        when = parse_date(dates[si]) if si < len(dates) else None
        when = when or fallback
        for ti, turn in enumerate(session or []):
            content = str(turn.get("content") or "").strip()
            if not content:
                continue
            key = turn_key(si, ti)
            mems.append(h.Memory(key, f"{turn.get('role', 'user')}: {content}", when))
            if turn.get("has_answer") is True:
                evidence.append(key)
    return mems, evidence


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path, help="longmemeval_oracle.json (or a file of the same shape)")
    ap.add_argument("--limit", type=int, help="run only the first N questions that have evidence")
    ap.add_argument("--top-k", type=int, default=10, help="hits asked of recall (default 10)")
    ap.add_argument("--json", dest="json_out", help="write per-question results to this file")
    args = ap.parse_args(argv)

    digest = sha256_of(args.file)
    if digest != ORACLE_SHA256:
        print(f"warning: {args.file} has sha256 {digest[:16]}…, not the published oracle file's "
              f"{ORACLE_SHA256[:16]}…; figures are not comparable", file=sys.stderr)
    data = json.loads(args.file.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = [data]

    results: list[h.QueryResult] = []
    add_s: list[float] = []
    warm_s: list[float] = []
    skipped: dict[str, int] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vaultmem-lme-") as tmp:
        for item in data:
            if args.limit is not None and len(results) >= args.limit:
                break
            qtype = str(item.get("question_type", "?"))
            qid = str(item.get("question_id", len(results)))
            mems, evidence = memories_and_evidence(item)
            if not evidence or not mems:
                kind = "abstention" if qid.endswith("_abs") else qtype
                skipped[kind] = skipped.get(kind, 0) + 1
                continue
            last = max(m.created for m in mems)
            asked = parse_date(item.get("question_date"))
            h.pin_clock(asked if asked and asked >= last else last + timedelta(days=1))
            built = h.build_vault(Path(tmp) / re.sub(r"[^\w.-]", "_", qid), mems, namespace=NAMESPACE)
            add_s.append(built.add_s)
            warm_s.append(h.warm_up(built, item["question"], args.top_k))
            results.append(h.ask(built, qid, qid, qtype, item["question"], evidence, args.top_k))
            if len(results) % 25 == 0:
                print(f"{len(results)} questions, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    total = time.perf_counter() - t0

    rows = [(label, h.summarize(rs, COLUMNS)) for label, rs in h.grouped(results, order=TYPES)]
    rows = [r for r in rows if r[0] == "overall" or r[1]["n"]]
    print(h.markdown_table(rows, COLUMNS))
    print()
    print(h.timing_line(results, add_s, warm_s, what="question") + f"; total {total:.0f} s")
    print("skipped (no has_answer turn): " + (", ".join(f"{k} {v}" for k, v in sorted(skipped.items())) or "none"))
    summary = {"rows": dict(rows), "skipped": skipped, "sha256": digest, "sha256_ok": digest == ORACLE_SHA256,
               "top_k": args.top_k, "total_s": total}
    return h.finish(summary, results, args.json_out)


if __name__ == "__main__":
    main()
