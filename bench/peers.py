"""vaultmem side by side with the two tools it aims to replace, skillmem and
agentmemory-sr, measured in the same run on the same synthetic memories.

    .venv/bin/python bench/peers.py --sizes 1000,10000 --peers-python /tmp/peers-venv/bin/python
    .venv/bin/python bench/peers.py --quick                       # 300 memories, few repetitions
    ... --vaultmem-python /tmp/before-venv/bin/python             # vaultmem from another install

Peers go in a scratch venv, never the repo's: `pip install skillmem==0.13.0`
and agentmemory-sr from its source (`pip install PATH`; it is not on PyPI).
A tool whose package the given interpreter lacks is reported "not installed".
vaultmem runs under `--vaultmem-python` (default: this interpreter) with `-I`,
so it is that interpreter's installed vaultmem, never this checkout by path.

Data: a fixed seed gives the same memories to every tool: one sentence of
8-25 words, a fact with concrete values ("Service alpha-17 listens on port
8123 in staging ..."), in ~20 namespaces; about 5% repeat an earlier memory
word for word and 7% restate one with a value changed, as an agent's saves
do. Queries ask about stored facts ("which port does alpha-17 listen on").
skillmem stores a memory as a `reference` record titled by the sentence, its
namespace as the project; agentmemory-sr and vaultmem take text + namespace.

Each API measurement runs in a child process of the tool's interpreter
(bench/_peers_child.py), so its peak RSS (wait4) is that tool's alone; every
child and CLI call has a timeout. Nothing opens a network socket: the peers
run with HOME pointed into the work folder, skillmem without its optional
`semantic` extra (its model is a download, impossible here), so its search is
BM25 only, which is what `pip install skillmem` gives; vaultmem's watcher
serves on a private Unix socket.

Rows, per size (one column per tool, and vaultmem / best peer: < 1 is vaultmem ahead):

1. write, checks off: N adds through the API into an empty store, total
   seconds and ms/add. vaultmem `Vault.add(text, ns, merge=False,
   supersede=False)`; skillmem `storage.upsert(item, check_conflicts=False)`;
   agentmemory-sr has no add without its check (n/a; its store is built with
   its normal add).
2. write, checks on (embeddings included where the tool has them): the first
   min(N, --checked-limit) adds into a fresh empty store, the same adds for
   every tool (default 10,000: all of them up to the 10k the targets name);
   the total is extrapolated linearly to N when fewer were measured (adds
   slow down as the store grows, so that underestimates, by more for a tool
   whose cost per add grows), and
   the mean ms/add of the first and last 200 adds shows the growth. vaultmem
   default `Vault.add` (recurrence / supersede / contest); skillmem
   `check_conflicts=True` (refuses near-duplicates: word overlap >= 0.7);
   agentmemory-sr `MemoryStore.add` (demotes similar memories of the
   namespace, but only those already in the `review` state). What each check
   did is counted under the table.
3. in-process recall: one long-lived API object on the N-memory store of row
   1, 5 warm-up queries, then ~50 timed, k=5: p50 / p95 ms. vaultmem
   `vault.recall(q, k=5)` (with its freshness check); skillmem
   `storage.search`; agentmemory-sr `MemoryStore.retrieve` (which also writes
   retrieval counts). "first query" is the first call on a fresh process
   (vaultmem builds its indexes and embeds every note then).
4. CLI recall p50, ~15 queries, each a subprocess: `vaultmem recall Q --vault V
   -k 5 --json` without a watcher (VAULTMEM_NO_SERVER=1) and with `vaultmem
   watch --vault V` running (started, then polled until recall answers
   through it); `skillmem --db DB search Q --limit 5 --format json`;
   `agentmemory --db DB search Q --top-k 5`.
5. CLI grade and add p50, ~10 calls each: `vaultmem --vault V grade ID good`
   and `vaultmem --vault V add TEXT -n NS` (without and with the watcher);
   `agentmemory --db DB grade ID good` / `add TEXT -n NS`; `skillmem --db DB
   reinforce SLUG --evidence user_confirmed` (it reinforces skills only: a
   few are filed for it) / `write --slug S --title TEXT --kind reference
   --project NS --body ''` (its near-duplicate check on, the default).
6. peak RSS: the row-3 child (wait4), the row-2 child, and vaultmem's
   watcher (VmHWM from /proc/PID/status, read before it is stopped); 6d, the
   row-2c child's own peak and that of the process its `add_many` embeds ahead
   in (VmHWM, read before it ends): the two run side by side.
7. on disk (st_blocks, after row 3 built the indexes): vaultmem's
   `.vaultmem/` folder (everything but the notes) and the whole vault; the
   peers' whole store (SQLite file, WAL, anything under their home).
8. vaultmem only: `vault.decay()` on a copy of the N-note vault with
   VAULTMEM_NOW 60 days after the notes were written, seconds (and how many
   notes changed); killed after --decay-timeout and shown as "> T".
9. vaultmem only: edit -> recall through the watcher: append a new unique
   word to one note's file, then `vaultmem recall WORD --json` every 20 ms
   until it returns that note; median of 3 notes.

Then a scaling table for vaultmem across sizes. Raw numbers: --json-out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
CHILD = BENCH_DIR / "_peers_child.py"

from recall_perf import FALLBACK_RSS_MB, nonsense_word, pct, run_measured  # noqa: E402

TOOLS = ("vaultmem", "skillmem", "agentmemory-sr")
PEERS = TOOLS[1:]
PEER_BIN = {"skillmem": "skillmem", "agentmemory-sr": "agentmemory"}
WORK_DIR = Path(os.environ.get("VAULTMEM_PEERS_DIR", "/tmp/vaultmem-peers"))
TOP_K = 5
POLL_S = 0.020
CLI_TIMEOUT_S = 120.0
DECAY_AFTER_DAYS = 60


class Reps:
    """How many times each measure repeats (--quick: fewer)."""

    def __init__(self, quick: bool):
        self.inproc_queries = 12 if quick else 50
        self.cli_queries = 3 if quick else 15  # quick: two questions and the off-topic one
        self.cli_calls = 2 if quick else 10  # quick: a p50 of two processes per mode
        self.edits = 1 if quick else 3
        self.grade_ids = 2 * self.cli_calls  # distinct notes: without, then with the watcher


# ================================================================ synthetic memories

GREEK = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
         "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega"]
ENVS = ["staging", "production", "the dev cluster", "the QA environment", "the Frankfurt region",
        "the Virginia region", "the on-prem rack"]
PROXIES = ["nginx", "Envoy", "HAProxy", "Caddy", "Traefik"]
TECH = ["Postgres", "Redis", "Kafka", "RabbitMQ", "Elasticsearch", "ClickHouse", "Django", "FastAPI", "Go",
        "Rust", "Node", "Celery", "gRPC", "Nomad", "Kubernetes"]
DBS = ["Postgres", "MySQL", "ClickHouse", "SQLite", "DuckDB", "MongoDB"]
CI = ["GitHub Actions", "GitLab CI", "Jenkins", "Buildkite", "CircleCI"]
FIRST = ["Alice", "Bob", "Carol", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jamal", "Kasia", "Liam",
         "Mei", "Nikolai", "Olga", "Priya", "Quentin", "Rosa", "Sven", "Tomas", "Uma", "Viktor", "Wen", "Zara"]
LAST = ["Ivanova", "Smith", "Garcia", "Kowalski", "Nakamura", "Okafor", "Schmidt", "Rossi", "Dubois", "Haddad",
        "Larsen", "Novak", "Petrov", "Silva", "Tanaka", "Weber"]
TEAMS = ["platform", "payments", "growth", "mobile", "data", "security", "SRE", "support"]
CHANNELS = ["Slack", "email", "a phone call", "a short video call", "a ticket"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
FOODS = ["dark chocolate", "green tea", "sushi", "spicy ramen", "cheesecake", "mango lassi", "borscht"]
PREFS = [("tabs", "spaces"), ("dark mode", "light mode"), ("pnpm", "npm"), ("vim", "emacs"),
         ("pytest", "unittest"), ("squash merges", "merge commits"), ("async updates", "standups"),
         ("uv", "pip"), ("window seats", "aisle seats")]
CONTEXTS = ["Python files", "code review", "the frontend repo", "new services", "documentation", "data pipelines"]
PROJECTS = ["Atlas", "Orion", "Phoenix", "Nebula", "Falcon", "Aurora", "Granite", "Helix"]
EVENTS = ["vendor review", "security audit", "budget cut", "reorg", "outage in March", "hiring freeze"]
STORES = ["S3", "MinIO", "GCS", "Azure Blob"]
REGIONS = ["eu-central-1", "us-east-1", "eu-west-2", "ap-south-1"]
METRICS = ["latency", "error rate", "queue depth", "cold start", "memory use"]
UNITS = {"latency": "milliseconds", "error rate": "basis points", "queue depth": "messages",
         "cold start": "milliseconds", "memory use": "megabytes"}
SECRET_STORES = ["HashiCorp Vault", "AWS Secrets Manager", "sops files", "Doppler"]
COMPANIES = ["Initech", "Globex", "Umbrella Logistics", "Stark Freight", "Wayne Retail", "Acme Foods"]
CITIES = ["Lisbon", "Tokyo", "Berlin", "Nairobi", "Montreal", "Oslo", "Seoul"]
MEDS = ["vitamin D", "a magnesium tablet", "iron supplements", "an allergy pill"]
ROOMS = ["kitchen", "hallway", "bedroom", "garage", "living room"]
BRANDS = ["Hue", "Zigbee", "Home Assistant", "Shelly"]
FRAMEWORKS = ["React", "Svelte", "Vue", "Angular", "SolidJS"]
CDNS = ["Cloudflare", "Fastly", "CloudFront", "Bunny"]
APPS = ["checkout", "dashboard", "admin", "storefront", "onboarding"]
TABLES = ["events", "orders", "invoices", "sessions", "audit_log", "payments"]
PARTS = ["month", "customer id", "region", "day"]


def _draw(r: random.Random) -> dict:
    """Every slot value a template may use (only the used ones end up in the text)."""
    first, last = r.choice(FIRST), r.choice(LAST)
    metric = r.choice(METRICS)
    pref = r.choice(PREFS)
    return {
        "svc": f"{r.choice(GREEK)}-{r.randint(1, 60)}", "port": r.randint(1024, 65000), "env": r.choice(ENVS),
        "proxy": r.choice(PROXIES), "tech": r.choice(TECH), "ver": f"{r.randint(1, 17)}.{r.randint(0, 9)}",
        "db": r.choice(DBS), "host": f"{r.choice(['db', 'app', 'mq', 'cache'])}{r.randint(1, 40):02d}",
        "ci": r.choice(CI), "n": r.randint(2, 400), "first": first, "last": last, "person": f"{first} {last}",
        "team": r.choice(TEAMS), "channel": r.choice(CHANNELS), "month": r.choice(MONTHS),
        "day": r.randint(1, 28), "year": r.randint(2024, 2027), "food": r.choice(FOODS),
        "pref_a": pref[0], "pref_b": pref[1], "context": r.choice(CONTEXTS), "proj": r.choice(PROJECTS),
        "event": r.choice(EVENTS), "store": r.choice(STORES), "region": r.choice(REGIONS), "metric": metric,
        "unit": UNITS[metric], "secrets": r.choice(SECRET_STORES), "weekday": r.choice(WEEKDAYS),
        "hour": r.randint(6, 20), "company": r.choice(COMPANIES), "city": r.choice(CITIES),
        "term": r.randint(1, 5), "med": r.choice(MEDS), "room": r.choice(ROOMS), "brand": r.choice(BRANDS),
        "fw": r.choice(FRAMEWORKS), "cdn": r.choice(CDNS), "app": r.choice(APPS), "table": r.choice(TABLES),
        "part": r.choice(PARTS),
    }


# (statement, namespaces, question, the slot a restatement changes)
TEMPLATES = [
    ("Service {svc} listens on port {port} in {env} behind the {proxy} load balancer.",
     ["work/infra/network"], "which port does {svc} listen on in {env}", "port"),
    ("The {svc} service runs {tech} {ver} and keeps its data in {db} on host {host}.",
     ["work/backend", "work/infra"], "what version of {tech} does the {svc} service run", "ver"),
    ("Deploys of {svc} go through {ci} and take about {n} minutes from merge to production.",
     ["work/ci"], "how long does a {svc} deploy take", "n"),
    ("{person} leads the {team} team and prefers {channel} for anything urgent about {svc}.",
     ["people/team"], "who leads the {team} team", "channel"),
    ("{first}'s birthday is on {month} {day}, and {first} really likes {food}.",
     ["people"], "when is {first}'s birthday", "day"),
    ("The user prefers {pref_a} over {pref_b} when working on {context}.",
     ["personal/preferences"], "does the user prefer {pref_a} or {pref_b}", "pref_a"),
    ("The {proj} project deadline moved to {month} {day} {year} after the {event}.",
     ["projects"], "when is the {proj} deadline", "day"),
    ("The monthly budget for {proj} is {n} thousand euros, approved by {person} in {month}.",
     ["finance"], "what is the budget for {proj}", "n"),
    ("Backups of {svc} are kept for {n} days in an encrypted {store} bucket in {region}.",
     ["work/data", "work/security"], "how long are {svc} backups kept", "n"),
    ("The p95 {metric} of {svc} is {n} {unit} since the {tech} upgrade in {month}.",
     ["work/oncall", "work/backend"], "p95 {metric} of {svc}", "n"),
    ("The {svc} service reads its secrets from {secrets} and rotates them every {n} days.",
     ["work/security"], "how often does {svc} rotate its secrets", "n"),
    ("Never restart {svc} during business hours; drain its queue on host {host} first.",
     ["work/oncall"], "how do I restart {svc} safely", "host"),
    ("The invoice job of {svc} runs every {weekday} at {hour}:00 UTC and emails {person}.",
     ["work/backend/billing"], "when does the {svc} invoice job run", "weekday"),
    ("{person} from {company} is our contact for the {proj} contract and answers within {n} hours.",
     ["people/clients"], "who is our contact at {company}", "n"),
    ("The user's flight to {city} leaves on {weekday} at {hour}:30 from terminal {term}.",
     ["personal/travel"], "when does the flight to {city} leave", "term"),
    ("The user takes {med} every morning and sees Dr. {last} for a checkup in {month}.",
     ["personal/health"], "when is the checkup with Dr. {last}", "month"),
    ("The {room} lights at home run on the {brand} hub, whose admin page is on port {port}.",
     ["personal/home"], "which port is the {brand} hub admin page on", "port"),
    ("The {app} web app is built with {fw} {ver} and served through the {cdn} CDN.",
     ["work/frontend"], "what framework is the {app} app built with", "ver"),
    ("Table {table} in {db} holds about {n} million rows and is partitioned by {part}.",
     ["work/infra/db"], "how many rows does the {table} table have", "n"),
    ("Alerts for {svc} page the {team} on-call rotation after {n} minutes above threshold.",
     ["work/oncall"], "when do {svc} alerts page the on-call", "n"),
]
NAMESPACES = sorted({ns for _s, nss, _q, _slot in TEMPLATES for ns in nss})
# Context a memory may carry (60%), so that two facts from one template differ in more than a value.
CLAUSES = ["according to {person}", "as of {month} {year}", "since the {event}", "per the {team} runbook",
           "as {first} confirmed on {weekday}", "after the {tech} migration", "as noted in the {proj} retro",
           "which {first} double-checked", "as agreed in the {team} sync", "until further notice",
           "before the {proj} launch", "while {person} is away"]
P_CLAUSE = 0.6
P_REPEAT = 0.05   # the same memory again, word for word
P_RESTATE = 0.07  # the same fact with one value changed (a contradiction or an update)
OFF_TOPIC = ["what is the capital of Mongolia", "recipe for sourdough bread", "who won the 1998 world cup"]


class MemoryGen:
    """Deterministic stream of (text, namespace) memories, with facts to ask about."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.facts: list[tuple[int, dict]] = []  # (template index, values) of every memory so far
        self.origins: list[int | None] = []  # the earlier memory each repeats or restates (None: a new fact)

    def _render(self, t: int, values: dict) -> tuple[str, str]:
        text, namespaces, _q, _slot = TEMPLATES[t]
        text = text.format(**values)
        if values["_clause"] is not None:
            text = text[:-1] + ", " + CLAUSES[values["_clause"]].format(**values["_cv"]) + "."
        return text[0].upper() + text[1:], namespaces[values["_ns"] % len(namespaces)]

    def _context(self) -> dict:
        r = self.rng
        return {"_clause": r.randrange(len(CLAUSES)) if r.random() < P_CLAUSE else None, "_cv": _draw(r)}

    def next(self) -> tuple[str, str]:
        r = self.rng
        roll = r.random()
        origin = None
        if self.facts and roll < P_REPEAT:
            origin = r.randrange(len(self.facts))  # the draw random.choice makes
            t, values = self.facts[origin]
        elif self.facts and roll < P_REPEAT + P_RESTATE:
            origin = r.randrange(len(self.facts))
            t, old = self.facts[origin]
            slot = TEMPLATES[t][3]
            fresh = _draw(r)
            if slot == "pref_a":  # a preference reversed
                values = {**old, "pref_a": old["pref_b"], "pref_b": old["pref_a"]}
            else:
                values = {**old, slot: fresh[slot]}
            values.update(self._context())  # said again another day, in other words around it
        else:
            t = r.randrange(len(TEMPLATES))
            values = {**_draw(r), "_ns": r.randrange(2), **self._context()}
        self.facts.append((t, values))
        self.origins.append(origin)
        text, namespace = self._render(t, values)
        assert 8 <= len(text.split()) <= 25, text
        return text, namespace

    def question(self) -> str:
        t, values = self.rng.choice(self.facts)
        return TEMPLATES[t][2].format(**values)


