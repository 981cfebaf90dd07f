"""A question asks; the turn after it answers.

A memory that is itself a question ("What instrument are you playing?") repeats the
words of a later query about the same thing, so it matches that query best of all, yet
it states nothing: the answer is in the reply ("I'm learning the violin"). On LoCoMo
the first hit was such a question, with its reply right below it, in about one case in
six where the answer ranked 2nd to 4th.

So a candidate's score is lowered by QUESTION_DISCOUNT times its question share, the
share of its sentences that end in "?" (0 for a statement, 1 for a turn that only
asks). It is applied after neighbour context, which gave the reply its share of the
question's undiscounted score, so the reply can now rank first.

Ranking only: abstention judges each note by its own words and meaning
(search/relevance.py), so this never adds or removes a hit. A vault of statements
(what an agent usually keeps) is unchanged.

Pure: imports no other vaultmem module.
"""

from __future__ import annotations

import re

# Chosen leave-one-conversation-out on LoCoMo from {0.1, 0.2, 0.3, 0.5} (README Benchmarks).
QUESTION_DISCOUNT = 0.5
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def question_share(text: str) -> float:
    """The share of `text`'s sentences that are questions (end in "?"), 0..1."""
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    if not sentences:
        return 0.0
    return sum(s.rstrip().endswith("?") for s in sentences) / len(sentences)


def with_questions_discounted(fused: list, text_of, discount: float | None = None) -> list:
    """Each candidate's score lowered by `discount` times its question share, best first again.
    `fused`: [(path, score, signals)]; `text_of`: path -> the note's text. A discounted
    candidate's signals show `question` (its share)."""
    discount = QUESTION_DISCOUNT if discount is None else discount
    if not discount:
        return fused
    out = []
    for path, score, signals in fused:
        share = question_share(text_of(path))
        if share:
            signals["question"] = round(share, 3)
        out.append((path, score * (1.0 - discount * share), signals))
    out.sort(key=lambda item: (-item[1], item[0]))
    return out
