//! A measured-kernel data file: one GPU × framework × version of AIConfigurator's kernel
//! tables, in servesim's own compact format (written by `servesim-ais-convert`, described in
//! `docs/formats.md#measured-kernel-data`).
//!
//! The file is a zip archive (deflate) of `meta.json` (provenance, the GPU's figures and an
//! index of the tables) and little-endian arrays, one set per table *slice* (one quant of
//! the GEMM table, one `(fmha, kv, kv heads, head size, window)` key of an attention table,
//! one tensor-parallel size of the all-reduce table...). A slice holds its points sorted by
//! their coordinates, and its values as an exact encoding of float64 (see [`decode_values`]).
//!
//! New tables (MoE, MLA, NCCL) are new `kind`s of slice: the reader keeps every slice under
//! its kind and key, and a table it does not use costs nothing.

use crate::perf::zipfile::read_members;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;

use super::interp::{Curve, Grid, LeafValue, SiteCurves};
use super::sorted::SortedMap;

/// The format's name in `meta.json`.
pub const FORMAT: &str = "servesim-measured-kernels";
/// The format version this reader understands.
pub const FORMAT_VERSION: u32 = 1;

/// A problem with a data file, naming what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct DataError(pub String);

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DataError {}

fn err(msg: impl Into<String>) -> DataError {
    DataError(msg.into())
}

/// The GPU and node figures of AIConfigurator's `systems/<gpu>.yaml` the model reads.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SystemSpec {
    pub name: String,
    /// HBM bandwidth, bytes/s.
    pub mem_bw: f64,
    pub mem_bw_empirical_scaling_factor: f64,
    /// Seconds added to every memory-bound op.
    pub mem_empirical_constant_latency: f64,
    /// HBM bytes.
    pub mem_capacity: Option<u64>,
    pub bfloat16_tc_flops: Option<f64>,
    pub int8_tc_flops: Option<f64>,
    pub fp8_tc_flops: Option<f64>,
    pub fp4_tc_flops: Option<f64>,
    /// Board power, W.
    pub power: Option<f64>,
    pub sm_version: Option<u32>,
    pub num_gpus_per_node: u32,
    pub inter_node_bw: f64,
    pub intra_node_bw: f64,
    /// Seconds.
    pub p2p_latency: f64,
    pub num_gpus_per_rack: Option<u32>,
    pub inter_rack_bw: Option<f64>,
    /// NCCL's memory by GPUs per group, bytes.
    #[serde(default)]
    pub nccl_mem: SortedMap<u32, u64>,
    /// Other reserved memory, bytes.
    pub other_mem: Option<u64>,
}

impl SystemSpec {
    /// Point-to-point bandwidth for a collective over `gpus` GPUs: within a node, within a
    /// rack, across racks.
    pub fn p2p_bandwidth(&self, gpus: u32) -> f64 {
        if gpus <= self.num_gpus_per_node {
            return self.intra_node_bw;
        }
        if gpus <= self.num_gpus_per_rack.unwrap_or(u32::MAX) {
            return self.inter_node_bw;
        }
        self.inter_rack_bw.unwrap_or(self.inter_node_bw)
    }
}

/// One slice's entry in `meta.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SliceMeta {
    /// `gemm`, `context_attention`, `generation_attention`, `custom_allreduce`,
    /// `compute_scale`, `scale_matrix`.
    pub kind: String,
    /// The slice's discrete key (quant, dtypes, head size, tp...).
    pub key: SortedMap<String, Value>,
    /// The continuous axes, outermost first.
    pub axes: Vec<String>,
    pub points: usize,
    /// Member-name prefix of the slice's arrays.
    pub prefix: String,
    /// Whether the slice has a `power` stream.
    #[serde(default)]
    pub power: bool,
    /// Where the rows came from (kernel source lane, versions), for provenance.
    #[serde(default)]
    pub note: Option<String>,
}

/// `meta.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Meta {
    pub format: String,
    pub format_version: u32,
    pub system: SystemSpec,
    /// Package, version, tables and filters the file was made from.
    pub provenance: Value,
    pub slices: Vec<SliceMeta>,
    /// Where each array lies in `arrays.bin`: name → [byte offset, byte length].
    pub arrays: SortedMap<String, [usize; 2]>,
}

