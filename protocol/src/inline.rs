//! Splitting an inline command line into arguments, with the quoting rules of Redis's
//! `sdssplitargs` (the same rules redis-cli uses for what you type).
//!
//! Arguments are separated by whitespace. Inside double quotes `\n \r \t \b \a \\ \"` and `\xHH`
//! escapes are decoded; inside single quotes only `\'` is. A closing quote must be followed by
//! whitespace or the end of the line, otherwise the line is rejected as having unbalanced quotes,
//! exactly as Redis does. Like the C original, a NUL byte ends the line.

/// Why a line could not be split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnbalancedQuotes;

/// Splits `line` into arguments; `Err` when quotes are unbalanced.
pub fn split_args(line: &[u8]) -> Result<Vec<Vec<u8>>, UnbalancedQuotes> {
    // Reading past the end yields 0, mirroring the C string's terminator.
    let at = |i: usize| -> u8 { line.get(i).copied().unwrap_or(0) };
    let mut args = Vec::new();
    let mut p = 0usize;
    loop {
        while at(p) != 0 && is_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Ok(args);
        }
        let mut current = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let c = at(p);
            if in_double {
                if c == b'\\' && at(p + 1) == b'x' && is_hex(at(p + 2)) && is_hex(at(p + 3)) {
                    current.push(hex_value(at(p + 2)) * 16 + hex_value(at(p + 3)));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    current.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    // The closing quote must be followed by a space or the end.
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return Err(UnbalancedQuotes);
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return Err(UnbalancedQuotes);
                } else {
                    current.push(c);
                }
            } else if in_single {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return Err(UnbalancedQuotes);
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return Err(UnbalancedQuotes);
                } else {
                    current.push(c);
                }
            } else {
                match c {
                    c if c == 0 || ends_unquoted_arg(c) => break,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    other => current.push(other),
                }
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        args.push(current);
    }
}

/// The characters that end an unquoted argument (the end of the line does too). Fewer than
/// [`is_space`]: a vertical tab or form feed inside an argument is kept, as in `sdssplitargs`.
pub(crate) fn ends_unquoted_arg(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

/// C's `isspace` in the "C" locale: what is skipped between arguments.
pub(crate) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

fn hex_value(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Result<Vec<String>, UnbalancedQuotes> {
        split_args(s.as_bytes()).map(|v| {
            v.into_iter()
                .map(|a| String::from_utf8(a).unwrap())
                .collect()
        })
    }

    #[test]
    fn plain_words() {
        assert_eq!(split("SET a b").unwrap(), ["SET", "a", "b"]);
        assert_eq!(split("  PING  ").unwrap(), ["PING"]);
        assert!(split("").unwrap().is_empty());
        assert!(split("   ").unwrap().is_empty());
    }

    #[test]
    fn double_quotes_and_escapes() {
        assert_eq!(split(r#"SET a "b c""#).unwrap(), ["SET", "a", "b c"]);
        assert_eq!(
            split(r#"SET "a\nb" "\x41\x4a""#).unwrap(),
            ["SET", "a\nb", "AJ"]
        );
        assert_eq!(split(r#""\q\"\\""#).unwrap(), ["q\"\\"]);
        assert_eq!(split(r#""""#).unwrap(), [""]);
        // \x with non-hex digits is an ordinary escape of 'x'.
        assert_eq!(split(r#""\xZZ""#).unwrap(), ["xZZ"]);
    }

    #[test]
    fn single_quotes() {
        assert_eq!(
            split(r"'a b' 'it\'s' '\n'").unwrap(),
            ["a b", "it's", "\\n"]
        );
    }

    #[test]
    fn quotes_inside_words_open_a_quoted_section() {
        assert_eq!(split(r#"ab"c d" e"#).unwrap(), ["abc d", "e"]);
    }

    #[test]
    fn unbalanced() {
        assert_eq!(split(r#"SET "a"#), Err(UnbalancedQuotes));
        assert_eq!(split(r#"SET "a"b"#), Err(UnbalancedQuotes));
        assert_eq!(split(r"SET 'a"), Err(UnbalancedQuotes));
        assert_eq!(split(r"SET 'a'b"), Err(UnbalancedQuotes));
    }

    #[test]
    fn nul_ends_the_line() {
        assert_eq!(
            split_args(b"GET a\0b c").unwrap(),
            vec![b"GET".to_vec(), b"a".to_vec()]
        );
    }
}
