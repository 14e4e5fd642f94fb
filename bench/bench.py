#!/usr/bin/env python3
"""Side-by-side replay benchmark: servesim native, servesim wasm (Node) and, if installed, the
reference (Dynamo 1.6.1's offline replay), on the same workloads in one run.

usage: python3 bench/bench.py [--reference VENV] [--rounds 3] [--large] [--million]

Workloads (traces made by bench/gen_trace.py into bench/data/, deterministic):
  one-20k   20,000 requests, one worker, block 16, 65,536 blocks
  rr4-20k   the same trace, four round-robin workers, 16,384 blocks each
  one-200k  200,000 requests of the same shape, one worker (--large)
  one-1m    1,000,000 requests, native only: peak memory (--million)
  long-hour-rr8  the public conformance case of an hour of production-shaped traffic
            (12,000 requests, 8 round-robin workers, 512-token blocks; shared/conformance)

Each round runs every contender once, alternating, so machine noise hits them alike; the
table reports each contender's fastest round and the ratios. Times are whole-process wall
times for servesim (start-up, trace parsing and output included) and the reference's own
in-process replay time (`wall_s`, its Python start-up excluded): the comparison favours the
reference. Answers are checked: native and wasm byte-identical, and every request equal to
the reference's (same rule as the conformance tests).
"""
import argparse, json, os, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
data = os.path.join(here, "data")
ap = argparse.ArgumentParser()
ap.add_argument("--reference", help="virtual environment with the reference installed (shared/oracle/setup.sh)")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--large", action="store_true", help="also the 200,000-request workload")
ap.add_argument("--million", action="store_true", help="also stream 1,000,000 requests (native, memory)")
ap.add_argument("--bin", default=os.path.join(root, "target/release/servesim"))
ap.add_argument("--long-hour", help="the long-hour case (default: the shared conformance corpus beside the "
                "repository or its worktree; skipped when missing)")
ap.add_argument("--only", help="comma-separated workload names to run")
a = ap.parse_args()
os.makedirs(data, exist_ok=True)

SHAPE = ["--seed", "7", "--rate", "20", "--groups", "8", "--prefix-blocks", "1", "6", "--isl", "128", "2048", "--osl", "16", "512"]


def trace(n):
    path = os.path.join(data, f"perf-{n}.jsonl")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(here, "gen_trace.py"), str(n), path] + SHAPE, check=True)
    return path


def case(name, n, workers, blocks):
    replay = {"extra_engine_args": {"engine": {"block_size": 16, "num_gpu_blocks": blocks}}}
    if workers > 1:
        replay.update(num_workers=workers, router_mode="round_robin")
    path = os.path.join(data, f"{name}.json")
    json.dump({"name": name, "trace": os.path.basename(trace(n)), "replay": replay}, open(path, "w"))
    return path


def run(cmd, env=None):
    """Wall seconds and stdout of one child process."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = p.communicate()
    wall = time.perf_counter() - t
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} failed: {err.decode()[-400:]}")
    return wall, out


def peak_mb(cmd, env=None):
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=True)
    return int(out.stderr.decode().strip().splitlines()[-1]) / 1024


def native(c):
    return run([a.bin, "replay", c])


def wasm(c):
    return run(["node", os.path.join(root, "scripts/replay-wasm.mjs"), c])


REF_SCRIPT = r"""
import json, sys, time, os
from collections import defaultdict, deque
from dynamo.replay import run_trace_replay
case = json.load(open(sys.argv[1])); base = os.path.dirname(sys.argv[1])
t = time.perf_counter()
rep = run_trace_replay([os.path.join(base, case["trace"])], capture_per_request=True, **case["replay"])
wall = time.perf_counter() - t
lines = [json.loads(l) for l in open(os.path.join(base, case["trace"])) if l.strip()]
t0 = min(l["timestamp"] for l in lines)
pool = defaultdict(deque)
for r in sorted(rep.per_request, key=lambda r: (r["arrival_time_ms"], r["first_admit_ms"] or 0)):
    pool[(round(r["arrival_time_ms"], 2), r["input_length"], r["requested_output_length"])].append(r)
