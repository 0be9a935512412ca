//! Hash field expiration (Redis 7.4 and 8.0): HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT, HTTL,
//! HPTTL, HEXPIRETIME, HPEXPIRETIME, HPERSIST, HGETEX, HSETEX and HGETDEL.
//!
//! The deadlines live in the hash value ([`embedis_datatypes::hash::Volatile`]); this
//! module owns the commands' semantics as Redis 8.2 answers them (tests/diff8/ compares them
//! byte for byte): argument checks in Redis's order and with its texts (which differ between
//! commands: `numFields` for HEXPIRE, "Number of fields" for the others, "invalid number of
//! fields" for HSETEX), the per-field reply codes (-2 no such field, -1 no TTL, 0 condition not
//! met, 1 done, 2 deleted because the deadline is already past), the highest deadline Redis
//! accepts ([`MAX_DEADLINE_MS`]), and the events (`hexpire`, `hpersist`, `hdel` for fields a
//! past deadline removed, `hexpired` for fields found expired, `del` when the hash empties).
//!
//! Which commands see an expired-but-stored field is Redis's too: HEXPIRE… still finds it (and
//! can give it a new deadline), HTTL and HPERSIST answer -2, HGETEX, HGETDEL and HSETEX's FNX/FXX
//! check delete it on the spot. After a change of deadlines the database's index of hashes with
//! field TTLs is updated (`Keyspace::reindex_hash_fields`), which is how the active expiry cycle
//! finds them.

use bytes::Bytes;
use embedis_datatypes::hash::HashValue;
use embedis_protocol::number::parse_i64;

use crate::base::config::event_class::{GENERIC, HASH};
use crate::base::error::{CmdResult, Error};
use crate::commands::hashes::{create, limits, read, write};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::FieldEvents;

/// The latest field deadline Redis accepts, in ms since the epoch (2^46 - 1: Redis keeps field
/// deadlines in 48 bits and reserves the top values).
pub const MAX_DEADLINE_MS: i64 = (1 << 46) - 1;

macro_rules! ttl_spec {
    ($name:literal, $handler:ident, $tips:expr, $summary:literal) => {
        CommandSpec::new($name, -5, $handler)
            .flags(READONLY_FAST)
            .acl(Acl::HASH)
            .keys(&[KeySpec::single(1, flag::RO | flag::ACCESS)])
            .tips($tips)
            .doc(
                "hash",
                "7.4.0",
                "O(N) where N is the number of specified fields",
                $summary,
                "key FIELDS fields=(numfields:integer field...)",
            )
    };
}

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

/// The fields of a `FIELDS numfields field…` block that must start at argument `at` and run to
/// the end. `bad_count` is the command's text for a count that is not a positive integer.
fn fields_block<'a>(ctx: &Ctx<'a>, at: usize, bad_count: &'static str) -> CmdResult<&'a [Bytes]> {
    // No room left for a count: Redis calls that a wrong number of arguments, whatever the
    // word at `at` is (`HGETEX key EX 5 FIELDS`, `HGETEX key EX 0 -1`).
    if at + 1 >= ctx.argc() {
        return Err(Error::WrongArity(ctx.cmd.full_name.clone().into()));
    }
    if !ctx.arg_is(at, "fields") {
        return Err(Error::msg(
            "ERR Mandatory argument FIELDS is missing or not at the right position",
        ));
    }
    let count = parse_i64(ctx.arg(at + 1))
        .filter(|n| *n > 0)
        .ok_or(Error::msg(bad_count))?;
    let args: &'a [Bytes] = ctx.args;
    let fields = &args[at + 2..];
    if count as u64 != fields.len() as u64 {
        return Err(Error::msg(
            "ERR The `numfields` parameter must match the number of arguments",
        ));
    }
    Ok(fields)
}

const NUMFIELDS_HEXPIRE: &str = "ERR Parameter `numFields` should be greater than 0";
const NUMFIELDS_OTHERS: &str = "ERR Number of fields must be a positive integer";

/// How a command's time argument reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Milliseconds,
}

