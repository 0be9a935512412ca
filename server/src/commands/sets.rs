//! Set commands: SADD, SREM, SCARD, SISMEMBER, SMISMEMBER, SMEMBERS, SPOP, SRANDMEMBER, SMOVE,
//! SSCAN and the algebra — SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE, SDIFF,
//! SDIFFSTORE.
//!
//! The values are [`SetValue`]s (intset or hashtable, with Redis's conversion rules). What the
//! handlers add is Redis 7.0's observable behaviour, to the byte:
//!
//! - **Order of checks.** Count arguments are parsed before the key is looked up (so
//!   `SPOP nokey -1` is an error); SSCAN checks its cursor, then the key, then its options.
//!   The algebra commands look up and type-check every source key, so a missing key does not hide
//!   a WRONGTYPE at a later position; SMOVE reports 0 for a missing source even when the
//!   destination has the wrong type.
//! - **Reply order.** Redis replies in the order it walks a set: an intset ascending, a table in
//!   hash order. SINTER walks its smallest set; SUNION and SDIFF build their result as a new set
//!   (compact while it can be) and walk that, so the union of intsets comes back sorted.
//! - **Encodings of new sets.** A set built by a command (the *STORE results, SPOP's rebuild of
//!   a set it mostly empties, SMOVE's new destination) starts as an intset and converts as
//!   members arrive, exactly as Redis's, so OBJECT ENCODING agrees — including SDIFF's choice
//!   between its two algorithms, which decides whether a result that shrank below the intset
//!   limit was ever converted.
//! - **Emptied sets are deleted**, and the *STORE commands overwrite a destination of any type
//!   (dropping its TTL) or delete it when the result is empty.
//!
//! SADD and SPOP are benchmarked against Redis: they take one write lookup, add or remove in
//! place, and allocate nothing per member beyond the table entry Redis would allocate too.

use crate::base::config::event_class::{GENERIC, SET};
use bytes::Bytes;
use embedis_datatypes::glob;
use embedis_datatypes::set::{Member, SetValue};
use embedis_protocol::Writer;
use std::collections::HashSet;

use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::commands::common::{parse_cursor, parse_scan_options, ScanOptions};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, Begin, Find};
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::{Access, StoreIf, Ttl};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The set a value holds, or WRONGTYPE.
fn set_of(value: &Value) -> CmdResult<&SetValue> {
    match value {
        Value::Set(s) => Ok(s),
        _ => Err(Error::WrongType),
    }
}

fn set_of_mut(value: &mut Value) -> CmdResult<&mut SetValue> {
    match value {
        Value::Set(s) => Ok(s),
        _ => Err(Error::WrongType),
    }
}

/// Writes a member as a bulk string (an intset's integer formatted straight into the buffer).
#[inline]
fn reply_member(out: &mut Writer<'_>, member: Member<'_>) {
    match member {
        Member::Int(n) => out.bulk_integer(n),
        Member::Bytes(b) => out.bulk(b),
    }
}

/// Replies with a whole set in its own order, as a RESP3 set.
fn reply_set(out: &mut Writer<'_>, set: &SetValue) {
    out.set(set.len());
    for member in set.iter() {
        reply_member(out, member);
    }
}

/// The sets stored under `keys` after [`check_sets`] looked them up: `None` for a missing key.
/// Plain reads of the table, with no side effect (the lookups already had theirs).
fn sets_at<'k>(
    ks: &'k crate::model::keyspace::Keyspace,
    db: usize,
    keys: &[Bytes],
) -> Vec<Option<&'k SetValue>> {
    keys.iter()
        .map(|k| match ks.dbs[db].main.get(&k[..]).map(|o| &o.value) {
            Some(Value::Set(s)) => Some(s),
            _ => None,
        })
        .collect()
}

/// Looks every key up for reading, in order (lazy expiry, hit/miss statistics), and fails with
/// WRONGTYPE at the first one that is not a set. Returns whether any key was missing.
fn check_sets(ctx: &mut Ctx<'_>, keys: &[Bytes]) -> CmdResult<bool> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut missing = false;
    for key in keys {
        match ctx.ks.read(db, key, now) {
            None => missing = true,
            Some(value) => {
                set_of(value)?;
            }
        }
    }
    Ok(missing)
}

