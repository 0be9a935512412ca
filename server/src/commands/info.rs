//! INFO: the server's report on itself, in Redis 7.0.15's sections, field names and order, so
//! that monitoring tools and client libraries that parse it (`redis_version`, `role`,
//! `connected_clients`, `db0:keys=…`) find what they expect.
//!
//! Values are real where embedis has them: uptime from the server's clock, clients, blocked
//! clients, keys and expiries, hits and misses, command and error statistics, network bytes,
//! CPU time from `getrusage`. `used_memory` is the bytes allocated, counted by the
//! `embedis-server` binary's allocator (as Redis's zmalloc counts them); a server embedded in
//! another program, whose allocator we do not own, reports its resident set size instead; less
//! the key tables' idle slots, which count as the allocator's free memory does in Redis
//! (`crate::model::evict::used_memory`). Fields describing machinery embedis does not have (persistence,
//! replication, Lua, defragmentation) keep Redis's neutral values — zero, `ok`, empty — rather
//! than disappearing, since parsers expect them. Latencystats reports each command's p50, p99 and
//! p99.9 from its run-time histogram (`crate::model::latency`).

use std::fmt::Write as _;

use crate::base::compat::CompatVersion;
use crate::base::config::percentile_text;
use crate::base::error::CmdResult;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags};

/// The sections, in the order Redis prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Server,
    Clients,
    Memory,
    Persistence,
    Stats,
    Replication,
    Cpu,
    Modules,
    Commandstats,
    Errorstats,
    Latencystats,
    Cluster,
    Keyspace,
    /// Redis 8.0 and later (see [`crate::model::keysizes`]).
    Keysizes,
}

const ORDER: [(Section, &str); 14] = [
    (Section::Server, "server"),
    (Section::Clients, "clients"),
    (Section::Memory, "memory"),
    (Section::Persistence, "persistence"),
    (Section::Stats, "stats"),
    (Section::Replication, "replication"),
    (Section::Cpu, "cpu"),
    (Section::Modules, "modules"),
    (Section::Commandstats, "commandstats"),
    (Section::Errorstats, "errorstats"),
    (Section::Latencystats, "latencystats"),
    (Section::Cluster, "cluster"),
    (Section::Keyspace, "keyspace"),
    (Section::Keysizes, "keysizes"),
];

/// What `INFO` and `INFO default` show (Keysizes only where the version has it).
const DEFAULT: [Section; 12] = [
    Section::Server,
    Section::Clients,
    Section::Memory,
    Section::Persistence,
    Section::Stats,
    Section::Replication,
    Section::Cpu,
    Section::Modules,
    Section::Errorstats,
    Section::Cluster,
    Section::Keyspace,
    Section::Keysizes,
];

/// The sections the arguments ask for: names are case-insensitive, unknown ones are ignored,
/// `default`, `all` and `everything` stand for groups.
fn selected(args: &[bytes::Bytes]) -> [bool; 14] {
    let mut on = [false; 14];
    let index = |s: Section| ORDER.iter().position(|(x, _)| *x == s).expect("listed");
    if args.is_empty() {
        for s in DEFAULT {
            on[index(s)] = true;
        }
        return on;
    }
    for arg in args {
        let name = arg.to_ascii_lowercase();
        match name.as_slice() {
            b"all" | b"everything" => on = [true; 14],
            b"default" => {
                for s in DEFAULT {
                    on[index(s)] = true;
                }
            }
            other => {
                if let Some(i) = ORDER.iter().position(|(_, n)| n.as_bytes() == other) {
                    on[i] = true;
                }
            }
        }
    }
    on
}

