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
//! A few parameters (`save`, `appendonly`, `daemonize`, `replicaof`, `maxmemory-clients`,
//! `key-load-delay`) are in the table but accept only the value that describes what embedis
//! actually does (no snapshots, no AOF, foreground, never a replica, no client eviction, no
//! loading), so that harnesses passing `--save ""` or `--appendonly no` keep working.

use embedis_datatypes::glob;

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
    /// Writes are refused unless this many replicas are connected with a lag of at most
    /// `min_replicas_max_lag` seconds (either 0 turns the check off). embedis has no replicas,
    /// so a non-zero pair refuses every write, as Redis does with too few good replicas.
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
    /// Microseconds the background save pauses after each key (`rdb-key-save-delay`, a test
    /// control Redis's own suite uses to keep a save running).
    pub rdb_key_save_delay: i64,
    /// Microseconds loading pauses after each key (`key-load-delay`, the loading twin).
    pub key_load_delay: i64,
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
    pub aof_rewrite_incremental_fsync: bool,
    /// `aof-use-rdb-preamble`: an AOF base is an RDB (yes) or commands (no, `.base.aof`).
    pub aof_use_rdb_preamble: bool,
    /// `aof-timestamp-enabled`: `#TS:` annotations in the AOF.
    pub aof_timestamp_enabled: bool,
    /// Cluster mode's parameters (`cluster-*`, see [`crate::model::cluster_view`]).
    pub cluster: ClusterConfig,
    /// The `tls-*` parameters (see [`crate::base::tls`]).
    pub tls: crate::base::tls::TlsConfig,
}

/// The `cluster-*` parameters.
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
    /// `cluster-config-file`: where Redis keeps its nodes.conf (embedis keeps the view in memory
    /// and only reports this name).
    pub config_file: String,
    /// `cluster-node-timeout` (ms): kept for CONFIG GET and clients; no failure detection uses it.
    pub node_timeout: u64,
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
pub const DEFAULT_SAVE_POINTS: [(u64, u64); 3] = [(3600, 1), (300, 100), (60, 10000)];

/// Parses a `save` value: "" (none) or pairs of seconds (>= 1) and changes (>= 0).
pub fn parse_save_points(value: &str) -> Option<Vec<(u64, u64)>> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if value.trim().is_empty() || value == "\"\"" {
        return Some(Vec::new());
    }
    if !words.len().is_multiple_of(2) {
        return None;
    }
    words
        .chunks(2)
        .map(|pair| {
            let seconds: i64 = pair[0].parse().ok()?;
            let changes: i64 = pair[1].parse().ok()?;
            (seconds >= 1 && changes >= 0).then_some((seconds as u64, changes as u64))
        })
        .collect()
}

/// When collections leave their compact encodings, as Redis's `*-max-listpack-*` and
/// `set-max-intset-entries` parameters say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodingLimits {
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
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

/// Parses a `latency-tracking-info-percentiles` value as Redis does: numbers separated by single
/// spaces (so an extra space is an empty, invalid number; an empty value is no number at all),
/// each a C double between 0 and 100. (Rust's float syntax stands in
/// for `strtod`: hexadecimal floats are refused here where Redis would take them.)
pub fn parse_percentiles(value: &str) -> Result<Vec<f64>, ValueError> {
    let mut out = Vec::new();
    if value.is_empty() {
        return Ok(out);
    }
    for word in value.split(' ') {
        let p: f64 = word
            .parse()
            .ok()
            .filter(|p: &f64| !p.is_nan())
            // Out of a double's range is a parse failure for Redis (ERANGE), "inf" is a value.
            .filter(|p: &f64| p.is_finite() || word.to_ascii_lowercase().contains("inf"))
            .ok_or(ValueError::Custom(
                "Invalid latency-tracking-info-percentiles parameters",
            ))?;
        if !(0.0..=100.0).contains(&p) {
            return Err(ValueError::Custom(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
            ));
        }
        out.push(p);
    }
    Ok(out)
}

/// A percentile as Redis prints it in CONFIG GET and INFO latencystats: six decimals with the
/// trailing zeros (and a bare point) trimmed — `50`, `99.9`.
pub fn percentile_text(p: f64) -> String {
    let text = format!("{p:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parses a `client-output-buffer-limit` value as Redis does: groups of
/// `<class> <hard> <soft> <soft seconds>`, all checked before any is applied.
pub fn parse_obuf_limits(value: &str) -> Result<Vec<(usize, ObufLimit)>, ValueError> {
    let words: Vec<&str> = value.split_ascii_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err(ValueError::Custom(
            "Wrong number of arguments in buffer limit configuration.",
        ));
    }
    let mut out = Vec::new();
    for group in words.chunks(4) {
        let class = match group[0].to_ascii_lowercase().as_str() {
            "normal" => ObufLimit::NORMAL,
            "slave" | "replica" => ObufLimit::REPLICA,
            "pubsub" => ObufLimit::PUBSUB,
            _ => {
                return Err(ValueError::Custom(
                    "Invalid client class specified in buffer limit configuration.",
                ))
            }
        };
        let hard = parse_memory(group[1]);
        let soft = parse_memory(group[2]);
        let seconds = parse_int(group[3]);
        match (hard, soft, seconds) {
            (Some(hard), Some(soft), Some(seconds)) if seconds >= 0 => out.push((
                class,
                ObufLimit {
                    hard: hard as u64,
                    soft: soft as u64,
                    soft_seconds: seconds as u64,
                },
            )),
            _ => {
                return Err(ValueError::Custom(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
                ))
            }
        }
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Verbose,
    Notice,
    Warning,
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
                ..ClusterConfig::default()
            },
            tls: crate::base::tls::TlsConfig::default(),
            port: 6379,
            bind: vec!["127.0.0.1".into(), "-::1".into()],
            unixsocket: String::new(),
            unixsocketperm: 0,
            requirepass: String::new(),
            aclfile: String::new(),
            acllog_max_len: 128,
            acl_pubsub_all: false,
            users: Vec::new(),
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
            maxmemory_samples: 5,
            maxmemory_eviction_tenacity: 10,
            notify_keyspace_events: 0,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            lazyfree_lazy_eviction: false,
            lazyfree_lazy_expire: false,
            lazyfree_lazy_user_del: false,
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
            rdb_key_save_delay: 0,
            key_load_delay: 0,
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
        }
    }
}

impl std::fmt::Display for MaxmemoryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a parameter is, for parsing and for Redis's error texts.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Int {
        min: i64,
        max: i64,
    },
    Memory {
        min: i64,
        max: i64,
    },
    Bool,
    Choice(&'static [&'static str]),
    Text,
    /// Accepts only the listed values: the ones that describe what embedis does.
    Only(&'static [&'static str]),
    /// One of Redis's `choices` (Redis's error otherwise), of which embedis implements only
    /// `implemented` (the others are refused as not implemented, never silently accepted).
    PartialChoice {
        choices: &'static [&'static str],
        implemented: &'static [&'static str],
    },
    /// A memory size or a percentage (`maxmemory-clients`) with Redis's checks; embedis has no
    /// client eviction, so only `0` (off) is accepted.
    MemoryOrPercentOff,
}

