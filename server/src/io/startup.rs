//! What a server needs before it serves and after it stops, in either I/O mode: the options it
//! starts from ([`ServerOptions`]), the job channel of the embedding process, binding the
//! listeners and logging the start (`prepare`), creating the engine with its data
//! (`new_engine`), waiting for the shutdown signal, and the save and clean-up on the way out.
//! Both the single-threaded loop ([`crate::io::server`]) and `io-threads` mode
//! ([`crate::io::net_threaded`]) run these steps, so they sit below both.

use std::io;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Arc;
use tokio::net::UnixListener;
use tokio::sync::Notify;

use crate::base::clock::Clock;
use crate::base::config::Config;
use crate::base::listeners::bind_tcp;
use crate::base::log::Logger;
use crate::engine::Engine;
use crate::io::direct::Dataset;
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
    /// The program a background save writes its file through, as a child process (the
    /// binary itself: see `crate::base::formats::rdb_child`).
    pub save_child: Option<std::path::PathBuf>,
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
/// [`ServerHandle::with_engine`](crate::io::server::ServerHandle::with_engine)).
pub type EngineJob = Box<dyn FnOnce(&mut Engine) + Send>;

/// The sending end of a server's job channel.
pub(crate) type Jobs = tokio::sync::mpsc::UnboundedSender<EngineJob>;
/// The receiving end, served by the thread that owns the engine.
pub(crate) type JobQueue = tokio::sync::mpsc::UnboundedReceiver<EngineJob>;

/// Where the server ended up listening.
pub(crate) struct Bound {
    pub tcp_addr: Option<SocketAddr>,
    pub tls_addr: Option<SocketAddr>,
    pub unix_path: Option<String>,
}

pub(crate) type Ready = Option<mpsc::Sender<io::Result<Bound>>>;

/// What a server starts from besides its options.
pub(crate) struct Start {
    /// Data to load (a restart).
    pub data: Option<Dataset>,
    /// The embedding process's closures (see [`ServerHandle::with_engine`](crate::io::server::ServerHandle::with_engine)).
    pub jobs: JobQueue,
    pub shutdown: Arc<Notify>,
    pub ready: Ready,
}

