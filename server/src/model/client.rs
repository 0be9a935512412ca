//! Clients: what the executor knows about each connection ([`ClientState`], owned by the
//! executor) and the small shared part the connection's I/O task uses ([`ClientHandle`]).
//!
//! Replies to a command go straight into the buffer of the task that submitted it. Everything
//! else a client receives out of turn — the reply to a blocked command when it is released,
//! MONITOR lines, and later pub/sub messages — is appended to the client's `pending` buffer and,
//! at the end of the current command, handed to its [`ClientHandle`] outbox and the task woken.
//! The handle also carries the two signals the executor sends a connection: "you were killed"
//! and "you are blocked / released". [`Clients`] is the executor's table of them.
//!
//! The output-buffer limits ([`over_limit`]) are checked here, on what a client has not yet
//! taken off its socket, and [`unsubscribe_all`] drops a leaving client's subscriptions from
//! pub/sub's index.

use bytes::BytesMut;
use embedis_protocol::Version;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::base::compat::CompatVersion;
use crate::base::config::ObufLimit;
use crate::model::blocking::Blocked;
use crate::model::pubsub::{Kind, PubSub};
use crate::model::repl_buffer::SharedReplBuffer;
use futures_util::task::AtomicWaker;

pub use crate::model::client_id::ClientId;

/// Capacity an emptied output buffer keeps (Redis's `PROTO_REPLY_CHUNK_BYTES`): a burst —
/// invalidations or messages for a client, a big reply — is given back once handed on, as
/// Redis frees a reply's blocks once written. Kept, it stays counted in `used_memory`: ten
/// tracking clients each keeping a 64 KB burst made eviction evict for memory no key held.
pub const KEPT_OUTPUT_CAPACITY: usize = 16 * 1024;

/// The most of its stream a replica's task copies from the replication buffer at a time: a
/// reply buffer's worth, so that a replica that stops reading holds no more than any client
/// (Redis writes from the blocks themselves; `maxmemory` leaves only 32 KB for a stopped
/// replica in Redis's "replica buffer don't induce eviction" test).
const FEED_SLICE: usize = 16 * 1024;

/// Appends `from` to `to` and leaves `from` empty; when `to` is empty the buffers are swapped
/// instead, so that the bytes are not copied and `from` keeps a buffer to write into.
fn move_all(from: &mut BytesMut, to: &mut BytesMut) {
    if to.is_empty() {
        std::mem::swap(from, to);
    } else {
        to.extend_from_slice(from);
    }
    from.clear();
    if from.capacity() > KEPT_OUTPUT_CAPACITY {
        *from = BytesMut::new();
    }
}

/// The part of a client shared between the executor and the connection's I/O task.
pub struct ClientHandle {
    pub id: ClientId,
    outbox: Mutex<BytesMut>,
    notify: Wakeup,
    killed: AtomicBool,
    /// QUIT (or a kill of the running client) ran: close once what was delivered is written.
    closing: AtomicBool,
    blocked: AtomicBool,
    /// Mirrors `ClientState::authenticated` for I/O threads choosing the decoder's limits.
    authenticated: AtomicBool,
    /// Request batches fully executed (threaded I/O mode: the task waits for its batch).
    completed: AtomicU64,
    /// Out-of-turn bytes delivered and not yet written to the socket by the task: what the
    /// output-buffer limits (a subscriber that stops reading) are checked against.
    unsent: AtomicUsize,
    /// The task waits for input with nothing buffered, nothing half-decoded and nothing unwritten:
    /// while a script runs too long, the executor may read this client's socket itself (see
    /// [`crate::services::busy`]).
    idle: AtomicBool,
    /// The executor may talk to this client over its socket directly for a script debugging
    /// session (a plain socket the event loop's thread serves: see
    /// [`crate::services::script_host`]).
    debuggable: AtomicBool,
    /// Bytes the executor read from the socket while a script was busy and did not answer (a
    /// request not yet complete): the task takes them back before reading more.
    stolen: Mutex<BytesMut>,
    /// Out-of-turn output was handed over with its wake-up left for the end of the event loop's
    /// turn (see [`ClientHandle::deliver_from_later`]), which has not come yet.
    wake_queued: AtomicBool,
    /// Replies the task holds unwritten because the peer stopped reading, while it goes on
    /// reading and running the peer's requests (see `io/net.rs`): output the client uses
    /// memory for, as Redis's reply list. Stored only while a write is stuck.
    held: AtomicUsize,
    /// A replica's replication buffer (see [`crate::model::repl_buffer`]): its stream is
    /// taken from there, a slice at a time, after the outbox. `has_feed` spares every other
    /// client the lock.
    feed: Mutex<Option<SharedReplBuffer>>,
    has_feed: AtomicBool,
    /// The task's read buffer: its sizes for CLIENT LIST, and the tick's resize requests.
    pub query_buffer: crate::model::query_buffer::QueryBuffer,
    /// The task's reply buffer: its size and peak for CLIENT LIST, set by the tick.
    pub reply_buffer: crate::model::reply_buffer::ReplyBuffer,
}

