//! Fault injection and the DEBUG test controls: each fault through the Rust API
//! (`server.faults()`) and over the wire (DEBUG FAULT / PAUSE / DROP-CONNECTIONS), DEBUG CLOCK,
//! and the gate that keeps all of it behind `enable-debug-command`.
//!
//! Time is the server's manual clock, moved by the test; the only real waits are short bounded
//! ones that check that nothing arrived.

use crate::support;

use embedis::{Clock, FaultAction, FaultRule, Server};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{bulk, held_commands, manual_server, wait_blocked, Client};

/// A server that allows DEBUG, on a manual clock.
fn debug_server() -> Server {
    support::builder()
        .clock(Clock::manual())
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap()
}

// ---- Errors ----

#[test]
fn error_rule_answers_n_times_then_commands_run_again() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    server
        .faults()
        .error("set", "lock:*", "ERR injected failure", 2);
    assert_eq!(c.cmd(&["SET", "other", "v"]), "+OK\r\n", "another key");
    assert_eq!(c.cmd(&["GET", "lock:a"]), "$-1\r\n", "another command");
    assert_eq!(
        c.cmd(&["SET", "lock:a", "me", "NX", "PX", "30000"]),
        "-ERR injected failure\r\n"
    );
    assert_eq!(c.cmd(&["set", "lock:b", "me"]), "-ERR injected failure\r\n");
    assert_eq!(
        c.cmd(&["GET", "lock:a"]),
        "$-1\r\n",
        "the failed SET did not run"
    );
    assert!(server.faults().list().is_empty(), "spent after 2");
    assert_eq!(c.cmd(&["SET", "lock:a", "me", "NX"]), "+OK\r\n");
    // Injected errors count as errors, as any error reply does.
    let info = c.cmd(&["INFO", "errorstats"]);
    assert!(info.contains("errorstat_ERR:count=2"), "{info}");
}

#[test]
fn error_rule_for_always_matches_keys_of_scripts_until_cleared() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    server.faults().error(
        "eval*",
        "lock:{a}*",
        "READONLY You can't write against a read only replica.",
        0,
    );
    let release = "return redis.call('del', KEYS[1])";
    for _ in 0..3 {
        assert_eq!(
            c.cmd(&["EVAL", release, "1", "lock:{a}1"]),
            "-READONLY You can't write against a read only replica.\r\n"
        );
    }
    assert_eq!(c.cmd(&["EVAL", release, "1", "lock:{b}1"]), ":0\r\n");
    assert_eq!(c.cmd(&["EVAL", "return 1", "0"]), ":1\r\n", "no keys");
    let rules = server.faults().list();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].times, None);
    assert_eq!(
        rules[0].action,
        FaultAction::Error("READONLY You can't write against a read only replica.".into())
    );
    server.faults().clear();
    assert_eq!(c.cmd(&["EVAL", release, "1", "lock:{a}1"]), ":0\r\n");
}

#[test]
fn an_error_rule_fails_the_command_inside_a_script_as_it_fails_a_client_s() {
    // Redlock clients (node-redlock, Redisson) take their locks with SET inside a script.
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    server.faults().error("set", "lock:*", "ERR injected", 1);
    server.faults().close("set", "lock:*");
    let acquire = "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 30000)";
    let reply = c.cmd(&["EVAL", acquire, "1", "lock:a", "me"]);
    assert!(reply.starts_with("-ERR injected"), "{reply}");
    assert_eq!(
        c.cmd(&["EXISTS", "lock:a"]),
        ":0\r\n",
        "the SET did not run"
    );
    let guarded = "return redis.pcall('set', KEYS[1], ARGV[1])";
    assert_eq!(
        c.cmd(&["EVAL", guarded, "1", "lock:b", "me"]),
        "+OK\r\n",
        "the error was spent; a close rule does not reach a script's commands"
    );
    let rules = server.faults().list();
    assert_eq!(
        rules.len(),
        1,
        "the close rule is left for clients: {rules:?}"
    );
    let info = c.cmd(&["INFO", "errorstats"]);
    assert!(info.contains("errorstat_ERR:count=1"), "{info}");
}

