//! The executor: one [`Engine`] owns the keyspace, the server state and every client's state, and
//! runs commands one at a time. Whatever thread calls it owns all the data: nothing on the data
//! path takes a lock.
//!
//! [`Engine::execute`] is the path of one request. It applies Redis's generic gates in Redis's
//! order (`processCommand` in server.c): QUIT first, then unknown command or subcommand, arity,
//! protected commands (DEBUG), authentication, `no_multi` commands inside MULTI, MONITOR clients
//! touching the keyspace (Redis treats them as replicas), RESP2 subscribe mode, CLIENT PAUSE,
//! queueing inside MULTI; then it freezes `now` and runs the handler through [`crate::kernel::call`],
//! which does the bookkeeping every command shares. The gates themselves live in
//! [`crate::kernel::gates`], shared with the other paths a command can come by (a busy script's, a
//! script's `redis.call`). (While a script runs too long, other clients' requests meet a shorter
//! gate list of their own: see [`crate::services::busy`].)
//!
//! The engine takes the command table from the handlers' layer ([`crate::commands::registry`])
//! and lends it to every command it runs.
//!
//! The rest of the executor, one concern a file:
//! - `blocked.rs`: the blocked-client life cycle — parking, serving clients woken by a key,
//!   releasing on timeout or CLIENT UNBLOCK, the end of CLIENT PAUSE — and the hand-over of
//!   out-of-turn output ([`Engine::flush_pending`]);
//! - `cron.rs`: the periodic tick ([`Engine::cron`], `hz` times a second): timeouts, active
//!   expiry, incremental rehashing, idle clients;
//! - `faults.rs`: applying the test-controlled fault rules ([`crate::model::fault_rules`]) to requests.

mod blocked;
mod cron;
mod fault_gate;
mod replica_apply;

pub use replica_apply::{Applied, LinkTarget};

use bytes::{Bytes, BytesMut};
use embedis_protocol::{Version, Writer};
use std::sync::Arc;

