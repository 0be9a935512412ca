//! Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH and the PUBSUB
//! introspection container.
//!
//! The subscription index lives in [`crate::model::pubsub`]; delivering a message (to the publisher
//! itself before its reply, to others within their output-buffer limits, through CLIENT REPLY
//! OFF) is [`crate::kernel::publish`]'s, which keyspace notifications and tracking invalidations share.
//! Confirmations and messages are pushes (`>` in RESP3, plain arrays in RESP2). embedis runs no
//! cluster, so shard channels are simply a second namespace with their own count.

use embedis_protocol::Writer;

use crate::base::cstr::c_str;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::kernel::publish::{self, own_pushes};
use crate::kernel::table::keys::{flag, KeySpec};
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::pubsub::Kind;

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

fn publish(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let receivers = publish::publish(ctx, &args[1], &args[2]);
    propagate(ctx, false);
    ctx.out.integer(receivers as i64);
    Ok(())
}

fn spublish(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let receivers = publish::spublish(ctx, &args[1], &args[2]);
    propagate(ctx, true);
    ctx.out.integer(receivers as i64);
    Ok(())
}

/// A message reaches the other nodes of a cluster over the bus (every node, or for SPUBLISH
/// the shard's); outside cluster mode replicas publish it to their own subscribers (Redis
/// sends it to replicas, not the AOF).
fn propagate(ctx: &mut Ctx<'_>, shard: bool) {
    if ctx.server.cluster.enabled {
        let args = ctx.args;
        crate::services::cluster::propagate_publish(ctx.server, &args[1], &args[2], shard);
    } else {
        ctx.force_propagation();
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

const fn sub(
    name: &'static str,
    arity: i32,
    handler: crate::kernel::table::Handler,
) -> CommandSpec {
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
