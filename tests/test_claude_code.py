"""Claude Code integration: settings merging, the hook runner driven with the JSON
Claude Code sends, transcript capture, the PreToolUse check and the skill file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vaultmem.cli.entry import check_bash
from vaultmem.cli.main import cli
from vaultmem.core.capture import observations
from vaultmem.integrations.claude_code import run_hook
from vaultmem.integrations.claude_settings import (
    BACKUP_SUFFIX,
    is_ours,
    merge_hooks,
    remove_hooks,
)
from vaultmem.vault import Vault

EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "Stop", "SessionEnd"]


def invoke(*args, env=None, expect=0):
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == expect, result.output
    return result


def ours(settings) -> dict[str, list]:
    """{event: [our hook entries]}"""
    found = {}
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for hook in group.get("hooks", []):
                if is_ours(hook.get("command")):
                    found.setdefault(event, []).append((group.get("matcher"), hook))
    return found


# ---------------------------------------------------------------- install / uninstall

def test_install_into_a_fresh_settings_file_then_again_then_uninstall(tmp_path):
    path = tmp_path / ".claude" / "settings.json"
    invoke("hooks", "install", "--claude-code", "--settings", str(path))
    settings = json.loads(path.read_text())
    found = ours(settings)
    assert sorted(found) == sorted(EVENTS) and all(len(v) == 1 for v in found.values())
    assert found["PreToolUse"][0][0] == "Bash|Write|Edit|MultiEdit" and found["SessionStart"][0][0] is None
    for [(_matcher, entry)] in found.values():
        assert entry["type"] == "command" and isinstance(entry["timeout"], int)
        assert entry["command"].startswith(sys.executable) and " -m vaultmem hook " in entry["command"]
    assert not path.with_name(path.name + BACKUP_SUFFIX).exists()  # nothing was there to back up

    before = path.read_bytes()
    again = json.loads(invoke("hooks", "install", "--claude-code", "--settings", str(path), "--json").stdout)
    assert again["changed"] is False and path.read_bytes() == before

    invoke("hooks", "uninstall", "--claude-code", "--settings", str(path))
    assert not path.exists()  # install made it, and nothing else was ever in it
    assert not path.with_name(path.name + BACKUP_SUFFIX).exists()


EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": []},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]},
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write"}]},
        ],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "cat NOTES.md"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "say hi"}]}],
    },
    "env": {"FOO": "é"},
}


def test_install_keeps_other_hooks_and_uninstall_restores_the_exact_bytes(tmp_path):
    path = tmp_path / "settings.json"
    original = json.dumps(EXISTING, indent=4, ensure_ascii=False) + "\n"
    path.write_text(original, encoding="utf-8")

    result = json.loads(invoke("hooks", "install", "--settings", str(path), "--json").stdout)
    assert result["changed"] is True and sorted(result["hooks"]) == sorted(EVENTS)
    assert Path(result["backup"]).read_text(encoding="utf-8") == original
    settings = json.loads(path.read_text(encoding="utf-8"))
    assert path.read_text().startswith('{\n    "model"')  # the file's own indent is kept
    for key in ("model", "permissions", "env"):
        assert settings[key] == EXISTING[key]
    for event, groups in EXISTING["hooks"].items():
        assert settings["hooks"][event][:len(groups)] == groups  # theirs first, untouched
    assert settings["hooks"]["PreToolUse"][2] == {"matcher": "Bash|Write|Edit|MultiEdit",
                                                  "hooks": [ours(settings)["PreToolUse"][0][1]]}
    assert settings["hooks"]["Notification"] == EXISTING["hooks"]["Notification"]
    assert all(len(v) == 1 for v in ours(settings).values())

    installed = path.read_bytes()
    invoke("hooks", "install", "--settings", str(path))
    assert path.read_bytes() == installed  # twice changes nothing

    invoke("hooks", "uninstall", "--settings", str(path))
    assert path.read_text(encoding="utf-8") == original


def test_uninstall_gives_a_hand_formatted_file_its_bytes_back_unless_it_changed_since(tmp_path):
    """A settings file a team keeps in git, formatted by hand: uninstall brings back its exact bytes
    (json.dumps would put every list on lines of its own) and leaves no backup; a file edited after
    install keeps that edit, vaultmem's hooks alone taken out."""
    path = tmp_path / "settings.json"
    original = '{\n  "model": "opus",\n  "permissions": {"allow": ["Bash(npm test:*)"], "deny": []}\n}\n'
    path.write_text(original)
    invoke("hooks", "install", "--settings", str(path))
    invoke("hooks", "uninstall", "--settings", str(path))
    assert path.read_text() == original and not path.with_name(path.name + BACKUP_SUFFIX).exists()
    invoke("hooks", "install", "--settings", str(path))
    edited = json.loads(path.read_text())
    edited["model"] = "sonnet"
    path.write_text(json.dumps(edited, indent=2) + "\n")
    invoke("hooks", "uninstall", "--settings", str(path))
    assert json.loads(path.read_text()) == {"model": "sonnet", "permissions": {"allow": ["Bash(npm test:*)"],
                                                                              "deny": []}}


