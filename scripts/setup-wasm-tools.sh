#!/usr/bin/env bash
# The wasm build's tools, from the crate registry (no binary downloads): wasm-bindgen-cli at
# exactly the wasm-bindgen crate's version in Cargo.lock, and wasm-pack. Skips what is
# already installed at the right version. wasm-opt comes from the npm package binaryen
# (`npm ci`), not from here.
set -euo pipefail
cd "$(dirname "$0")/.."
WASM_PACK_VERSION=0.15.1
want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$want" ]; then
  # Exactly the crate's version; no --locked (its lockfile pins a crate the registry lacks).
  cargo install wasm-bindgen-cli --version "$want"
fi
if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}')" != "$WASM_PACK_VERSION" ]; then
  # Not the npm package `wasm-pack`: its install script downloads a prebuilt binary.
  # Measured: about 4 minutes on 2 cores (see docs/packaging.md).
  cargo install wasm-pack --version "$WASM_PACK_VERSION" --locked
fi
