//! What a bus message changes and answers (Redis's `clusterProcessPacket`), and the life of a
//! link as the I/O layer reports it: accepted, connected, lost.

use embedis_bus::{kind, message_flag, node_flag, Body, Extension, Header, Message, NAME_LEN};

use super::{
    field_text, id_of, node_timeout, send_ping, send_update, set_node_as_primary, set_primary,
};
use crate::model::cluster_bus_state::BusEffect;
use crate::model::cluster_view::{LinkId, Node, Role, MYSELF, NO_NODE, SLOTS};
use crate::model::state::ServerState;

/// A connection accepted on the bus port from `peer_ip` (to this node's `local_ip`).
pub fn accepted(server: &mut ServerState, peer_ip: String, local_ip: String) -> LinkId {
    let now = server.clock.now_ms();
    server
        .cluster
        .bus
        .open_from(None, true, now, peer_ip, local_ip)
}

/// An outbound link is up: the first message is a MEET for a node being met, else a PING.
pub fn connected(server: &mut ServerState, link: LinkId, local_ip: String) {
    let Some(l) = server.cluster.bus.links.get_mut(&link) else {
        return;
    };
    l.local_ip = local_ip;
    let Some(number) = l.node else {
        return;
    };
    let Some(node) = server.cluster.node_mut(number) else {
        return;
    };
    // A ping pending from before the reconnection keeps its time, so that a node that
    // accepts connections but never answers still times out.
    let old_ping_sent = node.ping_sent;
    let meet = std::mem::take(&mut node.meet);
    send_ping(server, link, if meet { kind::MEET } else { kind::PING });
    if old_ping_sent != 0 {
        if let Some(node) = server.cluster.node_mut(number) {
            node.ping_sent = old_ping_sent;
        }
    }
}

/// The I/O layer lost `link` (closed by the peer, an error, or a failed connect).
pub fn link_lost(server: &mut ServerState, link: LinkId) {
    server.cluster.free_link(link);
}

/// A node name as Redis makes them: 40 hex digits. A peer naming a node otherwise is not
/// believed (such a name would also break `nodes.conf`'s lines).
fn valid_name(name: &[u8; NAME_LEN]) -> bool {
    name.iter().all(u8::is_ascii_hexdigit)
}

/// An IP field's text if it is an IP address (or empty): a peer's garbage is not an address.
fn ip_text(field: &[u8]) -> Option<String> {
    let text = field_text(field);
    (text.is_empty() || text.parse::<std::net::IpAddr>().is_ok()).then_some(text)
}

/// The node a message on `link` comes from (Redis's `getNodeFromLinkAndMsg`): the link's
/// node unless that one is still in handshake, else the node the header names — an inbound
/// link learns its node this way.
fn sender_of(server: &mut ServerState, link: LinkId, name: &[u8; NAME_LEN]) -> Option<u32> {
    let cluster = &mut server.cluster;
    let linked = cluster.bus.links.get(&link)?.node;
    if let Some(n) = linked.filter(|&n| cluster.node(n).is_some_and(|n| !n.handshake)) {
        return Some(n);
    }
    let sender = cluster.find(name)?;
    if linked.is_none() {
        // An inbound link from a known node: it becomes that node's inbound link.
        let old = cluster.node(sender).and_then(|n| n.inbound_link);
        if let Some(old) = old.filter(|&old| old != link) {
            cluster.free_link(old);
        }
        if let Some(l) = cluster.bus.links.get_mut(&link) {
            l.node = Some(sender);
        }
        if let Some(node) = cluster.node_mut(sender) {
            node.inbound_link = Some(link);
        }
    }
    Some(sender)
}

