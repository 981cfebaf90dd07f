"""The vault in git: real repositories, clones that add, grade (the same notes too), correct,
archive and edit by hand, merged in both orders with vaultmem's drivers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from vaultmem.cli.main import cli
from vaultmem.config import load_config
from vaultmem.core.schedule import replay
from vaultmem.store.ledger import check_chain
from vaultmem.vault import Vault, init_vault

CARD = ("state", "step", "stability", "difficulty", "due", "last_review", "reps", "lapses", "strength")


@pytest.fixture(autouse=True)
def git_identity(tmp_path, monkeypatch):
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("VAULTMEM_NO_SERVER", "1")
    yield
    # Recall keeps one warm engine per vault in this process (open catalogs and index files):
    # these vaults are gone after the test, so their engines go too (the suite shares one process).
    from vaultmem.search import engine

    for key in [k for k in engine._ENGINES if k[0].startswith(str(tmp_path))]:
        engine._ENGINES.pop(key).vault.forget_catalog()


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert not check or done.returncode == 0, f"git {' '.join(args)}: {done.stderr}{done.stdout}"
    return done


def vaultmem(root: Path, *args: str, expect: int = 0, now: str | None = None):
    env = {"VAULTMEM_NOW": now} if now else {}
    result = CliRunner().invoke(cli, ["--vault", str(root), *args], env=env, catch_exceptions=False)
    assert expect is None or result.exit_code == expect, f"exit {result.exit_code}: {result.output}"
    return result


def at(monkeypatch, when: str) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", when)


def commit(root: Path, message: str) -> None:
    Vault(root).verify()  # hand edits on the record, as `vaultmem sync` does before it commits
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def origin(tmp_path, monkeypatch):
    """A vault in git with three memories graded once, the drivers installed, committed."""
    root = tmp_path / "origin"
    git(tmp_path, "init", "-q", str(root))
    init_vault(root)
    vaultmem(root, "git", "install")
    vault = Vault(root)
    ids = {}
    for key, text in (("db", "Staging runs Postgres 16 on port 5433"), ("deploy", "Deploys go blue green via Argo"),
                      ("cache", "The cache is Redis 7 on the cache host")):
        ids[key] = vault.add(text, "work").note.id
    at(monkeypatch, "2026-01-06T09:00:00")
    for note_id in ids.values():
        vault.grade(note_id, "good")
    note = vault.get(ids["deploy"])
    (root / note.path).write_text((root / note.path).read_text() + "\nLine two.\n\nLine three.\n")
    commit(root, "base")
    return root, ids


def clone(origin: Path, name: str) -> Path:
    target = origin.parent / name
    git(origin.parent, "clone", "-q", str(origin), str(target))
    vaultmem(target, "git", "install")
    return target


def clones_through_a_remote(origin_root: Path) -> tuple[Path, Path]:
    """Two machines, a and b, sharing the origin's vault through a bare remote (what sync pulls and pushes)."""
    remote = origin_root.parent / "remote.git"
    git(origin_root.parent, "clone", "-q", "--bare", str(origin_root), str(remote))
    return clone(remote, "a"), clone(remote, "b")


def work_on_clones(origin_root: Path, ids: dict, monkeypatch) -> tuple[Path, Path]:
    """Clone A and clone B each add, grade (the same note db on both), correct or archive,
    and edit a body by hand, then commit."""
    a, b = clone(origin_root, "a"), clone(origin_root, "b")
    va = Vault(a)
    at(monkeypatch, "2026-01-07T10:00:00")
    va.add("Alpha uses Kafka for events", "alpha")
    va.grade(ids["db"], "again")
    at(monkeypatch, "2026-01-09T10:00:00")
    va.grade(ids["db"], "good")
    va.grade(ids["deploy"], "hard")
    va.correct(ids["cache"], "The cache is Valkey 8 on the cache host", reason="migrated")
    path = a / va.get(ids["deploy"]).path
    path.write_text(path.read_text().replace("Line two.", "Line two, edited on A."))
    commit(a, "a")

    vb = Vault(b)
    at(monkeypatch, "2026-01-08T10:00:00")
    vb.add("Beta runs on ARM servers", "beta")
    vb.grade(ids["db"], "good")
    at(monkeypatch, "2026-01-10T10:00:00")
    vb.grade(ids["db"], "easy")
    vb.archive(ids["deploy"], reason="retired")
    path = b / vb.get(ids["deploy"]).path
    path.write_text(path.read_text().replace("Line three.", "Line three, edited on B."))
    commit(b, "b")
    return a, b


def log_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line]