#[test]
fn an_injected_error_inside_multi_aborts_the_transaction() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    server.faults().error("set", "*", "ERR injected", 1);
    assert_eq!(c.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.cmd(&["SET", "k", "v"]), "-ERR injected\r\n");
    assert_eq!(
        c.cmd(&["EXEC"]),
        "-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
}

// ---- Latency ----

#[test]
fn latency_holds_the_reply_until_the_clock_passes_the_delay() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    let mut other = Client::connect(server.addr());
    server
        .faults()
        .latency("set", "lock:*", Duration::from_millis(500));
    c.send(&["SET", "lock:a", "me", "PX", "10000"]);
    // Requests behind the slow reply wait behind it.
    c.send(&["PING"]);
    wait_blocked(&mut other, 1);
    c.assert_quiet("the reply is held");
    // The command itself ran at once, as a slow network only delays the answer.
    assert_eq!(other.cmd(&["GET", "lock:a"]), bulk("me"));
    server.clock().advance(Duration::from_millis(499));
    c.assert_quiet("499 ms of 500");
    assert_eq!(other.cmd(&["PTTL", "lock:a"]), ":9501\r\n");
    server.clock().advance(Duration::from_millis(1));
    assert_eq!(c.reply_or_close().unwrap(), "+OK\r\n");
    assert_eq!(c.reply_or_close().unwrap(), "+PONG\r\n");
    // Other commands are not slowed.
    assert_eq!(c.cmd(&["GET", "lock:a"]), bulk("me"));
    // Every matching command is (until cleared).
    c.send(&["SET", "lock:b", "x"]);
    c.assert_quiet("second SET");
    server.faults().clear();
    c.assert_quiet("a held reply keeps its deadline");
    server.clock().advance(Duration::from_millis(500));
    assert_eq!(c.reply_or_close().unwrap(), "+OK\r\n");
    assert_eq!(c.cmd(&["SET", "lock:c", "x"]), "+OK\r\n");
}

// ---- Close ----

#[test]
fn close_rule_closes_the_connection_without_running_the_command() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.cmd(&["SET", "k", "v"]), "+OK\r\n");
    server
        .faults()
        .add(FaultRule::close("del").keys("k").times(1));
    // The reply to the request before it still arrives.
    c.send(&["GET", "k"]);
    c.send(&["DEL", "k"]);
    assert_eq!(c.reply_or_close().unwrap(), bulk("v"));
    c.assert_closed();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"), "DEL did not run");
    assert_eq!(c.cmd(&["DEL", "k"]), ":1\r\n", "the rule was spent");
}

// ---- Pause ----

#[test]
fn pause_answers_nothing_until_the_clock_passes_its_end_then_everything_in_order() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    assert_eq!(a.cmd(&["SET", "lock", "a", "PX", "1000"]), "+OK\r\n");
    server.faults().pause(Duration::from_millis(5000));
    assert!(server.faults().paused_until().is_some());
    a.send(&["GET", "lock"]);
    a.send(&["SET", "n", "1"]);
    a.send(&["INCR", "n"]);
    // New connections are accepted, and held like the rest.
    let mut b = Client::connect(server.addr());
    b.send(&["PING"]);
    a.assert_quiet("paused");
    b.assert_quiet("paused");
    server.clock().advance(Duration::from_millis(4999));
    a.assert_quiet("1 ms of the pause left");
    server.clock().advance(Duration::from_millis(1));
    // The lease ran out during the pause: the paused server's first answer shows it gone.
    assert_eq!(a.reply_or_close().unwrap(), "$-1\r\n");
    assert_eq!(a.reply_or_close().unwrap(), "+OK\r\n");
    assert_eq!(a.reply_or_close().unwrap(), ":2\r\n");
    assert_eq!(b.reply_or_close().unwrap(), "+PONG\r\n");
    assert_eq!(server.faults().paused_until(), None);
}