rows = []
for l in lines:
    r = pool[(round(l["timestamp"] - t0, 2), l["input_length"], l["output_length"])].popleft()
    rows.append([r["first_token_ms"], r["terminal_time_ms"], r["output_length"], r["reused_input_tokens"], r["readmission_count"]])
print(json.dumps({"wall_s": wall, "per_request": rows}))
"""


def reference(c):
    script = os.path.join(tempfile.gettempdir(), "servesim-bench-ref.py")
    open(script, "w").write(REF_SCRIPT)
    env = dict(os.environ, DYN_LOG="error")
    _, out = run([os.path.join(a.reference, "bin/python"), script, c], env)
    res = json.loads(out)
    return res["wall_s"], res


def same_requests(ref_rows, ours_rows):
    close = lambda x, y: (x is None and y is None) or (x is not None and y is not None and abs(x - y) <= max(0.01, 1e-4 * abs(y)))
    return len(ref_rows) == len(ours_rows) and all(
        close(r[0], g[0]) and close(r[1], g[1]) and list(r[2:5]) == list(g[2:5]) for r, g in zip(ref_rows, ours_rows))


workloads = [("one-20k", 20_000, 1, 65536), ("rr4-20k", 20_000, 4, 16384)]
if a.large:
    workloads.append(("one-200k", 200_000, 1, 65536))
candidates = [a.long_hour] if a.long_hour else [os.path.join(root, up, "shared/conformance/cases/long-hour-rr8.json") for up in ("..", "../..")]
long_hour = next((os.path.abspath(c) for c in candidates if os.path.exists(c)), None)
if long_hour:
    workloads.append(("long-hour-rr8", 12_000, 8, None))
if a.only:
    workloads = [w for w in workloads if w[0] in a.only.split(",")]
rows = []
for name, n, workers, blocks in workloads:
    c = long_hour if name == "long-hour-rr8" else case(name, n, workers, blocks)
    best = {}
    answers = {}
    for _ in range(a.rounds):
        contenders = [("native", native), ("wasm", wasm)] + ([("reference", reference)] if a.reference else [])
        for who, fn in contenders:
            wall, out = fn(c)
            best[who] = min(best.get(who, float("inf")), wall)
            answers[who] = out
    ok = answers["native"] == answers["wasm"]
    if a.reference:
        ok = ok and same_requests(answers["reference"]["per_request"], json.loads(answers["native"])["per_request"])
    mem = {"native": peak_mb([a.bin, "replay", c])}
    if a.reference:
        mem["reference"] = peak_mb([os.path.join(a.reference, "bin/python"), os.path.join(tempfile.gettempdir(), "servesim-bench-ref.py"), c], dict(os.environ, DYN_LOG="error"))
    rows.append((name, n, best, mem, ok))
    print(f"{name}: " + ", ".join(f"{k} {v:.3f} s" for k, v in best.items()) + f", peak MB {mem}, identical answers: {ok}", flush=True)

print("\n| workload | native vs reference | wasm (Node) vs reference | wasm time / native time | native peak memory vs reference | answers |")
print("|---|---|---|---|---|---|")
for name, n, best, mem, ok in rows:
    slower = f"{best['wasm'] / best['native']:.2f}×"
    if "reference" in best:
        r = best["reference"]
        print(f"| {name} | {r / best['native']:.1f}× faster | {r / best['wasm']:.1f}× faster | {slower} | {mem['native'] / mem['reference']:.2f}× | {'identical' if ok else 'DIFFER'} |")
    else:
        print(f"| {name} | native {best['native']:.3f} s | wasm {best['wasm']:.3f} s | {slower} | {mem['native']:.0f} MB | {'native = wasm' if ok else 'DIFFER'} |")
by = {name: (n, best) for name, n, best, _, _ in rows}
if "one-200k" in by:
    (n1, b1), (n2, b2) = by["one-20k"], by["one-200k"]
    print(f"\ntime per request, 200k vs 20k (native): {(b2['native'] / n2) / (b1['native'] / n1):.2f}×")
if a.million:
    c = case("one-1m", 1_000_000, 1, 65536)
    print(f"1,000,000 requests streamed natively: peak {peak_mb([a.bin, 'replay', c]):.0f} MB")
