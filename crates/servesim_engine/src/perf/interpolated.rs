//! The interpolated model: pass times read off a measured profile (Dynamo's planner profile,
//! an NPZ archive of float64 arrays).
//!
//! Two layouts are accepted:
//! - *per-token*: `prefill_isl` and `prefill_ttft_ms` (1-D, same length): prefill time as a
//!   function of the batch's new tokens;
//! - *batch-aware* (detected by `prefill_batch_size`): `prefill_batch_size`,
//!   `prefill_new_tokens_per_request`, `prefill_kv_read_tokens_per_request` (axes) and
//!   `prefill_time_ms` (3-D over them).
//!
//! Both carry the decode table: `decode_active_kv_tokens` (R), `decode_context_length` (C)
//! and `decode_itl` (R × C). Every lookup interpolates linearly between grid points and
//! extrapolates linearly beyond the ends, as the reference does; a result that is not a
//! number counts as 0, prefill is clamped at 0 and decode floored at 1 ms.
//!
//! The engine never touches files: the caller reads the archive and hands over its bytes.

use std::collections::HashMap;
use std::fmt;

mod npz;

/// A profile problem, naming the array at fault.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileError(pub String);

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProfileError {}

/// An n-dimensional float64 array: its shape and its values in C order.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl Array {
    pub fn vector(data: Vec<f64>) -> Self {
        Array { shape: vec![data.len()], data }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum PrefillTable {
    /// Time by the batch's total new tokens.
    PerToken { tokens: Vec<f64>, ms: Vec<f64> },
    /// Time by (batch size, new tokens per request, cached tokens per request).
    BatchAware { batch: Vec<f64>, new_tokens: Vec<f64>, kv_read: Vec<f64>, ms: Vec<f64> },
}

/// A loaded profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    prefill: PrefillTable,
    decode_kv: Vec<f64>,
    decode_ctx: Vec<f64>,
    /// Row-major, one row per `decode_kv` point.
    decode_itl: Vec<f64>,
}

impl Profile {
    /// Reads an NPZ archive (stored or deflated members named `NAME.npy`).
    pub fn from_npz(bytes: &[u8]) -> Result<Profile, ProfileError> {
        Profile::from_arrays(&npz::read_arrays(bytes)?)
    }

    /// Builds a profile from named arrays, checking names, shapes and axes.
    pub fn from_arrays(arrays: &HashMap<String, Array>) -> Result<Profile, ProfileError> {
        let get = |name: &str| arrays.get(name).ok_or_else(|| ProfileError(format!("profile: missing array `{name}`")));
        let axis = |name: &str| -> Result<Vec<f64>, ProfileError> {
            let a = get(name)?;
            if a.shape.len() != 1 {
                return Err(ProfileError(format!("profile: `{name}` must be 1-D, has shape {:?}", a.shape)));
            }
            check_axis(name, &a.data)?;
            Ok(a.data.clone())
        };
        let table = |name: &str, dims: &[usize]| -> Result<Vec<f64>, ProfileError> {
            let a = get(name)?;
            if a.shape != dims {
                return Err(ProfileError(format!("profile: `{name}` has shape {:?}, expected {dims:?} from its axes", a.shape)));
            }
            if let Some(v) = a.data.iter().find(|v| !v.is_finite()) {
                return Err(ProfileError(format!("profile: `{name}` holds a non-finite value {v}")));
            }
            Ok(a.data.clone())
        };

        let prefill = if arrays.contains_key("prefill_batch_size") {
            let batch = axis("prefill_batch_size")?;
            let new_tokens = axis("prefill_new_tokens_per_request")?;
            let kv_read = axis("prefill_kv_read_tokens_per_request")?;
            let ms = table("prefill_time_ms", &[batch.len(), new_tokens.len(), kv_read.len()])?;
            if let Some(v) = ms.iter().find(|v| **v < 0.0) {
                return Err(ProfileError(format!("profile: `prefill_time_ms` holds a negative time {v}")));
            }
            PrefillTable::BatchAware { batch, new_tokens, kv_read, ms }
        } else {
            let tokens = axis("prefill_isl")?;
            let ms = table("prefill_ttft_ms", &[tokens.len()])?;
            PrefillTable::PerToken { tokens, ms }
        };
        let decode_kv = axis("decode_active_kv_tokens")?;
        let decode_ctx = axis("decode_context_length")?;
        let decode_itl = table("decode_itl", &[decode_kv.len(), decode_ctx.len()])?;
        Ok(Profile { prefill, decode_kv, decode_ctx, decode_itl })
    }

    /// Prefill time of `batch` requests whose floored means are `isl` tokens after the
    /// chunk and `prefix` tokens present before it.
    pub fn prefill_ms(&self, batch: u64, isl: u64, prefix: u64) -> f64 {
        let new = isl.saturating_sub(prefix);
        let ms = match &self.prefill {
            PrefillTable::PerToken { tokens, ms } => interp1(tokens, ms, (batch * new) as f64),
            PrefillTable::BatchAware { batch: b, new_tokens, kv_read, ms } => {
                trilinear(b, new_tokens, kv_read, ms, batch as f64, new as f64, prefix as f64)
            }
        };
        if ms.is_finite() { ms.max(0.0) } else { 0.0 }
    }

