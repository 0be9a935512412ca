//! Integration tests for the connection, client and server commands whose behaviour a
//! differential fixture cannot pin down: several connections interacting (CLIENT KILL, CLIENT
//! PAUSE, CLIENT UNBLOCK, MONITOR), timeouts driven by a manual clock (WAIT, CLIENT PAUSE), reply
//! modes that send nothing (CLIENT REPLY), values that vary (INFO, CLIENT LIST), and commands
//! that stop the server (SHUTDOWN). What CLIENT PAUSE WRITE holds, compared with Redis, is a
//! differential fixture: tests/diff/client_pause.txt.

use crate::support;

use bytes::Bytes;
use embedis_protocol::{decode_value, Value};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::{manual_server, Client};

const SHORT: Duration = Duration::from_millis(150);

fn server() -> embedis::Server {
    support::builder().start().unwrap()
}

#[test]
fn client_kill_by_id_address_and_self() {
    let server = server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    let b_id = b.id().to_string();
    assert_eq!(a.raw(&["CLIENT", "KILL", "ID", &b_id]), b":1\r\n");
    assert!(b.closed_within(Duration::from_secs(2)));
    // Gone at once from CLIENT LIST.
    let list = a.text(&["CLIENT", "LIST"]);
    assert!(!list.contains(&format!("id={b_id} ")), "{list}");
    assert_eq!(list.lines().count(), 1, "{list}");

    // The old form, by address.
    let mut c = Client::connect(server.addr());
    let info = c.text(&["CLIENT", "INFO"]);
    let addr = info
        .split(' ')
        .find_map(|f| f.strip_prefix("addr="))
        .unwrap()
        .to_string();
    assert_eq!(a.raw(&["CLIENT", "KILL", &addr]), b"+OK\r\n");
    assert!(c.closed_within(Duration::from_secs(2)));
    assert_eq!(
        a.raw(&["CLIENT", "KILL", &addr]),
        b"-ERR No such client\r\n".to_vec()
    );

    // Filters spare the caller unless SKIPME no; killing oneself answers, then closes.
    let mut d = Client::connect(server.addr());
    d.raw(&["PING"]);
    assert_eq!(a.raw(&["CLIENT", "KILL", "TYPE", "normal"]), b":1\r\n");
    assert!(d.closed_within(Duration::from_secs(2)));
    let a_id = a.id().to_string();
    assert_eq!(a.raw(&["CLIENT", "KILL", "ID", &a_id]), b":0\r\n");
    a.send(&["CLIENT", "KILL", "ID", &a_id, "SKIPME", "no"]);
    assert_eq!(a.raw_reply(), b":1\r\n");
    assert!(a.closed_within(Duration::from_secs(2)));
}

