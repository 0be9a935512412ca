//! Client tracking's invalidation messages: turning the modifications the keyspace reported to
//! [`crate::model::tracking`] into messages and handing them to [`crate::kernel::publish`], and remembering the
//! keys a tracking client reads.
//!
//! It is kernel code because whom to tell, and when, depends on the running command, which
//! `call` knows ([`after_call`]): a client in NOLOOP mode is not told about its own writes; a
//! client's invalidations caused by its own command follow that command's reply — and for a
//! command run by EXEC or a script, the reply of the outer command — as Redis 7.0 sends them
//! from `afterCommand`; everyone else is told at once, in the order of the modifications.
//! Between commands (the engine's tick, the end of an event-loop turn) no client is running:
//! [`between_commands`] then tells everyone at once and sends the BCAST broadcasts, which Redis
//! collects over a turn of its event loop. Keys evicted for `maxmemory` before a command runs
//! are reported before it ([`before_command`]), so that the evicting command's client gets them
//! ahead of its reply.
//!
//! A message goes to the tracking client itself when it speaks RESP3 (an `invalidate` push), or
//! to its REDIRECT client: as a push if that one speaks RESP3, as a pub/sub `message` on
//! `__redis__:invalidate` if it speaks RESP2 and is in pub/sub mode, and not at all otherwise.
//! A redirect client that has gone breaks the redirection: the tracking client is told with a
//! `tracking-redir-broken` push (in RESP3) and its invalidations are lost.

use bytes::{BufMut, Bytes, BytesMut};
use embedis_protocol::Version;
use rand::rngs::StdRng;
use rand::Rng;
use std::collections::BTreeMap;

use crate::base::compat::CompatVersion;
use crate::kernel::ctx::Ctx;
use crate::kernel::parts::{How, Parts};
use crate::kernel::publish::{self, Encoded};
use crate::kernel::table::{Command, Flags};
use crate::model::client::{ClientId, ClientState, Clients};
use crate::model::keyspace::Keyspace;
use crate::model::state::ServerState;
use crate::model::tracking::{Signal, Tracking};

/// What an invalidation says: one key, all keys (a flush), or a BCAST batch of keys.
enum Payload<'p> {
    Key(&'p [u8]),
    /// All keys: a null, in the protocol of the tracking client (not of its redirect client),
    /// as Redis writes it.
    All,
    /// An array of keys, already encoded.
    Keys(&'p [u8]),
}

/// The clients a message may concern and the way to hand it to them: the running command's
/// [`Ctx`], or the engine's data between commands.
trait Audience {
    fn client(&mut self, id: ClientId) -> Option<&mut ClientState>;
    fn tracking(&mut self) -> &mut Tracking;
    /// Ids of every client with tracking on, in connection order (Redis's client list).
    fn tracking_clients(&self) -> Vec<ClientId>;
    fn deliver(&mut self, id: ClientId, message: &Encoded);
    /// The table, the server's random generator (to pick keys to evict) and
    /// `tracking-table-max-keys`.
    fn table_and_rng(&mut self) -> (&mut Tracking, &mut StdRng, u64);
}

impl Audience for Ctx<'_> {
    fn client(&mut self, id: ClientId) -> Option<&mut ClientState> {
        if id == self.client.id {
            Some(self.client)
        } else {
            self.clients.get_mut(id)
        }
    }

    fn tracking(&mut self) -> &mut Tracking {
        &mut self.ks.tracking
    }

    fn tracking_clients(&self) -> Vec<ClientId> {
        let mut ids: Vec<ClientId> = self
            .clients
            .iter()
            .chain(std::iter::once(&*self.client))
            .filter(|c| c.tracking.is_some())
            .map(|c| c.id)
            .collect();
        ids.sort_unstable();
        ids
    }

    fn deliver(&mut self, id: ClientId, message: &Encoded) {
        publish::deliver(self, id, message);
    }

    fn table_and_rng(&mut self) -> (&mut Tracking, &mut StdRng, u64) {
        let max_keys = self.server.config.tracking_table_max_keys;
        (&mut self.ks.tracking, &mut self.server.rng, max_keys)
    }
}

/// The engine's data while no command runs.
struct Between<'a> {
    ks: &'a mut Keyspace,
    server: &'a mut ServerState,
    clients: &'a mut Clients,
    now_ms: i64,
}

