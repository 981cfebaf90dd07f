"""BM25F over Whoosh's postings with numpy (search/bm25_arrays.py): the same scores as
Whoosh's own scorer, the true top N, filters, several segments and deletions."""

from __future__ import annotations

import random

import pytest
from whoosh import query as q

from vaultmem.search import bm25_arrays
from vaultmem.search.bm25 import SEARCH_FIELDS, _query_analyzer
from vaultmem.search.engine import RecallEngine

WORDS = ("deploy staging postgres port backup budget atlas helix review runbook pager owner "
         "latency cache queue billing invoice nightly weekly gateway").split()


def _grow(vault, rounds: int, per_round: int, seed: int = 7) -> RecallEngine:
    """A vault indexed in several commits (several segments), with some notes deleted
    between them (segments with deletions)."""
    rng = random.Random(seed)
    engine = RecallEngine(vault)
    made = []
    for r in range(rounds):
        for i in range(per_round):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
            made.append(vault.add(f"Note {r}-{i}: {words}", rng.choice(["work", "work/infra", "home"]),
                                  tags=[rng.choice(WORDS)], merge=False, supersede=False).note)
        for note in rng.sample(made, 3):
            path = vault.root / note.path
            if path.exists():
                path.unlink()
        engine.sync(full=True)
    return engine


def _whoosh_exact(searcher, terms, allow=None, exclude=None):
    """Every match scored by Whoosh itself (no limit: no block skipping), best first, ties by number."""
    clauses = [q.Term(field, term) for field in SEARCH_FIELDS for term in terms]
    results = searcher.search(q.Or(clauses), limit=None, filter=allow, mask=exclude)
    return sorted(((hit.docnum, hit.score) for hit in results), key=lambda item: (-item[1], item[0]))


@pytest.mark.parametrize("query", ["deploy postgres", "budget for atlas", "weekly pager owner review",
                                   "gateway", "nothing matches xyzzy"])
def test_scores_and_ranking_are_whooshs_own_over_several_segments_with_deletions(vault, query):
    engine = _grow(vault, rounds=4, per_round=40)
    searcher = engine.bm25._current_searcher()
    assert len(searcher.leaf_searchers()) > 1 and any(s.reader().has_deletions() for s, _ in searcher.leaf_searchers())
    terms = list(dict.fromkeys(t.text for t in _query_analyzer()(query)))
    exact = _whoosh_exact(searcher, terms)
    for limit in (1, 5, 60, 1000):
        ours = bm25_arrays.top_scores(searcher, {}, SEARCH_FIELDS, terms, limit, 0.4, 0.9, None)
        assert [d for d, _s in ours] == [d for d, _s in exact[:limit]]
        assert [s for _d, s in ours] == pytest.approx([s for _d, s in exact[:limit]], rel=1e-12)


def test_a_filter_and_a_mask_let_through_what_whoosh_lets_through(vault):
    engine = _grow(vault, rounds=3, per_round=40)
    searcher = engine.bm25._current_searcher()
    terms = ["deploy", "budget", "pager"]
    allow = set(searcher.docs_for_query(q.Term("namespace", "work")))
    exclude = set(list(allow)[::4])
    exact = _whoosh_exact(searcher, terms, allow, exclude)
    assert exact
    keep = bm25_arrays.keep_mask(searcher.doc_count_all(), allow, exclude)
    ours = bm25_arrays.top_scores(searcher, {}, SEARCH_FIELDS, terms, 20, 0.4, 0.9, keep)
    assert [d for d, _s in ours] == [d for d, _s in exact[:20]]
    assert not {d for d, _s in ours} & exclude and {d for d, _s in ours} <= allow


def test_recall_finds_the_same_notes_when_whooshs_own_search_has_to_stand_in(vault, monkeypatch):
    engine = _grow(vault, rounds=2, per_round=30)
    before = engine.bm25.search("deploy staging postgres", limit=10, namespace="work")
    monkeypatch.setattr(bm25_arrays, "_postings", lambda *_args: None)  # a codec this module cannot read
    after = engine.bm25.search("deploy staging postgres", limit=10, namespace="work")
    assert before and [p for p, _s, _c in after] == [p for p, _s, _c in before]
    assert [s for _p, s, _c in after] == pytest.approx([s for _p, s, _c in before])
    assert [c for _p, _s, c in after] == [c for _p, _s, c in before]


def test_a_query_word_left_only_in_deleted_notes_counts_for_nothing(vault):
    engine = _grow(vault, rounds=2, per_round=20)
    gone = vault.add("The zebrafish tank is cleaned on Mondays", "home", merge=False, supersede=False).note
    kept = vault.add("The deploy checklist lives in the wiki", "work", merge=False, supersede=False).note
    engine.sync(full=True)
    (vault.root / gone.path).unlink()
    engine.sync(full=True)
    reader = engine.bm25._current_searcher().reader()
    assert ("body", "zebrafish") in reader  # still in a segment, as a deleted document's word
    found = engine.bm25.search("zebrafish deploy checklist", limit=5)
    assert found and found[0][0] == kept.path and all(path != gone.path for path, _s, _c in found)