#[test]
fn blocked_commands_do_not_time_out_during_a_pause() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    c.send(&["BLPOP", "q", "1"]);
    wait_blocked(&mut Client::connect(server.addr()), 1);
    server.faults().pause(Duration::from_millis(3000));
    server.clock().advance(Duration::from_millis(2000));
    c.assert_quiet("its timeout is due, but the server is paused");
    server.clock().advance(Duration::from_millis(1000));
    assert_eq!(c.reply_or_close().unwrap(), "*-1\r\n");
}

#[test]
fn a_client_held_by_a_pause_shows_its_command_in_client_list_as_under_client_pause() {
    let server = manual_server();
    let mut ctl = Client::connect(server.addr());
    let mut c = Client::connect(server.addr());
    // Redis shows a client postponed by CLIENT PAUSE as blocked, with the command it waits to run.
    assert_eq!(ctl.cmd(&["CLIENT", "PAUSE", "1000", "WRITE"]), "+OK\r\n");
    c.send(&["SET", "k", "v"]);
    wait_blocked(&mut ctl, 1);
    assert_eq!(held_commands(&server), ["set"]);
    assert_eq!(ctl.cmd(&["CLIENT", "UNPAUSE"]), "+OK\r\n");
    assert_eq!(c.reply_or_close().unwrap(), "+OK\r\n");
    // The server pause holds it the same way; the direct helpers still run meanwhile.
    server.faults().pause(Duration::from_millis(1000));
    c.send(&["EXPIRE", "k", "100"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while held_commands(&server).is_empty() {
        assert!(std::time::Instant::now() < deadline, "never held");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(held_commands(&server), ["expire"]);
    server.clock().advance(Duration::from_millis(1000));
    assert_eq!(c.reply_or_close().unwrap(), ":1\r\n");
    assert!(held_commands(&server).is_empty());
}

// ---- Drop ----

#[test]
fn drop_connections_closes_every_connection_and_new_ones_are_served() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    assert_eq!(a.cmd(&["SET", "k", "v"]), "+OK\r\n");
    // A blocked client too.
    b.send(&["BLPOP", "q", "0"]);
    wait_blocked(&mut a, 1);
    assert_eq!(server.faults().drop_connections(), 2);
    a.assert_closed();
    b.assert_closed();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"), "data is kept");
    let list = c.cmd(&["CLIENT", "LIST"]);
    assert_eq!(list.matches("id=").count(), 1, "{list}");
}

// ---- Over the wire: DEBUG FAULT, PAUSE, DROP-CONNECTIONS ----

#[test]
fn debug_fault_error_list_and_clear() {
    let server = debug_server();
    let mut ctl = Client::connect(server.addr());
    let mut c = Client::connect(server.addr());
    assert_eq!(
        ctl.cmd(&["DEBUG", "FAULT", "ERROR", "set", "lock:*", "2", "ERR", "boom", "now"]),
        "+OK\r\n"
    );
    assert_eq!(
        ctl.cmd(&["DEBUG", "FAULT", "CLOSE", "client|kill", "*"]),
        "+OK\r\n"
    );
    assert_eq!(
        ctl.cmd(&["DEBUG", "FAULT", "LATENCY", "get", "*", "250", "3"]),
        "+OK\r\n"
    );
    assert_eq!(
        ctl.cmd(&["DEBUG", "FAULT", "LIST"]),
        format!(
            "*3\r\n{}{}{}",
            bulk("ERROR set lock:* 2 ERR boom now"),
            bulk("CLOSE client|kill * 0"),
            bulk("LATENCY get * 250 3")
        )
    );
    assert_eq!(c.cmd(&["SET", "lock:x", "1"]), "-ERR boom now\r\n");
    assert_eq!(c.cmd(&["SET", "lock:x", "1"]), "-ERR boom now\r\n");
    assert_eq!(c.cmd(&["SET", "lock:x", "1"]), "+OK\r\n");
    assert_eq!(ctl.cmd(&["DEBUG", "FAULT", "CLEAR"]), "+OK\r\n");
    assert_eq!(ctl.cmd(&["DEBUG", "FAULT", "LIST"]), "*0\r\n");
    // Argument errors.
    assert_eq!(
        ctl.cmd(&["DEBUG", "FAULT", "ERROR", "set", "*", "x", "ERR"]),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        ctl.cmd(&["DEBUG", "FAULT", "BOGUS"]),
        "-ERR unknown subcommand or wrong number of arguments for 'FAULT'. Try DEBUG HELP.\r\n"
    );
    // DEBUG itself is never caught by a rule: the test keeps its control channel.
    ctl.cmd(&[
        "DEBUG",
        "FAULT",
        "ERROR",
        "*",
        "*",
        "0",
        "ERR",
        "everything",
    ]);
    assert_eq!(c.cmd(&["PING"]), "-ERR everything\r\n");
    assert_eq!(ctl.cmd(&["DEBUG", "FAULT", "CLEAR"]), "+OK\r\n");
    assert_eq!(c.cmd(&["PING"]), "+PONG\r\n");
}

#[test]
fn debug_fault_latency_is_released_by_debug_clock_advance() {
    let server = debug_server();
    let mut ctl = Client::connect(server.addr());
    let mut c = Client::connect(server.addr());
    ctl.cmd(&["DEBUG", "FAULT", "LATENCY", "get", "k*", "100"]);
    c.send(&["GET", "k1"]);
    wait_blocked(&mut ctl, 1);
    c.assert_quiet("held");
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "ADVANCE", "100"]), "+OK\r\n");
    assert_eq!(c.reply_or_close().unwrap(), "$-1\r\n");
    assert_eq!(c.cmd(&["GET", "other"]), "$-1\r\n", "pattern k* only");
}