/// Turns the time argument `i` into an absolute deadline in ms, with Redis's checks and texts:
/// not an integer, negative, or past [`MAX_DEADLINE_MS`] (once made absolute).
fn deadline_arg(ctx: &Ctx<'_>, i: usize, unit: Unit, absolute: bool) -> CmdResult<i64> {
    let mut time = ctx.int_arg(i)?;
    if time < 0 {
        return Err(Error::msg("ERR invalid expire time, must be >= 0"));
    }
    let invalid = || {
        Error::owned(format!(
            "ERR invalid expire time in '{}' command",
            ctx.cmd.full_name
        ))
    };
    if unit == Unit::Seconds {
        if time > MAX_DEADLINE_MS / 1000 {
            return Err(invalid());
        }
        time *= 1000;
    }
    let base = if absolute { 0 } else { ctx.now_ms };
    if time > MAX_DEADLINE_MS - base {
        return Err(invalid());
    }
    Ok(time + base)
}

// ---------------------------------------------------------------------------------------------
// HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT
// ---------------------------------------------------------------------------------------------

/// HEXPIRE's conditions on the field's current deadline (none: it never expires).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Condition {
    Always,
    /// NX: only a field without a deadline.
    Nx,
    /// XX: only a field with one.
    Xx,
    /// GT: only a later deadline (never for a field without one).
    Gt,
    /// LT: only an earlier deadline (always for a field without one).
    Lt,
}

impl Condition {
    fn allows(self, current: Option<i64>, new: i64) -> bool {
        match (self, current) {
            (Condition::Always, _) => true,
            (Condition::Nx, current) => current.is_none(),
            (Condition::Xx, current) => current.is_some(),
            (Condition::Gt, None) => false,
            (Condition::Gt, Some(current)) => new > current,
            (Condition::Lt, None) => true,
            (Condition::Lt, Some(current)) => new < current,
        }
    }
}

fn expire_generic(ctx: &mut Ctx<'_>, unit: Unit, absolute: bool) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    // The key's type is checked first, then the arguments, even for a missing key.
    let exists = read_for_write(ctx, key)?;
    let deadline = deadline_arg(ctx, 2, unit, absolute)?;
    let condition = match () {
        _ if ctx.arg_is(3, "nx") => Condition::Nx,
        _ if ctx.arg_is(3, "xx") => Condition::Xx,
        _ if ctx.arg_is(3, "gt") => Condition::Gt,
        _ if ctx.arg_is(3, "lt") => Condition::Lt,
        _ => Condition::Always,
    };
    let at = if condition == Condition::Always { 3 } else { 4 };
    let fields = fields_block(ctx, at, NUMFIELDS_HEXPIRE)?;
    ctx.out.array(fields.len());
    // A deadline that is not in the future deletes the fields (Redis's "already expired").
    let past = deadline <= now && ctx.ks.deletes_past_deadlines();
    let hash = match exists {
        true => write(ctx.ks, db, key, now)?,
        false => None,
    };
    let Some(hash) = hash else {
        for _ in fields {
            ctx.out.integer(-2);
        }
        return Ok(());
    };
    let (mut set, mut deleted) = (0u64, 0u64);
    for field in fields {
        // A field that has expired but is still stored counts as present here, as in Redis.
        if !hash.contains(field) {
            ctx.out.integer(-2);
        } else if !condition.allows(hash.ttl(field), deadline) {
            ctx.out.integer(0);
        } else if past {
            hash.remove(field);
            deleted += 1;
            ctx.out.integer(2);
        } else {
            hash.set_ttl(field, deadline);
            set += 1;
            ctx.out.integer(1);
        }
    }
    let emptied = hash.is_empty();
    finish_ttl_change(ctx, key, emptied);
    ctx.ks.dirty += set + deleted;
    if set > 0 {
        ctx.notify(HASH, "hexpire", key);
    }
    if deleted > 0 {
        ctx.notify(HASH, "hdel", key);
        if emptied {
            ctx.notify(GENERIC, "del", key);
        }
    }
    Ok(())
}

