//! What this node knows of the cluster, as Redis 7.0 prints it: CLUSTER LINKS, NODES, INFO,
//! SLOTS and SHARDS.

use std::fmt::Write as _;

use crate::base::error::CmdResult;
use crate::kernel::ctx::Ctx;
use crate::model::cluster_bus_state::MESSAGE_NAMES;
use crate::model::cluster_view::{Cluster, Role, MYSELF, NO_NODE, SLOTS};

use super::enabled;

pub(super) fn links(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let cluster = &ctx.server.cluster;
    // Each node's link to it and its link to this node, as Redis lists them.
    let mut links = Vec::new();
    for (_, node) in cluster.known() {
        for id in [node.link, node.inbound_link].into_iter().flatten() {
            if let Some(link) = cluster.bus.links.get(&id) {
                links.push((
                    link.inbound,
                    node.id.clone(),
                    link.created,
                    link.send_buffer,
                ));
            }
        }
    }
    ctx.out.array(links.len());
    for (inbound, id, created, buffered) in links {
        ctx.out.map(6);
        ctx.out.bulk(b"direction");
        ctx.out.bulk(if inbound { b"from" } else { b"to" });
        ctx.out.bulk(b"node");
        ctx.out.bulk(id.as_bytes());
        ctx.out.bulk(b"create-time");
        ctx.out.integer(created);
        ctx.out.bulk(b"events");
        ctx.out
            .bulk(if buffered > 0 { b"rw".as_slice() } else { b"r" });
        ctx.out.bulk(b"send-buffer-allocated");
        ctx.out.integer(buffered as i64);
        ctx.out.bulk(b"send-buffer-used");
        ctx.out.integer(buffered as i64);
    }
    Ok(())
}

pub use crate::model::nodes_conf::describe;

pub(super) fn nodes(ctx: &mut Ctx<'_>) -> CmdResult {
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
    let (pfail, fail) = cluster.slots_failing();
    let mut text = String::new();
    let _ = write!(
        text,
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{}\r\n\
         cluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\n\
         cluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{my_epoch}\r\n",
        if cluster.state_ok() { "ok" } else { "fail" },
        assigned - pfail - fail,
        cluster.known().count(),
        cluster.size(),
        cluster.current_epoch,
    );
    for (direction, counts) in [
        ("sent", &cluster.bus.sent),
        ("received", &cluster.bus.received),
    ] {
        for (name, &count) in MESSAGE_NAMES.iter().zip(counts.iter()) {
            if count > 0 {
                let _ = write!(
                    text,
                    "cluster_stats_messages_{name}_{direction}:{count}\r\n"
                );
            }
        }
        let total: u64 = counts.iter().sum();
        let _ = write!(text, "cluster_stats_messages_{direction}:{total}\r\n");
    }
    let _ = write!(
        text,
        "total_cluster_links_buffer_limit_exceeded:{}\r\n",
        cluster.bus.buffer_limit_exceeded
    );
    text
}

pub(super) fn info(ctx: &mut Ctx<'_>) -> CmdResult {
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

/// One node of a CLUSTER SLOTS range (Redis's `addNodeToNodeReply`): the preferred endpoint,
/// the port, the ID, and a map of the other endpoints it has (its IP unless that is the
/// preferred one, its hostname unless that is).
fn node_reply(
    out: &mut embedis_protocol::Writer<'_>,
    node: &crate::model::cluster_view::Node,
    preferred: &str,
) {
    out.array(4);
    if preferred == "unknown-endpoint" {
        out.null();
    } else {
        out.bulk(node.endpoint(preferred).as_bytes());
    }
    out.integer(node.port as i64);
    out.bulk(node.id.as_bytes());
    let with_ip = preferred != "ip";
    let with_hostname = preferred != "hostname" && !node.hostname.is_empty();
    out.map(usize::from(with_ip) + usize::from(with_hostname));
    if with_ip {
        out.bulk(b"ip");
        out.bulk(node.ip.as_bytes());
    }
    if with_hostname {
        out.bulk(b"hostname");
        out.bulk(node.hostname.as_bytes());
    }
}

pub(super) fn slots(ctx: &mut Ctx<'_>) -> CmdResult {
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
    let my_offset = crate::services::cluster::my_offset(ctx.server);
    let preferred = ctx.server.config.cluster.preferred_endpoint_type.clone();
    let preferred = preferred.as_str();
    let cluster = &ctx.server.cluster;
    let out = &mut ctx.out;
    out.array(runs.len());
    for (start, end, owner) in runs {
        // Replicas that failed or hold no data yet are left out (Redis's isReplicaAvailable).
        let members: Vec<u32> = shard_members(cluster, owner)
            .into_iter()
            .filter(|&n| {
                let node = cluster.node(n).expect("member");
                let offset = if n == MYSELF {
                    my_offset
                } else {
                    node.repl_offset
                };
                n == owner || (!node.fail && offset != 0)
            })
            .collect();
        out.array(2 + members.len());
        out.integer(start as i64);
        out.integer(end as i64);
        for number in members {
            node_reply(out, cluster.node(number).expect("member"), preferred);
        }
    }
    Ok(())
}

pub(super) fn shards(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let offset_here = crate::services::cluster::my_offset(ctx.server) as i64;
    let preferred = ctx.server.config.cluster.preferred_endpoint_type.clone();
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
            out.map(7 + usize::from(!node.hostname.is_empty()));
            out.bulk(b"id");
            out.bulk(node.id.as_bytes());
            out.bulk(b"port");
            out.integer(node.port as i64);
            out.bulk(b"ip");
            out.bulk(node.ip.as_bytes());
            out.bulk(b"endpoint");
            out.bulk(node.endpoint(&preferred).as_bytes());
            if !node.hostname.is_empty() {
                out.bulk(b"hostname");
                out.bulk(node.hostname.as_bytes());
            }
            out.bulk(b"role");
            out.bulk(if number == primary {
                b"master".as_slice()
            } else {
                b"replica"
            });
            let offset = if number == MYSELF {
                offset_here
            } else {
                node.repl_offset as i64
            };
            out.bulk(b"replication-offset");
            out.integer(offset);
            out.bulk(b"health");
            out.bulk(if node.fail {
                b"fail".as_slice()
            } else if number != primary && offset == 0 {
                b"loading"
            } else {
                b"online"
            });
        }
    }
    Ok(())
}