def test_merge_updates_an_old_entry_in_place_and_drops_copies():
    old = {"hooks": {"SessionStart": [
        {"hooks": [{"type": "command", "command": "/old/venv/bin/vaultmem hook session-start", "timeout": 3},
                   {"type": "command", "command": "echo keep"}]},
        {"hooks": [{"type": "command", "command": "python3 -m vaultmem hook session-start"}]},
    ]}}
    merged = merge_hooks(old, "/new/python -m vaultmem")
    groups = merged["hooks"]["SessionStart"]
    assert len(groups) == 1 and groups[0]["hooks"][1] == {"type": "command", "command": "echo keep"}
    assert groups[0]["hooks"][0]["command"] == "/new/python -m vaultmem hook session-start"
    assert old["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] == 3  # the argument is not changed
    assert merge_hooks(merged, "/new/python -m vaultmem") == merged
    assert remove_hooks(merged) == {"hooks": {"SessionStart": [
        {"hooks": [{"type": "command", "command": "echo keep"}]},
    ]}}


def test_uninstall_removes_only_what_install_emptied():
    for settings in ({}, {"other": 1}, {"hooks": {"Notification": [{"hooks": [{"type": "command", "command": "x"}]}]}},
                     {"hooks": {"Stop": [{"matcher": "", "hooks": []}]}}):
        assert remove_hooks(merge_hooks(settings, "vaultmem")) == settings


def test_user_project_and_local_settings_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "claude-home"
    invoke("hooks", "install", "--claude-code", "--user", env={"CLAUDE_CONFIG_DIR": str(config)})
    assert ours(json.loads((config / "settings.json").read_text()))
    invoke("hooks", "install", "--project")
    assert ours(json.loads((tmp_path / ".claude" / "settings.json").read_text()))
    invoke("hooks", "install", "--local", "--vault", str(tmp_path / "v"))
    local = ours(json.loads((tmp_path / ".claude" / "settings.local.json").read_text()))
    assert local["Stop"][0][1]["command"].endswith(f"hook stop --vault {tmp_path / 'v'}")
    status = json.loads(invoke("hooks", "status", "--json", env={"CLAUDE_CONFIG_DIR": str(config)}).stdout)
    assert [sorted(f["hooks"]) for f in status["files"]] == [sorted(EVENTS)] * 3
    documented = invoke("hooks", "status", "--claude-code", "--json", env={"CLAUDE_CONFIG_DIR": str(config)})
    assert json.loads(documented.stdout) == status, "--claude-code is accepted, as the README writes it"
    invoke("hooks", "install", "--user", "--project", expect=2)


def test_a_symlinked_settings_file_stays_a_symlink(tmp_path):
    real = tmp_path / "dotfiles" / "claude-settings.json"
    real.parent.mkdir()
    real.write_text('{"model": "opus"}\n')
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    invoke("hooks", "install", "--settings", str(link), "--command", "vaultmem")
    assert link.is_symlink() and ours(json.loads(real.read_text()))["Stop"][0][1]["command"] == "vaultmem hook stop"
    assert link.with_name("settings.json" + BACKUP_SUFFIX).read_text() == '{"model": "opus"}\n'
    invoke("hooks", "uninstall", "--settings", str(link))
    assert link.is_symlink() and real.read_text() == '{"model": "opus"}\n'


def test_broken_settings_file_is_left_alone(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"hooks": [,]}')
    result = invoke("hooks", "install", "--settings", str(path), expect=2)
    assert "not valid JSON" in result.stderr and path.read_text() == '{"hooks": [,]}'
    assert not path.with_name(path.name + BACKUP_SUFFIX).exists()


def test_dry_run_writes_nothing(tmp_path):
    path = tmp_path / "settings.json"
    result = invoke("hooks", "install", "--settings", str(path), "--dry-run")
    assert "hook session-start" in result.stdout and not path.exists()


# ---------------------------------------------------------------- driving the hooks

def hook(event: str, payload, vault: Path | None = None, **env) -> subprocess.CompletedProcess:
    """`vaultmem hook EVENT` in a new process, with Claude Code's JSON on stdin."""
    full_env = dict(os.environ, VAULTMEM_NO_SERVER="1")
    if vault is not None:
        full_env["VAULTMEM_VAULT"] = str(vault)
    full_env.update(env)
    stdin = payload if isinstance(payload, str) else json.dumps(payload)
    result = subprocess.run([sys.executable, "-m", "vaultmem", "hook", event], input=stdin, env=full_env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def base(event: str, tmp_path: Path, **fields) -> dict:
    return {"session_id": "9f1c2e7a-5b4d-4c1e-8f3a-2d6b7c8e9f01",
            "transcript_path": str(tmp_path / "transcript.jsonl"), "cwd": str(tmp_path),
            "permission_mode": "default", "hook_event_name": event, **fields}


@pytest.fixture
def filled(vault_dir) -> Path:
    v = Vault(vault_dir)
    v.add("Staging runs Postgres 16 on port 5433", "work/infra", tags=["db"])
    v.add("Deploys go through the staging branch", "work", tier="L2")
    v.add("The office coffee machine is on the third floor", "office")
    return vault_dir


def context_of(result, event: str) -> str:
    data = json.loads(result.stdout)
    assert set(data) == {"hookSpecificOutput"}
    assert data["hookSpecificOutput"]["hookEventName"] == event
    return data["hookSpecificOutput"]["additionalContext"]


def test_session_start_gives_the_review_and_prompt_block_as_additional_context(filled, tmp_path):
    result = hook("session-start", base("SessionStart", tmp_path, source="startup"), filled)
    text = context_of(result, "SessionStart")
    ids = {n.id for n in Vault(filled).notes()}
    assert all(f"[{i}]" in text for i in ids)
    assert "vaultmem grade ID good" in text and 'vaultmem recall "QUERY"' in text


def test_session_start_starts_a_watcher_so_each_prompt_recalls_fast(filled, tmp_path):
    import signal
    import time

    from vaultmem.service.client import ask

    hook("session-start", base("SessionStart", tmp_path, source="startup"), filled,
         VAULTMEM_AUTOWATCH="on", VAULTMEM_NO_SERVER="")
    try:
        deadline = time.monotonic() + 60
        while (answer := ask(str(filled), {"op": "ping"})) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert answer is not None and answer["ok"], (filled / ".vaultmem" / "hooks" / "watch.log").read_text()
        started = time.monotonic()
        result = hook("user-prompt-submit", base("UserPromptSubmit", tmp_path, prompt="which port is postgres on"),
                      filled, VAULTMEM_NO_SERVER="")
        assert "5433" in context_of(result, "UserPromptSubmit") and time.monotonic() - started < 5
        # A second session start finds it running and starts no other.
        hook("session-start", base("SessionStart", tmp_path, source="resume"), filled,
             VAULTMEM_AUTOWATCH="on", VAULTMEM_NO_SERVER="")
        log = (filled / ".vaultmem" / "hooks" / "watch.log").read_text()
        assert log.count("serving recall") == 1 and "already serves" not in log
    finally:
        pids = subprocess.run(["pgrep", "-f", f"vaultmem --vault {filled} watch"], capture_output=True, text=True)
        for pid in pids.stdout.split():
            os.kill(int(pid), signal.SIGTERM)


def test_session_start_stays_under_the_context_limit(vault_dir, tmp_path):
    v = Vault(vault_dir)
    for i in range(150):
        v.add(f"Fact number {i} about subsystem {i * 7}: " + "detail " * 40, f"bulk/n{i % 5}", merge=False,
              supersede=False)
    text = context_of(hook("session-start", base("SessionStart", tmp_path), vault_dir), "SessionStart")
    assert 2000 < len(text) <= 8000


def test_session_start_from_the_session_folder(filled, tmp_path):
    """Without VAULTMEM_VAULT the vault is found from the session's cwd, like any command."""
    inside = filled / "memories"
    text = context_of(hook("session-start", base("SessionStart", tmp_path, cwd=str(inside))), "SessionStart")
    assert "Staging runs Postgres 16" in text


def test_user_prompt_submit_injects_the_relevant_memories_with_ids(filled, tmp_path):
    staging = next(n for n in Vault(filled).notes() if n.text.startswith("Staging"))
    result = hook("user-prompt-submit",
                  base("UserPromptSubmit", tmp_path, prompt="Which port is the staging postgres database on?"), filled)
    text = context_of(result, "UserPromptSubmit")
    lines = text.splitlines()
    assert lines[2].startswith("<vaultmem-notes-") and lines[-2].startswith("</vaultmem-notes-")  # framed as data
    assert lines[3] == f"- [{staging.id}] (work/infra, new) Staging runs Postgres 16 on port 5433"
    assert "coffee" not in text and "vaultmem grade ID good" in text
    assert len(lines) <= 5 + 5


@pytest.mark.real_model
def test_user_prompt_submit_leaves_out_the_near_misses_trailing_a_clear_answer(vault_dir, tmp_path, run):
    """Recall lists a weak second hit under a clear answer; the hook, which puts its hits into
    the agent's context, injects only those near the best (RECALL_SHARE_OF_BEST)."""
    v = Vault(vault_dir)
    for text in ("Bob uses vim as his editor", "Alice prefers tabs over spaces", "Our deploys happen on Tuesdays"):
        v.add(text, "team")
    listed = [h["text"].strip() for h in run.json("recall", "which editor does bob use")]
    assert listed[0] == "Bob uses vim as his editor" and "Alice prefers tabs over spaces" in listed
    text = context_of(hook("user-prompt-submit", base("UserPromptSubmit", tmp_path, prompt="which editor does bob use"),
                           vault_dir), "UserPromptSubmit")
    injected = [line for line in text.splitlines() if line.startswith("- [")]
    assert len(injected) == 1 and injected[0].endswith("Bob uses vim as his editor")


def test_a_question_typed_after_a_long_paste_is_recalled(filled, tmp_path):
    """A pasted log of 200 KB, then the question (or the question, then the log): recall reads
    the prompt's end and its start, each on its own (it read the first 1,000 characters: all
    log, or the question drowned in log lines, and injected nothing)."""
    staging = next(n for n in Vault(filled).notes() if n.text.startswith("Staging"))
    log = "".join(f"2026-12-05T10:{i % 60:02d}:00 worker-{i % 7} processed batch {i} in {i % 13} ms\n"
                  for i in range(4000))
    for prompt in (log + "\nWhich port is the staging postgres database on?",
                   "Which port is the staging postgres database on?\n" + log):
        text = context_of(hook("user-prompt-submit", base("UserPromptSubmit", tmp_path, prompt=prompt), filled),
                          "UserPromptSubmit")
        assert f"[{staging.id}]" in text


def test_user_prompt_submit_says_nothing_without_hits(filled, tmp_path):
    assert hook("user-prompt-submit", base("UserPromptSubmit", tmp_path, prompt="xyzzy plugh frobnicate"),
                filled).stdout == ""
    assert hook("user-prompt-submit", base("UserPromptSubmit", tmp_path, prompt="/clear"), filled).stdout == ""


def deny_reason(result) -> str:
    data = json.loads(result.stdout)["hookSpecificOutput"]
    assert data["hookEventName"] == "PreToolUse" and data["permissionDecision"] == "deny"
    return data["permissionDecisionReason"]


def bash(tmp_path, command: str) -> dict:
    return base("PreToolUse", tmp_path, tool_name="Bash", tool_use_id="toolu_01ABC",
                tool_input={"command": command, "description": "run vaultmem"})


def test_pre_tool_use_denies_namespace_less_adds_and_invented_flags(filled, tmp_path):
    reason = deny_reason(hook("pre-tool-use", bash(tmp_path, 'vaultmem add "x"'), filled))
    assert "vaultmem add TEXT -n NAMESPACE" in reason and "[-t TAGS]" in reason
    assert f"-n projects/{tmp_path.name}" in reason  # a namespace for this project

    reason = deny_reason(hook("pre-tool-use", bash(tmp_path, "cd /tmp && vaultmem recall --fuzzy x | head"), filled))
    assert "--fuzzy" in reason and "vaultmem recall QUERY [-k TOP_K]" in reason and "[--type memory|skill]" in reason

    reason = deny_reason(hook("pre-tool-use", bash(tmp_path, f"{sys.executable} -m vaultmem recal x"), filled))
    assert "No such command 'recal'" in reason and "recall" in reason


@pytest.mark.parametrize("command", ['vaultmem recall "x" -k 3', "ls -la", 'vaultmem add "x" -n work --tags a,b',
                                     'echo "vaultmem add x"', 'vaultmem recall "$Q" -k "$K"',
                                     "vaultmem recall x 2>/dev/null", "vaultmem add --help", "vaultmem 'unclosed"])
def test_pre_tool_use_allows_everything_else(command):
    assert check_bash(command) is None


def test_pre_tool_use_ignores_other_tools(tmp_path, filled):
    payload = base("PreToolUse", tmp_path, tool_name="Write",
                   tool_input={"file_path": "/x", "content": "vaultmem add x"})
    assert hook("pre-tool-use", payload, filled).stdout == ""
    assert hook("pre-tool-use", bash(tmp_path, 'vaultmem recall "x" -k 3'), filled).stdout == ""


# ---------------------------------------------------------------- capture (Stop / SessionEnd)

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2  # a GitHub token shape, 40 characters


def transcript_lines() -> list[dict]:
    sid = "9f1c2e7a-5b4d-4c1e-8f3a-2d6b7c8e9f01"

    uuids = iter(f"0b7e4c1a-0000-4000-8000-{i:012d}" for i in range(100))

    def user(content, **extra):
        return {"type": "user", "sessionId": sid, "uuid": next(uuids), "timestamp": "2026-01-05T09:00:00Z",
                "message": {"role": "user", "content": content}, **extra}

    def assistant(*blocks):
        return {"type": "assistant", "sessionId": sid, "uuid": next(uuids),
                "message": {"role": "assistant", "model": "claude", "content": list(blocks)}}

    return [
        {"type": "summary", "summary": "Setting up the API", "leafUuid": "x"},
        user("<command-name>/init</command-name>\n"
             "<command-message>remember that slash commands are skipped</command-message>"),
        user("Please remember that the staging API listens on port 8080. Can you check the config?"),
        assistant({"type": "thinking", "thinking": "remember that thinking is skipped"},
                  {"type": "text", "text": "Checking.\n```\n# remember that code is skipped\n```"},
                  {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cat config.yaml"}}),
        user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "remember that tool output is skipped"}]),
        assistant({"type": "text", "text": "Lesson learned: the config loader ignores keys with dashes."}),
        user(f"Also remember that the deploy token is {TOKEN}"),
        user("No, actually the workers run on Python 3.12, not 3.11."),
        user([{"type": "text", "text": "I prefer small commits with tests. Never force-push to main."}]),
        user("<system-reminder>remember that reminders are skipped</system-reminder>", isMeta=True),
        user("Do you remember what we decided yesterday?"),
    ]


def write_transcript(path: Path, lines: list[dict]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)


def test_stop_captures_observations_with_provenance_and_masks_secrets(filled, tmp_path):
    transcript = tmp_path / "transcript.jsonl"
    write_transcript(transcript, transcript_lines())
    project = tmp_path / "shop-api"
    (project / ".git").mkdir(parents=True)
    payload = base("Stop", tmp_path, cwd=str(project), stop_hook_active=False)
    before = {n.id for n in Vault(filled).notes()}

    assert hook("stop", payload, filled).stdout == ""
    captured = {n.text: n for n in Vault(filled).notes() if n.id not in before}
    expected = {
        "The staging API listens on port 8080.": ("L1", "explicit", 3),
        "The config loader ignores keys with dashes.": ("L0", "lesson", 6),
        "The deploy token is [REDACTED:GitHub token].": ("L1", "explicit", 7),
        "The workers run on Python 3.12, not 3.11.": ("L0", "correction", 8),
        "The user prefers small commits with tests.": ("L0", "preference", 9),
        "Never force-push to main.": ("L0", "preference", 9),
    }
    assert sorted(captured) == sorted(expected)
    for text, (tier, kind, line) in expected.items():
        note = captured[text]
        assert note.tier == tier and note.namespace == "projects/shop-api"
        assert set(note.tags) == {"captured", kind}
        assert note.source == f"{transcript}#L{line}"
    for path in filled.rglob("*.md"):
        assert TOKEN not in path.read_text(encoding="utf-8")

    count = len(Vault(filled).notes())
    hook("stop", payload, filled)
    hook("session-end", dict(payload, hook_event_name="SessionEnd", reason="prompt_input_exit"), filled)
    assert len(Vault(filled).notes()) == count  # nothing captured twice

    write_transcript(transcript, [{"type": "user", "uuid": "c9d8e7f6-1111-4222-8333-444455556666", "message": {
        "role": "user", "content": "Remember that the cache TTL is ten minutes."}}])
    hook("stop", payload, filled, VAULTMEM_NAMESPACE="team/api")
    new = [n for n in Vault(filled).notes() if n.text == "The cache TTL is ten minutes."]
    assert len(new) == 1 and new[0].namespace == "team/api" and new[0].source.endswith("#L12")
    assert len(Vault(filled).notes()) == count + 1

    # A resumed session's transcript repeats the old messages (same uuids): not captured again.
    resumed = tmp_path / "resumed.jsonl"
    resumed.write_bytes(transcript.read_bytes())
    notes_before = {n.id: (filled / n.path).read_text() for n in Vault(filled).notes()}
    hook("stop", dict(payload, session_id="another-session", transcript_path=str(resumed)), filled)
    assert {n.id: (filled / n.path).read_text() for n in Vault(filled).notes()} == notes_before


def test_capture_rules():
    found = observations([
        {"role": "user", "content": "ok, remember to run make lint before pushing. Thanks!"},
        {"role": "assistant", "content": "I prefer tabs. Remember that the assistant cannot ask to remember."},
        {"role": "user", "content": "That's wrong, the cron job runs at 02:00 UTC."},
        {"role": "user", "content": "Correction: the bucket is in eu-west-1."},
        {"role": "user", "content": "Don't ever commit .env files.\n> remember that quoted text is skipped"},
        {"role": "user", "content": "TIL pytest -k takes expressions. Next time, run the slow tests last."},
        {"role": "user", "content": "remember to run make lint before pushing"},
        {"role": "user", "content": "Remember that?"},
    ])
    assert [(o.kind, o.tier, o.text, o.message_index) for o in found] == [
        ("explicit", "L1", "Run make lint before pushing.", 0),
        ("correction", "L0", "The cron job runs at 02:00 UTC.", 2),
        ("correction", "L0", "The bucket is in eu-west-1.", 3),
        ("preference", "L0", "Never commit .env files.", 4),
        ("lesson", "L0", "pytest -k takes expressions.", 5),
        ("lesson", "L0", "Next time, run the slow tests last.", 5),
    ]


@pytest.mark.parametrize("said, kept", [
    ("remember that kubectl must use the prod-eu context", "kubectl must use the prod-eu context."),
    ("remember that npm ci is banned, use pnpm install", "npm ci is banned, use pnpm install."),
    ("remember that src/deep holds the parser", "src/deep holds the parser."),
    ("remember that db1 is the primary", "db1 is the primary."),
    ("remember that the deploy runs at noon", "The deploy runs at noon."),
    ("remember to rotate the keys monthly", "Rotate the keys monthly."),
])
def test_a_captured_fact_keeps_the_case_of_a_command_or_name_it_opens_with(said, kept):
    """Commands, paths and hosts are case-sensitive: "Kubectl", "Npm ci", "Src/deep" told the
    agent to run what does not exist. Only a word a sentence opens with is capitalised."""
    assert [o.text for o in observations([{"role": "user", "content": said}])] == [kept]


# ---------------------------------------------------------------- failing open, switching off

@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit", "pre-tool-use", "stop", "session-end"])
def test_every_hook_fails_open(event, tmp_path, filled):
    payload = base("X", tmp_path, prompt="staging port", tool_name="Bash", tool_input={"command": "vaultmem add x"})
    garbage = hook(event, "this is not JSON {", filled).stdout
    assert garbage == "" or event == "session-start" and context_of(hook(event, "", filled), "SessionStart")
    broken = hook(event, payload, None, VAULTMEM_VAULT=str(tmp_path / "no-such-vault"))
    assert broken.stdout == "" or event == "pre-tool-use"  # the syntax check needs no vault
    if event != "pre-tool-use":  # too quick to outrun even a tiny budget
        assert hook(event, payload, filled, VAULTMEM_HOOK_BUDGET="0.000001").stdout == ""
    assert hook(event, payload, filled, VAULTMEM_HOOKS="off").stdout == ""


def test_a_missing_model_costs_nothing_but_the_embeddings(filled, tmp_path):
    result = hook("user-prompt-submit", base("UserPromptSubmit", tmp_path, prompt="staging postgres port"), filled,
                  VAULTMEM_MODEL="/nonexistent")
    assert "Staging runs Postgres 16" in context_of(result, "UserPromptSubmit")


def test_a_broken_vault_config_is_logged_and_costs_only_memory(filled, tmp_path):
    (filled / ".vaultmem" / "config.yaml").write_text("recall: [unclosed\n")
    assert hook("session-start", base("SessionStart", tmp_path), filled).stdout == ""
    assert "session-start: failed after" in (filled / ".vaultmem" / "hooks" / "hooks.log").read_text()


def test_over_budget_is_logged_in_the_vault(filled, tmp_path):
    hook("session-start", base("SessionStart", tmp_path), filled, VAULTMEM_HOOK_BUDGET="0.000001")
    log = (filled / ".vaultmem" / "hooks" / "hooks.log").read_text()
    assert "session-start: gave up after" in log
    assert (filled / ".vaultmem" / "hooks" / ".gitignore").read_text().strip().endswith("*")


def test_one_hook_switched_off(filled, tmp_path):
    prompt = base("UserPromptSubmit", tmp_path, prompt="staging postgres port")
    assert hook("user-prompt-submit", prompt, filled, VAULTMEM_HOOK_USER_PROMPT="off").stdout == ""
    assert hook("session-start", base("SessionStart", tmp_path), filled, VAULTMEM_HOOK_USER_PROMPT="off").stdout
    assert run_hook("pre-tool-use", json.dumps(bash(tmp_path, 'vaultmem add "x"')),
                    env={"VAULTMEM_HOOK_PRE_TOOL": "off"}, check=check_bash) == ("", 0)
    assert run_hook("no-such-event", "{}") == ("", 0)
    later = subprocess.run([sys.executable, "-m", "vaultmem", "hook", "pre-tool-use-v9", "--new-flag", "x"],
                           input="{}", capture_output=True, text=True, check=False)
    assert (later.returncode, later.stdout) == (0, "")  # never exit 2: that would block every Bash command
    named = run_hook("", json.dumps(bash(tmp_path, 'vaultmem add "x"')),
                     check=check_bash)  # the event from hook_event_name
    assert json.loads(named[0])["hookSpecificOutput"]["permissionDecision"] == "deny"


# ---------------------------------------------------------------- the skill file

def test_install_skill_writes_the_skill_with_the_exact_syntax(tmp_path):
    result = invoke("install-skill", str(tmp_path / "skills"))
    path = tmp_path / "skills" / "vaultmem" / "SKILL.md"
    assert str(path) in result.stdout
    text = path.read_text()
    assert text.startswith("---\nname: vaultmem\ndescription: ")
    assert "    vaultmem recall QUERY [-k TOP_K]" in text and "    vaultmem add TEXT -n NAMESPACE" in text
    assert "    vaultmem grade NOTE_ID RATING" in text and "{{commands}}" not in text
    assert "unchanged" in invoke("install-skill", str(tmp_path / "skills" / "vaultmem")).stdout

    other = tmp_path / "other"
    other.mkdir()
    (other / "SKILL.md").write_text("---\nname: something-else\n---\n")
    invoke("install-skill", str(other), expect=2)
    invoke("install-skill", str(other), "--force")
    assert "name: vaultmem" in (other / "SKILL.md").read_text()


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit"])
def test_pre_tool_use_sends_claude_codes_memory_file_to_vaultmem(tool, filled, tmp_path):
    memory = tmp_path / ".claude" / "projects" / "-work-api" / "memory" / "MEMORY.md"
    payload = base("PreToolUse", tmp_path, tool_name=tool,
                   tool_input={"file_path": str(memory), "content": "- The API runs on port 8080"})
    reason = deny_reason(hook("pre-tool-use", payload, filled))
    assert "not in Claude Code's MEMORY.md" in reason and f"vaultmem add \"TEXT\" -n projects/{tmp_path.name}" in reason
    config = tmp_path / "claude-config"
    elsewhere = base("PreToolUse", tmp_path, tool_name=tool, tool_input={"file_path": str(config / "MEMORY.md")})
    assert deny_reason(hook("pre-tool-use", elsewhere, filled, CLAUDE_CONFIG_DIR=str(config)))
    for allowed in (tmp_path / "docs" / "MEMORY.md", tmp_path / ".claude" / "CLAUDE.md"):
        payload = base("PreToolUse", tmp_path, tool_name=tool, tool_input={"file_path": str(allowed)})
        assert hook("pre-tool-use", payload, filled).stdout == "", allowed


def test_pre_tool_use_moves_bracket_tags_to_the_tags_option(filled, tmp_path):
    line = 'vaultmem add "[db, staging] Postgres is on 5433" -n work'
    reason = deny_reason(hook("pre-tool-use", bash(tmp_path, line), filled))
    assert "Tags go in --tags" in reason and "vaultmem add 'Postgres is on 5433' -n work --tags db,staging" in reason
    assert check_bash('vaultmem add "[[Infra]] has the ports" -n work') is None, "a wiki link is not a tag"
    assert check_bash('vaultmem add "Postgres is on 5433 [db]" -n work') is None


def test_an_older_install_gets_the_new_pre_tool_use_matcher(tmp_path):
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "/old/python -m vaultmem hook pre-tool-use", "timeout": 10}]},
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}]}}
    merged = merge_hooks(settings, "/new/python -m vaultmem")
    assert [g["matcher"] for g in merged["hooks"]["PreToolUse"]] == ["Bash|Write|Edit|MultiEdit", "Bash"]


