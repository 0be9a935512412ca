//! Generic key commands: DEL, UNLINK, EXISTS, TOUCH, TYPE, KEYS, SCAN, RANDOMKEY, RENAME,
//! RENAMENX, COPY, MOVE and the OBJECT container (ENCODING, REFCOUNT, IDLETIME, FREQ, HELP).
//!
//! These commands work on keys whatever their type, so they own the rules about what a command
//! sees of the keyspace as a whole. Single-key commands go through [`Keyspace::lookup`] with the
//! access Redis uses — a read (hit/miss counted, LRU touched), a write (LRU touched), or an
//! inspection (EXISTS, TYPE, OBJECT: hit/miss counted, LRU left alone, so that looking at a key
//! does not make it look used). The whole-keyspace commands follow Redis 7.0 exactly on expired
//! keys, because users see the difference: KEYS skips logically expired keys without deleting
//! them, SCAN deletes the expired keys it returns would have contained, RANDOMKEY deletes expired
//! picks and picks again.
//!
//! Redis compares option words with C's `strcasecmp`, which stops at a NUL byte, so
//! `SCAN 0 "count\0x" 5` is a COUNT; [`word_is`] reproduces that, and the SCAN cursor is parsed
//! with `strtoul`'s rules (sign allowed, wrapping negatives, NUL-terminated).
//!
//! [`Keyspace::lookup`]: crate::model::keyspace::Keyspace::lookup

use crate::base::config::event_class::GENERIC;
use embedis_datatypes::{glob, SmallBytes};

use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::{lru_clock, Object, Value};
use crate::commands::common::{db_index, int32_arg, parse_cursor, ScanOptions};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::Access;

fn del(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut deleted = 0;
    for key in &ctx.args[1..] {
        if ctx.ks.delete(db, key, now) {
            ctx.notify(GENERIC, "del", key);
            deleted += 1;
        }
    }
    ctx.out.integer(deleted as i64);
    Ok(())
}

/// UNLINK frees values off the executor thread when freeing them would take long (as Redis
/// does above 64 allocations, see `Keyspace::unlink`); otherwise it is DEL.
fn unlink(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut deleted = 0;
    for key in &ctx.args[1..] {
        if ctx.ks.unlink(db, key, now) {
            ctx.notify(GENERIC, "del", key);
            deleted += 1;
        }
    }
    ctx.out.integer(deleted as i64);
    Ok(())
}

fn exists(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let found = ctx.args[1..]
        .iter()
        .filter(|key| ctx.ks.lookup(db, key, now, Access::Inspect).is_some())
        .count();
    ctx.out.integer(found as i64);
    Ok(())
}

fn touch(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let found = ctx.args[1..]
        .iter()
        .filter(|key| ctx.ks.lookup(db, key, now, Access::Read).is_some())
        .count();
    ctx.out.integer(found as i64);
    Ok(())
}

fn type_(ctx: &mut Ctx<'_>) -> CmdResult {
    let name = match ctx
        .ks
        .lookup(ctx.client.db, ctx.arg(1), ctx.now_ms, Access::Inspect)
    {
        Some(obj) => obj.value.value_type().name(),
        None => "none",
    };
    ctx.out.simple(name.as_bytes());
    Ok(())
}

fn keys(ctx: &mut Ctx<'_>) -> CmdResult {
    let pattern = ctx.arg(1);
    // A lone `*` matches everything, the empty key included (the glob itself never matches an
    // empty string): Redis special-cases it, and it saves matching every key.
    let all = pattern == b"*";
    let now = ctx.now_ms;
    let d = &ctx.ks.dbs[ctx.client.db];
    // Redis 7.0 leaves logically expired keys in place here (it only hides them), so KEYS
    // does not change DBSIZE.
    let found: Vec<&[u8]> = d
        .main
        .iter()
        .filter(|(key, obj)| {
            (all || glob::matches(pattern, key, false))
                && !(obj.has_expire()
                    && matches!(d.expires.get(key.as_slice()), Some(&when) if now > when))
        })
        .map(|(key, _)| key.as_slice())
        .collect();
    ctx.out.array(found.len());
    for key in found {
        ctx.out.bulk(key);
    }
    Ok(())
}

