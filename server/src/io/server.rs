//! Starting and stopping a server: [`ServerOptions`] → [`start`] (on its own thread, for
//! in-process use) or [`run`] (on the calling thread, for the `embedis-server` binary).
//!
//! With `io-threads 1` (the default) a server is one OS thread running a single-threaded tokio
//! runtime that owns the engine, the listeners, every connection task and the timer ([`crate::io::net`]).
//! With `io-threads N > 1`, connection I/O runs on N threads and the engine on its own thread
//! ([`crate::io::net_threaded`]). Several servers in one process are fully independent (Redlock tests
//! run five). The [`ServerHandle`] stops its server when asked or when dropped.
//!
//! The embedding process reaches the engine through the handle: [`ServerHandle::with_engine`]
//! sends a closure over a channel to the thread that owns the engine and waits for its result
//! (the engine is never shared, so this is the only way in). [`ServerHandle::stop`] hands back
//! the server's data as a [`Dataset`], which [`start_with`] loads into a new server — a restart
//! with the data kept, as Redis reloads its RDB file.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::net::UnixListener;
use tokio::sync::Notify;

use crate::base::clock::Clock;
use crate::base::config::Config;
use crate::base::listeners::{bind_tcp, ListenerControl};
use crate::base::log::Logger;
use crate::engine::Engine;
use crate::io::direct::Dataset;
use crate::io::net::{accept_unix, manage_tcp_listeners, Shared};
use crate::model::fault_rules::Faults;

/// How to start a server. The default: Redis's default configuration on the system clock.
#[derive(Clone, Default)]
pub struct ServerOptions {
    pub config: Config,
    /// Bind an OS-chosen free port instead of `config.port` (`--port auto`).
    pub ephemeral_port: bool,
    /// Bind an OS-chosen free port instead of `config.tls.port` (`--tls-port auto`).
    pub ephemeral_tls_port: bool,
    pub clock: Clock,
    /// `None`: log as the config says (logfile or stdout).
    pub logger: Option<Logger>,
    /// Seed for the server's random choices (RANDOMKEY, run id…); `None` = from entropy.
    pub seed: Option<u64>,
    pub config_file: Option<String>,
    /// Stop on SIGINT / SIGTERM (the binary; not servers inside a test process).
    pub handle_signals: bool,
    /// Fault rules (see [`crate::model::fault_rules`]); the handle shares them.
    pub faults: Faults,
    /// Load `dir/dbfilename` before serving, if it exists (the binary, as Redis; an in-process
    /// server given a directory).
    pub load_at_start: bool,
    /// Load the RDB file in slices while serving, answering `-LOADING` meanwhile (the binary, as
    /// Redis does); otherwise the server starts serving once it is loaded.
    pub load_in_background: bool,
}

/// A closure the embedding process runs on the engine's thread (see
/// [`ServerHandle::with_engine`]).
pub type EngineJob = Box<dyn FnOnce(&mut Engine) + Send>;

/// The sending end of a server's job channel.
pub(crate) type Jobs = tokio::sync::mpsc::UnboundedSender<EngineJob>;
/// The receiving end, served by the thread that owns the engine.
pub(crate) type JobQueue = tokio::sync::mpsc::UnboundedReceiver<EngineJob>;

/// A running server.
pub struct ServerHandle {
    tcp_addr: Option<SocketAddr>,
    tls_addr: Option<SocketAddr>,
    unix_path: Option<String>,
    clock: Clock,
    faults: Faults,
    shutdown: Arc<Notify>,
    jobs: Jobs,
    thread: Option<JoinHandle<io::Result<Dataset>>>,
}

impl ServerHandle {
    /// The first TCP address the server listens on, if it has a TCP listener.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }

