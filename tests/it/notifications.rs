//! Keyspace notifications that time or another client causes: `expired` from lazy and from
//! active expiry on a server whose clock the test moves. (What each command announces, and
//! where among its reply, is compared with redis-server byte for byte in
//! `tests/diff/notifications.txt`; the events of a blocked pop served by another client's push
//! in `tests/diff/notifications_clients.txt`.)

use crate::support;

use embedis_protocol::Value;
use std::net::SocketAddr;
use std::time::Duration;
use support::{advance_ms, cmd, connect, manual_server, send};
use support::{Conn, Received};

/// A connection subscribed to every keyspace and keyevent channel.
fn subscriber(addr: SocketAddr) -> Conn {
    let mut conn = connect(addr);
    cmd(&mut conn, &["PSUBSCRIBE", "__key*__:*"]);
    conn
}

/// A `pmessage` frame's channel and message, as `channel message`; anything else as its kind.
fn describe(value: &Value) -> String {
    match value {
        Value::Array(items) | Value::Push(items) => match items.as_slice() {
            [Value::Bulk(kind), _, Value::Bulk(channel), Value::Bulk(message)]
                if kind.as_ref() == b"pmessage" =>
            {
                format!(
                    "{} {}",
                    String::from_utf8_lossy(channel),
                    String::from_utf8_lossy(message)
                )
            }
            _ => format!("{value:?}"),
        },
        other => format!("{other:?}"),
    }
}

/// The next frame `conn` receives, described; panics if none comes.
fn next_frame(conn: &mut Conn) -> String {
    let (_, value) = conn.read_reply().expect("connection closed");
    describe(&value)
}

/// Every frame `conn` receives until nothing more comes for a moment.
fn drain(conn: &mut Conn) -> Vec<String> {
    let mut frames = Vec::new();
    while let Received::Reply { value, .. } = conn.read_within(Duration::from_millis(100)) {
        frames.push(describe(&value));
    }
    frames
}

fn manual_server_with_debug() -> embedis::Server {
    support::builder()
        .clock(embedis::Clock::manual())
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .expect("embedis starts")
}

#[test]
fn lazy_expiry_announces_expired_when_a_read_finds_the_deadline_passed() {
    let server = manual_server_with_debug();
    let mut client = connect(server.addr());
    // Active expiry off: only a lookup may find the key expired.
    cmd(&mut client, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    cmd(
        &mut client,
        &["CONFIG", "SET", "notify-keyspace-events", "KEx"],
    );
    let mut watcher = subscriber(server.addr());
    cmd(&mut client, &["SET", "k", "v", "PX", "100"]);
    advance_ms(&server, 100);
    assert_eq!(cmd(&mut client, &["GET", "k"]), "$1\\r\\nv\\r\\n");
    assert_eq!(
        drain(&mut watcher),
        Vec::<String>::new(),
        "alive at its deadline"
    );
    advance_ms(&server, 1);
    assert_eq!(
        drain(&mut watcher),
        Vec::<String>::new(),
        "nobody looked yet"
    );
    assert_eq!(cmd(&mut client, &["GET", "k"]), "$-1\\r\\n");
    assert_eq!(
        drain(&mut watcher),
        ["__keyspace@0__:k expired", "__keyevent@0__:expired k"]
    );

    // A RESP3 client subscribed on its own connection gets the event before the reply.
    cmd(&mut client, &["HELLO", "3"]);
    cmd(&mut client, &["PSUBSCRIBE", "__keyevent@*"]);
    cmd(&mut client, &["SELECT", "5"]);
    cmd(&mut client, &["SET", "j", "v", "PX", "10"]);
    advance_ms(&server, 11);
    send(&mut client, &["STRLEN", "j"]);
    assert_eq!(next_frame(&mut client), "__keyevent@5__:expired j");
    assert_eq!(next_frame(&mut client), "Integer(0)");
}

#[test]
fn active_expiry_announces_expired_without_any_command() {
    let server = manual_server();
    let mut client = connect(server.addr());
    cmd(
        &mut client,
        &["CONFIG", "SET", "notify-keyspace-events", "Ex"],
    );
    let mut watcher = subscriber(server.addr());
    for key in ["a", "b", "c"] {
        cmd(&mut client, &["SET", key, "v", "PX", "100"]);
    }
    cmd(&mut client, &["SET", "kept", "v"]);
    cmd(&mut client, &["SELECT", "3"]);
    cmd(&mut client, &["SET", "d", "v", "PX", "100"]);
    advance_ms(&server, 100);
    assert_eq!(
        drain(&mut watcher),
        Vec::<String>::new(),
        "none is past due"
    );
    // Moving the clock wakes the server's tick: the cycle deletes them with nobody asking.
    advance_ms(&server, 1);
    let mut events = Vec::new();
    while events.len() < 4 {
        events.push(next_frame(&mut watcher));
    }
    events.sort();
    assert_eq!(
        events,
        [
            "__keyevent@0__:expired a",
            "__keyevent@0__:expired b",
            "__keyevent@0__:expired c",
            "__keyevent@3__:expired d",
        ]
    );
    assert_eq!(drain(&mut watcher), Vec::<String>::new());
    cmd(&mut client, &["SELECT", "0"]);
    assert_eq!(cmd(&mut client, &["DBSIZE"]), ":1\\r\\n");
}
