//! Expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX, XX, GT, LT), TTL, PTTL,
//! EXPIRETIME, PEXPIRETIME, PERSIST.
//!
//! A TTL is stored as an absolute deadline in milliseconds (see [`crate::model::keyspace`]); the four
//! setters differ only in unit and base time, so they share `expire_generic`, which follows
//! Redis 7.0's order of checks because each produces a different reply: options first (an
//! unknown option or an incompatible pair is an error even for a missing key), then the number
//! and its overflow, then the key, then the condition. A deadline at or before the command's
//! `now` deletes the key at once and still answers 1. All time comes from the command's frozen
//! `now`, so a TTL read right after an EXPIRE in the same MULTI or script is exact.

use crate::base::config::event_class::GENERIC;
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::Access;
use crate::model::write_stream::{del_verb, integer_arg};
use bytes::Bytes;

fn expire(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, ctx.now_ms, true)
}

fn pexpire(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, ctx.now_ms, false)
}

fn expireat(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, 0, true)
}

fn pexpireat(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, 0, false)
}

/// The NX / XX / GT / LT conditions of the EXPIRE family.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Condition {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Condition {
    /// Parses the option words, with Redis's errors: an unknown word first (quoted as a C string,
    /// up to any NUL), then the incompatible combinations.
    pub(crate) fn parse(words: &[bytes::Bytes]) -> CmdResult<Condition> {
        let mut c = Condition::default();
        for word in words {
            if word_is(word, "nx") {
                c.nx = true;
            } else if word_is(word, "xx") {
                c.xx = true;
            } else if word_is(word, "gt") {
                c.gt = true;
            } else if word_is(word, "lt") {
                c.lt = true;
            } else {
                let mut line = b"ERR Unsupported option ".to_vec();
                line.extend_from_slice(crate::base::cstr::c_str(word));
                return Err(Error::bytes(line));
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(Error::msg(
                "ERR NX and XX, GT or LT options at the same time are not compatible",
            ));
        }
        if c.gt && c.lt {
            return Err(Error::msg(
                "ERR GT and LT options at the same time are not compatible",
            ));
        }
        Ok(c)
    }

    /// True if a key whose deadline is `current` (None: no TTL) may get deadline `new`. A key
    /// without a TTL counts as expiring never: GT always fails on it, LT always passes.
    pub(crate) fn allows(self, current: Option<i64>, new: i64) -> bool {
        if self.nx && current.is_some() {
            return false;
        }
        if self.xx && current.is_none() {
            return false;
        }
        if self.gt && current.is_none_or(|c| new <= c) {
            return false;
        }
        if self.lt && current.is_some_and(|c| new >= c) {
            return false;
        }
        true
    }
}

/// The deadline in ms for `amount` in `unit_seconds` or ms, added to `base` (0 for the *AT
/// forms), or None if the arithmetic would overflow (Redis checks only the overflows it can
/// reach: the unit conversion both ways, the addition upwards).
pub(crate) fn deadline(amount: i64, base: i64, unit_seconds: bool) -> Option<i64> {
    let ms = if unit_seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&amount) {
            return None;
        }
        amount * 1000
    } else {
        amount
    };
    if ms > i64::MAX - base {
        return None;
    }
    Some(ms + base)
}

fn expire_generic(ctx: &mut Ctx<'_>, base: i64, unit_seconds: bool) -> CmdResult {
    let condition = Condition::parse(&ctx.args[3..])?;
    let amount = ctx.int_arg(2)?;
    let when = deadline(amount, base, unit_seconds).ok_or_else(|| {
        Error::owned(format!(
            "ERR invalid expire time in '{}' command",
            ctx.cmd.full_name
        ))
    })?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let key = ctx.arg(1);
    if ctx.ks.lookup(db, key, now, Access::Write).is_none() {
        ctx.out.integer(0);
        return Ok(());
    }
    if !condition.allows(ctx.ks.expire_of(db, key), when) {
        ctx.out.integer(0);
        return Ok(());
    }
    if when <= now && ctx.ks.deletes_past_deadlines() {
        // Already in the past: Redis deletes the key (an explicit DEL, not an expiry).
        ctx.ks.delete(db, key, now);
        let lazy = ctx.ks.stream.lazy_expire;
        let args = ctx.args;
        ctx.propagate_as(|| vec![del_verb(lazy), args[1].clone()]);
        ctx.notify(GENERIC, "del", key);
    } else {
        ctx.ks.set_expire(db, key, when);
        ctx.ks.dirty += 1;
        // Propagated as PEXPIREAT with the absolute deadline; the options stay.
        let args = ctx.args;
        let is_pexpireat = base == 0 && !unit_seconds;
        if !is_pexpireat {
            ctx.propagate_as(|| {
                let mut v = args.to_vec();
                v[0] = Bytes::from_static(b"PEXPIREAT");
                v[2] = integer_arg(when);
                v
            });
        }
        // Redis replies before it announces a new deadline (but after a deletion).
        ctx.out.integer(1);
        ctx.notify(GENERIC, "expire", key);
        return Ok(());
    }
    ctx.out.integer(1);
    Ok(())
}

