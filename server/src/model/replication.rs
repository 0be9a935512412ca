//! Replication, the primary's side: the replication ID and offset, the backlog a replica
//! continues from, and the replicas attached — what Redis keeps in `server.master_replid`,
//! `master_repl_offset`, `repl_backlog` and `server.slaves`.
//!
//! It consumes the write stream ([`crate::model::write_stream`]): at the end of each turn of the event
//! loop (the engine's "before sleep") the bytes the turn's commands propagated are appended to
//! the backlog, the offset moves by their length, and each attached replica's task is woken to
//! read them from there: the backlog is the replication buffer all replicas share
//! ([`crate::model::repl_buffer`], Redis 7.0's), each replica a reader at its offset. SYNC and
//! PSYNC (`commands/replication.rs`) attach a replica: a full resynchronisation sends an RDB
//! image of the dataset at the current offset and then everything after it; a PSYNC whose ID
//! and offset the backlog still covers continues from there instead.
//!
//! The backlog is created by the first replica, starting at the next byte (Redis's
//! `createReplicationBacklog`), and keeps the stream on from then on, replicas or not, so that a
//! replica that reconnects can continue. It keeps at least `repl-backlog-size` bytes, and more
//! while a replica still needs them; the oldest blocks go first.
//!
//! As a replica (REPLICAOF host port), the same ID, offset and backlog describe the primary's
//! stream: after a full sync they are the primary's, and every command applied from the link
//! moves the offset by its bytes, which are also [`relay`]ed — unchanged — to this server's own
//! replicas (a chain of replicas shares one history, so that any of them can continue from
//! any other after a failover). [`Primary`] holds the link's state; the link itself (socket,
//! handshake, transfer) is the I/O layer's `primary_link`, the applying of the stream the
//! executor's. WAIT's bookkeeping is here too: the clients waiting for acknowledgements and
//! whether the turn's end must ask the replicas for them (`REPLCONF GETACK`).
//!
//! So is a coordinated failover's ([`Failover`], Redis's `failover_state` and its target): the
//! FAILOVER command starts it, the engine's tick moves it on, the link's PSYNC ends it.

use std::sync::Arc;

use crate::model::client::{ClientId, Clients};
use crate::model::repl_buffer::{ReplBuffer, SharedReplBuffer};
use crate::model::write_stream::WriteStream;

/// The request a primary adds to its stream when WAIT needs fresh acknowledgements.
pub const GETACK: &[u8] = b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";

/// Hands what the write stream holds to the backlog and to every replica's pending output (the
/// engine hands pending output to the connections at the turn's end). The engine calls it once a
/// turn; SYNC and REPLICAOF call it first, so that writes made before them go where they belong.
/// A replica's backlog is for its primary's stream, not its own writes: then the bytes are
/// dropped (Redis's `replicationFeedSlaves` returns at once on a replica).
pub fn drain(
    repl: &mut Replication,
    stream: &mut WriteStream,
    clients: &mut Clients,
    pending_writes: &mut Vec<ClientId>,
) {
    if !repl.is_on() {
        return;
    }
    if !stream.is_empty() {
        let bytes = stream.take();
        if repl.primary.is_none() {
            relay(repl, &bytes, clients, pending_writes);
        }
    }
    // WAIT asks for acknowledgements once a turn, after the writes it waits for (Redis's
    // `beforeSleep`): the request is part of the stream, and of the offset.
    if std::mem::take(&mut repl.get_ack) && repl.primary.is_none() && !repl.replicas.is_empty() {
        relay(repl, GETACK, clients, pending_writes);
    }
}

/// Appends stream bytes to the backlog, which every attached replica reads from: each is
/// woken (and its output-buffer limits checked) at the turn's end. The primary's own writes
/// (from [`drain`]) or, on a replica, its primary's stream as applied.
pub fn relay(
    repl: &mut Replication,
    bytes: &[u8],
    _clients: &mut Clients,
    pending_writes: &mut Vec<ClientId>,
) {
    repl.append(bytes);
    for replica in &repl.replicas {
        if replica.awaiting.is_none() {
            pending_writes.push(replica.id);
        }
    }
}

