"""The trust layer through the CLI on real vaults: corrections, tiers, the ledger, redaction, health.

Whether an add supersedes, contests or leaves alone a memory depends on the
embedding model's similarity: the tests that check that detection run the real
model (`real_model`); those that only need a contradiction to set up
promotion, resolution or the preview run with the test stand-in."""

from __future__ import annotations

import json
import unicodedata

import pytest
import yaml

from vaultmem.core.note import split_frontmatter
from vaultmem.errors import BadInput
from vaultmem.store.ledger import content_hash
from vaultmem.vault import Vault


def props(vault_dir, rel) -> dict:
    block, _body = split_frontmatter((vault_dir / rel).read_text(encoding="utf-8"))
    return yaml.safe_load(block)


def ledger_ops(vault_dir) -> list[tuple[str, str]]:
    lines = (vault_dir / ".vaultmem" / "ledger.jsonl").read_text(encoding="utf-8").splitlines()
    return [(r["op"], r["id"]) for r in map(json.loads, lines)]


# ---------------------------------------------------------------- contradictions


@pytest.mark.real_model
def test_a_chain_of_three_corrections_supersedes_each_older_one(run, vault_dir):
    a = run.json("add", "Staging runs Postgres 14", "-n", "infra")
    b = run.json("add", "Staging runs Postgres 15", "-n", "infra", now="2026-02-01T09:00:00")
    c = run.json("add", "Staging runs Postgres 16", "-n", "infra", now="2026-03-01T09:00:00")
    assert b["superseded"] == [a["id"]] and c["superseded"] == [b["id"]]
    pa, pb, pc = (props(vault_dir, x["path"]) for x in (a, b, c))
    assert pa["status"] == "superseded" and pa["superseded_by"] == "[[staging-runs-postgres-15]]"
    assert pb["status"] == "superseded" and pb["supersedes"] == "[[staging-runs-postgres-14]]"
    assert pb["superseded_by"] == "[[staging-runs-postgres-16]]" and pc["supersedes"] == "[[staging-runs-postgres-15]]"
    assert "superseded_by" not in pc and pc["status"] == "active"

    now = "2026-03-02T09:00:00"
    assert [h["id"] for h in run.json("recall", "which Postgres version does staging run", now=now)] == [c["id"]]
    history = [h["id"] for h in run.json("recall", "staging Postgres", "--history", now=now)]
    assert set(history) == {a["id"], b["id"], c["id"]}

    why = run.json("why", c["id"], now=now)
    assert [o["id"] for o in why["older"]] == [b["id"], a["id"]] and why["newer"] == []
    assert [n["id"] for n in run.json("why", a["id"], now=now)["newer"]] == [b["id"], c["id"]]
    assert ("supersede", a["id"]) in ledger_ops(vault_dir) and ("supersede", b["id"]) in ledger_ops(vault_dir)


def test_conflicts_shows_what_an_add_would_do_without_writing(run, vault_dir):
    old = run.json("add", "The team deploys on Fridays", "-n", "work")
    before = sorted(p.name for p in vault_dir.rglob("*.md"))
    ledger_before = (vault_dir / ".vaultmem" / "ledger.jsonl").read_bytes()
    report = run.json("conflicts", "The team deploys on Tuesdays", "-n", "work")
    assert [(r["id"], r["action"]) for r in report] == [(old["id"], "would supersede")]
    assert run.json("conflicts", "Lunch is served at noon", "-n", "work") == []
    assert sorted(p.name for p in vault_dir.rglob("*.md")) == before
    assert (vault_dir / ".vaultmem" / "ledger.jsonl").read_bytes() == ledger_before


def test_no_supersede_keeps_both_memories_active(run, vault_dir):
    old = run.json("add", "The team deploys on Fridays", "-n", "work")
    new = run.json("add", "The team deploys on Tuesdays", "-n", "work", "--no-supersede")
    assert new["superseded"] == [] and props(vault_dir, old["path"])["status"] == "active"


