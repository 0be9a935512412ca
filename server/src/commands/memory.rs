//! The MEMORY container: USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE and HELP.
//!
//! Our values are not laid out as Redis's, so MEMORY USAGE cannot measure what Redis would
//! allocate by looking at our heap. Instead it estimates what Redis 7.0 (64-bit, jemalloc)
//! would allocate for the same value in the same encoding, by the rules of Redis's
//! `objectComputeSize`: the object header, the key's sds and its dict entry, and for collections
//! the structure plus the average of up to SAMPLES sampled elements (or nodes) times their
//! number. Sizes go through jemalloc's size classes, so small values match Redis to the byte and
//! big ones come close; tools that compare keys by MEMORY USAGE (and Redis's tests, which only
//! ask for a positive figure) see the same proportions. STATS keeps Redis's reply shape (the
//! same fields in the same order, a nested map per non-empty database) with our own figures.

use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::{Object, Value};
use crate::commands::common::write_help;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::Access;
use embedis_datatypes::hash::{HashValue, View};
use embedis_datatypes::listpack::{redis_entry_size, REDIS_OVERHEAD};
use embedis_datatypes::set::SetValue;
use embedis_datatypes::stream::{radix_tree_nodes, StreamId};
use embedis_datatypes::zset::ZSetValue;
use embedis_protocol::number::parse_i64;

/// Redis's default number of sampled elements (`OBJ_COMPUTE_SIZE_DEF_SAMPLES`).
const DEFAULT_SAMPLES: usize = 5;

/// Sizes of Redis's structures on a 64-bit build.
const ROBJ: usize = 16;
const DICT_ENTRY: usize = 24;
const DICT: usize = 56;
const QUICKLIST: usize = 40;
const QUICKLIST_NODE: usize = 40;
const ZSET: usize = 16;
const ZSKIPLIST: usize = 32;
/// A skiplist's header node: 24 bytes plus 32 levels of 16.
const ZSKIPLIST_HEADER: usize = 24 + 32 * 16;

