"""A question asks, the turn after it answers (search/questions.py): a memory that only asks
ranks below the reply that answers it, through the API on real vaults; what recall finds is
judged with the real model."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from vaultmem.search import questions
from vaultmem.search.questions import asked_share, question_share, with_questions_discounted

T = datetime(2026, 3, 1, 19, 0, tzinfo=timezone.utc)

CHAT = [  # (session, second, text): questions that echo the later query, their replies, look-alikes
    ("s1", 0, "John: What instrument are you learning to play these days?"),
    ("s1", 1, "Tim: The violin! I practise scales every evening after dinner."),
    ("s2", 0, "Tim: Which spices did you put in the soup you made for the party?"),
    ("s2", 1, "John: Just sage and a little black pepper, nothing fancy."),
    ("s3", 0, "John: My cousin plays guitar in a band on weekends."),
    ("s5", 0, "Tim: Exams are tough this term, but I'm optimistic! How do you stay motivated during long study "
              "sessions?"),
    ("s5", 1, "John: I picture my goals and take a short walk every hour."),
]


def words(text: str) -> frozenset:
    return frozenset(w.strip(".,!?'").lower() for w in text.split()) - {"how", "do", "does", "you", "i", "the"}


def add_chat(vault, chat=CHAT) -> dict[str, str]:
    """Text -> note id, each line added as an agent's capture would: its session, a distinct time."""
    ids = {}
    for session, second, text in chat:
        day = int(session[1:])
        ids[text] = vault.add(text, "chat", created=T + timedelta(days=day, seconds=second),
                              session=f"sess-{session}", supersede=False, merge=False).note.id
    return ids


def test_the_question_share_counts_the_sentences_that_ask():
    assert question_share("We deploy on Tuesdays.") == 0.0
    assert question_share("What pet do you have?") == 1.0
    assert question_share("Congrats! How did it feel to seal the deal?") == 0.5
    assert question_share("Is it 5433? Or 5432. Not sure!") == pytest.approx(1 / 3)
    assert question_share("") == 0.0
    assert question_share("我们周二部署。你养什么宠物？") == 0.5  # full-width marks, no space after them
    assert question_share("¿Qué mascota tienes? Yo tengo un gato.") == 0.5


def test_a_turn_that_states_then_asks_asks_about_the_words_it_holds_only_in_its_question():
    mixed = "Exams are tough, but I'm optimistic! How do you stay motivated during study sessions?"
    assert question_share(mixed) == 0.5
    assert asked_share(mixed, words("how does Tim stay motivated during study sessions"), words) == 1.0
    assert asked_share(mixed, words("are Tim's exams tough"), words) == 0.5  # stated: its question share
    assert asked_share(mixed, words("are exams making Tim stay motivated"), words) == 0.5  # 1 of 2 asked only
    assert asked_share("We deploy on Tuesdays.", words("when do we deploy"), words) == 0.0
    assert asked_share(mixed, frozenset(), words) == 0.5


def test_a_question_loses_a_share_of_its_score_and_says_so():
    texts = {"asks": "Which team did you sign with?", "answers": "The Minnesota Wolves!", "half": "Wow! Why?"}
    fused = [("asks", 0.8, {}), ("answers", 0.6, {}), ("half", 0.5, {})]
    ranked = with_questions_discounted(fused, texts.get, discount=0.5)
    assert [(p, round(s, 3)) for p, s, _sig in ranked] == [("answers", 0.6), ("asks", 0.4), ("half", 0.375)]
    assert [sig for _p, _s, sig in ranked] == [{}, {"question": 1.0}, {"question": 0.5}]
    assert with_questions_discounted(fused, texts.get, discount=0.0) == fused
    by_words = with_questions_discounted([("half", 0.5, {})], texts.get, words("why"), words, discount=0.5)
    assert by_words == [("half", 0.25, {"question": 1.0})]  # "why" is asked only


def test_what_a_question_loses_goes_to_its_reply():
    texts = {"asks": "Which team did you sign with?", "answers": "The Minnesota Wolves!",
             "elsewhere": "I signed with a new team this week."}
    fused = [("asks", 0.8, {}), ("elsewhere", 0.7, {}), ("answers", 0.5, {})]
    ranked = with_questions_discounted(fused, texts.get, predecessor={"answers": "asks"}.get, discount=0.5)
    assert [(p, round(s, 3)) for p, s, _sig in ranked] == [("answers", 0.9), ("elsewhere", 0.7), ("asks", 0.4)]
    assert ranked[0][2] == {"answers": 0.4} and ranked[2][2] == {"question": 1.0}
    alone = with_questions_discounted(fused, texts.get, predecessor={}.get, discount=0.5)
    assert [p for p, _s, _sig in alone] == ["elsewhere", "answers", "asks"]  # no reply: the loss goes nowhere


@pytest.mark.real_model
def test_the_reply_ranks_above_the_question_that_echoes_the_query(vault, monkeypatch):
    ids = add_chat(vault)

    def ranked(query):
        return [h.note.id for h in vault.recall(query)]

    violin, asked = ids[CHAT[1][2]], ids[CHAT[0][2]]
    sage, spices = ids[CHAT[3][2]], ids[CHAT[2][2]]
    walk, motivation = ids[CHAT[6][2]], ids[CHAT[5][2]]
    instrument = ranked("What instrument is Tim learning to play?")
    soup = ranked("What spices did John put in the soup?")
    motivated = ranked("How does John stay motivated during long study sessions?")
    assert instrument[0] == violin and asked in instrument
    assert soup[0] == sage and spices in soup
    assert motivated[0] == walk and motivation in motivated
    monkeypatch.setattr(questions, "QUESTION_DISCOUNT", 0.0)  # the same questions without the discount
    assert ranked("What instrument is Tim learning to play?")[0] == asked
    assert ranked("What spices did John put in the soup?")[0] == spices
    assert ranked("How does John stay motivated during long study sessions?")[0] == motivation


@pytest.mark.real_model
def test_the_discount_reorders_only_and_leaves_a_vault_of_statements_as_it_was(vault, monkeypatch):
    ids = add_chat(vault)
    statements = add_chat(vault, [("s4", 0, "Staging runs Postgres 16 on port 5433."),
                                  ("s4", 1, "Deploys happen on Tuesdays after the standup.")])

    def found(query):
        return [(h.note.id, round(h.score, 6)) for h in vault.recall(query)]

    asks = found("What instrument is Tim learning to play?")
    facts = found("which port does the staging database listen on")
    monkeypatch.setattr(questions, "QUESTION_DISCOUNT", 0.0)
    assert {i for i, _s in found("What instrument is Tim learning to play?")} == {i for i, _s in asks}
    assert found("which port does the staging database listen on") == facts  # no question among them
    assert facts[0][0] == statements["Staging runs Postgres 16 on port 5433."]
    assert ids[CHAT[0][2]] in {i for i, _s in asks}  # the question is still a hit, only lower


def test_a_skill_whose_trigger_is_a_question_keeps_its_whole_score(vault, monkeypatch):
    skill = vault.learn("Slow CI", trigger="Why is CI slow this week?", steps="Check the runner queue.",
                        outcome="A faster pipeline.", lessons="Cache the dependencies.", namespace="work")
    skill_id = skill.note.id

    def score():
        return {h.note.id: round(h.score, 6) for h in vault.recall("why is CI slow this week")}[skill_id]

    with_discount = score()
    monkeypatch.setattr(questions, "QUESTION_DISCOUNT", 0.0)
    assert score() == with_discount
