"""The catalog (store/catalog.py): per-note updates, bounded freshness, a cache that holds no code."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest

from vaultmem.errors import NotFound
from vaultmem.search.engine import RecallEngine, rebuild_indexes
from vaultmem.store import catalog as catalog_module
from vaultmem.vault import Vault


def _generation_of_each(vault):
    return dict(vault.catalog().db.execute("SELECT path, gen FROM notes"))


def test_a_grade_rewrites_one_catalog_row_and_nothing_else(vault):
    ids = [vault.add(f"Fact {word} about the build", "work", merge=False, supersede=False).note.id
           for word in ("one", "two", "three")]
    before = _generation_of_each(vault)
    graded = vault.grade(ids[0], "good")
    after = _generation_of_each(vault)
    assert [p for p in after if after[p] != before[p]] == [graded.path]
    assert Vault(vault.root).get(ids[0]).reps == 1  # a new process reads it from the catalog


def test_a_save_by_rename_is_seen_at_once_an_in_place_edit_after_the_full_check(vault, monkeypatch):
    note = vault.add("The build server is called hopper", "work", merge=False, supersede=False).note
    path = vault.root / note.path
    reader = Vault(vault.root)
    assert [n.id for n in reader.notes()] == [note.id]
    # An editor's save: a temp file renamed over the note (its folder's mtime moves).
    tmp = path.with_name(".tmp-save")
    tmp.write_text(path.read_text().replace("hopper", "turing"))
    os.replace(tmp, path)
    assert "turing" in reader.notes()[0].text
    # A rewrite in place does not touch the folder: seen by the periodic full check.
    stat = path.stat()
    path.write_text(path.read_text().replace("turing", "lovelace"))
    os.utime(path.parent, ns=(path.parent.stat().st_atime_ns, path.parent.stat().st_mtime_ns))
    monkeypatch.setattr(catalog_module, "FULL_CHECK_SECONDS", 0.0)
    assert stat.st_ino == path.stat().st_ino
    assert "lovelace" in reader.notes()[0].text
    # A single note read by id is checked against its file every time.
    monkeypatch.setattr(catalog_module, "FULL_CHECK_SECONDS", 3600.0)
    path.write_text(path.read_text().replace("lovelace", "hamilton"))
    assert "hamilton" in reader.get(note.id).text


def test_a_copied_vault_is_not_parsed_or_embedded_again(vault, tmp_path):
    for word in ("alpha", "beta", "gamma"):
        vault.add(f"The {word} cluster runs in Frankfurt", "infra", merge=False, supersede=False)
    assert RecallEngine(vault).sync()["embedded"] == 3
    copy = tmp_path / "copy"
    shutil.copytree(vault.root, copy)  # new mtimes and inodes, same bytes
    for path in (copy / "memories").rglob("*.md"):
        os.utime(path, ns=(1, 1))
    copied = Vault(copy)
    result = RecallEngine(copied).sync()
    assert result["embedded"] == 0 and result["notes"] == 3
    assert copied.catalog().generation == vault.catalog().generation  # the stamps moved, no note changed


def test_deleting_the_caches_and_reindexing_gives_the_same_results(vault):
    for text in ("Backups run nightly at 02:00", "The backup bucket is s3://ops-backups", "Lunch is at noon"):
        vault.add(text, "ops", merge=False, supersede=False)
    before = [(h.note.id, round(h.score, 6)) for h in vault.recall("when do backups run")]
    rebuild_indexes(vault)
    after = [(h.note.id, round(h.score, 6)) for h in Vault(vault.root).recall("when do backups run")]
    assert before == after and before


def test_after_edits_and_deletions_a_rebuilt_cache_gives_the_same_scores(vault):
    """The BM25 index of a vault that lived through hand edits and deletions holds deleted
    documents until a merge; its scores are still those of an index built afresh, so deleting
    the caches and reindexing changes no score (it changed 0.9117 -> 0.9114 before)."""
    texts = [f"Service s{i} backups run at {i:02d}:00 and the runbook names owner o{i % 7}" for i in range(40)]
    texts += ["Lunch is at noon", "The backup bucket is s3://ops-backups", "Postgres 16 runs on staging"]
    notes = [vault.add(text, "ops", merge=False, supersede=False).note for text in texts]
    queries = ["when do backups run", "backup bucket", "who owns the runbook", "postgres staging"]
    vault.recall(queries[0])  # the index as it is now: its next changes go into new segments
    for note in notes[:12]:
        (vault.root / note.path).unlink()
    for note in notes[12:20]:
        path = vault.root / note.path
        path.write_text(path.read_text().replace("backups run", "backups and restores run"))
    before = [[(h.note.id, h.score) for h in vault.recall(q)] for q in queries]
    rebuild_indexes(vault)
    after = [[(h.note.id, h.score) for h in Vault(vault.root).recall(q)] for q in queries]
    assert [[i for i, _s in r] for r in after] == [[i for i, _s in r] for r in before] and before[0]
    assert [s for r in after for _i, s in r] == pytest.approx([s for r in before for _i, s in r], rel=1e-9)


def test_no_cache_file_can_hold_code(vault):
    vault.add("Deploys need two approvals", "work")
    vault.recall("deploy approvals")
    state = vault.root / ".vaultmem"
    cached = [p for p in state.rglob("*") if p.is_file()]
    assert cached and not [p for p in cached if p.suffix in (".pickle", ".pkl")]
    assert all(p.read_bytes()[:2] != b"\x80\x04" for p in cached)  # no pickle stream either


class _Payload:
    """Unpickling this runs a command: what a planted cache file would do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_planted_in_the_bm25_index_never_runs(vault, tmp_path):
    """Whoosh keeps its schema and segment list as pickles in `_MAIN_*.toc`: a planted
    one is refused, and the index is rebuilt from the notes."""
    import pickle

    from vaultmem.search.engine import engine_for

    note = vault.add("Deploys need two approvals", "work").note
    vault.recall("deploy approvals")
    engine_for(vault).bm25.close()
    marker = tmp_path / "code-ran"
    folder = vault.root / ".vaultmem" / "index" / "bm25"
    tocs = sorted(folder.glob("_MAIN_*.toc"))
    assert tocs
    data = tocs[-1].read_bytes()
    payload = pickle.dumps(_Payload(marker), protocol=2)
    # The TOC holds the schema as a length-prefixed pickle after a small header; swap in the payload.
    start = data.index(b"\x80\x02")
    end = data.index(b".", start) + 1 if data.find(b".", start) != -1 else len(data)
    planted = data[:start] + payload + data[end:]
    for toc in tocs:
        toc.write_bytes(planted)
    fresh = Vault(vault.root)
    hits = fresh.recall("deploy approvals")
    assert not marker.exists()
    assert [h.note.id for h in hits][:1] == [note.id]