fn memory_usage(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut samples = DEFAULT_SAMPLES;
    let mut i = 3;
    while i < ctx.argc() {
        if word_is(ctx.arg(i), "samples") && i + 1 < ctx.argc() {
            let n = parse_i64(ctx.arg(i + 1)).ok_or(Error::NotInteger)?;
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
    let key_len = ctx.arg(2).len();
    // Redis preallocates a stream node's listpack at 4 KB, or `stream-node-max-bytes` if smaller.
    let stream_prealloc = match ctx.server.config.encodings.stream_node_max_bytes {
        0 => 4096,
        n => n.min(4096) as usize,
    };
    let usage = ctx
        .ks
        .lookup(db, ctx.arg(2), now, Access::NoTouch)
        .map(|object| match &object.value {
            // Only Redis 8 has vector sets, and it keeps the key in the object.
            Value::VectorSet(set) => {
                crate::commands::vsets::memory::usage(set, key_len, object.has_expire())
            }
            _ => object_size(object, samples, stream_prealloc) + sds_size(key_len) + DICT_ENTRY,
        });
    match usage {
        Some(bytes) => ctx.out.integer(bytes as i64),
        None => ctx.out.null(),
    }
    Ok(())
}

/// The size class jemalloc serves a request of `n` bytes from: 8, then multiples of 16 up to
/// 128, then four classes per doubling.
fn malloc_size(n: usize) -> usize {
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return n.div_ceil(16) * 16;
    }
    let k = usize::BITS - 1 - (n - 1).leading_zeros();
    let step = 1usize << (k - 2);
    n.div_ceil(step) * step
}

/// The allocation of an sds string of `len` bytes created at its exact length: the smallest
/// header that can hold the length (1 byte below 32 bytes, except the empty string, then 3, 5,
/// 9 or 17), the bytes and the terminating NUL.
fn sds_size(len: usize) -> usize {
    let header = match len {
        1..=31 => 1,
        0 | 32..=255 => 3,
        256..=65_535 => 5,
        _ if len as u64 <= u32::MAX as u64 => 9,
        _ => 17,
    };
    malloc_size(header + len + 1)
}

/// An estimate of one sampled-element cost times the number of elements, as Redis averages.
fn extrapolate(total: usize, sampled: usize, len: usize) -> usize {
    if sampled == 0 {
        0
    } else {
        (total as f64 / sampled as f64 * len as f64) as usize
    }
}

/// Slots of a dict holding `len` entries that grew by doubling from 4.
fn dict_slots(len: usize) -> usize {
    len.next_power_of_two().max(4)
}

/// A hash's size as Redis would report it, in each of its forms.
fn hash_size(hash: &HashValue, samples: usize) -> usize {
    match hash.view() {
        View::Packed(_) => {
            let entries: usize = hash
                .iter()
                .map(|(f, v)| redis_entry_size(f) + redis_entry_size(v))
                .sum();
            ROBJ + malloc_size(REDIS_OVERHEAD + entries)
        }
        View::Table(table) => {
            let mut total = 0;
            let mut sampled = 0;
            for (field, value) in table.iter().take(samples) {
                total += DICT_ENTRY + sds_size(field.len()) + sds_size(value.len());
                sampled += 1;
            }
            ROBJ + DICT + 8 * table.buckets() + extrapolate(total, sampled, table.len())
        }
        // The body as a plain hash would cost, plus a deadline per field that has one (Redis
        // keeps 8 bytes per field in a listpackex, and an expiry entry per field in a table).
        View::Volatile(v) => hash_size(&v.body, samples) + 16 * v.ttls.len(),
    }
}

fn object_size(object: &Object, samples: usize, stream_prealloc: usize) -> usize {
    if let Value::Hash(hash) = &object.value {
        return hash_size(hash, samples);
    }
    match &object.value {
        Value::Int(_) => ROBJ,
        // An embstr is one allocation: the object, an 8-bit sds header, the bytes and a NUL.
        Value::Str(s) if s.len() <= 44 => malloc_size(ROBJ + 3 + s.len() + 1),
        Value::Str(s) => ROBJ + sds_size(s.len()),
        Value::Raw(bytes) => ROBJ + sds_size(bytes.capacity().max(bytes.len())),
        Value::Hll(_) => ROBJ + sds_size(object.value.string_len().unwrap_or(0)),
        Value::List(list) => {
            let mut total = 0;
            let mut sampled = 0;
            for size in list.node_listpack_sizes().take(samples.max(1)) {
                total += QUICKLIST_NODE + malloc_size(size);
                sampled += 1;
            }
            ROBJ + QUICKLIST + extrapolate(total, sampled, list.node_count())
        }
        Value::Set(SetValue::Ints(ints)) => ROBJ + malloc_size(8 + ints.byte_size()),
        Value::Set(SetValue::Pack(pack)) => {
            let entries: usize = pack.iter().map(redis_entry_size).sum();
            ROBJ + malloc_size(REDIS_OVERHEAD + entries)
        }
        Value::Set(SetValue::Table(table)) => {
            let mut total = 0;
            let mut sampled = 0;
            for (member, _) in table.iter().take(samples) {
                total += DICT_ENTRY + sds_size(member.len());
                sampled += 1;
            }
            ROBJ + DICT + 8 * table.buckets() + extrapolate(total, sampled, table.len())
        }
        Value::Stream(stream) => stream_size(stream, samples, stream_prealloc),
        // (The caller adds the key as Redis 8 keeps it.)
        Value::VectorSet(set) => crate::commands::vsets::memory::module_estimate(set),
        Value::Hash(_) => unreachable!("measured above"),
        Value::ZSet(z @ ZSetValue::Packed(_)) => {
            let mut entries = 0;
            z.for_each_in_ranks(0, z.len().saturating_sub(1), false, |member, score| {
                entries +=
                    redis_entry_size(member) + redis_entry_size(score_text(score).as_bytes());
            });
            ROBJ + malloc_size(REDIS_OVERHEAD + entries)
        }
        Value::ZSet(z) => {
            let mut total = 0;
            let mut sampled = 0;
            let len = z.len();
            z.for_each_in_ranks(0, len.min(samples).saturating_sub(1), false, |member, _| {
                // A node of one level (the commonest): 24 bytes and one 16-byte level.
                total += sds_size(member.len()) + DICT_ENTRY + malloc_size(24 + 16);
                sampled += 1;
            });
            ROBJ + ZSET
                + ZSKIPLIST
                + DICT
                + 8 * dict_slots(len)
                + malloc_size(ZSKIPLIST_HEADER)
                + extrapolate(total, sampled, len)
        }
    }
}

/// Redis's estimate for a stream: the object and stream headers; its radix tree (16 bytes per
/// key, and per tree node a 4-byte header plus Redis's allowance of 30 words); the listpacks, the
/// first `samples` measured and the rest extrapolated from their average, the last one at its
/// allocated size (Redis allocates a new node's listpack at `prealloc` bytes up front and shrinks
/// it only when the node is full); and each group's header, PEL and consumers.
fn stream_size(
    stream: &embedis_datatypes::stream::Stream,
    samples: usize,
    prealloc: usize,
) -> usize {
    const STREAM: usize = 80;
    const RAX_KEY: usize = 16;
    const RAX_NODE: usize = 4 + 8 * 30;
    const GROUP: usize = 40;
    const NACK: usize = 24;
    const CONSUMER: usize = 24;
    let nodes = stream.node_count();
    let mut size = ROBJ + STREAM + nodes * RAX_KEY + stream.radix_tree_nodes() * RAX_NODE;
    let sizes: Vec<usize> = stream.node_redis_bytes().collect();
    let allocated = |index: usize| {
        let bytes = sizes[index];
        malloc_size(if index + 1 == nodes {
            bytes.max(prealloc)
        } else {
            bytes
        })
    };
    let sampled = nodes.min(samples.max(1));
    let measured: usize = (0..sampled).map(allocated).sum();
    size += if nodes <= sampled {
        measured
    } else {
        measured / sampled * (nodes - 1) + allocated(nodes - 1)
    };
    // A PEL is a radix tree too, counted the same way.
    let pel_tree = |ids: &mut dyn Iterator<Item = StreamId>| {
        let mut keys = 0;
        let nodes = radix_tree_nodes(ids.inspect(|_| keys += 1));
        keys * RAX_KEY + nodes * RAX_NODE
    };
    for group in stream.groups.values() {
        size += GROUP + pel_tree(&mut group.pel.keys().copied()) + group.pel.len() * NACK;
        for (name, consumer) in &group.consumers {
            size += CONSUMER + name.len() + pel_tree(&mut consumer.pending.iter().copied());
        }
    }
    size
}

/// A score as a listpack holds it: an integer when it is one, else 17 significant digits.
fn score_text(score: f64) -> String {
    if score.fract() == 0.0 && score.abs() < (1u64 << 53) as f64 {
        format!("{}", score as i64)
    } else {
        // `%.17g`'s length: 17 significant digits less trailing zeros (the exponent form,
        // rare for scores, is not reproduced).
        let text = format!("{score:.16e}");
        let mantissa = text.split('e').next().unwrap_or("");
        mantissa.trim_end_matches('0').to_string()
    }
}

/// Redis's reply shape: a map of 27 figures plus one nested map per non-empty database.
fn memory_stats(ctx: &mut Ctx<'_>) -> CmdResult {
    let used = ctx.server.eviction.used_memory(ctx.ks);
    let peak = ctx.server.memory_peak.max(used);
    let startup = ctx.server.memory_startup.min(used);
    let dbs: Vec<(usize, usize, usize)> = ctx
        .ks
        .dbs
        .iter()
        .enumerate()
        .filter(|(_, db)| !db.main.is_empty())
        .map(|(i, db)| (i, db.main.buckets(), db.expires.buckets()))
        .collect();
    let keys: usize = ctx.ks.dbs.iter().map(|db| db.main.len()).sum();
    let overhead_dbs: usize = dbs
        .iter()
        .map(|&(_, main, expires)| main * 8 + expires * 8)
        .sum();
    let overhead = startup as usize + overhead_dbs;
    let dataset = (used as usize).saturating_sub(overhead);
    let net = (used - startup) as usize;
    let out = &mut ctx.out;
    out.map(27 + dbs.len());
    let figure = |out: &mut embedis_protocol::Writer<'_>, name: &str, n: u64| {
        out.bulk(name.as_bytes());
        out.integer(n as i64);
    };
    figure(out, "peak.allocated", peak);
    figure(out, "total.allocated", used);
    figure(out, "startup.allocated", startup);
    for name in [
        "replication.backlog",
        "clients.slaves",
        "clients.normal",
        "cluster.links",
        "aof.buffer",
        "lua.caches",
        "functions.caches",
    ] {
        figure(out, name, 0);
    }
    for &(i, main, expires) in &dbs {
        out.bulk(format!("db.{i}").as_bytes());
        out.map(3);
        figure(out, "overhead.hashtable.main", (main * 8) as u64);
        figure(out, "overhead.hashtable.expires", (expires * 8) as u64);
        figure(out, "overhead.hashtable.slot-to-keys", 0);
    }
    figure(out, "overhead.total", overhead as u64);
    figure(out, "keys.count", keys as u64);
    figure(
        out,
        "keys.bytes-per-key",
        net.checked_div(keys).unwrap_or(0) as u64,
    );
    figure(out, "dataset.bytes", dataset as u64);
    let percent = |part: f64, whole: f64| {
        if whole > 0.0 {
            part * 100.0 / whole
        } else {
            0.0
        }
    };
    out.bulk(b"dataset.percentage");
    out.double(percent(dataset as f64, net as f64));
    out.bulk(b"peak.percentage");
    out.double(percent(used as f64, peak as f64));
    figure(out, "allocator.allocated", used);
    figure(out, "allocator.active", used);
    figure(out, "allocator.resident", used);
    for (ratio, bytes) in [
        (
            "allocator-fragmentation.ratio",
            "allocator-fragmentation.bytes",
        ),
        ("allocator-rss.ratio", "allocator-rss.bytes"),
        ("rss-overhead.ratio", "rss-overhead.bytes"),
        ("fragmentation", "fragmentation.bytes"),
    ] {
        out.bulk(ratio.as_bytes());
        out.double(1.0);
        figure(out, bytes, 0);
    }
    Ok(())
}

