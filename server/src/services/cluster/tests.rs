//! A cluster played in memory: several nodes' state machines, their messages passed by hand
//! (each one encoded and decoded, as the wire would), one manual clock. The tests kill,
//! partition and fail over nodes and check what every survivor ends up believing.

use std::collections::HashMap;
use std::time::Duration;

use crate::base::clock::Clock;
use crate::base::config::Config;
use crate::base::log::Logger;
use crate::model::cluster_bus_state::{BusAction, BusEffect};
use crate::model::cluster_view::{LinkId, Role, MYSELF, NO_NODE};
use crate::model::state::ServerState;

const TIMEOUT_MS: u64 = 1000;

struct Net {
    nodes: Vec<ServerState>,
    clock: Clock,
    up: Vec<bool>,
    /// (node, link) -> (other node, its link).
    pairs: HashMap<(usize, LinkId), (usize, LinkId)>,
    /// Links dialled and not connected yet, by (node, link).
    effects: Vec<Vec<BusEffect>>,
    /// Pairs of nodes that cannot reach each other.
    cut: Vec<(usize, usize)>,
}

impl Net {
    fn new(n: usize) -> Net {
        let clock = Clock::manual();
        let nodes = (0..n)
            .map(|i| {
                let mut config = Config::default();
                config.cluster.enabled = true;
                config.cluster.node_timeout = TIMEOUT_MS;
                let mut server =
                    ServerState::new(config, clock.clone(), Logger::silent(), Some(i as u64), 300);
                server.tcp_port = 7000 + i as u16;
                super::refresh_myself(&mut server);
                server.cluster.myself_mut().ip = "127.0.0.1".into();
                server
            })
            .collect();
        Net {
            nodes,
            clock,
            up: vec![true; n],
            pairs: HashMap::new(),
            effects: vec![Vec::new(); n],
            cut: Vec::new(),
        }
    }

    fn reachable(&self, a: usize, b: usize) -> bool {
        self.up[a] && self.up[b] && !self.cut.contains(&(a, b)) && !self.cut.contains(&(b, a))
    }

    /// Carries out every node's actions until none is left.
    fn pump(&mut self) {
        for _ in 0..1000 {
            let mut any = false;
            for i in 0..self.nodes.len() {
                let actions = self.nodes[i].cluster.bus.take_actions();
                self.effects[i].append(&mut self.nodes[i].cluster.bus.effects);
                for action in actions {
                    any = true;
                    self.carry_out(i, action);
                }
            }
            if !any {
                return;
            }
        }
        panic!("the messages never stopped");
    }

    fn carry_out(&mut self, i: usize, action: BusAction) {
        match action {
            BusAction::Connect { link, port, .. } => {
                let j = (port - 17000) as usize;
                if !self.up[i] || !self.reachable(i, j) {
                    super::link_lost(&mut self.nodes[i], link);
                    return;
                }
                let peer =
                    super::accepted(&mut self.nodes[j], "127.0.0.1".into(), "127.0.0.1".into());
                self.pairs.insert((i, link), (j, peer));
                self.pairs.insert((j, peer), (i, link));
                super::connected(&mut self.nodes[i], link, "127.0.0.1".into());
            }
            BusAction::Send { link, message } => {
                let Some(&(j, peer)) = self.pairs.get(&(i, link)) else {
                    return;
                };
                if !self.reachable(i, j) {
                    return;
                }
                let frame = embedis_bus::encode(&message);
                let message = embedis_bus::decode(&frame).expect("a valid message");
                super::receive(&mut self.nodes[j], peer, message);
            }
            BusAction::Close { link } => {
                if let Some((j, peer)) = self.pairs.remove(&(i, link)) {
                    self.pairs.remove(&(j, peer));
                    if self.up[j] {
                        super::link_lost(&mut self.nodes[j], peer);
                    }
                }
            }
        }
    }

    /// `ms` of time in ticks of 100 ms, every live node's cron each tick.
    fn run(&mut self, ms: u64) {
        for _ in 0..ms / 100 {
            self.clock.advance(Duration::from_millis(100));
            for i in 0..self.nodes.len() {
                if self.up[i] {
                    super::cron(&mut self.nodes[i]);
                    if self.nodes[i].cluster.bus.update_state {
                        super::update_state(&mut self.nodes[i]);
                    }
                }
            }
            self.pump();
        }
    }

    /// A node dies: its links go silent (the others find out by timeouts).
    fn kill(&mut self, i: usize) {
        self.up[i] = false;
    }

    fn id(&self, i: usize) -> String {
        self.nodes[i].cluster.myself().id.clone()
    }

