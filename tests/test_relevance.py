"""Abstention by word-by-word agreement (search/relevance.py): a question whose words find
no counterpart in the vault gets nothing even when a note is near it in meaning as a whole,
through the API and the CLI on real vaults; the rule itself on hand-made signals."""

from __future__ import annotations

import numpy as np
import pytest

from vaultmem.search.engine import Hit
from vaultmem.search.relevance import alignment, looks_english, relevant

NOTES = [
    "Maria's birthday is June 12th; she loves dark chocolate.",
    "Staging runs Postgres 16 on port 5433",
    "Priya owns the on-call rotation and publishes it every Monday",
]


@pytest.fixture
def notes(vault):
    return [vault.add(text, "personal").note for text in NOTES]


@pytest.mark.real_model
def test_near_in_meaning_but_no_word_agrees_is_nothing_while_its_real_question_is_answered(vault, notes):
    assert vault.recall("what is my sister's shoe size") == []  # near "Maria's birthday" as a whole
    hits = vault.recall("what gift would Maria like")
    assert [h.note.id for h in hits][:1] == [notes[0].id]
    assert hits[0].signals["agreement"] >= 0.32 and "alignment" in hits[0].signals


@pytest.mark.real_model
def test_min_agreement_0_in_config_turns_the_word_check_off(run, vault_dir, notes):
    assert run.json("recall", "what is my sister's shoe size") == []
    config = vault_dir / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text().replace("min_agreement: auto", "min_agreement: 0"))
    assert [h["id"] for h in run.json("recall", "what is my sister's shoe size")][:1] == [notes[0].id]


@pytest.mark.real_model
def test_explain_shows_the_agreement_of_a_hit_found_by_meaning(run, notes):
    out = run("recall", "what gift would Maria like", "--explain").stdout
    assert "agreement=" in out and "alignment=" in out


@pytest.mark.real_model
def test_a_question_in_another_language_is_judged_by_the_model_floor_alone(vault, notes):
    assert [h.note.id for h in vault.recall("Wann ist Marias Geburtstag?")][:1] == [notes[0].id]


def test_a_bad_min_agreement_in_config_is_a_clear_error(run, vault_dir):
    config = vault_dir / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text().replace("min_agreement: auto", "min_agreement: lots"))
    result = run("recall", "anything", expect=2)
    assert "recall.min_agreement" in result.output and "number from 0 to 1, or auto" in result.output


@pytest.mark.parametrize("text, english", [
    ("what is my sister's phone number", True), ("explain quantum entanglement simply", True),
    ("Wie lange werden die Backups aufbewahrt?", False), ("¿Qué shell uso para iniciar sesión?", False),
    ("Кто отвечает за график дежурств?", False), ("Welcher Paketmanager wird im Frontend verwendet?", False),
])
def test_looks_english(text, english):
    assert looks_english(text) is english


def test_alignment_is_the_mean_best_match_of_the_query_content_pieces():
    rows = np.eye(4, dtype=np.float32)
    query = (["what", "phone", "number"], rows[[0, 1, 2]])
    note = (["phone", "birthday"], rows[[1, 3]])
    assert alignment(query, note) == pytest.approx(0.5)  # "phone" matches, "number" does not, "what" is skipped


class _Model:
    """token_vectors stand-in: every text's one piece points one way, so agreement is known."""

    def __init__(self, same: bool):
        self.same, self.calls = same, []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return [(["word"], np.array([[1.0, 0.0]] if self.same or i == 0 else [[0.0, 1.0]], np.float32))
                for i, _t in enumerate(texts)]


def _hits(vault, *signals):
    note = vault.add("Staging runs Postgres 16", "work").note
    return [Hit(note, 0.5, f"h{i}", dict(s)) for i, s in enumerate(signals)]


def _texts(hits):
    return ["note"] * len(hits)


def test_words_of_the_query_in_a_hit_need_no_model_call(vault):
    hits = _hits(vault, {"semantic": 0.0, "coverage": 0.5}, {"semantic": 0.3, "cosine": 0.4})
    model = _Model(same=False)
    assert relevant(hits, "postgres staging port", 0.02, 0.36, _texts, model) == hits
    assert model.calls == []


def test_hits_found_by_meaning_alone_need_one_that_agrees_word_by_word(vault):
    hits = _hits(vault, {"semantic": 0.2, "cosine": 0.35}, {"semantic": 0.1, "cosine": 0.3},
                 {"semantic": 0.01, "cosine": 0.21})
    disagreeing = _Model(same=False)
    assert relevant(hits, "what is my sister's phone number", 0.02, 0.36, _texts, disagreeing) == []
    assert [len(call) for call in disagreeing.calls] == [2, 2]  # the best hit first, then the other one above the floor
    hits = _hits(vault, {"semantic": 0.2, "cosine": 0.35}, {"semantic": 0.1, "cosine": 0.3},
                 {"semantic": 0.01, "cosine": 0.21})
    agreeing = _Model(same=True)
    assert relevant(hits, "what is my sister's phone number", 0.02, 0.36, _texts, agreeing) == hits[:2]
    assert len(agreeing.calls) == 1 and hits[0].signals["agreement"] == pytest.approx((0.35 + 1.0) / 2)


def test_floor_0_keeps_every_hit_and_a_foreign_query_or_no_token_model_skips_the_word_check(vault):
    hits = _hits(vault, {"semantic": 0.2, "cosine": 0.35}, {"semantic": 0.0})
    model = _Model(same=False)
    assert relevant(hits, "what is my sister's phone number", 0.0, 0.36, _texts, model) == hits
    assert relevant(hits, "Wie ist die Telefonnummer meiner Schwester?", 0.02, 0.36, _texts, model) == hits[:1]
    assert relevant(hits, "what is my sister's phone number", 0.02, None, _texts, model) == hits[:1]
    assert model.calls == []


# ---------------------------------------------------------------- rerank_words (search/rerank.py)

def test_rerank_by_words_lifts_the_candidate_whose_words_align():
    from vaultmem.search.rerank import RERANK_WEIGHT, rerank_by_words

    def model(texts):  # the query and "answer" point one way, "topic" the other
        return [(["w"], np.array([[1.0, 0.0]] if t in ("query", "answer") else [[0.0, 1.0]], np.float32))
                for t in texts]

    fused = [("topic.md", 0.5, {}), ("answer.md", 0.4, {})]
    ranked = rerank_by_words("query", fused, lambda paths: [p.removesuffix(".md") for p in paths], model)
    assert [p for p, _s, _sig in ranked] == ["answer.md", "topic.md"]
    assert ranked[0][1] == pytest.approx(0.4 + RERANK_WEIGHT) and ranked[0][2]["alignment"] == 1.0


@pytest.mark.real_model
def test_rerank_words_in_config_reranks_and_records_the_alignment(run, vault_dir, notes):
    query = "Maria birthday chocolate or the Postgres port"  # their words: no relevance check runs the model
    assert "alignment" not in run.json("recall", query)[0]["signals"]
    config = vault_dir / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text().replace("rerank_words: false", "rerank_words: true"))
    reranked = run.json("recall", query)
    assert reranked[0]["id"] == notes[0].id and reranked[0]["signals"]["alignment"] > 0
