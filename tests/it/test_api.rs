//! The in-process API for lock-client tests: restart with the data kept, the direct helpers
//! (seen by clients, seeing what clients wrote, with a client's side effects), `Nodes`, and
//! clock control — advancing time expires keys and fires timeouts at once, a skew shows in TIME
//! and PTTL. Time moves by the manual clock only; the only waits are for a client to block.

use crate::support;
use support::bulk;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use embedis::{Clock, Nodes, Reply, Server};
use support::Conn;

const SECS: u64 = 1_700_000_000;

fn manual_server(io_threads: usize) -> Server {
    support::builder()
        .clock(Clock::frozen_at(UNIX_EPOCH + Duration::from_secs(SECS)))
        .config("io-threads", &io_threads.to_string())
        .unwrap()
        .start()
        .unwrap()
}

/// Waits (polling, no clock involved) until `n` clients are blocked.
fn wait_blocked_direct(server: &Server, n: usize) {
    let started = Instant::now();
    let want = format!("blocked_clients:{n}\r\n");
    loop {
        let Reply::Verbatim { text, .. } = server.command(&["INFO", "clients"]) else {
            panic!("INFO answers a verbatim string in RESP3");
        };
        if String::from_utf8_lossy(&text).contains(&want) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no client blocked"
        );
        std::thread::yield_now();
    }
}

fn restart_keeps_data_ttls_and_port(io_threads: usize) {
    let mut server = manual_server(io_threads);
    let addr = server.addr();
    let mut c = Conn::connect(addr).unwrap();
    c.command(&["SET", "plain", "v"]);
    c.command(&["SET", "lease", "owner", "PX", "5000"]);
    c.command(&["HSET", "h", "f", "1"]);
    c.command(&["SELECT", "3"]);
    c.command(&["SET", "in3", "x"]);
    let library = "#!lua name=lib\nredis.register_function('hello', function() return 'hi' end)";
    assert_eq!(
        c.command(&["FUNCTION", "LOAD", library]),
        bulk("lib").into_bytes()
    );
    assert_eq!(c.command(&["CONFIG", "SET", "hz", "50"]), b"+OK\r\n");

    server.restart().unwrap();
    assert_eq!(server.addr(), addr, "same address");
    assert!(c.read_reply().is_none(), "clients are disconnected");

    let mut c = Conn::connect(addr).unwrap();
    assert_eq!(c.command(&["GET", "plain"]), bulk("v").into_bytes());
    assert_eq!(
        c.command(&["PTTL", "lease"]),
        b":5000\r\n",
        "TTL on the same clock"
    );
    assert_eq!(c.command(&["HGET", "h", "f"]), bulk("1").into_bytes());
    assert_eq!(c.command(&["FCALL", "hello", "0"]), bulk("hi").into_bytes());
    assert_eq!(c.command(&["SELECT", "3"]), b"+OK\r\n");
    assert_eq!(c.command(&["GET", "in3"]), bulk("x").into_bytes());
    assert_eq!(
        c.command(&["CONFIG", "GET", "hz"]),
        b"*2\r\n$2\r\nhz\r\n$2\r\n10\r\n",
        "CONFIG SET changes are not kept"
    );
    let info = String::from_utf8(c.command(&["INFO", "persistence"])).unwrap();
    assert!(info.contains("rdb_changes_since_last_save:0\r\n"), "{info}");

    // The lease still runs out on the clock it was set on.
    server.clock().advance(Duration::from_millis(5001));
    assert!(!server.exists("lease"));
    assert_eq!(server.dbsize(), 2, "plain and h");
}

#[test]
fn restart_keeps_data_ttls_and_port_single_thread() {
    restart_keeps_data_ttls_and_port(1);
}

#[test]
fn restart_keeps_data_ttls_and_port_io_threads() {
    restart_keeps_data_ttls_and_port(2);
}

