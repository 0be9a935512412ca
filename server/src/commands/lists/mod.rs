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
//!
//! The handlers are in `push_pop`, `position`, `moves` and `blocking`; this module keeps the helpers
//! they share (`new_list` is SORT's too) and the command table at its end.

mod blocking;
mod moves;
mod position;
mod push_pop;

use bytes::Bytes;
use embedis_datatypes::quicklist::Quicklist;
use embedis_protocol::number::parse_i64;

use crate::base::compat::CompatVersion;
use crate::base::config::event_class::{GENERIC, LIST};
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, Begin, CommandSpec, Find, Flags, KeySpec};

use blocking::{blmove, blmpop, blpop, brpop, brpoplpush};
use moves::{lmove, rpoplpush};
use position::{lindex, linsert, llen, lpos, lrange, lrem, lset, ltrim};
use push_pop::{lmpop, lpop, lpush, lpushx, rpop, rpush, rpushx};

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

/// A new empty list shaped by the current `list-max-listpack-size`: from Redis 7.2 a listpack
/// until it grows past one node.
pub(crate) fn new_list(ctx: &Ctx<'_>) -> Quicklist {
    new_list_for(&ctx.server.config)
}

/// [`new_list`] for a configuration (the RDB loader's lists too).
pub(crate) fn new_list_for(config: &crate::base::config::Config) -> Quicklist {
    let limits = &config.encodings;
    let fill = limits.list_max_listpack_size;
    let list = Quicklist::with_options(
        fill.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
        limits.list_compress_depth.max(0) as usize,
    );
    if config.compat_version >= CompatVersion::V7_2 {
        list.with_listpack_encoding()
    } else {
        list
    }
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
        ctx.ks.delete_emptied(db, key, ctx.now_ms);
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
// The command table
// ---------------------------------------------------------------------------------------------

const RW_INSERT: u16 = flag::RW | flag::INSERT;

const RW_ACCESS_DELETE: u16 = flag::RW | flag::ACCESS | flag::DELETE;

const RO_ACCESS: u16 = flag::RO | flag::ACCESS;

const WRITE_DENYOOM_FAST: Flags = Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST);

const WRITE_DENYOOM: Flags = Flags::WRITE.union(Flags::DENYOOM);

const WRITE_FAST: Flags = Flags::WRITE.union(Flags::FAST);

const BLOCKING: Flags = Flags::WRITE.union(Flags::BLOCKING);

const BLOCKING_DENYOOM: Flags = BLOCKING.union(Flags::DENYOOM);

// BLPOP, BRPOP, BLMOVE and BRPOPLPUSH have one spec per span of versions: until Redis 7.2 they
// are `noscript`; from 7.2 scripts may run them, and they never block there (as inside MULTI).

const BLPOP: CommandSpec = CommandSpec::new("blpop", -3, blpop)
    .flags(BLOCKING)
    .acl(Acl::LIST)
    .keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
    .doc(
        "list",
        "2.0.0",
        "O(N) where N is the number of provided keys.",
        "Pops the head of the first non-empty list of several keys, waiting for one if they are all empty.",
        "key... timeout:double",
    );

const BRPOP: CommandSpec = CommandSpec::new("brpop", -3, brpop)
    .flags(BLOCKING)
    .acl(Acl::LIST)
    .keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
    .doc(
        "list",
        "2.0.0",
        "O(N) where N is the number of provided keys.",
        "Pops the tail of the first non-empty list of several keys, waiting for one if they are all empty.",
        "key... timeout:double",
    );

const BLMOVE: CommandSpec = CommandSpec::new("blmove", 6, blmove)
    .flags(BLOCKING_DENYOOM)
    .acl(Acl::LIST)
    .keys(MOVE_KEYS)
    .doc(
        "list",
        "6.2.0",
        "O(1)",
        "Moves an element from one list to another as LMOVE does, waiting for the source to have one.",
        "source:key destination:key wherefrom=(LEFT|RIGHT) whereto=(LEFT|RIGHT) timeout:double",
    );

const BRPOPLPUSH: CommandSpec = CommandSpec::new("brpoplpush", 4, brpoplpush)
    .flags(BLOCKING_DENYOOM)
    .acl(Acl::LIST)
    .keys(MOVE_KEYS)
    .doc(
        "list",
        "2.2.0",
        "O(1)",
        "Moves the tail of a list to the head of another as RPOPLPUSH does, waiting for the source to have one.",
        "source:key destination:key timeout:double",
    );

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
    BLPOP.flags(BLOCKING.union(Flags::NOSCRIPT)).until("7.2.0"),
    BLPOP.from("7.2.0"),
    BRPOP.flags(BLOCKING.union(Flags::NOSCRIPT)).until("7.2.0"),
    BRPOP.from("7.2.0"),
    BLMOVE.flags(BLOCKING_DENYOOM.union(Flags::NOSCRIPT)).until("7.2.0"),
    BLMOVE.from("7.2.0"),
    BRPOPLPUSH.flags(BLOCKING_DENYOOM.union(Flags::NOSCRIPT)).until("7.2.0"),
    BRPOPLPUSH.from("7.2.0"),
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
        // Redis 7.0's lists: quicklists from the first element (7.2's small listpacks are
        // compared with Redis 7.4.1 in tests/diff74/lists.txt).
        let mut h = Harness::as_version(CompatVersion::V7_0);
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
        let mut h = Harness::as_version(CompatVersion::V7_0);
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
}
