//! Disk faults that lose nothing: what `embedis-server` does when its disk fails it, checked
//! against what Redis 7.0.15 promises (its `flushAppendOnlyFile`, `writeCommandsDeniedByDiskError`
//! and background-save error paths) and against redis-server itself on a real full disk.
//!
//! The faults come two ways:
//! - **Injected** (`DEBUG FAULT DISK AOF …`, the fault layer's disk rules): the AOF's writes and
//!   fsyncs fail with ENOSPC or EIO on demand, a write optionally after part of it reached the
//!   file. No root, no special file system; the errors are exact and repeatable.
//! - **A real full disk**: a small tmpfs mounted for the test (where the test may mount; skipped
//!   loudly otherwise), with embedis and redis-server given the same schedule and their replies
//!   compared.
//!
//! Kills: SIGKILL of the server in the middle of BGREWRITEAOF and of BGSAVE, and of BGSAVE's
//! child process, under a write load whose acknowledged writes are counted and checked after
//! the restart.

use crate::aof::Embedis;
use crate::support::{self, field, temp_dir, text, Conn};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Polls `check` every 20 ms for up to `secs` seconds.
fn wait_for(what: &str, secs: u64, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn log_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
}

/// An embedis-server with the AOF on in `dir` (its log in `dir/server.log`).
fn aof_server(dir: &Path, fsync: &str) -> Embedis {
    let log = dir.join("server.log");
    Embedis::start(
        dir,
        &[
            "--appendonly",
            "yes",
            "--appendfsync",
            fsync,
            "--logfile",
            log.to_str().unwrap(),
        ],
    )
}

fn persistence(c: &mut Conn, name: &str) -> String {
    field(&text(c, &["INFO", "persistence"]), name)
}