#[test]
fn a_key_expired_while_the_server_was_down_is_not_reloaded() {
    let clock = Clock::frozen_at(UNIX_EPOCH + Duration::from_secs(SECS));
    let mut server = support::builder()
        .clock(clock.clone())
        .config("hz", "1")
        .unwrap()
        .start()
        .unwrap();
    // Turn the active cycle off so that only the reload can drop the key.
    server.command(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    server.set_with_ttl("short", "v", Duration::from_millis(100));
    server.set("long", "v");
    clock.advance(Duration::from_millis(101));
    assert_eq!(server.dbsize(), 2, "expired but not deleted yet");
    server.restart().unwrap();
    assert_eq!(server.dbsize(), 1);
    assert_eq!(server.keys("*"), vec![b"long".to_vec()]);
}

#[test]
fn helpers_read_what_clients_wrote() {
    let server = manual_server(1);
    let mut c = Conn::connect(server.addr()).unwrap();
    c.command(&["SET", "s", "value\0\r\n"]);
    c.command(&["SET", "t", "v", "EX", "100"]);
    c.command(&["HSET", "h", "a", "1", "b", "2"]);
    c.command(&["PFADD", "hll", "x", "y", "z"]);
    assert_eq!(server.get("s"), Some(b"value\0\r\n".to_vec()));
    assert_eq!(server.get("missing"), None);
    assert_eq!(server.ttl("t"), 100);
    assert_eq!(server.pttl("t"), 100_000);
    assert_eq!(server.ttl("s"), -1);
    assert_eq!(server.ttl("missing"), -2);
    assert_eq!(
        server.hgetall("h"),
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2".to_vec())
        ]
    );
    assert!(server.hgetall("missing").is_empty());
    assert_eq!(server.pfcount("hll"), 3);
    let mut keys = server.keys("*");
    keys.sort();
    assert_eq!(
        keys,
        vec![b"h".to_vec(), b"hll".to_vec(), b"s".to_vec(), b"t".to_vec()]
    );
    assert!(server.exists("h"));
    assert_eq!(server.dbsize(), 4);
    // Hits and misses are counted as for a client's reads.
    let info = String::from_utf8(c.command(&["INFO", "stats"])).unwrap();
    assert!(info.contains("keyspace_misses:3\r\n"), "{info}");
}