#[test]
fn client_list_and_info_describe_connections() {
    let server = server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    a.raw(&["CLIENT", "SETNAME", "alpha"]);
    b.raw(&["SELECT", "3"]);
    let (a_id, b_id) = (a.id(), b.id());
    let list = a.text(&["CLIENT", "LIST"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with(&format!("id={a_id} addr=127.0.0.1:")));
    assert!(lines[0].contains(" name=alpha "));
    assert!(lines[0].contains(" cmd=client|list "), "{}", lines[0]);
    assert!(lines[1].starts_with(&format!("id={b_id} ")));
    assert!(lines[1].contains(" db=3 "));
    assert!(lines[1].contains(" cmd=client|id "), "{}", lines[1]);
    assert!(list.ends_with('\n'));
    // ID filters keep the order given, repeats included.
    let only = a.text(&["CLIENT", "LIST", "ID", &b_id.to_string(), &a_id.to_string()]);
    let ids: Vec<&str> = only.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(ids, [format!("id={b_id}"), format!("id={a_id}")]);
    let info = a.text(&["CLIENT", "INFO"]);
    assert!(
        info.starts_with(&format!("id={a_id} ")) && info.ends_with(" resp=2\n"),
        "{info}"
    );
    // NO-EVICT shows as flag e; RESP3 is reported after HELLO 3.
    a.raw(&["CLIENT", "NO-EVICT", "on"]);
    a.raw(&["HELLO", "3"]);
    let info = a.text(&["CLIENT", "INFO"]);
    assert!(
        info.contains(" flags=e ") && info.ends_with(" resp=3\n"),
        "{info}"
    );
}

#[test]
fn client_setinfo_as_redis_7_2() {
    let server = support::builder_as("7.2").start().unwrap();
    let mut c = Client::connect(server.addr());
    assert_eq!(
        c.raw(&["CLIENT", "SETINFO", "LIB-NAME", "redis-py"]),
        b"+OK\r\n"
    );
    assert_eq!(
        c.raw(&["CLIENT", "SETINFO", "lib-ver", "5.0.1"]),
        b"+OK\r\n"
    );
    let info = c.text(&["CLIENT", "INFO"]);
    assert!(
        info.ends_with(" lib-name=redis-py lib-ver=5.0.1\n"),
        "{info}"
    );
    assert_eq!(
        c.raw(&["CLIENT", "SETINFO", "foo", "x"]),
        b"-ERR Unrecognized option 'foo'\r\n".to_vec()
    );
    assert_eq!(
        c.raw(&["CLIENT", "SETINFO", "Lib-Name", "a b"]),
        b"-ERR Lib-Name cannot contain spaces, newlines or special characters.\r\n".to_vec()
    );
    assert_eq!(c.raw(&["CLIENT", "SETINFO", "lib-ver", ""]), b"+OK\r\n");
    assert!(c.text(&["CLIENT", "INFO"]).ends_with(" lib-ver=\n"));
}

#[test]
fn client_pause_all_postpones_everything_until_the_clock_says() {
    let server = manual_server();
    let mut monitor = Client::connect(server.addr());
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    let mut c = Client::connect(server.addr());
    let c_id = c.id().to_string();
    assert_eq!(monitor.raw(&["MONITOR"]), b"+OK\r\n");
    assert_eq!(a.raw(&["CLIENT", "PAUSE", "60000"]), b"+OK\r\n");
    monitor.reply_within(SHORT); // nothing: CLIENT is an admin command, not shown
    b.send(&["ECHO", "first"]);
    std::thread::sleep(Duration::from_millis(30));
    c.send(&["ECHO", "second"]);
    std::thread::sleep(Duration::from_millis(30));
    b.send(&["ECHO", "third"]);
    // Even CLIENT UNPAUSE waits under a pause of everything, and a shorter pause does not
    // shorten it.
    a.send(&["CLIENT", "UNPAUSE"]);
    assert_eq!(b.reply_within(SHORT), None);
    assert_eq!(c.reply_within(SHORT), None);
    assert_eq!(a.reply_within(SHORT), None);
    // Postponed clients are blocked, and CLIENT UNBLOCK cannot release them.
    let list = monitor.text(&["CLIENT", "LIST", "ID", &c_id]);
    assert!(
        list.contains(" flags=b ") && list.contains(" cmd=echo "),
        "{list}"
    );
    assert_eq!(monitor.raw(&["CLIENT", "UNBLOCK", &c_id]), b":0\r\n");
    server.clock().advance(Duration::from_millis(59_999));
    assert_eq!(b.reply_within(SHORT), None);
    server.clock().advance(Duration::from_millis(2));
    assert_eq!(b.raw_reply(), b"$5\r\nfirst\r\n");
    assert_eq!(c.raw_reply(), b"$6\r\nsecond\r\n");
    assert_eq!(b.raw_reply(), b"$5\r\nthird\r\n");
    assert_eq!(a.raw_reply(), b"+OK\r\n");
    // The commands ran in arrival order.
    let mut seen = Vec::new();
    while let Some(line) = monitor.reply_within(SHORT) {
        seen.push(String::from_utf8(line).unwrap());
    }
    let order: Vec<&str> = seen
        .iter()
        .filter_map(|l| l.split("] ").nth(1))
        .map(str::trim_end)
        .collect();
    assert_eq!(
        order,
        [
            "\"ECHO\" \"first\"",
            "\"ECHO\" \"second\"",
            "\"ECHO\" \"third\""
        ]
    );
}

#[test]
fn client_pause_write_lets_reads_through_and_unpause_releases_in_order() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    let mut c = Client::connect(server.addr());
    assert_eq!(a.raw(&["CLIENT", "PAUSE", "100000", "WRITE"]), b"+OK\r\n");
    // Commands that cannot write go on.
    assert_eq!(b.raw(&["PING"]), b"+PONG\r\n");
    assert_eq!(c.raw(&["ECHO", "x"]), b"$1\r\nx\r\n");
    b.send(&["SET", "k", "from-b"]);
    std::thread::sleep(Duration::from_millis(30));
    c.send(&["SET", "k", "from-c"]);
    assert_eq!(b.reply_within(SHORT), None, "a write waits");
    assert_eq!(a.raw(&["GET", "k"]), b"$-1\r\n", "reads go on");
    assert_eq!(a.raw(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    assert_eq!(b.raw_reply(), b"+OK\r\n");
    assert_eq!(c.raw_reply(), b"+OK\r\n");
    assert_eq!(
        a.raw(&["GET", "k"]),
        b"$6\r\nfrom-c\r\n",
        "released in arrival order"
    );
}

/// A MONITOR line with its timestamp and client address replaced (`[0 lua]` kept), so that two
/// servers' lines compare.
fn normalized_monitor_line(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply).into_owned();
    match (text.find(" ["), text.find("] ")) {
        (Some(open), Some(close)) if text.starts_with('+') && open < close => {
            let mut source = text[open + 2..close].splitn(2, ' ');
            let db = source.next().unwrap_or("");
            let who = match source.next() {
                Some("lua") => "lua",
                _ => "client",
            };
            format!("+T [{db} {who}] {}", &text[close + 2..])
        }
        _ => text,
    }
}

/// What a MONITOR client receives up to and including the line showing `ECHO <mark>` (its own
/// replies included).
fn replies_until_echo(monitor: &mut Client, mark: &str) -> Vec<String> {
    let shown = format!("\"ECHO\" \"{mark}\"");
    let mut replies = Vec::new();
    loop {
        let reply = normalized_monitor_line(&monitor.raw_reply());
        let done = reply.starts_with('+') && reply.contains(&shown);
        replies.push(reply);
        if done {
            return replies;
        }
    }
}

/// What a MONITOR client sees of scripts, and what it may run itself, as a transcript.
fn monitor_script_transcript(addr: SocketAddr) -> Vec<String> {
    let mut monitor = Client::connect(addr);
    let mut other = Client::connect(addr);
    let lib = "#!lua name=monlib\nredis.register_function{function_name='ro', callback=function() return redis.call('get', 'k') end, flags={'no-writes'}}\nredis.register_function('rw', function() return redis.call('set', 'k', 'f') end)";
    other.raw(&["FUNCTION", "LOAD", "REPLACE", lib]);
    other.raw(&["SCRIPT", "FLUSH"]);
    assert_eq!(monitor.raw(&["MONITOR"]), b"+OK\r\n");
    let mut transcript = Vec::new();
    // Steps of one or more commands; the monitor's view is read after each step.
    let from_other: &[&[&[&str]]] = &[
        &[&["EVAL", "return redis.call('set', 'k', 'v')", "0"]],
        &[&[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.call('get', 'k')",
            "0",
        ]],
        &[&["EVAL", "error('x')", "0"]],
        &[&["EVAL", "retur 1", "0"]],
        &[&["EVAL", "return 1", "-1"]],
        &[&["EVALSHA", "0000000000000000000000000000000000000000", "0"]],
        &[&["EVAL_RO", "#!lua\nreturn 1", "0"]],
        &[&["FCALL", "nosuch", "0"]],
        &[&["FCALL", "rw", "0"]],
        &[&["FCALL_RO", "ro", "0"]],
        &[
            &["MULTI"],
            &["EVAL", "return redis.call('incr', 'n')", "0"],
            &["SET", "m", "1"],
            &["EXEC"],
        ],
    ];
    for (i, step) in from_other.iter().enumerate() {
        for command in step.iter() {
            transcript.push(format!("other: {command:?}"));
            transcript.push(String::from_utf8_lossy(&other.raw(command)).into_owned());
        }
        let mark = format!("mark-{i}");
        other.raw(&["ECHO", &mark]);
        transcript.extend(replies_until_echo(&mut monitor, &mark));
    }
    let from_monitor: &[&[&str]] = &[
        &[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.call('get', 'k')",
            "0",
        ],
        &["EVAL", "return 1", "0"],
        &["EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"],
        &["EVAL_RO", "return 1", "0"],
        &["FCALL", "ro", "0"],
        &["FCALL", "rw", "0"],
        &["FCALL", "nosuch", "0"],
        &["PUBLISH", "c", "m"],
    ];
    for (i, command) in from_monitor.iter().enumerate() {
        transcript.push(format!("monitor: {command:?}"));
        monitor.send(command);
        let mark = format!("own-{i}");
        monitor.send(&["ECHO", &mark]);
        transcript.extend(replies_until_echo(&mut monitor, &mark));
    }
    transcript
}

/// MONITOR and scripts as in Redis: the commands that run scripts (EVAL, EVALSHA, FCALL and
/// their _RO forms, flagged skip_monitor) are shown before they run, whatever their outcome, so
/// a script's own commands follow it, inside EXEC too; and a MONITOR client's own script is
/// judged by the script's declared flags: a no-writes script or function runs, one without
/// flags (or an unknown function) is refused as touching the keyspace.
#[test]
fn monitor_shows_scripts_before_their_commands_and_judges_a_monitors_scripts_by_their_flags() {
    let ours = manual_server();
    let transcript = monitor_script_transcript(ours.addr());
    let Some(redis) = support::RedisServer::start("monitor and scripts", &[]) else {
        return;
    };
    assert_eq!(transcript, monitor_script_transcript(redis.addr()));
}

/// WAITAOF as Redis 7.2 answers it on a server without an AOF or replicas (Redis 7.0 has no
/// WAITAOF; lock clients such as Redisson send it).
#[test]
fn waitaof_answers_as_a_server_without_aof_or_replicas() {
    let server = support::builder_as("7.2")
        .clock(embedis::Clock::manual())
        .start()
        .unwrap();
    let mut a = Client::connect(server.addr());
    assert_eq!(a.raw(&["WAITAOF", "0", "0", "0"]), b"*2\r\n:0\r\n:0\r\n");
    assert_eq!(
        a.raw(&["WAITAOF", "1", "0", "0"]),
        b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n"
    );
    assert_eq!(
        a.raw(&["WAITAOF", "-1", "0", "0"]),
        b"-ERR value is out of range, must be positive\r\n"
    );
    assert_eq!(
        a.raw(&["WAITAOF", "0", "x", "0"]),
        b"-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        a.raw(&["WAITAOF", "0", "0", "-1"]),
        b"-ERR timeout is negative\r\n"
    );
    assert_eq!(
        a.raw(&["WAITAOF", "0", "0"]),
        b"-ERR wrong number of arguments for 'waitaof' command\r\n"
    );
    // Asking for replicas waits out the timeout on the server's clock, then counts none.
    a.send(&["WAITAOF", "0", "1", "1000"]);
    assert_eq!(a.reply_within(SHORT), None);
    server.clock().advance(Duration::from_millis(1001));
    assert_eq!(a.raw_reply(), b"*2\r\n:0\r\n:0\r\n");
    // Inside MULTI nothing blocks: the counts come at once.
    assert_eq!(a.raw(&["MULTI"]), b"+OK\r\n");
    assert_eq!(a.raw(&["WAITAOF", "0", "1", "0"]), b"+QUEUED\r\n");
    assert_eq!(a.raw(&["EXEC"]), b"*1\r\n*2\r\n:0\r\n:0\r\n");
}

#[test]
fn wait_times_out_on_the_servers_clock() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    assert_eq!(a.raw(&["WAIT", "0", "0"]), b":0\r\n");
    a.send(&["WAIT", "1", "5000"]);
    assert_eq!(a.reply_within(SHORT), None);
    let info = b.text(&["INFO", "clients"]);
    assert!(info.contains("blocked_clients:1\r\n"), "{info}");
    assert!(info.contains("clients_in_timeout_table:1\r\n"), "{info}");
    server.clock().advance(Duration::from_millis(4999));
    assert_eq!(a.reply_within(SHORT), None);
    server.clock().advance(Duration::from_millis(2));
    assert_eq!(a.raw_reply(), b":0\r\n");
    // WAIT n 0 waits for ever, until CLIENT UNBLOCK (as a timeout, or with an error).
    let a_id = a.id().to_string();
    a.send(&["WAIT", "1", "0"]);
    server.clock().advance(Duration::from_secs(3600));
    assert_eq!(a.reply_within(SHORT), None);
    assert_eq!(b.raw(&["CLIENT", "UNBLOCK", &a_id]), b":1\r\n");
    assert_eq!(a.raw_reply(), b":0\r\n");
    a.send(&["WAIT", "1", "0"]);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(b.raw(&["CLIENT", "UNBLOCK", &a_id, "ERROR"]), b":1\r\n");
    assert_eq!(
        a.raw_reply(),
        b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n".to_vec()
    );
    assert_eq!(b.raw(&["CLIENT", "UNBLOCK", &a_id]), b":0\r\n");
    let errors = b.text(&["INFO", "errorstats"]);
    assert!(
        errors.contains("errorstat_UNBLOCKED:count=1\r\n"),
        "{errors}"
    );
}

