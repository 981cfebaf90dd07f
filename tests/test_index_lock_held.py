"""Another process writing the indexes at length (a `reindex`, a big import, a first embedding
without a watcher) holds the index lock for minutes. A watcher meanwhile answers recalls, adds and
grades at once, finds the notes written since by their words, and indexes them once it is let go."""

from __future__ import annotations

import os
import random
import time

from vaultmem.service.client import ask

from .test_lock_wait import lock_held
from .test_reindex_live import NOTE, served_ids
from .test_watch import wait_until, watcher  # noqa: F401 - the fixture

ANSWER_WITHIN = 1.5  # seconds; a hold below lasts 3 unless its block ends first (before, a watcher waited it out)
# Notes written by hand during the holds: unlike each other (alike, the newer would rank first: an update).
HAND = [("quokka", "The quokka runbook lives in the ops wiki."),
        ("marmot", "Marmot alerts page the storage team at night."),
        ("axolotl", "Axolotl builds are signed with the release key.")]


def hand_note(vault_dir, turn: int) -> tuple[str, str]:
    word, text = HAND[turn]
    (vault_dir / "memories" / "work" / f"{word}.md").write_text(NOTE.format(id=f"hand{turn:04d}", text=text))
    return f"hand{turn:04d}", word


def timed(request: dict, vault_dir) -> tuple[dict, float]:
    started = time.monotonic()
    answer = ask(str(vault_dir), dict(request, now=os.environ.get("VAULTMEM_NOW")), timeout=30.0)
    assert answer is not None and answer.get("ok"), answer
    return answer, time.monotonic() - started


def test_a_watcher_answers_at_once_while_another_process_holds_the_index_lock(run, vault_dir, watcher):  # noqa: F811
    run("add", "Deploys go out through the teal pipeline", "-n", "work")
    rng = random.Random(7)
    words = []
    for turn in range(3):
        with lock_held(vault_dir, 3.0, "index.lock"):
            time.sleep(rng.uniform(0.0, 0.6))  # the edits land at random moments of the hold
            note_id, word = hand_note(vault_dir, turn)
            text = f"The wombat{turn} ledger closes on Fridays"
            added, took = timed({"op": "add", "args": {"text": text, "namespace": "work"}}, vault_dir)
            assert took < ANSWER_WITHIN and added["data"]["action"] == "added"
            again, took = timed({"op": "add", "args": {"text": text, "namespace": "work"}}, vault_dir)
            assert took < ANSWER_WITHIN and again["data"]["action"] == "recurrence"  # its check saw the first
            graded, took = timed({"op": "grade", "args": {"note_id": added["data"]["id"], "rating": "good"}},
                                 vault_dir)
            assert took < ANSWER_WITHIN and graded["data"]["reps"] == 1
            answer, took = timed({"op": "recall", "query": "teal pipeline deploys"}, vault_dir)
            assert took < ANSWER_WITHIN and len(answer["hits"]) == 1
            # Written by hand during the hold: found by its words within a debounce or two.
            wait_until(lambda: (served_ids(vault_dir, word) or [None])[0] == note_id, 2.0)
            assert served_ids(vault_dir, f"wombat{turn} ledger")[0] == added["data"]["id"]
            words.append((note_id, word))
    # Let go: every note ends in both indexes (embedded, in BM25), not only matched by hand.
    wait_until(lambda: ask(str(vault_dir), {"op": "recall", "query": "ledger"})["unembedded"] == 0, 10.0)
    for note_id, word in words:
        hits = ask(str(vault_dir), {"op": "recall", "query": word})["hits"]
        assert hits[0]["id"] == note_id and "cosine" in hits[0]["signals"]  # found by meaning too
    run("reindex")
    for note_id, word in words:  # the same answers as indexes built from the files alone
        assert served_ids(vault_dir, word)[0] == note_id


def test_the_mcp_server_answers_at_once_while_another_process_holds_the_index_lock(run, vault_dir, tmp_path):
    from .test_mcp import run_session

    teal = run.json("add", "Deploys go out through the teal pipeline", "-n", "work")

    async def body(session):
        async def call(name: str, **arguments) -> tuple[dict, float]:
            started = time.monotonic()
            result = await session.call_tool(name, arguments)
            assert not result.is_error, result
            return result.structured_content, time.monotonic() - started

        warm, _took = await call("recall", query="teal pipeline")  # the server's first sync, unhurried
        assert [h["id"] for h in warm["hits"]] == [teal["id"]]
        with lock_held(vault_dir, 3.0, "index.lock"):
            note_id, word = hand_note(vault_dir, 0)
            found, took = await call("recall", query=word)
            assert took < ANSWER_WITHIN and [h["id"] for h in found["hits"]][:1] == [note_id]  # by its words
            added, took = await call("add", text="The wombat ledger closes on Fridays", namespace="work")
            assert took < ANSWER_WITHIN and added["action"] == "added"
            again, took = await call("add", text="The wombat ledger closes on Fridays", namespace="work")
            assert took < ANSWER_WITHIN and again["action"] == "recurrence"

    run_session(vault_dir, tmp_path, body)