impl ClientHandle {
    pub fn new(id: ClientId) -> Self {
        ClientHandle {
            id,
            outbox: Mutex::new(BytesMut::new()),
            notify: Wakeup::default(),
            killed: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            authenticated: AtomicBool::new(false),
            completed: AtomicU64::new(0),
            unsent: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            idle: AtomicBool::new(false),
            debuggable: AtomicBool::new(false),
            stolen: Mutex::new(BytesMut::new()),
            wake_queued: AtomicBool::new(false),
            feed: Mutex::new(None),
            has_feed: AtomicBool::new(false),
            query_buffer: Default::default(),
            reply_buffer: Default::default(),
        }
    }

    pub fn set_authenticated(&self, authenticated: bool) {
        self.authenticated.store(authenticated, Ordering::Release);
    }

    pub fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Acquire)
    }

    /// Marks one more request batch as fully executed and wakes the task.
    pub fn complete_batch(&self) {
        self.completed.fetch_add(1, Ordering::AcqRel);
        self.notify.notify_one();
    }

    pub fn completed_batches(&self) -> u64 {
        self.completed.load(Ordering::Acquire)
    }

    /// Appends out-of-turn output and wakes the task.
    pub fn deliver(&self, bytes: &[u8]) {
        self.unsent.fetch_add(bytes.len(), Ordering::AcqRel);
        self.outbox.lock().extend_from_slice(bytes);
        self.notify.notify_one();
    }

    /// Moves out-of-turn output from `pending` (left empty) to the outbox and wakes the task.
    /// An empty outbox trades buffers with `pending` instead of copying: the two buffers go
    /// back and forth between the executor and the task, and neither is allocated again.
    pub fn deliver_from(&self, pending: &mut BytesMut) {
        self.unsent.fetch_add(pending.len(), Ordering::AcqRel);
        move_all(pending, &mut self.outbox.lock());
        self.notify.notify_one();
    }

    /// As [`ClientHandle::deliver_from`], but leaves the wake-up to the caller, for the end of
    /// the event loop's turn: true if the caller must queue it (it is not queued already).
    pub fn deliver_from_later(&self, pending: &mut BytesMut) -> bool {
        self.unsent.fetch_add(pending.len(), Ordering::AcqRel);
        move_all(pending, &mut self.outbox.lock());
        !self.wake_queued.swap(true, Ordering::AcqRel)
    }

    /// The wake-up queued by [`ClientHandle::deliver_from_later`].
    pub fn wake_queued(&self) {
        self.wake_queued.store(false, Ordering::Release);
        self.notify.notify_one();
    }

    /// The task wrote `n` bytes it had taken from the outbox to the socket.
    pub fn wrote(&self, n: usize) {
        if n == 0 {
            return;
        }
        let _ = self
            .unsent
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                Some(u.saturating_sub(n))
            });
    }

    /// Bytes delivered and not yet written to the socket.
    pub fn unsent(&self) -> usize {
        self.unsent.load(Ordering::Acquire)
    }

    /// Takes everything delivered so far (and a replica's next slice of its stream).
    pub fn take_outbox(&self) -> BytesMut {
        let mut out = std::mem::take(&mut *self.outbox.lock());
        self.take_feed(&mut out);
        out
    }

    /// Appends everything delivered so far to `output` (see [`ClientHandle::deliver_from`]),
    /// and for a replica the next slice of its stream; returns how many bytes that was.
    pub fn take_outbox_into(&self, output: &mut BytesMut) -> usize {
        let n = {
            let mut outbox = self.outbox.lock();
            let n = outbox.len();
            move_all(&mut outbox, output);
            n
        };
        n + self.take_feed(output)
    }

    pub fn has_outbox(&self) -> bool {
        // Every delivery counts its bytes in `unsent` before it fills the outbox (and wakes the
        // task after): nothing unsent, nothing to take, without the lock (twice a request).
        (self.unsent.load(Ordering::Acquire) != 0 && !self.outbox.lock().is_empty())
            || (self.has_feed.load(Ordering::Acquire) && self.feed_waiting() != 0)
    }

    /// Makes this client a reader of `buffer` (a replica); `None` ends it.
    pub fn set_feed(&self, buffer: Option<SharedReplBuffer>) {
        self.has_feed.store(buffer.is_some(), Ordering::Release);
        *self.feed.lock() = buffer;
    }

    pub fn has_feed(&self) -> bool {
        self.has_feed.load(Ordering::Acquire)
    }

    /// Stream bytes the replica's task may take now.
    pub fn feed_waiting(&self) -> usize {
        self.feed
            .lock()
            .as_ref()
            .map_or(0, |b| b.lock().waiting(self.id))
    }

    /// The replication buffer a replica keeps (Redis's output-buffer figure for replicas).
    pub fn feed_referenced(&self) -> usize {
        if !self.has_feed() {
            return 0;
        }
        self.feed
            .lock()
            .as_ref()
            .map_or(0, |b| b.lock().referenced(self.id))
    }

    /// Copies the replica's next slice of stream into `output`, if it has room for one (the
    /// slice is bounded: a replica that reads slowly keeps its stream in the shared buffer,
    /// not in its connection's). Counted as unsent until written. If more is left, the task
    /// is woken again, to take it once this slice is written.
    fn take_feed(&self, output: &mut BytesMut) -> usize {
        if !self.has_feed() || output.len() >= FEED_SLICE {
            return 0;
        }
        let (n, more) = match self.feed.lock().as_ref() {
            Some(buffer) => {
                let mut buffer = buffer.lock();
                let n = buffer.take(self.id, output, FEED_SLICE - output.len());
                (n, buffer.waiting(self.id) != 0)
            }
            None => (0, false),
        };
        self.unsent.fetch_add(n, Ordering::AcqRel);
        if n > 0 && more {
            self.notify.notify_one();
        }
        n
    }

    /// The task is (or stops being) idle, in the sense of [`ClientHandle::is_idle`].
    pub fn set_idle(&self, idle: bool) {
        self.idle.store(idle, Ordering::Release);
    }

    /// Marks the connection as one a script debugging session may use directly.
    pub fn set_debuggable(&self, debuggable: bool) {
        self.debuggable.store(debuggable, Ordering::Relaxed);
    }

    pub fn is_debuggable(&self) -> bool {
        self.debuggable.load(Ordering::Relaxed)
    }

    /// True while the task waits for input with nothing buffered, half-decoded or unwritten.
    pub fn is_idle(&self) -> bool {
        self.idle.load(Ordering::Acquire)
    }

    /// Runs `f` on the bytes read for this client by the executor (see [`crate::services::busy`]).
    pub fn with_stolen<R>(&self, f: impl FnOnce(&mut BytesMut) -> R) -> R {
        f(&mut self.stolen.lock())
    }

    /// Takes back the bytes the executor read for this client, if any.
    pub fn take_stolen(&self) -> Option<BytesMut> {
        let mut stolen = self.stolen.lock();
        (!stolen.is_empty()).then(|| stolen.split())
    }

    /// Wakes the task (it has stolen input or outbox bytes to look at).
    pub fn wake(&self) {
        self.notify.notify_one();
    }

    /// Tells the task to close the connection after writing what was delivered before this
    /// call (QUIT's `+OK`), unlike [`ClientHandle::kill`], which drops unwritten output.
    pub fn close_after_output(&self) {
        self.closing.store(true, Ordering::Release);
        self.notify.notify_one();
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Tells the task to close the connection.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.notify.notify_one();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    pub fn set_blocked(&self, blocked: bool) {
        self.blocked.store(blocked, Ordering::Release);
        if !blocked {
            self.notify.notify_one();
        }
    }

    pub fn is_blocked(&self) -> bool {
        self.blocked.load(Ordering::Acquire)
    }

    /// The task holds `bytes` of replies unwritten (see the field).
    pub fn set_held(&self, bytes: usize) {
        self.held.store(bytes, Ordering::Relaxed);
    }

    /// Replies the task holds unwritten while its peer does not read.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// [`ClientHandle::notified`] as a poll, for a task waiting on several things at once.
    pub fn poll_notified(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.notify.poll_wait(cx)
    }

    /// Resolves when the executor has something for this connection. Only the connection's
    /// own task waits (one waiter at a time); a wake-up sent while it is not waiting is kept
    /// for its next wait.
    pub async fn notified(&self) {
        std::future::poll_fn(|cx| self.notify.poll_wait(cx)).await
    }
}