    /// Decode time of one step of `batch` requests holding `active_kv` context tokens; the
    /// mean context is floored to whole tokens, as the reference does.
    pub fn decode_ms(&self, batch: u64, active_kv: u64) -> f64 {
        let ctx = (active_kv / batch.max(1)) as f64;
        let ms = bilinear(&self.decode_kv, &self.decode_ctx, &self.decode_itl, active_kv as f64, ctx);
        if ms.is_finite() { ms.max(1.0) } else { 1.0 }
    }
}

fn check_axis(name: &str, xs: &[f64]) -> Result<(), ProfileError> {
    if xs.len() < 2 {
        return Err(ProfileError(format!("profile: `{name}` needs at least 2 points, has {}", xs.len())));
    }
    if xs.iter().any(|x| !x.is_finite()) {
        return Err(ProfileError(format!("profile: `{name}` holds a non-finite value")));
    }
    if xs.windows(2).any(|w| w[1] <= w[0]) {
        return Err(ProfileError(format!("profile: `{name}` must be strictly increasing")));
    }
    Ok(())
}

/// The grid cell used for `x`: the segment containing it, or the end segment beyond the
/// grid (so values outside extrapolate along the end slope). Returns (index, fraction).
fn cell(xs: &[f64], x: f64) -> (usize, f64) {
    let n = xs.len();
    let i = xs.partition_point(|&v| v <= x).saturating_sub(1).min(n - 2);
    (i, (x - xs[i]) / (xs[i + 1] - xs[i]))
}

fn lerp(a: f64, b: f64, t: f64) -> f64 {
    a + (b - a) * t
}

fn interp1(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    let (i, t) = cell(xs, x);
    lerp(ys[i], ys[i + 1], t)
}

fn bilinear(xs: &[f64], ys: &[f64], z: &[f64], x: f64, y: f64) -> f64 {
    let (i, tx) = cell(xs, x);
    let (j, ty) = cell(ys, y);
    let c = ys.len();
    let at = |a: usize, b: usize| z[a * c + b];
    lerp(lerp(at(i, j), at(i, j + 1), ty), lerp(at(i + 1, j), at(i + 1, j + 1), ty), tx)
}

