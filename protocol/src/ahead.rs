//! Decoding a pipeline's next requests before the one in hand has run.
//!
//! The server asks the CPU to fetch the key-table entries of a pipeline's keys before it runs the
//! requests, so that their cache misses overlap; to know the keys it needs the requests decoded.
//! [`RequestDecoder::decode_ahead`] decodes them into a queue the decoder keeps, and
//! [`RequestDecoder::decode`] hands that queue out first, in order: every request is still decoded
//! once and run in the order it came.
//!
//! Decoding ahead must never answer differently from decoding one request after the other, where
//! the request before may change what the decoder accepts (AUTH lifts the unauthenticated limits,
//! RESET can bring them back, CONFIG SET changes `proto-max-bulk-len`). So it takes only what
//! [`RequestDecoder::decode`] would return whatever those requests do: complete multibulk
//! requests of at most [`AHEAD_MAX_ARGS`] arguments with short headers, within the bulk limit, from
//! a client already authenticated. It stops at anything else — an inline request, one not complete
//! yet, one the general path would judge (an error, a long header) — consuming nothing of it, and
//! leaves it to `decode`. When the limits tighten while requests wait in the queue, the queue is
//! encoded back in front of the input and decoded again under the new limits
//! ([`RequestDecoder::rewind_ahead`]).

use crate::request::{encode_request, short_header, RequestDecoder};
use bytes::{Buf, Bytes, BytesMut};

/// Most arguments a request decoded ahead may have; a longer one ends the look ahead (its keys
/// are many, and a miss on them is a small part of its cost).
pub const AHEAD_MAX_ARGS: usize = 16;

/// Where each argument of a request decoded ahead lies in the buffer.
type ArgRanges = [(usize, usize); AHEAD_MAX_ARGS];

/// The complete short-header multibulk request at the start of `buf` with at most
/// [`AHEAD_MAX_ARGS`] arguments, none longer than `max_bulk`: its argument count, with their
/// places in `args`, and its end; `None` for anything else.
fn complete_request(buf: &[u8], max_bulk: usize, args: &mut ArgRanges) -> Option<(usize, usize)> {
    if buf.first() != Some(&b'*') {
        return None;
    }
    let (count, header_end) = short_header(buf)?;
    if !(1..=AHEAD_MAX_ARGS as i64).contains(&count) {
        return None;
    }
    let count = count as usize;
    let mut at = header_end + 2;
    for slot in &mut args[..count] {
        let rest = buf.get(at..)?;
        if rest.first() != Some(&b'$') {
            return None;
        }
        let (len, header_end) = short_header(rest)?;
        if len as u64 > max_bulk as u64 {
            return None;
        }
        // At most nine digits: no overflow.
        let start = at + header_end + 2;
        let end = start + len as usize;
        // The payload and the two bytes after it must be there, as for `decode`.
        if end + 2 > buf.len() {
            return None;
        }
        *slot = (start, end);
        at = end + 2;
    }
    Some((count, at))
}

impl RequestDecoder {
    /// Decodes up to `max` more requests from `buf` into the decoder's queue, which
    /// [`RequestDecoder::decode`] hands out before reading `buf` again; returns how many it
    /// queued. Only between requests (none partly read) and for an authenticated client; see the
    /// module's opening for what it takes.
    pub fn decode_ahead(&mut self, buf: &mut BytesMut, authenticated: bool, max: usize) -> usize {
        if !authenticated || self.in_progress() {
            return 0;
        }
        self.ahead_max_bulk = self.max_bulk_len;
        let mut queued = 0;
        let mut ranges: ArgRanges = [(0, 0); AHEAD_MAX_ARGS];
        while queued < max {
            let Some((count, end)) = complete_request(buf, self.max_bulk_len, &mut ranges) else {
                break;
            };
            let mut args = self.ahead_spares.pop().unwrap_or_default();
            args.reserve(count);
            // Each argument cut from the buffer as `decode` cuts it: one reference to the
            // shared buffer apiece (an atomic increment each; a slice of the whole request
            // took two more, and cost more time than the instructions it saved).
            let mut at = 0;
            for &(start, arg_end) in &ranges[..count] {
                buf.advance(start - at);
                args.push(buf.split_to(arg_end - start).freeze());
                at = arg_end;
            }
            buf.advance(end - at);
            self.ahead.push_back(args);
            queued += 1;
        }
        queued
    }

