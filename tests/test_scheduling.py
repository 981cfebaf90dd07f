"""FSRS transitions against the `fsrs` package, strength, leeches, review order."""

from __future__ import annotations

from datetime import timedelta

import fsrs
import pytest

from vaultmem.clock import format_datetime, parse_datetime

from .conftest import T0


def test_grades_follow_the_fsrs_package_exactly(run):
    note = run.json("add", "The API rate limit is 600 requests per minute", "-n", "work")
    scheduler = fsrs.Scheduler(enable_fuzzing=False, desired_retention=0.9)
    card = fsrs.Card(card_id=1, due=parse_datetime(T0))
    when = parse_datetime(T0)
    for rating, gap in [("good", 0), ("good", 0.01), ("good", 3), ("again", 20), ("good", 0.01), ("easy", 9)]:
        when = when + timedelta(days=gap)
        now = format_datetime(when)
        graded = run.json("grade", note["id"], rating, now=now)
        card, _ = scheduler.review_card(card, fsrs.Rating[rating.capitalize()],
                                        review_datetime=when.replace(microsecond=0))
        assert graded["state"] == {1: "learning", 2: "review", 3: "relearning"}[int(card.state)]
        assert graded["stability"] == pytest.approx(card.stability, abs=1e-3)
        assert graded["difficulty"] == pytest.approx(card.difficulty, abs=1e-3)
        assert graded["due"] == format_datetime(card.due)
        # Stored rounding must not drift from the package: continue from what the file says.
        card.stability, card.difficulty = graded["stability"], graded["difficulty"]
    assert graded["reps"] == 6 and graded["lapses"] == 1


def test_review_log_records_every_grade(run, vault_dir):
    import json

    note = run.json("add", "Use uv for Python installs", "-n", "tools")
    run("grade", note["id"], "good", "-c", "it worked")
    run("grade", note["id"], "hard", now="2026-01-06T10:00:00")
    lines = [json.loads(line) for line in (vault_dir / ".vaultmem" / "reviews.jsonl").read_text().splitlines()]
    assert [(entry["id"], entry["rating"], entry["comment"]) for entry in lines] == [(note["id"], "good", "it worked"),
                                                                                    (note["id"], "hard", None)]
    assert lines[1]["elapsed_days"] == pytest.approx(1 + 1 / 24, abs=1e-3)
    assert lines[1]["stability_before"] == lines[0]["stability"]


def test_strength_rises_with_good_grades_and_caps_at_one(run):
    note = run.json("add", "Prefer small pull requests", "-n", "team")
    assert note["strength"] == 0.5
    strengths = [run.json("grade", note["id"], "good")["strength"] for _ in range(5)]
    assert strengths == [0.65, 0.8, 0.95, 1.0, 1.0]
    assert run.json("grade", note["id"], "again")["strength"] == 0.85, "wrong: it weakens"


@pytest.mark.real_model
def test_a_memory_wrong_at_every_grade_weakens_and_ranks_below_a_right_one(run):
    """Graded `again` every time it stays in learning (FSRS counts no lapse before a memory
    graduates), so it is never suspended; it kept strength 0.5 and ranked level with a memory
    that helped every time. Each `again` takes what a `good` gives, down to the floor."""
    wrong = run.json("add", "The staging bastion is bastion-2.internal", "-n", "ops")
    right = run.json("add", "The prod bastion is bastion-9.internal", "-n", "ops")
    for day in range(1, 30, 2):
        run("grade", wrong["id"], "again", now=f"2026-01-{day:02d}T09:00:00")
        run("grade", right["id"], "good", now=f"2026-01-{day:02d}T09:00:00")
    assert run.json("show", wrong["id"])["strength"] == 0.05 and run.json("show", right["id"])["strength"] == 1.0
    hits = run.json("recall", "which bastion host", "--min-score", "0", now="2026-01-30T09:00:00")
    order = [h["id"] for h in hits]
    assert order.index(right["id"]) < order.index(wrong["id"])


