//! embedis and redis-server 7.0 in one Redis Cluster: each meets the other over Redis's own
//! bus, `redis-cli --cluster create` builds a cluster of both, and when a primary dies
//! (SIGKILL) its replica — of the other implementation — is promoted by the cluster's own
//! failure detection and election, in both directions.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::client::Client;
use crate::support::{find_binary, free_port};

const EMBEDIS: &str = env!("CARGO_BIN_EXE_embedis-server");
const NODE_TIMEOUT_MS: u64 = 1000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Redis,
    Embedis,
    /// embedis with `io-threads 2`: the executor thread hosts the bus and the replica link.
    EmbedisThreaded,
}

/// A cluster node of either implementation, in a directory of its own, killed (SIGKILL) on
/// drop. Its bus is on the client port + 10000, where `redis-cli --cluster create` meets nodes.
pub struct Node {
    child: std::process::Child,
    pub port: u16,
    dir: std::path::PathBuf,
}

impl Node {
    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port whose bus port (+ 10000) is free too.
fn port_pair() -> u16 {
    loop {
        let port = free_port();
        if port < 55_000 && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

fn start(kind: Kind, test: &str) -> Option<Node> {
    let binary = match kind {
        Kind::Redis => find_binary("redis-server", test)?,
        Kind::Embedis | Kind::EmbedisThreaded => EMBEDIS.to_string(),
    };
    for _attempt in 0..10 {
        let port = port_pair();
        let dir = std::env::temp_dir().join(format!("embedis-mixed-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let args = [
            "--port".to_string(),
            port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--save".into(),
            "".into(),
            "--cluster-enabled".into(),
            "yes".into(),
            "--cluster-node-timeout".into(),
            NODE_TIMEOUT_MS.to_string(),
            "--dir".into(),
            dir.display().to_string(),
            "--logfile".into(),
            "log.txt".into(),
        ];
        // embedis as Redis 7.0, so that a redis-server 7.0 replica loads its RDB (version 10).
        let own: &[&str] = match kind {
            Kind::EmbedisThreaded => &["--io-threads", "2", "--compat-version", "7.0"],
            Kind::Embedis => &["--compat-version", "7.0"],
            Kind::Redis => &[],
        };
        let child = Command::new(&binary).args(&args).args(own).spawn().unwrap();
        let node = Node { child, port, dir };
        let up = Instant::now();
        while up.elapsed() < Duration::from_secs(5) {
            if std::net::TcpStream::connect(node.addr()).is_ok() {
                return Some(node);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("{test}: a cluster node did not start");
}

/// One node of each kind given, in order; None if redis-server is not installed.
fn start_all(kinds: &[Kind], test: &str) -> Option<Vec<Node>> {
    kinds.iter().map(|&k| start(k, test)).collect()
}

fn text(node: &Node, args: &[&str]) -> String {
    Client::connect(node.addr()).text(args)
}

fn meet(node: &Node, other: &Node) {
    let port = other.port.to_string();
    let bus = (other.port + 10_000).to_string();
    let reply = text(node, &["CLUSTER", "MEET", "127.0.0.1", &port, &bus]);
    assert_eq!(reply, "OK");
}

fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < within, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}

/// Lines of CLUSTER NODES of `node` (none in handshake).
fn known_nodes(node: &Node) -> Vec<String> {
    text(node, &["CLUSTER", "NODES"])
        .lines()
        .filter(|l| !l.contains("handshake"))
        .map(String::from)
        .collect()
}

#[test]
fn redis_and_embedis_meet_each_other_both_ways() {
    let test = "redis_and_embedis_meet_each_other_both_ways";
    let kinds = [Kind::Redis, Kind::Embedis, Kind::Embedis, Kind::Redis];
    let Some(nodes) = start_all(&kinds, test) else {
        return;
    };
    // A redis-server meets an embedis node, an embedis node meets a redis-server, and the
    // last meets the first's peer: gossip does the rest.
    meet(&nodes[0], &nodes[1]);
    meet(&nodes[2], &nodes[3]);
    meet(&nodes[3], &nodes[0]);
    for node in &nodes {
        wait_until(
            "every node knows every other",
            Duration::from_secs(10),
            || known_nodes(node).len() == 4,
        );
    }
    let ids: Vec<String> = nodes
        .iter()
        .map(|n| text(n, &["CLUSTER", "MYID"]))
        .collect();
    for node in &nodes {
        let lines = known_nodes(node);
        for id in &ids {
            assert!(
                lines.iter().any(|l| l.starts_with(id.as_str())),
                "{lines:?}"
            );
        }
    }
}

#[test]
fn redis_cli_creates_a_mixed_cluster() {
    let test = "redis_cli_creates_a_mixed_cluster";
    let Some(cli) = find_binary("redis-cli", test) else {
        return;
    };
    let kinds = [Kind::Embedis, Kind::Redis, Kind::Embedis];
    let Some(nodes) = start_all(&kinds, test) else {
        return;
    };
    // Fresh nodes: redis-cli meets them itself, on port + 10000.
    let addrs: Vec<String> = nodes.iter().map(|n| n.addr().to_string()).collect();
    let mut args = vec!["--cluster".to_string(), "create".to_string()];
    args.extend(addrs.iter().cloned());
    args.push("--cluster-yes".to_string());
    let create = Command::new(&cli).args(&args).output().unwrap();
    let out = String::from_utf8_lossy(&create.stdout);
    assert!(out.contains("[OK] All 16384 slots covered."), "{out}");
    for node in &nodes {
        wait_until("cluster_state:ok", Duration::from_secs(10), || {
            text(node, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
        });
    }
    // A key written through one implementation is served by whichever owns its slot.
    let check = Command::new(&cli)
        .args(["--cluster", "check", &addrs[1]])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(
        out.contains("[OK] All nodes agree about slots configuration."),
        "{out}"
    );
}

/// Three shards — primaries redis, `embedis`, redis — each with a replica of the other kind.
fn mixed_shards(test: &str, embedis: Kind) -> Option<Vec<Node>> {
    use Kind::*;
    let kinds = [Redis, embedis, Redis, embedis, Redis, embedis];
    let nodes = start_all(&kinds, test)?;
    for (i, range) in [("0", "5460"), ("5461", "10922"), ("10923", "16383")]
        .iter()
        .enumerate()
    {
        assert_eq!(
            text(&nodes[i], &["CLUSTER", "ADDSLOTSRANGE", range.0, range.1]),
            "OK"
        );
    }
    for other in &nodes[1..] {
        meet(&nodes[0], other);
    }
    for node in &nodes {
        wait_until("the full mesh", Duration::from_secs(10), || {
            known_nodes(node).len() == 6
        });
    }
    for replica in 3..6 {
        let primary = text(&nodes[replica - 3], &["CLUSTER", "MYID"]);
        assert_eq!(
            text(&nodes[replica], &["CLUSTER", "REPLICATE", &primary]),
            "OK"
        );
    }
    for node in &nodes {
        wait_until("cluster_state:ok", Duration::from_secs(15), || {
            text(node, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
        });
    }
    for replica in &nodes[3..] {
        wait_until("replication link up", Duration::from_secs(10), || {
            text(replica, &["INFO", "replication"]).contains("master_link_status:up")
        });
    }
    Some(nodes)
}

/// Kills `nodes[dead]` and waits for `nodes[heir]` to be a primary serving `slot` in every
/// survivor's view; returns how long it took.
fn fail_over(nodes: &mut [Option<Node>], dead: usize, heir: usize, slot: &str) -> Duration {
    drop(nodes[dead].take());
    let heir_id = text(nodes[heir].as_ref().unwrap(), &["CLUSTER", "MYID"]);
    wait_until("the replica takes over", Duration::from_secs(20), || {
        nodes.iter().flatten().all(|node| {
            let nodes_text = text(node, &["CLUSTER", "NODES"]);
            nodes_text.lines().any(|l| {
                l.starts_with(heir_id.as_str())
                    && l.contains("master")
                    && l.split(' ').skip(8).any(|r| {
                        let (a, b) = r.split_once('-').unwrap_or((r, r));
                        let s: u32 = slot.parse().unwrap();
                        a.parse::<u32>().is_ok_and(|a| a <= s)
                            && b.parse::<u32>().is_ok_and(|b| s <= b)
                    })
            })
        })
    })
}

#[test]
fn a_killed_primary_is_replaced_by_its_replica_across_implementations() {
    let test = "a_killed_primary_is_replaced_by_its_replica_across_implementations";
    kill_primaries_both_ways(test, Kind::Embedis);
}

#[test]
fn threaded_embedis_nodes_detect_failures_and_fail_over_too() {
    let test = "threaded_embedis_nodes_detect_failures_and_fail_over_too";
    kill_primaries_both_ways(test, Kind::EmbedisThreaded);
}

/// The embedis primary dies and its redis-server replica is elected; then a redis-server
/// primary dies and its embedis replica is elected.
fn kill_primaries_both_ways(test: &str, embedis: Kind) {
    let Some(nodes) = mixed_shards(test, embedis) else {
        return;
    };
    // A key of the embedis shard, written on its primary and replicated before the kill.
    let key = (0..)
        .map(|i| format!("key{i}"))
        .find(|k| {
            let slot = text(&nodes[1], &["CLUSTER", "KEYSLOT", k]);
            let slot: u32 = slot.trim().trim_start_matches(':').parse().unwrap();
            (5461..=10922).contains(&slot)
        })
        .unwrap();
    // WAIT on the writer's own connection: it counts the replicas that have that client's
    // writes (Redis's `c->woff`), so on a fresh connection it would answer at once.
    let mut writer = Client::connect(nodes[1].addr());
    assert_eq!(writer.text(&["SET", &key, "v1"]), "OK");
    assert_eq!(writer.cmd(&["WAIT", "1", "2000"]), ":1\r\n");
    let mut nodes: Vec<Option<Node>> = nodes.into_iter().map(Some).collect();
    // The embedis primary dies: its redis-server replica is elected.
    let took = fail_over(&mut nodes, 1, 4, "6000");
    assert!(
        took < Duration::from_millis(NODE_TIMEOUT_MS * 10),
        "{took:?}"
    );
    let new_primary = nodes[4].as_ref().unwrap();
    assert_eq!(text(new_primary, &["GET", &key]), "v1");
    // The redis-server primary dies: its embedis replica is elected.
    let took = fail_over(&mut nodes, 0, 3, "100");
    assert!(
        took < Duration::from_millis(NODE_TIMEOUT_MS * 10),
        "{took:?}"
    );
    let embedis_primary = nodes[3].as_ref().unwrap();
    // "b" hashes to slot 3300, the first shard's.
    assert_eq!(text(embedis_primary, &["SET", "{b}x", "1"]), "OK");
}
