//! Reading NPZ archives: a ZIP file (numpy's `savez` / `savez_compressed`, read by
//! `perf::zipfile`) whose members are `.npy` arrays. Only what profiles need is read: `.npy`
//! headers of little- or big-endian float64/float32/int64/int32 arrays.
//!
//! Written for the engine rather than taken from the `npyz` crate, which pulls in a
//! Python-literal parser the page's engine download need not carry.

use super::{Array, ProfileError};
use crate::perf::zipfile::{read_members, u16_at, u32_at};
use std::collections::HashMap;

fn err(msg: impl Into<String>) -> ProfileError {
    ProfileError(msg.into())
}

/// The members of an NPZ archive, each read into an array (keyed by name without `.npy`).
pub fn read_arrays(bytes: &[u8]) -> Result<HashMap<String, Array>, ProfileError> {
    let mut arrays = HashMap::new();
    let members = read_members(bytes).map_err(|e| err(format!("profile: not an NPZ archive: {}", e.0)))?;
    for (name, data) in members {
        let name = name.trim_end_matches(".npy").to_string();
        arrays.insert(name.clone(), read_npy(&name, &data)?);
    }
    Ok(arrays)
}

/// The header of a `.npy` array: its dtype (`<f8`), order and shape.
struct NpyHeader {
    descr: String,
    fortran: bool,
    shape: Vec<usize>,
}

/// The value of `'key':` in the header's dict literal (up to the next top-level comma or `}`).
fn dict_value<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let at = dict.find(&format!("'{key}'")).or_else(|| dict.find(&format!("\"{key}\"")))?;
    let rest = dict[at + key.len() + 2..].trim_start().strip_prefix(':')?.trim_start();
    let end = if rest.starts_with('(') { rest.find(')')? + 1 } else { rest.find([',', '}']).unwrap_or(rest.len()) };
    Some(rest[..end].trim())
}

fn parse_header(text: &str) -> Option<NpyHeader> {
    let descr = dict_value(text, "descr")?.trim_matches(['\'', '"']).to_string();
    let fortran = match dict_value(text, "fortran_order")? {
        "True" => true,
        "False" => false,
        _ => return None,
    };
    let tuple = dict_value(text, "shape")?.strip_prefix('(')?.strip_suffix(')')?;
    let shape = tuple.split(',').map(str::trim).filter(|d| !d.is_empty()).map(|d| d.parse().ok()).collect::<Option<Vec<usize>>>()?;
    Some(NpyHeader { descr, fortran, shape })
}