def test_leech_is_suspended_after_eight_lapses_and_left_out_of_recall(run):
    note = run.json("add", "The office door code is 4711", "-n", "office")
    when = parse_datetime(T0)
    # Graduate to review, then lapse repeatedly.
    lapses = 0
    for _ in range(40):
        graded = run.json("grade", note["id"], "good", now=format_datetime(when))
        when += timedelta(days=max(1, (parse_datetime(graded["due"]) - when).days + 1))
        if graded["state"] == "review":
            graded = run.json("grade", note["id"], "again", now=format_datetime(when))
            lapses += 1
            when += timedelta(days=1)
        if graded["status"] == "suspended":
            break
    assert lapses == 8 and graded["lapses"] == 8 and graded["status"] == "suspended"
    assert run.json("recall", "office door code") == []
    assert run.json("recall", "office door code", "--all")[0]["id"] == note["id"]
    assert note["id"] not in [n["id"] for n in run.json("prompt")["memories"]]
    assert run.json("health")["leeches"] == [note["id"]]
    before = run.json("show", note["id"])
    refused = run("grade", note["id"], "good", expect=2).output
    assert f"{note['id']} is suspended" in refused and f"vaultmem restore {note['id']}" in refused
    run("grade-batch", f"{note['id']}:good", expect=2)
    assert run.json("show", note["id"]) == before, "a refused grade writes nothing"
    restored = run.json("restore", note["id"])
    assert restored["status"] == "active"
    # A second chance: grades that recall it keep it in use (the next grade re-suspended it before),
    # and health no longer names it; its next lapse suspends it again.
    graded = run.json("grade", note["id"], "good", now=format_datetime(when))
    assert graded["reps"] == before["reps"] + 1 and graded["status"] == "active"
    assert run.json("health")["leeches"] == []
    assert run.json("recall", "office door code")[0]["id"] == note["id"]
    for _ in range(20):
        when += timedelta(days=max(1, (parse_datetime(graded["due"]) - when).days + 1))
        graded = run.json("grade", note["id"], "again" if graded["state"] == "review" else "good",
                          now=format_datetime(when))
        if graded["lapses"] > 8:
            break
    assert graded["lapses"] == 9 and graded["status"] == "suspended"


def test_review_lists_due_notes_most_at_risk_first(run):
    a = run.json("add", "Alpha fact", "-n", "x")
    b = run.json("add", "Beta fact", "-n", "x")
    c = run.json("add", "Gamma fact", "-n", "x")
    for note in (a, b):
        for _ in range(3):
            run("grade", note["id"], "good")
    # b was graded easy once more, so it is more stable than a.
    run("grade", b["id"], "easy")
    later = format_datetime(parse_datetime(T0) + timedelta(days=120))
    due = [n["id"] for n in run.json("review", now=later)]
    assert due == [c["id"], a["id"], b["id"]]  # never confirmed, then lowest retrievability
    assert [n["id"] for n in run.json("review", now=T0)] == [c["id"]]  # the others are scheduled later


def test_bad_rating_and_unknown_id_exit_codes(run):
    note = run.json("add", "Some fact", "-n", "x")
    bad = run("grade", note["id"], "perfect", expect=2)
    assert bad.stderr.strip().count("\n") == 0 and "again, hard, good, easy" in bad.stderr
    missing = run("grade", "nosuchid", "good", expect=1)
    assert "nosuchid" in missing.stderr and "vaultmem list" in missing.stderr


def test_grade_batch_is_all_or_nothing(run):
    a = run.json("add", "First", "-n", "x")
    b = run.json("add", "Second", "-n", "x")
    run("grade-batch", f"{a['id']}:good", f"{b['id']}:terrible", expect=2)
    run("grade-batch", f"{a['id']}:good", "nosuch:good", expect=1)
    extra = run("grade-batch", f"{a['id']}:good", f"{b['id']}:good:extra", expect=2)
    assert "is not ID:RATING" in extra.stderr  # not "no note with id ...:good"
    assert run.json("show", a["id"])["reps"] == 0
    graded = run.json("grade-batch", f"{a['id']}:good", f"{b['id']}:again")
    assert [(g["id"], g["reps"]) for g in graded] == [(a["id"], 1), (b["id"], 1)]


def test_retrievability_is_computed_not_stored(run, vault_dir):
    note = run.json("add", "Computed at query time", "-n", "x")
    for _ in range(3):
        run("grade", note["id"], "good")
    soon = run.json("show", note["id"], now="2026-01-06T09:00:00")["retrievability"]
    later = run.json("show", note["id"], now="2026-03-06T09:00:00")["retrievability"]
    assert 0 < later < soon <= 1
    assert "retrievability" not in (vault_dir / note["path"]).read_text()


@pytest.mark.parametrize("seed", range(40))
def test_idle_decay_run_at_any_days_gives_the_same_strength_and_anchor_as_one_run(seed):
    """The README's promise: decay daily or once a month gives the same result, to the digit
    a note stores (each run's strength is stored rounded, so the steps must round the same way)."""
    import random
    from dataclasses import replace

    from vaultmem.config import Config
    from vaultmem.core.model import Note
    from vaultmem.core.schedule import idle_decay

    rng = random.Random(seed)
    config = Config()
    start = parse_datetime(T0)
    note = Note(id="n", type="memory", namespace="x", tags=(), status="active", tier="L1",
                strength=round(rng.uniform(0.3, 1.0), 4), state="new", step=None, stability=None,
                difficulty=None, due=start, last_review=None, reps=0, lapses=0, created=start, updated=start,
                decayed=None, source="", body="A fact\n")
    end = rng.randint(20, 120)  # (short of the floor, where every path ends alike)
    once = idle_decay(note, start + timedelta(days=end), config)
    stepped, day = note, 0
    while day < end:
        day = min(end, day + rng.randint(1, 10))
        strength, decayed = idle_decay(stepped, start + timedelta(days=day), config)
        stepped = replace(stepped, strength=strength, decayed=decayed)
    assert (stepped.strength, stepped.decayed) == once
