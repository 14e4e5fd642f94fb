//! `servesim-ais-convert`: turns AIConfigurator's measured kernel tables (the parquet files
//! of the `aiconfigurator-core` package) into servesim's measured-kernel data files, one per
//! GPU × framework × version, holding only what the dense timing model reads.
//!
//! What it keeps, per file (see `docs/formats.md#measured-kernel-data`):
//! - the GPU's figures from `systems/<gpu>.yaml`;
//! - GEMM (`gemm_perf`), every quant; the fp8_static overhead tables (`computescale_perf`,
//!   `scale_matrix_perf`);
//! - context and generation attention (`*_attention_perf`), full attention (window 0), one
//!   kernel lane per key: the first of the lane order the reference resolves for that GPU
//!   and framework (`lane-orders.json`), else the first lane the rows name;
//! - custom all-reduce (`custom_allreduce_perf`), without the `_eager` kernels.
//!
//! Sources are read as the reference resolves them: the slot's own table first, then the
//! same framework's strictly earlier versions that hold the table, nearest first; a point
//! already read keeps its first value. Values are stored exactly (see
//! `servesim_engine::perf::ais::data::encode_values`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use serde_json::{Value, json};
use servesim_engine::perf::ais::data::{FORMAT, FORMAT_VERSION, Meta, SliceMeta, SystemSpec, encode_values};
use servesim_engine::perf::ais::sorted::SortedMap;

pub type Error = String;

/// The package the data comes from.
pub const PACKAGE: &str = "aiconfigurator-core";

/// Architectures whose bundled configs go into `models.json` (the models timed).
pub const DENSE_ARCHITECTURES: [&str; 4] = ["LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "MiMoForCausalLM"];
pub const MOE_ARCHITECTURES: [&str; 2] = ["Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM"];

/// The GPUs whose files carry the MoE and MLA tables (about 0.2 MB per framework each; the
/// repository's data budget keeps them to the GPUs the accuracy checks use).
pub const MOE_SYSTEMS: [&str; 2] = ["h200_sxm", "b200_sxm"];

/// The expert shapes kept from the MoE table, (hidden, expert width, top-k, experts): the
/// MoE models servesim times (DeepSeek-V3/R1, Qwen3-235B-A22B, Qwen3-30B-A3B). The whole
/// table is ~100k rows per framework; these are a few percent.
pub const MOE_SHAPES: [(u32, u32, u32, u32); 3] = [(7168, 2048, 8, 256), (4096, 1536, 8, 128), (2048, 768, 8, 128)];

/// One parquet table read as rows of named fields.
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
}

impl Table {
    pub fn read(path: &Path) -> Result<Table, Error> {
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let reader = SerializedFileReader::new(file).map_err(|e| format!("{}: {e}", path.display()))?;
        let columns = reader.metadata().file_metadata().schema_descr().columns().iter().map(|c| c.name().to_string()).collect();
        let rows = reader
            .get_row_iter(None)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Table { columns, rows })
    }

    pub fn col(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    fn need(&self, name: &str, path: &Path) -> Result<usize, Error> {
        self.col(name).ok_or_else(|| format!("{}: no column `{name}`", path.display()))
    }
}

fn field(row: &Row, i: usize) -> &Field {
    row.get_column_iter().nth(i).expect("column index").1
}

fn as_u64(f: &Field, what: &str) -> Result<u64, Error> {
    match f {
        Field::Long(v) if *v >= 0 => Ok(*v as u64),
        Field::Int(v) if *v >= 0 => Ok(*v as u64),
        Field::ULong(v) => Ok(*v),
        Field::UInt(v) => Ok(*v as u64),
        Field::Double(v) if *v >= 0.0 && v.fract() == 0.0 => Ok(*v as u64),
        other => Err(format!("{what}: expected a non-negative integer, got {other:?}")),
    }
}

fn as_u32(f: &Field, what: &str) -> Result<u32, Error> {
    let v = as_u64(f, what)?;
    u32::try_from(v).map_err(|_| format!("{what}: {v} does not fit u32"))
}

fn as_f64(f: &Field, what: &str) -> Result<f64, Error> {
    match f {
        Field::Double(v) => Ok(*v),
        Field::Float(v) => Ok(*v as f64),
        Field::Long(v) => Ok(*v as f64),
        Field::Int(v) => Ok(*v as f64),
        other => Err(format!("{what}: expected a number, got {other:?}")),
    }
}

fn as_opt_f64(f: &Field) -> Option<f64> {
    match f {
        Field::Null => None,
        f => as_f64(f, "").ok(),
    }
}

fn as_str(f: &Field) -> Option<&str> {
    match f {
        Field::Str(s) => Some(s.as_str()),
        _ => None,
    }
}

