//! Hash commands: HSET, HSETNX, HMSET, HGET, HMGET, HDEL, HLEN, HSTRLEN, HEXISTS, HINCRBY,
//! HINCRBYFLOAT, HKEYS, HVALS, HGETALL, HRANDFIELD and HSCAN.
//!
//! The value type and its two encodings live in [`embedis_datatypes::hash`]; this module owns
//! Redis 7.0's command semantics on top: argument checks in Redis's order (HINCRBY parses its
//! increment before looking at the key, HSCAN its cursor before the key and its options after),
//! the conversion thresholds read from the `hash-max-listpack-*` settings at each write, the
//! reply shapes of both protocols (HGETALL is a map in RESP3, HRANDFIELD … WITHVALUES an array of
//! pairs), and the bookkeeping of a write: a hash emptied by HDEL is deleted, and the `dirty`
//! counter moves as Redis's does (one per field written or deleted).
//!
//! HINCRBYFLOAT computes in x87 long double exactly as INCRBYFLOAT does, through the helper the
//! string commands export.

use crate::base::config::event_class::{GENERIC, HASH};
use bytes::Bytes;
use embedis_datatypes::glob;
use embedis_datatypes::hash::{HashValue, Limits};
use embedis_datatypes::long_double::LongDouble;
use embedis_protocol::number::parse_i64;

use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::commands::common::long_double_add;
use crate::commands::common::{parse_cursor, parse_scan_options_with, ScanOptions};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::FieldEvents;
use crate::model::keyspace::{Access, Keyspace};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The conversion thresholds in force now (CONFIG SET changes them between commands).
pub(super) fn limits(ctx: &Ctx<'_>) -> Limits {
    let e = &ctx.server.config.encodings;
    Limits {
        max_entries: e.hash_max_listpack_entries,
        max_value: e.hash_max_listpack_value,
    }
}

/// The hash at `key` for a read: None if there is no such key, WRONGTYPE if it is no hash.
pub(super) fn read<'k>(
    ks: &'k mut Keyspace,
    db: usize,
    key: &[u8],
    now: i64,
) -> CmdResult<Option<&'k HashValue>> {
    match ks.read(db, key, now) {
        None => Ok(None),
        Some(Value::Hash(h)) => Ok(Some(h)),
        Some(_) => Err(Error::WrongType),
    }
}

/// The hash at `key` for a write, as [`read`].
pub(super) fn write<'k>(
    ks: &'k mut Keyspace,
    db: usize,
    key: &[u8],
    now: i64,
) -> CmdResult<Option<&'k mut HashValue>> {
    match ks.write(db, key, now) {
        None => Ok(None),
        Some(Value::Hash(h)) => Ok(Some(h)),
        Some(_) => Err(Error::WrongType),
    }
}

/// Stores a new hash under `key` (known absent). `changes` is what the command counts in
/// `dirty` (Redis counts fields, not the key creation, which `add` counts as one).
pub(super) fn create(ctx: &mut Ctx<'_>, key: &[u8], hash: HashValue, changes: u64) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    ctx.ks.add(db, key, Value::Hash(hash), None, now);
    ctx.ks.dirty = (ctx.ks.dirty + changes).saturating_sub(1);
}

// ---------------------------------------------------------------------------------------------
// Writes
// ---------------------------------------------------------------------------------------------

/// HSET and HMSET: the pairs are written in order (a repeated field keeps its last value).
fn set_pairs(ctx: &mut Ctx<'_>) -> CmdResult<usize> {
    if ctx.argc() % 2 == 1 {
        return Err(Error::WrongArity(ctx.cmd.full_name.clone().into()));
    }
    let limits = limits(ctx);
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let pairs = &ctx.args[2..];
    let written = (pairs.len() / 2) as u64;
    match write(ctx.ks, db, key, now)? {
        Some(hash) => {
            let added = hash.set_pairs(pairs, limits);
            ctx.ks.dirty += written;
            Ok(added)
        }
        None => {
            let hash = HashValue::from_pairs(pairs, limits);
            let added = hash.len();
            create(ctx, key, hash, written);
            Ok(added)
        }
    }
}

