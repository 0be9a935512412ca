//! List commands: pushes and pops at both ends (LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LMPOP),
//! access by position (LLEN, LINDEX, LRANGE, LSET, LINSERT, LREM, LTRIM, LPOS), moves between
//! lists (LMOVE, RPOPLPUSH) and the blocking variants (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP).
//!
//! Lists are [`Quicklist`]s (OBJECT ENCODING `quicklist`, as every list in Redis 7.0), created
//! with the `list-max-listpack-size` and `list-compress-depth` in force at the time. A command
//! that reads through a list (LINDEX, LRANGE, LPOS, LINSERT) ends with
//! [`Quicklist::release_decompressed`], so that compressed nodes it read are compressed again,
//! as Redis recompresses a node after each access. A list emptied by a command is deleted.
//! Replies and errors follow Redis 7.0.15 to the byte, including its order of checks (LRANGE and
//! LREM parse their numbers before looking at the key, LINDEX and LSET after the type check;
//! BLMPOP checks numkeys and its options before the timeout) and its quirks (`LPOP k 0` is an
//! empty array but a null array on a missing key; LPOS RANK of LLONG_MIN acts like -1).
//!
//! Blocking: a blocking pop that finds nothing parks the client on its keys (see
//! [`crate::model::blocking`]); any write to one of them makes the engine run the command again with
//! `ctx.woken_by` set to that key, and — as Redis 7.0 — the client is then served from that key
//! only. Timeouts reply with a null array for every one of these commands (BLMOVE and BRPOPLPUSH
//! too, as Redis 7.0 does). Where blocking is not allowed (`ctx.may_block` false) the command
//! replies as its timeout would.
//!
//! LPUSH, RPUSH, LPOP, RPOP and LRANGE are benchmarked against redis-server: pushes encode the
//! argument straight into a node's spare room, pops and ranges write the packed bytes straight
//! into the reply buffer.

use crate::base::config::event_class::{GENERIC, LIST};
use embedis_datatypes::quicklist::Quicklist;
use embedis_protocol::number::parse_i64;

use crate::base::error::{CmdResult, Error};
use crate::base::value::{Value, ValueType};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, Begin, CommandSpec, Find, Flags, KeySpec};
use crate::model::blocking::parse_timeout_seconds;
use crate::model::write_stream::int_arg;
use bytes::Bytes;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Which end of a list.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Head,
    Tail,
}

/// The list in `value`, or WRONGTYPE.
fn list_of(value: &mut Value) -> CmdResult<&mut Quicklist> {
    match value {
        Value::List(list) => Ok(list),
        _ => Err(Error::WrongType),
    }
}

/// A new empty list shaped by the current `list-max-listpack-size`.
pub(crate) fn new_list(ctx: &Ctx<'_>) -> Box<Quicklist> {
    let limits = &ctx.server.config.encodings;
    let fill = limits.list_max_listpack_size;
    Box::new(Quicklist::with_options(
        fill.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
        limits.list_compress_depth.max(0) as usize,
    ))
}

/// `LEFT` / `RIGHT` (Redis's `getListPositionFromObjectOrReply`).
fn end_arg(ctx: &Ctx<'_>, i: usize) -> CmdResult<End> {
    if ctx.arg_is(i, "left") {
        Ok(End::Head)
    } else if ctx.arg_is(i, "right") {
        Ok(End::Tail)
    } else {
        Err(Error::Syntax)
    }
}

/// A number in `min..=i64::MAX`, failing with `message` otherwise (Redis's
/// `getRangeLongFromObjectOrReply`).
fn ranged_arg(ctx: &Ctx<'_>, i: usize, min: i64, message: &'static str) -> CmdResult<i64> {
    match parse_i64(ctx.arg(i)) {
        Some(n) if n >= min => Ok(n),
        _ => Err(Error::msg(message)),
    }
}

fn pop(list: &mut Quicklist, end: End, w: &mut embedis_protocol::Writer<'_>) {
    match end {
        End::Head => list.pop_front_with(|e| w.bulk(e)),
        End::Tail => list.pop_back_with(|e| w.bulk(e)),
    };
}

