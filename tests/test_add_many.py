"""Vault.add_many: a bulk add ends exactly as the same adds one by one would, faster."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager

import pytest

from vaultmem.errors import BadInput, SecretFound
from vaultmem.vault import Vault, init_vault

ITEMS = [
    {"text": "Service alpha listens on port 8080 in staging", "namespace": "infra"},
    {"text": "The deploy freeze starts on Friday at noon", "namespace": "release"},
    {"text": "Service alpha listens on port 8080 in staging", "namespace": "infra"},  # a repeat
    {"text": "", "namespace": "infra"},  # refused: empty
    {"text": "Service alpha listens on port 9090 in staging", "namespace": "infra"},  # an update
    {"text": "The staging db password is Tr0ub4dor-Plinth-88", "namespace": "infra"},  # refused: a secret
    {"text": "Mei prefers async updates over standups", "namespace": "team", "tags": ["people"]},
    {"text": "Backups of the orders table run nightly at 02:00", "namespace": "infra",
     "supersede": False, "merge": False},
]


def _outcome(result):
    if isinstance(result, Exception):
        return type(result).__name__
    return result.action, len(result.superseded), len(result.contested)


def _state(vault: Vault):
    return sorted((n.namespace, n.body, n.status, bool(n.supersedes), bool(n.superseded_by), n.contested, n.tags,
                   n.sessions) for n in vault.notes(include_hidden=True))


def _two_vaults_one_filled_add_by_add(tmp_path):
    """(a vault that took ITEMS one add at a time, an empty one, the outcome of each add)."""
    for name in "ab":
        init_vault(tmp_path / name)
    one_by_one, batched = Vault(tmp_path / "a"), Vault(tmp_path / "b")
    outcomes = []
    for item in ITEMS:
        try:
            outcomes.append(_outcome(one_by_one.add(**item)))
        except (BadInput, SecretFound) as exc:
            outcomes.append(type(exc).__name__)
    return one_by_one, batched, outcomes


@pytest.mark.real_model
def test_add_many_ends_like_the_same_adds_one_by_one(tmp_path):
    one_by_one, batched, outcomes = _two_vaults_one_filled_add_by_add(tmp_path)
    results = batched.add_many(ITEMS, batch=3)  # batches that split the repeat and the update from their originals
    assert [_outcome(r) for r in results] == outcomes
    assert outcomes[2][0] == "recurrence" and outcomes[4][1] == 1  # the checks really ran
    assert outcomes[3] == "BadInput" and outcomes[5] == "SecretFound"
    assert _state(batched) == _state(one_by_one)


RELEASE_TRAIN = [{"text": f"Our release train ships every {day}", "namespace": "work"}
                 for day in ("second Tuesday", "Thursday", "first Monday", "third Friday at noon")]


def _contests(vault: Vault):
    links = {n.link: n.body for n in vault.notes(include_hidden=True)}
    return sorted((n.body, n.contested, [links[link] for link in n.contested_with])
                  for n in vault.notes(include_hidden=True))


@pytest.mark.real_model
def test_a_note_contested_by_several_adds_of_one_batch_ends_as_one_by_one(tmp_path, vault_dir, run):
    """The batch rewrites an older note once with every new link; the ledger still has one
    contest record per pair, and `verify` finds the files as recorded."""
    init_vault(tmp_path / "a")
    one_by_one, batched = Vault(tmp_path / "a"), Vault(vault_dir)
    for item in RELEASE_TRAIN:
        one_by_one.add(**item)
    results = batched.add_many(RELEASE_TRAIN)
    assert [len(r.contested) for r in results] == [0, 1, 2, 3]  # the checks really ran
    assert _contests(batched) == _contests(one_by_one)
    first = next(n for n in batched.notes() if "second Tuesday" in n.body)
    assert len(first.contested_with) == 3
    for vault in (one_by_one, batched):
        records = [json.loads(line) for line in (vault.state_dir / "ledger.jsonl").read_text().splitlines()]
        assert sum(r["op"] == "contest" for r in records) == 6
    run("verify", "--strict")  # every file as its last record says


@pytest.mark.parametrize("held_seconds, rewrites", [(30.0, 1), (0.0, 2)])
def test_an_import_rewrites_a_note_contested_in_several_batches_once(tmp_path, vault_dir, monkeypatch, held_seconds,
                                                                      rewrites):
    """The older notes an import contests are written at its end (or every CONTESTS_HELD_SECONDS):
    a note contested by adds of two batches is rewritten once, and ends as adds one by one
    leave it, with a contest record per pair."""
    from vaultmem import vault as vault_module

    monkeypatch.setattr(vault_module, "CONTESTS_HELD_SECONDS", held_seconds)
    init_vault(tmp_path / "a")
    one_by_one, batched = Vault(tmp_path / "a"), Vault(vault_dir)
    for item in RELEASE_TRAIN[:3]:
        one_by_one.add(**item)
    rewritten, real_rewrite = [], Vault._rewrite_batch
    monkeypatch.setattr(Vault, "_rewrite_batch", lambda self, jobs, spares=None: (
        rewritten.extend(job[0].body for job in jobs), real_rewrite(self, jobs, spares))[1])
    results = batched.add_many(RELEASE_TRAIN[:3], batch=1)
    assert [len(r.contested) for r in results] == [0, 1, 2]
    assert rewritten.count(results[0].note.body) == rewrites
    assert _contests(batched) == _contests(one_by_one)
    records = [json.loads(line) for line in (batched.state_dir / "ledger.jsonl").read_text().splitlines()]
    assert sum(r["op"] == "contest" for r in records) == 3


@contextmanager
def _power_cut_at_add(nth: int):
    """Vault.add raises RuntimeError on its `nth` call, inside the block (adds before it go in)."""
    real_add, calls = Vault.add, []

    def add_then_crash(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == nth:
            raise RuntimeError("power cut")
        return real_add(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Vault, "add", add_then_crash)
        yield


def test_an_import_stopped_by_an_error_still_writes_the_contests_of_the_adds_that_went_in(vault_dir, run):
    vault = Vault(vault_dir)
    with _power_cut_at_add(4), pytest.raises(RuntimeError):
        vault.add_many(RELEASE_TRAIN, batch=1)
    first = next(n for n in vault.notes() if "second Tuesday" in n.body)
    assert first.contested and len(first.contested_with) == 2  # by the second and third adds
    run("verify", "--strict")


@pytest.mark.real_model
def test_a_note_links_the_newest_memories_contested_with_it_and_the_ledger_keeps_all(vault_dir, run,
                                                                                    monkeypatch):
    from vaultmem.ops import corrections

    monkeypatch.setattr(corrections, "CONTESTED_KEPT", 3)  # (8 by default)
    vault = Vault(vault_dir)
    days = ("second Tuesday", "Thursday", "first Monday", "third Friday at noon", "last Wednesday", "Monday at 9")
    results = vault.add_many([{"text": f"Our release train ships every {day}", "namespace": "work"} for day in days])
    first = results[0].note
    contesters = [r.note for r in results if first.id in r.contested]
    assert len(contesters) == 5  # every later add contested the first memory
    now = vault.get(first.id)
    assert now.contested and now.contested_with == tuple(n.link for n in contesters[-3:])  # the newest three
    assert all(len(n.contested_with) <= 3 for n in vault.notes(include_hidden=True))
    records = [json.loads(line) for line in (vault.state_dir / "ledger.jsonl").read_text().splitlines()]
    assert [r["detail"]["with"] for r in records if r["op"] == "contest" and r["id"] == first.id] \
        == [n.id for n in contesters]  # every contest on record, in order
    run("verify", "--strict")


def test_a_bulk_add_is_on_the_ledger_and_in_both_indexes(run, vault_dir):
    vault = Vault(vault_dir)
    texts = [f"Host node{i:02d} runs in rack {i % 4} of the Lisbon datacenter" for i in range(40)]
    results = vault.add_many([{"text": t, "namespace": "dc", "merge": False, "supersede": False} for t in texts],
                             batch=16)
    assert [r.action for r in results] == ["added"] * 40
    run("verify", "--strict")  # every note recorded, every hash right: exit 0
    hits = run.json("recall", "node17 rack", "-k", "3")
    assert hits[0]["id"] == results[17].note.id
    assert len({r.note.path for r in results}) == 40


@pytest.mark.real_model
@pytest.mark.parametrize("seconds, batches", [(0.0, len(ITEMS)), (60.0, 1)])
def test_a_batch_that_runs_long_ends_early_and_the_rest_ends_as_one_by_one(tmp_path, monkeypatch, seconds, batches):
    from vaultmem import vault as vault_module

    one_by_one, batched, outcomes = _two_vaults_one_filled_add_by_add(tmp_path)
    entered = []
    real_batch = vault_module.batched_durability
    monkeypatch.setattr(vault_module, "batched_durability", lambda root: (entered.append(root), real_batch(root))[1])
    monkeypatch.setattr(vault_module, "ADD_BATCH_SECONDS", seconds)  # 0: every add outlasts its batch's time
    results = batched.add_many(ITEMS)
    assert [_outcome(r) for r in results] == outcomes
    assert _state(batched) == _state(one_by_one)
    assert len(entered) == batches  # one sync and one hold of the write lock per batch


def test_a_batch_cut_short_by_a_crash_leaves_its_notes_found_and_the_ledger_whole(tmp_path, run, vault_dir):
    """add_many commits a batch's catalog rows and ledger records at its end: an error that
    escapes midway rolls them back, yet the files written are found by the next process,
    and their ledger lines (in the file) are read back, so verify passes."""
    vault = Vault(vault_dir)
    items = [{"text": f"Fact number {i} about the build farm", "namespace": "work", "merge": False,
              "supersede": False} for i in range(5)]
    with _power_cut_at_add(3), pytest.raises(RuntimeError):
        vault.add_many(items)
    expected = ["Fact number 0 about the build farm", "Fact number 1 about the build farm"]
    assert sorted(n.body.strip() for n in Vault(vault_dir).notes()) == expected  # the next process
    assert sorted(n.body.strip() for n in vault.notes()) == expected  # and this one, after the error
    assert sorted(h.note.body.strip() for h in vault.recall("build farm fact", min_score=0)) == expected
    run("verify", "--strict")


def test_a_text_is_embedded_once_even_when_batches_end_early(vault_dir, monkeypatch):
    """add_many embeds a batch's texts ahead; a batch that ends early (ADD_BATCH_SECONDS)
    leaves texts for the next one, which must find their vectors instead of running the
    model on them again (a 10k import ran it about seven times per text)."""
    from vaultmem import vault as vault_module
    from vaultmem.search import engine as engine_module

    monkeypatch.setattr(vault_module, "ADD_BATCH_SECONDS", 0.0)  # every batch ends after its first add
    monkeypatch.setattr(engine_module, "RECENT_VECTORS", 12)  # room for a little more than one batch
    vault = Vault(vault_dir)
    engine = engine_module.engine_for(vault)
    engine._load_model()
    embedder = engine.embedder
    embedded, real_embed = [], embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts, kind="passage": (embedded.extend(texts),
                                                                         real_embed(texts, kind))[1])
    texts = [f"Sensor {i} in greenhouse {i % 3} reads humidity every {i + 2} minutes" for i in range(30)]
    results = vault.add_many([{"text": t, "namespace": "farm"} for t in texts], batch=10)
    assert [r.action for r in results] == ["added"] * 30
    assert sorted(embedded) == sorted(texts)  # each text once: by the batch ahead, or by its own add


def _embeds_by_thread(vault, monkeypatch, fail_in_background: bool = False) -> list[tuple[str, str]]:
    """(thread name, text) of every text the vault's model embeds from now on."""
    import threading

    from vaultmem.search import engine as engine_module

    engine = engine_module.engine_for(vault)
    engine._load_model()
    embedder, calls = engine.embedder, []
    real_embed = embedder.embed

    def embed(texts, kind="passage"):
        name = threading.current_thread().name
        if fail_in_background and name.startswith("vaultmem-embed-ahead"):
            raise RuntimeError("the model ran out of memory")
        calls.extend((name, text) for text in texts)
        return real_embed(texts, kind)

    monkeypatch.setattr(embedder, "embed", embed)
    return calls