def test_captured_sources_are_relative_to_home_or_the_project(filled, tmp_path):
    """A vault shared in git must not carry /home/<user>/ in every captured note's source."""
    home = tmp_path / "home"
    transcript = home / ".claude" / "projects" / "-work-api" / "s1.jsonl"
    transcript.parent.mkdir(parents=True)
    write_transcript(transcript, transcript_lines())
    project = tmp_path / "api"
    (project / ".git").mkdir(parents=True)
    before = {n.id for n in Vault(filled).notes()}
    hook("stop", base("Stop", tmp_path, cwd=str(project), transcript_path=str(transcript)), filled, HOME=str(home))
    sources = {n.source for n in Vault(filled).notes() if n.id not in before}
    assert sources and all(s.startswith("~/.claude/projects/-work-api/s1.jsonl#L") for s in sources), sources
    assert not any(str(tmp_path) in (filled / n.path).read_text() for n in Vault(filled).notes() if n.id not in before)


def test_portable_path(tmp_path):
    from vaultmem.ops.provenance import portable_path

    project = tmp_path / "work" / "api"
    (project / ".git").mkdir(parents=True)
    home = tmp_path / "work"
    assert portable_path(project / "logs" / "t.jsonl", cwd=project / "src", home=str(home)) == "logs/t.jsonl"
    assert portable_path(home / ".claude" / "t.jsonl", cwd=project, home=str(home)) == "~/.claude/t.jsonl"
    assert portable_path("/etc/t.jsonl", cwd=project, home=str(home)) == "/etc/t.jsonl"


