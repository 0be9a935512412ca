//! LZF, the compression Redis uses for interior quicklist nodes (`list-compress-depth`) and for
//! long strings in RDB files and DUMP payloads.
//!
//! Redis's files and payloads are meant to be byte-identical to Redis's (FUNCTION DUMP already
//! is, an RDB writer will be), so the compressor reproduces the choices of the liblzf 3.6 that
//! Redis carries: its 16-bit hash table with the "very fast" hash, its rehashing after a match,
//! its conservative room checks. The LZF crates (`lzf-rust`, the deprecated `lzf`) follow a later
//! liblzf whose hash differs, so they write other (valid) bytes; hence our own. [`compress`]
//! stops as `lzf_compress` does when the output would pass a limit; [`decompress`] reads any
//! valid LZF stream to a length known in advance (a quicklist node and an RDB string both record
//! it). tests/lzf_compat.rs checks both directions, and equal bytes, against redis-server.

const LZF_HASH_LOG: u32 = 16;
const LZF_MAX_LITERAL: usize = 1 << 5;
const LZF_MAX_OFFSET: usize = 1 << 13;
const LZF_MAX_REFERENCE: usize = (1 << 8) + (1 << 3);

/// liblzf's hash of the three bytes folded into `h` (its "very fast" variant).
fn lzf_index(h: u32) -> usize {
    ((h >> (3 * 8 - LZF_HASH_LOG)).wrapping_sub(h.wrapping_mul(5)) & ((1 << LZF_HASH_LOG) - 1))
        as usize
}

/// LZF-compresses `input` into at most `limit` bytes, choosing as liblzf does; `None` when it
/// does not fit. Literal runs are up to 32 bytes (a header byte `len-1`); a back reference holds
/// its length minus 2 (in 3 bits, or 7 plus an extra byte) and an offset minus 1 up to 8 KiB.
pub fn compress(input: &[u8], limit: usize) -> Option<Vec<u8>> {
    if input.is_empty() || limit == 0 {
        return None;
    }
    let len = input.len();
    // Positions are stored plus one, so that zero means "never seen".
    let mut table = vec![0u32; 1 << LZF_HASH_LOG];
    let mut out: Vec<u8> = Vec::with_capacity(limit + 1);
    // `run_start` is where the pending literal run's header byte goes.
    let mut lit = 0usize;
    out.push(0);
    let mut run_start = 0usize;
    let mut ip = 0usize;
    let first = |p: usize| (u32::from(input[p]) << 8) | u32::from(input[p + 1]);
    let next = |v: u32, p: usize| (v << 8) | u32::from(input[p + 2]);
    let mut hval = if len >= 2 { first(0) } else { 0 };
    while len >= 3 && ip < len - 2 {
        hval = next(hval, ip);
        let slot = lzf_index(hval);
        let seen = table[slot];
        table[slot] = ip as u32 + 1;
        let candidate = (seen as usize).checked_sub(1).filter(|&r| {
            r > 0
                && r < ip
                && ip - r - 1 < LZF_MAX_OFFSET
                && input[r + 2] == input[ip + 2]
                && input[r] == input[ip]
                && input[r + 1] == input[ip + 1]
        });
        if let Some(r) = candidate {
            let offset = ip - r - 1;
            let maxlen = (len - ip - 2).min(LZF_MAX_REFERENCE);
            // Room for the reference (and the header of the run after it).
            if out.len() + 3 + 1 >= limit && out.len() - usize::from(lit == 0) + 3 + 1 >= limit {
                return None;
            }
            out[run_start] = (lit as u8).wrapping_sub(1);
            if lit == 0 {
                out.pop();
            }
            // liblzf compares 16 bytes unconditionally when the match may be long.
            let mut m = 2usize;
            let mut done = false;
            if maxlen > 16 {
                for _ in 0..16 {
                    m += 1;
                    if input[r + m] != input[ip + m] {
                        done = true;
                        break;
                    }
                }
            }
            if !done {
                loop {
                    m += 1;
                    if !(m < maxlen && input[r + m] == input[ip + m]) {
                        break;
                    }
                }
            }
            let m = m - 2;
            ip += 1;
            if m < 7 {
                out.push(((offset >> 8) + (m << 5)) as u8);
            } else {
                out.push(((offset >> 8) + (7 << 5)) as u8);
                out.push((m - 7) as u8);
            }
            out.push(offset as u8);
            lit = 0;
            run_start = out.len();
            out.push(0);
            ip += m + 1;
            if ip >= len - 2 {
                break;
            }
            // Hash the last two positions of the match so later data can refer into it.
            ip -= 2;
            hval = first(ip);
            hval = next(hval, ip);
            table[lzf_index(hval)] = ip as u32 + 1;
            ip += 1;
            hval = next(hval, ip);
            table[lzf_index(hval)] = ip as u32 + 1;
            ip += 1;
        } else {
            if out.len() >= limit {
                return None;
            }
            lit += 1;
            out.push(input[ip]);
            ip += 1;
            if lit == LZF_MAX_LITERAL {
                out[run_start] = (lit - 1) as u8;
                lit = 0;
                run_start = out.len();
                out.push(0);
            }
        }
    }
    if out.len() + 3 > limit {
        return None;
    }
    while ip < len {
        lit += 1;
        out.push(input[ip]);
        ip += 1;
        if lit == LZF_MAX_LITERAL {
            out[run_start] = (lit - 1) as u8;
            lit = 0;
            run_start = out.len();
            out.push(0);
        }
    }
    out[run_start] = (lit as u8).wrapping_sub(1);
    if lit == 0 {
        out.pop();
    }
    Some(out)
}

/// Decompresses an LZF stream that must expand to exactly `expected` bytes.
pub fn decompress(data: &[u8], expected: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(expected);
    let mut i = 0;
    while i < data.len() {
        let ctrl = usize::from(data[i]);
        i += 1;
        if ctrl < 32 {
            let run = data.get(i..i + ctrl + 1)?;
            out.extend_from_slice(run);
            i += ctrl + 1;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*data.get(i)?);
                i += 1;
            }
            let offset = ((ctrl & 0x1f) << 8) + usize::from(*data.get(i)?) + 1;
            i += 1;
            let from = out.len().checked_sub(offset)?;
            for k in 0..len + 2 {
                let b = out[from + k];
                out.push(b);
            }
        }
        if out.len() > expected {
            return None;
        }
    }
    (out.len() == expected).then_some(out)
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
