"""Knowing what changed and saying nothing when nothing fits (issue 12), through the CLI
and the API on real vaults: updates phrased differently supersede the older memory,
non-updates on the same topic do not, a contested pair ranks the newer first, and
recall, the UserPromptSubmit hook and `why` return nothing for what the vault does
not hold. Tests about what the model finds run the real model."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from tests.test_claude_code import base, hook

LATER = "2026-02-10T09:00:00"


@pytest.fixture(autouse=True)
def closed_engines():
    """The suite runs in one long process: close what the engines of each test opened
    (catalogs, index files), so later tests do not run out of file descriptors."""
    import gc

    from vaultmem.search import engine

    before = set(engine._ENGINES)
    yield
    for key in [k for k in engine._ENGINES if k not in before]:
        engine._ENGINES.pop(key).vault.forget_catalog()
    gc.collect()


def add(run, text, now=None, namespace="work/infra"):
    return run.json("add", text, "-n", namespace, now=now)


@pytest.mark.real_model
@pytest.mark.parametrize("old, new", [
    ("We use Jenkins for CI", "We use GitHub Actions for CI"),
    ("Our CI runs on Jenkins", "We moved CI from Jenkins to GitHub Actions"),
    ("We use Jenkins for CI", "We moved CI from Jenkins to GitHub Actions"),
    ("We use Terraform for infrastructure", "We use OpenTofu instead of Terraform for infrastructure"),
    ("The platform team has 11 engineers", "The platform team grew to 14 engineers"),
    ("Mochi gets her pill twice a day", "Mochi gets her pill once a day"),
], ids=["tool", "moved-from-to", "moved-from-to-after-use", "instead-of", "figure-grew", "once-twice"])
def test_an_update_phrased_differently_supersedes_the_older_memory(run, old, new):
    older = add(run, old)
    newer = add(run, new, now=LATER)
    assert newer["superseded"] == [older["id"]]
    assert run.json("show", older["id"])["status"] == "superseded"
    hits = run.json("recall", old)
    assert [h["id"] for h in hits] == [newer["id"]]  # the old value is history, not an answer
    history = [h["id"] for h in run.json("recall", old, "--history")]
    assert history.index(newer["id"]) < history.index(older["id"])


@pytest.mark.real_model
@pytest.mark.parametrize("old, new", [
    ("We use GitHub Actions for CI", "We use Sentry for error tracking"),
    ("Alice speaks German", "Alice speaks French"),
    ("Staging runs Postgres 16", "The analytics database runs ClickHouse"),
    ("Database backups are kept for 30 days", "Application logs are kept for 14 days"),
], ids=["other-role", "additive", "other-database", "other-retention"])
def test_a_non_update_on_the_same_topic_leaves_both_active(run, old, new):
    older = add(run, old)
    newer = add(run, new, now=LATER)
    assert newer["superseded"] == [] and run.json("show", older["id"])["status"] == "active"


@pytest.mark.real_model
@pytest.mark.parametrize("old, new", [
    ("The bus to Sintra leaves at 9:10 from stop 4", "The bus to Cascais leaves at 9:10 from stop 4"),
    ("Never reboot db-7 at night; tell channel infra-2 first",
     "Never reboot db-12 at night; tell channel infra-2 first"),
], ids=["other-place", "other-instance"])
def test_the_same_fact_about_another_thing_is_a_second_memory_not_an_update(run, old, new):
    older = add(run, old)
    newer = add(run, new, now=LATER)
    assert newer["action"] == "added" and newer["superseded"] == [] and newer["contested"] == []
    assert run.json("show", older["id"])["status"] == "active"
    assert [h["id"] for h in run.json("recall", new)][:1] == [newer["id"]]


def test_without_the_model_a_difference_is_never_a_contradiction(run, vault_dir, monkeypatch):
    monkeypatch.setenv("VAULTMEM_MODEL", str(vault_dir / "no-such-model"))
    older = add(run, "We use Jenkins for CI")
    newer = add(run, "We use GitHub Actions for CI", now=LATER)
    assert newer["superseded"] == [] and newer["contested"] == []
    assert run.json("show", older["id"])["status"] == "active"


@pytest.mark.real_model
def test_a_contested_pair_ranks_the_newer_memory_first(vault):
    older = vault.add("We have 11 engineers on the platform team", "work")
    newer = vault.add("We probably have around 15 engineers on the platform team now", "work",
                      created=datetime(2026, 2, 1, tzinfo=timezone.utc))
    assert newer.contested == (older.note.id,)  # hedged: not a clean update
    hits = vault.recall("how many engineers does the platform team have", k=5)
    ids = [h.note.id for h in hits]
    assert ids.index(newer.note.id) < ids.index(older.note.id)


# ---------------------------------------------------------------- abstention

MEMORIES = [
    "Staging runs Postgres 16 on port 5433",
    "Priya owns the on-call rotation and publishes it every Monday",
    "Production deploys happen on Tuesdays and Thursdays after 14:00",
    "The public API allows 100 requests per minute per token",
]


@pytest.fixture
def filled(run):
    return [add(run, text)["id"] for text in MEMORIES]


@pytest.mark.real_model
@pytest.mark.parametrize("question", ["what happened in the last minute of the football match",
                                      "my grandmother's Monday soup recipe", "a poem about the port of Marseille"])
def test_a_question_the_vault_cannot_answer_gets_nothing_and_min_score_0_shows_the_candidates(run, filled, question):
    assert run.json("recall", question) == []
    assert "no matching memories" in run("recall", question).stdout
    assert run.json("recall", question, "--min-score", "0")  # one shared word: the least unrelated, on request


@pytest.mark.real_model
def test_a_paraphrase_keeps_its_answer_under_the_floor(run, filled):
    assert run.json("recall", "who publishes the schedule of on-call duty")[0]["id"] == filled[1]
    assert run.json("recall", "what port does the pre-production database listen on")[0]["id"] == filled[0]
    assert run.json("recall", "can I ship to prod at the end of the week")[0]["id"] == filled[2]


def test_min_score_from_config_applies_and_the_flag_overrides_it(run, filled, vault_dir):
    config = vault_dir / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text().replace("min_score: auto", "min_score: 1.0"))
    assert run.json("recall", "postgres staging port") != []  # its words are there: evidence enough
    assert run.json("recall", "who painted the rotation of the earth") == []
    assert run.json("recall", "who painted the rotation of the earth", "--min-score", "0") != []


@pytest.mark.parametrize("value", ["high", "1.5", "-0.1", "true"])
def test_a_bad_min_score_in_config_is_a_clear_error(run, vault_dir, value):
    config = vault_dir / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text().replace("min_score: auto", f"min_score: {value}"))
    result = run("recall", "anything", expect=2)
    assert "recall.min_score" in result.output and "number from 0 to 1, or auto" in result.output


@pytest.mark.parametrize("value", ["2", "-0.5", "nan", "inf"])
def test_min_score_out_of_range_on_the_command_line_is_bad_usage(run, value):
    assert "--min-score" in run("recall", "x", "--min-score", value, expect=2).output


@pytest.mark.real_model
def test_the_prompt_hook_injects_nothing_when_nothing_is_relevant(run, filled, vault_dir, tmp_path):
    slow_machine = {"VAULTMEM_HOOK_BUDGET": "60"}  # the real model loads in each hook process
    quiet = hook("user-prompt-submit", base("UserPromptSubmit", tmp_path, prompt="my grandmother's Monday soup recipe"),
                 vault_dir, **slow_machine)
    assert quiet.stdout == ""
    answered = hook("user-prompt-submit", base("UserPromptSubmit", tmp_path, prompt="who runs the on-call rotation?"),
                    vault_dir, **slow_machine)
    assert filled[1] in json.loads(answered.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.real_model
def test_why_a_claim_nobody_made_is_not_found(run, filled):
    result = run("why", "the office parking costs twenty euros a day", expect=1)
    assert "none matching" in result.output
    assert run.json("why", "who owns the on-call rotation")["id"] == filled[1]


def test_a_skill_is_embedded_by_its_title_and_trigger_and_found_by_any_word(vault):
    from vaultmem.search.engine import embed_text

    added = vault.learn("Restore the database", "When data was lost in production",
                        "1. Stop writes 2. Pick a snapshot from S3 3. Restore into a new instance",
                        "Production reads the restored data", "Never restore over the damaged instance", "work")
    text = embed_text(added.note)
    assert "Restore the database" in text and "data was lost" in text and "snapshot" not in text
    assert [h.note.id for h in vault.recall("snapshot S3 instance")] == [added.note.id]  # BM25 has every section


def test_a_note_from_the_session_of_a_strong_hit_gains_a_tenth_of_its_score(vault):
    from vaultmem.search.fusion import with_session_context

    day = datetime(2026, 1, 3, 18, 0, tzinfo=timezone.utc)
    strong = vault.add("Caroline: I went to the LGBTQ support group yesterday", "chat", created=day).note
    reply = vault.add("Melanie: That sounds powerful, how did it go?", "chat", created=day).note
    later = datetime(2026, 2, 9, tzinfo=timezone.utc)
    elsewhere = vault.add("Melanie: I painted a lake at sunrise", "chat", created=later).note
    notes = {n.path: n for n in (strong, reply, elsewhere)}
    fused = [(strong.path, 0.8, {}), (elsewhere.path, 0.35, {}), (reply.path, 0.3, {})]
    ranked = with_session_context(fused, notes)
    assert [p for p, _s, _sig in ranked] == [strong.path, reply.path, elsewhere.path]
    assert dict((p, round(s, 3)) for p, s, _sig in ranked)[reply.path] == 0.38  # 0.3 + 0.1 * 0.8


@pytest.mark.real_model
@pytest.mark.parametrize("old, new, now_q, then_q", [
    ("The gym membership costs 39 euros a month", "The gym membership costs 45 euros a month",
     "how much does the gym cost", "how much did the gym cost before"),
    ("Production runs Postgres 14", "Production runs Postgres 16",
     "which postgres version runs in production", "what was the old postgres version in production"),
], ids=["price-before", "old-version"])
def test_a_question_about_how_things_were_finds_what_was_superseded(run, old, new, now_q, then_q):
    """A newer memory superseded the older one: a question about now gets the newer only; one about
    how things were ("before", "old", "used to") gets the superseded one first, without --history."""
    older = add(run, old)
    newer = add(run, new, now=LATER)
    assert newer["superseded"] == [older["id"]]
    assert [h["id"] for h in run.json("recall", now_q)][:1] == [newer["id"]]
    assert older["id"] not in [h["id"] for h in run.json("recall", now_q)]
    then = [h["id"] for h in run.json("recall", then_q)]
    assert then[:2] == [older["id"], newer["id"]]


@pytest.mark.real_model
def test_a_correction_is_compared_by_what_it_states_not_by_the_wrong_text_it_keeps(run):
    """`correct` keeps the wrong text in a Correction section; later checks compared that too:
    a newer value only contested the correction ("several things differ: ... Correction"), and
    correcting it to its own text again made a duplicate."""
    wrong = add(run, "The API rate limit is 100 requests per minute")
    right = run.json("correct", wrong["id"], "The API rate limit is 300 requests per minute", "--reason", "raised",
                     now=LATER)
    newer = run.json("conflicts", "The API rate limit is 500 requests per minute", "-n", "work/infra")
    assert [(c["id"], c["action"]) for c in newer] == [(right["id"], "would supersede")]
    refused = run("correct", right["id"], "The API rate limit is 300 requests per minute", expect=2)
    assert "already says that" in refused.output


@pytest.mark.real_model
def test_conflicts_predicts_a_backfill_as_add_does_it(run):
    add(run, "The VPN gateway is at 10.0.0.1", now=LATER)
    predicted = run.json("conflicts", "The VPN gateway is at 10.0.0.7", "-n", "work/infra", "--created", "2026-01-01")
    added = run.json("add", "The VPN gateway is at 10.0.0.7", "-n", "work/infra", "--created", "2026-01-01",
                     now=LATER)
    assert [c["action"] for c in predicted] == ["would contest"]
    assert added["superseded"] == [] and len(added["contested"]) == 1


@pytest.mark.real_model
def test_the_update_of_a_core_memory_stays_in_the_core(run):
    """A durable (L3) fact superseded by its update: the update takes its tier, or the core block
    at every session start lost the fact ("no memories yet" with --core-only)."""
    older = run.json("add", "We use Jenkins for CI", "-n", "work/infra", "--tier", "L3")
    newer = add(run, "We use GitHub Actions for CI", now=LATER)
    assert newer["superseded"] == [older["id"]] and newer["tier"] == "L3"
    core = run.json("prompt", "--core-only")["memories"]
    assert [m["id"] for m in core] == [newer["id"]]


@pytest.mark.real_model
def test_a_correction_of_a_contested_memory_takes_over_its_contest(run):
    """"Dana" and a hedged "probably Omar" are contested; correcting the hedged one to "Omar" left
    the correction uncontested, and resolving in Dana's favour then left both facts in force."""
    dana = add(run, "The release manager is Dana")
    hedged = add(run, "The release manager is probably Omar, not sure")
    assert hedged["contested"] == [dana["id"]]
    omar = run.json("correct", hedged["id"], "The release manager is Omar", "--reason", "confirmed")
    assert run.json("show", omar["id"])["contested"] is True
    run("resolve", dana["id"])
    assert run.json("show", omar["id"])["status"] == "superseded"
    assert [h["id"] for h in run.json("recall", "who is the release manager")] == [dana["id"]]