    /// What node `i` believes of node `j`.
    fn view(&self, i: usize, j: usize) -> Option<&crate::model::cluster_view::Node> {
        let cluster = &self.nodes[i].cluster;
        cluster
            .find(self.id(j).as_bytes())
            .and_then(|n| cluster.node(n))
    }

    /// The ID of the node `i` routes `slot` to.
    fn owner_seen(&self, i: usize, slot: u16) -> Option<String> {
        let cluster = &self.nodes[i].cluster;
        let owner = cluster.owner(slot);
        (owner != NO_NODE).then(|| cluster.node(owner).map(|n| n.id.clone()))?
    }

    /// Primaries 0..p with a third of the slots each, replicas p.. of primary (i - p) % p,
    /// every node met by node 0.
    fn form(p: usize, replicas: usize) -> Net {
        let mut net = Net::new(p * (1 + replicas));
        for i in 1..net.nodes.len() {
            super::start_handshake(
                &mut net.nodes[0],
                "127.0.0.1".into(),
                7000 + i as u16,
                17000 + i as u16,
            );
        }
        for (i, node) in net.nodes.iter_mut().enumerate() {
            node.cluster.end_implicit(true);
            if i < p {
                let (first, last) = (16384 * i / p, 16384 * (i + 1) / p);
                for slot in first..last {
                    node.cluster.set_owner(slot as u16, MYSELF);
                }
                node.cluster.myself_mut().config_epoch = i as u64 + 1;
            }
        }
        net.run(3000);
        for i in p..net.nodes.len() {
            let primary = net.id((i - p) % p);
            let number = net.nodes[i]
                .cluster
                .find(primary.as_bytes())
                .expect("primary known");
            super::set_primary(&mut net.nodes[i], number);
        }
        net.run(3000);
        net
    }
}

#[test]
fn nodes_met_by_one_learn_every_other_and_agree_on_slots() {
    let net = Net::form(3, 1);
    for i in 0..6 {
        assert_eq!(net.nodes[i].cluster.known().count(), 6, "node {i}");
        for j in 0..6 {
            let node = net.view(i, j).expect("known");
            assert!(!node.handshake && !node.pfail && !node.fail);
        }
        for (slot, primary) in [(0u16, 0), (6000, 1), (16383, 2)] {
            assert_eq!(
                net.owner_seen(i, slot),
                Some(net.id(primary)),
                "node {i} slot {slot}"
            );
        }
        assert!(net.nodes[i].cluster.state_ok(), "node {i}");
    }
    assert_eq!(
        net.view(0, 3).map(|n| n.role.clone()),
        Some(Role::Replica(net.id(0)))
    );
}

#[test]
fn a_dead_primary_is_failed_by_the_majority_and_its_replica_takes_over() {
    let mut net = Net::form(3, 1);
    net.kill(0);
    // PFAIL after the node timeout, FAIL once two of three primaries agree, then the
    // replica's election (500-1,000 ms of delay) and its win.
    net.run(TIMEOUT_MS * 5);
    for i in 1..6 {
        let old = net.view(i, 0).expect("known");
        assert!(old.fail, "node {i} sees the dead primary FAIL");
        assert_eq!(
            net.owner_seen(i, 0),
            Some(net.id(3)),
            "node {i} routes slot 0 to the replica"
        );
        assert_eq!(net.view(i, 3).map(|n| n.role.clone()), Some(Role::Primary));
        assert!(net.nodes[i].cluster.state_ok(), "node {i}");
    }
    // The winner's epoch is the highest: its claim beats the old primary's everywhere.
    let epoch = net.view(1, 3).unwrap().config_epoch;
    assert!(epoch > 3);
    assert!(net.effects[3].contains(&BusEffect::Promote));
}

#[test]
fn the_old_primary_comes_back_as_a_replica_of_the_winner() {
    let mut net = Net::form(3, 1);
    net.kill(0);
    net.run(TIMEOUT_MS * 5);
    net.up[0] = true;
    net.run(TIMEOUT_MS * 4);
    let back = &net.nodes[0].cluster;
    assert_eq!(back.myself().role, Role::Replica(net.id(3)));
    assert_eq!(back.slot_count(MYSELF), 0);
    for i in 1..6 {
        assert!(
            !net.view(i, 0).unwrap().fail,
            "node {i} cleared FAIL of a replica"
        );
    }
}

#[test]
fn a_primary_cut_off_from_the_majority_stops_serving() {
    let mut net = Net::form(3, 0);
    for other in 1..3 {
        net.cut.push((0, other));
    }
    net.run(TIMEOUT_MS * 3);
    assert!(
        !net.nodes[0].cluster.state_ok(),
        "the minority side is down"
    );
    assert!(
        !net.nodes[1].cluster.state_ok(),
        "full coverage: node 0's slots are FAIL"
    );
    net.cut.clear();
    net.run(TIMEOUT_MS * 4);
    for i in 0..3 {
        assert!(
            net.nodes[i].cluster.state_ok(),
            "node {i} after the partition healed"
        );
    }
}

