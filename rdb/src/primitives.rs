//! The small encodings every RDB structure is built of: lengths (6/14/32/64-bit, plus the
//! "special" marker that introduces an int-encoded or LZF string), strings (chosen exactly as
//! Redis chooses them, so that our files and DUMP payloads are byte-identical to Redis's),
//! binary and legacy text doubles, and millisecond times.

use crate::error::{corrupt, RdbError};
use embedis_datatypes::{lzf, number::parse_i64};
use std::io::{Read, Write};

/// Strings longer than this many bytes are tried with LZF (Redis: shorter ones never shrink).
const LZF_MIN_LEN: usize = 20;
/// Reads larger than this are done in pieces, so a lying length costs at most this much memory
/// before the input runs out.
const READ_CHUNK: usize = 1 << 16;

/// A length field: a count, or the marker of a specially encoded string (int8/16/32, LZF).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Len {
    Plain(u64),
    Special(u8),
}

pub fn read_u8<R: Read>(r: &mut R) -> Result<u8, RdbError> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b)?;
    Ok(b[0])
}

pub fn read_array<R: Read, const N: usize>(r: &mut R) -> Result<[u8; N], RdbError> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)?;
    Ok(b)
}

/// Reads exactly `len` bytes, growing the buffer as they arrive instead of trusting `len`.
pub fn read_bytes<R: Read>(r: &mut R, len: u64) -> Result<Vec<u8>, RdbError> {
    let mut out = Vec::with_capacity((len as usize).min(READ_CHUNK));
    let got = r.take(len).read_to_end(&mut out)?;
    if (got as u64) != len {
        return Err(RdbError::UnexpectedEof);
    }
    Ok(out)
}

pub fn read_len_or_special<R: Read>(r: &mut R) -> Result<Len, RdbError> {
    let b = read_u8(r)?;
    Ok(match b >> 6 {
        0 => Len::Plain(u64::from(b & 0x3f)),
        1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(read_u8(r)?)),
        3 => Len::Special(b & 0x3f),
        _ => match b {
            0x80 => Len::Plain(u64::from(u32::from_be_bytes(read_array(r)?))),
            0x81 => Len::Plain(u64::from_be_bytes(read_array(r)?)),
            _ => return corrupt(format!("unknown length encoding {b:#04x}")),
        },
    })
}

pub fn read_len<R: Read>(r: &mut R) -> Result<u64, RdbError> {
    match read_len_or_special(r)? {
        Len::Plain(n) => Ok(n),
        Len::Special(_) => corrupt("encoded string where a length was expected"),
    }
}

/// A length used as an element count: capped for preallocation by the caller.
pub fn read_count<R: Read>(r: &mut R) -> Result<usize, RdbError> {
    let n = read_len(r)?;
    usize::try_from(n).or_else(|_| corrupt("length does not fit in memory"))
}

/// A capacity for `n` elements read from a file: never more than a small bound up front.
pub fn cap(n: usize) -> usize {
    n.min(1024)
}

pub fn write_len<W: Write>(w: &mut W, len: u64) -> Result<(), RdbError> {
    if len < 1 << 6 {
        w.write_all(&[len as u8])?;
    } else if len < 1 << 14 {
        w.write_all(&[0x40 | (len >> 8) as u8, len as u8])?;
    } else if len <= u64::from(u32::MAX) {
        w.write_all(&[0x80])?;
        w.write_all(&(len as u32).to_be_bytes())?;
    } else {
        w.write_all(&[0x81])?;
        w.write_all(&len.to_be_bytes())?;
    }
    Ok(())
}

pub fn read_string<R: Read>(r: &mut R) -> Result<Vec<u8>, RdbError> {
    match read_len_or_special(r)? {
        Len::Plain(n) => read_bytes(r, n),
        Len::Special(0) => Ok((read_u8(r)? as i8).to_string().into_bytes()),
        Len::Special(1) => Ok(i16::from_le_bytes(read_array(r)?).to_string().into_bytes()),
        Len::Special(2) => Ok(i32::from_le_bytes(read_array(r)?).to_string().into_bytes()),
        Len::Special(3) => {
            let clen = read_len(r)?;
            let len = read_len(r)?;
            // One LZF back reference (3 bytes) expands to at most 264 bytes: a longer claim is
            // a lie, refused before anything is allocated for it.
            if len > clen.saturating_mul(90).saturating_add(64) {
                return corrupt("LZF string claims an impossible length");
            }
            let data = read_bytes(r, clen)?;
            lzf::decompress(&data, len as usize)
                .ok_or_else(|| RdbError::Corrupt("invalid LZF compressed string".into()))
        }
        Len::Special(e) => corrupt(format!("unknown string encoding {e}")),
    }
}

