//! XREAD and XREADGROUP: parsing their arguments (each key's type and group checked while the IDs
//! are read, as Redis does), serving history and new entries, blocking on the keys and serving
//! the key that woke a blocked reader.

use bytes::{Bytes, BytesMut};
use embedis_datatypes::stream::{EntryRef, Stream, StreamId, ENTRIES_READ_UNKNOWN};
use embedis_protocol::number::parse_i64;
use embedis_protocol::Writer;

use crate::base::compat::CompatVersion;
use crate::base::config::event_class::STREAM;
use crate::base::cstr::{c_str, word_is};
use crate::base::error::{CmdResult, Error};
use crate::base::value::{Value, ValueType};
use crate::commands::common::deadline_from_ms;
use crate::kernel::ctx::Ctx;

use super::{
    id_bytes, parse_strict_id, quoted_error, read_stream, setid_propagation, write_entry, write_id,
    xclaim_propagation,
};

// ---------------------------------------------------------------------------------------------
// XREAD, XREADGROUP
// ---------------------------------------------------------------------------------------------

/// The `>` ID of XREADGROUP, kept as the maximal ID (as Redis does).
const NEW_ENTRIES: StreamId = StreamId::MAX;
/// Entries a blocked XREAD without COUNT gets when woken (Redis's default).
const BLOCKED_DEFAULT_COUNT: usize = 1000;

struct ReadArgs<'a> {
    deadline: Option<Option<i64>>,
    count: usize,
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
    keys: &'a [Bytes],
    id_args: &'a [Bytes],
}

pub(super) fn xread(ctx: &mut Ctx<'_>) -> CmdResult {
    read_generic(ctx, false)
}

pub(super) fn xreadgroup(ctx: &mut Ctx<'_>) -> CmdResult {
    // What it changes propagates as XCLAIMs (or XGROUP SETID / CREATECONSUMER with NOACK).
    ctx.prevent_propagation();
    read_generic(ctx, true)
}

