//! Reading a model's shape from its Hugging Face `config.json`: dense decoders (Llama,
//! Qwen, Mistral), mixtures of experts (Mixtral, Qwen3-MoE, gpt-oss, DeepSeek-V3/R1, Kimi)
//! and multi-head latent attention (DeepSeek, Kimi), into the roofline's [`ModelSpec`].
//!
//! Families spell the same thing differently; this module is the one place that knows how:
//! - routed experts: `num_local_experts` (Mixtral, gpt-oss), `num_experts` (Qwen-MoE),
//!   `n_routed_experts` (DeepSeek); experts per token: `num_experts_per_tok`
//!   (`experts_per_token` in gpt-oss);
//! - expert width: `moe_intermediate_size`, else (Mixtral, gpt-oss) `intermediate_size`;
//! - shared experts: DeepSeek's `n_shared_experts` of the expert width, Qwen2-MoE's
//!   `shared_expert_intermediate_size`;
//! - dense layers before the first MoE layer: DeepSeek's `first_k_dense_replace`;
//! - MLA: `kv_lora_rank`, `q_lora_rank`, `qk_rope_head_dim`, `qk_nope_head_dim`, `v_head_dim`;
//! - weight precision: `quantization_config.quant_method` (`fp8`, ModelOpt's `nvfp4` in
//!   `hf_quant_config`), and gpt-oss's `mxfp4` experts with bf16 attention.
//!
//! Multimodal configs read their `text_config`. Errors name the field.

use serde_json::Value;

use super::roofline::ModelSpec;

fn u32_field(c: &Value, k: &str) -> Result<Option<u32>, String> {
    match c.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|&x| x <= u32::MAX as u64)
            .map(|x| Some(x as u32))
            .ok_or_else(|| format!("{k}: expected a non-negative integer, got {v}")),
    }
}

fn need(c: &Value, k: &str) -> Result<u32, String> {
    u32_field(c, k)?.ok_or_else(|| format!("{k} is missing"))
}

