//! A RESP value as a tree, and a decoder for every RESP2/RESP3 type.
//!
//! The server writes replies straight into output buffers (see [`crate::writer`]); this tree is
//! for the other direction: reading replies (test clients, the differential test harness, the Lua
//! bridge, which, like Redis, runs a command and parses what it wrote) and for the encode → decode
//! round-trip properties. [`decode_value`] follows the same contract as the request decoder:
//! `Ok(None)` until a whole value is present, zero-copy `Bytes` for strings.

use bytes::Bytes;
use std::fmt;

use crate::number::parse_i64;
use crate::writer::Writer;

/// Any RESP2 or RESP3 value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `+OK`
    Simple(Bytes),
    /// `-ERR message` (the whole line after `-`, code included).
    Error(Bytes),
    /// `:42`
    Integer(i64),
    /// `$3\r\nabc`
    Bulk(Bytes),
    /// RESP3 `_`, or RESP2's null bulk `$-1`.
    Null,
    /// RESP2's null array `*-1` (RESP3 has only `_`).
    NullArray,
    Array(Vec<Value>),
    /// RESP3 `%`: pairs in order.
    Map(Vec<(Value, Value)>),
    /// RESP3 `~`
    Set(Vec<Value>),
    /// RESP3 `,`
    Double(f64),
    /// RESP3 `#t` / `#f`
    Boolean(bool),
    /// RESP3 `(`: the digits as sent.
    BigNumber(Bytes),
    /// RESP3 `=`: a three-letter format (`txt`, `mkd`) and the text.
    Verbatim {
        format: [u8; 3],
        text: Bytes,
    },
    /// RESP3 `>`: an out-of-band message (pub/sub, invalidation).
    Push(Vec<Value>),
    /// RESP3 `|`: attributes that decorate the value that follows them.
    Attribute {
        attributes: Vec<(Value, Value)>,
        value: Box<Value>,
    },
    /// RESP3 `!` blob error.
    BlobError(Bytes),
}

/// A byte stream that is not valid RESP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueError(pub String);

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid RESP: {}", self.0)
    }
}

impl std::error::Error for ValueError {}

/// Nesting deeper than this is refused rather than risking the stack on hostile input.
const MAX_DEPTH: usize = 512;

/// Decodes one value from the start of `buf`. Returns the value and the number of bytes it used,
/// or `Ok(None)` if `buf` holds only part of it.
pub fn decode_value(buf: &Bytes) -> Result<Option<(Value, usize)>, ValueError> {
    let mut cursor = 0;
    match parse(buf, &mut cursor, 0)? {
        Some(value) => Ok(Some((value, cursor))),
        None => Ok(None),
    }
}