/// The connection task's wake-up: the meaning of tokio's `Notify::notify_one` (a wake-up sent
/// while the task is not waiting is kept as a permit for its next wait) for the single task
/// that waits on a client.
///
/// `Notify` links each waiting future into a list under a lock and unlinks it when the future
/// is dropped. A connection at -P 1 does both for every request (its idle `select!` waits on
/// the socket and on this; the request's arrival drops the wait), which callgrind put at about
/// 240 instructions a request. Here a wait is a flag and an [`AtomicWaker`], and dropping a
/// wait costs nothing: the waker stays registered, and a later wake-up at worst polls the task
/// once for nothing.
#[derive(Default)]
struct Wakeup {
    permit: AtomicBool,
    waker: AtomicWaker,
}

impl Wakeup {
    fn notify_one(&self) {
        self.permit.store(true, Ordering::Release);
        self.waker.wake();
    }

    fn poll_wait(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.take_permit() {
            return Poll::Ready(());
        }
        self.waker.register(cx.waker());
        // A wake-up between the check and the registration found no waker to wake.
        if self.take_permit() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    #[inline]
    fn take_permit(&self) -> bool {
        // A plain load first: the permit is usually absent, and a swap would take the cache
        // line for writing every time.
        self.permit.load(Ordering::Acquire) && self.permit.swap(false, Ordering::AcqRel)
    }
}

/// How a client reached us.
#[derive(Debug, Clone)]
pub enum Peer {
    Tcp { addr: SocketAddr, local: SocketAddr },
    Unix { path: String },
}

impl Peer {
    /// `addr=` of CLIENT LIST.
    pub fn addr(&self) -> String {
        match self {
            Peer::Tcp { addr, .. } => addr.to_string(),
            Peer::Unix { path } => format!("{path}:0"),
        }
    }

