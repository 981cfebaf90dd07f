"""What an agent and a person wait for: vaultmem's commands and Claude Code hooks, end to end.

    python bench/agent_perf.py                          # 1,000 notes, 20 repetitions
    python bench/agent_perf.py --sizes 1000,10000       # chosen sizes
    python bench/agent_perf.py --quick                  # 200 notes, 5 repetitions, no CLI warm-ups
    python bench/agent_perf.py --json agent_perf.json   # also the raw timings

Every figure is the wall clock of a real process, as the agent feels it: from
spawning `vaultmem ...` (or `python -m vaultmem hook EVENT` with the JSON
Claude Code sends on stdin) to its exit, Python's start-up and imports
included. Two rows are in-process (`Vault.add` in a long-lived process, the
model already loaded) for comparison; beside it, the process's own CPU time
(all its threads: what it takes from the agent and the editor on a small
machine). p50 / p95 are over N repetitions
(`--reps`, default 20; a quarter of that, at least 2, for the slow rows: stop,
verify, health), each with its own input (new texts, other ids, other prompts),
after one warm-up run per row that is not counted (--quick, a smoke run: for
the hook rows only). Child processes compile bytecode into a cache in the
temp dir (PYTHONPYCACHEPREFIX; a PYTHONDONTWRITEBYTECODE in the environment
is dropped for them), as an installed package has it, without writing into
the checkout.

For each size a synthetic vault is generated in a temp dir with
bench/recall_perf.py's generator (same seed: the same notes), its indexes are
built, and `verify` records the generated notes on the ledger once, so
`verify --strict` starts from a clean vault. The embeddings of recall_perf's
cached vault of the same size and seed (/tmp/vaultmem-bench/<size>-s<seed>)
are copied when they exist and a sample of them matches the model (they are
keyed by the note text's hash: the same vectors a build would compute); that
only shortens the set-up. The temp dir is removed at the end.

Rows "no watcher" run with VAULTMEM_NO_SERVER=1 and no watcher running. Rows
"+ watcher" run while `vaultmem watch --vault V` (started here, ready at
"serving recall", SIGTERM after) serves the vault: `add` asks it for similar
memories, the prompt hook and `recall` ask it to recall; a pause of
SETTLE_S separates their repetitions so the watcher's re-index of the last
write does not land in the next measurement. Hooks find the vault through
VAULTMEM_VAULT and run in a project folder (the payload's `cwd`).
PreToolUse's matcher is Bash, so its process starts for every Bash call:
it is measured on a `vaultmem recall` command and on any other. Stop runs
after every turn: it is measured on a new ~200-message transcript (three
"remember that" lines to capture) and again on the same one (nothing new).

The hook rows count what the hook answered (context for user-prompt-submit
and session-start) and the lines it wrote to `.vaultmem/hooks/hooks.log`
("gave up" past its budget, "failed"): a hook that fails open is fast and
useless, so a row with failures is marked. The budget column is the hook's
own time budget and Claude Code's timeout for it (claude_code.HOOKS).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
for _p in (str(ROOT), str(BENCH)):
    if _p not in sys.path:  # run from a checkout without `pip install -e .`
        sys.path.insert(0, _p)

import recall_perf as rp  # noqa: E402  (synthetic vaults, measured child processes, the watcher)

DEFAULT_SIZES = "1000"
DEFAULT_REPS = 20
QUICK_SIZES = "200"
QUICK_REPS = 5
SETTLE_S = 0.5            # pause between repetitions while the watcher runs
TIMEOUT_S = 300.0         # any one measured process
TRANSCRIPT_MESSAGES = 200
CAPTURES_PER_TRANSCRIPT = 3
CAPTURE_NAMESPACE = "work/infra"  # where the stop hook's captures go: a namespace with notes in it
PROJECT = "shop-api"      # the folder Claude Code runs in (the hooks' cwd)
VECTOR_SAMPLE = 8         # cached embeddings checked against the model before reuse

# key, label, hook name (for its budget) or None, slow (fewer repetitions)
ROWS = [
    ("add_cli", "`vaultmem add` CLI, contradiction check, no watcher", None, False),
    ("add_cli_watch", "`vaultmem add` CLI, contradiction check, + watcher", None, False),
    ("add_inproc_check", "`Vault.add` in-process, contradiction check", None, False),
    ("add_inproc_nocheck", "`Vault.add` in-process, `supersede=False, merge=False`", None, False),
    ("grade_cli", "`vaultmem grade ID good` CLI", None, False),
    ("recall_cli_watch", "`vaultmem recall` CLI + watcher (reference)", None, False),
    ("hook_ups", "hook user-prompt-submit, no watcher", "user-prompt-submit", False),
    ("hook_ups_watch", "hook user-prompt-submit, + watcher", "user-prompt-submit", False),
    ("hook_session_start", "hook session-start", "session-start", False),
    ("session_start_chars", "session-start additionalContext, characters", None, False),
    ("hook_pre_tool", "hook pre-tool-use, Bash `vaultmem recall ...`", "pre-tool-use", False),
    ("hook_pre_tool_other", "hook pre-tool-use, any other Bash command", "pre-tool-use", False),
    ("hook_stop", f"hook stop, {TRANSCRIPT_MESSAGES}-message transcript, {CAPTURES_PER_TRANSCRIPT} remember-that lines",
     "stop", True),
    ("hook_stop_again", "hook stop, same transcript again (nothing new)", "stop", True),
    ("verify_strict", "`vaultmem verify --strict` CLI", None, True),
    ("health", "`vaultmem health` CLI", None, True),
]
ROW_KEYS = [r[0] for r in ROWS]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ================================================================ inputs

def add_texts(seed: int, n: int) -> list[tuple[str, str]]:
    """(text, namespace) pairs in the style of the vault's notes, so the contradiction check has neighbours."""
    gen = rp.TextGen(seed)
    rng = random.Random(seed + 1)
    out = []
    for i in range(n):
        text = gen.sentence()
        if text in rp.HOME:  # a fixed sentence: vary it so each add writes a new note
            text = text.rstrip(".") + f" (checked {i + 1} times)."
        out.append((text, rng.choice(rp.NAMESPACES)))
    return out


