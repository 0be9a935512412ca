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
//! [`Keyspace::lookup`]: crate::keyspace::Keyspace::lookup

use embedis_datatypes::{glob, SmallBytes};

use crate::command::keys::flag;
use crate::command::{Acl, CommandSpec, Flags, KeySpec};
use crate::commands::databases::{db_index, int32_arg};
use crate::ctx::Ctx;
use crate::error::{CmdResult, Error};
use crate::keyspace::Access;
use crate::value::{lru_clock, Object};

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

/// Redis's `strcasecmp(arg, word)`: ASCII case-insensitive, and blind to anything after a NUL
/// byte in `arg`, as C strings are.
pub(crate) fn word_is(arg: &[u8], word: &str) -> bool {
    c_str(arg).eq_ignore_ascii_case(word.as_bytes())
}

/// `bytes` up to its first NUL, as C sees a string.
pub(crate) fn c_str(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

fn del(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let deleted = ctx.args[1..]
        .iter()
        .filter(|key| ctx.ks.delete(db, key, now))
        .count();
    ctx.out.integer(deleted as i64);
    Ok(())
}

/// UNLINK frees values off the executor thread when freeing them would take long. Strings are
/// one allocation each, so today it is DEL; collections will hand large values to
/// `keyspace::free_in_background`, as Redis does above 64 elements.
fn unlink(ctx: &mut Ctx<'_>) -> CmdResult {
    del(ctx)
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

/// A SCAN cursor, parsed as Redis does with `strtoul`: the argument is read as a C string (up to
/// a NUL byte), may not start with white space, may carry a sign (a negative number wraps
/// modulo 2^64, as `strtoul` does), must be all digits otherwise and fit in 64 bits. The empty
/// string is cursor 0.
pub(crate) fn parse_cursor(arg: &[u8]) -> CmdResult<u64> {
    let invalid = Error::msg("ERR invalid cursor");
    let text = c_str(arg);
    let Some(&first) = text.first() else {
        return Ok(0);
    };
    // C's isspace: space, \t, \n, \v, \f, \r.
    if matches!(first, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return Err(invalid);
    }
    let (negative, digits) = match first {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid);
    }
    let mut value: u64 = 0;
    for &d in digits {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add((d - b'0') as u64))
            .ok_or(invalid.clone())?;
    }
    Ok(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

fn scan(ctx: &mut Ctx<'_>) -> CmdResult {
    // The cursor is checked before the options, as in Redis.
    let cursor = parse_cursor(ctx.arg(1))?;
    let mut count: u64 = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut type_name: Option<&[u8]> = None;
    let mut i = 2;
    while i < ctx.argc() {
        let has_value = ctx.argc() - i >= 2;
        let word = ctx.arg(i);
        if word_is(word, "count") && has_value {
            let n = ctx.int_arg(i + 1)?;
            if n < 1 {
                return Err(Error::Syntax);
            }
            count = n as u64;
        } else if word_is(word, "match") && has_value {
            let p = ctx.arg(i + 1);
            // A lone `*` is no filter at all (it would otherwise miss the empty key).
            pattern = (p != b"*").then_some(p);
        } else if word_is(word, "type") && has_value {
            // Compared as a C string, case-insensitively, like the option words.
            type_name = Some(c_str(ctx.arg(i + 1)));
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }
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
    // The copy is a new object: fresh LRU clock, and never one of Redis's shared integers.
    let mut duplicate = Object::new(source.value.clone(), lru_clock(now));
    duplicate.set_private(true);
    let deadline = ctx.ks.expire_of(src_db, from);
    if ctx.ks.lookup(dst_db, to, now, Access::Write).is_some() {
        if !replace {
            ctx.out.integer(0);
            return Ok(());
        }
        ctx.ks.db(dst_db).remove(to);
    }
    ctx.ks.put(dst_db, SmallBytes::new(to), duplicate, deadline);
    ctx.ks.dirty += 1;
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
        .lookup(db, ctx.arg(2), now, Access::Inspect)
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

fn object_idletime(ctx: &mut Ctx<'_>) -> CmdResult {
    let now_lru = lru_clock(ctx.now_ms);
    if let Some(idle_ms) = object_inspect(ctx, |obj| obj.idle_ms(now_lru)) {
        ctx.out.integer((idle_ms / 1000) as i64);
    }
    Ok(())
}

/// We keep an LRU clock only (there is no maxmemory-policy to select LFU), so FREQ of an
/// existing key is the error Redis gives under an LRU policy.
fn object_freq(ctx: &mut Ctx<'_>) -> CmdResult {
    if object_inspect(ctx, |_| ()).is_some() {
        return Err(Error::msg(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
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
