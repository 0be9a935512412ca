//! [`ServerState`]: everything the executor owns besides the keyspace and the clients —
//! configuration, clock, statistics, the pause and blocking state, and requests to the
//! networking layer (shutdown).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::time::Instant;

use crate::base::clock::Clock;
use crate::base::config::Config;
use crate::base::log::Logger;
use crate::model::blocking::BlockedIndex;
use crate::model::client::ClientId;

/// Per-command counters (INFO commandstats, LATENCY HISTOGRAM).
#[derive(Debug, Default, Clone)]
pub struct CommandStats {
    pub calls: u64,
    pub usec: u64,
    pub rejected_calls: u64,
    pub failed_calls: u64,
    /// Run times, for LATENCY HISTOGRAM.
    pub histogram: crate::model::latency::LatencyHistogram,
}

/// Server-wide counters (INFO stats).
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub total_connections_received: u64,
    pub total_commands_processed: u64,
    pub rejected_connections: u64,
    pub net_input_bytes: u64,
    pub net_output_bytes: u64,
    pub total_error_replies: u64,
    pub unexpected_error_replies: u64,
    pub client_qbuf_limit_disconnections: u64,
    /// Socket reads and writes done for clients (INFO total_reads/writes_processed).
    pub total_reads_processed: u64,
    pub total_writes_processed: u64,
    /// Ring of (time ms, commands processed, input bytes, output bytes) samples for the
    /// instantaneous_* figures.
    pub samples: Vec<(i64, u64, u64, u64)>,
}

impl Stats {
    /// Records a sample (called from the periodic tick) and keeps the last 16.
    pub fn sample(&mut self, now_ms: i64) {
        self.samples.push((
            now_ms,
            self.total_commands_processed,
            self.net_input_bytes,
            self.net_output_bytes,
        ));
        if self.samples.len() > 16 {
            self.samples.remove(0);
        }
    }

    /// (ops/sec, input kbps, output kbps) over the sampled window.
    pub fn instantaneous(&self) -> (u64, f64, f64) {
        match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) if b.0 > a.0 => {
                let secs = (b.0 - a.0) as f64 / 1000.0;
                (
                    ((b.1 - a.1) as f64 / secs) as u64,
                    (b.2 - a.2) as f64 / secs / 1024.0,
                    (b.3 - a.3) as f64 / secs / 1024.0,
                )
            }
            _ => (0, 0.0, 0.0),
        }
    }
}

/// An active CLIENT PAUSE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    pub until_ms: i64,
    /// true = only writes are paused (CLIENT PAUSE … WRITE).
    pub writes_only: bool,
}

/// Work a handler asks the engine to do once the command has finished (a handler cannot touch
/// other clients' blocked state while the engine is lent out to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineRequest {
    /// CLIENT UNBLOCK: release a blocked client with its timeout reply, or with an error.
    Unblock { id: ClientId, with_error: bool },
    /// CLIENT UNPAUSE: end the pause and re-run postponed commands.
    Unpause,
    /// CLIENT KILL of another client: close its connection and forget it at once, so that the
    /// next command (CLIENT LIST…) no longer sees it.
    Kill { id: ClientId },
    /// A pause ended or weakened (FAILOVER's): re-run the commands it postponed.
    ReleasePostponed,
    /// This server became a replica (REPLICAOF, a failover): its blocked clients are released
    /// with `-UNBLOCKED` (Redis's `disconnectAllBlockedClients`).
    UnblockAll,
    /// A replica's REPLCONF ACK: release the WAITs it satisfies.
    ReleaseAcknowledged,
    /// A CLUSTER command changed the view: recompute the cluster's state and do what the bus
    /// asks of the engine (`crate::model::cluster_bus_state::BusEffect`).
    ClusterBus,
    /// A shutdown was cancelled (it failed, or SHUTDOWN ABORT): the clients blocked in SHUTDOWN
    /// get its error, and the writes it paused resume.
    ShutdownCancelled,
}

