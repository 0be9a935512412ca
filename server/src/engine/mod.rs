//! The executor: one [`Engine`] owns the keyspace, the server state and every client's state, and
//! runs commands one at a time. Whatever thread calls it owns all the data: nothing on the data
//! path takes a lock.
//!
//! [`Engine::execute`] is the path of one request. It asks [`crate::kernel::gates::admit`]
//! whether and how the command runs — Redis's `processCommand` order, written once there and
//! shared with the busy-script path and a script's `redis.call` — and acts on the verdict:
//! refuse, park until CLIENT PAUSE ends, queue inside MULTI, or freeze `now` and run the handler
//! through [`crate::kernel::call`], which does the bookkeeping every command shares.
//!
//! The engine takes the command table from the handlers' layer ([`crate::commands::registry`])
//! and lends it to every command it runs.
//!
//! The rest of the executor, one concern a file:
//! - `blocked.rs`: the blocked-client life cycle — parking, serving clients woken by a key,
//!   releasing on timeout or CLIENT UNBLOCK, the end of CLIENT PAUSE — and the hand-over of
//!   out-of-turn output ([`Engine::flush_pending`]);
//! - `client_memory.rs`: client eviction's accounting of clients' memory (`maxmemory-clients`);
//! - `cron.rs`: the periodic tick ([`Engine::cron`], `hz` times a second): timeouts, active
//!   expiry, incremental rehashing, idle clients;
//! - `fault_gate.rs`: applying the test-controlled fault rules ([`crate::model::fault_rules`]) to
//!   requests;
//! - `replica_apply.rs`: a replica's side of its link — loading the primary's image and applying
//!   its stream.

mod blocked;
mod client_memory;
mod cluster_effects;
mod cron;
mod fault_gate;
mod replica_apply;
mod replica_full_sync;

pub use replica_apply::{Applied, LinkTarget};
pub use replica_full_sync::ImageMode;

use bytes::{Bytes, BytesMut};
use embedis_protocol::{RequestDecoder, Version, Writer};
use std::sync::Arc;

use crate::base::clock::Clock;
use crate::base::config::Config;
use crate::base::error::Error;
use crate::base::log::Logger;
use crate::kernel::call::{How, Parts};
use crate::kernel::gates::{self, Admission, Asker, Refusal};
use crate::kernel::table::{Command, Flags, Registry};
use crate::model::blocking::{BlockReason, Blocked};
use crate::model::client::{ClientHandle, ClientId, ClientState, Clients, Peer, ReplyMode};
use crate::model::keyspace::Keyspace;
use crate::model::prefetch::PIPELINE_PREFETCH;
use crate::model::state::ServerState;

/// What the connection should do after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Go on with the next request.
    Continue,
    /// The client is blocked: stop feeding requests until its handle says it is released.
    Blocked,
    /// Write what is pending, then close the connection.
    Close,
}

/// How a command comes to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run<'k> {
    /// Sent by the client (or postponed by CLIENT PAUSE and run now for the first time).
    Fresh,
    /// A blocked command run again because a key it waits on was written: its statistics and
    /// MONITOR line were counted when it first ran, and it is told which key woke it.
    Rerun { woken_by: &'k [u8] },
}

/// Redis's per-client reply buffer (`PROTO_REPLY_CHUNK_BYTES`): replies up to this size never
/// count against the output-buffer limits.
const REPLY_BUFFER_BYTES: usize = 16 * 1024;

pub struct Engine {
    pub ks: Keyspace,
    pub server: ServerState,
    pub clients: Clients,
    /// The command table every command is looked up in and lent.
    pub registry: &'static Registry,
    /// The argument vector of the last command that kept none of it (not queued, not
    /// blocked), for the connection to give back to its decoder ([`Engine::take_spare_args`]);
    /// callers that have no decoder to give it to leave it to be replaced by the next one.
    spare_args: Option<Vec<Bytes>>,
}

impl Engine {
    pub fn new(config: Config, clock: Clock, log: Logger, seed: Option<u64>) -> Engine {
        // Commands are timed with a stopwatch that may need 2 ms to measure the CPU's counter.
        crate::base::clock::Stopwatch::calibrate();
        let mut ks = Keyspace::new(config.databases);
        ks.notify.configure(config.notify_keyspace_events);
        ks.apply_config(&config);
        let registry = crate::commands::registry_for(config.compat_version);
        let mut server = ServerState::new(config, clock, log, seed, registry.commands.len());
        server.client_memory.configure(&server.config);
        crate::services::aof::configure(&mut ks, &server);
        // `replicaof host port` at start-up: a replica from the first moment.
        if let Some((host, port)) = server.config.replicaof.clone() {
            server.repl.follow(host, port);
            server.repl.no_history = true;
            ks.expiry_rule = crate::model::keyspace::ExpiryRule::Hide;
        }
        Engine {
            ks,
            server,
            clients: Clients::default(),
            registry,
            spare_args: None,
        }
    }