/// One configuration parameter.
pub struct Param {
    pub name: &'static str,
    /// Old names (Redis 7.0 keeps `*-ziplist-*` for `*-listpack-*`, etc.).
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    pub mutable: bool,
    /// Hidden from logs (passwords).
    pub sensitive: bool,
    pub get: fn(&Config) -> String,
    /// Stores an already validated value.
    pub set: fn(&mut Config, &str),
}

const INT_MAX: i64 = i32::MAX as i64;
const INT_MIN: i64 = i32::MIN as i64;

/// The classes of keyspace notifications, as `notify-keyspace-events` spells them: one bit per
/// letter (Redis's own bit values, so that a flag set reads the same in both). `K` and `E` say
/// where events go (the `__keyspace@…` and `__keyevent@…` channels), the others which events.
pub mod event_class {
    pub const KEYSPACE: u32 = 1 << 0;
    pub const KEYEVENT: u32 = 1 << 1;
    pub const GENERIC: u32 = 1 << 2;
    pub const STRING: u32 = 1 << 3;
    pub const LIST: u32 = 1 << 4;
    pub const SET: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const ZSET: u32 = 1 << 7;
    pub const EXPIRED: u32 = 1 << 8;
    pub const EVICTED: u32 = 1 << 9;
    pub const STREAM: u32 = 1 << 10;
    pub const KEY_MISS: u32 = 1 << 11;
    pub const MODULE: u32 = 1 << 13;
    pub const NEW: u32 = 1 << 14;
    /// `A`: every class but key misses and new keys, which are noisy enough that Redis makes
    /// them opt-in.
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

    /// The class of each letter that `A` abbreviates, in the order CONFIG GET lists them.
    const SPELLED: [(u8, u32); 11] = [
        (b'g', GENERIC),
        (b'$', STRING),
        (b'l', LIST),
        (b's', SET),
        (b'h', HASH),
        (b'z', ZSET),
        (b'x', EXPIRED),
        (b'e', EVICTED),
        (b't', STREAM),
        (b'd', MODULE),
        (b'n', NEW),
    ];

    /// The classes `letters` names (case matters: `e` is evicted, `E` keyevent), or None if it
    /// holds a letter that names none.
    pub fn from_letters(letters: &str) -> Option<u32> {
        letters.bytes().try_fold(0, |flags, letter| {
            let class = match letter {
                b'A' => ALL,
                b'K' => KEYSPACE,
                b'E' => KEYEVENT,
                b'm' => KEY_MISS,
                _ => SPELLED.iter().find(|(l, _)| *l == letter)?.1,
            };
            Some(flags | class)
        })
    }

    /// The canonical spelling CONFIG GET reports: `A` when it covers every class it stands
    /// for, else the class letters in a fixed order; then `K`, `E` and `m`.
    pub fn to_letters(flags: u32) -> String {
        let mut out = String::new();
        if flags & ALL == ALL {
            // Redis lists nothing else here, not even `n`, which `A` does not include: CONFIG
            // GET of `AnE` says `AE` although new-key events stay on.
            out.push('A');
        } else {
            for (letter, class) in SPELLED {
                if flags & class != 0 {
                    out.push(letter as char);
                }
            }
        }
        for (letter, class) in [('K', KEYSPACE), ('E', KEYEVENT), ('m', KEY_MISS)] {
            if flags & class != 0 {
                out.push(letter);
            }
        }
        out
    }
}

macro_rules! param {
    ($name:literal, $kind:expr, mutable: $mutable:expr, get: $get:expr, set: $set:expr) => {
        Param {
            name: $name,
            aliases: &[],
            kind: $kind,
            mutable: $mutable,
            sensitive: false,
            get: $get,
            set: $set,
        }
    };
}

/// `host port` (REPLICAOF's arguments in the config file), or nothing for an empty value.
fn parse_replicaof(v: &str) -> Option<(String, u16)> {
    let mut words = v.split_whitespace();
    let host = words.next()?;
    let port = words.next()?.parse().ok()?;
    Some((host.to_string(), port))
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

fn parse_yes_no(s: &str) -> bool {
    s.eq_ignore_ascii_case("yes")
}

fn access_name(a: Access) -> &'static str {
    match a {
        Access::No => "no",
        Access::Yes => "yes",
        Access::Local => "local",
    }
}

fn parse_access(v: &str) -> Access {
    match v.to_ascii_lowercase().as_str() {
        "yes" => Access::Yes,
        "local" => Access::Local,
        _ => Access::No,
    }
}

