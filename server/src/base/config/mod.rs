//! Configuration: every parameter embedis implements, under Redis 7.0's names (and old aliases),
//! with Redis's parsing, bounds and error texts — for the config file, the command line, and
//! CONFIG GET / SET.
//!
//! One table ([`PARAMS`]) describes each parameter: its kind (integer, memory size, yes/no,
//! choice, string…), bounds, default, whether it may change at run time, and how to read and
//! write it in [`Config`]. CONFIG GET, CONFIG SET, the start-up parser and `CONFIG GET *` are all
//! driven by the table, so a parameter exists everywhere or nowhere.
//!
//! A parameter Redis has but embedis does not implement is not in the table: the start-up parser
//! refuses it with a message saying so, rather than accepting a setting it would silently ignore.
//! A few parameters (`daemonize`, `enable-module-command`) are in the table but accept only the
//! value that describes what embedis actually does (foreground, no modules), so that harnesses
//! passing `--daemonize no` keep working.
//!
//! This file holds the values ([`Config`]); the table is in `params.rs`, the checking of one value
//! against its parameter in `values.rs`, CONFIG GET and SET in `get_set.rs`, the config file and
//! the command line in `file.rs`, and the keyspace-notification classes in [`event_class`].

pub mod event_class;
mod file;
mod get_set;
mod params;
pub mod process;
mod values;

pub use file::ConfigError;
pub use params::{
    find_param, find_param_named, Kind, Param, DENY_LOADING, HIDDEN, PARAMS, PROTECTED,
};
pub use values::{
    memory_or_percent_text, parse_memory, parse_memory_or_percent, parse_memory_u64,
    parse_obuf_limits, parse_percentiles, parse_save_points, percentile_text, ValueError,
};

