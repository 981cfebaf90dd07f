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