def test_the_restricted_unpickler_refuses_everything_but_index_data(tmp_path):
    import pickle

    from vaultmem.search.bm25 import schema
    from vaultmem.search.safe_whoosh import UnsafeIndexFile, loads

    assert loads(pickle.dumps(schema())) == schema()  # Whoosh's own data still loads
    marker = tmp_path / "code-ran"
    with pytest.raises(UnsafeIndexFile):
        loads(pickle.dumps(_Payload(marker)))
    assert not marker.exists()


def test_a_pickle_planted_as_the_vector_file_never_runs(vault_dir, tmp_path):
    """`vectors.npy` replaced by an object array (a pickle inside an .npy): not loaded,
    dropped, and every text embedded again."""
    import numpy as np

    from .conftest import run_process

    run_process("--vault", str(vault_dir), "add", "Deploys need two approvals", "-n", "work")
    run_process("--vault", str(vault_dir), "recall", "deploy approvals")
    vectors = next((vault_dir / ".vaultmem" / "index" / "vectors").rglob("vectors.npy"))
    marker = tmp_path / "code-ran"
    np.save(vectors, np.array([_Payload(marker)], dtype=object), allow_pickle=True)
    found = run_process("--vault", str(vault_dir), "recall", "deploy approvals", "--json").stdout
    assert not marker.exists()
    assert "Deploys need two approvals" in found and '"cosine"' in found


