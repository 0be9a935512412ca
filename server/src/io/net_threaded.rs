//! The `io-threads N > 1` mode: connection I/O and request parsing on a pool of N tokio worker
//! threads, the [`Engine`] alone on a dedicated executor thread, batches of requests handed over a
//! channel.
//!
//! This is Redis's threaded-I/O idea in our architecture, kept so that the choice of the default
//! can be measured rather than assumed. On the 2-core benchmark machine it loses to the
//! single-thread mode (see BENCHMARKS.md): every batch costs a wake-up of the executor thread and a
//! wake-up of the connection's thread, which is more CPU than parsing saves, and the threads
//! compete with redis-benchmark for the two cores. It may pay off with many cores and large
//! values.
//!
//! The executor thread runs a single-threaded tokio runtime of its own: besides the loop that
//! runs the connections' batches, it hosts the tasks that must own the engine between awaits —
//! a replica's link to its primary and the cluster bus — exactly as the single-threaded server
//! hosts them.
//!
//! Ordering is kept per connection: a task sends one batch, waits until the executor has run all
//! of it (a blocked client's remaining requests wait in the executor's queue), writes the output
//! and only then reads and sends more.

use bytes::{Bytes, BytesMut};
use embedis_protocol::RequestDecoder;
use std::cell::{Ref, RefCell, RefMut};
use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

use crate::engine::{Engine, Outcome};
use crate::io::direct::Dataset;
use crate::io::primary_link::EngineCell;
use crate::io::startup::{
    finish, new_engine, prepare, wait_for_shutdown, EngineJob, Prepared, ServerOptions, Start,
};
use crate::kernel::gates::Refusal;
use crate::model::client::{ClientHandle, ClientId, Peer};

/// `proto-max-bulk-len` and `client-query-buffer-limit` as they were when the connection was
/// accepted: the connection's thread cannot read the executor's configuration, so a CONFIG SET
/// of either reaches only later connections in this mode.
#[derive(Clone, Copy)]
struct InputLimits {
    max_bulk: usize,
    query_buffer: usize,
}

type Sender<T> = UnboundedSender<T>;

enum ToExecutor {
    Connect {
        peer: Peer,
        fd: i32,
        reply: oneshot::Sender<Result<(Arc<ClientHandle>, InputLimits), Refusal>>,
    },
    Requests {
        id: ClientId,
        requests: Vec<Vec<Bytes>>,
        input_bytes: usize,
    },
    Output {
        bytes: usize,
    },
    Disconnect {
        id: ClientId,
    },
    ClockChanged,
    /// A closure of the embedding process (see [`crate::io::server::ServerHandle::with_engine`]).
    Job(EngineJob),
    Stop,
}

