//! XINFO STREAM, GROUPS, CONSUMERS and HELP: what a stream, its groups and their consumers hold,
//! in Redis 7.0's field order (FULL with its COUNT included).

use embedis_datatypes::stream::{ConsumerGroup, EntryRef, Stream, StreamId, ENTRIES_READ_UNKNOWN};
use embedis_protocol::number::parse_i64;
use embedis_protocol::Writer;

use crate::base::compat::CompatVersion;
use crate::base::cstr::{c_str, word_is};
use crate::base::error::{CmdResult, Error};
use crate::commands::common::write_help;
use crate::kernel::ctx::Ctx;

use super::{quoted_error, read_stream, subcommand_syntax_error, write_entry, write_id};

// ---------------------------------------------------------------------------------------------
// XINFO
// ---------------------------------------------------------------------------------------------

const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

pub(super) fn xinfo(ctx: &mut Ctx<'_>) -> CmdResult {
    let sub = ctx.arg(1);
    if word_is(sub, "help") {
        if ctx.argc() != 2 {
            return Err(subcommand_syntax_error(ctx, "XINFO"));
        }
        write_help(ctx, XINFO_HELP);
        return Ok(());
    }
    if ctx.argc() < 3 {
        return Err(subcommand_syntax_error(ctx, "XINFO"));
    }
    let key = ctx.arg(2);
    let argc = ctx.argc();
    let now = ctx.now_ms;
    // Consumers' active time (`inactive`, `active-time`) is Redis 7.2's.
    let active_times = ctx.registry.version >= CompatVersion::V7_2;
    if word_is(sub, "stream") {
        // Options are checked after the lookup, as Redis does.
        read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)?.ok_or(Error::NoSuchKey)?;
        let full = match argc {
            3 => None,
            4 | 6 if word_is(ctx.arg(3), "full") => {
                if argc == 6 {
                    if !word_is(ctx.arg(4), "count") {
                        return Err(subcommand_syntax_error(ctx, "XINFO"));
                    }
                    let n = parse_i64(ctx.arg(5)).ok_or(Error::NotInteger)?;
                    Some(if n < 0 { 10 } else { n as usize })
                } else {
                    Some(10)
                }
            }
            _ => return Err(subcommand_syntax_error(ctx, "XINFO")),
        };
        let stream = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)?.expect("looked up above");
        write_stream_info(&mut ctx.out, stream, full, active_times);
        return Ok(());
    }
    let name = ctx.arg(argc.min(4) - 1);
    let stream = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)?.ok_or(Error::NoSuchKey)?;
    let out = &mut ctx.out;
    if word_is(sub, "consumers") && argc == 4 {
        let Some(group) = stream.groups.get(name) else {
            return Err(quoted_error(&[
                b"NOGROUP No such consumer group '",
                c_str(name),
                b"' for key name '",
                c_str(key),
                b"'",
            ]));
        };
        out.array(group.consumers.len());
        for (consumer_name, consumer) in &group.consumers {
            out.map(if active_times { 4 } else { 3 });
            out.bulk(b"name");
            out.bulk(consumer_name);
            out.bulk(b"pending");
            out.integer(consumer.pending.len() as i64);
            out.bulk(b"idle");
            out.integer((now - consumer.seen_time).max(0));
            if active_times {
                out.bulk(b"inactive");
                out.integer(match consumer.active_time {
                    -1 => -1,
                    active => now - active,
                });
            }
        }
    } else if word_is(sub, "groups") && argc == 3 {
        out.array(stream.groups.len());
        for (group_name, group) in &stream.groups {
            out.map(6);
            out.bulk(b"name");
            out.bulk(group_name);
            out.bulk(b"consumers");
            out.integer(group.consumers.len() as i64);
            out.bulk(b"pending");
            out.integer(group.pel.len() as i64);
            out.bulk(b"last-delivered-id");
            write_id(out, group.last_id);
            write_entries_read(out, group);
            out.bulk(b"lag");
            write_lag(out, stream, group);
        }
    } else {
        return Err(subcommand_syntax_error(ctx, "XINFO"));
    }
    Ok(())
}

