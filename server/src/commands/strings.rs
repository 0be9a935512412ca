//! String commands: GET, SET and its variants (SETNX, SETEX, PSETEX, GETSET, GETDEL, GETEX), MGET,
//! MSET, MSETNX, APPEND, STRLEN, GETRANGE/SUBSTR, SETRANGE and the counters (INCR, DECR, INCRBY,
//! DECRBY, INCRBYFLOAT) and LCS; and Redis 8.4's compare-and-set (SET's IFEQ/IFNE/IFDEQ/IFDNE),
//! compare-and-delete (DELEX) and DIGEST, which lock clients use to release a lock only while it
//! still holds their token, without a Lua script.
//!
//! Replies and errors follow Redis 7.0 to the byte, including its order of checks (a syntax error
//! beats a bad expire time, which beats WRONGTYPE for SET but not for GETEX) and its quirks
//! (option words are compared as C strings, so `"NX\0junk"` is NX). Stored encodings follow
//! Redis's decisions because OBJECT ENCODING shows them: values written whole go through
//! `tryObjectEncoding` ([`Value::string`]: `int` when canonical), INCR results are `int`,
//! INCRBYFLOAT results are plain strings (`embstr`), and in-place edits (APPEND, SETRANGE) make
//! the value `raw`.
//!
//! GET, SET, INCR, MSET and `SET … NX PX` are on the benchmarked hot path: GET writes the stored
//! bytes straight into the reply buffer, SET copies the value once into the store (and not at
//! all when NX refuses), INCR on an `int` value updates it in place.
//!
//! The helpers at the top (`string_of`, `string_len`, `reply_string`, `check_string_length`) are
//! shared with the bit commands, which read and write the same values.

use bytes::Bytes;
use embedis_datatypes::long_double::LongDouble;
use embedis_protocol::number::parse_i64;
use embedis_protocol::Writer;
use std::ops::Deref;

use crate::base::config::event_class::{GENERIC, STRING};
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::commands::common::long_double_add;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::{Access, StoreIf, Ttl};
use crate::model::write_stream::{del_verb, int_arg};

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// The bytes of a string value: borrowed from the store, or an `int` formatted on the stack.
pub(crate) enum StrBytes<'a> {
    Slice(&'a [u8]),
    Int { buf: [u8; 20], len: u8 },
}

impl Deref for StrBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            StrBytes::Slice(s) => s,
            StrBytes::Int { buf, len } => &buf[..*len as usize],
        }
    }
}

/// The bytes of `value` if it is a string; WRONGTYPE otherwise (Redis's `checkType`).
pub(crate) fn string_of(value: &Value) -> CmdResult<StrBytes<'_>> {
    match value {
        Value::Int(n) => {
            let mut text = itoa::Buffer::new();
            let digits = text.format(*n).as_bytes();
            let mut buf = [0u8; 20];
            buf[..digits.len()].copy_from_slice(digits);
            Ok(StrBytes::Int {
                buf,
                len: digits.len() as u8,
            })
        }
        Value::Str(s) => Ok(StrBytes::Slice(s.as_slice())),
        Value::Raw(v) => Ok(StrBytes::Slice(v.as_slice())),
        Value::Hll(h) => Ok(StrBytes::Slice(h.as_bytes())),
        _ => Err(Error::WrongType),
    }
}

/// Length of a string value; WRONGTYPE for other types.
pub(crate) fn string_len(value: &Value) -> CmdResult<usize> {
    value.string_len().ok_or(Error::WrongType)
}

/// Replies with a string value as a bulk string (no copy but the one into the reply buffer), or
/// fails with WRONGTYPE without writing anything.
#[allow(unreachable_patterns)]
pub(crate) fn reply_string(out: &mut Writer<'_>, value: &Value) -> CmdResult {
    match value {
        Value::Int(n) => out.bulk_integer(*n),
        Value::Str(s) => out.bulk(s.as_slice()),
        Value::Raw(v) => out.bulk(v),
        Value::Hll(h) => out.bulk(h.as_bytes()),
        _ => return Err(Error::WrongType),
    }
    Ok(())
}

/// SET's key flags for one command line (COMMAND GETKEYSANDFLAGS): with GET or a compare
/// condition (IFEQ…) it reads the old value (`RW access update`), without only overwrites
/// (`OW update`).
fn set_key_flags(args: &[Bytes], _declared: u16) -> u16 {
    if args
        .iter()
        .skip(3)
        .any(|a| word_is(a, "get") || ConditionKind::of(a).is_some())
    {
        flag::RW | flag::ACCESS | flag::UPDATE
    } else {
        flag::OW | flag::UPDATE
    }
}