pub(crate) async fn serve(options: ServerOptions, start: Start) -> io::Result<Dataset> {
    let Start {
        data,
        mut jobs,
        shutdown,
        ready,
    } = start;
    let mut prepared = prepare(&options, &ready)?;
    let mut engine = new_engine(&options, &mut prepared, data, &ready)?;
    let (listener_tx, mut listener_rx) =
        tokio::sync::mpsc::unbounded_channel::<Vec<std::net::TcpListener>>();
    engine.server.listeners = Some(crate::base::listeners::ListenerControl::new(
        listener_tx,
        &prepared.tcp,
    ));
    let (tls_listener_tx, tls_listener_rx) =
        tokio::sync::mpsc::unbounded_channel::<Vec<std::net::TcpListener>>();
    engine.server.tls_listeners = Some(crate::base::listeners::ListenerControl::new(
        tls_listener_tx,
        &prepared.tls,
    ));
    let tls_shared = engine.server.tls.clone();
    let Prepared {
        log,
        tcp,
        tls,
        unix,
        bound,
        ..
    } = prepared;
    let (tx, rx) = unbounded_channel::<ToExecutor>();
    // Set before the message that wakes the executor: a command already queued catches up too.
    let clock_changed = engine.server.clock_changed.clone();
    let executor_shutdown = shutdown.clone();
    let seed = options.seed;
    // The bus listens on the client listener's address, as in the single-threaded server.
    let bus_ip = options.config.cluster.enabled.then(|| {
        bound
            .tcp_addr
            .map_or(std::net::Ipv4Addr::LOCALHOST.into(), |a| a.ip())
    });
    let executor = std::thread::Builder::new()
        .name("embedis-exec".into())
        .spawn(move || {
            embedis_datatypes::hash_seed::seed_this_thread(seed);
            run_executor(engine, rx, executor_shutdown, bus_ip)
        })?;
    let clock_tx = std::sync::Mutex::new(tx.clone());
    options.clock.on_change(Arc::new(move || {
        clock_changed.store(true, Ordering::Release);
        if let Ok(tx) = clock_tx.lock() {
            let _ = tx.send(ToExecutor::ClockChanged);
        }
    }));
    // The embedding process's closures join the executor's queue like any request.
    let job_tx = tx.clone();
    tokio::spawn(async move {
        while let Some(job) = jobs.recv().await {
            if job_tx.send(ToExecutor::Job(job)).is_err() {
                break;
            }
        }
    });
    log.warning("Server initialized");
    log.notice(&format!(
        "Threaded I/O: {} I/O threads and one executor thread",
        options.config.io_threads
    ));
    // A pause or drop set from outside (the Rust API) needs the executor at once.
    let faults_tx = std::sync::Mutex::new(tx.clone());
    options.faults.on_change(Arc::new(move || {
        if let Ok(tx) = faults_tx.lock() {
            let _ = tx.send(ToExecutor::ClockChanged);
        }
    }));
    // Accept on the current listeners; CONFIG SET port / bind sends replacements.
    let accept_tx = tx.clone();
    let keepalive = options.config.tcp_keepalive;
    tokio::spawn(async move {
        let spawn_all =
            |listeners: Vec<std::net::TcpListener>| -> Vec<tokio::task::JoinHandle<()>> {
                listeners
                    .into_iter()
                    .filter_map(|l| tokio::net::TcpListener::from_std(l).ok())
                    .map(|listener| {
                        tokio::spawn(accept_tcp(listener, accept_tx.clone(), keepalive))
                    })
                    .collect()
            };
        let mut running = spawn_all(tcp);
        while let Some(next) = listener_rx.recv().await {
            for task in running.drain(..) {
                task.abort();
            }
            running = spawn_all(next);
        }
    });
    // The TLS port's listeners, likewise (CONFIG SET tls-port).
    tokio::spawn(manage_tls_listeners(
        tls,
        tls_listener_rx,
        tx.clone(),
        keepalive,
        tls_shared,
    ));
    if let Some(listener) = unix {
        let tx = tx.clone();
        let path = options.config.unixsocket.clone();
        tokio::spawn(async move {
            use std::os::fd::AsRawFd;
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let fd = stream.as_raw_fd();
                tokio::spawn(serve_connection(
                    stream,
                    tx.clone(),
                    Peer::Unix { path: path.clone() },
                    fd,
                ));
            }
        });
    }
    log.notice("Ready to accept connections");
    if let Some(ready) = ready {
        let _ = ready.send(Ok(bound));
    }
    wait_for_shutdown(&shutdown).await;
    let _ = tx.send(ToExecutor::Stop);
    let data = tokio::task::spawn_blocking(move || executor.join()).await;
    let data = match data {
        Ok(Ok(data)) => data?,
        _ => return Err(io::Error::other("the executor thread panicked")),
    };
    finish(&options.config, &log);
    Ok(data)
}

async fn accept_tcp(listener: tokio::net::TcpListener, tx: Sender<ToExecutor>, keepalive: u64) {
    loop {
        let (stream, fd, addr, local) =
            crate::base::listeners::accept_tcp(&listener, || keepalive).await;
        tokio::spawn(serve_connection(
            stream,
            tx.clone(),
            Peer::Tcp { addr, local },
            fd,
        ));
    }
}

