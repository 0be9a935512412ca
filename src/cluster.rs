//! A Redis Cluster of in-process embedis nodes, for testing cluster clients.
//!
//! [`Cluster::start`] starts `shards` primaries (and `replicas` replicas each), every node a
//! [`Server`] of its own with its own port, clock and faults, in `cluster-enabled` mode. The
//! 16,384 slots are split as `redis-cli --cluster create` splits them (3 shards: 0-5460,
//! 5461-10922, 10923-16383), each primary gets a distinct config epoch, and every node is told every
//! other: the nodes' own bus ([`embedis_core::io::cluster_bus`]) then confirms the topology, and
//! `start` returns once every node agrees. A cluster client pointed at any of
//! [`Cluster::startup_nodes`] finds the rest.
//!
//! Two ready scenarios move a slot the way `redis-cli --cluster reshard` does:
//! [`Cluster::begin_migration`] marks the slot IMPORTING on the receiver and MIGRATING on the
//! giver (a client then gets `-ASK` for keys not on the giver any more), and
//! [`Cluster::finish_migration`] moves its keys with MIGRATE and binds the slot to the receiver on
//! every node (a client then gets `-MOVED`).
//!
//! A third, [`Cluster::fail_over`], is a primary that dies: its replica takes over.
//!
//! Replicas are made by CLUSTER REPLICATE, as Redis makes them: each links to its primary with
//! Redis's replication protocol, copies its data and follows its writes; a client reads from it
//! after READONLY. `start` returns once every replica's link is up.
//!
//! ```
//! let cluster = embedis::Cluster::start(3, 0).unwrap();
//! assert_eq!(cluster.primaries().len(), 3);
//! let slot = embedis::Cluster::slot_of(b"user:{42}");
//! let owner = cluster.owner_of(slot);
//! assert_eq!(cluster.node(owner).command(&["SET", "user:{42}", "x"]), embedis::Reply::Simple("OK".into()));
//! ```

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::{Reply, Server, ServerBuilder};

/// Number of hash slots.
pub const SLOTS: u16 = 16384;

/// Several embedis nodes forming one Redis Cluster (see the module documentation).
pub struct Cluster {
    nodes: Vec<Server>,
    ids: Vec<String>,
    bus_ports: Vec<u16>,
    shards: usize,
    /// The ports of killed nodes, held so that no other server (another test's, starting
    /// meanwhile) takes them: the cluster must keep finding a dead node there, not a stranger.
    held_ports: Vec<socket2::Socket>,
    /// Nodes stopped by [`Cluster::kill`].
    killed: Vec<bool>,
    /// The clock every node runs on, when the cluster was started on one
    /// ([`Cluster::start_on_clock`]).
    clock: Option<crate::Clock>,
}

fn error(text: impl Into<String>) -> io::Error {
    io::Error::other(text.into())
}

/// A command that must succeed on `node`.
fn run(node: &Server, args: &[&str]) -> io::Result<Reply> {
    match node.command(args) {
        Reply::Error(e) | Reply::BlobError(e) => Err(error(format!(
            "{} on {}: {}",
            args.join(" "),
            node.addr(),
            String::from_utf8_lossy(&e)
        ))),
        reply => Ok(reply),
    }
}

fn text(reply: &Reply) -> String {
    match reply {
        Reply::Bulk(b) | Reply::Verbatim { text: b, .. } | Reply::Simple(b) => {
            String::from_utf8_lossy(b).into_owned()
        }
        other => format!("{other:?}"),
    }
}

/// The slot ranges of `shards` primaries as `redis-cli --cluster create` computes them (its
/// single-precision cursor and rounding included, so that the ranges are the same).
fn split_slots(shards: usize) -> Vec<(usize, usize)> {
    let per_node = SLOTS as f32 / shards as f32;
    let mut ranges = Vec::with_capacity(shards);
    let (mut first, mut cursor) = (0usize, 0.0f32);
    for shard in 0..shards {
        let mut last = (cursor + per_node - 1.0).round() as usize;
        if last > SLOTS as usize || shard == shards - 1 {
            last = SLOTS as usize - 1;
        }
        last = last.max(first);
        ranges.push((first, last));
        first = last + 1;
        cursor += per_node;
    }
    ranges
}