/// Processes one message received on `link`. False if the link was closed because of it.
pub fn receive(server: &mut ServerState, link: LinkId, message: Message) -> bool {
    let now = server.clock.now_ms();
    let h = &message.header;
    if let Some(count) = server.cluster.bus.received.get_mut(h.kind as usize) {
        *count += 1;
    }
    if i32::from(h.kind) == server.cluster.bus.drop_filter {
        server
            .log
            .warning("Dropping packet that matches debug drop filter");
        return true;
    }
    if !server.cluster.bus.links.contains_key(&link) {
        return false;
    }
    // Any message from someone we know implicitly ends a fresh node's default.
    let sender = sender_of(server, link, &h.sender);
    if let Some(node) = sender.and_then(|s| server.cluster.node_mut(s)) {
        node.data_received = now;
    }
    let known = sender.filter(|&s| server.cluster.node(s).is_some_and(|n| !n.handshake));
    let sender_config_epoch = if let Some(s) = known {
        learn_epochs_and_offset(server, s, h);
        h.config_epoch
    } else {
        0
    };
    match (h.kind, &message.body) {
        (kind::PING | kind::PONG | kind::MEET, Body::Ping { gossip, extensions }) => {
            if h.kind != kind::PONG {
                answer_ping(server, link, sender, h, gossip);
            }
            process_config(
                server,
                link,
                sender,
                sender_config_epoch,
                h,
                gossip,
                extensions,
            )
        }
        (kind::FAIL, Body::Fail { about }) => {
            fail_received(server, sender, h, about, now);
            true
        }
        (kind::PUBLISH | kind::PUBLISHSHARD, Body::Publish { channel, message }) => {
            if sender.is_some() {
                server.cluster.bus.effects.push(BusEffect::Publish {
                    channel: channel.clone(),
                    message: message.clone(),
                    shard: h.kind == kind::PUBLISHSHARD,
                });
            }
            true
        }
        (kind::FAILOVER_AUTH_REQUEST, _) => {
            if let Some(s) = sender {
                super::failover::vote_if_needed(server, s, h);
            }
            true
        }
        (kind::FAILOVER_AUTH_ACK, _) => {
            if let Some(s) = sender {
                super::failover::vote_received(server, s, h.current_epoch);
            }
            true
        }
        (kind::MFSTART, _) => {
            if let Some(s) = sender {
                super::failover::manual_failover_asked(server, s, link);
            }
            true
        }
        (
            kind::UPDATE,
            Body::Update {
                config_epoch,
                name,
                slots,
            },
        ) => {
            if sender.is_some() {
                update_received(server, *config_epoch, name, slots);
            }
            true
        }
        // MODULE: no module listens; unknown types are ignored, as Redis does.
        _ => true,
    }
}

/// A known sender's epochs and replication offset (and, during a manual failover, the paused
/// primary's final offset).
fn learn_epochs_and_offset(server: &mut ServerState, sender: u32, h: &Header) {
    let cluster = &mut server.cluster;
    if h.current_epoch > cluster.current_epoch {
        cluster.current_epoch = h.current_epoch;
        cluster.bus.save_config = true;
    }
    let my_primary = match &cluster.myself().role {
        Role::Replica(id) => cluster.find(id.as_bytes()),
        Role::Primary => None,
    };
    let Some(node) = cluster.node_mut(sender) else {
        return;
    };
    if h.config_epoch > node.config_epoch {
        node.config_epoch = h.config_epoch;
        cluster.bus.save_config = true;
        cluster.version += 1;
    }
    let node = cluster.node_mut(sender).expect("sender");
    node.repl_offset = h.offset;
    let manual = &mut cluster.bus.manual;
    if manual.end != 0
        && my_primary == Some(sender)
        && h.mflags[0] & message_flag::PAUSED != 0
        && manual.primary_offset.is_none()
    {
        manual.primary_offset = Some(h.offset);
        server.log.warning(&format!(
            "Received replication offset for paused master manual failover: {}",
            h.offset
        ));
    }
}

/// The IP a message on `link` says its sender has: the announced one, else the link's peer.
fn sender_ip(server: &ServerState, link: LinkId, h: &Header) -> String {
    let announced = ip_text(&h.ip).unwrap_or_default();
    if !announced.is_empty() {
        return announced;
    }
    server
        .cluster
        .bus
        .links
        .get(&link)
        .map_or_else(String::new, |l| l.peer_ip.clone())
}

