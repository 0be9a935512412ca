//! The `embedis-server` binary: start-up options, `--port auto`, refusal of unknown and
//! unimplemented options, unix sockets, config files, and clean stops on SIGTERM.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::Conn;

const BIN: &str = env!("CARGO_BIN_EXE_embedis-server");

/// Spawns the binary with `--port auto` and returns it with the port it printed and the output
/// lines that came before. Callers stop it with `terminate`, which waits for it.
#[allow(clippy::zombie_processes)]
fn spawn_auto_with_log(
    extra: &[&str],
) -> (
    Child,
    u16,
    BufReader<std::process::ChildStdout>,
    Vec<String>,
) {
    // Its own working directory: with Redis's default save points, a stop writes dump.rdb there
    // (and a start loads it), as redis-server does.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("embedis-binary-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(BIN)
        .current_dir(&dir)
        .args(["--port", "auto"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut before = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "server exited before printing its port"
        );
        if let Some(port) = line.trim().strip_prefix("port=") {
            return (child, port.parse().unwrap(), stdout, before);
        }
        before.push(line.trim_end().to_string());
    }
}

fn spawn_auto(extra: &[&str]) -> (Child, u16, BufReader<std::process::ChildStdout>) {
    let (child, port, stdout, _) = spawn_auto_with_log(extra);
    (child, port, stdout)
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    // SAFETY: sending SIGTERM to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap()
}

#[test]
fn port_auto_prints_a_machine_readable_port_and_serves() {
    let (mut child, port, mut stdout) = spawn_auto(&[]);
    let mut conn = Conn::connect(([127, 0, 0, 1], port).into()).unwrap();
    assert_eq!(conn.command(&["PING"]), b"+PONG\r\n");
    let status = terminate(&mut child);
    assert!(status.success(), "SIGTERM is a clean stop: {status:?}");
    let mut log = String::new();
    stdout.read_to_string(&mut log).unwrap();
    assert!(
        log.contains("Received SIGTERM scheduling shutdown..."),
        "{log}"
    );
    assert!(log.contains("ready to exit, bye bye"), "{log}");
}

#[test]
fn logs_the_line_harnesses_wait_for_before_the_port() {
    let (mut child, _port, _stdout, before) = spawn_auto_with_log(&[]);
    terminate(&mut child);
    let ready = before
        .iter()
        .find(|l| l.ends_with("* Ready to accept connections"));
    let ready = ready.unwrap_or_else(|| panic!("no ready line in {before:?}"));
    // Redis's format: "<pid>:M <day> <mon> <year> <hh:mm:ss.mmm> * <message>".
    let (pid, rest) = ready.split_once(':').unwrap();
    assert_eq!(pid.parse::<u32>().unwrap(), child.id());
    assert!(rest.starts_with("M "), "{ready}");
    assert_eq!(rest.split(' ').count(), 10, "{ready}");
}

