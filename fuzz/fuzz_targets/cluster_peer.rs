//! What a peer node may send over the cluster bus, fed to a cluster node's state machine: the
//! input is cut into messages (each made to claim one of the nodes the target knows, or an
//! unknown one, so that every path of `receive` is reached), given on an inbound or outbound
//! link, with the bus's tick and the clock moving between them. Nothing may panic, and the node
//! must still describe itself (CLUSTER NODES, nodes.conf) and read back its own file.
#![no_main]

use std::time::Duration;

use embedis_core::base::clock::Clock;
use embedis_core::base::config::Config;
use embedis_core::base::log::Logger;
use embedis_core::model::cluster_view::{Node, Role};
use embedis_core::model::state::ServerState;
use embedis_core::services::cluster;
use libfuzzer_sys::fuzz_target;

fn node_state(clock: &Clock) -> ServerState {
    let mut config = Config::default();
    config.cluster.enabled = true;
    config.cluster.node_timeout = 1000;
    let mut server = ServerState::new(config, clock.clone(), Logger::silent(), Some(1), 300);
    server.tcp_port = 7000;
    let ids = ["b", "c", "d"].map(|c| c.repeat(40));
    for (i, id) in ids.iter().enumerate() {
        let mut node = Node::new(id.clone(), "127.0.0.1".into(), 7001 + i as u16, 17001 + i as u16, 0);
        if i == 2 {
            node.role = Role::Replica(ids[0].clone());
        }
        server.cluster.add(node);
    }
    server.cluster.end_implicit(true);
    for slot in 0..8192u16 {
        server.cluster.set_owner(slot, 1);
    }
    server
}

fuzz_target!(|data: &[u8]| {
    let clock = Clock::manual();
    let mut server = node_state(&clock);
    let inbound = cluster::accepted(&mut server, "127.0.0.1".into(), "127.0.0.1".into());
    cluster::cron(&mut server);
    let mut rest = data;
    while rest.len() > 2 {
        let (control, tail) = (rest[0], &rest[1..]);
        let len = (tail[0] as usize) * 16 + 2256;
        let take = len.min(tail.len() - 1);
        let mut frame = tail[1..1 + take].to_vec();
        rest = &tail[1 + take..];
        if frame.len() < 2256 {
            frame.resize(2256, 0);
        }
        // A valid signature, version and length, so that the message reaches `receive`.
        frame[..4].copy_from_slice(b"RCmb");
        let total = frame.len() as u32;
        frame[4..8].copy_from_slice(&total.to_be_bytes());
        frame[8..10].copy_from_slice(&1u16.to_be_bytes());
        let name = match control % 5 {
            0 => Some("b"),
            1 => Some("c"),
            2 => Some("d"),
            3 => Some("0"),
            _ => None,
        };
        if let Some(name) = name {
            frame[48..88].copy_from_slice(name.repeat(40).as_bytes());
        }
        let Ok(message) = embedis_bus::decode(&frame) else {
            continue;
        };
        let links: Vec<u64> = server.cluster.bus.links.keys().copied().collect();
        let link = if control & 0x20 != 0 {
            links.get((control as usize >> 6) % links.len().max(1)).copied().unwrap_or(inbound)
        } else {
            inbound
        };
        cluster::receive(&mut server, link, message);
        if control & 0x10 != 0 {
            clock.advance(Duration::from_millis(100 * (control as u64 & 0xf)));
            cluster::cron(&mut server);
        }
        server.cluster.bus.take_actions();
        server.cluster.bus.effects.clear();
    }
    let text = embedis_core::model::nodes_conf::render(&server.cluster);
    let back = embedis_core::model::nodes_conf::parse(&text, 0);
    assert!(back.is_ok(), "{text}");
});