fn hset(ctx: &mut Ctx<'_>) -> CmdResult {
    let added = set_pairs(ctx)?;
    // A new key's event before the reply, `hset` after it, as in Redis.
    ctx.publish_events();
    ctx.out.integer(added as i64);
    ctx.notify(HASH, "hset", ctx.arg(1));
    Ok(())
}

fn hmset(ctx: &mut Ctx<'_>) -> CmdResult {
    set_pairs(ctx)?;
    ctx.publish_events();
    ctx.out.ok();
    ctx.notify(HASH, "hset", ctx.arg(1));
    Ok(())
}

fn hsetnx(ctx: &mut Ctx<'_>) -> CmdResult {
    let limits = limits(ctx);
    let (db, now, key, field, value) = (ctx.db(), ctx.now_ms, ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let mut expired = false;
    let set = match write(ctx.ks, db, key, now)? {
        Some(hash) if hash.contains(field) && !hash.is_expired(field, now) => false,
        Some(hash) => {
            // An expired field is removed by the lookup, then written as new.
            expired = hash.remove_expired(field, now);
            hash.set(field, value, limits);
            ctx.ks.dirty += 1;
            true
        }
        None => {
            create(ctx, key, HashValue::from_pairs(&[field, value], limits), 1);
            true
        }
    };
    ctx.publish_events();
    ctx.out.integer(set as i64);
    // Redis 8 sends a lookup's `hexpired` after the reply.
    if expired {
        ctx.ks.note_hash_field_expired(db, key);
    }
    if set {
        ctx.notify(HASH, "hset", key);
    }
    Ok(())
}

fn hdel(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let (removed, emptied) = match write(ctx.ks, db, key, now)? {
        None => (0, false),
        Some(hash) => {
            let removed = hash.remove_fields(&ctx.args[2..]);
            (removed, hash.is_empty())
        }
    };
    if emptied {
        ctx.ks.delete_emptied(db, key, now);
    }
    if removed > 0 {
        ctx.notify(HASH, "hdel", key);
        if emptied {
            ctx.notify(GENERIC, "del", key);
        }
    }
    ctx.ks.dirty += removed as u64;
    ctx.out.integer(removed as i64);
    Ok(())
}

/// An integer and its decimal digits, formatted once (the value stored, the number replied).
struct Digits {
    value: i64,
    buf: [u8; 20],
    len: u8,
}

impl Digits {
    fn new(value: i64) -> Self {
        let mut text = itoa::Buffer::new();
        let digits = text.format(value).as_bytes();
        let mut buf = [0u8; 20];
        buf[..digits.len()].copy_from_slice(digits);
        Digits {
            value,
            buf,
            len: digits.len() as u8,
        }
    }
}

impl AsRef<[u8]> for Digits {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

/// HINCRBY and HINCRBYFLOAT: the field's new value computed from its current one in a single
/// lookup, on the existing hash or on a new one (Redis creates the key first, but nothing can
/// fail for a missing field once the increment has parsed, so creating it after is the same).
fn update_field<V: AsRef<[u8]>>(
    ctx: &mut Ctx<'_>,
    compute: impl FnOnce(Option<&[u8]>) -> CmdResult<V>,
) -> CmdResult<(V, bool)> {
    let limits = limits(ctx);
    let (db, now, key, field) = (ctx.db(), ctx.now_ms, ctx.arg(1), ctx.arg(2));
    match write(ctx.ks, db, key, now)? {
        Some(hash) => {
            // An expired field is removed by the lookup: the increment starts from 0.
            let expired = hash.remove_expired(field, now);
            let value = hash.upsert(field, limits, compute);
            if expired {
                ctx.ks.dirty += 1;
            }
            let value = value?;
            ctx.ks.dirty += 1;
            Ok((value, expired))
        }
        None => {
            let mut hash = HashValue::new();
            let value = hash.upsert(field, limits, compute)?;
            create(ctx, key, hash, 1);
            Ok((value, false))
        }
    }
}

/// After the reply of HINCRBY or HINCRBYFLOAT: the `hexpired` event of the expired field its
/// lookup removed (Redis 8 sends it after the reply, before the command's own event).
fn note_lookup_expired(ctx: &mut Ctx<'_>, expired: bool) {
    if expired {
        let (db, key) = (ctx.db(), ctx.arg(1));
        ctx.ks
            .notify
            .note(crate::base::config::event_class::HASH, "hexpired", db, key);
        ctx.ks.touched_by_expiry(db, key);
    }
}

fn hincrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let increment = ctx.int_arg(3)?;
    let (result, expired) = update_field(ctx, |old| {
        let current = match old {
            Some(v) => parse_i64(v).ok_or(Error::msg("ERR hash value is not an integer"))?,
            None => 0,
        };
        let sum = current.checked_add(increment).ok_or(Error::Overflow)?;
        Ok(Digits::new(sum))
    })?;
    ctx.publish_events();
    ctx.out.integer(result.value);
    note_lookup_expired(ctx, expired);
    ctx.notify(HASH, "hincrby", ctx.arg(1));
    Ok(())
}

fn hincrbyfloat(ctx: &mut Ctx<'_>) -> CmdResult {
    let increment = LongDouble::from_redis_bytes(ctx.arg(3)).ok_or(Error::NotFloat)?;
    if !increment.is_finite() {
        return Err(Error::msg("ERR value is NaN or Infinity"));
    }
    let (text, expired) = update_field(ctx, |old| {
        let current = match old {
            Some(v) => LongDouble::from_redis_bytes(v)
                .ok_or(Error::msg("ERR hash value is not a float"))?,
            None => LongDouble::ZERO,
        };
        long_double_add(current, increment)
    })?;
    ctx.publish_events();
    ctx.out.bulk(text.as_bytes());
    // Propagated as the value it left (HSET), so that a replica does not redo the float sum.
    let args = ctx.args;
    ctx.propagate_as(|| {
        vec![
            Bytes::from_static(b"HSET"),
            args[1].clone(),
            args[2].clone(),
            Bytes::copy_from_slice(text.as_bytes()),
        ]
    });
    note_lookup_expired(ctx, expired);
    ctx.notify(HASH, "hincrbyfloat", ctx.arg(1));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------

/// Deletes the expired fields among `fields` of the hash at `key`, as a read of them does in
/// Redis 7.4+ (`hexpired` events, the key deleted when emptied); the caller found at least one.
fn expire_read_fields<T: AsRef<[u8]>>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    fields: &[T],
    events: FieldEvents,
) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    ctx.ks
        .expire_hash_fields(db, key, now, Some(fields), events);
}

