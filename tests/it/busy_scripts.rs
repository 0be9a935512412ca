//! Scripts that run past `busy-reply-threshold`: what the other clients get while a Lua script
//! (EVAL) or a function (FCALL) is busy, and what happens when it is killed or the server is shut
//! down under it.
//!
//! Each scenario is a multi-client transcript run against a real redis-server 7.0 and against
//! embedis; the transcripts must be the same, byte for byte, except FUNCTION STATS's
//! `duration_ms` (checked to be an integer, then masked) and the client ids in HELLO replies.
//! Scripts here loop forever, so the servers must really run past the threshold: these tests use
//! wall time, not the manual clock. The threshold is set to 50 ms, and every wait is bounded —
//! a probe connection polls with PING until the first `-BUSY` arrives (a few seconds at most).
//! Covered: connections opened before and during the busy period, pipelined requests, requests
//! split across the busy period (in both directions), SCRIPT KILL / FUNCTION KILL and the
//! caller's error, UNKILLABLE scripts and SHUTDOWN (only NOSAVE stops the server, without a reply
//! to anyone), transactions that get BUSY while queueing, FUNCTION STATS's running_script, and
//! AUTH / HELLO on a server with a password.

use crate::support;

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::{check_transcripts, cmd, connect, frame, send, show, Conn, RedisServer};

const THRESHOLD_MS: &str = "50";
const PASSWORD: &str = "secret";

/// The library of test 5: `spin` loops without writing, `scribble` writes first.
const LIBRARY: &str = "#!lua name=busylib\n\
                       \n\
                       local function spin(keys, args)\n  while true do end\nend\n\
                       local function scribble(keys, args)\n  redis.call('set', 'w', '1')\n  while true do end\nend\n\
                       redis.register_function('spin', spin)\n\
                       redis.register_function('scribble', scribble)\n";

/// What the peer sends before closing, as readable text ("" = closed without a reply).
fn until_closed(conn: &mut Conn) -> String {
    show(&conn.read_to_close())
}

/// Polls with PING on `probe` until the server answers `-BUSY`: the script has run past the
/// threshold. (Before that the PING waits for the script, or is answered before it starts.)
fn wait_busy(probe: &mut Conn) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let reply = cmd(probe, &["PING"]);
        if reply.starts_with("-BUSY") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the script never got busy: {reply}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Polls until the server refuses connections: it has stopped.