/// A full sync's image going out at the pace `rdb-key-save-delay` sets (Redis's saving child
/// sleeps that long after each key it writes, and its replicas receive the image that
/// slowly): the delay per key is spread over the image's bytes. The replica reads the stream
/// produced meanwhile from the backlog once the image is out (its reader keeps it there). Tests
/// use it to hold a replica in its transfer.
#[derive(Debug, Clone)]
pub struct PacedImage {
    pub bytes: Vec<u8>,
    pub sent: usize,
    pub started: std::time::Instant,
    /// Real time each byte costs, in µs.
    pub us_per_byte: f64,
}

/// Hands each paced image's due bytes to its replica; a finished image is delivered at once
/// and lets the replica read the stream that waited behind it.
pub fn release_paced_images(
    repl: &mut Replication,
    clients: &mut Clients,
    pending_writes: &mut Vec<ClientId>,
) {
    for replica in &mut repl.replicas {
        let Some(image) = &mut replica.image else {
            continue;
        };
        let Some(client) = clients.get_mut(replica.id) else {
            continue;
        };
        let elapsed_us = image.started.elapsed().as_micros() as f64;
        let due = ((elapsed_us / image.us_per_byte) as usize).min(image.bytes.len());
        if due > image.sent {
            client
                .pending
                .extend_from_slice(&image.bytes[image.sent..due]);
            image.sent = due;
            pending_writes.push(replica.id);
        }
        if image.sent == image.bytes.len() {
            replica.image = None;
            if let Some(backlog) = &repl.backlog {
                start_reading(backlog, client);
            }
        }
    }
}

/// A replica whose image has gone out reads the backlog from now on: what is still pending for
/// it is delivered first, so that its task takes the image before the stream.
pub fn start_reading(backlog: &Backlog, client: &mut crate::model::client::ClientState) {
    client.handle.deliver_from(&mut client.pending);
    backlog.shared.lock().activate(client.id);
}

/// The backlog: the replication buffer ([`crate::model::repl_buffer`]) the replicas read
/// from too. The executor's handle on it; each replica's task holds another.
#[derive(Debug, Clone)]
pub struct Backlog {
    pub shared: SharedReplBuffer,
}

impl Backlog {
    /// An empty backlog whose first byte will be the stream's byte at `next_offset`.
    pub fn new(size: usize, next_offset: u64) -> Backlog {
        Backlog {
            shared: ReplBuffer::shared(size, next_offset),
        }
    }

    /// Bytes kept (`repl_backlog_histlen`).
    pub fn len(&self) -> usize {
        self.shared.lock().histlen()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `repl_backlog_size`.
    pub fn size(&self) -> usize {
        self.shared.lock().size()
    }

    /// The offset of the oldest byte kept (`repl_backlog_first_byte_offset`).
    pub fn first_offset(&self) -> u64 {
        self.shared.lock().first_offset()
    }

    /// Bytes allocated for the stream, shared by the backlog and the replicas
    /// (`mem_total_replication_buffers`).
    pub fn allocated(&self) -> usize {
        self.shared.lock().allocated()
    }

    pub fn append(&self, bytes: &[u8]) {
        self.shared.lock().append(bytes);
    }

    /// See [`ReplBuffer::not_counted_for_eviction`].
    pub fn not_counted_for_eviction(&self) -> u64 {
        self.shared.lock().not_counted_for_eviction() as u64
    }

    /// A copy of the bytes from stream offset `from` to the end, if all kept.
    pub fn since(&self, from: u64) -> Option<Vec<u8>> {
        self.shared.lock().since(from)
    }

    pub fn covers(&self, from: u64) -> bool {
        self.shared.lock().covers(from)
    }

    /// CONFIG SET repl-backlog-size.
    pub fn resize(&self, size: usize) {
        self.shared.lock().resize(size);
    }
}

/// Where a replica's link to its primary stands (Redis's `repl_state`, as ROLE names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Waiting to (re)connect.
    Connect,
    /// Connecting the socket.
    Connecting,
    /// PING, AUTH, REPLCONF and PSYNC exchanged.
    Handshake,
    /// Receiving the RDB image of a full sync.
    Transfer,
    /// Following the stream.
    Connected,
}

