"""A vault whose notes were never indexed (a fresh git clone, a copied folder, a deleted
`.vaultmem/`): recall answers at once from the notes' words while the embeddings are made
in turns, and a process stopped mid-way keeps what it wrote.

The stand-in embedder is enough: these tests are about when notes get vectors, not about
what the vectors find."""

from __future__ import annotations

import json
import random
import shutil
import threading
import time

import pytest

from vaultmem.integrations import claude_code
from vaultmem.search import vectors as vectors_module
from vaultmem.search.engine import RecallEngine
from vaultmem.service.backfill import FILL_TURN
from vaultmem.service.watch import request_handler, run_watcher
from vaultmem.vault import Vault

NOTES = 300
QUERIES = ["service node-17 port", "node-250 listens", "which port does node-3 use", "staging ports"]


_UNINDEXED: dict = {}


@pytest.fixture
def unindexed(vault_dir, tmp_path_factory):
    """A vault of NOTES memories written with the checks off: nothing is embedded or indexed yet.
    A copy of one written once per test process (its files as they were, opened afresh: as a
    clone or a copied folder is)."""
    from vaultmem.search.engine import forget_engines
    from vaultmem.vault import init_vault

    if "template" not in _UNINDEXED:
        template = tmp_path_factory.mktemp("unindexed") / "vault"
        init_vault(template)
        vault = Vault(template)
        vault.add_many([{"text": f"Service node-{i} listens on port {8000 + i} in staging", "namespace": "infra",
                         "merge": False, "supersede": False} for i in range(NOTES)])
        forget_engines(vault)
        _UNINDEXED["template"] = template
    shutil.rmtree(vault_dir)
    shutil.copytree(_UNINDEXED["template"], vault_dir)
    return Vault(vault_dir)


def embedded_paths(vault) -> int:
    engine = RecallEngine(Vault(vault.root), use_embeddings=True)
    engine._load_model()
    return len(engine.vectors.rows_of_paths())


def ranked(vault, queries=QUERIES) -> list[list[str]]:
    engine = RecallEngine(Vault(vault.root))
    return [[hit.note.id for hit in engine.recall(query, 5)] for query in queries]


