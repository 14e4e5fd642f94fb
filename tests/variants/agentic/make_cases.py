#!/usr/bin/env python3
"""Writes the agentic variant cases (request graphs) with the reference's figures: each case's
trace (NAME.jsonl) and case file (NAME.json: replay arguments, the reference's summary and one
row per request in request-id order, the order servesim reports them in). The traces are
written here by hand to pin one rule each, or drawn by scripts/diff-fuzz-agentic.py's generator.

  DYN_LOG=error /work/ref/bin/python tests/variants/agentic/make_cases.py

crates/servesim_sim/tests/sim/dynosim.rs holds servesim to every case.
"""
import importlib.util, json, os, random

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
spec = importlib.util.spec_from_file_location("fuzz", os.path.join(ROOT, "scripts", "diff-fuzz-agentic.py"))
fuzz = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fuzz)
FIXTURES = os.path.join(ROOT, "tests/dynosim-unified-cli/components/src/dynamo/replay/tests/e2e/configs/unified_cli/fixtures/traces")

HEADER = {"schema": "dynamo.agentic_mooncake", "version": 2, "block_size": 4, "hash_id_scope": "local",
          "source": {"format": "servesim-variant", "digest": "v1"}}
FIXED = {"type": "fixed", "prefill_ms": 1.0, "decode_ms": 1.0}


def req(id, play, session, hashes, out, not_before=0.0, deps=(), tokens=None):
    return {"request_id": id, "play_id": play, "session_id": session, "model": "m",
            "input_length": tokens or 4 * len(hashes), "output_length": out, "hash_ids": list(hashes),
            "not_before_ms": not_before, "dependencies": [dict(zip(("request_id", "trigger", "delay_ms", "relation"), d)) for d in deps]}


def vllm(**kw):
    e = {"block_size": 4, "num_gpu_blocks": 256}
    e.update(kw)
    return {"extra_engine_args": {"engine": e}}


def sglang(**kw):
    return vllm(**{"backend": "sglang", "block_size": 1, "num_gpu_blocks": 1024, **kw})


