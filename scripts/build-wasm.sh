#!/usr/bin/env bash
# Builds the browser engine: cargo (wasm32, profile `wasm`) → wasm-bindgen --target web →
# wasm-opt -O3 (npm binaryen ≥ 116; Debian's 108 corrupts wasm-bindgen output) → web/pkg/.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$want" != "$have" ]; then
  echo "build-wasm: wasm-bindgen-cli '${have:-missing}' != the crate's $want; run: bash scripts/setup.sh" >&2
  exit 1
fi
target_dir=${CARGO_TARGET_DIR:-target}
cargo build --locked -p servesim_wasm --target wasm32-unknown-unknown --profile wasm
rm -rf web/pkg
wasm-bindgen --target web --out-dir web/pkg "$target_dir/wasm32-unknown-unknown/wasm/servesim_wasm.wasm"
WASM_OPT=${WASM_OPT:-node_modules/.bin/wasm-opt}
if [ -x "$WASM_OPT" ]; then
  ver=$("$WASM_OPT" --version | grep -oE '[0-9]+' | head -1)
  if [ "$ver" -lt 116 ]; then
    echo "build-wasm: refusing wasm-opt $ver (versions before 116 break externref tables)" >&2
    exit 1
  fi
  # Features come from the module's target_features section (never set `strip = true`).
  # -O3, not -Oz: measured 10 % faster replays for 1.5 % more bytes.
  "$WASM_OPT" -O3 web/pkg/servesim_wasm_bg.wasm -o web/pkg/servesim_wasm_bg.wasm
else
  echo "build-wasm: no wasm-opt (run npm ci first); keeping the unoptimised module" >&2
fi
ls -l web/pkg/servesim_wasm_bg.wasm | awk '{print "build-wasm: web/pkg/servesim_wasm_bg.wasm " $5 " bytes"}'