    /// The first address of the TLS port, if the server has one.
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.tls_addr
    }

    /// The path of the unix socket the server listens on, if any.
    pub fn unix_socket(&self) -> Option<&str> {
        self.unix_path.as_deref()
    }

    /// The clock the server runs on.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The server's fault rules.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Stops the server and waits for its thread to finish.
    pub fn shutdown(&mut self) {
        self.stop();
    }

    /// Stops the server, waits for its thread to finish and returns its data (None if it had
    /// already stopped, or failed). Clients are disconnected. [`start_with`] loads the data into
    /// a new server.
    pub fn stop(&mut self) -> Option<Dataset> {
        self.shutdown.notify_one();
        self.thread.take()?.join().ok()?.ok()
    }

    /// Runs `job` on the thread that owns the engine, between two commands, and returns its
    /// result; None if the server has stopped. It waits while a script runs (the engine is
    /// busy) but not for blocked clients. Calling it from a server's own thread — inside another
    /// job — would wait forever.
    pub fn with_engine<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Engine) -> R + Send + 'static,
    ) -> Option<R> {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: EngineJob = Box::new(move |engine| {
            let _ = tx.send(job(engine));
        });
        self.jobs.send(job).ok()?;
        rx.recv().ok()
    }

    /// Waits until the server stops by itself (SHUTDOWN, signal).
    pub fn wait(mut self) -> io::Result<()> {
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("server thread panicked")))
                .map(drop),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Where the server ended up listening.
pub(crate) struct Bound {
    pub tcp_addr: Option<SocketAddr>,
    pub tls_addr: Option<SocketAddr>,
    pub unix_path: Option<String>,
}

type Ready = Option<mpsc::Sender<io::Result<Bound>>>;

/// Starts a server on a new thread; returns once it is listening.
pub fn start(options: ServerOptions) -> io::Result<ServerHandle> {
    start_with(options, None)
}

/// Starts a server on a new thread with `data` loaded (from [`ServerHandle::stop`]); returns
/// once it is listening.
pub fn start_with(options: ServerOptions, data: Option<Dataset>) -> io::Result<ServerHandle> {
    let shutdown = Arc::new(Notify::new());
    let clock = options.clock.clone();
    let faults = options.faults.clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (jobs, job_queue) = tokio::sync::mpsc::unbounded_channel();
    let thread_shutdown = shutdown.clone();
    let thread = std::thread::Builder::new()
        .name("embedis".into())
        .spawn(move || {
            let start = Start {
                data,
                jobs: job_queue,
                shutdown: thread_shutdown,
                ready: Some(ready_tx),
            };
            serve(options, start)
        })?;
    match ready_rx.recv() {
        Ok(Ok(bound)) => Ok(ServerHandle {
            tcp_addr: bound.tcp_addr,
            tls_addr: bound.tls_addr,
            unix_path: bound.unix_path,
            clock,
            faults,
            shutdown,
            jobs,
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err(thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("server thread panicked")))
            .err()
            .unwrap_or_else(|| io::Error::other("server stopped before listening"))),
    }
}

/// What a server starts from besides its options.
pub(crate) struct Start {
    /// Data to load (a restart).
    pub data: Option<Dataset>,
    /// The embedding process's closures (see [`ServerHandle::with_engine`]).
    pub jobs: JobQueue,
    pub shutdown: Arc<Notify>,
    pub ready: Ready,
}

/// Runs a server on the calling thread until it is shut down. `on_ready` is called with the
/// bound TCP address once listening (the binary prints the port for `--port auto`).
pub fn run(
    options: ServerOptions,
    on_ready: impl FnOnce(Option<SocketAddr>) + Send + 'static,
) -> io::Result<()> {
    let shutdown = Arc::new(Notify::new());
    let (ready_tx, ready_rx) = mpsc::channel::<io::Result<Bound>>();
    let waiter = std::thread::spawn(move || {
        if let Ok(Ok(bound)) = ready_rx.recv() {
            on_ready(bound.tcp_addr);
        }
    });
    // Nobody sends jobs to the binary's server: the channel closes at once.
    let (_, jobs) = tokio::sync::mpsc::unbounded_channel();
    let start = Start {
        data: None,
        jobs,
        shutdown,
        ready: Some(ready_tx),
    };
    let result = serve(options, start);
    let _ = waiter.join();
    result.map(drop)
}

fn report(ready: &Ready, e: io::Error) -> io::Error {
    if let Some(ready) = ready {
        let _ = ready.send(Err(io::Error::new(e.kind(), e.to_string())));
    }
    e
}

fn serve(options: ServerOptions, start: Start) -> io::Result<Dataset> {
    // The data is created on this thread (and, with io-threads, on the executor's): a seeded
    // server's hash tables must be laid out alike on every run.
    embedis_datatypes::hash_seed::seed_this_thread(options.seed);
    let threaded = options.config.io_threads > 1;
    let runtime = if threaded {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.config.io_threads)
            .thread_name("embedis-io")
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let runtime = runtime.map_err(|e| report(&start.ready, e))?;
    if threaded {
        runtime.block_on(crate::io::net_threaded::serve(options, start))
    } else {
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, serve_single_thread(options, start))
    }
}