def test_the_same_memory_again_is_a_recurrence_not_a_copy(run, vault_dir, monkeypatch):
    monkeypatch.setenv("VAULTMEM_SESSION", "s1")
    first = run.json("add", "Alice prefers tabs over spaces", "-n", "people")
    monkeypatch.setenv("VAULTMEM_SESSION", "s2")
    again = run.json("add", "Alice prefers tabs over spaces", "-n", "people", now="2026-01-06T10:00:00")
    assert again["action"] == "recurrence" and again["id"] == first["id"]
    assert len(list((vault_dir / "memories" / "people").glob("*.md"))) == 1
    assert props(vault_dir, first["path"])["sessions"] == ["s1", "s2"]
    assert props(vault_dir, first["path"])["days"] == ["2026-01-05", "2026-01-06"]
    copy = run.json("add", "Alice prefers tabs over spaces", "-n", "people", "--allow-duplicate")
    assert copy["action"] == "added" and copy["id"] != first["id"]


def test_the_same_words_with_roles_exchanged_are_contested_not_a_repeat(run, vault_dir):
    """"Use npm, never pnpm" after "Use pnpm, never npm": the same content words, the opposite
    rule. Taken for a repeat, the new fact was dropped and the old one counted again."""
    first = run.json("add", "Use pnpm, never npm.", "-n", "tooling")
    swapped = run.json("add", "Use npm, never pnpm.", "-n", "tooling")
    assert swapped["action"] == "added" and swapped["contested"] == [first["id"]]
    assert ("recur", first["id"]) not in ledger_ops(vault_dir), "the old rule was not counted again"
    assert "npm, never pnpm" in (vault_dir / swapped["path"]).read_text()
    primary = run.json("add", "db1 is the primary and db2 is the replica", "-n", "infra")
    failover = run.json("add", "db2 is the primary and db1 is the replica", "-n", "infra")
    assert failover["action"] == "added" and failover["contested"] == [primary["id"]]


def test_correct_grades_the_wrong_memory_and_supersedes_it(run, vault_dir):
    wrong = run.json("add", "The office wifi password rotates monthly", "-n", "office")
    fixed = run.json("correct", wrong["id"], "The office wifi password rotates every quarter",
                     "--reason", "IT changed the policy")
    assert fixed["superseded"] == [wrong["id"]]
    old = props(vault_dir, wrong["path"])
    assert old["status"] == "superseded" and old["lapses"] == 0 and old["reps"] == 1
    assert old["superseded_by"] == f"[[{fixed['path'].rsplit('/', 1)[1][:-3]}]]"
    body = (vault_dir / fixed["path"]).read_text()
    assert "rotates every quarter" in body and "which said: The office wifi password rotates monthly" in body
    assert "Why: IT changed the policy" in body
    review = [json.loads(line) for line in (vault_dir / ".vaultmem" / "reviews.jsonl").read_text().splitlines()]
    assert review[-1]["rating"] == "again" and "IT changed the policy" in review[-1]["comment"]
    run("correct", wrong["id"], "again", expect=2)  # already superseded: correct the newer one
    # A superseded memory is history: a grade would count as evidence for the fact it replaced.
    refused = run("grade", wrong["id"], "good", expect=2)
    assert f"superseded by [[{fixed['path'].rsplit('/', 1)[1][:-3]}]]" in refused.output
    assert props(vault_dir, wrong["path"])["reps"] == 1


def test_a_correction_does_not_claim_the_wrong_memorys_source(run, vault_dir):
    """A memory captured from a transcript line, then corrected: the correction keeps the topic's
    tags but not the "captured" tag or the source, the line that stated the wrong fact."""
    wrong = run.json("add", "CI runs on Jenkins at ci.internal", "-n", "infra", "--tags", "captured,explicit,ci",
                     "--source", "~/.claude/projects/x/s1.jsonl#L8")
    fixed = run.json("correct", wrong["id"], "CI runs on GitHub Actions")
    after = props(vault_dir, fixed["path"])
    assert after["tags"] == ["explicit", "ci"] and not after.get("source")
    assert props(vault_dir, wrong["path"])["source"] == "~/.claude/projects/x/s1.jsonl#L8"


