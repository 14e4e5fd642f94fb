// Model and GPU presets. A model's KV bytes per token is
// 2 (K and V) × layers × KV heads × head dim × bytes per element. The ids are the engine's
// roofline preset names (`timing_model: {"type": "roofline", "model": ID, "gpu": ID}`).

export interface ModelShape {
  layers: number;
  kv_heads: number;
  head_dim: number;
  /** Bytes per KV element: 2 for bf16/fp16, 1 for fp8, 4 for fp32. */
  dtype_bytes: number;
  /** Parameters, in billions (roofline compute and weight traffic). */
  params_b: number;
}

export const MODELS = {
  'llama-3.1-8b': { label: 'Llama 3.1 8B', layers: 32, kv_heads: 8, head_dim: 128, dtype_bytes: 2, params_b: 8 },
  'llama-3.1-70b': { label: 'Llama 3.1 70B', layers: 80, kv_heads: 8, head_dim: 128, dtype_bytes: 2, params_b: 70 },
  'qwen3-32b': { label: 'Qwen3 32B', layers: 64, kv_heads: 8, head_dim: 128, dtype_bytes: 2, params_b: 32 },
  'qwen2.5-7b': { label: 'Qwen2.5 7B', layers: 28, kv_heads: 4, head_dim: 128, dtype_bytes: 2, params_b: 7.6 },
  'qwen3-30b-a3b': { label: 'Qwen3 30B-A3B (MoE)', layers: 48, kv_heads: 4, head_dim: 128, dtype_bytes: 2, params_b: 30.5 },
  'mixtral-8x7b': { label: 'Mixtral 8x7B (MoE)', layers: 32, kv_heads: 8, head_dim: 128, dtype_bytes: 2, params_b: 46.7 },
} satisfies Record<string, ModelShape & { label: string }>;

/** The preset with this id; `undefined` for any other value (such as the form's `custom`). */
export function modelPreset(id: string): (ModelShape & { label: string }) | undefined {
  return Object.entries(MODELS).find(([key]) => key === id)?.[1];
}

export const DTYPES: { value: number; label: string }[] = [
  { value: 2, label: 'bf16 / fp16 (2 B)' },
  { value: 1, label: 'fp8 (1 B)' },
  { value: 4, label: 'fp32 (4 B)' },
];

export function kvBytesPerToken(m: ModelShape): number {
  return 2 * m.layers * m.kv_heads * m.head_dim * m.dtype_bytes;
}

/** The preset whose KV bytes per token equal `bytes`, if any. */
export function presetFor(bytes: number | null | undefined): string | null {
  if (bytes == null) return null;
  for (const [id, m] of Object.entries(MODELS)) if (kvBytesPerToken(m) === bytes) return id;
  return null;
}

export interface GpuShape {
  label: string;
  /** Dense bf16 tensor throughput, TFLOP/s. */
  tflops: number;
  /** HBM bandwidth, TB/s. */
  hbm_tb_s: number;
  hbm_gb: number;
}

export const GPUS: Record<string, GpuShape> = {
  h100: { label: 'H100 SXM', tflops: 989, hbm_tb_s: 3.35, hbm_gb: 80 },
  h200: { label: 'H200 SXM', tflops: 989, hbm_tb_s: 4.8, hbm_gb: 141 },
  b200: { label: 'B200', tflops: 2250, hbm_tb_s: 8.0, hbm_gb: 180 },
  a100: { label: 'A100 80 GB', tflops: 312, hbm_tb_s: 2.04, hbm_gb: 80 },
  l40s: { label: 'L40S', tflops: 362, hbm_tb_s: 0.864, hbm_gb: 48 },
};