fn trilinear(xs: &[f64], ys: &[f64], ws: &[f64], v: &[f64], x: f64, y: f64, w: f64) -> f64 {
    let (i, tx) = cell(xs, x);
    let (j, ty) = cell(ys, y);
    let (k, tw) = cell(ws, w);
    let (ny, nw) = (ys.len(), ws.len());
    let at = |a: usize, b: usize, c: usize| v[(a * ny + b) * nw + c];
    let plane = |a: usize| lerp(lerp(at(a, j, k), at(a, j, k + 1), tw), lerp(at(a, j + 1, k), at(a, j + 1, k + 1), tw), ty);
    lerp(plane(i), plane(i + 1), tx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrays(pairs: &[(&str, Array)]) -> HashMap<String, Array> {
        pairs.iter().map(|(n, a)| (n.to_string(), a.clone())).collect()
    }

    fn legacy() -> HashMap<String, Array> {
        arrays(&[
            ("prefill_isl", Array::vector(vec![100.0, 200.0, 400.0])),
            ("prefill_ttft_ms", Array::vector(vec![10.0, 20.0, 30.0])),
            ("decode_active_kv_tokens", Array::vector(vec![0.0, 1000.0])),
            ("decode_context_length", Array::vector(vec![10.0, 110.0])),
            ("decode_itl", Array { shape: vec![2, 2], data: vec![5.0, 6.0, 9.0, 10.0] }),
        ])
    }

    #[test]
    fn prefill_interpolates_and_extrapolates() {
        let p = Profile::from_arrays(&legacy()).unwrap();
        assert_eq!(p.prefill_ms(1, 150, 0), 15.0);
        assert_eq!(p.prefill_ms(2, 150, 0), 25.0, "batch × new tokens = 300");
        assert_eq!(p.prefill_ms(1, 300, 100), 20.0, "the prefix is not prefilled");
        assert_eq!(p.prefill_ms(1, 800, 0), 50.0, "beyond the grid: the last slope");
        assert_eq!(p.prefill_ms(1, 50, 0), 5.0, "below the grid: the first slope");
        assert!((p.prefill_ms(1, 1, 0) - 0.1).abs() < 1e-12);
        // Far below the grid a negative extrapolation is clamped.
        let mut a = legacy();
        a.insert("prefill_ttft_ms".into(), Array::vector(vec![10.0, 30.0, 40.0]));
        assert_eq!(Profile::from_arrays(&a).unwrap().prefill_ms(1, 1, 0), 0.0);
    }

    #[test]
    fn decode_is_bilinear_with_a_floor() {
        let p = Profile::from_arrays(&legacy()).unwrap();
        // 2 requests, 120 tokens: kv 120 → 0.12 of the way; mean context 60 → half way.
        let want = 5.5 + (9.5 - 5.5) * 0.12;
        assert!((p.decode_ms(2, 120) - want).abs() < 1e-12);
        // The mean context is floored: 121 / 2 → 60.
        assert!((p.decode_ms(2, 121) - (5.5 + 4.0 * 0.121)).abs() < 1e-12);
        // Extrapolated along both axes.
        assert!((p.decode_ms(1, 2000) - (5.0 + 4.0 * 2.0 + 1.0 * 19.9)).abs() < 1e-9);
        let mut a = legacy();
        a.insert("decode_itl".into(), Array { shape: vec![2, 2], data: vec![0.5, 0.5, 0.5, 0.5] });
        assert_eq!(Profile::from_arrays(&a).unwrap().decode_ms(1, 10), 1.0);
    }

    #[test]
    fn batch_aware_layout_is_trilinear() {
        let mut a = legacy();
        a.remove("prefill_isl");
        a.remove("prefill_ttft_ms");
        a.insert("prefill_batch_size".into(), Array::vector(vec![1.0, 2.0]));
        a.insert("prefill_new_tokens_per_request".into(), Array::vector(vec![0.0, 100.0]));
        a.insert("prefill_kv_read_tokens_per_request".into(), Array::vector(vec![0.0, 1000.0]));
        // time = 10·batch + 0.1·new + 0.01·kv_read, exactly trilinear.
        let mut ms = Vec::new();
        for b in [1.0, 2.0] {
            for n in [0.0, 100.0] {
                for k in [0.0, 1000.0] {
                    ms.push(10.0 * b + 0.1 * n + 0.01 * k);
                }
            }
        }
        a.insert("prefill_time_ms".into(), Array { shape: vec![2, 2, 2], data: ms });
        let p = Profile::from_arrays(&a).unwrap();
        assert!((p.prefill_ms(3, 550, 500) - (30.0 + 5.0 + 5.0)).abs() < 1e-9);
        a.remove("prefill_kv_read_tokens_per_request");
        let e = Profile::from_arrays(&a).unwrap_err();
        assert!(e.0.contains("prefill_kv_read_tokens_per_request"), "{e}");
    }

    #[test]
    fn errors_name_the_array() {
        for name in ["prefill_isl", "prefill_ttft_ms", "decode_active_kv_tokens", "decode_context_length", "decode_itl"] {
            let mut a = legacy();
            a.remove(name);
            let e = Profile::from_arrays(&a).unwrap_err();
            assert!(e.0.contains(&format!("missing array `{name}`")), "{e}");
        }
        let mut a = legacy();
        a.insert("prefill_ttft_ms".into(), Array::vector(vec![1.0, 2.0]));
        let e = Profile::from_arrays(&a).unwrap_err();
        assert!(e.0.contains("`prefill_ttft_ms` has shape [2], expected [3]"), "{e}");
        let mut a = legacy();
        a.insert("decode_itl".into(), Array { shape: vec![2, 3], data: vec![1.0; 6] });
        assert!(Profile::from_arrays(&a).unwrap_err().0.contains("`decode_itl`"));
        let mut a = legacy();
        a.insert("prefill_isl".into(), Array::vector(vec![1.0, 1.0, 2.0]));
        assert!(Profile::from_arrays(&a).unwrap_err().0.contains("`prefill_isl` must be strictly increasing"));
        assert!(Profile::from_npz(b"not a zip").unwrap_err().0.contains("not an NPZ archive"));
    }

    /// A stored (uncompressed) NPZ built by hand: the format numpy's `savez` writes.
    fn npz(members: &[(&str, &[usize], &[f64])]) -> Vec<u8> {
        use std::io::{Cursor, Write};
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for (name, shape, data) in members {
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            let shape_txt = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
            let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape_txt}, }}");
            while (10 + header.len() + 1) % 64 != 0 {
                header.push(' ');
            }
            header.push('\n');
            let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
            bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
            bytes.extend_from_slice(header.as_bytes());
            for v in *data {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            w.start_file(format!("{name}.npy"), opts).unwrap();
            w.write_all(&bytes).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn reads_npz_archives() {
        let bytes = npz(&[
            ("prefill_isl", &[2], &[1.0, 1001.0]),
            ("prefill_ttft_ms", &[2], &[10.0, 20.0]),
            ("decode_active_kv_tokens", &[2], &[0.0, 100.0]),
            ("decode_context_length", &[2], &[1.0, 101.0]),
            ("decode_itl", &[2, 2], &[2.0, 3.0, 4.0, 5.0]),
        ]);
        let p = Profile::from_npz(&bytes).unwrap();
        assert_eq!(p.prefill_ms(1, 501, 0), 15.0);
        let short = npz(&[
            ("prefill_isl", &[2], &[1.0, 1001.0]),
            ("prefill_ttft_ms", &[2], &[10.0, 20.0]),
            ("decode_active_kv_tokens", &[2], &[0.0, 100.0]),
            ("decode_context_length", &[2], &[1.0, 101.0]),
        ]);
        assert!(Profile::from_npz(&short).unwrap_err().0.contains("missing array `decode_itl`"));
    }
}
