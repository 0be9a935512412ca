//! The server side of RESP: turning a client's byte stream into commands.
//!
//! Clients send either arrays of bulk strings (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) or inline lines
//! (`GET k\r\n`, what `telnet` users type). [`RequestDecoder`] accepts both, incrementally: each call
//! consumes as many bytes of `buf` as form complete pieces, keeps the partial state of a large
//! multibulk request between calls (so a 100 MB value is not rescanned on every read), and returns
//! `Ok(None)` when it needs more bytes. Arguments are zero-copy slices of the read buffer.
//!
//! The limits and error texts are Redis 7.0's (`processMultibulkBuffer`/`processInlineBuffer` in
//! networking.c): 64 KB for a line without its newline, `proto-max-bulk-len` (512 MB by default)
//! for a bulk, stricter limits before authentication. Like Redis, the decoder checks that a `\r`
//! is followed by one more byte but does not insist that the byte is `\n`, and an array header of
//! `*0` or `*-1` is skipped silently. After an error the connection must be closed: the stream can
//! no longer be trusted.

use bytes::{Buf, Bytes, BytesMut};
use std::collections::VecDeque;
use std::fmt;

use crate::inline::{ends_unquoted_arg, is_space, split_args};
use crate::number::parse_i64;

/// Longest line (inline command, or a `*`/`$` header) Redis accepts without a newline.
pub const INLINE_MAX_SIZE: usize = 64 * 1024;
/// Redis's default `proto-max-bulk-len`.
pub const DEFAULT_MAX_BULK_LEN: usize = 512 * 1024 * 1024;
/// Most bytes reserved ahead of a bulk payload on the strength of its header alone.
const MAX_UPFRONT_RESERVE: usize = 16 * 1024 * 1024;
/// Before AUTH, Redis limits requests to 10 arguments...
const UNAUTHENTICATED_MAX_ARGS: i64 = 10;
/// ...and 16 KB per argument, so that an unauthenticated peer cannot make it allocate much.
const UNAUTHENTICATED_MAX_BULK: i64 = 16384;

/// A malformed request. `Display` gives Redis's text (without the `-ERR ` prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    TooBigInlineRequest,
    UnbalancedQuotes,
    TooBigMultibulkCount,
    InvalidMultibulkLength,
    UnauthenticatedMultibulkLength,
    TooBigBulkCount,
    ExpectedDollar(u8),
    InvalidBulkLength,
    UnauthenticatedBulkLength,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Protocol error: ")?;
        match self {
            ProtocolError::TooBigInlineRequest => f.write_str("too big inline request"),
            ProtocolError::UnbalancedQuotes => f.write_str("unbalanced quotes in request"),
            ProtocolError::TooBigMultibulkCount => f.write_str("too big mbulk count string"),
            ProtocolError::InvalidMultibulkLength => f.write_str("invalid multibulk length"),
            ProtocolError::UnauthenticatedMultibulkLength => {
                f.write_str("unauthenticated multibulk length")
            }
            ProtocolError::TooBigBulkCount => f.write_str("too big bulk count string"),
            ProtocolError::ExpectedDollar(got) => {
                // Redis prints the raw byte with %c; show it the same way when it is printable.
                write!(f, "expected '$', got '{}'", char::from(*got))
            }
            ProtocolError::InvalidBulkLength => f.write_str("invalid bulk length"),
            ProtocolError::UnauthenticatedBulkLength => f.write_str("unauthenticated bulk length"),
        }
    }
}

impl std::error::Error for ProtocolError {}

impl ProtocolError {
    /// The complete error line Redis sends, e.g. `-ERR Protocol error: invalid bulk length\r\n`.
    /// The byte of `ExpectedDollar` is sent raw, as Redis does.
    pub fn to_resp(&self) -> Vec<u8> {
        let mut out = b"-ERR Protocol error: ".to_vec();
        match self {
            ProtocolError::ExpectedDollar(got) => {
                out.extend_from_slice(b"expected '$', got '");
                out.push(*got);
                out.push(b'\'');
            }
            other => {
                let text = other.to_string();
                out.extend_from_slice(&text.as_bytes()["Protocol error: ".len()..]);
            }
        }
        out.extend_from_slice(b"\r\n");
        out
    }
}