/// How SHUTDOWN asked the server to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownRequest {
    Shutdown,
}

/// A shutdown under way (Redis's `shutdown_flags` and `shutdown_mstime`): SHUTDOWN, or a
/// signal's request taken up by the tick, waits here for lagging replicas until they catch up or
/// `shutdown-timeout` passes (see `crate::services::shutdown`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Stopping {
    pub flags: crate::base::config::process::ShutdownFlags,
    /// When the wait ends (ms of the server's clock); `Some` while a shutdown is initiated.
    pub deadline_ms: Option<i64>,
    /// The wait paused writes (no CLIENT PAUSE was in effect): its end unpauses them.
    pub paused_writes: bool,
}

/// The executor's state apart from keys and clients.
/// A connection MIGRATE keeps open to a target (Redis's `migrateCachedSocket`): reused by the
/// next MIGRATE to the same `host:port`, closed after [`MigrateSocket::IDLE_MS`] unused (by the
/// tick) or after an I/O error. `last_dbid` spares the SELECT when the database is the same.
#[derive(Debug)]
pub struct MigrateSocket {
    pub stream: std::net::TcpStream,
    pub last_dbid: i64,
    pub last_use_ms: i64,
}

impl MigrateSocket {
    /// Redis's `MIGRATE_SOCKET_CACHE_TTL`: 10 seconds.
    pub const IDLE_MS: i64 = 10_000;
    /// Redis's `MIGRATE_SOCKET_CACHE_ITEMS`: at most 64 kept.
    pub const MAX: usize = 64;
}