async fn manage_tls_listeners(
    initial: Vec<std::net::TcpListener>,
    mut replacements: tokio::sync::mpsc::UnboundedReceiver<Vec<std::net::TcpListener>>,
    tx: Sender<ToExecutor>,
    keepalive: u64,
    tls: crate::base::tls::TlsShared,
) {
    let spawn_all = |listeners: Vec<std::net::TcpListener>| -> Vec<tokio::task::JoinHandle<()>> {
        listeners
            .into_iter()
            .filter_map(|l| tokio::net::TcpListener::from_std(l).ok())
            .map(|l| tokio::spawn(accept_tls(l, tx.clone(), keepalive, tls.clone())))
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

/// Accepts TLS connections: the handshake runs on the connection's own task, then it is served
/// like any other.
async fn accept_tls(
    listener: tokio::net::TcpListener,
    tx: Sender<ToExecutor>,
    keepalive: u64,
    tls: crate::base::tls::TlsShared,
) {
    loop {
        let (stream, fd, addr, local) =
            crate::base::listeners::accept_tcp(&listener, || keepalive).await;
        let Some(acceptor) = tls.acceptor() else {
            continue;
        };
        let tx = tx.clone();
        tokio::spawn(async move {
            if let Ok(stream) = acceptor.accept(stream).await {
                serve_connection(stream, tx, Peer::Tcp { addr, local }, fd).await;
            }
        });
    }
}

/// Runs the engine until told to stop; returns it (its data outlives the server).
/// The engine as the executor thread's tasks share it: the loop borrows it for a turn, the
/// replica link and the bus between their awaits.
struct Executor {
    engine: RefCell<Engine>,
    /// Woken by a side task's work: the loop then runs the clients it may have released.
    work: Notify,
}

impl EngineCell for Executor {
    fn engine(&self) -> RefMut<'_, Engine> {
        self.engine.borrow_mut()
    }

    fn engine_ref(&self) -> Ref<'_, Engine> {
        self.engine.borrow()
    }

    fn after_work(&self, engine: &mut Engine) {
        engine.flush_pending();
        self.work.notify_one();
    }
}

/// The executor thread: its runtime, the side tasks, the loop; then the data, saved as on any
/// stop and taken out of the engine.
fn run_executor(
    engine: Engine,
    rx: UnboundedReceiver<ToExecutor>,
    shutdown: Arc<Notify>,
    bus_ip: Option<IpAddr>,
) -> io::Result<Dataset> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let executor = Rc::new(Executor {
        engine: RefCell::new(engine),
        work: Notify::new(),
    });
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        tokio::task::spawn_local(crate::io::primary_link::run(executor.clone()));
        tokio::task::spawn_local(crate::io::rdb_pipe::run(executor.clone()));
        if let Some(ip) = bus_ip {
            tokio::task::spawn_local(crate::io::cluster_bus::run(executor.clone(), ip));
        }
        executor_loop(&executor, rx, shutdown).await;
    });
    let mut engine = executor.engine.borrow_mut();
    crate::io::startup::save_on_stop(&mut engine);
    Ok(Dataset::take(&mut engine))
}

/// The clients' requests as the executor holds them between turns.
#[derive(Default)]
struct Queues {
    queues: HashMap<ClientId, VecDeque<Vec<Bytes>>>,
    handles: HashMap<ClientId, Arc<ClientHandle>>,
    /// Clients whose last batch has not run whole yet.
    unfinished: HashSet<ClientId>,
}

async fn executor_loop(
    executor: &Executor,
    mut rx: UnboundedReceiver<ToExecutor>,
    shutdown: Arc<Notify>,
) {
    let mut clients = Queues::default();
    let mut next_tick = Instant::now();
    loop {
        let wake = {
            let engine = executor.engine.borrow();
            let mut wake = next_tick;
            if let Some(at) = engine.next_deadline() {
                let until = Duration::from_millis(
                    at.saturating_sub(engine.server.clock.now_ms())
                        .clamp(0, 3_600_000) as u64,
                );
                wake = wake.min(Instant::now() + until);
            }
            wake
        };
        let mut messages = Vec::new();
        tokio::select! {
            first = rx.recv() => match first {
                Some(m) => messages.push(m),
                None => return,
            },
            _ = tokio::time::sleep_until(wake) => {}
            _ = executor.work.notified() => {}
        }
        while let Ok(m) = rx.try_recv() {
            messages.push(m);
        }
        let mut engine = executor.engine.borrow_mut();
        for message in messages {
            if !take_message(&mut engine, &mut clients, message) {
                return;
            }
        }
        let period = Duration::from_micros(1_000_000 / engine.server.config.hz.max(1) as u64);
        if Instant::now() >= next_tick {
            // The tick covers a clock change too.
            engine.server.clock_changed.store(false, Ordering::Release);
            engine.cron();
            next_tick = Instant::now() + period;
        } else if engine.server.clock_changed.load(Ordering::Acquire) {
            engine.catch_up_with_clock();
            next_tick = Instant::now() + period;
        } else {
            engine.process_timeouts();
        }
        run_ready_clients(&mut engine, &mut clients);
        if engine.server.shutdown.is_some() {
            shutdown.notify_one();
        }
    }
}

