//! Pub/sub seen from several real TCP connections: subscribers receive what another connection
//! publishes without sending anything themselves, in Redis's order and shape.
//!
//! The scenario of several subscribers and a publisher is a differential fixture,
//! tests/diff/pubsub_clients.txt, compared with a real redis-server 7.0 byte for byte. What
//! Redis orders by its hash tables — the confirmations of UNSUBSCRIBE from several channels
//! without arguments — is compared here without that order. The output-buffer-limit disconnects run on embedis only, with a manual
//! clock for the soft limit's seconds.

use crate::support;
use support::text;

use std::net::SocketAddr;
use std::time::Duration;
use support::{connect, frame, manual_server, send, Conn, RedisServer};

/// `n` unsubscribe confirmations whose order Redis leaves to a hash table: their frames without
/// the counts, sorted, then the counts in arrival order (which must still go down one by one).
fn confirmations_unordered(conn: &mut Conn, n: usize) -> String {
    let mut names = Vec::new();
    let mut counts = Vec::new();
    for _ in 0..n {
        let f = frame(conn);
        let (name, count) = f.rsplit_once(':').expect("a count");
        names.push(name.to_string());
        counts.push(count.to_string());
    }
    names.sort();
    format!("{} counts {}", names.join(" | "), counts.join(" "))
}

/// UNSUBSCRIBE without arguments from several channels: one confirmation per channel, in the
/// order of Redis's hash table (so compared without it), the counts going down one by one. The
/// rest of the pub/sub scenario is tests/diff/pubsub_clients.txt.
fn unsubscribe_all(addr: SocketAddr) -> String {
    let mut b = connect(addr);
    send(&mut b, &["HELLO", "3"]);
    frame(&mut b); // carries the connection id: not compared
    send(&mut b, &["SUBSCRIBE", "news", "sport", "weather"]);
    for _ in 0..3 {
        frame(&mut b);
    }
    send(&mut b, &["UNSUBSCRIBE"]);
    confirmations_unordered(&mut b, 3)
}

#[test]
fn unsubscribe_from_every_channel_matches_redis() {
    let Some(redis) = RedisServer::start("pubsub", &[]) else {
        return;
    };
    let theirs = unsubscribe_all(redis.addr());
    assert!(
        theirs.ends_with(" counts 2\\r\\n 1\\r\\n 0\\r\\n"),
        "{theirs}"
    );
    let ours = support::builder().start().unwrap();
    assert_eq!(unsubscribe_all(ours.addr()), theirs);
}

// ---------------------------------------------------------------------------------------------
// Output-buffer limits (embedis only: the soft limit needs the manual clock)

/// The subscriber's `omem=` (unsent output) from CLIENT LIST, or None once it is gone.
fn omem(probe: &mut Conn, id: &str) -> Option<usize> {
    let list = text(probe, &["CLIENT", "LIST", "ID", id]);
    let field = list.split(' ').find_map(|f| f.strip_prefix("omem="))?;
    Some(field.parse().unwrap())
}

/// A subscriber that never reads again, and its client id.
fn idle_subscriber(addr: SocketAddr) -> (Conn, String) {
    let mut s = connect(addr);
    let id = text(&mut s, &["CLIENT", "ID"]);
    let id = id.trim_start_matches(':').trim().to_string();
    send(&mut s, &["SUBSCRIBE", "flood"]);
    frame(&mut s);
    (s, id)
}

fn limited_server() -> embedis::Server {
    let server = manual_server();
    let mut admin = connect(server.addr());
    assert_eq!(
        text(
            &mut admin,
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1mb 256kb 2"
            ]
        ),
        "+OK\r\n"
    );
    server
}

