//! Set algebra: SINTER, SUNION, SDIFF, their STORE forms and SINTERCARD.

use bytes::Bytes;
use embedis_datatypes::set::{Member, SetLimits, SetValue};

use crate::base::config::event_class::GENERIC;
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;

use super::{check_sets, reply_member, reply_set, sets_at, store_result};

// ---------------------------------------------------------------------------------------------
// Set algebra
// ---------------------------------------------------------------------------------------------

pub(super) fn sinter(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[1..];
    inter_generic(ctx, keys, Inter::Reply)
}

pub(super) fn sinterstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[2..];
    inter_generic(ctx, keys, Inter::Store(ctx.arg(1)))
}

pub(super) fn sintercard(ctx: &mut Ctx<'_>) -> CmdResult {
    let numkeys_error = Error::msg("ERR numkeys should be greater than 0");
    let numkeys = ctx.int_arg(1).map_err(|_| numkeys_error.clone())?;
    if numkeys < 1 {
        return Err(numkeys_error);
    }
    if numkeys > (ctx.argc() - 2) as i64 {
        return Err(Error::msg(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let numkeys = numkeys as usize;
    let mut limit = 0u64;
    let mut i = 2 + numkeys;
    while i < ctx.argc() {
        if word_is(ctx.arg(i), "limit") && i + 1 < ctx.argc() {
            limit = match ctx.int_arg(i + 1) {
                Ok(n) if n >= 0 => n as u64,
                _ => return Err(Error::msg("ERR LIMIT can't be negative")),
            };
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let args = ctx.args;
    let keys = &args[2..2 + numkeys];
    inter_generic(ctx, keys, Inter::Count(limit))
}

/// What an intersection does with its result.
#[derive(Clone, Copy)]
enum Inter<'a> {
    /// SINTER: reply with the members.
    Reply,
    /// SINTERSTORE: store them under this key.
    Store(&'a [u8]),
    /// SINTERCARD: count them, stopping at the limit (0 = none).
    Count(u64),
}

fn inter_generic(ctx: &mut Ctx<'_>, keys: &[Bytes], mode: Inter<'_>) -> CmdResult {
    let any_missing = check_sets(ctx, keys)?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let limits = ctx.server.config.set_limits();
    if any_missing {
        // A missing key is an empty set: so is the intersection.
        match mode {
            Inter::Reply => ctx.out.set(0),
            Inter::Store(dst) => {
                if ctx.ks.delete(db, dst, now) {
                    ctx.notify(GENERIC, "del", dst);
                }
                ctx.out.integer(0);
            }
            Inter::Count(_) => ctx.out.integer(0),
        }
        return Ok(());
    }
    let mut sets: Vec<&SetValue> = sets_at(ctx.ks, db, keys).into_iter().flatten().collect();
    // Walk the smallest set, probing the others.
    sets.sort_by_key(|s| s.len());
    let (first, others) = sets.split_first().expect("at least one key");
    let in_all = |m: Member<'_>| {
        others
            .iter()
            .all(|s| std::ptr::eq(*s, *first) || s.contains_member(m))
    };
    match mode {
        Inter::Count(limit) => {
            let mut n = 0u64;
            for m in first.iter() {
                if in_all(m) {
                    n += 1;
                    if n == limit {
                        break;
                    }
                }
            }
            ctx.out.integer(n as i64);
        }
        Inter::Reply => {
            if others.is_empty() {
                reply_set(&mut ctx.out, first);
            } else {
                let common: Vec<Member<'_>> = first.iter().filter(|m| in_all(*m)).collect();
                ctx.out.set(common.len());
                for m in common {
                    reply_member(&mut ctx.out, m);
                }
            }
        }
        Inter::Store(dst) => {
            // Redis 7.2 starts the result as a listpack unless the smallest set is an intset,
            // and makes an intset of an all-integer result at the end; 7.0 starts an intset.
            let mut result = if limits.sized_creation && !first.is_intset() {
                SetValue::new_pack()
            } else {
                SetValue::new()
            };
            for m in first.iter().filter(|m| in_all(*m)) {
                result.insert_member(m, &limits);
            }
            result.compact_integers(&limits);
            store_result(ctx, dst, result, "sinterstore");
        }
    }
    Ok(())
}

pub(super) fn sunion(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[1..];
    union_diff_generic(ctx, keys, None, Op::Union)
}

pub(super) fn sunionstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[2..];
    union_diff_generic(ctx, keys, Some(ctx.arg(1)), Op::Union)
}

pub(super) fn sdiff(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[1..];
    union_diff_generic(ctx, keys, None, Op::Diff)
}

pub(super) fn sdiffstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[2..];
    union_diff_generic(ctx, keys, Some(ctx.arg(1)), Op::Diff)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Diff,
}

fn union_diff_generic(ctx: &mut Ctx<'_>, keys: &[Bytes], dst: Option<&[u8]>, op: Op) -> CmdResult {
    check_sets(ctx, keys)?;
    let db = ctx.db();
    let limits = ctx.server.config.set_limits();
    let sets = sets_at(ctx.ks, db, keys);
    let result = match op {
        Op::Union => union_of(&sets, &limits),
        Op::Diff => diff_of(sets, &limits),
    };
    match dst {
        None => reply_set(&mut ctx.out, &result),
        Some(dst) => {
            let event = match op {
                Op::Union => "sunionstore",
                Op::Diff => "sdiffstore",
            };
            store_result(ctx, dst, result, event)
        }
    }
    Ok(())
}

/// The union of `sets` (missing keys are empty), built as Redis builds it: a new set, compact
/// while it can be, filled set by set.
pub(super) fn union_of(sets: &[Option<&SetValue>], limits: &SetLimits) -> SetValue {
    let mut result = SetValue::new();
    for set in sets.iter().flatten() {
        for m in set.iter() {
            result.insert_member(m, limits);
        }
    }
    result
}

/// The members of the first set in none of the others. Redis picks one of two algorithms by
/// estimated work, and the choice shows in the result's encoding: the first adds only the
/// survivors, the second adds the whole first set and then removes the others' members (so a
/// result that was ever too big for an intset stays a table).
fn diff_of(mut sets: Vec<Option<&SetValue>>, limits: &SetLimits) -> SetValue {
    let mut result = SetValue::new();
    let Some(first) = sets[0] else {
        return result;
    };
    // The first key named again: the difference is empty.
    if sets[1..].iter().flatten().any(|s| std::ptr::eq(*s, first)) {
        return result;
    }
    let mut per_member_work = 0u64;
    let mut whole_sets_work = 0u64;
    for set in sets.iter().flatten() {
        per_member_work += first.len() as u64;
        whole_sets_work += set.len() as u64;
    }
    per_member_work /= 2;
    if per_member_work <= whole_sets_work {
        // Biggest sets first: a member is ruled out sooner.
        sets[1..].sort_by_key(|s| std::cmp::Reverse(s.map_or(0, SetValue::len)));
        for m in first.iter() {
            if !sets[1..].iter().flatten().any(|s| s.contains_member(m)) {
                result.insert_member(m, limits);
            }
        }
    } else {
        for m in first.iter() {
            result.insert_member(m, limits);
        }
        for set in sets[1..].iter().flatten() {
            for m in set.iter() {
                result.remove_member(m);
            }
            if result.is_empty() {
                break;
            }
        }
    }
    result
}