/// Redis's `checkStringLength`: a string may not grow past proto-max-bulk-len (`limit`).
pub(crate) fn check_string_length(limit: i64, size: u64) -> CmdResult {
    if size > limit.max(0) as u64 {
        return Err(Error::msg(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The command table
// ---------------------------------------------------------------------------------------------

const RO_ACCESS: u16 = flag::RO | flag::ACCESS;
const RW_ACCESS_UPDATE: u16 = flag::RW | flag::ACCESS | flag::UPDATE;

const WRITE_DENYOOM: Flags = Flags::WRITE.union(Flags::DENYOOM);
const WRITE_DENYOOM_FAST: Flags = WRITE_DENYOOM.union(Flags::FAST);
const READONLY_FAST: Flags = Flags::READONLY.union(Flags::FAST);

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("get", 2, get)
        .flags(READONLY_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Returns the string stored at a key.",
            "key",
        ),
    CommandSpec::new("set", -3, set)
        .flags(WRITE_DENYOOM)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(
            1,
            flag::RW | flag::ACCESS | flag::UPDATE | flag::VARIABLE_FLAGS,
        )
        .notes("RW and ACCESS due to the optional `GET` argument")])
        .key_flags(set_key_flags)
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Stores a string under a key, optionally with a TTL, a condition, or returning the previous value.",
            "key value condition=[NX|XX|IFEQ ifeq-value@8.4.0|IFNE ifne-value@8.4.0|IFDEQ ifdeq-digest@8.4.0|IFDNE ifdne-digest@8.4.0] [GET] expiration=[EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|KEEPTTL]",
        ),
    // Redis 8.4's compare-and-delete: a lock's release without a script.
    CommandSpec::new("delex", -2, delex)
        .flags(Flags::WRITE.union(Flags::FAST))
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(
            1,
            flag::RW | flag::DELETE | flag::VARIABLE_FLAGS,
        )
        .notes("RW and ACCESS with a condition, which reads the value")])
        .key_flags(delex_key_flags)
        .doc(
            "string",
            "8.4.0",
            "O(1) for IFEQ/IFNE, O(N) for IFDEQ/IFDNE where N is the length of the string value.",
            "Deletes a key, optionally only if its string (or the string's digest) matches or differs from a given one.",
            "key condition=[IFEQ ifeq-value|IFNE ifne-value|IFDEQ ifdeq-digest|IFDNE ifdne-digest]",
        ),
    CommandSpec::new("digest", 2, digest)
        .flags(READONLY_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "string",
            "8.4.0",
            "O(N) where N is the length of the string value.",
            "Returns the XXH3-64 hash of a key's string as 16 hexadecimal digits.",
            "key",
        ),
    CommandSpec::new("setnx", 3, setnx)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, flag::OW | flag::INSERT)])
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Stores a string under a key only if the key does not exist.",
            "key value",
        ),
    CommandSpec::new("setex", 4, setex)
        .flags(WRITE_DENYOOM)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, flag::OW | flag::UPDATE)])
        .doc(
            "string",
            "2.0.0",
            "O(1)",
            "Stores a string under a key with a TTL in seconds.",
            "key seconds:integer value",
        ),
    CommandSpec::new("psetex", 4, psetex)
        .flags(WRITE_DENYOOM)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, flag::OW | flag::UPDATE)])
        .doc(
            "string",
            "2.6.0",
            "O(1)",
            "Stores a string under a key with a TTL in milliseconds.",
            "key milliseconds:integer value",
        ),
    CommandSpec::new("getset", 3, getset)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RW_ACCESS_UPDATE)])
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Replaces a key's string and returns the previous one.",
            "key value",
        ),
    CommandSpec::new("getdel", 2, getdel)
        .flags(Flags::WRITE.union(Flags::FAST))
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, flag::RW | flag::ACCESS | flag::DELETE)])
        .doc(
            "string",
            "6.2.0",
            "O(1)",
            "Returns a key's string and deletes the key.",
            "key",
        ),
    CommandSpec::new("getex", -2, getex)
        .flags(Flags::WRITE.union(Flags::FAST))
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RW_ACCESS_UPDATE)
            .notes("RW and UPDATE because it changes the TTL")])
        .doc(
            "string",
            "6.2.0",
            "O(1)",
            "Returns a key's string and optionally changes or removes its TTL.",
            "key expiration=[EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|PERSIST]",
        ),
    CommandSpec::new("mget", -2, mget)
        .flags(READONLY_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::range(1, -1, 1, RO_ACCESS)])
        .tips(&["request_policy:multi_shard"])
        .doc(
            "string",
            "1.0.0",
            "O(N) where N is the number of keys",
            "Returns the strings of several keys (nil for missing or non-string keys).",
            "key...",
        ),
    CommandSpec::new("mset", -3, mset)
        .flags(WRITE_DENYOOM)
        .acl(Acl::STRING)
        .keys(&[KeySpec::range(1, -1, 2, flag::OW | flag::UPDATE)])
        .tips(&["request_policy:multi_shard", "response_policy:all_succeeded"])
        .doc(
            "string",
            "1.0.1",
            "O(N) where N is the number of keys",
            "Stores several strings at once.",
            "key_value=(key value)...",
        ),
    CommandSpec::new("msetnx", -3, msetnx)
        .flags(WRITE_DENYOOM)
        .acl(Acl::STRING)
        .keys(&[KeySpec::range(1, -1, 2, flag::OW | flag::INSERT)])
        .tips(&["request_policy:multi_shard", "response_policy:agg_min"])
        .doc(
            "string",
            "1.0.1",
            "O(N) where N is the number of keys",
            "Stores several strings only if none of the keys exists.",
            "key_value=(key value)...",
        ),
    CommandSpec::new("append", 3, append)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, flag::RW | flag::INSERT)])
        .doc(
            "string",
            "2.0.0",
            "O(1) amortized",
            "Appends to a key's string, creating the key if needed; returns the new length.",
            "key value",
        ),
    CommandSpec::new("strlen", 2, strlen)
        .flags(READONLY_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, flag::RO)])
        .doc(
            "string",
            "2.2.0",
            "O(1)",
            "Returns the length of a key's string.",
            "key",
        ),
    CommandSpec::new("getrange", 4, getrange)
        .flags(Flags::READONLY)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "string",
            "2.4.0",
            "O(N) where N is the length of the returned string",
            "Returns a byte range of a key's string.",
            "key start:integer end:integer",
        ),
    CommandSpec::new("substr", 4, getrange)
        .flags(Flags::READONLY)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "string",
            "1.0.0",
            "O(N) where N is the length of the returned string",
            "Returns a byte range of a key's string (old name of GETRANGE).",
            "key start:integer end:integer",
        ),
    CommandSpec::new("setrange", 4, setrange)
        .flags(WRITE_DENYOOM)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE)])
        .doc(
            "string",
            "2.2.0",
            "O(1) plus the time to copy the new bytes",
            "Overwrites part of a key's string at an offset, padding with zero bytes; returns the new length.",
            "key offset:integer value",
        ),
    CommandSpec::new("incr", 2, incr)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RW_ACCESS_UPDATE)])
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Adds one to a key's integer (0 if missing).",
            "key",
        ),
    CommandSpec::new("decr", 2, decr)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RW_ACCESS_UPDATE)])
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Subtracts one from a key's integer (0 if missing).",
            "key",
        ),
    CommandSpec::new("incrby", 3, incrby)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RW_ACCESS_UPDATE)])
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Adds an integer to a key's integer (0 if missing).",
            "key increment:integer",
        ),
    CommandSpec::new("decrby", 3, decrby)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RW_ACCESS_UPDATE)])
        .doc(
            "string",
            "1.0.0",
            "O(1)",
            "Subtracts an integer from a key's integer (0 if missing).",
            "key decrement:integer",
        ),
    CommandSpec::new("incrbyfloat", 3, incrbyfloat)
        .flags(WRITE_DENYOOM_FAST)
        .acl(Acl::STRING)
        .keys(&[KeySpec::single(1, RW_ACCESS_UPDATE)])
        .doc(
            "string",
            "2.6.0",
            "O(1)",
            "Adds a floating-point number to a key's number (0 if missing), in long double precision.",
            "key increment:double",
        ),
    CommandSpec::new("lcs", -3, lcs)
        .flags(Flags::READONLY)
        .acl(Acl::STRING)
        .keys(&[KeySpec::range(1, 1, 1, RO_ACCESS)])
        .doc(
            "string",
            "7.0.0",
            "O(N*M) where N and M are the lengths of s1 and s2, respectively",
            "Finds the longest common substring.",
            "key1:key key2:key [LEN] [IDX] [MINMATCHLEN len:integer] [WITHMATCHLEN]",
        ),
];

// ---------------------------------------------------------------------------------------------
// GET / SET family
// ---------------------------------------------------------------------------------------------

fn get(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, key, now) = (ctx.client.db, ctx.arg(1), ctx.now_ms);
    match ctx.ks.read(db, key, now) {
        Some(value) => reply_string(&mut ctx.out, value),
        None => {
            ctx.out.null();
            Ok(())
        }
    }
}

/// The units of SET's and GETEX's expiry options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expiry {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// SET's and GETEX's options, parsed the way Redis's `parseExtendedStringArgumentsOrReply`
/// does: each option is accepted only if it does not conflict with one already seen (a repeated
/// one is fine, the last expiry wins), anything else is a syntax error.
#[derive(Debug, Default)]
struct StringOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    persist: bool,
    expire: Option<(Expiry, &'a [u8])>,
    /// IFEQ, IFNE, IFDEQ or IFDNE and its operand (SET only).
    condition: Option<Condition<'a>>,
}