SENSORS = [f"Sensor {i} in greenhouse {i % 3} reads humidity every {i + 2} minutes" for i in range(30)]


def test_the_next_batch_is_embedded_in_the_background_while_this_one_is_added(vault_dir, monkeypatch):
    """add_many embeds the next batch's texts in a background thread while it adds this
    batch (search/ahead.py): every text once, the first batch's in the caller's thread,
    the others' in the background; the notes are what adds one by one make."""
    vault = Vault(vault_dir)
    calls = _embeds_by_thread(vault, monkeypatch)
    results = vault.add_many([{"text": t, "namespace": "farm"} for t in SENSORS], batch=10)
    assert [r.action for r in results] == ["added"] * 30
    assert sorted(text for _thread, text in calls) == sorted(SENSORS)
    in_background = {text for thread, text in calls if thread.startswith("vaultmem-embed-ahead")}
    assert in_background == set(SENSORS[10:])
    assert sorted(n.body.strip() for n in vault.notes()) == sorted(SENSORS)


def test_texts_the_vault_holds_a_vector_of_are_not_run_through_the_model_again(vault_dir, monkeypatch):
    """An import run a second time (and an add repeating a note's text) searches with the
    vectors stored for its texts: the model runs only on the texts that are new, and every
    repeat is still counted on its note."""
    from vaultmem.search.engine import forget_engines

    vault = Vault(vault_dir)
    first = vault.add_many([{"text": t, "namespace": "farm"} for t in SENSORS[:20]], batch=10)
    assert [r.action for r in first] == ["added"] * 20
    forget_engines(vault)  # another process, another day: only the vault's stored vectors remain
    vault = Vault(vault_dir)
    calls = _embeds_by_thread(vault, monkeypatch)
    again = vault.add_many([{"text": t, "namespace": "farm"} for t in SENSORS], batch=10)
    assert [r.action for r in again] == ["recurrence"] * 20 + ["added"] * 10
    assert sorted(text for _thread, text in calls) == sorted(SENSORS[20:])
    calls.clear()
    assert vault.add(SENSORS[3], "farm").action == "recurrence"
    assert calls == []
    assert sorted(n.body.strip() for n in vault.notes()) == sorted(SENSORS)