/// True if `key` holds a hash (after lazy expiry), WRONGTYPE if it holds something else. A
/// read that neither counts nor touches, for commands that check the type before their other
/// arguments and look the key up for real after.
fn read_for_write(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult<bool> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx
        .ks
        .lookup(db, key, now, crate::model::keyspace::Access::NoTouch)
    {
        None => Ok(false),
        Some(obj) if matches!(obj.value, crate::base::value::Value::Hash(_)) => Ok(true),
        Some(_) => Err(Error::WrongType),
    }
}

/// After a command changed field deadlines of the hash at `key`: deletes the key if the
/// command emptied it, and re-indexes it for the active expiry cycle otherwise.
fn finish_ttl_change(ctx: &mut Ctx<'_>, key: &[u8], emptied: bool) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    if emptied {
        ctx.ks.delete_emptied(db, key, now);
    } else {
        ctx.ks.reindex_hash_fields(db, key);
    }
}

fn hexpire(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, Unit::Seconds, false)
}

fn hpexpire(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, Unit::Milliseconds, false)
}

fn hexpireat(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, Unit::Seconds, true)
}

fn hpexpireat(ctx: &mut Ctx<'_>) -> CmdResult {
    expire_generic(ctx, Unit::Milliseconds, true)
}

// ---------------------------------------------------------------------------------------------
// HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME, HPERSIST
// ---------------------------------------------------------------------------------------------

/// What the TTL queries answer for a field with a deadline.
#[derive(Clone, Copy)]
enum Report {
    /// Seconds left, rounded up (HTTL).
    Ttl,
    /// Milliseconds left (HPTTL).
    PTtl,
    /// The deadline in seconds (HEXPIRETIME).
    Time,
    /// The deadline in milliseconds (HPEXPIRETIME).
    PTime,
}

fn ttl_generic(ctx: &mut Ctx<'_>, report: Report) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let exists = read_for_write(ctx, key)?;
    let fields = fields_block(ctx, 2, NUMFIELDS_OTHERS)?;
    let hash = match exists {
        true => read(ctx.ks, db, key, now)?,
        false => None,
    };
    ctx.out.array(fields.len());
    for field in fields {
        let answer = match hash {
            // An expired field still stored reads as absent.
            Some(h) if h.contains(field) && !h.is_expired(field, now) => match h.ttl(field) {
                None => -1,
                Some(deadline) => match report {
                    Report::Ttl => (deadline - now + 999) / 1000,
                    Report::PTtl => deadline - now,
                    // Rounded up, as Redis does.
                    Report::Time => (deadline + 999) / 1000,
                    Report::PTime => deadline,
                },
            },
            _ => -2,
        };
        ctx.out.integer(answer);
    }
    Ok(())
}

fn httl(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, Report::Ttl)
}

fn hpttl(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, Report::PTtl)
}

fn hexpiretime(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, Report::Time)
}

fn hpexpiretime(ctx: &mut Ctx<'_>) -> CmdResult {
    ttl_generic(ctx, Report::PTime)
}