#[test]
fn monitor_shows_commands_in_redis_format() {
    let clock = embedis::Clock::frozen_at(
        std::time::UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456),
    );
    let server = support::builder().clock(clock).start().unwrap();
    let mut monitor = Client::connect(server.addr());
    let mut c = Client::connect(server.addr());
    // Before MONITOR: these commands would show in the monitor's own stream.
    let c_addr = c
        .text(&["CLIENT", "INFO"])
        .split(' ')
        .find_map(|f| f.strip_prefix("addr="))
        .unwrap()
        .to_string();
    assert_eq!(monitor.raw(&["MONITOR"]), b"+OK\r\n");
    c.raw(&["ECHO", "a\"b\\c\u{1}"]);
    c.raw(&["SELECT", "2"]);
    c.raw(&["AUTH", "user", "secret"]);
    c.raw(&["HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n"]);
    // MIGRATE of a missing key answers NOKEY without connecting; its passwords are hidden.
    c.raw(&["MIGRATE", "127.0.0.1", "1", "k", "9", "5000", "AUTH", "pw"]);
    c.raw(&[
        "MIGRATE",
        "127.0.0.1",
        "1",
        "k",
        "9",
        "5000",
        "COPY",
        "AUTH2",
        "u",
        "pw",
    ]);
    c.raw(&["CONFIG", "GET", "hz"]); // admin: not shown
    c.raw(&["NOSUCHCOMMAND"]); // refused: not shown
    let expect =
        |rest: &str, db: u32| format!("+1700000000.123456 [{db} {c_addr}] {rest}\r\n").into_bytes();
    assert_eq!(
        monitor.raw_reply(),
        expect("\"ECHO\" \"a\\\"b\\\\c\\x01\"", 0)
    );
    assert_eq!(monitor.raw_reply(), expect("\"SELECT\" \"2\"", 2));
    assert_eq!(
        monitor.raw_reply(),
        expect("\"AUTH\" \"(redacted)\" \"(redacted)\"", 2)
    );
    assert_eq!(
        monitor.raw_reply(),
        expect(
            "\"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\" \"SETNAME\" \"n\"",
            2
        )
    );
    assert_eq!(
        monitor.raw_reply(),
        expect(
            "\"MIGRATE\" \"127.0.0.1\" \"1\" \"k\" \"9\" \"5000\" \"AUTH\" \"(redacted)\"",
            2
        )
    );
    assert_eq!(
        monitor.raw_reply(),
        expect(
            "\"MIGRATE\" \"127.0.0.1\" \"1\" \"k\" \"9\" \"5000\" \"COPY\" \"AUTH2\" \"(redacted)\" \"(redacted)\"",
            2
        )
    );
    assert_eq!(monitor.reply_within(SHORT), None);
    // A monitoring client sees its own commands after their replies; MONITOR again is ignored.
    monitor.send(&["PING"]);
    assert_eq!(monitor.raw_reply(), b"+PONG\r\n");
    assert!(String::from_utf8(monitor.raw_reply())
        .unwrap()
        .ends_with("] \"PING\"\r\n"));
    monitor.send(&["MONITOR"]);
    assert_eq!(monitor.reply_within(SHORT), None);
    {
        assert_eq!(
            monitor.raw(&["GET", "x"]),
            b"-ERR Replica can't interact with the keyspace\r\n".to_vec()
        );
    }
    // RESET ends monitoring.
    assert_eq!(monitor.raw(&["RESET"]), b"+RESET\r\n");
    c.raw(&["PING"]);
    assert_eq!(monitor.reply_within(SHORT), None);
}