def test_a_batch_embeds_itself_the_texts_the_background_has_not_started_on(vault_dir, monkeypatch):
    """The background embeds several batches ahead, in short runs, one after another. A batch
    whose runs have not started (the background is behind, held here on its first run) embeds
    those texts itself instead of waiting behind the run going; it waits only for that run.
    Every text is embedded once, and the notes are what adds one by one make."""
    import threading

    from vaultmem.search import engine as engine_module

    monkeypatch.setattr(engine_module, "AHEAD_RUN_TEXTS", 5)
    vault = Vault(vault_dir)
    engine = engine_module.engine_for(vault)
    engine._load_model()
    embedder, calls, release = engine.embedder, [], threading.Event()
    real_embed = embedder.embed

    def embed(texts, kind="passage"):
        in_background = threading.current_thread().name.startswith("vaultmem-embed-ahead")
        if in_background and texts[0] == SENSORS[10]:
            release.wait(10)  # the background's first run takes long: the batches catch up with it
        calls.extend((in_background, text) for text in texts)
        return real_embed(texts, kind)

    monkeypatch.setattr(embedder, "embed", embed)
    from vaultmem.search.ahead import EmbedAhead

    original_take = EmbedAhead.take

    def take(self, digests):
        release.set()  # the batch got to waiting: only for the run going, its others dropped
        return original_take(self, digests)

    monkeypatch.setattr(EmbedAhead, "take", take)
    results = vault.add_many([{"text": t, "namespace": "farm"} for t in SENSORS], batch=10)
    assert [r.action for r in results] == ["added"] * 30
    assert sorted(text for _in_background, text in calls) == sorted(SENSORS)  # each once
    by_background = {text for in_background, text in calls if in_background}
    assert set(SENSORS[10:15]) <= by_background  # the run that was going
    assert not by_background & set(SENSORS[15:20])  # dropped before it started: embedded by the batch
    assert sorted(n.body.strip() for n in vault.notes()) == sorted(SENSORS)


