"""Idle decay, active -> stale -> archived, archive and restore by hand."""

from __future__ import annotations

import json
from datetime import timedelta

from vaultmem.clock import format_datetime, parse_datetime

from .conftest import T0


def days_after(days: float) -> str:
    return format_datetime(parse_datetime(T0) + timedelta(days=days))


def test_idle_decay_is_the_same_whether_run_daily_or_once(run, tmp_path):
    from vaultmem.vault import init_vault

    from .conftest import Cli

    other = tmp_path / "other"
    init_vault(other)
    run_other = Cli(other)
    a = run.json("add", "Decays daily", "-n", "x")
    b = run_other.json("add", "Decays once", "-n", "x")
    for day in range(1, 50):
        run("decay", now=days_after(day))
    run_other("decay", now=days_after(49))
    strength_a = run.json("show", a["id"], now=days_after(49))["strength"]
    strength_b = run_other.json("show", b["id"], now=days_after(49))["strength"]
    # To the digit: each period is rounded as a run stores it (the power at once differed from the
    # daily steps in the last digit, a git diff for nothing).
    assert strength_a == strength_b and abs(strength_a - 0.5 * 0.85**7) < 3e-4


def test_untouched_memory_goes_stale_then_archived_then_restored(run, vault_dir):
    note = run.json("add", "The old build server is jenkins-01", "-n", "infra", "--tags", "ci")
    path = vault_dir / note["path"]
    original_body = path.read_text().split("---\n", 2)[2]

    preview = run.json("decay", "--dry-run", now=days_after(31))
    assert [c["id"] for c in preview["changes"]] == [note["id"]]
    assert run.json("show", note["id"])["status"] == "active", "dry run writes nothing"

    run("decay", now=days_after(31))
    assert run.json("show", note["id"])["status"] == "stale"
    assert run.json("recall", "build server")[0]["id"] == note["id"], "stale notes are still recalled"

    # Strength reaches the floor after 15 idle weeks; 90 days later it is archived.
    run("decay", now=days_after(7 * 15))
    assert run.json("show", note["id"])["strength"] == 0.05
    run("decay", now=days_after(7 * 15 + 89))
    assert path.exists()
    result = run.json("decay", now=days_after(7 * 15 + 91))
    assert result["changes"][0]["archive"] is True
    archived = vault_dir / "archive" / note["path"]
    assert not path.exists() and archived.exists()
    assert archived.read_text().split("---\n", 2)[2] == original_body
    assert run.json("recall", "build server") == []
    assert run.json("recall", "build server", "--all")[0]["status"] == "archived"

    log = [json.loads(line) for line in (vault_dir / ".vaultmem" / "archive.jsonl").read_text().splitlines()]
    assert log[-1]["id"] == note["id"] and log[-1]["reason"] == "decay" and "jenkins-01" in log[-1]["text"]

    restored = run.json("restore", note["id"], now=days_after(200))
    assert restored["status"] == "active" and restored["path"] == note["path"]
    assert path.exists() and not archived.exists()
    assert path.read_text().split("---\n", 2)[2] == original_body
    # A restored memory is not archived again by the very next decay.
    run("decay", now=days_after(201))
    assert path.exists()


def test_grading_a_stale_memory_makes_it_active(run):
    note = run.json("add", "Stale but useful", "-n", "x")
    run("decay", now=days_after(40))
    assert run.json("show", note["id"])["status"] == "stale"
    assert run.json("grade", note["id"], "good", now=days_after(41))["status"] == "active"


def test_decay_days_option_overrides_the_stale_threshold(run):
    note = run.json("add", "Short-lived", "-n", "x")
    with_days = run.json("decay", "--days", "10", "--dry-run", now=days_after(11))["changes"]
    assert with_days[0]["id"] == note["id"] and with_days[0]["changes"]["status"] == "stale"
    default = run.json("decay", "--dry-run", now=days_after(11))["changes"]
    assert "status" not in default[0]["changes"] and default[0]["changes"]["decayed"] == days_after(7)


