//! Redis 7.0's textual form of doubles: C's `printf("%.17g")`.
//!
//! Redis 7.0 formats every double reply (ZSCORE, ZADD INCR, RESP3 doubles, RESP2 bulk scores) with
//! `%.17g`, so `0.1` is sent as `0.10000000000000001`. Clients compare these strings, so we
//! reproduce the C rules exactly: 17 significant digits, correctly rounded (ties to even, as glibc
//! does and as Rust's exact formatting also does), scientific notation when the decimal exponent is
//! below -4 or at least 17, trailing zeros removed, a two-digit minimum exponent, and `inf`/`-inf`/
//! `nan` spelled as glibc spells them.

/// Appends `%.17g` of `value` to `out`.
pub fn push_g17(out: &mut Vec<u8>, value: f64) {
    push_g(out, value, 17)
}

/// Returns `%.17g` of `value` as a string.
pub fn format_g17(value: f64) -> String {
    let mut out = Vec::with_capacity(24);
    push_g17(&mut out, value);
    String::from_utf8(out).expect("%g output is ASCII")
}

/// Appends C's `%.{precision}g` of `value` to `out` (precision ≥ 1).
pub fn push_g(out: &mut Vec<u8>, value: f64, precision: usize) {
    if value.is_nan() {
        out.extend_from_slice(if value.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
        return;
    }
    if value.is_infinite() {
        out.extend_from_slice(if value < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    let precision = precision.max(1);
    // Fast path: integral values print as plain integers while the exponent stays below the
    // precision (scores and counters are usually whole numbers).
    if value.fract() == 0.0 && value.abs() < 1e15 && precision >= 16 {
        if value == 0.0 && value.is_sign_negative() {
            out.push(b'-');
        }
        out.extend_from_slice(itoa::Buffer::new().format(value as i64).as_bytes());
        return;
    }
    push_g_general(out, value, precision)
}

/// `%g` of a finite `value` by way of its correctly rounded scientific form.
fn push_g_general(out: &mut Vec<u8>, value: f64, precision: usize) {
    // Scientific form with `precision` significant digits gives us both the correctly rounded
    // digits and the decimal exponent after rounding, which is what %g uses to pick a style.
    // Written into a stack buffer: no allocation.
    let mut buf = [0u8; 64];
    let len = {
        use std::io::Write;
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        write!(cursor, "{:.*e}", precision - 1, value).expect("fits in 64 bytes");
        cursor.position() as usize
    };
    let sci = std::str::from_utf8(&buf[..len]).expect("ASCII");
    let (mantissa, exponent) = sci.split_once('e').expect("{:e} always has an exponent");
    let exponent: i32 = exponent.parse().expect("exponent is an integer");
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa),
    };
    let mut digit_buf = [0u8; 64];
    let mut n = 0;
    for b in mantissa.bytes().filter(|b| *b != b'.') {
        digit_buf[n] = b;
        n += 1;
    }
    let digits = &digit_buf[..n];
    if negative {
        out.push(b'-');
    }
    if exponent < -4 || exponent >= precision as i32 {
        // d.ddd…e±XX with trailing zeros of the fraction removed.
        out.push(digits[0]);
        let fraction = trim_trailing_zeros(&digits[1..]);
        if !fraction.is_empty() {
            out.push(b'.');
            out.extend_from_slice(fraction);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(magnitude.to_string().as_bytes());
    } else if exponent >= 0 {
        let int_len = exponent as usize + 1;
        out.extend_from_slice(&digits[..int_len]);
        let fraction = trim_trailing_zeros(&digits[int_len..]);
        if !fraction.is_empty() {
            out.push(b'.');
            out.extend_from_slice(fraction);
        }
    } else {
        out.extend_from_slice(b"0.");
        for _ in 0..(-exponent - 1) {
            out.push(b'0');
        }
        out.extend_from_slice(trim_trailing_zeros(digits));
    }
}

fn trim_trailing_zeros(digits: &[u8]) -> &[u8] {
    let end = digits.iter().rposition(|d| *d != b'0').map_or(0, |i| i + 1);
    &digits[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_c_printf() {
        // Expected strings produced by glibc's printf("%.17g").
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (-2.5, "-2.5"),
            (100.0, "100"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (1e-300, "1e-300"),
            (1e300, "1.0000000000000001e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "4.9406564584124654e-324"),
            (2f64.powi(-25), "2.9802322387695312e-08"),
            (3.0000000000000004, "3.0000000000000004"),
            (-42.0, "-42"),
            (999999999999999.0, "999999999999999"),
            (1e15, "1000000000000000"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_g17(*value), *expected, "value {value:e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn integral_fast_path_agrees_with_the_general_rule(n in -999_999_999_999_999i64..=999_999_999_999_999) {
            let (mut fast, mut general) = (Vec::new(), Vec::new());
            push_g17(&mut fast, n as f64);
            push_g_general(&mut general, n as f64, 17);
            proptest::prop_assert_eq!(fast, general);
        }
    }

    #[test]
    fn other_precisions() {
        let mut out = Vec::new();
        push_g(&mut out, 1.23456, 3);
        assert_eq!(out, b"1.23");
        out.clear();
        push_g(&mut out, 12345.0, 3);
        assert_eq!(out, b"1.23e+04");
    }
}

mod grisu;

/// Appends a double as Redis 8 formats replies (`d2string`): an integral value within half
/// the range of a `long long` as an integer, `0`/`-0`, `nan`, `inf`; otherwise `fpconv_dtoa`'s
/// digits (Grisu2: they read back as the same double, and are the shortest such digits for
/// all but a few doubles, see [`grisu`]), written plainly while the number stays
/// within a few places of its digits (`0.00001`, `123456789012345680000`) and in `1.5e-7` /
/// `1e+20` form beyond.
pub fn push_shortest(out: &mut Vec<u8>, value: f64) {
    if value.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    const HALF_RANGE: f64 = (i64::MAX / 2) as f64;
    if value.fract() == 0.0 && (-HALF_RANGE..=HALF_RANGE).contains(&value) {
        if value == 0.0 && value.is_sign_negative() {
            out.extend_from_slice(b"-0");
        } else {
            out.extend_from_slice((value as i64).to_string().as_bytes());
        }
        return;
    }
    if value.is_sign_negative() {
        out.push(b'-');
    }
    let a = value.abs();
    if a.is_infinite() {
        out.extend_from_slice(b"inf");
        return;
    }
    let (digits, k) = grisu::digits(a);
    let n = digits.len() as i32;
    let exp = k + n - 1;
    let shown_exp = (k + n - 1).abs();
    if k >= 0 && shown_exp < n + 7 {
        out.extend_from_slice(&digits);
        out.extend(std::iter::repeat_n(b'0', k as usize));
    } else if k < 0 && (k > -7 || shown_exp < 4) {
        let offset = n + k;
        if offset <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-offset) as usize));
            out.extend_from_slice(&digits);
        } else {
            out.extend_from_slice(&digits[..offset as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[offset as usize..]);
        }
    } else {
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        out.extend_from_slice(exp.abs().to_string().as_bytes());
    }
}

#[cfg(test)]
mod shortest_tests {
    use super::push_shortest;

    #[test]
    fn formats_as_redis_8_does() {
        // Each pair: ZADD of the input, then ZSCORE's reply from Redis 8.2.3.
        for (v, want) in [
            (0.00001, "0.00001"),
            (1e20, "1e+20"),
            (1e15, "1000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (1.5e-7, "1.5e-7"),
            (100.0, "100"),
            (3.0000000000000004, "3.0000000000000004"),
            (1e300, "1e+300"),
            (5e-324, "5e-324"),
            (1234567.125, "1234567.125"),
            (0.992125928401947, "0.992125928401947"),
            (1e18, "1000000000000000000"),
            (1e19, "1e+19"),
            (12e18, "1.2e+19"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-6, "1.5e-6"),
            (123456e-10, "1.23456e-5"),
            (1.5e-5, "0.000015"),
            // Grisu2 gives 17 digits where 16 would read back as the same double.
            (0.4442592263221741, "0.44425922632217407"),
            (0.4534907937049866, "0.45349079370498657"),
            (0.3573307394981384, "0.35733073949813843"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (-2.5e-300, "-2.5e-300"),
        ] {
            let mut out = Vec::new();
            push_shortest(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }

    /// Grisu2's text reads back as the same double, in at most 17 digits, and is Rust's
    /// shortest text but for a few doubles. (110,582 texts of this test, sent to Redis 8.2.3
    /// by ZADD and read back by ZSCORE, came back byte for byte.)
    #[test]
    fn round_trips_and_is_nearly_shortest() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut longer = 0;
        for i in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Random bits, and doubles that come from floats (as vector set scores do).
            let v = if i % 2 == 0 {
                f64::from_bits(x)
            } else {
                f32::from_bits(x as u32) as f64
            };
            if !v.is_finite() || v.fract() == 0.0 {
                continue;
            }
            let mut out = Vec::new();
            push_shortest(&mut out, v);
            let text = String::from_utf8(out).unwrap();
            assert_eq!(text.parse::<f64>().unwrap(), v, "{text}");
            let digits = |t: &str| {
                let m = t.split('e').next().unwrap();
                m.trim_start_matches(['-', '0', '.'])
                    .chars()
                    .filter(char::is_ascii_digit)
                    .count()
            };
            let shortest = format!("{:e}", v.abs());
            let (ours, best) = (digits(&text), digits(&shortest));
            assert!(ours >= best && ours <= 17, "{text} vs {shortest}");
            longer += (ours > best) as u32;
        }
        assert!(
            longer > 0 && longer < 2_000,
            "{longer} longer than the shortest"
        );
    }
}