/// The table files the reference reads for one table: the slot's own, then the same
/// framework's strictly earlier versions that hold it, nearest first.
pub fn sources(system_data: &Path, family: &str, backend: &str, version: &str, basename: &str) -> Result<Vec<PathBuf>, Error> {
    let want = pep440_rs::Version::from_str(version).map_err(|e| format!("version `{version}`: {e}"))?;
    let dir = system_data.join(family).join(backend);
    let mut out = Vec::new();
    let primary = dir.join(version).join(basename);
    if primary.is_file() {
        out.push(primary);
    }
    let mut earlier: Vec<(pep440_rs::Version, PathBuf)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Ok(v) = pep440_rs::Version::from_str(&name) else { continue };
            let p = e.path().join(basename);
            if v < want && p.is_file() && !e.path().join("INCOMPLETE.txt").exists() {
                earlier.push((v, p));
            }
        }
    }
    earlier.sort_by(|a, b| b.0.cmp(&a.0));
    out.extend(earlier.into_iter().map(|(_, p)| p));
    Ok(out)
}

/// A measured value and its power, if the table has power.
type Point = (f64, Option<f64>);
/// Points by their coordinates, sorted.
type Points<K> = BTreeMap<K, Point>;

/// One kernel lane's attention slices by key.
type Lane<K> = BTreeMap<K, Points<(u32, u32, u32)>>;

/// The first-seen order of GEMM keys, as the reference's nested dicts remember it: m values,
/// n values under each m, k values under each (m, n). Its (n, k) walk is the reference's site
/// enumeration (its tie-break between equally distant sites).
type SiteWalk = (Vec<u32>, BTreeMap<u32, Vec<u32>>, BTreeMap<(u32, u32), Vec<u32>>);

/// A slice being built: its meta and arrays.
struct Slice {
    meta: SliceMeta,
    coords: Vec<u32>,
    latency: Vec<f64>,
    power: Option<Vec<f64>>,
    site_order: Option<Vec<u32>>,
}

impl Slice {
    /// Appends one measured point at `coords` (its power as 0 when the table has power but
    /// the point has none).
    fn push(&mut self, coords: impl IntoIterator<Item = u32>, (latency, power): Point) {
        self.coords.extend(coords);
        self.latency.push(latency);
        if let Some(p) = &mut self.power {
            p.push(power.unwrap_or(0.0));
        }
    }
}

/// The lane orders the reference resolves per `system/backend/version`: `{"ctx": [...],
/// "gen": [...]}`.
pub type LaneOrders = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// One converted file's bytes and its provenance.
pub struct Converted {
    pub bytes: Vec<u8>,
    pub meta: Meta,
}

fn rel(package: &Path, p: &Path) -> String {
    p.strip_prefix(package).map(|r| r.display().to_string()).unwrap_or_else(|_| p.display().to_string())
}

/// Reads a system YAML's figures.
pub fn system_spec(package: &Path, system: &str) -> Result<(SystemSpec, PathBuf), Error> {
    let path = package.join("systems").join(format!("{system}.yaml"));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let y = &docs[0];
    let num = |v: &yaml_rust2::Yaml| -> Option<f64> {
        match v {
            yaml_rust2::Yaml::Integer(i) => Some(*i as f64),
            yaml_rust2::Yaml::Real(r) => r.parse().ok(),
            _ => None,
        }
    };
    let gpu = &y["gpu"];
    let node = &y["node"];
    let misc = &y["misc"];
    let req = |v: &yaml_rust2::Yaml, k: &str| num(v).ok_or_else(|| format!("{}: `{k}` is missing", path.display()));
    let mut nccl_mem = SortedMap::new();
    if let yaml_rust2::Yaml::Hash(h) = &misc["nccl_mem"] {
        for (k, v) in h {
            if let (Some(k), Some(v)) = (num(k), num(v)) {
                nccl_mem.insert(k as u32, v as u64);
            }
        }
    }
    let data_dir = y["data_dir"].as_str().ok_or_else(|| format!("{}: `data_dir` is missing", path.display()))?;
    let spec = SystemSpec {
        name: system.to_string(),
        mem_bw: req(&gpu["mem_bw"], "gpu.mem_bw")?,
        mem_bw_empirical_scaling_factor: num(&gpu["mem_bw_empirical_scaling_factor"]).unwrap_or(1.0),
        mem_empirical_constant_latency: num(&gpu["mem_empirical_constant_latency"]).unwrap_or(0.0),
        mem_capacity: num(&gpu["mem_capacity"]).map(|v| v as u64),
        bfloat16_tc_flops: num(&gpu["bfloat16_tc_flops"]),
        int8_tc_flops: num(&gpu["int8_tc_flops"]),
        fp8_tc_flops: num(&gpu["fp8_tc_flops"]),
        fp4_tc_flops: num(&gpu["fp4_tc_flops"]),
        power: num(&gpu["power"]),
        sm_version: num(&gpu["sm_version"]).map(|v| v as u32),
        num_gpus_per_node: req(&node["num_gpus_per_node"], "node.num_gpus_per_node")? as u32,
        inter_node_bw: req(&node["inter_node_bw"], "node.inter_node_bw")?,
        intra_node_bw: req(&node["intra_node_bw"], "node.intra_node_bw")?,
        p2p_latency: num(&node["p2p_latency"]).unwrap_or(0.0),
        num_gpus_per_rack: num(&node["num_gpus_per_rack"]).map(|v| v as u32),
        inter_rack_bw: num(&node["inter_rack_bw"]),
        nccl_mem,
        other_mem: num(&misc["other_mem"]).map(|v| v as u64),
    };
    Ok((spec, package.join("systems").join(data_dir)))
}

