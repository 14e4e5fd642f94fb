#!/usr/bin/env bash
# Runs one fuzz target for a set time: fuzz/run.sh TARGET [SECONDS] [extra libFuzzer flags]
# Targets: mooncake scenario engine_args replay_case npz simulate.
# The corpus (fuzz/corpus/TARGET) is seeded from the repository's own inputs on first use.
# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them.
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?target}
secs=${2:-60}
shift $(( $# > 1 ? 2 : 1 ))
corpus=corpus/$target
if [ ! -d "$corpus" ]; then
  mkdir -p "$corpus"
  case $target in
    mooncake) for f in ../tests/conformance/traces/*.jsonl; do
                { printf '\x03'; head -c 4000 "$f"; } > "$corpus/$(basename "$f")"; done ;;
    scenario) cp ../examples/*.json "$corpus/" ;;
    replay_case) cp ../tests/conformance/cases/*.json ../tests/variants/*.json "$corpus/" ;;
    engine_args) for f in ../tests/conformance/cases/*.json; do
                   python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["replay"].get("extra_engine_args", {})))' "$f" \
                     > "$corpus/$(basename "$f")"; done ;;
    npz) cp ../tests/conformance/profiles/*.npz "$corpus/" 2>/dev/null || true ;;
  esac
fi
RUSTC_BOOTSTRAP=1 exec cargo fuzz run -O "$target" "$corpus" -- -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 "$@"