def test_a_recorded_note_made_unreadable_fails_strict_verify_and_is_never_recorded_as_gone(run, vault_dir):
    """A recorded note edited into broken YAML, or overwritten with binary bytes, no longer
    matches its record: `verify --strict` (CI) fails naming it, and plain verify neither passes
    it as fine nor records it deleted (its file is there); once fixed, it is recorded as an edit."""
    kitchen = run.json("add", "The kitchen is cleaned on Fridays", "-n", "office")
    drill = run.json("add", "The fire drill is on Thursday", "-n", "office")
    kitchen_file, drill_file = vault_dir / kitchen["path"], vault_dir / drill["path"]
    good = kitchen_file.read_text()
    kitchen_file.write_text(good.replace("tier: L1", "tier: [L1"))
    drill_file.write_bytes(bytes(range(256)) * 2)
    ledger = vault_dir / ".vaultmem" / "ledger.jsonl"
    recorded = ledger.read_text()
    result = run("verify", "--strict", expect=4)
    assert "unreadable note: " + kitchen["path"] in result.stdout and "broken YAML" in result.stdout
    assert "unreadable note: " + drill["path"] in result.stdout and "binary" in result.stdout
    checked = run.json("verify")
    assert {c["kind"] for c in checked["changes"]} == {"unreadable note"} and checked["recorded"] == 0
    assert ledger.read_text() == recorded  # nothing recorded as deleted
    kitchen_file.write_text(good.replace("Fridays", "Fridays and Mondays"))
    checked = run.json("verify")
    assert checked["recorded"] == 1 and json.loads(ledger.read_text().splitlines()[-1])["op"] == "external-edit"


def test_a_refused_correction_changes_nothing(run, vault_dir):
    """No text, the same text again, or one over the size limit: refused before the wrong memory
    is graded, so retrying a mistyped command does not lapse the memory again and again."""
    from .test_secrets import written

    wrong = run.json("add", "Meeting room A has a projector", "-n", "office")
    before = written(vault_dir)
    run("correct", wrong["id"], "", expect=2)
    assert "no letter or digit" in run("correct", wrong["id"], "!!!", expect=2).stderr  # as add refuses it
    result = run("correct", wrong["id"], "Meeting room  A has a projector", expect=2)
    assert "already says that" in result.stderr
    with pytest.raises(BadInput, match="over the"):
        Vault(vault_dir).correct(wrong["id"], "x " * 600_000)  # through the API: no shell's limit
    assert written(vault_dir) == before
    assert props(vault_dir, wrong["path"])["status"] == "active"


@pytest.mark.real_model
def test_an_unclear_conflict_marks_both_contested_and_prompt_says_so(run, vault_dir):
    a = run.json("add", "Our billing service runs in Berlin on 3 servers", "-n", "org")
    b = run.json("add", "Our billing service runs in Paris on 5 servers", "-n", "org")
    assert b["contested"] == [a["id"]] and b["superseded"] == []
    assert props(vault_dir, a["path"])["contested"] is True and props(vault_dir, b["path"])["contested"] is True
    block = run.json("prompt")
    labels = {m["id"]: m["label"] for m in block["memories"]}
    assert labels == {a["id"]: "contested", b["id"]: "contested"}
    assert f"[{a['id']}] (org, contested)" in block["text"]
    assert run.json("health")["contested"] == [sorted([a["id"], b["id"]])]


# ---------------------------------------------------------------- tiers


def _use(run, note_id, session, day, project="alpha"):
    import os

    os.environ["VAULTMEM_SESSION"], os.environ["VAULTMEM_PROJECT"] = session, project
    try:
        return run.json("grade", note_id, "good", now=f"{day}T10:00:00")
    finally:
        del os.environ["VAULTMEM_SESSION"], os.environ["VAULTMEM_PROJECT"]


def test_promotion_is_earned_staged_and_adopted(run, vault_dir):
    note = run.json("add", "Run the linters before every commit", "-n", "dev")
    _use(run, note["id"], "s1", "2026-01-05")
    _use(run, note["id"], "s2", "2026-01-05")
    assert run.json("promote", now="2026-01-05T12:00:00") == []  # 3 sessions needed (with the add's own)
    _use(run, note["id"], "s3", "2026-01-07")
    staged = run.json("promote", now="2026-01-07T12:00:00")
    assert [(p["id"], p["from"], p["to"]) for p in staged] == [(note["id"], "L1", "L2")]
    assert props(vault_dir, note["path"])["tier"] == "L1"  # a dry run: only staged
    assert (vault_dir / ".vaultmem" / "staged" / "promotions.json").exists()
    adopted = run.json("promote", "--adopt", now="2026-01-07T12:00:00")
    assert [p["to"] for p in adopted] == ["L2"] and props(vault_dir, note["path"])["tier"] == "L2"

    # L2 -> L3: held in two projects and for 30 days.
    _use(run, note["id"], "s4", "2026-01-20", project="beta")
    assert run.json("promote", now="2026-01-20T12:00:00") == []
    assert [p["to"] for p in run.json("promote", now="2026-02-07T12:00:00")] == ["L3"]
    why = run.json("why", note["id"], now="2026-02-07T12:00:00")
    assert set(why["evidence"]["projects"]) >= {"alpha", "beta"}
    assert [e["detail"]["to"] for e in why["history"] if e["op"] == "promote"] == ["L2"]