fn hget(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key, field) = (ctx.db(), ctx.now_ms, ctx.arg(1), ctx.arg(2));
    let hash = read(ctx.ks, db, key, now)?;
    if hash.is_some_and(|h| h.is_expired(field, now)) {
        expire_read_fields(ctx, key, &[field], FieldEvents::Always);
        ctx.out.null();
        // Redis 8 sends the `hexpired` of a lookup after the reply.
        ctx.publish_events();
        return Ok(());
    }
    match hash.and_then(|h| h.get(field)) {
        Some(value) => ctx.out.bulk(value),
        None => ctx.out.null(),
    }
    Ok(())
}

fn hmget(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let fields = &ctx.args[2..];
    let mut hash = read(ctx.ks, db, key, now)?;
    let expired =
        hash.is_some_and(|h| h.ttls().is_some() && fields.iter().any(|f| h.is_expired(f, now)));
    if expired {
        expire_read_fields(ctx, key, fields, FieldEvents::HmgetQuirk);
        hash = match ctx.ks.lookup(db, key, now, Access::NoTouch) {
            Some(obj) => match &obj.value {
                Value::Hash(h) => Some(h),
                _ => None,
            },
            None => None,
        };
    }
    ctx.out.array(fields.len());
    for field in fields {
        // Still there only while a CLIENT PAUSE holds expired data in place.
        match hash
            .filter(|h| !h.is_expired(field, now))
            .and_then(|h| h.get(field))
        {
            Some(value) => ctx.out.bulk(value),
            None => ctx.out.null(),
        }
    }
    if expired {
        // Redis 8 sends the `hexpired` of a lookup after the reply.
        ctx.publish_events();
    }
    Ok(())
}

