//! TLS against real clients and a real redis-server: redis-cli `--tls` (PING, SET/GET), the
//! `tls-auth-clients` modes deciding who gets in — side by side with redis-server 7.0 given the
//! same certificates —, CONFIG GET / SET of the `tls-*` parameters as Redis answers them,
//! certificates reloaded and the TLS port moved by CONFIG SET, a TLS-only server (`port 0`),
//! redis-py over SSL, and replication over TLS in both directions between embedis and
//! redis-server, `tls-cluster`, and the cases of Redis's own tests/unit/tls.tcl (ported below:
//! its external mode skips them). (tests/it/differential.rs runs every fixture over TLS too.)
//!
//! Needs redis-server and redis-cli (Debian's build speaks TLS), and for the Python test
//! redis-py: each skipped loudly without them, unless EMBEDIS_REQUIRE_REDIS=1.

use crate::support;
use support::info_field;

use embedis::TestCerts;
use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use support::{eventually, find_binary, free_port, Conn, RedisServer};

fn path(p: std::path::PathBuf) -> String {
    p.display().to_string()
}

/// redis-server's arguments for a TLS port serving `certs` (the plain port stays, for the
/// harness's readiness probe).
fn redis_tls_args(certs: &TestCerts, tls_port: u16, more: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--tls-port".to_string(),
        tls_port.to_string(),
        "--tls-cert-file".into(),
        path(certs.server_cert_path()),
        "--tls-key-file".into(),
        path(certs.server_key_path()),
        "--tls-ca-cert-file".into(),
        path(certs.ca_cert_path()),
    ];
    args.extend(more.iter().map(|s| s.to_string()));
    args
}

fn start_redis_tls(test: &str, certs: &TestCerts, more: &[&str]) -> Option<(RedisServer, u16)> {
    // The TLS port is picked like the plain one; a clash makes redis-server exit, and the
    // harness then tries again with new ports — but only the plain one is new, so pick again.
    for _ in 0..5 {
        let tls_port = free_port();
        let args = redis_tls_args(certs, tls_port, more);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let redis = RedisServer::start(test, &args)?;
        if Conn::connect(SocketAddr::from(([127, 0, 0, 1], tls_port))).is_ok() {
            return Some((redis, tls_port));
        }
    }
    panic!("{test}: redis-server did not listen on its TLS port");
}

/// What redis-cli printed for one command over TLS: its output, or the error it reported.
fn cli(port: u16, tls: &[String], command: &[&str]) -> Result<String, String> {
    let cli = find_binary("redis-cli", "tls").expect("redis-cli");
    let output = Command::new(cli)
        .args(["-p", &port.to_string(), "--tls"])
        .args(tls)
        .args(command)
        .output()
        .expect("run redis-cli");
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    // redis-cli reports a refused handshake or a closed connection on stderr (or as an
    // "Error:" line), and exits non-zero.
    if output.status.success() && !stdout.starts_with("Error") && stderr.is_empty() {
        Ok(stdout)
    } else {
        Err(format!("{stdout} {stderr}"))
    }
}

/// redis-cli's TLS arguments: the CA, and a client certificate if given.
fn cli_tls(certs: &TestCerts, client: Option<&TestCerts>) -> Vec<String> {
    let mut args = vec!["--cacert".to_string(), path(certs.ca_cert_path())];
    if let Some(client) = client {
        args.extend([
            "--cert".to_string(),
            path(client.client_cert_path()),
            "--key".to_string(),
            path(client.client_key_path()),
        ]);
    }
    args
}

#[test]
fn redis_cli_over_tls_runs_commands() {
    if find_binary("redis-cli", "tls redis-cli").is_none() {
        return;
    }
    let server = support::builder().tls_test_certs().start().unwrap();
    let certs = server.tls_certs().unwrap().clone();
    let port = server.tls_addr().unwrap().port();
    let tls = cli_tls(&certs, Some(&certs));
    assert_eq!(cli(port, &tls, &["PING"]).unwrap(), "PONG");
    assert_eq!(
        cli(port, &tls, &["SET", "greeting", "hello"]).unwrap(),
        "OK"
    );
    assert_eq!(cli(port, &tls, &["GET", "greeting"]).unwrap(), "hello");
    // The plain port serves the same data.
    let mut plain = Conn::connect(server.addr()).unwrap();
    assert_eq!(plain.command(&["GET", "greeting"]), b"$5\r\nhello\r\n");
}

/// Who gets in under each `tls-auth-clients` value, for embedis and redis-server given the same
/// certificates: no certificate, ours, or one from another CA.
#[test]
fn tls_auth_clients_decides_like_redis() {
    if find_binary("redis-cli", "tls auth-clients").is_none() {
        return;
    }
    let certs = Arc::new(TestCerts::generate().unwrap());
    let stranger = TestCerts::generate().unwrap();
    let Some((redis, redis_port)) = start_redis_tls("tls auth-clients", &certs, &[]) else {
        return;
    };
    let ours = support::builder().tls_certs(certs.clone()).start().unwrap();
    let our_port = ours.tls_addr().unwrap().port();
    let mut seen = Vec::new();
    for mode in ["yes", "optional", "no"] {
        for conn in [
            &mut Conn::connect(redis.addr()).unwrap(),
            &mut Conn::connect(ours.addr()).unwrap(),
        ] {
            assert_eq!(
                conn.command(&["CONFIG", "SET", "tls-auth-clients", mode]),
                b"+OK\r\n"
            );
        }
        for (label, client) in [
            ("no certificate", None),
            ("the CA's", Some(&*certs)),
            ("another CA's", Some(&stranger)),
        ] {
            let tls = cli_tls(&certs, client);
            let theirs = cli(redis_port, &tls, &["PING"]).is_ok();
            let mine = cli(our_port, &tls, &["PING"]).is_ok();
            assert_eq!(
                mine, theirs,
                "tls-auth-clients {mode}, {label}: redis-server let in: {theirs}"
            );
            seen.push((mode, label, mine));
        }
    }
    // And what Redis does, spelled out (so that the comparison cannot pass by both failing).
    let expected = [
        ("yes", "no certificate", false),
        ("yes", "the CA's", true),
        ("yes", "another CA's", false),
        ("optional", "no certificate", true),
        ("optional", "the CA's", true),
        ("optional", "another CA's", false),
        ("no", "no certificate", true),
        ("no", "the CA's", true),
        ("no", "another CA's", true),
    ];
    assert_eq!(seen, expected);
}