def test_portable_path_outside_a_repository_is_relative_to_home_only(tmp_path):
    from vaultmem.ops.provenance import portable_path

    folder = tmp_path / "scratch"
    (folder / "home").mkdir(parents=True)
    assert portable_path(folder / "home" / "t.jsonl", cwd=folder, home=str(tmp_path / "elsewhere")) == \
        str(folder / "home" / "t.jsonl"), "a plain folder is no project: the path stays whole"


def test_hooks_for_a_named_vault_tell_the_agent_to_name_it_and_stop_commands_that_do_not(filled, tmp_path):
    """Hooks installed with --vault (as `init --claude-code` does): the commands they show the agent
    name that vault (a bare `vaultmem add` wrote to another vault, where nothing reads it back), and
    PreToolUse stops a vaultmem command that would miss it, giving the command that reaches it."""
    env = {k: v for k, v in os.environ.items() if k != "VAULTMEM_VAULT"}
    env.update(VAULTMEM_NO_SERVER="1", PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""))

    def run(event, payload):
        done = subprocess.run([sys.executable, "-m", "vaultmem", "hook", event, "--vault", str(filled)],
                              input=json.dumps(payload), env=env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    start = json.loads(run("session-start", base("SessionStart", tmp_path, source="startup")))
    text = start["hookSpecificOutput"]["additionalContext"]
    assert f"vaultmem --vault {filled} grade ID good" in text and f'vaultmem --vault {filled} add "TEXT"' in text
    assert "`vaultmem add" not in text
    denied = json.loads(run("pre-tool-use", bash(tmp_path, 'vaultmem add "Deploys use ArgoCD" -n work')))
    reason = denied["hookSpecificOutput"]["permissionDecisionReason"]
    assert f"in the vault {filled}" in reason
    assert f"vaultmem --vault {filled} add 'Deploys use ArgoCD' -n work" in reason
    assert run("pre-tool-use", bash(tmp_path, f'vaultmem --vault {filled} add "Deploys use ArgoCD" -n work')) == ""
    assert run("pre-tool-use", bash(tmp_path, f'vaultmem add "Deploys use ArgoCD" -n work --vault {filled}')) == ""
    assert run("pre-tool-use", bash(tmp_path, "vaultmem hooks status --claude-code")) == ""
    # Without vaultmem on the PATH, the command to run instead is the one the hooks themselves use.
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not (Path(p) / "vaultmem").exists())
    denied = json.loads(run("pre-tool-use", bash(tmp_path, 'vaultmem add "Deploys use ArgoCD" -n work')))
    reason = denied["hookSpecificOutput"]["permissionDecisionReason"]
    assert f"Run instead: {sys.executable} -m vaultmem --vault {filled} add 'Deploys use ArgoCD' -n work" in reason


def test_a_namespace_less_add_with_a_tag_prefix_is_told_the_command_that_passes(tmp_path):
    reason = check_bash('vaultmem add "[infra] staging uses redis 7"', str(tmp_path))
    suggested = reason.split("For this project: ")[1]
    assert "--tags infra" in suggested and "[infra]" not in suggested
    assert check_bash(suggested, str(tmp_path)) is None
