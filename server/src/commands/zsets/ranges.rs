//! The range family: ZRANGE with BYSCORE, BYLEX, REV and LIMIT, ZRANGESTORE and the older
//! ZRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGE…, and the ZREMRANGEBY* commands that delete a range.

use bytes::Bytes;
use embedis_datatypes::zset::{LexRange, Limits, ScoreRange, ZSetValue};

use crate::base::config::event_class::ZSET;
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;

use super::{
    delete_if_empty, lex_range, limits, reply_elements, resolve_ranks, score_range, store_result,
    zset_of,
};

// ---------------------------------------------------------------------------------------------
// The range family
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RangeBy {
    Rank,
    Score,
    Lex,
}

/// What a range command selected, parsed.
enum Selection<'a> {
    Ranks(i64, i64),
    Scores(ScoreRange),
    Lex(LexRange<'a>),
}

/// Redis's `zrangeGenericCommand`: the source key is at `key_at`, then min and max, then the
/// options. `by` and `reverse` are fixed by the older commands (ZRANGEBYSCORE, ZREVRANGE…) and
/// chosen by options for ZRANGE and ZRANGESTORE (`None`).
fn range_generic(
    ctx: &mut Ctx<'_>,
    key_at: usize,
    dst: Option<&[u8]>,
    by: Option<RangeBy>,
    reverse: Option<bool>,
) -> CmdResult {
    let store = dst.is_some();
    let (mut by_opt, mut rev_opt) = (by, reverse);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut i = key_at + 3;
    while i < ctx.argc() {
        let left = ctx.argc() - i - 1;
        let word = ctx.arg(i);
        if !store && word_is(word, "withscores") {
            withscores = true;
        } else if word_is(word, "limit") && left >= 2 {
            offset = ctx.int_arg(i + 1)?;
            limit = ctx.int_arg(i + 2)?;
            i += 2;
        } else if rev_opt.is_none() && word_is(word, "rev") {
            rev_opt = Some(true);
        } else if by_opt.is_none() && word_is(word, "bylex") {
            by_opt = Some(RangeBy::Lex);
        } else if by_opt.is_none() && word_is(word, "byscore") {
            by_opt = Some(RangeBy::Score);
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    let by = by_opt.unwrap_or(RangeBy::Rank);
    let reverse = rev_opt.unwrap_or(false);
    if limit != -1 && by == RangeBy::Rank {
        return Err(Error::msg(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && by == RangeBy::Lex {
        return Err(Error::msg(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut min_at, mut max_at) = (key_at + 1, key_at + 2);
    if reverse && by != RangeBy::Rank {
        std::mem::swap(&mut min_at, &mut max_at);
    }
    let args: &[Bytes] = ctx.args;
    let selection = match by {
        RangeBy::Rank => Selection::Ranks(ctx.int_arg(min_at)?, ctx.int_arg(max_at)?),
        RangeBy::Score => Selection::Scores(score_range(&args[min_at], &args[max_at])?),
        RangeBy::Lex => Selection::Lex(lex_range(&args[min_at], &args[max_at])?),
    };
    let key: &[u8] = &args[key_at];
    let limits = limits(ctx);
    let (db, now) = (ctx.db(), ctx.now_ms);
    let set: &ZSetValue = match ctx.ks.read(db, key, now) {
        Some(value) => zset_of(value)?,
        None => {
            match dst {
                Some(dst) => store_result(ctx, dst, ZSetValue::new(), "zrangestore"),
                None => ctx.out.array(0),
            }
            return Ok(());
        }
    };
    let mut items: Vec<(&[u8], f64)> = Vec::new();
    match selection {
        Selection::Ranks(start, end) => {
            if let Some((start, end)) = resolve_ranks(start, end, set.len()) {
                items.reserve(end - start + 1);
                set.for_each_in_ranks(start, end, reverse, |m, s| items.push((m, s)));
            }
        }
        Selection::Scores(range) => {
            set.for_each_in_scores(&range, reverse, offset, limit, |m, s| items.push((m, s)))
        }
        Selection::Lex(range) => {
            set.for_each_in_lex(&range, reverse, offset, limit, |m, s| items.push((m, s)))
        }
    }
    match dst {
        Some(dst) => {
            zero_signs_stored_packed(&mut items, by == RangeBy::Rank, &limits);
            if reverse {
                items.reverse();
            }
            let built = ZSetValue::from_sorted(&items, &limits);
            drop(items);
            store_result(ctx, dst, built, "zrangestore");
        }
        None => reply_elements(&mut ctx.out, &items, withscores, false),
    }
    Ok(())
}

/// ZRANGESTORE's -0 scores as Redis stores them. Redis adds the results one by one, in the
/// order they were selected (`items`), to a destination that starts as a listpack — unless a
/// rank range already knows it has too many results — and converts it to a skiplist at the first
/// result past `max_entries` or longer than `max_value`. A listpack writes a score as an integer
/// where it can, so -0 comes back as 0; the skiplist keeps -0. Only the results added before
/// the conversion lose their sign, then.
fn zero_signs_stored_packed(items: &mut [(&[u8], f64)], counted: bool, limits: &Limits) {
    if counted && items.len() > limits.max_entries {
        return;
    }
    let long = items.iter().position(|(m, _)| m.len() > limits.max_value);
    let packed = long.unwrap_or(items.len()).min(limits.max_entries);
    for (_, score) in &mut items[..packed] {
        // -0 == 0: both become 0.
        if *score == 0.0 {
            *score = 0.0;
        }
    }
}

pub(super) fn zrange(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, None, None)
}

pub(super) fn zrangestore(ctx: &mut Ctx<'_>) -> CmdResult {
    let dst = ctx.arg(1);
    range_generic(ctx, 2, Some(dst), None, None)
}

pub(super) fn zrangebyscore(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, Some(RangeBy::Score), Some(false))
}

pub(super) fn zrevrangebyscore(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, Some(RangeBy::Score), Some(true))
}

pub(super) fn zrangebylex(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, Some(RangeBy::Lex), Some(false))
}

pub(super) fn zrevrangebylex(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, Some(RangeBy::Lex), Some(true))
}

pub(super) fn zrevrange(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, Some(RangeBy::Rank), Some(true))
}

// ---------------------------------------------------------------------------------------------
// ZREMRANGEBY*
// ---------------------------------------------------------------------------------------------

pub(super) fn zremrangebyrank(ctx: &mut Ctx<'_>) -> CmdResult {
    let (start, end) = (ctx.int_arg(2)?, ctx.int_arg(3)?);
    remrange_generic(ctx, "zremrangebyrank", |set| {
        match resolve_ranks(start, end, set.len()) {
            Some((start, end)) => set.remove_ranks(start, end),
            None => 0,
        }
    })
}

pub(super) fn zremrangebyscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let range = score_range(ctx.arg(2), ctx.arg(3))?;
    remrange_generic(ctx, "zremrangebyscore", |set| set.remove_scores(&range))
}

