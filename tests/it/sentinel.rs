//! Redis Sentinel (the real `redis-sentinel` 7.0) managing embedis servers. Three sentinels
//! watch one embedis primary with two embedis replicas: they find the replicas in the primary's
//! INFO, find each other through `__sentinel__:hello` on the nodes, and when the primary dies
//! (shut down) or stops answering (paused with the fault controls) they agree it is down, elect
//! a leader, promote a replica (`REPLICAOF NO ONE` inside MULTI … EXEC with CONFIG REWRITE and
//! CLIENT KILL), point the other replica at it, and report it from
//! `SENTINEL get-master-addr-by-name` — passing over a replica of priority 0, and with passwords
//! on every node; `SENTINEL FAILOVER` switching over a healthy primary, which the sentinels
//! then demote to follow the new one. Then: redis-py's `redis.sentinel.Sentinel` client writing across the
//! failover; the lock lost in a failover — a lock written on the primary that never reached a
//! replica is granted again by the promoted one, which `WAIT` would have told its first holder;
//! and the promotion transaction's replies, compared with redis-server's.
//!
//! Each test skips loudly when redis-sentinel (or, for the client test, Python with redis-py;
//! for the transaction, redis-server) is missing, unless EMBEDIS_REQUIRE_REDIS=1. The
//! failover tests run one at a time (a lock below): each runs three sentinels whose timing (a
//! 1 s down-after period) a loaded machine stretches.

use crate::support;
use support::{field, text};

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::{flat, Conn};

/// The name the sentinels monitor the primary under.
pub(crate) const NAME: &str = "mymaster";

/// One test at a time (see the module documentation).
static SERIAL: Mutex<()> = Mutex::new(());

pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A command's reply flattened into strings (arrays and maps alike).
pub(crate) fn strings(addr: SocketAddr, args: &[&str]) -> Vec<String> {
    let Ok(mut c) = Conn::connect(addr) else {
        return Vec::new();
    };
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.send_raw(&Conn::encode(&args));
    c.read_reply().map(|(_, v)| flat(&v)).unwrap_or_default()
}

/// A replica of `primary`, as an embedis server started with the `replicaof` config.
fn replica_of(primary: SocketAddr) -> embedis::Server {
    replica_with(primary, &[])
}

/// A replica of `primary` with more configuration (`(name, value)` pairs).
fn replica_with(primary: SocketAddr, configs: &[(&str, &str)]) -> embedis::Server {
    let mut builder = support::builder()
        .config("replicaof", &format!("{} {}", primary.ip(), primary.port()))
        .unwrap();
    for (name, value) in configs {
        builder = builder.config(name, value).unwrap();
    }
    builder.start().unwrap()
}

fn link_up(addr: SocketAddr, password: Option<&str>) -> bool {
    let Ok(mut c) = Conn::connect(addr) else {
        return false;
    };
    if let Some(password) = password {
        text(&mut c, &["AUTH", password]);
    }
    field(
        &text(&mut c, &["INFO", "replication"]),
        "master_link_status",
    ) == "up"
}

/// Three redis-sentinel processes monitoring one primary (quorum 2), each with its config file
/// in a temporary directory of its own (Sentinel rewrites it); killed and removed on drop.
pub(crate) struct Sentinels {
    children: Vec<Child>,
    ports: Vec<u16>,
    dir: PathBuf,
}

impl Sentinels {
    /// Starts three sentinels watching `primary`; None (a loud skip) without redis-sentinel.
    fn start(test: &str, primary: SocketAddr) -> Option<Sentinels> {
        Sentinels::start_with(test, primary, "")
    }

    /// As [`Sentinels::start`], with `extra` appended to each sentinel's configuration.
    pub(crate) fn start_with(test: &str, primary: SocketAddr, extra: &str) -> Option<Sentinels> {
        let binary = support::find_binary("redis-sentinel", test)?;
        let dir = std::env::temp_dir().join(format!(
            "embedis-sentinel-{}-{}",
            std::process::id(),
            primary.port()
        ));
        std::fs::create_dir_all(&dir).expect("create the sentinels' directory");
        let mut sentinels = Sentinels {
            children: Vec::new(),
            ports: Vec::new(),
            dir,
        };
        for i in 0..3 {
            sentinels.start_one(&binary, i, primary, extra);
        }
        Some(sentinels)
    }