#[test]
fn debug_fault_close_and_drop_connections() {
    let server = debug_server();
    let mut ctl = Client::connect(server.addr());
    let mut c = Client::connect(server.addr());
    ctl.cmd(&["DEBUG", "FAULT", "CLOSE", "ping", "*", "1"]);
    c.send(&["PING"]);
    c.assert_closed();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.cmd(&["PING"]), "+PONG\r\n");
    let mut d = Client::connect(server.addr());
    assert_eq!(d.cmd(&["PING"]), "+PONG\r\n");
    // Every other connection; the caller keeps its own.
    assert_eq!(ctl.cmd(&["DEBUG", "DROP-CONNECTIONS"]), ":2\r\n");
    c.assert_closed();
    d.assert_closed();
    assert_eq!(ctl.cmd(&["PING"]), "+PONG\r\n");
}

#[test]
fn debug_pause_holds_clients_while_debug_clock_moves_it_to_its_end() {
    let server = debug_server();
    let mut ctl = Client::connect(server.addr());
    let mut c = Client::connect(server.addr());
    assert_eq!(ctl.cmd(&["DEBUG", "PAUSE", "1000"]), "+OK\r\n");
    c.send(&["SET", "k", "v"]);
    c.send(&["GET", "k"]);
    c.assert_quiet("paused");
    // The control connection's DEBUG still runs; its other commands wait too.
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "ADVANCE", "999"]), "+OK\r\n");
    c.assert_quiet("1 ms left");
    ctl.send(&["PING"]);
    ctl.assert_quiet("PING from the control connection is held too");
    // (the control connection is now blocked behind its PING: advance from a third one)
    let mut ctl2 = Client::connect(server.addr());
    assert_eq!(ctl2.cmd(&["DEBUG", "CLOCK", "ADVANCE", "1"]), "+OK\r\n");
    assert_eq!(c.reply_or_close().unwrap(), "+OK\r\n");
    assert_eq!(c.reply_or_close().unwrap(), bulk("v"));
    assert_eq!(ctl.reply_or_close().unwrap(), "+PONG\r\n");
    // DEBUG PAUSE 0 ends a pause at once.
    ctl.cmd(&["DEBUG", "PAUSE", "60000"]);
    c.send(&["PING"]);
    c.assert_quiet("paused again");
    ctl.cmd(&["DEBUG", "PAUSE", "0"]);
    assert_eq!(c.reply_or_close().unwrap(), "+PONG\r\n");
}

// ---- DEBUG CLOCK ----

