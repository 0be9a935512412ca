//! The cluster bus as Redis 7.0 runs it, as a state machine over this node's view of the
//! cluster ([`crate::model::cluster_view`]) and the bus's state
//! ([`crate::model::cluster_bus_state`]): what a message received on a link changes and answers
//! (`receive`), what the 100 ms tick does — pings, failure detection, handshakes, reconnects
//! (`cron`) — and the replica's election, votes and manual failover (`failover`). This module
//! builds the messages (Redis's `clusterBuildMessageHdr`, `clusterSendPing`) and sends them.
//!
//! It does no I/O: it queues [`crate::model::cluster_bus_state::BusAction`]s for the I/O layer
//! (`crate::io::cluster_bus`) and [`crate::model::cluster_bus_state::BusEffect`]s for the
//! engine, so that a whole cluster can be played in a unit test with messages passed by hand.
//! Time is the server's clock: a test that moves a manual clock past `cluster-node-timeout`
//! sees the node fail over.

pub mod config_file;
mod cron;
mod failover;
mod receive;

pub use cron::cron;
pub use failover::{
    bump_epoch_without_consensus, manual_failover_start, reset_manual_failover, take_over,
};
pub use receive::{accepted, connected, link_lost, receive};

use embedis_bus::{kind, message_flag, Body, Extension, Gossip, Header, Message, IP_LEN, NAME_LEN};
use rand::seq::SliceRandom;

use crate::model::cluster_bus_state::BusEffect;
use crate::model::cluster_view::{LinkId, Node, Role, State, MYSELF};
use crate::model::state::ServerState;

/// A node name as the bus carries it (40 bytes).
pub fn name_field(id: &str) -> [u8; NAME_LEN] {
    let mut field = [0u8; NAME_LEN];
    let bytes = id.as_bytes();
    let len = bytes.len().min(NAME_LEN);
    field[..len].copy_from_slice(&bytes[..len]);
    field
}

/// An IP field (46 bytes, NUL-padded).
pub fn ip_field(ip: &str) -> [u8; IP_LEN] {
    let mut field = [0u8; IP_LEN];
    let bytes = ip.as_bytes();
    let len = bytes.len().min(IP_LEN - 1);
    field[..len].copy_from_slice(&bytes[..len]);
    field
}