def test_contested_and_redacted_memories_do_not_promote(run, vault_dir):
    a = run.json("add", "Our billing service runs in Berlin on 3 servers", "-n", "org")
    b = run.json("add", "Our billing service runs in Paris on 5 servers", "-n", "org")
    secret = run.json("add", "Deploy with password=hunter2hunter2 on the box", "-n", "org", "--redact")
    assert props(vault_dir, secret["path"])["redacted"] is True
    for day, session in (("2026-01-06", "s1"), ("2026-01-07", "s2"), ("2026-01-08", "s3")):
        for note in (a, b, secret):
            _use(run, note["id"], session, day)
    assert run.json("promote", now="2026-01-09T09:00:00") == []
    run.json("promote", a["id"], "--tier", "L2")  # a person may still decide
    assert props(vault_dir, a["path"])["tier"] == "L2"


def test_explicit_memories_promote_after_two_sessions(run, vault_dir):
    note = run.json("add", "Always answer in British English", "-n", "style", "--explicit", "--tier", "L0")
    _use(run, note["id"], "s2", "2026-01-06")
    assert [(p["from"], p["to"]) for p in run.json("promote", now="2026-01-06T12:00:00")] == [("L0", "L2")]


# ---------------------------------------------------------------- prompt


def test_prompt_puts_core_first_then_learning_then_review_within_budget(run):
    core = run.json("add", "The product is called vaultmem", "-n", "p", "--tier", "L2")
    learning = run.json("add", "The demo is on Thursday", "-n", "p")
    known = run.json("add", "Builds run on two cores", "-n", "p")
    for day in ("2026-01-05", "2026-01-08", "2026-01-20"):
        run.json("grade", known["id"], "good", now=f"{day}T09:00:00")
    block = run.json("prompt", now="2026-01-21T09:00:00")
    assert [m["id"] for m in block["memories"]] == [core["id"], learning["id"], known["id"]]
    assert [m["section"] for m in block["memories"]] == ["core", "learning", "review"]
    text = block["text"]
    assert text.index("## Core") < text.index("## Learning") < text.index("## Review")
    assert f"[{learning['id']}] (p, new)" in text and f"[{known['id']}] (p, strong)" in text
    small = run.json("prompt", "--max-tokens", "50", now="2026-01-21T09:00:00")
    assert len(small["text"]) <= 200 and small["left_out"] >= 1


def test_a_large_core_leaves_the_learning_queue_its_share_of_the_prompt(run):
    """Sixty core memories fill the budget by themselves: the learning queue (new memories,
    which gain strength by being seen) still gets its share, so a memory saved today shows."""
    for number in range(60):
        run("add", f"Core rule {number}: service {number} deploys through pipeline {number} with canary steps",
            "-n", "ops", "--tier", "L2", "--no-supersede", "--allow-duplicate")
    new = run.json("add", "The staging database moved to port 6543", "-n", "ops")
    block = run.json("prompt", "--max-tokens", "600")
    sections = [m["section"] for m in block["memories"]]
    assert sections.count("core") >= 10 and block["left_out"] > 0
    assert new["id"] in [m["id"] for m in block["memories"]] and "## Learning" in block["text"]
    assert len(block["text"]) <= 600 * 4


# ---------------------------------------------------------------- ledger