/// Fields of a `meta.json` object, read by hand (no derived deserializer: the page's engine
/// stays small). Errors name the field.
struct Obj<'a>(&'a serde_json::Map<String, Value>, &'a str);

impl<'a> Obj<'a> {
    fn of(v: &'a Value, at: &'a str) -> Result<Obj<'a>, DataError> {
        v.as_object().map(|m| Obj(m, at)).ok_or_else(|| err(format!("meta.json: {at}: expected an object")))
    }
    fn get(&self, k: &str) -> Option<&'a Value> {
        self.0.get(k).filter(|v| !v.is_null())
    }
    fn bad(&self, k: &str, what: &str) -> DataError {
        err(format!("meta.json: {}{k}: expected {what}", self.1))
    }
    fn f64(&self, k: &str) -> Result<f64, DataError> {
        self.get(k).and_then(Value::as_f64).ok_or_else(|| self.bad(k, "a number"))
    }
    fn opt_f64(&self, k: &str) -> Result<Option<f64>, DataError> {
        self.get(k).map(|v| v.as_f64().ok_or_else(|| self.bad(k, "a number"))).transpose()
    }
    fn u64(&self, k: &str) -> Result<u64, DataError> {
        self.get(k).and_then(Value::as_u64).ok_or_else(|| self.bad(k, "an integer"))
    }
    fn opt_u64(&self, k: &str) -> Result<Option<u64>, DataError> {
        self.get(k).map(|v| v.as_u64().ok_or_else(|| self.bad(k, "an integer"))).transpose()
    }
    fn str(&self, k: &str) -> Result<String, DataError> {
        self.get(k).and_then(Value::as_str).map(str::to_string).ok_or_else(|| self.bad(k, "a string"))
    }
}

impl Meta {
    fn from_value(v: &Value) -> Result<Meta, DataError> {
        let o = Obj::of(v, "")?;
        let sys = Obj::of(o.get("system").ok_or_else(|| o.bad("system", "an object"))?, "system.")?;
        let mut nccl_mem = SortedMap::new();
        if let Some(m) = sys.get("nccl_mem").and_then(Value::as_object) {
            for (k, v) in m {
                let gpus = k.parse().map_err(|_| sys.bad("nccl_mem", "GPU counts as keys"))?;
                nccl_mem.insert(gpus, v.as_u64().ok_or_else(|| sys.bad("nccl_mem", "byte counts"))?);
            }
        }
        let u32_of = |v: Option<u64>| v.map(|x| x as u32);
        let system = SystemSpec {
            name: sys.str("name")?,
            mem_bw: sys.f64("mem_bw")?,
            mem_bw_empirical_scaling_factor: sys.f64("mem_bw_empirical_scaling_factor")?,
            mem_empirical_constant_latency: sys.f64("mem_empirical_constant_latency")?,
            mem_capacity: sys.opt_u64("mem_capacity")?,
            bfloat16_tc_flops: sys.opt_f64("bfloat16_tc_flops")?,
            int8_tc_flops: sys.opt_f64("int8_tc_flops")?,
            fp8_tc_flops: sys.opt_f64("fp8_tc_flops")?,
            fp4_tc_flops: sys.opt_f64("fp4_tc_flops")?,
            power: sys.opt_f64("power")?,
            sm_version: u32_of(sys.opt_u64("sm_version")?),
            num_gpus_per_node: sys.u64("num_gpus_per_node")? as u32,
            inter_node_bw: sys.f64("inter_node_bw")?,
            intra_node_bw: sys.f64("intra_node_bw")?,
            p2p_latency: sys.f64("p2p_latency")?,
            num_gpus_per_rack: u32_of(sys.opt_u64("num_gpus_per_rack")?),
            inter_rack_bw: sys.opt_f64("inter_rack_bw")?,
            nccl_mem,
            other_mem: sys.opt_u64("other_mem")?,
        };
        let mut slices = Vec::new();
        for (i, s) in o.get("slices").and_then(Value::as_array).ok_or_else(|| o.bad("slices", "a list"))?.iter().enumerate() {
            let at = format!("slices[{i}].");
            let so = Obj::of(s, &at)?;
            let key = so.get("key").and_then(Value::as_object).ok_or_else(|| so.bad("key", "an object"))?;
            let axes = so.get("axes").and_then(Value::as_array).ok_or_else(|| so.bad("axes", "a list"))?;
            slices.push(SliceMeta {
                kind: so.str("kind")?,
                key: key.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                axes: axes
                    .iter()
                    .map(|a| a.as_str().map(str::to_string).ok_or_else(|| so.bad("axes", "names")))
                    .collect::<Result<_, _>>()?,
                points: so.u64("points")? as usize,
                prefix: so.str("prefix")?,
                power: so.get("power").and_then(Value::as_bool).unwrap_or(false),
                note: so.get("note").and_then(Value::as_str).map(str::to_string),
            });
        }
        let mut arrays = SortedMap::new();
        for (k, v) in o.get("arrays").and_then(Value::as_object).ok_or_else(|| o.bad("arrays", "an object"))? {
            let r = v.as_array().filter(|r| r.len() == 2).and_then(|r| Some([r[0].as_u64()? as usize, r[1].as_u64()? as usize]));
            arrays.insert(k.clone(), r.ok_or_else(|| o.bad("arrays", "[offset, length] pairs"))?);
        }
        Ok(Meta {
            format: o.str("format")?,
            format_version: o.u64("format_version")? as u32,
            system,
            provenance: o.get("provenance").cloned().unwrap_or(Value::Null),
            slices,
            arrays,
        })
    }
}