fn hpersist(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let exists = read_for_write(ctx, key)?;
    let fields = fields_block(ctx, 2, NUMFIELDS_OTHERS)?;
    ctx.out.array(fields.len());
    let hash = match exists {
        true => write(ctx.ks, db, key, now)?,
        false => None,
    };
    let Some(hash) = hash else {
        for _ in fields {
            ctx.out.integer(-2);
        }
        return Ok(());
    };
    let mut persisted = 0;
    for field in fields {
        let answer = if !hash.contains(field) || hash.is_expired(field, now) {
            -2
        } else if hash.persist(field) {
            persisted += 1;
            1
        } else {
            -1
        };
        ctx.out.integer(answer);
    }
    finish_ttl_change(ctx, key, false);
    ctx.ks.dirty += persisted;
    if persisted > 0 {
        ctx.notify(HASH, "hpersist", key);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// HGETEX, HGETDEL
// ---------------------------------------------------------------------------------------------

/// What HGETEX does to the deadlines of the fields it returns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum GetExpiry {
    Leave,
    Persist,
    At(i64),
}

/// Removes the expired fields among `fields` of the hash at `key` (one `hexpired` event, and
/// the key deleted if that empties it), as Redis's field lookups do. True if the key is gone.
fn expire_looked_up(ctx: &mut Ctx<'_>, key: &[u8], fields: &[Bytes]) -> bool {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let gone = ctx
        .ks
        .expire_hash_fields(db, key, now, Some(fields), FieldEvents::Always);
    if !gone {
        ctx.ks.reindex_hash_fields(db, key);
    }
    gone
}

fn hgetex(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let exists = read_for_write(ctx, key)?;
    let (expiry, at) = match () {
        _ if ctx.arg_is(2, "ex") => (
            GetExpiry::At(deadline_arg(ctx, 3, Unit::Seconds, false)?),
            4,
        ),
        _ if ctx.arg_is(2, "px") => (
            GetExpiry::At(deadline_arg(ctx, 3, Unit::Milliseconds, false)?),
            4,
        ),
        _ if ctx.arg_is(2, "exat") => {
            (GetExpiry::At(deadline_arg(ctx, 3, Unit::Seconds, true)?), 4)
        }
        _ if ctx.arg_is(2, "pxat") => (
            GetExpiry::At(deadline_arg(ctx, 3, Unit::Milliseconds, true)?),
            4,
        ),
        _ if ctx.arg_is(2, "persist") => (GetExpiry::Persist, 3),
        _ => (GetExpiry::Leave, 2),
    };
    let fields = fields_block(ctx, at, NUMFIELDS_OTHERS)?;
    if !exists {
        reply_nils(ctx, fields.len());
        return Ok(());
    }
    if expire_looked_up(ctx, key, fields) {
        reply_nils(ctx, fields.len());
        // Redis 8 sends the `hexpired` of a lookup after the reply.
        ctx.publish_events();
        return Ok(());
    }
    let Some(hash) = write(ctx.ks, db, key, now)? else {
        unreachable!("the key exists")
    };
    // Each field is read, then given its new deadline: a field named twice after a past
    // deadline deleted it is nil the second time, as in Redis.
    ctx.out.array(fields.len());
    let (mut changed, mut deleted) = (0u64, 0u64);
    for field in fields {
        match hash.get(field) {
            // Still stored but expired: only while a CLIENT PAUSE holds expired data.
            Some(_) if hash.is_expired(field, now) => {
                ctx.out.null();
                continue;
            }
            Some(value) => ctx.out.bulk(value),
            None => {
                ctx.out.null();
                continue;
            }
        }
        match expiry {
            GetExpiry::Leave => {}
            GetExpiry::Persist => {
                if hash.persist(field) {
                    changed += 1;
                }
            }
            GetExpiry::At(deadline) if deadline <= now => {
                hash.remove(field);
                deleted += 1;
            }
            GetExpiry::At(deadline) => {
                hash.set_ttl(field, deadline);
                changed += 1;
            }
        }
    }
    let emptied = hash.is_empty();
    ctx.publish_events();
    if changed + deleted == 0 {
        return Ok(());
    }
    finish_ttl_change(ctx, key, emptied);
    ctx.ks.dirty += changed + deleted;
    if changed > 0 {
        let event = if expiry == GetExpiry::Persist {
            "hpersist"
        } else {
            "hexpire"
        };
        ctx.notify(HASH, event, key);
    }
    if deleted > 0 {
        ctx.notify(HASH, "hdel", key);
        if emptied {
            ctx.notify(GENERIC, "del", key);
        }
    }
    Ok(())
}

fn hgetdel(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let exists = read_for_write(ctx, key)?;
    let fields = fields_block(ctx, 2, NUMFIELDS_OTHERS)?;
    if !exists || expire_looked_up(ctx, key, fields) {
        reply_nils(ctx, fields.len());
        // Redis 8 sends the `hexpired` of a lookup after the reply.
        ctx.publish_events();
        return Ok(());
    }
    let Some(hash) = write(ctx.ks, db, key, now)? else {
        unreachable!("the key exists")
    };
    ctx.out.array(fields.len());
    let mut deleted = 0u64;
    for field in fields {
        // Each field is read, then deleted: a field named twice is nil the second time.
        match hash.get(field) {
            Some(_) if hash.is_expired(field, now) => ctx.out.null(),
            Some(value) => {
                ctx.out.bulk(value);
                hash.remove(field);
                deleted += 1;
            }
            None => ctx.out.null(),
        }
    }
    let emptied = hash.is_empty();
    ctx.publish_events();
    if deleted == 0 {
        return Ok(());
    }
    finish_ttl_change(ctx, key, emptied);
    ctx.ks.dirty += deleted;
    ctx.notify(HASH, "hdel", key);
    if emptied {
        ctx.notify(GENERIC, "del", key);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// HSETEX
// ---------------------------------------------------------------------------------------------

/// HSETEX's condition on the fields it writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SetCondition {
    Always,
    /// FNX: none of them exists.
    Fnx,
    /// FXX: all of them exist.
    Fxx,
}

/// What HSETEX does to the written fields' deadlines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SetExpiry {
    /// None given: writing a field ends its TTL.
    Clear,
    Keep,
    At(i64),
}

fn hsetex(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    // The arguments are parsed in order, before the key is looked at.
    let mut condition = SetCondition::Always;
    let mut expiry: Option<SetExpiry> = None;
    let mut pairs: Option<&[Bytes]> = None;
    let mut i = 2;
    while i < ctx.argc() {
        if ctx.arg_is(i, "fields") {
            if i + 1 >= ctx.argc() {
                return Err(Error::WrongArity(ctx.cmd.full_name.clone().into()));
            }
            let count = parse_i64(ctx.arg(i + 1))
                .filter(|n| (1..=i32::MAX as i64).contains(n))
                .ok_or(Error::msg("ERR invalid number of fields"))?;
            let rest = &ctx.args[i + 2..];
            if rest.len() as i64 != count * 2 {
                return Err(Error::WrongArity(ctx.cmd.full_name.clone().into()));
            }
            pairs = Some(rest);
            break;
        }
        let one_condition = || Error::msg("ERR Only one of FXX or FNX arguments can be specified");
        let one_expiry = || {
            Error::msg("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified")
        };
        if ctx.arg_is(i, "fnx") || ctx.arg_is(i, "fxx") {
            if condition != SetCondition::Always {
                return Err(one_condition());
            }
            condition = if ctx.arg_is(i, "fnx") {
                SetCondition::Fnx
            } else {
                SetCondition::Fxx
            };
            i += 1;
            continue;
        }
        let timed = [
            ("ex", Unit::Seconds, false),
            ("px", Unit::Milliseconds, false),
            ("exat", Unit::Seconds, true),
            ("pxat", Unit::Milliseconds, true),
        ]
        .into_iter()
        .find(|(word, _, _)| ctx.arg_is(i, word));
        if let Some((_, unit, absolute)) = timed {
            if expiry.is_some() {
                return Err(one_expiry());
            }
            if i + 1 >= ctx.argc() {
                return Err(Error::WrongArity(ctx.cmd.full_name.clone().into()));
            }
            expiry = Some(SetExpiry::At(deadline_arg(ctx, i + 1, unit, absolute)?));
            i += 2;
            continue;
        }
        if ctx.arg_is(i, "keepttl") {
            if expiry.is_some() {
                return Err(one_expiry());
            }
            expiry = Some(SetExpiry::Keep);
            i += 1;
            continue;
        }
        return Err(Error::bytes(
            [b"ERR unknown argument: ".as_slice(), ctx.arg(i)].concat(),
        ));
    }
    let Some(pairs) = pairs else {
        return Err(Error::msg(
            "ERR Mandatory argument FIELDS is missing or not at the right position",
        ));
    };
    let expiry = expiry.unwrap_or(SetExpiry::Clear);
    let exists = read_for_write(ctx, key)?;
    // FNX and FXX look the fields up, which deletes those that have expired.
    if exists && condition != SetCondition::Always {
        let fields: Vec<Bytes> = pairs.iter().step_by(2).cloned().collect();
        if expire_looked_up(ctx, key, &fields) {
            return hsetex_write(ctx, pairs, condition, expiry, false);
        }
    }
    hsetex_write(ctx, pairs, condition, expiry, exists)
}

/// HSETEX once its arguments are checked: the condition, the write, the deadlines.
fn hsetex_write(
    ctx: &mut Ctx<'_>,
    pairs: &[Bytes],
    condition: SetCondition,
    expiry: SetExpiry,
    exists: bool,
) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let limits = limits(ctx);
    let allowed = match (condition, exists) {
        (SetCondition::Always, _) | (SetCondition::Fnx, false) => true,
        (SetCondition::Fxx, false) => false,
        (SetCondition::Fnx, true) | (SetCondition::Fxx, true) => {
            let hash = read(ctx.ks, db, key, now)?.expect("exists");
            let present = pairs.iter().step_by(2).filter(|f| hash.contains(f)).count();
            if condition == SetCondition::Fnx {
                present == 0
            } else {
                present == pairs.len() / 2
            }
        }
    };
    // Redis 8 replies before it sends any of HSETEX's events.
    if !allowed {
        ctx.out.integer(0);
        ctx.publish_events();
        return Ok(());
    }
    let written = (pairs.len() / 2) as u64;
    // KEEPTTL keeps a field's deadline through the write; otherwise the write ends it (and a
    // new deadline is given after).
    let apply = |hash: &mut HashValue| {
        let kept: Vec<Option<i64>> = match expiry {
            SetExpiry::Keep => pairs.iter().step_by(2).map(|f| hash.ttl(f)).collect(),
            _ => Vec::new(),
        };
        hash.set_pairs(pairs, limits);
        for (field, deadline) in pairs.iter().step_by(2).zip(kept) {
            if let Some(deadline) = deadline {
                hash.set_ttl(field, deadline);
            }
        }
    };
    if exists {
        let hash = write(ctx.ks, db, key, now)?.expect("exists");
        apply(hash);
        ctx.ks.dirty += written;
    } else {
        let mut hash = HashValue::new();
        apply(&mut hash);
        create(ctx, key, hash, written);
    }
    ctx.out.integer(1);
    ctx.publish_events();
    ctx.notify(HASH, "hset", key);
    let SetExpiry::At(deadline) = expiry else {
        if expiry == SetExpiry::Keep {
            ctx.ks.reindex_hash_fields(db, key);
        }
        return Ok(());
    };
    let past = deadline <= now && ctx.ks.deletes_past_deadlines();
    let hash = write(ctx.ks, db, key, now)?.expect("just written");
    for field in pairs.iter().step_by(2) {
        if past {
            hash.remove(field);
        } else {
            hash.set_ttl(field, deadline);
        }
    }
    let emptied = hash.is_empty();
    finish_ttl_change(ctx, key, emptied);
    if past {
        ctx.notify(HASH, "hdel", key);
        if emptied {
            ctx.notify(GENERIC, "del", key);
        }
    } else {
        ctx.notify(HASH, "hexpire", key);
    }
    Ok(())
}

