//! Redis's `call`: running one command's handler with `now` frozen and doing the bookkeeping
//! every command shares — per-command and error statistics and MONITOR feeds.
//!
//! It lives apart from the engine because commands run commands: EXEC runs the queued ones and a
//! script's `redis.call` runs whatever the script names. Both hold a [`Ctx`] (the engine is lent
//! out to them), so the path takes the engine's data as [`Parts`] — the keyspace, the server state
//! and the other clients — which a handler can hand on from its own `Ctx`.

use bytes::{Bytes, BytesMut};
use embedis_protocol::{Version, Writer};

use crate::base::compat::CompatVersion;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Command, Flags};
use crate::model::blocking::Blocked;
use crate::model::client::{ClientState, Peer};
use crate::model::state::ServerState;

pub use crate::kernel::parts::{How, Parts};

impl<'a> Parts<'a> {
    /// The parts a handler holds in its `Ctx`, lent on to a command it runs.
    pub fn of<'c>(ctx: &'c mut Ctx<'_>) -> (Parts<'c>, &'c mut ClientState) {
        (
            Parts {
                ks: &mut *ctx.ks,
                server: &mut *ctx.server,
                clients: &mut *ctx.clients,
                registry: ctx.registry,
            },
            &mut *ctx.client,
        )
    }
}

/// Runs `command` for `client`, appending its reply (or error) to `out` in protocol `version`.
/// Returns what the command asked to wait for, if it blocked.
#[allow(clippy::too_many_arguments)]
pub fn call(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    command: &'static Command,
    args: &[Bytes],
    out: &mut BytesMut,
    version: Version,
    now_us: i64,
    how: How<'_>,
) -> Option<Blocked> {
    let now_ms = now_us.div_euclid(1000);
    let handler = command
        .spec
        .handler
        .expect("containers are resolved to subcommands");
    let started = crate::base::clock::Stopwatch::start();
    // Before the handler: CLIENT LIST / INFO show the running command as the client's own.
    if !how.from_script {
        client.last_command = &command.full_name;
    }
    let monitored = how.counted
        && !parts.server.monitors.is_empty()
        && !command.spec.flags.contains(Flags::ADMIN);
    // The commands that run scripts (flagged skip_monitor) are shown before they run, whatever
    // their outcome, so that MONITOR lists a script's own commands after it, as Redis does.
    if monitored && command.spec.flags.contains(Flags::SKIP_MONITOR) {
        feed_monitors(parts, client, command, args, now_us, how.from_script, out);
    }
    let dirty_before = parts.ks.dirty;
    // The write stream: one test while nobody consumes it (see crate::model::write_stream).
    let propagating = parts.ks.stream.is_on();
    // The replication stream's end before the command, to tell whether it propagated.
    let mut end_before = 0;
    if propagating {
        parts.ks.stream.enter(dirty_before);
        end_before = parts.server.repl.offset + parts.ks.stream.len() as u64;
    }
    let out_start = out.len();
    let (result, block) = {
        let mut ctx = Ctx {
            args,
            out: Writer::new(out, version)
                .shortest_doubles(parts.registry.version >= CompatVersion::V7_2),
            ks: &mut *parts.ks,
            server: &mut *parts.server,
            client: &mut *client,
            clients: &mut *parts.clients,
            cmd: command,
            registry: parts.registry,
            now_ms,
            now_us,
            block: None,
            may_block: how.may_block,
            woken_by: how.woken_by,
            from_script: how.from_script,
            events_at: out_start,
        };
        // CLIENT NO-TOUCH: the keys' access clocks stay as they are, except for TOUCH itself
        // (Redis's lookupKey). One branch on the client's flag otherwise.
        let no_touch = ctx.client.no_touch && command.full_name != "touch";
        if no_touch {
            ctx.ks.access.no_touch = true;
        }
        // While a handler runs, messages to its own client wait for its reply (from 7.2, see
        // `publish::deliver`); eviction's, before it, and tracking's, after, do not.
        ctx.server.executing += 1;
        let result = handler(&mut ctx);
        if no_touch {
            ctx.ks.access.no_touch = false;
        }
        // One branch for both kinds of after-command work, which the hot path never has.
        if ctx.ks.has_after_command_work() {
            // WATCH: the keys it looked up for writing changed if it counted a change.
            let changed = ctx.ks.dirty != dirty_before;
            ctx.ks.settle_noted_writes(changed);
            ctx.ks.settle_keysizes();
            // Keyspace events the keyspace noted after the last one the handler named.
            if ctx.ks.notify.has_pending() {
                crate::kernel::publish::late_keyspace_events(&mut ctx);
            }
        }
        ctx.server.executing -= 1;
        if propagating {
            let (dirty, db) = (ctx.ks.dirty, ctx.client.db);
            ctx.ks.stream.leave(dirty, db, args);
            // WAIT waits for the client's own writes (Redis's `c->woff`): the stream's end
            // after its last command that moved it, while the stream feeds replicas (with no
            // backlog the offset stands still, as Redis's does).
            let end = ctx.server.repl.offset + ctx.ks.stream.len() as u64;
            if end != end_before && ctx.server.repl.is_on() {
                ctx.client.woff = end;
            }
        }
        (result, ctx.block)
    };
    let server = &mut *parts.server;
    if let Err(error) = result {
        server.command_stats[command.id].failed_calls += 1;
        server.count_error(&error.code());
        Writer::new(out, version).error_line(&error.line());
    }
    // A blocked command is timed when it is served (a rerun woken by a key), as Redis does.
    let ran = how.counted || how.woken_by.is_some();
    if ran {
        let elapsed = started.elapsed_us();
        if how.counted {
            let stats = &mut server.command_stats[command.id];
            stats.calls += 1;
            stats.usec += elapsed;
            server.stats.total_commands_processed += 1;
        }
        if block.is_none() {
            if server.config.latency_tracking {
                server.command_stats[command.id].histogram.record(elapsed);
            }
            // One comparison each while nothing is slow enough to note (the hot path).
            let slowlog = server.config.slowlog_log_slower_than;
            let latency_ms = server.config.latency_monitor_threshold;
            if (slowlog >= 0 && elapsed >= slowlog as u64)
                || (latency_ms > 0 && elapsed >= latency_ms.saturating_mul(1000))
            {
                note_slow(
                    server,
                    client,
                    command,
                    args,
                    elapsed,
                    now_us,
                    how.from_script,
                );
            }
        }
        if monitored && !command.spec.flags.contains(Flags::SKIP_MONITOR) {
            feed_monitors(parts, client, command, args, now_us, how.from_script, out);
        }
    }
    // Client tracking: one branch while no client tracks keys.
    if parts.ks.tracking.is_on() {
        crate::kernel::invalidation::after_call(
            parts, client, command, args, out, out_start, version, now_us, how,
        );
    }
    if !parts.server.postponed_pushes.is_empty() && !how.nested {
        crate::kernel::publish::hand_over_postponed(parts.server, client, out);
    }
    block
}

