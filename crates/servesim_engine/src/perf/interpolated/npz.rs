//! Reading NPZ archives: a ZIP file (numpy's `savez` / `savez_compressed`) whose members are
//! `.npy` arrays, stored or deflated. Only what profiles need is read: the central directory
//! (with ZIP64 sizes, which numpy writes), stored and deflated members (checked against their
//! CRC-32), and `.npy` headers of little- or big-endian float64/float32/int64/int32 arrays.
//!
//! Written for the engine rather than taken from the `zip` and `npyz` crates: those pull in a
//! Python-literal parser and a general archive reader that made up about a sixth of the page's
//! engine download, for the few fields a profile needs. Inflation is `miniz_oxide`'s.

use super::{Array, ProfileError};
use std::collections::HashMap;

fn err(msg: impl Into<String>) -> ProfileError {
    ProfileError(msg.into())
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

const EOCD: u32 = 0x0605_4b50;
const ZIP64_LOCATOR: u32 = 0x0706_4b50;
const ZIP64_EOCD: u32 = 0x0606_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const LOCAL: u32 = 0x0403_4b50;

/// One member as the central directory lists it.
struct Member {
    name: String,
    method: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    local_offset: u64,
}

/// The members of an NPZ archive, each read into an array (keyed by name without `.npy`).
pub fn read_arrays(bytes: &[u8]) -> Result<HashMap<String, Array>, ProfileError> {
    let mut arrays = HashMap::new();
    for m in members(bytes).map_err(|e| err(format!("profile: not an NPZ archive: {}", e.0)))? {
        let name = m.name.trim_end_matches(".npy").to_string();
        let data = member_bytes(bytes, &m).map_err(|e| err(format!("profile: {name}: {}", e.0)))?;
        arrays.insert(name.clone(), read_npy(&name, &data)?);
    }
    Ok(arrays)
}

/// The central directory's entries.
fn members(b: &[u8]) -> Result<Vec<Member>, ProfileError> {
    // The end-of-central-directory record: 22 bytes, then a comment of up to 64 KiB.
    let lowest = b.len().saturating_sub(22 + 0xffff);
    let eocd = (lowest..=b.len().saturating_sub(22))
        .rev()
        .find(|&i| u32_at(b, i) == Some(EOCD))
        .ok_or_else(|| err("no end of central directory"))?;
    let mut count = u64::from(u16_at(b, eocd + 10).ok_or_else(|| err("truncated"))?);
    let mut offset = u64::from(u32_at(b, eocd + 16).ok_or_else(|| err("truncated"))?);
    // ZIP64: a locator right before the record points at the 64-bit record.
    if eocd >= 20 && u32_at(b, eocd - 20) == Some(ZIP64_LOCATOR) {
        let at = u64_at(b, eocd - 12).ok_or_else(|| err("truncated"))? as usize;
        if u32_at(b, at) != Some(ZIP64_EOCD) {
            return Err(err("bad ZIP64 end of central directory"));
        }
        count = u64_at(b, at + 32).ok_or_else(|| err("truncated"))?;
        offset = u64_at(b, at + 48).ok_or_else(|| err("truncated"))?;
    }
    let mut at = usize::try_from(offset).map_err(|_| err("central directory out of range"))?;
    let mut out = Vec::new();
    for _ in 0..count {
        let field = |o: usize| u32_at(b, at + o).ok_or_else(|| err("truncated central directory"));
        if field(0)? != CENTRAL {
            return Err(err("bad central directory entry"));
        }
        let short = |o: usize| u16_at(b, at + o).map(usize::from).ok_or_else(|| err("truncated central directory"));
        let (method, name_len, extra_len, comment_len) = (short(10)? as u16, short(28)?, short(30)?, short(32)?);
        let name_bytes = b.get(at + 46..at + 46 + name_len).ok_or_else(|| err("truncated central directory"))?;
        let name = String::from_utf8_lossy(name_bytes).into_owned();
        let extra = b.get(at + 46 + name_len..at + 46 + name_len + extra_len).ok_or_else(|| err("truncated central directory"))?;
        let mut m = Member {
            name,
            method,
            crc: field(16)?,
            compressed: u64::from(field(20)?),
            size: u64::from(field(24)?),
            local_offset: u64::from(field(42)?),
        };
        zip64_sizes(extra, &mut m)?;
        out.push(m);
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(out)
}

/// The ZIP64 extra field (id 1) holds, in order, the sizes and offset whose 32-bit fields are
/// all ones.
fn zip64_sizes(mut extra: &[u8], m: &mut Member) -> Result<(), ProfileError> {
    while extra.len() >= 4 {
        let id = u16_at(extra, 0).unwrap_or(0);
        let len = usize::from(u16_at(extra, 2).unwrap_or(0));
        let body = extra.get(4..4 + len).ok_or_else(|| err("truncated extra field"))?;
        if id == 1 {
            let mut at = 0;
            for v in [&mut m.size, &mut m.compressed, &mut m.local_offset] {
                if *v == 0xffff_ffff {
                    *v = u64_at(body, at).ok_or_else(|| err("truncated ZIP64 field"))?;
                    at += 8;
                }
            }
        }
        extra = &extra[4 + len..];
    }
    Ok(())
}

/// A member's uncompressed bytes.
fn member_bytes(b: &[u8], m: &Member) -> Result<Vec<u8>, ProfileError> {
    let at = usize::try_from(m.local_offset).map_err(|_| err("member out of range"))?;
    if u32_at(b, at) != Some(LOCAL) {
        return Err(err("bad local header"));
    }
    let name_len = usize::from(u16_at(b, at + 26).ok_or_else(|| err("truncated"))?);
    let extra_len = usize::from(u16_at(b, at + 28).ok_or_else(|| err("truncated"))?);
    let start = at + 30 + name_len + extra_len;
    let len = usize::try_from(m.compressed).map_err(|_| err("member too large"))?;
    let raw = b.get(start..start.saturating_add(len)).ok_or_else(|| err("truncated member"))?;
    let size = usize::try_from(m.size).map_err(|_| err("member too large"))?;
    let data = match m.method {
        0 => raw.to_vec(),
        8 => {
            miniz_oxide::inflate::decompress_to_vec_with_limit(raw, size).map_err(|e| err(format!("bad deflate data ({:?})", e.status)))?
        }
        other => return Err(err(format!("compression method {other} (only stored and deflated members are read)"))),
    };
    if data.len() != size {
        return Err(err(format!("{} bytes where the archive says {size}", data.len())));
    }
    if crc32(&data) != m.crc {
        return Err(err("CRC-32 mismatch (a damaged archive)"));
    }
    Ok(data)
}

/// CRC-32 (IEEE, reflected), as ZIP checks members with.
fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (i, slot) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
        }
        *slot = c;
    }
    !data.iter().fold(!0u32, |c, &x| table[((c ^ u32::from(x)) & 0xff) as usize] ^ (c >> 8))
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

    #[test]
    fn crc32_is_the_zip_checksum() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }
}
