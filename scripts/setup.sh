#!/usr/bin/env bash
# One-time setup on a fresh machine (rustup and Node present): toolchain pieces, then a build.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-unknown-unknown
cargo build --release --locked -p servesim_cli
