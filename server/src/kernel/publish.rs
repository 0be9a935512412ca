//! Delivering pub/sub messages and other pushes to clients: the one path by which a command's
//! out-of-turn output reaches a subscriber — PUBLISH and SPUBLISH, and whatever else the server
//! publishes on a command's behalf (keyspace notifications, client-tracking invalidations).
//!
//! It sits in the kernel beside [`Ctx`] because delivery needs what a running command holds: the
//! other clients, the server's pending-write list and output-buffer limits, and the running
//! client's own reply (a message for the publishing client itself is written before the
//! command's reply, as Redis does). A subscriber whose unsent output passes its
//! `client-output-buffer-limit` is scheduled to be closed instead of growing without bound;
//! [`close_if_over_output_limit`] is that check for every class, which the engine also applies
//! to a client's own replies and to the output it hands over at a turn's end (replicas' stream,
//! MONITOR lines).
//! Keyspace notifications take the same path: [`keyspace_events`] publishes the events the
//! keyspace queued (see [`crate::model::notify`]) on their `__keyspace@…` and `__keyevent@…` channels, and
//! [`keyspace_events_detached`] does it for the tick (active expiry), when no command runs.
//!
//! Pushes reach the client even while CLIENT REPLY OFF or SKIP throws its replies away (Redis
//! marks them as pushes and lets them through, in RESP2 as in RESP3): they then go to the
//! client's pending output, which the engine puts in the place of the discarded reply.

use bytes::BytesMut;
use embedis_protocol::{Version, Writer};

use crate::base::compat::CompatVersion;
use crate::base::config::ObufLimit;
use crate::kernel::ctx::Ctx;
use crate::model::client::{ClientId, ClientState, Clients, ReplyMode};
use crate::model::keyspace::Keyspace;
use crate::model::notify::Event;
use crate::model::pubsub;
use crate::model::state::{EngineRequest, ServerState};

/// True while the client's replies are thrown away (CLIENT REPLY OFF or SKIP), when its pushes
/// must take the pending path of [`own_pushes`].
fn replies_suppressed(client: &ClientState) -> bool {
    matches!(client.reply_mode, ReplyMode::Off | ReplyMode::Skip)
}

/// Where the running client's own pushes go: its reply, or its pending output while its replies
/// are suppressed (the engine moves that output into the reply's place).
pub fn own_pushes<'b>(ctx: &'b mut Ctx<'_>) -> &'b mut BytesMut {
    if replies_suppressed(ctx.client) {
        &mut ctx.client.pending
    } else {
        ctx.out.buffer()
    }
}

/// At the end of a client's own command (not one EXEC or a script runs), from 7.2: the messages
/// it sent itself while it ran, after its reply (`out`), or in its pending output while its
/// replies are suppressed.
pub fn hand_over_postponed(server: &mut ServerState, client: &mut ClientState, out: &mut BytesMut) {
    let pushes = &mut server.postponed_pushes;
    if replies_suppressed(client) {
        client.pending.unsplit(pushes.split());
    } else {
        out.unsplit(pushes.split());
    }
}

/// A message encoded once for all its receivers. A RESP3 push differs from the RESP2 array of
/// the same strings only in its first byte (`>` for `*`), so one encoding serves both.
pub struct Encoded {
    resp2: BytesMut,
}

impl Encoded {
    /// A push of these bulk strings (`message`, channel, payload …).
    pub fn new(parts: &[&[u8]]) -> Encoded {
        let mut resp2 = BytesMut::new();
        let mut w = Writer::new(&mut resp2, Version::Resp2);
        w.push(parts.len());
        for part in parts {
            w.bulk(part);
        }
        Encoded { resp2 }
    }

    /// A message already encoded as its RESP2 array (`*N` first): client tracking's
    /// invalidations, whose payload is an array of keys or a null rather than a string.
    pub fn from_resp2(resp2: BytesMut) -> Encoded {
        debug_assert!(resp2.first() == Some(&b'*'));
        Encoded { resp2 }
    }

    /// Appends the message as a client speaking `version` receives it.
    pub fn write_to(&self, out: &mut BytesMut, version: Version) {
        match version {
            Version::Resp2 => out.extend_from_slice(&self.resp2),
            Version::Resp3 => {
                out.extend_from_slice(b">");
                out.extend_from_slice(&self.resp2[1..]);
            }
        }
    }
}

/// Publishes `message` on `channel` to its subscribers and to the patterns that match it;
/// returns how many receivers it reached (PUBLISH's reply).
pub fn publish(ctx: &mut Ctx<'_>, channel: &[u8], message: &[u8]) -> usize {
    Receivers::of(&ctx.server.pubsub, channel)
        .send(channel, message, |id, encoded| deliver(ctx, id, encoded))
}

/// The receivers of a message on one channel, copied out of the index before anything is sent
/// (sending writes to clients, which the index is part of).
struct Receivers {
    direct: Vec<ClientId>,
    patterns: Vec<(bytes::Bytes, Vec<ClientId>)>,
}

