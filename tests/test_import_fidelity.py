"""Moving in without losing state: FSRS cards, review histories, original ids, supersede
chains, strengths and statuses, with the report saying what became of each field.

agentmemory-sr is not on the package index: its store is built here from its
documented schema (src/agentmemory_sr/db.py, schema version 1), its cards computed
with the same `fsrs` package it schedules with. The skillmem store under
tests/fixtures/import/skillmem-real/ was made by the real skillmem 0.13.0 (make.sh).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import fsrs
import pytest

from vaultmem.vault import Vault

from .test_import_export import AGENTMEMORY_SR_SCHEMA

FIXTURES = Path(__file__).parent / "fixtures" / "import"
# The clock of the tests is 2026-01-05T09:00:00 (conftest.T0): these grades happened before it.
GRADED = [datetime(2025, 12, 1, 10, tzinfo=timezone.utc), datetime(2025, 12, 2, 11, tzinfo=timezone.utc),
          datetime(2025, 12, 12, 9, tzinfo=timezone.utc)]


def _reviewed_card(times, rating=fsrs.Rating.Good):
    """A card as agentmemory-sr's scheduler leaves it after grades at `times` (fsrs, no fuzzing)."""
    scheduler = fsrs.Scheduler(enable_fuzzing=False)
    card, logs = fsrs.Card(), []
    for when in times:
        before = (card.state, card.stability, card.difficulty)
        card, _log = scheduler.review_card(card, rating, review_datetime=when)
        logs.append((when, before, (card.state, card.stability, card.difficulty)))
    return card, logs


def agentmemory_sr_store(path: Path) -> Path:
    """A store as agentmemory-sr writes it: a graduated memory with its review log, a leech,
    a memory demoted as superseded by a newer one, and a new one."""
    names = {1: "learning", 2: "review", 3: "relearning"}
    db = sqlite3.connect(path)
    db.executescript(AGENTMEMORY_SR_SCHEMA)
    card, logs = _reviewed_card(GRADED)

    def insert(memory_id, content, namespace, created, state, card=None, lapses=0, reps=0, due=None):
        db.execute(
            "INSERT INTO memories (id, content, namespace, created_at, updated_at, stability, difficulty, due, "
            "last_review, state, step, lapses, reps, usage_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (memory_id, content, namespace, created, created, card and card.stability, card and card.difficulty,
             due or (card.due.isoformat() if card else created), card and card.last_review.isoformat(), state,
             card.step if card else 0, lapses, reps, reps))

    insert("9f2c4e1a7b3d", "Deploys to production need two approvals", "process", "2025-11-30T08:00:00+00:00",
           names[int(card.state)], card, reps=3)
    for when, before, after in logs:
        db.execute("INSERT INTO review_log (memory_id, grade, stability_before, stability_after, difficulty_before, "
                   "difficulty_after, state_before, state_after, reviewed_at) VALUES (?, 'good', ?, ?, ?, ?, ?, ?, ?)",
                   ("9f2c4e1a7b3d", before[1], after[1], before[2], after[2],
                    names.get(int(before[0]), "new") if before[1] else "new", names[int(after[0])], when.isoformat()))
        db.execute("INSERT INTO grade_history (memory_id, grade, graded_at, context) VALUES (?, 'good', ?, ?)",
                   ("9f2c4e1a7b3d", when.isoformat(), "used in the release checklist"))
    leech, _ = _reviewed_card(GRADED[:2])
    insert("0a1b2c3d4e5f", "The build cache lives on /mnt/cache", "infra", "2025-11-01T08:00:00+00:00",
           "suspended", leech, lapses=8, reps=12)
    old, _ = _reviewed_card(GRADED[:2])
    insert("5e6f7a8b9c0d", "The API gateway is Kong", "infra", "2025-10-01T08:00:00+00:00", "relearning", old, reps=3)
    db.execute("INSERT INTO grade_history (memory_id, grade, graded_at, context) VALUES (?, 'again', ?, ?)",
               ("5e6f7a8b9c0d", "2025-12-20T08:00:00+00:00", "superseded by new memory: 6f7a8b9c0d1e"))
    insert("6f7a8b9c0d1e", "The API gateway is Envoy since December", "infra", "2025-12-20T08:00:00+00:00", "new")
    db.commit()
    db.close()
    return path