def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def hand_made():
    spawn_same = [HEADER,
                  req("z-root", "p", "main", [1, 2], 3),
                  req("a-child", "p", "sub", [1, 3], 2, deps=[("z-root", "dispatch", 0.0, "spawn")]),
                  req("m-next", "p", "main", [1, 2, 4], 2, deps=[("z-root", "completion", 0.0, "sequence")])]
    join = [HEADER,
            req("r", "p", "main", [1], 2),
            req("c1", "p", "s1", [1, 2], 9, deps=[("r", "dispatch", 2.0, "spawn")]),
            req("c2", "p", "s2", [1, 3], 3, deps=[("r", "dispatch", 4.0, "spawn")]),
            req("j", "p", "main", [1, 4], 2, deps=[("r", "completion", 0.0, "sequence"), ("c1", "completion", 3.0, "join"),
                                                   ("c2", "completion", 30.0, "join")])]
    floor = [HEADER,
             req("a", "p", "s", [1], 2, not_before=10.0),
             req("b", "p", "s", [1, 2], 2, not_before=200.0, deps=[("a", "completion", 1.0, "sequence")]),
             req("c", "q", "t", [5], 3, not_before=60.0)]
    zero = [HEADER,
            req("a", "p", "s", [1, 2], 0),
            req("b", "p", "s", [1, 2, 3], 4, deps=[("a", "completion", 0.0, "sequence")]),
            req("c", "q", "t", [7, 8], 0, not_before=1.0),
            req("d", "q", "t", [7, 8, 9], 0, deps=[("c", "completion", 2.0, "sequence")])]
    order = [HEADER,
             req("b-second", "p2", "s2", [2], 3),
             req("a-first", "p1", "s1", [1], 3),
             req("c-third", "p3", "s3", [3], 3)]
    grow = [HEADER] + [req(f"t{k}", "p", "s", list(range(1, 3 + 3 * k)), 5, tokens=4 * (2 + 3 * k) - 1,
                           deps=[(f"t{k - 1}", "completion", 7.5, "sequence")] if k else ()) for k in range(5)]
    inferred = [  # a child session with a parent and no tool event: spawn and join inferred from the times
        {"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 140,
         "agent_context": {"session_id": "parent"}, "request": {"request_id": "p1", "output_tokens": 4, "request_received_ms": 100,
                                                                "total_time_ms": 40, "replay": {"trace_block_size": 4, "input_length": 8, "input_sequence_hashes": [1, 2]}}},
        {"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 170,
         "agent_context": {"session_id": "kid", "parent_session_id": "parent"},
         "request": {"request_id": "k1", "output_tokens": 3, "request_received_ms": 120, "total_time_ms": 50,
                     "replay": {"trace_block_size": 4, "input_length": 8, "input_sequence_hashes": [1, 3]}}},
        {"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 230,
         "agent_context": {"session_id": "kid", "parent_session_id": "parent"},
         "request": {"request_id": "k2", "output_tokens": 2, "request_received_ms": 190, "total_time_ms": 40,
                     "replay": {"trace_block_size": 4, "input_length": 12, "input_sequence_hashes": [1, 3, 4]}}},
        {"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 290,
         "agent_context": {"session_id": "parent"}, "request": {"request_id": "p2", "output_tokens": 2, "request_received_ms": 260,
                                                                "total_time_ms": 30, "replay": {"trace_block_size": 4, "input_length": 12, "input_sequence_hashes": [1, 2, 5]}}},
    ]
    background = json.loads(json.dumps(inferred))
    background[3]["request"].update(request_received_ms=200, total_time_ms=30)
    background[3]["event_time_unix_ms"] = 230
    background += [
        {"schema": "dynamo.request.trace.v1", "event_type": "tool_end", "event_time_unix_ms": 141, "agent_context": {"session_id": "parent"},
         "tool": {"tool_call_id": "t1", "tool_class": "agent", "started_at_unix_ms": 140, "ended_at_unix_ms": 141,
                  "claude": {"source_request_id": "p1", "consumer_request_id": "p2", "child_session_id": "kid", "execution_mode": "background"}}}]
    for r in (inferred[0],):  # the parent's first request ends late: the join decides
        r["request"]["total_time_ms"], r["event_time_unix_ms"] = 130, 230
    explicit = json.loads(json.dumps(inferred))
    explicit[3]["request"]["replay"]["dependencies"] = [{"request_id": "k1", "relation": "join", "trigger": "completion"}]
    failing = [HEADER,
               req("a-big", "p", "s", list(range(1, 41)), 3),
               req("b-after", "p", "s", list(range(1, 42)), 2, deps=[("a-big", "completion", 0.0, "sequence")]),
               req("c-kid", "p", "k", [1, 50], 4, deps=[("a-big", "dispatch", 0.0, "spawn")]),
               req("d-other", "q", "t", [60, 61], 3, not_before=2.0),
               req("e-next", "q", "t", [60, 61, 62], 2, deps=[("d-other", "completion", 1.0, "sequence")])]
    dyn = {"trace_format": "dynamo", "trace_block_size": 4}
    return [
        ("am-fixture-speedup", "the shipped agentic_mooncake fixture (predict file 11) at 1.5x: the child is spawned 5/1.5 ms after the root's dispatch, the join waits for both",
         lines(os.path.join(FIXTURES, "agentic-mooncake.jsonl")), {**vllm(block_size=64, timing_model=FIXED), "arrival_speedup_ratio": 1.5}),
        ("am-fixture-sglang", "the same fixture on SGLang with the default timing",
         lines(os.path.join(FIXTURES, "agentic-mooncake.jsonl")), {**sglang(), "arrival_speedup_ratio": 1.5}),
        ("am-spawn-same-instant", "a dispatch edge without delay: the child arrives in its parent's instant, though its id sorts first",
         spawn_same, vllm()),
        ("am-join-slowest", "a join waits for the latest of its edges (completion plus delay)", join, vllm()),
        ("am-join-slowest-rr2", "the same join over two round-robin workers", join, {**vllm(), "num_workers": 2}),
        ("am-not-before-floor", "a dependent request waits for its not_before_ms too; times count from the earliest not_before_ms",
         floor, {**vllm(), "arrival_speedup_ratio": 2.0}),
        ("am-zero-output-vllm", "requests of zero output tokens end with their prefill, with no first token", zero, vllm()),
        ("am-zero-output-sglang", "zero output tokens on SGLang", zero, sglang()),
        ("am-zero-output-sglang-disagg", "zero output tokens on an SGLang prefill/decode pair: the decode worker's step lets such a request go without a token and without time (alone, it ends at its activation)",
         zero, {"prefill_engine_args": {"engine": {"backend": "sglang", "block_size": 4, "num_gpu_blocks": 256, "worker_type": "prefill",
                                                   "timing_model": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 3.3}}},
                "decode_engine_args": {"engine": {"backend": "sglang", "block_size": 4, "num_gpu_blocks": 256, "worker_type": "decode"}}}),
        ("am-ready-order", "roots ready at one instant are dispatched in request-id order, not file order",
         order, vllm(max_num_seqs=1)),
        ("am-growing-context", "an agent's prompt grows by its answers and tool outputs: each turn reuses the cached prefix",
         grow, vllm(num_gpu_blocks=64)),
        ("am-growing-context-sglang", "the same on SGLang's radix cache", grow, sglang(num_gpu_blocks=96)),
        ("am-disagg", "a request graph on a prefill/decode pair",
         join, {"prefill_engine_args": {"engine": {"block_size": 4, "num_gpu_blocks": 256, "worker_type": "prefill"}},
                "decode_engine_args": {"engine": {"block_size": 4, "num_gpu_blocks": 256, "worker_type": "decode"}}}),
        ("am-failed-play", "a request no decode pool can hold fails at hand-off: its play's requests not yet dispatched never arrive, one already dispatched runs, another play goes on",
         failing, {"prefill_engine_args": {"engine": {"block_size": 4, "num_gpu_blocks": 256, "worker_type": "prefill"}},
                   "decode_engine_args": {"engine": {"block_size": 4, "num_gpu_blocks": 16, "worker_type": "decode"}}}),
        ("dy-fixture-speedup", "the shipped Dynamo agent trace (predict file 13) at 2x: the tool event names the child's spawner and consumer",
         lines(os.path.join(FIXTURES, "dynamo-agentic.jsonl")), {**dyn, **vllm(block_size=64, timing_model=FIXED), "arrival_speedup_ratio": 2.0}),
        ("dy-inferred-edges", "a child session without a tool event: spawned by the latest parent request started before it, joined by the first started after it ended",
         inferred, {**dyn, **vllm()}),
        ("dy-background-tool", "a background tool names the consumer: it joins the latest child request ended by its start",
         background, {**dyn, **vllm()}),
        ("dy-explicit-dependencies", "an exporter's replay.dependencies replace the inferred edges between the two sessions",
         explicit, {**dyn, **vllm()}),
    ]