def test_vectors_are_kept_as_int8_and_an_older_float32_file_is_embedded_again(vault_dir):
    """The vector file is an int8 .npy (a quarter of float32's disk); a float32 file left by
    an older version is not misread: it is dropped and every text embedded again."""
    import numpy as np

    from .conftest import run_process

    run_process("--vault", str(vault_dir), "add", "Deploys need two approvals", "-n", "work")
    run_process("--vault", str(vault_dir), "recall", "deploy approvals")
    vectors = next((vault_dir / ".vaultmem" / "index" / "vectors").rglob("vectors.npy"))
    stored = np.load(vectors, allow_pickle=False)
    assert stored.dtype == np.int8 and stored.shape[0] == 1 and np.abs(stored).max() == 127
    np.save(vectors, stored.astype(np.float32) / 127.0, allow_pickle=False)
    found = run_process("--vault", str(vault_dir), "recall", "deploy approvals", "--json").stdout
    assert "Deploys need two approvals" in found and '"cosine"' in found
    assert np.load(vectors, allow_pickle=False).dtype == np.int8


def test_int8_rows_keep_cosines_within_a_few_thousandths():
    """Quantizing unit rows to int8 and reading them back changes a cosine by < 0.005."""
    import numpy as np

    from vaultmem.search.vectors import quantize

    rng = np.random.default_rng(3)
    rows = rng.normal(size=(500, 384)).astype(np.float32)
    rows[:, 7] += 3.0  # one dominant component, as sentence models give
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    back = quantize(rows).astype(np.float32)
    back /= np.linalg.norm(back, axis=1, keepdims=True)
    assert np.abs(rows[:50] @ rows.T - rows[:50] @ back.T).max() < 0.005


def test_a_file_moved_away_while_its_folder_is_listed_does_not_hide_the_folder(vault_dir, monkeypatch):
    """A note renamed out of a folder between the folder's listing and the stat of that
    entry: the folder stays known (it used to be dropped, and every note in it with it,
    until the next full check: grades of a note being moved failed with 'no note')."""
    import os

    from vaultmem.store import catalog as catalog_module

    folder = vault_dir / "memories" / "work"
    folder.mkdir(parents=True)
    (folder / "stays.md").write_text("---\nid: stays\n---\nStays here.\n")
    (folder / "moves.md").write_text("---\nid: moves\n---\nMoves away.\n")
    real_scandir = os.scandir
    inode = folder.stat().st_ino

    class Listing:  # the rename lands once the folder's entries are read, before they are looked at
        def __init__(self, target):
            self.real = real_scandir(target)
            self.work = (os.fstat(target) if isinstance(target, int) else os.stat(target)).st_ino == inode

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.real.close()
            return False

        def __iter__(self):
            for number, entry in enumerate(self.real):
                if self.work and number == 0:
                    (folder / "moves.md").rename(vault_dir / "memories" / "moves.md")
                yield entry

    monkeypatch.setattr(catalog_module.os, "scandir", Listing)
    files, folders = catalog_module._scan(vault_dir)
    assert "memories/work" in folders and "memories/work/stays.md" in files
    assert "memories/work/moves.md" not in files


def test_a_folder_changed_in_the_last_instant_is_listed_again_next_time(vault_dir):
    """A folder whose mtime is younger than its clock tick may change again without its
    mtime moving: it is recorded as unknown, so the next check lists it again."""
    import os
    import time

    from vaultmem.store.catalog import _scan

    fresh, settled = vault_dir / "memories" / "fresh", vault_dir / "memories" / "settled"
    fresh.mkdir(parents=True)
    settled.mkdir()
    now = time.time_ns()
    os.utime(fresh, ns=(now + 10**9, now + 10**9))  # changed "just now", however slow this machine is
    os.utime(settled, ns=(now - 10**9, now - 10**9))
    _files, folders = _scan(vault_dir)
    assert folders["memories/fresh"] == -1 and folders["memories/settled"] == now - 10**9


