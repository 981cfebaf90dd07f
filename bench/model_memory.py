"""What the embedding model costs in memory and time under ONNX Runtime's session settings.

    python bench/model_memory.py

One child process per setting (so each RSS is that setting's alone): the RSS the
session adds when it loads, the RSS after one batch of 64 long texts (the most a
batch of notes takes), the time of that batch and of a one-line query. Settings:
graph optimisation level, the CPU memory arena, and constant folding (which is
what turns the int8 model's weights into fp32 ones: the optimised graph's size is
printed too). vaultmem runs EXTENDED without the arena, and loads the graph from
the copy ORT saved once with its weights in a file of their own (the last row,
"prepared": search/prepared_model.py; the copy is made by an unreported first run
in a temp cache folder, and the row is the second process's load).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

SETTINGS = [("extended", True, True), ("extended", False, True), ("basic", False, True), ("all", False, True),
            ("extended", False, False), ("none", False, True), ("prepared", False, True)]  # (level, arena, folding)
CHILD = r'''
import json, os, re, sys, time
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer
from vaultmem.search.embed import resolve_model_dir

def rss():
    return int(re.search(r"VmRSS:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024

level, arena, folding, out = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4]
files = resolve_model_dir(None)
tok = Tokenizer.from_file(str(files.tokenizer))
tok.enable_padding()
tok.enable_truncation(256)
opts = ort.SessionOptions()
opts.intra_op_num_threads, opts.inter_op_num_threads = os.cpu_count() or 1, 1
opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
opts.graph_optimization_level = {"none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                                 "prepared": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                                 "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                 "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                                 "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
opts.enable_cpu_mem_arena = arena
opts.log_severity_level = 3
base = rss()
started = time.perf_counter()
if level == "prepared":
    from vaultmem.search.embed import _fingerprint
    from vaultmem.search.prepared_model import GRAPH, WEIGHTS, cache_root, prepared_session

    def options():
        fresh = ort.SessionOptions()
        fresh.intra_op_num_threads, fresh.inter_op_num_threads = os.cpu_count() or 1, 1
        fresh.enable_cpu_mem_arena, fresh.log_severity_level = False, 3
        return fresh

    session = prepared_session(ort, files.model, _fingerprint(files.model, files.tokenizer, "onnxruntime-extended"),
                               options)
    folder = next(cache_root().iterdir())
    graph_bytes = os.path.getsize(folder / GRAPH) + os.path.getsize(folder / WEIGHTS)
else:
    session = ort.InferenceSession(str(files.model), sess_options=opts, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=[] if folding else ["ConstantFolding"])
load_ms = (time.perf_counter() - started) * 1000
loaded = rss()
names = {i.name for i in session.get_inputs()}

def run(texts):
    enc = tok.encode_batch(texts)
    feed = {"input_ids": np.array([e.ids for e in enc], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64)}
    if "token_type_ids" in names:
        feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
    session.run(None, feed)

run(["warm up"])
long = ["The staging database runs Postgres 16 on port 5433, and backups go to the Frankfurt bucket nightly. " * 3] * 64
t = time.perf_counter(); run(long); batch_ms = (time.perf_counter() - t) * 1000
after = rss()
t = time.perf_counter()
for _ in range(20):
    run(["which port does the staging database listen on"])
query_ms = (time.perf_counter() - t) / 20 * 1000
if level != "prepared":  # the optimised graph's size: saved by a second session, after the measurements
    opts.optimized_model_filepath = out + ".onnx"
    ort.InferenceSession(str(files.model), sess_options=opts, providers=["CPUExecutionProvider"],
                         disabled_optimizers=[] if folding else ["ConstantFolding"])
    graph_bytes = os.path.getsize(out + ".onnx")
json.dump({"load_mb": loaded - base, "after_batch_mb": after - base, "batch_ms": batch_ms, "query_ms": query_ms,
           "graph_mb": graph_bytes / 1e6, "load_ms": load_ms}, open(out, "w"))
'''


def main() -> int:
    print("| optimisation | arena | constant folding | load ms | RSS at load MB | RSS after a batch MB | graph MB "
          "| 64 long texts ms | query ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as work:
        env = dict(os.environ, VAULTMEM_MODEL_CACHE=os.path.join(work, "models"))
        for level, arena, folding in SETTINGS:
            out = os.path.join(work, f"{level}-{arena}-{folding}.json")
            for _run in range(2 if level == "prepared" else 1):  # the first makes the copy
                subprocess.run([sys.executable, "-c", CHILD, level, str(int(arena)), str(int(folding)), out],
                               check=True, env=env)
            r = json.load(open(out))
            print(f"| {level} | {'on' if arena else 'off'} | {'on' if folding else 'off'} | {r['load_ms']:.0f} "
                  f"| {r['load_mb']:.0f} | {r['after_batch_mb']:.0f} | {r['graph_mb']:.0f} | {r['batch_ms']:.0f} "
                  f"| {r['query_ms']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
