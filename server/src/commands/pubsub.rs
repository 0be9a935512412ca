//! Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH and the PUBSUB
//! introspection container.
//!
//! The subscription index lives in [`crate::pubsub`]. Confirmations and messages are pushes
//! (`>` in RESP3, plain arrays in RESP2). A message for the publishing client itself (a RESP3
//! client may publish while subscribed) is written before PUBLISH's own reply, as Redis does;
//! messages for other clients go to their pending output, and a subscriber whose unsent output
//! passes its `client-output-buffer-limit` is scheduled to be closed instead of growing without
//! bound. Pushes reach the client even while CLIENT REPLY OFF or SKIP throws its replies away (Redis
//! marks them as pushes and lets them through, in RESP2 as in RESP3): they then go to the
//! client's pending output, which the engine puts in the place of the discarded reply. embedis runs no cluster, so shard channels are simply a second namespace with their
//! own count.

use bytes::{Bytes, BytesMut};
use embedis_protocol::{Version, Writer};

use crate::client::{ClientId, ClientState, ReplyMode};
use crate::config::ObufLimit;
use crate::cstr::c_str;
use crate::ctx::Ctx;
use crate::error::{CmdResult, Error};
use crate::pubsub::{self, Kind};
use crate::state::EngineRequest;
use crate::table::keys::{flag, KeySpec};
use crate::table::{Acl, CommandSpec, Flags};

const SUBSCRIBE_FLAGS: Flags = Flags::PUBSUB
    .union(Flags::NOSCRIPT)
    .union(Flags::LOADING)
    .union(Flags::STALE);
/// With Redis's hidden `may_replicate` (CLIENT PAUSE WRITE holds a publish).
const PUBLISH_FLAGS: Flags = Flags::PUBSUB
    .union(Flags::LOADING)
    .union(Flags::STALE)
    .union(Flags::FAST)
    .union(Flags::MAY_REPLICATE);
const INTROSPECTION_FLAGS: Flags = Flags::PUBSUB.union(Flags::LOADING).union(Flags::STALE);

/// Shard channel names are keys to a cluster (for slot routing), but not keys of the keyspace.
static SHARD_CHANNELS: &[KeySpec] = &[KeySpec::range(1, -1, 1, flag::NOT_KEY)];
static SHARD_CHANNEL: &[KeySpec] = &[KeySpec::single(1, flag::NOT_KEY)];

const fn sub(name: &'static str, arity: i32, handler: crate::table::Handler) -> CommandSpec {
    CommandSpec::new(name, arity, handler).flags(INTROSPECTION_FLAGS)
}