/// The whole file: its meta read at once, each table slice decompressed and built into a
/// query-ready table the first time a query needs it (a model reads a few of a file's ~100).
pub struct KernelData {
    pub meta: Meta,
    /// `arrays.bin`, decompressed.
    blob: Vec<u8>,
    /// GEMM by quant name.
    gemm: SortedMap<String, Lazy>,
    /// Context attention by (fmha, kv, kv-head lookup, head size, window): axes (heads, full
    /// sequence, batch).
    context: SortedMap<AttnKey, Lazy>,
    /// Generation attention by (kv, kv-head lookup, head size, window): axes (heads, batch,
    /// sequence).
    generation: SortedMap<AttnKey, Lazy>,
    /// Custom all-reduce by tensor-parallel size: message elements → latency.
    allreduce: SortedMap<u32, Lazy>,
    /// fp8_static overhead tables by quant: axes (m, k).
    compute_scale: SortedMap<String, Lazy>,
    scale_matrix: SortedMap<String, Lazy>,
    /// The MoE and MLA tables (`moe`, `context_mla`, `generation_mla`, `mla_bmm`,
    /// `context_mla_module`, `generation_mla_module`) by kind and key (the slice's key object
    /// as compact JSON, its fields sorted).
    keyed: SortedMap<(String, String), Lazy>,
}

/// A built table of one of the kinds a data file holds (one type for all: the page's engine
/// then carries one copy of the lazy-building code).
enum Table {
    Sites(SiteCurves),
    Grid(Grid),
    Curve(Curve),
}

/// Builds a slice's table from its points (coordinates, value).
type Builder<'b> = &'b dyn Fn(&[(&[u32], LeafValue)]) -> Result<Table, DataError>;

/// A slice's index in `meta.slices` and its table once built.
struct Lazy {
    slice: usize,
    table: OnceLock<Result<Table, DataError>>,
}

impl Lazy {
    fn new(slice: usize) -> Self {
        Lazy { slice, table: OnceLock::new() }
    }
}

impl std::fmt::Debug for KernelData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelData").field("system", &self.meta.system.name).field("slices", &self.meta.slices.len()).finish()
    }
}

/// An attention slice's key. `fmha` is empty for generation attention; `n_kv` is 0 when the
/// kernel has as many KV heads as query heads (AIConfigurator's convention).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct AttnKey {
    pub fmha: String,
    pub kv: String,
    pub n_kv: u32,
    pub head_size: u32,
    pub window: u32,
}