def test_a_tampered_note_is_caught_by_verify_strict(run, vault_dir):
    note = run.json("add", "Payments go through Stripe", "-n", "billing")
    run("verify", "--strict")
    path = vault_dir / note["path"]
    path.write_text(path.read_text().replace("Stripe", "PayPal"))
    result = run("verify", "--strict", "--json", expect=4)
    changes = json.loads(result.stdout)["changes"]
    assert [(c["kind"], c["where"]) for c in changes] == [("unrecorded edit", note["path"])]
    run("verify", "--strict", expect=4)  # strict records nothing
    assert run.json("health")["ledger"]["unrecorded"][0]["where"] == note["path"]


def test_verify_records_a_hand_edit_once_then_strict_passes(run, vault_dir):
    note = run.json("add", "Payments go through Stripe", "-n", "billing")
    path = vault_dir / note["path"]
    path.write_text(path.read_text() + "\nAdded by a person.\n")
    assert run.json("verify")["recorded"] == 1
    run("verify", "--strict")
    assert ledger_ops(vault_dir)[-1] == ("external-edit", note["id"])


def test_vaultmem_records_a_hand_edit_it_finds_before_rewriting(run, vault_dir):
    note = run.json("add", "Payments go through Stripe", "-n", "billing")
    path = vault_dir / note["path"]
    path.write_text(path.read_text() + "\nEdited in Obsidian.\n")
    run("grade", note["id"], "good")
    assert ledger_ops(vault_dir)[-2:] == [("external-edit", note["id"]), ("grade", note["id"])]
    run("verify", "--strict")


def test_an_edited_or_removed_ledger_line_breaks_the_chain(run, vault_dir):
    for text in ("One fact about cats", "Two facts about dogs", "Three facts about owls"):
        run.json("add", text, "-n", "zoo")
    ledger = vault_dir / ".vaultmem" / "ledger.jsonl"
    lines = ledger.read_text().splitlines(keepends=True)
    ledger.write_text(lines[0] + lines[2])
    result = json.loads(run("verify", "--json", expect=4).stdout)
    assert result["breaks"][0]["where"] == "ledger.jsonl line 2"
    # one problem, the missing line (it also said "sequence 3 after 0", which no line says)
    assert [b["detail"] for b in result["breaks"]] == [
        "does not follow the line before it (a line was removed, inserted or reordered)"]
    assert "problems: none with the notes (the ledger's are above)" in run("health").output
    record = json.loads(lines[1])
    record["op"] = "grade"
    ledger.write_text(lines[0] + json.dumps(record) + "\n" + lines[2])
    assert "hash does not match" in json.loads(run("verify", "--json", expect=4).stdout)["breaks"][0]["detail"]


def test_nfc_and_nfd_text_hash_the_same(run, vault_dir):
    nfc = "Caf\u00e9 in Z\u00fcrich"
    assert content_hash(nfc) == content_hash(unicodedata.normalize("NFD", nfc))
    assert content_hash("a\r\nb") == content_hash("a\nb") and content_hash("a") != content_hash("b")
    note = run.json("add", "Meet at the Café Zürich", "-n", "places")
    path = vault_dir / note["path"]
    path.write_bytes(unicodedata.normalize("NFD", path.read_text(encoding="utf-8")).encode("utf-8"))
    run("verify", "--strict")  # an editor re-encoding the same text is not an edit


def test_a_note_deleted_by_hand_is_reported_missing(run, vault_dir):
    note = run.json("add", "Payments go through Stripe", "-n", "billing")
    (vault_dir / note["path"]).unlink()
    result = json.loads(run("verify", "--strict", "--json", expect=4).stdout)
    assert [(c["kind"], c["where"]) for c in result["changes"]] == [("missing note", note["path"])]


def test_archive_and_restore_are_on_the_ledger_and_verify_stays_clean(run, vault_dir):
    note = run.json("add", "Payments go through Stripe", "-n", "billing")
    run("archive", note["id"])
    run("restore", note["id"])
    assert [op for op, i in ledger_ops(vault_dir) if i == note["id"]] == ["add", "archive", "restore"]
    run("verify", "--strict")


# ---------------------------------------------------------------- redaction


