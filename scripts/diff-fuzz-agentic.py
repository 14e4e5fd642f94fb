#!/usr/bin/env python3
"""Differential fuzzing of agentic traces (request graphs) against the reference (Dynamo
1.6.1's replay): random agentic_mooncake v2 graphs (plays of sessions whose requests wait for
each other's completion, sub-agents spawned on a request's dispatch and joined by a later
request, delays, not_before floors, shared and growing prompts, zero-token outputs) and
Dynamo request traces with agent_context (sessions, parent sessions, claude tool links) made
from them, on vLLM or SGLang engines, one worker or a round-robin cluster, sometimes a
prefill/decode pair, with the arrival speed-up. Each case runs through the reference (this
script imports it: run it with the reference's python) and through `servesim replay`, and
every request's first-token, end and arrival times, output tokens, reused tokens and
re-admissions are compared, plus the summary's trajectory figures.

  DYN_LOG=error /work/ref/bin/python scripts/diff-fuzz-agentic.py --bin target/release/servesim \\
      [--cases 50] [--seed 1] [--kinds mooncake,dynamo] [--keep DIR]

Mismatching cases are kept in --keep (trace and case file with the reference's figures), ready
for `servesim replay`. tests/variants/agentic/make_cases.py uses the same generator and writer.
"""
import argparse, json, os, random, shutil, string, subprocess, sys, tempfile

ORACLE = "/work/shared/oracle"
COLUMNS = ["first_token_ms", "end_ms", "output_tokens", "reused_input_tokens", "readmissions", "arrival_ms"]
KEYS = ["num_requests", "completed_requests", "total_input_tokens", "total_output_tokens", "duration_ms",
        "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "mean_itl_ms", "mean_e2e_latency_ms", "p99_e2e_latency_ms",
        "prefix_cache_reused_ratio", "output_throughput_tok_s", "total_trajectories", "completed_trajectories",
        "incomplete_trajectories", "mean_trajectory_e2e_latency_ms", "max_trajectory_e2e_latency_ms"]


def reference():
    try:
        import aisimulate  # noqa: F401
    except ImportError:
        sys.path.append(os.path.join(ORACLE, "shim"))
    from dynamo.replay import run_trace_replay
    return run_trace_replay


def rid(rng):
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(5))


def graph(rng, block):
    """Plays of sessions: a session is a chain of requests (each waits for the previous one's
    completion plus a think time); a sub-agent session is spawned on a parent request's
    dispatch and joined by a later parent request. Prompts grow along a session."""
    rows, ids = [], [100]

    def fresh(n):
        out = list(range(ids[0], ids[0] + n))
        ids[0] += n
        return out

    def tokens(hashes):
        return rng.randint((len(hashes) - 1) * block + 1, len(hashes) * block)

    def out_len():
        return 0 if rng.random() < 0.1 else rng.randint(1, 40)

    for p in range(rng.randint(1, 4)):
        play = f"play-{rid(rng)}"
        start = rng.choice([0.0, round(rng.uniform(0, 300), 3)])
        shared = fresh(rng.randint(1, 4))

        def session(name, first_deps, prefix, turns):
            hashes, made, prev = list(prefix), [], None
            for k in range(turns):
                hashes = hashes + fresh(rng.randint(1, 3))
                r = {"request_id": f"{rid(rng)}-{name}-{k}", "play_id": play, "session_id": name, "model": "fuzz-model",
                     "input_length": tokens(hashes), "output_length": out_len(), "hash_ids": list(hashes),
                     "not_before_ms": 0.0, "dependencies": []}
                if k == 0:
                    r["dependencies"] = first_deps
                    if not first_deps:
                        r["not_before_ms"] = start
                else:
                    r["dependencies"] = [{"request_id": prev["request_id"], "trigger": "completion",
                                          "delay_ms": round(rng.choice([0.0, rng.uniform(0, 40)]), 3), "relation": "sequence"}]
                if k > 0 and rng.random() < 0.15:
                    r["not_before_ms"] = round(start + rng.uniform(0, 200), 3)  # a floor
                rows.append(r)
                made.append(r)
                prev = r
            return made

        parent = session(f"{play}-main", [], shared, rng.randint(1, 4))
        for c in range(rng.randint(0, 2)):
            spawner = rng.choice(parent)
            kids = session(f"{play}-sub{c}", [{"request_id": spawner["request_id"], "trigger": rng.choice(["dispatch", "completion"]),
                                               "delay_ms": round(rng.choice([0.0, rng.uniform(0, 15)]), 3), "relation": "spawn"}],
                           spawner["hash_ids"][:rng.randint(1, len(spawner["hash_ids"]))], rng.randint(1, 3))
            later = parent[parent.index(spawner) + 1:]
            if later and rng.random() < 0.8:
                joiner = rng.choice(later)
                joiner["dependencies"].append({"request_id": kids[-1]["request_id"], "trigger": "completion",
                                               "delay_ms": round(rng.choice([0.0, rng.uniform(0, 10)]), 3), "relation": "join"})
    rng.shuffle(rows)
    return rows


