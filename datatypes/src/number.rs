//! Integers as Redis writes them in text: [`parse_i64`] is Redis's strict `string2ll` (the
//! canonical decimal form only: an optional `-`, no `+`, no leading zeros except a lone `0`, no
//! spaces, no overflow) and [`format_i64`] its inverse. The protocol parses lengths with it, the
//! server every integer argument, and the integer encodings (intset, `int` strings) decide with it
//! whether a value is an integer at all — so they can never disagree.

/// Redis's `string2ll`: the integer `bytes` spells in canonical form, if any. Accepted: `0`, or an
/// optional `-` followed by digits without a leading zero, within the range of `i64`.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes {
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    // The first digit must be 1..9: this rejects "", "-", "-0", "00" and "01".
    if !matches!(digits.first(), Some(b'1'..=b'9')) || digits.len() > 19 {
        return None;
    }
    // Accumulate negatively so that i64::MIN, whose magnitude exceeds i64::MAX, fits.
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

/// Longest decimal form of an `i64` (`-9223372036854775808`).
pub const I64_TEXT_MAX: usize = 20;

/// Writes the decimal form of `value` at the end of `buf` and returns it (no allocation).
pub fn format_i64(value: i64, buf: &mut [u8; I64_TEXT_MAX]) -> &[u8] {
    let mut n = value.unsigned_abs();
    let mut at = I64_TEXT_MAX;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if value < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}