impl LinkState {
    /// ROLE's name for it.
    pub fn role_name(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Transfer => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// The primary this server follows, and its link.
#[derive(Debug, Clone)]
pub struct Primary {
    pub host: String,
    pub port: u16,
    pub state: LinkState,
    /// The client that applies the primary's stream while the link is up (flag `M`).
    pub client: Option<ClientId>,
    /// When the primary last sent anything (ms), for `master_last_io_seconds_ago`.
    pub last_io_ms: i64,
    /// When the primary last sent data (stream, image, keep-alive): a cluster replica's data
    /// age counts from it (handshake attempts and reconnections do not refresh it).
    pub last_data_ms: i64,
    /// When the link went down (ms); `None` while it has never been up.
    pub down_since_ms: Option<i64>,
    /// Changes with every REPLICAOF: a link made for an earlier primary gives up.
    pub generation: u64,
    /// A full sync's transfer: its size (-1 for the diskless `$EOF:` framing) and bytes read.
    pub transfer_size: i64,
    pub transfer_read: u64,
    pub transfer_started_ms: i64,
}

impl Primary {
    pub fn new(host: String, port: u16, generation: u64) -> Primary {
        Primary {
            host,
            port,
            state: LinkState::Connect,
            client: None,
            last_io_ms: 0,
            last_data_ms: 0,
            down_since_ms: None,
            generation,
            transfer_size: 0,
            transfer_read: 0,
            transfer_started_ms: 0,
        }
    }

    pub fn is_up(&self) -> bool {
        self.state == LinkState::Connected
    }
}

/// Where a coordinated failover stands (FAILOVER; Redis's `failover_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailoverState {
    /// None under way.
    #[default]
    None,
    /// Writes are paused; waiting for a replica (the target, or any) to acknowledge our offset.
    WaitForSync,
    /// This server follows the target and asks it, with `PSYNC … FAILOVER`, to take over.
    InProgress,
}

impl FailoverState {
    /// INFO replication's `master_failover_state`.
    pub fn name(self) -> &'static str {
        match self {
            FailoverState::None => "no-failover",
            FailoverState::WaitForSync => "waiting-for-sync",
            FailoverState::InProgress => "failover-in-progress",
        }
    }
}

/// A coordinated failover (FAILOVER [TO host port [FORCE]] [TIMEOUT ms]).
#[derive(Debug, Clone, Default)]
pub struct Failover {
    pub state: FailoverState,
    /// When waiting for the sync gives up (server clock, ms); `None`: it waits until aborted.
    pub end_ms: Option<i64>,
    /// FORCE: at `end_ms`, fail over to the target even though it has not caught up.
    pub force: bool,
    /// The replica to hand over to: named by TO, or the first found caught up.
    pub target: Option<(String, i64)>,
}

impl Failover {
    pub fn is_on(&self) -> bool {
        self.state != FailoverState::None
    }

    /// "host:port" of the target, as Redis's log lines print it.
    pub fn target_name(&self) -> String {
        match &self.target {
            Some((host, port)) => format!("{host}:{port}"),
            None => "(null):0".to_string(),
        }
    }
}

/// How Redis's logs name a replica at `ip` listening on `port` (0: not announced).
pub fn replica_name(ip: &str, port: u16) -> String {
    match (port, ip.contains(':')) {
        (0, _) => format!("{ip}:<unknown-replica-port>"),
        (port, true) => format!("[{ip}]:{port}"),
        (port, false) => format!("{ip}:{port}"),
    }
}

/// A replica attached to this server.
#[derive(Debug, Clone)]
pub struct Replica {
    pub id: ClientId,
    /// The port it listens on (REPLCONF listening-port), for INFO and ROLE.
    pub listening_port: u16,
    /// The address it announced (REPLCONF ip-address), or its connection's.
    pub ip: String,
    /// The offset it last acknowledged (REPLCONF ACK) and when, in ms.
    pub ack_offset: u64,
    pub ack_time_ms: i64,
    /// Attached by SYNC (before PSYNC existed): it never acknowledges, so no timeout applies.
    pub pre_psync: bool,
    /// Its full sync's image, while it goes out paced (`rdb-key-save-delay`).
    pub image: Option<PacedImage>,
    /// Its full sync's image comes through the rdb pipe ([`Replication::transfer`]).
    pub piped: bool,
    /// Its full sync's image is the RDB file a BGSAVE is writing (Redis's `WAIT_BGSAVE_END`
    /// with a disk target, [`Replication::disk_sync_offset`]): sent once the save ends.
    pub bgsave_wait: bool,
    /// Its full sync has not started yet (see [`AwaitingSync`]).
    pub awaiting: Option<AwaitingSync>,
}