/// Stores `result` under `dst` (replacing any value and its TTL) and replies with its size,
/// then sends `event`; or deletes `dst` and replies 0 when the result is empty, then sends
/// `del` if there was something to delete (Redis's order in both cases).
fn store_result(ctx: &mut Ctx<'_>, dst: &[u8], result: SetValue, event: &'static str) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let len = result.len();
    if len > 0 {
        ctx.ks.store(db, dst, StoreIf::Always, Ttl::Clear, now, || {
            Value::Set(result)
        });
        ctx.publish_events();
        ctx.out.integer(len as i64);
        ctx.notify(SET, event, dst);
    } else {
        let deleted = ctx.ks.delete(db, dst, now);
        ctx.out.integer(0);
        if deleted {
            ctx.notify(GENERIC, "del", dst);
        }
    }
}

/// Redis's `getPositiveLongFromObjectOrReply` with its default message, used by SPOP.
fn positive_count(arg: &[u8]) -> CmdResult<u64> {
    match embedis_protocol::number::parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(Error::msg("ERR value is out of range, must be positive")),
    }
}

// ---------------------------------------------------------------------------------------------
// Single-set commands
// ---------------------------------------------------------------------------------------------

fn sadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let max = ctx.server.config.encodings.set_max_intset_entries;
    let (key, args) = (ctx.arg(1), ctx.args);
    let members = &args[2..];
    let added = match ctx.ks.write(db, key, now) {
        Some(value) => {
            let set = set_of_mut(value)?;
            let added = members.iter().filter(|m| set.insert(m, max)).count();
            ctx.ks.dirty += added as u64;
            added
        }
        None => {
            let mut set = SetValue::new();
            let added = members.iter().filter(|m| set.insert(m, max)).count();
            // `add` counts one change; Redis counts one per member added.
            ctx.ks.add(db, key, Value::Set(set), None, now);
            ctx.ks.dirty += added as u64 - 1;
            added
        }
    };
    if added > 0 {
        ctx.notify(SET, "sadd", key);
    }
    ctx.out.integer(added as i64);
    Ok(())
}

fn srem(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let key = ctx.arg(1);
    let Some(value) = ctx.ks.write(db, key, now) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let set = set_of_mut(value)?;
    let mut removed = 0;
    let args = ctx.args;
    for member in &args[2..] {
        if set.remove(member) {
            removed += 1;
            if set.is_empty() {
                break;
            }
        }
    }
    let emptied = set.is_empty();
    if emptied {
        ctx.ks.delete(db, key, now);
    }
    if removed > 0 {
        ctx.notify(SET, "srem", key);
        if emptied {
            ctx.notify(GENERIC, "del", key);
        }
    }
    ctx.ks.dirty += removed;
    ctx.out.integer(removed as i64);
    Ok(())
}

fn scard(ctx: &mut Ctx<'_>) -> CmdResult {
    let len = match ctx.ks.read(ctx.client.db, ctx.arg(1), ctx.now_ms) {
        Some(value) => set_of(value)?.len(),
        None => 0,
    };
    ctx.out.integer(len as i64);
    Ok(())
}

fn sismember(ctx: &mut Ctx<'_>) -> CmdResult {
    let member = ctx.arg(2);
    let found = match ctx.ks.read(ctx.client.db, ctx.arg(1), ctx.now_ms) {
        Some(value) => set_of(value)?.contains(member),
        None => false,
    };
    ctx.out.integer(found as i64);
    Ok(())
}

fn smismember(ctx: &mut Ctx<'_>) -> CmdResult {
    let set = match ctx.ks.read(ctx.client.db, ctx.arg(1), ctx.now_ms) {
        Some(value) => Some(set_of(value)?),
        None => None,
    };
    let args = ctx.args;
    let members = &args[2..];
    ctx.out.array(members.len());
    for member in members {
        let found = set.is_some_and(|s| s.contains(member));
        ctx.out.integer(found as i64);
    }
    Ok(())
}

fn smembers(ctx: &mut Ctx<'_>) -> CmdResult {
    // SMEMBERS is SINTER of one set.
    match ctx.ks.read(ctx.client.db, ctx.arg(1), ctx.now_ms) {
        Some(value) => reply_set(&mut ctx.out, set_of(value)?),
        None => ctx.out.set(0),
    }
    Ok(())
}

fn spop(ctx: &mut Ctx<'_>) -> CmdResult {
    match ctx.argc() {
        2 => {}
        3 => return spop_count(ctx),
        _ => return Err(Error::Syntax),
    }
    let (db, now) = (ctx.db(), ctx.now_ms);
    let key = ctx.arg(1);
    let Some(value) = ctx.ks.write(db, key, now) else {
        ctx.out.null();
        return Ok(());
    };
    let set = set_of_mut(value)?;
    let popped = set
        .pop_random(&mut ctx.server.rng)
        .expect("stored sets are not empty");
    let emptied = set.is_empty();
    let args = ctx.args;
    // Propagated as the SREM of the member it chose.
    ctx.propagate_as(|| {
        vec![
            Bytes::from_static(b"SREM"),
            args[1].clone(),
            popped.as_member().with_bytes(Bytes::copy_from_slice),
        ]
    });
    ctx.notify(SET, "spop", key);
    reply_member(&mut ctx.out, popped.as_member());
    if emptied {
        ctx.ks.delete(db, key, now);
        ctx.notify(GENERIC, "del", key);
    } else {
        ctx.ks.dirty += 1;
    }
    Ok(())
}