def test_secrets_are_refused_and_nothing_is_written(run, vault_dir):
    token = "ghp_" + "a1B2c3D4" * 4 + "zz11"
    result = run("add", f"Deploy token is {token}", "-n", "ops", expect=2)
    assert "GitHub token" in result.stderr and token not in result.stderr and "--redact" in result.stderr
    assert not list((vault_dir / "memories").rglob("*.md"))
    assert not (vault_dir / ".vaultmem" / "ledger.jsonl").exists()
    masked = run.json("add", f"Deploy token is {token}", "-n", "ops", "--redact")
    text = (vault_dir / masked["path"]).read_text()
    assert token not in text and "[REDACTED:GitHub token]" in text and props(vault_dir, masked["path"])["redacted"]


def test_personal_data_is_caught_only_when_configured(run, vault_dir):
    run.json("add", "Write to alice@example.com about invoices", "-n", "people")
    config = vault_dir / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text().replace("emails: false", "emails: true"))
    run("add", "Write to bob@example.com about refunds", "-n", "people", expect=2)


def test_python_api_add_returns_what_happened(vault_dir):
    vault = Vault(vault_dir)
    first = vault.add("Staging runs Postgres 14", "infra")
    second = vault.add("Staging runs Postgres 16", "infra")
    assert first.action == "added" and second.superseded == (first.note.id,)
    assert vault.get(first.note.id).status == "superseded"
    assert [h.note.id for h in vault.recall("postgres on staging")] == [second.note.id]


@pytest.mark.real_model
def test_different_statements_on_one_topic_are_neither_merged_nor_contested(run, vault_dir):
    first = run.json("add", "Thanks, Gina! Your kind words mean a lot. I won't give up!", "-n", "chat")
    second = run.json("add", "Thanks, Jon! Your words are really encouraging. Glad my journey is inspiring others.",
                      "-n", "chat")
    assert second["action"] == "added" and second["contested"] == [] and second["superseded"] == []
    assert props(vault_dir, first["path"]).get("contested") is None
    # Facts that differ only in their numbers are never folded into one note.
    a = run.json("add", "Service 5 listens on port 8153", "-n", "ports")
    b = run.json("add", "Service 15 listens on port 8163", "-n", "ports")
    assert b["action"] == "added" and b["id"] != a["id"]


def test_a_password_in_a_source_url_is_refused_or_masked_too(run, vault_dir):
    url = "postgres://app:" + "s3cretPassw0rd" + "@db.internal/prod"
    run("add", "The reporting job reads the prod database", "-n", "ops", "--source", url, expect=2)
    note = run.json("add", "The reporting job reads the prod database", "-n", "ops", "--source", url, "--redact")
    text = (vault_dir / note["path"]).read_text()
    assert "s3cretPassw0rd" not in text and "db.internal" in text and props(vault_dir, note["path"])["redacted"]


def test_an_archived_memory_is_restored_before_it_is_corrected(run):
    note = run.json("add", "The wiki lives on Confluence", "-n", "docs")
    run("archive", note["id"])
    result = run("correct", note["id"], "The wiki lives on Notion", expect=2)
    assert f"vaultmem restore {note['id']}" in result.stderr


def test_resolve_keeps_one_side_of_a_contest_or_both(run, vault_dir):
    a = run.json("add", "Our billing service runs in Berlin on 3 servers", "-n", "org")
    b = run.json("add", "Our billing service runs in Paris on 5 servers", "-n", "org")
    assert run.json("resolve", b["id"]) == {"id": b["id"], "others": [a["id"]], "both": False}
    pa, pb = props(vault_dir, a["path"]), props(vault_dir, b["path"])
    link_a, link_b = (f"[[{x['path'].rsplit('/', 1)[1][:-3]}]]" for x in (a, b))
    assert pa["status"] == "superseded" and pa["contested"] is False and pa["superseded_by"] == link_b
    assert pb["status"] == "active" and pb["contested"] is False and pb["supersedes"] == link_a
    assert run.json("health")["contested"] == []
    run("resolve", b["id"], expect=2)  # nothing left to resolve

    c = run.json("add", "Our search service runs in Lisbon on 4 servers", "-n", "office")
    d = run.json("add", "Our search service runs in Porto on 6 servers", "-n", "office")
    assert d["contested"] == [c["id"]]
    run("resolve", c["id"], "--both")
    assert [props(vault_dir, x["path"])["status"] for x in (c, d)] == ["active", "active"]
    assert [props(vault_dir, x["path"])["contested"] for x in (c, d)] == [False, False]
    assert [op for op, i in ledger_ops(vault_dir) if i == c["id"]][-1] == "resolve"
    run("verify", "--strict")


