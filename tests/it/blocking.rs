//! Blocking list and sorted-set commands seen from clients: several real TCP connections to a server whose clock
//! the test controls (`Clock::manual()`), so that timeouts fire when the test advances the clock
//! and no test sleeps for a timeout itself. Wall-clock waits are short and bounded: polling INFO
//! until a client is blocked, and checking for a short while that no reply comes.
//!
//! The scenarios that do not depend on time (service order, chains of BLMOVE, several keys, the
//! wrong type) also run against a real redis-server 7.0, and the transcripts must be the same.

use crate::support;

use std::net::SocketAddr;
use support::{advance_ms, bulk, check_transcripts, manual_server, wait_blocked, Client, Conn};

fn pair(key: &str, element: &str) -> String {
    format!("*2\r\n{}{}", bulk(key), bulk(element))
}

// ---------------------------------------------------------------------------------------------
// Scenarios that do not depend on time: run on embedis and on redis-server, same transcript
// ---------------------------------------------------------------------------------------------

/// Runs the order-of-service scenarios on the server at `addr` and returns everything each
/// client received, in order.
fn service_order_transcript(addr: SocketAddr) -> Vec<String> {
    let mut log = Vec::new();
    let mut pusher = Client::connect(addr);
    pusher.cmd(&["FLUSHALL"]);
    let mut c: Vec<Client> = (0..3).map(|_| Client::connect(addr)).collect();

    // FIFO: three clients on one key, served one push at a time in the order they blocked.
    for client in c.iter_mut() {
        client.block(&["BLPOP", "q", "0"]);
    }
    for (i, element) in ["a", "b", "c"].iter().enumerate() {
        log.push(pusher.cmd(&["RPUSH", "q", element]));
        log.push(format!("client {i}: {}", c[i].reply()));
    }
    // One LPUSH of several elements serves several waiters, head first.
    c[1].block(&["BRPOP", "q", "0"]);
    c[0].block(&["BLPOP", "q", "0"]);
    c[2].block(&["BLPOP", "q", "0"]);
    log.push(pusher.cmd(&["LPUSH", "q", "x", "y"]));
    log.push(format!("client 1: {}", c[1].reply()));
    log.push(format!("client 0: {}", c[0].reply()));
    c[2].no_reply();
    log.push(pusher.cmd(&["EXISTS", "q"]));
    log.push(pusher.cmd(&["RPUSH", "q", "z"]));
    log.push(format!("client 2: {}", c[2].reply()));

    // A client on several keys is served by the first key pushed, whatever its place.
    c[0].block(&["BLPOP", "k1", "k2", "k3", "0"]);
    log.push(pusher.cmd(&["RPUSH", "k3", "three"]));
    log.push(format!("client 0: {}", c[0].reply()));
    c[0].block(&["BRPOP", "k1", "k2", "k1", "0"]);
    log.push(pusher.cmd(&["RPUSH", "k1", "one", "uno"]));
    log.push(format!("client 0: {}", c[0].reply()));
    log.push(pusher.cmd(&["LRANGE", "k1", "0", "-1"]));

    // A BLMOVE served pushes to a key another client waits on: the chain goes on.
    c[0].block(&["BLMOVE", "src", "mid", "LEFT", "RIGHT", "0"]);
    c[1].block(&["BLMOVE", "mid", "dst", "RIGHT", "LEFT", "0"]);
    c[2].block(&["BLPOP", "dst", "0"]);
    log.push(pusher.cmd(&["RPUSH", "src", "v1", "v2"]));
    log.push(format!("client 0: {}", c[0].reply()));
    log.push(format!("client 1: {}", c[1].reply()));
    log.push(format!("client 2: {}", c[2].reply()));
    log.push(pusher.cmd(&["LRANGE", "src", "0", "-1"]));
    log.push(pusher.cmd(&["EXISTS", "mid", "dst"]));

    // BRPOPLPUSH onto its own source, and BLMPOP with a count.
    c[0].block(&["BRPOPLPUSH", "ring", "ring", "0"]);
    log.push(pusher.cmd(&["RPUSH", "ring", "r1", "r2"]));
    log.push(format!("client 0: {}", c[0].reply()));
    log.push(pusher.cmd(&["LRANGE", "ring", "0", "-1"]));
    c[1].block(&["BLMPOP", "0", "2", "m1", "m2", "RIGHT", "COUNT", "5"]);
    log.push(pusher.cmd(&["RPUSH", "m2", "1", "2", "3"]));
    log.push(format!("client 1: {}", c[1].reply()));
    log.push(pusher.cmd(&["EXISTS", "m2"]));

    // A key of another type does not wake a list waiter; a list there later does.
    c[0].block(&["BLPOP", "typed", "0"]);
    log.push(pusher.cmd(&["SET", "typed", "string"]));
    log.push(pusher.cmd(&["APPEND", "typed", "more"]));
    c[0].no_reply();
    log.push(pusher.cmd(&["DEL", "typed"]));
    log.push(pusher.cmd(&["RPUSH", "typed", "now"]));
    log.push(format!("client 0: {}", c[0].reply()));

    // A served BLMOVE whose destination turned into another type fails with WRONGTYPE.
    c[0].block(&["BLMOVE", "from", "to", "LEFT", "LEFT", "0"]);
    log.push(pusher.cmd(&["SET", "to", "x"]));
    log.push(pusher.cmd(&["RPUSH", "from", "f"]));
    log.push(format!("client 0: {}", c[0].reply()));
    log.push(pusher.cmd(&["LRANGE", "from", "0", "-1"]));

    // Databases are separate.
    c[1].cmd(&["SELECT", "1"]);
    c[1].block(&["BLPOP", "dbkey", "0"]);
    log.push(pusher.cmd(&["RPUSH", "dbkey", "in-db-0"]));
    c[1].no_reply();
    pusher.cmd(&["SELECT", "1"]);
    log.push(pusher.cmd(&["RPUSH", "dbkey", "in-db-1"]));
    log.push(format!("client 1: {}", c[1].reply()));
    pusher.cmd(&["SELECT", "0"]);

    // A pipelined command after a blocking one runs only once the client is served.
    c[2].send_raw(
        &[
            Conn::encode(&[b"BLPOP", b"pipe", b"0"]),
            Conn::encode(&[b"PING"]),
            Conn::encode(&[b"LLEN", b"pipe"]),
        ]
        .concat(),
    );
    wait_blocked(&mut pusher, 1);
    c[2].no_reply();
    log.push(pusher.cmd(&["RPUSH", "pipe", "p1", "p2"]));
    log.push(format!("client 2: {}", c[2].reply()));
    log.push(format!("client 2: {}", c[2].reply()));
    log.push(format!("client 2: {}", c[2].reply()));
    log
}

