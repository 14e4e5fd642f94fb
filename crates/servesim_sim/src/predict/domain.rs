//! The search space of a recommend file: every field written as a domain — `{choices: [...]}`,
//! `{range: {min, max, step, scale}}` — and every `preset` list becomes a dimension; a
//! candidate picks one value per dimension and is the file with those values written in, a
//! concrete predict file. Domains are allowed where the reference allows them (and on
//! servesim's extensions); elsewhere a domain is an error naming the field.

use super::fields::error_at;
use super::yaml::{Node, Value};
use crate::SimError;

/// What one dimension can take.
#[derive(Clone, Debug)]
pub enum Domain {
    /// Finitely many values: `choices`, a stepped linear range, a preset list.
    Values(Vec<Node>),
    /// A range without a step (linear or log scale); integers for integer fields.
    Range { min: f64, max: f64, log: bool, integer: bool },
}

/// One searched field.
#[derive(Clone, Debug)]
pub struct Dim {
    /// The field's dotted path (`engine.workers.aggregated.scheduler.max_batched_tokens`); for
    /// a preset, the object it fills (`engine.workers.aggregated.parallelism`).
    pub path: String,
    pub domain: Domain,
    /// A preset: each value is a mapping of fields set on the object at `path` (a planner
    /// preset group: fields of `planner`).
    pub preset: bool,
}

/// A dimension's pick: an index into its values, or a point of its range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pick {
    Index(usize),
    Real(f64),
}

/// A recommend file's search space.
#[derive(Clone, Debug)]
pub struct Space {
    /// The file without `optimization` and `optimizer`, domains still in place.
    pub base: Node,
    pub dims: Vec<Dim>,
}

/// Leaves that may be domains (`*` a worker role).
const DOMAIN_PATHS: &[&str] = &[
    "engine.mode",
    "engine.backend",
    "engine.enable_chunked_prefill",
    "engine.workers.*.parallelism.replicas",
    "engine.workers.*.parallelism.tensor",
    "engine.workers.*.parallelism.pipeline",
    "engine.workers.*.parallelism.attention_data",
    "engine.workers.*.parallelism.moe_tensor",
    "engine.workers.*.parallelism.moe_expert",
    "engine.workers.*.scheduler.max_batched_tokens",
    "engine.workers.*.scheduler.max_sequences",
    "engine.workers.*.kv_cache.block_size",
    "engine.workers.*.kv_cache.prefix_caching",
    "engine.workers.*.kv_cache.capacity.memory_fraction",
    "engine.workers.*.kv_cache.capacity.blocks",
    "engine.kv_transfer.bandwidth_gb_per_second",
    "engine.kv_transfer.timing_mode",
    "traffic.load.concurrency",
    "traffic.load.requests_per_second",
    "traffic.load.sessions_per_second",
    "traffic.load.fraction",
    "traffic.load.speedup",
    "router.policy",
    "router.prefill_load_model.type",
    "router.overlap_score_credit",
    "router.prefill_load_scale",
    "router.temperature",
    "planner.policy",
    "planner.enable_throughput_scaling",
    "planner.enable_load_scaling",
    "planner.throughput_adjustment_interval_seconds",
    "planner.load_adjustment_interval_seconds",
    "planner.max_num_fpm_samples",
    "planner.fpm_sample_bucket_size",
    "planner.load_scaling_down_sensitivity",
    "planner.load_min_observations",
    "planner.load_predictor_log1p",
    "planner.prophet_window_size",
    "planner.kalman_q_level",
    "planner.kalman_q_trend",
    "planner.kalman_r",
    "planner.kalman_min_points",
    "planner.min_workers",
    "planner.prefill_min_workers",
    "planner.decode_min_workers",
];

/// Integer fields: a range over them gives integers, also on a log scale.
const INTEGER_LEAVES: &[&str] = &[
    "replicas",
    "tensor",
    "pipeline",
    "attention_data",
    "moe_tensor",
    "moe_expert",
    "max_batched_tokens",
    "max_sequences",
    "block_size",
    "blocks",
    "concurrency",
    "throughput_adjustment_interval_seconds",
    "load_adjustment_interval_seconds",
    "max_num_fpm_samples",
    "fpm_sample_bucket_size",
    "load_scaling_down_sensitivity",
    "load_min_observations",
    "prophet_window_size",
    "kalman_min_points",
    "min_workers",
    "prefill_min_workers",
    "decode_min_workers",
];

