//! Stream commands: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XSETID, XREAD and the consumer
//! group family (XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM) and XINFO.
//!
//! The value and its groups live in [`embedis_datatypes::stream`]; this module is the protocol
//! side and follows Redis 7.0 in what users can see:
//!
//! - **IDs as Redis reads them**: `ms-seq`, `ms` alone (the sequence defaulting to the low or
//!   high end of a range), `-` and `+` where a range allows them, `(` for exclusive bounds, `ms-*`
//!   in XADD; each part through Redis's `string2ull` (which falls back on `strtoull`, so a
//!   leading space or `+` passes), and anything longer than 127 bytes is invalid.
//! - **Argument checks in Redis's order**: XADD parses its options before looking at the key,
//!   XREAD checks each key's type and group while parsing the IDs, XPENDING parses the range
//!   before the key.
//! - **Counters**: `entries-added`, `max-deleted-entry-id`, `recorded-first-entry-id`, each
//!   group's `entries-read` and lag are kept as Redis 7.0 keeps them (see the datatypes module).
//! - **Events**: `xadd`, `xtrim`, `xdel`, `xsetid` and the `xgroup-*` events are published where
//!   Redis publishes them; WATCH and client tracking see the writes Redis signals.
//! - **Blocking**: XREAD and XREADGROUP with BLOCK wait on their keys like the blocking pops
//!   (see [`crate::model::blocking`]). A `$` ID is resolved when the client blocks: the blocked command's
//!   arguments are rewritten with the ID it stood for, so that a re-run reads what arrived since.
//!   A re-run serves only the key that woke it (as Redis does); an XREADGROUP whose key was
//!   deleted, or whose group was destroyed, is released with Redis's error.
//!
//! Redis 8.2's XDELEX and XACKDEL, and the KEEPREF / DELREF / ACKED option of XADD and XTRIM,
//! exist from `compat-version 8.2` (`deletes`).
//!
//! The handlers are in `entries` (XADD, XTRIM, XRANGE…XSETID), `read` (XREAD, XREADGROUP),
//! `groups` (XGROUP and the pending entries' commands) and `info` (XINFO); this module keeps the IDs,
//! errors and replies they share, and the command table at its end.

mod deletes;
mod entries;
mod groups;
mod info;
mod read;

use bytes::Bytes;
use embedis_datatypes::stream::{
    ConsumerGroup, EntryRef, NodeLimits, PendingEntry, Stream, StreamId,
};
use embedis_protocol::number::parse_i64;
use embedis_protocol::Writer;

use crate::base::cstr::c_str;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, KeySpec};
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::keyspace::Keyspace;

use deletes::{xackdel, xdelex};
use entries::{xadd, xdel, xlen, xrange, xrevrange, xsetid, xtrim};
use groups::{xack, xautoclaim, xclaim, xgroup, xpending};
use info::xinfo;
use read::{xread, xreadgroup};

