"""Whoosh's BM25F, computed with numpy over Whoosh's own postings.

Whoosh scores a query one posting at a time in Python: at 100k notes a query
of a few common words visits tens of thousands of postings through a tree of
matcher objects, most of a recall's time. Here each term's postings are read a
block at a time (ids and weights come out of a block as arrays), scored with
Whoosh's BM25F formula and the field lengths it stores, and summed into one
array per segment; the top `limit` come from a partition: the exact top N, where
Whoosh's own search, which skips blocks of postings, missed better-scoring notes
in 5 of 110 queries at 100k notes.

The statistics are those of the notes the index holds now (`LiveStatistics`):
Whoosh keeps a deleted document in its counts and length totals until a merge,
so an index that lived through edits scored otherwise than one built afresh
from the same notes, and deleting the cache changed recall's scores.

It reads the postings through attributes of Whoosh's W3 codec that are not
public API: `top_scores` returns None for anything it does not recognise (another
codec, another matcher class), and the caller falls back to Whoosh's search.
"""

from __future__ import annotations

import functools
import math

import numpy as np


@functools.lru_cache(maxsize=1)
def _length_table() -> np.ndarray:
    """Whoosh keeps each document's field length as one byte (a logarithmic code): the table back."""
    from whoosh.util.numeric import byte_to_length

    return np.array([byte_to_length(b) for b in range(256)], dtype=np.float64)


class SegmentArrays:
    """Per segment reader, what scoring needs besides the postings: each field's
    lengths and the deleted documents, as arrays read once (a segment never changes)."""

    def __init__(self, reader):
        self.reader = reader
        self.size = reader.doc_count_all()
        deleted = reader.deleted_docs_set if reader.has_deletions() else ()
        self.alive = np.ones(self.size, dtype=bool)
        self.whole = not deleted  # nothing deleted: Whoosh's own counts are the live ones
        if deleted:
            self.alive[np.fromiter(deleted, dtype=np.int64)] = False
        self._stored: dict[str, np.ndarray | None] = {}
        self._lengths: dict[str, np.ndarray | None] = {}

    def stored_lengths(self, field: str) -> np.ndarray | None:
        """Each document's length of `field` as Whoosh decodes it, 0 where it has none."""
        if field not in self._stored:
            self._stored[field] = _field_lengths(self.reader, field, self.size)
        return self._stored[field]

    def lengths(self, field: str) -> np.ndarray | None:
        """The lengths scoring divides by: as stored, 1 where none is (Whoosh's scorer's default;
        such a document has no postings in the field anyway)."""
        if field not in self._lengths:
            stored = self.stored_lengths(field)
            self._lengths[field] = None if stored is None else np.where(stored == 0, 1.0, stored)
        return self._lengths[field]


class LiveStatistics:
    """One searcher's BM25 statistics over the documents alive in it, each computed once: how
    many there are, each field's mean length (from the lengths as stored, the ones scoring
    uses), each term's document frequency. What an index built afresh from the same notes
    says, whatever documents it deleted on the way."""

    def __init__(self, searcher, segments: dict):
        self.leaves = []
        for sub, offset in searcher.leaf_searchers():
            reader = sub.reader()
            arrays = segments.get(id(reader))
            if arrays is None or arrays.reader is not reader:
                arrays = segments[id(reader)] = SegmentArrays(reader)
            self.leaves.append((reader, offset, arrays))
        self.count = int(sum(arrays.alive.sum() for _r, _o, arrays in self.leaves))
        self._mean: dict[str, float | None] = {}
        self._frequency: dict[tuple[str, str], int | None] = {}

    def mean_length(self, field: str) -> float | None:
        if field not in self._mean:
            total = 0.0
            for _reader, _offset, arrays in self.leaves:
                lengths = arrays.stored_lengths(field)  # a document without the field counts 0, as in Whoosh's
                if lengths is None:
                    self._mean[field] = None
                    return None
                total += float(lengths[arrays.alive].sum())
            self._mean[field] = total / self.count if self.count else 1.0
        return self._mean[field]

    def doc_frequency(self, field: str, term: str) -> int | None:
        """Alive documents holding `term` in `field` (None: postings this module cannot read)."""
        key = (field, term)
        if key not in self._frequency:
            count = 0
            for reader, _offset, arrays in self.leaves:
                if (field, term) not in reader:
                    continue
                if arrays.whole:
                    count += reader.doc_frequency(field, term)
                    continue
                postings = _postings(reader, field, term)
                if postings is None:
                    self._frequency[key] = None
                    return None
                count += int(arrays.alive[postings[0]].sum())
            self._frequency[key] = count
        return self._frequency[key]

    def idf(self, field: str, term: str) -> float | None:
        """Whoosh's BM25F inverse document frequency, over the alive documents."""
        frequency = self.doc_frequency(field, term)
        if frequency is None:
            return None
        return math.log(self.count / (frequency + 1)) + 1 if self.count else 0.0  # (none alive: none scored)


