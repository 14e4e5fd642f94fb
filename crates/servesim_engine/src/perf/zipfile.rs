//! Reading ZIP archives as the engine's data files use them: NPZ profiles (numpy's `savez` /
//! `savez_compressed`) and measured-kernel data files. Only what those need is read: the
//! central directory (with ZIP64 sizes, which numpy writes) and stored or deflated members,
//! checked against their CRC-32. Inflation is `miniz_oxide`'s.
//!
//! Written for the engine rather than taken from the `zip` crate: a general archive reader
//! made up a large share of the page's engine download, for the few fields these files need.

/// A damaged or unsupported archive, in words.
#[derive(Debug)]
pub struct ZipError(pub String);

fn err(msg: impl Into<String>) -> ZipError {
    ZipError(msg.into())
}

pub(crate) fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
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

/// The central directory's entries.
fn members(b: &[u8]) -> Result<Vec<Member>, ZipError> {
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
fn zip64_sizes(mut extra: &[u8], m: &mut Member) -> Result<(), ZipError> {
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
fn member_bytes(b: &[u8], m: &Member) -> Result<Vec<u8>, ZipError> {
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

/// Every member of the archive `b`, by name, uncompressed, in directory order.
pub fn read_members(b: &[u8]) -> Result<Vec<(String, Vec<u8>)>, ZipError> {
    members(b)?.into_iter().map(|m| Ok((m.name.clone(), member_bytes(b, &m).map_err(|e| err(format!("{}: {}", m.name, e.0)))?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_the_zip_checksum() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn what_is_not_an_archive_says_so() {
        assert!(read_members(b"not a zip").unwrap_err().0.contains("no end of central directory"));
    }
}