fn info(ctx: &mut Ctx<'_>) -> CmdResult {
    let text = report(ctx, &ctx.args[1..]);
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// The INFO text for `sections` (INFO's arguments).
pub fn report(ctx: &mut Ctx<'_>, sections: &[bytes::Bytes]) -> String {
    let mut on = selected(sections);
    // Before 8.0 there is no Keysizes section, asked for or not.
    on[ORDER.len() - 1] &= ctx.server.config.compat_version >= CompatVersion::V8_2;
    // Grown as written rather than reserved up front: the memory section reads used_memory
    // while this text exists, and Redis's tests compare that figure with maxmemory to within
    // 4 KB (unit/maxmemory's "is the memory limit honoured?").
    let mut text = String::new();
    for (i, (section, _)) in ORDER.iter().enumerate() {
        if !on[i] {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        write_section(ctx, *section, &mut text);
    }
    text
}

/// Appends `name:value\r\n`.
macro_rules! field {
    ($out:expr, $name:expr, $($value:tt)*) => {{
        let _ = write!($out, "{}:", $name);
        let _ = write!($out, $($value)*);
        $out.push_str("\r\n");
    }};
}

/// The built-in modules (Redis's `genModulesInfoString`): no other module uses them or is used
/// by them, and none registers a command filter.
fn modules(ctx: &Ctx<'_>, out: &mut String) {
    out.push_str("# Modules\r\n");
    for m in crate::commands::modules::builtin_modules(ctx.server.config.compat_version) {
        let _ = write!(
            out,
            "module:name={},ver={},api=1,filters=0,usedby=[],using=[],options=[{}]\r\n",
            m.name, m.ver, m.options
        );
    }
}

fn write_section(ctx: &mut Ctx<'_>, section: Section, out: &mut String) {
    match section {
        Section::Server => server(ctx, out),
        Section::Clients => clients(ctx, out),
        Section::Memory => memory(ctx, out),
        Section::Persistence => persistence(ctx, out),
        Section::Stats => stats(ctx, out),
        Section::Replication => replication(ctx, out),
        Section::Cpu => cpu(out),
        Section::Modules => modules(ctx, out),
        Section::Commandstats => commandstats(ctx, out),
        Section::Errorstats => errorstats(ctx, out),
        Section::Latencystats => latencystats(ctx, out),
        Section::Cluster => {
            out.push_str("# Cluster\r\n");
            field!(
                out,
                "cluster_enabled",
                "{}",
                ctx.server.cluster.enabled as u8
            );
        }
        Section::Keyspace => keyspace(ctx, out),
        Section::Keysizes => {
            out.push_str("# Keysizes\r\n");
            ctx.ks.render_keysizes(out);
        }
    }
}

fn server(ctx: &Ctx<'_>, out: &mut String) {
    let s = &*ctx.server;
    out.push_str("# Server\r\n");
    field!(
        out,
        "redis_version",
        "{}",
        s.config.compat_version.redis_version()
    );
    field!(out, "embedis_version", "{}", env!("CARGO_PKG_VERSION"));
    field!(out, "redis_git_sha1", "00000000");
    field!(out, "redis_git_dirty", "0");
    field!(out, "redis_build_id", "0");
    field!(
        out,
        "redis_mode",
        "{}",
        if s.cluster.enabled {
            "cluster"
        } else {
            "standalone"
        }
    );
    field!(out, "os", "{}", os_name());
    field!(out, "arch_bits", "{}", usize::BITS);
    field!(out, "monotonic_clock", "POSIX clock_gettime");
    field!(out, "multiplexing_api", "epoll");
    field!(out, "atomicvar_api", "c11-builtin");
    field!(out, "gcc_version", "0.0.0");
    field!(out, "process_id", "{}", std::process::id());
    field!(out, "process_supervised", "no");
    field!(out, "run_id", "{}", s.run_id);
    field!(out, "tcp_port", "{}", s.tcp_port);
    field!(out, "server_time_usec", "{}", ctx.now_us);
    let uptime = (ctx.now_ms - s.started_ms).max(0) / 1000;
    field!(out, "uptime_in_seconds", "{uptime}");
    field!(out, "uptime_in_days", "{}", uptime / 86400);
    field!(out, "hz", "{}", s.config.hz);
    field!(out, "configured_hz", "{}", s.config.hz);
    field!(
        out,
        "lru_clock",
        "{}",
        crate::base::value::lru_clock(ctx.now_ms)
    );
    field!(out, "executable", "{}", s.executable);
    field!(out, "config_file", "{}", s.config_file);
    field!(out, "io_threads_active", "0");
    if let Some(ms) = crate::services::shutdown::remaining_ms(s, ctx.now_ms) {
        field!(out, "shutdown_in_milliseconds", "{ms}");
    }
}

fn clients(ctx: &Ctx<'_>, out: &mut String) {
    let others = ctx.clients.iter();
    let (mut max_in, mut max_out) = (ctx.client.query_buffer, ctx.client.pending.len());
    for c in others {
        max_in = max_in.max(c.query_buffer);
        max_out = max_out.max(c.pending.len());
    }
    let blocked = &ctx.server.blocked;
    out.push_str("# Clients\r\n");
    // Replicas are not counted (Redis: clients minus replicas).
    let replicas = ctx.server.repl.replicas.len();
    field!(
        out,
        "connected_clients",
        "{}",
        (ctx.clients.len() + 1).saturating_sub(replicas)
    );
    field!(out, "cluster_connections", "0");
    field!(out, "maxclients", "{}", ctx.server.config.maxclients);
    field!(out, "client_recent_max_input_buffer", "{max_in}");
    field!(out, "client_recent_max_output_buffer", "{max_out}");
    field!(out, "blocked_clients", "{}", blocked.count);
    field!(out, "tracking_clients", "{}", ctx.ks.tracking.clients());
    let version = ctx.server.config.compat_version;
    if version >= CompatVersion::V7_4 {
        let subscribed = |c: &crate::model::client::ClientState| {
            !(c.subs.channels.is_empty() && c.subs.patterns.is_empty() && c.subs.shard.is_empty())
        };
        let pubsub = ctx.clients.iter().filter(|c| subscribed(c)).count()
            + usize::from(subscribed(ctx.client));
        field!(out, "pubsub_clients", "{pubsub}");
        field!(out, "watching_clients", "{}", ctx.ks.watches.clients());
    }
    field!(
        out,
        "clients_in_timeout_table",
        "{}",
        blocked.timeouts.len()
    );
    if version >= CompatVersion::V7_4 {
        field!(out, "total_watched_keys", "{}", ctx.ks.watches.keys());
    }
    if version >= CompatVersion::V7_2 {
        field!(out, "total_blocking_keys", "{}", blocked.by_key.len());
        field!(
            out,
            "total_blocking_keys_on_nokey",
            "{}",
            blocked.on_nokey.len()
        );
    }
}

/// Redis's `bytesToHuman`.
pub fn bytes_to_human(n: u64) -> String {
    const UNITS: [(u32, &str); 5] = [(10, "K"), (20, "M"), (30, "G"), (40, "T"), (50, "P")];
    for (shift, suffix) in UNITS {
        if n >= 1 << shift && n < 1 << (shift + 10) {
            return format!("{:.2}{suffix}", n as f64 / (1u64 << shift) as f64);
        }
    }
    format!("{n}B")
}

/// Redis 7.0's replication buffer figures: the backlog and the replicas share one buffer
/// (`crate::model::repl_buffer`); with replicas attached, what passes `repl-backlog-size` is
/// counted as theirs (`mem_clients_slaves`), the rest as the backlog's (Redis's
/// `getMemoryOverheadData`). A killed replica no longer counts, as Redis frees it at once.
/// Returns (backlog, replicas, whole buffer).
fn replication_buffers(ctx: &Ctx<'_>) -> (u64, u64, u64) {
    let repl = &ctx.server.repl;
    let total = repl.backlog.as_ref().map_or(0, |b| b.allocated()) as u64;
    let replicas = repl
        .replicas
        .iter()
        .any(|r| ctx.clients.get(r.id).is_some_and(|c| !c.handle.is_killed()));
    let backlog_size = ctx.server.config.repl_backlog_size;
    if replicas && total > backlog_size {
        (backlog_size, total - backlog_size, total)
    } else {
        (total, 0, total)
    }
}

fn memory(ctx: &mut Ctx<'_>, out: &mut String) {
    let used = ctx.server.eviction.used_memory(ctx.ks);
    let rss = crate::base::alloc::resident_bytes().unwrap_or(0) as u64;
    let server = &mut *ctx.server;
    server.memory_peak = server.memory_peak.max(used);
    let peak = server.memory_peak;
    let startup = server.memory_startup.min(used);
    // Each client as CLIENT LIST's `tot-mem` counts it: normal and pub/sub clients, and
    // replicas (their output is the replication stream they have not taken yet).
    let (mut clients_mem, mut replicas_mem) = (0u64, 0u64);
    for c in ctx.clients.iter().chain(std::iter::once(&*ctx.client)) {
        let mem = c.memory_usage(ctx.ks.watches.watching(c.id).keys, 0);
        if c.replica {
            replicas_mem += mem;
        } else if !c.master {
            clients_mem += mem;
        }
    }
    let overhead = (startup + clients_mem + replicas_mem).min(used);
    let dataset = used - overhead;
    let net = used - startup;
    let percent = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            part as f64 * 100.0 / whole as f64
        }
    };
    let total_system = total_system_memory();
    out.push_str("# Memory\r\n");
    field!(out, "used_memory", "{used}");
    field!(out, "used_memory_human", "{}", bytes_to_human(used));
    field!(out, "used_memory_rss", "{rss}");
    field!(out, "used_memory_rss_human", "{}", bytes_to_human(rss));
    field!(out, "used_memory_peak", "{peak}");
    field!(out, "used_memory_peak_human", "{}", bytes_to_human(peak));
    field!(out, "used_memory_peak_perc", "{:.2}%", percent(used, peak));
    field!(out, "used_memory_overhead", "{overhead}");
    field!(out, "used_memory_startup", "{startup}");
    field!(out, "used_memory_dataset", "{dataset}");
    field!(
        out,
        "used_memory_dataset_perc",
        "{:.2}%",
        percent(dataset, net)
    );
    field!(out, "allocator_allocated", "0");
    field!(out, "allocator_active", "0");
    field!(out, "allocator_resident", "0");
    field!(out, "total_system_memory", "{total_system}");
    field!(
        out,
        "total_system_memory_human",
        "{}",
        bytes_to_human(total_system)
    );
    // The Lua VM exists once a script has run; before that, as in Redis before its first
    // script, it holds next to nothing.
    let vm = ctx.server.scripting.get();
    let lua = vm.map_or(0, |vm| vm.used_memory()) as u64;
    let scripts = vm.map_or(0, |vm| vm.scripts_memory()) as u64;
    let cached = vm.map_or(0, |vm| vm.script_count());
    field!(out, "used_memory_lua", "{lua}");
    field!(out, "used_memory_vm_eval", "{lua}");
    field!(out, "used_memory_lua_human", "{}", bytes_to_human(lua));
    field!(out, "used_memory_scripts_eval", "{scripts}");
    field!(out, "number_of_cached_scripts", "{cached}");
    let functions = ctx.server.functions.get();
    let function_count = functions.map_or(0, |f| f.function_count());
    let library_count = functions.map_or(0, |f| f.library_count());
    let functions_vm = functions.map_or(0, |f| f.vm_memory()) as u64;
    let libraries = functions.map_or(0, |f| f.libraries_memory()) as u64;
    field!(out, "number_of_functions", "{function_count}");
    field!(out, "number_of_libraries", "{library_count}");
    field!(out, "used_memory_vm_functions", "{functions_vm}");
    field!(out, "used_memory_vm_total", "{}", lua + functions_vm);
    field!(
        out,
        "used_memory_vm_total_human",
        "{}",
        bytes_to_human(lua + functions_vm)
    );
    field!(out, "used_memory_functions", "{libraries}");
    field!(out, "used_memory_scripts", "{}", scripts + libraries);
    field!(
        out,
        "used_memory_scripts_human",
        "{}",
        bytes_to_human(scripts + libraries)
    );
    let config = &ctx.server.config;
    field!(out, "maxmemory", "{}", config.maxmemory);
    field!(
        out,
        "maxmemory_human",
        "{}",
        bytes_to_human(config.maxmemory)
    );
    field!(out, "maxmemory_policy", "{}", config.maxmemory_policy);
    // We see the allocator only through our counter, so its internal ratios are 1; the
    // fragmentation ratio compares the resident set with the bytes allocated, as Redis's does.
    for (ratio, bytes) in [
        ("allocator_frag_ratio", "allocator_frag_bytes"),
        ("allocator_rss_ratio", "allocator_rss_bytes"),
        ("rss_overhead_ratio", "rss_overhead_bytes"),
    ] {
        field!(out, ratio, "1.00");
        field!(out, bytes, "0");
    }
    let fragmentation = if used == 0 {
        1.0
    } else {
        rss as f64 / used as f64
    };
    field!(out, "mem_fragmentation_ratio", "{fragmentation:.2}");
    field!(
        out,
        "mem_fragmentation_bytes",
        "{}",
        rss as i64 - used as i64
    );
    let not_counted = ctx.server.client_memory.closing_bytes()
        + ctx.server.repl.not_counted_for_eviction(ctx.clients);
    field!(out, "mem_not_counted_for_evict", "{not_counted}");
    let (backlog, replicas, total) = replication_buffers(ctx);
    field!(out, "mem_replication_backlog", "{backlog}");
    field!(out, "mem_total_replication_buffers", "{total}");
    field!(out, "mem_clients_slaves", "{replicas}");
    field!(out, "mem_clients_normal", "{clients_mem}");
    field!(out, "mem_cluster_links", "0");
    field!(out, "mem_aof_buffer", "0");
    field!(out, "mem_allocator", "libc");
    field!(out, "active_defrag_running", "0");
    field!(
        out,
        "lazyfree_pending_objects",
        "{}",
        crate::model::lazyfree::lazyfree_pending_objects()
    );
    field!(
        out,
        "lazyfreed_objects",
        "{}",
        crate::model::lazyfree::lazyfreed_objects()
    );
}