/// The server's configuration values.
#[derive(Debug, Clone)]
pub struct Config {
    pub port: u16,
    pub bind: Vec<String>,
    pub unixsocket: String,
    pub unixsocketperm: u32,
    pub requirepass: String,
    /// `aclfile`: where ACL LOAD / SAVE read and write users (empty: no file).
    pub aclfile: String,
    /// `acllog-max-len`: entries the ACL log keeps.
    pub acllog_max_len: usize,
    /// `acl-pubsub-default allchannels` (true) or `resetchannels`: the channels a new user or
    /// selector starts with.
    pub acl_pubsub_all: bool,
    /// The `user` lines of the config file, their words after `user`, loaded at start-up (the
    /// rules need the command table, which the server builds after the configuration).
    pub users: Vec<Vec<Vec<u8>>>,
    /// The file's `rename-command <name> <new name>` lines, in order (an empty new name takes
    /// the command away), applied at start-up to the command table.
    pub rename_commands: Vec<(String, String)>,
    pub databases: usize,
    pub maxclients: u64,
    pub timeout: u64,
    /// Milliseconds a script may run before other clients are answered `-BUSY` and SCRIPT KILL
    /// can stop it (`busy-reply-threshold`, alias `lua-time-limit`).
    pub busy_reply_threshold: u64,
    pub hz: u32,
    pub dynamic_hz: bool,
    pub loglevel: LogLevel,
    pub logfile: String,
    pub dir: String,
    pub pidfile: String,
    pub enable_debug_command: Access,
    pub enable_protected_configs: Access,
    pub io_threads: usize,
    /// Plain TCP and unix clients' socket I/O through io_uring (`crate::io::net_uring`); embedis's
    /// own option, off by default. CONFIG SET applies it to the connections accepted after.
    pub io_uring: bool,
    pub proto_max_bulk_len: i64,
    pub client_query_buffer_limit: i64,
    pub tcp_keepalive: u64,
    pub tcp_backlog: u32,
    pub protected_mode: bool,
    /// `client-output-buffer-limit` for the normal, replica and pub/sub client classes.
    pub obuf_limits: [ObufLimit; 3],
    /// Thresholds of the compact encodings (see each collection's module).
    pub encodings: EncodingLimits,
    /// SLOWLOG: commands at least this many µs long are logged (negative: none; 0: all).
    pub slowlog_log_slower_than: i64,
    /// SLOWLOG: entries kept.
    pub slowlog_max_len: u64,
    /// LATENCY: events at least this many ms long are recorded (0: monitoring off).
    pub latency_monitor_threshold: u64,
    /// Every command's run-time histogram (LATENCY HISTOGRAM, INFO latencystats).
    pub latency_tracking: bool,
    /// Client tracking: keys the tracking table may hold before random ones are evicted (their
    /// clients told as if the keys changed); 0 = no limit.
    pub tracking_table_max_keys: u64,
    /// The percentiles INFO latencystats prints for each command (`latency-tracking-info-percentiles`).
    pub latency_tracking_info_percentiles: Vec<f64>,
    /// Bytes of memory beyond which `denyoom` commands are refused (0 = no limit).
    pub maxmemory: u64,
    /// What happens past `maxmemory`: which keys are evicted (see `crate::model::evict`), or none.
    pub maxmemory_policy: MaxmemoryPolicy,
    /// `maxmemory-clients`: bytes all clients together may use before the largest are evicted,
    /// or minus a percentage of `maxmemory` (Redis's representation); 0 is off (see
    /// `crate::model::client_memory`).
    pub maxmemory_clients: i64,
    /// `compat-version`: the Redis the server behaves as (see `base::compat`).
    pub compat_version: crate::base::compat::CompatVersion,
    /// Keys sampled per database for each pass that fills the eviction pool.
    pub maxmemory_samples: u32,
    /// 0..100: how long one eviction pass may run before handing the rest to the timer.
    pub maxmemory_eviction_tenacity: u32,
    /// The keyspace-notification classes that are on (`notify-keyspace-events`), as the bits of
    /// [`event_class`]. The keyspace keeps its own copy ([`crate::model::notify`] is told on change).
    pub notify_keyspace_events: u32,
    /// LFU policies: how slowly the access counter climbs (higher = more accesses per step).
    pub lfu_log_factor: u32,
    /// LFU policies: minutes for the access counter to lose one step (0 = never decays).
    pub lfu_decay_time: u32,
    /// Evicted values are freed on the background thread (`lazyfree-lazy-eviction`).
    pub lazyfree_lazy_eviction: bool,
    /// Expired keys are freed on the background thread and propagate as UNLINK
    /// (`lazyfree-lazy-expire`).
    pub lazyfree_lazy_expire: bool,
    /// GETDEL frees its value on the background thread and propagates as UNLINK
    /// (`lazyfree-lazy-user-del`).
    pub lazyfree_lazy_user_del: bool,
    /// `lazyfree-lazy-server-del`: frees of implicit deletions in the background; from Redis
    /// 7.2 it also makes SPOP of a whole set, and a RESTORE of an already expired key over an
    /// old one, propagate as UNLINK rather than DEL.
    pub lazyfree_lazy_server_del: bool,
    /// FLUSHALL and FLUSHDB without ASYNC or SYNC flush as ASYNC (`lazyfree-lazy-user-flush`).
    pub lazyfree_lazy_user_flush: bool,
    /// Writes are refused unless this many replicas are connected with a lag of at most
    /// `min_replicas_max_lag` seconds (either 0 turns the check off), as Redis refuses them with
    /// too few good replicas; a replica does not check.
    pub min_replicas_to_write: u32,
    pub min_replicas_max_lag: u32,
    /// Replication as a primary: the backlog's size, how often replicas are pinged, and the
    /// link timeout (see [`crate::model::replication`]).
    pub repl_backlog_size: u64,
    pub repl_ping_replica_period: u32,
    pub repl_timeout: u32,
    /// Seconds a primary keeps its backlog with no replica attached (0: for ever).
    pub repl_backlog_ttl: u32,
    /// `repl-diskless-load`: `disabled` keeps the image a replica receives as its RDB file (as
    /// Redis, which loads it from there); the others load it from memory only. embedis always
    /// loads from memory.
    pub repl_diskless_load: String,
    /// `replica-read-only`: a replica refuses writes from its clients (`-READONLY`).
    pub replica_read_only: bool,
    /// `replica-serve-stale-data`: while its link is down, a replica answers its clients from
    /// the data it has (yes) or `-MASTERDOWN` (no).
    pub replica_serve_stale_data: bool,
    /// `replicaof host port` given at start-up (config file or command line): the primary to
    /// follow from the start. REPLICAOF changes the role at run time.
    pub replicaof: Option<(String, u16)>,
    /// The credentials a replica's link sends its primary (`masteruser`, `masterauth`).
    pub masteruser: String,
    pub masterauth: String,
    /// What a replica tells its primary about itself (REPLCONF ip-address / listening-port),
    /// and what Sentinel reads of it in INFO (`replica-priority`, `replica-announced`).
    pub replica_announce_ip: String,
    pub replica_announce_port: u16,
    pub replica_priority: u32,
    pub replica_announced: bool,
    /// A full sync sends the RDB image with the diskless `$EOF:` framing to replicas that
    /// support it (`repl-diskless-sync`); the delay Redis waits for more replicas is accepted
    /// and kept for CONFIG GET (the image is built at once here).
    pub repl_diskless_sync: bool,
    pub repl_diskless_sync_delay: u32,
    pub repl_diskless_sync_max_replicas: u32,
    /// RDB snapshots: `save` points as (seconds, changes) pairs (empty: no automatic saves).
    pub save_points: Vec<(u64, u64)>,
    pub dbfilename: String,
    pub rdbcompression: bool,
    pub rdbchecksum: bool,
    /// Refuse writes (`-MISCONF`) while the last background save failed and save points are set.
    pub stop_writes_on_bgsave_error: bool,
    /// A replica applies its primary's writes while it cannot persist them, logging it, instead
    /// of stopping (Redis 7.0's `replica-ignore-disk-write-errors`, default no).
    pub replica_ignore_disk_write_errors: bool,
    /// Microseconds the background save pauses after each key (`rdb-key-save-delay`, a test
    /// control Redis's own suite uses to keep a save running).
    pub rdb_key_save_delay: i64,
    /// Microseconds loading pauses after each key (`key-load-delay`, the loading twin).
    pub key_load_delay: i64,
    /// `loading-process-events-interval-bytes` (hidden): a replica's full-sync load gives the
    /// event loop a turn after each such slice of its image.
    pub loading_process_events_interval_bytes: i64,
    pub rdb_del_sync_files: bool,
    /// The append-only file (`appendonly` and its companions).
    pub appendonly: bool,
    pub appendfilename: String,
    pub appenddirname: String,
    pub appendfsync: AppendFsync,
    pub aof_load_truncated: bool,
    pub auto_aof_rewrite_percentage: u64,
    pub auto_aof_rewrite_min_size: u64,
    pub no_appendfsync_on_rewrite: bool,
    /// `activerehashing`: the tick gives incremental rehashing a millisecond (yes), or tables
    /// rehash only as commands touch them (no).
    pub activerehashing: bool,
    /// `always-show-logo` (embedis prints no ASCII-art logo either way; kept for CONFIG GET).
    pub always_show_logo: bool,
    /// `propagation-error-behavior`: what a command that fails to propagate does (only module
    /// commands can, and embedis has no modules; kept for CONFIG GET / SET).
    pub propagation_error_behavior: String,
    /// `sanitize-dump-payload` (no, yes, clients). Kept for CONFIG GET / SET: embedis checks
    /// every RESTORE payload and RDB value whole whatever it says (its loaders build their own
    /// structures from the bytes, so a corrupt encoding is refused at load time, which is what
    /// Redis's deep sanitization gives).
    pub sanitize_dump_payload: String,
    /// `use-exit-on-panic` (hidden; see its entry in the parameter table).
    pub use_exit_on_panic: bool,
    pub aof_rewrite_incremental_fsync: bool,
    /// `aof-use-rdb-preamble`: an AOF base is an RDB (yes) or commands (no, `.base.aof`).
    pub aof_use_rdb_preamble: bool,
    /// Keeps the AOF's history files after a rewrite (Redis's `aof-disable-auto-gc`).
    pub aof_disable_auto_gc: bool,
    /// `aof-timestamp-enabled`: `#TS:` annotations in the AOF.
    pub aof_timestamp_enabled: bool,
    /// Cluster mode's parameters (`cluster-*`, see [`crate::model::cluster_view`]).
    pub cluster: ClusterConfig,
    /// The `tls-*` parameters (see [`crate::base::tls`]).
    pub tls: crate::base::tls::TlsConfig,
    /// How the process stops, its OOM score, crash report and watchdog (see [`process`]).
    pub process: process::ProcessConfig,
}

