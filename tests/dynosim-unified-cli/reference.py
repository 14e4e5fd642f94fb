#!/usr/bin/env python3
"""Runs the shipped DynoSim predict files through the reference (Dynamo 1.6.1's replay) as
servesim maps them, and stores the reference's figures for the Rust test to compare with.

usage (from this directory, with the reference's python; see ../../docs/predict.md):
  DYN_LOG=error /work/ref/bin/python reference.py BIN [--write] [--only NAME]
Files with measured (AIS) timing or the AIS prefill-load model (07 and variants/) need the AIS
oracle's python (/work/ais/bin/python, ../../shared/oracle/ais/): run with it, it puts the
AIS shim on the path. --only NAME runs the files whose name contains NAME and keeps the
stored figures of the others.

For each file servesim can run, `BIN predict FILE --scenario` prints the scenario the file
maps to; this script hands the same load and engines to the reference's
run_synthetic_trace_replay / run_trace_replay (the calls the reference's Dynamo runner makes
for a predict file) and prints both summaries. --write stores the reference's summary and
per-request times in reference-figures.json.
"""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = "/work/shared/oracle"
try:
    import aiconfigurator_core  # noqa: F401  (the AIS oracle's venv: its shim times measured kernels)
    sys.path.insert(0, os.path.join(ORACLE, "ais", "shim"))
    import logging
    logging.disable(logging.WARNING)
except ImportError:
    try:
        import aisimulate  # noqa: F401
    except ImportError:
        sys.path.append(os.path.join(ORACLE, "shim"))
from dynamo.replay import run_trace_replay
from dynamo.replay.api import run_synthetic_trace_replay
try:
    from dynamo.llm import KvRouterConfig, AisPerfConfig
except ImportError:
    # The AIS oracle's venv has no pydantic (dynamo.llm's runtime half needs it); the two
    # configuration types live in the compiled core either way.
    from dynamo._core import KvRouterConfig, AisPerfConfig

P = "components/src/dynamo/replay/tests/e2e/configs/unified_cli/predict/dynamo"
# servesim's own variants of the shipped files (the measured prefill-load model deciding).
VARIANTS = "variants"
# Files whose reference runs differ from run to run (the KV router picks among equal-cost
# workers at random, and samples with a temperature above 0): run N times, store the spread.
STOCHASTIC = {"06-synthetic-disagg-router-planner.yaml": 30}
KEYS = ["num_requests", "completed_requests", "total_input_tokens", "total_output_tokens", "duration_ms",
        "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "mean_itl_ms", "mean_e2e_latency_ms", "p99_e2e_latency_ms",
        "prefix_cache_reused_ratio", "output_throughput_tok_s", "goodput_completed_requests"]


def launch(engine, dp, tp, startup, role=None):
    e = {k: v for k, v in engine.items() if k not in ("kv_bytes_per_token",)}
    if role:
        e["worker_type"] = role
    if "kv_bytes_per_token" in engine:
        e["kv_transfer_bytes_per_token"] = engine["kv_bytes_per_token"]
    return {"engine": e, "dp_size": dp, "tensor_parallel_size": tp, "startup_time": startup}


def model_path(yaml_path):
    """The file's engine.model, as the reference resolves it (from the Dynamo root: here)."""
    for line in open(os.path.join(HERE, yaml_path)):
        if line.strip().startswith("model:"):
            return os.path.join(HERE, line.split(":", 1)[1].strip())
    raise ValueError(f"{yaml_path}: no engine.model")


def kwargs_of(s, yaml_path):
    c = s["cluster"]
    kw = {"router_mode": c.get("router_mode", "round_robin"), "capture_per_request": True}
    if "router_config" in c:
        kw["router_config"] = KvRouterConfig.from_json(json.dumps(c["router_config"]))
    if "ais_perf_config" in c:
        # The router's measured prefill-load estimate: the reference takes the model as a path.
        a = dict(c["ais_perf_config"])
        if isinstance(a.get("model"), dict):
            a["model"] = model_path(yaml_path)
        kw["ais_perf_config"] = AisPerfConfig(config=a)
    if "num_prefill_workers" in c:
        kw.update(prefill_engine_args=launch(c["prefill_engine"], c["prefill_dp_size"], c["prefill_tensor_parallel_size"], c["prefill_startup_time"], "prefill"),
                  decode_engine_args=launch(c["decode_engine"], c["decode_dp_size"], c["decode_tensor_parallel_size"], c["decode_startup_time"], "decode"),
                  num_prefill_workers=c["num_prefill_workers"], num_decode_workers=c["num_decode_workers"])
    else:
        kw.update(extra_engine_args=launch(s["engine"], s.get("dp_size", 1), s.get("tensor_parallel_size", 1), s.get("startup_time", 0)),
                  num_workers=c["num_workers"])
    if "planner" in s:
        kw["planner_config"] = s["planner"]
    slo = s.get("slo", {})
    for k in ("ttft_ms", "itl_ms", "e2e_ms"):
        if k in slo:
            kw["sla_" + k] = slo[k]
    return kw


def ais_engine(e, yaml_path):
    """servesim's `{"type": "ais", ...}` timing as the reference's external AIS provider."""
    t = e.get("timing_model", {})
    if t.get("type") != "ais":
        return e
    cfg = {k: v for k, v in t.items() if k != "type"}
    if isinstance(cfg.get("model"), dict):
        cfg["model"] = model_path(yaml_path)
    cfg.setdefault("worker_type", {"prefill": "prefill", "decode": "decode"}.get(e.get("worker_type"), "aggregated"))
    return {**e, "timing_model": {"type": "external", "provider": "ais", "config": cfg}}


