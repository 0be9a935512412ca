//! The consumer groups' commands: XGROUP (CREATE, CREATECONSUMER, DELCONSUMER, DESTROY, SETID),
//! and the pending entries' XACK, XPENDING, XCLAIM and XAUTOCLAIM.

use bytes::Bytes;
use embedis_datatypes::stream::{ConsumerGroup, Stream, StreamId, ENTRIES_READ_UNKNOWN};
use embedis_protocol::number::parse_i64;

use crate::base::config::event_class::STREAM;
use crate::base::cstr::{c_str, word_is};
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::commands::common::write_help;
use crate::kernel::ctx::Ctx;

use super::{
    id_bytes, parse_bound, parse_id_with, parse_strict_id, quoted_error, read_stream,
    setid_propagation, stream_at, stream_of, subcommand_syntax_error, write_entry, write_id,
    xclaim_propagation, IdRules,
};

// ---------------------------------------------------------------------------------------------
// XGROUP
// ---------------------------------------------------------------------------------------------

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

/// What XGROUP's options (from argument 5 on) say: CREATE's MKSTREAM, and ENTRIESREAD for CREATE
/// and SETID.
struct GroupOptions {
    mkstream: bool,
    entries_read: i64,
}

pub(super) fn xgroup(ctx: &mut Ctx<'_>) -> CmdResult {
    let argc = ctx.argc();
    let sub = ctx.arg(1);
    if argc == 2 && word_is(sub, "help") {
        write_help(ctx, XGROUP_HELP);
        return Ok(());
    }
    let create = word_is(sub, "create");
    let setid = word_is(sub, "setid");
    let options = parse_group_options(ctx, create, setid)?;
    let needs_group = setid || word_is(sub, "createconsumer") || word_is(sub, "delconsumer");
    let exists = group_key_exists(ctx, options.mkstream, needs_group)?;
    if create && (5..=8).contains(&argc) {
        xgroup_create(ctx, exists, options.entries_read)
    } else if setid && (argc == 5 || argc == 7) {
        xgroup_setid(ctx, options.entries_read)
    } else if word_is(sub, "destroy") && argc == 4 {
        xgroup_destroy(ctx)
    } else if word_is(sub, "createconsumer") && argc == 5 {
        xgroup_createconsumer(ctx)
    } else if word_is(sub, "delconsumer") && argc == 5 {
        xgroup_delconsumer(ctx)
    } else {
        Err(subcommand_syntax_error(ctx, "XGROUP"))
    }
}

/// Reads XGROUP's options before the key is looked at, as Redis does: a word the subcommand does
/// not take is its syntax error.
fn parse_group_options(ctx: &Ctx<'_>, create: bool, setid: bool) -> CmdResult<GroupOptions> {
    let argc = ctx.argc();
    let mut mkstream = false;
    let mut entries_read = ENTRIES_READ_UNKNOWN;
    let mut i = 5;
    while i < argc {
        if create && word_is(ctx.arg(i), "mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && word_is(ctx.arg(i), "entriesread") && i + 1 < argc {
            entries_read = parse_i64(ctx.arg(i + 1)).ok_or(Error::NotInteger)?;
            if entries_read < 0 && entries_read != ENTRIES_READ_UNKNOWN {
                return Err(Error::msg(
                    "ERR value for ENTRIESREAD must be positive or -1",
                ));
            }
            i += 2;
        } else {
            return Err(subcommand_syntax_error(ctx, "XGROUP"));
        }
    }
    Ok(GroupOptions {
        mkstream,
        entries_read,
    })
}