/// The current version of each framework for a system (`systems/query_versions.yaml`).
pub fn current_versions(package: &Path, system: &str) -> Result<BTreeMap<String, String>, Error> {
    let path = package.join("systems").join("query_versions.yaml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let y = &docs[0];
    let mut out = BTreeMap::new();
    for b in ["vllm", "sglang", "trtllm"] {
        let o = &y["overrides"][system][b]["current"];
        let d = &y["defaults"][b]["current"];
        if let Some(v) = o.as_str().or(d.as_str()) {
            out.insert(b.to_string(), v.to_string());
        }
    }
    Ok(out)
}

fn kernel_ok(t: &Table, row: &Row) -> bool {
    let ks = t.col("kernel_source").and_then(|i| as_str(field(row, i))).unwrap_or("");
    let be = t.col("backend").and_then(|i| as_str(field(row, i))).unwrap_or("");
    !(ks.ends_with("_eager") || be.ends_with("_eager"))
}

/// Converts one GPU × framework × version.
pub fn convert(package: &Path, system: &str, backend: &str, version: &str, lanes: &LaneOrders) -> Result<Converted, Error> {
    let (spec, data_root) = system_spec(package, system)?;
    let mut slices: Vec<Slice> = Vec::new();
    let mut tables = Vec::new();
    let slot = format!("{system}/{backend}/{version}");
    let lane_order = lanes.get(&slot).ok_or_else(|| format!("lane-orders: no entry for {slot}"))?;

    // GEMM: every quant, sites in the order the reference enumerates them.
    {
        let src = sources(&data_root, "gemm", backend, version, "gemm_perf.parquet")?;
        let mut by_quant: BTreeMap<String, Points<(u32, u32, u32)>> = BTreeMap::new();
        let mut walk: BTreeMap<String, SiteWalk> = BTreeMap::new();
        let mut rows = 0usize;
        let mut power_seen = false;
        for p in &src {
            let t = Table::read(p)?;
            let (q, m, n, k, lat) = (t.need("gemm_dtype", p)?, t.need("m", p)?, t.need("n", p)?, t.need("k", p)?, t.need("latency", p)?);
            let pw = t.col("power");
            for row in &t.rows {
                rows += 1;
                let quant = as_str(field(row, q)).ok_or("gemm_dtype: not a string")?.to_string();
                if quant == "awq" || quant == "gptq" {
                    continue;
                }
                let (m, n, k) = (as_u32(field(row, m), "m")?, as_u32(field(row, n), "n")?, as_u32(field(row, k), "k")?);
                let l = as_f64(field(row, lat), "latency")?;
                let power = pw.and_then(|i| as_opt_f64(field(row, i)));
                power_seen |= power.is_some();
                let grid = by_quant.entry(quant.clone()).or_default();
                let w = walk.entry(quant).or_default();
                if !w.0.contains(&m) {
                    w.0.push(m);
                }
                let ns = w.1.entry(m).or_default();
                if !ns.contains(&n) {
                    ns.push(n);
                }
                let ks = w.2.entry((m, n)).or_default();
                if !ks.contains(&k) {
                    ks.push(k);
                }
                grid.entry((m, n, k)).or_insert((l, power));
            }
        }
        for (quant, grid) in &by_quant {
            let w = &walk[quant];
            let mut seen = BTreeSet::new();
            let mut order = Vec::new();
            for m in &w.0 {
                for n in w.1.get(m).into_iter().flatten() {
                    for k in w.2.get(&(*m, *n)).into_iter().flatten() {
                        if seen.insert((*n, *k)) {
                            order.push(*n);
                            order.push(*k);
                        }
                    }
                }
            }
            let mut s = new_slice("gemm", json!({"quant": quant}), &["m", "n", "k"], format!("gemm.{quant}"), power_seen);
            for (&(m, n, k), &point) in grid {
                s.push([m, n, k], point);
            }
            s.site_order = Some(order);
            slices.push(s);
        }
        tables.push(json!({"table": "gemm_perf", "sources": src.iter().map(|p| rel(package, p)).collect::<Vec<_>>(), "rows": rows, "kept": "every quant but awq and gptq; first value of a repeated (quant, m, n, k)"}));
    }

    // fp8_static's overhead tables.
    for (basename, kind) in [("computescale_perf.parquet", "compute_scale"), ("scale_matrix_perf.parquet", "scale_matrix")] {
        let src = sources(&data_root, "quantize", backend, version, basename)?;
        let mut by_quant: BTreeMap<String, Points<(u32, u32)>> = BTreeMap::new();
        let (mut rows, mut power_seen) = (0, false);
        for p in &src {
            let t = Table::read(p)?;
            let (q, m, k, lat) = (t.need("quant_dtype", p)?, t.need("m", p)?, t.need("k", p)?, t.need("latency", p)?);
            let pw = t.col("power");
            for row in &t.rows {
                rows += 1;
                let quant = as_str(field(row, q)).ok_or("quant_dtype: not a string")?.to_string();
                let power = pw.and_then(|i| as_opt_f64(field(row, i)));
                power_seen |= power.is_some();
                by_quant
                    .entry(quant)
                    .or_default()
                    .entry((as_u32(field(row, m), "m")?, as_u32(field(row, k), "k")?))
                    .or_insert((as_f64(field(row, lat), "latency")?, power));
            }
        }
        for (quant, grid) in &by_quant {
            let mut s = new_slice(kind, json!({"quant": quant}), &["m", "k"], format!("{kind}.{quant}"), power_seen);
            for (&(m, k), &point) in grid {
                s.push([m, k], point);
            }
            slices.push(s);
        }
        tables.push(json!({"table": basename.trim_end_matches(".parquet"), "sources": src.iter().map(|p| rel(package, p)).collect::<Vec<_>>(), "rows": rows}));
    }

    // Attention: by lane, then one lane per key.
    for (basename, kind, phase) in [
        ("context_attention_perf.parquet", "context_attention", "ctx"),
        ("generation_attention_perf.parquet", "generation_attention", "gen"),
    ] {
        let src = sources(&data_root, "attention", backend, version, basename)?;
        type Key = (String, String, u32, u32, u32);
        let mut by_lane: BTreeMap<String, Lane<Key>> = BTreeMap::new();
        let mut load_order: Vec<String> = Vec::new();
        let (mut rows, mut power_seen) = (0, false);
        for p in &src {
            let t = Table::read(p)?;
            let (b, isl, nh, nkv, hd, kvd, lat) = (
                t.need("batch_size", p)?,
                t.need("isl", p)?,
                t.need("num_heads", p)?,
                t.need("num_key_value_heads", p)?,
                t.need("head_dim", p)?,
                t.need("kv_cache_dtype", p)?,
                t.need("latency", p)?,
            );
            let attn = if phase == "ctx" { Some(t.need("attn_dtype", p)?) } else { None };
            let step = if phase == "gen" { Some(t.need("step", p)?) } else { None };
            let (pw, win, ks) = (t.col("power"), t.col("window_size"), t.col("kernel_source"));
            for row in &t.rows {
                rows += 1;
                let heads = as_u32(field(row, nh), "num_heads")?;
                let kvh = as_u32(field(row, nkv), "num_key_value_heads")?;
                let lane = ks.and_then(|i| as_str(field(row, i))).filter(|s| !s.is_empty()).unwrap_or("default").to_string();
                if !load_order.contains(&lane) {
                    load_order.push(lane.clone());
                }
                let key: Key = (
                    attn.map(|i| as_str(field(row, i)).unwrap_or("").to_string()).unwrap_or_default(),
                    as_str(field(row, kvd)).unwrap_or("").to_string(),
                    if heads == kvh { 0 } else { kvh },
                    as_u32(field(row, hd), "head_dim")?,
                    match win.map(|i| field(row, i)) {
                        None | Some(Field::Null) => 0,
                        Some(f) => as_u32(f, "window_size")?,
                    },
                );
                let batch = as_u32(field(row, b), "batch_size")?;
                let seq = as_u32(field(row, isl), "isl")?;
                let point = match step {
                    None => (heads, seq, batch),
                    Some(i) => (heads, batch, seq + as_u32(field(row, i), "step")?),
                };
                let power = pw.and_then(|i| as_opt_f64(field(row, i)));
                power_seen |= power.is_some();
                by_lane
                    .entry(lane)
                    .or_default()
                    .entry(key)
                    .or_default()
                    .entry(point)
                    .or_insert((as_f64(field(row, lat), "latency")?, power));
            }
        }
        let order = lane_order.get(phase).cloned().unwrap_or_else(|| vec!["default".into()]);
        let keys: BTreeSet<Key> = by_lane.values().flat_map(|m| m.keys().cloned()).collect();
        let mut served = 0;
        for key in keys.iter().filter(|k| k.4 == 0) {
            let walk = order.iter().chain(load_order.iter().filter(|l| !order.contains(l)));
            let Some((lane, grid)) = walk.filter_map(|l| by_lane.get(l).and_then(|m| m.get(key)).map(|g| (l, g))).next() else { continue };
            let mut k = json!({"kv": key.1, "n_kv": key.2, "head_size": key.3, "window": key.4});
            if phase == "ctx" {
                k["fmha"] = json!(key.0);
            }
            let axes: &[&str] = if phase == "ctx" { &["num_heads", "seq_len", "batch"] } else { &["num_heads", "batch", "seq_len"] };
            let mut s = new_slice(kind, k, axes, format!("{phase}.{served}"), power_seen);
            s.meta.note = Some(format!("lane {lane}"));
            for (&(a, b, c), &point) in grid {
                s.push([a, b, c], point);
            }
            slices.push(s);
            served += 1;
        }
        tables.push(json!({"table": basename.trim_end_matches(".parquet"), "sources": src.iter().map(|p| rel(package, p)).collect::<Vec<_>>(), "rows": rows,
            "kept": "window_size 0 only (dense models); per key, the first lane of the lane order that has it, else the first lane the rows name",
            "lane_order": order, "lanes_in_rows": load_order}));
    }

    // Custom all-reduce.
    {
        let src = sources(&data_root, "comm", backend, version, "custom_allreduce_perf.parquet")?;
        let mut by_tp: BTreeMap<u32, Points<u32>> = BTreeMap::new();
        let (mut rows, mut power_seen) = (0, false);
        for p in &src {
            let t = Table::read(p)?;
            let (g, ms, lat) = (t.need("num_gpus", p)?, t.need("message_size", p)?, t.need("latency", p)?);
            let pw = t.col("power");
            for row in &t.rows {
                rows += 1;
                if !kernel_ok(&t, row) {
                    continue;
                }
                let power = pw.and_then(|i| as_opt_f64(field(row, i)));
                power_seen |= power.is_some();
                by_tp
                    .entry(as_u32(field(row, g), "num_gpus")?)
                    .or_default()
                    .entry(as_u32(field(row, ms), "message_size")?)
                    .or_insert((as_f64(field(row, lat), "latency")?, power));
            }
        }
        for (tp, curve) in &by_tp {
            let mut s = new_slice("custom_allreduce", json!({"tp": tp}), &["message_size"], format!("ar.{tp}"), power_seen);
            for (&m, &point) in curve {
                s.push([m], point);
            }
            slices.push(s);
        }
        tables.push(json!({"table": "custom_allreduce_perf", "sources": src.iter().map(|p| rel(package, p)).collect::<Vec<_>>(), "rows": rows, "kept": "without the _eager kernels"}));
    }

    if MOE_SYSTEMS.contains(&system) {
        moe_and_mla(&data_root, package, backend, version, &mut slices, &mut tables)?;
        nccl(package, system, &data_root, &mut slices, &mut tables)?;
    }

    let version_of_package = package_version(package);
    let meta = Meta {
        format: FORMAT.into(),
        format_version: FORMAT_VERSION,
        system: spec,
        provenance: json!({
            "package": PACKAGE, "package_version": version_of_package, "system": system, "backend": backend, "backend_version": version,
            "system_yaml": format!("systems/{system}.yaml"), "tables": tables,
            "converter": format!("servesim-ais-convert {}", env!("CARGO_PKG_VERSION")), "license": "Apache-2.0 (the package's)",
        }),
        slices: slices.iter().map(|s| s.meta.clone()).collect(),
        arrays: SortedMap::new(),
    };
    Ok(Converted { bytes: write_zip(&meta, &slices)?, meta })
}

fn new_slice(kind: &str, key: Value, axes: &[&str], prefix: String, power: bool) -> Slice {
    let key: SortedMap<String, Value> = key.as_object().expect("object").clone().into_iter().collect();
    Slice {
        meta: SliceMeta {
            kind: kind.into(),
            key,
            axes: axes.iter().map(|a| a.to_string()).collect(),
            points: 0,
            prefix,
            power,
            note: None,
        },
        coords: Vec::new(),
        latency: Vec::new(),
        power: if power { Some(Vec::new()) } else { None },
        site_order: None,
    }
}

/// The package's version, from its `.dist-info` beside it (or `unknown`).
pub fn package_version(package: &Path) -> String {
    let parent = package.parent().unwrap_or(Path::new("."));
    if let Ok(entries) = std::fs::read_dir(parent) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if let Some(rest) = n.strip_prefix("aiconfigurator_core-")
                && let Some(v) = rest.strip_suffix(".dist-info")
            {
                return v.to_string();
            }
        }
    }
    "unknown".into()
}

