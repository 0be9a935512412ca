//! The executor: one [`Engine`] owns the keyspace, the server state and every client's state, and
//! runs commands one at a time. Whatever thread calls it owns all the data: nothing on the data
//! path takes a lock.
//!
//! [`Engine::execute`] is the path of one request. It applies Redis's generic gates in Redis's
//! order (`processCommand` in server.c): QUIT first, then unknown command or subcommand, arity,
//! protected commands (DEBUG), authentication, `no_multi` commands inside MULTI, MONITOR clients
//! touching the keyspace (Redis treats them as replicas), RESP2 subscribe mode, CLIENT PAUSE,
//! queueing inside MULTI; then it freezes `now`, runs the handler through [`crate::call`], and
//! does the bookkeeping every command shares — per-command statistics, error statistics, MONITOR
//! feeds, CLIENT REPLY modes and blocking. (While a script runs too long, other clients' requests
//! meet a shorter gate list of their own: see [`crate::busy`].)
//!
//! The networking layer calls `execute` for each request of a connection and writes the replies;
//! out-of-turn output (released blocked commands, MONITOR lines) is handed over by
//! [`Engine::flush_pending`]. [`Engine::cron`] is the periodic tick (`hz` times a second): active
//! expiry, incremental rehashing, idle-client timeouts, blocked-client timeouts, the end of CLIENT
//! PAUSE.

use bytes::{Bytes, BytesMut};
use embedis_protocol::{Version, Writer};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::blocking::{BlockReason, Blocked, TimeoutReply};
use crate::call::{How, Parts};
use crate::client::{ClientHandle, ClientId, ClientState, Peer, ReplyMode};
use crate::clock::Clock;
use crate::command::{registry, Command, Flags, Lookup};
use crate::commands::transactions;
use crate::config::{Access, Config};
use crate::ctx::Clients;
use crate::error::Error;
use crate::expire;
use crate::keyspace::{Access as KeyAccess, Keyspace};
use crate::log::Logger;
use crate::state::{EngineRequest, ServerState};

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

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The complete reply line to send before closing.
    Reply(&'static str),
}

pub struct Engine {
    pub ks: Keyspace,
    pub server: ServerState,
    pub clients: Clients,
}

impl Engine {
    pub fn new(config: Config, clock: Clock, log: Logger, seed: Option<u64>) -> Engine {
        let ks = Keyspace::new(config.databases);
        Engine {
            ks,
            server: ServerState::new(config, clock, log, seed),
            clients: Clients::default(),
        }
    }

    /// Registers a new connection. Returns its handle, or the refusal to send.
    pub fn connect(&mut self, peer: Peer, fd: i32) -> Result<Arc<ClientHandle>, Refusal> {
        connect_client(&mut self.parts(), peer, fd)
    }