/// Whether XGROUP's key holds a stream (WRONGTYPE if it holds something else), after Redis's
/// checks: the key must exist unless MKSTREAM is given, and the group must exist for the
/// subcommands that name one (`needs_group`).
fn group_key_exists(ctx: &mut Ctx<'_>, mkstream: bool, needs_group: bool) -> CmdResult<bool> {
    let (db, now, key, name) = (ctx.db(), ctx.now_ms, ctx.arg(2), ctx.arg(3));
    let exists = match ctx.ks.write(db, key, now) {
        Some(value) => {
            stream_of(value)?;
            true
        }
        None => false,
    };
    if exists {
        // Redis signals no modification for group changes (WATCH and client tracking do not
        // see them); only a stream created by MKSTREAM is one.
        ctx.ks.unnote_write(db, key);
    }
    if !mkstream && !exists {
        return Err(Error::msg("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."));
    }
    if exists && needs_group {
        let has = stream_at(ctx.ks, ctx.db(), key, ctx.now_ms)
            .groups
            .contains_key(name);
        if !has {
            return Err(quoted_error(&[
                b"NOGROUP No such consumer group '",
                c_str(name),
                b"' for key name '",
                c_str(key),
                b"'",
            ]));
        }
    }
    Ok(exists)
}

/// XGROUP CREATE: the group reading from an ID (`$` for the stream's last one), the stream
/// created first with MKSTREAM.
fn xgroup_create(ctx: &mut Ctx<'_>, exists: bool, entries_read: i64) -> CmdResult {
    let (db, now, key, name) = (ctx.db(), ctx.now_ms, ctx.arg(2), ctx.arg(3));
    let id = if c_str(ctx.arg(4)) == b"$" {
        if exists {
            stream_at(ctx.ks, ctx.db(), key, ctx.now_ms).last_id
        } else {
            StreamId::MIN
        }
    } else {
        parse_strict_id(ctx.arg(4))?
    };
    if !exists {
        ctx.ks
            .add(db, key, Value::Stream(Box::new(Stream::new())), None, now);
        // The key's creation is not a change of its own here: the group's is counted.
        ctx.ks.dirty -= 1;
        ctx.publish_events();
    }
    let stream = stream_at(ctx.ks, ctx.db(), key, ctx.now_ms);
    if stream.groups.contains_key(name) {
        return Err(Error::msg("BUSYGROUP Consumer Group name already exists"));
    }
    stream
        .groups
        .insert(name.into(), ConsumerGroup::new(id, entries_read));
    ctx.out.ok();
    ctx.ks.dirty += 1;
    ctx.notify(STREAM, "xgroup-create", key);
    Ok(())
}

/// XGROUP SETID: the group's last delivered ID (`$` for the stream's last one) and its
/// entries-read counter.
fn xgroup_setid(ctx: &mut Ctx<'_>, entries_read: i64) -> CmdResult {
    let (key, name) = (ctx.arg(2), ctx.arg(3));
    let id = if c_str(ctx.arg(4)) == b"$" {
        stream_at(ctx.ks, ctx.db(), key, ctx.now_ms).last_id
    } else {
        parse_id_with(
            ctx.arg(4),
            IdRules {
                missing_seq: 0,
                strict: false,
                seq_star: false,
            },
        )?
        .0
    };
    let group = stream_at(ctx.ks, ctx.db(), key, ctx.now_ms)
        .groups
        .get_mut(name)
        .expect("checked above");
    group.last_id = id;
    group.entries_read = entries_read;
    ctx.out.ok();
    ctx.ks.dirty += 1;
    ctx.notify(STREAM, "xgroup-setid", key);
    Ok(())
}

/// XGROUP DESTROY: 1 if the group existed, 0 if not.
fn xgroup_destroy(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, name) = (ctx.arg(2), ctx.arg(3));
    if stream_at(ctx.ks, ctx.db(), key, ctx.now_ms)
        .groups
        .remove(name)
        .is_some()
    {
        ctx.out.integer(1);
        ctx.ks.dirty += 1;
        ctx.notify(STREAM, "xgroup-destroy", key);
    } else {
        ctx.out.integer(0);
    }
    Ok(())
}