def _field_lengths(reader, field: str, size: int) -> np.ndarray | None:
    """Every document's length of `field` as Whoosh decodes it (0 where none is stored)."""
    perdoc = getattr(reader, "_perdoc", None)
    cached = getattr(perdoc, "_cached_reader", None)
    if cached is None:
        return None
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield

    column = cached(_lenfield(field), LENGTHS_COLUMN)
    if column is None:
        return np.zeros(size, dtype=np.float64)
    try:
        stored = column._dbfile.get(column._basepos, column._count * column._fixedlen)
    except AttributeError:
        return None
    if column._fixedlen != 1:
        return None
    codes = np.zeros(size, dtype=np.uint8)
    codes[: min(size, column._count)] = np.frombuffer(stored, dtype=np.uint8)[:size]
    return _length_table()[codes]


def _postings(reader, field: str, term: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(document numbers, weights) of a term in a field of one segment; None when the
    matcher is not one this module knows how to read."""
    from whoosh.codec.whoosh3 import W3LeafMatcher
    from whoosh.matching.wrappers import FilterMatcher

    matcher = reader.postings(field, term)
    if isinstance(matcher, FilterMatcher):  # the segment's deletions: applied through SegmentArrays.alive
        matcher = matcher.child
    if type(matcher) is not W3LeafMatcher or matcher._byteids:
        return None
    ids, weights = [], []
    while not matcher._atend:
        if matcher._data is None:
            matcher._read_data()
        count = matcher._blocklength
        deltas, block_weights = matcher._data[0], matcher._data[1]
        ids.append(np.cumsum(np.asarray(deltas, dtype=np.int64)))
        if block_weights is None:
            weights.append(np.ones(count))
        elif isinstance(block_weights, float):
            weights.append(np.full(count, block_weights))
        else:
            weights.append(np.asarray(block_weights, dtype=np.float64))
        matcher._next_block()
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.concatenate(ids), np.concatenate(weights)


def keep_mask(size: int, allow: set | None, exclude: set | None) -> np.ndarray | None:
    """The documents a filter lets through (`allow`, None: all) minus `exclude`, as one
    boolean array over the index's document numbers; None when it lets all through."""
    if allow is None and not exclude:
        return None
    keep = np.zeros(size, dtype=bool) if allow is not None else np.ones(size, dtype=bool)
    if allow:
        keep[np.fromiter(allow, dtype=np.int64)] = True
    if exclude:
        keep[np.fromiter(exclude, dtype=np.int64)] = False
    return keep


def forget_merged(searcher, segments: dict) -> None:
    """Let go of the SegmentArrays of segments `searcher` no longer has (merged away)."""
    current = {id(sub.reader()) for sub, _offset in searcher.leaf_searchers()}
    for gone in [key for key in segments if key not in current]:
        del segments[gone]


def top_scores(stats: LiveStatistics, fields, terms: list[str], limit: int, B: float, K1: float,
               keep: np.ndarray | None, every: list | None = None) -> list[tuple[int, float]] | None:
    """[(document number, BM25F score)] of the `limit` best documents holding any of
    `terms` in any of `fields`, best first (ties: lower number first, as Whoosh), among
    those `keep` lets through (keep_mask), scored with the searcher's live statistics
    (`stats`). None when a segment cannot be read this way. `every`: a list that gets each
    segment's (offset, scores of all its documents, 0 for a deleted one or one kept out):
    what any other document of the query scores, without scoring it again (scores_in)."""
    best_numbers, best_scores = [], []
    for reader, offset, arrays in stats.leaves:
        scores = np.zeros(arrays.size)
        for field in fields:
            for term in terms:
                if (field, term) not in reader:
                    continue
                postings = _postings(reader, field, term)
                lengths = arrays.lengths(field)
                idf, mean = stats.idf(field, term), stats.mean_length(field)
                if postings is None or lengths is None or idf is None or mean is None:
                    return None
                ids, tf = postings
                mean = mean or 1
                scores[ids] += idf * ((tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * lengths[ids] / mean)))
        eligible = (scores > 0) & arrays.alive
        if keep is not None:
            eligible &= keep[offset:offset + arrays.size]
        if every is not None:
            every.append((offset, np.where(eligible, scores, 0.0)))
        numbers = np.flatnonzero(eligible)
        if len(numbers) > limit:
            # Everything tied with the limit-th score stays in: the tie goes to the lower number below.
            kth = np.partition(scores[numbers], len(numbers) - limit)[len(numbers) - limit]
            numbers = numbers[scores[numbers] >= kth]
        best_numbers.append(numbers + offset)
        best_scores.append(scores[numbers])
    if not best_numbers:
        return []
    numbers, scores = np.concatenate(best_numbers), np.concatenate(best_scores)
    order = np.lexsort((numbers, -scores))[:limit]
    return [(int(numbers[i]), float(scores[i])) for i in order]


def scores_in(every: list, docnums) -> list[tuple[int, float]]:
    """[(document number, score)] of `docnums` that score above 0 in `every` (top_scores')."""
    found = []
    for docnum in docnums:
        for offset, scores in every:
            if offset <= docnum < offset + len(scores):
                if scores[docnum - offset] > 0:
                    found.append((docnum, float(scores[docnum - offset])))
                break
    return found
