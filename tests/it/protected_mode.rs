//! Protected mode and the "local only" settings, against redis-server 7.0 byte for byte.
//!
//! Redis counts a client as local when it comes over a Unix socket or from exactly 127.0.0.1 or
//! ::1. With `protected-mode yes` and no password for the default user, any other client gets
//! Redis's `-DENIED …` line and the connection is closed; `enable-debug-command local` and
//! `enable-protected-configs local` refuse such clients DEBUG and CONFIG SET of `dir`.
//!
//! Two non-local peers are used: the machine's own non-loopback address (from `hostname -I`,
//! the server listening on 0.0.0.0), and 127.0.0.2 as the source of a connection to 127.0.0.1 —
//! inside the loopback network, yet not local to Redis, and available on any Linux machine. A
//! machine without a non-loopback address skips the first, loudly.

use crate::support;
use support::info_field;

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::FromRawFd;
use std::time::Duration;
use support::{show, Conn, RedisServer};

/// Redis 7.0.15's refusal, as networking.c writes it.
const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// This machine's first IPv4 address outside 127.0.0.0/8, from `hostname -I`.
fn non_loopback_address() -> Option<Ipv4Addr> {
    let out = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|word| word.parse::<Ipv4Addr>().ok())
        .find(|ip| !ip.is_loopback())
}

/// A TCP connection to `to` whose local (source) address is `from`.
fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let SocketAddr::V4(to) = to else {
        panic!("IPv4 only")
    };
    let sockaddr = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor this function owns until it hands it to
    // TcpStream, which then owns it; the addresses outlive the calls.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let local = sockaddr(from, 0);
        let bound = libc::bind(fd, &local as *const _ as *const libc::sockaddr, len);
        assert_eq!(bound, 0, "bind {from}: {}", std::io::Error::last_os_error());
        let remote = sockaddr(*to.ip(), to.port());
        let connected = libc::connect(fd, &remote as *const _ as *const libc::sockaddr, len);
        assert_eq!(
            connected,
            0,
            "connect {to}: {}",
            std::io::Error::last_os_error()
        );
        TcpStream::from_raw_fd(fd)
    }
}

/// Sends PING and returns everything received until the server closes or stays quiet, and
/// whether it closed.
fn ping(mut stream: TcpStream) -> (Vec<u8>, bool) {
    stream.write_all(b"PING\r\n").unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (out, true),
            Err(_) => return (out, false),
        }
    }
}

/// The peers to try as non-local: 127.0.0.2 always, the machine's address when it has one.
fn non_local_peers(port: u16, test: &str) -> Vec<(String, TcpStream)> {
    let here = SocketAddr::from(([127, 0, 0, 1], port));
    let mut peers = vec![(
        "127.0.0.2".to_string(),
        connect_from(Ipv4Addr::new(127, 0, 0, 2), here),
    )];
    match non_loopback_address() {
        Some(ip) => {
            let there = SocketAddr::from((IpAddr::V4(ip), port));
            peers.push((ip.to_string(), TcpStream::connect(there).unwrap()));
        }
        None => eprintln!(
            "\n!!!!! PARTLY SKIPPED {test}: this machine has no non-loopback IPv4 address (hostname -I); only 127.0.0.2 was tried as a non-local peer !!!!!\n"
        ),
    }
    peers
}

/// What one server answers through the protected-mode scenario, as text lines to compare.
fn protected_mode_transcript(port: u16, test: &str) -> Vec<String> {
    let local = SocketAddr::from(([127, 0, 0, 1], port));
    let mut admin = Conn::connect(local).unwrap();
    let mut lines = vec![format!("local PING: {}", show(&admin.command(&["PING"])))];
    let rejected_before: u64 = info_field(&mut admin, "stats", "rejected_connections")
        .unwrap()
        .parse()
        .unwrap();
    let id_before: i64 = String::from_utf8(admin.command(&["CLIENT", "ID"]))
        .unwrap()
        .trim_start_matches(':')
        .trim()
        .parse()
        .unwrap();
    let peers = non_local_peers(port, test);
    let refused = peers.len() as u64;
    for (name, stream) in peers {
        let (reply, closed) = ping(stream);
        lines.push(format!(
            "non-local ({name}) PING: {} closed={closed}",
            show(&reply)
        ));
    }
    let rejected_after: u64 = info_field(&mut admin, "stats", "rejected_connections")
        .unwrap()
        .parse()
        .unwrap();
    lines.push(format!(
        "rejected_connections grew by {}",
        rejected_after - rejected_before
    ));
    assert_eq!(rejected_after - rejected_before, refused);
    // A refused connection was a client for a moment: it used up an ID.
    let mut next = Conn::connect(local).unwrap();
    let id_after: i64 = String::from_utf8(next.command(&["CLIENT", "ID"]))
        .unwrap()
        .trim_start_matches(':')
        .trim()
        .parse()
        .unwrap();
    lines.push(format!("client ids used: {}", id_after - id_before));

    // A password lets non-local clients in (to authenticate).
    lines.push(show(&admin.command(&[
        "CONFIG",
        "SET",
        "requirepass",
        "pw",
    ])));
    for (name, stream) in non_local_peers(port, test) {
        let (reply, closed) = ping(stream);
        lines.push(format!(
            "with a password, non-local ({name}) PING: {} closed={closed}",
            show(&reply)
        ));
    }
    lines.push(show(&admin.command(&["AUTH", "pw"])));
    lines.push(show(&admin.command(&["CONFIG", "SET", "requirepass", ""])));
    // So does turning protected mode off.
    lines.push(show(&admin.command(&[
        "CONFIG",
        "SET",
        "protected-mode",
        "no",
    ])));
    for (name, stream) in non_local_peers(port, test) {
        let (reply, closed) = ping(stream);
        lines.push(format!(
            "unprotected, non-local ({name}) PING: {} closed={closed}",
            show(&reply)
        ));
    }
    lines
}

