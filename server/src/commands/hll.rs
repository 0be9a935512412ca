//! The HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST.
//!
//! An HLL is a string value (TYPE says `string`, GET returns its bytes); the representation and
//! the algorithms live in [`embedis_datatypes::hll`]. This module follows Redis 7.0's
//! `hyperloglog.c` in what users see:
//!
//! - **Checks.** A key of another type is the usual WRONGTYPE; a string that is not an HLL
//!   (wrong magic, unknown encoding, a dense one of the wrong length, an integer) is
//!   `-WRONGTYPE Key is not a valid HyperLogLog string value.`; a sparse code that does not add
//!   up to 16384 registers is found only when used, and answers `-INVALIDOBJ Corrupted HLL object
//!   detected`.
//! - **Where Redis writes, we write.** PFADD, PFMERGE, PFDEBUG and single-key PFCOUNT (which
//!   stores the cardinality it computed) take the value for writing, which also makes it `raw`
//!   (an HLL set with SET may be `embstr`); PFCOUNT of several keys and PFMERGE's sources only
//!   read. Taking it for writing turns the value into [`Value::Hll`], which keeps a dense HLL's
//!   register histogram so that PFCOUNT after PFADD is cheap.
//! - **Replies.** PFADD answers 1 when any register changed or the key was created; PFCOUNT of
//!   several keys counts their union without touching them; PFMERGE's result is dense when any
//!   source is dense, else sparse through the same register-by-register updates Redis makes.

use crate::base::config::event_class::STRING;
use bytes::Bytes;
use embedis_datatypes::hll::{self, Corrupt, Encoding, Hll, REGISTERS};
use rand::Rng;

use crate::base::cstr::c_str;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, KeySpec};
use crate::kernel::table::{Acl, CommandSpec, Flags};

const NOT_AN_HLL: Error = Error::msg("WRONGTYPE Key is not a valid HyperLogLog string value.");
const CORRUPT: Error = Error::msg("INVALIDOBJ Corrupted HLL object detected");

impl From<Corrupt> for Error {
    fn from(_: Corrupt) -> Error {
        CORRUPT
    }
}

/// The HLL in `value`, taken for writing (Redis's `isHLLObjectOrReply` + `dbUnshareStringValue`):
/// a valid HLL string becomes a [`Value::Hll`] in place.
fn hll_for_write(value: &mut Value) -> CmdResult<&mut Hll> {
    if !value.is_string() {
        return Err(Error::WrongType);
    }
    if !matches!(value, Value::Hll(_)) {
        if matches!(value, Value::Int(_)) || !Hll::is_hll(&value.string_bytes().expect("string")) {
            return Err(NOT_AN_HLL);
        }
        let bytes = match std::mem::replace(value, Value::Int(0)) {
            Value::Raw(buffer) => *buffer,
            other => other.string_bytes().expect("string").into_owned(),
        };
        *value = Value::Hll(Box::new(
            Hll::from_bytes(bytes).expect("checked just above"),
        ));
    }
    match value {
        Value::Hll(hll) => Ok(hll),
        _ => unreachable!("made an HLL above"),
    }
}

/// Merges the HLL in `value` into `max` without taking it for writing; true if it is dense.
fn merge_for_read(value: &Value, max: &mut [u8; REGISTERS]) -> CmdResult<bool> {
    if let Value::Hll(hll) = value {
        hll.merge_into(max)?;
        return Ok(hll.encoding() == Encoding::Dense);
    }
    if !value.is_string() {
        return Err(Error::WrongType);
    }
    let bytes = value.string_bytes().expect("string");
    if matches!(value, Value::Int(_)) || !Hll::is_hll(&bytes) {
        return Err(NOT_AN_HLL);
    }
    hll::merge_bytes_into(&bytes, max)?;
    Ok(hll::encoding_of(&bytes) == Encoding::Dense)
}

fn pfadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let args: &[Bytes] = ctx.args;
    let sparse_max = ctx.server.config.encodings.hll_sparse_max_bytes;
    let mut updated = 0u64;
    if !ctx.ks.exists(db, key, now) {
        ctx.ks
            .add(db, key, Value::Hll(Box::new(Hll::new())), None, now);
        updated += 1;
    }
    let hll = hll_for_write(ctx.ks.write(db, key, now).expect("exists"))?;
    for element in &args[2..] {
        if hll.add(element, sparse_max)? {
            updated += 1;
        }
    }
    if updated > 0 {
        hll.invalidate_cache();
        ctx.ks.dirty += updated;
        ctx.notify(STRING, "pfadd", key);
    }
    ctx.out.integer((updated > 0) as i64);
    Ok(())
}

fn pfcount(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let args: &[Bytes] = ctx.args;
    if args.len() > 2 {
        // The union's cardinality: merged into one byte per register; no key changes.
        let mut max = Box::new([0u8; REGISTERS]);
        for key in &args[1..] {
            if let Some(value) = ctx.ks.read(db, key, now) {
                merge_for_read(value, &mut max)?;
            }
        }
        ctx.out.integer(hll::count_registers(&max) as i64);
        return Ok(());
    }
    let count = match ctx.ks.read(db, &args[1], now) {
        None => 0,
        Some(value) => {
            let (count, stored) = hll_for_write(value)?.count()?;
            if stored {
                // Caching the cardinality rewrites the value: Redis reports it modified.
                ctx.ks.dirty += 1;
                ctx.ks.touched(db, &args[1]);
            }
            count
        }
    };
    // Redis replies with the cached 64 bits as a signed integer.
    ctx.out.integer(count as i64);
    Ok(())
}