impl Replica {
    /// Receiving the stream: its full sync has started (Redis counts only such replicas as
    /// good for `min-replicas-*`, and lists only them in ROLE).
    pub fn is_synced(&self) -> bool {
        self.awaiting.is_none()
    }

    /// How Redis's logs name it (`replicationGetSlaveName`): the address and port it
    /// announced.
    pub fn name(&self) -> String {
        replica_name(&self.ip, self.listening_port)
    }

    /// Its full sync's image is still going out (Redis's `WAIT_BGSAVE_END`): not online yet.
    pub fn receiving_image(&self) -> bool {
        self.image.is_some() || self.piped || self.bgsave_wait
    }
}

/// A replica whose full sync waits to start (Redis's `SLAVE_STATE_WAIT_BGSAVE_START`): a
/// diskless sync waits `repl-diskless-sync-delay` seconds for more replicas to share it. It
/// gets no stream meanwhile, only a newline a second to keep its link from timing out; its
/// sync starts from the offset of the moment the image is taken.
#[derive(Debug, Clone, Copy)]
pub struct AwaitingSync {
    /// When it asked, in ms.
    pub since_ms: i64,
    /// It asked with PSYNC, so its sync begins with `+FULLRESYNC` (not with SYNC).
    pub psync: bool,
}

/// The primary's replication state (see the module documentation).
#[derive(Debug)]
pub struct Replication {
    pub replid: String,
    /// The previous ID and the offset up to which it is valid (after a promotion; none yet).
    pub replid2: String,
    pub second_offset: i64,
    /// Bytes of stream produced so far (`master_repl_offset`).
    pub offset: u64,
    pub backlog: Option<Backlog>,
    pub replicas: Vec<Replica>,
    /// When the tick last pinged the replicas (ms).
    pub last_ping_ms: i64,
    /// When the tick last sent the replicas waiting for their sync a newline (ms).
    pub last_keepalive_ms: i64,
    /// INFO stats' `sync_full`, `sync_partial_ok`, `sync_partial_err`.
    pub sync_full: u64,
    pub sync_partial_ok: u64,
    pub sync_partial_err: u64,
    /// The primary this server follows (REPLICAOF host port), if any, and its link.
    pub primary: Option<Primary>,
    /// Counts REPLICAOF changes (see [`Primary::generation`]).
    pub generation: u64,
    /// Wakes the link task when the primary changes.
    pub link_wake: Arc<tokio::sync::Notify>,
    /// Clients blocked in WAIT, and whether the turn's end asks the replicas for an ACK.
    pub waiting: Vec<ClientId>,
    pub get_ack: bool,
    /// Since when (ms) the backlog has had no replica, for `repl-backlog-ttl`.
    pub alone_since_ms: Option<i64>,
    /// As a replica: the database the primary's stream has selected where this server's
    /// offset stands. A continued link resumes there (Redis keeps it in its cached master
    /// client): the primary sends no SELECT for a database it selected before the break.
    pub stream_db: usize,
    /// As a replica: the bytes of a transaction from the primary not yet complete (MULTI and
    /// what is queued). The offset moves, and they go on to our replicas, only with its EXEC,
    /// as Redis's replica updates `reploff` only outside MULTI: a link broken mid-transaction
    /// resumes before its MULTI.
    pub open_transaction: Vec<u8>,
    /// As a replica: the bytes of the primary's command that CLIENT PAUSE postponed. The
    /// offset moves by them when it runs; the stream waits behind it meanwhile.
    pub held_command: Vec<u8>,
    /// As a replica: bytes the link task has received and not yet handed over (for
    /// `slave_read_repl_offset`).
    pub unapplied_input: u64,
    /// A coordinated failover under way, if any.
    pub failover: Failover,
    /// A diskless full sync going out through a child process, if any (the binary's), and
    /// the wake-up of the I/O task that reads its pipe.
    pub transfer: Option<crate::model::rdb_transfer::RdbTransfer>,
    pub transfer_wake: Arc<tokio::sync::Notify>,
    /// A BGSAVE started for replicas' full syncs (a disk target, in the binary) is running:
    /// the stream offset its file is taken at (Redis's `psync_initial_offset`), which a replica
    /// arriving meanwhile may share.
    pub disk_sync_offset: Option<u64>,
    /// A replica with no history to offer its primary: started by `replicaof` with none
    /// loaded, and not synced since. Its PSYNC says `? -1`, as Redis's does without a cached
    /// master, rather than naming its own fresh ID (which the primary would count in
    /// `sync_partial_err`).
    pub no_history: bool,
}