def drawn():
    """Cases of the fuzzer's generator (seeded)."""
    out = []
    for seed, kind in [(11, "mooncake"), (12, "dynamo"), (13, "mooncake"), (14, "dynamo"), (15, "mooncake"), (20, "dynamo"),
                       (17, "mooncake"), (18, "dynamo")]:
        rng = random.Random(seed)
        block = rng.choice([4, 16, 64])
        fmt = "agentic_mooncake" if kind == "mooncake" else "dynamo"
        trace = fuzz.mooncake_trace(rng, block) if kind == "mooncake" else fuzz.dynamo_trace(rng, block)
        replay = fuzz.replay_args(rng, fmt)
        if fmt == "dynamo":
            replay["trace_block_size"] = block
        out.append((f"fuzz-{kind}-{seed}", f"scripts/diff-fuzz-agentic.py's generator, seed {seed}", trace, replay))
    return out


def main():
    run = fuzz.reference()
    total = 0
    for name, description, trace, replay in hand_made() + drawn():
        replay = {"trace_format": "agentic_mooncake", **replay, "execution_model": "m"}
        _, case = fuzz.write_case(HERE, name, description, trace, replay, run)
        total += len(case["per_request"])
        print(f"{name}: {len(case['per_request'])} requests, duration {case['expected']['duration_ms']:.3f} ms")
    print(f"{total} requests in all")


main()