    /// `laddr=` of CLIENT LIST.
    pub fn local_addr(&self) -> String {
        match self {
            Peer::Tcp { local, .. } => local.to_string(),
            Peer::Unix { path } => format!("{path}:0"),
        }
    }

    /// Redis's `islocalClient`: a Unix-socket client, or a TCP peer at exactly 127.0.0.1 or ::1.
    /// The rest of 127.0.0.0/8 is not local to Redis (it compares the address's text), so
    /// protected mode refuses a client connecting from 127.0.0.2 as it refuses a remote one.
    /// An IPv4-mapped ::ffff:127.0.0.1 is 127.0.0.1 (Redis never sees one: its IPv6 sockets
    /// are IPv6-only).
    pub fn is_local(&self) -> bool {
        match self {
            Peer::Tcp { addr, .. } => {
                let ip = match addr.ip() {
                    std::net::IpAddr::V6(v6) => v6
                        .to_ipv4_mapped()
                        .map_or(std::net::IpAddr::V6(v6), std::net::IpAddr::V4),
                    v4 => v4,
                };
                ip == std::net::Ipv4Addr::LOCALHOST || ip == std::net::Ipv6Addr::LOCALHOST
            }
            Peer::Unix { .. } => true,
        }
    }

    pub fn is_unix(&self) -> bool {
        matches!(self, Peer::Unix { .. })
    }

    /// The peer's IP address (a replica's, for INFO and ROLE; `127.0.0.1` over a Unix socket,
    /// as Redis reports a local replica).
    pub fn ip_string(&self) -> String {
        match self {
            Peer::Tcp { addr, .. } => addr.ip().to_string(),
            Peer::Unix { .. } => "127.0.0.1".to_string(),
        }
    }
}

/// CLIENT REPLY state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Skip the reply of the next command.
    Skip,
    /// Set by CLIENT REPLY SKIP; becomes `Skip` after the current command.
    SkipNext,
}

/// One client's CLIENT TRACKING options while tracking is on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTracking {
    /// The client invalidations go to (REDIRECT); 0 for the client itself.
    pub redirect: ClientId,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// CLIENT CACHING YES (OPTIN) or NO (OPTOUT) given for the next command or transaction.
    pub caching: bool,
    /// The redirect client went away: invalidations are lost (flag `R`).
    pub broken_redirect: bool,
    /// BCAST prefixes, sorted as TRACKINGINFO lists them.
    pub prefixes: std::collections::BTreeSet<bytes::Bytes>,
}