impl KernelData {
    /// Parses a data file's bytes (the meta now, the tables as they are needed).
    pub fn from_bytes(bytes: &[u8]) -> Result<KernelData, DataError> {
        let mut members = read_members(bytes).map_err(|e| err(format!("not a measured-kernel data file: {}", e.0)))?;
        let meta_bytes = take_member(&mut members, "meta.json")?;
        let blob = take_member(&mut members, "arrays.bin")?;
        let meta: Value = serde_json::from_str(&String::from_utf8_lossy(&meta_bytes)).map_err(|e| err(format!("meta.json: {e}")))?;
        let meta = Meta::from_value(&meta)?;
        if meta.format != FORMAT {
            return Err(err(format!("meta.json: format `{}`, expected `{FORMAT}`", meta.format)));
        }
        if meta.format_version != FORMAT_VERSION {
            return Err(err(format!("meta.json: format_version {} (this servesim reads {FORMAT_VERSION})", meta.format_version)));
        }
        if let Some((name, r)) = meta.arrays.iter().find(|(_, r)| r[0].checked_add(r[1]).is_none_or(|end| end > blob.len())) {
            return Err(err(format!("meta.json: array `{name}` at {r:?} lies outside arrays.bin ({} bytes)", blob.len())));
        }
        let mut data = KernelData {
            meta: meta.clone(),
            blob,
            gemm: SortedMap::new(),
            context: SortedMap::new(),
            generation: SortedMap::new(),
            allreduce: SortedMap::new(),
            compute_scale: SortedMap::new(),
            scale_matrix: SortedMap::new(),
            keyed: SortedMap::new(),
        };
        for (i, s) in meta.slices.iter().enumerate() {
            let ctx = |m: &str| err(format!("slice `{}` ({}): {m}", s.prefix, s.kind));
            let key_str =
                |k: &str| s.key.get(k).and_then(|v| v.as_str()).map(str::to_string).ok_or_else(|| ctx(&format!("key `{k}` missing")));
            let key_u32 =
                |k: &str| s.key.get(k).and_then(|v| v.as_u64()).map(|v| v as u32).ok_or_else(|| ctx(&format!("key `{k}` missing")));
            let dims = match s.kind.as_str() {
                "gemm" | "context_attention" | "generation_attention" => 3,
                "compute_scale" | "scale_matrix" => 2,
                "custom_allreduce" => 1,
                _ => s.axes.len(),
            };
            if s.axes.len() != dims {
                return Err(ctx(&format!("{} axes, expected {dims}", s.axes.len())));
            }
            match s.kind.as_str() {
                "gemm" => {
                    data.gemm.insert(key_str("quant")?, Lazy::new(i));
                }
                "context_attention" | "generation_attention" => {
                    let key = AttnKey {
                        fmha: if s.kind == "context_attention" { key_str("fmha")? } else { String::new() },
                        kv: key_str("kv")?,
                        n_kv: key_u32("n_kv")?,
                        head_size: key_u32("head_size")?,
                        window: key_u32("window")?,
                    };
                    let map = if s.kind == "context_attention" { &mut data.context } else { &mut data.generation };
                    map.insert(key, Lazy::new(i));
                }
                "custom_allreduce" => {
                    data.allreduce.insert(key_u32("tp")?, Lazy::new(i));
                }
                "compute_scale" => {
                    data.compute_scale.insert(key_str("quant")?, Lazy::new(i));
                }
                "scale_matrix" => {
                    data.scale_matrix.insert(key_str("quant")?, Lazy::new(i));
                }
                "moe" | "context_mla" | "generation_mla" | "mla_bmm" | "context_mla_module" | "generation_mla_module" | "nccl" => {
                    data.keyed.insert((s.kind.clone(), key_text(&s.key)), Lazy::new(i));
                }
                // A table this servesim does not model (yet): kept out of the way.
                _ => {}
            }
        }
        Ok(data)
    }

