//! Transactions seen from several connections: WATCH broken (or not) by other clients' writes and
//! transactions, by expiry, FLUSHALL and SWAPDB; a transaction's writes waking blocked clients;
//! CLIENT PAUSE holding back queued writes and EXECs that would write; what CLIENT LIST, MONITOR
//! and INFO commandstats show of a transaction.
//!
//! WATCH broken or kept by other clients' writes, transactions and FLUSHALL, and a watching
//! client that goes away, are differential fixture lines: tests/diff/transactions_clients.txt.
//! The rest — CLIENT LIST's transaction fields, MONITOR, INFO commandstats, expiry — is one
//! scenario transcript here, run against a real redis-server 7.0 and against embedis (both I/O
//! modes); the transcripts must be the same. Time passes in the scenario through a callback: on
//! Redis it sleeps (keys get TTLs of 100 ms, active expiry is off so only the rules under test
//! delete them), on embedis it advances the manual clock.

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::{check_transcripts, cmd, connect, frame, send, Conn, RedisServer};

/// The CLIENT LIST fields of the client named `name` that describe its transaction state.
fn client_state(probe: &mut Conn, name: &str) -> String {
    let list = cmd(probe, &["CLIENT", "LIST"]);
    let line = list
        .split("\\n")
        .find(|l| l.contains(&format!(" name={name} ")))
        .unwrap_or_else(|| panic!("no client {name} in {list}"));
    line.split(' ')
        .filter(|f| {
            ["flags=", "multi=", "cmd="]
                .iter()
                .any(|p| f.starts_with(p))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Polls CLIENT LIST until the client named `name` has flag `b` (blocked or postponed).
fn wait_blocked(probe: &mut Conn, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let state = client_state(probe, name);
        let flags = state.split(' ').next().unwrap_or("");
        if flags.contains('b') {
            return;
        }
        assert!(Instant::now() < deadline, "{name} never blocked: {state}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A MONITOR line without its timestamp and client address.
fn monitor_line(conn: &mut Conn) -> String {
    let line = frame(conn);
    match line.split_once("] ") {
        Some((head, args)) => {
            let db = head.split('[').nth(1).and_then(|r| r.split(' ').next());
            format!("[{}] {args}", db.unwrap_or("?"))
        }
        None => line,
    }
}

/// `cmdstat_<name>` lines of INFO commandstats without the timings.
fn command_stats(conn: &mut Conn, names: &[&str]) -> Vec<String> {
    let info = cmd(conn, &["INFO", "commandstats"]);
    let mut lines = Vec::new();
    for name in names {
        let prefix = format!("cmdstat_{name}:");
        let line = info
            .split("\\r\\n")
            .find(|l| l.starts_with(&prefix))
            .map(|l| {
                l.split(',')
                    .filter(|f| !f.contains("usec"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_else(|| format!("{prefix} none"));
        lines.push(line);
    }
    lines
}

/// EXEC of a transaction that only pings: shows whether the watch held.
fn exec_ping(conn: &mut Conn) -> String {
    cmd(conn, &["MULTI"]);
    cmd(conn, &["PING"]);
    cmd(conn, &["EXEC"])
}

fn transcript(addr: SocketAddr, pass_ms: &dyn Fn(u64)) -> Vec<String> {
    let mut log = Vec::new();
    let mut a = connect(addr);
    let mut b = connect(addr);
    let mut c = connect(addr);
    let mut probe = connect(addr);
    for (conn, name) in [(&mut a, "a"), (&mut b, "b"), (&mut c, "c")] {
        cmd(conn, &["CLIENT", "SETNAME", name]);
    }
    cmd(&mut a, &["FLUSHALL"]);
    cmd(&mut a, &["CONFIG", "RESETSTAT"]);
    macro_rules! step {
        ($label:expr, $value:expr) => {
            log.push(format!("{}: {}", $label, $value))
        };
    }

    // What CLIENT LIST shows: x in MULTI, d once a watched key changed, the queue length
    // (which stops growing once the transaction is bound to fail).
    step!("idle", client_state(&mut probe, "a"));
    cmd(&mut a, &["MULTI"]);
    cmd(&mut a, &["SET", "x", "1"]);
    cmd(&mut a, &["GET", "x"]);
    step!("queued two", client_state(&mut probe, "a"));
    cmd(&mut a, &["DISCARD"]);
    cmd(&mut a, &["WATCH", "k"]);
    cmd(&mut b, &["SET", "k", "3"]);
    step!("dirty", client_state(&mut probe, "a"));
    cmd(&mut a, &["MULTI"]);
    cmd(&mut a, &["SET", "x", "1"]);
    step!("dirty in multi", client_state(&mut probe, "a"));
    step!("exec dirty", cmd(&mut a, &["EXEC"]));
    cmd(&mut a, &["MULTI"]);
    cmd(&mut a, &["NOSUCH"]);
    cmd(&mut a, &["GET", "x"]);
    step!("aborted", client_state(&mut probe, "a"));
    step!("exec aborted", cmd(&mut a, &["EXEC"]));
    step!("after", client_state(&mut probe, "a"));

    // A transaction's writes wake blocked clients once it has run, in the order they blocked;
    // a key the transaction filled and emptied again wakes nobody.
    send(&mut c, &["BLPOP", "q", "0"]);
    wait_blocked(&mut probe, "c");
    cmd(&mut a, &["MULTI"]);
    cmd(&mut a, &["RPUSH", "q", "z"]);
    cmd(&mut a, &["LPOP", "q"]);
    step!("exec push-pop", cmd(&mut a, &["EXEC"]));
    step!("c still blocked", client_state(&mut probe, "c"));
    send(&mut b, &["BLPOP", "q", "0"]);
    wait_blocked(&mut probe, "b");
    cmd(&mut a, &["MULTI"]);
    cmd(&mut a, &["RPUSH", "q", "x"]);
    cmd(&mut a, &["RPUSH", "q", "y"]);
    cmd(&mut a, &["RPUSH", "q", "w"]);
    step!("exec push", cmd(&mut a, &["EXEC"]));
    step!("c woken", frame(&mut c));
    step!("b woken", frame(&mut b));
    step!("left", cmd(&mut a, &["LRANGE", "q", "0", "-1"]));

    // CLIENT PAUSE WRITE: a read-only transaction runs; a queued write waits for the pause to
    // end before it is even queued; an EXEC with queued writes waits too.
    cmd(&mut a, &["MULTI"]);
    cmd(&mut a, &["GET", "x"]);
    step!(
        "pause",
        cmd(&mut b, &["CLIENT", "PAUSE", "100000", "WRITE"])
    );
    step!("read-only exec in pause", cmd(&mut a, &["EXEC"]));
    cmd(&mut a, &["MULTI"]);
    send(&mut a, &["SET", "x", "paused"]);
    wait_blocked(&mut probe, "a");
    step!("write postponed", client_state(&mut probe, "a"));
    step!("unpause", cmd(&mut b, &["CLIENT", "UNPAUSE"]));
    step!("queued after pause", frame(&mut a));
    step!(
        "pause",
        cmd(&mut b, &["CLIENT", "PAUSE", "100000", "WRITE"])
    );
    send(&mut a, &["EXEC"]);
    wait_blocked(&mut probe, "a");
    step!("exec postponed", client_state(&mut probe, "a"));
    step!("unpause", cmd(&mut b, &["CLIENT", "UNPAUSE"]));
    step!("exec after pause", frame(&mut a));
    // MULTI and DISCARD themselves are not writes.
    step!(
        "pause",
        cmd(&mut b, &["CLIENT", "PAUSE", "100000", "WRITE"])
    );
    step!("multi in pause", cmd(&mut a, &["MULTI"]));
    step!("discard in pause", cmd(&mut a, &["DISCARD"]));
    step!("unpause", cmd(&mut b, &["CLIENT", "UNPAUSE"]));

    // MONITOR: MULTI when sent, the queued commands when EXEC runs them, then EXEC; an aborted
    // or refused EXEC shows alone; queueing errors show nothing.
    let mut m = connect(addr);
    cmd(&mut m, &["MONITOR"]);
    cmd(&mut a, &["MULTI"]);
    cmd(&mut a, &["SET", "k", "1"]);
    cmd(&mut a, &["GET", "k"]);
    cmd(&mut a, &["EXEC"]);
    cmd(&mut a, &["MULTI"]);
    cmd(&mut a, &["NOSUCH"]);
    cmd(&mut a, &["SET", "k"]);
    cmd(&mut a, &["EXEC"]);
    cmd(&mut a, &["EXEC", "extra"]);
    cmd(&mut a, &["WATCH", "k"]);
    cmd(&mut b, &["DEL", "k"]);
    exec_ping(&mut a);
    for _ in 0..11 {
        step!("monitor", monitor_line(&mut m));
    }
    drop(m);

    // Statistics of all of the above.
    for line in command_stats(
        &mut probe,
        &[
            "exec", "multi", "discard", "watch", "set", "get", "incr", "blpop", "rpush", "lpop",
        ],
    ) {
        step!("stats", line);
    }

    // Expiry. Active expiry is off: keys only go when someone looks, or by the rules under test.
    cmd(&mut b, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let expired_key = |a: &mut Conn| {
        cmd(a, &["SET", "e", "v", "PX", "100"]);
        pass_ms(200);
    };
    // Alive at WATCH, expired by EXEC (still stored): the watch is broken.
    cmd(&mut a, &["SET", "e", "v", "PX", "100"]);
    cmd(&mut a, &["WATCH", "e"]);
    pass_ms(200);
    step!("expired after watch", exec_ping(&mut a));
    // …and also once deleted by someone looking.
    cmd(&mut a, &["SET", "e", "v", "PX", "100"]);
    cmd(&mut a, &["WATCH", "e"]);
    pass_ms(200);
    step!("b get", cmd(&mut b, &["GET", "e"]));
    step!("expired after watch, deleted", exec_ping(&mut a));
    // Already expired at WATCH: nobody touching it, or its deletion, is no change.
    expired_key(&mut a);
    cmd(&mut a, &["WATCH", "e"]);
    step!("expired before watch", exec_ping(&mut a));
    expired_key(&mut a);
    cmd(&mut a, &["WATCH", "e"]);
    step!("b get", cmd(&mut b, &["GET", "e"]));
    step!("expired before watch, deleted", exec_ping(&mut a));
    expired_key(&mut a);
    cmd(&mut a, &["WATCH", "e"]);
    step!("b flushall", cmd(&mut b, &["FLUSHALL"]));
    step!("expired before watch, flushed", exec_ping(&mut a));
    // …but writing it is a change, deleted first or not.
    expired_key(&mut a);
    cmd(&mut a, &["WATCH", "e"]);
    step!("b set", cmd(&mut b, &["SET", "e", "new"]));
    step!("expired before watch, rewritten", exec_ping(&mut a));
    expired_key(&mut a);
    cmd(&mut a, &["WATCH", "e"]);
    step!("b exists", cmd(&mut b, &["EXISTS", "e"]));
    step!("b set", cmd(&mut b, &["SET", "e", "new"]));
    step!(
        "expired before watch, deleted, rewritten",
        exec_ping(&mut a)
    );
    // SWAPDB: a missing key replaced by an expired one is no change; by a live one it is.
    cmd(&mut b, &["SELECT", "1"]);
    cmd(&mut b, &["SET", "s", "v", "PX", "100"]);
    pass_ms(200);
    cmd(&mut a, &["WATCH", "s"]);
    step!("swapdb", cmd(&mut b, &["SWAPDB", "0", "1"]));
    step!("swapped in an expired key", exec_ping(&mut a));
    cmd(&mut a, &["WATCH", "s"]);
    step!("swapdb back", cmd(&mut b, &["SWAPDB", "0", "1"]));
    step!("swapped an expired key out", exec_ping(&mut a));
    cmd(&mut b, &["SET", "live", "v"]);
    cmd(&mut a, &["WATCH", "live", "other"]);
    step!("swapdb", cmd(&mut b, &["SWAPDB", "0", "1"]));
    step!("swapped in a live key", exec_ping(&mut a));
    cmd(&mut a, &["WATCH", "nothing"]);
    step!("swapdb", cmd(&mut b, &["SWAPDB", "0", "1"]));
    step!("swapped nothing", exec_ping(&mut a));
    cmd(&mut b, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);

    log
}

fn embedis_with_manual_clock(io_threads: &str) -> embedis::Server {
    support::builder()
        .clock(embedis::Clock::manual())
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("io-threads", io_threads)
        .unwrap()
        .start()
        .unwrap()
}

#[test]
fn transactions_transcript_matches_redis() {
    let Some(redis) = RedisServer::start("transactions", &["--enable-debug-command", "yes"]) else {
        return;
    };
    let sleep = |ms: u64| std::thread::sleep(Duration::from_millis(ms));
    let theirs = transcript(redis.addr(), &sleep);
    if std::env::var_os("TRANSACTIONS_TRACE").is_some() {
        eprintln!("{}", theirs.join("\n"));
    }
    for io_threads in ["1", "2"] {
        let ours = embedis_with_manual_clock(io_threads);
        let advance = |ms: u64| {
            assert!(ours.clock().advance(Duration::from_millis(ms)));
        };
        let label = format!("transactions, io-threads {io_threads}");
        check_transcripts(&label, &transcript(ours.addr(), &advance), &theirs);
    }
}