/// Which of Redis 8.4's compare conditions (SET's and DELEX's `IF…` words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConditionKind {
    /// IFEQ: the key holds a string equal to the operand.
    Eq,
    /// IFNE: the key is missing or its string differs from the operand.
    Ne,
    /// IFDEQ: the key holds a string whose digest is the operand.
    DigestEq,
    /// IFDNE: the key is missing or its string's digest is not the operand.
    DigestNe,
}

impl ConditionKind {
    /// The condition an option word names (compared as a C string, like SET's other options).
    fn of(word: &[u8]) -> Option<ConditionKind> {
        if word_is(word, "ifeq") {
            Some(ConditionKind::Eq)
        } else if word_is(word, "ifne") {
            Some(ConditionKind::Ne)
        } else if word_is(word, "ifdeq") {
            Some(ConditionKind::DigestEq)
        } else if word_is(word, "ifdne") {
            Some(ConditionKind::DigestNe)
        } else {
            None
        }
    }
}

/// A compare condition with its operand (a value, or a digest in hex).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Condition<'a> {
    kind: ConditionKind,
    operand: &'a [u8],
}

impl Condition<'_> {
    /// Whether the condition holds for the key's current string (`None`: the key is missing).
    /// A digest operand is compared with [`digest_hex`] ignoring case; one that is not 16 hex
    /// digits can equal no digest, so IFDEQ with it never holds and IFDNE always does.
    fn holds(&self, current: Option<&[u8]>) -> bool {
        match (self.kind, current) {
            (ConditionKind::Eq | ConditionKind::DigestEq, None) => false,
            (ConditionKind::Ne | ConditionKind::DigestNe, None) => true,
            (ConditionKind::Eq, Some(value)) => value == self.operand,
            (ConditionKind::Ne, Some(value)) => value != self.operand,
            (ConditionKind::DigestEq, Some(value)) => {
                digest_hex(value).eq_ignore_ascii_case(self.operand)
            }
            (ConditionKind::DigestNe, Some(value)) => {
                !digest_hex(value).eq_ignore_ascii_case(self.operand)
            }
        }
    }
}

/// DIGEST's form of a string: its XXH3-64 hash (seed 0) as 16 lower-case hex digits, zero-padded.
/// An `int`-encoded value is hashed as its decimal text, which is what the client stored.
pub(crate) fn digest_hex(value: &[u8]) -> [u8; 16] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hash = xxhash_rust::xxh3::xxh3_64(value);
    let mut out = [0u8; 16];
    for (i, digit) in out.iter_mut().enumerate() {
        *digit = HEX[((hash >> (60 - 4 * i)) & 0xf) as usize];
    }
    out
}

fn parse_options<'a>(
    args: &'a [Bytes],
    from: usize,
    for_set: bool,
) -> CmdResult<StringOptions<'a>> {
    let mut o = StringOptions::default();
    let mut j = from;
    while j < args.len() {
        let opt = &args[j][..];
        let next = args.get(j + 1);
        let unit = if word_is(opt, "ex") {
            Some(Expiry::Ex)
        } else if word_is(opt, "px") {
            Some(Expiry::Px)
        } else if word_is(opt, "exat") {
            Some(Expiry::ExAt)
        } else if word_is(opt, "pxat") {
            Some(Expiry::PxAt)
        } else {
            None
        };
        let other_unit = o.expire.is_some_and(|(u, _)| Some(u) != unit);
        let condition = if for_set {
            ConditionKind::of(opt)
        } else {
            None
        };
        // A compare condition excludes NX, XX and any other condition (repeating the same one
        // is accepted, the last operand wins, as a repeated EX is).
        let other_condition = o.condition.is_some_and(|c| Some(c.kind) != condition);
        if for_set && word_is(opt, "nx") && !o.xx && o.condition.is_none() {
            o.nx = true;
        } else if for_set && word_is(opt, "xx") && !o.nx && o.condition.is_none() {
            o.xx = true;
        } else if let (Some(kind), Some(operand)) = (condition, next) {
            if o.nx || o.xx || other_condition {
                return Err(Error::Syntax);
            }
            o.condition = Some(Condition { kind, operand });
            j += 1;
        } else if for_set && word_is(opt, "get") {
            o.get = true;
        } else if for_set && word_is(opt, "keepttl") && !o.persist && o.expire.is_none() {
            o.keep_ttl = true;
        } else if !for_set && word_is(opt, "persist") && !o.keep_ttl && o.expire.is_none() {
            o.persist = true;
        } else if let (Some(unit), Some(value)) = (unit, next) {
            if o.keep_ttl || o.persist || other_unit {
                return Err(Error::Syntax);
            }
            o.expire = Some((unit, value));
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// Redis's `getExpireMillisecondsOrReply`: the deadline in ms for an expiry argument. Zero,
/// negative, too-large and overflowing values are `invalid expire time in '<cmd>' command`.
fn deadline(arg: &[u8], unit: Expiry, now: i64, command: &str) -> CmdResult<i64> {
    let mut ms = parse_i64(arg).ok_or(Error::NotInteger)?;
    let invalid = || Error::owned(format!("ERR invalid expire time in '{command}' command"));
    let seconds = matches!(unit, Expiry::Ex | Expiry::ExAt);
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return Err(invalid());
    }
    if seconds {
        ms *= 1000;
    }
    if matches!(unit, Expiry::Ex | Expiry::Px) {
        // Redis adds in C, where the overflow wraps to a negative number: refused below.
        ms = ms.wrapping_add(now);
    }
    if ms <= 0 {
        return Err(invalid());
    }
    Ok(ms)
}

fn set(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let (key, value) = (&args[1][..], &args[2][..]);
    let options = parse_options(args, 3, true)?;
    let ttl = match options.expire {
        Some((unit, arg)) => Ttl::At(deadline(arg, unit, now, "set")?),
        None if options.keep_ttl => Ttl::Keep,
        None => Ttl::Clear,
    };
    if let Some(condition) = options.condition {
        return set_if(ctx, condition, &options, ttl);
    }
    if options.get {
        // The previous value is the reply, whether or not the condition lets the write happen.
        match ctx.ks.read(db, key, now) {
            Some(old) => reply_string(&mut ctx.out, old)?,
            None => {
                // The lookup's events (expired, keymiss) go out before the null.
                ctx.publish_events();
                ctx.out.null();
            }
        }
    }
    let when = if options.nx {
        StoreIf::Absent
    } else if options.xx {
        StoreIf::Present
    } else {
        StoreIf::Always
    };
    let written = ctx
        .ks
        .store(db, key, when, ttl, now, || Value::string(value));
    if written {
        if ctx.propagating() {
            propagate_set(ctx, ttl, options.get);
        }
        ctx.notify(STRING, "set", key);
        if options.expire.is_some() {
            ctx.notify(GENERIC, "expire", key);
        }
    }
    if !options.get {
        if written {
            ctx.out.ok();
        } else {
            ctx.out.null();
        }
    }
    Ok(())
}

/// SET with a compare condition (Redis 8.4). The key is looked up once: for reading with GET
/// (a hit or a miss, as plain `SET … GET` counts), for writing otherwise. A non-string key is
/// WRONGTYPE before anything is replied; a condition that does not hold writes nothing, so
/// neither WATCH nor client tracking sees a change, and replies nil (the old value with GET).
fn set_if(
    ctx: &mut Ctx<'_>,
    condition: Condition<'_>,
    options: &StringOptions<'_>,
    ttl: Ttl,
) -> CmdResult {
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let (key, value) = (&ctx.args[1][..], &ctx.args[2][..]);
    let access = if options.get {
        Access::Read
    } else {
        Access::Write
    };
    let holds = match ctx.ks.lookup(db, key, now, access) {
        Some(obj) => {
            let holds = condition.holds(Some(&string_of(&obj.value)?));
            if options.get {
                reply_string(&mut ctx.out, &obj.value)?;
            }
            holds
        }
        None => {
            if options.get {
                // The lookup's events (expired, keymiss) go out before the null.
                ctx.publish_events();
                ctx.out.null();
            }
            condition.holds(None)
        }
    };
    if holds {
        ctx.ks
            .store(db, key, StoreIf::Always, ttl, now, || Value::string(value));
        if ctx.propagating() {
            propagate_set(ctx, ttl, options.get);
        }
        ctx.notify(STRING, "set", key);
        if options.expire.is_some() {
            ctx.notify(GENERIC, "expire", key);
        }
    }
    if !options.get {
        if holds {
            ctx.out.ok();
        } else {
            ctx.out.null();
        }
    }
    Ok(())
}

/// DELEX's key flags for one command line: without a condition it deletes blindly like DEL
/// (`RM delete`), with one it reads the value first (`RW access delete`).
fn delex_key_flags(args: &[Bytes], _declared: u16) -> u16 {
    if args.len() > 2 {
        flag::RW | flag::ACCESS | flag::DELETE
    } else {
        flag::RM | flag::DELETE
    }
}

/// DELEX key [IFEQ v|IFNE v|IFDEQ d|IFDNE d]: DEL of one key, or, with a condition, only of a
/// string key for which it holds (a missing key deletes nothing, another type is WRONGTYPE).
/// Replies 1 if the key was deleted, 0 if not; `del` is notified only for a deletion.
fn delex(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let (db, now, key) = (ctx.client.db, ctx.now_ms, &args[1][..]);
    let condition = match args.len() {
        2 => None,
        4 => match ConditionKind::of(&args[2]) {
            Some(kind) => Some(Condition {
                kind,
                operand: &args[3][..],
            }),
            None => return Err(Error::Syntax),
        },
        _ => return Err(Error::Syntax),
    };
    let deleted = match condition {
        None => ctx.ks.delete(db, key, now),
        Some(condition) => match ctx.ks.lookup(db, key, now, Access::Write) {
            Some(obj) => {
                condition.holds(Some(&string_of(&obj.value)?)) && ctx.ks.delete(db, key, now)
            }
            None => false,
        },
    };
    if deleted {
        ctx.notify(GENERIC, "del", key);
    }
    ctx.out.integer(deleted as i64);
    Ok(())
}

/// DIGEST key: [`digest_hex`] of the key's string, nil for a missing key, WRONGTYPE otherwise.
fn digest(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    let hex = match ctx.ks.read(db, key, now) {
        Some(value) => digest_hex(&string_of(value)?),
        None => {
            ctx.out.null();
            return Ok(());
        }
    };
    ctx.out.bulk(&hex);
    Ok(())
}

fn setnx(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key, value) = (ctx.client.db, ctx.now_ms, ctx.arg(1), ctx.arg(2));
    let written = ctx.ks.store(db, key, StoreIf::Absent, Ttl::Clear, now, || {
        Value::string(value)
    });
    if written {
        ctx.notify(STRING, "set", key);
    }
    ctx.out.integer(written as i64);
    Ok(())
}

