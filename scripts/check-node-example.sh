#!/usr/bin/env bash
# The engine's npm package from Node: examples/node/run.mjs prints exactly what the native
# `servesim run` prints (stdout byte for byte; for bad input the same message and exit
# status), for every example scenario; and the package holds what it declares.
# Needs web/pkg (npm run build) and target/release/servesim.
set -euo pipefail
cd "$(dirname "$0")/.."
servesim=${SERVESIM_BIN:-target/release/servesim}
npm install --prefix examples/node --no-audit --no-fund --loglevel=warn   # links web/pkg as `servesim`
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
runs=0
refused=0
for s in examples/scenario.json examples/trace-scenario.json examples/node/scenarios/*.json; do
  set +e
  node examples/node/run.mjs "$s" >"$tmp/node.out" 2>"$tmp/node.err"; node_rc=$?
  "$servesim" run "$s" >"$tmp/cli.out" 2>"$tmp/cli.err"; cli_rc=$?
  set -e
  if [ "$node_rc" -eq "$cli_rc" ] && cmp -s "$tmp/node.out" "$tmp/cli.out" && cmp -s "$tmp/node.err" "$tmp/cli.err"; then
    echo "same  $s  (exit $cli_rc, $(wc -c <"$tmp/cli.out") bytes)"
    if [ "$cli_rc" -eq 0 ] && [ -s "$tmp/cli.out" ]; then runs=$((runs + 1)); elif [ "$cli_rc" -eq 2 ]; then refused=$((refused + 1)); fi
  else
    echo "DIFFERENT  $s  (exit node $node_rc, cli $cli_rc)"
    diff <(head -c 2000 "$tmp/node.err") <(head -c 2000 "$tmp/cli.err") || true
    bad=1
  fi
done
# The cases cover both outcomes: runs that print results and inputs that are refused.
[ "$runs" -ge 5 ] && [ "$refused" -ge 2 ] || { echo "expected >= 5 runs and >= 2 refusals, got $runs and $refused" >&2; bad=1; }
files=$(cd web/pkg && npm pack --dry-run --json --loglevel=silent | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[0].files.map(f=>f.path).sort().join(" ")))')
echo "npm pack: $files"
for f in package.json servesim_wasm.js servesim_wasm.d.ts servesim_wasm_bg.wasm; do
  case " $files " in *" $f "*) ;; *) echo "the package lacks $f" >&2; bad=1 ;; esac
done
exit $bad
