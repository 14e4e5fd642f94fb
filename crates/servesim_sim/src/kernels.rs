//! Measured-kernel data for the engines that name it: the data files (one per GPU ×
//! framework × version, `data/ais/` in a clone), the bundled model configs beside them, and
//! the models built on them. The harness reads no files itself: the caller's [`Files`]
//! hands over `index.json`, `models.json` and the data files by name.
//!
//! Loading also fills what a measured model derives when the scenario leaves it unset: the
//! KV pool from AIConfigurator's memory model and the KV bytes per token.

use crate::SimError;
use crate::build::Files;
use crate::scenario::SimConfig;
use serde_json::Value;
use servesim_engine::perf::ais::data::KernelData;
use servesim_engine::perf::ais::memory::{KvPool, default_fraction};
#[cfg(feature = "measured-kernels")]
use servesim_engine::perf::ais::resolve_model;
use servesim_engine::perf::ais::sorted::SortedMap;
use servesim_engine::perf::ais::{AisArgs, AisModel};
use servesim_engine::{EngineArgs, LaunchConfig};
use std::sync::Arc;

/// The index of the data files.
pub const INDEX: &str = "index.json";

/// The models built for a run, by their timing-model arguments; and each pool's KV pool.
#[derive(Clone, Debug, Default)]
pub struct KernelSets {
    models: SortedMap<String, Arc<AisModel>>,
    /// The KV-pool arithmetic of pools whose pool the memory model sized, by the same key.
    pub pools: SortedMap<String, KvPool>,
    /// The KV router's prefill-load estimate (`ais_perf_config`).
    pub router: Option<Arc<AisModel>>,
}

fn key(engine: &EngineArgs) -> Option<String> {
    engine.timing_model.ais().map(|a| format!("{a:?}"))
}

/// Orders version strings the way releases go: numbers compare as numbers, and a
/// pre-release (`rc`, `a`, `b`, `dev`) comes before its release.
pub fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(v: &str) -> Vec<(u64, i8)> {
        let mut out = Vec::new();
        let mut num = String::new();
        let mut tag = 0i8;
        for ch in v.chars().chain(std::iter::once('.')) {
            if ch.is_ascii_digit() {
                num.push(ch);
            } else {
                if !num.is_empty() {
                    out.push((num.parse().unwrap_or(0), tag));
                    num.clear();
                    tag = 0;
                }
                if ch.is_ascii_alphabetic() {
                    tag = -1;
                }
            }
        }
        out
    }
    let (pa, pb) = (parts(a), parts(b));
    for i in 0..pa.len().max(pb.len()) {
        let x = pa.get(i).copied().unwrap_or((0, 1));
        let y = pb.get(i).copied().unwrap_or((0, 1));
        let o = (x.1, x.0).cmp(&(y.1, y.0));
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    std::cmp::Ordering::Equal
}

/// The data set for (system, framework), at `version` or the newest the index lists.
pub fn pick_set<'a>(index: &'a Value, system: &str, backend: &str, version: Option<&str>) -> Result<&'a Value, String> {
    let sets = index.get("sets").and_then(|s| s.as_array()).ok_or("index.json: `sets` is missing")?;
    let mut found: Vec<&Value> =
        sets.iter().filter(|s| s["system"].as_str() == Some(system) && s["backend"].as_str() == Some(backend)).collect();
    if found.is_empty() {
        let mut systems: Vec<&str> = sets.iter().filter_map(|s| s["system"].as_str()).collect();
        servesim_engine::perf::ais::interp::sort_small(&mut systems, |a, b| a < b);
        systems.dedup();
        return Err(format!("system: no measured-kernel data for `{system}` with {backend} (the data has: {})", systems.join(", ")));
    }
    if let Some(v) = version {
        return found.into_iter().find(|s| s["version"].as_str() == Some(v)).ok_or_else(|| {
            let have: Vec<&str> = sets
                .iter()
                .filter(|s| s["system"].as_str() == Some(system) && s["backend"].as_str() == Some(backend))
                .filter_map(|s| s["version"].as_str())
                .collect();
            format!("backend_version: no {backend} {v} data for {system} (the data has: {})", have.join(", "))
        });
    }
    servesim_engine::perf::ais::interp::sort_small(&mut found, |a, b| {
        version_cmp(a["version"].as_str().unwrap_or(""), b["version"].as_str().unwrap_or("")).is_lt()
    });
    Ok(found[found.len() - 1])
}

