#!/usr/bin/env python3
"""Differential fuzzing of the harness features against the reference (../shared/oracle):
multi-turn sessions (every think-time style), closed loop (replay_concurrency), the
mooncake-delta, applied_compute_agentic and dynamo trace formats, SLA goodput and the
max_sim_time_ms cut-off, on single vLLM or SGLang engines, round-robin clusters (with DP
ranks) and prefill/decode pools. Each case goes through the reference's replay_ext.py (which
writes its figures into the case) and through servesim, and compare_ext.py judges.

  python3 scripts/diff-fuzz-harness.py --bin target/release/servesim --oracle DIR/replay_ext.py \
      --python DIR/bin/python [--cases 50] [--seed 1] [--kinds sessions,closed,delta,agentic,dynamo] \
      [--keep DIR]

Mismatching cases are kept (trace and case file with the reference's figures) in --keep, ready
for `servesim replay` and compare_ext.py."""
import argparse, json, os, random, shutil, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--oracle", required=True, help="path of the shared oracle's replay_ext.py")
ap.add_argument("--python", required=True, help="the reference's python")
ap.add_argument("--cases", type=int, default=50)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--kinds", default="sessions,closed,delta,agentic,dynamo")
ap.add_argument("--keep", default="hf-diffs")
ap.add_argument("--max-diffs", type=int, default=5)
a = ap.parse_args()
rng = random.Random(a.seed)
compare = os.path.join(os.path.dirname(os.path.abspath(a.oracle)), "compare_ext.py")


