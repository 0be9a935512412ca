//! Networking: listeners, one task per connection, the timer, and shutdown — all on the thread
//! that owns the [`Engine`].
//!
//! Connection I/O runs on the executor's own thread (a tokio current-thread runtime): a task
//! reads what the socket has, decodes every complete request, runs each one directly against the
//! engine, and writes all the replies with one write. There is no hand-over between threads on
//! the data path — no channel, no wake-up of another thread, no lock — which is what makes the
//! CPU cost per request comparable to Redis's own event loop. We measured the alternative
//! (`io-threads` > 1: parsing and socket I/O on a pool of threads, commands handed to a dedicated
//! executor thread in batches) on the 2-core benchmark machine: the cross-thread wake-ups cost
//! more CPU per request than they save; see BENCHMARKS.md. `io-threads` therefore defaults to 1.
//!
//! Each connection's task keeps its requests in order: it stops feeding a client's requests while
//! the client is blocked and resumes when the engine releases it, and it writes out-of-turn output
//! (delivered to the client's [`ClientHandle`]) before the replies of newer requests.

use bytes::BytesMut;
use embedis_protocol::RequestDecoder;
use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::Notify;

use crate::base::listeners::set_keepalive;
use crate::engine::{Engine, Outcome};
use crate::kernel::gates::Refusal;
use crate::model::client::{ClientHandle, ClientId, Peer};

impl crate::io::primary_link::EngineCell for Shared {
    fn engine(&self) -> std::cell::RefMut<'_, Engine> {
        self.engine.borrow_mut()
    }

    fn engine_ref(&self) -> std::cell::Ref<'_, Engine> {
        self.engine.borrow()
    }

    fn after_work(&self, engine: &mut Engine) {
        self.hand_over_after_work(engine)
    }
}

/// Requests run per turn before the task writes what it has and lets other connections run.
const REQUESTS_PER_TURN: usize = 1024;
/// Replies buffered before the task writes them even if more requests are waiting.
const OUTPUT_PER_TURN: usize = 1024 * 1024;

/// Room made in the input buffer before every read, as Redis reads up to 16 KB at a time. The
/// buffer's spare capacity shrinks as decoded requests are split off its front; without making
/// room again, a read would take only part of a pipeline that the client wrote whole, and the
/// connection would answer it in pieces (twice the system calls and TCP segments per batch).
pub(crate) const READ_CHUNK: usize = 16 * 1024;

/// Output buffer capacity a connection keeps between writes; a larger one is given back.
use crate::model::client::KEPT_OUTPUT_CAPACITY;

/// Most bytes of an unfinished request an idle connection hands to a busy script (see
/// `run_connection`).
const HAND_OVER_LIMIT: usize = 16 * 1024;

/// What the tasks of one server share (all on one thread).
pub struct Shared {
    pub engine: RefCell<Engine>,
    /// Wakes the timer task (clock changed, pause or block deadlines changed).
    pub timer: Arc<Notify>,
    /// Set when the server must stop.
    pub shutdown: Arc<Notify>,
    /// Connections with out-of-turn output (pub/sub messages, a released blocked command's
    /// reply, MONITOR lines) to wake at the end of this turn of the event loop, and the signal
    /// that there are some (see [`wake_at_turn_end`]).
    pub turn_end_wakes: RefCell<Vec<Arc<ClientHandle>>>,
    pub turn_end: Notify,
    /// The keys evicted at the last turn's end: a turn that evicted writes its output before
    /// the next requests are read (see [`wake_at_turn_end`]).
    pub evicted_at_turn_end: Cell<u64>,
    /// Wakes [`run_snapshots`] when a background save begins.
    pub snapshot: Notify,
    /// The ring plain TCP and unix clients' I/O goes through, with `io-uring yes` (set up when
    /// first wanted: at start, or at the first connection after CONFIG SET io-uring yes).
    pub uring: RefCell<Option<Rc<crate::io::net_uring::Uring>>>,
}

impl Shared {
    /// The ring a new plain TCP or unix connection should use: None unless `io-uring` is yes.
    /// Sets the ring up (and starts its driver) the first time; where io_uring is unavailable,
    /// says so in the log and turns `io-uring` back to no, so that CONFIG GET tells the truth.
    pub fn ring_for_new_connection(&self) -> Option<Rc<crate::io::net_uring::Uring>> {
        let mut engine = self.engine.borrow_mut();
        if !engine.server.config.io_uring {
            return None;
        }
        let mut ring = self.uring.borrow_mut();
        if let Some(ring) = &*ring {
            return Some(ring.clone());
        }
        match crate::io::net_uring::Uring::new() {
            Ok(uring) => {
                engine
                    .server
                    .log
                    .notice("Serving TCP and unix-socket clients through io_uring");
                tokio::task::spawn_local(crate::io::net_uring::run(uring.clone()));
                *ring = Some(uring.clone());
                Some(uring)
            }
            Err(e) => {
                engine.server.log.warning(&format!(
                    "io-uring yes, but io_uring is not available ({e}): using epoll"
                ));
                engine.server.config.io_uring = false;
                None
            }
        }
    }

    /// Called after anything ran against the engine: hands out-of-turn output to connections and
    /// notices a SHUTDOWN request.
    pub fn after_work(&self, engine: &mut Engine) {
        self.hand_over_after_work(engine)
    }

