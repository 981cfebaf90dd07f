"""Cross-language vectors for the Obsidian plugin: what `vaultmem grade` leaves on disk, case by case.

The plugin (obsidian_plugin/, TypeScript) grades notes itself, through Obsidian's
API, and must leave the same bytes as the CLI. This module builds notes of every
shape a vault holds (written by `add`, by hand with missing properties, CRLF, a
byte-order mark, comments, unknown properties, quoted values, edited by hand
after vaultmem wrote them), grades each through the real `Vault.grade` at pinned
instants (fractional-day gaps, same-day reviews, lapses up to suspension) and
writes, after each grade, the note's text, the review-log line and the ledger
lines. The plugin's tests replay every case and must match byte for byte.

It lives in the package (not bench/) because it is the Python half of a
contract: it runs the same code users run, and a test regenerates the vectors
and fails when the committed file is stale (tests/test_obsidian_vectors.py).

    python -m vaultmem.integrations.obsidian_vectors [OUT.json]    write them
    python -m vaultmem.integrations.obsidian_vectors --check       exit 1 if the committed file is stale
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "obsidian_plugin" / "test" / "vectors" / "grade.json"
SEED = 13
CASES = 240
START = datetime(2026, 1, 5, 9, 0, 0, tzinfo=timezone.utc)

# config.yaml variants: the defaults, and settings that reach suspension, caps and decay quickly.
CONFIGS = {
    "default": "",
    "quick-leech": "scheduling:\n  leech_lapses: 2\n  desired_retention: 0.85\n",
    "short-cap": "scheduling:\n  maximum_interval_days: 30\n  desired_retention: 0.95\n  leech_lapses: 3\n",
    "fast-decay": "strength:\n  reward: 0.2\n  decay: 0.7\n  idle_days: 2\n  floor: 0.1\n  initial: 0.4\n",
}

# Gaps between grades (seconds): same-day, just under and over a day, fractional days, months.
GAPS = (30, 300, 600, 3600, 5 * 3600, 23 * 3600 + 50 * 60, 86400, 86400 + 3 * 3600, int(2.5 * 86400),
        12 * 86400 + 23 * 3600, 20 * 86400, 45 * 86400 + 7200, 120 * 86400, 400 * 86400)
RATING_WEIGHTS = (("again", 3), ("hard", 2), ("good", 5), ("easy", 2))
SESSIONS = ("", "", "s-7f3a", "claude-2026-01")
PROJECTS = ("agent-vault", "api", "web", "über-app")

# Hand-written notes: (path, text with {nl} for the line ending). Each is graded as a person leaves it.
HANDWRITTEN = (
    ("memories/work/Plain note.md", "Staging runs Postgres 16 on port 5433.{nl}"),
    ("memories/Loose thought.md", "---{nl}tags: [db, infra]{nl}---{nl}The cache is warmed at 6am.{nl}"),
    ("memories/work/infra/Partial.md",
     "---{nl}id: hand01{nl}namespace: work/infra{nl}# kept comment{nl}owner: alice{nl}---{nl}"
     "Deploys freeze on Friday.{nl}"),
    ("memories/home/Quoted.md",
     '---{nl}id: "quoted1"{nl}status: \'active\'{nl}tier: l2{nl}strength: "0.7"{nl}tags: "a, #b c"{nl}'
     'aliases:{nl}  - Q{nl}---{nl}# Heading{nl}{nl}Body with [[link]].{nl}'),
    ("memories/dates/Dates only.md",
     "---{nl}created: 2025-12-01{nl}updated: 2025-12-24 10:30:00{nl}due: 2026-01-01T08:00:00+02:00{nl}"
     "source: https://example.com/a?b=c{nl}---{nl}Dates in every form.{nl}"),
    ("memories/empty/Empty values.md",
     "---{nl}id: empty1{nl}tags:{nl}source:{nl}decayed:{nl}stability:{nl}difficulty:{nl}last_review:{nl}"
     "custom: {{a: 1}}{nl}---{nl}Empty values everywhere.{nl}"),
    ("skills/ops/Restart the worker.md",
     "---{nl}type: skill{nl}tags:{nl}  - ops{nl}---{nl}# Restart the worker{nl}{nl}## Trigger{nl}queue stuck{nl}"
     "{nl}## Steps{nl}1. drain{nl}2. restart{nl}"),
    ("memories/review/Graduated.md",
     "---{nl}id: grad1{nl}state: review{nl}step:{nl}stability: 12.5{nl}difficulty: 5.25{nl}"
     "due: 2026-01-04T09:00:00{nl}last_review: 2025-12-23T09:00:00{nl}reps: 4{nl}lapses: 1{nl}"
     "strength: 0.8{nl}status: stale{nl}created: 2025-11-01T00:00:00{nl}updated: 2025-12-23T09:00:00{nl}---{nl}"
     "An old fact, graduated long ago.{nl}"),
    ("memories/relearn/Relearning.md",
     "---{nl}id: rel1{nl}state: relearning{nl}step: 0{nl}stability: 1.7{nl}difficulty: 7.1{nl}"
     "due: 2026-01-05T08:50:00{nl}last_review: 2026-01-05T08:40:00{nl}reps: 6{nl}lapses: 2{nl}"
     "created: 2025-10-01T00:00:00{nl}updated: 2026-01-05T08:40:00{nl}---{nl}Forgotten once, twice.{nl}"),
    ("memories/evidence/Evidence.md",
     "---{nl}id: ev1{nl}sessions:{nl}  - day-2026-01-01{nl}days:{nl}  - 2026-01-01{nl}projects: api{nl}"
     "explicit: yes{nl}contested: false{nl}---{nl}Evidence already there.{nl}"),
    ("memories/odd/2026-01-01.md", "---{nl}namespace: odd{nl}---{nl}A file named like a date.{nl}"),
    ("memories/odd/yes.md", "A file named like a boolean.{nl}"),
    ("memories/odd/1:20.md", "A file named like a sexagesimal number.{nl}"),
    ("memories/odd/Ünïcode café.md", "---{nl}tags:{nl}- ü{nl}- 東京{nl}---{nl}Café in Tōkyō, naïve façade.{nl}"),
    ("memories/odd/trailing.md", "---  {nl}id: trail1{nl}strength: 0.50000{nl}reps: 0{nl}---{nl}No newline at the end"),
    ("memories/odd/Never reviewed.md",
     "---{nl}id: never1{nl}state: review{nl}stability: 4.5{nl}difficulty: 6{nl}reps: 2{nl}---{nl}"
     "A card without a last review.{nl}"),
    ("memories/odd/Numbers.md",
     "---{nl}id: num1{nl}stability: 2.30650{nl}difficulty: 2.1181{nl}state: Learning{nl}step: 1.0{nl}"
     "reps: 1{nl}last_review: 2026-01-05T08:55:00{nl}due: 2026-01-05T09:05:00{nl}---{nl}Numbers written loosely.{nl}"),
)

# Texts and properties for notes written the way `vaultmem add` writes them.
TEXTS = ("Staging runs Postgres 16 on port 5433.", "The API rate limit is 600 requests a minute.",
         "Use `uv pip` inside the venv, never the global pip.", "Prefers tabs: 4 wide.",
         "Meeting notes live in [[Team wiki]].", "Kafka topic 'orders' keeps 7 days.",
         "Der Build läuft auf Node 20.", "Release trains leave every second Tuesday: plan around them.")
NAMESPACES = ("work", "work/infra", "projects/api", "personal", "default")


@contextmanager
def _pinned_environment():
    """No session or project from the caller's environment; the clock set per grade."""
    keys = ("VAULTMEM_NOW", "VAULTMEM_SESSION", "VAULTMEM_PROJECT", "VAULTMEM_NO_SERVER")
    saved = {key: os.environ.get(key) for key in keys}
    for key in keys:
        os.environ.pop(key, None)
    os.environ["VAULTMEM_NO_SERVER"] = "1"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8") if path.exists() else ""


