"""bench/peers.py: its data generator, and a tiny end-to-end run of the vaultmem column.

The peers (skillmem, agentmemory-sr) are not installed in the repo's venv, so
the run checks that they are reported as such and that every vaultmem row is
measured; the timings themselves are not checked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import peers  # noqa: E402

NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def test_memories_are_deterministic_short_sentences_in_about_twenty_namespaces():
    reps = peers.Reps(quick=True)
    a = peers.make_data(2000, 7, reps)
    assert a == peers.make_data(2000, 7, reps)
    assert a != peers.make_data(2000, 8, reps)
    texts = [t for t, _ns in a["memories"]]
    assert all(8 <= len(t.split()) <= 25 and t.endswith(".") for t in texts)
    assert 15 <= len({ns for _t, ns in a["memories"]}) <= 25
    assert len(set(texts)) < len(texts)  # some memories are saved twice, word for word
    assert any(re.search(r"\b[a-z]+-\d+ listens on port \d+", t) for t in texts)
    assert len(a["queries"]) == reps.inproc_queries and len(a["cli_queries"]) == reps.cli_queries
    assert not set(t for t, _ns in a["cli_adds"]) & set(texts)


def test_the_traced_generator_writes_the_same_memories_and_knows_what_each_restates():
    import supersede_generated

    traced, plain = supersede_generated.TracedGen(7), peers.MemoryGen(7)
    memories = [traced.next() for _ in range(1500)]
    assert memories == [plain.next() for _ in range(1500)]
    restated = [i for i in range(len(memories)) if traced.restates(i)]
    assert 0.04 < len(restated) / len(memories) < 0.10  # P_RESTATE, 7%
    for i in restated:  # the same template and subject slots as the fact it restates, one value changed
        origin = traced.origins[i]
        assert traced.subject(i) == traced.subject(origin) and memories[i] != memories[origin]
    repeats = [i for i, o in enumerate(traced.origins) if o is not None and not traced.restates(i)]
    assert repeats and all(memories[i] == memories[traced.origins[i]] for i in repeats)


def test_ratio_is_vaultmem_over_the_best_peer():
    row = peers.Row("x").set("vaultmem", "6", 6.0).set("skillmem", "2", 2.0).set("agentmemory-sr", "3", 3.0)
    assert row.ratio() == "×3.00"
    assert peers.Row("y").set("vaultmem", "1", 1.0).ratio() == "–"


@pytest.mark.slow
@pytest.mark.bench
def test_quick_run_measures_every_vaultmem_row(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    temp = Path(tempfile.mkdtemp(prefix="vm-pe-"))  # short: the watcher's socket path has a length limit
    env["TMPDIR"] = str(temp)
    out = tmp_path / "peers.json"
    try:
        result = subprocess.run([sys.executable, str(BENCH / "peers.py"), "--quick", "--sizes", "40",
                                 "--work-dir", str(tmp_path / "work"), "--json-out", str(out)],
                                capture_output=True, text=True, env=env, timeout=300, check=False)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert not (tmp_path / "work" / "n40").exists()  # the stores were removed
    for peer in peers.PEERS:
        assert f"- {peer}: cannot be imported" in result.stdout

    lines = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| measure | vaultmem |")
    rows = {cells[0]: cells for cells in
            ([c.strip() for c in line.strip("|").split("|")] for line in lines[1:]) if cells[0][:1].isdigit()}
    for number in ("1.", "2.", "2b.", "3.", "3b.", "4.", "4b.", "5.", "5b.", "5c.", "5d.", "6.", "6b.", "6c.",
                   "7.", "7b.", "8.", "9."):
        label = next((k for k in rows if k.startswith(number + " ")), None)
        assert label, f"row {number} missing"
        values = [float(x.replace(",", "")) for x in NUMBER.findall(rows[label][1])]
        assert values and values[0] > 0, f"{label}: {rows[label][1]}"
    assert "failed" not in result.stdout.split("### vaultmem across sizes")[0].lower()

    raw = json.loads(out.read_text())
    vm = raw["results"][0]["tools"]["vaultmem"]
    assert vm["plain"]["outcomes"] == {"added": 40}
    assert not vm["recall"]["sys_path_has_bench_checkout"]
