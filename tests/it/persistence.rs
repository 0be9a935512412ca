//! RDB persistence end to end: files embedis writes load into redis-server 7.0 with the same
//! DEBUG DIGEST and pass redis-check-rdb, files redis-server writes load into embedis; BGSAVE runs
//! while clients write and saves the dataset as it was when it answered; a restart of a server
//! with a directory reloads its file; a failed save refuses writes with `-MISCONF` until a save
//! succeeds, losing nothing acknowledged; a file with a bad checksum is refused at start with
//! Redis's message.
//!
//! The redis-server parts are skipped loudly when it is missing, unless EMBEDIS_REQUIRE_REDIS=1.

use crate::support;
use support::{digest, temp_dir, text};

use std::path::Path;
use std::time::{Duration, Instant};
use support::{Conn, RedisServer};

const EMBEDIS: &str = env!("CARGO_BIN_EXE_embedis-server");

/// Every type in its small and big encodings, with TTLs, over three databases, plus a
/// function library.
fn fill(c: &mut Conn) {
    let library = "#!lua name=persistlib\nredis.register_function('pf', function() return 1 end)";
    assert_eq!(
        text(c, &["FUNCTION", "LOAD", library]),
        "$10\r\npersistlib\r\n"
    );
    for db in ["0", "3", "9"] {
        text(c, &["SELECT", db]);
        text(c, &["SET", "int", "12345"]);
        text(c, &["SET", "neg", "-7"]);
        text(c, &["SET", "small", "hello"]);
        let long = "compressible ".repeat(40);
        text(c, &["SET", "long", &long]);
        text(c, &["SET", "ttl", "v", "PX", "900000"]);
        text(c, &["APPEND", "raw", "appended"]);
        text(c, &["RPUSH", "list", "a", "b", "1", "2"]);
        for i in 0..300 {
            let v = format!("element-{i}-{}", "x".repeat(i % 50));
            text(c, &["RPUSH", "biglist", &v]);
            text(c, &["SADD", "bigset", &format!("m{i}")]);
            text(c, &["SADD", "bigintset", &(i * 1000).to_string()]);
            text(c, &["SADD", "bigintset", &(i * 1000 + 1).to_string()]);
            text(
                c,
                &["HSET", "bighash", &format!("f{i}"), &"v".repeat(i % 80)],
            );
            text(
                c,
                &["ZADD", "bigzset", &format!("{}.25", i), &format!("m{i}")],
            );
            text(c, &["PFADD", "hll", &format!("e{i}")]);
        }
        text(c, &["SADD", "intset", "1", "2", "-3", "70000"]);
        text(c, &["SADD", "set", "a", "b", "c"]);
        text(c, &["HSET", "hash", "a", "1", "b", "2"]);
        text(c, &["ZADD", "zset", "1", "a", "2.5", "b", "-inf", "c"]);
        text(c, &["EXPIRE", "bighash", "10000"]);
        for i in 0..120 {
            text(
                c,
                &[
                    "XADD",
                    "stream",
                    &format!("{}-1", i + 1),
                    "f",
                    &i.to_string(),
                ],
            );
        }
        text(c, &["XDEL", "stream", "5-1"]);
        text(c, &["XGROUP", "CREATE", "stream", "g1", "0"]);
        text(
            c,
            &[
                "XREADGROUP",
                "GROUP",
                "g1",
                "alice",
                "COUNT",
                "3",
                "STREAMS",
                "stream",
                ">",
            ],
        );
    }
    text(c, &["SELECT", "0"]);
}

fn start_embedis(test: &str, extra: &[&str]) -> RedisServer {
    // As Redis 7.0, the redis-server these tests exchange files and keys with.
    let mut args = vec!["--enable-debug-command", "yes", "--compat-version", "7.0"];
    args.extend_from_slice(extra);
    RedisServer::start_binary(EMBEDIS, test, &args)
}

