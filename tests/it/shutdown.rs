//! SHUTDOWN's wait for lagging replicas (Redis 7.0's `shutdown-timeout`), on a manual clock: a
//! replica that has not acknowledged the whole stream holds the shutdown, blocked in SHUTDOWN,
//! until it catches up or the timeout passes; SHUTDOWN ABORT cancels the wait and answers every
//! waiting client with Redis's error. The replica is played by hand over a socket (REPLCONF,
//! PSYNC, then REPLCONF ACK when the test says), so that its lag is the test's to decide. Also
//! `bind-source-addr`, the address a replica's link leaves from.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use support::Conn;

use embedis::{Clock, Server};

/// A replica played by hand: attached with PSYNC, acknowledging only when told.
struct HandReplica {
    stream: TcpStream,
    /// Bytes received and not consumed.
    input: Vec<u8>,
    /// The offset of the stream it has read up to.
    offset: u64,
}

impl HandReplica {
    fn attach(addr: SocketAddr) -> HandReplica {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut r = HandReplica {
            stream,
            input: Vec::new(),
            offset: 0,
        };
        r.send(&[b"REPLCONF", b"listening-port", b"4000"]);
        assert_eq!(r.line(), "+OK");
        r.send(&[b"PSYNC", b"?", b"-1"]);
        let full = r.line();
        let offset = full.rsplit(' ').next().unwrap();
        assert!(full.starts_with("+FULLRESYNC "), "{full}");
        r.offset = offset.parse().unwrap();
        // The image, `$<len>` framed; newlines before it are keep-alives.
        let mut header = r.line();
        while header.is_empty() {
            header = r.line();
        }
        let len: usize = header.strip_prefix('$').unwrap().parse().unwrap();
        r.take(len);
        r
    }

    fn send(&mut self, args: &[&[u8]]) {
        self.stream.write_all(&Conn::encode(args)).unwrap();
    }

    fn fill(&mut self) {
        let mut buf = [0u8; 4096];
        let n = self.stream.read(&mut buf).unwrap();
        assert!(n > 0, "the primary closed the link");
        self.input.extend_from_slice(&buf[..n]);
    }

    fn line(&mut self) -> String {
        loop {
            if let Some(end) = self.input.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.input.drain(..=end).collect();
                return String::from_utf8_lossy(&line).trim_end().to_string();
            }
            self.fill();
        }
    }

    fn take(&mut self, len: usize) {
        while self.input.len() < len {
            self.fill();
        }
        self.input.drain(..len);
    }

    /// Reads the stream up to and including `needle`, counting its bytes into the offset.
    fn read_through(&mut self, needle: &[u8]) {
        loop {
            if let Some(at) = self.input.windows(needle.len()).position(|w| w == needle) {
                let used = at + needle.len();
                self.input.drain(..used);
                self.offset += used as u64;
                return;
            }
            self.fill();
        }
    }

    fn ack(&mut self) {
        let offset = self.offset.to_string();
        self.send(&[b"REPLCONF", b"ACK", offset.as_bytes()]);
    }
}

/// A server on a manual clock logging to a file of its own; with the file's path.
fn logging_server() -> (Server, std::path::PathBuf) {
    let log = support::server_dir().join("server.log");
    let server = support::builder()
        .clock(Clock::manual())
        .verbose()
        .config("logfile", &log.display().to_string())
        .unwrap()
        .start()
        .unwrap();
    (server, log)
}