fn parse(buf: &Bytes, pos: &mut usize, depth: usize) -> Result<Option<Value>, ValueError> {
    if depth > MAX_DEPTH {
        return Err(ValueError("nesting too deep".into()));
    }
    let Some(&kind) = buf.get(*pos) else {
        return Ok(None);
    };
    let Some(line) = read_line(buf, *pos + 1) else {
        return Ok(None);
    };
    let body = &buf[*pos + 1..line];
    let after_line = line + 2;
    let value = match kind {
        b'+' => {
            *pos = after_line;
            Value::Simple(buf.slice(line - body.len()..line))
        }
        b'-' => {
            *pos = after_line;
            Value::Error(buf.slice(line - body.len()..line))
        }
        b':' => {
            let n = parse_i64(body).ok_or_else(|| ValueError("bad integer".into()))?;
            *pos = after_line;
            Value::Integer(n)
        }
        b'_' => {
            if !body.is_empty() {
                return Err(ValueError("bad null".into()));
            }
            *pos = after_line;
            Value::Null
        }
        b'#' => {
            let b = match body {
                b"t" => true,
                b"f" => false,
                _ => return Err(ValueError("bad boolean".into())),
            };
            *pos = after_line;
            Value::Boolean(b)
        }
        b',' => {
            let d = parse_double(body).ok_or_else(|| ValueError("bad double".into()))?;
            *pos = after_line;
            Value::Double(d)
        }
        b'(' => {
            let digits = body.strip_prefix(b"-").unwrap_or(body);
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(ValueError("bad big number".into()));
            }
            *pos = after_line;
            Value::BigNumber(buf.slice(line - body.len()..line))
        }
        b'$' | b'=' | b'!' => {
            let len = parse_i64(body).ok_or_else(|| ValueError("bad length".into()))?;
            if len == -1 && kind == b'$' {
                *pos = after_line;
                return Ok(Some(Value::Null));
            }
            if len < 0 {
                return Err(ValueError("negative length".into()));
            }
            let len = len as usize;
            let end = after_line
                .checked_add(len)
                .ok_or_else(|| ValueError("length".into()))?;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(ValueError("bulk not terminated by CRLF".into()));
            }
            let payload = buf.slice(after_line..end);
            *pos = end + 2;
            match kind {
                b'$' => Value::Bulk(payload),
                b'!' => Value::BlobError(payload),
                _ => {
                    if payload.len() < 4 || payload[3] != b':' {
                        return Err(ValueError("bad verbatim string".into()));
                    }
                    Value::Verbatim {
                        format: [payload[0], payload[1], payload[2]],
                        text: payload.slice(4..),
                    }
                }
            }
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let count = parse_i64(body).ok_or_else(|| ValueError("bad count".into()))?;
            if count == -1 && kind == b'*' {
                *pos = after_line;
                return Ok(Some(Value::NullArray));
            }
            if count < 0 {
                return Err(ValueError("negative count".into()));
            }
            let mut cursor = after_line;
            let paired = kind == b'%' || kind == b'|';
            let items = if paired {
                count as usize * 2
            } else {
                count as usize
            };
            // Every element takes at least 3 bytes, so a count the buffer cannot hold means more
            // input is needed; this also stops huge announced counts from allocating up front.
            let mut elements = Vec::with_capacity(items.min((buf.len() - cursor) / 3 + 1));
            for _ in 0..items {
                match parse(buf, &mut cursor, depth + 1)? {
                    Some(v) => elements.push(v),
                    None => return Ok(None),
                }
            }
            let value = match kind {
                b'*' => Value::Array(elements),
                b'~' => Value::Set(elements),
                b'>' => Value::Push(elements),
                _ => {
                    let mut pairs = Vec::with_capacity(elements.len() / 2);
                    let mut it = elements.into_iter();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        pairs.push((k, v));
                    }
                    if kind == b'%' {
                        Value::Map(pairs)
                    } else {
                        match parse(buf, &mut cursor, depth + 1)? {
                            Some(inner) => Value::Attribute {
                                attributes: pairs,
                                value: Box::new(inner),
                            },
                            None => return Ok(None),
                        }
                    }
                }
            };
            *pos = cursor;
            value
        }
        other => return Err(ValueError(format!("unknown type byte {other:#04x}"))),
    };
    Ok(Some(value))
}

/// Position of the `\r` ending the line that starts at `from`, if the whole `\r\n` is present.
fn read_line(buf: &[u8], from: usize) -> Option<usize> {
    let rel = buf.get(from..)?.windows(2).position(|w| w == b"\r\n")?;
    Some(from + rel)
}

fn parse_double(body: &[u8]) -> Option<f64> {
    match body {
        b"inf" | b"+inf" => Some(f64::INFINITY),
        b"-inf" => Some(f64::NEG_INFINITY),
        b"nan" | b"-nan" => Some(f64::NAN),
        _ => std::str::from_utf8(body).ok()?.parse().ok(),
    }
}