use crate::base::clock::Clock;
use crate::base::config::{Access, Config};
use crate::base::error::Error;
use crate::base::log::Logger;
use crate::kernel::call::{How, Parts};
use crate::kernel::gates::{self, Refusal};
use crate::kernel::table::{Command, Flags, Registry};
use crate::model::blocking::{BlockReason, Blocked};
use crate::model::client::{ClientHandle, ClientId, ClientState, Clients, Peer, ReplyMode};
use crate::model::keyspace::Keyspace;
use crate::model::multi::is_transaction_control;
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
        let registry = crate::commands::registry();
        let mut server = ServerState::new(config, clock, log, seed, registry.commands.len());
        crate::services::aof::configure(&mut ks, &server);
        // `replicaof host port` at start-up: a replica from the first moment.
        if let Some((host, port)) = server.config.replicaof.clone() {
            server.repl.follow(host, port);
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
                self.server.repl.remove(id);
            }
            if client.master {
                // Where the primary's stream stands, for a continued link to resume in the same
                // database; a transaction left open goes with the client and will come again.
                self.server.repl.stream_db = client.db;
                self.server.repl.open_transaction.clear();
            }
            crate::model::client::unsubscribe_all(&mut self.server.pubsub, &mut client);
            self.ks.watches.unwatch_all(id);
            self.ks.tracking.disable(id, &mut client.tracking);
        }
    }

    /// Adds `n` bytes to the network input counter (the connection read them).
    pub fn count_input(&mut self, id: ClientId, n: usize, query_buffer: usize) {
        self.server.stats.net_input_bytes += n as u64;
        self.server.stats.total_reads_processed += 1;
        if let Some(c) = self.clients.get_mut(id) {
            c.query_buffer = query_buffer;
        }
    }

    pub fn count_output(&mut self, n: usize) {
        self.server.stats.net_output_bytes += n as u64;
        self.server.stats.total_writes_processed += 1;
    }

    /// Runs one request of client `id`, appending its reply to `out`.
    pub fn execute(&mut self, id: ClientId, args: Vec<Bytes>, out: &mut BytesMut) -> Outcome {
        self.catch_up_with_clock();
        let Some(mut client) = self.clients.remove(id) else {
            return Outcome::Close;
        };
        let mut outcome = self.execute_for(&mut client, args, out, Run::Fresh);
        // Redis writes a reply into a 16 KB buffer and only what overflows it counts against
        // `client-output-buffer-limit`: one branch for the usual small reply. A replica's own
        // output (the image of a full sync) is not its replication stream and is not limited.
        if out.len() > REPLY_BUFFER_BYTES && !client.replica {
            let used =
                out.len() - REPLY_BUFFER_BYTES + crate::model::client::unsent_output(&client);
            let watch_broken = self.ks.watches.is_broken(id);
            let now_ms = self.server.clock.now_ms();
            if crate::kernel::publish::close_if_over_output_limit(
                &mut self.server,
                &mut client,
                watch_broken,
                used,
                now_ms,
            ) {
                // Nothing of it is sent: Redis writes nothing to a client it is closing.
                out.clear();
                outcome = Outcome::Close;
            }
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

    /// Redis's `processCommand`: the generic gates, then the call.
    pub(crate) fn process_command(
        &mut self,
        client: &mut ClientState,
        args: Vec<Bytes>,
        out: &mut BytesMut,
        run: Run<'_>,
    ) -> Outcome {
        let now_us = self.server.clock.now_us();
        let now_ms = now_us.div_euclid(1000);
        client.last_interaction_ms = now_ms;
        let command = match gates::resolve(self.registry, &args) {
            Ok(command) => command,
            Err(refused) => {
                let error = refused.error(&args);
                self.reject(client, refused.command(), error, &args, out);
                return self.finish(client);
            }
        };
        if command.spec.flags.contains(Flags::PROTECTED) && !self.protected_allowed(client, command)
        {
            // DEBUG answers to `enable-debug-command`, MODULE's subcommands to
            // `enable-module-command` (Redis tells them apart by their handler).
            let (name, option) = if command.full_name.starts_with("module") {
                ("MODULE", "enable-module-command")
            } else {
                ("DEBUG", "enable-debug-command")
            };
            let error = Error::owned(format!(
                "ERR {name} command not allowed. If the {option} option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
            ));
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
        }
        if gates::needs_auth(&self.server.users, client, command) {
            self.reject(client, Some(command), Error::NoAuth, &args, out);
            return self.finish(client);
        }
        if client.multi.is_some() && command.spec.flags.contains(Flags::NO_MULTI) {
            let error = Error::msg("ERR Command not allowed inside a transaction");
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
        }
        let context = gates::acl_context(client);
        if let Some(denied) = gates::acl_check(&mut self.server, client, (command, &args), context)
        {
            let error = Error::owned(crate::kernel::acl_rules::toplevel_error(denied, command));
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
        }
        // Cluster mode: keys this node does not serve are redirected (after ACL, as in Redis).
        if self.server.cluster.enabled && run == Run::Fresh {
            if let Some(outcome) = self.cluster_gate(client, command, &args, now_ms, out) {
                return outcome;
            }
        }
        // maxmemory (Redis checks it after ACL and cluster redirection).
        // A re-run of a blocked command already passed it, as Redis serves those directly.
        if self.server.config.maxmemory != 0 && run == Run::Fresh && {
            let flags = self.effective_flags(command, &args);
            let refused =
                gates::refuses_for_memory(&mut self.server, &mut self.ks, client, command, flags);
            // Keys just evicted are invalidated before the command's reply, as Redis's
            // processCommand does right after performEvictions.
            let now_us = self.server.clock.now_us();
            crate::kernel::invalidation::before_command(
                &mut self.parts(),
                client,
                command,
                out,
                now_us,
            );
            refused
        } {
            self.reject(
                client,
                Some(command),
                Error::msg(gates::OOM_ERROR),
                &args,
                out,
            );
            return self.finish(client);
        }
        // While the dataset loads only the commands flagged `loading` run (Redis's `-LOADING`).
        if self.server.persistence.loading && !command.spec.flags.contains(Flags::LOADING) {
            let error = Error::msg("LOADING Redis is loading the dataset in memory");
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
        }
        if !self.server.persistence.last_bgsave_ok
            && run == Run::Fresh
            && gates::disk_error(&self.server)
            && gates::refuses_for_disk_error(client, command, self.effective_flags(command, &args))
        {
            let error = Error::msg(gates::MISCONF_ERROR);
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
        }
        if self.server.config.min_replicas_to_write != 0
            && run == Run::Fresh
            && gates::refuses_for_replicas(
                &self.server,
                client,
                command,
                self.effective_flags(command, &args),
            )
        {
            let error = Error::msg(gates::NOREPLICAS_ERROR);
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
        }
        // A read-only replica takes writes only from its primary's link.
        if self.server.repl.primary.is_some() && run == Run::Fresh && !client.master {
            if gates::read_only_replica(&self.server)
                && gates::refuses_for_disk_error(
                    client,
                    command,
                    self.effective_flags(command, &args),
                )
                && command.full_name != "ping"
            {
                let error = Error::msg(gates::READONLY_ERROR);
                self.reject(client, Some(command), error, &args, out);
                return self.finish(client);
            }
            if gates::refuses_stale(&self.server, client, command) {
                let error = Error::msg(gates::MASTERDOWN_ERROR);
                self.reject(client, Some(command), error, &args, out);
                return self.finish(client);
            }
        }
        // A MONITOR client is a replica to Redis: it may not touch the keyspace. (The gates
        // below that need a script's declared flags are for rare clients: the common path
        // does not look the script up.)
        if client.monitor && {
            let flags = self.effective_flags(command, &args);
            flags.contains(Flags::READONLY)
                || flags.contains(Flags::WRITE)
                || flags.contains(Flags::MAY_REPLICATE)
        } {
            let error = Error::msg("ERR Replica can't interact with the keyspace");
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
        }
        // A RESP2 connection in subscribe mode can only tell pushed messages from replies if it
        // sends nothing but the pub/sub commands, PING, QUIT and RESET.
        if client.resp == Version::Resp2
            && client.subs.total() > 0
            && !matches!(
                command.full_name.as_str(),
                "subscribe"
                    | "unsubscribe"
                    | "psubscribe"
                    | "punsubscribe"
                    | "ssubscribe"
                    | "sunsubscribe"
                    | "ping"
                    | "quit"
                    | "reset"
            )
        {
            let error = Error::owned(format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                command.full_name
            ));
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
        }
        // Replicas (and so MONITOR clients) are never paused; a blocked command already passed.
        if run == Run::Fresh
            && !client.monitor
            && self.server.pause.is_some()
            && self.is_paused_for(self.effective_flags(command, &args), command, client)
        {
            client.last_command = &command.full_name;
            self.park(
                client,
                Blocked {
                    args,
                    reason: BlockReason::Postponed,
                    deadline_ms: None,
                },
            );
            return Outcome::Blocked;
        }
        // Inside MULTI, a command that passed the gates waits for EXEC.
        if client.multi.is_some() && !is_transaction_control(&command.full_name) {
            let broken = self.ks.watches.is_broken(client.id);
            let flags = self.effective_flags(command, &args);
            if let Some(transaction) = client.multi.as_mut() {
                transaction.queue(command.id, flags, args, broken);
                client.last_command = &command.full_name;
                Writer::new(out, client.resp).simple(b"QUEUED");
                return self.finish(client);
            }
        }
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

    /// The cluster gate ([`gates::cluster_route`]): `Some` with the outcome when the request
    /// was redirected. ASKING covers only the next command (or the transaction it opens).
    fn cluster_gate(
        &mut self,
        client: &mut ClientState,
        command: &'static Command,
        args: &[Bytes],
        now_ms: i64,
        out: &mut BytesMut,
    ) -> Option<Outcome> {
        let asking = client.asking;
        let exec = command.full_name == "exec";
        if command.full_name != "asking" && (client.multi.is_none() || exec) {
            client.asking = false;
        }
        self.server.cluster.current_slot = None;
        self.server.cluster.current_asking = asking;
        // The AOF's replay and the primary's stream must obey, as Redis's `mustObeyClient`.
        if !gates::cluster_gate_applies(command)
            || client.id == crate::model::client::AOF_CLIENT_ID
            || client.master
        {
            return None;
        }
        // The common case without the general router: one key at a fixed place, in a slot
        // this node serves, nothing migrating, the cluster whole (what `cluster_route` answers
        // first, at the price of a call per request).
        let cluster = &self.server.cluster;
        if cluster.migrating.is_empty() && cluster.importing.is_empty() && cluster.state_ok() {
            if let Some(at) = gates::single_key_position(command, args) {
                let slot = crate::model::cluster_view::key_slot(&args[at]);
                if cluster.owner(slot) == crate::model::cluster_view::MYSELF {
                    self.server.cluster.current_slot = Some(slot);
                    return None;
                }
            }
        }
        let route = gates::cluster_route(
            self.registry,
            &self.server.cluster,
            &self.ks,
            client,
            (command, args),
            asking,
            now_ms,
        );
        match route {
            Ok(slot) => {
                self.server.cluster.current_slot = slot;
                None
            }
            Err(redirect) => {
                let error = redirect.error(&self.server.cluster);
                if exec {
                    // A redirected EXEC drops its transaction and answers the redirection
                    // itself, not EXECABORT.
                    client.multi = None;
                    self.ks.watches.unwatch_all(client.id);
                    self.server.command_stats[command.id].rejected_calls += 1;
                    self.reject(client, None, error, args, out);
                } else {
                    self.reject(client, Some(command), error, args, out);
                }
                Some(self.finish(client))
            }
        }
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

    fn protected_allowed(&self, client: &ClientState, command: &Command) -> bool {
        if command.full_name.starts_with("module") {
            // `enable-module-command` is always `no`: embedis cannot run a module.
            return false;
        }
        match self.server.config.enable_debug_command {
            Access::Yes => true,
            Access::Local => client.peer.is_local(),
            Access::No => false,
        }
    }

    /// True if CLIENT PAUSE holds this command back (an EXEC counts as the writes it queued).
    fn is_paused_for(&self, flags: Flags, command: &Command, client: &ClientState) -> bool {
        let Some(pause) = self.server.pause else {
            return false;
        };
        // Under a pause of everything, Redis postpones every command, CLIENT PAUSE and
        // CLIENT UNPAUSE included: such a pause can only run out.
        if !pause.writes_only {
            return true;
        }
        flags.contains(Flags::WRITE)
            || flags.contains(Flags::MAY_REPLICATE)
            || (command.full_name == "exec" && client.multi.as_ref().is_some_and(|m| m.may_write()))
    }

    /// The flags the gates judge this command by (Redis's `getCommandFlags`): its own, except
    /// for a command running a script or function that declares its flags (a shebang, or
    /// `register_function`'s flags): then the script's flags decide whether it writes, may be
    /// refused when out of memory or run on stale data, and the hidden `may_replicate` goes,
    /// since the script says whether it writes. So a `no-writes` script is neither held by
    /// CLIENT PAUSE WRITE nor refused to a MONITOR client, and any other declared script is
    /// held. Scripts in compatibility mode (no shebang), unknown scripts and functions keep the
    /// command's flags.
    pub(crate) fn effective_flags(&self, command: &Command, args: &[Bytes]) -> Flags {
        let flags = command.spec.flags;
        let Some(script) = self.declared_script_flags(command, args) else {
            return flags;
        };
        let mut flags = flags.without(
            Flags::STALE
                .union(Flags::DENYOOM)
                .union(Flags::WRITE)
                .union(Flags::MAY_REPLICATE),
        );
        if !script.allow_oom && !script.no_writes {
            flags = flags.union(Flags::DENYOOM);
        }
        if !script.no_writes {
            flags = flags.union(Flags::WRITE);
        }
        if script.allow_stale {
            flags = flags.union(Flags::STALE);
        }
        flags
    }

    /// The declared flags of the script or function a command runs (see
    /// [`Engine::effective_flags`]); `None` for other commands and the cases listed there.
    fn declared_script_flags(
        &self,
        command: &Command,
        args: &[Bytes],
    ) -> Option<embedis_scripting::scripts::ScriptFlags> {
        let name = args.get(1)?;
        let flags = match command.full_name.as_str() {
            "eval" | "eval_ro" => embedis_scripting::scripts::parse_shebang(name).ok()?.0,
            "evalsha" | "evalsha_ro" => {
                if name.len() != 40 {
                    return None;
                }
                let sha = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
                self.server.scripting.get()?.script(&sha)?.flags
            }
            "fcall" | "fcall_ro" => {
                let mut flags = self.server.functions.get()?.function(name)?.flags;
                // A function always has flags; none declared means it may write.
                flags.declared = true;
                flags
            }
            _ => return None,
        };
        flags.declared.then_some(flags)
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