#[test]
fn service_order_matches_redis() {
    let ours = manual_server();
    let transcript = service_order_transcript(ours.addr());
    // What these scenarios must give, spelled out (also checked against Redis below).
    let expected_start = [
        ":1\r\n".to_string(),
        format!("client 0: {}", pair("q", "a")),
        ":1\r\n".to_string(),
        format!("client 1: {}", pair("q", "b")),
        ":1\r\n".to_string(),
        format!("client 2: {}", pair("q", "c")),
        ":2\r\n".to_string(),
        format!("client 1: {}", pair("q", "x")),
        format!("client 0: {}", pair("q", "y")),
    ];
    assert_eq!(transcript[..expected_start.len()], expected_start);
    assert!(transcript.contains(&format!("client 0: {}", pair("k3", "three"))));
    assert!(transcript.contains(&format!("client 2: {}", pair("dst", "v1"))));
    assert!(transcript.contains(
        &"client 0: -WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
            .to_string()
    ));
    let Some(redis) = support::RedisServer::start("blocking service order", &[]) else {
        return;
    };
    let theirs = service_order_transcript(redis.addr());
    check_transcripts("blocking service order", &transcript, &theirs);
}

/// The sorted-set blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP), woken by every kind of write that
/// can create a sorted set: ZADD, ZINCRBY and the STORE forms. (MULTI/EXEC and scripts
/// join these scenarios with the transactions and scripting issues.)
fn sorted_set_transcript(addr: SocketAddr) -> Vec<String> {
    let mut log = Vec::new();
    let mut pusher = Client::connect(addr);
    pusher.cmd(&["FLUSHALL"]);
    let mut c: Vec<Client> = (0..3).map(|_| Client::connect(addr)).collect();

    // FIFO on one key; one ZADD of three members serves three waiters, lowest score first for
    // BZPOPMIN and highest for BZPOPMAX.
    c[0].block(&["BZPOPMIN", "z", "0"]);
    c[1].block(&["BZPOPMAX", "z", "0"]);
    c[2].block(&["BZPOPMIN", "z", "0"]);
    log.push(pusher.cmd(&["ZADD", "z", "3", "c", "1", "a", "2", "b"]));
    for (i, client) in c.iter_mut().enumerate() {
        log.push(format!("client {i}: {}", client.reply()));
    }
    log.push(pusher.cmd(&["EXISTS", "z"]));

    // Several keys: the first one written serves; BZMPOP with a count takes what there is.
    c[0].block(&["BZPOPMAX", "k1", "k2", "0"]);
    c[1].block(&["BZMPOP", "0", "2", "k1", "k2", "MIN", "COUNT", "10"]);
    log.push(pusher.cmd(&["ZINCRBY", "k2", "1.5", "m"]));
    log.push(format!("client 0: {}", c[0].reply()));
    c[1].no_reply();
    log.push(pusher.cmd(&["ZADD", "k1", "-inf", "x", "+inf", "y", "0", "z"]));
    log.push(format!("client 1: {}", c[1].reply()));

    // A STORE form creating the key wakes the waiter.
    pusher.cmd(&["ZADD", "src", "5", "five", "6", "six"]);
    c[2].block(&["BZPOPMAX", "dst", "0"]);
    log.push(pusher.cmd(&["ZUNIONSTORE", "dst", "1", "src", "WEIGHTS", "2"]));
    log.push(format!("client 2: {}", c[2].reply()));
    c[1].block(&["BZMPOP", "0", "1", "stored", "MAX", "COUNT", "2"]);
    pusher.cmd(&["ZADD", "abc", "1", "a", "2", "b", "3", "c"]);
    log.push(pusher.cmd(&["ZRANGESTORE", "stored", "abc", "0", "-1"]));
    log.push(format!("client 1: {}", c[1].reply()));

    // A list (or a string) on the key does not serve a sorted-set waiter.
    c[0].block(&["BZPOPMIN", "typed", "0"]);
    log.push(pusher.cmd(&["RPUSH", "typed", "not-a-zset"]));
    c[0].no_reply();
    log.push(pusher.cmd(&["DEL", "typed"]));
    log.push(pusher.cmd(&["ZADD", "typed", "7", "now"]));
    log.push(format!("client 0: {}", c[0].reply()));

    log
}