def test_notes_that_start_alike_take_the_next_free_number_and_never_a_taken_name(vault):
    stem = "the-deploy-checklist-for-atlas"
    paths = [vault.add(f"The deploy checklist for Atlas, version {i}", "work", title="The deploy checklist for Atlas",
                       merge=False, supersede=False).note.path for i in range(4)]
    assert [p.rsplit("/", 1)[1] for p in paths] == [f"{stem}.md", f"{stem}-2.md", f"{stem}-3.md", f"{stem}-4.md"]
    # A name the catalog has not seen yet (a person's file made a moment ago) is still never replaced,
    # and a longer name that merely starts alike does not count as taken.
    (vault.root / f"memories/work/{stem}-5.md").write_text("---\nid: handmade\n---\nmine\n")
    vault.add("Another", "work", title="The deploy checklist for Atlas 2026", merge=False, supersede=False)
    added = vault.add("And one more", "work", title="The deploy checklist for Atlas", merge=False, supersede=False)
    assert added.note.path.endswith(f"{stem}-6.md")
    assert (vault.root / f"memories/work/{stem}-5.md").read_text().endswith("mine\n")


def test_files_a_person_makes_under_the_chosen_names_meanwhile_are_never_replaced(vault, monkeypatch):
    """Between choosing a free name and writing the note, a person saves files under that
    name and the next ones (the catalog has not seen them): the note takes the first name
    still free, and their files keep their text."""
    from vaultmem import vault as vault_module

    real_create, theirs = vault_module.create_new, []

    def person_saves_first(path, text, *args):
        if not theirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            for name in (path.name, path.name.replace(".md", "-2.md"), path.name.replace(".md", "-3.md")):
                (path.parent / name).write_text(f"---\nid: hand{len(theirs)}\n---\nmine\n")
                theirs.append(path.parent / name)
        return real_create(path, text, *args)

    monkeypatch.setattr(vault_module, "create_new", person_saves_first)
    added = vault.add("The staging database listens on port 5433", "work", merge=False, supersede=False)
    assert added.note.path == "memories/work/the-staging-database-listens-on-port-5433-4.md"
    assert [path.read_text().endswith("mine\n") for path in theirs] == [True, True, True]
    assert vault.get(added.note.id).body.strip() == "The staging database listens on port 5433"


def test_a_note_moved_to_a_new_folder_while_a_grade_writes_it_is_found_by_the_next_grade(vault, monkeypatch):
    """A person makes a folder and moves the note into it the instant vaultmem's grade has
    written it, before the catalog takes its folders' mtimes (found by bench/reliability.py's
    moves race: every later grade failed with "no note with id" until the full check)."""
    note = vault.add("The staging database listens on port 5433", "race", merge=False, supersede=False).note
    Vault(vault.root).grade(note.id, "good")  # the folders are known and taken as of our own write
    moved = vault.root / "memories" / "race-moved" / (vault.root / note.path).name
    real_write_rows = catalog_module.Catalog._write_rows

    def person_moves_it(self, rows, gen):
        if rows and not moved.exists():
            moved.parent.mkdir()
            os.rename(vault.root / rows[0][0], moved)
        return real_write_rows(self, rows, gen)

    monkeypatch.setattr(catalog_module, "FULL_CHECK_SECONDS", 3600.0)
    monkeypatch.setattr(catalog_module.Catalog, "_write_rows", person_moves_it)
    Vault(vault.root).grade(note.id, "good")
    monkeypatch.setattr(catalog_module.Catalog, "_write_rows", real_write_rows)
    graded = Vault(vault.root).grade(note.id, "good")
    assert graded.path == moved.relative_to(vault.root).as_posix() and graded.reps == 3
    assert [p.name for p in vault.root.rglob("*.md") if note.id in p.read_text()] == [moved.name]