/// SPOP's way of choosing when a count leaves few members: below this ratio of members kept to
/// members popped, it picks the members to keep instead, into a new set.
const SPOP_MOVE_STRATEGY_MUL: u64 = 5;

fn spop_count(ctx: &mut Ctx<'_>) -> CmdResult {
    let count = positive_count(ctx.arg(2))?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let max = ctx.server.config.encodings.set_max_intset_entries;
    let key = ctx.arg(1);
    let Some(value) = ctx.ks.write(db, key, now) else {
        ctx.out.set(0);
        return Ok(());
    };
    set_of_mut(value)?;
    if count == 0 {
        ctx.out.set(0);
        return Ok(());
    }
    // Redis announces the pop before it replies with the members.
    ctx.notify(SET, "spop", key);
    let propagating = ctx.ks.stream.is_on();
    let value = ctx.ks.lookup(db, key, now, Access::NoTouch);
    let set = set_of_mut(&mut value.expect("looked up above").value)?;
    let size = set.len() as u64;
    if count >= size {
        // The whole set: Redis replies with SUNION of the key (a copy, compact if it can be,
        // walked in its own order) and deletes it.
        let copy = union_of(&[Some(&*set)], max);
        reply_set(&mut ctx.out, &copy);
        ctx.ks.delete(db, key, now);
        let args = ctx.args;
        ctx.propagate_as(|| vec![Bytes::from_static(b"DEL"), args[1].clone()]);
        ctx.notify(GENERIC, "del", key);
        return Ok(());
    }
    let rng = &mut ctx.server.rng;
    let remaining = size - count;
    ctx.out.set(count as usize);
    // Propagated as one SREM per member popped, not as SPOP (whose choice is random).
    let mut srems = Vec::new();
    let srem = |member: &[u8]| {
        vec![
            Bytes::from_static(b"SREM"),
            ctx.args[1].clone(),
            Bytes::copy_from_slice(member),
        ]
    };
    if remaining * SPOP_MOVE_STRATEGY_MUL > count {
        for _ in 0..count {
            let popped = set.pop_random(rng).expect("count < size");
            reply_member(&mut ctx.out, popped.as_member());
            if propagating {
                srems.push(popped.as_member().with_bytes(srem));
            }
        }
    } else {
        // Few members stay: move them to a new set (built from scratch, so compact when it
        // can be) and reply with what is left of the old one.
        let mut kept = SetValue::new();
        for _ in 0..remaining {
            let member = set.pop_random(rng).expect("remaining < size");
            kept.insert_member(member.as_member(), max);
        }
        for member in set.iter() {
            reply_member(&mut ctx.out, member);
            if propagating {
                srems.push(member.with_bytes(srem));
            }
        }
        // The key keeps its TTL (Redis overwrites the value only).
        *set = kept;
    }
    ctx.ks.dirty += count;
    ctx.prevent_propagation();
    let db = ctx.db();
    for args in srems {
        ctx.ks.stream.also(db, args);
    }
    Ok(())
}

/// SRANDMEMBER's threshold between its two ways of picking distinct members: when the count is
/// above a third of the set, it copies the set and drops random members instead.
const SRANDMEMBER_SUB_STRATEGY_MUL: u64 = 3;

fn srandmember(ctx: &mut Ctx<'_>) -> CmdResult {
    match ctx.argc() {
        2 => {}
        3 => return srandmember_count(ctx),
        _ => return Err(Error::Syntax),
    }
    let Some(value) = ctx.ks.read(ctx.client.db, ctx.arg(1), ctx.now_ms) else {
        ctx.out.null();
        return Ok(());
    };
    let set = set_of(value)?;
    let member = set
        .random(&mut ctx.server.rng)
        .expect("stored sets are not empty");
    reply_member(&mut ctx.out, member);
    Ok(())
}