/// PING and MEET: learn this node's own IP from the link, add the sender of a MEET, answer
/// with a PONG.
fn answer_ping(
    server: &mut ServerState,
    link: LinkId,
    sender: Option<u32>,
    h: &Header,
    gossip: &[embedis_bus::Gossip],
) {
    let local_ip = server
        .cluster
        .bus
        .links
        .get(&link)
        .map_or_else(String::new, |l| l.local_ip.clone());
    let myself_ip = server.cluster.myself().ip.clone();
    if (h.kind == kind::MEET || myself_ip.is_empty())
        && server.config.cluster.announce_ip.is_empty()
        && !local_ip.is_empty()
        && local_ip != myself_ip
    {
        server.cluster.myself_mut().ip = local_ip.clone();
        server.cluster.version += 1;
        server
            .log
            .warning(&format!("IP address for this node updated to {local_ip}"));
    }
    if sender.is_none() && h.kind == kind::MEET {
        // Met by a node: it is part of a cluster now.
        server.cluster.end_implicit(true);
        let now = server.clock.now_ms();
        let ip = sender_ip(server, link, h);
        let mut node = Node::new(server.random_id(), ip, h.port, h.cport, now);
        node.pport = h.pport;
        node.handshake = true;
        server.cluster.add(node);
        process_gossip(server, None, gossip);
    }
    send_ping(server, link, kind::PONG);
}

/// PING, PONG and MEET: the handshake's end, addresses, role, slots, epochs and gossip.
fn process_config(
    server: &mut ServerState,
    link: LinkId,
    sender: Option<u32>,
    sender_config_epoch: u64,
    h: &Header,
    gossip: &[embedis_bus::Gossip],
    extensions: &[Extension],
) -> bool {
    let Some(l) = server.cluster.bus.links.get(&link).cloned() else {
        return false;
    };
    if !l.inbound {
        if let Some(done) = finish_handshake(server, link, l.node, sender, h) {
            return done;
        }
    }
    let now = server.clock.now_ms();
    if let Some(node) = sender.and_then(|s| server.cluster.node_mut(s)) {
        node.nofailover = h.flags & node_flag::NOFAILOVER != 0;
        if h.kind == kind::PING && !node.handshake {
            update_address(server, sender.expect("sender"), link, h);
        }
    }
    // The link's node answered (even the PONG that ended its handshake counts).
    if let (false, kind::PONG, Some(linked)) = (l.inbound, h.kind, l.node) {
        pong_received(server, linked, now);
    }
    let Some(sender) = sender else {
        return true;
    };
    learn_role(server, sender, h);
    learn_slots(server, sender, sender_config_epoch, h);
    process_gossip(server, Some(sender), gossip);
    // Only what `cluster-announce-hostname` accepts (letters, digits, '-', '.'): anything else
    // would break the node's CLUSTER NODES line.
    let hostname = extensions.iter().find_map(|e| match e {
        Extension::Hostname(name) => Some(field_text(name)),
        _ => None,
    });
    let hostname = hostname.filter(|h| {
        h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    });
    if let Some(node) = server.cluster.node_mut(sender) {
        node.hostname = hostname.unwrap_or_default();
    }
    true
}

/// On an outbound link: the first PONG of a node met under a provisional name gives it its
/// real name (or, if that node is known already, the provisional one goes); a PONG with
/// another name than the link's node makes the node's address unknown. `Some(result)` ends the
/// processing of the message.
fn finish_handshake(
    server: &mut ServerState,
    link: LinkId,
    linked: Option<u32>,
    sender: Option<u32>,
    h: &Header,
) -> Option<bool> {
    let linked = linked?;
    let node = server.cluster.node(linked)?;
    let name = field_text(&h.sender);
    if node.handshake {
        if !valid_name(&h.sender) {
            return Some(true);
        }
        if let Some(sender) = sender {
            if update_address(server, sender, link, h) {
                server.cluster.bus.update_state = true;
            }
            server.cluster.remove(linked);
            return Some(false);
        }
        // Met: it is part of a cluster now.
        server.cluster.end_implicit(true);
        let node = server.cluster.node_mut(linked).expect("linked");
        node.id = name;
        node.handshake = false;
        node.role = if h.flags & node_flag::REPLICA != 0 {
            Role::Replica(if valid_name(&h.replica_of) {
                field_text(&h.replica_of)
            } else {
                String::new()
            })
        } else {
            Role::Primary
        };
        server.cluster.version += 1;
        return None;
    }
    if node.id != name {
        let node = server.cluster.node_mut(linked).expect("linked");
        node.noaddr = true;
        node.ip.clear();
        (node.port, node.pport, node.bus_port) = (0, 0, 0);
        server.cluster.free_link(link);
        server.cluster.version += 1;
        return Some(false);
    }
    None
}