impl ClientTracking {
    /// Whether the keys the client reads now are remembered: OPTIN needs CACHING YES first,
    /// OPTOUT skips them after CACHING NO, BCAST clients are told by prefix instead.
    pub fn remembers_reads(&self) -> bool {
        let opted_out = if self.optin {
            !self.caching
        } else {
            self.optout && self.caching
        };
        !self.bcast && !opted_out
    }
}

/// Everything the executor knows about one connection.
pub struct ClientState {
    pub id: ClientId,
    pub handle: Arc<ClientHandle>,
    pub peer: Peer,
    pub fd: i32,
    pub name: Vec<u8>,
    pub lib_name: Vec<u8>,
    pub lib_ver: Vec<u8>,
    pub db: usize,
    pub resp: Version,
    pub authenticated: bool,
    /// The ACL user the connection runs as (a slot of `crate::model::acl_users::Users`), or
    /// [`crate::model::acl_users::NO_USER`] for the internal clients that may do anything (the AOF's, the
    /// primary's link), and its name for CLIENT LIST and the ACL log.
    pub user: crate::model::acl_users::UserId,
    pub user_name: Arc<[u8]>,
    pub created_ms: i64,
    pub last_interaction_ms: i64,
    /// Full name of the last command (`client|list`), for CLIENT LIST `cmd=`: a name from the
    /// static command table, so that recording it costs no allocation.
    pub last_command: &'static str,
    /// Cluster mode: ASKING was sent (good for the next command, or the transaction it is in)
    /// and READONLY (reads of a replica's primary's slots are served here).
    pub asking: bool,
    pub cluster_readonly: bool,
    /// CLIENT NO-EVICT ON (shown as flag `e`): never evicted for `maxmemory-clients`.
    pub no_evict: bool,
    /// What this client last added to the clients' memory ledger (see
    /// [`crate::model::client_memory`]); 0 while client eviction is off.
    pub mem_usage: u64,
    /// CLIENT NO-TOUCH ON: its commands leave the keys' access clocks alone (but TOUCH).
    pub no_touch: bool,
    pub monitor: bool,
    /// A replica attached by SYNC or PSYNC: it receives the replication stream (`flags=S`).
    pub replica: bool,
    /// The port a replica said it listens on (REPLCONF listening-port), 0 until then.
    pub replica_port: u16,
    /// The replica said it can take a diskless transfer (REPLCONF capa eof).
    pub replica_eof: bool,
    /// `REPLCONF rdb-filter-only`: what its full sync's image leaves out (redis-cli
    /// --functions-rdb asks for the functions alone).
    pub rdb_filter: RdbFilter,
    /// This server's primary, applying its stream (`flags=M`): its writes pass the replica's
    /// READONLY gate and its replies are dropped.
    pub master: bool,
    /// The replication offset right after its last command that propagated (Redis's
    /// `c->woff`): what its WAIT waits for, so that other clients' later writes do not count.
    pub woff: u64,
    pub reply_mode: ReplyMode,
    /// Close the connection once the current reply is written (QUIT, CLIENT KILL of oneself,
    /// the end of a script debugging session).
    pub close_after_reply: bool,
    /// SCRIPT DEBUG SYNC: the client's next EVAL runs under the Lua debugger.
    pub debug_scripts: bool,
    /// Out-of-turn output not yet handed to the connection (see the module documentation).
    pub pending: BytesMut,
    pub blocked: Option<Blocked>,
    /// Bytes waiting in the connection's read buffer (CLIENT LIST `qbuf=`), updated by the task.
    pub query_buffer: usize,
    /// Channels, patterns and shard channels this client listens to.
    pub subs: crate::model::pubsub::Subscriptions,
    /// Output-buffer limit state (soft-limit timer, scheduled close).
    pub obuf: ObufState,
    /// The commands queued since MULTI, while a transaction is open.
    pub multi: Option<Box<crate::model::multi::Transaction>>,
    /// CLIENT TRACKING's options while tracking is on (see [`crate::model::tracking`]).
    pub tracking: Option<Box<ClientTracking>>,
}

/// Client memory accounting (see [`ClientState::memory_usage`]): what one watched key costs
/// its client, its entry in the client's list and the key's list of watchers.
const WATCHED_KEY: u64 = 56;
/// What one subscription costs beyond its name: the client's set entry and the channel's entry
/// in the server's index.
const SUBSCRIPTION: u64 = 48;
/// What one queued or kept argument costs beyond its bytes (a `Bytes`).
const ARGUMENT: u64 = std::mem::size_of::<bytes::Bytes>() as u64;
/// What one tracking prefix costs beyond its bytes (a node of the client's ordered set).
const PREFIX: u64 = 48;

