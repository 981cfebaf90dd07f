"""A model's graph as ONNX Runtime optimises it, kept in the user's cache folder.

On every load ONNX Runtime folds an int8 model's weights into float32 and fuses its
graph: for the default model that took ~190 ms and left ~210 MB resident (260 MB at
the peak) in every process that embeds, the watcher included. Saved once, with the
weights in a file of their own, the optimised graph loads in ~45 ms and its weights
are mapped from that file (pages the kernel shares between processes) instead of
built again in each. The vectors are the same to the bit (tests/test_embed.py).

The copy is a cache like the vault's indexes: keyed by the model's fingerprint,
ONNX Runtime's version and the machine; one that is missing or fails to load is
made again, and where the cache folder cannot be written the model loads the
plain way. VAULTMEM_MODEL_CACHE names another folder; `off` turns the copy off.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

CACHE_VARIABLE = "VAULTMEM_MODEL_CACHE"
GRAPH = "model.onnx"
WEIGHTS = "weights.data"


def cache_root() -> Path | None:
    """Where prepared models live, or None when the copy is turned off."""
    chosen = os.environ.get(CACHE_VARIABLE, "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen)
    import platformdirs

    return Path(platformdirs.user_cache_dir("vaultmem", appauthor=False)) / "models"


def prepared_session(ort, model_path: Path, fingerprint: str, options: Callable[[], object]):
    """An InferenceSession of `model_path`, from its optimised copy when one can be kept.

    `options()` makes a fresh SessionOptions (threads, arena, logging) for each session
    built here; `fingerprint` identifies the model's content."""
    root = cache_root()
    if root is None:
        return _session(ort, model_path, options(), optimise=True)
    folder = root / f"{fingerprint}-ort{ort.__version__}-{platform.machine()}"
    if not (folder / GRAPH).is_file():
        _prepare(ort, model_path, folder, options)
    if (folder / GRAPH).is_file():
        try:
            return _session(ort, folder / GRAPH, options(), optimise=False)
        except Exception:  # damaged (a disk error, a hand edit): made again next time
            shutil.rmtree(folder, ignore_errors=True)
    return _session(ort, model_path, options(), optimise=True)


def _prepare(ort, model_path: Path, folder: Path, options: Callable[[], object]) -> None:
    """Save the optimised graph into `folder`, whole or not at all (a temp folder renamed into place)."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    except OSError:
        return  # no cache to write to: the plain way
    try:
        opts = options()
        opts.optimized_model_filepath = str(work / GRAPH)
        opts.add_session_config_entry("session.optimized_model_external_initializers_file_name", WEIGHTS)
        opts.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        _session(ort, model_path, opts, optimise=True)
        os.rename(work, folder)
    except Exception:  # another process prepared it first (the folder exists), a full disk, an odd model
        pass
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _session(ort, path: Path, opts, optimise: bool):
    # EXTENDED runs as fast as ALL here (ALL adds layouts tied to this CPU) and builds in ~2/3 the time.
    opts.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED if optimise
                                     else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