@pytest.mark.slow
@pytest.mark.parametrize("order", ["a-pulls-b", "b-pulls-a"])
def test_clones_merge_without_conflicts_in_both_orders(origin, monkeypatch, order):
    origin_root, ids = origin
    a, b = work_on_clones(origin_root, ids, monkeypatch)
    here, there = (a, b) if order == "a-pulls-b" else (b, a)
    git(here, "remote", "add", "other", str(there))
    git(here, "fetch", "-q", "other")
    base = git(here, "merge-base", "HEAD", "other/main").stdout.strip()
    merged = git(here, "merge", "--no-edit", "other/main", check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert git(here, "diff", "--name-only", "--diff-filter=U").stdout == ""

    # Every review line of both sides, once.
    reviews = log_lines((here / ".vaultmem/reviews.jsonl").read_text())
    sides = set(log_lines((a / ".vaultmem/reviews.jsonl").read_text())) | set(
        log_lines((b / ".vaultmem/reviews.jsonl").read_text()))
    assert sorted(reviews) == sorted(sides) and len(reviews) == len(set(reviews))
    times = [json.loads(line)["review_datetime"] for line in reviews]
    assert times == sorted(times)

    # The card of the note graded on both sides is the replay of the merged log since the base.
    vault = Vault(here)
    db = vault.get(ids["db"])
    base_text = git(here, "show", f"{base}:{db.path}").stdout
    base_note = vault.read_note(db.path, base_text)
    base_reviews = set(log_lines(git(here, "show", f"{base}:.vaultmem/reviews.jsonl").stdout))
    since = sorted((json.loads(line) for line in reviews if line not in base_reviews
                    and json.loads(line)["id"] == ids["db"]), key=lambda r: r["review_datetime"])
    assert [r["rating"] for r in since] == ["again", "good", "good", "easy"]
    expected = replay(base_note, since, load_config(here / ".vaultmem/config.yaml"))
    for key in CARD:
        assert getattr(db, key) == expected[key], key
    assert db.reps == base_note.reps + 4

    # Archived on B, graded and edited on A: archived, both body edits, A's grade.
    deploy = vault.get(ids["deploy"])
    assert deploy.path.startswith("archive/") and deploy.status == "archived"
    assert "Line two, edited on A." in deploy.body and "Line three, edited on B." in deploy.body
    assert deploy.reps == 2
    cache = vault.get(ids["cache"])
    assert cache.status == "superseded" and cache.superseded_by

    # The ledger joins both branches; verify --strict passes.
    assert not check_chain(vault.ledger.records())
    assert json.loads(log_lines((here / ".vaultmem/ledger.jsonl").read_text())[-1])["op"] == "merge"
    vaultmem(here, "verify", "--strict")

    # Recall works on the merged vault: notes from both sides.
    hits = json.loads(vaultmem(here, "recall", "Kafka events", "--json").stdout)
    assert hits and "Kafka" in hits[0]["text"]
    hits = json.loads(vaultmem(here, "recall", "ARM servers", "--json").stdout)
    assert hits and "ARM" in hits[0]["text"]

    # Reads touch nothing git tracks.
    for args in (("recall", "postgres port"), ("prompt",), ("review",), ("health",), ("verify",),
                 ("verify", "--strict"), ("list", "--all"), ("show", ids["db"])):
        vaultmem(here, *args)
    assert git(here, "status", "--porcelain").stdout == ""


@pytest.mark.slow
def test_both_orders_give_the_same_notes(origin, monkeypatch):
    origin_root, ids = origin
    a, b = work_on_clones(origin_root, ids, monkeypatch)
    results = []
    for here, there in ((a, b), (b, a)):
        git(here, "fetch", "-q", str(there), "main:incoming")
        git(here, "merge", "-q", "--no-edit", "incoming")
        vault = Vault(here)
        results.append({n.id: {k: getattr(n, k) for k in (*CARD, "status", "tags", "days", "body")}
                        for n in vault.notes(include_hidden=True)})
    assert results[0] == results[1]


@pytest.mark.slow
@pytest.mark.parametrize("order", ["a-pulls-b", "b-pulls-a"])
def test_the_same_fact_added_on_two_clones_merges_into_one_note(origin, monkeypatch, order):
    """Two machines learn the same fact: one file name, two ids. The merge keeps one note (the
    smaller id, in both orders) with both sides' evidence and the more reviewed card, instead of
    git's markers in the properties; verify then records the other id as gone."""
    origin_root, _ids = origin
    a, b = clone(origin_root, "a"), clone(origin_root, "b")
    at(monkeypatch, "2026-01-07T10:00:00")
    on_a = Vault(a).add("The standup is at 9:30 every weekday", "team", session="sa").note
    commit(a, "a")
    at(monkeypatch, "2026-01-08T10:00:00")
    vb = Vault(b)
    on_b = vb.add("The standup is at 9:30 every weekday", "team", session="sb").note
    vb.grade(on_b.id, "good")
    commit(b, "b")
    assert on_a.path == on_b.path and on_a.id != on_b.id
    here, there = (a, b) if order == "a-pulls-b" else (b, a)
    git(here, "remote", "add", "other", str(there))
    git(here, "fetch", "-q", "other")
    merged = git(here, "merge", "--no-edit", "other/main", check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    text = (here / on_a.path).read_text()
    assert "<<<<<<<" not in text and ">>>>>>>" not in text
    vault = Vault(here)
    note = vault.get(min(on_a.id, on_b.id))
    assert {"sa", "sb"} <= set(note.sessions) and note.reps == 1  # B's grade: the more reviewed card
    assert [n.id for n in vault.notes() if n.namespace == "team"] == [note.id]
    result = vault.verify()
    assert result["breaks"] == [] and result["tampering"] == []
    assert vault.verify()["changes"] == []  # the other id's note is now on record as gone


@pytest.mark.slow
def test_a_true_body_conflict_is_left_and_named(origin, monkeypatch):
    origin_root, ids = origin
    a, b = clone(origin_root, "a"), clone(origin_root, "b")
    for root, words in ((a, "on A"), (b, "on B")):
        vault = Vault(root)
        vault.grade(ids["db"], "good")
        path = root / vault.get(ids["db"]).path
        path.write_text(path.read_text().replace("port 5433", f"port 5433 ({words})"))
        commit(root, words)
    git(a, "fetch", "-q", str(b), "main:incoming")
    merged = git(a, "merge", "--no-edit", "incoming", check=False)
    assert merged.returncode != 0
    conflicted = git(a, "diff", "--name-only", "--diff-filter=U").stdout.split()
    assert conflicted == [Vault(origin_root).get(ids["db"]).path]
    text = (a / conflicted[0]).read_text()
    head, body = text.split("\n---\n", 1)
    assert "<<<<<<<" not in head and "<<<<<<<" in body  # the properties merged, the text left to a person
    message = f"unresolved merge conflict in {conflicted[0]}"
    result = vaultmem(a, "grade", ids["db"], "good", expect=2)
    assert message in result.output
    assert message in vaultmem(a, "health").output
    recall = vaultmem(a, "recall", "postgres")
    assert message in recall.stderr
    result = vaultmem(a, "sync", expect=2)
    assert "unmerged paths" in result.output


def test_install_is_idempotent_and_status_says_what_is_set(tmp_path):
    root = tmp_path / "repo" / "vault"
    root.mkdir(parents=True)
    git(tmp_path / "repo", "init", "-q")
    result = vaultmem(root, "init", str(root))
    assert "vaultmem git install" in result.output  # a hint, never a question
    vaultmem(root, "git", "status", expect=1)
    assert "set up" in vaultmem(root, "git", "install").output
    attributes = (root / ".gitattributes").read_text()
    assert "already set up" in vaultmem(root, "git", "install").output
    assert (root / ".gitattributes").read_text() == attributes
    status = json.loads(vaultmem(root, "git", "status", "--json").stdout)
    assert status["installed"] and all(status["drivers"].values())
    check = git(root, "check-attr", "merge", "--", "memories/work/x.md", ".vaultmem/reviews.jsonl").stdout
    assert "memories/work/x.md: merge: vaultmem-note" in check and "reviews.jsonl: merge: vaultmem-log" in check


def test_init_outside_git_says_nothing_of_git(tmp_path):
    result = vaultmem(tmp_path / "v", "init", str(tmp_path / "v"))
    assert "git install" not in result.output and json.loads(
        vaultmem(tmp_path / "v", "init", str(tmp_path / "v"), "--json").stdout)["git"] is None
    asked = vaultmem(tmp_path / "w", "init", str(tmp_path / "w"), "--git").output
    assert "is not in a git repository: nothing set up for git" in asked, "--git asked for it: say why not"


def test_a_clone_without_the_drivers_is_not_in_effect(tmp_path):
    """.gitattributes comes with a clone, the drivers (.git/config) do not: git then merges as
    plain text, so status must not say the setup is in effect."""
    root = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(root))
    init_vault(root)
    vaultmem(root, "git", "install")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "vault")
    git(tmp_path, "clone", "-q", str(root), str(tmp_path / "copy"))
    status = json.loads(vaultmem(tmp_path / "copy", "git", "status", "--json", expect=1).stdout)
    assert status["attributes"] and not any(status["drivers"].values())
    assert status["effective"] is False and status["installed"] is False