/// CONFIG GET tls-* and CONFIG SET's answers, byte for byte against redis-server with the same
/// files.
#[test]
fn tls_parameters_answer_as_redis() {
    let certs = TestCerts::generate().unwrap();
    let Some((redis, redis_tls)) = start_redis_tls("tls config", &certs, &[]) else {
        return;
    };
    let ours = support::builder()
        .tls_certs(Arc::new(TestCerts::generate().unwrap()))
        .start()
        .unwrap();
    let mut theirs = Conn::connect(redis.addr()).unwrap();
    let mut mine = Conn::connect(ours.addr()).unwrap();
    // The same files on both sides.
    let files = [
        ("tls-cert-file", path(certs.server_cert_path())),
        ("tls-key-file", path(certs.server_key_path())),
        ("tls-ca-cert-file", path(certs.ca_cert_path())),
    ];
    // In one CONFIG SET: a certificate alone does not match the old key.
    let mut set = vec!["CONFIG".to_string(), "SET".to_string()];
    for (name, value) in &files {
        set.extend([name.to_string(), value.clone()]);
    }
    assert_eq!(mine.command(&set), b"+OK\r\n");
    let our_tls = ours.tls_addr().unwrap().port().to_string();
    let sorted_pairs = |conn: &mut Conn, port: &str| {
        let raw = String::from_utf8_lossy(&conn.command(&["CONFIG", "GET", "*tls*"])).into_owned();
        let lines: Vec<&str> = raw.split("\r\n").collect();
        let mut pairs: Vec<(String, String)> = lines[1..lines.len() - 1]
            .chunks(4)
            .map(|c| (c[1].to_string(), c[3].replace(port, "PORT")))
            .collect();
        pairs.sort();
        pairs
    };
    let expected = sorted_pairs(&mut theirs, &redis_tls.to_string());
    assert_eq!(expected.len(), 21, "{expected:?}");
    assert_eq!(sorted_pairs(&mut mine, &our_tls), expected);

    let sets: &[&[&str]] = &[
        &["tls-cert-file", "/nonexistent/cert.pem"],
        &["tls-key-file", "/nonexistent/key.pem"],
        &["tls-ca-cert-file", "/nonexistent/ca.pem"],
        &["tls-auth-clients", "maybe"],
        &["tls-protocols", "SSLv3"],
        &["tls-ciphersuites", "nonsense"],
        &["tls-session-cache-size", "-1"],
        &["tls-port", "99999"],
        &["tls-replication", "perhaps"],
        &["tls-protocols", "TLSv1.2 TLSv1.3"],
        &["tls-protocols", ""],
        &["tls-ciphersuites", "TLS_AES_256_GCM_SHA384"],
        &["tls-ciphersuites", ""],
        &["tls-prefer-server-ciphers", "yes"],
        &["tls-session-caching", "no"],
        &["tls-dh-params-file", ""],
        &["cluster-announce-tls-port", "7000"],
    ];
    for set in sets {
        let mut command = vec!["CONFIG", "SET"];
        command.extend_from_slice(set);
        let expected = theirs.command(&command);
        assert_eq!(
            String::from_utf8_lossy(&mine.command(&command)),
            String::from_utf8_lossy(&expected),
            "CONFIG SET {set:?}"
        );
    }
    // Whatever failed changed nothing: both still serve TLS with the files above.
    let client = Arc::new(certs.client_config());
    for port in [redis_tls, ours.tls_addr().unwrap().port()] {
        let mut conn =
            Conn::connect_tls(SocketAddr::from(([127, 0, 0, 1], port)), client.clone()).unwrap();
        assert_eq!(conn.command(&["PING"]), b"+PONG\r\n");
    }
}

/// Connects over TLS with `client` and PINGs; false if the handshake or the PING failed.
fn pings(addr: SocketAddr, client: &Arc<rustls::ClientConfig>) -> bool {
    let Ok(mut conn) = Conn::connect_tls(addr, client.clone()) else {
        return false;
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.command(&["PING"])));
    matches!(result, Ok(reply) if reply == b"+PONG\r\n")
}

