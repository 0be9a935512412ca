//! Pub/sub seen from several real TCP connections: subscribers receive what another connection
//! publishes without sending anything themselves, in Redis's order and shape.
//!
//! The scenario transcript runs against embedis (both I/O modes) and a real redis-server 7.0;
//! the transcripts must be the same bytes. Where Redis's order comes from its hash tables
//! (UNSUBSCRIBE of several channels without arguments, PUBSUB CHANNELS), the frames of that step
//! are compared without their order. The output-buffer-limit disconnects run on embedis only, with a manual
//! clock for the soft limit's seconds.

use crate::support;
use support::text;

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::{check_transcripts, connect, frame, manual_server, send, Conn, RedisServer};

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

/// The scenario: every frame every client receives, in the order the test reads them.
fn transcript(addr: SocketAddr) -> Vec<String> {
    let mut log = Vec::new();
    let mut publisher = connect(addr);
    let mut a = connect(addr); // RESP2, channel subscriber
    let mut b = connect(addr); // RESP3, channel subscriber
    let mut c = connect(addr); // RESP2, pattern and channel subscriber
    let mut d = connect(addr); // RESP2, shard channel subscriber
    send(&mut b, &["HELLO", "3"]);
    frame(&mut b); // carries the connection id: not compared

    send(&mut a, &["SUBSCRIBE", "news"]);
    log.push(format!("a: {}", frame(&mut a)));
    send(&mut b, &["SUBSCRIBE", "news", "sport"]);
    log.push(format!("b: {} {}", frame(&mut b), frame(&mut b)));
    send(&mut c, &["PSUBSCRIBE", "n*"]);
    log.push(format!("c: {}", frame(&mut c)));
    send(&mut c, &["SUBSCRIBE", "news"]);
    log.push(format!("c: {}", frame(&mut c)));
    send(&mut d, &["SSUBSCRIBE", "orders"]);
    log.push(format!("d: {}", frame(&mut d)));

    // Channel subscribers, then pattern subscribers: c gets message then pmessage.
    send(&mut publisher, &["PUBLISH", "news", "hello"]);
    log.push(format!("publish: {}", frame(&mut publisher)));
    log.push(format!("a: {}", frame(&mut a)));
    log.push(format!("b: {}", frame(&mut b)));
    log.push(format!("c: {} {}", frame(&mut c), frame(&mut c)));
    send(&mut publisher, &["PUBLISH", "nothing-here", "x"]);
    log.push(format!("publish: {}", frame(&mut publisher)));
    log.push(format!("c: {}", frame(&mut c)));
    send(&mut publisher, &["PUBLISH", "sport", "bin\0\r\nary"]);
    log.push(format!("publish: {}", frame(&mut publisher)));
    log.push(format!("b: {}", frame(&mut b)));
    // Shard channels are their own namespace.
    send(&mut publisher, &["PUBLISH", "orders", "p"]);
    log.push(format!("publish: {}", frame(&mut publisher)));
    send(&mut publisher, &["SPUBLISH", "orders", "s"]);
    log.push(format!("spublish: {}", frame(&mut publisher)));
    log.push(format!("d: {}", frame(&mut d)));
    send(&mut publisher, &["SPUBLISH", "news", "s"]);
    log.push(format!("spublish: {}", frame(&mut publisher)));

    send(
        &mut publisher,
        &["PUBSUB", "NUMSUB", "news", "sport", "orders"],
    );
    log.push(format!("numsub: {}", frame(&mut publisher)));
    send(&mut publisher, &["PUBSUB", "SHARDNUMSUB", "orders"]);
    log.push(format!("shardnumsub: {}", frame(&mut publisher)));
    send(&mut publisher, &["PUBSUB", "CHANNELS"]);
    log.push(format!("channels: {}", frame(&mut publisher).len()));
    send(&mut publisher, &["PUBSUB", "NUMPAT"]);
    log.push(format!("numpat: {}", frame(&mut publisher)));

    // Unsubscribing from everything: one confirmation per channel, counts going down.
    send(&mut b, &["UNSUBSCRIBE"]);
    log.push(format!("b: {}", confirmations_unordered(&mut b, 2)));
    send(&mut publisher, &["PUBLISH", "news", "after"]);
    log.push(format!("publish: {}", frame(&mut publisher)));
    log.push(format!("a: {}", frame(&mut a)));
    log.push(format!("c: {} {}", frame(&mut c), frame(&mut c)));

    // A subscriber that disconnects stops counting.
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        send(&mut publisher, &["PUBSUB", "NUMSUB", "news"]);
        let numsub = frame(&mut publisher);
        if numsub.ends_with(":1\\r\\n") || Instant::now() > deadline {
            log.push(format!("numsub after disconnect: {numsub}"));
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    send(&mut publisher, &["PUBLISH", "news", "last"]);
    log.push(format!("publish: {}", frame(&mut publisher)));
    log.push(format!("c: {} {}", frame(&mut c), frame(&mut c)));

    // RESP2 subscribe mode refuses other commands; RESET leaves it.
    send(&mut c, &["GET", "x"]);
    log.push(format!("c: {}", frame(&mut c)));
    send(&mut c, &["PING"]);
    log.push(format!("c: {}", frame(&mut c)));
    send(&mut c, &["RESET"]);
    log.push(format!("c: {}", frame(&mut c)));
    send(&mut publisher, &["PUBLISH", "news", "gone"]);
    log.push(format!("publish: {}", frame(&mut publisher)));
    send(&mut publisher, &["PUBSUB", "NUMPAT"]);
    log.push(format!("numpat: {}", frame(&mut publisher)));
    send(&mut c, &["PING"]);
    log.push(format!("c: {}", frame(&mut c)));
    log
}

#[test]
fn pubsub_transcript_matches_redis() {
    let Some(redis) = RedisServer::start("pubsub", &[]) else {
        return;
    };
    let theirs = transcript(redis.addr());
    if std::env::var_os("PUBSUB_TRACE").is_some() {
        eprintln!("{}", theirs.join("\n"));
    }
    let ours = support::builder().start().unwrap();
    check_transcripts("pubsub", &transcript(ours.addr()), &theirs);
    let threaded = support::builder()
        .config("io-threads", "2")
        .unwrap()
        .start()
        .unwrap();
    check_transcripts(
        "pubsub, io-threads 2",
        &transcript(threaded.addr()),
        &theirs,
    );
    let uring = support::builder()
        .config("io-uring", "yes")
        .unwrap()
        .start()
        .unwrap();
    check_transcripts("pubsub, io-uring", &transcript(uring.addr()), &theirs);
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
    // More than 2 seconds over it: the next message closes the subscriber.
    assert!(server.clock().advance(Duration::from_millis(2500)));
    assert_eq!(text(&mut publisher, &["PUBLISH", "flood", "z"]), ":1\r\n");
    assert_eq!(omem(&mut publisher, &id), None);
    assert_eq!(text(&mut publisher, &["PUBLISH", "flood", "z"]), ":0\r\n");
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
