//! Sweeps: one base scenario (or replay case), fields to vary, and the cartesian product of
//! their values as points, each an ordinary run of the merged scenario. This module expands and
//! shards (pure); running points in parallel is the caller's (threads in the CLI, Web Workers
//! in the page).
//!
//! ```json
//! {"version": 1, "base": SCENARIO, "vary": [{"field": "cluster.num_workers", "values": [1, 2, 4]},
//!  {"field": "workload.rate_rps", "from": 5, "to": 20, "step": 5}], "slo": {"p99_ttft_ms": 2000}}
//! ```
//!
//! Points are numbered with the first field varying slowest. A field is a dotted path into the
//! scenario (`engine.num_gpu_blocks`; a number indexes an array). `slo`, when given, is the
//! objective of every point. A replay case sweeps the same way with `"case"` instead of
//! `"base"` (its fields are paths into the case: `replay.num_workers`).

use crate::replay::Case;
use crate::report::Slo;
use crate::scenario::Scenario;
use crate::{Input, SimError};
use serde::Deserialize;
use serde_json::{Map, Value};

pub const SWEEP_VERSION: u32 = 1;

/// One varied field and its values.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub field: String,
    pub values: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAxis {
    field: String,
    #[serde(default)]
    values: Option<Vec<Value>>,
    #[serde(default)]
    from: Option<f64>,
    #[serde(default)]
    to: Option<f64>,
    #[serde(default)]
    step: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    #[serde(default = "version")]
    version: u32,
    #[serde(default)]
    base: Option<Value>,
    #[serde(default)]
    case: Option<Value>,
    #[serde(default)]
    vary: Vec<RawAxis>,
    #[serde(default)]
    slo: Option<Slo>,
}

fn version() -> u32 {
    SWEEP_VERSION
}

/// What a sweep varies: a servesim scenario or a Dynamo replay case.
#[derive(Clone, Debug, PartialEq)]
pub enum Base {
    Scenario(Value),
    Case(Value),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub base: Base,
    pub axes: Vec<Axis>,
    pub slo: Option<Slo>,
}

/// One point: its number and the values it sets, in the axes' order.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub index: usize,
    pub set: Vec<(String, Value)>,
}

/// At most this many points (a sweep is a grid of ordinary runs).
pub const MAX_POINTS: usize = 10_000;

impl Sweep {
    pub fn from_json_str(text: &str) -> Result<Sweep, SimError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let raw: RawSweep = serde_path_to_error::deserialize(de).map_err(|e| SimError::new(format!("{}: {}", e.path(), e.inner())))?;
        if raw.version != SWEEP_VERSION {
            return Err(SimError::new(format!("version: unsupported sweep version {} (this build reads {SWEEP_VERSION})", raw.version)));
        }
        let base = match (raw.base, raw.case) {
            (Some(b), None) => Base::Scenario(b),
            (None, Some(c)) => Base::Case(c),
            _ => return Err(SimError::new("a sweep needs exactly one of `base` (a scenario) and `case` (a replay case)")),
        };
        let mut axes = Vec::new();
        for (k, a) in raw.vary.into_iter().enumerate() {
            let at = |m: String| SimError::new(format!("vary[{k}]: {m}"));
            if a.field.is_empty() || a.field.split('.').any(str::is_empty) {
                return Err(at(format!("field `{}` is not a dotted path", a.field)));
            }
            let values = match (a.values, a.from, a.to, a.step) {
                (Some(v), None, None, None) => v,
                (None, Some(from), Some(to), step) => range(from, to, step.unwrap_or(1.0)).map_err(at)?,
                _ => return Err(at("give either `values`, or `from` and `to` (and `step`)".into())),
            };
            if values.is_empty() {
                return Err(at("no values".into()));
            }
            if axes.iter().any(|x: &Axis| x.field == a.field) {
                return Err(at(format!("field `{}` is varied twice", a.field)));
            }
            axes.push(Axis { field: a.field, values });
        }
        if let Some(slo) = &raw.slo {
            slo.validate("slo.").map_err(SimError::new)?;
        }
        let sweep = Sweep { base, axes, slo: raw.slo };
        let n = sweep.len();
        if n > MAX_POINTS {
            return Err(SimError::new(format!("the sweep has {n} points; at most {MAX_POINTS}")));
        }
        Ok(sweep)
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Point `i` (the first axis varies slowest).
    pub fn point(&self, i: usize) -> Point {
        let mut rest = i;
        let mut set = vec![(String::new(), Value::Null); self.axes.len()];
        for (k, a) in self.axes.iter().enumerate().rev() {
            let n = a.values.len();
            set[k] = (a.field.clone(), a.values[rest % n].clone());
            rest /= n;
        }
        Point { index: i, set }
    }