/// The `cluster-*` parameters. Redis's defaults are those of [`Config::default`] (the derived
/// `Default` gives zeros and `false`).
#[derive(Debug, Clone, Default)]
pub struct ClusterConfig {
    /// `cluster-enabled`, fixed at start-up.
    pub enabled: bool,
    /// `cluster-port`: the cluster bus's port (0: the client port + 10000).
    pub port: u16,
    /// `cluster-announce-ip`, `-port`, `-bus-port`: what this node tells others and clients
    /// instead of what it sees (empty / 0: its own).
    pub announce_ip: String,
    pub announce_port: u16,
    pub announce_bus_port: u16,
    /// `cluster-config-file`: the node's `nodes.conf`, under `dir`, written on every change of
    /// the view and read at start (`crate::services::cluster::config_file`).
    pub config_file: String,
    /// `cluster-node-timeout` (ms): how long a node may not answer before it is flagged PFAIL,
    /// and the base of the bus's other delays (failure-report validity, elections, handshakes).
    pub node_timeout: u64,
    /// `cluster-require-full-coverage`: the cluster is down while any slot has no serving node.
    pub require_full_coverage: bool,
    /// `cluster-allow-reads-when-down`: read-only commands are served while the cluster is down.
    pub allow_reads_when_down: bool,
    /// `cluster-replica-validity-factor` (alias `cluster-slave-validity-factor`): a replica cut
    /// off from its primary for longer than about this many node timeouts does not try a
    /// failover (0: it always tries).
    pub replica_validity_factor: u32,
    /// `cluster-migration-barrier`: replicas a primary keeps before one may migrate to an orphan.
    pub migration_barrier: u32,
    /// `cluster-allow-replica-migration`: replicas may migrate to orphaned primaries.
    pub allow_replica_migration: bool,
    /// `cluster-replica-no-failover` (alias `cluster-slave-no-failover`): this replica never
    /// starts an automatic failover (a manual CLUSTER FAILOVER still works).
    pub replica_no_failover: bool,
    /// `cluster-announce-hostname`: the hostname this node gossips (empty: none); only ASCII
    /// letters, digits, '-' and '.', fewer than 256 of them.
    pub announce_hostname: String,
    /// `cluster-link-sendbuf-limit` (bytes): a bus link whose send buffer grows past this is
    /// freed (0 = no limit).
    pub link_sendbuf_limit: u64,
    /// `cluster-allow-pubsubshard-when-down`: shard pub/sub is served while the cluster is down.
    pub allow_pubsubshard_when_down: bool,
    /// `cluster-preferred-endpoint-type`: what MOVED/ASK and CLUSTER SLOTS/SHARDS give as a
    /// node's endpoint, by its canonical lower-case name: `ip`, `hostname` or `unknown-endpoint`.
    pub preferred_endpoint_type: String,
}

/// `appendfsync`: when appended writes reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AppendFsync {
    /// Before the write's reply is sent.
    Always,
    /// By a thread, once a second.
    #[default]
    Everysec,
    /// When the operating system decides.
    No,
}

impl AppendFsync {
    pub fn name(self) -> &'static str {
        match self {
            AppendFsync::Always => "always",
            AppendFsync::Everysec => "everysec",
            AppendFsync::No => "no",
        }
    }
}

/// Redis's default `save` points.
/// Redis's default `bind` (every IPv4 address, and every IPv6 one where there are any), which
/// `embedis-server` starts from, as redis-server does; protected mode keeps other hosts out
/// until a password is set. A server inside a test process listens on the loopback only.
pub const REDIS_DEFAULT_BIND: [&str; 2] = ["*", "-::*"];

pub const DEFAULT_SAVE_POINTS: [(u64, u64); 3] = [(3600, 1), (300, 100), (60, 10000)];