pub struct ServerState {
    pub config: Config,
    /// ACL users and the ACL log (`crate::model::acl_users`); `requirepass` is the default user's password.
    pub users: crate::model::acl_users::Users,
    pub clock: Clock,
    /// Set by the clock's change listener (a test moved time); the engine runs its tick before
    /// the next command (see `Engine::catch_up_with_clock`).
    pub clock_changed: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub log: Logger,
    pub started: Instant,
    pub started_ms: i64,
    pub run_id: String,
    pub stats: Stats,
    /// Indexed by command id.
    pub command_stats: Vec<CommandStats>,
    /// Error replies by code (INFO errorstats).
    pub error_stats: BTreeMap<String, u64>,
    /// The pause in force, what the gates read: the timed one (CLIENT PAUSE, a cluster manual
    /// failover) and FAILOVER's combined, the stricter mode and the later end winning.
    pub pause: Option<Pause>,
    /// CLIENT PAUSE's (and a cluster manual failover's): it ends at its time or at CLIENT UNPAUSE.
    pub timed_pause: Option<Pause>,
    /// FAILOVER pauses writes until the failover ends, whatever CLIENT UNPAUSE says (Redis's
    /// `PAUSE_DURING_FAILOVER` purpose).
    pub failover_pause: bool,
    pub blocked: BlockedIndex,
    pub monitors: Vec<ClientId>,
    /// The Lua VM and its script cache.
    pub scripting: crate::model::vm_slot::VmSlot<embedis_scripting::ScriptVm>,
    /// The script running past busy-reply-threshold, while other clients are served.
    pub running_script: Option<crate::model::vm_slot::RunningScript>,
    /// The functions VM and its libraries (FUNCTION, FCALL).
    pub functions: crate::model::vm_slot::VmSlot<embedis_scripting::Functions>,
    /// Pub/sub subscriptions, by channel, pattern and shard channel.
    pub pubsub: crate::model::pubsub::PubSub,
    /// Clients with out-of-turn output to hand over at the end of the current command.
    pub pending_writes: Vec<ClientId>,
    /// From 7.2, the running client's messages to itself (it PUBLISHed to a channel it is
    /// subscribed to, or a keyspace event it listens to), sent after its command's whole reply —
    /// after EXEC's or the script's, not amid them (Redis's `pending_push_messages`).
    pub postponed_pushes: bytes::BytesMut,
    /// Handlers running (EXEC's and a script's commands nest): Redis's `executing_client`.
    pub executing: u32,
    pub shutdown: Option<ShutdownRequest>,
    /// The server stopped on an error it cannot recover from (an AOF write or fsync that
    /// failed under `appendfsync always`, where Redis exits): no reply leaves any more, so that
    /// nothing unpersisted is acknowledged, and the I/O layer stops the server. The binary
    /// exits instead (see [`ServerState::stop_fatally`]).
    pub crashed: bool,
    /// When the replica last logged applying a write it cannot persist (ms; every 10 s at most).
    pub last_disk_error_log_ms: i64,
    /// A shutdown waiting for replicas (see [`Stopping`]).
    pub stopping: Stopping,
    pub rng: StdRng,
    pub next_client_id: ClientId,
    /// UNIX time (s) of the last successful save: the start time, as we never save.
    pub lastsave: i64,
    /// TCP port actually bound (INFO tcp_port, HELLO).
    pub tcp_port: u16,
    pub executable: String,
    /// The program a background save writes through as a child process (the binary itself,
    /// see `crate::base::formats::rdb_child`); None: the save's thread writes the file.
    pub save_child: Option<std::path::PathBuf>,
    /// The server is its process's (the binary): it handles the signals and may install the
    /// crash report's handlers.
    pub owns_process: bool,
    pub config_file: String,
    /// Set when the active expiry cycle stopped on its time limit: run a fast cycle soon.
    pub expire_cycle_timed_out: bool,
    /// Set when a deadline was added (blocked client, pause): the timer must recompute its sleep.
    pub timers_changed: bool,
    /// Where CONFIG SET port / bind sends new TCP listeners (`None` in engines without a
    /// networking layer, such as unit tests).
    pub listeners: Option<crate::base::listeners::ListenerControl>,
    /// The same for the TLS port's listeners (CONFIG SET tls-port).
    pub tls_listeners: Option<crate::base::listeners::ListenerControl>,
    /// The current TLS context, read by the TLS listeners and the replica link.
    pub tls: crate::base::tls::TlsShared,
    /// Requests from the running command, carried out by the engine after it.
    pub requests: Vec<EngineRequest>,
    /// false after DEBUG SET-ACTIVE-EXPIRE 0: keys then expire only when accessed.
    pub active_expire: bool,
    /// true after DEBUG PAUSE-CRON 1: the periodic tick does nothing.
    pub cron_paused: bool,
    /// true after DEBUG SET-SKIP-CHECKSUM-VALIDATION 1: RESTORE takes a payload whatever its
    /// CRC64 says (Redis's tests craft corrupt payloads without computing one); its RDB
    /// version is still checked.
    pub skip_checksum_validation: bool,
    /// true after DEBUG SET-DISABLE-DENY-SCRIPTS 1: scripts may call `noscript` commands (Redis's
    /// tests use it to run CLIENT LIST or DEBUG PROTOCOL from a script).
    pub disable_deny_scripts: bool,
    /// DEBUG REPLYBUFFER's tuning of the reply-buffer resize (see crate::model::reply_buffer).
    pub reply_tuning: crate::model::reply_buffer::ReplyTuning,
    /// INFO's `reply_buffer_shrinks` and `reply_buffer_expands`.
    pub reply_resizes: crate::model::reply_buffer::ReplyResizes,
    /// Replication as a primary: its ID (random, as a master's is), offset, backlog and
    /// replicas (see [`crate::model::replication`]).
    pub repl: crate::model::replication::Replication,
    /// Eviction past `maxmemory`: the candidate pool and its state (see [`crate::model::evict`]).
    pub eviction: crate::model::evict::Evictor,
    /// The clients' memory under `maxmemory-clients` (see [`crate::model::client_memory`]).
    pub client_memory: crate::model::client_memory::ClientMemory,
    /// MIGRATE's open connections by `host:port`, kept for reuse as Redis keeps them.
    pub migrate_sockets: std::collections::HashMap<String, MigrateSocket>,
    /// Highest memory figure INFO has reported (`used_memory_peak`).
    pub memory_peak: u64,
    /// Memory in use when the server started (`used_memory_startup`).
    pub memory_startup: u64,
    /// Injected faults (tests' control; shared with the server's handle).
    pub faults: crate::model::fault_rules::Faults,
    /// SLOWLOG's entries.
    pub slowlog: crate::model::slowlog::SlowLog,
    /// LATENCY's events.
    pub latency: crate::model::latency::LatencyMonitor,
    /// RDB saves: the background one in progress, outcomes, INFO persistence's figures.
    pub persistence: crate::model::snapshot::SaveState,
    /// The append-only file (see [`crate::services::aof`]).
    pub aof: crate::model::aof_state::AppendOnly,
    /// Cluster mode: this node's view of the cluster (see [`crate::model::cluster_view`]).
    pub cluster: crate::model::cluster_view::Cluster,
}