fn wait_stopped(addr: SocketAddr) -> &'static str {
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(addr).is_ok() {
        assert!(
            Instant::now() < deadline,
            "the server at {addr} never stopped"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    "stopped"
}

/// Replaces the decimal digits that follow each `marker` in `text` with `N`, after checking
/// there are some (the value is an integer, whatever it is).
fn mask_number_after(text: &str, marker: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let (head, tail) = rest.split_at(at + marker.len());
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        assert!(digits > 0, "no integer after {marker} in {text}");
        out.push('N');
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

/// FUNCTION STATS with `duration_ms` masked (RESP2 and RESP3 both send it as `:<n>`).
fn function_stats(conn: &mut Conn) -> String {
    let stats = cmd(conn, &["FUNCTION", "STATS"]);
    if stats.starts_with('-') {
        return stats;
    }
    mask_number_after(&stats, "duration_ms\\r\\n:")
}

/// A HELLO reply without the client id.
fn hello(conn: &mut Conn, args: &[&str]) -> String {
    let reply = cmd(conn, args);
    if reply.starts_with('-') {
        return reply;
    }
    mask_number_after(&reply, "$2\\r\\nid\\r\\n:")
}

/// A transcript: labelled replies, in order.
struct Log(Vec<String>);

impl Log {
    fn step(&mut self, label: &str, value: impl Into<String>) {
        self.0.push(format!("{label}: {}", value.into()));
    }
}

/// Connects, sets the threshold and empties the server.
fn setup(addr: SocketAddr, password: Option<&str>) -> Conn {
    let mut admin = connect(addr);
    if let Some(password) = password {
        assert_eq!(cmd(&mut admin, &["AUTH", password]), "+OK\\r\\n");
    }
    let threshold = ["CONFIG", "SET", "busy-reply-threshold", THRESHOLD_MS];
    assert_eq!(cmd(&mut admin, &threshold), "+OK\\r\\n");
    assert_eq!(cmd(&mut admin, &["FLUSHALL"]), "+OK\\r\\n");
    assert_eq!(cmd(&mut admin, &["FUNCTION", "FLUSH"]), "+OK\\r\\n");
    admin
}

/// 1. An EVAL that never writes, killed: clients connected before and during the busy period,
///    pipelined requests, the wrong KILL, SCRIPT KILL, then everything back to normal.
fn killed_eval(addr: SocketAddr, log: &mut Log) {
    let mut a = setup(addr, None);
    let mut before = connect(addr);
    let mut probe = connect(addr);
    log.step("set", cmd(&mut a, &["SET", "k", "v"]));
    log.step("kill with no script", cmd(&mut before, &["SCRIPT", "KILL"]));

    send(&mut a, &["EVAL", "while true do end", "0"]);
    wait_busy(&mut probe);
    let mut during = connect(addr);
    for (name, conn) in [("before", &mut before), ("during", &mut during)] {
        log.step(&format!("{name} ping"), cmd(conn, &["PING"]));
        log.step(&format!("{name} get"), cmd(conn, &["GET", "k"]));
        log.step(&format!("{name} set"), cmd(conn, &["SET", "k", "changed"]));
        // Two requests in one write: two replies.
        let mut two = Conn::encode(&[b"PING"]);
        two.extend_from_slice(&Conn::encode(&[b"GET", b"k"]));
        conn.send_raw(&two);
        log.step(&format!("{name} pipelined 1"), frame(conn));
        log.step(&format!("{name} pipelined 2"), frame(conn));
        log.step(&format!("{name} inline"), {
            conn.send_raw(b"PING\r\n");
            frame(conn)
        });
    }
    log.step("unknown command", cmd(&mut during, &["NOSUCH"]));
    log.step("wrong arity", cmd(&mut during, &["GET"]));
    log.step(
        "unknown subcommand",
        cmd(&mut during, &["SCRIPT", "NOSUCH"]),
    );
    log.step("function kill", cmd(&mut during, &["FUNCTION", "KILL"]));
    log.step("function stats", function_stats(&mut during));
    log.step("shutdown", cmd(&mut during, &["SHUTDOWN"]));
    log.step("shutdown save", cmd(&mut during, &["SHUTDOWN", "SAVE"]));
    log.step("shutdown abort", cmd(&mut during, &["SHUTDOWN", "ABORT"]));
    log.step("shutdown syntax", cmd(&mut during, &["SHUTDOWN", "NOSUCH"]));
    log.step("script kill", cmd(&mut during, &["SCRIPT", "KILL"]));
    log.step("caller", frame(&mut a));

    log.step("kill again", cmd(&mut during, &["SCRIPT", "KILL"]));
    for (name, conn) in [
        ("caller", &mut a),
        ("before", &mut before),
        ("during", &mut during),
        ("probe", &mut probe),
    ] {
        log.step(&format!("{name} ping after"), cmd(conn, &["PING"]));
    }
    log.step("data unchanged", cmd(&mut during, &["GET", "k"]));
    log.step("function stats after", function_stats(&mut during));
}

/// 2. A script that wrote before looping: no KILL stops it, SHUTDOWN only with NOSAVE — which
///    closes every connection without a reply, the script's caller's included.
fn unkillable(addr: SocketAddr, log: &mut Log, function: bool) {
    let mut a = setup(addr, None);
    let mut b = connect(addr);
    if function {
        log.step("load", cmd(&mut a, &["FUNCTION", "LOAD", LIBRARY]));
        send(&mut a, &["FCALL", "scribble", "0"]);
    } else {
        send(
            &mut a,
            &["EVAL", "redis.call('set','w','1') while true do end", "0"],
        );
    }
    wait_busy(&mut b);
    log.step("ping", cmd(&mut b, &["PING"]));
    log.step("script kill", cmd(&mut b, &["SCRIPT", "KILL"]));
    log.step("function kill", cmd(&mut b, &["FUNCTION", "KILL"]));
    log.step("shutdown", cmd(&mut b, &["SHUTDOWN"]));
    log.step("shutdown now", cmd(&mut b, &["SHUTDOWN", "NOW"]));
    log.step("shutdown save", cmd(&mut b, &["SHUTDOWN", "SAVE"]));
    send(&mut b, &["SHUTDOWN", "NOSAVE"]);
    log.step("shutdown nosave", until_closed(&mut b));
    // The port is closed by the time any connection is: Redis closes its listeners before
    // it exits (Redis's suite: "SHUTDOWN NOSAVE can kill a timedout script anyway").
    log.step("port", refused_now(addr));
    log.step("caller", until_closed(&mut a));
    log.step("server", wait_stopped(addr));
}

/// Whether a connection to `addr` is refused at once (no waiting, no retry).
fn refused_now(addr: SocketAddr) -> &'static str {
    match TcpStream::connect(addr) {
        Ok(_) => "accepted",
        Err(_) => "refused",
    }
}

/// 3. Requests split across the busy period: begun during it and finished after the kill (the
///    bytes read while busy are not lost), and begun before the script and finished while busy
///    (then they get BUSY, as Redis reads and answers them).
fn split_requests(addr: SocketAddr, log: &mut Log) {
    let mut a = setup(addr, None);
    let mut b = connect(addr);
    let mut early = connect(addr);
    let mut early_inline = connect(addr);
    let mut probe = connect(addr);
    // Half a request each, sent before the script starts (a PING round trip on the same
    // connection cannot be used to make sure the server read it: it would not be answered).
    early.send_raw(b"*2\r\n$4\r\nECHO\r\n$5\r\nea");
    early_inline.send_raw(b"ECHO ear");
    log.step("set", cmd(&mut b, &["SET", "k", "v"]));
    // Give the server a moment to read the halves before the script starts; if it has not, the
    // transcript is the same, only this case is weaker.
    std::thread::sleep(Duration::from_millis(20));

    send(&mut a, &["EVAL", "while true do end", "0"]);
    wait_busy(&mut probe);
    let mut during = connect(addr);
    let mut during_inline = connect(addr);
    // A whole request and half of the next in one write: the server read the half when it
    // answered the whole one.
    b.send_raw(b"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nh\r\n$2\r\nh");
    log.step("pipelined with half", frame(&mut b));
    during.send_raw(b"PING\r\n*2\r\n$3\r\nGET\r\n$1");
    log.step("during pipelined with half", frame(&mut during));
    during_inline.send_raw(b"PING\r\nGET");
    log.step("during inline with half", frame(&mut during_inline));
    early.send_raw(b"rly\r\n");
    log.step("early rest while busy", frame(&mut early));
    early_inline.send_raw(b"ly\r\n");
    log.step("early inline rest while busy", frame(&mut early_inline));
    log.step("script kill", cmd(&mut probe, &["SCRIPT", "KILL"]));
    log.step("caller", frame(&mut a));

    b.send_raw(b"i\r\n");
    log.step("rest after kill", frame(&mut b));
    during.send_raw(b"\r\nh\r\n");
    log.step("during rest after kill", frame(&mut during));
    during_inline.send_raw(b" h\r\n");
    log.step("during inline rest after kill", frame(&mut during_inline));
    for (name, conn) in [("early", &mut early), ("early inline", &mut early_inline)] {
        log.step(&format!("{name} ping after"), cmd(conn, &["PING"]));
    }
}

/// 4. Transactions across the busy period: MULTI before the script, a command queued while busy
///    gets BUSY and dooms the EXEC; MULTI, WATCH and DISCARD themselves are allowed while busy.
fn transactions(addr: SocketAddr, log: &mut Log) {
    let mut a = setup(addr, None);
    let mut m = connect(addr);
    let mut clean = connect(addr);
    let mut during = connect(addr);
    let mut probe = connect(addr);
    log.step("multi", cmd(&mut m, &["MULTI"]));
    log.step("queued before", cmd(&mut m, &["SET", "x", "before"]));
    log.step("clean multi", cmd(&mut clean, &["MULTI"]));

    send(&mut a, &["EVAL", "while true do end", "0"]);
    wait_busy(&mut probe);
    log.step("queued while busy", cmd(&mut m, &["SET", "x", "busy"]));
    log.step("ping in multi", cmd(&mut m, &["PING"]));
    log.step("nested multi", cmd(&mut m, &["MULTI"]));
    log.step("watch", cmd(&mut during, &["WATCH", "x"]));
    log.step("unwatch", cmd(&mut during, &["UNWATCH"]));
    log.step("watch again", cmd(&mut during, &["WATCH", "x"]));
    log.step("multi while busy", cmd(&mut during, &["MULTI"]));
    log.step("queued in it", cmd(&mut during, &["SET", "y", "1"]));
    log.step("discard while busy", cmd(&mut during, &["DISCARD"]));
    log.step("exec while busy", cmd(&mut during, &["EXEC"]));
    log.step("script kill", cmd(&mut probe, &["SCRIPT", "KILL"]));
    log.step("caller", frame(&mut a));

    log.step("exec", cmd(&mut m, &["EXEC"]));
    log.step("clean queued after", cmd(&mut clean, &["SET", "z", "1"]));
    log.step("clean exec", cmd(&mut clean, &["EXEC"]));
    log.step("x", cmd(&mut probe, &["GET", "x"]));
    log.step("y", cmd(&mut probe, &["GET", "y"]));
}

/// 5. A function that never writes: the KILL and BUSY texts name FUNCTION KILL, FUNCTION STATS
///    describes it (RESP2 and RESP3), FUNCTION KILL stops it.
fn killed_function(addr: SocketAddr, log: &mut Log) {
    let mut a = setup(addr, None);
    let mut b = connect(addr);
    let mut probe = connect(addr);
    log.step("load", cmd(&mut a, &["FUNCTION", "LOAD", LIBRARY]));
    log.step("stats idle", function_stats(&mut b));

    send(&mut a, &["FCALL", "spin", "1", "key1", "arg"]);
    wait_busy(&mut probe);
    let mut during = connect(addr);
    log.step("ping", cmd(&mut b, &["PING"]));
    log.step("during ping", cmd(&mut during, &["PING"]));
    log.step("fcall", cmd(&mut b, &["FCALL", "spin", "0"]));
    log.step("eval", cmd(&mut b, &["EVAL", "return 1", "0"]));
    log.step("script kill", cmd(&mut b, &["SCRIPT", "KILL"]));
    log.step("shutdown", cmd(&mut b, &["SHUTDOWN"]));
    log.step("stats", function_stats(&mut b));
    log.step("hello 3", hello(&mut during, &["HELLO", "3"]));
    log.step("stats resp3", function_stats(&mut during));
    log.step("function kill", cmd(&mut during, &["FUNCTION", "KILL"]));
    log.step("caller", frame(&mut a));

    log.step("kill again", cmd(&mut b, &["FUNCTION", "KILL"]));
    log.step("stats after", function_stats(&mut b));
    for (name, conn) in [("caller", &mut a), ("b", &mut b), ("during", &mut during)] {
        log.step(&format!("{name} ping after"), cmd(conn, &["PING"]));
    }
}

/// 6. With a password: NOAUTH comes before BUSY; AUTH, HELLO … AUTH and RESET work while busy.
fn with_password(addr: SocketAddr, log: &mut Log) {
    let mut a = setup(addr, Some(PASSWORD));
    let mut before = connect(addr);
    let mut probe = connect(addr);
    assert_eq!(cmd(&mut probe, &["AUTH", PASSWORD]), "+OK\\r\\n");

    send(&mut a, &["EVAL", "while true do end", "0"]);
    wait_busy(&mut probe);
    let mut during = connect(addr);
    for (name, conn) in [("before", &mut before), ("during", &mut during)] {
        log.step(&format!("{name} ping"), cmd(conn, &["PING"]));
        log.step(&format!("{name} unknown"), cmd(conn, &["NOSUCH"]));
        log.step(&format!("{name} wrong arity"), cmd(conn, &["GET"]));
        log.step(
            &format!("{name} script kill"),
            cmd(conn, &["SCRIPT", "KILL"]),
        );
        log.step(&format!("{name} wrong auth"), cmd(conn, &["AUTH", "nope"]));
    }
    log.step("auth", cmd(&mut before, &["AUTH", PASSWORD]));
    log.step("ping after auth", cmd(&mut before, &["PING"]));
    log.step(
        "hello auth",
        hello(&mut during, &["HELLO", "3", "AUTH", "default", PASSWORD]),
    );
    log.step("ping after hello", cmd(&mut during, &["PING"]));
    log.step("hello 2", hello(&mut during, &["HELLO", "2"]));
    log.step("reset", cmd(&mut during, &["RESET"]));
    log.step("ping after reset", cmd(&mut during, &["PING"]));
    log.step("kill", cmd(&mut before, &["SCRIPT", "KILL"]));
    log.step("caller", frame(&mut a));
    log.step("during ping after", cmd(&mut during, &["PING"]));
    log.step("before ping after", cmd(&mut before, &["PING"]));
    log.step("quit", cmd(&mut during, &["QUIT"]));
    log.step("closed", until_closed(&mut during));
}

/// Runs `scenario` against redis-server (started with `redis_args`) and embedis (with a
/// password if given) and compares the transcripts.
fn compare(
    test: &str,
    password: Option<&str>,
    scenario: impl Fn(SocketAddr, &mut Log),
) -> Option<()> {
    compare_in(test, password, false, scenario)
}

/// [`compare`], with embedis's clients served through io_uring when `uring` (a busy script
/// then reads and writes their sockets through the ring).
fn compare_in(
    test: &str,
    password: Option<&str>,
    uring: bool,
    scenario: impl Fn(SocketAddr, &mut Log),
) -> Option<()> {
    // One scenario at a time: each keeps a core busy with its looping script, and the machine
    // may have only two.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let redis_args: Vec<&str> = password.map_or(vec![], |p| vec!["--requirepass", p]);
    let redis = RedisServer::start(test, &redis_args)?;
    let mut theirs = Log(Vec::new());
    scenario(redis.addr(), &mut theirs);
    if std::env::var_os("BUSY_TRACE").is_some() {
        eprintln!("{test} (redis):\n{}", theirs.0.join("\n"));
    }
    let mut builder = support::builder();
    if let Some(password) = password {
        builder = builder.password(password);
    }
    if uring {
        builder = builder.config("io-uring", "yes").unwrap();
    }
    let ours = builder.start().expect("start embedis");
    if uring {
        let mut c = connect(ours.addr());
        if let Some(password) = password {
            cmd(&mut c, &["AUTH", password]);
        }
        support::assert_io_uring(&mut c);
    }
    let mut log = Log(Vec::new());
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        scenario(ours.addr(), &mut log)
    }));
    if let Err(panic) = ran {
        // A script may still be looping: dropping the server would wait for it forever.
        // SHUTDOWN NOSAVE stops the server, busy or not.
        if let Ok(mut conn) = Conn::connect(ours.addr()) {
            if let Some(password) = password {
                send(&mut conn, &["AUTH", password]);
            }
            send(&mut conn, &["SHUTDOWN", "NOSAVE"]);
            conn.read_to_close();
        }
        std::panic::resume_unwind(panic);
    }
    check_transcripts(test, &log.0, &theirs.0);
    Some(())
}

