"""The names other memory tools' users type: aliases and small commands over vaultmem's operations."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from vaultmem.cli.main import cli
from vaultmem.vault import init_vault

from .conftest import Cli


def test_help_lists_every_seed_name():
    text = CliRunner().invoke(cli, ["--help"]).output
    for name in ("search", "skills", "export-all", "import-vault", "success", "tags", "supersede"):
        assert f"  {name} " in text, name
    assert "Same as `recall`" in text and "Same as `import`" in text


def test_search_is_recall_under_another_name(run):
    note = run.json("add", "Staging runs Postgres 16 on port 5433", "-n", "infra")
    assert [h["id"] for h in run.json("search", "staging postgres port")] == \
           [h["id"] for h in run.json("recall", "staging postgres port")] == [note["id"]]
    help_text = run("search", "--help").output
    assert "Same as `vaultmem recall`" in help_text
    # recall's own help below it, laid out as recall --help lays it out (not indented as in its docstring)
    assert "\n  Asks the vault's watcher when one runs" in help_text


def test_success_is_a_good_grade(run, vault_dir):
    note = run.json("add", "Use uv to install the tools", "-n", "dev")
    graded = run.json("success", note["id"])
    assert graded["reps"] == 1 and graded["strength"] == 0.65
    assert '"rating": "good"' in (vault_dir / ".vaultmem" / "reviews.jsonl").read_text()


def test_skills_strongest_first_with_a_bar(run):
    weak = run.json("learn", "Rotate the logs", "--steps", "1. logrotate -f", "-n", "ops")
    strong = run.json("learn", "Roll back a deploy", "--steps", "1. kubectl rollout undo", "-n", "ops")
    run.json("add", "Not a skill", "-n", "ops")
    run("success", strong["id"])
    listed = run.json("skills")
    assert [s["id"] for s in listed] == [strong["id"], weak["id"]]
    assert listed[0]["bar"] == "██████░░░░" and listed[1]["bar"] == "█████░░░░░"
    text = run("skills").output
    assert "██████░░░░  0.65" in text and "Roll back a deploy" in text


def test_tags_with_counts_and_prefix(run):
    run.json("add", "Postgres is on 5433", "-n", "x", "--tags", "infra/db,postgres")
    run.json("add", "Redis is on 6380", "-n", "x", "--tags", "infra/cache")
    run.json("add", "Lunch at noon", "-n", "x", "--tags", "team")
    assert run.json("tags") == [{"tag": "infra/cache", "notes": 1}, {"tag": "infra/db", "notes": 1},
                                {"tag": "postgres", "notes": 1}, {"tag": "team", "notes": 1}]
    assert [t["tag"] for t in run.json("tags", "infra")] == ["infra/cache", "infra/db"]
    assert "no tags starting with 'zzz'" in run("tags", "zzz").output


def test_export_all_then_import_vault_gives_back_the_same_files(run, vault_dir, tmp_path):
    kept = run.json("add", "Deploys need two approvals", "-n", "process", "--tags", "deploy")
    gone = run.json("add", "The old wiki is on confluence", "-n", "docs")
    run("archive", gone["id"])
    folder = tmp_path / "backup"
    assert run.json("export-all", str(folder))["exported"] == 2
    assert (folder / kept["path"]).read_bytes() == (vault_dir / kept["path"]).read_bytes()
    again = run.json("export-all", str(folder))
    assert again["exported"] == 2 and again["left_out"] == [], "an identical copy is not an error"
    (folder / kept["path"]).write_text("changed by hand\n")
    stale = json.loads(run("export-all", str(folder), "--json", expect=3).stdout)  # not a copy: said, exit 3
    assert stale["left_out"][0]["path"] == kept["path"], "never overwritten"
    (folder / kept["path"]).write_bytes((vault_dir / kept["path"]).read_bytes())

    other = tmp_path / "other"
    init_vault(other)
    report = Cli(other).json("import-vault", str(folder))
    assert report["counts"]["added"] == 2
    for rel in (kept["path"], f"archive/{gone['path']}"):
        assert (other / rel).read_bytes() == (vault_dir / rel).read_bytes()
    run("export-all", str(vault_dir / "backup"), expect=2)


def test_supersede_two_existing_notes(run):
    old = run.json("add", "The API gateway is Kong", "-n", "infra", "--no-supersede")
    new = run.json("add", "We moved the API gateway to Envoy", "-n", "infra", "--no-supersede")
    done = run.json("supersede", old["id"], new["id"])
    assert done["superseded"]["status"] == "superseded"
    assert done["superseded"]["superseded_by"] == f"[[{Path(new['path']).stem}]]"
    assert done["by"]["supersedes"] == f"[[{Path(old['path']).stem}]]"
    assert [h["id"] for h in run.json("recall", "API gateway")] == [new["id"]]
    assert old["id"] in {h["id"] for h in run.json("recall", "API gateway", "--history")}
    assert "cannot supersede itself" in run("supersede", new["id"], new["id"], expect=2).output
    assert "is itself superseded" in run("supersede", new["id"], old["id"], expect=2).output
    run("supersede", "nope", new["id"], expect=1)


FAKE_CLAUDE = """#!/bin/sh
echo "claude $*" >> "$FAKE_LOG"
if [ "$1 $2" = "mcp get" ]; then [ -f "$FAKE_REGISTERED" ] && exit 0; echo "No MCP server found" >&2; exit 1; fi
if [ "$1 $2" = "mcp add" ]; then touch "$FAKE_REGISTERED"; fi
exit 0
"""


def _init(*args, env=None):
    import json

    result = CliRunner().invoke(cli, ["init", *args, "--json"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_init_claude_code_for_a_project_in_one_step(tmp_path, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"other": {"command": "other-server"}}}\n')
    first = _init("agent-vault", "--claude-code", "--project")
    root = tmp_path / "agent-vault"
    assert (root / ".vaultmem" / "config.yaml").exists()
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    commands = [h["command"] for groups in settings["hooks"].values() for g in groups for h in g["hooks"]]
    assert commands and all(c.endswith(f"--vault {root}") for c in commands), "the hooks use this vault"
    servers = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert servers["other"] == {"command": "other-server"}
    assert servers["vaultmem"]["args"][-3:] == ["mcp", "--vault", str(root)]
    assert first["hooks"]["changed"] and first["mcp"]["changed"]
    again = _init("agent-vault", "--claude-code", "--project")
    assert not again["hooks"]["changed"] and not again["mcp"]["changed"] and again["added"] == []


def test_init_claude_code_registers_through_the_claude_program(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # --local writes the project's .claude/settings.local.json
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(FAKE_CLAUDE)
    (bin_dir / "claude").chmod(0o755)
    log = tmp_path / "claude.log"
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("FAKE_REGISTERED", str(tmp_path / "registered"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))
    done = _init(str(tmp_path / "v"), "--claude-code")
    assert done["mcp"]["changed"] and (tmp_path / "claude-home" / "settings.json").exists()
    assert f"claude mcp add --scope user vaultmem -- {sys.executable} -m vaultmem mcp --vault {tmp_path / 'v'}" \
           in log.read_text()
    again = _init(str(tmp_path / "v"), "--claude-code")
    assert not again["mcp"]["changed"] and log.read_text().count("mcp add") == 1

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    todo = _init(str(tmp_path / "w"), "--claude-code", "--local")["mcp"]["todo"]
    assert todo.startswith("claude mcp add --scope local vaultmem -- ")
