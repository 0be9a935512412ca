//! Sorted set commands: ZADD and friends, the range family (ZRANGE with BYSCORE/BYLEX/REV/LIMIT,
//! ZRANGESTORE and the older ZRANGEBYSCORE…), pops (ZPOPMIN, ZMPOP and their blocking forms),
//! set algebra (ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD), ZRANDMEMBER and ZSCAN.
//!
//! The data structure and its two encodings live in [`embedis_datatypes::zset`]; this module is
//! the protocol side, and follows Redis 7.0 in what users can see:
//!
//! - **Argument checks in Redis's order.** ZADD parses every score before it looks at the key, so
//!   `ZADD str 1 a x b` on a string key answers "not a valid float"; ZUNION looks its keys up (and
//!   may answer WRONGTYPE) before reading WEIGHTS; ZRANGE parses its range before the key.
//! - **Numbers as Redis reads them.** Scores, increments and weights go through C's `strtod` with
//!   Redis's strict checks (whole argument, no leading space, no overflow to infinity or
//!   underflow to zero, no NaN); range bounds use Redis's laxer rules for `min`/`max` (leading
//!   space allowed, read up to a NUL byte, an empty bound is 0). We call the C library's `strtod`
//!   itself, so hexadecimal floats, `inf`/`infinity` and rounding are glibc's.
//! - **Replies.** Scores are doubles (`%.17g` bulk strings in RESP2, `,` doubles in RESP3); with
//!   WITHSCORES, RESP3 gets an array of [member, score] pairs, RESP2 a flat array. ZPOPMIN with a
//!   COUNT nests pairs in RESP3 only; ZMPOP/BZMPOP always nest; BZPOPMIN is flat.
//! - **Encodings.** A new set is packed, and converts when an insertion passes
//!   `zset-max-listpack-entries` / `zset-max-listpack-value`; sets built whole (the STORE
//!   commands) are packed when their final size allows. An emptied set is deleted.
//! - **Blocking.** BZPOPMIN, BZPOPMAX and BZMPOP wait for a key to hold a sorted set; when woken
//!   by a write to a key they are served from that key (Redis 7.0), see [`crate::model::blocking`].
//!
//! The handlers are in `members` (ZADD…ZRANK, ZRANDMEMBER, ZSCAN), `ranges` (the range family and
//! ZREMRANGEBY*), `pops` and `algebra`; this module keeps the number and range readers, the replies
//! and the key access they share (GEO and SORT use some too), and the command table at its end.

mod algebra;
mod members;
mod pops;
mod ranges;

use embedis_datatypes::zset::{LexBound, LexRange, Limits, ScoreRange, ZSetValue};
use embedis_protocol::number::parse_i64;
use embedis_protocol::Writer;

use crate::base::config::event_class::{GENERIC, ZSET};
use crate::base::cstr::c_str;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, Begin, Find, KeySpec};
use crate::kernel::table::{Acl, CommandSpec, Flags};

use algebra::{zdiff, zdiffstore, zinter, zintercard, zinterstore, zunion, zunionstore};
use members::{
    zadd, zcard, zcount, zincrby, zlexcount, zmscore, zrandmember, zrank, zrem, zrevrank, zscan,
    zscore,
};
use pops::{bzmpop, bzpopmax, bzpopmin, zmpop, zpopmax, zpopmin};
use ranges::{
    zrange, zrangebylex, zrangebyscore, zrangestore, zremrangebylex, zremrangebyrank,
    zremrangebyscore, zrevrange, zrevrangebylex, zrevrangebyscore,
};

// ---------------------------------------------------------------------------------------------
// Numbers and ranges
// ---------------------------------------------------------------------------------------------

