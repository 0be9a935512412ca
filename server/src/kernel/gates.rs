//! The gates: Redis's checks that decide whether a connection is accepted and whether a request
//! may run, before any handler sees it — written once, for every path a command can come by.
//!
//! Three paths run commands: a client's request through the engine (`crate::engine`), a request
//! answered while a script is busy (`crate::services::busy`), and a script's `redis.call`
//! (`crate::services::script_host`). Each applies its own list of gates in Redis's order, but they share
//! the gates themselves: [`resolve`] (unknown command or subcommand, arity — the texts differ for
//! scripts, which map [`Refused`] to their own), [`needs_auth`], and one [`refuse`] that every
//! refusal goes through (an error reply counted as Redis counts it: `rejected_calls`,
//! errorstats; a queued transaction doomed; a refused EXEC answering EXECABORT and still shown to
//! MONITOR). The direct path of the embedding process (`crate::io::direct`) uses [`resolve`] too.
//! [`connect_client`] is the gate of a new connection (maxclients, protected mode).
//! [`refuses_for_memory`] is Redis's `maxmemory` gate: before the command, eviction runs
//! (`crate::model::evict`), and only if it could not bring memory under the limit are commands that may
//! grow memory refused.

use bytes::{Bytes, BytesMut};
use embedis_protocol::Writer;
use std::sync::Arc;

use crate::base::error::Error;
use crate::base::flags::Flags;
use crate::kernel::acl_rules::Denied;
use crate::kernel::call::{feed_monitors, Parts};
use crate::kernel::table::{Command, Lookup, Registry};
use crate::model::acl_users::Users;
use crate::model::client::{ClientHandle, ClientState, Peer};
use crate::model::keyspace::Keyspace;
use crate::model::multi::exec_abort_error;
use crate::model::state::ServerState;

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
        client_info: client.info_line(now_ms, false),
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

/// True if writes are refused with `-MISCONF` (Redis's `writeCommandsDeniedByDiskError`): the
/// last background save failed, `stop-writes-on-bgsave-error` is on and save points are set.
#[inline]
pub fn disk_error(server: &crate::model::state::ServerState) -> bool {
    !server.persistence.last_bgsave_ok
        && server.config.stop_writes_on_bgsave_error
        && !server.config.save_points.is_empty()
}

/// The disk-error gate of `processCommand` (just before the replicas gate): a write (by its
/// flags or its script's), an EXEC whose queue holds one, or PING is refused while
/// [`disk_error`] holds.
pub fn refuses_for_disk_error(client: &ClientState, command: &Command, flags: Flags) -> bool {
    flags.contains(Flags::WRITE)
        || command.full_name == "ping"
        || (command.full_name == "exec"
            && client
                .multi
                .as_ref()
                .is_some_and(|m| m.flags.contains(Flags::WRITE)))
}

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
/// `replica-serve-stale-data no`, serves only commands flagged `stale` (INFO, REPLICAOF, …);
/// an EXEC is judged by its queue (any command without the flag refuses it).
pub fn refuses_stale(
    server: &crate::model::state::ServerState,
    client: &ClientState,
    command: &Command,
) -> bool {
    if server.config.replica_serve_stale_data || !server.repl.link_down() || client.master {
        return false;
    }
    if command.full_name == "exec" {
        return client.multi.as_ref().is_some_and(|m| m.not_stale);
    }
    !command.spec.flags.contains(Flags::STALE)
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
    flags.contains(Flags::WRITE)
        || (command.full_name == "exec"
            && client
                .multi
                .as_ref()
                .is_some_and(|m| m.flags.contains(Flags::WRITE)))
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

/// Where cluster mode sends a request (Redis's `getNodeByQuery` outcome), when not here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirect {
    /// The slot is served by another node.
    Moved {
        slot: u16,
        node: u32,
    },
    /// The slot is migrating and the keys are not here: ask the importing node.
    Ask {
        slot: u16,
        node: u32,
    },
    CrossSlot,
    /// A multi-key request on a slot in migration, with only some of the keys here.
    TryAgain,
    /// The key's slot has no node.
    Unbound,
    /// The cluster is down (a slot somewhere has no node).
    Down,
}

