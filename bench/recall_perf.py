"""Recall performance at 1k, 10k and 100k notes: index build, freshness after an
edit, query latency in-process and through the CLI (with and without the
watcher), and peak memory.

    python bench/recall_perf.py                     # 1k, 10k and 100k notes
    python bench/recall_perf.py --quick             # 1k only
    python bench/recall_perf.py --sizes 1000,10000  # chosen sizes
    python bench/recall_perf.py --fresh             # regenerate the cached vaults

Synthetic vaults (fixed seed, ~20 namespaces, 10-60 words a note, ~5% skills)
are generated once and cached under /tmp/vaultmem-bench/<size>-s<seed>/;
`.vaultmem/index` and `.vaultmem/cache` are deleted before the build is timed.
Prints machine facts, then one markdown table, a row per size:

- build: `vaultmem reindex --vault V` wall time (parses and embeds every note
  with the real model) and notes/s; its peak RSS.
- edit->recall: (a) in-process, file write to `engine.recall(word, sync=True)`
  returning the edited note (median of 3 edits); (b) through the watcher,
  file write to the first `vaultmem recall word --json` (polled every 20 ms)
  that returns it.
- in-process p50/p95: a long-lived `RecallEngine`, `recall(q, top_k=5,
  sync=False)` (warm, the watcher keeps it fresh) and `recall(q, top_k=5)`
  (with the stat scan an API user without the watcher pays); ~50 queries.
- CLI p50/p95: `vaultmem recall q --vault V --json` as a subprocess, without
  the watcher (VAULTMEM_NO_SERVER=1: model loaded per call) and with
  `vaultmem watch --vault V` running; ~20 queries each.
- peak RSS: the in-process part runs in a child process per size
  (ru_maxrss), the watcher's VmHWM from /proc, the reindex child's from wait4.

Watcher columns are "n/a" when `vaultmem watch --help` fails. Every
subprocess has a timeout; nothing here opens a network socket.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

BENCH_DIR = Path(os.environ.get("VAULTMEM_BENCH_DIR", "/tmp/vaultmem-bench"))
GENERATOR_VERSION = 1  # sizes <= GEN_CHUNK are the same with one or many chunks
GEN_CHUNK = 12_500
DEFAULT_SIZES = (1000, 10_000, 100_000)
TOP_K = 5
N_INPROC_QUERIES = 50
N_CLI_QUERIES = 20
POLL_S = 0.020
FRESHNESS_TIMEOUT_S = 30.0
CLI_TIMEOUT_S = 120.0
FALLBACK_RSS_MB = 100.0


# ================================================================ synthetic text

NAMESPACES = [
    "work/infra", "work/infra/db", "work/infra/network", "work/backend", "work/backend/billing",
    "work/frontend", "work/ci", "work/security", "work/data", "work/oncall",
    "people", "people/team", "people/clients", "personal/preferences", "personal/health",
    "personal/home", "personal/travel", "projects/atlas", "projects/orion", "finance",
]
SKILL_NAMESPACES = ["work/infra", "work/ci", "work/backend", "personal/home", "work/oncall"]
SERVICES = ["billing", "auth", "search", "checkout", "notifications", "gateway", "ledger", "reporting",
            "inventory", "scheduler", "ingest", "export", "profile", "payments", "analytics", "mailer",
            "catalog", "pricing", "webhooks", "storage"]
TECH = ["Postgres", "MySQL", "Redis", "Kafka", "RabbitMQ", "Kubernetes", "Nomad", "Terraform", "Ansible",
        "Docker", "nginx", "Envoy", "Elasticsearch", "ClickHouse", "SQLite", "gRPC", "GraphQL", "Celery",
        "FastAPI", "Django", "React", "Svelte", "Rust", "Go", "Python", "TypeScript", "Prometheus",
        "Grafana", "Vault", "Consul", "S3", "MinIO", "Airflow", "Spark", "DuckDB", "Caddy", "HAProxy"]
ENVS = ["staging", "production", "the dev cluster", "the QA environment", "the Frankfurt region",
        "the Virginia region", "the on-prem rack", "the sandbox"]
CI = ["GitHub Actions", "GitLab CI", "Jenkins", "Buildkite", "CircleCI", "Drone"]
INCIDENTS = ["the March outage", "a memory leak", "the disk filling up", "a certificate expiry",
             "the failed migration", "a DNS misconfiguration", "the thundering herd on Monday",
             "a deadlock under load", "the cost review", "the security audit"]
FIRST = ["Alice", "Bob", "Carol", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jamal", "Kasia",
         "Liam", "Mei", "Nikolai", "Olga", "Priya", "Quentin", "Rosa", "Sven", "Tomas", "Uma", "Viktor",
         "Wen", "Yusuf", "Zara", "Marta", "Pavel", "Sofia", "Arjun", "Lena"]
LAST = ["Ivanova", "Smith", "Garcia", "Kowalski", "Nakamura", "Okafor", "Schmidt", "Rossi", "Dubois",
        "Haddad", "Larsen", "Novak", "Petrov", "Silva", "Tanaka", "Weber", "Young", "Zhou"]
TEAMS = ["platform", "payments", "growth", "mobile", "data", "security", "SRE", "design", "support", "sales"]
CHANNELS = ["Slack", "email", "a phone call", "a short video call", "the team chat", "a ticket"]
FOODS = ["dark chocolate", "green tea", "sushi", "spicy ramen", "oat milk lattes", "cheesecake",
         "vegetarian pizza", "black coffee", "mango lassi", "borscht"]
PREFS = [("tabs", "spaces"), ("dark mode", "light mode"), ("pnpm", "npm"), ("vim", "emacs"),
         ("pytest", "unittest"), ("squash merges", "merge commits"), ("short meetings", "long meetings"),
         ("async updates", "standups"), ("Postgres", "MySQL"), ("uv", "pip"), ("Markdown", "Word"),
         ("morning focus time", "afternoon meetings"), ("window seats", "aisle seats")]
CONTEXTS = ["Python files", "code review", "the frontend repo", "new services", "documentation",
            "travel", "planning", "the monorepo", "data pipelines", "incident reviews"]
TOOLS = ["ruff", "black", "mypy", "pyright", "pre-commit", "direnv", "tmux", "just", "make", "bazel"]
PROJECTS = ["Atlas", "Orion", "Phoenix", "Nebula", "Falcon", "Aurora", "Granite", "Helix", "Juniper", "Kestrel"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
EVENTS = ["the quarterly planning", "the dentist appointment", "the team offsite", "the board meeting",
          "the flight to Lisbon", "the release freeze", "the vendor demo", "the performance review",
          "the database upgrade", "the hackathon"]
METRICS = ["latency", "error rate", "throughput", "queue depth", "memory use", "CPU load", "cold start",
           "build time", "disk usage", "cache hit rate"]
UNITS = ["milliseconds", "percent", "requests per second", "messages", "megabytes", "seconds", "gigabytes"]
HOME = ["The garden tomatoes need watering every evening in summer.",
        "The boiler service is due every autumn; call the plumber in September.",
        "The wifi password for guests is written on the fridge.",
        "The cat needs her medication twice a day with food.",
        "Rent is paid by bank transfer on the first of the month.",
        "The car needs an oil change every fifteen thousand kilometres."]

TEMPLATES = [
    "The {svc} service runs {tech} {ver} on port {port} in {env}.",
    "We moved {svc} from {tech} to {tech2} after {incident}.",
    "Deploys of {svc} go through {ci} and take about {n} minutes.",
    "{svc} in {env} reads its secrets from {tech} and rotates them every {n} days.",
    "Never restart {svc} during business hours; drain the {tech} queue first.",
    "{person} leads the {team} team and prefers {channel} for urgent questions.",
    "{first}'s birthday is on {month} {day}; {first} likes {food}.",
    "{person} owns the {svc} runbook and is on call in week {n}.",
    "{person} from the {team} team asked to be copied on every {svc} incident.",
    "{first} prefers {pref_a} over {pref_b} for {context}.",
    "Always use {tool} instead of {tool2} in the {proj} repository.",
    "The user prefers {pref_a} to {pref_b} when working on {context}.",
    "The {proj} deadline moved from {month} to {month2} {year}.",
    "{event} is on {weekday}, {month} {day} at {hour} o'clock.",
    "Since {month} {year} the {svc} team ships on {weekday}s only.",
    "The p95 {metric} of {svc} is {n} {unit} after the {tech} upgrade.",
    "The budget for {proj} is {n} thousand euros per quarter.",
    "{svc} handles about {n} thousand {unit} at peak in {env}.",
    "Backups of {svc} are kept for {n} days in an encrypted bucket.",
]


def _zipf_vocab(rng: random.Random, n: int) -> list[str]:
    """Pronounceable made-up words: a long tail of rare terms, as real vaults have."""
    onsets = ["b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "kr", "st",
              "tr", "pl", "gr", "sh", "ch", "th"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou", "ea", "io"]
    codas = ["", "n", "r", "s", "l", "m", "x", "nd", "rk", "st"]
    words, seen = [], set()
    while len(words) < n:
        w = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.randint(1, 3))) + rng.choice(codas)
        if w not in seen and len(w) > 3:
            seen.add(w)
            words.append(w)
    return words


def _pick(r: random.Random, seq):
    return seq[int(r.random() * len(seq))]


class _Fill(dict):
    """Lazy template values: a key is drawn the first time a template uses it."""

    DRAW = {
        "svc": lambda r, f: _pick(r, SERVICES), "tech": lambda r, f: _pick(r, TECH),
        "tech2": lambda r, f: _other(r, TECH, f["tech"]), "ver": lambda r, f: f"{r.randint(1, 17)}.{r.randint(0, 9)}",
        "port": lambda r, f: r.randint(1024, 65000), "env": lambda r, f: _pick(r, ENVS),
        "ci": lambda r, f: _pick(r, CI), "incident": lambda r, f: _pick(r, INCIDENTS),
        "n": lambda r, f: r.randint(2, 500), "first": lambda r, f: _pick(r, FIRST),
        "person": lambda r, f: f"{f['first']} {_pick(r, LAST)}", "team": lambda r, f: _pick(r, TEAMS),
        "channel": lambda r, f: _pick(r, CHANNELS), "month": lambda r, f: _pick(r, MONTHS),
        "month2": lambda r, f: _other(r, MONTHS, f["month"]), "day": lambda r, f: r.randint(1, 28),
        "food": lambda r, f: _pick(r, FOODS), "pref_a": lambda r, f: f["_pref"][0],
        "pref_b": lambda r, f: f["_pref"][1], "_pref": lambda r, f: _pick(r, PREFS),
        "context": lambda r, f: _pick(r, CONTEXTS), "tool": lambda r, f: _pick(r, TOOLS),
        "tool2": lambda r, f: _other(r, TOOLS, f["tool"]), "proj": lambda r, f: _pick(r, PROJECTS),
        "year": lambda r, f: r.randint(2019, 2026), "event": lambda r, f: _pick(r, EVENTS),
        "weekday": lambda r, f: _pick(r, WEEKDAYS), "hour": lambda r, f: r.randint(7, 18),
        "metric": lambda r, f: _pick(r, METRICS), "unit": lambda r, f: _pick(r, UNITS),
    }

    def __init__(self, rng: random.Random):
        super().__init__()
        self.rng = rng

    def __missing__(self, key):
        value = self[key] = self.DRAW[key](self.rng, self)
        return value


def _other(r: random.Random, seq, not_this):
    while True:
        v = _pick(r, seq)
        if v != not_this:
            return v


class TextGen:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.vocab = _zipf_vocab(random.Random(seed + 1), 20_000)
        # Zipf weights 1/rank via cumulative table for rng.choices
        self.cum = []
        total = 0.0
        for i in range(len(self.vocab)):
            total += 1.0 / (i + 1)
            self.cum.append(total)

    def fill(self) -> dict:
        """Template values, each drawn only when a template asks for it."""
        return _Fill(self.rng)

    def sentence(self) -> str:
        r = self.rng
        if r.random() < 0.08:
            return r.choice(HOME)
        text = r.choice(TEMPLATES).format_map(self.fill())
        return text[0].upper() + text[1:]

    def filler(self, n: int) -> str:
        words = self.rng.choices(self.vocab, cum_weights=self.cum, k=n)
        return " ".join(words).capitalize() + "."

    def body(self, min_words: int = 10, max_words: int = 60) -> str:
        target = self.rng.randint(min_words, max_words)
        parts, count = [], 0
        while count < target:
            if parts and self.rng.random() < 0.35:
                s = self.filler(self.rng.randint(3, 9))
            else:
                s = self.sentence()
            parts.append(s)
            count += len(s.split())
        words = " ".join(parts).split()[:max(target, min_words)]
        text = " ".join(words)
        return text if text.endswith(".") else text + "."


def queries(seed: int, n: int) -> list[str]:
    """Varied questions: lexical, paraphrased, time-scoped, people, numbers."""
    rng = random.Random(seed + 7)
    forms = [
        "what port does {svc} use in {env}",
        "which version of {tech} runs the {svc} service",
        "how long do {svc} deploys take",
        "who leads the {team} team",
        "when is {first}'s birthday",
        "what does {first} prefer for {context}",
        "{pref_a} or {pref_b}",
        "{proj} deadline",
        "why did we move {svc} to {tech2}",
        "p95 {metric} of {svc}",
        "budget for project {proj}",
        "what happened after {incident}",
        "who owns the {svc} runbook",
        "{event} date",
        "what changed in {month} {year}",
        "secrets rotation for {svc}",
        "backups retention",
        "how do I restart {svc} safely",
        "what did we decide last spring about {tech}",
        "how to roll back a failed {svc} deploy",
    ]
    gen = TextGen(seed + 11)
    gen.rng = rng
    out = [rng.choice(forms).format_map(gen.fill()) for _ in range(n - 3)]
    out += ["watering the garden tomatoes", "guest wifi password", "when is rent paid"]
    return out


# ================================================================ vault generation

def _ident(i: int) -> str:
    from vaultmem.vault import ID_ALPHABET

    # bijective mix of i, then 8 chars in the id alphabet: unique, random-looking
    x = (i * 2654435761 + 0x9E3779B9) % (32 ** 8)
    chars = []
    for _ in range(8):
        x, d = divmod(x, 32)
        chars.append(ID_ALPHABET[d])
    return "".join(chars)


def _note_for(i: int, gen: TextGen, base: datetime):
    from vaultmem.core.model import Note
    from vaultmem.core.note import skill_body, slugify

    r = gen.rng
    created = base + timedelta(minutes=r.randint(0, 2 * 365 * 24 * 60))
    graded = r.random() < 0.4
    last_review = created + timedelta(days=r.randint(0, 30)) if graded else None
    is_skill = r.random() < 0.05
    if is_skill:
        svc = r.choice(SERVICES)
        title = r.choice([f"Roll back a failed {svc} deploy", f"Rotate the {svc} credentials",
                          f"Restart {svc} without downtime", f"Debug slow {svc} queries",
                          f"Onboard a new engineer to {svc}", f"Recover {svc} from a full disk"])
        body = skill_body(title, gen.body(5, 15), gen.body(10, 25), gen.body(5, 12), gen.body(5, 12))
        namespace = r.choice(SKILL_NAMESPACES)
        folder = "skills"
    else:
        body = gen.body() + "\n"
        title = body
        namespace = r.choice(NAMESPACES)
        folder = "memories"
    ident = _ident(i)
    slug = slugify(title, 48) + "-" + ident
    rel = f"{folder}/{namespace}/{slug}.md"
    note = Note(
        id=ident, type="skill" if is_skill else "memory", namespace=namespace,
        tags=tuple(r.sample(["db", "deploy", "people", "prefs", "dates", "ops", "security", "travel", "money",
                             "health", "home", "ci", "perf"], r.randint(0, 3))),
        status="stale" if r.random() < 0.05 else "active", tier=r.choice(["L0", "L1", "L1", "L1", "L2", "L3"]),
        strength=round(r.uniform(0.2, 1.0), 2), state="review" if graded else "learning",
        step=None if graded else 0, stability=round(r.uniform(1, 60), 4) if graded else None,
        difficulty=round(r.uniform(1, 9), 4) if graded else None,
        due=(last_review + timedelta(days=r.randint(1, 60))) if graded else created,
        last_review=last_review, reps=r.randint(1, 8) if graded else 0, lapses=r.randint(0, 2) if graded else 0,
        created=created, updated=last_review or created, decayed=None, source=r.choice(["", "", "chat", "import"]),
        body=body, path=rel,
    )
    return rel, note


def _fast_plain_is_safe(original):
    """render() checks each string with a YAML round trip (~0.5 ms): memoise the
    repeating values (tags, namespaces, statuses) and answer for our ids, which
    are 8 lower-case letters/digits 2-9 with a letter (plain YAML strings)."""
    cached = functools.lru_cache(maxsize=8192)(original)

    def check(text: str) -> bool:
        if len(text) == 8 and text.isalnum() and text.islower() and not text.isdigit():
            return True
        return cached(text)

    return check


def vault_path(size: int, seed: int) -> Path:
    return BENCH_DIR / f"{size}-s{seed}"


def ensure_vault(size: int, seed: int, fresh: bool) -> tuple[Path, float | None]:
    """The cached synthetic vault (generated if missing); returns (root, seconds spent generating or None)."""
    root = vault_path(size, seed)
    marker = root / ".bench-vault.json"
    want = {"size": size, "seed": seed, "generator": GENERATOR_VERSION}
    if not fresh and marker.exists():
        try:
            if json.loads(marker.read_text()) == want:
                return root, None
        except ValueError:
            pass
    t0 = time.perf_counter()
    generate_vault(root, size, seed)
    marker.write_text(json.dumps(want))
    return root, time.perf_counter() - t0


def generate_vault(root: Path, size: int, seed: int) -> None:
    """Write the synthetic vault of `size` notes at `root` (replacing what is there); no indexes."""
    from vaultmem.vault import init_vault

    if root.exists():
        shutil.rmtree(root)
    init_vault(root)
    # Fixed-size chunks, each with its own seeded generator: the same vault
    # whatever the number of cores; chunks are written in parallel.
    chunks = [(str(root), seed, start, min(start + GEN_CHUNK, size)) for start in range(0, size, GEN_CHUNK)]
    if len(chunks) == 1:
        _write_chunk(*chunks[0])
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(min(len(chunks), os.cpu_count() or 1)) as pool:
            pool.starmap(_write_chunk, chunks)


def _write_chunk(root: str, seed: int, start: int, stop: int) -> None:
    import vaultmem.core.note as note_mod
    from vaultmem.clock import parse_datetime
    from vaultmem.core.note import render

    note_mod._plain_is_safe = _fast_plain_is_safe(note_mod._plain_is_safe)
    gen = TextGen(seed + 1009 * (start // GEN_CHUNK))
    base = parse_datetime("2024-01-01T08:00:00")
    made_dirs: set[str] = set()
    for i in range(start, stop):
        rel, note = _note_for(i, gen, base)
        folder = rel.rsplit("/", 1)[0]
        if folder not in made_dirs:
            os.makedirs(os.path.join(root, folder), exist_ok=True)
            made_dirs.add(folder)
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write(render(note))


def clear_indexes(root: Path) -> None:
    for d in (root / ".vaultmem" / "index", root / ".vaultmem" / "cache"):
        if d.exists():
            shutil.rmtree(d)


def pick_edit_targets(root: Path, k: int, seed: int) -> list[str]:
    """k memory files (relative paths), the same ones every run."""
    folders = sorted(p for p in (root / "memories").rglob("*") if p.is_dir() and any(p.glob("*.md")))
    rng = random.Random(seed + 3)
    out: list[str] = []
    while len(out) < k:
        folder = rng.choice(folders)
        cand = (folder / rng.choice(sorted(f.name for f in folder.glob("*.md")))).relative_to(root).as_posix()
        if cand not in out:
            out.append(cand)
    return out


def seed_vectors(root: Path, seed: int) -> dict:
    """Fill the embedding cache without running the model over every note (`--seed-vectors`).

    Each note gets the real embedding of one of 256 generated texts plus
    noise, re-normalised, filed under the hash of its real text: recall then
    finds every vector cached and embeds only the query, so query latency,
    the mask, the matrix product and newer-first work as with real vectors.
    Recall *quality* is meaningless on such a vault; only timings are.
    Then the catalog and the BM25 index are built in-process (timed).
    """
    import numpy as np

    from vaultmem.search.embed import load_embedder
    from vaultmem.search.engine import RecallEngine, embed_text
    from vaultmem.search.vectors import VectorStore, folder_name, text_hash
    from vaultmem.vault import Vault

    vault = Vault(root)
    t0 = time.perf_counter()
    catalog = vault.catalog(fresh=True)
    notes = catalog.notes
    parse_s = time.perf_counter() - t0
    embedder = load_embedder(None)
    gen = TextGen(seed + 77)
    anchors = embedder.embed([gen.body() for _ in range(256)])
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(anchors), size=len(notes))
    matrix = anchors[pick] + rng.normal(0, 0.35 / np.sqrt(anchors.shape[1]), size=(len(notes), anchors.shape[1]))
    matrix = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    folder = vault.state_dir / "index" / "vectors" / folder_name(embedder.name)
    store = VectorStore(folder, embedder.name, lambda: catalog.db)
    hashes = catalog.hashes()
    texts = {note.path: embed_text(note) for note in notes}
    known = {text_hash(embedder.name, texts[note.path]): vector for note, vector in zip(notes, matrix)}
    with catalog.transaction():
        store.update({note.path: (hashes[note.path], texts[note.path]) for note in notes}, [], embedder, known)
    t1 = time.perf_counter()
    stats = RecallEngine(Vault(root)).sync()
    return {"parse_s": parse_s, "bm25_s": time.perf_counter() - t1, "sync_stats": stats}


def nonsense_word(rng: random.Random) -> str:
    return "zq" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(10))


def append_word(root: Path, rel: str, word: str) -> str:
    """Append a word to a note's body (as an editor save would); returns the original text."""
    path = root / rel
    original = path.read_text(encoding="utf-8")
    with open(path, "w", encoding="utf-8") as f:
        f.write(original.rstrip("\n") + f" {word}\n")
    return original


