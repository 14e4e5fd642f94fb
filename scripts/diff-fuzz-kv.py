#!/usr/bin/env python3
"""Differential fuzzing of the KV router against the reference.

The reference's KV router breaks exact cost ties at random, so its runs agree only up to
relabeling of workers and only until the first tie that decides something. Each random case
(bursty traces with shared prefixes, 2-8 KV-aware workers, optionally DP ranks, KV-event lag,
router knobs, SGLang, prefill/decode pools) runs RUNS times through the reference; servesim's
routing pattern (each request's worker, numbered in order of first use; DP ranks numbered
within their worker) must equal the reference's over the stretch where all runs agree, and
when the runs agree on every figure, so must servesim's rows. With prefill/decode pools only
the latter is checked.

Build servesim with `--features servesim_sim/route-trace` for --bin: a part where servesim's
own choice was an exact tie is then reported as inconclusive instead of a difference (such a
tie is random in the reference too, and a few agreeing reference runs can hide it).

usage (the reference's python):
  DYN_LOG=error ../oracle-venv/bin/python scripts/diff-fuzz-kv.py --bin BIN [--cases 50]
      [--seed 1] [--runs 8] [--workers 2 8] [--requests 20 120] [--burst K] [--dp] [--lag]
      [--knobs] [--sglang] [--disagg] [--keep DIR] [--max-diffs 5]
"""
import argparse, json, multiprocessing, os, random, shutil, subprocess, sys, tempfile
from collections import defaultdict, deque
from dynamo.replay import run_trace_replay
from dynamo.llm import KvRouterConfig

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--cases", type=int, default=50)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--runs", type=int, default=8)
ap.add_argument("--workers", type=int, nargs=2, default=[2, 8])
ap.add_argument("--requests", type=int, nargs=2, default=[20, 120])
ap.add_argument("--burst", type=int, default=0, help="requests arriving together (0: drawn)")
ap.add_argument("--dp", action="store_true", help="DP ranks in half the cases")
ap.add_argument("--lag", action="store_true", help="kv_event_lag_ms in half the cases")
ap.add_argument("--knobs", action="store_true", help="router_config knobs")
ap.add_argument("--sglang", action="store_true", help="SGLang in half the cases")
ap.add_argument("--disagg", action="store_true", help="prefill/decode pools")
ap.add_argument("--keep", default="kv-fuzz-diffs")
ap.add_argument("--max-diffs", type=int, default=5)
a = ap.parse_args()
rng = random.Random(a.seed)
COLUMNS = ["worker", "dp_rank", "first_token_ms", "end_ms", "output_tokens", "reused_input_tokens", "readmissions",
           "router_overlap_tokens"]


