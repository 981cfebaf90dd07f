"""The first query in another language on a vault whose cross-lingual vectors are not made
yet: how long it waits, and how long English recalls wait meanwhile, before (every note
embedded before answering) and after (a budget per query, the watcher fills the rest).

    python bench/crosslingual_fill.py                       # 10k notes, before = main
    python bench/crosslingual_fill.py --sizes 2000,10000 --before 38f6601

recall_perf's synthetic vault of each size (generated once, cached under
/tmp/vaultmem-bench/) gets the English model's vectors from recall_perf's `seed_vectors`
(real query path, synthetic note vectors: timings only), the catalog and the BM25 index;
then, for each code version (`before`: a `git archive` of that revision, run with
PYTHONPATH; `after`: this checkout), on a fresh copy without cross-lingual vectors:

- CLI, no watcher: wall time of `vaultmem recall QUESTION` (VAULTMEM_NO_SERVER=1) the
  first time, and the second time (another question), each a new process (USE's load
  included); how many notes it embedded shows in the coverage line on stderr (after).
- watcher: `vaultmem watch` on another fresh copy; 20 English recalls (the wait without a
  fill, p50), then one question in another language
  through its socket (wall time to the answer), and from 0.3 s later English recalls
  (recall_perf's queries), one every 0.25 s or when the last is answered, until every note
  has its vector: their count,
  p50 and max wait, and when the fill was complete (before: when the question was answered;
  after: the first coverage probe, every second, that says complete).

Prints the machine's load average before and after each row and one markdown table.
Nothing here opens a network socket.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

import recall_perf as rp  # noqa: E402  (synthetic vaults, the watcher as a child, queries)

QUESTIONS = ["Какая версия Postgres работает в сервисе billing?", "Wer leitet das Team für die Zahlungen?"]
ENGLISH_START_S = 0.3
ENGLISH_EVERY_S = 0.25  # an English recall at most every quarter second (an agent's prompts, a busy one)
PROBE_EVERY_S = 1.0
IDLE_QUERIES = 20  # English recalls before the question: the watcher's wait without a fill
TIMEOUT_S = 1800.0


def prepared_vault(size: int, seed: int, work: Path) -> Path:
    """A copy of recall_perf's vault of `size` notes with the English model's vectors, the
    catalog and the BM25 index, and no cross-lingual vectors."""
    source, _generated = rp.ensure_vault(size, seed, fresh=False)
    root = work / f"prepared-{size}"
    if not (root / ".bench-prepared").exists():
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(source, root)
        rp.clear_indexes(root)
        rp.seed_vectors(root, seed)
        (root / ".bench-prepared").write_text("ok")
    return root


def fresh_copy(prepared: Path, name: str) -> Path:
    copy = prepared.parent / name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(prepared, copy)
    return copy


def source_of(revision: str, work: Path) -> Path:
    """The package at `revision`, extracted (for PYTHONPATH)."""
    folder = work / f"src-{revision}"
    if not (folder / "vaultmem").exists():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "vaultmem"], check=True,
                                 capture_output=True).stdout
        with tempfile.TemporaryFile() as handle:
            handle.write(archive)
            handle.seek(0)
            with tarfile.open(fileobj=handle) as tar:
                tar.extractall(folder)
    return folder


def env_for(source: Path | None, no_server: bool) -> dict:
    env = rp._env(no_server)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    env.pop("VAULTMEM_MODEL", None)
    return env


def cli_routed(root: Path, question: str, env: dict) -> dict:
    done = rp.run_measured([rp.vaultmem_bin(), "recall", question, "--vault", str(root), "--json"], TIMEOUT_S, env,
                           cwd=root.parent)  # not this checkout: its vaultmem/ would come before PYTHONPATH
    line = next((text for text in done["stderr"].splitlines() if "cross-lingual vectors cover" in text), "")
    return {"s": done["wall"], "rc": done["rc"], "coverage": line.split("cover ", 1)[-1].split(" notes")[0]}


def watcher_run(root: Path, env: dict, english: list[str]) -> dict:
    """One question in another language through the watcher, English recalls during its fill."""
    from vaultmem.service.client import ask

    watcher = rp.Watcher(root, ready_timeout=600.0, env=env)
    request = {"op": "recall", "top_k": 5, "now": os.environ.get("VAULTMEM_NOW")}
    routed: dict = {}
    try:
        idle = []
        for query in english[:IDLE_QUERIES]:
            began = time.perf_counter()
            ask(str(root), {**request, "query": query}, timeout=TIMEOUT_S)
            idle.append((time.perf_counter() - began) * 1000)
        started = time.perf_counter()

        def first_question():
            answer = ask(str(root), {**request, "query": QUESTIONS[0]}, timeout=TIMEOUT_S)
            routed.update(s=time.perf_counter() - started, answer=answer)

        thread = threading.Thread(target=first_question)
        thread.start()
        time.sleep(ENGLISH_START_S)
        waits, probed_at, complete_at, i = [], time.perf_counter(), None, 0
        while complete_at is None and time.perf_counter() - started < TIMEOUT_S:
            began = time.perf_counter()
            ask(str(root), {**request, "query": english[i % len(english)]}, timeout=TIMEOUT_S)
            waits.append((time.perf_counter() - began) * 1000)
            i += 1
            if "s" in routed and not (routed["answer"] or {}).get("crosslingual_coverage"):
                complete_at = routed["s"]  # before: it waited for every note; after: the budget covered all
            elif "s" in routed and time.perf_counter() - probed_at > PROBE_EVERY_S:
                probed_at = time.perf_counter()
                probe = ask(str(root), {**request, "query": QUESTIONS[1]}, timeout=TIMEOUT_S) or {}
                if probe.get("ok") and not probe.get("crosslingual_coverage"):
                    complete_at = time.perf_counter() - started
            time.sleep(max(0.0, ENGLISH_EVERY_S - (time.perf_counter() - began)))
        thread.join()
        return {"routed_s": routed["s"], "english_ms": waits, "idle_ms": idle, "complete_s": complete_at}
    finally:
        watcher.stop()


def measure(prepared: Path, label: str, source: Path | None, english: list[str]) -> dict:
    load_before = os.getloadavg()[0]
    cli_vault = fresh_copy(prepared, f"cli-{label}")
    first = cli_routed(cli_vault, QUESTIONS[0], env_for(source, no_server=True))
    second = cli_routed(cli_vault, QUESTIONS[1], env_for(source, no_server=True))
    shutil.rmtree(cli_vault)
    watched_vault = fresh_copy(prepared, f"watched-{label}")
    watched = watcher_run(watched_vault, env_for(source, no_server=False), english)
    shutil.rmtree(watched_vault)
    return {"first": first, "second": second, **watched, "load": (load_before, os.getloadavg()[0])}


def row(size: int, label: str, result: dict) -> str:
    waits = result["english_ms"]
    first, second = result["first"], result["second"]
    cover = f" ({first['coverage']})" if first["coverage"] else ""
    cover2 = f" ({second['coverage']})" if second["coverage"] else ""
    complete = "–" if result["complete_s"] is None else f"{result['complete_s']:.1f}"
    return (f"| {size:,} | {label} | {first['s']:.1f}{cover} | {second['s']:.1f}{cover2} | {result['routed_s']:.2f} | "
            f"{statistics.median(result['idle_ms']):.0f} | {len(waits)} | {statistics.median(waits):.0f} / "
            f"{max(waits):.0f} | {complete} | "
            f"{result['load'][0]:.1f} → {result['load'][1]:.1f} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000", help="comma-separated note counts")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--before", default="main", help="the revision measured as 'before' (default: main)")
    parser.add_argument("--work", type=Path, default=rp.BENCH_DIR / "crosslingual_fill")
    args = parser.parse_args(argv)
    os.environ.setdefault("VAULTMEM_NOW", "2026-06-01T09:00:00")
    args.work.mkdir(parents=True, exist_ok=True)
    before = source_of(args.before, args.work)
    english = rp.queries(args.seed, 50)
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}; "
          f"before = {args.before}, after = this checkout")
    lines = ["| notes | code | CLI: first routed recall s (covered) | CLI: second s | watcher: first routed recall s "
             "| English recall p50 ms, no fill | English recalls during the fill | their wait p50 / max ms "
             "| fill complete after s | load |",
             "|" + "---|" * 2 + "---:|" * 8]
    for size in (int(s) for s in args.sizes.split(",")):
        prepared = prepared_vault(size, args.seed, args.work)
        for label, source in (("before", before), ("after", None)):
            result = measure(prepared, label, source, english)
            lines.append(row(size, label, result))
            print(lines[-1], flush=True)
    print()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