impl KernelSets {
    /// Builds the model of every engine `cfg` times with measured kernels, and fills their
    /// unset KV pools and KV bytes per token.
    pub fn load(cfg: &mut SimConfig, files: &mut dyn Files) -> Result<KernelSets, SimError> {
        let mut sets = KernelSets::default();
        let mut index: Option<Value> = None;
        let mut models: Option<Value> = None;
        let mut data: SortedMap<String, Arc<KernelData>> = SortedMap::new();
        if let Some(m) = &cfg.ais_perf_config {
            // The router's estimate: its framework defaults to that of the engines whose
            // prompts it places (the prefill pool's when disaggregated).
            let field = |e: String| SimError::new(format!("cluster.ais_perf_config.{e}"));
            let args = AisArgs::from_map(m).map_err(field)?;
            let engine = cfg.disagg.as_ref().map_or(&cfg.launch.engine, |d| &d.prefill.engine);
            let bytes = files.kernel_file(INDEX)?;
            let idx: Value = serde_json::from_str(&String::from_utf8_lossy(&bytes))
                .map_err(|e| SimError::new(format!("measured-kernel {INDEX}: {e}")))?;
            let model = build_model(&args, engine, &idx, &mut models, &mut data, files).map_err(|e| match e {
                Built::Field(e) => field(e),
                Built::File(e) => e,
            })?;
            index = Some(idx);
            sets.router = Some(Arc::new(model));
        }
        let mut launches: Vec<(&str, &mut LaunchConfig)> = vec![("", &mut cfg.launch)];
        if let Some(d) = &mut cfg.disagg {
            launches.push(("cluster.prefill_engine.", &mut d.prefill));
            launches.push(("cluster.decode_engine.", &mut d.decode));
        }
        if !launches.iter().any(|(_, l)| l.engine.timing_model.ais().is_some()) && cfg.ais_perf_config.is_none() {
            return Ok(sets);
        }
        for (at, launch) in launches {
            let Some(args) = launch.engine.timing_model.ais().map(|a| a.into_owned()) else { continue };
            let k = key(&launch.engine).expect("an ais timing model");
            let field = |e: String| SimError::new(format!("{at}engine.timing_model.{e}"));
            if !sets.models.contains_key(&k) {
                if index.is_none() {
                    let bytes = files.kernel_file(INDEX)?;
                    index = Some(
                        serde_json::from_str(&String::from_utf8_lossy(&bytes))
                            .map_err(|e| SimError::new(format!("measured-kernel {INDEX}: {e}")))?,
                    );
                }
                let model = build_model(&args, &launch.engine, index.as_ref().expect("read"), &mut models, &mut data, files).map_err(
                    |e| match e {
                        Built::Field(e) => field(e),
                        Built::File(e) => e,
                    },
                )?;
                sets.models.insert(k.clone(), Arc::new(model));
            }
            let model = sets.models.get(&k).expect("built above").clone();
            let engine = &mut launch.engine;
            if engine.kv_bytes_per_token.is_none() {
                engine.kv_bytes_per_token = Some(model.kv_bytes_per_token());
            }
            if engine.num_gpu_blocks.is_none() {
                let fraction = launch.memory_fraction().unwrap_or_else(|| default_fraction(model.backend));
                let engine = &mut launch.engine;
                let max_tokens = engine.max_num_batched_tokens.map_or(8192, u64::from);
                let pool = model.kv_pool(max_tokens, fraction).map_err(|e| SimError::new(format!("{at}engine.num_gpu_blocks: {e}")))?;
                // One scheduler holds every attention-DP rank's requests, so their pools.
                let blocks = pool.engine_kv_tokens / engine.block_size() as u64;
                if blocks == 0 {
                    return Err(SimError::new(format!(
                        "{at}engine.num_gpu_blocks: the model's weights ({:.1} GiB per GPU) and buffers leave no room for the KV cache on {} at tp {} ({:.1} GiB × {})",
                        pool.weights_bytes / (1u64 << 30) as f64,
                        model.data.meta.system.name,
                        model.tp,
                        pool.gpu_memory_bytes / (1u64 << 30) as f64,
                        fraction
                    )));
                }
                engine.num_gpu_blocks = Some(u32::try_from(blocks).unwrap_or(u32::MAX));
                sets.pools.insert(k, pool);
            }
        }
        Ok(sets)
    }