def _vectors_by_text(vault: Vault) -> dict[str, bytes]:
    """text hash -> the bytes of its row in the vault's vector file."""
    import sqlite3

    import numpy as np

    [file] = (vault.root / ".vaultmem/index/vectors").glob("*/vectors.npy")
    rows = np.load(file)
    with sqlite3.connect(vault.root / ".vaultmem/cache/catalog.sqlite") as db:
        return {digest: rows[row].tobytes() for digest, row in db.execute("SELECT text_hash, row FROM vectors")}


@pytest.mark.real_model
def test_with_the_real_model_the_next_batches_are_embedded_in_a_second_process_to_the_same_vectors(tmp_path,
                                                                                                   monkeypatch):
    """The model's texts beyond the first batch run in a second process (search/embed_worker.py),
    which ends with the import; every note gets the vector adding it alone gives, bit for bit."""
    import subprocess

    from vaultmem.search.engine import engine_for

    for name in "ab":
        init_vault(tmp_path / name)
    batched, one_by_one = Vault(tmp_path / "a"), Vault(tmp_path / "b")
    calls = _embeds_by_thread(batched, monkeypatch)
    started, real_popen = [], subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(subprocess, "Popen", popen)
    results = batched.add_many([{"text": t, "namespace": "farm"} for t in SENSORS], batch=10)
    assert [r.action for r in results] == ["added"] * 30
    assert sorted(text for _thread, text in calls) == sorted(SENSORS[:10])  # the rest: not in this process
    assert len(started) == 1 and started[0].poll() is not None  # one second process, ended with the import
    for text in SENSORS:
        one_by_one.add(text, "farm")
    engine_for(one_by_one).sync()  # the last add's vector is stored by the next sync
    assert len(_vectors_by_text(batched)) == 30
    assert _vectors_by_text(batched) == _vectors_by_text(one_by_one)
    assert sorted(n.body for n in batched.notes()) == sorted(n.body for n in one_by_one.notes())


