#!/usr/bin/env python3
"""Differential fuzzing of the TRT-LLM scheduler shape (`backend: "trtllm"`, guaranteed no
evict) against the reference (../shared/oracle): random traces through the reference and
through `servesim replay`, compared request by request. Run it with the reference's python:

  DYN_LOG=error DIR/bin/python scripts/diff-fuzz-trtllm.py --bin target/release/servesim \
      [--cases 300] [--seed 1] [--keep DIR] [--max-diffs 5]

Each case draws a size (`small`: 1-8 requests of up to 160 tokens, as the shared
diff-fuzz.py; `wide`: 5-60 requests of up to 1500 tokens), pools from tight (outputs clamped
to the pool, prompts rejected) to roomy, block sizes 8-64 or the default (32), budgets,
max_num_seqs, chunked prefill and prefix caching on and off, max_model_len, speed-ups,
fixed and NPZ timing, 1-3 round-robin workers and DP ranks. Prompts often repeat whole
shared blocks and are often block-aligned, so whole-prompt cache hits happen. A mismatching
case is kept with the reference's figures (`servesim replay` and compare.py reproduce it);
cases the reference aborts or never finishes are counted and skipped (SHOWERR=1 says why)."""
import argparse, json, multiprocessing, os, random, shutil, subprocess, sys, tempfile
from collections import defaultdict
from dynamo.replay import run_trace_replay

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--cases", type=int, default=300)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--keep", default="trt-diffs")
ap.add_argument("--max-diffs", type=int, default=5)
ap.add_argument("--keep-all", help="also keep every compared case, with the reference's figures, here")
a = ap.parse_args()
rng = random.Random(a.seed)
NPZ = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "conformance", "profiles", "profile-a.npz")