#[test]
fn config_set_reloads_certificates_and_moves_the_port() {
    let server = support::builder().tls_test_certs().start().unwrap();
    let first = Arc::new(server.tls_certs().unwrap().client_config());
    let addr = server.tls_addr().unwrap();
    assert!(pings(addr, &first));
    let mut admin = Conn::connect(server.addr()).unwrap();

    // New certificates from another CA: new connections get them, and a connection open
    // since before keeps working.
    let mut open = Conn::connect_tls(addr, first.clone()).unwrap();
    let next = TestCerts::generate().unwrap();
    let second = Arc::new(next.client_config());
    assert!(!pings(addr, &second), "the new CA is not trusted yet");
    let reply = admin.command(&[
        "CONFIG",
        "SET",
        "tls-cert-file",
        &path(next.server_cert_path()),
        "tls-key-file",
        &path(next.server_key_path()),
        "tls-ca-cert-file",
        &path(next.ca_cert_path()),
    ]);
    assert_eq!(reply, b"+OK\r\n");
    assert!(pings(addr, &second));
    assert!(!pings(addr, &first));
    assert_eq!(open.command(&["PING"]), b"+PONG\r\n");

    // Rewriting the files in place and setting the same names reloads them (Redis's
    // certificate rotation).
    let third = TestCerts::generate().unwrap();
    for (from, to) in [
        (third.server_cert_path(), next.server_cert_path()),
        (third.server_key_path(), next.server_key_path()),
        (third.ca_cert_path(), next.ca_cert_path()),
    ] {
        std::fs::copy(from, to).unwrap();
    }
    let rotated = Arc::new(third.client_config());
    assert!(!pings(addr, &rotated), "not reloaded before CONFIG SET");
    let reply = admin.command(&[
        "CONFIG",
        "SET",
        "tls-cert-file",
        &path(next.server_cert_path()),
    ]);
    assert_eq!(reply, b"+OK\r\n");
    assert!(pings(addr, &rotated));

    // A file that does not load: the command fails and the old context stays.
    let reply = admin.command(&["CONFIG", "SET", "tls-key-file", "/nonexistent"]);
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "-ERR CONFIG SET failed (possibly related to argument 'tls-key-file') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    assert!(pings(addr, &rotated));

    // The TLS port moves; 0 closes it.
    let new_port = free_port();
    let reply = admin.command(&["CONFIG", "SET", "tls-port", &new_port.to_string()]);
    assert_eq!(reply, b"+OK\r\n");
    let moved = SocketAddr::from(([127, 0, 0, 1], new_port));
    eventually("the new TLS port serves", || pings(moved, &rotated));
    eventually("the old TLS port is closed", || {
        std::net::TcpStream::connect(addr).is_err()
    });
    assert_eq!(
        admin.command(&["CONFIG", "GET", "tls-port"]),
        format!(
            "*2\r\n$8\r\ntls-port\r\n${}\r\n{new_port}\r\n",
            new_port.to_string().len()
        )
        .into_bytes()
    );
    assert_eq!(
        admin.command(&["CONFIG", "SET", "tls-port", "0"]),
        b"+OK\r\n"
    );
    eventually("the TLS port is closed", || {
        std::net::TcpStream::connect(moved).is_err()
    });
}

/// A server started with TLS off gets a TLS port by CONFIG SET, as Redis builds its context
/// when `tls-port` is first set; without certificates that fails as in Redis.
#[test]
fn config_set_tls_port_turns_tls_on() {
    let certs = TestCerts::generate().unwrap();
    let server = support::builder().start().unwrap();
    let mut admin = Conn::connect(server.addr()).unwrap();
    let port = free_port();
    assert_eq!(
        String::from_utf8_lossy(&admin.command(&["CONFIG", "SET", "tls-port", &port.to_string()])),
        "-ERR CONFIG SET failed (possibly related to argument 'tls-port') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    let reply = admin.command(&[
        "CONFIG",
        "SET",
        "tls-cert-file",
        &path(certs.server_cert_path()),
        "tls-key-file",
        &path(certs.server_key_path()),
        "tls-ca-cert-file",
        &path(certs.ca_cert_path()),
        "tls-port",
        &port.to_string(),
    ]);
    assert_eq!(reply, b"+OK\r\n");
    let client = Arc::new(certs.client_config());
    eventually("the TLS port serves", || {
        pings(SocketAddr::from(([127, 0, 0, 1], port)), &client)
    });
}

#[test]
fn port_zero_serves_tls_only() {
    serves_tls_only(1);
}

/// The threaded I/O mode reads and writes TLS connections on its I/O threads.
#[test]
fn port_zero_serves_tls_only_with_threaded_io() {
    serves_tls_only(2);
}

fn serves_tls_only(io_threads: usize) {
    let server = support::builder()
        .port(0)
        .tls_test_certs()
        .config("io-threads", &io_threads.to_string())
        .unwrap()
        .start()
        .unwrap();
    let client = Arc::new(server.tls_certs().unwrap().client_config());
    let addr = server.tls_addr().unwrap();
    let mut conn = Conn::connect_tls(addr, client).unwrap();
    assert_eq!(conn.command(&["SET", "k", "v"]), b"+OK\r\n");
    assert_eq!(conn.command(&["GET", "k"]), b"$1\r\nv\r\n");
    assert_eq!(
        conn.command(&["CONFIG", "GET", "port"]),
        b"*2\r\n$4\r\nport\r\n$1\r\n0\r\n"
    );
    // A pipeline of large values both ways.
    let value = "x".repeat(100_000);
    let mut pipeline = Vec::new();
    for i in 0..10 {
        pipeline.extend(Conn::encode(&[
            b"SET",
            format!("k{i}").as_bytes(),
            value.as_bytes(),
        ]));
        pipeline.extend(Conn::encode(&[b"GET", format!("k{i}").as_bytes()]));
    }
    conn.send_raw(&pipeline);
    for _ in 0..10 {
        assert_eq!(conn.read_reply().unwrap().0, b"+OK\r\n");
        assert_eq!(conn.read_reply().unwrap().0.len(), 100_000 + 11);
    }
    // Replies that fill the socket while the client does not read: the server's writes stop
    // half-way, and every record must still leave once the client reads again.
    let big = "y".repeat(1 << 20);
    assert_eq!(conn.command(&["SET", "big", &big]), b"+OK\r\n");
    let mut gets = Vec::new();
    for _ in 0..16 {
        gets.extend(Conn::encode(&[b"GET", b"big"]));
    }
    conn.send_raw(&gets);
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..16 {
        assert_eq!(conn.read_reply().unwrap().0.len(), (1 << 20) + 12);
    }
}

