//! Cluster mode: embedis nodes against a real Redis Cluster and real cluster clients.
//!
//! - `replies_match_a_real_two_node_cluster`: two redis-server cluster nodes and two embedis
//!   nodes get the same topology; the same commands (redirections, CROSSSLOT, ASK and TRYAGAIN
//!   during a migration, scripts, CLUSTER's errors) must answer the same bytes, node IDs and
//!   ports aside.
//! - `in_process_cluster_*`: `embedis::Cluster` — MOVED and ASK, `redis-cli --cluster check`,
//!   `redis-cli -c`.
//! - `redis_py_cluster_client` / `ioredis_cluster_client`: redis-py's `RedisCluster` and
//!   ioredis's `Cluster` on a 3-shard embedis cluster (tests/python/cluster_client.py,
//!   tests/node/cluster_client.js): reads, writes, pipelines, a Redlock-style lock, a MOVED after
//!   resharding and an ASK during a migration; and both across an automatic failover on the
//!   cluster's manual clock (tests/python/cluster_failover.py, tests/node/cluster_failover.js).
//!
//! Tests needing redis-server, redis-cli, redis-py or ioredis skip loudly without them, unless
//! EMBEDIS_REQUIRE_REDIS=1.

use crate::support;
use support::lossy;

use std::process::Command;
use std::time::{Duration, Instant};

use embedis::{Cluster, Reply};
use support::{Conn, RedisServer};

/// One system of two cluster nodes (A serves 0-8191, B 8192-16383) and what to replace in its
/// replies so that two systems compare.
struct Pair {
    a: Conn,
    b: Conn,
    replace: Vec<(String, String)>,
}

impl Pair {
    fn new(a: std::net::SocketAddr, b: std::net::SocketAddr, bus: (u16, u16)) -> Pair {
        let mut conn_a = Conn::connect(a).unwrap();
        let mut conn_b = Conn::connect(b).unwrap();
        let bulk = |reply: Vec<u8>| {
            let t = lossy(&reply);
            t.lines().nth(1).unwrap_or_default().to_string()
        };
        let id_a = bulk(conn_a.command(&["CLUSTER", "MYID"]));
        let id_b = bulk(conn_b.command(&["CLUSTER", "MYID"]));
        let replace = vec![
            (id_a, "<ID-A>".to_string()),
            (id_b, "<ID-B>".to_string()),
            (bus.0.to_string(), "<BUS-A>".to_string()),
            (bus.1.to_string(), "<BUS-B>".to_string()),
            (a.port().to_string(), "<PORT-A>".to_string()),
            (b.port().to_string(), "<PORT-B>".to_string()),
        ];
        Pair {
            a: conn_a,
            b: conn_b,
            replace,
        }
    }

    fn unmask(&self, args: &[&str]) -> Vec<String> {
        args.iter()
            .map(|arg| {
                let mut arg = arg.to_string();
                for (real, mask) in &self.replace {
                    arg = arg.replace(mask, real);
                }
                arg
            })
            .collect()
    }

    fn mask(&self, reply: &[u8]) -> String {
        let mut reply = lossy(reply);
        for (real, mask) in &self.replace {
            reply = reply.replace(real, mask);
        }
        reply
    }

    fn on(&mut self, node: char, args: &[&str]) -> String {
        let args = self.unmask(args);
        let reply = match node {
            'A' => self.a.command(&args),
            _ => self.b.command(&args),
        };
        self.mask(&reply)
    }