# ================================================================ subprocess helpers

def _env(no_server: bool) -> dict:
    env = dict(os.environ)
    env.pop("VAULTMEM_VAULT", None)
    env.pop("VAULTMEM_DEBUG", None)
    env["VAULTMEM_AUTOWATCH"] = "off"  # the benches start and stop their own watcher
    if no_server:
        env["VAULTMEM_NO_SERVER"] = "1"
    else:
        env.pop("VAULTMEM_NO_SERVER", None)
    return env


def vaultmem_bin() -> str:
    cand = Path(sys.executable).parent / "vaultmem"
    return str(cand) if cand.exists() else (shutil.which("vaultmem") or "vaultmem")


def run_measured(cmd: list[str], timeout: float, env: dict | None = None, stdin: bytes | None = None,
                 cwd: str | os.PathLike | None = None) -> dict:
    """Run cmd; wall time, exit code, stdout, stderr, the child's own peak RSS and CPU seconds
    (user + system, all its threads; wait4).

    `stdin` (bytes) is what the child reads on its standard input, from a file
    written before the clock starts; None: /dev/null.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as inp:
        if stdin is not None:
            inp.write(stdin)
            inp.flush()
            inp.seek(0)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL if stdin is None else inp,
                                env=env, cwd=cwd)
        deadline = t0 + timeout
        status, usage, timed_out = None, None, False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                _pid, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(0.002)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"wall": wall, "rc": proc.returncode, "timed_out": timed_out,
                "stdout": out.read().decode("utf-8", "replace"), "stderr": err.read().decode("utf-8", "replace"),
                "maxrss_mb": usage.ru_maxrss / 1024.0, "cpu": usage.ru_utime + usage.ru_stime}


def cli_recall(query: str, root: Path, no_server: bool, timeout: float = CLI_TIMEOUT_S) -> dict:
    r = run_measured([vaultmem_bin(), "recall", query, "--vault", str(root), "--json"], timeout, _env(no_server))
    r["ids"] = []
    if r["rc"] == 0:
        try:
            r["ids"] = [h.get("id") for h in json.loads(r["stdout"])]
        except (ValueError, AttributeError):
            pass
    return r


def watcher_available() -> bool:
    try:
        p = subprocess.run([vaultmem_bin(), "watch", "--help"], capture_output=True, timeout=60, env=_env(False))
        return p.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Watcher:
    """`vaultmem watch --vault V` as a background child; ready when it prints 'serving recall'."""

    def __init__(self, root: Path, ready_timeout: float, env: dict | None = None):
        self.proc = subprocess.Popen([vaultmem_bin(), "watch", "--vault", str(root)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     env=_env(False) if env is None else env,
                                     text=True, bufsize=1, start_new_session=True)
        self.ready = threading.Event()
        self.lines: list[str] = []
        self.err_lines: list[str] = []
        self.t0 = time.perf_counter()
        self.ready_after: float | None = None
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines, True), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.err_lines, False), daemon=True).start()
        deadline = time.perf_counter() + ready_timeout
        while not self.ready.wait(0.1) and self.proc.poll() is None and time.perf_counter() < deadline:
            pass
        if not self.ready.is_set():
            tail = "".join((self.lines + self.err_lines)[-5:]).strip()
            self.stop()
            raise RuntimeError(f"watcher not ready after {ready_timeout:.0f}s: {tail[:300]}")

    def _read(self, stream, sink, is_stdout):
        for line in stream:
            sink.append(line)
            if is_stdout and "serving recall" in line and not self.ready.is_set():
                self.ready_after = time.perf_counter() - self.t0
                self.ready.set()

    def peak_rss_mb(self) -> float | None:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
        except OSError:
            return None
        return None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)


# ================================================================ measurements

def ab_engine(argv: list[str] | None, description: str):
    """(args, a synced in-process RecallEngine) for a paired A/B script: `VAULT [--seed N]`,
    no watcher in the way."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("vault", type=Path)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args(argv)
    os.environ["VAULTMEM_NO_SERVER"] = "1"
    from vaultmem.search.engine import RecallEngine
    from vaultmem.vault import Vault

    engine = RecallEngine(Vault(args.vault))
    engine.sync()
    return args, engine