fn hlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let len = read(ctx.ks, db, key, now)?.map_or(0, HashValue::len);
    ctx.out.integer(len as i64);
    Ok(())
}

fn hstrlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key, field) = (ctx.db(), ctx.now_ms, ctx.arg(1), ctx.arg(2));
    let hash = read(ctx.ks, db, key, now)?;
    if hash.is_some_and(|h| h.is_expired(field, now)) {
        expire_read_fields(ctx, key, &[field], FieldEvents::Always);
        ctx.out.integer(0);
        ctx.publish_events();
        return Ok(());
    }
    let len = hash.and_then(|h| h.get(field)).map_or(0, <[u8]>::len);
    ctx.out.integer(len as i64);
    Ok(())
}

fn hexists(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key, field) = (ctx.db(), ctx.now_ms, ctx.arg(1), ctx.arg(2));
    let hash = read(ctx.ks, db, key, now)?;
    if hash.is_some_and(|h| h.is_expired(field, now)) {
        expire_read_fields(ctx, key, &[field], FieldEvents::Always);
        ctx.out.integer(0);
        ctx.publish_events();
        return Ok(());
    }
    let found = hash.is_some_and(|h| h.contains(field));
    ctx.out.integer(found as i64);
    Ok(())
}

/// What HKEYS, HVALS and HGETALL return of each pair.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Fields,
    Values,
    Both,
}

fn get_all(ctx: &mut Ctx<'_>, part: Part) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let hash = read(ctx.ks, db, key, now)?;
    // Expired fields still stored are left out, not deleted (as in Redis).
    let len = hash.map_or(0, |h| h.live_len(now));
    if part == Part::Both {
        ctx.out.map(len);
    } else {
        ctx.out.array(len);
    }
    if let Some(hash) = hash {
        let volatile = hash.ttls().is_some();
        for (field, value) in hash.iter() {
            if volatile && hash.is_expired(field, now) {
                continue;
            }
            if part != Part::Values {
                ctx.out.bulk(field);
            }
            if part != Part::Fields {
                ctx.out.bulk(value);
            }
        }
    }
    Ok(())
}

fn hkeys(ctx: &mut Ctx<'_>) -> CmdResult {
    get_all(ctx, Part::Fields)
}

fn hvals(ctx: &mut Ctx<'_>) -> CmdResult {
    get_all(ctx, Part::Values)
}

fn hgetall(ctx: &mut Ctx<'_>) -> CmdResult {
    get_all(ctx, Part::Both)
}

// ---------------------------------------------------------------------------------------------
// HRANDFIELD
// ---------------------------------------------------------------------------------------------

fn hrandfield(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    // The expired fields still stored are deleted first (one `hexpired` event, which Redis 8
    // sends after the reply).
    let volatile = matches!(
        ctx.ks.lookup(db, key, now, Access::NoTouch).map(|o| &o.value),
        Some(Value::Hash(h)) if h.ttls().is_some()
    );
    if volatile {
        ctx.ks
            .expire_hash_fields::<&[u8]>(db, key, now, None, FieldEvents::Always);
    }
    let result = random_fields(ctx);
    if volatile {
        ctx.publish_events();
    }
    result
}