fn scan(ctx: &mut Ctx<'_>) -> CmdResult {
    // The keys it finds expired go out as separate DELs, not one transaction.
    ctx.propagate_unwrapped();
    // The cursor is checked before the options, as in Redis.
    let cursor = parse_cursor(ctx.arg(1))?;
    let novalues = crate::commands::common::novalues_word(ctx, false);
    let ScanOptions {
        count,
        pattern,
        type_name,
        ..
    } = crate::commands::common::parse_scan_options_with(ctx.args, 2, true, novalues)?;
    let count = count as u64;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (next, candidates) = ctx.ks.scan_keys(db, cursor, count);
    let mut found: Vec<SmallBytes> = Vec::with_capacity(candidates.len());
    for key in candidates {
        if pattern.is_some_and(|p| !glob::matches(p, &key, false)) {
            continue;
        }
        if let Some(wanted) = type_name {
            // Redis looks the key up to learn its type: that counts a hit or miss, and deletes
            // the key if it has expired — which then passes for type "none" and, being gone
            // already, is not filtered out below. We reproduce that quirk.
            let actual = match ctx.ks.lookup(db, &key, now, Access::Inspect) {
                Some(obj) => obj.value.value_type().name(),
                None => "none",
            };
            if !wanted.eq_ignore_ascii_case(actual.as_bytes()) {
                continue;
            }
        }
        if ctx.ks.expire_if_needed(db, &key, now) {
            continue;
        }
        found.push(key);
    }
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(found.len());
    for key in &found {
        ctx.out.bulk(key);
    }
    Ok(())
}

fn randomkey(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.propagate_unwrapped();
    match ctx
        .ks
        .random_key(ctx.client.db, ctx.now_ms, &mut ctx.server.rng)
    {
        Some(key) => ctx.out.bulk(&key),
        None => ctx.out.null(),
    }
    Ok(())
}

fn rename(ctx: &mut Ctx<'_>) -> CmdResult {
    rename_generic(ctx, false)
}

fn renamenx(ctx: &mut Ctx<'_>) -> CmdResult {
    rename_generic(ctx, true)
}

/// RENAME and RENAMENX: the object moves as is (value, LRU clock), and so does its TTL; an
/// existing destination is deleted first (RENAME) or makes the command a no-op (RENAMENX).
fn rename_generic(ctx: &mut Ctx<'_>, nx: bool) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (from, to) = (ctx.arg(1), ctx.arg(2));
    if ctx.ks.lookup(db, from, now, Access::Write).is_none() {
        return Err(Error::NoSuchKey);
    }
    if from == to {
        reply_renamed(ctx, nx, false);
        return Ok(());
    }
    if ctx.ks.lookup(db, to, now, Access::Write).is_some() {
        if nx {
            reply_renamed(ctx, nx, false);
            return Ok(());
        }
        ctx.ks.db(db).remove(to);
    }
    let (_, obj, deadline) = ctx.ks.take(db, from).expect("looked up above");
    ctx.ks.put(db, SmallBytes::new(to), obj, deadline);
    ctx.ks.dirty += 1;
    ctx.notify(GENERIC, "rename_from", from);
    ctx.notify(GENERIC, "rename_to", to);
    reply_renamed(ctx, nx, true);
    Ok(())
}

/// RENAME answers OK whenever the source exists; RENAMENX answers whether it renamed.
fn reply_renamed(ctx: &mut Ctx<'_>, nx: bool, renamed: bool) {
    if nx {
        ctx.out.integer(renamed as i64);
    } else {
        ctx.out.ok();
    }
}