def test_a_background_embedding_that_fails_leaves_its_texts_to_the_adds(vault_dir, monkeypatch):
    vault = Vault(vault_dir)
    calls = _embeds_by_thread(vault, monkeypatch, fail_in_background=True)
    results = vault.add_many([{"text": t, "namespace": "farm"} for t in SENSORS], batch=10)
    assert [r.action for r in results] == ["added"] * 30
    assert sorted(text for _thread, text in calls) == sorted(SENSORS)  # each once, all in the caller's thread


def test_a_model_not_known_to_run_in_two_threads_embeds_in_the_callers_thread_only(vault_dir, monkeypatch):
    vault = Vault(vault_dir)
    calls = _embeds_by_thread(vault, monkeypatch)
    from vaultmem.search.engine import engine_for

    monkeypatch.setattr(type(engine_for(vault).embedder), "concurrent", False)
    vault.add_many([{"text": t, "namespace": "farm"} for t in SENSORS], batch=10)
    assert {thread for thread, _text in calls} == {"MainThread"}
    assert sorted(text for _thread, text in calls) == sorted(SENSORS)


def test_a_checked_batch_takes_the_index_lock_once_not_twice_an_add(vault_dir, monkeypatch):
    """Each add's check updates the vector rows under the index lock; a batch holds it
    throughout instead of each add taking it twice through the file lock."""
    from vaultmem.store.lock import WriteLock

    taken, real_acquire = [], WriteLock.acquire

    def acquire(self, wait=None):
        if not self.is_locked:  # a trip through the file lock, not a nested take
            taken.append(self.path.name)
        return real_acquire(self, wait)

    monkeypatch.setattr(WriteLock, "acquire", acquire)
    results = Vault(vault_dir).add_many([{"text": t, "namespace": "farm"} for t in SENSORS])
    assert [r.action for r in results] == ["added"] * 30
    assert taken.count("write.lock") == 1
    assert 1 <= taken.count("index.lock") <= 3  # the batch's, and the BM25 commit's at the end


def test_a_checked_batch_goes_on_while_another_process_holds_the_index_lock(vault_dir):
    import threading

    from vaultmem.search.engine import engine_for
    from vaultmem.store.lock import WriteLock

    vault = Vault(vault_dir)
    engine_for(vault)._load_model()
    holder, held, done = WriteLock(vault.state_dir / "index.lock"), threading.Event(), threading.Event()

    def hold():
        with holder:  # another thread excludes this one as another process would
            held.set()
            done.wait(30)

    threading.Thread(target=hold, daemon=True).start()
    held.wait(5)
    try:
        started = time.monotonic()
        results = vault.add_many([{"text": t, "namespace": "farm"} for t in SENSORS[:3]])
        assert time.monotonic() - started < 10  # each check waited a moment (REQUEST_LOCK_WAIT), no more
    finally:
        done.set()
    assert [r.action for r in results] == ["added"] * 3
    assert [h.note.body.strip() for h in vault.recall("greenhouse 2 humidity sensor 2", min_score=0)][:1] == [
        SENSORS[2]]


def test_the_files_a_batchs_contests_swap_out_take_the_next_batchs_rewrites_and_none_is_left(tmp_path, monkeypatch):
    """The old files of the notes one batch's contests rewrite are kept (files.SpareFiles) for
    the next batch's rewrites instead of a new file each; the vault ends as adds one by one
    leave it, with no hidden file left behind."""
    from vaultmem import vault as vault_module
    from vaultmem.store import files

    if files._F_SETLEASE is None:
        pytest.skip("spare files are kept only where the system tells whether another process has them open")
    monkeypatch.setattr(vault_module, "CONTESTS_HELD_SECONDS", 0.0)  # each batch writes its contests
    said = ["", ", as Ana said on Monday", ", as Bo said on Friday"]
    texts = [f"The nightly backup of shard {i} runs at 0{2 + round_}:{10 + i} from host bk-{i}{said[round_]}"
             for round_ in range(3) for i in range(8)]
    items = [{"text": t, "namespace": "ops"} for t in texts]
    for name in ("one-by-one", "batched"):
        init_vault(tmp_path / name)
    one_by_one, batched = Vault(tmp_path / "one-by-one"), Vault(tmp_path / "batched")
    outcomes = [_outcome(one_by_one.add(**item)) for item in items]
    reused, real_fill = [], files.SpareFiles.fill
    monkeypatch.setattr(files.SpareFiles, "fill", lambda self, beside, data, mode: (
        lambda tmp: (reused.append(tmp), tmp)[1])(real_fill(self, beside, data, mode)))
    results = batched.add_many(items, batch=8)
    assert [_outcome(r) for r in results] == outcomes
    assert sum(contested for _action, _superseded, contested in outcomes[16:]) > 0  # the third batch contests
    assert any(tmp is not None for tmp in reused)  # ... in files the second batch's contests swapped out
    assert _state(batched) == _state(one_by_one)
    left = [p.relative_to(tmp_path) for p in (tmp_path / "batched").rglob(".*") if p.is_file()
            and ".vaultmem" not in p.parts and p.name != ".gitignore"]
    assert left == []