/// The running background save's fields (Redis's child reports them): its copies and progress.
fn save_progress(ctx: &Ctx<'_>, out: &mut String) {
    let p = &ctx.server.persistence;
    // Its copies: the pre-images kept for it (what Redis's child reports as its
    // copy-on-write). They only grow while it runs, so the peak is the current size, and
    // they are counted as they are made (age 0).
    let copied = p.bgsave.as_ref().map_or(0, |_| {
        crate::model::snapshot::SnapshotWalk::copied_bytes(ctx.ks)
    });
    field!(out, "current_cow_peak", "{copied}");
    field!(out, "current_cow_size", "{copied}");
    field!(out, "current_cow_size_age", "0");
    let (processed, total) = p.bgsave.as_ref().map_or((0, 0), |job| job.walk.progress());
    let perc = if total == 0 {
        0.0
    } else {
        processed as f64 * 100.0 / total as f64
    };
    field!(out, "current_fork_perc", "{perc:.2}");
    field!(out, "current_save_keys_processed", "{processed}");
    field!(out, "current_save_keys_total", "{total}");
}

fn persistence(ctx: &Ctx<'_>, out: &mut String) {
    out.push_str("# Persistence\r\n");
    let p = &ctx.server.persistence;
    field!(out, "loading", "{}", u8::from(p.loading));
    field!(out, "async_loading", "{}", u8::from(p.async_loading));
    save_progress(ctx, out);
    field!(out, "rdb_changes_since_last_save", "{}", ctx.ks.dirty);
    field!(
        out,
        "rdb_bgsave_in_progress",
        "{}",
        // A full sync's image still going out is Redis's saving child for replicas too.
        u8::from(
            p.bgsave.is_some()
                || ctx.server.repl.transfer.is_some()
                || ctx.server.repl.replicas.iter().any(|r| r.image.is_some())
        )
    );
    field!(out, "rdb_last_save_time", "{}", ctx.server.lastsave);
    field!(
        out,
        "rdb_last_bgsave_status",
        "{}",
        if p.last_bgsave_ok { "ok" } else { "err" }
    );
    field!(
        out,
        "rdb_last_bgsave_time_sec",
        "{}",
        p.last_bgsave_time_sec
    );
    let current = p
        .bgsave
        .as_ref()
        .map_or(-1, |job| job.started.elapsed().as_secs() as i64);
    field!(out, "rdb_current_bgsave_time_sec", "{current}");
    field!(out, "rdb_saves", "{}", p.saves);
    field!(out, "rdb_last_cow_size", "{}", p.last_cow_size);
    field!(
        out,
        "rdb_last_load_keys_expired",
        "{}",
        p.last_load_keys_expired
    );
    field!(
        out,
        "rdb_last_load_keys_loaded",
        "{}",
        p.last_load_keys_loaded
    );
    let aof = &ctx.server.aof;
    let enabled = aof.status != crate::model::aof_state::AofStatus::Off;
    field!(out, "aof_enabled", "{}", u8::from(enabled));
    field!(
        out,
        "aof_rewrite_in_progress",
        "{}",
        u8::from(aof.rewrite.is_some())
    );
    field!(
        out,
        "aof_rewrite_scheduled",
        "{}",
        u8::from(aof.rewrite_scheduled)
    );
    field!(
        out,
        "aof_last_rewrite_time_sec",
        "{}",
        aof.last_rewrite_time_sec
    );
    let current = aof
        .rewrite
        .as_ref()
        .map_or(-1, |job| job.started.elapsed().as_secs() as i64);
    field!(out, "aof_current_rewrite_time_sec", "{current}");
    let ok = |ok: bool| if ok { "ok" } else { "err" };
    field!(
        out,
        "aof_last_bgrewrite_status",
        "{}",
        ok(aof.last_rewrite_ok)
    );
    field!(out, "aof_rewrites", "{}", aof.rewrites);
    field!(
        out,
        "aof_rewrites_consecutive_failures",
        "{}",
        aof.rewrite_failures
    );
    let fsync_ok = aof
        .appender
        .as_ref()
        .is_none_or(|a| a.fsync_error().is_none());
    field!(
        out,
        "aof_last_write_status",
        "{}",
        ok(aof.last_write_ok && fsync_ok)
    );
    field!(out, "aof_last_cow_size", "0");
    field!(out, "module_fork_in_progress", "0");
    field!(out, "module_fork_last_cow_size", "0");
    if p.loading || p.async_loading {
        let loaded = p.loading_loaded_bytes;
        let total = p.loading_total_bytes.max(1);
        let elapsed = (ctx.now_ms / 1000 - p.loading_started_s).max(0);
        field!(out, "loading_start_time", "{}", p.loading_started_s);
        field!(out, "loading_total_bytes", "{}", p.loading_total_bytes);
        field!(out, "loading_rdb_used_mem", "0");
        field!(out, "loading_loaded_bytes", "{loaded}");
        field!(
            out,
            "loading_loaded_perc",
            "{:.2}",
            loaded as f64 * 100.0 / total as f64
        );
        let eta = if loaded == 0 {
            1
        } else {
            (elapsed as f64 * (total - loaded.min(total)) as f64 / loaded as f64) as i64
        };
        field!(out, "loading_eta_seconds", "{eta}");
    }
    if enabled {
        field!(out, "aof_current_size", "{}", aof.current_size);
        field!(out, "aof_base_size", "{}", aof.base_size);
        field!(
            out,
            "aof_pending_rewrite",
            "{}",
            u8::from(aof.rewrite_scheduled)
        );
        field!(out, "aof_buffer_length", "{}", aof.buf.len());
        let pending = aof.appender.as_ref().is_some_and(|a| a.fsync_pending());
        field!(out, "aof_pending_bio_fsync", "{}", u8::from(pending));
        field!(out, "aof_delayed_fsync", "0");
    }
}