impl Audience for Between<'_> {
    fn client(&mut self, id: ClientId) -> Option<&mut ClientState> {
        self.clients.get_mut(id)
    }

    fn tracking(&mut self) -> &mut Tracking {
        &mut self.ks.tracking
    }

    fn tracking_clients(&self) -> Vec<ClientId> {
        let mut ids: Vec<ClientId> = self
            .clients
            .iter()
            .filter(|c| c.tracking.is_some())
            .map(|c| c.id)
            .collect();
        ids.sort_unstable();
        ids
    }

    fn deliver(&mut self, id: ClientId, message: &Encoded) {
        publish::deliver_to_other(self.server, self.clients, self.ks, id, message, self.now_ms);
    }

    fn table_and_rng(&mut self) -> (&mut Tracking, &mut StdRng, u64) {
        let max_keys = self.server.config.tracking_table_max_keys;
        (&mut self.ks.tracking, &mut self.server.rng, max_keys)
    }
}

/// After every command `call` ran, while tracking is on ([`Tracking::is_on`]): tells the
/// clients that cached the keys it modified, remembers the keys it read for its client, and —
/// at the end of a client's own command, not one run by EXEC or a script — sends that client's
/// own invalidations after its reply, forgets CLIENT CACHING, and keeps the table within
/// `tracking-table-max-keys`.
#[allow(clippy::too_many_arguments)]
pub fn after_call(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    command: &'static Command,
    args: &[Bytes],
    out: &mut BytesMut,
    out_start: usize,
    version: Version,
    now_us: i64,
    how: How<'_>,
) {
    // Events published from here go where the output stands now.
    let events_at = out.len();
    let mut ctx = Ctx {
        args,
        out: embedis_protocol::Writer::new(out, version),
        ks: &mut *parts.ks,
        server: &mut *parts.server,
        client,
        clients: &mut *parts.clients,
        cmd: command,
        registry: parts.registry,
        now_ms: now_us.div_euclid(1000),
        now_us,
        block: None,
        may_block: how.may_block,
        woken_by: how.woken_by,
        from_script: how.from_script,
        events_at,
    };
    let running = ctx.client.id;
    // Another client's invalidation that redirects to the running client goes ahead of this
    // command's reply: Redis sends it from signalModifiedKey, while the command runs (only
    // the running client's own invalidations wait for its reply, in `send_own`).
    let at = out_start.min(ctx.out.buffer().len());
    let reply = ctx.out.buffer().split_off(at);
    process_signals(&mut ctx, Some(running));
    ctx.out.buffer().unsplit(reply);
    // A script's command that reads makes its client remember the keys the script declared, as
    // in Redis 7.0 — from 7.2 the keys that command read; the read-only script commands
    // themselves remember nothing (their keys count only once the script reads).
    if command.spec.flags.contains(Flags::READONLY) {
        let declared = ctx.registry.version < CompatVersion::V7_2;
        match how.script {
            Some(script_command) if declared => {
                if let Ok(script) = ctx.registry.lookup(script_command) {
                    remember_reads(&mut ctx.ks.tracking, ctx.client, script, script_command);
                }
            }
            Some(_) => remember_reads(&mut ctx.ks.tracking, ctx.client, command, args),
            None if !matches!(
                command.full_name.as_str(),
                "eval_ro" | "evalsha_ro" | "fcall_ro"
            ) =>
            {
                remember_reads(&mut ctx.ks.tracking, ctx.client, command, args)
            }
            None => {}
        }
    }
    if how.nested {
        return;
    }
    send_own(&mut ctx, running);
    // CLIENT CACHING lasts for the next command or transaction (and the CLIENT commands
    // between), as Redis's `resetClient` has it.
    if ctx.client.multi.is_none() && !command.full_name.starts_with("client|") {
        if let Some(tracking) = ctx.client.tracking.as_mut() {
            tracking.caching = false;
        }
    }
    limit_table(&mut ctx);
}

/// Keys modified before a command starts — evicted to stay under `maxmemory` — are reported
/// at once, to the client about to run as well: its invalidations then come before its reply,
/// as Redis's `processCommand` flushes them right after `performEvictions` (an invalidation
/// after the reply would speak of the key's new value). The client keeps NOLOOP's exception.
pub fn before_command(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    command: &'static Command,
    out: &mut BytesMut,
    now_us: i64,
) {
    if !parts.ks.tracking.is_on() {
        return;
    }
    let version = client.resp;
    let events_at = out.len();
    let mut ctx = Ctx {
        args: &[],
        out: embedis_protocol::Writer::new(out, version),
        ks: &mut *parts.ks,
        server: &mut *parts.server,
        client,
        clients: &mut *parts.clients,
        cmd: command,
        registry: parts.registry,
        now_ms: now_us.div_euclid(1000),
        now_us,
        block: None,
        may_block: false,
        woken_by: None,
        from_script: false,
        events_at,
    };
    let running = ctx.client.id;
    process_signals(&mut ctx, Some(running));
    send_own(&mut ctx, running);
}

