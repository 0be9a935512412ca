//! LCS: the longest common subsequence of two strings, with LEN, IDX, MINMATCHLEN and
//! WITHMATCHLEN.

use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;

use super::string_of;

// ---------------------------------------------------------------------------------------------
// LCS
// ---------------------------------------------------------------------------------------------

/// One run of the longest common subsequence: where it lies in each string (inclusive bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LcsMatch {
    a: (usize, usize),
    b: (usize, usize),
}

impl LcsMatch {
    fn len(&self) -> usize {
        self.a.1 - self.a.0 + 1
    }
}

/// The longest common subsequence of `a` and `b`, and the runs it is made of from the end of
/// the strings backwards — the order Redis reports them in. Redis fills the classic
/// (|a|+1)×(|b|+1) length table and walks it back from the bottom-right corner, taking a
/// matching byte when the last bytes agree and otherwise stepping towards the larger
/// neighbour (towards `b`'s shorter prefix on a tie); a run ends where the walk stops being
/// diagonal or reaches the start of either string. The same walk here gives the same string and
/// the same runs, which the IDX reply exposes.
fn lcs_walk(a: &[u8], b: &[u8]) -> (Vec<u8>, Vec<LcsMatch>) {
    let width = b.len() + 1;
    let mut table = vec![0u32; (a.len() + 1) * width];
    // Row by row over slices (the previous row read through 2-wide windows, the left
    // neighbour carried in a register): no bounds check per cell, which made the indexed form
    // a quarter slower than Redis's.
    for (i, &ai) in a.iter().enumerate() {
        let (before, rest) = table.split_at_mut((i + 1) * width);
        let prev = &before[i * width..];
        let cur = &mut rest[..width];
        let mut left = 0u32;
        for ((cell, &bj), up) in cur[1..].iter_mut().zip(b).zip(prev.windows(2)) {
            let v = if ai == bj { up[0] + 1 } else { up[1].max(left) };
            *cell = v;
            left = v;
        }
    }
    let mut common = Vec::with_capacity(table[a.len() * width + b.len()] as usize);
    let mut runs = Vec::new();
    let mut run: Option<LcsMatch> = None;
    let (mut i, mut j) = (a.len(), b.len());
    while i > 0 && j > 0 {
        let mut ends = false;
        if a[i - 1] == b[j - 1] {
            common.push(a[i - 1]);
            match &mut run {
                None => {
                    run = Some(LcsMatch {
                        a: (i - 1, i - 1),
                        b: (j - 1, j - 1),
                    })
                }
                // Contiguous with the run so far: it grows backwards.
                Some(r) if r.a.0 == i && r.b.0 == j => {
                    r.a.0 -= 1;
                    r.b.0 -= 1;
                }
                // Redis closes the run here without opening one at this byte: the byte is in
                // the common string but in no reported run.
                Some(_) => ends = true,
            }
            if run.is_some_and(|r| r.a.0 == 0 || r.b.0 == 0) {
                ends = true;
            }
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * width + j] > table[i * width + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            ends = run.is_some();
        }
        if ends {
            if let Some(r) = run.take() {
                runs.push(r);
            }
        }
    }
    common.reverse();
    (common, runs)
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the longest common subsequence of
/// two strings (a missing key is the empty string), its length, or the matching runs.
pub(super) fn lcs(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.client.db, ctx.now_ms);
    // Both keys are looked up (hits and misses counted) before the type check, as Redis does.
    let a = ctx
        .ks
        .read(db, ctx.args[1].as_ref(), now)
        .map(|v| string_of(v).map(|s| s.to_vec()));
    let b = ctx
        .ks
        .read(db, ctx.args[2].as_ref(), now)
        .map(|v| string_of(v).map(|s| s.to_vec()));
    let (a, b) = match (a.transpose(), b.transpose()) {
        (Ok(a), Ok(b)) => (a.unwrap_or_default(), b.unwrap_or_default()),
        _ => {
            return Err(Error::msg(
                "ERR The specified keys must contain string values",
            ))
        }
    };
    let (mut len_only, mut idx, mut with_match_len) = (false, false, false);
    let mut min_match_len = 0i64;
    let mut j = 3;
    while j < ctx.argc() {
        let opt = ctx.arg(j);
        let more = ctx.argc() - 1 - j;
        if word_is(opt, "idx") {
            idx = true;
        } else if word_is(opt, "len") {
            len_only = true;
        } else if word_is(opt, "withmatchlen") {
            with_match_len = true;
        } else if word_is(opt, "minmatchlen") && more > 0 {
            min_match_len = ctx.int_arg(j + 1)?.max(0);
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    if len_only && idx {
        return Err(Error::msg(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    if a.len() as u64 >= u32::MAX as u64 - 1 || b.len() as u64 >= u32::MAX as u64 - 1 {
        return Err(Error::msg("ERR String too long for LCS"));
    }
    // The table's size is checked against proto-max-bulk-len before it is allocated.
    let table_bytes = (a.len() as u64 + 1) * (b.len() as u64 + 1) * 4;
    if table_bytes > ctx.server.config.proto_max_bulk_len as u64 {
        return Err(Error::msg(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let (common, runs) = lcs_walk(&a, &b);
    if idx {
        let shown: Vec<&LcsMatch> = runs
            .iter()
            .filter(|r| min_match_len == 0 || r.len() as i64 >= min_match_len)
            .collect();
        ctx.out.map(2);
        ctx.out.bulk(b"matches");
        ctx.out.array(shown.len());
        for r in shown {
            ctx.out.array(2 + with_match_len as usize);
            for (start, end) in [r.a, r.b] {
                ctx.out.array(2);
                ctx.out.integer(start as i64);
                ctx.out.integer(end as i64);
            }
            if with_match_len {
                ctx.out.integer(r.len() as i64);
            }
        }
        ctx.out.bulk(b"len");
        ctx.out.integer(common.len() as i64);
    } else if len_only {
        ctx.out.integer(common.len() as i64);
    } else {
        ctx.out.bulk(&common);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_subsequence(needle: &[u8], hay: &[u8]) -> bool {
        let mut it = hay.iter();
        needle.iter().all(|c| it.any(|h| h == c))
    }

    /// The length of the longest common subsequence by plain recursion with memo: the model
    /// the table walk is checked against.
    fn lcs_len_model(a: &[u8], b: &[u8]) -> usize {
        let mut memo = std::collections::HashMap::new();
        fn go(
            a: &[u8],
            b: &[u8],
            memo: &mut std::collections::HashMap<(usize, usize), usize>,
        ) -> usize {
            if a.is_empty() || b.is_empty() {
                return 0;
            }
            if let Some(&n) = memo.get(&(a.len(), b.len())) {
                return n;
            }
            let n = if a[0] == b[0] {
                1 + go(&a[1..], &b[1..], memo)
            } else {
                go(&a[1..], b, memo).max(go(a, &b[1..], memo))
            };
            memo.insert((a.len(), b.len()), n);
            n
        }
        go(a, b, &mut memo)
    }

    proptest::proptest! {
        /// The common string is a subsequence of both, as long as the model's; every run is the
        /// same bytes in both strings, runs come from the end backwards without overlapping,
        /// and they hold no more bytes than the common string.
        #[test]
        fn lcs_walk_matches_model(
            a in proptest::collection::vec(0u8..4, 0..40),
            b in proptest::collection::vec(0u8..4, 0..40),
        ) {
            let (common, runs) = lcs_walk(&a, &b);
            proptest::prop_assert!(is_subsequence(&common, &a));
            proptest::prop_assert!(is_subsequence(&common, &b));
            proptest::prop_assert_eq!(common.len(), lcs_len_model(&a, &b));
            let mut covered = 0;
            for pair in runs.windows(2) {
                proptest::prop_assert!(pair[1].a.1 < pair[0].a.0 && pair[1].b.1 < pair[0].b.0);
            }
            for r in &runs {
                proptest::prop_assert_eq!(r.a.1 - r.a.0, r.b.1 - r.b.0);
                proptest::prop_assert_eq!(&a[r.a.0..=r.a.1], &b[r.b.0..=r.b.1]);
                covered += r.len();
            }
            proptest::prop_assert!(covered <= common.len());
        }
    }
}