fn log_text(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The next reply's raw bytes as text.
fn raw_frame(conn: &mut Conn) -> String {
    support::lossy(&conn.read_reply().expect("a reply").0)
}

fn info_server_field(conn: &mut Conn, name: &str) -> Option<String> {
    support::info_field(conn, "server", name)
}

#[test]
fn shutdown_waits_for_a_lagging_replica_until_the_timeout() {
    let (server, log) = logging_server();
    let mut replica = HandReplica::attach(server.addr());
    let mut probe = support::connect(server.addr());
    assert_eq!(support::text(&mut probe, &["SET", "k", "v"]), "+OK\r\n");
    let mut stopper = support::connect(server.addr());
    support::send(&mut stopper, &["SHUTDOWN"]);
    support::wait_blocked(&mut probe, 1);
    // The clock does not move: the whole timeout is left.
    assert_eq!(
        info_server_field(&mut probe, "shutdown_in_milliseconds").as_deref(),
        Some("10000")
    );
    // The replica reads what was written (and the GETACK) but does not acknowledge it.
    replica.read_through(b"GETACK\r\n$1\r\n*\r\n");
    support::advance_ms(&server, 9_999);
    assert_eq!(support::text(&mut probe, &["PING"]), "+PONG\r\n");
    support::advance_ms(&server, 1);
    assert_eq!(stopper.read_to_close(), b"");
    let text = log_text(&log);
    assert!(
        text.contains("Waiting for replicas before shutting down."),
        "{text}"
    );
    assert!(
        text.contains("Lagging replica 127.0.0.1:4000 reported offset"),
        "{text}"
    );
    assert!(
        text.contains("0 of 1 replicas are in sync when shutting down."),
        "{text}"
    );
    assert!(text.contains("ready to exit, bye bye"), "{text}");
}

#[test]
fn a_replica_that_catches_up_ends_the_wait() {
    let (server, log) = logging_server();
    let mut replica = HandReplica::attach(server.addr());
    let mut probe = support::connect(server.addr());
    assert_eq!(support::text(&mut probe, &["SET", "k", "v"]), "+OK\r\n");
    let mut stopper = support::connect(server.addr());
    support::send(&mut stopper, &["SHUTDOWN"]);
    support::wait_blocked(&mut probe, 1);
    replica.read_through(b"GETACK\r\n$1\r\n*\r\n");
    replica.ack();
    // The next tick sees the replica in sync: no need to move the clock.
    assert_eq!(stopper.read_to_close(), b"");
    let text = log_text(&log);
    assert!(
        text.contains("1 of 1 replicas are in sync when shutting down."),
        "{text}"
    );
    assert!(!text.contains("Lagging replica"), "{text}");
}

#[test]
fn shutdown_abort_answers_every_waiting_client_and_resumes_writes() {
    let (server, log) = logging_server();
    let _replica = HandReplica::attach(server.addr());
    let mut probe = support::connect(server.addr());
    assert_eq!(support::text(&mut probe, &["SET", "k", "v"]), "+OK\r\n");
    let mut first = support::connect(server.addr());
    let mut second = support::connect(server.addr());
    support::send(&mut first, &["SHUTDOWN"]);
    support::wait_blocked(&mut probe, 1);
    support::send(&mut second, &["SHUTDOWN", "SAVE"]);
    support::wait_blocked(&mut probe, 2);
    // Replicas are not clients in INFO's count.
    assert_eq!(
        support::info_field(&mut probe, "clients", "connected_clients").as_deref(),
        Some("3")
    );
    // Writes wait with the shutdown.
    let mut writer = support::connect(server.addr());
    support::send(&mut writer, &["SET", "k", "w"]);
    support::wait_blocked(&mut probe, 3);
    assert_eq!(support::text(&mut probe, &["SHUTDOWN", "ABORT"]), "+OK\r\n");
    let error = "-ERR Errors trying to SHUTDOWN. Check logs.\r\n";
    assert_eq!(raw_frame(&mut first), error);
    assert_eq!(raw_frame(&mut second), error);
    assert_eq!(raw_frame(&mut writer), "+OK\r\n");
    assert_eq!(support::text(&mut probe, &["GET", "k"]), "$1\r\nw\r\n");
    assert_eq!(
        info_server_field(&mut probe, "shutdown_in_milliseconds"),
        None
    );
    assert_eq!(
        support::text(&mut probe, &["SHUTDOWN", "ABORT"]),
        "-ERR No shutdown in progress.\r\n"
    );
    assert!(log_text(&log).contains("Shutdown manually aborted."));
}

#[test]
fn shutdown_now_or_without_replicas_does_not_wait() {
    let (server, _log) = logging_server();
    let _replica = HandReplica::attach(server.addr());
    let mut probe = support::connect(server.addr());
    assert_eq!(support::text(&mut probe, &["SET", "k", "v"]), "+OK\r\n");
    let mut stopper = support::connect(server.addr());
    support::send(&mut stopper, &["SHUTDOWN", "NOW"]);
    assert_eq!(stopper.read_to_close(), b"");
    // Inside MULTI a SHUTDOWN that would wait is refused.
    let server = support::builder().start().unwrap();
    let mut c = support::connect(server.addr());
    assert_eq!(support::text(&mut c, &["MULTI"]), "+OK\r\n");
    assert_eq!(
        support::text(&mut c, &["SHUTDOWN"]),
        "-ERR Command not allowed inside a transaction\r\n"
    );
}

#[test]
fn bind_source_addr_is_where_a_replicas_link_comes_from() {
    let primary = support::builder().start().unwrap();
    // Protected mode lets in 127.0.0.1 and ::1 only, as Redis's.
    let mut p = support::connect(primary.addr());
    assert_eq!(
        support::text(&mut p, &["CONFIG", "SET", "protected-mode", "no"]),
        "+OK\r\n"
    );
    let replica = support::builder().start().unwrap();
    let mut r = support::connect(replica.addr());
    assert_eq!(
        support::text(&mut r, &["CONFIG", "SET", "bind-source-addr", "127.0.0.2"]),
        "+OK\r\n"
    );
    let port = primary.addr().port().to_string();
    assert_eq!(
        support::text(&mut r, &["REPLICAOF", "127.0.0.1", &port]),
        "+OK\r\n"
    );
    support::eventually("the replica attached", || {
        support::info_field(&mut p, "replication", "slave0").is_some()
    });
    let slave0 = support::info_field(&mut p, "replication", "slave0").unwrap();
    assert!(slave0.starts_with("ip=127.0.0.2,"), "{slave0}");
}
