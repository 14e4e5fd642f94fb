#!/usr/bin/env bash
# Every test: native unit, conformance and stress tests; the wasm32 build check.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== native tests"
cargo test --workspace --locked --release
echo "== engine and harness build for wasm32"
cargo check --locked --target wasm32-unknown-unknown -p servesim_engine -p servesim_sim
