//! Redis's compact in-memory encodings as they appear inside RDB strings: listpack (read and
//! written, byte for byte as Redis builds them), intset (read and written), and the legacy
//! ziplist and zipmap (read only — Redis 7.0 still loads them and converts them to listpacks,
//! and so do we). The project's own in-memory formats differ, so these blobs are what the
//! server converts to and from; every decoder validates bounds and returns errors.

use crate::error::{corrupt, RdbError};
use embedis_datatypes::number::parse_i64;

type Res<T> = Result<T, RdbError>;

fn take<'a>(b: &'a [u8], pos: usize, n: usize, what: &str) -> Res<&'a [u8]> {
    pos.checked_add(n)
        .and_then(|end| b.get(pos..end))
        .ok_or_else(|| RdbError::Corrupt(format!("{what} entry out of bounds")))
}

/// Builds the listpack Redis would build by appending `items` one by one: canonical integers in
/// the narrowest integer encoding, other strings with a 6-, 12- or 32-bit length.
pub fn listpack_encode<I, T>(items: I) -> Vec<u8>
where
    I: IntoIterator<Item = T>,
    T: AsRef<[u8]>,
{
    let mut out = vec![0u8; 6];
    let mut count = 0usize;
    for item in items {
        let s = item.as_ref();
        let start = out.len();
        match parse_i64(s) {
            Some(v) if (0..=127).contains(&v) => out.push(v as u8),
            Some(v) if (-4096..=4095).contains(&v) => {
                let u = if v < 0 { (1 << 13) + v } else { v } as u16;
                out.push(0xc0 | (u >> 8) as u8);
                out.push(u as u8);
            }
            Some(v) if i16::try_from(v).is_ok() => {
                out.push(0xf1);
                out.extend_from_slice(&(v as i16).to_le_bytes());
            }
            Some(v) if (-(1 << 23)..(1 << 23)).contains(&v) => {
                out.push(0xf2);
                out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
            }
            Some(v) if i32::try_from(v).is_ok() => {
                out.push(0xf3);
                out.extend_from_slice(&(v as i32).to_le_bytes());
            }
            Some(v) => {
                out.push(0xf4);
                out.extend_from_slice(&v.to_le_bytes());
            }
            None if s.len() < 64 => {
                out.push(0x80 | s.len() as u8);
                out.extend_from_slice(s);
            }
            None if s.len() < 4096 => {
                out.push(0xe0 | (s.len() >> 8) as u8);
                out.push(s.len() as u8);
                out.extend_from_slice(s);
            }
            None => {
                out.push(0xf0);
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s);
            }
        }
        let l = out.len() - start;
        encode_backlen(&mut out, l);
        count += 1;
    }
    out.push(0xff);
    let total = out.len() as u32;
    out[0..4].copy_from_slice(&total.to_le_bytes());
    // Past 65534 elements Redis records "unknown" (65535) and counts by walking.
    let n = if count < 65535 { count as u16 } else { 65535 };
    out[4..6].copy_from_slice(&n.to_le_bytes());
    out
}

/// The back length: the entry's size in 7-bit groups, most significant first, every byte but
/// the first with its top bit set (so it can be read from its last byte backwards).
fn encode_backlen(out: &mut Vec<u8>, l: usize) {
    let groups = match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    };
    for i in (0..groups).rev() {
        let g = ((l >> (7 * i)) & 127) as u8;
        out.push(if i == groups - 1 { g } else { g | 128 });
    }
}

fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