#[test]
fn subscriber_over_the_hard_limit_is_disconnected() {
    let server = limited_server();
    let (mut sub, id) = idle_subscriber(server.addr());
    let mut publisher = connect(server.addr());
    let message = "x".repeat(64 * 1024);
    let mut published = 0;
    loop {
        let count = text(&mut publisher, &["PUBLISH", "flood", &message]);
        published += 1;
        match omem(&mut publisher, &id) {
            // Never much beyond the hard limit: the message that crossed it is the last.
            Some(unsent) => assert!(unsent < 1024 * 1024, "omem {unsent} over the hard limit"),
            None => break,
        }
        assert_eq!(count, ":1\r\n");
        assert!(published < 2000, "subscriber never disconnected");
    }
    assert_eq!(text(&mut publisher, &["PUBLISH", "flood", "x"]), ":0\r\n");
    assert_eq!(
        text(&mut publisher, &["PUBSUB", "NUMSUB", "flood"]),
        "*2\r\n$5\r\nflood\r\n:0\r\n"
    );
    // The connection is closed: reading drains what the kernel held, then ends.
    sub.read_to_close();
}

#[test]
fn subscriber_over_the_soft_limit_for_too_long_is_disconnected() {
    let server = limited_server();
    let (mut sub, id) = idle_subscriber(server.addr());
    let mut publisher = connect(server.addr());
    let message = "x".repeat(64 * 1024);
    // Fill the socket buffers until the output waiting in the server passes the soft limit
    // (but stays under the hard one).
    let mut published = 0;
    loop {
        assert_eq!(
            text(&mut publisher, &["PUBLISH", "flood", &message]),
            ":1\r\n"
        );
        published += 1;
        let unsent = omem(&mut publisher, &id).expect("still connected");
        if unsent >= 300 * 1024 {
            break;
        }
        assert!(published < 2000, "output never queued up");
    }
    // Over the soft limit, but not for more than 2 seconds yet: still connected.
    assert!(server.clock().advance(Duration::from_millis(1000)));
    assert_eq!(text(&mut publisher, &["PUBLISH", "flood", "y"]), ":1\r\n");
    assert!(omem(&mut publisher, &id).is_some());
    // More than 2 seconds over it: the next message (or the tick, if it comes first) closes
    // the subscriber.
    assert!(server.clock().advance(Duration::from_millis(2500)));
    let count = text(&mut publisher, &["PUBLISH", "flood", "z"]);
    assert!(count == ":1\r\n" || count == ":0\r\n", "{count}");
    assert_eq!(omem(&mut publisher, &id), None);
    assert_eq!(text(&mut publisher, &["PUBLISH", "flood", "z"]), ":0\r\n");
    sub.read_to_close();
}

/// With no more messages for it, a subscriber over the soft limit is still closed once its
/// seconds run out: the server's tick checks the limits too (Redis's `clientsCron`; Redis
/// 7.0.15's unit/obuf-limits found it waiting for the next message).
#[test]
fn an_idle_subscriber_over_the_soft_limit_is_closed_by_the_tick() {
    let server = limited_server();
    let (mut sub, id) = idle_subscriber(server.addr());
    let mut publisher = connect(server.addr());
    let message = "x".repeat(64 * 1024);
    let mut published = 0;
    while omem(&mut publisher, &id).expect("still connected") < 300 * 1024 {
        text(&mut publisher, &["PUBLISH", "flood", &message]);
        published += 1;
        assert!(published < 2000, "output never queued up");
    }
    assert!(server.clock().advance(Duration::from_millis(1000)));
    std::thread::sleep(Duration::from_millis(300));
    assert!(omem(&mut publisher, &id).is_some(), "closed too early");
    assert!(server.clock().advance(Duration::from_millis(2500)));
    support::eventually("the tick to close the subscriber", || {
        omem(&mut publisher, &id).is_none()
    });
    sub.read_to_close();
}

#[test]
fn a_reading_subscriber_is_not_disconnected() {
    let server = limited_server();
    let (mut sub, id) = idle_subscriber(server.addr());
    let mut publisher = connect(server.addr());
    let message = "x".repeat(64 * 1024);
    for _ in 0..200 {
        assert_eq!(
            text(&mut publisher, &["PUBLISH", "flood", &message]),
            ":1\r\n"
        );
        let got = frame(&mut sub);
        assert!(got.starts_with("*3\\r\\n$7\\r\\nmessage"));
    }
    assert!(omem(&mut publisher, &id).is_some());
}