/// 8. ACL users while a script is busy: the ACL gate comes before the busy check, so a user
///    who may not run SCRIPT KILL gets -NOPERM (and one who may not GET, -NOPERM, not -BUSY).
fn acl_users_while_busy(addr: SocketAddr, log: &mut Log) {
    let mut a = setup(addr, None);
    let mut admin = connect(addr);
    let user = [
        "ACL", "SETUSER", "viewer", "on", ">pw", "~*", "+ping", "+set", "+auth",
    ];
    log.step("setuser", cmd(&mut admin, &user));
    let mut viewer = connect(addr);
    log.step("auth", cmd(&mut viewer, &["AUTH", "viewer", "pw"]));
    let mut probe = connect(addr);
    send(&mut a, &["EVAL", "while true do end", "0"]);
    wait_busy(&mut probe);
    log.step("viewer ping", cmd(&mut viewer, &["PING"]));
    log.step("viewer get", cmd(&mut viewer, &["GET", "k"]));
    log.step("viewer set", cmd(&mut viewer, &["SET", "k", "v"]));
    log.step("viewer script kill", cmd(&mut viewer, &["SCRIPT", "KILL"]));
    log.step("admin script kill", cmd(&mut admin, &["SCRIPT", "KILL"]));
    log.step("caller", frame(&mut a));
    log.step("deluser", cmd(&mut admin, &["ACL", "DELUSER", "viewer"]));
}