def frontmatter(vault_dir: Path, rel: str) -> dict:
    import yaml

    return yaml.safe_load((vault_dir / rel).read_text().split("---\n")[1])


def test_agentmemory_sr_moves_in_with_its_cards_history_ids_and_chains(vault_dir, run, tmp_path):
    store = agentmemory_sr_store(tmp_path / "memory.db")
    report = run.json("import", str(store))
    assert report["counts"]["added"] == 4 and report["counts"]["errors"] == 0
    assert report["reviews"] == 4 and report["chains"] == 1
    assert report["fields"]["review_log"].startswith("kept") and report["fields"]["fsrs_card_id"].startswith("dropped")

    # The card as agentmemory-sr left it: same stability, difficulty, due, reps, last review.
    card, _ = _reviewed_card(GRADED)
    note = run.json("show", "9f2c4e1a7b3d")
    assert note["text"] == "Deploys to production need two approvals"
    assert note["state"] == "review" and note["reps"] == 3 and note["lapses"] == 0
    assert note["stability"] == pytest.approx(card.stability, abs=1e-4)
    assert note["difficulty"] == pytest.approx(card.difficulty, abs=1e-4)
    assert note["due"] == card.due.replace(tzinfo=None).isoformat(timespec="seconds")
    assert note["last_review"] == "2025-12-12T09:00:00"
    assert note["strength"] == pytest.approx(0.5 + 3 * 0.15), "earned as vaultmem would have from three good grades"
    assert frontmatter(vault_dir, note["path"])["original_id"] == "9f2c4e1a7b3d"
    assert note["id"] != "9f2c4e1a7b3d", "a vaultmem id of its own; the old one still resolves"
    assert run.json("show", note["id"])["path"] == note["path"]

    # Its schedule is kept: due after the pinned clock, so not in review; a grade goes on from the card.
    assert note["id"] not in {n["id"] for n in run.json("review")}
    graded = run.json("grade", "9f2c4e1a7b3d", "good", now=note["due"])
    assert graded["reps"] == 4 and graded["stability"] > note["stability"]

    # The review history, with its original times, before the new grade.
    lines = [json.loads(line) for line in (vault_dir / ".vaultmem" / "reviews.jsonl").read_text().splitlines()]
    mine = [line for line in lines if line["id"] == note["id"]]
    assert [line["review_datetime"] for line in mine[:3]] == [t.isoformat() for t in GRADED]
    assert {line["comment"] for line in mine[:3]} == {"used in the release checklist"}
    assert all("9f2c4e1a7b3d" in line["imported_from"] for line in mine[:3])
    assert mine[3]["rating"] == "good" and "imported_from" not in mine[3]

    # A leech stays suspended; the demoted memory is superseded by the newer one.
    leech = run.json("show", "0a1b2c3d4e5f")
    assert leech["status"] == "suspended" and leech["lapses"] == 8
    old, new = run.json("show", "5e6f7a8b9c0d"), run.json("show", "6f7a8b9c0d1e")
    assert old["status"] == "superseded" and old["superseded_by"] == f"[[{Path(new['path']).stem}]]"
    assert new["supersedes"] == f"[[{Path(old['path']).stem}]]" and new["status"] == "active"
    assert [h["id"] for h in run.json("recall", "API gateway")] == [new["id"]]

    checked = run.json("verify")
    assert checked["breaks"] == [] and checked["tampering"] == [], "imported history does not look like tampering"