def mooncake_trace(rng, block):
    header = {"schema": "dynamo.agentic_mooncake", "version": 2, "block_size": block, "hash_id_scope": "local",
              "source": {"format": "servesim-fuzz", "digest": "x"}}
    return [header] + graph(rng, block)


def dynamo_trace(rng, block):
    """A served agent deployment's records: the graph given recorded times (each request
    starts when its dependencies allow, runs 5-60 ms); child sessions name their parent;
    sometimes a tool event links a child session to the request that spawned it."""
    rows = {r["request_id"]: r for r in graph(rng, block)}
    t0 = 1_000_000
    times = {}

    def when(r):
        if r["request_id"] in times:
            return times[r["request_id"]]
        s = t0 + int(r["not_before_ms"])
        for d in r["dependencies"]:
            ds, de = when(rows[d["request_id"]])
            s = max(s, (ds if d["trigger"] == "dispatch" else de) + int(d["delay_ms"]))
        times[r["request_id"]] = (s, s + rng.randint(5, 60))
        return times[r["request_id"]]

    out, parent_of = [], {}
    for r in rows.values():
        for d in r["dependencies"]:
            src = rows[d["request_id"]]
            if d["relation"] == "spawn":
                parent_of[r["session_id"]] = (src["session_id"], src["request_id"])
    for r in sorted(rows.values(), key=lambda r: when(r)):
        s, e = when(r)
        ctx = {"session_id": r["session_id"]}
        if r["session_id"] in parent_of:
            ctx["parent_session_id"] = parent_of[r["session_id"]][0]
        out.append({"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": e, "agent_context": ctx,
                    "request": {"request_id": r["request_id"], "output_tokens": r["output_length"], "request_received_ms": s,
                                "total_time_ms": e - s, "replay": {"trace_block_size": block, "input_length": r["input_length"],
                                                                    "input_sequence_hashes": r["hash_ids"]}}})
    for child, (parent, source) in sorted(parent_of.items()):
        if rng.random() < 0.5:
            s, e = when(rows[source])
            out.append({"schema": "dynamo.request.trace.v1", "event_type": "tool_end", "event_time_unix_ms": e + 1,
                        "agent_context": {"session_id": parent},
                        "tool": {"tool_call_id": f"tool-{child}", "tool_class": "agent", "started_at_unix_ms": e, "ended_at_unix_ms": e + 1,
                                 "claude": {"source_request_id": source, "child_session_id": child,
                                            "execution_mode": rng.choice(["blocking", "background"])}}})
    return out