def make_data(size: int, seed: int, reps: Reps) -> dict:
    """The memories, queries and extra CLI adds of one size (the same for every tool)."""
    gen = MemoryGen(seed)
    memories = [gen.next() for _ in range(size)]
    inproc = [gen.question() for _ in range(reps.inproc_queries - 1)] + OFF_TOPIC[:1]
    cli = [gen.question() for _ in range(reps.cli_queries - 1)] + OFF_TOPIC[1:2]
    extra = MemoryGen(seed + 1)  # new facts for the CLI adds, none of them in the store
    cli_adds = [extra.next() for _ in range(2 * reps.cli_calls)]
    return {"memories": memories, "queries": inproc, "cli_queries": cli, "cli_adds": cli_adds}


# ================================================================ processes

class ChildTimeout(RuntimeError):
    """A child process ran past its timeout and was killed."""


class Setup:
    """Interpreters, executables and the environment of each tool."""

    def __init__(self, args, work: Path):
        self.work = work
        self.python = {"vaultmem": args.vaultmem_python or sys.executable}
        for peer in PEERS:
            self.python[peer] = args.peers_python or sys.executable
        self.home = work / "home"  # the peers' HOME: nothing they write lands in the real one
        self.home.mkdir(parents=True, exist_ok=True)
        self.info: dict[str, dict | None] = {}

    def bin(self, tool: str) -> str:
        name = "vaultmem" if tool == "vaultmem" else PEER_BIN[tool]
        return str(Path(self.python[tool]).parent / name)  # the venv's script, symlinks not resolved

    def env(self, tool: str, store: Path | None = None, no_server: bool = True, now: str | None = None) -> dict:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTHON", "VAULTMEM_", "SKILLMEM_", "AGENTMEMORY_"))}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")
        if tool == "vaultmem":
            env["VAULTMEM_AUTOWATCH"] = "off"  # this bench starts and stops its own watcher
            if no_server:
                env["VAULTMEM_NO_SERVER"] = "1"
            if now:
                env["VAULTMEM_NOW"] = now
        else:
            env.update(HOME=str(self.home), XDG_DATA_HOME=str(self.home / "data"),
                       XDG_CACHE_HOME=str(self.home / "cache"), XDG_CONFIG_HOME=str(self.home / "config"))
            if tool == "skillmem" and store is not None:
                env.update(SKILLMEM_HOME=str(store / "home"), SKILLMEM_DB=str(store / "memory.db"),
                           SKILLMEM_MODEL_CACHE=str(store / "models"))
            if tool == "agentmemory-sr" and store is not None:
                env["AGENTMEMORY_DB"] = str(store / "memory.db")
        return env

    def child(self, tool: str, op: str, store: Path | None, timeout: float, now: str | None = None,
              **spec) -> dict:
        """Run one operation of bench/_peers_child.py under the tool's interpreter; its result
        plus `wall` and the child's peak RSS from wait4."""
        spec_file = self.work / f"spec-{os.getpid()}.json"
        out_file = self.work / f"out-{os.getpid()}.json"
        out_file.unlink(missing_ok=True)
        spec.update(op=op, tool=tool, store=str(store) if store else None, out=str(out_file),
                    bench_root=str(ROOT))
        spec_file.write_text(json.dumps(spec), encoding="utf-8")
        run = run_measured([self.python[tool], "-I", str(CHILD), str(spec_file)], timeout,
                           self.env(tool, store, now=now), cwd=str(self.work))
        if run["timed_out"]:
            raise ChildTimeout(f"{tool} {op} child killed after its {timeout:.0f}s timeout")
        if run["rc"] != 0 or not out_file.exists():
            raise RuntimeError(f"{tool} {op} child rc={run['rc']}: {run['stderr'][-1500:]}")
        result = json.loads(out_file.read_text(encoding="utf-8"))
        result["wall"], result["child_rss_mb"] = run["wall"], run["maxrss_mb"]
        return result

    def cli(self, tool: str, args: list[str], store: Path, no_server: bool = True) -> dict:
        return run_measured([self.bin(tool), *args], CLI_TIMEOUT_S, self.env(tool, store, no_server),
                            cwd=str(self.work))