impl Receivers {
    /// The channel's subscribers and each matching pattern's.
    fn of(pubsub: &pubsub::PubSub, channel: &[u8]) -> Receivers {
        let direct = pubsub.subscribers(channel, false).to_vec();
        let patterns = if pubsub.pattern_count() == 0 {
            Vec::new()
        } else {
            pubsub
                .matching_patterns(channel)
                .map(|(p, ids)| (p.clone(), ids.to_vec()))
                .collect()
        };
        Receivers { direct, patterns }
    }

    /// Hands the message to `send` for every receiver, subscribers first; returns how many.
    fn send(
        self,
        channel: &[u8],
        message: &[u8],
        mut send: impl FnMut(ClientId, &Encoded),
    ) -> usize {
        let mut receivers = 0;
        if !self.direct.is_empty() {
            let encoded = Encoded::new(&[b"message", channel, message]);
            for id in self.direct {
                send(id, &encoded);
                receivers += 1;
            }
        }
        for (pattern, ids) in self.patterns {
            let encoded = Encoded::new(&[b"pmessage", &pattern, channel, message]);
            for id in ids {
                send(id, &encoded);
                receivers += 1;
            }
        }
        receivers
    }
}

/// The two channels of a keyspace event, when they are on: `__keyspace@<db>__:<key>` carrying
/// the event's name, then `__keyevent@<db>__:<event>` carrying the key (Redis's order).
fn event_channels(ks: &Keyspace, event: &Event) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::with_capacity(2);
    if ks.notify.to_keyspace_channels() {
        let mut channel = format!("__keyspace@{}__:", event.db).into_bytes();
        channel.extend_from_slice(&event.key);
        out.push((channel, event.event.as_bytes().to_vec()));
    }
    if ks.notify.to_keyevent_channels() {
        let channel = format!("__keyevent@{}__:{}", event.db, event.event).into_bytes();
        out.push((channel, event.key.to_vec()));
    }
    out
}

/// A handler's keyspace events, published as it names them. These methods of [`Ctx`] live here,
/// beside the delivery they start, so that the context itself knows nothing of publishing.
impl Ctx<'_> {
    /// Publishes keyspace event `event` of `class` (a [`crate::base::config::event_class`] bit) on
    /// `key` of the selected database — after the events the keyspace noted before it, in
    /// order. One branch when the class is off. Call it where Redis's command calls
    /// `notifyKeyspaceEvent`: before or after writing the reply, the running client, if
    /// subscribed, sees the event in the same place.
    #[inline]
    pub fn notify(&mut self, class: u32, event: &'static str, key: &[u8]) {
        if self.ks.notify.wants(class) {
            self.notify_in(self.db(), class, event, key);
        }
    }

    /// [`Ctx::notify`] for a key of database `db` (MOVE, COPY … DB).
    #[cold]
    #[inline(never)]
    pub fn notify_in(&mut self, db: usize, class: u32, event: &'static str, key: &[u8]) {
        self.ks.notify.note(class, event, db, key);
        self.publish_events();
    }

    /// Publishes the keyspace events noted so far (the keyspace's lookups queue `expired` and
    /// `keymiss`): a handler that reads keys while writing its reply (MGET) calls it after each
    /// lookup, so that the running client sees them where Redis puts them.
    #[inline]
    pub fn publish_events(&mut self) {
        if self.ks.notify.has_pending() {
            keyspace_events(self);
            self.events_at = self.out.buffer().len();
        }
    }
}

/// Publishes the keyspace events queued so far, oldest first, on behalf of the running command
/// (its client, if subscribed, gets them like any message it publishes to itself).
pub fn keyspace_events(ctx: &mut Ctx<'_>) {
    for event in ctx.ks.notify.take() {
        for (channel, message) in event_channels(ctx.ks, &event) {
            publish(ctx, &channel, &message);
        }
    }
}

/// After the handler: publishes the events still queued (the keyspace noted them during its
/// lookups, after the last event the handler named) and puts what the running client receives
/// at `ctx.events_at`, ahead of the reply written since — where Redis, which publishes at the
/// lookup, has them.
pub fn late_keyspace_events(ctx: &mut Ctx<'_>) {
    let at = ctx.events_at.min(ctx.out.buffer().len());
    let reply = ctx.out.buffer().split_off(at);
    keyspace_events(ctx);
    ctx.out.buffer().unsplit(reply);
}

/// Publishes the queued keyspace events when no command runs (active expiry in the tick).
pub fn keyspace_events_detached(
    ks: &mut Keyspace,
    server: &mut ServerState,
    clients: &mut Clients,
    now_ms: i64,
) {
    for event in ks.notify.take() {
        for (channel, message) in event_channels(ks, &event) {
            Receivers::of(&server.pubsub, &channel).send(&channel, &message, |id, encoded| {
                deliver_to_other(server, clients, ks, id, encoded, now_ms)
            });
        }
    }
}

