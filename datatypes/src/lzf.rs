//! LZF, the compression Redis uses for interior quicklist nodes (`list-compress-depth`) and for
//! long strings in RDB files and DUMP payloads.
//!
//! The codec is the `lzf-rust` crate (safe Rust, liblzf's raw token format, liblzf's default
//! compressor); this module only gives it the two shapes Redis needs, so that the quicklist and
//! a later RDB reader and writer share one place: compress only when the result fits a budget
//! (Redis passes its output limit to `lzf_compress` and gives up on "no gain"), and decompress
//! to a length known in advance (both a quicklist node and an RDB string record it). The format
//! is what matters for compatibility: whatever Redis's lzf wrote, [`decompress`] reads
//! (tests/lzf_compat.rs checks it on a DUMP payload of redis-server's).

/// `input` compressed, if that takes at most `max_len` bytes; None if it does not fit (or
/// `input` is empty, which liblzf does not compress either).
pub fn compress(input: &[u8], max_len: usize) -> Option<Vec<u8>> {
    if input.is_empty() || max_len == 0 {
        return None;
    }
    let mut out = vec![0u8; max_len];
    let n = lzf_rust::compress(input, &mut out).ok()?;
    if n == 0 {
        return None;
    }
    out.truncate(n);
    Some(out)
}

/// The `len` bytes that `input` decompresses to; None if `input` is not valid LZF or does not
/// produce exactly `len` bytes.
pub fn decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut out = vec![0u8; len];
    match lzf_rust::decompress(input, &mut out) {
        Ok(n) if n == len => Some(out),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn repetitive_input_shrinks_and_comes_back() {
        let input = b"element element element element element element element".repeat(20);
        let packed = compress(&input, input.len()).expect("compressible");
        assert!(packed.len() < input.len() / 4, "{}", packed.len());
        assert_eq!(decompress(&packed, input.len()).unwrap(), input);
        // The wrong length is an error, not a short or padded result.
        assert_eq!(decompress(&packed, input.len() - 1), None);
        assert_eq!(decompress(&packed, input.len() + 1), None);
    }

    #[test]
    fn a_budget_too_small_gives_up() {
        let input: Vec<u8> = (0..=255u8).collect();
        assert_eq!(
            compress(&input, 100),
            None,
            "random-looking bytes do not shrink"
        );
        assert_eq!(compress(b"", 10), None);
    }

    proptest! {
        #[test]
        fn round_trips(input in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..3000)) {
            // A budget a little over the input always suffices for liblzf's format.
            if let Some(packed) = compress(&input, input.len() + input.len() / 16 + 64) {
                prop_assert_eq!(decompress(&packed, input.len()).unwrap(), input);
            } else {
                prop_assert!(input.is_empty());
            }
        }
    }
}