fn srandmember_count(ctx: &mut Ctx<'_>) -> CmdResult {
    let n = ctx.int_arg(2)?;
    if n == i64::MIN {
        return Err(Error::msg(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    let (count, distinct) = (n.unsigned_abs(), n >= 0);
    let Some(value) = ctx.ks.read(ctx.client.db, ctx.arg(1), ctx.now_ms) else {
        ctx.out.array(0);
        return Ok(());
    };
    let set = set_of(value)?;
    let rng = &mut ctx.server.rng;
    let out = &mut ctx.out;
    if count == 0 {
        out.array(0);
        return Ok(());
    }
    let size = set.len() as u64;
    if !distinct || count == 1 {
        // Independent picks, repeats allowed.
        out.array(count as usize);
        for _ in 0..count {
            reply_member(out, set.random(rng).expect("not empty"));
        }
        return Ok(());
    }
    if count >= size {
        reply_array_of(out, set);
        return Ok(());
    }
    let chosen: Vec<Member<'_>> = if count * SRANDMEMBER_SUB_STRATEGY_MUL > size {
        // Most of the set: drop random members from a copy until `count` remain.
        let mut all: Vec<Member<'_>> = set.iter().collect();
        while all.len() as u64 > count {
            let i = rand::Rng::gen_range(rng, 0..all.len());
            all.swap_remove(i);
        }
        all
    } else {
        // A small part: draw until `count` distinct members came up.
        let mut seen = HashSet::with_capacity(count as usize);
        let mut chosen = Vec::with_capacity(count as usize);
        while (chosen.len() as u64) < count {
            let member = set.random(rng).expect("not empty");
            if seen.insert(member) {
                chosen.push(member);
            }
        }
        chosen
    };
    out.array(chosen.len());
    for member in chosen {
        reply_member(out, member);
    }
    Ok(())
}

/// Replies with a whole set as a plain array (SRANDMEMBER's reply is an array in RESP3 too).
fn reply_array_of(out: &mut Writer<'_>, set: &SetValue) {
    out.array(set.len());
    for member in set.iter() {
        reply_member(out, member);
    }
}

fn smove(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let max = ctx.server.config.encodings.set_max_intset_entries;
    let (src, dst, member) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    // Both keys are looked up for writing first, as Redis does.
    let src_is_set = ctx
        .ks
        .write(db, src, now)
        .map(|v| matches!(v, Value::Set(_)));
    let dst_is_set = ctx
        .ks
        .write(db, dst, now)
        .map(|v| matches!(v, Value::Set(_)));
    let Some(src_is_set) = src_is_set else {
        ctx.out.integer(0);
        return Ok(());
    };
    if !src_is_set || dst_is_set == Some(false) {
        return Err(Error::WrongType);
    }
    if src == dst {
        let found = ctx_set(ctx, src).contains(member);
        ctx.out.integer(found as i64);
        return Ok(());
    }
    let source = ctx_set(ctx, src);
    if !source.remove(member) {
        ctx.out.integer(0);
        return Ok(());
    }
    let emptied = source.is_empty();
    if emptied {
        // Counted as the one change of the removal.
        ctx.ks.delete(db, src, now);
    } else {
        ctx.ks.dirty += 1;
    }
    ctx.notify(SET, "srem", src);
    if emptied {
        ctx.notify(GENERIC, "del", src);
    }
    if dst_is_set.is_some() {
        if ctx_set(ctx, dst).insert(member, max) {
            ctx.ks.dirty += 1;
            ctx.notify(SET, "sadd", dst);
        } else {
            // The member was there already: as in Redis, the destination did not change.
            ctx.ks.unnote_write(db, dst);
        }
    } else {
        let mut set = SetValue::new();
        set.insert(member, max);
        ctx.ks.add(db, dst, Value::Set(set), None, now);
        ctx.notify(SET, "sadd", dst);
    }
    ctx.out.integer(1);
    Ok(())
}

/// The set under `key`, which the caller has looked up and type-checked in this command.
fn ctx_set<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> &'c mut SetValue {
    let db = ctx.db();
    match ctx.ks.lookup(db, key, ctx.now_ms, Access::NoTouch) {
        Some(obj) => set_of_mut(&mut obj.value).expect("type checked"),
        None => unreachable!("looked up by the caller"),
    }
}

fn sscan(ctx: &mut Ctx<'_>) -> CmdResult {
    // Cursor first, then the key, then the options — Redis's order.
    let cursor = parse_cursor(ctx.arg(2))?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let key = ctx.arg(1);
    match ctx.ks.read(db, key, now) {
        None => {
            ctx.out.array(2);
            ctx.out.bulk(b"0");
            ctx.out.array(0);
            return Ok(());
        }
        Some(value) => {
            set_of(value)?;
        }
    }
    let ScanOptions { count, pattern, .. } = parse_scan_options(ctx.args, 3, false)?;
    let count = count as u64;
    let set = match ctx.ks.dbs[db].main.get(key).map(|o| &o.value) {
        Some(Value::Set(s)) => s,
        _ => unreachable!("looked up above"),
    };
    // The matching members, already encoded as bulk strings: one buffer, no copy per member.
    let mut found = 0usize;
    let mut encoded = Vec::new();
    let next = set.scan(cursor, count, |member| {
        member.with_bytes(|bytes| {
            if pattern.is_some_and(|p| !glob::matches(p, bytes, false)) {
                return;
            }
            found += 1;
            encoded.push(b'$');
            encoded.extend_from_slice(itoa::Buffer::new().format(bytes.len()).as_bytes());
            encoded.extend_from_slice(b"\r\n");
            encoded.extend_from_slice(bytes);
            encoded.extend_from_slice(b"\r\n");
        })
    });
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(found);
    ctx.out.raw(&encoded);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Set algebra
// ---------------------------------------------------------------------------------------------

fn sinter(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[1..];
    inter_generic(ctx, keys, Inter::Reply)
}

fn sinterstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[2..];
    inter_generic(ctx, keys, Inter::Store(ctx.arg(1)))
}

fn sintercard(ctx: &mut Ctx<'_>) -> CmdResult {
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
    let max = ctx.server.config.encodings.set_max_intset_entries;
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
            let mut result = SetValue::new();
            for m in first.iter().filter(|m| in_all(*m)) {
                result.insert_member(m, max);
            }
            store_result(ctx, dst, result, "sinterstore");
        }
    }
    Ok(())
}