/// 40 random hex digits: Redis's run IDs, replication IDs, cluster node IDs and diskless
/// transfer marks (CONFIG_RUN_ID_SIZE).
fn hex40(rng: &mut StdRng) -> String {
    (0..40)
        .map(|_| char::from_digit(rng.gen_range(0..16), 16).expect("hex"))
        .collect()
}

impl ServerState {
    /// Stops the server on an error it cannot recover from, as Redis's `exit(1)` after logging
    /// `message`: the binary exits at once; a server inside another process stops without
    /// saving and without sending another reply ([`ServerState::crashed`]), so the host process
    /// lives on and sees the server gone, as a client sees a crashed Redis.
    pub fn stop_fatally(&mut self, message: &str) {
        self.log.warning(message);
        if self.owns_process {
            std::process::exit(1);
        }
        self.crashed = true;
        self.persistence.shutdown_handled = true;
        self.shutdown = Some(ShutdownRequest::Shutdown);
    }

    /// A fresh 40-hex-digit ID from the server's random source (see [`hex40`]).
    /// Sets the process title from `template` and this server's addresses (Redis's
    /// `redisSetProcTitle`). Only the binary's own process has one to set.
    pub fn set_process_title(&self, template: &str) {
        use crate::base::proc_title;
        if !self.owns_process {
            return;
        }
        let config = &self.config;
        let vars = proc_title::TitleVars {
            title: proc_title::argv0(),
            bind: config.bind.first().map(String::as_str),
            port: config.port,
            tls_port: config.tls.port,
            unixsocket: &config.unixsocket,
            cluster: config.cluster.enabled,
            config_file: &self.config_file,
        };
        if let Some(title) = proc_title::expand(template, &vars) {
            proc_title::set(&title);
        }
    }

    pub fn random_id(&mut self) -> String {
        hex40(&mut self.rng)
    }

