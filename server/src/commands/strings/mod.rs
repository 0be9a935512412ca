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
//!
//! The handlers are in `get_set` (GET, SET and their variants, MGET, MSET), `edits` (APPEND,
//! STRLEN, GETRANGE, SETRANGE), `counters` and `lcs`; the command table is at the end of this module.

mod counters;
mod edits;
mod get_set;
mod lcs;

use bytes::Bytes;
use embedis_protocol::Writer;
use std::ops::Deref;

use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};

use counters::{decr, decrby, incr, incrby, incrbyfloat};
use edits::{append, getrange, setrange, strlen};
use get_set::{
    delex, delex_key_flags, digest, get, getdel, getex, getset, mget, mset, msetnx, psetex, set,
    setex, setnx, ConditionKind,
};
use lcs::lcs;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