fn parse_read<'a>(ctx: &Ctx<'a>, is_group: bool) -> CmdResult<ReadArgs<'a>> {
    let args: &'a [Bytes] = ctx.args;
    let argc = args.len();
    let mut deadline = None;
    let mut count = 0usize;
    let mut group = None;
    let mut noack = false;
    let mut streams_at = 0;
    let mut i = 1;
    while i < argc {
        let more = argc - i - 1;
        let opt = &args[i][..];
        if word_is(opt, "block") && more > 0 {
            // Redis 7.0 refuses BLOCK in a script; from 7.2 it reads without blocking, as in MULTI.
            if ctx.from_script && ctx.registry.version < CompatVersion::V7_2 {
                let mut line = b"ERR ".to_vec();
                line.extend_from_slice(c_str(&args[0]));
                line.extend_from_slice(b" command is not allowed with BLOCK option from scripts");
                return Err(quoted_error(&[&line]));
            }
            i += 1;
            let at = deadline_from_ms(ctx, i)?;
            deadline = Some((at != 0).then_some(at));
        } else if word_is(opt, "count") && more > 0 {
            i += 1;
            let n = parse_i64(&args[i]).ok_or(Error::NotInteger)?;
            count = n.max(0) as usize;
        } else if word_is(opt, "streams") && more > 0 {
            streams_at = i + 1;
            if !(argc - streams_at).is_multiple_of(2) {
                return Err(unbalanced_error(ctx, is_group));
            }
            break;
        } else if word_is(opt, "group") && more >= 2 {
            if !is_group {
                return Err(Error::msg(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            group = Some((&args[i + 1][..], &args[i + 2][..]));
            i += 2;
        } else if word_is(opt, "noack") {
            if !is_group {
                return Err(Error::msg(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            noack = true;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if streams_at == 0 {
        return Err(Error::Syntax);
    }
    if is_group && group.is_none() {
        return Err(Error::msg("ERR Missing GROUP option for XREADGROUP"));
    }
    let n = (argc - streams_at) / 2;
    Ok(ReadArgs {
        deadline,
        count,
        group,
        noack,
        keys: &args[streams_at..streams_at + n],
        id_args: &args[streams_at + n..],
    })
}

/// Keys and IDs that do not pair up: Redis 7.2 names the command and its special ID.
fn unbalanced_error(ctx: &Ctx<'_>, is_group: bool) -> Error {
    if ctx.registry.version < CompatVersion::V7_2 {
        return Error::msg("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.");
    }
    let (name, symbol) = if is_group {
        ("xreadgroup", '>')
    } else {
        ("xread", '$')
    };
    Error::bytes(format!("ERR Unbalanced '{name}' list of streams: for each stream key an ID or '{symbol}' must be specified.").into_bytes())
}

fn nogroup_error(key: &[u8], group: &[u8]) -> Error {
    quoted_error(&[
        b"NOGROUP No such key '",
        c_str(key),
        b"' or consumer group '",
        c_str(group),
        b"' in XREADGROUP with GROUP option",
    ])
}

fn read_generic(ctx: &mut Ctx<'_>, is_group: bool) -> CmdResult {
    let read = parse_read(ctx, is_group)?;
    // Since 7.2 a woken reader runs its command again, whole (errors included: a group gone
    // with its key answers NOGROUP, a key of another type WRONGTYPE).
    let reruns = ctx.registry.version >= CompatVersion::V7_2;
    if let Some(woken_by) = ctx.woken_by.filter(|_| !reruns) {
        return serve_woken(ctx, &read, woken_by);
    }
    // Resolve every ID, checking each key's type (and group) on the way, in Redis's order.
    let mut ids = Vec::with_capacity(read.keys.len());
    for (key, id_arg) in read.keys.iter().zip(read.id_args) {
        let stream = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)?;
        if let Some((group, _)) = read.group {
            if !stream
                .as_ref()
                .is_some_and(|s| s.groups.contains_key(group))
            {
                return Err(nogroup_error(key, group));
            }
        }
        let word = c_str(id_arg);
        if word == b"$" {
            if is_group {
                return Err(Error::msg("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."));
            }
            ids.push(stream.map_or(StreamId::MIN, |s| s.last_id));
        } else if word == b"+" && ctx.registry.version >= CompatVersion::V7_4 {
            ids.push(last_entry_bound(stream.as_deref(), is_group)?);
        } else if word == b">" {
            if !is_group {
                return Err(Error::msg("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."));
            }
            ids.push(NEW_ENTRIES);
        } else {
            ids.push(parse_strict_id(id_arg)?);
        }
    }
    if reruns {
        if let Some((group, consumer)) = read.group {
            create_consumers(ctx, read.keys, group, consumer, read.noack)?;
        }
    }
    // Serve what can be served now; each key's part is written aside, the count goes first.
    let mut body = BytesMut::new();
    let mut events = Vec::new();
    let mut served = 0usize;
    for (index, key) in read.keys.iter().enumerate() {
        let version = ctx.out.version();
        let mut part = Writer::new(&mut body, version);
        if serve_key(
            ctx,
            &read,
            key,
            ids[index],
            read.count,
            false,
            &mut part,
            &mut events,
        )? {
            served += 1;
        }
    }
    if served > 0 {
        write_served(ctx, served, &body, &events);
        return Ok(());
    }
    match read.deadline {
        None => ctx.out.null_array(),
        Some(deadline) => {
            let keys: Vec<Bytes> = read.keys.to_vec();
            ctx.block_on_keys(&keys, ValueType::Stream, deadline);
            if is_group {
                wake_on_deletion(ctx);
            }
            // `$` stands for the last ID now: a re-run must read from there.
            if let Some(blocked) = ctx.block.as_mut() {
                let first_id_at = blocked.args.len() - read.keys.len();
                for (offset, id) in ids.iter().enumerate() {
                    let at = first_id_at + offset;
                    if c_str(&blocked.args[at]) == b"$" {
                        blocked.args[at] = Bytes::from(id_bytes(*id));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Redis 7.2 looks up (or creates) the reader's consumer in every stream it names before
/// serving any, so a reader of nothing new, or one that blocks, is a consumer too (7.0 only
/// creates it when served). Its seen time is now.
fn create_consumers(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    group: &[u8],
    consumer: &[u8],
    noack: bool,
) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let propagating = ctx.ks.stream.is_on();
    for key in keys {
        let Some(stream) = read_stream(ctx.ks, db, key, now)? else {
            continue;
        };
        let Some(g) = stream.groups.get_mut(group) else {
            continue;
        };
        let (c, created) = g.consumer_or_create(consumer, now);
        c.seen_time = now;
        if !created {
            continue;
        }
        ctx.ks.dirty += 1;
        if propagating && noack {
            let op = vec![
                Bytes::from_static(b"XGROUP"),
                Bytes::from_static(b"CREATECONSUMER"),
                key.clone(),
                Bytes::copy_from_slice(group),
                Bytes::copy_from_slice(consumer),
            ];
            ctx.ks.stream.also(db, op);
        }
        ctx.notify(STREAM, "xgroup-createconsumer", key);
    }
    Ok(())
}

/// XREAD's `+` (Redis 7.4): the ID just below the stream's last, so that the last entry (if
/// still there) is what is read; 0-0 for a missing stream.
fn last_entry_bound(stream: Option<&Stream>, is_group: bool) -> CmdResult<StreamId> {
    if is_group {
        return Err(Error::msg("ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set."));
    }
    match stream {
        None => Ok(StreamId::MIN),
        Some(s) => s
            .last_id
            .prev()
            .ok_or(Error::msg("ERR the stream last element ID is 0-0")),
    }
}

/// A group reader is woken when its key is deleted or changes type (its group is gone).
fn wake_on_deletion(ctx: &mut Ctx<'_>) {
    if let Some(crate::model::blocking::Blocked {
        reason: crate::model::blocking::BlockReason::Keys(wait),
        ..
    }) = ctx.block.as_mut()
    {
        wait.on_nokey = true;
    }
}

/// A blocked read re-run because `woken_by` was written to: serves that key only, as Redis
/// does, or blocks again.
fn serve_woken(ctx: &mut Ctx<'_>, read: &ReadArgs<'_>, woken_by: &[u8]) -> CmdResult {
    let Some(index) = read.keys.iter().position(|k| &k[..] == woken_by) else {
        return block_again(ctx, read);
    };
    let key = &read.keys[index];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let stream = match ctx
        .ks
        .lookup(db, key, now, crate::model::keyspace::Access::NoTouch)
    {
        Some(object) => match &object.value {
            Value::Stream(s) => Some(s),
            _ => None,
        },
        None => None,
    };
    let Some(stream) = stream else {
        if read.group.is_some() {
            return Err(Error::msg("UNBLOCKED the stream key no longer exists"));
        }
        return block_again(ctx, read);
    };
    let after = match read.group {
        Some((group, _)) => match stream.groups.get(group) {
            Some(g) => g.last_id,
            None => {
                return Err(Error::msg(
                    "NOGROUP the consumer group this client was blocked on no longer exists",
                ))
            }
        },
        None => parse_strict_id(&read.id_args[index])?,
    };
    if stream.last_id <= after {
        return block_again(ctx, read);
    }
    let count = if read.count == 0 {
        BLOCKED_DEFAULT_COUNT
    } else {
        read.count
    };
    let mut body = BytesMut::new();
    let mut events = Vec::new();
    let version = ctx.out.version();
    let mut part = Writer::new(&mut body, version);
    // A group reader blocks only for `>`: it is served new entries from the group's last ID.
    let from = if read.group.is_some() {
        NEW_ENTRIES
    } else {
        after
    };
    serve_key(ctx, read, key, from, count, true, &mut part, &mut events)?;
    write_served(ctx, 1, &body, &events);
    Ok(())
}

/// Writes an XREAD/XREADGROUP reply assembled aside: the count of keys served, then their parts,
/// with the `xgroup-createconsumer` events published where Redis has them (after the key's name,
/// before its entries — a subscribed RESP3 client sees them there).
fn write_served(ctx: &mut Ctx<'_>, served: usize, body: &[u8], events: &[(usize, Bytes)]) {
    if ctx.out.is_resp3() {
        ctx.out.map(served);
    } else {
        ctx.out.array(served);
    }
    let mut written = 0;
    for (at, key) in events {
        ctx.out.raw(&body[written..*at]);
        written = *at;
        ctx.notify(STREAM, "xgroup-createconsumer", key);
    }
    ctx.out.raw(&body[written..]);
}

fn block_again(ctx: &mut Ctx<'_>, read: &ReadArgs<'_>) -> CmdResult {
    let keys: Vec<Bytes> = read.keys.to_vec();
    let deadline = read.deadline.flatten();
    ctx.block_on_keys(&keys, ValueType::Stream, deadline);
    if read.group.is_some() {
        wake_on_deletion(ctx);
    }
    Ok(())
}

/// Serves one key of an XREAD/XREADGROUP if it has something for the reader (`after`: entries
/// must be greater; [`NEW_ENTRIES`] for a group's `>`); writes `key, entries` to `part`. `woken`:
/// a blocked reader being served, which Redis serves from `after` whatever the stream holds.
// The reader's state and the two outputs (the part and where its events go) are all needed here.
#[allow(clippy::too_many_arguments)]
fn serve_key(
    ctx: &mut Ctx<'_>,
    read: &ReadArgs<'_>,
    key: &[u8],
    after: StreamId,
    count: usize,
    woken: bool,
    part: &mut Writer<'_>,
    events: &mut Vec<(usize, Bytes)>,
) -> CmdResult<bool> {
    let now = ctx.now_ms;
    let propagating = ctx.ks.stream.is_on();
    let Some(stream) = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)? else {
        return Ok(false);
    };
    let Some((group_name, consumer_name)) = read.group else {
        if !woken {
            let top = if stream.length > 0 {
                stream.edge(true).map_or(StreamId::MIN, |e| e.id)
            } else {
                return Ok(false);
            };
            if top <= after {
                return Ok(false);
            }
        }
        let Some(start) = after.next() else {
            return Ok(false);
        };
        let limit = if count == 0 { usize::MAX } else { count };
        let entries: Vec<EntryRef<'_>> = stream.range(start, StreamId::MAX).take(limit).collect();
        if !part.is_resp3() {
            part.array(2);
        }
        part.bulk(key);
        part.array(entries.len());
        for entry in &entries {
            write_entry(part, entry);
        }
        return Ok(true);
    };
    // A group read: history (an explicit ID) is always served; `>` when there is news.
    let history = after != NEW_ENTRIES;
    let group_last = stream.groups.get(group_name).map(|g| g.last_id);
    let start = if history {
        after
    } else {
        let Some(last) = group_last else {
            return Ok(false);
        };
        if !woken {
            if stream.length == 0 {
                return Ok(false);
            }
            let top = stream.edge(true).map_or(StreamId::MIN, |e| e.id);
            if top <= last {
                return Ok(false);
            }
        }
        last
    };
    let Some(start) = start.next() else {
        // Nothing can follow the maximal ID (only reachable with an explicit history ID).
        if !part.is_resp3() {
            part.array(2);
        }
        part.bulk(key);
        part.array(0);
        return Ok(true);
    };
    let Some(group) = stream.groups.get_mut(group_name) else {
        return Ok(false);
    };
    let (consumer, created) = group.consumer_or_create(consumer_name, now);
    consumer.seen_time = now;
    let mut ops = Vec::new();
    if propagating && created && read.noack {
        ops.push(vec![
            Bytes::from_static(b"XGROUP"),
            Bytes::from_static(b"CREATECONSUMER"),
            Bytes::copy_from_slice(key),
            Bytes::copy_from_slice(group_name),
            Bytes::copy_from_slice(consumer_name),
        ]);
    }
    if !part.is_resp3() {
        part.array(2);
    }
    part.bulk(key);
    if created {
        events.push((part.buffer().len(), Bytes::copy_from_slice(key)));
    }
    let since_7_2 = ctx.registry.version >= CompatVersion::V7_2;
    let changed = if history {
        serve_history(stream, group_name, consumer_name, start, count, now, part);
        false
    } else {
        let reading = NewRead {
            group_name,
            consumer_name,
            start,
            count,
            noack: read.noack,
            now,
            since_7_2,
        };
        serve_new(
            stream,
            &reading,
            part,
            propagating.then_some((key, &mut ops)),
        )
    };
    let db = ctx.db();
    for op in ops {
        ctx.ks.stream.also(db, op);
    }
    // Redis 7.0 counts every group key served as a change; 7.2 only one with something to
    // propagate (a history read only touches delivery counts).
    let served_change = !since_7_2 || changed;
    ctx.ks.dirty += u64::from(served_change) + u64::from(created);
    Ok(true)
}

/// A consumer's own pending entries from `start` (XREADGROUP with an ID): each delivered again
/// (its count and time updated), or `[id, nil]` when the entry is gone from the stream.
fn serve_history(
    stream: &mut Stream,
    group_name: &[u8],
    consumer_name: &[u8],
    start: StreamId,
    count: usize,
    now: i64,
    out: &mut Writer<'_>,
) {
    let limit = if count == 0 { usize::MAX } else { count };
    let ids: Vec<StreamId> = stream.groups[group_name].consumers[consumer_name]
        .pending
        .range(start..)
        .take(limit)
        .copied()
        .collect();
    out.array(ids.len());
    let mut delivered = Vec::new();
    for &id in &ids {
        match stream.get(id) {
            Some(entry) => {
                write_entry(out, &entry);
                delivered.push(id);
            }
            None => {
                out.array(2);
                write_id(out, id);
                out.null_array();
            }
        }
    }
    let group = stream
        .groups
        .get_mut(group_name)
        .expect("checked by the caller");
    for id in delivered {
        if let Some(pending) = group.pel.get_mut(&id) {
            pending.delivery_time = now;
            pending.delivery_count += 1;
        }
    }
}

/// What a group's `>` read is: who reads, from where, how many, with NOACK or not, when.
struct NewRead<'a> {
    group_name: &'a [u8],
    consumer_name: &'a [u8],
    start: StreamId,
    count: usize,
    noack: bool,
    now: i64,
    /// Redis 7.2 propagates the group's new last ID after the XCLAIMs even without NOACK.
    since_7_2: bool,
}

/// New entries from `start` for a group's `>`: the group's last ID and entries-read advance, and
/// (unless NOACK) each entry goes to the consumer's pending list. Returns true if something
/// was to propagate (an XCLAIM or the group's last ID).
fn serve_new(
    stream: &mut Stream,
    reading: &NewRead<'_>,
    out: &mut Writer<'_>,
    mut propagate: Option<(&[u8], &mut Vec<Vec<Bytes>>)>,
) -> bool {
    let &NewRead {
        group_name,
        consumer_name,
        start,
        count,
        noack,
        now,
        since_7_2,
    } = reading;
    let limit = if count == 0 { usize::MAX } else { count };
    let mut last_id_moved = false;
    let ids: Vec<StreamId> = {
        let entries: Vec<EntryRef<'_>> = stream.range(start, StreamId::MAX).take(limit).collect();
        out.array(entries.len());
        for entry in &entries {
            write_entry(out, entry);
        }
        entries.iter().map(|e| e.id).collect()
    };
    let ids_empty = ids.is_empty();
    for id in ids {
        let tombstones_ahead = stream.range_has_tombstones(Some(id), None);
        let estimate = stream.entries_before(id);
        let entries_added = stream.entries_added;
        let group = stream
            .groups
            .get_mut(group_name)
            .expect("checked by the caller");
        if id > group.last_id {
            if group.entries_read != ENTRIES_READ_UNKNOWN && !tombstones_ahead {
                // ENTRIESREAD may have set anything up to i64::MAX: wrap as Redis's C does.
                group.entries_read = group.entries_read.wrapping_add(1);
            } else if entries_added > 0 {
                group.entries_read = estimate;
            }
            group.last_id = id;
            last_id_moved = true;
        }
        if !noack {
            group.assign(id, consumer_name, now, 1);
            if let Some(consumer) = group.consumers.get_mut(consumer_name) {
                consumer.active_time = now;
            }
            if let Some((key, ops)) = propagate.as_mut() {
                let pending = &group.pel[&id];
                let op = xclaim_propagation(
                    key,
                    group_name,
                    Bytes::from(id_bytes(id)),
                    pending,
                    group.last_id,
                );
                ops.push(op);
            }
        }
    }
    let claimed = !noack && !ids_empty;
    let set_id = last_id_moved && (noack || since_7_2);
    if let Some((key, ops)) = propagate {
        if set_id {
            ops.push(setid_propagation(
                key,
                group_name,
                &stream.groups[group_name],
            ));
        }
    }
    claimed || set_id
}