#[test]
fn auth_flow_with_a_password() {
    let server = support::builder().password("s3cret").start().unwrap();
    let mut c = Client::connect(server.addr());
    assert_eq!(
        c.raw(&["PING"]),
        b"-NOAUTH Authentication required.\r\n".to_vec()
    );
    assert!(c
        .text(&["HELLO", "3"])
        .starts_with("NOAUTH HELLO must be called"));
    assert_eq!(
        c.raw(&["AUTH", "wrong"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n".to_vec()
    );
    assert_eq!(
        c.raw(&["AUTH", "someone", "s3cret"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n".to_vec()
    );
    assert_eq!(c.raw(&["AUTH", "s3cret"]), b"+OK\r\n");
    assert_eq!(c.raw(&["PING"]), b"+PONG\r\n");
    // RESET forgets the authentication.
    assert_eq!(c.raw(&["RESET"]), b"+RESET\r\n");
    assert_eq!(
        c.raw(&["PING"]),
        b"-NOAUTH Authentication required.\r\n".to_vec()
    );
    // HELLO AUTH authenticates and switches protocol at once.
    let hello = c.raw(&["HELLO", "3", "AUTH", "default", "s3cret"]);
    assert!(hello.starts_with(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"));
    assert_eq!(
        c.raw(&["CONFIG", "GET", "hz"]),
        b"%1\r\n$2\r\nhz\r\n$2\r\n10\r\n"
    );
    // Removing the password frees clients that never authenticated.
    let mut other = Client::connect(server.addr());
    assert!(other.text(&["PING"]).starts_with("NOAUTH"));
    assert_eq!(c.raw(&["CONFIG", "SET", "requirepass", ""]), b"+OK\r\n");
    assert_eq!(other.raw(&["PING"]), b"+PONG\r\n");
    assert!(other
        .text(&["AUTH", "x"])
        .starts_with("ERR AUTH <password> called without any password configured"));
}

#[test]
fn client_reply_off_and_skip() {
    let server = server();
    let mut c = Client::connect(server.addr());
    c.send(&["CLIENT", "REPLY", "OFF"]);
    c.send(&["PING"]);
    c.send(&["ECHO", "lost"]);
    c.send(&["NOSUCHCOMMAND"]);
    assert_eq!(c.reply_within(SHORT), None);
    assert_eq!(c.raw(&["CLIENT", "REPLY", "ON"]), b"+OK\r\n");
    c.send(&["CLIENT", "REPLY", "SKIP"]);
    c.send(&["ECHO", "skipped"]);
    assert_eq!(c.raw(&["ECHO", "kept"]), b"$4\r\nkept\r\n");
    // CLIENT REPLY ON while skipping answers (it turns replies back on first).
    c.send(&["CLIENT", "REPLY", "SKIP"]);
    assert_eq!(c.raw(&["CLIENT", "REPLY", "ON"]), b"+OK\r\n");
    // RESET turns replies back on, and answers.
    c.send(&["CLIENT", "REPLY", "OFF"]);
    assert_eq!(c.raw(&["RESET"]), b"+RESET\r\n");
    assert_eq!(c.raw(&["PING"]), b"+PONG\r\n");
}

/// Parses INFO text into (section, field, value) triples, checking the format on the way.
fn parse_info(text: &str) -> Vec<(String, String, String)> {
    assert!(text.ends_with("\r\n"), "INFO ends with CRLF");
    let mut section = String::new();
    let mut fields = Vec::new();
    for line in text.split("\r\n") {
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix("# ") {
            section = name.to_string();
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        fields.push((section.clone(), key.to_string(), value.to_string()));
    }
    fields
}

#[test]
fn info_reports_every_section_with_real_values() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    let mut other = Client::connect(server.addr());
    other.raw(&["PING"]);
    c.raw(&["CONFIG", "RESETSTAT"]);
    c.raw(&["PING"]);
    c.raw(&["PING"]);
    c.raw(&["NOSUCHCOMMAND"]);
    c.raw(&["HELLO", "9"]);
    let text = c.text(&["INFO", "everything"]);
    let fields = parse_info(&text);
    let get = |key: &str| -> String {
        fields
            .iter()
            .find(|(_, k, _)| k == key)
            .unwrap_or_else(|| panic!("INFO lacks {key}"))
            .2
            .clone()
    };
    let sections: Vec<&str> = text
        .split("\r\n")
        .filter_map(|l| l.strip_prefix("# "))
        .collect();
    assert_eq!(
        sections,
        [
            "Server",
            "Clients",
            "Memory",
            "Persistence",
            "Stats",
            "Replication",
            "CPU",
            "Modules",
            "Commandstats",
            "Errorstats",
            "Latencystats",
            "Cluster",
            "Keyspace"
        ]
    );
    assert_eq!(get("redis_version"), "7.0.15");
    assert_eq!(get("embedis_version"), env!("CARGO_PKG_VERSION"));
    assert_eq!(get("redis_mode"), "standalone");
    assert_eq!(get("tcp_port"), server.addr().port().to_string());
    assert_eq!(get("process_id"), std::process::id().to_string());
    assert_eq!(get("connected_clients"), "2");
    assert_eq!(get("blocked_clients"), "0");
    assert!(get("used_memory").parse::<u64>().unwrap() > 0);
    assert!(get("used_memory_human").ends_with('M') || get("used_memory_human").ends_with('K'));
    assert_eq!(get("maxmemory_policy"), "noeviction");
    assert_eq!(get("aof_enabled"), "0");
    assert_eq!(get("rdb_last_bgsave_status"), "ok");
    assert_eq!(get("role"), "master");
    assert_eq!(get("connected_slaves"), "0");
    assert_eq!(get("master_replid").len(), 40);
    assert_eq!(get("cluster_enabled"), "0");
    assert!(get("used_cpu_user").parse::<f64>().unwrap() >= 0.0);
    assert!(get("total_connections_received").parse::<u64>().unwrap() == 0);
    // Statistics since CONFIG RESETSTAT: two PINGs, two errors.
    let ping = get("cmdstat_ping");
    assert!(ping.starts_with("calls=2,usec="), "{ping}");
    assert!(ping.ends_with(",rejected_calls=0,failed_calls=0"), "{ping}");
    let hello = get("cmdstat_hello");
    assert!(
        hello.ends_with("rejected_calls=0,failed_calls=1"),
        "{hello}"
    );
    assert_eq!(get("errorstat_ERR"), "count=1");
    assert_eq!(get("errorstat_NOPROTO"), "count=1");
    assert_eq!(get("total_error_replies"), "2");
    // Uptime follows the server's clock.
    let before: i64 = get("uptime_in_seconds").parse().unwrap();
    server.clock().advance(Duration::from_secs(2 * 86400 + 5));
    let later = parse_info(&c.text(&["INFO", "server"]));
    let uptime: i64 = later
        .iter()
        .find(|(_, k, _)| k == "uptime_in_seconds")
        .unwrap()
        .2
        .parse()
        .unwrap();
    assert_eq!(uptime - before, 2 * 86400 + 5);
    assert!(later
        .iter()
        .any(|(_, k, v)| k == "uptime_in_days" && v == "2"));
    // Default sections leave out commandstats and latencystats; unknown sections are ignored.
    let default = c.text(&["INFO"]);
    assert!(!default.contains("# Commandstats") && default.contains("# Errorstats"));
    assert_eq!(c.text(&["INFO", "nosuchsection"]), "");
    assert_eq!(
        c.text(&["INFO", "keyspace", "cluster"]),
        "# Cluster\r\ncluster_enabled:0\r\n\r\n# Keyspace\r\n"
    );
    {
        c.raw(&["SET", "a", "1"]);
        c.raw(&["SELECT", "5"]);
        c.raw(&["SET", "b", "2"]);
        assert_eq!(
            c.text(&["INFO", "keyspace"]),
            "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\ndb5:keys=1,expires=0,avg_ttl=0\r\n"
        );
    }
}

#[test]
fn shutdown_stops_the_server() {
    // A directory no file can be created in: the save fails.
    let server = support::builder()
        .config("dir", "/proc")
        .unwrap()
        .start()
        .unwrap();
    let addr = server.addr();
    let mut c = Client::connect(addr);
    assert_eq!(
        c.raw(&["SHUTDOWN", "ABORT"]),
        b"-ERR No shutdown in progress.\r\n".to_vec()
    );
    // The save fails: SHUTDOWN SAVE refuses to stop (the server keeps running) unless FORCE.
    assert_eq!(
        c.raw(&["SHUTDOWN", "SAVE"]),
        b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n".to_vec()
    );
    assert_eq!(c.raw(&["PING"]), b"+PONG\r\n");
    let mut other = Client::connect(addr);
    other.raw(&["PING"]);
    c.send(&["SHUTDOWN", "NOSAVE"]);
    // No reply: the connections close as the server stops.
    assert!(c.closed_within(Duration::from_secs(5)));
    assert!(other.closed_within(Duration::from_secs(5)));
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(addr).is_ok() {
        assert!(Instant::now() < deadline, "still accepting connections");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn shutdown_save_force_stops_anyway() {
    let server = support::builder()
        .config("dir", "/proc")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Client::connect(server.addr());
    c.send(&["SHUTDOWN", "SAVE", "FORCE"]);
    assert!(c.closed_within(Duration::from_secs(5)));
}

#[test]
fn debug_subcommands_where_allowed() {
    let server = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    // DEBUG SLEEP stops the whole server, as in Redis.
    // Timed from before the sleep is sent: the PING's reply cannot come sooner than 300 ms
    // after that, however late this thread gets to send the PING on a loaded machine.
    let started = Instant::now();
    a.send(&["DEBUG", "SLEEP", "0.3"]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(b.raw(&["PING"]), b"+PONG\r\n");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "PING waited for the sleep"
    );
    assert_eq!(a.raw_reply(), b"+OK\r\n");
    assert_eq!(a.raw(&["DEBUG", "SLEEP", "0"]), b"+OK\r\n");
    // POPULATE's keys are not changes to save, as in Redis (nor propagated: see
    // propagation.rs).
    assert_eq!(a.raw(&["DEBUG", "POPULATE", "5"]), b"+OK\r\n");
    assert_eq!(a.raw(&["DBSIZE"]), b":5\r\n");
    let persistence = a.text(&["INFO", "persistence"]);
    assert!(
        persistence.contains("rdb_changes_since_last_save:0\r\n"),
        "{persistence}"
    );
    assert_eq!(a.raw(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), b"+OK\r\n");
    assert_eq!(a.raw(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), b"+OK\r\n");
    assert_eq!(a.raw(&["DEBUG", "LOG", "hello"]), b"+OK\r\n");
    assert_eq!(
        a.raw(&["DEBUG", "OBJECT", "nokey"]),
        b"-ERR no such key\r\n".to_vec()
    );
    assert_eq!(
        a.raw(&["DEBUG", "nosuch"]),
        b"-ERR unknown subcommand or wrong number of arguments for 'nosuch'. Try DEBUG HELP.\r\n"
            .to_vec()
    );
    assert_eq!(
        a.raw(&["DEBUG", "SLEEP"]),
        b"-ERR unknown subcommand or wrong number of arguments for 'SLEEP'. Try DEBUG HELP.\r\n"
            .to_vec()
    );
    assert!(a.raw(&["DEBUG", "HELP"]).starts_with(b"*"));
    {
        a.raw(&["SET", "k", "v"]);
        let line = a.text(&["DEBUG", "OBJECT", "k"]);
        assert!(line.starts_with("Value at:0x"), "{line}");
        assert!(
            line.contains(" refcount:1 encoding:embstr serializedlength:2 lru:"),
            "{line}"
        );
        a.raw(&["SET", "n", "123"]);
        let line = a.text(&["DEBUG", "OBJECT", "n"]);
        assert!(
            line.contains(" refcount:2147483647 encoding:int "),
            "{line}"
        );
    }
}

#[test]
fn debug_set_active_expire_stops_background_expiry() {
    let server = support::builder()
        .clock(embedis::Clock::manual())
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.raw(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), b"+OK\r\n");
    c.raw(&["SET", "k", "v", "PX", "100"]);
    server.clock().advance(Duration::from_secs(1));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        c.raw(&["DBSIZE"]),
        b":1\r\n",
        "not removed in the background"
    );
    assert_eq!(c.raw(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), b"+OK\r\n");
    server.clock().advance(Duration::from_millis(1));
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.raw(&["DBSIZE"]) != b":0\r\n" {
        assert!(
            Instant::now() < deadline,
            "expired in the background once re-enabled"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn config_set_applies_and_rewrite_writes_the_file() {
    let dir = std::env::temp_dir().join(format!("embedis-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("embedis.conf");
    std::fs::write(&path, "# test configuration\nhz 20\nhz 25\ntimeout 0\n").unwrap();
    let mut config = embedis::Config::default();
    config
        .load_text(&std::fs::read_to_string(&path).unwrap())
        .unwrap();
    config.bind = vec!["127.0.0.1".into()];
    config.dir = dir.display().to_string();
    let options = embedis_core::ServerOptions {
        config,
        ephemeral_port: true,
        logger: Some(embedis_core::base::log::Logger::silent()),
        config_file: Some(path.display().to_string()),
        ..Default::default()
    };
    let handle = embedis_core::start(options).unwrap();
    let mut c = Client::connect(handle.addr().unwrap());
    assert_eq!(
        c.raw(&["CONFIG", "GET", "hz"]),
        b"*2\r\n$2\r\nhz\r\n$2\r\n25\r\n"
    );
    assert_eq!(
        c.raw(&["CONFIG", "SET", "hz", "30", "maxclients", "77"]),
        b"+OK\r\n"
    );
    assert_eq!(c.raw(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("# test configuration\nhz 30\ntimeout 0\n"),
        "{text}"
    );
    assert!(text.contains("\n# Generated by CONFIG REWRITE\n"), "{text}");
    assert!(text.contains("\nmaxclients 77\n"), "{text}");
    let mut reread = embedis::Config::default();
    reread.load_text(&text).unwrap();
    assert_eq!((reread.hz, reread.maxclients), (30, 77));
    // All or nothing.
    assert!(c
        .text(&["CONFIG", "SET", "hz", "40", "timeout", "x"])
        .starts_with("ERR CONFIG SET failed (possibly related to argument 'timeout')"));
    assert_eq!(
        c.raw(&["CONFIG", "GET", "hz"]),
        b"*2\r\n$2\r\nhz\r\n$2\r\n30\r\n"
    );
    drop(handle);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn command_getkeys_finds_keys_of_known_commands() {
    let server = server();
    let mut c = Client::connect(server.addr());
    assert_eq!(
        c.raw(&["COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"]),
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    assert_eq!(
        c.raw(&["COMMAND", "GETKEYS", "SET", "a", "b", "c"]),
        b"*1\r\n$1\r\na\r\n"
    );
    assert_eq!(
        c.raw(&["COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v"]),
        b"*1\r\n*2\r\n$1\r\nk\r\n*2\r\n+OW\r\n+update\r\n"
    );
    assert_eq!(
        c.raw(&["COMMAND", "GETKEYS", "GET", "a", "b"]),
        b"-ERR Invalid number of arguments specified for command\r\n".to_vec()
    );
}

#[test]
fn command_docs_is_well_formed_for_redis_cli() {
    let server = server();
    let mut c = Client::connect(server.addr());
    let raw = c.raw(&["COMMAND", "DOCS"]);
    let (value, used) = decode_value(&Bytes::from(raw.clone())).unwrap().unwrap();
    assert_eq!(used, raw.len());
    let Value::Array(flat) = value else {
        panic!("a flat map in RESP2")
    };
    assert_eq!(flat.len() % 2, 0);
    assert!(flat.len() / 2 >= 10);
    for pair in flat.chunks(2) {
        assert!(matches!(pair[0], Value::Bulk(_)));
        assert!(matches!(pair[1], Value::Array(_)));
    }
    // redis-cli (7.0) starts by asking for the docs; it must run a command and exit cleanly.
    if let Some(cli) =
        support::find_binary("redis-cli", "command_docs_is_well_formed_for_redis_cli")
    {
        let out = std::process::Command::new(cli)
            .args(["-p", &server.addr().port().to_string(), "COMMAND", "COUNT"])
            .output()
            .unwrap();
        assert!(out.status.success());
    }
}

#[test]
fn config_set_dir_is_protected_unless_enabled() {
    let server = server();
    let mut c = Client::connect(server.addr());
    assert_eq!(
        c.raw(&["CONFIG", "SET", "dir", "/"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config\r\n"
            .to_vec()
    );
    let server = support::builder()
        .config("enable-protected-configs", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Client::connect(server.addr());
    assert_eq!(
        c.raw(&["CONFIG", "SET", "dir", "/nonexistent-embedis-dir", "hz", "11"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'dir') - No such file or directory\r\n"
            .to_vec()
    );
    assert_eq!(
        c.raw(&["CONFIG", "GET", "hz"]),
        b"*2\r\n$2\r\nhz\r\n$2\r\n10\r\n",
        "nothing applied"
    );
    // Changing to the directory we are in (spelt differently) leaves the process where it was
    // and reads back as the absolute path.
    let cwd = std::env::current_dir().unwrap();
    let spelt = format!("{}/.", cwd.display());
    assert_eq!(c.raw(&["CONFIG", "SET", "dir", &spelt]), b"+OK\r\n");
    let raw = c.raw(&["CONFIG", "GET", "dir"]);
    assert!(
        raw.ends_with(format!("{}\r\n", cwd.display()).as_bytes()),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    assert_eq!(std::env::current_dir().unwrap(), cwd);
}

#[test]
fn config_set_port_moves_the_listener_and_keeps_open_connections() {
    let server = support::builder().start().unwrap();
    let old = server.addr();
    let mut c = Client::connect(old);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port().to_string();
    assert_eq!(
        c.raw(&["CONFIG", "SET", "port", &taken_port]),
        b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n".to_vec()
    );
    let old_port = old.port().to_string();
    let expected = format!("*2\r\n$4\r\nport\r\n${}\r\n{old_port}\r\n", old_port.len());
    assert_eq!(
        c.raw(&["CONFIG", "GET", "port"]),
        expected.into_bytes(),
        "a failed SET changes nothing"
    );
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let new_port = free.local_addr().unwrap().port();
    drop(free);
    let new_port_text = new_port.to_string();
    assert_eq!(
        c.raw(&["CONFIG", "SET", "port", &new_port_text]),
        b"+OK\r\n"
    );
    assert_eq!(c.raw(&["PING"]), b"+PONG\r\n", "the open connection stays");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut fresh = loop {
        let addr = SocketAddr::from(([127, 0, 0, 1], new_port));
        if support::Conn::connect(addr).is_ok() {
            break Client::connect(addr);
        }
        assert!(Instant::now() < deadline, "nothing listens on the new port");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(fresh.raw(&["PING"]), b"+PONG\r\n");
    let refused = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        TcpStream::connect(old).is_err()
    });
    assert!(refused, "the old port stops accepting");
    assert_eq!(
        c.raw(&["CONFIG", "SET", "bind", "192.0.2.1"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.\r\n".to_vec()
    );
    assert_eq!(fresh.raw(&["PING"]), b"+PONG\r\n");
}

/// maxmemory lowered by another connection while a transaction is open (Redis's multi.tcl
/// cases): an EXEC whose queue holds a `denyoom` command is refused with EXECABORT and the
/// reason, a read-only queue still runs, and a command refused while queueing dooms the EXEC.
#[test]
fn maxmemory_reached_during_a_transaction() {
    let server = server();
    let mut a = Client::connect(server.addr());
    let mut admin = Client::connect(server.addr());
    let oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";

    a.raw(&["SET", "x", "value"]);
    a.raw(&["MULTI"]);
    a.raw(&["SET", "x", "1"]);
    a.raw(&["GET", "x"]);
    assert_eq!(admin.raw(&["CONFIG", "SET", "maxmemory", "1"]), b"+OK\r\n");
    assert_eq!(
        String::from_utf8(a.raw(&["EXEC"])).unwrap(),
        format!("-EXECABORT Transaction discarded because of: {}", &oom[1..])
    );
    assert_eq!(a.raw(&["PING"]), b"+PONG\r\n", "the transaction is gone");
    admin.raw(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(a.text(&["GET", "x"]), "value");

    a.raw(&["MULTI"]);
    a.raw(&["GET", "x"]);
    a.raw(&["PING"]);
    admin.raw(&["CONFIG", "SET", "maxmemory", "1"]);
    assert_eq!(a.raw(&["EXEC"]), b"*2\r\n$5\r\nvalue\r\n+PONG\r\n");
    // Outside a transaction, only denyoom commands are refused.
    assert_eq!(String::from_utf8(a.raw(&["SET", "x", "2"])).unwrap(), oom);
    assert_eq!(a.raw(&["DEL", "nosuch"]), b":0\r\n");
    admin.raw(&["CONFIG", "SET", "maxmemory", "0"]);

    a.raw(&["MULTI"]);
    a.raw(&["SET", "foo1", "bar1"]);
    admin.raw(&["CONFIG", "SET", "maxmemory", "1"]);
    assert_eq!(String::from_utf8(a.raw(&["LPUSH", "l", "v"])).unwrap(), oom);
    admin.raw(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(a.raw(&["SET", "foo2", "bar2"]), b"+QUEUED\r\n");
    assert!(a.raw(&["EXEC"]).starts_with(b"-EXECABORT"));
    assert_eq!(a.raw(&["EXISTS", "foo1", "foo2"]), b":0\r\n");
    let info = a.text(&["INFO", "errorstats"]);
    assert!(info.contains("errorstat_OOM:count=2"), "{info}");
}

/// The maxmemory family's parameters, and the values embedis refuses as not implemented
/// (client eviction) rather than accepting and ignoring.
#[test]
fn maxmemory_parameters() {
    let server = server();
    let mut a = Client::connect(server.addr());
    assert_eq!(
        a.raw(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        b"+OK\r\n"
    );
    assert_eq!(
        a.raw(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]),
        b"+OK\r\n"
    );
    // INFO reports the limit and the policy.
    a.raw(&["CONFIG", "SET", "maxmemory", "1mb"]);
    let info = a.text(&["INFO", "memory"]);
    assert!(
        info.contains(
            "\r\nmaxmemory:1048576\r\nmaxmemory_human:1.00M\r\nmaxmemory_policy:noeviction\r\n"
        ),
        "{info}"
    );
    a.raw(&["CONFIG", "SET", "maxmemory", "0"]);
    // maxmemory-clients: a percentage of maxmemory, shown as it was given.
    assert_eq!(a.text(&["CONFIG", "SET", "maxmemory-clients", "10%"]), "OK");
    assert_eq!(
        a.raw(&["CONFIG", "GET", "maxmemory-clients"]),
        b"*2\r\n$17\r\nmaxmemory-clients\r\n$3\r\n10%\r\n"
    );
    a.raw(&["CONFIG", "SET", "maxmemory-clients", "0"]);
    assert_eq!(a.text(&["CONFIG", "SET", "key-load-delay", "10"]), "OK");
}

/// MEMORY USAGE is an estimate, but it must follow the value: a longer string or a bigger
/// collection costs more, and a missing key has no size.
#[test]
fn memory_usage_follows_the_value() {
    let server = server();
    let mut a = Client::connect(server.addr());
    let usage = |a: &mut Client, key: &str| -> i64 {
        a.text(&["MEMORY", "USAGE", key])
            .trim_start_matches(':')
            .trim()
            .parse()
            .unwrap()
    };
    assert_eq!(a.raw(&["MEMORY", "USAGE", "nosuch"]), b"$-1\r\n");
    a.raw(&["SET", "k1", "v"]);
    a.raw(&["SET", "k2", &"v".repeat(1000)]);
    let (short, long) = (usage(&mut a, "k1"), usage(&mut a, "k2"));
    assert!(long >= short + 999, "{short} {long}");
    for i in 0..1000 {
        a.raw(&["HSET", "big", &format!("field{i}"), &format!("value{i}")]);
    }
    a.raw(&["HSET", "small", "f", "v"]);
    assert!(usage(&mut a, "big") > 10 * usage(&mut a, "small"));
    assert!(usage(&mut a, "big") > 1000 * 10);
}

/// CLIENT LIST's `qbuf` + `qbuf-free` of the client named `name`: its read buffer's size.
fn query_buffer_of(observer: &mut Client, name: &str) -> usize {
    let list = observer.text(&["CLIENT", "LIST"]);
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))
        .unwrap_or_else(|| panic!("no client {name} in {list}"));
    let field = |key: &str| -> usize {
        line.split(' ')
            .find_map(|f| f.strip_prefix(key))
            .unwrap()
            .parse()
            .unwrap()
    };
    field("qbuf=") + field("qbuf-free=")
}

/// Query buffers as Redis's clientsCron resizes them: a connection reads with 16 KB of room and
/// keeps it while active; idle more than 2 seconds (on the server's clock) it gives all of it
/// back; after a big request the buffer shrinks back to the usual size once requests are small.
#[test]
fn query_buffers_shrink_when_idle_or_past_a_big_request() {
    let server = manual_server();
    let mut observer = Client::connect(server.addr());
    let mut c = Client::connect(server.addr());
    c.raw(&["CLIENT", "SETNAME", "q"]);
    let initial = query_buffer_of(&mut observer, "q");
    assert!((16_384..32_768).contains(&initial), "{initial}");
    // Idle 2 seconds is not yet idle enough.
    support::advance_ms(&server, 2_000);
    std::thread::sleep(Duration::from_millis(300)); // a few ticks
    assert_eq!(query_buffer_of(&mut observer, "q"), initial);
    support::advance_ms(&server, 1_000);
    support::eventually("the idle client's buffer is freed", || {
        query_buffer_of(&mut observer, "q") == 0
    });
    // It reads again as before.
    assert_eq!(c.raw(&["PING"]), b"+PONG\r\n");

    let big = "A".repeat(400_000);
    assert_eq!(c.raw(&["SET", "x", &big]), b"+OK\r\n");
    let after_big = query_buffer_of(&mut observer, "q");
    assert!(after_big > 32_768, "{after_big}");
    support::eventually("the buffer shrinks once requests are small", || {
        assert_eq!(c.raw(&["SET", "x", "small"]), b"+OK\r\n");
        let now = query_buffer_of(&mut observer, "q");
        now > 0 && now < after_big
    });
}
