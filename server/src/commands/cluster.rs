//! CLUSTER and the per-connection cluster commands (ASKING, READONLY, READWRITE): reading and
//! changing this node's view of the cluster ([`crate::model::cluster_view`]), with Redis 7.0's replies and
//! error texts.
//!
//! Every CLUSTER subcommand, HELP included, answers "This instance has cluster support disabled"
//! on a server started without `cluster-enabled yes`, as Redis does. A change another node must
//! learn (slots, epochs, a new node) is in the view the cluster bus (`crate::io::cluster_bus`) sends
//! every node at its next period (100 ms).
//!
//! A fresh node serves every slot by default ([`crate::model::cluster_view::Cluster::implicit`]); CLUSTER
//! SLOTS, SHARDS and INFO show it, but CLUSTER NODES lists no slots for it, because cluster
//! managers read NODES to tell an empty node and build their ADDSLOTS from what it lists
//! (`redis-cli --cluster create` would otherwise give every node the same slots).
//!
//! COUNTKEYSINSLOT and GETKEYSINSLOT walk database 0 (a cluster node has no other) instead of
//! keeping Redis's per-slot key index: the index would cost every write of a cluster node, these
//! two commands are rare (resharding, once per slot moved) and a walk is exact.

use bytes::Bytes;
use embedis_protocol::number::parse_i64;
use std::fmt::Write as _;

use crate::base::error::{CmdResult, Error};
use crate::commands::common::write_help;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::cluster_view::{key_slot, Cluster, Node, Role, MYSELF, NO_NODE, SLOTS};
use crate::model::state::ServerState;

const DISABLED: &str = "ERR This instance has cluster support disabled";

/// The gate of every handler here: cluster mode must be on.
fn enabled(ctx: &mut Ctx<'_>) -> CmdResult {
    if !ctx.server.cluster.enabled {
        return Err(Error::msg(DISABLED));
    }
    refresh_myself(ctx.server);
    Ok(())
}

/// The port clients reach this node on and its bus port, as announced.
pub fn announced_ports(server: &ServerState) -> (u16, u16) {
    let config = &server.config.cluster;
    let tls = &server.config.tls;
    // Under tls-cluster, clients are sent to the TLS port, as Redis announces it then.
    let port = if tls.cluster && tls.port != 0 {
        if tls.cluster_announce_tls_port != 0 {
            tls.cluster_announce_tls_port
        } else {
            tls.port
        }
    } else if config.announce_port != 0 {
        config.announce_port
    } else {
        server.tcp_port
    };
    let bus = if config.announce_bus_port != 0 {
        config.announce_bus_port
    } else {
        bus_port(server)
    };
    (port, bus)
}

/// The port this node's bus listens on: `cluster-port`, or the client port + 10000.
pub fn bus_port(server: &ServerState) -> u16 {
    match server.config.cluster.port {
        // A TLS-only node (`port 0`) counts from its TLS port, as Redis does.
        0 if server.tcp_port == 0 => server.config.tls.port.wrapping_add(10000),
        0 => server.tcp_port.wrapping_add(10000),
        port => port,
    }
}

/// Brings this node's own entry up to date with the configuration (ports bound after start,
/// CONFIG SET cluster-announce-*).
pub fn refresh_myself(server: &mut ServerState) {
    let (port, bus) = announced_ports(server);
    let announce_ip = server.config.cluster.announce_ip.clone();
    let myself = server.cluster.myself_mut();
    myself.port = port;
    myself.bus_port = bus;
    if !announce_ip.is_empty() {
        myself.ip = announce_ip;
    }
}

const HELP: &[&str] = &[
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Makes this node serve the given slots.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Makes this node serve every slot of the given ranges.",
    "BUMPEPOCH",
    "    Gives this node a new config epoch, higher than any other.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Returns how many failure reports <node-id> has (always 0: no failure detection).",
    "COUNTKEYSINSLOT <slot>",
    "    Returns how many keys of <slot> this node holds.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Makes the given slots unserved.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Makes every slot of the given ranges unserved.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Makes this replica take its primary's place.",
    "FORGET <node-id>",
    "    Removes <node-id> from this node's view of the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Returns up to <count> keys of <slot> held by this node.",
    "FLUSHSLOTS",
    "    Makes every slot this node serves unserved.",
    "INFO",
    "    Returns the state of the cluster as this node sees it.",
    "KEYSLOT <key>",
    "    Returns the hash slot of <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Joins the cluster of the node at <ip>:<port>.",
    "MYID",
    "    Returns this node's ID.",
    "NODES",
    "    Returns the cluster's nodes as this node sees them, one a line:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Makes this node a replica of <node-id>.",
    "RESET [HARD|SOFT]",
    "    Makes this node forget the cluster (default: soft; hard also takes a new ID).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Sets the config epoch of a node that knows no other node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Marks <slot> as being imported, migrated or neither, or binds it to a node.",
    "REPLICAS <node-id>",
    "    Lists the replicas of <node-id>.",
    "SAVECONFIG",
    "    Saves the cluster configuration (embedis keeps it in memory).",
    "SLOTS",
    "    Returns the slot ranges, each with its primary and replicas (address, port, ID).",
    "SHARDS",
    "    Returns the shards: their slot ranges and their nodes.",
    "LINKS",
    "    Returns this node's bus links to other nodes, one map each.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    write_help(ctx, HELP);
    Ok(())
}