/// HRANDFIELD once the expired fields are gone.
fn random_fields(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    if ctx.argc() == 2 {
        match read(ctx.ks, db, key, now)?.and_then(|h| h.random_pair(&mut ctx.server.rng)) {
            Some((field, _)) => ctx.out.bulk(field),
            None => ctx.out.null(),
        }
        return Ok(());
    }
    let count = ctx.int_arg(2)?;
    if count == i64::MIN {
        return Err(Error::msg(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    if ctx.argc() > 4 || (ctx.argc() == 4 && !ctx.arg_is(3, "withvalues")) {
        return Err(Error::Syntax);
    }
    let with_values = ctx.argc() == 4;
    // Redis bounds the count so that the doubled RESP2 reply length cannot overflow.
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(Error::msg("ERR value is out of range"));
    }
    let Some(hash) = read(ctx.ks, db, key, now)? else {
        ctx.out.array(0);
        return Ok(());
    };
    let resp3 = ctx.out.is_resp3();
    let size = hash.len() as u64;
    let pairs = match count {
        ..=-1 => count.unsigned_abs(),
        _ => (count as u64).min(size),
    };
    let (out, rng) = (&mut ctx.out, &mut ctx.server.rng);
    // RESP2 flattens field/value pairs into one array, RESP3 nests each pair.
    out.array(if with_values && !resp3 {
        pairs * 2
    } else {
        pairs
    } as usize);
    let mut emit = |field: &[u8], value: &[u8]| {
        if with_values && resp3 {
            out.array(2);
        }
        out.bulk(field);
        if with_values {
            out.bulk(value);
        }
    };
    if count == 0 {
        // Nothing to pick.
    } else if count < 0 || count == 1 {
        // Independent picks, repeats allowed (for 1, the same thing).
        hash.sample_with_repeats(pairs, rng, &mut emit);
    } else if pairs == size {
        // Asked for at least the whole hash: all of it, in its order.
        for (field, value) in hash.iter() {
            emit(field, value);
        }
    } else {
        hash.sample_distinct(pairs as usize, rng, &mut emit);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// HSCAN
// ---------------------------------------------------------------------------------------------

fn hscan(ctx: &mut Ctx<'_>) -> CmdResult {
    // The cursor is checked before the key, the options after it (as in Redis).
    let cursor = parse_cursor(ctx.arg(2))?;
    let novalues = crate::commands::common::novalues_word(ctx, true);
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let Some(hash) = read(ctx.ks, db, key, now)? else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(());
    };
    let ScanOptions {
        count,
        pattern,
        no_values,
        ..
    } = parse_scan_options_with(ctx.args, 3, false, novalues)?;
    let mut found: Vec<(&[u8], &[u8])> = Vec::new();
    let next = if hash.is_packed() {
        // A compact hash is returned whole, whatever the cursor.
        hash.scan(cursor, |f, v| found.push((f, v)))
    } else {
        // Redis counts fields and values against a doubled COUNT, and stops after COUNT × 10
        // buckets; both counters wrap like its signed longs (a huge COUNT means no limit).
        let target = count.wrapping_mul(2);
        let mut budget = target.wrapping_mul(10);
        let mut cursor = cursor;
        loop {
            cursor = hash.scan(cursor, |f, v| found.push((f, v)));
            if cursor == 0 || budget == 0 || (found.len() as u64 * 2) >= target as u64 {
                break;
            }
            budget = budget.wrapping_sub(1);
        }
        cursor
    };
    if hash.ttls().is_some() {
        // Expired fields still stored are left out, not deleted (as in Redis).
        found.retain(|(field, _)| !hash.is_expired(field, now));
    }
    if let Some(p) = pattern {
        found.retain(|(field, _)| glob::matches(p, field, false));
    }
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(found.len() * if no_values { 1 } else { 2 });
    for (field, value) in found {
        ctx.out.bulk(field);
        if !no_values {
            ctx.out.bulk(value);
        }
    }
    Ok(())
}

const RO_ACCESS: u16 = flag::RO | flag::ACCESS;

const WRITE_DENYOOM_FAST: Flags = Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST);

const READONLY_FAST: Flags = Flags::READONLY.union(Flags::FAST);

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("hset", -4, hset)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE)])
        .doc(
            "hash",
            "2.0.0",
            "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
            "Sets fields of a hash, creating it if needed; returns how many fields were new.",
            "key field_value=(field value)...",
        ),
    CommandSpec::new("hsetnx", 4, hsetnx)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RW | flag::INSERT)])
        .doc(
            "hash",
            "2.0.0",
            "O(1)",
            "Sets a field of a hash only if the field does not exist yet.",
            "key field value",
        ),
    CommandSpec::new("hget", 3, hget)
        .flags(READONLY_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "hash",
            "2.0.0",
            "O(1)",
            "Returns the value of one field of a hash.",
            "key field",
        ),
    CommandSpec::new("hmset", -4, hmset)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE)])
        .doc(
            "hash",
            "2.0.0",
            "O(N) where N is the number of fields being set.",
            "Sets fields of a hash and replies OK (older form of HSET).",
            "key field_value=(field value)...",
        ),
    CommandSpec::new("hmget", -3, hmget)
        .flags(READONLY_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "hash",
            "2.0.0",
            "O(N) where N is the number of fields being requested.",
            "Returns the values of several fields of a hash (nil for missing ones).",
            "key field...",
        ),
    CommandSpec::new("hdel", -3, hdel)
        .flags(Flags::WRITE.union(Flags::FAST))
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RW | flag::DELETE)])
        .doc(
            "hash",
            "2.0.0",
            "O(N) where N is the number of fields to be removed.",
            "Removes fields from a hash (and the key once empty); returns how many existed.",
            "key field...",
        ),
    CommandSpec::new("hlen", 2, hlen)
        .flags(READONLY_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RO)])
        .doc(
            "hash",
            "2.0.0",
            "O(1)",
            "Returns the number of fields of a hash.",
            "key",
        ),
    CommandSpec::new("hstrlen", 3, hstrlen)
        .flags(READONLY_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RO)])
        .doc(
            "hash",
            "3.2.0",
            "O(1)",
            "Returns the length in bytes of one field's value.",
            "key field",
        ),
    CommandSpec::new("hexists", 3, hexists)
        .flags(READONLY_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RO)])
        .doc(
            "hash",
            "2.0.0",
            "O(1)",
            "Tells whether a hash has a field.",
            "key field",
        ),
    CommandSpec::new("hincrby", 4, hincrby)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RW | flag::ACCESS | flag::UPDATE)])
        .doc(
            "hash",
            "2.0.0",
            "O(1)",
            "Adds an integer to a field's integer value (0 if missing).",
            "key field increment:integer",
        ),
    CommandSpec::new("hincrbyfloat", 4, hincrbyfloat)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RW | flag::ACCESS | flag::UPDATE)])
        .doc(
            "hash",
            "2.6.0",
            "O(1)",
            "Adds a floating-point number to a field's value (0 if missing), in long double precision.",
            "key field increment:double",
        ),
    CommandSpec::new("hkeys", 2, hkeys)
        .flags(Flags::READONLY)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .tips(&["nondeterministic_output_order"])
        .doc(
            "hash",
            "2.0.0",
            "O(N) where N is the size of the hash.",
            "Returns every field name of a hash.",
            "key",
        ),
    CommandSpec::new("hvals", 2, hvals)
        .flags(Flags::READONLY)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .tips(&["nondeterministic_output_order"])
        .doc(
            "hash",
            "2.0.0",
            "O(N) where N is the size of the hash.",
            "Returns every value of a hash.",
            "key",
        ),
    CommandSpec::new("hgetall", 2, hgetall)
        .flags(Flags::READONLY)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .tips(&["nondeterministic_output_order"])
        .doc(
            "hash",
            "2.0.0",
            "O(N) where N is the size of the hash.",
            "Returns every field and value of a hash.",
            "key",
        ),
    CommandSpec::new("hrandfield", -2, hrandfield)
        .flags(Flags::READONLY)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .tips(&["nondeterministic_output"])
        .doc(
            "hash",
            "6.2.0",
            "O(N) where N is the number of fields returned",
            "Returns random fields of a hash: distinct ones for a positive count, possibly repeated for a negative one, optionally with their values.",
            "key [options=(count:integer [WITHVALUES])]",
        ),
    CommandSpec::new("hscan", -3, hscan)
        .flags(Flags::READONLY)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .tips(&["nondeterministic_output"])
        .doc(
            "hash",
            "2.8.0",
            "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
            "Walks the fields and values of a hash with a cursor, a few at a time.",
            "key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]",
        ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_harness::{bulk, int, scan_reply, strings, Harness};
    use std::collections::HashSet;

    #[test]
    fn documented_syntax_parses() {
        use crate::kernel::table::docs::parse;
        for spec in COMMANDS {
            let args = parse(spec.syntax, spec.keys.len());
            assert!(args.is_ok(), "{}: {:?}", spec.name, args);
        }
    }

    #[test]
    fn dirty_counts_fields_as_redis_does() {
        let mut h = Harness::new();
        let steps = [
            ("HSET dk a 1 b 2 c 3", 3),
            ("HSET dk a 1", 1),
            ("HSET dk a 1 a 2", 2),
            ("HMSET dk z 1", 1),
            ("HSETNX dk a 1", 0),
            ("HSETNX dk q 1", 1),
            ("HDEL dk nope", 0),
            ("HDEL dk a b", 2),
            ("HDEL dk c z q", 3),
            ("HINCRBY dk2 f 1", 1),
            ("HINCRBY dk2 f 1", 1),
            ("HINCRBYFLOAT dk2 f 1", 1),
            ("HINCRBY dk2 f x", 0),
            ("HSET dk3 a 1 a 2 a 3", 3),
            ("HGET dk3 a", 0),
            ("HSETNX dk4 f v", 1),
            ("HINCRBYFLOAT dk5 f 1", 1),
        ];
        for (command, delta) in steps {
            let before = h.engine.ks.dirty;
            h.run_text(command);
            assert_eq!(h.engine.ks.dirty - before, delta, "{command}");
        }
        assert_eq!(h.encoding("dk"), "(none)", "emptied by HDEL, deleted");
    }

    #[test]
    fn writes_keep_the_ttl() {
        let mut h = Harness::new();
        for command in [
            "HSET k f w",
            "HSET k g w",
            "HSETNX k n v",
            "HDEL k g",
            "HINCRBY k i 1",
            "HINCRBYFLOAT k i 1",
            "HMSET k a b",
        ] {
            h.run_text("DEL k");
            h.run_text("HSET k f v");
            h.run_text("PEXPIRE k 100000");
            let deadline = h.expire_of("k");
            assert!(deadline.is_some());
            h.run_text(command);
            assert_eq!(h.expire_of("k"), deadline, "{command} keeps the TTL");
        }
        // An expired hash is gone before the write: HSET makes a new one without TTL.
        h.run_text("PEXPIRE k 10");
        h.advance_ms(11);
        assert_eq!(h.run_text("HSET k x y"), ":1\r\n");
        assert_eq!(h.run_text("HLEN k"), ":1\r\n");
        assert_eq!(h.expire_of("k"), None);
    }

    #[test]
    fn encodings_follow_the_configured_limits() {
        let mut h = Harness::new();
        h.run_text("CONFIG SET hash-max-listpack-entries 3");
        h.run_text("HSET k a 1 b 2 c 3");
        assert_eq!(h.encoding("k"), "listpack");
        h.run_text("HSET k d 4");
        assert_eq!(h.encoding("k"), "hashtable");
        h.run_text("HDEL k a b c");
        assert_eq!(h.encoding("k"), "hashtable", "one-way");
        h.run_text("CONFIG SET hash-max-listpack-entries 512");
        let long = "x".repeat(65);
        h.run_text(&format!("HSET l f {long}"));
        assert_eq!(h.encoding("l"), "hashtable");
        h.run_text("CONFIG SET hash-max-listpack-value 100");
        h.run_text(&format!("HSET m f {long}"));
        assert_eq!(h.encoding("m"), "listpack");
        h.run_text("CONFIG SET hash-max-listpack-value 10");
        h.run_text("HSET m g 1");
        assert_eq!(
            h.encoding("m"),
            "listpack",
            "only what is written is checked"
        );
        h.run_text("HINCRBYFLOAT m g 1e20");
        assert_eq!(h.encoding("m"), "hashtable", "a long result converts");
    }

    #[test]
    fn hscan_of_a_table_walks_every_field_with_its_value() {
        let mut h = Harness::new();
        let mut line = String::from("HSET big");
        for i in 0..1000 {
            line.push_str(&format!(" f{i} v{i}"));
        }
        h.run_text(&line);
        assert_eq!(h.encoding("big"), "hashtable");
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut calls = 0;
        loop {
            let (next, items) = scan_reply(&h.run(&format!("HSCAN big {cursor} COUNT 7")));
            for pair in items.chunks(2) {
                let (f, v) = (
                    String::from_utf8(pair[0].clone()).unwrap(),
                    String::from_utf8(pair[1].clone()).unwrap(),
                );
                assert_eq!(f[1..], v[1..], "each field comes with its value");
                seen.insert(f);
            }
            calls += 1;
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen.len(), 1000);
        assert!(calls > 50, "COUNT bounds each call ({calls} calls)");
        let (cursor, items) = scan_reply(&h.run("HSCAN big 0 MATCH f99* COUNT 100000"));
        assert_eq!((cursor, items.len()), (0, 22));
    }

    #[test]
    fn hrandfield_counts_and_distinctness() {
        let mut h = Harness::new();
        for packed in [true, false] {
            h.run_text("DEL r");
            let mut line = String::from("HSET r");
            for i in 0..20 {
                line.push_str(&format!(" f{i} v{i}"));
            }
            if !packed {
                let long = "x".repeat(70);
                line.push_str(&format!(" L{long} V{long}"));
            }
            h.run_text(&line);
            assert_eq!(h.encoding("r") == "listpack", packed);
            let size = if packed { 20 } else { 21 };
            for count in [1usize, 2, 5, 6, 7, 15, 19] {
                let fields = strings(&h.run(&format!("HRANDFIELD r {count}")));
                let distinct: HashSet<_> = fields.iter().collect();
                assert_eq!((fields.len(), distinct.len()), (count, count));
                let pairs = strings(&h.run(&format!("HRANDFIELD r {count} WITHVALUES")));
                assert_eq!(pairs.len(), 2 * count);
                for pair in pairs.chunks(2) {
                    assert_eq!(pair[0][1..], pair[1][1..], "values match their fields");
                }
            }
            assert_eq!(strings(&h.run("HRANDFIELD r 100")).len(), size);
            let repeats = strings(&h.run("HRANDFIELD r -500"));
            assert_eq!(repeats.len(), 500);
            let distinct: HashSet<_> = repeats.iter().collect();
            assert!(distinct.len() > 15, "picks spread over the hash");
            assert!(bulk(&h.run("HRANDFIELD r")).is_some());
        }
        assert_eq!(int(&h.run("HLEN r")), 21);
    }

    #[test]
    fn resp3_shapes() {
        let mut h = Harness::new();
        h.run_text("HELLO 3");
        h.run_text("HSET k a 1");
        assert_eq!(h.run_text("HGETALL k"), "%1\r\n$1\r\na\r\n$1\r\n1\r\n");
        assert_eq!(h.run_text("HGETALL nokey"), "%0\r\n");
        assert_eq!(
            h.run_text("HRANDFIELD k -2 WITHVALUES"),
            "*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"
        );
        assert_eq!(h.run_text("HRANDFIELD nokey"), "_\r\n");
        assert_eq!(h.run_text("HMGET k a b"), "*2\r\n$1\r\n1\r\n_\r\n");
        assert_eq!(
            h.run_text("HSCAN k 0"),
            "*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"
        );
    }
}
