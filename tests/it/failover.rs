//! FAILOVER, Redis's coordinated failover, among embedis servers and against a target the test
//! plays on a socket. A primary under a write load hands its role to a replica: the roles swap,
//! the old primary continues as the new one's replica with a partial resync, and every write it
//! acknowledged is on the new primary (the writes it held meanwhile answer `-READONLY`). A
//! failover waits for its replica (`waiting-for-sync`, writes held whatever CLIENT UNPAUSE says),
//! can be aborted, and gives up at its TIMEOUT. On the wire, the old primary asks its target with
//! `PSYNC <replid> <offset + 1> FAILOVER` (`failover-in-progress` meanwhile, its blocked clients
//! released with `-UNBLOCKED`), is a primary again under a new ID when the target refuses, and a
//! replica when it continues.

use crate::support;
use support::{eventually, field, link_up, text, Conn};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

fn replica_of(primary: SocketAddr) -> embedis::Server {
    support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("replicaof", &format!("{} {}", primary.ip(), primary.port()))
        .unwrap()
        .start()
        .unwrap()
}

fn info(c: &mut Conn, name: &str) -> String {
    field(&text(c, &["INFO", "replication"]), name)
}

fn failover_state(c: &mut Conn) -> String {
    info(c, "master_failover_state")
}

fn stat(c: &mut Conn, name: &str) -> String {
    field(&text(c, &["INFO", "stats"]), name)
}

fn same_digest(a: &mut Conn, b: &mut Conn) {
    eventually("the same dataset", || {
        text(a, &["DEBUG", "DIGEST"]) == text(b, &["DEBUG", "DIGEST"])
    });
}

/// A primary under a load of INCRs fails over to one of its two replicas: roles swapped, the
/// counter on the new primary is exactly the last value the old one acknowledged, the old
/// primary continued without a full sync, and the other replica follows the new primary.
#[test]
fn failover_swaps_the_roles_and_keeps_every_acknowledged_write() {
    let a = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut ca = Conn::connect(a.addr()).unwrap();
    let b = replica_of(a.addr());
    let c = replica_of(a.addr());
    let mut cb = Conn::connect(b.addr()).unwrap();
    let mut cc = Conn::connect(c.addr()).unwrap();
    eventually("b's link", || link_up(&mut cb));
    eventually("c's link", || link_up(&mut cc));
    assert_eq!(failover_state(&mut ca), "no-failover");
    let writer = {
        let addr = a.addr();
        std::thread::spawn(move || {
            let mut w = Conn::connect(addr).unwrap();
            let mut acknowledged = 0i64;
            loop {
                let reply = text(&mut w, &["INCR", "n"]);
                if let Some(n) = reply.strip_prefix(':') {
                    acknowledged = n.trim().parse().unwrap();
                } else {
                    assert!(reply.starts_with("-READONLY"), "INCR answered {reply}");
                    return acknowledged;
                }
            }
        })
    };
    eventually("writes", || {
        text(&mut ca, &["GET", "n"]).len() > "$1\r\n9\r\n".len()
    });
    let (host, port) = (b.addr().ip().to_string(), b.addr().port().to_string());
    assert_eq!(text(&mut ca, &["FAILOVER", "TO", &host, &port]), "+OK\r\n");
    eventually("the failover's end", || {
        failover_state(&mut ca) == "no-failover"
    });
    let acknowledged = writer.join().unwrap();
    assert!(acknowledged > 0);
    assert!(text(&mut ca, &["ROLE"]).contains("slave"));
    assert!(text(&mut cb, &["ROLE"]).contains("master"));
    assert_eq!(info(&mut ca, "master_port"), port);
    assert_eq!(
        text(&mut cb, &["GET", "n"]),
        format!("${}\r\n{acknowledged}\r\n", acknowledged.to_string().len()),
        "every acknowledged INCR, and nothing else, on the new primary"
    );
    eventually("a's link to b", || link_up(&mut ca));
    assert_eq!(stat(&mut cb, "sync_full"), "0", "a continued b's history");
    assert_eq!(stat(&mut cb, "sync_partial_ok"), "1");
    // The old primary's writes are refused now; the new primary's reach it.
    assert!(text(&mut ca, &["SET", "x", "1"]).starts_with("-READONLY"));
    assert_eq!(text(&mut cb, &["SET", "x", "2"]), "+OK\r\n");
    assert_eq!(text(&mut cc, &["REPLICAOF", &host, &port]), "+OK\r\n");
    eventually("c's link to b", || link_up(&mut cc));
    same_digest(&mut cb, &mut ca);
    same_digest(&mut cb, &mut cc);
    assert_eq!(text(&mut ca, &["GET", "x"]), "$1\r\n2\r\n");
}