def prompt_texts(seed: int, n: int) -> list[str]:
    """What a person types into Claude Code: a question with a request around it."""
    rng = random.Random(seed + 2)
    frames = ["{q}? Check before you change anything.", "Quick one: {q}", "Before the deploy, {q}?",
              "{q} — I need it for the incident notes.", "Can you find out {q} and update the README?"]
    return [rng.choice(frames).format(q=q) for q in rp.queries(seed, n)[:n]]


def note_ids(root: Path, n: int, seed: int) -> list[str]:
    """n distinct ids of active memories in the vault (read from the notes' `id:` lines)."""
    paths = sorted(p for p in (root / "memories").rglob("*.md"))
    rng = random.Random(seed + 4)
    rng.shuffle(paths)
    ids = []
    for path in paths:
        head = path.read_text(encoding="utf-8").split("\n---", 1)[0]
        if "\nstatus: active\n" in head:
            ids += [line[4:].strip() for line in head.splitlines() if line.startswith("id: ")][:1]
        if len(ids) == n:
            break
    return ids


def transcript(path: Path, rep: int, seed: int) -> list[str]:
    """A Claude Code transcript of ~TRANSCRIPT_MESSAGES entries: turns of prompt, tool call, tool
    result, answer; CAPTURES_PER_TRANSCRIPT prompts ask to remember a fact. Returns the facts.

    What people and the assistant say otherwise is made-up words (the generator's filler), so
    no other capture rule fires and every run captures exactly its facts; tool results hold
    note-like sentences (capture skips tool output)."""
    rng = random.Random(seed * 1000 + rep)
    gen = rp.TextGen(seed + 31 * rep)
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    cwd = str(path.parent / PROJECT)
    n_turns = TRANSCRIPT_MESSAGES // 4
    remember_at = set(rng.sample(range(1, n_turns), CAPTURES_PER_TRANSCRIPT))
    facts: list[str] = []
    lines: list[dict] = [{"type": "summary", "summary": "Working on the shop API", "leafUuid": "x"}]
    parent = None

    def entry(kind: str, message: dict, **extra) -> dict:
        nonlocal parent
        me = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        e = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid,
             "version": "2.0.0", "type": kind, "message": message, "uuid": me,
             "timestamp": f"2026-01-05T09:{len(lines) // 60:02d}:{len(lines) % 60:02d}Z", **extra}
        parent = me
        return e

    for turn in range(n_turns):
        if turn in remember_at:
            svc, env = rng.choice(rp.SERVICES), rng.choice(rp.ENVS)
            fact = f"the {svc} service in {env} listens on port {rng.randint(1024, 65000)}"
            facts.append(fact)
            prompt = f"Please remember that {fact}. Then run the tests again."
        else:
            prompt = gen.filler(rng.randint(8, 30))
        lines.append(entry("user", {"role": "user", "content": prompt}))
        tool_id = f"toolu_{rng.getrandbits(64):016x}"
        lines.append(entry("assistant", {"role": "assistant", "model": "claude", "content": [
            {"type": "text", "text": gen.filler(rng.randint(5, 20))},
            {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "pytest -q tests/"}}]}))
        output = "\n".join(gen.body(10, 40) for _ in range(3))
        lines.append(entry("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": output}]}))
        lines.append(entry("assistant", {"role": "assistant", "model": "claude", "content": [
            {"type": "text", "text": gen.filler(rng.randint(20, 60))}]}))
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    return facts


