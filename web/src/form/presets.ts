// Names for the engine's roofline presets. Their figures (shapes, parameters, KV bytes per
// token, GPU memory and bandwidth) come from the engine (`presets` in the worker's hello):
// the page looks them up, it never computes them.

export const MODEL_LABELS: Record<string, string> = {
  'llama-3.1-8b': 'Llama 3.1 8B',
  'llama-3.1-70b': 'Llama 3.1 70B',
  'qwen2.5-7b': 'Qwen2.5 7B',
  'qwen3-32b': 'Qwen3 32B',
  'qwen3-30b-a3b': 'Qwen3 30B-A3B (MoE)',
  'mixtral-8x7b': 'Mixtral 8x7B (MoE)',
  'qwen2.5-vl-7b': 'Qwen2.5-VL 7B (vision)',
};

export const GPU_LABELS: Record<string, string> = {
  a100: 'A100 80 GB',
  l40s: 'L40S',
  h100: 'H100 SXM',
  h200: 'H200 SXM',
  b200: 'B200',
};

export const KV_DTYPE_LABELS: Record<string, string> = {
  auto: 'as the weights',
  bfloat16: 'bf16 / fp16 (2 B)',
  fp8: 'fp8 (1 B)',
  float32: 'fp32 (4 B)',
};

export const WEIGHT_DTYPE_LABELS: Record<string, string> = {
  '': "the model's (bf16)",
  bfloat16: 'bf16 / fp16 (2 B)',
  fp8: 'fp8 (1 B)',
  int4: 'int4 (0.5 B)',
};

/** The fields of a custom model shape the form asks for (the engine's `ModelSpec` names). */
export const SHAPE_FIELDS: [string, string, boolean][] = [
  ['num_hidden_layers', 'Layers', true],
  ['hidden_size', 'Hidden size', true],
  ['num_attention_heads', 'Attention heads', true],
  ['num_key_value_heads', 'KV heads', true],
  ['head_dim', 'Head dim', true],
  ['intermediate_size', 'MLP width', true],
  ['vocab_size', 'Vocabulary', true],
  ['num_experts', 'Experts (0: dense)', false],
  ['num_experts_per_tok', 'Experts per token', false],
];

/** The GPU the roofline starts on when the page picks it for a model. */
export const DEFAULT_GPU = 'h100';

/**
 * The measured-kernel data's GPUs (AIConfigurator's system names: the data's index lists
 * them) by name, and the roofline preset of the same GPU where there is one.
 */
export const SYSTEM_LABELS: Record<string, string> = {
  h100_sxm: 'H100 SXM',
  h200_sxm: 'H200 SXM',
  b200_sxm: 'B200',
  b300_sxm: 'B300',
  gb200: 'GB200',
  gb300: 'GB300',
  l40s: 'L40S',
  rtx_pro_6000_server: 'RTX Pro 6000',
  a100_sxm: 'A100 SXM',
};
export const ROOFLINE_GPU_OF_SYSTEM: Record<string, string> = { h100_sxm: 'h100', h200_sxm: 'h200', b200_sxm: 'b200', l40s: 'l40s', a100_sxm: 'a100' };

/** The bundled model configs (the data's `models.json`) by name, and the roofline preset of the same model. */
export const MEASURED_MODEL_LABELS: Record<string, string> = {
  'meta-llama/Meta-Llama-3.1-8B': 'Llama 3.1 8B',
  'meta-llama/Meta-Llama-3.1-70B': 'Llama 3.1 70B',
  'meta-llama/Meta-Llama-3.1-405B': 'Llama 3.1 405B',
  'nvidia/Llama-3.1-70B-Instruct-FP8': 'Llama 3.1 70B Instruct FP8 (NVIDIA)',
  'Qwen/Qwen3-0.6B': 'Qwen3 0.6B',
  'Qwen/Qwen3-1.7B': 'Qwen3 1.7B',
  'Qwen/Qwen3-8B': 'Qwen3 8B',
  'Qwen/Qwen3-32B': 'Qwen3 32B',
  'Qwen/Qwen3-32B-FP8': 'Qwen3 32B FP8 (block scales)',
  'Qwen/Qwen3-32B-FP8-Static-PerTensor': 'Qwen3 32B FP8 (per tensor)',
  'XiaomiMiMo/MiMo-7B-Base': 'MiMo 7B',
};
export const ROOFLINE_MODEL_OF_MEASURED: Record<string, string> = {
  'meta-llama/Meta-Llama-3.1-8B': 'llama-3.1-8b',
  'meta-llama/Meta-Llama-3.1-70B': 'llama-3.1-70b',
  'Qwen/Qwen3-32B': 'qwen3-32b',
};

/** The frameworks whose kernels were measured. */
export const FRAMEWORK_LABELS: Record<string, string> = { vllm: 'vLLM', sglang: 'SGLang', trtllm: 'TRT-LLM' };

/** GEMM (weight) dtypes of the measured tables, by AIConfigurator's names ('': the checkpoint's). */
export const GEMM_DTYPE_LABELS: Record<string, string> = {
  '': "the checkpoint's",
  bfloat16: 'bf16',
  fp8: 'fp8 (per tensor, dynamic)',
  fp8_static: 'fp8 (per tensor, static)',
  fp8_block: 'fp8 (block scales)',
  nvfp4: 'nvfp4 (Blackwell)',
};
export const KV_QUANT_LABELS: Record<string, string> = { '': "the checkpoint's", bfloat16: 'bf16 (2 B)', fp8: 'fp8 (1 B)' };