#[test]
fn rdb_files_interoperate_with_redis() {
    let Some(redis) = RedisServer::start("persistence", &["--enable-debug-command", "yes"]) else {
        return;
    };
    let ours = start_embedis("persistence", &[]);
    let (mut r, mut e) = (
        Conn::connect(redis.addr()).unwrap(),
        Conn::connect(ours.addr()).unwrap(),
    );
    fill(&mut r);
    fill(&mut e);
    let expected = digest(&mut r);
    assert_eq!(digest(&mut e), expected, "same data, same digest");

    // Ours → Redis.
    assert_eq!(text(&mut e, &["SAVE"]), "+OK\r\n");
    let ours_file = ours.dir().join("dump.rdb");
    let check = std::process::Command::new("redis-check-rdb")
        .arg(&ours_file)
        .output()
        .expect("redis-check-rdb runs");
    assert!(
        check.status.success(),
        "redis-check-rdb: {}",
        String::from_utf8_lossy(&check.stdout)
    );
    std::fs::copy(&ours_file, redis.dir().join("dump.rdb")).unwrap();
    text(&mut r, &["FUNCTION", "FLUSH"]);
    assert_eq!(text(&mut r, &["DEBUG", "RELOAD", "NOSAVE"]), "+OK\r\n");
    assert_eq!(digest(&mut r), expected, "redis-server loads our file");
    assert_eq!(text(&mut r, &["FCALL", "pf", "0"]), ":1\r\n");

    // Redis → ours.
    text(&mut e, &["FLUSHALL"]);
    assert_eq!(text(&mut r, &["SAVE"]), "+OK\r\n");
    std::fs::copy(redis.dir().join("dump.rdb"), &ours_file).unwrap();
    assert_eq!(text(&mut e, &["DEBUG", "RELOAD", "NOSAVE"]), "+OK\r\n");
    assert_eq!(
        digest(&mut e),
        expected,
        "embedis loads redis-server's file"
    );
    assert_eq!(text(&mut e, &["FCALL", "pf", "0"]), ":1\r\n");
    // Every key has the encoding Redis gives it after loading the same file.
    for key in [
        "int",
        "neg",
        "small",
        "long",
        "ttl",
        "raw",
        "list",
        "biglist",
        "bigset",
        "bigintset",
        "bighash",
        "bigzset",
        "hll",
        "intset",
        "set",
        "hash",
        "zset",
        "stream",
    ] {
        assert_eq!(
            text(&mut e, &["OBJECT", "ENCODING", key]),
            text(&mut r, &["OBJECT", "ENCODING", key]),
            "{key}"
        );
    }
    let ttl = text(&mut e, &["PTTL", "ttl"]);
    assert!(ttl.starts_with(":8") || ttl.starts_with(":9"), "{ttl}");
}