static SUBCOMMANDS: &[CommandSpec] = &[
    sub("channels", -2, channels).doc(
        "pubsub",
        "2.8.0",
        "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
        "Lists the channels that have subscribers, optionally only those matching a pattern.",
        "[pattern:pattern]",
    ),
    sub("numsub", -2, numsub).doc(
        "pubsub",
        "2.8.0",
        "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
        "Counts the subscribers of each given channel (pattern subscribers not included).",
        "[channel...]",
    ),
    sub("numpat", 2, numpat).doc(
        "pubsub",
        "2.8.0",
        "O(1)",
        "Counts the patterns that have subscribers.",
        "",
    ),
    sub("shardchannels", -2, shardchannels).doc(
        "pubsub",
        "7.0.0",
        "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
        "Lists the shard channels that have subscribers, optionally only those matching a pattern.",
        "[pattern:pattern]",
    ),
    sub("shardnumsub", -2, shardnumsub).doc(
        "pubsub",
        "7.0.0",
        "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
        "Counts the subscribers of each given shard channel.",
        "[shardchannel...]",
    ),
    CommandSpec::new("help", 2, help)
        .flags(Flags::LOADING.union(Flags::STALE))
        .doc("pubsub", "6.2.0", "O(1)", "Describes the PUBSUB subcommands.", ""),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("subscribe", -2, subscribe)
        .flags(SUBSCRIBE_FLAGS)
        .doc(
            "pubsub",
            "2.0.0",
            "O(N) where N is the number of channels to subscribe to.",
            "Starts listening to messages published to the given channels.",
            "channel...",
        ),
    CommandSpec::new("unsubscribe", -1, unsubscribe)
        .flags(SUBSCRIBE_FLAGS)
        .doc(
            "pubsub",
            "2.0.0",
            "O(N) where N is the number of clients already subscribed to a channel.",
            "Stops listening to the given channels, or to all channels.",
            "[channel...]",
        ),
    CommandSpec::new("psubscribe", -2, psubscribe)
        .flags(SUBSCRIBE_FLAGS)
        .doc(
            "pubsub",
            "2.0.0",
            "O(N) where N is the number of patterns the client is already subscribed to.",
            "Starts listening to messages published to channels matching the given patterns.",
            "pattern=(pattern:pattern)...",
        ),
    CommandSpec::new("punsubscribe", -1, punsubscribe)
        .flags(SUBSCRIBE_FLAGS)
        .doc(
            "pubsub",
            "2.0.0",
            "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
            "Stops listening to the given patterns, or to all patterns.",
            "[pattern:pattern...]",
        ),
    CommandSpec::new("publish", 3, publish)
        .flags(PUBLISH_FLAGS)
        .doc(
            "pubsub",
            "2.0.0",
            "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
            "Sends a message to a channel; answers how many clients received it.",
            "channel message",
        ),
    CommandSpec::new("ssubscribe", -2, ssubscribe)
        .flags(SUBSCRIBE_FLAGS)
        .keys(SHARD_CHANNELS)
        .doc(
            "pubsub",
            "7.0.0",
            "O(N) where N is the number of shard channels to subscribe to.",
            "Starts listening to messages published to the given shard channels.",
            "shardchannel...",
        ),
    CommandSpec::new("sunsubscribe", -1, sunsubscribe)
        .flags(SUBSCRIBE_FLAGS)
        .keys(SHARD_CHANNELS)
        .doc(
            "pubsub",
            "7.0.0",
            "O(N) where N is the number of clients already subscribed to a shard channel.",
            "Stops listening to the given shard channels, or to all shard channels.",
            "[shardchannel...]",
        ),
    CommandSpec::new("spublish", 3, spublish)
        .flags(PUBLISH_FLAGS)
        .keys(SHARD_CHANNEL)
        .doc(
            "pubsub",
            "7.0.0",
            "O(N) where N is the number of clients subscribed to the receiving shard channel.",
            "Sends a message to a shard channel; answers how many clients received it.",
            "shardchannel message",
        ),
    CommandSpec::container("pubsub", SUBCOMMANDS)
        .acl(Acl::NONE)
        .doc(
            "pubsub",
            "2.8.0",
            "Depends on subcommand.",
            "Container for the pub/sub introspection commands.",
            "",
        ),
];

fn subscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    subscribe_to(ctx, Kind::Channel)
}

fn psubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    subscribe_to(ctx, Kind::Pattern)
}

fn ssubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    subscribe_to(ctx, Kind::Shard)
}

fn unsubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    unsubscribe_from(ctx, Kind::Channel)
}

fn punsubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    unsubscribe_from(ctx, Kind::Pattern)
}

fn sunsubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    unsubscribe_from(ctx, Kind::Shard)
}

/// One confirmation per name, in argument order, each with the running count; subscribing to a
/// name twice confirms again without counting it twice.
fn subscribe_to(ctx: &mut Ctx<'_>, kind: Kind) -> CmdResult {
    let id = ctx.client.id;
    for name in &ctx.args[1..] {
        if ctx.client.subs.of_mut(kind).insert(name.clone()) {
            ctx.server.pubsub.subscribe(kind, name, id);
        }
        let count = ctx.client.subs.count(kind);
        confirm(ctx, kind.subscribe_word(), Some(name), count);
    }
    Ok(())
}

/// True while the client's replies are thrown away (CLIENT REPLY OFF or SKIP), when its pushes
/// must take the pending path of [`own_pushes`].
fn replies_suppressed(client: &ClientState) -> bool {
    matches!(client.reply_mode, ReplyMode::Off | ReplyMode::Skip)
}

/// Where the running client's own pushes go: its reply, or its pending output while its replies
/// are suppressed (the engine moves that output into the reply's place).
fn own_pushes<'b>(ctx: &'b mut Ctx<'_>) -> &'b mut BytesMut {
    if replies_suppressed(ctx.client) {
        &mut ctx.client.pending
    } else {
        ctx.out.buffer()
    }
}