def trace(size):
    shared = [rng.randint(1, 10**6) for _ in range(12)]
    rows, t = [], 0.0
    small = size == "small"
    gap = 60.0 if small else rng.choice([0.0, 5.0, 20.0, 80.0, 300.0])
    for _ in range(rng.randint(1, 8) if small else rng.randint(5, 60)):
        top = 160 if small else rng.choice([160, 600, 1500])
        n = rng.randint(1, top)
        if rng.random() < 0.3:  # block-aligned: a fully cached prompt is a whole hit
            n = max(16, n // 16 * 16)
        blocks = (n + 15) // 16
        k = rng.randint(1, min(blocks, len(shared))) if rng.random() < 0.5 else 0
        ids = shared[:k] + [rng.randint(10**6, 10**9) for _ in range(blocks - k)]
        t += rng.choice([0.0, 0.0, round(rng.uniform(0, gap), 3), float(rng.randint(0, int(gap) + 1))])
        out = rng.randint(1, 40) if small else rng.randint(1, rng.choice([10, 60, 200, 600]))
        rows.append({"timestamp": t, "input_length": n, "output_length": out, "hash_ids": ids})
    return rows


def engine(rows):
    eng = {"backend": "trtllm"}
    bs = rng.choice([None, 8, 16, 32, 64])
    if bs:
        eng["block_size"] = bs
    bs = bs or 32
    # Pool from tight (below the largest prompt + output: outputs clamped, prompts rejected)
    # to roomy.
    biggest = max(r["input_length"] + r["output_length"] for r in rows)
    scale = rng.choice([0.5, 0.8, 1.0, 1.3, 2.0, 4.0, 20.0])
    eng["num_gpu_blocks"] = max(1, int(biggest * scale) // bs)
    if rng.random() < 0.4:
        eng["max_num_batched_tokens"] = rng.choice([16, 32, 64, 256, 512, 2048, 8192])
    if rng.random() < 0.3:
        eng["max_num_seqs"] = rng.randint(1, 6)
    if rng.random() < 0.2:
        eng["enable_prefix_caching"] = False
    if rng.random() < 0.15:
        eng["enable_chunked_prefill"] = False
    if rng.random() < 0.15:
        eng["max_model_len"] = rng.randint(16, max(17, biggest + 8))
    if rng.random() < 0.2:
        eng["speedup_ratio"] = rng.choice([0.5, 2.0, 3.0])
    if rng.random() < 0.2:
        eng["decode_speedup_ratio"] = rng.choice([1.5, 4.0])
    if rng.random() < 0.15:
        eng["preemption_mode"] = "fifo"  # accepted, never used
    if rng.random() < 0.2:
        eng["trtllm"] = {"capacity_scheduler_policy": "guaranteed_no_evict"}
    r = rng.random()
    if r < 0.15:
        eng["timing_model"] = {"type": "fixed", "prefill_ms": rng.choice([5.0, 30.0, 12.5]), "decode_ms": rng.choice([1.0, 8.0, 3.3])}
    elif r < 0.3:
        eng["timing_model"] = {"type": "external", "provider": "dynamo_profile", "config": {"path": NPZ}}
    return eng


def random_case():
    size = rng.choice(["small", "small", "wide"])
    rows = trace(size)
    replay = {"trace_block_size": 16, "extra_engine_args": {"engine": engine(rows)}}
    if rng.random() < 0.4:
        replay["num_workers"] = rng.randint(2, 3)
        replay["router_mode"] = "round_robin"
    if rng.random() < 0.25:
        replay["extra_engine_args"]["dp_size"] = rng.randint(2, 3)
    if rng.random() < 0.2:
        replay["arrival_speedup_ratio"] = rng.choice([0.5, 2.0, 3.0])
    return size, rows, replay


def reference_rows(trace, replay, lines):
    rep = run_trace_replay([trace], capture_per_request=True, **replay)
    t0 = min(l["timestamp"] for l in lines)
    speed = replay.get("arrival_speedup_ratio", 1.0)
    # Records are matched to trace lines by lengths and the nearest arrival (rounding the
    # arrival to a key splits near-ties such as 40.215 ms), earliest admission first.
    pool = defaultdict(list)
    for r in sorted(rep.per_request, key=lambda r: (r["arrival_time_ms"], r["first_admit_ms"] or 0)):
        pool[(r["input_length"], r["requested_output_length"])].append(r)
    rows = []
    for l in lines:
        cands = pool[(l["input_length"], l["output_length"])]
        at = (l["timestamp"] - t0) / speed
        k = min(range(len(cands)), key=lambda k: abs(cands[k]["arrival_time_ms"] - at))
        r = cands.pop(k)
        rows.append([r["first_token_ms"], r["terminal_time_ms"], r["output_length"], r["reused_input_tokens"], r["readmission_count"]])
    return rep.summary, rows


def same_time(x, y):
    # None: no token (a rejected request)
    return x is None and y is None or x is not None and y is not None and abs(x - y) <= 1e-6


os.makedirs(a.keep, exist_ok=True)
tmp = tempfile.mkdtemp()
pool = multiprocessing.get_context("fork").Pool(1)
stats = defaultdict(lambda: [0, 0, 0])
hits = defaultdict(int)
bad = 0
for i in range(a.cases):
    size, lines, replay = random_case()
    trace_path, case = os.path.join(tmp, "t.jsonl"), os.path.join(tmp, "case.json")
    with open(trace_path, "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
    try:  # in a forked worker: on some inputs the reference never returns
        summary, ref = pool.apply_async(reference_rows, (trace_path, replay, lines)).get(timeout=40)
    except multiprocessing.TimeoutError:
        pool.terminate()
        pool = multiprocessing.get_context("fork").Pool(1)
        stats[size][2] += 1
        continue
    except Exception as e:
        if os.environ.get("SHOWERR"):
            print("SKIP", size, repr(e)[:300], flush=True)
            skip = os.path.join(a.keep, f"skipped-{a.seed}-{i}")
            os.makedirs(skip, exist_ok=True)
            shutil.copy(trace_path, skip)
            json.dump({"name": f"trt-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay}, open(os.path.join(skip, "case.json"), "w"))
        stats[size][2] += 1
        continue
    json.dump({"name": f"trt-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay}, open(case, "w"))
    out = subprocess.run([a.bin, "replay", case], capture_output=True, text=True, timeout=60)
    stats[size][0] += 1
    why = None
    if out.returncode:
        why = "servesim failed: " + out.stderr.strip()[-300:]
    else:
        got = json.loads(out.stdout).get("per_request", [])
        for j, (r, g) in enumerate(zip(ref, got + [None] * len(ref))):
            if g is None or not all(same_time(x, y) for x, y in zip(r[:2], g[:2])) or list(r[2:]) != list(g[2:5]):
                why = f"request {j} (trace line {j + 1}): reference {r}, servesim {g}"
                break
    # What the case exercised, from the reference's rows.
    for line, r in zip(lines, ref):
        hits["rejected"] += r[0] is None
        hits["output clamped"] += r[0] is not None and r[2] < line["output_length"]
        hits["whole prompt reused"] += r[3] == line["input_length"]
    if a.keep_all:
        keep = os.path.join(a.keep_all, f"trt-{a.seed}-{i}")
        os.makedirs(keep, exist_ok=True)
        shutil.copy(trace_path, keep)
        json.dump({"name": f"trt-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay, "expected": summary,
                   "per_request": ref}, open(os.path.join(keep, "case.json"), "w"), indent=1)
    if why:
        bad += 1
        stats[size][1] += 1
        keep = os.path.join(a.keep, f"trt-{a.seed}-{i}")
        os.makedirs(keep, exist_ok=True)
        shutil.copy(trace_path, keep)
        json.dump({"name": f"trt-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay, "expected": summary,
                   "per_request": ref}, open(os.path.join(keep, "case.json"), "w"), indent=1)
        print(f"DIFF [{size}] {keep}/case.json: {why}", flush=True)
        if bad >= a.max_diffs:
            break
pool.terminate()
for k, (c, b, s) in sorted(stats.items()):
    print(f"{k}: {c} compared, {b} differ, {s} skipped (the reference aborted or never returned)")
print("requests:", ", ".join(f"{k} {v}" for k, v in sorted(hits.items())))
shutil.rmtree(tmp)
sys.exit(1 if bad else 0)
