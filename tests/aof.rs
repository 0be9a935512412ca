//! The append-only file end to end: no acknowledged write is lost when `embedis-server` is
//! killed with SIGKILL in the middle of a write load (counted); a truncated tail loads with
//! `aof-load-truncated yes` and stops the start with `no`, with Redis's messages; `CONFIG SET
//! appendonly yes` at run time writes a base first; BGREWRITEAOF under writes keeps every write;
//! redis-server 7.0 loads the AOF directory embedis writes and embedis loads Redis's, with the same
//! DEBUG DIGEST, and redis-check-aof accepts ours.
//!
//! The redis-server parts are skipped loudly when it is missing, unless EMBEDIS_REQUIRE_REDIS=1.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{Conn, RedisServer};

const EMBEDIS: &str = env!("CARGO_BIN_EXE_embedis-server");

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("embedis-aof-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(c: &mut Conn, args: &[&str]) -> String {
    String::from_utf8_lossy(&c.command(args)).into_owned()
}

/// An `embedis-server` child in `dir`, killed on drop.
struct Embedis {
    child: Child,
    port: u16,
}

impl Drop for Embedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Embedis {
    fn start(dir: &Path, extra: &[&str]) -> Embedis {
        for _ in 0..10 {
            let port = support::free_port();
            let child = Command::new(EMBEDIS)
                .args(["--port", &port.to_string(), "--dir", dir.to_str().unwrap()])
                .args(["--save", "", "--enable-debug-command", "yes"])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut server = Embedis { child, port };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if !matches!(server.child.try_wait(), Ok(None)) {
                    break;
                }
                if let Ok(mut c) = Conn::connect(server.addr()) {
                    if text(&mut c, &["PING"]) == "+PONG\r\n" {
                        return server;
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = server.child.kill();
        }
        panic!("embedis-server did not start in {}", dir.display());
    }

    fn addr(&self) -> std::net::SocketAddr {
        ([127, 0, 0, 1], self.port).into()
    }

    fn kill9(mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

/// Runs `embedis-server` in `dir` until it exits or ten seconds pass: (exited with failure,
/// output).
fn start_fails(dir: &Path, extra: &[&str]) -> (bool, String) {
    let port = support::free_port().to_string();
    let mut child = Command::new(EMBEDIS)
        .args([
            "--port",
            &port,
            "--dir",
            dir.to_str().unwrap(),
            "--save",
            "",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let failed = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break !status.success();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let mut all = String::from_utf8_lossy(&out.stdout).into_owned();
    all.push_str(&String::from_utf8_lossy(&out.stderr));
    (failed, all)
}

fn kill_mid_load_loses_nothing_acknowledged(fsync: &str) {
    let dir = temp_dir(&format!("crash-{fsync}"));
    let server = Embedis::start(&dir, &["--appendonly", "yes", "--appendfsync", fsync]);
    let addr = server.addr();
    // A writer pipelining INCRs and SETs; the server is killed while it writes.
    let writer = std::thread::spawn(move || {
        use std::io::BufRead;
        let stream = std::net::TcpStream::connect(addr).unwrap();
        let mut replies = std::io::BufReader::new(stream.try_clone().unwrap());
        let mut requests = stream;
        let mut acknowledged = 0u64;
        let mut line = String::new();
        for i in 0..1_000_000u64 {
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
    });
    std::thread::sleep(Duration::from_millis(700));
    server.kill9();
    let acknowledged = writer.join().unwrap();
    assert!(
        acknowledged > 100,
        "the load ran ({acknowledged} acknowledged)"
    );
    let server = Embedis::start(&dir, &["--appendonly", "yes"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    let counter: u64 = text(&mut c, &["GET", "counter"])
        .lines()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        counter >= acknowledged,
        "{fsync}: {acknowledged} INCRs acknowledged, {counter} after restart"
    );
    // Every acknowledged SET is there too (the last acknowledged one is key:{n-1}).
    let last = format!("key:{}", acknowledged - 1);
    assert_eq!(text(&mut c, &["EXISTS", &last, "key:0"]), ":2\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigkill_loses_no_acknowledged_write_under_appendfsync_always() {
    kill_mid_load_loses_nothing_acknowledged("always");
}

/// SIGKILL leaves the operating system's page cache alone, so `everysec` loses nothing either;
/// its one second bounds what a power loss would take (not testable here).
#[test]
fn sigkill_loses_no_acknowledged_write_under_appendfsync_everysec() {
    kill_mid_load_loses_nothing_acknowledged("everysec");
}

#[test]
fn a_truncated_tail_loads_only_with_aof_load_truncated() {
    let dir = temp_dir("truncated");
    {
        let server = Embedis::start(&dir, &["--appendonly", "yes"]);
        let mut c = Conn::connect(server.addr()).unwrap();
        for i in 0..10 {
            assert_eq!(text(&mut c, &["SET", &format!("k{i}"), "v"]), "+OK\r\n");
        }
        server.kill9();
    }
    let incr = dir.join("appendonlydir/appendonly.aof.1.incr.aof");
    let good = std::fs::metadata(&incr).unwrap().len();
    // Half a command, as a crash in the middle of a write leaves it.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&incr)
        .unwrap()
        .write_all(b"*3\r\n$3\r\nSET\r\n$2\r\nk1")
        .unwrap();
    let (failed, output) =
        start_fails(&dir, &["--appendonly", "yes", "--aof-load-truncated", "no"]);
    assert!(failed, "{output}");
    assert!(
        output.contains(
            "Unexpected end of file reading the append only file appendonly.aof.1.incr.aof"
        ),
        "{output}"
    );
    let server = Embedis::start(
        &dir,
        &["--appendonly", "yes", "--aof-load-truncated", "yes"],
    );
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(text(&mut c, &["DBSIZE"]), ":10\r\n");
    // The tail was cut back to the last whole command, and the file goes on from there.
    assert_eq!(std::fs::metadata(&incr).unwrap().len(), good);
    assert_eq!(text(&mut c, &["SET", "after", "1"]), "+OK\r\n");
    drop(c);
    server.kill9();
    let server = Embedis::start(&dir, &["--appendonly", "yes", "--aof-load-truncated", "no"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(text(&mut c, &["DBSIZE"]), ":11\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

fn fill(c: &mut Conn) {
    for db in ["0", "4"] {
        text(c, &["SELECT", db]);
        text(c, &["SET", "s", "v", "EX", "1000"]);
        text(c, &["INCRBYFLOAT", "f", "2.5"]);
        text(c, &["RPUSH", "l", "a", "b", "c"]);
        text(c, &["SADD", "set", "1", "2", "x"]);
        text(c, &["HSET", "h", "a", "1", "b", "2"]);
        text(c, &["ZADD", "z", "1", "a", "2", "b"]);
        text(c, &["XADD", "x", "1-1", "f", "v"]);
        text(c, &["PFADD", "hll", "a", "b"]);
        text(
            c,
            &[
                "EVAL",
                "redis.call('SET', KEYS[1], 'from-lua'); return redis.call('INCR', 'n')",
                "1",
                "lua",
            ],
        );
    }
    text(c, &["SELECT", "0"]);
}

fn digest(c: &mut Conn) -> String {
    let d = text(c, &["DEBUG", "DIGEST"]);
    assert!(d.starts_with('+'), "{d}");
    d
}

fn wait_rewrite(c: &mut Conn) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = text(c, &["INFO", "persistence"]);
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            assert!(info.contains("aof_last_bgrewrite_status:ok"), "{info}");
            return;
        }
        assert!(Instant::now() < deadline, "rewrite did not finish");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn appendonly_at_run_time_and_rewrites_keep_every_write() {
    let dir = temp_dir("runtime");
    let server = Embedis::start(&dir, &[]);
    let mut c = Conn::connect(server.addr()).unwrap();
    text(&mut c, &["SET", "before", "1"]);
    assert_eq!(
        text(&mut c, &["CONFIG", "SET", "appendonly", "yes"]),
        "+OK\r\n"
    );
    wait_rewrite(&mut c);
    fill(&mut c);
    // The writes are fsynced: one local acknowledgement (Redis 7.2's WAITAOF).
    assert_eq!(
        text(&mut c, &["WAITAOF", "1", "0", "0"]),
        "*2\r\n:1\r\n:0\r\n"
    );
    assert_eq!(
        text(&mut c, &["BGREWRITEAOF"]),
        "+Background append only file rewriting started\r\n"
    );
    // Writes while the rewrite runs go to the new increment.
    text(&mut c, &["SET", "during", "1"]);
    wait_rewrite(&mut c);
    text(&mut c, &["SET", "after", "1"]);
    let expected = digest(&mut c);
    let manifest =
        std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap();
    assert!(
        !manifest.contains("type h"),
        "history files are gone: {manifest}"
    );
    drop(c);
    server.kill9();
    let server = Embedis::start(&dir, &["--appendonly", "yes"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(digest(&mut c), expected);
    assert_eq!(text(&mut c, &["DEBUG", "LOADAOF"]), "+OK\r\n");
    assert_eq!(digest(&mut c), expected, "DEBUG LOADAOF loads the same");
    // An approximate trim with LIMIT propagates as an exact trim that keeps its LIMIT; replayed
    // from the AOF (under another node size) it must trim exactly what it trimmed (Redis's
    // suite: "XADD with ~ MAXLEN and LIMIT can propagate correctly").
    text(&mut c, &["CONFIG", "SET", "stream-node-max-entries", "10"]);
    for _ in 0..100 {
        text(&mut c, &["XADD", "trimmed", "*", "f", "v"]);
    }
    text(
        &mut c,
        &[
            "XADD", "trimmed", "MAXLEN", "~", "55", "LIMIT", "30", "*", "f", "v",
        ],
    );
    assert_eq!(text(&mut c, &["XLEN", "trimmed"]), ":71\r\n");
    text(&mut c, &["CONFIG", "SET", "stream-node-max-entries", "1"]);
    assert_eq!(text(&mut c, &["DEBUG", "LOADAOF"]), "+OK\r\n");
    assert_eq!(text(&mut c, &["XLEN", "trimmed"]), ":71\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn aof_directories_interoperate_with_redis() {
    let Some(redis) = RedisServer::start(
        "aof-interop",
        &["--appendonly", "yes", "--enable-debug-command", "yes"],
    ) else {
        return;
    };
    let dir = temp_dir("interop");
    let ours = Embedis::start(&dir, &["--appendonly", "yes"]);
    let (mut r, mut e) = (
        Conn::connect(redis.addr()).unwrap(),
        Conn::connect(ours.addr()).unwrap(),
    );
    fill(&mut r);
    fill(&mut e);
    let expected = digest(&mut e);
    assert_eq!(digest(&mut r), expected);
    // Ours → redis-check-aof and redis-server.
    let manifest = dir.join("appendonlydir/appendonly.aof.manifest");
    let check = Command::new("redis-check-aof")
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    drop(e);
    ours.kill9();
    let copy = temp_dir("interop-redis-reads");
    copy_dir(&dir.join("appendonlydir"), &copy.join("appendonlydir"));
    let loaded = RedisServer::start(
        "aof-interop-load",
        &[
            "--appendonly",
            "yes",
            "--dir",
            copy.to_str().unwrap(),
            "--enable-debug-command",
            "yes",
        ],
    )
    .unwrap();
    let mut l = Conn::connect(loaded.addr()).unwrap();
    assert_eq!(digest(&mut l), expected, "redis-server loads our AOF");
    // Redis's (after a rewrite and more writes) → ours.
    text(&mut r, &["BGREWRITEAOF"]);
    wait_rewrite(&mut r);
    text(&mut r, &["SET", "more", "1"]);
    // Redis writes its AOF before it replies: the files are complete now.
    let expected = digest(&mut r);
    let theirs = temp_dir("interop-ours-reads");
    copy_dir(
        &redis.dir().join("appendonlydir"),
        &theirs.join("appendonlydir"),
    );
    let ours = Embedis::start(&theirs, &["--appendonly", "yes"]);
    let mut e = Conn::connect(ours.addr()).unwrap();
    assert_eq!(digest(&mut e), expected, "embedis loads Redis's AOF");
    for d in [dir, copy, theirs] {
        let _ = std::fs::remove_dir_all(d);
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}