/// What both I/O modes need before serving: a logger, the working directory, listeners.
pub(crate) struct Prepared {
    pub log: Logger,
    pub tcp: Vec<std::net::TcpListener>,
    /// The TLS port's listeners and the context they serve with.
    pub tls: Vec<std::net::TcpListener>,
    pub tls_context: Option<crate::base::tls::TlsContext>,
    pub unix: Option<UnixListener>,
    pub bound: Bound,
    /// Absolute path of the config file, if any.
    pub config_file: String,
}

/// Logs the start-up lines, changes directory, binds listeners and writes the pid file. Must run
/// inside the tokio runtime that will serve the listeners.
pub(crate) fn prepare(options: &ServerOptions, ready: &Ready) -> io::Result<Prepared> {
    let config = &options.config;
    let log = match &options.logger {
        Some(l) => l.clone(),
        None => Logger::open(&config.logfile, config.loglevel).map_err(|e| report(ready, e))?,
    };
    log.warning("oO0OoO0OoO0Oo embedis is starting oO0OoO0OoO0Oo");
    log.warning(&format!(
        "embedis version={}, Redis compatibility=7.0.15, bits=64, pid={}, just started",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    ));
    log.warning("Configuration loaded");
    log.set_serving();
    log.set_replica(options.config.replicaof.is_some());
    // Resolve the config file before changing directory: CONFIG REWRITE writes it later.
    let config_file = options
        .config_file
        .as_deref()
        .map(|f| {
            std::fs::canonicalize(f)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| f.to_string())
        })
        .unwrap_or_default();
    // Only the binary moves the process: a server inside a test process keeps its files under
    // `dir` by absolute path instead.
    if options.handle_signals && !config.dir.is_empty() && config.dir != "." {
        if let Err(e) = std::env::set_current_dir(&config.dir) {
            return Err(report(
                ready,
                io::Error::new(e.kind(), format!("Can't chdir to '{}': {e}", config.dir)),
            ));
        }
    }
    let listen_tcp = config.port != 0 || options.ephemeral_port;
    let tcp = if listen_tcp {
        bind_tcp(
            &config.bind,
            config.port,
            options.ephemeral_port,
            config.tcp_backlog,
        )
        .map_err(|e| {
            log.warning(&e.to_string());
            report(ready, e)
        })?
    } else {
        Vec::new()
    };
    if listen_tcp && tcp.is_empty() {
        let e = io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            "Failed listening on any bind address",
        );
        log.warning(&e.to_string());
        return Err(report(ready, e));
    }
    let tcp_addr = tcp.first().and_then(|l| l.local_addr().ok());
    // TLS, as Redis sets it up: a context whenever something uses TLS (a failure stops the
    // start), and the TLS port's listeners on the same addresses.
    let tls_context = if config.tls.wanted() || options.ephemeral_tls_port {
        match crate::base::tls::configure(&config.tls) {
            Ok(context) => Some(context),
            Err(e) => {
                log.warning(&e);
                log.warning("Failed to configure TLS. Check logs for more info.");
                return Err(report(ready, io::Error::other(e)));
            }
        }
    } else {
        None
    };
    let tls = if config.tls.port != 0 || options.ephemeral_tls_port {
        bind_tcp(
            &config.bind,
            config.tls.port,
            options.ephemeral_tls_port,
            config.tcp_backlog,
        )
        .map_err(|e| {
            log.warning(&e.to_string());
            report(ready, e)
        })?
    } else {
        Vec::new()
    };
    let tls_addr = tls.first().and_then(|l| l.local_addr().ok());
    let unix = if config.unixsocket.is_empty() {
        None
    } else {
        let _ = std::fs::remove_file(&config.unixsocket);
        let listener = UnixListener::bind(&config.unixsocket).map_err(|e| {
            let e = io::Error::new(e.kind(), format!("Failed opening Unix socket: {e}"));
            log.warning(&e.to_string());
            report(ready, e)
        })?;
        if config.unixsocketperm != 0 {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(
                &config.unixsocket,
                std::fs::Permissions::from_mode(config.unixsocketperm),
            );
        }
        Some(listener)
    };
    if !config.pidfile.is_empty() {
        let _ = std::fs::write(&config.pidfile, format!("{}\n", std::process::id()));
    }
    let port = tcp_addr.map_or(0, |a| a.port());
    let mode = if config.cluster.enabled {
        "cluster"
    } else {
        "standalone"
    };
    if config.always_show_logo {
        // Redis draws its logo here, with the mode, port and PID (its test harness finds the
        // server's PID in it); embedis says the same in one line of its own.
        log.notice(&format!(
            "embedis {} (Redis 7.0.15 compatible), {mode} mode, Port: {port}, PID: {}",
            env!("CARGO_PKG_VERSION"),
            std::process::id()
        ));
    } else {
        log.notice(&format!("Running mode={mode}, port={port}."));
    }
    let unix_path = (!config.unixsocket.is_empty()).then(|| config.unixsocket.clone());
    Ok(Prepared {
        log,
        tcp,
        tls,
        tls_context,
        unix,
        bound: Bound {
            tcp_addr,
            tls_addr,
            unix_path,
        },
        config_file,
    })
}

