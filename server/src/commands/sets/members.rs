//! The commands on one set: SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SMEMBERS, SPOP,
//! SRANDMEMBER, SMOVE and SSCAN.

use bytes::Bytes;
use embedis_datatypes::glob;
use embedis_datatypes::set::{Member, SetLimits, SetValue};
use embedis_protocol::Writer;
use std::collections::HashSet;

use crate::base::compat::CompatVersion;
use crate::base::config::event_class::{GENERIC, SET};
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::commands::common::{parse_cursor, ScanOptions};
use crate::kernel::ctx::Ctx;
use crate::model::keyspace::Access;

use super::algebra::union_of;
use super::{positive_count, reply_member, reply_set, set_of, set_of_mut};

// ---------------------------------------------------------------------------------------------
// Single-set commands
// ---------------------------------------------------------------------------------------------

pub(super) fn sadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let limits = ctx.server.config.set_limits();
    let (key, args) = (ctx.arg(1), ctx.args);
    let members = &args[2..];
    let added = match ctx.ks.write(db, key, now) {
        Some(value) => {
            let set = set_of_mut(value)?;
            set.fit_for(members.len(), &limits);
            let added = members.iter().filter(|m| set.insert(m, &limits)).count();
            ctx.ks.dirty += added as u64;
            added
        }
        None => {
            let mut set = SetValue::create(&members[0], members.len(), &limits);
            let added = members.iter().filter(|m| set.insert(m, &limits)).count();
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

pub(super) fn srem(ctx: &mut Ctx<'_>) -> CmdResult {
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
        ctx.ks.delete_emptied(db, key, now);
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

pub(super) fn scard(ctx: &mut Ctx<'_>) -> CmdResult {
    let len = match ctx.ks.read(ctx.client.db, ctx.arg(1), ctx.now_ms) {
        Some(value) => set_of(value)?.len(),
        None => 0,
    };
    ctx.out.integer(len as i64);
    Ok(())
}

pub(super) fn sismember(ctx: &mut Ctx<'_>) -> CmdResult {
    let member = ctx.arg(2);
    let found = match ctx.ks.read(ctx.client.db, ctx.arg(1), ctx.now_ms) {
        Some(value) => set_of(value)?.contains(member),
        None => false,
    };
    ctx.out.integer(found as i64);
    Ok(())
}

pub(super) fn smismember(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn smembers(ctx: &mut Ctx<'_>) -> CmdResult {
    // SMEMBERS is SINTER of one set.
    match ctx.ks.read(ctx.client.db, ctx.arg(1), ctx.now_ms) {
        Some(value) => reply_set(&mut ctx.out, set_of(value)?),
        None => ctx.out.set(0),
    }
    Ok(())
}

pub(super) fn spop(ctx: &mut Ctx<'_>) -> CmdResult {
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
    let limits = ctx.server.config.set_limits();
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
        let copy = union_of(&[Some(&*set)], &limits);
        reply_set(&mut ctx.out, &copy);
        // A change per member popped, as Redis counts them.
        ctx.ks.delete_emptied(db, key, now);
        ctx.ks.dirty += size;
        let args = ctx.args;
        let unlink = ctx.server.config.lazyfree_lazy_server_del
            && ctx.server.config.compat_version >= CompatVersion::V7_2;
        let verb: &'static [u8] = if unlink { b"UNLINK" } else { b"DEL" };
        ctx.propagate_as(|| vec![Bytes::from_static(verb), args[1].clone()]);
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
    let few = remaining * SPOP_MOVE_STRATEGY_MUL > count;
    if few && matches!(set, SetValue::Pack(_)) {
        // A listpack is walked once: the members chosen come back in its order.
        let picked = set.pack_sample(count as usize, rng);
        let members: Vec<Member<'_>> = set.iter().collect();
        for &i in &picked {
            reply_member(&mut ctx.out, members[i]);
            if propagating {
                srems.push(members[i].with_bytes(srem));
            }
        }
        set.pack_remove_positions(&picked);
    } else if few {
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
        let kept = keep_random(set, remaining as usize, rng, &limits);
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

/// Takes `remaining` random members out of `set` into a new set, as SPOP's rebuild does: a
/// listpack's picks in its order into a listpack; otherwise one by one into a new set that
/// starts, from Redis 7.2, as a listpack when the members come from a table.
fn keep_random(
    set: &mut SetValue,
    remaining: usize,
    rng: &mut impl rand::Rng,
    limits: &SetLimits,
) -> SetValue {
    if let SetValue::Pack(_) = set {
        let picked = set.pack_sample(remaining, rng);
        let mut kept = SetValue::new_pack();
        let members: Vec<Member<'_>> = set.iter().collect();
        for &i in &picked {
            kept.insert_member(members[i], limits);
        }
        set.pack_remove_positions(&picked);
        return kept;
    }
    let mut kept = if limits.sized_creation && matches!(set, SetValue::Table(_)) {
        SetValue::new_pack()
    } else {
        SetValue::new()
    };
    for _ in 0..remaining {
        let member = set.pop_random(rng).expect("remaining < size");
        kept.insert_member(member.as_member(), limits);
    }
    kept
}

/// SRANDMEMBER's threshold between its two ways of picking distinct members: when the count is
/// above a third of the set, it copies the set and drops random members instead.
const SRANDMEMBER_SUB_STRATEGY_MUL: u64 = 3;

pub(super) fn srandmember(ctx: &mut Ctx<'_>) -> CmdResult {
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
    if let SetValue::Pack(_) = set {
        // Distinct members of a listpack come back in its order.
        let members: Vec<Member<'_>> = set.iter().collect();
        let picked = set.pack_sample(count as usize, rng);
        out.array(picked.len());
        for i in picked {
            reply_member(out, members[i]);
        }
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

pub(super) fn smove(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let limits = ctx.server.config.set_limits();
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
        if ctx_set(ctx, dst).insert(member, &limits) {
            ctx.ks.dirty += 1;
            ctx.notify(SET, "sadd", dst);
        } else {
            // The member was there already: as in Redis, the destination did not change.
            ctx.ks.unnote_write(db, dst);
        }
    } else {
        let mut set = SetValue::create(member, 1, &limits);
        set.insert(member, &limits);
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

pub(super) fn sscan(ctx: &mut Ctx<'_>) -> CmdResult {
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
    let novalues = crate::commands::common::novalues_word(ctx, false);
    let ScanOptions { count, pattern, .. } =
        crate::commands::common::parse_scan_options_with(ctx.args, 3, false, novalues)?;
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
