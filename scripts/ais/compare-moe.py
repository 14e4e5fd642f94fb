#!/usr/bin/env python3
"""MoE/MLA passes: servesim estimate --ops against the oracle (estimate-moe.py) on random prefill
and decode shapes; prints how many totals are equal and the first differing ops. usage:
compare-moe.py --model deepseek-ai/DeepSeek-R1 --system h200_sxm --backend sglang --tp 1 --adp 8
--moe-tp 1 --moe-ep 8 --fmha bfloat16 [--n 60] [--bin target/release/servesim]"""
import argparse, json, os, random, subprocess, sys
p = argparse.ArgumentParser()
p.add_argument("--model"); p.add_argument("--system"); p.add_argument("--backend")
p.add_argument("--tp", type=int, default=1); p.add_argument("--adp", type=int, default=1)
p.add_argument("--moe-tp", type=int); p.add_argument("--moe-ep", type=int)
p.add_argument("--gemm"); p.add_argument("--kvcache"); p.add_argument("--fmha"); p.add_argument("--moe-quant")
p.add_argument("--n", type=int, default=60); p.add_argument("--seed", type=int, default=1)
p.add_argument("--bin", default="target/release/servesim")
p.add_argument("--show", type=int, default=3)
a = p.parse_args()
r = random.Random(a.seed)
qs = []
for _ in range(a.n):
    b = r.choice([1, 1, 2, 3, 4, 7, 8, 16, 31, 64])
    new = r.choice([1, 7, 64, 128, 511, 1000, 2048, 4096, 8192]) if b == 1 else r.randint(1, max(1, 8192 // b))
    prefix = r.choice([0, 0, 0, 16, 512, 1024, 3000])
    qs.append({"prefill": [b, new, prefix]})
for _ in range(a.n):
    b = r.choice([1, 2, 3, 5, 8, 16, 33, 64, 128, 200, 256, 512])
    ctx = r.choice([2, 17, 128, 1000, 2049, 4096, 8191, 16384, 32768])
    qs.append({"decode": [b, ctx]})
text = "".join(json.dumps(q) + "\n" for q in qs)
cmd = ["/work/ais/bin/python", os.path.join(os.path.dirname(os.path.abspath(__file__)), "estimate-moe.py"), "--model", a.model, "--system", a.system, "--backend", a.backend, "--tp", str(a.tp), "--adp", str(a.adp), "--ops", "-"]
tm = {"type": "ais", "model": a.model, "system": a.system, "tp": a.tp, "attention_dp_size": a.adp}
for f, k in [("moe_tp", "moe_tp_size"), ("moe_ep", "moe_ep_size")]:
    if getattr(a, f) is not None:
        cmd += ["--" + f.replace("_", "-"), str(getattr(a, f))]; tm[k] = getattr(a, f)
for f, k in [("gemm", "gemm_quant_mode"), ("kvcache", "kvcache_quant_mode"), ("fmha", "fmha_quant_mode"), ("moe_quant", "moe_quant_mode")]:
    if getattr(a, f):
        cmd += ["--" + f.replace("_", "-"), getattr(a, f)]; tm[k] = getattr(a, f)
ref = subprocess.run(cmd, input=text, capture_output=True, text=True, env={**os.environ, "DYN_LOG": "error"})
ours = subprocess.run([a.bin, "estimate", json.dumps({"backend": a.backend, "timing_model": tm}), "--ops"], input=text, capture_output=True, text=True)
if ours.returncode != 0:
    sys.exit("servesim: " + ours.stderr[-2000:])
R = [json.loads(l) for l in ref.stdout.splitlines() if l.startswith("{")]
O = [json.loads(l) for l in ours.stdout.splitlines() if l.strip()]
assert len(R) == len(O) == len(qs), (len(R), len(O), ref.stderr[-800:])
eq = 0; shown = 0; errs = 0
for q, x, y in zip(qs, R, O):
    rm = x["ms"]
    if isinstance(rm, dict):
        errs += 1
        if shown < a.show: print("REF ERR", q, rm["error"][:200], "| ours:", str(y)[:200]); shown += 1
        continue
    rt = sum(v for _, v, _ in rm)
    ops = y.get("ops") or []
    ot = y.get("ms")
    if ot == rt or (ot is not None and abs(ot - rt) <= 1e-9 * abs(rt)):
        eq += 1
    elif shown < a.show:
        shown += 1
        print("DIFF", q, rt, ot)
        for (n, v, _), o in zip(rm, ops):
            ov = o[1] if isinstance(o, list) else o
            print("   ", n, v, ov, "" if v == ov else "<<<")
print(f"{eq}/{len(qs)} equal, ref errors {errs}")