def _added_note(rng: random.Random, index: int, created: datetime):
    """A note as `vaultmem add` writes it, with a fixed id (add draws a random one)."""
    from vaultmem.core.model import Note
    from vaultmem.core.note import render, slugify

    text = rng.choice(TEXTS)
    namespace = rng.choice(NAMESPACES)
    tags = tuple(rng.sample(("db", "infra", "team", "tooling", "ü-tag"), rng.randint(0, 2)))
    source = rng.choice(("", "", "[[Infra overview]]", "https://example.com/runbook"))
    note = Note(
        id=f"v{index:03d}abc", type="memory", namespace=namespace, tags=tags, status="active",
        tier=rng.choice(("L0", "L1", "L1", "L2")), strength=0.5, state="learning", step=0, stability=None,
        difficulty=None, due=created, last_review=None, reps=0, lapses=0, created=created, updated=created,
        decayed=None, source=source, body=text + "\n", path="", explicit=rng.random() < 0.2,
    )
    from dataclasses import replace

    note = replace(note, path=f"memories/{namespace}/{slugify(text)}.md")
    return note, render(note)


def _prior_ledger(rng: random.Random, root: Path) -> None:
    """Some cases start with records of other notes on the ledger, one with a torn last line."""
    from vaultmem.store.ledger import Ledger

    choice = rng.random()
    if choice < 0.5:
        return
    db = _memory_db()
    ledger = Ledger(root / ".vaultmem" / "ledger.jsonl", lambda: db)
    for number in range(rng.randint(1, 3)):
        ledger.append("add", f"other{number}", f"memories/x/other-{number}.md", f"other {number}\n",
                      _stamp(START - timedelta(days=3 - number)))
    if choice > 0.85:
        with open(root / ".vaultmem" / "ledger.jsonl", "ab") as handle:
            handle.write(b'{"seq": 9, "op": "gra')  # a crash mid-append