/// One (un)subscribe confirmation: `[word, name or null, count]` as a push.
fn confirm(ctx: &mut Ctx<'_>, word: &[u8], name: Option<&[u8]>, count: usize) {
    let version = ctx.client.resp;
    let mut out = Writer::new(own_pushes(ctx), version);
    out.push(3);
    out.bulk(word);
    match name {
        Some(name) => out.bulk(name),
        None => out.null(),
    }
    out.integer(count as i64);
}

/// Without names: leaves every subscription of the kind, or, with none, confirms with a null
/// name. With names: one confirmation each, whether or not the client listened to it.
fn unsubscribe_from(ctx: &mut Ctx<'_>, kind: Kind) -> CmdResult {
    let id = ctx.client.id;
    if ctx.argc() == 1 {
        if ctx.client.subs.of(kind).is_empty() {
            let count = ctx.client.subs.count(kind);
            confirm(ctx, kind.unsubscribe_word(), None, count);
            return Ok(());
        }
        let names = std::mem::take(ctx.client.subs.of_mut(kind));
        let mut left = names.len();
        for name in names {
            ctx.server.pubsub.unsubscribe(kind, &name, id);
            left -= 1;
            // The count goes down one name at a time, the names still held included.
            let count = match kind {
                Kind::Shard => left,
                Kind::Channel => left + ctx.client.subs.patterns.len(),
                Kind::Pattern => left + ctx.client.subs.channels.len(),
            };
            confirm(ctx, kind.unsubscribe_word(), Some(&name), count);
        }
        return Ok(());
    }
    for name in &ctx.args[1..] {
        if ctx
            .client
            .subs
            .of_mut(kind)
            .shift_remove(name.as_ref() as &[u8])
        {
            ctx.server.pubsub.unsubscribe(kind, name, id);
        }
        let count = ctx.client.subs.count(kind);
        confirm(ctx, kind.unsubscribe_word(), Some(name), count);
    }
    Ok(())
}

/// A message encoded once for all its receivers. A RESP3 push differs from the RESP2 array of
/// the same strings only in its first byte (`>` for `*`), so one encoding serves both.
struct Encoded {
    resp2: BytesMut,
}

impl Encoded {
    fn new(parts: &[&[u8]]) -> Encoded {
        let mut resp2 = BytesMut::new();
        let mut w = Writer::new(&mut resp2, Version::Resp2);
        w.push(parts.len());
        for part in parts {
            w.bulk(part);
        }
        Encoded { resp2 }
    }

    /// Appends the message as a client speaking `version` receives it.
    fn write_to(&self, out: &mut BytesMut, version: Version) {
        match version {
            Version::Resp2 => out.extend_from_slice(&self.resp2),
            Version::Resp3 => {
                out.extend_from_slice(b">");
                out.extend_from_slice(&self.resp2[1..]);
            }
        }
    }
}

fn publish(ctx: &mut Ctx<'_>) -> CmdResult {
    let channel = ctx.arg(1);
    let message = ctx.arg(2);
    let mut receivers = 0;
    // The index is read while clients are written to: take the ids out first.
    let direct: Vec<ClientId> = ctx.server.pubsub.subscribers(channel, false).to_vec();
    if !direct.is_empty() {
        let encoded = Encoded::new(&[b"message", channel, message]);
        for id in direct {
            deliver(ctx, id, &encoded);
            receivers += 1;
        }
    }
    let patterns: Vec<(Bytes, Vec<ClientId>)> = ctx
        .server
        .pubsub
        .matching_patterns(channel)
        .map(|(p, ids)| (p.clone(), ids.to_vec()))
        .collect();
    for (pattern, ids) in patterns {
        let encoded = Encoded::new(&[b"pmessage", &pattern, channel, message]);
        for id in ids {
            deliver(ctx, id, &encoded);
            receivers += 1;
        }
    }
    ctx.out.integer(receivers);
    Ok(())
}

fn spublish(ctx: &mut Ctx<'_>) -> CmdResult {
    let channel = ctx.arg(1);
    let ids: Vec<ClientId> = ctx.server.pubsub.subscribers(channel, true).to_vec();
    if !ids.is_empty() {
        let encoded = Encoded::new(&[b"smessage", channel, ctx.arg(2)]);
        for &id in &ids {
            deliver(ctx, id, &encoded);
        }
    }
    ctx.out.integer(ids.len() as i64);
    Ok(())
}