/// The id of the fake client the AOF's commands run as when it loads (Redis's
/// `CLIENT_ID_AOF`): commands check it where Redis's `mustObeyClient` relaxes a rule.
pub const AOF_CLIENT_ID: ClientId = u64::MAX;

impl ClientState {
    /// Whether this client's commands are obeyed whatever this server's state: its primary's
    /// link and the AOF being loaded (Redis's `mustObeyClient`). A read-only replica refuses
    /// other clients' writes, but replays its own AOF's scripts.
    pub fn must_obey(&self) -> bool {
        self.master || self.id == AOF_CLIENT_ID
    }

    pub fn new(
        handle: Arc<ClientHandle>,
        peer: Peer,
        fd: i32,
        now_ms: i64,
        authenticated: bool,
    ) -> Self {
        ClientState {
            id: handle.id,
            handle,
            peer,
            fd,
            name: Vec::new(),
            lib_name: Vec::new(),
            lib_ver: Vec::new(),
            db: 0,
            resp: Version::Resp2,
            authenticated,
            user: crate::model::acl_users::DEFAULT_USER,
            user_name: Arc::from(&b"default"[..]),
            created_ms: now_ms,
            last_interaction_ms: now_ms,
            last_command: "NULL",
            asking: false,
            cluster_readonly: false,
            no_evict: false,
            mem_usage: 0,
            no_touch: false,
            monitor: false,
            replica: false,
            replica_port: 0,
            master: false,
            woff: 0,
            replica_eof: false,
            rdb_filter: RdbFilter::default(),
            reply_mode: ReplyMode::On,
            close_after_reply: false,
            debug_scripts: false,
            pending: BytesMut::new(),
            blocked: None,
            query_buffer: 0,
            subs: crate::model::pubsub::Subscriptions::default(),
            obuf: ObufState::default(),
            multi: None,
            tracking: None,
        }
    }

    /// What this client uses now (CLIENT LIST's `tot-mem`, see [`crate::model::client_memory`]): `watched` keys, and `output` bytes of its
    /// running turn's replies that it does not hold yet (the connection's buffer being filled).
    pub fn memory_usage(&self, watched: usize, output: usize) -> u64 {
        let client = self;
        let handle: &ClientHandle = &client.handle;
        let (qbuf, qbuf_free) = handle.query_buffer.sizes();
        let reply_buffer = handle.reply_buffer.size();
        let argv = handle.query_buffer.argv_mem();
        let mut mem = (qbuf + qbuf_free + argv + reply_buffer) as u64;
        // What the reply buffer cannot hold is a reply list in Redis: counted on top.
        // During a command the turn's replies so far are `output`, held ones among them.
        let output = output.max(handle.held());
        let out_of_turn = client.pending.len() + handle.unsent();
        mem += (output.saturating_sub(reply_buffer) + out_of_turn) as u64;
        mem += (std::mem::size_of::<ClientState>() + std::mem::size_of::<ClientHandle>()) as u64;
        mem += client.argv_usage();
        mem += watched as u64 * WATCHED_KEY;
        for names in [
            &client.subs.channels,
            &client.subs.patterns,
            &client.subs.shard,
        ] {
            mem += names
                .iter()
                .map(|name| name.len() as u64 + SUBSCRIPTION)
                .sum::<u64>();
        }
        if let Some(tracking) = &client.tracking {
            mem += tracking
                .prefixes
                .iter()
                .map(|p| p.len() as u64 + PREFIX)
                .sum::<u64>();
        }
        mem
    }

    /// The arguments the client keeps between commands: a transaction's queue (`multi-mem`) and a
    /// blocked command's arguments.
    fn argv_usage(&self) -> u64 {
        let client = self;
        let sum =
            |args: &[bytes::Bytes]| args.iter().map(|a| a.len() as u64 + ARGUMENT).sum::<u64>();
        let mut mem = 0;
        if let Some(multi) = &client.multi {
            mem += multi
                .commands
                .iter()
                .map(|(_, args)| {
                    sum(args) + std::mem::size_of::<(usize, Vec<bytes::Bytes>)>() as u64
                })
                .sum::<u64>();
        }
        if let Some(blocked) = &client.blocked {
            mem += sum(&blocked.args);
        }
        mem
    }