pub(super) fn zremrangebylex(ctx: &mut Ctx<'_>) -> CmdResult {
    let args: &[Bytes] = ctx.args;
    let range = lex_range(&args[2], &args[3])?;
    remrange_generic(ctx, "zremrangebylex", |set| set.remove_lex(&range))
}

fn remrange_generic(
    ctx: &mut Ctx<'_>,
    event: &'static str,
    remove: impl FnOnce(&mut ZSetValue) -> usize,
) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let Some(value) = ctx.ks.write(db, key, now) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let set = zset_of(value)?;
    let removed = remove(set);
    let empty = set.is_empty();
    ctx.ks.dirty += removed as u64;
    if removed > 0 {
        ctx.notify(ZSET, event, key);
    }
    delete_if_empty(ctx, key, empty);
    ctx.out.integer(removed as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signs(items: &[(&[u8], f64)]) -> Vec<bool> {
        items.iter().map(|(_, s)| s.is_sign_negative()).collect()
    }

    #[test]
    fn only_results_added_to_the_listpack_lose_the_sign_of_zero() {
        let limits = Limits {
            max_entries: 2,
            max_value: 3,
        };
        // A score or lex range: the first two go into the listpack, the third converts it.
        let mut items: Vec<(&[u8], f64)> = vec![(b"a", -0.0), (b"b", -0.0), (b"c", -0.0)];
        zero_signs_stored_packed(&mut items, false, &limits);
        assert_eq!(signs(&items), [false, false, true]);
        // A rank range that knows it has too many results starts as a skiplist.
        let mut items: Vec<(&[u8], f64)> = vec![(b"a", -0.0), (b"b", -0.0), (b"c", -0.0)];
        zero_signs_stored_packed(&mut items, true, &limits);
        assert_eq!(signs(&items), [true, true, true]);
        // A long member converts the listpack before it is added.
        let mut items: Vec<(&[u8], f64)> = vec![(b"a", -0.0), (b"long", -0.0)];
        zero_signs_stored_packed(&mut items, true, &limits);
        assert_eq!(signs(&items), [false, true]);
    }
}
