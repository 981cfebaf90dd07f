"""The vector file held for a stretch of writes (VectorStore.held, one of add_many's
batches): rows kept in memory reach the file and the tables once, on leaving; a reader
elsewhere never sees a row that is not in the file; a file replaced meanwhile is left alone."""

from __future__ import annotations

import sqlite3

import numpy as np

from vaultmem.search.embed import StandInEmbedder
from vaultmem.search.vectors import VectorStore, text_hash

MODEL = StandInEmbedder()
TEXTS = [f"Sensor {i} in greenhouse {i % 3} reads humidity every {i + 2} minutes" for i in range(12)]


def _store(folder, db_file) -> VectorStore:
    db = sqlite3.connect(db_file, isolation_level=None, check_same_thread=False)
    return VectorStore(folder, MODEL.name, lambda: db)


def _add(store: VectorStore, texts: list[str], first_path: int = 0) -> dict[str, int]:
    """The notes `note-N.md` (one per text) given the rows of their texts; path -> row."""
    changed = {f"note-{first_path + i}.md": (f"hash-{first_path + i}", text) for i, text in enumerate(texts)}
    rows, _embedded = store.update(changed, [], MODEL)
    return rows


def test_rows_added_while_held_are_searched_at_once_and_reach_the_file_and_tables_on_leaving(tmp_path):
    writer, reader = _store(tmp_path / "v", tmp_path / "c.db"), _store(tmp_path / "v", tmp_path / "c.db")
    _add(writer, TEXTS[:4])
    with writer.held():
        rows = _add(writer, TEXTS[4:], first_path=4)
        assert sorted(rows.values()) == list(range(4, 12))
        query = MODEL.embed([TEXTS[7]])[0]
        assert writer.search(query, np.arange(12), 1)[0][0] == 7  # found in memory
        # Elsewhere, meanwhile: the file and the tables as before the hold.
        assert reader.matrix.shape[0] == 4 and set(reader.rows_of_paths()) == {f"note-{i}.md" for i in range(4)}
        assert reader.stored([text_hash(MODEL.name, TEXTS[7])]) == {}
    assert reader.matrix.shape[0] == 12
    assert reader.rows_of_paths()["note-7.md"] == (7, "hash-7")
    assert np.array_equal(reader.matrix, writer.matrix)  # what was searched in memory is what the file holds
    fresh = _store(tmp_path / "v", tmp_path / "c.db")
    assert fresh.stored([text_hash(MODEL.name, t) for t in TEXTS]) == {
        text_hash(MODEL.name, t): i for i, t in enumerate(TEXTS)}


def test_a_file_deleted_during_a_hold_gets_none_of_its_rows_and_no_table_points_past_its_end(tmp_path):
    writer = _store(tmp_path / "v", tmp_path / "c.db")
    _add(writer, TEXTS[:4])
    with writer.held():
        _add(writer, TEXTS[4:], first_path=4)
        writer.file.unlink()  # a person cleaning .vaultmem/ by hand
    fresh = _store(tmp_path / "v", tmp_path / "c.db")
    assert fresh.rows_of_paths() == {} and fresh.matrix.shape[0] == 0
    assert set(_add(fresh, TEXTS).values()) == set(range(12))  # embedded again, in order
    assert np.array_equal(fresh.matrix[5], _store(tmp_path / "v", tmp_path / "c.db").matrix[5])


def test_a_hold_on_a_vault_without_vectors_yet_makes_the_file(tmp_path):
    writer = _store(tmp_path / "v", tmp_path / "c.db")
    with writer.held():
        assert not writer.file.exists()
        _add(writer, TEXTS[:3])
        assert not writer.file.exists()
    assert _store(tmp_path / "v", tmp_path / "c.db").matrix.shape == (3, MODEL.dim)


def test_a_note_forgotten_and_back_within_a_hold_keeps_its_row(tmp_path):
    writer = _store(tmp_path / "v", tmp_path / "c.db")
    _add(writer, TEXTS[:2])
    with writer.held():
        writer.update({}, ["note-1.md"], MODEL)  # moved away...
        assert "note-1.md" not in writer.rows_of_paths()
        _add(writer, [TEXTS[1]], first_path=1)  # ... and back
        assert writer.rows_of_paths()["note-1.md"] == (1, "hash-1")
        writer.update({}, ["note-0.md"], MODEL)
    assert _store(tmp_path / "v", tmp_path / "c.db").rows_of_paths() == {"note-1.md": (1, "hash-1")}


def test_the_first_rows_added_after_a_store_is_read_are_not_a_copy_of_the_whole_matrix(tmp_path):
    """A watcher reads every row once; its first add appended one more, and copied the whole
    matrix to make room (at 100k notes, 40 ms of that add). Room is made at the read."""
    texts = [f"Valve {i} of line {i % 7} opens at {i % 24}:{i % 60:02d}" for i in range(1000)]
    _add(_store(tmp_path / "v", tmp_path / "c.db"), texts[:990])
    reader = _store(tmp_path / "v", tmp_path / "c.db")
    before = reader.matrix
    _add(reader, texts[990:], first_path=990)
    after = reader.matrix
    assert after.shape[0] == 1000 and np.shares_memory(before, after)
    assert np.array_equal(after[:990], before)