/// The reference planner's preset groups and the fields each preset sets.
fn planner_preset(group: &str, name: &str) -> Option<serde_json::Value> {
    use serde_json::json;
    Some(match (group, name) {
        ("scaling_policy", "disabled") => json!({"enable_throughput_scaling": false, "enable_load_scaling": false}),
        ("scaling_policy", "throughput_180_5") => {
            json!({"enable_throughput_scaling": true, "enable_load_scaling": false, "throughput_adjustment_interval_seconds": 180, "load_adjustment_interval_seconds": 5})
        }
        ("scaling_policy", "throughput_600_5") => {
            json!({"enable_throughput_scaling": true, "enable_load_scaling": false, "throughput_adjustment_interval_seconds": 600, "load_adjustment_interval_seconds": 5})
        }
        ("scaling_policy", "load_180_5") => {
            json!({"enable_throughput_scaling": false, "enable_load_scaling": true, "throughput_adjustment_interval_seconds": 180, "load_adjustment_interval_seconds": 5})
        }
        ("scaling_policy", "load_180_10") => {
            json!({"enable_throughput_scaling": false, "enable_load_scaling": true, "throughput_adjustment_interval_seconds": 180, "load_adjustment_interval_seconds": 10})
        }
        ("scaling_policy", "hybrid_180_5") => {
            json!({"enable_throughput_scaling": true, "enable_load_scaling": true, "throughput_adjustment_interval_seconds": 180, "load_adjustment_interval_seconds": 5})
        }
        ("scaling_policy", "hybrid_600_5") => {
            json!({"enable_throughput_scaling": true, "enable_load_scaling": true, "throughput_adjustment_interval_seconds": 600, "load_adjustment_interval_seconds": 5})
        }
        ("fpm_sampling", "small") => json!({"max_num_fpm_samples": 32, "fpm_sample_bucket_size": 4}),
        ("fpm_sampling", "default") => json!({"max_num_fpm_samples": 64, "fpm_sample_bucket_size": 16}),
        ("fpm_sampling", "large") => json!({"max_num_fpm_samples": 128, "fpm_sample_bucket_size": 16}),
        ("fpm_sampling", "fine") => json!({"max_num_fpm_samples": 128, "fpm_sample_bucket_size": 64}),
        ("load_sensitivity", "aggressive") => json!({"load_scaling_down_sensitivity": 70, "load_min_observations": 3}),
        ("load_sensitivity", "default") => json!({"load_scaling_down_sensitivity": 80, "load_min_observations": 5}),
        ("load_sensitivity", "conservative") => json!({"load_scaling_down_sensitivity": 90, "load_min_observations": 8}),
        ("load_predictor", p) => {
            let (family, log1p) = match p.strip_suffix("_log1p") {
                Some(f) => (f, true),
                None => (p.strip_suffix("_raw").unwrap_or(p), false),
            };
            if !["constant", "arima", "prophet", "kalman"].contains(&family) {
                return None;
            }
            json!({"load_predictor": family, "load_predictor_log1p": log1p})
        }
        _ => return None,
    })
}

/// The reference's default domains of the router's knobs (searched when the file leaves them
/// out and `kv_router` is a possible policy).
fn router_default(knob: &str) -> Vec<f64> {
    match knob {
        "overlap_score_credit" => vec![0.0, 0.5, 1.0],
        "prefill_load_scale" => vec![0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0],
        _ => vec![0.0, 0.2, 0.5, 1.0],
    }
}

fn canonical(path: &str) -> String {
    let parts: Vec<&str> = path.split('.').collect();
    parts
        .iter()
        .enumerate()
        .map(
            |(i, p)| if i == 2 && parts[..2] == ["engine", "workers"] && ["aggregated", "prefill", "decode"].contains(p) { "*" } else { p },
        )
        .collect::<Vec<_>>()
        .join(".")
}

