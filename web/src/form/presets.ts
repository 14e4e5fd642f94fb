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