    /// The state of a new server whose command table has `commands` entries (for the
    /// per-command statistics).
    pub fn new(
        config: Config,
        clock: Clock,
        log: Logger,
        seed: Option<u64>,
        commands: usize,
    ) -> Self {
        let mut rng = match seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_entropy(),
        };
        let run_id = hex40(&mut rng);
        let replid = hex40(&mut rng);
        let node_id = hex40(&mut rng);
        let memory_startup = crate::base::alloc::used_memory();
        let config_cluster_enabled = config.cluster.enabled;
        let now_ms = clock.now_ms();
        let users = crate::model::acl_users::Users::new(config.requirepass.as_bytes());
        let version = config.compat_version;
        ServerState {
            users,
            config,
            clock,
            log,
            started: Instant::now(),
            started_ms: now_ms,
            run_id,
            stats: Stats::default(),
            command_stats: vec![CommandStats::default(); commands],
            error_stats: BTreeMap::new(),
            clock_changed: Default::default(),
            pause: None,
            timed_pause: None,
            failover_pause: false,
            blocked: BlockedIndex::default(),
            monitors: Vec::new(),
            scripting: crate::model::vm_slot::VmSlot::for_version(version),
            running_script: None,
            functions: crate::model::vm_slot::VmSlot::for_version(version),
            pubsub: crate::model::pubsub::PubSub::default(),
            pending_writes: Vec::new(),
            postponed_pushes: bytes::BytesMut::new(),
            executing: 0,
            shutdown: None,
            crashed: false,
            last_disk_error_log_ms: 0,
            stopping: Stopping::default(),
            rng,
            next_client_id: 1,
            lastsave: now_ms / 1000,
            tcp_port: 0,
            executable: executable_path(),
            save_child: None,
            owns_process: false,
            config_file: String::new(),
            expire_cycle_timed_out: false,
            timers_changed: false,
            requests: Vec::new(),
            listeners: None,
            tls_listeners: None,
            tls: Default::default(),
            active_expire: true,
            skip_checksum_validation: false,
            cron_paused: false,
            disable_deny_scripts: false,
            reply_tuning: Default::default(),
            reply_resizes: Default::default(),
            repl: crate::model::replication::Replication::new(replid),
            eviction: Default::default(),
            client_memory: Default::default(),
            migrate_sockets: Default::default(),
            memory_peak: memory_startup,
            memory_startup,
            faults: crate::model::fault_rules::Faults::default(),
            slowlog: Default::default(),
            latency: Default::default(),
            persistence: Default::default(),
            aof: crate::model::aof_state::AppendOnly::new(),
            cluster: crate::model::cluster_view::Cluster::new(config_cluster_enabled, node_id),
        }
    }

    /// Adds a timed pause (CLIENT PAUSE): one already in force is never weakened, the later end
    /// and the stricter mode win. Returns the pause now in force.
    pub fn pause_until(&mut self, until_ms: i64, writes_only: bool) -> Pause {
        let timed = match self.timed_pause {
            Some(active) => Pause {
                until_ms: active.until_ms.max(until_ms),
                writes_only: active.writes_only && writes_only,
            },
            None => Pause {
                until_ms,
                writes_only,
            },
        };
        self.timed_pause = Some(timed);
        self.timers_changed = true;
        self.combine_pauses().unwrap_or(timed)
    }

    /// Ends the timed pause (its time came, or CLIENT UNPAUSE); FAILOVER's stays.
    pub fn end_timed_pause(&mut self) -> Option<Pause> {
        self.timed_pause = None;
        self.combine_pauses()
    }

    /// Starts or ends FAILOVER's pause of writes.
    pub fn set_failover_pause(&mut self, on: bool) -> Option<Pause> {
        self.failover_pause = on;
        self.combine_pauses()
    }

    /// Recomputes [`ServerState::pause`] from its purposes.
    fn combine_pauses(&mut self) -> Option<Pause> {
        let failover = self.failover_pause.then_some(Pause {
            until_ms: i64::MAX,
            writes_only: true,
        });
        self.pause = match (self.timed_pause, failover) {
            (Some(a), Some(b)) => Some(Pause {
                until_ms: a.until_ms.max(b.until_ms),
                writes_only: a.writes_only && b.writes_only,
            }),
            (a, b) => a.or(b),
        };
        self.pause
    }

    /// Counts an error reply for INFO errorstats / stats.
    pub fn count_error(&mut self, code: &str) {
        self.stats.total_error_replies += 1;
        *self.error_stats.entry(code.to_string()).or_insert(0) += 1;
    }
}

/// INFO's `executable`: the binary's argv[0] made absolute (Redis's `getAbsolutePath`; a name
/// run through a link or `exec -a` stays that name), else, inside another process, its file.
fn executable_path() -> String {
    let argv0 = crate::base::proc_title::argv0();
    if argv0.is_empty() {
        return std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
    }
    match std::env::current_dir() {
        Ok(cwd) if !argv0.starts_with('/') => cwd.join(argv0).display().to_string(),
        _ => argv0.to_string(),
    }
}