fn pfmerge(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, dest) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let args: &[Bytes] = ctx.args;
    let sparse_max = ctx.server.config.encodings.hll_sparse_max_bytes;
    // The destination is merged as a source too: its registers are kept.
    let mut max = Box::new([0u8; REGISTERS]);
    let mut use_dense = false;
    for key in &args[1..] {
        if let Some(value) = ctx.ks.read(db, key, now) {
            use_dense |= merge_for_read(value, &mut max)?;
        }
    }
    if !ctx.ks.exists(db, dest, now) {
        ctx.ks
            .add(db, dest, Value::Hll(Box::new(Hll::new())), None, now);
    }
    let hll = hll_for_write(ctx.ks.write(db, dest, now).expect("exists"))?;
    if use_dense {
        hll.to_dense()?;
    }
    hll.raise_all(&max, sparse_max);
    ctx.ks.dirty += 1;
    // Redis names a merge `pfadd` too: in effect, many elements were added.
    ctx.notify(STRING, "pfadd", dest);
    ctx.out.ok();
    Ok(())
}

fn pfdebug(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(2));
    let subcommand = ctx.arg(1);
    let Some(value) = ctx.ks.write(db, key, now) else {
        return Err(Error::msg("ERR The specified key does not exist"));
    };
    let hll = hll_for_write(value)?;
    let name = c_str(subcommand);
    // A conversion to dense counts as a write (Redis propagates it).
    let mut converted = false;
    if name.eq_ignore_ascii_case(b"getreg") {
        converted = hll.to_dense()?;
        let registers = hll.registers()?;
        ctx.out.array(registers.len());
        for r in registers {
            ctx.out.integer(r as i64);
        }
    } else if name.eq_ignore_ascii_case(b"decode") {
        let text = hll
            .decode_sparse()
            .ok_or(Error::msg("ERR HLL encoding is not sparse"))?;
        ctx.out.bulk(text.as_bytes());
    } else if name.eq_ignore_ascii_case(b"encoding") {
        ctx.out.simple(match hll.encoding() {
            Encoding::Dense => b"dense".as_slice(),
            Encoding::Sparse => b"sparse",
        });
    } else if name.eq_ignore_ascii_case(b"todense") {
        converted = hll.to_dense()?;
        ctx.out.integer(converted as i64);
    } else {
        // addReplyErrorFormat turns line breaks in the text into spaces.
        let shown: Vec<u8> = name
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        let mut line = b"ERR Unknown PFDEBUG subcommand '".to_vec();
        line.extend_from_slice(&shown);
        line.push(b'\'');
        return Err(Error::bytes(line));
    }
    ctx.ks.dirty += converted as u64;
    Ok(())
}

fn pfselftest(ctx: &mut Ctx<'_>) -> CmdResult {
    let sparse_max = ctx.server.config.encodings.hll_sparse_max_bytes;
    match hll::self_test(10_000_000, sparse_max, ctx.server.rng.gen()) {
        Ok(()) => ctx.out.ok(),
        Err(failure) => return Err(Error::owned(format!("TESTFAILED {failure}"))),
    }
    Ok(())
}

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("pfadd", -2, pfadd)
        .flags(Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST))
        .acl(Acl::HYPERLOGLOG)
        .keys(&[KeySpec::single(1, flag::RW | flag::INSERT)])
        .doc(
            "hyperloglog",
            "2.8.9",
            "O(1) to add every element.",
            "Adds elements to a HyperLogLog (creating it if needed); 1 if its estimate may have changed.",
            "key [element...]",
        ),
    CommandSpec::new("pfcount", -2, pfcount)
        // may_replicate (hidden, as in Redis): it may rewrite the key's cached cardinality.
        .flags(Flags::READONLY.union(Flags::MAY_REPLICATE))
        .acl(Acl::HYPERLOGLOG)
        .keys(&[KeySpec::range(1, -1, 1, flag::RW | flag::ACCESS).notes(
            "RW because it may change the internal representation of the key, and propagate to replicas",
        )])
        .doc(
            "hyperloglog",
            "2.8.9",
            "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
            "Estimates the number of distinct elements added to one HyperLogLog, or to the union of several.",
            "key...",
        ),
    CommandSpec::new("pfmerge", -2, pfmerge)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::HYPERLOGLOG)
        .keys(&[
            KeySpec::single(1, flag::RW | flag::ACCESS | flag::INSERT),
            KeySpec::range(2, -1, 1, flag::RO | flag::ACCESS),
        ])
        .doc(
            "hyperloglog",
            "2.8.9",
            "O(N) to merge N HyperLogLogs, but with high constant times.",
            "Merges HyperLogLogs into a destination, which keeps its own registers too.",
            "destkey sourcekey...",
        ),
    CommandSpec::new("pfdebug", 3, pfdebug)
        .flags(Flags::WRITE.union(Flags::DENYOOM).union(Flags::ADMIN))
        .acl(Acl::HYPERLOGLOG)
        .keys(&[KeySpec::single(2, flag::RW | flag::ACCESS)])
        .doc(
            "hyperloglog",
            "2.8.9",
            "N/A",
            "Internal commands for debugging HyperLogLog values.",
            "subcommand:string key",
        ),
    CommandSpec::new("pfselftest", 1, pfselftest)
        .flags(Flags::ADMIN)
        .acl(Acl::HYPERLOGLOG)
        .doc(
            "hyperloglog",
            "2.8.9",
            "N/A",
            "An internal command for testing HyperLogLog values.",
            "",
        ),
];