fn is_domain(n: &Node) -> bool {
    n.map().is_some_and(|m| m.len() == 1 && (m[0].0 == "choices" || m[0].0 == "range"))
}

impl Space {
    /// The space of a recommend document (without its `optimization` / `optimizer`).
    pub fn new(base: Node, src: &str) -> Result<Space, SimError> {
        let mut dims = Vec::new();
        walk(&base, "", src, &mut dims)?;
        let mut base = base;
        // The reference searches the router's knobs over default domains when `kv_router` is
        // possible and the file leaves a knob out.
        if let Some(r) = base.get("router").cloned() {
            let policies: Vec<String> = match r.get("policy") {
                None => {
                    dims.push(Dim {
                        path: "router.policy".into(),
                        domain: Domain::Values(vec![str_node("round_robin"), str_node("kv_router")]),
                        preset: false,
                    });
                    vec!["round_robin".into(), "kv_router".into()]
                }
                Some(p) if is_domain(p) => p
                    .get("choices")
                    .and_then(|c| c.to_json().as_array().cloned())
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect(),
                Some(p) => p.to_json().as_str().map(String::from).into_iter().collect(),
            };
            if policies.iter().any(|p| p == "kv_router") {
                for knob in ["overlap_score_credit", "prefill_load_scale", "temperature"] {
                    if r.get(knob).is_none() {
                        let values = router_default(knob).into_iter().map(|x| Node::new(Value::Float(x))).collect();
                        dims.push(Dim { path: format!("router.{knob}"), domain: Domain::Values(values), preset: false });
                    }
                }
            }
        }
        // A planner section without a policy searches with and without it.
        if base.get("planner").is_some() && base.at("planner.policy").is_none() {
            dims.push(Dim {
                path: "planner.policy".into(),
                domain: Domain::Values(vec![str_node("disabled"), str_node("enabled")]),
                preset: false,
            });
        }
        // Domains and presets are replaced by the picks; a placeholder keeps each field's
        // place in the file.
        for d in &dims {
            if d.preset && d.path.starts_with("planner.") {
                continue;
            }
            if !d.preset {
                base.set(&d.path, Node::new(Value::Null));
            }
        }
        Ok(Space { base, dims })
    }

    /// Points in the space (None: a range without a step makes it infinite).
    pub fn size(&self) -> Option<u128> {
        self.dims.iter().try_fold(1u128, |n, d| match &d.domain {
            Domain::Values(v) => n.checked_mul(v.len() as u128),
            Domain::Range { .. } => None,
        })
    }

    /// Point `i` of a finite space (the first dimension varies slowest).
    pub fn point(&self, mut i: u128) -> Vec<Pick> {
        let mut picks = vec![Pick::Index(0); self.dims.len()];
        for (k, d) in self.dims.iter().enumerate().rev() {
            if let Domain::Values(v) = &d.domain {
                let n = v.len() as u128;
                picks[k] = Pick::Index((i % n) as usize);
                i /= n;
            }
        }
        picks
    }

    /// The value a dimension takes for a pick.
    pub fn value(&self, k: usize, pick: Pick) -> Node {
        match (&self.dims[k].domain, pick) {
            (Domain::Values(v), Pick::Index(i)) => v[i.min(v.len() - 1)].clone(),
            (Domain::Range { min, max, integer, .. }, Pick::Real(x)) => {
                let x = x.clamp(*min, *max);
                if *integer { Node::new(Value::Int(x.round() as i64)) } else { Node::new(Value::Float((x * 1e9).round() / 1e9)) }
            }
            (Domain::Values(v), Pick::Real(x)) => v[(x.max(0.0) as usize).min(v.len() - 1)].clone(),
            (Domain::Range { min, .. }, Pick::Index(_)) => Node::new(Value::Float(*min)),
        }
    }