def _memory_db():
    import sqlite3

    return sqlite3.connect(":memory:")


def _case(rng: random.Random, index: int, workdir: Path) -> dict:
    from vaultmem.store.template import init_vault
    from vaultmem.vault import Vault

    root = workdir / f"case{index:03d}"
    init_vault(root)
    config_name = rng.choice(tuple(CONFIGS))
    config_text = CONFIGS[config_name]
    if config_text:
        (root / ".vaultmem" / "config.yaml").write_text(config_text, encoding="utf-8")
    _prior_ledger(rng, root)
    mtime = START - timedelta(days=rng.choice((0, 1, 10)), hours=rng.randint(0, 5))
    kind = ("added", "handwritten", "edited", "archived")[
        0 if index % 2 == 0 else (1 if index % 7 else (3 if index % 21 == 0 else 2))]
    if kind in ("handwritten", "archived"):
        rel, template = HANDWRITTEN[index % len(HANDWRITTEN)]
        newline = "\r\n" if rng.random() < 0.3 else "\n"
        text = ("\ufeff" if rng.random() < 0.1 else "") + template.format(nl=newline)
        if kind == "archived":
            rel = "archive/" + rel
        note_id = None
    else:
        note, text = _added_note(rng, index, mtime)
        rel, note_id = note.path, note.id
        vault = Vault(root)
        os.environ["VAULTMEM_NOW"] = _stamp(mtime)
        vault.record("add", note, text)
        vault.forget_catalog()
        if kind == "edited":
            text = text.replace("---\n", "---\n# edited by hand\n", 1) + "A line added in Obsidian.\n"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    stamp = mtime.timestamp()
    os.utime(path, (stamp, stamp))
    case = {
        "name": f"{index:03d}-{kind}-{config_name}", "config": config_text, "path": rel, "mtime": _stamp(mtime),
        "note": text, "ledger": _read(root / ".vaultmem" / "ledger.jsonl"),
        "reviews": _read(root / ".vaultmem" / "reviews.jsonl"), "steps": [],
    }
    at = START + timedelta(seconds=rng.choice((0, 0, 7, 3600)))
    vault = Vault(root)
    for _number in range(rng.randint(1, 7) if kind != "archived" else 1):
        rating = rng.choices([r for r, _w in RATING_WEIGHTS], [w for _r, w in RATING_WEIGHTS])[0]
        session, project = rng.choice(SESSIONS), rng.choice(PROJECTS)
        case["steps"].append(_grade(vault, note_id or Path(rel).stem, rel, rating, at, session, project))
        if "error" in case["steps"][-1]:
            break
        if note_id is None:
            note_id = vault.read_note(rel).id
        at += timedelta(seconds=rng.choice(GAPS) + rng.randint(0, 59))
    if kind != "archived" and index % 5 == 0:
        case["moves"] = [_move(vault, note_id, "archive", at),
                         _move(vault, note_id, "restore", at + timedelta(hours=2))]
    return case


