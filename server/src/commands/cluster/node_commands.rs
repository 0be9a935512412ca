//! The commands that change the nodes: BUMPEPOCH and SET-CONFIG-EPOCH, MEET, FORGET, REPLICATE,
//! FAILOVER, SAVECONFIG and RESET, with REPLICAS and COUNT-FAILURE-REPORTS that read them.

use bytes::Bytes;
use embedis_protocol::number::parse_i64;

use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::model::cluster_view::{Cluster, Node, Role, MYSELF};

use super::topology::describe;
use super::{enabled, is_replica, subcommand_syntax_error, unknown_node};

/// Redis's `clusterBumpConfigEpochWithoutConsensus`: a new epoch unless this node's is already
/// the highest and not 0. True if it changed.
pub(super) fn bump_epoch(cluster: &mut Cluster) -> bool {
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

pub(super) fn bumpepoch(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn set_config_epoch(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn meet(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn forget(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn replicate(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn replicas(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn count_failure_reports(ctx: &mut Ctx<'_>) -> CmdResult {
    let id = ctx.arg(2);
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    cluster.find(id).ok_or_else(|| unknown_node(id))?;
    // No failure detection: no node is ever reported failing.
    ctx.out.integer(0);
    Ok(())
}

pub(super) fn failover(ctx: &mut Ctx<'_>) -> CmdResult {
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

pub(super) fn saveconfig(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    ctx.out.ok();
    Ok(())
}

pub(super) fn reset(ctx: &mut Ctx<'_>) -> CmdResult {
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
