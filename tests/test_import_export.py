"""`vaultmem import` from the stores people have, and `export --jsonl` round trips.

Foreign stores are built in their own shapes: agentmemory-sr's and skillmem's
SQLite schemas (as their sources create them) by the tests, skillmem's
`export-all` files, an Agent Brain memory.json, a knowledge-graph memory.json,
a CLAUDE.md and a notes folder under tests/fixtures/import/.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from vaultmem.integrations.importers import detect, read
from vaultmem.integrations.importers.base import Incoming, Restore, Skip
from vaultmem.integrations.importers.run import run_import
from vaultmem.vault import Vault, init_vault

FIXTURES = Path(__file__).parent / "fixtures" / "import"

AGENTMEMORY_SR_SCHEMA = """
CREATE TABLE memories (
    id TEXT PRIMARY KEY, content TEXT NOT NULL, namespace TEXT NOT NULL DEFAULT 'general', source TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, stability REAL, difficulty REAL, due TEXT NOT NULL,
    last_review TEXT, state TEXT NOT NULL DEFAULT 'new', step INTEGER DEFAULT 0, fsrs_card_id INTEGER,
    lapses INTEGER NOT NULL DEFAULT 0, reps INTEGER NOT NULL DEFAULT 0, retrieval_count INTEGER NOT NULL DEFAULT 0,
    usage_count INTEGER NOT NULL DEFAULT 0, last_retrieved TEXT, last_used TEXT);
CREATE TABLE grade_history (id INTEGER PRIMARY KEY AUTOINCREMENT, memory_id TEXT NOT NULL, grade TEXT NOT NULL,
    graded_at TEXT NOT NULL, context TEXT);
CREATE TABLE review_log (id INTEGER PRIMARY KEY AUTOINCREMENT, memory_id TEXT NOT NULL, grade TEXT NOT NULL,
    stability_before REAL, stability_after REAL, difficulty_before REAL, difficulty_after REAL,
    state_before TEXT NOT NULL, state_after TEXT NOT NULL, reviewed_at TEXT NOT NULL);
"""


def agentmemory_sr_db(path: Path, rows) -> Path:
    db = sqlite3.connect(path)
    db.executescript(AGENTMEMORY_SR_SCHEMA)
    try:  # the FTS5 mirror, as agentmemory-sr creates it (when SQLite has FTS5)
        db.execute("CREATE VIRTUAL TABLE memories_fts USING fts5(content, namespace, content=memories, "
                   "content_rowid=rowid)")
    except sqlite3.OperationalError:
        pass
    for row in rows:
        db.execute("INSERT INTO memories (id, content, namespace, source, created_at, updated_at, due, state, "
                   "stability, reps, lapses) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (row["id"], row["content"], row.get("namespace", "general"), row.get("source"),
                    row["created_at"], row["created_at"], row["created_at"], row.get("state", "new"),
                    row.get("stability"), row.get("reps", 0), row.get("lapses", 0)))
    db.commit()
    db.close()
    return path


SR_ROWS = [
    {"id": "a1b2c3d4e5f6", "content": "Nick prefers short emails", "namespace": "preferences",
     "created_at": "2025-10-01T08:30:00+00:00", "state": "review", "stability": 12.5, "reps": 3},
    {"id": "b2c3d4e5f6a1", "content": "Orgo MRR is $25K", "namespace": "business", "source": "Finance/overview.md",
     "created_at": "2025-11-15T17:00:00+02:00"},
    {"id": "c3d4e5f6a1b2", "content": "The office wifi is on channel 6", "namespace": "infrastructure",
     "created_at": "2025-09-01T00:00:00+00:00", "state": "suspended", "lapses": 8},
    {"id": "d4e5f6a1b2c3", "content": "Nick  prefers short emails", "namespace": "preferences",
     "created_at": "2025-12-01T08:30:00+00:00"},
]


@pytest.fixture
def lexical(monkeypatch, tmp_path):
    """Imports without the embedding model: near-duplicate checks by words only (fast, deterministic)."""
    monkeypatch.setenv("VAULTMEM_MODEL", str(tmp_path / "no-model"))


def files(root: Path) -> dict[str, bytes]:
    """Every note file of a vault: relative path -> bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for folder in ("memories", "skills", "archive") for p in sorted((root / folder).rglob("*.md"))}