/// Publishes a message that came over the cluster bus (no command runs): to the channel's and
/// the matching patterns' subscribers, or for a shard channel to its subscribers.
pub fn publish_detached(
    parts: &mut crate::kernel::parts::Parts<'_>,
    channel: &[u8],
    message: &[u8],
    shard: bool,
    now_ms: i64,
) {
    let (server, clients, ks) = (&mut *parts.server, &mut *parts.clients, &*parts.ks);
    if shard {
        let ids: Vec<ClientId> = server.pubsub.subscribers(channel, true).to_vec();
        let encoded = Encoded::new(&[b"smessage", channel, message]);
        for id in ids {
            deliver_to_other(server, clients, ks, id, &encoded, now_ms);
        }
        return;
    }
    Receivers::of(&server.pubsub, channel).send(channel, message, |id, encoded| {
        deliver_to_other(server, clients, ks, id, encoded, now_ms)
    });
}

/// Publishes `message` on shard channel `channel`; returns how many subscribers it reached.
pub fn spublish(ctx: &mut Ctx<'_>, channel: &[u8], message: &[u8]) -> usize {
    let ids: Vec<ClientId> = ctx.server.pubsub.subscribers(channel, true).to_vec();
    if !ids.is_empty() {
        let encoded = Encoded::new(&[b"smessage", channel, message]);
        for &id in &ids {
            deliver(ctx, id, &encoded);
        }
    }
    ids.len()
}

/// Hands a message to one client: the running client itself gets it before its reply (from a
/// script: before the script's reply), from 7.2 after its command's whole reply; another client gets it in its pending output, unless that
/// output is over its limit — then the client is scheduled to be closed (as Redis's
/// `closeClientOnOutputBufferLimitReached`).
pub fn deliver(ctx: &mut Ctx<'_>, id: ClientId, message: &Encoded) {
    if id == ctx.client.id {
        if ctx.server.executing > 0 && ctx.registry.version >= CompatVersion::V7_2 {
            // After the reply of the client's own command (`call` hands them over).
            message.write_to(&mut ctx.server.postponed_pushes, ctx.client.resp);
        } else if ctx.from_script {
            // Not into redis.call's reply, which the script would read as PUBLISH's answer.
            message.write_to(&mut ctx.client.pending, ctx.client.resp);
            ctx.server.pending_writes.push(id);
        } else {
            let version = ctx.client.resp;
            message.write_to(own_pushes(ctx), version);
        }
        return;
    }
    deliver_to_other(ctx.server, ctx.clients, ctx.ks, id, message, ctx.now_ms);
}

/// The half of [`deliver`] for a client other than the running one — also what the engine uses
/// between commands, when no client is running (client tracking's broadcasts and the
/// invalidations of keys that expired in the background).
#[inline]
pub fn deliver_to_other(
    server: &mut ServerState,
    clients: &mut Clients,
    ks: &Keyspace,
    id: ClientId,
    message: &Encoded,
    now_ms: i64,
) {
    let Some(client) = clients.get_mut(id) else {
        return;
    };
    if client.obuf.closing {
        return;
    }
    message.write_to(&mut client.pending, client.resp);
    server.pending_writes.push(id);
    let used = crate::model::client::unsent_output(client);
    close_if_over_output_limit(server, client, ks.watches.watching(id), used, now_ms);
    // Its memory grew: evicted, if need be, once the running command is done.
    crate::kernel::client_eviction::update(server, ks, client, 0);
}

/// Redis's `closeClientOnOutputBufferLimitReached`, asynchronous form: if `used` bytes of
/// output waiting to leave (what Redis counts: reply blocks not yet written, or the
/// replication stream a replica has not taken) pass the client's class's hard limit, or have
/// stayed over its soft limit longer than the soft seconds, the client's pending output is
/// dropped, it gets nothing more, and it is closed once the command ends, with Redis's log
/// line. Returns true if the client is (now or already) to be closed.
pub fn close_if_over_output_limit(
    server: &mut ServerState,
    client: &mut ClientState,
    watching: crate::model::client::Watching,
    used: usize,
    now_ms: i64,
) -> bool {
    if client.obuf.closing {
        return true;
    }
    let class = class_of(client);
    let mut limit = server.config.obuf_limits[class];
    // A replica's hard limit below the backlog's size would cut off a replica that a partial
    // resync has just let back in: Redis uses the backlog's size instead.
    if class == ObufLimit::REPLICA
        && limit.hard != 0
        && limit.hard < server.config.repl_backlog_size
    {
        limit.hard = server.config.repl_backlog_size;
    }
    if !crate::model::client::over_limit_with(client, &limit, used as u64, now_ms) {
        return false;
    }
    client.obuf.closing = true;
    client.pending.clear();
    let info = client.info_line(now_ms, watching, server.config.compat_version);
    server.log.warning(&format!(
        "Client {info} scheduled to be closed ASAP for overcoming of output buffer limits."
    ));
    server.requests.push(EngineRequest::Kill { id: client.id });
    true
}

/// The output-buffer limit class of a client (Redis 7.0's `getClientType`): replicas are
/// replicas, subscribers are pub/sub clients, everyone else — MONITOR clients included, which
/// Redis flags as replicas but classes as normal — is normal.
pub fn class_of(client: &ClientState) -> usize {
    if client.replica {
        ObufLimit::REPLICA
    } else if client.subs.total() > 0 {
        ObufLimit::PUBSUB
    } else {
        ObufLimit::NORMAL
    }
}