/// Hands a message to one subscriber: the publisher itself gets it before its reply (from a
/// script: before the script's reply); another client gets it in its pending output, unless that
/// output is over its limit — then the client is scheduled to be closed (as Redis's
/// `closeClientOnOutputBufferLimitReached`).
fn deliver(ctx: &mut Ctx<'_>, id: ClientId, message: &Encoded) {
    if id == ctx.client.id {
        if ctx.from_script {
            // Not into redis.call's reply, which the script would read as PUBLISH's answer.
            message.write_to(&mut ctx.client.pending, ctx.client.resp);
            ctx.server.pending_writes.push(id);
        } else {
            let version = ctx.client.resp;
            message.write_to(own_pushes(ctx), version);
        }
        return;
    }
    let Some(client) = ctx.clients.get_mut(id) else {
        return;
    };
    if client.obuf.closing {
        return;
    }
    message.write_to(&mut client.pending, client.resp);
    ctx.server.pending_writes.push(id);
    let limit = ctx.server.config.obuf_limits[class_of(client)];
    if pubsub::over_limit(client, &limit, ctx.now_ms) {
        client.obuf.closing = true;
        client.pending.clear();
        let info = client.info_line(ctx.now_ms, ctx.ks.watches.is_broken(id));
        ctx.server.log.warning(&format!(
            "Client {info} scheduled to be closed ASAP for overcoming of output buffer limits."
        ));
        ctx.server.requests.push(EngineRequest::Kill { id });
    }
}

/// The output-buffer limit class of a client (Redis's `getClientType`): MONITOR clients are
/// replicas to Redis, subscribers are pub/sub clients, everyone else is normal.
fn class_of(client: &ClientState) -> usize {
    if client.monitor {
        ObufLimit::REPLICA
    } else if client.subs.total() > 0 {
        ObufLimit::PUBSUB
    } else {
        ObufLimit::NORMAL
    }
}

fn channels(ctx: &mut Ctx<'_>) -> CmdResult {
    list_channels(ctx, false)
}

fn shardchannels(ctx: &mut Ctx<'_>) -> CmdResult {
    list_channels(ctx, true)
}

fn list_channels(ctx: &mut Ctx<'_>, shard: bool) -> CmdResult {
    if ctx.argc() > 3 {
        return Err(subcommand_syntax_error(ctx));
    }
    let pattern = if ctx.argc() == 3 {
        Some(ctx.arg(2))
    } else {
        None
    };
    let names = ctx.server.pubsub.channel_names(shard, pattern);
    ctx.out.array(names.len());
    for name in names {
        ctx.out.bulk(name);
    }
    Ok(())
}

fn numsub(ctx: &mut Ctx<'_>) -> CmdResult {
    count_subscribers(ctx, false)
}

fn shardnumsub(ctx: &mut Ctx<'_>) -> CmdResult {
    count_subscribers(ctx, true)
}

/// Name, count, name, count… as a flat array (Redis sends an array here in RESP3 too).
fn count_subscribers(ctx: &mut Ctx<'_>, shard: bool) -> CmdResult {
    ctx.out.array((ctx.argc() - 2) * 2);
    for name in &ctx.args[2..] {
        ctx.out.bulk(name);
        let count = ctx.server.pubsub.subscribers(name, shard).len();
        ctx.out.integer(count as i64);
    }
    Ok(())
}

fn numpat(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.integer(ctx.server.pubsub.pattern_count() as i64);
    Ok(())
}

/// Redis's error for a subcommand whose arguments fit none of its forms.
fn subcommand_syntax_error(ctx: &Ctx<'_>) -> Error {
    let mut line = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    let name = c_str(ctx.arg(1));
    line.extend_from_slice(&name[..name.len().min(128)]);
    line.extend_from_slice(b"'. Try PUBSUB HELP.");
    Error::bytes(line)
}

const HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Lists the channels with subscribers, all or those matching <pattern>.",
    "NUMPAT",
    "    Counts the patterns with subscribers.",
    "NUMSUB [<channel> ...]",
    "    Counts the subscribers of each channel given (pattern subscribers are not",
    "    counted).",
    "SHARDCHANNELS [<pattern>]",
    "    Lists the shard channels with subscribers, all or those matching <pattern>.",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Counts the subscribers of each shard channel given.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    crate::commands::common::write_help(ctx, HELP);
    Ok(())
}