/// One message from the I/O threads or the embedding process; false for Stop.
fn take_message(engine: &mut Engine, clients: &mut Queues, message: ToExecutor) -> bool {
    match message {
        ToExecutor::Connect { peer, fd, reply } => {
            let result = engine.connect(peer, fd);
            if let Ok(handle) = &result {
                clients.handles.insert(handle.id, handle.clone());
            }
            let config = &engine.server.config;
            let limits = InputLimits {
                max_bulk: config.proto_max_bulk_len as usize,
                query_buffer: config.client_query_buffer_limit as usize,
            };
            let _ = reply.send(result.map(|handle| (handle, limits)));
        }
        ToExecutor::Requests {
            id,
            requests,
            input_bytes,
        } => {
            engine.count_input(id, input_bytes, 0);
            clients.queues.entry(id).or_default().extend(requests);
            clients.unfinished.insert(id);
        }
        ToExecutor::Output { bytes } => engine.count_output(bytes),
        ToExecutor::Disconnect { id } => {
            clients.queues.remove(&id);
            clients.unfinished.remove(&id);
            clients.handles.remove(&id);
            engine.disconnect(id);
        }
        // The listener set the engine's flag; the message only wakes the loop.
        ToExecutor::ClockChanged => {}
        ToExecutor::Job(job) => job(engine),
        ToExecutor::Stop => return false,
    }
    true
}

/// Runs every client that has requests and is not blocked, until none is left: a command may
/// release another client (CLIENT UNPAUSE), whose queue then resumes at once. Out-of-turn output
/// (a released client's reply) is flushed before that client's next replies, so each connection
/// sees its replies in order. Then completes the batches that ran whole.
fn run_ready_clients(engine: &mut Engine, clients: &mut Queues) {
    let Queues {
        queues,
        handles,
        unfinished,
    } = clients;
    loop {
        engine.flush_pending();
        let ready: Vec<ClientId> = queues
            .iter()
            .filter(|(id, q)| !q.is_empty() && handles.get(id).is_some_and(|h| !h.is_blocked()))
            .map(|(id, _)| *id)
            .collect();
        if ready.is_empty() {
            break;
        }
        for id in ready {
            run_queue(engine, id, handles, queues);
        }
    }
    engine.flush_pending();
    // A batch is complete once all its requests ran (none left queued, client not blocked).
    unfinished.retain(|id| {
        let Some(handle) = handles.get(id) else {
            return false;
        };
        let done = !handle.is_blocked() && queues.get(id).is_none_or(VecDeque::is_empty);
        if done {
            handle.complete_batch();
        }
        !done
    });
    engine.flush_pending();
}

/// Runs a client's queued requests until it blocks or none is left, and hands over the output.
fn run_queue(
    engine: &mut Engine,
    id: ClientId,
    handles: &HashMap<ClientId, Arc<ClientHandle>>,
    queues: &mut HashMap<ClientId, VecDeque<Vec<Bytes>>>,
) {
    let (Some(handle), Some(queue)) = (handles.get(&id), queues.get_mut(&id)) else {
        return;
    };
    let mut out = BytesMut::new();
    let mut close = false;
    // Requests left whose keys were prefetched, a batch at a time (see `net::run_requests`).
    let mut prefetched = 0;
    while !handle.is_blocked() {
        let Some(args) = queue.pop_front() else { break };
        if prefetched == 0 && !queue.is_empty() {
            let batch = std::iter::once(&args)
                .chain(queue.iter())
                .map(Vec::as_slice);
            prefetched = engine.prefetch_requests(id, batch);
        }
        prefetched = prefetched.saturating_sub(1);
        let outcome = engine.execute(id, args, &mut out);
        // The decoders run on the I/O threads: the spare vector is not theirs to reuse.
        drop(engine.take_spare_args());
        if outcome == Outcome::Close {
            close = true;
            queue.clear();
            break;
        }
    }
    // The AOF before the replies leave (see `net::run_connection`).
    if engine.ks.stream.aof_pending() {
        let Engine { ks, server, .. } = &mut *engine;
        crate::services::aof::flush(ks, server);
    }
    if engine.server.crashed {
        // The write could not be persisted under `always`: nothing is acknowledged.
        handle.kill();
        return;
    }
    if !out.is_empty() {
        handle.deliver(&out);
    }
    if close {
        // After the delivery: the task writes QUIT's reply, then closes.
        handle.close_after_output();
    }
}

