//! The commands that change the nodes: BUMPEPOCH and SET-CONFIG-EPOCH, MEET, FORGET, REPLICATE,
//! FAILOVER, SAVECONFIG and RESET, with REPLICAS and COUNT-FAILURE-REPORTS that read them.

use bytes::Bytes;
use embedis_protocol::number::parse_i64;

use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::model::cluster_view::{Role, MYSELF};

use super::topology::describe;
use super::{enabled, is_replica, subcommand_syntax_error, unknown_node};

/// A new config epoch without consensus (BUMPEPOCH, SETSLOT NODE): true if it changed.
pub(super) fn bump_epoch(server: &mut crate::model::state::ServerState) -> bool {
    crate::services::cluster::bump_epoch_without_consensus(server)
}

pub(super) fn bumpepoch(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let bumped = bump_epoch(ctx.server);
    let line = format!(
        "{} {}",
        if bumped { "BUMPED" } else { "STILL" },
        ctx.server.cluster.myself().config_epoch
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
    // A handshake already under way with that address is not an error (Redis's EAGAIN).
    crate::services::cluster::start_handshake(ctx.server, ip, port, bus);
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
    cluster.bus.update_state = true;
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
    if cluster.myself().role == Role::Primary
        && (!cluster.ranges_of(MYSELF).is_empty() || !db_empty)
    {
        return Err(Error::msg(
            "ERR To set a master the node must be empty and without assigned slots.",
        ));
    }
    // Redis's clusterSetMaster: the node replicates its primary's data from now on (the
    // engine applies the bus's effects after the command).
    crate::services::cluster::set_primary(ctx.server, number);
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
    let now = ctx.now_ms;
    let validity = ctx.server.config.cluster.node_timeout as i64 * 2;
    let cluster = &mut ctx.server.cluster;
    let number = cluster.find(id).ok_or_else(|| unknown_node(id))?;
    let node = cluster.node_mut(number).expect("found");
    ctx.out
        .integer(node.live_fail_reports(now, validity) as i64);
    Ok(())
}

pub(super) fn failover(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    enabled(ctx)?;
    if args.len() > 3 {
        return Err(subcommand_syntax_error(&args[1]));
    }
    if let Some(option) = args.get(2) {
        if !option.eq_ignore_ascii_case(b"force") && !option.eq_ignore_ascii_case(b"takeover") {
            return Err(Error::Syntax);
        }
    }
    let option = args.get(2).map(|o| o.to_ascii_lowercase());
    let started = match option.as_deref() {
        Some(b"takeover") => crate::services::cluster::take_over(ctx.server),
        Some(_) => crate::services::cluster::manual_failover_start(ctx.server, true),
        None => crate::services::cluster::manual_failover_start(ctx.server, false),
    };
    started.map_err(Error::msg)?;
    ctx.out.ok();
    Ok(())
}

pub(super) fn saveconfig(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    crate::services::cluster::config_file::save(ctx.server)
        .map_err(|e| Error::owned(format!("ERR error saving the cluster node config: {e}")))?;
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
    // A replica's data is its primary's: it goes with the role, and it stops replicating
    // (Redis's clusterReset: replicationUnsetMaster, emptyData).
    if !primary {
        ctx.server
            .cluster
            .bus
            .effects
            .push(crate::model::cluster_bus_state::BusEffect::Promote);
        ctx.ks.flush_all(false);
    }
    crate::services::cluster::reset_manual_failover(ctx.server);
    let new_id = hard.then(|| ctx.server.random_id());
    ctx.server.cluster.reset(new_id);
    ctx.out.ok();
    Ok(())
}
