//! The table of every parameter embedis implements ([`PARAMS`]): each one's name and old aliases,
//! its kind and bounds, whether CONFIG SET may change it, and how to read and store it in
//! [`Config`]. CONFIG GET, CONFIG SET, the config file and the command line are all driven by
//! this table, so a parameter exists everywhere or nowhere.

use crate::base::compat::CompatVersion;

use super::process::{parse_oom_values, OomScoreAdj, ShutdownFlags};
use super::{
    event_class, memory_or_percent_text, parse_memory, parse_memory_or_percent, parse_memory_u64,
    parse_obuf_limits, parse_percentiles, parse_save_points, percentile_text, Access, AppendFsync,
    Config, LogLevel, MaxmemoryPolicy,
};

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
    /// An unsigned 64-bit memory size as Redis reads its unsigned memory parameters (see
    /// [`super::parse_memory_u64`]): any value that parses is in range.
    UnsignedMemory,
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
    /// A memory size or a percentage of `maxmemory` (`maxmemory-clients`) with Redis's checks
    /// (see [`super::values::parse_memory_or_percent`]).
    MemoryOrPercent,
}

/// Parameters Redis hides from logs from 7.4 on (`SENSITIVE_CONFIG` in 7.4.1's config.c).
const SENSITIVE_SINCE_7_4: [&str; 2] = ["tls-key-file-pass", "tls-client-key-file-pass"];