fn stats(ctx: &Ctx<'_>, out: &mut String) {
    let s = &ctx.server.stats;
    let k = &ctx.ks.stats;
    let (ops, input_kbps, output_kbps) = s.instantaneous();
    out.push_str("# Stats\r\n");
    field!(
        out,
        "total_connections_received",
        "{}",
        s.total_connections_received
    );
    field!(
        out,
        "total_commands_processed",
        "{}",
        s.total_commands_processed
    );
    field!(out, "instantaneous_ops_per_sec", "{ops}");
    field!(out, "total_net_input_bytes", "{}", s.net_input_bytes);
    field!(out, "total_net_output_bytes", "{}", s.net_output_bytes);
    field!(out, "total_net_repl_input_bytes", "0");
    field!(out, "total_net_repl_output_bytes", "0");
    field!(out, "instantaneous_input_kbps", "{input_kbps:.2}");
    field!(out, "instantaneous_output_kbps", "{output_kbps:.2}");
    field!(out, "instantaneous_input_repl_kbps", "0.00");
    field!(out, "instantaneous_output_repl_kbps", "0.00");
    field!(out, "rejected_connections", "{}", s.rejected_connections);
    field!(out, "sync_full", "{}", ctx.server.repl.sync_full);
    field!(
        out,
        "sync_partial_ok",
        "{}",
        ctx.server.repl.sync_partial_ok
    );
    field!(
        out,
        "sync_partial_err",
        "{}",
        ctx.server.repl.sync_partial_err
    );
    field!(out, "expired_keys", "{}", k.expired_keys);
    field!(
        out,
        "expired_stale_perc",
        "{:.2}",
        k.expired_stale_perc * 100.0
    );
    field!(
        out,
        "expired_time_cap_reached_count",
        "{}",
        k.expired_time_cap_reached_count
    );
    field!(
        out,
        "expire_cycle_cpu_milliseconds",
        "{}",
        k.expire_cycle_cpu_milliseconds
    );
    field!(out, "evicted_keys", "{}", k.evicted_keys);
    field!(
        out,
        "evicted_clients",
        "{}",
        ctx.server.client_memory.evicted
    );
    let (current, total) = ctx.server.eviction.exceeded_ms();
    field!(out, "total_eviction_exceeded_time", "{total}");
    field!(out, "current_eviction_exceeded_time", "{current}");
    field!(out, "keyspace_hits", "{}", k.hits);
    field!(out, "keyspace_misses", "{}", k.misses);
    let pubsub = &ctx.server.pubsub;
    field!(out, "pubsub_channels", "{}", pubsub.channel_count(false));
    field!(out, "pubsub_patterns", "{}", pubsub.pattern_count());
    field!(
        out,
        "pubsubshard_channels",
        "{}",
        pubsub.channel_count(true)
    );
    field!(out, "latest_fork_usec", "0");
    field!(out, "total_forks", "{}", ctx.server.persistence.forks);
    field!(
        out,
        "migrate_cached_sockets",
        "{}",
        ctx.server.migrate_sockets.len()
    );
    for name in [
        "slave_expires_tracked_keys",
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
    ] {
        field!(out, name, "0");
    }
    let tracking = &ctx.ks.tracking;
    field!(out, "tracking_total_keys", "{}", tracking.total_keys());
    field!(out, "tracking_total_items", "{}", tracking.total_items());
    field!(
        out,
        "tracking_total_prefixes",
        "{}",
        tracking.total_prefixes()
    );
    field!(
        out,
        "unexpected_error_replies",
        "{}",
        s.unexpected_error_replies
    );
    field!(out, "total_error_replies", "{}", s.total_error_replies);
    field!(out, "dump_payload_sanitizations", "0");
    field!(out, "total_reads_processed", "{}", s.total_reads_processed);
    field!(
        out,
        "total_writes_processed",
        "{}",
        s.total_writes_processed
    );
    field!(out, "io_threaded_reads_processed", "0");
    field!(out, "io_threaded_writes_processed", "0");
    let resizes = &ctx.server.reply_resizes;
    let shrinks = resizes.shrinks.load(std::sync::atomic::Ordering::Relaxed);
    let expands = resizes.expands.load(std::sync::atomic::Ordering::Relaxed);
    field!(out, "reply_buffer_shrinks", "{shrinks}");
    field!(out, "reply_buffer_expands", "{expands}");
}