@pytest.mark.slow
def test_sync_without_an_upstream_refuses_before_recording_or_committing_anything(origin):
    root, ids = origin
    path = root / Vault(root).get(ids["db"]).path
    path.write_text(path.read_text().replace("port 5433", "port 5434"))  # a hand edit, not yet recorded
    head = git(root, "rev-parse", "HEAD").stdout
    ledger = (root / ".vaultmem" / "ledger.jsonl").read_text()
    result = vaultmem(root, "sync", expect=2)
    assert "no upstream" in result.output
    assert git(root, "rev-parse", "HEAD").stdout == head  # nothing committed
    assert (root / ".vaultmem" / "ledger.jsonl").read_text() == ledger  # nor recorded
    assert git(root, "status", "--porcelain").stdout.strip()  # the edit still waits, as it was


def test_sync_between_two_machines_through_a_bare_remote(origin, monkeypatch):
    origin_root, ids = origin
    a, b = clones_through_a_remote(origin_root)
    at(monkeypatch, "2026-01-07T10:00:00")
    Vault(a).grade(ids["db"], "good")
    vaultmem(a, "sync")
    at(monkeypatch, "2026-01-08T10:00:00")
    Vault(b).grade(ids["db"], "hard")
    cache = b / Vault(b).get(ids["cache"]).path
    cache.write_text(cache.read_text().replace("Redis 7", "Redis 7.2"))  # by hand: sync records it, and says so
    assert "recorded 1 hand edit on the ledger" in vaultmem(b, "sync").output
    vaultmem(a, "sync")
    for root in (a, b):
        vault = Vault(root)
        assert vault.get(ids["db"]).reps == 3
        vaultmem(root, "verify", "--strict")
        assert git(root, "status", "--porcelain").stdout == ""