def engine(backend, role=None):
    bs = rng.choice([16, 32]) if backend == "vllm" else rng.choice([1, 16])
    eng = {"backend": backend, "block_size": bs, "num_gpu_blocks": max(8, rng.randint(60, 600) * 16 // bs)}
    if rng.random() < 0.3: eng["max_num_batched_tokens"] = rng.choice([256, 512, 2048])
    if rng.random() < 0.3: eng["max_num_seqs"] = rng.randint(1, 8)
    if rng.random() < 0.3: eng["timing_model"] = {"type": "fixed", "prefill_ms": rng.choice([5.0, 12.5]), "decode_ms": rng.choice([1.0, 3.3])}
    if backend == "vllm" and rng.random() < 0.3: eng["preemption_mode"] = "fifo"
    if role: eng["worker_type"] = role
    return eng


def topology(replay, backend):
    r = rng.random()
    if r < 0.5:
        replay["extra_engine_args"] = {"engine": engine(backend)}
    elif r < 0.8:
        replay["extra_engine_args"] = {"engine": engine(backend)}
        replay["num_workers"] = rng.randint(2, 3)
        if rng.random() < 0.3: replay["extra_engine_args"]["dp_size"] = 2
    else:
        p, d = engine(backend, "prefill"), engine(backend, "decode")
        d["block_size"] = p["block_size"]
        d["num_gpu_blocks"] = max(d["num_gpu_blocks"], 4000 // d["block_size"])
        for e in (p, d):
            e["kv_transfer_bandwidth"] = rng.choice([0.0, 8.0]); e["kv_bytes_per_token"] = 131072
        replay.update(num_prefill_workers=rng.randint(1, 2), num_decode_workers=rng.randint(1, 2),
                      prefill_engine_args={"engine": p}, decode_engine_args={"engine": d})


def fresh(state, n):
    out = list(range(state[0], state[0] + n)); state[0] += n; return out


def sessions_rows(delta):
    """Sessions of 1-4 turns, every think-time style; delta rows hold only the new part."""
    rows, ids, t = [], [1000], 0.0  # rows as (nominal time, order, row)
    nsess = rng.randint(3, 14)
    for s in range(nsess):
        t += rng.choice([0.0, rng.uniform(0, 300)])
        turns = rng.randint(1, 4)
        sid = f"s{s}" if (turns > 1 or rng.random() < 0.5) else None
        prompt = fresh(ids, rng.randint(2, 30))
        ts = round(t, 3)
        nominal = t
        for k in range(turns):
            n = rng.randint(1, 16 * len(prompt)) if k == 0 else None
            row = {"output_length": rng.randint(1, 60)}
            if sid: row["session_id"] = sid
            if k == 0:
                row.update(timestamp=ts, input_length=n, hash_ids=prompt)
            else:
                new = fresh(ids, rng.randint(1, 8))
                if delta:
                    row.update(input_length=16 * len(new) - rng.randint(0, 15), hash_ids=new)
                else:
                    prompt = prompt + fresh(ids, 2) + new
                    row.update(input_length=16 * len(prompt) - rng.randint(0, 15), hash_ids=prompt)
                think = round(rng.uniform(0, 500), 3)
                style = rng.choice(["delay", "delay_ms", "timestamp", "none"])
                if style in ("delay", "delay_ms"): row[style] = think
                elif style == "timestamp":
                    ts = round(ts + think, 3); row["timestamp"] = ts
                nominal += think + 100.0
            rows.append((nominal, len(rows), row))
    # Sessions interleave in the file by nominal time; a session's turns keep their order.
    return [r for _, _, r in sorted(rows)]


def agentic_rows():
    rows = []
    for _ in range(rng.randint(2, 6)):
        n = rng.randint(1, 4)
        rows.append({"num_turns": n, "input_prompt_length": rng.randint(16, 600),
                     "assistant_response_length": [rng.randint(1, 60) for _ in range(n)],
                     "tool_call_output_length": [rng.randint(1, 200) for _ in range(n)],
                     "tool_call_latency": [round(rng.uniform(0, 0.5), 3) for _ in range(n)],
                     "final_assistant_response_length": rng.randint(1, 60)})
    return rows


def dynamo_rows(tbs):
    rows, t = [], 1_700_000_000_000
    for k in range(rng.randint(3, 25)):
        t += rng.randint(0, 200)
        n = rng.randint(1, 20)
        hashes = [rng.randint(1, 5)] * rng.randint(0, 2) + [rng.randint(10**6, 10**9) for _ in range(n)]
        total = rng.randint(5, 400)
        req = {"request_id": f"r{k}", "output_tokens": rng.randint(1, 60), "total_time_ms": total,
               "replay": {"trace_block_size": tbs, "input_length": len(hashes) * tbs - rng.randint(0, tbs - 1),
                          "input_sequence_hashes": hashes}}
        if rng.random() < 0.7: req["request_received_ms"] = t
        rows.append({"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": t + total, "request": req})
    return rows


def make_case(kind):
    backend = rng.choice(["vllm", "sglang"])
    replay = {"trace_block_size": 16}
    if kind in ("sessions", "closed"):
        rows = sessions_rows(False)
    elif kind == "delta":
        rows = sessions_rows(True); replay["trace_format"] = "mooncake-delta"
    elif kind == "agentic":
        rows = agentic_rows(); replay["trace_format"] = "applied_compute_agentic"
    else:
        rows = dynamo_rows(16); replay["trace_format"] = "dynamo"
    topology(replay, backend)
    if kind in ("closed", "agentic") or rng.random() < 0.25:
        replay["replay_concurrency"] = rng.randint(1, 6)
    if rng.random() < 0.3:
        replay["arrival_speedup_ratio"] = rng.choice([0.5, 2.0])
    r = rng.random()
    if r < 0.2: replay["sla_e2e_ms"] = rng.choice([100.0, 400.0, 1500.0])
    elif r < 0.4: replay.update(sla_ttft_ms=rng.choice([20.0, 60.0, 300.0]), sla_itl_ms=rng.choice([4.0, 8.0, 30.0]))
    if rng.random() < 0.2: replay["max_sim_time_ms"] = rng.choice([50.0, 300.0, 1000.0])
    return rows, replay


# The shared replay_ext.py matches rows to trace lines, which agentic and dynamo traces do not
# have one per request: for them this asks the reference for its records and pairs them with
# servesim's rows by session and turn (agentic) or by arrival and lengths (dynamo).
RECORDS = r"""
import json, sys
from dynamo.replay import run_trace_replay
case = json.load(open(sys.argv[1]))
rep = run_trace_replay([sys.argv[2]], capture_per_request=True, **case["replay"])
keep = ("session_id", "turn_index", "arrival_time_ms", "input_length", "first_token_ms", "terminal_time_ms",
        "output_length", "reused_input_tokens", "readmission_count", "terminal_status")
json.dump({"summary": rep.summary, "records": [{k: r.get(k) for k in keep} for r in rep.per_request]}, sys.stdout)
"""
COLUMNS = ["arrival_ms", "input_length", "first_token_ms", "end_ms", "output_tokens", "reused_input_tokens", "readmissions"]


def close(x, y):
    if x is None or y is None:
        return x is None and y is None
    return abs(x - y) <= max(0.01, 1e-4 * abs(x))


def compare_records(kind, case, trace, answer):
    """None if servesim's rows equal the reference's records, else why."""
    try:
        ref = subprocess.run([a.python, "-c", RECORDS, case, trace], capture_output=True, text=True, env=env, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "reference failed: no answer in 120 s"
    if ref.returncode:
        return None, "reference failed: " + ref.stderr.strip()[-200:]
    ref = json.loads(ref.stdout)
    for k in ("completed_requests", "total_output_tokens", "duration_ms", "mean_ttft_ms", "mean_e2e_latency_ms", "decode_worker_seconds"):
        r, g = ref["summary"].get(k), answer["summary"].get(k)
        if r is not None and not close(r, g):
            return ref, f"summary {k}: reference {r}, servesim {g}"
    recs = [r for r in ref["records"] if r["terminal_status"] == "completed"]
    rows = [dict(zip(COLUMNS, row)) for row in answer["per_request"] if row[2] is not None]
    if kind == "agentic":
        recs.sort(key=lambda r: (int(r["session_id"].rsplit("_", 1)[1]), r["turn_index"]))
    else:
        recs.sort(key=lambda r: (round(r["arrival_time_ms"], 3), r["input_length"], r["output_length"]))
        rows.sort(key=lambda r: (round(r["arrival_ms"], 3), r["input_length"], r["output_tokens"]))
    if len(recs) != len(rows):
        return ref, f"{len(recs)} completed records, servesim {len(rows)}"
    for j, (r, g) in enumerate(zip(recs, rows)):
        pairs = [("arrival_time_ms", "arrival_ms"), ("first_token_ms", "first_token_ms"), ("terminal_time_ms", "end_ms")]
        ok = all(close(r[x], g[y]) for x, y in pairs) and (r["input_length"], r["output_length"], r["reused_input_tokens"], r["readmission_count"]) == (
            g["input_length"], g["output_tokens"], g["reused_input_tokens"], g["readmissions"])
        if not ok:
            return ref, f"request {j}: reference {r}, servesim {g}"
    return ref, None


os.makedirs(a.keep, exist_ok=True)
tmp = tempfile.mkdtemp()
kinds = a.kinds.split(",")
stats = {k: [0, 0, 0] for k in kinds}
bad = 0
env = dict(os.environ, DYN_LOG="error")
for i in range(a.cases):
    kind = kinds[i % len(kinds)]
    rows, replay = make_case(kind)
    trace, case = os.path.join(tmp, "t.jsonl"), os.path.join(tmp, "case.json")
    with open(trace, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    json.dump({"name": f"hf-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay}, open(case, "w"))
    if kind in ("agentic", "dynamo"):
        json.dump({"name": f"hf-{a.seed}-{i}", "trace": "t.jsonl", "replay": replay, "per_request_columns": COLUMNS}, open(case, "w"))
        out = subprocess.run([a.bin, "replay", case], capture_output=True, text=True, timeout=120)
        if out.returncode:
            ref, why = None, "servesim failed: " + out.stderr.strip()[-300:]
        else:
            ref, why = compare_records(kind, case, trace, json.loads(out.stdout))
        if ref is None and why and why.startswith("reference failed"):
            stats[kind][2] += 1
            if os.environ.get("SHOWERR"): print("SKIP", kind, why, flush=True)
            continue
        stats[kind][0] += 1
        if why:
            bad += 1; stats[kind][1] += 1
            keep = os.path.join(a.keep, f"hf-{a.seed}-{i}")
            os.makedirs(keep, exist_ok=True)
            shutil.copy(trace, keep); shutil.copy(case, keep)
            print(f"DIFF [{kind}] {keep}/case.json: {why}", flush=True)
            if bad >= a.max_diffs:
                break
        continue
    try:
        ref = subprocess.run([a.python, a.oracle, case, "--write"], capture_output=True, text=True, env=env, timeout=120)
    except subprocess.TimeoutExpired:
        ref = None
    if ref is None or ref.returncode or "per_request" not in json.load(open(case)):
        stats[kind][2] += 1
        if os.environ.get("SHOWERR"): print("SKIP", kind, ref.stderr.strip()[-300:] if ref else "timeout", flush=True)
        continue
    out = subprocess.run([a.bin, "replay", case], capture_output=True, text=True, timeout=120)
    stats[kind][0] += 1
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
        bad += 1; stats[kind][1] += 1
        keep = os.path.join(a.keep, f"hf-{a.seed}-{i}")
        os.makedirs(keep, exist_ok=True)
        shutil.copy(trace, keep); shutil.copy(case, keep)
        print(f"DIFF [{kind}] {keep}/case.json: {why}", flush=True)
        if bad >= a.max_diffs:
            break
for k, (c, b, s) in stats.items():
    print(f"{k}: {c} compared, {b} differ, {s} skipped")
shutil.rmtree(tmp)
sys.exit(1 if bad else 0)
