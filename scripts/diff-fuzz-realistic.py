#!/usr/bin/env python3
"""Differential fuzzing against the reference (../shared/oracle) on realistic traces: each case
is a gen_trace.py trace of 100-500 requests (1-50 requests/s, 0-20 shared-prefix groups, prompts
up to about 8k tokens, 16-, 64- or 512-token trace blocks, sometimes bursts) under
conformance-like settings: one vLLM or SGLang engine, round-robin clusters of 2-8 workers, DP
ranks, or prefill/decode pools (1-3 each, 0-64 GB/s, full_prompt or destination_missing),
polynomial, fixed or NPZ timing, pools from roomy to tight. The reference writes its figures
into each case (replay.py --write) and compare.py judges servesim's answer.

  python3 scripts/diff-fuzz-realistic.py SEED CASES BIN OUT_DIR

Environment: REF_PYTHON (the reference's python; default ../oracle-venv/bin/python next to the
repository), ORACLE (default ../shared/oracle), KINDS (comma list of vllm, sglang, rr, dp,
disagg, sgdisagg; repeats weight the draw). Every case stays in OUT_DIR/cSEED-i/ (trace,
case with the reference's figures, servesim's answer); one line per case is printed."""
import json, os, random, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
seed, n_cases, binp, out = int(sys.argv[1]), int(sys.argv[2]), os.path.abspath(sys.argv[3]), sys.argv[4]
oracle = os.environ.get("ORACLE", os.path.join(root, "..", "shared", "oracle"))
ref_python = os.environ.get("REF_PYTHON", os.path.join(root, "..", "oracle-venv", "bin", "python"))
kinds = os.environ.get("KINDS", "vllm,vllm,sglang,sglang,rr,dp,disagg,sgdisagg").split(",")
npz = os.path.join(root, "tests", "conformance", "profiles", "profile-a.npz")
rng = random.Random(seed)
os.makedirs(out, exist_ok=True)
env = dict(os.environ, DYN_LOG="error")