def test_adds_that_contest_older_notes_do_not_list_their_folder_again_each_time(vault_dir, monkeypatch):
    """An add that contests older notes rewrites them; the catalog takes their folder's new
    mtime, so the next add's check need not list the folder again. The old files were kept
    aside for reuse and deleted after that, which moved the mtime again: every add listed the
    whole folder (at 10k notes, the one-by-one adds grew from 15 to 23 ms each)."""
    from vaultmem.store import catalog

    # These adds are milliseconds apart: a folder listed within RACY_NS of a change is listed again
    # anyway (its mtime may not have ticked). Real adds (the model's ~10 ms, a person's pace) are not.
    monkeypatch.setattr(catalog, "RACY_NS", 0)
    listed, real = [], catalog.Catalog._list_again
    monkeypatch.setattr(catalog.Catalog, "_list_again",
                        lambda self, known, moved: (listed.append(sorted(moved)), real(self, known, moved))[1])
    said = ["", ", as Ana said on Monday", ", as Bo said on Friday"]
    vault = Vault(vault_dir)
    outcomes = [vault.add(f"The nightly backup of shard {i} runs at 0{2 + r}:{10 + i} from host bk-{i}{said[r]}",
                          "ops") for r in range(3) for i in range(8)]
    assert sum(len(a.contested) for a in outcomes) >= 16  # the later rounds contest the earlier ones
    assert len([m for m in listed if "memories/ops" in m]) <= 2, listed  # made once; no relisting per add


def test_each_batchs_first_check_sees_the_notes_a_person_saved_before_it(vault_dir):
    """A batch checks the files at its first add only (its own writes reach the check through
    the catalog). The next batch, or another Vault object's on the same folder (they share one
    engine), checks them again: a note saved by hand in between is found as the same memory."""
    first = Vault(vault_dir)
    first.add_many([{"text": t, "namespace": "farm"} for t in SENSORS[:3]])
    by_hand = "The irrigation pump in greenhouse 2 is serviced every March"
    folder = vault_dir / "memories" / "farm"
    (folder / "pump.md").write_text(by_hand + "\n", encoding="utf-8")
    second = Vault(vault_dir)
    results = second.add_many([{"text": by_hand, "namespace": "farm"}, {"text": SENSORS[5], "namespace": "farm"}])
    assert [r.action for r in results] == ["recurrence", "added"]
    assert results[0].note.path == "memories/farm/pump.md"


def test_a_checked_bulk_add_leaves_the_bm25_index_complete_in_one_commit(tmp_path, monkeypatch):
    """With the checks on, the new notes reach the BM25 index once, at the end (not a Whoosh
    commit per batch); with them off, the first recall indexes them (no model is loaded)."""
    from vaultmem.search import bm25

    commits = []
    real_update = bm25.Bm25Index.update
    monkeypatch.setattr(bm25.Bm25Index, "update",
                        lambda self, write, removed, **options: commits.append(len(write)) or
                        real_update(self, write, removed, **options))
    for name in ("checked", "unchecked"):
        init_vault(tmp_path / name)
    checked = Vault(tmp_path / "checked")
    items = [{"text": f"Service node-{i} listens on port {8000 + i} in staging", "namespace": "infra"}
             for i in range(225)]  # four whole batches and a part of one
    checked.add_many(items, batch=50)
    assert commits == [225]
    assert checked.catalog().pending_index() == ({}, [])
    assert [h.note.text for h in checked.recall("node-221 port", k=1)] == ["Service node-221 listens on port 8221 "
                                                                           "in staging"]
    commits.clear()
    unchecked = Vault(tmp_path / "unchecked")
    unchecked.add_many([{**item, "merge": False, "supersede": False} for item in items], batch=50)
    assert commits == [] and len(unchecked.catalog().pending_index()[0]) == 225