// ---------------------------------------------------------------------------------------------
// IDs, errors and replies
// ---------------------------------------------------------------------------------------------

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// An error line quoting client data the way Redis's `addReplyErrorFormat` does: the text up to
/// a NUL, with CR and LF turned into spaces (an error line cannot hold them).
fn quoted_error(parts: &[&[u8]]) -> Error {
    let mut line = Vec::new();
    for part in parts {
        line.extend(
            part.iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
    }
    Error::bytes(line)
}

/// One part of an ID as Redis's `string2ull`: a canonical integer (not negative), or else what C's
/// `strtoull` accepts whole (leading spaces, a sign, digits; `-n` wraps around), without overflow.
fn parse_id_part(part: &[u8]) -> Option<u64> {
    if let Some(n) = parse_i64(part) {
        return u64::try_from(n).ok();
    }
    let mut rest = part;
    while let [b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r', tail @ ..] = rest {
        rest = tail;
    }
    let negative = match rest {
        [b'-', tail @ ..] => {
            rest = tail;
            true
        }
        [b'+', tail @ ..] => {
            rest = tail;
            false
        }
        _ => false,
    };
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: u64 = 0;
    for &d in rest {
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if negative { n.wrapping_neg() } else { n })
}

/// How an ID argument may be written.
#[derive(Clone, Copy)]
struct IdRules {
    /// The sequence when only milliseconds are given.
    missing_seq: u64,
    /// `-` and `+` are refused.
    strict: bool,
    /// `ms-*` is allowed (XADD).
    seq_star: bool,
}

const STRICT: IdRules = IdRules {
    missing_seq: 0,
    strict: true,
    seq_star: false,
};

/// Parses an ID argument; the flag says whether the sequence was given (false only for `ms-*`).
fn parse_id_with(arg: &[u8], rules: IdRules) -> CmdResult<(StreamId, bool)> {
    let invalid = || Error::msg(INVALID_ID);
    if arg.len() > 127 {
        return Err(invalid());
    }
    let text = c_str(arg);
    match text {
        b"-" | b"+" if rules.strict => return Err(invalid()),
        b"-" => return Ok((StreamId::MIN, true)),
        b"+" => return Ok((StreamId::MAX, true)),
        _ => {}
    }
    let (ms_part, seq_part) = match text.iter().position(|&b| b == b'-') {
        Some(dash) => (&text[..dash], Some(&text[dash + 1..])),
        None => (text, None),
    };
    let ms = parse_id_part(ms_part).ok_or_else(invalid)?;
    match seq_part {
        None => Ok((StreamId::new(ms, rules.missing_seq), true)),
        Some(b"*") if rules.seq_star => Ok((StreamId::new(ms, 0), false)),
        Some(seq) => Ok((
            StreamId::new(ms, parse_id_part(seq).ok_or_else(invalid)?),
            true,
        )),
    }
}

fn parse_strict_id(arg: &[u8]) -> CmdResult<StreamId> {
    parse_id_with(arg, STRICT).map(|(id, _)| id)
}

/// A range bound: `(` makes it exclusive (and strict); the result is the inclusive bound.
fn parse_bound(arg: &[u8], is_start: bool) -> CmdResult<StreamId> {
    let missing_seq = if is_start { 0 } else { u64::MAX };
    let exclusive = arg.len() > 1 && arg[0] == b'(';
    if exclusive {
        let id = parse_id_with(
            &arg[1..],
            IdRules {
                missing_seq,
                strict: true,
                seq_star: false,
            },
        )?
        .0;
        if is_start {
            id.next()
                .ok_or(Error::msg("ERR invalid start ID for the interval"))
        } else {
            id.prev()
                .ok_or(Error::msg("ERR invalid end ID for the interval"))
        }
    } else {
        Ok(parse_id_with(
            arg,
            IdRules {
                missing_seq,
                strict: false,
                seq_star: false,
            },
        )?
        .0)
    }
}

fn id_bytes(id: StreamId) -> Vec<u8> {
    id.to_bytes()
}

fn write_id(out: &mut Writer<'_>, id: StreamId) {
    out.bulk(&id_bytes(id));
}

/// `[id, [field, value, …]]`.
fn write_entry(out: &mut Writer<'_>, entry: &EntryRef<'_>) {
    out.array(2);
    write_id(out, entry.id);
    out.array(entry.field_count() * 2);
    for (field, value) in entry.fields() {
        out.bulk(field);
        out.bulk(value);
    }
}

fn stream_of(value: &mut Value) -> CmdResult<&mut Stream> {
    match value {
        Value::Stream(s) => Ok(s),
        _ => Err(Error::WrongType),
    }
}

fn node_limits(ctx: &Ctx<'_>) -> NodeLimits {
    let e = &ctx.server.config.encodings;
    NodeLimits {
        max_bytes: e.stream_node_max_bytes,
        max_entries: e.stream_node_max_entries,
    }
}

/// Reads the stream at `key` (`Ok(None)` if missing, WRONGTYPE for another type).
fn read_stream<'k>(
    ks: &'k mut Keyspace,
    db: usize,
    key: &[u8],
    now: i64,
) -> CmdResult<Option<&'k mut Stream>> {
    match ks.read(db, key, now) {
        None => Ok(None),
        Some(value) => stream_of(value).map(Some),
    }
}

fn write_stream<'k>(ctx: &'k mut Ctx<'_>, key: &[u8]) -> CmdResult<Option<&'k mut Stream>> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.write(db, key, now) {
        None => Ok(None),
        Some(value) => stream_of(value).map(Some),
    }
}