    /// CLIENT LIST `flags=`; `watch_broken`: a key it WATCHes was modified.
    pub fn flags(&self, watch_broken: bool) -> String {
        let mut f = String::new();
        if self.replica {
            f.push('S');
        }
        if self.master {
            f.push('M');
        }
        if self.monitor {
            f.push('O');
        }
        if self.subs.total() > 0 {
            f.push('P');
        }
        if self.multi.is_some() {
            f.push('x');
        }
        if self.blocked.is_some() {
            f.push('b');
        }
        if let Some(tracking) = &self.tracking {
            f.push('t');
            if tracking.broken_redirect {
                f.push('R');
            }
            if tracking.bcast {
                f.push('B');
            }
        }
        if watch_broken {
            f.push('d');
        }
        if self.close_after_reply {
            f.push('c');
        }
        if self.peer.is_unix() {
            f.push('U');
        }
        if self.cluster_readonly {
            f.push('r');
        }
        if self.no_evict {
            f.push('e');
        }
        if self.no_touch {
            f.push('T');
        }
        if f.is_empty() {
            f.push('N');
        }
        f
    }

    /// One CLIENT LIST / CLIENT INFO line (without the trailing newline) as Redis `version`
    /// writes it; `watch_broken` as for [`ClientState::flags`].
    pub fn info_line(&self, now_ms: i64, watching: Watching, version: CompatVersion) -> String {
        let age = (now_ms - self.created_ms).max(0) / 1000;
        let idle = (now_ms - self.last_interaction_ms).max(0) / 1000;
        let name = String::from_utf8_lossy(&self.name);
        let lib_name = String::from_utf8_lossy(&self.lib_name);
        let lib_ver = String::from_utf8_lossy(&self.lib_ver);
        let omem = unsent_output(self);
        let (qbuf, qbuf_free) = self.handle.query_buffer.sizes();
        let (rbs, rbp) = self.handle.reply_buffer.sizes();
        let resp = match self.resp {
            Version::Resp2 => 2,
            Version::Resp3 => 3,
        };
        // Redis 7.0's fields in its order, with `watch=` after `multi=` as Redis 7.4 adds it,
        // then lib-name/lib-ver as Redis 7.2 adds them.
        let watch = if version >= CompatVersion::V7_4 {
            format!(" watch={}", watching.keys)
        } else {
            String::new()
        };
        let mut line = format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={}{watch} qbuf={} qbuf-free={} argv-mem={} multi-mem=0 rbs={rbs} rbp={rbp} obl=0 oll=0 omem={} tot-mem={} events=r cmd={} user={} redir={} resp={}",
            self.id,
            self.peer.addr(),
            self.peer.local_addr(),
            self.fd,
            name,
            age,
            idle,
            self.flags(watching.broken),
            self.db,
            self.subs.channels.len(),
            self.subs.patterns.len(),
            self.subs.shard.len(),
            self.multi.as_ref().map_or(-1, |m| m.commands.len() as i64),
            qbuf,
            qbuf_free,
            self.handle.query_buffer.argv_mem(),
            omem,
            self.memory_usage(watching.keys, 0),
            self.last_command,
            String::from_utf8_lossy(&self.user_name),
            self.tracking.as_ref().map_or(-1, |t| t.redirect as i64),
            resp,
        );
        if version >= CompatVersion::V7_2 {
            line.push_str(&format!(" lib-name={lib_name} lib-ver={lib_ver}"));
        }
        line
    }
}

/// A client's watching as CLIENT LIST shows it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Watching {
    /// A key it watches was modified (`flags=d`).
    pub broken: bool,
    /// How many keys it watches (`watch=`, Redis 7.4).
    pub keys: usize,
}

/// All connected clients except the one whose command is running.
#[derive(Default)]
pub struct Clients {
    map: HashMap<ClientId, Box<ClientState>, IdHash>,
}

/// The hash of a client id for [`Clients`]: the running client leaves the map and comes back
/// for every command, so that is two hashes per request. Ids are the server's own sequential
/// numbers (no client chooses one, so no flooding to defend against): one multiplication by an
/// odd constant spreads them over the table's low bits and its tag bits alike, where ahash took
/// about 25 instructions (valgrind, PING -P 16: BENCHMARKS.md).
#[derive(Default, Clone, Copy)]
pub struct IdHash;

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

