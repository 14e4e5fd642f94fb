#!/usr/bin/env python3
# Copied from the team's shared oracle tools so the benchmark is self-contained.
"""Deterministic Mooncake-style trace generator (JSON lines: timestamp ms, input_length,
output_length, hash_ids with one id per trace block).

usage: gen_trace.py N OUT [--seed S] [--rate R] [--groups G] [--prefix-blocks A B]
                          [--isl A B] [--osl A B] [--block 512] [--burst K]
"""
import argparse, json, random

p = argparse.ArgumentParser()
p.add_argument("n", type=int)
p.add_argument("out")
p.add_argument("--seed", type=int, default=1)
p.add_argument("--rate", type=float, default=20.0, help="mean requests per second")
p.add_argument("--groups", type=int, default=0, help="shared-prefix groups (0: none)")
p.add_argument("--prefix-blocks", type=int, nargs=2, default=[1, 4])
p.add_argument("--isl", type=int, nargs=2, default=[128, 2048], help="unique tokens after the prefix")
p.add_argument("--osl", type=int, nargs=2, default=[16, 512])
p.add_argument("--block", type=int, default=512, help="tokens per hash id")
p.add_argument("--burst", type=int, default=1, help="requests arriving together")
a = p.parse_args()

rng = random.Random(a.seed)
prefixes = [[(g + 1) * 1000 + j for j in range(rng.randint(*a.prefix_blocks))] for g in range(a.groups)]
next_id = 10_000_000
t = 0.0
with open(a.out, "w") as f:
    for i in range(a.n):
        if i % a.burst == 0:
            t += rng.expovariate(a.rate / a.burst) * 1000.0
        pre = rng.choice(prefixes) if prefixes else []
        isl = len(pre) * a.block + rng.randint(*a.isl)
        ids = list(pre)
        while len(ids) * a.block < isl:
            next_id += 1
            ids.append(next_id)
        rec = {"timestamp": int(t), "input_length": isl, "output_length": rng.randint(*a.osl), "hash_ids": ids}
        f.write(json.dumps(rec) + "\n")