def grade_then_archive(root: Path, note_id: str, first_day: int, grades: int, monkeypatch, hour: int = 10,
                       edit: str | None = None) -> None:
    """Grade a note on `grades` days (the first `again`), optionally edit its text, archive it, commit:
    from 5 grades on, git no longer sees the move to archive/ as a rename."""
    vault = Vault(root)
    for day in range(first_day, first_day + grades):
        at(monkeypatch, f"2026-01-{day:02d}T{hour:02d}:00:00")
        vault.grade(note_id, "again" if day == first_day else "good")
    if edit:
        path = root / vault.get(note_id).path
        path.write_text(path.read_text().replace("port 5433", edit))
    vault.archive(note_id, reason="retired")
    commit(root, root.name)


@pytest.mark.slow
def test_a_note_archived_on_one_side_and_graded_on_the_other_is_merged_into_the_archive(origin, monkeypatch):
    origin_root, ids = origin
    a, b = clone(origin_root, "a"), clone(origin_root, "b")
    at(monkeypatch, "2026-01-07T09:00:00")
    Vault(a).grade(ids["cache"], "hard")
    commit(a, "a")
    grade_then_archive(b, ids["cache"], 8, 5, monkeypatch)
    git(a, "fetch", "-q", str(b), "main:incoming")
    merged = git(a, "merge", "--no-edit", "incoming", check=False)
    assert merged.returncode != 0 and "deleted in incoming" in merged.stdout  # git saw no rename
    assert "merged memories/work/the-cache" in vaultmem(a, "git", "resolve").output
    git(a, "commit", "-q", "--no-edit")
    assert git(a, "diff", "--name-only", "--diff-filter=U").stdout == ""
    note = Vault(a).get(ids["cache"])
    assert note.path.startswith("archive/") and note.status == "archived" and note.reps == 7
    assert not (a / note.path[len("archive/"):]).exists()
    vaultmem(a, "verify", "--strict")
    assert git(a, "status", "--porcelain").stdout == ""


@pytest.mark.slow
def test_a_note_graded_and_archived_on_both_sides_ends_archived_once(origin, monkeypatch):
    origin_root, ids = origin
    a, b = clone(origin_root, "a"), clone(origin_root, "b")
    grade_then_archive(a, ids["cache"], 7, 1, monkeypatch, hour=9)
    grade_then_archive(b, ids["cache"], 7, 5, monkeypatch)  # on B too changed for git to see the move
    git(a, "fetch", "-q", str(b), "main:incoming")
    stopped = git(a, "merge", "--no-edit", "incoming", check=False)
    assert stopped.returncode != 0 and "rename/delete" in stopped.stdout  # git saw A's move, not B's
    if stopped.returncode != 0:
        vaultmem(a, "git", "resolve")
        git(a, "commit", "-q", "--no-edit")
    assert git(a, "diff", "--name-only", "--diff-filter=U").stdout == ""
    matches = Vault(a).find(ids["cache"])
    assert len(matches) == 1 and matches[0].path.startswith("archive/") and matches[0].reps == 7
    vaultmem(a, "verify", "--strict")


