"""BM25F over Whoosh's postings with numpy (search/bm25_arrays.py): Whoosh's formula, the
true top N, filters, several segments, and statistics of the notes alive (an index that
lived through edits and deletions scores as one built afresh from the same notes)."""

from __future__ import annotations

import random

import pytest
from whoosh import query as q

from vaultmem.search import bm25_arrays
from vaultmem.search.bm25 import SEARCH_FIELDS, Bm25Index, _query_analyzer
from vaultmem.search.engine import RecallEngine

WORDS = ("deploy staging postgres port backup budget atlas helix review runbook pager owner "
         "latency cache queue billing invoice nightly weekly gateway").split()


def _grow(vault, rounds: int, per_round: int, seed: int = 7, tagged: float = 1.0) -> RecallEngine:
    """A vault indexed in several commits (several segments), with some notes deleted
    between them (segments with deletions); `tagged`: the share of notes with a tag."""
    rng = random.Random(seed)
    engine = RecallEngine(vault)
    made = []
    for r in range(rounds):
        for i in range(per_round):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
            made.append(vault.add(f"Note {r}-{i}: {words}", rng.choice(["work", "work/infra", "home"]),
                                  tags=[rng.choice(WORDS)] if rng.random() < tagged else [], merge=False,
                                  supersede=False).note)
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


def _fresh(vault, engine, tmp_path) -> Bm25Index:
    """An index built in one go from the notes the grown one holds now (what `reindex` makes)."""
    fresh = Bm25Index(tmp_path / "fresh")
    fresh.update({note.path: note for note in vault.notes(include_hidden=True)}, [], fresh=True)
    return fresh


def _ours(index, terms, limit, keep=None):
    """(path, score) of bm25_arrays' top `limit` in `index`."""
    searcher = index._current_searcher()
    found = bm25_arrays.top_scores(index._statistics(searcher), SEARCH_FIELDS, terms, limit, 0.4, 0.9, keep)
    return [(searcher.stored_fields(d)["path"], score) for d, score in found]


@pytest.mark.parametrize("query", ["deploy postgres", "budget for atlas", "weekly pager owner review",
                                   "gateway", "nothing matches xyzzy"])
def test_an_index_that_lived_through_deletions_scores_as_one_built_afresh(vault, tmp_path, query):
    engine = _grow(vault, rounds=4, per_round=40)
    searcher = engine.bm25._current_searcher()
    assert len(searcher.leaf_searchers()) > 1 and any(s.reader().has_deletions() for s, _ in searcher.leaf_searchers())
    fresh = _fresh(vault, engine, tmp_path)
    assert len(fresh._current_searcher().leaf_searchers()) == 1
    terms = list(dict.fromkeys(t.text for t in _query_analyzer()(query)))
    for limit in (1, 5, 60, 1000):
        ours, rebuilt = _ours(engine.bm25, terms, limit), _ours(fresh, terms, limit)
        assert [s for _p, s in ours] == pytest.approx([s for _p, s in rebuilt], rel=1e-12)
        assert len({p for p, _s in ours}) == len(ours)
    everything = dict(_ours(engine.bm25, terms, 1000))
    assert everything.keys() == dict(_ours(fresh, terms, 1000)).keys()
    assert everything == pytest.approx(dict(_ours(fresh, terms, 1000)), rel=1e-12)
    # What recall gets: the same scores, and each note the same share of the query (coverage).
    grown, rebuilt = engine.bm25.search(query, 1000), fresh.search(query, 1000)
    assert {p: (s, c) for p, s, c in grown}.keys() == {p: (s, c) for p, s, c in rebuilt}.keys()
    assert {p: c for p, _s, c in grown} == pytest.approx({p: c for p, _s, c in rebuilt}, rel=1e-12)