impl Value {
    /// Writes this value with `writer`, down-converting RESP3 types for RESP2 writers.
    pub fn write_to(&self, writer: &mut Writer<'_>) {
        match self {
            Value::Simple(s) => writer.simple(s),
            Value::Error(e) => writer.error_line(e),
            Value::BlobError(e) => writer.error_line(e),
            Value::Integer(n) => writer.integer(*n),
            Value::Bulk(b) => writer.bulk(b),
            Value::Null => writer.null(),
            Value::NullArray => writer.null_array(),
            Value::Array(items) => {
                writer.array(items.len());
                items.iter().for_each(|v| v.write_to(writer));
            }
            Value::Set(items) => {
                writer.set(items.len());
                items.iter().for_each(|v| v.write_to(writer));
            }
            Value::Push(items) => {
                writer.push(items.len());
                items.iter().for_each(|v| v.write_to(writer));
            }
            Value::Map(pairs) => {
                writer.map(pairs.len());
                for (k, v) in pairs {
                    k.write_to(writer);
                    v.write_to(writer);
                }
            }
            Value::Double(d) => writer.double(*d),
            Value::Boolean(b) => writer.boolean(*b),
            Value::BigNumber(n) => writer.big_number(n),
            Value::Verbatim { format, text } => writer.verbatim(format, text),
            Value::Attribute { attributes, value } => {
                if writer.is_resp3() {
                    writer.attribute(attributes.len());
                    for (k, v) in attributes {
                        k.write_to(writer);
                        v.write_to(writer);
                    }
                }
                value.write_to(writer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(input: &[u8]) -> Value {
        let bytes = Bytes::copy_from_slice(input);
        let (value, used) = decode_value(&bytes).unwrap().unwrap();
        assert_eq!(used, input.len());
        value
    }

    #[test]
    fn every_type() {
        assert_eq!(decode(b"+OK\r\n"), Value::Simple(Bytes::from_static(b"OK")));
        assert_eq!(
            decode(b"-ERR x\r\n"),
            Value::Error(Bytes::from_static(b"ERR x"))
        );
        assert_eq!(decode(b":-5\r\n"), Value::Integer(-5));
        assert_eq!(decode(b"$0\r\n\r\n"), Value::Bulk(Bytes::new()));
        assert_eq!(decode(b"$-1\r\n"), Value::Null);
        assert_eq!(decode(b"*-1\r\n"), Value::NullArray);
        assert_eq!(decode(b"_\r\n"), Value::Null);
        assert_eq!(decode(b"#t\r\n"), Value::Boolean(true));
        assert_eq!(decode(b",1.5\r\n"), Value::Double(1.5));
        assert_eq!(decode(b",-inf\r\n"), Value::Double(f64::NEG_INFINITY));
        assert_eq!(
            decode(b"(123\r\n"),
            Value::BigNumber(Bytes::from_static(b"123"))
        );
        assert_eq!(
            decode(b"=7\r\ntxt:abc\r\n"),
            Value::Verbatim {
                format: *b"txt",
                text: Bytes::from_static(b"abc")
            }
        );
        assert_eq!(
            decode(b"%1\r\n+a\r\n:1\r\n"),
            Value::Map(vec![(
                Value::Simple(Bytes::from_static(b"a")),
                Value::Integer(1)
            )])
        );
        assert_eq!(
            decode(b"|1\r\n+k\r\n+v\r\n:3\r\n"),
            Value::Attribute {
                attributes: vec![(
                    Value::Simple(Bytes::from_static(b"k")),
                    Value::Simple(Bytes::from_static(b"v"))
                )],
                value: Box::new(Value::Integer(3)),
            }
        );
        assert_eq!(
            decode(b">1\r\n~1\r\n:1\r\n"),
            Value::Push(vec![Value::Set(vec![Value::Integer(1)])])
        );
    }

    #[test]
    fn partial_values_need_more() {
        let whole = b"*2\r\n$3\r\nabc\r\n:1\r\n";
        for cut in 0..whole.len() {
            let bytes = Bytes::copy_from_slice(&whole[..cut]);
            assert_eq!(decode_value(&bytes), Ok(None), "cut at {cut}");
        }
    }

    #[test]
    fn garbage_is_an_error() {
        for bad in [
            &b"?\r\n"[..],
            b":x\r\n",
            b"$3\r\nabcd\r\n",
            b"#x\r\n",
            b"$-2\r\n",
        ] {
            assert!(
                decode_value(&Bytes::copy_from_slice(bad)).is_err(),
                "{bad:?}"
            );
        }
    }
}