@pytest.mark.slow
def test_a_body_conflict_on_a_note_archived_on_one_side_is_left_at_the_archived_path(origin, monkeypatch):
    origin_root, ids = origin
    a, b = clone(origin_root, "a"), clone(origin_root, "b")
    rel = Vault(origin_root).get(ids["db"]).path
    (a / rel).write_text((a / rel).read_text().replace("port 5433", "port 5433 (said A)"))
    commit(a, "a")
    grade_then_archive(b, ids["db"], 7, 5, monkeypatch, edit="port 5433 (said B)")
    git(a, "fetch", "-q", str(b), "main:incoming")
    assert git(a, "merge", "--no-edit", "incoming", check=False).returncode != 0
    vaultmem(a, "git", "resolve", expect=3)
    left = git(a, "diff", "--name-only", "--diff-filter=U").stdout.split()
    assert left == [f"archive/{rel}"] and not (a / rel).exists()
    text = (a / left[0]).read_text()
    assert "said A" in text and "said B" in text and "<<<<<<<" in text.split("\n---\n", 1)[1]
    assert f"unresolved merge conflict in archive/{rel}" in vaultmem(a, "grade", ids["db"], "good", expect=2).output


@pytest.mark.slow
def test_a_memory_corrected_differently_on_two_machines_ends_contested_on_both(origin, monkeypatch):
    """Each machine corrects the same wrong memory its own way: once merged both corrections are in
    force, and the memory's `superseded_by` can name only one. sync contests the two (on the
    machine that merges, then on the other through the remote), so recall flags them and
    `resolve` keeps the right one; the ledgers stay clean."""
    origin_root, ids = origin
    a, b = clones_through_a_remote(origin_root)
    at(monkeypatch, "2026-01-07T10:00:00")
    on_a = Vault(a).correct(ids["cache"], "The cache is Valkey 8 on the cache host").note
    assert "contested" not in vaultmem(a, "sync").output
    at(monkeypatch, "2026-01-08T10:00:00")
    on_b = Vault(b).correct(ids["cache"], "The cache is Memcached 1.6 on the cache host").note
    said = vaultmem(b, "sync").output
    assert "corrected on two machines" in said and on_a.id in said and on_b.id in said
    vaultmem(a, "sync")
    for root in (a, b):
        vault = Vault(root)
        va, vb = vault.get(on_a.id), vault.get(on_b.id)
        assert va.contested and vb.contested
        assert va.contested_with == (vb.link,) and vb.contested_with == (va.link,)
        vaultmem(root, "verify", "--strict")
        assert git(root, "status", "--porcelain").stdout == ""
    assert vaultmem(a, "sync").output.strip() == "pulled and pushed"  # settled: not contested again
    vaultmem(a, "resolve", on_b.id)
    vaultmem(a, "sync")
    vaultmem(b, "sync")
    vault = Vault(b)
    assert vault.get(on_a.id).status == "superseded" and not vault.get(on_b.id).contested
    hits = [hit.note.id for hit in vault.recall("which cache runs on the cache host", k=5, min_score=0)]
    assert on_b.id in hits and on_a.id not in hits
    vaultmem(b, "verify", "--strict")


@pytest.mark.slow
def test_a_merge_brought_in_after_its_side_went_on_keeps_the_chain_intact(origin, monkeypatch):
    """B pushes a grade and grades again; A merges B's first grade and pushes; B then merges
    A's merge. A's merge record joins B's first grade, which B's second already followed (a
    criss-cross, as git histories have): every clone's chain must still verify."""
    origin_root, ids = origin
    a, b = clones_through_a_remote(origin_root)
    at(monkeypatch, "2026-01-07T10:00:00")
    Vault(a).grade(ids["db"], "good")
    Vault(b).grade(ids["cache"], "good")
    vaultmem(b, "sync")
    at(monkeypatch, "2026-01-08T10:00:00")
    Vault(b).grade(ids["cache"], "hard")
    vaultmem(a, "sync")  # merges B's first grade
    said = vaultmem(b, "sync").output  # merges A's merge into B's second grade
    assert "warning" not in said, said
    vaultmem(a, "sync")
    for root in (a, b):
        vaultmem(root, "verify", "--strict")
        assert Vault(root).get(ids["cache"]).reps == 3


def test_a_copied_ledger_line_is_a_break(tmp_path):
    """A line copied further down (a bad hand merge) is named, not taken as a second branch."""
    init_vault(tmp_path / "v")
    vault = Vault(tmp_path / "v")
    note = vault.add("Staging runs Postgres 16 on port 5433", "work").note
    vault.grade(note.id, "good")
    ledger = tmp_path / "v" / ".vaultmem" / "ledger.jsonl"
    lines = ledger.read_text().splitlines(keepends=True)
    ledger.write_text("".join(lines + lines[-1:]))
    problems = check_chain(vault.ledger.records())
    assert [(p.kind, p.where, p.detail) for p in problems] == [
        ("break", f"ledger.jsonl line {len(lines) + 1}", "the same record as an earlier line (a line was copied)")]