    /// Whether requests decoded ahead wait to be handed out.
    #[inline]
    pub fn has_ahead(&self) -> bool {
        !self.ahead.is_empty()
    }

    /// The requests decoded ahead and not handed out yet, in order.
    pub fn ahead(&self) -> impl Iterator<Item = &[Bytes]> {
        self.ahead.iter().map(Vec::as_slice)
    }

    /// The next request decoded ahead, if any, unless the limits tightened since (then the queue
    /// goes back in front of `buf`, to be decoded again).
    #[inline]
    pub(crate) fn pop_ahead(
        &mut self,
        buf: &mut BytesMut,
        authenticated: bool,
    ) -> Option<Vec<Bytes>> {
        if self.ahead.is_empty() {
            return None;
        }
        if !authenticated || self.max_bulk_len < self.ahead_max_bulk {
            self.rewind_ahead(buf);
            return None;
        }
        self.ahead.pop_front()
    }

    /// Encodes the queue back in front of `buf`, emptying it.
    pub(crate) fn rewind_ahead(&mut self, buf: &mut BytesMut) {
        let mut front = BytesMut::new();
        for args in self.ahead.drain(..) {
            encode_request(&mut front, &args);
        }
        front.extend_from_slice(buf);
        *buf = front;
    }

    /// Bytes of the arguments waiting in the queue.
    pub(crate) fn ahead_len(&self) -> usize {
        self.ahead.iter().flatten().map(Bytes::len).sum()
    }

    /// Keeps an emptied vector for a request decoded ahead, when the one spare is taken.
    pub(crate) fn keep_ahead_spare(&mut self, args: Vec<Bytes>) {
        if self.ahead_spares.len() < AHEAD_SPARES {
            self.ahead_spares.push(args);
        }
    }
}

