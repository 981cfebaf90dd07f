"""search/whoosh_buffers.py: Whoosh's segment parts are read in place, and read exactly as
from the copy Whoosh made before."""

from __future__ import annotations

import io
import random

from vaultmem import Vault
from vaultmem.search.engine import engine_for
from vaultmem.search.whoosh_buffers import _ViewReader


def test_a_view_reads_seeks_and_iterates_exactly_as_a_copy_does():
    rng = random.Random(5)
    for _case in range(200):
        data = bytes(rng.choice(b"ab\n\x00\xff") for _ in range(rng.randint(0, 300)))
        view, copy = _ViewReader(memoryview(data)), io.BytesIO(data)
        for _step in range(30):
            op = rng.choice(["read", "read", "readline", "seek", "tell"])
            if op == "read":
                size = rng.choice([-1, None, 0, 1, 7, 50, 400])
                assert view.read(size) == copy.read(size)
            elif op == "readline":
                size = rng.choice([-1, 3, 40])
                assert view.readline(size) == copy.readline(size)
            elif op == "seek":
                whence = rng.choice([io.SEEK_SET, io.SEEK_CUR, io.SEEK_END])
                base = {io.SEEK_SET: 0, io.SEEK_CUR: copy.tell(), io.SEEK_END: len(data)}[whence]
                offset = max(rng.randint(-50, 320), -base)  # never before the start
                assert view.seek(offset, whence) == copy.seek(offset, whence)
            assert view.tell() == copy.tell()
        view.seek(0)
        copy.seek(0)
        assert list(view) == list(copy)


def test_recall_reads_the_index_in_place(vault_dir):
    vault = Vault(vault_dir)
    for text in ("Staging runs Postgres 16 on port 5433", "Backups run at 02:00 UTC", "Deploys freeze on Friday"):
        vault.add(text, "ops")
    engine = engine_for(vault)
    hits = engine.recall("which port does staging postgres use", 3)
    assert hits and "5433" in hits[0].note.text
    searcher = engine.bm25._current_searcher()
    readers = getattr(searcher.reader(), "readers", lambda: [searcher.reader()])()
    files = [reader._terms._dbfile.file for reader in readers if hasattr(reader, "_terms")]
    assert files and all(isinstance(f, _ViewReader) for f in files)  # no private copy of the terms


def test_an_index_written_remembering_missing_columns_scores_as_plain_whoosh_does(vault_dir, tmp_path):
    """remember_missing_columns only skips looking again for column files a segment lacks:
    an index written with it holds what plain Whoosh writes (the same hits and scores, merged
    or not), and a segment's reader still finds the columns it has."""
    from whoosh.codec import whoosh3

    from vaultmem.search.bm25 import Bm25Index
    from vaultmem.search.whoosh_buffers import remember_missing_columns

    rng = random.Random(3)
    words = "postgres staging port deploy friday backup kafka queue alice bob editor tabs rust".split()
    vault = Vault(vault_dir)
    vault.add_many([{"text": " ".join(rng.choices(words, k=9)) + f" item {i}", "namespace": f"ns{i % 3}",
                     "merge": False, "supersede": False} for i in range(120)])
    items = [(note.path, note) for note in vault.notes()]
    queries = ["postgres port", "friday deploy backup", "alice editor tabs", "kafka"]

    def held(index):
        """Every term with what its postings record (the lengths are what the lookups feed)."""
        reader = index._current_searcher().reader()
        terms = []
        for field, text in reader.all_terms():
            info = reader.term_info(field, text)
            postings = reader.postings(field, text)
            terms.append((field, text, info.doc_frequency(), info.weight(), info.min_length(),
                          info.max_length(), info.max_weight(), list(postings.all_ids())))
        return terms, [index.search(q, 20) for q in queries]

    def build(folder):
        index = Bm25Index(folder)
        index.update(dict(items[:60]), [], fresh=True, merge=False)
        index.update(dict(items[60:]), [items[0][0]], merge=False)
        unmerged = held(index)
        index.update({}, [items[1][0]], optimize=True)
        return unmerged, held(index)

    remember_missing_columns()
    reader = whoosh3.W3PerDocReader
    patched = reader.has_column
    try:
        reader.has_column = patched.__closure__[0].cell_contents  # Whoosh's own
        plain = build(tmp_path / "plain")
    finally:
        reader.has_column = patched
    assert build(tmp_path / "remembering") == plain
    assert all(plain[0][1]) and all(plain[1][1])
    assert any(term[0] == "body" and term[4] > 0 for term in plain[1][0])  # lengths were looked up