/// XGROUP CREATECONSUMER: 1 if the consumer is new, 0 if it existed.
fn xgroup_createconsumer(ctx: &mut Ctx<'_>) -> CmdResult {
    let (now, key, name) = (ctx.now_ms, ctx.arg(2), ctx.arg(3));
    let consumer = ctx.arg(4);
    let group = stream_at(ctx.ks, ctx.db(), key, ctx.now_ms)
        .groups
        .get_mut(name)
        .expect("checked");
    let (_, created) = group.consumer_or_create(consumer, now);
    if created {
        ctx.ks.dirty += 1;
        ctx.notify(STREAM, "xgroup-createconsumer", key);
    }
    ctx.out.integer(i64::from(created));
    Ok(())
}

/// XGROUP DELCONSUMER: how many entries the consumer had pending (0 if it did not exist).
fn xgroup_delconsumer(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, name) = (ctx.arg(2), ctx.arg(3));
    let consumer = ctx.arg(4);
    let group = stream_at(ctx.ks, ctx.db(), key, ctx.now_ms)
        .groups
        .get_mut(name)
        .expect("checked");
    match group.delete_consumer(consumer) {
        Some(pending) => {
            ctx.ks.dirty += 1;
            ctx.notify(STREAM, "xgroup-delconsumer", key);
            ctx.out.integer(pending as i64);
        }
        None => ctx.out.integer(0),
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// XACK, XPENDING, XCLAIM, XAUTOCLAIM
// ---------------------------------------------------------------------------------------------

pub(super) fn xack(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, name) = (ctx.arg(1), ctx.arg(2));
    let args: &[Bytes] = ctx.args;
    let Some(stream) = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)? else {
        ctx.out.integer(0);
        return Ok(());
    };
    let Some(group) = stream.groups.get_mut(name) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let ids = args[3..]
        .iter()
        .map(|a| parse_strict_id(a))
        .collect::<CmdResult<Vec<StreamId>>>()?;
    let acked = ids.iter().filter(|&&id| group.ack(id)).count();
    ctx.ks.dirty += acked as u64;
    ctx.out.integer(acked as i64);
    Ok(())
}

fn nokey_or_group(key: &[u8], group: &[u8]) -> Error {
    quoted_error(&[
        b"NOGROUP No such key '",
        c_str(key),
        b"' or consumer group '",
        c_str(group),
        b"'",
    ])
}

pub(super) fn xpending(ctx: &mut Ctx<'_>) -> CmdResult {
    let argc = ctx.argc();
    let summary = argc == 3;
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(Error::Syntax);
    }
    let mut range = None;
    let mut min_idle = 0i64;
    let mut consumer_name = None;
    if argc >= 6 {
        let mut at = 3;
        if word_is(ctx.arg(3), "idle") {
            min_idle = parse_i64(ctx.arg(4)).ok_or(Error::NotInteger)?;
            if argc < 8 {
                return Err(Error::Syntax);
            }
            at += 2;
        }
        let count = parse_i64(ctx.arg(at + 2)).ok_or(Error::NotInteger)?.max(0);
        let start = parse_bound(ctx.arg(at), true)?;
        let end = parse_bound(ctx.arg(at + 1), false)?;
        if at + 3 < argc {
            consumer_name = Some(ctx.arg(at + 3));
        }
        range = Some((start, end, count as usize));
    }
    let (key, name, now) = (ctx.arg(1), ctx.arg(2), ctx.now_ms);
    let stream = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)?;
    let Some(group) = stream.and_then(|s| s.groups.get(name)) else {
        return Err(nokey_or_group(key, name));
    };
    let out = &mut ctx.out;
    let Some((start, end, count)) = range.filter(|_| !summary) else {
        out.array(4);
        out.integer(group.pel.len() as i64);
        match (group.pel.keys().next(), group.pel.keys().next_back()) {
            (Some(&first), Some(&last)) => {
                write_id(out, first);
                write_id(out, last);
                let owners: Vec<(&[u8], usize)> = group
                    .consumers
                    .iter()
                    .filter(|(_, c)| !c.pending.is_empty())
                    .map(|(n, c)| (&n[..], c.pending.len()))
                    .collect();
                out.array(owners.len());
                for (owner, n) in owners {
                    out.array(2);
                    out.bulk(owner);
                    out.bulk_integer(n as i64);
                }
            }
            _ => {
                out.null();
                out.null();
                out.null_array();
            }
        }
        return Ok(());
    };
    let ids: Vec<StreamId> = match consumer_name {
        Some(consumer) => match group.consumers.get(consumer) {
            Some(c) if start <= end => c.pending.range(start..=end).copied().collect(),
            Some(_) => Vec::new(),
            None => {
                out.array(0);
                return Ok(());
            }
        },
        None if start <= end => group.pel.range(start..=end).map(|(id, _)| *id).collect(),
        None => Vec::new(),
    };
    let rows: Vec<(StreamId, &[u8], i64, u64)> = ids
        .iter()
        .filter_map(|id| {
            let pending = &group.pel[id];
            let idle = now - pending.delivery_time;
            (min_idle == 0 || idle >= min_idle).then_some((
                *id,
                &pending.consumer[..],
                idle.max(0),
                pending.delivery_count,
            ))
        })
        .take(count)
        .collect();
    out.array(rows.len());
    for (id, owner, idle, deliveries) in rows {
        out.array(4);
        write_id(out, id);
        out.bulk(owner);
        out.integer(idle);
        out.integer(deliveries as i64);
    }
    Ok(())
}