#[test]
fn clients_see_what_helpers_wrote() {
    let server = manual_server(1);
    let mut c = Conn::connect(server.addr()).unwrap();
    server.set("k", "v");
    server.set_with_ttl("lease", "me", Duration::from_millis(1500));
    assert_eq!(server.zadd("z", &[(1.5, "a"), (f64::INFINITY, "b")]), 2);
    assert_eq!(server.zadd("z", &[(2.0, "a")]), 0);
    assert_eq!(c.command(&["GET", "k"]), bulk("v").into_bytes());
    assert_eq!(c.command(&["PTTL", "lease"]), b":1500\r\n");
    assert_eq!(
        c.command(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        b"*4\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nb\r\n$3\r\ninf\r\n"
    );
    assert!(server.del("k"));
    assert!(!server.del("k"));
    assert_eq!(c.command(&["EXISTS", "k"]), b":0\r\n");
    server.flushall();
    assert_eq!(c.command(&["DBSIZE"]), b":0\r\n");
    // Other databases through command_in.
    server.command_in(2, &["SET", "two", "2"]);
    c.command(&["SELECT", "2"]);
    assert_eq!(c.command(&["GET", "two"]), bulk("2").into_bytes());
}

#[test]
fn a_helper_write_breaks_watch() {
    let server = manual_server(1);
    let mut c = Conn::connect(server.addr()).unwrap();
    server.set("k", "1");
    c.command(&["WATCH", "k"]);
    server.set("k", "2");
    c.command(&["MULTI"]);
    c.command(&["SET", "k", "3"]);
    assert_eq!(c.command(&["EXEC"]), b"*-1\r\n");
    assert_eq!(server.get("k"), Some(b"2".to_vec()));
}

#[test]
fn command_answers_errors_and_refuses_connection_commands() {
    let server = manual_server(1);
    server.set("h", "string");
    assert!(
        matches!(server.command(&["HGET", "h", "f"]), Reply::Error(e) if e.starts_with(b"WRONGTYPE"))
    );
    assert!(
        matches!(server.command(&["GET"]), Reply::Error(e) if &e[..] == b"ERR wrong number of arguments for 'get' command")
    );
    assert!(
        matches!(server.command(&["NOPE"]), Reply::Error(e) if e.starts_with(b"ERR unknown command 'NOPE'"))
    );
    for refused in [&["MULTI"][..], &["WATCH", "h"], &["SUBSCRIBE", "c"]] {
        assert!(
            matches!(server.command(refused), Reply::Error(e) if e.ends_with(b"needs a connection; it cannot run from the embedding process")),
            "{refused:?}"
        );
    }
    assert!(matches!(
        server.command_in(99, &["GET", "k"]),
        Reply::Error(_)
    ));
    // A blocking command answers at once instead of blocking the caller.
    assert_eq!(server.command(&["BLPOP", "q", "0"]), Reply::Null);
}

#[test]
#[should_panic(expected = "GET: WRONGTYPE")]
fn typed_helpers_panic_on_error_replies() {
    let server = manual_server(1);
    server.zadd("z", &[(1.0, "a")]);
    server.get("z");
}

#[test]
#[should_panic(expected = "the server is not running")]
fn helpers_panic_once_the_server_stopped() {
    let server = manual_server(1);
    server.command(&["SHUTDOWN", "NOSAVE"]);
    // SHUTDOWN stops the server after the command; wait until its thread has gone.
    let started = Instant::now();
    while std::net::TcpStream::connect(server.addr()).is_ok() {
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::yield_now();
    }
    server.get("k");
}

fn helper_push_wakes_a_blocked_client(io_threads: usize) {
    let server = manual_server(io_threads);
    let mut c = Conn::connect(server.addr()).unwrap();
    c.send_raw(&Conn::encode(&[b"BLPOP", b"q", b"0"]));
    wait_blocked_direct(&server, 1);
    // The helper does not wait for the blocked client; its push releases it.
    assert_eq!(server.command(&["LPUSH", "q", "job"]), Reply::Integer(1));
    let (raw, _) = c.read_reply().unwrap();
    assert_eq!(raw, b"*2\r\n$1\r\nq\r\n$3\r\njob\r\n");
    assert_eq!(server.dbsize(), 0, "the blocked client took the element");
    assert_eq!(c.command(&["PING"]), b"+PONG\r\n");
}

#[test]
fn helper_push_wakes_a_blocked_client_single_thread() {
    helper_push_wakes_a_blocked_client(1);
}

#[test]
fn helper_push_wakes_a_blocked_client_io_threads() {
    helper_push_wakes_a_blocked_client(2);
}

fn advancing_the_clock_expires_keys_and_fires_timeouts(io_threads: usize) {
    let server = manual_server(io_threads);
    let mut writer = Conn::connect(server.addr()).unwrap();
    let mut observer = Conn::connect(server.addr()).unwrap();
    writer.command(&["SET", "lease", "me", "PX", "100"]);
    server.clock().advance(Duration::from_millis(100));
    assert_eq!(
        observer.command(&["DBSIZE"]),
        b":1\r\n",
        "alive at its deadline"
    );
    server.clock().advance(Duration::from_millis(1));
    // Nobody touched the key: the active expiry cycle ran on the new time.
    assert_eq!(observer.command(&["DBSIZE"]), b":0\r\n");

    writer.send_raw(&Conn::encode(&[b"BLPOP", b"q", b"1"]));
    wait_blocked_direct(&server, 1);
    // As in Redis, a timeout fires one millisecond past its deadline.
    server.clock().advance(Duration::from_millis(1000));
    assert_eq!(
        observer
            .command(&["CLIENT", "LIST"])
            .windows(8)
            .filter(|w| w == b"cmd=blpo")
            .count(),
        1
    );
    server.clock().advance(Duration::from_millis(1));
    let started = Instant::now();
    let (raw, _) = writer.read_reply().unwrap();
    assert_eq!(raw, b"*-1\r\n");
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "released by the clock, not by a second of wall time"
    );
}

#[test]
fn advancing_the_clock_expires_keys_and_fires_timeouts_single_thread() {
    advancing_the_clock_expires_keys_and_fires_timeouts(1);
}

#[test]
fn advancing_the_clock_expires_keys_and_fires_timeouts_io_threads() {
    advancing_the_clock_expires_keys_and_fires_timeouts(2);
}

fn time_ms(c: &mut Conn) -> i64 {
    let reply = String::from_utf8(c.command(&["TIME"])).unwrap();
    let parts: Vec<i64> = reply
        .split("\r\n")
        .filter(|l| !l.is_empty() && !l.starts_with('*') && !l.starts_with('$'))
        .map(|n| n.parse().unwrap())
        .collect();
    parts[0] * 1000 + parts[1] / 1000
}

#[test]
fn five_nodes_are_independent_and_share_a_starting_instant() {
    let mut nodes = Nodes::start_with(5, support::with_dir).unwrap();
    assert_eq!(nodes.len(), 5);
    let mut ports: Vec<u16> = nodes.addrs().iter().map(|a| a.port()).collect();
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), 5);
    assert!(nodes
        .urls()
        .iter()
        .all(|u| u.starts_with("redis://127.0.0.1:")));

    nodes[0].set("lock", "client-1");
    assert_eq!(nodes[0].get("lock"), Some(b"client-1".to_vec()));
    for node in nodes.iter().skip(1) {
        assert_eq!(node.get("lock"), None, "each node has its own data");
    }
    let times: Vec<i64> = (&nodes)
        .into_iter()
        .map(|n| time_ms(&mut Conn::connect(n.addr()).unwrap()))
        .collect();
    assert!(times.iter().all(|&t| t == times[0]), "{times:?}");

    // Restarting one node leaves the others alone.
    nodes[0].restart().unwrap();
    assert_eq!(nodes[0].get("lock"), Some(b"client-1".to_vec()));
    assert_eq!(nodes[1].dbsize(), 0);
}