# ---------------------------------------------------------------- detection and readers (no vault)

def test_formats_are_detected_from_the_path(tmp_path):
    db = agentmemory_sr_db(tmp_path / "memory.db", SR_ROWS)
    assert detect(db) == "agentmemory-sr"
    assert detect(FIXTURES / "skillmem-export") == "skillmem"
    assert detect(FIXTURES / "skillmem-export" / "skill" / "skill-nginx.md") == "skillmem"
    assert detect(FIXTURES / "agent-brain" / "memory.json") == "agent-brain"
    assert detect(FIXTURES / "kg" / "memory.json") == "agent-brain"
    assert detect(FIXTURES / "CLAUDE.md") == "claude-md"
    assert detect(FIXTURES / "notes") == "markdown"
    assert detect(FIXTURES / "notes" / "Postgres on staging.md") == "markdown"
    export = tmp_path / "backup.jsonl"
    export.write_text(json.dumps({"path": "memories/a/b.md", "text": "x"}) + "\n")
    assert detect(export) == "jsonl"
    generic = sqlite3.connect(tmp_path / "brain.sqlite")
    generic.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, fact TEXT)")
    generic.close()
    assert detect(tmp_path / "brain.sqlite") == "agent-brain"


def test_agentmemory_sr_rows_keep_namespace_date_and_row_id(tmp_path):
    db = agentmemory_sr_db(tmp_path / "memory.db", SR_ROWS)
    fmt, records = read(db)
    assert fmt == "agentmemory-sr"
    memories = [r for r in records if isinstance(r, Incoming)]
    assert [m.text for m in memories] == ["The office wifi is on channel 6", "Nick prefers short emails",
                                          "Orgo MRR is $25K", "Nick  prefers short emails"]
    leech, *memories = memories
    assert leech.extra["status"] == "suspended" and leech.extra["card"]["lapses"] == 8, "a leech stays a leech"
    first = memories[0]
    assert first.namespace == "preferences"
    assert first.source == f"{db}#a1b2c3d4e5f6"
    assert first.created.isoformat() == "2025-10-01T08:30:00+00:00"
    assert memories[1].created.isoformat() == "2025-11-15T15:00:00+00:00"  # converted to UTC
    assert "from Finance/overview.md" in memories[1].source
    assert first.extra["original_id"] == "a1b2c3d4e5f6" and first.extra["card"]["stability"] == 12.5
    assert not [r for r in records if isinstance(r, Skip)]
    assert db.read_bytes()[:16] == b"SQLite format 3\x00"  # opened read-only, untouched


def test_skillmem_export_files_become_memories_and_skills():
    fmt, records = read(FIXTURES / "skillmem-export")
    assert fmt == "skillmem"
    by_kind = {r.extra["skillmem_kind"]: r for r in records}
    skill = by_kind["skill"]
    assert skill.kind == "skill" and skill.title == "Deploy Nginx" and skill.namespace == "infra"
    assert "## Trigger\na new site needs nginx" in skill.text
    assert "## Lessons\nalways run nginx -t before reloading" in skill.text
    reference = by_kind["reference"]
    assert reference.namespace == "liza"  # its project
    assert reference.tags == ("deploy", "ops", "infra")  # tags, then topics
    assert reference.text.startswith("# Deploy checklist (EN)\n\nSteps to deploy")
    assert reference.created.isoformat() == "2023-11-14T22:13:20+00:00"  # created_at is epoch seconds
    assert by_kind["user"].namespace == "user"  # no project: its kind


