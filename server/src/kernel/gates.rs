//! The gates: Redis's checks that decide whether a connection is accepted and whether a request
//! may run, before any handler sees it — written once, for every path a command can come by.
//!
//! [`admit`] is the one admission function. Three paths run commands: a client's request through
//! the engine (`crate::engine`), a request answered while a script is busy
//! (`crate::services::busy`), and a script's `redis.call` (`crate::services::script_host`).
//! Each asks `admit` with its [`Asker`] and acts on the [`Admission`] (run, queue, postpone,
//! refuse); none lists gates of its own. `admit` holds Redis's two orders: `processCommand`'s
//! for what clients send (unknown command or subcommand, arity,
//! protected commands, authentication, `no_multi` inside MULTI, ACL, cluster routing
//! ([`crate::kernel::route`]), memory, loading, a failed save, too few replicas, a read-only or
//! stale replica, MONITOR clients and RESP2 subscribers, CLIENT PAUSE, queueing in MULTI; while a
//! script is busy only authentication, ACL and `allow-busy`), and `scriptCall`'s for
//! `redis.call`, with a script's own error texts.
//!
//! Every refusal of a client's request goes through one [`refuse`] (an error reply counted as
//! Redis counts it: `rejected_calls`, errorstats; a queued transaction doomed; a refused EXEC
//! answering EXECABORT and still shown to MONITOR). The direct path of the embedding process
//! (`crate::io::direct`) and the AOF's replay use [`resolve`] alone. [`connect_client`] is the
//! gate of a new connection (maxclients, protected mode). [`refuses_for_memory`] is Redis's
//! `maxmemory` gate: before the command, eviction runs (`crate::model::evict`), and only if it
//! could not bring memory under the limit are commands that may grow memory refused.

use bytes::{Bytes, BytesMut};
use embedis_protocol::Writer;
use std::sync::Arc;

use crate::base::config::Access;
use crate::base::error::Error;
use crate::base::flags::Flags;
use crate::kernel::acl_rules::Denied;
use crate::kernel::call::{feed_monitors, Parts};
use crate::kernel::route;
use crate::kernel::table::{Command, Lookup, Registry};
use crate::model::acl_users::Users;
use crate::model::aof_state::AofStatus;
use crate::model::client::{ClientHandle, ClientState, Peer};
use crate::model::keyspace::Keyspace;
use crate::model::multi::exec_abort_error;
use crate::model::multi::is_transaction_control;
use crate::model::state::ServerState;
use crate::model::vm_slot::ScriptKind;
use embedis_protocol::Version;

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The complete reply line to send before closing.
    Reply(&'static str),
}

/// Registers a new connection with the engine's parts (the engine's own `connect`, and a busy
/// script accepting connections from inside its hook). Returns its handle, or the refusal.
pub fn connect_client(
    parts: &mut Parts<'_>,
    peer: Peer,
    fd: i32,
) -> Result<Arc<ClientHandle>, Refusal> {
    let server = &mut *parts.server;
    if parts.clients.len() as u64 >= server.config.maxclients {
        server.stats.rejected_connections += 1;
        return Err(Refusal::Reply("-ERR max number of clients reached\r\n"));
    }
    // Redis creates the client before the protected-mode check (in its accept handler), so a
    // refused connection still uses up a client ID.
    let id = server.next_client_id;
    server.next_client_id += 1;
    let config = &server.config;
    if config.protected_mode && default_user_is_nopass(&server.users) && !peer.is_local() {
        server.stats.rejected_connections += 1;
        return Err(Refusal::Reply(PROTECTED_MODE_DENIED));
    }
    server.stats.total_connections_received += 1;
    let handle = Arc::new(ClientHandle::new(id));
    let authenticated = !server.users.default_needs_auth();
    let now = server.clock.now_ms();
    handle.set_authenticated(authenticated);
    let client = ClientState::new(handle.clone(), peer, fd, now, authenticated);
    parts.clients.insert(Box::new(client));
    Ok(handle)
}

/// Protected mode's condition on authentication (Redis 7.0: the default user has the `nopass`
/// flag — whether or not it is on).
pub fn default_user_is_nopass(users: &Users) -> bool {
    users.default_user().nopass
}

/// What Redis 7.0 sends a non-local client in protected mode before closing the connection,
/// byte for byte (Redis's advice included, typos and all, since clients and tests match it).
pub const PROTECTED_MODE_DENIED: &str = concat!(
    "-DENIED Redis is running in protected mode because protected mode is enabled and no ",
    "password is set for the default user. In this mode connections are only accepted from the ",
    "loopback interface. If you want to connect from external computers to Redis you may adopt ",
    "one of the following solutions: 1) Just disable protected mode sending the command ",
    "'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the ",
    "same host the server is running, however MAKE SURE Redis is not publicly accessible from ",
    "internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively ",
    "you can just disable the protected mode by editing the Redis configuration file, and ",
    "setting the protected mode option to 'no', and then restarting the server. 3) If you ",
    "started the server manually just for testing, restart it with the '--protected-mode no' ",
    "option. 4) Setup a an authentication password for the default user. NOTE: You only need ",
    "to do one of the above things in order for the server to start accepting connections from ",
    "the outside.\r\n"
);

/// True if the client must authenticate before running commands other than AUTH, HELLO and the
/// like. As in Redis, this is decided per command: a client that connected while a password was
/// required is free once the password is removed (the default user made `nopass` and `on`).
pub fn auth_required(users: &Users, client: &ClientState) -> bool {
    !client.authenticated && users.default_needs_auth()
}