def engine(backend, pressure):
    bs = rng.choice([16, 16, 32, 64]) if backend == "vllm" else rng.choice([16, 16, 32, 1, 4])
    pool_tokens = rng.choice([20000, 50000, 100000, 400000]) if pressure else 1_000_000
    e = {"block_size": bs, "num_gpu_blocks": pool_tokens // bs}
    if backend == "sglang":
        e["backend"] = "sglang"
    if rng.random() < 0.3: e["max_num_batched_tokens"] = rng.choice([512, 2048, 4096, 16384])
    if rng.random() < 0.3: e["max_num_seqs"] = rng.choice([8, 32, 64, 256])
    if rng.random() < 0.15: e["enable_prefix_caching"] = False
    if rng.random() < 0.2: e["speedup_ratio"] = rng.choice([0.5, 2.0, 5.0])
    if rng.random() < 0.15: e["decode_speedup_ratio"] = rng.choice([1.5, 3.0])
    r = rng.random()
    if r < 0.15:
        e["timing_model"] = {"type": "fixed", "prefill_ms": rng.choice([5.0, 30.0]), "decode_ms": rng.choice([2.0, 8.0])}
    elif r < 0.35:
        e["timing_model"] = {"type": "external", "provider": "dynamo_profile", "config": {"path": npz}}
    if backend == "vllm":
        if rng.random() < 0.15: e["enable_chunked_prefill"] = False
        if rng.random() < 0.3: e["preemption_mode"] = "fifo"
    else:
        sg = {}
        if rng.random() < 0.5: sg["schedule_policy"] = "lpm"
        if rng.random() < 0.3: sg["chunked_prefill_size"] = rng.choice([128, 512, 2048])
        if rng.random() < 0.3: sg["max_prefill_tokens"] = rng.choice([1024, 4096, 16384])
        if rng.random() < 0.2: sg["schedule_conservativeness"] = rng.choice([0.3, 0.7, 1.5])
        if sg: e["sglang"] = sg
    return e


differing = compared = 0
for i in range(n_cases):
    d = os.path.join(out, f"c{seed}-{i}")
    os.makedirs(d, exist_ok=True)
    n = rng.randint(100, 500)
    block = rng.choice([16, 512, 512, 64])
    trace = [sys.executable, os.path.join(oracle, "gen_trace.py"), str(n), os.path.join(d, "t.jsonl"),
             "--seed", str(rng.randint(1, 10**6)), "--rate", str(rng.choice([1, 3, 8, 20, 50])),
             "--groups", str(rng.choice([0, 2, 8, 20])),
             "--prefix-blocks", *map(str, sorted([rng.randint(1, 8), rng.randint(1, 8)])),
             "--isl", *map(str, sorted([rng.randint(50, 2000), rng.randint(50, 6000)])),
             "--osl", *map(str, sorted([rng.randint(1, 200), rng.randint(1, 800)])), "--block", str(block)]
    if rng.random() < 0.2:
        trace += ["--burst", str(rng.choice([4, 16, 64]))]
    subprocess.run(trace, check=True, capture_output=True)
    kind = rng.choice(kinds)
    backend = "sglang" if kind.startswith("sg") else rng.choice(["vllm", "sglang"]) if kind in ("rr", "dp") else "vllm"
    pressure = rng.random() < 0.6
    replay = {"trace_block_size": block}
    if kind in ("vllm", "sglang", "rr", "dp"):
        replay["extra_engine_args"] = {"engine": engine(backend, pressure)}
        if kind in ("rr", "dp"):
            replay["num_workers"] = rng.choice([2, 4, 8])
            replay["router_mode"] = "round_robin"
        if kind == "dp":
            replay["extra_engine_args"]["dp_size"] = rng.choice([2, 4])
    else:
        p, q = engine(backend, pressure), engine(backend, pressure)
        q["block_size"] = p["block_size"]
        if rng.random() < 0.7:
            q["num_gpu_blocks"] = max(q["num_gpu_blocks"], 200000 // q["block_size"])
        bw, kvb = rng.choice([0.0, 1.0, 8.0, 16.0, 64.0]), rng.choice([65536, 131072, 327680])
        for e, role in ((p, "prefill"), (q, "decode")):
            e.update(kv_transfer_bandwidth=bw, kv_bytes_per_token=kvb, worker_type=role)
        if rng.random() < 0.3:
            p["kv_transfer_timing_mode"] = "destination_missing"
        replay.update(num_prefill_workers=rng.randint(1, 3), num_decode_workers=rng.randint(1, 3),
                      prefill_engine_args={"engine": p}, decode_engine_args={"engine": q})
    if rng.random() < 0.2:
        replay["arrival_speedup_ratio"] = rng.choice([0.5, 2.0, 4.0])
    case = os.path.join(d, "case.json")
    json.dump({"name": f"c{seed}-{i}", "note": kind, "trace": "t.jsonl", "replay": replay}, open(case, "w"), indent=1)
    name = f"c{seed}-{i} {kind} n={n}"
    try:
        p = subprocess.run([ref_python, os.path.join(oracle, "replay.py"), case, "--write"], capture_output=True, text=True, env=env, timeout=300)
    except subprocess.TimeoutExpired:
        print(f"{name}: reference timed out (skipped)", flush=True)
        continue
    if p.returncode != 0:
        # The reference gives up on some cases (a request it can never schedule, say).
        print(f"{name}: reference failed (skipped): {p.stderr.strip().splitlines()[-1][:150]}", flush=True)
        continue
    compared += 1
    o = subprocess.run([binp, "replay", case], capture_output=True, text=True, timeout=300)
    open(os.path.join(d, "ours.json"), "w").write(o.stdout)
    if o.returncode != 0:
        print(f"{name}: SERVESIM FAILED {o.stderr.strip()[-200:]}", flush=True)
        differing += 1
        continue
    c = subprocess.run([sys.executable, os.path.join(oracle, "compare.py"), case, os.path.join(d, "ours.json")], capture_output=True, text=True)
    differing += c.returncode != 0
    print(f"{name}: {'ok' if c.returncode == 0 else 'DIFF ' + c.stdout.strip()[:200]}", flush=True)
print(f"seed {seed}: {compared} compared, {differing} differ, {n_cases - compared} skipped")