/// Redis's doctor only speaks once the instance holds 5 MB; below that it says it has nothing
/// to go on, and so do we (in our own words).
fn memory_doctor(ctx: &mut Ctx<'_>) -> CmdResult {
    let used = ctx.server.eviction.used_memory(ctx.ks);
    let text: &[u8] = if used < 5 * 1024 * 1024 {
        b"This instance is empty or uses very little memory, so there is nothing to diagnose yet. Fill it with some data and ask again."
    } else {
        b"No memory problems detected."
    };
    ctx.out.verbatim(b"txt", text);
    Ok(())
}

/// Redis answers this with text when it is not built with jemalloc; so do we.
fn memory_malloc_stats(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out
        .verbatim(b"txt", b"Stats not supported for the current allocator");
    Ok(())
}

fn memory_purge(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.ok();
    Ok(())
}

fn memory_help(ctx: &mut Ctx<'_>) -> CmdResult {
    write_help(
        ctx,
        &[
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Reports memory problems, in words.",
            "MALLOC-STATS",
            "    Reports the memory allocator's internal statistics.",
            "PURGE",
            "    Asks the allocator to give unused memory back to the system.",
            "STATS",
            "    Reports how the server's memory is used.",
            "USAGE <key> [SAMPLES <count>]",
            "    Estimates the bytes <key> and its value take. Collections are sampled",
            "    up to <count> elements (5 by default; 0 samples them all).",
            "HELP",
            "    Prints this help.",
        ],
    );
    Ok(())
}

