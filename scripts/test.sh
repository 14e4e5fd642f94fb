#!/usr/bin/env bash
# Every test: native unit, conformance and stress tests; the wasm32 build check; the web
# playground's wasm tests (Node), the npm package from Node, lint and format check, unit and end-to-end tests (Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each section's header says how long the script has run (CI has a time budget).
section() { echo "== $1 [$((SECONDS / 60))m$((SECONDS % 60))s]"; }
section "format and lints (rustfmt, clippy natively and for wasm32)"
cargo fmt --all --check
cargo clippy --locked --workspace --all-targets -- -D warnings
# (this also checks that the engine and the harness build for wasm32)
cargo clippy --locked --target wasm32-unknown-unknown -p servesim_engine -p servesim_sim -p servesim_wasm --all-targets -- -D warnings
section "native tests"
# The data converter (parquet) builds in the dev profile: its release build would cost CI minutes.
cargo test --workspace --locked --release --exclude servesim_aisdata
cargo test --locked -p servesim_aisdata

section "wasm adapter in Node (wasm-pack test; wasm-bindgen-test-runner from PATH)"
wasm-pack test --node --mode no-install crates/servesim_wasm --locked
wasm-pack test --node --mode no-install crates/servesim_search --locked
section "web build (wasm + static site in web/dist)"
npm run build
section "wasm and native agree, byte for byte (every conformance case through both)"
cargo build --locked --release -p servesim_cli
node scripts/replay-wasm.mjs --check tests/conformance/cases/*.json
# The documented command itself, byte for byte (npm's banner would break this: see .npmrc).
npm run replay:wasm -- tests/conformance/cases/vllm-prefix.json | cmp - <(target/release/servesim replay tests/conformance/cases/vllm-prefix.json)
section "the npm package from Node: examples/node/run.mjs prints what \`servesim run\` prints"
bash scripts/check-node-example.sh
section "web lint and format (Biome; fails on any finding or unformatted file; tsc ran in the web build)"
npx biome ci
section "web unit tests (vitest; the real engine module in Node)"
npx vitest run --config web/vite.config.ts
section "end-to-end tests (Playwright, Chromium)"
CI=1 npx playwright test --config web/playwright.config.ts
section "done"