#[test]
fn a_manual_failover_pauses_the_primary_and_swaps_the_roles() {
    let mut net = Net::form(3, 1);
    super::manual_failover_start(&mut net.nodes[4], false).expect("accepted");
    net.pump();
    assert!(net.effects[1]
        .iter()
        .any(|e| matches!(e, BusEffect::PauseWrites { .. })));
    net.run(1000);
    assert_eq!(net.nodes[4].cluster.myself().role, Role::Primary);
    assert_eq!(net.nodes[1].cluster.myself().role, Role::Replica(net.id(4)));
    assert!(net.effects[1].contains(&BusEffect::Unpause));
    for i in 0..6 {
        assert_eq!(net.owner_seen(i, 6000), Some(net.id(4)), "node {i}");
    }
}

#[test]
fn a_failover_needs_a_majority_of_primaries() {
    // Two of three primaries die: the survivors cannot reach a quorum for FAIL nor an
    // election; nobody takes the dead shards' slots.
    let mut net = Net::form(3, 1);
    net.kill(0);
    net.kill(1);
    net.run(TIMEOUT_MS * 6);
    assert_eq!(net.owner_seen(2, 0), Some(net.id(0)));
    assert_eq!(net.nodes[3].cluster.myself().role, Role::Replica(net.id(0)));
    assert!(!net.nodes[2].cluster.state_ok());
}

#[test]
fn failure_reports_expire_and_count_only_primaries() {
    let mut net = Net::form(3, 1);
    net.cut.push((0, 1));
    net.run(TIMEOUT_MS * 3);
    // Only node 1 cannot reach node 0: one report, short of the quorum of two.
    let zero = net.view(2, 0).unwrap();
    assert!(!zero.fail);
    assert_eq!(zero.fail_reports.len(), 1);
    assert_eq!(zero.fail_reports[0].0, net.id(1));
    // Healed, node 1 withdraws its report with its next gossip about node 0.
    net.cut.clear();
    net.run(TIMEOUT_MS * 3);
    let now = net.clock.now_ms();
    let id = net.id(0);
    let nodes = &mut net.nodes[2].cluster;
    let zero = nodes.find(id.as_bytes()).unwrap();
    assert_eq!(
        nodes
            .node_mut(zero)
            .unwrap()
            .live_fail_reports(now, 2 * TIMEOUT_MS as i64),
        0
    );
}

#[test]
fn an_orphaned_primary_gets_a_replica_from_the_shard_with_two() {
    // Primary 0 has replicas 3 and 5, primary 1 has replica 4, primary 2 none.
    let mut net = Net::form(3, 1);
    // The formed net has replicas 3, 4, 5 of primaries 0, 1, 2: make 5 a second replica of 0,
    // then kill 4, so that primary 1, which had a replica, is orphaned.
    let primary0 = net.nodes[5].cluster.find(net.id(0).as_bytes()).unwrap();
    super::set_primary(&mut net.nodes[5], primary0);
    net.run(3000);
    net.kill(4);
    // FAIL of the replica, then 5 s of orphanhood before a replica of 0 migrates.
    net.run(TIMEOUT_MS * 3 + 6000);
    let migrated = [3, 5]
        .iter()
        .filter(|&&r| net.nodes[r].cluster.myself().role == Role::Replica(net.id(1)))
        .count();
    assert_eq!(
        migrated, 1,
        "exactly one replica of primary 0 moved to primary 1"
    );
    assert!(net.view(0, 1).unwrap().migrate_to);
}

#[test]
fn a_replica_without_data_for_too_long_does_not_fail_over() {
    let mut net = Net::form(3, 1);
    // Replica 3 last heard from its primary a minute ago: past the validity of
    // repl-ping-replica-period (10 s) + node timeout × cluster-replica-validity-factor (10 s).
    let now = net.clock.now_ms();
    net.nodes[3].repl.follow("127.0.0.1".into(), 7000);
    net.nodes[3].repl.primary.as_mut().unwrap().last_data_ms = now - 60_000;
    net.kill(0);
    net.run(TIMEOUT_MS * 6);
    assert!(net.view(1, 0).unwrap().fail, "the primary is FAIL");
    assert_eq!(net.nodes[3].cluster.myself().role, Role::Replica(net.id(0)));
    assert_eq!(net.owner_seen(1, 0), Some(net.id(0)));
    // With the factor at 0 the age does not matter: the replica is elected.
    net.nodes[3].config.cluster.replica_validity_factor = 0;
    net.run(TIMEOUT_MS * 6);
    assert_eq!(net.nodes[3].cluster.myself().role, Role::Primary);
}
