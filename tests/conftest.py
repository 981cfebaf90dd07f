"""Shared fixtures: real temp vaults, a pinned clock, and two ways to run the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from vaultmem.cli.main import cli
from vaultmem.store.catalog import Catalog
from vaultmem.vault import Vault, init_vault

# A note a writer hands the catalog in place of its file's parse (a new or rewritten
# note's row) is checked against that parse, in every test that writes one in this process.
Catalog.check_known_notes = True

# Let pytest keep the test modules it rewrites (and the hypothesis and anyio modules it rewrites
# as plugins' code) in __pycache__: with PYTHONDONTWRITEBYTECODE set (as on CI) each worker
# rewrote and compiled ~160 modules again on every run, 3-5 s before the first test. Only this
# process: the `vaultmem` processes the tests start still inherit the variable.
sys.dont_write_bytecode = False

# Temp folders (tmp_path, and those of the processes the tests start) in memory when the run does
# not choose its own TMPDIR: every note vaultmem writes is fsynced, file and folder, and on a disk
# those waits were more than half the time of test_bm25_arrays, test_reliability and test_catalog
# (tmpfs makes an fsync free, as obsidian_vectors.py does for its scratch vaults). The workers
# pytest -n starts inherit it. Only with room to spare: a run leaves ~0.5 GB (copies of the model
# among it), pytest keeps the last three runs', and a container's /dev/shm is often 64 MB.
SHM, SHM_NEEDED = "/dev/shm", 4 * 1024 ** 3


def _shm_free() -> int:
    try:
        stat = os.statvfs(SHM)
    except OSError:
        return 0
    return stat.f_bavail * stat.f_frsize if os.access(SHM, os.W_OK | os.X_OK) else 0


if "TMPDIR" not in os.environ and _shm_free() >= SHM_NEEDED:
    os.environ["TMPDIR"] = SHM
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again

T0 = "2026-01-05T09:00:00"
# The model tests run with unless marked `real_model`: the cheap stand-in. To run
# the whole suite on the real model: VAULTMEM_TEST_MODEL=default pytest
TEST_MODEL = os.environ.get("VAULTMEM_TEST_MODEL", "stand-in")


def pytest_collection_modifyitems(items):
    """Tests marked `slow` first: with several workers (make test runs pytest -n), a long test
    started last would keep one worker busy after the others ran out of work."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True, scope="session")
def model_cache(tmp_path_factory):
    """Prepared models (search/prepared_model.py) go to a folder of this run's, not the
    user's cache; each test process makes the default model's copy once."""
    os.environ["VAULTMEM_MODEL_CACHE"] = str(tmp_path_factory.mktemp("model-cache"))


@pytest.fixture(autouse=True)
def isolated_env(request, tmp_path, monkeypatch):
    """No test sees the user's vault, data dir, clock or model choice.

    Tests embed with the cheap deterministic stand-in (VAULTMEM_MODEL=stand-in,
    inherited by the subprocesses they start); a test marked `real_model` gets
    the packaged default model: mark every test that checks what recall or
    similarity finds.
    """
    monkeypatch.delenv("VAULTMEM_VAULT", raising=False)
    if request.node.get_closest_marker("real_model"):
        monkeypatch.delenv("VAULTMEM_MODEL", raising=False)
        _share_the_default_model(monkeypatch)
    else:
        monkeypatch.setenv("VAULTMEM_MODEL", TEST_MODEL)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("VAULTMEM_NOW", T0)
    monkeypatch.setenv("VAULTMEM_AUTOWATCH", "off")  # tests that want the hook to start a watcher say so
    monkeypatch.setenv("VAULTMEM_AUTODECAY", "off")  # ... or a background decay
    yield
    _forget_engines()


_DEFAULT_MODELS: dict = {}


def _share_the_default_model(monkeypatch) -> None:
    """The recall engines of a `real_model` test get the packaged model this process loaded
    already: the same files give the same vectors, and loading them again for each of the ~60
    tests cost ~0.1 s each. Only the engine's load is shared (keyed by the prepared-model folder
    in use); test_embed.py calls load_embedder itself and still loads, prepares and repairs the
    model every time, and a `vaultmem` process loads its own."""
    from vaultmem.search import embed

    load = embed.load_embedder

    def shared(spec=None):
        if spec not in (None, "default"):
            return load(spec)
        key = os.environ.get("VAULTMEM_MODEL_CACHE")
        if key not in _DEFAULT_MODELS:
            _DEFAULT_MODELS[key] = load(spec)
        return _DEFAULT_MODELS[key]

    monkeypatch.setattr(embed, "load_embedder", shared)

    # The same for the cross-lingual model (USE, ~1.2 s of CPU a load): one per test process, for
    # the engines of `real_model` tests. Loading it for real is still done by the first test of
    # each process and by every `vaultmem` or `python -c` process a test starts
    # (test_crosslingual.py, test_crosslingual_fill.py); a test that makes it unavailable
    # monkeypatches load_crosslingual after this.
    from vaultmem.search import crosslingual

    load_crosslingual = crosslingual.load_crosslingual

    def shared_crosslingual():
        if "crosslingual" not in _DEFAULT_MODELS:
            _DEFAULT_MODELS["crosslingual"] = load_crosslingual()
        return _DEFAULT_MODELS["crosslingual"]

    monkeypatch.setattr(crosslingual, "load_crosslingual", shared_crosslingual)


def _forget_engines() -> None:
    """Close the recall engines this test's vaults left in the process-wide cache (each holds a
    catalog connection and index files: over a whole run they passed select()'s 1024 descriptors)."""
    engine_module = sys.modules.get("vaultmem.search.engine")
    if engine_module is None:
        return
    for engine in engine_module._ENGINES.values():
        engine.vault.forget_catalog()
    engine_module._ENGINES.clear()


@pytest.fixture
def vault_dir(tmp_path) -> Path:
    root = tmp_path / "vault"
    init_vault(root)
    return root


@pytest.fixture
def vault(vault_dir) -> Vault:
    return Vault(vault_dir)


class Cli:
    """Runs `vaultmem` in-process through click's runner, on one vault."""

    def __init__(self, vault_dir: Path):
        self.vault_dir = vault_dir
        self.runner = CliRunner()

    def __call__(self, *args, expect: int = 0, now: str | None = None):
        env = {"VAULTMEM_NOW": now} if now else {}
        result = self.runner.invoke(cli, ["--vault", str(self.vault_dir), *args], env=env, catch_exceptions=False)
        assert result.exit_code == expect, f"exit {result.exit_code}: {result.output}"
        return result

    def json(self, *args, now: str | None = None):
        return json.loads(self(*args, "--json", now=now).stdout)


@pytest.fixture
def run(vault_dir) -> Cli:
    return Cli(vault_dir)


def run_process(*args, cwd=None, env=None, check=True) -> subprocess.CompletedProcess:
    """Runs the real `vaultmem` entry point in a new process."""
    full_env = dict(os.environ, **(env or {}))
    result = subprocess.run([sys.executable, "-m", "vaultmem", *args], cwd=cwd, env=full_env,
                            capture_output=True, text=True, timeout=120)
    if check:
        assert result.returncode == 0, result.stderr
    return result
