"""First use of a vault that has no indexes yet: how long until the agent's hook gets memories?

    python bench/first_use.py                       # 10k notes
    python bench/first_use.py --sizes 2000,10000    # chosen sizes
    python bench/first_use.py --arms watcher        # only the arm with a watcher

A team's vault cloned from git, a folder of notes copied in, or `.vaultmem/`
deleted: the notes are there, the catalog, the BM25 index and the embeddings
are not. This is what an agent session meets then, through the real hooks:

- **watcher**: the SessionStart hook (which starts `vaultmem watch` in the
  background), then a UserPromptSubmit hook every `--interval` seconds, as a
  person typing prompts would;
- **no watcher** (`VAULTMEM_AUTOWATCH=off`): UserPromptSubmit hooks alone, each
  recalling in-process within the hook's time budget (3 s).

Per arm: seconds from the first hook to the first prompt that gets memories,
how many prompts got none before it, the hook's wall time per prompt meanwhile
and after, and (watcher) when the watcher had every note embedded: its recall
answers say how many notes it has not embedded yet (before 2026-12-03 it
answered only once all were). The vault is recall_perf.py's synthetic one (cached under
/tmp/vaultmem-bench/), copied without `.vaultmem/index` and `.vaultmem/cache`.
Every prompt is a question recall_perf asks of that vault (its words are in it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall_perf as rp  # noqa: E402

ARMS = ("watcher", "no-watcher")


def fresh_copy(source: Path, target: Path) -> None:
    """The notes and config of `source`, without its derived caches (as a git clone has them)."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("index", "cache", "*.lock", "hooks", "*.log"))


def hook_env(watcher: bool) -> dict:
    env = rp._env(no_server=False)
    env["VAULTMEM_AUTODECAY"] = "off"  # a decay started by SessionStart would compete for the cores
    if watcher:
        env.pop("VAULTMEM_AUTOWATCH", None)
    return env


def run_hook(event: str, payload: dict, root: Path, env: dict) -> dict:
    r = rp.run_measured([rp.vaultmem_bin(), "--vault", str(root), "hook", event], 60, env,
                        stdin=json.dumps(payload).encode())
    r["answered"] = bool(r["stdout"].strip())
    return r


def stop_watchers(root: Path) -> None:
    """End the watcher the SessionStart hook started for `root` (it runs in its own session)."""
    found = subprocess.run(["pgrep", "-f", "--", f"--vault {root} watch"], capture_output=True, text=True)
    for pid in found.stdout.split():
        try:
            os.kill(int(pid), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            pass
    for _ in range(100):  # gone before its folder is deleted
        if subprocess.run(["pgrep", "-f", "--", f"--vault {root} watch"], capture_output=True).returncode:
            return
        time.sleep(0.1)


def watcher_complete(root: Path, t0: float, timeout: float) -> float | None:
    """Seconds from t0 until the watcher answers with every note embedded (None: not by `timeout`)."""
    from vaultmem.service.client import ask

    while time.perf_counter() - t0 < timeout:
        answer = ask(str(root), {"op": "recall", "query": "status", "top_k": 1}, timeout=30)
        if answer is not None and answer.get("ok") and not answer.get("unembedded"):
            return time.perf_counter() - t0
        time.sleep(1.0)
    return None


def run_arm(arm: str, source: Path, prompts: list[str], args) -> dict:
    with tempfile.TemporaryDirectory(prefix="vaultmem-first-use-") as tmp:
        root = Path(tmp) / "vault"
        fresh_copy(source, root)
        env = hook_env(arm == "watcher")
        session = {"session_id": "first-use", "cwd": str(root)}
        t0 = time.perf_counter()
        start = None
        if arm == "watcher":
            start = run_hook("session-start", {**session, "hook_event_name": "SessionStart"}, root, env)
        before, after, first_at = [], [], None
        try:
            for number, prompt in enumerate(prompts):
                if time.perf_counter() - t0 > args.timeout or len(after) >= args.after:
                    break
                r = run_hook("user-prompt-submit", {**session, "hook_event_name": "UserPromptSubmit",
                                                    "prompt": prompt}, root, env)
                if r["answered"] and first_at is None:
                    first_at = time.perf_counter() - t0
                (after if first_at is not None else before).append(r["wall"])
                if first_at is None:
                    time.sleep(max(0.0, args.interval - r["wall"]))
            complete_at = watcher_complete(root, t0, args.timeout) if arm == "watcher" else None
        finally:
            if arm == "watcher":
                stop_watchers(root)
        return {"arm": arm, "first_answer_s": first_at, "empty_prompts": len(before),
                "start_s": start["wall"] if start else None,
                "wall_before_ms": statistics.median(before) * 1000 if before else None,
                "wall_after_ms": statistics.median(after) * 1000 if after else None,
                "timed_out": first_at is None, "complete_s": complete_at}


def table(rows: list[dict]) -> str:
    lines = ["| notes | arm | first prompt with memories, s | prompts left empty before it | "
             "hook ms before / after (median) | SessionStart hook ms | watcher has every note embedded, s |",
             "|---:|---|---:|---:|---|---:|---:|"]
    for r in rows:
        first = f"> {r['timeout']:.0f}" if r["timed_out"] else f"{r['first_answer_s']:.1f}"
        ms = " / ".join("–" if x is None else f"{x:.0f}" for x in (r["wall_before_ms"], r["wall_after_ms"]))
        start = "–" if r["start_s"] is None else f"{r['start_s'] * 1000:.0f}"
        done = "–" if r["arm"] != "watcher" else "not yet" if r["complete_s"] is None else f"{r['complete_s']:.0f}"
        lines.append(f"| {r['size']:,} | {r['arm']} | {first} | {r['empty_prompts']} | {ms} | {start} | {done} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000")
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {', '.join(ARMS)}")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--interval", type=float, default=2.0, help="seconds between prompts until one is answered")
    p.add_argument("--after", type=int, default=10, help="prompts timed once they are answered")
    p.add_argument("--timeout", type=float, default=400.0, help="give an arm up after this many seconds")
    p.add_argument("--json", help="write the rows here too")
    args = p.parse_args(argv)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if unknown := set(arms) - set(ARMS):
        p.error(f"unknown arm(s): {', '.join(sorted(unknown))}")
    rows = []
    print("\n".join(rp.machine_facts()), file=sys.stderr)
    for size in (int(s) for s in args.sizes.split(",")):
        source, _made = rp.ensure_vault(size, args.seed, fresh=False)
        prompts = rp.queries(args.seed, 400)
        for arm in arms:
            print(f"[{size}] {arm} ... (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
            row = {"size": size, "timeout": args.timeout, **run_arm(arm, source, prompts, args)}
            print(f"[{size}] {arm}: {row}", file=sys.stderr, flush=True)
            rows.append(row)
    rp.print_report("vaultmem: first use of a vault without indexes", table(rows), rows, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