/// When collections leave their compact encodings, as Redis's `*-max-listpack-*` and
/// `set-max-intset-entries` parameters say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodingLimits {
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    /// `set-max-listpack-entries` / `-value` (Redis 7.2): small sets of strings as listpacks.
    pub set_max_listpack_entries: usize,
    pub set_max_listpack_value: usize,
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    /// Positive: entries per list node; -1..-5: node size limit of 4, 8, 16, 32, 64 KB.
    pub list_max_listpack_size: i64,
    /// `list-compress-depth`: raw nodes at each end of lists created from now on.
    pub list_compress_depth: i64,
    /// Longest sparse HyperLogLog string before it turns dense.
    pub hll_sparse_max_bytes: usize,
    /// `stream-node-max-bytes` / `stream-node-max-entries`: when a stream starts a new node
    /// (0 = no limit).
    pub stream_node_max_bytes: u64,
    pub stream_node_max_entries: u64,
}

impl Default for EncodingLimits {
    fn default() -> Self {
        EncodingLimits {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            set_max_listpack_entries: 128,
            set_max_listpack_value: 64,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            list_max_listpack_size: -2,
            list_compress_depth: 0,
            hll_sparse_max_bytes: embedis_datatypes::hll::DEFAULT_SPARSE_MAX_BYTES,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
        }
    }
}

impl Config {
    /// The limits sets convert at, under the rules of this config's Redis version (listpack
    /// sets and creation by size hint from 7.2).
    pub fn set_limits(&self) -> embedis_datatypes::set::SetLimits {
        use embedis_datatypes::set::SetLimits;
        let e = &self.encodings;
        if self.compat_version >= crate::base::compat::CompatVersion::V7_2 {
            SetLimits::v7_2(
                e.set_max_intset_entries,
                e.set_max_listpack_entries,
                e.set_max_listpack_value,
            )
        } else {
            SetLimits::v7_0(e.set_max_intset_entries)
        }
    }
}

/// One client class's output-buffer limit (bytes; 0 = none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObufLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_seconds: u64,
}

impl ObufLimit {
    /// Index of each class in [`Config::obuf_limits`].
    pub const NORMAL: usize = 0;
    pub const REPLICA: usize = 1;
    pub const PUBSUB: usize = 2;
    /// Redis's defaults: `normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60`.
    pub const DEFAULTS: [ObufLimit; 3] = [
        ObufLimit {
            hard: 0,
            soft: 0,
            soft_seconds: 0,
        },
        ObufLimit {
            hard: 256 << 20,
            soft: 64 << 20,
            soft_seconds: 60,
        },
        ObufLimit {
            hard: 32 << 20,
            soft: 8 << 20,
            soft_seconds: 60,
        },
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Verbose,
    Notice,
    Warning,
    /// Redis 7.2's level above every message: nothing is logged.
    Nothing,
}

/// Redis's no / yes / local setting for protected commands such as DEBUG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    No,
    Yes,
    Local,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cluster: ClusterConfig {
                config_file: "nodes.conf".into(),
                node_timeout: 15000,
                require_full_coverage: true,
                allow_reads_when_down: false,
                replica_validity_factor: 10,
                migration_barrier: 1,
                allow_replica_migration: true,
                replica_no_failover: false,
                announce_hostname: String::new(),
                link_sendbuf_limit: 0,
                allow_pubsubshard_when_down: true,
                preferred_endpoint_type: "ip".into(),
                ..ClusterConfig::default()
            },
            tls: crate::base::tls::TlsConfig::default(),
            process: process::ProcessConfig::default(),
            port: 6379,
            bind: vec!["127.0.0.1".into(), "-::1".into()],
            unixsocket: String::new(),
            unixsocketperm: 0,
            requirepass: String::new(),
            aclfile: String::new(),
            acllog_max_len: 128,
            acl_pubsub_all: false,
            users: Vec::new(),
            rename_commands: Vec::new(),
            databases: 16,
            maxclients: 10000,
            timeout: 0,
            busy_reply_threshold: 5000,
            hz: 10,
            dynamic_hz: true,
            loglevel: LogLevel::Notice,
            logfile: String::new(),
            dir: std::env::current_dir()
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_else(|_| ".".into()),
            pidfile: String::new(),
            enable_debug_command: Access::No,
            enable_protected_configs: Access::No,
            io_threads: 1,
            io_uring: false,
            proto_max_bulk_len: 512 * 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            tcp_keepalive: 300,
            tcp_backlog: 511,
            protected_mode: true,
            obuf_limits: ObufLimit::DEFAULTS,
            encodings: EncodingLimits::default(),
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            latency_monitor_threshold: 0,
            latency_tracking: true,
            tracking_table_max_keys: 1_000_000,
            latency_tracking_info_percentiles: vec![50.0, 99.0, 99.9],
            maxmemory: 0,
            maxmemory_policy: MaxmemoryPolicy::NoEviction,
            maxmemory_clients: 0,
            compat_version: crate::base::compat::CompatVersion::DEFAULT,
            maxmemory_samples: 5,
            maxmemory_eviction_tenacity: 10,
            notify_keyspace_events: 0,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            lazyfree_lazy_eviction: false,
            lazyfree_lazy_expire: false,
            lazyfree_lazy_user_del: false,
            lazyfree_lazy_server_del: false,
            lazyfree_lazy_user_flush: false,
            min_replicas_to_write: 0,
            min_replicas_max_lag: 10,
            repl_backlog_size: 1024 * 1024,
            repl_ping_replica_period: 10,
            repl_timeout: 60,
            repl_backlog_ttl: 3600,
            repl_diskless_load: "disabled".into(),
            replica_read_only: true,
            replica_serve_stale_data: true,
            activerehashing: true,
            always_show_logo: false,
            propagation_error_behavior: "ignore".into(),
            sanitize_dump_payload: "no".into(),
            use_exit_on_panic: false,
            replicaof: None,
            masteruser: String::new(),
            masterauth: String::new(),
            replica_announce_ip: String::new(),
            replica_announce_port: 0,
            replica_priority: 100,
            replica_announced: true,
            repl_diskless_sync: true,
            repl_diskless_sync_delay: 5,
            repl_diskless_sync_max_replicas: 0,
            // Redis's defaults are DEFAULT_SAVE_POINTS, which `embedis-server` starts from; a
            // server inside a test process saves nothing unless asked to.
            save_points: Vec::new(),
            dbfilename: "dump.rdb".into(),
            rdbcompression: true,
            rdbchecksum: true,
            stop_writes_on_bgsave_error: true,
            replica_ignore_disk_write_errors: false,
            rdb_key_save_delay: 0,
            key_load_delay: 0,
            loading_process_events_interval_bytes: 2 * 1024 * 1024,
            rdb_del_sync_files: false,
            appendonly: false,
            appendfilename: "appendonly.aof".into(),
            appenddirname: "appendonlydir".into(),
            appendfsync: AppendFsync::Everysec,
            aof_load_truncated: true,
            auto_aof_rewrite_percentage: 100,
            auto_aof_rewrite_min_size: 64 * 1024 * 1024,
            no_appendfsync_on_rewrite: false,
            aof_rewrite_incremental_fsync: true,
            aof_use_rdb_preamble: true,
            aof_disable_auto_gc: false,
            aof_timestamp_enabled: false,
        }
    }
}

