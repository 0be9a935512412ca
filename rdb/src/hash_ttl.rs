//! The RDB bodies of hashes whose fields have TTLs (hash field expiration, Redis 7.4+):
//! `RDB_TYPE_HASH_METADATA` (24) for a hash table and `RDB_TYPE_HASH_LISTPACK_EX` (25) for a
//! listpack, plus the two pre-release forms (22, 23) that Redis 8.2 still reads. They are apart
//! from `value.rs` because their rules are their own: a header time, TTLs stored relative to it,
//! and a listpack of triplets whose order the loader must check.
//!
//! Layouts (all times are Unix milliseconds; a TTL of 0 means "this field has none"):
//! - 24: the hash's earliest field deadline (8 bytes LE), the field count, then per field its
//!   TTL as a length — 0, or `deadline - earliest + 1`, which keeps the common numbers small —
//!   its name and its value.
//! - 25: a time (8 bytes LE) that loaders ignore (Redis writes what its expiry index holds for
//!   the key, which may be stale), then one listpack of `field, value, deadline` triplets: the
//!   fields with a deadline first, in non-decreasing deadline order, then those without.
//! - 22: as 24 without the header, each TTL the absolute deadline; 23: as 25 without the header.
//!
//! Deadlines beyond 2^48 - 1 ms are corrupt, as in Redis, whose expiry buckets hold 48 bits.
//! Expired fields are read like any other: deciding what has expired is the loader's, which
//! knows the time (Redis 8.2 loads them too and lets its field expiry remove them).

use crate::encodings::listpack_decode;
use crate::error::{corrupt, RdbError};
use crate::primitives::*;
use embedis_datatypes::number::parse_i64;
use std::io::{Read, Write};

/// The latest field deadline Redis accepts (its `EB_EXPIRE_TIME_MAX`).
pub const MAX_FIELD_DEADLINE: u64 = (1 << 48) - 1;

/// One field of an `RDB_TYPE_HASH_METADATA` hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TtlField {
    pub field: Vec<u8>,
    pub value: Vec<u8>,
    /// The field's deadline (Unix ms), 0 when it has none — the file's own convention.
    pub expire_ms: u64,
}

/// The earliest deadline among `fields`, 0 if none has one.
fn earliest(fields: &[TtlField]) -> u64 {
    fields
        .iter()
        .map(|f| f.expire_ms)
        .filter(|&e| e != 0)
        .min()
        .unwrap_or(0)
}

/// Writes a type-24 body: the earliest deadline, then the fields with relative TTLs.
pub fn write_metadata<W: Write>(
    w: &mut W,
    fields: &[TtlField],
    compress: bool,
) -> Result<(), RdbError> {
    let min = earliest(fields);
    write_millis(w, min as i64)?;
    write_len(w, fields.len() as u64)?;
    for f in fields {
        // `earliest` is the smallest non-zero deadline, so the difference cannot underflow.
        let ttl = if f.expire_ms == 0 {
            0
        } else {
            f.expire_ms - min + 1
        };
        write_len(w, ttl)?;
        write_string(w, &f.field, compress)?;
        write_string(w, &f.value, compress)?;
    }
    Ok(())
}

/// Reads a type-24 body (`pre_ga`: type 22, no header and absolute TTLs).
pub fn read_metadata<R: Read>(r: &mut R, pre_ga: bool) -> Result<Vec<TtlField>, RdbError> {
    let min = if pre_ga {
        0
    } else {
        let min = u64::from_le_bytes(read_array(r)?);
        if min > MAX_FIELD_DEADLINE + 1 {
            return corrupt("hash with field TTLs: invalid earliest deadline");
        }
        min
    };
    let n = read_count(r)?;
    let mut fields = Vec::with_capacity(cap(n));
    for _ in 0..n {
        let ttl = read_len(r)?;
        let expire_ms = match (ttl, pre_ga) {
            (0, _) => 0,
            (t, true) => t,
            (t, false) => t
                .checked_add(min)
                .map(|e| e - 1)
                .ok_or_else(|| RdbError::Corrupt("hash field TTL overflows".into()))?,
        };
        if expire_ms > MAX_FIELD_DEADLINE {
            return corrupt(format!("invalid hash field deadline {expire_ms}"));
        }
        let field = read_string(r)?;
        let value = read_string(r)?;
        fields.push(TtlField {
            field,
            value,
            expire_ms,
        });
    }
    Ok(fields)
}

/// Writes a type-25 body: the header time, then the listpack of triplets as it is.
pub fn write_listpack_ex<W: Write>(
    w: &mut W,
    min_expire: u64,
    listpack: &[u8],
    compress: bool,
) -> Result<(), RdbError> {
    write_millis(w, min_expire as i64)?;
    write_string(w, listpack, compress)
}

/// Reads a type-25 body (`pre_ga`: type 23, no header) and checks the listpack as Redis's deep
/// sanitization does: triplets, integer deadlines within range, the fields with a deadline
/// first and in order. Returns the header time (for type 23, the first triplet's deadline or
/// 0, what a type-25 writer would have put there) and the listpack.
pub fn read_listpack_ex<R: Read>(r: &mut R, pre_ga: bool) -> Result<(u64, Vec<u8>), RdbError> {
    let header = if pre_ga {
        None
    } else {
        Some(u64::from_le_bytes(read_array(r)?))
    };
    let listpack = read_string(r)?;
    let fields = listpack_ex_fields(&listpack)?;
    let min = header.unwrap_or_else(|| fields.first().map_or(0, |f| f.expire_ms));
    Ok((min, listpack))
}

