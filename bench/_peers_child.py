"""The part of bench/peers.py that runs inside each tool's own interpreter.

    python -I bench/_peers_child.py SPEC.json

SPEC names an operation (`info`, `write`, `recall`, `decay`), a tool
(`vaultmem`, `skillmem`, `agentmemory-sr`), the tool's store folder, the
input data and the file to write the JSON result to. This file imports only
the standard library and the one tool under test, so the parent can run it
with any interpreter: the repo's venv, a venv with an older vaultmem
checkout (`--vaultmem-python`), or the peers' scratch venv. Run it with `-I`
(as peers.py does) so that neither this folder nor PYTHONPATH lands on
sys.path and vaultmem is the interpreter's installed package.

Each operation runs in its own child process, so the result's `maxrss_mb`
(this process's peak RSS) belongs to that operation and that tool alone.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

DISTRIBUTIONS = {"vaultmem": "vaultmem", "skillmem": "skillmem", "agentmemory-sr": "agentmemory-sr"}
MODULES = {"vaultmem": "vaultmem", "skillmem": "skillmem", "agentmemory-sr": "agentmemory_sr"}
API_MODULES = {"vaultmem": "vaultmem.vault", "skillmem": "skillmem.storage", "agentmemory-sr": "agentmemory_sr.store"}


# ================================================================ one adapter per tool

class Vaultmem:
    """`Vault.add` (checks off: merge=False, supersede=False) and `Vault.recall(q, k=5)`."""

    has_unchecked_add = True

    def __init__(self, store: Path):
        from vaultmem import Vault

        self.vault = Vault.open(store, create=True)

    def add(self, i: int, text: str, namespace: str, checked: bool) -> tuple[str | None, str]:
        if checked:
            added = self.vault.add(text, namespace)
        else:
            added = self.vault.add(text, namespace, merge=False, supersede=False)
        if added.action != "added":
            return added.note.id, added.action  # "recurrence": counted on an existing note
        if added.superseded:
            return added.note.id, "added, superseded an older one"
        if added.contested:
            return added.note.id, "added, contested"
        return added.note.id, "added"

    def search(self, query: str, k: int) -> list[str]:
        return [h.note.id for h in self.vault.recall(query, k=k)]

    def grade_targets(self, ids: list[str], memories: list) -> list[str]:
        return ids

    def close(self) -> None:
        pass


class Skillmem:
    """skillmem's library API: `storage.upsert` (check_conflicts on/off) and `storage.search`.

    A memory is a record of kind `reference` whose title is the sentence and
    whose project is the namespace. skillmem reinforces only records of kind
    `skill`, so `grade_targets` files a few skills (not timed) for the CLI
    grade row.
    """

    has_unchecked_add = True

    def __init__(self, store: Path):
        from skillmem import storage

        self.S = storage
        self.conn = storage.connect(store / "memory.db")
        storage.init_schema(self.conn)

    def add(self, i: int, text: str, namespace: str, checked: bool) -> tuple[str | None, str]:
        item = self.S.MemoryItem(slug=f"m{i:06d}", kind="reference", title=text, body="", project=namespace)
        try:
            self.S.upsert(self.conn, item, check_conflicts=checked)
        except self.S.MemoryConflict:
            return None, "refused as a near-duplicate"
        return item.slug, "added"

    def search(self, query: str, k: int) -> list[str]:
        return [h["slug"] for h in self.S.search(self.conn, query, limit=k)]

    def grade_targets(self, ids: list[str], memories: list) -> list[str]:
        slugs = []
        for j, (text, namespace) in enumerate(memories[: len(ids)]):
            slug = f"bench-skill-{j:03d}"
            body = self.S.skill_body(f"when asked about {namespace}", text, "success", None)
            item = self.S.MemoryItem(slug=slug, kind="skill", title=text, body=body, project=namespace,
                                     visibility="public")
            self.S.upsert_skill(self.conn, item)
            slugs.append(slug)
        return slugs

    def close(self) -> None:
        self.conn.close()


class AgentmemorySr:
    """agentmemory-sr's `MemoryStore.add` (always checks) and `MemoryStore.retrieve(q, top_k=5)`."""

    has_unchecked_add = False

    def __init__(self, store: Path):
        from agentmemory_sr import MemoryStore

        self.store = MemoryStore(store / "memory.db")

    def add(self, i: int, text: str, namespace: str, checked: bool) -> tuple[str | None, str]:
        return self.store.add(text, namespace=namespace).id, "added"

    def search(self, query: str, k: int) -> list[str]:
        return [m.id for m in self.store.retrieve(query, top_k=k)]

    def grade_targets(self, ids: list[str], memories: list) -> list[str]:
        return ids

    def demoted(self) -> int:
        """Older memories its contradiction check demoted (graded `again`) during the adds."""
        row = self.store.db.conn.execute(
            "SELECT count(*) FROM grade_history WHERE context LIKE 'superseded by%'").fetchone()
        return int(row[0])

    def similar_lookups_failing(self, memories: list, sample: int = 200) -> int:
        """Of `sample` stored memories, how many its own duplicate lookup (`find_similar`,
        same namespace) does not find even verbatim: its query did not parse, so the
        check silently compared nothing."""
        missed = 0
        for text, namespace in memories[:sample]:
            missed += not self.store.db.find_similar(text, namespace, limit=5)
        return missed

    def close(self) -> None:
        self.store.close()


ADAPTERS = {"vaultmem": Vaultmem, "skillmem": Skillmem, "agentmemory-sr": AgentmemorySr}


# ================================================================ operations