/// The int8/16/32 encoding Redis gives a string that is a canonical integer in 32 bits.
fn integer_encoding(s: &[u8]) -> Option<([u8; 5], usize)> {
    let v = parse_i64(s)?;
    let mut b = [0u8; 5];
    if let Ok(v) = i8::try_from(v) {
        b[0] = 0xc0;
        b[1] = v as u8;
        Some((b, 2))
    } else if let Ok(v) = i16::try_from(v) {
        b[0] = 0xc1;
        b[1..3].copy_from_slice(&v.to_le_bytes());
        Some((b, 3))
    } else if let Ok(v) = i32::try_from(v) {
        b[0] = 0xc2;
        b[1..5].copy_from_slice(&v.to_le_bytes());
        Some((b, 5))
    } else {
        None
    }
}

/// Writes a string as Redis's `rdbSaveRawString` does: as an integer when it is a canonical one
/// of at most 11 characters that fits 32 bits; else LZF when `compress`, it is over 20 bytes and
/// compresses into at most `len - 4` bytes; else verbatim.
pub fn write_string<W: Write>(w: &mut W, s: &[u8], compress: bool) -> Result<(), RdbError> {
    if s.len() <= 11 {
        if let Some((b, n)) = integer_encoding(s) {
            w.write_all(&b[..n])?;
            return Ok(());
        }
    }
    if compress && s.len() > LZF_MIN_LEN {
        if let Some(c) = lzf::compress(s, s.len() - 4) {
            w.write_all(&[0xc3])?;
            write_len(w, c.len() as u64)?;
            write_len(w, s.len() as u64)?;
            w.write_all(&c)?;
            return Ok(());
        }
    }
    write_len(w, s.len() as u64)?;
    w.write_all(s)?;
    Ok(())
}

/// A `ZSET_2` score: the f64's bytes, little-endian.
pub fn read_binary_double<R: Read>(r: &mut R) -> Result<f64, RdbError> {
    Ok(f64::from_le_bytes(read_array(r)?))
}

pub fn write_binary_double<W: Write>(w: &mut W, v: f64) -> Result<(), RdbError> {
    w.write_all(&v.to_le_bytes())?;
    Ok(())
}

/// A legacy (`RDB_TYPE_ZSET`) score: a length byte with 253/254/255 standing for NaN/+inf/-inf,
/// else that many ASCII characters.
pub fn read_text_double<R: Read>(r: &mut R) -> Result<f64, RdbError> {
    let len = read_u8(r)?;
    match len {
        253 => Ok(f64::NAN),
        254 => Ok(f64::INFINITY),
        255 => Ok(f64::NEG_INFINITY),
        n => {
            let text = read_bytes(r, u64::from(n))?;
            std::str::from_utf8(&text)
                .ok()
                .and_then(|t| t.trim().parse::<f64>().ok())
                .ok_or_else(|| RdbError::Corrupt("invalid double value".into()))
        }
    }
}

/// A millisecond time (expiry, PEL delivery time, consumer seen time): 8 bytes little-endian.
pub fn read_millis<R: Read>(r: &mut R) -> Result<i64, RdbError> {
    Ok(i64::from_le_bytes(read_array(r)?))
}

pub fn write_millis<W: Write>(w: &mut W, ms: i64) -> Result<(), RdbError> {
    w.write_all(&ms.to_le_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_string(&mut out, s, true).unwrap();
        out
    }

    #[test]
    fn lengths_round_trip_at_every_width() {
        for n in [
            0u64,
            63,
            64,
            16383,
            16384,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            write_len(&mut out, n).unwrap();
            let expect = match n {
                0..=63 => 1,
                64..=16383 => 2,
                16384..=0xffff_ffff => 5,
                _ => 9,
            };
            assert_eq!(out.len(), expect, "{n}");
            assert_eq!(read_len(&mut &out[..]).unwrap(), n);
        }
    }

    #[test]
    fn strings_pick_redis_encodings() {
        assert_eq!(enc(b"12"), vec![0xc0, 12]);
        assert_eq!(enc(b"-129"), vec![0xc1, 0x7f, 0xff]);
        assert_eq!(enc(b"65536"), vec![0xc2, 0, 0, 1, 0]);
        // Not canonical, or too wide: verbatim.
        assert_eq!(enc(b"012"), vec![3, b'0', b'1', b'2']);
        assert_eq!(enc(b"4294967296")[0], 10);
        let long = vec![b'a'; 100];
        let e = enc(&long);
        assert_eq!(e[0], 0xc3);
        assert_eq!(read_string(&mut &e[..]).unwrap(), long);
        // A lying LZF length is refused without allocating it.
        assert!(read_string(&mut &[0xc3, 1, 0x81, 0, 0, 0, 0xff, 0, 0, 0, 0, 0][..]).is_err());
    }
}