    /// Sets the topology up: slots, epochs, MEET, then waits until both nodes see each other's
    /// slots and call the cluster ok.
    fn join(&mut self, b_port: u16, b_bus: u16) {
        self.a.command(&["CLUSTER", "ADDSLOTSRANGE", "0", "8191"]);
        self.b
            .command(&["CLUSTER", "ADDSLOTSRANGE", "8192", "16383"]);
        self.a.command(&["CLUSTER", "SET-CONFIG-EPOCH", "1"]);
        self.b.command(&["CLUSTER", "SET-CONFIG-EPOCH", "2"]);
        let (port, bus) = (b_port.to_string(), b_bus.to_string());
        let met = self
            .a
            .command(&["CLUSTER", "MEET", "127.0.0.1", &port, &bus]);
        assert_eq!(lossy(&met), "+OK\r\n");
        let start = Instant::now();
        loop {
            let a = lossy(&self.a.command(&["CLUSTER", "NODES"]));
            let b = lossy(&self.b.command(&["CLUSTER", "NODES"]));
            let ia = lossy(&self.a.command(&["CLUSTER", "INFO"]));
            let ib = lossy(&self.b.command(&["CLUSTER", "INFO"]));
            let joined = |nodes: &str| {
                nodes.contains(" 0-8191")
                    && nodes.contains(" 8192-16383")
                    && !nodes.contains("handshake")
                    && nodes.contains("127.0.0.1:")
                    && !nodes.contains(" :")
            };
            if joined(&a) && joined(&b) && ia.contains("state:ok") && ib.contains("state:ok") {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the nodes did not join:\n{a}\n{b}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// CLUSTER NODES reduced to what both systems share: ID, address, flags, primary, epoch, link
/// state and slots (not the ping and pong times).
fn nodes_shape(reply: &str) -> Vec<String> {
    let mut lines: Vec<String> = reply
        .lines()
        .filter(|l| l.contains("<ID-"))
        .map(|line| {
            let line = line.trim_start_matches(|c: char| c == '$' || c.is_ascii_digit());
            let fields: Vec<&str> = line.split(' ').collect();
            let mut kept = vec![fields[0], fields[1], fields[2], fields[3], fields[7]];
            kept.extend(&fields[8..]);
            kept.join(" ")
        })
        .collect();
    lines.sort();
    lines
}

/// The commands both systems must answer identically, as (node, command).
const SCRIPT: &[(char, &[&str])] = &[
    ('A', &["SET", "b", "1"]),
    ('A', &["GET", "b"]),
    ('A', &["GET", "foo"]),
    ('A', &["SET", "a", "1"]),
    ('B', &["SET", "foo", "bar"]),
    ('B', &["GET", "b"]),
    ('A', &["MGET", "b", "foo"]),
    ('A', &["MGET", "b", "{b}x"]),
    ('A', &["EXISTS", "b", "b"]),
    ('A', &["DEL", "foo", "b"]),
    ('A', &["SPUBLISH", "foo", "hi"]),
    ('A', &["SPUBLISH", "b", "hi"]),
    ('A', &["PING"]),
    ('A', &["DBSIZE"]),
    ('A', &["MULTI"]),
    ('A', &["SET", "foo", "1"]),
    ('A', &["EXEC"]),
    ('A', &["MULTI"]),
    ('A', &["INCR", "b"]),
    ('A', &["GET", "{b}x"]),
    ('A', &["EXEC"]),
    ('A', &["EVAL", "return redis.call('get', KEYS[1])", "1", "foo"]),
    ('A', &["EVAL", "return redis.call('get', KEYS[1])", "2", "b", "foo"]),
    ('A', &["EVAL", "return redis.call('get', 'foo')", "0"]),
    ('A', &["EVAL", "return redis.call('get', '{b}x')", "1", "b"]),
    ('A', &["EVAL", "redis.call('get', KEYS[1]); return redis.call('get', 'c')", "1", "b"]),
    ('A', &["EVAL", "redis.call('get', 'b'); return redis.call('get', 'c')", "0"]),
    ('A', &["EVAL", "#!lua\nredis.call('get', 'b'); return redis.call('get', 'c')", "0"]),
    ('A', &["EVAL", "#!lua\nredis.call('get', 'b'); return redis.call('get', 'foo')", "0"]),
    ('A', &["EVAL", "#!lua flags=allow-cross-slot-keys\nredis.call('get', 'b'); return redis.call('get', 'c')", "0"]),
    ('A', &["EVAL", "return redis.call('cluster', 'reset')", "0"]),
    // A script that declares no-cluster is refused on a cluster node.
    ('A', &["EVAL", "#!lua flags=no-cluster\nreturn 1", "0"]),
    ('A', &["EVAL", "#!lua flags=no-writes,no-cluster\nreturn 1", "0"]),
    // Where MOVED sends a client: IP, hostname (`?`: B has none), or no endpoint at all; and
    // what CLUSTER SLOTS lists beside the preferred endpoint.
    ('A', &["CONFIG", "SET", "cluster-preferred-endpoint-type", "hostname"]),
    ('A', &["GET", "foo"]),
    ('A', &["CLUSTER", "SLOTS"]),
    ('A', &["CONFIG", "SET", "cluster-preferred-endpoint-type", "unknown-endpoint"]),
    ('A', &["GET", "foo"]),
    ('A', &["CLUSTER", "SLOTS"]),
    ('A', &["CONFIG", "SET", "cluster-preferred-endpoint-type", "ip"]),
    ('A', &["CLUSTER", "COUNT-FAILURE-REPORTS", "<ID-B>"]),
    ('A', &["CLUSTER", "KEYSLOT", "{}"]),
    ('A', &["CLUSTER", "KEYSLOT", "{a}b"]),
    ('A', &["CLUSTER", "KEYSLOT", "a{}{b}"]),
    ('A', &["CLUSTER", "KEYSLOT", "{{a}}"]),
    ('A', &["CLUSTER", "KEYSLOT", ""]),
    ('A', &["CLUSTER", "COUNTKEYSINSLOT", "3300"]),
    ('A', &["CLUSTER", "COUNTKEYSINSLOT", "16384"]),
    ('A', &["CLUSTER", "COUNTKEYSINSLOT", "x"]),
    ('A', &["CLUSTER", "GETKEYSINSLOT", "3300", "10"]),
    ('A', &["CLUSTER", "GETKEYSINSLOT", "3300", "-1"]),
    ('A', &["CLUSTER", "GETKEYSINSLOT", "x", "1"]),
    // A migration of slot 3300 (keys b, {b}x, {b}y) from A to B.
    ('A', &["CLUSTER", "SETSLOT", "3300", "MIGRATING", "<ID-B>"]),
    ('A', &["GET", "b"]),
    ('A', &["GET", "{b}x"]),
    ('A', &["SET", "{b}x", "1"]),
    ('A', &["MGET", "b", "{b}x"]),
    ('B', &["CLUSTER", "SETSLOT", "3300", "IMPORTING", "<ID-A>"]),
    ('B', &["GET", "{b}x"]),
    ('B', &["ASKING"]),
    ('B', &["GET", "{b}x"]),
    ('B', &["GET", "{b}x"]),
    ('B', &["ASKING"]),
    ('B', &["MGET", "{b}x", "{b}y"]),
    ('B', &["EVAL", "return redis.call('get', '{b}x')", "0"]),
    ('B', &["ASKING"]),
    ('B', &["EVAL", "return redis.call('get', '{b}x')", "0"]),
    ('B', &["ASKING"]),
    ('B', &["EVAL", "return redis.call('get', KEYS[1])", "1", "{b}x"]),
    ('B', &["ASKING"]),
    ('B', &["RESTORE-ASKING", "{b}z", "0", "not a payload"]),
    ('A', &["CLUSTER", "SETSLOT", "3300", "STABLE"]),
    ('B', &["CLUSTER", "SETSLOT", "3300", "STABLE"]),
    ('B', &["GET", "{b}x"]),
    ('A', &["READONLY"]),
    ('A', &["READWRITE"]),
    // CLUSTER's own errors.
    ('A', &["CLUSTER", "SETSLOT", "1", "foo"]),
    ('A', &["CLUSTER", "SETSLOT", "99999", "STABLE"]),
    ('A', &["CLUSTER", "SETSLOT", "100", "NODE", "zzz"]),
    ('A', &["CLUSTER", "SETSLOT", "100", "MIGRATING", "zzz"]),
    ('A', &["CLUSTER", "SETSLOT", "9000", "MIGRATING", "<ID-B>"]),
    ('A', &["CLUSTER", "SETSLOT", "100", "IMPORTING", "<ID-B>"]),
    ('A', &["CLUSTER", "SETSLOT", "3300", "NODE", "<ID-B>"]),
    ('A', &["CLUSTER", "ADDSLOTS", "0"]),
    ('A', &["CLUSTER", "ADDSLOTS", "x"]),
    ('A', &["CLUSTER", "ADDSLOTSRANGE", "1", "2", "3"]),
    ('A', &["CLUSTER", "ADDSLOTSRANGE", "5", "4"]),
    ('A', &["CLUSTER", "DELSLOTS", "1", "1"]),
    ('A', &["CLUSTER", "DELSLOTSRANGE", "1", "16384"]),
    ('A', &["CLUSTER", "FORGET", "<ID-A>"]),
    ('A', &["CLUSTER", "FORGET", "zzz"]),
    ('A', &["CLUSTER", "REPLICATE", "<ID-A>"]),
    ('A', &["CLUSTER", "REPLICATE", "<ID-B>"]),
    ('A', &["CLUSTER", "REPLICATE", "zzz"]),
    ('A', &["CLUSTER", "SET-CONFIG-EPOCH", "-1"]),
    ('A', &["CLUSTER", "SET-CONFIG-EPOCH", "5"]),
    ('A', &["CLUSTER", "SET-CONFIG-EPOCH", "x"]),
    ('A', &["CLUSTER", "COUNT-FAILURE-REPORTS", "<ID-B>"]),
    ('A', &["CLUSTER", "COUNT-FAILURE-REPORTS", "zzz"]),
    ('A', &["CLUSTER", "REPLICAS", "<ID-B>"]),
    ('A', &["CLUSTER", "SLAVES", "zzz"]),
    ('A', &["CLUSTER", "RESET", "foo"]),
    ('A', &["CLUSTER", "RESET"]),
    ('A', &["CLUSTER", "FAILOVER"]),
    ('A', &["CLUSTER", "FAILOVER", "foo"]),
    ('A', &["CLUSTER", "MEET", "1.2.3", "5"]),
    ('A', &["CLUSTER", "MEET", "127.0.0.1", "x"]),
    ('A', &["CLUSTER", "MEET", "127.0.0.1", "1", "x"]),
    ('A', &["CLUSTER", "MEET", "127.0.0.1", "1", "2", "3"]),
    ('A', &["CLUSTER", "NOSUCH"]),
    ('A', &["CLUSTER"]),
    ('A', &["CLUSTER", "MYID", "x"]),
    ('A', &["CLUSTER", "MYID"]),
    ('A', &["CLUSTER", "SLOTS"]),
    ('A', &["CLUSTER", "SAVECONFIG"]),
    ('A', &["SELECT", "1"]),
    ('A', &["SELECT", "0"]),
    ('A', &["SELECT", "x"]),
    ('A', &["HELLO", "3"]),
    ('A', &["CLUSTER", "SLOTS"]),
    ('A', &["HELLO", "2"]),
    // Slot 3300 unserved: its keys are refused, then the whole cluster is down.
    ('A', &["FLUSHALL"]),
    ('A', &["CLUSTER", "DELSLOTS", "3300"]),
    ('A', &["GET", "b"]),
    ('A', &["GET", "c"]),
    ('A', &["SPUBLISH", "c", "x"]),
    ('A', &["PING"]),
    ('A', &["CLUSTER", "ADDSLOTS", "3300"]),
];

#[test]
fn replies_match_a_real_two_node_cluster() {
    let bus = |port: u16| ["--cluster-port".to_string(), port.to_string()];
    let (rbus_a, rbus_b) = (support::free_port(), support::free_port());
    let redis_args = |bus_port: u16| {
        let mut args = vec![
            "--cluster-enabled".to_string(),
            "yes".to_string(),
            "--cluster-config-file".to_string(),
            "nodes.conf".to_string(),
        ];
        args.extend(bus(bus_port));
        args
    };
    let args_a = redis_args(rbus_a);
    let args_b = redis_args(rbus_b);
    fn as_str(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let Some(redis_a) = RedisServer::start("cluster diff A", &as_str(&args_a)) else {
        return;
    };
    let Some(redis_b) = RedisServer::start("cluster diff B", &as_str(&args_b)) else {
        return;
    };
    let (obus_a, obus_b) = (support::free_port(), support::free_port());
    let ours = |bus_port: u16| {
        support::builder()
            .config("cluster-enabled", "yes")
            .unwrap()
            .config("cluster-port", &bus_port.to_string())
            .unwrap()
            .start()
            .unwrap()
    };
    let (ours_a, ours_b) = (ours(obus_a), ours(obus_b));

    let mut theirs = Pair::new(redis_a.addr(), redis_b.addr(), (rbus_a, rbus_b));
    let mut mine = Pair::new(ours_a.addr(), ours_b.addr(), (obus_a, obus_b));
    theirs.join(redis_b.addr().port(), rbus_b);
    mine.join(ours_b.addr().port(), obus_b);

    let mut differences = Vec::new();
    for (node, args) in SCRIPT {
        let mut expected = theirs.on(*node, args);
        let mut got = mine.on(*node, args);
        if args[0] == "HELLO" {
            // The client IDs differ: compare from `mode` on.
            for reply in [&mut expected, &mut got] {
                *reply = reply.split_off(reply.find("mode").unwrap_or(0));
            }
        }
        if expected != got {
            differences.push(format!(
                "{node}: {args:?}\n  redis:   {expected:?}\n  embedis: {got:?}"
            ));
        }
    }
    for node in ['A', 'B'] {
        let expected = nodes_shape(&theirs.on(node, &["CLUSTER", "NODES"]));
        let got = nodes_shape(&mine.on(node, &["CLUSTER", "NODES"]));
        if expected != got {
            differences.push(format!(
                "{node}: CLUSTER NODES\n  redis:   {expected:?}\n  embedis: {got:?}"
            ));
        }
        // CLUSTER INFO up to the bus statistics, which count different messages.
        let info = |reply: String| reply.lines().skip(1).take(9).collect::<Vec<_>>().join("\n");
        let expected = info(theirs.on(node, &["CLUSTER", "INFO"]));
        let got = info(mine.on(node, &["CLUSTER", "INFO"]));
        if expected != got {
            differences.push(format!(
                "{node}: CLUSTER INFO\n  redis:   {expected:?}\n  embedis: {got:?}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

#[test]
fn cluster_commands_answer_disabled_without_cluster_mode() {
    let server = support::builder().start().unwrap();
    for args in [
        &["CLUSTER", "HELP"][..],
        &["CLUSTER", "KEYSLOT", "a"],
        &["CLUSTER", "INFO"],
        &["READONLY"],
        &["ASKING"],
    ] {
        assert_eq!(
            server.command(args),
            Reply::Error("ERR This instance has cluster support disabled".into()),
            "{args:?}"
        );
    }
    // No redirection either: every key is served, in every database.
    assert_eq!(
        server.command(&["MSET", "a", "1", "b", "2"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(server.command(&["INFO", "cluster"]), {
        Reply::Verbatim {
            format: *b"txt",
            text: "# Cluster\r\ncluster_enabled:0\r\n".into(),
        }
    });
}

fn redis_cli() -> Option<String> {
    support::find_binary("redis-cli", "cluster redis-cli")
}

fn moved_target(reply: &[u8]) -> Option<(String, String)> {
    let reply = lossy(reply);
    let rest = reply.strip_prefix("-MOVED ")?;
    let (slot, addr) = rest.trim_end().split_once(' ')?;
    Some((slot.to_string(), addr.to_string()))
}

#[test]
fn in_process_cluster_redirects_moves_and_asks() {
    let cluster = Cluster::start_with(3, 0, support::with_dir).unwrap();
    let key = "user:{42}";
    let slot = Cluster::slot_of(key.as_bytes());
    let owner = cluster.owner_of(slot);
    let other = (owner + 1) % 3;
    let third = (owner + 2) % 3;
    // Every node agrees; the slots are split as redis-cli splits them.
    let slots = cluster.node(0).command(&["CLUSTER", "INFO"]);
    let Reply::Verbatim { text: info, .. } = slots else {
        panic!("{slots:?}")
    };
    assert!(
        lossy(&info).contains("cluster_state:ok"),
        "{}",
        lossy(&info)
    );
    assert!(lossy(&info).contains("cluster_known_nodes:3"));
    assert!(lossy(&info).contains("cluster_size:3"));
    assert_eq!(cluster.owner_of(0), 0);
    assert_eq!(cluster.owner_of(5460), 0);
    assert_eq!(cluster.owner_of(5461), 1);
    assert_eq!(cluster.owner_of(16383), 2);

    let mut wrong = Conn::connect(cluster.node(other).addr()).unwrap();
    let reply = wrong.command(&["SET", key, "v"]);
    let owner_port = cluster.node(owner).addr().port();
    assert_eq!(
        moved_target(&reply),
        Some((slot.to_string(), format!("127.0.0.1:{owner_port}")))
    );
    let mut right = Conn::connect(cluster.node(owner).addr()).unwrap();
    assert_eq!(lossy(&right.command(&["SET", key, "v"])), "+OK\r\n");
    assert_eq!(
        lossy(&right.command(&["SET", "other:{42}", "w"])),
        "+OK\r\n"
    );

    // A client blocked on a key of the slot is redirected once the slot has moved (below), rather
    // than waiting for a write that can no longer come.
    let mut blocked = Conn::connect(cluster.node(owner).addr()).unwrap();
    blocked.send_raw(&Conn::encode(&[b"BLPOP", b"list:{42}", b"0"]));
    let mut probe = Conn::connect(cluster.node(owner).addr()).unwrap();
    support::wait_blocked(&mut probe, 1);

    // During a migration, keys still on the giver are served there, the others get ASK.
    cluster.begin_migration(slot, owner, third).unwrap();
    assert_eq!(lossy(&right.command(&["GET", key])), "$1\r\nv\r\n");
    let third_port = cluster.node(third).addr().port();
    assert_eq!(
        lossy(&right.command(&["GET", "missing:{42}"])),
        format!("-ASK {slot} 127.0.0.1:{third_port}\r\n")
    );
    cluster.migrate_key(key, owner, third).unwrap();
    assert_eq!(
        lossy(&right.command(&["GET", key])),
        format!("-ASK {slot} 127.0.0.1:{third_port}\r\n")
    );
    let mut receiver = Conn::connect(cluster.node(third).addr()).unwrap();
    assert!(lossy(&receiver.command(&["GET", key])).starts_with("-MOVED "));
    receiver.command(&["ASKING"]);
    assert_eq!(lossy(&receiver.command(&["GET", key])), "$1\r\nv\r\n");

    // Finished: every node sends the slot's keys to the receiver.
    cluster.finish_migration(slot, owner, third).unwrap();
    let released = blocked.reply_within(Duration::from_secs(5));
    assert_eq!(
        released.map(|r| lossy(&r)),
        Some(format!("-MOVED {slot} 127.0.0.1:{third_port}\r\n"))
    );
    assert_eq!(cluster.owner_of(slot), third);
    for node in cluster.nodes() {
        assert_eq!(
            embedis::Cluster::slot_of(b"x"),
            embedis::Cluster::slot_of(b"x")
        );
        let mut conn = Conn::connect(node.addr()).unwrap();
        let reply = conn.command(&["GET", "other:{42}"]);
        if node.addr() == cluster.node(third).addr() {
            assert_eq!(lossy(&reply), "$1\r\nw\r\n");
        } else {
            assert_eq!(
                lossy(&reply),
                format!("-MOVED {slot} 127.0.0.1:{third_port}\r\n")
            );
        }
    }

    // redis-cli agrees that the cluster is whole and follows MOVED with -c.
    let Some(cli) = redis_cli() else { return };
    let first = cluster.node(0).addr().to_string();
    let check = Command::new(&cli)
        .args(["--cluster", "check", &first])
        .output()
        .unwrap();
    let out = lossy(&check.stdout);
    assert!(
        out.contains("[OK] All nodes agree about slots configuration."),
        "{out}"
    );
    assert!(out.contains("[OK] All 16384 slots covered."), "{out}");
    let wrong_port = cluster.node(owner).addr().port().to_string();
    let followed = Command::new(&cli)
        .args(["-c", "-p", &wrong_port, "GET", "other:{42}"])
        .output()
        .unwrap();
    assert_eq!(lossy(&followed.stdout), "w\n");
}

#[test]
fn redis_cli_cluster_create_joins_fresh_nodes() {
    let Some(cli) = redis_cli() else { return };
    let nodes: Vec<embedis::Server> = (0..3)
        .map(|_| {
            support::builder()
                .config("cluster-enabled", "yes")
                .unwrap()
                .config("cluster-port", &support::free_port().to_string())
                .unwrap()
                .start()
                .unwrap()
        })
        .collect();
    // A fresh node serves every slot by itself.
    let mut lone = Conn::connect(nodes[0].addr()).unwrap();
    assert_eq!(lossy(&lone.command(&["SET", "a", "1"])), "+OK\r\n");
    assert_eq!(lossy(&lone.command(&["DEL", "a"])), ":1\r\n");
    // redis-cli's MEET uses the client port + 10000 unless told otherwise: MEET by hand
    // with each bus port, the rest is redis-cli's (ADDSLOTS, epochs, waiting, checking).
    let addrs: Vec<String> = nodes.iter().map(|n| n.addr().to_string()).collect();
    let mut args = vec!["--cluster".to_string(), "create".to_string()];
    args.extend(addrs.iter().cloned());
    args.push("--cluster-yes".to_string());
    let create = Command::new(&cli).args(&args).output().unwrap();
    let out = lossy(&create.stdout);
    assert!(
        out.contains("[OK] All 16384 slots covered."),
        "{out}\n{}",
        lossy(&create.stderr)
    );
    let check = Command::new(&cli)
        .args(["--cluster", "check", &addrs[1]])
        .output()
        .unwrap();
    let out = lossy(&check.stdout);
    assert!(
        out.contains("[OK] All nodes agree about slots configuration."),
        "{out}"
    );
    assert!(out.contains("[OK] All 16384 slots covered."), "{out}");
}

#[test]
fn redis_py_cluster_client() {
    let Some(python) = support::python_with(&["redis"], "redis-py RedisCluster") else {
        return;
    };
    let cluster = Cluster::start_with(3, 0, support::with_dir).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/cluster_client.py"
    );
    let ports: Vec<String> = cluster
        .startup_nodes()
        .iter()
        .map(|a| a.port().to_string())
        .collect();
    let child = Command::new(&python)
        .arg(script)
        .args(&ports)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drive_client(&cluster, child, "redis-py");
}

/// node and the ioredis installation (EMBEDIS_NODE_MODULES), or None (skipped loudly; a
/// failure under EMBEDIS_REQUIRE_REDIS).
fn ioredis(test: &str) -> Option<(String, String)> {
    let node = support::find_binary("node", test)?;
    let modules = std::env::var("EMBEDIS_NODE_MODULES").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/target/node-clients/node_modules"
        )
        .to_string()
    });
    if !std::path::Path::new(&modules).join("ioredis").exists() {
        let message = format!("ioredis is needed in {modules} (EMBEDIS_NODE_MODULES)");
        if support::redis_required() {
            panic!("{test}: {message} (EMBEDIS_REQUIRE_REDIS is set)");
        }
        eprintln!("\n!!!!! SKIPPED {test}: {message} !!!!!\n");
        return None;
    }
    Some((node, modules))
}

#[test]
fn ioredis_cluster_client() {
    let Some((node, modules)) = ioredis("ioredis Cluster") else {
        return;
    };
    let cluster = Cluster::start_with(3, 0, support::with_dir).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/node/cluster_client.js");
    let ports: Vec<String> = cluster
        .startup_nodes()
        .iter()
        .map(|a| a.port().to_string())
        .collect();
    let child = Command::new(&node)
        .arg(script)
        .args(&ports)
        .env("NODE_PATH", &modules)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drive_client(&cluster, child, "ioredis");
}

/// Runs a client script's dialogue: it prints `MIGRATE-BEGIN <slot> <from-port> <to-port>`,
/// `MIGRATE-KEY <key>`, `MIGRATE-FINISH` when it wants the cluster changed and waits for a line
/// on its stdin; at the end it prints `all cluster-client checks passed`.
fn drive_client(cluster: &Cluster, mut child: std::process::Child, client: &str) {
    use std::io::{BufRead, BufReader, Write};
    let index_of = |port: &str| {
        cluster
            .nodes()
            .iter()
            .position(|n| n.addr().port().to_string() == port)
            .expect("a node's port")
    };
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut transcript = Vec::new();
    let mut migration = None;
    for line in stdout.lines() {
        let line = line.unwrap();
        transcript.push(line.clone());
        let words: Vec<&str> = line.split(' ').collect();
        match words[0] {
            "MIGRATE-BEGIN" => {
                let slot: u16 = words[1].parse().unwrap();
                let (from, to) = (index_of(words[2]), index_of(words[3]));
                cluster.begin_migration(slot, from, to).unwrap();
                migration = Some((slot, from, to));
            }
            "MIGRATE-KEY" => {
                let (_, from, to) = migration.unwrap();
                cluster.migrate_key(words[1], from, to).unwrap();
            }
            "MIGRATE-FINISH" => {
                let (slot, from, to) = migration.take().unwrap();
                cluster.finish_migration(slot, from, to).unwrap();
            }
            _ => continue,
        }
        writeln!(stdin, "done").unwrap();
        stdin.flush().unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let transcript = transcript.join("\n");
    assert!(
        output.status.success() && transcript.contains("all cluster-client checks passed"),
        "{client} failed:\n{transcript}\n{}",
        lossy(&output.stderr)
    );
    assert!(
        transcript.contains("followed MOVED after resharding"),
        "{transcript}"
    );
    assert!(
        transcript.contains("followed ASK during a migration"),
        "{transcript}"
    );
}

#[test]
fn keyslot_matches_redis_for_many_keys() {
    let bus = support::free_port().to_string();
    let Some(redis) = RedisServer::start(
        "cluster keyslot",
        &[
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-port",
            &bus,
        ],
    ) else {
        return;
    };
    let mut conn = Conn::connect(redis.addr()).unwrap();
    let mut keys: Vec<Vec<u8>> = [
        "",
        "{",
        "}",
        "{}",
        "{}a",
        "a{}",
        "{a}b",
        "a{}{b}",
        "{{a}}",
        "{a}{b}",
        "a{b}c{d}",
        "}{a}",
        "{user1000}.following",
        "foo{}{bar}",
        "foo{{bar}}zap",
        "foo{bar}{zap}",
    ]
    .iter()
    .map(|k| k.as_bytes().to_vec())
    .collect();
    // Pseudo-random binary keys, braces and all bytes included.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for len in 0..400usize {
        let key = (0..len % 23)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                [b'{', b'}', b'a', b'\0', (state >> 24) as u8][(state % 5) as usize]
            })
            .collect();
        keys.push(key);
    }
    for key in keys {
        let reply = conn.command(&[&b"CLUSTER"[..], b"KEYSLOT", &key]);
        let expected = format!(":{}\r\n", Cluster::slot_of(&key));
        assert_eq!(
            lossy(&reply),
            expected,
            "key {:?}",
            String::from_utf8_lossy(&key)
        );
    }
}

#[test]
fn in_process_cluster_replicas_copy_their_primaries() {
    let cluster = Cluster::start_with(2, 1, support::with_dir).unwrap();
    assert_eq!(cluster.nodes().len(), 4);
    assert_eq!(cluster.primaries().len(), 2);
    // As in Redis, CLUSTER SLOTS lists a replica once it holds data (a replication offset
    // above 0): one write per shard makes both usable.
    for (shard, key) in [(0, "{a}w"), (1, "{b}w")] {
        let owner = cluster.owner_of(Cluster::slot_of(key.as_bytes()));
        let mut conn = Conn::connect(cluster.node(owner).addr()).unwrap();
        assert_eq!(lossy(&conn.command(&["SET", key, "1"])), "+OK\r\n");
        assert_eq!(
            lossy(&conn.command(&["WAIT", "1", "5000"])),
            ":1\r\n",
            "shard {shard}"
        );
    }
    // Node 2 replicates primary 0, node 3 primary 1: CLUSTER SLOTS lists each after its primary.
    let listed = |r: &Reply| matches!(r, Reply::Array(ranges) if ranges.iter().all(|x| matches!(x, Reply::Array(items) if items.len() == 4)));
    let started = Instant::now();
    while !listed(&cluster.node(3).command(&["CLUSTER", "SLOTS"])) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "replicas never listed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let slots = cluster.node(3).command(&["CLUSTER", "SLOTS"]);
    let Reply::Array(ranges) = slots else {
        panic!("{slots:?}")
    };
    assert_eq!(ranges.len(), 2);
    for (shard, range) in ranges.iter().enumerate() {
        let Reply::Array(items) = range else {
            panic!("{range:?}")
        };
        assert_eq!(items.len(), 4, "start, end, primary, replica: {items:?}");
        let id = |at: usize| match &items[at] {
            Reply::Array(node) => match &node[2] {
                Reply::Bulk(id) => lossy(id),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        assert_eq!(id(2), cluster.node_id(shard));
        assert_eq!(id(3), cluster.node_id(2 + shard));
    }
    // A replica redirects to its primary; after READONLY it serves the primary's data, which
    // it receives by replication.
    let slot = Cluster::slot_of(b"k");
    let primary = cluster.owner_of(slot);
    let replica = cluster.node(2 + primary);
    assert!(replica.link_up());
    let mut conn = Conn::connect(replica.addr()).unwrap();
    let port = cluster.node(primary).addr().port();
    assert_eq!(
        lossy(&conn.command(&["GET", "k"])),
        format!("-MOVED {slot} 127.0.0.1:{port}\r\n")
    );
    assert_eq!(lossy(&conn.command(&["READONLY"])), "+OK\r\n");
    assert_eq!(lossy(&conn.command(&["GET", "k"])), "$-1\r\n");
    let mut writer = Conn::connect(cluster.node(primary).addr()).unwrap();
    assert_eq!(lossy(&writer.command(&["SET", "k", "v"])), "+OK\r\n");
    assert_eq!(lossy(&writer.command(&["WAIT", "1", "5000"])), ":1\r\n");
    assert_eq!(lossy(&conn.command(&["GET", "k"])), "$1\r\nv\r\n");
    assert_eq!(
        lossy(&conn.command(&["SET", "k", "v"])),
        format!("-MOVED {slot} 127.0.0.1:{port}\r\n")
    );
    // A script declaring flags may write (no `no-writes`): MOVED to the primary even after
    // READONLY, as Redis judges it by the script's flags (its cluster suite, 16).
    let script = "#!lua\nreturn redis.call('del', KEYS[1])";
    assert_eq!(
        lossy(&conn.command(&["EVAL", script, "1", "k"])),
        format!("-MOVED {slot} 127.0.0.1:{port}\r\n")
    );
    let read_only = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])";
    assert_eq!(
        lossy(&conn.command(&["EVAL", read_only, "1", "k"])),
        "$1\r\nv\r\n"
    );
    let list = lossy(&conn.command(&["CLIENT", "INFO"]));
    assert!(list.contains(" flags=r "), "{list}");
}

#[test]
fn in_process_cluster_fails_over_to_a_replica() {
    let cluster = Cluster::start_with(3, 1, support::with_dir).unwrap();
    let slot = Cluster::slot_of(b"lock:{a}");
    let primary = cluster.owner_of(slot);
    let mut conn = Conn::connect(cluster.node(primary).addr()).unwrap();
    assert_eq!(
        lossy(&conn.command(&["SET", "lock:{a}", "token", "NX", "PX", "30000"])),
        "+OK\r\n"
    );
    assert_eq!(lossy(&conn.command(&["WAIT", "1", "5000"])), ":1\r\n");
    let promoted = cluster.fail_over(primary).unwrap();
    assert_ne!(promoted, primary);
    // The other primaries send clients to the new one, which has the replicated lock.
    let other = (0..3).find(|&i| i != primary).unwrap();
    let mut elsewhere = Conn::connect(cluster.node(other).addr()).unwrap();
    let port = cluster.node(promoted).addr().port();
    assert_eq!(
        lossy(&elsewhere.command(&["GET", "lock:{a}"])),
        format!("-MOVED {slot} 127.0.0.1:{port}\r\n")
    );
    let mut new_primary = Conn::connect(cluster.node(promoted).addr()).unwrap();
    assert_eq!(
        lossy(&new_primary.command(&["GET", "lock:{a}"])),
        "$5\r\ntoken\r\n"
    );
    assert_eq!(
        lossy(&new_primary.command(&["SET", "x:{a}", "1"])),
        "+OK\r\n"
    );
    let role = lossy(&new_primary.command(&["ROLE"]));
    assert!(role.contains("master"), "{role}");
}

/// The lock a dead primary took with it: the write was acknowledged, the replica never got it
/// (replication held), the primary is killed, and once the test moves the cluster's clock past
/// `cluster-node-timeout` the cluster's own failure detection and election promote the replica
/// — where the lock is free, so a second client takes it too. Milliseconds of real time for
/// 15 seconds of the cluster's.
#[test]
fn a_dead_primary_fails_over_by_itself_when_the_clock_passes_the_node_timeout() {
    let clock = embedis::Clock::manual();
    let mut cluster = Cluster::start_on_clock(3, 1, clock.clone(), |i, builder| {
        support::with_dir(i, builder)
            .config("cluster-node-timeout", "15000")
            .unwrap()
    })
    .unwrap();
    let key = "lock:{orders}";
    let slot = Cluster::slot_of(key.as_bytes());
    let primary = cluster.owner_of(slot);
    let replica = 3 + primary;
    cluster.node(replica).faults().hold_replication(true);
    let mut first = Conn::connect(cluster.node(primary).addr()).unwrap();
    assert_eq!(
        lossy(&first.command(&["SET", key, "client-1", "NX", "PX", "60000"])),
        "+OK\r\n"
    );
    cluster.kill(primary);
    // Nothing happens while the cluster's clock stands still...
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(cluster.owner_of(slot), primary);
    // ...and the replica is elected once 15 s of it pass (PFAIL, FAIL by the two other
    // primaries, then the election's delay of up to a second).
    let started = Instant::now();
    cluster.advance_clock(Duration::from_secs(18));
    cluster.wait_for_owner(slot, replica).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let mut second = Conn::connect(cluster.node(replica).addr()).unwrap();
    assert_eq!(lossy(&second.command(&["GET", key])), "$-1\r\n");
    assert_eq!(
        lossy(&second.command(&["SET", key, "client-2", "NX", "PX", "60000"])),
        "+OK\r\n",
        "the lock is taken a second time: the first holder's write died with its primary"
    );
    let info = lossy(&second.command(&["CLUSTER", "INFO"]));
    assert!(info.contains("cluster_state:ok"), "{info}");
}

/// A shard channel's subscribers are told `sunsubscribe` when the slot leaves their shard
/// (Redis's removeChannelsInSlot), and a replica reset with CLUSTER RESET stops replicating:
/// two behaviours Redis's cluster suite checks (25-pubsubshard-slot-migration, 03-failover-loop).
#[test]
fn a_moved_slot_unsubscribes_its_shard_channels_and_a_reset_replica_stops_replicating() {
    let cluster = Cluster::start_with(2, 1, support::with_dir).unwrap();
    let channel = "news";
    let slot = Cluster::slot_of(channel.as_bytes());
    let from = cluster.owner_of(slot);
    let to = 1 - from;
    let mut subscriber = support::client::Client::connect(cluster.node(from).addr());
    subscriber.send(&["SSUBSCRIBE", channel]);
    assert!(subscriber.reply().contains("ssubscribe"));
    let mut admin = Conn::connect(cluster.node(from).addr()).unwrap();
    let node = cluster.node_id(to).to_string();
    let setslot = admin.command(&["CLUSTER", "SETSLOT", &slot.to_string(), "NODE", &node]);
    assert_eq!(lossy(&setslot), "+OK\r\n");
    let push = subscriber.reply();
    assert!(
        push.contains("sunsubscribe") && push.contains(channel),
        "{push}"
    );

    let replica = cluster.node(2 + from);
    let mut conn = Conn::connect(replica.addr()).unwrap();
    assert!(lossy(&conn.command(&["ROLE"])).contains("slave"));
    assert_eq!(lossy(&conn.command(&["CLUSTER", "RESET"])), "+OK\r\n");
    let started = Instant::now();
    while !lossy(&conn.command(&["ROLE"])).contains("master") {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "still a replica"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let info = lossy(&conn.command(&["INFO", "replication"]));
    assert!(!info.contains("master_host"), "{info}");
}

/// redis-py's `RedisCluster` across an automatic failover: the key's primary is killed, the
/// cluster's clock moved past the node timeout, its replica elected — and the client carries on
/// against the new primary, reading what was replicated (tests/python/cluster_failover.py).
#[test]
fn redis_py_cluster_client_carries_on_across_an_automatic_failover() {
    let Some(python) = support::python_with(&["redis"], "redis-py across a failover") else {
        return;
    };
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/cluster_failover.py"
    );
    client_across_a_failover(Command::new(&python).arg(script));
}

/// ioredis's `Cluster` likewise (tests/node/cluster_failover.js).
#[test]
fn ioredis_cluster_client_carries_on_across_an_automatic_failover() {
    let Some((node, modules)) = ioredis("ioredis Cluster across a failover") else {
        return;
    };
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/node/cluster_failover.js"
    );
    client_across_a_failover(Command::new(&node).arg(script).env("NODE_PATH", &modules));
}

/// Runs a client script on a 3-shard cluster with a replica each, on a manual clock: when the
/// script prints `KILL <port>`, that primary dies, the clock moves past the node timeout, and
/// once its replica serves the slot the script is told `done`. The script must end with
/// "followed the failover".
fn client_across_a_failover(command: &mut Command) {
    use std::io::{BufRead, BufReader, Write};
    let clock = embedis::Clock::manual();
    let mut cluster = Cluster::start_on_clock(3, 1, clock, |i, builder| {
        support::with_dir(i, builder)
            .config("cluster-node-timeout", "5000")
            .unwrap()
    })
    .unwrap();
    let ports: Vec<String> = cluster
        .startup_nodes()
        .iter()
        .map(|a| a.port().to_string())
        .collect();
    let mut child = command
        .args(&ports)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut transcript = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        transcript.push(line.clone());
        if let Some(port) = line.strip_prefix("KILL ") {
            let primary = cluster
                .nodes()
                .iter()
                .position(|n| n.addr().port().to_string() == port)
                .expect("a primary's port");
            let slot = Cluster::slot_of(b"order:{42}");
            cluster.kill(primary);
            cluster.advance_clock(Duration::from_secs(8));
            cluster.wait_for_owner(slot, 3 + primary).unwrap();
            writeln!(stdin, "done").unwrap();
            stdin.flush().unwrap();
        }
    }
    let output = child.wait_with_output().unwrap();
    let transcript = transcript.join("\n");
    assert!(
        output.status.success() && transcript.contains("followed the failover"),
        "{transcript}\n{}",
        lossy(&output.stderr)
    );
}