impl Redirect {
    /// The error a client gets.
    pub fn error(&self, cluster: &crate::model::cluster_view::Cluster) -> Error {
        let endpoint = |node: u32| {
            cluster
                .node(node)
                .map(|n| format!("{}:{}", n.ip, n.port))
                .unwrap_or_default()
        };
        match *self {
            Redirect::Moved { slot, node } => {
                Error::owned(format!("MOVED {slot} {}", endpoint(node)))
            }
            Redirect::Ask { slot, node } => Error::owned(format!("ASK {slot} {}", endpoint(node))),
            Redirect::CrossSlot => {
                Error::msg("CROSSSLOT Keys in request don't hash to the same slot")
            }
            Redirect::TryAgain => {
                Error::msg("TRYAGAIN Multiple keys request during rehashing of slot")
            }
            Redirect::Unbound => Error::msg("CLUSTERDOWN Hash slot not served"),
            Redirect::Down => Error::msg("CLUSTERDOWN The cluster is down"),
        }
    }

    /// The error a script's `redis.call` gets instead (Redis's `scriptVerifyClusterState`).
    pub fn script_error(&self) -> Error {
        match self {
            Redirect::Down => {
                Error::msg("ERR Script attempted to execute a command while the cluster is down")
            }
            _ => Error::msg("ERR Script attempted to access a non local key in a cluster node"),
        }
    }
}

/// True if the cluster gate looks at this command at all: it has keys (or may have: movable
/// keys), or it is EXEC. Everything else runs on any node.
#[inline]
pub fn cluster_gate_applies(command: &Command) -> bool {
    command.flags.contains(Flags::MOVABLE_KEYS)
        || !command.spec.keys.is_empty()
        || command.full_name == "exec"
}

/// The positions of the names a cluster node routes `args` by: its keys, and the shard channels
/// of SPUBLISH / SSUBSCRIBE / SUNSUBSCRIBE (key specs flagged `not_key`, which Redis 7.0's
/// legacy key range still covers).
pub fn routed_positions(command: &Command, args: &[Bytes]) -> Vec<usize> {
    if let Some(find) = command.spec.keys_fn {
        return find(args).into_iter().map(|(at, _)| at).collect();
    }
    let mut positions = Vec::new();
    for spec in command.spec.keys {
        positions.extend(spec.key_positions(args));
    }
    positions
}

/// The position of the one key of a command whose only key spec names a single argument at a
/// fixed index (GET, SET, INCR…), if it is there.
#[inline]
pub fn single_key_position(command: &Command, args: &[Bytes]) -> Option<usize> {
    use crate::kernel::table::keys::{Begin, Find};
    if command.spec.keys_fn.is_some() {
        return None;
    }
    match command.spec.keys {
        [spec] => match (spec.begin, spec.find) {
            (Begin::Index(at), Find::Range { last_key: 0, .. }) if (at as usize) < args.len() => {
                Some(at as usize)
            }
            _ => None,
        },
        _ => None,
    }
}

