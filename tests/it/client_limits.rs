//! Every per-client buffer is bounded as Redis 7.0 bounds it, and each limit is shown here
//! against redis-server where the peer can see it: `client-query-buffer-limit` (the client is
//! closed without a reply, with Redis's log line), `proto-max-bulk-len` set at run time, and
//! `client-output-buffer-limit` for normal clients (a reply over the hard limit closes the
//! client and nothing of it is sent), MONITOR clients (normal too, in Redis 7.0) and replicas
//! (hard limit at once, soft limit after its seconds — on embedis's manual clock). The
//! protocol's own limits (inline and header lines, multibulk and bulk lengths, the stricter
//! limits before AUTH) are compared in `tests/it/protocol_tcp.rs`; the pub/sub class in
//! `tests/it/pubsub.rs`.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};
use support::{show, Conn, RedisServer};

/// Sends `input` and returns everything received until the server closes the connection (or
/// stays quiet for a second), and whether it closed.
fn exchange(stream: &mut TcpStream, input: &[u8]) -> (Vec<u8>, bool) {
    // The server may close while we are still writing: what it sent before is what counts.
    let _ = stream.write_all(input);
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (out, true),
            Err(_) => return (out, false),
        }
    }
}

fn config_set(addr: SocketAddr, name: &str, value: &str) {
    let mut admin = Conn::connect(addr).unwrap();
    assert_eq!(
        show(&admin.command(&["CONFIG", "SET", name, value])),
        "+OK\\r\\n"
    );
}

/// Waits (wall clock, at most 10 s) until `path`'s text contains `needle`; returns the line.
fn log_line(path: &Path, needle: &str) -> String {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains(needle)) {
            return line.to_string();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no line with {needle:?} in {}", path.display());
}