/// The first of several spellings that is present.
fn first_of(c: &Value, keys: &[&str]) -> Result<Option<u32>, String> {
    for k in keys {
        if let Some(v) = u32_field(c, k)? {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// The weight dtype a checkpoint declares: (dense weights, experts if they differ).
fn weight_dtypes(c: &Value, torch_dtype: &str) -> (String, Option<String>) {
    let method = |v: Option<&Value>, k: &str| v.and_then(|q| q.get(k)).and_then(Value::as_str).map(|s| s.trim().to_ascii_lowercase());
    let qc = c.get("quantization_config").filter(|q| q.is_object());
    let hf = c.get("hf_quant_config").and_then(|h| h.get("quantization")).filter(|q| q.is_object());
    let algo = method(hf, "quant_algo").or(method(qc, "quant_algo")).or(method(qc, "quant_method"));
    match algo.as_deref() {
        Some("fp8") | Some("fp8_block") | Some("fbgemm_fp8") | Some("compressed-tensors") => ("fp8".into(), None),
        Some("nvfp4") | Some("modelopt_fp4") => ("nvfp4".into(), None),
        // gpt-oss: MXFP4 experts; attention, router, embeddings and LM head stay in bf16.
        Some("mxfp4") => (torch_dtype.to_string(), Some("mxfp4".into())),
        _ => (torch_dtype.to_string(), None),
    }
}

impl ModelSpec {
    /// Reads a Hugging Face `config.json`.
    pub fn from_hf_config(cfg: &Value) -> Result<ModelSpec, String> {
        let c = cfg.get("text_config").filter(|t| t.is_object()).unwrap_or(cfg);
        let hidden = need(c, "hidden_size")?;
        let heads = need(c, "num_attention_heads")?;
        let experts = first_of(c, &["num_local_experts", "num_experts", "n_routed_experts"])?.unwrap_or(0);
        let per_tok = first_of(c, &["num_experts_per_tok", "experts_per_token", "moe_topk"])?.unwrap_or(0);
        if experts > 0 && per_tok == 0 {
            return Err("num_experts_per_tok is missing (a mixture of experts routes each token to some)".into());
        }
        if per_tok > experts && experts > 0 {
            return Err(format!("num_experts_per_tok: {per_tok} exceeds the {experts} experts"));
        }
        let moe_width = u32_field(c, "moe_intermediate_size")?;
        let intermediate = match u32_field(c, "intermediate_size")? {
            Some(i) => i,
            // Some MoE configs give only the expert width.
            None if experts > 0 => moe_width.ok_or("intermediate_size is missing")?,
            None => return Err("intermediate_size is missing".into()),
        };
        let shared = match (u32_field(c, "n_shared_experts")?, u32_field(c, "shared_expert_intermediate_size")?) {
            (_, Some(w)) if w > 0 => Some(w),
            (Some(n), _) if n > 0 => Some(n * moe_width.unwrap_or(intermediate)),
            _ => None,
        };
        let torch_dtype = c.get("torch_dtype").or(cfg.get("torch_dtype")).and_then(Value::as_str).unwrap_or("bfloat16");
        let (dtype, expert_dtype) = weight_dtypes(cfg, torch_dtype);
        let kv_lora = u32_field(c, "kv_lora_rank")?.filter(|&r| r > 0);
        let dense_layers = u32_field(c, "first_k_dense_replace")?.unwrap_or(0);
        let layers = need(c, "num_hidden_layers")?;
        if dense_layers > layers {
            return Err(format!("first_k_dense_replace: {dense_layers} exceeds the {layers} layers"));
        }
        let spec = ModelSpec {
            num_hidden_layers: layers,
            hidden_size: hidden,
            num_attention_heads: heads,
            num_key_value_heads: u32_field(c, "num_key_value_heads")?,
            head_dim: u32_field(c, "head_dim")?.filter(|&d| d > 0),
            intermediate_size: intermediate,
            vocab_size: need(c, "vocab_size")?,
            dtype,
            tie_word_embeddings: c.get("tie_word_embeddings").and_then(Value::as_bool).unwrap_or(false),
            num_experts: experts,
            num_experts_per_tok: if experts > 0 { per_tok } else { 0 },
            moe_intermediate_size: if experts > 0 { moe_width } else { None },
            vision: None,
            shared_expert_intermediate_size: if experts > 0 { shared } else { None },
            first_k_dense_replace: if experts > 0 { dense_layers } else { 0 },
            expert_dtype,
            kv_lora_rank: kv_lora,
            q_lora_rank: if kv_lora.is_some() { u32_field(c, "q_lora_rank")?.filter(|&r| r > 0) } else { None },
            qk_rope_head_dim: if kv_lora.is_some() { Some(need(c, "qk_rope_head_dim")?) } else { None },
            qk_nope_head_dim: if kv_lora.is_some() { Some(need(c, "qk_nope_head_dim")?) } else { None },
            v_head_dim: if kv_lora.is_some() { Some(need(c, "v_head_dim")?) } else { None },
        };
        spec.check()?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(dir: &str) -> ModelSpec {
        let path = format!("{}/../../tests/models/{dir}/config.json", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        ModelSpec::from_hf_config(&serde_json::from_str(&text).unwrap()).unwrap()
    }

    use crate::perf::roofline::{GpuRef, ModelRef, Roofline, RooflineArgs};

    fn roofline(spec: ModelSpec, tp: u32) -> Roofline {
        let mut a: RooflineArgs = serde_json::from_value(serde_json::json!({"model": "llama-3.1-8b", "gpu": "h200", "tp": tp})).unwrap();
        a.model = ModelRef::Custom(spec);
        a.gpu = GpuRef::Preset("h200".into());
        Roofline::new(&a).unwrap()
    }

    /// Three real `config.json`s (copied from AIConfigurator 0.12's bundled Hugging Face
    /// configs, tests/models/): a dense GQA model, a MoE, and a MoE with MLA.
    #[test]
    fn dense_moe_and_mla_configs_read_into_their_shapes() {
        let llama = read("llama-3.1-8b");
        assert_eq!((llama.num_hidden_layers, llama.num_key_value_heads, llama.num_experts, llama.kv_lora_rank), (32, Some(8), 0, None));
        let r = roofline(llama, 1);
        assert_eq!(r.kv_bytes_per_token(), 131_072, "32 layers × 2 × 8 heads × 128 × 2 bytes");
        assert!((r.total_params() / 1e9 - 8.03).abs() < 0.05, "{}", r.total_params());

        // Qwen3-235B-A22B: 128 experts of width 1536, 8 per token, GQA with 4 KV heads.
        let qwen = read("qwen3-235b-a22b");
        assert_eq!((qwen.num_experts, qwen.num_experts_per_tok, qwen.moe_intermediate_size), (128, 8, Some(1536)));
        assert_eq!(qwen.shared_expert_intermediate_size, None);
        let r = roofline(qwen, 8);
        assert!((r.total_params() / 1e9 - 235.1).abs() < 1.5, "235B total: {}", r.total_params());
        assert!((r.active_params() / 1e9 - 22.2).abs() < 1.0, "22B active: {}", r.active_params());
        assert_eq!(r.kv_bytes_per_token(), 94 * 2 * 4 * 128 * 2);

        // gpt-oss-120b: 128 MXFP4 experts of width 2880, 4 per token; bf16 attention.
        let oss = read("gpt-oss-120b");
        assert_eq!((oss.num_experts, oss.num_experts_per_tok, oss.expert_dtype.as_deref()), (128, 4, Some("mxfp4")));
        let r = roofline(oss, 1);
        assert!((r.total_params() / 1e9 - 116.8).abs() < 2.0, "117B: {}", r.total_params());
        assert!((r.active_params() / 1e9 - 5.1).abs() < 0.4, "5.1B active: {}", r.active_params());
        // 120B in MXFP4 experts fits one 80 GB GPU (the model card's claim): ~61-66 GB.
        assert!((55e9..70e9).contains(&r.weight_bytes()), "{}", r.weight_bytes());

        // DeepSeek-R1(-0528): 256 routed experts + 1 shared of width 2048, 8 per token, the
        // first 3 layers dense (18432), MLA with a 512-wide latent and 64 RoPE dims, fp8.
        let ds = read("deepseek-r1-0528");
        assert_eq!((ds.num_experts, ds.num_experts_per_tok, ds.moe_intermediate_size), (256, 8, Some(2048)));
        assert_eq!((ds.shared_expert_intermediate_size, ds.first_k_dense_replace), (Some(2048), 3));
        assert_eq!(
            (ds.kv_lora_rank, ds.q_lora_rank, ds.qk_rope_head_dim, ds.qk_nope_head_dim, ds.v_head_dim),
            (Some(512), Some(1536), Some(64), Some(128), Some(128))
        );
        assert_eq!(ds.dtype, "fp8");
        let r = roofline(ds, 8);
        assert!((r.total_params() / 1e9 - 671.0).abs() < 3.0, "671B total: {}", r.total_params());
        assert!((r.active_params() / 1e9 - 37.0).abs() < 1.5, "37B active: {}", r.active_params());
        // MLA caches one 512 + 64 latent per layer and token: 61 × 576 × 1 byte in fp8.
        assert_eq!(r.kv_bytes_per_token(), 61 * 576);
    }

    #[test]
    fn bad_fields_are_named() {
        let bad = |v: Value| ModelSpec::from_hf_config(&v).unwrap_err();
        let base = serde_json::json!({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 10});
        assert!(ModelSpec::from_hf_config(&base).is_ok());
        let mut v = base.clone();
        v["num_experts"] = 8.into();
        assert!(bad(v.clone()).contains("num_experts_per_tok"));
        v["num_experts_per_tok"] = 9.into();
        assert!(bad(v).contains("exceeds"));
        let mut v = base.clone();
        v["kv_lora_rank"] = 32.into();
        assert!(bad(v).contains("qk_rope_head_dim is missing"));
        let mut v = base;
        v["hidden_size"] = "big".into();
        assert!(bad(v).contains("hidden_size: expected"));
    }
}