/// The XCLAIM that reproduces a pending entry's state on a replica (Redis's
/// `streamPropagateXCLAIM`): `XCLAIM key group consumer 0 id TIME t RETRYCOUNT n FORCE JUSTID
/// LASTID last`.
fn xclaim_propagation(
    key: &[u8],
    group: &[u8],
    id: Bytes,
    pending: &PendingEntry,
    last_id: StreamId,
) -> Vec<Bytes> {
    use crate::model::write_stream::integer_arg;
    vec![
        Bytes::from_static(b"XCLAIM"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(group),
        Bytes::copy_from_slice(&pending.consumer),
        Bytes::from_static(b"0"),
        id,
        Bytes::from_static(b"TIME"),
        integer_arg(pending.delivery_time),
        Bytes::from_static(b"RETRYCOUNT"),
        integer_arg(pending.delivery_count as i64),
        Bytes::from_static(b"FORCE"),
        Bytes::from_static(b"JUSTID"),
        Bytes::from_static(b"LASTID"),
        Bytes::from(id_bytes(last_id)),
    ]
}

/// `XGROUP SETID key group last ENTRIESREAD n` (Redis's `streamPropagateGroupID`).
fn setid_propagation(key: &[u8], group_name: &[u8], group: &ConsumerGroup) -> Vec<Bytes> {
    vec![
        Bytes::from_static(b"XGROUP"),
        Bytes::from_static(b"SETID"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(group_name),
        Bytes::from(id_bytes(group.last_id)),
        Bytes::from_static(b"ENTRIESREAD"),
        crate::model::write_stream::integer_arg(group.entries_read),
    ]
}

fn subcommand_syntax_error(ctx: &Ctx<'_>, container: &str) -> Error {
    let mut line = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    let name = c_str(ctx.arg(1));
    line.extend_from_slice(&name[..name.len().min(128)]);
    line.extend_from_slice(b"'. Try ");
    line.extend_from_slice(container.as_bytes());
    line.extend_from_slice(b" HELP.");
    quoted_error(&[&line])
}

/// The stream at `key`, known to exist (looked up without touching it again).
fn stream_at<'k>(ks: &'k mut Keyspace, db: usize, key: &[u8], now: i64) -> &'k mut Stream {
    match ks
        .lookup(db, key, now, crate::model::keyspace::Access::NoTouch)
        .map(|o| &mut o.value)
    {
        Some(Value::Stream(s)) => s,
        _ => unreachable!("the caller checked that the key holds a stream"),
    }
}

const NONDETERMINISTIC: &[&str] = &["nondeterministic_output"];
const ONE_RW_UPDATE: &[KeySpec] = &[KeySpec::single(1, flag::RW | flag::UPDATE)];
const ONE_RW_DELETE: &[KeySpec] = &[KeySpec::single(1, flag::RW | flag::DELETE)];
const ONE_RO_ACCESS: &[KeySpec] = &[KeySpec::single(1, flag::RO | flag::ACCESS)];
const ONE_RO: &[KeySpec] = &[KeySpec::single(1, flag::RO)];
const SECOND_RW_INSERT: &[KeySpec] = &[KeySpec::single(2, flag::RW | flag::INSERT)];
const SECOND_RW_DELETE: &[KeySpec] = &[KeySpec::single(2, flag::RW | flag::DELETE)];
const SECOND_RW_UPDATE: &[KeySpec] = &[KeySpec::single(2, flag::RW | flag::UPDATE)];
const SECOND_RO_ACCESS: &[KeySpec] = &[KeySpec::single(2, flag::RO | flag::ACCESS)];
/// The keys of XREAD: the first half of what follows STREAMS.
const XREAD_KEYS: &[KeySpec] = &[KeySpec {
    flags: flag::RO | flag::ACCESS,
    begin: crate::kernel::table::keys::Begin::Keyword {
        keyword: "STREAMS",
        start_from: 1,
    },
    find: crate::kernel::table::keys::Find::Range {
        last_key: -1,
        step: 1,
        limit: 2,
    },
    notes: "",
}];
const XREADGROUP_KEYS: &[KeySpec] = &[KeySpec {
    flags: flag::RO | flag::ACCESS,
    begin: crate::kernel::table::keys::Begin::Keyword {
        keyword: "STREAMS",
        start_from: 4,
    },
    find: crate::kernel::table::keys::Find::Range {
        last_key: -1,
        step: 1,
        limit: 2,
    },
    notes: "",
}];