fn sunion(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[1..];
    union_diff_generic(ctx, keys, None, Op::Union)
}

fn sunionstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[2..];
    union_diff_generic(ctx, keys, Some(ctx.arg(1)), Op::Union)
}

fn sdiff(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let keys = &args[1..];
    union_diff_generic(ctx, keys, None, Op::Diff)
}

fn sdiffstore(ctx: &mut Ctx<'_>) -> CmdResult {
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
    let max = ctx.server.config.encodings.set_max_intset_entries;
    let sets = sets_at(ctx.ks, db, keys);
    let result = match op {
        Op::Union => union_of(&sets, max),
        Op::Diff => diff_of(sets, max),
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
fn union_of(sets: &[Option<&SetValue>], max: usize) -> SetValue {
    let mut result = SetValue::new();
    for set in sets.iter().flatten() {
        for m in set.iter() {
            result.insert_member(m, max);
        }
    }
    result
}

/// The members of the first set in none of the others. Redis picks one of two algorithms by
/// estimated work, and the choice shows in the result's encoding: the first adds only the
/// survivors, the second adds the whole first set and then removes the others' members (so a
/// result that was ever too big for an intset stays a table).
fn diff_of(mut sets: Vec<Option<&SetValue>>, max: usize) -> SetValue {
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
                result.insert_member(m, max);
            }
        }
    } else {
        for m in first.iter() {
            result.insert_member(m, max);
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

// ---------------------------------------------------------------------------------------------
// The command table
// ---------------------------------------------------------------------------------------------

const RO_ACCESS: u16 = flag::RO | flag::ACCESS;

const READONLY_FAST: Flags = Flags::READONLY.union(Flags::FAST);

const WRITE_FAST: Flags = Flags::WRITE.union(Flags::FAST);

const WRITE_DENYOOM: Flags = Flags::WRITE.union(Flags::DENYOOM);

const ORDER_TIP: &[&str] = &["nondeterministic_output_order"];

const RANDOM_TIP: &[&str] = &["nondeterministic_output"];

/// Every argument from 1 on is a key read (SINTER, SUNION, SDIFF).
const ALL_READ: &[KeySpec] = &[KeySpec::range(1, -1, 1, RO_ACCESS)];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("sadd", -3, sadd)
        .flags(WRITE_DENYOOM.union(Flags::FAST))
        .acl(Acl::SET)
        .keys(&[KeySpec::single(1, flag::RW | flag::INSERT)])
        .doc(
            "set",
            "1.0.0",
            "O(1) per member added",
            "Adds members to a set, creating it if needed; returns how many were new.",
            "key member...",
        ),
    CommandSpec::new("srem", -3, srem)
        .flags(WRITE_FAST)
        .acl(Acl::SET)
        .keys(&[KeySpec::single(1, flag::RW | flag::DELETE)])
        .doc(
            "set",
            "1.0.0",
            "O(1) per member removed",
            "Removes members from a set; returns how many were there. An emptied set is deleted.",
            "key member...",
        ),
    CommandSpec::new("scard", 2, scard)
        .flags(READONLY_FAST)
        .acl(Acl::SET)
        .keys(&[KeySpec::single(1, flag::RO)])
        .doc(
            "set",
            "1.0.0",
            "O(1)",
            "Returns the number of members of a set.",
            "key",
        ),
    CommandSpec::new("sismember", 3, sismember)
        .flags(READONLY_FAST)
        .acl(Acl::SET)
        .keys(&[KeySpec::single(1, flag::RO)])
        .doc(
            "set",
            "1.0.0",
            "O(1)",
            "Tells whether a value is a member of a set.",
            "key member",
        ),
    CommandSpec::new("smismember", -3, smismember)
        .flags(READONLY_FAST)
        .acl(Acl::SET)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "set",
            "6.2.0",
            "O(1) per value asked about",
            "Tells, for each of several values, whether it is a member of a set.",
            "key member...",
        ),
    CommandSpec::new("smembers", 2, smembers)
        .flags(Flags::READONLY)
        .acl(Acl::SET)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .tips(ORDER_TIP)
        .doc(
            "set",
            "1.0.0",
            "O(N) in the size of the set",
            "Returns every member of a set.",
            "key",
        ),
    CommandSpec::new("spop", -2, spop)
        .flags(WRITE_FAST)
        .acl(Acl::SET)
        .keys(&[KeySpec::single(1, flag::RW | flag::ACCESS | flag::DELETE)])
        .tips(RANDOM_TIP)
        .doc(
            "set",
            "1.0.0",
            "O(1) without a count, O(count) with one",
            "Removes and returns one or more random members of a set.",
            "key [count:integer]",
        ),
    CommandSpec::new("srandmember", -2, srandmember)
        .flags(Flags::READONLY)
        .acl(Acl::SET)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .tips(RANDOM_TIP)
        .doc(
            "set",
            "1.0.0",
            "O(1) without a count, O(|count|) with one",
            "Returns random members of a set without removing them; a negative count allows repeats.",
            "key [count:integer]",
        ),
    CommandSpec::new("sinter", -2, sinter)
        .flags(Flags::READONLY)
        .acl(Acl::SET)
        .keys(ALL_READ)
        .tips(ORDER_TIP)
        .doc(
            "set",
            "1.0.0",
            "O(N·M): the smallest set's size times the number of sets",
            "Returns the members common to all the given sets.",
            "key...",
        ),
    CommandSpec::new("sintercard", -3, sintercard)
        .flags(Flags::READONLY)
        .acl(Acl::SET)
        .keys(&[KeySpec {
            flags: RO_ACCESS,
            begin: Begin::Index(1),
            find: Find::Keynum {
                count_index: 0,
                first_key: 1,
                step: 1,
            },
            notes: "",
        }])
        .doc(
            "set",
            "7.0.0",
            "O(N·M): the smallest set's size times the number of sets",
            "Counts the members common to all the given sets, stopping early at an optional limit.",
            "numkeys:integer key... [LIMIT limit:integer]",
        ),
    CommandSpec::new("sinterstore", -3, sinterstore)
        .flags(WRITE_DENYOOM)
        .acl(Acl::SET)
        .keys(&[
            KeySpec::single(1, flag::RW | flag::UPDATE),
            KeySpec::range(2, -1, 1, RO_ACCESS),
        ])
        .doc(
            "set",
            "1.0.0",
            "O(N·M): the smallest set's size times the number of sets",
            "Stores the intersection of the given sets under a key; returns its size.",
            "destination:key key...",
        ),
    CommandSpec::new("sunion", -2, sunion)
        .flags(Flags::READONLY)
        .acl(Acl::SET)
        .keys(ALL_READ)
        .tips(ORDER_TIP)
        .doc(
            "set",
            "1.0.0",
            "O(N) in the total size of the sets",
            "Returns the members of any of the given sets.",
            "key...",
        ),
    CommandSpec::new("sunionstore", -3, sunionstore)
        .flags(WRITE_DENYOOM)
        .acl(Acl::SET)
        .keys(&[
            KeySpec::single(1, flag::OW | flag::UPDATE),
            KeySpec::range(2, -1, 1, RO_ACCESS),
        ])
        .doc(
            "set",
            "1.0.0",
            "O(N) in the total size of the sets",
            "Stores the union of the given sets under a key; returns its size.",
            "destination:key key...",
        ),
    CommandSpec::new("sdiff", -2, sdiff)
        .flags(Flags::READONLY)
        .acl(Acl::SET)
        .keys(ALL_READ)
        .tips(ORDER_TIP)
        .doc(
            "set",
            "1.0.0",
            "O(N) in the total size of the sets",
            "Returns the members of the first set that are in none of the others.",
            "key...",
        ),
    CommandSpec::new("sdiffstore", -3, sdiffstore)
        .flags(WRITE_DENYOOM)
        .acl(Acl::SET)
        .keys(&[
            KeySpec::single(1, flag::OW | flag::UPDATE),
            KeySpec::range(2, -1, 1, RO_ACCESS),
        ])
        .doc(
            "set",
            "1.0.0",
            "O(N) in the total size of the sets",
            "Stores the difference of the given sets under a key; returns its size.",
            "destination:key key...",
        ),
    CommandSpec::new("smove", 4, smove)
        .flags(WRITE_FAST)
        .acl(Acl::SET)
        .keys(&[
            KeySpec::single(1, flag::RW | flag::ACCESS | flag::DELETE),
            KeySpec::single(2, flag::RW | flag::INSERT),
        ])
        .doc(
            "set",
            "1.0.0",
            "O(1)",
            "Moves a member from one set to another; returns 1 if it was in the source.",
            "source:key destination:key member",
        ),
    CommandSpec::new("sscan", -3, sscan)
        .flags(Flags::READONLY)
        .acl(Acl::SET)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .tips(RANDOM_TIP)
        .doc(
            "set",
            "2.8.0",
            "O(1) per call, O(N) for a whole iteration",
            "Walks the members of a set a few at a time with a cursor.",
            "key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]",
        ),
];