impl Replication {
    /// As a replica, where the stream read so far ends (`slave_read_repl_offset`): the applied
    /// offset and what is received but not applied yet (an open transaction, a command CLIENT
    /// PAUSE holds, the link task's undecoded input).
    /// Forgets what of the primary's stream was received and not applied (its client went, or
    /// a new one starts): an open transaction, a held command, undecoded input.
    pub fn forget_unapplied(&mut self) {
        self.open_transaction.clear();
        self.held_command.clear();
        self.unapplied_input = 0;
    }

    pub fn read_offset(&self) -> u64 {
        self.offset
            + (self.open_transaction.len() + self.held_command.len()) as u64
            + self.unapplied_input
    }

    pub fn new(replid: String) -> Replication {
        Replication {
            replid,
            replid2: "0".repeat(40),
            second_offset: -1,
            offset: 0,
            backlog: None,
            replicas: Vec::new(),
            last_ping_ms: 0,
            last_keepalive_ms: 0,
            sync_full: 0,
            sync_partial_ok: 0,
            sync_partial_err: 0,
            primary: None,
            generation: 0,
            link_wake: Arc::new(tokio::sync::Notify::new()),
            waiting: Vec::new(),
            get_ack: false,
            alone_since_ms: None,
            stream_db: 0,
            open_transaction: Vec::new(),
            held_command: Vec::new(),
            unapplied_input: 0,
            failover: Failover::default(),
            transfer: None,
            transfer_wake: Arc::new(tokio::sync::Notify::new()),
            disk_sync_offset: None,
            no_history: false,
        }
    }

    /// Follows `host:port` from now on: a new link generation, and the link task is woken.
    pub fn follow(&mut self, host: String, port: u16) {
        self.generation += 1;
        self.primary = Some(Primary::new(host, port, self.generation));
        self.link_wake.notify_one();
    }

    /// The link of generation `generation`, if it is still the wanted one.
    pub fn link(&mut self, generation: u64) -> Option<&mut Primary> {
        self.primary.as_mut().filter(|p| p.generation == generation)
    }

    /// True while this is a replica whose link is not up (Redis's `repl_state !=
    /// REPL_STATE_CONNECTED` with a `masterhost`).
    pub fn link_down(&self) -> bool {
        self.primary.as_ref().is_some_and(|p| !p.is_up())
    }

    /// Replicas whose acknowledged offset has reached `offset`.
    pub fn acknowledged(&self, offset: u64) -> usize {
        self.replicas
            .iter()
            .filter(|r| r.ack_offset >= offset)
            .count()
    }

    /// Replicas that acknowledged within `max_lag_s` seconds (Redis's good replicas).
    pub fn good_replicas(&self, now_ms: i64, max_lag_s: u32) -> usize {
        self.replicas
            .iter()
            .filter(|r| r.is_synced() && (now_ms - r.ack_time_ms) / 1000 <= max_lag_s as i64)
            .count()
    }

    /// The replication memory `maxmemory` does not count: the replicas' share of the
    /// replication buffer, and the slices of it their tasks copied and have not written yet
    /// (Redis writes replicas from the blocks themselves, so that copy is ours only).
    pub fn not_counted_for_eviction(&self, clients: &Clients) -> u64 {
        let Some(backlog) = &self.backlog else {
            return 0;
        };
        let copied: usize = self
            .replicas
            .iter()
            .filter_map(|r| clients.get(r.id))
            .map(|c| c.handle.unsent() + c.handle.held())
            .sum();
        backlog.not_counted_for_eviction() + copied as u64
    }

    /// True once anything consumes the stream here (a backlog exists).
    #[inline]
    pub fn is_on(&self) -> bool {
        self.backlog.is_some()
    }

    /// Appends stream bytes: the offset moves, the backlog (if any) keeps them.
    pub fn append(&mut self, bytes: &[u8]) {
        if let Some(backlog) = &self.backlog {
            backlog.append(bytes);
        }
        self.offset += bytes.len() as u64;
    }