pub(crate) fn report(ready: &Ready, e: io::Error) -> io::Error {
    if let Some(ready) = ready {
        let _ = ready.send(Err(io::Error::new(e.kind(), e.to_string())));
    }
    e
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

/// A listening socket that could not be made, as Redis logs it: the reason, then the line its
/// test harness looks for to retry on another port.
fn log_listen_failure(log: &Logger, e: &io::Error, port: u16, kind: &str) {
    log.warning(&format!(
        "{e}\nFailed listening on port {port} ({kind}), aborting."
    ));
}

/// Where `logfile` is: as given if absolute or empty, else under `dir`.
fn log_path(config: &Config) -> String {
    let file = std::path::Path::new(&config.logfile);
    if config.logfile.is_empty() || file.is_absolute() || config.dir.is_empty() {
        return config.logfile.clone();
    }
    std::path::Path::new(&config.dir)
        .join(file)
        .display()
        .to_string()
}

/// Logs the start-up lines, changes directory, binds listeners and writes the pid file. Must run
/// inside the tokio runtime that will serve the listeners.
pub(crate) fn prepare(options: &ServerOptions, ready: &Ready) -> io::Result<Prepared> {
    let config = &options.config;
    let log = match &options.logger {
        Some(l) => l.clone(),
        // Redis opens the log after it moved into `dir`: a relative `logfile` is under `dir`.
        None => Logger::open(&log_path(config), config.loglevel).map_err(|e| report(ready, e))?,
    };
    log.warning("oO0OoO0OoO0Oo embedis is starting oO0OoO0OoO0Oo");
    log.warning(&format!(
        "embedis version={}, Redis compatibility={}, bits=64, pid={}, just started",
        env!("CARGO_PKG_VERSION"),
        config.compat_version.redis_version(),
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
            log_listen_failure(&log, &e, config.port, "TCP");
            report(ready, e)
        })?
    } else {
        Vec::new()
    };
    // `bind ""` listens on no address (the unix socket may be the way in), as in Redis.
    if listen_tcp && tcp.is_empty() && !config.bind.is_empty() {
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
            log_listen_failure(&log, &e, config.tls.port, "TLS");
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
    if options.handle_signals {
        install_signal_handlers(config, &log).map_err(|e| report(ready, e))?;
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
            "embedis {} (Redis {} compatible), {mode} mode, Port: {port}, PID: {}",
            env!("CARGO_PKG_VERSION"),
            config.compat_version.redis_version(),
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
    // The port bound (`--port auto` chose it), or the configured one when no address is bound
    // (`bind ""`: CONFIG SET bind listens on it later).
    let port = prepared
        .bound
        .tcp_addr
        .map_or(options.config.port, |a| a.port());
    engine.server.faults = options.faults.clone();
    engine.server.tcp_port = port;
    engine.server.config.port = port;
    engine.server.config_file = prepared.config_file.clone();
    engine.server.save_child = options.save_child.clone();
    engine.server.owns_process = options.handle_signals;
    // The score of a primary or a replica by `replicaof` (Redis sets it once configured).
    let class = if engine.server.config.replicaof.is_some() {
        crate::base::config::process::OomClass::Replica
    } else {
        crate::base::config::process::OomClass::Primary
    };
    let _ = crate::base::oom::apply(&engine.server.config.process, class, &prepared.log);
    {
        let Engine {
            server, registry, ..
        } = &mut engine;
        if let Err(e) = crate::commands::acl::load_at_start(server, registry) {
            prepared.log.warning(&e);
            return Err(report(ready, io::Error::other(e)));
        }
        let renames = &server.config.rename_commands;
        match crate::commands::registry_renamed(server.config.compat_version, renames) {
            Ok(renamed) => *registry = renamed,
            Err(e) => {
                prepared.log.warning(&e);
                return Err(report(ready, io::Error::other(e)));
            }
        }
    }
    if let Some(addr) = prepared.bound.tls_addr {
        engine.server.config.tls.port = addr.port();
    }
    if engine.server.config.process.set_proc_title {
        let template = engine.server.config.process.proc_title_template.clone();
        engine.server.set_process_title(&template);
    }
    if engine.server.config.cluster.enabled {
        if let Err(e) = crate::services::cluster::config_file::load_at_start(&mut engine.server) {
            prepared.log.warning(&e);
            return Err(report(ready, io::Error::other(e)));
        }
        // A replica by its nodes.conf is one before its data loads: keys past their TTL in its
        // files stay until its primary deletes them, as `replicaof` at start makes it.
        if let Some((ip, port)) = crate::services::cluster::my_primary_address(&engine.server) {
            engine.server.repl.follow(ip, port);
            engine.server.log.set_replica(true);
            engine.ks.expiry_rule = crate::model::keyspace::ExpiryRule::Hide;
        }
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

/// The save Redis makes when it stops with save points set, for the embedding process stopping
/// the server (SHUTDOWN and signals went through `crate::services::shutdown`, which decided).
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
    // The engine's shutdown sequence ran (and logged its start) or the embedding process is
    // stopping the server.
    if server.persistence.shutdown_handled {
        return;
    }
    server.log.warning("User requested shutdown...");
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

/// Removes the pid and socket files and logs the end.
pub(crate) fn finish(config: &Config, log: &Logger) {
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

/// Waits until the engine has finished a shutdown (SHUTDOWN, or a signal's request that its tick
/// took up: see `crate::services::shutdown`) or the embedding process stops the server.
pub(crate) async fn wait_for_shutdown(shutdown: &Notify) {
    shutdown.notified().await;
}

/// The binary's signal handlers (see `crate::base::signals`): SIGINT and SIGTERM ask the engine
/// for a shutdown, fatal signals write a crash report while `crash-log-enabled` is on.
fn install_signal_handlers(config: &Config, log: &Logger) -> io::Result<()> {
    // The temporary file of a save by this process, in the working directory (`dir`).
    let temp_rdb = std::path::PathBuf::from(format!("temp-{}.rdb", std::process::id()));
    crate::base::signals::install_shutdown_handlers(log.clone(), temp_rdb)?;
    if config.process.crash_log_enabled {
        crate::base::signals::set_crash_log(log, true);
    }
    Ok(())
}