fn write_entries_read(out: &mut Writer<'_>, group: &ConsumerGroup) {
    out.bulk(b"entries-read");
    if group.entries_read == ENTRIES_READ_UNKNOWN {
        out.null();
    } else {
        out.integer(group.entries_read);
    }
}

fn write_lag(out: &mut Writer<'_>, stream: &Stream, group: &ConsumerGroup) {
    match stream.lag(group) {
        Some(lag) => out.integer(lag),
        None => out.null(),
    }
}

/// XINFO STREAM's reply; `full` carries FULL's COUNT (0 = everything).
/// `active_times`: Redis 7.2's consumers' `active-time` is shown.
fn write_stream_info(
    out: &mut Writer<'_>,
    stream: &Stream,
    full: Option<usize>,
    active_times: bool,
) {
    out.map(if full.is_some() { 9 } else { 10 });
    out.bulk(b"length");
    out.integer(stream.length as i64);
    out.bulk(b"radix-tree-keys");
    out.integer(stream.node_count() as i64);
    out.bulk(b"radix-tree-nodes");
    out.integer(stream.radix_tree_nodes() as i64);
    out.bulk(b"last-generated-id");
    write_id(out, stream.last_id);
    out.bulk(b"max-deleted-entry-id");
    write_id(out, stream.max_deleted_entry_id);
    out.bulk(b"entries-added");
    out.integer(stream.entries_added as i64);
    out.bulk(b"recorded-first-entry-id");
    write_id(out, stream.first_id);
    let Some(count) = full else {
        out.bulk(b"groups");
        out.integer(stream.groups.len() as i64);
        for (label, last) in [(&b"first-entry"[..], false), (b"last-entry", true)] {
            out.bulk(label);
            match stream.edge(last) {
                Some(entry) => write_entry(out, &entry),
                None => out.null(),
            }
        }
        return;
    };
    let limit = if count == 0 { usize::MAX } else { count };
    out.bulk(b"entries");
    let entries: Vec<EntryRef<'_>> = stream
        .range(StreamId::MIN, StreamId::MAX)
        .take(limit)
        .collect();
    out.array(entries.len());
    for entry in &entries {
        write_entry(out, entry);
    }
    out.bulk(b"groups");
    out.array(stream.groups.len());
    for (group_name, group) in &stream.groups {
        out.map(7);
        out.bulk(b"name");
        out.bulk(group_name);
        out.bulk(b"last-delivered-id");
        write_id(out, group.last_id);
        write_entries_read(out, group);
        out.bulk(b"lag");
        write_lag(out, stream, group);
        out.bulk(b"pel-count");
        out.integer(group.pel.len() as i64);
        out.bulk(b"pending");
        let shown = group.pel.len().min(limit);
        out.array(shown);
        for (id, pending) in group.pel.iter().take(shown) {
            out.array(4);
            write_id(out, *id);
            out.bulk(&pending.consumer);
            out.integer(pending.delivery_time);
            out.integer(pending.delivery_count as i64);
        }
        out.bulk(b"consumers");
        out.array(group.consumers.len());
        for (consumer_name, consumer) in &group.consumers {
            out.map(if active_times { 5 } else { 4 });
            out.bulk(b"name");
            out.bulk(consumer_name);
            out.bulk(b"seen-time");
            out.integer(consumer.seen_time);
            if active_times {
                out.bulk(b"active-time");
                out.integer(consumer.active_time);
            }
            out.bulk(b"pel-count");
            out.integer(consumer.pending.len() as i64);
            out.bulk(b"pending");
            let shown = consumer.pending.len().min(limit);
            out.array(shown);
            for id in consumer.pending.iter().take(shown) {
                let pending = &group.pel[id];
                out.array(3);
                write_id(out, *id);
                out.integer(pending.delivery_time);
                out.integer(pending.delivery_count as i64);
            }
        }
    }
}