def test_archive_and_restore_by_hand_keep_the_file_exactly(run, vault_dir):
    note = run.json("add", "Archive me by hand", "-n", "misc")
    path = vault_dir / note["path"]
    path.write_text(path.read_text() + "\nA person's extra line.\n")
    before = path.read_text()
    archived = run.json("archive", note["id"])
    assert archived["path"] == "archive/" + note["path"] and archived["status"] == "archived"
    run("archive", note["id"], expect=2)
    run("grade", note["id"], "good", expect=2)
    run("restore", note["id"])
    after = path.read_text()
    changed = [line for line in after.splitlines() if line not in before.splitlines()]
    assert all(line.startswith(("status:", "updated:", "decayed:")) for line in changed)
    assert after.endswith("\nA person's extra line.\n")
    run("restore", note["id"], expect=2)


def test_a_corrected_memory_archived_and_restored_stays_superseded(run, vault_dir):
    """Restoring puts a note back as it was: the wrong fact a correction superseded must not
    come back active, nor rank in recall beside (or above) its correction."""
    old = run.json("add", "Staging runs Postgres 16", "-n", "work")
    new = run.json("correct", old["id"], "Staging runs Postgres 17", "--reason", "upgraded")
    new_id = new.get("id") or new["new"]["id"]
    run("archive", old["id"])
    restored = run.json("restore", old["id"])
    assert restored["status"] == "superseded" and restored["path"] == old["path"]
    text = (vault_dir / old["path"]).read_text()
    assert "status: superseded" in text and "superseded_by:" in text
    hits = [hit["id"] for hit in run.json("recall", "which postgres runs on staging")]
    assert new_id in hits and old["id"] not in hits
    assert old["id"] in [hit["id"] for hit in run.json("recall", "which postgres runs on staging", "--all")]


def test_a_note_moved_into_archive_by_hand_is_settled_by_either_command_health_suggests(run, vault_dir):
    """health names an active note a person moved into archive/ and offers `restore` or `archive`:
    each must work (archive used to answer "already archived" and change nothing)."""
    for command, status, folder in (("archive", "archived", "archive/"), ("restore", "active", "memories/")):
        note = run.json("add", f"Fire drill {command} test is on Thursday", "-n", "office")
        moved = vault_dir / "archive" / note["path"]
        moved.parent.mkdir(parents=True, exist_ok=True)
        (vault_dir / note["path"]).rename(moved)
        problems = run.json("health")["problems"]
        assert any(f"vaultmem {command} {note['id']}" in p["problem"] for p in problems)
        settled = run.json(command, note["id"])
        assert settled["status"] == status and settled["path"].startswith(folder)
        assert not any(note["id"] in p["problem"] for p in run.json("health")["problems"])


def test_health_names_a_supersede_link_a_hand_rename_broke_and_a_linked_folder(run, vault_dir, tmp_path):
    """Two things a person can do by hand that vaultmem cannot follow: rename the newer note of a
    correction (its old note's link then names nothing) and link a folder into memories/ (its
    notes are not seen). health names both instead of saying all is well."""
    old = run.json("add", "The API rate limit is 100 requests per minute", "-n", "w")
    new = run.json("correct", old["id"], "The API rate limit is 200 requests per minute")
    new_path = vault_dir / (new.get("path") or new["new"]["path"])
    assert not run.json("health")["problems"]
    new_path.rename(new_path.with_name("rate-limit.md"))
    outside = tmp_path / "elsewhere"
    (outside / "x").mkdir(parents=True)
    (vault_dir / "memories" / "linked").symlink_to(outside)
    (outside / "kept.md").write_text("A note kept outside the vault\n")
    (vault_dir / "memories" / "w" / "kept.md").symlink_to(outside / "kept.md")
    problems = {p["path"]: p["problem"] for p in run.json("health")["problems"]}
    assert "superseded_by links to" in problems[old["path"]] and "no note is named" in problems[old["path"]]
    assert "not seen" in problems["memories/linked"]
    assert "link to a file" in problems["memories/w/kept.md"]  # a linked note file, named too