def paired_ab(engine, qs: list[str], arm, rounds: int = 2) -> tuple[dict, dict]:
    """Recall each query under both arms, alternating which goes first (query by query and
    round by round, so the machine's drift hits both): `arm(on)` switches the engine.
    Returns ({arm: [ms]}, {arm: hits of each query in the first round})."""
    for q in qs[:5]:
        engine.recall(q, top_k=5, sync=False)
    ms: dict[bool, list[float]] = {False: [], True: []}
    found: dict[bool, list] = {False: [], True: []}
    for round_ in range(rounds):
        for i, q in enumerate(qs):
            for on in ((False, True) if (i + round_) % 2 else (True, False)):
                arm(on)
                start = time.perf_counter()
                hits = engine.recall(q, top_k=5, sync=False)
                ms[on].append((time.perf_counter() - start) * 1000)
                if round_ == 0:
                    found[on].append(hits)
    return ms, found


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def inproc_child(root: Path, seed: int, out_file: Path) -> None:
    """In-process measurements for one vault (run in a child: its ru_maxrss is this vault's)."""
    from vaultmem.search.engine import RecallEngine
    from vaultmem.vault import Vault

    res: dict = {}
    t0 = time.perf_counter()
    e = RecallEngine(Vault(root))
    stats = e.sync()
    res["engine_open_s"] = time.perf_counter() - t0
    res["sync_stats"] = stats
    res["model_problem"] = e.model_problem
    qs = queries(seed, N_INPROC_QUERIES)
    for q in qs[:5]:  # warm-up: first query pays the Whoosh searcher and ORT's first run
        e.recall(q, top_k=TOP_K, sync=False)
    warm, synced, empty = [], [], 0
    for q in qs:
        t = time.perf_counter()
        hits = e.recall(q, top_k=TOP_K, sync=False)
        warm.append((time.perf_counter() - t) * 1000)
        empty += not hits
    for q in qs:
        t = time.perf_counter()
        e.recall(q, top_k=TOP_K)
        synced.append((time.perf_counter() - t) * 1000)
    res.update(warm_ms=warm, synced_ms=synced, empty_results=empty)

    rng = random.Random(seed + 5)
    lat = []
    for rel in pick_edit_targets(root, 3, seed):
        word = nonsense_word(rng)
        original = append_word(root, rel, word)
        t = time.perf_counter()
        found = False
        try:
            while time.perf_counter() - t < FRESHNESS_TIMEOUT_S:
                hits = e.recall(word, top_k=TOP_K, sync=True)
                if any(h.note.path == rel for h in hits):
                    found = True
                    break
            lat.append((time.perf_counter() - t) * 1000 if found else float("nan"))
        finally:
            (root / rel).write_text(original, encoding="utf-8")
    res["edit_ms"] = lat
    res["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    out_file.write_text(json.dumps(res))


def watcher_freshness(root: Path, seed: int) -> float:
    """ms from the file write to the first CLI recall (through the watcher) that returns the edited note."""
    rel = pick_edit_targets(root, 4, seed)[3]
    from vaultmem.vault import Vault

    note_id = Vault(root).read_note(rel).id
    word = nonsense_word(random.Random(seed + 9))
    path = root / rel
    original = path.read_text(encoding="utf-8")
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(original.rstrip("\n") + f" {word}\n")
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < FRESHNESS_TIMEOUT_S:
            r = cli_recall(word, root, no_server=False, timeout=30)
            if note_id in r["ids"]:
                return (time.perf_counter() - t0) * 1000
            time.sleep(POLL_S)
        return float("nan")
    finally:
        path.write_text(original, encoding="utf-8")


def bench_size(size: int, args, has_watcher: bool) -> dict:
    row: dict = {"size": size}
    log = lambda msg: print(f"[{size}] {msg}", file=sys.stderr, flush=True)  # noqa: E731

    root, gen_s = ensure_vault(size, args.seed, args.fresh)
    row["gen_s"] = gen_s
    log(f"vault {root} ({'generated in %.1fs' % gen_s if gen_s is not None else 'cached'})")

    if args.seed_vectors:
        clear_indexes(root)
        log("seeding vectors (no model run over the notes), building catalog + BM25 in-process ...")
        # In a child: a 2 GB parent would be the starting ru_maxrss of every child it forks later.
        seeded = _run_child("--_seed", root, args.seed, max(900.0, size * 0.05), "seeding")
        if seeded["sync_stats"]["embedded"]:
            raise RuntimeError(f"seeded vectors missed {seeded['sync_stats']['embedded']} notes")
        row["seeded"] = seeded
        row["build_s"] = row["build_rss_mb"] = None
        log(f"catalog parse {seeded['parse_s']:.1f}s, BM25 build {seeded['bm25_s']:.1f}s")
    else:
        _cli_build(root, size, row, log)
    _rest(root, size, row, log, args, has_watcher)
    return row


def _run_child(flag: str, root: Path, seed: int, timeout: float, what: str) -> dict:
    """Run this script's `flag` mode in a child process (its own peak RSS) and return the JSON it wrote."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out_file = Path(tmp.name)
    c = run_measured([sys.executable, __file__, flag, str(root), "--seed", str(seed), "--_out", str(out_file)],
                     timeout, _env(True))
    if c["rc"] != 0:
        raise RuntimeError(f"{what} failed rc={c['rc']}: {c['stderr'][-800:]}")
    result = json.loads(out_file.read_text())
    out_file.unlink()
    return result


def _cli_build(root: Path, size: int, row: dict, log) -> None:
    # ---- full build through the CLI
    clear_indexes(root)
    log("reindex ...")
    build_timeout = max(900.0, size * 0.08)
    r = run_measured([vaultmem_bin(), "reindex", "--vault", str(root), "--json"], build_timeout, _env(True))
    if r["rc"] != 0:
        raise RuntimeError(f"reindex failed rc={r['rc']} timed_out={r['timed_out']}: {r['stderr'][-500:]}")
    row["build_s"], row["build_rss_mb"] = r["wall"], r["maxrss_mb"]
    log(f"reindex {r['wall']:.1f}s, {size / r['wall']:.0f} notes/s, rss {r['maxrss_mb']:.0f} MB")


def _rest(root: Path, size: int, row: dict, log, args, has_watcher: bool) -> None:
    # ---- in-process (child process, for its own peak RSS)
    log("in-process ...")
    inproc = _run_child("--_inproc", root, args.seed, max(600.0, size * 0.02), "in-process child")
    row.update(inproc)
    log(f"warm p50 {pct(inproc['warm_ms'], 50):.1f} ms, synced p50 {pct(inproc['synced_ms'], 50):.1f} ms, "
        f"edit {inproc['edit_ms']}")

    # ---- CLI without the watcher
    qs = queries(args.seed + 1, N_CLI_QUERIES)
    cli_recall(qs[0], root, no_server=True)  # page cache warm-up, not counted
    log("CLI without watcher ...")
    runs = [cli_recall(q, root, no_server=True) for q in qs]
    bad = [x for x in runs if x["rc"] != 0]
    if bad:
        raise RuntimeError(f"CLI recall failed rc={bad[0]['rc']}: {bad[0]['stderr'][-500:]}")
    row["cli_ms"] = [x["wall"] * 1000 for x in runs]
    row["cli_rss_mb"] = max(x["maxrss_mb"] for x in runs)

    # ---- with the watcher
    row["watcher"] = None
    if has_watcher:
        log("watcher ...")
        try:
            w = Watcher(root, ready_timeout=max(120.0, size * 0.01))
        except RuntimeError as exc:
            row["watcher_error"] = str(exc)
            log(str(exc))
        else:
            try:
                cli_recall(qs[0], root, no_server=False)
                runs = [cli_recall(q, root, no_server=False) for q in qs]
                wrow = {"ready_s": w.ready_after, "cli_ms": [x["wall"] * 1000 for x in runs],
                        "cli_failures": sum(x["rc"] != 0 for x in runs),
                        "client_rss_mb": max(x["maxrss_mb"] for x in runs),
                        # A thin client stays ~30 MB; one that loaded numpy/the model fell back to in-process.
                        "fell_back": sum(x["maxrss_mb"] > FALLBACK_RSS_MB for x in runs)}
                wrow["edit_ms"] = watcher_freshness(root, args.seed)
                wrow["rss_mb"] = w.peak_rss_mb()
                row["watcher"] = wrow
            finally:
                w.stop()
                row["watcher_log_tail"] = (w.lines + w.err_lines)[-20:]


# ================================================================ output

def _git_rev() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        return rev or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


START_LOAD = _loadavg()


def machine_facts() -> list[str]:
    import numpy

    try:
        import onnxruntime
        ort = onnxruntime.__version__
    except ImportError:
        ort = "not installed"
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.1f} GB"
    except (OSError, ValueError, IndexError):
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return [
        f"- cores: {os.cpu_count()} ({usable} usable), CPU: {cpu}, RAM: {mem}",
        f"- python {platform.python_version()} ({platform.python_implementation()}), {platform.platform()}",
        f"- onnxruntime {ort}, numpy {numpy.__version__}; vaultmem at {_git_rev()}",
        f"- load average at start / end: {START_LOAD} / {_loadavg()} (other processes on the machine skew timings)",
    ]


def print_report(title: str, table: str, rows: list, json_path: str | None = None) -> None:
    """A bench's result: its title, this machine's facts, its table (and its rows as JSON)."""
    print(f"## {title}\n")
    print("\n".join(machine_facts()))
    print()
    print(table)
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=1))


def _ms(values) -> str:
    vals = [v for v in values if v == v]
    if not vals:
        return "n/a"
    return f"{pct(vals, 50):.0f} / {pct(vals, 95):.0f}" if pct(vals, 50) >= 10 else \
        f"{pct(vals, 50):.1f} / {pct(vals, 95):.1f}"


def _mb(x) -> str:
    return f"{x:.0f}" if x else "n/a"


def table(rows: list[dict]) -> str:
    head = ["notes", "build s (notes/s)", "edit→recall ms in-proc / watcher", "in-proc warm p50/p95 ms",
            "in-proc +stat-scan p50/p95 ms", "CLI no watcher p50/p95 ms", "CLI + watcher p50/p95 ms",
            "peak RSS MB in-proc / watcher / reindex / CLI", "engine open s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        w = r.get("watcher")
        edit_in = statistics.median(r["edit_ms"]) if r["edit_ms"] else float("nan")
        edit_w = f"{w['edit_ms']:.0f}" if w and w.get("edit_ms") == w.get("edit_ms") else "n/a"
        cells = [
            f"{r['size']:,}",
            f"{r['build_s']:.1f} ({r['size'] / r['build_s']:.0f})" if r.get("build_s") else
            f"not run (seeded vectors; parse {r['seeded']['parse_s']:.0f} + BM25 {r['seeded']['bm25_s']:.0f})",
            f"{edit_in:.0f} / {edit_w}",
            _ms(r["warm_ms"]),
            _ms(r["synced_ms"]),
            _ms(r["cli_ms"]),
            _ms(w["cli_ms"]) if w else "n/a",
            " / ".join(_mb(x) for x in (r["maxrss_mb"], w and w.get("rss_mb"), r.get("build_rss_mb"), r["cli_rss_mb"])),
            f"{r['engine_open_s']:.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="comma-separated note counts")
    p.add_argument("--quick", action="store_true", help="1000 notes only")
    p.add_argument("--fresh", action="store_true", help="regenerate the cached synthetic vaults")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--seed-vectors", action="store_true",
                   help="skip the real build: fill the embedding cache from 256 real embeddings plus noise, "
                        "build BM25 in-process; for query/edit/memory timings at sizes whose real build takes hours")
    p.add_argument("--json-out", help="also write the raw measurements here")
    p.add_argument("--_inproc", help=argparse.SUPPRESS)
    p.add_argument("--_seed", help=argparse.SUPPRESS)
    p.add_argument("--_out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args._seed:
        Path(args._out).write_text(json.dumps(seed_vectors(Path(args._seed), args.seed)))
        return 0
    if args._inproc:
        inproc_child(Path(args._inproc), args.seed, Path(args._out))
        return 0

    sizes = [1000] if args.quick else [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    has_watcher = watcher_available()
    rows = []
    for size in sizes:
        rows.append(bench_size(size, args, has_watcher))
    print("## vaultmem recall performance\n")
    print("\n".join(machine_facts()))
    print(f"- watcher: {'available' if has_watcher else 'not available (`vaultmem watch --help` fails): n/a'}")
    print(f"- queries: {N_INPROC_QUERIES} in-process, {N_CLI_QUERIES} per CLI mode; top_k={TOP_K}; seed {args.seed}\n")
    print(table(rows))
    notes = []
    for r in rows:
        extra = []
        if r.get("gen_s") is not None:
            extra.append(f"generated in {r['gen_s']:.1f}s")
        if r.get("model_problem"):
            extra.append(f"MODEL PROBLEM: {r['model_problem']}")
        if r.get("empty_results"):
            extra.append(f"{r['empty_results']} queries with no hits")
        w = r.get("watcher")
        if w:
            extra.append(f"watcher ready after {w['ready_s']:.1f}s, client peak RSS {w['client_rss_mb']:.0f} MB"
                         + (f", {w['fell_back']} of {len(w['cli_ms'])} watcher-mode CLI calls fell back to "
                            f"in-process (client RSS > {FALLBACK_RSS_MB:.0f} MB)" if w.get("fell_back") else "")
                         + (f", {w['cli_failures']} failed CLI calls" if w["cli_failures"] else ""))
        if r.get("watcher_error"):
            extra.append(f"watcher: {r['watcher_error']}")
        if extra:
            notes.append(f"- {r['size']:,}: " + "; ".join(extra))
    if notes:
        print("\n" + "\n".join(notes))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