fn replication(ctx: &Ctx<'_>, out: &mut String) {
    let repl = &ctx.server.repl;
    out.push_str("# Replication\r\n");
    match &repl.primary {
        None => field!(out, "role", "master"),
        Some(primary) => {
            let now_s = ctx.now_ms.div_euclid(1000);
            let config = &ctx.server.config;
            field!(out, "role", "slave");
            field!(out, "master_host", "{}", primary.host);
            field!(out, "master_port", "{}", primary.port);
            field!(
                out,
                "master_link_status",
                "{}",
                if primary.is_up() { "up" } else { "down" }
            );
            let last_io = match primary.client {
                Some(_) => now_s - primary.last_io_ms.div_euclid(1000),
                None => -1,
            };
            field!(out, "master_last_io_seconds_ago", "{last_io}");
            let transfer = primary.state == crate::model::replication::LinkState::Transfer;
            field!(out, "master_sync_in_progress", "{}", u8::from(transfer));
            field!(out, "slave_read_repl_offset", "{}", repl.read_offset());
            field!(out, "slave_repl_offset", "{}", repl.offset);
            if transfer {
                let size = primary.transfer_size;
                let read = primary.transfer_read as i64;
                let perc = if size > 0 {
                    read as f64 / size as f64 * 100.0
                } else {
                    0.0
                };
                field!(out, "master_sync_total_bytes", "{size}");
                field!(out, "master_sync_read_bytes", "{read}");
                field!(out, "master_sync_left_bytes", "{}", size - read);
                field!(out, "master_sync_perc", "{perc:.2}");
                field!(
                    out,
                    "master_sync_last_io_seconds_ago",
                    "{}",
                    now_s - primary.last_io_ms.div_euclid(1000)
                );
            }
            if !primary.is_up() {
                let down = primary
                    .down_since_ms
                    .map_or(-1, |since| now_s - since.div_euclid(1000));
                field!(out, "master_link_down_since_seconds", "{down}");
            }
            field!(out, "slave_priority", "{}", config.replica_priority);
            field!(
                out,
                "slave_read_only",
                "{}",
                u8::from(config.replica_read_only)
            );
            field!(
                out,
                "replica_announced",
                "{}",
                u8::from(config.replica_announced)
            );
        }
    }
    field!(out, "connected_slaves", "{}", repl.replicas.len());
    let config = &ctx.server.config;
    if config.min_replicas_to_write != 0 && config.min_replicas_max_lag != 0 {
        field!(
            out,
            "min_slaves_good_slaves",
            "{}",
            repl.good_replicas(ctx.now_ms, config.min_replicas_max_lag)
        );
    }
    for (i, r) in repl.replicas.iter().enumerate() {
        let lag = (ctx.now_ms - r.ack_time_ms).max(0) / 1000;
        let state = if r.is_synced() && !r.receiving_image() {
            "online"
        } else {
            "wait_bgsave"
        };
        field!(
            out,
            &format!("slave{i}"),
            "ip={},port={},state={state},offset={},lag={}",
            r.ip,
            r.listening_port,
            r.ack_offset,
            lag
        );
    }
    field!(
        out,
        "master_failover_state",
        "{}",
        repl.failover.state.name()
    );
    field!(out, "master_replid", "{}", repl.replid);
    field!(out, "master_replid2", "{}", repl.replid2);
    field!(out, "master_repl_offset", "{}", repl.offset);
    field!(out, "second_repl_offset", "{}", repl.second_offset);
    match &repl.backlog {
        Some(backlog) => {
            field!(out, "repl_backlog_active", "1");
            field!(out, "repl_backlog_size", "{}", backlog.size());
            field!(
                out,
                "repl_backlog_first_byte_offset",
                "{}",
                backlog.first_offset()
            );
            field!(out, "repl_backlog_histlen", "{}", backlog.len());
        }
        None => {
            field!(out, "repl_backlog_active", "0");
            field!(
                out,
                "repl_backlog_size",
                "{}",
                ctx.server.config.repl_backlog_size
            );
            field!(out, "repl_backlog_first_byte_offset", "0");
            field!(out, "repl_backlog_histlen", "0");
        }
    }
}

