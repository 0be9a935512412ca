//! Client tracking seen from several connections: invalidations redirected to another client
//! (a RESP2 subscriber of `__redis__:invalidate` or a RESP3 client), BCAST prefixes written by
//! another client, NOLOOP, a redirection broken by the redirect client going away, FLUSHALL's
//! null invalidation, the tracking table's size limit, INFO's tracking fields and CLIENT LIST's
//! flags. One connection's behaviour (pushes after the reply, argument errors) is in
//! tests/diff/tracking.txt.
//!
//! The scenario is a differential fixture, tests/diff/tracking_clients.txt, compared with a
//! real redis-server 7.0 byte for byte in every I/O mode. Here: CLIENT LIST's tracking flags,
//! compared field by field, and active expiry, which Redis drives by its own clock, checked on
//! embedis alone with a manual clock.

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;
use support::{
    advance_ms, check_transcripts, cmd, connect, eventually, frame, manual_server, send, text,
    Conn, RedisServer,
};

/// The id of the connection, as the number CLIENT ID answers.
fn client_id(conn: &mut Conn) -> String {
    let reply = cmd(conn, &["CLIENT", "ID"]);
    reply
        .trim_start_matches(':')
        .trim_end_matches("\\r\\n")
        .to_string()
}

/// CLIENT LIST's `flags=` and `redir=` of the client with id `id`, redir shown relative to
/// `redirect_id` (the ids differ between the servers).
fn flags_and_redir(probe: &mut Conn, id: &str, redirect_id: &str) -> String {
    let list = String::from_utf8_lossy(&probe.command(&["CLIENT", "LIST", "ID", id])).into_owned();
    let field = |name: &str| {
        list.split(' ')
            .find_map(|f| f.strip_prefix(name))
            .unwrap_or("?")
            .trim()
            .to_string()
    };
    let redir = field("redir=");
    let redir = if redir == redirect_id {
        "<redirect>".to_string()
    } else {
        redir
    };
    format!("flags={} redir={redir}", field("flags="))
}

/// CLIENT LIST's `flags=` and `redir=` of a tracking client through its states: tracking with
/// a redirection, BCAST, the redirection broken, RESET.
fn client_list_states(addr: SocketAddr) -> Vec<String> {
    let mut probe = connect(addr);
    let mut sub = connect(addr);
    let sub_id = client_id(&mut sub);
    let mut r = connect(addr);
    send(&mut r, &["HELLO", "3"]);
    frame(&mut r); // carries the connection id: not compared
    let r_id = client_id(&mut r);
    let mut log = vec![flags_and_redir(&mut probe, &r_id, &sub_id)];
    cmd(&mut r, &["CLIENT", "TRACKING", "on", "REDIRECT", &sub_id]);
    log.push(flags_and_redir(&mut probe, &r_id, &sub_id));
    cmd(&mut r, &["CLIENT", "TRACKING", "off"]);
    cmd(
        &mut r,
        &["CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", &sub_id],
    );
    log.push(flags_and_redir(&mut probe, &r_id, &sub_id));
    cmd(&mut r, &["CLIENT", "TRACKING", "off"]);
    cmd(&mut r, &["CLIENT", "TRACKING", "on", "REDIRECT", &sub_id]);
    cmd(&mut r, &["GET", "k"]);
    drop(sub);
    eventually("the redirect client is gone", || {
        !String::from_utf8_lossy(&probe.command(&["CLIENT", "LIST"]))
            .contains(&format!("id={sub_id} "))
    });
    cmd(&mut probe, &["SET", "k", "1"]);
    frame(&mut r); // tracking-redir-broken
    log.push(flags_and_redir(&mut probe, &r_id, &sub_id));
    cmd(&mut r, &["RESET"]);
    log.push(flags_and_redir(&mut probe, &r_id, &sub_id));
    log
}

/// The scenario with several tracking clients is tests/diff/tracking_clients.txt; CLIENT LIST,
/// whose lines no fixture can compare whole, is compared here field by field.
#[test]
fn client_list_shows_tracking_as_redis_does() {
    let Some(redis) = RedisServer::start("tracking", &[]) else {
        return;
    };
    let theirs = client_list_states(redis.addr());
    assert_eq!(theirs[1], "flags=t redir=<redirect>", "{theirs:?}");
    let ours = support::builder().start().unwrap();
    check_transcripts("tracking", &client_list_states(ours.addr()), &theirs);
}