/// Creates the engine for a prepared server, with `data` loaded.
pub(crate) fn new_engine(
    options: &ServerOptions,
    prepared: &mut Prepared,
    data: Option<Dataset>,
    ready: &Ready,
) -> io::Result<Engine> {
    let mut engine = Engine::new(
        options.config.clone(),
        options.clock.clone(),
        prepared.log.clone(),
        options.seed,
    );
    let port = prepared.bound.tcp_addr.map_or(0, |a| a.port());
    engine.server.faults = options.faults.clone();
    engine.server.tcp_port = port;
    engine.server.config.port = port;
    engine.server.config_file = prepared.config_file.clone();
    {
        let Engine {
            server, registry, ..
        } = &mut engine;
        if let Err(e) = crate::commands::acl::load_at_start(server, registry) {
            prepared.log.warning(&e);
            return Err(report(ready, io::Error::other(e)));
        }
    }
    if let Some(addr) = prepared.bound.tls_addr {
        engine.server.config.tls.port = addr.port();
    }
    engine
        .server
        .tls
        .set_auth_clients(engine.server.config.tls.auth_clients);
    if let Some(context) = prepared.tls_context.take() {
        engine.server.tls.install(context);
    }
    if let Some(data) = data {
        data.restore(&mut engine);
    } else if options.load_at_start {
        // With the AOF on it is the dataset (an RDB file is ignored), as in Redis.
        let loaded = if engine.server.config.appendonly {
            crate::services::aof::load_at_start(&mut engine.parts())
                .map(drop)
                .map_err(|e| e.0)
        } else if options.load_in_background && options.config.io_threads <= 1 {
            // `serve_single_thread` loads it between turns (see `run_loading`).
            Ok(())
        } else {
            let Engine {
                ks,
                server,
                registry,
                ..
            } = &mut engine;
            crate::services::rdb_saving::load_at_start(ks, server, registry).map_err(|e| e.0)
        };
        if let Err(e) = loaded {
            prepared.log.warning(&e);
            return Err(report(ready, io::Error::other(e)));
        }
    }
    if engine.server.config.appendonly {
        let Engine { ks, server, .. } = &mut engine;
        if let Err(e) = crate::services::aof::open_on_start(ks, server) {
            prepared.log.warning(&e.0);
            return Err(report(ready, io::Error::other(e.0)));
        }
    }
    Ok(engine)
}

/// The save Redis makes when it stops (SIGTERM, or the embedding process stopping the server)
/// with save points set, unless SHUTDOWN already decided.
pub(crate) fn save_on_stop(engine: &mut Engine) {
    let server = &mut engine.server;
    // The AOF's last writes reach the disk before anything else.
    if server.aof.status != crate::model::aof_state::AofStatus::Off {
        crate::services::aof::rewrite_kill(&mut engine.ks, server);
        crate::services::aof::flush(&mut engine.ks, server);
        if let Some(appender) = &server.aof.appender {
            let _ = appender.sync();
        }
    }
    if server.persistence.shutdown_handled {
        return;
    }
    // A running BGSAVE stops (and removes its temporary file) whether or not a save follows.
    if crate::services::rdb_saving::bgsave_in_progress(server) {
        server
            .log
            .warning("There is a child saving an .rdb. Killing it!");
        crate::services::rdb_saving::bgsave_kill(&mut engine.ks, server);
    }
    if server.config.save_points.is_empty() {
        return;
    }
    server
        .log
        .notice("Saving the final RDB snapshot before exiting.");
    if crate::services::rdb_saving::save(&mut engine.ks, server).is_err() {
        server
            .log
            .warning("Error trying to save the DB, exiting anyway.");
    }
}

