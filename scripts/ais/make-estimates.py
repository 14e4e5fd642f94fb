#!/usr/bin/env python3
"""Writes tests/ais/estimates/*.jsonl: the reference estimator's milliseconds for random
single passes (estimate.py --mocker), which CI checks servesim against bit for bit.
Run with the AIS oracle's python; it needs the oracle (../shared/oracle/ais)."""
import json, os, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module
ce = import_module("compare-estimate")

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "../../tests/ais/estimates")
SETS = [
    ("Qwen/Qwen3-32B", "h200_sxm", "vllm", 1, {}),
    ("meta-llama/Meta-Llama-3.1-70B", "h100_sxm", "trtllm", 4, {}),
    ("meta-llama/Meta-Llama-3.1-8B", "b200_sxm", "sglang", 1, {"kvcache": "fp8"}),
    ("nvidia/Llama-3.1-70B-Instruct-FP8", "gb200", "vllm", 8, {}),
    ("Qwen/Qwen3-8B", "l40s", "trtllm", 2, {"gemm": "fp8_block"}),
    ("meta-llama/Meta-Llama-3.1-405B", "gb300", "sglang", 8, {"gemm": "nvfp4"}),
]
for i, (model, system, backend, tp, q) in enumerate(SETS):
    qs = ce.queries(60, 100 + i)
    cmd = [ce.PY, os.path.join(ce.ORACLE, "estimate.py"), "--model", model, "--system", system, "--backend", backend, "--tp", str(tp), "--mocker", "-"]
    for k, v in q.items():
        cmd += ["--" + k, v]
    out = subprocess.run(cmd, input="".join(json.dumps(x) + "\n" for x in qs), capture_output=True, text=True, cwd=ce.ORACLE,
                         env={**os.environ, "DYN_LOG": "error"}).stdout.splitlines()
    tm = {"type": "ais", "model": model, "system": system, "tp": tp,
          **{{"gemm": "gemm_quant_mode", "kvcache": "kvcache_quant_mode"}[k]: v for k, v in q.items()}}
    name = f"{system}-{backend}-{model.split('/')[-1]}-tp{tp}".lower()
    with open(os.path.join(OUT, name + ".jsonl"), "w") as f:
        f.write(json.dumps({"engine": {"backend": backend, "timing_model": tm}, "source": "estimate.py --mocker (aisimulate-core 0.13.0 on aiconfigurator-core 0.12.0)"}) + "\n")
        for line in out:
            f.write(line + "\n")
    print(name, len(out))