fn ttl(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, false, false)
}

fn pttl(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, true, false)
}

fn expiretime(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, false, true)
}

fn pexpiretime(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, true, true)
}

/// TTL, PTTL, EXPIRETIME, PEXPIRETIME: -2 for no key, -1 for no TTL, else the remaining time
/// (`absolute`: the deadline) never below 0, in ms or in seconds rounded to nearest.
fn ttl_generic(ctx: &mut Ctx<'_>, in_ms: bool, absolute: bool) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let key = ctx.arg(1);
    if ctx.ks.lookup(db, key, now, Access::Inspect).is_none() {
        ctx.out.integer(-2);
        return Ok(());
    }
    let Some(when) = ctx.ks.expire_of(db, key) else {
        ctx.out.integer(-1);
        return Ok(());
    };
    ctx.out.integer(ttl_reply(when, now, in_ms, absolute));
    Ok(())
}

/// The number TTL and friends report for a key with deadline `when` at `now`.
pub(crate) fn ttl_reply(when: i64, now: i64, in_ms: bool, absolute: bool) -> i64 {
    let ms = if absolute {
        when
    } else {
        when.saturating_sub(now)
    }
    .max(0);
    if in_ms {
        ms
    } else {
        // Rounded to the nearest second. Redis's `(ms + 500) / 1000` is computed by the compiler
        // without overflow even for a deadline near i64::MAX, so we widen.
        ((ms as i128 + 500) / 1000) as i64
    }
}

fn persist(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let key = ctx.arg(1);
    let removed = ctx.ks.lookup(db, key, now, Access::Write).is_some() && ctx.ks.persist(db, key);
    if removed {
        ctx.ks.dirty += 1;
        ctx.notify(GENERIC, "persist", key);
    }
    ctx.out.integer(removed as i64);
    Ok(())
}

const KEY_RW_UPDATE: &[KeySpec] = &[KeySpec::single(1, flag::RW | flag::UPDATE)];

const KEY_RO_ACCESS: &[KeySpec] = &[KeySpec::single(1, flag::RO | flag::ACCESS)];

const WRITE_FAST: Flags = Flags::WRITE.union(Flags::FAST);

