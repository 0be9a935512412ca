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
//! it). tests/it/lzf_compat.rs checks both directions, and equal bytes, against redis-server.

const LZF_HASH_LOG: u32 = 16;
const LZF_MAX_LITERAL: usize = 1 << 5;
const LZF_MAX_OFFSET: usize = 1 << 13;
const LZF_MAX_REFERENCE: usize = (1 << 8) + (1 << 3);

/// liblzf's hash of the three bytes folded into `h` (its "very fast" variant).
fn lzf_index(h: u32) -> usize {
    ((h >> (3 * 8 - LZF_HASH_LOG)).wrapping_sub(h.wrapping_mul(5)) & ((1 << LZF_HASH_LOG) - 1))
        as usize
}

/// The compressor's hash table: 64 Ki positions, kept per thread between calls.
///
/// liblzf does not clear its table (`INIT_HTAB` is off) but validates every candidate; we want
/// the choices of a cleared table (deterministic output, what tests/it/lzf_compat.rs compares
/// against Redis), and clearing 256 KB per call cost more than compressing a 12 KB string. So
/// each call stores positions offset by `base`, and `base` moves past the previous call's
/// positions: an entry at or below `base` is one this call never wrote, i.e. "never seen".
struct HashTable {
    slots: Box<[u32; 1 << LZF_HASH_LOG]>,
    base: u32,
}

thread_local! {
    static TABLE: std::cell::RefCell<HashTable> = std::cell::RefCell::new(HashTable {
        slots: vec![0u32; 1 << LZF_HASH_LOG]
            .into_boxed_slice()
            .try_into()
            .expect("table size"),
        base: 0,
    });
}

/// Inputs longer than this are not compressed (positions must fit the table's `u32`s with room
/// for `base`); Redis's strings are at most 512 MB.
const MAX_INPUT: usize = (u32::MAX / 2) as usize;

/// LZF-compresses `input` into at most `limit` bytes, choosing as liblzf does; `None` when it
/// does not fit. Literal runs are up to 32 bytes (a header byte `len-1`); a back reference holds
/// its length minus 2 (in 3 bits, or 7 plus an extra byte) and an offset minus 1 up to 8 KiB.
pub fn compress(input: &[u8], limit: usize) -> Option<Vec<u8>> {
    if input.is_empty() || limit == 0 || input.len() > MAX_INPUT {
        return None;
    }
    TABLE.with(|table| {
        let mut table = table.borrow_mut();
        let len = input.len() as u32;
        if table.base > u32::MAX - len - 1 {
            table.slots.fill(0);
            table.base = 0;
        }
        let base = table.base;
        let out = compress_with(input, limit, &mut table.slots, base);
        table.base = base + len + 1;
        out
    })
}

/// `input[i]`, unchecked in release builds. The compressor's loop reads only below
/// `input.len()` (each read is justified where it happens); debug builds — the test suite —
/// check every read, and a proptest compares the output with a plainly indexed reference.
#[inline(always)]
fn byte(input: &[u8], i: usize) -> u8 {
    debug_assert!(i < input.len());
    // SAFETY: every caller passes `i < input.len()`, as argued at the call site.
    unsafe { *input.get_unchecked(i) }
}

/// Writes `out[i] = b`, unchecked in release builds; the output buffer is sized so that every
/// write the room checks allow stays inside it (see `room` in [`compress_with`]).
#[inline(always)]
fn put(out: &mut [u8], i: usize, b: u8) {
    debug_assert!(i < out.len());
    // SAFETY: `i < out.len()`: writes happen only after liblzf's room checks against `limit`,
    // which keep `i` below `limit + 8 <= out.len()`.
    unsafe { *out.get_unchecked_mut(i) = b }
}

