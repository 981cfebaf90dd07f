"""Score fusion: one score per candidate note from its two rankings, its memory state and time.

Fusion (`fuse`) adds the two signals, each on a 0..1 scale, over the union
of both candidate lists, then applies two mild multipliers, so relevance
decides and memory state only breaks near-ties:

    lexical    = bm25 / best bm25 of this query * coverage
                 (coverage: the IDF-weighted share of the query's terms the
                  note contains, so one common word matched is weak evidence)
    semantic   = (cosine - floor) / (1 - floor), at least 0
                 (floor: the model's min_similarity, below which texts are unrelated)
    relevance  = 0.5 * lexical + 0.5 * semantic
    confidence = 0.5 * R + 0.5 * strength     (R: FSRS retrievability now;
                                                0.9 for a never-graded note)
    time       = 1.25 if the note was created in a window the query names
                 ("last spring", "in March 2024"), else 1
    own        = relevance * (0.8 + 0.2 * confidence) * time
    context    = own + 0.3 * own of the memory said just before it in its session
                   (neighbour context: search/neighbours.py; the memory said right
                    after each of the best candidates is a candidate too)
    score      = context * (1 - 0.5 * asked)
                 + 0.5 * asked * context, of the memory said just before it
                   (asked: how much of a note asks, the share of its sentences that are
                    questions or of the query's words it holds only in them; what a
                    question loses goes to its reply: search/questions.py)
                 + 0.1 * the best score among candidates created within an hour
                   (session context: with_session_context)
                 (+ 0.3 * word-by-word alignment for the 10 best, when
                  `recall.rerank_words` is on: search/rerank.py)

`fuse` gives `own`; the engine (search/engine.py, `_search`) adds the rest in that order.
"""

from __future__ import annotations

from vaultmem.core.schedule import retrievability

LEXICAL_WEIGHT = 0.5
CANDIDATES = 30  # notes each ranking contributes (session context looks among these)
NEVER_GRADED_RETRIEVABILITY = 0.9
TIME_WINDOW_BOOST = 1.25
# Session context (with_session_context): a tenth of the best score among the candidates
# created within an hour of a note. Set once, not tuned (LoCoMo hit@5 0.671 -> 0.692).
SESSION_CONTEXT_WEIGHT = 0.1
SESSION_WINDOW_S = 3600.0


def fuse(lexical: list[tuple[str, float, float]], cosines: dict[str, float], semantic_floor: float,
         notes: dict, now, config, intent=None) -> list[tuple[str, float, dict]]:
    """Score fusion of the two signals, weighted by memory state and time (see module doc).

    `lexical`: [(path, bm25, coverage)] best first; `cosines`: path -> cosine
    for every candidate (from either ranking).
    """
    top_bm25 = max((score for _p, score, _c in lexical), default=0.0) or 1.0
    signals: dict[str, dict] = {}
    for rank, (path, score, coverage) in enumerate(lexical, start=1):
        signals[path] = {"bm25": round(score, 4), "bm25_rank": rank, "coverage": round(coverage, 3),
                         "lexical": score / top_bm25 * coverage}
    for path, cosine in cosines.items():
        entry = signals.setdefault(path, {"lexical": 0.0})
        entry["cosine"] = round(cosine, 4)
        entry["semantic"] = max(0.0, (cosine - semantic_floor) / (1.0 - semantic_floor))
    results = []
    for path, s in signals.items():
        note = notes.get(path)
        if note is None:
            continue
        semantic = s.pop("semantic", 0.0)
        relevance = LEXICAL_WEIGHT * s.pop("lexical") + (1 - LEXICAL_WEIGHT) * semantic
        if "cosine" in s:
            s["semantic"] = round(semantic, 4)
        r = retrievability(note, now, config)
        confidence = 0.5 * (NEVER_GRADED_RETRIEVABILITY if r is None else r) + 0.5 * note.strength
        in_window = bool(intent and intent.has_window and intent.contains(note.created))
        score = relevance * (0.8 + 0.2 * confidence) * (TIME_WINDOW_BOOST if in_window else 1.0)
        s.update(relevance=round(relevance, 4), retrievability=None if r is None else round(r, 4),
                 strength=note.strength, in_time_window=in_window)
        results.append((path, score, s))
    results.sort(key=lambda item: (-item[1], item[0]))
    return results


def with_session_context(fused: list, notes: dict, weight: float = SESSION_CONTEXT_WEIGHT,
                         window_s: float = SESSION_WINDOW_S) -> list:
    """A note written in the same conversation (within an hour) as other relevant notes gains
    a share of the best of them: evidence spread over a session supports each part of it,
    as a reply ("yes, last week!") is understood from the turns around it. Ranking only:
    the signals that abstention and --explain show are the note's own."""
    out = []
    for path, score, signals in fused:
        created = notes[path].created
        best = max((other_score for other, other_score, _s in fused[:CANDIDATES]
                    if other != path and abs((notes[other].created - created).total_seconds()) <= window_s),
                   default=0.0)
        out.append((path, score + weight * best, signals))
    out.sort(key=lambda item: (-item[1], item[0]))
    return out