async fn serve_connection<S>(mut stream: S, tx: Sender<ToExecutor>, peer: Peer, fd: i32)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (reply_tx, reply_rx) = oneshot::channel();
    if tx
        .send(ToExecutor::Connect {
            peer,
            fd,
            reply: reply_tx,
        })
        .is_err()
    {
        return;
    }
    let (handle, limits) = match reply_rx.await {
        Ok(Ok(accepted)) => accepted,
        Ok(Err(Refusal::Reply(line))) => {
            let _ = stream.write_all(line.as_bytes()).await;
            return;
        }
        Err(_) => return,
    };
    let _ = run_connection(&mut stream, &tx, &handle, limits).await;
    let _ = tx.send(ToExecutor::Disconnect { id: handle.id });
}

async fn run_connection<S>(
    stream: &mut S,
    tx: &Sender<ToExecutor>,
    handle: &Arc<ClientHandle>,
    limits: InputLimits,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut input = BytesMut::with_capacity(crate::io::net::READ_CHUNK);
    let mut decoder = RequestDecoder::new(limits.max_bulk);
    let mut sent: u64 = 0;
    let mut pending_input = 0usize;
    // Set when a wake-up was taken while writing: look for work before waiting again.
    let mut woken = false;
    loop {
        let mut batch = Vec::new();
        let mut protocol_error = None;
        loop {
            match decoder.decode(&mut input, handle.is_authenticated()) {
                Ok(Some(args)) => batch.push(args),
                Ok(None) => break,
                Err(e) => {
                    protocol_error = Some(e);
                    break;
                }
            }
        }
        if !batch.is_empty() {
            sent += 1;
            let requests = std::mem::take(&mut batch);
            let input_bytes = std::mem::take(&mut pending_input);
            if tx
                .send(ToExecutor::Requests {
                    id: handle.id,
                    requests,
                    input_bytes,
                })
                .is_err()
            {
                return Ok(());
            }
            // Wait for the whole batch, writing output as it comes (a blocked request may take long).
            while handle.completed_batches() < sent && !handle.is_killed() && !handle.is_closing() {
                if !std::mem::take(&mut woken) {
                    handle.notified().await;
                }
                woken = write_outbox(stream, tx, handle).await?;
            }
        }
        woken |= write_outbox(stream, tx, handle).await?;
        if let Some(error) = protocol_error {
            stream.write_all(&error.to_resp()).await?;
            return Ok(());
        }
        if handle.is_killed() || handle.is_closing() {
            // A closing client's output, all delivered before the flag was set, is written.
            if handle.is_closing() && !handle.is_killed() {
                write_outbox(stream, tx, handle).await?;
            }
            return Ok(());
        }
        if std::mem::take(&mut woken) {
            continue;
        }
        // A whole pipeline per read (see `crate::io::net::READ_CHUNK`).
        input.reserve(crate::io::net::READ_CHUNK);
        tokio::select! {
            read = stream.read_buf(&mut input) => {
                let n = read?;
                if n == 0 {
                    return Ok(());
                }
                pending_input += n;
                if input.len() > limits.query_buffer {
                    // Redis's log line needs the executor's view of the client; the close,
                    // without a reply, is what the peer sees (see `net::run_connection`).
                    return Ok(());
                }
            }
            _ = handle.notified() => woken = write_outbox(stream, tx, handle).await?,
        }
    }
}

/// Writes what the executor delivered. Returns true if the handle was notified meanwhile (or
/// the client was killed): the caller must look again before waiting.
async fn write_outbox<S: AsyncWrite + Unpin>(
    stream: &mut S,
    tx: &Sender<ToExecutor>,
    handle: &ClientHandle,
) -> io::Result<bool> {
    let out = handle.take_outbox();
    if out.is_empty() {
        return Ok(false);
    }
    let wrote = match crate::io::net::write_unless_killed(stream, &out, handle).await? {
        // TLS may keep the last records when the socket was full (a no-op on plain TCP).
        crate::io::net::Wrote::All { woken } => {
            match crate::io::net::flush_unless_killed(stream, handle).await? {
                crate::io::net::Wrote::All { woken: flushed } => crate::io::net::Wrote::All {
                    woken: woken || flushed,
                },
                killed => killed,
            }
        }
        killed => killed,
    };
    match wrote {
        crate::io::net::Wrote::Killed => Ok(true),
        crate::io::net::Wrote::All { woken } => {
            handle.wrote(out.len());
            let _ = tx.send(ToExecutor::Output { bytes: out.len() });
            Ok(woken)
        }
    }
}