const READ_FAST: Flags = Flags::READONLY.union(Flags::FAST);

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("expire", -3, expire)
        .flags(WRITE_FAST)
        .acl(Acl::KEYSPACE)
        .keys(KEY_RW_UPDATE)
        .doc(
            "generic",
            "1.0.0",
            "O(1)",
            "Gives a key a time to live in seconds.",
            "key seconds:integer condition=[NX|XX|GT|LT]",
        ),
    CommandSpec::new("pexpire", -3, pexpire)
        .flags(WRITE_FAST)
        .acl(Acl::KEYSPACE)
        .keys(KEY_RW_UPDATE)
        .doc(
            "generic",
            "2.6.0",
            "O(1)",
            "Gives a key a time to live in milliseconds.",
            "key milliseconds:integer condition=[NX|XX|GT|LT]",
        ),
    CommandSpec::new("expireat", -3, expireat)
        .flags(WRITE_FAST)
        .acl(Acl::KEYSPACE)
        .keys(KEY_RW_UPDATE)
        .doc(
            "generic",
            "1.2.0",
            "O(1)",
            "Makes a key expire at a UNIX time in seconds.",
            "key unix-time-seconds:unix-time condition=[NX|XX|GT|LT]",
        ),
    CommandSpec::new("pexpireat", -3, pexpireat)
        .flags(WRITE_FAST)
        .acl(Acl::KEYSPACE)
        .keys(KEY_RW_UPDATE)
        .doc(
            "generic",
            "2.6.0",
            "O(1)",
            "Makes a key expire at a UNIX time in milliseconds.",
            "key unix-time-milliseconds:unix-time condition=[NX|XX|GT|LT]",
        ),
    CommandSpec::new("ttl", 2, ttl)
        .flags(READ_FAST)
        .acl(Acl::KEYSPACE)
        .keys(KEY_RO_ACCESS)
        .tips(&["nondeterministic_output"])
        .doc(
            "generic",
            "1.0.0",
            "O(1)",
            "Returns the seconds a key has left to live (-1: no TTL, -2: no key).",
            "key",
        ),
    CommandSpec::new("pttl", 2, pttl)
        .flags(READ_FAST)
        .acl(Acl::KEYSPACE)
        .keys(KEY_RO_ACCESS)
        .tips(&["nondeterministic_output"])
        .doc(
            "generic",
            "2.6.0",
            "O(1)",
            "Returns the milliseconds a key has left to live (-1: no TTL, -2: no key).",
            "key",
        ),
    CommandSpec::new("expiretime", 2, expiretime)
        .flags(READ_FAST)
        .acl(Acl::KEYSPACE)
        .keys(KEY_RO_ACCESS)
        .doc(
            "generic",
            "7.0.0",
            "O(1)",
            "Returns the UNIX time in seconds at which a key expires (-1: no TTL, -2: no key).",
            "key",
        ),
    CommandSpec::new("pexpiretime", 2, pexpiretime)
        .flags(READ_FAST)
        .acl(Acl::KEYSPACE)
        .keys(KEY_RO_ACCESS)
        .doc(
            "generic",
            "7.0.0",
            "O(1)",
            "Returns the UNIX time in milliseconds at which a key expires (-1: no TTL, -2: no key).",
            "key",
        ),
    CommandSpec::new("persist", 2, persist)
        .flags(WRITE_FAST)
        .acl(Acl::KEYSPACE)
        .keys(KEY_RW_UPDATE)
        .doc(
            "generic",
            "2.2.0",
            "O(1)",
            "Removes a key's time to live, so that it never expires.",
            "key",
        ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_overflow_checks() {
        assert_eq!(deadline(10, 1_000, true), Some(11_000));
        assert_eq!(
            deadline(i64::MAX / 1000, 0, true),
            Some(i64::MAX / 1000 * 1000)
        );
        assert_eq!(deadline(i64::MAX / 1000 + 1, 0, true), None);
        assert_eq!(
            deadline(i64::MIN / 1000, 0, true),
            Some(i64::MIN / 1000 * 1000)
        );
        assert_eq!(deadline(i64::MIN / 1000 - 1, 0, true), None);
        assert_eq!(deadline(i64::MAX, 0, false), Some(i64::MAX));
        assert_eq!(deadline(i64::MAX, 1, false), None);
        assert_eq!(deadline(i64::MIN, 5, false), Some(i64::MIN + 5));
        assert_eq!(deadline(i64::MAX / 1000, 1_700_000_000_000, true), None);
    }

    #[test]
    fn ttl_rounding() {
        assert_eq!(ttl_reply(100_499, 0, false, false), 100);
        assert_eq!(ttl_reply(100_500, 0, false, false), 101);
        assert_eq!(ttl_reply(5, 10, true, false), 0, "never negative");
        assert_eq!(ttl_reply(i64::MAX, 0, false, true), 9_223_372_036_854_776);
        assert_eq!(
            ttl_reply(99_999_999_999_999, 0, false, true),
            100_000_000_000
        );
        assert_eq!(ttl_reply(1234, 1000, true, true), 1234);
    }

    fn cond(words: &[&str]) -> CmdResult<Condition> {
        let words: Vec<bytes::Bytes> = words
            .iter()
            .map(|w| bytes::Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        Condition::parse(&words)
    }

    /// The whole option matrix: which combinations parse, and what each allows for a key
    /// without a TTL and with one, for a later and an earlier new deadline.
    #[test]
    fn option_matrix() {
        let nx_conflict = Err(Error::msg(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
        let gt_lt = Err(Error::msg(
            "ERR GT and LT options at the same time are not compatible",
        ));
        assert_eq!(cond(&["NX", "XX"]), nx_conflict);
        assert_eq!(cond(&["nx", "gt"]), nx_conflict);
        assert_eq!(cond(&["lt", "Nx"]), nx_conflict);
        assert_eq!(cond(&["gt", "lt"]), gt_lt);
        assert_eq!(cond(&["gt", "lt", "nx"]), nx_conflict, "NX reported first");
        assert_eq!(
            cond(&["xx", "bogus\0tail"]),
            Err(Error::msg("ERR Unsupported option bogus"))
        );
        assert!(cond(&["nx\0anything"]).is_ok(), "C string comparison");
        // (words, no TTL, TTL=100 → 200, TTL=100 → 50)
        let table: &[(&[&str], bool, bool, bool)] = &[
            (&[], true, true, true),
            (&["NX"], true, false, false),
            (&["XX"], false, true, true),
            (&["GT"], false, true, false),
            (&["LT"], true, false, true),
            (&["XX", "GT"], false, true, false),
            (&["XX", "LT"], false, false, true),
            (&["NX", "NX"], true, false, false),
        ];
        for (words, none, later, earlier) in table {
            let c = cond(words).unwrap();
            assert_eq!(c.allows(None, 200), *none, "{words:?} without TTL");
            assert_eq!(c.allows(Some(100), 200), *later, "{words:?} later");
            assert_eq!(c.allows(Some(100), 50), *earlier, "{words:?} earlier");
        }
        let gt = cond(&["GT"]).unwrap();
        assert!(!gt.allows(Some(100), 100), "GT is strict");
        let lt = cond(&["LT"]).unwrap();
        assert!(!lt.allows(Some(100), 100), "LT is strict");
    }
}

#[cfg(test)]
mod command_tests {
    use crate::io::test_harness::*;

    #[test]
    fn past_deadlines_delete_at_once() {
        let mut h = Harness::new();
        let now = h.now();
        for cmd in [
            "EXPIRE k 0".to_string(),
            "EXPIRE k -1".into(),
            "PEXPIRE k 0".into(),
            format!("PEXPIREAT k {now}"),
            "EXPIREAT k 1".into(),
            "PEXPIRE k -9223372036854775808".into(),
        ] {
            h.add(0, "k", None);
            assert_eq!(int(&h.run(&cmd)), 1, "{cmd}");
            assert_eq!(int(&h.run("EXISTS k")), 0, "{cmd}");
        }
        assert_eq!(
            h.engine.ks.stats.expired_keys, 0,
            "a deletion, not an expiry"
        );
        // One millisecond in the future: alive at the deadline, gone just after.
        h.add(0, "k", None);
        assert_eq!(int(&h.run(&format!("PEXPIREAT k {}", now + 1))), 1);
        assert_eq!(int(&h.run("PTTL k")), 1);
        h.advance_ms(1);
        assert_eq!(int(&h.run("PTTL k")), 0);
        assert_eq!(int(&h.run("EXISTS k")), 1);
        h.advance_ms(1);
        assert_eq!(int(&h.run("TTL k")), -2);
        assert_eq!(h.engine.ks.stats.expired_keys, 1);
    }

    #[test]
    fn errors_come_in_redis_order() {
        let mut h = Harness::new();
        // Options before the number, the number before the key.
        assert_eq!(
            error(&h.run("EXPIRE nokey abc FOO")),
            "ERR Unsupported option FOO"
        );
        assert_eq!(
            error(&h.run("EXPIRE nokey abc NX XX")),
            "ERR NX and XX, GT or LT options at the same time are not compatible"
        );
        assert_eq!(
            error(&h.run("EXPIRE nokey abc")),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            error(&h.run("PEXPIREAT nokey 9223372036854775807 GT LT")),
            "ERR GT and LT options at the same time are not compatible"
        );
        assert_eq!(
            error(&h.run("EXPIREAT nokey 9223372036854776")),
            "ERR invalid expire time in 'expireat' command"
        );
        assert_eq!(int(&h.run("EXPIRE nokey 10")), 0);
    }

    #[test]
    fn options_through_the_command() {
        let mut h = Harness::new();
        h.add(0, "k", None);
        assert_eq!(
            int(&h.run("EXPIRE k 100 GT")),
            0,
            "no TTL is infinite for GT"
        );
        assert_eq!(int(&h.run("EXPIRE k 100 XX")), 0);
        assert_eq!(
            int(&h.run("EXPIRE k 100 LT")),
            1,
            "no TTL is infinite for LT"
        );
        assert_eq!(int(&h.run("EXPIRE k 50 NX")), 0);
        assert_eq!(int(&h.run("EXPIRE k 100 GT")), 0, "equal is not greater");
        assert_eq!(int(&h.run("EXPIRE k 100 LT")), 0, "equal is not less");
        assert_eq!(int(&h.run("EXPIRE k 101 GT XX")), 1);
        assert_eq!(int(&h.run("PTTL k")), 101_000);
        assert_eq!(int(&h.run("EXPIRE k -1 LT")), 1, "LT into the past deletes");
        assert_eq!(int(&h.run("EXISTS k")), 0);
    }

    #[test]
    fn ttl_reports_and_persist() {
        let mut h = Harness::new();
        let deadline = h.now() + 10_400;
        h.add(0, "k", Some(10_400));
        assert_eq!(int(&h.run("TTL k")), 10);
        assert_eq!(int(&h.run("PEXPIRETIME k")), deadline);
        assert_eq!(int(&h.run("EXPIRETIME k")), (deadline + 500) / 1000);
        h.advance_ms(900);
        assert_eq!(int(&h.run("TTL k")), 10, "9500 ms round up");
        h.advance_ms(1);
        assert_eq!(int(&h.run("TTL k")), 9, "9499 ms round down");
        assert_eq!(int(&h.run("PERSIST k")), 1);
        assert_eq!(int(&h.run("TTL k")), -1);
        assert_eq!(int(&h.run("PERSIST k")), 0);
        assert!(h.engine.ks.dbs[0].expires.is_empty());
        h.add(0, "gone", Some(5));
        h.advance_ms(6);
        assert_eq!(int(&h.run("PERSIST gone")), 0, "an expired key is no key");
        assert_eq!(int(&h.run("EXPIRETIME gone")), -2);
    }
}
