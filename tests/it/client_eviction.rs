//! Client eviction (`maxmemory-clients`, Redis 7.0): once all clients together use more memory
//! than the limit, the largest are closed — a client with a big query buffer (a value still
//! arriving) as much as one whose replies pile up because it stopped reading — while CLIENT
//! NO-EVICT ON clients stay, and INFO's `evicted_clients` counts them. Redis's own unit
//! (`unit/client-eviction` through `tests/redis-suite/integration.sh`) covers the rest.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::{text, Conn};

const LIMIT: usize = 1 << 20;

fn server() -> embedis::Server {
    support::builder()
        .config("maxmemory-clients", &LIMIT.to_string())
        .unwrap()
        .start()
        .unwrap()
}

/// A client named `name`.
fn named(addr: SocketAddr, name: &str) -> Conn {
    let mut conn = Conn::connect(addr).unwrap();
    assert_eq!(text(&mut conn, &["CLIENT", "SETNAME", name]), "+OK\r\n");
    conn
}

/// A raw connection named `name`, for a client that the server may close while it writes.
fn raw_named(addr: SocketAddr, name: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .write_all(&Conn::encode(&[b"CLIENT", b"SETNAME", name.as_bytes()]))
        .unwrap();
    let mut ok = [0u8; 5];
    stream.read_exact(&mut ok).unwrap();
    assert_eq!(&ok, b"+OK\r\n");
    stream
}

/// True once the server closed `stream` (what it sent before is skipped).
fn closed(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 65536];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

/// The `field=` value of the client named `name` in CLIENT LIST, if it is connected.
fn client_field(admin: &mut Conn, name: &str, field: &str) -> Option<u64> {
    let list = text(admin, &["CLIENT", "LIST"]);
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))?;
    let value = line
        .split(' ')
        .find_map(|f| f.strip_prefix(&format!("{field}=")))?;
    Some(value.parse().unwrap())
}

/// Waits (at most 10 s) until `done` holds.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(10), "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn evicted_clients(admin: &mut Conn) -> u64 {
    support::info_field(admin, "stats", "evicted_clients")
        .unwrap()
        .parse()
        .unwrap()
}

/// A client sending a value bigger than the limit is closed before the value is all there;
/// one with CLIENT NO-EVICT ON sending the same is not.
#[test]
fn a_big_query_buffer_is_evicted_unless_no_evict() {
    let server = server();
    let addr = server.addr();
    let mut admin = named(addr, "admin");
    assert_eq!(text(&mut admin, &["CLIENT", "NO-EVICT", "ON"]), "+OK\r\n");
    let size = LIMIT + 1;
    // No final CRLF: the request stays in the query buffer. The server may close while the
    // bytes are still going out.
    let request = |stream: &mut TcpStream| {
        let mut bytes = format!("*2\r\n$3\r\nSET\r\n${size}\r\n").into_bytes();
        bytes.extend(std::iter::repeat_n(b'v', size));
        let _ = stream.write_all(&bytes);
    };

    let mut kept = raw_named(addr, "kept");
    kept.write_all(&Conn::encode(&[b"CLIENT", b"NO-EVICT", b"ON"]))
        .unwrap();
    request(&mut kept);
    wait_until("the kept client's query buffer to fill", || {
        client_field(&mut admin, "kept", "qbuf") == Some(size as u64)
    });
    let tot_mem = client_field(&mut admin, "kept", "tot-mem").unwrap();
    assert!(tot_mem > LIMIT as u64, "tot-mem={tot_mem}");
    assert_eq!(evicted_clients(&mut admin), 0);
    drop(kept);
    wait_until("the kept client to leave", || {
        client_field(&mut admin, "kept", "qbuf").is_none()
    });

    let mut evicted = raw_named(addr, "evicted");
    request(&mut evicted);
    assert!(closed(&mut evicted));
    assert_eq!(client_field(&mut admin, "evicted", "qbuf"), None);
    assert_eq!(evicted_clients(&mut admin), 1);
}