/// Redis's `getNodeByQuery`: whether this node serves a request — the command and its
/// arguments, or for EXEC every command queued in `client`'s transaction — and if not, where it
/// goes. `Ok` holds the slot of its keys (`None`: no keys). `asking`: the client sent ASKING
/// (or the command is flagged `asking`); `readonly`: the client sent READONLY.
pub fn cluster_route(
    registry: &Registry,
    cluster: &crate::model::cluster_view::Cluster,
    ks: &Keyspace,
    client: &ClientState,
    (command, args): (&Command, &[Bytes]),
    asking: bool,
    now_ms: i64,
) -> Result<Option<u16>, Redirect> {
    use crate::model::cluster_view::{key_slot, Role, MYSELF, NO_NODE};
    // The common case first: one key, no slot in migration, the cluster whole, a primary.
    if cluster.migrating.is_empty() && cluster.importing.is_empty() && cluster.state_ok() {
        if let Some(at) = single_key_position(command, args) {
            let slot = key_slot(&args[at]);
            let owner = cluster.owner(slot);
            if owner == MYSELF {
                return Ok(Some(slot));
            }
            if owner != NO_NODE && !client.cluster_readonly && !command.full_name.starts_with('s') {
                return Err(Redirect::Moved { slot, node: owner });
            }
        }
    }
    let single = [(command, args)];
    let queued: Vec<(&Command, &[Bytes])>;
    let requests: &[(&Command, &[Bytes])] = if command.full_name == "exec" {
        let Some(transaction) = client.multi.as_ref() else {
            return Ok(None);
        };
        queued = transaction
            .commands
            .iter()
            .map(|(id, args)| (&registry.commands[*id], args.as_slice()))
            .collect();
        &queued
    } else {
        &single
    };
    let sharded = matches!(
        command.full_name.as_str(),
        "ssubscribe" | "sunsubscribe" | "spublish"
    );
    let mut first: Option<&[u8]> = None;
    let (mut slot, mut owner) = (0u16, NO_NODE);
    let (mut migrating, mut importing, mut multiple) = (false, false, false);
    let (mut missing, mut existing) = (0usize, 0usize);
    let mut writes = false;
    for (queued_command, queued_args) in requests {
        writes |= queued_command.spec.flags.contains(Flags::WRITE);
        // Most commands name one key at a fixed place: found without building a list.
        let one: [usize; 1];
        let many: Vec<usize>;
        let positions: &[usize] = match single_key_position(queued_command, queued_args) {
            Some(at) => {
                one = [at];
                &one
            }
            None => {
                many = routed_positions(queued_command, queued_args);
                &many
            }
        };
        for &at in positions {
            let key: &[u8] = &queued_args[at];
            match first {
                None => {
                    first = Some(key);
                    slot = key_slot(key);
                    owner = cluster.owner(slot);
                    if owner == NO_NODE {
                        return Err(Redirect::Unbound);
                    }
                    if owner == MYSELF && cluster.migrating.contains_key(&slot) {
                        migrating = true;
                    } else if cluster.importing.contains_key(&slot) {
                        importing = true;
                    }
                }
                Some(first_key) if first_key != key => {
                    if key_slot(key) != slot {
                        return Err(Redirect::CrossSlot);
                    }
                    multiple = true;
                }
                Some(_) => {}
            }
            if (migrating || importing) && !sharded {
                let db = &ks.dbs[0];
                if db.main.contains_key(key) && !db.is_expired(key, now_ms) {
                    existing += 1;
                } else {
                    missing += 1;
                }
            }
        }
    }
    if first.is_none() {
        return Ok(None);
    }
    // Sharded pub/sub is served while the cluster is down (`cluster-allow-pubsubshard-when-down`
    // defaults to yes); reads are not (`cluster-allow-reads-when-down` defaults to no).
    if !sharded && !cluster.state_ok() {
        return Err(Redirect::Down);
    }
    if (migrating || importing) && command.full_name == "migrate" {
        return Ok(Some(slot));
    }
    if migrating && missing > 0 {
        if existing > 0 {
            return Err(Redirect::TryAgain);
        }
        let node = cluster.migrating[&slot];
        return Err(Redirect::Ask { slot, node });
    }
    if importing && (asking || command.spec.flags.contains(Flags::ASKING)) {
        if multiple && missing > 0 {
            return Err(Redirect::TryAgain);
        }
        return Ok(Some(slot));
    }
    let write = writes || command.spec.flags.contains(Flags::WRITE);
    if (client.cluster_readonly || sharded) && !write {
        if let Role::Replica(primary) = &cluster.myself().role {
            if cluster.node(owner).is_some_and(|n| &n.id == primary) {
                return Ok(Some(slot));
            }
        }
    }
    if owner != MYSELF {
        return Err(Redirect::Moved { slot, node: owner });
    }
    Ok(Some(slot))
}