    fn hand_over_after_work(&self, engine: &mut Engine) {
        let mut wakes = self.turn_end_wakes.borrow_mut();
        let had_wakes = !wakes.is_empty();
        engine.flush_pending_later(&mut wakes);
        // Client eviction (`maxmemory-clients`) waits for the turn's end too; one branch
        // while it is off.
        if (!had_wakes && !wakes.is_empty()) || engine.server.client_memory.due {
            self.turn_end.notify_one();
        }
        drop(wakes);
        if engine.server.shutdown.is_some() {
            stop_listening();
            self.shutdown.notify_one();
        }
        if engine.server.persistence.bgsave.is_some() || engine.server.aof.rewrite.is_some() {
            self.snapshot.notify_one();
        }
        // A new blocked client or pause may need the timer earlier than its next tick.
        if std::mem::take(&mut engine.server.timers_changed) {
            self.timer.notify_one();
        }
    }
}

/// Wakes the connections that were handed out-of-turn output, and evicts clients over
/// `maxmemory-clients` (see `crate::model::client_memory`), once per turn of the event loop,
/// after every ready task has run: as Redis writes in `beforeSleep`, a subscriber then writes
/// the messages of every PUBLISH of the turn at once, and its task is polled once for them
/// (woken at each PUBLISH, it would be polled again to wait for the turn's end).
pub async fn wake_at_turn_end(shared: Rc<Shared>) {
    loop {
        shared.turn_end.notified().await;
        // Clients over `maxmemory-clients` go after the tasks that were ready (a client that
        // closed meanwhile is gone, and no other pays for it) but before any new request is
        // read, as Redis evicts before the next command.
        let evicted_keys = {
            let mut engine = shared.engine.borrow_mut();
            if engine.server.client_memory.due {
                engine.evict_clients_now();
                shared.after_work(&mut engine);
            }
            engine.server.eviction.keys_evicted
        };
        // Resumes after the scheduler has run out of ready tasks and polled the I/O driver, so
        // that output of the requests that poll finds is written together. Not after a turn
        // that evicted keys: the invalidations those deletions sent to tracking clients are
        // written first, as Redis writes every client's output in `beforeSleep` before it reads
        // again; left in memory, they would make the next command's eviction pass delete more
        // keys, whose invalidations … (Redis's "eviction feedback loop" test).
        if shared.evicted_at_turn_end.replace(evicted_keys) == evicted_keys {
            tokio::task::yield_now().await;
        }
        let wakes = std::mem::take(&mut *shared.turn_end_wakes.borrow_mut());
        for handle in &wakes {
            handle.wake_queued();
        }
        // The list keeps its capacity for the next turn.
        let mut list = shared.turn_end_wakes.borrow_mut();
        if list.is_empty() {
            *list = wakes;
            list.clear();
        }
    }
}

/// A connection's byte stream: plain TCP, a unix socket, or TLS over TCP. Whether its socket
/// carries the protocol's bytes as they are matters to busy scripts, which read idle clients'
/// sockets themselves (see [`crate::services::busy`]): a TLS client is never handed to them. A constant,
/// so that the plain connections' code is compiled as it was without TLS.
pub(crate) trait Transport: AsyncRead + AsyncWrite + Unpin + 'static {
    const PLAIN_SOCKET: bool = true;
    /// A script debugging session may block on the socket itself (not a ring's, not TLS).
    const DEBUGGABLE: bool = Self::PLAIN_SOCKET;
}

impl Transport for tokio::net::TcpStream {}
impl Transport for tokio::net::UnixStream {}
// A busy script serves ring clients too, reading and writing through the ring (see
// `net_uring`'s busy hooks).
impl Transport for crate::io::net_uring::UringStream {
    const DEBUGGABLE: bool = false;
}
impl Transport for crate::base::tls::TlsStream {
    const PLAIN_SOCKET: bool = false;
}

/// Accepts connections on the current TCP listeners, replacing them when CONFIG SET port / bind
/// (or tls-port) sends a new set (see [`crate::base::listeners`]). With `tls`, these are the TLS
/// port's listeners and every connection is a TLS one.
pub async fn manage_tcp_listeners(
    initial: Vec<std::net::TcpListener>,
    mut replacements: tokio::sync::mpsc::UnboundedReceiver<Vec<std::net::TcpListener>>,
    shared: Rc<Shared>,
    tls: Option<crate::base::tls::TlsShared>,
) {
    let spawn_all = |listeners: Vec<std::net::TcpListener>| -> Vec<tokio::task::JoinHandle<()>> {
        listeners
            .into_iter()
            .filter_map(|l| TcpListener::from_std(l).ok())
            .map(|l| match &tls {
                None => tokio::task::spawn_local(accept_tcp(l, shared.clone())),
                Some(tls) => tokio::task::spawn_local(accept_tls(l, shared.clone(), tls.clone())),
            })
            .collect()
    };
    let mut running = spawn_all(initial);
    while let Some(next) = replacements.recv().await {
        for task in running.drain(..) {
            task.abort();
        }
        running = spawn_all(next);
    }
}

/// Accepts TCP connections forever.
pub async fn accept_tcp(listener: TcpListener, shared: Rc<Shared>) {
    use std::os::fd::AsRawFd;
    let _busy = BusyListener::register(listener.as_raw_fd(), None, &shared);
    let keepalive = || shared.engine.borrow().server.config.tcp_keepalive;
    loop {
        let (stream, fd, addr, local) =
            crate::base::listeners::accept_tcp(&listener, keepalive).await;
        let peer = Peer::Tcp { addr, local };
        start_plain_connection(
            stream,
            &shared,
            peer,
            fd,
            crate::io::net_uring::Uring::adopt_tcp,
        );
    }
}

/// [`start_connection`] for a plain TCP or unix socket: through the ring with `io-uring yes`
/// (`adopt` hands the socket over to it), else as it is.
fn start_plain_connection<S: Transport>(
    stream: S,
    shared: &Rc<Shared>,
    peer: Peer,
    fd: i32,
    adopt: fn(&Rc<crate::io::net_uring::Uring>, S) -> io::Result<crate::io::net_uring::UringStream>,
) {
    match shared.ring_for_new_connection() {
        None => start_connection(stream, shared, peer, fd),
        Some(uring) => {
            if let Ok(stream) = adopt(&uring, stream) {
                start_connection(stream, shared, peer, fd);
            }
        }
    }
}