/// A completed command that took long enough for LATENCY or SLOWLOG (every command's run time
/// goes into its histogram in `call`): a latency event if it reached
/// `latency-monitor-threshold`, and a slow-log entry if it reached `slowlog-log-slower-than`
/// (unless flagged `skip_slowlog`, as EXEC is: the commands it runs are logged instead). A
/// script's commands are logged as Redis logs them, from its own client (`?:0`, no name).
#[cold]
fn note_slow(
    server: &mut ServerState,
    client: &ClientState,
    command: &Command,
    args: &[Bytes],
    elapsed_us: u64,
    now_us: i64,
    from_script: bool,
) {
    let threshold = server.config.latency_monitor_threshold;
    if threshold > 0 {
        let event = if command.spec.flags.contains(Flags::FAST) {
            "fast-command"
        } else {
            "command"
        };
        let now_s = now_us.div_euclid(1_000_000);
        server
            .latency
            .add_if_needed(event, elapsed_us / 1000, threshold, now_s);
    }
    let slower_than = server.config.slowlog_log_slower_than;
    if slower_than >= 0
        && elapsed_us >= slower_than as u64
        && !command.spec.flags.contains(Flags::SKIP_SLOWLOG)
    {
        log_slow(
            server,
            client,
            command,
            args,
            elapsed_us,
            now_us,
            from_script,
        );
    }
}

fn log_slow(
    server: &mut ServerState,
    client: &ClientState,
    command: &Command,
    args: &[Bytes],
    elapsed_us: u64,
    now_us: i64,
    from_script: bool,
) {
    let redacted = redacted_arguments(&command.full_name, args, server.config.compat_version);
    let (peer, name) = if from_script {
        ("?:0".to_string(), &b""[..])
    } else {
        (client.peer.addr(), &client.name[..])
    };
    let max_len = usize::try_from(server.config.slowlog_max_len).unwrap_or(usize::MAX);
    server.slowlog.push(
        args,
        &redacted,
        elapsed_us,
        now_us.div_euclid(1_000_000),
        peer,
        name,
        max_len,
    );
}