def test_resolve_can_settle_one_pair_of_a_contest_and_leave_the_rest(run, vault_dir):
    """A memory contested with three others, one of them about the same thing: resolving it
    superseded all three (the other two were about other things). Named, only that one goes."""
    keep = run.json("add", "The ledger service runs in Lisbon on 4 servers", "-n", "infra")
    others = [run.json("add", f"The ledger service runs in {city} on {n} servers", "-n", "infra")
              for city, n in (("Porto", 6), ("Braga", 2), ("Faro", 3))]
    contested = {o["id"] for o in others if keep["id"] in o["contested"]}
    assert len(contested) >= 2
    gone, kept = sorted(contested)[0], sorted(contested)[1:]
    assert run.json("resolve", keep["id"], gone)["others"] == [gone]
    assert run.json("show", gone)["status"] == "superseded"
    assert all(run.json("show", other)["status"] == "active" for other in kept)
    assert run.json("show", keep["id"])["contested"], "still contested with the ones not named"
    unrelated = run.json("add", "The office plants are watered on Fridays", "-n", "infra")
    refused = run("resolve", keep["id"], unrelated["id"], expect=2)
    assert f"{keep['id']} is not contested with {unrelated['id']}" in refused.output


def test_conflicts_preview_matches_what_add_then_does(run, vault_dir):
    fridays = run.json("add", "The team deploys on Fridays", "-n", "work")
    tuesdays = run.json("add", "The team deploys on Tuesdays", "-n", "work", "--no-supersede")
    preview = {r["id"]: r["action"] for r in run.json("conflicts", "The team deploys on Fridays", "-n", "work")}
    assert preview == {fridays["id"]: "recurrence (no new note)",
                       tuesdays["id"]: "nothing (the add is a recurrence)"}
    added = run.json("add", "The team deploys on Fridays", "-n", "work")
    assert added["action"] == "recurrence" and added["id"] == fridays["id"]
    assert props(vault_dir, tuesdays["path"])["status"] == "active"


@pytest.mark.real_model
def test_conflicts_takes_the_tags_an_add_would_have(run):
    """Tags are part of the text the model compares: the preview without them could say "no
    conflicts" where the add with them contested. With the same tags it says what the add does."""
    initech = run.json("add", "Initech has 850 seats and renews in November", "-n", "crm", "--tags", "customers")
    text = "Hooli has 850 seats and renews in November"
    preview = run.json("conflicts", text, "-n", "crm", "--tags", "customers")
    added = run.json("add", text, "-n", "crm", "--tags", "customers")
    contested = [r["id"] for r in preview if r["action"] == "would contest"]
    assert contested == added["contested"] and all(i == initech["id"] for i in contested)


def test_why_gives_every_time_in_the_vaults_one_form(run):
    """`why --json` gave `created` as "2026-01-05 09:00:00+00:00" beside the history's
    "2026-01-05T09:00:00": one form, the one notes and the ledger use."""
    import re

    note = run.json("add", "The VPN endpoint is vpn.example.org", "-n", "net")
    run("grade", note["id"], "good")
    info = run.json("why", note["id"])
    times = [info["created"], *(event["time"] for event in info["history"])]
    assert len(times) >= 3 and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", t) for t in times), times


def test_a_grade_that_waited_for_the_write_lock_is_not_taken_for_a_cut_ledger(vault, vault_dir, monkeypatch):
    """Another process holds the write lock (a long decay or import) while a grade waits for
    it: the review and its ledger record are stamped once the lock is held, so verify finds
    the grade's record (it was stamped before the wait, 3 s before its record: tampering)."""
    import subprocess
    import sys
    import time

    monkeypatch.delenv("VAULTMEM_NOW")  # the real clock: the wait shows in the times
    note = vault.add("The tape backup runs at 2 am nightly", "ops").note
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
        "print('held', flush=True); time.sleep(3.5)"), str(vault_dir / ".vaultmem" / "write.lock")],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    start = time.monotonic()
    vault.grade(note.id, "good")
    assert time.monotonic() - start > 2.5  # it did wait
    holder.wait()
    result = vault.verify()
    assert result["tampering"] == [] and result["breaks"] == []