/// Accepts TLS connections forever: each handshake runs in its own task, and the client is
/// registered once it succeeds. A busy script does not accept here (it cannot run a handshake
/// between two steps of a script); such clients wait in the backlog until it ends.
pub async fn accept_tls(
    listener: TcpListener,
    shared: Rc<Shared>,
    tls: crate::base::tls::TlsShared,
) {
    let keepalive = || shared.engine.borrow().server.config.tcp_keepalive;
    loop {
        let (stream, fd, addr, local) =
            crate::base::listeners::accept_tcp(&listener, keepalive).await;
        // Read now, so that CONFIG SET after this accept does not change this handshake.
        let Some(acceptor) = tls.acceptor() else {
            continue;
        };
        let shared = shared.clone();
        tokio::task::spawn_local(async move {
            // A failed handshake (a plain-text client on the TLS port among them) is logged
            // as Redis logs it (the form of a handshake that fails after the accept), and the
            // connection closed.
            match acceptor.accept(stream).await {
                Ok(stream) => start_connection(stream, &shared, Peer::Tcp { addr, local }, fd),
                Err(e) => shared
                    .engine
                    .borrow()
                    .server
                    .log
                    .warning(&format!("Error accepting a client connection: {e}")),
            }
        });
    }
}

/// Accepts unix-socket connections forever.
pub async fn accept_unix(listener: UnixListener, path: String, shared: Rc<Shared>) {
    use std::os::fd::AsRawFd;
    let _busy = BusyListener::register(listener.as_raw_fd(), Some(path.clone()), &shared);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let fd = stream.as_raw_fd();
        let peer = Peer::Unix { path: path.clone() };
        start_plain_connection(
            stream,
            &shared,
            peer,
            fd,
            crate::io::net_uring::Uring::adopt_unix,
        );
    }
}

/// A listener a busy script may accept connections from (see [`crate::services::busy`], which calls
/// [`accept_while_busy`] as the acceptor installed on this thread): registered
/// while its accept task runs, on the engine's thread.
struct BusyListener {
    fd: i32,
}

/// What a busy script needs to accept on a listener and hand the connection to a task.
struct BusyAccept {
    fd: i32,
    /// The socket path of a unix listener; None for TCP.
    unix_path: Option<String>,
    shared: std::rc::Weak<Shared>,
}

thread_local! {
    /// The listeners of the server whose engine runs on this thread.
    static BUSY_LISTENERS: RefCell<Vec<BusyAccept>> = const { RefCell::new(Vec::new()) };
}

impl BusyListener {
    fn register(fd: i32, unix_path: Option<String>, shared: &Rc<Shared>) -> BusyListener {
        crate::services::busy::install_acceptor(accept_while_busy);
        BUSY_LISTENERS.with(|l| {
            let mut listeners = l.borrow_mut();
            listeners.retain(|b| b.fd != fd);
            listeners.push(BusyAccept {
                fd,
                unix_path,
                shared: Rc::downgrade(shared),
            });
        });
        BusyListener { fd }
    }
}

/// Stops this thread's listeners from taking connections, at once: the server is going down,
/// and a client that saw its connection close (SHUTDOWN's own, a busy script's caller) must
/// find the port closed — as Redis closes its listening sockets before it exits — not have a
/// connection accepted and then reset while the runtime winds down.
fn stop_listening() {
    BUSY_LISTENERS.with(|l| {
        for listener in l.borrow().iter() {
            // SAFETY: the fd is a listener this thread's tasks own, still open; shutting it
            // down makes the kernel refuse new connections without closing the descriptor.
            unsafe { libc::shutdown(listener.fd, libc::SHUT_RDWR) };
        }
    });
}

impl Drop for BusyListener {
    fn drop(&mut self) {
        BUSY_LISTENERS.with(|l| l.borrow_mut().retain(|b| b.fd != self.fd));
    }
}

/// Accepts, without blocking, the connections waiting on this thread's listeners while a script
/// is busy: each is registered with the engine at once (so the busy script can answer it) and
/// gets its task, which starts when the script has finished.
pub fn accept_while_busy(parts: &mut crate::kernel::call::Parts<'_>) {
    use std::os::fd::FromRawFd;
    let pending: Vec<(i32, Option<String>, Rc<Shared>)> = BUSY_LISTENERS.with(|l| {
        l.borrow()
            .iter()
            .filter_map(|b| Some((b.fd, b.unix_path.clone(), b.shared.upgrade()?)))
            .collect()
    });
    for (listener, unix_path, shared) in pending {
        loop {
            // SAFETY: accept4 on a listening socket we own; the new descriptor is handed to a
            // std stream right away, which owns (and closes) it.
            let fd = unsafe {
                libc::accept4(
                    listener,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                )
            };
            if fd < 0 {
                break;
            }
            match &unix_path {
                None => {
                    let std_stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
                    let (Ok(addr), Ok(local)) = (std_stream.peer_addr(), std_stream.local_addr())
                    else {
                        continue;
                    };
                    let _ = std_stream.set_nodelay(true);
                    let Ok(stream) = tokio::net::TcpStream::from_std(std_stream) else {
                        continue;
                    };
                    set_keepalive(&stream, parts.server.config.tcp_keepalive);
                    adopt(parts, stream, Peer::Tcp { addr, local }, fd, &shared);
                }
                Some(path) => {
                    let std_stream = unsafe { std::os::unix::net::UnixStream::from_raw_fd(fd) };
                    let Ok(stream) = tokio::net::UnixStream::from_std(std_stream) else {
                        continue;
                    };
                    adopt(
                        parts,
                        stream,
                        Peer::Unix { path: path.clone() },
                        fd,
                        &shared,
                    );
                }
            }
        }
    }
}