#[test]
fn unknown_and_unimplemented_options_are_refused() {
    let out = Command::new(BIN)
        .current_dir(support::server_dir())
        .args(["--port", "0", "--frobnicate", "yes"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Bad directive or wrong number of arguments"),
        "{err}"
    );
    assert!(err.contains("frobnicate"), "{err}");

    let out = Command::new(BIN)
        .current_dir(support::server_dir())
        .args(["--port", "0", "--daemonize", "yes"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not implement"), "{err}");

    let out = Command::new(BIN)
        .current_dir(support::server_dir())
        .args(["--port", "0", "--maxmemory-policy", "lru"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("argument(s) must be one of"));

    let out = Command::new(BIN)
        .current_dir(support::server_dir())
        .args(["--port", "notaport"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("argument couldn't be parsed into an integer"));
}

#[test]
fn harness_options_that_describe_our_behaviour_are_accepted() {
    let (mut child, port, _out) =
        spawn_auto(&["--save", "", "--appendonly", "no", "--daemonize", "no"]);
    let mut conn = Conn::connect(([127, 0, 0, 1], port).into()).unwrap();
    assert_eq!(conn.command(&["PING"]), b"+PONG\r\n");
    terminate(&mut child);
}

#[test]
fn config_file_then_command_line_overrides() {
    let dir = std::env::temp_dir().join(format!("embedis-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("embedis.conf");
    let sock = dir.join("embedis.sock");
    std::fs::write(
        &conf,
        format!(
            "# a comment\nport 0\nunixsocket \"{}\"\nunixsocketperm 700\ndatabases 4\n",
            sock.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .current_dir(&dir)
        .arg(&conf)
        .args(["--loglevel", "warning"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stream = None;
    for _ in 0..200 {
        if let Ok(s) = UnixStream::connect(&sock) {
            stream = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stream = stream.expect("unix socket comes up");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.write_all(b"SELECT 3\r\nSELECT 4\r\n").unwrap();
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while !got.ends_with(b"range\r\n") {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(
        got, b"+OK\r\n-ERR DB index is out of range\r\n",
        "databases 4 from the file"
    );
    terminate(&mut child);
    assert!(!sock.exists(), "the socket file is removed at shutdown");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_taken_port_is_a_clear_start_up_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let out = Command::new(BIN)
        .current_dir(support::server_dir())
        .args(["--port", &port, "--bind", "127.0.0.1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("Could not create server TCP listening socket"),
        "{all}"
    );
    // Redis's own harness retries on another port when it reads this line.
    let failed = format!("# Failed listening on port {port} (TCP), aborting.");
    assert!(all.contains(&failed), "{all}");
}

/// CONFIG REWRITE writes the primary of the moment as `replicaof host port`, as redis-server
/// 7.0 does (a REPLICAOF at run time included), and drops the line once the server is a
/// primary again — so a replica restarted from its file follows the same primary and
/// continues from the history its RDB file kept (Redis's psync2 restart test).
#[test]
fn config_rewrite_keeps_the_current_primary() {
    let dir =
        std::env::temp_dir().join(format!("embedis-rewrite-replicaof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("replica.conf");
    std::fs::write(&conf, "save \"\"\n").unwrap();
    let conf_arg = conf.display().to_string();
    let (mut child, port, _stdout) = spawn_auto(&[conf_arg.as_str()]);
    let mut c = Conn::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port))).unwrap();
    let ok = |c: &mut Conn, args: &[&str]| assert_eq!(support::text(c, args), "+OK\r\n");
    ok(&mut c, &["REPLICAOF", "127.0.0.1", "7999"]);
    ok(&mut c, &["CONFIG", "REWRITE"]);
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(
        text.lines().any(|l| l == "replicaof 127.0.0.1 7999"),
        "{text}"
    );
    ok(&mut c, &["REPLICAOF", "NO", "ONE"]);
    ok(&mut c, &["CONFIG", "REWRITE"]);
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(!text.contains("replicaof"), "{text}");
    terminate(&mut child);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A replica restarted from its RDB file continues with a partial resync: the binary loads
/// its file between the event loop's turns, and its link to the primary waits for the load,
/// so that PSYNC offers the history the file restores (integration/psync2's restart test).
#[test]
fn a_restarted_replica_binary_continues_with_psync() {
    let primary = support::builder()
        .config("repl-ping-replica-period", "3600")
        .unwrap()
        .start()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("embedis-replica-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let primary_port = primary.addr().port().to_string();
    let dir_arg = dir.display().to_string();
    let args = ["--replicaof", "127.0.0.1", &primary_port, "--dir", &dir_arg];
    let mut p = Conn::connect(primary.addr()).unwrap();
    let link_up = |port: u16| {
        let mut c = Conn::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port))).unwrap();
        support::field(
            &support::text(&mut c, &["INFO", "replication"]),
            "master_link_status",
        ) == "up"
    };
    let (mut child, port, _stdout) = spawn_auto(&args);
    support::eventually("the first link", || link_up(port));
    support::text(&mut p, &["SET", "k", "v"]);
    support::eventually("the write reaches the replica", || {
        let mut c = Conn::connect(std::net::SocketAddr::from(([127, 0, 0, 1], port))).unwrap();
        support::text(&mut c, &["GET", "k"]) == "$1\r\nv\r\n"
    });
    terminate(&mut child); // saves its file, with the history
    let (mut child, port, _stdout) = spawn_auto(&args);
    support::eventually("the link after the restart", || link_up(port));
    let stats = support::text(&mut p, &["INFO", "stats"]);
    assert_eq!(support::field(&stats, "sync_full"), "1", "{stats}");
    assert_eq!(support::field(&stats, "sync_partial_ok"), "1", "{stats}");
    terminate(&mut child);
    let _ = std::fs::remove_dir_all(&dir);
}