/// How a SET that wrote propagates, as Redis's `setGenericCommand` rewrites it: with a deadline
/// as `SET key value PXAT ms` (whatever the options were), otherwise without its GET options.
/// Called only while the write stream has a consumer (SET is the hottest write).
#[cold]
#[inline(never)]
fn propagate_set(ctx: &mut Ctx<'_>, ttl: Ttl, get: bool) {
    let args = ctx.args;
    match ttl {
        Ttl::At(when) => ctx.propagate_as(|| {
            vec![
                Bytes::from_static(b"SET"),
                args[1].clone(),
                args[2].clone(),
                Bytes::from_static(b"PXAT"),
                int_arg(when),
            ]
        }),
        _ if get => ctx.propagate_as(|| {
            let mut kept = args[..3].to_vec();
            kept.extend(
                args[3..]
                    .iter()
                    .filter(|a| !a.eq_ignore_ascii_case(b"get"))
                    .cloned(),
            );
            kept
        }),
        _ => {}
    }
}

fn set_with_expiry(ctx: &mut Ctx<'_>, unit: Expiry, command: &str) -> CmdResult {
    let (db, now, key, value) = (ctx.client.db, ctx.now_ms, ctx.arg(1), ctx.arg(3));
    let when = deadline(ctx.arg(2), unit, now, command)?;
    ctx.ks
        .store(db, key, StoreIf::Always, Ttl::At(when), now, || {
            Value::string(value)
        });
    let args = ctx.args;
    ctx.propagate_as(|| {
        vec![
            Bytes::from_static(b"SET"),
            args[1].clone(),
            args[3].clone(),
            Bytes::from_static(b"PXAT"),
            int_arg(when),
        ]
    });
    ctx.notify(STRING, "set", key);
    ctx.notify(GENERIC, "expire", key);
    ctx.out.ok();
    Ok(())
}

fn setex(ctx: &mut Ctx<'_>) -> CmdResult {
    set_with_expiry(ctx, Expiry::Ex, "setex")
}

fn psetex(ctx: &mut Ctx<'_>) -> CmdResult {
    set_with_expiry(ctx, Expiry::Px, "psetex")
}

fn getset(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key, value) = (ctx.client.db, ctx.now_ms, ctx.arg(1), ctx.arg(2));
    match ctx.ks.read(db, key, now) {
        Some(old) => reply_string(&mut ctx.out, old)?,
        None => {
            // The lookup's events (expired, keymiss) go out before the null.
            ctx.publish_events();
            ctx.out.null();
        }
    }
    ctx.ks.store(db, key, StoreIf::Always, Ttl::Clear, now, || {
        Value::string(value)
    });
    let args = ctx.args;
    ctx.propagate_as(|| {
        let mut v = args.to_vec();
        v[0] = Bytes::from_static(b"SET");
        v
    });
    ctx.notify(STRING, "set", key);
    Ok(())
}

fn getdel(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    match ctx.ks.read(db, key, now) {
        Some(old) => reply_string(&mut ctx.out, old)?,
        None => {
            ctx.out.null();
            return Ok(());
        }
    }
    ctx.ks.delete(db, key, now);
    let lazy = ctx.server.config.lazyfree_lazy_user_del;
    let args = ctx.args;
    ctx.propagate_as(|| vec![del_verb(lazy), args[1].clone()]);
    ctx.notify(GENERIC, "del", key);
    Ok(())
}