    /// The points of shard `shard` of `shards` (every `shards`-th, from `shard`): shards
    /// together cover every point exactly once.
    pub fn shard(&self, shard: usize, shards: usize) -> impl Iterator<Item = Point> + '_ {
        (shard..self.len()).step_by(shards.max(1)).map(|i| self.point(i))
    }

    /// The scenario of a point as JSON, before validation: the base with the point's values
    /// set and the sweep's objective as its `slo` (a replay case's base is not a scenario).
    pub fn merged_scenario(&self, p: &Point) -> Result<Value, SimError> {
        let at = |e: SimError| SimError::new(format!("point {}: {e}", p.index));
        let Base::Scenario(base) = &self.base else {
            return Err(SimError::new("this sweep varies a replay case (`case`), not a scenario (`base`)"));
        };
        let mut v = base.clone();
        for (field, value) in &p.set {
            set_path(&mut v, field, value.clone()).map_err(at)?;
        }
        if let Some(slo) = &self.slo {
            let slo = serde_json::to_value(slo).map_err(|e| SimError::new(e.to_string()))?;
            set_path(&mut v, "slo", slo).map_err(at)?;
        }
        Ok(v)
    }

    /// A point's output line, as `servesim sweep` prints it (without the newline): `{"point",
    /// "set", "summary", "meets_slo"?}`. One writer for the CLI and the page, so their lines
    /// are the same bytes.
    pub fn line(&self, p: &Point, summary: Map<String, Value>) -> String {
        let met = self.meets(&summary);
        let set: Map<String, Value> = p.set.iter().cloned().collect();
        let mut out = serde_json::json!({"point": p.index, "set": set, "summary": summary});
        if let Some(met) = met {
            out["meets_slo"] = met.into();
        }
        out.to_string()
    }

    /// The run of a point: the base with the point's values set (and the sweep's objective).
    pub fn input(&self, p: &Point, source: &str) -> Result<Input, SimError> {
        let at = |e: SimError| SimError::new(format!("point {}: {e}", p.index));
        match &self.base {
            Base::Scenario(_) => {
                let v = self.merged_scenario(p)?;
                Ok(Input::Scenario(Scenario::from_json_str(&v.to_string()).map_err(at)?))
            }
            Base::Case(base) => {
                let mut v = base.clone();
                for (field, value) in &p.set {
                    set_path(&mut v, field, value.clone()).map_err(at)?;
                }
                if let Some(slo) = &self.slo {
                    for (k, x) in [("sla_ttft_ms", slo.ttft_ms), ("sla_itl_ms", slo.itl_ms), ("sla_e2e_ms", slo.e2e_ms)] {
                        if let Some(x) = x {
                            set_path(&mut v, &format!("replay.{k}"), x.into()).map_err(at)?;
                        }
                    }
                }
                Ok(Input::Case(Case::from_json_str(&v.to_string(), source).map_err(at)?))
            }
        }
    }

    /// Whether a point's summary meets the sweep's objective (None without one).
    pub fn meets(&self, summary: &Map<String, Value>) -> Option<bool> {
        self.slo.as_ref().map(|s| s.met(summary))
    }
}

/// `from`, `from + step`, ... up to `to` (included within rounding), as integers when all are.
fn range(from: f64, to: f64, step: f64) -> Result<Vec<Value>, String> {
    if !(from.is_finite() && to.is_finite() && step.is_finite()) || step <= 0.0 || to < from {
        return Err("a range needs from ≤ to and a positive step".into());
    }
    let n = ((to - from) / step + 1e-9).floor() as usize + 1;
    if n > MAX_POINTS {
        return Err(format!("the range has {n} values; at most {MAX_POINTS}"));
    }
    let integral = from.fract() == 0.0 && step.fract() == 0.0;
    Ok((0..n)
        .map(|k| {
            let x = from + k as f64 * step;
            if integral { Value::from(x as i64) } else { Value::from((x * 1e9).round() / 1e9) }
        })
        .collect())
}