fn myid(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let id = ctx.server.cluster.myself().id.clone();
    ctx.out.bulk(id.as_bytes());
    Ok(())
}

fn keyslot(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let slot = key_slot(ctx.arg(2));
    ctx.out.integer(slot as i64);
    Ok(())
}

/// A slot argument as Redis's `getSlotOrReply` reads it.
fn slot_arg(arg: &[u8]) -> CmdResult<u16> {
    parse_i64(arg)
        .filter(|slot| (0..SLOTS as i64).contains(slot))
        .map(|slot| slot as u16)
        .ok_or(Error::msg("ERR Invalid or out of range slot"))
}

/// The keys of database 0 that hash to `slot` (and have not expired), up to `limit`.
fn keys_in_slot(ctx: &Ctx<'_>, slot: u16, limit: usize) -> Vec<Bytes> {
    let db = &ctx.ks.dbs[0];
    let mut keys = Vec::new();
    if limit == 0 {
        return keys;
    }
    for (key, _) in db.main.iter() {
        let key: &[u8] = key.as_ref();
        if key_slot(key) == slot && !db.is_expired(key, ctx.now_ms) {
            keys.push(Bytes::copy_from_slice(key));
            if keys.len() >= limit {
                break;
            }
        }
    }
    keys
}

/// True if database 0 holds a key of `slot`.
pub fn slot_has_keys(ks: &crate::model::keyspace::Keyspace, slot: u16) -> bool {
    ks.dbs[0]
        .main
        .iter()
        .any(|(key, _)| key_slot(key.as_ref()) == slot)
}

fn countkeysinslot(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let slot =
        parse_i64(ctx.arg(2)).ok_or(Error::msg("ERR value is not an integer or out of range"))?;
    if !(0..SLOTS as i64).contains(&slot) {
        return Err(Error::msg("ERR Invalid slot"));
    }
    let count = keys_in_slot(ctx, slot as u16, usize::MAX).len();
    ctx.out.integer(count as i64);
    Ok(())
}

fn getkeysinslot(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let not_int = || Error::msg("ERR value is not an integer or out of range");
    let slot = parse_i64(ctx.arg(2)).ok_or_else(not_int)?;
    let count = parse_i64(ctx.arg(3)).ok_or_else(not_int)?;
    if !(0..SLOTS as i64).contains(&slot) || count < 0 {
        return Err(Error::msg("ERR Invalid slot or number of keys"));
    }
    let keys = keys_in_slot(ctx, slot as u16, count as usize);
    ctx.out.array(keys.len());
    for key in keys {
        ctx.out.bulk(&key);
    }
    Ok(())
}

/// Redis's `checkSlotAssignmentsOrReply` for one range: adding needs unserved slots, deleting
/// served ones, and no slot may be named twice in one command.
fn check_range(cluster: &Cluster, seen: &mut [bool], del: bool, start: u16, end: u16) -> CmdResult {
    for slot in start..=end {
        let owner = cluster.owner(slot);
        if del && owner == NO_NODE {
            return Err(Error::owned(format!(
                "ERR Slot {slot} is already unassigned"
            )));
        }
        if !del && owner != NO_NODE {
            return Err(Error::owned(format!("ERR Slot {slot} is already busy")));
        }
        if std::mem::replace(&mut seen[slot as usize], true) {
            return Err(Error::owned(format!(
                "ERR Slot {slot} specified multiple times"
            )));
        }
    }
    Ok(())
}

/// Applies ADDSLOTS / DELSLOTS (and their ranges) once every slot passed the checks.
fn update_slots(cluster: &mut Cluster, seen: &[bool], del: bool) {
    for (slot, _) in seen.iter().enumerate().filter(|(_, &s)| s) {
        let slot = slot as u16;
        if del {
            cluster.set_owner(slot, NO_NODE);
        } else {
            // Serving the slot now, this node imports it no longer.
            cluster.importing.remove(&slot);
            cluster.set_owner(slot, MYSELF);
        }
    }
}

fn addslots(ctx: &mut Ctx<'_>) -> CmdResult {
    change_slots(ctx, false)
}

fn delslots(ctx: &mut Ctx<'_>) -> CmdResult {
    change_slots(ctx, true)
}

fn change_slots(ctx: &mut Ctx<'_>, del: bool) -> CmdResult {
    let args = ctx.args;
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    cluster.end_implicit(!del);
    let slots: Vec<u16> = args[2..]
        .iter()
        .map(|a| slot_arg(a))
        .collect::<CmdResult<_>>()?;
    let mut seen = vec![false; SLOTS];
    for &slot in &slots {
        check_range(cluster, &mut seen, del, slot, slot)?;
    }
    update_slots(cluster, &seen, del);
    ctx.out.ok();
    Ok(())
}

