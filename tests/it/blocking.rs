//! Blocking list and sorted-set commands seen from clients: several real TCP connections to a server whose clock
//! the test controls (`Clock::manual()`), so that timeouts fire when the test advances the clock
//! and no test sleeps for a timeout itself. Wall-clock waits are short and bounded: polling INFO
//! until a client is blocked, and checking for a short while that no reply comes.
//!
//! The scenarios that do not depend on time (service order, chains of BLMOVE, several keys, the
//! wrong type, the sorted-set pops) are differential fixture lines, compared with a real
//! redis-server 7.0: tests/diff/blocking.txt.

use crate::support;

use support::{advance_ms, bulk, manual_server, wait_blocked, Client};

fn pair(key: &str, element: &str) -> String {
    format!("*2\r\n{}{}", bulk(key), bulk(element))
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
    // The error counts against BLMOVE, as Redis 7.0.15 counts it (unit/info "errorstats:
    // blocking commands").
    let stats = admin.cmd(&["INFO", "commandstats"]);
    let blmove = stats
        .lines()
        .find(|l| l.starts_with("cmdstat_blmove:"))
        .unwrap_or_else(|| panic!("{stats}"));
    assert!(
        blmove.ends_with("rejected_calls=0,failed_calls=1"),
        "{blmove}"
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
