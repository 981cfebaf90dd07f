"""The CLI as agents and people use it: JSON, exit codes, discovery, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vaultmem.cli.main import cli

from .conftest import run_process


def test_every_command_is_documented_with_an_example():
    for name, command in cli.commands.items():
        assert command.help and "Example" in command.help, f"{name} lacks help with an example"


def test_add_recall_grade_show_round_trip_in_json(run):
    added = run.json("add", "Our CI runs on GitHub Actions with self-hosted runners", "-n", "work/ci",
                     "--tags", "ci", "--created", "2025-03-01T08:00:00")
    assert added["created"] == "2025-03-01T08:00:00" and added["namespace"] == "work/ci"
    run.json("add", "Lunch is at noon on Fridays", "-n", "office")
    hits = run.json("recall", "which CI runners do we use")
    assert hits[0]["id"] == added["id"] and hits[0]["signals"]["bm25_rank"] == 1
    assert run.json("recall", "runners", "-n", "work")[0]["id"] == added["id"]
    assert run.json("recall", "runners", "-n", "office") == []
    assert run.json("recall", "runners", "--type", "skill") == []
    graded = run.json("grade", added["id"], "good")
    assert graded["reps"] == 1 and graded["label"] == "learning"
    shown = run.json("show", added["id"])
    assert shown["text"] == "Our CI runs on GitHub Actions with self-hosted runners"


def test_created_with_offset_is_stored_in_utc(run):
    added = run.json("add", "Met the Berlin team", "-n", "x", "--created", "2025-06-01T10:00:00+02:00")
    assert added["created"] == "2025-06-01T08:00:00"
    run("add", "Bad date", "-n", "x", "--created", "last week", expect=2)


def test_learn_writes_the_four_sections_and_recall_indexes_them(run, vault_dir):
    skill = run.json("learn", "Rotate the API keys", "--trigger", "a key leaks or turns 90 days old",
                     "--steps", "1. create new key\n2. deploy\n3. revoke old key",
                     "--outcome", "no client errors", "--lessons", "revoke only after the deploy is verified",
                     "-n", "security")
    text = (vault_dir / skill["path"]).read_text()
    for section in ("## Trigger", "## Steps", "## Outcome", "## Lessons"):
        assert section in text
    assert skill["path"].startswith("skills/security/") and skill["type"] == "skill"
    assert run.json("recall", "what to do when a key leaks", "--type", "skill")[0]["id"] == skill["id"]
    assert run.json("recall", "revoke verified deploy")[0]["id"] == skill["id"]


def test_a_heading_inside_a_skill_section_stays_in_it(run, vault_dir):
    """A trigger given as markdown ("## When ...") kept its `##` and became a section of its own:
    the skill lost its trigger (skills, prompt and the embedding showed the title alone)."""
    skill = run.json("learn", "CI triage", "--trigger", "## When\nthe build on main is red",
                     "--steps", "1. look at the first failure\n# Then\n2. fix or revert", "-n", "work")
    text = (vault_dir / skill["path"]).read_text()
    assert text.count("## Trigger") == 1 and text.count("\n## Steps") == 1 and "### When" in text
    assert f"[{skill['id']}] (work, new) CI triage (when: When the build on main is red)" in run("prompt").stdout


def test_missing_namespace_is_one_line_with_the_fix(run):
    result = run("add", "No namespace", expect=2)
    assert result.stderr.count("\n") == 1 and "-n NAMESPACE" in result.stderr
    result = run("add", "Bad namespace", "-n", "../escape", expect=2)
    assert "namespace" in result.stderr


def test_quiet_prints_nothing_and_keeps_the_exit_code(run):
    assert run("add", "Quiet", "-n", "x", "-q").output == ""
    result = run("show", "missing", "-q", expect=1)
    assert result.output == ""


def test_list_filters_and_top(run):
    a = run.json("add", "Alpha", "-n", "a", "--tags", "one", "--tier", "L2")
    b = run.json("add", "Beta", "-n", "b/sub", "--tags", "two")
    run("grade", b["id"], "good")
    assert [n["id"] for n in run.json("list", "-n", "b")] == [b["id"]]
    assert [n["id"] for n in run.json("list", "--tag", "one")] == [a["id"]]
    assert [n["id"] for n in run.json("list", "--tier", "L2")] == [a["id"]]
    assert [n["id"] for n in run.json("top", "--n", "1")] == [b["id"]]


@pytest.mark.parametrize("wanted", ["work", "work/", "/work", " work/ ", "work/infra", "work/infra/"])
def test_namespace_filters_take_the_namespace_and_the_ones_below_it_however_typed(run, wanted):
    infra = run.json("add", "The build cache lives on the infra NAS", "-n", "work/infra")
    run.json("add", "Workshop on Friday", "-n", "workshop")  # shares the prefix "work", not the namespace
    assert [n["id"] for n in run.json("top", "-n", wanted)] == [infra["id"]]
    assert [m["id"] for m in run.json("prompt", "-n", wanted)["memories"]] == [infra["id"]]
    assert [n["id"] for n in run.json("list", "-n", wanted)] == [infra["id"]]
    assert [h["id"] for h in run.json("recall", "build cache NAS", "-n", wanted)] == [infra["id"]]


def test_prompt_puts_durable_tiers_first_and_respects_the_budget(run):
    low = run.json("add", "An ordinary fact", "-n", "x")
    high = run.json("add", "A durable rule", "-n", "x", "--tier", "L3")
    block = run.json("prompt")
    assert [m["id"] for m in block["memories"]] == [high["id"], low["id"]]
    assert f"[{high['id']}]" in block["text"]
    for i in range(50):
        run("add", f"Filler memory number {i} with some words to take up room", "-n", "filler")
    small = run.json("prompt", "--max-tokens", "100")
    assert len(small["text"]) <= 400 and small["memories"][0]["id"] == high["id"]


def test_prompt_says_when_its_budget_holds_no_memory_instead_of_no_memories_yet(run):
    run("add", " ".join(["The deployment checklist includes a step"] * 12), "-n", "x")
    result = run("prompt", "--max-tokens", "50")
    assert "none of the 1 memories fits in 50 tokens" in result.stdout and "no memories yet" not in result.stdout
    assert "deployment checklist" in run("prompt").stdout


def test_broken_note_is_reported_by_health_and_skipped_by_recall(run, vault_dir):
    good = run.json("add", "Healthy memory about kubernetes", "-n", "x")
    bad = vault_dir / "memories" / "x" / "broken.md"
    bad.write_text("---\nid: [oops\n---\nkubernetes broken note\n")
    junk = vault_dir / "memories" / "x" / "junk.md"
    junk.write_bytes(b"\x00\x01\x02binary")
    before = bad.read_bytes()
    result = run("recall", "kubernetes", "--json")
    assert [h["id"] for h in json.loads(result.stdout)] == [good["id"]]
    assert "warning" in result.stderr and "health" in result.stderr
    report = run.json("health")
    paths = {p["path"]: p["problem"] for p in report["problems"]}
    assert "broken YAML" in paths["memories/x/broken.md"] and "binary" in paths["memories/x/junk.md"]
    for args in (["decay"], ["tags"], ["skills"], ["verify"], ["list"], ["prompt"]):
        said = run(*args, now="2027-01-01T00:00:00")  # each names the skipped notes, as recall does
        assert "warning" in said.stderr and "health" in said.stderr, args
    graded = run("grade", "broken", "good", expect=2)
    assert "memories/x/broken.md" in graded.stderr and "broken YAML" in graded.stderr
    assert bad.read_bytes() == before, "a broken note is never rewritten"


def test_oversized_note_is_skipped_with_the_limit_named(run, vault_dir):
    big = vault_dir / "memories" / "x" / "huge.md"
    big.parent.mkdir(parents=True)
    big.write_text("word " * 300_000)
    problems = run.json("health")["problems"]
    assert "max_note_bytes" in problems[0]["problem"]


def test_add_dash_reads_the_text_from_standard_input(vault_dir):
    """`vaultmem add - -n x` takes the text another program pipes in, not the text "-"."""
    text = "The on-call handbook says: page the secondary after 10 minutes without an ack.\nEscalate after 30."
    result = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(vault_dir), "--json", "add", "-",
                             "-n", "ops"], input=text, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    note = json.loads(result.stdout)
    body = (vault_dir / note["path"]).read_text().split("---\n", 2)[2]
    assert body.strip() == text and not note["path"].endswith("/note.md")


def test_show_lists_the_properties_a_person_added_too(run, vault_dir):
    """A person's own properties (Obsidian's aliases, cssclasses) are kept in the file; `show`
    lists them beside vaultmem's instead of hiding them."""
    note = run.json("add", "The wiki lives at wiki.internal", "-n", "x")
    path = vault_dir / note["path"]
    path.write_text(path.read_text().replace("type: memory\n", "type: memory\naliases:\n  - wiki\ncssclasses: wide\n"))
    shown = run.json("show", note["id"])
    assert shown["other_properties"] == {"aliases": ["wiki"], "cssclasses": "wide"}
    text = run("show", note["id"]).stdout
    assert "aliases: wiki" in text and "cssclasses: wide" in text
    assert "other_properties" not in run.json("show", run.json("add", "Plain", "-n", "x")["id"])