/// Sends the running client's invalidations now, its own too, ahead of the reply the command
/// is about to write. For Redis 7.4's synchronous FLUSHALL and FLUSHDB, which run as a blocked
/// ASYNC flush whose `+OK` comes only when the background free completes — after the client's
/// own null invalidation, sent when the command itself ended.
pub fn send_own_before_reply(ctx: &mut Ctx<'_>) {
    if !ctx.ks.tracking.is_on() {
        return;
    }
    let running = ctx.client.id;
    process_signals(ctx, Some(running));
    send_own(ctx, running);
    // From 7.2 they waited for the end of the command (`publish::deliver`), which for Redis is
    // when the flush blocks: before its `+OK`.
    let postponed = ctx.server.postponed_pushes.split();
    crate::kernel::publish::own_pushes(ctx).unsplit(postponed);
}

/// Sends the running client's own invalidations, deferred until now.
fn send_own(ctx: &mut Ctx<'_>, running: ClientId) {
    for key in ctx.ks.tracking.take_own() {
        let payload = match &key {
            Some(key) => Payload::Key(key),
            None => Payload::All,
        };
        send(ctx, running, payload);
    }
}

/// Between commands (the engine's tick, the end of an event-loop turn): tells the clients about
/// keys modified outside any command (active expiry), keeps the table within its limit, and
/// sends the BCAST clients what changed under their prefixes since the last time.
pub fn between_commands(parts: &mut Parts<'_>, now_ms: i64) {
    let mut between = Between {
        ks: &mut *parts.ks,
        server: &mut *parts.server,
        clients: &mut *parts.clients,
        now_ms,
    };
    process_signals(&mut between, None);
    limit_table(&mut between);
    broadcast(&mut between);
}

/// Remembers the keys of `args` for `client` if it tracks them (Redis's
/// `trackingRememberKeys`): not in BCAST mode, and as OPTIN / OPTOUT with CLIENT CACHING say.
fn remember_reads(
    tracking: &mut Tracking,
    client: &ClientState,
    command: &Command,
    args: &[Bytes],
) {
    let Some(state) = &client.tracking else {
        return;
    };
    // Shard channels are declared as keys for cluster routing, but are not cached data.
    if !state.remembers_reads() || command.spec.flags.contains(Flags::PUBSUB) {
        return;
    }
    for spec in command.spec.keys {
        if spec.flags & crate::kernel::table::keys::flag::NOT_KEY != 0 {
            continue;
        }
        for position in spec.key_positions(args) {
            tracking.remember(client.id, &args[position]);
        }
    }
}

/// Turns the queued modifications into messages; `running`: the client whose command made
/// them, if any.
fn process_signals(audience: &mut impl Audience, running: Option<ClientId>) {
    for signal in audience.tracking().take_signals() {
        match signal {
            Signal::Key { key, by_command } => {
                let by = if by_command { running } else { None };
                let tracking = audience.tracking();
                tracking.note_for_broadcast(&key, by);
                for id in tracking.invalidate(&key) {
                    invalidate_for(audience, id, &key, running);
                }
            }
            Signal::Flush => {
                for id in audience.tracking_clients() {
                    if Some(id) == running {
                        audience.tracking().defer_own(None);
                    } else {
                        send(audience, id, Payload::All);
                    }
                }
                audience.tracking().clear_table();
            }
        }
    }
}

/// Tells client `id`, which had read `key`, that the key is invalid — unless it no longer
/// tracks, tracks by prefix now, or made the change itself in NOLOOP mode; the running
/// client's own invalidation waits for its reply.
fn invalidate_for(
    audience: &mut impl Audience,
    id: ClientId,
    key: &Bytes,
    running: Option<ClientId>,
) {
    let Some(state) = audience.client(id).and_then(|c| c.tracking.as_ref()) else {
        return;
    };
    if state.bcast {
        return;
    }
    if Some(id) == running {
        if !state.noloop {
            audience.tracking().defer_own(Some(key.clone()));
        }
        return;
    }
    send(audience, id, Payload::Key(key));
}

/// Evicts keys from the table while it holds more than `tracking-table-max-keys`, telling
/// their clients as if the keys had changed (no NOLOOP exception: nobody changed them).
fn limit_table(audience: &mut impl Audience) {
    let (tracking, rng, max_keys) = audience.table_and_rng();
    let evicted = tracking.evict_over_limit(max_keys, |len| rng.gen_range(0..len));
    for (key, ids) in evicted {
        for id in ids {
            let tracks = audience
                .client(id)
                .and_then(|c| c.tracking.as_ref())
                .is_some_and(|t| !t.bcast);
            if tracks {
                send(audience, id, Payload::Key(&key));
            }
        }
    }
}

