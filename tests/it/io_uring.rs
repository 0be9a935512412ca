//! `io-uring yes`: clients' socket I/O through io_uring (server/src/net_uring.rs). The same
//! connection code runs as with epoll, so these tests aim at what the ring changes: bytes that
//! take many receives or sends (a value larger than the socket buffers, in both directions), a
//! client whose input is not read while it is blocked (the receive stops over its limit and
//! resumes), closes from either side (the ring frees the connection and the socket closes),
//! many connections at once, and the unix socket. The differential fixtures and the pub/sub
//! transcript also run through the ring (tests/it/differential.rs, tests/it/pubsub.rs).

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::client::Client;
use support::Conn;

fn uring_server() -> embedis::Server {
    let server = support::builder()
        .config("io-uring", "yes")
        .unwrap()
        .start()
        .unwrap();
    assert_uring(&server);
    server
}

/// The tests below must exercise the ring (see [`support::assert_io_uring`]).
fn assert_uring(server: &embedis::Server) {
    support::assert_io_uring(&mut Conn::connect(server.addr()).unwrap());
}

fn connected_clients(c: &mut Conn) -> usize {
    let info = String::from_utf8(c.command(&["INFO", "clients"])).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn wait_for_clients(c: &mut Conn, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = connected_clients(c);
        if now == n {
            return;
        }
        assert!(Instant::now() < deadline, "{now} clients, expected {n}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_value_larger_than_the_socket_buffers_goes_both_ways() {
    let server = uring_server();
    let mut c = Conn::connect(server.addr()).unwrap();
    // 5 MB: many 16 KB receives in, many partial sends out.
    let value: Vec<u8> = (0..5_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    assert_eq!(c.command(&[&b"SET"[..], b"big", &value]), b"+OK\r\n");
    let mut expected = format!("${}\r\n", value.len()).into_bytes();
    expected.extend_from_slice(&value);
    expected.extend_from_slice(b"\r\n");
    assert!(c.command(&["GET", "big"]) == expected, "GET big differs");
    // The reply of a request pipelined behind it arrives after it, whole.
    let mut both = Conn::encode(&[b"GET", b"big"]);
    both.extend_from_slice(&Conn::encode(&[b"STRLEN", b"big"]));
    c.send_raw(&both);
    assert!(c.read_reply().unwrap().0 == expected);
    assert_eq!(c.read_reply().unwrap().0, b":5000000\r\n");
}

#[test]
fn a_long_pipeline_is_answered_in_order() {
    let server = uring_server();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let n = 20_000;
    let mut batch = Vec::new();
    for i in 0..n {
        batch.extend_from_slice(&Conn::encode(&[b"INCR", b"counter"]));
        if i % 1000 == 0 {
            batch.extend_from_slice(&Conn::encode(&[b"ECHO", format!("mark{i}").as_bytes()]));
        }
    }
    let writer = {
        let mut stream = stream.try_clone().unwrap();
        std::thread::spawn(move || stream.write_all(&batch).unwrap())
    };
    let mut expected = Vec::new();
    for i in 0..n {
        expected.extend_from_slice(format!(":{}\r\n", i + 1).as_bytes());
        if i % 1000 == 0 {
            let mark = format!("mark{i}");
            expected.extend_from_slice(format!("${}\r\n{mark}\r\n", mark.len()).as_bytes());
        }
    }
    let mut got = vec![0u8; expected.len()];
    stream.read_exact(&mut got).unwrap();
    writer.join().unwrap();
    assert!(got == expected, "the pipeline's replies differ");
}

#[test]
fn a_blocked_client_s_unread_input_waits_and_is_answered_after() {
    let server = uring_server();
    let mut probe = Conn::connect(server.addr()).unwrap();
    let mut blocked = TcpStream::connect(server.addr()).unwrap();
    blocked
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let before = support::blocked_clients(&mut probe);
    blocked
        .write_all(&Conn::encode(&[b"BLPOP", b"queue", b"0"]))
        .unwrap();
    support::wait_blocked(&mut probe, before + 1);
    // 1 MB of requests behind the blocked one: more than the ring holds for a connection
    // (256 KB), so its receive stops until the client is released and reads again, and the
    // rest waits in the kernel's buffers.
    let echoes = 40_000;
    let mut batch = Vec::new();
    for _ in 0..echoes {
        batch.extend_from_slice(&Conn::encode(&[b"ECHO", b"abcdefghij"]));
    }
    assert!(batch.len() > 1_000_000);
    let writing = {
        let mut out = blocked.try_clone().unwrap();
        std::thread::spawn(move || out.write_all(&batch).unwrap())
    };
    // Not needed for the outcome: gives the input time to pile up before the release.
    std::thread::sleep(Duration::from_millis(200));
    // Other clients are served meanwhile.
    assert_eq!(probe.command(&["PING"]), b"+PONG\r\n");
    assert_eq!(probe.command(&["RPUSH", "queue", "job"]), b":1\r\n");
    let mut expected = b"*2\r\n$5\r\nqueue\r\n$3\r\njob\r\n".to_vec();
    for _ in 0..echoes {
        expected.extend_from_slice(b"$10\r\nabcdefghij\r\n");
    }
    let mut got = vec![0u8; expected.len()];
    blocked.read_exact(&mut got).unwrap();
    writing.join().unwrap();
    assert!(got == expected, "the released client's replies differ");
}

#[test]
fn closes_from_either_side_free_the_connection() {
    let server = uring_server();
    let mut probe = Conn::connect(server.addr()).unwrap();
    // The probe alone (once the close of `uring_server`'s check connection is seen).
    let base = 1;
    wait_for_clients(&mut probe, base);
    // The client closes, with and without a request in flight.
    for i in 0..50 {
        let mut c = Conn::connect(server.addr()).unwrap();
        if i % 2 == 0 {
            assert_eq!(c.command(&["PING"]), b"+PONG\r\n");
        } else {
            c.send_raw(&Conn::encode(&[b"DEBUG", b"SLEEP", b"0"]));
        }
    }
    wait_for_clients(&mut probe, base);
    // The server closes: QUIT's reply comes first, then the end of the stream.
    let mut quitter = Client::connect(server.addr());
    assert_eq!(quitter.raw(&["QUIT"]), b"+OK\r\n");
    quitter.assert_closed();
    // CLIENT KILL of a client that is blocked.
    let mut victim = Client::connect(server.addr());
    let id = victim.id();
    victim.block(&["BLPOP", "nothing", "0"]);
    assert_eq!(
        probe.command(&["CLIENT", "KILL", "ID", &id.to_string()]),
        b":1\r\n"
    );
    victim.assert_closed();
    wait_for_clients(&mut probe, base);
    assert_eq!(probe.command(&["PING"]), b"+PONG\r\n");
}

#[test]
fn many_connections_at_once() {
    let server = uring_server();
    let mut conns: Vec<Conn> = (0..300)
        .map(|_| Conn::connect(server.addr()).unwrap())
        .collect();
    // Every connection sends before any reads: 300 receives complete in the same turns.
    for (i, c) in conns.iter_mut().enumerate() {
        c.send_raw(&Conn::encode(&[b"SET", format!("k{i}").as_bytes(), b"v"]));
        c.send_raw(&Conn::encode(&[b"INCR", b"hits"]));
    }
    let mut counts = Vec::new();
    for c in conns.iter_mut() {
        assert_eq!(c.read_reply().unwrap().0, b"+OK\r\n");
        let raw = c.read_reply().unwrap().0;
        counts.push(String::from_utf8(raw).unwrap());
    }
    counts.sort_by_key(|c| c[1..c.len() - 2].parse::<u32>().unwrap());
    let expected: Vec<String> = (1..=300).map(|i| format!(":{i}\r\n")).collect();
    assert_eq!(counts, expected);
    assert_eq!(conns[0].command(&["DBSIZE"]), b":301\r\n");
}

#[test]
fn pub_sub_messages_reach_ring_clients() {
    let server = uring_server();
    let mut subscriber = Client::connect(server.addr());
    subscriber.send(&["SUBSCRIBE", "news"]);
    assert_eq!(
        subscriber.raw_reply(),
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n".to_vec()
    );
    let mut publisher = Client::connect(server.addr());
    for i in 0..100 {
        assert_eq!(
            publisher.cmd(&["PUBLISH", "news", &format!("m{i}")]),
            ":1\r\n"
        );
    }
    for i in 0..100 {
        let m = format!("m{i}");
        let expected = format!(
            "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n${}\r\n{m}\r\n",
            m.len()
        );
        assert_eq!(subscriber.raw_reply(), expected.into_bytes());
    }
}

#[test]
fn the_unix_socket_goes_through_the_ring_too() {
    let dir = std::env::temp_dir().join(format!("embedis-uring-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.sock");
    let server = support::builder()
        .config("io-uring", "yes")
        .unwrap()
        .config("unixsocket", path.to_str().unwrap())
        .unwrap()
        .start()
        .unwrap();
    assert_uring(&server);
    let mut s = std::os::unix::net::UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nu\r\n$2\r\nok\r\n*2\r\n$3\r\nGET\r\n$1\r\nu\r\n")
        .unwrap();
    let mut got = [0u8; 13];
    s.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"+OK\r\n$2\r\nok\r\n");
    drop(s);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `io-uring` is off by default; CONFIG SET turns it on for the connections accepted after
/// (the ring is set up at the first of them; were io_uring unavailable, the server would turn
/// the option back to `no`), and the connections of before keep working.
#[test]
fn io_uring_is_off_by_default_and_config_set_turns_it_on() {
    let server = support::builder().start().unwrap();
    let mut before = Conn::connect(server.addr()).unwrap();
    assert_eq!(
        before.command(&["CONFIG", "GET", "io-uring"]),
        b"*2\r\n$8\r\nio-uring\r\n$2\r\nno\r\n"
    );
    assert_eq!(
        before.command(&["CONFIG", "SET", "io-uring", "yes"]),
        b"+OK\r\n"
    );
    let mut after = Conn::connect(server.addr()).unwrap();
    assert_eq!(after.command(&["SET", "k", "v"]), b"+OK\r\n");
    assert_eq!(before.command(&["GET", "k"]), b"$1\r\nv\r\n");
    assert_uring(&server);
    assert_eq!(
        after.command(&["CONFIG", "SET", "io-uring", "no"]),
        b"+OK\r\n"
    );
    let mut third = Conn::connect(server.addr()).unwrap();
    assert_eq!(third.command(&["GET", "k"]), b"$1\r\nv\r\n");
    assert_eq!(after.command(&["GET", "k"]), b"$1\r\nv\r\n");
}