def test_an_id_the_folder_checks_miss_is_found_by_a_full_check_before_no_such_note(vault, monkeypatch):
    """The state a folder renamed back and forth under a watcher's checks left behind (seen in a
    race): the note's row gone, its folder recorded with its current mtime, so folder checks
    never list it again. `grade ID` looks at every file before it says there is no such note."""
    note = vault.add("The staging database listens on port 5433", "work", merge=False, supersede=False).note
    time.sleep(catalog_module.RACY_NS / 1e9 + 0.01)  # the folder's mtime old enough to be trusted
    catalog = Vault(vault.root).catalog()
    catalog.refresh(full=True)
    with catalog.transaction():
        catalog.db.execute("DELETE FROM notes WHERE id = ?", (note.id,))
    monkeypatch.setattr(catalog_module, "FULL_CHECK_SECONDS", 3600.0)
    assert Vault(vault.root).catalog().by_id(note.id) == []  # the folder checks do not bring it back
    assert Vault(vault.root).grade(note.id, "good").reps == 1
    with pytest.raises(NotFound, match="no note with id 'nosuchid'"):
        Vault(vault.root).grade("nosuchid", "good")


def test_a_folder_renamed_away_while_it_is_listed_and_back_keeps_every_note(vault, monkeypatch):
    """A person renames a namespace folder while a check lists it, then back (its own mtime
    never moves). Before, the files listed by their paths went missing while the folder was
    recorded as listed: recall missed them until the full check."""
    notes = [vault.add(f"Fact {word}: the staging database listens on port 5433", "work/infra",
                       merge=False, supersede=False).note for word in ("one", "two", "three")]
    folder = vault.root / "memories" / "work" / "infra"
    away = folder.with_name("infra-away")
    time.sleep(catalog_module.RACY_NS / 1e9 + 0.01)
    Vault(vault.root).catalog().refresh(full=True)
    monkeypatch.setattr(catalog_module, "FULL_CHECK_SECONDS", 3600.0)
    (folder / "by-hand.md").write_text("---\nid: byhand\n---\nA note saved by hand: the staging port is 5433\n")
    time.sleep(catalog_module.RACY_NS / 1e9 + 0.01)  # (so the check trusts the folder's new mtime)
    real_scandir = os.scandir
    inode = folder.stat().st_ino

    def rename_while_listing(target):
        listing = real_scandir(target)
        info = os.fstat(target) if isinstance(target, int) else os.stat(target)
        if folder.exists() and info.st_ino == inode:
            os.rename(folder, away)  # the person, just as the check lists the folder
        return listing

    monkeypatch.setattr(os, "scandir", rename_while_listing)
    Vault(vault.root).catalog(refresh=False).refresh()
    monkeypatch.setattr(os, "scandir", real_scandir)
    os.rename(away, folder)  # and back
    time.sleep(catalog_module.RACY_NS / 1e9 + 0.01)
    expected = sorted([note.id for note in notes] + ["byhand"])
    assert sorted(n.id for n in Vault(vault.root).notes()) == expected


def test_two_checks_at_once_never_leave_a_note_out_of_a_folder_counted_as_listed(vault, monkeypatch):
    """Check A lists the vault while a person has the note's folder renamed away; check B starts
    once it is back (a watcher's rescan and a request, or two processes). Before, B listed at
    once and A, the older listing, wrote first, B last: A dropped the note's row and folder and
    B recorded the parent folder as listed, so no check looked again until the full one, and
    recall missed the note meanwhile. Now B's listing waits for A's turn to end."""
    note = vault.add("The staging database listens on port 5433", "work/infra", merge=False, supersede=False).note
    folder = vault.root / "memories" / "work" / "infra"
    away = folder.with_name("infra-away")
    time.sleep(catalog_module.RACY_NS / 1e9 + 0.01)  # the folders' mtimes old enough to be trusted
    Vault(vault.root).catalog().refresh(full=True)
    monkeypatch.setattr(catalog_module, "FULL_CHECK_SECONDS", 3600.0)
    real_apply = catalog_module.Catalog._apply
    b_waits, a_done = threading.Event(), threading.Event()

    def check_b():
        time.sleep(catalog_module.RACY_NS / 1e9 + 0.01)  # the folder back a while: its parent's mtime trusted
        Vault(vault.root).catalog(refresh=False).refresh()

    b = threading.Thread(target=check_b)

    def apply(catalog, *args):
        if threading.current_thread() is b:  # B has listed, with the folder back: it writes after A
            b_waits.set()
            a_done.wait(10)
        elif not b.is_alive() and not b_waits.is_set():  # A has listed, without the folder
            os.rename(away, folder)  # the person renames it back
            b.start()
            b_waits.wait(1.0)  # B lists and waits to write (or, now, waits for A's turn to end)
        return real_apply(catalog, *args)

    monkeypatch.setattr(catalog_module.Catalog, "_apply", apply)
    check_a = Vault(vault.root).catalog(refresh=False)
    os.rename(folder, away)
    check_a.refresh()
    a_done.set()
    b.join(10)
    monkeypatch.setattr(catalog_module.Catalog, "_apply", real_apply)
    assert [n.id for n in Vault(vault.root).notes()] == [note.id]
    assert [h.note.id for h in Vault(vault.root).recall("staging database port")] == [note.id]