/// Sends the command to every MONITOR client in Redis's line format. A monitoring client
/// sees its own commands too, right after their replies.
pub(crate) fn feed_monitors(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    command: &Command,
    args: &[Bytes],
    now_us: i64,
    from_script: bool,
    out: &mut BytesMut,
) {
    let mut line = format!(
        "+{}.{:06} [{} ",
        now_us.div_euclid(1_000_000),
        now_us.rem_euclid(1_000_000),
        client.db
    );
    match &client.peer {
        _ if from_script => line.push_str("lua] "),
        Peer::Unix { path } => line.push_str(&format!("unix:{path}] ")),
        peer => line.push_str(&format!("{}] ", peer.addr())),
    }
    let mut bytes = line.into_bytes();
    let version = parts.server.config.compat_version;
    let redacted = redacted_arguments(&command.full_name, args, version);
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            bytes.push(b' ');
        }
        if redacted.contains(&i) {
            bytes.extend_from_slice(b"\"(redacted)\"");
        } else {
            crate::base::cstr::push_repr(&mut bytes, arg);
        }
    }
    bytes.extend_from_slice(b"\r\n");
    for id in parts.server.monitors.clone() {
        if id == client.id && !from_script {
            out.extend_from_slice(&bytes);
        } else if id == client.id {
            client.pending.extend_from_slice(&bytes);
            parts.server.pending_writes.push(id);
        } else if let Some(monitor) = parts.clients.get_mut(id) {
            monitor.pending.extend_from_slice(&bytes);
            parts.server.pending_writes.push(id);
        }
    }
}

/// The arguments MONITOR and SLOWLOG show as `(redacted)`: the passwords of AUTH and HELLO …
/// AUTH, as far as Redis's own parsing of those commands gets before it redacts them, and the
/// values of sensitive parameters in CONFIG SET (`requirepass`, `masterauth`, `masteruser`;
/// from 7.4 the TLS key passwords). `full_name` is the command's (`config|set`).
fn redacted_arguments(full_name: &str, args: &[Bytes], version: CompatVersion) -> Vec<usize> {
    match full_name {
        "config|set" => (2..args.len())
            .step_by(2)
            .filter(|&i| {
                i + 1 < args.len()
                    && std::str::from_utf8(&args[i])
                        .ok()
                        .and_then(crate::base::config::find_param)
                        .is_some_and(|p| p.sensitive_in(version))
            })
            .map(|i| i + 1)
            .collect(),
        "auth" if args.len() <= 3 => (1..args.len()).collect(),
        // ACL SETUSER's name and rules, passwords among them; from 7.4 also the user names
        // of ACL DELUSER and GETUSER.
        "acl|setuser" => (2..args.len()).collect(),
        "acl|deluser" if version >= CompatVersion::V7_4 => (2..args.len()).collect(),
        "acl|getuser" if version >= CompatVersion::V7_4 && args.len() == 3 => vec![2],
        "hello" => {
            let mut redacted = Vec::new();
            // An invalid protocol version stops HELLO before it looks at the options.
            let version = args.get(1).map(|v| embedis_protocol::number::parse_i64(v));
            if matches!(version, Some(v) if !matches!(v, Some(2..=3))) {
                return redacted;
            }
            let mut j = 2;
            while j < args.len() {
                let more = args.len() - 1 - j;
                if args[j].eq_ignore_ascii_case(b"auth") && more >= 2 {
                    redacted.extend([j + 1, j + 2]);
                    j += 2;
                } else if args[j].eq_ignore_ascii_case(b"setname") && more >= 1 {
                    j += 1;
                } else {
                    break;
                }
                j += 1;
            }
            redacted
        }
        // MIGRATE's AUTH password and AUTH2 user and password, as its option parsing reaches
        // them (Redis redacts while it parses: an unknown option stops it).
        "migrate" => {
            let mut redacted = Vec::new();
            let mut j = 6;
            while j < args.len() {
                let more = args.len() - 1 - j;
                let option = &args[j];
                if option.eq_ignore_ascii_case(b"copy") || option.eq_ignore_ascii_case(b"replace") {
                } else if option.eq_ignore_ascii_case(b"auth") && more >= 1 {
                    j += 1;
                    redacted.push(j);
                } else if option.eq_ignore_ascii_case(b"auth2") && more >= 2 {
                    redacted.extend([j + 1, j + 2]);
                    j += 2;
                } else {
                    break;
                }
                j += 1;
            }
            redacted
        }
        _ => Vec::new(),
    }
}