/// A failover waits while its replica does not acknowledge: writes are held (CLIENT UNPAUSE
/// does not release them, reads run), REPLICAOF and a second FAILOVER are refused; ABORT
/// releases the writes, and a TIMEOUT without FORCE gives up on its own.
#[test]
fn a_failover_waits_for_its_replica_and_ends_with_abort_or_timeout() {
    let a = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut ca = Conn::connect(a.addr()).unwrap();
    let b = replica_of(a.addr());
    let mut cb = Conn::connect(b.addr()).unwrap();
    eventually("b's link", || link_up(&mut cb));
    text(&mut ca, &["SET", "k", "1"]);
    assert_eq!(text(&mut ca, &["WAIT", "1", "0"]), ":1\r\n");
    b.faults().hold_replication(true);
    text(&mut ca, &["SET", "k", "2"]);
    let (host, port) = (b.addr().ip().to_string(), b.addr().port().to_string());
    assert_eq!(
        text(
            &mut ca,
            &["FAILOVER", "TO", &host, &port, "TIMEOUT", "60000"]
        ),
        "+OK\r\n"
    );
    assert_eq!(failover_state(&mut ca), "waiting-for-sync");
    let mut writer = Conn::connect(a.addr()).unwrap();
    writer.send_raw(&Conn::encode(&[b"SET", b"k", b"3"]));
    assert_eq!(writer.reply_within(Duration::from_millis(300)), None);
    assert_eq!(text(&mut ca, &["GET", "k"]), "$1\r\n2\r\n");
    assert_eq!(text(&mut ca, &["CLIENT", "UNPAUSE"]), "+OK\r\n");
    assert_eq!(writer.reply_within(Duration::from_millis(200)), None);
    assert_eq!(
        text(&mut ca, &["REPLICAOF", "NO", "ONE"]),
        "-ERR REPLICAOF not allowed while failing over.\r\n"
    );
    assert_eq!(
        text(&mut ca, &["FAILOVER"]),
        "-ERR FAILOVER already in progress.\r\n"
    );
    assert_eq!(text(&mut ca, &["FAILOVER", "ABORT"]), "+OK\r\n");
    assert_eq!(failover_state(&mut ca), "no-failover");
    assert_eq!(
        writer.reply_within(Duration::from_secs(5)).as_deref(),
        Some(&b"+OK\r\n"[..])
    );
    assert_eq!(
        text(&mut ca, &["FAILOVER", "ABORT"]),
        "-ERR No failover in progress.\r\n"
    );
    // Without TO: any replica would do, but none catches up before the timeout.
    assert_eq!(text(&mut ca, &["FAILOVER", "TIMEOUT", "300"]), "+OK\r\n");
    assert_eq!(failover_state(&mut ca), "waiting-for-sync");
    eventually("the timeout", || failover_state(&mut ca) == "no-failover");
    assert!(text(&mut ca, &["ROLE"]).contains("master"));
    assert_eq!(text(&mut ca, &["SET", "k", "4"]), "+OK\r\n");
    b.faults().hold_replication(false);
    same_digest(&mut ca, &mut cb);
    assert!(text(&mut cb, &["ROLE"]).contains("slave"));
}

/// A replica played by the test: attached to `primary` with a full sync, announcing
/// `listening_port`. Returns the socket and the offset the sync started at.
fn attach_fake_replica(primary: SocketAddr, listening_port: u16) -> (TcpStream, String) {
    let socket = TcpStream::connect(primary).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(socket.try_clone().unwrap());
    let mut line = String::new();
    let port = listening_port.to_string();
    (&socket)
        .write_all(&Conn::encode(&[
            b"REPLCONF",
            b"listening-port",
            port.as_bytes(),
        ]))
        .unwrap();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "+OK\r\n");
    (&socket)
        .write_all(&Conn::encode(&[b"PSYNC", b"?", b"-1"]))
        .unwrap();
    line.clear();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("+FULLRESYNC"), "{line}");
    let offset = line.split_whitespace().nth(2).unwrap().to_string();
    line.clear();
    reader.read_line(&mut line).unwrap();
    let len: usize = line.trim().trim_start_matches('$').parse().unwrap();
    let mut image = vec![0; len];
    reader.read_exact(&mut image).unwrap();
    (socket, offset)
}

/// The fake replica acknowledges `offset`.
fn ack(replica: &TcpStream, offset: &str) {
    let mut socket = replica;
    socket
        .write_all(&Conn::encode(&[b"REPLCONF", b"ACK", offset.as_bytes()]))
        .unwrap();
}