fn write_zip(meta: &Meta, slices: &[Slice]) -> Result<Vec<u8>, Error> {
    let mut meta = meta.clone();
    for (m, s) in meta.slices.iter_mut().zip(slices) {
        m.points = s.latency.len();
    }
    // Every array in one member (one deflate stream compresses better than hundreds of small
    // ones and spares their headers); meta.json says where each lies.
    let mut blob: Vec<u8> = Vec::new();
    let mut arrays = SortedMap::new();
    let mut put = |name: String, bytes: &[u8]| {
        arrays.insert(name, [blob.len(), bytes.len()]);
        blob.extend_from_slice(bytes);
    };
    for s in slices {
        // Axis-major: each axis's values in point order (sorted points make long runs).
        let dims = s.meta.axes.len();
        let coords: Vec<u8> = (0..dims).flat_map(|a| s.coords.iter().skip(a).step_by(dims)).flat_map(|c| c.to_le_bytes()).collect();
        put(format!("{}.coords", s.meta.prefix), &coords);
        let mut values = |name: &str, v: &[f64]| {
            let (c, a, b) = encode_values(v);
            put(format!("{}.{name}.code", s.meta.prefix), &c);
            put(format!("{}.{name}.f32", s.meta.prefix), &a);
            put(format!("{}.{name}.f64", s.meta.prefix), &b);
        };
        values("latency", &s.latency);
        if let Some(p) = &s.power {
            values("power", p);
        }
        if let Some(o) = &s.site_order {
            let b: Vec<u8> = o.iter().flat_map(|c| c.to_le_bytes()).collect();
            put(format!("{}.site_order", s.meta.prefix), &b);
        }
    }
    meta.arrays = arrays;
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated).compression_level(Some(9));
        zip.start_file("meta.json", opts).map_err(|e| e.to_string())?;
        zip.write_all(serde_json::to_string_pretty(&meta).map_err(|e| e.to_string())?.as_bytes()).map_err(|e| e.to_string())?;
        zip.start_file("arrays.bin", opts).map_err(|e| e.to_string())?;
        zip.write_all(&blob).map_err(|e| e.to_string())?;
        zip.finish().map_err(|e| e.to_string())?;
    }
    Ok(buf.into_inner())
}

