//! The commands on a stream's entries: XADD and XTRIM (their options parsed in Redis's order,
//! before the key is looked at), XRANGE, XREVRANGE, XLEN, XDEL and XSETID.

use bytes::Bytes;
use embedis_datatypes::stream::{EntryRef, Stream, StreamId, Trim, TrimTo, LISTPACK_MAX_SIZE};
use embedis_protocol::number::parse_i64;

use crate::base::compat::CompatVersion;
use crate::base::config::event_class::STREAM;
use crate::base::cstr::{c_str, word_is};
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;

use super::deletes::refs_word;
use super::{
    id_bytes, node_limits, parse_bound, parse_id_with, parse_strict_id, read_stream, stream_at,
    stream_of, write_entry, write_id, write_stream, IdRules,
};

// ---------------------------------------------------------------------------------------------
// XADD, XTRIM
// ---------------------------------------------------------------------------------------------

/// What XADD's and XTRIM's options say.
struct AddOptions {
    trim: Option<Trim>,
    no_mkstream: bool,
    /// The ID argument's index (XADD), and what it holds: `None` for `*`.
    id_at: usize,
    /// The index of the trimming threshold (the count or ID after MAXLEN / MINID [~|=]).
    trim_at: usize,
    id: Option<(StreamId, bool)>,
}