/// C's `strtod` over `arg` read as a C string (up to a NUL byte): the value, how many bytes it
/// consumed, and whether it set `ERANGE`.
pub(crate) fn c_strtod(arg: &[u8]) -> (f64, usize, bool) {
    let text = c_str(arg);
    let mut stack = [0u8; 128];
    let heap: Vec<u8>;
    let ptr = if text.len() < stack.len() {
        stack[..text.len()].copy_from_slice(text);
        stack.as_ptr()
    } else {
        heap = [text, b"\0"].concat();
        heap.as_ptr()
    };
    // SAFETY: `ptr` points to a NUL-terminated buffer that outlives the call; strtod only reads
    // it and stores a pointer into it in `end`; errno is thread-local.
    unsafe {
        *libc::__errno_location() = 0;
        let mut end: *mut libc::c_char = std::ptr::null_mut();
        let value = libc::strtod(ptr as *const libc::c_char, &mut end);
        let consumed = (end as *const u8).offset_from(ptr) as usize;
        let erange = *libc::__errno_location() == libc::ERANGE;
        (value, consumed, erange)
    }
}

/// Redis's `string2d`: the whole argument must be a number; no leading space, no NaN, no
/// overflow to infinity and no underflow to zero (`inf` written out is fine).
pub(crate) fn parse_double(arg: &[u8]) -> Option<f64> {
    if arg.is_empty() || arg[0].is_ascii_whitespace() || arg[0] == 0x0b {
        return None;
    }
    let (value, consumed, erange) = c_strtod(arg);
    if consumed != arg.len() || value.is_nan() || (erange && (value.is_infinite() || value == 0.0))
    {
        return None;
    }
    Some(value)
}

/// A score argument (`ERR value is not a valid float`).
fn score_arg(arg: &[u8]) -> CmdResult<f64> {
    parse_double(arg).ok_or(Error::NotFloat)
}

/// One bound of a score range as Redis reads it: `(` for exclusive, then `strtod` up to the end
/// of the C string (leading space allowed, empty is 0), NaN refused.
fn score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    let (text, exclusive) = match arg.first() {
        Some(b'(') => (&arg[1..], true),
        _ => (arg, false),
    };
    let (value, consumed, _) = c_strtod(text);
    if consumed != c_str(text).len() || value.is_nan() {
        return None;
    }
    Some((value, exclusive))
}

fn score_range(min: &[u8], max: &[u8]) -> CmdResult<ScoreRange> {
    let bad = || Error::msg("ERR min or max is not a float");
    let (min, min_ex) = score_bound(min).ok_or_else(bad)?;
    let (max, max_ex) = score_bound(max).ok_or_else(bad)?;
    Ok(ScoreRange {
        min,
        max,
        min_ex,
        max_ex,
    })
}

/// One bound of a lexicographic range: `[x`, `(x`, `-` or `+`.
fn lex_bound(arg: &[u8]) -> Option<LexBound<'_>> {
    match arg {
        [b'+'] => Some(LexBound::PosInf),
        [b'-'] => Some(LexBound::NegInf),
        [b'(', rest @ ..] => Some(LexBound::Exclusive(rest)),
        [b'[', rest @ ..] => Some(LexBound::Inclusive(rest)),
        _ => None,
    }
}

fn lex_range<'a>(min: &'a [u8], max: &'a [u8]) -> CmdResult<LexRange<'a>> {
    let bad = || Error::msg("ERR min or max not valid string range item");
    Ok(LexRange {
        min: lex_bound(min).ok_or_else(bad)?,
        max: lex_bound(max).ok_or_else(bad)?,
    })
}

/// Redis's `getPositiveLongFromObjectOrReply`: `message` for a bad number and a negative one.
fn positive_arg(arg: &[u8], message: &'static str) -> CmdResult<i64> {
    match parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(Error::msg(message)),
    }
}

/// Redis's `getRangeLongFromObjectOrReply(1, LONG_MAX, msg)`: the message for both a bad number
/// and one out of range.
fn count_arg(arg: &[u8], message: &'static str) -> CmdResult<i64> {
    match parse_i64(arg) {
        Some(n) if n >= 1 => Ok(n),
        _ => Err(Error::msg(message)),
    }
}