/// The bundled dense models' configs (`model_configs/<org>--<name>_config.json`, with the
/// `hf_quant_config` beside it when there is one), by Hugging Face name.
pub fn bundled_models(package: &Path) -> Result<Value, Error> {
    let dir = package.join("model_configs");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    let mut models = serde_json::Map::new();
    const KEEP: [&str; 23] = [
        "architectures",
        "n_routed_experts",
        "num_experts",
        "num_local_experts",
        "num_experts_per_tok",
        "experts_per_token",
        "moe_intermediate_size",
        "n_shared_experts",
        "kv_lora_rank",
        "q_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
        "num_hidden_layers",
        "hidden_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
        "max_position_embeddings",
        "quantization_config",
        "torch_dtype",
    ];
    for n in names {
        let Some(stem) = n.strip_suffix("_config.json") else { continue };
        if stem.ends_with("_hf_quant") {
            continue;
        }
        let path = dir.join(&n);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let cfg: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            // Not JSON as serde reads it (Python's `Infinity`): fine unless it is a dense model.
            Err(_) if !DENSE_ARCHITECTURES.iter().chain(&MOE_ARCHITECTURES).any(|a| text.contains(a)) => continue,
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let arch = cfg.get("architectures").and_then(|a| a.get(0)).and_then(|a| a.as_str()).unwrap_or("");
        if !DENSE_ARCHITECTURES.contains(&arch) && !MOE_ARCHITECTURES.contains(&arch) {
            continue;
        }
        let mut out = serde_json::Map::new();
        for k in KEEP {
            if let Some(v) = cfg.get(k) {
                out.insert(k.into(), v.clone());
            }
        }
        let hq = dir.join(format!("{stem}_hf_quant_config.json"));
        if hq.is_file() {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&hq).map_err(|e| e.to_string())?)
                .map_err(|e| format!("{}: {e}", hq.display()))?;
            out.insert("hf_quant_config".into(), v);
        }
        models.insert(stem.replacen("--", "/", 1), Value::Object(out));
    }
    Ok(json!({"source": format!("{PACKAGE} {}: model_configs/", package_version(package)), "models": models}))
}