    /// The concrete document of a candidate, and the values it set (path → value) for the
    /// ledger. Roles and knobs its picks make inactive are dropped: a candidate in aggregated
    /// mode keeps only `workers.aggregated`, one with the round-robin router no KV-router knobs.
    pub fn materialize(&self, picks: &[Pick]) -> (Node, Vec<(String, serde_json::Value)>) {
        let mut doc = self.base.clone();
        let mut set = Vec::new();
        for (k, d) in self.dims.iter().enumerate() {
            let v = self.value(k, picks[k]);
            set.push((if d.preset { format!("{}.preset", d.path) } else { d.path.clone() }, v.to_json()));
            if d.preset {
                if d.path.starts_with("planner.") {
                    // A planner preset group: its fields on `planner`, the group removed.
                    doc.remove(&d.path);
                    if let Some(m) = v.map() {
                        for (key, val) in m {
                            doc.set(&format!("planner.{key}"), val.clone());
                        }
                    }
                } else {
                    doc.set(&d.path, v);
                }
            } else {
                doc.set(&d.path, v);
            }
        }
        // Planner preset groups switched off (`preset: false`) or given as defaults leave
        // their knobs in place; a group mapping left over is removed.
        for group in ["scaling_policy", "fpm_sampling", "load_sensitivity"] {
            doc.remove(&format!("planner.{group}"));
        }
        if let Some(lp) = doc.at("planner.load_predictor").cloned()
            && lp.map().is_some()
        {
            doc.remove("planner.load_predictor");
            if let Some(t) = lp.get("type") {
                doc.set("planner.load_predictor", t.clone());
            }
        }
        let mode = doc.at("engine.mode").and_then(|m| m.to_json().as_str().map(String::from)).unwrap_or_else(|| "aggregated".into());
        if mode == "aggregated" {
            doc.remove("engine.workers.prefill");
            doc.remove("engine.workers.decode");
            doc.remove("engine.kv_transfer");
        } else {
            doc.remove("engine.workers.aggregated");
        }
        if doc.at("router.policy").and_then(|p| p.to_json().as_str().map(String::from)).as_deref() == Some("round_robin") {
            for knob in ["overlap_score_credit", "prefill_load_scale", "temperature"] {
                doc.remove(&format!("router.{knob}"));
            }
            doc.set("router.prefill_load_model.type", str_node("none"));
        }
        // What the candidate set: the values that are still in it (an inactive role's are not).
        set.retain(|(path, _)| {
            doc.at(path.trim_end_matches(".preset")).is_some() || path.starts_with("planner.") && doc.get("planner").is_some()
        });
        if doc.at("planner.policy").and_then(|p| p.to_json().as_str().map(String::from)).as_deref() == Some("disabled")
            && let Some(m) = doc.get("planner").and_then(Node::map)
        {
            let keys: Vec<String> = m.iter().map(|(k, _)| k.clone()).filter(|k| k != "policy").collect();
            for k in keys {
                doc.remove(&format!("planner.{k}"));
            }
        }
        (doc, set)
    }
}

fn str_node(s: &str) -> Node {
    Node::new(Value::Str(s.into()))
}

/// Finds the domains and presets under `n` (at dotted `path`).
fn walk(n: &Node, path: &str, src: &str, dims: &mut Vec<Dim>) -> Result<(), SimError> {
    let canon = canonical(path);
    if is_domain(n) {
        if !DOMAIN_PATHS.contains(&canon.as_str()) {
            return Err(error_at(src, n.line, path, "is not sweepable: it must be one concrete value"));
        }
        let leaf = path.rsplit('.').next().unwrap_or("");
        dims.push(Dim { path: path.into(), domain: domain(n, path, src, INTEGER_LEAVES.contains(&leaf))?, preset: false });
        return Ok(());
    }
    let Some(m) = n.map() else { return Ok(()) };
    for (k, v) in m {
        let child = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
        let child_canon = canonical(&child);
        if child_canon == "engine.workers.*.parallelism.preset" {
            dims.push(parallelism_preset(v, &child, n, src)?);
            continue;
        }
        if k == "preset"
            && ["planner.scaling_policy", "planner.fpm_sampling", "planner.load_sensitivity", "planner.load_predictor"].contains(&path)
        {
            if let Some(d) = planner_presets(v, path, src)? {
                dims.push(d);
            }
            continue;
        }
        if k == "preset" && (path == "router" || path == "planner") {
            return Err(error_at(src, v.line, &child, "whole-router and whole-planner presets are not supported; give the fields"));
        }
        if v.to_json().as_str() == Some("auto") && child_canon == "engine.workers.*.parallelism" {
            return Err(error_at(
                src,
                v.line,
                &child,
                "not simulated by servesim: `auto` (every feasible parallel layout) — give the sizes, a preset list or per-field domains",
            ));
        }
        walk(v, &child, src, dims)?;
    }
    Ok(())
}