def settle_by_hand(root: Path) -> None:
    """What a person does with a true conflict: keep both sides' lines, drop the markers, commit."""
    for rel in git(root, "diff", "--name-only", "--diff-filter=U").stdout.split():
        path = root / rel
        kept = [line for line in path.read_text().splitlines(keepends=True)
                if not line.startswith(("<<<<<<<", "=======", ">>>>>>>", "|||||||"))]
        path.write_text("".join(kept))
        git(root, "add", rel)
    git(root, "commit", "-q", "--no-edit")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_random_work_on_two_clones_always_verifies(origin, monkeypatch, seed):
    """Two machines add, grade, correct, archive and edit by hand in a random order, syncing now
    and then through a remote (a true conflict settled as a person would): after every sync the
    chain and every note verify, and in the end both clones hold the same notes."""
    import random

    rng = random.Random(seed)
    origin_root, _ids = origin
    clones = list(clones_through_a_remote(origin_root))

    def sync(root: Path) -> None:
        result = vaultmem(root, "sync", expect=None)
        if result.exit_code == 3:
            settle_by_hand(root)
            result = vaultmem(root, "sync", expect=None)
        assert result.exit_code == 0 and "warning" not in result.output, result.output
        vaultmem(root, "verify", "--strict")

    for step in range(16):
        root = rng.choice(clones)
        vault = Vault(root)
        at(monkeypatch, f"2026-02-{step + 2:02d}T{rng.randint(8, 20):02d}:00:00")
        notes = vault.notes()
        note = rng.choice(notes)
        op = rng.choice(["grade", "grade", "add", "edit", "edit", "sync", "sync", "sync", "correct", "archive"])
        if op == "grade":
            vault.grade(note.id, rng.choice(["good", "hard", "again"]))
        elif op == "add":
            vault.add(f"Machine {root.name} learned fact {step} about widget w{rng.randint(0, 99)}", "work")
        elif op == "edit":
            path = root / note.path
            text = path.read_text()
            edited = text + f"\nA line by hand, {step} on {root.name}.\n" if rng.random() < 0.5 else \
                text.replace(" on ", f" ({root.name} {step}) on ", 1)
            path.write_text(edited)
        elif op == "correct":
            vault.correct(note.id, f"Corrected on {root.name} at step {step}: port {9000 + step}")
        elif op == "archive":
            vault.archive(note.id)
        else:
            sync(root)
    for root in clones + clones:
        sync(root)
    texts = [sorted((p.relative_to(root).as_posix(), p.read_text()) for p in root.rglob("*.md")
                    if not {".git", ".obsidian", "templates"} & set(p.relative_to(root).parts)) for root in clones]
    assert texts[0] == texts[1]
    for root in clones:
        assert git(root, "status", "--porcelain").stdout == ""


@pytest.mark.slow
def test_a_pull_that_puts_our_records_after_theirs_is_not_a_lost_ledger(origin, monkeypatch):
    """B pushes a grade; A grades, merges B's and pushes the merge; B's next pull fast-forwards
    to it, which puts B's own record after A's. Nothing was lost: a hand edit B then makes is
    recorded by its next sync, not refused as tampering."""
    origin_root, ids = origin
    a, b = clones_through_a_remote(origin_root)
    at(monkeypatch, "2026-01-07T10:00:00")
    Vault(b).grade(ids["cache"], "good")
    vaultmem(b, "sync")
    Vault(a).grade(ids["db"], "good")
    vaultmem(a, "sync")
    at(monkeypatch, "2026-01-08T10:00:00")
    vaultmem(b, "sync")  # a fast-forward to A's merge
    vaultmem(b, "list")  # B reads its ledger as it is now
    path = b / Vault(b).get(ids["cache"]).path
    path.write_text(path.read_text() + "\nA line by hand.\n")
    said = vaultmem(b, "sync").output
    assert "recorded 1 hand edit on" in said and "warning" not in said, said
    vaultmem(b, "verify", "--strict")


@pytest.mark.slow
def test_a_note_deleted_on_one_side_after_the_other_side_merged_it_stays_on_record(origin, monkeypatch):
    """A corrects a memory and pushes; B merges that, then deletes the correction by hand and
    syncs; A then merges B's work. Only B changed the correction since A's push: the merge
    record must not vouch for a text of it, or A's verify finds a recorded note missing."""
    origin_root, ids = origin
    a, b = clones_through_a_remote(origin_root)
    at(monkeypatch, "2026-01-07T10:00:00")
    fixed = Vault(a).correct(ids["cache"], "The cache is Valkey 8 on the cache host").note
    vaultmem(a, "sync")
    Vault(b).grade(ids["db"], "good")
    vaultmem(b, "sync")  # merges A's correction
    (b / Vault(b).get(fixed.id).path).unlink()
    vaultmem(b, "sync")  # records the deletion
    at(monkeypatch, "2026-01-08T10:00:00")
    Vault(a).grade(ids["deploy"], "good")
    vaultmem(a, "sync")
    for root in (a, b):
        vaultmem(root, "verify", "--strict")
        assert not (root / fixed.path).exists()