def test_skillmem_sqlite_memory_items(tmp_path):
    db = sqlite3.connect(tmp_path / "memory.db")
    db.executescript("""
        CREATE TABLE memory_items (id INTEGER PRIMARY KEY AUTOINCREMENT, slug TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL DEFAULT 'note', title TEXT NOT NULL DEFAULT '', body TEXT NOT NULL DEFAULT '',
            body_path TEXT, project TEXT, tags TEXT NOT NULL DEFAULT '[]', topics TEXT NOT NULL DEFAULT '[]',
            content_hash TEXT NOT NULL, strength REAL NOT NULL DEFAULT 1.0, lifecycle TEXT NOT NULL DEFAULT 'active',
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, deleted_at INTEGER);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
    """)
    rows = [("skill-sqlite", "skill", "Fix SQLite locks",
             ("**trigger:** database locked\n**steps:** WAL mode\n**outcome:** success"), None, "infra",
             '["sqlite"]', None, "active"),
            ("note-gone", "note", "Gone", "deleted text", None, None, "[]", 1700000500, "active"),
            ("doc-big", "document", "Big", "an excerpt…", "docs/big.md", None, "[]", None, "active"),
            ("ref-old", "reference", "Old ref", "A retired reference", None, None, "[]", None, "archived")]
    for slug, kind, title, body, body_path, project, tags, deleted, lifecycle in rows:
        db.execute("INSERT INTO memory_items (slug, kind, title, body, body_path, project, tags, content_hash, "
                   "lifecycle, created_at, updated_at, deleted_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                   (slug, kind, title, body, body_path, project, tags, "h", lifecycle, 1700000000, 1700000000,
                    deleted))
    db.commit()
    db.close()
    fmt, records = read(tmp_path / "memory.db")
    assert fmt == "skillmem"
    skill, old = [r for r in records if isinstance(r, Incoming)]
    assert skill.kind == "skill" and skill.tags == ("sqlite",) and "## Steps\nWAL mode" in skill.text
    assert old.extra["status"] == "archived"
    reasons = sorted(r.reason for r in records if isinstance(r, Skip))
    assert reasons[0] == "deleted in skillmem" and "export-all" in reasons[1]


def test_agent_brain_memory_json_and_knowledge_graph():
    _fmt, records = read(FIXTURES / "agent-brain" / "memory.json")
    first, second = records[0], records[1]
    assert (first.namespace, first.tags, first.extra) == ("integration", ("api", "limits"), {"original_id": "m1"})
    assert first.source.endswith("memory.json#memories[0] (m1)")
    assert second.tags == ("api", "backoff") and second.created.isoformat() == "2025-11-04T09:53:20+00:00"
    assert isinstance(records[2], Skip) and "deleted" in records[2].reason
    assert records[3].text == ""  # reported as empty when imported
    _fmt, graph = read(FIXTURES / "kg" / "memory.json")
    assert [r.text for r in graph] == ["John_Smith: Speaks fluent Spanish", "John_Smith: Prefers morning meetings",
                                       "Acme_Corp: Ships on Mondays", "John_Smith works at Acme_Corp"]
    assert graph[0].namespace == "person" and graph[3].namespace == "relations"