    /// The argument vector the last command left (see the field), if any.
    #[inline]
    pub fn take_spare_args(&mut self) -> Option<Vec<Bytes>> {
        self.spare_args.take()
    }

    /// Registers a new connection. Returns its handle, or the refusal to send.
    pub fn connect(&mut self, peer: Peer, fd: i32) -> Result<Arc<ClientHandle>, Refusal> {
        gates::connect_client(&mut self.parts(), peer, fd)
    }

    /// Forgets a connection (closed by the peer, killed, or QUIT).
    pub fn disconnect(&mut self, id: ClientId) {
        if let Some(mut client) = self.clients.remove(id) {
            if let Some(blocked) = client.blocked.take() {
                self.forget_block(id, &blocked);
            }
            self.server.monitors.retain(|&m| m != id);
            if client.replica {
                let waited = self
                    .server
                    .repl
                    .replicas
                    .iter()
                    .any(|r| r.id == id && r.bgsave_wait);
                self.server.repl.remove(id);
                if waited {
                    crate::commands::full_sync::disk_sync_abandoned(&mut self.server, &mut self.ks);
                }
            }
            if client.master {
                // Where the primary's stream stands, for a continued link to resume in the same
                // database; a transaction left open goes with the client and will come again.
                self.server.repl.stream_db = client.db;
                self.server.repl.forget_unapplied();
            }
            crate::model::client::unsubscribe_all(&mut self.server.pubsub, &mut client);
            self.ks.watches.unwatch_all(id);
            self.ks.tracking.disable(id, &mut client.tracking);
            self.server.client_memory.forget(&mut client);
        }
    }

    /// Adds `n` bytes to the network input counter (the connection read them). Under
    /// `maxmemory-clients` the client is counted afresh and may be evicted: its handle is then
    /// killed.
    pub fn count_input(&mut self, id: ClientId, n: usize, query_buffer: usize) {
        self.server.stats.net_input_bytes += n as u64;
        self.server.stats.total_reads_processed += 1;
        if let Some(c) = self.clients.get_mut(id) {
            c.query_buffer = query_buffer;
        }
        if self.server.client_memory.on() {
            self.client_memory_after_read(id);
        }
    }

    pub fn count_output(&mut self, n: usize) {
        self.server.stats.net_output_bytes += n as u64;
        self.server.stats.total_writes_processed += 1;
    }

    /// The database of client `id` when prefetching its keys can save a miss.
    fn prefetch_db(&self, id: ClientId) -> Option<&crate::model::keyspace::Db> {
        let client = self.clients.get(id)?;
        self.ks.dbs.get(client.db).filter(|db| db.wants_prefetch())
    }

    /// Before the request `args` runs, decodes the requests waiting behind it in the
    /// connection's read buffer (`input`, into `decoder`'s queue: see
    /// `embedis_protocol::ahead`) and fetches all their keys into the CPU's cache, in the
    /// client's database (see [`crate::model::prefetch`]). Returns how many requests that
    /// covers, `args` included, or a whole batch when the database is too small to gain (so the
    /// caller asks again a batch later). Changes nothing: a later SELECT only makes the hint
    /// useless.
    pub fn prefetch_pipeline(
        &self,
        id: ClientId,
        args: &[Bytes],
        decoder: &mut RequestDecoder,
        input: &mut BytesMut,
        authenticated: bool,
    ) -> usize {
        let Some(db) = self.prefetch_db(id) else {
            return PIPELINE_PREFETCH;
        };
        decoder.decode_ahead(input, authenticated, PIPELINE_PREFETCH - 1);
        db.prefetch_requests(std::iter::once(args).chain(decoder.ahead()))
    }