def discover_tools(setup: Setup, wanted: list[str]) -> list[str]:
    """The tools whose package imports under their interpreter; fills setup.info."""
    present = []
    for tool in wanted:
        try:
            info = setup.child(tool, "info", None, 120.0)
        except RuntimeError as exc:
            setup.info[tool] = {"error": str(exc).splitlines()[-1][:200] if str(exc) else "?"}
            continue
        setup.info[tool] = info
        present.append(tool)
        compile_package(setup.python[tool], info.get("module_file"))
    return present


def compile_package(python: str, module_file: str | None) -> None:
    """Write the bytecode of a tool's package before its commands are timed. pip compiles what it
    installs, but an editable install (and a checkout) does not, and with PYTHONDONTWRITEBYTECODE
    set (as on these machines) every CLI call would compile each module without a .pyc again."""
    if module_file:
        subprocess.run([python, "-I", "-m", "compileall", "-q", str(Path(module_file).parent)],
                       capture_output=True, timeout=300)


# ================================================================ measures (one function each)

def store_of(size_dir: Path, tool: str, phase: str) -> Path:
    return size_dir / f"{tool}-{phase}"


def fresh_dir(path: Path) -> Path:
    """An empty folder for a store, with the disk caught up first: a write measured next starts
    with nothing left to flush from the steps before (the store just deleted, another tool's
    10k files), which a tool that syncs (vaultmem, once per batch) would otherwise pay for."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    os.sync()
    return path


def measure_write_plain(setup: Setup, tool: str, size_dir: Path, data: dict, reps: Reps) -> dict:
    """Row 1: N adds, checks off, into an empty store (this store serves rows 3-9).
    agentmemory-sr has no unchecked add: its store is built with its normal add."""
    store = fresh_dir(store_of(size_dir, tool, "store"))
    n = len(data["memories"])
    r = setup.child(tool, "write", store, max(600.0, n * 0.5), memories=data["memories"], checked=False,
                    grade_ids=reps.grade_ids)
    r["unchecked"] = tool != "agentmemory-sr"
    return r


def measure_write_checked(setup: Setup, tool: str, size_dir: Path, data: dict, limit: int) -> dict:
    """Row 2: the first min(N, limit) adds with the tool's checks on, into a fresh store."""
    store = fresh_dir(store_of(size_dir, tool, "checked"))
    n = len(data["memories"])
    k = min(n, limit)
    try:
        r = setup.child(tool, "write", store, max(900.0, k * 2.0), memories=data["memories"][:k], checked=True)
    finally:
        shutil.rmtree(store, ignore_errors=True)
    r["measured"], r["n"] = k, n
    r["per_add_ms"] = statistics.fmean(r["ms"]) if r["ms"] else math.nan
    r["total_est_s"] = r["total_s"] * n / k if k else math.nan
    window = min(200, max(1, k // 2))
    r["first_ms"], r["last_ms"], r["window"] = statistics.fmean(r["ms"][:window]), \
        statistics.fmean(r["ms"][-window:]), window
    return r


def measure_write_bulk(setup: Setup, size_dir: Path, data: dict, limit: int) -> dict:
    """Rows 1c and 2c: vaultmem's `add_many` with the same memories as rows 1 and 2 (all N
    with checks off, the first min(N, limit) with them on), each into a fresh store."""
    out = {}
    n = len(data["memories"])
    for checked, k in ((False, n), (True, min(n, limit))):
        store = fresh_dir(store_of(size_dir, "vaultmem", "bulk"))
        try:
            r = setup.child("vaultmem", "write_bulk", store, max(900.0, k * 2.0), memories=data["memories"][:k],
                            checked=checked)
        finally:
            shutil.rmtree(store, ignore_errors=True)
        r["per_add_ms"], r["total_est_s"], r["measured"] = r["total_s"] / k * 1000, r["total_s"] * n / k, k
        out["checked" if checked else "plain"] = r
    return out


def measure_inproc_recall(setup: Setup, tool: str, size_dir: Path, data: dict) -> dict:
    """Rows 3 and 6: a long-lived API object, p50/p95 over the queries; the child's peak RSS."""
    n = len(data["memories"])
    r = setup.child(tool, "recall", store_of(size_dir, tool, "store"), max(900.0, n * 0.2),
                    queries=data["queries"], k=TOP_K)
    r["p50"], r["p95"] = pct(r["ms"], 50), pct(r["ms"], 95)
    return r


def recall_args(tool: str, store: Path, query: str) -> list[str]:
    if tool == "vaultmem":
        return ["recall", query, "--vault", str(store), "-k", str(TOP_K), "--json"]
    if tool == "skillmem":
        return ["--db", str(store / "memory.db"), "search", query, "--limit", str(TOP_K), "--format", "json"]
    return ["--db", str(store / "memory.db"), "search", query, "--top-k", str(TOP_K)]


def grade_args(tool: str, store: Path, note_id: str) -> list[str]:
    if tool == "vaultmem":
        return ["--vault", str(store), "grade", note_id, "good"]
    if tool == "skillmem":
        return ["--db", str(store / "memory.db"), "reinforce", note_id, "--evidence", "user_confirmed"]
    return ["--db", str(store / "memory.db"), "grade", note_id, "good"]


def add_args(tool: str, store: Path, text: str, namespace: str, i: int) -> list[str]:
    if tool == "vaultmem":
        return ["--vault", str(store), "add", text, "-n", namespace]
    if tool == "skillmem":
        return ["--db", str(store / "memory.db"), "write", "--slug", f"cli-{i:04d}", "--title", text,
                "--kind", "reference", "--project", namespace, "--body", ""]
    return ["--db", str(store / "memory.db"), "add", text, "-n", namespace]


def _cli_series(setup: Setup, tool: str, store: Path, argvs: list[list[str]], no_server: bool,
                refusal_rc: int | None = None) -> dict:
    """p50 wall ms of one subprocess per argv. A call that exits `refusal_rc` (the tool's way
    of refusing a near-duplicate) answered and is timed, and counted as refused; any other
    non-zero exit is a failure, left out of the p50."""
    runs = [setup.cli(tool, argv, store, no_server) for argv in argvs]
    refused = [r for r in runs if r["rc"] != 0 and r["rc"] == refusal_rc and not r["timed_out"]]
    failed = [r for r in runs if r["rc"] != 0 and r not in refused]
    ms = [r["wall"] * 1000 for r in runs if r["rc"] == 0] + [r["wall"] * 1000 for r in refused]
    return {"p50": pct(ms, 50) if ms else math.nan, "n": len(runs), "failed": len(failed),
            "refused": len(refused), "error": _last_line(failed[0]["stderr"]) if failed else None,
            "rss_mb": max(r["maxrss_mb"] for r in runs)}


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:200] if lines else "(no message)"


def measure_cli_recall(setup: Setup, tool: str, size_dir: Path, data: dict, no_server: bool = True) -> dict:
    """Row 4: the tool's CLI search, one subprocess per query (one untimed call first: page cache)."""
    store = store_of(size_dir, tool, "store")
    setup.cli(tool, recall_args(tool, store, data["cli_queries"][0]), store, no_server)
    return _cli_series(setup, tool, store, [recall_args(tool, store, q) for q in data["cli_queries"]], no_server)


def measure_cli_grade(setup: Setup, tool: str, size_dir: Path, ids: list[str], no_server: bool = True) -> dict:
    """Row 5: the tool's CLI grade / reinforce, one subprocess per call, distinct notes."""
    store = store_of(size_dir, tool, "store")
    return _cli_series(setup, tool, store, [grade_args(tool, store, i) for i in ids], no_server)


def measure_cli_add(setup: Setup, tool: str, size_dir: Path, adds: list, first: int, no_server: bool = True) -> dict:
    """Row 5: the tool's CLI add with its default checks, one subprocess per new memory."""
    store = store_of(size_dir, tool, "store")
    argvs = [add_args(tool, store, text, ns, first + j) for j, (text, ns) in enumerate(adds)]
    # `skillmem write` exits 2 when it refuses a near-duplicate
    return _cli_series(setup, tool, store, argvs, no_server, refusal_rc=2 if tool == "skillmem" else None)


def disk_usage(path: Path) -> float:
    """MB allocated on disk (st_blocks) under path."""
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                pass
    return total / 1e6


def measure_disk(tool: str, size_dir: Path) -> dict:
    """Row 7: vaultmem's .vaultmem/ and whole vault; a peer's whole store."""
    store = store_of(size_dir, tool, "store")
    out = {"whole_mb": disk_usage(store)}
    if tool == "vaultmem":
        out["state_mb"] = disk_usage(store / ".vaultmem")
    return out


def measure_decay(setup: Setup, size_dir: Path, timeout: float) -> dict:
    """Row 8: vault.decay() with the clock 60 days after the notes were written (on a copy);
    one that runs past `timeout` is reported as such."""
    src = store_of(size_dir, "vaultmem", "store")
    copy = store_of(size_dir, "vaultmem", "decay")
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(src, copy, symlinks=True)
    os.sync()  # the copy's pages on disk first: else decay's one filesystem sync flushes them too
    later = datetime.now(timezone.utc) + timedelta(days=DECAY_AFTER_DAYS)
    try:
        return setup.child("vaultmem", "decay", copy, timeout, now=later.strftime("%Y-%m-%dT%H:%M:%S"))
    except ChildTimeout:
        return {"timed_out": True, "s": math.nan, "timeout_s": timeout}
    finally:
        shutil.rmtree(copy, ignore_errors=True)


class Watcher:
    """`vaultmem watch --vault V` in the background, ready once a CLI recall is answered through it."""

    def __init__(self, setup: Setup, vault: Path, probe: str, timeout: float):
        self.log = open(setup.work / "watcher.log", "w+", encoding="utf-8")
        self.proc = subprocess.Popen([setup.bin("vaultmem"), "watch", "--vault", str(vault)],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=setup.env("vaultmem", vault, no_server=False), cwd=str(setup.work),
                                     start_new_session=True)
        t0 = time.perf_counter()
        self.ready_s = None
        while time.perf_counter() - t0 < timeout and self.proc.poll() is None:
            r = setup.cli("vaultmem", recall_args("vaultmem", vault, probe), vault, no_server=False)
            # a thin client (no model loaded) means the watcher answered
            if r["rc"] == 0 and r["maxrss_mb"] < FALLBACK_RSS_MB:
                self.ready_s = time.perf_counter() - t0
                return
            time.sleep(0.5)
        tail = self.tail()
        self.stop()
        raise RuntimeError(f"watcher not serving after {time.perf_counter() - t0:.0f}s: {tail}")

    def tail(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return " | ".join(self.log.read().strip().splitlines()[-5:])[:400]

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
        self.log.close()


def note_files(vault: Path, k: int, seed: int) -> list[tuple[Path, str]]:
    """k memory notes (path, id), the same ones every run."""
    paths = sorted((vault / "memories").rglob("*.md"))
    out = []
    for path in random.Random(seed).sample(paths, min(k, len(paths))):
        head = path.read_text(encoding="utf-8").split("\n---", 1)[0]
        ident = next((line.split(":", 1)[1].strip() for line in head.splitlines() if line.startswith("id:")), None)
        if ident:
            out.append((path, ident))
    return out


def measure_edit_recall(setup: Setup, vault: Path, edits: int, seed: int) -> dict:
    """Row 9: append a new word to a note's file; ms until `vaultmem recall WORD --json` (through
    the watcher, polled every 20 ms) returns that note; median over `edits` notes."""
    rng = random.Random(seed + 9)
    times = []
    for path, ident in note_files(vault, edits, seed):
        word = nonsense_word(rng)
        original = path.read_text(encoding="utf-8")
        try:
            path.write_text(original.rstrip("\n") + f" {word}\n", encoding="utf-8")
            t0 = time.perf_counter()
            found = math.nan
            while time.perf_counter() - t0 < 30.0:
                r = setup.cli("vaultmem", ["recall", word, "--vault", str(vault), "--json"], vault, no_server=False)
                try:
                    hits = json.loads(r["stdout"]) if r["rc"] == 0 else []
                except ValueError:
                    hits = []
                if any(isinstance(h, dict) and h.get("id") == ident for h in hits):
                    found = (time.perf_counter() - t0) * 1000
                    break
                time.sleep(POLL_S)
            times.append(found)
        finally:
            path.write_text(original, encoding="utf-8")
            time.sleep(1.0)  # let the watcher take the restore in before the next edit
    return {"ms": times, "median": statistics.median(times) if times else math.nan}


def measure_with_watcher(setup: Setup, size_dir: Path, data: dict, ids: list[str], reps: Reps, seed: int,
                         log) -> dict:
    """Rows 4, 5, 6 and 9 for vaultmem with `vaultmem watch` running."""
    vault = store_of(size_dir, "vaultmem", "store")
    n = len(data["memories"])
    try:
        w = Watcher(setup, vault, data["cli_queries"][0], timeout=max(180.0, n * 0.05))
    except RuntimeError as exc:
        log(str(exc))
        return {"error": str(exc)}
    try:
        log(f"watcher serving after {w.ready_s:.1f}s")
        out = {"ready_s": w.ready_s,
               "recall": measure_cli_recall(setup, "vaultmem", size_dir, data, no_server=False),
               "grade": measure_cli_grade(setup, "vaultmem", size_dir, ids[reps.cli_calls:], no_server=False),
               "add": measure_cli_add(setup, "vaultmem", size_dir, data["cli_adds"][reps.cli_calls:],
                                      reps.cli_calls, no_server=False),
               "edit": measure_edit_recall(setup, vault, reps.edits, seed)}
        out["rss_mb"] = w.peak_rss_mb()
        out["fell_back"] = out["recall"]["rss_mb"] >= FALLBACK_RSS_MB
        return out
    finally:
        w.stop()


# ================================================================ one size

STEPS = ("write", "checked", "bulk", "recall", "cli", "watcher")


def bench_size(setup: Setup, tools: list[str], size: int, args, reps: Reps) -> dict:
    """Every measure of one size. A tool that fails a step (a crash, a timeout) is left out of
    the later steps of this size; its error is reported under the table."""
    log = lambda msg: print(f"[{size}] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    size_dir = fresh_dir(setup.work / f"n{size}")
    data = make_data(size, args.seed, reps)
    res: dict = {"size": size, "tools": {t: {} for t in tools}, "failed": {}, "load_start": _loadavg()}

    def each_tool(step: str, measure, only: tuple[str, ...] = TOOLS) -> None:
        for tool in tools:
            if tool in res["failed"] or tool not in only:
                continue
            log(f"{tool}: {step} ...")
            try:
                measure(tool, res["tools"][tool])
            except (RuntimeError, OSError, ValueError, KeyError) as exc:
                res["failed"][tool] = f"{step}: {exc}"[:1500]
                log(f"{tool} FAILED at {step}: {str(exc)[-600:]}")

    def write_plain(tool, t):
        t["plain"] = measure_write_plain(setup, tool, size_dir, data, reps)
        log(f"{tool}: {t['plain']['total_s']:.1f}s, {t['plain']['outcomes']}")

    def write_checked(tool, t):
        t["checked"] = c = measure_write_checked(setup, tool, size_dir, data, args.checked_limit)
        log(f"{tool}: {c['per_add_ms']:.1f} ms/add (first {c['first_ms']:.1f}, last {c['last_ms']:.1f}), "
            f"{c['outcomes']}")

    def write_bulk(tool, t):
        try:
            t["bulk"] = b = measure_write_bulk(setup, size_dir, data, args.checked_limit)
        except RuntimeError as exc:  # an older vaultmem (--vaultmem-python) has no add_many: rows 1c/2c stay out
            log(f"vaultmem: no add_many ({str(exc).splitlines()[-1][:120] if str(exc) else '?'})")
            return
        log(f"vaultmem: add_many {b['plain']['per_add_ms']:.2f} ms/add unchecked, "
            f"{b['checked']['per_add_ms']:.2f} checked, {b['checked']['outcomes']}")

    def recall(tool, t):
        t["recall"] = r = measure_inproc_recall(setup, tool, size_dir, data)
        t["disk"] = measure_disk(tool, size_dir)
        log(f"{tool}: first {r['first_s']:.1f}s, p50 {r['p50']:.1f} ms, rss {r['child_rss_mb']:.0f} MB")

    def cli(tool, t):
        ids = t["plain"].get("grade_ids", [])
        t["cli_recall"] = measure_cli_recall(setup, tool, size_dir, data)
        t["cli_grade"] = measure_cli_grade(setup, tool, size_dir, ids[:reps.cli_calls])
        t["cli_add"] = measure_cli_add(setup, tool, size_dir, data["cli_adds"][:reps.cli_calls], 0)
        log(f"{tool}: recall {t['cli_recall']['p50']:.0f} ms, grade {t['cli_grade']['p50']:.0f} ms, "
            f"add {t['cli_add']['p50']:.0f} ms")

    def vaultmem_only(tool, t):
        t["watcher"] = measure_with_watcher(setup, size_dir, data, t["plain"].get("grade_ids", []), reps,
                                            args.seed, log)
        edit = (t["watcher"].get("edit") or {}).get("ms")
        log(f"vaultmem: with watcher: recall {_num((t['watcher'].get('recall') or {}).get('p50')):.0f} ms, "
            f"edit→recall {edit} ms; decay ...")
        t["decay"] = d = measure_decay(setup, size_dir, args.decay_timeout)
        log(f"vaultmem: decay did not finish in {args.decay_timeout:.0f}s" if d.get("timed_out") else
            f"vaultmem: decay {d['s']:.1f}s, {d['changed']} notes changed")

    steps = {"write": lambda: each_tool("write, checks off", write_plain),
             "checked": lambda: each_tool(f"write, checks on (first {min(size, args.checked_limit)})",
                                          write_checked),
             "bulk": lambda: each_tool("write in bulk (add_many)", write_bulk, only=("vaultmem",)),
             "recall": lambda: each_tool("in-process recall", recall),
             "cli": lambda: each_tool("CLI recall, grade, add", cli),
             "watcher": lambda: each_tool("watcher, decay", vaultmem_only, only=("vaultmem",))}
    for step, run in steps.items():
        if step in args.steps:
            run()
    if not args.keep:
        shutil.rmtree(size_dir, ignore_errors=True)
    res["load_end"] = _loadavg()
    for t in res["tools"].values():
        for key in ("plain", "checked"):
            if key in t:
                t[key].pop("grade_ids", None)
    return res


# ================================================================ output

def _num(x) -> float:
    return x if isinstance(x, (int, float)) and x == x else math.nan


def _fmt(x: float, unit: str = "") -> str:
    if x != x:
        return "n/a"
    if abs(x) >= 100:
        s = f"{x:,.0f}"
    elif abs(x) >= 10:
        s = f"{x:.1f}"
    else:
        s = f"{x:.2f}"
    return s + unit


class Row:
    """A measure: a label, and per tool (cell text, value compared for the ratio)."""

    def __init__(self, label: str):
        self.label = label
        self.cells: dict[str, tuple[str, float]] = {}

    def set(self, tool: str, text: str, value: float = math.nan) -> "Row":
        self.cells[tool] = (text, value)
        return self

    def ratio(self) -> str:
        vm = self.cells.get("vaultmem", ("", math.nan))[1]
        peers = [v for t, (_s, v) in self.cells.items() if t != "vaultmem" and v == v]
        if vm != vm or not peers or min(peers) <= 0:
            return "–"
        return f"×{vm / min(peers):.2f}"


def size_rows(res: dict, tools: list[str], checked_limit: int) -> list[Row]:
    """The table of one size; a measure a tool did not reach (it failed earlier) stays "–"."""
    T = res["tools"]
    n = res["size"]
    rows: list[Row] = []

    def having(key: str) -> list[str]:
        return [t for t in tools if key in T[t]]

    row = Row(f"1. write {n:,}, checks off: total s (ms/add)")
    for t in having("plain"):
        p = T[t]["plain"]
        if not p["unchecked"]:
            row.set(t, "n/a (always checks)")
        else:
            per = p["total_s"] / n * 1000
            row.set(t, f"{_fmt(p['total_s'])} s ({_fmt(per)})", per)
    rows.append(row)

    k = min(n, checked_limit)
    what = f"first {k:,} adds, total ×{n / k:.0f} extrapolated" if k < n else f"all {n:,} adds"
    row = Row(f"2. write {n:,}, checks on: total s (ms/add) [{what}]")
    growth = Row(f"2b. checks on: ms/add of the first / last {min(200, max(1, k // 2))} adds")
    for t in having("checked"):
        c = T[t]["checked"]
        est = "~" if k < n else ""
        row.set(t, f"{est}{_fmt(c['total_est_s'])} s ({_fmt(c['per_add_ms'])})", c["per_add_ms"])
        growth.set(t, f"{_fmt(c['first_ms'])} / {_fmt(c['last_ms'])}", c["last_ms"])
    rows += [row, growth]

    if "bulk" in T.get("vaultmem", {}):
        # vaultmem's batch API against the peers' own adds (rows 1 and 2: they have no batch API).
        b = T["vaultmem"]["bulk"]
        for label, key, mine in (("1c. write, checks off, vaultmem add_many (peers as row 1): total s (ms/add)",
                                  "plain", b["plain"]),
                                 (f"2c. write, checks on, vaultmem add_many (peers as row 2) [{what}]",
                                  "checked", b["checked"])):
            row = Row(label)
            est = "~" if mine["measured"] < n else ""
            row.set("vaultmem", f"{est}{_fmt(mine['total_est_s'])} s ({_fmt(mine['per_add_ms'])})",
                    mine["per_add_ms"])
            for t in having(key):
                if t == "vaultmem":
                    continue
                c = T[t][key]
                if key == "plain" and not c["unchecked"]:
                    row.set(t, "n/a (always checks)")
                    continue
                per = c["per_add_ms"] if key == "checked" else c["total_s"] / n * 1000
                total = c["total_est_s"] if key == "checked" else c["total_s"]
                row.set(t, f"{_fmt(total)} s ({_fmt(per)})", per)
            rows.append(row)

    row = Row("3. in-process recall p50 / p95 ms (k=5)")
    first = Row("3b. first query on a fresh process, ms (builds indexes)")
    for t in having("recall"):
        r = T[t]["recall"]
        row.set(t, f"{_fmt(r['p50'])} / {_fmt(r['p95'])}", r["p50"])
        first.set(t, _fmt(r["first_s"] * 1000), r["first_s"] * 1000)
    rows += [row, first]

    def cell(c: dict) -> str:
        notes = [f"{c[k]} {k}" for k in ("refused", "failed") if c.get(k)]
        return _fmt(c["p50"]) + (f" ({', '.join(notes)} of {c['n']})" if notes else "")

    def cli_rows(label: str, watcher_label: str, key: str) -> list[Row]:
        plain = Row(label)
        for t in having(key):
            plain.set(t, cell(T[t][key]), T[t][key]["p50"])
        w = T.get("vaultmem", {}).get("watcher")
        if w is None:
            return [plain]
        with_w = Row(watcher_label)
        c = w.get(key.removeprefix("cli_")) if "error" not in w else None
        with_w.set("vaultmem", cell(c) if c else "n/a (watcher failed)", c["p50"] if c else math.nan)
        for t in having(key):  # the peers have no watcher: their one number again, for the ratio
            if t != "vaultmem":
                with_w.set(t, "(same)", plain.cells[t][1])
        return [plain, with_w]

    rows += cli_rows("4. CLI recall p50 ms (vaultmem: no watcher)", "4b. CLI recall p50 ms, vaultmem with watcher",
                     "cli_recall")
    rows += cli_rows("5. CLI grade p50 ms (vaultmem: no watcher)", "5b. CLI grade p50 ms, vaultmem with watcher",
                     "cli_grade")
    rows += cli_rows("5c. CLI add p50 ms (vaultmem: no watcher)", "5d. CLI add p50 ms, vaultmem with watcher",
                     "cli_add")

    row = Row("6. peak RSS MB: in-process recall child")
    for t in having("recall"):
        row.set(t, _fmt(T[t]["recall"]["child_rss_mb"]), T[t]["recall"]["child_rss_mb"])
    wrow = Row("6b. peak RSS MB: checks-on write child")
    for t in having("checked"):
        wrow.set(t, _fmt(T[t]["checked"]["child_rss_mb"]), T[t]["checked"]["child_rss_mb"])
    rows += [row, wrow]
    bulk = (T.get("vaultmem", {}).get("bulk") or {}).get("checked") or {}
    if bulk.get("self_rss_mb") is not None:
        helper = bulk.get("helper_rss_mb")
        rows.append(Row("6d. peak RSS MB: checks-on add_many child + its embedding process").set(
            "vaultmem", f"{_fmt(bulk['self_rss_mb'])} + {_fmt(helper) if helper is not None else 'none'}"))
    vm = T.get("vaultmem", {})
    w = vm.get("watcher") or {}
    if "vaultmem" in tools:
        rows.append(Row("6c. peak RSS MB: vaultmem watcher (VmHWM)").set("vaultmem", _fmt(_num(w.get("rss_mb")))))

    row = Row("7. on disk MB: whole store")
    for t in having("disk"):
        row.set(t, _fmt(T[t]["disk"]["whole_mb"]), T[t]["disk"]["whole_mb"])
    rows.append(row)
    if "vaultmem" in tools:
        rows.append(Row("7b. on disk MB: vaultmem .vaultmem/ (all but the notes)")
                    .set("vaultmem", _fmt(_num((vm.get("disk") or {}).get("state_mb")))))
        d = vm.get("decay") or {}
        if d.get("timed_out"):
            decay = f"> {d['timeout_s']:g} (killed at --decay-timeout)"
        else:
            decay = f"{_fmt(_num(d.get('s')))} ({d.get('changed', '?')} notes changed)" if d else "n/a"
        rows.append(Row(f"8. vault.decay() {DECAY_AFTER_DAYS} days later, s").set("vaultmem", decay))
        edit = w.get("edit") or {}
        rows.append(Row("9. edit → recall through the watcher, ms (median)").set(
            "vaultmem", _fmt(_num(edit.get("median")))
            + (f" ({', '.join(_fmt(x) for x in edit['ms'])})" if edit.get("ms") else "")))
    return rows


def render_table(rows: list[Row], tools: list[str]) -> str:
    head = ["measure", *tools, "vaultmem / best peer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row.label] + [row.cells.get(t, ("–", math.nan))[0] for t in tools] + [row.ratio()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes_for_size(res: dict, tools: list[str]) -> list[str]:
    """What each tool's checks did, failures, and anything odd."""
    T = res["tools"]
    out = []
    for t in tools:
        bits = []
        if t in res["failed"]:
            step, _, why = res["failed"][t].partition(": ")
            bits.append(f"FAILED at {step}: {_last_line(why)}")
        c = T[t].get("checked") or {}
        if c:
            bits.append(f"checks-on outcomes {c['outcomes']}")
        if t == "agentmemory-sr" and c:
            bits.append(f"{c.get('demoted', 0)} older memories demoted")
            if c.get("lookups_sampled"):
                bits.append(f"its duplicate lookup found nothing, not even the memory itself, for "
                            f"{c['lookups_failing']} of {c['lookups_sampled']} stored memories")
        for key in ("plain", "checked"):
            if (T[t].get(key) or {}).get("errors"):
                bits.append(f"{key} errors: {T[t][key]['errors'][0]}")
        r = T[t].get("recall") or {}
        if r.get("empty"):
            bits.append(f"{r['empty']} of {len(r['ms'])} in-process queries returned nothing")
        for key in ("cli_recall", "cli_grade", "cli_add"):
            if (T[t].get(key) or {}).get("error"):
                bits.append(f"{key}: {T[t][key]['failed']} failed, e.g. {T[t][key]['error']}")
        if bits:
            out.append(f"- {t}: " + "; ".join(bits))
    w = T.get("vaultmem", {}).get("watcher")
    if w:
        if "error" in w:
            out.append(f"- vaultmem watcher: {w['error']}")
        else:
            out.append(f"- vaultmem watcher: serving after {w['ready_s']:.1f}s; recall client peak RSS "
                       f"{w['recall']['rss_mb']:.0f} MB" + (" (fell back to in-process)" if w["fell_back"] else ""))
    return out


def scaling_table(results: list[dict]) -> str:
    head = ["notes", "ms/add checks off", "ms/add checks on (first / last 200)", "in-proc recall p50 / p95 ms",
            "first query s", "CLI recall p50 ms no watcher / watcher", "decay s", "edit→recall ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    nan = math.nan
    for res in results:
        vm = res["tools"].get("vaultmem")
        if vm is None:
            continue
        n = res["size"]
        p, c, r = vm.get("plain") or {}, vm.get("checked") or {}, vm.get("recall") or {}
        w = vm.get("watcher") or {}
        lines.append("| " + " | ".join([
            f"{n:,}", _fmt(_num(p.get("total_s", nan)) / n * 1000),
            f"{_fmt(_num(c.get('per_add_ms')))} ({_fmt(_num(c.get('first_ms')))} / {_fmt(_num(c.get('last_ms')))})",
            f"{_fmt(_num(r.get('p50')))} / {_fmt(_num(r.get('p95')))}", _fmt(_num(r.get("first_s"))),
            f"{_fmt(_num((vm.get('cli_recall') or {}).get('p50')))} / {_fmt(_num((w.get('recall') or {}).get('p50')))}",
            (f"> {vm['decay']['timeout_s']:g}" if (vm.get("decay") or {}).get("timed_out")
             else _fmt(_num((vm.get("decay") or {}).get("s")))),
            _fmt(_num((w.get("edit") or {}).get("median"))),
        ]) + " |")
    return "\n".join(lines)


def _loadavg() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _git_rev(module_file: str | None) -> str:
    if not module_file:
        return "?"
    try:
        p = subprocess.run(["git", "-C", str(Path(module_file).parent), "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=10)
        return p.stdout.strip() or "not a git checkout"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def machine_facts(setup: Setup, started: str) -> list[str]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = f"{int(Path('/proc/meminfo').read_text().split()[1]) / 1024 / 1024:.1f} GB"
    except (OSError, ValueError, IndexError):
        mem = "?"
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines = [f"- cores: {os.cpu_count()} ({usable} usable), CPU: {cpu}, RAM: {mem}",
             f"- {platform.platform()}; bench driver: python {platform.python_version()}",
             f"- load average at start / end: {started} / {_loadavg()} (anything else running skews the timings)"]
    for tool in TOOLS:
        info = setup.info.get(tool)
        if info is None:
            continue
        if "error" in info:
            lines.append(f"- {tool}: cannot be imported by {setup.python[tool]} ({info['error']})")
            continue
        where = info["module_file"] or "?"
        extra = f", checkout {_git_rev(where)}" if tool == "vaultmem" else ""
        lines.append(f"- {tool} {info['version']} (python {info['python']}, {info['executable']}; "
                     f"imported from {Path(where).parent}{extra})")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", help="comma-separated numbers of memories (default: 1000,10000; --quick: 300)")
    p.add_argument("--quick", action="store_true", help="a smoke run: few repetitions, 300 memories unless --sizes")
    p.add_argument("--peers-python", help="interpreter with skillmem and agentmemory-sr installed "
                                          "(default: this one)")
    p.add_argument("--vaultmem-python", help="interpreter whose installed vaultmem is measured (default: this one)")
    p.add_argument("--tools", default=",".join(TOOLS), help="which of %(default)s to measure")
    p.add_argument("--steps", type=lambda v: v.split(","), default=list(STEPS),
                   help=f"which of {','.join(STEPS)} to run (default: all; recall, cli and watcher need write: "
                        "it makes their store)")
    p.add_argument("--checked-limit", type=int, default=10000,
                   help="measure at most this many checks-on adds per tool and extrapolate (default %(default)s)")
    p.add_argument("--decay-timeout", type=float, default=180.0,
                   help="seconds vault.decay() may run before it is killed and reported as slower "
                        "(default %(default)s)")
    p.add_argument("--seed", type=int, default=20260105)
    p.add_argument("--work-dir", default=str(WORK_DIR), help="stores go here (deleted after each size)")
    p.add_argument("--keep", action="store_true", help="keep the stores")
    p.add_argument("--json-out", help="also write the raw measurements here")
    args = p.parse_args(argv)
    if set(args.steps) - set(STEPS):
        p.error(f"--steps: unknown {','.join(sorted(set(args.steps) - set(STEPS)))}; choose from {','.join(STEPS)}")

    started = _loadavg()
    sizes = [int(s.replace("_", "")) for s in (args.sizes or ("300" if args.quick else "1000,10000")).split(",")
             if s.strip()]
    reps = Reps(args.quick)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    setup = Setup(args, work)
    wanted = [t for t in TOOLS if t in args.tools.split(",")]
    tools = discover_tools(setup, wanted)
    if "vaultmem" in tools and setup.info["vaultmem"]["module_file"] and args.vaultmem_python \
            and Path(setup.info["vaultmem"]["module_file"]).resolve().is_relative_to(ROOT / "vaultmem"):
        print(f"note: {args.vaultmem_python} imports vaultmem from this checkout", file=sys.stderr)
    if not tools:
        for tool, info in setup.info.items():
            print(f"{tool} ({setup.python[tool]}): {info.get('error')}", file=sys.stderr)
        print("no tool could be imported; see --peers-python / --vaultmem-python", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    results = [bench_size(setup, tools, size, args, reps) for size in sizes]

    print("## vaultmem and its peers\n")
    print("\n".join(machine_facts(setup, started)))
    print(f"- seed {args.seed}; {reps.inproc_queries} in-process queries, {reps.cli_queries} CLI queries, "
          f"{reps.cli_calls} CLI grades and adds per mode; k={TOP_K}; checks-on adds measured: "
          f"first min(N, {args.checked_limit}); whole run {time.perf_counter() - t0:.0f}s")
    print("- skillmem without its optional `semantic` extra (the model is a download): BM25 only; "
          "agentmemory-sr is FTS5 only; vaultmem is BM25 + embeddings")
    print("- ratio: vaultmem / the best peer with that measure (< 1: vaultmem is faster or smaller)")
    for res in results:
        print(f"\n### {res['size']:,} memories\n")
        print(f"load average before / after this size: {res['load_start']} / {res['load_end']}\n")
        print(render_table(size_rows(res, tools, args.checked_limit), tools))
        print()
        print("\n".join(notes_for_size(res, tools)))
    if "vaultmem" in tools:
        print("\n### vaultmem across sizes\n")
        print(scaling_table(results))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"info": setup.info, "results": results}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
