"""The lexical index: Whoosh BM25F over title, body, tags and namespace.

A cache under `.vaultmem/index/bm25/`, kept in step with the notes by their
file stamps (`sync`): only files whose stamp changed are re-indexed, and a
missing or damaged index is rebuilt from the notes. Text is stemmed per
script: Latin words with the English Snowball stemmer, Cyrillic words with
the Russian one, so "deploying" finds "deploy" and "серверы" finds "сервер".
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..model import Note

SCHEMA_VERSION = 2
SEARCH_FIELDS = {"title": 2.0, "body": 1.0, "tags": 1.5, "ns_words": 0.5}
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")


@lru_cache(maxsize=1)
def _stemmers():
    from whoosh.lang import stemmer_for_language

    return stemmer_for_language("en"), stemmer_for_language("ru")


def multilingual_stem(word: str) -> str:
    """Stem with the stemmer of the word's script (module level: Whoosh pickles it)."""
    english, russian = _stemmers()
    return russian(word) if _CYRILLIC.search(word) else english(word)


def analyzer():
    from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemFilter, StopFilter
    from whoosh.lang import stopwords_for_language

    stops = frozenset(stopwords_for_language("en")) | frozenset(stopwords_for_language("ru"))
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
        id=ID(stored=True, unique=True),
        path=ID(stored=True, unique=True),
        title=TEXT(analyzer=text, field_boost=SEARCH_FIELDS["title"]),
        body=TEXT(analyzer=text),
        tags=TEXT(analyzer=text, field_boost=SEARCH_FIELDS["tags"]),
        ns_words=TEXT(analyzer=text, field_boost=SEARCH_FIELDS["ns_words"]),
        namespace=KEYWORD(commas=True),
        type=ID(),
        status=ID(),
        tier=ID(),
        stamp=STORED(),
    )


def namespace_prefixes(namespace: str) -> str:
    """'a/b/c' -> 'a,a/b,a/b/c': a filter on 'a' also finds notes in 'a/b'."""
    parts = namespace.split("/")
    return ",".join("/".join(parts[: i + 1]) for i in range(len(parts)))


def document(note: Note, stamp) -> dict:
    return {
        "id": note.id,
        "path": note.path,
        "title": note.title,
        "body": note.body,
        "tags": " ".join(note.tags),
        "ns_words": note.namespace.replace("/", " "),
        "namespace": namespace_prefixes(note.namespace),
        "type": note.type,
        "status": note.status,
        "tier": note.tier,
        "stamp": list(stamp),
    }


@dataclass
class Bm25Index:
    """The Whoosh index of one vault."""

    folder: Path

    @property
    def manifest_file(self) -> Path:
        return self.folder / "manifest.json"

    def _manifest(self) -> dict:
        try:
            data = json.loads(self.manifest_file.read_text(encoding="utf-8"))
            if data.get("version") == SCHEMA_VERSION:
                return data
        except (OSError, ValueError):
            pass
        return {"version": SCHEMA_VERSION, "stamps": {}}

    def _open(self, rebuild: bool = False):
        from whoosh import index

        if not rebuild and index.exists_in(self.folder):
            try:
                return index.open_dir(self.folder)
            except Exception:  # damaged or from an older vaultmem: it is a cache, rebuild it
                pass
        if self.folder.exists():
            shutil.rmtree(self.folder)
        self.folder.mkdir(parents=True)
        return index.create_in(self.folder, schema())

    def sync(self, notes_by_path: dict[str, tuple[Note, tuple]], rebuild: bool = False) -> int:
        """Bring the index in step with `notes_by_path` (path -> (note, stamp)).

        Returns how many documents were added, changed or removed.
        """
        manifest = {"version": SCHEMA_VERSION, "stamps": {}} if rebuild else self._manifest()
        indexed: dict = manifest["stamps"]
        wanted = {path: list(stamp) for path, (_note, stamp) in notes_by_path.items()}
        changed = [p for p, s in wanted.items() if indexed.get(p) != s]
        removed = [p for p in indexed if p not in wanted]
        if not (changed or removed) and not rebuild and self.folder.exists() and self.manifest_file.exists():
            return 0
        ix = self._open(rebuild=rebuild or not self.manifest_file.exists())
        if rebuild or not self.manifest_file.exists():
            changed, removed, indexed = list(wanted), [], {}
        writer = ix.writer(limitmb=128)
        try:
            for path in removed + changed:
                writer.delete_by_term("path", path)
            for path in changed:
                note, stamp = notes_by_path[path]
                writer.add_document(**document(note, stamp))
            writer.commit(optimize=len(changed) > 5000)
        except BaseException:
            writer.cancel()
            raise
        for path in removed:
            indexed.pop(path, None)
        for path in changed:
            indexed[path] = wanted[path]
        tmp = self.manifest_file.with_name(f".manifest.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": SCHEMA_VERSION, "stamps": indexed}), encoding="utf-8")
        os.replace(tmp, self.manifest_file)
        return len(changed) + len(removed)

    def search(self, query: str, limit: int, namespace: str | None = None, kind: str | None = None,
               statuses: tuple[str, ...] | None = None) -> list[tuple[str, float]]:
        """Best matches for free text: [(note id, BM25 score)], best first."""
        from whoosh import query as q

        terms = [t.text for t in analyzer()(query)]
        if not terms or not self.manifest_file.exists():
            return []
        from whoosh import index

        if not index.exists_in(self.folder):
            return []
        ix = index.open_dir(self.folder)
        clauses = [q.Term(field, term) for field in SEARCH_FIELDS for term in dict.fromkeys(terms)]
        filters = []
        if namespace:
            filters.append(q.Term("namespace", namespace.strip("/")))
        if kind:
            filters.append(q.Term("type", kind))
        if statuses:
            filters.append(q.Or([q.Term("status", s) for s in statuses]))
        with ix.searcher() as searcher:
            results = searcher.search(q.Or(clauses), limit=limit, filter=q.And(filters) if filters else None)
            return [(hit["id"], float(hit.score)) for hit in results]