def test_agent_brain_sqlite_is_read_by_its_columns(tmp_path):
    db = sqlite3.connect(tmp_path / "brain.db")
    db.executescript("""
        CREATE TABLE agents (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE memories (id INTEGER PRIMARY KEY, agent_id TEXT, text TEXT NOT NULL, category TEXT,
            tags TEXT, importance REAL, created_at INTEGER, forgotten INTEGER DEFAULT 0);
        INSERT INTO agents (name) VALUES ('main');
        INSERT INTO memories (text, category, tags, importance, created_at) VALUES
            ('Deploys need a green CI run', 'process', '["ci","deploy"]', 0.9, 1760000000000);
        INSERT INTO memories (text, category, forgotten) VALUES ('Forgotten thing', 'process', 1);
    """)
    db.commit()
    db.close()
    fmt, records = read(tmp_path / "brain.db")
    assert fmt == "agent-brain"
    memory, skip = records
    assert memory.text == "Deploys need a green CI run" and memory.namespace == "process"
    assert memory.tags == ("ci", "deploy") and memory.extra == {"original_id": "1"}
    assert memory.created.isoformat() == "2025-10-09T08:53:20+00:00"  # epoch milliseconds
    assert memory.source == f"{tmp_path / 'brain.db'}#memories/1"
    assert isinstance(skip, Skip)


def test_claude_md_one_memory_per_bullet_with_heading_tags():
    _fmt, records = read(FIXTURES / "CLAUDE.md")
    texts = [r.text for r in records]
    assert texts == [
        "`make test` runs the whole suite",
        "Build with `make build`:\n- needs Go 1.22\n- writes binaries to ./bin",
        "Release tags look like v1.2.3",
        "Use tabs in Go files",
        "Move the linter config to the repo root",
        "Use tabs in Go files",
        "Keep functions short; split anything over fifty lines into helpers.",  # one wrapped paragraph
    ]
    assert records[0].tags == ("commands",) and records[3].tags == ("code-style",)
    assert records[0].source.endswith("CLAUDE.md:7") and records[5].source.endswith("CLAUDE.md:21")


def test_markdown_folder_one_memory_per_note():
    _fmt, records = read(FIXTURES / "notes")
    by_title = {r.title: r for r in records}
    assert set(by_title) == {"Postgres on staging", "Deploy days"}  # templates/ and .obsidian/ are not notes
    postgres = by_title["Postgres on staging"]
    assert postgres.text == "# Postgres on staging\n\nStaging runs Postgres 16 on port 5433."
    assert postgres.tags == ("db", "staging") and postgres.created.isoformat() == "2025-03-01T00:00:00+00:00"
    assert by_title["Deploy days"].namespace == "work"
    assert by_title["Deploy days"].text.startswith("# Deploy days\n\nWe deploy")  # its heading, not doubled


# ---------------------------------------------------------------- importing into a vault

def test_import_agentmemory_sr_counts_sources_and_merges(vault_dir, run, tmp_path, lexical):
    db = agentmemory_sr_db(tmp_path / "memory.db", SR_ROWS)
    report = run.json("import", str(db))
    assert report["format"] == "agentmemory-sr"
    assert report["counts"] == {"added": 3, "updated": 0, "merged": 1, "unchanged": 0, "conflicts": 0,
                                "skipped": 0, "errors": 0}
    assert report["merged"][0]["reason"] == "repeated in the import"
    vault = Vault(vault_dir)
    notes = {n.text: n for n in vault.notes()}
    assert set(notes) == {"Nick prefers short emails", "Orgo MRR is $25K"}
    assert [n.status for n in vault.notes(include_hidden=True) if n.text.startswith("The office")] == ["suspended"]
    emails = notes["Nick prefers short emails"]
    assert emails.namespace == "preferences" and emails.source == f"{db}#a1b2c3d4e5f6"
    assert emails.created.isoformat() == "2025-10-01T08:30:00+00:00"
    before = files(vault_dir)
    again = run.json("import", str(db))  # importing twice changes nothing
    assert again["counts"]["added"] == 0 and again["counts"]["merged"] == 4
    assert files(vault_dir) == before


