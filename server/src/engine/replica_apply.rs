//! The executor's side of a replica's link to its primary: what the I/O layer's link task
//! (`crate::io::primary_link`) asks of the engine between its reads — what to connect to, the
//! link's state for INFO and ROLE, and applying the stream (a full sync's image is
//! `replica_full_sync`'s).
//!
//! The stream is applied by a client of its own, flagged `master` (Redis's `server.master`):
//! its commands run through the same [`Engine::execute`] as any client's, past the gates a
//! replica puts in front of its other clients (READONLY, MASTERDOWN, min-replicas), and with
//! lazy expiry turned off ([`ExpiryRule::Keep`]): a key the primary still has must not vanish
//! here under a command that reads it. Its replies are dropped. Each command's bytes move the
//! replication offset and go on, unchanged, to this server's own replicas
//! ([`crate::model::replication::relay`]).

use bytes::{Bytes, BytesMut};
use std::sync::Arc;

use super::Engine;
use crate::model::client::{ClientHandle, ClientId, ClientState, Peer};
use crate::model::keyspace::ExpiryRule;
use crate::model::replication::{Backlog, LinkState};

/// What became of one command of the primary's stream ([`Engine::link_apply`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Done,
    /// REPLCONF GETACK: the primary wants this offset acknowledged now.
    AckAsked(u64),
    /// The primary's client is gone (killed, or the link replaced): the link ends.
    ClientGone,
}

/// What the link task needs to connect and introduce itself.
#[derive(Debug, Clone)]
pub struct LinkTarget {
    pub host: String,
    pub port: u16,
    pub generation: u64,
    /// PSYNC's arguments: the history this server has (its own, or its last primary's), or
    /// `?` when it has none.
    pub replid: String,
    pub offset: u64,
    /// REPLCONF listening-port and ip-address.
    pub listening_port: u16,
    pub announce_ip: String,
    pub masteruser: String,
    pub masterauth: String,
    pub timeout_s: u64,
    /// `tls-replication`: connect over TLS.
    pub tls: bool,
    /// A FAILOVER hands our role to this primary: PSYNC says `FAILOVER`.
    pub failover: bool,
    /// `bind-source-addr`: the local address the connection binds first (empty: any).
    pub source_addr: String,
}

impl Engine {
    /// The primary to link to now, if this is a replica.
    pub fn link_wanted(&self) -> Option<LinkTarget> {
        // Not while the start-up file loads: the PSYNC must offer the history it restores
        // (Redis loads before its event loop runs); the load's end wakes the link.
        if self.server.persistence.loading {
            return None;
        }
        let primary = self.server.repl.primary.as_ref()?;
        let config = &self.server.config;
        Some(LinkTarget {
            host: primary.host.clone(),
            port: primary.port,
            generation: primary.generation,
            replid: if self.server.repl.no_history {
                "?".to_string()
            } else {
                self.server.repl.replid.clone()
            },
            offset: self.server.repl.offset,
            // Over TLS a replica is reached on its TLS port, so that is the one it announces.
            listening_port: if config.replica_announce_port != 0 {
                config.replica_announce_port
            } else if config.tls.replication && config.tls.port != 0 {
                config.tls.port
            } else {
                config.port
            },
            announce_ip: config.replica_announce_ip.clone(),
            masteruser: config.masteruser.clone(),
            masterauth: config.masterauth.clone(),
            timeout_s: u64::from(config.repl_timeout.max(1)),
            tls: config.tls.replication,
            failover: self.server.repl.failover.state
                == crate::model::replication::FailoverState::InProgress,
            source_addr: config.process.bind_source_addr.clone(),
        })
    }

    /// The answer to a `PSYNC … FAILOVER` (`accepted`: `+CONTINUE` or `+FULLRESYNC`; false
    /// also when the PSYNC could not be written): the failover ends, done or given up.
    pub fn link_failover_answered(&mut self, generation: u64, accepted: bool, write_error: bool) {
        if !self.link_current(generation) {
            return;
        }
        if write_error {
            crate::commands::failover::abort_failover(
                &mut self.parts(),
                "Write error to failover target",
            );
        } else {
            crate::commands::failover::psync_answered(&mut self.parts(), accepted);
        }
        self.carry_out_requests();
    }

    /// True while `generation` is still the link wanted (no REPLICAOF since).
    pub fn link_current(&mut self, generation: u64) -> bool {
        self.server.repl.link(generation).is_some()
    }

    /// Records the link's progress; false if the link is no longer wanted.
    pub fn link_progress(&mut self, generation: u64, state: LinkState) -> bool {
        let now = self.server.clock.now_ms();
        match self.server.repl.link(generation) {
            Some(primary) => {
                if state == LinkState::Transfer && primary.state != LinkState::Transfer {
                    primary.transfer_started_ms = now;
                    primary.transfer_read = 0;
                }
                let entering_transfer =
                    state == LinkState::Transfer && primary.state != LinkState::Transfer;
                primary.state = state;
                primary.last_io_ms = now;
                if entering_transfer {
                    self.cluster_offset_changed();
                }
                true
            }
            None => false,
        }
    }