@pytest.mark.slow
def test_a_note_deleted_on_one_side_is_never_merged_into_another_note_added_there(origin, monkeypatch):
    """A deletes a memory by hand and adds another; B grades the deleted one. Notes share most of
    their lines, so git's rename detection took the new note for the old one renamed and merged
    B's grade into it. sync pairs only exact renames: the new note stays as A wrote it and the
    deleted one is a conflict of its own for a person (keep it or let it go)."""
    origin_root, _ids = origin
    alpha = Vault(origin_root).add("Service alpha runs on port 8001", "work", merge=False, supersede=False).note
    commit(origin_root, "alpha")
    a, b = clones_through_a_remote(origin_root)
    at(monkeypatch, "2026-01-07T10:00:00")
    (a / alpha.path).unlink()
    beta = Vault(a).add("Service beta runs on port 8002", "work", merge=False, supersede=False).note
    vaultmem(a, "sync")
    beta_text = (a / beta.path).read_text()
    at(monkeypatch, "2026-01-08T10:00:00")
    Vault(b).grade(alpha.id, "good")
    said = vaultmem(b, "sync", expect=3).output
    assert f"{alpha.path}: deleted on one side, changed on the other" in said and beta.path not in said
    assert (b / beta.path).read_text() == beta_text
    git(b, "add", alpha.path)  # B keeps the memory it graded
    git(b, "commit", "-q", "--no-edit")
    vaultmem(b, "sync")
    vaultmem(a, "sync")
    for root in (a, b):
        vault = Vault(root)
        assert vault.get(alpha.id).reps == 1 and vault.get(beta.id).reps == 0
        vaultmem(root, "verify", "--strict")


@pytest.mark.slow
def test_a_note_renamed_and_graded_on_one_side_and_graded_on_the_other_merges_by_its_id(origin, monkeypatch):
    """A renames a memory's file by hand and grades it (not an exact rename any more); B grades it
    at its old name. sync pairs the two by the note's id: one note at the new name, both grades."""
    origin_root, ids = origin
    a, b = clones_through_a_remote(origin_root)
    at(monkeypatch, "2026-01-07T10:00:00")
    old = Vault(a).get(ids["db"]).path
    renamed = old.replace(".md", "-staging.md")
    (a / old).rename(a / renamed)
    Vault(a).grade(ids["db"], "good")
    vaultmem(a, "sync")
    at(monkeypatch, "2026-01-08T10:00:00")
    Vault(b).grade(ids["db"], "hard")
    vaultmem(b, "sync")
    vaultmem(a, "sync")
    for root in (a, b):
        vault = Vault(root)
        note = vault.get(ids["db"])
        assert note.path == renamed and not (root / old).exists() and note.reps == 3
        vaultmem(root, "verify", "--strict")


def test_the_watcher_takes_a_merged_note_for_no_hand_edit(origin, monkeypatch):
    """A grade on each machine, then a sync: the note's text is the merge's, which its merge
    record vouches for. The watcher sees the file change and must not record it as a hand
    edit: it did, leaving `.vaultmem/ledger.jsonl` modified after every merge (and after a
    checkout of one), so `git checkout` refused to switch back."""
    origin_root, ids = origin
    a, b = clones_through_a_remote(origin_root)
    at(monkeypatch, "2026-01-07T10:00:00")
    Vault(b).grade(ids["db"], "good")
    vaultmem(b, "sync")
    at(monkeypatch, "2026-01-08T10:00:00")
    Vault(a).grade(ids["db"], "hard")
    vaultmem(a, "sync")
    vault = Vault(a)
    note = vault.get(ids["db"])
    assert vault.ledger.last(note.id)["op"] == "merge"
    assert vault.record_external_edits([note.path]) == 0
    assert git(a, "status", "--porcelain").stdout == ""
    git(a, "checkout", "-q", "HEAD~1")
    assert Vault(a).record_external_edits([note.path]) == 0
    git(a, "checkout", "-q", "main")
    assert Vault(a).record_external_edits([note.path]) == 0
    assert git(a, "status", "--porcelain").stdout == ""
    # a hand edit is still one (of a note whose last record is not a merge: after a merge, any text
    # of a note both sides changed is taken for the merged one until its next record, by verify too)
    cache = Vault(a).get(ids["cache"])
    path = a / cache.path
    path.write_text(path.read_text().replace("Redis 7", "Redis 7.2"))
    assert Vault(a).record_external_edits([cache.path]) == 1