/// Incremental request decoder; one per connection.
#[derive(Debug)]
pub struct RequestDecoder {
    pub(crate) max_bulk_len: usize,
    /// Arguments still expected by the multibulk request in progress (0 = none in progress).
    pending_args: usize,
    /// Length of the bulk whose header was read but whose payload has not arrived yet.
    pending_bulk: Option<usize>,
    args: Vec<Bytes>,
    /// An emptied argument vector handed back by the server ([`RequestDecoder::give_back`]),
    /// for the next request: a vector allocated and freed per request costs about as many
    /// instructions as parsing a short command.
    spare: Vec<Bytes>,
    /// Requests decoded ahead (`crate::ahead`), handed out before `buf` is read again.
    pub(crate) ahead: VecDeque<Vec<Bytes>>,
    /// The `proto-max-bulk-len` the queue was decoded under.
    pub(crate) ahead_max_bulk: usize,
    /// Emptied vectors for the queue's requests, the one `spare` being taken.
    pub(crate) ahead_spares: Vec<Vec<Bytes>>,
}

impl Default for RequestDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_BULK_LEN)
    }
}

impl RequestDecoder {
    pub fn new(max_bulk_len: usize) -> Self {
        RequestDecoder {
            max_bulk_len,
            pending_args: 0,
            pending_bulk: None,
            args: Vec::new(),
            spare: Vec::new(),
            ahead: VecDeque::new(),
            ahead_max_bulk: 0,
            ahead_spares: Vec::new(),
        }
    }

    /// Takes back a request's argument vector once the server is done with it (emptied here),
    /// to hold the next request's arguments. Vectors bigger than a typical request are dropped.
    #[inline]
    pub fn give_back(&mut self, mut args: Vec<Bytes>) {
        if args.capacity() <= 16 {
            args.clear();
            if self.spare.capacity() == 0 {
                self.spare = args;
            } else {
                self.keep_ahead_spare(args);
            }
        }
    }

    /// Changes `proto-max-bulk-len` (CONFIG SET applies it to open connections too).
    pub fn set_max_bulk_len(&mut self, max_bulk_len: usize) {
        self.max_bulk_len = max_bulk_len;
    }

    /// True while a request has been partly read, or requests decoded ahead wait.
    pub fn in_progress(&self) -> bool {
        self.pending_args > 0 || !self.ahead.is_empty()
    }

    /// Gives back the request in progress as bytes — its header and the arguments read so far,
    /// encoded again — and forgets it, so that a decoder can read it again from the start (a
    /// busy script finishing the request for an idle connection, see the server's `busy`).
    /// Empty when no multibulk request is in progress. Requests decoded ahead come back the
    /// same way (no request is partly read while they wait).
    pub fn take_partial(&mut self) -> BytesMut {
        let mut out = BytesMut::new();
        if !self.ahead.is_empty() {
            self.rewind_ahead(&mut out);
            return out;
        }
        if self.pending_args == 0 {
            return out;
        }
        let total = self.args.len() + self.pending_args;
        out.extend_from_slice(format!("*{total}\r\n").as_bytes());
        for arg in self.args.drain(..) {
            encode_bulk(&mut out, &arg);
        }
        if let Some(len) = self.pending_bulk.take() {
            out.extend_from_slice(format!("${len}\r\n").as_bytes());
        }
        self.pending_args = 0;
        out
    }

    /// The length of the bulk argument whose header was read and whose payload is awaited.
    #[inline]
    pub fn pending_bulk(&self) -> Option<usize> {
        self.pending_bulk
    }

