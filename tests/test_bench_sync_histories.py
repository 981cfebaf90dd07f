"""bench/sync_histories.py end to end on two short histories: its table, the checkout it ran,
no broken chain, and nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.bench
def test_sync_histories_bench_prints_its_table_and_finds_no_broken_chain(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["TMPDIR"] = str(tmp_path)
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "sync_histories.py"), "--histories", "2",
                             "--steps", "12"], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = dict(line.strip("|").split("|")[:2] for line in result.stdout.splitlines()
                if line.startswith("| ") and not line.startswith("| measure"))
    rows = {key.strip(): int(value) for key, value in rows.items()}
    assert rows["syncs"] >= 12 and rows["broken chains"] == 0 and rows["clones differ at the end"] == 0
    assert f"vaultmem from {ROOT}" in result.stdout
    assert [p for p in tmp_path.iterdir() if p.name.startswith("vaultmem-sync-histories-")] == []