/// Registers a connection accepted by a busy script and spawns its task.
fn adopt<S>(
    parts: &mut crate::kernel::call::Parts<'_>,
    stream: S,
    peer: Peer,
    fd: i32,
    shared: &Rc<Shared>,
) where
    S: Transport,
{
    let connected = crate::kernel::gates::connect_client(parts, peer, fd);
    spawn_connection(connected, stream, shared);
}

/// Registers a connection just accepted and spawns its task. Registering at once, not when the
/// task first runs, matters when a script starts before the task does: the busy script must
/// know the client to answer it.
fn start_connection<S>(stream: S, shared: &Rc<Shared>, peer: Peer, fd: i32)
where
    S: Transport,
{
    let connected = shared.engine.borrow_mut().connect(peer, fd);
    spawn_connection(connected, stream, shared);
}

/// Spawns the task of a registered connection, or sends the refusal and closes.
fn spawn_connection<S>(
    connected: Result<Arc<ClientHandle>, Refusal>,
    stream: S,
    shared: &Rc<Shared>,
) where
    S: Transport,
{
    match connected {
        Ok(handle) => {
            // Its task has not run yet: nothing buffered, so a busy script may serve it (if it
            // can read its socket).
            handle.set_idle(S::PLAIN_SOCKET);
            handle.set_debuggable(S::DEBUGGABLE);
            tokio::task::spawn_local(serve_registered(stream, shared.clone(), handle));
        }
        Err(Refusal::Reply(line)) => {
            let mut stream = stream;
            tokio::task::spawn_local(async move {
                let _ = stream.write_all(line.as_bytes()).await;
                let _ = stream.flush().await;
            });
        }
    }
}

/// Serves a connection already registered with the engine until it closes.
async fn serve_registered<S>(mut stream: S, shared: Rc<Shared>, handle: Arc<ClientHandle>)
where
    S: Transport,
{
    let _ = run_connection(&mut stream, &shared, &handle).await;
    let mut engine = shared.engine.borrow_mut();
    engine.disconnect(handle.id);
    shared.after_work(&mut engine);
}

/// What one turn of a connection did: run its ready requests, and what that leaves to do.
#[derive(Default)]
struct Turn {
    /// Requests run.
    ran: usize,
    /// Stopped at the turn's limits with requests still read.
    more_waiting: bool,
    /// Closing after this turn's output (QUIT, a protocol error).
    closing: bool,
    /// Bytes of `output` that came from the outbox (the engine counts them as unsent).
    from_outbox: usize,
    /// The AOF has writes of this turn still to flush.
    aof_pending: bool,
}

async fn run_connection<S>(
    stream: &mut S,
    shared: &Shared,
    handle: &Arc<ClientHandle>,
) -> io::Result<()>
where
    S: Transport,
{
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut output = BytesMut::with_capacity(16 * 1024);
    let (max_bulk, mut query_limit) = input_limits(shared);
    let mut decoder = RequestDecoder::new(max_bulk);
    loop {
        let mut turn = Turn::default();
        if !handle.is_blocked() && !handle.is_killed() {
            let mut engine = shared.engine.borrow_mut();
            run_requests(
                &mut engine,
                handle,
                &mut decoder,
                &mut input,
                &mut output,
                &mut query_limit,
                &mut turn,
            );
            shared.after_work(&mut engine);
            turn.aof_pending = engine.ks.stream.aof_pending();
        }
        if (turn.ran > 1 || (turn.ran == 1 && turn.aof_pending)) && !turn.closing {
            // Write in the loop's "before sleep" phase, as Redis does: `yield_now` resumes this
            // task only once every other ready connection has run and the I/O driver has been
            // polled, so replies leave in one burst after all the reads. Writing each
            // connection's replies at once instead woke a pipelining client for every
            // connection (13x its context switches, and more kernel time on our side).
            // One request alone (-P 1) is answered at once: the yield cost its task a second
            // poll and the turn an extra look at the I/O driver, 450 of 3,650 instructions a
            // request (PING), with nothing to batch on this connection; a write to the AOF
            // still waits, to share the turn's fsync (below).
            // Out-of-turn output (a subscriber's messages) needs no wait here: its wake-up
            // comes at the turn's end already (`wake_at_turn_end`).
            tokio::task::yield_now().await;
        }
        if handle.has_outbox() {
            turn.from_outbox += handle.take_outbox_into(&mut output);
        }
        let mut woken = false;
        if !output.is_empty() {
            let mut aof = aof_waits_for_turn(shared, turn.ran);
            if aof == AofTurn::Wait {
                // Redis fsyncs once per event-loop turn (in `beforeSleep`) for every client of
                // the turn. The yield above let the connections that were ready run; requests
                // that arrived meanwhile are seen at the I/O driver's next poll, and one more
                // yield lets them join this fsync rather than need one of their own (-P1, 50
                // clients: 28 requests per fsync without it, 50 with it, as Redis).
                tokio::task::yield_now().await;
                aof = flush_aof_if_pending(shared);
            }
            if aof == AofTurn::Crashed {
                // The AOF could not take a write under `always`: nothing is acknowledged.
                return Ok(());
            }
            let mut reading = Reading {
                decoder: &mut decoder,
                input: &mut input,
                query_limit: &mut query_limit,
                turn: &mut turn,
            };
            match write_reading_meanwhile(stream, shared, handle, &mut output, &mut reading).await?
            {
                Wrote::Killed => return Ok(()),
                Wrote::All { woken: w } => woken = w,
            }
            if !S::PLAIN_SOCKET {
                // TLS may keep the last records of the replies when the socket was full.
                match flush_unless_killed(stream, handle).await? {
                    Wrote::Killed => return Ok(()),
                    Wrote::All { woken: w } => woken |= w,
                }
            }
            written(shared, handle, &mut output, turn.from_outbox);
        }
        if turn.closing || handle.is_killed() {
            let _ = stream.flush().await;
            return Ok(());
        }
        // A wake-up taken while writing (new output, a release) must not be lost.
        if turn.more_waiting || woken {
            tokio::task::yield_now().await;
            continue;
        }
        // Before a hand-over, which gives the decoder's request in progress back as bytes.
        let pending_bulk = decoder.pending_bulk();
        let idle = S::PLAIN_SOCKET && hand_over_if_idle(handle, &mut decoder, &mut input);
        handle.set_idle(idle);
        give_back_room(handle, &mut input, pending_bulk);
        keep_reply_room(handle, &mut output);
        handle.query_buffer.report(input.len(), input.capacity());
        tokio::select! {
            read = stream.read_buf(&mut input) => {
                let n = read?;
                if n == 0 || !took_input(shared, handle, &input, n, query_limit) {
                    return Ok(());
                }
            }
            _ = handle.notified() => {}
        }
        handle.set_idle(false);
        // Bytes a busy script's executor read and left unanswered come before anything newer.
        if let Some(mut stolen) = handle.take_stolen() {
            stolen.extend_from_slice(&input);
            input = stolen;
        }
    }
}