/// Clamps Redis-style rank indexes (negative from the end) to the set: `None` if nothing is
/// selected.
fn resolve_ranks(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 {
        len.saturating_add(end)
    } else {
        end
    };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

// ---------------------------------------------------------------------------------------------
// Replies
// ---------------------------------------------------------------------------------------------

/// Writes scores without allocating for each: the writer's double text (`%.17g` as 7.0, the
/// shortest digits from 7.2) into a reused buffer.
struct ScoreWriter {
    text: Vec<u8>,
}

impl ScoreWriter {
    fn new() -> Self {
        ScoreWriter {
            text: Vec::with_capacity(32),
        }
    }

    fn write(&mut self, out: &mut Writer<'_>, score: f64) {
        self.text.clear();
        out.push_double_text(&mut self.text, score);
        if out.is_resp3() {
            out.raw(b",");
            out.raw(&self.text);
            out.raw(b"\r\n");
        } else {
            out.bulk(&self.text);
        }
    }
}

/// A list of elements as the range commands reply: members only, or with scores (flat in RESP2,
/// pairs in RESP3 — or always pairs when `nested`, as ZMPOP does).
fn reply_elements(out: &mut Writer<'_>, items: &[(&[u8], f64)], withscores: bool, nested: bool) {
    let mut scores = ScoreWriter::new();
    if !withscores {
        out.array(items.len());
        for (m, _) in items {
            out.bulk(m);
        }
    } else if nested || out.is_resp3() {
        out.array(items.len());
        for &(m, s) in items {
            out.array(2);
            out.bulk(m);
            scores.write(out, s);
        }
    } else {
        out.array(items.len() * 2);
        for &(m, s) in items {
            out.bulk(m);
            scores.write(out, s);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Key access
// ---------------------------------------------------------------------------------------------

fn zset_of(value: &mut Value) -> CmdResult<&mut ZSetValue> {
    match value {
        Value::ZSet(z) => Ok(z),
        _ => Err(Error::WrongType),
    }
}

pub(crate) fn limits(ctx: &Ctx<'_>) -> Limits {
    let e = &ctx.server.config.encodings;
    Limits {
        max_entries: e.zset_max_listpack_entries,
        max_value: e.zset_max_listpack_value,
    }
}

/// Reads a sorted set: `Ok(None)` if the key is missing, WRONGTYPE if it holds something else.
pub(crate) fn read_zset<'k>(
    ctx: &'k mut Ctx<'_>,
    key: &[u8],
) -> CmdResult<Option<&'k mut ZSetValue>> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.read(db, key, now) {
        None => Ok(None),
        Some(value) => zset_of(value).map(Some),
    }
}

/// Deletes `key` if the set it holds became empty (a `del` event).
fn delete_if_empty(ctx: &mut Ctx<'_>, key: &[u8], empty: bool) {
    if empty {
        let db = ctx.db();
        ctx.ks.delete_emptied(db, key, ctx.now_ms);
        ctx.notify(GENERIC, "del", key);
    }
}

/// Stores a set built by a command under `dst` (replacing whatever was there, TTL included), or
/// deletes `dst` when the set is empty; replies with the size, then sends `event` (or `del`
/// if an empty result deleted something), in Redis's order.
fn store_result(ctx: &mut Ctx<'_>, dst: &[u8], set: ZSetValue, event: &'static str) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let len = set.len();
    if len > 0 {
        ctx.ks.set(db, dst, Value::ZSet(set), false, now);
        ctx.publish_events();
        ctx.out.integer(len as i64);
        ctx.notify(ZSET, event, dst);
    } else {
        let deleted = ctx.ks.delete(db, dst, now);
        ctx.out.integer(0);
        if deleted {
            ctx.notify(GENERIC, "del", dst);
        }
    }
}

const RW_UPDATE: u16 = flag::RW | flag::UPDATE;
const RW_ACCESS_UPDATE: u16 = flag::RW | flag::ACCESS | flag::UPDATE;
const RW_DELETE: u16 = flag::RW | flag::DELETE;
const RW_ACCESS_DELETE: u16 = flag::RW | flag::ACCESS | flag::DELETE;
const RO_ACCESS: u16 = flag::RO | flag::ACCESS;
const OW_UPDATE: u16 = flag::OW | flag::UPDATE;

const FAST_WRITE: Flags = Flags::WRITE.union(Flags::FAST);
const READ_FAST: Flags = Flags::READONLY.union(Flags::FAST);

