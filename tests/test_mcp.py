"""`vaultmem mcp`: the MCP server, driven by the mcp package's own client over a real stdio connection."""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import run_process

TOOLS = {
    "recall": {"query"}, "get": {"id"}, "list": set(), "add": {"text", "namespace"},
    "learn": {"title", "steps", "namespace"}, "grade": {"id", "rating"}, "review": set(), "prompt": set(),
    "correct": {"id", "text"}, "resolve": {"id"}, "why": {"ref"}, "update": {"id"}, "archive": {"id"},
    "restore": {"id"},
}


def error_of(result) -> str:
    assert result.is_error, result
    (block,) = result.content
    assert "\n" not in block.text, block.text
    return block.text


def run_session(vault_dir, tmp_path, body):
    """Start `python -m vaultmem mcp --vault VAULT` through stdio_client and run `body(session)`."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", str(vault_dir)],
                                   env=dict(os.environ), cwd=str(tmp_path))
    errlog_path = tmp_path / "mcp-server.log"

    async def main(errlog):
        with anyio.fail_after(240):
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                await body(session)

    try:
        with open(errlog_path, "w") as errlog:
            anyio.run(main, errlog)
    except BaseException:
        print("server stderr:\n" + errlog_path.read_text(), file=sys.stderr)
        raise
    return errlog_path.read_text()


def test_mcp_tools_over_stdio(vault_dir, tmp_path):
    async def body(session: ClientSession):
        listed = (await session.list_tools()).tools
        assert {t.name: set(t.input_schema.get("required", [])) for t in listed} == TOOLS
        for tool in listed:
            assert tool.input_schema["type"] == "object" and tool.description
            assert all(prop.get("description") for prop in tool.input_schema["properties"].values()), tool.name
        schemas = {t.name: t.input_schema for t in listed}
        assert schemas["grade"]["properties"]["rating"]["enum"] == ["again", "hard", "good", "easy"]
        assert {t.name for t in listed if t.annotations and t.annotations.read_only_hint} == {
            "recall", "get", "list", "review", "prompt", "why"}

        added = await session.call_tool("add", {"text": "Staging runs Postgres 16 on port 5433",
                                                "namespace": "work/infra", "tags": ["db"]})
        assert not added.is_error, added
        note_id = added.structured_content["id"]
        assert added.structured_content["action"] == "added"
        assert added.structured_content["note"]["namespace"] == "work/infra"
        assert added.structured_content["note"]["tags"] == ["db"]

        found = await session.call_tool("recall", {"query": "which port is the staging database on", "k": 3})
        assert not found.is_error, found
        hits = found.structured_content["hits"]
        assert hits and hits[0]["id"] == note_id and "5433" in hits[0]["text"]
        assert hits[0]["score"] > 0 and hits[0]["label"] and "signals" not in hits[0]

        graded = await session.call_tool("grade", {"id": note_id, "rating": "good", "comment": "picked the port"})
        assert not graded.is_error, graded
        assert graded.structured_content["reps"] == 1

        got = await session.call_tool("get", {"id": note_id})
        assert not got.is_error, got
        assert got.structured_content["reps"] == 1 and got.structured_content["id"] == note_id

        block = await session.call_tool("prompt", {"max_tokens": 500})
        assert not block.is_error, block
        assert note_id in block.content[0].text and "Postgres 16" in block.content[0].text
        assert block.structured_content == {"result": block.content[0].text}
        small = (await session.call_tool("prompt", {"max_tokens": 50})).content[0].text
        assert small.startswith("none of the ") and "raise max_tokens" in small  # not "No memories yet."

        # A refusal is a tool error result with vaultmem's one-line message; the server keeps answering.
        bad = await session.call_tool("grade", {"id": note_id, "rating": "great"})
        message = error_of(bad)
        assert "bad input" in message and "'great'" in message and "again, hard, good, easy" in message
        missing = await session.call_tool("get", {"id": "nosuchid"})
        message = error_of(missing)
        assert "not found" in message and "nosuchid" in message
        assert "the list tool shows the ids" in message and "vaultmem list" not in message, "tools, not CLI"
        no_steps = error_of(await session.call_tool("learn", {"title": "Ship", "steps": " ", "namespace": "work"}))
        assert "the steps argument" in no_steps and "--steps" not in no_steps
        assert "must be between" in error_of(await session.call_tool("recall", {"query": "x", "k": 0}))
        assert "namespace" in error_of(await session.call_tool("add", {"text": "x", "namespace": ""}))
        token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        message = error_of(await session.call_tool("add", {"text": f"CI uses {token}", "namespace": "work"}))
        assert message.startswith("Error executing tool add: secret found: ") and token not in message
        masked = await session.call_tool("add", {"text": f"CI uses {token}", "namespace": "work", "redact": True})
        assert masked.structured_content["redacted"] == ["GitHub token"]
        assert token not in masked.structured_content["note"]["text"]

        listed_notes = await session.call_tool("list", {"namespace": "work/infra"})
        assert [n["id"] for n in listed_notes.structured_content["notes"]] == [note_id]
        assert "text" not in listed_notes.structured_content["notes"][0]

        skill = await session.call_tool("learn", {"title": "Restart staging Postgres", "namespace": "work/infra",
                                                  "steps": "1. ssh staging 2. systemctl restart postgresql",
                                                  "trigger": "staging DB hangs"})
        assert not skill.is_error, skill
        assert skill.structured_content["note"]["type"] == "skill"

        due = await session.call_tool("review", {"limit": 5})
        assert not due.is_error, due
        assert due.structured_content["total"] == len(due.structured_content["notes"])

        fixed = await session.call_tool("correct", {"id": note_id, "text": "Staging runs Postgres 17 on port 5433",
                                                    "reason": "upgraded in December"})
        assert not fixed.is_error, fixed
        assert fixed.structured_content["superseded"] == [note_id]
        old = (await session.call_tool("get", {"id": note_id})).structured_content
        assert old["status"] == "superseded"

        history = await session.call_tool("why", {"ref": fixed.structured_content["id"]})
        assert not history.is_error, history
        assert history.structured_content

        # Still serving after the errors; a hand edit made meanwhile (Obsidian) is seen.
        new_id = fixed.structured_content["id"]
        path = vault_dir / fixed.structured_content["note"]["path"]
        path.write_text(path.read_text().replace("Postgres 17", "Postgres 17.2"))
        again = await session.call_tool("get", {"id": new_id})
        assert "Postgres 17.2" in again.structured_content["text"]

    log = run_session(vault_dir, tmp_path, body)
    assert "Traceback" not in log, log


def test_mcp_update_archive_restore(vault_dir, tmp_path):
    async def body(session: ClientSession):
        added = await session.call_tool("add", {"text": "The staging DB is on port 5433", "namespace": "work"})
        note_id = added.structured_content["id"]
        await session.call_tool("grade", {"id": note_id, "rating": "good"})
        updated = await session.call_tool("update", {"id": note_id, "text": "The staging DB is on port 5433 (IPv6)",
                                                     "tags": ["db", "#staging"], "tier": "L2"})
        assert not updated.is_error, updated
        note = updated.structured_content
        assert note["text"] == "The staging DB is on port 5433 (IPv6)" and note["tags"] == ["db", "staging"]
        assert note["tier"] == "L2" and note["reps"] == 1 and note["id"] == note_id, "same note, same schedule"
        assert "nothing to update" in error_of(await session.call_tool("update", {"id": note_id}))
        wrong_type = error_of(await session.call_tool("add", {"text": 5, "namespace": "work"}))  # one line
        assert wrong_type.startswith("bad input: add: text: ") and "pydantic" not in wrong_type
        token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        refused = error_of(await session.call_tool("update", {"id": note_id, "text": f"key {token}"}))
        assert "secret found" in refused and "redact=True" in refused, "how to ask for masking over MCP too"

        archived = await session.call_tool("archive", {"id": note_id, "reason": "moved to the wiki"})
        assert archived.structured_content["status"] == "archived"
        assert archived.structured_content["path"].startswith("archive/")
        assert not (await session.call_tool("recall", {"query": "staging DB port"})).structured_content["hits"]
        restored = await session.call_tool("restore", {"id": note_id})
        assert restored.structured_content["status"] == "active"
        assert not restored.structured_content["path"].startswith("archive/")
        assert "is active" in error_of(await session.call_tool("restore", {"id": note_id}))

    log = run_session(vault_dir, tmp_path, body)
    assert "Traceback" not in log, log
    lines = (vault_dir / ".vaultmem" / "archive.jsonl").read_text()
    assert "moved to the wiki" in lines


def test_mcp_without_the_package_says_what_to_install(vault_dir, tmp_path):
    """`mcp` is an optional extra: without it, `vaultmem mcp` is one line on stderr, exit 2."""
    blocker = tmp_path / "no-mcp" / "mcp"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n")
    result = run_process("mcp", "--vault", str(vault_dir), check=False,
                         env={"PYTHONPATH": os.pathsep.join([str(blocker.parent), os.environ.get("PYTHONPATH", "")])})
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == "vaultmem: the MCP server needs the mcp package: pip install 'vaultmem[mcp]'"


def test_mcp_on_a_folder_that_is_not_a_vault(tmp_path):
    result = run_process("mcp", "--vault", str(tmp_path / "nowhere"), check=False)
    assert result.returncode == 1
    assert "is not a vaultmem vault" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.real_model
def test_mcp_update_into_what_another_memory_contradicts_contests_them(vault_dir, tmp_path):
    """update rewrote a note into the opposite of another memory with no check: both stood in
    force, uncontested. The edited text is checked as an add would check it (never superseding:
    an edit is no newer fact)."""
    async def body(session: ClientSession):
        pnpm = (await session.call_tool("add", {"text": "Use pnpm, never npm.", "namespace": "tooling"}))
        other = (await session.call_tool("add", {"text": "Secrets live in the 1Password vault Eng",
                                                 "namespace": "tooling"}))
        updated = await session.call_tool("update", {"id": other.structured_content["id"],
                                                     "text": "Use npm, never pnpm."})
        assert not updated.is_error, updated
        assert updated.structured_content["status"] == "active" and updated.structured_content["contested"]
        first = await session.call_tool("get", {"id": pnpm.structured_content["id"]})
        assert first.structured_content["status"] == "active" and first.structured_content["contested"]
        # ... and an MCP agent can settle it (there was no resolve tool)
        settled = await session.call_tool("resolve", {"id": pnpm.structured_content["id"]})
        assert settled.structured_content["others"] == [other.structured_content["id"]]
        loser = await session.call_tool("get", {"id": other.structured_content["id"]})
        assert loser.structured_content["status"] == "superseded"

    log = run_session(vault_dir, tmp_path, body)
    assert "Traceback" not in log, log