def random_case():
    block = 16
    prefixes = [[(g + 1) * 1000 + j for j in range(rng.randint(1, 30))] for g in range(rng.randint(1, 8))]
    burst = a.burst or rng.choice([1, 1, 4, 8, 16, 32])
    rate = rng.choice([5, 10, 20, 50, 100])
    t, next_id, rows = 0.0, 10_000_000, []
    for i in range(rng.randint(*a.requests)):
        if i % burst == 0:
            t += rng.expovariate(rate / burst) * 1000.0
        pre = rng.choice(prefixes) if rng.random() < 0.8 else []
        pre = pre[: rng.randint(1, len(pre))] if pre and rng.random() < 0.3 else pre
        isl = len(pre) * block + rng.randint(1, 600)
        ids = list(pre)
        while len(ids) * block < isl:
            next_id += 1
            ids.append(next_id)
        rows.append({"timestamp": int(t), "input_length": isl, "output_length": rng.randint(1, 200), "hash_ids": ids})
    backend = "sglang" if a.sglang and rng.random() < 0.5 else "vllm"
    bs = rng.choice([16, 16, 32, 64]) if backend == "vllm" else rng.choice([1, 16])
    eng = {"backend": backend, "block_size": bs, "num_gpu_blocks": rng.choice([256, 512, 1024, 4096, 16384]) * 16 // bs}
    if rng.random() < 0.4:
        eng["max_num_batched_tokens"] = rng.choice([256, 512, 2048, 8192])
    if rng.random() < 0.3:
        eng["max_num_seqs"] = rng.randint(2, 64)
    replay = {"trace_block_size": block, "router_mode": "kv_router"}
    if a.disagg:
        replay.update(num_prefill_workers=rng.randint(1, 3), num_decode_workers=rng.randint(1, 3),
                      prefill_engine_args={"engine": dict(eng, worker_type="prefill")},
                      decode_engine_args={"engine": dict(eng, worker_type="decode")})
    else:
        replay.update(num_workers=rng.randint(*a.workers), extra_engine_args={"engine": eng})
        if a.dp and rng.random() < 0.5:
            replay["extra_engine_args"]["dp_size"] = rng.choice([2, 3, 4])
    if a.lag and rng.random() < 0.5:
        replay["kv_event_lag_ms"] = rng.choice([5.0, 50.0, 300.0])
    if a.knobs and rng.random() < 0.7:
        rc, draw = {}, rng.random
        if draw() < 0.4: rc["overlap_score_credit"] = rng.choice([0.0, 0.5, 2.0])
        if draw() < 0.3: rc["prefill_load_scale"] = rng.choice([0.0, 0.5, 3.0])
        if draw() < 0.2: rc["router_track_active_blocks"] = False
        if draw() < 0.2: rc["router_assume_kv_reuse"] = False
        if draw() < 0.2: rc["router_track_prefill_tokens"] = False
        if draw() < 0.2: rc["router_queue_threshold"] = rng.choice([0.0, 0.5, 1.0, 2.0])
        if draw() < 0.15: rc["use_kv_events"] = False
        if draw() < 0.2: rc["overlap_score_credit_decay"] = rng.choice([0.5, 2.0, 10.0])
        if draw() < 0.2: rc["decode_active_request_weight"] = rng.choice([0.5, 4.0, 30.0])
        if rc:
            replay["router_config"] = rc
    return rows, replay


def canonical(labels, worker, dp_rank):
    """A (worker, DP rank) numbered up to relabeling of workers and of ranks within one."""
    number, ranks = labels.setdefault(worker, (len(labels), {}))
    return number * 100 + ranks.setdefault(dp_rank, len(ranks))


def reference(trace, replay, lines, runs):
    """The first run's pattern and rows, and how many leading lines every run agrees on."""
    t0 = min(l["timestamp"] for l in lines)
    kwargs = dict(replay)
    if "router_config" in kwargs:
        kwargs["router_config"] = KvRouterConfig(**kwargs["router_config"])
    patterns, rowsets = [], []
    for _ in range(runs):
        report = run_trace_replay([trace], capture_per_request=True, **kwargs)
        pool = defaultdict(deque)
        for r in sorted(report.per_request, key=lambda r: (r["arrival_time_ms"], r["first_admit_ms"] or 0)):
            pool[(round(r["arrival_time_ms"], 2), r["input_length"], r["requested_output_length"])].append(r)
        labels, pattern, rows = {}, [], []
        for l in lines:
            r = pool[(round(l["timestamp"] - t0, 2), l["input_length"], l["output_length"])].popleft()
            first = r["routing_history"][0] if r.get("routing_history") else {}
            pattern.append(canonical(labels, first.get("logical_worker_id"), first.get("dp_rank", 0)))
            rows.append([r["first_token_ms"], r["terminal_time_ms"], r["output_length"], r["reused_input_tokens"],
                         r["readmission_count"], first.get("reported_overlap_tokens")])
        patterns.append(pattern)
        rowsets.append(rows)
    n = len(lines)
    agreed = n if a.disagg else min(next((i for i, (x, y) in enumerate(zip(patterns[0], p)) if x != y), n) for p in patterns[1:])
    if agreed == n and any(r != rowsets[0] for r in rowsets[1:]):
        agreed = n - 1  # same pattern, other figures: not deterministic as a whole
    return patterns[0], agreed, rowsets[0]


def same_time(x, y):
    return x is None and y is None or x is not None and y is not None and abs(x - y) <= max(0.01, 1e-4 * abs(x))


os.makedirs(a.keep, exist_ok=True)
tmp = tempfile.mkdtemp()
pool = multiprocessing.get_context("fork").Pool(1)
compared = differ = skipped = ties = 0
for i in range(a.cases):
    lines, replay = random_case()
    trace, case_path = os.path.join(tmp, "t.jsonl"), os.path.join(tmp, "case.json")
    with open(trace, "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
    try:  # in a forked worker: on some inputs the reference never returns
        pattern, agreed, ref_rows = pool.apply_async(reference, (trace, replay, lines, a.runs)).get(timeout=120)
    except multiprocessing.TimeoutError:
        pool.terminate()
        pool = multiprocessing.get_context("fork").Pool(1)
        skipped += 1
        continue
    except Exception:
        skipped += 1
        continue
    json.dump({"name": f"kv-fuzz-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay, "per_request_columns": COLUMNS},
              open(case_path, "w"))
    out = subprocess.run([a.bin, "replay", case_path], capture_output=True, text=True, timeout=120)
    compared += 1
    why = None
    if out.returncode:
        why = "servesim failed: " + out.stderr.strip()[-300:]
    else:
        got = json.loads(out.stdout)["per_request"]
        labels = {}
        ours = [canonical(labels, g[0], g[1]) for g in got]
        part = None if a.disagg else next((k for k in range(agreed) if ours[k] != pattern[k]), None)
        tied = {}
        for line in out.stderr.splitlines():
            if line.startswith("route id="):
                tied.setdefault(int(line.split()[1][3:]), int(line.split("tied=")[1].split()[0]))
        if part is not None and tied.get(part, 1) > 1:
            ties += 1
            print(f"tie  case {i}: servesim's choice at line {part + 1} was a tie of {tied[part]}", flush=True)
            continue
        if part is not None:
            why = (f"routing parts at trace line {part + 1} (the reference agrees on {agreed} of {len(lines)}): "
                   f"reference {pattern[max(0, part - 3):part + 3]}, servesim {ours[max(0, part - 3):part + 3]}")
        elif agreed == len(lines):
            for k, (r, g) in enumerate(zip(ref_rows, got)):
                if not (same_time(r[0], g[2]) and same_time(r[1], g[3]) and r[2:5] == g[4:7] and r[5] == g[7]):
                    why = f"trace line {k + 1}: reference {r}, servesim {g[2:]}"
                    break
    tag = f"case {i}: {len(lines)} lines, deterministic over {agreed}, {json.dumps(replay.get('router_config', {}))}"
    if why:
        differ += 1
        keep = os.path.join(a.keep, f"kv-fuzz-{a.seed}-{i}")
        os.makedirs(keep, exist_ok=True)
        shutil.copy(trace, keep)
        json.dump({"name": f"kv-fuzz-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay, "deterministic_lines": agreed,
                   "reference_pattern": pattern, "reference_rows": ref_rows}, open(os.path.join(keep, "case.json"), "w"), indent=1)
        print(f"DIFF {tag}\n     {keep}: {why}", flush=True)
        if differ >= a.max_diffs:
            break
    else:
        print(f"ok   {tag}", flush=True)
pool.terminate()
print(f"{compared} cases compared, {differ} differ, {ties} inconclusive (servesim tied), {skipped} skipped")
shutil.rmtree(tmp)
sys.exit(1 if differ else 0)
