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

use crate::base::config::event_class::{GENERIC, ZSET};
use crate::model::keyspace::Access;
use bytes::Bytes;
use embedis_datatypes::glob;
use embedis_datatypes::set::SetValue;
use embedis_datatypes::zset::{
    AddFlags, AddOutcome, LexBound, LexRange, Limits, ScoreRange, ZSetValue,
};
use embedis_datatypes::SmallBytes;
use embedis_protocol::float::push_g17;
use embedis_protocol::number::parse_i64;
use embedis_protocol::Writer;
use rand::Rng;
use std::collections::HashMap;

use crate::base::cstr::{c_str, word_is};
use crate::base::error::{CmdResult, Error};
use crate::base::value::{Value, ValueType};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, Begin, Find, KeySpec};
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::blocking::parse_timeout_seconds;

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
    CommandSpec::new("zrank", 3, zrank)
        .flags(READ_FAST)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "2.0.0",
            "O(log(N))",
            "Returns a member's position counting from the lowest score.",
            "key member",
        ),
    CommandSpec::new("zrevrank", 3, zrevrank)
        .flags(READ_FAST)
        .acl(Acl::SORTEDSET)
        .keys(ONE_RO_ACCESS)
        .doc(
            "sorted-set",
            "2.0.0",
            "O(log(N))",
            "Returns a member's position counting from the highest score.",
            "key member",
        ),
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
    CommandSpec::new("bzpopmin", -3, bzpopmin)
        .flags(FAST_WRITE.union(Flags::NOSCRIPT).union(Flags::BLOCKING))
        .acl(Acl::SORTEDSET)
        .keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .doc(
            "sorted-set",
            "5.0.0",
            "O(log(N)) with N being the number of elements in the sorted set.",
            "Pops the member with the lowest score from the first non-empty sorted set, waiting for one if none has any.",
            "key... timeout:double",
        ),
    CommandSpec::new("bzpopmax", -3, bzpopmax)
        .flags(FAST_WRITE.union(Flags::NOSCRIPT).union(Flags::BLOCKING))
        .acl(Acl::SORTEDSET)
        .keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .doc(
            "sorted-set",
            "5.0.0",
            "O(log(N)) with N being the number of elements in the sorted set.",
            "Pops the member with the highest score from the first non-empty sorted set, waiting for one if none has any.",
            "key... timeout:double",
        ),
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

/// Writes scores without allocating for each: `%.17g` into a reused buffer.
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
        push_g17(&mut self.text, score);
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
        ctx.ks.delete(db, key, ctx.now_ms);
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

// ---------------------------------------------------------------------------------------------
// ZADD, ZINCRBY, ZREM, lookups
// ---------------------------------------------------------------------------------------------

fn zadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut flags = AddFlags::default();
    let mut ch = false;
    let mut at = 2;
    while at < ctx.argc() {
        let word = ctx.arg(at);
        if word_is(word, "nx") {
            flags.nx = true;
        } else if word_is(word, "xx") {
            flags.xx = true;
        } else if word_is(word, "ch") {
            ch = true;
        } else if word_is(word, "incr") {
            flags.incr = true;
        } else if word_is(word, "gt") {
            flags.gt = true;
        } else if word_is(word, "lt") {
            flags.lt = true;
        } else {
            break;
        }
        at += 1;
    }
    zadd_generic(ctx, at, flags, ch)
}

fn zincrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    zadd_generic(ctx, 2, flags, false)
}