def op_info(spec: dict) -> dict:
    """Interpreter, tool version and where the tool is imported from."""
    import importlib
    import importlib.metadata
    import platform

    tool = spec["tool"]
    module = importlib.import_module(MODULES[tool])
    importlib.import_module(API_MODULES[tool])  # what the adapters use: fails here if the install is broken
    try:
        version = importlib.metadata.version(DISTRIBUTIONS[tool])
    except importlib.metadata.PackageNotFoundError:
        version = getattr(module, "__version__", "?")
    return {"python": platform.python_version(), "executable": sys.executable, "version": version,
            "module_file": getattr(module, "__file__", None)}


def op_write(spec: dict) -> dict:
    """Add spec['memories'] in order; per-add wall times, outcomes and a sample of ids."""
    store = Path(spec["store"])
    memories = spec["memories"]
    checked = spec["checked"]
    t0 = time.perf_counter()
    tool = ADAPTERS[spec["tool"]](store)
    open_s = time.perf_counter() - t0
    ms, outcomes, ids, errors = [], {}, [], []
    for i, (text, namespace) in enumerate(memories):
        t = time.perf_counter()
        try:
            note_id, outcome = tool.add(i, text, namespace, checked)
        except Exception as exc:  # noqa: BLE001 - count it, report it, keep measuring
            note_id, outcome = None, f"error: {type(exc).__name__}"
            if len(errors) < 3:
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
        ms.append((time.perf_counter() - t) * 1000)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if note_id is not None and outcome.startswith("added"):
            ids.append(note_id)
    total_s = time.perf_counter() - t0 - open_s
    out = {"open_s": open_s, "total_s": total_s, "ms": ms, "outcomes": outcomes, "errors": errors}
    want = spec.get("grade_ids", 0)
    if want:
        step = max(1, len(ids) // want)
        out["grade_ids"] = tool.grade_targets(ids[::step][:want], memories)
    if isinstance(tool, AgentmemorySr):
        out["demoted"] = tool.demoted()
        out["lookups_failing"] = tool.similar_lookups_failing(memories)
        out["lookups_sampled"] = min(200, len(memories))
    tool.close()
    return out


def op_recall(spec: dict) -> dict:
    """A long-lived API object: the first query (builds what the tool builds lazily),
    5 warm-up queries, then every query timed."""
    store = Path(spec["store"])
    queries = spec["queries"]
    k = spec["k"]
    t0 = time.perf_counter()
    tool = ADAPTERS[spec["tool"]](store)
    open_s = time.perf_counter() - t0
    t = time.perf_counter()
    tool.search(queries[0], k)
    first_s = time.perf_counter() - t
    for q in queries[1:6]:
        tool.search(q, k)
    ms, empty = [], 0
    for q in queries:
        t = time.perf_counter()
        hits = tool.search(q, k)
        ms.append((time.perf_counter() - t) * 1000)
        empty += not hits
    tool.close()
    return {"open_s": open_s, "first_s": first_s, "ms": ms, "empty": empty}


def op_decay(spec: dict) -> dict:
    """vaultmem only: `vault.decay()` on the whole vault (the clock is pinned by VAULTMEM_NOW)."""
    from vaultmem import Vault

    vault = Vault.open(Path(spec["store"]))
    t = time.perf_counter()
    steps = vault.decay()
    seconds = time.perf_counter() - t
    archived = sum(1 for s in steps if getattr(s, "archive", False))
    return {"s": seconds, "changed": len(steps), "archived": archived}


def op_write_bulk(spec: dict) -> dict:
    """vaultmem only: the same adds as op_write through one `Vault.add_many` call (texts
    embedded in batches, one filesystem sync per batch), with or without the checks."""
    from vaultmem import Vault

    checked = spec["checked"]
    items = [{"text": text, "namespace": ns} if checked else
             {"text": text, "namespace": ns, "merge": False, "supersede": False} for text, ns in spec["memories"]]
    helper_peaks = _watch_embedding_process()
    t0 = time.perf_counter()
    vault = Vault.open(Path(spec["store"]), create=True)
    open_s = time.perf_counter() - t0
    results = vault.add_many(items)
    total_s = time.perf_counter() - t0 - open_s
    outcomes: dict[str, int] = {}
    for added in results:
        outcome = (f"error: {type(added).__name__}" if isinstance(added, Exception) else added.action if
                   added.action != "added" else "added, superseded an older one" if added.superseded else
                   "added, contested" if added.contested else "added")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    import resource

    self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"open_s": open_s, "total_s": total_s, "outcomes": outcomes, "self_rss_mb": self_mb,
            "helper_rss_mb": max(helper_peaks, default=None)}


def _watch_embedding_process() -> list[float]:
    """The peak RSS (VmHWM, MB) of each second process add_many starts to embed ahead
    (vaultmem/search/embed_worker.py), read just before it ends: wait4 reports the larger of
    this process and that one, not the two together. Empty for a vaultmem without one."""
    peaks: list[float] = []
    try:
        from vaultmem.search.embed_worker import EmbedWorker
    except ImportError:
        return peaks
    close = EmbedWorker.close

    def close_noting_peak(self):
        child = getattr(self, "_child", None)
        if child is not None:
            try:
                with open(f"/proc/{child.pid}/status", encoding="ascii") as status:
                    peaks.extend(int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:"))
            except OSError:
                pass
        close(self)

    EmbedWorker.close = close_noting_peak
    return peaks


OPS = {"info": op_info, "write": op_write, "write_bulk": op_write_bulk, "recall": op_recall, "decay": op_decay}


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    result = OPS[spec["op"]](spec)
    result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    result["sys_path_has_bench_checkout"] = any(
        p and Path(p).resolve() == Path(spec.get("bench_root", "/nonexistent")).resolve() for p in sys.path)
    Path(spec["out"]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
