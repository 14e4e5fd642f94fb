#!/usr/bin/env python3
"""Differential fuzzing against the reference (../shared/oracle), wider than its diff-fuzz.py:
random traces of 5-60 requests (prompts up to 1500 tokens, shared prefixes), one engine
(`agg`), round-robin clusters with DP ranks (`cluster`), or prefill/decode pools (`disagg`),
with polynomial, fixed or NPZ-profile timing. Run it with the reference's python:

  DYN_LOG=error DIR/bin/python scripts/diff-fuzz-wide.py --bin target/release/servesim \
      [--cases 100] [--seed 1] [--kinds agg,cluster,disagg] [--keep DIR]

Environment: BACKEND=vllm|sglang fixes the backend; BIGDECODE=1 gives decode pools room
(decode-side KV pressure is where servesim still differs). Mismatches are kept as case files
(the reference's figures included) for `servesim replay` and compare.py; SHOWERR=1 prints why
the reference failed on the cases it skips."""
import argparse, json, multiprocessing, os, random, shutil, subprocess, sys, tempfile
from collections import defaultdict, deque
from dynamo.replay import run_trace_replay
ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True); ap.add_argument("--cases", type=int, default=100)
ap.add_argument("--seed", type=int, default=1); ap.add_argument("--keep", default="bf-diffs")
ap.add_argument("--kinds", default="agg,cluster,disagg")
ap.add_argument("--max-diffs", type=int, default=5)
a = ap.parse_args(); rng = random.Random(a.seed)
NPZ = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "conformance", "profiles", "profile-a.npz")