/// Sends each BCAST prefix's modified keys to the prefix's clients: one array of keys per
/// prefix, without the keys a NOLOOP client changed itself (nothing if that leaves none).
fn broadcast(audience: &mut impl Audience) {
    if !audience.tracking().has_broadcasts() {
        return;
    }
    for (keys, clients) in audience.tracking().take_broadcasts() {
        let common = keys_array(&keys, None);
        for id in clients {
            let noloop = audience
                .client(id)
                .and_then(|c| c.tracking.as_ref())
                .is_some_and(|t| t.noloop);
            if noloop {
                if let Some(own) = keys_array(&keys, Some(id)) {
                    send(audience, id, Payload::Keys(&own));
                }
            } else if let Some(common) = &common {
                send(audience, id, Payload::Keys(common));
            }
        }
    }
}

/// The RESP array of `keys`, leaving out those `except` modified last; None if that leaves none.
fn keys_array(
    keys: &BTreeMap<Bytes, Option<ClientId>>,
    except: Option<ClientId>,
) -> Option<Vec<u8>> {
    let kept: Vec<&Bytes> = keys
        .iter()
        .filter(|(_, by)| except.is_none() || **by != except)
        .map(|(key, _)| key)
        .collect();
    if kept.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    out.extend_from_slice(format!("*{}\r\n", kept.len()).as_bytes());
    for key in kept {
        put_bulk(&mut out, key);
    }
    Some(out)
}

fn put_bulk(out: &mut impl BufMut, bytes: &[u8]) {
    out.put_slice(format!("${}\r\n", bytes.len()).as_bytes());
    out.put_slice(bytes);
    out.put_slice(b"\r\n");
}

/// Sends `payload` to tracking client `id`, or where it redirects (Redis's
/// `sendTrackingMessage`; see the module documentation).
fn send(audience: &mut impl Audience, id: ClientId, payload: Payload<'_>) {
    let Some(client) = audience.client(id) else {
        return;
    };
    let own_version = client.resp;
    let redirect = client.tracking.as_ref().map_or(0, |t| t.redirect);
    let mut receiver = id;
    if redirect != 0 {
        if audience.client(redirect).is_none() {
            let Some(client) = audience.client(id) else {
                return;
            };
            if let Some(tracking) = client.tracking.as_mut() {
                tracking.broken_redirect = true;
            }
            if client.resp == Version::Resp3 {
                let mut message = BytesMut::new();
                message.put_slice(b"*2\r\n");
                put_bulk(&mut message, b"tracking-redir-broken");
                message.put_slice(format!(":{redirect}\r\n").as_bytes());
                audience.deliver(id, &Encoded::from_resp2(message));
            }
            return;
        }
        receiver = redirect;
    }
    let Some(target) = audience.client(receiver) else {
        return;
    };
    let mut message = BytesMut::new();
    if target.resp == Version::Resp3 {
        message.put_slice(b"*2\r\n");
        put_bulk(&mut message, b"invalidate");
    } else if redirect != 0 && target.subs.total() > 0 {
        message.put_slice(b"*3\r\n");
        put_bulk(&mut message, b"message");
        put_bulk(&mut message, b"__redis__:invalidate");
    } else {
        // A RESP2 connection cannot tell a push from a reply: nothing can be sent to it.
        return;
    }
    match payload {
        Payload::Key(key) => {
            message.put_slice(b"*1\r\n");
            put_bulk(&mut message, key);
        }
        Payload::All => message.put_slice(match own_version {
            Version::Resp2 => b"$-1\r\n",
            Version::Resp3 => b"_\r\n",
        }),
        Payload::Keys(array) => message.put_slice(array),
    }
    audience.deliver(receiver, &Encoded::from_resp2(message));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_harness::Harness;

    /// A key evicted before a command (here deleted directly, as eviction would) is reported to
    /// the client about to run ahead of that command's reply.
    #[test]
    fn keys_modified_before_a_command_are_reported_before_its_reply() {
        let mut h = Harness::new();
        h.run("HELLO 3");
        h.run("CLIENT TRACKING on");
        h.add(0, "evicted", None);
        h.run("GET evicted");
        let now = h.now();
        h.engine.ks.delete(0, b"evicted", now);
        let id = h.engine.clients.ids()[0];
        let mut client = h.engine.clients.remove(id).unwrap();
        let command = h.engine.registry.by_name(b"get").unwrap();
        let mut out = BytesMut::new();
        before_command(
            &mut h.engine.parts(),
            &mut client,
            command,
            &mut out,
            now * 1000,
        );
        h.engine.clients.insert(client);
        assert_eq!(
            &out[..],
            b">2\r\n$10\r\ninvalidate\r\n*1\r\n$7\r\nevicted\r\n"
        );
        assert_eq!(h.engine.ks.tracking.total_keys(), 0);
    }
}