/// What XCLAIM's arguments after the group's check say: the IDs (each with its argument's index,
/// propagated as given) and the options that follow them.
struct ClaimArgs {
    min_idle: i64,
    ids: Vec<(StreamId, usize)>,
    force: bool,
    justid: bool,
    /// The delivery time to give the claimed entries (IDLE or TIME, clamped to now; now by
    /// default).
    delivery_time: i64,
    retry_count: Option<i64>,
    last_id: StreamId,
}

pub(super) fn xclaim(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, name) = (ctx.arg(1), ctx.arg(2));
    {
        let stream = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)?;
        if !stream.is_some_and(|s| s.groups.contains_key(name)) {
            return Err(nokey_or_group(key, name));
        }
    }
    let min_idle = parse_i64(ctx.arg(4))
        .ok_or(Error::msg("ERR Invalid min-idle-time argument for XCLAIM"))?
        .max(0);
    ctx.prevent_propagation();
    let propagating = ctx.ks.stream.is_on();
    let claim = parse_claim(ctx, min_idle)?;
    let now = ctx.now_ms;
    let stream = stream_at(ctx.ks, ctx.db(), key, ctx.now_ms);
    let outcome = claim_entries(ctx.args, stream, &claim, now, propagating);
    let mut dirty = outcome.dirty;
    let db = ctx.db();
    for op in outcome.ops {
        ctx.ks.stream.also(db, op);
    }
    ctx.out.array(outcome.claimed.len());
    // The consumer is created with the first claim, before its entry is written.
    if outcome.consumer_created {
        dirty += 1;
        ctx.notify(STREAM, "xgroup-createconsumer", key);
    }
    write_claimed(ctx, key, &outcome.claimed, claim.justid);
    ctx.ks.dirty += dirty;
    Ok(())
}

