//! The blocking variants: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP, which park the client on
//! their keys when nothing is there and are served from the key that woke them.

use bytes::Bytes;

use crate::base::error::CmdResult;
use crate::base::value::ValueType;
use crate::kernel::ctx::Ctx;
use crate::model::blocking::parse_timeout_seconds;

use super::moves::move_element;
use super::push_pop::{mpop_from, parse_mpop};
use super::{candidates, end_arg, list_of, pop, pop_verb, popped, End};

// ---------------------------------------------------------------------------------------------
// Blocking variants
// ---------------------------------------------------------------------------------------------

pub(super) fn blpop(ctx: &mut Ctx<'_>) -> CmdResult {
    bpop_generic(ctx, End::Head)
}

pub(super) fn brpop(ctx: &mut Ctx<'_>) -> CmdResult {
    bpop_generic(ctx, End::Tail)
}

fn bpop_generic(ctx: &mut Ctx<'_>, end: End) -> CmdResult {
    let last = ctx.argc() - 1;
    let deadline = parse_timeout_seconds(
        ctx.arg(last),
        ctx.now_ms,
        ctx.server.config.compat_version >= crate::base::compat::CompatVersion::V7_2,
    )?;
    let args: &[bytes::Bytes] = ctx.args;
    let keys = &args[1..last];
    let db = ctx.db();
    for key in candidates(ctx, keys) {
        let Some(value) = ctx.ks.write(db, key, ctx.now_ms) else {
            continue;
        };
        let list = list_of(value)?;
        ctx.out.array(2);
        ctx.out.bulk(key);
        pop(list, end, &mut ctx.out);
        let empty = list.is_empty();
        ctx.ks.dirty += 1;
        ctx.propagate_as(|| vec![pop_verb(end), Bytes::copy_from_slice(key)]);
        popped(ctx, key, end, empty);
        return Ok(());
    }
    ctx.block_on_keys(keys, ValueType::List, deadline);
    Ok(())
}

pub(super) fn blmove(ctx: &mut Ctx<'_>) -> CmdResult {
    let from = end_arg(ctx, 3)?;
    let to = end_arg(ctx, 4)?;
    blmove_generic(ctx, from, to, 5)
}

pub(super) fn brpoplpush(ctx: &mut Ctx<'_>) -> CmdResult {
    blmove_generic(ctx, End::Tail, End::Head, 3)
}

fn blmove_generic(ctx: &mut Ctx<'_>, from: End, to: End, timeout_at: usize) -> CmdResult {
    let deadline = parse_timeout_seconds(
        ctx.arg(timeout_at),
        ctx.now_ms,
        ctx.server.config.compat_version >= crate::base::compat::CompatVersion::V7_2,
    )?;
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    match move_element(ctx, src, dst, from, to)? {
        true => {
            // Propagated as the non-blocking move: RPOPLPUSH, or LMOVE with the client's
            // directions (lower-case ones when served after blocking, as Redis 7.0 writes).
            let args: &[Bytes] = ctx.args;
            let woken = ctx.woken_by.is_some();
            ctx.propagate_as(|| {
                if timeout_at == 3 {
                    vec![
                        Bytes::from_static(b"RPOPLPUSH"),
                        args[1].clone(),
                        args[2].clone(),
                    ]
                } else if woken {
                    let word = |end| match end {
                        End::Head => Bytes::from_static(b"left"),
                        End::Tail => Bytes::from_static(b"right"),
                    };
                    vec![
                        Bytes::from_static(b"LMOVE"),
                        args[1].clone(),
                        args[2].clone(),
                        word(from),
                        word(to),
                    ]
                } else {
                    let mut v = args[..5].to_vec();
                    v[0] = Bytes::from_static(b"LMOVE");
                    v
                }
            });
        }
        // Where it may not block (EXEC), Redis answers a null string, not the null array a
        // timed-out BLMOVE gets.
        false if !ctx.may_block => ctx.out.null(),
        false => {
            let args: &[bytes::Bytes] = ctx.args;
            ctx.block_on_keys(&args[1..2], ValueType::List, deadline);
        }
    }
    Ok(())
}

pub(super) fn blmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = parse_mpop(ctx, 2)?;
    let deadline = parse_timeout_seconds(
        ctx.arg(1),
        ctx.now_ms,
        ctx.server.config.compat_version >= crate::base::compat::CompatVersion::V7_2,
    )?;
    let keys = candidates(ctx, args.keys);
    if !mpop_from(ctx, &keys, args.end, args.count)? {
        ctx.block_on_keys(args.keys, ValueType::List, deadline);
    }
    Ok(())
}