def test_a_folder_check_sees_only_that_folder_and_a_removed_folder_takes_its_sub_folders(vault_dir):
    """The folder check reads a folder's notes by a range of paths: folders whose names only
    start alike (`work-old`, `work.2`, `work0`) are other folders, a sub-folder is not the
    folder's own, and a folder removed with its sub-folders takes all their notes with it."""
    def note(rel):
        path = vault_dir / "memories" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nid: {rel.replace('/', '-').removesuffix('.md')}\n---\nA note at {rel}.\n")

    for rel in ("work/a.md", "work/infra/b.md", "work-old/c.md", "work.2/d.md", "work0/e.md"):
        note(rel)
    reader = Vault(vault_dir)
    assert len(reader.notes()) == 5
    (vault_dir / "memories" / "work" / "a.md").unlink()  # moves memories/work's mtime only
    assert sorted(n.id for n in reader.notes()) == ["work-infra-b", "work-old-c", "work.2-d", "work0-e"]
    shutil.rmtree(vault_dir / "memories" / "work")  # moves memories/'s mtime: work/ and work/infra/ are gone
    assert sorted(n.id for n in reader.notes()) == ["work-old-c", "work.2-d", "work0-e"]
    assert sorted(n.id for n in Vault(vault_dir).catalog(full=True).notes) == ["work-old-c", "work.2-d", "work0-e"]


def test_a_deleted_catalog_re_embeds_into_a_new_vector_file_not_onto_the_old_one(vault):
    """Vector rows no table points into any more (the catalog deleted, or rebuilt by a newer
    vaultmem) are dropped with their file, so the file holds one row per text, not two."""
    import numpy as np

    for word in ("alpha", "beta", "gamma"):
        vault.add(f"The {word} cluster runs in Frankfurt", "infra", merge=False, supersede=False)
    assert RecallEngine(vault).sync()["embedded"] == 3
    vault.catalog().close()
    for leftover in (vault.root / ".vaultmem" / "cache").glob("catalog.sqlite*"):
        leftover.unlink()
    again = Vault(vault.root)
    assert RecallEngine(again).sync()["embedded"] == 3
    vectors = next((vault.root / ".vaultmem" / "index" / "vectors").rglob("vectors.npy"))
    assert np.load(vectors, allow_pickle=False).shape[0] == 3
    assert [h.note.text for h in again.recall("gamma cluster", k=1)] == ["The gamma cluster runs in Frankfurt"]


