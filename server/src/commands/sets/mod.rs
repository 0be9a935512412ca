//! Set commands: SADD, SREM, SCARD, SISMEMBER, SMISMEMBER, SMEMBERS, SPOP, SRANDMEMBER, SMOVE,
//! SSCAN and the algebra — SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE, SDIFF,
//! SDIFFSTORE.
//!
//! The values are [`SetValue`]s (intset, listpack from Redis 7.2, or hashtable, with the
//! conversion rules of the Redis `compat-version` names: [`crate::base::config::Config::set_limits`]).
//! What the handlers add is Redis's observable behaviour, to the byte (7.2's differences noted):
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
//!   limit was ever converted. From 7.2 SADD and SMOVE size a new set for the members they
//!   bring, SINTERSTORE starts a listpack unless its smallest source is an intset and ends
//!   with an intset when every member is an integer, and SPOP and SRANDMEMBER with a count
//!   answer a listpack's members in its order.
//! - **Emptied sets are deleted**, and the *STORE commands overwrite a destination of any type
//!   (dropping its TTL) or delete it when the result is empty.
//!
//! SADD and SPOP are benchmarked against Redis: they take one write lookup, add or remove in
//! place, and allocate nothing per member beyond the table entry Redis would allocate too.
//!
//! The handlers are in `members` (the commands on one set) and `algebra` (SINTER, SUNION, SDIFF…);
//! this module keeps the helpers they share and the command table at its end.

mod algebra;
mod members;

use bytes::Bytes;
use embedis_datatypes::set::{Member, SetValue};
use embedis_protocol::Writer;

use crate::base::config::event_class::{GENERIC, SET};
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, Begin, Find};
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::{StoreIf, Ttl};

use algebra::{sdiff, sdiffstore, sinter, sintercard, sinterstore, sunion, sunionstore};
use members::{
    sadd, scard, sismember, smembers, smismember, smove, spop, srandmember, srem, sscan,
};

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
    use crate::base::compat::CompatVersion;
    use crate::io::test_harness::Harness;

    fn text(h: &mut Harness, line: &str) -> String {
        h.run_text(line)
    }

    #[test]
    fn sadd_converts_when_redis_7_0_does() {
        let mut h = Harness::as_version(CompatVersion::V7_0);
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

    /// From 7.2 a new set is sized for the members SADD brings: four integers over an intset
    /// limit of 3 make a listpack at once.
    #[test]
    fn sadd_sizes_new_sets_from_7_2() {
        let mut h = Harness::as_version(CompatVersion::V7_2);
        text(&mut h, "CONFIG SET set-max-intset-entries 3");
        assert_eq!(text(&mut h, "SADD s 3 1 2 1"), ":3\r\n");
        assert_eq!(text(&mut h, "OBJECT ENCODING s"), "$8\r\nlistpack\r\n");
        assert_eq!(
            text(&mut h, "SMEMBERS s"),
            "*3\r\n$1\r\n3\r\n$1\r\n1\r\n$1\r\n2\r\n"
        );
        assert_eq!(text(&mut h, "SADD t 3 1 2"), ":3\r\n");
        assert_eq!(text(&mut h, "OBJECT ENCODING t"), "$6\r\nintset\r\n");
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
        let mut h = Harness::as_version(CompatVersion::V7_0);
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