/// ZADD from the first score at `at`, with its options parsed.
fn zadd_generic(ctx: &mut Ctx<'_>, at: usize, flags: AddFlags, ch: bool) -> CmdResult {
    let pairs = ctx.argc() - at;
    if pairs & 1 != 0 || pairs == 0 {
        return Err(Error::Syntax);
    }
    let pairs = pairs / 2;
    if flags.nx && flags.xx {
        return Err(Error::msg(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Err(Error::msg(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if flags.incr && pairs > 1 {
        return Err(Error::msg(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    // Every score is checked before the key is looked at.
    let mut single = [0.0f64; 1];
    let mut many = Vec::new();
    let scores: &mut [f64] = if pairs == 1 {
        &mut single
    } else {
        many.resize(pairs, 0.0);
        &mut many
    };
    for (i, score) in scores.iter_mut().enumerate() {
        *score = score_arg(ctx.arg(at + 2 * i))?;
    }
    let limits = limits(ctx);
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let args: &[Bytes] = ctx.args;
    let mut created = None;
    let set = match ctx.ks.write(db, key, now) {
        Some(value) => zset_of(value)?,
        None => {
            if flags.xx {
                // Nothing to update and nothing may be added.
                return reply_zadd(ctx, flags, 0, None);
            }
            created.insert(ZSetValue::new())
        }
    };
    let (mut added, mut updated) = (0i64, 0i64);
    let mut last = None;
    for (i, &score) in scores.iter().enumerate() {
        let member: &[u8] = &args[at + 2 * i + 1];
        match set.add(member, score, flags, &limits) {
            AddOutcome::Added(s) => {
                added += 1;
                last = Some(s);
            }
            AddOutcome::Updated(s) => {
                updated += 1;
                last = Some(s);
            }
            AddOutcome::Unchanged(s) => last = Some(s),
            AddOutcome::Skipped => {}
            AddOutcome::NotANumber => {
                // Only INCR gets here, with one pair: nothing was changed.
                return Err(Error::msg("ERR resulting score is not a number (NaN)"));
            }
        }
    }
    if let Some(set) = created {
        ctx.ks.add(db, key, Value::ZSet(set), None, now);
        ctx.ks.dirty += ((added + updated) as u64).saturating_sub(1);
    } else {
        ctx.ks.dirty += (added + updated) as u64;
    }
    // A new key's event before the reply, `zadd` after it, as in Redis.
    ctx.publish_events();
    reply_zadd(ctx, flags, if ch { added + updated } else { added }, last)?;
    if added + updated > 0 {
        ctx.notify(ZSET, if flags.incr { "zincr" } else { "zadd" }, key);
    }
    Ok(())
}

fn reply_zadd(ctx: &mut Ctx<'_>, flags: AddFlags, count: i64, score: Option<f64>) -> CmdResult {
    if flags.incr {
        match score {
            Some(s) => ScoreWriter::new().write(&mut ctx.out, s),
            None => ctx.out.null(),
        }
    } else {
        ctx.out.integer(count);
    }
    Ok(())
}

fn zrem(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let args: &[Bytes] = ctx.args;
    let Some(value) = ctx.ks.write(db, key, now) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let set = zset_of(value)?;
    let mut removed = 0;
    for member in &args[2..] {
        if set.remove(member) {
            removed += 1;
            if set.is_empty() {
                break;
            }
        }
    }
    let empty = set.is_empty();
    ctx.ks.dirty += removed as u64;
    if removed > 0 {
        ctx.notify(ZSET, "zrem", key);
    }
    delete_if_empty(ctx, key, empty);
    ctx.out.integer(removed);
    Ok(())
}

fn zscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let member = ctx.arg(2);
    let score = read_zset(ctx, ctx.arg(1))?.and_then(|z| z.score(member));
    match score {
        Some(s) => ScoreWriter::new().write(&mut ctx.out, s),
        None => ctx.out.null(),
    }
    Ok(())
}

fn zmscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let args: &[Bytes] = ctx.args;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let set = match ctx.ks.read(db, &args[1], now) {
        None => None,
        Some(value) => Some(&*zset_of(value)?),
    };
    ctx.out.array(args.len() - 2);
    let mut scores = ScoreWriter::new();
    for member in &args[2..] {
        match set.and_then(|z| z.score(member)) {
            Some(s) => scores.write(&mut ctx.out, s),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

fn zcard(ctx: &mut Ctx<'_>) -> CmdResult {
    let len = read_zset(ctx, ctx.arg(1))?.map_or(0, |z| z.len());
    ctx.out.integer(len as i64);
    Ok(())
}

fn zcount(ctx: &mut Ctx<'_>) -> CmdResult {
    let range = score_range(ctx.arg(2), ctx.arg(3))?;
    let count = read_zset(ctx, ctx.arg(1))?.map_or(0, |z| z.count_in_scores(&range));
    ctx.out.integer(count as i64);
    Ok(())
}

fn zlexcount(ctx: &mut Ctx<'_>) -> CmdResult {
    let range = lex_range(ctx.arg(2), ctx.arg(3))?;
    let count = read_zset(ctx, ctx.arg(1))?.map_or(0, |z| z.count_in_lex(&range));
    ctx.out.integer(count as i64);
    Ok(())
}

fn zrank(ctx: &mut Ctx<'_>) -> CmdResult {
    rank_generic(ctx, false)
}

fn zrevrank(ctx: &mut Ctx<'_>) -> CmdResult {
    rank_generic(ctx, true)
}

fn rank_generic(ctx: &mut Ctx<'_>, reverse: bool) -> CmdResult {
    let member = ctx.arg(2);
    match read_zset(ctx, ctx.arg(1))?.and_then(|z| z.rank(member, reverse)) {
        Some(rank) => ctx.out.integer(rank as i64),
        None => ctx.out.null(),
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The range family
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RangeBy {
    Rank,
    Score,
    Lex,
}

/// What a range command selected, parsed.
enum Selection<'a> {
    Ranks(i64, i64),
    Scores(ScoreRange),
    Lex(LexRange<'a>),
}

/// Redis's `zrangeGenericCommand`: the source key is at `key_at`, then min and max, then the
/// options. `by` and `reverse` are fixed by the older commands (ZRANGEBYSCORE, ZREVRANGE…) and
/// chosen by options for ZRANGE and ZRANGESTORE (`None`).
fn range_generic(
    ctx: &mut Ctx<'_>,
    key_at: usize,
    dst: Option<&[u8]>,
    by: Option<RangeBy>,
    reverse: Option<bool>,
) -> CmdResult {
    let store = dst.is_some();
    let (mut by_opt, mut rev_opt) = (by, reverse);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut i = key_at + 3;
    while i < ctx.argc() {
        let left = ctx.argc() - i - 1;
        let word = ctx.arg(i);
        if !store && word_is(word, "withscores") {
            withscores = true;
        } else if word_is(word, "limit") && left >= 2 {
            offset = ctx.int_arg(i + 1)?;
            limit = ctx.int_arg(i + 2)?;
            i += 2;
        } else if rev_opt.is_none() && word_is(word, "rev") {
            rev_opt = Some(true);
        } else if by_opt.is_none() && word_is(word, "bylex") {
            by_opt = Some(RangeBy::Lex);
        } else if by_opt.is_none() && word_is(word, "byscore") {
            by_opt = Some(RangeBy::Score);
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    let by = by_opt.unwrap_or(RangeBy::Rank);
    let reverse = rev_opt.unwrap_or(false);
    if limit != -1 && by == RangeBy::Rank {
        return Err(Error::msg(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && by == RangeBy::Lex {
        return Err(Error::msg(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut min_at, mut max_at) = (key_at + 1, key_at + 2);
    if reverse && by != RangeBy::Rank {
        std::mem::swap(&mut min_at, &mut max_at);
    }
    let args: &[Bytes] = ctx.args;
    let selection = match by {
        RangeBy::Rank => Selection::Ranks(ctx.int_arg(min_at)?, ctx.int_arg(max_at)?),
        RangeBy::Score => Selection::Scores(score_range(&args[min_at], &args[max_at])?),
        RangeBy::Lex => Selection::Lex(lex_range(&args[min_at], &args[max_at])?),
    };
    let key: &[u8] = &args[key_at];
    let limits = limits(ctx);
    let (db, now) = (ctx.db(), ctx.now_ms);
    let set: &ZSetValue = match ctx.ks.read(db, key, now) {
        Some(value) => zset_of(value)?,
        None => {
            match dst {
                Some(dst) => store_result(ctx, dst, ZSetValue::new(), "zrangestore"),
                None => ctx.out.array(0),
            }
            return Ok(());
        }
    };
    let mut items: Vec<(&[u8], f64)> = Vec::new();
    match selection {
        Selection::Ranks(start, end) => {
            if let Some((start, end)) = resolve_ranks(start, end, set.len()) {
                items.reserve(end - start + 1);
                set.for_each_in_ranks(start, end, reverse, |m, s| items.push((m, s)));
            }
        }
        Selection::Scores(range) => {
            set.for_each_in_scores(&range, reverse, offset, limit, |m, s| items.push((m, s)))
        }
        Selection::Lex(range) => {
            set.for_each_in_lex(&range, reverse, offset, limit, |m, s| items.push((m, s)))
        }
    }
    match dst {
        Some(dst) => {
            if reverse {
                items.reverse();
            }
            let built = ZSetValue::from_sorted(&items, &limits);
            drop(items);
            store_result(ctx, dst, built, "zrangestore");
        }
        None => reply_elements(&mut ctx.out, &items, withscores, false),
    }
    Ok(())
}

fn zrange(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, None, None)
}

fn zrangestore(ctx: &mut Ctx<'_>) -> CmdResult {
    let dst = ctx.arg(1);
    range_generic(ctx, 2, Some(dst), None, None)
}

fn zrangebyscore(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, Some(RangeBy::Score), Some(false))
}

fn zrevrangebyscore(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, Some(RangeBy::Score), Some(true))
}

fn zrangebylex(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, Some(RangeBy::Lex), Some(false))
}

fn zrevrangebylex(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, Some(RangeBy::Lex), Some(true))
}

fn zrevrange(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, 1, None, Some(RangeBy::Rank), Some(true))
}

// ---------------------------------------------------------------------------------------------
// ZREMRANGEBY*
// ---------------------------------------------------------------------------------------------

fn zremrangebyrank(ctx: &mut Ctx<'_>) -> CmdResult {
    let (start, end) = (ctx.int_arg(2)?, ctx.int_arg(3)?);
    remrange_generic(ctx, "zremrangebyrank", |set| {
        match resolve_ranks(start, end, set.len()) {
            Some((start, end)) => set.remove_ranks(start, end),
            None => 0,
        }
    })
}

fn zremrangebyscore(ctx: &mut Ctx<'_>) -> CmdResult {
    let range = score_range(ctx.arg(2), ctx.arg(3))?;
    remrange_generic(ctx, "zremrangebyscore", |set| set.remove_scores(&range))
}

fn zremrangebylex(ctx: &mut Ctx<'_>) -> CmdResult {
    let args: &[Bytes] = ctx.args;
    let range = lex_range(&args[2], &args[3])?;
    remrange_generic(ctx, "zremrangebylex", |set| set.remove_lex(&range))
}

fn remrange_generic(
    ctx: &mut Ctx<'_>,
    event: &'static str,
    remove: impl FnOnce(&mut ZSetValue) -> usize,
) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let Some(value) = ctx.ks.write(db, key, now) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let set = zset_of(value)?;
    let removed = remove(set);
    let empty = set.is_empty();
    ctx.ks.dirty += removed as u64;
    if removed > 0 {
        ctx.notify(ZSET, event, key);
    }
    delete_if_empty(ctx, key, empty);
    ctx.out.integer(removed as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Pops
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Min,
    Max,
}

/// How a pop replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PopReply {
    /// ZPOPMIN without COUNT: `[member, score]`, or `[]`.
    Flat,
    /// ZPOPMIN with COUNT: flat in RESP2, pairs in RESP3.
    Counted,
    /// BZPOPMIN: `[key, member, score]`.
    WithKey,
    /// ZMPOP, BZMPOP: `[key, [[member, score]…]]`.
    Nested,
}

/// Pops up to `count` elements from the set under `key` (which must hold a non-empty sorted
/// set) and replies; deletes the key when emptied.
fn pop_from(ctx: &mut Ctx<'_>, key: &[u8], end: End, count: usize, reply: PopReply) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let Some(Value::ZSet(set)) = ctx.ks.write(db, key, now) else {
        unreachable!("checked by the caller");
    };
    let len = set.len();
    let n = count.min(len);
    let out = &mut ctx.out;
    let mut scores = ScoreWriter::new();
    let pairs = match reply {
        PopReply::Flat => false,
        PopReply::Counted => out.is_resp3(),
        PopReply::WithKey => false,
        PopReply::Nested => true,
    };
    match reply {
        PopReply::WithKey => {
            out.array(3);
            out.bulk(key);
        }
        PopReply::Nested => {
            out.array(2);
            out.bulk(key);
            out.array(n);
        }
        PopReply::Flat | PopReply::Counted => {
            out.array(if pairs { n } else { 2 * n });
        }
    }
    // Redis sends the event after the reply's header, before the first element.
    let event = match end {
        End::Min => "zpopmin",
        End::Max => "zpopmax",
    };
    ctx.notify(ZSET, event, key);
    let Some(Value::ZSet(set)) = ctx
        .ks
        .lookup(db, key, now, Access::NoTouch)
        .map(|o| &mut o.value)
    else {
        unreachable!("looked up above");
    };
    let out = &mut ctx.out;
    set.for_each_in_ranks(0, n - 1, end == End::Max, |m, s| {
        if pairs {
            out.array(2);
        }
        out.bulk(m);
        scores.write(out, s);
    });
    match end {
        End::Min => set.remove_ranks(0, n - 1),
        End::Max => set.remove_ranks(len - n, len - 1),
    };
    let empty = set.is_empty();
    ctx.ks.dirty += n as u64;
    // The blocking and multi-key pops propagate as ZPOPMIN / ZPOPMAX (with the number popped
    // for ZMPOP and BZMPOP).
    if !matches!(reply, PopReply::Flat | PopReply::Counted) {
        ctx.propagate_as(|| {
            let verb = Bytes::from_static(match end {
                End::Min => b"ZPOPMIN",
                End::Max => b"ZPOPMAX",
            });
            let mut v = vec![verb, Bytes::copy_from_slice(key)];
            if reply == PopReply::Nested {
                v.push(crate::model::write_stream::int_arg(n as i64));
            }
            v
        });
    }
    delete_if_empty(ctx, key, empty);
}

fn zpopmin(ctx: &mut Ctx<'_>) -> CmdResult {
    zpop_generic(ctx, End::Min)
}

fn zpopmax(ctx: &mut Ctx<'_>) -> CmdResult {
    zpop_generic(ctx, End::Max)
}

fn zpop_generic(ctx: &mut Ctx<'_>, end: End) -> CmdResult {
    if ctx.argc() > 3 {
        return Err(Error::Syntax);
    }
    let mut count = 1;
    let mut reply = PopReply::Flat;
    if ctx.argc() == 3 {
        count = positive_arg(ctx.arg(2), "ERR value is out of range, must be positive")?;
        reply = PopReply::Counted;
    }
    let key = ctx.arg(1);
    // The type is checked before a count of 0 answers `[]`: `ZPOPMIN str 0` is WRONGTYPE.
    if read_for_pop(ctx, key)?.is_none() || count == 0 {
        ctx.out.array(0);
        return Ok(());
    }
    pop_from(ctx, key, end, count as usize, reply);
    Ok(())
}

/// Looks a key up for writing: its length if it holds a sorted set, `None` if missing,
/// WRONGTYPE otherwise.
fn read_for_pop(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult<Option<usize>> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.write(db, key, now) {
        None => Ok(None),
        Some(value) => Ok(Some(zset_of(value)?.len())),
    }
}

/// ZMPOP / BZMPOP arguments.
struct MultiPop<'a> {
    keys: &'a [Bytes],
    end: End,
    count: usize,
}

fn parse_mpop<'a>(ctx: &Ctx<'a>, numkeys_at: usize) -> CmdResult<MultiPop<'a>> {
    let numkeys = count_arg(ctx.arg(numkeys_at), "ERR numkeys should be greater than 0")?;
    let where_at = (numkeys_at as i64)
        .saturating_add(numkeys)
        .saturating_add(1);
    if where_at >= ctx.argc() as i64 {
        return Err(Error::Syntax);
    }
    let where_at = where_at as usize;
    let end = if word_is(ctx.arg(where_at), "min") {
        End::Min
    } else if word_is(ctx.arg(where_at), "max") {
        End::Max
    } else {
        return Err(Error::Syntax);
    };
    let mut count = None;
    let mut i = where_at + 1;
    while i < ctx.argc() {
        let more = ctx.argc() - 1 - i;
        if count.is_none() && word_is(ctx.arg(i), "count") && more > 0 {
            i += 1;
            count = Some(count_arg(ctx.arg(i), "ERR count should be greater than 0")?);
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    let args: &'a [Bytes] = ctx.args;
    Ok(MultiPop {
        keys: &args[numkeys_at + 1..where_at],
        end,
        count: count.unwrap_or(1) as usize,
    })
}

fn zmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let mpop = parse_mpop(ctx, 1)?;
    if !pop_first_of(ctx, mpop.keys, mpop.end, mpop.count, PopReply::Nested)? {
        ctx.out.null_array();
    }
    Ok(())
}

/// Pops from the first key holding a non-empty sorted set; false if there is none. A key of
/// another type on the way is WRONGTYPE.
fn pop_first_of(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    end: End,
    count: usize,
    reply: PopReply,
) -> CmdResult<bool> {
    for key in keys {
        match read_for_pop(ctx, key)? {
            Some(len) if len > 0 => {
                pop_from(ctx, key, end, count, reply);
                return Ok(true);
            }
            _ => {}
        }
    }
    Ok(false)
}

fn bzpopmin(ctx: &mut Ctx<'_>) -> CmdResult {
    bzpop_generic(ctx, End::Min)
}

fn bzpopmax(ctx: &mut Ctx<'_>) -> CmdResult {
    bzpop_generic(ctx, End::Max)
}

fn bzpop_generic(ctx: &mut Ctx<'_>, end: End) -> CmdResult {
    let last = ctx.argc() - 1;
    let deadline = parse_timeout_seconds(ctx.arg(last), ctx.now_ms)?;
    let args: &[Bytes] = ctx.args;
    let keys = &args[1..last];
    if serve_blocking(ctx, keys, end, 1, PopReply::WithKey)? {
        return Ok(());
    }
    ctx.block_on_keys(keys, ValueType::ZSet, deadline);
    Ok(())
}

fn bzmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let mpop = parse_mpop(ctx, 2)?;
    let deadline = parse_timeout_seconds(ctx.arg(1), ctx.now_ms)?;
    if serve_blocking(ctx, mpop.keys, mpop.end, mpop.count, PopReply::Nested)? {
        return Ok(());
    }
    ctx.block_on_keys(mpop.keys, ValueType::ZSet, deadline);
    Ok(())
}

/// Serves a blocking pop now if it can: from the first non-empty key on a first run, from the
/// key that woke it on a re-run (as Redis 7.0 does).
fn serve_blocking(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    end: End,
    count: usize,
    reply: PopReply,
) -> CmdResult<bool> {
    match ctx.woken_by {
        Some(key) => match read_for_pop(ctx, key)? {
            Some(len) if len > 0 => {
                pop_from(ctx, key, end, count, reply);
                Ok(true)
            }
            _ => Ok(false),
        },
        None => pop_first_of(ctx, keys, end, count, reply),
    }
}

// ---------------------------------------------------------------------------------------------
// ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, acc: &mut f64, value: f64) {
        match self {
            Aggregate::Sum => {
                *acc += value;
                // inf + -inf: Redis makes it 0.
                if acc.is_nan() {
                    *acc = 0.0;
                }
            }
            Aggregate::Min => {
                if value < *acc {
                    *acc = value;
                }
            }
            Aggregate::Max => {
                if value > *acc {
                    *acc = value;
                }
            }
        }
    }
}

/// An input of the set algebra: a sorted set, a plain set (every member scores 1), or nothing.
#[derive(Clone, Copy)]
enum Source<'a> {
    Missing,
    Sorted(&'a ZSetValue),
    Plain(&'a SetValue),
}

impl<'a> Source<'a> {
    fn len(&self) -> usize {
        match self {
            Source::Missing => 0,
            Source::Sorted(z) => z.len(),
            Source::Plain(s) => s.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Source::Missing => None,
            Source::Sorted(z) => z.score(member),
            Source::Plain(SetValue::Ints(ints)) => {
                parse_i64(member).filter(|&n| ints.contains(n)).map(|_| 1.0)
            }
            Source::Plain(SetValue::Table(table)) => table.contains_key(member).then_some(1.0),
        }
    }

    /// Every element (a plain set's integers formatted as text).
    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Source::Missing => {}
            Source::Sorted(z) => z.for_each(f),
            Source::Plain(SetValue::Ints(ints)) => {
                let mut digits = itoa::Buffer::new();
                for n in ints.iter() {
                    f(digits.format(n).as_bytes(), 1.0);
                }
            }
            Source::Plain(SetValue::Table(table)) => {
                for (member, _) in table.iter() {
                    f(member, 1.0);
                }
            }
        }
    }
}

fn zunion(ctx: &mut Ctx<'_>) -> CmdResult {
    setop_generic(ctx, 1, None, SetOp::Union, false)
}

fn zinter(ctx: &mut Ctx<'_>) -> CmdResult {
    setop_generic(ctx, 1, None, SetOp::Inter, false)
}

fn zdiff(ctx: &mut Ctx<'_>) -> CmdResult {
    setop_generic(ctx, 1, None, SetOp::Diff, false)
}

fn zunionstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let dst = ctx.arg(1);
    setop_generic(ctx, 2, Some(dst), SetOp::Union, false)
}

fn zinterstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let dst = ctx.arg(1);
    setop_generic(ctx, 2, Some(dst), SetOp::Inter, false)
}

fn zdiffstore(ctx: &mut Ctx<'_>) -> CmdResult {
    let dst = ctx.arg(1);
    setop_generic(ctx, 2, Some(dst), SetOp::Diff, false)
}

fn zintercard(ctx: &mut Ctx<'_>) -> CmdResult {
    setop_generic(ctx, 1, None, SetOp::Inter, true)
}

/// Redis's `zunionInterDiffGenericCommand`.
fn setop_generic(
    ctx: &mut Ctx<'_>,
    numkeys_at: usize,
    dst: Option<&[u8]>,
    op: SetOp,
    cardinality_only: bool,
) -> CmdResult {
    let numkeys = ctx.int_arg(numkeys_at)?;
    if numkeys < 1 {
        return Err(Error::owned(format!(
            "ERR at least 1 input key is needed for '{}' command",
            ctx.cmd.full_name
        )));
    }
    if numkeys > (ctx.argc() - numkeys_at - 1) as i64 {
        return Err(Error::Syntax);
    }
    let numkeys = numkeys as usize;
    let args: &[Bytes] = ctx.args;
    let keys = &args[numkeys_at + 1..numkeys_at + 1 + numkeys];
    let (db, now) = (ctx.db(), ctx.now_ms);
    // The keys are looked up (and type-checked) before the options are read, as in Redis. These
    // lookups count hits and misses and expire keys; the values are borrowed again below.
    for key in keys {
        if let Some(value) = ctx.ks.read(db, key, now) {
            if !matches!(value, Value::ZSet(_) | Value::Set(_)) {
                return Err(Error::WrongType);
            }
        }
    }
    let mut weights = vec![1.0f64; numkeys];
    let mut aggregate = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0i64;
    let mut i = numkeys_at + 1 + numkeys;
    while i < ctx.argc() {
        let remaining = ctx.argc() - i;
        let word = ctx.arg(i);
        if op != SetOp::Diff && !cardinality_only && remaining > numkeys && word_is(word, "weights")
        {
            for (k, weight) in weights.iter_mut().enumerate() {
                *weight = parse_double(ctx.arg(i + 1 + k))
                    .ok_or(Error::msg("ERR weight value is not a float"))?;
            }
            i += 1 + numkeys;
        } else if op != SetOp::Diff
            && !cardinality_only
            && remaining >= 2
            && word_is(word, "aggregate")
        {
            let how = ctx.arg(i + 1);
            aggregate = if word_is(how, "sum") {
                Aggregate::Sum
            } else if word_is(how, "min") {
                Aggregate::Min
            } else if word_is(how, "max") {
                Aggregate::Max
            } else {
                return Err(Error::Syntax);
            };
            i += 2;
        } else if dst.is_none() && !cardinality_only && word_is(word, "withscores") {
            withscores = true;
            i += 1;
        } else if cardinality_only && remaining >= 2 && word_is(word, "limit") {
            limit = positive_arg(ctx.arg(i + 1), "ERR LIMIT can't be negative")?;
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let limits = limits(ctx);
    let dbref = &ctx.ks.dbs[db];
    let mut sources: Vec<(Source<'_>, f64)> = keys
        .iter()
        .zip(&weights)
        .map(|(key, &w)| {
            let source = match dbref.main.get(&key[..]).map(|o| &o.value) {
                Some(Value::ZSet(z)) => Source::Sorted(z),
                Some(Value::Set(s)) => Source::Plain(s),
                _ => Source::Missing,
            };
            (source, w)
        })
        .collect();
    let mut result: Vec<(SmallBytes, f64)> = Vec::new();
    match op {
        SetOp::Inter => {
            // Smallest first (a stable sort, as glibc's qsort is for small arrays): it drives the
            // loop and fixes the order in which scores are combined.
            sources.sort_by_key(|(s, _)| s.len());
            let (first, first_weight) = sources[0];
            let rest = &sources[1..];
            let mut count = 0i64;
            let mut done = false;
            first.for_each(|member, score| {
                if done {
                    return;
                }
                let mut acc = weighted(score, first_weight);
                for (other, weight) in rest {
                    // Only the first input's product has NaN (inf × 0) made 0, as in Redis; the
                    // others' NaN meets the aggregate: SUM makes it 0, MIN/MAX keep the other side.
                    match other.score(member) {
                        Some(s) => aggregate.apply(&mut acc, s * *weight),
                        None => return,
                    }
                }
                if cardinality_only {
                    count += 1;
                    done = limit != 0 && count >= limit;
                } else {
                    result.push((SmallBytes::new(member), acc));
                }
            });
            if cardinality_only {
                ctx.out.integer(count);
                return Ok(());
            }
        }
        SetOp::Union => {
            sources.sort_by_key(|(s, _)| s.len());
            let mut at: HashMap<SmallBytes, usize, ahash::RandomState> = HashMap::default();
            for (source, weight) in &sources {
                source.for_each(|member, score| {
                    let value = weighted(score, *weight);
                    match at.get(member) {
                        Some(&i) => aggregate.apply(&mut result[i].1, value),
                        None => {
                            at.insert(SmallBytes::new(member), result.len());
                            result.push((SmallBytes::new(member), value));
                        }
                    }
                });
            }
        }
        SetOp::Diff => {
            let (first, _) = sources[0];
            let rest = &sources[1..];
            first.for_each(|member, score| {
                if rest.iter().all(|(other, _)| other.score(member).is_none()) {
                    result.push((SmallBytes::new(member), score));
                }
            });
        }
    }
    drop(sources);
    // The result in (score, member) order; members are distinct, -0 and 0 are equal scores.
    result.sort_unstable_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .expect("no NaN scores")
            .then_with(|| a.0.cmp(&b.0))
    });
    let refs: Vec<(&[u8], f64)> = result.iter().map(|(m, s)| (m.as_slice(), *s)).collect();
    match dst {
        Some(dst) => {
            let set = ZSetValue::from_sorted(&refs, &limits);
            let event = match op {
                SetOp::Union => "zunionstore",
                SetOp::Inter => "zinterstore",
                SetOp::Diff => "zdiffstore",
            };
            store_result(ctx, dst, set, event);
        }
        None => reply_elements(&mut ctx.out, &refs, withscores, false),
    }
    Ok(())
}

/// A weighted score; `inf * 0` is 0 in Redis.
fn weighted(score: f64, weight: f64) -> f64 {
    let v = score * weight;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

// ---------------------------------------------------------------------------------------------
// ZRANDMEMBER, ZSCAN
// ---------------------------------------------------------------------------------------------

fn zrandmember(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() < 3 {
        let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
        let Some(value) = ctx.ks.read(db, key, now) else {
            ctx.out.null();
            return Ok(());
        };
        let set: &ZSetValue = zset_of(value)?;
        match set.random_element(&mut ctx.server.rng) {
            Some((m, _)) => ctx.out.bulk(m),
            None => ctx.out.null(),
        }
        return Ok(());
    }
    let count = match parse_i64(ctx.arg(2)) {
        None => return Err(Error::NotInteger),
        Some(i64::MIN) => {
            return Err(Error::msg(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ))
        }
        Some(n) => n,
    };
    let mut withscores = false;
    if ctx.argc() > 4 || (ctx.argc() == 4 && !word_is(ctx.arg(3), "withscores")) {
        return Err(Error::Syntax);
    } else if ctx.argc() == 4 {
        withscores = true;
        if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
            return Err(Error::msg("ERR value is out of range"));
        }
    }
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let Some(value) = ctx.ks.read(db, key, now) else {
        ctx.out.array(0);
        return Ok(());
    };
    let set: &ZSetValue = zset_of(value)?;
    let rng = &mut ctx.server.rng;
    let out = &mut ctx.out;
    if count == 0 {
        out.array(0);
        return Ok(());
    }
    let size = set.len();
    let mut scores = ScoreWriter::new();
    let mut emit = |out: &mut Writer<'_>, m: &[u8], s: f64| {
        if withscores && out.is_resp3() {
            out.array(2);
        }
        out.bulk(m);
        if withscores {
            scores.write(out, s);
        }
    };
    let flat = |n: usize, out: &Writer<'_>| {
        if withscores && !out.is_resp3() {
            2 * n
        } else {
            n
        }
    };
    if count < 0 || count == 1 {
        // With repetition (or a single pick).
        let n = count.unsigned_abs() as usize;
        out.array(flat(n, out));
        for _ in 0..n {
            let (m, s) = set.random_element(rng).expect("not empty");
            emit(out, m, s);
        }
        return Ok(());
    }
    let n = count as usize;
    if n >= size {
        // The whole set, highest first (as Redis 7.0 answers).
        out.array(flat(size, out));
        set.for_each_in_ranks(0, size - 1, true, |m, s| emit(out, m, s));
        return Ok(());
    }
    // Distinct picks: a partial shuffle of the ranks when the sample is a large share of the
    // set, rejection of repeats otherwise.
    let ranks: Vec<usize> = if n * 3 > size {
        let mut all: Vec<usize> = (0..size).collect();
        for i in 0..n {
            let j = rng.gen_range(i..size);
            all.swap(i, j);
        }
        all.truncate(n);
        all
    } else {
        let mut seen = std::collections::HashSet::with_capacity(n);
        let mut picked = Vec::with_capacity(n);
        while picked.len() < n {
            let r = rng.gen_range(0..size);
            if seen.insert(r) {
                picked.push(r);
            }
        }
        picked
    };
    out.array(flat(n, out));
    for r in ranks {
        let (m, s) = set.by_rank(r).expect("in range");
        emit(out, m, s);
    }
    Ok(())
}

fn zscan(ctx: &mut Ctx<'_>) -> CmdResult {
    let cursor = crate::commands::common::parse_cursor(ctx.arg(2))?;
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let args: &[Bytes] = ctx.args;
    let Some(value) = ctx.ks.read(db, key, now) else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(());
    };
    let set = zset_of(value)?;
    let crate::commands::common::ScanOptions { count, pattern, .. } =
        crate::commands::common::parse_scan_options(args, 3, false)?;
    let count = count as u64;
    let mut found: Vec<(&[u8], f64)> = Vec::new();
    let set: &ZSetValue = set;
    let next = set.scan(cursor, count.min(usize::MAX as u64) as usize, |m, s| {
        found.push((m, s))
    });
    found.retain(|(m, _)| pattern.is_none_or(|p| glob::matches(p, m, false)));
    let out = &mut ctx.out;
    out.array(2);
    out.bulk(itoa::Buffer::new().format(next).as_bytes());
    out.array(found.len() * 2);
    let mut text = Vec::with_capacity(32);
    for (m, s) in found {
        out.bulk(m);
        text.clear();
        push_g17(&mut text, s);
        out.bulk(&text);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_harness::Harness;
    use crate::model::client::{ClientId, Peer};
    use bytes::BytesMut;
    use embedis_datatypes::Dict;

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

    #[test]
    fn blocking_pop_on_wrong_type() {
        let mut h = Harness::new();
        h.run_text("SET s x");
        assert_eq!(
            h.run_text("BZPOPMIN s 0"),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        );
    }

    /// Two more clients on the harness's engine, to block one and write with the other.
    fn client(h: &mut Harness, port: u16) -> ClientId {
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        let local = "127.0.0.1:6379".parse().unwrap();
        h.engine.connect(Peer::Tcp { addr, local }, -1).unwrap().id
    }

    fn run(h: &mut Harness, id: ClientId, line: &str) -> String {
        let args = line
            .split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        let mut out = BytesMut::new();
        h.engine.execute(id, args, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn pending(h: &mut Harness, id: ClientId) -> String {
        let client = h.engine.clients.get_mut(id).unwrap();
        String::from_utf8_lossy(&std::mem::take(&mut client.pending)).into_owned()
    }

    #[test]
    fn blocked_pops_are_served_in_order_from_the_written_key() {
        let mut h = Harness::new();
        let (a, b, c) = (client(&mut h, 1), client(&mut h, 2), client(&mut h, 3));
        assert_eq!(run(&mut h, a, "BZPOPMIN k1 k2 0"), "");
        assert_eq!(run(&mut h, c, "BZMPOP 0 1 k2 MAX COUNT 5"), "");
        assert_eq!(run(&mut h, b, "ZADD k2 1 x 2 y 3 z"), ":3\r\n");
        assert_eq!(
            pending(&mut h, a),
            "*3\r\n$2\r\nk2\r\n$1\r\nx\r\n$1\r\n1\r\n"
        );
        assert_eq!(
            pending(&mut h, c),
            "*2\r\n$2\r\nk2\r\n*2\r\n*2\r\n$1\r\nz\r\n$1\r\n3\r\n*2\r\n$1\r\ny\r\n$1\r\n2\r\n"
        );
        assert_eq!(run(&mut h, b, "EXISTS k2"), ":0\r\n", "emptied and deleted");
    }

    #[test]
    fn a_key_of_another_type_does_not_wake_and_timeouts_reply_null() {
        let mut h = Harness::new();
        let (a, b) = (client(&mut h, 1), client(&mut h, 2));
        assert_eq!(run(&mut h, a, "BZPOPMAX k 1"), "");
        assert_eq!(run(&mut h, b, "SET k s"), "+OK\r\n");
        assert_eq!(pending(&mut h, a), "", "still blocked");
        run(&mut h, b, "DEL k");
        run(&mut h, b, "ZADD k 1 a 2 b");
        assert_eq!(
            pending(&mut h, a),
            "*3\r\n$1\r\nk\r\n$1\r\nb\r\n$1\r\n2\r\n"
        );
        assert_eq!(run(&mut h, a, "BZPOPMIN nothing 0.5"), "");
        h.advance_ms(501);
        h.engine.process_timeouts();
        assert_eq!(pending(&mut h, a), "*-1\r\n");
    }

    #[test]
    fn plain_sets_are_inputs_with_score_one() {
        let mut h = Harness::new();
        let mut table: Dict<SmallBytes, ()> = Dict::new();
        for m in ["a", "b", "x"] {
            table.insert(SmallBytes::new(m.as_bytes()), ());
        }
        let now = h.now();
        h.engine.ks.add(
            0,
            b"set",
            Value::Set(SetValue::Table(Box::new(table))),
            None,
            now,
        );
        h.run_text("ZADD z 5 a 7 c");
        assert_eq!(
            h.run_text("ZUNION 2 z set WITHSCORES"),
            "*8\r\n$1\r\nb\r\n$1\r\n1\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n6\r\n$1\r\nc\r\n$1\r\n7\r\n"
        );
        assert_eq!(
            h.run_text("ZINTER 2 set z WEIGHTS 10 1 WITHSCORES"),
            "*2\r\n$1\r\na\r\n$2\r\n15\r\n"
        );
        assert_eq!(h.run_text("ZDIFF 2 set z"), "*2\r\n$1\r\nb\r\n$1\r\nx\r\n");
        assert_eq!(h.run_text("ZINTERCARD 2 set z"), ":1\r\n");
        assert_eq!(h.run_text("ZUNIONSTORE d 1 set"), ":3\r\n");
        assert_eq!(h.encoding("d"), "listpack");
        assert_eq!(
            h.run_text("ZRANGE set 0 -1"),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        );
    }

    #[test]
    fn zscan_of_a_skiplist_covers_the_set() {
        let mut h = Harness::new();
        for i in 0..300 {
            h.run_text(&format!("ZADD big {i} m{i}"));
        }
        assert_eq!(h.encoding("big"), "skiplist");
        let mut seen = std::collections::HashSet::new();
        let mut cursor = "0".to_string();
        let mut calls = 0;
        loop {
            let reply = h.run(&format!("ZSCAN big {cursor} COUNT 20"));
            let embedis_protocol::Value::Array(parts) = reply else {
                panic!()
            };
            cursor = String::from_utf8(crate::io::test_harness::bulk(&parts[0]).unwrap()).unwrap();
            let items = crate::io::test_harness::strings(&parts[1]);
            for pair in items.chunks(2) {
                let m = String::from_utf8(pair[0].clone()).unwrap();
                assert_eq!(format!("m{}", String::from_utf8_lossy(&pair[1])), m);
                seen.insert(m);
            }
            calls += 1;
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(seen.len(), 300);
        assert!(calls >= 15, "COUNT bounds each call");
    }
}
