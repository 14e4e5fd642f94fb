#!/usr/bin/env python3
"""Differential fuzzing of vLLM's native KV offload against the reference (../shared/oracle):
random small traces with shared prefixes that come back after the GPU pool evicted them, tight
GPU pools, host pools of every size, D2H/H2D bandwidths from slow to unlimited, first-byte
latencies, dp_rank_local and cluster_shared host pools, sometimes a G3 tier (worker_local or
cluster_shared), 1-2 round-robin workers, DP ranks, budgets, chunking, preemption modes and
fixed or polynomial timing. Each case runs through the reference (replay_ext.py's rows: the
host-reuse column included) and through servesim, and is judged by compare_ext.py (every
column, every summary key: g3_offload, g2_domains, worker-seconds). Run it with the
reference's python:

  DYN_LOG=error ../oracle-venv/bin/python scripts/diff-fuzz-offload.py --bin target/release/servesim \\
      [--cases 200] [--seed 1] [--keep DIR] [--max-diffs 5] [--realistic]

--realistic draws the traces from the oracle's gen_trace.py instead (40-120 requests, 2-8
shared-prefix groups of 4-40 blocks, as the public offload cases), with pools to match.

Mismatches are kept as case files with the reference's figures (`servesim replay` and
compare_ext.py reproduce them). Cases the reference fails or hangs on are counted and skipped
(SHOWERR=1 prints why; KEEPSKIPPED=1 keeps them too, with the reference's error)."""
import argparse, json, multiprocessing, os, random, shutil, subprocess, sys, tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.environ.get("ORACLE", os.path.join(HERE, "..", "..", "shared", "oracle"))
sys.path.insert(0, ORACLE)
import replay_ext  # noqa: E402  (the reference's replay, its rows and summary keys)

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True); ap.add_argument("--cases", type=int, default=100)
ap.add_argument("--seed", type=int, default=1); ap.add_argument("--keep", default="offload-diffs")
ap.add_argument("--max-diffs", type=int, default=5)
ap.add_argument("--realistic", action="store_true")
a = ap.parse_args(); rng = random.Random(a.seed)


def trace():
    """Requests drawing prefixes from a few groups, in waves: a prefix evicted from the GPU
    pool by other groups' requests comes back later (host hits), some at once (pending)."""
    groups = [[rng.randint(1, 10**9) for _ in range(rng.randint(2, 16))] for _ in range(rng.randint(1, 5))]
    rows, t = [], 0.0
    gap = rng.choice([0.0, 5.0, 30.0, 150.0, 600.0])
    for _ in range(rng.randint(6, 50)):
        blocks = []
        if rng.random() < 0.8:
            g = rng.choice(groups)
            blocks = g[:rng.randint(1, len(g))]
        blocks += [rng.randint(10**9, 2 * 10**9) for _ in range(rng.randint(0, 8))]
        if not blocks:
            blocks = [rng.randint(10**9, 2 * 10**9)]
        n = len(blocks) * 16 - rng.choice([0, 0, 0, rng.randint(1, 15)])
        # One decimal: the oracle pairs rows with trace lines by arrival rounded to 0.01 ms.
        t = round(t + rng.choice([0.0, rng.uniform(0, gap), float(rng.randint(0, int(gap) + 1))]), 1)
        rows.append({"timestamp": t, "input_length": n, "output_length": rng.randint(1, rng.choice([4, 20, 80])), "hash_ids": blocks})
    return unique(rows)


def realistic_trace(tmp):
    """A gen_trace.py trace shaped like the public offload cases."""
    path = os.path.join(tmp, "gen.jsonl")
    lo = rng.randint(2, 20)
    subprocess.run([sys.executable, os.path.join(ORACLE, "gen_trace.py"), str(rng.randint(40, 120)), path,
                    "--seed", str(rng.randint(1, 10**6)), "--rate", str(rng.choice([1, 2, 4, 8])),
                    "--groups", str(rng.randint(2, 8)), "--prefix-blocks", str(lo), str(lo + rng.randint(2, 20)),
                    "--isl", "16", str(rng.choice([120, 400])), "--osl", "2", str(rng.choice([20, 80])), "--block", "16"],
                   check=True, capture_output=True)
    return unique([json.loads(l) for l in open(path) if l.strip()])


def unique(rows):
    # The oracle pairs rows with lines by (arrival, input, output): keep those unique, or two
    # look-alike requests may be paired the other way round.
    seen = set()
    for r in rows:
        while (r["timestamp"], r["input_length"], r["output_length"]) in seen:
            r["output_length"] += 1
        seen.add((r["timestamp"], r["input_length"], r["output_length"]))
    return rows