def test_recall_all_labels_an_archived_or_suspended_hit_as_such(run):
    """`recall --all` brings back hidden notes: each says what it is, not "new"."""
    archived = run.json("add", "The old VPN gateway is vpn-01", "-n", "net")
    run("archive", archived["id"])
    hits = {h["id"]: h["label"] for h in run.json("recall", "old vpn gateway", "--all")}
    assert hits[archived["id"]] == "archived"
    assert run.json("recall", "old vpn gateway") == []


def test_obsidian_links_survive_archiving(run, vault_dir):
    """Obsidian resolves [[links]] by file name: names are unique vault-wide, archive included."""
    first = run.json("add", "Same title", "-n", "a")
    run("archive", first["id"])
    second = run.json("add", "Same title", "-n", "a")
    assert second["path"] != first["path"]
    stems = {p.stem for p in vault_dir.rglob("*.md") if "templates" not in p.parts and p.name != "README.md"}
    assert stems == {"same-title", "same-title-2"}


def test_backfilled_memory_keeps_its_date_but_does_not_start_out_decayed(run):
    note = run.json("add", "Imported from last year's notes", "-n", "x", "--created", "2025-01-01T00:00:00")
    assert note["created"] == "2025-01-01T00:00:00" and note["updated"] == T0
    assert run.json("decay", now=days_after(1))["changes"] == []
    assert run.json("decay", now=days_after(31))["changes"][0]["changes"]["status"] == "stale"


def test_staleness_is_scaled_by_use_as_agent_brain_does(run, vault_dir):
    """Stale after 30 days x (1 + uses) idle: a memory that helped three times has 120 days, not
    30, counted from its review date (it is not idle before FSRS wants it again)."""
    unused = run.json("add", "The lunch order goes out at eleven", "-n", "x")
    used = run.json("add", "Deploys go through the staging cluster first", "-n", "x")
    for day in (0, 1, 2):
        run("grade", used["id"], "good", now=days_after(day))
    due = parse_datetime(run.json("show", used["id"])["due"])
    days_to_due = (due - parse_datetime(days_after(0))).total_seconds() / 86400
    changed = {c["id"] for c in run.json("decay", now=days_after(2 + 31))["changes"] if c["changes"].get("status")}
    assert changed == {unused["id"]}
    assert run.json("show", used["id"], now=days_after(2 + 31))["status"] == "active"
    run("decay", now=days_after(days_to_due + 119))
    assert run.json("show", used["id"])["status"] == "active"
    run("decay", now=days_after(days_to_due + 121))
    assert run.json("show", used["id"])["status"] == "stale"

    (vault_dir / ".vaultmem" / "config.yaml").write_text("lifecycle:\n  stale_per_use: 0\n")
    fresh = run.json("add", "The printer is on floor two", "-n", "y", now=days_after(200))
    run("grade", fresh["id"], "good", now=days_after(200))
    due = parse_datetime(run.json("show", fresh["id"])["due"])
    run("decay", now=format_datetime(due + timedelta(days=31)))
    assert run.json("show", fresh["id"])["status"] == "stale", "stale_per_use: 0 is the flat rule"


def test_a_memory_that_helps_at_every_review_is_never_archived_before_it_is_due(run):
    """FSRS spaces a memory that keeps holding months apart. Idle decay counted from the last
    grade took its strength to the floor between reviews, and the memory that helped at every
    review was archived before it was next due (gone from review and recall). Not idle before
    its review date: it keeps its strength until then, and a memory nobody grades still fades."""
    kept = run.json("add", "The VPN gateway is vpn.acme.io", "-n", "work")
    unused = run.json("add", "The team lunch is on Thursdays", "-n", "work")
    for day in (0, 1, 8, 40, 158):
        run("grade", kept["id"], "good", now=days_after(day))
    after = run.json("show", kept["id"], now=days_after(158))
    due = parse_datetime(after["due"])
    assert (due - parse_datetime(days_after(158))).days > 200, "FSRS scheduled it far ahead"
    day_before_due = (due - parse_datetime(days_after(0))).days - 1
    run("decay", now=days_after(day_before_due))
    on_the_eve = run.json("show", kept["id"], now=days_after(day_before_due))
    assert on_the_eve["status"] == "active" and on_the_eve["strength"] == after["strength"]
    assert run.json("show", unused["id"])["status"] == "archived", "unused: faded, stale, archived"
    assert kept["id"] in {n["id"] for n in run.json("review", now=days_after(day_before_due + 2))}
    # Left unused after its review date, it fades like any other.
    run("decay", now=days_after(day_before_due + 1 + 7 * 20))
    assert run.json("show", kept["id"])["strength"] < after["strength"]