fn parse_add_or_trim(ctx: &Ctx<'_>, xadd: bool) -> CmdResult<AddOptions> {
    let argc = ctx.argc();
    let mut to: Option<TrimTo> = None;
    let mut approx = false;
    let mut limit: Option<i64> = None;
    let mut no_mkstream = false;
    let mut refs = None;
    let mut id = None;
    let mut trim_at = 0;
    let mut i = 2;
    const BOTH: &str =
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
    while i < argc {
        let more = argc - 1 - i;
        let opt = ctx.arg(i);
        if xadd && c_str(opt) == b"*" {
            break;
        } else if word_is(opt, "maxlen") && more > 0 {
            if to.is_some() {
                return Err(Error::msg(BOTH));
            }
            approx = false;
            let next = c_str(ctx.arg(i + 1));
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let n = parse_i64(ctx.arg(i + 1)).ok_or(Error::NotInteger)?;
            if n < 0 {
                return Err(Error::msg("ERR The MAXLEN argument must be >= 0."));
            }
            i += 1;
            trim_at = i;
            to = Some(TrimTo::MaxLen(n as u64));
        } else if word_is(opt, "minid") && more > 0 {
            if to.is_some() {
                return Err(Error::msg(BOTH));
            }
            approx = false;
            let next = c_str(ctx.arg(i + 1));
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let min = parse_strict_id(ctx.arg(i + 1))?;
            i += 1;
            trim_at = i;
            to = Some(TrimTo::MinId(min));
        } else if word_is(opt, "limit") && more > 0 {
            let n = parse_i64(ctx.arg(i + 1)).ok_or(Error::NotInteger)?;
            if n < 0 {
                return Err(Error::msg("ERR The LIMIT argument must be >= 0."));
            }
            limit = Some(n);
            i += 1;
        } else if let Some(r) = refs_word(ctx, opt).filter(|_| refs.is_none()) {
            // Redis 8.2: a second one falls through, to XADD's ID or XTRIM's syntax error.
            refs = Some(r);
        } else if xadd && word_is(opt, "nomkstream") {
            no_mkstream = true;
        } else if xadd {
            id = Some(parse_id_with(
                opt,
                IdRules {
                    missing_seq: 0,
                    strict: true,
                    seq_star: true,
                },
            )?);
            break;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if limit.is_some_and(|l| l != 0) && to.is_none() {
        return Err(Error::msg(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && to.is_none() {
        return Err(Error::msg(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    // Commands replayed from the AOF (a master's, too, once there are replicas) were rewritten
    // to exact trims: no LIMIT is enforced on them (Redis's `mustObeyClient`).
    let limit = match limit {
        _ if ctx.client.id == crate::model::client::AOF_CLIENT_ID => 0,
        Some(_) if !approx => {
            return Err(Error::msg(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ))
        }
        Some(l) => l as u64,
        None if approx => {
            // Redis bounds the work of an approximate trim to 100 nodes' worth of entries.
            let per_node = ctx.server.config.encodings.stream_node_max_entries;
            match per_node.saturating_mul(100) {
                0 => 10_000,
                n => n.min(1_000_000),
            }
        }
        None => 0,
    };
    Ok(AddOptions {
        trim: to.map(|to| Trim {
            to,
            approx,
            limit,
            refs: refs.unwrap_or_default(),
        }),
        no_mkstream,
        id_at: i,
        trim_at,
        id,
    })
}

/// XADD's or XTRIM's arguments as they propagate: an approximate trim (`~`) as the exact trim
/// that leaves what it left (`MAXLEN = <length>`, `MINID = <first ID>`), and for XADD an ID
/// that was `*` or `ms-*` as the ID it got.
fn propagated_add_or_trim(
    args: &[Bytes],
    options: &AddOptions,
    stream: (u64, StreamId),
    added: Option<StreamId>,
) -> Vec<Bytes> {
    let mut v = args.to_vec();
    if let Some(trim) = options.trim.filter(|t| t.approx) {
        v[options.trim_at - 1] = Bytes::from_static(b"=");
        v[options.trim_at] = match trim.to {
            TrimTo::MaxLen(_) => crate::model::write_stream::integer_arg(stream.0 as i64),
            TrimTo::MinId(_) => Bytes::from(id_bytes(stream.1)),
        };
    }
    if let Some(id) = added {
        if !matches!(options.id, Some((_, true))) {
            v[options.id_at] = Bytes::from(id_bytes(id));
        }
    }
    v
}

/// The ID XADD gives a new entry (Redis's rules for `*`, `ms-*` and explicit IDs), or its error.
fn next_add_id(
    stream: &Stream,
    given: Option<(StreamId, bool)>,
    now_ms: i64,
) -> CmdResult<StreamId> {
    const NOT_GREATER: &str =
        "ERR The ID specified in XADD is equal or smaller than the target stream top item";
    let last = stream.last_id;
    let id = match given {
        Some((id, true)) => id,
        Some((id, false)) => {
            if last.ms == id.ms {
                last.next()
                    .filter(|n| n.ms == id.ms)
                    .ok_or(Error::msg(NOT_GREATER))?
            } else {
                id
            }
        }
        None => {
            let ms = now_ms.max(0) as u64;
            if ms > last.ms {
                StreamId::new(ms, 0)
            } else {
                last.next().ok_or(Error::msg(NOT_GREATER))?
            }
        }
    };
    if id <= last {
        return Err(Error::msg(NOT_GREATER));
    }
    Ok(id)
}

pub(super) fn xadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let options = parse_add_or_trim(ctx, true)?;
    let fields_at = options.id_at + 1;
    let argc = ctx.argc();
    if argc < fields_at + 2 || (argc - fields_at) % 2 == 1 {
        return Err(Error::WrongArity("xadd".into()));
    }
    if let Some((id, true)) = options.id {
        if id.is_zero() {
            return Err(Error::msg(
                "ERR The ID specified in XADD must be greater than 0-0",
            ));
        }
    }
    let (db, now, key) = (ctx.db(), ctx.now_ms, ctx.arg(1));
    let args: &[Bytes] = ctx.args;
    let pairs = &args[fields_at..];
    let limits = node_limits(ctx);
    let data_len: u64 = pairs.iter().map(|p| p.len() as u64).sum();
    let mut created = None;
    let stream = match ctx.ks.write(db, key, now) {
        Some(value) => stream_of(value)?,
        None if options.no_mkstream => {
            ctx.out.null();
            return Ok(());
        }
        None => created.insert(Box::new(Stream::new())),
    };
    if stream.last_id == StreamId::MAX {
        return Err(Error::msg(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let id = next_add_id(stream, options.id, now)?;
    if data_len > LISTPACK_MAX_SIZE {
        return Err(Error::msg("ERR Elements are too large to be stored"));
    }
    stream.append(id, pairs, limits);
    let trimmed = options.trim.map_or(0, |trim| stream.trim(trim));
    let shape = (stream.length, stream.first_id);
    ctx.propagate_as(|| propagated_add_or_trim(args, &options, shape, Some(id)));
    if let Some(stream) = created {
        // Storing the key counts the one change.
        ctx.ks.add(db, key, Value::Stream(stream), None, now);
    } else {
        ctx.ks.dirty += 1;
    }
    // A new key's event before the reply, `xadd` (and `xtrim`) after it, as in Redis.
    ctx.publish_events();
    write_id(&mut ctx.out, id);
    ctx.notify(STREAM, "xadd", key);
    if trimmed > 0 {
        ctx.notify(STREAM, "xtrim", key);
    }
    Ok(())
}

pub(super) fn xtrim(ctx: &mut Ctx<'_>) -> CmdResult {
    let options = parse_add_or_trim(ctx, false)?;
    let key = ctx.arg(1);
    let Some(stream) = write_stream(ctx, key)? else {
        ctx.out.integer(0);
        return Ok(());
    };
    let trim = options.trim.expect("XTRIM's parser insists on a strategy");
    let deleted = stream.trim(trim);
    let shape = (stream.length, stream.first_id);
    let args: &[Bytes] = ctx.args;
    ctx.propagate_as(|| propagated_add_or_trim(args, &options, shape, None));
    if deleted > 0 {
        ctx.notify(STREAM, "xtrim", key);
        ctx.ks.dirty += deleted;
    }
    ctx.out.integer(deleted as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// XRANGE, XREVRANGE, XLEN, XDEL, XSETID
// ---------------------------------------------------------------------------------------------

pub(super) fn xrange(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, false)
}

pub(super) fn xrevrange(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, true)
}

fn range_generic(ctx: &mut Ctx<'_>, rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev { (3, 2) } else { (2, 3) };
    let start = parse_bound(ctx.arg(start_arg), true)?;
    let end = parse_bound(ctx.arg(end_arg), false)?;
    let mut count: i64 = -1;
    let mut j = 4;
    while j < ctx.argc() {
        if word_is(ctx.arg(j), "count") && j + 1 < ctx.argc() {
            count = parse_i64(ctx.arg(j + 1)).ok_or(Error::NotInteger)?.max(0);
            j += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let key = ctx.arg(1);
    let Some(stream) = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)? else {
        ctx.out.array(0);
        return Ok(());
    };
    if count == 0 {
        ctx.out.null_array();
        return Ok(());
    }
    let limit = if count < 0 {
        usize::MAX
    } else {
        count as usize
    };
    let entries: Vec<EntryRef<'_>> = if rev {
        stream.rev_range(start, end).take(limit).collect()
    } else {
        stream.range(start, end).take(limit).collect()
    };
    ctx.out.array(entries.len());
    for entry in &entries {
        write_entry(&mut ctx.out, entry);
    }
    Ok(())
}

pub(super) fn xlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let len = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)?.map_or(0, |s| s.length);
    ctx.out.integer(len as i64);
    Ok(())
}

pub(super) fn xdel(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let args: &[Bytes] = ctx.args;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let Some(value) = ctx.ks.write(db, key, now) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let stream = stream_of(value)?;
    let ids = args[2..]
        .iter()
        .map(|a| parse_strict_id(a))
        .collect::<CmdResult<Vec<StreamId>>>()?;
    let deleted = stream.delete_ids(&ids);
    if deleted > 0 {
        ctx.notify(STREAM, "xdel", key);
        ctx.ks.dirty += deleted;
    }
    ctx.out.integer(deleted as i64);
    Ok(())
}

pub(super) fn xsetid(ctx: &mut Ctx<'_>) -> CmdResult {
    let id = parse_strict_id(ctx.arg(2))?;
    let mut entries_added: i64 = -1;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < ctx.argc() {
        let more = ctx.argc() - 1 - i;
        if word_is(ctx.arg(i), "entriesadded") && more > 0 {
            entries_added = parse_i64(ctx.arg(i + 1)).ok_or(Error::NotInteger)?;
            if entries_added < 0 {
                return Err(Error::msg("ERR entries_added must be positive"));
            }
        } else if word_is(ctx.arg(i), "maxdeletedid") && more > 0 {
            max_deleted = parse_strict_id(ctx.arg(i + 1))?;
            if id < max_deleted {
                return Err(Error::msg(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }
    let key = ctx.arg(1);
    let (db, now) = (ctx.db(), ctx.now_ms);
    write_stream(ctx, key)?.ok_or(Error::NoSuchKey)?;
    // Redis signals no modification for XSETID (WATCH and client tracking do not see it).
    ctx.ks.unnote_write(db, key);
    let guards_deleted = ctx.registry.version >= CompatVersion::V7_2;
    let stream = stream_at(ctx.ks, db, key, now);
    // Since 7.2 the last ID may not go below an entry already deleted.
    if guards_deleted && id < stream.max_deleted_entry_id {
        return Err(Error::msg(
            "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id",
        ));
    }
    if stream.length > 0 {
        let top = stream.edge(true).map_or(StreamId::MIN, |e| e.id);
        if id < top {
            return Err(Error::msg(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added != -1 && stream.length > entries_added as u64 {
            return Err(Error::msg(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    stream.last_id = id;
    if entries_added != -1 {
        stream.entries_added = entries_added as u64;
    }
    if !max_deleted.is_zero() {
        stream.max_deleted_entry_id = max_deleted;
    }
    ctx.ks.dirty += 1;
    ctx.out.ok();
    ctx.notify(STREAM, "xsetid", key);
    Ok(())
}
