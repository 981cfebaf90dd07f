"""The lexical index: Whoosh BM25F over title, body, tags and namespace.

A cache under `.vaultmem/index/bm25/`, kept in step with the notes by the
recall engine: the catalog says which notes changed since they were indexed,
and all of them go into one Whoosh commit (a note whose indexed document did
not change, as after a grade, costs no write). A missing or damaged index is
rebuilt from the notes. Text is stemmed per
script: Latin words with the English Snowball stemmer, Cyrillic words with
the Russian one, so "deploying" finds "deploy" and "серверы" finds "сервер".
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from vaultmem.core.model import Note
from vaultmem.search import bm25_arrays
from vaultmem.search.safe_whoosh import harden
from vaultmem.search.whoosh_buffers import read_in_place, remember_missing_columns

SCHEMA_VERSION = 7  # 7: a short key in place of the indexed path and the unused id (10k notes: 5.6 -> 3.4 MB)
SEARCH_FIELDS = {"title": 2.0, "body": 1.0, "tags": 1.5}
# Lucene's defaults suit short notes better than Whoosh's (K1=1.2, B=0.75).
BM25_K1 = 0.9
BM25_B = 0.4
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
# The hypothetical modals, which Whoosh's English stop list lacks (it has "can", "should",
# "will"), left out of queries: "would", "could", "might" frame a question that asks for an
# inference ("what fields would Caroline be likely to pursue") and say nothing of what it asks
# about, yet matched every note that says "I would love to" (LoCoMo open-domain hit@5 0.431 ->
# 0.471, nothing else moved). Not "must" or "shall", which can be what is asked ("what food must
# my son avoid": a held-out answer lost, README Benchmarks), nor "may", also a month. The index
# keeps them all (its analyzer is unchanged).
QUERY_STOPS = frozenset({"would", "could", "might"})


@lru_cache(maxsize=1)
def _stemmers():
    from whoosh.lang import stemmer_for_language

    return stemmer_for_language("en"), stemmer_for_language("ru")


def multilingual_stem(word: str) -> str:
    """Stem with the stemmer of the word's script (module level: Whoosh pickles it)."""
    english, russian = _stemmers()
    return russian(word) if _CYRILLIC.search(word) else english(word)


def analyzer(extra_stops: frozenset = frozenset()):
    from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemFilter, StopFilter
    from whoosh.lang import stopwords_for_language

    stops = frozenset(stopwords_for_language("en")) | frozenset(stopwords_for_language("ru")) | extra_stops
    return (
        RegexTokenizer(r"\w+(?:[.'’-]\w+)*")
        | LowercaseFilter()
        | StopFilter(stoplist=stops, minsize=1)
        | StemFilter(stemfn=multilingual_stem, cachesize=100_000)
    )


def schema():
    from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema

    text = analyzer()
    return Schema(
        # A document is found again (to replace or drop it) by a short key of its path, and the
        # path itself is only stored: as an indexed term, the path was a third of the index.
        key=ID(unique=True),
        path=STORED(),
        # No positions (phrase=False): no query here is a phrase, and they were half the index.
        title=TEXT(analyzer=text, field_boost=SEARCH_FIELDS["title"], phrase=False),
        body=TEXT(analyzer=text, phrase=False),
        tags=TEXT(analyzer=text, field_boost=SEARCH_FIELDS["tags"], phrase=False),
        namespace=KEYWORD(commas=True),
        type=ID(),
        status=ID(),
        tier=ID(),
    )


def namespace_prefixes(namespace: str) -> str:
    """'a/b/c' -> 'a,a/b,a/b/c': a filter on 'a' also finds notes in 'a/b'."""
    parts = namespace.split("/")
    return ",".join("/".join(parts[: i + 1]) for i in range(len(parts)))


def date_words(note: Note) -> str:
    """When the note was created, as words a query may use: "8 May 2023"."""
    created = note.created
    return f"{created.day} {MONTH_NAMES[created.month - 1]} {created.year}"


def path_key(path: str) -> str:
    """The term a note's document is found again by: 64 bits of its path's hash (no two
    paths of a vault share one in practice; a path is ~80 characters)."""
    import hashlib

    return hashlib.blake2b(path.encode("utf-8"), digest_size=8).hexdigest()