def test_a_near_duplicate_becomes_a_recurrence_of_the_vault_note(vault_dir, run, tmp_path):
    """With the embedding model: a reworded repeat merges into the existing note (Vault.add's check)."""
    existing = run.json("add", "Nick prefers short emails", "-n", "preferences")["id"]
    source = tmp_path / "memory.json"
    source.write_text(json.dumps([{"content": "Nick prefers short emails.", "namespace": "preferences"},
                                  {"content": "Orgo MRR is $25K", "namespace": "business"}]))
    report = run.json("import", str(source))
    assert report["counts"]["added"] == 1 and report["counts"]["merged"] == 1
    assert report["merged"][0]["id"] == existing
    assert len(list((vault_dir / "memories" / "preferences").glob("*.md"))) == 1


def test_human_output_names_each_skipped_record(run, tmp_path, lexical):
    text = run("import", str(FIXTURES / "agent-brain" / "memory.json"), "-n", "brain").stdout
    assert text.splitlines()[0].endswith("imported 2, merged 1, skipped 2, errors 0")
    assert "  skipped: " in text and text.rstrip().endswith(": empty")


def test_import_with_namespace_prefix_and_dry_run(vault_dir, run, lexical):
    dry = run.json("import", str(FIXTURES / "agent-brain" / "memory.json"), "-n", "old/brain", "--dry-run")
    assert dry["dry_run"] and dry["counts"]["added"] == 2 and dry["counts"]["merged"] == 1
    assert files(vault_dir) == {}
    report = run.json("import", str(FIXTURES / "agent-brain" / "memory.json"), "-n", "old/brain")
    assert sorted(a["namespace"] for a in report["added"]) == ["old/brain/decision", "old/brain/integration"]
    assert [s["reason"] for s in report["skipped"]] == ["deleted or forgotten in the source", "empty"]
    note = Vault(vault_dir).get(report["added"][0]["id"])
    assert note.tags and note.source.startswith("tests/fixtures/import/agent-brain/memory.json#"), "project-relative"


def test_import_skillmem_export_makes_skills(vault_dir, run, lexical):
    report = run.json("import", str(FIXTURES / "skillmem-export"))
    assert report["counts"]["added"] == 3
    vault = Vault(vault_dir)
    skill = next(n for n in vault.notes() if n.type == "skill")
    assert skill.path == "skills/infra/deploy-nginx.md" and skill.title == "Deploy Nginx"
    assert "nginx -t" in skill.body


def test_import_claude_md_and_notes_folder(vault_dir, run, lexical):
    report = run.json("import", str(FIXTURES / "CLAUDE.md"), "-n", "projects/api")
    assert report["counts"]["added"] == 6 and report["counts"]["merged"] == 1
    namespaces = {n.namespace for n in Vault(vault_dir).notes()}
    assert namespaces == {"projects/api"}
    report = run.json("import", str(FIXTURES / "notes"))
    assert sorted(a["namespace"] for a in report["added"]) == ["notes", "work"]


def test_a_secret_is_skipped_or_masked(vault_dir, run, tmp_path, lexical):
    source = tmp_path / "memory.json"
    source.write_text(json.dumps([{"content": "Staging DB_PASSWORD=Kx8vQ2mLp9zR is in the vault"},
                                  {"content": "Staging uses Postgres 16"}]))
    report = run.json("import", str(source), "-n", "work")
    assert report["counts"]["added"] == 1 and report["counts"]["skipped"] == 1
    assert report["skipped"][0]["reason"].startswith("secret found: ")
    assert "Kx8vQ2mLp9zR" not in report["skipped"][0]["reason"]
    masked = run.json("import", str(source), "-n", "work", "--redact")
    assert masked["counts"]["added"] == 1
    note = Vault(vault_dir).get(masked["added"][0]["id"])
    assert "Kx8vQ2mLp9zR" not in note.text and "[REDACTED" in note.text


def test_unknown_path_and_format(run, tmp_path):
    run("import", str(tmp_path / "missing.db"), expect=1)
    odd = tmp_path / "notes.txt"
    odd.write_text("hello")
    assert "--format" in run("import", str(odd), expect=2).stderr


# ---------------------------------------------------------------- export and the way back