def engine(backend, role=None):
    bs = rng.choice([8, 16, 32, 64]) if backend == "vllm" else rng.choice([1, 4, 16, 32])
    eng = {"backend": backend, "block_size": bs, "num_gpu_blocks": max(4, rng.randint(20, 400) * 16 // bs)}
    if rng.random() < 0.4: eng["max_num_batched_tokens"] = rng.choice([32, 64, 256, 512, 2048, 8192])
    if rng.random() < 0.3: eng["max_num_seqs"] = rng.randint(1, 16)
    if rng.random() < 0.15: eng["enable_prefix_caching"] = False
    if rng.random() < 0.2: eng["speedup_ratio"] = rng.choice([0.5, 2.0, 3.0])
    if rng.random() < 0.2: eng["decode_speedup_ratio"] = rng.choice([1.5, 4.0])
    r = rng.random()
    if r < 0.2: eng["timing_model"] = {"type": "fixed", "prefill_ms": rng.choice([5.0, 30.0, 12.5]), "decode_ms": rng.choice([1.0, 8.0, 3.3])}
    elif r < 0.45: eng["timing_model"] = {"type": "external", "provider": "dynamo_profile", "config": {"path": NPZ}}
    if backend == "vllm":
        if rng.random() < 0.2: eng["enable_chunked_prefill"] = False
        if rng.random() < 0.4: eng["preemption_mode"] = "fifo"
    else:
        sg = {}
        if rng.random() < 0.5: sg["schedule_policy"] = "lpm"
        if rng.random() < 0.3: sg["chunked_prefill_size"] = rng.choice([16, 64, 256])
        if rng.random() < 0.3: sg["max_prefill_tokens"] = rng.choice([64, 256, 1024])
        if rng.random() < 0.2: sg["schedule_conservativeness"] = rng.choice([0.3, 0.7, 1.5])
        if sg: eng["sglang"] = sg
    if role: eng["worker_type"] = role
    return eng

def random_case(kind):
    shared = [rng.randint(1, 10**6) for _ in range(12)]
    rows, t = [], 0.0
    n_req = rng.randint(5, 60)
    gap = rng.choice([0.0, 5.0, 20.0, 80.0, 300.0])
    for _ in range(n_req):
        n = rng.randint(1, rng.choice([160, 600, 1500]))
        blocks = (n + 15) // 16
        k = rng.randint(1, min(blocks, len(shared))) if rng.random() < 0.5 else 0
        ids = shared[:k] + [rng.randint(10**6, 10**9) for _ in range(blocks - k)]
        t += rng.choice([0.0, round(rng.uniform(0, gap), 3), float(rng.randint(0, int(gap) + 1))])
        rows.append({"timestamp": t, "input_length": n, "output_length": rng.randint(1, rng.choice([10, 60, 200])), "hash_ids": ids})
    backend = os.environ.get("BACKEND") or rng.choice(["vllm", "sglang"])
    replay = {"trace_block_size": 16}
    if kind == "agg":
        replay["extra_engine_args"] = {"engine": engine(backend)}
    elif kind == "cluster":
        replay["extra_engine_args"] = {"engine": engine(backend)}
        replay["num_workers"] = rng.randint(1, 8); replay["router_mode"] = "round_robin"
        if rng.random() < 0.5: replay["extra_engine_args"]["dp_size"] = rng.randint(2, 3)
    else:
        p, d = engine(backend, "prefill"), engine(backend, "decode")
        d["block_size"] = p["block_size"]
        if os.environ.get("BIGDECODE"): d["num_gpu_blocks"] = 100000 // d["block_size"]
        bw = rng.choice([0.0, 1.0, 8.0, 64.0]); kvb = rng.choice([16384, 131072, 524288])
        for e in (p, d):
            e["kv_transfer_bandwidth"] = bw; e["kv_bytes_per_token"] = kvb
        if rng.random() < 0.3:
            p["kv_transfer_timing_mode"] = "destination_missing"
        replay.update(num_prefill_workers=rng.randint(1, 3), num_decode_workers=rng.randint(1, 3),
                      prefill_engine_args={"engine": p}, decode_engine_args={"engine": d})
    if rng.random() < 0.2: replay["arrival_speedup_ratio"] = rng.choice([0.5, 2.0, 3.0])
    return rows, replay

def reference_rows(trace, replay, lines):
    rep = run_trace_replay([trace], capture_per_request=True, **replay)
    t0 = min(l["timestamp"] for l in lines); speed = replay.get("arrival_speedup_ratio", 1.0)
    pool = defaultdict(deque)
    for r in sorted(rep.per_request, key=lambda r: (r["arrival_time_ms"], r["first_admit_ms"] or 0)):
        pool[(round(r["arrival_time_ms"], 2), r["input_length"], r["requested_output_length"])].append(r)
    rows = []
    for l in lines:
        r = pool[(round((l["timestamp"] - t0) / speed, 2), l["input_length"], l["output_length"])].popleft()
        rows.append([r["first_token_ms"], r["terminal_time_ms"], r["output_length"], r["reused_input_tokens"], r["readmission_count"]])
    return rep.summary, rows

def same_time(x, y):
    return x is None and y is None or x is not None and y is not None and abs(x - y) <= 1e-6

os.makedirs(a.keep, exist_ok=True); tmp = tempfile.mkdtemp()
pool = multiprocessing.get_context("fork").Pool(1)
kinds = a.kinds.split(","); stats = defaultdict(lambda: [0, 0, 0])
bad = 0
for i in range(a.cases):
    kind = kinds[i % len(kinds)]
    lines, replay = random_case(kind)
    trace, case = os.path.join(tmp, "t.jsonl"), os.path.join(tmp, "case.json")
    with open(trace, "w") as f: f.write("".join(json.dumps(l) + "\n" for l in lines))
    try:
        summary, ref = pool.apply_async(reference_rows, (trace, replay, lines)).get(timeout=40)
    except multiprocessing.TimeoutError:
        pool.terminate(); pool = multiprocessing.get_context("fork").Pool(1); stats[kind][2] += 1; continue
    except Exception as e:
        if os.environ.get("SHOWERR"): print("SKIP", kind, repr(e)[:300], flush=True)
        stats[kind][2] += 1; continue
    json.dump({"name": f"bf-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay}, open(case, "w"))
    out = subprocess.run([a.bin, "replay", case], capture_output=True, text=True, timeout=60)
    stats[kind][0] += 1
    why = None
    if out.returncode: why = "servesim failed: " + out.stderr.strip()[-300:]
    else:
        got = json.loads(out.stdout).get("per_request", [])
        for j, (r, g) in enumerate(zip(ref, got + [None] * len(ref))):
            if g is None or not all(same_time(x, y) for x, y in zip(r[:2], g[:2])) or list(r[2:]) != list(g[2:5]):
                why = f"request {j}: reference {r}, servesim {g}"; break
    if why:
        bad += 1; stats[kind][1] += 1
        keep = os.path.join(a.keep, f"bf-{a.seed}-{i}"); os.makedirs(keep, exist_ok=True)
        shutil.copy(trace, keep)
        json.dump({"name": f"bf-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay, "expected": summary,
                   "per_request": ref}, open(os.path.join(keep, "case.json"), "w"), indent=1)
        print(f"DIFF [{kind}] {keep}/case.json: {why}", flush=True)
        if bad >= a.max_diffs: break
pool.terminate()
for k, (c, b, s) in stats.items(): print(f"{k}: {c} compared, {b} differ, {s} skipped")
shutil.rmtree(tmp); sys.exit(1 if bad else 0)