/// The MoE expert-compute table (`moe_perf`, kept for [`MOE_SHAPES`]) and the MLA tables
/// (`context_mla_perf`, `generation_mla_perf`, `mla_bmm_perf`, and the module tables
/// `mla_context_module_perf` / `mla_generation_module_perf`), read as the reference loads
/// them: sources nearest version first, the first value of a repeated point kept.
fn moe_and_mla(
    data_root: &Path,
    package: &Path,
    backend: &str,
    version: &str,
    slices: &mut Vec<Slice>,
    tables: &mut Vec<Value>,
) -> Result<(), Error> {
    let str_at = |_: &Table, row: &Row, i: usize| as_str(field(row, i)).unwrap_or("").to_string();
    // MoE: by (quant, distribution, shape), points along num_tokens.
    {
        let src = sources(data_root, "moe", backend, version, "moe_perf.parquet")?;
        type Key = (String, String, u32, u32, u32, u32, u32, u32);
        let mut by_key: BTreeMap<Key, Points<u32>> = BTreeMap::new();
        let (mut rows, mut kept, mut power_seen) = (0usize, 0usize, false);
        for p in &src {
            let t = Table::read(p)?;
            let c = |n: &str| t.need(n, p);
            let (q, nt, h, inter, topk, ne, mtp, mep, dist, lat) = (
                c("moe_dtype")?,
                c("num_tokens")?,
                c("hidden_size")?,
                c("inter_size")?,
                c("topk")?,
                c("num_experts")?,
                c("moe_tp_size")?,
                c("moe_ep_size")?,
                c("distribution")?,
                c("latency")?,
            );
            let (pw, ks, de) = (t.col("power"), t.col("kernel_source"), t.col("default_eligible"));
            for row in &t.rows {
                rows += 1;
                let shape = (
                    as_u32(field(row, h), "hidden_size")?,
                    as_u32(field(row, inter), "inter_size")?,
                    as_u32(field(row, topk), "topk")?,
                    as_u32(field(row, ne), "num_experts")?,
                );
                if !MOE_SHAPES.contains(&shape) {
                    continue;
                }
                let source = ks.map(|i| str_at(&t, row, i)).unwrap_or_default();
                // Lanes outside the default merge (the low-latency nvfp4 kernel, rows marked
                // not default-eligible) are not read by the default query.
                if source == "moe_torch_flow_min_latency" || de.is_some_and(|i| matches!(field(row, i), Field::Bool(false))) {
                    continue;
                }
                let mut quant = str_at(&t, row, q);
                quant = match (quant.as_str(), source.as_str()) {
                    ("w4a8_mxfp4_mxfp8", "sglang_mxfp4_flashinfer_trtllm_moe") => "w4a8_mxfp4_mxfp8_trtllm".into(),
                    ("w4a16_mxfp4", "sglang_flashinfer_cutlass_moe") => "w4a16_mxfp4_cutlass".into(),
                    ("w4a16_mxfp4", "sglang_mxfp4_humming_moe") => "w4a16_mxfp4_humming".into(),
                    _ => quant,
                };
                let key: Key = (
                    quant,
                    str_at(&t, row, dist),
                    shape.0,
                    shape.1,
                    shape.2,
                    shape.3,
                    as_u32(field(row, mtp), "moe_tp_size")?,
                    as_u32(field(row, mep), "moe_ep_size")?,
                );
                let power = pw.and_then(|i| as_opt_f64(field(row, i)));
                power_seen |= power.is_some();
                kept += 1;
                by_key
                    .entry(key)
                    .or_default()
                    .entry(as_u32(field(row, nt), "num_tokens")?)
                    .or_insert((as_f64(field(row, lat), "latency")?, power));
            }
        }
        for (i, (k, curve)) in by_key.iter().enumerate() {
            let key = json!({"quant": k.0, "distribution": k.1, "hidden": k.2, "inter": k.3, "topk": k.4, "experts": k.5, "moe_tp": k.6, "moe_ep": k.7});
            let mut s = new_slice("moe", key, &["num_tokens"], format!("moe.{i}"), power_seen);
            for (&m, &point) in curve {
                s.push([m], point);
            }
            slices.push(s);
        }
        tables.push(json!({"table": "moe_perf", "sources": src.iter().map(|p| rel(package, p)).collect::<Vec<_>>(), "rows": rows, "kept_rows": kept,
            "kept": "the expert shapes of DeepSeek-V3/R1, Qwen3-235B-A22B, Qwen3-30B-A3B; the default lanes (not moe_torch_flow_min_latency, not default_eligible=false); first value of a repeated point"}));
    }
    // MLA attention (context: heads × sequence × batch by (fmha, kv); generation: heads ×
    // batch × (isl + step) by kv), the BMMs (tokens by (quant, pre/post, heads)) and the
    // module tables (by (fmha, kv, gemm) resp. (kv, gemm); DeepSeek's native 128 heads).
    for (basename, kind) in [
        ("context_mla_perf.parquet", "context_mla"),
        ("generation_mla_perf.parquet", "generation_mla"),
        ("mla_context_module_perf.parquet", "context_mla_module"),
        ("mla_generation_module_perf.parquet", "generation_mla_module"),
        ("mla_bmm_perf.parquet", "mla_bmm"),
    ] {
        let src = sources(data_root, if kind == "mla_bmm" { "mla_bmm" } else { "mla" }, backend, version, basename)?;
        if src.is_empty() {
            continue;
        }
        let mut by_key: BTreeMap<Vec<String>, Points<Vec<u32>>> = BTreeMap::new();
        let (mut rows, mut power_seen) = (0usize, false);
        for p in &src {
            let t = Table::read(p)?;
            let pw = t.col("power");
            let col = |n: &str| t.need(n, p);
            for row in &t.rows {
                rows += 1;
                let u = |n: &str| -> Result<u32, Error> { as_u32(field(row, col(n)?), n) };
                let s_ = |n: &str| -> Result<String, Error> { Ok(str_at(&t, row, col(n)?)) };
                let (key, point) = match kind {
                    "context_mla" => (vec![s_("mla_dtype")?, s_("kv_cache_dtype")?], vec![u("num_heads")?, u("isl")?, u("batch_size")?]),
                    "generation_mla" => (vec![s_("kv_cache_dtype")?], vec![u("num_heads")?, u("batch_size")?, u("isl")? + u("step")?]),
                    "context_mla_module" | "generation_mla_module" => {
                        // Only DeepSeek's rows (native 128 heads) are kept: the model servesim times.
                        let model = s_("model")?;
                        if !matches!(model.as_str(), "deepseek-ai/DeepSeek-V3" | "deepseek-ai/DeepSeek-R1" | "nvidia/DeepSeek-V3.1-NVFP4") {
                            continue;
                        }
                        let mut k = vec![s_("kv_cache_dtype")?, s_("gemm_type")?];
                        let pt = if kind == "context_mla_module" {
                            k.insert(0, s_("mla_dtype")?);
                            vec![u("num_heads")?, u("isl")?, u("batch_size")?]
                        } else {
                            vec![u("num_heads")?, u("batch_size")?, u("isl")? + u("step")?]
                        };
                        (k, pt)
                    }
                    _ => (vec![s_("bmm_dtype")?, s_("op_name")?, u("num_heads")?.to_string()], vec![u("num_tokens")?]),
                };
                let power = pw.and_then(|i| as_opt_f64(field(row, i)));
                power_seen |= power.is_some();
                by_key.entry(key).or_default().entry(point).or_insert((as_f64(field(row, col("latency")?), "latency")?, power));
            }
        }
        for (i, (k, grid)) in by_key.iter().enumerate() {
            let (key, axes): (Value, &[&str]) = match kind {
                "context_mla" => (json!({"fmha": k[0], "kv": k[1]}), &["num_heads", "seq_len", "batch"]),
                "generation_mla" => (json!({"kv": k[0]}), &["num_heads", "batch", "seq_len"]),
                "context_mla_module" => (json!({"fmha": k[0], "kv": k[1], "gemm": k[2]}), &["num_heads", "seq_len", "batch"]),
                "generation_mla_module" => (json!({"kv": k[0], "gemm": k[1]}), &["num_heads", "batch", "seq_len"]),
                _ => (json!({"quant": k[0], "op": k[1], "heads": k[2].parse::<u32>().unwrap_or(0)}), &["num_tokens"]),
            };
            let mut s = new_slice(kind, key, axes, format!("{kind}.{i}"), power_seen);
            for (pt, &point) in grid {
                s.push(pt.iter().copied(), point);
            }
            slices.push(s);
        }
        tables.push(json!({"table": basename.trim_end_matches(".parquet"), "sources": src.iter().map(|p| rel(package, p)).collect::<Vec<_>>(), "rows": rows,
            "kept": "first value of a repeated point (tp_size is not a key: the reference ignores it); module tables: DeepSeek's rows only"}));
    }
    Ok(())
}

