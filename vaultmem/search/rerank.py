"""Opt-in reranking of the best fused candidates by word-by-word alignment (`recall.rerank_words`).

A sentence embedding compares two texts as wholes; the alignment of search/relevance.py
compares them word by word (each content word piece of the query with its best
counterpart in the note, by the model's contextual token vectors). Adding a share of it
to the fused score of the RERANK_DEPTH best candidates lifts the note whose words answer
the question over one that is only on its topic:

    score' = score + RERANK_WEIGHT * alignment           (the first RERANK_DEPTH only)

Measured with `python bench/locomo.py --rerank-words` (six conversations): hit@5
0.692 -> 0.706, MRR@10 0.534 -> 0.545, multi-hop 0.570 -> 0.610, no category lower;
neutral on bench/recall_quality.py (first set en hit@1 0.86 -> 0.84, held out
0.92 -> 0.95). The constants were set once (weight 0.3, a fifth to a third of a
typical fused score; depth 10, the bench's top_k), not tuned to either bench. It runs
the model over RERANK_DEPTH note texts per query: LoCoMo's median query went from
14.5 to 122 ms on a busy 2-core machine, far over recall's 30 ms budget, so it is off
by default.

Pure except for `token_vectors`, the model call it is given.
"""

from __future__ import annotations

from typing import Callable

from vaultmem.search.relevance import alignment

RERANK_DEPTH = 10
RERANK_WEIGHT = 0.3


def rerank_by_words(query: str, fused: list[tuple[str, float, dict]], texts: Callable[[list[str]], list[str]],
                    token_vectors) -> list[tuple[str, float, dict]]:
    """`fused` ([(path, score, signals)] best first) with its first RERANK_DEPTH re-scored and
    re-sorted; `texts(paths)` gives each note's embedded text. Records `alignment` in the
    signals (the relevance check then reuses it)."""
    head = fused[:RERANK_DEPTH]
    if len(head) < 2:
        return fused
    vectors = token_vectors([query, *texts([path for path, _s, _sig in head])])
    if not vectors:
        return fused
    rescored = []
    for (path, score, signals), note_vectors in zip(head, vectors[1:]):
        aligned = alignment(vectors[0], note_vectors)
        signals["alignment"] = round(aligned, 4)
        rescored.append((path, score + RERANK_WEIGHT * aligned, signals))
    rescored.sort(key=lambda item: (-item[1], item[0]))
    return rescored + fused[RERANK_DEPTH:]