    /// Forgets a connection (closed by the peer, killed, or QUIT).
    pub fn disconnect(&mut self, id: ClientId) {
        if let Some(mut client) = self.clients.remove(id) {
            if let Some(blocked) = client.blocked.take() {
                self.forget_block(id, &blocked);
            }
            self.server.monitors.retain(|&m| m != id);
            crate::pubsub::unsubscribe_all(&mut self.server.pubsub, &mut client);
            self.ks.watches.unwatch_all(id);
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
        let outcome = self.execute_for(&mut client, args, out, Run::Fresh);
        client
            .handle
            .set_authenticated(!auth_required(&self.server.config, &client));
        self.clients.insert(client);
        if !self.server.requests.is_empty() {
            self.carry_out_requests();
        }
        if self.ks.ready.has_ready() {
            self.serve_ready_keys();
        }
        outcome
    }

    /// Does what the last command asked for (see [`EngineRequest`]).
    pub(crate) fn carry_out_requests(&mut self) {
        for request in std::mem::take(&mut self.server.requests) {
            match request {
                EngineRequest::Unpause => self.unpause(),
                EngineRequest::Kill { id } => {
                    if let Some(client) = self.clients.get(id) {
                        client.handle.kill();
                    }
                    self.disconnect(id);
                }
                EngineRequest::Unblock { id, with_error } => {
                    if with_error {
                        self.release_with_error(
                            id,
                            b"UNBLOCKED client unblocked via CLIENT UNBLOCK",
                        );
                    } else {
                        self.release(id, false);
                    }
                }
            }
        }
    }

    /// Releases a blocked client with an error reply instead of its command's result.
    fn release_with_error(&mut self, id: ClientId, error: &[u8]) {
        let Some(client) = self.clients.get_mut(id) else {
            return;
        };
        let Some(blocked) = client.blocked.take() else {
            return;
        };
        let version = client.resp;
        Writer::new(&mut client.pending, version).error_line(error);
        client.handle.set_blocked(false);
        self.forget_block(id, &blocked);
        let code_end = error.iter().position(|&b| b == b' ').unwrap_or(error.len());
        self.server
            .count_error(&String::from_utf8_lossy(&error[..code_end]));
        self.server.pending_writes.push(id);
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
            let outcome = self.process(client, args, &mut scratch, run);
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
    /// [`crate::faults`]): one branch when there are none.
    fn process(
        &mut self,
        client: &mut ClientState,
        args: Vec<Bytes>,
        out: &mut BytesMut,
        run: Run<'_>,
    ) -> Outcome {
        if self.server.faults.active() && run == Run::Fresh {
            return crate::faults::process_with_faults(self, client, args, out);
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
        let registry = registry();
        let command = match registry.lookup(&args) {
            Ok(command) => command,
            Err(lookup) => {
                let error = match lookup {
                    Lookup::UnknownCommand => unknown_command_error(&args),
                    Lookup::UnknownSubcommand(parent) => {
                        unknown_subcommand_error(&args, &registry.commands[parent])
                    }
                };
                self.reject(client, None, error, &args, out);
                return self.finish(client);
            }
        };
        if !command.arity_ok(args.len()) {
            let error = Error::WrongArity(command.full_name.clone().into());
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
        }
        if command.spec.flags.contains(Flags::PROTECTED) && !self.protected_allowed(client) {
            let error = Error::owned(format!(
                "ERR {} command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
                command.spec.name.to_ascii_uppercase()
            ));
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
        }
        if auth_required(&self.server.config, client)
            && !command.spec.flags.contains(Flags::NO_AUTH)
        {
            self.reject(client, Some(command), Error::NoAuth, &args, out);
            return self.finish(client);
        }
        if client.multi.is_some() && command.spec.flags.contains(Flags::NO_MULTI) {
            let error = Error::msg("ERR Command not allowed inside a transaction");
            self.reject(client, Some(command), error, &args, out);
            return self.finish(client);
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
        if client.multi.is_some() && !transactions::is_transaction_control(command) {
            let broken = self.ks.watches.is_broken(client.id);
            let flags = self.effective_flags(command, &args);
            if let Some(transaction) = client.multi.as_mut() {
                transactions::queue(transaction, command, flags, args, broken);
                client.last_command = &command.full_name;
                Writer::new(out, client.resp).simple(b"QUEUED");
                return self.finish(client);
            }
        }
        let block = self.call(client, command, &args, out, now_us, run);
        match (block, run) {
            (Some(blocked), Run::Fresh) => self.park(client, blocked),
            // Still nothing for it: the caller keeps the client where it was in the queues.
            (Some(_), Run::Rerun { .. }) => return Outcome::Blocked,
            (None, _) => {}
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

    fn protected_allowed(&self, client: &ClientState) -> bool {
        match self.server.config.enable_debug_command {
            Access::Yes => true,
            Access::Local => client.peer.is_loopback(),
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

    /// A command refused by a gate: error reply, counted as rejected. Inside MULTI it aborts
    /// the transaction; a refused EXEC discards it (even without MULTI) and says why, and MONITOR
    /// still sees it.
    pub(crate) fn reject(
        &mut self,
        client: &mut ClientState,
        command: Option<&'static Command>,
        error: Error,
        args: &[Bytes],
        out: &mut BytesMut,
    ) {
        if let Some(transaction) = client.multi.as_mut() {
            transaction.aborted = true;
        }
        if let Some(command) = command {
            self.server.command_stats[command.id].rejected_calls += 1;
            if command.full_name == "exec" {
                client.multi = None;
                self.ks.watches.unwatch_all(client.id);
                let error = transactions::exec_abort_error(&error);
                self.server.count_error(&error.code());
                Writer::new(out, client.resp).error_line(&error.line());
                if !self.server.monitors.is_empty() {
                    let now_us = self.server.clock.now_us();
                    let mut parts = self.parts();
                    crate::call::feed_monitors(
                        &mut parts, client, command, args, now_us, false, out,
                    );
                }
                return;
            }
        }
        self.server.count_error(&error.code());
        Writer::new(out, client.resp).error_line(&error.line());
    }

    /// Redis's `call` for a client's own command (see [`crate::call`]).
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
        crate::call::call(
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
        }
    }

    /// Parks `client` until something releases it.
    pub(crate) fn park(&mut self, client: &mut ClientState, blocked: Blocked) {
        self.server.timers_changed = true;
        if let BlockReason::Keys(wait) = &blocked.reason {
            for key in &wait.keys {
                self.ks.ready.watch(wait.db, key.clone());
            }
        }
        self.server.blocked.add(client.id, &blocked);
        client.blocked = Some(blocked);
        client.handle.set_blocked(true);
    }

    /// Removes a released client from the blocked index; keys nobody waits on anymore stop
    /// being watched.
    fn forget_block(&mut self, id: ClientId, blocked: &Blocked) {
        for (db, key) in self.server.blocked.remove(id, blocked) {
            self.ks.ready.unwatch(db, &key);
        }
    }

    /// Serves the clients blocked on keys that commands wrote to: for each ready key, in the
    /// order keys were signalled, its waiting clients in the order they blocked, as long as the
    /// key holds the type of value they wait for. Serving one (BLMOVE) may make another key
    /// ready, which is served in turn.
    pub fn serve_ready_keys(&mut self) {
        while let Some((db, key)) = self.ks.ready.pop() {
            for id in self.server.blocked.waiting_on(db, &key) {
                let wants = match self.clients.get(id).and_then(|c| c.blocked.as_ref()) {
                    Some(Blocked {
                        reason: BlockReason::Keys(wait),
                        ..
                    }) => wait.wants,
                    _ => continue,
                };
                let now = self.server.clock.now_ms();
                let holds = self
                    .ks
                    .lookup(db, &key, now, KeyAccess::NoTouch)
                    .map(|o| o.value.value_type());
                match holds {
                    None => break,
                    Some(kind) if kind != wants => continue,
                    Some(_) => self.rerun_blocked(id, &key),
                }
            }
        }
    }

    /// Runs a key-blocked client's command again. If it can now complete, the client is released
    /// with its reply; otherwise it keeps its place in every queue and its deadline.
    fn rerun_blocked(&mut self, id: ClientId, woken_by: &[u8]) {
        let Some(mut client) = self.clients.remove(id) else {
            return;
        };
        let Some(blocked) = client.blocked.take() else {
            self.clients.insert(client);
            return;
        };
        let mut out = std::mem::take(&mut client.pending);
        let outcome = self.execute_for(
            &mut client,
            blocked.args.clone(),
            &mut out,
            Run::Rerun { woken_by },
        );
        client.pending = out;
        if outcome == Outcome::Blocked {
            client.blocked = Some(blocked);
        } else {
            self.forget_block(id, &blocked);
            client.handle.set_blocked(false);
            self.server.pending_writes.push(id);
        }
        self.clients.insert(client);
    }

    /// Releases a blocked client: `retry` re-runs its command (pause ended), otherwise the
    /// command's timeout reply is sent. Output goes to the client's pending buffer.
    fn release(&mut self, id: ClientId, retry: bool) {
        let Some(mut client) = self.clients.remove(id) else {
            return;
        };
        if let Some(blocked) = client.blocked.take() {
            self.forget_block(id, &blocked);
            let mut out = std::mem::take(&mut client.pending);
            if retry {
                self.execute_for(&mut client, blocked.args, &mut out, Run::Fresh);
            } else if let BlockReason::Delayed(reply) = &blocked.reason {
                out.extend_from_slice(reply);
            } else {
                write_timeout_reply(
                    blocked.timeout_reply(),
                    &mut Writer::new(&mut out, client.resp),
                );
            }
            client.pending = out;
            if client.blocked.is_none() {
                client.handle.set_blocked(false);
            }
            self.server.pending_writes.push(id);
        }
        self.clients.insert(client);
    }

    /// Hands out-of-turn output to the connections and wakes them.
    pub fn flush_pending(&mut self) {
        self.hand_over_pending(|handle, pending| {
            handle.deliver_from(pending);
        });
    }

    /// Hands out-of-turn output to the connections and adds those to wake to `wake`, for the
    /// caller to wake at the end of the event loop's turn (see `crate::net`).
    pub fn flush_pending_later(&mut self, wake: &mut Vec<Arc<ClientHandle>>) {
        self.hand_over_pending(|handle, pending| {
            if handle.deliver_from_later(pending) {
                wake.push(handle.clone());
            }
        });
    }

    fn hand_over_pending(&mut self, mut hand_over: impl FnMut(&Arc<ClientHandle>, &mut BytesMut)) {
        if self.server.pending_writes.is_empty() {
            return;
        }
        let mut ids = std::mem::take(&mut self.server.pending_writes);
        ids.sort_unstable();
        ids.dedup();
        for &id in &ids {
            if let Some(client) = self.clients.get_mut(id) {
                if !client.pending.is_empty() {
                    hand_over(&client.handle, &mut client.pending);
                }
            }
        }
        // Handing over adds no pending writes: the list goes back with its capacity, so that
        // a PUBLISH to many subscribers does not grow a new one every time.
        ids.clear();
        self.server.pending_writes = ids;
    }

    /// Ends CLIENT PAUSE and re-runs the postponed commands in arrival order.
    pub fn unpause(&mut self) {
        self.server.pause = None;
        // The commands a server pause (a fault) holds wait for its end.
        let fault_paused = |engine: &Engine| {
            engine.server.faults.active() && engine.server.faults.paused_until().is_some()
        };
        if fault_paused(self) {
            return;
        }
        while let Some(id) = self.server.blocked.postponed.front().copied() {
            self.release(id, true);
            // A re-run command may be postponed again only if a new pause started.
            if self.server.pause.is_some() || fault_paused(self) {
                break;
            }
        }
    }

    /// Re-runs one postponed command (the end of a server pause while CLIENT PAUSE goes on).
    pub(crate) fn release_postponed(&mut self, id: ClientId) {
        self.release(id, true);
    }

    /// Fires blocked-client timeouts and the end of CLIENT PAUSE that are due at the clock's now.
    pub fn process_timeouts(&mut self) {
        // A paused server (a fault) fires nothing until the pause ends.
        if self.server.faults.active() && crate::faults::on_timer(self) {
            return;
        }
        let now = self.server.clock.now_ms();
        if let Some(pause) = self.server.pause {
            if now >= pause.until_ms {
                self.unpause();
            }
        }
        for id in self.server.blocked.due(now) {
            self.release(id, false);
        }
        // Commands re-run when a pause ended may have written to keys others wait on.
        if self.ks.ready.has_ready() {
            self.serve_ready_keys();
        }
    }

    /// Runs the tick now if a test moved the clock since the last one ([`ServerState::clock_changed`]),
    /// so that every command after `Clock::advance` returns sees its keys expired and its
    /// timeouts fired — without waiting for the timer task, which the change also wakes.
    #[inline]
    pub fn catch_up_with_clock(&mut self) {
        if self.server.clock_changed.load(Ordering::Relaxed)
            && self.server.clock_changed.swap(false, Ordering::AcqRel)
        {
            self.cron();
        }
    }

    /// The periodic tick.
    pub fn cron(&mut self) {
        let now = self.server.clock.now_ms();
        self.process_timeouts();
        self.close_idle_clients(now);
        self.server.stats.sample(now);
        let hz = self.server.config.hz.max(1) as u64;
        // Redis gives the slow expiry cycle 25% of each tick.
        let budget = Duration::from_micros(1_000_000 * 25 / 100 / hz);
        if self.server.active_expire {
            expire::active_expire_cycle(&mut self.ks, &mut self.server, now, budget);
        }
        self.resize_and_rehash();
    }

    /// Shrinks tables that fell under 10% full and gives incremental rehashing one millisecond
    /// per tick in total — to the first table that needs it, as Redis's `databasesCron` does —
    /// so that the tick never holds clients up for long.
    fn resize_and_rehash(&mut self) {
        for db in self.ks.dbs.iter_mut() {
            db.main.shrink_if_needed();
            db.expires.shrink_if_needed();
        }
        for db in self.ks.dbs.iter_mut() {
            if db.main.is_rehashing() {
                db.main.rehash_for(Duration::from_millis(1));
                return;
            }
            if db.expires.is_rehashing() {
                db.expires.rehash_for(Duration::from_millis(1));
                return;
            }
        }
    }

    fn close_idle_clients(&mut self, now_ms: i64) {
        let timeout = self.server.config.timeout;
        if timeout == 0 {
            return;
        }
        let limit = timeout as i64 * 1000;
        let idle: Vec<ClientId> = self
            .clients
            .iter()
            .filter(|c| c.blocked.is_none() && !c.monitor && now_ms - c.last_interaction_ms > limit)
            .map(|c| c.id)
            .collect();
        for id in idle {
            self.server.log.verbose("Closing idle client");
            if let Some(c) = self.clients.get(id) {
                c.handle.kill();
            }
        }
    }

    /// When the next timer-driven event is due (ms on the server clock), if any besides the tick.
    pub fn next_deadline(&self) -> Option<i64> {
        let pause = self.server.pause.map(|p| p.until_ms);
        let fault_pause = if self.server.faults.active() {
            self.server.faults.paused_until()
        } else {
            None
        };
        [pause, fault_pause, self.server.blocked.next_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    /// The protocol version of a client (for errors written by the connection layer).
    pub fn version_of(&self, id: ClientId) -> Version {
        self.clients.get(id).map_or(Version::Resp2, |c| c.resp)
    }
}

/// Registers a new connection with the engine's parts (the engine's own `connect`, and a busy
/// script accepting connections from inside its hook). Returns its handle, or the refusal.
pub fn connect_client(
    parts: &mut Parts<'_>,
    peer: Peer,
    fd: i32,
) -> Result<Arc<ClientHandle>, Refusal> {
    let server = &mut *parts.server;
    if parts.clients.len() as u64 >= server.config.maxclients {
        server.stats.rejected_connections += 1;
        return Err(Refusal::Reply("-ERR max number of clients reached\r\n"));
    }
    let config = &server.config;
    if config.protected_mode && config.requirepass.is_empty() && !peer.is_loopback() {
        server.stats.rejected_connections += 1;
        return Err(Refusal::Reply(
            "-DENIED embedis is running in protected mode: no password is set, so only loopback connections are accepted. Set a password (requirepass) or run with '--protected-mode no'.\r\n",
        ));
    }
    let id = server.next_client_id;
    server.next_client_id += 1;
    server.stats.total_connections_received += 1;
    let handle = Arc::new(ClientHandle::new(id));
    let authenticated = server.config.requirepass.is_empty();
    let now = server.clock.now_ms();
    handle.set_authenticated(authenticated);
    let client = ClientState::new(handle.clone(), peer, fd, now, authenticated);
    parts.clients.insert(Box::new(client));
    Ok(handle)
}

/// True if the client must authenticate before running commands other than AUTH, HELLO and the
/// like. As in Redis, this is decided per command: a client that connected while a password was
/// required is free once the password is removed.
pub(crate) fn auth_required(config: &Config, client: &ClientState) -> bool {
    !client.authenticated && !config.requirepass.is_empty()
}

/// The arguments MONITOR shows as `"(redacted)"`: the passwords of AUTH and HELLO … AUTH, as
/// far as Redis's own parsing of those commands gets before it redacts them.
pub(crate) fn redacted_arguments(name: &str, args: &[Bytes]) -> Vec<usize> {
    match name {
        "auth" if args.len() <= 3 => (1..args.len()).collect(),
        "hello" => {
            let mut redacted = Vec::new();
            // An invalid protocol version stops HELLO before it looks at the options.
            let version = args.get(1).map(|v| embedis_protocol::number::parse_i64(v));
            if matches!(version, Some(v) if !matches!(v, Some(2..=3))) {
                return redacted;
            }
            let mut j = 2;
            while j < args.len() {
                let more = args.len() - 1 - j;
                if args[j].eq_ignore_ascii_case(b"auth") && more >= 2 {
                    redacted.extend([j + 1, j + 2]);
                    j += 2;
                } else if args[j].eq_ignore_ascii_case(b"setname") && more >= 1 {
                    j += 1;
                } else {
                    break;
                }
                j += 1;
            }
            redacted
        }
        _ => Vec::new(),
    }
}

/// Writes the reply a blocked command gives when its time runs out.
fn write_timeout_reply(reply: TimeoutReply, w: &mut Writer<'_>) {
    match reply {
        TimeoutReply::Integer(n) => w.integer(n),
        TimeoutReply::NullArray => w.null_array(),
        TimeoutReply::Null => w.null(),
        TimeoutReply::ZeroPair => {
            w.array(2);
            w.integer(0);
            w.integer(0);
        }
    }
}

/// `ERR unknown command 'foo', with args beginning with: 'a' 'b' ` — Redis quotes at most about
/// 128 bytes of arguments and, being C, stops each at a NUL byte.
pub(crate) fn unknown_command_error(args: &[Bytes]) -> Error {
    let mut line = b"ERR unknown command '".to_vec();
    line.extend_from_slice(c_str_max(&args[0], 128));
    line.extend_from_slice(b"', with args beginning with: ");
    let mut quoted = Vec::new();
    for arg in &args[1..] {
        if quoted.len() >= 128 {
            break;
        }
        let room = 128 - quoted.len();
        quoted.push(b'\'');
        quoted.extend_from_slice(c_str_max(arg, room));
        quoted.extend_from_slice(b"' ");
    }
    line.extend_from_slice(&quoted);
    Error::bytes(line)
}

pub(crate) fn unknown_subcommand_error(args: &[Bytes], parent: &Command) -> Error {
    let mut line = b"ERR unknown subcommand '".to_vec();
    line.extend_from_slice(c_str_max(&args[1], 128));
    line.extend_from_slice(b"'. Try ");
    line.extend_from_slice(parent.spec.name.to_ascii_uppercase().as_bytes());
    line.extend_from_slice(b" HELP.");
    Error::bytes(line)
}

/// At most `max` bytes of `bytes`, cut at the first NUL (C's `%.*s`).
fn c_str_max(bytes: &[u8], max: usize) -> &[u8] {
    let s = crate::cstr::c_str(bytes);
    &s[..s.len().min(max)]
}

/// Redis's `sdscatrepr`: a quoted, escaped representation of binary data.
pub fn push_repr(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&[u8]]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w)).collect()
    }

    #[test]
    fn unknown_command_text() {
        assert_eq!(
            unknown_command_error(&args(&[b"foo", b"a", b"b"])).to_string(),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        assert_eq!(
            unknown_command_error(&args(&[b"foo"])).to_string(),
            "ERR unknown command 'foo', with args beginning with: "
        );
        assert_eq!(
            unknown_command_error(&args(&[b"f\0oo", b"a\0b"])).to_string(),
            "ERR unknown command 'f', with args beginning with: 'a' "
        );
    }

    #[test]
    fn repr() {
        let mut out = Vec::new();
        push_repr(&mut out, b"a\"b\\\n\x01\xff");
        assert_eq!(out, b"\"a\\\"b\\\\\\n\\x01\\xff\"");
    }
}
