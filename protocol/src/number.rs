//! Redis's strict integer parsing (`string2ll`), shared by the protocol (lengths) and the server
//! (every integer argument).
//!
//! Redis accepts exactly the canonical decimal form: an optional `-`, no `+`, no leading zeros
//! (except a lone `0`), no spaces, no overflow. Clients rely on `"01"` and `" 1"` being rejected, so
//! this is not `str::parse`, which accepts `+1` and `01`.

/// Parses `bytes` as Redis's `string2ll` does; `None` for anything but a canonical i64.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes {
        [] => return None,
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    // The first digit must be 1..9: this rejects "", "-", "-0", "00", "01".
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    if digits.len() > 19 {
        return None;
    }
    // Accumulate as a negative number so that i64::MIN (whose magnitude is one more than
    // i64::MAX) parses without overflow.
    let mut value: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_sub((b - b'0') as i64)?;
    }
    if negative {
        Some(value)
    } else {
        value.checked_neg()
    }
}

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
