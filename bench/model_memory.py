"""What the embedding model costs in memory and time under ONNX Runtime's session settings.

    python bench/model_memory.py

One child process per setting (so each RSS is that setting's alone): the RSS the
session adds when it loads, the RSS after one batch of 64 long texts (the most a
batch of notes takes), the time of that batch and of a one-line query. Settings:
graph optimisation level, the CPU memory arena, and constant folding (which is
what turns the int8 model's weights into fp32 ones: the optimised graph's size is
printed too). vaultmem runs EXTENDED without the arena (search/embed.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

SETTINGS = [("extended", True, True), ("extended", False, True), ("basic", False, True), ("all", False, True),
            ("extended", False, False), ("none", False, True)]  # (level, arena, constant folding)
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
                                 "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                 "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                                 "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
opts.enable_cpu_mem_arena = arena
opts.log_severity_level = 3
opts.optimized_model_filepath = out + ".onnx"
base = rss()
session = ort.InferenceSession(str(files.model), sess_options=opts, providers=["CPUExecutionProvider"],
                               disabled_optimizers=[] if folding else ["ConstantFolding"])
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
json.dump({"load_mb": loaded - base, "after_batch_mb": after - base, "batch_ms": batch_ms, "query_ms": query_ms,
           "graph_mb": os.path.getsize(out + ".onnx") / 1e6}, open(out, "w"))
'''


def main() -> int:
    print("| optimisation | arena | constant folding | RSS at load MB | RSS after a batch MB | graph MB "
          "| 64 long texts ms | query ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as work:
        for level, arena, folding in SETTINGS:
            out = os.path.join(work, f"{level}-{arena}-{folding}.json")
            subprocess.run([sys.executable, "-c", CHILD, level, str(int(arena)), str(int(folding)), out], check=True)
            r = json.load(open(out))
            print(f"| {level} | {'on' if arena else 'off'} | {'on' if folding else 'off'} | {r['load_mb']:.0f} "
                  f"| {r['after_batch_mb']:.0f} | {r['graph_mb']:.0f} | {r['batch_ms']:.0f} | {r['query_ms']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