#[test]
fn sorted_set_pops_match_redis() {
    let ours = manual_server();
    let transcript = sorted_set_transcript(ours.addr());
    let triple = |key: &str, member: &str, score: &str| {
        format!("*3\r\n{}{}{}", bulk(key), bulk(member), bulk(score))
    };
    assert_eq!(
        transcript[..5],
        [
            ":3\r\n".to_string(),
            format!("client 0: {}", triple("z", "a", "1")),
            format!("client 1: {}", triple("z", "c", "3")),
            format!("client 2: {}", triple("z", "b", "2")),
            ":0\r\n".to_string(),
        ]
    );
    assert!(transcript.contains(&format!("client 0: {}", triple("k2", "m", "1.5"))));
    assert!(transcript.contains(&format!("client 2: {}", triple("dst", "six", "12"))));
    assert!(transcript.contains(&format!("client 0: {}", triple("typed", "now", "7"))));
    let Some(redis) = support::RedisServer::start("blocking sorted sets", &[]) else {
        return;
    };
    let theirs = sorted_set_transcript(redis.addr());
    check_transcripts("blocking sorted sets", &transcript, &theirs);
}

// ---------------------------------------------------------------------------------------------
// Time: the manual clock
// ---------------------------------------------------------------------------------------------

#[test]
fn timeouts_fire_when_the_clock_passes_them() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    a.block(&["BLPOP", "k", "5"]);
    advance_ms(&server, 4999);
    a.no_reply();
    advance_ms(&server, 1);
    a.no_reply();
    advance_ms(&server, 1);
    assert_eq!(a.reply(), "*-1\r\n");
    // Fractional seconds, and every blocking command times out with a null array.
    for command in [
        &["BLPOP", "k", "0.25"][..],
        &["BRPOP", "k", "j", "0.25"],
        &["BLMOVE", "k", "d", "LEFT", "RIGHT", "0.25"],
        &["BRPOPLPUSH", "k", "d", "0.25"],
        &["BLMPOP", "0.25", "1", "k", "LEFT", "COUNT", "2"],
        &["BZPOPMIN", "k", "j", "0.25"],
        &["BZPOPMAX", "k", "0.25"],
        &["BZMPOP", "0.25", "1", "k", "MIN"],
    ] {
        a.block(command);
        advance_ms(&server, 250);
        a.no_reply();
        advance_ms(&server, 1);
        assert_eq!(a.reply(), "*-1\r\n", "{command:?}");
    }
    assert_eq!(b.cmd(&["EXISTS", "k", "j", "d"]), ":0\r\n");
    // A push before the deadline serves the client; the deadline is then forgotten.
    a.block(&["BLPOP", "k", "1.5"]);
    advance_ms(&server, 1000);
    assert_eq!(b.cmd(&["RPUSH", "k", "v"]), ":1\r\n");
    assert_eq!(a.reply(), pair("k", "v"));
    advance_ms(&server, 1000);
    a.no_reply();
    assert_eq!(a.cmd(&["PING"]), "+PONG\r\n");
}