/// Logs the shutdown and removes the pid and socket files.
pub(crate) fn finish(config: &Config, log: &Logger) {
    log.warning("User requested shutdown...");
    if !config.pidfile.is_empty() {
        log.notice("Removing the pid file.");
        let _ = std::fs::remove_file(&config.pidfile);
    }
    if !config.unixsocket.is_empty() {
        log.notice("Removing the unix socket file.");
        let _ = std::fs::remove_file(&config.unixsocket);
    }
    log.warning("embedis is now ready to exit, bye bye...");
}

impl crate::io::cluster_bus::EngineCell for Shared {
    fn engine(&self) -> &RefCell<Engine> {
        &self.engine
    }
}

async fn serve_single_thread(options: ServerOptions, start: Start) -> io::Result<Dataset> {
    let Start {
        data,
        jobs,
        shutdown,
        ready,
    } = start;
    let mut prepared = prepare(&options, &ready)?;
    let mut engine = new_engine(&options, &mut prepared, data, &ready)?;
    let Prepared {
        log,
        tcp,
        tls,
        unix,
        bound,
        ..
    } = prepared;
    let (listener_tx, listener_rx) = tokio::sync::mpsc::unbounded_channel();
    engine.server.listeners = Some(ListenerControl::new(listener_tx));
    let (tls_listener_tx, tls_listener_rx) = tokio::sync::mpsc::unbounded_channel();
    engine.server.tls_listeners = Some(ListenerControl::new(tls_listener_tx));
    let tls_shared = engine.server.tls.clone();
    let config = options.config.clone();
    let clock_changed = engine.server.clock_changed.clone();
    let shared = Rc::new(Shared {
        engine: RefCell::new(engine),
        timer: Arc::new(Notify::new()),
        shutdown: shutdown.clone(),
        turn_end_wakes: RefCell::new(Vec::new()),
        turn_end: Notify::new(),
        snapshot: Notify::new(),
        uring: RefCell::new(None),
    });
    // `io-uring yes` at start: the ring now, so that a fallback to epoll shows at once.
    let _ = shared.ring_for_new_connection();

    // A change of a controllable clock runs expiry and timeouts at once: before the next
    // command, or by the timer if no command comes.
    let timer = shared.timer.clone();
    let flag = clock_changed.clone();
    options.clock.on_change(Arc::new(move || {
        flag.store(true, Ordering::Release);
        timer.notify_one();
    }));
    // A pause or drop set from outside (the Rust API) needs the timer at once.
    let timer = shared.timer.clone();
    options
        .faults
        .on_change(Arc::new(move || timer.notify_one()));

    log.warning("Server initialized");
    tokio::task::spawn_local(manage_tcp_listeners(tcp, listener_rx, shared.clone(), None));
    tokio::task::spawn_local(manage_tcp_listeners(
        tls,
        tls_listener_rx,
        shared.clone(),
        Some(tls_shared),
    ));
    if let Some(listener) = unix {
        log.notice(&format!(
            "The server is now ready to accept connections at {}",
            config.unixsocket
        ));
        tokio::task::spawn_local(accept_unix(
            listener,
            config.unixsocket.clone(),
            shared.clone(),
        ));
    }
    tokio::task::spawn_local(timer_task(shared.clone(), clock_changed));
    tokio::task::spawn_local(crate::io::net::wake_at_turn_end(shared.clone()));
    tokio::task::spawn_local(crate::io::net::run_engine_jobs(jobs, shared.clone()));
    tokio::task::spawn_local(crate::io::net::run_snapshots(shared.clone()));
    tokio::task::spawn_local(crate::io::primary_link::run(shared.clone()));
    if config.cluster.enabled {
        let ip = bound
            .tcp_addr
            .map_or(std::net::Ipv4Addr::LOCALHOST.into(), |a| a.ip());
        tokio::task::spawn_local(crate::io::cluster_bus::run(shared.clone(), ip));
    }
    if options.load_at_start && options.load_in_background && !config.appendonly {
        let opened = crate::services::rdb_saving::open_for_background_load(
            &mut shared.engine.borrow_mut().server,
        );
        match opened {
            Ok(Some((loading, count))) => {
                tokio::task::spawn_local(run_loading(shared.clone(), loading, count));
            }
            Ok(None) => {}
            Err(e) => {
                log.warning(&e.0);
                return Err(report(&ready, io::Error::other(e.0)));
            }
        }
    }
    log.notice("Ready to accept connections");
    if let Some(ready) = ready {
        let _ = ready.send(Ok(bound));
    }
    wait_for_shutdown(&shutdown, options.handle_signals, &log).await;
    // Nothing else runs on this thread now: the engine is free to give its data up.
    save_on_stop(&mut shared.engine.borrow_mut());
    let data = Dataset::take(&mut shared.engine.borrow_mut());
    finish(&config, &log);
    Ok(data)
}