fn domain(n: &Node, path: &str, src: &str, integer: bool) -> Result<Domain, SimError> {
    if let Some(c) = n.get("choices") {
        let Value::Seq(items) = &c.value else {
            return Err(error_at(src, c.line, &format!("{path}.choices"), "must be a nonempty list"));
        };
        if items.is_empty() {
            return Err(error_at(src, c.line, &format!("{path}.choices"), "must be a nonempty list"));
        }
        for (i, a) in items.iter().enumerate() {
            if items[..i].contains(a) {
                return Err(error_at(
                    src,
                    a.line,
                    &format!("{path}.choices"),
                    format!("must contain unique values ({} twice)", a.describe()),
                ));
            }
            if a.map().is_some() || matches!(a.value, Value::Seq(_)) {
                return Err(error_at(src, a.line, &format!("{path}.choices"), "a choice is one value"));
            }
        }
        return Ok(Domain::Values(items.clone()));
    }
    let r = n.get("range").expect("a domain has choices or range");
    let at = format!("{path}.range");
    let Some(m) = r.map() else { return Err(error_at(src, r.line, &at, "must be a mapping")) };
    if let Some((k, v)) = m.iter().find(|(k, _)| !["min", "max", "step", "scale"].contains(&k.as_str())) {
        return Err(error_at(src, v.line, &format!("{at}.{k}"), "unknown field (known here: min, max, step, scale)"));
    }
    let num = |k: &str| -> Result<Option<f64>, SimError> {
        match r.get(k) {
            None => Ok(None),
            Some(v) => match v.value {
                Value::Int(i) => Ok(Some(i as f64)),
                Value::Float(f) if f.is_finite() => Ok(Some(f)),
                _ => Err(error_at(src, v.line, &format!("{at}.{k}"), format!("expected a finite number, got {}", v.describe()))),
            },
        }
    };
    let (Some(min), Some(max)) = (num("min")?, num("max")?) else {
        return Err(error_at(src, r.line, &at, "requires min and max"));
    };
    if min > max {
        return Err(error_at(src, r.line, &at, format!("requires min <= max, got {min} > {max}")));
    }
    let scale = match r.get("scale") {
        None => "linear".to_string(),
        Some(s) => match s.to_json().as_str() {
            Some(x @ ("linear" | "log")) => x.to_string(),
            _ => return Err(error_at(src, s.line, &format!("{at}.scale"), "must be linear or log")),
        },
    };
    let step = num("step")?;
    if scale == "log" {
        if min <= 0.0 || step.is_some() {
            return Err(error_at(src, r.line, &at, "a log range requires min > 0 and rejects step"));
        }
        return Ok(Domain::Range { min, max, log: true, integer });
    }
    let step = match step {
        Some(s) if s <= 0.0 => return Err(error_at(src, r.line, &format!("{at}.step"), "must be positive")),
        Some(s) => s,
        // An integer field steps by one; a float field's range is continuous.
        None if integer => 1.0,
        None => return Ok(Domain::Range { min, max, log: false, integer }),
    };
    let n = ((max - min) / step + 1e-9).floor() as usize + 1;
    if n > 100_000 {
        return Err(error_at(src, r.line, &at, format!("has {n} values; at most 100000")));
    }
    let values = (0..n)
        .map(|k| {
            let x = min + k as f64 * step;
            Node::new(if integer || (min.fract() == 0.0 && step.fract() == 0.0) {
                Value::Int(x.round() as i64)
            } else {
                Value::Float((x * 1e9).round() / 1e9)
            })
        })
        .collect();
    Ok(Domain::Values(values))
}