fn getex(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let (db, now, key) = (ctx.client.db, ctx.now_ms, &args[1][..]);
    let options = parse_options(args, 2, false)?;
    let Some(value) = ctx.ks.read(db, key, now) else {
        ctx.out.null();
        return Ok(());
    };
    // Type first, then the expiry (so a missing key never reports a bad expire time).
    string_of(value)?;
    let expire = match options.expire {
        Some((unit, arg)) => Some((unit, deadline(arg, unit, now, "getex")?)),
        None => None,
    };
    reply_string(&mut ctx.out, value)?;
    match expire {
        // An absolute deadline already past deletes the key (it is not an expiry event).
        Some((Expiry::ExAt | Expiry::PxAt, when)) if when <= now => {
            ctx.ks.delete(db, key, now);
            let lazy = ctx.ks.stream.lazy_expire;
            ctx.propagate_as(|| vec![del_verb(lazy), args[1].clone()]);
            ctx.notify(GENERIC, "del", key);
        }
        Some((_, when)) => {
            ctx.ks.set_expire(db, key, when);
            ctx.ks.dirty += 1;
            ctx.propagate_as(|| {
                vec![
                    Bytes::from_static(b"PEXPIREAT"),
                    args[1].clone(),
                    int_arg(when),
                ]
            });
            ctx.notify(GENERIC, "expire", key);
        }
        // Only a TTL actually removed is a change (and an event).
        None if options.persist && ctx.ks.persist(db, key) => {
            ctx.ks.dirty += 1;
            ctx.propagate_as(|| vec![Bytes::from_static(b"PERSIST"), args[1].clone()]);
            ctx.notify(GENERIC, "persist", key);
        }
        None => {}
    }
    Ok(())
}

fn mget(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let (db, now) = (ctx.client.db, ctx.now_ms);
    ctx.out.array(args.len() - 1);
    for key in &args[1..] {
        match ctx.ks.read(db, key, now) {
            // Non-strings read as nil here, not WRONGTYPE.
            Some(value) if value.is_string() => reply_string(&mut ctx.out, value)?,
            Some(_) => ctx.out.null(),
            None => {
                // A key that expired or was missing is announced right before its null, in
                // the middle of the array, where Redis sends it.
                ctx.publish_events();
                ctx.out.null();
            }
        }
    }
    Ok(())
}

fn mset(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let pairs = args[1..].chunks_exact(2);
    if !pairs.remainder().is_empty() {
        return Err(Error::WrongArity("mset".into()));
    }
    let (db, now) = (ctx.client.db, ctx.now_ms);
    for pair in pairs {
        ctx.ks
            .store(db, &pair[0], StoreIf::Always, Ttl::Clear, now, || {
                Value::string(&pair[1])
            });
        ctx.notify(STRING, "set", &pair[0]);
    }
    ctx.out.ok();
    Ok(())
}

fn msetnx(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let pairs = args[1..].chunks_exact(2);
    if !pairs.remainder().is_empty() {
        return Err(Error::WrongArity("msetnx".into()));
    }
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let any_exists = args[1..]
        .iter()
        .step_by(2)
        .any(|key| ctx.ks.lookup(db, key, now, Access::Write).is_some());
    if any_exists {
        ctx.out.integer(0);
        return Ok(());
    }
    for pair in pairs {
        ctx.ks
            .store(db, &pair[0], StoreIf::Always, Ttl::Clear, now, || {
                Value::string(&pair[1])
            });
        ctx.notify(STRING, "set", &pair[0]);
    }
    ctx.out.integer(1);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Byte-level edits and reads
// ---------------------------------------------------------------------------------------------

fn append(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key, suffix) = (ctx.client.db, ctx.now_ms, ctx.arg(1), ctx.arg(2));
    let limit = ctx.server.config.proto_max_bulk_len;
    let len = match ctx.ks.write(db, key, now) {
        Some(value) => {
            check_string_length(limit, (string_len(value)? + suffix.len()) as u64)?;
            let buffer = value.make_raw().expect("a string");
            buffer.extend_from_slice(suffix);
            let len = buffer.len();
            ctx.ks.dirty += 1;
            len
        }
        None => {
            // A new key holds the argument as SET would store it (int-encoded if it can be).
            ctx.ks.add(db, key, Value::string(suffix), None, now);
            suffix.len()
        }
    };
    ctx.notify(STRING, "append", key);
    ctx.out.integer(len as i64);
    Ok(())
}

fn strlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    let len = match ctx.ks.read(db, key, now) {
        Some(value) => string_len(value)?,
        None => 0,
    };
    ctx.out.integer(len as i64);
    Ok(())
}

/// Clamps Redis-style inclusive `start..=end` indexes (negative from the end) to a string of
/// `len`; None for an empty range. Shared with BITCOUNT/BITPOS.
pub(crate) fn clamp_range(mut start: i64, mut end: i64, len: i64) -> Option<(i64, i64)> {
    if start < 0 {
        start = start.wrapping_add(len);
    }
    if end < 0 {
        end = end.wrapping_add(len);
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    (start <= end && len > 0).then_some((start, end))
}

fn getrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    let Some(value) = ctx.ks.read(db, key, now) else {
        ctx.out.bulk(b"");
        return Ok(());
    };
    let bytes = string_of(value)?;
    // Both from the end and reversed: empty even where clamping would make a range.
    if start < 0 && end < 0 && start > end {
        ctx.out.bulk(b"");
        return Ok(());
    }
    match clamp_range(start, end, bytes.len() as i64) {
        Some((s, e)) => ctx.out.bulk(&bytes[s as usize..=e as usize]),
        None => ctx.out.bulk(b""),
    }
    Ok(())
}

fn setrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let offset = ctx.int_arg(2)?;
    if offset < 0 {
        return Err(Error::msg("ERR offset is out of range"));
    }
    let (db, now, key, patch) = (ctx.client.db, ctx.now_ms, ctx.arg(1), ctx.arg(3));
    let limit = ctx.server.config.proto_max_bulk_len;
    let end = (offset as u64).saturating_add(patch.len() as u64);
    let len = match ctx.ks.write(db, key, now) {
        Some(value) => {
            let len = string_len(value)?;
            if patch.is_empty() {
                // Nothing to write: the value (and its encoding) stay as they are.
                len
            } else {
                check_string_length(limit, end)?;
                let buffer = value.make_raw().expect("a string");
                if buffer.len() < end as usize {
                    buffer.resize(end as usize, 0);
                }
                buffer[offset as usize..end as usize].copy_from_slice(patch);
                let len = buffer.len();
                ctx.ks.dirty += 1;
                len
            }
        }
        None if patch.is_empty() => 0,
        None => {
            check_string_length(limit, end)?;
            let mut buffer = vec![0u8; end as usize];
            buffer[offset as usize..].copy_from_slice(patch);
            ctx.ks.add(db, key, Value::Raw(Box::new(buffer)), None, now);
            end as usize
        }
    };
    if !patch.is_empty() {
        ctx.notify(STRING, "setrange", key);
    }
    ctx.out.integer(len as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------------------------

/// INCR and friends: the stored string must be a canonical i64; the result is `int`-encoded and
/// keeps the key's TTL.
fn incr_by(ctx: &mut Ctx<'_>, by: i64) -> CmdResult {
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    match ctx.ks.write(db, key, now) {
        Some(value) => {
            let current = match &*value {
                Value::Int(n) => *n,
                other => parse_i64(&string_of(other)?).ok_or(Error::NotInteger)?,
            };
            let result = current.checked_add(by).ok_or(Error::Overflow)?;
            *value = Value::Int(result);
            ctx.ks.dirty += 1;
            ctx.notify(STRING, "incrby", key);
            ctx.out.integer(result);
        }
        None => {
            ctx.ks.add(db, key, Value::Int(by), None, now);
            ctx.notify(STRING, "incrby", key);
            ctx.out.integer(by);
        }
    }
    Ok(())
}

fn incr(ctx: &mut Ctx<'_>) -> CmdResult {
    incr_by(ctx, 1)
}

fn decr(ctx: &mut Ctx<'_>) -> CmdResult {
    incr_by(ctx, -1)
}

fn incrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let by = ctx.int_arg(2)?;
    incr_by(ctx, by)
}