    /// A full sync's transfer: `size` bytes expected (-1: diskless, size unknown), `read` so far.
    pub fn link_transfer(&mut self, generation: u64, size: i64, read: u64) {
        let now = self.server.clock.now_ms();
        if let Some(primary) = self.server.repl.link(generation) {
            primary.transfer_size = size;
            primary.transfer_read = read;
            primary.last_io_ms = now;
            primary.last_data_ms = now;
        }
    }

    /// A partial resync (`+CONTINUE [id]`): the stream goes on from our offset. A new ID (the
    /// primary was promoted since) becomes ours, the old one kept as the previous ID; our own
    /// replicas reconnect to learn it, as in Redis.
    pub fn link_continue(
        &mut self,
        generation: u64,
        new_replid: Option<String>,
        peer: Peer,
    ) -> Option<ClientId> {
        if !self.link_current(generation) {
            return None;
        }
        if let Some(id) = new_replid.filter(|id| *id != self.server.repl.replid) {
            let repl = &mut self.server.repl;
            repl.replid2 = std::mem::replace(&mut repl.replid, id);
            repl.second_offset = repl.offset as i64 + 1;
            self.disconnect_replicas();
        }
        if self.server.repl.backlog.is_none() {
            let size = self.server.config.repl_backlog_size.max(1) as usize;
            let next = self.server.repl.offset + 1;
            self.server.repl.backlog = Some(Backlog::new(size, next));
            self.ks.stream.add_consumer();
        }
        self.server
            .log
            .notice("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
        Some(self.attach_primary_client(generation, peer))
    }

    /// Creates the client that applies the primary's stream and marks the link up.
    pub(super) fn attach_primary_client(&mut self, generation: u64, peer: Peer) -> ClientId {
        let id = self.server.next_client_id;
        self.server.next_client_id += 1;
        let now = self.server.clock.now_ms();
        let handle = Arc::new(ClientHandle::new(id));
        handle.set_authenticated(true);
        let mut client = ClientState::new(handle, peer, -1, now, true);
        client.master = true;
        client.user = crate::model::acl_users::NO_USER;
        client.db = self.server.repl.stream_db.min(self.ks.dbs.len() - 1);
        self.server.repl.forget_unapplied();
        self.clients.insert(Box::new(client));
        if let Some(primary) = self.server.repl.link(generation) {
            primary.client = Some(id);
            primary.state = LinkState::Connected;
            primary.last_io_ms = now;
            primary.last_data_ms = now;
            primary.down_since_ms = None;
        }
        self.cluster_offset_changed();
        // The stream's first command names its database: nothing is assumed selected.
        id
    }

    /// Runs one command of the primary's stream, `raw` being its bytes as received. Its reply
    /// is dropped; the offset moves by its bytes, which go on to our replicas.
    pub fn link_apply(&mut self, id: ClientId, args: Vec<Bytes>, raw: &[u8]) -> Applied {
        if self.clients.get(id).is_none_or(|c| c.handle.is_killed()) {
            return Applied::ClientGone;
        }
        let now = self.server.clock.now_ms();
        if let Some(primary) = self.server.repl.primary.as_mut() {
            primary.last_io_ms = now;
            primary.last_data_ms = now;
        }
        // REPLCONF GETACK asks for the offset before itself (Redis answers it before the
        // command's own bytes count).
        let getack = args.len() == 3
            && args[0].eq_ignore_ascii_case(b"replconf")
            && args[1].eq_ignore_ascii_case(b"getack");
        let applied = if getack {
            Applied::AckAsked(self.server.repl.offset)
        } else {
            Applied::Done
        };
        if !getack {
            let mut scratch = BytesMut::new();
            self.ks.expiry_rule = ExpiryRule::Keep;
            let name = crate::kernel::gates::resolve(self.registry, &args)
                .map_or("<unknown>", |c| c.full_name.as_str());
            let outcome = self.execute(id, args, &mut scratch);
            if scratch.first() == Some(&b'-') {
                report_error_to_primary(&mut self.server, name, &scratch);
            }
            self.restore_expiry_rule();
            if outcome == super::Outcome::Blocked {
                // CLIENT PAUSE postponed it: the offset moves, and its bytes go on, when it
                // runs (Redis's paused master client has read them, not applied them).
                self.server.repl.held_command = raw.to_vec();
                return applied;
            }
        }
        self.stream_applied(id, raw);
        applied
    }

    /// A command of the stream that CLIENT PAUSE postponed ran now (`release`): its bytes
    /// count, as `link_apply` counts those that run at once.
    pub(super) fn held_stream_command_ran(&mut self, id: ClientId) {
        let raw = std::mem::take(&mut self.server.repl.held_command);
        if !raw.is_empty() {
            self.stream_applied(id, &raw);
        }
    }

    /// A replica's keys expire only by the primary's DELs, unless the stream itself made this
    /// server a primary (a REPLICAOF NO ONE in it).
    pub(super) fn restore_expiry_rule(&mut self) {
        self.ks.expiry_rule = if self.server.repl.primary.is_some() {
            ExpiryRule::Hide
        } else {
            ExpiryRule::Delete
        };
    }

    /// The stream's command of `raw` bytes was applied: the offset moves by them and they go
    /// on to our replicas (a transaction's only with its EXEC).
    fn stream_applied(&mut self, id: ClientId, raw: &[u8]) {
        let had_no_data = self.server.repl.offset == 0;
        // Where the stream stands, kept current for a file saved while the link is up (Redis's
        // `rdbPopulateSaveInfo` reads the primary client's database): a restarted replica
        // resumes there, and the primary sends no SELECT for a database it already chose.
        let mut in_transaction = false;
        if let Some(client) = self.clients.get(id) {
            self.server.repl.stream_db = client.db;
            in_transaction = client.multi.is_some();
        }
        let server = &mut self.server;
        if in_transaction {
            server.repl.open_transaction.extend_from_slice(raw);
            return;
        }
        if server.repl.open_transaction.is_empty() {
            crate::model::replication::relay(
                &mut server.repl,
                raw,
                &mut self.clients,
                &mut server.pending_writes,
            );
        } else {
            let mut whole = std::mem::take(&mut server.repl.open_transaction);
            whole.extend_from_slice(raw);
            crate::model::replication::relay(
                &mut server.repl,
                &whole,
                &mut self.clients,
                &mut server.pending_writes,
            );
        }
        // The first data of a cluster replica makes it usable (listed by CLUSTER SLOTS).
        if had_no_data && self.server.repl.offset != 0 {
            self.cluster_offset_changed();
        }
    }

    /// The offset to acknowledge (REPLCONF ACK).
    pub fn link_offset(&self) -> u64 {
        self.server.repl.offset
    }

    /// Notes that the primary was heard from (a keep-alive newline, part of a transfer).
    pub fn link_heard(&mut self) {
        let now = self.server.clock.now_ms();
        let Some(primary) = self.server.repl.primary.as_mut() else {
            return;
        };
        // A primary whose client was killed (CLIENT KILL) is not heard any more: Redis closes
        // it before it reads again, and a replica's data age counts from before.
        let killed = primary
            .client
            .and_then(|id| self.clients.get(id))
            .is_some_and(|c| c.handle.is_killed());
        if !killed {
            primary.last_io_ms = now;
            primary.last_data_ms = now;
        }
    }

    /// The link of `generation` ended: its client goes, the link waits to reconnect. The
    /// history (ID, offset, backlog) stays, for a PSYNC to continue from.
    pub fn link_lost(&mut self, generation: u64, client: Option<ClientId>) {
        if let Some(id) = client {
            self.disconnect(id);
        }
        let now = self.server.clock.now_ms();
        if let Some(primary) = self.server.repl.link(generation) {
            if primary.state == LinkState::Connected {
                self.server.log.notice("Connection with master lost.");
                primary.down_since_ms = Some(now);
            }
            primary.state = LinkState::Connect;
            primary.client = None;
        }
    }

    /// Closes the connections of this server's replicas (Redis's `disconnectSlaves`).
    pub(super) fn disconnect_replicas(&mut self) {
        for replica in std::mem::take(&mut self.server.repl.replicas) {
            if let Some(client) = self.clients.get(replica.id) {
                client.handle.kill();
            }
            self.disconnect(replica.id);
        }
    }
}

/// Redis's `afterErrorReply` line for an error a replication link carries (`from` the side
/// that answers, `to` the side that gets it).
pub(super) fn log_error_to_peer(
    server: &crate::model::state::ServerState,
    (from, to): (&str, &str),
    name: &str,
    reply: &[u8],
) {
    // As Redis's addReplyError passes it on: a plain `ERR` text without its code, an error
    // with a code of its own whole, dash included.
    let line = reply.split(|&b| b == b'\r').next().unwrap_or(reply);
    let text = line.strip_prefix(b"-ERR ").unwrap_or(line);
    let text = &text[..text.len().min(4096)];
    server.log.warning(&format!(
        "== CRITICAL == This {from} is sending an error to its {to}: '{}' after processing the command '{name}'",
        String::from_utf8_lossy(text)
    ));
}

/// A command of the primary's stream failed here: the data may now differ from the primary's.
/// Redis logs it (and the stream's latest bytes) as its `afterErrorReply` does for a master
/// client, and counts it in INFO's `unexpected_error_replies`; the reply itself is dropped.
fn report_error_to_primary(
    server: &mut crate::model::state::ServerState,
    name: &str,
    reply: &[u8],
) {
    log_error_to_peer(server, ("replica", "master"), name, reply);
    if let Some(backlog) = server.repl.backlog.as_ref().filter(|b| !b.is_empty()) {
        let shown = backlog.len().min(256);
        let from = backlog.first_offset() + (backlog.len() - shown) as u64;
        let mut dump = Vec::new();
        crate::base::cstr::push_repr(&mut dump, &backlog.since(from).unwrap_or_default());
        server.log.warning(&format!(
            "Latest backlog is: '{}'",
            String::from_utf8_lossy(&dump)
        ));
    }
    server.stats.unexpected_error_replies += 1;
}