/// BGSAVE answers at once, runs while clients write (INFO shows it), refuses a second save,
/// and saves the dataset as it was when it answered.
#[test]
fn bgsave_runs_while_clients_write_and_keeps_its_point_in_time() {
    let Some(redis) = RedisServer::start("persistence-bgsave", &["--enable-debug-command", "yes"])
    else {
        return;
    };
    let ours = start_embedis("persistence-bgsave", &[]);
    let mut e = Conn::connect(ours.addr()).unwrap();
    for i in 0..3000 {
        text(
            &mut e,
            &["SET", &format!("key:{i}"), &format!("before-{i}")],
        );
    }
    text(&mut e, &["RPUSH", "queue", "a", "b", "c"]);
    let expected = digest(&mut e);
    // Slow the writer so that the save is still running while we write.
    text(&mut e, &["CONFIG", "SET", "rdb-key-save-delay", "200"]);
    assert_eq!(text(&mut e, &["BGSAVE"]), "+Background saving started\r\n");
    let info = text(&mut e, &["INFO", "persistence"]);
    assert!(info.contains("rdb_bgsave_in_progress:1"), "{info}");
    assert!(info.contains("current_save_keys_total:3001"), "{info}");
    assert_eq!(
        text(&mut e, &["SAVE"]),
        "-ERR Background save already in progress\r\n"
    );
    assert_eq!(
        text(&mut e, &["BGSAVE"]),
        "-ERR Background save already in progress\r\n"
    );
    for i in (0..3000).step_by(3) {
        let key = format!("key:{i}");
        assert_eq!(text(&mut e, &["SET", &key, "after"]), "+OK\r\n");
        if i % 2 == 0 {
            text(&mut e, &["DEL", &format!("key:{}", i + 1)]);
        }
    }
    text(&mut e, &["LPOP", "queue"]);
    text(&mut e, &["SET", "new-key", "born during the save"]);
    // The keys changed before the save reached them kept copies: the save's counterpart of a
    // Redis child's copy-on-write (integration/rdb's "child sending info" watches it grow).
    let info = text(&mut e, &["INFO", "persistence"]);
    if support::field(&info, "rdb_bgsave_in_progress") == "1" {
        let cow: u64 = support::field(&info, "current_cow_size").parse().unwrap();
        assert!(cow > 1000, "{info}");
        let perc: f64 = support::field(&info, "current_fork_perc").parse().unwrap();
        assert!(perc > 0.0 && perc <= 100.0, "{info}");
    }
    let changed = digest(&mut e);
    assert_ne!(changed, expected);
    let info = wait_bgsave_done(&mut e);
    assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
    let last_cow: u64 = support::field(&info, "rdb_last_cow_size").parse().unwrap();
    assert!(last_cow > 1000, "{info}");
    assert_eq!(support::field(&info, "current_cow_size"), "0", "{info}");
    // The changes made during the save are still to be saved.
    let info = text(&mut e, &["INFO", "persistence"]);
    assert!(
        !info.contains("rdb_changes_since_last_save:0\r\n"),
        "{info}"
    );
    let mut r = Conn::connect(redis.addr()).unwrap();
    std::fs::copy(ours.dir().join("dump.rdb"), redis.dir().join("dump.rdb")).unwrap();
    assert_eq!(text(&mut r, &["DEBUG", "RELOAD", "NOSAVE"]), "+OK\r\n");
    assert_eq!(
        digest(&mut r),
        expected,
        "the file holds the data as of BGSAVE"
    );
    assert_eq!(digest(&mut e), changed, "the server kept every write");
}