fn decrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let by = ctx.int_arg(2)?;
    if by == i64::MIN {
        return Err(Error::msg("ERR decrement would overflow"));
    }
    incr_by(ctx, -by)
}

/// INCRBYFLOAT's arithmetic: the stored number (0 if missing) plus `increment`, both read as
/// Redis reads long doubles, added in x87 precision and printed in Redis's human form.
fn float_sum(current: Option<&Value>, increment: &[u8]) -> CmdResult<String> {
    let value = match current {
        None => LongDouble::ZERO,
        Some(Value::Int(n)) => LongDouble::from_i64(*n),
        Some(other) => LongDouble::from_redis_bytes(&string_of(other)?).ok_or(Error::NotFloat)?,
    };
    let increment = LongDouble::from_redis_bytes(increment).ok_or(Error::NotFloat)?;
    long_double_add(value, increment)
}

fn incrbyfloat(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key, increment) = (ctx.client.db, ctx.now_ms, ctx.arg(1), ctx.arg(2));
    let text = match ctx.ks.write(db, key, now) {
        Some(value) => {
            let text = float_sum(Some(value), increment)?;
            // A plain string, never int-encoded, and the TTL stays.
            *value = Value::plain_string(text.as_bytes());
            ctx.ks.dirty += 1;
            text
        }
        None => {
            let text = float_sum(None, increment)?;
            ctx.ks
                .add(db, key, Value::plain_string(text.as_bytes()), None, now);
            text
        }
    };
    // Propagated as the value it left, so that a replica does not redo the float sum.
    let args = ctx.args;
    ctx.propagate_as(|| {
        vec![
            Bytes::from_static(b"SET"),
            args[1].clone(),
            Bytes::copy_from_slice(text.as_bytes()),
            Bytes::from_static(b"KEEPTTL"),
        ]
    });
    ctx.notify(STRING, "incrbyfloat", key);
    ctx.out.bulk(text.as_bytes());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// LCS
// ---------------------------------------------------------------------------------------------

/// One run of the longest common subsequence: where it lies in each string (inclusive bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LcsMatch {
    a: (usize, usize),
    b: (usize, usize),
}

impl LcsMatch {
    fn len(&self) -> usize {
        self.a.1 - self.a.0 + 1
    }
}