    /// A slice's points: (coordinates, value) in stored order.
    fn points(&self, i: usize) -> Result<(Vec<Vec<u32>>, Vec<LeafValue>), DataError> {
        let s = &self.meta.slices[i];
        let ctx = |m: String| err(format!("slice `{}` ({}): {m}", s.prefix, s.kind));
        let coords = u32s(self.array(&format!("{}.coords", s.prefix))?).map_err(ctx)?;
        if coords.len() != s.points * s.axes.len() {
            return Err(ctx(format!("{} coordinates for {} points of {} axes", coords.len(), s.points, s.axes.len())));
        }
        let latency = self.stream(&format!("{}.latency", s.prefix), s.points).map_err(|e| ctx(e.0))?;
        let power =
            if s.power { self.stream(&format!("{}.power", s.prefix), s.points).map_err(|e| ctx(e.0))? } else { vec![0.0; s.points] };
        // Stored axis-major: axis a of point i is at a × points + i.
        let dims = s.axes.len();
        let rows = (0..s.points).map(|p| (0..dims).map(|a| coords[a * s.points + p]).collect()).collect();
        Ok((rows, latency.iter().zip(&power).map(|(&l, &p)| LeafValue::with_power(l, p)).collect()))
    }

    fn build<'a>(&'a self, lazy: &'a Lazy, f: Builder<'_>) -> Result<&'a Table, String> {
        lazy.table
            .get_or_init(|| {
                let (rows, values) = self.points(lazy.slice)?;
                let pts: Vec<(&[u32], LeafValue)> = rows.iter().map(Vec::as_slice).zip(values).collect();
                f(&pts)
            })
            .as_ref()
            .map_err(|e| e.0.clone())
    }

    fn grid<'a>(&'a self, lazy: &'a Lazy, f: Builder<'_>) -> Result<Option<&'a Grid>, String> {
        match self.build(lazy, f)? {
            Table::Grid(g) => Ok(Some(g)),
            _ => unreachable!("a grid slice builds a grid"),
        }
    }

    /// The GEMM table of a quant (its points raised to their speed of light, as the reference loads them).
    pub fn gemm(&self, quant: &str) -> Result<Option<&SiteCurves>, String> {
        let Some(lazy) = self.gemm.get(quant) else { return Ok(None) };
        let sys = &self.meta.system;
        let built = self.build(lazy, &|pts| {
            let mut order: Vec<[u32; 2]> = Vec::new();
            let raw = u32s(self.array(&format!("{}.site_order", self.meta.slices[lazy.slice].prefix))?).map_err(err)?;
            order.extend(raw.chunks_exact(2).map(|c| [c[0], c[1]]));
            let mut t = SiteCurves::new(pts, &order);
            if let Some(q) = super::quant::GemmQuant::parse(quant)
                && let Ok(flops) = super::ops::tc_flops(sys, q.compute_dtype())
            {
                t.map_values(|m, n, k, mut v| {
                    let sol = super::ops::gemm_sol(sys, q.memory(), flops, m as f64, n as f64, k as f64);
                    if sol > v.latency {
                        v.latency = sol;
                    }
                    v
                });
            }
            Ok(Table::Sites(t))
        })?;
        match built {
            Table::Sites(t) => Ok(Some(t)),
            _ => unreachable!("a GEMM slice builds site curves"),
        }
    }

    /// The GEMM quants the file holds.
    pub fn gemm_quants(&self) -> Vec<&str> {
        self.gemm.keys().map(String::as_str).collect()
    }

    /// A context-attention slice.
    pub fn context(&self, key: &AttnKey) -> Result<Option<&Grid>, String> {
        let Some(lazy) = self.context.get(key) else { return Ok(None) };
        self.grid(lazy, &|pts| Ok(Table::Grid(Grid::new(pts, 3))))
    }

    /// A generation-attention slice (raised to its speed of light, as the reference loads it).
    pub fn generation(&self, key: &AttnKey) -> Result<Option<&Grid>, String> {
        let Some(lazy) = self.generation.get(key) else { return Ok(None) };
        let sys = &self.meta.system;
        self.grid(lazy, &|pts| {
            let Some(kv) = super::quant::KvQuant::parse(&key.kv) else { return Ok(Table::Grid(Grid::new(pts, 3))) };
            let Ok(flops) = super::ops::tc_flops(sys, super::ops::generation_attention_dtype(sys, kv)) else {
                return Ok(Table::Grid(Grid::new(pts, 3)));
            };
            let raised: Vec<(&[u32], LeafValue)> = pts
                .iter()
                .map(|&(c, mut v)| {
                    let coords = [c[0] as f64, c[1] as f64, c[2] as f64];
                    let sol = super::ops::generation_attention_sol(sys, key.n_kv, key.head_size, key.window, kv.memory(), flops, &coords);
                    if sol > v.latency {
                        v.latency = sol;
                    }
                    (c, v)
                })
                .collect();
            Ok(Table::Grid(Grid::new(&raised, 3)))
        })
    }

    /// Tensor-parallel sizes with all-reduce data.
    pub fn allreduce_sizes(&self) -> Vec<u32> {
        self.allreduce.keys().copied().collect()
    }

    /// The all-reduce curve at `tp` GPUs.
    pub fn allreduce(&self, tp: u32) -> Result<Option<&Curve>, String> {
        let Some(lazy) = self.allreduce.get(&tp) else { return Ok(None) };
        match self.build(lazy, &|pts| Ok(Table::Curve(Curve::new(pts.iter().map(|(c, v)| (c[0] as f64, *v)).collect()))))? {
            Table::Curve(c) => Ok(Some(c)),
            _ => unreachable!("an all-reduce slice builds a curve"),
        }
    }

    /// fp8_static's compute_scale (`matrix = false`) or scale_matrix table for `quant`.
    pub fn scale_table(&self, matrix: bool, quant: &str) -> Result<Option<&Grid>, String> {
        let map = if matrix { &self.scale_matrix } else { &self.compute_scale };
        let Some(lazy) = map.get(quant) else { return Ok(None) };
        self.grid(lazy, &|pts| Ok(Table::Grid(Grid::new(pts, 2))))
    }

    /// A keyed MoE/MLA slice's lazy entry.
    fn keyed_lazy(&self, kind: &str, key: &Value) -> Option<&Lazy> {
        let map: SortedMap<String, Value> = key.as_object()?.clone().into_iter().collect();
        self.keyed.get(&(kind.to_string(), key_text(&map)))
    }

    /// Whether the file holds a slice of `kind` at `key`.
    pub fn has_keyed(&self, kind: &str, key: &Value) -> bool {
        self.keyed_lazy(kind, key).is_some()
    }

    /// The keys the file holds for `kind` (for error messages and lookups by a partial key).
    pub fn keyed_keys(&self, kind: &str) -> Vec<Value> {
        self.keyed.keys().filter(|(k, _)| k == kind).filter_map(|(_, key)| serde_json::from_str(key).ok()).collect()
    }

    /// A 1-D keyed slice (the MoE table along tokens) as a curve.
    pub fn keyed_curve(&self, kind: &str, key: &Value) -> Result<Option<&Curve>, String> {
        let Some(lazy) = self.keyed_lazy(kind, key) else { return Ok(None) };
        match self.build(lazy, &|pts| Ok(Table::Curve(Curve::new(pts.iter().map(|(c, v)| (c[0] as f64, *v)).collect()))))? {
            Table::Curve(c) => Ok(Some(c)),
            _ => unreachable!("a curve slice builds a curve"),
        }
    }

    /// A keyed slice (MLA attention, module, BMM tables) as a grid of its axes.
    pub fn keyed_grid(&self, kind: &str, key: &Value) -> Result<Option<&Grid>, String> {
        let Some(lazy) = self.keyed_lazy(kind, key) else { return Ok(None) };
        let dims = self.meta.slices[lazy.slice].axes.len();
        self.grid(lazy, &|pts| Ok(Table::Grid(Grid::new(pts, dims))))
    }

    /// `system/backend/version` of the file.
    pub fn identity(&self) -> (String, String, String) {
        let p = &self.meta.provenance;
        let s = |k: &str| p.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        (self.meta.system.name.clone(), s("backend"), s("backend_version"))
    }
}