fn addslotsrange(ctx: &mut Ctx<'_>) -> CmdResult {
    change_ranges(ctx, false)
}

fn delslotsrange(ctx: &mut Ctx<'_>) -> CmdResult {
    change_ranges(ctx, true)
}

fn change_ranges(ctx: &mut Ctx<'_>, del: bool) -> CmdResult {
    let args = ctx.args;
    let full_name = ctx.cmd.full_name.clone();
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    if args.len() % 2 == 1 {
        return Err(Error::WrongArity(full_name.into()));
    }
    cluster.end_implicit(!del);
    let mut seen = vec![false; SLOTS];
    for pair in args[2..].chunks(2) {
        let start = slot_arg(&pair[0])?;
        let end = slot_arg(&pair[1])?;
        if start > end {
            return Err(Error::owned(format!(
                "ERR start slot number {start} is greater than end slot number {end}"
            )));
        }
        check_range(cluster, &mut seen, del, start, end)?;
    }
    update_slots(cluster, &seen, del);
    ctx.out.ok();
    Ok(())
}

fn flushslots(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    if !ctx.ks.dbs[0].main.is_empty() {
        return Err(Error::msg(
            "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.",
        ));
    }
    let cluster = &mut ctx.server.cluster;
    cluster.end_implicit(false);
    for slot in 0..SLOTS as u16 {
        if cluster.owner(slot) == MYSELF {
            cluster.set_owner(slot, NO_NODE);
        }
    }
    ctx.out.ok();
    Ok(())
}

/// Redis's `addReplySubcommandSyntaxError`, naming the subcommand as the client wrote it.
fn subcommand_syntax_error(name: &[u8]) -> Error {
    Error::owned(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLUSTER HELP.",
        String::from_utf8_lossy(name)
    ))
}

fn unknown_node(id: &[u8]) -> Error {
    Error::owned(format!("ERR Unknown node {}", String::from_utf8_lossy(id)))
}

fn is_replica(node: &Node) -> bool {
    matches!(node.role, Role::Replica(_))
}

fn setslot(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    enabled(ctx)?;
    if is_replica(ctx.server.cluster.myself()) {
        return Err(Error::msg("ERR Please use SETSLOT only with masters."));
    }
    let slot = slot_arg(&args[2])?;
    ctx.server.cluster.end_implicit(false);
    let action = args[3].to_ascii_lowercase();
    let cluster = &ctx.server.cluster;
    let lookup = |id: &[u8], unknown: bool| -> CmdResult<u32> {
        let number = cluster.find(id).ok_or_else(|| {
            if unknown {
                unknown_node(id)
            } else {
                Error::owned(format!(
                    "ERR I don't know about node {}",
                    String::from_utf8_lossy(id)
                ))
            }
        })?;
        if cluster.node(number).is_some_and(is_replica) {
            return Err(Error::msg("ERR Target node is not a master"));
        }
        Ok(number)
    };
    match (action.as_slice(), args.len()) {
        (b"migrating", 5) => {
            if cluster.owner(slot) != MYSELF {
                return Err(Error::owned(format!(
                    "ERR I'm not the owner of hash slot {slot}"
                )));
            }
            let to = lookup(&args[4], false)?;
            ctx.server.cluster.migrating.insert(slot, to);
        }
        (b"importing", 5) => {
            if cluster.owner(slot) == MYSELF {
                return Err(Error::owned(format!(
                    "ERR I'm already the owner of hash slot {slot}"
                )));
            }
            let from = lookup(&args[4], false)?;
            ctx.server.cluster.importing.insert(slot, from);
        }
        (b"stable", 4) => {
            ctx.server.cluster.migrating.remove(&slot);
            ctx.server.cluster.importing.remove(&slot);
        }
        (b"node", 5) => {
            let to = lookup(&args[4], true)?;
            let was_mine = cluster.owner(slot) == MYSELF;
            let has_keys = slot_has_keys(ctx.ks, slot);
            if was_mine && to != MYSELF && has_keys {
                return Err(Error::owned(format!("ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot.")));
            }
            let cluster = &mut ctx.server.cluster;
            if !has_keys {
                cluster.migrating.remove(&slot);
            }
            cluster.set_owner(slot, to);
            if to == MYSELF && cluster.importing.remove(&slot).is_some() {
                // The slot moved by hand: a new epoch lets this node's claim win over the old
                // owner's wherever the bus carries both.
                bump_epoch(cluster);
            }
            // A primary left without slots becomes a replica of the node that took its last one
            // (Redis's replica migration, on by default).
            if was_mine && to != MYSELF && cluster.ranges_of(MYSELF).is_empty() {
                let id = cluster.node(to).map(|n| n.id.clone()).unwrap_or_default();
                cluster.myself_mut().role = Role::Replica(id);
                cluster.version += 1;
            }
        }
        _ => {
            return Err(Error::msg(
                "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP",
            ))
        }
    }
    ctx.server.cluster.version += 1;
    ctx.out.ok();
    Ok(())
}