/// The longest common subsequence of `a` and `b`, and the runs it is made of from the end of
/// the strings backwards — the order Redis reports them in. Redis fills the classic
/// (|a|+1)×(|b|+1) length table and walks it back from the bottom-right corner, taking a
/// matching byte when the last bytes agree and otherwise stepping towards the larger
/// neighbour (towards `b`'s shorter prefix on a tie); a run ends where the walk stops being
/// diagonal or reaches the start of either string. The same walk here gives the same string and
/// the same runs, which the IDX reply exposes.
fn lcs_walk(a: &[u8], b: &[u8]) -> (Vec<u8>, Vec<LcsMatch>) {
    let width = b.len() + 1;
    let mut table = vec![0u32; (a.len() + 1) * width];
    // Row by row over slices (the previous row read through 2-wide windows, the left
    // neighbour carried in a register): no bounds check per cell, which made the indexed form
    // a quarter slower than Redis's.
    for (i, &ai) in a.iter().enumerate() {
        let (before, rest) = table.split_at_mut((i + 1) * width);
        let prev = &before[i * width..];
        let cur = &mut rest[..width];
        let mut left = 0u32;
        for ((cell, &bj), up) in cur[1..].iter_mut().zip(b).zip(prev.windows(2)) {
            let v = if ai == bj { up[0] + 1 } else { up[1].max(left) };
            *cell = v;
            left = v;
        }
    }
    let mut common = Vec::with_capacity(table[a.len() * width + b.len()] as usize);
    let mut runs = Vec::new();
    let mut run: Option<LcsMatch> = None;
    let (mut i, mut j) = (a.len(), b.len());
    while i > 0 && j > 0 {
        let mut ends = false;
        if a[i - 1] == b[j - 1] {
            common.push(a[i - 1]);
            match &mut run {
                None => {
                    run = Some(LcsMatch {
                        a: (i - 1, i - 1),
                        b: (j - 1, j - 1),
                    })
                }
                // Contiguous with the run so far: it grows backwards.
                Some(r) if r.a.0 == i && r.b.0 == j => {
                    r.a.0 -= 1;
                    r.b.0 -= 1;
                }
                // Redis closes the run here without opening one at this byte: the byte is in
                // the common string but in no reported run.
                Some(_) => ends = true,
            }
            if run.is_some_and(|r| r.a.0 == 0 || r.b.0 == 0) {
                ends = true;
            }
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * width + j] > table[i * width + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            ends = run.is_some();
        }
        if ends {
            if let Some(r) = run.take() {
                runs.push(r);
            }
        }
    }
    common.reverse();
    (common, runs)
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the longest common subsequence of
/// two strings (a missing key is the empty string), its length, or the matching runs.
fn lcs(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.client.db, ctx.now_ms);
    // Both keys are looked up (hits and misses counted) before the type check, as Redis does.
    let a = ctx
        .ks
        .read(db, ctx.args[1].as_ref(), now)
        .map(|v| string_of(v).map(|s| s.to_vec()));
    let b = ctx
        .ks
        .read(db, ctx.args[2].as_ref(), now)
        .map(|v| string_of(v).map(|s| s.to_vec()));
    let (a, b) = match (a.transpose(), b.transpose()) {
        (Ok(a), Ok(b)) => (a.unwrap_or_default(), b.unwrap_or_default()),
        _ => {
            return Err(Error::msg(
                "ERR The specified keys must contain string values",
            ))
        }
    };
    let (mut len_only, mut idx, mut with_match_len) = (false, false, false);
    let mut min_match_len = 0i64;
    let mut j = 3;
    while j < ctx.argc() {
        let opt = ctx.arg(j);
        let more = ctx.argc() - 1 - j;
        if word_is(opt, "idx") {
            idx = true;
        } else if word_is(opt, "len") {
            len_only = true;
        } else if word_is(opt, "withmatchlen") {
            with_match_len = true;
        } else if word_is(opt, "minmatchlen") && more > 0 {
            min_match_len = ctx.int_arg(j + 1)?.max(0);
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    if len_only && idx {
        return Err(Error::msg(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    if a.len() as u64 >= u32::MAX as u64 - 1 || b.len() as u64 >= u32::MAX as u64 - 1 {
        return Err(Error::msg("ERR String too long for LCS"));
    }
    // The table's size is checked against proto-max-bulk-len before it is allocated.
    let table_bytes = (a.len() as u64 + 1) * (b.len() as u64 + 1) * 4;
    if table_bytes > ctx.server.config.proto_max_bulk_len as u64 {
        return Err(Error::msg(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let (common, runs) = lcs_walk(&a, &b);
    if idx {
        let shown: Vec<&LcsMatch> = runs
            .iter()
            .filter(|r| min_match_len == 0 || r.len() as i64 >= min_match_len)
            .collect();
        ctx.out.map(2);
        ctx.out.bulk(b"matches");
        ctx.out.array(shown.len());
        for r in shown {
            ctx.out.array(2 + with_match_len as usize);
            for (start, end) in [r.a, r.b] {
                ctx.out.array(2);
                ctx.out.integer(start as i64);
                ctx.out.integer(end as i64);
            }
            if with_match_len {
                ctx.out.integer(r.len() as i64);
            }
        }
        ctx.out.bulk(b"len");
        ctx.out.integer(common.len() as i64);
    } else if len_only {
        ctx.out.integer(common.len() as i64);
    } else {
        ctx.out.bulk(&common);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_subsequence(needle: &[u8], hay: &[u8]) -> bool {
        let mut it = hay.iter();
        needle.iter().all(|c| it.any(|h| h == c))
    }

    /// The length of the longest common subsequence by plain recursion with memo: the model
    /// the table walk is checked against.
    fn lcs_len_model(a: &[u8], b: &[u8]) -> usize {
        let mut memo = std::collections::HashMap::new();
        fn go(
            a: &[u8],
            b: &[u8],
            memo: &mut std::collections::HashMap<(usize, usize), usize>,
        ) -> usize {
            if a.is_empty() || b.is_empty() {
                return 0;
            }
            if let Some(&n) = memo.get(&(a.len(), b.len())) {
                return n;
            }
            let n = if a[0] == b[0] {
                1 + go(&a[1..], &b[1..], memo)
            } else {
                go(&a[1..], b, memo).max(go(a, &b[1..], memo))
            };
            memo.insert((a.len(), b.len()), n);
            n
        }
        go(a, b, &mut memo)
    }

    proptest::proptest! {
        /// The common string is a subsequence of both, as long as the model's; every run is the
        /// same bytes in both strings, runs come from the end backwards without overlapping,
        /// and they hold no more bytes than the common string.
        #[test]
        fn lcs_walk_matches_model(
            a in proptest::collection::vec(0u8..4, 0..40),
            b in proptest::collection::vec(0u8..4, 0..40),
        ) {
            let (common, runs) = lcs_walk(&a, &b);
            proptest::prop_assert!(is_subsequence(&common, &a));
            proptest::prop_assert!(is_subsequence(&common, &b));
            proptest::prop_assert_eq!(common.len(), lcs_len_model(&a, &b));
            let mut covered = 0;
            for pair in runs.windows(2) {
                proptest::prop_assert!(pair[1].a.1 < pair[0].a.0 && pair[1].b.1 < pair[0].b.0);
            }
            for r in &runs {
                proptest::prop_assert_eq!(r.a.1 - r.a.0, r.b.1 - r.b.0);
                proptest::prop_assert_eq!(&a[r.a.0..=r.a.1], &b[r.b.0..=r.b.1]);
                covered += r.len();
            }
            proptest::prop_assert!(covered <= common.len());
        }
    }

    #[test]
    fn set_option_conflicts() {
        let args = |s: &str| -> Vec<Bytes> {
            s.split(' ')
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect()
        };
        let ok = |s: &str, set: bool| parse_options(&args(s), 3, set).is_ok();
        assert!(ok("set k v NX GET EX 10", true));
        assert!(ok("set k v EX 10 EX 20", true));
        assert!(ok("set k v NX NX", true));
        assert!(!ok("set k v NX XX", true));
        assert!(!ok("set k v EX 10 PX 10", true));
        assert!(!ok("set k v KEEPTTL EX 1", true));
        assert!(!ok("set k v EX", true));
        assert!(!ok("set k v PERSIST", true));
        assert!(ok("getex k x PERSIST", false));
        assert!(!ok("getex k x PERSIST EX 1", false));
        assert!(!ok("getex k x NX", false));
    }

    #[test]
    fn deadlines() {
        let now = 1_700_000_000_000;
        assert_eq!(deadline(b"10", Expiry::Ex, now, "set"), Ok(now + 10_000));
        assert_eq!(deadline(b"10", Expiry::PxAt, now, "set"), Ok(10));
        assert_eq!(
            deadline(b"0", Expiry::Ex, now, "set"),
            Err(Error::msg("ERR invalid expire time in 'set' command"))
        );
        assert!(deadline(b"9223372036854775", Expiry::Ex, now, "set").is_err());
        assert_eq!(
            deadline(b"9223372036854775", Expiry::ExAt, now, "set"),
            Ok(9_223_372_036_854_775_000)
        );
        assert!(deadline(b"9223372036854775807", Expiry::Px, now, "set").is_err());
        assert_eq!(
            deadline(b"x", Expiry::Px, now, "set"),
            Err(Error::NotInteger)
        );
    }

    #[test]
    fn ranges() {
        assert_eq!(clamp_range(0, -1, 5), Some((0, 4)));
        assert_eq!(clamp_range(-100, 100, 5), Some((0, 4)));
        assert_eq!(clamp_range(3, 1, 5), None);
        assert_eq!(clamp_range(0, -1, 0), None);
        assert_eq!(clamp_range(i64::MAX, i64::MIN, 5), None);
    }

    use crate::io::test_harness::Harness;

    #[test]
    fn documented_syntax_parses() {
        use crate::kernel::table::docs::{parse, ArgType};
        for spec in COMMANDS.iter().chain(super::super::bits::COMMANDS) {
            let args = parse(spec.syntax, spec.keys.len());
            assert!(args.is_ok(), "{}: {:?}", spec.name, args);
        }
        let set = parse(COMMANDS[1].syntax, 1).unwrap();
        let names: Vec<&str> = set.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["key", "value", "condition", "get", "expiration"]);
        assert!(set[2].optional && set[2].kind == ArgType::Oneof);
        assert_eq!(set[4].children.len(), 5);
        let bitpos = parse(super::super::bits::COMMANDS[3].syntax, 1).unwrap();
        assert_eq!(bitpos[2].name, "index");
        assert_eq!(bitpos[2].children[1].name, "end_index");
        assert_eq!(bitpos[2].children[1].children[1].name, "unit");
    }

    #[test]
    fn encodings_follow_redis() {
        let mut h = Harness::new();
        let cases = [
            ("SET a 123", "a", "int"),
            ("SET b abc", "b", "embstr"),
            ("SET c 0123", "c", "embstr"),
            (
                "SET d aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "d",
                "raw",
            ),
            ("APPEND a 4", "a", "raw"),
            ("APPEND e 12", "e", "int"),
            ("APPEND b \"\"", "b", "raw"),
            ("INCR a", "a", "int"),
            ("INCR n", "n", "int"),
            ("INCRBYFLOAT f 3", "f", "embstr"),
            ("INCRBYFLOAT i 1e50", "i", "raw"),
            ("SET s 12345", "s", "int"),
            ("SETRANGE s 0 \"\"", "s", "int"),
            ("SETRANGE s 0 9", "s", "raw"),
            ("SETRANGE t 0 x", "t", "raw"),
            ("SET u 12", "u", "int"),
            ("SETBIT u 0 0", "u", "raw"),
            ("SETBIT v 0 1", "v", "raw"),
            ("GETSET u 77", "u", "int"),
            ("MSET m1 1 m2 x", "m1", "int"),
            ("SETNX nx 7", "nx", "int"),
            ("SETEX se 100 7", "se", "int"),
            ("PSETEX pe 100000 abc", "pe", "embstr"),
            ("BITOP OR bo m1", "bo", "raw"),
            ("SET g 5 GET", "g", "int"),
        ];
        for (command, key, encoding) in cases {
            h.run_text(command);
            assert_eq!(h.encoding(key), encoding, "after {command}");
        }
    }

    #[test]
    fn in_place_edits_keep_the_ttl_and_replacements_drop_it() {
        let mut h = Harness::new();
        let keeps = [
            "INCR k",
            "DECRBY k 2",
            "INCRBYFLOAT k 1.5",
            "APPEND k x",
            "SETRANGE k 0 y",
            "SETBIT k 0 1",
            "SET k v KEEPTTL",
            "SET k v XX KEEPTTL GET",
            "GETEX k",
        ];
        for command in keeps {
            h.run_text("SET k 10 EX 100");
            let deadline = h.expire_of("k");
            assert!(deadline.is_some());
            h.run_text(command);
            assert_eq!(h.expire_of("k"), deadline, "{command} keeps the TTL");
        }
        let drops = [
            "SET k v",
            "GETSET k v",
            "MSET k v",
            "BITOP NOT k k",
            "GETEX k PERSIST",
        ];
        for command in drops {
            h.run_text("SET k 10 EX 100");
            h.run_text(command);
            assert_eq!(h.expire_of("k"), None, "{command} drops the TTL");
        }
        let now = h.now();
        h.run_text("SET k v PX 5000");
        assert_eq!(h.expire_of("k"), Some(now + 5000));
        h.run_text("SET k v EXAT 4000000000");
        assert_eq!(h.expire_of("k"), Some(4_000_000_000_000));
        h.run_text("GETEX k PX 2000");
        assert_eq!(h.expire_of("k"), Some(now + 2000));
        h.run_text("SETEX k 7 v");
        assert_eq!(h.expire_of("k"), Some(now + 7000));
    }

    #[test]
    fn expiry_in_the_past_and_lazy_expiry() {
        let mut h = Harness::new();
        assert_eq!(h.run_text("SET p v PXAT 1"), "+OK\r\n");
        assert_eq!(h.run_text("GET p"), "$-1\r\n");
        h.run_text("SET q v");
        assert_eq!(h.run_text("GETEX q EXAT 1"), "$1\r\nv\r\n");
        assert!(
            h.engine.ks.dbs[0].main.get(&b"q"[..]).is_none(),
            "deleted at once"
        );
        h.run_text("SET r v PX 100");
        h.advance_ms(100);
        assert_eq!(h.run_text("GET r"), "$1\r\nv\r\n", "alive at its deadline");
        h.advance_ms(1);
        assert_eq!(h.run_text("GET r"), "$-1\r\n");
        // KEEPTTL on an expired key does not resurrect its old deadline.
        h.run_text("SET s v PX 10");
        h.advance_ms(11);
        h.run_text("SET s w KEEPTTL");
        assert_eq!(h.expire_of("s"), None);
        assert_eq!(h.run_text("GET s"), "$1\r\nw\r\n");
    }

    #[test]
    fn dirty_counts_real_changes() {
        let mut h = Harness::new();
        let dirty = |h: &Harness| h.engine.ks.dirty;
        let steps = [
            ("SET k v", 1),
            ("SET k v NX", 0),
            ("SET x v XX", 0),
            ("MSET a 1 b 2", 2),
            ("MSETNX a 1 c 2", 0),
            ("SETBIT bits 3 1", 1),
            ("SETBIT bits 3 1", 0),
            ("SETBIT bits 3 0", 1),
            ("SETBIT bits 100 0", 1),
            ("SETRANGE k 0 \"\"", 0),
            ("APPEND k \"\"", 1),
            ("GETEX k PERSIST", 0),
            ("GETEX k EX 100", 1),
            ("GETEX k PERSIST", 1),
            ("GETDEL missing", 0),
            ("GETDEL k", 1),
            ("INCR n", 1),
            ("INCRBYFLOAT n 1", 1),
            ("INCR k", 1),
            ("BITOP AND dest missing", 0),
        ];
        for (command, delta) in steps {
            let before = dirty(&h);
            h.run_text(command);
            assert_eq!(dirty(&h) - before, delta, "{command}");
        }
    }

    #[test]
    fn strings_stop_at_proto_max_bulk_len() {
        let mut h = Harness::new();
        h.engine.server.config.proto_max_bulk_len = 8;
        let too_big = "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n";
        assert_eq!(
            h.run_text("APPEND a 12345678"),
            ":8\r\n",
            "a new key is not checked"
        );
        assert_eq!(h.run_text("APPEND a 9"), too_big);
        assert_eq!(h.run_text("APPEND a \"\""), ":8\r\n");
        assert_eq!(h.run_text("SETRANGE b 7 x"), ":8\r\n");
        assert_eq!(h.run_text("SETRANGE b 8 x"), too_big);
        assert_eq!(h.run_text("SETRANGE c 8 x"), too_big);
        assert_eq!(h.run_text("SETRANGE c 100 \"\""), ":0\r\n");
        assert_eq!(h.run_text("SETBIT d 63 1"), ":0\r\n");
        assert_eq!(
            h.run_text("SETBIT d 64 1"),
            "-ERR bit offset is not an integer or out of range\r\n"
        );
        assert_eq!(h.run_text("GETBIT d 63"), ":1\r\n");
    }

    #[test]
    fn incrbyfloat_uses_long_double() {
        let mut h = Harness::new();
        h.run_text("SET f 10.5");
        assert_eq!(h.run_text("INCRBYFLOAT f 0.1"), "$4\r\n10.6\r\n");
        assert_eq!(
            h.run_text("INCRBYFLOAT g 0.000003814697265625"),
            "$19\r\n0.00000381469726562\r\n"
        );
        assert_eq!(
            h.run_text("INCRBYFLOAT f inf"),
            "-ERR increment would produce NaN or Infinity\r\n"
        );
        h.run_text("SET h abc");
        assert_eq!(
            h.run_text("INCRBYFLOAT h 1"),
            "-ERR value is not a valid float\r\n"
        );
    }
}