    /// The model `engine` is timed by, if it names one.
    pub fn get(&self, engine: &EngineArgs) -> Option<Arc<AisModel>> {
        key(engine).and_then(|k| self.models.get(&k)).cloned()
    }

    /// The KV-pool arithmetic of `engine`'s pool, if the memory model sized it.
    pub fn pool(&self, engine: &EngineArgs) -> Option<&KvPool> {
        key(engine).and_then(|k| self.pools.get(&k))
    }
}

/// The measured-kernel model of one engine's arguments (for `servesim estimate`).
pub fn model_for(engine: &EngineArgs, files: &mut dyn Files) -> Result<AisModel, SimError> {
    let args = engine
        .timing_model
        .ais()
        .ok_or_else(|| SimError::new("engine.timing_model: not a measured-kernel (ais) timing model"))?
        .into_owned();
    let bytes = files.kernel_file(INDEX)?;
    let index: Value =
        serde_json::from_str(&String::from_utf8_lossy(&bytes)).map_err(|e| SimError::new(format!("measured-kernel {INDEX}: {e}")))?;
    build_model(&args, engine, &index, &mut None, &mut SortedMap::new(), files).map_err(|e| match e {
        Built::Field(e) => SimError::new(format!("engine.timing_model.{e}")),
        Built::File(e) => e,
    })
}

/// What measured-kernel data there is, for a page to offer: every data set (GPU, framework,
/// version, file, bytes, whether its GPU figures carry power) from `index.json`, and the
/// bundled models from `models.json` with their shapes (read as the timing model reads them).
pub fn catalog(index: &Value, models: Option<&Value>) -> Value {
    let sets = index.get("sets").cloned().unwrap_or(Value::Array(Vec::new()));
    let mut systems: SortedMap<String, SortedMap<String, Vec<String>>> = SortedMap::new();
    for s in sets.as_array().into_iter().flatten() {
        if let (Some(sys), Some(b), Some(v)) = (s["system"].as_str(), s["backend"].as_str(), s["version"].as_str()) {
            systems.get_or_insert_with(sys.into(), SortedMap::new).get_or_insert_with(b.into(), Vec::new).push(v.into());
        }
    }
    for frameworks in systems.values_mut() {
        for versions in frameworks.values_mut() {
            // Newest first: the default.
            let mut order: Vec<usize> = (0..versions.len()).collect();
            servesim_engine::perf::ais::interp::sort_small(&mut order, |&a, &b| version_cmp(&versions[b], &versions[a]).is_lt());
            *versions = order.iter().map(|&i| versions[i].clone()).collect();
        }
    }
    let bundled: Vec<Value> = models
        .and_then(|m| m.get("models"))
        .and_then(|m| m.as_object())
        .into_iter()
        .flatten()
        .map(|(name, cfg)| match servesim_engine::perf::ais::model::ModelShape::from_config(cfg) {
            Ok(m) => serde_json::to_value(BundledModel {
                name,
                architecture: &m.architecture,
                layers: m.layers,
                hidden_size: m.hidden,
                heads: m.heads,
                kv_heads: m.kv_heads,
                head_size: m.head_size,
                intermediate_size: m.intermediate,
                vocab_size: m.vocab,
                max_position_embeddings: m.context,
                gemm_quant_mode: m.gemm.map(|q| q.name()),
                kvcache_quant_mode: m.kv.map(|q| q.name()),
            })
            .unwrap_or(Value::Null),
            Err(e) => serde_json::json!({"name": name, "error": e}),
        })
        .collect();
    serde_json::json!({
        "package": index.get("package"), "package_version": index.get("package_version"),
        "sets": sets, "systems": systems, "models": bundled,
    })
}

