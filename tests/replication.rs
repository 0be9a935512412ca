//! Replication, the primary's side, against the real thing: a redis-server 7.0 started with
//! `--replicaof` an embedis server does a full sync (our RDB image), follows the write stream
//! (every type, TTLs, scripts), continues with a partial resync after `CLIENT KILL TYPE replica`,
//! and ends with the same DEBUG DIGEST. And REPLICAOF's role switch on embedis: writes refused
//! with `-READONLY`, ROLE and INFO as a replica, NO ONE under a new replication ID.
//!
//! The redis-server parts are skipped loudly when it is missing, unless EMBEDIS_REQUIRE_REDIS=1.

mod support;

use std::time::{Duration, Instant};
use support::{Conn, RedisServer};

fn text(c: &mut Conn, args: &[&str]) -> String {
    String::from_utf8_lossy(&c.command(args)).into_owned()
}

fn field(info: &str, name: &str) -> String {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn redis_replicates_from_embedis_with_full_and_partial_resync() {
    let ours = embedis::Server::builder()
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
    wait_for("the link to come up", || {
        field(
            &text(&mut r, &["INFO", "replication"]),
            "master_link_status",
        ) == "up"
    });
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
    let same_digest = |e: &mut Conn, r: &mut Conn| {
        wait_for("the replica to catch up", || {
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
    wait_for("the replica to reconnect", || {
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
    let ours = embedis::Server::builder().start().unwrap();
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
    let ours = embedis::Server::builder().start().unwrap();
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