def engine(rng, backend, role=None):
    bs = rng.choice([16, 32, 64]) if backend == "vllm" else rng.choice([1, 16])
    eng = {"backend": backend, "block_size": bs, "num_gpu_blocks": max(16, rng.randint(40, 600) * 16 // bs)}
    if rng.random() < 0.3: eng["max_num_batched_tokens"] = rng.choice([256, 512, 2048])
    if rng.random() < 0.3: eng["max_num_seqs"] = rng.randint(1, 8)
    if rng.random() < 0.4: eng["timing_model"] = {"type": "fixed", "prefill_ms": rng.choice([1.0, 5.0, 12.5]), "decode_ms": rng.choice([1.0, 3.3])}
    if role: eng["worker_type"] = role
    return eng


def replay_args(rng, fmt):
    backend = rng.choice(["vllm", "sglang"])
    replay = {"trace_format": fmt, "execution_model": "fuzz-model"}
    if rng.random() < 0.5:
        replay["arrival_speedup_ratio"] = rng.choice([0.5, 1.5, 2.0, 3.0])
    r = rng.random()
    if r < 0.55:
        replay["extra_engine_args"] = {"engine": engine(rng, backend)}
    elif r < 0.85:
        replay["extra_engine_args"] = {"engine": engine(rng, backend)}
        replay["num_workers"] = rng.randint(2, 3)
    else:
        p, d = engine(rng, backend, "prefill"), engine(rng, backend, "decode")
        d["block_size"] = p["block_size"]
        d["num_gpu_blocks"] = max(d["num_gpu_blocks"], 4000 // d["block_size"])
        replay.update(prefill_engine_args={"engine": p}, decode_engine_args={"engine": d})
    return replay


def request_ids(trace_rows):
    """The trace's request ids in servesim's row order (sorted, as the reference numbers them)."""
    ids = [r["request_id"] for r in trace_rows if "play_id" in r]
    ids += [r["request"]["request_id"] for r in trace_rows if r.get("event_type") == "request_end"]
    return sorted(ids)


def run_reference(run_trace_replay, trace_path, replay, ids):
    report = run_trace_replay([trace_path], capture_per_request=True, **replay)
    s = report.summary
    expected = {k: s[k] for k in KEYS if k in s}
    by_id = {r["request_id"]: r for r in report.per_request or []}
    ms = lambda x: None if x is None else round(x, 6)
    rows = []
    for i in ids:
        r = by_id.get(i)
        rows.append([None] * len(COLUMNS) if r is None else
                    [ms(r["first_token_ms"]), ms(r["terminal_time_ms"]), r["output_length"], r["reused_input_tokens"],
                     r["readmission_count"], ms(r["arrival_time_ms"])])
    return expected, rows


def write_case(dirname, name, description, trace_rows, replay, run_trace_replay):
    trace = os.path.join(dirname, f"{name}.jsonl")
    with open(trace, "w") as f:
        for r in trace_rows:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    expected, rows = run_reference(run_trace_replay, trace, replay, request_ids(trace_rows))
    case = {"name": name, "description": description, "trace": f"{name}.jsonl", "replay": replay, "expected": expected,
            "per_request_columns": COLUMNS, "per_request": rows}
    path = os.path.join(dirname, f"{name}.json")
    with open(path, "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    return path, case


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= max(0.01, 1e-4 * abs(a))


def compare(case, got):
    """The first difference between the reference's figures and servesim's answer, or None."""
    rows = got["per_request"]
    if len(rows) != len(case["per_request"]):
        return f"{len(rows)} rows, the reference {len(case['per_request'])}"
    for k, (r, g) in enumerate(zip(case["per_request"], rows)):
        if not all(close(x, y) for x, y in zip(r, g)):
            return f"request {k}: reference {r}, servesim {g}"
    for k, v in case["expected"].items():
        g = got["summary"].get(k)
        if g is None or abs(g - v) > 1e-3 * max(1.0, abs(v)):
            return f"summary {k}: reference {v}, servesim {g}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default="mooncake,dynamo")
    ap.add_argument("--keep", default="agentic-diffs")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    run_trace_replay = reference()
    kinds = a.kinds.split(",")
    tmp = tempfile.mkdtemp()
    same = differ = failed = 0
    for n in range(a.cases):
        kind = kinds[n % len(kinds)]
        block = rng.choice([4, 16, 64])
        fmt = "agentic_mooncake" if kind == "mooncake" else "dynamo"
        trace = mooncake_trace(rng, block) if kind == "mooncake" else dynamo_trace(rng, block)
        replay = replay_args(rng, fmt)
        if fmt == "dynamo":
            replay["trace_block_size"] = block
        name = f"fuzz-{a.seed}-{n}"
        try:
            path, case = write_case(tmp, name, f"diff-fuzz-agentic seed {a.seed} case {n}", trace, replay, run_trace_replay)
        except Exception as e:  # the reference refused or aborted: not a servesim case
            print(f"{name}: reference failed: {str(e)[:160]}")
            failed += 1
            continue
        out = subprocess.run([a.bin, "replay", path], capture_output=True, text=True)
        why = f"servesim failed: {out.stderr.strip()[:300]}" if out.returncode else compare(case, json.loads(out.stdout))
        if why is None:
            same += 1
            continue
        differ += 1
        os.makedirs(a.keep, exist_ok=True)
        for ext in (".json", ".jsonl"):
            shutil.copy(os.path.join(tmp, name + ext), a.keep)
        print(f"{name} ({kind}, {len(case['per_request'])} requests): {why}")
    print(f"agentic fuzz seed {a.seed}: {same} agree, {differ} differ, {failed} refused by the reference")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