def test_a_search_of_a_few_allowed_rows_finds_what_the_whole_product_finds(monkeypatch):
    """An add's check searches one namespace: only its rows are multiplied, with the same
    nearest rows and cosines as a product over the whole matrix."""
    import numpy as np

    from vaultmem.search import vectors

    rng = np.random.default_rng(5)
    matrix = rng.normal(size=(2000, 32)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    store = object.__new__(vectors.VectorStore)
    monkeypatch.setattr(vectors.VectorStore, "matrix", property(lambda self: matrix))
    rows = rng.permutation(2000)
    for share in (0.03, 0.6):
        mask = rng.random(2000) < share
        found = store.search(matrix[7], rows, 8, mask)
        monkeypatch.setattr(vectors, "SUBSET_SHARE", 0)  # always the whole product
        whole = store.search(matrix[7], rows, 8, mask)
        monkeypatch.setattr(vectors, "SUBSET_SHARE", 4)
        assert [slot for slot, _c in found] == [slot for slot, _c in whole] and len(found) == 8
        assert np.allclose([c for _s, c in found], [c for _s, c in whole], atol=1e-6)
        assert all(mask[slot] for slot, _c in found)
    assert store.search(matrix[7], rows, 8, np.zeros(2000, dtype=bool)) == []


def test_a_catalog_of_another_schema_is_rebuilt_without_running_the_model_again(vault):
    """An upgrade that changes the catalog's schema re-parses the vault, but the texts it
    embedded keep their vectors: the model runs on nothing and the vector file does not grow."""
    import numpy as np

    for word in ("alpha", "beta", "gamma"):
        vault.add(f"The {word} cluster runs in Frankfurt", "infra", merge=False, supersede=False)
    assert RecallEngine(vault).sync()["embedded"] == 3
    before = [(h.note.id, h.score) for h in vault.recall("gamma cluster")]
    db = vault.catalog().db
    db.execute("UPDATE meta SET value = ? WHERE key = 'version'", (str(catalog_module.SCHEMA_VERSION - 1),))
    vault.catalog().close()
    again = Vault(vault.root)
    assert RecallEngine(again).sync()["embedded"] == 0
    assert again.catalog().db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()[0] == \
        str(catalog_module.SCHEMA_VERSION)
    vectors = next((vault.root / ".vaultmem" / "index" / "vectors").rglob("vectors.npy"))
    assert np.load(vectors, allow_pickle=False).shape[0] == 3
    after = [(h.note.id, h.score) for h in again.recall("gamma cluster")]
    # The same notes in the same order; the scores within BM25's statistics of its re-written documents.
    assert [i for i, _s in after] == [i for i, _s in before] and len(before) == 3
    assert [s for _i, s in after] == pytest.approx([s for _i, s in before], abs=0.01)


def test_a_damaged_catalog_is_named_in_one_line_with_its_fix_and_reindex_makes_it_again(vault_dir):
    """The catalog is a cache of the notes: a damaged one (a disk error, a crash of the filesystem)
    gets one line that names it and says `vaultmem reindex`, not "internal error: DatabaseError"."""
    import sqlite3

    from .conftest import run_process

    vault = Vault(vault_dir)
    staging = vault.add("The staging database is Postgres 16", namespace="work").note
    assert vault.recall("staging database")
    db_file = vault.cache_dir / "catalog.sqlite"
    vault.forget_catalog()
    with sqlite3.connect(db_file) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
    data = bytearray(db_file.read_bytes())
    data[8192:] = b"\x5a" * (len(data) - 8192)  # the pages after the first two: zapped
    db_file.write_bytes(bytes(data))
    for command in (["recall", "staging database"], ["list"]):
        failed = run_process("--vault", str(vault_dir), *command, check=False)
        assert failed.returncode == 70
        assert failed.stderr.strip().splitlines() == [
            "vaultmem: the vault's catalog (.vaultmem/cache/catalog.sqlite) is damaged (database disk image is "
            "malformed); run `vaultmem reindex` to make it again from the notes, which are untouched"]
    run_process("--vault", str(vault_dir), "reindex")
    found = run_process("--vault", str(vault_dir), "recall", "staging database", "--json")
    assert staging.id in found.stdout


def test_an_add_check_sees_the_note_as_it_is_now_after_a_grade_or_a_hand_edit(vault):
    """The nearest notes an add's check reads are the same again and again (their Notes are
    kept once made): a note graded or edited by hand in between is read as it is now."""
    note = vault.add("The staging database listens on port 5433", "infra", merge=False, supersede=False).note
    probe = "The staging database listens on port 6543"
    engine = RecallEngine(vault)
    first = {n.id: n for n, _s in engine.similar(probe, "infra")}[note.id]
    assert first.reps == 0
    vault.grade(note.id, "good")
    assert {n.id: n for n, _s in engine.similar(probe, "infra")}[note.id].reps == 1
    path = vault.root / note.path
    path.write_text(path.read_text().replace("listens on port 5433", "listens on port 5433 behind pgbouncer"))
    after_edit = {n.id: n for n, _s in engine.similar(probe, "infra")}[note.id]
    assert "pgbouncer" in after_edit.body and after_edit.reps == 1
