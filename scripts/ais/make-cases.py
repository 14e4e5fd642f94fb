#!/usr/bin/env python3
"""Writes servesim's own AIS cases (it rewrites every case: restore the others' figures with git, or
run only the new lines) (tests/ais/cases/*.json) without figures; run each through the
oracle with `replay_ais.py CASE --write` (from tests/ais/cases, so relative model paths resolve)."""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "../../tests/ais/cases")


def case(name, note, trace, engine, ais, replay=None):
    cfg = {"model": ais.pop("model"), "system": ais.pop("system"), "backend": engine["backend"], "worker_type": "aggregated", **ais}
    engine = {**engine, "timing_model": {"type": "external", "provider": "ais", "config": cfg}}
    c = {"name": name, "note": note, "trace": "../traces/" + trace, "replay": {**(replay or {}), "extra_engine_args": {"engine": engine}}}
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(c, f, indent=1)
        f.write("\n")


case("ais-trtllm-h100-llama31-70b-tp4", "TRT-LLM scheduler, Llama 3.1 70B on H100 at TP 4 (custom all-reduce measured at 4)",
     "light200.jsonl", {"backend": "trtllm", "num_gpu_blocks": 20000, "block_size": 32},
     {"model": "meta-llama/Meta-Llama-3.1-70B", "system": "h100_sxm", "tp": 4}, {"arrival_speedup_ratio": 2.0})
case("ais-sglang-b200-qwen3-8b-fp8kv", "SGLang on B200, Qwen3-8B with an fp8 KV cache (generation attention in fp8)",
     "mixed240.jsonl", {"backend": "sglang", "num_gpu_blocks": 300000},
     {"model": "Qwen/Qwen3-8B", "system": "b200_sxm", "tp": 1, "kvcache_quant_mode": "fp8"})
case("ais-vllm-gb200-llama31-70b-fp8-tp8", "vLLM on GB200 at TP 8 (beyond the 4-GPU node: all-reduce across the NVL72 rack), nvidia/Llama-3.1-70B-Instruct-FP8 (per-tensor fp8_static GEMMs, fp8 KV)",
     "burst200.jsonl", {"backend": "vllm", "num_gpu_blocks": 30000, "block_size": 16},
     {"model": "nvidia/Llama-3.1-70B-Instruct-FP8", "system": "gb200", "tp": 8})
case("ais-vllm-h200-qwen3-32b-fp8-chunked", "vLLM chunked prefill of long prompts (budget 2048 tokens) with decodes in the same passes, Qwen3-32B-FP8 (fp8_block) at TP 2",
     "long150.jsonl", {"backend": "vllm", "num_gpu_blocks": 12000, "block_size": 16, "max_num_batched_tokens": 2048, "max_num_seqs": 64},
     {"model": "Qwen/Qwen3-32B-FP8", "system": "h200_sxm", "tp": 2})
case("ais-trtllm-b200-llama31-8b-nvfp4", "TRT-LLM on B200 with nvfp4 GEMMs (Blackwell fp4 tensor cores), Llama 3.1 8B",
     "burst300.jsonl", {"backend": "trtllm", "num_gpu_blocks": 8000, "block_size": 32},
     {"model": "meta-llama/Meta-Llama-3.1-8B", "system": "b200_sxm", "tp": 1, "gemm_quant_mode": "nvfp4"}, {"arrival_speedup_ratio": 3.0})
case("ais-sglang-h100-mistral7b-tp2", "SGLang on H100 at TP 2, Mistral-7B's shape from a config.json directory (as LlamaForCausalLM)",
     "prefix400.jsonl", {"backend": "sglang", "num_gpu_blocks": 200000},
     {"model": "../models/mistral-7b", "system": "h100_sxm", "tp": 2})
case("ais-vllm-l40s-qwen3-0.6b-prefix", "vLLM on L40S (no NVLink class: PCIe-bound all-reduce data), Qwen3-0.6B, shared prefixes, prefix caching",
     "mixed240.jsonl", {"backend": "vllm", "num_gpu_blocks": 4000, "block_size": 16},
     {"model": "Qwen/Qwen3-0.6B", "system": "l40s", "tp": 1}, {"arrival_speedup_ratio": 2.0})