/// A free TCP port on 127.0.0.1 for a node's bus (the client port + 10000 may not exist).
fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Cluster {
    /// Starts `shards` primaries with `replicas` replicas each (see the module documentation).
    pub fn start(shards: usize, replicas: usize) -> io::Result<Cluster> {
        Self::start_with(shards, replicas, |_, builder| builder)
    }

    /// As [`Cluster::start`], letting `configure` adjust each node's builder (its index:
    /// primaries first, then the replicas of primary 0, of primary 1…).
    pub fn start_with(
        shards: usize,
        replicas: usize,
        mut configure: impl FnMut(usize, ServerBuilder) -> ServerBuilder,
    ) -> io::Result<Cluster> {
        if shards == 0 {
            return Err(error("a cluster needs at least one shard"));
        }
        let total = shards * (1 + replicas);
        let mut nodes = Vec::with_capacity(total);
        let mut bus_ports = Vec::with_capacity(total);
        for index in 0..total {
            let bus_port = free_port()?;
            bus_ports.push(bus_port);
            let builder = Server::builder()
                .group_member()
                .config("cluster-enabled", "yes")
                .and_then(|b| b.config("cluster-port", &bus_port.to_string()))
                .and_then(|b| b.config("cluster-announce-ip", "127.0.0.1"))
                .map_err(error)?;
            nodes.push(configure(index, builder).start()?);
        }
        let ids = nodes
            .iter()
            .map(|n| run(n, &["CLUSTER", "MYID"]).map(|r| text(&r)))
            .collect::<io::Result<Vec<_>>>()?;
        let killed = vec![false; nodes.len()];
        let cluster = Cluster {
            nodes,
            ids,
            bus_ports,
            shards,
            held_ports: Vec::new(),
            killed,
            clock: None,
        };
        cluster.arrange(replicas)?;
        Ok(cluster)
    }

    /// As [`Cluster::start`], every node on `clock` — typically [`crate::Clock::manual`], so
    /// that a test decides when the cluster's timeouts pass: a node killed ([`Cluster::kill`])
    /// is detected failing, and its replica elected, only as [`Cluster::advance_clock`] moves
    /// the clock past `cluster-node-timeout` (set it with `configure`; Redis's default is 15 s).
    pub fn start_on_clock(
        shards: usize,
        replicas: usize,
        clock: crate::Clock,
        mut configure: impl FnMut(usize, ServerBuilder) -> ServerBuilder,
    ) -> io::Result<Cluster> {
        let shared = clock.clone();
        let mut cluster = Self::start_with_clock(shards, replicas, &shared, &mut configure)?;
        cluster.clock = Some(clock);
        Ok(cluster)
    }

    fn start_with_clock(
        shards: usize,
        replicas: usize,
        clock: &crate::Clock,
        configure: &mut impl FnMut(usize, ServerBuilder) -> ServerBuilder,
    ) -> io::Result<Cluster> {
        // A primary calls the cluster `ok` 2 s (of its clock) after it started, as in Redis:
        // the clock moves on in the background while the nodes are arranged.
        let ticking = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let ticker = {
            let (clock, ticking) = (clock.clone(), ticking.clone());
            std::thread::spawn(move || {
                while ticking.load(std::sync::atomic::Ordering::Relaxed) {
                    clock.advance(Duration::from_millis(100));
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let started = Self::start_with(shards, replicas, |i, b| {
            configure(i, b.clock(clock.clone()))
        });
        ticking.store(false, std::sync::atomic::Ordering::Relaxed);
        let _ = ticker.join();
        started
    }

    /// Tells every node the topology: slots and epochs of the primaries, every node met by
    /// every other, then the replicas' primaries.
    fn arrange(&self, replicas: usize) -> io::Result<()> {
        let ranges = split_slots(self.shards);
        for (index, node) in self.nodes.iter().enumerate() {
            if let Some(&(first, last)) = ranges.get(index) {
                let (first, last) = (first.to_string(), last.to_string());
                run(node, &["CLUSTER", "ADDSLOTSRANGE", &first, &last])?;
                run(
                    node,
                    &["CLUSTER", "SET-CONFIG-EPOCH", &(index + 1).to_string()],
                )?;
            } else {
                // A replica serves nothing by itself.
                run(node, &["CLUSTER", "FLUSHSLOTS"])?;
            }
        }
        for node in &self.nodes {
            for (other, bus) in self.nodes.iter().zip(&self.bus_ports) {
                if node.addr() != other.addr() {
                    let port = other.addr().port().to_string();
                    let bus = bus.to_string();
                    run(node, &["CLUSTER", "MEET", "127.0.0.1", &port, &bus])?;
                }
            }
        }
        self.forming("every node to know every other", |c| c.agree_on_nodes())?;
        for index in self.shards..self.nodes.len() {
            let primary = (index - self.shards) / replicas.max(1);
            run(
                &self.nodes[index],
                &["CLUSTER", "REPLICATE", &self.ids[primary]],
            )?;
        }
        self.forming("the nodes' views to agree", |c| c.views_agree())?;
        self.forming("the replicas' links to be up", |c| {
            c.nodes[c.shards..].iter().all(Server::link_up)
        })?;
        // As Redis, a primary calls the cluster `ok` no sooner than 2 s after it started.
        self.forming("cluster_state:ok on every node", |c| {
            c.nodes.iter().all(Self::state_ok)
        })
    }

    /// A wait of the cluster's formation: up to 30 seconds (it takes about 2 here; a loaded
    /// CI machine once took more than 10), and a failure names the step and shows every
    /// node's view.
    fn forming(&self, what: &str, done: impl FnMut(&Cluster) -> bool) -> io::Result<()> {
        self.wait_at_most(Duration::from_secs(30), done)
            .map_err(|e| {
                error(format!(
                    "{e}, waiting for {what}; the views:\n{}",
                    self.views()
                ))
            })
    }

    /// The node's CLUSTER INFO says `cluster_state:ok`.
    fn state_ok(node: &Server) -> bool {
        text(&node.command(&["CLUSTER", "INFO"])).contains("cluster_state:ok")
    }

    /// Each node's CLUSTER NODES reduced to what must agree: ID, address, role, primary and
    /// slots of every node, sorted.
    fn signature(node: &Server) -> Vec<String> {
        let nodes = text(&node.command(&["CLUSTER", "NODES"]));
        let mut lines: Vec<String> = nodes
            .lines()
            .map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                let role = if fields[2].contains("slave") {
                    "slave"
                } else {
                    "master"
                };
                let handshake = fields[2].contains("handshake");
                let mut sig = vec![fields[0], fields[1], role, fields[3]];
                if handshake {
                    sig.push("handshake");
                }
                sig.extend(fields[8..].iter().filter(|f| !f.starts_with('[')));
                sig.join(" ")
            })
            .collect();
        lines.sort();
        lines
    }

    fn agree_on_nodes(&self) -> bool {
        self.nodes.iter().all(|n| {
            let sig = Self::signature(n);
            sig.len() == self.nodes.len() && !sig.iter().any(|l| l.contains("handshake"))
        })
    }

    /// Waits until every node's view of the cluster is the same (IDs, addresses, roles and
    /// slots), as `redis-cli --cluster` waits after changing it. Fails after 10 seconds.
    pub fn wait_consistent(&self) -> io::Result<()> {
        self.wait_until(|c| c.views_agree())
    }

    fn views_agree(&self) -> bool {
        let first = Self::signature(&self.nodes[0]);
        first.len() == self.nodes.len() && self.nodes.iter().all(|n| Self::signature(n) == first)
    }

    /// Waits for `done`, at most 10 seconds. On a cluster started on a clock, the clock moves
    /// on with the real time waited, as time passes for a client that waits: an election
    /// scheduled just after the test's last [`Cluster::advance_clock`] step still happens (on
    /// a busy machine the nodes may reach it only then).
    fn wait_until(&self, done: impl FnMut(&Cluster) -> bool) -> io::Result<()> {
        self.wait_at_most(Duration::from_secs(10), done)
    }

    fn wait_at_most(
        &self,
        limit: Duration,
        mut done: impl FnMut(&Cluster) -> bool,
    ) -> io::Result<()> {
        let start = Instant::now();
        let step = Duration::from_millis(20);
        while !done(self) {
            if start.elapsed() > limit {
                return Err(error(format!(
                    "the cluster's nodes did not agree within {} seconds",
                    limit.as_secs()
                )));
            }
            std::thread::sleep(step);
            if let Some(clock) = &self.clock {
                clock.advance(step);
            }
        }
        Ok(())
    }

    /// Stops node `index` at once, as SIGKILL stops a process: no save, its clients and bus
    /// links drop. The other nodes find out by the cluster's own failure detection (PFAIL after
    /// `cluster-node-timeout` without a pong, FAIL once a majority of primaries agree) and a
    /// killed primary's replica is elected in its place. Commands sent to a killed node panic.
    pub fn kill(&mut self, index: usize) {
        let client_port = self.nodes[index].addr().port();
        self.nodes[index].stop();
        self.killed[index] = true;
        // Bound, not listening: what dials it is refused, as by a dead process.
        for port in [client_port, self.bus_ports[index]] {
            if let Some(socket) = crate::ports::hold(port) {
                self.held_ports.push(socket);
            }
        }
    }

    /// Moves the clock of a cluster started with [`Cluster::start_on_clock`] on by `by`, in
    /// steps of 100 ms with a few real milliseconds between them, so that the nodes' bus
    /// ticks, pings, failure reports and elections happen as they would over that much time.
    ///
    /// # Panics
    /// If the cluster was not started on one clock.
    pub fn advance_clock(&self, by: Duration) {
        let clock = self
            .clock
            .as_ref()
            .expect("Cluster::advance_clock needs Cluster::start_on_clock");
        let step = Duration::from_millis(100);
        let mut left = by;
        while !left.is_zero() {
            let now = left.min(step);
            clock.advance(now);
            left -= now;
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until every live node routes `slot` to node `index` (after a failover, say).
    /// Fails after 10 seconds. On a cluster started on a clock, that clock moves on with the
    /// real time waited.
    pub fn wait_for_owner(&self, slot: u16, index: usize) -> io::Result<()> {
        let id = self.ids[index].clone();
        self.wait_until(|c| {
            c.live()
                .all(|node| Self::slot_owner_id(node, slot).as_deref() == Some(id.as_str()))
        })
        .map_err(|e| error(format!("{e}; the live nodes' views:\n{}", self.views())))
    }

    /// Every live node's CLUSTER NODES, for a failure's message.
    fn views(&self) -> String {
        self.live()
            .map(|node| match node.command(&["CLUSTER", "NODES"]) {
                Reply::Bulk(text) | Reply::Verbatim { text, .. } => {
                    format!("{}:\n{}", node.addr(), String::from_utf8_lossy(&text))
                }
                other => format!("{}: {other:?}\n", node.addr()),
            })
            .collect()
    }

    /// The nodes not killed.
    fn live(&self) -> impl Iterator<Item = &Server> {
        self.nodes
            .iter()
            .zip(&self.killed)
            .filter(|(_, killed)| !**killed)
            .map(|(node, _)| node)
    }

    /// Every node: the primaries first (index = shard), then the replicas.
    pub fn nodes(&self) -> &[Server] {
        &self.nodes
    }

    /// Node `index` (see [`Cluster::nodes`]).
    pub fn node(&self, index: usize) -> &Server {
        &self.nodes[index]
    }

    /// The primaries, one per shard.
    pub fn primaries(&self) -> &[Server] {
        &self.nodes[..self.shards]
    }

    /// The cluster node ID of node `index`.
    pub fn node_id(&self, index: usize) -> &str {
        &self.ids[index]
    }

    /// `redis://127.0.0.1:<port>/` of every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Server::url).collect()
    }

    /// Every node's address: the startup nodes of a cluster client.
    pub fn startup_nodes(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(Server::addr).collect()
    }

    /// The hash slot of `key` (hash tags included), as CLUSTER KEYSLOT computes it.
    pub fn slot_of(key: &[u8]) -> u16 {
        embedis_core::model::cluster_view::key_slot(key)
    }

    /// The index of the primary serving `slot`, as the first live node sees it.
    pub fn owner_of(&self, slot: u16) -> usize {
        let observer = self.live().next().expect("a live node");
        let slots = observer.command(&["CLUSTER", "SLOTS"]);
        let Reply::Array(ranges) = slots else {
            panic!("CLUSTER SLOTS: {slots:?}");
        };
        for range in ranges {
            let Reply::Array(items) = range else { continue };
            let (Reply::Integer(first), Reply::Integer(last)) = (&items[0], &items[1]) else {
                continue;
            };
            if (*first..=*last).contains(&(slot as i64)) {
                let Reply::Array(primary) = &items[2] else {
                    continue;
                };
                let id = text(&primary[2]);
                return self.ids.iter().position(|i| *i == id).expect("known node");
            }
        }
        panic!("slot {slot} is not served")
    }

    /// A failed primary, as a ready scenario: primary `shard` stops answering (paused, as a
    /// hung process; its clients wait), its first replica takes its slots over (CLUSTER
    /// FAILOVER TAKEOVER: a new config epoch, and it stops replicating), and the call returns
    /// once every other node routes the shard's slots to it — clients then get `-MOVED` to the
    /// new primary. Writes the replica had not received are lost. Returns the new primary's
    /// index.
    pub fn fail_over(&self, shard: usize) -> io::Result<usize> {
        let per_shard = (self.nodes.len() - self.shards) / self.shards;
        if shard >= self.shards || per_shard == 0 {
            return Err(error(format!(
                "shard {shard} has no replica to fail over to"
            )));
        }
        let replica = self.shards + shard * per_shard;
        let slot = split_slots(self.shards)[shard].0 as u16;
        self.nodes[shard]
            .faults()
            .pause(Duration::from_secs(24 * 3600));
        run(&self.nodes[replica], &["CLUSTER", "FAILOVER", "TAKEOVER"])?;
        let new_id = self.ids[replica].clone();
        self.wait_until(|c| {
            c.nodes
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != shard)
                .all(|(_, node)| {
                    Self::slot_owner_id(node, slot).as_deref() == Some(new_id.as_str())
                })
        })?;
        Ok(replica)
    }

    /// The ID of the node `node` routes `slot` to (from its CLUSTER SLOTS).
    fn slot_owner_id(node: &Server, slot: u16) -> Option<String> {
        let Reply::Array(ranges) = node.command(&["CLUSTER", "SLOTS"]) else {
            return None;
        };
        ranges.iter().find_map(|range| {
            let Reply::Array(items) = range else {
                return None;
            };
            let (Reply::Integer(first), Reply::Integer(last)) = (&items[0], &items[1]) else {
                return None;
            };
            if !(*first..=*last).contains(&(slot as i64)) {
                return None;
            }
            let Reply::Array(primary) = &items[2] else {
                return None;
            };
            Some(text(&primary[2]))
        })
    }

    /// Starts moving `slot` from primary `from` to primary `to`: IMPORTING on `to`, MIGRATING
    /// on `from`. Keys of the slot still on `from` are served there; others get `-ASK` to `to`.
    pub fn begin_migration(&self, slot: u16, from: usize, to: usize) -> io::Result<()> {
        let slot = slot.to_string();
        run(
            &self.nodes[to],
            &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &self.ids[from]],
        )?;
        run(
            &self.nodes[from],
            &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &self.ids[to]],
        )?;
        Ok(())
    }

    /// Moves one key of a slot in migration from `from` to `to` (MIGRATE), as a resharding
    /// tool does key by key: that key is then served by `to` after `-ASK`.
    pub fn migrate_key(&self, key: &str, from: usize, to: usize) -> io::Result<()> {
        let port = self.nodes[to].addr().port().to_string();
        run(
            &self.nodes[from],
            &["MIGRATE", "127.0.0.1", &port, key, "0", "5000"],
        )?;
        Ok(())
    }

    /// Finishes moving `slot` from `from` to `to`: every key still on `from` goes over with
    /// MIGRATE, then every node binds the slot to `to` (`to` first, as redis-cli does).
    /// Clients of `from` then get `-MOVED`.
    pub fn finish_migration(&self, slot: u16, from: usize, to: usize) -> io::Result<()> {
        let slot_text = slot.to_string();
        let port = self.nodes[to].addr().port().to_string();
        loop {
            let keys = run(
                &self.nodes[from],
                &["CLUSTER", "GETKEYSINSLOT", &slot_text, "100"],
            )?;
            let Reply::Array(keys) = keys else {
                return Err(error("GETKEYSINSLOT did not answer an array"));
            };
            if keys.is_empty() {
                break;
            }
            let names: Vec<String> = keys.iter().map(text).collect();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend(names.iter().map(String::as_str));
            run(&self.nodes[from], &args)?;
        }
        let to_id = self.ids[to].clone();
        run(
            &self.nodes[to],
            &["CLUSTER", "SETSLOT", &slot_text, "NODE", &to_id],
        )?;
        run(
            &self.nodes[from],
            &["CLUSTER", "SETSLOT", &slot_text, "NODE", &to_id],
        )?;
        for (index, node) in self.nodes.iter().enumerate() {
            if index != to && index != from && index < self.shards {
                run(node, &["CLUSTER", "SETSLOT", &slot_text, "NODE", &to_id])?;
            }
        }
        self.wait_consistent()
    }

    /// Stops every node.
    pub fn shutdown(self) {
        for node in self.nodes {
            node.shutdown();
        }
    }
}

impl std::ops::Index<usize> for Cluster {
    type Output = Server;

    fn index(&self, index: usize) -> &Server {
        &self.nodes[index]
    }
}