    /// Bytes of the arguments of the request in progress read so far (or of the requests
    /// decoded ahead).
    pub fn partial_len(&self) -> usize {
        self.args.iter().map(|a| a.len()).sum::<usize>() + self.ahead_len()
    }

    /// Decodes the next command from `buf`, consuming its bytes. `authenticated` selects Redis's
    /// stricter limits for clients that still have to AUTH.
    ///
    /// Returns `Ok(Some(args))` with at least one argument, `Ok(None)` when more bytes are needed
    /// (everything usable has been consumed and remembered), or the protocol error to report.
    pub fn decode(
        &mut self,
        buf: &mut BytesMut,
        authenticated: bool,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        if let Some(args) = self.pop_ahead(buf, authenticated) {
            return Ok(Some(args));
        }
        loop {
            if self.pending_args == 0 {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                if first != b'*' {
                    match decode_inline(buf, &mut self.spare)? {
                        None => return Ok(None),
                        Some(args) if args.is_empty() => {
                            // A blank line: keep the vector for the next request.
                            self.spare = args;
                            continue;
                        }
                        Some(args) => return Ok(Some(args)),
                    }
                }
                match self.start_multibulk(buf, authenticated)? {
                    None => return Ok(None),
                    Some(0) => continue,
                    Some(_) => {}
                }
            }
            return self.continue_multibulk(buf, authenticated);
        }
    }

    /// Reads the `*<count>\r\n` header. Returns the count (0 when the request is empty and skipped).
    fn start_multibulk(
        &mut self,
        buf: &mut BytesMut,
        authenticated: bool,
    ) -> Result<Option<usize>, ProtocolError> {
        let (count, line_end) = match short_header(buf) {
            Some(header) => header,
            None => {
                let Some(line_end) = find_header_end(buf, ProtocolError::TooBigMultibulkCount)?
                else {
                    return Ok(None);
                };
                match parse_i64(&buf[1..line_end]) {
                    Some(n) if n <= i32::MAX as i64 => (n, line_end),
                    _ => return Err(ProtocolError::InvalidMultibulkLength),
                }
            }
        };
        if count > UNAUTHENTICATED_MAX_ARGS && !authenticated {
            return Err(ProtocolError::UnauthenticatedMultibulkLength);
        }
        buf.advance(line_end + 2);
        if count <= 0 {
            return Ok(Some(0));
        }
        self.pending_args = count as usize;
        // Do not trust the header for the allocation: a peer may announce 2^31 arguments.
        let wanted = self.pending_args.min(1024);
        self.args = if self.spare.capacity() >= wanted {
            std::mem::take(&mut self.spare)
        } else {
            Vec::with_capacity(wanted)
        };
        Ok(Some(self.pending_args))
    }

    fn continue_multibulk(
        &mut self,
        buf: &mut BytesMut,
        authenticated: bool,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        while self.pending_args > 0 {
            let len = match self.pending_bulk {
                Some(len) => len,
                None => {
                    let (len, line_end) = match short_header(buf) {
                        Some(header) if buf[0] == b'$' => header,
                        _ => {
                            let Some(line_end) =
                                find_header_end(buf, ProtocolError::TooBigBulkCount)?
                            else {
                                return Ok(None);
                            };
                            if buf[0] != b'$' {
                                return Err(ProtocolError::ExpectedDollar(buf[0]));
                            }
                            match parse_i64(&buf[1..line_end]) {
                                Some(n) => (n, line_end),
                                None => return Err(ProtocolError::InvalidBulkLength),
                            }
                        }
                    };
                    if len < 0 || len as u64 > self.max_bulk_len as u64 {
                        return Err(ProtocolError::InvalidBulkLength);
                    }
                    if len > UNAUTHENTICATED_MAX_BULK && !authenticated {
                        return Err(ProtocolError::UnauthenticatedBulkLength);
                    }
                    buf.advance(line_end + 2);
                    let len = len as usize;
                    self.pending_bulk = Some(len);
                    // Make room for the payload at once instead of growing step by step, but
                    // do not let a header alone make us allocate hundreds of megabytes: beyond
                    // 16 MB the buffer grows as the bytes actually arrive.
                    if buf.len() < len + 2 {
                        buf.reserve((len + 2 - buf.len()).min(MAX_UPFRONT_RESERVE));
                    }
                    len
                }
            };
            if buf.len() < len + 2 {
                return Ok(None);
            }
            let arg = buf.split_to(len).freeze();
            buf.advance(2);
            self.args.push(arg);
            self.pending_bulk = None;
            self.pending_args -= 1;
        }
        Ok(Some(std::mem::take(&mut self.args)))
    }
}