    /// Becomes a primary again (REPLICAOF NO ONE): a new replication ID, the old one kept as
    /// the previous ID up to the current offset, as Redis's `shiftReplicationId`, so that
    /// replicas of the old primary may continue from here.
    pub fn promote(&mut self, new_replid: String) {
        self.primary = None;
        self.generation += 1;
        self.link_wake.notify_one();
        self.replid2 = std::mem::replace(&mut self.replid, new_replid);
        self.second_offset = self.offset as i64 + 1;
        self.no_history = false;
    }

    pub fn is_replica(&self, id: ClientId) -> bool {
        self.replicas.iter().any(|r| r.id == id)
    }

    /// Forgets a replica (its connection closed): the stream it kept in the backlog may go.
    pub fn remove(&mut self, id: ClientId) {
        self.replicas.retain(|r| r.id != id);
        if let Some(transfer) = &mut self.transfer {
            transfer.forget(id);
        }
        if let Some(backlog) = &self.backlog {
            backlog.shared.lock().detach(id);
        }
    }

    /// The replica that announced `host` (or connects from it) and listens on `port`
    /// (Redis's `findReplica`: the host compared without case).
    pub fn find_replica(&self, host: &str, port: i64) -> Option<&Replica> {
        self.replicas
            .iter()
            .find(|r| r.ip.eq_ignore_ascii_case(host) && i64::from(r.listening_port) == port)
    }

    pub fn replica_mut(&mut self, id: ClientId) -> Option<&mut Replica> {
        self.replicas.iter_mut().find(|r| r.id == id)
    }

    /// The replicas whose full sync should start now, with whether each asked with PSYNC
    /// (Redis's `shouldStartChildReplication`): all those waiting, once one has waited `delay_s`
    /// seconds or `max_replicas` (if not 0) are waiting; at once when `diskless` is off.
    pub fn syncs_due(
        &self,
        now_ms: i64,
        diskless: bool,
        delay_s: u32,
        max_replicas: u32,
    ) -> Vec<(ClientId, bool)> {
        let waiting: Vec<(ClientId, AwaitingSync)> = self
            .replicas
            .iter()
            .filter_map(|r| r.awaiting.map(|a| (r.id, a)))
            .collect();
        let longest = waiting.iter().map(|(_, a)| now_ms - a.since_ms).max();
        let Some(longest) = longest else {
            return Vec::new();
        };
        let enough = max_replicas > 0 && waiting.len() >= max_replicas as usize;
        if diskless && !enough && longest < i64::from(delay_s) * 1000 {
            return Vec::new();
        }
        waiting.into_iter().map(|(id, a)| (id, a.psync)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// With no replica reading, the backlog holds at least the last `size` bytes of
        /// everything appended (all of it while that is less), and at most one block more, and
        /// serves any offset inside them, as a plain vector of the whole stream would.
        #[test]
        fn backlog_keeps_the_newest_bytes(
            size in 1usize..70_000,
            start in 0u64..1000,
            chunks in proptest::collection::vec(1usize..20_000, 0..30),
            resize_to in proptest::option::of(1usize..70_000),
        ) {
            let backlog = Backlog::new(size, start);
            let mut all: Vec<u8> = Vec::new();
            // A backlog that grows keeps what it had, no more: the least size in force bounds
            // what it must hold.
            let (mut size, mut least) = (size, size);
            for (i, len) in chunks.iter().enumerate() {
                let chunk: Vec<u8> = (0..*len).map(|b| (b * 7 + i) as u8).collect();
                backlog.append(&chunk);
                all.extend_from_slice(&chunk);
                if i == chunks.len() / 2 {
                    if let Some(n) = resize_to {
                        backlog.resize(n);
                        size = n;
                        least = least.min(n);
                    }
                }
            }
            let kept = backlog.len();
            prop_assert!(kept >= least.min(all.len()));
            let block = (size / 16).max(crate::model::repl_buffer::BLOCK_MIN);
            prop_assert!(kept <= size + block, "kept {} of size {}", kept, size);
            let end = start + all.len() as u64;
            let first = backlog.first_offset();
            prop_assert_eq!(first, end - kept as u64);
            for from in (first..=end).step_by(997) {
                let want = &all[(from - start) as usize..];
                let got = backlog.since(from);
                prop_assert_eq!(got.as_deref(), Some(want));
            }
            if first > 0 {
                prop_assert_eq!(backlog.since(first - 1), None);
            }
            prop_assert_eq!(backlog.since(end + 1), None);
        }
    }
}
