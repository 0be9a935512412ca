//! Writing replies: every RESP2 and RESP3 type, straight into an output buffer.
//!
//! Command handlers describe their reply with these calls (as Redis's `addReply*` family does)
//! instead of building a tree, so a GET costs one copy of the value into the socket buffer. The
//! writer knows the connection's protocol version and down-converts RESP3 types for RESP2 clients
//! the way Redis 7.0 does: map → flat array of 2n, set and push → array, double → bulk string in
//! `%.17g` form, boolean → integer 1/0, big number and verbatim → bulk string, null → `$-1` (or
//! `*-1` where Redis sends a null array). Attributes have no RESP2 form and are left out.

use bytes::{BufMut, BytesMut};

use crate::float::push_g17;

/// The protocol a connection speaks (chosen with HELLO).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    #[default]
    Resp2,
    Resp3,
}

/// The text of an error as Redis's `addReplyErrorFormat` cleans it before writing: CR and LF cut
/// from both ends (`sdstrim(s, "\r\n")`), so an argument quoted last ends the line without the
/// spaces its line break would otherwise become (`EXPIRE k 10 "x\r\n"`: `ERR Unsupported option
/// x`). Those left inside become spaces when [`Writer::error_line`] writes the text.
pub fn trim_line_breaks(text: &[u8]) -> &[u8] {
    let is_break = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = text.iter().position(|b| !is_break(b)).unwrap_or(text.len());
    let end = text
        .iter()
        .rposition(|b| !is_break(b))
        .map_or(start, |i| i + 1);
    &text[start..end]
}

/// Appends replies to `buf` in the connection's protocol version.
pub struct Writer<'a> {
    buf: &'a mut BytesMut,
    version: Version,
    /// Doubles as Redis 7.2 and later reply them (`d2string`: shortest digits), not 7.0's
    /// `%.17g`.
    shortest_doubles: bool,
}

impl<'a> Writer<'a> {
    pub fn new(buf: &'a mut BytesMut, version: Version) -> Self {
        Writer {
            buf,
            version,
            shortest_doubles: false,
        }
    }

    /// The writer with doubles in shortest form ([`Writer::double`]) when `on`: how Redis 7.2
    /// and later reply them.
    pub fn shortest_doubles(mut self, on: bool) -> Self {
        self.shortest_doubles = on;
        self
    }

    /// Whether [`Writer::double`] writes the shortest form (Redis 7.2 and later).
    pub fn doubles_are_shortest(&self) -> bool {
        self.shortest_doubles
    }

    /// A double's text as this writer replies it: 7.0's `%.17g`, or 7.2's shortest digits.
    pub fn push_double_text(&self, text: &mut Vec<u8>, d: f64) {
        if self.shortest_doubles {
            crate::float::push_shortest(text, d);
        } else {
            push_g17(text, d);
        }
    }

    pub fn version(&self) -> Version {
        self.version
    }

    pub fn is_resp3(&self) -> bool {
        self.version == Version::Resp3
    }

    /// The bytes written so far (the whole buffer, including what was there before).
    pub fn buffer(&mut self) -> &mut BytesMut {
        self.buf
    }