/// `proto-max-bulk-len` and `client-query-buffer-limit` as a new connection starts with them.
fn input_limits(shared: &Shared) -> (usize, usize) {
    let engine = shared.engine.borrow();
    let c = &engine.server.config;
    (
        c.proto_max_bulk_len as usize,
        c.client_query_buffer_limit as usize,
    )
}

/// Runs the requests `input` holds, up to the turn's limits, their replies into `output`.
#[inline(always)]
fn run_requests(
    engine: &mut Engine,
    handle: &ClientHandle,
    decoder: &mut RequestDecoder,
    input: &mut BytesMut,
    output: &mut BytesMut,
    query_limit: &mut usize,
    turn: &mut Turn,
) {
    let id = handle.id;
    // Output delivered out of turn comes before the replies of newer requests.
    if handle.has_outbox() {
        turn.from_outbox += handle.take_outbox_into(output);
    }
    *query_limit = engine.server.config.client_query_buffer_limit as usize;
    // Requests left whose keys were prefetched: a pipeline's keys are fetched a batch at a time
    // before its requests run (the batch decoded ahead into the decoder's queue, which `decode`
    // hands out first); a lone request (`-P 1`) costs one test of the input.
    let mut prefetched = 0;
    loop {
        // CONFIG SET applies both limits to open connections too, as in Redis: from the next
        // request on, even in the same pipeline (the query buffer's, above, at the next read).
        decoder.set_max_bulk_len(engine.server.config.proto_max_bulk_len as usize);
        let authenticated = handle.is_authenticated();
        match decoder.decode(input, authenticated) {
            Ok(Some(args)) => {
                turn.ran += 1;
                if prefetched == 0 && !input.is_empty() {
                    prefetched = engine.prefetch_pipeline(id, &args, decoder, input, authenticated);
                }
                prefetched = prefetched.saturating_sub(1);
                let outcome = engine.execute(id, args, output);
                if let Some(spare) = engine.take_spare_args() {
                    decoder.give_back(spare);
                }
                match outcome {
                    Outcome::Continue => {}
                    Outcome::Blocked => break,
                    Outcome::Close => {
                        turn.closing = true;
                        break;
                    }
                }
                if turn.ran >= REQUESTS_PER_TURN || output.len() >= OUTPUT_PER_TURN {
                    turn.more_waiting = !input.is_empty() || decoder.has_ahead();
                    break;
                }
            }
            Ok(None) => {
                // Arguments of an unfinished request are memory the client uses.
                let partial = if decoder.in_progress() {
                    decoder.partial_len()
                } else {
                    0
                };
                handle.query_buffer.partial_args(partial);
                break;
            }
            Err(error) => {
                engine
                    .server
                    .log
                    .verbose(&format!("Protocol error ({error}) from client: id={id}"));
                engine.server.count_error("ERR");
                output.extend_from_slice(&error.to_resp());
                turn.closing = true;
                break;
            }
        }
    }
}

/// Where the AOF stands before a connection's replies leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AofTurn {
    /// Flushed (or nothing to flush): the replies may leave.
    Done,
    /// The flush waits for the turn's other connections (`always`, and this connection wrote).
    Wait,
    /// The server stopped on an AOF it could not write (see `ServerState::crashed`): no reply
    /// leaves.
    Crashed,
}

/// The AOF gets the turn's writes before any reply leaves (with an fsync under `appendfsync
/// always`): an acknowledged write is in the file. The flush waits for the turn's other
/// connections under `always` when this connection wrote; otherwise it is done now.
#[inline(always)]
fn aof_waits_for_turn(shared: &Shared, ran: usize) -> AofTurn {
    let mut engine = shared.engine.borrow_mut();
    let pending = engine.ks.stream.aof_pending();
    if pending
        && ran > 0
        && engine.server.config.appendfsync == crate::base::config::AppendFsync::Always
    {
        return AofTurn::Wait;
    }
    if pending {
        let Engine { ks, server, .. } = &mut *engine;
        crate::services::aof::flush(ks, server);
    }
    if engine.server.crashed {
        AofTurn::Crashed
    } else {
        AofTurn::Done
    }
}