def _move(vault, note_id: str, op: str, at: datetime) -> dict:
    """Archive or restore through the real Vault: where the note went, its text, the log lines."""
    state = vault.root / ".vaultmem"
    ledger_before, log_before = _read(state / "ledger.jsonl"), _read(state / "archive.jsonl")
    os.environ["VAULTMEM_NOW"] = _stamp(at)
    note = vault.archive(note_id) if op == "archive" else vault.restore(note_id)
    return {"op": op, "at": _stamp(at), "path": note.path, "note": _read(vault.root / note.path),
            "ledger_appended": _read(state / "ledger.jsonl")[len(ledger_before):],
            "archive_appended": _read(state / "archive.jsonl")[len(log_before):]}


def _grade(vault, note_id: str, rel: str, rating: str, at: datetime, session: str, project: str) -> dict:
    from vaultmem.errors import VaultmemError

    root = vault.root
    ledger_path, reviews_path = root / ".vaultmem" / "ledger.jsonl", root / ".vaultmem" / "reviews.jsonl"
    ledger_before, reviews_before = _read(ledger_path), _read(reviews_path)
    step = {"at": _stamp(at), "rating": rating, "session": session, "project": project}
    os.environ["VAULTMEM_NOW"] = _stamp(at)
    try:
        vault.grade(note_id, rating, session=session, project=project)
    except VaultmemError as exc:
        step["error"] = str(exc)
        return step
    after = _read(ledger_path)
    if not after.startswith(ledger_before):
        raise AssertionError(f"{rel}: the ledger was rewritten, not appended to")
    step["note"] = _read(root / rel)
    step["ledger_appended"] = after[len(ledger_before):]
    step["review_appended"] = _read(reviews_path)[len(reviews_before):]
    return step


def build(count: int = CASES, seed: int = SEED) -> dict:
    """Every case, graded through the real Vault in temporary vaults."""
    rng = random.Random(seed)
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None  # thousands of fsyncs cost nothing there
    with _pinned_environment(), tempfile.TemporaryDirectory(prefix="vaultmem-vectors-", dir=scratch) as workdir:
        cases = [_case(rng, index, Path(workdir)) for index in range(count)]
    return {"about": "generated by python -m vaultmem.integrations.obsidian_vectors; do not edit",
            "start": _stamp(START), "cases": cases}


def render_vectors(vectors: dict) -> str:
    return json.dumps(vectors, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    out = Path(paths[0]) if paths else DEFAULT_OUT
    vectors = build()
    text = render_vectors(vectors)
    if check:
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            print(f"{out} is stale: run `python -m vaultmem.integrations.obsidian_vectors` and commit it",
                  file=sys.stderr)
            return 1
        print(f"{out} is current")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    steps = sum(len(c["steps"]) for c in vectors["cases"])
    print(f"wrote {len(vectors['cases'])} cases, {steps} grades to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