def test_a_note_written_by_hand_during_a_bulk_add_is_found_by_its_later_checks(vault_dir, monkeypatch):
    """A note a person writes during a bulk add is not hidden by the adds that go into its
    folder after it (each takes the folder's new mtime): later checks find it."""
    vault = Vault(vault_dir)
    by_hand = "The coffee machine on floor three takes oat milk only"
    adds = vault.add
    made = []

    def add_then_write_by_hand(*args, **kwargs):
        added = adds(*args, **kwargs)
        if not made:  # after the first add of the first batch, in an editor (not in the same clock tick)
            time.sleep(0.05)
            folder = vault_dir / "memories" / "office"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "coffee.md").write_text(f"---\nid: handmade\ntype: memory\nnamespace: office\n---\n{by_hand}\n")
            made.append(True)
        return added

    monkeypatch.setattr(vault, "add", add_then_write_by_hand)
    results = vault.add_many([{"text": "The printer on floor two needs a badge", "namespace": "office"},
                              {"text": "Parking spots are booked through the front desk", "namespace": "office"},
                              {"text": by_hand, "namespace": "office"}], batch=2)
    assert [r.action for r in results] == ["added", "added", "recurrence"]
    assert results[2].note.id == "handmade"


def test_a_note_written_by_hand_during_an_unchecked_bulk_add_is_recalled_right_after(vault_dir, monkeypatch):
    """No check runs between the adds of an unchecked batch: the adds that land in the
    folder after a person's save must not take its mtime as if the folder held only theirs
    (the note was then hidden from recall until the full check, up to 10 s later)."""
    vault = Vault(vault_dir)
    adds = vault.add

    def add_then_write_by_hand(*args, **kwargs):
        added = adds(*args, **kwargs)
        if not (vault_dir / "memories" / "office" / "coffee.md").exists():
            time.sleep(0.05)
            (vault_dir / "memories" / "office" / "coffee.md").write_text(
                "---\nid: handmade\ntype: memory\nnamespace: office\n---\nThe coffee machine takes oat milk only\n")
        return added

    monkeypatch.setattr(vault, "add", add_then_write_by_hand)
    vault.add_many([{"text": text, "namespace": "office", "merge": False, "supersede": False} for text in
                    ("The printer on floor two needs a badge", "Parking spots are booked through the front desk",
                     "The meeting rooms are booked in the calendar app")])
    for reader in (vault, Vault(vault_dir)):  # this process, and a command started now
        assert [h.note.id for h in reader.recall("coffee machine oat milk")][:1] == ["handmade"]
        assert "handmade" in {n.id for n in reader.notes()}