CRLF_NOTE = ("---\r\nid: handnote\r\nnamespace: personal\r\nmood: calm   # a comment kept as it is\r\n"
             "custom_list:\r\n  - a\r\n  - b\r\n---\r\nI keep my passport (паспорт) in the blue folder.\r\n\r\n"
             "No newline at the end")


@pytest.fixture
def full_vault(vault_dir, run, lexical):
    """Notes in several namespaces, a skill, an archived, a superseded and a graded note, a hand-written CRLF note."""
    run("add", "Staging runs Postgres 16 on port 5433", "-n", "work/infra", "--tags", "db")
    run("add", "Deploys go through the staging branch", "-n", "work/process")
    graded = run.json("add", "The user prefers dark mode", "-n", "personal")["id"]
    run("grade", graded, "good")
    old = run.json("add", "The wiki moved to Notion", "-n", "work/process")["id"]
    run("archive", old)
    wrong = run.json("add", "The office is on the third floor", "-n", "work/office")["id"]
    run("correct", wrong, "The office is on the fourth floor", "-r", "we moved in March")
    run("learn", "Release the CLI", "--trigger", "a tag is pushed", "--steps", "1. bump 2. tag 3. push",
        "--outcome", "a release on PyPI", "--lessons", "run the tests first", "-n", "work")
    (vault_dir / "memories" / "personal").mkdir(parents=True, exist_ok=True)
    (vault_dir / "memories" / "personal" / "passport.md").write_bytes(CRLF_NOTE.encode())
    return vault_dir


def test_export_lists_every_note_with_its_exact_text(full_vault, run):
    lines = run("export", "--jsonl").stdout.splitlines()
    records = [r for r in map(json.loads, lines) if "path" in r]
    logs = [r for r in map(json.loads, lines) if "log" in r]
    assert {line["log"] for line in logs} == {"reviews.jsonl", "archive.jsonl"}, "the grades' history too"
    by_path = {r["path"]: r for r in records}
    assert set(by_path) == set(files(full_vault))
    assert any(p.startswith("archive/") for p in by_path)
    hand = by_path["memories/personal/passport.md"]
    assert hand["text"] == CRLF_NOTE and hand["id"] == "handnote" and hand["namespace"] == "personal"
    skill = next(r for r in records if r["type"] == "skill")
    assert skill["path"].startswith("skills/work/") and skill["status"] == "active"
    assert {r["status"] for r in records} >= {"active", "archived", "superseded"}


def test_export_then_import_into_an_empty_vault_is_identical(full_vault, run, tmp_path):
    export = tmp_path / "backup.jsonl"
    run.json("export", "--jsonl", "-o", str(export))
    empty = tmp_path / "empty"
    init_vault(empty)
    from tests.conftest import Cli

    report = Cli(empty).json("import", str(export))
    assert report["format"] == "jsonl"
    assert report["counts"]["added"] == len(files(full_vault)) and report["counts"]["errors"] == 0
    assert files(empty) == files(full_vault)  # same paths, same bytes (CRLF and unknown properties too)
    restored = Vault(empty)
    assert {n.id for n in restored.notes(include_hidden=True)} == {n.id for n in Vault(full_vault).notes(True)}
    # The review and archive logs came too, line for line: `why` shows the same grades.
    for log in ("reviews.jsonl", "archive.jsonl"):
        assert (empty / ".vaultmem" / log).read_bytes() == (full_vault / ".vaultmem" / log).read_bytes()
    assert report["reviews"] > 0 and report["archive_lines"] > 0
    again = Cli(empty).json("import", str(export))  # a second time: all unchanged
    assert again["counts"]["unchanged"] == len(files(full_vault)) and again["counts"]["added"] == 0
    assert again["reviews"] == 0 and again["archive_lines"] == 0, "no log line twice"