/// Appends `args` as a multibulk request.
pub(crate) fn encode_request(out: &mut BytesMut, args: &[Bytes]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        encode_bulk(out, arg);
    }
}

/// Appends `arg` as a bulk string.
pub(crate) fn encode_bulk(out: &mut BytesMut, arg: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
    out.extend_from_slice(arg);
    out.extend_from_slice(b"\r\n");
}

/// The common header line, read without searching for its end first: the type byte, 1 to 9
/// digits with no leading zero (or a lone `0`), `\r` and one more byte. Returns the number and
/// the index of the `\r`, exactly what [`find_header_end`] and `parse_i64` give for such a
/// line; `None` leaves anything else (signs, leading zeros, longer numbers, a line not complete
/// yet, a NUL) to them. Every request has one header per argument plus one, so this is a
/// measurable part of a small command's decoding.
#[inline(always)]
pub(crate) fn short_header(buf: &[u8]) -> Option<(i64, usize)> {
    let mut value: i64 = 0;
    let mut end = 1;
    while end <= 9 && end < buf.len() && buf[end].is_ascii_digit() {
        value = value * 10 + i64::from(buf[end] - b'0');
        end += 1;
    }
    let digits = end - 1;
    if digits == 0 || end + 1 >= buf.len() || buf[end] != b'\r' || (buf[1] == b'0' && digits > 1) {
        return None;
    }
    Some((value, end))
}

/// Finds the `\r` ending a `*`/`$` header line and checks one more byte is there. `Ok(None)` =
/// wait for more; `too_big` when 64 KB arrived without a `\r`.
fn find_header_end(buf: &BytesMut, too_big: ProtocolError) -> Result<Option<usize>, ProtocolError> {
    match memchr(b'\r', buf) {
        None if buf.len() > INLINE_MAX_SIZE => Err(too_big),
        None => Ok(None),
        Some(pos) if pos + 1 >= buf.len() => Ok(None),
        Some(pos) => Ok(Some(pos)),
    }
}

/// An inline request (`PING`, `SET k v` typed into telnet, redis-benchmark's PING_INLINE): the
/// line up to `\n`, split as redis-cli's quoting splits it (Redis's `sdssplitargs`). A line
/// without quotes, the usual one, is cut into slices of the input buffer (no copy, no allocation
/// beyond `args`, the decoder's spare vector); a quoted one goes through [`split_args`].
fn decode_inline(
    buf: &mut BytesMut,
    spare: &mut Vec<Bytes>,
) -> Result<Option<Vec<Bytes>>, ProtocolError> {
    let Some(newline) = memchr(b'\n', buf) else {
        if buf.len() > INLINE_MAX_SIZE {
            return Err(ProtocolError::TooBigInlineRequest);
        }
        return Ok(None);
    };
    let mut line_len = newline;
    if line_len > 0 && buf[line_len - 1] == b'\r' {
        line_len -= 1;
    }
    let quoted = buf[..line_len].iter().any(|&c| c == b'"' || c == b'\'');
    if quoted {
        let split = split_args(&buf[..line_len]).map_err(|_| ProtocolError::UnbalancedQuotes)?;
        buf.advance(newline + 1);
        let mut args = std::mem::take(spare);
        args.clear();
        args.extend(split.into_iter().map(Bytes::from));
        return Ok(Some(args));
    }
    // `memchr` stopped at no NUL before the newline, so the line has none: the unquoted rules of
    // `split_args` are all that apply. Leading blanks are C's `isspace`; an argument ends at a
    // space, tab, `\r` or `\n` only (a vertical tab or form feed inside it is kept).
    let line = buf.split_to(newline + 1).freeze();
    let mut args = std::mem::take(spare);
    args.clear();
    let mut p = 0;
    loop {
        while p < line_len && is_space(line[p]) {
            p += 1;
        }
        if p >= line_len {
            return Ok(Some(args));
        }
        let start = p;
        while p < line_len && !ends_unquoted_arg(line[p]) {
            p += 1;
        }
        args.push(line.slice(start..p));
        // The character that ended the argument is skipped, as `split_args` does.
        p += 1;
    }
}

