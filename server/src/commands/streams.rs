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

use bytes::{Bytes, BytesMut};
use embedis_datatypes::stream::{
    ConsumerGroup, EntryRef, NodeLimits, PendingEntry, Stream, StreamId, Trim, TrimTo,
    ENTRIES_READ_UNKNOWN, LISTPACK_MAX_SIZE,
};
use embedis_protocol::number::parse_i64;
use embedis_protocol::Writer;

use crate::base::config::event_class::STREAM;
use crate::base::cstr::{c_str, word_is};
use crate::base::error::{CmdResult, Error};
use crate::base::value::{Value, ValueType};
use crate::commands::common::{deadline_from_ms, write_help};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, KeySpec};
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::keyspace::Keyspace;

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
    CommandSpec::new("xadd", -5, xadd)
        .flags(WRITE_FAST.union(Flags::DENYOOM))
        .acl(Acl::STREAM)
        .keys(&[KeySpec::single(1, flag::RW | flag::UPDATE)
            .notes("UPDATE instead of INSERT because of the optional trimming feature")])
        .tips(NONDETERMINISTIC)
        .doc(
            "stream",
            "5.0.0",
            "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
            "Appends an entry to a stream (creating it unless NOMKSTREAM), optionally trimming it.",
            "key [NOMKSTREAM] [trim=(strategy=(MAXLEN|MINID) [operator=(=|~)] threshold:string [LIMIT count:integer])] id_or_auto=(*|id:string) field_value=(field:string value:string)...",
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
    CommandSpec::new("xtrim", -4, xtrim)
        .flags(Flags::WRITE)
        .acl(Acl::STREAM)
        .keys(ONE_RW_DELETE)
        .tips(NONDETERMINISTIC)
        .doc(
            "stream",
            "5.0.0",
            "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
            "Removes the oldest entries of a stream, by count or by ID.",
            TRIM_SYNTAX,
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
        trim: to.map(|to| Trim { to, approx, limit }),
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
            TrimTo::MaxLen(_) => crate::model::write_stream::int_arg(stream.0 as i64),
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

fn xadd(ctx: &mut Ctx<'_>) -> CmdResult {
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

fn xtrim(ctx: &mut Ctx<'_>) -> CmdResult {
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

fn xrange(ctx: &mut Ctx<'_>) -> CmdResult {
    range_generic(ctx, false)
}

fn xrevrange(ctx: &mut Ctx<'_>) -> CmdResult {
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

fn xlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let len = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)?.map_or(0, |s| s.length);
    ctx.out.integer(len as i64);
    Ok(())
}

fn xdel(ctx: &mut Ctx<'_>) -> CmdResult {
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

fn xsetid(ctx: &mut Ctx<'_>) -> CmdResult {
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
    let stream = stream_at(ctx.ks, db, key, now);
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

fn xread(ctx: &mut Ctx<'_>) -> CmdResult {
    read_generic(ctx, false)
}

fn xreadgroup(ctx: &mut Ctx<'_>) -> CmdResult {
    // What it changes propagates as XCLAIMs (or XGROUP SETID / CREATECONSUMER with NOACK).
    ctx.prevent_propagation();
    read_generic(ctx, true)
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
    use crate::model::write_stream::int_arg;
    vec![
        Bytes::from_static(b"XCLAIM"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(group),
        Bytes::copy_from_slice(&pending.consumer),
        Bytes::from_static(b"0"),
        id,
        Bytes::from_static(b"TIME"),
        int_arg(pending.delivery_time),
        Bytes::from_static(b"RETRYCOUNT"),
        int_arg(pending.delivery_count as i64),
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
        crate::model::write_stream::int_arg(group.entries_read),
    ]
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
            if ctx.from_script {
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
                return Err(Error::msg("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."));
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
    if let Some(woken_by) = ctx.woken_by {
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
        } else if word == b">" {
            if !is_group {
                return Err(Error::msg("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."));
            }
            ids.push(NEW_ENTRIES);
        } else {
            ids.push(parse_strict_id(id_arg)?);
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
    if history {
        serve_history(stream, group_name, consumer_name, start, count, now, part);
    } else {
        serve_new(
            stream,
            group_name,
            consumer_name,
            start,
            count,
            read.noack,
            now,
            part,
            propagating.then_some((key, &mut ops)),
        );
    }
    let db = ctx.db();
    for op in ops {
        ctx.ks.stream.also(db, op);
    }
    ctx.ks.dirty += 1 + u64::from(created);
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

/// New entries from `start` for a group's `>`: the group's last ID and entries-read advance, and
/// (unless NOACK) each entry goes to the consumer's pending list.
#[allow(clippy::too_many_arguments)]
fn serve_new(
    stream: &mut Stream,
    group_name: &[u8],
    consumer_name: &[u8],
    start: StreamId,
    count: usize,
    noack: bool,
    now: i64,
    out: &mut Writer<'_>,
    mut propagate: Option<(&[u8], &mut Vec<Vec<Bytes>>)>,
) {
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
    if let Some((key, ops)) = propagate {
        if noack && last_id_moved {
            ops.push(setid_propagation(
                key,
                group_name,
                &stream.groups[group_name],
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// XGROUP
// ---------------------------------------------------------------------------------------------

fn subcommand_syntax_error(ctx: &Ctx<'_>, container: &str) -> Error {
    let mut line = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    let name = c_str(ctx.arg(1));
    line.extend_from_slice(&name[..name.len().min(128)]);
    line.extend_from_slice(b"'. Try ");
    line.extend_from_slice(container.as_bytes());
    line.extend_from_slice(b" HELP.");
    quoted_error(&[&line])
}

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

fn xgroup(ctx: &mut Ctx<'_>) -> CmdResult {
    let argc = ctx.argc();
    let sub = ctx.arg(1);
    if argc == 2 && word_is(sub, "help") {
        write_help(ctx, XGROUP_HELP);
        return Ok(());
    }
    let create = word_is(sub, "create");
    let setid = word_is(sub, "setid");
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
    let needs_group = setid || word_is(sub, "createconsumer") || word_is(sub, "delconsumer");
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
    if create && (5..=8).contains(&argc) {
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
    } else if setid && (argc == 5 || argc == 7) {
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
    } else if word_is(sub, "destroy") && argc == 4 {
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
    } else if word_is(sub, "createconsumer") && argc == 5 {
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
    } else if word_is(sub, "delconsumer") && argc == 5 {
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
    } else {
        return Err(subcommand_syntax_error(ctx, "XGROUP"));
    }
    Ok(())
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

// ---------------------------------------------------------------------------------------------
// XACK, XPENDING, XCLAIM, XAUTOCLAIM
// ---------------------------------------------------------------------------------------------

fn xack(ctx: &mut Ctx<'_>) -> CmdResult {
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

fn xpending(ctx: &mut Ctx<'_>) -> CmdResult {
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

fn xclaim(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, name, consumer) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let argc = ctx.argc();
    let now = ctx.now_ms;
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
    let mut ops = Vec::new();
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
    let stream = stream_at(ctx.ks, ctx.db(), key, ctx.now_ms);
    let mut dirty = 0u64;
    let mut propagate_last_id = false;
    {
        let group = stream.groups.get_mut(name).expect("checked above");
        if last_id > group.last_id {
            group.last_id = last_id;
            dirty = 1;
            propagate_last_id = true;
        }
    }
    let args: &[Bytes] = ctx.args;
    let mut claimed = Vec::new();
    let mut consumer_created = false;
    let mut consumer_seen = false;
    for (id, at) in ids {
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
        if current.is_none() && !force {
            continue;
        }
        if let Some(p) = &current {
            if min_idle > 0 && now - p.delivery_time < min_idle {
                continue;
            }
        }
        if !consumer_seen {
            let (c, created) = group.consumer_or_create(consumer, now);
            c.seen_time = now;
            consumer_created = created;
            consumer_seen = true;
        }
        let previous_count = current.as_ref().map_or(0, |p| p.delivery_count);
        let deliveries = match retry_count {
            Some(n) if n >= 0 => n as u64,
            _ if !justid => previous_count + 1,
            _ => previous_count,
        };
        group.assign(id, consumer, delivery_time, deliveries);
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
    let db = ctx.db();
    for op in ops {
        ctx.ks.stream.also(db, op);
    }
    ctx.out.array(claimed.len());
    // The consumer is created with the first claim, before its entry is written.
    if consumer_created {
        dirty += 1;
        ctx.notify(STREAM, "xgroup-createconsumer", key);
    }
    write_claimed(ctx, key, &claimed, justid);
    ctx.ks.dirty += dirty;
    Ok(())
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

fn xautoclaim(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, name, consumer) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let now = ctx.now_ms;
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
    {
        let stream = read_stream(ctx.ks, ctx.db(), key, ctx.now_ms)?;
        if !stream.is_some_and(|s| s.groups.contains_key(name)) {
            return Err(nokey_or_group(key, name));
        }
    }
    // Redis allocates COUNT IDs up front and reports a failed allocation; no allocator serves a
    // terabyte of IDs, so past that we answer as Redis does (and allocate nothing up front).
    if (count as u64).saturating_mul(16) > 1 << 40 {
        return Err(Error::msg(
            "ERR Insufficient memory, failed allocating transient memory, COUNT too high.",
        ));
    }
    ctx.prevent_propagation();
    let propagating = ctx.ks.stream.is_on();
    let mut ops = Vec::new();
    let stream = stream_at(ctx.ks, ctx.db(), key, ctx.now_ms);
    let mut budget = count as u64;
    let mut attempts = budget.saturating_mul(10);
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut consumer_created = false;
    let mut consumer_seen = false;
    let mut cursor = Some(start);
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
    // The cursor for the next call: the next pending ID, or 0-0 when the scan is complete.
    let next_cursor = cursor
        .and_then(|from| {
            stream.groups[name]
                .pel
                .range(from..)
                .next()
                .map(|(id, _)| *id)
        })
        .unwrap_or(StreamId::MIN);
    ctx.out.array(3);
    write_id(&mut ctx.out, next_cursor);
    ctx.out.array(claimed.len());
    if consumer_created {
        dirty += 1;
        ctx.notify(STREAM, "xgroup-createconsumer", key);
    }
    write_claimed(ctx, key, &claimed, justid);
    ctx.out.array(deleted.len());
    for id in &deleted {
        write_id(&mut ctx.out, *id);
    }
    let db = ctx.db();
    for op in ops {
        ctx.ks.stream.also(db, op);
    }
    ctx.ks.dirty += dirty;
    Ok(())
}

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

fn xinfo(ctx: &mut Ctx<'_>) -> CmdResult {
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
        write_stream_info(&mut ctx.out, stream, full);
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
            out.map(3);
            out.bulk(b"name");
            out.bulk(consumer_name);
            out.bulk(b"pending");
            out.integer(consumer.pending.len() as i64);
            out.bulk(b"idle");
            out.integer((now - consumer.seen_time).max(0));
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
fn write_stream_info(out: &mut Writer<'_>, stream: &Stream, full: Option<usize>) {
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
            out.map(4);
            out.bulk(b"name");
            out.bulk(consumer_name);
            out.bulk(b"seen-time");
            out.integer(consumer.seen_time);
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