def test_a_second_import_of_the_same_store_changes_nothing(vault_dir, run, tmp_path):
    store = agentmemory_sr_store(tmp_path / "memory.db")
    run.json("import", str(store))
    before = {p: p.read_bytes() for p in vault_dir.rglob("*") if p.is_file() and ".vaultmem" not in p.parts}
    reviews = (vault_dir / ".vaultmem" / "reviews.jsonl").read_text()
    again = run.json("import", str(store), now="2026-01-06T10:00:00")
    assert again["counts"]["added"] == 0 and again["reviews"] == 0
    assert {p: p.read_bytes() for p in before} == before
    assert (vault_dir / ".vaultmem" / "reviews.jsonl").read_text() == reviews


def test_an_unknown_old_id_is_still_not_found(run, tmp_path):
    run.json("import", str(agentmemory_sr_store(tmp_path / "memory.db")))
    result = run("show", "ffffffffffff", expect=1)
    assert "no note with id 'ffffffffffff'" in result.output


@pytest.mark.parametrize("source", ["memory.db", "export"], ids=["database", "export-all"])
def test_a_store_made_by_the_real_skillmem(vault_dir, run, source):
    report = run.json("import", str(FIXTURES / "skillmem-real" / source))
    assert report["format"] == "skillmem" and report["counts"]["errors"] == 0
    assert report["fields"]["strength"].startswith("mapped")
    skill = run.json("show", "deploy-rollback")
    assert skill["type"] == "skill" and skill["namespace"] == "webapp"
    assert skill["strength"] == pytest.approx(0.65), "skillmem's 1.30 after two confirmations, halved"
    archived = run.json("show", "old-port")
    assert archived["status"] == "archived" and archived["path"].startswith("archive/")
    assert run.json("show", "staging-db")["text"].endswith("Staging runs Postgres 16 on port 5433")
    if source == "memory.db":
        assert any("deleted" in s["reason"] for s in report["skipped"])
    assert "scratch" not in {frontmatter(vault_dir, n["path"]).get("original_id") for n in run.json("list", "--all")}


def test_agent_brain_superseded_facts_come_back_superseded(vault_dir, run):
    report = run.json("import", str(FIXTURES / "agent-brain" / "superseded.json"))
    assert report["counts"]["added"] == 4 and report["chains"] == 2
    first, second, third = (run.json("show", i) for i in ("f1", "f2", "f3"))
    assert first["status"] == second["status"] == "superseded" and third["status"] == "active"
    assert first["superseded_by"] == f"[[{Path(second['path']).stem}]]"
    assert second["superseded_by"] == f"[[{Path(third['path']).stem}]]"
    orphan = run.json("show", "f9")
    assert orphan["status"] == "superseded", "corrected in the source, even when the correction is not in the file"
    assert [h["id"] for h in run.json("recall", "standup time")] == [third["id"]]
    assert Vault(vault_dir).get("f3").id == third["id"]
    assert run.json("why", "f1")["id"] == first["id"], "why resolves an old id too"


def test_import_sources_are_relative_to_home(run, tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".agentmemory").mkdir(parents=True)
    store = agentmemory_sr_store(home / ".agentmemory" / "memory.db")
    monkeypatch.setenv("HOME", str(home))
    run.json("import", str(store))
    assert run.json("show", "9f2c4e1a7b3d")["source"] == "~/.agentmemory/memory.db#9f2c4e1a7b3d"


def test_agent_memory_items_keep_their_history(run):
    """agent-memory (Martian-Engineering): memory/entities/<name>/items.json, a fact marked `historical`
    when a newer one `supersedes` it (fixture from its README's documented schema)."""
    report = run.json("import", str(FIXTURES / "agent-memory" / "items.json"), "-n", "people/alice")
    assert report["counts"]["added"] == 2 and report["chains"] == 1
    old = run.json("show", "7c1e2a9b-1111-4a2b-9c3d-000000000001")
    new = run.json("show", "7c1e2a9b-1111-4a2b-9c3d-000000000002")
    assert old["status"] == "superseded" and old["superseded_by"] == f"[[{Path(new['path']).stem}]]"
    assert new["status"] == "active" and new["created"] == "2026-01-28T23:00:00"
