//! The `embedis-server` binary as a process, as Redis 7.0.15's shutdown, oom-score-adj and
//! logging units see it: SIGTERM and SIGINT taken up by the tick with `shutdown-on-sig*`'s
//! flags, a failed save on a signal that leaves the server running, SHUTDOWN ABORT of a signal's
//! request, a second SIGINT that exits at once, BGSAVE's child process (its OOM score, its
//! temporary file), the OOM score of primaries and replicas, the crash report and the watchdog.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::Conn;

const BIN: &str = env!("CARGO_BIN_EXE_embedis-server");

/// A running binary, its port and the log lines it printed so far.
struct Proc {
    child: Child,
    port: u16,
    lines: Arc<Mutex<Vec<String>>>,
    dir: PathBuf,
}

impl Proc {
    /// Starts the binary in a fresh directory with `--port auto` and `extra`.
    fn start(extra: &[&str]) -> Proc {
        Proc::start_in(&support::server_dir(), extra)
    }

    fn start_in(dir: &Path, extra: &[&str]) -> Proc {
        let mut child = Command::new(BIN)
            .current_dir(dir)
            .args(["--port", "auto"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("port=") {
                    let _ = port_tx.send(port.parse::<u16>().unwrap());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let port = port_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the server prints its port");
        Proc {
            child,
            port,
            lines,
            dir: dir.to_path_buf(),
        }
    }

    fn conn(&self) -> Conn {
        Conn::connect(([127, 0, 0, 1], self.port).into()).unwrap()
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn signal(&self, signal: i32) {
        // SAFETY: a signal to our own child process.
        unsafe { libc::kill(self.pid(), signal) };
    }

    fn log(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Waits (10 s at most) for the server to log a line containing `text`.
    #[track_caller]
    fn wait_for_log(&self, text: &str) {
        support::eventually(&format!("the log line {text:?}"), || {
            self.log().contains(text)
        });
    }

    /// Waits (10 s at most) for the process to end.
    fn wait(&mut self) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "still running:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pids whose parent is `pid` (what Redis's tests find with `pgrep -P`).
fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: the command may hold spaces, the part after ')' does not.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: i32 = after.split(' ').nth(1).unwrap().parse().unwrap();
        if ppid == pid {
            out.push(child);
        }
    }
    out
}

fn oom_score_adj(pid: i32) -> i32 {
    std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn reply(conn: &mut Conn, args: &[&str]) -> String {
    support::lossy(&conn.command(args))
}

#[test]
fn a_failed_save_on_sigterm_leaves_the_server_running() {
    let p = Proc::start(&[]);
    let mut c = p.conn();
    assert_eq!(reply(&mut c, &["SET", "k", "v"]), "+OK\r\n");
    // A directory where the file goes: the rename of the save fails.
    std::fs::create_dir(p.dir.join("dump.rdb")).unwrap();
    p.signal(libc::SIGTERM);
    p.wait_for_log("Received SIGTERM scheduling shutdown...");
    p.wait_for_log("Error trying to save the DB, can't exit.");
    p.wait_for_log("Errors trying to shut down the server.");
    assert_eq!(reply(&mut c, &["PING"]), "+PONG\r\n");
    // SHUTDOWN fails the same way, and NOSAVE stops it.
    assert_eq!(
        reply(&mut c, &["SHUTDOWN"]),
        "-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
    );
    c.send_raw(&Conn::encode(&[b"SHUTDOWN", b"NOSAVE"]));
    let mut p = p;
    assert!(p.wait().success());
    assert!(p.log().contains("ready to exit, bye bye"));
}

#[test]
fn shutdown_abort_cancels_a_signal_the_tick_has_not_taken_up() {
    let p = Proc::start(&["--enable-debug-command", "yes"]);
    let mut c = p.conn();
    assert_eq!(reply(&mut c, &["DEBUG", "PAUSE-CRON", "1"]), "+OK\r\n");
    p.signal(libc::SIGTERM);
    p.wait_for_log("Received SIGTERM scheduling shutdown...");
    assert_eq!(reply(&mut c, &["SHUTDOWN", "ABORT"]), "+OK\r\n");
    p.wait_for_log("Shutdown manually aborted.");
    assert_eq!(reply(&mut c, &["DEBUG", "PAUSE-CRON", "0"]), "+OK\r\n");
    assert_eq!(
        reply(&mut c, &["SHUTDOWN", "ABORT"]),
        "-ERR No shutdown in progress.\r\n"
    );
    assert_eq!(reply(&mut c, &["PING"]), "+PONG\r\n");
    assert!(!p.log().contains("User requested shutdown"), "{}", p.log());
}

#[test]
fn shutdown_on_signal_flags_decide_the_save() {
    // NOSAVE on SIGTERM: dirty data and save points, and no file.
    let mut p = Proc::start(&["--shutdown-on-sigterm", "nosave"]);
    assert_eq!(reply(&mut p.conn(), &["SET", "k", "v"]), "+OK\r\n");
    p.signal(libc::SIGTERM);
    assert!(p.wait().success());
    assert!(!p.dir.join("dump.rdb").exists(), "{}", p.log());
    // SAVE on SIGINT: no save points, and a file.
    let mut p = Proc::start(&["--save", "", "--shutdown-on-sigint", "save"]);
    assert_eq!(reply(&mut p.conn(), &["SET", "k", "v"]), "+OK\r\n");
    p.signal(libc::SIGINT);
    assert!(p.wait().success());
    assert!(p.dir.join("dump.rdb").exists(), "{}", p.log());
    assert!(p.log().contains("Received SIGINT scheduling shutdown..."));
}

#[test]
fn a_second_sigint_during_the_shutdown_save_exits_at_once() {
    let mut p = Proc::start(&["--rdb-key-save-delay", "1000000"]);
    let mut c = p.conn();
    for key in ["a", "b", "c"] {
        assert_eq!(reply(&mut c, &["SET", key, "v"]), "+OK\r\n");
    }
    p.signal(libc::SIGINT);
    // A second a key: the save is still writing its temporary file when the second comes.
    let temp = p.dir.join(format!("temp-{}.rdb", p.pid()));
    support::eventually("the shutdown's save begins", || temp.exists());
    p.signal(libc::SIGINT);
    let status = p.wait();
    assert_eq!(status.code(), Some(1), "{}", p.log());
    assert!(p.log().contains("You insist... exiting now."));
    assert!(!temp.exists());
    assert!(!p.dir.join("dump.rdb").exists());
}

#[test]
fn bgsave_writes_through_a_child_process_with_the_background_class_score() {
    let mut p = Proc::start(&[
        "--oom-score-adj",
        "absolute",
        "--oom-score-adj-values",
        "0 200 800",
        "--rdb-key-save-delay",
        "1000000",
    ]);
    let mut c = p.conn();
    assert_eq!(oom_score_adj(p.pid()), 0);
    assert_eq!(reply(&mut c, &["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(reply(&mut c, &["BGSAVE"]), "+Background saving started\r\n");
    let children = children_of(p.pid());
    assert_eq!(children.len(), 1, "one child saves");
    let child = children[0];
    support::eventually("the child takes its score", || oom_score_adj(child) == 800);
    let temp = p.dir.join(format!("temp-{child}.rdb"));
    support::eventually("the child's file", || temp.exists());
    p.wait_for_log(&format!("Background saving started by pid {child}"));
    // SHUTDOWN abandons the save: the child is killed, its file removed.
    c.send_raw(&Conn::encode(&[b"SHUTDOWN", b"NOSAVE"]));
    assert!(p.wait().success());
    assert!(!temp.exists());
    assert!(!Path::new(&format!("/proc/{child}")).exists());
}

/// A rewrite's base of commands (`aof-use-rdb-preamble no`) goes through a child process as an
/// RDB base does: Redis 7.0.15's unit/aofrw waits for "Killing … AOF … child" when AOF is turned
/// off during one. A finished one loads at the next start.
#[test]
fn a_commands_base_is_written_through_a_child_that_turning_aof_off_kills() {
    let dir = support::server_dir();
    let mut p = Proc::start_in(
        &dir,
        &[
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
            "--save",
            "",
        ],
    );
    let mut c = p.conn();
    assert_eq!(reply(&mut c, &["SET", "k", "v"]), "+OK\r\n");
    reply(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "10000000"]);
    assert_eq!(
        reply(&mut c, &["BGREWRITEAOF"]),
        "+Background append only file rewriting started\r\n"
    );
    let children = children_of(p.pid());
    assert_eq!(children.len(), 1, "one child writes the base");
    let child = children[0];
    p.wait_for_log(&format!(
        "Background append only file rewriting started by pid {child}"
    ));
    assert_eq!(
        reply(&mut c, &["CONFIG", "SET", "appendonly", "no"]),
        "+OK\r\n"
    );
    p.wait_for_log(&format!("Killing running AOF rewrite child: {child}"));
    support::eventually("the child gone", || children_of(p.pid()).is_empty());
    // Through the child to its end, and loaded again.
    reply(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    reply(&mut c, &["CONFIG", "SET", "appendonly", "yes"]);
    assert_eq!(reply(&mut c, &["SET", "k2", "v2"]), "+OK\r\n");
    p.wait_for_log("Background AOF rewrite finished successfully");
    c.send_raw(&Conn::encode(&[b"SHUTDOWN", b"NOSAVE"]));
    assert!(p.wait().success());
    let p = Proc::start_in(&dir, &["--appendonly", "yes", "--save", ""]);
    let mut c = p.conn();
    assert_eq!(
        reply(&mut c, &["MGET", "k", "k2"]),
        "*2\r\n$1\r\nv\r\n$2\r\nv2\r\n"
    );
}

#[test]
fn a_bgsave_through_its_child_is_loaded_by_the_next_start() {
    let dir = support::server_dir();
    let mut p = Proc::start_in(&dir, &["--save", ""]);
    let mut c = p.conn();
    assert_eq!(reply(&mut c, &["SET", "k", "saved"]), "+OK\r\n");
    assert_eq!(reply(&mut c, &["BGSAVE"]), "+Background saving started\r\n");
    p.wait_for_log("Background saving terminated with success");
    assert!(children_of(p.pid()).is_empty());
    c.send_raw(&Conn::encode(&[b"SHUTDOWN", b"NOSAVE"]));
    assert!(p.wait().success());
    let p = Proc::start_in(&dir, &["--save", ""]);
    assert_eq!(reply(&mut p.conn(), &["GET", "k"]), "$5\r\nsaved\r\n");
}

#[test]
fn oom_score_adj_follows_the_role_and_comes_back_when_turned_off() {
    let p = Proc::start(&[]);
    let mut c = p.conn();
    let base = oom_score_adj(p.pid());
    let set = |c: &mut Conn, args: &[&str]| reply(c, &[&["CONFIG", "SET"], args].concat());
    assert_eq!(
        set(&mut c, &["oom-score-adj-values", "10 20 30"]),
        "+OK\r\n"
    );
    // Off: the values do not touch the score.
    assert_eq!(oom_score_adj(p.pid()), base);
    assert_eq!(set(&mut c, &["oom-score-adj", "yes"]), "+OK\r\n");
    assert_eq!(oom_score_adj(p.pid()), base + 10);
    assert_eq!(
        set(&mut c, &["oom-score-adj-values", "15 20 30"]),
        "+OK\r\n"
    );
    assert_eq!(oom_score_adj(p.pid()), base + 15);
    assert_eq!(reply(&mut c, &["REPLICAOF", "127.0.0.1", "1"]), "+OK\r\n");
    assert_eq!(oom_score_adj(p.pid()), base + 20);
    assert_eq!(reply(&mut c, &["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    assert_eq!(oom_score_adj(p.pid()), base + 15);
    assert_eq!(set(&mut c, &["oom-score-adj", "absolute"]), "+OK\r\n");
    assert_eq!(oom_score_adj(p.pid()), 15);
    assert_eq!(set(&mut c, &["oom-score-adj", "no"]), "+OK\r\n");
    assert_eq!(oom_score_adj(p.pid()), base);
}

#[test]
fn a_crash_writes_a_report_to_the_log_unless_turned_off() {
    let mut p = Proc::start(&["--enable-debug-command", "yes"]);
    p.conn().send_raw(&Conn::encode(&[b"DEBUG", b"SEGFAULT"]));
    let status = p.wait();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGSEGV));
    let log = p.log();
    assert!(log.contains("crashed by signal: 11"), "{log}");
    assert!(log.contains("------ STACK TRACE ------"), "{log}");
    assert!(log.contains("=== REDIS BUG REPORT END."), "{log}");

    let mut p = Proc::start(&[]);
    p.signal(libc::SIGABRT);
    assert_eq!(p.wait().signal(), Some(libc::SIGABRT));
    assert!(p.log().contains("crashed by signal: 6"), "{}", p.log());

    let mut p = Proc::start(&["--crash-log-enabled", "no"]);
    p.signal(libc::SIGABRT);
    assert_eq!(p.wait().signal(), Some(libc::SIGABRT));
    assert!(!p.log().contains("crashed by signal"), "{}", p.log());
}

#[test]
fn the_watchdog_logs_the_engines_stack_when_a_command_holds_the_loop() {
    let p = Proc::start(&["--enable-debug-command", "yes"]);
    let mut c = p.conn();
    // Shorter than two ticks (hz 10) is raised to 200 ms, as Redis raises it.
    assert_eq!(
        reply(&mut c, &["CONFIG", "SET", "watchdog-period", "1"]),
        "+OK\r\n"
    );
    assert_eq!(
        reply(&mut c, &["CONFIG", "GET", "watchdog-period"]),
        "*2\r\n$15\r\nwatchdog-period\r\n$3\r\n200\r\n"
    );
    // The stall itself: a second in which no tick can run.
    assert_eq!(reply(&mut c, &["DEBUG", "SLEEP", "1"]), "+OK\r\n");
    p.wait_for_log("--- WATCHDOG TIMER EXPIRED ---");
    let log = p.log();
    let report = &log[log.find("--- WATCHDOG TIMER EXPIRED ---").unwrap()..];
    // The engine's own stack, in DEBUG's handler (embedis's name for it, not Redis's).
    assert!(report.contains("commands::admin::debug"), "{report}");
    // Once per stall: the watcher does not fire again while the same sleep goes on. (A busy
    // machine may starve a later tick past 200 ms; such a report is not in DEBUG's handler.)
    let in_debug = log
        .split("--- WATCHDOG TIMER EXPIRED ---")
        .skip(1)
        .filter(|r| {
            r.split("--------")
                .next()
                .unwrap()
                .contains("commands::admin::debug")
        })
        .count();
    assert_eq!(in_debug, 1, "once per stall:\n{log}");
}

/// A primary for the diskless-sync tests: diskless sync at once, keys written at `delay_us` µs
/// each (`rdb-key-save-delay`), `keys` keys.
fn diskless_primary(delay_us: &str, keys: usize) -> Proc {
    let p = Proc::start(&[
        "--save",
        "",
        "--repl-diskless-sync",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
        "--rdb-key-save-delay",
        delay_us,
    ]);
    let mut c = p.conn();
    for i in 0..keys {
        let key = format!("key:{i}");
        assert_eq!(reply(&mut c, &["SET", &key, "value"]), "+OK\r\n");
    }
    p
}

fn replica_of(primary: &Proc) -> Proc {
    let port = primary.port.to_string();
    Proc::start(&["--save", "", "--replicaof", "127.0.0.1", &port])
}

/// Waits for the one child a primary's full sync starts, and returns its pid.
fn transfer_child(primary: &Proc) -> i32 {
    support::eventually("the transfer's child starts", || {
        children_of(primary.pid()).len() == 1
    });
    children_of(primary.pid())[0]
}

fn info(conn: &mut Conn, section: &str, name: &str) -> String {
    support::info_field(conn, section, name).unwrap_or_default()
}

#[test]
fn a_diskless_full_sync_pipes_its_image_through_a_child_process() {
    // 2 ms a key: the image takes about 0.6 s to go out.
    let primary = diskless_primary("2000", 300);
    let mut c = primary.conn();
    let replica = replica_of(&primary);
    let child = transfer_child(&primary);
    primary.wait_for_log(&format!("Background RDB transfer started by pid {child}"));
    // Meanwhile the child counts as a save in progress and the replica waits for its image.
    assert_eq!(info(&mut c, "persistence", "rdb_bgsave_in_progress"), "1");
    assert!(info(&mut c, "replication", "slave0").contains("state=wait_bgsave"));
    primary.wait_for_log("Diskless rdb transfer, done reading from pipe, 1 replicas still up.");
    primary.wait_for_log("Background RDB transfer terminated with success");
    let mut r = replica.conn();
    support::eventually("the replica has every key", || {
        reply(&mut r, &["DBSIZE"]) == ":300\r\n"
    });
    assert_eq!(info(&mut c, "persistence", "rdb_bgsave_in_progress"), "0");
    assert!(children_of(primary.pid()).is_empty());
    // The stream follows the image.
    assert_eq!(reply(&mut c, &["SET", "after", "sync"]), "+OK\r\n");
    support::eventually("the write after the image arrives", || {
        reply(&mut r, &["GET", "after"]) == "$4\r\nsync\r\n"
    });
    assert!(info(&mut c, "replication", "slave0").contains("state=online"));
}

#[test]
fn a_killed_transfer_child_is_collected_and_its_replica_syncs_again() {
    // 100 ms a key: the first transfer would take 10 s.
    let primary = diskless_primary("100000", 100);
    let mut c = primary.conn();
    let replica = replica_of(&primary);
    let child = transfer_child(&primary);
    // The next transfer goes at once (the running one keeps its pace).
    assert_eq!(
        reply(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "0"]),
        "+OK\r\n"
    );
    // SAFETY: a signal to the server's child, as the OOM killer would send it.
    unsafe { libc::kill(child, libc::SIGKILL) };
    primary.wait_for_log("Background transfer terminated by signal 9");
    primary.wait_for_log("SYNC failed. BGSAVE child returned an error");
    // The replica was dropped with the child; it asks again and gets a whole image.
    let mut r = replica.conn();
    support::eventually("the replica syncs again", || {
        reply(&mut r, &["DBSIZE"]) == ":100\r\n"
    });
    support::eventually("no transfer left", || {
        info(&mut c, "persistence", "rdb_bgsave_in_progress") == "0"
    });
    assert!(info(&mut c, "stats", "sync_full").parse::<u32>().unwrap() >= 2);
}

#[test]
fn a_transfer_child_ends_when_its_primary_is_killed() {
    let mut primary = diskless_primary("100000", 100);
    let _replica = replica_of(&primary);
    let child = transfer_child(&primary);
    primary.signal(libc::SIGKILL);
    primary.wait();
    // Its input closed with the primary: it ends (and, an orphan, is reaped or left a zombie).
    support::eventually("the child ends", || {
        std::fs::read_to_string(format!("/proc/{child}/stat")).map_or(true, |stat| {
            stat[stat.rfind(')').unwrap() + 2..].starts_with('Z')
        })
    });
}

#[test]
fn a_slow_replica_paces_its_diskless_transfer_and_the_primary_buffers_little() {
    // 5,000 keys of 4 KB (more than the sockets between them hold); the replica pauses 0.5 ms
    // a key as it loads: 2.5 s of transfer at least.
    let primary = diskless_primary("0", 0);
    let mut c = primary.conn();
    // Uncompressed, so that the image is as big as the data.
    assert_eq!(
        reply(&mut c, &["CONFIG", "SET", "rdbcompression", "no"]),
        "+OK\r\n"
    );
    let big = "x".repeat(4096);
    for i in 0..5000 {
        let key = format!("key:{i}");
        assert_eq!(reply(&mut c, &["SET", &key, &big]), "+OK\r\n");
    }
    let port = primary.port.to_string();
    let replica = Proc::start(&[
        "--save",
        "",
        "--repl-diskless-load",
        "swapdb",
        "--key-load-delay",
        "500",
        "--replicaof",
        "127.0.0.1",
        &port,
    ]);
    replica.wait_for_log("MASTER <-> REPLICA sync: Loading DB in memory");
    std::thread::sleep(Duration::from_millis(500));
    // Half a second in, the image is still going out through the child, and the primary holds
    // a few pieces of it for the replica, not the image.
    assert_eq!(children_of(primary.pid()).len(), 1, "{}", primary.log());
    let list = reply(&mut c, &["CLIENT", "LIST", "TYPE", "REPLICA"]);
    let omem: usize = list
        .split_whitespace()
        .find_map(|f| f.strip_prefix("omem="))
        .and_then(|v| v.parse().ok())
        .expect("the replica's omem");
    assert!(omem < 1 << 20, "omem={omem}");
    let mut r = replica.conn();
    support::eventually("the replica loads every key", || {
        reply(&mut r, &["DBSIZE"]) == ":5000\r\n"
    });
    primary.wait_for_log("Diskless rdb transfer, done reading from pipe, 1 replicas still up.");
}

/// A primary whose full syncs go through a BGSAVE to disk, `delay_us` a key.
fn disk_primary(delay_us: &str, keys: usize, save: &str) -> Proc {
    let p = Proc::start(&[
        "--save",
        save,
        "--repl-diskless-sync",
        "no",
        "--rdb-key-save-delay",
        delay_us,
    ]);
    let mut c = p.conn();
    for i in 0..keys {
        let key = format!("key:{i}");
        assert_eq!(reply(&mut c, &["SET", &key, "value"]), "+OK\r\n");
    }
    p
}

#[test]
fn disk_full_syncs_share_one_bgsave_and_get_its_file() {
    // 20 keys at 50 ms: the save takes a second.
    let primary = disk_primary("50000", 20, "");
    let mut c = primary.conn();
    let first = replica_of(&primary);
    primary.wait_for_log("Starting BGSAVE for SYNC with target: disk");
    let child = children_of(primary.pid());
    assert_eq!(child.len(), 1, "the save's child");
    primary.wait_for_log(&format!("Background saving started by pid {}", child[0]));
    assert_eq!(info(&mut c, "persistence", "rdb_bgsave_in_progress"), "1");
    assert!(info(&mut c, "replication", "slave0").contains("state=wait_bgsave"));
    // A second replica arriving meanwhile shares the save.
    let second = replica_of(&primary);
    primary.wait_for_log("Waiting for end of BGSAVE for SYNC");
    for replica in [&first, &second] {
        let mut r = replica.conn();
        support::eventually("the replica has the file's keys", || {
            reply(&mut r, &["DBSIZE"]) == ":20\r\n"
        });
    }
    assert_eq!(
        primary.log().matches("Background saving started").count(),
        1
    );
    assert!(primary.dir.join("dump.rdb").exists());
    // Both follow the stream from the file's offset.
    assert_eq!(reply(&mut c, &["SET", "after", "file"]), "+OK\r\n");
    for replica in [&first, &second] {
        let mut r = replica.conn();
        support::eventually("the write after the file arrives", || {
            reply(&mut r, &["GET", "after"]) == "$4\r\nfile\r\n"
        });
    }
}

#[test]
fn a_bgsave_no_replica_waits_for_is_killed_unless_save_points_want_it() {
    for (save, killed) in [("", true), ("900 1", false)] {
        // A second a key: the save would take 10 s.
        let primary = disk_primary("1000000", 10, save);
        let mut c = primary.conn();
        let replica = replica_of(&primary);
        primary.wait_for_log("Starting BGSAVE for SYNC with target: disk");
        assert_eq!(
            reply(&mut replica.conn(), &["REPLICAOF", "NO", "ONE"]),
            "+OK\r\n"
        );
        if killed {
            primary.wait_for_log("Background saving terminated by signal 10");
            assert_eq!(info(&mut c, "persistence", "rdb_bgsave_in_progress"), "0");
        } else {
            support::eventually("the replica is gone", || {
                info(&mut c, "replication", "connected_slaves") == "0"
            });
            std::thread::sleep(Duration::from_millis(200));
            assert_eq!(info(&mut c, "persistence", "rdb_bgsave_in_progress"), "1");
        }
    }
}

#[test]
fn a_replica_link_that_makes_a_reply_is_closed() {
    let primary = Proc::start(&["--save", ""]);
    for (sync, command, name) in [
        (&[&b"SYNC"[..]][..], &[&b"PING"[..]][..], "ping"),
        (
            &[&b"PSYNC"[..], b"?", b"-1"][..],
            &[&b"GET"[..], b"foo"][..],
            "get",
        ),
    ] {
        let mut link = primary.conn();
        link.send_raw(&Conn::encode(sync));
        // The image comes first (a BGSAVE's file); then the command, which must not answer.
        std::thread::sleep(Duration::from_millis(300));
        link.send_raw(&Conn::encode(command));
        let received = link.read_to_close();
        assert!(received.windows(5).any(|w| w == b"REDIS"), "the image came");
        primary.wait_for_log(&format!(
            "Replica generated a reply to command '{name}', disconnecting it: id="
        ));
    }
    // GET touches the keyspace: refused, and the error logged as Redis logs one to a replica.
    assert!(primary.log().contains(
        "== CRITICAL == This master is sending an error to its replica: 'Replica can't interact with the keyspace' after processing the command 'get'"
    ));
    let mut c = primary.conn();
    assert_eq!(reply(&mut c, &["PING"]), "+PONG\r\n");
    assert_eq!(
        reply(&mut c, &["PSYNC", "replicationid", "offset_str"]),
        "-ERR value is not an integer or out of range\r\n"
    );
    primary.wait_for_log("asks for synchronization but with a wrong offset");
}

/// The line of DEBUG HTSTATS's key table that gives its size.
fn key_table_size(c: &mut Conn) -> String {
    let stats = reply(c, &["DEBUG", "HTSTATS", "9"]);
    let line = stats.lines().find(|l| l.starts_with(" table size: "));
    line.unwrap_or_default().trim().to_string()
}

/// While a child process saves, the key tables do not grow (Redis's updateDictResizePolicy):
/// 4,098 keys stay in 4,096 buckets; once the child is gone and collected, the next write
/// grows the table to 8,192 (Redis's "Don't rehash if redis has child process").
#[test]
fn key_tables_do_not_resize_while_a_child_process_runs() {
    let p = Proc::start(&[
        "--save",
        "",
        "--rdb-key-save-delay",
        "1000000",
        "--enable-debug-command",
        "yes",
    ]);
    let mut c = p.conn();
    reply(&mut c, &["SELECT", "9"]);
    assert_eq!(reply(&mut c, &["DEBUG", "POPULATE", "4096"]), "+OK\r\n");
    assert_eq!(key_table_size(&mut c), "table size: 4096");
    assert_eq!(reply(&mut c, &["BGSAVE"]), "+Background saving started\r\n");
    let child = children_of(p.pid())[0];
    assert_eq!(reply(&mut c, &["MSET", "k1", "v1", "k2", "v2"]), "+OK\r\n");
    assert_eq!(key_table_size(&mut c), "table size: 4096");
    // SAFETY: kill only sends a signal, to the server's own child.
    unsafe { libc::kill(child, libc::SIGKILL) };
    support::eventually("the child is collected", || {
        info(&mut c, "persistence", "rdb_bgsave_in_progress") == "0"
    });
    p.wait_for_log("Background saving terminated by signal 9");
    // The tick that sees the child gone lets the tables resize again: a write then grows it.
    let mut n = 3;
    support::eventually("a write grows the table", || {
        n += 1;
        reply(&mut c, &["SET", &format!("k{n}"), "v"]);
        key_table_size(&mut c) == "table size: 8192"
    });
}

/// The process title of `binary` run as `/opt/staged/src/redis-server` with a config file, as
/// /proc/<pid>/cmdline shows it: at start (the default template), then after CONFIG SET of
/// unit/other's template; the port and the directory written as `<port>` and `<dir>`. And the
/// answer to a template naming an unknown variable, and INFO's `executable`.
fn process_titles(binary: &str) -> Vec<String> {
    use std::os::unix::process::CommandExt;
    let dir = support::server_dir();
    let port = support::free_port();
    let conf = dir.join("title.conf");
    std::fs::write(&conf, format!("port {port}\nbind 127.0.0.1\nsave \"\"\n")).unwrap();
    let mut child = Command::new(binary)
        .arg0("/opt/staged/src/redis-server")
        .current_dir(&dir)
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut conn = None;
    support::eventually("the server to listen", || {
        conn = Conn::connect(([127, 0, 0, 1], port).into()).ok();
        conn.is_some()
    });
    let mut conn = conn.unwrap();
    // Served: the start-up (the title included) is over.
    assert_eq!(reply(&mut conn, &["PING"]), "+PONG\r\n");
    let dir_text = std::fs::canonicalize(&dir).unwrap().display().to_string();
    let cmdline = |pid: u32| {
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        String::from_utf8_lossy(&raw)
            .trim_end_matches('\0')
            .replace('\0', "|")
            .replace(&port.to_string(), "<port>")
            .replace(&dir_text, "<dir>")
    };
    let mut seen = vec![cmdline(child.id())];
    let template = "TEST {title} {listen-addr} {port} {tls-port} {unixsocket} {config-file}";
    seen.push(reply(
        &mut conn,
        &["CONFIG", "SET", "proc-title-template", template],
    ));
    seen.push(cmdline(child.id()));
    seen.push(reply(
        &mut conn,
        &["CONFIG", "SET", "proc-title-template", "{x}"],
    ));
    seen.push(support::info_field(&mut conn, "server", "executable").unwrap());
    let _ = child.kill();
    let _ = child.wait();
    seen
}

/// The title is written over the command line as Redis's `setproctitle` writes it (Redis 7.0.15's
/// unit/other reads it back), for `ps` and /proc.
#[test]
fn the_process_title_follows_proc_title_template_as_redis_sets_it() {
    let ours = process_titles(BIN);
    assert_eq!(
        ours,
        [
            "/opt/staged/src/redis-server 127.0.0.1:<port>",
            "+OK\r\n",
            "TEST /opt/staged/src/redis-server 127.0.0.1:<port> <port> 0  <dir>/title.conf",
            "-ERR CONFIG SET failed (possibly related to argument 'proc-title-template') - template format is invalid or contains unknown variables\r\n",
            "/opt/staged/src/redis-server",
        ]
    );
    let test = "the_process_title_follows_proc_title_template_as_redis_sets_it";
    if let Some(redis) = support::find_binary("redis-server", test) {
        assert_eq!(ours, process_titles(&redis));
    }
}