def test_an_import_without_the_checks_never_loads_the_recall_engine(vault_dir):
    """Checks off, add_many needs no model and no index: a process that only imports leaves
    the engine (numpy, Whoosh, the model) unloaded, ~0.5 s it would spend for nothing."""
    import subprocess
    import sys

    code = ("import sys; from vaultmem.vault import Vault; "
            f"r = Vault({str(vault_dir)!r}).add_many([{{'text': 'Fact %d' % i, 'namespace': 'x', 'merge': False, "
            "'supersede': False} for i in range(3)]); "
            "print(len(r), 'vaultmem.search.engine' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["3", "False"]


def _bm25_commits(monkeypatch) -> list[tuple[int, bool]]:
    """(notes written, merged into one segment) of each BM25 commit from now on."""
    from vaultmem.search import bm25

    commits = []
    update = bm25.Bm25Index.update

    def counted(self, write, gone, fresh=False, optimize=False, merge=True):
        commits.append((len(write), optimize))
        return update(self, write, gone, fresh=fresh, optimize=optimize, merge=merge)

    monkeypatch.setattr(bm25.Bm25Index, "update", counted)
    return commits


def test_an_import_merges_its_bm25_index_once_at_its_end_not_at_each_commit_on_the_way(vault, monkeypatch):
    """A checked import commits the notes that pile up as it goes, unmerged; the sync that ends
    the import merges the index into one segment (merged at each commit on the way instead, it
    ended in two: the merged one and the last notes'), every note in it."""
    from vaultmem.search import engine as engine_module

    monkeypatch.setattr(engine_module, "LEXICAL_BATCH_WITH_MODEL", 12)
    monkeypatch.setattr(engine_module, "LEXICAL_OPTIMIZE", 12)
    commits = _bm25_commits(monkeypatch)
    items = [{"text": f"Service number {i} of the fleet listens on port {8000 + i}", "namespace": f"fleet/n{i % 7}"}
             for i in range(45)]
    results = vault.add_many(items, batch=10)
    assert all(r.action.startswith("added") for r in results)
    on_the_way, last = commits[:-1], commits[-1]
    assert len(on_the_way) >= 2 and all(count > 12 for count, _o in on_the_way)  # several commits of many notes
    assert not any(optimize for _count, optimize in on_the_way) and last[1]
    index = engine_module.engine_for(vault).bm25._open()
    assert len(index._segments()) == 1 and index.doc_count() == 45


def test_an_import_into_a_larger_vault_never_merges_its_whole_index(vault, monkeypatch):
    """An import's last sync commits its notes (and the notes its adds rewrote); merging the
    index into one segment is for as many notes as the index held (a first indexing, a big
    import): a few thousand into a vault of 100k merged all of it, 33 s for 2,000 adds."""
    from vaultmem.search import engine as engine_module

    monkeypatch.setattr(engine_module, "LEXICAL_OPTIMIZE", 12)
    first = [{"text": f"Service number {i} of the fleet listens on port {8000 + i}", "namespace": f"fleet/n{i % 7}",
              "merge": False, "supersede": False} for i in range(60)]
    vault.add_many(first)
    vault.recall("fleet port", k=1)  # indexed: one commit of 60 notes, merged (the index was empty)
    commits = _bm25_commits(monkeypatch)
    more = [{"text": f"Worker number {i} of the batch cluster runs {i % 5 + 2} jobs at once",
             "namespace": f"batch/n{i % 3}"} for i in range(20)]
    vault.add_many(more)
    assert commits and all(count > 12 for count, _o in commits) and not any(o for _c, o in commits)
    assert engine_module.engine_for(vault).bm25.documents() == 80


def test_an_imports_later_checks_follow_a_text_edited_and_a_note_moved_in_by_hand(vault_dir, monkeypatch):
    """Between two batches a person rewrites one note's text and moves another into the
    namespace (its `namespace:` line): the next batch's checks compare with the notes as
    they are now, though the import keeps its namespaces' vectors from batch to batch
    (search/blocks.py)."""
    vault = Vault(vault_dir)
    adds, done = vault.add, []

    def add_then_edit_by_hand(*args, **kwargs):
        added = adds(*args, **kwargs)
        done.append(added.note)
        if len(done) == 3:  # the first batch's last add (whose check searched "farm"): edits before the second
            time.sleep(0.05)
            for note, old, new in ((done[0], "Pump P1 is serviced every March", "Valve V3 opens at dawn"),
                                   (done[1], "namespace: garden", "namespace: farm")):
                path = vault_dir / note.path
                edited = path.with_name(path.name + ".tmp")
                edited.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
                edited.replace(path)  # saved as editors do: a temp file renamed over the note
        return added

    monkeypatch.setattr(vault, "add", add_then_edit_by_hand)
    results = vault.add_many([{"text": "Pump P1 is serviced every March", "namespace": "farm"},
                              {"text": "Sensor S2 reads humidity every 5 minutes", "namespace": "garden"},
                              {"text": "The barn door sticks in wet weather", "namespace": "farm"},
                              {"text": "Valve V3 opens at dusk", "namespace": "farm"},
                              {"text": "Sensor S2 reads humidity every 5 minutes", "namespace": "farm"},
                              {"text": "Pump P1 is serviced every March", "namespace": "farm"}], batch=3)
    assert [r.action for r in results] == ["added", "added", "added", "added", "recurrence", "added"]
    assert results[3].contested == (done[0].id,)  # the edited note's new text, said otherwise
    assert results[4].note.id == done[1].id


def test_an_item_add_cannot_take_is_refused_in_its_place_and_the_others_go_in(vault_dir):
    """add_many answers per item: an item without a namespace, with an unknown keyword or not a
    dict gets its BadInput where it stands, and no item before or after it is lost."""
    vault = Vault(vault_dir)
    results = vault.add_many([
        {"text": "The first item goes in", "namespace": "m"},
        {"text": "No namespace here"},
        {"text": "An unknown keyword", "namespace": "m", "bogus": 1},
        "not a dict",
        {"text": "The last item goes in", "namespace": "m"},
    ])
    assert [type(r).__name__ for r in results] == ["Added", "BadInput", "BadInput", "BadInput", "Added"]
    assert "item 2" in str(results[1]) and "namespace" in str(results[1]) and "bogus" in str(results[2])
    assert all(isinstance(r, BadInput) for r in results[1:4])
    assert sorted(n.text.strip() for n in vault.notes()) == ["The first item goes in", "The last item goes in"]
