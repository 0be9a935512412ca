//! The append-only file end to end: no acknowledged write is lost when `embedis-server` is
//! killed with SIGKILL in the middle of a write load (counted); a truncated tail loads with
//! `aof-load-truncated yes` and stops the start with `no`, with Redis's messages; `CONFIG SET
//! appendonly yes` at run time writes a base first; BGREWRITEAOF under writes keeps every write;
//! redis-server 7.0 loads the AOF directory embedis writes and embedis loads Redis's, with the same
//! DEBUG DIGEST, and redis-check-aof accepts ours; the same for a base written as commands
//! (`aof-use-rdb-preamble no`), which is byte-identical to Redis's for a deterministic dataset;
//! `aof-timestamp-enabled` annotations.
//!
//! The redis-server parts are skipped loudly when it is missing, unless EMBEDIS_REQUIRE_REDIS=1.

use crate::support;
use support::{digest, temp_dir, text};

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{Conn, RedisServer};

const EMBEDIS: &str = env!("CARGO_BIN_EXE_embedis-server");

/// An `embedis-server` child in `dir`, killed on drop.
pub(crate) struct Embedis {
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
    pub(crate) fn start(dir: &Path, extra: &[&str]) -> Embedis {
        for _ in 0..10 {
            let port = support::free_port();
            let child = Command::new(EMBEDIS)
                .args(["--port", &port.to_string(), "--dir", dir.to_str().unwrap()])
                .args(["--save", "", "--enable-debug-command", "yes"])
                // As Redis 7.0, the redis-server whose files these tests exchange.
                .args(["--compat-version", "7.0"])
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
                // The port was free when picked; another test's server may have taken it since:
                // only this child's answer counts (INFO's process_id).
                if let Ok(mut c) = Conn::connect(server.addr()) {
                    let pid = format!("process_id:{}\r\n", server.child.id());
                    if text(&mut c, &["INFO", "server"]).contains(&pid) {
                        return server;
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = server.child.kill();
        }
        panic!("embedis-server did not start in {}", dir.display());
    }

    pub(crate) fn addr(&self) -> std::net::SocketAddr {
        ([127, 0, 0, 1], self.port).into()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn kill9(mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }

    /// Waits up to `wait` for the process to exit by itself; its exit code (None: still
    /// running, or ended by a signal).
    pub(crate) fn wait_exit(&mut self, wait: Duration) -> Option<i32> {
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
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
    let dir = temp_dir(&format!("aof-crash-{fsync}"));
    let server = Embedis::start(&dir, &["--appendonly", "yes", "--appendfsync", fsync]);
    let addr = server.addr();
    // A writer pipelining INCRs and SETs; the server is killed while it writes.
    let writer = support::counting_writer(addr);
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
    let dir = temp_dir("aof-truncated");
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
    let dir = temp_dir("aof-runtime");
    let server = Embedis::start(&dir, &["--compat-version", "7.2"]);
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
    // As the same version: its base file is RDB 11, which Redis 7.0 refuses to load.
    let server = Embedis::start(&dir, &["--appendonly", "yes", "--compat-version", "7.2"]);
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
    let dir = temp_dir("aof-interop");
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
    let copy = temp_dir("aof-interop-redis-reads");
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
    support::wait_loaded(&mut l);
    assert_eq!(digest(&mut l), expected, "redis-server loads our AOF");
    // Redis's (after a rewrite and more writes) → ours.
    text(&mut r, &["BGREWRITEAOF"]);
    wait_rewrite(&mut r);
    text(&mut r, &["SET", "more", "1"]);
    // Redis writes its AOF before it replies: the files are complete now.
    let expected = digest(&mut r);
    let theirs = temp_dir("aof-interop-ours-reads");
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

// ---------------------------------------------------------------------------------------------
// A base written as commands (`aof-use-rdb-preamble no`)
// ---------------------------------------------------------------------------------------------

/// The base file the manifest of the AOF directory `dir` names, and its bytes.
fn base_of(dir: &Path) -> (String, Vec<u8>) {
    let manifest = std::fs::read_to_string(dir.join("appendonly.aof.manifest")).unwrap();
    let name = manifest
        .lines()
        .find(|l| l.ends_with("type b"))
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or_else(|| panic!("no base in {manifest}"))
        .to_string();
    let bytes = std::fs::read(dir.join(&name)).unwrap();
    (name, bytes)
}

/// A dataset whose commands-base form is deterministic in both servers: one key per database
/// (Redis walks a database in its hash table's order, seeded at random), values in encodings
/// whose element order is fixed (lists, intsets, listpack hashes and sorted sets, streams), a
/// function library, fixed TTLs and delivery times.
fn fill_deterministic(c: &mut Conn) {
    let run = |c: &mut Conn, db: &str, args: &[&str]| {
        text(c, &["SELECT", db]);
        let reply = text(c, args);
        assert!(!reply.starts_with('-'), "{args:?}: {reply}");
    };
    run(
        c,
        "0",
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('f', function() return 1 end)",
        ],
    );
    run(c, "0", &["SET", "str", "hello world"]);
    run(c, "0", &["PEXPIREAT", "str", "4102444800000"]);
    run(c, "1", &["RPUSH", "list", "a", "1", "-7", "bbb"]);
    let many: Vec<String> = (0..150).map(|i| format!("item{i}")).collect();
    let mut rpush = vec!["RPUSH", "biglist"];
    rpush.extend(many.iter().map(String::as_str));
    run(c, "2", &rpush);
    run(c, "3", &["SADD", "ints", "5", "-3", "100000", "7"]);
    run(c, "4", &["HSET", "hash", "f1", "v1", "f2", "22", "f3", ""]);
    run(
        c,
        "5",
        &[
            "ZADD", "zset", "1", "a", "2.5", "b", "0.1", "c", "-inf", "d", "1e300", "e",
        ],
    );
    run(c, "6", &["XADD", "stream", "1-1", "a", "1", "b", "2"]);
    run(c, "6", &["XADD", "stream", "1-2", "a", "3", "b", "4"]);
    run(c, "6", &["XADD", "stream", "2-0", "other", "x"]);
    run(c, "6", &["XADD", "stream", "3-0", "a", "5", "b", "6"]);
    run(c, "6", &["XDEL", "stream", "1-2"]);
    run(c, "6", &["XGROUP", "CREATE", "stream", "g1", "0"]);
    run(c, "6", &["XGROUP", "CREATE", "stream", "g2", "$"]);
    run(
        c,
        "6",
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "alice",
            "COUNT",
            "2",
            "STREAMS",
            "stream",
            ">",
        ],
    );
    run(c, "6", &["XGROUP", "CREATECONSUMER", "stream", "g1", "bob"]);
    for id in ["1-1", "2-0"] {
        run(
            c,
            "6",
            &[
                "XCLAIM",
                "stream",
                "g1",
                "alice",
                "0",
                id,
                "TIME",
                "1600000000000",
                "RETRYCOUNT",
                "3",
                "JUSTID",
            ],
        );
    }
    run(c, "7", &["XADD", "empty", "5-5", "f", "v"]);
    run(c, "7", &["XDEL", "empty", "5-5"]);
    run(c, "8", &["INCRBY", "counter", "12345"]);
    run(c, "8", &["PEXPIREAT", "counter", "4102444800123"]);
    text(c, &["SELECT", "0"]);
}

fn bgrewriteaof(c: &mut Conn) {
    assert_eq!(
        text(c, &["BGREWRITEAOF"]),
        "+Background append only file rewriting started\r\n"
    );
    wait_rewrite(c);
}

#[test]
fn a_commands_base_is_byte_identical_to_redis_and_loads_both_ways() {
    let Some(redis) = RedisServer::start(
        "aof-commands-base",
        &[
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
            "--enable-debug-command",
            "yes",
        ],
    ) else {
        return;
    };
    let dir = temp_dir("aof-commands-base");
    let ours = Embedis::start(
        &dir,
        &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"],
    );
    let (mut r, mut e) = (
        Conn::connect(redis.addr()).unwrap(),
        Conn::connect(ours.addr()).unwrap(),
    );
    fill_deterministic(&mut r);
    fill_deterministic(&mut e);
    let expected = digest(&mut e);
    assert_eq!(digest(&mut r), expected);
    bgrewriteaof(&mut r);
    bgrewriteaof(&mut e);
    let (our_name, our_base) = base_of(&dir.join("appendonlydir"));
    let (their_name, their_base) = base_of(&redis.dir().join("appendonlydir"));
    assert_eq!(our_name, "appendonly.aof.2.base.aof");
    assert_eq!(our_name, their_name);
    assert!(
        our_base == their_base,
        "the bases differ:\n--- ours\n{}\n--- redis\n{}",
        String::from_utf8_lossy(&our_base),
        String::from_utf8_lossy(&their_base)
    );

    // Ours → redis-check-aof and redis-server.
    text(&mut e, &["SET", "after-rewrite", "1"]);
    let expected = digest(&mut e);
    let check = Command::new("redis-check-aof")
        .arg(dir.join("appendonlydir/appendonly.aof.manifest"))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    drop(e);
    ours.kill9();
    let copy = temp_dir("aof-commands-base-redis-reads");
    copy_dir(&dir.join("appendonlydir"), &copy.join("appendonlydir"));
    let loaded = RedisServer::start(
        "aof-commands-base-load",
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
    support::wait_loaded(&mut l);
    assert_eq!(digest(&mut l), expected, "redis-server loads our AOF");

    // Redis's → ours.
    text(&mut r, &["SET", "more", "1"]);
    let expected = digest(&mut r);
    let theirs = temp_dir("aof-commands-base-ours-reads");
    copy_dir(
        &redis.dir().join("appendonlydir"),
        &theirs.join("appendonlydir"),
    );
    let ours = Embedis::start(&theirs, &["--appendonly", "yes"]);
    let mut e = Conn::connect(ours.addr()).unwrap();
    assert_eq!(digest(&mut e), expected, "embedis loads Redis's AOF");
    assert_eq!(text(&mut e, &["FCALL", "f", "0"]), ":1\r\n");
    for d in [dir, copy, theirs] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_commands_base_survives_rewrite_restart_and_loadaof() {
    let dir = temp_dir("aof-commands-restart");
    let server = Embedis::start(
        &dir,
        &["--aof-use-rdb-preamble", "no", "--compat-version", "8.2"],
    );
    let mut c = Conn::connect(server.addr()).unwrap();
    fill(&mut c);
    fill_deterministic(&mut c);
    // What only a commands base must get right: big collections in other encodings (more
    // than one batch), hash field TTLs, an expired-looking but live TTL.
    for i in 0..300 {
        let (m, s) = (format!("member:{i}"), format!("{}.25", i * 3));
        text(&mut c, &["SADD", "bigset", &m]);
        text(&mut c, &["ZADD", "bigzset", &s, &m]);
        text(&mut c, &["HSET", "bighash", &m, &s]);
    }
    text(&mut c, &["HSET", "volatile", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(
        text(
            &mut c,
            &[
                "HPEXPIREAT",
                "volatile",
                "4102444800000",
                "FIELDS",
                "1",
                "b"
            ]
        ),
        "*1\r\n:1\r\n"
    );
    // The first base of a server turned to AOF at run time is written as commands too.
    assert_eq!(
        text(&mut c, &["CONFIG", "SET", "appendonly", "yes"]),
        "+OK\r\n"
    );
    wait_rewrite(&mut c);
    let aofdir = dir.join("appendonlydir");
    assert_eq!(base_of(&aofdir).0, "appendonly.aof.1.base.aof");
    text(&mut c, &["SET", "between", "1"]);
    bgrewriteaof(&mut c);
    let (name, base) = base_of(&aofdir);
    assert_eq!(name, "appendonly.aof.2.base.aof");
    assert!(base.starts_with(b"*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n"));
    text(&mut c, &["SET", "after", "1"]);
    let expected = digest(&mut c);
    assert_eq!(text(&mut c, &["DEBUG", "LOADAOF"]), "+OK\r\n");
    assert_eq!(digest(&mut c), expected, "DEBUG LOADAOF loads the same");
    assert_eq!(
        text(
            &mut c,
            &["HPEXPIRETIME", "volatile", "FIELDS", "2", "a", "b"]
        ),
        "*2\r\n:-1\r\n:4102444800000\r\n"
    );
    drop(c);
    server.kill9();
    let server = Embedis::start(&dir, &["--appendonly", "yes", "--compat-version", "8.2"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(digest(&mut c), expected, "a restart loads the same");
    assert_eq!(
        text(&mut c, &["HPEXPIRETIME", "volatile", "FIELDS", "1", "b"]),
        "*1\r\n:4102444800000\r\n"
    );
    // Back to an RDB base: the next rewrite's base is `.base.rdb`, and the old one goes.
    text(&mut c, &["CONFIG", "SET", "aof-use-rdb-preamble", "yes"]);
    assert_eq!(
        text(&mut c, &["CONFIG", "GET", "aof-use-rdb-preamble"]),
        "*2\r\n$20\r\naof-use-rdb-preamble\r\n$3\r\nyes\r\n"
    );
    bgrewriteaof(&mut c);
    let (name, base) = base_of(&aofdir);
    assert_eq!(name, "appendonly.aof.3.base.rdb");
    assert!(base.starts_with(b"REDIS"));
    assert!(!aofdir.join("appendonly.aof.2.base.aof").exists());
    drop(c);
    server.kill9();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_new_aof_at_start_has_a_commands_base_and_a_truncated_base_stops_the_load() {
    let dir = temp_dir("aof-commands-start");
    let aofdir = dir.join("appendonlydir");
    let server = Embedis::start(
        &dir,
        &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"],
    );
    // An empty dataset's base: an empty file of commands, as Redis writes it.
    assert_eq!(
        base_of(&aofdir),
        ("appendonly.aof.1.base.aof".to_string(), Vec::new())
    );
    let mut c = Conn::connect(server.addr()).unwrap();
    for i in 0..5 {
        text(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    bgrewriteaof(&mut c);
    let (name, base) = base_of(&aofdir);
    assert_eq!(name, "appendonly.aof.2.base.aof");
    assert_eq!(base.windows(9).filter(|w| w == b"$3\r\nSET\r\n").count(), 5);
    drop(c);
    server.kill9();
    // A base cut in the middle of a command: the base is not the last file, so the load fails
    // whatever aof-load-truncated says, as in Redis.
    std::fs::OpenOptions::new()
        .write(true)
        .open(aofdir.join(&name))
        .unwrap()
        .set_len(base.len() as u64 - 3)
        .unwrap();
    let (failed, output) = start_fails(&dir, &["--appendonly", "yes"]);
    assert!(failed, "{output}");
    assert!(
        output.contains("Fatal error: the truncated file is not the last file"),
        "{output}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn aof_timestamp_annotations_are_written_and_skipped_on_load() {
    let dir = temp_dir("aof-timestamps");
    let aofdir = dir.join("appendonlydir");
    let server = Embedis::start(
        &dir,
        &[
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
            "--aof-timestamp-enabled",
            "yes",
            "--appendfsync",
            "always",
        ],
    );
    let mut c = Conn::connect(server.addr()).unwrap();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    text(&mut c, &["SET", "a", "1"]);
    text(&mut c, &["SET", "b", "2"]);
    // A new second: the next write is annotated again.
    std::thread::sleep(Duration::from_millis(1100));
    text(&mut c, &["SET", "c", "3"]);
    let incr = String::from_utf8(std::fs::read(aofdir.join("appendonly.aof.1.incr.aof")).unwrap())
        .unwrap();
    let stamps: Vec<u64> = incr
        .lines()
        .filter_map(|l| l.strip_prefix("#TS:"))
        .map(|t| t.parse().unwrap())
        .collect();
    // Two seconds at least (three if the first two writes straddle a second), each annotated
    // once, in order.
    assert!((2..=3).contains(&stamps.len()), "{incr}");
    assert!(stamps[0] >= before, "{incr}");
    assert!(stamps.windows(2).all(|w| w[1] > w[0]), "{incr}");
    // The annotation comes before the SELECT of the first command.
    assert!(incr.starts_with("#TS:"), "{incr}");
    assert!(incr.contains("\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n"));
    // A commands base begins with one too.
    bgrewriteaof(&mut c);
    let (_, base) = base_of(&aofdir);
    assert!(
        base.starts_with(b"#TS:"),
        "{}",
        String::from_utf8_lossy(&base)
    );
    text(&mut c, &["SET", "d", "4"]);
    // redis-check-aof reads the annotations (when it is installed).
    if let Ok(check) = Command::new("redis-check-aof")
        .arg(aofdir.join("appendonly.aof.manifest"))
        .output()
    {
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stdout)
        );
    }
    let expected = digest(&mut c);
    assert_eq!(text(&mut c, &["DEBUG", "LOADAOF"]), "+OK\r\n");
    assert_eq!(digest(&mut c), expected);
    // Off at run time: no more annotations.
    text(&mut c, &["CONFIG", "SET", "aof-timestamp-enabled", "no"]);
    std::thread::sleep(Duration::from_millis(1100));
    bgrewriteaof(&mut c);
    text(&mut c, &["SET", "e", "5"]);
    let (_, base) = base_of(&aofdir);
    assert!(base.starts_with(b"*2\r\n$6\r\nSELECT"));
    let expected = digest(&mut c);
    drop(c);
    server.kill9();
    let server = Embedis::start(&dir, &["--appendonly", "yes"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(digest(&mut c), expected);
    drop(c);
    server.kill9();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Hash field TTLs are Redis 7.4+: compared with Redis 8.2's commands base (per field `HMSET`
/// and `HPEXPIREAT … FIELDS 1`), in both compact (listpackex, fields in deadline order) and
/// table encodings, and loaded by Redis 8.2 to the same TTLs.
#[test]
fn a_commands_base_with_field_ttls_matches_redis_8() {
    let Some(redis) = RedisServer::start_redis8(
        "aof-commands-base-hfe",
        &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"],
    ) else {
        return;
    };
    let dir = temp_dir("aof-commands-base-hfe");
    let ours = Embedis::start(
        &dir,
        &[
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
            "--compat-version",
            "8.2",
        ],
    );
    let (mut r, mut e) = (
        Conn::connect(redis.addr()).unwrap(),
        Conn::connect(ours.addr()).unwrap(),
    );
    for c in [&mut r, &mut e] {
        text(c, &["HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"]);
        text(c, &["HPEXPIREAT", "h", "4102444800500", "FIELDS", "1", "c"]);
        text(c, &["HPEXPIREAT", "h", "4102444800100", "FIELDS", "1", "a"]);
        // One key per database: Redis walks a database in its hash table's (seeded) order.
        text(c, &["SELECT", "1"]);
        text(c, &["HSET", "plain", "x", "1", "y", "2"]);
        // Left out: a hash whose every TTL was removed by HPERSIST. Redis 8.2 still writes it
        // field by field (its minimum deadline is left stale); we write it in batches, which
        // loads to the same hash.
        text(c, &["SELECT", "3"]);
        let fields: Vec<String> = (0..200).map(|i| format!("field{i}")).collect();
        for f in &fields {
            text(c, &["HSET", "big", f, "v"]);
        }
        text(
            c,
            &[
                "HPEXPIREAT",
                "big",
                "4102444800100",
                "FIELDS",
                "1",
                "field7",
            ],
        );
        text(c, &["SELECT", "0"]);
        bgrewriteaof(c);
    }
    let (_, ours_base) = base_of(&dir.join("appendonlydir"));
    let (_, theirs) = base_of(&redis.dir().join("appendonlydir"));
    let annotated = ours_base.windows(10).filter(|w| w == b"HPEXPIREAT").count();
    assert_eq!(annotated, 3, "{}", String::from_utf8_lossy(&ours_base));
    assert!(
        ours_base == theirs,
        "the bases differ:\n--- ours\n{}\n--- redis 8\n{}",
        String::from_utf8_lossy(&ours_base),
        String::from_utf8_lossy(&theirs)
    );
    drop(e);
    ours.kill9();
    let _ = std::fs::remove_dir_all(&dir);
}

/// FLUSHALL with save points set saves the emptied dataset, which resets `dirty`; it must reach
/// the AOF all the same (Redis forces its propagation), or a restart replays the keys it removed.
#[test]
fn flushall_with_save_points_reaches_the_aof() {
    let dir = temp_dir("aof-flushall-save-points");
    let args = ["--appendonly", "yes", "--save", "3600 1"];
    let server = Embedis::start(&dir, &args);
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(text(&mut c, &["SET", "before", "1"]), "+OK\r\n");
    assert_eq!(text(&mut c, &["FLUSHALL"]), "+OK\r\n");
    assert_eq!(text(&mut c, &["SET", "after", "1"]), "+OK\r\n");
    drop(c);
    server.kill9();
    let server = Embedis::start(&dir, &args);
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(text(&mut c, &["EXISTS", "before", "after"]), ":1\r\n");
    assert_eq!(text(&mut c, &["EXISTS", "after"]), ":1\r\n");
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An AOF loads as Redis loads it: while loading nothing counts as expired (a `SET … PXAT` in
/// the past is kept), so a server restarted as a replica keeps the keys whose TTL passed while
/// it was down, for its primary's DELs to remove (Redis's cluster suite, 14-consistency-check).
#[test]
fn a_replica_loading_its_aof_keeps_keys_whose_ttl_passed() {
    let dir = temp_dir("aof-expired-on-replica");
    let server = Embedis::start(&dir, &["--appendonly", "yes", "--appendfsync", "always"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(text(&mut c, &["SET", "kept", "1"]), "+OK\r\n");
    for key in ["v1", "v2", "v3"] {
        assert_eq!(text(&mut c, &["SET", key, "x", "PX", "300"]), "+OK\r\n");
    }
    server.kill9();
    std::thread::sleep(Duration::from_millis(400));
    // No primary answers at port 1: the replica stays unsynced, its data as loaded.
    let replica = Embedis::start(&dir, &["--appendonly", "yes", "--replicaof", "127.0.0.1 1"]);
    let mut c = Conn::connect(replica.addr()).unwrap();
    assert_eq!(text(&mut c, &["DBSIZE"]), ":4\r\n");
    // Its clients see the expired keys as gone, as on any replica.
    assert_eq!(text(&mut c, &["GET", "v1"]), "$-1\r\n");
    drop(replica);
    // A primary loads them too (Redis deletes them after the load, by expiry).
    let primary = Embedis::start(&dir, &["--appendonly", "yes"]);
    let mut c = Conn::connect(primary.addr()).unwrap();
    assert_eq!(text(&mut c, &["GET", "v1"]), "$-1\r\n");
    assert_eq!(text(&mut c, &["GET", "kept"]), "$1\r\n1\r\n");
}

/// Writes an AOF directory of one incremental file holding `commands` (no base), as Redis's
/// tests make one by hand.
fn write_incr_only_aof(dir: &Path, commands: &[&[&str]]) {
    let aof_dir = dir.join("appendonlydir");
    std::fs::create_dir_all(&aof_dir).unwrap();
    std::fs::write(
        aof_dir.join("appendonly.aof.manifest"),
        "file appendonly.aof.1.incr.aof seq 1 type i\n",
    )
    .unwrap();
    let mut file = Vec::new();
    for args in commands {
        file.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for arg in *args {
            file.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
        }
    }
    std::fs::write(aof_dir.join("appendonly.aof.1.incr.aof"), file).unwrap();
}

/// What Redis 7.0.15's integration/aof checks of a replayed file: a PEXPIREAT in the past does
/// not delete while loading (the key keeps the old deadline, and a later RPUSH appends to it),
/// so the list is gone once loaded, not a fresh one-element list; and a read-only replica obeys
/// the writes of its own AOF's scripts.
#[test]
fn an_aof_replays_past_deadlines_and_a_read_only_replicas_scripts_as_redis() {
    let dir = temp_dir("aof-past-deadline");
    let list: &[&[&str]] = &[
        &["RPUSH", "list", "foo"],
        &["PEXPIREAT", "list", "1000"],
        &["RPUSH", "list", "bar"],
    ];
    write_incr_only_aof(&dir, list);
    let server = Embedis::start(&dir, &["--appendonly", "yes"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(text(&mut c, &["LLEN", "list"]), ":0\r\n");
    drop(server);

    let dir = temp_dir("aof-replica-scripts");
    let scripts: &[&[&str]] = &[
        &["SELECT", "9"],
        &["EVAL", "redis.call('set',KEYS[1],'100')", "1", "foo"],
        &["EVAL", "redis.call('incr',KEYS[1])", "1", "foo"],
        &["EVAL", "redis.call('incr',KEYS[1])", "1", "foo"],
    ];
    write_incr_only_aof(&dir, scripts);
    let extra = [
        "--appendonly",
        "yes",
        "--replica-read-only",
        "yes",
        "--replicaof",
        "127.0.0.1 1",
    ];
    let replica = Embedis::start(&dir, &extra);
    let mut c = Conn::connect(replica.addr()).unwrap();
    text(&mut c, &["SELECT", "9"]);
    assert_eq!(text(&mut c, &["GET", "foo"]), "$3\r\n102\r\n");
    // Its clients' writes are still refused.
    assert!(text(&mut c, &["EVAL", "redis.call('incr','foo')", "0"]).contains("READONLY"));
}

/// A script from the AOF that runs past `busy-reply-threshold` during DEBUG LOADAOF: other
/// clients are answered LOADING (Redis's loading gate comes before its busy one), and the
/// script's write is there afterwards.
#[test]
fn a_slow_script_in_a_loading_aof_answers_loading() {
    let dir = temp_dir("aof-slow-script");
    let extra = ["--appendonly", "yes", "--lua-time-limit", "1"];
    let server = Embedis::start(
        &dir,
        &[&extra[..], &["--aof-use-rdb-preamble", "no"]].concat(),
    );
    let slow =
        "redis.call('set',KEYS[1],'y') for i=1,3000000 do redis.call('ping') end return 'ok'";
    let incr = dir.join("appendonlydir/appendonly.aof.1.incr.aof");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&incr)
        .unwrap();
    write!(file, "*2\r\n$6\r\nSELECT\r\n$1\r\n9\r\n").unwrap();
    write!(
        file,
        "*4\r\n$4\r\nEVAL\r\n${}\r\n{slow}\r\n$1\r\n1\r\n$1\r\nx\r\n",
        slow.len()
    )
    .unwrap();
    drop(file);
    let addr = server.addr();
    let loader = std::thread::spawn(move || {
        let mut c = Conn::connect(addr).unwrap();
        text(&mut c, &["DEBUG", "LOADAOF"])
    });
    let mut c = Conn::connect(addr).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let refused = loop {
        let reply = text(&mut c, &["PING"]);
        if reply != "+PONG\r\n" || Instant::now() > deadline {
            break reply;
        }
    };
    assert_eq!(
        refused,
        "-LOADING Redis is loading the dataset in memory\r\n"
    );
    assert_eq!(loader.join().unwrap(), "+OK\r\n");
    text(&mut c, &["SELECT", "9"]);
    assert_eq!(text(&mut c, &["GET", "x"]), "$1\r\ny\r\n");
}

/// DEBUG AOF-FLUSH-SLEEP makes each write to the AOF wait (a reply leaves only after its write,
/// so the write's own reply waits); DEBUG REPLICATE sends a command to the replicas alone.
#[test]
fn debug_aof_flush_sleep_and_replicate() {
    let dir = temp_dir("aof-flush-sleep");
    let primary = Embedis::start(&dir, &["--appendonly", "yes"]);
    let mut c = Conn::connect(primary.addr()).unwrap();
    assert_eq!(
        text(&mut c, &["DEBUG", "AOF-FLUSH-SLEEP", "300000"]),
        "+OK\r\n"
    );
    let started = Instant::now();
    assert_eq!(text(&mut c, &["SET", "k", "v"]), "+OK\r\n");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(text(&mut c, &["DEBUG", "AOF-FLUSH-SLEEP", "0"]), "+OK\r\n");

    let replica_dir = temp_dir("debug-replicate");
    let primary_at = format!("127.0.0.1 {}", primary.port);
    let replica = Embedis::start(&replica_dir, &["--replicaof", &primary_at]);
    let mut r = Conn::connect(replica.addr()).unwrap();
    let synced = |r: &mut Conn| text(r, &["GET", "k"]) == "$1\r\nv\r\n";
    let deadline = Instant::now() + Duration::from_secs(10);
    while !synced(&mut r) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(synced(&mut r), "the replica never synced");
    assert_eq!(
        text(&mut c, &["DEBUG", "REPLICATE", "SET", "only-there", "1"]),
        "+OK\r\n"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while text(&mut r, &["GET", "only-there"]) != "$1\r\n1\r\n" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(text(&mut r, &["GET", "only-there"]), "$1\r\n1\r\n");
    assert_eq!(text(&mut c, &["GET", "only-there"]), "$-1\r\n");
}

/// A single-file AOF of Redis 6 (`appendonly.aof` in `dir`) is moved into a new AOF directory
/// as its base, as Redis 7.0.15 upgrades one, and loads; so does an upgrade interrupted after
/// the manifest was written and before the file moved. A manifest naming a base that exists
/// nowhere stops the start with Redis's message.
#[test]
fn a_redis_6_single_file_aof_is_upgraded_into_a_directory() {
    let old_aof =
        "*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$2\r\nv1\r\n*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$2\r\nv2\r\n";
    let expected_manifest =
        "file appendonly.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n";
    for interrupted in [false, true] {
        let dir = temp_dir(&format!("aof-upgrade-{interrupted}"));
        std::fs::write(dir.join("appendonly.aof"), old_aof).unwrap();
        if interrupted {
            std::fs::create_dir_all(dir.join("appendonlydir")).unwrap();
            std::fs::write(
                dir.join("appendonlydir/appendonly.aof.manifest"),
                "file appendonly.aof seq 1 type b\n",
            )
            .unwrap();
        }
        let server = Embedis::start(&dir, &["--appendonly", "yes"]);
        let mut c = Conn::connect(server.addr()).unwrap();
        assert_eq!(text(&mut c, &["GET", "k2"]), "$2\r\nv2\r\n");
        assert!(!dir.join("appendonly.aof").exists(), "the old file moved");
        assert!(dir.join("appendonlydir/appendonly.aof").exists());
        let manifest = std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest"));
        assert_eq!(manifest.unwrap(), expected_manifest);
        assert_eq!(text(&mut c, &["SET", "k3", "v3"]), "+OK\r\n");
        drop(server);
        let server = Embedis::start(&dir, &["--appendonly", "yes"]);
        let mut c = Conn::connect(server.addr()).unwrap();
        assert_eq!(
            text(&mut c, &["MGET", "k1", "k3"]),
            "*2\r\n$2\r\nv1\r\n$2\r\nv3\r\n"
        );
    }
    let dir = temp_dir("aof-upgrade-missing");
    std::fs::create_dir_all(dir.join("appendonlydir")).unwrap();
    std::fs::write(
        dir.join("appendonlydir/appendonly.aof.manifest"),
        "file appendonly.aof seq 1 type b\n",
    )
    .unwrap();
    let (failed, output) = start_fails(&dir, &["--appendonly", "yes"]);
    assert!(failed, "{output}");
    // Logged once (Redis's harness counts log lines); the exit repeats it on stderr.
    let said = "# Unable to obtain the AOF file appendonly.aof length. stat: No such file";
    assert_eq!(output.matches(said).count(), 1, "{output}");
}

/// A write's reply leaves only after the write is in the AOF, also when the client's earlier
/// output is stuck (a big GET the client has not read yet) and the write runs meanwhile
/// (Redis 7.0.15's "AOF fsync always barrier issue", with DEBUG AOF-FLUSH-SLEEP widening the
/// window between the write and its reply).
#[test]
fn a_write_run_behind_stuck_output_is_in_the_aof_before_its_reply() {
    let dir = temp_dir("aof-barrier");
    let server = Embedis::start(&dir, &["--appendonly", "yes", "--appendfsync", "always"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    let incr = dir.join("appendonlydir/appendonly.aof.1.incr.aof");
    for size in [10_000_000usize, 12_345_678, 14_000_001] {
        assert_eq!(text(&mut c, &["DEBUG", "AOF-FLUSH-SLEEP", "0"]), "+OK\r\n");
        text(&mut c, &["DEL", "x"]);
        text(&mut c, &["SETRANGE", "x", &size.to_string(), "x"]);
        assert_eq!(
            text(&mut c, &["DEBUG", "AOF-FLUSH-SLEEP", "500000"]),
            "+OK\r\n"
        );
        let before = std::fs::metadata(&incr).unwrap().len();
        support::send(&mut c, &["GET", "x"]);
        std::thread::sleep(Duration::from_millis(20));
        support::send(&mut c, &["INCR", "new_value"]);
        c.read_reply().unwrap();
        c.read_reply().unwrap();
        let after = std::fs::metadata(&incr).unwrap().len();
        assert_ne!(
            before, after,
            "INCR's reply came before its write reached the AOF"
        );
    }
}

/// `CONFIG SET appendonly yes` inside a transaction schedules the first rewrite for the tick,
/// with Redis's log line, rather than starting it inside EXEC (Redis's unit/multi "MULTI with
/// config set appendonly" found the line missing); the AOF then holds the transaction's write.
#[test]
fn appendonly_turned_on_inside_exec_is_scheduled() {
    let dir = temp_dir("aof-in-exec");
    let log = dir.join("server.log");
    let server = Embedis::start(&dir, &["--logfile", log.to_str().unwrap()]);
    let mut c = Conn::connect(server.addr()).unwrap();
    let forks = |c: &mut Conn| support::field(&text(c, &["INFO", "stats"]), "total_forks");
    let before: u64 = forks(&mut c).parse().unwrap();
    text(&mut c, &["MULTI"]);
    text(&mut c, &["SET", "foo", "bar"]);
    text(&mut c, &["CONFIG", "SET", "appendonly", "yes"]);
    assert_eq!(text(&mut c, &["EXEC"]), "*2\r\n+OK\r\n+OK\r\n");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("AOF was enabled during a transaction. An AOF background was scheduled to start when possible."),
        "{logged}"
    );
    wait_rewrite(&mut c);
    assert!(forks(&mut c).parse::<u64>().unwrap() > before);
    text(&mut c, &["DEBUG", "LOADAOF"]);
    assert_eq!(text(&mut c, &["GET", "foo"]), "$3\r\nbar\r\n");
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `redis.set_repl` decides where a script's commands go: REPL_AOF ones reach the AOF (and not
/// the replicas, which tests/it/propagation.rs compares with Redis), REPL_NONE ones neither;
/// reloading the AOF shows what it got (Redis's scripting suite: "Test selective replication
/// of certain Redis commands from Lua").
#[test]
fn a_scripts_set_repl_chooses_what_reaches_the_aof() {
    let dir = temp_dir("aof-set-repl");
    let server = Embedis::start(
        &dir,
        &["--appendonly", "yes", "--enable-debug-command", "yes"],
    );
    let mut c = Conn::connect(server.addr()).unwrap();
    let script = "redis.call('set', 'a', '1'); redis.set_repl(redis.REPL_NONE); \
                  redis.call('set', 'b', '2'); redis.set_repl(redis.REPL_AOF); \
                  redis.call('set', 'c', '3'); redis.set_repl(redis.REPL_REPLICA); \
                  redis.call('set', 'd', '4')";
    assert_eq!(text(&mut c, &["EVAL", script, "0"]), "$-1\r\n");
    // The next script starts propagating everywhere again.
    assert_eq!(
        text(&mut c, &["EVAL", "redis.call('set', 'e', '5')", "0"]),
        "$-1\r\n"
    );
    let all = "*5\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n$1\r\n5\r\n";
    assert_eq!(text(&mut c, &["MGET", "a", "b", "c", "d", "e"]), all);
    assert_eq!(text(&mut c, &["DEBUG", "LOADAOF"]), "+OK\r\n");
    assert_eq!(
        text(&mut c, &["MGET", "a", "b", "c", "d", "e"]),
        "*5\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n$-1\r\n$1\r\n5\r\n"
    );
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