def test_init_on_existing_obsidian_vault_adds_only_what_is_missing(tmp_path):
    root = tmp_path / "obsidian"
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "types.json").write_text(json.dumps({"types": {"strength": "text", "mood": "text"}}))
    (root / ".obsidian" / "app.json").write_text('{"theme": "dark"}')
    (root / "Daily.md").write_text("my note")
    (root / ".gitignore").write_text("*.tmp\n")
    run_process("init", str(root))
    types = json.loads((root / ".obsidian" / "types.json").read_text())["types"]
    assert types["strength"] == "text" and types["mood"] == "text" and types["due"] == "datetime"
    assert (root / ".obsidian" / "app.json").read_text() == '{"theme": "dark"}'
    assert (root / "Daily.md").read_text() == "my note"
    gitignore = (root / ".gitignore").read_text()
    assert gitignore.startswith("*.tmp\n") and ".vaultmem/cache/" in gitignore
    second = run_process("init", str(root), "--json")
    assert json.loads(second.stdout)["added"] == []


def in_folder(monkeypatch, folder, *args, env=None):
    """`vaultmem ARGS` run from `folder` through click's runner (discovery reads the working
    folder and VAULTMEM_VAULT when the command runs, in any process)."""
    monkeypatch.chdir(folder)
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_discovery_order(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    run_process("init", str(a))
    in_folder(monkeypatch, tmp_path, "init", str(b))
    (a / "deep" / "er").mkdir(parents=True)
    in_folder(monkeypatch, a / "deep" / "er", "add", "In A", "-n", "x")
    assert len(json.loads(in_folder(monkeypatch, a, "list", "--json").stdout)) == 1
    assert len(json.loads(in_folder(monkeypatch, a, "list", "--json", env={"VAULTMEM_VAULT": str(b)}).stdout)) == 0
    assert len(json.loads(in_folder(monkeypatch, a, "--vault", str(a), "list", "--json",
                                    env={"VAULTMEM_VAULT": str(b)}).stdout)) == 1
    assert len(json.loads(in_folder(monkeypatch, a, "list", "--vault", str(a), "--json",
                                    env={"VAULTMEM_VAULT": str(b)}).stdout)) == 1
    # The same discovery in a `vaultmem` process of its own: found from a folder inside the vault.
    assert len(json.loads(run_process("list", "--json", cwd=a / "deep").stdout)) == 1


def test_default_vault_is_created_on_first_use(tmp_path):
    data_home = tmp_path / "xdg-data"
    out = run_process("add", "Works with no set-up", "-n", "first", "--json", cwd=tmp_path)
    path = Path(json.loads(out.stdout)["path"])
    vault_root = data_home / "vaultmem" / "vault"
    assert (vault_root / ".vaultmem" / "config.yaml").exists() and (vault_root / path).exists()


def test_unknown_vault_path_is_refused_clearly(tmp_path):
    result = run_process("--vault", str(tmp_path / "nowhere"), "list", check=False)
    assert result.returncode == 1 and "vaultmem init" in result.stderr and "Traceback" not in result.stderr


def test_subprocess_errors_never_print_tracebacks(vault_dir):
    for args, code in ((["grade", "zzz", "good"], 1), (["grade"], 2), (["add", "x"], 2), (["nonsense"], 2)):
        result = run_process("--vault", str(vault_dir), *args, check=False)
        assert result.returncode == code, (args, result.stderr)
        assert "Traceback" not in result.stderr


def _boom(exc):
    def raise_it(*_args, **_kwargs):
        raise exc
    return raise_it


@pytest.mark.parametrize(("args", "code", "fails"), [
    (["show", "missing"], 1, None),  # NotFound
    (["why", "missing"], 1, None),
    (["correct", "missing", "the right text"], 1, None),
    (["import", "/no/such/file.jsonl"], 1, None),
    (["add", "no namespace"], 2, None),  # BadInput
    (["grade", "missing", "splendid"], 2, None),
    (["promote", "--tier", "L2"], 2, None),
    (["hooks", "install", "--user", "--project", "--dry-run"], 2, None),  # a subgroup's command
    (["add", "x", "-n", "work"], 3, ("add", "ConflictError", "kept changing")),
    (["list"], 70, ("notes", "RuntimeError", "disk on fire")),  # EXIT_INTERNAL
    (["list"], 130, ("notes", "KeyboardInterrupt", "")),  # EXIT_INTERRUPTED
])
def test_each_error_exits_with_its_code_and_one_line_on_stderr(run, monkeypatch, args, code, fails):
    """Errors become exit codes in one place (VaultmemGroup.invoke): the code, one line, no traceback;
    with -q (after or before the command) the code alone."""
    from vaultmem import errors
    from vaultmem.vault import Vault

    if fails:
        method, kind, message = fails
        exc = KeyboardInterrupt() if kind == "KeyboardInterrupt" else getattr(errors, kind, RuntimeError)(message)
        monkeypatch.setattr(Vault, method, _boom(exc))
    result = run(*args, expect=code)
    assert result.stdout == "" and result.stderr.startswith("vaultmem: ") and result.stderr.count("\n") == 1, \
        result.stderr
    assert "Traceback" not in result.stderr
    assert {70: "internal error: RuntimeError: disk on fire", 130: "interrupted"}.get(code, "") in result.stderr
    for quiet in ([*args, "-q"], ["-q", *args]):
        result = run(*quiet, expect=code)
        assert result.output == "", (quiet, result.output)


def test_bad_config_is_reported_with_the_file(vault_dir):
    (vault_dir / ".vaultmem" / "config.yaml").write_text("strength:\n  intial: 0.4\n")
    result = run_process("--vault", str(vault_dir), "list", check=False)
    assert result.returncode == 2 and "config.yaml" in result.stderr and "strength.intial" in result.stderr


@pytest.mark.parametrize("setting, expected", [
    ("recall:\n  top_k: 0\n", "recall.top_k should be from 1 to 1000, got 0"),
    ("notes:\n  default_tier: L7\n", "notes.default_tier should be one of L0, L1, L2, L3, got 'L7'"),
    ("strength:\n  initial: 5\n", "strength.initial should be from 0.0 to 1.0, got 5"),
    ("notes:\n  max_note_bytes: 12.5\n", "notes.max_note_bytes should be a whole number, got 12.5"),
    ("scheduling:\n  desired_retention: .nan\n", "scheduling.desired_retention should be from 0.01 to 0.99"),
])
def test_a_config_value_out_of_its_range_is_refused_naming_it(vault_dir, setting, expected):
    """A value that would make vaultmem silently useless (every recall empty) or write notes
    out of their documented range is an error naming the setting, not a quiet default."""
    (vault_dir / ".vaultmem" / "config.yaml").write_text(setting)
    result = run_process("--vault", str(vault_dir), "recall", "anything", check=False)
    assert result.returncode == 2 and expected in result.stderr and "config.yaml" in result.stderr


def test_reading_commands_never_write_notes(run, vault_dir):
    note = run.json("add", "Read-only check", "-n", "x")
    path = vault_dir / note["path"]
    stamp = (path.stat().st_mtime_ns, path.read_bytes())
    for args in (["recall", "check"], ["list"], ["show", note["id"]], ["review"], ["top"], ["prompt"],
                 ["health"], ["decay", "--dry-run"]):
        run(*args, now="2026-06-01T00:00:00")
    assert (path.stat().st_mtime_ns, path.read_bytes()) == stamp


@pytest.mark.parametrize("command", ["add", "recall", "grade", "review", "decay", "health", "list"])
def test_help_works_for_commands(command):
    result = CliRunner().invoke(cli, [command, "--help"], catch_exceptions=False)
    assert result.exit_code == 0 and "Example:" in result.stdout


def test_a_memory_saved_today_reaches_the_prompt_of_a_vault_full_of_ungraded_ones(run):
    """Never-graded memories newest first, and what the user asked to keep before them: oldest
    first, the same old notes filled every session's budget and a new memory never showed."""
    for i in range(40):
        run("add", f"Service svc-{i:03d} listens on port {8000 + i}", "-n", "work/svc",
            now=f"2026-01-0{1 + i // 10}T{10 + i % 10}:00:00")
    explicit = run.json("add", "The release train leaves every second Thursday", "-n", "work/team", "--explicit",
                        now="2026-01-08T09:00:00")
    latest = run.json("add", "Service svc-999 listens on port 9999", "-n", "work/svc", now="2026-01-08T10:00:00")
    shown = [m["id"] for m in run.json("prompt", "--max-tokens", "120", now="2026-01-08T11:00:00")["memories"]]
    assert shown[:2] == [explicit["id"], latest["id"]]


def test_list_by_tag_reads_tags_as_obsidian_does(run):
    """`list --tag infra` takes nested tags (infra/prod) and any case, as Obsidian's tag pane does
    (and as `tags` groups them); `--tag infra/prod` only that one."""
    plain = run.json("add", "The proxy is on port 3128", "-n", "x", "--tags", "infra")["id"]
    nested = run.json("add", "The prod proxy is on port 3129", "-n", "x", "--tags", "infra/prod")["id"]
    cased = run.json("add", "The lab proxy is on port 3130", "-n", "x", "--tags", "Infra")["id"]
    run.json("add", "Lunch is at noon", "-n", "x", "--tags", "infrastructure")
    assert {n["id"] for n in run.json("list", "--tag", "infra")} == {plain, nested, cased}
    assert {n["id"] for n in run.json("list", "--tag", "#infra/prod")} == {nested}


def test_health_says_once_when_an_obsidian_vault_holds_notes_vaultmem_does_not_see(run, vault_dir):
    """`init` in an Obsidian vault leaves the person's notes where they are, outside memories/:
    they are not memories, and health says so (with the command that imports them)."""
    assert run.json("health")["warnings"] == []
    (vault_dir / "Daily").mkdir()
    (vault_dir / "Daily" / "2025-07-01.md").write_text("Met Dana.\n")
    (vault_dir / "Projects.md").write_text("Apollo, Zeus\n")
    warnings = run.json("health")["warnings"]
    assert len(warnings) == 1 and warnings[0]["path"] == "Daily/2025-07-01.md"
    assert warnings[0]["warning"].startswith("2 markdown files outside memories/") and "vaultmem import" in \
        warnings[0]["warning"]


def test_the_config_knows_the_tiers_the_notes_have():
    from vaultmem.config import _CHOICES
    from vaultmem.core.model import TIERS

    assert _CHOICES["default_tier"] == TIERS


def test_health_counts_as_not_embedded_only_texts_the_model_never_saw(run, vault_dir):
    """A decay rewrites every note's strength, not its text: the vectors still hold. Health
    said all of them were "not yet embedded" (the next recall needs no model for them)."""
    for text in ("Staging runs Postgres 16", "Deploys happen on Tuesdays", "The cache is Redis 7"):
        run("add", text, "-n", "work")
    run("recall", "staging")
    run("decay", now="2027-06-01T00:00:00")
    indexes = run.json("health")["indexes"]
    assert indexes["embeddings_stale"] == 0 and indexes["index_stale"] >= 3
    run("add", "The office wifi is on channel 6", "-n", "work")
    assert run.json("health")["indexes"]["embeddings_stale"] == 1


def test_health_does_not_call_a_link_to_an_unreadable_note_broken(run, vault_dir):
    """The correction's YAML broken by hand: health names that file's problem; the old note's
    superseded_by link still names a file that is there (it said "no note is named so now")."""
    old = run.json("add", "The billing cron runs at 02:00 UTC", "-n", "ops")
    new = run.json("correct", old["id"], "The billing cron runs at 03:00 UTC")
    path = vault_dir / new["path"]
    path.write_text(path.read_text().replace("tags:", "tags: [unclosed", 1))
    problems = run.json("health")["problems"]
    assert any(p["path"] == new["path"] for p in problems)
    assert not any("which no note is named" in p["problem"] for p in problems)


def test_a_folder_of_notes_without_its_state_is_named_not_passed_over_in_silence(tmp_path):
    """`.vaultmem/` deleted (or a copy without it), then `vaultmem reindex` in the folder: it
    rebuilt the default vault, "indexed 0 notes", and said nothing of the notes right there."""
    folder = tmp_path / "team-vault"
    (folder / "memories" / "work").mkdir(parents=True)
    (folder / "memories" / "work" / "deploys.md").write_text("Deploys happen on Tuesdays.\n")
    env = {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data"), "VAULTMEM_VAULT": ""}
    result = run_process("reindex", cwd=folder / "memories", env=env)
    assert f"{folder} holds notes but no .vaultmem/" in result.stderr and f"vaultmem init {folder}" in result.stderr
    run_process("init", str(folder), env=env)
    assert "holds notes" not in run_process("reindex", cwd=folder, env=env).stderr