fn pop_owned(list: &mut Quicklist, end: End) -> Option<Vec<u8>> {
    match end {
        End::Head => list.pop_front(),
        End::Tail => list.pop_back(),
    }
}

fn push(list: &mut Quicklist, end: End, item: &[u8]) {
    match end {
        End::Head => list.push_front(item),
        End::Tail => list.push_back(item),
    }
}

/// Deletes `key` if the command emptied its list (a `del` event).
fn delete_if_empty(ctx: &mut Ctx<'_>, key: &[u8], empty: bool) {
    if empty {
        let db = ctx.db();
        ctx.ks.delete(db, key, ctx.now_ms);
        ctx.notify(GENERIC, "del", key);
    }
}

/// The events of elements popped from `end` of `key`'s list: `lpop` or `rpop`, then `del` if
/// the list is now empty (which deletes it). Redis sends them after the popped elements.
fn popped(ctx: &mut Ctx<'_>, key: &[u8], end: End, empty: bool) {
    ctx.notify(LIST, pop_event(end), key);
    delete_if_empty(ctx, key, empty);
}

/// The pop a blocking or multi-key pop propagates as.
fn pop_verb(end: End) -> Bytes {
    Bytes::from_static(match end {
        End::Head => b"LPOP",
        End::Tail => b"RPOP",
    })
}

fn pop_event(end: End) -> &'static str {
    match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    }
}

fn push_event(end: End) -> &'static str {
    match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    }
}

/// The keys a blocked command may be served from now: all of them on its first run, only the
/// key that woke it on a re-run (Redis 7.0 serves a woken client from that key).
fn candidates<'k>(ctx: &Ctx<'k>, keys: &'k [bytes::Bytes]) -> Vec<&'k [u8]> {
    match ctx.woken_by {
        Some(key) => vec![key],
        None => keys.iter().map(|k| k.as_ref()).collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// Pushes and pops
// ---------------------------------------------------------------------------------------------

fn lpush(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, End::Head, false)
}

fn rpush(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, End::Tail, false)
}

fn lpushx(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, End::Head, true)
}

fn rpushx(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, End::Tail, true)
}

fn push_generic(ctx: &mut Ctx<'_>, end: End, only_existing: bool) -> CmdResult {
    let db = ctx.db();
    let key = ctx.arg(1);
    let items = &ctx.args[2..];
    let len = match ctx.ks.write(db, key, ctx.now_ms) {
        Some(value) => {
            let list = list_of(value)?;
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
            for item in items {
                push(&mut list, end, item);
            }
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

fn lpop(ctx: &mut Ctx<'_>) -> CmdResult {
    pop_generic(ctx, End::Head)
}

fn rpop(ctx: &mut Ctx<'_>) -> CmdResult {
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
struct MpopArgs<'a> {
    keys: &'a [bytes::Bytes],
    end: End,
    count: usize,
}

fn parse_mpop<'a>(ctx: &Ctx<'a>, numkeys_at: usize) -> CmdResult<MpopArgs<'a>> {
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
fn mpop_from(ctx: &mut Ctx<'_>, keys: &[&[u8]], end: End, count: usize) -> CmdResult<bool> {
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
                int_arg(n as i64),
            ]
        });
        popped(ctx, key, end, empty);
        return Ok(true);
    }
    Ok(false)
}

fn lmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = parse_mpop(ctx, 1)?;
    let keys: Vec<&[u8]> = args.keys.iter().map(|k| k.as_ref()).collect();
    if !mpop_from(ctx, &keys, args.end, args.count)? {
        ctx.out.null_array();
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Access by position
// ---------------------------------------------------------------------------------------------

fn llen(ctx: &mut Ctx<'_>) -> CmdResult {
    let db = ctx.db();
    let len = match ctx.ks.read(db, ctx.arg(1), ctx.now_ms) {
        Some(value) => list_of(value)?.len(),
        None => 0,
    };
    ctx.out.integer(len as i64);
    Ok(())
}

/// A possibly negative index into a list of `len` elements, if it is in range.
fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let index = if index < 0 { index + len } else { index };
    (0..len).contains(&index).then_some(index as usize)
}