/// (system, user) CPU seconds from `getrusage(who)`.
fn rusage(who: libc::c_int) -> (f64, f64) {
    // SAFETY: getrusage fills the struct we pass; zeroed is a valid initial value.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &mut usage) != 0 {
            return (0.0, 0.0);
        }
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_stime), secs(usage.ru_utime))
}

fn cpu(out: &mut String) {
    let (sys, user) = rusage(libc::RUSAGE_SELF);
    let (sys_children, user_children) = rusage(libc::RUSAGE_CHILDREN);
    // INFO runs on the executor thread: RUSAGE_THREAD is the "main thread".
    #[cfg(target_os = "linux")]
    let (sys_main, user_main) = rusage(libc::RUSAGE_THREAD);
    #[cfg(not(target_os = "linux"))]
    let (sys_main, user_main) = (sys, user);
    out.push_str("# CPU\r\n");
    field!(out, "used_cpu_sys", "{sys:.6}");
    field!(out, "used_cpu_user", "{user:.6}");
    field!(out, "used_cpu_sys_children", "{sys_children:.6}");
    field!(out, "used_cpu_user_children", "{user_children:.6}");
    field!(out, "used_cpu_sys_main_thread", "{sys_main:.6}");
    field!(out, "used_cpu_user_main_thread", "{user_main:.6}");
}