#[cfg(test)]
mod tests {
    use crate::io::test_harness::Harness;

    fn text(h: &mut Harness, line: &str) -> String {
        h.run_text(line)
    }

    #[test]
    fn sadd_converts_when_redis_does() {
        let mut h = Harness::new();
        assert_eq!(
            text(&mut h, "CONFIG SET set-max-intset-entries 3"),
            "+OK\r\n"
        );
        assert_eq!(text(&mut h, "SADD s 3 1 2 1"), ":3\r\n");
        assert_eq!(text(&mut h, "OBJECT ENCODING s"), "$6\r\nintset\r\n");
        assert_eq!(
            text(&mut h, "SMEMBERS s"),
            "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n"
        );
        assert_eq!(text(&mut h, "SADD s 4"), ":1\r\n");
        assert_eq!(text(&mut h, "OBJECT ENCODING s"), "$9\r\nhashtable\r\n");
        assert_eq!(text(&mut h, "SREM s 1 2 3"), ":3\r\n");
        assert_eq!(text(&mut h, "OBJECT ENCODING s"), "$9\r\nhashtable\r\n");
        assert_eq!(text(&mut h, "SADD t 01"), ":1\r\n");
        assert_eq!(text(&mut h, "OBJECT ENCODING t"), "$9\r\nhashtable\r\n");
    }