def test_import_of_an_export_never_overwrites(full_vault, run, tmp_path):
    export = tmp_path / "backup.jsonl"
    run("export", "-o", str(export))
    passport = full_vault / "memories" / "personal" / "passport.md"
    passport.write_bytes(CRLF_NOTE.replace("blue", "red").encode())
    result = run("import", str(export), "--json", expect=3)
    report = json.loads(result.stdout)
    assert report["counts"]["conflicts"] == 1 and report["counts"]["unchanged"] == len(files(full_vault)) - 1
    assert report["conflicts"][0]["path"] == "memories/personal/passport.md"
    assert b"red folder" in passport.read_bytes()


def test_an_exported_note_whose_name_another_note_holds_is_restored_beside_it(run, tmp_path):
    """Two vaults learned the same words under different ids: importing one's export into the
    other writes the note under the next free name, instead of skipping it as a conflict."""
    from .conftest import Cli

    first, second = tmp_path / "first", tmp_path / "second"
    init_vault(first)
    init_vault(second)
    mine = Cli(first).json("add", "The standup is at 9:30 every weekday", "-n", "team")
    theirs = Cli(second).json("add", "The standup is at 9:30 every weekday", "-n", "team")
    export = tmp_path / "second.jsonl"
    Cli(second)("export", "-o", str(export))
    report = Cli(first).json("import", str(export))
    assert report["counts"]["conflicts"] == 0 and report["counts"]["added"] == 1
    restored = Cli(first).json("show", theirs["id"])
    assert restored["path"] == mine["path"].replace(".md", "-2.md")
    assert Cli(first).json("show", mine["id"])["path"] == mine["path"]  # the vault's own note as it was
    assert Cli(first).json("import", str(export))["counts"]["added"] == 0  # and again: nothing new


def test_a_bad_export_line_is_reported(vault_dir, run, tmp_path):
    export = tmp_path / "bad.jsonl"
    export.write_text("\n".join([
        json.dumps({"path": "../outside.md", "text": "---\nid: x\n---\nhi\n"}),
        json.dumps({"path": "memories/a/ok.md", "text": "---\nid: okok\ntype: memory\n---\nfine\n"}),
        "not json",
    ]) + "\n")
    result = run("import", str(export), "--json", expect=2)
    report = json.loads(result.stdout)
    assert report["counts"]["added"] == 1 and report["counts"]["errors"] == 1 and report["counts"]["skipped"] == 1
    assert (vault_dir / "memories" / "a" / "ok.md").read_text() == "---\nid: okok\ntype: memory\n---\nfine\n"
    assert not (vault_dir.parent / "outside.md").exists()


def test_a_folder_with_vaultmem_notes_restores_them(full_vault, tmp_path, lexical):
    copy = tmp_path / "copy"
    shutil.copytree(full_vault / "memories", copy / "memories")
    fmt, records = read(copy)
    assert fmt == "markdown" and all(isinstance(r, Restore) for r in records)
    empty = tmp_path / "empty"
    init_vault(empty)
    report = run_import(Vault(empty), copy)
    assert not report.errors and len(report.added) == len(records)
    assert files(empty) == {p: b for p, b in files(full_vault).items() if p.startswith("memories/")}