def test_a_bounded_sync_answers_by_words_and_fills_to_what_an_eager_one_gives(unindexed, tmp_path):
    engine = RecallEngine(unindexed, embed_limit=16)
    hits = engine.recall("node-17 port", 3)
    assert hits and hits[0].note.text.startswith("Service node-17 ")  # found by its words
    assert engine.unembedded == NOTES - 16
    assert embedded_paths(unindexed) == 16
    turns = 0
    while engine.fill(FILL_TURN):
        turns += 1
    assert turns == (NOTES - 16 + FILL_TURN - 1) // FILL_TURN - 1
    assert engine.unembedded == 0 and embedded_paths(unindexed) == NOTES
    filled = [[hit.note.id for hit in engine.recall(query, 5)] for query in QUERIES]
    # The same vault embedded all at once (the eager way, as `reindex` does) ranks the same.
    eager = Vault.open(tmp_path / "eager", create=True)
    for path in sorted(unindexed.root.glob("memories/**/*.md")):
        target = eager.root / path.relative_to(unindexed.root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    assert ranked(eager) == filled


def test_an_edit_during_a_fill_is_embedded_and_a_deleted_note_leaves_it(unindexed):
    engine = RecallEngine(unindexed, embed_limit=8)
    engine.sync()
    pending = list(engine._unembedded)
    edited, deleted = unindexed.root / pending[5], unindexed.root / pending[6]
    edited.write_text(edited.read_text().replace("listens on port", "now listens on port 9999 and port"))
    deleted.unlink()
    engine.sync(full=True)
    while engine.fill(FILL_TURN):
        pass
    assert engine.unembedded == 0
    assert embedded_paths(unindexed) == NOTES - 1
    hits = engine.recall("now listens on port 9999", 1)
    assert hits[0].note.path == pending[5]


@pytest.mark.parametrize("seed", range(12))
def test_a_fill_stopped_mid_way_keeps_every_chunk_it_wrote(unindexed, monkeypatch, seed):
    """A process stopped while embedding (a hook over its budget, Ctrl-C) at a random point:
    the next one runs the model only on the texts not written yet, and ends where an
    uninterrupted fill does."""
    monkeypatch.setattr(vectors_module, "FILL_CHUNK", 32)
    engine = RecallEngine(unindexed)
    engine._load_model()
    stop_after = random.Random(seed).randrange(1, NOTES)
    real_embed, seen = engine.embedder.embed, []

    def embed_then_stop(texts, kind="passage"):
        if len(seen) + len(texts) > stop_after:
            raise KeyboardInterrupt
        seen.extend(texts)
        return real_embed(texts, kind)

    monkeypatch.setattr(engine.embedder, "embed", embed_then_stop)
    with pytest.raises(KeyboardInterrupt):
        engine.sync()
    kept = len(seen) - len(seen) % 32  # whole chunks only
    assert embedded_paths(unindexed) == 0  # notes get their rows at the end...
    monkeypatch.setattr(engine.embedder, "embed", real_embed)
    again = RecallEngine(Vault(unindexed.root))
    assert again.sync()["embedded"] == NOTES - kept  # ... but no text written is embedded again
    assert embedded_paths(unindexed) == NOTES


@pytest.mark.parametrize("seed", range(6))
def test_a_bm25_build_stopped_mid_way_keeps_its_commits(unindexed, monkeypatch, seed):
    from vaultmem.search import bm25

    commits, fail_at = [], random.Random(seed).randrange(1, NOTES // 50)
    real_update = bm25.Bm25Index.update

    def update(self, write, removed, **options):
        if len(commits) == fail_at:
            raise KeyboardInterrupt
        commits.append(len(write))
        return real_update(self, write, removed, **options)

    monkeypatch.setattr(bm25.Bm25Index, "update", update)
    with pytest.raises(KeyboardInterrupt):
        RecallEngine(unindexed, use_embeddings=False, commit_every=50).sync()
    assert len(Vault(unindexed.root).catalog().pending_index()[0]) == NOTES - 50 * fail_at
    monkeypatch.setattr(bm25.Bm25Index, "update", real_update)
    assert RecallEngine(Vault(unindexed.root), use_embeddings=False).sync()["indexed"] == NOTES - 50 * fail_at
    assert ranked(unindexed) == ranked(unindexed)  # stable, and every note is found by its words:
    assert [h.note.text for h in RecallEngine(Vault(unindexed.root)).recall("node-299", 1)] == [
        "Service node-299 listens on port 8299 in staging"]


def test_the_watcher_answers_while_it_embeds_and_ends_with_every_note_embedded(unindexed, monkeypatch):
    """Recall requests at random moments of the watcher's first fill: each is answered from the
    notes' words and the vectors made so far, while notes are still waiting for the model."""
    engine = RecallEngine(unindexed, embed_limit=FILL_TURN)
    engine._load_model()
    real_embed = engine.embedder.embed

    def slow_embed(texts, kind="passage"):
        time.sleep(0.002 * len(texts))  # a model's pace, so requests land mid-fill
        return real_embed(texts, kind)

    monkeypatch.setattr(engine.embedder, "embed", slow_embed)
    handle, stop = request_handler(engine), threading.Event()
    watcher = threading.Thread(target=run_watcher, args=(engine, stop), daemon=True)
    watcher.start()
    rng, answers = random.Random(7), []
    try:
        while len(answers) < 40:
            answer = handle({"op": "recall", "query": f"node-{rng.randrange(NOTES)} port", "top_k": 3})
            answers.append(answer)
            if not answer["unembedded"]:
                break
            time.sleep(rng.uniform(0, 0.05))
        deadline = time.monotonic() + 60
        while engine.unembedded and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        watcher.join(timeout=20)
    waiting = [a["unembedded"] for a in answers]
    assert all(a["ok"] and a["hits"] for a in answers)
    assert waiting[0] > 0 and waiting == sorted(waiting, reverse=True)  # answered mid-fill, and it moved on
    assert engine.unembedded == 0 and embedded_paths(unindexed) == NOTES


def test_a_prompt_without_a_watcher_is_answered_and_embeds_a_few_more_notes(unindexed, monkeypatch):
    monkeypatch.setattr(claude_code, "HOOK_EMBED_TEXTS", 16)
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "which port does node-42 listen on",
                          "session_id": "s1"})
    counts = []
    for _ in range(3):
        text, code = claude_code.run_hook("user-prompt-submit", payload, vault_path=str(unindexed.root))
        assert code == 0 and "Service node-42 listens on port 8042" in text
        counts.append(embedded_paths(unindexed))
    assert counts == [16, 32, 48]