#[test]
fn timeout_zero_blocks_until_served() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    a.block(&["BLMPOP", "0", "1", "k", "LEFT"]);
    advance_ms(&server, 3_600_000);
    a.no_reply();
    // Minus a fraction of a millisecond rounds up to -0: forever too, as in Redis.
    let mut c = Client::connect(server.addr());
    c.block(&["BRPOP", "k", "-0.0001"]);
    advance_ms(&server, 3_600_000);
    c.no_reply();
    assert_eq!(b.cmd(&["RPUSH", "k", "1", "2"]), ":2\r\n");
    assert_eq!(a.reply(), "*2\r\n$1\r\nk\r\n*1\r\n$1\r\n1\r\n");
    assert_eq!(c.reply(), pair("k", "2"));
}

/// Redis rounds a timeout up to whole milliseconds (`ceill`): `0.001` (0.999… ms as a long double)
/// and `0.0001` wait 1 ms, they do not block forever — even when the clock moves in larger steps.
#[test]
fn sub_millisecond_timeouts_expire() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    for command in [
        &["BLPOP", "nolist", "0.001"][..],
        &["BRPOP", "nolist", "0.0001"],
        &["BLMOVE", "nolist", "d", "LEFT", "RIGHT", "0.001"],
        &["BLMPOP", "0.001", "1", "nolist", "LEFT"],
        &["BLMPOP", "0.001", "1", "nolist", "RIGHT", "COUNT", "3"],
        &["BZPOPMIN", "nolist", "0.001"],
        &["BZMPOP", "0.0001", "1", "nolist", "MAX"],
    ] {
        a.block(command);
        advance_ms(&server, 1);
        a.no_reply();
        advance_ms(&server, 100);
        assert_eq!(a.reply(), "*-1\r\n", "{command:?}");
    }
}