#[test]
fn a_server_with_a_directory_reloads_its_file_on_restart() {
    let dir = temp_dir("persistence-restart");
    let mut server = support::builder()
        .dir(&dir)
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    fill(&mut c);
    let before = digest(&mut c);
    drop(c);
    // Stopping saves (save points are set), starting loads.
    server.restart().unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(digest(&mut c), before);
    assert!(dir.join("dump.rdb").exists());
    drop(c);
    drop(server);

    // Without save points only SAVE keeps data: what was written after it is gone on restart.
    let dir = temp_dir("persistence-restart-nosave");
    let mut server = support::builder()
        .dir(&dir)
        .config("save", "")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    text(&mut c, &["SET", "kept", "1"]);
    assert_eq!(text(&mut c, &["SAVE"]), "+OK\r\n");
    text(&mut c, &["SET", "lost", "1"]);
    drop(c);
    server.restart().unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(text(&mut c, &["EXISTS", "kept", "lost"]), ":1\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Stopping while a BGSAVE and an AOF rewrite run stops both as Redis kills its children: no
/// temporary file is left behind, and the restart has every write (the AOF's increment opened by
/// the abandoned rewrite is still in the manifest).
#[test]
fn stopping_during_a_bgsave_and_a_rewrite_leaves_no_temporary_file() {
    let dir = temp_dir("persistence-stop-mid-save");
    // No save points: the stop's final save would obey rdb-key-save-delay too (a key a
    // second, 200 s), as Redis's SHUTDOWN save does; the AOF keeps the data.
    let mut server = support::builder()
        .dir(&dir)
        .config("save", "")
        .unwrap()
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("appendonly", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    // Written, not DEBUG POPULATE'd: populated keys do not reach the AOF, as in Redis.
    let pairs: Vec<String> = (0..200)
        .flat_map(|i| [format!("key:{i}"), format!("v{i}")])
        .collect();
    let mut mset = vec!["MSET"];
    mset.extend(pairs.iter().map(String::as_str));
    assert_eq!(text(&mut c, &mset), "+OK\r\n");
    // A key a second keeps both saves running until the server stops.
    text(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "1000000"]);
    assert!(text(&mut c, &["BGREWRITEAOF"]).starts_with("+Background append only file"));
    assert!(text(&mut c, &["BGSAVE", "SCHEDULE"]).starts_with("+Background saving"));
    text(&mut c, &["SET", "during", "1"]);
    let before = digest(&mut c);
    let temporary = |dir: &Path| -> Vec<String> {
        let mut found = Vec::new();
        for d in [dir.to_path_buf(), dir.join("appendonlydir")] {
            for entry in std::fs::read_dir(d).unwrap() {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                if name.starts_with("temp-") {
                    found.push(name);
                }
            }
        }
        found
    };
    assert!(
        !temporary(&dir).is_empty(),
        "the rewrite writes a temporary file"
    );
    drop(c);
    server.restart().unwrap();
    assert_eq!(temporary(&dir), Vec::<String>::new());
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(digest(&mut c), before);
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

fn wait_bgsave_done(c: &mut Conn) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = text(c, &["INFO", "persistence"]);
        if info.contains("rdb_bgsave_in_progress:0") {
            return info;
        }
        assert!(Instant::now() < deadline, "BGSAVE did not finish");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_failed_save_refuses_writes_until_a_save_succeeds() {
    let dir = temp_dir("persistence-misconf");
    let mut server = support::builder()
        .dir(&dir)
        .config("enable-protected-configs", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    text(&mut c, &["SET", "before", "1"]);
    // No file can be created under /proc: the save fails.
    assert_eq!(text(&mut c, &["CONFIG", "SET", "dir", "/proc"]), "+OK\r\n");
    assert_eq!(text(&mut c, &["BGSAVE"]), "+Background saving started\r\n");
    let info = wait_bgsave_done(&mut c);
    assert!(info.contains("rdb_last_bgsave_status:err"), "{info}");
    let misconf = "-MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.\r\n";
    assert_eq!(text(&mut c, &["SET", "during", "1"]), misconf);
    assert_eq!(text(&mut c, &["PING"]), misconf);
    assert_eq!(text(&mut c, &["GET", "before"]), "$1\r\n1\r\n");
    let script = text(&mut c, &["EVAL", "return redis.call('SET','x','1')", "0"]);
    assert!(script.starts_with("-MISCONF"), "{script}");
    // Without the option, writes go on.
    text(
        &mut c,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"],
    );
    assert_eq!(text(&mut c, &["SET", "during", "1"]), "+OK\r\n");
    text(
        &mut c,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"],
    );
    // A save that succeeds lifts the refusal; everything acknowledged is on disk after restart.
    text(&mut c, &["CONFIG", "SET", "dir", dir.to_str().unwrap()]);
    assert_eq!(text(&mut c, &["BGSAVE"]), "+Background saving started\r\n");
    let info = wait_bgsave_done(&mut c);
    assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
    assert_eq!(text(&mut c, &["SET", "after", "1"]), "+OK\r\n");
    drop(c);
    server.restart().unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(
        text(&mut c, &["EXISTS", "before", "during", "after"]),
        ":3\r\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `embedis-server` in `dir`: (exited by itself with success, output). One that is still
/// running after ten seconds is killed and counts as started.
pub fn run_binary(dir: &Path, args: &[&str]) -> (bool, String) {
    use std::process::Stdio;
    let port = support::free_port().to_string();
    let mut child = std::process::Command::new(EMBEDIS)
        .args(["--port", &port, "--dir", dir.to_str().unwrap()])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().unwrap();
    let mut all = String::from_utf8_lossy(&output.stdout).into_owned();
    all.push_str(&String::from_utf8_lossy(&output.stderr));
    (status.is_some_and(|s| s.success()), all)
}

#[test]
fn a_file_with_a_bad_checksum_is_refused_at_start() {
    let dir = temp_dir("persistence-checksum");
    // Make a good file with a SAVE, then break one byte of a value.
    let server = support::builder().dir(&dir).start().unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    text(&mut c, &["SET", "key", "a value long enough to find"]);
    assert_eq!(text(&mut c, &["SAVE"]), "+OK\r\n");
    drop(c);
    drop(server);
    let path = dir.join("dump.rdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(5)
        .position(|w| w == b"value")
        .expect("the value is in the file");
    bytes[at] = b'V';
    std::fs::write(&path, &bytes).unwrap();
    let (exited_ok, output) = run_binary(&dir, &[]);
    assert!(!exited_ok, "the server must not start: {output}");
    assert!(
        output.contains("Wrong RDB checksum expected: ("),
        "{output}"
    );
    // rdbchecksum no writes a zero trailer, which loads without a check, as in Redis.
    let _ = std::fs::remove_dir_all(&dir);
}

/// `embedis-server` loads its file while serving: commands get `-LOADING` (INFO still answers,
/// showing the progress) until the dataset is in, as with Redis.
#[test]
fn clients_get_loading_while_the_binary_loads_its_file() {
    let dir = temp_dir("persistence-loading");
    let server = support::builder().dir(&dir).start().unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    for i in 0..20_000 {
        c.send_raw(&Conn::encode(&[
            b"SET",
            format!("key:{i}").as_bytes(),
            b"v",
        ]));
    }
    for _ in 0..20_000 {
        c.read_reply().unwrap();
    }
    assert_eq!(text(&mut c, &["SAVE"]), "+OK\r\n");
    drop(c);
    drop(server);
    // 100 µs per key: about two seconds of loading.
    let loader = RedisServer::start_binary(
        EMBEDIS,
        "persistence-loading",
        &["--dir", dir.to_str().unwrap(), "--key-load-delay", "100"],
    );
    let mut c = Conn::connect(loader.addr()).unwrap();
    let first = text(&mut c, &["GET", "key:1"]);
    assert_eq!(first, "-LOADING Redis is loading the dataset in memory\r\n");
    let info = text(&mut c, &["INFO", "persistence"]);
    assert!(info.contains("loading:1\r\n"), "{info}");
    assert!(info.contains("loading_total_bytes:"), "{info}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while text(&mut c, &["INFO", "persistence"]).contains("loading:1\r\n") {
        assert!(Instant::now() < deadline, "loading did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(text(&mut c, &["DBSIZE"]), ":20000\r\n");
    assert_eq!(text(&mut c, &["GET", "key:1"]), "$1\r\nv\r\n");
    drop(loader);
    // Under a slow load (1.5 ms a key, as Redis's Sentinel suite reboots a primary) the server
    // still answers every `loading-process-events-interval-bytes` of the file, as Redis does:
    // a reply takes a fraction of a second, not the 1,024 keys (1.5 s) of a whole turn.
    let loader = RedisServer::start_binary(
        EMBEDIS,
        "persistence-loading-slow",
        &[
            "--dir",
            dir.to_str().unwrap(),
            "--key-load-delay",
            "1500",
            "--loading-process-events-interval-bytes",
            "1024",
        ],
    );
    let mut c = Conn::connect(loader.addr()).unwrap();
    for _ in 0..5 {
        let asked = Instant::now();
        let reply = text(&mut c, &["PING"]);
        assert_eq!(reply, "-LOADING Redis is loading the dataset in memory\r\n");
        assert!(
            asked.elapsed() < Duration::from_millis(750),
            "{:?}",
            asked.elapsed()
        );
    }
    drop(loader);
    let _ = std::fs::remove_dir_all(&dir);
}

/// MIGRATE moves keys to redis-server and back (TTL kept, COPY and REPLACE, KEYS, the target's
/// errors and a connection failure answered as Redis answers them).
/// MIGRATE keeps its connection to a target for reuse, as Redis does: later MIGRATEs to the same
/// `host:port` open no new connection (and send SELECT only when the database changes); one the
/// target closed is replaced by a retry; ten idle seconds on the server's clock close it.
#[test]
fn migrate_reuses_its_connection_and_closes_it_when_idle() {
    let Some(redis) = RedisServer::start("persistence-migrate-cache", &[]) else {
        return;
    };
    let ours = start_embedis("persistence-migrate-cache", &[]);
    let (mut r, mut e) = (
        Conn::connect(redis.addr()).unwrap(),
        Conn::connect(ours.addr()).unwrap(),
    );
    let port = redis.port.to_string();
    let received = |r: &mut Conn| -> u64 {
        let info = text(r, &["INFO", "stats"]);
        info.lines()
            .find_map(|l| l.strip_prefix("total_connections_received:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("total_connections_received")
    };
    let migrating = |r: &mut Conn| -> Vec<String> {
        text(r, &["CLIENT", "LIST"])
            .lines()
            .filter(|l| l.contains("cmd=restore"))
            .map(|l| {
                let addr = l.split(' ').find_map(|f| f.strip_prefix("addr=")).unwrap();
                addr.to_string()
            })
            .collect()
    };
    for k in ["a", "b", "c", "d"] {
        text(&mut e, &["SET", k, k]);
    }
    let before = received(&mut r);
    let migrate = |e: &mut Conn, key: &str, db: &str| {
        text(e, &["MIGRATE", "127.0.0.1", &port, key, db, "1000"])
    };
    assert_eq!(migrate(&mut e, "a", "0"), "+OK\r\n");
    assert_eq!(migrate(&mut e, "b", "0"), "+OK\r\n");
    assert_eq!(migrate(&mut e, "c", "1"), "+OK\r\n");
    assert_eq!(
        received(&mut r),
        before + 1,
        "one connection for three MIGRATEs"
    );
    let cached_sockets = |e: &mut Conn| {
        text(e, &["INFO", "stats"])
            .lines()
            .find_map(|l| l.strip_prefix("migrate_cached_sockets:"))
            .map(|v| v.trim().to_string())
    };
    assert_eq!(cached_sockets(&mut e).as_deref(), Some("1"));
    assert_eq!(
        text(&mut r, &["MGET", "a", "b", "c"]),
        "*3\r\n$1\r\na\r\n$1\r\nb\r\n$-1\r\n"
    );
    text(&mut r, &["SELECT", "1"]);
    assert_eq!(text(&mut r, &["GET", "c"]), "$1\r\nc\r\n");
    // The target drops the connection: the next MIGRATE retries on a new one.
    let cached = migrating(&mut r);
    assert_eq!(cached.len(), 1, "{cached:?}");
    assert_eq!(text(&mut r, &["CLIENT", "KILL", &cached[0]]), "+OK\r\n");
    assert_eq!(migrate(&mut e, "d", "1"), "+OK\r\n");
    assert_eq!(text(&mut r, &["GET", "d"]), "$1\r\nd\r\n");
    assert_eq!(received(&mut r), before + 2);
    // Ten seconds unused (on the server's clock) close it.
    assert_eq!(
        text(&mut e, &["DEBUG", "CLOCK", "ADVANCE", "11000"]),
        "+OK\r\n"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !migrating(&mut r).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the idle connection is still open"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(cached_sockets(&mut e).as_deref(), Some("0"));
}

#[test]
fn migrate_moves_keys_to_and_from_redis() {
    let Some(redis) = RedisServer::start("persistence-migrate", &[]) else {
        return;
    };
    let ours = start_embedis("persistence-migrate", &[]);
    let (mut r, mut e) = (
        Conn::connect(redis.addr()).unwrap(),
        Conn::connect(ours.addr()).unwrap(),
    );
    let port = redis.port.to_string();
    text(&mut e, &["RPUSH", "list", "a", "b", "c"]);
    text(&mut e, &["SET", "s", "hello", "EX", "100"]);
    assert_eq!(
        text(
            &mut e,
            &["MIGRATE", "127.0.0.1", &port, "list", "0", "1000"]
        ),
        "+OK\r\n"
    );
    assert_eq!(
        text(
            &mut e,
            &[
                "MIGRATE",
                "127.0.0.1",
                &port,
                "",
                "0",
                "1000",
                "KEYS",
                "s",
                "missing"
            ]
        ),
        "+OK\r\n"
    );
    assert_eq!(
        text(
            &mut e,
            &["MIGRATE", "127.0.0.1", &port, "missing", "0", "1000"]
        ),
        "+NOKEY\r\n"
    );
    assert_eq!(text(&mut e, &["EXISTS", "list", "s"]), ":0\r\n");
    assert_eq!(
        text(&mut r, &["LRANGE", "list", "0", "-1"]),
        "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
    );
    let ttl = text(&mut r, &["TTL", "s"]);
    assert!(ttl == ":100\r\n" || ttl == ":99\r\n", "{ttl}");
    text(&mut e, &["SET", "list", "x"]);
    assert_eq!(
        text(
            &mut e,
            &["MIGRATE", "127.0.0.1", &port, "list", "0", "1000"]
        ),
        "-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n"
    );
    assert_eq!(
        text(
            &mut e,
            &[
                "MIGRATE",
                "127.0.0.1",
                &port,
                "list",
                "0",
                "1000",
                "COPY",
                "REPLACE"
            ]
        ),
        "+OK\r\n"
    );
    assert_eq!(
        text(&mut e, &["GET", "list"]),
        "$1\r\nx\r\n",
        "COPY keeps the source"
    );
    assert_eq!(text(&mut r, &["GET", "list"]), "$1\r\nx\r\n");
    // Back from Redis to us.
    let ours_port = ours.port.to_string();
    assert_eq!(
        text(
            &mut r,
            &["MIGRATE", "127.0.0.1", &ours_port, "s", "3", "1000"]
        ),
        "+OK\r\n"
    );
    text(&mut e, &["SELECT", "3"]);
    assert_eq!(text(&mut e, &["GET", "s"]), "$5\r\nhello\r\n");
    let closed = support::free_port().to_string();
    assert_eq!(
        text(&mut e, &["MIGRATE", "127.0.0.1", &closed, "s", "0", "100"]),
        "-IOERR error or timeout connecting to the client\r\n"
    );
    assert_eq!(
        text(
            &mut e,
            &["MIGRATE", "127.0.0.1", &port, "s", "0", "100", "KEYS", "s"]
        ),
        "-ERR When using MIGRATE KEYS option, the key argument must be set to the empty string\r\n"
    );
}

/// FLUSHALL's changes as Redis 7.0.15 counts them (`rdb_changes_since_last_save`): the keys it
/// removed, nothing for itself; with save points set it saves, and none are left.
#[test]
fn flushall_counts_the_keys_it_removed_or_saves_with_save_points() {
    let dir = temp_dir("flushall-dirty");
    let server = support::builder()
        .dir(&dir)
        .config("save", "")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    let changes =
        |c: &mut Conn| support::info_field(c, "persistence", "rdb_changes_since_last_save");
    text(&mut c, &["SET", "a", "1"]);
    text(&mut c, &["SET", "b", "1"]);
    text(&mut c, &["FLUSHALL"]);
    assert_eq!(changes(&mut c).as_deref(), Some("4"));
    text(&mut c, &["FLUSHALL"]);
    assert_eq!(
        changes(&mut c).as_deref(),
        Some("4"),
        "an empty FLUSHALL adds none"
    );
    text(&mut c, &["CONFIG", "SET", "save", "3600 1"]);
    text(&mut c, &["SET", "a", "1"]);
    text(&mut c, &["FLUSHALL"]);
    assert_eq!(changes(&mut c).as_deref(), Some("0"));
    assert!(dir.join("dump.rdb").exists());
}