def test_a_recall_that_embeds_many_notes_says_so_once_and_reindex_again(unindexed, run, monkeypatch):
    from vaultmem.cli import output

    monkeypatch.setattr(output, "PROGRESS_FROM", 100)
    first = run("recall", "node-17 port")
    assert f"vaultmem: embedding {NOTES} notes once" in first.stderr and "node-17" in first.stdout
    assert "embedding" not in run("recall", "node-18 port").stderr  # embedded already: nothing to say
    assert f"embedding {NOTES} notes once" in run("reindex").stderr
    assert "embedding" not in run("-q", "reindex").stderr
    monkeypatch.setattr(output, "PROGRESS_FROM", NOTES + 1)
    assert "embedding" not in run("reindex").stderr  # a few seconds of work: no line


def test_on_a_terminal_the_progress_counts_up_in_place_and_ends_the_line():
    class Terminal:
        def __init__(self):
            self.text = ""

        def isatty(self):
            return True

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    from vaultmem.cli.output import embedding_progress

    terminal = Terminal()
    progress = embedding_progress(terminal)
    for done in (0, 256, 512, 600):
        progress(done, 600)
    assert terminal.text.count("\n") == 1 and terminal.text.endswith("embedding notes: 600 of 600\n")
    assert "\rvaultmem: embedding notes: 256 of 600" in terminal.text


def test_a_fill_runs_the_model_without_the_engines_lock_and_keeps_an_edit_made_meanwhile(unindexed, monkeypatch):
    """A recall and an edit while a fill's texts are in the model are served at once; the
    edited note ends with the vector of its new text, not the one the fill computed."""
    engine = RecallEngine(unindexed, embed_limit=16)
    engine.recall("node-17 port", 3)
    real_embed = engine.embedder.embed
    in_model, release = threading.Event(), threading.Event()

    def slow_first_fill(texts, kind="passage"):
        if kind == "passage" and not in_model.is_set():
            in_model.set()
            assert release.wait(10)
        return real_embed(texts, kind)

    monkeypatch.setattr(engine.embedder, "embed", slow_first_fill)
    filling = threading.Thread(target=engine.fill, args=(FILL_TURN,))
    filling.start()
    assert in_model.wait(10)
    edited = unindexed.root / next(iter(engine._unembedded))  # the first note the fill took
    edited.write_text(edited.read_text().replace("in staging", "in production, moved in May"))
    answered = []
    other = threading.Thread(target=lambda: answered.append((engine.apply([str(edited.relative_to(unindexed.root))]),
                                                             engine.recall("node-17 port", 3))))
    other.start()
    other.join(5)
    assert answered and answered[0][1], "the edit and the recall waited for the fill's model run"
    release.set()
    filling.join(10)
    assert engine.unembedded == NOTES - 16 - FILL_TURN
    rows = engine.vectors.rows_of_paths([str(edited.relative_to(unindexed.root))])
    current = Vault(unindexed.root).catalog().hashes_of([str(edited.relative_to(unindexed.root))])
    assert [digest for _row, digest in rows.values()] == list(current.values())


def test_an_adds_check_during_a_fill_finds_a_duplicate_among_the_notes_still_waiting(unindexed):
    """The watcher's `similar` (what an add through it asks) while most notes lack a vector:
    a note still waiting is found by its words, embedded for the check, and given its cosine."""
    engine = RecallEngine(unindexed, embed_limit=FILL_TURN)
    engine.sync()
    handle = request_handler(engine)
    waiting = [unindexed.root / path for path in list(engine._unembedded)[-5:]]  # the last the fill would reach
    for path in waiting:
        note = Vault(unindexed.root).catalog().at([str(path.relative_to(unindexed.root))])
        text = next(iter(note.values())).text
        answer = handle({"op": "similar", "text": text, "namespace": "infra", "kind": "memory", "limit": 8})
        found = dict(answer["similar"])
        assert found.get(next(iter(note.values())).id, 0) > 0.99, (text, found)
    assert engine.unembedded == NOTES - FILL_TURN  # the check embedded them for itself, not for the fill


def test_a_fill_that_fails_is_logged_once_and_retried_later_not_in_a_loop():
    from vaultmem.service.backfill import BackgroundFill

    class FailingModel:
        unembedded = 5

        def fill(self, limit):
            raise RuntimeError("the model file is damaged")

    logged = []
    fill = BackgroundFill(FailingModel(), log=logged.append)
    try:
        for _ in range(20):  # the watcher asks every IDLE_POLL while notes wait
            fill.request()
            time.sleep(0.025)
    finally:
        fill.stop(timeout=0.1)
    assert logged == ["vaultmem watch: could not fill the notes' vectors: the model file is damaged"]