fn copy(ctx: &mut Ctx<'_>) -> CmdResult {
    let (src_db, now) = (ctx.db(), ctx.now_ms);
    let mut dst_db = src_db;
    let mut replace = false;
    let mut i = 3;
    while i < ctx.argc() {
        if word_is(ctx.arg(i), "replace") {
            replace = true;
        } else if word_is(ctx.arg(i), "db") && i + 1 < ctx.argc() {
            dst_db = db_index(ctx, int32_arg(ctx, i + 1, None)?)?;
            i += 1;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    let (from, to) = (ctx.arg(1), ctx.arg(2));
    if src_db == dst_db && from == to {
        return Err(Error::msg(
            "ERR source and destination objects are the same",
        ));
    }
    let Some(source) = ctx.ks.lookup(src_db, from, now, Access::Read) else {
        ctx.out.integer(0);
        return Ok(());
    };
    // The copy is a new object: fresh LRU clock (or LFU counter), and never one of Redis's
    // shared integers.
    let value = source.value.clone();
    let mut duplicate = ctx.ks.access.object(value, now);
    duplicate.set_private(true);
    let deadline = ctx.ks.expire_of(src_db, from);
    let exists = ctx.ks.lookup(dst_db, to, now, Access::Write).is_some();
    if exists && !replace {
        ctx.out.integer(0);
        return Ok(());
    }
    // A vector set is a module type in Redis, one without a copy callback.
    if matches!(duplicate.value, Value::VectorSet(_)) {
        return Err(Error::msg("ERR not supported for this module key"));
    }
    if exists {
        ctx.ks.db(dst_db).remove(to);
    }
    ctx.ks.put(dst_db, SmallBytes::new(to), duplicate, deadline);
    ctx.ks.dirty += 1;
    if ctx.ks.notify.wants(GENERIC) {
        ctx.notify_in(dst_db, GENERIC, "copy_to", to);
    }
    ctx.out.integer(1);
    Ok(())
}

fn move_(ctx: &mut Ctx<'_>) -> CmdResult {
    let (src_db, now) = (ctx.db(), ctx.now_ms);
    let dst_db = db_index(ctx, int32_arg(ctx, 2, None)?)?;
    if dst_db == src_db {
        return Err(Error::msg(
            "ERR source and destination objects are the same",
        ));
    }
    let key = ctx.arg(1);
    if ctx.ks.lookup(src_db, key, now, Access::Write).is_none()
        || ctx.ks.lookup(dst_db, key, now, Access::Write).is_some()
    {
        ctx.out.integer(0);
        return Ok(());
    }
    let (name, obj, deadline) = ctx.ks.take(src_db, key).expect("looked up above");
    ctx.ks.put(dst_db, name, obj, deadline);
    ctx.ks.dirty += 1;
    if ctx.ks.notify.wants(GENERIC) {
        ctx.notify_in(src_db, GENERIC, "move_from", key);
        ctx.notify_in(dst_db, GENERIC, "move_to", key);
    }
    ctx.out.integer(1);
    Ok(())
}

/// OBJECT's key lookup: an inspection (hit/miss counted, LRU untouched — OBJECT IDLETIME must
/// not reset what it measures). Answers null for a missing key; otherwise returns what `f` says
/// of the object.
fn object_inspect<T>(ctx: &mut Ctx<'_>, f: impl FnOnce(&Object) -> T) -> Option<T> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let found = ctx
        .ks
        .lookup(db, ctx.arg(2), now, Access::Object)
        .map(|obj| f(obj));
    if found.is_none() {
        ctx.out.null();
    }
    found
}

fn object_encoding(ctx: &mut Ctx<'_>) -> CmdResult {
    if let Some(name) = object_inspect(ctx, |obj| obj.value.encoding_name()) {
        ctx.out.bulk(name.as_bytes());
    }
    Ok(())
}

fn object_refcount(ctx: &mut Ctx<'_>) -> CmdResult {
    if let Some(count) = object_inspect(ctx, Object::refcount) {
        ctx.out.integer(count);
    }
    Ok(())
}

/// Idle seconds from the LRU clock; under an LFU policy the header holds a counter instead, and
/// an existing key answers Redis's error (a missing key answers null either way).
fn object_idletime(ctx: &mut Ctx<'_>) -> CmdResult {
    let now_lru = lru_clock(ctx.now_ms);
    let lfu = ctx.ks.access.lfu;
    if let Some(idle_ms) = object_inspect(ctx, |obj| obj.idle_ms(now_lru)) {
        if lfu {
            return Err(Error::msg(
                "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
            ));
        }
        ctx.out.integer((idle_ms / 1000) as i64);
    }
    Ok(())
}

/// The LFU counter decayed to now (not stored: OBJECT does not count as an access); only an
/// LFU policy keeps one, otherwise an existing key answers Redis's error.
fn object_freq(ctx: &mut Ctx<'_>) -> CmdResult {
    let (clock, now) = (ctx.ks.access, ctx.now_ms);
    if let Some(freq) = object_inspect(ctx, |obj| clock.freq(obj, now)) {
        if !clock.lfu {
            return Err(Error::msg(
                "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
            ));
        }
        ctx.out.integer(freq as i64);
    }
    Ok(())
}

fn object_help(ctx: &mut Ctx<'_>) -> CmdResult {
    const LINES: &[&str] = &[
        "OBJECT <subcommand> [<arg> ...]. Subcommands are:",
        "ENCODING <key>",
        "    How the value of <key> is stored: int, embstr or raw for strings.",
        "FREQ <key>",
        "    The access-frequency counter of <key>; only kept under an LFU eviction policy.",
        "IDLETIME <key>",
        "    Seconds since <key> was last read or written.",
        "REFCOUNT <key>",
        "    How many references share the value of <key>.",
        "HELP",
        "    Print this list.",
    ];
    ctx.out.array(LINES.len());
    for line in LINES {
        ctx.out.simple(line.as_bytes());
    }
    Ok(())
}

const MULTI_SHARD_SUM: &[&str] = &["request_policy:multi_shard", "response_policy:agg_sum"];

const KEYS_RM: &[KeySpec] = &[KeySpec::range(1, -1, 1, flag::RM | flag::DELETE)];

const KEYS_RO: &[KeySpec] = &[KeySpec::range(1, -1, 1, flag::RO)];

const OBJECT_KEY: &[KeySpec] = &[KeySpec::single(2, flag::RO)];

const OBJECT_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("encoding", 3, object_encoding)
        .flags(Flags::READONLY)
        .acl(Acl::KEYSPACE)
        .keys(OBJECT_KEY)
        .tips(&["nondeterministic_output"])
        .doc(
            "generic",
            "2.2.3",
            "O(1)",
            "Reports how the value of a key is stored internally.",
            "key",
        ),
    CommandSpec::new("refcount", 3, object_refcount)
        .flags(Flags::READONLY)
        .acl(Acl::KEYSPACE)
        .keys(OBJECT_KEY)
        .tips(&["nondeterministic_output"])
        .doc(
            "generic",
            "2.2.3",
            "O(1)",
            "Reports how many references point at the value of a key.",
            "key",
        ),
    CommandSpec::new("idletime", 3, object_idletime)
        .flags(Flags::READONLY)
        .acl(Acl::KEYSPACE)
        .keys(OBJECT_KEY)
        .tips(&["nondeterministic_output"])
        .doc(
            "generic",
            "2.2.3",
            "O(1)",
            "Reports the seconds since a key was last read or written.",
            "key",
        ),
    CommandSpec::new("freq", 3, object_freq)
        .flags(Flags::READONLY)
        .acl(Acl::KEYSPACE)
        .keys(OBJECT_KEY)
        .tips(&["nondeterministic_output"])
        .doc(
            "generic",
            "4.0.0",
            "O(1)",
            "Reports the logarithmic access-frequency counter of a key (LFU policies only).",
            "key",
        ),
    CommandSpec::new("help", 2, object_help)
        .flags(Flags::LOADING.union(Flags::STALE))
        .acl(Acl::KEYSPACE)
        .doc(
            "generic",
            "6.2.0",
            "O(1)",
            "Lists the OBJECT subcommands.",
            "",
        ),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("del", -2, del)
        .flags(Flags::WRITE)
        .acl(Acl::KEYSPACE)
        .keys(KEYS_RM)
        .tips(MULTI_SHARD_SUM)
        .doc(
            "generic",
            "1.0.0",
            "O(N) for N keys; O(M) for a collection key of M elements.",
            "Deletes keys and returns how many existed.",
            "key...",
        ),
    CommandSpec::new("unlink", -2, unlink)
        .flags(Flags::WRITE.union(Flags::FAST))
        .acl(Acl::KEYSPACE)
        .keys(KEYS_RM)
        .tips(MULTI_SHARD_SUM)
        .doc(
            "generic",
            "4.0.0",
            "O(1) per key; large values are freed in the background.",
            "Deletes keys, leaving the freeing of large values to a background thread.",
            "key...",
        ),
    CommandSpec::new("exists", -2, exists)
        .flags(Flags::READONLY.union(Flags::FAST))
        .acl(Acl::KEYSPACE)
        .keys(KEYS_RO)
        .tips(MULTI_SHARD_SUM)
        .doc(
            "generic",
            "1.0.0",
            "O(N) for N keys.",
            "Counts how many of the given keys exist (a key named twice counts twice).",
            "key...",
        ),
    CommandSpec::new("touch", -2, touch)
        .flags(Flags::READONLY.union(Flags::FAST))
        .acl(Acl::KEYSPACE)
        .keys(KEYS_RO)
        .tips(MULTI_SHARD_SUM)
        .doc(
            "generic",
            "3.2.1",
            "O(N) for N keys.",
            "Marks keys as just used and returns how many exist.",
            "key...",
        ),
    CommandSpec::new("type", 2, type_)
        .flags(Flags::READONLY.union(Flags::FAST))
        .acl(Acl::KEYSPACE)
        .keys(&[KeySpec::single(1, flag::RO)])
        .doc(
            "generic",
            "1.0.0",
            "O(1)",
            "Names the type of the value held by a key, or none.",
            "key",
        ),
    CommandSpec::new("keys", 2, keys)
        .flags(Flags::READONLY)
        .acl(Acl::KEYSPACE.union(Acl::DANGEROUS))
        .tips(&["request_policy:all_shards", "nondeterministic_output_order"])
        .doc(
            "generic",
            "1.0.0",
            "O(N) for N keys in the database.",
            "Lists every key matching a glob-style pattern.",
            "pattern:pattern",
        ),
    CommandSpec::new("scan", -2, scan)
        .flags(Flags::READONLY)
        .acl(Acl::KEYSPACE)
        .tips(&["nondeterministic_output", "request_policy:special"])
        .doc(
            "generic",
            "2.8.0",
            "O(1) per call; O(N) for a whole iteration.",
            "Walks the keys of the database a few at a time with a cursor.",
            "cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [TYPE type]",
        ),
    CommandSpec::new("randomkey", 1, randomkey)
        .flags(Flags::READONLY)
        .acl(Acl::KEYSPACE)
        .tips(&["request_policy:all_shards", "nondeterministic_output"])
        .doc(
            "generic",
            "1.0.0",
            "O(1)",
            "Returns the name of a key picked at random.",
            "",
        ),
    CommandSpec::new("rename", 3, rename)
        .flags(Flags::WRITE)
        .acl(Acl::KEYSPACE)
        .keys(&[
            KeySpec::single(1, flag::RW | flag::ACCESS | flag::DELETE),
            KeySpec::single(2, flag::OW | flag::UPDATE),
        ])
        .doc(
            "generic",
            "1.0.0",
            "O(1); O(M) when it replaces a collection of M elements.",
            "Gives a key a new name, replacing any key already called that.",
            "key newkey:key",
        ),
    CommandSpec::new("renamenx", 3, renamenx)
        .flags(Flags::WRITE.union(Flags::FAST))
        .acl(Acl::KEYSPACE)
        .keys(&[
            KeySpec::single(1, flag::RW | flag::ACCESS | flag::DELETE),
            KeySpec::single(2, flag::OW | flag::INSERT),
        ])
        .doc(
            "generic",
            "1.0.0",
            "O(1)",
            "Gives a key a new name unless that name is taken.",
            "key newkey:key",
        ),
    CommandSpec::new("copy", -3, copy)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::KEYSPACE)
        .keys(&[
            KeySpec::single(1, flag::RO | flag::ACCESS),
            KeySpec::single(2, flag::OW | flag::UPDATE),
        ])
        .doc(
            "generic",
            "6.2.0",
            "O(1) for strings; O(N) for a collection of N elements.",
            "Duplicates a key's value (and TTL) under another name, possibly in another database.",
            "source:key destination:key [DB destination-db:integer] [REPLACE]",
        ),
    CommandSpec::new("move", 3, move_)
        .flags(Flags::WRITE.union(Flags::FAST))
        .acl(Acl::KEYSPACE)
        .keys(&[KeySpec::single(1, flag::RW | flag::ACCESS | flag::UPDATE)])
        .doc(
            "generic",
            "1.0.0",
            "O(1)",
            "Moves a key (with its TTL) to another database.",
            "key db:integer",
        ),
    CommandSpec::container("object", OBJECT_SUBCOMMANDS).doc(
        "generic",
        "2.2.3",
        "Depends on the subcommand.",
        "Container for commands that inspect how a key's value is stored.",
        "",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::cstr::c_str;
    use crate::base::value::Value;
    use crate::io::test_harness::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn scan_all(h: &mut Harness, options: &str) -> Vec<Vec<u8>> {
        let mut cursor = 0u64;
        let mut keys = Vec::new();
        loop {
            let (next, batch) = scan_reply(&h.run(&format!("SCAN {cursor}{options}")));
            keys.extend(batch);
            cursor = next;
            if cursor == 0 {
                return keys;
            }
        }
    }

    #[test]
    fn scan_returns_every_stable_key_across_growth_and_shrinking() {
        for grow in [true, false] {
            let mut h = Harness::new();
            for i in 0..2000 {
                h.add(0, &format!("k{i}"), None);
            }
            while h.engine.ks.dbs[0].main.rehash(100) {}
            // The keys that stay for the whole iteration; the others are deleted mid-way.
            let keep = |i: &usize| {
                if grow {
                    !i.is_multiple_of(3)
                } else {
                    i.is_multiple_of(20)
                }
            };
            let stable: HashSet<Vec<u8>> = (0..2000)
                .filter(keep)
                .map(|i| format!("k{i}").into_bytes())
                .collect();
            let mut seen = HashSet::new();
            let mut cursor = 0u64;
            let mut calls = 0;
            let mut saw_rehashing = false;
            loop {
                let (next, batch) = scan_reply(&h.run(&format!("SCAN {cursor} COUNT 20")));
                seen.extend(batch);
                cursor = next;
                calls += 1;
                if calls == 3 {
                    if grow {
                        for i in (0..2000).filter(|i| !keep(i)) {
                            h.run(&format!("DEL k{i}"));
                        }
                        // Grow past twice the size, and stop while a resize is in progress.
                        let mut i = 0;
                        while i < 3000 || !h.engine.ks.dbs[0].main.is_rehashing() {
                            h.add(0, &format!("new{i}"), None);
                            i += 1;
                        }
                    } else {
                        for i in (0..2000).filter(|i| !keep(i)) {
                            h.run(&format!("DEL k{i}"));
                        }
                        assert!(h.engine.ks.dbs[0].main.shrink_if_needed());
                    }
                }
                if calls == 3 {
                    saw_rehashing = h.engine.ks.dbs[0].main.is_rehashing();
                }
                if cursor == 0 {
                    break;
                }
            }
            assert!(saw_rehashing, "SCAN went on during a resize (grow={grow})");
            while h.engine.ks.dbs[0].main.rehash(100) {}
            let size = h.engine.ks.dbs[0].main.table_sizes().0;
            assert!(
                if grow { size > 2048 } else { size < 2048 },
                "resized: {size}"
            );
            let missing: Vec<_> = stable.difference(&seen).collect();
            assert!(
                missing.is_empty(),
                "grow={grow}: {} keys missing",
                missing.len()
            );
        }
    }

    #[test]
    fn scan_count_bounds_the_work_of_one_call() {
        let mut h = Harness::new();
        for i in 0..1000 {
            h.add(0, &format!("k{i}"), None);
        }
        while h.engine.ks.dbs[0].main.rehash(100) {}
        let (cursor, keys) = scan_reply(&h.run("SCAN 0 COUNT 5"));
        assert_ne!(cursor, 0);
        assert!(
            (5..20).contains(&keys.len()),
            "about COUNT keys: {}",
            keys.len()
        );
        // A filter that matches nothing still stops after COUNT*10 buckets.
        let (cursor, keys) = scan_reply(&h.run("SCAN 0 COUNT 2 MATCH nothing"));
        assert_ne!(cursor, 0, "a sparse match does not walk the whole table");
        assert!(keys.is_empty());
        let mut all = scan_all(&mut h, " COUNT 7");
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 1000);
    }

    #[test]
    fn expired_keys_in_keys_scan_dbsize_randomkey() {
        let mut h = Harness::new();
        h.add(0, "live", None);
        h.add(0, "later", Some(10_000));
        for i in 0..50 {
            h.add(0, &format!("gone{i}"), Some(100));
        }
        h.advance_ms(101);
        // DBSIZE counts keys not yet reclaimed, as Redis does.
        assert_eq!(int(&h.run("DBSIZE")), 52);
        // KEYS hides them without deleting them.
        let mut keys = strings(&h.run("KEYS *"));
        keys.sort();
        assert_eq!(keys, vec![b"later".to_vec(), b"live".to_vec()]);
        assert_eq!(strings(&h.run("KEYS gone*")), Vec::<Vec<u8>>::new());
        assert_eq!(int(&h.run("DBSIZE")), 52, "KEYS deletes nothing");
        // SCAN hides them and deletes them.
        let mut scanned = scan_all(&mut h, " COUNT 3");
        scanned.sort();
        assert_eq!(scanned, vec![b"later".to_vec(), b"live".to_vec()]);
        assert_eq!(
            int(&h.run("DBSIZE")),
            2,
            "SCAN deleted what it found expired"
        );
        assert_eq!(h.engine.ks.stats.expired_keys, 50);
    }

    #[test]
    fn scan_match_skips_expired_keys_it_does_not_match() {
        let mut h = Harness::new();
        h.add(0, "a", Some(10));
        h.add(0, "b", Some(10));
        h.advance_ms(11);
        let (_, keys) = scan_reply(&h.run("SCAN 0 MATCH a COUNT 100"));
        assert!(keys.is_empty());
        assert_eq!(
            int(&h.run("DBSIZE")),
            1,
            "only the matching expired key was deleted"
        );
    }

    #[test]
    fn scan_type_none_returns_expired_keys_like_redis() {
        let mut h = Harness::new();
        h.add(0, "old", Some(10));
        h.add(0, "live", None);
        h.advance_ms(11);
        let (_, keys) = scan_reply(&h.run("SCAN 0 TYPE none COUNT 100"));
        assert_eq!(keys, vec![b"old".to_vec()], "Redis 7.0's quirk");
        assert_eq!(int(&h.run("DBSIZE")), 1, "and it was deleted");
        let (hits, misses) = (h.engine.ks.stats.hits, h.engine.ks.stats.misses);
        assert_eq!((hits, misses), (1, 1), "the type lookups count");
    }

    #[test]
    fn randomkey_skips_and_deletes_expired_picks() {
        let mut h = Harness::new();
        for i in 0..200 {
            h.add(0, &format!("gone{i}"), Some(5));
        }
        h.add(0, "live", None);
        h.advance_ms(6);
        for _ in 0..20 {
            assert_eq!(bulk(&h.run("RANDOMKEY")), Some(b"live".to_vec()));
        }
        assert!(int(&h.run("DBSIZE")) < 201, "expired picks were deleted");
        // A database holding only expired keys answers null and ends up empty.
        for i in 0..100 {
            h.add(1, &format!("x{i}"), Some(5));
        }
        h.advance_ms(6);
        h.run("SELECT 1");
        assert_eq!(bulk(&h.run("RANDOMKEY")), None);
        assert_eq!(int(&h.run("DBSIZE")), 0);
    }

    #[test]
    fn randomkey_covers_the_database() {
        let mut h = Harness::new();
        for i in 0..20 {
            h.add(0, &format!("k{i}"), None);
        }
        let seen: HashSet<_> = (0..2000).map(|_| bulk(&h.run("RANDOMKEY"))).collect();
        assert_eq!(seen.len(), 20);
    }

    #[test]
    fn inspection_counts_stats_but_keeps_the_lru_clock() {
        let mut h = Harness::new();
        h.add(0, "k", None);
        h.advance_ms(10_000);
        for cmd in [
            "EXISTS k",
            "TYPE k",
            "OBJECT ENCODING k",
            "OBJECT REFCOUNT k",
        ] {
            h.run(cmd);
        }
        assert_eq!(int(&h.run("OBJECT IDLETIME k")), 10);
        assert_eq!((h.engine.ks.stats.hits, h.engine.ks.stats.misses), (5, 0));
        h.run("EXISTS nokey");
        h.run("TOUCH k nokey");
        assert_eq!((h.engine.ks.stats.hits, h.engine.ks.stats.misses), (6, 2));
        assert_eq!(int(&h.run("OBJECT IDLETIME k")), 0, "TOUCH refreshed it");
    }

    #[test]
    fn rename_moves_ttl_and_lru() {
        let mut h = Harness::new();
        h.add(0, "a", Some(50_000));
        h.add(0, "b", None);
        h.advance_ms(3_000);
        assert_eq!(
            h.run("RENAME a b"),
            embedis_protocol::Value::Simple("OK".into())
        );
        assert_eq!(int(&h.run("TTL b")), 47);
        assert_eq!(int(&h.run("EXISTS a")), 0);
        assert_eq!(h.engine.ks.dbs[0].expires.len(), 1);
        h.add(0, "c", Some(10));
        h.advance_ms(11);
        assert_eq!(
            error(&h.run("RENAME c d")),
            "ERR no such key",
            "expired source"
        );
        assert_eq!(
            int(&h.run("RENAMENX b c")),
            1,
            "expired destination is free"
        );
        assert_eq!(int(&h.run("TTL c")), 47);
    }

    #[test]
    fn copy_makes_a_private_object_and_move_keeps_it() {
        let mut h = Harness::new();
        let now = h.now();
        h.engine.ks.add(0, b"n", Value::string(b"42"), None, now);
        assert_eq!(int(&h.run("OBJECT REFCOUNT n")), i32::MAX as i64);
        assert_eq!(int(&h.run("COPY n m")), 1);
        assert_eq!(int(&h.run("OBJECT REFCOUNT m")), 1);
        assert_eq!(int(&h.run("MOVE m 3")), 1);
        h.run("SELECT 3");
        assert_eq!(int(&h.run("OBJECT REFCOUNT m")), 1);
        let now = h.now();
        h.engine.ks.set(3, b"m", Value::string(b"42"), false, now);
        assert_eq!(
            int(&h.run("OBJECT REFCOUNT m")),
            i32::MAX as i64,
            "a new value is shared"
        );
    }

    #[test]
    fn object_freq_and_encoding() {
        let mut h = Harness::new();
        h.add(0, "k", None);
        assert!(error(&h.run("OBJECT FREQ k")).starts_with("ERR An LFU maxmemory policy is not"));
        assert_eq!(bulk(&h.run("OBJECT ENCODING nokey")), None);
        assert_eq!(bulk(&h.run("OBJECT ENCODING k")), Some(b"embstr".to_vec()));
        assert!(
            matches!(h.run("OBJECT HELP"), embedis_protocol::Value::Array(lines) if lines.len() > 5)
        );
    }

    /// The argument syntax of every command of the three families parses, with no stray `=`
    /// in a name (COMMAND DOCS and redis-cli's hints come from it).
    #[test]
    fn documented_syntax_parses() {
        fn check(spec: &CommandSpec) {
            let args = crate::kernel::table::docs::parse(spec.syntax, spec.keys.len())
                .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            fn walk(args: &[crate::kernel::table::docs::Arg], name: &str) {
                for a in args {
                    assert!(!a.name.contains('='), "{name}: {}", a.name);
                    walk(&a.children, name);
                }
            }
            walk(&args, spec.name);
            spec.subcommands.iter().for_each(check);
        }
        let families = [
            COMMANDS,
            crate::commands::expiry::COMMANDS,
            crate::commands::databases::COMMANDS,
        ];
        families.iter().flat_map(|f| f.iter()).for_each(check);
    }

    #[test]
    fn cursor_parsing() {
        assert_eq!(parse_cursor(b"0"), Ok(0));
        assert_eq!(parse_cursor(b""), Ok(0));
        assert_eq!(parse_cursor(b"\0junk"), Ok(0));
        assert_eq!(parse_cursor(b"12\0junk"), Ok(12));
        assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(parse_cursor(b"+7"), Ok(7));
        assert_eq!(parse_cursor(b"007"), Ok(7));
        assert_eq!(parse_cursor(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_cursor(b"-18446744073709551615"), Ok(1));
        for bad in [
            &b"18446744073709551616"[..],
            b" 1",
            b"1 ",
            b"\t1",
            b"-",
            b"+",
            b"+-1",
            b"0x1",
            b"1.0",
            b"abc",
        ] {
            assert!(
                parse_cursor(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    proptest! {
        /// The cursor parser agrees with C's strtoul as Redis uses it (first byte not white
        /// space, the whole C string consumed, no ERANGE).
        #[test]
        fn cursor_parsing_matches_strtoul(
            arg in proptest::collection::vec(
                prop_oneof![Just(b'0'), Just(b'9'), Just(b'5'), Just(b'-'), Just(b'+'), Just(b' '),
                            Just(b'\t'), Just(0u8), Just(b'x'), Just(b'1')],
                0..24,
            )
        ) {
            prop_assert_eq!(parse_cursor(&arg).ok(), strtoul_like_redis(&arg));
        }
    }

    fn strtoul_like_redis(arg: &[u8]) -> Option<u64> {
        let c = std::ffi::CString::new(c_str(arg)).unwrap();
        let bytes = c.as_bytes_with_nul();
        if bytes[0].is_ascii_whitespace() || bytes[0] == 0x0b {
            return None;
        }
        let mut end: *mut libc::c_char = std::ptr::null_mut();
        // SAFETY: `c` is a valid NUL-terminated string and `end` a valid out-pointer; errno is
        // thread-local.
        unsafe {
            *libc::__errno_location() = 0;
            let value = libc::strtoul(c.as_ptr(), &mut end, 10);
            let failed = *libc::__errno_location() == libc::ERANGE || *end != 0;
            (!failed).then_some(value as u64)
        }
    }
}
