#!/usr/bin/env python3
"""Differential fuzzing of planner-in-the-loop replay against the reference (the shared
oracle's extended environment, ../shared/oracle/setup_ext.sh): burst-then-quiet traces under a
random planner_config (agg or disagg; throughput, latency or load targets with random
thresholds; tick and load intervals; startup_time; min_endpoint; GPU budgets; tensor and data
parallelism). Each case goes through the reference's replay_ext.py (which writes its figures and
planner record into the case) and through servesim; compare_ext.py judges, planner record
included.

  python3 scripts/diff-fuzz-planner.py --bin target/release/servesim --oracle DIR/replay_ext.py \
      --python DIR/bin/python [--cases 30] [--seed 1] [--keep DIR]"""
import argparse, json, os, random, shutil, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--oracle", required=True)
ap.add_argument("--python", required=True)
ap.add_argument("--cases", type=int, default=30)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--keep", default="pl-diffs")
ap.add_argument("--max-diffs", type=int, default=5)
a = ap.parse_args()
rng = random.Random(a.seed)
compare = os.path.join(os.path.dirname(os.path.abspath(a.oracle)), "compare_ext.py")


def trace_rows():
    """A busy phase, then a quiet one (the planner grows the pool, then shrinks it)."""
    rows, t, nid = [], 0.0, 10_000_000
    phases = [(rng.randint(60, 200), rng.uniform(8, 40)), (rng.randint(10, 60), rng.uniform(0.3, 3))]
    if rng.random() < 0.3:
        phases.append((rng.randint(30, 120), rng.uniform(8, 30)))
    groups = [[(g + 1) * 1000 + j for j in range(rng.randint(1, 6))] for g in range(rng.randint(0, 6))]
    for n, rate in phases:
        for _ in range(n):
            t += rng.expovariate(rate) * 1000.0
            isl = rng.randint(64, 1500)
            prefix = rng.choice(groups) if groups and rng.random() < 0.5 else []
            blocks = max(len(prefix), -(-isl // 16))
            ids = prefix + list(range(nid, nid + blocks - len(prefix)))
            nid += blocks
            rows.append({"timestamp": round(t), "input_length": isl, "output_length": rng.randint(8, 400), "hash_ids": ids})
    return rows


def launch(role=None):
    eng = {"block_size": 16, "num_gpu_blocks": rng.choice([400, 800, 1500, 3000])}
    if rng.random() < 0.3: eng["max_num_seqs"] = rng.choice([8, 32])
    if rng.random() < 0.3: eng["max_model_len"] = rng.choice([4096, 16384])
    if role: eng["worker_type"] = role
    args = {"engine": eng}
    if rng.random() < 0.7: args["startup_time"] = rng.choice([0, 0.5, 2, 5, 10])
    if rng.random() < 0.2: args["tensor_parallel_size"] = 2
    if rng.random() < 0.15: args["dp_size"] = 2
    return args


def planner(mode):
    p = {"mode": mode, "optimization_target": rng.choice(["throughput", "latency", "load"])}
    interval = rng.choice([2, 3, 5])
    p["load_adjustment_interval_seconds"] = interval
    if rng.random() < 0.3: p["scheduling"] = {"scale_interval_seconds": 1}
    if p["optimization_target"] == "load":
        down = rng.randint(5, 40); p["decode_scale_down_kv_rate"] = down; p["decode_scale_up_kv_rate"] = rng.randint(down + 5, 95)
        if mode == "disagg":
            lo = rng.choice([0, 100, 500]); p["prefill_scale_down_queue_tokens"] = lo; p["prefill_scale_up_queue_tokens"] = lo + rng.choice([200, 1000, 4000])
    if rng.random() < 0.2: p["min_endpoint"] = 2
    if rng.random() < 0.3: p["max_gpu_budget"] = rng.choice([3, 4, 6, -1])
    return p


os.makedirs(a.keep, exist_ok=True)
tmp = tempfile.mkdtemp()
env = dict(os.environ, DYN_LOG="error")
stats = {"agg": [0, 0, 0], "disagg": [0, 0, 0]}
bad = 0
for i in range(a.cases):
    mode = "disagg" if rng.random() < 0.35 else "agg"
    replay = {"trace_block_size": 16, "planner_config": planner(mode)}
    if mode == "agg":
        replay["extra_engine_args"] = launch()
    else:
        replay.update(prefill_engine_args=launch("prefill"), decode_engine_args=launch("decode"),
                      num_prefill_workers=1, num_decode_workers=1)
    trace, case = os.path.join(tmp, "t.jsonl"), os.path.join(tmp, "case.json")
    with open(trace, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in trace_rows()))
    json.dump({"name": f"pl-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay}, open(case, "w"))
    try:
        ref = subprocess.run([a.python, a.oracle, case, "--write"], capture_output=True, text=True, env=env, timeout=300)
    except subprocess.TimeoutExpired:
        ref = None
    if ref is None or ref.returncode or "expected_planner" not in json.load(open(case)):
        stats[mode][2] += 1
        if os.environ.get("SHOWERR"): print("SKIP", mode, (ref.stderr.strip()[-300:] if ref else "timeout"), flush=True)
        continue
    stats[mode][0] += 1
    out = subprocess.run([a.bin, "replay", case], capture_output=True, text=True, timeout=300)
    why = None
    if out.returncode:
        why = "servesim failed: " + out.stderr.strip()[-300:]
    else:
        with open(os.path.join(tmp, "answer.json"), "w") as f:
            f.write(out.stdout)
        cmp = subprocess.run([sys.executable, compare, case, os.path.join(tmp, "answer.json")], capture_output=True, text=True)
        if cmp.returncode:
            why = cmp.stdout.strip()
    if why:
        bad += 1; stats[mode][1] += 1
        keep = os.path.join(a.keep, f"pl-{a.seed}-{i}")
        os.makedirs(keep, exist_ok=True)
        shutil.copy(trace, keep); shutil.copy(case, keep)
        print(f"DIFF [{mode}] {keep}/case.json: {why}", flush=True)
        if bad >= a.max_diffs:
            break
for k, (c, b, s) in stats.items():
    print(f"{k}: {c} compared, {b} differ, {s} skipped")
shutil.rmtree(tmp)
sys.exit(1 if bad else 0)
