"""LoCoMo retrieval benchmark: does `vaultmem recall` find the turns that answer a question?

    python bench/locomo.py                              # all conversations in the data folder
    python bench/locomo.py --conversations 26,30 --limit-questions 20
    python bench/locomo.py --json /tmp/locomo.json      # per-question ranks too
    python bench/locomo.py --rerank-words               # with recall.rerank_words on
    python bench/locomo.py --crosslingual off           # MiniLM for every question (no cross-lingual route)
    python bench/locomo.py --neighbour-weight 0         # without neighbour context
    python bench/locomo.py --question-discount 0        # questions ranked as statements

Protocol (the data folder's README.md): one conversation is one fresh vault;
every turn becomes one memory through `Vault.add`, text "<speaker>: <text>"
plus " [image: <caption>]" when an image was shared, source = its dia_id, with
the provenance a real capture has: session = its conversation session, created
= the session's date and time (UTC) plus one second per turn before it
(`--same-time`: the session's date for every turn and no session, as before
2026-12-02). Every question with evidence is
asked through `vaultmem.search.engine.recall(vault, question, top_k)`, the function
the CLI calls, and scored by the ranks of its evidence turns.

The clock (VAULTMEM_NOW) is pinned to one day after the conversation's last
session, so FSRS and strength state are the same on every run. The first
recall of each vault builds its indexes; it is timed on its own
("warm-up") and not counted in the time per query.

Evidence ids are normalised where the intent is obvious ("D:11:26" ->
"D11:26", "D8:6; D9:17" -> two ids, "D1:03" -> "D1:3"); ids that still name
no turn are dropped and counted, and a question left with no evidence is
skipped and counted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as h  # noqa: E402

# The steering repo's shared/ folder sits beside the clone (../shared/data/locomo).
DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"
CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
COLUMNS = ["hit@1", "hit@5", "hit@10", "recall_all@10", "MRR@10"]
NAMESPACE = "locomo"
_SESSION = re.compile(r"session_(\d+)$")
_EVIDENCE = re.compile(r"D:?(\d+)\s*:\s*0*(\d+)")


def parse_datetime(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware UTC datetime."""
    cleaned = " ".join(text.replace(",", ", ").split()).replace(" ,", ",")
    return datetime.strptime(cleaned, "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    caption = (turn.get("blip_caption") or "").strip()
    return f"{text} [image: {caption}]" if caption else text


def sessions(conv: dict) -> list[tuple[int, datetime, list[dict]]]:
    """(number, datetime, turns) of every non-empty session, in order."""
    out = []
    for key, turns in conv.items():
        m = _SESSION.match(key)
        if m and isinstance(turns, list) and turns:
            out.append((int(m.group(1)), parse_datetime(conv[f"{key}_date_time"]), turns))
    return sorted(out, key=lambda s: s[0])


def memories(conv: dict, name: str = "", ordered: bool = True) -> list[h.Memory]:
    """One memory per turn. `ordered` (the default protocol) gives each turn the provenance an
    agent's capture has: its conversation session (`Vault.add(session=...)`) and a distinct time,
    the session's start plus one second per turn, so the order of the turns is known. Without it
    (--same-time, the protocol before 2026-12-02) every turn of a session shares its date and has
    no session."""
    return [h.Memory(turn["dia_id"], turn_text(turn), when + timedelta(seconds=i) if ordered else when,
                     f"locomo-{name}-session-{n}" if ordered else "")
            for n, when, turns in sessions(conv) for i, turn in enumerate(turns)]


def normalise_evidence(raw: list, known: set[str]) -> tuple[list[str], list[str]]:
    """(ids that name a turn, raw pieces that do not) for a question's evidence list."""
    good: list[str] = []
    bad: list[str] = []
    for item in raw or []:
        for piece in re.split(r"[;,]|\s(?=D)", str(item)):
            piece = piece.strip()
            if not piece:
                continue
            m = _EVIDENCE.fullmatch(piece)
            key = f"D{m.group(1)}:{m.group(2)}" if m else piece
            if key in known:
                if key not in good:
                    good.append(key)
            else:
                bad.append(piece)
    return good, bad


def load_conversations(data_dir: Path, wanted: list[str] | None) -> list[tuple[str, dict]]:
    files = sorted(data_dir.glob("*.json"), key=lambda p: (len(p.stem), p.stem))
    if wanted:
        by_name = {p.stem: p for p in files}
        missing = [w for w in wanted if w not in by_name]
        if missing:
            raise SystemExit(f"no conversation {', '.join(missing)} in {data_dir} (have: {', '.join(by_name)})")
        files = [by_name[w] for w in wanted]
    if not files:
        raise SystemExit(f"no *.json conversations in {data_dir}")
    return [(p.stem, json.loads(p.read_text(encoding="utf-8"))) for p in files]


def run_conversation(name: str, conv: dict, workdir: Path, top_k: int, limit: int | None,
                     stats: dict, reuse: bool = False, log=print,
                     rerank_words: bool = False, ordered: bool = True,
                     crosslingual: str = "auto") -> tuple[list[h.QueryResult], float, float]:
    mems = memories(conv, name, ordered)
    known = {m.key for m in mems}
    last = max(when for _n, when, _turns in sessions(conv))  # the last session's date, whatever the protocol
    h.pin_clock(last + timedelta(days=1))
    built = h.build_vault(workdir / f"conv-{name}", mems, namespace=NAMESPACE, reuse=reuse)
    if rerank_words:  # as `recall.rerank_words: true` in the vault's config.yaml
        built.vault.config = dataclasses.replace(built.vault.config, recall_rerank_words=True)
    if crosslingual != "auto":  # as `recall.crosslingual: off` in the vault's config.yaml
        built.vault.config = dataclasses.replace(built.vault.config, recall_crosslingual=crosslingual)
    questions = []
    for i, qa in enumerate(conv.get("qa", [])):
        if not qa.get("evidence"):
            stats["no_evidence"] += 1
            continue
        good, bad = normalise_evidence(qa["evidence"], known)
        stats["bad_ids"] += len(bad)
        if bad:
            stats["bad_examples"].append(f"{name}#{i}: {bad}")
        if not good:
            stats["unresolvable"] += 1
            continue
        questions.append((f"{name}#{i}", str(qa.get("category")), qa["question"], good))
    if limit is not None:
        questions = questions[:limit]
    warm = h.warm_up(built, questions[0][2] if questions else "warm up", top_k)
    results = [h.ask(built, name, qid, cat, q, ev, top_k) for qid, cat, q, ev in questions]
    log(f"conversation {name}: {len(mems)} turns, {len(results)} questions, "
        f"add {built.add_s:.1f} s{' (reused vault)' if built.reused else ''}, warm-up {warm:.2f} s",
        file=sys.stderr)
    return results, built.add_s, warm


def set_neighbour_weight(weight: float) -> None:
    """Recall with another neighbour share (0: the ranking without neighbour context), for this process."""
    from vaultmem.search import engine, neighbours

    neighbours.NEIGHBOUR_WEIGHT = weight
    if weight == 0:
        engine.NEIGHBOUR_EXPANSION = 0


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA_DIR, help=f"folder of conversation files (default {DATA_DIR})")
    ap.add_argument("--conversations", help="comma-separated file stems, e.g. 26,30 (default: all)")
    ap.add_argument("--limit-questions", type=int, help="ask only the first N questions of each conversation")
    ap.add_argument("--top-k", type=int, default=10, help="hits asked of recall (default 10)")
    ap.add_argument("--json", dest="json_out", help="write per-question results to this file")
    ap.add_argument("--rerank-words", action="store_true",
                    help="recall with recall.rerank_words on (search/rerank.py)")
    ap.add_argument("--crosslingual", choices=("auto", "off"), default="auto",
                    help="recall.crosslingual (default auto: a question that does not look English goes to "
                         "the cross-lingual model, search/crosslingual.py)")
    ap.add_argument("--same-time", action="store_true",
                    help="the protocol before 2026-12-02: every turn of a session at its date, no session provenance")
    ap.add_argument("--neighbour-weight", type=float,
                    help="neighbour context's share (search/neighbours.py; default its NEIGHBOUR_WEIGHT; "
                         "0: none, and no neighbours added as candidates; what a question loses still goes "
                         "to its reply unless --question-discount 0)")
    ap.add_argument("--question-discount", type=float,
                    help="the share of a question's score it loses to its reply (search/questions.py; "
                         "default its QUESTION_DISCOUNT; 0: ranked as a statement)")
    ap.add_argument("--vault-dir", type=Path,
                    help="build vaults here and reuse them on the next run (derived caches are dropped); "
                         "default: a temp dir, deleted after")
    args = ap.parse_args(argv)

    if args.neighbour_weight is not None:
        set_neighbour_weight(args.neighbour_weight)
    if args.question_discount is not None:
        from vaultmem.search import questions

        questions.QUESTION_DISCOUNT = args.question_discount
    wanted = [c.strip() for c in args.conversations.split(",") if c.strip()] if args.conversations else None
    convs = load_conversations(args.data, wanted)
    stats = {"no_evidence": 0, "bad_ids": 0, "unresolvable": 0, "bad_examples": []}
    results: list[h.QueryResult] = []
    add_s: list[float] = []
    warm_s: list[float] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vaultmem-locomo-") as tmp:
        workdir = args.vault_dir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for name, conv in convs:
            res, a, w = run_conversation(name, conv, workdir, args.top_k, args.limit_questions, stats,
                                         reuse=args.vault_dir is not None, rerank_words=args.rerank_words,
                                         ordered=not args.same_time, crosslingual=args.crosslingual)
            results += res
            if a:
                add_s.append(a)
            warm_s.append(w)
    total = time.perf_counter() - t0

    rows = [(label if label == "overall" else f"{label} {CATEGORIES.get(label, '')}".strip(), h.summarize(rs, COLUMNS))
            for label, rs in h.grouped(results, order=list(CATEGORIES))]
    print(h.markdown_table(rows, COLUMNS))
    print()
    by_conversation = [(f"conversation {n}", h.summarize([r for r in results if r.group == n], COLUMNS))
                       for n, _c in convs]
    if len(by_conversation) > 1:  # a gain should hold on each conversation, not on average only
        print(h.markdown_table(by_conversation, COLUMNS))
        print()
    print(h.timing_line(results, add_s, warm_s, what="conversation") + f"; total {total:.0f} s")
    print(f"skipped: {stats['no_evidence']} questions without evidence, {stats['unresolvable']} with no "
          f"resolvable evidence id; {stats['bad_ids']} evidence ids dropped"
          + (f" ({'; '.join(stats['bad_examples'])})" if stats["bad_examples"] else ""))
    summary = {"rows": dict(rows), "by_conversation": dict(by_conversation),
               "skipped": {k: v for k, v in stats.items() if k != "bad_examples"},
               "bad_examples": stats["bad_examples"], "top_k": args.top_k,
               "conversations": [n for n, _ in convs], "total_s": total}
    return h.finish(summary, results, args.json_out)


if __name__ == "__main__":
    main()
