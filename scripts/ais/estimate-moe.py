#!/usr/bin/env python3
"""The oracle's estimator (estimate.py --mocker --ops) with the MoE fields estimate.py lacks:
--adp (attention_dp_size), --moe-tp, --moe-ep, --moe-quant; --spec prints the op graph. Run with
the AIS oracle's python; CI does not run it."""
import argparse, json, os, subprocess, sys, tempfile, logging
sys.path.insert(0, os.path.join(os.environ.get("AIS_ORACLE", "/work/shared/oracle/ais"), "shim"))
p = argparse.ArgumentParser()
p.add_argument("--model", required=True); p.add_argument("--system", required=True)
p.add_argument("--backend", required=True); p.add_argument("--version", default=None)
p.add_argument("--tp", type=int, default=1); p.add_argument("--adp", type=int, default=1)
p.add_argument("--moe-tp", type=int, default=None); p.add_argument("--moe-ep", type=int, default=None)
p.add_argument("--gemm"); p.add_argument("--kvcache"); p.add_argument("--fmha"); p.add_argument("--moe-quant")
p.add_argument("--spec", action="store_true"); p.add_argument("--ops", action="store_true")
p.add_argument("input", nargs="?")
a = p.parse_args()
logging.disable(logging.WARNING)
from aisimulate_core.sdk.engine import build_spec_json, _spec2bin_path
spec = build_spec_json(a.model, a.system, a.backend, a.version, tp_size=a.tp, attention_dp_size=a.adp,
    moe_tp_size=a.moe_tp, moe_ep_size=a.moe_ep, gemm_quant_mode=a.gemm, kvcache_quant_mode=a.kvcache,
    fmha_quant_mode=a.fmha, moe_quant_mode=a.moe_quant)
if a.spec:
    print(spec); sys.exit()
fd, path = tempfile.mkstemp(suffix=".spec.json"); os.write(fd, spec.encode()); os.close(fd)
proc = subprocess.Popen([_spec2bin_path(), "est", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
for line in (sys.stdin if a.input in (None, "-") else open(a.input)):
    if not line.strip(): continue
    obj = json.loads(line)
    if "prefill" in obj:
        b, new, pfx = obj["prefill"]; q = {("ops_prefill" if a.ops else "prefill"): [b, pfx + new, pfx]}
    else:
        b, ctx = obj["decode"]; q = {("ops_decode" if a.ops else "decode"): [b, ctx - 1, 2]}
    proc.stdin.write(json.dumps(q) + "\n"); proc.stdin.flush()
    print(json.dumps({"query": obj, "ms": json.loads(proc.stdout.readline())}), flush=True)
