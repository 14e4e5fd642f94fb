#!/usr/bin/env bash
# Runs compare-estimate.py over GPUs × frameworks × models × TP (a sample), one JSON line each.
# usage: scripts/ais/compare-matrix.sh [N queries per phase] > out.jsonl   (needs the AIS oracle)
set -u
cd "$(dirname "$0")/../.."
n=${1:-200}
PY=${AIS_PYTHON:-/work/ais/bin/python}
models=(meta-llama/Meta-Llama-3.1-8B meta-llama/Meta-Llama-3.1-70B meta-llama/Meta-Llama-3.1-405B Qwen/Qwen3-0.6B Qwen/Qwen3-8B Qwen/Qwen3-32B Qwen/Qwen3-32B-FP8 Qwen/Qwen3-32B-FP8-Static-PerTensor XiaomiMiMo/MiMo-7B-Base nvidia/Llama-3.1-70B-Instruct-FP8)
i=0
for s in h100_sxm h200_sxm b200_sxm b300_sxm gb200 gb300 l40s rtx_pro_6000_server; do
  for b in vllm sglang trtllm; do
    for k in 0 1 2; do
      m=${models[$(( (i * 7 + k * 3) % ${#models[@]} ))]}
      tp=$(( 1 << ((i + k) % 4) ))
      extra=()
      case $(( (i + k) % 5 )) in 3) extra=(--kvcache fp8);; 4) extra=(--gemm fp8);; esac
      $PY scripts/ais/compare-estimate.py --model "$m" --system $s --backend $b --tp $tp --n "$n" --seed $((i * 3 + k)) "${extra[@]}" 2>&1 | tail -1
      i=$((i + 1))
    done
  done
done
