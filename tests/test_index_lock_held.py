"""Another process writing the indexes at length (a `reindex`, a big import, a first embedding
without a watcher) holds the index lock for minutes. A watcher meanwhile answers recalls, adds and
grades at once, finds the notes written since by their words, and indexes them once it is let go."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

from vaultmem.service.client import ask
from vaultmem.vault import Vault

from .conftest import run_process
from .test_lock_wait import HAS_PROC_LOCKS, lock_held
from .test_reindex_live import NOTE, served_ids
from .test_watch import wait_until, watcher  # noqa: F401 - the fixture

ANSWER_WITHIN = 1.5  # seconds; a hold below lasts 3 unless its block ends first (before, a watcher waited it out)
PROCESS_WITHIN = 3.0  # ... for a new `vaultmem` process (~0.5 s to start); its hold lasts 6
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


def timed_process(vault_dir, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = run_process("--vault", str(vault_dir), *args)
    return result, time.monotonic() - started


def test_cli_commands_in_new_processes_answer_at_once_while_another_process_holds_the_index_lock(run, vault_dir):
    """Without a watcher each command is a new process with a new engine, whose first sync took the
    index lock: a recall, an add or the prompt hook waited out another process's hold (up to 300 s)."""
    teal = run.json("add", "Deploys go out through the teal pipeline", "-n", "work")["id"]
    run("recall", "teal")  # embedded and in BM25
    rng = random.Random(11)
    words = []
    for turn in range(2):
        with lock_held(vault_dir, 6.0, "index.lock") as holder:
            time.sleep(rng.uniform(0.0, 0.6))  # the edits land at random moments of the hold
            note_id, word = hand_note(vault_dir, turn)
            found, took = timed_process(vault_dir, "recall", word, "--json")
            assert took < PROCESS_WITHIN and [h["id"] for h in json.loads(found.stdout)][:1] == [note_id]
            assert "is writing the indexes" in found.stderr and "found by their words only" in found.stderr
            if HAS_PROC_LOCKS:
                assert f"pid {holder.pid}" in found.stderr  # who keeps them from being embedded now
            text = f"The wombat{turn} ledger closes on Fridays"
            added, took = timed_process(vault_dir, "add", text, "-n", "work", "--json")
            assert took < PROCESS_WITHIN and json.loads(added.stdout)["action"] == "added"
            again, took = timed_process(vault_dir, "add", text, "-n", "work", "--json")
            assert took < PROCESS_WITHIN and json.loads(again.stdout)["action"] == "recurrence"  # its check saw it
            # The notes embedded before the hold keep their vectors: found by meaning as well as words.
            teal_hits, took = timed_process(vault_dir, "recall", "teal pipeline deploys", "--json", "--explain")
            first = json.loads(teal_hits.stdout)[0]
            assert took < PROCESS_WITHIN and first["id"] == teal and "cosine" in first["signals"]
            words.append((note_id, word))
    hook_prompt = json.dumps({"prompt": "which pipeline do deploys go out through", "cwd": str(vault_dir)})
    with lock_held(vault_dir, 6.0, "index.lock"):
        started = time.monotonic()
        hook = subprocess.run([sys.executable, "-m", "vaultmem", "hook", "user-prompt-submit"], input=hook_prompt,
                              capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, VAULTMEM_VAULT=str(vault_dir)))
        took = time.monotonic() - started
    assert hook.returncode == 0 and took < PROCESS_WITHIN and teal in hook.stdout, (hook.stdout, hook.stderr)
    # Let go: the next command embeds and indexes what the holds kept out, and answers as a reindex would.
    for note_id, word in words:
        first = run.json("recall", word, "--explain")[0]
        assert first["id"] == note_id and "cosine" in first["signals"]
    assert "is writing" not in run("recall", "ledger").stderr
    before = {word: [h["id"] for h in run.json("recall", word)] for _id, word in words}
    run("reindex")
    assert {word: [h["id"] for h in run.json("recall", word)] for _id, word in words} == before


def test_an_open_vault_recalls_at_once_while_another_process_holds_the_index_lock(vault_dir):
    """The API's engine lives as long as the Vault: a recall made while another process writes the
    indexes answers from what is stored, and the next one after it is let go catches up."""
    from vaultmem.search.engine import engine_for

    vault = Vault(vault_dir)
    teal = vault.add("Deploys go out through the teal pipeline", namespace="work").note.id
    vault.recall("teal")
    engine = engine_for(vault)
    with lock_held(vault_dir, 4.0, "index.lock") as holder:
        note_id, word = hand_note(vault_dir, 0)
        started = time.monotonic()
        hits = vault.recall(word)
        assert time.monotonic() - started < ANSWER_WITHIN and [h.note.id for h in hits][:1] == [note_id]
        assert engine.unembedded == 1 and engine.index_writer is not None
        if HAS_PROC_LOCKS:
            assert f"pid {holder.pid}" in engine.index_writer
        vault.grade(teal, "good")  # its file changes, its text does not: it keeps its stored vector
        started = time.monotonic()
        hits = vault.recall("teal pipeline deploys")
        assert time.monotonic() - started < ANSWER_WITHIN
        assert hits[0].note.id == teal and hits[0].note.reps == 1 and "cosine" in hits[0].signals
    hits = vault.recall(word)
    assert hits[0].note.id == note_id and "cosine" in hits[0].signals
    assert engine.unembedded == 0 and engine.index_writer is None


def test_notes_found_by_their_words_meanwhile_rank_by_how_rare_those_words_are(vault_dir):
    """While another process holds the index lock, notes written meanwhile are matched by their
    words: a rare word of the query counts for more than a word every note uses, as in BM25."""
    vault = Vault(vault_dir)
    for word in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"):
        vault.add(f"The {word} service restarts nightly", namespace="ops", supersede=False, merge=False)
    vault.recall("service")  # indexed: "service" is in every note the index holds
    with lock_held(vault_dir, 4.0, "index.lock"):
        notes = (("a-desk", "The service desk opens at nine"), ("b-export", "The billing export runs at noon"))
        for name, text in notes:
            (vault_dir / "memories" / "ops" / f"{name}.md").write_text(NOTE.format(id=name.replace("-", ""), text=text))
        hits = [hit.note.id for hit in vault.recall("billing service", k=20, min_score=0)]
    assert "bexport" in hits and hits.index("bexport") < (hits.index("adesk") if "adesk" in hits else len(hits))
    assert hits[0] == "bexport", hits  # the only note holding the query's rare word comes first