/// The text of a NUL-padded field.
pub fn field_text(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// `cluster-node-timeout` in ms.
pub(crate) fn node_timeout(server: &ServerState) -> i64 {
    server.config.cluster.node_timeout as i64
}

/// The port clients reach this node on, its plaintext port under TLS (else 0) and its bus
/// port, as announced (Redis's `deriveAnnouncedPorts`).
pub fn announced_ports(server: &ServerState) -> (u16, u16, u16) {
    let config = &server.config.cluster;
    let tls = &server.config.tls;
    let tls_port = tls.cluster && tls.port != 0;
    // Under tls-cluster, clients are sent to the TLS port, as Redis announces it then.
    let port = if tls_port {
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
    let pport = if !tls_port {
        0
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
    (port, pport, bus)
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
    let (port, pport, bus) = announced_ports(server);
    let announce_ip = server.config.cluster.announce_ip.clone();
    let hostname = server.config.cluster.announce_hostname.clone();
    let nofailover = server.config.cluster.replica_no_failover;
    let myself = server.cluster.myself_mut();
    myself.port = port;
    myself.pport = pport;
    myself.bus_port = bus;
    myself.hostname = hostname;
    myself.nofailover = nofailover;
    if !announce_ip.is_empty() {
        myself.ip = announce_ip;
    }
}

/// The header of a message of type `kind` from this node (Redis's `clusterBuildMessageHdr`):
/// a replica sends its primary's slots and config epoch.
pub fn header(server: &ServerState, kind: u16) -> Header {
    let cluster = &server.cluster;
    let myself = cluster.myself();
    let primary = match &myself.role {
        Role::Replica(id) => cluster.find(id.as_bytes()),
        Role::Primary => None,
    };
    let shown = primary.unwrap_or(MYSELF);
    let mut h = Header::new(kind, name_field(&myself.id));
    if let Some(p) = primary.and_then(|p| cluster.node(p)) {
        h.replica_of = name_field(&p.id);
    }
    h.slots = if cluster.implicit {
        embedis_bus::Slots::empty()
    } else {
        cluster.slot_bitmap(shown)
    };
    h.ip = ip_field(&server.config.cluster.announce_ip);
    (h.port, h.pport, h.cport) = announced_ports(server);
    h.flags = myself.flag_bits(true);
    h.state = u8::from(cluster.state != State::Ok);
    h.current_epoch = cluster.current_epoch;
    h.config_epoch = cluster.node(shown).map_or(0, |n| n.config_epoch);
    h.offset = my_offset(server);
    if myself.is_primary() && cluster.bus.manual.end != 0 {
        h.mflags[0] |= message_flag::PAUSED;
    }
    h
}

/// A gossip section about `node`.
fn gossip_of(node: &Node) -> Gossip {
    Gossip {
        name: name_field(&node.id),
        ping_sent: (node.ping_sent / 1000) as u32,
        pong_received: (node.pong_received / 1000) as u32,
        ip: ip_field(&node.ip),
        port: node.port,
        cport: node.bus_port,
        flags: node.flag_bits(false),
        pport: node.pport,
    }
}

/// A PING, PONG or MEET: the header, gossip about a tenth of the nodes (at least 3) picked at
/// random plus every PFAIL node, and the hostname extension.
pub fn ping_message(server: &mut ServerState, kind: u16) -> Message {
    let header = header(server, kind);
    let cluster = &server.cluster;
    let total = cluster.known().count();
    let wanted = (total / 10).max(3).min(total.saturating_sub(2));
    let mut candidates: Vec<u32> = cluster
        .known()
        .filter(|&(n, node)| {
            n != MYSELF
                && !node.pfail
                && !node.handshake
                && !node.noaddr
                && (node.link.is_some() || cluster.slot_count(n) > 0)
        })
        .map(|(n, _)| n)
        .collect();
    candidates.shuffle(&mut server.rng);
    candidates.truncate(wanted);
    let cluster = &server.cluster;
    let mut gossip: Vec<Gossip> = candidates
        .iter()
        .filter_map(|&n| cluster.node(n).map(gossip_of))
        .collect();
    gossip.extend(
        cluster
            .known()
            .filter(|(_, n)| n.pfail && !n.handshake && !n.noaddr)
            .map(|(_, n)| gossip_of(n)),
    );
    let hostname = &cluster.myself().hostname;
    let extensions = if hostname.is_empty() {
        Vec::new()
    } else {
        vec![Extension::Hostname(hostname.as_bytes().to_vec())]
    };
    Message {
        header,
        body: Body::Ping { gossip, extensions },
    }
}

/// Sends a PING, PONG or MEET on `link`; an outbound PING starts the wait for its PONG.
pub fn send_ping(server: &mut ServerState, link: LinkId, kind: u16) {
    let Some(l) = server.cluster.bus.links.get(&link) else {
        return;
    };
    if !l.inbound && kind == kind::PING {
        let now = server.clock.now_ms();
        if let Some(node) = l.node.and_then(|n| server.cluster.node_mut(n)) {
            node.ping_sent = now;
        }
    }
    let message = ping_message(server, kind);
    server.cluster.bus.send(link, message);
}

/// The outbound links of every node but this one and those in handshake (Redis's
/// `clusterBroadcastMessage`).
fn broadcast_links(server: &ServerState) -> Vec<LinkId> {
    server
        .cluster
        .known()
        .filter(|(n, node)| *n != MYSELF && !node.handshake)
        .filter_map(|(_, node)| node.link)
        .collect()
}

/// Sends `message` to every node with a link.
pub fn broadcast(server: &mut ServerState, message: Message) {
    for link in broadcast_links(server) {
        server.cluster.bus.send(link, message.clone());
    }
}

/// A PONG to every node (`replicas_only`: to the replicas of this node's shard), so that a
/// change of this node's role or slots is known at once (Redis's `clusterBroadcastPong`).
pub fn broadcast_pong(server: &mut ServerState, replicas_only: bool) {
    let my_primary = match &server.cluster.myself().role {
        Role::Replica(id) => id.clone(),
        Role::Primary => server.cluster.myself().id.clone(),
    };
    let links: Vec<LinkId> = server
        .cluster
        .known()
        .filter(|(n, node)| *n != MYSELF && !node.handshake)
        .filter(|(_, node)| !replicas_only || node.role == Role::Replica(my_primary.clone()))
        .filter_map(|(_, node)| node.link)
        .collect();
    for link in links {
        send_ping(server, link, kind::PONG);
    }
}

/// Tells every node that node `about` failed.
pub fn send_fail(server: &mut ServerState, about: &str) {
    let message = Message {
        header: header(server, kind::FAIL),
        body: Body::Fail {
            about: name_field(about),
        },
    };
    broadcast(server, message);
}

/// Tells the node at `link` the slots and config epoch of node `number` (it claimed them with
/// an older epoch).
pub fn send_update(server: &mut ServerState, link: LinkId, number: u32) {
    let Some(node) = server.cluster.node(number) else {
        return;
    };
    let body = Body::Update {
        config_epoch: node.config_epoch,
        name: name_field(&node.id),
        slots: server.cluster.slot_bitmap(number),
    };
    let message = Message {
        header: header(server, kind::UPDATE),
        body,
    };
    server.cluster.bus.send(link, message);
}

/// Sends a PUBLISH to every node, or a PUBLISHSHARD to the nodes of this node's shard (Redis's
/// `clusterPropagatePublish`).
pub fn propagate_publish(server: &mut ServerState, channel: &[u8], message: &[u8], shard: bool) {
    let body = Body::Publish {
        channel: channel.to_vec(),
        message: message.to_vec(),
    };
    if !shard {
        let message = Message {
            header: header(server, kind::PUBLISH),
            body,
        };
        return broadcast(server, message);
    }
    let cluster = &server.cluster;
    let Some(primary) = cluster.primary_of(MYSELF) else {
        return;
    };
    let mut members = cluster.replicas_of(primary);
    members.push(primary);
    let links: Vec<LinkId> = members
        .into_iter()
        .filter(|&n| n != MYSELF)
        .filter_map(|n| cluster.node(n).filter(|n| !n.handshake)?.link)
        .collect();
    let message = Message {
        header: header(server, kind::PUBLISHSHARD),
        body,
    };
    for link in links {
        server.cluster.bus.send(link, message.clone());
    }
}

/// Starts a handshake with `ip:port@bus_port` unless one is under way (CLUSTER MEET, Redis's
/// `clusterStartHandshake`): a node with a random name, flagged to be sent a MEET.
pub fn start_handshake(server: &mut ServerState, ip: String, port: u16, bus_port: u16) -> bool {
    let in_progress = server
        .cluster
        .known()
        .any(|(_, n)| n.handshake && n.ip == ip && n.port == port && n.bus_port == bus_port);
    if in_progress {
        return false;
    }
    let now = server.clock.now_ms();
    let mut node = Node::new(server.random_id(), ip, port, bus_port, now);
    node.handshake = true;
    node.meet = true;
    server.cluster.add(node);
    true
}

/// Makes this node a replica of node `number` (Redis's `clusterSetMaster`): it serves no slot
/// and replicates that node.
pub fn set_primary(server: &mut ServerState, number: u32) {
    let Some(primary) = server.cluster.node(number) else {
        return;
    };
    let (id, ip, port) = (primary.id.clone(), primary.ip.clone(), primary.port);
    let cluster = &mut server.cluster;
    if cluster.myself().is_primary() {
        cluster.myself_mut().migrate_to = false;
        cluster.migrating.clear();
        cluster.importing.clear();
    }
    let old = std::mem::replace(&mut cluster.myself_mut().role, Role::Replica(id));
    cluster.role_changed(MYSELF, &old);
    cluster.version += 1;
    cluster.bus.effects.push(BusEffect::Follow { ip, port });
    failover::reset_manual_failover(server);
}

/// Makes node `number` a primary in this node's view (Redis's `clusterSetNodeAsMaster`).
pub fn set_node_as_primary(server: &mut ServerState, number: u32) {
    let Some(node) = server.cluster.node_mut(number) else {
        return;
    };
    if node.is_primary() {
        return;
    }
    let old = std::mem::replace(&mut node.role, Role::Primary);
    server.cluster.role_changed(number, &old);
    let node = server.cluster.node_mut(number).expect("known");
    if number != MYSELF {
        node.migrate_to = true;
    }
    server.cluster.version += 1;
    server.cluster.bus.update_state = true;
}

/// Redis's `clusterUpdateState`, with its delays: a primary waits 2 s after start before it
/// first calls the cluster `ok`, and a primary back from a minority partition waits the node
/// timeout (bounded to 0.5-5 s) before it serves again.
pub fn update_state(server: &mut ServerState) {
    const WRITABLE_DELAY: i64 = 2000;
    let now = server.clock.now_ms();
    let cluster = &mut server.cluster;
    cluster.bus.update_state = false;
    if cluster.bus.first_state_update == 0 {
        cluster.bus.first_state_update = now;
    }
    let primary = cluster.myself().is_primary();
    if primary
        && cluster.state == State::Fail
        && !cluster.implicit
        && now - cluster.bus.first_state_update < WRITABLE_DELAY
    {
        return;
    }
    let full = server.config.cluster.require_full_coverage;
    let timeout = server.config.cluster.node_timeout as i64;
    let cluster = &mut server.cluster;
    let before = cluster.state;
    let (state, minority) = cluster.compute_state(full);
    if minority {
        cluster.bus.among_minority_time = now;
    }
    if state == before {
        return;
    }
    let rejoin_delay = timeout.clamp(500, 5000);
    if state == State::Ok && primary && now - cluster.bus.among_minority_time < rejoin_delay {
        return;
    }
    cluster.state = state;
    server.log.warning(&format!(
        "Cluster state changed: {}",
        if state == State::Ok { "ok" } else { "fail" }
    ));
}

/// The replication offset this node announces (Redis's `replicationGetSlaveOffset` for a
/// replica): 0 while a replica receives or loads a full sync (it has no history then), so
/// that other nodes hide it from CLUSTER SLOTS until it is usable.
pub fn my_offset(server: &ServerState) -> u64 {
    match &server.repl.primary {
        Some(p) if p.state == crate::model::replication::LinkState::Transfer => 0,
        _ => server.repl.offset,
    }
}

/// The address of this node's primary, if it is a replica of a node whose address is known.
pub fn my_primary_address(server: &ServerState) -> Option<(String, u16)> {
    let cluster = &server.cluster;
    let Role::Replica(id) = &cluster.myself().role else {
        return None;
    };
    let primary = cluster.node(cluster.find(id.as_bytes())?)?;
    (!primary.ip.is_empty() && !primary.noaddr).then(|| (primary.ip.clone(), primary.port))
}

/// The ID of node `number`, or an empty string.
pub(crate) fn id_of(server: &ServerState, number: u32) -> String {
    server
        .cluster
        .node(number)
        .map_or_else(String::new, |n| n.id.clone())
}

#[cfg(test)]
mod tests;
