//! When a replica's full sync starts: with diskless sync, Redis waits
//! `repl-diskless-sync-delay` seconds (or until `repl-diskless-sync-max-replicas` replicas
//! wait) so that replicas arriving meanwhile share one sync. Meanwhile the replica stays in
//! its handshake: no `+FULLRESYNC`, no stream, a newline a second. A replica here is a raw
//! socket speaking the protocol, and the primary runs on a manual clock, so the delay passes
//! when the test says.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::support::{advance_ms, builder, info_field, text, Conn};

fn primary(delay_s: &str, max_replicas: &str) -> embedis::Server {
    builder()
        .clock(embedis::Clock::manual())
        .config("repl-diskless-sync-delay", delay_s)
        .unwrap()
        .config("repl-diskless-sync-max-replicas", max_replicas)
        .unwrap()
        .start()
        .unwrap()
}

/// A replica's socket, after `REPLCONF capa eof` and `PSYNC ? -1`.
fn raw_replica(server: &embedis::Server) -> TcpStream {
    let mut socket = TcpStream::connect(server.addr()).unwrap();
    socket
        .write_all(b"REPLCONF capa eof capa psync2\r\n")
        .unwrap();
    assert_eq!(read_for(&mut socket, Duration::from_secs(5), 5), b"+OK\r\n");
    socket.write_all(b"PSYNC ? -1\r\n").unwrap();
    socket
}

/// What arrives within `window` (or until `enough` bytes did).
fn read_for(socket: &mut TcpStream, window: Duration, enough: usize) -> Vec<u8> {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while started.elapsed() < window && got.len() < enough {
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        match socket.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    got
}

fn replica_state(conn: &mut Conn) -> String {
    let line = info_field(conn, "replication", "slave0").unwrap_or_default();
    line.split(',')
        .find_map(|f| f.strip_prefix("state="))
        .unwrap_or_default()
        .to_string()
}

/// Waits until the primary lists its (first) replica as waiting for its sync.
fn until_waiting(admin: &mut Conn) {
    super::support::eventually("the replica waits for its sync", || {
        replica_state(admin) == "wait_bgsave"
    });
}

#[test]
fn a_diskless_sync_waits_the_delay_with_newlines_and_no_stream() {
    let server = primary("5", "0");
    let mut admin = Conn::connect(server.addr()).unwrap();
    let mut replica = raw_replica(&server);
    // Waiting: listed by INFO (wait_bgsave) but not by ROLE, and sent nothing but newlines.
    until_waiting(&mut admin);
    assert_eq!(text(&mut admin, &["SET", "before", "1"]), "+OK\r\n");
    assert!(text(&mut admin, &["ROLE"]).ends_with("*0\r\n"));
    advance_ms(&server, 2000);
    let waited = read_for(&mut replica, Duration::from_millis(400), usize::MAX);
    assert!(!waited.is_empty(), "a keep-alive newline");
    assert!(
        waited.iter().all(|&b| b == b'\n'),
        "only newlines while waiting: {:?}",
        String::from_utf8_lossy(&waited)
    );
    // The delay passes: +FULLRESYNC, then the image in the diskless framing, holding the
    // write made while the replica waited (it was not streamed to it before).
    advance_ms(&server, 3000);
    let started = read_for(&mut replica, Duration::from_secs(5), 120);
    let text_of = String::from_utf8_lossy(&started).into_owned();
    let text_of = text_of.trim_start_matches('\n');
    assert!(text_of.starts_with("+FULLRESYNC "), "{text_of:?}");
    assert!(text_of.contains("\r\n$EOF:"), "{text_of:?}");
    assert!(
        text_of.contains("before"),
        "the image holds the key: {text_of:?}"
    );
    assert_eq!(replica_state(&mut admin), "online");
    // From now on the stream follows.
    assert_eq!(text(&mut admin, &["SET", "after", "2"]), "+OK\r\n");
    let stream = read_for(&mut replica, Duration::from_secs(5), 20);
    assert!(
        String::from_utf8_lossy(&stream).contains("after"),
        "{:?}",
        String::from_utf8_lossy(&stream)
    );
}

#[test]
fn enough_waiting_replicas_start_the_sync_before_the_delay() {
    let server = primary("1000", "2");
    let mut admin = Conn::connect(server.addr()).unwrap();
    let mut first = raw_replica(&server);
    until_waiting(&mut admin);
    let early = read_for(&mut first, Duration::from_millis(300), usize::MAX);
    assert!(early.iter().all(|&b| b == b'\n'), "{early:?}");
    let mut second = raw_replica(&server);
    for socket in [&mut first, &mut second] {
        let got = read_for(socket, Duration::from_secs(5), 60);
        let got = String::from_utf8_lossy(&got).into_owned();
        assert!(
            got.trim_start_matches('\n').starts_with("+FULLRESYNC "),
            "{got:?}"
        );
    }
    assert_eq!(
        info_field(&mut admin, "stats", "sync_full").as_deref(),
        Some("2")
    );
}

#[test]
fn a_replica_binary_sees_the_handshake_time_out_when_the_primary_goes_silent() {
    // Redis's integration/replication "Slave is able to detect timeout during handshake": the
    // primary delays the sync (newlines keep the replica waiting), then stops sending them.
    let server = primary("1000", "0");
    let log = super::support::temp_dir("handshake-timeout").join("replica.log");
    let replica = builder()
        .config("repl-timeout", "1")
        .unwrap()
        .config("logfile", log.to_str().unwrap())
        .unwrap()
        .replica_of(server.addr())
        .verbose()
        .start()
        .unwrap();
    let mut on_replica = Conn::connect(replica.addr()).unwrap();
    super::support::eventually("the replica in its handshake", || {
        text(&mut on_replica, &["ROLE"]).contains("handshake")
    });
    // Newlines a second (the manual clock moves them) keep it waiting past repl-timeout.
    for _ in 0..3 {
        advance_ms(&server, 1000);
        std::thread::sleep(Duration::from_millis(400));
        assert!(text(&mut on_replica, &["ROLE"]).contains("handshake"));
    }
    // No more newlines: the clock stands still, and so do the keep-alives.
    super::support::eventually("the handshake timed out", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("Timeout connecting to the MASTER...")
    });
}