impl KernelData {
    /// An array of `arrays.bin`, by name.
    fn array(&self, name: &str) -> Result<&[u8], DataError> {
        let [at, len] = *self.meta.arrays.get(name).ok_or_else(|| err(format!("array `{name}` is missing")))?;
        Ok(&self.blob[at..at + len])
    }

    fn stream(&self, name: &str, n: usize) -> Result<Vec<f64>, DataError> {
        let part = |p: &str| self.array(&format!("{name}.{p}"));
        decode_values([part("code")?, part("f32")?, part("f64")?], name, n)
    }
}

/// A slice key as compact JSON, fields sorted: the lookup key of MoE/MLA slices.
fn key_text(key: &SortedMap<String, Value>) -> String {
    let mut m = serde_json::Map::new();
    for (k, v) in key.iter() {
        m.insert(k.clone(), v.clone());
    }
    Value::Object(m).to_string()
}

fn take_member(members: &mut Vec<(String, Vec<u8>)>, name: &str) -> Result<Vec<u8>, DataError> {
    let at = members.iter().position(|(n, _)| n == name).ok_or_else(|| err(format!("member `{name}` is missing")))?;
    Ok(members.swap_remove(at).1)
}

fn u32s(bytes: &[u8]) -> Result<Vec<u32>, String> {
    if !bytes.len().is_multiple_of(4) {
        return Err(format!("{} bytes is not a whole number of u32", bytes.len()));
    }
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Reads the value stream `name`: float64 values stored exactly but compactly. Measured
/// latencies are mostly means of float32 timings, so each value is a float32 `x` and a
/// divisor `k` with `value == x as f64 / k` exactly; `NAME.code` holds `k` per value (0: the
/// value is the next float64 of `NAME.f64`), `NAME.f32` the float32s in order: `[code, f32,
/// f64]` here.
pub fn decode_values([codes, f32s, f64s]: [&[u8]; 3], name: &str, n: usize) -> Result<Vec<f64>, DataError> {
    if codes.len() != n {
        return Err(err(format!("{name}.code holds {} values, expected {n}", codes.len())));
    }
    let (mut i32_, mut i64_) = (0usize, 0usize);
    let mut out = Vec::with_capacity(n);
    for &k in codes {
        if k == 0 {
            let b = f64s.get(i64_ * 8..i64_ * 8 + 8).ok_or_else(|| err(format!("{name}.f64 is short")))?;
            out.push(f64::from_le_bytes(b.try_into().expect("8 bytes")));
            i64_ += 1;
        } else {
            let b = f32s.get(i32_ * 4..i32_ * 4 + 4).ok_or_else(|| err(format!("{name}.f32 is short")))?;
            out.push(f32::from_le_bytes(b.try_into().expect("4 bytes")) as f64 / k as f64);
            i32_ += 1;
        }
    }
    if i32_ * 4 != f32s.len() || i64_ * 8 != f64s.len() {
        return Err(err(format!("{name}: values left over")));
    }
    Ok(out)
}

/// The inverse of [`decode_values`]: (codes, float32 bytes, float64 bytes). Exact: every
/// value decodes to the same bits.
pub fn encode_values(values: &[f64]) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let (mut codes, mut f32s, mut f64s) = (Vec::with_capacity(values.len()), Vec::new(), Vec::new());
    'next: for &v in values {
        if v.is_finite() {
            for k in 1u8..=255 {
                let x = (v * k as f64) as f32;
                if (x as f64 / k as f64).to_bits() == v.to_bits() {
                    codes.push(k);
                    f32s.extend_from_slice(&x.to_le_bytes());
                    continue 'next;
                }
            }
        }
        codes.push(0);
        f64s.extend_from_slice(&v.to_le_bytes());
    }
    (codes, f32s, f64s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_encoding_is_exact() {
        let values = [63.8311767578125, 43.273640950520836, 0.1 + 0.2, 1e-300, 0.0, -2.5, f64::NAN, 7.0 / 9.0];
        let (c, a, b) = encode_values(&values);
        let back = decode_values([&c, &a, &b], "v", values.len()).unwrap();
        for (x, y) in values.iter().zip(&back) {
            assert_eq!(x.to_bits(), y.to_bits(), "{x} → {y}");
        }
        // 43.27… is a float32 mean of three: one byte of code and four of value.
        assert_eq!(c[1], 3);
        assert!(decode_values([&c, &a, &b], "v", 3).is_err(), "a wrong count is an error");
    }
}