#[test]
fn non_local_clients_are_refused_as_redis_refuses_them() {
    let test = "non_local_clients_are_refused_as_redis_refuses_them";
    let Some(redis) = RedisServer::start(test, &["--bind", "0.0.0.0", "--protected-mode", "yes"])
    else {
        return;
    };
    let ours = support::builder()
        .config("bind", "0.0.0.0")
        .unwrap()
        .config("protected-mode", "yes")
        .unwrap()
        .start()
        .unwrap();
    let theirs = protected_mode_transcript(redis.addr().port(), test);
    let mine = protected_mode_transcript(ours.addr().port(), test);
    // The refusal itself, spelled out, so that the test says what it checks.
    assert!(
        theirs[1].contains(&show(DENIED.as_bytes())),
        "redis-server: {theirs:#?}"
    );
    assert_eq!(mine, theirs);
}

#[test]
fn unix_socket_clients_are_local() {
    let test = "unix_socket_clients_are_local";
    let dir = std::env::temp_dir().join(format!("embedis-protected-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ours_path = dir.join("embedis.sock");
    let redis_path = dir.join("redis.sock");
    let Some(_redis) = RedisServer::start(
        test,
        &[
            "--bind",
            "0.0.0.0",
            "--unixsocket",
            redis_path.to_str().unwrap(),
        ],
    ) else {
        return;
    };
    let _ours = support::builder()
        .config("bind", "0.0.0.0")
        .unwrap()
        .config("unixsocket", ours_path.to_str().unwrap())
        .unwrap()
        .start()
        .unwrap();
    for path in [&redis_path, &ours_path] {
        let mut unix = std::os::unix::net::UnixStream::connect(path).unwrap();
        unix.write_all(b"PING\r\n").unwrap();
        let mut reply = [0u8; 7];
        unix.read_exact(&mut reply).unwrap();
        assert_eq!(&reply, b"+PONG\r\n", "{}", path.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `enable-debug-command local`, `enable-protected-configs local`, and MODULE LOAD (always
/// refused, counted as a rejected call), from a local and a non-local client.
fn local_only_transcript(port: u16, dir: &str) -> Vec<String> {
    let local = SocketAddr::from(([127, 0, 0, 1], port));
    let mut admin = Conn::connect(local).unwrap();
    let mut lines = Vec::new();
    let remote = connect_from(Ipv4Addr::new(127, 0, 0, 2), local);
    remote
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut remote = RemoteConn(remote);
    for (who, reply) in [
        ("local", admin.command(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"])),
        (
            "non-local",
            remote.command(b"DEBUG SET-ACTIVE-EXPIRE 1\r\n"),
        ),
        ("local", admin.command(&["CONFIG", "SET", "dir", dir])),
        (
            "non-local",
            remote.command(format!("CONFIG SET dir {dir}\r\n").as_bytes()),
        ),
        (
            "local",
            admin.command(&["MODULE", "LOAD", "/nonexistent.so"]),
        ),
        ("local", admin.command(&["MODULE", "LIST"])),
    ] {
        lines.push(format!("{who}: {}", show(&reply)));
    }
    let stats = String::from_utf8(admin.command(&["INFO", "commandstats"])).unwrap();
    let load = stats
        .lines()
        .find(|l| l.starts_with("cmdstat_module|load:"))
        .unwrap_or("no cmdstat_module|load")
        .to_string();
    // Only the counters: the time fields are 0 for a rejected call anyway.
    lines.push(load);
    lines
}

/// A raw connection that reads one line-terminated reply (enough for the simple replies here).
struct RemoteConn(TcpStream);

impl RemoteConn {
    fn command(&mut self, inline: &[u8]) -> Vec<u8> {
        self.0.write_all(inline).unwrap();
        let mut out = Vec::new();
        let mut byte = [0u8; 1];
        while !out.ends_with(b"\r\n") {
            match self.0.read(&mut byte) {
                Ok(1) => out.push(byte[0]),
                _ => break,
            }
        }
        out
    }
}

#[test]
fn local_only_settings_refuse_non_local_clients_as_redis_does() {
    let test = "local_only_settings_refuse_non_local_clients_as_redis_does";
    let Some(redis) = RedisServer::start(
        test,
        &[
            "--protected-mode",
            "no",
            "--enable-debug-command",
            "local",
            "--enable-protected-configs",
            "local",
        ],
    ) else {
        return;
    };
    let ours = support::builder()
        .config("protected-mode", "no")
        .unwrap()
        .config("enable-debug-command", "local")
        .unwrap()
        .config("enable-protected-configs", "local")
        .unwrap()
        .start()
        .unwrap();
    let dir = std::env::temp_dir();
    let dir = dir.to_str().unwrap();
    let theirs = local_only_transcript(redis.addr().port(), dir);
    let mine = local_only_transcript(ours.addr().port(), dir);
    assert!(
        theirs[1].contains("DEBUG command not allowed"),
        "{theirs:#?}"
    );
    assert_eq!(mine, theirs);
}