pub(crate) async fn wait_for_shutdown(shutdown: &Notify, handle_signals: bool, log: &Logger) {
    if !handle_signals {
        shutdown.notified().await;
        return;
    }
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        shutdown.notified().await;
        return;
    };
    tokio::select! {
        _ = shutdown.notified() => {}
        _ = term.recv() => log.warning("Received SIGTERM scheduling shutdown..."),
        _ = int.recv() => log.warning("Received SIGINT scheduling shutdown..."),
    }
}

/// Runs the periodic tick at `hz`, and blocked-client / pause deadlines as they fall due.
async fn timer_task(shared: Rc<Shared>, clock_changed: Arc<AtomicBool>) {
    let mut next_tick = tokio::time::Instant::now();
    loop {
        let (period, wake_at) = {
            let engine = shared.engine.borrow();
            let period = Duration::from_micros(1_000_000 / engine.server.config.hz.max(1) as u64);
            let deadline = engine.next_deadline().map(|at| {
                let now = engine.server.clock.now_ms();
                tokio::time::Instant::now()
                    + Duration::from_millis(at.saturating_sub(now).clamp(0, 3_600_000) as u64)
            });
            (period, deadline)
        };
        let wake = match wake_at {
            Some(at) if at < next_tick => at,
            _ => next_tick,
        };
        tokio::select! {
            _ = tokio::time::sleep_until(wake) => {}
            _ = shared.timer.notified() => {}
        }
        let mut engine = shared.engine.borrow_mut();
        if tokio::time::Instant::now() >= next_tick {
            // The tick covers a clock change too.
            clock_changed.store(false, Ordering::Release);
            engine.cron();
            next_tick = tokio::time::Instant::now() + period;
        } else if clock_changed.load(Ordering::Acquire) {
            engine.catch_up_with_clock();
            next_tick = tokio::time::Instant::now() + period;
        } else {
            engine.process_timeouts();
        }
        // Released clients' replies and expiry's effects go out as any command's do.
        shared.after_work(&mut engine);
    }
}

/// Loads the RDB file in slices of 1,024 keys between the event loop's turns, as Redis serves
/// clients (with `-LOADING`) every so often while it loads. A file found corrupt half-way stops
/// the process, as Redis exits.
async fn run_loading(
    shared: Rc<Shared>,
    mut loading: crate::services::rdb_saving::Loading<crate::services::rdb_saving::CountingFile>,
    count: Rc<std::cell::Cell<u64>>,
) {
    let started = std::time::Instant::now();
    loop {
        let step = {
            let mut engine = shared.engine.borrow_mut();
            let Engine {
                ks,
                server,
                registry,
                ..
            } = &mut *engine;
            let step = loading.step(ks, server, registry, 1024);
            server.persistence.loading_loaded_bytes = count.get();
            if let Ok(true) = step {
                crate::services::rdb_saving::finish_load(ks, server, loading.stats(), started);
            }
            step
        };
        match step {
            Ok(true) => return,
            Ok(false) => tokio::task::yield_now().await,
            Err(e) => {
                let engine = shared.engine.borrow();
                engine.server.log.warning(&e.0);
                std::process::exit(1);
            }
        }
    }
}