    #[test]
    fn emptied_sets_are_deleted() {
        let mut h = Harness::new();
        text(&mut h, "SADD s a b");
        assert_eq!(text(&mut h, "SREM s a b c"), ":2\r\n");
        assert_eq!(text(&mut h, "EXISTS s"), ":0\r\n");
        text(&mut h, "SADD s 1");
        assert_eq!(text(&mut h, "SPOP s"), "$1\r\n1\r\n");
        assert_eq!(text(&mut h, "EXISTS s"), ":0\r\n");
        text(&mut h, "SADD s 1 2");
        assert_eq!(text(&mut h, "SMOVE s d 1"), ":1\r\n");
        assert_eq!(text(&mut h, "SMOVE s d 2"), ":1\r\n");
        assert_eq!(text(&mut h, "EXISTS s"), ":0\r\n");
        assert_eq!(text(&mut h, "SCARD d"), ":2\r\n");
    }

    #[test]
    fn spop_rebuild_keeps_ttl_and_compacts() {
        let mut h = Harness::new();
        text(&mut h, "CONFIG SET set-max-intset-entries 4");
        let members: Vec<String> = (1..=20).map(|i| i.to_string()).collect();
        text(&mut h, &format!("SADD s {}", members.join(" ")));
        text(&mut h, "EXPIRE s 100");
        assert_eq!(text(&mut h, "OBJECT ENCODING s"), "$9\r\nhashtable\r\n");
        // 3 kept × 5 ≤ 17 popped: the kept members move to a new, compact set.
        let reply = h.run("SPOP s 17");
        assert!(matches!(reply, embedis_protocol::Value::Array(ref v) if v.len() == 17));
        assert_eq!(text(&mut h, "OBJECT ENCODING s"), "$6\r\nintset\r\n");
        assert_eq!(text(&mut h, "SCARD s"), ":3\r\n");
        assert_eq!(text(&mut h, "TTL s"), ":100\r\n");
    }

