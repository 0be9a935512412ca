//! Replication against the real thing, both ways. A redis-server 7.0 started with `--replicaof`
//! an embedis server does a full sync (our RDB image), follows the write stream (every type,
//! TTLs, scripts), continues with a partial resync after `CLIENT KILL TYPE replica`, and ends
//! with the same DEBUG DIGEST; embedis as the replica of a redis-server does the same, with the
//! diskless and the disk transfer, evictions and expiries on the primary. Chains and failover
//! among embedis servers (a replica of a replica; REPLICAOF NO ONE and the old primary
//! continuing from the new one with PSYNC), WAIT counting acknowledgements, min-replicas against
//! real replicas, a replica's expired keys (hidden, not deleted, until the primary's DEL), and
//! `replica-serve-stale-data no`. And REPLICAOF's role switch: writes refused with `-READONLY`,
//! ROLE and INFO as a replica, NO ONE under a new replication ID.
//!
//! The redis-server parts are skipped loudly when it is missing, unless EMBEDIS_REQUIRE_REDIS=1.

use crate::support;
use support::{eventually, field, link_up, text};

use std::time::Duration;
use support::{Conn, RedisServer};

/// On a primary: a key that expires (read after its time: a DEL for the replicas) and
/// evictions (maxmemory set `margin` bytes under the memory in use for one write).
fn expire_and_evict(c: &mut Conn, margin: u64) {
    text(c, &["SET", "short", "v", "PX", "50"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(text(c, &["GET", "short"]), "$-1\r\n");
    text(c, &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
    let used: u64 = field(&text(c, &["INFO", "memory"]), "used_memory")
        .parse()
        .unwrap();
    text(
        c,
        &["CONFIG", "SET", "maxmemory", &(used - margin).to_string()],
    );
    text(c, &["SET", "trigger", "eviction"]);
    text(c, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_ne!(field(&text(c, &["INFO", "stats"]), "evicted_keys"), "0");
}

#[test]
fn redis_replicates_from_embedis_with_full_and_partial_resync() {
    let ours = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut e = Conn::connect(ours.addr()).unwrap();
    assert_eq!(text(&mut e, &["DEBUG", "POPULATE", "500"]), "+OK\r\n");
    text(&mut e, &["RPUSH", "list", "a", "b", "c"]);
    text(&mut e, &["SET", "ttl", "v", "PX", "100000"]);
    let port = ours.addr().port().to_string();
    let Some(redis) = RedisServer::start(
        "replication",
        &[
            "--enable-debug-command",
            "yes",
            "--replicaof",
            "127.0.0.1",
            &port,
        ],
    ) else {
        return;
    };
    let mut r = Conn::connect(redis.addr()).unwrap();
    eventually("the link to come up", || link_up(&mut r));
    // The stream after the full sync: every type, a TTL, a script's effects, another database.
    text(&mut e, &["SADD", "set", "x", "y"]);
    text(&mut e, &["ZADD", "zset", "1", "m"]);
    text(&mut e, &["HSET", "hash", "f", "v"]);
    text(&mut e, &["XADD", "stream", "*", "f", "v"]);
    text(&mut e, &["INCR", "counter"]);
    text(&mut e, &["EXPIRE", "counter", "1000"]);
    text(
        &mut e,
        &[
            "EVAL",
            "redis.call('set','lua','1') redis.call('lpush','list','z')",
            "0",
        ],
    );
    text(&mut e, &["SELECT", "3"]);
    text(&mut e, &["SET", "in-db-3", "1"]);
    text(&mut e, &["SELECT", "0"]);
    // An expiry and evictions reach the replica as DELs.
    expire_and_evict(&mut e, 10_000);
    let same_digest = |e: &mut Conn, r: &mut Conn| {
        eventually("the replica to catch up", || {
            text(e, &["DEBUG", "DIGEST"]) == text(r, &["DEBUG", "DIGEST"])
        });
    };
    same_digest(&mut e, &mut r);
    let info = text(&mut e, &["INFO", "replication"]);
    assert_eq!(field(&info, "connected_slaves"), "1", "{info}");
    assert_eq!(
        field(&text(&mut r, &["INFO", "replication"]), "master_replid"),
        field(&info, "master_replid")
    );
    // A dropped link continues from the backlog rather than with a new full sync.
    let stats = |e: &mut Conn| text(e, &["INFO", "stats"]);
    assert_eq!(field(&stats(&mut e), "sync_full"), "1");
    assert_eq!(
        text(&mut e, &["CLIENT", "KILL", "TYPE", "replica"]),
        ":1\r\n"
    );
    text(&mut e, &["SET", "while-away", "1"]);
    eventually("the replica to reconnect", || {
        field(&stats(&mut e), "sync_partial_ok") == "1"
    });
    text(&mut e, &["SET", "after-reconnect", "1"]);
    same_digest(&mut e, &mut r);
    assert_eq!(
        field(&stats(&mut e), "sync_full"),
        "1",
        "no second full sync"
    );
}

#[test]
fn replicaof_makes_a_read_only_replica_and_no_one_a_primary_again() {
    let ours = support::builder().start().unwrap();
    let mut c = Conn::connect(ours.addr()).unwrap();
    let replid = field(&text(&mut c, &["INFO", "replication"]), "master_replid");
    assert_eq!(text(&mut c, &["REPLICAOF", "127.0.0.1", "1"]), "+OK\r\n");
    assert_eq!(
        text(&mut c, &["REPLICAOF", "127.0.0.1", "1"]),
        "+OK Already connected to specified master\r\n"
    );
    assert_eq!(
        text(&mut c, &["SET", "k", "v"]),
        "-READONLY You can't write against a read only replica.\r\n"
    );
    // From a script, with where it happened (redis-server 7.0 answers the same).
    assert_eq!(
        text(&mut c, &["EVAL", "return redis.call('set','k','v')", "0"]),
        "-READONLY You can't write against a read only replica. script: \
         d223ed8c7345b684e8ed044ed472601f536fa58b, on @user_script:1.\r\n"
    );
    assert_eq!(text(&mut c, &["GET", "k"]), "$-1\r\n");
    assert_eq!(
        text(&mut c, &["ROLE"]),
        "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:1\r\n$7\r\nconnect\r\n:-1\r\n"
    );
    let info = text(&mut c, &["INFO", "replication"]);
    assert_eq!(field(&info, "role"), "slave");
    assert_eq!(field(&info, "master_link_status"), "down");
    assert_eq!(
        text(&mut c, &["SYNC"]),
        "-NOMASTERLINK Can't SYNC while not connected with my master\r\n"
    );
    assert_eq!(
        text(&mut c, &["REPLICAOF", "127.0.0.1", "abc"]),
        "-ERR Invalid master port\r\n"
    );
    assert_eq!(text(&mut c, &["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    let info = text(&mut c, &["INFO", "replication"]);
    assert_eq!(field(&info, "role"), "master");
    assert_eq!(field(&info, "master_replid2"), replid);
    assert_ne!(field(&info, "master_replid"), replid);
    assert_eq!(field(&info, "second_repl_offset"), "1");
    assert_eq!(text(&mut c, &["SET", "k", "v"]), "+OK\r\n");
}

/// What a replica attached by SYNC reads: the RDB image as a bulk payload, then the writes made
/// after it, starting with the SELECT of their database — and no PING before a whole
/// `repl-ping-replica-period` has passed (Redis's suite reads streams with it set to 3600).
#[test]
fn sync_sends_the_image_then_the_stream_without_an_early_ping() {
    use std::io::{BufRead, BufReader, Read, Write};
    let ours = support::builder().start().unwrap();
    let mut c = Conn::connect(ours.addr()).unwrap();
    text(
        &mut c,
        &["CONFIG", "SET", "repl-ping-replica-period", "3600"],
    );
    text(&mut c, &["SET", "before", "1"]);
    let stream = std::net::TcpStream::connect(ours.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    (&stream).write_all(b"SYNC\r\n").unwrap();
    let mut reader = BufReader::new(&stream);
    let mut header = String::new();
    reader.read_line(&mut header).unwrap();
    let len: usize = header.trim_start_matches('$').trim().parse().unwrap();
    let mut image = vec![0; len];
    reader.read_exact(&mut image).unwrap();
    assert!(image.starts_with(b"REDIS0010"), "{header}");
    // Several ticks pass (the server's hz is 10) before the next write.
    std::thread::sleep(Duration::from_millis(300));
    text(&mut c, &["SELECT", "2"]);
    text(&mut c, &["SET", "after", "1"]);
    let expected =
        b"*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n1\r\n";
    let mut got = vec![0; expected.len()];
    reader.read_exact(&mut got).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(expected)
    );
}

/// Starts an embedis replica of `primary` (a `host:port` address).
fn replica_of(primary: std::net::SocketAddr) -> embedis::Server {
    replica_of_with_threads(primary, 1)
}

fn replica_of_with_threads(primary: std::net::SocketAddr, io_threads: u32) -> embedis::Server {
    support::builder()
        .config("io-threads", &io_threads.to_string())
        .unwrap()
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("replicaof", &format!("{} {}", primary.ip(), primary.port()))
        .unwrap()
        .start()
        .unwrap()
}

fn same_digest(primary: &mut Conn, replica: &mut Conn) {
    eventually("the replica to catch up", || {
        text(primary, &["DEBUG", "DIGEST"]) == text(replica, &["DEBUG", "DIGEST"])
    });
}

/// A write load of every type, TTLs, a script, another database.
fn mixed_writes(c: &mut Conn, tag: &str) {
    text(c, &["SELECT", "0"]);
    text(c, &["SET", &format!("s:{tag}"), "v"]);
    text(c, &["RPUSH", &format!("l:{tag}"), "a", "b", "c"]);
    text(c, &["SADD", &format!("set:{tag}"), "x", "y", "1", "2"]);
    text(c, &["ZADD", &format!("z:{tag}"), "1", "m", "2.5", "n"]);
    text(c, &["HSET", &format!("h:{tag}"), "f", "v", "g", "w"]);
    text(c, &["XADD", &format!("x:{tag}"), "*", "f", "v"]);
    text(c, &["PFADD", &format!("hll:{tag}"), "a", "b", "c"]);
    text(c, &["INCRBYFLOAT", &format!("f:{tag}"), "1.5"]);
    text(c, &["SET", &format!("ttl:{tag}"), "v", "EX", "1000"]);
    text(
        c,
        &[
            "EVAL",
            "redis.call('incr', KEYS[1]) redis.call('lpush', KEYS[2], 'z')",
            "2",
            &format!("lua:{tag}"),
            &format!("l:{tag}"),
        ],
    );
    text(c, &["SELECT", "5"]);
    text(c, &["SET", &format!("db5:{tag}"), "1"]);
    text(c, &["SELECT", "0"]);
}

fn embedis_follows_redis(diskless: bool, io_threads: u32) {
    let mut args = vec![
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ];
    if !diskless {
        args.extend(["--repl-diskless-sync", "no"]);
    }
    let Some(redis) = RedisServer::start("replica-of-redis", &args) else {
        return;
    };
    let mut r = Conn::connect(redis.addr()).unwrap();
    text(&mut r, &["DEBUG", "POPULATE", "1000"]);
    mixed_writes(&mut r, "before");
    let ours = replica_of_with_threads(redis.addr(), io_threads);
    let mut e = Conn::connect(ours.addr()).unwrap();
    eventually("the link to come up", || link_up(&mut e));
    same_digest(&mut r, &mut e);
    mixed_writes(&mut r, "after");
    // Keys that expire and keys evicted on the primary reach the replica as DELs.
    expire_and_evict(&mut r, 20_000);
    same_digest(&mut r, &mut e);
    // The replica's view as Redis shows it.
    let info = text(&mut e, &["INFO", "replication"]);
    assert_eq!(field(&info, "role"), "slave", "{info}");
    let primary_info = text(&mut r, &["INFO", "replication"]);
    assert_eq!(
        field(&info, "master_replid"),
        field(&primary_info, "master_replid")
    );
    eventually("the offsets to agree", || {
        field(&text(&mut e, &["INFO", "replication"]), "slave_repl_offset")
            == field(
                &text(&mut r, &["INFO", "replication"]),
                "master_repl_offset",
            )
    });
    assert_eq!(
        text(&mut e, &["SET", "k", "v"]),
        "-READONLY You can't write against a read only replica.\r\n"
    );
    // The primary sees our acknowledgements (offset and lag in its slave0 line).
    eventually("an ACK with the current offset", || {
        let info = text(&mut r, &["INFO", "replication"]);
        let offset = field(&info, "master_repl_offset");
        field(&info, "slave0").contains(&format!("offset={offset},"))
    });
    assert_eq!(text(&mut r, &["WAIT", "1", "5000"]), ":1\r\n");
    // A dropped link continues from the primary's backlog.
    assert_eq!(field(&text(&mut r, &["INFO", "stats"]), "sync_full"), "1");
    assert_eq!(
        text(&mut r, &["CLIENT", "KILL", "TYPE", "replica"]),
        ":1\r\n"
    );
    mixed_writes(&mut r, "while-away");
    eventually("the replica to reconnect", || {
        field(&text(&mut r, &["INFO", "stats"]), "sync_partial_ok") == "1"
    });
    mixed_writes(&mut r, "after-reconnect");
    same_digest(&mut r, &mut e);
    assert_eq!(field(&text(&mut r, &["INFO", "stats"]), "sync_full"), "1");
}

#[test]
fn embedis_follows_redis_with_a_diskless_transfer() {
    embedis_follows_redis(true, 1);
}

#[test]
fn embedis_follows_redis_with_a_disk_transfer() {
    embedis_follows_redis(false, 1);
}

/// With `io-threads 2` the link to the primary runs on the executor thread.
#[test]
fn embedis_with_io_threads_follows_redis() {
    embedis_follows_redis(true, 2);
}

#[test]
fn a_chain_of_embedis_replicas_fails_over_and_continues() {
    let a = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut ca = Conn::connect(a.addr()).unwrap();
    mixed_writes(&mut ca, "one");
    let b = replica_of(a.addr());
    let mut cb = Conn::connect(b.addr()).unwrap();
    eventually("b's link", || link_up(&mut cb));
    let c = replica_of(b.addr());
    let mut cc = Conn::connect(c.addr()).unwrap();
    eventually("c's link", || link_up(&mut cc));
    mixed_writes(&mut ca, "two");
    same_digest(&mut ca, &mut cb);
    same_digest(&mut ca, &mut cc);
    // One history down the chain: the same ID and offsets.
    let replid = field(&text(&mut ca, &["INFO", "replication"]), "master_replid");
    for conn in [&mut cb, &mut cc] {
        assert_eq!(
            field(&text(conn, &["INFO", "replication"]), "master_replid"),
            replid
        );
    }
    // WAIT counts a's direct replica only.
    text(&mut ca, &["INCR", "n"]);
    assert_eq!(text(&mut ca, &["WAIT", "1", "0"]), ":1\r\n");
    assert_eq!(text(&mut ca, &["WAIT", "2", "200"]), ":1\r\n");
    assert_eq!(
        text(&mut cb, &["WAIT", "1", "0"]),
        "-ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.\r\n"
    );
    // Failover: b becomes the primary, a follows it — continuing, not resyncing.
    assert_eq!(text(&mut cb, &["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    assert_eq!(text(&mut cb, &["SET", "after-failover", "1"]), "+OK\r\n");
    assert_eq!(
        text(
            &mut ca,
            &[
                "REPLICAOF",
                &b.addr().ip().to_string(),
                &b.addr().port().to_string()
            ]
        ),
        "+OK\r\n"
    );
    eventually("a's link to b", || link_up(&mut ca));
    same_digest(&mut cb, &mut ca);
    same_digest(&mut cb, &mut cc);
    let stats = text(&mut cb, &["INFO", "stats"]);
    assert_eq!(
        field(&stats, "sync_full"),
        "1",
        "only c's first sync: {stats}"
    );
    assert_eq!(text(&mut ca, &["GET", "after-failover"]), "$1\r\n1\r\n");
    // The new history: b's new ID, the old one as the previous one.
    let info = text(&mut cb, &["INFO", "replication"]);
    assert_eq!(field(&info, "master_replid2"), replid);
    assert_eq!(
        field(&text(&mut ca, &["INFO", "replication"]), "master_replid"),
        field(&info, "master_replid")
    );
}

#[test]
fn min_replicas_to_write_counts_acknowledging_replicas() {
    let a = support::builder().start().unwrap();
    let mut ca = Conn::connect(a.addr()).unwrap();
    text(&mut ca, &["CONFIG", "SET", "min-replicas-to-write", "1"]);
    text(&mut ca, &["CONFIG", "SET", "min-replicas-max-lag", "10"]);
    assert_eq!(
        text(&mut ca, &["SET", "k", "v"]),
        "-NOREPLICAS Not enough good replicas to write.\r\n"
    );
    let b = replica_of(a.addr());
    let mut cb = Conn::connect(b.addr()).unwrap();
    eventually("b's link", || link_up(&mut cb));
    eventually("a good replica", || {
        text(&mut ca, &["SET", "k", "v"]) == "+OK\r\n"
    });
    assert_eq!(
        field(
            &text(&mut ca, &["INFO", "replication"]),
            "min_slaves_good_slaves"
        ),
        "1"
    );
    drop(cb);
    b.shutdown();
    eventually("the replica to be gone", || {
        text(&mut ca, &["SET", "k", "v"]) == "-NOREPLICAS Not enough good replicas to write.\r\n"
    });
}

#[test]
fn a_replica_hides_expired_keys_until_its_primary_deletes_them() {
    let a = support::builder()
        .clock(embedis::Clock::manual())
        .start()
        .unwrap();
    let mut ca = Conn::connect(a.addr()).unwrap();
    let b = support::builder()
        .clock(embedis::Clock::manual())
        .config("replicaof", &format!("127.0.0.1 {}", a.addr().port()))
        .unwrap()
        .start()
        .unwrap();
    let mut cb = Conn::connect(b.addr()).unwrap();
    eventually("b's link", || link_up(&mut cb));
    text(&mut ca, &["SET", "k", "v", "PX", "1000"]);
    eventually("k on b", || text(&mut cb, &["EXISTS", "k"]) == ":1\r\n");
    // On the replica's clock the key is past its time: clients see it gone, it stays.
    b.clock().advance(Duration::from_secs(5));
    assert_eq!(text(&mut cb, &["GET", "k"]), "$-1\r\n");
    assert_eq!(text(&mut cb, &["DBSIZE"]), ":1\r\n");
    // On the primary it is still alive: a command on it applies on the replica too.
    text(&mut ca, &["APPEND", "k", "w"]);
    text(&mut ca, &["PERSIST", "k"]);
    eventually("the PERSIST", || {
        text(&mut cb, &["GET", "k"]) == "$2\r\nvw\r\n"
    });
    // Now the primary expires one: its DEL removes it on the replica.
    text(&mut ca, &["SET", "j", "v", "PX", "1000"]);
    eventually("j on b", || text(&mut cb, &["DBSIZE"]) == ":2\r\n");
    a.clock().advance(Duration::from_secs(5));
    assert_eq!(text(&mut ca, &["GET", "j"]), "$-1\r\n");
    eventually("the DEL", || text(&mut cb, &["DBSIZE"]) == ":1\r\n");
}

#[test]
fn a_replica_without_its_primary_serves_stale_data_or_masterdown() {
    let ours = support::builder().start().unwrap();
    let mut c = Conn::connect(ours.addr()).unwrap();
    text(&mut c, &["SET", "k", "v"]);
    assert_eq!(text(&mut c, &["REPLICAOF", "127.0.0.1", "1"]), "+OK\r\n");
    assert_eq!(text(&mut c, &["GET", "k"]), "$1\r\nv\r\n");
    text(&mut c, &["CONFIG", "SET", "replica-serve-stale-data", "no"]);
    let masterdown =
        "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n";
    assert_eq!(text(&mut c, &["GET", "k"]), masterdown);
    assert_eq!(text(&mut c, &["PING"]), masterdown);
    // Commands flagged `stale` still run.
    assert!(text(&mut c, &["INFO", "replication"]).contains("master_link_status:down"));
    // An EXEC is judged by its queue, even when the link went down after queueing.
    text(&mut c, &["REPLICAOF", "NO", "ONE"]);
    let mut other = Conn::connect(ours.addr()).unwrap();
    assert_eq!(text(&mut c, &["MULTI"]), "+OK\r\n");
    assert_eq!(text(&mut c, &["GET", "k"]), "+QUEUED\r\n");
    text(&mut other, &["REPLICAOF", "127.0.0.1", "1"]);
    assert_eq!(
        text(&mut c, &["EXEC"]),
        "-EXECABORT Transaction discarded because of: MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"
    );
}

#[test]
fn a_silent_replica_is_dropped_after_repl_timeout_but_a_sync_one_is_kept() {
    use std::io::Write;
    let ours = support::builder()
        .clock(embedis::Clock::manual())
        .start()
        .unwrap();
    let mut c = Conn::connect(ours.addr()).unwrap();
    text(&mut c, &["CONFIG", "SET", "repl-timeout", "5"]);
    let psync = std::net::TcpStream::connect(ours.addr()).unwrap();
    (&psync).write_all(b"PSYNC ? -1\r\n").unwrap();
    let sync = std::net::TcpStream::connect(ours.addr()).unwrap();
    (&sync).write_all(b"SYNC\r\n").unwrap();
    eventually("two replicas", || {
        field(&text(&mut c, &["INFO", "replication"]), "connected_slaves") == "2"
    });
    // Neither acknowledges; only the PSYNC one is expected to.
    ours.clock().advance(Duration::from_secs(4));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        field(&text(&mut c, &["INFO", "replication"]), "connected_slaves"),
        "2"
    );
    ours.clock().advance(Duration::from_secs(2));
    eventually("the silent PSYNC replica to be dropped", || {
        field(&text(&mut c, &["INFO", "replication"]), "connected_slaves") == "1"
    });
    assert!(text(&mut c, &["CLIENT", "LIST", "TYPE", "replica"]).contains("cmd=sync"));
}

/// The documents' warning, in one process: a lock written to the primary but not yet to its
/// replicas is lost when a replica takes over, and a second client takes the same lock. WAIT
/// would have told the first client that its write reached no replica.
#[test]
fn a_lock_is_lost_when_a_replica_that_missed_it_takes_over() {
    let mut set = embedis::ReplicaSet::start_with(2, support::with_dir).unwrap();
    // A partition: the replicas stop receiving the primary's stream.
    for replica in set.replicas() {
        replica.faults().hold_replication(true);
    }
    let mut a = Conn::connect(set.primary().addr()).unwrap();
    assert_eq!(
        text(&mut a, &["SET", "lock", "token-a", "NX", "PX", "30000"]),
        "+OK\r\n"
    );
    // What client A could have learnt: no replica has its write.
    assert_eq!(text(&mut a, &["WAIT", "1", "200"]), ":0\r\n");
    // The primary dies; replica 0, which never saw the lock, is promoted. Its hold stays on
    // until it is a primary: released earlier, it could read the lock from its socket first.
    set.fail_over(0);
    set.primary().faults().hold_replication(false);
    let mut b = Conn::connect(set.primary().addr()).unwrap();
    assert_eq!(
        text(&mut b, &["SET", "lock", "token-b", "NX", "PX", "30000"]),
        "+OK\r\n",
        "B takes the lock A believes it holds"
    );
    // The other replica, released, follows the new primary's history: B's lock.
    set.replica(0).faults().hold_replication(false);
    assert!(set.wait_for_replicas(Duration::from_secs(10)));
    assert_eq!(set.replica(0).get("lock"), Some(b"token-b".to_vec()));
}

/// A continued link resumes in the database the primary's stream had selected: the primary
/// sends no SELECT again after a partial resync (found by Redis's replication-psync test,
/// whose replica then applied writes to database 0).
#[test]
fn a_continued_link_resumes_in_the_selected_database() {
    let a = support::builder().start().unwrap();
    let b = replica_of(a.addr());
    let mut ca = Conn::connect(a.addr()).unwrap();
    let mut cb = Conn::connect(b.addr()).unwrap();
    eventually("b's link", || link_up(&mut cb));
    text(&mut ca, &["SELECT", "5"]);
    text(&mut ca, &["SET", "first", "1"]);
    assert_eq!(text(&mut ca, &["WAIT", "1", "5000"]), ":1\r\n");
    assert_eq!(
        text(&mut cb, &["CLIENT", "KILL", "TYPE", "master"]),
        ":1\r\n"
    );
    text(&mut ca, &["SET", "second", "2"]);
    eventually("the partial resync", || {
        field(&text(&mut ca, &["INFO", "stats"]), "sync_partial_ok") == "1"
    });
    text(&mut ca, &["SET", "third", "3"]);
    assert_eq!(text(&mut ca, &["WAIT", "1", "5000"]), ":1\r\n");
    text(&mut cb, &["SELECT", "5"]);
    assert_eq!(text(&mut cb, &["DBSIZE"]), ":3\r\n");
    text(&mut cb, &["SELECT", "0"]);
    assert_eq!(text(&mut cb, &["DBSIZE"]), ":0\r\n");
}

/// The RDB image embedis sends a SYNC replica (the dataset of a fresh server with one key).
fn an_rdb_image() -> Vec<u8> {
    use std::io::{BufRead, BufReader, Read, Write};
    let source = support::builder().start().unwrap();
    source.set("before", "0");
    let stream = std::net::TcpStream::connect(source.addr()).unwrap();
    (&stream).write_all(b"SYNC\r\n").unwrap();
    let mut reader = BufReader::new(&stream);
    let mut header = String::new();
    reader.read_line(&mut header).unwrap();
    let len: usize = header.trim_start_matches('$').trim().parse().unwrap();
    let mut image = vec![0; len];
    reader.read_exact(&mut image).unwrap();
    image
}

/// A primary played by the test: it answers the handshake of one connection and returns the
/// PSYNC's arguments, leaving the socket for the test to write the rest.
fn accept_psync(listener: &std::net::TcpListener) -> (std::net::TcpStream, String, String) {
    use std::io::{Read, Write};
    let (mut socket, _) = listener.accept().unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut decoder = embedis_protocol::RequestDecoder::new(1 << 20);
    let mut input = bytes::BytesMut::new();
    loop {
        while let Some(args) = decoder.decode(&mut input, true).unwrap() {
            let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
            match name.as_str() {
                "PING" => socket.write_all(b"+PONG\r\n").unwrap(),
                "REPLCONF" => socket.write_all(b"+OK\r\n").unwrap(),
                "PSYNC" => {
                    let id = String::from_utf8_lossy(&args[1]).into_owned();
                    let offset = String::from_utf8_lossy(&args[2]).into_owned();
                    return (socket, id, offset);
                }
                other => panic!("unexpected {other} in the handshake"),
            }
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).unwrap();
        assert!(n > 0, "the replica closed the link during the handshake");
        input.extend_from_slice(&chunk[..n]);
    }
}

fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// A diskless transfer followed at once by the stream, in one write: the replica finds the end
/// mark inside the read and applies what follows it (an embedis primary under load sends them
/// so; Redis's replication-psync test found the replica waiting for ever).
/// And a link broken inside a transaction resumes before its MULTI, as Redis's replica counts
/// its offset only outside MULTI: the transaction is applied whole, once.
#[test]
fn a_replica_reads_the_stream_behind_a_diskless_image_and_resumes_before_an_open_multi() {
    use std::io::{BufRead, BufReader, Write};
    let image = an_rdb_image();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    // Its log is kept: if the stream is not applied, the failure says what the link did
    // (`verbose`: an in-process server is silent unless told to follow its `logfile`).
    let log = support::server_dir().join("replica.log");
    let replica = support::builder()
        .verbose()
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("loglevel", "verbose")
        .unwrap()
        .config("logfile", &log.display().to_string())
        .unwrap()
        .config(
            "replicaof",
            &listener.local_addr().unwrap().to_string().replace(':', " "),
        )
        .unwrap()
        .start()
        .unwrap();
    let (mut socket, id, offset) = accept_psync(&listener);
    // A replica started by `replicaof` with no history asks as Redis's does without a
    // cached master.
    assert_eq!((id.as_str(), offset.as_str()), ("?", "-1"));
    let replid = "a".repeat(40);
    let mark = "m".repeat(40);
    let applied = [resp(&["SELECT", "3"]), resp(&["SET", "a", "1"])].concat();
    let open = [resp(&["MULTI"]), resp(&["INCR", "n"])].concat();
    let mut burst = format!("+FULLRESYNC {replid} 100\r\n$EOF:{mark}\r\n").into_bytes();
    burst.extend_from_slice(&image);
    burst.extend_from_slice(mark.as_bytes());
    burst.extend_from_slice(&applied);
    burst.extend_from_slice(&open);
    socket.write_all(&burst).unwrap();
    let mut c = Conn::connect(replica.addr()).unwrap();
    text(&mut c, &["SELECT", "3"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let got = text(&mut c, &["GET", "a"]);
        if got == "$1\r\n1\r\n" {
            break;
        }
        if std::time::Instant::now() > deadline {
            panic!(
                "not within 10 s: the stream behind the image (GET a: {got:?})\n{}\n{}",
                text(&mut c, &["INFO", "replication"]),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(text(&mut c, &["EXISTS", "before"]), ":0\r\n");
    // The link breaks inside the transaction.
    drop(socket);
    let (mut socket, id, offset) = accept_psync(&listener);
    assert_eq!(id, replid);
    assert_eq!(
        offset,
        (100 + applied.len() + 1).to_string(),
        "resumes before the MULTI"
    );
    let mut reply = format!("+CONTINUE {replid}\r\n").into_bytes();
    reply.extend_from_slice(&open);
    reply.extend_from_slice(&resp(&["EXEC"]));
    reply.extend_from_slice(&resp(&["REPLCONF", "GETACK", "*"]));
    socket.write_all(&reply).unwrap();
    // The ACKs count the whole transaction once, and never more (the periodic ones may come
    // first with less).
    let mut reader = BufReader::new(&socket);
    let expected = (100 + applied.len() + open.len() + resp(&["EXEC"]).len()) as u64;
    loop {
        let mut lines = Vec::new();
        for _ in 0..7 {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            lines.push(line.trim().to_string());
        }
        assert_eq!(
            lines[..6],
            ["*3", "$8", "REPLCONF", "$3", "ACK", lines[5].as_str()]
        );
        let acked: u64 = lines[6].parse().unwrap();
        assert!(
            acked <= expected,
            "ACK {acked} beyond the stream ({expected})"
        );
        if acked == expected {
            break;
        }
    }
    assert_eq!(text(&mut c, &["GET", "n"]), "$1\r\n1\r\n");
    assert_eq!(text(&mut c, &["GET", "a"]), "$1\r\n1\r\n", "in database 3");
}

/// A writable replica (`replica-read-only no`) expires the keys its own clients gave a TTL —
/// its primary will never send their DELs — and a client's write to a key the primary let
/// expire starts afresh, while reads only hide it (Redis's replication-3 tests found both).
#[test]
fn a_writable_replica_expires_its_own_keys_and_writes_over_expired_ones() {
    let a = support::builder()
        .clock(embedis::Clock::manual())
        .start()
        .unwrap();
    let b = support::builder()
        .clock(embedis::Clock::manual())
        .replica_of(a.addr())
        .start()
        .unwrap();
    let mut ca = Conn::connect(a.addr()).unwrap();
    let mut cb = Conn::connect(b.addr()).unwrap();
    eventually("b's link", || link_up(&mut cb));
    text(&mut ca, &["SET", "key1", "5", "PX", "1000"]);
    text(&mut ca, &["SET", "key2", "5", "PX", "1000"]);
    assert_eq!(text(&mut ca, &["WAIT", "1", "5000"]), ":1\r\n");
    text(&mut cb, &["CONFIG", "SET", "replica-read-only", "no"]);
    b.clock().advance(Duration::from_secs(2));
    assert_eq!(text(&mut cb, &["INCR", "key1"]), ":1\r\n");
    assert_eq!(text(&mut cb, &["TTL", "key1"]), ":-1\r\n");
    assert_eq!(text(&mut cb, &["GET", "key2"]), "$-1\r\n");
    assert_eq!(text(&mut cb, &["DBSIZE"]), ":2\r\n");
    // Its own keys with a TTL expire on its own clock.
    text(&mut cb, &["SET", "own", "1", "EX", "5"]);
    text(&mut cb, &["SET", "own2", "1"]);
    text(&mut cb, &["EXPIRE", "own2", "5"]);
    assert_eq!(text(&mut cb, &["DBSIZE"]), ":4\r\n");
    b.clock().advance(Duration::from_secs(6));
    eventually("the replica's own keys to expire", || {
        text(&mut cb, &["DBSIZE"]) == ":2\r\n"
    });
    // key2 is the primary's: still there, hidden, until the primary's DEL.
    assert_eq!(text(&mut cb, &["EXISTS", "key2"]), ":0\r\n");
}

/// A command of the primary's stream that fails on the replica (DEBUG REPLICATE of an unknown
/// command; an INCRBY of a value a writable replica changed) is logged as Redis 7.0.15 logs it,
/// with the stream's latest bytes, and counted in `unexpected_error_replies`
/// (integration/replication-4's data-divergence tests).
#[test]
fn an_error_applying_the_primary_stream_is_logged_as_critical() {
    let primary = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let dir = support::temp_dir("replica-critical-log");
    let log = dir.join("replica.log");
    let replica = support::builder()
        .config("replicaof", &format!("127.0.0.1 {}", primary.addr().port()))
        .unwrap()
        .config("logfile", log.to_str().unwrap())
        .unwrap()
        .verbose()
        .start()
        .unwrap();
    let mut p = Conn::connect(primary.addr()).unwrap();
    let mut r = Conn::connect(replica.addr()).unwrap();
    eventually("the link to come up", || link_up(&mut r));
    assert_eq!(
        text(&mut p, &["DEBUG", "REPLICATE", "fake-command-1"]),
        "+OK\r\n"
    );
    text(&mut p, &["SET", "foo", "bar2"]);
    assert_eq!(text(&mut p, &["WAIT", "1", "2000"]), ":1\r\n");
    text(&mut r, &["CONFIG", "SET", "replica-read-only", "no"]);
    text(&mut r, &["SET", "number2", "foo"]);
    assert_eq!(text(&mut p, &["INCRBY", "number2", "1"]), ":1\r\n");
    assert_eq!(text(&mut p, &["WAIT", "1", "2000"]), ":1\r\n");
    assert_eq!(text(&mut r, &["GET", "number2"]), "$3\r\nfoo\r\n");
    let logged = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = logged.lines().collect();
    let unknown = "# == CRITICAL == This replica is sending an error to its master: 'unknown command 'fake-command-1', with args beginning with: ' after processing the command '<unknown>'";
    let incrby = "# == CRITICAL == This replica is sending an error to its master: 'value is not an integer or out of range' after processing the command 'incrby'";
    assert!(lines.iter().any(|l| l.ends_with(unknown)), "{logged}");
    assert!(lines.iter().any(|l| l.ends_with(incrby)), "{logged}");
    let backlog = r#"# Latest backlog is: '"*1\r\n$14\r\nfake-command-1\r\n"#;
    assert!(lines.iter().any(|l| l.contains(backlog)), "{logged}");
    assert_eq!(
        field(
            &text(&mut r, &["INFO", "stats"]),
            "unexpected_error_replies"
        ),
        "2"
    );
}

fn info_number(c: &mut Conn, section: &str, name: &str) -> u64 {
    support::info_field(c, section, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO {section} {name}"))
}

/// The backlog and the replicas share one replication buffer (Redis 7.0's; its
/// integration/replication-buffer unit found embedis copying the stream per replica): a
/// replica whose full sync's image is still going out keeps the stream written meanwhile once,
/// past `repl-backlog-size`; another replica that comes back continues from that far back; the
/// buffer shrinks to the backlog's size when the replica needing it leaves; and `maxmemory`
/// does not count the replicas' share.
#[test]
fn replicas_share_one_replication_buffer_that_outgrows_the_backlog_while_needed() {
    let primary = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut p = Conn::connect(primary.addr()).unwrap();
    text(&mut p, &["CONFIG", "SET", "repl-backlog-size", "16384"]);
    let a = replica_of(primary.addr());
    let mut ca = Conn::connect(a.addr()).unwrap();
    eventually("a's link", || link_up(&mut ca));
    for i in 0..100 {
        text(&mut p, &["SET", &format!("key:{i}"), "v"]);
    }
    // B's image goes out at a second a key: B stays in its transfer for the whole test.
    text(&mut p, &["CONFIG", "SET", "rdb-key-save-delay", "1000000"]);
    let b = replica_of(primary.addr());
    eventually("b's image to go out", || {
        info_number(&mut p, "persistence", "rdb_bgsave_in_progress") == 1
    });
    let value = "v".repeat(10_000);
    for i in 0..200 {
        text(&mut p, &["SET", &format!("big:{i}"), &value]);
    }
    let stream = 200 * 10_000;
    let histlen = info_number(&mut p, "replication", "repl_backlog_histlen");
    assert!(
        histlen > stream,
        "B keeps the stream since its image: {histlen}"
    );
    let total = info_number(&mut p, "memory", "mem_total_replication_buffers");
    assert!(
        total >= stream && total < stream + stream / 4,
        "kept once for two replicas: {total}"
    );
    let replicas_share = info_number(&mut p, "memory", "mem_clients_slaves");
    assert_eq!(replicas_share, total - 16384);
    assert!(info_number(&mut p, "memory", "mem_not_counted_for_evict") > stream - 100_000);
    // A leaves (for B, which cannot serve it before its own sync: A keeps its history),
    // writes go on, and A comes back: it continues from the buffer, whose start is far
    // behind the backlog's size.
    let b_port = b.addr().port().to_string();
    text(&mut ca, &["REPLICAOF", "127.0.0.1", &b_port]);
    for i in 0..50 {
        text(&mut p, &["SET", &format!("more:{i}"), &value]);
    }
    let port = primary.addr().port().to_string();
    text(&mut ca, &["REPLICAOF", "127.0.0.1", &port]);
    eventually("a's link again", || link_up(&mut ca));
    same_digest(&mut p, &mut ca);
    assert_eq!(info_number(&mut p, "stats", "sync_partial_ok"), 1);
    assert_eq!(info_number(&mut p, "stats", "sync_full"), 2);
    // A caught up holds about one block; B's leaving lets the buffer shrink.
    let list = text(&mut p, &["CLIENT", "LIST", "TYPE", "replica"]);
    assert!(list.contains("tot-mem="), "{list}");
    b.shutdown();
    eventually("the buffer to shrink", || {
        info_number(&mut p, "replication", "repl_backlog_histlen") < 100_000
            && info_number(&mut p, "memory", "mem_total_replication_buffers") < 200_000
    });
    assert_eq!(info_number(&mut p, "replication", "connected_slaves"), 1);
    let list = text(&mut p, &["CLIENT", "LIST", "TYPE", "replica"]);
    let tot_mem: u64 = list
        .split(" tot-mem=")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(
        tot_mem < 100_000,
        "a caught-up replica keeps little: {list}"
    );
}

/// Redis 7.0's `replicationSetMaster`: a replica that follows another primary keeps its own
/// replicas; when it continues the same history there (a partial resync), they never notice.
#[test]
fn a_replica_that_changes_primary_keeps_its_replicas_while_the_history_goes_on() {
    let a = support::builder().start().unwrap();
    let mut ca = Conn::connect(a.addr()).unwrap();
    text(&mut ca, &["SET", "k", "1"]);
    let b = replica_of(a.addr());
    let mut cb = Conn::connect(b.addr()).unwrap();
    eventually("b's link", || link_up(&mut cb));
    let c = replica_of(b.addr());
    let mut cc = Conn::connect(c.addr()).unwrap();
    eventually("c's link", || link_up(&mut cc));
    // b follows a port nobody listens on, then a again: c stays linked to b all along.
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = nobody.local_addr().unwrap().port().to_string();
    drop(nobody);
    assert_eq!(text(&mut cb, &["REPLICAOF", "127.0.0.1", &port]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(300));
    assert!(link_up(&mut cc), "c lost its link when b changed primary");
    let (host, a_port) = (a.addr().ip().to_string(), a.addr().port().to_string());
    assert_eq!(text(&mut cb, &["REPLICAOF", &host, &a_port]), "+OK\r\n");
    eventually("b continues from a", || link_up(&mut cb));
    assert_eq!(info_number(&mut ca, "stats", "sync_partial_ok"), 1);
    text(&mut ca, &["SET", "k", "2"]);
    eventually("the write reaches c through b", || {
        text(&mut cc, &["GET", "k"]) == "$1\r\n2\r\n"
    });
    assert_eq!(
        info_number(&mut cb, "stats", "sync_full"),
        1,
        "c synced once"
    );
    assert_eq!(info_number(&mut cb, "stats", "sync_partial_ok"), 0);
}

/// On a replica whose link is down with `replica-serve-stale-data no`, a function runs only if
/// it declares `allow-stale`, and then calls only commands flagged `stale` (Redis's
/// `scriptVerifyAllowStale`; unit/functions found both missing).
#[test]
fn a_stale_replica_runs_only_functions_that_allow_stale_and_their_stale_commands() {
    let server = support::builder().start().unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    let library = "#!lua name=test\n\
        redis.register_function{function_name='f1', callback=function() return 'hello' end, flags={'no-writes'}}\n\
        redis.register_function{function_name='f2', callback=function() return 'hello' end, flags={'allow-stale', 'no-writes'}}\n\
        redis.register_function{function_name='f3', callback=function() return redis.call('get', 'x') end, flags={'allow-stale', 'no-writes'}}\n\
        redis.register_function{function_name='f4', callback=function() return redis.call('info', 'server') end, flags={'allow-stale', 'no-writes'}}";
    assert_eq!(
        text(&mut c, &["FUNCTION", "LOAD", library]),
        "$4\r\ntest\r\n"
    );
    text(&mut c, &["CONFIG", "SET", "replica-serve-stale-data", "no"]);
    text(&mut c, &["REPLICAOF", "127.0.0.1", "1"]);
    assert!(text(&mut c, &["FCALL", "f1", "0"]).starts_with("-MASTERDOWN "));
    assert_eq!(text(&mut c, &["FCALL", "f2", "0"]), "$5\r\nhello\r\n");
    let f3 = text(&mut c, &["FCALL", "f3", "0"]);
    assert!(
        f3.starts_with("-ERR Can not execute the command on a stale replica"),
        "{f3}"
    );
    assert!(text(&mut c, &["FCALL", "f4", "0"]).contains("redis_version"));
    text(&mut c, &["REPLICAOF", "NO", "ONE"]);
    assert_eq!(text(&mut c, &["FCALL", "f3", "0"]), "$-1\r\n");
}

/// A busy script on a primary sees a replica leave (Redis frees a client whose peer closed
/// while a script runs), and having written once it may go on writing though too few
/// replicas remain (Redis's `SCRIPT_WRITE_DIRTY`): Redis's suite, "not enough good replicas
/// state change during long script".
#[test]
fn a_busy_script_sees_a_replica_leave_and_keeps_writing() {
    let a = support::builder()
        .config("busy-reply-threshold", "10")
        .unwrap()
        .start()
        .unwrap();
    let mut ca = Conn::connect(a.addr()).unwrap();
    text(&mut ca, &["CONFIG", "SET", "min-replicas-to-write", "1"]);
    let b = replica_of(a.addr());
    let mut cb = Conn::connect(b.addr()).unwrap();
    eventually("a good replica", || {
        text(&mut ca, &["SET", "x", "before"]) == "+OK\r\n"
    });
    let script = "redis.call('set','x','script value') \
                  while true do \
                    local info = redis.call('info','replication') \
                    if string.match(info, 'connected_slaves:0') then \
                      redis.call('set','x','after') break \
                    end \
                  end \
                  return 1";
    let mut runner = Conn::connect(a.addr()).unwrap();
    runner.send_raw(&Conn::encode(&[
        b"EVAL".as_slice(),
        script.as_bytes(),
        b"1",
        b"x",
    ]));
    eventually("the script is busy", || {
        text(&mut ca, &["PING"]).starts_with("-BUSY")
    });
    assert_eq!(text(&mut cb, &["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    assert_eq!(support::lossy(&runner.read_reply().unwrap().0), ":1\r\n");
    assert_eq!(text(&mut ca, &["GET", "x"]), "$5\r\nafter\r\n");
}

/// CLIENT PAUSE WRITE on a replica holds the primary's stream too (Redis's paused master
/// client reads on and applies nothing): `slave_read_repl_offset` reaches the primary's offset
/// while `slave_repl_offset` and the data stay where the pause found them, and CLIENT UNPAUSE
/// applies what was held, in order. Redis 7.0.15's unit/pause found the stream applied at once.
#[test]
fn a_paused_replica_reads_the_stream_and_applies_it_only_after_the_pause() {
    let primary = support::builder().start().unwrap();
    let mut p = Conn::connect(primary.addr()).unwrap();
    let replica = replica_of(primary.addr());
    let mut r = Conn::connect(replica.addr()).unwrap();
    eventually("the link", || link_up(&mut r));
    text(&mut p, &["SET", "foo", "bar"]);
    let before = info_number(&mut p, "replication", "master_repl_offset");
    eventually("the replica to apply SET foo", || {
        info_number(&mut r, "replication", "slave_repl_offset") == before
    });
    assert_eq!(
        text(&mut r, &["CLIENT", "PAUSE", "100000", "WRITE"]),
        "+OK\r\n"
    );
    text(&mut p, &["SET", "foo2", "bar2"]);
    text(&mut p, &["INCR", "n"]);
    let after = info_number(&mut p, "replication", "master_repl_offset");
    assert!(after > before);
    eventually("the replica to read the held stream", || {
        info_number(&mut r, "replication", "slave_read_repl_offset") == after
    });
    assert_eq!(
        info_number(&mut r, "replication", "slave_repl_offset"),
        before
    );
    assert_eq!(text(&mut r, &["GET", "foo2"]), "$-1\r\n");
    assert_eq!(text(&mut r, &["CLIENT", "UNPAUSE"]), "+OK\r\n");
    eventually("the held stream applied", || {
        info_number(&mut r, "replication", "slave_repl_offset") == after
    });
    assert_eq!(text(&mut r, &["GET", "foo2"]), "$4\r\nbar2\r\n");
    assert_eq!(text(&mut r, &["GET", "n"]), "$1\r\n1\r\n");
    assert_eq!(
        info_number(&mut r, "replication", "slave_read_repl_offset"),
        after
    );
}
