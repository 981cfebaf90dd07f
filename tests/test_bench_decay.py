"""bench/decay.py end to end on a tiny vault: both arms measured, every note rewritten, and
the `--before` arm really runs the other checkout (its children start outside the
repository, where `python -c` would otherwise import this checkout's package first)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.bench
@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="--before needs the git history")
def test_decay_bench_measures_both_checkouts_and_rewrites_every_note(tmp_path):
    out = tmp_path / "rows.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "decay.py"), "--sizes", "60", "--runs", "1",
                             "--before", "HEAD", "--work-dir", str(tmp_path), "--json", str(out)],
                            capture_output=True, text=True, env=env, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert [row["code"] for row in rows] == ["before (HEAD)", "this checkout"]
    assert all(row["changed"] == 60 and row["wall_s"] > 0 and row["user_s"] > 0 for row in rows)
    before, this = (Path(row["imported_from"]) for row in rows)
    assert this == ROOT / "vaultmem" and before != this and not before.is_relative_to(ROOT)
    table = [line for line in result.stdout.splitlines() if line.startswith("| 60 |")]
    assert len(table) == 2
    assert [p for p in tmp_path.iterdir() if p.name.startswith("vaultmem-decay-")] == []  # its vaults removed
