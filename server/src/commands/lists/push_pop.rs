//! Pushes and pops at both ends: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP and LMPOP (pushes
//! encode the argument straight into a node's spare room, pops write the packed bytes straight
//! into the reply).

use bytes::Bytes;

use crate::base::config::event_class::LIST;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::model::write_stream::integer_arg;

use super::{end_arg, list_of, new_list, pop, pop_verb, popped, push, push_event, ranged_arg, End};

// ---------------------------------------------------------------------------------------------
// Pushes and pops
// ---------------------------------------------------------------------------------------------

pub(super) fn lpush(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, End::Head, false)
}

pub(super) fn rpush(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, End::Tail, false)
}

pub(super) fn lpushx(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, End::Head, true)
}

pub(super) fn rpushx(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, End::Tail, true)
}

fn push_generic(ctx: &mut Ctx<'_>, end: End, only_existing: bool) -> CmdResult {
    let db = ctx.db();
    let key = ctx.arg(1);
    let items = &ctx.args[2..];
    let len = match ctx.ks.write(db, key, ctx.now_ms) {
        Some(value) => {
            let list = list_of(value)?;
            // Redis 7.2 decides a listpack's conversion once, for all the elements pushed.
            list.before_growth(items.iter().map(Bytes::len).sum(), items.len());
            for item in items {
                push(list, end, item);
            }
            let len = list.len();
            // Redis counts one change per element (`add` counted the creation as one).
            ctx.ks.dirty += items.len() as u64;
            len
        }
        None if only_existing => 0,
        None => {
            let mut list = new_list(ctx);
            list.before_growth(items.iter().map(Bytes::len).sum(), items.len());
            // Built by one command: its nodes are sized for what it pushes (a 10-element list
            // kept ~60 spare bytes when its node grew by doubling).
            list.push_all(items, end == End::Tail);
            let len = list.len();
            ctx.ks.add(db, key, Value::List(list), None, ctx.now_ms);
            ctx.ks.dirty += items.len() as u64 - 1;
            len
        }
    };
    // A new key's event before the reply, the push after it, as Redis 7.0 sends them.
    ctx.publish_events();
    ctx.out.integer(len as i64);
    if len > 0 {
        ctx.notify(LIST, push_event(end), key);
    }
    Ok(())
}

pub(super) fn lpop(ctx: &mut Ctx<'_>) -> CmdResult {
    pop_generic(ctx, End::Head)
}

pub(super) fn rpop(ctx: &mut Ctx<'_>) -> CmdResult {
    pop_generic(ctx, End::Tail)
}

fn pop_generic(ctx: &mut Ctx<'_>, end: End) -> CmdResult {
    if ctx.argc() > 3 {
        return Err(Error::WrongArity(ctx.cmd.full_name.clone().into()));
    }
    let count = if ctx.argc() == 3 {
        Some(ranged_arg(
            ctx,
            2,
            0,
            "ERR value is out of range, must be positive",
        )?)
    } else {
        None
    };
    let db = ctx.db();
    let key = ctx.arg(1);
    let Some(value) = ctx.ks.write(db, key, ctx.now_ms) else {
        match count {
            Some(_) => ctx.out.null_array(),
            None => ctx.out.null(),
        }
        return Ok(());
    };
    let list = list_of(value)?;
    let popped = match count {
        None => {
            pop(list, end, &mut ctx.out);
            1
        }
        Some(count) => {
            let n = (count as u64).min(list.len() as u64) as usize;
            ctx.out.array(n);
            for _ in 0..n {
                pop(list, end, &mut ctx.out);
            }
            n
        }
    };
    let empty = list.is_empty();
    ctx.ks.dirty += popped as u64;
    // LPOP key 0 answers an empty array and changes nothing.
    if popped > 0 {
        self::popped(ctx, key, end, empty);
    }
    Ok(())
}

/// LMPOP and BLMPOP's arguments from `numkeys` on: the keys, the end, the count.
pub(super) struct MpopArgs<'a> {
    pub(super) keys: &'a [bytes::Bytes],
    pub(super) end: End,
    pub(super) count: usize,
}

pub(super) fn parse_mpop<'a>(ctx: &Ctx<'a>, numkeys_at: usize) -> CmdResult<MpopArgs<'a>> {
    let numkeys = ranged_arg(ctx, numkeys_at, 1, "ERR numkeys should be greater than 0")?;
    let argc = ctx.argc();
    // The end must follow the keys.
    if numkeys as u64 > (argc - numkeys_at - 2) as u64 {
        return Err(Error::Syntax);
    }
    let first = numkeys_at + 1;
    let where_at = first + numkeys as usize;
    let end = end_arg(ctx, where_at)?;
    let mut count = None;
    let mut j = where_at + 1;
    while j < argc {
        if ctx.arg_is(j, "count") && j + 1 < argc && count.is_none() {
            count = Some(ranged_arg(
                ctx,
                j + 1,
                1,
                "ERR count should be greater than 0",
            )?);
            j += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let args: &'a [bytes::Bytes] = ctx.args;
    Ok(MpopArgs {
        keys: &args[first..where_at],
        end,
        count: usize::try_from(count.unwrap_or(1)).unwrap_or(usize::MAX),
    })
}

/// Pops up to `count` elements from the first non-empty list among `keys`, replying
/// `[key, [elements]]`; false if every key is missing.
pub(super) fn mpop_from(
    ctx: &mut Ctx<'_>,
    keys: &[&[u8]],
    end: End,
    count: usize,
) -> CmdResult<bool> {
    let db = ctx.db();
    for &key in keys {
        let Some(value) = ctx.ks.write(db, key, ctx.now_ms) else {
            continue;
        };
        let list = list_of(value)?;
        let n = count.min(list.len());
        ctx.out.array(2);
        ctx.out.bulk(key);
        ctx.out.array(n);
        for _ in 0..n {
            pop(list, end, &mut ctx.out);
        }
        let empty = list.is_empty();
        ctx.ks.dirty += n as u64;
        // Propagated as the plain pop with the number of elements it took.
        ctx.propagate_as(|| {
            vec![
                pop_verb(end),
                Bytes::copy_from_slice(key),
                integer_arg(n as i64),
            ]
        });
        popped(ctx, key, end, empty);
        return Ok(true);
    }
    Ok(false)
}

pub(super) fn lmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = parse_mpop(ctx, 1)?;
    let keys: Vec<&[u8]> = args.keys.iter().map(|k| k.as_ref()).collect();
    if !mpop_from(ctx, &keys, args.end, args.count)? {
        ctx.out.null_array();
    }
    Ok(())
}