/// The compressor proper, on a table whose entries at or below `base` count as empty. It makes
/// liblzf 3.6's choices exactly (a proptest checks it against a straightforward version): the
/// hot loop is the byte-by-byte part of SAVE for long strings (a dense HyperLogLog is 12 KB),
/// so it reads and writes without bounds checks where the loop's own conditions bound them.
fn compress_with(
    input: &[u8],
    limit: usize,
    slots: &mut [u32; 1 << LZF_HASH_LOG],
    base: u32,
) -> Option<Vec<u8>> {
    let len = input.len();
    // LZF never grows data by more than a header byte per 32 literals (plus one), and every
    // write happens after a check that the output is below `limit`, so `room` bounds them all:
    // the furthest write is a 3-byte reference and a run header just past `limit`.
    let room = limit.min(len + len / LZF_MAX_LITERAL + 2) + 8;
    let mut out = vec![0u8; room];
    // `run_start` is where the pending literal run's header byte goes; `op` the next free byte.
    let mut run_start = 0usize;
    let mut op = 1usize;
    let mut lit = 0usize;
    let mut ip = 0usize;
    if len >= 3 {
        let end = len - 2;
        // Reads below are at `ip + 2 < len` (loop condition) or at a matched position `r < ip`.
        let first = |p: usize| (u32::from(byte(input, p)) << 8) | u32::from(byte(input, p + 1));
        let next = |v: u32, p: usize| (v << 8) | u32::from(byte(input, p + 2));
        let mut hval = first(0);
        while ip < end {
            hval = next(hval, ip);
            let slot = lzf_index(hval);
            let seen = slots[slot];
            slots[slot] = base + ip as u32 + 1;
            // `r` is a position this call stored, so `r < ip` and its bytes up to `r + 2`
            // exist; `ip + 2 < len` from the loop condition.
            let r = seen.wrapping_sub(base).wrapping_sub(1) as usize;
            if seen > base
                && r > 0
                && r < ip
                && ip - r - 1 < LZF_MAX_OFFSET
                && byte(input, r + 2) == byte(input, ip + 2)
                && byte(input, r) == byte(input, ip)
                && byte(input, r + 1) == byte(input, ip + 1)
            {
                let offset = ip - r - 1;
                let maxlen = (len - ip - 2).min(LZF_MAX_REFERENCE);
                // Room for the reference (and the header of the run after it).
                if op + 3 + 1 >= limit && op - usize::from(lit == 0) + 3 + 1 >= limit {
                    return None;
                }
                put(&mut out, run_start, (lit as u8).wrapping_sub(1));
                if lit == 0 {
                    op -= 1;
                }
                // liblzf compares 16 bytes unconditionally when the match may be long; reads
                // stay below `ip + maxlen + 2 <= len` (at most `ip + 18` when `maxlen > 16`).
                let mut m = 2usize;
                let mut done = false;
                if maxlen > 16 {
                    for _ in 0..16 {
                        m += 1;
                        if byte(input, r + m) != byte(input, ip + m) {
                            done = true;
                            break;
                        }
                    }
                }
                if !done {
                    loop {
                        m += 1;
                        if !(m < maxlen && byte(input, r + m) == byte(input, ip + m)) {
                            break;
                        }
                    }
                }
                let m = m - 2;
                ip += 1;
                if m < 7 {
                    put(&mut out, op, ((offset >> 8) + (m << 5)) as u8);
                    op += 1;
                } else {
                    put(&mut out, op, ((offset >> 8) + (7 << 5)) as u8);
                    put(&mut out, op + 1, (m - 7) as u8);
                    op += 2;
                }
                put(&mut out, op, offset as u8);
                op += 1;
                lit = 0;
                run_start = op;
                put(&mut out, op, 0);
                op += 1;
                ip += m + 1;
                if ip >= end {
                    break;
                }
                // Hash the last two positions of the match so later data can refer into it.
                ip -= 2;
                hval = first(ip);
                hval = next(hval, ip);
                slots[lzf_index(hval)] = base + ip as u32 + 1;
                ip += 1;
                hval = next(hval, ip);
                slots[lzf_index(hval)] = base + ip as u32 + 1;
                ip += 1;
            } else {
                if op >= limit {
                    return None;
                }
                lit += 1;
                put(&mut out, op, byte(input, ip));
                op += 1;
                ip += 1;
                if lit == LZF_MAX_LITERAL {
                    put(&mut out, run_start, (lit - 1) as u8);
                    lit = 0;
                    run_start = op;
                    put(&mut out, op, 0);
                    op += 1;
                }
            }
        }
    }
    if op + 3 > limit {
        return None;
    }
    while ip < len {
        lit += 1;
        put(&mut out, op, byte(input, ip));
        op += 1;
        ip += 1;
        if lit == LZF_MAX_LITERAL {
            put(&mut out, run_start, (lit - 1) as u8);
            lit = 0;
            run_start = op;
            put(&mut out, op, 0);
            op += 1;
        }
    }
    put(&mut out, run_start, (lit as u8).wrapping_sub(1));
    if lit == 0 {
        op -= 1;
    }
    out.truncate(op);
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
            if out.len() + len + 2 > expected {
                return None;
            }
            if offset >= len + 2 {
                // The source lies wholly before the end: one copy.
                out.extend_from_within(from..from + len + 2);
            } else {
                // An overlapping reference repeats the bytes it is producing.
                for k in 0..len + 2 {
                    let b = out[from + k];
                    out.push(b);
                }
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

    /// The straightforward compressor (a cleared table per call, output by `push`) that
    /// [`compress`] must match byte for byte: the compressor as first written here, before the
    /// table was kept between calls and the loop lost its bounds checks.
    fn reference_compress(input: &[u8], limit: usize) -> Option<Vec<u8>> {
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
                if out.len() + 3 + 1 >= limit && out.len() - usize::from(lit == 0) + 3 + 1 >= limit
                {
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
        fn matches_the_reference_compressor(
            input in prop_oneof![
                proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c'), any::<u8>()], 0..4000),
                // Repeated chunks with a few changed bytes: long matches (up to the 264-byte
                // limit, and the 16-byte unbounded compare) next to short ones.
                (proptest::collection::vec(any::<u8>(), 1..40), 1usize..300, proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8))
                    .prop_map(|(chunk, reps, edits)| {
                        let mut v = chunk.repeat(reps);
                        let n = v.len();
                        for (at, b) in edits {
                            v[at % n] = b;
                        }
                        v
                    }),
            ],
            slack in 0usize..64,
        ) {
            // Tight budgets too, so the give-up points are compared as well.
            for limit in [input.len() + 64, input.len().saturating_sub(slack), input.len() / 2 + slack] {
                prop_assert_eq!(compress(&input, limit), reference_compress(&input, limit));
            }
        }

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