/// Server::restart keeps the TLS port (and the certificates) as it keeps the plain one.
#[test]
fn restart_keeps_the_tls_port() {
    let mut server = support::builder().tls_test_certs().start().unwrap();
    let client = Arc::new(server.tls_certs().unwrap().client_config());
    let addr = server.tls_addr().unwrap();
    let mut conn = Conn::connect_tls(addr, client.clone()).unwrap();
    assert_eq!(conn.command(&["SET", "kept", "yes"]), b"+OK\r\n");
    drop(conn);
    server.restart().unwrap();
    assert_eq!(server.tls_addr(), Some(addr));
    let mut conn = Conn::connect_tls(addr, client).unwrap();
    assert_eq!(conn.command(&["GET", "kept"]), b"$3\r\nyes\r\n");
}

#[test]
fn redis_py_connects_over_ssl() {
    let Some(python) = support::python_with(&["redis", "ssl"], "redis-py over SSL") else {
        return;
    };
    let server = support::builder().tls_test_certs().start().unwrap();
    let certs = server.tls_certs().unwrap();
    // With a client certificate: commands and a pipeline; without one: refused under
    // `tls-auth-clients yes`, let in under `optional`.
    let script = r#"
import os, sys, redis
cert = {"ssl_certfile": os.environ["CERT"], "ssl_keyfile": os.environ["KEY"]} if sys.argv[1] == "cert" else {}
r = redis.Redis(host="127.0.0.1", port=int(os.environ["PORT"]), ssl=True,
                ssl_ca_certs=os.environ["CA"], **cert)
try:
    assert r.ping()
except redis.exceptions.ConnectionError as e:
    print("refused")
    sys.exit(0)
r.set("py", "over tls")
assert r.get("py") == b"over tls", r.get("py")
pipe = r.pipeline()
for i in range(1000):
    pipe.incr("counter")
pipe.execute()
print("ok")
"#;
    let run = |mode: &str| {
        let output = Command::new(&python)
            .args(["-c", script, mode])
            .env("PORT", server.tls_addr().unwrap().port().to_string())
            .env("CA", certs.ca_cert_path())
            .env("CERT", certs.client_cert_path())
            .env("KEY", certs.client_key_path())
            .output()
            .expect("run python");
        assert!(
            output.status.success(),
            "redis-py over SSL failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    assert_eq!(run("cert"), "ok");
    assert_eq!(run("none"), "refused");
    let mut plain = Conn::connect(server.addr()).unwrap();
    assert_eq!(
        plain.command(&["CONFIG", "SET", "tls-auth-clients", "optional"]),
        b"+OK\r\n"
    );
    assert_eq!(run("none"), "ok");
    assert_eq!(plain.command(&["GET", "counter"]), b"$4\r\n2000\r\n");
}

#[test]
fn redis_replica_follows_an_embedis_primary_over_tls() {
    let certs = Arc::new(TestCerts::generate().unwrap());
    let primary = support::builder().tls_certs(certs.clone()).start().unwrap();
    let mut on_primary = Conn::connect(primary.addr()).unwrap();
    on_primary.command(&["SET", "before", "sync"]);
    let primary_tls = primary.tls_addr().unwrap().port().to_string();
    let Some((replica, replica_tls)) = start_redis_tls(
        "tls replication (redis replica)",
        &certs,
        &[
            "--tls-replication",
            "yes",
            "--replicaof",
            "127.0.0.1",
            &primary_tls,
        ],
    ) else {
        return;
    };
    let mut on_replica = Conn::connect(replica.addr()).unwrap();
    eventually("the redis replica links over TLS", || {
        info_field(&mut on_replica, "replication", "master_link_status").as_deref() == Some("up")
    });
    on_primary.command(&["SET", "after", "sync"]);
    eventually("the write reaches the replica", || {
        on_replica.command(&["GET", "after"]) == b"$4\r\nsync\r\n"
    });
    assert_eq!(on_replica.command(&["GET", "before"]), b"$4\r\nsync\r\n");
    // The replica announced its TLS port, as Redis does under tls-replication.
    let slave0 = info_field(&mut on_primary, "replication", "slave0").unwrap();
    assert!(
        slave0.contains(&format!("port={replica_tls},")),
        "{slave0} (TLS port {replica_tls})"
    );
}

#[test]
fn embedis_replica_follows_a_redis_primary_over_tls() {
    let certs = Arc::new(TestCerts::generate().unwrap());
    let Some((primary, primary_tls)) =
        start_redis_tls("tls replication (embedis replica)", &certs, &[])
    else {
        return;
    };
    let mut on_primary = Conn::connect(primary.addr()).unwrap();
    on_primary.command(&["SET", "before", "sync"]);
    let replica = support::builder()
        .tls_certs(certs.clone())
        .config("tls-replication", "yes")
        .unwrap()
        .config("replicaof", &format!("127.0.0.1 {primary_tls}"))
        .unwrap()
        .start()
        .unwrap();
    let mut on_replica = Conn::connect(replica.addr()).unwrap();
    eventually("embedis links to redis over TLS", || {
        info_field(&mut on_replica, "replication", "master_link_status").as_deref() == Some("up")
    });
    on_primary.command(&["SET", "after", "sync"]);
    eventually("the write reaches the replica", || {
        on_replica.command(&["GET", "after"]) == b"$4\r\nsync\r\n"
    });
    assert_eq!(on_replica.command(&["GET", "before"]), b"$4\r\nsync\r\n");
    let slave0 = info_field(&mut on_primary, "replication", "slave0").unwrap();
    let replica_tls = replica.tls_addr().unwrap().port();
    assert!(
        slave0.contains(&format!("port={replica_tls},")),
        "{slave0} (TLS port {replica_tls})"
    );
    // A primary whose certificate the CA did not sign is refused: the link stays down.
    let stranger = TestCerts::generate().unwrap();
    let Some((other, other_tls)) = start_redis_tls("tls replication (stranger)", &stranger, &[])
    else {
        return;
    };
    let mut admin = Conn::connect(replica.addr()).unwrap();
    admin.command(&["REPLICAOF", "127.0.0.1", &other_tls.to_string()]);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        info_field(&mut on_replica, "replication", "master_link_status").as_deref(),
        Some("down")
    );
    drop(other);
}

/// `tls-cluster yes`: the nodes' bus links are TLS (the cluster forms only if they are: a
/// plain node cannot talk to them), and CLUSTER SLOTS sends clients to the TLS ports.
#[test]
fn a_cluster_gossips_over_tls_and_announces_tls_ports() {
    let certs = Arc::new(TestCerts::generate().unwrap());
    let cluster = embedis::Cluster::start_with(2, 0, |i, builder| {
        support::with_dir(i, builder)
            .tls_certs(certs.clone())
            .config("tls-cluster", "yes")
            .unwrap()
    })
    .unwrap();
    let client = Arc::new(certs.client_config());
    let tls_ports: Vec<u16> = cluster
        .nodes()
        .iter()
        .map(|n| n.tls_addr().unwrap().port())
        .collect();
    let mut conn = Conn::connect_tls(cluster.node(0).tls_addr().unwrap(), client).unwrap();
    let slots = String::from_utf8_lossy(&conn.command(&["CLUSTER", "SLOTS"])).into_owned();
    for port in &tls_ports {
        assert!(
            slots.contains(&format!(":{port}\r\n")),
            "{slots} (TLS ports {tls_ports:?})"
        );
    }
    // A node that speaks the bus in plain TCP never hears back from them.
    let plain_bus = free_port();
    let plain = support::builder()
        .config("cluster-enabled", "yes")
        .unwrap()
        .config("cluster-port", &plain_bus.to_string())
        .unwrap()
        .start()
        .unwrap();
    let mut admin = Conn::connect(cluster.node(0).addr()).unwrap();
    admin.command(&[
        "CLUSTER",
        "MEET",
        "127.0.0.1",
        &plain.addr().port().to_string(),
        &plain_bus.to_string(),
    ]);
    std::thread::sleep(Duration::from_millis(1000));
    let mut on_plain = Conn::connect(plain.addr()).unwrap();
    let known = String::from_utf8_lossy(&on_plain.command(&["CLUSTER", "NODES"])).into_owned();
    let nodes = known.lines().filter(|l| l.contains('@')).count();
    assert_eq!(nodes, 1, "{known}");
}

// ---- Redis's own tests/unit/tls.tcl, ported (it runs only with `--tls`, against a server it
// starts itself, so its external mode skips it) ----

/// A client configuration trusting `certs`' CA and showing its client certificate, offering
/// only `versions` and, if given, only `suites` in that order.
fn client_with(
    certs: &TestCerts,
    versions: &[&'static rustls::SupportedProtocolVersion],
    suites: &[rustls::CipherSuite],
) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut provider = rustls::crypto::ring::default_provider();
    if !suites.is_empty() {
        provider.cipher_suites = suites
            .iter()
            .map(|want| {
                *provider
                    .cipher_suites
                    .iter()
                    .find(|s| s.suite() == *want)
                    .unwrap()
            })
            .collect();
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(certs.ca_cert_pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let chain = CertificateDer::pem_slice_iter(certs.client_cert_pem().as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(certs.client_key_pem().as_bytes()).unwrap();
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .unwrap(),
    )
}

/// PINGs over TLS with `config`: the cipher suite negotiated if PONG came back, else None.
fn suite_of_ping(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> Option<rustls::CipherSuite> {
    use std::io::{Read, Write};
    let tcp = std::net::TcpStream::connect(addr).ok()?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = rustls::StreamOwned::new(rustls::ClientConnection::new(config, name).ok()?, tcp);
    tls.write_all(b"PING\r\n").ok()?;
    let mut reply = [0u8; 7];
    tls.read_exact(&mut reply).ok()?;
    (&reply == b"+PONG\r\n").then(|| tls.conn.negotiated_cipher_suite().map(|s| s.suite()))?
}

#[test]
fn tls_unit_not_accepting_plain_connections_on_the_tls_port() {
    let server = support::builder().tls_test_certs().start().unwrap();
    let mut plain = Conn::connect(server.tls_addr().unwrap()).unwrap();
    plain.send_raw(b"PING\r\n");
    let answer = plain.read_to_close();
    // Closed without a byte, as Redis's OpenSSL closes it (not a TLS alert record, which
    // Redis's test client reads as a bad reply instead of an I/O error).
    assert!(answer.is_empty(), "{answer:?}");
}

#[test]
fn tls_unit_tls_protocols_and_ciphers() {
    use rustls::version::{TLS12, TLS13};
    use rustls::CipherSuite::{
        TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 as AES128,
        TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 as AES256,
    };
    let server = support::builder().tls_test_certs().start().unwrap();
    let certs = server.tls_certs().unwrap().clone();
    let addr = server.tls_addr().unwrap();
    let mut admin = Conn::connect(server.addr()).unwrap();
    let set = |admin: &mut Conn, name: &str, value: &str| {
        assert_eq!(
            admin.command(&["CONFIG", "SET", name, value]),
            b"+OK\r\n",
            "{name} {value}"
        );
    };

    // tls-protocols: a TLS 1.3-only client is refused once the server speaks only TLS 1.2.
    assert!(suite_of_ping(addr, client_with(&certs, &[&TLS13], &[])).is_some());
    set(&mut admin, "tls-protocols", "TLSv1.2");
    assert!(suite_of_ping(addr, client_with(&certs, &[&TLS13], &[])).is_none());
    assert!(suite_of_ping(addr, client_with(&certs, &[&TLS12], &[])).is_some());

    // tls-ciphers: the suites a TLS 1.2 client may agree on (Redis's test uses CBC suites, which
    // rustls does not have; the same with GCM ones).
    set(
        &mut admin,
        "tls-ciphers",
        "DEFAULT:-ECDHE-ECDSA-AES128-GCM-SHA256",
    );
    set(&mut admin, "tls-ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384");
    assert_eq!(
        suite_of_ping(addr, client_with(&certs, &[&TLS12], &[AES128])),
        None
    );
    assert_eq!(
        suite_of_ping(addr, client_with(&certs, &[&TLS12], &[AES256])),
        Some(AES256)
    );
    set(&mut admin, "tls-ciphers", "DEFAULT");
    assert_eq!(
        suite_of_ping(addr, client_with(&certs, &[&TLS12], &[AES128])),
        Some(AES128)
    );

    // tls-prefer-server-ciphers: whose order picks the suite.
    set(
        &mut admin,
        "tls-ciphers",
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384",
    );
    let client = client_with(&certs, &[&TLS12], &[AES256, AES128]);
    assert_eq!(suite_of_ping(addr, client.clone()), Some(AES256));
    set(&mut admin, "tls-prefer-server-ciphers", "yes");
    assert_eq!(suite_of_ping(addr, client), Some(AES128));
}

#[test]
fn tls_unit_switch_between_tcp_and_tls_ports() {
    let server = support::builder().tls_test_certs().start().unwrap();
    let client = Arc::new(server.tls_certs().unwrap().client_config());
    let port = server.tls_addr().unwrap().port();
    let addr = server.tls_addr().unwrap();
    // TLS → TCP on the same port number…
    let mut conn = Conn::connect_tls(addr, client.clone()).unwrap();
    assert_eq!(
        conn.command(&["CONFIG", "SET", "tls-port", "0"]),
        b"+OK\r\n"
    );
    assert_eq!(
        conn.command(&["CONFIG", "SET", "port", &port.to_string()]),
        b"+OK\r\n"
    );
    drop(conn);
    let mut conn = Conn::connect(addr).unwrap();
    assert_eq!(conn.command(&["PING"]), b"+PONG\r\n");
    // … and back.
    assert_eq!(conn.command(&["CONFIG", "SET", "port", "0"]), b"+OK\r\n");
    assert_eq!(
        conn.command(&["CONFIG", "SET", "tls-port", &port.to_string()]),
        b"+OK\r\n"
    );
    drop(conn);
    let mut conn = Conn::connect_tls(addr, client).unwrap();
    assert_eq!(conn.command(&["PING"]), b"+PONG\r\n");
}

/// Redis's last case: an encrypted key file works once `tls-key-file-pass` says its password,
/// and is refused without it (the old key stays in use).
#[test]
fn tls_unit_working_with_an_encrypted_key_file() {
    let Some(openssl) = find_binary("openssl", "tls encrypted key") else {
        return;
    };
    let server = support::builder().tls_test_certs().start().unwrap();
    let certs = server.tls_certs().unwrap().clone();
    let encrypted = certs.dir().join("server.key.encrypted");
    let made = Command::new(openssl)
        .args(["pkey", "-in"])
        .arg(certs.server_key_path())
        .args(["-aes256", "-passout", "pass:1234", "-out"])
        .arg(&encrypted)
        .status()
        .unwrap();
    assert!(made.success());
    let mut admin = Conn::connect(server.addr()).unwrap();
    let reply = admin.command(&["CONFIG", "SET", "tls-key-file", &path(encrypted.clone())]);
    assert!(
        String::from_utf8_lossy(&reply).contains("Unable to update TLS"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    let reply = admin.command(&[
        "CONFIG",
        "SET",
        "tls-key-file-pass",
        "1234",
        "tls-key-file",
        &path(encrypted),
    ]);
    assert_eq!(reply, b"+OK\r\n");
    assert!(pings(
        server.tls_addr().unwrap(),
        &Arc::new(certs.client_config())
    ));
}

/// `tls-ca-cert-dir` instead of `tls-ca-cert-file`: OpenSSL finds a CA there by its hashed name
/// (`openssl rehash`), as in Redis, so a directory without those names verifies nobody.
#[test]
fn a_ca_directory_verifies_clients() {
    let Some(openssl) = find_binary("openssl", "tls ca dir") else {
        return;
    };
    let server = support::builder().tls_test_certs().start().unwrap();
    let certs = server.tls_certs().unwrap().clone();
    let ca_dir = certs.dir().join("ca-dir");
    std::fs::create_dir(&ca_dir).unwrap();
    std::fs::copy(certs.ca_cert_path(), ca_dir.join("ca.pem")).unwrap();
    let mut admin = Conn::connect(server.addr()).unwrap();
    let set_dir = |admin: &mut Conn, dir: &std::path::Path| {
        let reply = admin.command(&[
            "CONFIG",
            "SET",
            "tls-ca-cert-file",
            "",
            "tls-ca-cert-dir",
            &path(dir.to_path_buf()),
        ]);
        assert_eq!(reply, b"+OK\r\n");
    };
    let addr = server.tls_addr().unwrap();
    let client = Arc::new(certs.client_config());
    // Without hashed names, as redis-server: the client's certificate cannot be verified.
    set_dir(&mut admin, &ca_dir);
    assert!(!pings(addr, &client));
    let rehashed = Command::new(openssl)
        .arg("rehash")
        .arg(&ca_dir)
        .status()
        .unwrap();
    assert!(rehashed.success());
    set_dir(&mut admin, &ca_dir);
    assert!(pings(addr, &client));
    let stranger = TestCerts::generate().unwrap();
    // Trusts our CA but shows the stranger's certificate: refused.
    let mixed = client_with_identity(&certs, &stranger);
    assert!(!pings(addr, &mixed));
}

/// A client trusting `trust`'s CA and showing `identity`'s client certificate.
fn client_with_identity(trust: &TestCerts, identity: &TestCerts) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(trust.ca_cert_pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let chain = CertificateDer::pem_slice_iter(identity.client_cert_pem().as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(identity.client_key_pem().as_bytes()).unwrap();
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .unwrap(),
    )
}

// ---- Certificates as OpenSSL's command line makes them (issue 32) ----

/// Files made with the openssl command line as redis-server's guides and its own test-certificate
/// script make them: an RSA CA, a server certificate with extensions (X.509 v3) and one signed
/// by `openssl x509 -req` with none (X.509 v1), a client certificate, the v3 certificate's key
/// encrypted with a password (PKCS#8, `secret`), and DH parameters (RFC 7919's ffdhe2048).
struct Recipes {
    dir: std::path::PathBuf,
}

impl Drop for Recipes {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Recipes {
    fn make(test: &str) -> Option<Recipes> {
        let openssl = find_binary("openssl", test)?;
        find_binary("redis-cli", test)?;
        let dir = support::temp_dir(&format!("tls-recipes-{}", test.replace(' ', "-")));
        let run = |args: &[&str]| {
            let out = Command::new(&openssl)
                .current_dir(&dir)
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "openssl {args:?}: {out:?}");
        };
        std::fs::write(
            dir.join("ext.cnf"),
            "keyUsage = digitalSignature, keyEncipherment\n",
        )
        .unwrap();
        run(&["genrsa", "-out", "ca.key", "2048"]);
        run(&[
            "req",
            "-x509",
            "-new",
            "-nodes",
            "-sha256",
            "-key",
            "ca.key",
            "-days",
            "30",
            "-subj",
            "/O=Test/CN=Certificate Authority",
            "-out",
            "ca.crt",
        ]);
        for (name, ext) in [("redis", true), ("v1", false), ("client", true)] {
            let key = format!("{name}.key");
            let csr = format!("{name}.csr");
            run(&["genrsa", "-out", &key, "2048"]);
            run(&[
                "req",
                "-new",
                "-sha256",
                "-subj",
                &format!("/O=Test/CN={name}"),
            ]
            .into_iter()
            .chain(["-key", &key, "-out", &csr])
            .collect::<Vec<_>>());
            let mut sign = vec![
                "x509",
                "-req",
                "-sha256",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "30",
                "-in",
                &csr,
            ];
            if ext {
                sign.extend(["-extfile", "ext.cnf"]);
            }
            let crt = format!("{name}.crt");
            sign.extend(["-out", &crt]);
            run(&sign);
        }
        run(&[
            "pkey",
            "-in",
            "redis.key",
            "-aes256",
            "-passout",
            "pass:secret",
            "-out",
            "enc.key",
        ]);
        run(&[
            "genpkey",
            "-genparam",
            "-algorithm",
            "DH",
            "-pkeyopt",
            "group:ffdhe2048",
            "-out",
            "redis.dh",
        ]);
        Some(Recipes { dir })
    }

    fn file(&self, name: &str) -> String {
        path(self.dir.join(name))
    }

    /// The server's arguments: `cert` and `key` files, the CA, then `more`.
    fn server_args(&self, cert: &str, key: &str, more: &[&str]) -> Vec<String> {
        let mut args = vec![
            "tls-cert-file".to_string(),
            self.file(cert),
            "tls-key-file".into(),
            self.file(key),
            "tls-ca-cert-file".into(),
            self.file("ca.crt"),
        ];
        args.extend(more.iter().map(|s| s.to_string()));
        args
    }

    /// redis-cli's arguments: the CA and the client certificate, then `more`.
    fn cli_args(&self, more: &[&str]) -> Vec<String> {
        let mut args = vec![
            "--cacert".to_string(),
            self.file("ca.crt"),
            "--cert".into(),
            self.file("client.crt"),
            "--key".into(),
            self.file("client.key"),
        ];
        args.extend(more.iter().map(|s| s.to_string()));
        args
    }
}

/// Starts embedis with `args` (name, value pairs) and a TLS port; the error it started with
/// otherwise.
fn start_ours(args: &[String]) -> Result<(embedis::Server, u16), String> {
    for _ in 0..5 {
        let tls_port = free_port();
        let mut builder = support::builder()
            .config("tls-port", &tls_port.to_string())
            .unwrap();
        for pair in args.chunks(2) {
            builder = builder.config(&pair[0], &pair[1])?;
        }
        match builder.start() {
            Ok(server) => return Ok((server, tls_port)),
            Err(e) if e.to_string().contains("ddress already in use") => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    panic!("no free TLS port for embedis");
}

/// Starts redis-server with `args` as `--name value` and a TLS port: its TLS port, or the log it
/// printed before exiting.
fn start_theirs(test: &str, args: &[String]) -> Option<Result<(RedisServer, u16), String>> {
    let binary = find_binary("redis-server", test)?;
    let flags: Vec<String> = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if i % 2 == 0 {
                format!("--{a}")
            } else {
                a.clone()
            }
        })
        .collect();
    let tls_port = free_port();
    let mut check = Command::new(&binary)
        .args([
            "--port",
            "0",
            "--tls-port",
            &tls_port.to_string(),
            "--save",
            "",
        ])
        .args(["--logfile", "", "--dir"])
        .arg(std::env::temp_dir())
        .args(&flags)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A configuration Redis refuses makes it exit at once; one it takes keeps it running.
    std::thread::sleep(Duration::from_millis(500));
    if let Ok(Some(_)) = check.try_wait() {
        let out = check.wait_with_output().unwrap();
        return Some(Err(String::from_utf8_lossy(&out.stdout).into_owned()));
    }
    let _ = check.kill();
    let _ = check.wait();
    let mut with_port = vec!["--tls-port".to_string(), String::new()];
    with_port.extend(flags);
    for _ in 0..5 {
        let tls_port = free_port();
        with_port[1] = tls_port.to_string();
        let args: Vec<&str> = with_port.iter().map(String::as_str).collect();
        let redis = RedisServer::start(test, &args)?;
        if Conn::connect(SocketAddr::from(([127, 0, 0, 1], tls_port))).is_ok() {
            return Some(Ok((redis, tls_port)));
        }
    }
    panic!("{test}: redis-server did not listen on its TLS port");
}

/// Serves `server` (tls-* arguments) to redis-cli with `cli` arguments, on redis-server and on
/// embedis: both must answer PING the same way.
fn serves_like_redis(test: &str, server: &[String], cli_args: &[String]) {
    let Some(theirs) = start_theirs(test, server) else {
        return;
    };
    let (_redis, redis_port) = theirs.unwrap_or_else(|log| panic!("redis-server refused: {log}"));
    let (_ours, our_port) = start_ours(server).unwrap();
    let redis = cli(redis_port, cli_args, &["PING"]);
    let ours = cli(our_port, cli_args, &["PING"]);
    assert_eq!(redis.as_deref(), Ok("PONG"), "{test}: redis-server");
    assert_eq!(ours.as_deref(), Ok("PONG"), "{test}: embedis");
}

/// Both refuse to start with `server`, and embedis says what Redis logs (up to OpenSSL's error,
/// where Redis's depends on whether a terminal could be asked for a password).
fn refused_like_redis(test: &str, server: &[String]) {
    let Some(theirs) = start_theirs(test, server) else {
        return;
    };
    let redis_log = match theirs {
        Ok(_) => panic!("{test}: redis-server started"),
        Err(log) => log,
    };
    let ours = match start_ours(server) {
        Ok(_) => panic!("{test}: embedis started"),
        Err(e) => e,
    };
    let said = ours.split(": error:").next().unwrap();
    assert!(
        redis_log.contains(said),
        "{test}: ours {ours:?}, Redis's log {redis_log}"
    );
}

#[test]
fn tls_recipe_a_v1_certificate_serves() {
    let Some(r) = Recipes::make("tls v1 certificate") else {
        return;
    };
    let cli_args = r.cli_args(&[]);
    serves_like_redis(
        "tls v3",
        &r.server_args("redis.crt", "redis.key", &[]),
        &cli_args,
    );
    serves_like_redis("tls v1", &r.server_args("v1.crt", "v1.key", &[]), &cli_args);
}

#[test]
fn tls_recipe_an_encrypted_key_serves_with_its_password() {
    let Some(r) = Recipes::make("tls encrypted key") else {
        return;
    };
    let with = |pass: Option<&str>| match pass {
        None => r.server_args("redis.crt", "enc.key", &[]),
        Some(pass) => r.server_args("redis.crt", "enc.key", &["tls-key-file-pass", pass]),
    };
    serves_like_redis("tls key pass", &with(Some("secret")), &r.cli_args(&[]));
    refused_like_redis("tls key wrong pass", &with(Some("wrong")));
    refused_like_redis("tls key no pass", &with(None));
}

#[test]
fn tls_recipe_dh_params_serve_a_dhe_suite() {
    let Some(r) = Recipes::make("tls dh params") else {
        return;
    };
    let dhe = [
        "tls-protocols",
        "TLSv1.2",
        "tls-ciphers",
        "DHE-RSA-AES256-GCM-SHA384",
    ];
    let dh_file = r.file("redis.dh");
    let mut with_file = dhe.to_vec();
    with_file.extend(["tls-dh-params-file", &dh_file]);
    let cli_args = r.cli_args(&["--tls-ciphers", "DHE-RSA-AES256-GCM-SHA384"]);
    serves_like_redis(
        "tls dh file",
        &r.server_args("redis.crt", "redis.key", &with_file),
        &cli_args,
    );
    // Without a file, OpenSSL's built-in parameters serve the suite.
    serves_like_redis(
        "tls dh auto",
        &r.server_args("redis.crt", "redis.key", &dhe),
        &cli_args,
    );
    let ca = r.file("ca.crt");
    let not_dh = r.server_args("redis.crt", "redis.key", &["tls-dh-params-file", &ca]);
    refused_like_redis("tls dh not dh", &not_dh);
    let missing = r.server_args(
        "redis.crt",
        "redis.key",
        &["tls-dh-params-file", "/nonexistent"],
    );
    refused_like_redis("tls dh missing", &missing);
}

#[test]
fn tls_recipe_a_tls12_cbc_suite_serves() {
    let Some(r) = Recipes::make("tls cbc suite") else {
        return;
    };
    let cbc = ["tls-protocols", "TLSv1.2", "tls-ciphers", "AES128-SHA256"];
    let server = r.server_args("redis.crt", "redis.key", &cbc);
    serves_like_redis(
        "tls cbc",
        &server,
        &r.cli_args(&["--tls-ciphers", "AES128-SHA256"]),
    );
    // A client offering only another suite is refused; CONFIG SET changes the list as Redis's
    // unit/tls does ("Verify tls-ciphers behaves as expected").
    let (ours, port) = start_ours(&server).unwrap();
    let aes128 = r.cli_args(&["--tls-ciphers", "AES128-SHA256"]);
    let aes256 = r.cli_args(&["--tls-ciphers", "AES256-SHA256"]);
    assert!(cli(port, &aes256, &["PING"]).is_err());
    let mut admin = Conn::connect(ours.addr()).unwrap();
    let reply = admin.command(&["CONFIG", "SET", "tls-ciphers", "DEFAULT:-AES128-SHA256"]);
    assert_eq!(reply, b"+OK\r\n");
    assert!(cli(port, &aes128, &["PING"]).is_err());
    assert_eq!(cli(port, &aes256, &["PING"]).as_deref(), Ok("PONG"));
    assert_eq!(
        admin.command(&["CONFIG", "SET", "tls-ciphers", "DEFAULT"]),
        b"+OK\r\n"
    );
    assert_eq!(cli(port, &aes128, &["PING"]).as_deref(), Ok("PONG"));
    let nonsense = r.server_args("redis.crt", "redis.key", &["tls-ciphers", "nonsense"]);
    refused_like_redis("tls ciphers nonsense", &nonsense);
}