/// Reads XCLAIM's IDs (up to the first argument that is not one) and then its options, in order.
fn parse_claim(ctx: &Ctx<'_>, min_idle: i64) -> CmdResult<ClaimArgs> {
    let argc = ctx.argc();
    let now = ctx.now_ms;
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argc {
        match parse_strict_id(ctx.arg(j)) {
            Ok(id) => ids.push((id, j)),
            Err(_) => break,
        }
        j += 1;
    }
    let mut force = false;
    let mut justid = false;
    let mut delivery_time: Option<i64> = None;
    let mut retry_count: Option<i64> = None;
    let mut last_id = StreamId::MIN;
    while j < argc {
        let more = argc - 1 - j;
        let opt = ctx.arg(j);
        if word_is(opt, "force") {
            force = true;
        } else if word_is(opt, "justid") {
            justid = true;
        } else if word_is(opt, "idle") && more > 0 {
            j += 1;
            let idle = parse_i64(ctx.arg(j))
                .ok_or(Error::msg("ERR Invalid IDLE option argument for XCLAIM"))?;
            delivery_time = Some(now.wrapping_sub(idle));
        } else if word_is(opt, "time") && more > 0 {
            j += 1;
            delivery_time = Some(
                parse_i64(ctx.arg(j))
                    .ok_or(Error::msg("ERR Invalid TIME option argument for XCLAIM"))?,
            );
        } else if word_is(opt, "retrycount") && more > 0 {
            j += 1;
            retry_count = Some(parse_i64(ctx.arg(j)).ok_or(Error::msg(
                "ERR Invalid RETRYCOUNT option argument for XCLAIM",
            ))?);
        } else if word_is(opt, "lastid") && more > 0 {
            j += 1;
            last_id = parse_strict_id(ctx.arg(j))?;
        } else {
            let mut line = b"ERR Unrecognized XCLAIM option '".to_vec();
            line.extend_from_slice(c_str(opt));
            line.push(b'\'');
            return Err(quoted_error(&[&line]));
        }
        j += 1;
    }
    let delivery_time = match delivery_time {
        Some(t) if t < 0 || t > now => now,
        Some(t) => t,
        None => now,
    };
    Ok(ClaimArgs {
        min_idle,
        ids,
        force,
        justid,
        delivery_time,
        retry_count,
        last_id,
    })
}

/// What XCLAIM did to the group.
struct ClaimOutcome {
    claimed: Vec<StreamId>,
    consumer_created: bool,
    /// The XCLAIMs (and XGROUP SETID) that reproduce it on replicas (when propagating).
    ops: Vec<Vec<Bytes>>,
    dirty: u64,
}

/// Moves LASTID forward, then claims each ID for the consumer (`args` are XCLAIM's: key, group,
/// consumer): a pending entry idle long enough, or with FORCE one not pending; an ID whose entry
/// was deleted is acknowledged instead.
fn claim_entries(
    args: &[Bytes],
    stream: &mut Stream,
    claim: &ClaimArgs,
    now: i64,
    propagating: bool,
) -> ClaimOutcome {
    let (key, name, consumer) = (&args[1][..], &args[2][..], &args[3][..]);
    let mut ops = Vec::new();
    let mut dirty = 0u64;
    let mut propagate_last_id = false;
    {
        let group = stream.groups.get_mut(name).expect("checked above");
        if claim.last_id > group.last_id {
            group.last_id = claim.last_id;
            dirty = 1;
            propagate_last_id = true;
        }
    }
    let mut claimed = Vec::new();
    let mut consumer_created = false;
    let mut consumer_seen = false;
    for &(id, at) in &claim.ids {
        let exists = stream.get(id).is_some();
        let group = stream.groups.get_mut(name).expect("checked above");
        if !exists {
            if propagating {
                if let Some(pending) = group.pel.get(&id) {
                    let op =
                        xclaim_propagation(key, name, args[at].clone(), pending, group.last_id);
                    ops.push(op);
                    propagate_last_id = false;
                }
            }
            if group.ack(id) {
                dirty += 1;
            }
            continue;
        }
        let current = group.pel.get(&id).cloned();
        if current.is_none() && !claim.force {
            continue;
        }
        if let Some(p) = &current {
            if claim.min_idle > 0 && now - p.delivery_time < claim.min_idle {
                continue;
            }
        }
        if !consumer_seen {
            let (c, created) = group.consumer_or_create(consumer, now);
            c.seen_time = now;
            consumer_created = created;
            consumer_seen = true;
        }
        // An entry claimed makes its new owner active.
        if let Some(c) = group.consumers.get_mut(consumer) {
            c.active_time = now;
        }
        let previous_count = current.as_ref().map_or(0, |p| p.delivery_count);
        let deliveries = match claim.retry_count {
            Some(n) if n >= 0 => n as u64,
            _ if !claim.justid => previous_count + 1,
            _ => previous_count,
        };
        group.assign(id, consumer, claim.delivery_time, deliveries);
        if propagating {
            let op =
                xclaim_propagation(key, name, args[at].clone(), &group.pel[&id], group.last_id);
            ops.push(op);
            propagate_last_id = false;
        }
        claimed.push(id);
        dirty += 1;
    }
    if propagating && propagate_last_id {
        ops.push(setid_propagation(key, name, &stream.groups[name]));
    }
    ClaimOutcome {
        claimed,
        consumer_created,
        ops,
        dirty,
    }
}

