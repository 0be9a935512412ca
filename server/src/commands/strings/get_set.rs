//! GET, SET and its variants: SET's options (parsed in Redis's order, shared with GETEX), the
//! compare-and-set conditions with DELEX and DIGEST, SETNX, SETEX, PSETEX, GETSET, GETDEL, GETEX,
//! MGET, MSET and MSETNX.

use bytes::Bytes;
use embedis_protocol::number::parse_i64;

use crate::base::compat::CompatVersion;
use crate::base::config::event_class::{GENERIC, STRING};
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::model::keyspace::{Access, StoreIf, Ttl};
use crate::model::write_stream::{del_verb, integer_arg};

use super::{reply_string, string_of};

// ---------------------------------------------------------------------------------------------
// GET / SET family
// ---------------------------------------------------------------------------------------------

pub(super) fn get(ctx: &mut Ctx<'_>) -> CmdResult {
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
pub(super) enum ConditionKind {
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
    pub(super) fn of(word: &[u8]) -> Option<ConditionKind> {
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

/// SET's options (`for_set`) or GETEX's; `conditions`: the compare conditions (IFEQ…) exist,
/// as from Redis 8.4 (before, they are a syntax error as any unknown word).
fn parse_options<'a>(
    args: &'a [Bytes],
    from: usize,
    for_set: bool,
    conditions: bool,
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
        let condition = if for_set && conditions {
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

pub(super) fn set(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let (key, value) = (&args[1][..], &args[2][..]);
    let conditions = ctx.registry.version >= CompatVersion::V8_4;
    let options = parse_options(args, 3, true, conditions)?;
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
            propagate_set(ctx, ttl, &options);
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
            propagate_set(ctx, ttl, options);
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
pub(super) fn delex_key_flags(args: &[Bytes], _declared: u16) -> u16 {
    if args.len() > 2 {
        flag::RW | flag::ACCESS | flag::DELETE
    } else {
        flag::RM | flag::DELETE
    }
}

/// DELEX key [IFEQ v|IFNE v|IFDEQ d|IFDNE d]: DEL of one key, or, with a condition, only of a
/// string key for which it holds (a missing key deletes nothing, another type is WRONGTYPE).
/// Replies 1 if the key was deleted, 0 if not; `del` is notified only for a deletion.
pub(super) fn delex(ctx: &mut Ctx<'_>) -> CmdResult {
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
pub(super) fn digest(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn setnx(ctx: &mut Ctx<'_>) -> CmdResult {
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
/// as `SET key value PXAT ms` (whatever the options were; from 7.2 a SET given PXAT goes
/// verbatim), otherwise without its GET options. Called only while the write stream has a
/// consumer (SET is the hottest write).
#[cold]
#[inline(never)]
fn propagate_set(ctx: &mut Ctx<'_>, ttl: Ttl, options: &StringOptions<'_>) {
    let args = ctx.args;
    let get = options.get;
    let given_pxat = matches!(options.expire, Some((Expiry::PxAt, _)));
    if given_pxat && ctx.registry.version >= CompatVersion::V7_2 {
        return;
    }
    match ttl {
        Ttl::At(when) => ctx.propagate_as(|| {
            vec![
                Bytes::from_static(b"SET"),
                args[1].clone(),
                args[2].clone(),
                Bytes::from_static(b"PXAT"),
                integer_arg(when),
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
            integer_arg(when),
        ]
    });
    ctx.notify(STRING, "set", key);
    ctx.notify(GENERIC, "expire", key);
    ctx.out.ok();
    Ok(())
}

pub(super) fn setex(ctx: &mut Ctx<'_>) -> CmdResult {
    set_with_expiry(ctx, Expiry::Ex, "setex")
}

pub(super) fn psetex(ctx: &mut Ctx<'_>) -> CmdResult {
    set_with_expiry(ctx, Expiry::Px, "psetex")
}

pub(super) fn getset(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn getdel(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn getex(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let (db, now, key) = (ctx.client.db, ctx.now_ms, &args[1][..]);
    let options = parse_options(args, 2, false, false)?;
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
        Some((Expiry::ExAt | Expiry::PxAt, when))
            if when <= now && ctx.ks.deletes_past_deadlines() =>
        {
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
                    integer_arg(when),
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

pub(super) fn mget(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn mset(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn msetnx(ctx: &mut Ctx<'_>) -> CmdResult {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_option_conflicts() {
        let args = |s: &str| -> Vec<Bytes> {
            s.split(' ')
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect()
        };
        let ok = |s: &str, set: bool| parse_options(&args(s), 3, set, true).is_ok();
        assert!(ok("set k v NX GET EX 10", true));
        assert!(ok("set k v IFEQ x", true));
        let line = args("set k v IFEQ x");
        let before_8_4 = parse_options(&line, 3, true, false);
        assert!(matches!(before_8_4, Err(Error::Syntax)));
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
}