/// Redis's `clusterBumpConfigEpochWithoutConsensus`: a new epoch unless this node's is already
/// the highest and not 0. True if it changed.
fn bump_epoch(cluster: &mut Cluster) -> bool {
    let max = cluster.max_epoch();
    let mine = cluster.myself().config_epoch;
    if mine == 0 || mine != max {
        cluster.current_epoch += 1;
        let epoch = cluster.current_epoch;
        cluster.myself_mut().config_epoch = epoch;
        cluster.version += 1;
        true
    } else {
        false
    }
}

fn bumpepoch(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    let bumped = bump_epoch(cluster);
    let line = format!(
        "{} {}",
        if bumped { "BUMPED" } else { "STILL" },
        cluster.myself().config_epoch
    );
    ctx.out.simple(line.as_bytes());
    Ok(())
}

fn set_config_epoch(ctx: &mut Ctx<'_>) -> CmdResult {
    let arg = ctx.arg(2);
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    let epoch = parse_i64(arg).ok_or(Error::msg("ERR value is not an integer or out of range"))?;
    if epoch < 0 {
        return Err(Error::owned(format!(
            "ERR Invalid config epoch specified: {epoch}"
        )));
    }
    if cluster.known().count() > 1 {
        return Err(Error::msg("ERR The user can assign a config epoch only when the node does not know any other node."));
    }
    if cluster.myself().config_epoch != 0 {
        return Err(Error::msg("ERR Node config epoch is already non-zero"));
    }
    cluster.myself_mut().config_epoch = epoch as u64;
    cluster.current_epoch = cluster.current_epoch.max(epoch as u64);
    cluster.version += 1;
    ctx.out.ok();
    Ok(())
}

fn meet(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    enabled(ctx)?;
    if args.len() > 5 {
        return Err(subcommand_syntax_error(&args[1]));
    }
    let text = |a: &Bytes| String::from_utf8_lossy(a).into_owned();
    let port = parse_i64(&args[3]).ok_or_else(|| {
        Error::owned(format!(
            "ERR Invalid TCP base port specified: {}",
            text(&args[3])
        ))
    })?;
    let bus = match args.get(4) {
        Some(arg) => parse_i64(arg).ok_or_else(|| {
            Error::owned(format!("ERR Invalid TCP bus port specified: {}", text(arg)))
        })?,
        None => port + 10000,
    };
    let ip: Option<std::net::IpAddr> = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|s| s.parse().ok());
    let valid = |p: i64| (0..=65535).contains(&p);
    let (Some(ip), true, true) = (ip, valid(port), valid(bus)) else {
        return Err(Error::owned(format!(
            "ERR Invalid node address specified: {}:{}",
            text(&args[2]),
            text(&args[3])
        )));
    };
    let ip = ip.to_string();
    let (port, bus) = (port as u16, bus as u16);
    // Joining a cluster, a fresh node stops serving every slot by default.
    ctx.server.cluster.end_implicit(true);
    // Already known or being met at that address: nothing to do (as Redis's handshake check).
    let known = ctx
        .server
        .cluster
        .known()
        .any(|(_, n)| n.ip == ip && n.port == port && n.bus_port == bus);
    if !known {
        let id = ctx.server.random_id();
        ctx.server.cluster.add(Node {
            id,
            ip,
            port,
            bus_port: bus,
            role: Role::Primary,
            config_epoch: 0,
            ping_sent: 0,
            pong_received: 0,
            connected: false,
            handshake: true,
        });
    }
    ctx.out.ok();
    Ok(())
}

fn forget(ctx: &mut Ctx<'_>) -> CmdResult {
    let id = ctx.arg(2);
    let now = ctx.now_ms;
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    let number = cluster
        .find(id)
        .filter(|&n| !cluster.node(n).is_some_and(|n| n.handshake))
        .ok_or_else(|| unknown_node(id))?;
    if number == MYSELF {
        return Err(Error::msg("ERR I tried hard but I can't forget myself..."));
    }
    if cluster.myself().role == Role::Replica(String::from_utf8_lossy(id).into_owned()) {
        return Err(Error::msg("ERR Can't forget my master!"));
    }
    cluster
        .forgotten
        .insert(String::from_utf8_lossy(id).into_owned(), now + 60_000);
    cluster.remove(number);
    ctx.out.ok();
    Ok(())
}