/// The entries (or with JUSTID the IDs) XCLAIM and XAUTOCLAIM took over.
fn write_claimed(ctx: &mut Ctx<'_>, key: &[u8], claimed: &[StreamId], justid: bool) {
    let stream = stream_at(ctx.ks, ctx.db(), key, ctx.now_ms);
    for id in claimed {
        if justid {
            write_id(&mut ctx.out, *id);
        } else if let Some(entry) = stream.get(*id) {
            write_entry(&mut ctx.out, &entry);
        }
    }
}

/// What XAUTOCLAIM's arguments say.
struct AutoclaimOptions {
    min_idle: i64,
    start: StreamId,
    count: i64,
    justid: bool,
}

/// Reads XAUTOCLAIM's arguments in Redis's order: min-idle-time, the start ID (`(` for an
/// exclusive one), then COUNT and JUSTID.
fn parse_autoclaim(ctx: &Ctx<'_>) -> CmdResult<AutoclaimOptions> {
    let min_idle = parse_i64(ctx.arg(4))
        .ok_or(Error::msg(
            "ERR Invalid min-idle-time argument for XAUTOCLAIM",
        ))?
        .max(0);
    let start = {
        let arg = ctx.arg(5);
        if arg.len() > 1 && arg[0] == b'(' {
            parse_strict_id(&arg[1..])?
                .next()
                .ok_or(Error::msg("ERR invalid start ID for the interval"))?
        } else {
            parse_id_with(
                arg,
                IdRules {
                    missing_seq: 0,
                    strict: false,
                    seq_star: false,
                },
            )?
            .0
        }
    };
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    // Redis caps COUNT so that COUNT × 16 bytes of bookkeeping cannot overflow.
    const MAX_COUNT: i64 = i64::MAX / 16;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        if word_is(ctx.arg(j), "count") && more > 0 {
            count = parse_i64(ctx.arg(j + 1))
                .filter(|n| (1..=MAX_COUNT).contains(n))
                .ok_or(Error::msg("ERR COUNT must be > 0"))?;
            j += 1;
        } else if word_is(ctx.arg(j), "justid") {
            justid = true;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok(AutoclaimOptions {
        min_idle,
        start,
        count,
        justid,
    })
}

pub(super) fn xautoclaim(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, name) = (ctx.arg(1), ctx.arg(2));
    let options = parse_autoclaim(ctx)?;
    {
        let stream = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)?;
        if !stream.is_some_and(|s| s.groups.contains_key(name)) {
            return Err(nokey_or_group(key, name));
        }
    }
    // Redis allocates COUNT IDs up front and reports a failed allocation; no allocator serves a
    // terabyte of IDs, so past that we answer as Redis does (and allocate nothing up front).
    if (options.count as u64).saturating_mul(16) > 1 << 40 {
        return Err(Error::msg(
            "ERR Insufficient memory, failed allocating transient memory, COUNT too high.",
        ));
    }
    ctx.prevent_propagation();
    let propagating = ctx.ks.stream.is_on();
    let now = ctx.now_ms;
    let stream = stream_at(ctx.ks, ctx.db(), key, ctx.now_ms);
    let scan = autoclaim_scan(ctx.args, stream, &options, now, propagating);
    let mut dirty = scan.dirty;
    ctx.out.array(3);
    write_id(&mut ctx.out, scan.next_cursor);
    ctx.out.array(scan.claimed.len());
    if scan.consumer_created {
        dirty += 1;
        ctx.notify(STREAM, "xgroup-createconsumer", key);
    }
    write_claimed(ctx, key, &scan.claimed, options.justid);
    ctx.out.array(scan.deleted.len());
    for id in &scan.deleted {
        write_id(&mut ctx.out, *id);
    }
    let db = ctx.db();
    for op in scan.ops {
        ctx.ks.stream.also(db, op);
    }
    ctx.ks.dirty += dirty;
    Ok(())
}