    /// Starts sentinel `i` on a free port, retrying on another port if it does not come up (the
    /// port picked may be taken by the time it binds).
    fn start_one(&mut self, binary: &str, i: usize, primary: SocketAddr, extra: &str) {
        for _attempt in 0..10 {
            let port = support::free_port();
            let conf = self.dir.join(format!("sentinel-{i}.conf"));
            // Small periods so that a failover takes seconds: down after 1 s without a reply,
            // a failover attempt retried after 4 s. `sentinel resolve-hostnames` is not needed:
            // every address here is a literal 127.0.0.1.
            let config = format!(
                "port {port}\nbind 127.0.0.1\ndaemonize no\n\
                 logfile {log}\ndir {dir}\n\
                 sentinel monitor {NAME} {ip} {pport} 2\n\
                 sentinel down-after-milliseconds {NAME} 1000\n\
                 sentinel failover-timeout {NAME} 4000\n\
                 sentinel parallel-syncs {NAME} 1\n{extra}",
                log = self.dir.join(format!("sentinel-{i}.log")).display(),
                dir = self.dir.display(),
                ip = primary.ip(),
                pport = primary.port(),
            );
            std::fs::write(&conf, config).expect("write sentinel config");
            let mut child = Command::new(binary)
                .arg(&conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-sentinel");
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut up = false;
            while Instant::now() < deadline {
                if !matches!(child.try_wait(), Ok(None)) {
                    break;
                }
                // Only this child's answer counts: another test's server may have taken the port.
                let pid = format!("process_id:{}\r\n", child.id());
                if strings(addr, &["INFO", "server"]).concat().contains(&pid) {
                    up = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if up {
                // Sentinel's own periods, shortened (they have no configuration directive):
                // INFO every second instead of 10, hellos every 500 ms instead of 2 s — which
                // also shortens the wait before a sentinel demotes a node that still claims to
                // be the primary (four hello periods).
                assert_eq!(
                    strings(
                        addr,
                        &[
                            "SENTINEL",
                            "DEBUG",
                            "info-period",
                            "1000",
                            "publish-period",
                            "500"
                        ]
                    ),
                    ["OK"]
                );
                self.children.push(child);
                self.ports.push(port);
                return;
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-sentinel did not start (10 attempts)");
    }

    pub(crate) fn addrs(&self) -> Vec<SocketAddr> {
        self.ports
            .iter()
            .map(|p| SocketAddr::from(([127, 0, 0, 1], *p)))
            .collect()
    }

    /// The sentinels' logs, for a failure's message.
    pub(crate) fn logs(&self) -> String {
        (0..self.children.len())
            .map(|i| {
                let log = self.dir.join(format!("sentinel-{i}.log"));
                format!(
                    "--- sentinel {i}\n{}",
                    std::fs::read_to_string(log).unwrap_or_else(|e| e.to_string())
                )
            })
            .collect()
    }

    /// Waits up to `secs` for `done`, failing with the sentinels' logs.
    pub(crate) fn wait_for(&self, what: &str, secs: u64, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !done() {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A field of `SENTINEL MASTER` as sentinel `i` sees the primary.
    fn master_field(&self, i: usize, name: &str) -> String {
        let reply = strings(self.addrs()[i], &["SENTINEL", "MASTER", NAME]);
        reply
            .chunks(2)
            .find(|pair| pair[0] == name)
            .map(|pair| pair[1].clone())
            .unwrap_or_default()
    }

    /// Waits until every sentinel knows both replicas and the two other sentinels.
    pub(crate) fn wait_until_settled(&self) {
        self.wait_for(
            "the sentinels to find the replicas and each other",
            20,
            || {
                (0..3).all(|i| {
                    self.master_field(i, "num-slaves") == "2"
                        && self.master_field(i, "num-other-sentinels") == "2"
                })
            },
        );
    }

    /// The primary's port as sentinel `i` reports it.
    fn primary_port(&self, i: usize) -> Option<u16> {
        let reply = strings(
            self.addrs()[i],
            &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", NAME],
        );
        reply.get(1)?.parse().ok()
    }

    /// Waits until every sentinel reports a primary other than `old`; returns its port.
    pub(crate) fn wait_for_new_primary(&self, old: u16) -> u16 {
        let mut new = 0;
        self.wait_for("every sentinel to report the new primary", 25, || {
            let ports: Vec<Option<u16>> = (0..3).map(|i| self.primary_port(i)).collect();
            match ports[0] {
                Some(p) if p != old && ports.iter().all(|q| *q == Some(p)) => {
                    new = p;
                    true
                }
                _ => false,
            }
        });
        new
    }
}

impl Drop for Sentinels {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One embedis primary and two embedis replicas with their links up.
fn three_nodes() -> (embedis::Server, Vec<embedis::Server>) {
    let primary = support::builder().start().unwrap();
    let replicas: Vec<embedis::Server> = (0..2).map(|_| replica_of(primary.addr())).collect();
    wait_for_links(&replicas, None);
    (primary, replicas)
}

fn wait_for_links(replicas: &[embedis::Server], password: Option<&str>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !replicas.iter().all(|r| link_up(r.addr(), password)) {
        assert!(Instant::now() < deadline, "replica links did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn addr_of(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// The replica among `replicas` that listens on `port`, and the other one.
fn promoted_and_other(
    replicas: &[embedis::Server],
    port: u16,
) -> (&embedis::Server, &embedis::Server) {
    if replicas[0].addr().port() == port {
        (&replicas[0], &replicas[1])
    } else {
        assert_eq!(replicas[1].addr().port(), port, "a replica was promoted");
        (&replicas[1], &replicas[0])
    }
}

#[test]
fn sentinel_fails_over_when_the_embedis_primary_dies() {
    let _serial = serial();
    let primary = support::builder().start().unwrap();
    // The second replica must never be promoted (INFO's slave_priority:0).
    let replicas = vec![
        replica_of(primary.addr()),
        replica_with(primary.addr(), &[("replica-priority", "0")]),
    ];
    wait_for_links(&replicas, None);
    let mut p = Conn::connect(primary.addr()).unwrap();
    for i in 0..100 {
        text(&mut p, &["SET", &format!("before:{i}"), &i.to_string()]);
    }
    text(&mut p, &["RPUSH", "list", "a", "b", "c"]);
    assert_eq!(text(&mut p, &["WAIT", "2", "5000"]), ":2\r\n");
    let Some(sentinels) = Sentinels::start("sentinel failover", primary.addr()) else {
        return;
    };
    sentinels.wait_until_settled();

    let old = primary.addr().port();
    drop(p);
    primary.shutdown();
    let new = sentinels.wait_for_new_primary(old);
    let (promoted, other) = (&replicas[0], &replicas[1]);
    assert_eq!(new, promoted.addr().port(), "the replica of priority 100");
    let mut n = Conn::connect(promoted.addr()).unwrap();
    assert_eq!(
        field(&text(&mut n, &["INFO", "replication"]), "role"),
        "master"
    );
    // The data written before the failover is all there.
    assert_eq!(text(&mut n, &["DBSIZE"]), ":101\r\n");
    assert_eq!(text(&mut n, &["GET", "before:42"]), "$2\r\n42\r\n");
    // The other replica follows the new primary. (A new connection each time: repointing it
    // ends with CLIENT KILL TYPE normal.)
    sentinels.wait_for("the other replica to follow the new primary", 15, || {
        let info = strings(other.addr(), &["INFO", "replication"]).concat();
        field(&info, "master_port") == new.to_string() && field(&info, "master_link_status") == "up"
    });
    let mut o = Conn::connect(other.addr()).unwrap();
    let role = strings(other.addr(), &["ROLE"]);
    assert_eq!(role[..3], ["slave", "127.0.0.1", &new.to_string()]);
    // Writes to the new primary reach it.
    assert_eq!(text(&mut n, &["SET", "after", "1"]), "+OK\r\n");
    assert_eq!(text(&mut n, &["WAIT", "1", "5000"]), ":1\r\n");
    assert_eq!(text(&mut o, &["GET", "after"]), "$1\r\n1\r\n");
    assert_eq!(text(&mut o, &["DBSIZE"]), ":102\r\n");
    // The sentinels agree on the topology: the survivor as the new primary's replica.
    sentinels.wait_for(
        "the sentinels to list the other replica under the new primary",
        15,
        || {
            (0..3).all(|i| {
                let replicas = strings(sentinels.addrs()[i], &["SENTINEL", "REPLICAS", NAME]);
                replicas.contains(&other.addr().port().to_string())
            })
        },
    );
    // The failover ends (its leader reports the new primary from the moment it promoted it,
    // but lists it in SENTINEL MASTER only once the other replica is reconfigured).
    sentinels.wait_for("every sentinel to end the failover", 15, || {
        (0..3).all(|i| sentinels.master_field(i, "port") == new.to_string())
    });
}

/// redis-py's `Sentinel` client writes through `master_for` while the primary dies: its writes
/// fail for the seconds the failover takes, then go to the promoted replica, found by asking
/// the sentinels again.
#[test]
fn redis_py_sentinel_client_keeps_writing_across_the_failover() {
    let _serial = serial();
    let Some(python) = support::python_with(&["redis"], "sentinel client") else {
        return;
    };
    let (primary, replicas) = three_nodes();
    let Some(sentinels) = Sentinels::start("sentinel client", primary.addr()) else {
        return;
    };
    sentinels.wait_until_settled();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/sentinel_client.py"
    );
    let mut child = Command::new(&python)
        .arg(script)
        .args(sentinels.ports.iter().map(|p| p.to_string()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut out = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        out.push(line.clone());
        if line == "ready" {
            break;
        }
    }
    assert_eq!(
        out,
        [
            format!("first master {}", primary.addr().port()),
            "ready".into()
        ]
    );
    // The client is writing; the primary dies under it.
    let old = primary.addr().port();
    primary.shutdown();
    out.extend(lines.map(|l| l.unwrap()));
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{out:?}\n{stderr}\n{}", sentinels.logs());
    eprintln!("the client's account: {out:?}");
    let new = sentinels.wait_for_new_primary(old);
    assert!(out.contains(&format!("new master {new}")), "{out:?}");
    let errors: u64 = out
        .iter()
        .find_map(|l| l.strip_prefix("errors "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(errors > 0, "the client saw the primary go: {out:?}");
    let (first, last): (u64, u64) = out
        .iter()
        .find_map(|l| l.strip_prefix("after "))
        .map(|l| {
            let (a, b) = l.split_once(' ').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .unwrap();
    assert!(last >= first + 49, "{out:?}");
    // Every write acknowledged after the failover is on the new primary, and replicated.
    let (promoted, other) = promoted_and_other(&replicas, new);
    let mut n = Conn::connect(promoted.addr()).unwrap();
    for i in first..=last {
        assert_eq!(
            text(&mut n, &["GET", &format!("k:{i}")]),
            format!("${}\r\n{i}\r\n", i.to_string().len())
        );
    }
    assert_eq!(text(&mut n, &["WAIT", "1", "5000"]), ":1\r\n");
    let mut o = Conn::connect(other.addr()).unwrap();
    assert_eq!(
        text(&mut o, &["GET", &format!("k:{last}")]),
        format!("${}\r\n{last}\r\n", last.to_string().len())
    );
}

/// The lock lost in a failover, the warning of the lock documents: replication is
/// asynchronous, so a lock acknowledged by the primary may exist nowhere else when it fails.
///
/// Client A takes the lock on the primary while the primary's replicas are cut off (their links
/// dropped and every new PSYNC refused by a fault rule, so that A's SET reaches no replica);
/// `WAIT 1` answers 0 — the warning A could have heeded. The primary then stops answering (a
/// pause, as a long GC pause or a partition would), the sentinels promote a replica, and client
/// B, asking the sentinels where the primary is, takes the same lock there: both hold it. When
/// the old primary wakes it still says A holds it, until the sentinels demote it and it
/// resynchronises from the new primary, dropping A's lock without telling A.
#[test]
fn a_lock_is_lost_when_sentinel_promotes_a_replica_it_never_reached() {
    let _serial = serial();
    let (primary, replicas) = three_nodes();
    let Some(sentinels) = Sentinels::start("sentinel lock loss", primary.addr()) else {
        return;
    };
    sentinels.wait_until_settled();
    let old = primary.addr().port();
    let mut a = Conn::connect(primary.addr()).unwrap();
    // Cut the replicas off: their reconnections are refused at PSYNC.
    primary.faults().close("psync", "*");
    primary.faults().close("sync", "*");
    assert_eq!(
        text(&mut a, &["CLIENT", "KILL", "TYPE", "replica"]),
        ":2\r\n"
    );
    assert_eq!(
        text(&mut a, &["SET", "lock", "tokenA", "NX", "PX", "30000"]),
        "+OK\r\n"
    );
    // A's lock is on no replica, and WAIT says so.
    assert_eq!(text(&mut a, &["WAIT", "1", "200"]), ":0\r\n");
    for replica in &replicas {
        let mut r = Conn::connect(replica.addr()).unwrap();
        assert_eq!(text(&mut r, &["GET", "lock"]), "$-1\r\n");
    }
    // The primary stops answering.
    primary.faults().pause(Duration::from_secs(120));
    let new = sentinels.wait_for_new_primary(old);
    let (promoted, _) = promoted_and_other(&replicas, new);
    // Client B finds the primary through the sentinels, as a Sentinel-aware client does.
    let reported = strings(
        sentinels.addrs()[1],
        &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", NAME],
    );
    assert_eq!(reported, ["127.0.0.1", &new.to_string()]);
    let mut b = Conn::connect(addr_of(new)).unwrap();
    assert_eq!(
        text(&mut b, &["SET", "lock", "tokenB", "NX", "PX", "30000"]),
        "+OK\r\n"
    );
    assert_eq!(promoted.addr().port(), new);
    // The old primary wakes: it still says A holds the lock, while the new one says B does.
    primary.faults().clear();
    primary.faults().pause(Duration::ZERO);
    assert_eq!(text(&mut a, &["GET", "lock"]), "$6\r\ntokenA\r\n");
    assert_eq!(text(&mut b, &["GET", "lock"]), "$6\r\ntokenB\r\n");
    // The sentinels demote it; its resync from the new primary replaces A's lock with B's.
    // (A new connection each time: the demotion's CLIENT KILL TYPE normal closes them.)
    sentinels.wait_for("the old primary to follow the new one", 25, || {
        strings(primary.addr(), &["GET", "lock"]) == ["tokenB"]
    });
    assert_eq!(strings(primary.addr(), &["ROLE"])[0], "slave");
}

/// The transaction a sentinel promotes (or repoints) a replica with, sent to an embedis replica
/// and to a redis-server replica alike: the same replies (CONFIG REWRITE fails without a config
/// file, inside the transaction, without aborting it), and the same effect — the other normal
/// and pub/sub clients disconnected, the sender kept, the node a primary.
#[test]
fn the_promotion_transaction_answers_as_redis_does() {
    let run = |addr: SocketAddr| {
        let mut sub = Conn::connect(addr).unwrap();
        text(&mut sub, &["SUBSCRIBE", "__sentinel__:hello"]);
        let mut other = Conn::connect(addr).unwrap();
        assert_eq!(text(&mut other, &["PING"]), "+PONG\r\n");
        let mut c = Conn::connect(addr).unwrap();
        text(&mut c, &["CLIENT", "SETNAME", "sentinel-0123abcd-cmd"]);
        let mut replies = Vec::new();
        for args in [
            &["MULTI"][..],
            &["SLAVEOF", "NO", "ONE"],
            &["CONFIG", "REWRITE"],
            &["CLIENT", "KILL", "TYPE", "normal"],
            &["CLIENT", "KILL", "TYPE", "pubsub"],
            &["EXEC"],
        ] {
            replies.push(text(&mut c, args));
        }
        replies.push(field(&text(&mut c, &["INFO", "replication"]), "role"));
        let closed = |conn: &mut Conn| {
            matches!(
                conn.read_within(Duration::from_secs(5)),
                support::Received::Closed
            )
        };
        replies.push(format!("normal closed: {}", closed(&mut other)));
        replies.push(format!("subscriber closed: {}", closed(&mut sub)));
        replies
    };
    let primary = support::builder().start().unwrap();
    let replica = replica_of(primary.addr());
    let ours = run(replica.addr());
    let Some(redis) = support::RedisServer::start(
        "sentinel promotion transaction",
        &[
            "--replicaof",
            "127.0.0.1",
            &primary.addr().port().to_string(),
        ],
    ) else {
        return;
    };
    let theirs = run(redis.addr());
    assert_eq!(ours, theirs);
    assert_eq!(
        ours[5],
        "*4\r\n+OK\r\n-ERR The server is running without a config file\r\n:1\r\n:1\r\n"
    );
}

/// With passwords everywhere: the nodes' `requirepass`, the replicas' `masterauth`, and the
/// sentinels' `auth-pass` (AUTH before CLIENT SETNAME, PING, INFO, PUBLISH and SUBSCRIBE). A
/// sentinel that could not authenticate would see no replicas and no other sentinel.
#[test]
fn sentinel_fails_over_password_protected_embedis_nodes() {
    let _serial = serial();
    const PASSWORD: &str = "s3cret";
    let primary = support::builder().password(PASSWORD).start().unwrap();
    let replicas: Vec<embedis::Server> = (0..2)
        .map(|_| {
            replica_with(
                primary.addr(),
                &[("requirepass", PASSWORD), ("masterauth", PASSWORD)],
            )
        })
        .collect();
    wait_for_links(&replicas, Some(PASSWORD));
    let Some(sentinels) = Sentinels::start_with(
        "sentinel with passwords",
        primary.addr(),
        &format!("sentinel auth-pass {NAME} {PASSWORD}\n"),
    ) else {
        return;
    };
    sentinels.wait_until_settled();
    let old = primary.addr().port();
    primary.shutdown();
    let new = sentinels.wait_for_new_primary(old);
    let (_, other) = promoted_and_other(&replicas, new);
    sentinels.wait_for("the other replica to follow the new primary", 15, || {
        let Ok(mut c) = Conn::connect(other.addr()) else {
            return false;
        };
        text(&mut c, &["AUTH", PASSWORD]);
        let info = text(&mut c, &["INFO", "replication"]);
        field(&info, "master_port") == new.to_string() && field(&info, "master_link_status") == "up"
    });
}

/// `SENTINEL FAILOVER`, the switchover an operator asks for while the primary is healthy: a
/// replica is promoted without waiting for a failure, and the old primary, still running, is
/// demoted by the sentinels (`REPLICAOF` to the new one) and follows it.
#[test]
fn sentinel_failover_command_switches_over_and_the_old_primary_follows() {
    let _serial = serial();
    let (primary, replicas) = three_nodes();
    let mut p = Conn::connect(primary.addr()).unwrap();
    assert_eq!(text(&mut p, &["SET", "before", "1"]), "+OK\r\n");
    assert_eq!(text(&mut p, &["WAIT", "2", "5000"]), ":2\r\n");
    let Some(sentinels) = Sentinels::start("sentinel switchover", primary.addr()) else {
        return;
    };
    sentinels.wait_until_settled();
    let old = primary.addr().port();
    assert_eq!(
        strings(sentinels.addrs()[0], &["SENTINEL", "FAILOVER", NAME]),
        ["OK"]
    );
    let new = sentinels.wait_for_new_primary(old);
    let (promoted, _) = promoted_and_other(&replicas, new);
    // The old primary is told to follow the new one (fresh connections: the demotion closes
    // normal clients).
    sentinels.wait_for("the old primary to follow the new one", 25, || {
        let info = strings(primary.addr(), &["INFO", "replication"]).concat();
        field(&info, "role") == "slave"
            && field(&info, "master_port") == new.to_string()
            && field(&info, "master_link_status") == "up"
    });
    let mut n = Conn::connect(promoted.addr()).unwrap();
    assert_eq!(text(&mut n, &["SET", "after", "1"]), "+OK\r\n");
    assert_eq!(text(&mut n, &["WAIT", "2", "5000"]), ":2\r\n");
    let mut p = Conn::connect(primary.addr()).unwrap();
    assert_eq!(
        text(&mut p, &["MGET", "before", "after"]),
        "*2\r\n$1\r\n1\r\n$1\r\n1\r\n"
    );
    assert_eq!(
        text(&mut p, &["SET", "k", "v"]),
        "-READONLY You can't write against a read only replica.\r\n"
    );
}