    /// `+OK`
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// A simple string. Redis never sends CR or LF inside one; callers pass safe text.
    pub fn simple(&mut self, text: &[u8]) {
        self.buf.reserve(text.len() + 3);
        self.buf.put_u8(b'+');
        self.buf.extend_from_slice(text);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// An error line: `text` is everything after `-` (`ERR …`, `WRONGTYPE …`). CR and LF inside
    /// are replaced by spaces, as Redis does, so that an error can never break the framing. Those
    /// at the ends are kept (as spaces) too, as Redis's `addReplyErrorSdsSafe` keeps them: text
    /// Redis formats with `addReplyErrorFormat` goes through [`trim_line_breaks`] first.
    pub fn error_line(&mut self, text: &[u8]) {
        self.buf.reserve(text.len() + 3);
        self.buf.put_u8(b'-');
        for &b in text {
            self.buf
                .put_u8(if b == b'\r' || b == b'\n' { b' ' } else { b });
        }
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn integer(&mut self, n: i64) {
        self.prefixed(b':', n);
    }

    pub fn bulk(&mut self, data: &[u8]) {
        self.buf.reserve(data.len() + 16);
        self.prefixed(b'$', data.len() as i64);
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string holding the decimal form of `n` (Redis's `addReplyBulkLongLong`).
    pub fn bulk_integer(&mut self, n: i64) {
        let mut digits = itoa::Buffer::new();
        self.bulk(digits.format(n).as_bytes());
    }

    /// A missing value: RESP2 `$-1`, RESP3 `_`.
    pub fn null(&mut self) {
        self.buf.extend_from_slice(match self.version {
            Version::Resp2 => b"$-1\r\n",
            Version::Resp3 => b"_\r\n",
        });
    }

    /// A missing aggregate: RESP2 `*-1`, RESP3 `_`.
    pub fn null_array(&mut self) {
        self.buf.extend_from_slice(match self.version {
            Version::Resp2 => b"*-1\r\n",
            Version::Resp3 => b"_\r\n",
        });
    }

    pub fn array(&mut self, len: usize) {
        self.prefixed(b'*', len as i64);
    }

    /// A map of `len` pairs; the caller writes 2 × `len` values (key, value, key, value…).
    pub fn map(&mut self, len: usize) {
        match self.version {
            Version::Resp2 => self.prefixed(b'*', 2 * len as i64),
            Version::Resp3 => self.prefixed(b'%', len as i64),
        }
    }

    pub fn set(&mut self, len: usize) {
        match self.version {
            Version::Resp2 => self.prefixed(b'*', len as i64),
            Version::Resp3 => self.prefixed(b'~', len as i64),
        }
    }

    pub fn push(&mut self, len: usize) {
        match self.version {
            Version::Resp2 => self.prefixed(b'*', len as i64),
            Version::Resp3 => self.prefixed(b'>', len as i64),
        }
    }

    /// RESP3 attributes header: the caller writes 2 × `len` values, then the decorated value.
    /// Only valid on RESP3 writers; RESP2 has no way to send attributes.
    pub fn attribute(&mut self, len: usize) {
        debug_assert!(self.is_resp3(), "attributes do not exist in RESP2");
        self.prefixed(b'|', len as i64);
    }

    /// A double, formatted as Redis 7.0 does (`%.17g`, `inf`, `-inf`), or as 7.2 and later do
    /// when the writer says so ([`Writer::shortest_doubles`]).
    pub fn double(&mut self, d: f64) {
        let mut text = Vec::with_capacity(24);
        self.push_double_text(&mut text, d);
        match self.version {
            Version::Resp2 => self.bulk(&text),
            Version::Resp3 => {
                self.buf.put_u8(b',');
                self.buf.extend_from_slice(&text);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A double as Redis 8 formats it (shortest round-trip digits, see
    /// [`crate::float::push_shortest`]): module replies such as VSIM's scores and VEMB.
    pub fn double_shortest(&mut self, d: f64) {
        let mut text = Vec::with_capacity(24);
        crate::float::push_shortest(&mut text, d);
        match self.version {
            Version::Resp2 => self.bulk(&text),
            Version::Resp3 => {
                self.buf.put_u8(b',');
                self.buf.extend_from_slice(&text);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    pub fn boolean(&mut self, b: bool) {
        match self.version {
            Version::Resp2 => self.integer(b as i64),
            Version::Resp3 => self
                .buf
                .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" }),
        }
    }

    /// An arbitrary-precision integer given as its decimal digits.
    pub fn big_number(&mut self, digits: &[u8]) {
        match self.version {
            Version::Resp2 => self.bulk(digits),
            Version::Resp3 => {
                self.buf.put_u8(b'(');
                self.buf.extend_from_slice(digits);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A verbatim string with a three-letter format such as `txt`.
    pub fn verbatim(&mut self, format: &[u8; 3], text: &[u8]) {
        match self.version {
            Version::Resp2 => self.bulk(text),
            Version::Resp3 => {
                self.prefixed(b'=', text.len() as i64 + 4);
                self.buf.extend_from_slice(format);
                self.buf.put_u8(b':');
                self.buf.extend_from_slice(text);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Bytes that are already valid RESP for this connection.
    pub fn raw(&mut self, resp: &[u8]) {
        self.buf.extend_from_slice(resp);
    }

    fn prefixed(&mut self, kind: u8, n: i64) {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(n).as_bytes();
        self.buf.reserve(digits.len() + 3);
        self.buf.put_u8(kind);
        self.buf.extend_from_slice(digits);
        self.buf.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(version: Version, f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut buf = BytesMut::new();
        f(&mut Writer::new(&mut buf, version));
        buf.to_vec()
    }

    #[test]
    fn resp2_down_conversion() {
        use Version::Resp2;
        assert_eq!(written(Resp2, |w| w.map(2)), b"*4\r\n");
        assert_eq!(written(Resp2, |w| w.set(3)), b"*3\r\n");
        assert_eq!(written(Resp2, |w| w.push(3)), b"*3\r\n");
        assert_eq!(
            written(Resp2, |w| w.double(0.1)),
            b"$19\r\n0.10000000000000001\r\n"
        );
        assert_eq!(
            written(Resp2, |w| w.double(f64::INFINITY)),
            b"$3\r\ninf\r\n"
        );
        assert_eq!(written(Resp2, |w| w.boolean(true)), b":1\r\n");
        assert_eq!(written(Resp2, |w| w.null()), b"$-1\r\n");
        assert_eq!(written(Resp2, |w| w.null_array()), b"*-1\r\n");
        assert_eq!(written(Resp2, |w| w.big_number(b"123")), b"$3\r\n123\r\n");
        assert_eq!(
            written(Resp2, |w| w.verbatim(b"txt", b"hi")),
            b"$2\r\nhi\r\n"
        );
    }

    #[test]
    fn resp3_native_types() {
        use Version::Resp3;
        assert_eq!(written(Resp3, |w| w.map(2)), b"%2\r\n");
        assert_eq!(written(Resp3, |w| w.set(3)), b"~3\r\n");
        assert_eq!(written(Resp3, |w| w.push(1)), b">1\r\n");
        assert_eq!(written(Resp3, |w| w.double(1.5)), b",1.5\r\n");
        assert_eq!(
            written(Resp3, |w| w.double(f64::NEG_INFINITY)),
            b",-inf\r\n"
        );
        assert_eq!(written(Resp3, |w| w.boolean(false)), b"#f\r\n");
        assert_eq!(written(Resp3, |w| w.null()), b"_\r\n");
        assert_eq!(written(Resp3, |w| w.null_array()), b"_\r\n");
        assert_eq!(written(Resp3, |w| w.big_number(b"-12")), b"(-12\r\n");
        assert_eq!(
            written(Resp3, |w| w.verbatim(b"txt", b"hi")),
            b"=6\r\ntxt:hi\r\n"
        );
        assert_eq!(written(Resp3, |w| w.attribute(1)), b"|1\r\n");
    }

    #[test]
    fn scalars() {
        let v = Version::Resp2;
        assert_eq!(written(v, |w| w.ok()), b"+OK\r\n");
        assert_eq!(written(v, |w| w.integer(-42)), b":-42\r\n");
        assert_eq!(written(v, |w| w.bulk(b"")), b"$0\r\n\r\n");
        assert_eq!(written(v, |w| w.bulk_integer(17)), b"$2\r\n17\r\n");
        assert_eq!(
            written(v, |w| w.error_line(b"ERR a\r\nb")),
            b"-ERR a  b\r\n"
        );
        assert_eq!(written(v, |w| w.error_line(b"ERR a\r\n")), b"-ERR a  \r\n");
    }

    #[test]
    fn line_breaks_are_trimmed_from_both_ends_only() {
        assert_eq!(trim_line_breaks(b"ERR x\r\n"), b"ERR x");
        assert_eq!(trim_line_breaks(b"ERR x\n\r\r\n"), b"ERR x");
        assert_eq!(trim_line_breaks(b"\r\nERR x"), b"ERR x");
        assert_eq!(trim_line_breaks(b"ERR a\r\nb"), b"ERR a\r\nb");
        // A space ends the text: what comes before it stays.
        assert_eq!(trim_line_breaks(b"ERR x\r\n "), b"ERR x\r\n ");
        assert_eq!(trim_line_breaks(b"\r\n\r\n"), b"");
        assert_eq!(trim_line_breaks(b""), b"");
    }
}