/// A client that stops reading while its replies pile up is evicted once they pass the limit,
/// and never shows more than the limit in CLIENT LIST on the way; the admin connection, under
/// NO-EVICT, stays.
#[test]
fn a_reply_backlog_is_evicted() {
    let server = server();
    let addr = server.addr();
    let mut admin = named(addr, "admin");
    assert_eq!(text(&mut admin, &["CLIENT", "NO-EVICT", "ON"]), "+OK\r\n");
    assert_eq!(
        text(&mut admin, &["SETRANGE", "k", "200000", "v"]),
        ":200001\r\n"
    );
    let mut reader = raw_named(addr, "reader");
    let get = Conn::encode(&[b"GET", b"k"]);
    let mut sent = 0;
    loop {
        // The server closes the connection at eviction: writes may then fail.
        if reader.write_all(&get).is_err() {
            break;
        }
        sent += 1;
        match client_field(&mut admin, "reader", "tot-mem") {
            Some(mem) => assert!(mem < LIMIT as u64 + 300_000, "tot-mem={mem}"),
            None => break,
        }
        assert!(sent < 10_000, "never evicted");
        std::thread::sleep(Duration::from_millis(1));
    }
    wait_until("the reader to be gone", || {
        client_field(&mut admin, "reader", "tot-mem").is_none()
    });
    assert_eq!(evicted_clients(&mut admin), 1);
    assert_eq!(text(&mut admin, &["PING"]), "+PONG\r\n");
}

/// Lowering the limit evicts at once, the largest clients first, and only as many as it takes;
/// turning it off evicts nobody, whatever the clients hold.
#[test]
fn lowering_the_limit_evicts_the_largest_first() {
    let server = support::builder().start().unwrap();
    let addr = server.addr();
    let mut admin = named(addr, "admin");
    assert_eq!(text(&mut admin, &["CLIENT", "NO-EVICT", "ON"]), "+OK\r\n");
    let mut clients = Vec::new();
    for (name, size) in [("small", 100_000), ("medium", 400_000), ("large", 800_000)] {
        let mut conn = named(addr, name);
        let mut bytes = format!("*2\r\n$3\r\nSET\r\n${size}\r\n").into_bytes();
        bytes.extend(std::iter::repeat_n(b'v', size));
        conn.send_raw(&bytes);
        wait_until("the query buffer to fill", || {
            client_field(&mut admin, name, "qbuf") == Some(size as u64)
        });
        clients.push(conn);
    }
    let mem = |admin: &mut Conn, name| client_field(admin, name, "tot-mem").unwrap();
    let (admin_mem, small, medium) = (
        mem(&mut admin, "admin"),
        mem(&mut admin, "small"),
        mem(&mut admin, "medium"),
    );
    // Room for all but the large one (and for the admin connection's replies).
    let limit = admin_mem + small + medium + 100_000;
    assert_eq!(
        text(
            &mut admin,
            &["CONFIG", "SET", "maxmemory-clients", &limit.to_string()]
        ),
        "+OK\r\n"
    );
    assert_eq!(client_field(&mut admin, "large", "tot-mem"), None);
    assert!(client_field(&mut admin, "medium", "tot-mem").is_some());
    assert!(client_field(&mut admin, "small", "tot-mem").is_some());
    assert_eq!(evicted_clients(&mut admin), 1);
    // Off again: nobody else goes.
    assert_eq!(
        text(&mut admin, &["CONFIG", "SET", "maxmemory-clients", "0"]),
        "+OK\r\n"
    );
    assert!(client_field(&mut admin, "medium", "tot-mem").is_some());
    // A percentage of maxmemory: 1% of 100 MB is more than medium and small hold, 1% of
    // 30 MB is less, but more than small holds.
    assert_eq!(
        text(
            &mut admin,
            &[
                "CONFIG",
                "SET",
                "maxmemory",
                "100mb",
                "maxmemory-clients",
                "1%"
            ]
        ),
        "+OK\r\n"
    );
    assert!(client_field(&mut admin, "medium", "tot-mem").is_some());
    assert_eq!(
        text(&mut admin, &["CONFIG", "SET", "maxmemory", "30mb"]),
        "+OK\r\n"
    );
    assert_eq!(client_field(&mut admin, "medium", "tot-mem"), None);
    assert!(client_field(&mut admin, "small", "tot-mem").is_some());
    assert_eq!(evicted_clients(&mut admin), 2);
    assert_eq!(text(&mut admin, &["CONFIG", "RESETSTAT"]), "+OK\r\n");
    assert_eq!(evicted_clients(&mut admin), 0);
}