/// Redis's `nodeUpdateAddressIfNeeded`: a message on a link other than the node's own link
/// tells where the node is now; if that changed, its link is dropped (the cron dials again).
fn update_address(server: &mut ServerState, number: u32, link: LinkId, h: &Header) -> bool {
    let ip = sender_ip(server, link, h);
    let Some(node) = server.cluster.node_mut(number) else {
        return false;
    };
    if node.link == Some(link) || ip.is_empty() {
        return false;
    }
    if node.port == h.port && node.bus_port == h.cport && node.pport == h.pport && node.ip == ip {
        return false;
    }
    node.ip = ip;
    (node.port, node.pport, node.bus_port) = (h.port, h.pport, h.cport);
    node.noaddr = false;
    let old = node.link.take();
    let (ip, port) = (node.ip.clone(), node.port);
    if let Some(old) = old {
        server.cluster.bus.close(old);
    }
    server.cluster.version += 1;
    server.log.warning(&format!(
        "Address updated for node {}, now {ip}:{port}",
        id_of(server, number)
    ));
    let my_primary =
        matches!(&server.cluster.myself().role, Role::Replica(id) if *id == id_of(server, number));
    if my_primary {
        server
            .cluster
            .bus
            .effects
            .push(BusEffect::Follow { ip, port });
    }
    true
}

/// A PONG on this node's own link to `number`: the node is reachable.
fn pong_received(server: &mut ServerState, number: u32, now: i64) {
    let timeout = node_timeout(server);
    let Some(node) = server.cluster.node_mut(number) else {
        return;
    };
    node.pong_received = now;
    node.ping_sent = 0;
    if node.pfail {
        node.pfail = false;
        server.cluster.bus.update_state = true;
    } else if node.fail {
        clear_failure_if_needed(server, number, now, timeout);
    }
}

/// Redis's `clearNodeFailureIfNeeded`: a FAILed node reachable again is cleared at once if it
/// is a replica or serves nothing, else once the failure is old (2 × node timeout) and nobody
/// took its slots.
fn clear_failure_if_needed(server: &mut ServerState, number: u32, now: i64, timeout: i64) {
    let slots = server.cluster.slot_count(number);
    let Some(node) = server.cluster.node_mut(number) else {
        return;
    };
    let clear = !node.is_primary() || slots == 0 || now - node.fail_time > timeout * 2;
    if clear {
        node.fail = false;
        let id = node.id.clone();
        server.cluster.bus.update_state = true;
        server.cluster.version += 1;
        server.log.notice(&format!(
            "Clear FAIL state for node {id}: is reachable again."
        ));
    }
}

/// The sender's role as its header says (a primary, or a replica of the named node).
fn learn_role(server: &mut ServerState, sender: u32, h: &Header) {
    if h.replica_of.iter().all(|&b| b == 0) {
        return set_node_as_primary(server, sender);
    }
    if !valid_name(&h.replica_of) {
        return;
    }
    let primary_id = field_text(&h.replica_of);
    let cluster = &mut server.cluster;
    let was_primary = cluster.node(sender).is_some_and(Node::is_primary);
    if was_primary {
        // A primary turned replica: its slots are no longer its.
        for slot in 0..SLOTS as u16 {
            if cluster.owner(slot) == sender {
                cluster.set_owner(slot, NO_NODE);
            }
        }
        cluster.bus.update_state = true;
    }
    let node = cluster.node_mut(sender).expect("sender");
    let role = Role::Replica(primary_id);
    if node.role != role {
        let old = std::mem::replace(&mut node.role, role);
        node.migrate_to = false;
        cluster.role_changed(sender, &old);
        cluster.version += 1;
    }
}

/// The slots the sender claims: taken if its epoch is newer, or answered with an UPDATE if
/// another node serves them under a newer epoch; two primaries with the same config epoch
/// are told apart.
fn learn_slots(server: &mut ServerState, sender: u32, sender_epoch: u64, h: &Header) {
    let cluster = &server.cluster;
    let sender_primary = cluster.primary_of(sender);
    let dirty = sender_primary.is_some_and(|p| cluster.slot_bitmap(p) != h.slots);
    let sender_is_primary = cluster.node(sender).is_some_and(Node::is_primary);
    if sender_is_primary && dirty {
        update_slots_config_with(server, sender, sender_epoch, &h.slots);
    }
    if dirty {
        let cluster = &server.cluster;
        let newer = (0..SLOTS as u16).find(|&slot| {
            let owner = cluster.owner(slot);
            h.slots.contains(slot)
                && owner != sender
                && owner != NO_NODE
                && cluster
                    .node(owner)
                    .is_some_and(|o| o.config_epoch > sender_epoch)
        });
        let link = cluster.node(sender).and_then(|n| n.link);
        if let (Some(slot), Some(link)) = (newer, link) {
            let owner = cluster.owner(slot);
            send_update(server, link, owner);
        }
    }
    let cluster = &mut server.cluster;
    let myself = cluster.myself();
    let collide = myself.is_primary()
        && sender_is_primary
        && sender_epoch == myself.config_epoch
        && cluster.node(sender).is_some_and(|s| s.id > myself.id);
    if collide {
        cluster.current_epoch += 1;
        let epoch = cluster.current_epoch;
        cluster.myself_mut().config_epoch = epoch;
        cluster.version += 1;
        let id = id_of(server, sender);
        server.log.verbose(&format!(
            "WARNING: configEpoch collision with node {id}. configEpoch set to {epoch}"
        ));
    }
}