/// Keys counted by a `numkeys` argument at `index` (relative to the spec's start).
const fn keynum(begin: i32, flags: u16) -> KeySpec {
    KeySpec {
        flags,
        begin: Begin::Index(begin),
        find: Find::Keynum {
            count_index: 0,
            first_key: 1,
            step: 1,
        },
        notes: "",
    }
}

const ONE_RW_UPDATE: &[KeySpec] = &[KeySpec::single(1, RW_UPDATE)];
const ONE_RW_ACCESS_UPDATE: &[KeySpec] = &[KeySpec::single(1, RW_ACCESS_UPDATE)];
const ONE_RW_DELETE: &[KeySpec] = &[KeySpec::single(1, RW_DELETE)];
const ONE_RW_ACCESS_DELETE: &[KeySpec] = &[KeySpec::single(1, RW_ACCESS_DELETE)];
const ONE_RO_ACCESS: &[KeySpec] = &[KeySpec::single(1, RO_ACCESS)];
const ONE_RO: &[KeySpec] = &[KeySpec::single(1, flag::RO)];
const STORE_FROM_ONE: &[KeySpec] = &[KeySpec::single(1, OW_UPDATE), KeySpec::single(2, RO_ACCESS)];
const STORE_FROM_MANY: &[KeySpec] = &[KeySpec::single(1, OW_UPDATE), keynum(2, RO_ACCESS)];
const MANY_RO: &[KeySpec] = &[keynum(1, RO_ACCESS)];
const NONDETERMINISTIC: &[&str] = &["nondeterministic_output"];

const ZRANK_SUMMARY: &str = "Returns a member's position counting from the lowest score.";
const ZREVRANK_SUMMARY: &str = "Returns a member's position counting from the highest score.";
const WITH_SCORE: &str = "key member [WITHSCORE@7.2.0]";

/// ZRANK's or ZREVRANK's spec for one span of versions (their arity changed in 7.2).
const fn rank_spec(
    name: &'static str,
    handler: crate::kernel::table::Handler,
    summary: &'static str,
    arity: i32,
    syntax: &'static str,
) -> CommandSpec {
    CommandSpec::new(name, arity, handler)
        .flags(READ_FAST)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc("sorted-set", "2.0.0", "O(log(N))", summary, syntax)
}

// BZPOPMIN and BZPOPMAX have one spec per span of versions: until Redis 7.2 they are
// `noscript`; from 7.2 scripts may run them, and they never block there (as inside MULTI).
const BZPOPMIN: CommandSpec = CommandSpec::new("bzpopmin", -3, bzpopmin)
    .flags(FAST_WRITE.union(Flags::BLOCKING))
    .acl(Acl::SORTEDSET)
    .keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
    .doc(
        "sorted-set",
        "5.0.0",
        "O(log(N)) with N being the number of elements in the sorted set.",
        "Pops the member with the lowest score from the first non-empty sorted set, waiting for one if none has any.",
        "key... timeout:double",
    );