/// `parallelism: {preset: [{replicas, tensor, ...}, ...]}`: each mapping a whole parallelism.
fn parallelism_preset(v: &Node, path: &str, parent: &Node, src: &str) -> Result<Dim, SimError> {
    let Value::Seq(items) = &v.value else {
        return Err(error_at(
            src,
            v.line,
            path,
            "not simulated by servesim: named parallelism presets; list the mappings (`preset: [{replicas: 1, tensor: 2, ...}]`)",
        ));
    };
    if items.is_empty() {
        return Err(error_at(src, v.line, path, "must be a nonempty list of mappings"));
    }
    let object = path.trim_end_matches(".preset");
    let mut values = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(m) = item.map() else { return Err(error_at(src, item.line, &format!("{path}[{i}]"), "must be a nonempty mapping")) };
        if m.is_empty() || m.iter().any(|(_, x)| is_domain(x)) {
            return Err(error_at(src, item.line, &format!("{path}[{i}]"), "must be a nonempty mapping of concrete values"));
        }
        // The object's own concrete fields beside the preset are intentional overrides.
        let mut whole = Node::new(Value::Map(m.to_vec()));
        if let Some(pm) = parent.map() {
            for (k, x) in pm {
                if k == "preset" {
                    continue;
                }
                if is_domain(x) {
                    return Err(error_at(
                        src,
                        x.line,
                        &format!("{object}.{k}"),
                        "a preset covers it: give a concrete value or drop the preset",
                    ));
                }
                whole.set(k, x.clone());
            }
        }
        values.push(whole);
    }
    Ok(Dim { path: object.into(), domain: Domain::Values(values), preset: true })
}