#[derive(Default)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Clients {
    pub fn insert(&mut self, client: Box<ClientState>) {
        self.map.insert(client.id, client);
    }

    pub fn remove(&mut self, id: ClientId) -> Option<Box<ClientState>> {
        self.map.remove(&id)
    }

    pub fn get(&self, id: ClientId) -> Option<&ClientState> {
        self.map.get(&id).map(|c| &**c)
    }

    pub fn get_mut(&mut self, id: ClientId) -> Option<&mut ClientState> {
        self.map.get_mut(&id).map(|c| &mut **c)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &ClientState> {
        self.map.values().map(|c| &**c)
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut ClientState> {
        self.map.values_mut().map(|c| &mut **c)
    }

    pub fn ids(&self) -> Vec<ClientId> {
        self.map.keys().copied().collect()
    }
}

/// Output-buffer limit bookkeeping of one client.
#[derive(Debug, Default, Clone, Copy)]
pub struct ObufState {
    /// When (unix seconds on the server clock) the output went over the soft limit and has
    /// stayed over it since.
    pub soft_since: Option<i64>,
    /// Already scheduled to be closed: deliver nothing more.
    pub closing: bool,
}

/// Removes every subscription of `client` from the server's index (disconnect, RESET).
pub fn unsubscribe_all(pubsub: &mut PubSub, client: &mut ClientState) {
    let id = client.id;
    for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
        for name in std::mem::take(client.subs.of_mut(kind)) {
            pubsub.unsubscribe(kind, &name, id);
        }
    }
}

/// Output a client has been given but has not yet taken off the socket: what is still in the
/// engine (`pending`), what the connection task has not written yet, and the replies it holds
/// while its peer does not read.
pub fn unsent_output(client: &ClientState) -> usize {
    client.pending.len()
        + client.handle.unsent()
        + client.handle.held()
        + client.handle.feed_referenced()
}

/// Redis's output-buffer limit check: true if `client` must be closed — its unsent output
/// reached the hard limit, or has stayed at or over the soft limit for more than the soft
/// seconds. Being under the soft limit again resets the soft timer. A limit of 0 is no limit.
pub fn over_limit(client: &mut ClientState, limit: &ObufLimit, now_ms: i64) -> bool {
    let used = unsent_output(client) as u64;
    over_limit_with(client, limit, used, now_ms)
}

/// [`over_limit`] for `used` bytes counted by the caller (a running client's own replies are
/// in its connection's output, which the client state does not see).
pub fn over_limit_with(
    client: &mut ClientState,
    limit: &ObufLimit,
    used: u64,
    now_ms: i64,
) -> bool {
    let now_s = now_ms.div_euclid(1000);
    let hard = limit.hard != 0 && used >= limit.hard;
    let mut soft = false;
    if limit.soft != 0 && used >= limit.soft {
        match client.obuf.soft_since {
            None => client.obuf.soft_since = Some(now_s),
            Some(since) => soft = now_s - since > limit.soft_seconds as i64,
        }
    } else {
        client.obuf.soft_since = None;
    }
    hard || soft
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> ClientState {
        let handle = std::sync::Arc::new(crate::model::client::ClientHandle::new(1));
        let peer = crate::model::client::Peer::Unix { path: "t".into() };
        ClientState::new(handle, peer, 0, 0, true)
    }

    #[test]
    fn output_limits_hard_at_once_soft_after_its_seconds() {
        let limit = ObufLimit {
            hard: 1000,
            soft: 100,
            soft_seconds: 2,
        };
        let mut c = client();
        c.pending.extend_from_slice(&[0; 99]);
        assert!(!over_limit(&mut c, &limit, 0));
        assert_eq!(c.obuf.soft_since, None);
        // Over the soft limit: the timer starts; it takes more than 2 whole seconds.
        c.handle.deliver(&[0; 10]);
        assert!(!over_limit(&mut c, &limit, 0));
        assert!(!over_limit(&mut c, &limit, 2_999));
        assert!(over_limit(&mut c, &limit, 3_000));
        // Written out in between: the timer starts again.
        c.handle.wrote(10);
        assert!(!over_limit(&mut c, &limit, 3_000));
        assert_eq!(c.obuf.soft_since, None);
        // The hard limit closes at once.
        c.handle.deliver(&[0; 901]);
        assert!(over_limit(&mut c, &limit, 3_000));
        // A limit of 0 is no limit.
        let none = ObufLimit {
            hard: 0,
            soft: 0,
            soft_seconds: 0,
        };
        assert!(!over_limit(&mut c, &none, 1_000_000));
    }
}

/// The parts of a full sync's image a replica asked to leave out (Redis's
/// `SLAVE_REQ_RDB_EXCLUDE_DATA` / `_FUNCTIONS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RdbFilter {
    pub exclude_data: bool,
    pub exclude_functions: bool,
}

impl RdbFilter {
    /// Whether anything is left out: such an image goes only over the socket framing.
    pub fn is_on(self) -> bool {
        self.exclude_data || self.exclude_functions
    }
}