    /// [`Engine::prefetch_pipeline`] for requests already decoded (the I/O threads decode
    /// them): fetches the keys of the first [`PIPELINE_PREFETCH`] of `requests` and returns how
    /// many requests that covers (a whole batch when the database is too small to gain).
    pub fn prefetch_requests<'a>(
        &self,
        id: ClientId,
        requests: impl Iterator<Item = &'a [Bytes]>,
    ) -> usize {
        match self.prefetch_db(id) {
            Some(db) => db.prefetch_requests(requests),
            None => PIPELINE_PREFETCH,
        }
    }

    /// Runs one request of client `id`, appending its reply to `out`.
    pub fn execute(&mut self, id: ClientId, args: Vec<Bytes>, out: &mut BytesMut) -> Outcome {
        self.catch_up_with_clock();
        // Clients over `maxmemory-clients` go before the next command, as Redis's
        // `processCommand` evicts them (before it evicts keys): one branch while it is off.
        if self.server.client_memory.due {
            self.evict_clients_now();
        }
        let Some(mut client) = self.clients.remove(id) else {
            return Outcome::Close;
        };
        let mut outcome = self.execute_for(&mut client, args, out, Run::Fresh);
        // Redis writes a reply into a 16 KB buffer and only what overflows it counts against
        // `client-output-buffer-limit`: one branch for the usual small reply. A replica's own
        // output (the image of a full sync) is not its replication stream and is not limited.
        if out.len() > REPLY_BUFFER_BYTES && !client.replica {
            // `out` holds the replies the connection held before (see `ClientHandle::held`).
            let used = out.len() - REPLY_BUFFER_BYTES
                + crate::model::client::unsent_output(&client)
                - client.handle.held();
            let watching = self.ks.watches.watching(id);
            let now_ms = self.server.clock.now_ms();
            if crate::kernel::publish::close_if_over_output_limit(
                &mut self.server,
                &mut client,
                watching,
                used,
                now_ms,
            ) {
                // Nothing of it is sent: Redis writes nothing to a client it is closing.
                out.clear();
                outcome = Outcome::Close;
            }
        }
        // `maxmemory-clients`: one branch while it is off.
        if self.server.client_memory.on() {
            self.client_memory_after_command(&mut client, out);
        }
        client
            .handle
            .set_authenticated(!gates::auth_required(&self.server.users, &client));
        self.clients.insert(client);
        if !self.server.requests.is_empty() {
            self.carry_out_requests();
        }
        if self.ks.ready.has_ready() {
            self.serve_ready_keys();
        }
        outcome
    }

    fn execute_for(
        &mut self,
        client: &mut ClientState,
        args: Vec<Bytes>,
        out: &mut BytesMut,
        run: Run<'_>,
    ) -> Outcome {
        // CLIENT REPLY OFF / SKIP: run the command, throw the reply away — unless the command
        // itself turned replies back on (CLIENT REPLY ON, RESET), whose reply Redis sends.
        let outcome = if matches!(client.reply_mode, ReplyMode::Off | ReplyMode::Skip) {
            let mut scratch = BytesMut::new();
            // Pushes (pub/sub confirmations and messages) are sent regardless, as in Redis: the
            // pub/sub handlers put them in the pending output, and they take the reply's place.
            let pending_before = client.pending.len();
            let outcome = self.process(client, args, &mut scratch, run);
            if client.pending.len() > pending_before {
                let pushes = client.pending.split_off(pending_before);
                out.extend_from_slice(&pushes);
            }
            match client.reply_mode {
                ReplyMode::On => out.extend_from_slice(&scratch),
                ReplyMode::Skip => client.reply_mode = ReplyMode::On,
                ReplyMode::Off | ReplyMode::SkipNext => {}
            }
            outcome
        } else {
            self.process(client, args, out, run)
        };
        if client.reply_mode == ReplyMode::SkipNext {
            client.reply_mode = ReplyMode::Skip;
        }
        outcome
    }

    /// A request meets the fault rules first when there are any (embedis's test controls,
    /// [`crate::model::fault_rules`]): one branch when there are none. Always inlined: a wrapper this small
    /// costs a call per request otherwise (the compiler stopped inlining it when `call` grew).
    #[inline(always)]
    fn process(
        &mut self,
        client: &mut ClientState,
        args: Vec<Bytes>,
        out: &mut BytesMut,
        run: Run<'_>,
    ) -> Outcome {
        if self.server.faults.active() && run == Run::Fresh {
            return self.process_with_faults(client, args, out);
        }
        self.process_command(client, args, out, run)
    }

    /// Redis's `processCommand`: asks the gates whether and how the command runs
    /// ([`gates::admit`]), then refuses, parks, queues or calls it. A replica's link carries
    /// the stream, never replies: a command of a replica that answers closes it.
    pub(crate) fn process_command(
        &mut self,
        client: &mut ClientState,
        args: Vec<Bytes>,
        out: &mut BytesMut,
        run: Run<'_>,
    ) -> Outcome {
        let replica_reply_at = client.replica.then_some(out.len());
        let outcome = self.admit_and_run(client, args, out, run);
        match replica_reply_at {
            Some(at) if out.len() > at => self.replica_replied(client, out, at),
            _ => outcome,
        }
    }

    /// A replica's command made a reply (Redis's `_addReplyToBufferOrList` for a replica
    /// client): logged, an error also as Redis's `afterErrorReply` logs it, the reply
    /// dropped and the replica disconnected.
    #[cold]
    fn replica_replied(
        &mut self,
        client: &mut ClientState,
        out: &mut BytesMut,
        at: usize,
    ) -> Outcome {
        let name = client.last_command;
        if out[at] == b'-' {
            replica_apply::log_error_to_peer(&self.server, ("master", "replica"), name, &out[at..]);
        }
        out.truncate(at);
        let now_ms = self.server.clock.now_ms();
        let watching = self.ks.watches.watching(client.id);
        let info = client.info_line(now_ms, watching, self.server.config.compat_version);
        self.server.log.warning(&format!(
            "Replica generated a reply to command '{name}', disconnecting it: {info}"
        ));
        Outcome::Close
    }

    fn admit_and_run(
        &mut self,
        client: &mut ClientState,
        args: Vec<Bytes>,
        out: &mut BytesMut,
        run: Run<'_>,
    ) -> Outcome {
        let now_us = self.server.clock.now_us();
        client.last_interaction_ms = now_us.div_euclid(1000);
        let asker = Asker::Client {
            fresh: run == Run::Fresh,
        };
        let command = match gates::admit(&mut self.parts(), client, &args, asker, now_us, out) {
            Admission::Run(command) => command,
            Admission::Refuse(command, error) => {
                // Redis names the command it looked up its client's last, refused or not.
                if let Some(command) = command {
                    client.last_command = &command.full_name;
                }
                self.reject(client, command, error, &args, out);
                return self.finish(client);
            }
            Admission::Postpone(command) => {
                client.last_command = &command.full_name;
                let reason = BlockReason::Postponed;
                let deadline_ms = None;
                self.park(
                    client,
                    Blocked {
                        args,
                        reason,
                        deadline_ms,
                    },
                );
                return Outcome::Blocked;
            }
            Admission::Queue(command, flags) => {
                return self.queue(client, command, flags, args, out)
            }
        };
        let block = self.call(client, command, &args, out, now_us, run);
        self.spare_args = Some(args);
        match (block, run) {
            (Some(blocked), Run::Fresh) => self.park(client, blocked),
            // Still nothing for it: the caller keeps the client where it was in the queues.
            (Some(_), Run::Rerun { .. }) => return Outcome::Blocked,
            (None, _) => {}
        }
        self.finish(client)
    }

    /// Inside MULTI, a command that passed the gates waits for EXEC.
    fn queue(
        &mut self,
        client: &mut ClientState,
        command: &'static Command,
        flags: Flags,
        args: Vec<Bytes>,
        out: &mut BytesMut,
    ) -> Outcome {
        let broken = self.ks.watches.is_broken(client.id);
        if let Some(transaction) = client.multi.as_mut() {
            transaction.queue(command.id, flags, args, broken);
            client.last_command = &command.full_name;
            Writer::new(out, client.resp).simple(b"QUEUED");
        }
        self.finish(client)
    }

    fn finish(&mut self, client: &mut ClientState) -> Outcome {
        if client.blocked.is_some() {
            Outcome::Blocked
        } else if client.close_after_reply {
            Outcome::Close
        } else {
            Outcome::Continue
        }
    }

    /// A command refused by a gate (see [`gates::refuse`]).
    pub(crate) fn reject(
        &mut self,
        client: &mut ClientState,
        command: Option<&'static Command>,
        error: Error,
        args: &[Bytes],
        out: &mut BytesMut,
    ) {
        gates::refuse(&mut self.parts(), client, command, error, args, out);
        // CLIENT CACHING covers the next command, even one refused (outside MULTI).
        if client.multi.is_none() {
            if let Some(tracking) = client.tracking.as_mut() {
                tracking.caching = false;
            }
        }
    }

    /// Redis's `call` for a client's own command (see [`crate::kernel::call`]).
    fn call(
        &mut self,
        client: &mut ClientState,
        command: &'static Command,
        args: &[Bytes],
        out: &mut BytesMut,
        now_us: i64,
        run: Run<'_>,
    ) -> Option<Blocked> {
        let how = match run {
            Run::Fresh => How::FRESH,
            Run::Rerun { woken_by } => How {
                woken_by: Some(woken_by),
                counted: false,
                ..How::FRESH
            },
        };
        crate::kernel::call::call(
            &mut self.parts(),
            client,
            command,
            args,
            out,
            client.resp,
            now_us,
            how,
        )
    }

    /// The data a command may touch, lent out together.
    pub fn parts(&mut self) -> Parts<'_> {
        Parts {
            ks: &mut self.ks,
            server: &mut self.server,
            clients: &mut self.clients,
            registry: self.registry,
        }
    }

    /// The protocol version of a client (for errors written by the connection layer).
    pub fn version_of(&self, id: ClientId) -> Version {
        self.clients.get(id).map_or(Version::Resp2, |c| c.resp)
    }
}
