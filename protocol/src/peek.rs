//! A look at the requests waiting in a read buffer without consuming them.
//!
//! The server asks the CPU to fetch the key-table entries of a pipeline's keys before it runs
//! the requests, so that their cache misses overlap; this finds those keys. It is a hint, not a
//! decoder: it reads the multibulk form with short headers (what clients send) and stops at
//! anything else — an inline request, a request not complete yet, a header the fast path of
//! [`crate::RequestDecoder`] leaves to its general path — and never reports an error. What it
//! reports is never executed, so a mistake costs only a useless prefetch.

use crate::request::short_header;

/// Requests with more arguments than this end the walk: walking them costs more than a miss.
const MAX_ARGUMENTS: i64 = 64;

/// Calls `each` with the second argument (the first key, for most commands) of each complete
/// multibulk request at the start of `buf`, for at most `max` requests, in order; returns how
/// many requests it walked. A request of one argument is walked without a call.
pub fn second_arguments<'a>(buf: &'a [u8], max: usize, mut each: impl FnMut(&'a [u8])) -> usize {
    let mut pos = 0;
    let mut walked = 0;
    while walked < max {
        let Some(end) = walk_request(buf, pos, &mut each) else {
            break;
        };
        pos = end;
        walked += 1;
    }
    walked
}

/// Walks the request at `pos`, giving its second argument to `each`; returns where the next
/// request starts, or `None` when there is no complete short-header multibulk request at `pos`.
fn walk_request<'a>(buf: &'a [u8], pos: usize, each: &mut impl FnMut(&'a [u8])) -> Option<usize> {
    let rest = buf.get(pos..)?;
    if rest.first() != Some(&b'*') {
        return None;
    }
    let (count, header_end) = short_header(rest)?;
    if !(1..=MAX_ARGUMENTS).contains(&count) {
        return None;
    }
    let mut at = pos + header_end + 2;
    let mut second = None;
    for i in 0..count {
        let rest = buf.get(at..)?;
        if rest.first() != Some(&b'$') {
            return None;
        }
        let (len, header_end) = short_header(rest)?;
        let start = at + header_end + 2;
        let end = start.checked_add(len as usize)?;
        // The payload and the two bytes after it must be there, as for the decoder.
        if end.checked_add(2)? > buf.len() {
            return None;
        }
        if i == 1 {
            second = Some(start..end);
        }
        at = end + 2;
    }
    if let Some(range) = second {
        each(&buf[range]);
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    fn seconds(buf: &[u8], max: usize) -> (usize, Vec<Vec<u8>>) {
        let mut found = Vec::new();
        let walked = second_arguments(buf, max, |k| found.push(k.to_vec()));
        (walked, found)
    }

    #[test]
    fn finds_the_keys_of_a_pipeline_and_stops_at_the_limit() {
        let mut buf = encode(&[b"GET", b"k1"]);
        buf.extend(encode(&[b"PING"]));
        buf.extend(encode(&[b"SET", b"k2", b"v"]));
        buf.extend(encode(&[b"INCR", b"k3"]));
        assert_eq!(
            seconds(&buf, 16),
            (4, vec![b"k1".to_vec(), b"k2".to_vec(), b"k3".to_vec()])
        );
        assert_eq!(seconds(&buf, 2), (2, vec![b"k1".to_vec()]));
    }

    #[test]
    fn stops_at_an_incomplete_request_an_inline_one_or_a_long_header() {
        let whole = encode(&[b"GET", b"key"]);
        for cut in 0..whole.len() {
            assert_eq!(seconds(&whole[..cut], 16), (0, vec![]), "cut at {cut}");
        }
        let mut buf = encode(&[b"GET", b"a"]);
        buf.extend_from_slice(b"GET b\r\n");
        buf.extend(encode(&[b"GET", b"c"]));
        assert_eq!(seconds(&buf, 16), (1, vec![b"a".to_vec()]));
        // A leading zero is the general path's to judge: no hint.
        assert_eq!(seconds(b"*02\r\n$3\r\nGET\r\n$1\r\nk\r\n", 16).0, 0);
        assert_eq!(seconds(b"*0\r\n", 16).0, 0);
    }

    proptest! {
        #[test]
        fn any_bytes_are_walked_without_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let (walked, found) = seconds(&bytes, 16);
            prop_assert!(found.len() <= walked);
        }

        #[test]
        fn encoded_requests_give_their_second_arguments(
            requests in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 1..5),
                0..20),
            tail in proptest::collection::vec(any::<u8>(), 0..8),
        ) {
            let mut buf = Vec::new();
            for r in &requests {
                let args: Vec<&[u8]> = r.iter().map(Vec::as_slice).collect();
                buf.extend(encode(&args));
            }
            // Whatever follows the complete requests (a partial one, garbage) is not walked
            // unless it is itself a complete request.
            let (walked, found) = seconds(&buf, usize::MAX);
            prop_assert_eq!(walked, requests.len());
            let expected: Vec<Vec<u8>> = requests.iter().filter_map(|r| r.get(1).cloned()).collect();
            prop_assert_eq!(found, expected);
            buf.extend(tail);
            let (walked_with_tail, _) = seconds(&buf, usize::MAX);
            prop_assert!(walked_with_tail >= requests.len());
        }
    }
}