/// Why [`resolve`] refused a request.
#[derive(Clone, Copy)]
pub enum Refused {
    UnknownCommand,
    /// The container (CONFIG, CLIENT…) exists but not this subcommand.
    UnknownSubcommand(&'static Command),
    /// The command exists but not with this many arguments.
    WrongArity(&'static Command),
}

impl Refused {
    /// The command the refusal counts against (`rejected_calls`), if one was found.
    pub fn command(&self) -> Option<&'static Command> {
        match self {
            Refused::WrongArity(command) => Some(command),
            Refused::UnknownCommand | Refused::UnknownSubcommand(_) => None,
        }
    }

    /// The error a client gets (a script gets its own texts instead).
    pub fn error(&self, args: &[Bytes]) -> Error {
        match self {
            Refused::UnknownCommand => unknown_command_error(args),
            Refused::UnknownSubcommand(parent) => unknown_subcommand_error(args, parent),
            Refused::WrongArity(command) => Error::WrongArity(command.full_name.clone().into()),
        }
    }
}

/// The first gates of every path: the command (and subcommand) must exist and take this many
/// arguments. `args` must not be empty.
#[inline]
pub fn resolve(registry: &'static Registry, args: &[Bytes]) -> Result<&'static Command, Refused> {
    let command = registry.lookup(args).map_err(|lookup| match lookup {
        Lookup::UnknownCommand => Refused::UnknownCommand,
        Lookup::UnknownSubcommand(parent) => Refused::UnknownSubcommand(&registry.commands[parent]),
    })?;
    if !command.arity_ok(args.len()) {
        return Err(Refused::WrongArity(command));
    }
    Ok(command)
}

/// The authentication gate: true if `client` must authenticate before it may run `command`.
#[inline]
pub fn needs_auth(users: &Users, client: &ClientState, command: &Command) -> bool {
    auth_required(users, client) && !command.spec.flags.contains(Flags::NO_AUTH)
}

/// The ACL gate: `Some` when the client's user may not run this command line (its command,
/// one of its keys or channels). The default user, which may do everything, costs one branch.
#[inline]
pub fn acl_denied(
    users: &Users,
    client: &ClientState,
    command: &Command,
    args: &[Bytes],
) -> Option<Denied> {
    let user = users.of_client(client.user)?;
    if user.unrestricted {
        return None;
    }
    crate::kernel::acl_rules::check(user, command, args).err()
}

/// The ACL gate of every path: [`acl_denied`], and a refusal written in the ACL log under
/// `context` (see [`acl_context`]).
#[inline]
pub fn acl_check(
    server: &mut ServerState,
    client: &ClientState,
    (command, args): (&Command, &[Bytes]),
    context: crate::model::acl_users::Context,
) -> Option<Denied> {
    let denied = acl_denied(&server.users, client, command, args)?;
    log_acl_denial(
        server,
        client,
        (denied, context),
        (Some(command), args),
        None,
    );
    Some(denied)
}

/// Where a client's own command runs, for the ACL log: inside MULTI or at the top level.
pub fn acl_context(client: &ClientState) -> crate::model::acl_users::Context {
    if client.multi.is_some() {
        crate::model::acl_users::Context::Multi
    } else {
        crate::model::acl_users::Context::Toplevel
    }
}

/// Writes a refusal in the ACL log, as Redis's `addACLLogEntry`: the object is the command's
/// name, or the key or channel refused, or (for a failed AUTH) the command as typed;
/// `username` overrides the client's own (AUTH's attempted user).
pub fn log_acl_denial(
    server: &mut ServerState,
    client: &ClientState,
    (denied, context): (Denied, crate::model::acl_users::Context),
    (command, args): (Option<&Command>, &[Bytes]),
    username: Option<&[u8]>,
) {
    use crate::model::acl_users::Reason;
    let object = match denied.reason {
        Reason::Command => command.map_or(Vec::new(), |c| c.full_name.as_bytes().to_vec()),
        Reason::Key | Reason::Channel => args.get(denied.at).map_or(Vec::new(), |a| a.to_vec()),
        Reason::Auth => args.first().map_or(Vec::new(), |a| a.to_vec()),
    };
    let now_ms = server.clock.now_ms();
    let entry = crate::model::acl_users::LogEntry {
        count: 1,
        reason: denied.reason,
        context,
        object,
        username: username.unwrap_or(&client.user_name).to_vec(),
        at_ms: now_ms,
        client_info: client.info_line(now_ms, Default::default(), server.config.compat_version),
    };
    let max_len = server.config.acllog_max_len;
    server.users.log_event(entry, max_len);
}

/// Redis's reply to a command refused by the `maxmemory` gate.
pub const OOM_ERROR: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// True if the last eviction pass before the current command found memory over `maxmemory`
/// with nothing left to evict (Redis's `pre_command_oom_state`): a script checks this, not the
/// memory its own run moves.
pub fn over_maxmemory(server: &ServerState) -> bool {
    server.config.maxmemory != 0 && server.eviction.out_of_memory
}

/// The `maxmemory` gate of `processCommand`, applied after authentication and before a command
/// is queued by MULTI: an eviction pass runs first (`crate::model::evict`), and if it failed to bring
/// memory under the limit, a command flagged `denyoom` (by its own flags or the flags its
/// script declares: `flags`) is refused, and so is an EXEC whose queue holds one. Any command
/// queued inside MULTI is refused too, since the queue itself takes memory — except EXEC,
/// DISCARD, QUIT and RESET, which end a transaction rather than grow it. Call it only with
/// `maxmemory` set.
pub fn refuses_for_memory(
    server: &mut ServerState,
    ks: &mut Keyspace,
    client: &ClientState,
    command: &Command,
    flags: Flags,
) -> bool {
    // Clients paused: the data set must stay still, so nothing is evicted (and nothing fails).
    let safe = server.pause.is_none();
    let now = server.clock.now_ms();
    let outcome = server.eviction.perform(ks, &server.config, safe, now);
    record_eviction_latency(server, now);
    let out_of_memory = outcome == crate::model::evict::Outcome::Fail;
    server.eviction.out_of_memory = out_of_memory;
    if !out_of_memory {
        return false;
    }
    let name = command.full_name.as_str();
    let mut denyoom = flags.contains(Flags::DENYOOM)
        || (name == "exec"
            && client
                .multi
                .as_ref()
                .is_some_and(|m| m.flags.contains(Flags::DENYOOM)));
    if client.multi.is_some() && !matches!(name, "exec" | "discard" | "quit" | "reset") {
        denyoom = true;
    }
    denyoom
}

/// LATENCY's `eviction-cycle` event for the eviction pass that just ran, if it evicted.
pub fn record_eviction_latency(server: &mut ServerState, now_ms: i64) {
    if let Some(took) = server.eviction.last_cycle.take() {
        let threshold = server.config.latency_monitor_threshold;
        let ms = took.as_millis() as u64;
        server
            .latency
            .add_if_needed("eviction-cycle", ms, threshold, now_ms.div_euclid(1000));
    }
}

/// Redis's reply to a write refused after a failed RDB save.
pub const MISCONF_ERROR: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// Why writes are refused with `-MISCONF`, if they are (Redis's
/// `writeCommandsDeniedByDiskError`): the last background save failed while
/// `stop-writes-on-bgsave-error` is on and save points are set, or the AOF is on and cannot be
/// written (its last write or background fsync failed; the error names the errno).
#[inline]
pub fn disk_error(server: &crate::model::state::ServerState) -> Option<Error> {
    if !server.persistence.last_bgsave_ok
        && server.config.stop_writes_on_bgsave_error
        && !server.config.save_points.is_empty()
    {
        return Some(Error::msg(MISCONF_ERROR));
    }
    let errno = server.aof.unwritable()?;
    let text = crate::base::error::os_error_text(&std::io::Error::from_raw_os_error(errno));
    Some(Error::owned(format!(
        "MISCONF Errors writing to the AOF file: {text}"
    )))
}

/// The primary's (or the AOF's) write that this server cannot persist, as Redis's
/// `processCommand` takes it: the server stops, unless `replica-ignore-disk-write-errors` says
/// to apply it anyway (logged at most every 10 s).
fn obey_despite_disk_error(server: &mut ServerState, command: &Command) {
    if command.full_name == "ping" {
        return;
    }
    if !server.config.replica_ignore_disk_write_errors {
        server.stop_fatally("Guru Meditation: Replica was unable to write command to disk.");
        return;
    }
    let now_ms = server.clock.now_ms();
    if now_ms > server.last_disk_error_log_ms + 10_000 {
        server.last_disk_error_log_ms = now_ms;
        server
            .log
            .warning("Replica is applying a command even though it is unable to write to disk.");
    }
}

/// The disk-error gate of `processCommand` (just before the replicas gate): a write (by its
/// flags or its script's), an EXEC whose queue holds one, or PING is refused while
/// [`disk_error`] holds.
pub fn refuses_for_disk_error(client: &ClientState, command: &Command, flags: Flags) -> bool {
    command.full_name == "ping" || writes(client, command, flags)
}

/// True if the command writes: by its flags (or its script's: `flags`), or as an EXEC whose
/// queue holds a write.
fn writes(client: &ClientState, command: &Command, flags: Flags) -> bool {
    flags.contains(Flags::WRITE)
        || (command.full_name == "exec"
            && client
                .multi
                .as_ref()
                .is_some_and(|m| m.flags.contains(Flags::WRITE)))
}

/// Redis's reply to a command without the `loading` flag while the dataset loads.
pub const LOADING_ERROR: &str = "LOADING Redis is loading the dataset in memory";

/// Redis's reply to a write sent to a read-only replica.
pub const READONLY_ERROR: &str = "READONLY You can't write against a read only replica.";

/// True while this server is a read-only replica (REPLICAOF with `replica-read-only yes`):
/// clients' writes are refused with [`READONLY_ERROR`] (Redis's `repl_slave_ro` gate). The
/// primary's own link is never refused (the caller checks `client.master`).
#[inline]
pub fn read_only_replica(server: &crate::model::state::ServerState) -> bool {
    server.repl.primary.is_some() && server.config.replica_read_only
}

/// Redis's reply to a command a replica without its primary does not serve.
pub const MASTERDOWN_ERROR: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// The stale-data gate of `processCommand`: a replica whose link is down, with
/// `replica-serve-stale-data no`, serves only commands flagged `stale` (INFO, REPLICAOF, …,
/// and a script or function declaring `allow-stale`: `flags` are the effective ones); an EXEC
/// is judged by its queue (any command without the flag refuses it).
pub fn refuses_stale(
    server: &crate::model::state::ServerState,
    client: &ClientState,
    command: &Command,
    flags: Flags,
) -> bool {
    if server.config.replica_serve_stale_data || !server.repl.link_down() || client.master {
        return false;
    }
    if command.full_name == "exec" {
        return client.multi.as_ref().is_some_and(|m| m.not_stale);
    }
    !flags.contains(Flags::STALE)
}

/// Redis's reply to a write refused for want of good replicas.
pub const NOREPLICAS_ERROR: &str = "NOREPLICAS Not enough good replicas to write.";

/// True if writes must be refused for want of good replicas (Redis's `checkGoodReplicasStatus`
/// failing): the check is on (`min-replicas-to-write` and `min-replicas-max-lag` both non-zero)
/// and fewer replicas than `min-replicas-to-write` acknowledged within `min-replicas-max-lag`
/// seconds. Shared by this gate and the script host's.
pub fn too_few_replicas(server: &crate::model::state::ServerState) -> bool {
    let config = &server.config;
    config.min_replicas_to_write != 0
        && config.min_replicas_max_lag != 0
        && server.repl.primary.is_none()
        && server
            .repl
            .good_replicas(server.clock.now_ms(), config.min_replicas_max_lag)
            < config.min_replicas_to_write as usize
}

/// The `min-replicas-to-write` gate of `processCommand` (right after the memory gate): a write
/// (by its flags or its script's: `flags`), or an EXEC whose queue holds one, is refused unless
/// enough good replicas are connected ([`too_few_replicas`]).
pub fn refuses_for_replicas(
    server: &crate::model::state::ServerState,
    client: &ClientState,
    command: &Command,
    flags: Flags,
) -> bool {
    if client.master || !too_few_replicas(server) {
        return false;
    }
    writes(client, command, flags)
}

/// A request refused by a gate: an error reply, counted as rejected (when the command is known)
/// and in errorstats. Inside MULTI it dooms the transaction; a refused EXEC discards it (even
/// without MULTI) and answers EXECABORT with the reason, and MONITOR still sees it, as Redis's
/// `rejectCommand` and `execCommandAbort` do.
pub fn refuse(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    command: Option<&'static Command>,
    error: Error,
    args: &[Bytes],
    out: &mut BytesMut,
) {
    if let Some(transaction) = client.multi.as_mut() {
        transaction.aborted = true;
    }
    let mut error = error;
    let mut exec = None;
    if let Some(command) = command {
        parts.server.command_stats[command.id].rejected_calls += 1;
        if command.full_name == "exec" {
            client.multi = None;
            parts.ks.watches.unwatch_all(client.id);
            error = exec_abort_error(&error);
            exec = Some(command);
        }
    }
    parts.server.count_error(&error.code());
    Writer::new(out, client.resp).error_line(&error.line());
    if let Some(command) = exec {
        if !parts.server.monitors.is_empty() {
            let now_us = parts.server.clock.now_us();
            feed_monitors(parts, client, command, args, now_us, false, out);
        }
    }
}

/// `ERR unknown command 'foo', with args beginning with: 'a' 'b' ` — Redis quotes at most about
/// 128 bytes of arguments and, being C, stops each at a NUL byte.
pub fn unknown_command_error(args: &[Bytes]) -> Error {
    let mut line = b"ERR unknown command '".to_vec();
    line.extend_from_slice(c_str_max(&args[0], 128));
    line.extend_from_slice(b"', with args beginning with: ");
    let mut quoted = Vec::new();
    for arg in &args[1..] {
        if quoted.len() >= 128 {
            break;
        }
        let room = 128 - quoted.len();
        quoted.push(b'\'');
        quoted.extend_from_slice(c_str_max(arg, room));
        quoted.extend_from_slice(b"' ");
    }
    line.extend_from_slice(&quoted);
    Error::bytes(line)
}

pub fn unknown_subcommand_error(args: &[Bytes], parent: &Command) -> Error {
    let mut line = b"ERR unknown subcommand '".to_vec();
    line.extend_from_slice(c_str_max(&args[1], 128));
    line.extend_from_slice(b"'. Try ");
    line.extend_from_slice(parent.spec.name.to_ascii_uppercase().as_bytes());
    line.extend_from_slice(b" HELP.");
    Error::bytes(line)
}

/// At most `max` bytes of `bytes`, cut at the first NUL (C's `%.*s`).
fn c_str_max(bytes: &[u8], max: usize) -> &[u8] {
    let s = crate::base::cstr::c_str(bytes);
    &s[..s.len().min(max)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::clock::Clock;
    use crate::base::config::Config;
    use crate::base::log::Logger;
    use crate::engine::Engine;
    use crate::model::multi::Transaction;

    fn peer() -> Peer {
        Peer::Tcp {
            addr: "127.0.0.1:40000".parse().unwrap(),
            local: "127.0.0.1:6379".parse().unwrap(),
        }
    }

    /// The one refusal every path shares (engine, busy script): a refused EXEC discards the
    /// transaction, answers EXECABORT with the reason, counts as a rejected call and in
    /// errorstats, and MONITOR still sees it; any other refusal dooms an open transaction.
    #[test]
    fn refusals_abort_transactions_and_are_counted() {
        let mut engine = Engine::new(Config::default(), Clock::manual(), Logger::silent(), None);
        let id = engine.connect(peer(), -1).unwrap().id;
        let watcher = engine.connect(peer(), -1).unwrap().id;
        engine.server.monitors.push(watcher);
        let mut client = engine.clients.remove(id).unwrap();
        let registry = engine.registry;

        client.multi = Some(Box::<Transaction>::default());
        let mut out = BytesMut::new();
        let line = args(&[b"nosuch"]);
        let refused = resolve(registry, &line).err().unwrap();
        assert!(refused.command().is_none());
        let error = refused.error(&line);
        refuse(
            &mut engine.parts(),
            &mut client,
            None,
            error,
            &line,
            &mut out,
        );
        assert!(client.multi.as_ref().unwrap().aborted);
        assert!(out.starts_with(b"-ERR unknown command 'nosuch'"));

        let exec = registry.by_name(b"exec").unwrap();
        let mut out = BytesMut::new();
        let line = args(&[b"exec"]);
        refuse(
            &mut engine.parts(),
            &mut client,
            Some(exec),
            Error::NoAuth,
            &line,
            &mut out,
        );
        assert_eq!(
            &out[..],
            b"-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n"
        );
        assert!(client.multi.is_none());
        assert_eq!(engine.server.command_stats[exec.id].rejected_calls, 1);
        assert_eq!(engine.server.error_stats.get("EXECABORT"), Some(&1));
        assert_eq!(engine.server.error_stats.get("ERR"), Some(&1));
        let monitor = engine.clients.get(watcher).unwrap();
        assert!(String::from_utf8_lossy(&monitor.pending).ends_with("\"exec\"\r\n"));
    }

    /// The verdict of `admit` for each asker: a client's write is run, queued inside MULTI and
    /// postponed under CLIENT PAUSE WRITE (a read is not); while a script is busy, only
    /// `allow-busy` commands run and the others get the running kind's BUSY text; a script's
    /// `redis.call` gets a script's texts and its read-only refusal.
    #[test]
    fn admit_gives_each_asker_its_own_order() {
        let mut engine = Engine::new(Config::default(), Clock::manual(), Logger::silent(), None);
        let id = engine.connect(peer(), -1).unwrap().id;
        let mut client = engine.clients.remove(id).unwrap();
        let mut out = BytesMut::new();
        let mut verdict = |engine: &mut Engine, client: &mut ClientState, line: &[&[u8]], asker| {
            let (args, now) = (args(line), engine.server.clock.now_us());
            match admit(&mut engine.parts(), client, &args, asker, now, &mut out) {
                Admission::Run(c) => format!("run {}", c.full_name),
                Admission::Queue(c, _) => format!("queue {}", c.full_name),
                Admission::Postpone(c) => format!("postpone {}", c.full_name),
                Admission::Refuse(_, error) => format!("refuse {error}"),
            }
        };
        let fresh = Asker::Client { fresh: true };
        assert_eq!(
            verdict(&mut engine, &mut client, &[b"set", b"k", b"v"], fresh),
            "run set"
        );
        engine.server.pause = Some(crate::model::state::Pause {
            until_ms: i64::MAX,
            writes_only: true,
        });
        let set: &[&[u8]] = &[b"set", b"k", b"v"];
        assert_eq!(
            verdict(&mut engine, &mut client, set, fresh),
            "postpone set"
        );
        assert_eq!(
            verdict(&mut engine, &mut client, &[b"get", b"k"], fresh),
            "run get"
        );
        let rerun = Asker::Client { fresh: false };
        assert_eq!(verdict(&mut engine, &mut client, set, rerun), "run set");
        engine.server.pause = None;
        client.multi = Some(Box::<Transaction>::default());
        assert_eq!(verdict(&mut engine, &mut client, set, fresh), "queue set");
        assert_eq!(
            verdict(&mut engine, &mut client, &[b"exec"], fresh),
            "run exec"
        );
        client.multi = None;

        let busy = Asker::Busy(ScriptKind::Function);
        assert_eq!(
            verdict(&mut engine, &mut client, &[b"get", b"k"], busy),
            "refuse BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
        );
        let kill: &[&[u8]] = &[b"function", b"kill"];
        assert_eq!(
            verdict(&mut engine, &mut client, kill, busy),
            "run function|kill"
        );

        let read_only = Asker::Script(ScriptCall {
            read_only: true,
            allow_cross_slot: false,
            refuse_denyoom: false,
            dirty: false,
        });
        assert_eq!(
            verdict(&mut engine, &mut client, &[b"nosuch"], read_only),
            "refuse ERR Unknown Redis command called from script"
        );
        assert_eq!(
            verdict(&mut engine, &mut client, &[b"get"], read_only),
            "refuse ERR Wrong number of args calling Redis command from script"
        );
        assert_eq!(
            verdict(&mut engine, &mut client, set, read_only),
            "refuse ERR Write commands are not allowed from read-only scripts."
        );
        assert_eq!(
            verdict(&mut engine, &mut client, &[b"multi"], read_only),
            "refuse ERR This Redis command is not allowed from script"
        );
        assert_eq!(
            verdict(&mut engine, &mut client, &[b"get", b"k"], read_only),
            "run get"
        );
    }

    /// A pass that evicted is a LATENCY `eviction-cycle` sample when it reaches the threshold;
    /// the memory gate records it, and only once.
    #[test]
    fn eviction_cycles_are_latency_events() {
        let mut engine = Engine::new(Config::default(), Clock::manual(), Logger::silent(), None);
        engine.server.config.latency_monitor_threshold = 5;
        engine.server.eviction.last_cycle = Some(std::time::Duration::from_millis(4));
        record_eviction_latency(&mut engine.server, 0);
        assert!(
            engine.server.latency.get(b"eviction-cycle").is_none(),
            "under 5 ms"
        );
        engine.server.eviction.last_cycle = Some(std::time::Duration::from_millis(7));
        record_eviction_latency(&mut engine.server, 0);
        record_eviction_latency(&mut engine.server, 0);
        assert!(engine.server.latency.get(b"eviction-cycle").is_some());
        assert!(engine.server.eviction.last_cycle.is_none());
    }

    #[test]
    fn resolve_checks_name_subcommand_and_arity() {
        let registry = crate::commands::registry();
        assert!(resolve(registry, &args(&[b"GET", b"k"])).is_ok());
        let refused = resolve(registry, &args(&[b"get"])).err().unwrap();
        assert_eq!(
            refused.error(&args(&[b"get"])).to_string(),
            "ERR wrong number of arguments for 'get' command"
        );
        assert!(refused.command().is_some());
        let line = args(&[b"config", b"nosuch"]);
        let refused = resolve(registry, &line).err().unwrap();
        assert_eq!(
            refused.error(&line).to_string(),
            "ERR unknown subcommand 'nosuch'. Try CONFIG HELP."
        );
    }

    fn args(words: &[&[u8]]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w)).collect()
    }

    #[test]
    fn unknown_command_text() {
        assert_eq!(
            unknown_command_error(&args(&[b"foo", b"a", b"b"])).to_string(),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        assert_eq!(
            unknown_command_error(&args(&[b"foo"])).to_string(),
            "ERR unknown command 'foo', with args beginning with: "
        );
        assert_eq!(
            unknown_command_error(&args(&[b"f\0oo", b"a\0b"])).to_string(),
            "ERR unknown command 'f', with args beginning with: 'a' "
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Admission: the gates in Redis's order, once for every path

/// Who asks [`admit`] whether a command may run. Redis has two orders of checks: its
/// `processCommand`, for what clients send (also while a script is busy, when most of them
/// give way to the BUSY gate), and its `scriptCall`, for a script's `redis.call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker {
    /// A client's own request through the engine. `fresh`: sent now (or released by CLIENT
    /// PAUSE); false for a blocked command run again because a key woke it, which already
    /// passed the gates that judge the server's state.
    Client { fresh: bool },
    /// A request read by a script that runs too long: only `allow-busy` commands run, the
    /// others get the BUSY text of what is running.
    Busy(ScriptKind),
    /// A script's `redis.call`.
    Script(ScriptCall),
}

/// What a running script may do, as the script gates need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptCall {
    /// EVAL_RO / FCALL_RO, or a script declaring `no-writes`.
    pub read_only: bool,
    /// The script may touch keys of several slots (cluster mode).
    pub allow_cross_slot: bool,
    /// `denyoom` commands are refused: memory was over `maxmemory` when the script started,
    /// it does not declare `allow-oom`, and it has not written yet (Redis's `scriptVerifyOOM`).
    pub refuse_denyoom: bool,
    /// The script has written already (Redis's `SCRIPT_WRITE_DIRTY`).
    pub dirty: bool,
}

/// The verdict of [`admit`].
pub enum Admission {
    /// Run the command now.
    Run(&'static Command),
    /// Inside MULTI: queue it, with the flags EXEC will judge it by.
    Queue(&'static Command, Flags),
    /// CLIENT PAUSE holds it back until the pause ends.
    Postpone(&'static Command),
    /// Refuse it with this error, counted against the command when there is one (see
    /// [`refuse`]; a script's host counts its own way).
    Refuse(Option<&'static Command>, Error),
}

/// Whether a command line may run, and how: Redis's checks in Redis's order, each with its
/// error text, for the path that asks. `now_us` is the command's time (a script's frozen
/// time for `redis.call`). The memory gate may evict keys and, as Redis does right after
/// evicting, write their invalidations to the client's `out` before the command's reply.
/// Always inlined: each caller names its asker, so only its own order is left at the call site,
/// and a client's request pays for no call or returned verdict in memory (measured: +50
/// instructions per GET when it was a call).
#[inline(always)]
pub fn admit(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    args: &[Bytes],
    asker: Asker,
    now_us: i64,
    out: &mut BytesMut,
) -> Admission {
    let command = match resolve(parts.registry, args) {
        Ok(command) => command,
        Err(refused) => {
            let error = match asker {
                Asker::Script(_) => script_resolve_error(refused),
                _ => refused.error(args),
            };
            return Admission::Refuse(refused.command(), error);
        }
    };
    match asker {
        Asker::Client { fresh } => {
            process_command_order(parts, client, command, args, fresh, now_us, out)
        }
        Asker::Busy(kind) => busy_order(parts, client, command, args, kind),
        Asker::Script(call) => script_call_order(parts, client, (command, args), call, now_us),
    }
}

/// Redis's `processCommand` for a client's request, after the command is found. The gates that
/// judge the server's state (cluster, memory, disk, replicas, pause) are passed by a re-run
/// blocked command, as Redis serves those directly.
#[inline(always)]
fn process_command_order(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    command: &'static Command,
    args: &[Bytes],
    fresh: bool,
    now_us: i64,
    out: &mut BytesMut,
) -> Admission {
    let refuse = |error: Error| Admission::Refuse(Some(command), error);
    let flags = command.spec.flags;
    if flags.contains(Flags::PROTECTED) && !protected_allowed(parts.server, client, command) {
        return refuse(protected_error(command));
    }
    if needs_auth(&parts.server.users, client, command) {
        return refuse(Error::NoAuth);
    }
    if client.multi.is_some() && flags.contains(Flags::NO_MULTI) {
        return refuse(Error::msg("ERR Command not allowed inside a transaction"));
    }
    let context = acl_context(client);
    if let Some(denied) = acl_check(parts.server, client, (command, args), context) {
        let error = crate::kernel::acl_rules::toplevel_error(denied, command);
        return refuse(Error::owned(error));
    }
    if fresh && parts.server.cluster.enabled {
        let now_ms = now_us.div_euclid(1000);
        if let Err((command, error)) = route::client_gate(parts, client, command, args, now_ms) {
            return Admission::Refuse(command, error);
        }
    }
    if let Some(error) = server_state_gates(parts, client, command, args, fresh, out) {
        return refuse(error);
    }
    if let Some(error) = connection_state_gates(parts.server, client, command, args) {
        return refuse(error);
    }
    // Replicas (and so MONITOR clients) are never paused; a blocked command already passed.
    if fresh && !client.monitor && parts.server.pause.is_some() {
        let flags = effective_flags(parts.server, command, args);
        if is_paused_for(parts.server, flags, command, client) {
            return Admission::Postpone(command);
        }
    }
    // Inside MULTI, a command that passed the gates waits for EXEC.
    if client.multi.is_some() && !is_transaction_control(&command.full_name) {
        return Admission::Queue(command, effective_flags(parts.server, command, args));
    }
    Admission::Run(command)
}

/// The gates of `processCommand` that judge the server's state, in Redis's order: memory (after
/// an eviction pass), loading, a failed save, too few replicas, a read-only or stale replica.
/// Each costs one branch while its condition is off.
#[inline(always)]
fn server_state_gates(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    command: &'static Command,
    args: &[Bytes],
    fresh: bool,
    out: &mut BytesMut,
) -> Option<Error> {
    let server = &*parts.server;
    if fresh && server.config.maxmemory != 0 && memory_gate(parts, client, command, args, out) {
        return Some(Error::msg(OOM_ERROR));
    }
    let server = &*parts.server;
    // While the dataset loads only the commands flagged `loading` run.
    if server.persistence.loading && !command.spec.flags.contains(Flags::LOADING) {
        return Some(Error::msg(LOADING_ERROR));
    }
    // While a replica takes in the history it already had, the old data is served; only
    // what would see or disturb the exchange waits.
    if server.persistence.async_loading && command.spec.flags.contains(Flags::NO_ASYNC_LOADING) {
        return Some(Error::msg(LOADING_ERROR));
    }
    if !fresh {
        return None;
    }
    if !server.persistence.last_bgsave_ok || server.aof.status != AofStatus::Off {
        let refused = disk_error(server).filter(|_| {
            refuses_for_disk_error(client, command, effective_flags(server, command, args))
        });
        if let Some(error) = refused {
            if !client.must_obey() {
                return Some(error);
            }
            obey_despite_disk_error(parts.server, command);
        }
    }
    let server = &*parts.server;
    if server.config.min_replicas_to_write != 0
        && refuses_for_replicas(
            server,
            client,
            command,
            effective_flags(server, command, args),
        )
    {
        return Some(Error::msg(NOREPLICAS_ERROR));
    }
    // A read-only replica takes writes only from its primary's link.
    if server.repl.primary.is_some() && !client.master {
        if read_only_replica(server)
            && command.full_name != "ping"
            && writes(client, command, effective_flags(server, command, args))
        {
            return Some(Error::msg(READONLY_ERROR));
        }
        if refuses_stale(
            server,
            client,
            command,
            effective_flags(server, command, args),
        ) {
            return Some(Error::msg(MASTERDOWN_ERROR));
        }
    }
    None
}

/// The memory gate with what Redis does right after its eviction pass: keys just evicted are
/// invalidated before the command's reply. True if the command is refused.
fn memory_gate(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    command: &'static Command,
    args: &[Bytes],
    out: &mut BytesMut,
) -> bool {
    let flags = effective_flags(parts.server, command, args);
    // Clients `maxmemory-clients` evicted (before this command, as Redis's `processCommand`
    // evicts clients before keys) give their output back only once their connections run.
    // Nor does the replicas' share of the replication buffer count (Redis's
    // `freeMemoryGetNotCountedMemory`).
    parts.server.eviction.not_counted = parts.server.client_memory.closing_bytes()
        + parts.server.repl.not_counted_for_eviction(parts.clients);
    let refused = refuses_for_memory(parts.server, parts.ks, client, command, flags);
    let now_us = parts.server.clock.now_us();
    crate::kernel::invalidation::before_command(parts, client, command, out, now_us);
    refused
}

/// The gates of `processCommand` that judge the connection: a MONITOR client may not touch the
/// keyspace (Redis treats it as a replica), and a RESP2 connection in subscribe mode may send
/// only the commands that keep pushed messages apart from replies.
#[inline(always)]
fn connection_state_gates(
    server: &ServerState,
    client: &ClientState,
    command: &Command,
    args: &[Bytes],
) -> Option<Error> {
    // (The flags a script declares are looked up only for these rare clients.)
    if (client.monitor || client.replica) && {
        let flags = effective_flags(server, command, args);
        flags.contains(Flags::READONLY)
            || flags.contains(Flags::WRITE)
            || flags.contains(Flags::MAY_REPLICATE)
    } {
        return Some(Error::msg("ERR Replica can't interact with the keyspace"));
    }
    if client.resp == Version::Resp2
        && client.subs.total() > 0
        && !matches!(
            command.full_name.as_str(),
            "subscribe"
                | "unsubscribe"
                | "psubscribe"
                | "punsubscribe"
                | "ssubscribe"
                | "sunsubscribe"
                | "ping"
                | "quit"
                | "reset"
        )
    {
        return Some(subscribe_context_error(command));
    }
    None
}

/// Redis's refusal of a command a RESP2 subscriber may not send.
#[cold]
fn subscribe_context_error(command: &Command) -> Error {
    Error::owned(format!(
        "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        command.full_name
    ))
}

/// `processCommand` while a script runs too long: authentication, ACL (SCRIPT KILL needs the
/// right to run it too), loading, then only commands flagged `allow-busy`.
fn busy_order(
    parts: &mut Parts<'_>,
    client: &ClientState,
    command: &'static Command,
    args: &[Bytes],
    kind: ScriptKind,
) -> Admission {
    let refuse = |error: Error| Admission::Refuse(Some(command), error);
    if needs_auth(&parts.server.users, client, command) {
        return refuse(Error::NoAuth);
    }
    let context = acl_context(client);
    if let Some(denied) = acl_check(parts.server, client, (command, args), context) {
        let error = crate::kernel::acl_rules::toplevel_error(denied, command);
        return refuse(Error::owned(error));
    }
    // A script replayed from a loading AOF: Redis's loading gate comes before its busy one.
    if parts.server.persistence.loading && !command.spec.flags.contains(Flags::LOADING) {
        return refuse(Error::msg(LOADING_ERROR));
    }
    if !command.spec.flags.contains(Flags::ALLOW_BUSY) {
        return refuse(busy_error(kind));
    }
    Admission::Run(command)
}

/// Redis's `scriptCall` gates after the command is found, with a script's own texts: `noscript`
/// commands (waived after DEBUG SET-DISABLE-DENY-SCRIPTS 1), ACL as the caller's user, writes
/// from a read-only script (PUBLISH too: it must stay runnable on a replica and during CLIENT
/// PAUSE WRITE), a failed save, a read-only replica, too few replicas, memory, cluster slots.
#[inline]
fn script_call_order(
    parts: &mut Parts<'_>,
    client: &ClientState,
    (command, args): (&'static Command, &[Bytes]),
    call: ScriptCall,
    now_us: i64,
) -> Admission {
    let refuse = |error: Error| Admission::Refuse(Some(command), error);
    let flags = command.spec.flags;
    if flags.contains(Flags::NOSCRIPT) && !parts.server.disable_deny_scripts {
        return refuse(Error::msg(
            "ERR This Redis command is not allowed from script",
        ));
    }
    // A script allowed on a stale replica runs there only commands flagged `stale`
    // (Redis's `scriptVerifyAllowStale`).
    let server = &*parts.server;
    if server.repl.link_down()
        && !server.config.replica_serve_stale_data
        && !flags.contains(Flags::STALE)
    {
        return refuse(Error::msg(
            "ERR Can not execute the command on a stale replica",
        ));
    }
    let lua = crate::model::acl_users::Context::Lua;
    if let Some(denied) = acl_check(parts.server, client, (command, args), lua) {
        let reason = crate::kernel::acl_rules::script_message(denied.reason);
        return refuse(Error::owned(format!(
            "ERR The user executing the script {reason}"
        )));
    }
    let write = flags.contains(Flags::WRITE);
    if call.read_only && (write || flags.contains(Flags::MAY_REPLICATE)) {
        return refuse(Error::msg(
            "ERR Write commands are not allowed from read-only scripts.",
        ));
    }
    let server = &*parts.server;
    // A script that has written already is not stopped halfway for the server's state (a disk
    // error, too few replicas): Redis's `SCRIPT_WRITE_DIRTY`.
    let checked_write = write && !call.dirty;
    if checked_write {
        if let Some(error) = disk_error(server) {
            return refuse(error);
        }
    }
    if checked_write && !client.must_obey() && read_only_replica(server) {
        return refuse(Error::msg(READONLY_ERROR));
    }
    if checked_write && !client.master && too_few_replicas(server) {
        return refuse(Error::msg(NOREPLICAS_ERROR));
    }
    if call.refuse_denyoom && flags.contains(Flags::DENYOOM) {
        return refuse(Error::msg(OOM_ERROR));
    }
    if server.cluster.enabled && client.id != crate::model::client::AOF_CLIENT_ID {
        let now_ms = now_us.div_euclid(1000);
        let allow = call.allow_cross_slot;
        if let Err(error) = route::script_gate(parts, client, (command, args), allow, now_ms) {
            return refuse(error);
        }
    }
    Admission::Run(command)
}

/// A script's texts for the first gates, which name no command.
fn script_resolve_error(refused: Refused) -> Error {
    match refused {
        Refused::WrongArity(_) => {
            Error::msg("ERR Wrong number of args calling Redis command from script")
        }
        Refused::UnknownCommand | Refused::UnknownSubcommand(_) => {
            Error::msg("ERR Unknown Redis command called from script")
        }
    }
}

/// The BUSY reply while a script or function runs too long, naming the KILL that stops it.
pub fn busy_error(kind: ScriptKind) -> Error {
    match kind {
        ScriptKind::Eval => Error::msg(
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        ),
        ScriptKind::Function => Error::msg(
            "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.",
        ),
    }
}

/// True if a protected command (DEBUG, MODULE's subcommands) may run for this client: DEBUG
/// answers to `enable-debug-command`; MODULE never runs (embedis cannot load a module).
fn protected_allowed(server: &ServerState, client: &ClientState, command: &Command) -> bool {
    if command.full_name.starts_with("module") {
        return false;
    }
    match server.config.enable_debug_command {
        Access::Yes => true,
        Access::Local => client.peer.is_local(),
        Access::No => false,
    }
}

/// Redis's refusal of a protected command, naming the option that would allow it.
#[cold]
fn protected_error(command: &Command) -> Error {
    let (name, option) = if command.full_name.starts_with("module") {
        ("MODULE", "enable-module-command")
    } else {
        ("DEBUG", "enable-debug-command")
    };
    Error::owned(format!(
        "ERR {name} command not allowed. If the {option} option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
    ))
}

/// True if CLIENT PAUSE holds this command back (an EXEC counts as the writes it queued).
fn is_paused_for(
    server: &ServerState,
    flags: Flags,
    command: &Command,
    client: &ClientState,
) -> bool {
    let Some(pause) = server.pause else {
        return false;
    };
    // Under a pause of everything, Redis postpones every command, CLIENT PAUSE and
    // CLIENT UNPAUSE included: such a pause can only run out.
    if !pause.writes_only {
        return true;
    }
    flags.contains(Flags::WRITE)
        || flags.contains(Flags::MAY_REPLICATE)
        || (command.full_name == "exec" && client.multi.as_ref().is_some_and(|m| m.may_write()))
}

pub use crate::kernel::script_flags::effective_flags;