/// The triplets of a listpack-with-TTLs as fields (deadline 0: none), checked as
/// [`read_listpack_ex`] describes.
pub fn listpack_ex_fields(listpack: &[u8]) -> Result<Vec<TtlField>, RdbError> {
    let items = listpack_decode(listpack)?;
    if items.len() % 3 != 0 {
        return corrupt("hash listpack with TTLs: not field, value, deadline triplets");
    }
    let mut fields = Vec::with_capacity(items.len() / 3);
    let mut last: Option<u64> = None;
    let mut items = items.into_iter();
    while let (Some(field), Some(value), Some(deadline)) =
        (items.next(), items.next(), items.next())
    {
        let d = parse_i64(&deadline)
            .and_then(|d| u64::try_from(d).ok())
            .filter(|&d| d <= MAX_FIELD_DEADLINE)
            .ok_or_else(|| RdbError::Corrupt("invalid hash field deadline".into()))?;
        // A field with a deadline may follow only fields with an earlier or equal one.
        if d != 0 && last.is_some_and(|l| l == 0 || d < l) {
            return corrupt("hash listpack with TTLs: deadlines out of order");
        }
        last = Some(d);
        fields.push(TtlField {
            field,
            value,
            expire_ms: d,
        });
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encodings::listpack_encode;

    fn field(f: &str, v: &str, e: u64) -> TtlField {
        TtlField {
            field: f.into(),
            value: v.into(),
            expire_ms: e,
        }
    }

    #[test]
    fn metadata_ttls_are_relative_to_the_earliest_deadline() {
        let fields = vec![
            field("a", "1", 1_700_000_000_500),
            field("b", "2", 0),
            field("c", "3", 1_700_000_000_000),
        ];
        let mut out = Vec::new();
        write_metadata(&mut out, &fields, false).unwrap();
        // Header: the earliest deadline, little-endian; then 3 fields.
        assert_eq!(&out[..8], &1_700_000_000_000u64.to_le_bytes());
        assert_eq!(out[8], 3);
        // a: 500 + 1 = 501 takes a 14-bit length (0x41 0xf5); b: 0; c: 1.
        assert_eq!(&out[9..12], &[0x41, 0xf5, 1]);
        assert_eq!(out[12], b'a');
        let b_at = 9 + 2 + 2 + 2;
        assert_eq!(&out[b_at..b_at + 2], &[0, 1]);
        let c_at = b_at + 1 + 2 + 2;
        assert_eq!(&out[c_at..c_at + 2], &[1, 1]);
        assert_eq!(read_metadata(&mut out.as_slice(), false).unwrap(), fields);
    }

    #[test]
    fn pre_ga_metadata_has_absolute_ttls_and_no_header() {
        let mut body = vec![2u8];
        write_len(&mut body, 1_700_000_000_000).unwrap();
        write_string(&mut body, b"f", false).unwrap();
        write_string(&mut body, b"v", false).unwrap();
        body.push(0);
        write_string(&mut body, b"g", false).unwrap();
        write_string(&mut body, b"w", false).unwrap();
        assert_eq!(
            read_metadata(&mut body.as_slice(), true).unwrap(),
            vec![field("f", "v", 1_700_000_000_000), field("g", "w", 0)]
        );
    }

    #[test]
    fn metadata_deadlines_beyond_48_bits_are_corrupt() {
        let mut out = Vec::new();
        write_metadata(&mut out, &[field("a", "1", MAX_FIELD_DEADLINE)], false).unwrap();
        assert!(read_metadata(&mut out.as_slice(), false).is_ok());
        let mut out = Vec::new();
        write_metadata(&mut out, &[field("a", "1", MAX_FIELD_DEADLINE + 1)], false).unwrap();
        assert!(read_metadata(&mut out.as_slice(), false).is_err());
    }

    #[test]
    fn listpack_ex_checks_triplets_and_order() {
        let ok = listpack_encode(["a", "1", "5", "b", "2", "5", "c", "3", "9", "d", "4", "0"]);
        let deadlines: Vec<u64> = listpack_ex_fields(&ok)
            .unwrap()
            .iter()
            .map(|f| f.expire_ms)
            .collect();
        assert_eq!(deadlines, vec![5, 5, 9, 0]);
        let mut body = Vec::new();
        write_listpack_ex(&mut body, 77, &ok, true).unwrap();
        assert_eq!(
            read_listpack_ex(&mut body.as_slice(), false).unwrap(),
            (77, ok.clone())
        );
        // Type 23 has no header: the first deadline stands in for it.
        let mut body = Vec::new();
        write_string(&mut body, &ok, false).unwrap();
        assert_eq!(
            read_listpack_ex(&mut body.as_slice(), true).unwrap(),
            (5, ok)
        );
        for bad in [
            listpack_encode(["a", "1"]),                     // not triplets
            listpack_encode(["a", "1", "x"]),                // deadline not an integer
            listpack_encode(["a", "1", "-1"]),               // negative
            listpack_encode(["a", "1", "281474976710656"]),  // past 48 bits
            listpack_encode(["a", "1", "9", "b", "2", "5"]), // decreasing
            listpack_encode(["a", "1", "0", "b", "2", "5"]), // a deadline after none
        ] {
            assert!(listpack_ex_fields(&bad).is_err(), "{bad:?}");
        }
    }
}