/// Redis's `clusterUpdateSlotsConfigWith`: node `sender` claims `slots` under `epoch`; slots
/// whose node has an older epoch become its. If that leaves this node's shard without slots,
/// this node follows the new owner; a primary that keeps some slots drops the keys of those
/// it lost.
pub(super) fn update_slots_config_with(
    server: &mut ServerState,
    sender: u32,
    epoch: u64,
    slots: &embedis_bus::Slots,
) {
    if sender == MYSELF {
        return;
    }
    let allow_migration = server.config.cluster.allow_replica_migration;
    let cluster = &mut server.cluster;
    let current = cluster.primary_of(MYSELF);
    let (mut new_primary, mut sender_slots, mut migrated) = (false, 0, 0);
    let mut lost = Vec::new();
    for slot in 0..SLOTS as u16 {
        if !slots.contains(slot) {
            continue;
        }
        sender_slots += 1;
        let owner = cluster.owner(slot);
        if owner == sender || cluster.importing.contains_key(&slot) {
            continue;
        }
        let older = owner == NO_NODE || cluster.node(owner).is_none_or(|o| o.config_epoch < epoch);
        if !older {
            continue;
        }
        if owner == MYSELF {
            lost.push(slot);
        }
        if Some(owner) == current {
            new_primary = true;
            migrated += 1;
        }
        cluster.set_owner(slot, sender);
        cluster.bus.update_state = true;
        cluster.bus.save_config = true;
    }
    let current_empty = current.is_some_and(|c| cluster.slot_count(c) == 0);
    let grand = cluster
        .primary_of(MYSELF)
        .filter(|&p| p != MYSELF)
        .and_then(|p| cluster.primary_of(p))
        .filter(|&g| g != MYSELF && Some(g) != cluster.primary_of(MYSELF));
    if new_primary && current_empty && (allow_migration || sender_slots == migrated) {
        let id = id_of(server, sender);
        server.log.warning(&format!(
            "Configuration change detected. Reconfiguring myself as a replica of {id}"
        ));
        set_primary(server, sender);
    } else if let Some(grand) = grand {
        let id = id_of(server, grand);
        server.log.warning(&format!(
            "I'm a sub-replica! Reconfiguring myself as a replica of grandmaster {id}"
        ));
        set_primary(server, grand);
    } else if !lost.is_empty() {
        server
            .cluster
            .bus
            .effects
            .push(BusEffect::DeleteKeysInSlots(lost));
    }
}

/// The gossip sections: failure reports from primaries, pong times, new addresses of failing
/// nodes, and nodes not known yet (named by a known node).
fn process_gossip(server: &mut ServerState, sender: Option<u32>, gossip: &[embedis_bus::Gossip]) {
    let now = server.clock.now_ms();
    let timeout = node_timeout(server);
    let sender_primary = sender
        .and_then(|s| server.cluster.node(s))
        .filter(|s| s.is_primary())
        .map(|s| s.id.clone());
    server.cluster.forgotten.retain(|_, until| *until > now);
    for g in gossip {
        let failing = g.flags & (node_flag::FAIL | node_flag::PFAIL) != 0;
        let Some(number) = server.cluster.find(&g.name) else {
            add_gossiped_node(server, sender, g, now);
            continue;
        };
        if let Some(reporter) = sender_primary.as_ref().filter(|_| number != MYSELF) {
            report_failure(server, number, reporter, failing, now, timeout);
        }
        let node = server.cluster.node_mut(number).expect("found");
        let pong = i64::from(g.pong_received) * 1000;
        if !failing && node.ping_sent == 0 && node.fail_reports.is_empty() && pong <= now + 500 {
            node.pong_received = node.pong_received.max(pong);
        }
        let Some(ip) = ip_text(&g.ip) else {
            continue;
        };
        let moved = node.ip != ip || node.port != g.port || node.bus_port != g.cport;
        if (node.pfail || node.fail) && g.flags & node_flag::NOADDR == 0 && !failing && moved {
            node.ip = ip;
            (node.port, node.pport, node.bus_port) = (g.port, g.pport, g.cport);
            node.noaddr = false;
            if let Some(link) = node.link.take() {
                server.cluster.bus.close(link);
            }
        }
    }
}