/// Every parameter embedis implements.
pub static PARAMS: &[Param] = &[
    param!("port", Kind::Int { min: 0, max: 65535 }, mutable: true,
        get: |c| c.port.to_string(), set: |c, v| c.port = v.parse().unwrap_or(0)),
    param!("bind", Kind::Text, mutable: true,
        get: |c| c.bind.join(" "),
        set: |c, v| c.bind = v.split_ascii_whitespace().map(String::from).collect()),
    param!("unixsocket", Kind::Text, mutable: false,
        get: |c| c.unixsocket.clone(), set: |c, v| c.unixsocket = v.to_string()),
    param!("unixsocketperm", Kind::Text, mutable: false,
        get: |c| format!("{:o}", c.unixsocketperm),
        set: |c, v| c.unixsocketperm = u32::from_str_radix(v, 8).unwrap_or(0)),
    Param {
        name: "requirepass",
        aliases: &[],
        kind: Kind::Text,
        mutable: true,
        sensitive: true,
        get: |c| c.requirepass.clone(),
        set: |c, v| c.requirepass = v.to_string(),
    },
    param!("databases", Kind::Int { min: 1, max: INT_MAX }, mutable: false,
        get: |c| c.databases.to_string(), set: |c, v| c.databases = v.parse().unwrap_or(16)),
    param!("maxclients", Kind::Int { min: 1, max: u32::MAX as i64 }, mutable: true,
        get: |c| c.maxclients.to_string(), set: |c, v| c.maxclients = v.parse().unwrap_or(1)),
    param!("timeout", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.timeout.to_string(), set: |c, v| c.timeout = v.parse().unwrap_or(0)),
    param!("slowlog-log-slower-than", Kind::Int { min: -1, max: i64::MAX }, mutable: true,
        get: |c| c.slowlog_log_slower_than.to_string(),
        set: |c, v| c.slowlog_log_slower_than = v.parse().unwrap_or(10_000)),
    param!("aclfile", Kind::Text, mutable: false,
        get: |c| c.aclfile.clone(), set: |c, v| c.aclfile = v.to_string()),
    param!("acllog-max-len", Kind::Int { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.acllog_max_len.to_string(),
        set: |c, v| c.acllog_max_len = v.parse().unwrap_or(128)),
    param!("acl-pubsub-default", Kind::Choice(&["allchannels", "resetchannels"]), mutable: true,
        get: |c| if c.acl_pubsub_all { "allchannels" } else { "resetchannels" }.to_string(),
        set: |c, v| c.acl_pubsub_all = v.eq_ignore_ascii_case("allchannels")),
    param!("slowlog-max-len", Kind::Int { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.slowlog_max_len.to_string(),
        set: |c, v| c.slowlog_max_len = v.parse().unwrap_or(128)),
    param!("tracking-table-max-keys", Kind::Int { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.tracking_table_max_keys.to_string(),
        set: |c, v| c.tracking_table_max_keys = v.parse().unwrap_or(1_000_000)),
    param!("latency-tracking", Kind::Bool, mutable: true,
        get: |c| yes_no(c.latency_tracking), set: |c, v| c.latency_tracking = parse_yes_no(v)),
    // Several values in one, separated by spaces as Redis splits a multi-argument parameter; ""
    // is none at all.
    param!("latency-tracking-info-percentiles", Kind::Text, mutable: true,
        get: |c| {
            let texts: Vec<String> =
                c.latency_tracking_info_percentiles.iter().map(|p| percentile_text(*p)).collect();
            texts.join(" ")
        },
        set: |c, v| c.latency_tracking_info_percentiles = parse_percentiles(v).unwrap_or_default()),
    param!("latency-monitor-threshold", Kind::Int { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.latency_monitor_threshold.to_string(),
        set: |c, v| c.latency_monitor_threshold = v.parse().unwrap_or(0)),
    // Redis accepts any non-negative hz and clamps it to 1..=500.
    Param {
        name: "busy-reply-threshold",
        aliases: &["lua-time-limit"],
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.busy_reply_threshold.to_string(),
        set: |c, v| c.busy_reply_threshold = v.parse().unwrap_or(5000),
    },
    param!("hz", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.hz.to_string(),
        set: |c, v| c.hz = v.parse::<i64>().unwrap_or(10).clamp(1, 500) as u32),
    param!("dynamic-hz", Kind::Bool, mutable: true,
        get: |c| yes_no(c.dynamic_hz), set: |c, v| c.dynamic_hz = parse_yes_no(v)),
    param!("loglevel", Kind::Choice(&["debug", "verbose", "notice", "warning"]), mutable: true,
    get: |c| match c.loglevel {
        LogLevel::Debug => "debug",
        LogLevel::Verbose => "verbose",
        LogLevel::Notice => "notice",
        LogLevel::Warning => "warning",
    }
    .to_string(),
    set: |c, v| {
        c.loglevel = match v.to_ascii_lowercase().as_str() {
            "debug" => LogLevel::Debug,
            "verbose" => LogLevel::Verbose,
            "warning" => LogLevel::Warning,
            _ => LogLevel::Notice,
        }
    }),
    param!("logfile", Kind::Text, mutable: false,
        get: |c| c.logfile.clone(), set: |c, v| c.logfile = v.to_string()),
    param!("dir", Kind::Text, mutable: true,
    get: |c| c.dir.clone(),
    set: |c, v| {
        c.dir = std::fs::canonicalize(v)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| v.to_string())
    }),
    param!("pidfile", Kind::Text, mutable: false,
        get: |c| c.pidfile.clone(), set: |c, v| c.pidfile = v.to_string()),
    param!("enable-debug-command", Kind::Choice(&["no", "yes", "local"]), mutable: false,
    get: |c| match c.enable_debug_command {
        Access::No => "no",
        Access::Yes => "yes",
        Access::Local => "local",
    }
    .to_string(),
    set: |c, v| {
        c.enable_debug_command = match v.to_ascii_lowercase().as_str() {
            "yes" => Access::Yes,
            "local" => Access::Local,
            _ => Access::No,
        }
    }),
    param!("enable-protected-configs", Kind::Choice(&["no", "yes", "local"]), mutable: false,
    get: |c| access_name(c.enable_protected_configs).to_string(),
    set: |c, v| c.enable_protected_configs = parse_access(v)),
    param!("io-uring", Kind::Bool, mutable: true,
        get: |c| yes_no(c.io_uring), set: |c, v| c.io_uring = v.eq_ignore_ascii_case("yes")),
    param!("io-threads", Kind::Int { min: 1, max: 128 }, mutable: false,
        get: |c| c.io_threads.to_string(), set: |c, v| c.io_threads = v.parse().unwrap_or(1)),
    param!("proto-max-bulk-len", Kind::Memory { min: 1024 * 1024, max: i64::MAX }, mutable: true,
        get: |c| c.proto_max_bulk_len.to_string(),
        set: |c, v| c.proto_max_bulk_len = parse_memory(v).unwrap_or(512 << 20)),
    param!("client-query-buffer-limit", Kind::Memory { min: 1024 * 1024, max: i64::MAX },
        mutable: true,
        get: |c| c.client_query_buffer_limit.to_string(),
        set: |c, v| c.client_query_buffer_limit = parse_memory(v).unwrap_or(1 << 30)),
    param!("tcp-keepalive", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.tcp_keepalive.to_string(), set: |c, v| c.tcp_keepalive = v.parse().unwrap_or(300)),
    param!("tcp-backlog", Kind::Int { min: 0, max: INT_MAX }, mutable: false,
        get: |c| c.tcp_backlog.to_string(), set: |c, v| c.tcp_backlog = v.parse().unwrap_or(511)),
    param!("client-output-buffer-limit", Kind::Text, mutable: true,
    get: |c| {
        let [n, r, p] = c.obuf_limits;
        format!(
            "normal {} {} {} slave {} {} {} pubsub {} {} {}",
            n.hard, n.soft, n.soft_seconds, r.hard, r.soft, r.soft_seconds,
            p.hard, p.soft, p.soft_seconds
        )
    },
    set: |c, v| {
        for (class, limit) in parse_obuf_limits(v).unwrap_or_default() {
            c.obuf_limits[class] = limit;
        }
    }),
    param!("protected-mode", Kind::Bool, mutable: true,
        get: |c| yes_no(c.protected_mode), set: |c, v| c.protected_mode = parse_yes_no(v)),
    Param {
        name: "hash-max-listpack-entries",
        aliases: &["hash-max-ziplist-entries"],
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.encodings.hash_max_listpack_entries.to_string(),
        set: |c, v| c.encodings.hash_max_listpack_entries = v.parse().unwrap_or(512),
    },
    Param {
        name: "hash-max-listpack-value",
        aliases: &["hash-max-ziplist-value"],
        kind: Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.encodings.hash_max_listpack_value.to_string(),
        set: |c, v| c.encodings.hash_max_listpack_value = parse_memory(v).unwrap_or(64) as usize,
    },
    param!("hll-sparse-max-bytes", Kind::Memory { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.encodings.hll_sparse_max_bytes.to_string(),
        set: |c, v| c.encodings.hll_sparse_max_bytes = parse_memory(v).unwrap_or(3000) as usize),
    param!("stream-node-max-bytes", Kind::Memory { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.encodings.stream_node_max_bytes.to_string(),
        set: |c, v| c.encodings.stream_node_max_bytes = parse_memory(v).unwrap_or(4096) as u64),
    param!("stream-node-max-entries", Kind::Int { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.encodings.stream_node_max_entries.to_string(),
        set: |c, v| c.encodings.stream_node_max_entries = v.parse().unwrap_or(100)),
    param!("set-max-intset-entries", Kind::Int { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.encodings.set_max_intset_entries.to_string(),
        set: |c, v| c.encodings.set_max_intset_entries = v.parse().unwrap_or(512)),
    Param {
        name: "zset-max-listpack-entries",
        aliases: &["zset-max-ziplist-entries"],
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.encodings.zset_max_listpack_entries.to_string(),
        set: |c, v| c.encodings.zset_max_listpack_entries = v.parse().unwrap_or(128),
    },
    Param {
        name: "zset-max-listpack-value",
        aliases: &["zset-max-ziplist-value"],
        kind: Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.encodings.zset_max_listpack_value.to_string(),
        set: |c, v| c.encodings.zset_max_listpack_value = parse_memory(v).unwrap_or(64) as usize,
    },
    Param {
        name: "list-max-listpack-size",
        aliases: &["list-max-ziplist-size"],
        kind: Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.encodings.list_max_listpack_size.to_string(),
        set: |c, v| c.encodings.list_max_listpack_size = v.parse().unwrap_or(-2),
    },
    // Lists created from now on keep this many nodes raw at each end and LZF-compress the others
    // (see datatypes' quicklist); existing lists keep the depth they were created with.
    Param {
        name: "list-compress-depth",
        aliases: &[],
        kind: Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.encodings.list_compress_depth.to_string(),
        set: |c, v| c.encodings.list_compress_depth = v.parse().unwrap_or(0),
    },
    param!("save", Kind::Text, mutable: true,
        get: |c| {
            let pairs: Vec<String> =
                c.save_points.iter().map(|(s, n)| format!("{s} {n}")).collect();
            pairs.join(" ")
        },
        set: |c, v| c.save_points = parse_save_points(v).unwrap_or_default()),
    param!("dbfilename", Kind::Text, mutable: true,
        get: |c| c.dbfilename.clone(), set: |c, v| c.dbfilename = v.to_string()),
    param!("rdbcompression", Kind::Bool, mutable: true,
        get: |c| yes_no(c.rdbcompression), set: |c, v| c.rdbcompression = parse_yes_no(v)),
    param!("rdbchecksum", Kind::Bool, mutable: true,
        get: |c| yes_no(c.rdbchecksum), set: |c, v| c.rdbchecksum = parse_yes_no(v)),
    param!("stop-writes-on-bgsave-error", Kind::Bool, mutable: true,
        get: |c| yes_no(c.stop_writes_on_bgsave_error),
        set: |c, v| c.stop_writes_on_bgsave_error = parse_yes_no(v)),
    param!("rdb-key-save-delay", Kind::Int { min: INT_MIN, max: INT_MAX }, mutable: true,
        get: |c| c.rdb_key_save_delay.to_string(),
        set: |c, v| c.rdb_key_save_delay = v.parse().unwrap_or(0)),
    param!("rdb-del-sync-files", Kind::Bool, mutable: true,
        get: |c| yes_no(c.rdb_del_sync_files), set: |c, v| c.rdb_del_sync_files = parse_yes_no(v)),
    param!("appendonly", Kind::Bool, mutable: true,
        get: |c| yes_no(c.appendonly), set: |c, v| c.appendonly = parse_yes_no(v)),
    param!("appendfilename", Kind::Text, mutable: false,
        get: |c| c.appendfilename.clone(), set: |c, v| c.appendfilename = v.to_string()),
    param!("appenddirname", Kind::Text, mutable: false,
        get: |c| c.appenddirname.clone(), set: |c, v| c.appenddirname = v.to_string()),
    param!("appendfsync", Kind::Choice(&["always", "everysec", "no"]), mutable: true,
    get: |c| c.appendfsync.name().to_string(),
    set: |c, v| c.appendfsync = match v.to_ascii_lowercase().as_str() {
        "always" => AppendFsync::Always,
        "no" => AppendFsync::No,
        _ => AppendFsync::Everysec,
    }),
    param!("aof-load-truncated", Kind::Bool, mutable: true,
        get: |c| yes_no(c.aof_load_truncated), set: |c, v| c.aof_load_truncated = parse_yes_no(v)),
    param!("auto-aof-rewrite-percentage", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.auto_aof_rewrite_percentage.to_string(),
        set: |c, v| c.auto_aof_rewrite_percentage = v.parse().unwrap_or(100)),
    param!("auto-aof-rewrite-min-size", Kind::Memory { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.auto_aof_rewrite_min_size.to_string(),
        set: |c, v| c.auto_aof_rewrite_min_size = parse_memory(v).unwrap_or(0) as u64),
    param!("no-appendfsync-on-rewrite", Kind::Bool, mutable: true,
        get: |c| yes_no(c.no_appendfsync_on_rewrite),
        set: |c, v| c.no_appendfsync_on_rewrite = parse_yes_no(v)),
    param!("aof-rewrite-incremental-fsync", Kind::Bool, mutable: true,
        get: |c| yes_no(c.aof_rewrite_incremental_fsync),
        set: |c, v| c.aof_rewrite_incremental_fsync = parse_yes_no(v)),
    param!("aof-use-rdb-preamble", Kind::Bool, mutable: true,
        get: |c| yes_no(c.aof_use_rdb_preamble),
        set: |c, v| c.aof_use_rdb_preamble = parse_yes_no(v)),
    param!("aof-timestamp-enabled", Kind::Bool, mutable: true,
        get: |c| yes_no(c.aof_timestamp_enabled),
        set: |c, v| c.aof_timestamp_enabled = parse_yes_no(v)),
    param!("notify-keyspace-events", Kind::Text, mutable: true,
        get: |c| event_class::to_letters(c.notify_keyspace_events),
        set: |c, v| c.notify_keyspace_events = event_class::from_letters(v).unwrap_or(0)),
    param!("daemonize", Kind::Only(&["no"]), mutable: false, get: |_| "no".into(), set: |_, _| {}),
    param!("maxmemory", Kind::Memory { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.maxmemory.to_string(),
        set: |c, v| c.maxmemory = parse_memory(v).unwrap_or(0) as u64),
    param!("maxmemory-policy", Kind::Choice(MaxmemoryPolicy::NAMES), mutable: true,
        get: |c| c.maxmemory_policy.name().to_string(),
        set: |c, v| c.maxmemory_policy = MaxmemoryPolicy::parse(v).unwrap_or_default()),
    param!("lfu-log-factor", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.lfu_log_factor.to_string(),
        set: |c, v| c.lfu_log_factor = v.parse().unwrap_or(10)),
    param!("lfu-decay-time", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.lfu_decay_time.to_string(),
        set: |c, v| c.lfu_decay_time = v.parse().unwrap_or(1)),
    param!("lazyfree-lazy-eviction", Kind::Bool, mutable: true,
        get: |c| yes_no(c.lazyfree_lazy_eviction),
        set: |c, v| c.lazyfree_lazy_eviction = parse_yes_no(v)),
    param!("lazyfree-lazy-expire", Kind::Bool, mutable: true,
        get: |c| yes_no(c.lazyfree_lazy_expire),
        set: |c, v| c.lazyfree_lazy_expire = parse_yes_no(v)),
    param!("lazyfree-lazy-user-del", Kind::Bool, mutable: true,
        get: |c| yes_no(c.lazyfree_lazy_user_del),
        set: |c, v| c.lazyfree_lazy_user_del = parse_yes_no(v)),
    param!("maxmemory-samples", Kind::Int { min: 1, max: INT_MAX }, mutable: true,
        get: |c| c.maxmemory_samples.to_string(),
        set: |c, v| c.maxmemory_samples = v.parse().unwrap_or(5)),
    param!("maxmemory-eviction-tenacity", Kind::Int { min: 0, max: 100 }, mutable: true,
        get: |c| c.maxmemory_eviction_tenacity.to_string(),
        set: |c, v| c.maxmemory_eviction_tenacity = v.parse().unwrap_or(10)),
    param!("maxmemory-clients", Kind::MemoryOrPercentOff, mutable: true,
        get: |_| "0".into(), set: |_, _| {}),
    Param {
        name: "min-replicas-to-write",
        aliases: &["min-slaves-to-write"],
        kind: Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.min_replicas_to_write.to_string(),
        set: |c, v| c.min_replicas_to_write = v.parse().unwrap_or(0),
    },
    Param {
        name: "min-replicas-max-lag",
        aliases: &["min-slaves-max-lag"],
        kind: Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.min_replicas_max_lag.to_string(),
        set: |c, v| c.min_replicas_max_lag = v.parse().unwrap_or(10),
    },
    // A debugging delay of loading, which embedis does not do: only "no delay". Hidden from
    // `CONFIG GET *` as in Redis (see [`HIDDEN`]).
    param!("key-load-delay", Kind::Int { min: INT_MIN, max: INT_MAX }, mutable: true,
        get: |c| c.key_load_delay.to_string(),
        set: |c, v| c.key_load_delay = v.parse().unwrap_or(0)),
    param!("repl-backlog-size", Kind::Memory { min: 1, max: i64::MAX }, mutable: true,
        get: |c| c.repl_backlog_size.to_string(),
        set: |c, v| c.repl_backlog_size = parse_memory(v).unwrap_or(1024 * 1024) as u64),
    Param {
        name: "repl-ping-replica-period",
        aliases: &["repl-ping-slave-period"],
        kind: Kind::Int {
            min: 1,
            max: INT_MAX,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.repl_ping_replica_period.to_string(),
        set: |c, v| c.repl_ping_replica_period = v.parse().unwrap_or(10),
    },
    Param {
        name: "replica-read-only",
        aliases: &["slave-read-only"],
        kind: Kind::Bool,
        mutable: true,
        sensitive: false,
        get: |c| yes_no(c.replica_read_only),
        set: |c, v| c.replica_read_only = parse_yes_no(v),
    },
    param!("repl-timeout", Kind::Int { min: 1, max: INT_MAX }, mutable: true,
        get: |c| c.repl_timeout.to_string(),
        set: |c, v| c.repl_timeout = v.parse().unwrap_or(60)),
    // `host port`, or empty for a primary. As in Redis, CONFIG SET cannot change it (REPLICAOF
    // is the command for that).
    Param {
        name: "replicaof",
        aliases: &["slaveof"],
        kind: Kind::Text,
        mutable: false,
        sensitive: false,
        get: |c| match &c.replicaof {
            Some((host, port)) => format!("{host} {port}"),
            None => String::new(),
        },
        set: |c, v| c.replicaof = parse_replicaof(v),
    },
    Param {
        name: "replica-serve-stale-data",
        aliases: &["slave-serve-stale-data"],
        kind: Kind::Bool,
        mutable: true,
        sensitive: false,
        get: |c| yes_no(c.replica_serve_stale_data),
        set: |c, v| c.replica_serve_stale_data = parse_yes_no(v),
    },
    param!("repl-backlog-ttl", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.repl_backlog_ttl.to_string(),
        set: |c, v| c.repl_backlog_ttl = v.parse().unwrap_or(3600)),
    param!("repl-diskless-load", Kind::Choice(&["disabled", "on-empty-db", "swapdb"]),
        mutable: true,
        get: |c| c.repl_diskless_load.clone(),
        set: |c, v| c.repl_diskless_load = v.to_ascii_lowercase()),
    param!("activerehashing", Kind::Bool, mutable: true,
        get: |c| yes_no(c.activerehashing), set: |c, v| c.activerehashing = parse_yes_no(v)),
    param!("always-show-logo", Kind::Bool, mutable: false,
        get: |c| yes_no(c.always_show_logo), set: |c, v| c.always_show_logo = parse_yes_no(v)),
    param!("propagation-error-behavior",
        Kind::Choice(&["ignore", "panic", "panic-on-replicas"]), mutable: true,
        get: |c| c.propagation_error_behavior.clone(),
        set: |c, v| c.propagation_error_behavior = v.to_ascii_lowercase()),
    // Module commands are always refused: embedis loads no modules.
    param!("enable-module-command", Kind::Only(&["no"]), mutable: false,
        get: |_| "no".into(), set: |_, _| {}),
    param!("masteruser", Kind::Text, mutable: true,
        get: |c| c.masteruser.clone(), set: |c, v| c.masteruser = v.to_string()),
    Param {
        name: "masterauth",
        aliases: &[],
        kind: Kind::Text,
        mutable: true,
        sensitive: true,
        get: |c| c.masterauth.clone(),
        set: |c, v| c.masterauth = v.to_string(),
    },
    Param {
        name: "replica-announce-ip",
        aliases: &["slave-announce-ip"],
        kind: Kind::Text,
        mutable: true,
        sensitive: false,
        get: |c| c.replica_announce_ip.clone(),
        set: |c, v| c.replica_announce_ip = v.to_string(),
    },
    Param {
        name: "replica-announce-port",
        aliases: &["slave-announce-port"],
        kind: Kind::Int { min: 0, max: 65535 },
        mutable: true,
        sensitive: false,
        get: |c| c.replica_announce_port.to_string(),
        set: |c, v| c.replica_announce_port = v.parse().unwrap_or(0),
    },
    Param {
        name: "replica-priority",
        aliases: &["slave-priority"],
        kind: Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.replica_priority.to_string(),
        set: |c, v| c.replica_priority = v.parse().unwrap_or(100),
    },
    param!("replica-announced", Kind::Bool, mutable: true,
        get: |c| yes_no(c.replica_announced),
        set: |c, v| c.replica_announced = parse_yes_no(v)),
    param!("repl-diskless-sync", Kind::Bool, mutable: true,
        get: |c| yes_no(c.repl_diskless_sync),
        set: |c, v| c.repl_diskless_sync = parse_yes_no(v)),
    param!("repl-diskless-sync-delay", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.repl_diskless_sync_delay.to_string(),
        set: |c, v| c.repl_diskless_sync_delay = v.parse().unwrap_or(5)),
    param!("repl-diskless-sync-max-replicas", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.repl_diskless_sync_max_replicas.to_string(),
        set: |c, v| c.repl_diskless_sync_max_replicas = v.parse().unwrap_or(0)),
    param!("cluster-enabled", Kind::Bool, mutable: false,
        get: |c| yes_no(c.cluster.enabled), set: |c, v| c.cluster.enabled = parse_yes_no(v)),
    param!("cluster-port", Kind::Int { min: 0, max: 65535 }, mutable: false,
        get: |c| c.cluster.port.to_string(), set: |c, v| c.cluster.port = v.parse().unwrap_or(0)),
    param!("cluster-announce-ip", Kind::Text, mutable: true,
        get: |c| c.cluster.announce_ip.clone(), set: |c, v| c.cluster.announce_ip = v.to_string()),
    param!("cluster-announce-port", Kind::Int { min: 0, max: 65535 }, mutable: true,
        get: |c| c.cluster.announce_port.to_string(),
        set: |c, v| c.cluster.announce_port = v.parse().unwrap_or(0)),
    param!("cluster-announce-bus-port", Kind::Int { min: 0, max: 65535 }, mutable: true,
        get: |c| c.cluster.announce_bus_port.to_string(),
        set: |c, v| c.cluster.announce_bus_port = v.parse().unwrap_or(0)),
    param!("cluster-config-file", Kind::Text, mutable: false,
        get: |c| c.cluster.config_file.clone(), set: |c, v| c.cluster.config_file = v.to_string()),
    param!("cluster-node-timeout", Kind::Int { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.cluster.node_timeout.to_string(),
        set: |c, v| c.cluster.node_timeout = v.parse().unwrap_or(15000)),
    // TLS (see `crate::base::tls`, which says which of these rustls cannot honour). All can change at
    // run time; CONFIG SET rebuilds the context as Redis reloads its certificates.
    param!("tls-port", Kind::Int { min: 0, max: 65535 }, mutable: true,
        get: |c| c.tls.port.to_string(), set: |c, v| c.tls.port = v.parse().unwrap_or(0)),
    param!("tls-session-cache-size", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.tls.session_cache_size.to_string(),
        set: |c, v| c.tls.session_cache_size = v.parse().unwrap_or(20 * 1024)),
    param!("tls-session-cache-timeout", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.tls.session_cache_timeout.to_string(),
        set: |c, v| c.tls.session_cache_timeout = v.parse().unwrap_or(300)),
    param!("tls-cluster", Kind::Bool, mutable: true,
        get: |c| yes_no(c.tls.cluster), set: |c, v| c.tls.cluster = parse_yes_no(v)),
    param!("tls-replication", Kind::Bool, mutable: true,
        get: |c| yes_no(c.tls.replication), set: |c, v| c.tls.replication = parse_yes_no(v)),
    param!("tls-auth-clients", Kind::Choice(crate::base::tls::AuthClients::NAMES), mutable: true,
        get: |c| c.tls.auth_clients.name().to_string(),
        set: |c, v| c.tls.auth_clients = crate::base::tls::AuthClients::parse(v)),
    param!("tls-prefer-server-ciphers", Kind::Bool, mutable: true,
        get: |c| yes_no(c.tls.prefer_server_ciphers),
        set: |c, v| c.tls.prefer_server_ciphers = parse_yes_no(v)),
    param!("tls-session-caching", Kind::Bool, mutable: true,
        get: |c| yes_no(c.tls.session_caching),
        set: |c, v| c.tls.session_caching = parse_yes_no(v)),
    param!("tls-cert-file", Kind::Text, mutable: true,
        get: |c| c.tls.cert_file.clone(), set: |c, v| c.tls.cert_file = v.to_string()),
    param!("tls-key-file", Kind::Text, mutable: true,
        get: |c| c.tls.key_file.clone(), set: |c, v| c.tls.key_file = v.to_string()),
    param!("tls-key-file-pass", Kind::Text, mutable: true,
        get: |c| c.tls.key_file_pass.clone(), set: |c, v| c.tls.key_file_pass = v.to_string()),
    param!("tls-client-cert-file", Kind::Text, mutable: true,
        get: |c| c.tls.client_cert_file.clone(),
        set: |c, v| c.tls.client_cert_file = v.to_string()),
    param!("tls-client-key-file", Kind::Text, mutable: true,
        get: |c| c.tls.client_key_file.clone(),
        set: |c, v| c.tls.client_key_file = v.to_string()),
    param!("tls-client-key-file-pass", Kind::Text, mutable: true,
        get: |c| c.tls.client_key_file_pass.clone(),
        set: |c, v| c.tls.client_key_file_pass = v.to_string()),
    param!("tls-dh-params-file", Kind::Text, mutable: true,
        get: |c| c.tls.dh_params_file.clone(), set: |c, v| c.tls.dh_params_file = v.to_string()),
    param!("tls-ca-cert-file", Kind::Text, mutable: true,
        get: |c| c.tls.ca_cert_file.clone(), set: |c, v| c.tls.ca_cert_file = v.to_string()),
    param!("tls-ca-cert-dir", Kind::Text, mutable: true,
        get: |c| c.tls.ca_cert_dir.clone(), set: |c, v| c.tls.ca_cert_dir = v.to_string()),
    param!("tls-protocols", Kind::Text, mutable: true,
        get: |c| c.tls.protocols.clone(), set: |c, v| c.tls.protocols = v.to_string()),
    param!("tls-ciphers", Kind::Text, mutable: true,
        get: |c| c.tls.ciphers.clone(), set: |c, v| c.tls.ciphers = v.to_string()),
    param!("tls-ciphersuites", Kind::Text, mutable: true,
        get: |c| c.tls.ciphersuites.clone(), set: |c, v| c.tls.ciphersuites = v.to_string()),
    param!("cluster-announce-tls-port", Kind::Int { min: 0, max: 65535 }, mutable: true,
        get: |c| c.tls.cluster_announce_tls_port.to_string(),
        set: |c, v| c.tls.cluster_announce_tls_port = v.parse().unwrap_or(0)),
];

/// Parameters left out of CONFIG GET's glob matches (Redis 7.0's HIDDEN_CONFIG), answered only
/// when asked for by name.
pub const HIDDEN: &[&str] = &["key-load-delay"];

/// Finds a parameter by name or alias, case-insensitively.
pub fn find_param(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| {
        p.name.eq_ignore_ascii_case(name) || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    })
}

/// Parses a memory size as Redis's `memtoull`: a number with an optional unit (k = 1000,
/// kb = 1024, m, mb, g, gb; case-insensitive).
pub fn parse_memory(s: &str) -> Option<i64> {
    let lower = s.to_ascii_lowercase();
    let units: [(&str, i64); 6] = [
        ("kb", 1024),
        ("mb", 1024 * 1024),
        ("gb", 1024 * 1024 * 1024),
        ("k", 1000),
        ("m", 1000 * 1000),
        ("g", 1000 * 1000 * 1000),
    ];
    let (digits, mul) = units
        .iter()
        .find_map(|(suffix, mul)| lower.strip_suffix(suffix).map(|d| (d, *mul)))
        .unwrap_or((lower.as_str(), 1));
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<i64>().ok()?.checked_mul(mul)
}

/// True if `s` has the shape of a memory size (digits and an optional unit), whatever its value.
fn is_memory_syntax(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let digits = ["kb", "mb", "gb", "k", "m", "g"]
        .iter()
        .find_map(|u| lower.strip_suffix(u))
        .unwrap_or(&lower);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Parses an integer parameter value as Redis does (`string2ll`: canonical digits only, no sign
/// `+`, no spaces).
fn parse_int(s: &str) -> Option<i64> {
    embedis_protocol::number::parse_i64(s.as_bytes())
}

/// Why a value was refused; `Display` gives Redis's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueError {
    NotInteger,
    NotMemory,
    OutOfRange {
        min: i64,
        max: i64,
    },
    NotYesNo,
    NotOneOf(&'static [&'static str]),
    NotImplemented {
        value: String,
    },
    /// A parameter's own message.
    Custom(&'static str),
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueError::NotInteger => f.write_str("argument couldn't be parsed into an integer"),
            ValueError::NotMemory => f.write_str("argument must be a memory value"),
            ValueError::OutOfRange { min, max } => {
                write!(f, "argument must be between {min} and {max} inclusive")
            }
            ValueError::NotYesNo => f.write_str("argument must be 'yes' or 'no'"),
            ValueError::NotOneOf(choices) => {
                write!(
                    f,
                    "argument(s) must be one of the following: {}",
                    choices.join(", ")
                )
            }
            ValueError::Custom(text) => f.write_str(text),
            ValueError::NotImplemented { value } => write!(
                f,
                "embedis does not implement the value '{value}' for this parameter yet"
            ),
        }
    }
}

impl Param {
    /// Checks `value` against the parameter's kind and bounds.
    pub fn validate(&self, value: &str) -> Result<(), ValueError> {
        match self.kind {
            Kind::Int { min, max } => {
                let n = parse_int(value).ok_or(ValueError::NotInteger)?;
                if n < min || n > max {
                    return Err(ValueError::OutOfRange { min, max });
                }
            }
            Kind::Memory { min, max } => {
                let n = match parse_memory(value) {
                    Some(n) => n,
                    // Well-formed but too big for 64 bits: Redis reports the range.
                    None if is_memory_syntax(value) => {
                        return Err(ValueError::OutOfRange { min, max })
                    }
                    None => return Err(ValueError::NotMemory),
                };
                if n < min || n > max {
                    return Err(ValueError::OutOfRange { min, max });
                }
            }
            Kind::Bool => {
                if !value.eq_ignore_ascii_case("yes") && !value.eq_ignore_ascii_case("no") {
                    return Err(ValueError::NotYesNo);
                }
            }
            Kind::Choice(choices) => {
                if !choices.iter().any(|c| c.eq_ignore_ascii_case(value)) {
                    return Err(ValueError::NotOneOf(choices));
                }
            }
            Kind::Text => {
                if self.name == "unixsocketperm" && u32::from_str_radix(value, 8).is_err() {
                    return Err(ValueError::NotInteger);
                }
                if self.name == "client-output-buffer-limit" {
                    parse_obuf_limits(value)?;
                }
                if self.name == "notify-keyspace-events"
                    && event_class::from_letters(value).is_none()
                {
                    return Err(ValueError::Custom(
                        "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
                    ));
                }
                if self.name == "dir" && !std::path::Path::new(value).is_dir() {
                    return Err(ValueError::Custom("No such file or directory"));
                }
                if self.name == "save" && parse_save_points(value).is_none() {
                    return Err(ValueError::Custom("Invalid save parameters"));
                }
                if self.name == "dbfilename" && value.contains('/') {
                    return Err(ValueError::Custom(
                        "dbfilename can't be a path, just a filename",
                    ));
                }
                if self.name == "latency-tracking-info-percentiles" {
                    parse_percentiles(value)?;
                }
            }
            Kind::PartialChoice {
                choices,
                implemented,
            } => {
                if !choices.iter().any(|c| c.eq_ignore_ascii_case(value)) {
                    return Err(ValueError::NotOneOf(choices));
                }
                if !implemented.iter().any(|c| c.eq_ignore_ascii_case(value)) {
                    return Err(ValueError::NotImplemented {
                        value: value.to_string(),
                    });
                }
            }
            Kind::MemoryOrPercentOff => {
                if let Some(digits) = value.strip_suffix('%') {
                    let n = parse_int(digits)
                        .filter(|n| *n >= 0)
                        .ok_or(ValueError::Custom(
                            "argument must be a memory or percent value",
                        ))?;
                    if n > 100 {
                        return Err(ValueError::Custom(
                            "percentage argument must be less or equal to 100",
                        ));
                    }
                } else if parse_memory(value).is_none() {
                    return Err(ValueError::Custom(
                        "argument must be a memory or percent value",
                    ));
                }
                let off = value.strip_suffix('%').unwrap_or(value);
                if parse_memory(off) != Some(0) {
                    return Err(ValueError::NotImplemented {
                        value: value.to_string(),
                    });
                }
            }
            Kind::Only(allowed) => {
                if !allowed.iter().any(|a| a.eq_ignore_ascii_case(value.trim())) {
                    return Err(ValueError::NotImplemented {
                        value: value.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}

impl Config {
    /// `(name, value)` of every parameter whose name (or alias) matches one of `patterns`, as
    /// CONFIG GET answers: a pattern without glob characters is looked up directly and answered
    /// under the name as typed (`HZ`), a glob lists the parameters under their own names; a
    /// parameter already listed (ignoring case) is not listed again.
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut push = |name: &str, value: String| {
            if !out.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                out.push((name.to_string(), value));
            }
        };
        for pattern in patterns {
            if !pattern.iter().any(|b| matches!(b, b'[' | b'*' | b'?')) {
                if let Ok(name) = std::str::from_utf8(pattern) {
                    if let Some((p, _)) = find_param_named(name) {
                        push(name, (p.get)(self));
                    }
                }
                continue;
            }
            for p in PARAMS {
                if HIDDEN.contains(&p.name) {
                    continue;
                }
                if glob::matches(pattern, p.name.as_bytes(), true) {
                    push(p.name, (p.get)(self));
                }
                for alias in p.aliases {
                    if glob::matches(pattern, alias.as_bytes(), true) {
                        push(alias, (p.get)(self));
                    }
                }
            }
        }
        out
    }

    /// Applies name/value pairs all-or-nothing, as CONFIG SET does, refusing protected
    /// parameters. Errors carry Redis's text.
    pub fn set_many(&mut self, pairs: &[(&str, &str)]) -> Result<(), String> {
        self.set_many_with(pairs, false)
    }

    /// CONFIG SET's all-or-nothing update, in Redis's two phases: first the names (an unknown
    /// name wins over every other error, unless an earlier pair already failed; then immutable,
    /// protected and duplicate parameters, reported under the name as typed), then the values
    /// (reported under the parameter's own lower-case name). Nothing changes unless all pass.
    /// `allow_protected` says whether `enable-protected-configs` lets this client change
    /// protected parameters such as `dir`.
    pub fn set_many_with(
        &mut self,
        pairs: &[(&str, &str)],
        allow_protected: bool,
    ) -> Result<(), String> {
        // Names are quoted as C prints them: up to a NUL byte.
        let c_name = |name: &str| name.split('\0').next().unwrap_or("").to_string();
        let fail = |name: &str, why: &dyn std::fmt::Display| {
            format!(
                "ERR CONFIG SET failed (possibly related to argument '{}') - {why}",
                c_name(name)
            )
        };
        let mut resolved: Vec<(&'static Param, &'static str, &str)> = Vec::new();
        let mut first_error: Option<String> = None;
        for (name, value) in pairs {
            let Some((param, own_name)) = find_param_named(name) else {
                if first_error.is_none() {
                    return Err(format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                        c_name(name)
                    ));
                }
                continue;
            };
            if first_error.is_some() {
                continue;
            }
            if !param.mutable {
                first_error = Some(fail(name, &"can't set immutable config"));
            } else if PROTECTED.contains(&param.name) && !allow_protected {
                first_error = Some(fail(name, &"can't set protected config"));
            }
            if resolved.iter().any(|(p, _, _)| std::ptr::eq(*p, param)) {
                first_error = Some(fail(name, &"duplicate parameter"));
            }
            resolved.push((param, own_name, value));
        }
        if let Some(error) = first_error {
            return Err(error);
        }
        for (param, own_name, value) in &resolved {
            param.validate(value).map_err(|e| fail(own_name, &e))?;
        }
        for (param, _, value) in resolved {
            (param.set)(self, value);
        }
        Ok(())
    }
}

/// Parameters CONFIG SET changes only where `enable-protected-configs` allows (Redis 7.0's
/// PROTECTED_CONFIG).
pub const PROTECTED: &[&str] = &["dir"];

/// Finds a parameter by name or alias, case-insensitively, with the lower-case name that matched.
pub fn find_param_named(name: &str) -> Option<(&'static Param, &'static str)> {
    PARAMS.iter().find_map(|p| {
        if p.name.eq_ignore_ascii_case(name) {
            return Some((p, p.name));
        }
        p.aliases
            .iter()
            .find(|a| a.eq_ignore_ascii_case(name))
            .map(|a| (p, *a))
    })
}

/// A problem in a config file or on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub line_number: usize,
    pub line: String,
    pub reason: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\n*** FATAL CONFIG FILE ERROR (embedis {}) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
            env!("CARGO_PKG_VERSION"),
            self.line_number,
            self.line,
            self.reason
        )
    }
}

impl std::error::Error for ConfigError {}

/// Redis parameters that embedis knows of but does not implement yet; refused with a clear
/// message instead of "bad directive".
const KNOWN_UNIMPLEMENTED: &[&str] = &[
    "cluster-enabled",
    "masterauth",
    "masteruser",
    "rename-command",
    "hll-sparse-max-bytes",
    "supervised",
    "lazyfree-lazy-user-flush",
    "io-threads-do-reads",
    "include",
    "loadmodule",
    "syslog-enabled",
];

/// The parameters Redis 7.0 flags `MULTI_ARG_CONFIG`: a config-file line gives their value as
/// several words.
const MULTI_ARG: &[&str] = &[
    "bind",
    "save",
    "replicaof",
    "client-output-buffer-limit",
    "latency-tracking-info-percentiles",
    "oom-score-adj-values",
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
];

impl Config {
    /// Parses config-file text (Redis's format: `name arg…` per line, `#` comments, quoting as
    /// in `sdssplitargs`) on top of the current values.
    pub fn load_text(&mut self, text: &str) -> Result<(), ConfigError> {
        let mut save_seen = false;
        for (index, raw_line) in text.lines().enumerate() {
            // Redis trims only these four (`sdstrim(line, " \t\r\n")`).
            let line = raw_line.trim_matches([' ', '\t', '\r', '\n']);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let error = |reason: String| ConfigError {
                line_number: index + 1,
                line: line.to_string(),
                reason,
            };
            let args = embedis_protocol::inline::split_args(line.as_bytes())
                .map_err(|_| error("Unbalanced quotes in configuration line".into()))?;
            let args: Vec<String> = args
                .into_iter()
                .map(|a| String::from_utf8_lossy(&a).into_owned())
                .collect();
            let Some((name, values)) = args.split_first() else {
                continue;
            };
            // `user <name> <rules…>`: checked and applied at start-up with the command table.
            if name.eq_ignore_ascii_case("user") && !values.is_empty() {
                self.users
                    .push(values.iter().map(|v| v.as_bytes().to_vec()).collect());
                continue;
            }
            let Some(param) = find_param(name) else {
                let reason = if KNOWN_UNIMPLEMENTED
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(name))
                {
                    format!("embedis does not implement '{name}' yet")
                } else {
                    "Bad directive or wrong number of arguments".to_string()
                };
                return Err(error(reason));
            };
            // Redis's multi-argument parameters take their words either separately or as one
            // quoted word, which it splits (`--save "900 1"`, a file line
            // `client-output-buffer-limit normal 0 0 0`); the others need exactly one word.
            let split;
            let values = match values {
                [one] if MULTI_ARG.contains(&param.name) && !one.is_empty() => {
                    split = embedis_protocol::inline::split_args(one.as_bytes())
                        .map_err(|_| error("Unbalanced quotes in configuration line".into()))?
                        .into_iter()
                        .map(|a| String::from_utf8_lossy(&a).into_owned())
                        .collect::<Vec<_>>();
                    &split[..]
                }
                _ => values,
            };
            let value = match (param.name, values) {
                ("save", v) => v.join(" "),
                (name, v) if MULTI_ARG.contains(&name) && name != "replicaof" && !v.is_empty() => {
                    v.join(" ")
                }
                ("replicaof", [host, port]) => format!("{host} {port}"),
                (_, [one]) => one.clone(),
                _ => return Err(error("wrong number of arguments".into())),
            };
            param.validate(&value).map_err(|e| error(e.to_string()))?;
            // Several `save` lines add up (the first replaces the defaults), as in Redis.
            if param.name == "save" && save_seen && !value.trim().is_empty() {
                let more = parse_save_points(&value).unwrap_or_default();
                self.save_points.extend(more);
                continue;
            }
            if param.name == "save" {
                save_seen = true;
            }
            (param.set)(self, &value);
        }
        Ok(())
    }

    /// Parses redis-server style arguments: an optional config file path first, then
    /// `--name value…` pairs (a value may be several words). Returns the config text they make.
    pub fn args_to_text(args: &[String]) -> Result<(Option<String>, String), String> {
        let mut file = None;
        let mut rest = args;
        if let Some(first) = args.first() {
            if !first.starts_with("--") {
                file = Some(first.clone());
                rest = &args[1..];
            }
        }
        let mut text = String::new();
        for arg in rest {
            if let Some(name) = arg.strip_prefix("--") {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(name);
            } else {
                if text.is_empty() {
                    return Err(format!("Invalid argument '{arg}': options start with --"));
                }
                text.push(' ');
                text.push_str(&quote_arg(arg));
            }
        }
        Ok((file, text))
    }
}

/// Quotes a command-line value so that `split_args` gives it back as one argument.
fn quote_arg(arg: &str) -> String {
    let mut out = String::from("\"");
    for c in arg.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
    out.push('"');
    out
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
        let mut c = Config::default();
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

    #[test]
    fn get_with_patterns() {
        let c = Config::default();
        let got = c.matching(&[b"hz", b"max*"]);
        assert!(got.contains(&("hz".into(), "10".into())));
        assert!(got.contains(&("maxclients".into(), "10000".into())));
        assert!(got.contains(&("maxmemory".into(), "0".into())));
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