#[test]
fn acl_users_while_busy_match_redis() {
    compare("busy_scripts::acl_users", None, acl_users_while_busy);
}

#[test]
fn killed_eval_matches_redis() {
    compare("busy_scripts::killed_eval", None, killed_eval);
}

#[test]
fn killed_eval_through_io_uring_matches_redis() {
    compare_in("busy_scripts::killed_eval_uring", None, true, killed_eval);
}

#[test]
fn requests_split_across_busy_period_through_io_uring_match_redis() {
    compare_in(
        "busy_scripts::split_requests_uring",
        None,
        true,
        split_requests,
    );
}

#[test]
fn unkillable_eval_and_shutdown_nosave_match_redis() {
    compare("busy_scripts::unkillable_eval", None, |addr, log| {
        unkillable(addr, log, false)
    });
}

#[test]
fn unkillable_function_and_shutdown_nosave_match_redis() {
    compare("busy_scripts::unkillable_function", None, |addr, log| {
        unkillable(addr, log, true)
    });
}

#[test]
fn requests_split_across_busy_period_match_redis() {
    compare("busy_scripts::split_requests", None, split_requests);
}

#[test]
fn transactions_across_busy_period_match_redis() {
    compare("busy_scripts::transactions", None, transactions);
}

#[test]
fn killed_function_matches_redis() {
    compare("busy_scripts::killed_function", None, killed_function);
}

#[test]
fn auth_and_hello_while_busy_match_redis() {
    compare("busy_scripts::with_password", Some(PASSWORD), with_password);
}