/// The reply of HGETEX and HGETDEL when no field can be there (no key, or every named field
/// just expired): one nil per named field.
fn reply_nils(ctx: &mut Ctx<'_>, count: usize) {
    ctx.out.array(count);
    for _ in 0..count {
        ctx.out.null();
    }
}

const WRITE_FAST: Flags = Flags::WRITE.union(Flags::FAST);

const READONLY_FAST: Flags = Flags::READONLY.union(Flags::FAST);

macro_rules! expire_spec {
    ($name:literal, $handler:ident, $time:literal, $summary:literal) => {
        CommandSpec::new($name, -6, $handler)
            .flags(WRITE_FAST)
            .acl(Acl::HASH)
            .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE)])
            .doc(
                "hash",
                "7.4.0",
                "O(N) where N is the number of specified fields",
                $summary,
                concat!(
                    "key ",
                    $time,
                    " [condition=(NX|XX|GT|LT)] FIELDS fields=(numfields:integer field...)"
                ),
            )
    };
}

pub static COMMANDS: &[CommandSpec] = &[
    expire_spec!(
        "hexpire",
        hexpire,
        "seconds:integer",
        "Gives hash fields a time to live in seconds."
    ),
    expire_spec!(
        "hpexpire",
        hpexpire,
        "milliseconds:integer",
        "Gives hash fields a time to live in milliseconds."
    ),
    expire_spec!(
        "hexpireat",
        hexpireat,
        "unix-time-seconds:unix-time",
        "Makes hash fields expire at a Unix time in seconds."
    ),
    expire_spec!(
        "hpexpireat",
        hpexpireat,
        "unix-time-milliseconds:unix-time",
        "Makes hash fields expire at a Unix time in milliseconds."
    ),
    ttl_spec!(
        "httl",
        httl,
        &["nondeterministic_output"],
        "Returns the remaining time to live of hash fields, in seconds."
    ),
    ttl_spec!(
        "hpttl",
        hpttl,
        &["nondeterministic_output"],
        "Returns the remaining time to live of hash fields, in milliseconds."
    ),
    ttl_spec!(
        "hexpiretime",
        hexpiretime,
        &[],
        "Returns the Unix time in seconds at which hash fields expire."
    ),
    ttl_spec!(
        "hpexpiretime",
        hpexpiretime,
        &[],
        "Returns the Unix time in milliseconds at which hash fields expire."
    ),
    CommandSpec::new("hpersist", -5, hpersist)
        .flags(WRITE_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE)])
        .doc(
            "hash",
            "7.4.0",
            "O(N) where N is the number of specified fields",
            "Removes the time to live of hash fields.",
            "key FIELDS fields=(numfields:integer field...)",
        ),
    CommandSpec::new("hgetex", -5, hgetex)
        .flags(WRITE_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RW | flag::ACCESS | flag::UPDATE)
            .notes("RW and UPDATE because it changes the TTL")])
        .doc(
            "hash",
            "8.0.0",
            "O(N) where N is the number of specified fields",
            "Returns the values of hash fields and optionally sets or removes their time to live.",
            "key [expiration=(EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|PERSIST)] FIELDS fields=(numfields:integer field...)",
        ),
    CommandSpec::new("hsetex", -6, hsetex)
        .flags(WRITE_FAST.union(Flags::DENYOOM))
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE)])
        .doc(
            "hash",
            "8.0.0",
            "O(N) where N is the number of fields being set.",
            "Sets hash fields, optionally only if none or all exist, and optionally their time to live.",
            "key [condition=(FNX|FXX)] [expiration=(EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|KEEPTTL)] FIELDS fields=(numfields:integer data=(field value)...)",
        ),
    CommandSpec::new("hgetdel", -5, hgetdel)
        .flags(WRITE_FAST)
        .acl(Acl::HASH)
        .keys(&[KeySpec::single(1, flag::RW | flag::ACCESS | flag::DELETE)])
        .doc(
            "hash",
            "8.0.0",
            "O(N) where N is the number of specified fields",
            "Returns the values of hash fields and deletes them.",
            "key FIELDS fields=(numfields:integer field...)",
        ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_syntax_parses() {
        use crate::kernel::table::docs::parse;
        for spec in COMMANDS {
            let args = parse(spec.syntax, spec.keys.len());
            assert!(args.is_ok(), "{}: {:?}", spec.name, args);
        }
    }

    #[test]
    fn conditions_compare_with_no_deadline_as_never() {
        use Condition::*;
        assert!(Nx.allows(None, 5) && !Nx.allows(Some(1), 5));
        assert!(!Xx.allows(None, 5) && Xx.allows(Some(1), 5));
        assert!(!Gt.allows(None, 5) && Gt.allows(Some(4), 5) && !Gt.allows(Some(5), 5));
        assert!(Lt.allows(None, 5) && Lt.allows(Some(6), 5) && !Lt.allows(Some(5), 5));
    }
}