fn sign_extend(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

/// The elements of a Redis listpack, integers as their decimal text.
pub fn listpack_decode(lp: &[u8]) -> Res<Vec<Vec<u8>>> {
    let (declared, body) = listpack_frame(lp)?;
    let mut pos = 6;
    let mut items = Vec::new();
    while pos < body.len() {
        let (item, next) = listpack_entry(body, pos)?;
        items.push(item);
        pos = next;
    }
    if declared != 65535 && declared as usize != items.len() {
        return corrupt("listpack element count mismatch");
    }
    Ok(items)
}

/// Redis's shallow check of a listpack (`lpValidateIntegrity` without `deep`, what the loader
/// does under `sanitize-dump-payload no`): the header's size is the blob's, it ends with the
/// terminator, and its first entry — which Redis's `lpFirst` asserts valid — can be read.
pub fn listpack_shallow_check(lp: &[u8]) -> Res<()> {
    let (_, body) = listpack_frame(lp)?;
    if body.len() > 6 {
        listpack_entry(body, 6)?;
    }
    Ok(())
}

/// The elements of a listpack up to its first unreadable entry, its declared count ignored:
/// what can be kept of a listpack that passed only [`listpack_shallow_check`].
pub fn listpack_readable_prefix(lp: &[u8]) -> Vec<Vec<u8>> {
    let Ok((_, body)) = listpack_frame(lp) else {
        return Vec::new();
    };
    let mut pos = 6;
    let mut items = Vec::new();
    while pos < body.len() {
        let Ok((item, next)) = listpack_entry(body, pos) else {
            break;
        };
        items.push(item);
        pos = next;
    }
    items
}

/// A listpack's declared element count and its bytes without the terminator, once its header
/// agrees with its size.
fn listpack_frame(lp: &[u8]) -> Res<(u16, &[u8])> {
    if lp.len() < 7 {
        return corrupt("listpack too short");
    }
    let total = u32::from_le_bytes(lp[0..4].try_into().unwrap()) as usize;
    if total != lp.len() || lp[lp.len() - 1] != 0xff {
        return corrupt("listpack header does not match its size");
    }
    Ok((u16::from_le_bytes([lp[4], lp[5]]), &lp[..lp.len() - 1]))
}

/// The entry at `pos` of a listpack's `body` and the offset of the next, its back length checked.
fn listpack_entry(body: &[u8], pos: usize) -> Res<(Vec<u8>, usize)> {
    let b = body[pos];
    let (item, size): (Vec<u8>, usize) = if b & 0x80 == 0 {
        ((b & 0x7f).to_string().into_bytes(), 1)
    } else if b & 0xc0 == 0x80 {
        let n = (b & 0x3f) as usize;
        (take(body, pos + 1, n, "listpack")?.to_vec(), 1 + n)
    } else if b & 0xe0 == 0xc0 {
        let lo = *take(body, pos + 1, 1, "listpack")?.first().unwrap_or(&0);
        let v = sign_extend((u64::from(b & 0x1f) << 8) | u64::from(lo), 13);
        (v.to_string().into_bytes(), 2)
    } else if b & 0xf0 == 0xe0 {
        let lo = take(body, pos + 1, 1, "listpack")?[0];
        let n = (((b & 0x0f) as usize) << 8) | lo as usize;
        (take(body, pos + 2, n, "listpack")?.to_vec(), 2 + n)
    } else {
        let int = |width: usize| -> Res<(Vec<u8>, usize)> {
            let raw = take(body, pos + 1, width, "listpack")?;
            let mut v = 0u64;
            for (i, byte) in raw.iter().enumerate() {
                v |= u64::from(*byte) << (8 * i);
            }
            let v = sign_extend(v, 8 * width as u32);
            Ok((v.to_string().into_bytes(), 1 + width))
        };
        match b {
            0xf0 => {
                let n = u32::from_le_bytes(take(body, pos + 1, 4, "listpack")?.try_into().unwrap())
                    as usize;
                (take(body, pos + 5, n, "listpack")?.to_vec(), 5 + n)
            }
            0xf1 => int(2)?,
            0xf2 => int(3)?,
            0xf3 => int(4)?,
            0xf4 => int(8)?,
            _ => return corrupt(format!("unknown listpack encoding {b:#04x}")),
        }
    };
    let back = backlen_size(size);
    let mut expect = Vec::with_capacity(5);
    encode_backlen(&mut expect, size);
    if take(body, pos + size, back, "listpack")? != expect.as_slice() {
        return corrupt("listpack back length mismatch");
    }
    Ok((item, pos + size + back))
}

/// The elements of a legacy ziplist (lists, hashes and zsets before Redis 7.0).
pub fn ziplist_decode(zl: &[u8]) -> Res<Vec<Vec<u8>>> {
    if zl.len() < 11 {
        return corrupt("ziplist too short");
    }
    let total = u32::from_le_bytes(zl[0..4].try_into().unwrap()) as usize;
    if total != zl.len() || zl[zl.len() - 1] != 0xff {
        return corrupt("ziplist header does not match its size");
    }
    let declared = u16::from_le_bytes([zl[8], zl[9]]);
    let tail = u32::from_le_bytes(zl[4..8].try_into().unwrap()) as usize;
    let body = &zl[..zl.len() - 1];
    let mut pos = 10;
    let mut items = Vec::new();
    // As Redis's deep check: each entry's recorded previous length is the size of the entry
    // before it (0 for the first), and the header's tail offset is where the last entry starts
    // (the header's end when there is none) — a reader walking backwards trusts both.
    let (mut prev_start, mut prev_size) = (10, 0);
    while pos < body.len() {
        let start = pos;
        // Previous entry length: 1 byte, or 0xfe and 4 bytes.
        let prevlen = if body[pos] == 0xfe {
            let raw = take(body, pos + 1, 4, "ziplist")?;
            pos += 5;
            u32::from_le_bytes(raw.try_into().unwrap()) as usize
        } else {
            pos += 1;
            body[start] as usize
        };
        if prevlen != prev_size {
            return corrupt("ziplist entry's previous length is wrong");
        }
        let b = *take(body, pos, 1, "ziplist")?.first().unwrap_or(&0);
        let int = |width: usize| -> Res<(Vec<u8>, usize)> {
            let raw = take(body, pos + 1, width, "ziplist")?;
            let mut v = 0u64;
            for (i, byte) in raw.iter().enumerate() {
                v |= u64::from(*byte) << (8 * i);
            }
            Ok((
                sign_extend(v, 8 * width as u32).to_string().into_bytes(),
                1 + width,
            ))
        };
        let (item, size) = match b >> 6 {
            0 => {
                let n = (b & 0x3f) as usize;
                (take(body, pos + 1, n, "ziplist")?.to_vec(), 1 + n)
            }
            1 => {
                let n =
                    (((b & 0x3f) as usize) << 8) | take(body, pos + 1, 1, "ziplist")?[0] as usize;
                (take(body, pos + 2, n, "ziplist")?.to_vec(), 2 + n)
            }
            2 => {
                if b != 0x80 {
                    return corrupt("bad ziplist string encoding");
                }
                let n = u32::from_be_bytes(take(body, pos + 1, 4, "ziplist")?.try_into().unwrap())
                    as usize;
                (take(body, pos + 5, n, "ziplist")?.to_vec(), 5 + n)
            }
            _ => match b {
                0xc0 => int(2)?,
                0xd0 => int(4)?,
                0xe0 => int(8)?,
                0xf0 => int(3)?,
                0xfe => int(1)?,
                0xf1..=0xfd => (((b & 0x0f) - 1).to_string().into_bytes(), 1),
                _ => return corrupt(format!("unknown ziplist encoding {b:#04x}")),
            },
        };
        pos += size;
        (prev_start, prev_size) = (start, pos - start);
        items.push(item);
    }
    if pos != body.len() {
        return corrupt("ziplist entry overruns the end");
    }
    if tail != prev_start {
        return corrupt("ziplist tail offset is wrong");
    }
    if declared != 65535 && declared as usize != items.len() {
        return corrupt("ziplist element count mismatch");
    }
    Ok(items)
}

/// The integers of an intset blob (header: encoding width, count; then sorted values).
pub fn intset_decode(is: &[u8]) -> Res<Vec<i64>> {
    if is.len() < 8 {
        return corrupt("intset too short");
    }
    let width = u32::from_le_bytes(is[0..4].try_into().unwrap()) as usize;
    let count = u32::from_le_bytes(is[4..8].try_into().unwrap()) as usize;
    if !matches!(width, 2 | 4 | 8) || count.checked_mul(width) != Some(is.len() - 8) {
        return corrupt("intset header does not match its size");
    }
    let values: Vec<i64> = is[8..]
        .chunks_exact(width)
        .map(|c| match width {
            2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
            4 => i64::from(i32::from_le_bytes(c.try_into().unwrap())),
            _ => i64::from_le_bytes(c.try_into().unwrap()),
        })
        .collect();
    if values.windows(2).any(|w| w[0] >= w[1]) {
        return corrupt("intset not sorted or has duplicates");
    }
    Ok(values)
}

/// The intset Redis holds for these integers: the narrowest width fitting all, sorted.
pub fn intset_encode(values: &[i64]) -> Vec<u8> {
    let mut v = values.to_vec();
    v.sort_unstable();
    v.dedup();
    let width = if v.iter().all(|x| i16::try_from(*x).is_ok()) {
        2
    } else if v.iter().all(|x| i32::try_from(*x).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * v.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes()[..width]);
    }
    out
}