#[test]
fn debug_clock_moves_ttls_time_and_timeouts_for_every_client() {
    let server = debug_server();
    let mut ctl = Client::connect(server.addr());
    let mut c = Client::connect(server.addr());
    let start = server.clock().now_ms();
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "GET"]), format!(":{start}\r\n"));
    assert_eq!(c.cmd(&["SET", "lease", "me", "PX", "1000"]), "+OK\r\n");
    c.send(&["BLPOP", "q", "2"]);
    wait_blocked(&mut ctl, 1);
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "ADVANCE", "400"]), "+OK\r\n");
    assert_eq!(ctl.cmd(&["PTTL", "lease"]), ":600\r\n");
    // As in Redis, a key expires once the clock is past its expiry time.
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "ADVANCE", "600"]), "+OK\r\n");
    assert_eq!(ctl.cmd(&["PTTL", "lease"]), ":0\r\n");
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "ADVANCE", "1"]), "+OK\r\n");
    assert_eq!(ctl.cmd(&["GET", "lease"]), "$-1\r\n", "expired");
    c.assert_quiet("BLPOP's 2 s are not over");
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "ADVANCE", "1000"]), "+OK\r\n");
    assert_eq!(c.reply_or_close().unwrap(), "*-1\r\n", "BLPOP timed out");
    // SET jumps anywhere; TIME follows.
    assert_eq!(
        ctl.cmd(&["DEBUG", "CLOCK", "SET", "1700000000123"]),
        "+OK\r\n"
    );
    assert_eq!(
        ctl.cmd(&["TIME"]),
        "*2\r\n$10\r\n1700000000\r\n$6\r\n123000\r\n"
    );
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "GET"]), ":1700000000123\r\n");
    // RESUME lets it run (at RATE), FREEZE stops it again.
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "RATE", "1000"]), "+OK\r\n");
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "RESUME"]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "FREEZE"]), "+OK\r\n");
    let now = server.clock().now_ms();
    assert!(now >= 1_700_000_005_123, "ran at 1000x: {now}");
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(server.clock().now_ms(), now, "frozen");
    // OFFSET: real time plus a skew.
    assert_eq!(ctl.cmd(&["DEBUG", "CLOCK", "OFFSET", "-60000"]), "+OK\r\n");
    let real = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let skewed = server.clock().now_ms();
    assert!((real - 60_000 - skewed).abs() < 1000, "{real} vs {skewed}");
    // Errors.
    assert_eq!(
        ctl.cmd(&["DEBUG", "CLOCK", "RATE", "-1"]),
        "-ERR rate must be a finite number >= 0\r\n"
    );
    assert_eq!(
        ctl.cmd(&["DEBUG", "CLOCK", "ADVANCE", "x"]),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        ctl.cmd(&["DEBUG", "CLOCK", "WARP"]),
        "-ERR unknown subcommand or wrong number of arguments for 'CLOCK'. Try DEBUG HELP.\r\n"
    );
}

#[test]
fn debug_clock_on_the_system_clock_says_it_cannot() {
    let server = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Client::connect(server.addr());
    let reply = c.cmd(&["DEBUG", "CLOCK", "ADVANCE", "1000"]);
    assert!(
        reply.starts_with("-ERR this server runs on the system clock"),
        "{reply}"
    );
    assert!(c.cmd(&["DEBUG", "CLOCK", "GET"]).starts_with(':'));
}

#[test]
fn debug_controls_are_refused_without_enable_debug_command() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    let refused = "-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.\r\n";
    for args in [
        &["DEBUG", "CLOCK", "ADVANCE", "1000"][..],
        &["DEBUG", "FAULT", "LIST"],
        &["DEBUG", "PAUSE", "100"],
        &["DEBUG", "DROP-CONNECTIONS"],
    ] {
        assert_eq!(c.cmd(args), refused, "{args:?}");
    }
    assert!(server.faults().list().is_empty());
    // `local` allows loopback connections, as for Redis's own DEBUG.
    let server = support::builder()
        .clock(Clock::manual())
        .config("enable-debug-command", "local")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.cmd(&["DEBUG", "FAULT", "LIST"]), "*0\r\n");
}