/// A node named in gossip and not known: added with its flags, unless the sender is unknown,
/// the node has no address or was forgotten recently.
fn add_gossiped_node(
    server: &mut ServerState,
    sender: Option<u32>,
    g: &embedis_bus::Gossip,
    now: i64,
) {
    let name = field_text(&g.name);
    if sender.is_none()
        || !valid_name(&g.name)
        || g.flags & node_flag::NOADDR != 0
        || server.cluster.forgotten.contains_key(&name)
    {
        return;
    }
    let Some(ip) = ip_text(&g.ip) else {
        return;
    };
    let mut node = Node::new(name, ip, g.port, g.cport, now);
    node.pport = g.pport;
    node.handshake = g.flags & node_flag::HANDSHAKE != 0;
    node.pfail = g.flags & node_flag::PFAIL != 0;
    node.fail = g.flags & node_flag::FAIL != 0;
    node.nofailover = g.flags & node_flag::NOFAILOVER != 0;
    if g.flags & node_flag::REPLICA != 0 {
        // Its primary is learnt from its own messages.
        node.role = Role::Replica(String::new());
    }
    server.cluster.add(node);
}

/// A primary's word on node `number`: failing (a report, and perhaps FAIL) or fine (its
/// report withdrawn).
fn report_failure(
    server: &mut ServerState,
    number: u32,
    reporter: &str,
    failing: bool,
    now: i64,
    timeout: i64,
) {
    let node = server.cluster.node_mut(number).expect("reported node");
    let existing = node.fail_reports.iter_mut().find(|(by, _)| by == reporter);
    match (failing, existing) {
        (true, Some(report)) => report.1 = now,
        (true, None) => node.fail_reports.push((reporter.to_string(), now)),
        (false, Some(_)) => {
            node.fail_reports.retain(|(by, _)| by != reporter);
        }
        (false, None) => {}
    }
    if failing {
        super::cron::mark_failing_if_needed(server, number, now, timeout);
    }
}

/// FAIL: the named node failed, as a majority of primaries found.
fn fail_received(
    server: &mut ServerState,
    sender: Option<u32>,
    h: &Header,
    about: &[u8; NAME_LEN],
    now: i64,
) {
    let Some(_) = sender else {
        server.log.notice(&format!(
            "Ignoring FAIL message from unknown node {} about {}",
            field_text(&h.sender),
            field_text(about)
        ));
        return;
    };
    let Some(number) = server.cluster.find(about) else {
        return;
    };
    if number == MYSELF {
        return;
    }
    let node = server.cluster.node_mut(number).expect("found");
    if node.fail {
        return;
    }
    node.fail = true;
    node.fail_time = now;
    node.pfail = false;
    server.cluster.bus.update_state = true;
    server.cluster.version += 1;
    server.log.notice(&format!(
        "FAIL message received from {} about {}",
        field_text(&h.sender),
        field_text(about)
    ));
}

/// UPDATE: a node's slots under a newer config epoch than this node knew.
fn update_received(
    server: &mut ServerState,
    epoch: u64,
    name: &[u8; NAME_LEN],
    slots: &embedis_bus::Slots,
) {
    let Some(number) = server.cluster.find(name) else {
        return;
    };
    let Some(node) = server.cluster.node(number) else {
        return;
    };
    if node.config_epoch >= epoch {
        return;
    }
    if !node.is_primary() {
        set_node_as_primary(server, number);
    }
    if let Some(node) = server.cluster.node_mut(number) {
        node.config_epoch = epoch;
    }
    server.cluster.bus.save_config = true;
    update_slots_config_with(server, number, epoch, slots);
}
