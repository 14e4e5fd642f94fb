#!/usr/bin/env python3
"""Dense Llama 3.x on H100, H200, B200 and GB200 with TensorRT-LLM: servesim's predictions with
the measured-kernel timing against TensorRT-LLM's published max-throughput runs (published.csv).

usage (from the repository root, after `cargo build --release -p servesim_cli`):
  python3 bench/silicon-dense/run.py [--write] [--bin target/release/servesim] [--only 8b|70b|405b]

--write regenerates points/*.yaml (one DynoSim predict file per published point) from
published.csv. Every point is run with `servesim predict`; the error is that of output tokens/s
per GPU (servesim's output throughput ÷ GPUs against the published total ÷ TP). Nothing here is
fitted: the files say what the benchmark ran (model, GPU, TP, checkpoint precision, lengths,
request count, all requests queued at once) and servesim's defaults do the rest.
"""
import csv, json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {"8b": "meta-llama/Meta-Llama-3.1-8B", "70b": "meta-llama/Meta-Llama-3.1-70B", "405b": "meta-llama/Meta-Llama-3.1-405B"}
HARDWARE = {"h100": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "gb200": "gb200"}
# The ModelOpt checkpoints' precision (their hf_quant_config): FP8 weights and activations with
# an FP8 KV cache; NVFP4 weights with an FP8 KV cache.
PRECISION = {"fp8": "{gemm_quant_mode: fp8, kvcache_quant_mode: fp8}", "fp4": "{gemm_quant_mode: nvfp4, kvcache_quant_mode: fp8}"}
# The request counts of the benchmark's datasets, by (ISL, OSL) (the perf overview's table).
REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500, (2048, 128): 3000,
            (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000, (500, 2000): 3000, (20000, 2000): 1000}


def points():
    with open(os.path.join(HERE, "published.csv")) as f:
        rows = [r for r in csv.DictReader(l for l in f if not l.startswith("#"))]
    for r in rows:
        for k in ("tp", "isl", "osl"):
            r[k] = int(r[k])
        r["total_output_tok_s"] = float(r["total_output_tok_s"])
        r["name"] = f"llama-{r['model']}-{r['gpu']}-tp{r['tp']}-{r['precision']}-{r['isl']}-{r['osl']}"
    return rows


def predict_file(p):
    n = REQUESTS[(p["isl"], p["osl"])]
    return f"""# Published: TensorRT-LLM v1.0 perf overview, {p['total_output_tok_s']:.0f} output tokens/s in total ({p['total_output_tok_s'] / p['tp']:.0f} per GPU).
traffic:
  source: {{type: synthetic, input_tokens: {p['isl']}, output_tokens: {p['osl']}}}
  load: {{type: concurrency, concurrency: {n}}}
  stop: {{requests: {n}}}
engine:
  mode: aggregated
  model: {MODELS[p['model']]}
  hardware: {HARDWARE[p['gpu']]}
  backend: trtllm
  workers:
    aggregated:
      parallelism: {{replicas: 1, tensor: {p['tp']}}}
      scheduler: {{max_batched_tokens: 8192, max_sequences: 2048}}
      timing: {PRECISION[p['precision']]}
"""


def main():
    args = sys.argv[1:]
    binary = args[args.index("--bin") + 1] if "--bin" in args else os.path.join(HERE, "../../target/release/servesim")
    only = args[args.index("--only") + 1] if "--only" in args else None
    pts = [p for p in points() if only in (None, p["model"])]
    os.makedirs(os.path.join(HERE, "points"), exist_ok=True)
    if "--write" in args:
        for p in pts:
            with open(os.path.join(HERE, "points", p["name"] + ".yaml"), "w") as f:
                f.write(predict_file(p))
    errs = {}
    print(f"{'point':<42} {'published':>10} {'servesim':>10} {'error':>8}   (output tok/s per GPU)")
    for p in pts:
        path = os.path.join(HERE, "points", p["name"] + ".yaml")
        out = subprocess.run([binary, "predict", path], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{p['name']:<42} failed: {out.stderr.strip()}")
            continue
        s = json.loads(out.stdout)
        ours = s["summary"]["output_throughput_tok_s"] / s["prediction"]["gpus"]
        theirs = p["total_output_tok_s"] / p["tp"]
        e = (ours - theirs) / theirs
        errs.setdefault(p["model"], []).append(e)
        print(f"{p['name']:<42} {theirs:>10.0f} {ours:>10.0f} {100 * e:>+7.1f}%", flush=True)
    print()
    allv = [e for v in errs.values() for e in v]
    for m, v in list(errs.items()) + [("overall", allv)]:
        mae = sum(abs(e) for e in v) / len(v)
        bias = sum(v) / len(v)
        print(f"{m:>8}: {len(v):3} points, mean absolute error {100 * mae:.1f}%, mean signed {100 * bias:+.1f}%")


main()