def test_without_deletions_the_scores_are_whooshs_own_formula(vault, tmp_path):
    """On one segment with nothing deleted, Whoosh's own BM25F gives the same top notes and
    scores within the rounding of its stored lengths (the mean length here is that of the
    lengths as stored, so that a rebuilt index agrees exactly)."""
    engine = _grow(vault, rounds=2, per_round=40)
    fresh = _fresh(vault, engine, tmp_path)
    searcher = fresh._current_searcher()
    for query in ("deploy postgres", "weekly pager owner review", "gateway"):
        terms = list(dict.fromkeys(t.text for t in _query_analyzer()(query)))
        exact = _whoosh_exact(searcher, terms)
        ours = bm25_arrays.top_scores(fresh._statistics(searcher), SEARCH_FIELDS, terms, 1000, 0.4, 0.9, None)
        assert {d for d, _s in ours} == {d for d, _s in exact}
        assert dict(ours) == pytest.approx(dict(exact), rel=0.02)


def test_a_field_most_notes_lack_weighs_as_in_whoosh(vault, tmp_path):
    """Most notes have no tags (and memories no title): a note without the field counts 0 in the
    field's mean length, as in Whoosh's. Counted as 1, the mean of tags went from ~0.2 to ~1,
    and a note's matching tag weighed far more than Whoosh gives it (skills and tagged notes
    crowded the top of recall)."""
    engine = _grow(vault, rounds=2, per_round=40, tagged=0.2)
    fresh = _fresh(vault, engine, tmp_path)
    searcher = fresh._current_searcher()
    stats = fresh._statistics(searcher)
    for field in SEARCH_FIELDS:
        assert stats.mean_length(field) == pytest.approx(searcher.avg_field_length(field), rel=0.03, abs=1e-9)
    for query in ("deploy postgres", "weekly pager owner review", "gateway"):
        terms = list(dict.fromkeys(t.text for t in _query_analyzer()(query)))
        exact = _whoosh_exact(searcher, terms)
        ours = bm25_arrays.top_scores(stats, SEARCH_FIELDS, terms, 1000, 0.4, 0.9, None)
        assert dict(ours) == pytest.approx(dict(exact), rel=0.02)


def test_a_filter_and_a_mask_let_through_what_whoosh_lets_through(vault):
    engine = _grow(vault, rounds=3, per_round=40)
    searcher = engine.bm25._current_searcher()
    stats = engine.bm25._statistics(searcher)
    terms = ["deploy", "budget", "pager"]
    allow = set(searcher.docs_for_query(q.Term("namespace", "work")))
    exclude = set(list(allow)[::4])
    passing = {d for d, _s in _whoosh_exact(searcher, terms, allow, exclude)}
    assert passing
    keep = bm25_arrays.keep_mask(searcher.doc_count_all(), allow, exclude)
    ours = bm25_arrays.top_scores(stats, SEARCH_FIELDS, terms, 20, 0.4, 0.9, keep)
    unfiltered = bm25_arrays.top_scores(stats, SEARCH_FIELDS, terms, 100_000, 0.4, 0.9, None)
    assert ours == [(d, s) for d, s in unfiltered if d in passing][:20]
    assert not {d for d, _s in ours} & exclude and {d for d, _s in ours} <= allow


def test_recall_finds_the_same_notes_when_whooshs_own_search_has_to_stand_in(vault, monkeypatch, tmp_path):
    """Whoosh's own search (a codec this module cannot read) on an index without deletions: the
    same notes, scores within the rounding of the stored lengths, the same coverage."""
    index = _fresh(vault, _grow(vault, rounds=2, per_round=30), tmp_path)
    before = index.search("deploy staging postgres", limit=10, namespace="work")
    monkeypatch.setattr(bm25_arrays, "_postings", lambda *_args: None)  # a codec this module cannot read
    index._filter_cache_for = None  # a new searcher's statistics, read without postings
    after = index.search("deploy staging postgres", limit=10, namespace="work")
    assert before and {p for p, _s, _c in after} == {p for p, _s, _c in before}
    assert {p: s for p, s, _c in after} == pytest.approx({p: s for p, s, _c in before}, rel=0.02)
    assert {p: c for p, _s, c in after} == pytest.approx({p: c for p, _s, c in before})


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