/// What one XAUTOCLAIM scan of the group's pending entries did.
struct AutoclaimScan {
    claimed: Vec<StreamId>,
    /// Pending entries whose stream entry was deleted: acknowledged and reported.
    deleted: Vec<StreamId>,
    consumer_created: bool,
    /// The cursor for the next call: the next pending ID, or 0-0 when the scan is complete.
    next_cursor: StreamId,
    /// The XCLAIMs that reproduce the scan on replicas (when propagating).
    ops: Vec<Vec<Bytes>>,
    dirty: u64,
}

/// Walks the pending entries from the start ID (`args` are XAUTOCLAIM's: key, group, consumer),
/// claiming the idle ones for the consumer and acknowledging those whose entry was deleted, until
/// COUNT entries are done or ten times as many were looked at.
fn autoclaim_scan(
    args: &[Bytes],
    stream: &mut Stream,
    options: &AutoclaimOptions,
    now: i64,
    propagating: bool,
) -> AutoclaimScan {
    let (key, name, consumer) = (&args[1][..], &args[2][..], &args[3][..]);
    let (min_idle, justid) = (options.min_idle, options.justid);
    let mut ops = Vec::new();
    let mut budget = options.count as u64;
    let mut attempts = budget.saturating_mul(10);
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut consumer_created = false;
    let mut consumer_seen = false;
    let mut cursor = Some(options.start);
    let mut dirty = 0u64;
    while attempts > 0 && budget > 0 {
        attempts -= 1;
        let Some(from) = cursor else { break };
        let next = stream.groups[name]
            .pel
            .range(from..)
            .next()
            .map(|(id, p)| (*id, p.delivery_time, p.delivery_count));
        let Some((id, delivered_at, deliveries)) = next else {
            cursor = None;
            break;
        };
        cursor = id.next();
        let exists = stream.get(id).is_some();
        let group = stream.groups.get_mut(name).expect("checked above");
        if !exists {
            if propagating {
                let pending = &group.pel[&id];
                let op = xclaim_propagation(
                    key,
                    name,
                    Bytes::from(id_bytes(id)),
                    pending,
                    group.last_id,
                );
                ops.push(op);
            }
            group.ack(id);
            deleted.push(id);
            budget -= 1;
            dirty += 1;
            continue;
        }
        if min_idle > 0 && now - delivered_at < min_idle {
            continue;
        }
        if !consumer_seen {
            let (c, created) = group.consumer_or_create(consumer, now);
            c.seen_time = now;
            consumer_created = created;
            consumer_seen = true;
        }
        // An entry claimed makes its new owner active.
        if let Some(c) = group.consumers.get_mut(consumer) {
            c.active_time = now;
        }
        let count = if justid { deliveries } else { deliveries + 1 };
        group.assign(id, consumer, now, count);
        if propagating {
            let pending = &group.pel[&id];
            let op =
                xclaim_propagation(key, name, Bytes::from(id_bytes(id)), pending, group.last_id);
            ops.push(op);
        }
        claimed.push(id);
        budget -= 1;
        dirty += 1;
    }
    let next_cursor = cursor
        .and_then(|from| {
            stream.groups[name]
                .pel
                .range(from..)
                .next()
                .map(|(id, _)| *id)
        })
        .unwrap_or(StreamId::MIN);
    AutoclaimScan {
        claimed,
        deleted,
        consumer_created,
        next_cursor,
        ops,
        dirty,
    }
}
