"""No secret lands in the vault: every field that reaches a file is screened, through
the API, the CLI, imports and the Stop hook; look-alikes still go in.

The corpora are bench/data/secrets.txt (must be caught) and
bench/data/secret_lookalikes.txt (must pass); `python bench/redaction.py` prints
the screener's precision and recall on them. Fakes are split with "{+}" in those
files (and assembled by concatenation here) so no literal key sits in the repo.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from vaultmem.core.redact import mask, scan
from vaultmem.errors import SecretFound
from vaultmem.vault import Vault

from .test_claude_code import base, hook, write_transcript

DATA = Path(__file__).resolve().parents[1] / "bench" / "data"


def corpus(name: str) -> list[str]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [line.replace("{+}", "") for line in lines if line.strip() and not line.lstrip().startswith("#")]


SECRETS = corpus("secrets.txt")
LOOKALIKES = corpus("secret_lookalikes.txt")
PROSE_PASSWORD = "the password is " + "hunter2x"
GH_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
AWS_ID, AWS_SECRET = "AKIA" + "J7Q2Z9X4M1P8L3K6", "wJ9mRt2/Kq8XvLp3" + "Nz7Bc4Dh6Fg1Hj5Km0PrS2tU"


def test_the_corpora_are_big_and_varied_enough():
    assert len(SECRETS) >= 40 and len(LOOKALIKES) >= 40
    assert len(set(SECRETS)) == len(SECRETS) and len(set(LOOKALIKES)) == len(LOOKALIKES)


@pytest.mark.parametrize("text", SECRETS)
def test_every_secret_in_the_corpus_is_caught(text):
    assert scan(text), text


@pytest.mark.parametrize("text", LOOKALIKES)
def test_every_look_alike_passes(text):
    assert scan(text) == [], [(f.kind, text[f.start:f.end]) for f in scan(text)]


@pytest.mark.parametrize("text, secret", [
    (PROSE_PASSWORD + " for the staging box", "hunter2x"),
    ("The password for the admin console is \"S3cure Pass 77\".", "S3cure Pass 77"),
    ("the new password has been set to Xk9#mP2q", "Xk9#mP2q"),
    ("my api key is 8f3kd92jfa0s9d8f7g6h, keep it", "8f3kd92jfa0s9d8f7g6h"),
    ("connect with mysql -u root -pS3cretPass99 on the bastion", "S3cretPass99"),
    ("curl -u admin:Sup3rS3cret https://ci.internal/api", "Sup3rS3cret"),
])
def test_prose_secrets_are_masked_and_the_sentence_kept(text, secret):
    masked = mask(text, scan(text))
    assert secret not in masked and "[REDACTED:password]" in masked
    assert masked.split("[REDACTED")[0] == text.split(secret)[0]  # the words before it are untouched


def test_an_aws_secret_next_to_its_key_id_is_masked_too():
    text = f"backup user: {AWS_ID} / {AWS_SECRET} (rotated monthly)"
    masked = mask(text, scan(text))
    assert AWS_ID not in masked and AWS_SECRET not in masked
    assert masked == "backup user: [REDACTED:AWS access key] / [REDACTED:AWS secret key] (rotated monthly)"
    # The same 40 characters with no AWS context nearby are not a finding (too much else looks like that).
    assert scan(f"build artefact {AWS_SECRET} uploaded") == []


@pytest.mark.parametrize("unit", ["mysql ", "mysql -p ", "password for a b c d ", "password is ab1 ",
                                  "secret " + "Ab1/" * 10 + " ", "-u a:", "the password is '"])
def test_new_rules_scan_adversarial_input_in_linear_time(unit):
    text = unit * (200_000 // len(unit))
    start = time.perf_counter()
    scan(text)
    assert time.perf_counter() - start < 3


# ---------------------------------------------------------------- nothing written

def written(vault_dir: Path) -> dict[str, bytes]:
    """Every file a refused write must leave alone: notes and the three logs."""
    files = {p: p.read_bytes() for p in vault_dir.rglob("*.md") if ".vaultmem" not in p.parts}
    for name in ("ledger.jsonl", "reviews.jsonl", "archive.jsonl"):
        path = vault_dir / ".vaultmem" / name
        files[path] = path.read_bytes() if path.exists() else b""
    return files


def nowhere_in(vault_dir: Path, secret: str) -> None:
    """The secret is in no file under the vault: notes, logs, caches, indexes, hook state."""
    needle = secret.encode("utf-8")
    for path in vault_dir.rglob("*"):
        if path.is_file():
            assert needle not in path.read_bytes(), f"{secret!r} leaked into {path}"


@pytest.fixture
def seeded(vault_dir) -> tuple[Path, str]:
    note = Vault(vault_dir).add("Staging runs Postgres 16 on port 5433", "work")
    return vault_dir, note.note.id


def test_every_secret_is_refused_through_the_api_and_nothing_is_written(seeded):
    vault_dir, _ = seeded
    vault = Vault(vault_dir)
    before = written(vault_dir)
    for text in SECRETS:
        with pytest.raises(SecretFound) as caught:
            vault.add(text, "work")
        assert "nothing was written" in str(caught.value)
    assert written(vault_dir) == before


def test_every_secret_is_refused_through_the_cli_with_one_line(seeded, run):
    vault_dir, _ = seeded
    before = written(vault_dir)
    for text in SECRETS:
        result = run("add", text, "-n", "work", expect=2)
        assert result.stderr.count("\n") == 1 and "holds" in result.stderr and "--redact" in result.stderr
        for finding in scan(text):
            assert text[finding.start:finding.end] not in result.stderr  # named, never quoted
    assert written(vault_dir) == before


def test_every_look_alike_is_accepted_through_the_api_and_the_cli(vault_dir, run):
    vault = Vault(vault_dir)
    for text in LOOKALIKES[::2]:
        assert vault.add(text, "work", merge=False, supersede=False).action == "added"
    for text in LOOKALIKES[1::2]:
        run("add", text, "-n", "work", "--allow-duplicate", "--no-supersede")
    texts = {n.text for n in Vault(vault_dir).notes()}
    assert texts == set(LOOKALIKES)


@pytest.mark.parametrize("args, field", [
    (["add", "Deploys use the release token", "-n", "work", "--tags", "deploy," + GH_TOKEN], "tags"),
    (["add", "Deploys use the release token", "-n", "work/" + GH_TOKEN], "namespace"),
    (["add", "Deploys use the release token", "-n", "work", "--source", "postgres://app:" + "s3cr3tPw@db/app"],
     "source"),
    (["learn", "Rotate keys", "--steps", "1. " + PROSE_PASSWORD + "\n2. rotate", "-n", "ops"], "text"),
    (["learn", "Rotate keys", "--trigger", "token is " + GH_TOKEN, "--steps", "1. rotate", "-n", "ops"], "text"),
    (["learn", "Rotate keys", "--steps", "1. rotate", "--outcome", "secret: " + "Xq8zT4mW", "-n", "ops"], "text"),
    (["learn", "Rotate keys", "--steps", "1. rotate", "--lessons", "my api key is " + "8f3kd92jfa0s9d8f", "-n",
      "ops"], "text"),
    (["learn", "Use " + GH_TOKEN, "--steps", "1. rotate", "-n", "ops"], "text"),
])
def test_every_field_of_an_add_or_learn_is_screened(seeded, run, args, field):
    vault_dir, _ = seeded
    before = written(vault_dir)
    result = run(*args, expect=2)
    assert f"the {field} holds" in result.stderr and "nothing was written" in result.stderr
    assert written(vault_dir) == before
    for secret in (GH_TOKEN, "hunter2x", "s3cr3tPw", "Xq8zT4mW", "8f3kd92jfa0s9d8f"):
        nowhere_in(vault_dir, secret)


def test_grade_comment_and_correct_reason_are_screened(seeded, run):
    vault_dir, note_id = seeded
    before = written(vault_dir)
    result = run("grade", note_id, "good", "-c", "worked with " + PROSE_PASSWORD, expect=2)
    assert "the comment holds a password" in result.stderr
    result = run("correct", note_id, "Staging runs Postgres 17", "--reason", "the token is " + GH_TOKEN, expect=2)
    assert "the reason holds a GitHub token" in result.stderr
    result = run("correct", note_id, "Staging runs Postgres 17 and " + PROSE_PASSWORD, expect=2)
    assert "the text holds a password" in result.stderr
    assert written(vault_dir) == before  # the wrong memory was not even graded
    nowhere_in(vault_dir, "hunter2x")
    nowhere_in(vault_dir, GH_TOKEN)


def test_session_and_project_are_screened(seeded, monkeypatch):
    vault_dir, note_id = seeded
    vault = Vault(vault_dir)
    before = written(vault_dir)
    with pytest.raises(SecretFound, match="the session holds"):
        vault.add("Builds run nightly", "work", session=GH_TOKEN)
    monkeypatch.setenv("VAULTMEM_PROJECT", GH_TOKEN)
    with pytest.raises(SecretFound, match="the project holds"):
        vault.grade(note_id, "good")
    assert written(vault_dir) == before


def test_with_redact_the_text_and_title_are_masked_tags_dropped_the_namespace_still_refused(vault_dir, run):
    added = run.json("add", "Deploys use it: " + PROSE_PASSWORD, "-n", "work", "--tags", "deploy," + GH_TOKEN,
                     "--redact")
    text = (vault_dir / added["path"]).read_text()
    assert "[REDACTED:password]" in text and "redacted: true" in text and "  - deploy" in text
    learned = run.json("learn", "Use " + GH_TOKEN, "--steps", "1. rotate", "-n", "ops", "--redact")
    assert "[REDACTED:GitHub token]" in (vault_dir / learned["path"]).read_text()
    run("add", "x y z", "-n", "work/" + GH_TOKEN, "--redact", expect=2)
    nowhere_in(vault_dir, "hunter2x")
    nowhere_in(vault_dir, GH_TOKEN)


# ---------------------------------------------------------------- imports and capture

def test_imported_records_are_screened_skipped_and_reported(vault_dir, tmp_path, run):
    claude_md = tmp_path / "CLAUDE.md"
    claude_md.write_text("# Notes\n\n- Staging runs Postgres 16\n- " + PROSE_PASSWORD + "\n"
                         "- The deploy token is " + GH_TOKEN + "\n", encoding="utf-8")
    dry = run.json("import", str(claude_md), "--dry-run")
    assert dry["counts"]["added"] == 1 and dry["counts"]["skipped"] == 2
    report = run.json("import", str(claude_md))
    assert report["counts"]["added"] == 1 and report["counts"]["skipped"] == 2
    assert all("secret found" in s["reason"] for s in report["skipped"])
    folder = tmp_path / "notes"
    (folder / "work").mkdir(parents=True)
    (folder / "work" / f"Token {GH_TOKEN}.md").write_text("Deploys go through CI\n", encoding="utf-8")
    report = run.json("import", str(folder))
    assert report["counts"]["added"] == 0 and report["counts"]["skipped"] == 1  # the title holds it
    export = tmp_path / "export.jsonl"
    export.write_text(json.dumps({"path": "memories/work/leak.md", "text": "---\nid: leak0001\n---\n"
                                  + PROSE_PASSWORD + "\n"}) + "\n", encoding="utf-8")
    report = run.json("import", str(export))
    assert report["counts"]["added"] == 0 and report["counts"]["skipped"] == 1
    nowhere_in(vault_dir, "hunter2x")
    nowhere_in(vault_dir, GH_TOKEN)


def test_the_stop_hook_masks_prose_secrets_before_anything_is_written(vault_dir, tmp_path):
    transcript = tmp_path / "transcript.jsonl"
    write_transcript(transcript, [
        {"type": "user", "uuid": "5e0c1d2a-0000-4000-8000-000000000001",
         "message": {"role": "user", "content": "Remember that " + PROSE_PASSWORD + " on the staging box."}},
        {"type": "user", "uuid": "5e0c1d2a-0000-4000-8000-000000000002",
         "message": {"role": "user", "content": "Remember that my api key is " + "8f3kd92jfa0s9d8f7g6h" + "."}},
        {"type": "user", "uuid": "5e0c1d2a-0000-4000-8000-000000000003",
         "message": {"role": "user", "content": "Please remember that the backup key is " + AWS_ID + " with "
                     "secret " + AWS_SECRET + "."}},
    ])
    hook("stop", base("Stop", tmp_path, stop_hook_active=False), vault_dir)
    texts = sorted(n.text for n in Vault(vault_dir).notes())
    assert texts == ["My api key is [REDACTED:password].",
                     "The backup key is [REDACTED:AWS access key] with secret [REDACTED:AWS secret key].",
                     "The password is [REDACTED:password] on the staging box."]
    for secret in ("hunter2x", "8f3kd92jfa0s9d8f7g6h", AWS_ID, AWS_SECRET):
        nowhere_in(vault_dir, secret)