/// Keys deleted by the active expiry cycle are invalidated between commands: told at once to
/// a NOLOOP BCAST client too (nobody's command changed them), and to a client that read them.
#[test]
fn active_expiry_invalidates_on_the_servers_clock() {
    let server = manual_server();
    let addr = server.addr();
    let mut bcast = connect(addr);
    send(&mut bcast, &["HELLO", "3"]);
    frame(&mut bcast);
    assert_eq!(
        cmd(&mut bcast, &["CLIENT", "TRACKING", "on", "BCAST", "NOLOOP"]),
        "+OK\\r\\n"
    );
    let mut reader = connect(addr);
    send(&mut reader, &["HELLO", "3"]);
    frame(&mut reader);
    cmd(&mut reader, &["CLIENT", "TRACKING", "on"]);
    assert_eq!(
        cmd(&mut bcast, &["SET", "ttl", "v", "PX", "100"]),
        "+OK\\r\\n"
    );
    assert_eq!(cmd(&mut bcast, &["SET", "other", "v"]), "+OK\\r\\n");
    assert_eq!(cmd(&mut reader, &["GET", "ttl"]), "$1\\r\\nv\\r\\n");
    // The writes were bcast's own (NOLOOP): nothing came for them.
    assert_eq!(bcast.reply_within(Duration::from_millis(50)), None);
    advance_ms(&server, 101);
    let invalidation = ">2\\r\\n$10\\r\\ninvalidate\\r\\n*1\\r\\n$3\\r\\nttl\\r\\n";
    assert_eq!(frame(&mut reader), invalidation);
    assert_eq!(frame(&mut bcast), invalidation);
    assert_eq!(cmd(&mut reader, &["DBSIZE"]), ":1\\r\\n");
}

/// What a tracking client reading through scripts is told, as `(write, next reply)` pairs: a
/// script declaring `a` and `b` reads `b` and the undeclared `u`; then another client writes
/// each key; then an EVAL_RO that reads nothing, and `a` written again.
fn script_reads_tracked(addr: SocketAddr) -> Vec<String> {
    let mut reader = support::Client::connect(addr);
    let mut writer = support::Client::connect(addr);
    reader.raw(&["HELLO", "3"]);
    reader.cmd(&["CLIENT", "TRACKING", "on"]);
    let script = "redis.call('get', 'b'); redis.call('get', 'u')";
    reader.cmd(&["EVAL", script, "2", "a", "b"]);
    let mut told = Vec::new();
    for key in ["a", "b", "u"] {
        writer.cmd(&["SET", key, "1"]);
        told.push(up_to_pong(&mut reader));
    }
    reader.cmd(&["EVAL_RO", "return redis.call('ping')", "1", "a"]);
    writer.cmd(&["SET", "a", "2"]);
    told.push(up_to_pong(&mut reader));
    told
}

/// Sends PING and returns what arrives up to its reply, pushes included.
fn up_to_pong(c: &mut support::Client) -> String {
    let mut seen = c.cmd(&["PING"]);
    while !seen.ends_with("+PONG\r\n") {
        seen.push_str(&c.reply());
    }
    seen
}