/// Flushes the AOF's writes, if any are left (after the turn's wait).
fn flush_aof_if_pending(shared: &Shared) -> AofTurn {
    let mut engine = shared.engine.borrow_mut();
    if engine.ks.stream.aof_pending() {
        let Engine { ks, server, .. } = &mut *engine;
        crate::services::aof::flush(ks, server);
    }
    if engine.server.crashed {
        AofTurn::Crashed
    } else {
        AofTurn::Done
    }
}

/// Keeps the (empty) output buffer at the size the tick gave the reply buffer (see
/// `reply_buffer`): an idle connection gives back all but 1 KB, as Redis's do.
#[inline(always)]
fn keep_reply_room(handle: &ClientHandle, output: &mut BytesMut) {
    let size = handle.reply_buffer.size();
    if output.capacity() > size && output.is_empty() {
        *output = BytesMut::with_capacity(size);
    }
}

/// Accounts for `output` once written, and empties it.
#[inline(always)]
fn written(shared: &Shared, handle: &ClientHandle, output: &mut BytesMut, from_outbox: usize) {
    handle.wrote(from_outbox);
    shared.engine.borrow_mut().count_output(output.len());
    handle.reply_buffer.used(output.len());
    output.clear();
    if output.capacity() > KEPT_OUTPUT_CAPACITY {
        // A burst (a subscriber catching up, a huge reply) does not stay allocated.
        *output = BytesMut::with_capacity(handle.reply_buffer.size());
    }
}

/// Whether an idle plain-socket connection may be served by a busy script: a script that runs
/// too long may read and answer this socket meanwhile. A small request begun but not finished
/// goes to the handle as bytes, so that the busy script can finish reading it and answer it, as
/// Redis does; a big one (a large value still arriving) stays here and waits for the script to
/// end. (Over TLS a busy script would read the socket's encrypted bytes: never idle.)
#[inline(always)]
fn hand_over_if_idle(
    handle: &ClientHandle,
    decoder: &mut RequestDecoder,
    input: &mut BytesMut,
) -> bool {
    if input.is_empty() && !decoder.in_progress() {
        true
    } else if decoder.partial_len() + input.len() <= HAND_OVER_LIMIT {
        let mut partial = decoder.take_partial();
        partial.extend_from_slice(input);
        input.clear();
        handle.with_stolen(|stolen| stolen.extend_from_slice(&partial));
        true
    } else {
        false
    }
}

/// Makes room to read into. The tick may ask for the buffer's room back (see `query_buffer`):
/// all of it for an idle client — the next read allocates again — or all but the usual 16 KB
/// after a big request. A big argument whose header was read (`pending_bulk`, 32 KB or more)
/// gets room for all of it at once, as Redis makes room for a big bulk: CLIENT LIST shows that
/// room until the client has been idle for 2 seconds.
#[inline(always)]
fn give_back_room(handle: &ClientHandle, input: &mut BytesMut, pending_bulk: Option<usize>) {
    let keep_room = match handle.query_buffer.take_request() {
        None => true,
        Some(resize) => {
            // Exactly what it holds (usually nothing: no allocation at all).
            *input = BytesMut::from(&input[..]);
            resize == crate::model::query_buffer::Resize::Shrink
        }
    };
    if !keep_room {
        return;
    }
    match pending_bulk {
        Some(len) if len >= crate::model::query_buffer::BIG_ARG => {
            let whole = len + 2;
            handle.query_buffer.awaiting_bulk(whole);
            // Exactly the room it needs, as Redis's non-greedy allocation for a big argument:
            // clients sending the same argument use the same memory (`maxmemory-clients`
            // evicts by it), however their bytes were cut into reads (a first read that took
            // much of it into a grown buffer is copied once into the exact one).
            let exact_room = whole.max(input.len());
            if input.capacity() != exact_room {
                let mut exact = BytesMut::with_capacity(exact_room);
                exact.extend_from_slice(input);
                *input = exact;
            }
        }
        // Reclaims the consumed front of the buffer when nothing else holds it (no copy
        // when it is empty), or moves to a fresh one.
        _ => {
            handle.query_buffer.no_bulk();
            input.reserve(READ_CHUNK);
        }
    }
}

/// Counts `n` bytes just read; false if the query buffer went over `client-query-buffer-limit`
/// and the connection is closed.
#[inline(always)]
fn took_input(
    shared: &Shared,
    handle: &ClientHandle,
    input: &BytesMut,
    n: usize,
    query_limit: usize,
) -> bool {
    let id = handle.id;
    handle.query_buffer.report(input.len(), input.capacity());
    shared.engine.borrow_mut().count_input(id, n, input.len());
    // Evicted for `maxmemory-clients` by this read.
    if handle.is_killed() {
        return false;
    }
    if input.len() > query_limit {
        let mut engine = shared.engine.borrow_mut();
        close_over_query_limit(&mut engine, id, input);
        return false;
    }
    true
}

/// Redis's reaction to a query buffer over `client-query-buffer-limit`: its log line (the
/// client as CLIENT LIST shows it, and the buffer's first 64 bytes) and the close, with no reply.
/// The request in progress is dropped with the connection.
fn close_over_query_limit(engine: &mut Engine, id: ClientId, input: &[u8]) {
    engine.server.stats.client_qbuf_limit_disconnections += 1;
    let now_ms = engine.server.clock.now_ms();
    let info = engine.clients.get(id).map_or_else(String::new, |client| {
        client.info_line(
            now_ms,
            engine.ks.watches.watching(id),
            engine.server.config.compat_version,
        )
    });
    let mut initial = Vec::new();
    crate::base::cstr::push_repr(&mut initial, &input[..input.len().min(64)]);
    engine.server.log.warning(&format!(
        "Closing client that reached max query buffer length: {info} (qbuf initial bytes: {})",
        String::from_utf8_lossy(&initial)
    ));
}