fn replicate(ctx: &mut Ctx<'_>) -> CmdResult {
    let id = ctx.arg(2);
    enabled(ctx)?;
    let db_empty = ctx.ks.dbs[0].main.is_empty();
    let cluster = &mut ctx.server.cluster;
    if cluster.find(id).is_some_and(|n| n != MYSELF) {
        cluster.end_implicit(true);
    }
    let number = cluster.find(id).ok_or_else(|| unknown_node(id))?;
    if number == MYSELF {
        return Err(Error::msg("ERR Can't replicate myself"));
    }
    let node = cluster.node(number).expect("found");
    if is_replica(node) {
        return Err(Error::msg(
            "ERR I can only replicate a master, not a replica.",
        ));
    }
    let primary_id = node.id.clone();
    let primary_addr = (node.ip.clone(), node.port);
    if cluster.myself().role == Role::Primary
        && (!cluster.ranges_of(MYSELF).is_empty() || !db_empty)
    {
        return Err(Error::msg(
            "ERR To set a master the node must be empty and without assigned slots.",
        ));
    }
    cluster.myself_mut().role = Role::Replica(primary_id);
    cluster.migrating.clear();
    cluster.importing.clear();
    cluster.version += 1;
    // As Redis's clusterSetMaster: the node replicates its primary's data from now on.
    let (ip, port) = primary_addr;
    if !ip.is_empty() {
        crate::commands::replication::follow_primary(ctx, ip, port);
    }
    ctx.out.ok();
    Ok(())
}

fn replicas(ctx: &mut Ctx<'_>) -> CmdResult {
    let id = ctx.arg(2);
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    let number = cluster.find(id).ok_or_else(|| unknown_node(id))?;
    let node = cluster.node(number).expect("found");
    if is_replica(node) {
        return Err(Error::msg("ERR The specified node is not a master"));
    }
    let primary = node.id.clone();
    let lines: Vec<String> = cluster
        .known()
        .filter(|(_, n)| n.role == Role::Replica(primary.clone()))
        .map(|(number, _)| describe(cluster, number))
        .collect();
    ctx.out.array(lines.len());
    for line in lines {
        ctx.out.bulk(line.as_bytes());
    }
    Ok(())
}

fn count_failure_reports(ctx: &mut Ctx<'_>) -> CmdResult {
    let id = ctx.arg(2);
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    cluster.find(id).ok_or_else(|| unknown_node(id))?;
    // No failure detection: no node is ever reported failing.
    ctx.out.integer(0);
    Ok(())
}

fn failover(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    if args.len() > 3 {
        return Err(subcommand_syntax_error(&args[1]));
    }
    if let Some(option) = args.get(2) {
        if !option.eq_ignore_ascii_case(b"force") && !option.eq_ignore_ascii_case(b"takeover") {
            return Err(Error::Syntax);
        }
    }
    match cluster.myself().role.clone() {
        Role::Primary => Err(Error::msg(
            "ERR You should send CLUSTER FAILOVER to a replica",
        )),
        Role::Replica(id) => {
            if cluster.find(id.as_bytes()).is_none() {
                return Err(Error::msg(
                    "ERR I'm a replica but my master is unknown to me",
                ));
            }
            // embedis has no failure detection nor election: every form is a takeover (Redis's
            // TAKEOVER): the primary's slots become ours under a new config epoch, which the
            // bus spreads (the higher epoch wins), and this node stops replicating.
            let primary = cluster.find(id.as_bytes()).expect("checked");
            cluster.current_epoch += 1;
            let epoch = cluster.current_epoch;
            let myself = cluster.myself_mut();
            myself.config_epoch = epoch;
            myself.role = Role::Primary;
            for slot in 0..crate::model::cluster_view::SLOTS as u16 {
                if cluster.owner(slot) == primary {
                    cluster.set_owner(slot, MYSELF);
                }
            }
            cluster.version += 1;
            crate::commands::replication::stop_following(ctx);
            ctx.server
                .log
                .notice("Taking over the master (user request).");
            ctx.out.ok();
            Ok(())
        }
    }
}

fn saveconfig(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    ctx.out.ok();
    Ok(())
}

fn reset(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    enabled(ctx)?;
    if args.len() > 3 {
        return Err(subcommand_syntax_error(&args[1]));
    }
    let hard = match args.get(2) {
        None => false,
        Some(a) if a.eq_ignore_ascii_case(b"hard") => true,
        Some(a) if a.eq_ignore_ascii_case(b"soft") => false,
        Some(_) => return Err(Error::Syntax),
    };
    let primary = ctx.server.cluster.myself().role == Role::Primary;
    if primary && !ctx.ks.dbs[ctx.client.db].main.is_empty() {
        return Err(Error::msg(
            "ERR CLUSTER RESET can't be called with master nodes containing keys",
        ));
    }
    // A replica's data is its primary's: it goes with the role (Redis flushes it too).
    if !primary {
        ctx.ks.flush_all(false);
    }
    let new_id = hard.then(|| ctx.server.random_id());
    ctx.server.cluster.reset(new_id);
    ctx.out.ok();
    Ok(())
}

fn links(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    // Each connected peer: one outbound link (this node's bus client) as Redis lists it.
    let peers: Vec<(String, i64)> = cluster
        .known()
        .filter(|(n, node)| *n != MYSELF && node.connected && !node.handshake)
        .map(|(_, node)| (node.id.clone(), node.ping_sent))
        .collect();
    ctx.out.array(peers.len());
    for (id, created) in peers {
        ctx.out.map(6);
        ctx.out.bulk(b"direction");
        ctx.out.bulk(b"to");
        ctx.out.bulk(b"node");
        ctx.out.bulk(id.as_bytes());
        ctx.out.bulk(b"create-time");
        ctx.out.integer(created);
        ctx.out.bulk(b"events");
        ctx.out.bulk(b"rw");
        ctx.out.bulk(b"send-buffer-allocated");
        ctx.out.integer(0);
        ctx.out.bulk(b"send-buffer-used");
        ctx.out.integer(0);
    }
    Ok(())
}