/// NCCL collectives (`comm/nccl/<misc.nccl_version>/nccl_perf.parquet`, framework-agnostic),
/// half precision: message elements → latency by (operation, GPUs). The MoE dispatch under
/// attention data parallelism gathers and scatters tokens with them.
fn nccl(package: &Path, system: &str, data_root: &Path, slices: &mut Vec<Slice>, tables: &mut Vec<Value>) -> Result<(), Error> {
    let path = package.join("systems").join(format!("{system}.yaml"));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let Some(version) = docs[0]["misc"]["nccl_version"].as_str().map(str::to_string) else { return Ok(()) };
    let p = data_root.join("comm").join("nccl").join(&version).join("nccl_perf.parquet");
    if !p.is_file() {
        return Ok(());
    }
    let t = Table::read(&p)?;
    let (op, dt, g, ms, lat) =
        (t.need("op_name", &p)?, t.need("nccl_dtype", &p)?, t.need("num_gpus", &p)?, t.need("message_size", &p)?, t.need("latency", &p)?);
    let pw = t.col("power");
    let mut by_key: BTreeMap<(String, u32), Points<u32>> = BTreeMap::new();
    let mut power_seen = false;
    for row in &t.rows {
        if as_str(field(row, dt)) != Some("half") {
            continue;
        }
        let power = pw.and_then(|i| as_opt_f64(field(row, i)));
        power_seen |= power.is_some();
        by_key
            .entry((as_str(field(row, op)).unwrap_or("").to_string(), as_u32(field(row, g), "num_gpus")?))
            .or_default()
            .entry(as_u32(field(row, ms), "message_size")?)
            .or_insert((as_f64(field(row, lat), "latency")?, power));
    }
    for (i, ((name, gpus), curve)) in by_key.iter().enumerate() {
        let mut s = new_slice("nccl", json!({"op": name, "gpus": gpus}), &["message_size"], format!("nccl.{i}"), power_seen);
        for (&m, &point) in curve {
            s.push([m], point);
        }
        slices.push(s);
    }
    tables.push(json!({"table": "nccl_perf", "sources": [rel(package, &p)], "rows": t.rows.len(), "kept": "nccl_dtype half; first value of a repeated point"}));
    Ok(())
}
