#!/usr/bin/env bash
# Builds the engine's npm package in web/pkg with wasm-pack (`--target web`, cargo profile
# `wasm`), using the wasm-bindgen-cli on PATH (pinned to the crate's version; wasm-pack
# downloads nothing with `--mode no-install`), then wasm-opt -Os from the npm package
# binaryen (>= 116; Debian's 108 corrupts wasm-bindgen output), then names the package.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$want" != "$have" ]; then
  echo "build-wasm: wasm-bindgen-cli '${have:-missing}' != the crate's $want; run: bash scripts/setup.sh" >&2
  exit 1
fi
if ! command -v wasm-pack >/dev/null; then
  echo "build-wasm: wasm-pack is missing; run: bash scripts/setup-wasm-tools.sh" >&2
  exit 1
fi
rm -rf web/pkg
# --no-opt: wasm-pack would download its own binaryen; ours comes from npm (below).
wasm-pack --quiet build crates/servesim_wasm --target web --out-dir ../../web/pkg --out-name servesim_wasm \
  --mode no-install --no-opt --profile wasm -- --locked
# The playground's first module (web/pkg/first/): the same crate without its `full` feature,
# so without trace files, measured-kernel data, NPZ profiles, sweeps and the replay case
# (docs/performance.md, "Size"). The page's engine worker starts on it and loads the full
# module above when a scenario needs a part it leaves out (`needsFullEngine`).
wasm-pack --quiet build crates/servesim_wasm --target web --out-dir ../../web/pkg/first --out-name servesim_first \
  --mode no-install --no-opt --profile wasm -- --locked --no-default-features
rm -f web/pkg/first/package.json web/pkg/first/.gitignore web/pkg/first/README.md
# The search module (crates/servesim_search: DynoSim's YAML, recommend's search and its
# candidate runs) is a second package in web/pkg/search/, fetched only when the page searches:
# the engine download the playground needs first stays small (docs/performance.md, "Size").
wasm-pack --quiet build crates/servesim_search --target web --out-dir ../../web/pkg/search --out-name servesim_search \
  --mode no-install --no-opt --profile wasm -- --locked
# One package (`servesim`, with `servesim/search` as a subpath): the inner package.json goes.
rm -f web/pkg/search/package.json web/pkg/search/.gitignore web/pkg/search/README.md
WASM_OPT=${WASM_OPT:-node_modules/.bin/wasm-opt}
if [ -x "$WASM_OPT" ]; then
  ver=$("$WASM_OPT" --version | grep -oE '[0-9]+' | head -1)
  if [ "$ver" -lt 116 ]; then
    echo "build-wasm: refusing wasm-opt $ver (versions before 116 break externref tables)" >&2
    exit 1
  fi
  # Features come from the module's target_features section (never set `strip = true`).
  # -Os with the profile's opt-level "s": the download under 1.2 MB (docs/performance.md);
  # WASM_OPT_LEVEL=-O3 with CARGO_PROFILE_WASM_OPT_LEVEL=3 builds the faster, larger module.
  for m in web/pkg/servesim_wasm_bg.wasm web/pkg/first/servesim_first_bg.wasm web/pkg/search/servesim_search_bg.wasm; do
    "$WASM_OPT" "${WASM_OPT_LEVEL:--Os}" "$m" -o "$m"
  done
else
  echo "build-wasm: no wasm-opt (run npm ci first); keeping the unoptimised modules" >&2
fi
# The package's npm identity (wasm-pack takes the crate's name) and its entry points: the
# module, its types, and the .wasm itself (Node reads it from disk: examples/node/run.mjs).
(cd web/pkg && npm pkg set name=servesim \
  'description=servesim: an LLM-serving simulator (Dynamo mocker semantics) as WebAssembly, for browsers and Node' \
  'keywords[]=llm' 'keywords[]=inference' 'keywords[]=simulator' 'keywords[]=kv-cache' 'keywords[]=webassembly' \
  'exports[.][types]=./servesim_wasm.d.ts' 'exports[.][default]=./servesim_wasm.js' \
  'exports[./servesim_wasm_bg.wasm]=./servesim_wasm_bg.wasm' 'exports[./package.json]=./package.json' \
  'exports[./search][types]=./search/servesim_search.d.ts' 'exports[./search][default]=./search/servesim_search.js' \
  'exports[./search/servesim_search_bg.wasm]=./search/servesim_search_bg.wasm' 'files[]=search' \
  'engines.node=>=20.6')
ls -l web/pkg/servesim_wasm_bg.wasm web/pkg/first/servesim_first_bg.wasm web/pkg/search/servesim_search_bg.wasm | awk '{print "build-wasm: " $9 " " $5 " bytes"}'