/// `planner.<group>: {preset: [...]}`: names or mappings of the group's fields; `false` or
/// `{}` turns the preset off (the group's own knobs apply), `default` is the default preset.
fn planner_presets(v: &Node, group_path: &str, src: &str) -> Result<Option<Dim>, SimError> {
    let group = group_path.trim_start_matches("planner.");
    let path = format!("{group_path}.preset");
    let entries: Vec<Node> = match &v.value {
        Value::Bool(false) => return Ok(None),
        Value::Map(m) if m.is_empty() => return Ok(None),
        Value::Str(s) if s == "default" => vec![v.clone()],
        Value::Seq(items) if !items.is_empty() => items.clone(),
        _ => return Err(error_at(src, v.line, &path, "must be 'default', false, {}, or a nonempty list")),
    };
    let mut values = Vec::new();
    for e in &entries {
        let fields = match &e.value {
            Value::Str(name) => {
                let name = if name == "default" {
                    match group {
                        "scaling_policy" => "throughput_180_5",
                        "load_predictor" => "arima_raw",
                        _ => "default",
                    }
                } else {
                    name
                };
                Node::from_json(
                    &planner_preset(group, name).ok_or_else(|| error_at(src, e.line, &path, format!("unknown {group} preset `{name}`")))?,
                )
            }
            Value::Map(_) => e.clone(),
            _ => return Err(error_at(src, e.line, &path, "an entry is a preset name or a mapping")),
        };
        values.push(fields);
    }
    Ok(Some(Dim { path: group_path.into(), domain: Domain::Values(values), preset: true }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::yaml::parse;
    use serde_json::json;

    fn space(text: &str) -> Result<Space, SimError> {
        Space::new(parse(text).unwrap(), "f.yaml")
    }

    #[test]
    fn choices_and_stepped_ranges_are_finite() {
        let s = space("engine:\n  workers:\n    aggregated:\n      scheduler:\n        max_batched_tokens: {choices: [512, 2048]}\n        max_sequences: {range: {min: 64, max: 256, step: 64}}\n").unwrap();
        assert_eq!(s.size(), Some(8));
        let (doc, set) = s.materialize(&s.point(7));
        assert_eq!(
            doc.at("engine.workers.aggregated.scheduler").unwrap().to_json(),
            json!({"max_batched_tokens": 2048, "max_sequences": 256})
        );
        assert_eq!(set[1], ("engine.workers.aggregated.scheduler.max_sequences".into(), json!(256)));
        // A linear range of floats with a step; an integer range steps by one without one.
        let s = space("traffic:\n  load: {requests_per_second: {range: {min: 0.5, max: 1.5, step: 0.5}}}\nengine: {workers: {aggregated: {parallelism: {replicas: {range: {min: 1, max: 4}}}}}}\n").unwrap();
        assert_eq!(s.size(), Some(12));
        assert!(
            matches!(&s.dims[0].domain, Domain::Values(v) if v.iter().map(Node::to_json).collect::<Vec<_>>() == vec![json!(0.5), json!(1.0), json!(1.5)])
        );
    }

    #[test]
    fn ranges_without_a_step_are_continuous_and_integers_stay_integers() {
        let s = space("router:\n  policy: kv_router\n  overlap_score_credit: {range: {min: 0.1, max: 1.0}}\n  prefill_load_scale: {range: {min: 0.25, max: 32, scale: log}}\n  temperature: 0.0\n").unwrap();
        assert_eq!(s.size(), None);
        assert!(matches!(s.dims[1].domain, Domain::Range { log: true, integer: false, .. }));
        assert_eq!(s.value(1, Pick::Real(4.123456789012)).to_json(), json!(4.123456789));
        let s = space("engine: {workers: {aggregated: {scheduler: {max_batched_tokens: {range: {min: 256, max: 8192, scale: log}}}}}}\n")
            .unwrap();
        assert_eq!(s.value(0, Pick::Real(1000.4)).to_json(), json!(1000));
    }

    #[test]
    fn presets_fill_their_object() {
        let s = space("engine:\n  mode: {choices: [aggregated, disaggregated]}\n  workers:\n    aggregated:\n      parallelism:\n        preset:\n          - {replicas: 1, tensor: 1}\n          - {replicas: 2, tensor: 4}\n    prefill: {parallelism: {replicas: 1}}\n    decode: {parallelism: {replicas: 2}}\n").unwrap();
        assert_eq!(s.size(), Some(4));
        let (doc, _) = s.materialize(&[Pick::Index(0), Pick::Index(1)]);
        assert_eq!(doc.at("engine.workers.aggregated.parallelism").unwrap().to_json(), json!({"replicas": 2, "tensor": 4}));
        assert!(doc.at("engine.workers.prefill").is_none(), "aggregated candidates keep the aggregated role only");
        let (doc, _) = s.materialize(&[Pick::Index(1), Pick::Index(0)]);
        assert!(doc.at("engine.workers.aggregated").is_none() && doc.at("engine.workers.decode.parallelism.replicas").is_some());
        let s = space("planner:\n  policy: enabled\n  scaling_policy: {preset: [load_180_5, {enable_load_scaling: true, load_adjustment_interval_seconds: 10}]}\n  fpm_sampling: {preset: [default]}\n").unwrap();
        assert_eq!(s.size(), Some(2));
        let (doc, _) = s.materialize(&[Pick::Index(0), Pick::Index(0)]);
        assert_eq!(doc.at("planner.load_adjustment_interval_seconds").unwrap().to_json(), json!(5));
        assert_eq!(doc.at("planner.max_num_fpm_samples").unwrap().to_json(), json!(64));
        assert!(doc.at("planner.scaling_policy").is_none());
    }

    #[test]
    fn errors_name_the_field_and_line() {
        let e = space("engine:\n  model: {choices: [a, b]}\n").unwrap_err();
        assert_eq!(e.0, "f.yaml:2: engine.model: is not sweepable: it must be one concrete value");
        let e = space("traffic:\n  load:\n    concurrency: {range: {min: 4, max: 1}}\n").unwrap_err();
        assert!(e.0.starts_with("f.yaml:3: traffic.load.concurrency.range: requires min <= max"), "{e}");
        let e = space("traffic: {load: {concurrency: {choices: [1, 1]}}}\n").unwrap_err();
        assert!(e.0.contains("unique"), "{e}");
        let e = space("router: {policy: kv_router, temperature: {range: {min: 0.1, max: 1, scale: log, step: 0.1}}}\n").unwrap_err();
        assert!(e.0.contains("rejects step"), "{e}");
    }
}