def payload(event: str, work: Path, session: str, **fields) -> bytes:
    data = {"session_id": session, "transcript_path": str(work / f"{session}.jsonl"),
            "cwd": str(work / PROJECT), "permission_mode": "default", "hook_event_name": event, **fields}
    return json.dumps(data).encode("utf-8")


# ================================================================ processes

class Bench:
    """One size: the vault, its work folder, and the measured runs."""

    def __init__(self, size: int, reps: int, seed: int, work: Path, pycache: Path, cli_warmup: int = 1):
        self.size, self.reps, self.seed, self.work, self.pycache = size, reps, seed, work, pycache
        self.cli_warmup = cli_warmup  # 1, or 0 (--quick): the CLI rows' uncounted first run; hooks keep theirs
        self.root = work / "vault"
        self.row: dict = {"size": size, "rows": {}, "notes": []}
        (work / PROJECT / ".git").mkdir(parents=True)  # the project the agent works in
        (work / "xdg").mkdir()

    def n(self, key: str) -> int:
        """Measured repetitions of a row (one more run before them is a warm-up)."""
        slow = next(r[3] for r in ROWS if r[0] == key)
        return max(2, math.ceil(self.reps / 4)) if slow else self.reps

    def env(self, no_server: bool, **extra) -> dict:
        env = rp._env(no_server)
        for name in list(env):
            if name in ("VAULTMEM_NOW", "VAULTMEM_HOOK_BUDGET", "VAULTMEM_HOOKS", "VAULTMEM_NAMESPACE",
                        "VAULTMEM_SESSION", "PYTHONDONTWRITEBYTECODE") or name.startswith("VAULTMEM_HOOK_"):
                env.pop(name)  # a pinned clock, a switched-off hook or no bytecode would skew what is felt
        # Compiled bytecode as an installed package has it, kept in the temp dir (the checkout is untouched).
        env.update({"XDG_DATA_HOME": str(self.work / "xdg"), "VAULTMEM_PROJECT": PROJECT,
                    "PYTHONPYCACHEPREFIX": str(self.pycache)}, **extra)
        return env

    def cli(self, args: list[str], no_server: bool) -> dict:
        return rp.run_measured([rp.vaultmem_bin(), *args, "--vault", str(self.root)], TIMEOUT_S,
                               self.env(no_server), cwd=self.work / PROJECT)

    def hook(self, event: str, data: bytes, no_server: bool, **env) -> dict:
        return rp.run_measured([sys.executable, "-m", "vaultmem", "hook", event], TIMEOUT_S,
                               self.env(no_server, VAULTMEM_VAULT=str(self.root), **env), stdin=data,
                               cwd=self.work / PROJECT)

    def series(self, run, inputs: list, settle: float = 0.0) -> list[dict]:
        """run(x) for each input; the first cli_warmup runs are a warm-up (bytecode, page cache), not returned."""
        runs = []
        for x in inputs:
            runs.append(run(x))
            time.sleep(settle)
        return runs[self.cli_warmup:]

    def hook_log(self) -> list[str]:
        path = self.root / ".vaultmem" / "hooks" / "hooks.log"
        try:
            return path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []

    def record(self, key: str, runs: list[dict], ok=lambda r: r["rc"] == 0, **extra) -> dict:
        bad = [r for r in runs if not ok(r)]
        res = {"ms": [r["wall"] * 1000 for r in runs], "rss_mb": max((r["maxrss_mb"] for r in runs), default=None),
               "cpu_ms": [r["cpu"] * 1000 for r in runs],
               "failed": len(bad), **extra}
        if bad:
            res["failure"] = f"rc={bad[0]['rc']} timed_out={bad[0]['timed_out']}: " \
                             f"{(bad[0]['stderr'] or bad[0]['stdout'])[-300:].strip()}"
        self.row["rows"][key] = res
        log(f"[{self.size}] {key}: p50 {rp.pct(res['ms'], 50):.0f} ms, p95 {rp.pct(res['ms'], 95):.0f} ms"
            + (f", {len(bad)} failed: {res['failure']}" if bad else ""))
        return res

    def cli_row(self, key: str, argvs: list[list[str]], no_server: bool, settle: float = 0.0, **extra) -> dict:
        runs = self.series(lambda args: self.cli(args, no_server), argvs, settle)
        return self.record(key, runs, **extra)

    def hook_row(self, key: str, event: str, inputs: list[bytes], no_server: bool, answered=None,
                 settle: float = 0.0, after_warmup=None, **env) -> tuple[dict, list[dict]]:
        """One hook per input (the first a warm-up), with what it answered and logged."""
        self.hook(event, inputs[0], no_server, **env)
        time.sleep(settle)
        if after_warmup:
            after_warmup()
        before = len(self.hook_log())
        runs = []
        for data in inputs[1:]:
            runs.append(self.hook(event, data, no_server, **env))
            time.sleep(settle)
        new_log = self.hook_log()[before:]
        extra = {"log_lines": new_log[-5:], "gave_up": sum("gave up" in x for x in new_log),
                 "hook_failed": sum(": failed after" in x for x in new_log)}
        if answered is not None:
            extra["answered"] = sum(bool(answered(r)) for r in runs)
        return self.record(key, runs, ok=lambda r: r["rc"] == 0 and not r["timed_out"], **extra), runs

    # ------------------------------------------------------------ set-up

    def build(self) -> None:
        t0 = time.perf_counter()
        rp.generate_vault(self.root, self.size, self.seed)
        self.row["generate_s"] = time.perf_counter() - t0
        out = self.work / "build.json"
        r = rp.run_measured([sys.executable, __file__, "--_build", str(self.root), "--seed", str(self.seed),
                             "--_out", str(out)], max(900.0, self.size * 0.2), self.env(True), cwd=self.work)
        if r["rc"] != 0:
            raise RuntimeError(f"building the indexes failed rc={r['rc']}: {r['stderr'][-800:]}")
        self.row["build"] = json.loads(out.read_text())
        self.row["build"]["wall_s"] = r["wall"]
        log(f"[{self.size}] vault built: {self.row['build']}")

    # ------------------------------------------------------------ the rows

    def run_all(self) -> dict:
        self.build()
        self.inproc()
        self.without_watcher()
        self.with_watcher()
        return self.row

    def inproc(self) -> None:
        out = self.work / "inproc.json"
        r = rp.run_measured([sys.executable, __file__, "--_inproc", str(self.root), "--seed", str(self.seed),
                             "--reps", str(self.reps), "--_out", str(out)], TIMEOUT_S * 4, self.env(True),
                            cwd=self.work / PROJECT)
        if r["rc"] != 0:
            raise RuntimeError(f"in-process child failed rc={r['rc']}: {r['stderr'][-800:]}")
        res = json.loads(out.read_text())
        for key in ("add_inproc_check", "add_inproc_nocheck"):
            self.row["rows"][key] = {"ms": res[key], "rss_mb": r["maxrss_mb"], "failed": 0,
                                     "actions": res["actions"].get(key)}
            log(f"[{self.size}] {key}: p50 {rp.pct(res[key], 50):.1f} ms")
        self.row["first_add_s"] = res["first_add_s"]

    def without_watcher(self) -> None:
        seed = self.seed
        texts = add_texts(seed + 100, self.n("add_cli") + self.cli_warmup)
        runs = self.series(lambda t: self.cli(["add", t[0], "-n", t[1], "--json"], True), texts)
        self.record("add_cli", runs, actions=_actions(runs))

        ids = note_ids(self.root, self.n("grade_cli") + self.cli_warmup, seed)
        self.cli_row("grade_cli", [["grade", i, "good", "--json"] for i in ids], True)

        prompts = prompt_texts(seed + 200, self.n("hook_ups") + 1)
        inputs = [payload("UserPromptSubmit", self.work, f"ups-{i}", prompt=p) for i, p in enumerate(prompts)]
        self.hook_row("hook_ups", "user-prompt-submit", inputs, True, answered=_context)

        inputs = [payload("SessionStart", self.work, f"start-{i}", source="startup")
                  for i in range(self.n("hook_session_start") + 1)]
        _res, runs = self.hook_row("hook_session_start", "session-start", inputs, True, answered=_context)
        self.row["rows"]["session_start_chars"] = {"chars": [len(_context(r) or "") for r in runs]}

        k = self.n("hook_pre_tool") + 1
        inputs = [payload("PreToolUse", self.work, f"tool-{i}", tool_name="Bash",
                          tool_input={"command": f'vaultmem recall "{q}" -k 5 --json', "description": "recall"},
                          tool_use_id=f"toolu_{i:04d}") for i, q in enumerate(rp.queries(seed + 300, k)[:k])]
        res, runs = self.hook_row("hook_pre_tool", "pre-tool-use", inputs, True)
        res["denied"] = sum('"deny"' in r["stdout"] for r in runs)  # a correct command is allowed: no output

        # The matcher is Bash: every Bash call the agent makes starts this process, vaultmem or not.
        commands = ["pytest -q tests/", "git status --short", "ls -la src", "npm run build", "grep -rn TODO ."]
        inputs = [payload("PreToolUse", self.work, f"other-{i}", tool_name="Bash",
                          tool_input={"command": commands[i % len(commands)], "description": "run"},
                          tool_use_id=f"toolu_o{i:04d}") for i in range(self.n("hook_pre_tool_other") + 1)]
        res, runs = self.hook_row("hook_pre_tool_other", "pre-tool-use", inputs, True)
        res["denied"] = sum('"deny"' in r["stdout"] for r in runs)

        inputs, facts = [], 0
        for i in range(self.n("hook_stop") + 1):
            session = f"stop-{i}"
            found = len(transcript(self.work / f"{session}.jsonl", i, seed))
            facts += found if i else 0  # the first is the warm-up
            inputs.append(payload("Stop", self.work, session, stop_hook_active=False))
        folder = self.root / "memories" / CAPTURE_NAMESPACE
        counts: list[int] = []
        count = lambda: counts.append(len(list(folder.glob("*.md"))))  # noqa: E731
        res, _runs = self.hook_row("hook_stop", "stop", inputs, True, after_warmup=count,
                                   VAULTMEM_NAMESPACE=CAPTURE_NAMESPACE)
        count()
        res["captured"], res["facts"] = counts[1] - counts[0], facts
        # Stop runs after every turn; a run with no new transcript lines is the floor of that cost.
        res, _runs = self.hook_row("hook_stop_again", "stop", inputs, True, VAULTMEM_NAMESPACE=CAPTURE_NAMESPACE)
        count()
        res["captured"] = counts[2] - counts[1]

        self.cli_row("verify_strict", [["verify", "--strict", "--json"]] * (self.n("verify_strict") + self.cli_warmup),
                     True)
        self.cli_row("health", [["health", "--json"]] * (self.n("health") + self.cli_warmup), True)

    def with_watcher(self) -> None:
        seed = self.seed
        if not rp.watcher_available():
            self.row["notes"].append("watcher not available: + watcher rows not run")
            return
        log(f"[{self.size}] starting the watcher ...")
        w = rp.Watcher(self.root, ready_timeout=max(120.0, self.size * 0.05), env=self.env(False))
        self.row["watcher_ready_s"] = w.ready_after
        try:
            k = self.n("recall_cli_watch") + self.cli_warmup
            self.cli_row("recall_cli_watch", [["recall", q, "--json"] for q in rp.queries(seed + 500, k)[:k]],
                         False, settle=SETTLE_S)

            texts = add_texts(seed + 600, self.n("add_cli_watch") + self.cli_warmup)
            runs = self.series(lambda t: self.cli(["add", t[0], "-n", t[1], "--json"], False), texts, SETTLE_S)
            self.record("add_cli_watch", runs, actions=_actions(runs))

            prompts = prompt_texts(seed + 700, self.n("hook_ups_watch") + 1)
            inputs = [payload("UserPromptSubmit", self.work, f"upsw-{i}", prompt=p) for i, p in enumerate(prompts)]
            self.hook_row("hook_ups_watch", "user-prompt-submit", inputs, False, answered=_context, settle=SETTLE_S)
            self.row["watcher_rss_mb"] = w.peak_rss_mb()
        finally:
            w.stop()
            self.row["watcher_log_tail"] = (w.lines + w.err_lines)[-10:]