#[test]
fn a_skewed_node_shows_in_time_and_pttl() {
    let nodes = Nodes::start_with(5, support::with_dir).unwrap();
    for node in &nodes {
        node.set_with_ttl("lock", "me", Duration::from_millis(1000));
    }
    let before: Vec<i64> = nodes
        .iter()
        .map(|n| time_ms(&mut Conn::connect(n.addr()).unwrap()))
        .collect();
    // Node 2 runs 500 ms ahead of the others.
    assert!(nodes[2].clock().skew(Duration::from_millis(500), true));
    assert_eq!(nodes[2].clock().offset_ms(), 500);
    let mut node2 = Conn::connect(nodes[2].addr()).unwrap();
    assert_eq!(time_ms(&mut node2), before[2] + 500);
    assert_eq!(nodes[2].pttl("lock"), 500);
    assert_eq!(nodes[0].pttl("lock"), 1000);

    // Time moves for all: the lease is gone on the fast node only.
    nodes.advance(Duration::from_millis(600));
    let mut alive = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let mut c = Conn::connect(node.addr()).unwrap();
        if c.command(&["DBSIZE"]) == b":1\r\n" {
            alive.push(i);
            assert_eq!(c.command(&["PTTL", "lock"]), b":400\r\n");
        }
    }
    assert_eq!(alive, vec![0, 1, 3, 4]);
    // Undoing the skew moves node 2's time back.
    nodes[2].clock().set_offset(0);
    assert_eq!(time_ms(&mut node2), before[2] + 600);
}

#[test]
fn nodes_take_a_builder_per_node() {
    let nodes = Nodes::start_with(3, |i, b| support::with_dir(i, b).databases(i + 1)).unwrap();
    for (i, node) in nodes.iter().enumerate() {
        assert!(matches!(node.command_in(i, &["DBSIZE"]), Reply::Integer(0)));
        assert!(matches!(
            node.command_in(i + 1, &["DBSIZE"]),
            Reply::Error(_)
        ));
    }
    let start = nodes[0].clock().now();
    nodes.advance(Duration::from_secs(3));
    for node in &nodes {
        assert_eq!(
            node.clock().now().duration_since(start).unwrap(),
            Duration::from_secs(3)
        );
    }
    let _ = SystemTime::now();
}

#[test]
fn a_node_set_to_run_fast_gains_on_the_others_at_every_advance() {
    let nodes = Nodes::start_with(3, support::with_dir).unwrap();
    let start = nodes[0].clock().now_ms();
    for node in &nodes {
        node.set_with_ttl("lock", "me", Duration::from_millis(10_000));
    }
    // Node 1 runs 5% fast, node 2 10% slow; their clocks stay frozen between advances.
    assert!(nodes[1].clock().set_rate(1.05));
    assert!(nodes[2].clock().set_rate(0.9));
    assert_eq!(nodes[1].clock().rate(), 1.05);
    assert_eq!(nodes[0].clock().rate(), 1.0);
    assert_eq!(
        nodes[1].clock().now_ms(),
        start,
        "a rate alone does not move it"
    );

    for _ in 0..4 {
        nodes.advance(Duration::from_millis(2_000));
    }
    let elapsed: Vec<i64> = nodes.iter().map(|n| n.clock().now_ms() - start).collect();
    assert_eq!(elapsed, vec![8_000, 8_400, 7_200]);
    assert_eq!(
        nodes.iter().map(|n| n.pttl("lock")).collect::<Vec<_>>(),
        vec![2_000, 1_600, 2_800]
    );

    // 1,620 ms of real time later (1,701 on the fast node) the lease is over there only.
    nodes.advance(Duration::from_millis(1_620));
    let alive: Vec<bool> = nodes.iter().map(|n| n.exists("lock")).collect();
    assert_eq!(alive, vec![true, false, true]);

    // A node's own advance moves it by exactly what it is told.
    nodes[1].clock().advance(Duration::from_millis(100));
    assert_eq!(nodes[1].clock().now_ms() - start, 8_400 + 1_701 + 100);
}

