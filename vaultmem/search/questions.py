"""A question asks; the turn after it answers.

A memory that is itself a question ("What instrument are you playing?") repeats the
words of a later query about the same thing, so it matches that query best of all, yet
it states nothing: the answer is in the reply ("I'm learning the violin"). On LoCoMo,
of the 343 questions whose answer ranked 2nd to 4th, the first hit asked something in
181 and was mostly a question in 61. A turn that states something and then asks
("Exams are hard, but I'm optimistic! How do you stay motivated during study
sessions?") matches "how does Tim stay motivated during study sessions" on the words
it asks about, not on what it states.

So a candidate's score is lowered by QUESTION_DISCOUNT times how much of it asks
(asked_share): the share of its sentences that end in "?" or "？", or, when more, the share of
the query's words it holds that it holds only in those questions (0 for a statement;
1 for a turn that only asks). What it loses goes to its reply, the memory said right
after it in its conversation (search/neighbours.py): the evidence the question's words
gave is credited to the turn that answers it. It is applied after neighbour context,
which already gave the reply its share of the question's whole score.

Ranking only: abstention judges each note by its own words and meaning
(search/relevance.py), so this never adds or removes a hit. A vault of statements
(what an agent usually keeps) is unchanged.

Pure: imports no other vaultmem module; words come from the `terms` it is given.
"""

from __future__ import annotations

import re

# Chosen leave-one-conversation-out on LoCoMo from {0.1, 0.2, 0.3, 0.5} (README Benchmarks).
QUESTION_DISCOUNT = 0.5
# A sentence ends at . ! ? and a space, or at the full-width 。！？ (Chinese and Japanese put no space after them).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
_QUESTION_MARKS = ("?", "？")


def question_share(text: str) -> float:
    """The share of `text`'s sentences that are questions (end in "?" or "？"), 0..1."""
    sentences = _sentences(text)
    if not sentences:
        return 0.0
    return sum(_asks(s) for s in sentences) / len(sentences)


def asked_share(text: str, query_terms: frozenset, terms) -> float:
    """How much of `text` asks rather than states, for a query of `query_terms`: its question
    share, or the share of the query's terms it holds that it holds only in its questions,
    whichever is more (`terms`: sentence -> its analysed words, as BM25 sees them)."""
    sentences = _sentences(text)
    asking = [s for s in sentences if _asks(s)]
    if not asking:
        return 0.0
    share = len(asking) / len(sentences)
    if not query_terms:
        return share
    asked = frozenset().union(*(terms(s) for s in asking)) & query_terms
    stated = frozenset().union(*(terms(s) for s in sentences if not _asks(s))) & query_terms
    matched = asked | stated
    return max(share, len(asked - stated) / len(matched)) if matched else share


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _asks(sentence: str) -> bool:
    return sentence.rstrip().endswith(_QUESTION_MARKS)


def with_questions_discounted(fused: list, text_of, query_terms: frozenset = frozenset(), terms=None,
                              predecessor=None, discount: float | None = None) -> list:
    """Each candidate's score lowered by `discount` times how much of it asks (asked_share), and
    what a candidate loses so given to its reply, best first again. `fused`: [(path, score,
    signals)]; `text_of`: path -> the note's text; `query_terms` and `terms` (sentence -> its
    words) as asked_share takes them (none: the question share alone); `predecessor`: path ->
    the memory said just before it, or None (search/neighbours.py; None: no transfer). The
    signals show `question` (that share) and `answers` (what a reply gained)."""
    discount = QUESTION_DISCOUNT if discount is None else discount
    if not discount:
        return fused
    lost = {}
    for path, score, signals in fused:
        text = text_of(path)
        share = asked_share(text, query_terms, terms) if terms is not None else question_share(text)
        if share:
            signals["question"] = round(share, 3)
            lost[path] = score * discount * share
    out = []
    for path, score, signals in fused:
        before = predecessor(path) if predecessor is not None and lost else None
        gained = lost.get(before, 0.0) if before else 0.0
        if gained:
            signals["answers"] = round(gained, 4)
        out.append((path, score - lost.get(path, 0.0) + gained, signals))
    out.sort(key=lambda item: (-item[1], item[0]))
    return out