/// Plays the target's side of the old primary's link up to its PSYNC, and returns the socket
/// and the PSYNC's arguments.
fn accept_psync(listener: &TcpListener) -> (TcpStream, Vec<String>) {
    let (mut socket, _) = listener.accept().unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut decoder = embedis_protocol::RequestDecoder::new(1 << 20);
    let mut input = bytes::BytesMut::new();
    loop {
        while let Some(args) = decoder.decode(&mut input, true).unwrap() {
            let args: Vec<String> = args
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            match args[0].to_ascii_uppercase().as_str() {
                "PING" => socket.write_all(b"+PONG\r\n").unwrap(),
                "REPLCONF" => socket.write_all(b"+OK\r\n").unwrap(),
                "PSYNC" => return (socket, args),
                other => panic!("unexpected {other} in the handshake"),
            }
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).unwrap();
        assert!(n > 0, "the link closed during the handshake");
        input.extend_from_slice(&chunk[..n]);
    }
}

/// The old primary's side on the wire: writes held while its replica has not acknowledged
/// its offset; then PSYNC with its own ID, its offset + 1 and FAILOVER, blocked clients
/// released and writes refused (`-READONLY`, as Redis checks a replica's writes before the
/// pause) while the target has not answered. A refusal makes it a primary again under a new ID
/// (the old one kept as the previous ID) and runs the held writes; a `+CONTINUE` makes it the
/// target's replica, and the held writes answer `-READONLY`.
#[test]
fn the_old_primary_asks_its_target_with_psync_failover() {
    let a = support::builder().start().unwrap();
    let mut ca = Conn::connect(a.addr()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (replica, _) = attach_fake_replica(a.addr(), port);
    // A write the replica has not acknowledged (at offset 0 it would be caught up at once).
    text(&mut ca, &["SET", "k", "v"]);
    let offset = info(&mut ca, "master_repl_offset");
    let replid = info(&mut ca, "master_replid");
    let mut blocked = Conn::connect(a.addr()).unwrap();
    blocked.send_raw(&Conn::encode(&[b"BLPOP", b"q", b"0"]));
    eventually("BLPOP to block", || {
        field(&text(&mut ca, &["INFO", "clients"]), "blocked_clients") == "1"
    });
    let port_text = port.to_string();
    assert_eq!(
        text(&mut ca, &["FAILOVER", "TO", "127.0.0.1", &port_text]),
        "+OK\r\n"
    );
    let mut writer = Conn::connect(a.addr()).unwrap();
    writer.send_raw(&Conn::encode(&[b"SET", b"k", b"w"]));
    assert_eq!(writer.reply_within(Duration::from_millis(300)), None);
    assert_eq!(failover_state(&mut ca), "waiting-for-sync");
    ack(&replica, &offset);
    let (target, psync) = accept_psync(&listener);
    let from = (offset.parse::<u64>().unwrap() + 1).to_string();
    assert_eq!(psync, ["PSYNC", replid.as_str(), from.as_str(), "FAILOVER"]);
    assert_eq!(failover_state(&mut ca), "failover-in-progress");
    assert!(text(&mut ca, &["ROLE"]).contains("slave"));
    assert_eq!(
        blocked.reply_within(Duration::from_secs(5)).as_deref(),
        Some(&b"-UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)\r\n"[..])
    );
    assert!(text(&mut ca, &["SET", "k", "z"]).starts_with("-READONLY"));
    assert_eq!(writer.reply_within(Duration::from_millis(200)), None);
    // The target refuses: a primary again, under a new ID.
    (&target).write_all(b"-ERR no\r\n").unwrap();
    eventually("the abort", || failover_state(&mut ca) == "no-failover");
    assert!(text(&mut ca, &["ROLE"]).contains("master"));
    assert_eq!(info(&mut ca, "master_replid2"), replid);
    assert_eq!(
        writer.reply_within(Duration::from_secs(5)).as_deref(),
        Some(&b"+OK\r\n"[..])
    );
    drop((target, replica));
    // Again, to any replica, and this time the target takes over.
    let (replica, _) = attach_fake_replica(a.addr(), port);
    text(&mut ca, &["SET", "k", "v"]);
    let offset = info(&mut ca, "master_repl_offset");
    assert_eq!(text(&mut ca, &["FAILOVER"]), "+OK\r\n");
    writer.send_raw(&Conn::encode(&[b"SET", b"k", b"x"]));
    assert_eq!(writer.reply_within(Duration::from_millis(200)), None);
    ack(&replica, &offset);
    let (target, psync) = accept_psync(&listener);
    assert_eq!(psync[3], "FAILOVER");
    let new_id = "f".repeat(40);
    (&target)
        .write_all(format!("+CONTINUE {new_id}\r\n").as_bytes())
        .unwrap();
    eventually("the failover's end", || {
        failover_state(&mut ca) == "no-failover"
    });
    let reply = writer.reply_within(Duration::from_secs(5)).unwrap();
    assert!(reply.starts_with(b"-READONLY"), "{reply:?}");
    assert!(text(&mut ca, &["ROLE"]).contains("slave"));
    assert_eq!(info(&mut ca, "master_port"), port_text);
    eventually("the link", || link_up(&mut ca));
    assert_eq!(info(&mut ca, "master_replid"), new_id);
    drop((target, replica));
}