def test_a_superseded_memory_goes_to_the_archive_with_its_correction(run):
    """A correction nobody used fades and is archived; the memory it corrected stayed in
    memories/ (superseded notes never decay), and `recall --history` answered with the old fact
    alone. It goes to archive/ with its correction, and stays there when the correction is restored."""
    old = run.json("add", "Alice owns the payments service", "-n", "org")
    new = run.json("correct", old["id"], "Bob owns the payments service since March", now=days_after(1))
    run("decay", now=days_after(400))
    assert run.json("show", new["id"])["status"] == "archived"
    older = run.json("show", old["id"])
    assert older["status"] == "archived" and older["path"].startswith("archive/")
    assert run("recall", "who owns the payments service", "--history", "--json").stdout.strip() == "[]"
    assert {h["id"] for h in run.json("recall", "who owns the payments service", "--all")} >= {old["id"], new["id"]}
    run("restore", new["id"])
    assert run.json("show", new["id"])["status"] == "active" and run.json("show", old["id"])["status"] == "archived"
    run("restore", old["id"])
    assert run.json("show", old["id"])["status"] == "superseded", "restored as what it was: superseded"


def test_archiving_a_correction_by_hand_takes_the_memory_it_corrected_with_it(run):
    """As decay does: archived by hand, the correction left the wrong fact it replaced in
    memories/, and `recall --history` answered with the wrong fact alone."""
    old = run.json("add", "The API rate limit is 100 requests per minute", "-n", "api")
    new = run.json("correct", old["id"], "The API rate limit is 200 requests per minute")
    run("archive", new["id"])
    assert run.json("show", old["id"])["path"].startswith("archive/")
    assert run("recall", "API rate limit", "--history", "--json").stdout.strip() == "[]"


def test_an_edit_makes_a_stale_note_active_again_as_a_grade_does(run, vault_dir):
    """The lifecycle's rule (a grade or an edit makes a stale note active again) did not hold for
    an edit: MCP `update` of a stale note's text left it stale."""
    from vaultmem.ops.corrections import edit
    from vaultmem.vault import Vault

    note = run.json("add", "The old build server is jenkins-01", "-n", "infra")
    run("decay", now=days_after(31))
    assert run.json("show", note["id"])["status"] == "stale"
    after = edit(Vault(vault_dir), note["id"], text="The old build server is jenkins-02")
    assert after.status == "active"


def test_decay_of_many_notes_lists_a_page_and_counts_the_rest(run):
    """A weekly decay of a big vault weakens thousands of notes: it printed a line for each (5,507
    at 10k). It lists status changes first, DECAY_ROWS lines in all, then how many more."""
    from vaultmem.cli.main import DECAY_ROWS
    from vaultmem.vault import Vault

    vault = Vault(run.vault_dir)
    vault.add_many([{"text": f"Fact number {i} about subsystem s{i}", "namespace": "bulk", "merge": False,
                     "supersede": False} for i in range(DECAY_ROWS + 15)])
    said = run("decay", now=days_after(14)).output
    assert said.startswith(f"changed {DECAY_ROWS + 15} notes (0 archived, 0 stale, {DECAY_ROWS + 15} weaker only)")
    assert "... and 15 more (--json lists every change)" in said
    assert len(run.json("decay", "--dry-run", now=days_after(21))["changes"]) == DECAY_ROWS + 15
