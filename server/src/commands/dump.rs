//! DUMP, RESTORE and RESTORE-ASKING: a key's value as a self-checking payload (the value as an
//! RDB file holds it, the RDB version and a CRC64), and a key made from one.
//!
//! The bytes are the `embedis-rdb` crate's and the encodings are [`crate::rdb_convert`]'s, so a
//! payload from DUMP is the one Redis 7.0 gives for the same value (compressed with LZF above 20
//! bytes, as Redis's default `rdbcompression yes`), except for the order of a hash table's
//! elements; and any payload Redis writes — back to the legacy ziplist and zipmap encodings of
//! older versions — restores here.
//!
//! RESTORE follows Redis's `restoreCommand` step by step, because its errors come in that
//! order: the options (IDLETIME and FREQ exclude each other as a syntax error), the target key
//! (`-BUSYKEY` unless REPLACE), the TTL, the payload's footer, then its body. A TTL already in
//! the past restores nothing and replies OK (a key REPLACE removed counts as deleted: `del`
//! event). IDLETIME sets the LRU clock under an LRU policy and FREQ the LFU counter under an LFU
//! policy; each is ignored under the other. The new key is written like any other (`new` and
//! `restore` events, WATCH, blocked clients woken).

use crate::config::event_class::GENERIC;
use crate::ctx::Ctx;
use crate::error::{CmdResult, Error};
use crate::keyspace::Access;
use crate::rdb_convert::{from_rdb, to_rdb};
use crate::table::keys::flag;
use crate::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::value::{lfu_minutes, lru_clock, LRU_CLOCK_MAX};
use bytes::Bytes;
use embedis_rdb::{dump_payload, parse_dump_payload, RdbError};

const RESTORE_SYNTAX: &str = "key ttl:integer serialized-value:string [REPLACE@3.0.0] \
     [ABSTTL@5.0.0] [IDLETIME seconds:integer@5.0.0] [FREQ frequency:integer@5.0.0]";
const RESTORE_COMPLEXITY: &str =
    "O(1) for the key plus O(N*M) to rebuild N elements of average size M (O(N*M*log(N)) for \
     sorted sets).";

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("dump", 2, dump)
        .flags(Flags::READONLY)
        .acl(Acl::KEYSPACE)
        .keys(&[KeySpec::single(1, flag::RO | flag::ACCESS)])
        .tips(&["nondeterministic_output"])
        .doc(
            "generic",
            "2.6.0",
            "O(1) to find the key plus O(N*M) to serialize N elements of average size M.",
            "Serializes a key's value into Redis's DUMP format.",
            "key",
        ),
    CommandSpec::new("restore", -4, restore)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::KEYSPACE.union(Acl::DANGEROUS))
        .keys(&[KeySpec::single(1, flag::OW | flag::UPDATE)])
        .doc(
            "generic",
            "2.6.0",
            RESTORE_COMPLEXITY,
            "Creates a key from a value serialized by DUMP.",
            RESTORE_SYNTAX,
        ),
    CommandSpec::new("restore-asking", -4, restore)
        .flags(Flags::WRITE.union(Flags::DENYOOM).union(Flags::ASKING))
        .acl(Acl::KEYSPACE.union(Acl::DANGEROUS))
        .keys(&[KeySpec::single(1, flag::OW | flag::UPDATE)])
        .doc(
            "server",
            "3.0.0",
            RESTORE_COMPLEXITY,
            "RESTORE for a cluster's key migration (internal).",
            RESTORE_SYNTAX,
        ),
];

fn dump(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let Some(obj) = ctx.ks.lookup(db, ctx.arg(1), now, Access::Read) else {
        ctx.out.null();
        return Ok(());
    };
    let payload = dump_payload(&to_rdb(&obj.value));
    ctx.out.bulk(&payload);
    Ok(())
}

fn restore(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (i64, i64) = (-1, -1);
    let mut j = 4;
    while j < ctx.argc() {
        let more = ctx.argc() - j - 1;
        if ctx.arg_is(j, "replace") {
            replace = true;
        } else if ctx.arg_is(j, "absttl") {
            absttl = true;
        } else if ctx.arg_is(j, "idletime") && more >= 1 && freq == -1 {
            idle = ctx.int_arg(j + 1)?;
            if idle < 0 {
                return Err(Error::msg("ERR Invalid IDLETIME value, must be >= 0"));
            }
            j += 1;
        } else if ctx.arg_is(j, "freq") && more >= 1 && idle == -1 {
            freq = ctx.int_arg(j + 1)?;
            if !(0..=255).contains(&freq) {
                return Err(Error::msg(
                    "ERR Invalid FREQ value, must be >= 0 and <= 255",
                ));
            }
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let key = ctx.arg(1);
    if !replace && ctx.ks.lookup(db, key, now, Access::Write).is_some() {
        return Err(Error::msg("BUSYKEY Target key name already exists."));
    }
    let ttl = ctx.int_arg(2)?;
    if ttl < 0 {
        return Err(Error::msg("ERR Invalid TTL value, must be >= 0"));
    }
    let value = match parse_dump_payload(ctx.arg(3)) {
        Ok(v) => v,
        Err(RdbError::BadDumpPayload) => {
            return Err(Error::msg("ERR DUMP payload version or checksum are wrong"))
        }
        Err(_) => return Err(Error::msg("ERR Bad data format")),
    };
    let value =
        from_rdb(value, &ctx.server.config).map_err(|_| Error::msg("ERR Bad data format"))?;

    let deleted = replace && ctx.ks.db(db).remove(key).is_some();
    let deadline = match ttl {
        0 => None,
        t if absttl => Some(t),
        t => Some(t.wrapping_add(now)),
    };
    if deadline.is_some_and(|when| when <= now) {
        if deleted {
            ctx.ks.touched(db, key);
            ctx.notify(GENERIC, "del", key);
            ctx.ks.dirty += 1;
            // What happened is a deletion: it propagates as one.
            let name = ctx.args[1].clone();
            ctx.propagate_as(|| vec![Bytes::from_static(b"DEL"), name]);
        }
        ctx.out.ok();
        return Ok(());
    }
    ctx.ks.add(db, key, value, deadline, now);
    // A relative TTL propagates as the absolute time it stood for (Redis adds ABSTTL).
    if let (Some(when), false, true) = (deadline, absttl, ctx.propagating()) {
        let mut args = ctx.args.to_vec();
        ctx.propagate_as(|| {
            args[2] = crate::propagate::int_arg(when);
            args.push(Bytes::from_static(b"ABSTTL"));
            args
        });
    }
    let lfu = ctx.ks.access.lfu;
    if let Some(obj) = ctx.ks.db(db).main.get_mut(key) {
        if lfu {
            if freq >= 0 {
                obj.touch((lfu_minutes(now) << 8) | freq as u32);
            }
        } else if idle >= 0 {
            let clock = i64::from(lru_clock(now));
            let mut abs = clock.wrapping_sub(idle.wrapping_mul(1000) / 1000);
            if abs < 0 {
                abs = abs.wrapping_add(i64::from(LRU_CLOCK_MAX));
            }
            obj.touch(abs as u32);
        }
    }
    ctx.notify(GENERIC, "restore", key);
    ctx.out.ok();
    Ok(())
}