/// What a connection reads with, lent to [`write_reading_meanwhile`].
struct Reading<'a> {
    decoder: &'a mut RequestDecoder,
    input: &'a mut BytesMut,
    query_limit: &'a mut usize,
    turn: &'a mut Turn,
}

/// What woke [`write_reading_meanwhile`].
enum Event {
    Wrote(usize),
    Read(usize),
    Woken,
}

/// Written replies kept at the front of a stuck output buffer before they are dropped.
const WRITTEN_KEPT: usize = 64 * 1024;

/// Writes `output`, unless the client is killed first. While the peer does not take it all
/// (its socket is full: it stopped reading, or reads slowly), the connection goes on reading
/// and running the peer's requests, their replies appended to `output`, as Redis goes on
/// reading a client whose replies pile up: what piles up is memory the client uses (CLIENT
/// LIST's `omem` and `tot-mem`, through [`ClientHandle::set_held`]), which the output-buffer
/// limits and `maxmemory-clients` act on. A write the socket takes at once costs what a plain
/// write does: the reading starts only once the socket said it is full.
async fn write_reading_meanwhile<S: Transport>(
    stream: &mut S,
    shared: &Shared,
    handle: &ClientHandle,
    output: &mut BytesMut,
    reading: &mut Reading<'_>,
) -> io::Result<Wrote> {
    let mut woken = false;
    let mut pos = 0;
    let mut stuck = false;
    while pos < output.len() {
        if handle.is_killed() {
            handle.set_held(0);
            return Ok(Wrote::Killed);
        }
        let may_read =
            stuck && !reading.turn.closing && !handle.is_blocked() && !handle.is_closing();
        if may_read {
            give_back_room(handle, reading.input, reading.decoder.pending_bulk());
        }
        let input = &mut *reading.input;
        let event = std::future::poll_fn(|cx| {
            use std::task::Poll;
            let unwritten = &output[pos..];
            if let Poll::Ready(written) = std::pin::Pin::new(&mut *stream).poll_write(cx, unwritten)
            {
                return Poll::Ready(written.map(Event::Wrote));
            }
            if may_read {
                if let Poll::Ready(read) = poll_read_into(stream, cx, input) {
                    return Poll::Ready(read.map(Event::Read));
                }
            }
            if handle.poll_notified(cx).is_ready() {
                return Poll::Ready(Ok(Event::Woken));
            }
            Poll::Pending
        })
        .await?;
        match event {
            Event::Wrote(0) => return Err(io::ErrorKind::WriteZero.into()),
            Event::Wrote(n) => pos += n,
            Event::Read(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Event::Read(n) => {
                if !took_input(shared, handle, reading.input, n, *reading.query_limit) {
                    handle.set_held(0);
                    return Ok(Wrote::Killed);
                }
                run_more_requests(shared, handle, output, reading);
            }
            Event::Woken => {
                woken = true;
                if stuck {
                    take_outbox_held(handle, output);
                    // A released client runs the requests it read meanwhile.
                    run_more_requests(shared, handle, output, reading);
                }
            }
        }
        // A command that closed the client (output-buffer limits, eviction) dropped its output.
        pos = pos.min(output.len());
        if !stuck && pos < output.len() {
            // The socket is full: from now on the output is held here, the outbox's part of
            // it too, and the peer's requests are read meanwhile.
            stuck = true;
            handle.wrote(std::mem::take(&mut reading.turn.from_outbox));
        }
        if stuck {
            // Written output is given back once it is as much as what is left: the rest moves
            // to a buffer of its own size (copying at most what was written). Split off in
            // place, it kept the whole allocation alive, which held two to three times the
            // bytes CLIENT LIST counted for a slow reader, and `maxmemory` evicted keys for
            // memory `maxmemory-clients` did not see.
            if pos >= WRITTEN_KEPT && pos >= output.len() - pos {
                shared.engine.borrow_mut().count_output(pos);
                let rest = &output[pos..];
                let mut kept = BytesMut::with_capacity(rest.len().max(KEPT_OUTPUT_CAPACITY));
                kept.extend_from_slice(rest);
                *output = kept;
                pos = 0;
            }
            handle.set_held(output.len() - pos);
        }
    }
    if stuck {
        handle.set_held(0);
        // Requests read meanwhile and not run yet: the caller's next turn runs them.
        reading.turn.more_waiting = true;
    }
    Ok(Wrote::All { woken })
}

/// The requests a connection with held output read, run (see [`write_reading_meanwhile`]).
fn run_more_requests(
    shared: &Shared,
    handle: &ClientHandle,
    output: &mut BytesMut,
    reading: &mut Reading<'_>,
) {
    if handle.is_blocked() || reading.turn.closing {
        return;
    }
    let mut engine = shared.engine.borrow_mut();
    let mut turn = Turn::default();
    // Its outbox's output is taken into `output` by the requests' run: held from now on.
    run_requests(
        &mut engine,
        handle,
        reading.decoder,
        reading.input,
        output,
        reading.query_limit,
        &mut turn,
    );
    handle.wrote(turn.from_outbox);
    reading.turn.ran += turn.ran;
    reading.turn.closing |= turn.closing;
    // These replies join output that is being written: the AOF gets their writes first, as
    // any reply leaves only after its write (under `appendfsync always`, after its fsync).
    if engine.ks.stream.aof_pending() {
        let Engine { ks, server, .. } = &mut *engine;
        crate::services::aof::flush(ks, server);
    }
    if engine.server.crashed {
        // The write could not be persisted under `always`: no reply may leave.
        handle.kill();
    }
    shared.after_work(&mut engine);
}

/// Moves out-of-turn output to a stuck connection's held output.
fn take_outbox_held(handle: &ClientHandle, output: &mut BytesMut) {
    if handle.has_outbox() {
        let n = handle.take_outbox_into(output);
        handle.wrote(n);
    }
}

/// Reads what `stream` has into `input`'s spare room (tokio's `read_buf` as a poll).
fn poll_read_into<S: AsyncRead + Unpin>(
    stream: &mut S,
    cx: &mut std::task::Context<'_>,
    input: &mut BytesMut,
) -> std::task::Poll<io::Result<usize>> {
    use bytes::BufMut;
    if !input.has_remaining_mut() || input.capacity() == input.len() {
        input.reserve(READ_CHUNK);
    }
    let spare = input.spare_capacity_mut();
    let mut buf = tokio::io::ReadBuf::uninit(spare);
    match std::pin::Pin::new(stream).poll_read(cx, &mut buf) {
        std::task::Poll::Ready(Ok(())) => {
            let n = buf.filled().len();
            // SAFETY: `poll_read` initialised the first `n` bytes of the spare room.
            unsafe { input.set_len(input.len() + n) };
            std::task::Poll::Ready(Ok(n))
        }
        std::task::Poll::Ready(Err(e)) => std::task::Poll::Ready(Err(e)),
        std::task::Poll::Pending => std::task::Poll::Pending,
    }
}

/// How [`write_unless_killed`] ended.
pub(crate) enum Wrote {
    /// Everything was written; `woken` if the handle's notification fired meanwhile (the caller
    /// must look for new work instead of waiting for the next one).
    All { woken: bool },
    /// The executor closed the client (e.g. over its output-buffer limit) before the peer took
    /// everything: give up on the rest.
    Killed,
}

/// Writes `bytes`, unless the client is killed first: a peer that stops reading must not keep
/// its connection task, and so its connection, alive forever.
pub(crate) async fn write_unless_killed<S: AsyncWrite + Unpin>(
    stream: &mut S,
    mut bytes: &[u8],
    handle: &ClientHandle,
) -> io::Result<Wrote> {
    let mut woken = false;
    while !bytes.is_empty() {
        if handle.is_killed() {
            return Ok(Wrote::Killed);
        }
        tokio::select! {
            biased;
            written = stream.write(bytes) => {
                let n = written?;
                if n == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                bytes = &bytes[n..];
            }
            _ = handle.notified() => woken = true,
        }
    }
    Ok(Wrote::All { woken })
}

/// Flushes what the stream buffers (TLS records a full socket did not take), unless the client
/// is killed first, as [`write_unless_killed`] writes.
pub(crate) async fn flush_unless_killed<S: AsyncWrite + Unpin>(
    stream: &mut S,
    handle: &ClientHandle,
) -> io::Result<Wrote> {
    let mut woken = false;
    loop {
        if handle.is_killed() {
            return Ok(Wrote::Killed);
        }
        tokio::select! {
            biased;
            flushed = stream.flush() => {
                flushed?;
                return Ok(Wrote::All { woken });
            }
            _ = handle.notified() => woken = true,
        }
    }
}

/// Runs the embedding process's closures against the engine (see
/// [`crate::io::server::ServerHandle::with_engine`]), each between two connection turns like a
/// command, followed by the same hand-over of out-of-turn output a command gets: a closure's
/// write that released a blocked client must reach that client's connection.
pub async fn run_engine_jobs(
    mut jobs: tokio::sync::mpsc::UnboundedReceiver<crate::io::startup::EngineJob>,
    shared: Rc<Shared>,
) {
    while let Some(job) = jobs.recv().await {
        let mut engine = shared.engine.borrow_mut();
        job(&mut engine);
        shared.after_work(&mut engine);
    }
}

/// Drives a background save or AOF rewrite ([`crate::model::snapshot`]) between the connections' turns: a slice of
/// about half a millisecond of walking, then the other tasks run (`yield_now` puts this one at
/// the back of the queue), so clients see at most that much added latency while a snapshot of
/// any size is taken. When the writer thread falls behind, it waits for it instead.
pub async fn run_snapshots(shared: Rc<Shared>) {
    const SLICE: Duration = Duration::from_micros(500);
    loop {
        shared.snapshot.notified().await;
        loop {
            let (running, waiting, progress) = {
                let mut engine = shared.engine.borrow_mut();
                let Engine { ks, server, .. } = &mut *engine;
                let running = crate::services::rdb_saving::bgsave_step(ks, server, SLICE)
                    | crate::services::aof::rewrite_step(ks, server, SLICE);
                let waiting = crate::services::rdb_saving::bgsave_waiting(server)
                    || crate::services::aof::rewrite_waiting(server);
                // What to wait on: the writer of the job that waits (a BGSAVE's first).
                let progress = server
                    .persistence
                    .bgsave
                    .as_ref()
                    .filter(|job| job.walk.waiting())
                    .map(|job| job.walk.writer_signal())
                    .or_else(|| {
                        server
                            .aof
                            .rewrite
                            .as_ref()
                            .filter(|job| job.walk.waiting())
                            .map(|job| job.walk.writer_signal())
                    });
                (running, waiting, progress)
            };
            if !running {
                break;
            }
            if waiting {
                // The writer signals when its queue runs low or it ends; the timer is a bound
                // for the case of two jobs waiting on different writers.
                let timeout = tokio::time::sleep(Duration::from_millis(5));
                match progress {
                    Some(progress) => {
                        tokio::select! {
                            _ = progress.notified() => {}
                            _ = timeout => {}
                        }
                    }
                    None => timeout.await,
                }
            } else {
                tokio::task::yield_now().await;
            }
        }
    }
}
