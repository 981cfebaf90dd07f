"""vaultmem.core.conflicts.classify: duplicate / conflict / unclear / compatible for two memory texts.

The pairs here are kept different from bench/data/conflict_pairs.jsonl (the bench
measures the rules on pairs they were not written against).
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from vaultmem.core import conflicts
from vaultmem.core.conflicts import Verdict, classify

D, C, U, P = "duplicate", "conflict", "unclear", "compatible"

CASES = [
    # duplicates: the same statement again, reworded or not
    ("exact", "Staging runs Postgres 16", "Staging runs Postgres 16.", 0.99, D),
    ("paraphrase-weekday", "We deploy every Friday", "Deploys happen on Fridays", 0.88, D),
    ("iso-vs-words-date", "The release is on 2024-05-03", "The release is on 3 May 2024", 0.9, D),
    ("passive", "Bob handles the billing alerts", "Billing alerts are handled by Bob", 0.9, D),
    ("user-is-i", "The user prefers dark mode", "I prefer dark mode", 0.9, D),
    ("chat-filler", "fyi our CI runs on GitHub Actions", "CI runs on GitHub Actions", 0.9, D),
    ("time-formats", "Nightly backups start at 1am", "Nightly backups start at 01:00", 0.93, D),
    ("acronym-synonym", "The DB snapshot runs at noon", "The database snapshot runs at noon", 0.95, D),
    ("both-negated", "Alice doesn't drink coffee", "Alice does not drink coffee", 0.97, D),
    # conflicts: one value in the same slot, a negation, an antonym, another choice
    ("version-number", "Staging runs Postgres 14", "Staging runs Postgres 16", 0.95, C),
    ("dotted-version", "The build agents use Python 3.11", "The build agents use Python 3.12", 0.96, C),
    ("weekday", "We deploy on Tuesdays", "We deploy on Fridays", 0.9, C),
    ("iso-dates", "The launch is on 2024-09-02", "The launch is on 2024-09-09", 0.95, C),
    ("word-dates", "The offsite is on 14 October", "The offsite is on October 21", 0.93, C),
    ("month", "Our fiscal year starts in April", "Our fiscal year starts in July", 0.92, C),
    ("time", "Standup is at 10am", "Standup is at 9:30", 0.9, C),
    ("owner-at-start", "Alice owns billing", "Bob owns billing", 0.85, C),
    ("owner-in-passive", "Billing is owned by Alice", "Billing is owned by Bob", 0.9, C),
    ("no-longer", "We no longer use Redis for sessions", "We use Redis for sessions", 0.9, C),
    ("dont", "We don't use Redis for sessions", "We use Redis for sessions", 0.92, C),
    ("preference-slot", "Alice prefers tabs", "Alice prefers spaces", 0.85, C),
    ("antonym", "Alice dislikes olives", "Alice likes olives", 0.85, C),
    ("quoted", 'The API key lives in "prod-secrets"', 'The API key lives in "ops-vault"', 0.9, C),
    ("switched-from", "We switched the team chat from Slack to Discord", "The team chat is Slack", 0.8, C),
    ("russian-negation", "Я не пью кофе", "Я пью кофе", 0.9, C),
    ("listens-on-port", "The proxy listens on port 3128", "The proxy listens on port 8888", 0.94, C),
    # unclear: same subject, but not one clean difference
    ("two-values", "We deploy on Fridays at 16:00", "We deploy on Mondays at 9:00", 0.88, U),
    ("two-values-versions", "Postgres 14 runs on staging-db-1", "Postgres 16 runs on staging-db-2", 0.9, U),
    ("hedged", "Staging probably runs Postgres 15", "Staging runs Postgres 16", 0.9, U),
    ("negation-plus-more", "We don't use Redis for caching anymore, we use Valkey", "We use Redis for caching",
     0.85, U),
    ("word-not-value", "The deploy script is fragile", "The deploy script is fast", 0.86, U),
    ("similarity-only", "Reviews need two approvals", "Merges require a second reviewer", 0.85, U),
    # a word at sentence start before its verb: another subject when the object is one many may
    # have (two environments on one Redis), unclear when one holder fills it (maybe an update)
    ("sentence-start-subjects", "Staging uses Redis 7", "Production uses Redis 7", 0.9, P),
    ("sentence-start-not-name", "Buildkite runs our CI", "Jenkins runs our CI", 0.9, U),
    ("swapped-roles", "Alice reports to Bob", "Bob reports to Alice", 0.95, U),
    ("qualified", "We deploy on Fridays except in December", "We deploy on Fridays", 0.88, U),
    ("same-project-other-figures", "The monthly budget for Orion is 367 thousand euros, approved by Omar in June",
     "The monthly budget for Orion is 319 thousand euros, approved by Mei in May", 0.95, U),
    ("one-pipeline-other-tool", "Deploys of gamma-57 go through Buildkite and take about 10 minutes",
     "Deploys of gamma-57 go through GitHub Actions and take about 354 minutes", 0.95, U),
    ("one-service-other-place", "Our billing service runs in Paris on 5 servers",
     "Our billing service runs in Berlin on 3 servers", 0.9, U),
    # compatible: different facts that can both hold
    ("different-attribute", "Staging runs Postgres 16", "Staging runs in eu-west-1", 0.7, P),
    ("additive-likes", "Alice likes tea", "Alice likes biscuits", 0.7, P),
    ("additive-speaks", "Alice speaks French", "Alice speaks Italian", 0.75, P),
    ("additive-visits", "Alice visited Rome in 2019", "Alice visited Paris in 2021", 0.75, P),
    ("owns-two-things", "Alice owns search", "Alice owns billing", 0.8, P),
    ("day-vs-tool", "We deploy with Helm", "We deploy on Fridays", 0.72, P),
    ("time-vs-room", "Standup is in room 4B", "Standup is at 9:30", 0.7, P),
    ("adds-detail", "Standup is at 9:30 in the small meeting room", "Standup is at 9:30", 0.85, P),
    ("unrelated", "The cat is called Miso", "We deploy on Fridays", 0.3, P),
    ("other-project-other-figures", "The monthly budget for Aurora is 54 thousand euros, approved by Omar in June",
     "The monthly budget for Orion is 319 thousand euros, approved by Mei in May", 0.95, P),
    ("other-job-other-schedule", "The invoice job of kappa-44 runs every Sunday at 15:00 UTC and emails Liam Garcia",
     "The invoice job of kappa-53 runs every Wednesday at 20:00 UTC and emails Olga Weber", 0.95, P),
    ("other-pipeline-other-tool", "Deploys of theta-47 go through Buildkite and take about 10 minutes",
     "Deploys of gamma-57 go through GitHub Actions and take about 354 minutes", 0.95, P),
    ("other-service-other-port", "Service beta-3 listens on port 9000 in prod",
     "Service alpha-17 listens on port 8123 in staging", 0.95, P),
    # only the thing a statement is about differs: two things, both true (superseding would hide one)
    ("other-instance-before-a-shared-value", "Never reboot web-12 during office hours; warn channel ops-3 first",
     "Never reboot web-9 during office hours; warn channel ops-3 first", 0.9, P),
    ("same-instance-new-value", "Never reboot web-12 during office hours; warn channel ops-4 first",
     "Never reboot web-12 during office hours; warn channel ops-3 first", 0.93, C),
    ("other-place-with-its-verb", "The ferry to Tangier departs at 14:00 from pier 2",
     "The ferry to Algeciras departs at 14:00 from pier 2", 0.9, P),
    ("same-place-new-time", "The ferry to Tangier departs at 15:30 from pier 2",
     "The ferry to Tangier departs at 14:00 from pier 2", 0.93, C),
    ("other-client-passive", "Reports for Umbrella are mailed every Monday",
     "Reports for Hooli are mailed every Monday", 0.9, P),
    ("name-filling-a-role", "For releases, Buildkite is our CI system", "For releases, Jenkins is our CI system",
     0.9, C),
    ("same-choice-other-context", "I prefer green tea over black tea in winter",
     "I prefer green tea over black tea in summer", 0.9, P),
    ("other-choice-same-context", "I prefer green tea in winter", "I prefer black tea in winter", 0.9, C),
    ("hyphenated-names-differ-by-a-letter", "Volume disk-a is nearly full", "Volume disk-b is nearly full", 0.9, U),
    # chat lines the model puts close together (same people, same tone), saying different things
    ("chat-lines-with-many-words-apart", "Nadia: Thanks, Omar! Baking bread every weekend keeps me calm and happy.",
     "Omar: Wow, Nadia! That crust looks perfect, your kitchen must smell amazing.", 0.9, P),
    ("chat-lines-one-negated", "Omar: Cheers, Nadia! Can't wait to try your sourdough recipe this weekend.",
     "Omar: Great chat, Nadia! Hope the bakery opening goes smoothly next week.", 0.9, P),
    # the same fact of two people at sentence start: two subjects, even after a role word whose
    # object is indefinite (anyone may own a red bicycle; one person owns the billing service)
    ("role-word-with-an-indefinite-object", "Judy owns a red bicycle", "Heidi owns a red bicycle", 0.9, P),
    ("two-people-doing-the-same", "Dan keeps bees on the roof", "Bob keeps bees on the roof", 0.9, P),
    ("two-places-running-the-same", "Production serves Postgres 16 on port 5433",
     "Staging serves Postgres 16 on port 5433", 0.9, P),
    ("role-word-with-one-object", "Priya owns the billing service", "Tomas owns the billing service", 0.9, C),
    ("role-word-with-a-count", "Ines maintains two repos for the app", "Raul maintains two repos for the app",
     0.9, P),
    # a word naming which thing, changed together with that thing's own value
    ("which-service-and-its-port", "The payments service listens on port 8082",
     "The orders service listens on port 8081", 0.9, P),
    ("which-cluster-and-its-size", "The production cluster has 5 nodes", "The staging cluster has 3 nodes", 0.9, P),
    ("the-same-service-a-new-port", "The orders service listens on port 8082",
     "The orders service listens on port 8081", 0.9, C),
    # before / after: the opposite order, not the same statement again
    ("before-and-after", "Always run migrations after deploying the API",
     "Always run migrations before deploying the API", 0.9, U),
    # a number right after the first word may say which one (a room, an incident) or a version:
    # contested, never superseded
    ("a-numbered-thing", "Room 14 has a projector", "Room 12 has a projector", 0.9, U),
    ("a-numbered-incident", "Incident 4522 was caused by a full disk on db-2",
     "Incident 4521 was caused by a full disk on db-2", 0.9, U),
    # the same words with their roles exchanged say something else: contested, never a repeat
    # (a repeat drops the new fact and reinforces the old one)
    ("negation-moved", "Use npm, never pnpm.", "Use pnpm, never npm.", 0.95, U),
    ("negation-moved-twice", "Never use pnpm, always use npm", "Always use pnpm, never use npm", 0.95, U),
    ("roles-exchanged", "db2 is the primary and db1 is the replica", "db1 is the primary and db2 is the replica",
     0.95, U),
    ("caller-and-called", "The backend calls the frontend", "The frontend calls the backend", 0.95, U),
    ("ports-exchanged", "Port 8443 is for HTTP and 8080 is for HTTPS", "Port 8080 is for HTTP and 8443 is for HTTPS",
     0.95, U),
    ("comparison-reversed", "Production is faster than staging", "Staging is faster than production", 0.95, U),
    # ... but the passive names its roles the other way round, and a negation said another way is the same
    ("passive-of-the-same", "The weekly design review is chaired by Ana", "Ana chairs the weekly design review",
     0.9, D),
    ("not-or-never", "We never deploy on Fridays", "We do not deploy on Fridays", 0.9, D),
    # a number from 1900 to 2099 is a figure beside another figure, not a year
    ("a-figure-that-looks-like-a-year", "The checkout service handles about 2000 requests per second",
     "The checkout service handles about 1200 requests per second", 0.9, C),
    ("seats-that-look-like-a-year", "Initrode has 2000 seats", "Initrode has 4000 seats", 0.9, C),
    # a replacement naming what the older one asserts, where the older one says more: contested (it
    # was "different subjects": both in force, the stale one first), never superseded on a guess
    ("replaced-with-more-said-before", "We moved the docs from Confluence to Notion",
     "The docs live in Confluence under the ENG space", 0.5, U),
    ("switched-with-nothing-else-shared", "We switched from Yarn to Bun", "Our monorepo installs with Yarn", 0.5, U),
    # ... and when what is given up and taken are ordinary words (lowercase tools, frequencies)
    ("switched-between-lowercase-tools", "We switched the docs build from make to ninja",
     "The docs build runs with make", 0.6, C),
    ("moved-from-weekly-to-daily", "We moved the retro from weekly to biweekly", "The retro is weekly", 0.6, C),
    # one time written two ways is the same fact (it was superseded: "numbers differ: ten vs 10:00")
    ("a-time-in-words", "the weekly sync is at ten on thursdays", "The weekly sync is at 10:00 on Thursdays", 0.9, D),
    # weekdays in Spanish, French, German and Italian are days (it was "unclear": two words)
    ("a-spanish-weekday-moved", "El coro ensaya los jueves", "El coro ensaya los miércoles", 0.9, C),
    ("a-french-weekday-moved", "La chorale répète le jeudi", "La chorale répète le mardi", 0.9, C),
    # a label a note opens with is not what it says: the same fact again
    ("a-note-label", "Note: The VPN bill for May was 120 euros", "The VPN bill for May was 120 euros", 0.95, D),
    ("a-reminder-label", "Reminder - the VPN bill for May was 120 euros", "The VPN bill for May was 120 euros",
     0.95, D),
]


@pytest.mark.parametrize(("new", "old", "similarity", "relation"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_classify(new: str, old: str, similarity: float, relation: str) -> None:
    verdict = classify(new, old, similarity)
    assert verdict.relation == relation, verdict.reason
    assert verdict.reason and "\n" not in verdict.reason


@pytest.mark.parametrize(("new", "old", "reason"), [
    ("Staging runs Postgres 14", "Staging runs Postgres 16", "numbers differ: 14 vs 16"),
    ("We deploy on Tuesdays", "We deploy on Fridays", "days differ: Tuesdays vs Fridays"),
    ("Alice does not drink coffee", "Alice drinks coffee", "negation: 'does not drink' vs 'drinks'"),
    ("Alice drinks coffee", "Alice does not drink coffee", "negation: 'drinks' vs 'does not drink'"),
    ("Alice dislikes olives", "Alice likes olives", "opposites: 'dislikes' vs 'likes'"),
    ("Staging runs Postgres 16", "Staging runs Postgres 16", "same statement"),
], ids=["numbers", "days", "negation-new", "negation-old", "antonym", "same"])
def test_reason_names_the_difference(new: str, old: str, reason: str) -> None:
    assert classify(new, old, 0.9).reason == reason


def test_low_similarity_and_overlap_is_compatible_even_with_a_value() -> None:
    assert classify("Port 8080 is open", "We deploy on Fridays at 16:00", 0.2).relation == P


@pytest.mark.parametrize(("new", "old"), [("", "Staging runs Postgres 16"), ("!!!", "???"), ("and the", "of a")],
                         ids=["empty", "punctuation", "stopwords"])
def test_nothing_to_compare_is_compatible(new: str, old: str) -> None:
    assert classify(new, old, 0.9).relation == P


def test_a_lone_value_with_no_shared_context_is_not_a_conflict() -> None:
    assert classify("Kim", "Ana", 0.9).relation == U


def test_high_similarity_alone_is_never_a_conflict() -> None:
    assert classify("Our retro happens biweekly", "Sprint reviews are held on alternate weeks", 0.92).relation != C


def test_verdict_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        classify("a", "b", 0.5).relation = "conflict"  # type: ignore[misc]
    assert Verdict("duplicate", "same statement") == Verdict("duplicate", "same statement")


def test_module_is_pure_stdlib() -> None:
    tree = ast.parse(Path(conflicts.__file__).read_text(encoding="utf-8"))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "re", "unicodedata", "dataclasses", "functools"}, imported


def test_a_text_parsed_once_gives_the_same_verdicts_in_any_order() -> None:
    """Parses are cached per text, and classify re-reads some tokens in place ("Deploys" at
    the start is the word deploy when the other text has it, else maybe a name): each call
    gets its own copy, so one comparison never changes the next."""
    new, other = "Deploys go out at noon", "Releases go out at noon"
    alone = conflicts.classify(new, other, 0.8)
    conflicts._parse_once.cache_clear()
    conflicts.classify(new, "We deploy at noon", 0.8)  # reads "Deploys" as the word deploy
    after = conflicts.classify(new, other, 0.8)
    assert (after.relation, after.reason) == (alone.relation, alone.reason)
    assert "may not be names" in alone.reason


def test_test_pairs_are_not_bench_pairs() -> None:
    bench = Path(__file__).resolve().parents[1] / "bench" / "data" / "conflict_pairs.jsonl"
    if not bench.exists():
        pytest.skip("no bench data in this checkout")
    rows = [json.loads(line) for line in bench.read_text(encoding="utf-8").splitlines() if line.strip()]
    bench_pairs = {(r["new"], r["old"]) for r in rows}
    assert not bench_pairs & {(c[1], c[2]) for c in CASES}
