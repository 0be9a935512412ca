//! Cluster routing: whether this node serves a request, and where it goes when not (Redis's
//! `getNodeByQuery` and what calls it). A client's request is checked by [`client_gate`]
//! (from the admission order, after ACL as in Redis), a script's `redis.call` by
//! [`script_gate`] (Redis's `scriptVerifyClusterState`); both ask [`cluster_route`], which
//! covers a command's keys, EXEC's queued commands and the shard channels of sharded pub/sub.
//! A server without cluster mode never comes here.

use bytes::Bytes;

use crate::base::error::Error;
use crate::base::flags::Flags;
use crate::kernel::call::Parts;
use crate::kernel::table::{Command, Registry};
use crate::model::client::ClientState;
use crate::model::keyspace::Keyspace;

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
    /// The cluster is down, reads are allowed (`cluster-allow-reads-when-down`), this is a write.
    DownReadOnly,
}

/// What a down cluster still serves: reads (`cluster-allow-reads-when-down`) and sharded
/// pub/sub (`cluster-allow-pubsubshard-when-down`).
#[derive(Debug, Clone, Copy)]
pub struct WhenDown {
    pub reads: bool,
    pub pubsubshard: bool,
}

impl WhenDown {
    pub fn of(config: &crate::base::config::ClusterConfig) -> WhenDown {
        WhenDown {
            reads: config.allow_reads_when_down,
            pubsubshard: config.allow_pubsubshard_when_down,
        }
    }
}

impl Redirect {
    /// The error a client gets.
    pub fn error(&self, server: &crate::model::state::ServerState) -> Error {
        let preferred = &server.config.cluster.preferred_endpoint_type;
        let endpoint = |node: u32| {
            server
                .cluster
                .node(node)
                .map(|n| format!("{}:{}", n.endpoint(preferred), n.port))
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
            Redirect::DownReadOnly => {
                Error::msg("CLUSTERDOWN The cluster is down and only accepts read commands")
            }
        }
    }

    /// The error a script's `redis.call` gets instead (Redis's `scriptVerifyClusterState`).
    pub fn script_error(&self) -> Error {
        match self {
            Redirect::Down => {
                Error::msg("ERR Script attempted to execute a command while the cluster is down")
            }
            Redirect::DownReadOnly => Error::msg(
                "ERR Script attempted to execute a write command while the cluster is down and readonly",
            ),
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
    server: &crate::model::state::ServerState,
    ks: &Keyspace,
    client: &ClientState,
    (command, args): (&Command, &[Bytes]),
    asking: bool,
    now_ms: i64,
) -> Result<Option<u16>, Redirect> {
    use crate::model::cluster_view::{key_slot, Role, MYSELF, NO_NODE};
    let cluster = &server.cluster;
    let when_down = WhenDown::of(&server.config.cluster);
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
    if !cluster.state_ok() {
        let write = writes || command.spec.flags.contains(Flags::WRITE);
        if sharded {
            if !when_down.pubsubshard {
                return Err(Redirect::Down);
            }
        } else if !when_down.reads {
            return Err(Redirect::Down);
        } else if write {
            return Err(Redirect::DownReadOnly);
        }
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
    // A declared script writes unless it says `no-writes` (Redis's getCommandFlags).
    let write = writes
        || crate::kernel::script_flags::effective_flags(server, command, args)
            .contains(Flags::WRITE);
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

/// The cluster gate of a client's request, after ACL as in Redis: `Err` with the redirection to
/// answer. ASKING covers only the next command (or the transaction it opens). A redirected EXEC
/// drops its transaction here and answers the redirection itself, not EXECABORT: the caller
/// refuses it without a command. The AOF's replay and the primary's stream always pass (Redis's
/// `mustObeyClient`).
pub fn client_gate(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    command: &'static Command,
    args: &[Bytes],
    now_ms: i64,
) -> Result<(), (Option<&'static Command>, Error)> {
    let asking = client.asking;
    let exec = command.full_name == "exec";
    if command.full_name != "asking" && (client.multi.is_none() || exec) {
        client.asking = false;
    }
    let cluster = &mut parts.server.cluster;
    cluster.current_slot = None;
    cluster.current_asking = asking;
    if !cluster_gate_applies(command)
        || client.id == crate::model::client::AOF_CLIENT_ID
        || client.master
    {
        return Ok(());
    }
    // The common case without the general router: one key at a fixed place, in a slot this
    // node serves, nothing migrating, the cluster whole (what `cluster_route` answers first,
    // at the price of a call per request).
    if cluster.migrating.is_empty() && cluster.importing.is_empty() && cluster.state_ok() {
        if let Some(at) = single_key_position(command, args) {
            let slot = crate::model::cluster_view::key_slot(&args[at]);
            if cluster.owner(slot) == crate::model::cluster_view::MYSELF {
                cluster.current_slot = Some(slot);
                return Ok(());
            }
        }
    }
    let route = cluster_route(
        parts.registry,
        parts.server,
        parts.ks,
        client,
        (command, args),
        asking,
        now_ms,
    );
    match route {
        Ok(slot) => {
            parts.server.cluster.current_slot = slot;
            Ok(())
        }
        Err(redirect) => {
            let error = redirect.error(parts.server);
            if !exec {
                return Err((Some(command), error));
            }
            client.multi = None;
            parts.ks.watches.unwatch_all(client.id);
            parts.server.command_stats[command.id].rejected_calls += 1;
            Err((None, error))
        }
    }
}

/// Redis's `scriptVerifyClusterState`: a script's command must touch keys this node serves,
/// all in the slot of the script's first keys (declared or touched) unless the script may
/// cross slots.
pub fn script_gate(
    parts: &mut Parts<'_>,
    client: &ClientState,
    (command, args): (&Command, &[Bytes]),
    allow_cross_slot: bool,
    now_ms: i64,
) -> Result<(), Error> {
    if !cluster_gate_applies(command) {
        return Ok(());
    }
    let server = &mut *parts.server;
    let asking = server.cluster.current_asking;
    let route = cluster_route(
        parts.registry,
        server,
        parts.ks,
        client,
        (command, args),
        asking,
        now_ms,
    );
    match route {
        Err(redirect) => Err(redirect.script_error()),
        Ok(Some(_)) if allow_cross_slot => Ok(()),
        Ok(Some(slot)) => match server.cluster.current_slot {
            None => {
                server.cluster.current_slot = Some(slot);
                Ok(())
            }
            Some(current) if current != slot => Err(Error::msg(
                "ERR Script attempted to access keys that do not hash to the same slot",
            )),
            Some(_) => Ok(()),
        },
        Ok(None) => Ok(()),
    }
}
