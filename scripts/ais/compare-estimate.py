#!/usr/bin/env python3
"""Per-pass and per-op agreement of `servesim estimate` with the reference's estimator.

usage (with the AIS oracle's python, from anywhere):
  compare-estimate.py --model M --system S --backend B [--tp N] [--gemm Q] [--kvcache Q]
                      [--fmha Q] [--n 500] [--seed 1] [--bin target/release/servesim]
Draws N random prefill and N random decode queries (batches, lengths and prefixes over the
ranges a replay reaches), prices them with `servesim estimate --ops` and with the oracle's
`estimate.py --mocker --ops`, and prints how many totals and ops are bit-equal and the worst
relative difference. Needs the oracle (../shared/oracle/ais); CI does not run this.
"""
import argparse, json, os, random, subprocess, sys

ORACLE = os.environ.get("AIS_ORACLE", "/work/shared/oracle/ais")
PY = os.environ.get("AIS_PYTHON", "/work/ais/bin/python")


def queries(n, seed):
    r = random.Random(seed)
    out = []
    for _ in range(n):
        b = r.choice([1, 1, 2, 3, 4, 7, 8, 16, 31, 64, 100, 256])
        new = r.choice([1, 7, 64, 128, 511, 1000, 2048, 4096, 8192]) if b == 1 else r.randint(1, max(1, 8192 // b))
        prefix = r.choice([0, 0, 0, 16, 512, 1024, 3000, 16384])
        out.append({"prefill": [b, new, prefix]})
    for _ in range(n):
        b = r.choice([1, 2, 3, 5, 8, 16, 33, 64, 128, 200, 256, 512])
        ctx = r.choice([2, 17, 128, 1000, 2049, 4096, 8191, 16384, 32768, 100000])
        out.append({"decode": [b, ctx]})
    return out


def main():
    p = argparse.ArgumentParser()
    for f in ["model", "system", "backend"]:
        p.add_argument("--" + f, required=True)
    p.add_argument("--tp", type=int, default=1)
    for f in ["gemm", "kvcache", "fmha"]:
        p.add_argument("--" + f)
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bin", default="target/release/servesim")
    a = p.parse_args()
    qs = queries(a.n, a.seed)
    text = "".join(json.dumps(q) + "\n" for q in qs)
    cmd = [PY, os.path.join(ORACLE, "estimate.py"), "--model", a.model, "--system", a.system, "--backend", a.backend,
           "--tp", str(a.tp), "--mocker", "--ops", "-"]
    tm = {"type": "ais", "model": a.model, "system": a.system, "tp": a.tp}
    for f, k in [("gemm", "gemm_quant_mode"), ("kvcache", "kvcache_quant_mode"), ("fmha", "fmha_quant_mode")]:
        if getattr(a, f):
            cmd += ["--" + f, getattr(a, f)]
            tm[k] = getattr(a, f)
    ref = subprocess.run(cmd, input=text, capture_output=True, text=True, cwd=ORACLE, env={**os.environ, "DYN_LOG": "error"})
    ours = subprocess.run([a.bin, "estimate", json.dumps({"backend": a.backend, "timing_model": tm}), "--ops"], input=text,
                          capture_output=True, text=True)
    if ours.returncode != 0:
        sys.exit("servesim: " + ours.stderr)
    ref_lines = [json.loads(l) for l in ref.stdout.splitlines() if l.strip()]
    our_lines = [json.loads(l) for l in ours.stdout.splitlines() if l.strip()]
    assert len(ref_lines) == len(our_lines) == len(qs), (len(ref_lines), len(our_lines), ref.stderr[-500:])
    equal = ops_equal = ops_total = errors = 0
    worst = 0.0
    for q, r, o in zip(qs, ref_lines, our_lines):
        if "error" in r or "error" in o:
            errors += 1
            if ("error" in r) != ("error" in o):
                print("error mismatch", q, r.get("error"), o.get("error"))
            continue
        rops = {name.split("_", 1)[1]: ms for name, ms, _ in r["ms"]}
        rtot = 0.0
        for _, ms, _ in r["ms"]:
            rtot += ms
        oops = dict(o["ops"])
        key = {"embedding": "embedding", "attention": "attention"}
        for name, ms in oops.items():
            ops_total += 1
            if rops.get(key.get(name, name)) == ms:
                ops_equal += 1
            else:
                rel = abs(rops.get(key.get(name, name), 0) - ms) / max(abs(ms), 1e-300)
                worst = max(worst, rel)
                if rel > 1e-12:
                    print("op", name, q, rops.get(key.get(name, name)), ms)
        if rtot == o["ms"]:
            equal += 1
        else:
            worst = max(worst, abs(rtot - o["ms"]) / o["ms"])
    print(json.dumps({"model": a.model, "system": a.system, "backend": a.backend, "tp": a.tp, "queries": len(qs),
                      "both_error": errors, "totals_bit_equal": equal, "ops": ops_total, "ops_bit_equal": ops_equal,
                      "worst_rel_diff": worst}))


if __name__ == "__main__":
    main()
