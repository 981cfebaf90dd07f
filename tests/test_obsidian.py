"""The Obsidian plugin from the Python side: `vaultmem obsidian install`, `init --obsidian`,
the shipped bundle, and a grade made by the plugin's code leaving the bytes `vaultmem grade` leaves."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vaultmem.cli.main import cli
from vaultmem.vault import Vault

PLUGIN = Path(__file__).resolve().parent.parent / "obsidian_plugin"


def invoke(*args, expect=0):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == expect, result.output
    return result


def test_install_copies_the_bundle_and_enables_it_keeping_other_plugins(vault_dir):
    (vault_dir / ".obsidian" / "community-plugins.json").write_text('[\n  "dataview",\n  "calendar"\n]')
    result = json.loads(invoke("obsidian", "install", str(vault_dir), "--json").stdout)
    target = vault_dir / ".obsidian" / "plugins" / "vaultmem"
    assert result["plugin_dir"] == str(target) and result["enabled"] is True
    for name in ("main.js", "manifest.json", "styles.css"):
        assert (target / name).read_bytes() == (PLUGIN / name).read_bytes()
    assert json.loads((vault_dir / ".obsidian" / "community-plugins.json").read_text()) == [
        "dataview", "calendar", "vaultmem"]
    again = json.loads(invoke("obsidian", "install", str(vault_dir), "--json").stdout)
    assert again["updated"] == [] and again["enabled"] is False
    assert json.loads((vault_dir / ".obsidian" / "community-plugins.json").read_text()).count("vaultmem") == 1


def test_install_refuses_a_broken_plugin_list_and_a_folder_that_is_no_vault(vault_dir, tmp_path):
    plugins = vault_dir / ".obsidian" / "community-plugins.json"
    plugins.write_text("{not json")
    result = invoke("obsidian", "install", str(vault_dir), expect=2)
    assert "community-plugins.json is not a JSON list" in result.output
    assert plugins.read_text() == "{not json"
    result = invoke("obsidian", "install", str(tmp_path / "elsewhere"), expect=1)
    assert "vaultmem init" in result.output


def test_init_offers_the_plugin_and_installs_it_with_a_flag(tmp_path):
    plain = invoke("init", str(tmp_path / "plain")).output
    assert f"vaultmem obsidian install {tmp_path / 'plain'}" in plain
    assert not (tmp_path / "plain" / ".obsidian" / "plugins").exists()
    invoke("init", str(tmp_path / "with"), "--obsidian")
    assert (tmp_path / "with" / ".obsidian" / "plugins" / "vaultmem" / "main.js").is_file()
    assert json.loads((tmp_path / "with" / ".obsidian" / "community-plugins.json").read_text()) == ["vaultmem"]


def test_the_manifest_follows_community_plugin_conventions():
    manifest = json.loads((PLUGIN / "manifest.json").read_text())
    assert manifest["id"] == "vaultmem" and manifest["isDesktopOnly"] is False
    assert json.loads((PLUGIN / "versions.json").read_text())[manifest["version"]] == manifest["minAppVersion"]
    package = json.loads((PLUGIN / "package.json").read_text())
    pinned = {**package["dependencies"], **package["devDependencies"]}
    assert all(version[0].isdigit() for version in pinned.values()), pinned
    main = (PLUGIN / "main.js").read_text()
    assert 'require("fs")' not in main and "child_process" not in main


def _closed(vault: Vault, use):
    """Use a vault, then close its catalog (the suite runs long: no file descriptor left open)."""
    try:
        return use(vault)
    finally:
        vault.forget_catalog()


def _node_grade(root: Path, rel: str, act: str, now: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "fs-grade.cjs"
    if not script.exists():
        subprocess.run([str(PLUGIN / "node_modules" / ".bin" / "esbuild"), str(PLUGIN / "test" / "fs-grade.ts"),
                        "--bundle", "--platform=node", "--format=cjs", "--log-level=warning", f"--outfile={script}"],
                       check=True, cwd=PLUGIN)
    return subprocess.run(["node", str(script), str(root), rel, act, now, "agent-vault"],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.slow
@pytest.mark.skipif(not (PLUGIN / "node_modules" / ".bin" / "esbuild").exists() or not shutil.which("node"),
                    reason="needs Node and `npm ci` in obsidian_plugin/ (make test does both)")
def test_a_grade_by_the_plugin_leaves_the_bytes_of_vaultmem_grade(tmp_path, monkeypatch):
    cli_vault, plugin_vault = tmp_path / "cli", tmp_path / "plugin"
    notes = _closed(Vault.open(cli_vault, create=True), lambda v: [v.add(text, namespace="work").note for text in (
        "Staging runs Postgres 16 on port 5433.", "Deploys freeze on Friday afternoons.")])
    shutil.copytree(cli_vault, plugin_vault)
    monkeypatch.setenv("VAULTMEM_PROJECT", "agent-vault")
    plan = [(notes[0], "good", "2026-01-05T09:20:00"), (notes[0], "hard", "2026-01-06T09:10:00"),
            (notes[1], "again", "2026-01-06T09:10:00"), (notes[0], "easy", "2026-01-20T18:00:00")]
    for note, rating, now in plan:
        monkeypatch.setenv("VAULTMEM_NOW", now)
        _closed(Vault(cli_vault), lambda v: v.grade(note.id, rating))  # what `vaultmem grade` runs
        done = _node_grade(plugin_vault, note.path, rating, now, tmp_path)
        assert done.returncode == 0, done.stderr
        for rel in (note.path, ".vaultmem/ledger.jsonl", ".vaultmem/reviews.jsonl"):
            assert (plugin_vault / rel).read_bytes() == (cli_vault / rel).read_bytes(), f"{rel} after {rating} at {now}"
    verify = _closed(Vault(plugin_vault), lambda v: v.verify(record=False))  # `vaultmem verify --strict`
    assert verify["notes"] == 2 and not (verify["breaks"] or verify["changes"] or verify["torn"] or verify["tampering"])


@pytest.mark.slow
@pytest.mark.skipif(not (PLUGIN / "node_modules" / ".bin" / "esbuild").exists() or not shutil.which("node"),
                    reason="needs Node and `npm ci` in obsidian_plugin/ (make test does both)")
def test_git_diff_after_a_plugin_grade_shows_only_the_scheduling_lines(tmp_path, monkeypatch):
    root = tmp_path / "vault"
    note = _closed(Vault.open(root, create=True),
                   lambda v: v.add("The API rate limit is 600 requests a minute.", namespace="work").note)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "vault"], cwd=root, check=True, env=env)
    assert _node_grade(root, note.path, "hard", "2026-01-05T09:03:00", tmp_path).returncode == 0
    diff = subprocess.run(["git", "diff", "-U0", "--", note.path], cwd=root, capture_output=True, text=True,
                          check=True).stdout
    changed = {line[1:].split(":")[0] for line in diff.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))}
    assert changed and changed <= {"stability", "difficulty", "due", "last_review", "reps", "updated"}, diff
    verify = _closed(Vault(root), lambda v: v.verify(record=False))
    assert not (verify["breaks"] or verify["changes"] or verify["torn"] or verify["tampering"])


def test_the_plugins_cross_language_vectors_are_what_vault_grade_writes_today():
    """The plugin's tests replay obsidian_plugin/test/vectors/grade.json; a change to how
    `vaultmem grade` writes a note must come with regenerated vectors, or the plugin would
    be held to yesterday's bytes."""
    result = subprocess.run([sys.executable, "-m", "vaultmem.integrations.obsidian_vectors", "--check"],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("is current")
