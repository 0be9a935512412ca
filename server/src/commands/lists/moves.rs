//! Moves between lists: LMOVE and RPOPLPUSH.

use crate::base::config::event_class::{GENERIC, LIST};
use crate::base::error::CmdResult;
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;

use super::{end_arg, list_of, new_list, pop_event, pop_owned, push, push_event, End};

// ---------------------------------------------------------------------------------------------
// Moves
// ---------------------------------------------------------------------------------------------

/// Pops from `src` at `from` and pushes to `dst` at `to`, replying with the element (a bulk
/// string): true, or false (nothing replied) if `src` is missing. WRONGTYPE (before anything
/// changes) if either key holds something else. The events are Redis's, around the reply:
/// the push to `dst`, the element, then the pop from `src` and its `del` if it emptied.
pub(super) fn move_element(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> CmdResult<bool> {
    let db = ctx.db();
    let now = ctx.now_ms;
    match ctx.ks.write(db, src, now) {
        None => return Ok(false),
        Some(value) => {
            list_of(value)?;
        }
    }
    if let Some(value) = ctx.ks.write(db, dst, now) {
        list_of(value)?;
    }
    let list = list_of(ctx.ks.write(db, src, now).expect("looked up"))?;
    let element = pop_owned(list, from).expect("lists are never empty");
    let emptied = list.is_empty();
    if emptied && src != dst {
        ctx.ks.delete_emptied(db, src, now);
    }
    // One change for the move, as Redis counts it: `add` counts it when it creates `dst`.
    match ctx.ks.write(db, dst, now) {
        Some(value) => {
            push(list_of(value)?, to, &element);
            ctx.ks.dirty += 1;
        }
        None => {
            let mut list = new_list(ctx);
            push(&mut list, to, &element);
            ctx.ks.add(db, dst, Value::List(list), None, now);
        }
    }
    ctx.notify(LIST, push_event(to), dst);
    ctx.out.bulk(&element);
    ctx.notify(LIST, pop_event(from), src);
    if emptied && src != dst {
        ctx.notify(GENERIC, "del", src);
    }
    Ok(true)
}

pub(super) fn lmove(ctx: &mut Ctx<'_>) -> CmdResult {
    let from = end_arg(ctx, 3)?;
    let to = end_arg(ctx, 4)?;
    lmove_generic(ctx, from, to)
}

pub(super) fn rpoplpush(ctx: &mut Ctx<'_>) -> CmdResult {
    lmove_generic(ctx, End::Tail, End::Head)
}

fn lmove_generic(ctx: &mut Ctx<'_>, from: End, to: End) -> CmdResult {
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    if !move_element(ctx, src, dst, from, to)? {
        ctx.out.null();
    }
    Ok(())
}