/// One line of CLUSTER NODES (and REPLICAS) for node `number`.
pub fn describe(cluster: &Cluster, number: u32) -> String {
    let node = cluster.node(number).expect("known node");
    let mut line = format!("{} {} ", node.id, node.address());
    let mut flags = Vec::new();
    if number == MYSELF {
        flags.push("myself");
    }
    flags.push(match node.role {
        Role::Primary => "master",
        Role::Replica(_) => "slave",
    });
    if node.handshake {
        flags.push("handshake");
    }
    if node.ip.is_empty() && number != MYSELF {
        flags.push("noaddr");
    }
    line.push_str(&flags.join(","));
    let (primary, epoch) = match &node.role {
        Role::Primary => ("-".to_string(), node.config_epoch),
        Role::Replica(id) => {
            let epoch = cluster
                .find(id.as_bytes())
                .and_then(|n| cluster.node(n))
                .map_or(node.config_epoch, |p| p.config_epoch);
            (id.clone(), epoch)
        }
    };
    let connected = number == MYSELF || node.connected;
    let _ = write!(
        line,
        " {primary} {} {} {epoch} {}",
        node.ping_sent,
        node.pong_received,
        if connected {
            "connected"
        } else {
            "disconnected"
        }
    );
    // A fresh node's default of serving everything is not a claim: cluster managers
    // (`redis-cli --cluster create`) read CLUSTER NODES to find empty nodes and build their
    // ADDSLOTS from the slots listed there.
    let ranges = if number == MYSELF && cluster.implicit {
        Vec::new()
    } else {
        cluster.ranges_of(number)
    };
    for (start, end) in ranges {
        if start == end {
            let _ = write!(line, " {start}");
        } else {
            let _ = write!(line, " {start}-{end}");
        }
    }
    if number == MYSELF {
        for (slot, to) in &cluster.migrating {
            if let Some(n) = cluster.node(*to) {
                let _ = write!(line, " [{slot}->-{}]", n.id);
            }
        }
        for (slot, from) in &cluster.importing {
            if !cluster.migrating.contains_key(slot) {
                if let Some(n) = cluster.node(*from) {
                    let _ = write!(line, " [{slot}-<-{}]", n.id);
                }
            }
        }
    }
    line
}

