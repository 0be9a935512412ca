//! The bus's tick, ten times a second as Redis's `clusterCron`: handshakes that time out,
//! links to dial, a ping to a random node every second and to any node not heard of for half
//! the node timeout, links silent too long, PFAIL after the node timeout, and the replica's
//! duties (follow its primary, elections, manual failover, replica migration).

use embedis_bus::kind;
use rand::Rng;

use super::{failover, node_timeout, send_fail, send_ping, update_state};
use crate::model::cluster_bus_state::BusAction;
use crate::model::cluster_view::{Role, MYSELF};
use crate::model::state::ServerState;

/// One tick of the bus (see the module docs).
pub fn cron(server: &mut ServerState) {
    if !server.cluster.enabled {
        return;
    }
    super::refresh_myself(server);
    let now = server.clock.now_ms();
    let timeout = node_timeout(server);
    server.cluster.bus.iteration += 1;
    // Redis counts a primary's 2 s before it may call the cluster `ok` from its first tick.
    if server.cluster.bus.first_state_update == 0 {
        server.cluster.bus.first_state_update = now;
    }
    reconnect(server, now, timeout.max(1000));
    if server.cluster.bus.iteration.is_multiple_of(10) {
        ping_oldest_of_five(server);
    }
    let orphans = check_nodes(server, now, timeout);
    follow_known_primary(server);
    failover::check_manual_timeout(server, now);
    if !server.cluster.myself().is_primary() {
        failover::handle_manual_failover(server);
        failover::handle_replica_failover(server, now);
        if let Some(max_replicas) = orphans {
            failover::handle_replica_migration(server, max_replicas);
        }
    }
    if server.cluster.bus.update_state || !server.cluster.state_ok() {
        update_state(server);
    }
}

/// Drops handshakes older than `handshake_timeout`, and dials every node without a link.
fn reconnect(server: &mut ServerState, now: i64, handshake_timeout: i64) {
    for number in server.cluster.others() {
        let node = server.cluster.node(number).expect("known");
        if node.noaddr {
            continue;
        }
        if node.handshake && now - node.created > handshake_timeout {
            server.cluster.remove(number);
            continue;
        }
        if node.link.is_some() || node.ip.is_empty() || node.bus_port == 0 {
            continue;
        }
        let (ip, port) = (node.ip.clone(), node.bus_port);
        let cluster = &mut server.cluster;
        let link = cluster.bus.open(Some(number), false, now);
        let node = cluster.node_mut(number).expect("known");
        node.link = Some(link);
        // Failure detection must work even if the connection never comes up.
        if node.ping_sent == 0 {
            node.ping_sent = now;
        }
        cluster
            .bus
            .outbox
            .push(BusAction::Connect { link, ip, port });
        cluster.bus.wake.notify_one();
    }
}

/// Every second: of five nodes picked at random, the one whose pong is oldest gets a PING.
fn ping_oldest_of_five(server: &mut ServerState) {
    let candidates = server.cluster.others();
    if candidates.is_empty() {
        return;
    }
    let mut best: Option<(i64, u32)> = None;
    for _ in 0..5 {
        let number = candidates[server.rng.gen_range(0..candidates.len())];
        let node = server.cluster.node(number).expect("known");
        if node.link.is_none() || node.ping_sent != 0 || node.handshake {
            continue;
        }
        if best.is_none_or(|(pong, _)| node.pong_received < pong) {
            best = Some((node.pong_received, number));
        }
    }
    if let Some(link) = best.and_then(|(_, n)| server.cluster.node(n)?.link) {
        send_ping(server, link, kind::PING);
    }
}