def test_an_obsidian_folder_keeps_links_ids_and_daily_note_dates(vault_dir, run, tmp_path, lexical):
    """Notes linked by file name, one with its own id, a daily note: after the import the links
    still resolve in Obsidian (the old file name is an alias: vaultmem names files after their
    text), `show` finds a note by its old id, and a daily note is dated by its name."""
    notes = tmp_path / "notes"
    (notes / "daily").mkdir(parents=True)
    (notes / "Apollo architecture.md").write_text("The Apollo backend is three Go services behind Envoy.\n")
    (notes / "Apollo launch.md").write_text("---\nid: apollo-launch\naliases: [Launch]\n---\n"
                                            "Apollo launches on 12 May; see [[Apollo architecture]].\n")
    daily = notes / "daily" / "2025-07-01.md"
    daily.write_text("Met Dana about the Apollo budget.\n")
    os.utime(daily, (1741000000, 1741000000))  # saved in March 2025: the name says July
    run.json("import", str(notes), "-n", "obsidian")
    vault = Vault(vault_dir)
    by_text = {n.text.splitlines()[-1]: n for n in vault.notes()}
    architecture = by_text["The Apollo backend is three Go services behind Envoy."]
    text = (vault_dir / architecture.path).read_text()
    assert "aliases:\n  - Apollo architecture\n" in text
    launch = run.json("show", "apollo-launch")
    assert launch["id"] == by_text["Apollo launches on 12 May; see [[Apollo architecture]]."].id
    assert "aliases:\n  - Apollo launch\n  - Launch\n" in (vault_dir / launch["path"]).read_text()
    assert by_text["Met Dana about the Apollo budget."].created.isoformat() == "2025-07-01T00:00:00+00:00"


def test_a_markdown_note_changed_since_its_import_supersedes_its_old_text(vault_dir, run, tmp_path, lexical):
    """A notes folder imported again after a note in it changed: the note's new text supersedes
    what the first import made (one memory in force, the old one kept as history), and `show` by
    the note's own id finds the new one; unless the person edited the imported note in the vault
    meanwhile (recorded or not): then it is a conflict (exit 3) and both are left as they are."""
    notes = tmp_path / "notes"
    notes.mkdir()
    deploys = notes / "Deploys.md"
    deploys.write_text("---\nid: rule-7\n---\nDeploys happen on Tuesdays after standup.\n")
    wifi = notes / "Wifi.md"
    wifi.write_text("The wifi password rotates on the first Monday of the month.\n")
    run.json("import", str(notes), "-n", "team")
    vault = Vault(vault_dir)
    first = {n.text.splitlines()[-1]: n for n in vault.notes()}
    old = first["Deploys happen on Tuesdays after standup."]

    deploys.write_text("---\nid: rule-7\n---\nDeploys happen on Wednesdays after standup.\n")
    predicted = run.json("import", str(notes), "-n", "team", "--dry-run")
    assert predicted["counts"]["updated"] == 1 and predicted["counts"]["added"] == 0
    assert Vault(vault_dir).get(old.id).status == "active", "a dry run writes nothing"
    report = run.json("import", str(notes), "-n", "team")
    assert report["counts"] == {"added": 0, "updated": 1, "merged": 1, "unchanged": 0, "conflicts": 0,
                                "skipped": 0, "errors": 0}
    vault = Vault(vault_dir)
    new = vault.get(report["updated"][0]["id"])
    assert new.text.splitlines()[-1] == "Deploys happen on Wednesdays after standup."
    assert vault.get(old.id).status == "superseded" and vault.get(old.id).superseded_by == new.link
    assert run.json("show", "rule-7")["id"] == new.id
    in_force = [n for n in vault.notes() if n.source == old.source]
    assert [n.id for n in in_force] == [new.id]
    again = run.json("import", str(notes), "-n", "team")
    assert again["counts"]["updated"] == 0 and again["counts"]["added"] == 0, "the same folder again: nothing"

    # The person fixed the imported wifi note in the vault (no command ran since), then the file changed too.
    kept = first["The wifi password rotates on the first Monday of the month."]
    hand = vault_dir / kept.path
    hand.write_text(hand.read_text().replace("first Monday", "first Tuesday"))
    wifi.write_text("The wifi password rotates on the second Monday of the month.\n")
    result = run("import", str(notes), "-n", "team", expect=3)
    assert f"imported as {kept.id}, which was edited in the vault too" in result.output
    vault = Vault(vault_dir)
    assert vault.get(kept.id).status == "active" and "first Tuesday" in vault.get(kept.id).text
    assert not any("second Monday" in n.text for n in vault.notes(include_hidden=True))