#[test]
fn debug_help_lists_the_extensions_and_redis_debug_still_works() {
    let server = debug_server();
    let mut c = Client::connect(server.addr());
    let help = c.cmd(&["DEBUG", "HELP"]);
    for word in [
        "SLEEP <seconds>",
        "CLOCK ADVANCE",
        "FAULT ERROR",
        "PAUSE <ms>",
        "DROP-CONNECTIONS",
    ] {
        assert!(help.contains(word), "{word} in {help}");
    }
    assert!(
        help.ends_with("+HELP\r\n+    Prints this help.\r\n"),
        "{help}"
    );
    assert_eq!(c.cmd(&["DEBUG", "SLEEP", "0"]), "+OK\r\n");
    assert_eq!(c.cmd(&["CLIENT", "PAUSE", "100", "WRITE"]), "+OK\r\n");
    assert_eq!(c.cmd(&["CLIENT", "UNPAUSE"]), "+OK\r\n");
}

// ---- The binary ----

#[test]
fn the_binary_with_debug_enabled_runs_on_a_controllable_clock() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let spawn = |extra: &[&str]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_embedis-server"))
            .current_dir(support::server_dir())
            .args(["--port", "auto", "--save", ""])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let port = loop {
            line.clear();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "exited early");
            if let Some(port) = line.trim().strip_prefix("port=") {
                break port.parse::<u16>().unwrap();
            }
        };
        (child, SocketAddr::from(([127, 0, 0, 1], port)))
    };
    let (mut child, addr) = spawn(&["--enable-debug-command", "local"]);
    let mut c = Client::connect(addr);
    assert_eq!(c.cmd(&["SET", "k", "v", "EX", "100"]), "+OK\r\n");
    assert_eq!(c.cmd(&["DEBUG", "CLOCK", "FREEZE"]), "+OK\r\n");
    assert_eq!(c.cmd(&["DEBUG", "CLOCK", "ADVANCE", "100001"]), "+OK\r\n");
    assert_eq!(c.cmd(&["GET", "k"]), "$-1\r\n");
    child.kill().unwrap();
    child.wait().unwrap();

    let (mut child, addr) = spawn(&[]);
    let mut c = Client::connect(addr);
    assert!(c
        .cmd(&["DEBUG", "CLOCK", "GET"])
        .starts_with("-ERR DEBUG command not allowed"));
    child.kill().unwrap();
    child.wait().unwrap();
}

// ---- Real time, threaded I/O ----

#[test]
fn on_a_running_clock_pause_and_latency_are_real_time() {
    let server = support::builder().start().unwrap();
    let mut c = Client::connect(server.addr());
    let started = std::time::Instant::now();
    server.faults().pause(Duration::from_millis(60));
    c.send(&["PING"]);
    assert_eq!(c.reply_or_close().unwrap(), "+PONG\r\n");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(55), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");

    server
        .faults()
        .latency("get", "*", Duration::from_millis(60));
    let started = std::time::Instant::now();
    assert_eq!(c.cmd(&["GET", "k"]), "$-1\r\n");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(55), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
}

#[test]
fn faults_work_with_threaded_io() {
    let server = support::builder()
        .clock(Clock::manual())
        .config("io-threads", "2")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Client::connect(server.addr());
    let mut other = Client::connect(server.addr());
    server.faults().error("set", "*", "ERR injected", 1);
    assert_eq!(c.cmd(&["SET", "k", "v"]), "-ERR injected\r\n");
    assert_eq!(c.cmd(&["SET", "k", "v"]), "+OK\r\n");
    server
        .faults()
        .latency("get", "*", Duration::from_millis(100));
    c.send(&["GET", "k"]);
    wait_blocked(&mut other, 1);
    server.clock().advance(Duration::from_millis(100));
    assert_eq!(c.reply_or_close().unwrap(), bulk("v"));
    server.faults().clear();
    server.faults().pause(Duration::from_millis(1000));
    c.send(&["PING"]);
    c.assert_quiet("paused");
    server.clock().advance(Duration::from_millis(1000));
    assert_eq!(c.reply_or_close().unwrap(), "+PONG\r\n");
    assert_eq!(server.faults().drop_connections(), 2);
    c.assert_closed();
    other.assert_closed();
}
