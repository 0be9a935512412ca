//! Redis's strict integer parsing (`string2ll`, from `embedis_datatypes::number`), used by the
//! protocol for lengths and by the server for every integer argument.
//!
//! Redis accepts exactly the canonical decimal form: an optional `-`, no `+`, no leading zeros
//! (except a lone `0`), no spaces, no overflow. Clients rely on `"01"` and `" 1"` being rejected, so
//! this is not `str::parse`, which accepts `+1` and `01`.

pub use embedis_datatypes::number::parse_i64;

/// Appends the decimal form of `value` to `out` without allocating.
pub fn push_i64(out: &mut Vec<u8>, value: i64) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(value).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_canonical_integers() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
