"""Neighbour context (search/neighbours.py): a memory said in a conversation is ranked with
the one said just before it, by an order the files alone give (session + created), through
the API on real vaults; what recall finds is judged with the real model."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone

import pytest

from vaultmem.search import neighbours, questions
from vaultmem.search.neighbours import SessionOrder

T = datetime(2026, 2, 1, 18, 0, tzinfo=timezone.utc)

CHAT = [  # (session, second, text): a question, its answer, and look-alikes from other sessions
    ("s1", 0, "Caroline: How was the charity run in Boston last Saturday?"),
    ("s1", 1, "Melanie: Amazing! I finished in under an hour and we raised 500 dollars."),
    ("s1", 2, "Caroline: That's wonderful, congratulations."),
    ("s2", 0, "Melanie: Our school bake sale raised money for the library."),
    ("s2", 1, "Caroline: Nice, I love baking."),
    ("s3", 0, "Melanie: I finished my painting of the lake in under an hour."),
]


def add_chat(vault, chat=CHAT) -> dict[str, str]:
    """Text -> note id, each line added as an agent's capture would: its session, a distinct time."""
    ids = {}
    for session, second, text in chat:
        day = int(session[1:])
        note = vault.add(text, "chat", created=T + timedelta(days=day, seconds=second), session=f"sess-{session}",
                         supersede=False, merge=False).note
        ids[text] = note.id
    return ids


def order(*rows) -> SessionOrder:
    """(path, session, created as ISO text) rows, as Catalog.session_order gives them (with datetimes)."""
    return SessionOrder.of([(path, session, datetime.fromisoformat(created)) for path, session, created in rows])


def test_the_predecessor_is_the_memory_said_last_before_in_the_same_session():
    o = order(("a", "s", "2026-01-01T10:00:00+00:00"), ("b", "s", "2026-01-01T10:00:05+00:00"),
              ("c", "s", "2026-01-01T10:01:00+00:00"), ("x", "other", "2026-01-01T10:00:30+00:00"))
    assert [o.predecessor(p) for p in "abcx"] == [None, "a", "b", None]
    assert [o.successor(p) for p in "abcx"] == ["b", "c", None, None]
    o.drop("b")
    assert o.predecessor("c") == "a"
    o.put("b", "s", datetime.fromisoformat("2026-01-01T10:02:00+00:00"))  # moved (its created changed): now last
    assert (o.predecessor("b"), o.successor("c")) == ("c", "b")


def test_no_order_where_the_files_give_none():
    same_second = order(("a", "s", "2026-01-01T10:00:00+00:00"), ("b", "s", "2026-01-01T10:00:00+00:00"),
                        ("c", "s", "2026-01-01T10:00:01+00:00"))
    assert same_second.predecessor("b") is None and same_second.predecessor("a") is None
    assert same_second.predecessor("c") is None  # two memories said just before it: neither is "the" one
    by_hand = order(("a", "day-2026-01-01", "2026-01-01T10:00:00+00:00"),
                    ("b", "day-2026-01-01", "2026-01-01T10:00:05+00:00"))
    assert by_hand.predecessor("b") is None  # adds outside any agent session are no conversation
    hours_apart = order(("a", "s", "2026-01-01T10:00:00+00:00"), ("b", "s", "2026-01-01T12:00:00+00:00"))
    assert hours_apart.predecessor("b") is None


def test_a_memory_gains_a_share_of_its_predecessors_score_and_says_so():
    fused = [("question", 0.5, {}), ("elsewhere", 0.3, {}), ("answer", 0.2, {})]
    ranked = neighbours.with_neighbour_context(fused, {"answer": "question"}.get, weight=0.3)
    assert [p for p, _s, _sig in ranked] == ["question", "answer", "elsewhere"]
    assert {p: round(s, 3) for p, s, _sig in ranked} == {"question": 0.5, "answer": 0.35, "elsewhere": 0.3}
    assert ranked[1][2] == {"neighbour": 0.15}


@pytest.mark.real_model
def test_an_answer_ranks_above_look_alikes_with_the_question_said_before_it(vault, monkeypatch):
    ids = add_chat(vault)
    answer = ids[CHAT[1][2]]

    def ranked(query):
        return [h.note.id for h in vault.recall(query)]

    money = ranked("How much money was raised at the charity run?")
    assert money.index(answer) < money.index(ids["Melanie: Our school bake sale raised money for the library."])
    time_taken = ranked("How long did Melanie take to finish the run in Boston?")
    painting = ids["Melanie: I finished my painting of the lake in under an hour."]
    assert time_taken.index(answer) < time_taken.index(painting)
    monkeypatch.setattr(neighbours, "NEIGHBOUR_WEIGHT", 0.0)  # the same question without the context:
    monkeypatch.setattr(questions, "QUESTION_DISCOUNT", 0.0)  # neither its share nor what the question loses
    without = ranked("How much money was raised at the charity run?")
    assert without.index(answer) > without.index(ids["Melanie: Our school bake sale raised money for the library."])


@pytest.mark.real_model
def test_a_neighbour_never_brings_in_a_note_without_evidence_of_its_own(vault):
    ids = add_chat(vault, [("s1", 0, "Caroline: Which trail did you hike in Yosemite last summer?"),
                           ("s1", 1, "Melanie: Haha, okay!"),
                           ("s2", 0, "Melanie: My cat knocked the plant off the shelf again.")])
    found = [h.note.id for h in vault.recall("Which trail did Caroline hike in Yosemite?")]
    assert found and found[0] == ids["Caroline: Which trail did you hike in Yosemite last summer?"]
    assert ids["Melanie: Haha, okay!"] not in found


def test_the_order_is_rebuilt_from_the_files_and_followed_as_notes_are_added(vault, vault_dir):
    from vaultmem.search.engine import rebuild_indexes

    ids = add_chat(vault, CHAT[:2])
    files = {p: p.read_bytes() for p in (vault_dir / "memories").rglob("*.md")}
    query = "charity run in Boston: raised 500 dollars"
    before = {h.note.id: h.signals.get("neighbour") for h in vault.recall(query, min_score=0)}
    assert before[ids[CHAT[1][2]]]  # the answer has its question as context
    later = add_chat(vault, CHAT[2:3])[CHAT[2][2]]  # said next, while the engine is warm
    assert {h.note.id: h.signals.get("neighbour") for h in vault.recall(query, min_score=0)}.get(later)
    assert all(p.read_bytes() == data for p, data in files.items())  # no note was rewritten for it
    after = [(h.note.id, round(h.score, 6), h.signals.get("neighbour")) for h in vault.recall(query, min_score=0)]
    shutil.rmtree(vault_dir / ".vaultmem")
    rebuild_indexes(vault)
    assert [(h.note.id, round(h.score, 6), h.signals.get("neighbour"))
            for h in vault.recall(query, min_score=0)] == after
