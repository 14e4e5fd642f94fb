#!/usr/bin/env bash
# One-time setup on a fresh machine (rustup and Node present): toolchain pieces, then a build.
# --no-site skips building the page (CI: scripts/test.sh builds it anyway).
set -euo pipefail
site=1
[ "${1:-}" = "--no-site" ] && site=0
cd "$(dirname "$0")/.."
rustup target add wasm32-unknown-unknown
rustup component add clippy rustfmt
cargo build --release --locked -p servesim_cli

# --- web playground: Chromium for the end-to-end tests, wasm-bindgen-cli and wasm-pack, npm
# packages, the site.
if [ ! -x /usr/bin/chromium ] && [ -z "${CHROMIUM_PATH:-}" ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y chromium
fi
bash scripts/setup-wasm-tools.sh   # wasm-bindgen-cli (pinned) and wasm-pack, from crates.io
npm ci --no-audit --no-fund --loglevel=warn
if [ "$site" = 1 ]; then
  npm run build        # scripts/build-wasm.sh, then the static site in web/dist
fi