#[test]
fn resp3_timeouts_are_null() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    a.cmd(&["HELLO", "3"]);
    a.block(&["BLPOP", "k", "1"]);
    advance_ms(&server, 1001);
    assert_eq!(a.reply(), "_\r\n");
    a.block(&["BLMOVE", "k", "d", "LEFT", "LEFT", "1"]);
    advance_ms(&server, 1001);
    assert_eq!(a.reply(), "_\r\n");
    let id = a.id().to_string();
    let mut b = Client::connect(server.addr());
    a.block(&["BLMPOP", "0", "1", "k", "LEFT"]);
    assert_eq!(b.cmd(&["CLIENT", "UNBLOCK", &id, "TIMEOUT"]), ":1\r\n");
    assert_eq!(a.reply(), "_\r\n");
}

// ---------------------------------------------------------------------------------------------
// Leaving the queue
// ---------------------------------------------------------------------------------------------

#[test]
fn a_disconnected_waiter_leaves_the_queue() {
    let server = manual_server();
    let mut first = Client::connect(server.addr());
    let mut second = Client::connect(server.addr());
    let mut pusher = Client::connect(server.addr());
    first.block(&["BLPOP", "k", "0"]);
    second.block(&["BLPOP", "k", "0"]);
    drop(first);
    wait_blocked(&mut pusher, 1);
    assert_eq!(pusher.cmd(&["RPUSH", "k", "v"]), ":1\r\n");
    assert_eq!(second.reply(), pair("k", "v"));
    assert_eq!(pusher.cmd(&["EXISTS", "k"]), ":0\r\n");
    wait_blocked(&mut pusher, 0);
}

#[test]
fn client_unblock_with_timeout_or_error() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    let mut admin = Client::connect(server.addr());
    let id = a.id().to_string();
    a.block(&["BLPOP", "k", "0"]);
    b.block(&["BLPOP", "k", "0"]);
    assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", &id, "TIMEOUT"]), ":1\r\n");
    assert_eq!(a.reply(), "*-1\r\n");
    assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", &id]), ":0\r\n");
    a.block(&["BLMOVE", "k", "d", "RIGHT", "LEFT", "0"]);
    assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", &id, "ERROR"]), ":1\r\n");
    assert_eq!(
        a.reply(),
        "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    );
    // The other waiter kept its place and is served by the next push.
    assert_eq!(admin.cmd(&["RPUSH", "k", "v"]), ":1\r\n");
    assert_eq!(b.reply(), pair("k", "v"));
    a.no_reply();
    assert_eq!(admin.cmd(&["EXISTS", "k", "d"]), ":0\r\n");
    wait_blocked(&mut admin, 0);
}

#[test]
fn info_counts_blocked_clients_and_keys() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    let mut probe = Client::connect(server.addr());
    a.block(&["BLPOP", "x", "y", "5"]);
    b.block(&["BRPOP", "y", "0"]);
    let info = probe.cmd(&["INFO", "clients"]);
    assert!(info.contains("blocked_clients:2\r\n"), "{info}");
    assert!(info.contains("clients_in_timeout_table:1\r\n"), "{info}");
    advance_ms(&server, 5001);
    assert_eq!(a.reply(), "*-1\r\n");
    wait_blocked(&mut probe, 1);
    assert_eq!(probe.cmd(&["LPUSH", "y", "v"]), ":1\r\n");
    assert_eq!(b.reply(), pair("y", "v"));
    wait_blocked(&mut probe, 0);
}