/// An embedis server logging to `log` (warnings), with the given parameters.
fn logging_embedis(log: &Path, params: &[(&str, &str)]) -> embedis::Server {
    let mut builder = support::builder()
        .verbose()
        .config("logfile", log.to_str().unwrap())
        .unwrap()
        .config("loglevel", "warning")
        .unwrap();
    for (name, value) in params {
        builder = builder.config(name, value).unwrap();
    }
    builder.start().unwrap()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("embedis-limits-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A request whose last argument announces 2 MB and sends 1.2 MB of it: over a 1 MB
/// `client-query-buffer-limit` while still incomplete.
fn oversized_request() -> Vec<u8> {
    let mut input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n".to_vec();
    input.extend(std::iter::repeat_n(b'x', 1_200_000));
    input
}

/// What a client over `client-query-buffer-limit` sees, and the log line's fixed parts.
fn query_buffer_transcript(addr: SocketAddr, log: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    let mut conn = TcpStream::connect(addr).unwrap();
    // Set on this connection: CONFIG SET applies to connections already open.
    let (reply, _) = exchange(
        &mut conn,
        b"CONFIG SET client-query-buffer-limit 1mb\r\nPING\r\n",
    );
    lines.push(show(&reply));
    let (reply, closed) = exchange(&mut conn, &oversized_request());
    lines.push(format!("over the limit: {} closed={closed}", show(&reply)));
    let line = log_line(log, "Closing client that reached max query buffer length");
    // The client's description varies (ports, ages); Redis's words around it and the
    // buffer's first 64 bytes do not.
    let (_, after) = line
        .split_once("max query buffer length: id=")
        .unwrap_or_else(|| panic!("no client description in {line:?}"));
    let (_, initial) = after
        .split_once(" (qbuf initial bytes: ")
        .unwrap_or_else(|| panic!("no initial bytes in {line:?}"));
    lines.push(format!("logged initial bytes: {initial}"));
    // The server carries on.
    let mut other = Conn::connect(addr).unwrap();
    lines.push(show(&other.command(&["PING"])));
    lines
}

#[test]
fn query_buffer_limit_closes_the_client_as_redis_does() {
    let test = "query_buffer_limit_closes_the_client_as_redis_does";
    let dir = scratch("qbuf");
    let redis_log = dir.join("redis.log");
    let ours_log = dir.join("embedis.log");
    let Some(redis) = RedisServer::start(test, &["--logfile", redis_log.to_str().unwrap()]) else {
        return;
    };
    let ours = logging_embedis(&ours_log, &[]);
    let theirs = query_buffer_transcript(redis.addr(), &redis_log);
    let mine = query_buffer_transcript(ours.addr(), &ours_log);
    assert!(theirs[1].ends_with("closed=true"), "{theirs:#?}");
    assert_eq!(mine, theirs);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn proto_max_bulk_len_set_at_run_time_applies_as_in_redis() {
    let test = "proto_max_bulk_len_set_at_run_time_applies_as_in_redis";
    let Some(redis) = RedisServer::start(test, &[]) else {
        return;
    };
    let ours = support::builder().start().unwrap();
    let transcript = |addr: SocketAddr| {
        let mut lines = Vec::new();
        let mut conn = TcpStream::connect(addr).unwrap();
        let (reply, _) = exchange(&mut conn, b"CONFIG SET proto-max-bulk-len 1mb\r\n");
        lines.push(show(&reply));
        // Exactly the limit is accepted (and waits for its bytes)…
        let mut at_limit = TcpStream::connect(addr).unwrap();
        let (reply, closed) = exchange(&mut at_limit, b"*2\r\n$4\r\nECHO\r\n$1048576\r\nab");
        lines.push(format!("{} closed={closed}", show(&reply)));
        // …one byte more is a protocol error, the connection closed — on the connection
        // that changed the limit too, which was open before.
        let (reply, closed) = exchange(&mut conn, b"*2\r\n$4\r\nECHO\r\n$1048577\r\n");
        lines.push(format!("{} closed={closed}", show(&reply)));
        lines
    };
    let theirs = transcript(redis.addr());
    assert!(
        theirs[2].starts_with("-ERR Protocol error: invalid bulk length"),
        "{theirs:#?}"
    );
    assert_eq!(transcript(ours.addr()), theirs);
}

/// A 2 MB value, read back by a client whose normal-class hard limit is 1 MB.
fn normal_class_transcript(addr: SocketAddr) -> Vec<String> {
    config_set(addr, "client-output-buffer-limit", "normal 1mb 0 0");
    let mut lines = Vec::new();
    let mut conn = Conn::connect(addr).unwrap();
    let big = "x".repeat(2_000_000);
    lines.push(show(&conn.command(&["SET", "big", &big])));
    lines.push(show(&conn.command(&["SET", "small", &"y".repeat(10_000)])));
    // Under Redis's 16 KB reply buffer: never counted.
    lines.push(format!(
        "small reply: {} bytes",
        conn.command(&["GET", "small"]).len()
    ));
    let mut raw = TcpStream::connect(addr).unwrap();
    let (reply, closed) = exchange(&mut raw, b"GET big\r\n");
    lines.push(format!(
        "over the hard limit: {} bytes, closed={closed}",
        reply.len()
    ));
    lines
}

#[test]
fn a_normal_client_over_its_output_limit_is_closed_as_in_redis() {
    let test = "a_normal_client_over_its_output_limit_is_closed_as_in_redis";
    let dir = scratch("normal");
    let redis_log = dir.join("redis.log");
    let ours_log = dir.join("embedis.log");
    let Some(redis) = RedisServer::start(test, &["--logfile", redis_log.to_str().unwrap()]) else {
        return;
    };
    let ours = logging_embedis(&ours_log, &[]);
    let theirs = normal_class_transcript(redis.addr());
    assert_eq!(theirs[3], "over the hard limit: 0 bytes, closed=true");
    assert_eq!(normal_class_transcript(ours.addr()), theirs);
    for log in [&redis_log, &ours_log] {
        let line = log_line(log, "for overcoming of output buffer limits.");
        assert!(
            line.contains(" scheduled to be closed ASAP for overcoming of output buffer limits."),
            "{line}"
        );
        assert!(line.contains("cmd=get"), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether a MONITOR client that stops reading is still connected after a burst of commands,
/// under limits for `class` only.
fn monitor_survives(addr: SocketAddr, limits: &str) -> bool {
    config_set(addr, "client-output-buffer-limit", limits);
    let mut monitor = Conn::connect(addr).unwrap();
    assert_eq!(show(&monitor.command(&["MONITOR"])), "+OK\\r\\n");
    let mut writer = Conn::connect(addr).unwrap();
    let value = "v".repeat(64 * 1024);
    // Far more than the socket buffers hold: the monitor's lines pile up in the server.
    for i in 0..400 {
        writer.command(&["SET", &format!("k{i}"), &value]);
    }
    let list = String::from_utf8(writer.command(&["CLIENT", "LIST"])).unwrap();
    let alive = list.contains("cmd=monitor");
    drop(monitor);
    alive
}

#[test]
fn monitor_clients_have_normal_output_limits_as_in_redis() {
    let test = "monitor_clients_have_normal_output_limits_as_in_redis";
    let Some(redis) = RedisServer::start(test, &[]) else {
        return;
    };
    let ours = support::builder().start().unwrap();
    for limits in ["normal 1mb 0 0", "normal 0 0 0 replica 1mb 0 0"] {
        let theirs = monitor_survives(redis.addr(), limits);
        let mine = monitor_survives(ours.addr(), limits);
        assert_eq!(mine, theirs, "limits {limits:?}");
    }
    // Redis 7.0 classes MONITOR clients as normal: the normal limit closes them, the
    // replica limit does not.
    assert!(!monitor_survives(ours.addr(), "normal 1mb 0 0"));
    assert!(monitor_survives(
        ours.addr(),
        "normal 0 0 0 replica 1mb 0 0"
    ));
}

/// A replica made by hand: SYNC, then the image read whole, then it stops reading.
fn stalled_replica(addr: SocketAddr) -> TcpStream {
    let mut replica = TcpStream::connect(addr).unwrap();
    replica
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    replica.write_all(b"SYNC\r\n").unwrap();
    let mut byte = [0u8; 1];
    // Newlines keep the link alive while the primary prepares the image.
    let mut header = Vec::new();
    loop {
        replica.read_exact(&mut byte).unwrap();
        if header.is_empty() && byte[0] == b'\n' {
            continue;
        }
        header.push(byte[0]);
        if header.ends_with(b"\r\n") {
            break;
        }
    }
    let len: usize = std::str::from_utf8(&header[1..header.len() - 2])
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("not an image header: {}", show(&header)));
    let mut image = vec![0u8; len];
    replica.read_exact(&mut image).unwrap();
    assert!(image.starts_with(b"REDIS"));
    replica
}

fn connected_replicas(addr: SocketAddr) -> String {
    let mut conn = Conn::connect(addr).unwrap();
    let info = String::from_utf8(conn.command(&["INFO", "replication"])).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("connected_slaves:"))
        .unwrap()
        .to_string()
}

/// Writes 64 KB values until the stalled replica is dropped (or 40 MB were written).
fn write_until_replica_dropped(addr: SocketAddr) -> bool {
    let mut writer = Conn::connect(addr).unwrap();
    let value = "r".repeat(64 * 1024);
    for i in 0..640 {
        writer.command(&["SET", &format!("k{i}"), &value]);
        if i % 32 == 31 && connected_replicas(addr) == "0" {
            return true;
        }
    }
    connected_replicas(addr) == "0"
}

#[test]
fn a_replica_over_its_hard_limit_is_dropped_as_in_redis() {
    let test = "a_replica_over_its_hard_limit_is_dropped_as_in_redis";
    let dir = scratch("replica");
    let redis_log = dir.join("redis.log");
    let ours_log = dir.join("embedis.log");
    let Some(redis) = RedisServer::start(
        test,
        &[
            "--logfile",
            redis_log.to_str().unwrap(),
            "--repl-diskless-sync",
            "no",
            "--client-output-buffer-limit",
            "replica 1mb 0 0",
        ],
    ) else {
        return;
    };
    let ours = logging_embedis(
        &ours_log,
        &[
            ("repl-diskless-sync", "no"),
            ("client-output-buffer-limit", "replica 1mb 0 0"),
        ],
    );
    for (name, addr, log) in [
        ("redis-server", redis.addr(), &redis_log),
        ("embedis", ours.addr(), &ours_log),
    ] {
        let _replica = stalled_replica(addr);
        assert_eq!(connected_replicas(addr), "1", "{name}");
        assert!(
            write_until_replica_dropped(addr),
            "{name}: the stalled replica was never dropped"
        );
        let line = log_line(log, "for overcoming of output buffer limits.");
        assert!(line.contains("flags=S"), "{name}: {line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_replica_over_its_soft_limit_for_too_long_is_dropped() {
    let server = support::builder()
        .clock(embedis::Clock::manual())
        .config("repl-diskless-sync", "no")
        .unwrap()
        // No hard limit; 1 MB for more than 2 seconds.
        .config("client-output-buffer-limit", "replica 0 1mb 2")
        .unwrap()
        .start()
        .unwrap();
    let addr = server.addr();
    let _replica = stalled_replica(addr);
    let mut writer = Conn::connect(addr).unwrap();
    let value = "s".repeat(64 * 1024);
    // Enough to pass the soft limit whatever the socket buffers hold (and stay connected:
    // the soft limit has not lasted yet).
    for i in 0..320 {
        writer.command(&["SET", &format!("k{i}"), &value]);
    }
    assert_eq!(connected_replicas(addr), "1");
    server.clock().advance(Duration::from_millis(2000));
    writer.command(&["SET", "more", "1"]);
    assert_eq!(
        connected_replicas(addr),
        "1",
        "2 seconds is not more than 2"
    );
    server.clock().advance(Duration::from_millis(1500));
    writer.command(&["SET", "more", "2"]);
    assert_eq!(
        connected_replicas(addr),
        "0",
        "over the soft limit for 3.5 s"
    );
}

/// With `io-threads 2` the connections' threads read and parse: they apply the limits the
/// server had when the connection was accepted (they cannot read its configuration after).
#[test]
fn threaded_connections_are_bounded_too() {
    let ours = support::builder()
        .config("io-threads", "2")
        .unwrap()
        .config("client-query-buffer-limit", "1mb")
        .unwrap()
        .config("proto-max-bulk-len", "2mb")
        .unwrap()
        .start()
        .unwrap();
    let mut conn = TcpStream::connect(ours.addr()).unwrap();
    let (reply, closed) = exchange(&mut conn, b"PING\r\n");
    assert_eq!((show(&reply).as_str(), closed), ("+PONG\\r\\n", false));
    // Within proto-max-bulk-len but over the query buffer limit while incomplete.
    let mut input = b"*2\r\n$4\r\nECHO\r\n$2000000\r\n".to_vec();
    input.extend(std::iter::repeat_n(b'x', 1_200_000));
    let (reply, closed) = exchange(&mut conn, &input);
    assert_eq!((reply.len(), closed), (0, true));
    let mut over = TcpStream::connect(ours.addr()).unwrap();
    let (reply, closed) = exchange(&mut over, b"*2\r\n$4\r\nECHO\r\n$2097153\r\n");
    assert_eq!(
        (show(&reply).as_str(), closed),
        ("-ERR Protocol error: invalid bulk length\\r\\n", true)
    );
}