/// The per-node checks: silent links dropped, pings due sent, PFAIL after the node timeout.
/// Returns, for a replica, the most working replicas any primary has if some primary is
/// orphaned (no working replica, though it had some).
fn check_nodes(server: &mut ServerState, now: i64, timeout: i64) -> Option<usize> {
    let replica = !server.cluster.myself().is_primary();
    let (mut orphaned, mut max_replicas, mut mine) = (0, 0, 0);
    let my_primary = server.cluster.primary_of(MYSELF);
    for number in server.cluster.others() {
        let node = server.cluster.node(number).expect("known");
        if node.noaddr || node.handshake {
            continue;
        }
        if replica && node.is_primary() && !node.fail {
            let ok = failover::working_replicas(server, number);
            let serving = server.cluster.slot_count(number) > 0;
            let node = server.cluster.node(number).expect("known");
            orphaned += usize::from(ok == 0 && serving && node.migrate_to);
            max_replicas = max_replicas.max(ok);
            if my_primary == Some(number) {
                mine = ok;
            }
        }
        check_node(server, number, now, timeout);
    }
    let migrate = orphaned > 0
        && max_replicas >= 2
        && mine == max_replicas
        && server.config.cluster.allow_replica_migration;
    migrate.then_some(max_replicas)
}

fn check_node(server: &mut ServerState, number: u32, now: i64, timeout: i64) {
    let cluster = &mut server.cluster;
    let manual_replica = cluster.bus.manual.replica.clone();
    let primary = cluster.myself().is_primary();
    let Some(node) = cluster.node_mut(number) else {
        return;
    };
    let ping_delay = now - node.ping_sent;
    let data_delay = now - node.data_received;
    if let Some(link) = node.link {
        let created = cluster.bus.links.get(&link).map_or(now, |l| l.created);
        let node = cluster.node(number).expect("known");
        if now - created > timeout
            && node.ping_sent != 0
            && ping_delay > timeout / 2
            && data_delay > timeout / 2
        {
            // Silent for too long: dial again (the tick after next).
            cluster.free_link(link);
        }
    }
    let node = cluster.node(number).expect("known");
    if let Some(link) = node.link {
        let manual = primary && manual_replica.as_deref() == Some(node.id.as_str());
        if (node.ping_sent == 0 && now - node.pong_received > timeout / 2) || manual {
            send_ping(server, link, kind::PING);
            return;
        }
    }
    let node = server.cluster.node_mut(number).expect("known");
    if node.ping_sent == 0 {
        return;
    }
    if ping_delay.min(data_delay) > timeout && !node.pfail && !node.fail {
        node.pfail = true;
        let id = node.id.clone();
        server.cluster.bus.update_state = true;
        server
            .log
            .verbose(&format!("*** NODE {id} possibly failing"));
    }
}

/// A replica that is not replicating yet follows its primary once that one's address is known.
fn follow_known_primary(server: &mut ServerState) {
    let Role::Replica(id) = server.cluster.myself().role.clone() else {
        return;
    };
    if server.repl.primary.is_some() {
        return;
    }
    let Some(number) = server.cluster.find(id.as_bytes()) else {
        return;
    };
    let node = server.cluster.node(number).expect("found");
    if node.ip.is_empty() || node.noaddr {
        return;
    }
    let (ip, port) = (node.ip.clone(), node.port);
    server
        .cluster
        .bus
        .effects
        .push(crate::model::cluster_bus_state::BusEffect::Follow { ip, port });
}

/// Redis's `markNodeAsFailingIfNeeded`: a node this node finds timed out (PFAIL) that a
/// majority of the serving primaries (this one included, if a primary) reported within twice
/// the node timeout becomes FAIL, and every node is told.
pub(crate) fn mark_failing_if_needed(
    server: &mut ServerState,
    number: u32,
    now: i64,
    timeout: i64,
) {
    let quorum = server.cluster.size / 2 + 1;
    let me_primary = server.cluster.myself().is_primary();
    let Some(node) = server.cluster.node_mut(number) else {
        return;
    };
    if !node.pfail || node.fail {
        return;
    }
    let failures = node.live_fail_reports(now, timeout * 2) + usize::from(me_primary);
    if failures < quorum {
        return;
    }
    node.pfail = false;
    node.fail = true;
    node.fail_time = now;
    let id = node.id.clone();
    server.cluster.bus.update_state = true;
    server.cluster.version += 1;
    server
        .log
        .notice(&format!("Marking node {id} as failing (quorum reached)."));
    send_fail(server, &id);
}