def _context(run: dict) -> str | None:
    """The additionalContext a hook printed, or None."""
    try:
        return json.loads(run["stdout"])["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        return None


def _actions(runs: list[dict]) -> dict:
    """What the adds did: added / recurrence, and how many superseded or contested an older memory."""
    out: dict = {}
    for r in runs:
        try:
            data = json.loads(r["stdout"])
        except ValueError:
            continue
        action = data.get("action", "?")
        out[action] = out.get(action, 0) + 1
        for k in ("superseded", "contested"):
            if data.get(k):
                out[k] = out.get(k, 0) + 1
    return out


# ================================================================ children

def build_child(root: Path, seed: int) -> dict:
    """Indexes for the fresh vault (reusing recall_perf's cached embeddings when they are real), then
    one `verify` that puts the generated notes on the ledger."""
    from vaultmem.search.engine import RecallEngine
    from vaultmem.vault import Vault

    res: dict = {"reused_vectors": reuse_vectors(root, seed)}
    t0 = time.perf_counter()
    engine = RecallEngine(Vault(root))
    res["sync"] = engine.sync()
    res["index_s"] = time.perf_counter() - t0
    res["model_problem"] = engine.model_problem
    t0 = time.perf_counter()
    v = Vault(root).verify(record=True)
    res["verify_recorded"], res["verify_s"] = v["recorded"], time.perf_counter() - t0
    return res


def reuse_vectors(root: Path, seed: int) -> str:
    """Copy the embedding cache of recall_perf's cached vault of the same notes, after checking a
    sample of it against the model. Returns what happened (for the report)."""
    import numpy as np

    from vaultmem.search.embed import load_embedder
    from vaultmem.search.engine import embed_text
    from vaultmem.search.vectors import VectorStore, folder_name, text_hash
    from vaultmem.vault import Vault

    size = sum(1 for _ in (root / "memories").rglob("*.md")) + sum(1 for _ in (root / "skills").rglob("*.md"))
    src = rp.vault_path(size, seed)
    try:
        marker = json.loads((src / ".bench-vault.json").read_text())
    except (OSError, ValueError):
        return "no cached vault"
    if marker != {"size": size, "seed": seed, "generator": rp.GENERATOR_VERSION}:
        return "cached vault differs"
    embedder = load_embedder(None)
    sub = Path(".vaultmem") / "index" / "vectors" / folder_name(embedder.name)
    store = VectorStore(src / sub, embedder.name)
    if not store.hashes:
        return "no cached embeddings"
    notes = Vault(root).notes()
    rng = random.Random(seed)
    sample = rng.sample(notes, min(VECTOR_SAMPLE, len(notes)))
    texts = [embed_text(n) for n in sample]
    rows = [store.row_of_hash.get(text_hash(embedder.name, t)) for t in texts]
    if any(r is None for r in rows):
        return "cached embeddings miss notes"
    fresh = embedder.embed(texts)
    cos = [float(np.dot(fresh[i], store.matrix[r])) for i, r in enumerate(rows)]
    if min(cos) < 0.99:
        return f"cached embeddings are not the model's (min cosine {min(cos):.2f})"
    shutil.copytree(src / sub, root / sub)
    return f"reused from {src} (sample of {len(rows)} checked)"


def inproc_child(root: Path, seed: int, reps: int) -> dict:
    """`Vault.add` in one long-lived process: with the contradiction check, and without."""
    from vaultmem.vault import Vault

    vault = Vault(root)
    texts = add_texts(seed + 800, 2 * reps + 1)
    t0 = time.perf_counter()
    vault.add(*texts[0])  # loads the model and opens the indexes
    res: dict = {"first_add_s": time.perf_counter() - t0, "actions": {}}
    for key, kwargs, batch in (("add_inproc_check", {}, texts[1:reps + 1]),
                               ("add_inproc_nocheck", {"supersede": False, "merge": False}, texts[reps + 1:])):
        ms, actions = [], {}
        for text, ns in batch:
            t = time.perf_counter()
            added = vault.add(text, ns, **kwargs)
            ms.append((time.perf_counter() - t) * 1000)
            actions[added.action] = actions.get(added.action, 0) + 1
            for k in ("superseded", "contested"):
                if getattr(added, k):
                    actions[k] = actions.get(k, 0) + 1
        res[key], res["actions"][key] = ms, actions
    return res


# ================================================================ output

def _cell_ms(values: list[float]) -> str:
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return "n/a"
    p50, p95 = rp.pct(vals, 50), rp.pct(vals, 95)
    return f"{p50:,.0f} / {p95:,.0f}" if p50 >= 10 else f"{p50:.1f} / {p95:.1f}"


def _budget(hook: str | None) -> str:
    if not hook:
        return ""
    from vaultmem.integrations.claude_code import spec_for

    spec = spec_for(hook)
    return f"{spec.budget:g} / {spec.timeout}" if spec else ""


def _cell(key: str, res: dict | None, n: int) -> str:
    if res is None:
        return "n/a"
    if key == "session_start_chars":
        chars = res["chars"]
        return f"{rp.pct(chars, 50):,.0f} (max {max(chars):,})" if chars else "n/a"
    cell = _cell_ms(res["ms"])
    flags = []
    if res.get("failed"):
        flags.append(f"{res['failed']}/{n} failed")
    if res.get("gave_up"):
        flags.append(f"{res['gave_up']}/{n} gave up")
    if res.get("hook_failed"):
        flags.append(f"{res['hook_failed']}/{n} hook errors")
    if "answered" in res and res["answered"] < n:
        flags.append(f"{n - res['answered']}/{n} empty")
    return cell + (" ⚠ " + ", ".join(flags) if flags else "")


def table(results: list[dict]) -> str:
    head = ["what", "budget / timeout s", "n"]
    for r in results:
        head += [f"{r['size']:,} notes: p50 / p95 ms", "CPU p50 ms", "peak RSS MB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for key, label, hook, _slow in ROWS:
        ns = sorted({len(r["rows"][key].get("ms") or r["rows"][key].get("chars") or [])
                     for r in results if key in r["rows"]})
        cells = [label, _budget(hook), "/".join(map(str, ns)) or "–"]
        for r in results:
            res = r["rows"].get(key)
            n = len((res or {}).get("ms") or (res or {}).get("chars") or [])
            cells.append(_cell(key, res, n))
            cpu = (res or {}).get("cpu_ms")  # the process's own, all its threads: what it takes from the agent's
            cells.append(f"{rp.pct(cpu, 50):,.0f}" if cpu else "")
            rss = (res or {}).get("rss_mb")
            cells.append(f"{rss:,.0f}" if rss else ("" if key == "session_start_chars" else "n/a"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes(results: list[dict]) -> list[str]:
    out = []
    for r in results:
        b = r.get("build", {})
        rows = r["rows"]
        parts = [(f"generated in {r.get('generate_s', 0):.1f} s; indexes built in {b.get('index_s', 0):.1f} s "
                  f"({b.get('sync', {}).get('embedded', '?')} embedded; vectors: {b.get('reused_vectors', '?')})")]
        if b.get("model_problem"):
            parts.append(f"MODEL PROBLEM: {b['model_problem']}")
        if r.get("first_add_s") is not None:
            parts.append(f"first in-process add (loads the model) {r['first_add_s']:.1f} s")
        if r.get("watcher_ready_s") is not None:
            parts.append(f"watcher ready after {r['watcher_ready_s']:.1f} s, peak RSS "
                         f"{r.get('watcher_rss_mb') or 0:.0f} MB")
        for key in ("add_cli", "add_cli_watch", "add_inproc_check", "add_inproc_nocheck"):
            if rows.get(key, {}).get("actions"):
                parts.append(f"{key} did {_fmt_actions(rows[key]['actions'])}")
        for key in ("hook_pre_tool", "hook_pre_tool_other"):
            if rows.get(key, {}).get("denied"):
                parts.append(f"{key} denied {rows[key]['denied']} correct commands")
        if rows.get("hook_stop_again", {}).get("captured"):
            parts.append(f"stop captured {rows['hook_stop_again']['captured']} notes again on a second run")
        stop = rows.get("hook_stop")
        if stop:
            parts.append(f"stop captured {stop.get('captured')} new notes of {stop.get('facts')} remember-that lines")
        for key, res in rows.items():
            if res.get("failure"):
                parts.append(f"{key} failure: {res['failure']}")
            if res.get("gave_up") or res.get("hook_failed"):
                parts.append(f"{key} hooks.log: {' | '.join(res.get('log_lines', []))[:300]}")
        parts += r.get("notes", [])
        out.append(f"- {r['size']:,}: " + "; ".join(parts))
    return out


def _fmt_actions(actions: dict) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted(actions.items()))


def _vaultmem_dir() -> str:
    """Where the children import vaultmem from (a checkout, or a snapshot on PYTHONPATH)."""
    import importlib.util

    spec = importlib.util.find_spec("vaultmem")
    return str(Path(spec.origin).parent) if spec and spec.origin else "?"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=None, help=f"comma-separated note counts (default {DEFAULT_SIZES})")
    p.add_argument("--reps", type=int, default=None, help=f"repetitions per row (default {DEFAULT_REPS})")
    p.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}, {QUICK_REPS} repetitions "
                                                        "(unless --sizes / --reps say otherwise)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--json", dest="json_out", help="also write the raw measurements to this file")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (its path goes to stderr)")
    p.add_argument("--_build", help=argparse.SUPPRESS)
    p.add_argument("--_inproc", help=argparse.SUPPRESS)
    p.add_argument("--_out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args._build:
        Path(args._out).write_text(json.dumps(build_child(Path(args._build), args.seed)))
        return 0
    if args._inproc:
        Path(args._out).write_text(json.dumps(inproc_child(Path(args._inproc), args.seed,
                                                           args.reps or DEFAULT_REPS)))
        return 0

    sizes_arg = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    sizes = [int(s.replace("_", "")) for s in sizes_arg.split(",") if s.strip()]
    reps = args.reps or (QUICK_REPS if args.quick else DEFAULT_REPS)
    if reps < 2 or any(s < 20 for s in sizes):
        p.error("--reps must be at least 2 and every size at least 20")
    results = []
    t_start = time.perf_counter()
    work_root = Path(tempfile.mkdtemp(prefix="vaultmem-agent-perf-"))
    try:
        for size in sizes:
            t0 = time.perf_counter()
            work = work_root / str(size)
            work.mkdir()
            results.append(Bench(size, reps, args.seed, work, work_root / "pycache",
                                 cli_warmup=0 if args.quick else 1).run_all())
            results[-1]["total_s"] = time.perf_counter() - t0
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)  # the bytecode cache stays for the next size
    finally:
        if args.keep:
            log(f"kept {work_root}")
        else:
            shutil.rmtree(work_root, ignore_errors=True)

    print("## vaultmem: what an agent waits for\n")
    print("\n".join(rp.machine_facts()))
    print(f"- vaultmem imported from {_vaultmem_dir()}")
    warmup = "one warm-up for the hook rows, none for the CLI rows (--quick)" if args.quick else "one warm-up"
    print(f"- wall clock of real processes (spawn to exit), bytecode cached; {reps} repetitions after "
          f"{warmup}, a quarter (at least 2) for stop, verify and health; seed {args.seed}; {SETTLE_S:g} s between "
          f"repetitions while the watcher runs; run took {time.perf_counter() - t_start:.0f} s\n")
    print(table(results))
    print()
    print("\n".join(notes(results)))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"reps": reps, "seed": args.seed, "sizes": results},
                                                  indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