/// Parses one `.npy` member into float64 values (any of the numeric dtypes read is widened).
pub fn read_npy(name: &str, bytes: &[u8]) -> Result<Array, ProfileError> {
    let bad = |what: &str| err(format!("profile: `{name}`: {what}"));
    if bytes.get(..6) != Some(b"\x93NUMPY") {
        return Err(bad("not a .npy array (no magic string)"));
    }
    let major = *bytes.get(6).ok_or_else(|| bad("truncated header"))?;
    let (len, start) = match major {
        1 => (u16_at(bytes, 8).map(usize::from), 10),
        2 | 3 => (u32_at(bytes, 8).map(|v| v as usize), 12),
        v => return Err(bad(&format!("unsupported .npy version {v}"))),
    };
    let len = len.ok_or_else(|| bad("truncated header"))?;
    let header = bytes.get(start..start + len).ok_or_else(|| bad("truncated header"))?;
    let h = parse_header(&String::from_utf8_lossy(header)).ok_or_else(|| bad("unreadable header"))?;
    if h.fortran && h.shape.len() > 1 {
        return Err(err(format!("profile: `{name}` is stored in Fortran order; save it in C order")));
    }
    let count = h.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).ok_or_else(|| bad("shape too large"))?;
    let body = &bytes[start + len..];
    let (big, kind) = match h.descr.split_at_checked(1) {
        Some(("<" | "=" | "|", k)) => (false, k),
        Some((">", k)) => (true, k),
        _ => (false, h.descr.as_str()),
    };
    let width = match kind {
        "f8" | "i8" => 8,
        "f4" | "i4" => 4,
        _ => return Err(err(format!("profile: `{name}` has unsupported dtype {}", h.descr))),
    };
    let need = count.checked_mul(width).ok_or_else(|| bad("shape too large"))?;
    let body = body.get(..need).ok_or_else(|| bad(&format!("{} bytes of data where its shape needs {need}", body.len())))?;
    let data = body
        .chunks_exact(width)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..width].copy_from_slice(c);
            if big {
                w[..width].reverse();
            }
            match kind {
                "f8" => f64::from_le_bytes(w),
                "i8" => i64::from_le_bytes(w) as f64,
                "f4" => f64::from(f32::from_le_bytes([w[0], w[1], w[2], w[3]])),
                _ => f64::from(i32::from_le_bytes([w[0], w[1], w[2], w[3]])),
            }
        })
        .collect();
    Ok(Array { shape: h.shape, data })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};

    /// A `.npy` member as numpy writes it (version 1, header padded to 64 bytes).
    pub(crate) fn npy(descr: &str, shape: &[usize], body: &[u8]) -> Vec<u8> {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let shape_txt = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
        let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_txt}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(body);
        bytes
    }

    /// An archive built by the `zip` crate (an independent writer), stored or deflated.
    fn archive(members: &[(&str, Vec<u8>)], method: zip::CompressionMethod, zip64: bool) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default().compression_method(method).large_file(zip64);
        for (name, bytes) in members {
            w.start_file(*name, opts).unwrap();
            w.write_all(bytes).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn f8(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn reads_stored_deflated_and_zip64_members() {
        let members = [("a.npy", npy("<f8", &[3], &f8(&[1.0, 2.5, -3.0]))), ("b.npy", npy("<f8", &[2, 2], &f8(&[1.0, 2.0, 3.0, 4.0])))];
        for method in [zip::CompressionMethod::Stored, zip::CompressionMethod::Deflated] {
            for zip64 in [false, true] {
                let got = read_arrays(&archive(&members, method, zip64)).unwrap();
                assert_eq!(got["a"], Array { shape: vec![3], data: vec![1.0, 2.5, -3.0] }, "{method:?} zip64 {zip64}");
                assert_eq!(got["b"].shape, vec![2, 2]);
                assert_eq!(got["b"].data, vec![1.0, 2.0, 3.0, 4.0]);
            }
        }
    }

    #[test]
    fn reads_the_numeric_dtypes_in_either_byte_order() {
        let be: Vec<u8> = [7.0f64, 8.0].iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(read_npy("x", &npy(">f8", &[2], &be)).unwrap().data, vec![7.0, 8.0]);
        let f4: Vec<u8> = [0.5f32, 1.5].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(read_npy("x", &npy("<f4", &[2], &f4)).unwrap().data, vec![0.5, 1.5]);
        let i8: Vec<u8> = [-2i64, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(read_npy("x", &npy("<i8", &[2], &i8)).unwrap().data, vec![-2.0, 9.0]);
        let i4: Vec<u8> = [-5i32, 6].iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(read_npy("x", &npy(">i4", &[2], &i4)).unwrap().data, vec![-5.0, 6.0]);
        // A 0-d array holds one value.
        assert_eq!(read_npy("x", &npy("<f8", &[], &f8(&[4.0]))).unwrap(), Array { shape: vec![], data: vec![4.0] });
    }

    #[test]
    fn bad_input_names_what_is_wrong() {
        let e = |r: Result<Array, ProfileError>| r.unwrap_err().0;
        assert!(e(read_npy("x", &npy("<u2", &[1], &[0, 0]))).contains("`x` has unsupported dtype <u2"));
        assert!(e(read_npy("x", &npy("<f8", &[3], &f8(&[1.0])))).contains("8 bytes of data where its shape needs 24"));
        assert!(e(read_npy("x", b"PK\x03\x04")).contains("not a .npy array"));
        let mut fortran = npy("<f8", &[1, 2], &f8(&[1.0, 2.0]));
        let at = fortran.windows(5).position(|w| w == b"False").unwrap();
        fortran[at..at + 5].copy_from_slice(b"True ");
        assert!(e(read_npy("x", &fortran)).contains("Fortran order"));
        assert!(read_arrays(b"not a zip").unwrap_err().0.contains("not an NPZ archive"));
        // A flipped bit in a stored member fails its CRC.
        let mut bytes = archive(&[("a.npy", npy("<f8", &[1], &f8(&[1.0])))], zip::CompressionMethod::Stored, false);
        let at = bytes.windows(8).position(|w| w == 1.0f64.to_le_bytes()).unwrap();
        bytes[at] ^= 1;
        assert!(read_arrays(&bytes).unwrap_err().0.contains("CRC-32 mismatch"), "{:?}", read_arrays(&bytes).err());
    }
}