const ALL_SHARDS_SPECIAL: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_shards",
    "response_policy:special",
];

const SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("help", 2, memory_help)
        .flags(Flags::LOADING.union(Flags::STALE))
        .acl(Acl::NONE)
        .doc(
            "server",
            "4.0.0",
            "O(1)",
            "Lists the MEMORY subcommands.",
            "",
        ),
    CommandSpec::new("doctor", 2, memory_doctor)
        .acl(Acl::NONE)
        .tips(ALL_SHARDS_SPECIAL)
        .doc(
            "server",
            "4.0.0",
            "O(1)",
            "Reports memory problems the server sees, in words.",
            "",
        ),
    CommandSpec::new("usage", -3, memory_usage)
        .flags(Flags::READONLY)
        .acl(Acl::READ)
        .keys(&[KeySpec::single(2, flag::RO)])
        .doc(
            "server",
            "4.0.0",
            "O(N) where N is the number of samples.",
            "Estimates the bytes a key and its value take.",
            "key [SAMPLES count:integer]",
        ),
    CommandSpec::new("malloc-stats", 2, memory_malloc_stats)
        .acl(Acl::NONE)
        .tips(ALL_SHARDS_SPECIAL)
        .doc(
            "server",
            "4.0.0",
            "Depends on how much memory is allocated, could be slow",
            "Reports the memory allocator's internal statistics.",
            "",
        ),
    CommandSpec::new("purge", 2, memory_purge)
        .acl(Acl::NONE)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .doc(
            "server",
            "4.0.0",
            "Depends on how much memory is allocated, could be slow",
            "Asks the allocator to give unused memory back to the system.",
            "",
        ),
    CommandSpec::new("stats", 2, memory_stats)
        .acl(Acl::NONE)
        .tips(ALL_SHARDS_SPECIAL)
        .doc(
            "server",
            "4.0.0",
            "O(1)",
            "Reports how the server's memory is used, as a map of figures.",
            "",
        ),
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec::container("memory", SUBCOMMANDS).doc(
    "server",
    "4.0.0",
    "Depends on the subcommand.",
    "Container for commands that report on memory.",
    "",
)];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jemalloc_size_classes() {
        let cases = [
            (1, 8),
            (8, 8),
            (9, 16),
            (25, 32),
            (104, 112),
            (129, 160),
            (536, 640),
            (4097, 5120),
        ];
        for (n, class) in cases {
            assert_eq!(malloc_size(n), class, "{n}");
        }
        assert_eq!(sds_size(1), 8);
        assert_eq!(sds_size(0), 8);
        assert_eq!(sds_size(100), 112);
    }
}