fn lindex(ctx: &mut Ctx<'_>) -> CmdResult {
    let db = ctx.db();
    let Some(value) = ctx.ks.read(db, ctx.arg(1), ctx.now_ms) else {
        ctx.out.null();
        return Ok(());
    };
    let list = list_of(value)?;
    let index = parse_i64(ctx.args[2].as_ref()).ok_or(Error::NotInteger)?;
    match resolve_index(index, list.len()).and_then(|i| list.get(i)) {
        Some(element) => ctx.out.bulk(element),
        None => ctx.out.null(),
    }
    list.release_decompressed();
    Ok(())
}

/// LRANGE / LTRIM's range over `len` elements: the first index and how many, if not empty.
fn resolve_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { start + len } else { start };
    let mut end = if end < 0 { end + len } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, (end - start + 1) as usize))
}

fn lrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let db = ctx.db();
    let Some(value) = ctx.ks.read(db, ctx.arg(1), ctx.now_ms) else {
        ctx.out.array(0);
        return Ok(());
    };
    let list = list_of(value)?;
    match resolve_range(start, end, list.len()) {
        None => ctx.out.array(0),
        Some((first, n)) => {
            ctx.out.array(n);
            for element in list.iter_from(first).take(n) {
                ctx.out.bulk(element);
            }
        }
    }
    // Compressed nodes the walk decompressed go back to their compressed size.
    list.release_decompressed();
    Ok(())
}

fn lset(ctx: &mut Ctx<'_>) -> CmdResult {
    let db = ctx.db();
    let value = ctx
        .ks
        .write(db, ctx.arg(1), ctx.now_ms)
        .ok_or(Error::NoSuchKey)?;
    let list = list_of(value)?;
    let index = parse_i64(ctx.args[2].as_ref()).ok_or(Error::NotInteger)?;
    let element = ctx.args[3].as_ref();
    match resolve_index(index, list.len()) {
        Some(i) => {
            list.set(i, element);
            ctx.ks.dirty += 1;
            ctx.out.ok();
            ctx.notify(LIST, "lset", ctx.arg(1));
            Ok(())
        }
        None => Err(Error::msg("ERR index out of range")),
    }
}

fn lrem(ctx: &mut Ctx<'_>) -> CmdResult {
    let count = ctx.int_arg(2)?;
    let db = ctx.db();
    let key = ctx.arg(1);
    let element = ctx.arg(3);
    let Some(value) = ctx.ks.write(db, key, ctx.now_ms) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let list = list_of(value)?;
    let limit = count.unsigned_abs().min(usize::MAX as u64) as usize;
    let removed = list.remove_matching(element, limit, count < 0);
    let empty = list.is_empty();
    ctx.ks.dirty += removed as u64;
    if removed > 0 {
        ctx.notify(LIST, "lrem", key);
    }
    delete_if_empty(ctx, key, empty);
    ctx.out.integer(removed as i64);
    Ok(())
}

fn ltrim(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let db = ctx.db();
    let key = ctx.arg(1);
    if let Some(value) = ctx.ks.write(db, key, ctx.now_ms) {
        let list = list_of(value)?;
        let len = list.len();
        match resolve_range(start, end, len) {
            None => list.drain_front(len),
            Some((first, n)) => {
                list.drain_back(len - first - n);
                list.drain_front(first);
            }
        }
        let empty = list.is_empty();
        ctx.ks.dirty += (len - list.len()) as u64;
        // Redis reports the key modified even when nothing was trimmed.
        ctx.ks.touched(db, key);
        ctx.notify(LIST, "ltrim", key);
        delete_if_empty(ctx, key, empty);
    }
    ctx.out.ok();
    Ok(())
}