    #[test]
    fn spop_and_srandmember_counts_are_distinct_members() {
        let mut h = Harness::new();
        let members: Vec<String> = (0..100).map(|i| format!("m{i}")).collect();
        text(&mut h, &format!("SADD s {}", members.join(" ")));
        for count in [1, 10, 40, 99, 100, 150] {
            let embedis_protocol::Value::Array(v) = h.run(&format!("SRANDMEMBER s {count}")) else {
                panic!()
            };
            let distinct: std::collections::HashSet<_> =
                v.iter().map(|m| format!("{m:?}")).collect();
            assert_eq!((v.len(), distinct.len()), (count.min(100), count.min(100)));
        }
        let embedis_protocol::Value::Array(v) = h.run("SRANDMEMBER s -300") else {
            panic!()
        };
        assert_eq!(v.len(), 300);
        let mut popped = std::collections::HashSet::new();
        for count in [10, 30, 55] {
            let embedis_protocol::Value::Array(v) = h.run(&format!("SPOP s {count}")) else {
                panic!()
            };
            assert_eq!(v.len(), count);
            for m in v {
                assert!(popped.insert(format!("{m:?}")));
            }
        }
        assert_eq!(text(&mut h, "SCARD s"), ":5\r\n");
    }

    #[test]
    fn sscan_walks_a_table_with_a_cursor() {
        use embedis_protocol::Value as R;
        let mut h = Harness::new();
        let members: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
        text(&mut h, &format!("SADD s {}", members.join(" ")));
        let mut seen = std::collections::HashSet::new();
        let mut cursor = "0".to_string();
        let mut calls = 0;
        loop {
            let R::Array(reply) = h.run(&format!("SSCAN s {cursor} COUNT 20")) else {
                panic!("array")
            };
            let (R::Bulk(next), R::Array(batch)) = (&reply[0], &reply[1]) else {
                panic!("cursor and members")
            };
            assert!(batch.len() < 100, "COUNT bounds the work of one call");
            for m in batch {
                let R::Bulk(m) = m else { panic!("bulk") };
                seen.insert(m.to_vec());
            }
            calls += 1;
            cursor = String::from_utf8(next.to_vec()).unwrap();
            if cursor == "0" {
                break;
            }
        }
        assert!(calls > 10);
        assert_eq!(seen.len(), 1000);
        // MATCH filters after the walk; an intset comes back whole whatever the cursor.
        text(&mut h, "SADD i 3 1 2 11");
        assert_eq!(
            text(&mut h, "SSCAN i 99 MATCH 1* COUNT 1"),
            "*2\r\n$1\r\n0\r\n*2\r\n$1\r\n1\r\n$2\r\n11\r\n"
        );
    }

    #[test]
    fn sintercard_stops_at_the_limit_and_smove_to_itself_is_a_lookup() {
        let mut h = Harness::new();
        text(&mut h, "SADD a 1 2 3 4");
        text(&mut h, "SADD b 2 3 4 5");
        assert_eq!(text(&mut h, "SINTERCARD 2 a b"), ":3\r\n");
        assert_eq!(text(&mut h, "SINTERCARD 2 a b LIMIT 2"), ":2\r\n");
        assert_eq!(text(&mut h, "SINTERCARD 2 a b LIMIT 0"), ":3\r\n");
        assert_eq!(text(&mut h, "SMOVE a a 1"), ":1\r\n");
        assert_eq!(text(&mut h, "SMOVE a a 9"), ":0\r\n");
        assert_eq!(text(&mut h, "SCARD a"), ":4\r\n");
    }

    #[test]
    fn sdiff_algorithm_choice_shows_in_the_encoding() {
        let mut h = Harness::new();
        text(&mut h, "CONFIG SET set-max-intset-entries 4");
        text(&mut h, "SADD a 1 2 3 4 5 6 7 8 9 10");
        text(&mut h, "SADD b 1 2 3");
        text(&mut h, "SADD c 4 5 6");
        text(&mut h, "SADD d 7 8");
        text(&mut h, "SADD e 9");
        // Work estimate: 5 × 10 / 2 = 25 > 10 + 9: the add-then-remove algorithm.
        assert_eq!(text(&mut h, "SDIFFSTORE r a b c d e"), ":1\r\n");
        assert_eq!(text(&mut h, "OBJECT ENCODING r"), "$9\r\nhashtable\r\n");
        assert_eq!(text(&mut h, "SDIFFSTORE r a b"), ":7\r\n");
        text(&mut h, "SADD f 1 2 3 4 5 6 7 8");
        assert_eq!(text(&mut h, "SDIFFSTORE r a f"), ":2\r\n");
        assert_eq!(text(&mut h, "OBJECT ENCODING r"), "$6\r\nintset\r\n");
        assert_eq!(text(&mut h, "SDIFF a f a"), "*0\r\n");
    }
}