/// Finds `needle` the way Redis's `strchr` over the query buffer does: a NUL byte ends the search.
/// So a header or inline line with a NUL before its terminator never completes (until the 64 KB
/// limit turns it into an error), exactly as with Redis.
fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack
        .iter()
        .position(|&b| b == needle || b == 0)
        .filter(|&pos| haystack[pos] == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(args) = decoder.decode(&mut buf, true)? {
            out.push(args.into_iter().map(|a| a.to_vec()).collect());
        }
        Ok(out)
    }

    fn cmd(parts: &[&str]) -> Vec<Vec<u8>> {
        parts.iter().map(|p| p.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_and_inline_mixed() {
        let got =
            decode_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\n*0\r\n*-1\r\nSET a \"b c\"\n")
                .unwrap();
        assert_eq!(
            got,
            vec![
                cmd(&["GET", "k"]),
                cmd(&["PING"]),
                cmd(&["SET", "a", "b c"])
            ]
        );
    }

    #[test]
    fn binary_payloads_are_kept_whole() {
        let got = decode_all(b"*2\r\n$3\r\nSET\r\n$4\r\n\0\r\n\xff\r\n").unwrap();
        assert_eq!(got, vec![vec![b"SET".to_vec(), b"\0\r\n\xff".to_vec()]]);
    }

    #[test]
    fn byte_by_byte_delivery_gives_the_same_commands() {
        let input = b"*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n$5\r\nworld\r\nPING\r\n";
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for &b in input.iter() {
            buf.extend_from_slice(&[b]);
            while let Some(args) = decoder.decode(&mut buf, true).unwrap() {
                out.push(args);
            }
        }
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], vec![&b"SET"[..], b"hello", b"world"]);
        assert_eq!(out[1], vec![&b"PING"[..]]);
    }

    #[test]
    fn redis_error_texts() {
        let err = |input: &[u8]| decode_all(input).unwrap_err().to_string();
        assert_eq!(err(b"*x\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(
            err(b"*3000000000\r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            err(b"*1\r\n+PING\r\n"),
            "Protocol error: expected '$', got '+'"
        );
        assert_eq!(err(b"*1\r\n$-1\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(
            err(b"*1\r\n$536870913\r\n"),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(err(b"*1\r\n$01\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(
            err(b"SET \"a\r\n"),
            "Protocol error: unbalanced quotes in request"
        );
        let long = vec![b'a'; INLINE_MAX_SIZE + 1];
        assert_eq!(err(&long), "Protocol error: too big inline request");
        let mut long_count = b"*".to_vec();
        long_count.extend(vec![b'1'; INLINE_MAX_SIZE + 1]);
        assert_eq!(
            err(&long_count),
            "Protocol error: too big mbulk count string"
        );
        let mut long_bulk = b"*1\r\n$".to_vec();
        long_bulk.extend(vec![b'1'; INLINE_MAX_SIZE + 1]);
        assert_eq!(err(&long_bulk), "Protocol error: too big bulk count string");
    }

    #[test]
    fn unauthenticated_limits() {
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(&b"*11\r\n"[..]);
        assert_eq!(
            decoder.decode(&mut buf, false),
            Err(ProtocolError::UnauthenticatedMultibulkLength)
        );
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(&b"*1\r\n$16385\r\n"[..]);
        assert_eq!(
            decoder.decode(&mut buf, false),
            Err(ProtocolError::UnauthenticatedBulkLength)
        );
    }

    /// A vector given back is reused for the next request (its allocation, not its contents),
    /// and one too small for the next request is not.
    #[test]
    fn given_back_vectors_hold_the_next_request() {
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::new();
        buf.extend_from_slice(
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n",
        );
        let first = decoder.decode(&mut buf, true).unwrap().unwrap();
        assert_eq!(first, vec![Bytes::from("GET"), Bytes::from("k")]);
        let mut bigger = first;
        bigger.reserve(8);
        let reused_bigger = bigger.as_ptr();
        decoder.give_back(bigger);
        let second = decoder.decode(&mut buf, true).unwrap().unwrap();
        assert_eq!(
            second,
            vec![Bytes::from("SET"), Bytes::from("k"), Bytes::from("v")]
        );
        assert_eq!(
            second.as_ptr(),
            reused_bigger,
            "the spare vector holds the request"
        );
        decoder.give_back(vec![Bytes::from("x")]);
        let mut buf = BytesMut::from(&b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"[..]);
        let third = decoder.decode(&mut buf, true).unwrap().unwrap();
        assert_eq!(third, vec![Bytes::from("ECHO"), Bytes::from("hi")]);
    }

    #[test]
    fn incomplete_input_waits() {
        let mut decoder = RequestDecoder::default();
        for partial in [
            &b"*"[..],
            b"*1",
            b"*1\r",
            b"*1\r\n$",
            b"*1\r\n$4\r\nPI",
            b"PIN",
        ] {
            let mut buf = BytesMut::from(partial);
            assert_eq!(RequestDecoder::default().decode(&mut buf, true), Ok(None));
        }
        let mut buf = BytesMut::from(&b"*1\r\n$4\r\nPING\r"[..]);
        assert_eq!(decoder.decode(&mut buf, true), Ok(None));
        buf.extend_from_slice(b"\n");
        assert_eq!(
            decoder.decode(&mut buf, true).unwrap().unwrap(),
            vec![&b"PING"[..]]
        );
    }

    #[test]
    fn a_nul_byte_hides_the_line_end_as_in_redis() {
        assert_eq!(
            decode_all(b"PI\0NG\r\n").unwrap(),
            Vec::<Vec<Vec<u8>>>::new()
        );
        assert_eq!(
            decode_all(b"*1\0\r\n$4\r\nPING\r\n").unwrap(),
            Vec::<Vec<Vec<u8>>>::new()
        );
        // Only the headers are searched; a NUL inside a payload is data.
        assert_eq!(
            decode_all(b"*1\r\n$1\r\n\0\r\n").unwrap(),
            vec![vec![vec![0u8]]]
        );
    }

    #[test]
    fn the_byte_after_cr_is_not_checked() {
        assert_eq!(
            decode_all(b"*1\rx$4\r\nPINGxyPING\r\n").unwrap(),
            vec![cmd(&["PING"]), cmd(&["PING"])]
        );
    }

    #[test]
    fn resp_form_of_errors() {
        assert_eq!(
            ProtocolError::ExpectedDollar(0xff).to_resp(),
            b"-ERR Protocol error: expected '$', got '\xff'\r\n".to_vec()
        );
        assert_eq!(
            ProtocolError::InvalidBulkLength.to_resp(),
            b"-ERR Protocol error: invalid bulk length\r\n".to_vec()
        );
    }

    #[test]
    fn take_partial_gives_back_what_a_fresh_decoder_reads_the_same() {
        let request = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n";
        for cut in 0..request.len() {
            let mut decoder = RequestDecoder::default();
            let mut buf = BytesMut::from(&request[..cut]);
            assert_eq!(decoder.decode(&mut buf, true), Ok(None), "cut at {cut}");
            let mut again = decoder.take_partial();
            assert!(!decoder.in_progress());
            again.extend_from_slice(&buf);
            again.extend_from_slice(&request[cut..]);
            assert_eq!(&again[..], &request[..], "cut at {cut}");
        }
    }

    proptest::proptest! {
        /// The header fast path answers only where the general path (find the line's end,
        /// parse the number) gives the same number and end, and takes the usual headers.
        #[test]
        fn short_header_agrees_with_the_general_path(
            kind in proptest::sample::select(b"*$".to_vec()),
            rest in proptest::collection::vec(
                proptest::sample::select(b"0123456789-+\r\n\0x".to_vec()), 0..14),
        ) {
            // Both paths are only asked about a line that starts with its type byte.
            let mut buf = BytesMut::from(&[kind][..]);
            buf.extend_from_slice(&rest);
            if let Some((value, end)) = short_header(&buf) {
                let general = find_header_end(&buf, ProtocolError::TooBigBulkCount);
                proptest::prop_assert_eq!(general, Ok(Some(end)));
                proptest::prop_assert_eq!(parse_i64(&buf[1..end]), Some(value));
            }
        }
    }

    proptest::proptest! {
        /// An inline line decodes to what `split_args` (the general splitter, Redis's
        /// `sdssplitargs`) gives for it, whether or not it takes the unquoted fast path, and the
        /// line is consumed whole; what follows it stays.
        #[test]
        fn inline_lines_split_as_split_args_does(
            line in proptest::collection::vec(
                proptest::sample::select(b"ab \t\r\x0b\x0c\"'\\x".to_vec()), 0..24),
        ) {
            // Inline requests are lines that do not start with `*`.
            let mut input = BytesMut::from(&b"x"[..]);
            input.extend_from_slice(&line);
            input.extend_from_slice(b"\r\n*1\r\n");
            let text = &input[..input.len() - 6];
            let expected = split_args(text);
            let mut buf = input.clone();
            let got = RequestDecoder::default().decode(&mut buf, true);
            match expected {
                Err(_) => proptest::prop_assert_eq!(got, Err(ProtocolError::UnbalancedQuotes)),
                Ok(args) => {
                    let got: Vec<Vec<u8>> = got.unwrap().unwrap().iter().map(|a| a.to_vec()).collect();
                    proptest::prop_assert_eq!(got, args);
                    proptest::prop_assert_eq!(&buf[..], b"*1\r\n");
                }
            }
        }
    }

    #[test]
    fn unquoted_inline_arguments_are_slices_of_the_line() {
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(&b"  SET\tk\x0bv  val \r\nPING\n"[..]);
        let args = decoder.decode(&mut buf, true).unwrap().unwrap();
        assert_eq!(
            args,
            vec![
                Bytes::from("SET"),
                Bytes::from("k\x0bv"),
                Bytes::from("val")
            ]
        );
        decoder.give_back(args);
        let args = decoder.decode(&mut buf, true).unwrap().unwrap();
        assert_eq!(args, vec![Bytes::from("PING")]);
        assert!(buf.is_empty());
    }

    #[test]
    fn short_header_takes_the_usual_lines_and_leaves_the_rest() {
        assert_eq!(short_header(b"*3\r\n"), Some((3, 2)));
        assert_eq!(short_header(b"$0\r\n"), Some((0, 2)));
        assert_eq!(short_header(b"$123456789\r\n"), Some((123_456_789, 10)));
        for general in [
            &b"$1234567890\r\n"[..],
            b"$01\r\n",
            b"$-1\r\n",
            b"$+1\r\n",
            b"$\r\n",
            b"$3\r",
            b"$3",
            b"$3\0\r\n",
        ] {
            assert_eq!(short_header(general), None, "{general:?}");
        }
    }
}