case("ais-vllm-rtxpro-mimo-7b", "vLLM on RTX Pro 6000 (default lane order), MiMo-7B-Base",
     "light200.jsonl", {"backend": "vllm", "num_gpu_blocks": 6000, "block_size": 16},
     {"model": "XiaomiMiMo/MiMo-7B-Base", "system": "rtx_pro_6000_server", "tp": 1}, {"arrival_speedup_ratio": 4.0})
case("ais-sglang-gb300-llama31-405b-tp8", "SGLang on GB300, Llama 3.1 405B at TP 8 (fp8_block GEMMs by choice)",
     "light200.jsonl", {"backend": "sglang", "num_gpu_blocks": 150000},
     {"model": "meta-llama/Meta-Llama-3.1-405B", "system": "gb300", "tp": 8, "gemm_quant_mode": "fp8_block"})
case("ais-trtllm-h200-qwen3-32b-static-tp2", "TRT-LLM on H200, Qwen3-32B-FP8-Static-PerTensor (fp8_static GEMMs, fp8 attention and KV) at TP 2",
     "mixed240.jsonl", {"backend": "trtllm", "num_gpu_blocks": 20000, "block_size": 32},
     {"model": "Qwen/Qwen3-32B-FP8-Static-PerTensor", "system": "h200_sxm", "tp": 2})
case("ais-vllm-b300-qwen3-32b-tp4-2w", "Two vLLM workers round-robin on B300 at TP 4, Qwen3-32B, bursts",
     "burst300.jsonl", {"backend": "vllm", "num_gpu_blocks": 16000, "block_size": 16},
     {"model": "Qwen/Qwen3-32B", "system": "b300_sxm", "tp": 4}, {"num_workers": 2, "arrival_speedup_ratio": 2.0})

# MoE and MLA (the experts' parallelism and attention DP in the reference's names; DeepSeek's
# prefill needs fmha bfloat16: these tables hold no fp8 MLA prefill kernel).
# Not stored: its passes are exact, the replay is not (docs/models.md, "attention DP replay").
# case("ais-sglang-h200-dsr1-dep8", "SGLang on 8 x H200, DeepSeek-R1 (MLA + MoE, fp8_block) with attention DP 8 and EP 8 (--tp 8 --ep 8 --dp 8 --enable-dp-attention): NCCL gather/scatter around the experts, a pass priced as one rank's ceil(batch / 8)",
#      "mixed240.jsonl", {"backend": "sglang", "num_gpu_blocks": 300000},
#      {"model": "deepseek-ai/DeepSeek-R1", "system": "h200_sxm", "tp": 1, "attention_dp_size": 8, "moe_tp_size": 1, "moe_ep_size": 8, "fmha_quant_mode": "bfloat16"})
case("ais-trtllm-b200-dsr1-tp8-ep8", "TRT-LLM on 8 x B200, DeepSeek-R1 at attention TP 8 and EP 8 (the MLA module tables, custom all-reduce dispatch)",
     "light200.jsonl", {"backend": "trtllm", "num_gpu_blocks": 20000, "block_size": 32},
     {"model": "deepseek-ai/DeepSeek-R1", "system": "b200_sxm", "tp": 8, "moe_tp_size": 1, "moe_ep_size": 8, "fmha_quant_mode": "bfloat16"}, {"arrival_speedup_ratio": 2.0})
case("ais-vllm-h200-qwen3-235b-tp4-ep4", "vLLM on 4 x H200, Qwen3-235B-A22B (GQA + 128 experts) at TP 4 and EP 4",
     "burst200.jsonl", {"backend": "vllm", "num_gpu_blocks": 20000, "block_size": 16},
     {"model": "Qwen/Qwen3-235B-A22B", "system": "h200_sxm", "tp": 4, "moe_tp_size": 1, "moe_ep_size": 4})