fn linsert(ctx: &mut Ctx<'_>) -> CmdResult {
    let after = if ctx.arg_is(2, "after") {
        true
    } else if ctx.arg_is(2, "before") {
        false
    } else {
        return Err(Error::Syntax);
    };
    let db = ctx.db();
    let pivot = ctx.arg(3);
    let element = ctx.arg(4);
    let Some(value) = ctx.ks.write(db, ctx.arg(1), ctx.now_ms) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let list = list_of(value)?;
    // The new length, or -1 when the pivot is not there.
    let reply = match list.position(pivot) {
        None => -1,
        Some(at) => {
            list.insert_at(at, after, element);
            list.len() as i64
        }
    };
    list.release_decompressed();
    // The event before the reply, as Redis.
    if reply >= 0 {
        ctx.ks.dirty += 1;
        ctx.notify(LIST, "linsert", ctx.arg(1));
    }
    ctx.out.integer(reply);
    Ok(())
}

fn lpos(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut rank: i64 = 1;
    let mut count: Option<i64> = None;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < ctx.argc() {
        let has_value = j + 1 < ctx.argc();
        if ctx.arg_is(j, "rank") && has_value {
            rank = ctx.int_arg(j + 1)?;
            if rank == 0 {
                return Err(Error::msg(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if ctx.arg_is(j, "count") && has_value {
            count = Some(ranged_arg(ctx, j + 1, 0, "ERR COUNT can't be negative")?);
        } else if ctx.arg_is(j, "maxlen") && has_value {
            maxlen = ranged_arg(ctx, j + 1, 0, "ERR MAXLEN can't be negative")?;
        } else {
            return Err(Error::Syntax);
        }
        j += 2;
    }
    let db = ctx.db();
    let element = ctx.arg(2);
    let Some(value) = ctx.ks.read(db, ctx.arg(1), ctx.now_ms) else {
        match count {
            Some(_) => ctx.out.array(0),
            None => ctx.out.null(),
        }
        return Ok(());
    };
    let list = list_of(value)?;
    // A negative rank searches from the tail. Negating LLONG_MIN leaves it negative, so that
    // every match reaches the rank: Redis answers the last match, as for -1.
    let (from_tail, rank) = if rank < 0 {
        (true, rank.wrapping_neg())
    } else {
        (false, rank)
    };
    let wanted = match count {
        None => 1,
        Some(0) => u64::MAX,
        Some(n) => n as u64,
    };
    let len = list.len();
    let scan = if maxlen == 0 {
        len
    } else {
        (maxlen as u64).min(len as u64) as usize
    };
    let mut found: Vec<i64> = Vec::new();
    let mut matches: i64 = 0;
    let mut visit = |index: usize, e: &[u8]| {
        if e == element {
            matches += 1;
            if matches >= rank {
                let position = if from_tail { len - 1 - index } else { index };
                found.push(position as i64);
                return found.len() as u64 >= wanted;
            }
        }
        false
    };
    if from_tail {
        for (index, e) in list.iter().rev().take(scan).enumerate() {
            if visit(index, e) {
                break;
            }
        }
    } else {
        for (index, e) in list.iter().take(scan).enumerate() {
            if visit(index, e) {
                break;
            }
        }
    }
    list.release_decompressed();
    match count {
        Some(_) => {
            ctx.out.array(found.len());
            for p in found {
                ctx.out.integer(p);
            }
        }
        None => match found.first() {
            Some(&p) => ctx.out.integer(p),
            None => ctx.out.null(),
        },
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Moves
// ---------------------------------------------------------------------------------------------

/// Pops from `src` at `from` and pushes to `dst` at `to`, replying with the element (a bulk
/// string): true, or false (nothing replied) if `src` is missing. WRONGTYPE (before anything
/// changes) if either key holds something else. The events are Redis's, around the reply:
/// the push to `dst`, the element, then the pop from `src` and its `del` if it emptied.
fn move_element(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], from: End, to: End) -> CmdResult<bool> {
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
    ctx.ks.dirty += 1;
    if emptied && src != dst {
        ctx.ks.delete(db, src, now);
    }
    match ctx.ks.write(db, dst, now) {
        Some(value) => push(list_of(value)?, to, &element),
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

fn lmove(ctx: &mut Ctx<'_>) -> CmdResult {
    let from = end_arg(ctx, 3)?;
    let to = end_arg(ctx, 4)?;
    lmove_generic(ctx, from, to)
}

fn rpoplpush(ctx: &mut Ctx<'_>) -> CmdResult {
    lmove_generic(ctx, End::Tail, End::Head)
}

fn lmove_generic(ctx: &mut Ctx<'_>, from: End, to: End) -> CmdResult {
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    if !move_element(ctx, src, dst, from, to)? {
        ctx.out.null();
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Blocking variants
// ---------------------------------------------------------------------------------------------

fn blpop(ctx: &mut Ctx<'_>) -> CmdResult {
    bpop_generic(ctx, End::Head)
}

fn brpop(ctx: &mut Ctx<'_>) -> CmdResult {
    bpop_generic(ctx, End::Tail)
}

fn bpop_generic(ctx: &mut Ctx<'_>, end: End) -> CmdResult {
    let last = ctx.argc() - 1;
    let deadline = parse_timeout_seconds(ctx.arg(last), ctx.now_ms)?;
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

fn blmove(ctx: &mut Ctx<'_>) -> CmdResult {
    let from = end_arg(ctx, 3)?;
    let to = end_arg(ctx, 4)?;
    blmove_generic(ctx, from, to, 5)
}

fn brpoplpush(ctx: &mut Ctx<'_>) -> CmdResult {
    blmove_generic(ctx, End::Tail, End::Head, 3)
}

fn blmove_generic(ctx: &mut Ctx<'_>, from: End, to: End, timeout_at: usize) -> CmdResult {
    let deadline = parse_timeout_seconds(ctx.arg(timeout_at), ctx.now_ms)?;
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

fn blmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = parse_mpop(ctx, 2)?;
    let deadline = parse_timeout_seconds(ctx.arg(1), ctx.now_ms)?;
    let keys = candidates(ctx, args.keys);
    if !mpop_from(ctx, &keys, args.end, args.count)? {
        ctx.block_on_keys(args.keys, ValueType::List, deadline);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The command table
// ---------------------------------------------------------------------------------------------

const RW_INSERT: u16 = flag::RW | flag::INSERT;

const RW_ACCESS_DELETE: u16 = flag::RW | flag::ACCESS | flag::DELETE;

const RO_ACCESS: u16 = flag::RO | flag::ACCESS;

const WRITE_DENYOOM_FAST: Flags = Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST);

const WRITE_DENYOOM: Flags = Flags::WRITE.union(Flags::DENYOOM);

const WRITE_FAST: Flags = Flags::WRITE.union(Flags::FAST);

const BLOCKING: Flags = Flags::WRITE.union(Flags::NOSCRIPT).union(Flags::BLOCKING);

const BLOCKING_DENYOOM: Flags = BLOCKING.union(Flags::DENYOOM);

/// LMOVE's keys: the source is read and emptied, the destination inserted into.
const MOVE_KEYS: &[KeySpec] = &[
    KeySpec::single(1, RW_ACCESS_DELETE),
    KeySpec::single(2, RW_INSERT),
];

const fn keynum_at(index: i32) -> KeySpec {
    KeySpec {
        flags: RW_ACCESS_DELETE,
        begin: Begin::Index(index),
        find: Find::Keynum {
            count_index: 0,
            first_key: 1,
            step: 1,
        },
        notes: "",
    }
}

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("lpush", -3, lpush)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, RW_INSERT)])
        .doc(
            "list",
            "1.0.0",
            "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
            "Adds elements at the head of a list, creating it if needed.",
            "key element...",
        ),
    CommandSpec::new("rpush", -3, rpush)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, RW_INSERT)])
        .doc(
            "list",
            "1.0.0",
            "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
            "Adds elements at the tail of a list, creating it if needed.",
            "key element...",
        ),
    CommandSpec::new("lpushx", -3, lpushx)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, RW_INSERT)])
        .doc(
            "list",
            "2.2.0",
            "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
            "Adds elements at the head of a list that already exists.",
            "key element...",
        ),
    CommandSpec::new("rpushx", -3, rpushx)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, RW_INSERT)])
        .doc(
            "list",
            "2.2.0",
            "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
            "Adds elements at the tail of a list that already exists.",
            "key element...",
        ),
    CommandSpec::new("lpop", -2, lpop)
        .flags(WRITE_FAST)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, RW_ACCESS_DELETE)])
        .doc(
            "list",
            "1.0.0",
            "O(N) where N is the number of elements returned",
            "Removes and returns elements from the head of a list; the list is deleted once empty.",
            "key [count:integer]",
        ),
    CommandSpec::new("rpop", -2, rpop)
        .flags(WRITE_FAST)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, RW_ACCESS_DELETE)])
        .doc(
            "list",
            "1.0.0",
            "O(N) where N is the number of elements returned",
            "Removes and returns elements from the tail of a list; the list is deleted once empty.",
            "key [count:integer]",
        ),
    CommandSpec::new("llen", 2, llen)
        .flags(Flags::READONLY.union(Flags::FAST))
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, flag::RO)])
        .doc("list", "1.0.0", "O(1)", "Returns the number of elements of a list.", "key"),
    CommandSpec::new("lindex", 3, lindex)
        .flags(Flags::READONLY)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "list",
            "1.0.0",
            "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
            "Returns the element at a position of a list.",
            "key index:integer",
        ),
    CommandSpec::new("lrange", 4, lrange)
        .flags(Flags::READONLY)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "list",
            "1.0.0",
            "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
            "Returns a range of elements of a list.",
            "key start:integer stop:integer",
        ),
    CommandSpec::new("lset", 4, lset)
        .flags(WRITE_DENYOOM)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE)])
        .doc(
            "list",
            "1.0.0",
            "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
            "Replaces the element at a position of a list.",
            "key index:integer element",
        ),
    CommandSpec::new("lrem", 4, lrem)
        .flags(Flags::WRITE)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, flag::RW | flag::DELETE)])
        .doc(
            "list",
            "1.0.0",
            "O(N+M) where N is the length of the list and M is the number of elements removed.",
            "Removes occurrences of an element from a list, from the head or the tail.",
            "key count:integer element",
        ),
    CommandSpec::new("ltrim", 4, ltrim)
        .flags(Flags::WRITE)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, flag::RW | flag::DELETE)])
        .doc(
            "list",
            "1.0.0",
            "O(N) where N is the number of elements to be removed by the operation.",
            "Keeps only a range of elements of a list.",
            "key start:integer stop:integer",
        ),
    CommandSpec::new("linsert", 5, linsert)
        .flags(WRITE_DENYOOM)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, RW_INSERT)])
        .doc(
            "list",
            "2.2.0",
            "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
            "Inserts an element before or after another element of a list.",
            "key where=(BEFORE|AFTER) pivot:string element",
        ),
    CommandSpec::new("lpos", -3, lpos)
        .flags(Flags::READONLY)
        .acl(Acl::LIST)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "list",
            "6.0.6",
            "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
            "Returns the positions of the elements of a list equal to a value.",
            "key element [RANK rank:integer] [COUNT num-matches:integer] [MAXLEN len:integer]",
        ),
    CommandSpec::new("lmove", 5, lmove)
        .flags(WRITE_DENYOOM)
        .acl(Acl::LIST)
        .keys(MOVE_KEYS)
        .doc(
            "list",
            "6.2.0",
            "O(1)",
            "Pops an element from one end of a list and pushes it at one end of another (or the same) list.",
            "source:key destination:key wherefrom=(LEFT|RIGHT) whereto=(LEFT|RIGHT)",
        ),
    CommandSpec::new("rpoplpush", 3, rpoplpush)
        .flags(WRITE_DENYOOM)
        .acl(Acl::LIST)
        .keys(MOVE_KEYS)
        .doc(
            "list",
            "1.2.0",
            "O(1)",
            "Pops the tail of a list and pushes it at the head of another (or the same) list.",
            "source:key destination:key",
        ),
    CommandSpec::new("lmpop", -4, lmpop)
        .flags(Flags::WRITE)
        .acl(Acl::LIST)
        .keys(&[keynum_at(1)])
        .doc(
            "list",
            "7.0.0",
            "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
            "Pops elements from the first non-empty list of several keys.",
            "numkeys:integer key... where=(LEFT|RIGHT) [COUNT count:integer]",
        ),
    CommandSpec::new("blpop", -3, blpop)
        .flags(BLOCKING)
        .acl(Acl::LIST)
        .keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .doc(
            "list",
            "2.0.0",
            "O(N) where N is the number of provided keys.",
            "Pops the head of the first non-empty list of several keys, waiting for one if they are all empty.",
            "key... timeout:double",
        ),
    CommandSpec::new("brpop", -3, brpop)
        .flags(BLOCKING)
        .acl(Acl::LIST)
        .keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .doc(
            "list",
            "2.0.0",
            "O(N) where N is the number of provided keys.",
            "Pops the tail of the first non-empty list of several keys, waiting for one if they are all empty.",
            "key... timeout:double",
        ),
    CommandSpec::new("blmove", 6, blmove)
        .flags(BLOCKING_DENYOOM)
        .acl(Acl::LIST)
        .keys(MOVE_KEYS)
        .doc(
            "list",
            "6.2.0",
            "O(1)",
            "Moves an element from one list to another as LMOVE does, waiting for the source to have one.",
            "source:key destination:key wherefrom=(LEFT|RIGHT) whereto=(LEFT|RIGHT) timeout:double",
        ),
    CommandSpec::new("brpoplpush", 4, brpoplpush)
        .flags(BLOCKING_DENYOOM)
        .acl(Acl::LIST)
        .keys(MOVE_KEYS)
        .doc(
            "list",
            "2.2.0",
            "O(1)",
            "Moves the tail of a list to the head of another as RPOPLPUSH does, waiting for the source to have one.",
            "source:key destination:key timeout:double",
        ),
    CommandSpec::new("blmpop", -5, blmpop)
        .flags(Flags::WRITE.union(Flags::BLOCKING))
        .acl(Acl::LIST)
        .keys(&[keynum_at(2)])
        .doc(
            "list",
            "7.0.0",
            "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
            "Pops elements from the first non-empty list of several keys as LMPOP does, waiting for one if they are all empty.",
            "timeout:double numkeys:integer key... where=(LEFT|RIGHT) [COUNT count:integer]",
        ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_harness::{int, strings, Harness};

    fn list_in(h: &mut Harness, key: &str) -> (usize, i32) {
        match h.engine.ks.read(0, key.as_bytes(), h.now()) {
            Some(Value::List(list)) => (list.node_count(), list.fill()),
            other => panic!("not a list: {other:?}"),
        }
    }

    #[test]
    fn lists_keep_the_fill_they_were_created_with() {
        let mut h = Harness::new();
        h.run("CONFIG SET list-max-listpack-size 2");
        h.run("RPUSH a 1 2 3 4 5");
        assert_eq!(list_in(&mut h, "a"), (3, 2));
        h.run("CONFIG SET list-max-listpack-size -2");
        h.run("RPUSH a 6 7");
        assert_eq!(list_in(&mut h, "a"), (4, 2), "the old fill still applies");
        h.run("RPUSH b 1 2 3 4 5");
        assert_eq!(list_in(&mut h, "b"), (1, -2));
        // LMOVE creates its destination with the current setting too.
        h.run("LMOVE a c LEFT LEFT");
        assert_eq!(list_in(&mut h, "c"), (1, -2));
        assert_eq!(h.encoding("c"), "quicklist");
    }

    #[test]
    fn emptied_lists_are_deleted_by_every_command() {
        let mut h = Harness::new();
        for line in [
            "LPOP k",
            "RPOP k 5",
            "LREM k 0 v",
            "LTRIM k 1 0",
            "LMPOP 1 k LEFT",
            "BLPOP k 0",
            "BLMPOP 0 1 k RIGHT COUNT 9",
            "RPOPLPUSH k other",
            "LMOVE k other LEFT RIGHT",
        ] {
            h.run("DEL other");
            h.run("RPUSH k v");
            h.run(line);
            assert_eq!(int(&h.run("EXISTS k")), 0, "{line}");
        }
        assert_eq!(strings(&h.run("LRANGE other 0 -1")), vec![b"v".to_vec()]);
    }

    #[test]
    fn debug_object_shows_nodes() {
        let mut h = Harness::new();
        h.engine.server.config.enable_debug_command = crate::base::config::Access::Yes;
        h.run("RPUSH k a b c");
        let line = h.run_text("DEBUG OBJECT k");
        assert!(
            line.contains(" encoding:quicklist ")
                && line.contains(" ql_nodes:1 ql_avg_node:3.00 ql_listpack_max:-2 ql_compressed:0 ql_uncompressed_size:9"),
            "{line}"
        );
    }

    /// `list-compress-depth` shapes the lists created after it: their interior nodes are
    /// compressed (DEBUG OBJECT says so, MEMORY USAGE shrinks), their content is unchanged, and
    /// reading them leaves them compressed.
    #[test]
    fn compress_depth_applies_to_new_lists() {
        let mut h = Harness::new();
        h.engine.server.config.enable_debug_command = crate::base::config::Access::Yes;
        let fill = |h: &mut Harness, key: &str| {
            for _ in 0..20 {
                let mut line = format!("RPUSH {key}");
                for i in 0..500 {
                    line.push_str(&format!(" element:{}", i % 10));
                }
                h.run(&line);
            }
        };
        fill(&mut h, "raw");
        h.run("CONFIG SET list-compress-depth 1");
        fill(&mut h, "packed");
        fill(&mut h, "raw"); // an existing list keeps its depth (0)
        let usage =
            |h: &mut Harness, key: &str| int(&h.run(&format!("MEMORY USAGE {key} SAMPLES 0")));
        let (raw, packed) = (usage(&mut h, "raw"), usage(&mut h, "packed"));
        assert!(
            packed * 3 < raw / 2,
            "{packed} bytes compressed, {raw} raw (twice as long)"
        );
        assert!(h
            .run_text("DEBUG OBJECT packed")
            .contains(" ql_compressed:1 "));
        assert!(h.run_text("DEBUG OBJECT raw").contains(" ql_compressed:0 "));
        assert_eq!(
            strings(&h.run("LRANGE packed 4995 5004")),
            strings(&h.run("LRANGE raw 4995 5004"))
        );
        assert_eq!(h.run_text("LINDEX packed 5003"), "$9\r\nelement:3\r\n");
        assert_eq!(
            h.run_text("LPOS packed element:9 RANK -1 COUNT 2"),
            "*2\r\n:9999\r\n:9989\r\n"
        );
        assert_eq!(usage(&mut h, "packed"), packed, "reads leave it compressed");
        h.run("LINSERT packed BEFORE element:7 x");
        h.run("LSET packed 7000 y");
        assert_eq!(h.run_text("LINDEX packed 7000"), "$1\r\ny\r\n");
        h.run("CONFIG SET list-compress-depth 0");
    }

    #[test]
    fn ranges_as_redis_computes_them() {
        assert_eq!(resolve_range(0, -1, 5), Some((0, 5)));
        assert_eq!(resolve_range(-100, 100, 5), Some((0, 5)));
        assert_eq!(resolve_range(3, 1, 5), None);
        assert_eq!(resolve_range(5, 10, 5), None);
        assert_eq!(resolve_range(-1, -2, 5), None);
        assert_eq!(resolve_range(i64::MIN, i64::MAX, 5), Some((0, 5)));
        assert_eq!(resolve_range(0, 0, 0), None);
        assert_eq!(resolve_index(-1, 3), Some(2));
        assert_eq!(resolve_index(-4, 3), None);
        assert_eq!(resolve_index(i64::MIN, 3), None);
        assert_eq!(resolve_index(3, 3), None);
    }
}