/// The random choices of SPOP, SRANDMEMBER, RANDOMKEY and HRANDFIELD, in order, on a fresh
/// server built with `seed` (none: the server's own seed).
fn random_choices(seed: Option<u64>) -> Vec<Vec<u8>> {
    let builder = support::builder();
    let server = match seed {
        Some(seed) => builder.seed(seed),
        None => builder,
    }
    .start()
    .unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    let members: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD".to_string(), "set".to_string()];
    sadd.extend(members.iter().cloned());
    c.command(&sadd);
    let mut hset = vec!["HSET".to_string(), "hash".to_string()];
    for m in &members {
        hset.extend([m.clone(), "v".to_string()]);
    }
    c.command(&hset);
    for m in &members[..50] {
        c.command(&["SET", m.as_str(), "v"]);
    }
    let mut choices = Vec::new();
    for _ in 0..5 {
        choices.push(c.command(&["SPOP", "set", "3"]));
        choices.push(c.command(&["SRANDMEMBER", "set", "-4"]));
        choices.push(c.command(&["RANDOMKEY"]));
        choices.push(c.command(&["HRANDFIELD", "hash", "2"]));
    }
    choices
}

/// A seeded server makes the same random choices every run, so a test that depends on SPOP or
/// RANDOMKEY is reproducible; another seed (or none) chooses otherwise.
#[test]
fn a_seed_makes_random_choices_reproducible() {
    let first = random_choices(Some(42));
    assert_eq!(random_choices(Some(42)), first);
    assert_ne!(random_choices(Some(43)), first);
    assert_ne!(random_choices(None), first);
}

/// A script runs on the time it started at, as in Redis: the clock advanced by a minute while it
/// runs (past busy-reply-threshold, so a probe's PING proves it is running) changes neither TIME
/// nor a TTL as the script sees them; the next command sees the new time.
#[test]
fn a_script_sees_the_time_it_started_at_while_the_clock_moves() {
    let server = manual_server(1);
    let mut a = Conn::connect(server.addr()).unwrap();
    let mut probe = Conn::connect(server.addr()).unwrap();
    assert_eq!(
        a.command(&["CONFIG", "SET", "busy-reply-threshold", "10"]),
        b"+OK\r\n"
    );
    let script = "local t1 = redis.call('TIME')\n\
                  redis.call('SET', 'lease', 'me', 'PX', 1000)\n\
                  for i = 1, 3e8 do end\n\
                  local t2 = redis.call('TIME')\n\
                  return {t1[1], t1[2], t2[1], t2[2], redis.call('PTTL', 'lease')}";
    a.send_raw(&Conn::encode(&[b"EVAL", script.as_bytes(), b"0"]));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = probe.command(&["PING"]);
        if reply.starts_with(b"-BUSY") {
            break;
        }
        assert!(Instant::now() < deadline, "the script never got busy");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(server.clock().advance(Duration::from_secs(60)));
    let (reply, _) = a.read_reply().unwrap();
    let start = format!("{SECS}");
    assert_eq!(
        reply,
        format!(
            "*5\r\n${len}\r\n{start}\r\n$1\r\n0\r\n${len}\r\n{start}\r\n$1\r\n0\r\n:1000\r\n",
            len = start.len()
        )
        .into_bytes()
    );
    // After the script the minute has passed for everyone: the lease is gone.
    assert_eq!(a.command(&["PTTL", "lease"]), b":-2\r\n");
    assert_eq!(
        a.command(&["TIME"]),
        format!("*2\r\n$10\r\n{}\r\n$1\r\n0\r\n", SECS + 60).into_bytes()
    );
}

/// QUIT answers `+OK` and then closes, in both I/O modes: with io-threads 2 the executor hands
/// the reply over and the connection's thread must write it before it closes (it used to be
/// told to close at once and often dropped the reply). Many rounds, since the loss was a race.
#[test]
fn quit_replies_ok_before_closing_in_both_io_modes() {
    use std::io::{Read, Write};
    for io_threads in [1, 2] {
        let server = manual_server(io_threads);
        for round in 0..200 {
            let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            // A command before QUIT in the same write: the batch's replies all arrive, in order.
            stream.write_all(b"PING\r\nQUIT\r\n").unwrap();
            let mut got = Vec::new();
            stream.read_to_end(&mut got).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&got),
                "+PONG\r\n+OK\r\n",
                "io-threads {io_threads}, round {round}"
            );
        }
    }
}