impl Param {
    /// Hidden from MONITOR and SLOWLOG under `version`.
    pub fn sensitive_in(&self, version: CompatVersion) -> bool {
        self.sensitive
            || (version >= CompatVersion::V7_4 && SENSITIVE_SINCE_7_4.contains(&self.name))
    }
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
        LogLevel::Nothing => "nothing",
    }
    .to_string(),
    set: |c, v| {
        c.loglevel = match v.to_ascii_lowercase().as_str() {
            "debug" => LogLevel::Debug,
            "verbose" => LogLevel::Verbose,
            "warning" => LogLevel::Warning,
            "nothing" => LogLevel::Nothing,
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
    param!("set-max-listpack-entries", Kind::Int { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.encodings.set_max_listpack_entries.to_string(),
        set: |c, v| c.encodings.set_max_listpack_entries = v.parse().unwrap_or(128)),
    param!("set-max-listpack-value", Kind::Int { min: 0, max: i64::MAX }, mutable: true,
        get: |c| c.encodings.set_max_listpack_value.to_string(),
        set: |c, v| c.encodings.set_max_listpack_value = v.parse().unwrap_or(64)),
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
    param!("replica-ignore-disk-write-errors", Kind::Bool, mutable: true,
        get: |c| yes_no(c.replica_ignore_disk_write_errors),
        set: |c, v| c.replica_ignore_disk_write_errors = parse_yes_no(v)),
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
    param!("aof-disable-auto-gc", Kind::Bool, mutable: true,
        get: |c| yes_no(c.aof_disable_auto_gc),
        set: |c, v| c.aof_disable_auto_gc = parse_yes_no(v)),
    param!("aof-timestamp-enabled", Kind::Bool, mutable: true,
        get: |c| yes_no(c.aof_timestamp_enabled),
        set: |c, v| c.aof_timestamp_enabled = parse_yes_no(v)),
    param!("notify-keyspace-events", Kind::Text, mutable: true,
        get: |c| event_class::to_letters(c.notify_keyspace_events),
        set: |c, v| c.notify_keyspace_events = event_class::from_letters(v).unwrap_or(0)),
    param!("daemonize", Kind::Only(&["no"]), mutable: false, get: |_| "no".into(), set: |_, _| {}),
    // Unsigned, as Redis reads it: up to 2^64 - 1 (8.2 refuses 2^63 and more, see UNSIGNED_SINCE_8_2).
    param!("maxmemory", Kind::UnsignedMemory, mutable: true,
        get: |c| c.maxmemory.to_string(),
        set: |c, v| c.maxmemory = parse_memory_u64(v).unwrap_or(0)),
    // embedis's own: which Redis to be (base::compat). Fixed at start: the command table is
    // chosen by it.
    param!("compat-version", Kind::Choice(&CompatVersion::NAMES), mutable: false,
        get: |c| c.compat_version.name().to_string(),
        set: |c, v| c.compat_version = CompatVersion::parse(v).unwrap_or_default()),
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
    param!("lazyfree-lazy-server-del", Kind::Bool, mutable: true,
        get: |c| yes_no(c.lazyfree_lazy_server_del),
        set: |c, v| c.lazyfree_lazy_server_del = parse_yes_no(v)),
    param!("lazyfree-lazy-user-del", Kind::Bool, mutable: true,
        get: |c| yes_no(c.lazyfree_lazy_user_del),
        set: |c, v| c.lazyfree_lazy_user_del = parse_yes_no(v)),
    param!("lazyfree-lazy-user-flush", Kind::Bool, mutable: true,
        get: |c| yes_no(c.lazyfree_lazy_user_flush),
        set: |c, v| c.lazyfree_lazy_user_flush = parse_yes_no(v)),
    param!("maxmemory-samples", Kind::Int { min: 1, max: INT_MAX }, mutable: true,
        get: |c| c.maxmemory_samples.to_string(),
        set: |c, v| c.maxmemory_samples = v.parse().unwrap_or(5)),
    param!("maxmemory-eviction-tenacity", Kind::Int { min: 0, max: 100 }, mutable: true,
        get: |c| c.maxmemory_eviction_tenacity.to_string(),
        set: |c, v| c.maxmemory_eviction_tenacity = v.parse().unwrap_or(10)),
    param!("maxmemory-clients", Kind::MemoryOrPercent, mutable: true,
        get: |c| memory_or_percent_text(c.maxmemory_clients),
        set: |c, v| c.maxmemory_clients = parse_memory_or_percent(v).unwrap_or(0)),
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
    // A debugging delay per key loaded from an RDB file or the AOF (Redis's test suite uses it
    // to keep a server loading). Hidden from `CONFIG GET *` as in Redis (see [`HIDDEN`]).
    param!("key-load-delay", Kind::Int { min: INT_MIN, max: INT_MAX }, mutable: true,
        get: |c| c.key_load_delay.to_string(),
        set: |c, v| c.key_load_delay = v.parse().unwrap_or(0)),
    // How many bytes Redis loads between two turns of its event loop (hidden too). embedis
    // loads by keys (see `crate::io::server::run_loading`) and only keeps the value.
    param!("loading-process-events-interval-bytes", Kind::Int { min: 1024, max: INT_MAX }, mutable: true,
        get: |c| c.loading_process_events_interval_bytes.to_string(),
        set: |c, v| c.loading_process_events_interval_bytes = v.parse().unwrap_or(2 * 1024 * 1024)),
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
    // Redis's tests ask for a panic to exit(1) rather than abort (hidden). A panic in embedis
    // unwinds and the process exits with a status, never by a signal, so this is only kept.
    param!("use-exit-on-panic", Kind::Bool, mutable: true,
        get: |c| yes_no(c.use_exit_on_panic), set: |c, v| c.use_exit_on_panic = parse_yes_no(v)),
    param!("sanitize-dump-payload", Kind::Choice(&["no", "yes", "clients"]), mutable: true,
        get: |c| c.sanitize_dump_payload.clone(),
        set: |c, v| c.sanitize_dump_payload = v.to_ascii_lowercase()),
    // Module commands are always refused: embedis loads no modules.
    param!("enable-module-command", Kind::Only(&["no"]), mutable: false,
        get: |_| "no".into(), set: |_, _| {}),
    Param {
        name: "masteruser",
        aliases: &[],
        kind: Kind::Text,
        mutable: true,
        sensitive: true,
        get: |c| c.masteruser.clone(),
        set: |c, v| c.masteruser = v.to_string(),
    },
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
    param!("cluster-require-full-coverage", Kind::Bool, mutable: true,
        get: |c| yes_no(c.cluster.require_full_coverage),
        set: |c, v| c.cluster.require_full_coverage = parse_yes_no(v)),
    param!("cluster-allow-reads-when-down", Kind::Bool, mutable: true,
        get: |c| yes_no(c.cluster.allow_reads_when_down),
        set: |c, v| c.cluster.allow_reads_when_down = parse_yes_no(v)),
    Param {
        name: "cluster-replica-validity-factor",
        aliases: &["cluster-slave-validity-factor"],
        kind: Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        mutable: true,
        sensitive: false,
        get: |c| c.cluster.replica_validity_factor.to_string(),
        set: |c, v| c.cluster.replica_validity_factor = v.parse().unwrap_or(10),
    },
    param!("cluster-migration-barrier", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.cluster.migration_barrier.to_string(),
        set: |c, v| c.cluster.migration_barrier = v.parse().unwrap_or(1)),
    param!("cluster-allow-replica-migration", Kind::Bool, mutable: true,
        get: |c| yes_no(c.cluster.allow_replica_migration),
        set: |c, v| c.cluster.allow_replica_migration = parse_yes_no(v)),
    Param {
        name: "cluster-replica-no-failover",
        aliases: &["cluster-slave-no-failover"],
        kind: Kind::Bool,
        mutable: true,
        sensitive: false,
        get: |c| yes_no(c.cluster.replica_no_failover),
        set: |c, v| c.cluster.replica_no_failover = parse_yes_no(v),
    },
    // Checked as Redis checks a hostname (see `check_hostname`); stored up to a NUL, as Redis
    // keeps a C string.
    param!("cluster-announce-hostname", Kind::Text, mutable: true,
        get: |c| c.cluster.announce_hostname.clone(),
        set: |c, v| c.cluster.announce_hostname = v.split('\0').next().unwrap_or("").to_string()),
    param!("cluster-link-sendbuf-limit", Kind::UnsignedMemory, mutable: true,
        get: |c| c.cluster.link_sendbuf_limit.to_string(),
        set: |c, v| c.cluster.link_sendbuf_limit = parse_memory_u64(v).unwrap_or(0)),
    param!("cluster-allow-pubsubshard-when-down", Kind::Bool, mutable: true,
        get: |c| yes_no(c.cluster.allow_pubsubshard_when_down),
        set: |c, v| c.cluster.allow_pubsubshard_when_down = parse_yes_no(v)),
    param!("cluster-preferred-endpoint-type",
        Kind::Choice(&["ip", "hostname", "unknown-endpoint"]), mutable: true,
        get: |c| c.cluster.preferred_endpoint_type.clone(),
        set: |c, v| c.cluster.preferred_endpoint_type = v.to_ascii_lowercase()),
    // TLS (see `crate::base::tls`, which builds OpenSSL contexts from these). All can change at
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
    // The process's own parameters (see `super::process`).
    param!("shutdown-timeout", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.process.shutdown_timeout.to_string(),
        set: |c, v| c.process.shutdown_timeout = v.parse().unwrap_or(10)),
    param!("shutdown-on-sigint", Kind::Text, mutable: true,
        get: |c| c.process.shutdown_on_sigint.text(),
        set: |c, v| c.process.shutdown_on_sigint = ShutdownFlags::parse(v).unwrap_or_default()),
    param!("shutdown-on-sigterm", Kind::Text, mutable: true,
        get: |c| c.process.shutdown_on_sigterm.text(),
        set: |c, v| c.process.shutdown_on_sigterm = ShutdownFlags::parse(v).unwrap_or_default()),
    param!("oom-score-adj", Kind::Choice(OomScoreAdj::NAMES), mutable: true,
        get: |c| c.process.oom_score_adj.name().to_string(),
        set: |c, v| c.process.oom_score_adj = OomScoreAdj::parse(v)),
    param!("oom-score-adj-values", Kind::Text, mutable: true,
    get: |c| {
        let [a, b, d] = c.process.oom_score_adj_values;
        format!("{a} {b} {d}")
    },
    set: |c, v| if let Ok(values) = parse_oom_values(v) {
        c.process.oom_score_adj_values = values;
    }),
    param!("bind-source-addr", Kind::Text, mutable: true,
        get: |c| c.process.bind_source_addr.clone(),
        set: |c, v| c.process.bind_source_addr = v.to_string()),
    param!("watchdog-period", Kind::Int { min: 0, max: INT_MAX }, mutable: true,
        get: |c| c.process.watchdog_period.to_string(),
        set: |c, v| c.process.watchdog_period = v.parse().unwrap_or(0)),
    param!("crash-log-enabled", Kind::Bool, mutable: true,
        get: |c| yes_no(c.process.crash_log_enabled),
        set: |c, v| c.process.crash_log_enabled = parse_yes_no(v)),
    param!("crash-memcheck-enabled", Kind::Bool, mutable: true,
        get: |c| yes_no(c.process.crash_memcheck_enabled),
        set: |c, v| c.process.crash_memcheck_enabled = parse_yes_no(v)),
    param!("set-proc-title", Kind::Bool, mutable: false,
        get: |c| yes_no(c.process.set_proc_title),
        set: |c, v| c.process.set_proc_title = parse_yes_no(v)),
    param!("proc-title-template", Kind::Text, mutable: true,
        get: |c| c.process.proc_title_template.clone(),
        set: |c, v| c.process.proc_title_template = v.to_string()),
];

/// Parameters left out of CONFIG GET's glob matches (Redis 7.0's HIDDEN_CONFIG), answered only
/// when asked for by name. `compat-version` is embedis's own: `CONFIG GET *` lists Redis's
/// parameters only, as clients and Redis's own suite (its CONFIG sanity test sets every listed
/// parameter back to its value) expect.
pub const HIDDEN: &[&str] = &[
    "key-load-delay",
    "loading-process-events-interval-bytes",
    "use-exit-on-panic",
    "compat-version",
    "watchdog-period",
];

/// Parameters that a later Redis added, with the first version that has them: under an older
/// `compat-version` they are unknown, as in that Redis (CONFIG GET does not list them, CONFIG
/// SET and the config file refuse them).
const SINCE: &[(&str, CompatVersion)] = &[
    ("set-max-listpack-entries", CompatVersion::V7_2),
    ("set-max-listpack-value", CompatVersion::V7_2),
];

/// Bounds and choices a later Redis changed, with the first version that has them: under an
/// older `compat-version` the table's own [`Param::kind`] holds. 7.2 added `nothing` to the log
/// levels; 7.4 bounded `maxmemory-samples` to 64.
const KIND_SINCE: &[(&str, CompatVersion, Kind)] = &[
    (
        "loglevel",
        CompatVersion::V7_2,
        Kind::Choice(&["debug", "verbose", "notice", "warning", "nothing"]),
    ),
    (
        "maxmemory-samples",
        CompatVersion::V7_4,
        Kind::Int { min: 1, max: 64 },
    ),
];

/// The parameters Redis 8.2 keeps as unsigned numbers and checks for a sign first (see
/// `values::check_unsigned`): a negative value is "greater or equal to 0" there, not out of
/// the range 7.x names.
const UNSIGNED_SINCE_8_2: &[&str] = &[
    "maxclients",
    "maxmemory",
    "client-query-buffer-limit",
    "cluster-link-sendbuf-limit",
    "tracking-table-max-keys",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "set-max-intset-entries",
    "set-max-listpack-entries",
    "set-max-listpack-value",
    "hll-sparse-max-bytes",
    "stream-node-max-bytes",
];

impl Param {
    /// The kind and bounds of this parameter in the Redis `version` names.
    pub fn kind_in(&self, version: CompatVersion) -> Kind {
        KIND_SINCE
            .iter()
            .rev()
            .find(|(name, since, _)| *name == self.name && version >= *since)
            .map_or(self.kind, |&(_, _, kind)| kind)
    }

    /// Whether the Redis `version` names checks this parameter's sign first.
    pub fn unsigned_in(&self, version: CompatVersion) -> bool {
        version >= CompatVersion::V8_2 && UNSIGNED_SINCE_8_2.contains(&self.name)
    }

    /// Whether the Redis that `version` names has this parameter.
    pub fn exists_in(&self, version: CompatVersion) -> bool {
        SINCE
            .iter()
            .find(|(name, _)| *name == self.name)
            .is_none_or(|&(_, since)| version >= since)
    }
}

/// Finds a parameter by name or alias, case-insensitively.
pub fn find_param(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| {
        p.name.eq_ignore_ascii_case(name) || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    })
}

/// Parameters CONFIG SET changes only where `enable-protected-configs` allows (Redis 7.0's
/// PROTECTED_CONFIG).
pub const PROTECTED: &[&str] = &["dir"];

/// Parameters CONFIG SET refuses while a dataset loads (Redis 7.0's DENY_LOADING_CONFIG): the
/// AOF switch, the replica's load mode and the directory the files are in.
pub const DENY_LOADING: &[&str] = &["appendonly", "repl-diskless-load", "dir"];

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