const BZPOPMAX: CommandSpec = CommandSpec::new("bzpopmax", -3, bzpopmax)
    .flags(FAST_WRITE.union(Flags::BLOCKING))
    .acl(Acl::SORTEDSET)
    .keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
    .doc(
        "sorted-set",
        "5.0.0",
        "O(log(N)) with N being the number of elements in the sorted set.",
        "Pops the member with the highest score from the first non-empty sorted set, waiting for one if none has any.",
        "key... timeout:double",
    );

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("zadd", -4, zadd)
        .flags(FAST_WRITE.union(Flags::DENYOOM))
        .acl(Acl::SORTEDSET)
        .keys(ONE_RW_UPDATE)
        .doc(
            "sorted-set",
            "1.2.0",
            "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
            "Adds members with scores to a sorted set, or updates the scores of existing members; creates the key if needed.",
            "key [condition=NX|XX] [comparison=GT|LT] [CH] [INCR] data=(score:double member)...",
        ),
    CommandSpec::new("zincrby", 4, zincrby)
        .flags(FAST_WRITE.union(Flags::DENYOOM))
        .acl(Acl::SORTEDSET)
        .keys(ONE_RW_ACCESS_UPDATE)
        .doc(
            "sorted-set",
            "1.2.0",
            "O(log(N)) where N is the number of elements in the sorted set.",
            "Adds an increment to a member's score (a missing member starts at 0).",
            "key increment:integer member",
        ),
    CommandSpec::new("zrem", -3, zrem)
        .flags(FAST_WRITE)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RW_DELETE)
        .doc(
            "sorted-set",
            "1.2.0",
            "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
            "Removes members from a sorted set; deletes the key when none remain.",
            "key member...",
        ),
    CommandSpec::new("zscore", 3, zscore)
        .flags(READ_FAST)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "1.2.0",
            "O(1)",
            "Returns a member's score.",
            "key member",
        ),
    CommandSpec::new("zmscore", -3, zmscore)
        .flags(READ_FAST)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "6.2.0",
            "O(N) where N is the number of members being requested.",
            "Returns the scores of several members (null for missing ones).",
            "key member...",
        ),
    CommandSpec::new("zcard", 2, zcard)
        .flags(READ_FAST)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO)
        .doc(
            "sorted-set",
            "1.2.0",
            "O(1)",
            "Returns how many members a sorted set has.",
            "key",
        ),
    CommandSpec::new("zcount", 4, zcount)
        .flags(READ_FAST)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "2.0.0",
            "O(log(N)) with N being the number of elements in the sorted set.",
            "Counts the members whose score lies in a range.",
            "key min:double max:double",
        ),
    CommandSpec::new("zlexcount", 4, zlexcount)
        .flags(READ_FAST)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "2.8.9",
            "O(log(N)) with N being the number of elements in the sorted set.",
            "Counts the members in a lexicographic range (for sets whose scores are all equal).",
            "key min max",
        ),
    // Until 7.2 (arity 3), then with WITHSCORE (arity -3).
    rank_spec("zrank", zrank, ZRANK_SUMMARY, 3, "key member").until("7.2.0"),
    rank_spec("zrank", zrank, ZRANK_SUMMARY, -3, WITH_SCORE).from("7.2.0"),
    rank_spec("zrevrank", zrevrank, ZREVRANK_SUMMARY, 3, "key member").until("7.2.0"),
    rank_spec("zrevrank", zrevrank, ZREVRANK_SUMMARY, -3, WITH_SCORE).from("7.2.0"),
    CommandSpec::new("zrange", -4, zrange)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "1.2.0",
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
            "Returns members by position, score or lexicographic range, optionally reversed and paged.",
            "key start stop [sortby=BYSCORE|BYLEX] [REV] [limit=(LIMIT offset:integer count:integer)] [WITHSCORES]",
        ),
    CommandSpec::new("zrangestore", -5, zrangestore)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::SORTEDSET)
        .keys(STORE_FROM_ONE)
        .doc(
            "sorted-set",
            "6.2.0",
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
            "Stores a range of a sorted set (as ZRANGE selects it) under another key.",
            "dst:key src:key min max [sortby=BYSCORE|BYLEX] [REV] [limit=(LIMIT offset:integer count:integer)]",
        ),
    CommandSpec::new("zrangebyscore", -4, zrangebyscore)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "1.0.5",
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned.",
            "Returns the members in a score range, lowest first.",
            "key min:double max:double [WITHSCORES] [limit=(LIMIT offset:integer count:integer)]",
        ),
    CommandSpec::new("zrevrangebyscore", -4, zrevrangebyscore)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "2.2.0",
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned.",
            "Returns the members in a score range, highest first.",
            "key max:double min:double [WITHSCORES] [limit=(LIMIT offset:integer count:integer)]",
        ),
    CommandSpec::new("zrangebylex", -4, zrangebylex)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "2.8.9",
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned.",
            "Returns the members in a lexicographic range, lowest first.",
            "key min max [limit=(LIMIT offset:integer count:integer)]",
        ),
    CommandSpec::new("zrevrangebylex", -4, zrevrangebylex)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "2.8.9",
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned.",
            "Returns the members in a lexicographic range, highest first.",
            "key max min [limit=(LIMIT offset:integer count:integer)]",
        ),
    CommandSpec::new("zrevrange", -4, zrevrange)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "1.2.0",
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
            "Returns members by position counting from the highest score.",
            "key start:integer stop:integer [WITHSCORES]",
        ),
    CommandSpec::new("zremrangebyrank", 4, zremrangebyrank)
        .flags(Flags::WRITE)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RW_DELETE)
        .doc(
            "sorted-set",
            "2.0.0",
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
            "Removes the members in a range of positions.",
            "key start:integer stop:integer",
        ),
    CommandSpec::new("zremrangebyscore", 4, zremrangebyscore)
        .flags(Flags::WRITE)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RW_DELETE)
        .doc(
            "sorted-set",
            "1.2.0",
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
            "Removes the members in a score range.",
            "key min:double max:double",
        ),
    CommandSpec::new("zremrangebylex", 4, zremrangebylex)
        .flags(Flags::WRITE)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RW_DELETE)
        .doc(
            "sorted-set",
            "2.8.9",
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
            "Removes the members in a lexicographic range.",
            "key min max",
        ),
    CommandSpec::new("zpopmin", -2, zpopmin)
        .flags(FAST_WRITE)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RW_ACCESS_DELETE)
        .doc(
            "sorted-set",
            "5.0.0",
            "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
            "Removes and returns the members with the lowest scores.",
            "key [count:integer]",
        ),
    CommandSpec::new("zpopmax", -2, zpopmax)
        .flags(FAST_WRITE)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RW_ACCESS_DELETE)
        .doc(
            "sorted-set",
            "5.0.0",
            "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
            "Removes and returns the members with the highest scores.",
            "key [count:integer]",
        ),
    CommandSpec::new("zmpop", -4, zmpop)
        .flags(Flags::WRITE)
        .acl(Acl::SORTEDSET)
        .keys(&[keynum(1, RW_ACCESS_DELETE)])
        .doc(
            "sorted-set",
            "7.0.0",
            "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
            "Pops members with the lowest or highest scores from the first non-empty sorted set among several keys.",
            "numkeys:integer key... where=(MIN|MAX) [COUNT count:integer]",
        ),
    BZPOPMIN.flags(FAST_WRITE.union(Flags::BLOCKING).union(Flags::NOSCRIPT)).until("7.2.0"),
    BZPOPMIN.from("7.2.0"),
    BZPOPMAX.flags(FAST_WRITE.union(Flags::BLOCKING).union(Flags::NOSCRIPT)).until("7.2.0"),
    BZPOPMAX.from("7.2.0"),
    CommandSpec::new("bzmpop", -5, bzmpop)
        .flags(Flags::WRITE.union(Flags::BLOCKING))
        .acl(Acl::SORTEDSET)
        .keys(&[keynum(2, RW_ACCESS_DELETE)])
        .doc(
            "sorted-set",
            "7.0.0",
            "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
            "ZMPOP that waits for a non-empty sorted set when none of the keys has members.",
            "timeout:double numkeys:integer key... where=(MIN|MAX) [COUNT count:integer]",
        ),
    CommandSpec::new("zunion", -3, zunion)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(MANY_RO)
        .doc(
            "sorted-set",
            "6.2.0",
            "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
            "Returns the union of sorted sets (and sets), combining scores.",
            "numkeys:integer key... [WEIGHTS weight:integer...] [AGGREGATE aggregate=(SUM|MIN|MAX)] [WITHSCORES]",
        ),
    CommandSpec::new("zinter", -3, zinter)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(MANY_RO)
        .doc(
            "sorted-set",
            "6.2.0",
            "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
            "Returns the intersection of sorted sets (and sets), combining scores.",
            "numkeys:integer key... [WEIGHTS weight:integer...] [AGGREGATE aggregate=(SUM|MIN|MAX)] [WITHSCORES]",
        ),
    CommandSpec::new("zdiff", -3, zdiff)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(MANY_RO)
        .doc(
            "sorted-set",
            "6.2.0",
            "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
            "Returns the members of the first sorted set that are in none of the others.",
            "numkeys:integer key... [WITHSCORES]",
        ),
    CommandSpec::new("zunionstore", -4, zunionstore)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::SORTEDSET)
        .keys(STORE_FROM_MANY)
        .doc(
            "sorted-set",
            "2.0.0",
            "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
            "Stores the union of sorted sets (and sets) under a key.",
            "destination:key numkeys:integer key... [WEIGHTS weight:integer...] [AGGREGATE aggregate=(SUM|MIN|MAX)]",
        ),
    CommandSpec::new("zinterstore", -4, zinterstore)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::SORTEDSET)
        .keys(STORE_FROM_MANY)
        .doc(
            "sorted-set",
            "2.0.0",
            "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
            "Stores the intersection of sorted sets (and sets) under a key.",
            "destination:key numkeys:integer key... [WEIGHTS weight:integer...] [AGGREGATE aggregate=(SUM|MIN|MAX)]",
        ),
    CommandSpec::new("zdiffstore", -4, zdiffstore)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::SORTEDSET)
        .keys(STORE_FROM_MANY)
        .doc(
            "sorted-set",
            "6.2.0",
            "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
            "Stores the difference of sorted sets under a key.",
            "destination:key numkeys:integer key...",
        ),
    CommandSpec::new("zintercard", -3, zintercard)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(MANY_RO)
        .doc(
            "sorted-set",
            "7.0.0",
            "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
            "Counts the members of the intersection of sorted sets, optionally stopping at a limit.",
            "numkeys:integer key... [LIMIT limit:integer]",
        ),
    CommandSpec::new("zrandmember", -2, zrandmember)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .tips(NONDETERMINISTIC)
        .doc(
            "sorted-set",
            "6.2.0",
            "O(N) where N is the number of members returned",
            "Returns random members of a sorted set, distinct for a positive count, possibly repeated for a negative one.",
            "key [options=(count:integer [WITHSCORES])]",
        ),
    CommandSpec::new("zscan", -3, zscan)
        .flags(Flags::READONLY)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .tips(NONDETERMINISTIC)
        .doc(
            "sorted-set",
            "2.8.0",
            "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
            "Iterates over the members and scores of a sorted set.",
            "key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]",
        ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_as_redis_reads_them() {
        assert_eq!(parse_double(b"1.5"), Some(1.5));
        assert_eq!(parse_double(b"0x10"), Some(16.0));
        assert_eq!(parse_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(b"Infinity"), Some(f64::INFINITY));
        assert_eq!(parse_double(b"5e-324"), Some(5e-324), "denormals are fine");
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"\t1",
            b"1\x00",
            b"nan",
            b"1e400",
            b"1e-400",
            b"abc",
        ] {
            assert_eq!(
                parse_double(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // Range bounds: laxer.
        assert_eq!(score_bound(b""), Some((0.0, false)));
        assert_eq!(score_bound(b"("), Some((0.0, true)));
        assert_eq!(score_bound(b" 1"), Some((1.0, false)));
        assert_eq!(score_bound(b"1\x00junk"), Some((1.0, false)));
        assert_eq!(score_bound(b"(1e400"), Some((f64::INFINITY, true)));
        assert_eq!(score_bound(b"1 "), None);
        assert_eq!(score_bound(b"(nan"), None);
        let long = [b'1'; 300];
        assert_eq!(parse_double(&long), Some(1.111_111_111_111_111_1e299));
    }

    #[test]
    fn rank_indexes_are_clamped_like_redis() {
        assert_eq!(resolve_ranks(0, -1, 5), Some((0, 4)));
        assert_eq!(resolve_ranks(-100, 100, 5), Some((0, 4)));
        assert_eq!(resolve_ranks(3, 1, 5), None);
        assert_eq!(resolve_ranks(5, 10, 5), None);
        assert_eq!(resolve_ranks(i64::MIN, i64::MAX, 5), Some((0, 4)));
        assert_eq!(resolve_ranks(0, i64::MIN, 5), None);
        assert_eq!(resolve_ranks(0, 0, 0), None);
    }
}