def document(note: Note) -> dict:
    """The indexed form of a note. The title field holds only a real `# heading`
    (skills): a memory's title is its own first line, and indexing it twice
    would double-count those words."""
    has_heading = any(line.startswith("# ") for line in note.body.splitlines())
    return {
        "key": path_key(note.path),
        "path": note.path,
        "title": note.title if has_heading else "",
        "body": f"{note.body}\n{date_words(note)}",
        # Tags and the namespace's words: what the note is filed under.
        "tags": " ".join((*note.tags, *note.namespace.split("/"))),
        "namespace": namespace_prefixes(note.namespace),
        "type": note.type,
        "status": note.status,
        "tier": note.tier,
    }


def document_digest(note: Note) -> bytes:
    """A fingerprint of what the index holds for a note: equal means no re-index is needed
    (16 raw bytes, as the catalog stores it)."""
    import hashlib

    return hashlib.blake2b(json.dumps(document(note), sort_keys=True).encode("utf-8"), digest_size=16).digest()


def _prepare_whoosh() -> None:
    """Whoosh as vaultmem uses it: no code run from its files, segments read in place, and
    a segment's missing columns remembered (each idempotent)."""
    harden()
    read_in_place()
    remember_missing_columns()


class Bm25Index:
    """The Whoosh index of one vault, opened once per process and kept open."""

    def __init__(self, folder: Path, held: Callable[[], bool] | None = None):
        self.folder = Path(folder)
        # Whether another process is building the folder anew (a reindex): the searcher open now
        # answers until the owner starts over, and is neither refreshed nor replaced meanwhile.
        self._held = held
        self._ix = None
        self._searcher = None
        self._filter_cache: dict = {}
        self._filter_cache_for = None
        self._stats = None  # bm25_arrays.LiveStatistics of the searcher the filters are for
        self._last_scores = None  # (searcher, terms, every document's score) of the last search
        self._segment_arrays: dict = {}  # bm25_arrays.SegmentArrays by segment reader, kept across searchers

    @property
    def searching(self) -> bool:
        """Whether a searcher is open (its segments answer even once the folder is deleted)."""
        return self._searcher is not None

    def exists(self) -> bool:
        """Whether a usable index is there: this vaultmem's schema, and it opens. One that
        is damaged, from an older vaultmem or planted (safe_whoosh refuses to build what
        its pickles ask for) is not, and gets rebuilt from the notes."""
        from whoosh import index

        if self._ix is not None:
            return True
        _prepare_whoosh()
        try:
            if not ((self.folder / "version").is_file()
                    and (self.folder / "version").read_text().strip() == str(SCHEMA_VERSION)):
                return False
            self._ix = index.open_dir(self.folder)
        except Exception:  # noqa: BLE001 - whatever is wrong with a cache, the notes rebuild it
            return False
        return True

    def documents(self) -> int:
        """How many notes the index holds (0 when there is none yet)."""
        return self._ix.doc_count() if self.exists() else 0

    def unusable(self) -> bool:
        """Index files are there but cannot be used (damaged or planted): rebuild them."""
        return self._ix is None and self.folder.is_dir() and any(self.folder.iterdir()) and not self.exists()

    def _open(self, rebuild: bool = False):
        from whoosh import index

        if not rebuild and self.exists():
            return self._ix
        _prepare_whoosh()
        self.close()
        if self.folder.exists():
            shutil.rmtree(self.folder)
        self.folder.mkdir(parents=True)
        self._ix = index.create_in(self.folder, schema())
        (self.folder / "version").write_text(str(SCHEMA_VERSION))
        return self._ix

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
        self._searcher, self._ix = None, None

    def update(self, changed: dict[str, Note], removed, fresh: bool = False, optimize: bool = False,
               merge: bool = True) -> int:
        """Re-index the `changed` notes (path -> note) and drop the `removed` paths, in one commit;
        `optimize`: merge the index into one segment (after a big indexing); `merge=False`: leave
        the new segment unmerged (a big indexing's chunks before its last, which merges them once)."""
        if not (changed or removed or fresh):
            return 0
        ix = self._open(rebuild=fresh)
        if self._searcher is not None:
            # An open searcher makes Whoosh lose this writer's deletions: close it first.
            self._searcher.close()
            self._searcher = None
        writer = ix.writer(limitmb=128, timeout=30.0, delay=0.05)
        try:
            if not fresh:
                for path in [*removed, *changed]:
                    writer.delete_by_term("key", path_key(path))
            for note in changed.values():
                writer.add_document(**document(note))
            if merge:
                writer.commit(optimize=optimize)
            else:
                from whoosh.writing import NO_MERGE

                writer.commit(mergetype=NO_MERGE)
        except BaseException:
            writer.cancel()
            raise
        return len(changed) + len(removed)

    def open_searcher(self) -> None:
        """Open the index's segments now (a search would): once open they answer, even if
        another process deletes the folder to build it anew."""
        self._current_searcher()

    def _current_searcher(self):
        from whoosh.index import EmptyIndexError

        if self._held is not None and self._held():
            return self._searcher
        try:
            if self._searcher is None:
                if not self.exists():
                    return None
                self._searcher = self._ix.searcher(weighting=_weighting())
            elif not self._searcher.up_to_date():
                try:
                    self._searcher = self._searcher.refresh()
                except TypeError:  # Whoosh cannot refresh a searcher of an index that had no segments
                    self._searcher.close()
                    self._searcher = self._ix.searcher(weighting=_weighting())
        except (EmptyIndexError, FileNotFoundError):
            # Deleted under it by another process, which builds it anew (a reindex). A searcher
            # whose refresh failed half way may hold closed segments: it is not used again.
            self._searcher = None
        return self._searcher

    def _filters(self, searcher, namespace, kind, statuses):
        """Document sets for the filters, and the same as one boolean array over the
        document numbers (bm25_arrays.keep_mask), computed once per searcher (Whoosh would
        rebuild them on every search: the largest cost of a query at 10k notes).

        Statuses are applied as a mask of the few hidden notes, not as a set of
        every visible one.
        """
        from whoosh import query as q

        self._for_searcher(searcher)
        key = (namespace, kind, statuses)
        if key not in self._filter_cache:
            allow_parts = []
            if namespace:
                allow_parts.append(q.Term("namespace", namespace.strip("/")))
            if kind:
                allow_parts.append(q.Term("type", kind))
            allow = set(searcher.docs_for_query(q.And(allow_parts))) if allow_parts else None
            exclude = None
            if statuses:
                hidden = [q.Term("status", s) for s in ("active", "stale", "archived", "suspended", "superseded")
                          if s not in statuses]
                exclude = set(searcher.docs_for_query(q.Or(hidden))) if hidden else None
            exclude = exclude or None
            self._filter_cache[key] = (allow, exclude, bm25_arrays.keep_mask(searcher.doc_count_all(), allow, exclude))
        return self._filter_cache[key]

    def _for_searcher(self, searcher) -> None:
        """Start the caches kept for one searcher (filters, live statistics) when it is a new one."""
        if self._filter_cache_for is not searcher:
            bm25_arrays.forget_merged(searcher, self._segment_arrays)
            self._filter_cache, self._filter_cache_for = {}, searcher
            self._stats = bm25_arrays.LiveStatistics(searcher, self._segment_arrays)

    def _statistics(self, searcher) -> bm25_arrays.LiveStatistics:
        self._for_searcher(searcher)
        return self._stats

    def term_weights(self, terms: list[str]) -> dict[str, float]:
        """The IDF of each of `terms` in the index, as `search`'s coverage weighs them ({} without one)."""
        searcher = self._current_searcher()
        return {} if searcher is None else _term_weights(searcher, self._statistics(searcher), terms)

    def search(self, query: str, limit: int, namespace: str | None = None, kind: str | None = None,
               statuses: tuple[str, ...] | None = None) -> list[tuple[str, float, float]]:
        """Best matches for free text: [(note path, BM25 score, coverage)], best first.

        Coverage is the share of the query's information (its terms weighted by
        IDF; a term the vault never uses counts as the rarest) that the note
        contains: a note matching one common word of a five-word query is weak
        evidence whatever its rank, and a query whose words the vault does not
        use at all is one for the embeddings.
        """
        from whoosh import query as q

        terms = query_terms(query)
        if not terms:
            return []
        searcher = self._current_searcher()
        if searcher is None:
            return []
        allow, exclude, keep = self._filters(searcher, namespace, kind, statuses)
        if allow is not None and not allow:
            return []  # nothing passes the filter (Whoosh would read an empty set as no filter)
        stats = self._statistics(searcher)
        every: list = []
        top = bm25_arrays.top_scores(stats, SEARCH_FIELDS, terms, limit, BM25_B, BM25_K1, keep, every)
        # What every other note scores for this query, for scores_of (the notes the embeddings found).
        self._last_scores = (searcher, tuple(terms), every) if top is not None else None
        if top is None:  # postings this version of Whoosh lays out otherwise: its own (slower) search
            clauses = [q.Term(field, term) for field in SEARCH_FIELDS for term in terms]
            results = searcher.search(q.Or(clauses), limit=limit, filter=allow, mask=exclude)
            top = [(hit.docnum, float(hit.score)) for hit in results]
        return _with_coverage(searcher, stats, terms, top)

    def scores_of(self, query: str, paths: list[str]) -> list[tuple[str, float, float]]:
        """`search`'s (path, BM25 score, coverage) for the notes at `paths` that hold a query term,
        whatever their rank: a note the embeddings found ranks below BM25's top N when other
        notes repeat a query word (in a tag), and without its BM25 score it fused as if it held
        none of the query's words."""
        terms = query_terms(query)
        searcher = self._current_searcher()
        if not terms or searcher is None or not paths:
            return []
        docnums = {n for n in (searcher.document_number(key=path_key(path)) for path in paths) if n is not None}
        if not docnums:
            return []
        last = self._last_scores
        if last is not None and last[0] is searcher and last[1] == tuple(terms):
            # The query `search` just scored (the engine asks right after it, for notes of the same
            # filter): read back, not scored again (a second pass cost a recall ~5 ms at 10k notes).
            top = bm25_arrays.scores_in(last[2], sorted(docnums))
        else:
            keep = bm25_arrays.keep_mask(searcher.doc_count_all(), docnums, None)
            top = bm25_arrays.top_scores(self._statistics(searcher), SEARCH_FIELDS, terms, len(docnums), BM25_B,
                                         BM25_K1, keep)
        if top is None:
            return []  # postings this module cannot read: they keep what `search` gave them
        return _with_coverage(searcher, self._statistics(searcher), terms, top)