fn nodes(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    let mut text = String::new();
    for (number, _) in cluster.known() {
        text.push_str(&describe(cluster, number));
        text.push('\n');
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// CLUSTER INFO's text.
pub fn info_text(cluster: &Cluster) -> String {
    let assigned = cluster.slots_assigned();
    let myself = cluster.myself();
    let my_epoch = match &myself.role {
        Role::Replica(id) => cluster
            .find(id.as_bytes())
            .and_then(|n| cluster.node(n))
            .map_or(myself.config_epoch, |p| p.config_epoch),
        Role::Primary => myself.config_epoch,
    };
    let mut text = String::new();
    let _ = write!(
        text,
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{assigned}\r\n\
         cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:{}\r\n\
         cluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{my_epoch}\r\n",
        if cluster.state_ok() { "ok" } else { "fail" },
        cluster.known().count(),
        cluster.size(),
        cluster.current_epoch,
    );
    if cluster.messages_sent > 0 {
        let _ = write!(
            text,
            "cluster_stats_messages_ping_sent:{}\r\n",
            cluster.messages_sent
        );
    }
    let _ = write!(
        text,
        "cluster_stats_messages_sent:{}\r\n",
        cluster.messages_sent
    );
    if cluster.messages_received > 0 {
        let _ = write!(
            text,
            "cluster_stats_messages_pong_received:{}\r\n",
            cluster.messages_received
        );
    }
    let _ = write!(
        text,
        "cluster_stats_messages_received:{}\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n",
        cluster.messages_received
    );
    text
}

fn info(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let text = info_text(&ctx.server.cluster);
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// The nodes of each shard: its primary first, then its replicas.
fn shard_members(cluster: &Cluster, primary: u32) -> Vec<u32> {
    let mut members = vec![primary];
    if let Some(id) = cluster.node(primary).map(|n| n.id.clone()) {
        members.extend(
            cluster
                .known()
                .filter(|(_, n)| n.role == Role::Replica(id.clone()))
                .map(|(number, _)| number),
        );
    }
    members
}

fn slots(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    // Maximal runs of slots served by one node, in slot order.
    let mut runs: Vec<(u16, u16, u32)> = Vec::new();
    for slot in 0..SLOTS as u16 {
        let owner = cluster.owner(slot);
        if owner == NO_NODE {
            continue;
        }
        match runs.last_mut() {
            Some((_, end, o)) if *o == owner && *end + 1 == slot => *end = slot,
            _ => runs.push((slot, slot, owner)),
        }
    }
    let out = &mut ctx.out;
    out.array(runs.len());
    for (start, end, owner) in runs {
        let members = shard_members(cluster, owner);
        out.array(2 + members.len());
        out.integer(start as i64);
        out.integer(end as i64);
        for number in members {
            let node = cluster.node(number).expect("member");
            out.array(4);
            out.bulk(node.ip.as_bytes());
            out.integer(node.port as i64);
            out.bulk(node.id.as_bytes());
            out.map(0);
        }
    }
    Ok(())
}

fn shards(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    // Every primary makes a shard (with or without slots), as Redis lists them.
    let primaries: Vec<u32> = cluster
        .known()
        .filter(|(_, n)| n.role == Role::Primary)
        .map(|(number, _)| number)
        .collect();
    let out = &mut ctx.out;
    out.array(primaries.len());
    for primary in primaries {
        out.map(2);
        out.bulk(b"slots");
        let ranges = cluster.ranges_of(primary);
        out.array(ranges.len() * 2);
        for (start, end) in ranges {
            out.integer(start as i64);
            out.integer(end as i64);
        }
        out.bulk(b"nodes");
        let members = shard_members(cluster, primary);
        out.array(members.len());
        for number in members {
            let node = cluster.node(number).expect("member");
            out.map(7);
            out.bulk(b"id");
            out.bulk(node.id.as_bytes());
            out.bulk(b"port");
            out.integer(node.port as i64);
            out.bulk(b"ip");
            out.bulk(node.ip.as_bytes());
            out.bulk(b"endpoint");
            out.bulk(node.ip.as_bytes());
            out.bulk(b"role");
            out.bulk(if number == primary {
                b"master".as_slice()
            } else {
                b"replica"
            });
            out.bulk(b"replication-offset");
            out.integer(0);
            out.bulk(b"health");
            out.bulk(if number == MYSELF || node.connected {
                b"online".as_slice()
            } else {
                b"loading"
            });
        }
    }
    Ok(())
}

fn asking(ctx: &mut Ctx<'_>) -> CmdResult {
    if !ctx.server.cluster.enabled {
        return Err(Error::msg(DISABLED));
    }
    ctx.client.asking = true;
    ctx.out.ok();
    Ok(())
}

fn readonly(ctx: &mut Ctx<'_>) -> CmdResult {
    if !ctx.server.cluster.enabled {
        return Err(Error::msg(DISABLED));
    }
    ctx.client.cluster_readonly = true;
    ctx.out.ok();
    Ok(())
}

fn readwrite(ctx: &mut Ctx<'_>) -> CmdResult {
    if !ctx.server.cluster.enabled {
        return Err(Error::msg(DISABLED));
    }
    ctx.client.cluster_readonly = false;
    ctx.out.ok();
    Ok(())
}

const ADMIN: Flags = Flags::ADMIN
    .union(Flags::STALE)
    .union(Flags::NO_ASYNC_LOADING);

/// The admin subcommands that only read (Redis does not flag them `no_async_loading`).
const ADMIN_READ: Flags = Flags::ADMIN.union(Flags::STALE);

const ADMIN_ACL: Acl = Acl::ADMIN.union(Acl::SLOW).union(Acl::DANGEROUS);

const NONDETERMINISTIC: &[&str] = &["nondeterministic_output"];

macro_rules! sub {
    ($name:literal, $arity:expr, $handler:expr, $flags:expr, $acl:expr, $since:literal, $complexity:literal, $summary:literal, $syntax:literal) => {
        CommandSpec::new($name, $arity, $handler)
            .flags($flags)
            .acl($acl)
            .doc("cluster", $since, $complexity, $summary, $syntax)
    };
}

static SUBCOMMANDS: &[CommandSpec] = &[
    sub!("addslots", -3, addslots, ADMIN, ADMIN_ACL, "3.0.0",
        "O(N) where N is the total number of hash slot arguments",
        "Assigns slots to this node.", "slot:integer..."),
    sub!("addslotsrange", -4, addslotsrange, ADMIN, ADMIN_ACL, "7.0.0",
        "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        "Assigns ranges of slots to this node.",
        "range=(start-slot:integer end-slot:integer)..."),
    sub!("bumpepoch", 2, bumpepoch, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Gives this node a new, highest config epoch.", "")
        .tips(NONDETERMINISTIC),
    sub!("count-failure-reports", 3, count_failure_reports, ADMIN_READ, ADMIN_ACL, "3.0.0",
        "O(N) where N is the number of failure reports",
        "Returns how many failure reports a node has.", "node-id")
        .tips(NONDETERMINISTIC),
    sub!("countkeysinslot", 3, countkeysinslot, Flags::STALE, Acl::SLOW, "3.0.0", "O(1)",
        "Returns how many keys of a slot this node holds.", "slot:integer"),
    sub!("delslots", -3, delslots, ADMIN, ADMIN_ACL, "3.0.0",
        "O(N) where N is the total number of hash slot arguments",
        "Stops assigning slots to any node.", "slot:integer..."),
    sub!("delslotsrange", -4, delslotsrange, ADMIN, ADMIN_ACL, "7.0.0",
        "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        "Stops assigning ranges of slots to any node.",
        "range=(start-slot:integer end-slot:integer)..."),
    sub!("failover", -2, failover, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Makes a replica take its primary's place.", "[options=(FORCE|TAKEOVER)]"),
    sub!("flushslots", 2, flushslots, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Stops assigning this node's slots.", ""),
    sub!("forget", 3, forget, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Removes a node from this node's view.", "node-id"),
    sub!("getkeysinslot", 4, getkeysinslot, Flags::STALE, Acl::SLOW, "3.0.0",
        "O(log(N)) where N is the number of requested keys",
        "Returns up to a count of the keys of a slot.", "slot:integer count:integer")
        .tips(NONDETERMINISTIC),
    sub!("help", 2, help, Flags::LOADING.union(Flags::STALE), Acl::SLOW, "5.0.0", "O(1)",
        "Lists the CLUSTER subcommands.", ""),
    sub!("info", 2, info, Flags::STALE, Acl::SLOW, "3.0.0", "O(1)",
        "Returns the state of the cluster as this node sees it.", "")
        .tips(NONDETERMINISTIC),
    sub!("keyslot", 3, keyslot, Flags::STALE, Acl::SLOW, "3.0.0", "O(N) where N is the number of bytes in the key",
        "Returns the hash slot of a key.", "key:string"),
    sub!("links", 2, links, Flags::STALE, Acl::SLOW, "7.0.0", "O(N) where N is the total number of Cluster nodes",
        "Returns this node's bus links to other nodes.", "")
        .tips(NONDETERMINISTIC),
    sub!("meet", -4, meet, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Makes this node join another node's cluster.",
        "ip port:integer [cluster_bus_port:integer@4.0.0]"),
    sub!("myid", 2, myid, Flags::STALE, Acl::SLOW, "3.0.0", "O(1)",
        "Returns this node's ID.", ""),
    sub!("nodes", 2, nodes, Flags::STALE, Acl::SLOW, "3.0.0", "O(N) where N is the total number of Cluster nodes",
        "Returns the cluster's configuration as this node sees it.", "")
        .tips(NONDETERMINISTIC),
    sub!("replicas", 3, replicas, ADMIN_READ, ADMIN_ACL, "5.0.0", "O(1)",
        "Lists the replicas of a primary node.", "node-id")
        .tips(NONDETERMINISTIC),
    sub!("replicate", 3, replicate, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Makes this node a replica of a primary node.", "node-id"),
    sub!("reset", -2, reset, ADMIN.union(Flags::NOSCRIPT).without(Flags::NO_ASYNC_LOADING), ADMIN_ACL, "3.0.0",
        "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
        "Makes this node forget the cluster.", "[reset-type=(HARD|SOFT)]"),
    sub!("saveconfig", 2, saveconfig, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Saves the cluster configuration (kept in memory by embedis).", ""),
    sub!("set-config-epoch", 3, set_config_epoch, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Sets the config epoch of a fresh node.", "config-epoch:integer"),
    sub!("setslot", -4, setslot, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Binds a slot to a node, or marks it migrating, importing or stable.",
        "slot:integer subcommand=(IMPORTING node-id|MIGRATING node-id|NODE node-id|STABLE)"),
    sub!("shards", 2, shards, Flags::STALE, Acl::SLOW, "7.0.0", "O(N) where N is the total number of cluster nodes",
        "Returns the cluster's shards: their slots and nodes.", "")
        .tips(NONDETERMINISTIC),
    sub!("slaves", 3, replicas, ADMIN_READ, ADMIN_ACL, "3.0.0", "O(1)",
        "Lists the replicas of a primary node (old name of REPLICAS).", "node-id")
        .tips(NONDETERMINISTIC),
    sub!("slots", 2, slots, Flags::STALE, Acl::SLOW, "3.0.0", "O(N) where N is the total number of Cluster nodes",
        "Returns the slot ranges and the nodes serving them.", "")
        .tips(NONDETERMINISTIC),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::container("cluster", SUBCOMMANDS)
        .acl(Acl::SLOW)
        .doc(
            "cluster",
            "3.0.0",
            "Depends on subcommand.",
            "Container for the cluster commands.",
            "",
        ),
    CommandSpec::new("asking", 1, asking)
        .flags(Flags::FAST)
        .acl(Acl::FAST.union(Acl::CONNECTION))
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Lets the next command reach a slot this node is importing.",
            "",
        ),
    CommandSpec::new("readonly", 1, readonly)
        .flags(Flags::FAST.union(Flags::LOADING).union(Flags::STALE))
        .acl(Acl::FAST.union(Acl::CONNECTION))
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Lets this connection read from a replica node.",
            "",
        ),
    CommandSpec::new("readwrite", 1, readwrite)
        .flags(Flags::FAST.union(Flags::LOADING).union(Flags::STALE))
        .acl(Acl::FAST.union(Acl::CONNECTION))
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Ends READONLY on this connection.",
            "",
        ),
];