fn invalidate(key: &str) -> String {
    format!(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\n{key}\r\n+PONG\r\n")
}

/// Redis 7.0 remembers a script's declared keys once it runs a read (whatever it read); from
/// 7.2 the keys its read commands read (the replies are those of Redis 7.0.15 and 7.4.1).
#[test]
fn a_script_tracks_its_declared_keys_as_7_0_and_the_keys_it_read_as_7_4() {
    let as_7_4 = support::builder_as("7.4").start().unwrap();
    assert_eq!(
        script_reads_tracked(as_7_4.addr()),
        [
            "+PONG\r\n".to_string(),
            invalidate("b"),
            invalidate("u"),
            "+PONG\r\n".to_string()
        ]
    );
    let as_7_0 = support::builder().start().unwrap();
    assert_eq!(
        script_reads_tracked(as_7_0.addr()),
        [
            invalidate("a"),
            invalidate("b"),
            "+PONG\r\n".to_string(),
            "+PONG\r\n".to_string()
        ]
    );
}

/// Sends `args` then PING, and returns everything up to PING's reply: the command's reply and
/// the pushes around it, in their order.
fn with_pushes(c: &mut support::Client, args: &[&str]) -> String {
    c.send(args);
    up_to_pong(c)
}

/// A tracking client's flushes, each after reading a key: the order of its `+OK` and its own
/// null invalidation.
fn flush_orders(addr: SocketAddr) -> Vec<String> {
    let mut c = support::Client::connect(addr);
    c.raw(&["HELLO", "3"]);
    c.cmd(&["CLIENT", "TRACKING", "on"]);
    let mut seen = Vec::new();
    let flushes: &[&[&str]] = &[
        &["FLUSHALL"],
        &["FLUSHDB", "SYNC"],
        &["FLUSHALL", "ASYNC"],
        &["EVAL", "redis.call('flushdb')", "0"],
    ];
    for flush in flushes {
        c.cmd(&["GET", "k"]);
        seen.push(with_pushes(&mut c, flush));
    }
    c.cmd(&["GET", "k"]);
    c.cmd(&["MULTI"]);
    c.cmd(&["FLUSHALL"]);
    seen.push(with_pushes(&mut c, &["EXEC"]));
    let set = c.cmd(&["CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"]);
    assert_eq!(set, "+OK\r\n");
    c.cmd(&["GET", "k"]);
    seen.push(with_pushes(&mut c, &["FLUSHALL"]));
    seen
}

/// Redis 7.4 runs a synchronous FLUSHALL or FLUSHDB as a blocked ASYNC flush whose `+OK` comes
/// after the client's own invalidation; 7.0 (and 7.4 for an ASYNC flush, one in MULTI or a
/// script, or one made ASYNC by `lazyfree-lazy-user-flush`) answers first. The orders are
/// those of Redis 7.0.15 and 7.4.1.
#[test]
fn a_flush_answers_after_its_own_invalidation_as_7_4_and_before_it_as_7_0() {
    let null = ">2\r\n$10\r\ninvalidate\r\n_\r\n";
    let reply_first = |reply: &str| format!("{reply}{null}+PONG\r\n");
    let push_first = |reply: &str| format!("{null}{reply}+PONG\r\n");
    let as_7_4 = support::builder_as("7.4").start().unwrap();
    assert_eq!(
        flush_orders(as_7_4.addr()),
        [
            push_first("+OK\r\n"),
            push_first("+OK\r\n"),
            reply_first("+OK\r\n"),
            reply_first("_\r\n"),
            reply_first("*1\r\n+OK\r\n"),
            reply_first("+OK\r\n"),
        ]
    );
    let as_7_0 = support::builder().start().unwrap();
    assert_eq!(
        flush_orders(as_7_0.addr()),
        [
            reply_first("+OK\r\n"),
            reply_first("+OK\r\n"),
            reply_first("+OK\r\n"),
            reply_first("_\r\n"),
            reply_first("*1\r\n+OK\r\n"),
            reply_first("+OK\r\n"),
        ]
    );
}

/// A numeric field of INFO.
fn info_number(conn: &mut Conn, name: &str) -> u64 {
    let info = text(conn, &["INFO", "everything"]);
    support::field(&info, name).parse().unwrap()
}

/// The invalidations an eviction pass sends to tracking clients are written before the next
/// command's pass counts memory, as Redis writes every client's output in `beforeSleep` before
/// it reads again, and the pass's `evicted` events go out at once. Counted unwritten (the I/O
/// loop read the next request first, and the events waited for the next command), they put
/// memory ~245 KB over the limit again, so that pass evicted more keys, whose invalidations did
/// the same: all 300 keys went where Redis 7.0.15 evicts 37 (its unit/maxmemory "client
/// tracking don't cause eviction feedback loop", whose configuration is used here).
/// Run on the binary, whose memory holds only the server's.
#[test]
fn invalidations_of_evicted_keys_do_not_feed_more_eviction() {
    let dir = support::temp_dir("tracking-eviction-loop");
    let server = crate::aof::Embedis::start(&dir, &["--notify-keyspace-events", "KEA"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    for (name, value) in [
        ("latency-tracking", "no"),
        ("maxmemory-policy", "allkeys-lru"),
        ("maxmemory-eviction-tenacity", "100"),
    ] {
        assert_eq!(text(&mut c, &["CONFIG", "SET", name, value]), "+OK\r\n");
    }
    // Ten tracking clients that never read their invalidations.
    let mut trackers: Vec<Conn> = (0..10)
        .map(|_| {
            let mut t = Conn::connect(server.addr()).unwrap();
            text(&mut t, &["HELLO", "3"]);
            assert_eq!(text(&mut t, &["CLIENT", "TRACKING", "on"]), "+OK\r\n");
            t
        })
        .collect();
    for j in 0..300 {
        let key = format!("{j}{}", "x".repeat(1000));
        assert_eq!(text(&mut c, &["SET", &key, "x"]), "+OK\r\n");
        for t in &mut trackers {
            text(t, &["GET", &key]);
        }
    }
    // As Redis's test: a second for the tick to trim what the loading left.
    std::thread::sleep(Duration::from_millis(1100));
    let limit = (info_number(&mut c, "used_memory") - 40_000).to_string();
    assert_eq!(
        text(&mut c, &["CONFIG", "SET", "maxmemory", &limit]),
        "+OK\r\n"
    );
    let evicted = info_number(&mut c, "evicted_keys");
    let keys = text(&mut c, &["DBSIZE"]);
    let keys: i64 = keys.trim_start_matches(':').trim().parse().unwrap();
    // Redis's bounds are 10 to 50 (it evicts 37, embedis 38 on an idle machine); under load
    // (the suite's other tests on both cores) embedis was seen at 53. The loop this guards
    // against evicted 169 to 300.
    assert!((10..=100).contains(&evicted), "evicted {evicted}");
    assert!(keys >= 200, "{keys} keys left");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