/// `maxmemory-policy`: which keys eviction may pick (all, or only those with a TTL) and how it
/// ranks them (idle time, access frequency, nearest deadline, or not at all). Kept as an enum so
/// that the checks made on every access and every command are comparisons, not string matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxmemoryPolicy {
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
    AllkeysLru,
    AllkeysLfu,
    AllkeysRandom,
    #[default]
    NoEviction,
}

impl MaxmemoryPolicy {
    /// The names, in the order Redis lists them in its CONFIG SET error.
    pub const NAMES: &'static [&'static str] = &[
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "noeviction",
    ];
    const ALL: [MaxmemoryPolicy; 8] = [
        MaxmemoryPolicy::VolatileLru,
        MaxmemoryPolicy::VolatileLfu,
        MaxmemoryPolicy::VolatileRandom,
        MaxmemoryPolicy::VolatileTtl,
        MaxmemoryPolicy::AllkeysLru,
        MaxmemoryPolicy::AllkeysLfu,
        MaxmemoryPolicy::AllkeysRandom,
        MaxmemoryPolicy::NoEviction,
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .map(|i| Self::ALL[i])
    }

    /// Ranks keys by idle time.
    pub fn is_lru(self) -> bool {
        matches!(self, Self::VolatileLru | Self::AllkeysLru)
    }

    /// Ranks keys by access frequency (the object header holds an LFU counter).
    pub fn is_lfu(self) -> bool {
        matches!(self, Self::VolatileLfu | Self::AllkeysLfu)
    }

    /// May evict keys without a TTL.
    pub fn is_allkeys(self) -> bool {
        matches!(
            self,
            Self::AllkeysLru | Self::AllkeysLfu | Self::AllkeysRandom
        )
    }
}

impl Config {
    /// What the eviction policy makes of the objects' access bits (see
    /// [`crate::base::value::AccessClock`]): LFU counters under an LFU policy, and no shared integers
    /// when `maxmemory` is set with an LRU or LFU policy (Redis's
    /// `MAXMEMORY_FLAG_NO_SHARED_INTEGERS`).
    pub fn access_clock(&self) -> crate::base::value::AccessClock {
        let policy = self.maxmemory_policy;
        crate::base::value::AccessClock {
            lfu: policy.is_lfu(),
            private_ints: self.maxmemory != 0 && (policy.is_lru() || policy.is_lfu()),
            log_factor: self.lfu_log_factor,
            decay_time: self.lfu_decay_time,
            no_touch: false,
        }
    }
}

