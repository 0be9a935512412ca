//! The blocked-client life cycle: a command that cannot be served yet parks its client
//! ([`Engine::park`]); a write that makes a waited-on key ready re-runs the first waiters
//! ([`Engine::serve_ready_keys`]); a timeout, CLIENT UNBLOCK or the end of a pause releases them
//! ([`Engine::release`]). A released client's reply is out-of-turn output, handed to its
//! connection with everything else of that kind at the end of the command
//! ([`Engine::flush_pending`]).

use bytes::{Bytes, BytesMut};
use embedis_protocol::Writer;
use std::sync::Arc;

use super::{Engine, Outcome, Run};
use crate::model::blocking::{BlockReason, Blocked, TimeoutReply};
use crate::model::client::{ClientHandle, ClientId, ClientState};
use crate::model::keyspace::Access as KeyAccess;
use crate::model::state::EngineRequest;

impl Engine {
    /// Does what the last command asked for (see [`EngineRequest`]).
    pub(crate) fn carry_out_requests(&mut self) {
        for request in std::mem::take(&mut self.server.requests) {
            match request {
                EngineRequest::Unpause => self.unpause(),
                EngineRequest::ReleasePostponed => self.rerun_postponed(),
                EngineRequest::UnblockAll => self.unblock_all(),
                EngineRequest::ReleaseAcknowledged => self.release_acknowledged(),
                EngineRequest::ClusterBus => self.apply_cluster_effects(),
                EngineRequest::ShutdownCancelled => self.shutdown_cancelled(),
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

    /// Releases every blocked client but those CLIENT PAUSE postponed (they run again from
    /// scratch) with Redis's error for a server that stopped being a primary.
    fn unblock_all(&mut self) {
        let blocked: Vec<ClientId> = self
            .clients
            .iter()
            .filter(|c| {
                c.blocked.as_ref().is_some_and(|b| {
                    !matches!(b.reason, BlockReason::Postponed | BlockReason::Delayed(_))
                })
            })
            .map(|c| c.id)
            .collect();
        for id in blocked {
            self.release_with_error(
                id,
                b"UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
            );
        }
    }

    /// A shutdown was cancelled (Redis's `replyToClientsBlockedOnShutdown` and the end of its
    /// pause): the clients blocked in SHUTDOWN get the error, the paused writes run.
    fn shutdown_cancelled(&mut self) {
        let waiting: Vec<ClientId> = self
            .clients
            .iter()
            .filter(|c| {
                c.blocked
                    .as_ref()
                    .is_some_and(|b| matches!(b.reason, BlockReason::Shutdown))
            })
            .map(|c| c.id)
            .collect();
        for id in waiting {
            self.release_with_error(id, b"ERR Errors trying to SHUTDOWN. Check logs.");
        }
        if std::mem::take(&mut self.server.stopping.paused_writes) {
            self.unpause();
        }
    }

    /// Releases a blocked client with an error reply instead of its command's result.
    pub(super) fn release_with_error(&mut self, id: ClientId, error: &[u8]) {
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
        // The blocked command failed (Redis counts the error reply against it: `failed_calls`).
        if let Ok(command) = self.registry.lookup(&blocked.args) {
            self.server.command_stats[command.id].failed_calls += 1;
        }
        self.server.pending_writes.push(id);
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
    pub(super) fn forget_block(&mut self, id: ClientId, blocked: &Blocked) {
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
                let (wants, on_nokey) = match self.clients.get(id).and_then(|c| c.blocked.as_ref())
                {
                    Some(Blocked {
                        reason: BlockReason::Keys(wait),
                        ..
                    }) => (wait.wants, wait.on_nokey),
                    _ => continue,
                };
                let now = self.server.clock.now_ms();
                // Redis 7.2 looks without side effects: an expired key keeps its clients
                // waiting and is deleted (and its DEL propagated) only when a command touches
                // it; 7.0's lookup deleted it here.
                let quiet = self.server.config.compat_version
                    >= crate::base::compat::CompatVersion::V7_2
                    && self.ks.dbs[db].is_expired(&key, now);
                let holds = if quiet {
                    None
                } else {
                    self.ks
                        .lookup(db, &key, now, KeyAccess::NoTouch)
                        .map(|o| o.value.value_type())
                };
                // A deleted or replaced stream releases an XREADGROUP (its command decides with
                // which error); a plain XREAD keeps waiting.
                if on_nokey && holds != Some(wants) {
                    self.rerun_blocked(id, &key);
                    continue;
                }
                // A missing key serves no one else, but the readers behind that wait for its
                // deletion must still be reached.
                match holds {
                    Some(kind) if kind == wants => self.rerun_blocked(id, &key),
                    _ => continue,
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
    pub(super) fn release(&mut self, id: ClientId, retry: bool) {
        let Some(mut client) = self.clients.remove(id) else {
            return;
        };
        if let Some(blocked) = client.blocked.take() {
            self.forget_block(id, &blocked);
            if retry && client.master {
                self.rerun_stream_command(client, blocked.args);
                return;
            }
            let mut out = std::mem::take(&mut client.pending);
            if retry {
                self.execute_for(&mut client, blocked.args, &mut out, Run::Fresh);
            } else if let BlockReason::Delayed(reply) = &blocked.reason {
                out.extend_from_slice(reply);
            } else if let BlockReason::Replicas { offset, .. } = blocked.reason {
                // WAIT: the replicas that have acknowledged by now.
                let acked = self.server.repl.acknowledged(offset) as i64;
                Writer::new(&mut out, client.resp).integer(acked);
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

    /// Runs the primary's command that CLIENT PAUSE postponed, as `link_apply` runs the others
    /// (no lazy expiry, the reply dropped), and counts its bytes once it ran.
    fn rerun_stream_command(&mut self, mut client: Box<ClientState>, args: Vec<Bytes>) {
        let id = client.id;
        let mut scratch = BytesMut::new();
        self.ks.expiry_rule = crate::model::keyspace::ExpiryRule::Keep;
        self.execute_for(&mut client, args, &mut scratch, Run::Fresh);
        let still_held = client.blocked.is_some();
        if !still_held {
            client.handle.set_blocked(false);
        }
        self.clients.insert(client);
        self.restore_expiry_rule();
        if !still_held {
            self.held_stream_command_ran(id);
        }
    }

    /// Releases the WAITing clients whose replicas have acknowledged enough (after a REPLCONF
    /// ACK), with the count.
    pub(crate) fn release_acknowledged(&mut self) {
        let waiting = std::mem::take(&mut self.server.repl.waiting);
        let mut still = Vec::with_capacity(waiting.len());
        for id in waiting {
            let Some(Blocked {
                reason: BlockReason::Replicas { offset, wanted },
                ..
            }) = self.clients.get(id).and_then(|c| c.blocked.as_ref())
            else {
                continue;
            };
            if self.server.repl.acknowledged(*offset) >= *wanted {
                self.release(id, false);
            } else {
                still.push(id);
            }
        }
        self.server.repl.waiting.extend(still);
    }

    /// Hands out-of-turn output to the connections and wakes them.
    pub fn flush_pending(&mut self) {
        self.hand_over_pending(|handle, pending| {
            handle.deliver_from(pending);
        });
    }

    /// Hands out-of-turn output to the connections and adds those to wake to `wake`, for the
    /// caller to wake at the end of the event loop's turn (see `crate::io::net`).
    pub fn flush_pending_later(&mut self, wake: &mut Vec<Arc<ClientHandle>>) {
        self.hand_over_pending(|handle, pending| {
            if handle.deliver_from_later(pending) {
                wake.push(handle.clone());
            }
        });
    }

    fn hand_over_pending(&mut self, mut hand_over: impl FnMut(&Arc<ClientHandle>, &mut BytesMut)) {
        // The turn's replication stream to the backlog and the replicas (Redis feeds them as it
        // propagates; they write in `beforeSleep`, as here).
        crate::model::replication::drain(
            &mut self.server.repl,
            &mut self.ks.stream,
            &mut self.clients,
            &mut self.server.pending_writes,
        );
        // The end of an event-loop turn: client tracking's broadcasts, as Redis's `beforeSleep`.
        if self.ks.tracking.is_on() {
            let now_ms = self.server.clock.now_ms();
            crate::kernel::invalidation::between_commands(&mut self.parts(), now_ms);
        }
        if self.server.pending_writes.is_empty() {
            return;
        }
        let mut ids = std::mem::take(&mut self.server.pending_writes);
        ids.sort_unstable();
        ids.dedup();
        let now_ms = self.server.clock.now_ms();
        for &id in &ids {
            if let Some(client) = self.clients.get_mut(id) {
                // A replica may have nothing pending but its stream in the backlog.
                if client.pending.is_empty() && !client.handle.has_feed() {
                    continue;
                }
                // The output-buffer limits, for output no single delivery checked: the
                // replication stream a replica has not taken, MONITOR lines, a released
                // client's reply (subscribers' messages were checked as they came).
                let used = crate::model::client::unsent_output(client);
                let watching = self.ks.watches.watching(id);
                if crate::kernel::publish::close_if_over_output_limit(
                    &mut self.server,
                    client,
                    watching,
                    used,
                    now_ms,
                ) {
                    continue;
                }
                hand_over(&client.handle, &mut client.pending);
            }
        }
        // Handing over adds no pending writes: the list goes back with its capacity, so that
        // a PUBLISH to many subscribers does not grow a new one every time.
        ids.clear();
        self.server.pending_writes = ids;
        // Clients over their limit are closed now (they got nothing more).
        if !self.server.requests.is_empty() {
            self.carry_out_requests();
        }
    }

    /// Ends CLIENT PAUSE and re-runs the postponed commands in arrival order.
    pub fn unpause(&mut self) {
        self.server.end_timed_pause();
        self.rerun_postponed();
    }

    /// Re-runs the postponed commands in arrival order, after a pause ended (a pause still in
    /// force holds back again those it covers).
    fn rerun_postponed(&mut self) {
        self.ks.expiry_held_until = self.server.pause.map_or(i64::MIN, |p| p.until_ms);
        // The commands a server pause (a fault) holds wait for its end.
        let fault_paused = |engine: &Engine| {
            engine.server.faults.active() && engine.server.faults.paused_until().is_some()
        };
        if fault_paused(self) {
            return;
        }
        if self.server.pause.is_some() {
            let queued: Vec<_> = self.server.blocked.postponed.iter().copied().collect();
            for id in queued {
                self.release(id, true);
            }
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
        TimeoutReply::LocalPair => {
            w.array(2);
            w.integer(1);
            w.integer(0);
        }
    }
}