/// A bundled model's shape in the catalog (a struct, not `json!`: the page's engine stays small).
#[derive(serde::Serialize)]
struct BundledModel<'a> {
    name: &'a str,
    architecture: &'a str,
    layers: u32,
    hidden_size: u32,
    heads: u32,
    kv_heads: u32,
    head_size: u32,
    intermediate_size: u32,
    vocab_size: u32,
    max_position_embeddings: u32,
    gemm_quant_mode: Option<&'static str>,
    kvcache_quant_mode: Option<&'static str>,
}

enum Built {
    #[cfg_attr(not(feature = "measured-kernels"), allow(dead_code))]
    Field(String),
    File(SimError),
}

/// Without the data reader and the model's construction (the page's first module): every
/// measured-kernel scenario is refused with the words that make the page load the full one.
#[cfg(not(feature = "measured-kernels"))]
fn build_model(
    _args: &AisArgs,
    _engine: &EngineArgs,
    _index: &Value,
    _models: &mut Option<Value>,
    _data: &mut SortedMap<String, Arc<KernelData>>,
    _files: &mut dyn Files,
) -> Result<AisModel, Built> {
    Err(Built::File(SimError::left_out("measured-kernel timing")))
}

#[cfg(feature = "measured-kernels")]
fn build_model(
    args: &AisArgs,
    engine: &EngineArgs,
    index: &Value,
    models: &mut Option<Value>,
    data: &mut SortedMap<String, Arc<KernelData>>,
    files: &mut dyn Files,
) -> Result<AisModel, Built> {
    args.validate().map_err(Built::Field)?;
    let backend = args.data_backend(engine.backend);
    let backend_name = match backend {
        servesim_engine::Backend::Vllm => "vllm",
        servesim_engine::Backend::Sglang => "sglang",
        servesim_engine::Backend::Trtllm => "trtllm",
    };
    let set = pick_set(index, &args.system, backend_name, args.backend_version.as_deref()).map_err(Built::Field)?;
    let file = set["file"].as_str().ok_or_else(|| Built::File(SimError::new("index.json: a set has no `file`")))?.to_string();
    let kd = match data.get(&file) {
        Some(d) => d.clone(),
        None => {
            let bytes = files.kernel_file(&file).map_err(Built::File)?;
            let d = Arc::new(KernelData::from_bytes(&bytes).map_err(|e| Built::File(SimError::new(format!("{file}: {e}"))))?);
            data.insert(file.clone(), d.clone());
            d
        }
    };
    if args.model.is_string() && models.is_none() {
        let name = index.get("models").and_then(|m| m.as_str()).unwrap_or("models.json");
        let bytes = files.kernel_file(name).map_err(Built::File)?;
        *models =
            Some(serde_json::from_str(&String::from_utf8_lossy(&bytes)).map_err(|e| Built::File(SimError::new(format!("{name}: {e}"))))?);
    }
    // A name that is not bundled may be a directory holding a config.json (as the reference
    // reads a local model path), relative to the scenario or case.
    let bundled = |n: &str| models.as_ref().and_then(|m| m.get("models")).and_then(|m| m.get(n)).is_some();
    if let Value::String(dir) = &args.model
        && !bundled(dir)
        && let Ok(bytes) = files.read(&format!("{dir}/config.json"))
    {
        let cfg: Value = serde_json::from_str(&String::from_utf8_lossy(&bytes))
            .map_err(|e| Built::File(SimError::new(format!("{dir}/config.json: {e}"))))?;
        let shape = servesim_engine::perf::ais::model::ModelShape::from_config(&cfg)
            .map_err(|e| Built::Field(format!("model `{dir}/config.json`: {e}")))?;
        return AisModel::new(kd, shape, dir.clone(), args, backend).map_err(Built::Field);
    }
    let (shape, name) = resolve_model(&args.model, models.as_ref()).map_err(Built::Field)?;
    AisModel::new(kd, shape, name, args, backend).map_err(Built::Field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_like_releases() {
        use std::cmp::Ordering::*;
        assert_eq!(version_cmp("0.5.14", "0.5.9"), Greater);
        assert_eq!(version_cmp("1.3.0rc20", "1.3.0rc5"), Greater);
        assert_eq!(version_cmp("1.3.0rc20", "1.3.0"), Less);
        assert_eq!(version_cmp("0.5.6.post2", "0.5.9"), Less);
        assert_eq!(version_cmp("0.24.0", "0.24.0"), Equal);
    }
}
