//! MEMORY: what a key costs (USAGE) and the subcommands' help.
//!
//! Redis answers MEMORY USAGE from its allocator's view of each structure; embedis estimates the
//! same thing from its own layout: the key's bytes and a fixed per-key overhead (table entry and
//! object header), the packed bytes of compact encodings, and for the big encodings the average
//! size of up to `SAMPLES` elements (5 by default, 0 for all, as in Redis) times their number plus
//! a per-element overhead. The figure is approximate by nature, as Redis's is.

use crate::commands::common::write_help;
use crate::ctx::Ctx;
use crate::error::{CmdResult, Error};
use crate::keyspace::Access;
use crate::table::keys::{flag, KeySpec};
use crate::table::{Acl, CommandSpec, Flags};
use crate::value::{Object, Value};
use embedis_datatypes::hash::HashValue;
use embedis_datatypes::set::{Member, SetValue};
use embedis_datatypes::zset::ZSetValue;

const USAGE_KEY: &[KeySpec] = &[KeySpec::single(2, flag::RO)];

static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("help", 2, help)
        .flags(Flags::LOADING.union(Flags::STALE))
        .doc(
            "server",
            "4.0.0",
            "O(1)",
            "Lists the MEMORY subcommands.",
            "",
        ),
    CommandSpec::new("usage", -3, usage)
        .flags(Flags::READONLY)
        .keys(USAGE_KEY)
        .doc(
            "server",
            "4.0.0",
            "O(N) where N is the number of samples.",
            "Estimates the bytes a key and its value take in memory.",
            "key [SAMPLES count]",
        ),
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec::container("memory", SUBCOMMANDS)
    .acl(Acl::NONE)
    .doc(
        "server",
        "4.0.0",
        "Depends on subcommand.",
        "Container for the commands that report memory use.",
        "",
    )];

const HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "USAGE <key> [SAMPLES <count>]",
    "    Estimates the bytes used by <key> and its value. Big collections are",
    "    sampled up to <count> elements (default: 5, 0 means all of them).",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

/// Bytes of one key's table entry, object header and bookkeeping, whatever its value.
const KEY_OVERHEAD: usize = 48;
/// Bytes of bookkeeping per element of a big (table or skiplist) collection.
const ELEMENT_OVERHEAD: usize = 32;

fn usage(ctx: &mut Ctx<'_>) -> CmdResult {
    // Options as Redis reads them: SAMPLES <count> (the last one wins), anything else a syntax
    // error; a negative count is a syntax error too.
    let mut samples = 5usize;
    let mut i = 3;
    while i < ctx.argc() {
        if ctx.arg_is(i, "samples") && i + 1 < ctx.argc() {
            let n = ctx.int_arg(i + 1)?;
            if n < 0 {
                return Err(Error::Syntax);
            }
            samples = if n == 0 { usize::MAX } else { n as usize };
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let (db, now) = (ctx.db(), ctx.now_ms);
    let key = ctx.arg(2);
    let size = ctx
        .ks
        .lookup(db, key, now, Access::Inspect)
        .map(|obj| key.len() + KEY_OVERHEAD + value_size(obj, samples));
    match size {
        Some(size) => ctx.out.integer(size as i64),
        None => ctx.out.null(),
    }
    Ok(())
}

/// Estimated bytes of a value: exact for strings and packed encodings, sampled for the rest.
fn value_size(obj: &Object, samples: usize) -> usize {
    match &obj.value {
        Value::Int(_) => 0,
        Value::Str(s) => s.len(),
        Value::Raw(v) => v.capacity(),
        Value::Hll(_) => obj.value.string_len().unwrap_or(0),
        Value::List(list) => list.byte_size() + list.len().div_ceil(128) * ELEMENT_OVERHEAD,
        Value::Hash(HashValue::Packed(lp)) => lp.byte_size(),
        Value::Hash(hash) => sampled(
            hash.len(),
            samples,
            hash.iter().map(|(f, v)| f.len() + v.len()),
        ),
        Value::Set(SetValue::Ints(ints)) => ints.byte_size(),
        Value::Set(set) => sampled(
            set.len(),
            samples,
            set.iter().map(|m| match m {
                Member::Int(_) => 8,
                Member::Bytes(b) => b.len(),
            }),
        ),
        Value::ZSet(ZSetValue::Packed(p)) => p.byte_size(),
        Value::ZSet(zset) => sampled(
            zset.len(),
            samples,
            (0..zset.len()).filter_map(|rank| zset.by_rank(rank).map(|(m, _)| m.len() + 8)),
        ),
    }
}

/// `len` elements whose sizes the first `samples` of `sizes` stand for, each with its overhead.
fn sampled(len: usize, samples: usize, sizes: impl Iterator<Item = usize>) -> usize {
    let (mut total, mut seen) = (0usize, 0usize);
    for size in sizes.take(samples) {
        total += size;
        seen += 1;
    }
    if seen == 0 {
        return 0;
    }
    total / seen * len + len * ELEMENT_OVERHEAD
}
