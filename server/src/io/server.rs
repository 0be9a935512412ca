//! Starting and stopping a server: [`ServerOptions`] → [`start`] (on its own thread, for
//! in-process use) or [`run`] (on the calling thread, for the `embedis-server` binary).
//!
//! With `io-threads 1` (the default) a server is one OS thread running a single-threaded tokio
//! runtime that owns the engine, the listeners, every connection task and the timer ([`crate::io::net`]).
//! With `io-threads N > 1`, connection I/O runs on N threads and the engine on its own thread
//! ([`crate::io::net_threaded`]). Several servers in one process are fully independent (Redlock tests
//! run five). The [`ServerHandle`] stops its server when asked or when dropped. The steps both
//! modes share (binding, creating the engine, the save on the way out) are in
//! [`crate::io::startup`].
//!
//! The embedding process reaches the engine through the handle: [`ServerHandle::with_engine`]
//! sends a closure over a channel to the thread that owns the engine and waits for its result
//! (the engine is never shared, so this is the only way in). [`ServerHandle::stop`] hands back
//! the server's data as a [`Dataset`], which [`start_with`] loads into a new server — a restart
//! with the data kept, as Redis reloads its RDB file.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::Notify;

use crate::base::clock::Clock;
use crate::base::listeners::ListenerControl;
use crate::engine::Engine;
use crate::io::direct::Dataset;
use crate::io::net::{accept_unix, manage_tcp_listeners, Shared};
use crate::io::startup::{
    finish, new_engine, prepare, report, save_on_stop, wait_for_shutdown, Bound, Jobs, Prepared,
    Start,
};
pub use crate::io::startup::{EngineJob, ServerOptions};
use crate::model::fault_rules::Faults;

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
    engine.server.listeners = Some(ListenerControl::new(listener_tx, &tcp));
    let (tls_listener_tx, tls_listener_rx) = tokio::sync::mpsc::unbounded_channel();
    engine.server.tls_listeners = Some(ListenerControl::new(tls_listener_tx, &tls));
    let tls_shared = engine.server.tls.clone();
    let config = options.config.clone();
    let clock_changed = engine.server.clock_changed.clone();
    let shared = Rc::new(Shared {
        engine: RefCell::new(engine),
        timer: Arc::new(Notify::new()),
        shutdown: shutdown.clone(),
        turn_end_wakes: RefCell::new(Vec::new()),
        turn_end: Notify::new(),
        evicted_at_turn_end: Cell::new(0),
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
    tokio::task::spawn_local(crate::io::rdb_pipe::run(shared.clone()));
    if config.cluster.enabled {
        let ip = bound
            .tcp_addr
            .map_or(std::net::Ipv4Addr::LOCALHOST.into(), |a| a.ip());
        tokio::task::spawn_local(crate::io::cluster_bus::run(shared.clone(), ip));
    }
    // Connections are taken while the file loads (answered LOADING), as Redis serves events
    // during a load; "Ready to accept connections" is logged once it is done, as Redis logs it.
    let mut loading_in_background = false;
    if options.load_at_start && options.load_in_background && !config.appendonly {
        let opened = crate::services::rdb_saving::open_for_background_load(
            &mut shared.engine.borrow_mut().server,
        );
        match opened {
            Ok(Some((loading, count))) => {
                tokio::task::spawn_local(run_loading(shared.clone(), loading, count));
                loading_in_background = true;
            }
            Ok(None) => {}
            Err(e) => {
                log.warning(&e.0);
                return Err(report(&ready, io::Error::other(e.0)));
            }
        }
    }
    if !loading_in_background {
        log.notice("Ready to accept connections");
    }
    if let Some(ready) = ready {
        let _ = ready.send(Ok(bound));
    }
    wait_for_shutdown(&shutdown).await;
    // Nothing else runs on this thread now: the engine is free to give its data up.
    save_on_stop(&mut shared.engine.borrow_mut());
    let data = Dataset::take(&mut shared.engine.borrow_mut());
    finish(&config, &log);
    Ok(data)
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
/// A background load's turn is made of steps of this many keys, up to
/// [`LOADING_STEPS_PER_TURN`] of them (1024 keys) when the interval in bytes is not reached first.
const KEYS_PER_LOADING_STEP: usize = 8;
const LOADING_STEPS_PER_TURN: usize = 128;

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
            // A turn loads until `loading-process-events-interval-bytes` more of the file are
            // in (Redis serves events that often while it loads) or 1024 keys, in small steps,
            // so that clients get their LOADING replies promptly even under key-load-delay.
            let interval = server.config.loading_process_events_interval_bytes.max(1) as u64;
            let turn_start = count.get();
            let mut step = Ok(false);
            for _ in 0..LOADING_STEPS_PER_TURN {
                step = loading.step(ks, server, registry, KEYS_PER_LOADING_STEP);
                if !matches!(step, Ok(false)) || count.get() - turn_start >= interval {
                    break;
                }
            }
            server.persistence.loading_loaded_bytes = count.get();
            if let Ok(true) = step {
                crate::services::rdb_saving::finish_load(ks, server, loading.stats(), started);
                server.log.notice("Ready to accept connections");
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