def offload_case(rows):
    bs = rng.choice([8, 16, 16, 32])
    longest = max(-(-r["input_length"] // bs) + -(-r["output_length"] // bs) for r in rows)
    eng = {"block_size": bs, "num_gpu_blocks": longest + rng.choice([0, 2, 8, 30, 120]),
           "kv_cache_bytes_per_token": rng.choice([16384, 131072])}
    host = {"num_host_blocks": rng.choice([rng.randint(2, 20), rng.randint(20, 120), rng.randint(120, 1000)])}
    for k in ("d2h_bandwidth_gbps", "h2d_bandwidth_gbps"):
        if rng.random() < 0.7:
            host[k] = rng.choice([0.0, 0.05, 0.2, 1.0, 4.0, 32.0])
    if rng.random() < 0.5:
        host["latency_to_first_byte_ms"] = rng.choice([0.5, 2.0, 5.0])
    if rng.random() < 0.15:
        host.update(scope="cluster_shared", kv_layout_id="fuzz")
        if rng.random() < 0.5:
            host["shared_d2h_bandwidth_gbps"] = rng.choice([0.5, 4.0, 80.0])
            host["shared_h2d_bandwidth_gbps"] = rng.choice([0.5, 4.0, 80.0])
    eng["native_host_offload"] = host
    if rng.random() < 0.25:
        g3 = {"scope": rng.choice(["worker_local", "cluster_shared"]), "num_g3_blocks": rng.choice([8, 60, 400, 3000])}
        if rng.random() < 0.5:
            g3.update(read_bandwidth_gbps=rng.choice([0.5, 10.0]), write_bandwidth_gbps=rng.choice([0.5, 10.0]))
        if rng.random() < 0.3:
            g3["latency_to_first_byte_ms"] = rng.choice([0.0, 1.0])
        eng["g3_offload"] = g3
    if rng.random() < 0.3: eng["max_num_batched_tokens"] = rng.choice([32, 128, 512, 2048])
    if rng.random() < 0.25: eng["max_num_seqs"] = rng.randint(1, 8)
    if rng.random() < 0.15: eng["enable_chunked_prefill"] = False
    if rng.random() < 0.3: eng["preemption_mode"] = "fifo"
    if rng.random() < 0.4:
        eng["timing_model"] = {"type": "fixed", "prefill_ms": rng.choice([5.0, 13.0, 30.0]), "decode_ms": rng.choice([2.0, 7.0])}
    replay = {"trace_block_size": 16, "extra_engine_args": {"engine": eng}}
    if rng.random() < 0.4:
        replay.update(num_workers=rng.randint(1, 2), router_mode="round_robin")
    if rng.random() < 0.25:
        replay["extra_engine_args"]["dp_size"] = 2
    return replay


def reference(trace_path, replay):
    report, _ = replay_ext.run(trace_path, replay)
    cols, rows = replay_ext.rows_of(report, trace_path, replay)
    return replay_ext.summary_of(report), cols, rows


os.makedirs(a.keep, exist_ok=True); tmp = tempfile.mkdtemp()
pool = multiprocessing.get_context("fork").Pool(1)
stats, features, bad = Counter(), Counter(), 0
for i in range(a.cases):
    rows = realistic_trace(tmp) if a.realistic else trace()
    replay = offload_case(rows)
    trace_path, case_path, answer = (os.path.join(tmp, f) for f in ("t.jsonl", "case.json", "answer.json"))
    with open(trace_path, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    try:
        summary, cols, ref_rows = pool.apply_async(reference, (trace_path, replay)).get(timeout=60)
    except multiprocessing.TimeoutError:
        pool.terminate(); pool = multiprocessing.get_context("fork").Pool(1); stats["skipped"] += 1; continue
    except Exception as e:
        if os.environ.get("SHOWERR"): print("SKIP", repr(e)[:300], flush=True)
        if os.environ.get("KEEPSKIPPED"):
            keep = os.path.join(a.keep, f"skipped-{a.seed}-{i}"); os.makedirs(keep, exist_ok=True)
            shutil.copy(trace_path, keep)
            json.dump({"name": f"skipped-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay, "reference_error": repr(e)[:500]},
                      open(os.path.join(keep, "case.json"), "w"), indent=1)
        stats["skipped"] += 1; continue
    case = {"name": f"offload-fuzz-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay, "expected": summary,
            "per_request_columns": cols, "per_request": ref_rows}
    json.dump(case, open(case_path, "w"), indent=1)
    out = subprocess.run([a.bin, "replay", case_path], capture_output=True, text=True, timeout=120)
    stats["compared"] += 1
    eng = replay["extra_engine_args"]["engine"]
    features.update(k for k, on in [("g3", "g3_offload" in eng), ("cluster_shared", eng["native_host_offload"].get("scope") == "cluster_shared"),
                                    ("2 workers", replay.get("num_workers", 1) > 1), ("dp 2", "dp_size" in replay["extra_engine_args"]),
                                    ("host hits", any((r or [0])[-1] for r in ref_rows))] if on)
    if out.returncode:
        why = "servesim failed: " + out.stderr.strip()[-300:]
    else:
        open(answer, "w").write(out.stdout)
        cmp = subprocess.run([sys.executable, os.path.join(ORACLE, "compare_ext.py"), case_path, answer], capture_output=True, text=True)
        why = None if cmp.returncode == 0 else cmp.stdout.strip()
    if why:
        bad += 1; stats["differ"] += 1
        keep = os.path.join(a.keep, f"offload-fuzz-{a.seed}-{i}"); os.makedirs(keep, exist_ok=True)
        shutil.copy(trace_path, keep); shutil.copy(case_path, keep)
        print(f"DIFF {keep}/case.json: {why}", flush=True)
        if bad >= a.max_diffs: break
pool.terminate(); shutil.rmtree(tmp)
print(f"{stats['compared']} compared, {stats['compared'] - stats['differ']} match, {stats['differ']} differ, {stats['skipped']} skipped;"
      f" with {dict(features)}")
sys.exit(1 if bad else 0)