def test_two_notes_given_one_name_on_two_machines_are_both_kept(origin, monkeypatch):
    """Two memories that open with the same words get the same file name on two machines:
    git stops on one file holding both, and keeping "the right lines" (what the message said)
    dropped one teammate's memory. sync keeps both, theirs under the next free name, and
    after a plain `git pull` that stopped on it, `health` says so and sync finishes the merge."""
    origin_root, _ids = origin
    a, b = clones_through_a_remote(origin_root)
    opening = "The release checklist for the mobile app lives in Confluence under "
    mob = Vault(a).add(opening + "MOB, owned by Priya", "process").note
    vaultmem(a, "sync")
    qa = Vault(b).add(opening + "QA, kept by Ravi", "process").note
    assert qa.path == mob.path
    vaultmem(b, "sync")
    vaultmem(a, "sync")
    for root in (a, b):
        vault = Vault(root)
        assert {vault.get(mob.id).text.splitlines()[-1], vault.get(qa.id).text.splitlines()[-1]} == {
            opening + "MOB, owned by Priya", opening + "QA, kept by Ravi"}
        assert vault.get(mob.id).path != vault.get(qa.id).path
        vaultmem(root, "verify", "--strict")
        assert git(root, "status", "--porcelain").stdout == ""

    # The same with a plain pull first: it stops on the file; health names two notes; sync settles it.
    ops = Vault(a).add("The on-call rotation for the payments team is kept in PagerDuty by Lena", "process").note
    vaultmem(a, "sync")
    other = Vault(b).add("The on-call rotation for the payments team is kept in PagerDuty by Omar", "process").note
    assert other.path == ops.path
    commit(b, "b")
    assert git(b, "pull", "-q", "--no-rebase", "--no-edit", check=False).returncode != 0
    assert "two different notes got this file name" in vaultmem(b, "health").output
    vaultmem(b, "sync")
    vault = Vault(b)
    assert vault.get(ops.id).path != vault.get(other.id).path
    vaultmem(b, "verify", "--strict")
    assert git(b, "status", "--porcelain").stdout == ""


def test_sync_refuses_to_share_conflict_markers_and_warns_of_unreadable_notes(origin, monkeypatch):
    """A merge committed with its markers by hand, or a note broken by hand: sync said "pulled
    and pushed" and every clone got a note it cannot read. Markers: refused, nothing shared;
    another unreadable note: shared, with a warning naming it."""
    origin_root, ids = origin
    a, _b = clones_through_a_remote(origin_root)
    path = a / Vault(a).get(ids["db"]).path
    text = path.read_text()
    markers = "<<<<<<< ours\nStaging runs Postgres 16\n=======\nStaging runs Postgres 17\n>>>>>>> theirs"
    path.write_text(text.replace("Staging runs Postgres 16 on port 5433", markers))
    commit(a, "merged by hand, markers and all")
    head = git(a, "rev-parse", "HEAD").stdout
    refused = vaultmem(a, "sync", expect=2)
    assert "unresolved merge conflict markers" in refused.output and git(a, "rev-parse", "HEAD").stdout == head
    assert git(a, "rev-parse", "origin/main").stdout != head, "nothing pushed"
    path.write_text(text)
    broken = a / "memories" / "work" / "broken.md"
    broken.write_text("---\ntags: [unclosed\n---\nA note with broken YAML\n")
    said = vaultmem(a, "sync").output
    assert "warning: shared a note vaultmem cannot read: memories/work/broken.md" in said


@pytest.mark.real_model
def test_memories_added_on_two_machines_that_contradict_are_contested_after_sync(origin, monkeypatch):
    """Machine b had not pulled when it added "Postgres 16" beside a's "Postgres 17": each add
    checked only its own vault, and after the merge both stood in force, uncontested (recall put
    the out-of-date one first, being newer). sync contests the pair on both clones."""
    origin_root, _ids = origin
    a, b = clones_through_a_remote(origin_root)
    at(monkeypatch, "2026-01-07T10:00:00")
    newer = Vault(a).add("The billing database runs Postgres 17 on port 6432", "work/infra").note
    vaultmem(a, "sync")
    at(monkeypatch, "2026-01-08T10:00:00")
    stale = Vault(b).add("The billing database runs Postgres 16 on port 6432", "work/infra").note
    unrelated = Vault(b).add("The office printer is on the second floor", "work/infra").note
    said = vaultmem(b, "sync").output
    assert f"{newer.id} vs {stale.id} are contested" in said or f"{stale.id} vs {newer.id} are contested" in said
    vaultmem(a, "sync")
    for root in (a, b):
        vault = Vault(root)
        assert vault.get(newer.id).contested and vault.get(stale.id).contested
        assert not vault.get(unrelated.id).contested
        vaultmem(root, "verify", "--strict")
        assert git(root, "status", "--porcelain").stdout == ""