const WRITE_FAST: Flags = Flags::WRITE.union(Flags::FAST);
const TRIM_SYNTAX: &str =
    "key trim=(strategy=(MAXLEN|MINID) [operator=(=|~)] threshold:string [LIMIT count:integer])";
/// XTRIM's arguments from Redis 8.2: the references option after the trim.
const TRIM_SYNTAX_8_2: &str = "key trim=(strategy=(MAXLEN|MINID) [operator=(=|~)] threshold:string [LIMIT count:integer]) condition=[KEEPREF|DELREF|ACKED]";
/// XDELEX's and XACKDEL's references option and ID block.
const DELETE_REFS_SYNTAX: &str =
    "key condition=[KEEPREF|DELREF|ACKED] IDS ids=(numids:integer id:string...)";

const XADD: CommandSpec = CommandSpec::new("xadd", -5, xadd)
    .flags(WRITE_FAST.union(Flags::DENYOOM))
    .acl(Acl::STREAM)
    .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE)
        .notes("UPDATE instead of INSERT because of the optional trimming feature")])
    .tips(NONDETERMINISTIC);
const XADD_COMPLEXITY: &str =
    "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.";
const XADD_SUMMARY: &str =
    "Appends an entry to a stream (creating it unless NOMKSTREAM), optionally trimming it.";
const XTRIM: CommandSpec = CommandSpec::new("xtrim", -4, xtrim)
    .flags(Flags::WRITE)
    .acl(Acl::STREAM)
    .keys(ONE_RW_DELETE)
    .tips(NONDETERMINISTIC);
const XTRIM_COMPLEXITY: &str = "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.";

const XGROUP_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("create", -5, xgroup)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::STREAM)
        .keys(SECOND_RW_INSERT)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Creates a consumer group reading a stream from an ID (creating the stream with MKSTREAM).",
            "key groupname:string id=(id:string|$) [MKSTREAM] [ENTRIESREAD entries_read:integer]",
        ),
    CommandSpec::new("createconsumer", 5, xgroup)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::STREAM)
        .keys(SECOND_RW_INSERT)
        .doc(
            "stream",
            "6.2.0",
            "O(1)",
            "Adds a consumer to a consumer group.",
            "key groupname:string consumername:string",
        ),
    CommandSpec::new("delconsumer", 5, xgroup)
        .flags(Flags::WRITE)
        .acl(Acl::STREAM)
        .keys(SECOND_RW_DELETE)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Removes a consumer (and its pending entries) from a consumer group.",
            "key groupname:string consumername:string",
        ),
    CommandSpec::new("destroy", 4, xgroup)
        .flags(Flags::WRITE)
        .acl(Acl::STREAM)
        .keys(SECOND_RW_DELETE)
        .doc(
            "stream",
            "5.0.0",
            "O(N) where N is the number of entries in the group's pending entries list (PEL).",
            "Deletes a consumer group.",
            "key groupname:string",
        ),
    CommandSpec::new("help", 2, xgroup)
        .flags(Flags::LOADING.union(Flags::STALE))
        .acl(Acl::STREAM)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Lists the XGROUP subcommands.",
            "",
        ),
    CommandSpec::new("setid", -5, xgroup)
        .flags(Flags::WRITE)
        .acl(Acl::STREAM)
        .keys(SECOND_RW_UPDATE)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Moves a consumer group's last delivered ID (and its entries-read counter).",
            "key groupname:string id=(id:string|$) [ENTRIESREAD entries_read:integer]",
        ),
];