/// `appendfsync everysec`: a write that fails (here a short write, 7 bytes in, then ENOSPC, as
/// a disk filling up gives) is acknowledged — its bytes wait in the buffer — and from then on
/// writes and PING get `-MISCONF Errors writing to the AOF file: …` while reads are served; the
/// tick tries again and, once the disk takes it, writes are accepted again. The bytes of each
/// short write are cut back out of the file, so the restarted server loads it with
/// `aof-load-truncated no` and has every acknowledged write.
#[test]
fn an_aof_write_error_refuses_writes_until_the_disk_takes_them_again() {
    let dir = temp_dir("disk-aof-enospc");
    let server = aof_server(&dir, "everysec");
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(text(&mut c, &["SET", "a", "1"]), "+OK\r\n");
    let fault = [
        "DEBUG", "FAULT", "DISK", "AOF", "WRITE", "ENOSPC", "0", "SHORT", "7",
    ];
    assert_eq!(text(&mut c, &fault), "+OK\r\n");
    assert_eq!(text(&mut c, &["SET", "b", "2"]), "+OK\r\n");
    let misconf = "-MISCONF Errors writing to the AOF file: No space left on device\r\n";
    assert_eq!(text(&mut c, &["SET", "c", "3"]), misconf);
    assert_eq!(text(&mut c, &["PING"]), misconf);
    assert_eq!(text(&mut c, &["GET", "b"]), "$1\r\n2\r\n");
    assert_eq!(persistence(&mut c, "aof_last_write_status"), "err");
    let listed = text(&mut c, &["DEBUG", "FAULT", "LIST"]);
    assert!(
        listed.contains("DISK AOF WRITE ENOSPC 0 SHORT 7"),
        "{listed}"
    );
    // The disk has room again.
    assert_eq!(text(&mut c, &["DEBUG", "FAULT", "CLEAR"]), "+OK\r\n");
    wait_for("writes accepted again", 5, || {
        text(&mut c, &["SET", "c", "3"]) == "+OK\r\n"
    });
    assert_eq!(persistence(&mut c, "aof_last_write_status"), "ok");
    let log = log_of(&dir);
    assert!(
        log.contains("Short write while writing to the AOF file: (nwritten=7, expected="),
        "{log}"
    );
    assert!(
        log.contains("AOF write error looks solved, Redis can write again."),
        "{log}"
    );
    server.kill9();
    let server = Embedis::start(&dir, &["--appendonly", "yes", "--aof-load-truncated", "no"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    let all = text(&mut c, &["MGET", "a", "b", "c"]);
    assert_eq!(all, "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sends `args` on a fresh connection and returns what comes back before the server closes it.
fn reply_until_closed(addr: std::net::SocketAddr, args: &[&str]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    stream.write_all(&Conn::encode(&bytes)).unwrap();
    let mut got = Vec::new();
    let _ = stream.read_to_end(&mut got);
    got
}

/// `appendfsync always`: a write the AOF cannot take — its write or its fsync fails — is never
/// acknowledged: the server logs Redis's line and exits (status 1) before the reply leaves, as
/// Redis does (the write cannot be undone, and an acknowledged write must be on disk). The
/// restarted server has everything acknowledged before.
#[test]
fn under_appendfsync_always_a_failed_write_or_fsync_stops_the_server_unacknowledged() {
    let cases = [
        (
            "WRITE",
            "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...",
        ),
        (
            "FSYNC",
            "Can't persist AOF for fsync error when the AOF fsync policy is 'always': Input/output error. Exiting...",
        ),
    ];
    for (op, line) in cases {
        let dir = temp_dir(&format!("disk-aof-always-{op}"));
        let mut server = aof_server(&dir, "always");
        let mut c = Conn::connect(server.addr()).unwrap();
        for i in 0..20 {
            assert_eq!(text(&mut c, &["SET", &format!("k{i}"), "v"]), "+OK\r\n");
        }
        let fault = ["DEBUG", "FAULT", "DISK", "AOF", op, "EIO", "1"];
        assert_eq!(text(&mut c, &fault), "+OK\r\n");
        let got = reply_until_closed(server.addr(), &["SET", "unacknowledged", "v"]);
        assert!(got.is_empty(), "{op}: the write was answered: {got:?}");
        let status = server.wait_exit(Duration::from_secs(10));
        assert_eq!(status, Some(1), "{op}: exit status");
        let log = log_of(&dir);
        assert!(log.contains(line), "{op}: {log}");
        let server = Embedis::start(&dir, &["--appendonly", "yes"]);
        let mut c = Conn::connect(server.addr()).unwrap();
        assert_eq!(text(&mut c, &["EXISTS", "k0", "k19"]), ":2\r\n", "{op}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `appendfsync everysec`: the background fsync failing makes the AOF unwritable as a failed
/// write does (Redis's `aof_bio_fsync_status`): writes get `-MISCONF … Input/output error`
/// until an fsync succeeds, which the fsync thread tries once a second; the failure is logged.
#[test]
fn a_failed_background_fsync_refuses_writes_until_one_succeeds() {
    let dir = temp_dir("disk-aof-fsync");
    let server = aof_server(&dir, "everysec");
    let mut c = Conn::connect(server.addr()).unwrap();
    let fault = ["DEBUG", "FAULT", "DISK", "AOF", "FSYNC", "EIO", "2"];
    assert_eq!(text(&mut c, &fault), "+OK\r\n");
    assert_eq!(text(&mut c, &["SET", "a", "1"]), "+OK\r\n");
    let misconf = "-MISCONF Errors writing to the AOF file: Input/output error\r\n";
    wait_for("the fsync's failure", 5, || {
        text(&mut c, &["SET", "b", "2"]) == misconf
    });
    assert_eq!(persistence(&mut c, "aof_last_write_status"), "err");
    // Two failures, then the third try succeeds.
    wait_for("a good fsync", 6, || {
        text(&mut c, &["SET", "b", "2"]) == "+OK\r\n"
    });
    assert_eq!(persistence(&mut c, "aof_last_write_status"), "ok");
    let log = log_of(&dir);
    assert_eq!(
        log.matches("Fail to fsync the AOF file: Input/output error")
            .count(),
        1,
        "{log}"
    );
    server.kill9();
    let server = Embedis::start(&dir, &["--appendonly", "yes"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(
        text(&mut c, &["MGET", "a", "b"]),
        "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every write the writer saw acknowledged is in the restarted server.
fn check_acknowledged(c: &mut Conn, acknowledged: u64, what: &str) {
    assert!(acknowledged > 10, "{what}: the load ran ({acknowledged})");
    let reply = text(c, &["GET", "counter"]);
    let counter: u64 = reply.lines().nth(1).unwrap_or("0").parse().unwrap();
    assert!(
        counter >= acknowledged,
        "{what}: {acknowledged} INCRs acknowledged, {counter} after the restart"
    );
    let last = format!("key:{}", acknowledged - 1);
    assert_eq!(text(c, &["EXISTS", &last, "key:0"]), ":2\r\n", "{what}");
    eprintln!("{what}: {acknowledged} write pairs acknowledged, 0 lost ({counter} INCRs kept)");
}

/// Fills `c`'s server with `n` keys of 100 bytes, pipelined.
fn fill(c: &mut Conn, n: usize) {
    let value = "x".repeat(100);
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut args = vec!["MSET".to_string()];
        for i in chunk {
            args.push(format!("fill:{i}"));
            args.push(value.clone());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(text(c, &args), "+OK\r\n");
    }
}

/// SIGKILL in the middle of BGREWRITEAOF (slowed with `rdb-key-save-delay` so that it is
/// surely running) under `appendfsync always` and a write load: the restarted server loads the
/// manifest the crash left — the old base and every increment, the rewrite's half-written base
/// ignored — with every acknowledged write.
#[test]
fn sigkill_during_an_aof_rewrite_loses_no_acknowledged_write() {
    let dir = temp_dir("disk-kill-rewrite");
    let server = aof_server(&dir, "always");
    let mut c = Conn::connect(server.addr()).unwrap();
    fill(&mut c, 20_000);
    assert_eq!(
        text(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "200"]),
        "+OK\r\n"
    );
    let writer = support::counting_writer(server.addr());
    std::thread::sleep(Duration::from_millis(200));
    assert!(text(&mut c, &["BGREWRITEAOF"]).starts_with('+'));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(persistence(&mut c, "aof_rewrite_in_progress"), "1");
    server.kill9();
    let acknowledged = writer.join().unwrap();
    let server = Embedis::start(&dir, &["--appendonly", "yes", "--aof-load-truncated", "no"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    check_acknowledged(&mut c, acknowledged, "killed mid-rewrite");
    assert_eq!(text(&mut c, &["EXISTS", "fill:0", "fill:19999"]), ":2\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// BGSAVE's child killed with SIGKILL: the save fails as Redis's does when its child dies
/// ("terminated by signal"), the status turns to err and, with save points set, writes get
/// the RDB's `-MISCONF` until a save succeeds; the old dump.rdb is untouched and no temporary
/// file is left. Then the server itself is killed in the middle of a BGSAVE under a write
/// load with the AOF on: nothing acknowledged is lost.
#[test]
fn sigkill_of_bgsave_or_of_its_server_loses_nothing() {
    let dir = temp_dir("disk-kill-bgsave");
    let server = aof_server(&dir, "always");
    let mut c = Conn::connect(server.addr()).unwrap();
    fill(&mut c, 20_000);
    assert_eq!(text(&mut c, &["SAVE"]), "+OK\r\n");
    let saved = std::fs::read(dir.join("dump.rdb")).unwrap();
    let config = [
        "CONFIG",
        "SET",
        "rdb-key-save-delay",
        "200",
        "save",
        "3600 1",
    ];
    assert_eq!(text(&mut c, &config), "+OK\r\n");
    assert_eq!(text(&mut c, &["BGSAVE"]), "+Background saving started\r\n");
    let child = bgsave_child(server.pid()).expect("BGSAVE's child process");
    unsafe { libc::kill(child as i32, libc::SIGKILL) };
    wait_for("the save to end", 10, || {
        persistence(&mut c, "rdb_bgsave_in_progress") == "0"
    });
    assert_eq!(persistence(&mut c, "rdb_last_bgsave_status"), "err");
    let misconf = text(&mut c, &["SET", "x", "1"]);
    assert!(
        misconf.starts_with("-MISCONF Redis is configured to save RDB snapshots"),
        "{misconf}"
    );
    assert_eq!(std::fs::read(dir.join("dump.rdb")).unwrap(), saved);
    assert!(temp_files(&dir).is_empty(), "{:?}", temp_files(&dir));
    let log = log_of(&dir);
    assert!(
        log.contains("Background saving terminated by signal 9"),
        "{log}"
    );
    // The server itself, mid-BGSAVE, under writes (no save points: no MISCONF to stop them).
    let config = ["CONFIG", "SET", "save", ""];
    assert_eq!(text(&mut c, &config), "+OK\r\n");
    wait_for("writes accepted", 5, || {
        text(&mut c, &["SET", "x", "1"]) == "+OK\r\n"
    });
    let writer = support::counting_writer(server.addr());
    assert!(text(&mut c, &["BGSAVE"]).starts_with('+'));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(persistence(&mut c, "rdb_bgsave_in_progress"), "1");
    server.kill9();
    let acknowledged = writer.join().unwrap();
    let server = Embedis::start(&dir, &["--appendonly", "yes"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    check_acknowledged(&mut c, acknowledged, "killed mid-BGSAVE");
    let _ = std::fs::remove_dir_all(&dir);
}

/// BGREWRITEAOF writes its base through a child process, as BGSAVE does, and killing that
/// child fails the rewrite as Redis's does: "terminated by signal 9", its
/// `temp-rewriteaof-bg-<pid>.aof` removed, the increment it opened kept (each failure leaves
/// one more, as in Redis's manifest), and after three failures in a row an automatic rewrite
/// waits ("triggered the limit") while BGREWRITEAOF still runs at once and, succeeding, makes
/// every earlier file history. Nothing written meanwhile is lost.
#[test]
fn a_killed_rewrite_child_fails_the_rewrite_and_keeps_every_write() {
    let dir = temp_dir("disk-kill-rewrite-child");
    let server = aof_server(&dir, "everysec");
    let mut c = Conn::connect(server.addr()).unwrap();
    fill(&mut c, 100);
    let slow = ["CONFIG", "SET", "rdb-key-save-delay", "10000000"];
    assert_eq!(text(&mut c, &slow), "+OK\r\n");
    let forks = |c: &mut Conn| field(&text(c, &["INFO", "stats"]), "total_forks");
    let forks_before: u64 = forks(&mut c).parse().unwrap();
    for round in 0..3 {
        assert!(text(&mut c, &["BGREWRITEAOF"]).starts_with('+'));
        let child = bgsave_child(server.pid()).expect("the rewrite's child process");
        let temp = dir.join(format!("appendonlydir/temp-rewriteaof-bg-{child}.aof"));
        wait_for("the child's file", 5, || temp.exists());
        unsafe { libc::kill(child as i32, libc::SIGKILL) };
        wait_for("the rewrite to end", 10, || {
            persistence(&mut c, "aof_rewrite_in_progress") == "0"
        });
        assert!(!temp.exists(), "round {round}: {temp:?} left");
        assert_eq!(persistence(&mut c, "aof_last_bgrewrite_status"), "err");
        assert_eq!(
            text(&mut c, &["INCR", "counter"]),
            format!(":{}\r\n", round + 1)
        );
    }
    assert_eq!(forks(&mut c), (forks_before + 3).to_string());
    let manifest = || std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest"));
    let incr_files = manifest().unwrap().matches("type i").count();
    assert_eq!(incr_files, 4, "{}", manifest().unwrap());
    assert!(log_of(&dir).contains("Background AOF rewrite terminated by signal 9"));
    // The limit: an automatic rewrite now waits, and says so once.
    let auto = [
        "CONFIG",
        "SET",
        "auto-aof-rewrite-percentage",
        "1",
        "auto-aof-rewrite-min-size",
        "1kb",
    ];
    assert_eq!(text(&mut c, &auto), "+OK\r\n");
    fill(&mut c, 100);
    wait_for("the limit's log line", 5, || {
        log_of(&dir).contains("triggered the limit, will retry in 1 minutes")
    });
    assert_eq!(persistence(&mut c, "aof_rewrite_in_progress"), "0");
    // BGREWRITEAOF is not limited, and its success retires every earlier file.
    let fast = [
        "CONFIG",
        "SET",
        "rdb-key-save-delay",
        "0",
        "auto-aof-rewrite-percentage",
        "0",
    ];
    assert_eq!(text(&mut c, &fast), "+OK\r\n");
    assert!(text(&mut c, &["BGREWRITEAOF"]).starts_with('+'));
    wait_for("the rewrite", 10, || {
        persistence(&mut c, "aof_rewrite_in_progress") == "0"
    });
    assert_eq!(persistence(&mut c, "aof_last_bgrewrite_status"), "ok");
    let after = manifest().unwrap();
    assert_eq!(after.lines().count(), 2, "{after}");
    drop(c);
    server.kill9();
    let server = Embedis::start(&dir, &["--appendonly", "yes"]);
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(text(&mut c, &["GET", "counter"]), "$1\r\n3\r\n");
    assert_eq!(text(&mut c, &["DBSIZE"]), ":101\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The AOF's history files (Redis 7.0's multi-part AOF, its aof-multi-part unit found each
/// missing): `aof-disable-auto-gc yes` keeps the files a rewrite retired, listed as history, and
/// setting it back to `no` deletes them; turning the AOF off during a rewrite kills its child
/// with Redis's log line; a rewrite while the AOF is off leaves no increment file in use.
#[test]
fn history_files_auto_gc_and_turning_the_aof_off_during_a_rewrite() {
    let dir = temp_dir("disk-aof-history");
    let server = aof_server(&dir, "everysec");
    let mut c = Conn::connect(server.addr()).unwrap();
    let manifest =
        || std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap();
    let aof_files = || {
        std::fs::read_dir(dir.join("appendonlydir"))
            .unwrap()
            .count()
    };
    let rewrite = |c: &mut Conn| {
        assert!(text(c, &["BGREWRITEAOF"]).starts_with('+'));
        wait_for("the rewrite", 10, || {
            persistence(c, "aof_rewrite_in_progress") == "0"
        });
        assert_eq!(persistence(c, "aof_last_bgrewrite_status"), "ok");
    };
    let gc = |c: &mut Conn, on: &str| {
        let set = ["CONFIG", "SET", "aof-disable-auto-gc", on];
        assert_eq!(text(c, &set), "+OK\r\n");
    };
    fill(&mut c, 10);
    gc(&mut c, "yes");
    rewrite(&mut c);
    fill(&mut c, 10);
    rewrite(&mut c);
    let kept = manifest();
    assert_eq!(kept.matches("type h").count(), 4, "{kept}");
    assert_eq!(aof_files(), 7, "{kept}");
    gc(&mut c, "no");
    let after = manifest();
    assert_eq!(after.matches("type h").count(), 0, "{after}");
    assert_eq!(aof_files(), 3, "{after}");
    // A rewrite slowed down, then the AOF turned off: its child goes, with Redis's line.
    let slow = ["CONFIG", "SET", "rdb-key-save-delay", "10000000"];
    assert_eq!(text(&mut c, &slow), "+OK\r\n");
    assert!(text(&mut c, &["BGREWRITEAOF"]).starts_with('+'));
    let child = bgsave_child(server.pid()).expect("the rewrite's child process");
    let off = ["CONFIG", "SET", "appendonly", "no"];
    assert_eq!(text(&mut c, &off), "+OK\r\n");
    let line = format!("Killing running AOF rewrite child: {child}");
    wait_for("the kill's log line", 5, || log_of(&dir).contains(&line));
    assert_eq!(persistence(&mut c, "aof_rewrite_in_progress"), "0");
    // With the AOF off, a rewrite makes a base and no increment is in use any more.
    let fast = ["CONFIG", "SET", "rdb-key-save-delay", "0"];
    assert_eq!(text(&mut c, &fast), "+OK\r\n");
    rewrite(&mut c);
    let last = manifest();
    assert_eq!(last.matches("type i").count(), 0, "{last}");
    assert_eq!(last.matches("type b").count(), 1, "{last}");
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The pid of a child process of `parent` (BGSAVE's), from /proc's stat files.
fn bgsave_child(parent: u32) -> Option<u32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid …: the fields after the command's closing parenthesis.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            if ppid == Some(parent) {
                return Some(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("temp-"))
        })
        .collect()
}

/// A small tmpfs mounted for one test (a disk that really fills up), unmounted on drop.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// None (and a loud skip) where the test may not mount one (not root, no CAP_SYS_ADMIN).
    fn mount(name: &str, size: &str) -> Option<Tmpfs> {
        let dir = temp_dir(name);
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("SKIPPED {name}: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)");
            let _ = std::fs::remove_dir_all(&dir);
            return None;
        }
        Some(Tmpfs { dir })
    }

    fn path(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    /// Writes a file until the disk is full.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.dir.join("filler")).unwrap();
        let chunk = vec![0u8; 4096];
        while f.write_all(&chunk).is_ok() {}
    }

    fn free(&self) {
        std::fs::remove_file(self.dir.join("filler")).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One server under test: how to start it on a directory, and its connection.
trait DiskServer {
    fn conn(&self) -> Conn;
}

impl DiskServer for Embedis {
    fn conn(&self) -> Conn {
        Conn::connect(self.addr()).unwrap()
    }
}

impl DiskServer for support::RedisServer {
    fn conn(&self) -> Conn {
        Conn::connect(self.addr()).unwrap()
    }
}

/// The AOF part of the full-disk schedule: a write the full disk refuses is acknowledged, the
/// next ones (and PING) get `-MISCONF`, reads go on; once space is freed the server writes
/// again. The transcript of replies, for comparison.
fn aof_on_a_full_disk(server: &dyn DiskServer, disk: &Tmpfs) -> Vec<String> {
    let mut c = server.conn();
    let mut seen = vec![text(&mut c, &["SET", "k0", "v"])];
    disk.fill();
    seen.push(text(&mut c, &["SET", "k1", &"x".repeat(10_000)]));
    seen.push(text(&mut c, &["SET", "k2", "v"]));
    seen.push(text(&mut c, &["PING"]));
    seen.push(text(&mut c, &["STRLEN", "k1"]));
    seen.push(persistence(&mut c, "aof_last_write_status"));
    disk.free();
    wait_for("writes after the disk has room", 10, || {
        text(&mut c, &["SET", "k2", "v"]) == "+OK\r\n"
    });
    seen.push(persistence(&mut c, "aof_last_write_status"));
    // A rewrite on a full disk fails and the AOF goes on as it was; once there is room, the
    // next one succeeds.
    disk.fill();
    seen.push(text(&mut c, &["BGREWRITEAOF"]));
    wait_for("the rewrite to end", 10, || {
        persistence(&mut c, "aof_rewrite_in_progress") == "0"
    });
    seen.push(persistence(&mut c, "aof_last_bgrewrite_status"));
    seen.push(text(&mut c, &["SET", "k3", "v"]));
    disk.free();
    wait_for("writes after the disk has room", 10, || {
        text(&mut c, &["SET", "k3", "v"]) == "+OK\r\n"
    });
    seen.push(text(&mut c, &["BGREWRITEAOF"]));
    wait_for("the rewrite to end", 10, || {
        persistence(&mut c, "aof_rewrite_in_progress") == "0"
    });
    seen.push(persistence(&mut c, "aof_last_bgrewrite_status"));
    seen
}

/// The RDB part: a BGSAVE on a full disk fails, and with save points set writes get the RDB's
/// `-MISCONF` until a save succeeds; no temporary file is left behind.
fn bgsave_on_a_full_disk(server: &dyn DiskServer, disk: &Tmpfs) -> Vec<String> {
    let mut c = server.conn();
    let mut seen = vec![text(&mut c, &["SET", "a", &"x".repeat(10_000)])];
    disk.fill();
    seen.push(text(&mut c, &["BGSAVE"]));
    wait_for("the save to end", 10, || {
        persistence(&mut c, "rdb_bgsave_in_progress") == "0"
    });
    seen.push(persistence(&mut c, "rdb_last_bgsave_status"));
    seen.push(text(&mut c, &["SET", "b", "2"]));
    seen.push(format!("temporary files: {}", temp_files(&disk.dir).len()));
    disk.free();
    seen.push(text(&mut c, &["BGSAVE"]));
    wait_for("the save to end", 10, || {
        persistence(&mut c, "rdb_bgsave_in_progress") == "0"
    });
    seen.push(persistence(&mut c, "rdb_last_bgsave_status"));
    seen.push(text(&mut c, &["SET", "b", "2"]));
    seen
}

/// A real full disk (a 2 MB tmpfs), the same schedule for redis-server 7.0.15 and embedis: the
/// same replies, byte for byte — the acknowledged write, `-MISCONF Errors writing to the AOF
/// file: No space left on device`, the RDB's `-MISCONF` after a failed BGSAVE, the recovery once
/// space is freed — and after SIGKILL and a restart from that disk, every acknowledged write.
#[test]
fn a_full_disk_is_answered_as_redis_answers_it_and_loses_nothing() {
    let Some(redis) = support::find_binary("redis-server", "disk_faults::full_disk") else {
        return;
    };
    let mut transcripts = Vec::new();
    let logs = temp_dir("disk-full-logs");
    let log = logs.join("embedis.log");
    for name in ["redis", "embedis"] {
        let Some(disk) = Tmpfs::mount(&format!("disk-full-{name}"), "2m") else {
            return;
        };
        let aof = ["--dir", disk.path(), "--appendonly", "yes"];
        let rdb = ["--dir", disk.path(), "--save", "3600 1"];
        let start = |args: &[&str]| -> Box<dyn DiskServer> {
            if name == "redis" {
                Box::new(support::RedisServer::start_binary(
                    &redis,
                    "full disk",
                    args,
                ))
            } else {
                let mut args = args[2..].to_vec();
                args.extend(["--logfile", log.to_str().unwrap()]);
                Box::new(Embedis::start(&disk.dir, &args))
            }
        };
        let server = start(&aof);
        let mut seen = aof_on_a_full_disk(&*server, &disk);
        drop(server); // SIGKILL
        let server = start(&aof);
        let mut c = server.conn();
        support::wait_loaded(&mut c);
        seen.push(text(&mut c, &["EXISTS", "k0", "k1", "k2", "k3"]));
        drop(c);
        drop(server);
        std::fs::remove_dir_all(disk.dir.join("appendonlydir")).unwrap();
        let server = start(&rdb);
        seen.extend(bgsave_on_a_full_disk(&*server, &disk));
        transcripts.push(seen);
    }
    assert_eq!(
        transcripts[1],
        transcripts[0],
        "embedis, then redis-server; embedis's log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let _ = std::fs::remove_dir_all(&logs);
    assert!(transcripts[0]
        .iter()
        .any(|r| r.contains("No space left on device")));
}

/// A server inside the test's process, `appendfsync always`, whose AOF write fails (through the
/// Rust API's disk faults): as the binary exits, it stops — the write is never answered and new
/// connections are refused — while the host process lives on; restarted from its directory it
/// has every acknowledged write. Under `everysec` the same fault gives `-MISCONF` instead.
#[test]
fn an_embedded_server_stops_rather_than_acknowledge_an_unwritten_write() {
    let dir = temp_dir("disk-embedded");
    let mut server = embedis::Server::builder()
        .dir(&dir)
        .appendonly(true)
        .appendfsync(embedis::AppendFsync::Always)
        .start()
        .unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    for i in 0..10 {
        assert_eq!(text(&mut c, &["SET", &format!("k{i}"), "v"]), "+OK\r\n");
    }
    server.faults().disk_write_error(libc::ENOSPC, 5, 1);
    let got = reply_until_closed(server.addr(), &["SET", "unacknowledged", "v"]);
    assert!(got.is_empty(), "the write was answered: {got:?}");
    wait_for("the server to stop", 10, || {
        TcpStream::connect(server.addr()).is_err()
    });
    server.restart().unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(text(&mut c, &["EXISTS", "k0", "k9"]), ":2\r\n");
    // everysec: refused, not stopped.
    assert_eq!(
        text(&mut c, &["CONFIG", "SET", "appendfsync", "everysec"]),
        "+OK\r\n"
    );
    server.faults().disk_write_error(libc::EIO, 0, 0);
    assert_eq!(text(&mut c, &["SET", "a", "1"]), "+OK\r\n");
    let misconf = "-MISCONF Errors writing to the AOF file: Input/output error\r\n";
    assert_eq!(text(&mut c, &["SET", "b", "1"]), misconf);
    server.faults().clear();
    wait_for("writes accepted again", 5, || {
        text(&mut c, &["SET", "b", "1"]) == "+OK\r\n"
    });
    drop(c);
    server.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