def _with_coverage(searcher, stats, terms: list[str], top: list[tuple[int, float]]) -> list[tuple[str, float, float]]:
    """(path, score, coverage) of scored documents: the IDF-weighted share of the query's terms
    each holds (search's and scores_of's answer)."""
    weights = _term_weights(searcher, stats, terms)
    total = sum(weights.values())
    held = _terms_held(searcher, [docnum for docnum, _score in top], terms)
    return [(searcher.stored_fields(docnum)["path"], score, sum(weights[t] for t in held[docnum]) / total)
            for docnum, score in top]


def _terms_held(searcher, docnums: list[int], terms: list[str]) -> dict[int, set[str]]:
    """For each document, the query terms it holds in a searched field: one pass along each
    term's postings, skipping to the documents asked about (sorted)."""
    held: dict[int, set[str]] = {docnum: set() for docnum in docnums}
    wanted = sorted(held)
    reader = searcher.reader()
    for term in terms:
        for field in SEARCH_FIELDS:
            if not wanted or (field, term) not in reader:
                continue
            postings = reader.postings(field, term)
            for docnum in wanted:
                if postings.is_active() and postings.id() < docnum:
                    postings.skip_to(docnum)
                if not postings.is_active():
                    break
                if postings.id() == docnum:
                    held[docnum].add(term)
    return held


def _term_weights(searcher, stats: bm25_arrays.LiveStatistics, terms: list[str]) -> dict[str, float]:
    """IDF of each query term among the notes the index holds; a term no note uses gets the
    largest IDF. (Whoosh's own counts, which include deleted documents, where the live ones
    cannot be read.)"""
    import math

    def frequency(field: str, term: str) -> int:
        live = stats.doc_frequency(field, term)
        return searcher.doc_frequency(field, term) if live is None else live

    count = max(stats.count, 1)
    weights = {}
    for term in terms:
        most = max((frequency(field, term) for field in SEARCH_FIELDS), default=0)
        weights[term] = math.log(1 + count / (most or 1)) if most else math.log(1 + count)
    return weights


def _weighting():
    from whoosh import scoring

    return scoring.BM25F(B=BM25_B, K1=BM25_K1)


@lru_cache(maxsize=1)
def query_terms(query: str) -> list[str]:
    """A query's distinct terms, in order, as search reads them."""
    return list(dict.fromkeys(t.text for t in _query_analyzer()(query)))


def _query_analyzer():
    """How a query's words are read (and the words of notes compared with them by hand): as the
    index reads text, without QUERY_STOPS."""
    return analyzer(QUERY_STOPS)