impl std::fmt::Display for MaxmemoryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redis's multi-argument parameters in a config file: several words, or one quoted word
    /// that Redis splits (`redis.conf` itself has `client-output-buffer-limit normal 0 0 0`,
    /// which embedis refused with "wrong number of arguments").
    #[test]
    fn multi_argument_parameters_load_as_in_redis() {
        let mut c = Config::default();
        c.load_text(
            "client-output-buffer-limit normal 1mb 2mb 3\n\
             client-output-buffer-limit \"pubsub 4mb 5mb 6\"\n\
             replicaof \"10.0.0.1 6380\"\n\
             latency-tracking-info-percentiles 50 99\n",
        )
        .unwrap();
        let limits = |c: &Config| c.matching(&[b"client-output-buffer-limit"])[0].1.clone();
        assert_eq!(
            limits(&c),
            "normal 1048576 2097152 3 slave 268435456 67108864 60 pubsub 4194304 5242880 6"
        );
        assert_eq!(c.replicaof, Some(("10.0.0.1".to_string(), 6380)));
        assert_eq!(
            c.matching(&[b"latency-tracking-info-percentiles"])[0].1,
            "50 99"
        );
        // A single-argument parameter still takes exactly one word.
        let error = Config::default().load_text("port 1 2\n").unwrap_err();
        assert_eq!(error.reason, "wrong number of arguments");
    }

    /// Redis trims a config line of spaces, tabs, CR and LF only (the config_file fuzz target
    /// found a vertical tab trimmed away): `port 6380<VT>` is the value `6380<VT>`, not a port.
    #[test]
    fn config_lines_are_trimmed_as_redis_trims_them() {
        assert!(Config::default().load_text("port 6380\x0b\n").is_err());
        let mut c = Config::default();
        c.load_text("\t port 6380 \r\n").unwrap();
        assert_eq!(c.port, 6380);
    }

    /// Redis 7.0.15 answers LOADING for its DENY_LOADING_CONFIG parameters while loading (a
    /// replica's async load included; integration/replication checks `appendonly`), and an
    /// unknown name earlier in the same CONFIG SET still wins.
    #[test]
    fn load_dependent_parameters_wait_for_the_load() {
        let mut c = Config::default();
        for name in ["appendonly", "APPENDONLY", "repl-diskless-load", "dir"] {
            let value = if name == "dir" { "/tmp" } else { "no" };
            assert_eq!(
                c.set_many_with(&[(name, value)], true, true).unwrap_err(),
                "LOADING Redis is loading the dataset in memory"
            );
        }
        assert!(c.set_many_with(&[("hz", "20")], true, true).is_ok());
        assert_eq!(
            c.set_many_with(&[("foo", "1"), ("appendonly", "no")], true, true)
                .unwrap_err(),
            "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
        );
        assert!(c
            .set_many_with(&[("appendonly", "no")], true, false)
            .is_ok());
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1KB"), Some(1024));
        assert_eq!(parse_memory("2mb"), Some(2 * 1024 * 1024));
        assert_eq!(parse_memory("3g"), Some(3_000_000_000));
        assert_eq!(parse_memory("x"), None);
        assert_eq!(parse_memory("-1"), None);
    }

    #[test]
    fn config_set_is_all_or_nothing_with_redis_errors() {
        // 7.0's texts (loglevel `nothing` is 7.2's).
        let mut c = Config {
            compat_version: crate::base::compat::CompatVersion::V7_0,
            ..Config::default()
        };
        assert_eq!(
            c.set_many(&[("hz", "20"), ("timeout", "x")]).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"
        );
        assert_eq!(c.hz, 10, "nothing applied");
        assert_eq!(
            c.set_many(&[("hz", "20"), ("HZ", "30")]).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'HZ') - duplicate parameter"
        );
        assert_eq!(
            c.set_many(&[("foo", "1")]).unwrap_err(),
            "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
        );
        assert_eq!(
            c.set_many(&[("databases", "3")]).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"
        );
        assert_eq!(
            c.set_many(&[("loglevel", "loud")]).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: debug, verbose, notice, warning"
        );
        c.set_many(&[("hz", "5000"), ("maxclients", "7")]).unwrap();
        assert_eq!((c.hz, c.maxclients), (500, 7));
    }

    #[test]
    fn maxmemory_family() {
        let mut c = Config::default();
        c.set_many(&[("maxmemory", "1mb"), ("maxmemory-samples", "7")])
            .unwrap();
        assert_eq!((c.maxmemory, c.maxmemory_samples), (1 << 20, 7));
        // One bad pair rolls the others back, with the failing parameter's own error.
        assert_eq!(
            c.set_many(&[("maxmemory", "5"), ("maxmemory-clients", "200%")])
                .unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - percentage argument must be less or equal to 100"
        );
        assert_eq!(c.maxmemory, 1 << 20);
        assert_eq!(
            c.set_many(&[("maxmemory-policy", "lru")]).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
        );
        assert_eq!(c.maxmemory_policy, MaxmemoryPolicy::NoEviction);
        for name in MaxmemoryPolicy::NAMES {
            c.set_many(&[("maxmemory-policy", &name.to_ascii_uppercase())])
                .unwrap();
            assert_eq!(c.maxmemory_policy.name(), *name);
            assert_eq!(c.matching(&[b"maxmemory-policy"])[0].1, *name);
        }
        // Shared integers stop with maxmemory under LRU and LFU policies only.
        c.set_many(&[("maxmemory-policy", "allkeys-lfu"), ("lfu-log-factor", "3")])
            .unwrap();
        let clock = c.access_clock();
        assert!(clock.lfu && clock.private_ints && clock.log_factor == 3);
        c.set_many(&[("maxmemory-policy", "volatile-random")])
            .unwrap();
        assert!(!c.access_clock().private_ints && !c.access_clock().lfu);
        c.set_many(&[("maxmemory-policy", "volatile-lru"), ("maxmemory", "0")])
            .unwrap();
        assert!(!c.access_clock().private_ints);
        // Hidden parameters answer by name only; aliases are listed under both names.
        assert!(c
            .matching(&[b"*"])
            .iter()
            .all(|(n, _)| n != "key-load-delay"));
        assert_eq!(
            c.matching(&[b"key-load-delay"]),
            vec![("key-load-delay".to_string(), "0".to_string())]
        );
        let names: Vec<String> = c.matching(&[b"*of"]).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["replicaof", "slaveof"]);
    }

    /// Redis 7.0.15's cluster parameters: defaults as CONFIG GET prints them, aliases, and the
    /// checks CONFIG SET and the config file share.
    #[test]
    fn cluster_parameters() {
        let mut c = Config::default();
        let get = |c: &Config, name: &str| c.matching(&[name.as_bytes()])[0].1.clone();
        let defaults = [
            ("cluster-require-full-coverage", "yes"),
            ("cluster-allow-reads-when-down", "no"),
            ("cluster-replica-validity-factor", "10"),
            ("cluster-slave-validity-factor", "10"),
            ("cluster-migration-barrier", "1"),
            ("cluster-allow-replica-migration", "yes"),
            ("cluster-replica-no-failover", "no"),
            ("cluster-slave-no-failover", "no"),
            ("cluster-announce-hostname", ""),
            ("cluster-link-sendbuf-limit", "0"),
            ("cluster-allow-pubsubshard-when-down", "yes"),
            ("cluster-preferred-endpoint-type", "ip"),
        ];
        for (name, value) in defaults {
            assert_eq!(get(&c, name), value, "{name}");
        }
        // Every cluster-* parameter of Redis 7.0.15, aliases included.
        assert_eq!(c.matching(&[b"cluster-*"]).len(), 20);

        c.set_many(&[
            ("cluster-slave-validity-factor", "0"),
            ("cluster-slave-no-failover", "YES"),
            ("cluster-preferred-endpoint-type", "Unknown-Endpoint"),
            ("cluster-announce-hostname", "node-1.example.COM"),
            ("cluster-link-sendbuf-limit", "1kb"),
            ("cluster-require-full-coverage", "no"),
        ])
        .unwrap();
        let cluster = &c.cluster;
        assert_eq!(cluster.replica_validity_factor, 0);
        assert!(cluster.replica_no_failover && !cluster.require_full_coverage);
        assert_eq!(cluster.preferred_endpoint_type, "unknown-endpoint");
        assert_eq!(cluster.announce_hostname, "node-1.example.COM");
        assert_eq!(cluster.link_sendbuf_limit, 1024);
        // A name and its alias in one CONFIG SET: the last one wins, as in Redis 7.0.
        c.set_many(&[
            ("cluster-replica-no-failover", "yes"),
            ("cluster-slave-no-failover", "no"),
        ])
        .unwrap();
        assert!(!c.cluster.replica_no_failover);
        assert_eq!(
            c.set_many(&[
                ("cluster-slave-no-failover", "yes"),
                ("CLUSTER-SLAVE-NO-FAILOVER", "no")
            ])
            .unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'CLUSTER-SLAVE-NO-FAILOVER') - duplicate parameter"
        );

        let refused = |c: &mut Config, name: &str, value: &str| {
            let error = c.set_many(&[(name, value)]).unwrap_err();
            let prefix =
                format!("ERR CONFIG SET failed (possibly related to argument '{name}') - ");
            error.strip_prefix(&prefix).unwrap().to_string()
        };
        assert_eq!(
            refused(&mut c, "cluster-announce-hostname", "a_b"),
            "Hostnames may only contain alphanumeric characters, hyphens or dots"
        );
        assert_eq!(
            refused(&mut c, "cluster-announce-hostname", &"a".repeat(256)),
            "Hostnames must be less than 256 characters"
        );
        c.set_many(&[("cluster-announce-hostname", &"a".repeat(255))])
            .unwrap();
        // A C string: what follows a NUL is neither checked nor kept.
        c.set_many(&[("cluster-announce-hostname", "h\0_")])
            .unwrap();
        assert_eq!(c.cluster.announce_hostname, "h");
        assert_eq!(
            refused(&mut c, "cluster-preferred-endpoint-type", "dns"),
            "argument(s) must be one of the following: ip, hostname, unknown-endpoint"
        );
        assert_eq!(
            refused(&mut c, "cluster-migration-barrier", "-1"),
            "argument must be between 0 and 2147483647 inclusive"
        );
        assert_eq!(
            refused(&mut c, "cluster-link-sendbuf-limit", "-1"),
            "argument must be a memory value"
        );
        assert_eq!(
            refused(&mut c, "cluster-allow-reads-when-down", "1"),
            "argument must be 'yes' or 'no'"
        );

        // The command line and the config file take them, under either name.
        let args: Vec<String> = [
            "--cluster-require-full-coverage",
            "no",
            "--cluster-slave-validity-factor",
            "3",
        ]
        .map(String::from)
        .to_vec();
        let (_, text) = Config::args_to_text(&args).unwrap();
        let mut c = Config::default();
        c.load_text(&text).unwrap();
        assert!(!c.cluster.require_full_coverage);
        assert_eq!(c.cluster.replica_validity_factor, 3);
        let error = c.load_text("cluster-announce-hostname a_b\n").unwrap_err();
        assert_eq!(
            error.reason,
            "Hostnames may only contain alphanumeric characters, hyphens or dots"
        );
    }

    /// Redis's unsigned memory values, as redis-server 7.0.15 answered them for
    /// `cluster-link-sendbuf-limit` (CONFIG SET, then CONFIG GET).
    #[test]
    fn unsigned_memory_values_read_as_in_redis() {
        let cases: &[(&str, Option<u64>)] = &[
            ("", Some(0)),
            ("0", Some(0)),
            ("007", Some(7)),
            ("b", Some(0)),
            ("kb", Some(0)),
            ("5B", Some(5)),
            ("1k", Some(1000)),
            ("1kB", Some(1024)),
            ("1m", Some(1_000_000)),
            ("1mb", Some(1 << 20)),
            ("1g", Some(1_000_000_000)),
            ("1GB", Some(1 << 30)),
            ("5\0junk", Some(5)),
            ("9223372036854775808", Some(1 << 63)),
            ("18446744073709551616", Some(u64::MAX)),
            ("99999999999999999999", Some(u64::MAX)),
            ("20000000000gb", Some(3028092406290448384)),
            ("17179869184gb", Some(0)),
            ("-0", None),
            ("-5", None),
            ("+5", None),
            (" 5", None),
            ("5 ", None),
            ("0x10", None),
            ("1.5k", None),
            ("1t", None),
            ("1bb", None),
            ("1 kb", None),
            ("k1", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_memory_u64(text), *expected, "{text:?}");
        }
        assert_eq!(parse_memory_u64(&"1".repeat(127)), Some(u64::MAX));
        assert_eq!(parse_memory_u64(&"1".repeat(128)), None);
        assert_eq!(
            parse_memory_u64(&format!("{}kb", "1".repeat(127))),
            Some(18446744073709550592)
        );
    }

    #[test]
    fn get_with_patterns() {
        let c = Config::default();
        let got = c.matching(&[b"hz", b"max*"]);
        assert!(got.contains(&("hz".into(), "10".into())));
        assert!(got.contains(&("maxclients".into(), "10000".into())));
        assert!(got.contains(&("maxmemory".into(), "0".into())));
    }

    /// Redis's `main` reading of option names and values (its introspection unit's cases):
    /// a name alone takes the next argument even if it starts with `--`, `--save` before an
    /// option or at the end is `save ""`, and a multi-word parameter with no word is refused
    /// by its own check.
    #[test]
    fn startup_arguments_as_redis_reads_them() {
        let parse = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let (_, text) = Config::args_to_text(&args).unwrap();
            let mut c = Config {
                save_points: DEFAULT_SAVE_POINTS.to_vec(),
                ..Config::default()
            };
            c.load_text(&format!("save 900 1\n{text}")).map(|()| c)
        };
        let c = parse(&["--save", "--loglevel", "verbose"]).unwrap();
        assert!(c.save_points.is_empty());
        assert_eq!(c.loglevel, LogLevel::Verbose);
        assert!(parse(&["--loglevel", "verbose", "--save"])
            .unwrap()
            .save_points
            .is_empty());
        let c = parse(&[
            "--proc-title-template",
            "--save",
            "--save",
            "",
            "--loglevel",
            "debug",
        ])
        .unwrap();
        assert_eq!(c.process.proc_title_template, "--save");
        assert!(c.save_points.is_empty());
        // A file's first `save` replaces the defaults; more lines add to it.
        let c = parse(&["--save", "100 100"]).unwrap();
        assert_eq!(c.save_points, vec![(900, 1), (100, 100)]);
        let err = parse(&["--shutdown-on-sigint"]).unwrap_err();
        assert!(
            err.reason.contains("must be one of the following"),
            "{}",
            err.reason
        );
        let err = parse(&["--port", "--bla", "--loglevel", "verbose"]).unwrap_err();
        assert_eq!(err.line, "port \"--bla\"");
        let err = parse(&["--replicaof", "127.0.0.1", "abc"]).unwrap_err();
        assert_eq!(err.reason, "Invalid master port");
        let err = parse(&["--replicaof", "--127.0.0.1", "--abc"]).unwrap_err();
        assert_eq!(err.line, "replicaof \"--127.0.0.1\"");
        assert_eq!(err.reason, "wrong number of arguments");
        let c = parse(&["--replicaof", "no", "one"]).unwrap();
        assert_eq!(c.replicaof, None);
        // Words before any option make a line of their own, after the config file.
        let args: Vec<String> = ["a.conf", "loglevel", "verbose", "--maxmemory '700mb'"]
            .map(String::from)
            .to_vec();
        let (file, text) = Config::args_to_text(&args).unwrap();
        assert_eq!(file.as_deref(), Some("a.conf"));
        let mut c = Config::default();
        c.load_text(&text).unwrap();
        assert_eq!((c.loglevel, c.maxmemory), (LogLevel::Verbose, 700 << 20));
    }

    #[test]
    fn startup_arguments_and_files() {
        let args: Vec<String> = ["--port", "7000", "--save", "", "--bind", "127.0.0.1", "::1"]
            .map(String::from)
            .to_vec();
        let (file, text) = Config::args_to_text(&args).unwrap();
        assert!(file.is_none());
        let mut c = Config::default();
        c.load_text(&text).unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.bind, vec!["127.0.0.1", "::1"]);

        let err = c.load_text("# comment\ndaemonize yes").unwrap_err();
        assert_eq!(err.line_number, 2);
        assert!(err.reason.contains("does not implement"), "{}", err.reason);
        c.load_text("notify-keyspace-events KEA").unwrap();
        assert_eq!(
            c.notify_keyspace_events,
            event_class::ALL | event_class::KEYSPACE | event_class::KEYEVENT
        );
        let err = c.load_text("notify-keyspace-events KEQ").unwrap_err();
        assert!(
            err.reason.starts_with("Invalid event class character"),
            "{}",
            err.reason
        );
        let err = c.load_text("frobnicate 1").unwrap_err();
        assert_eq!(err.reason, "Bad directive or wrong number of arguments");
        let err = c.load_text("port abc").unwrap_err();
        assert_eq!(err.reason, "argument couldn't be parsed into an integer");
    }
}