/// The field/value pairs of a legacy zipmap hash (Redis before 2.6), flattened.
pub fn zipmap_decode(zm: &[u8]) -> Res<Vec<Vec<u8>>> {
    let mut pos = 1; // the count byte, which is only a hint
    let mut items = Vec::new();
    let read_len = |pos: &mut usize| -> Res<Option<usize>> {
        let b = *take(zm, *pos, 1, "zipmap")?.first().unwrap_or(&0);
        match b {
            255 => Ok(None),
            254 => {
                let n = u32::from_le_bytes(take(zm, *pos + 1, 4, "zipmap")?.try_into().unwrap());
                *pos += 5;
                Ok(Some(n as usize))
            }
            n => {
                *pos += 1;
                Ok(Some(n as usize))
            }
        }
    };
    while let Some(klen) = read_len(&mut pos)? {
        items.push(take(zm, pos, klen, "zipmap")?.to_vec());
        pos += klen;
        let Some(vlen) = read_len(&mut pos)? else {
            return corrupt("zipmap key without value");
        };
        let free = take(zm, pos, 1, "zipmap")?[0] as usize;
        pos += 1;
        items.push(take(zm, pos, vlen, "zipmap")?.to_vec());
        pos += vlen + free;
    }
    if pos + 1 != zm.len() {
        return corrupt("zipmap trailing bytes");
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_round_trips_every_encoding() {
        let big = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let items: Vec<&[u8]> = vec![
            b"0",
            b"127",
            b"128",
            b"-4096",
            b"4095",
            b"-32768",
            b"32767",
            b"8388607",
            b"-8388608",
            b"2147483647",
            b"-2147483648",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"01",
            b"-0",
            b"",
            b"hello",
            &mid,
            &big,
        ];
        let lp = listpack_encode(&items);
        let back = listpack_decode(&lp).unwrap();
        assert_eq!(back.iter().map(|v| v.as_slice()).collect::<Vec<_>>(), items);
        // Truncation anywhere is an error, not a panic.
        for cut in 0..lp.len() {
            assert!(listpack_decode(&lp[..cut]).is_err());
        }
    }

    #[test]
    fn intset_round_trip_and_width() {
        let is = intset_encode(&[3, 1, 2]);
        assert_eq!(is, vec![2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 2, 0, 3, 0]);
        assert_eq!(intset_decode(&is).unwrap(), vec![1, 2, 3]);
        assert_eq!(
            intset_decode(&intset_encode(&[1 << 40])).unwrap(),
            vec![1 << 40]
        );
    }
}