fn commandstats(ctx: &Ctx<'_>, out: &mut String) {
    out.push_str("# Commandstats\r\n");
    for command in &ctx.registry.commands {
        let s = &ctx.server.command_stats[command.id];
        if s.calls == 0 && s.failed_calls == 0 && s.rejected_calls == 0 {
            continue;
        }
        let per_call = if s.calls == 0 {
            0.0
        } else {
            s.usec as f64 / s.calls as f64
        };
        let _ = write!(
            out,
            "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}\r\n",
            command.full_name, s.calls, s.usec, per_call, s.rejected_calls, s.failed_calls
        );
    }
}

/// Each command's run time at the percentiles of `latency-tracking-info-percentiles` (50, 99 and
/// 99.9 by default), from its histogram; empty with `latency-tracking no`.
fn latencystats(ctx: &Ctx<'_>, out: &mut String) {
    out.push_str("# Latencystats\r\n");
    for command in &ctx.registry.commands {
        let histogram = &ctx.server.command_stats[command.id].histogram;
        if histogram.count() == 0 {
            continue;
        }
        let _ = write!(out, "latency_percentiles_usec_{}:", command.full_name);
        let percentiles = &ctx.server.config.latency_tracking_info_percentiles;
        let values = histogram.percentiles_usec(percentiles);
        for (i, (p, value)) in percentiles.iter().zip(values).enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(out, "{sep}p{}={value:.3}", percentile_text(*p));
        }
        out.push_str("\r\n");
    }
}