const XINFO_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("consumers", 4, xinfo)
        .flags(Flags::READONLY)
        .acl(Acl::STREAM)
        .keys(SECOND_RO_ACCESS)
        .tips(NONDETERMINISTIC)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Lists the consumers of a consumer group.",
            "key groupname:string",
        ),
    CommandSpec::new("groups", 3, xinfo)
        .flags(Flags::READONLY)
        .acl(Acl::STREAM)
        .keys(SECOND_RO_ACCESS)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Lists the consumer groups of a stream.",
            "key",
        ),
    CommandSpec::new("help", 2, xinfo)
        .flags(Flags::LOADING.union(Flags::STALE))
        .acl(Acl::STREAM)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Lists the XINFO subcommands.",
            "",
        ),
    CommandSpec::new("stream", -3, xinfo)
        .flags(Flags::READONLY)
        .acl(Acl::STREAM)
        .keys(SECOND_RO_ACCESS)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Describes a stream (with FULL: its entries, groups, consumers and pending entries).",
            "key [FULL full=([COUNT count:integer])]",
        ),
];

pub static COMMANDS: &[CommandSpec] = &[
    XADD.until("8.2.0").doc(
        "stream",
        "5.0.0",
        XADD_COMPLEXITY,
        XADD_SUMMARY,
        "key [NOMKSTREAM] [trim=(strategy=(MAXLEN|MINID) [operator=(=|~)] threshold:string [LIMIT count:integer])] id_or_auto=(*|id:string) field_value=(field:string value:string)...",
    ),
    XADD.from("8.2.0").doc(
        "stream",
        "5.0.0",
        XADD_COMPLEXITY,
        XADD_SUMMARY,
        "key [NOMKSTREAM] condition=[KEEPREF|DELREF|ACKED] [trim=(strategy=(MAXLEN|MINID) [operator=(=|~)] threshold:string [LIMIT count:integer])] id_or_auto=(*|id:string) field_value=(field:string value:string)...",
    ),
    CommandSpec::new("xrange", -4, xrange)
        .flags(Flags::READONLY)
        .acl(Acl::STREAM)
        .keys(ONE_RO_ACCESS)
        .doc(
            "stream",
            "5.0.0",
            "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
            "Returns the entries of a stream between two IDs.",
            "key start:string end:string [COUNT count:integer]",
        ),
    CommandSpec::new("xrevrange", -4, xrevrange)
        .flags(Flags::READONLY)
        .acl(Acl::STREAM)
        .keys(ONE_RO_ACCESS)
        .doc(
            "stream",
            "5.0.0",
            "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
            "Returns the entries of a stream between two IDs, newest first.",
            "key end:string start:string [COUNT count:integer]",
        ),
    CommandSpec::new("xlen", 2, xlen)
        .flags(Flags::READONLY.union(Flags::FAST))
        .acl(Acl::STREAM)
        .keys(ONE_RO)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Returns the number of entries in a stream.",
            "key",
        ),
    CommandSpec::new("xdel", -3, xdel)
        .flags(WRITE_FAST)
        .acl(Acl::STREAM)
        .keys(ONE_RW_DELETE)
        .doc(
            "stream",
            "5.0.0",
            "O(1) for each single item to delete in the stream, regardless of the stream size.",
            "Deletes entries from a stream; returns how many existed.",
            "key id:string...",
        ),
    XTRIM.until("8.2.0").doc(
        "stream",
        "5.0.0",
        XTRIM_COMPLEXITY,
        "Removes the oldest entries of a stream, by count or by ID.",
        TRIM_SYNTAX,
    ),
    XTRIM.from("8.2.0").doc(
        "stream",
        "5.0.0",
        XTRIM_COMPLEXITY,
        "Removes the oldest entries of a stream, by count or by ID, minding consumer groups' references.",
        TRIM_SYNTAX_8_2,
    ),
    CommandSpec::new("xdelex", -5, xdelex)
        .flags(WRITE_FAST)
        .acl(Acl::STREAM)
        .keys(ONE_RW_DELETE)
        .doc(
            "stream",
            "8.2.0",
            "O(1) for each single item to delete in the stream, regardless of the stream size.",
            "Deletes entries from a stream, keeping, dropping or minding consumer groups' references; one code per ID.",
            DELETE_REFS_SYNTAX,
        ),
    CommandSpec::new("xackdel", -6, xackdel)
        .flags(WRITE_FAST)
        .acl(Acl::STREAM)
        .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE | flag::DELETE)])
        .doc(
            "stream",
            "8.2.0",
            "O(1) for each message ID processed.",
            "Acknowledges entries of a group's pending list and deletes them from the stream; one code per ID.",
            "key group:string condition=[KEEPREF|DELREF|ACKED] IDS ids=(numids:integer id:string...)",
        ),
    CommandSpec::new("xsetid", -3, xsetid)
        .flags(WRITE_FAST.union(Flags::DENYOOM))
        .acl(Acl::STREAM)
        .keys(ONE_RW_UPDATE)
        .doc(
            "stream",
            "5.0.0",
            "O(1)",
            "Sets a stream's last ID (and its entries-added and max-deleted-entry-id counters).",
            "key last-id:string [ENTRIESADDED entries_added:integer] [MAXDELETEDID max_deleted_entry_id:string]",
        ),
    CommandSpec::new("xread", -4, xread)
        .flags(Flags::BLOCKING.union(Flags::READONLY))
        .acl(Acl::STREAM)
        .keys(XREAD_KEYS)
        .doc(
            "stream",
            "5.0.0",
            "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
            "Returns entries newer than given IDs from one or more streams, waiting for them with BLOCK.",
            "[COUNT count:integer] [BLOCK milliseconds:integer] STREAMS streams=(key:key... id:string...)",
        ),
    CommandSpec::new("xreadgroup", -7, xreadgroup)
        .flags(Flags::BLOCKING.union(Flags::WRITE))
        .acl(Acl::STREAM)
        .keys(XREADGROUP_KEYS)
        .doc(
            "stream",
            "5.0.0",
            "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
            "Reads entries for a consumer of a group: new ones (>), or its own pending history.",
            "GROUP group_consumer=(group:string consumer:string) [COUNT count:integer] [BLOCK milliseconds:integer] [NOACK] STREAMS streams=(key:key... id:string...)",
        ),
    CommandSpec::container("xgroup", XGROUP_SUBCOMMANDS).doc(
        "stream",
        "5.0.0",
        "Depends on subcommand.",
        "Container for the consumer group commands.",
        "",
    ),
    CommandSpec::new("xack", -4, xack)
        .flags(WRITE_FAST)
        .acl(Acl::STREAM)
        .keys(ONE_RW_UPDATE)
        .doc(
            "stream",
            "5.0.0",
            "O(1) for each message ID processed.",
            "Acknowledges entries of a group's pending list; returns how many were pending.",
            "key group:string id:string...",
        ),
    CommandSpec::new("xpending", -3, xpending)
        .flags(Flags::READONLY)
        .acl(Acl::STREAM)
        .keys(ONE_RO_ACCESS)
        .tips(NONDETERMINISTIC)
        .doc(
            "stream",
            "5.0.0",
            "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
            "Summarises a group's pending entries, or lists them with owners, idle times and delivery counts.",
            "key group:string [filters=([IDLE min-idle-time:integer] start:string end:string count:integer [consumer:string])]",
        ),
    CommandSpec::new("xclaim", -6, xclaim)
        .flags(WRITE_FAST)
        .acl(Acl::STREAM)
        .keys(ONE_RW_UPDATE)
        .tips(NONDETERMINISTIC)
        .doc(
            "stream",
            "5.0.0",
            "O(log N) with N being the number of messages in the PEL of the consumer group.",
            "Transfers pending entries idle long enough to another consumer.",
            "key group:string consumer:string min-idle-time:string id:string... [IDLE ms:integer] [TIME unix-time-milliseconds:unix-time] [RETRYCOUNT count:integer] [FORCE] [JUSTID] [LASTID id:string]",
        ),
    CommandSpec::new("xautoclaim", -6, xautoclaim)
        .flags(WRITE_FAST)
        .acl(Acl::STREAM)
        .keys(ONE_RW_DELETE)
        .tips(NONDETERMINISTIC)
        .doc(
            "stream",
            "6.2.0",
            "O(1) if COUNT is small.",
            "Transfers pending entries idle long enough to another consumer, scanning the PEL from a cursor.",
            "key group:string consumer:string min-idle-time:string start:string [COUNT count:integer] [JUSTID]",
        ),
    CommandSpec::container("xinfo", XINFO_SUBCOMMANDS).doc(
        "stream",
        "5.0.0",
        "Depends on subcommand.",
        "Container for the stream introspection commands.",
        "",
    ),
];