/// Sets `path` (dotted; numbers index arrays) in `v` to `value`, creating objects on the way.
pub fn set_path(v: &mut Value, path: &str, value: Value) -> Result<(), SimError> {
    let mut cur = v;
    let parts: Vec<&str> = path.split('.').collect();
    for (k, part) in parts.iter().enumerate() {
        let last = k + 1 == parts.len();
        if cur.is_null() {
            *cur = Value::Object(Map::new());
        }
        cur = match cur {
            Value::Object(m) => {
                if last {
                    m.insert(part.to_string(), value);
                    return Ok(());
                }
                m.entry(part.to_string()).or_insert(Value::Null)
            }
            Value::Array(a) => {
                let i: usize =
                    part.parse().map_err(|_| SimError::new(format!("{path}: `{part}` indexes an array, so it must be a number")))?;
                let len = a.len();
                let slot = a.get_mut(i).ok_or_else(|| SimError::new(format!("{path}: index {i} is past the array's {len} items")))?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            _ => return Err(SimError::new(format!("{path}: `{part}` is inside a value that is neither an object nor an array"))),
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn points_are_the_cartesian_product_in_a_stable_order() {
        let s = Sweep::from_json_str(
            r#"{"version": 1, "base": {}, "vary": [{"field": "cluster.num_workers", "values": [1, 2]},
                {"field": "workload.rate_rps", "from": 5, "to": 15, "step": 5}]}"#,
        )
        .unwrap();
        assert_eq!(s.len(), 6);
        let sets: Vec<Vec<Value>> = (0..6).map(|i| s.point(i).set.into_iter().map(|(_, v)| v).collect()).collect();
        assert_eq!(
            sets,
            vec![
                vec![json!(1), json!(5)],
                vec![json!(1), json!(10)],
                vec![json!(1), json!(15)],
                vec![json!(2), json!(5)],
                vec![json!(2), json!(10)],
                vec![json!(2), json!(15)],
            ]
        );
    }

    #[test]
    fn shards_split_without_loss() {
        let s = Sweep::from_json_str(r#"{"base": {}, "vary": [{"field": "seed", "from": 1, "to": 10}]}"#).unwrap();
        let mut seen: Vec<usize> = (0..3).flat_map(|k| s.shard(k, 3).map(|p| p.index).collect::<Vec<_>>()).collect();
        seen.sort();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        assert_eq!(s.shard(1, 3).map(|p| p.index).collect::<Vec<_>>(), vec![1, 4, 7]);
    }

    #[test]
    fn ranges_and_paths() {
        assert_eq!(range(0.5, 1.5, 0.5).unwrap(), vec![json!(0.5), json!(1.0), json!(1.5)]);
        assert_eq!(range(0.1, 0.3, 0.1).unwrap().len(), 3);
        assert!(range(3.0, 1.0, 1.0).is_err());
        let mut v = json!({"a": {"b": [1, {"c": 2}]}});
        set_path(&mut v, "a.b.1.c", json!(3)).unwrap();
        set_path(&mut v, "x.y", json!(true)).unwrap();
        assert_eq!(v, json!({"a": {"b": [1, {"c": 3}]}, "x": {"y": true}}));
        assert!(set_path(&mut v, "a.b.9", json!(0)).unwrap_err().0.contains("index 9"));
    }

    #[test]
    fn a_line_is_point_set_summary_and_the_verdict_and_merging_sets_the_objective() {
        let s = Sweep::from_json_str(
            r#"{"base": {"seed": 3}, "vary": [{"field": "cluster.num_workers", "values": [2]}], "slo": {"p99_ttft_ms": 100}}"#,
        )
        .unwrap();
        let p = s.point(0);
        assert_eq!(s.merged_scenario(&p).unwrap(), json!({"seed": 3, "cluster": {"num_workers": 2}, "slo": {"p99_ttft_ms": 100.0}}));
        let summary = |p99: f64| json!({"num_requests": 1, "completed_requests": 1, "p99_ttft_ms": p99}).as_object().unwrap().clone();
        assert_eq!(
            s.line(&p, summary(50.0)),
            r#"{"point":0,"set":{"cluster.num_workers":2},"summary":{"num_requests":1,"completed_requests":1,"p99_ttft_ms":50.0},"meets_slo":true}"#
        );
        assert!(s.line(&p, summary(150.0)).ends_with(r#""meets_slo":false}"#));
        // Without an objective there is no verdict.
        let s = Sweep::from_json_str(r#"{"base": {}, "vary": [{"field": "seed", "values": [1]}]}"#).unwrap();
        assert!(s.line(&s.point(0), summary(1.0)).ends_with(r#""p99_ttft_ms":1.0}}"#));
        let case = Sweep::from_json_str(r#"{"case": {}, "vary": [{"field": "replay.num_workers", "values": [1]}]}"#).unwrap();
        assert!(case.merged_scenario(&case.point(0)).unwrap_err().0.contains("replay case"));
    }

    #[test]
    fn errors_name_the_axis_and_the_point() {
        let e = Sweep::from_json_str(r#"{"base": {}, "vary": [{"field": "a", "values": []}]}"#).unwrap_err();
        assert_eq!(e.0, "vary[0]: no values");
        let e = Sweep::from_json_str(r#"{"base": {}, "case": {}}"#).unwrap_err();
        assert!(e.0.contains("exactly one"), "{e}");
        let s = Sweep::from_json_str(r#"{"base": {}, "vary": [{"field": "cluster.num_workerz", "values": [2]}]}"#).unwrap();
        let e = s.input(&s.point(0), "s").unwrap_err();
        assert!(e.0.starts_with("point 0: cluster.num_workerz: unknown field"), "{e}");
    }
}