def reference(s, yaml_path):
    for k, role in (("prefill_engine", "prefill"), ("decode_engine", "decode")):
        if k in s["cluster"]:
            # The reference checks the AIS worker_type against the engine's role.
            s["cluster"][k] = ais_engine({**s["cluster"][k], "worker_type": role}, yaml_path)
    s["engine"] = ais_engine(s["engine"], yaml_path)
    kw = kwargs_of(s, yaml_path)
    w = s["workload"]
    if w["type"] == "trace":
        kw.update(trace_format=w.get("format", "mooncake"), trace_block_size=w.get("trace_block_size", 512),
                  max_sim_time_ms=s.get("max_sim_time_ms"))
        agentic = w.get("format") == "agentic_mooncake" or (
            w.get("format") == "dynamo" and "agent_context" in open(os.path.join(HERE, w["path"])).read())
        if agentic:
            # A request graph needs a target model named (a label: every request runs on the
            # engine given).
            kw["execution_model"] = "predict-target"
        if "concurrency" in w:
            kw["replay_concurrency"] = w["concurrency"]
        else:
            kw["arrival_speedup_ratio"] = w.get("arrival_speedup_ratio", 1.0)
        return run_trace_replay([os.path.join(HERE, w["path"])], **kw)
    turns = w.get("turns_per_session", 1)
    kw.update(turns_per_session=turns, shared_prefix_ratio=w.get("shared_prefix_ratio", 0.0),
              num_prefix_groups=w.get("num_prefix_groups", 0), inter_turn_delay_ms=w.get("think_time_ms", 0.0))
    if "concurrency" in w:
        kw["replay_concurrency"] = w["concurrency"]
    elif w["arrival"] == "poisson":
        kw.update(request_rate=w["rate_rps"], arrival_seed=w.get("seed", 42))
    else:
        kw["arrival_interval_ms"] = 1000.0 / w["rate_rps"]
    return run_synthetic_trace_replay(w["input_tokens"]["mean"], w["output_tokens"]["mean"], w["num_requests"] // turns, **kw)


def rows(report):
    """Per request: (session, turn) order when sessions are reported, else arrival order."""
    recs = report.per_request or []
    key = lambda r: (str(r.get("session_id")), r.get("turn_index") or 0, r["arrival_time_ms"])
    if not any(r.get("session_id") is not None for r in recs):
        key = lambda r: (r["arrival_time_ms"], r["first_token_ms"] or 0)
    return [[r["arrival_time_ms"], r["first_token_ms"], r["terminal_time_ms"], r["output_length"]] for r in sorted(recs, key=key)]


def main():
    bin_, write = sys.argv[1], "--write" in sys.argv
    out = {}
    names = [(n, os.path.join(P, n)) for n in sorted(os.listdir(os.path.join(HERE, P)))]
    names += [(f"{VARIANTS}/{n}", os.path.join(VARIANTS, n)) for n in sorted(os.listdir(os.path.join(HERE, VARIANTS)))]
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    if os.path.exists(os.path.join(HERE, "reference-figures.json")):
        out = json.load(open(os.path.join(HERE, "reference-figures.json")))["files"]
    for name, path in names:
        if only and only not in name:
            continue
        mapped = subprocess.run([bin_, "predict", path, "--scenario"], cwd=HERE, capture_output=True, text=True)
        if mapped.returncode != 0:
            print(f"{name}: refused: {mapped.stderr.strip().split(': ', 1)[-1]}")
            continue
        s = json.loads(mapped.stdout)
        ours = json.loads(subprocess.run([bin_, "predict", path], cwd=HERE, capture_output=True, text=True, check=True).stdout)["summary"]
        rep = reference(json.loads(json.dumps(s)), path)
        theirs = {k: rep.summary[k] for k in KEYS if k in rep.summary}
        diff = {k: (ours.get(k), v) for k, v in theirs.items() if not (isinstance(v, (int, float)) and ours.get(k) is not None and abs(ours[k] - v) <= 1e-3 * max(1.0, abs(v)))}
        print(f"{name}: {'agrees' if not diff else 'DIFFERS ' + json.dumps(diff)}")
        out[name] = {"summary": theirs, "rows": rows(rep)}
        if name in STOCHASTIC:
            # The reference's own runs differ: store the range of each figure over its runs.
            runs = [theirs] + [{k: r.summary[k] for k in KEYS if k in r.summary}
                               for r in (reference(json.loads(json.dumps(s)), path) for _ in range(STOCHASTIC[name] - 1))]
            out[name]["spread"] = {k: [min(r[k] for r in runs), max(r[k] for r in runs)] for k in theirs}
            out[name]["runs"] = len(runs)
            outside = {k: (ours.get(k), lo, hi) for k, (lo, hi) in out[name]["spread"].items()
                       if ours.get(k) is None or not lo - 1e-3 * max(1.0, abs(lo)) <= ours[k] <= hi + 1e-3 * max(1.0, abs(hi))}
            print(f"  over {len(runs)} runs of the reference: {'inside its spread' if not outside else 'OUTSIDE ' + json.dumps(outside)}")
    if write:
        with open(os.path.join(HERE, "reference-figures.json"), "w") as f:
            json.dump({"note": "Dynamo 1.6.1's replay on the load and engines servesim maps each predict file to (reference.py)", "files": out}, f, indent=1)
            f.write("\n")


main()