/// Vectors kept for the queue: one batch's worth.
const AHEAD_SPARES: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProtocolError;
    use bytes::Bytes;
    use proptest::prelude::*;

    fn encode(args: &[&[u8]]) -> Vec<u8> {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let mut out = BytesMut::new();
        encode_request(&mut out, &args);
        out.to_vec()
    }

    type Decoded = Result<Option<Vec<Vec<u8>>>, ProtocolError>;

    /// Decodes `input` to its end (or its error), looking ahead by `ahead` before each request
    /// when it is not 0; returns what each `decode` gave and the bytes left.
    fn decode_with(input: &[u8], ahead: usize, max_bulk: usize) -> (Vec<Decoded>, Vec<u8>) {
        let mut decoder = RequestDecoder::new(max_bulk);
        let mut buf = BytesMut::from(input);
        let mut seen = Vec::new();
        loop {
            if ahead > 0 && decoder.ahead.is_empty() {
                decoder.decode_ahead(&mut buf, true, ahead);
            }
            let got = decoder.decode(&mut buf, true);
            let done = !matches!(got, Ok(Some(_)));
            seen.push(got.map(|r| r.map(|args| args.iter().map(|a| a.to_vec()).collect())));
            if done {
                return (seen, buf.to_vec());
            }
        }
    }

    #[test]
    fn a_queue_is_handed_out_in_order_and_stops_where_decode_must_judge() {
        let mut input = encode(&[b"GET", b"a"]);
        input.extend(encode(&[b"SET", b"b", b"v"]));
        input.extend_from_slice(b"PING\r\n");
        input.extend(encode(&[b"GET", b"c"]));
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(&input[..]);
        assert_eq!(decoder.decode_ahead(&mut buf, true, 16), 2);
        let keys: Vec<&[u8]> = decoder.ahead().map(|args| &args[1][..]).collect();
        assert_eq!(keys, [&b"a"[..], b"b"]);
        // The inline request stopped the look ahead; nothing of it was consumed.
        assert_eq!(&buf[..6], b"PING\r\n");
        assert!(decoder.in_progress());
        assert_eq!(decoder.partial_len(), "GETaSETbv".len());
        assert_eq!(
            decode_with(&input, 16, 1 << 20),
            decode_with(&input, 0, 1 << 20)
        );
        // Nothing is looked ahead for a client that still has to authenticate.
        let mut buf = BytesMut::from(&input[..]);
        assert_eq!(
            RequestDecoder::default().decode_ahead(&mut buf, false, 16),
            0
        );
    }

    #[test]
    fn tightened_limits_decode_the_queue_again() {
        let long = [b'x'; 20];
        let mut input = encode(&[b"GET", b"a"]);
        input.extend(encode(&[b"SET", b"b", &long]));
        // proto-max-bulk-len lowered under the queue: the long bulk is refused as if read now.
        let mut decoder = RequestDecoder::new(100);
        let mut buf = BytesMut::from(&input[..]);
        assert_eq!(decoder.decode_ahead(&mut buf, true, 16), 2);
        decoder.set_max_bulk_len(10);
        assert_eq!(
            decoder.decode(&mut buf, true).unwrap().unwrap()[1],
            &b"a"[..]
        );
        assert_eq!(
            decoder.decode(&mut buf, true),
            Err(ProtocolError::InvalidBulkLength)
        );
        // RESET made the client unauthenticated again: its limits apply to the rest.
        let many: Vec<&[u8]> = vec![b"x"; 11];
        let mut input = encode(&[b"RESET"]);
        input.extend(encode(&many));
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(&input[..]);
        assert_eq!(decoder.decode_ahead(&mut buf, true, 16), 2);
        assert!(decoder.decode(&mut buf, true).unwrap().is_some());
        assert_eq!(
            decoder.decode(&mut buf, false),
            Err(ProtocolError::UnauthenticatedMultibulkLength)
        );
    }

    #[test]
    fn a_hand_over_takes_the_queue_back_as_bytes() {
        let mut input = encode(&[b"GET", b"a"]);
        input.extend(encode(&[b"INCR", b"b"]));
        let mut decoder = RequestDecoder::default();
        let mut buf = BytesMut::from(&input[..]);
        decoder.decode_ahead(&mut buf, true, 16);
        assert!(buf.is_empty());
        assert_eq!(&decoder.take_partial()[..], &input[..]);
        assert!(!decoder.in_progress());
    }

    /// Requests, a few of them malformed, long or inline, cut anywhere.
    fn stream() -> impl Strategy<Value = Vec<u8>> {
        let arg = proptest::collection::vec(any::<u8>(), 0..12);
        let request = proptest::collection::vec(arg, 1..20);
        let piece = prop_oneof![
            8 => request.prop_map(|r| {
                let args: Vec<&[u8]> = r.iter().map(Vec::as_slice).collect();
                encode(&args)
            }),
            1 => Just(b"PING\r\n".to_vec()),
            1 => Just(b"*0\r\n".to_vec()),
            1 => proptest::collection::vec(
                proptest::sample::select(b"*$0123\r\nx-".to_vec()), 0..10),
        ];
        (
            proptest::collection::vec(piece, 0..12),
            any::<proptest::sample::Index>(),
        )
            .prop_map(|(pieces, cut)| {
                let all = pieces.concat();
                let keep = if all.is_empty() {
                    0
                } else {
                    cut.index(all.len() + 1)
                };
                all[..keep].to_vec()
            })
    }

    proptest! {
        /// Looking ahead, by any amount, never changes what `decode` returns nor what it leaves.
        #[test]
        fn looking_ahead_decodes_what_decode_alone_does(
            input in stream(),
            ahead in 1usize..20,
            max_bulk in proptest::sample::select(vec![4usize, 1 << 20]),
        ) {
            prop_assert_eq!(decode_with(&input, ahead, max_bulk), decode_with(&input, 0, max_bulk));
        }
    }
}