def test_health_says_when_it_lists_only_some_contested_pairs(run, vault_dir):
    folder = vault_dir / "memories" / "x"
    folder.mkdir(parents=True)
    for i in range(7):
        for me, other in ((f"a{i}", f"b{i}"), (f"b{i}", f"a{i}")):
            (folder / f"{me}.md").write_text(f"---\nid: {me}\ncontested: true\ncontested_with:\n  - \"[[{other}]]\"\n"
                                             f"---\nFact {me}\n")
    line = next(line for line in run("health").stdout.splitlines() if line.startswith("contested pairs:"))
    assert line.startswith("contested pairs: 7 (") and line.count(" vs ") == 5 and "and 2 more" in line
    assert len(run.json("health")["contested"]) == 7


def test_a_correction_is_shown_to_an_agent_without_the_wrong_text_it_replaces(run):
    """`correct` keeps the wrong text in the new note's Correction section (history); what recall's
    table and the prompt block show an agent is the right text only: it read the wrong value again
    at every session."""
    wrong = run.json("add", "Our daughter Mia is allergic to peanuts", "-n", "family")
    right = run.json("correct", wrong["id"], "Our daughter Mia is allergic to tree nuts, not peanuts",
                     "--reason", "the allergist's letter")
    prompt = run.json("prompt")["text"]
    assert "tree nuts" in prompt and "which said" not in prompt and "allergist" not in prompt
    table = run("recall", "what is Mia allergic to").stdout
    assert "tree nuts" in table and "which said" not in table
    hit = next(h for h in run.json("recall", "what is Mia allergic to") if h["id"] == right["id"])
    assert hit["summary"] == "Our daughter Mia is allergic to tree nuts, not peanuts"
    assert "which said: Our daughter Mia is allergic to peanuts" in hit["text"]  # the whole note, as stored
    assert "## Correction" in run("show", right["id"]).stdout


def test_commands_run_outside_any_git_repository_earn_no_project_evidence(run, tmp_path, monkeypatch):
    """A project is $VAULTMEM_PROJECT or the git repository's name: running grades from two plain
    folders (the vault's own subfolder, /tmp) counted as two projects, enough for L3."""
    monkeypatch.delenv("VAULTMEM_PROJECT", raising=False)
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "one")
    note = run.json("add", "Prefer small pull requests", "-n", "dev")
    for name in ("one", "two"):
        monkeypatch.chdir(tmp_path / name)
        run.json("grade", note["id"], "good")
    assert run.json("why", note["id"])["evidence"]["projects"] == []
    monkeypatch.setenv("VAULTMEM_PROJECT", "apollo")
    run.json("grade", note["id"], "good")
    assert run.json("why", note["id"])["evidence"]["projects"] == ["apollo"]


@pytest.mark.parametrize("block", [1, 2, 3, 7, 65536])
def test_a_log_read_from_its_end_gives_every_line_whatever_the_block(tmp_path, block):
    """verify reads the ledger and the review log from their end a block at a time: a line cut by a
    block's start must come back whole, and a final newline starts no empty line."""
    from vaultmem.store.files import lines_from_end

    for data in (b"", b"a\n", b"a", b'{"op": "grade"}\n{"op": "add"}\n', b"ab\n\ncd\n", b"x" * 10 + b"\n" + b"y" * 7):
        path = tmp_path / "log.jsonl"
        path.write_bytes(data)
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        assert list(lines_from_end(path, block)) == lines[::-1]


def test_verify_names_an_id_two_files_share(run, vault_dir):
    """A note copied by hand: health listed the shared id, verify said "every note matches its
    record" (the ledger's records of that id cannot say which file they vouch for)."""
    note = run.json("add", "The VPN endpoint is vpn.example.org", "-n", "net")
    source = vault_dir / note["path"]
    (source.parent / "copy-of-vpn.md").write_bytes(source.read_bytes())
    result = json.loads(run("verify", "--strict", "--json", expect=4).stdout)
    assert [c["kind"] for c in result["changes"] if c["id"] == note["id"]] == ["duplicate id"]
    (source.parent / "copy-of-vpn.md").unlink()
    run("verify", "--strict")