fn errorstats(ctx: &Ctx<'_>, out: &mut String) {
    out.push_str("# Errorstats\r\n");
    for (code, count) in &ctx.server.error_stats {
        let _ = write!(out, "errorstat_{code}:count={count}\r\n");
    }
}

fn keyspace(ctx: &Ctx<'_>, out: &mut String) {
    out.push_str("# Keyspace\r\n");
    for db in &ctx.ks.dbs {
        if db.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "db{}:keys={},expires={},avg_ttl={}\r\n",
            db.id,
            db.len(),
            db.expires.len(),
            db.avg_ttl
        );
    }
}

/// `uname -s -r -m`, as Redis prints it.
fn os_name() -> String {
    // SAFETY: uname fills the struct we pass; the fields are NUL-terminated C strings.
    unsafe {
        let mut name: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut name) != 0 {
            return String::new();
        }
        let field = |f: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(f.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        format!(
            "{} {} {}",
            field(&name.sysname),
            field(&name.release),
            field(&name.machine)
        )
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

/// Physical memory of the machine.
fn total_system_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    if pages > 0 {
        pages as u64 * page_size()
    } else {
        0
    }
}

pub static COMMANDS: &[CommandSpec] = &[CommandSpec::new("info", -1, info)
    .flags(Flags::LOADING.union(Flags::STALE))
    .acl(Acl::DANGEROUS)
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ])
    .doc(
        "server",
        "1.0.0",
        "O(1)",
        "Reports information and statistics about the server, by section.",
        "[section...]",
    )];

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn human_sizes_match_redis() {
        assert_eq!(bytes_to_human(0), "0B");
        assert_eq!(bytes_to_human(1023), "1023B");
        assert_eq!(bytes_to_human(1024), "1.00K");
        assert_eq!(bytes_to_human(1_114_320), "1.06M");
        assert_eq!(bytes_to_human(25_276_502_016), "23.54G");
        assert_eq!(bytes_to_human(3 << 40), "3.00T");
    }

    #[test]
    fn section_selection() {
        let args = |words: &[&str]| -> Vec<Bytes> {
            words
                .iter()
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect()
        };
        let names = |on: [bool; 14]| -> Vec<&str> {
            ORDER
                .iter()
                .zip(on)
                .filter(|(_, on)| *on)
                .map(|((_, n), _)| *n)
                .collect()
        };
        assert_eq!(
            names(selected(&[])),
            [
                "server",
                "clients",
                "memory",
                "persistence",
                "stats",
                "replication",
                "cpu",
                "modules",
                "errorstats",
                "cluster",
                "keyspace",
                // Dropped by `report` for versions before 8.0.
                "keysizes"
            ]
        );
        assert_eq!(
            names(selected(&args(&["CPU", "server", "foo"]))),
            ["server", "cpu"]
        );
        assert_eq!(names(selected(&args(&["all"]))).len(), 14);
        assert!(names(selected(&args(&["nothing"]))).is_empty());
        assert_eq!(
            names(selected(&args(&["keyspace", "keyspace"]))),
            ["keyspace"]
        );
    }

    #[test]
    fn process_figures_are_real() {
        use crate::base::alloc::used_memory;
        assert!(used_memory() > 0);
        assert!(total_system_memory() > used_memory());
        assert!(os_name().starts_with("Linux"));
    }

    /// INFO latencystats prints the configured percentiles, labelled as Redis prints them.
    #[test]
    fn latencystats_use_the_configured_percentiles() {
        let mut h = crate::io::test_harness::Harness::new();
        h.run("SET a b");
        let line = |h: &mut crate::io::test_harness::Harness| {
            let info = h.run_text("INFO latencystats");
            info.split("\r\n")
                .find(|l| l.starts_with("latency_percentiles_usec_set:"))
                .unwrap()
                .to_string()
        };
        let default = line(&mut h);
        assert!(
            default.contains(":p50=") && default.contains(",p99=") && default.contains(",p99.9="),
            "{default}"
        );
        assert_eq!(default.matches('=').count(), 3, "{default}");
        h.run("CONFIG SET latency-tracking-info-percentiles 12.5");
        let one = line(&mut h);
        assert!(
            one.starts_with("latency_percentiles_usec_set:p12.5="),
            "{one}"
        );
        assert_eq!(one.matches('=').count(), 1, "{one}");
        h.run("CONFIG SET latency-tracking-info-percentiles \"\"");
        assert_eq!(line(&mut h), "latency_percentiles_usec_set:");
    }
}
