//! What a script may do differs by `compat-version`, as between the real servers (the replies
//! below are Redis 7.0.15's and 7.4.1's, asked of them): from 7.2 the blocking commands are no
//! longer `noscript` — a script runs them as their non-blocking forms, as MULTI does, XREAD and
//! XREADGROUP with BLOCK included — and from 7.4 the sandbox has an `os` table holding `clock`
//! alone, in EVAL scripts and in functions (not while a library loads).

use crate::support;
use support::Client;

const NOT_FROM_SCRIPT: &str = "-ERR This Redis command is not allowed from script\r\n";

/// Each blocking command from a script, on keys with nothing to pop or read.
const BLOCKING_CALLS: &[(&str, &[&str])] = &[
    ("return redis.pcall('blpop', 'l', 0)", &["l"]),
    ("return redis.pcall('brpop', 'l', 0)", &["l"]),
    (
        "return redis.pcall('blmove', 'l', 'm', 'LEFT', 'LEFT', 0)",
        &["l", "m"],
    ),
    ("return redis.pcall('brpoplpush', 'l', 'm', 0)", &["l", "m"]),
    ("return redis.pcall('bzpopmin', 'z', 0)", &["z"]),
    ("return redis.pcall('bzpopmax', 'z', 0)", &["z"]),
];

fn eval(c: &mut Client, script: &str, keys: &[&str]) -> String {
    let numkeys = keys.len().to_string();
    let mut args = vec!["EVAL", script, &numkeys];
    args.extend_from_slice(keys);
    c.cmd(&args)
}

/// Does COMMAND INFO show `flag` among the flags of `command` (`+noscript`; the ACL
/// categories are written `+@…`)?
fn has_flag(c: &mut Client, command: &str, flag: &str) -> bool {
    let info = c.cmd(&["COMMAND", "INFO", command]);
    info.contains(&format!("+{flag}\r\n"))
}

#[test]
fn as_7_4_scripts_run_blocking_commands_without_blocking() {
    let server = support::builder_as("7.4").start().unwrap();
    let mut c = Client::connect(server.addr());
    for (script, keys) in BLOCKING_CALLS {
        assert_eq!(eval(&mut c, script, keys), "$-1\r\n", "{script}");
    }
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(
        eval(&mut c, "return redis.pcall('blpop', 'l', 0)", &["l"]),
        "*2\r\n$1\r\nl\r\n$1\r\na\r\n"
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('wait', 1, 0)", &[]),
        ":0\r\n"
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('waitaof', 0, 1, 0)", &[]),
        "*2\r\n:0\r\n:0\r\n"
    );
    let xread = "return redis.pcall('xread', 'BLOCK', 0, 'STREAMS', 's', '$')";
    assert_eq!(eval(&mut c, xread, &["s"]), "$-1\r\n");
    c.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let xreadgroup =
        "return redis.pcall('xreadgroup', 'GROUP', 'g', 'c', 'BLOCK', 0, 'STREAMS', 's', '>')";
    assert_eq!(eval(&mut c, xreadgroup, &["s"]), "$-1\r\n");
    // COMMAND INFO as Redis 7.4's: no `noscript`, and WAIT is `blocking` (@blocking).
    for command in [
        "blpop",
        "brpop",
        "blmove",
        "brpoplpush",
        "bzpopmin",
        "bzpopmax",
        "wait",
        "waitaof",
    ] {
        assert!(!has_flag(&mut c, command, "noscript"), "{command}");
        assert!(has_flag(&mut c, command, "blocking"), "{command}");
    }
    assert!(c
        .cmd(&["COMMAND", "INFO", "wait"])
        .contains("+@blocking\r\n"));
}

#[test]
fn as_7_0_scripts_may_not_run_blocking_commands() {
    let server = support::builder().start().unwrap();
    let mut c = Client::connect(server.addr());
    for (script, keys) in BLOCKING_CALLS {
        assert_eq!(eval(&mut c, script, keys), NOT_FROM_SCRIPT, "{script}");
    }
    assert_eq!(
        eval(&mut c, "return redis.pcall('wait', 1, 0)", &[]),
        NOT_FROM_SCRIPT
    );
    assert_eq!(
        eval(
            &mut c,
            "return redis.pcall('xread', 'BLOCK', 0, 'STREAMS', 's', '$')",
            &["s"]
        ),
        "-ERR xread command is not allowed with BLOCK option from scripts\r\n"
    );
    for command in [
        "blpop",
        "brpop",
        "blmove",
        "brpoplpush",
        "bzpopmin",
        "bzpopmax",
        "wait",
    ] {
        assert!(has_flag(&mut c, command, "noscript"), "{command}");
    }
    assert!(!c.cmd(&["COMMAND", "INFO", "wait"]).contains("blocking"));
}

#[test]
fn as_7_4_the_sandbox_has_os_clock_alone() {
    let server = support::builder_as("7.4").start().unwrap();
    let mut c = Client::connect(server.addr());
    let names =
        "local t = {} for k, v in pairs(os) do t[#t + 1] = k .. ':' .. type(v) end return t";
    assert_eq!(eval(&mut c, names, &[]), "*1\r\n$14\r\nclock:function\r\n");
    assert_eq!(
        eval(&mut c, "return os.clock() >= 0 and os.clock() < 1e9", &[]),
        ":1\r\n"
    );
    let execute = eval(&mut c, "return os.execute('true')", &[]);
    assert!(
        execute.starts_with("-ERR user_script:1: attempt to call field 'execute' (a nil value)"),
        "{execute}"
    );
    let write = eval(&mut c, "os.clock = nil", &[]);
    assert!(
        write.contains("Attempt to modify a readonly table"),
        "{write}"
    );
    // A fresh VM after SCRIPT FLUSH is the same sandbox.
    c.cmd(&["SCRIPT", "FLUSH"]);
    assert_eq!(
        eval(&mut c, "return type(os.clock)", &[]),
        "$8\r\nfunction\r\n"
    );
    // Functions see it when they run, not while their library loads.
    let library =
        "#!lua name=l\nredis.register_function('f', function() return type(os.clock) end)";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", library]), "$1\r\nl\r\n");
    assert_eq!(c.cmd(&["FCALL", "f", "0"]), "$8\r\nfunction\r\n");
    let at_load =
        "#!lua name=m\nlocal x = os\nredis.register_function('g', function() return 1 end)";
    let refused = c.cmd(&["FUNCTION", "LOAD", at_load]);
    assert!(
        refused.contains("Script attempted to access nonexistent global variable 'os'"),
        "{refused}"
    );
}

#[test]
fn as_7_0_the_sandbox_has_no_os() {
    let server = support::builder().start().unwrap();
    let mut c = Client::connect(server.addr());
    let reply = eval(&mut c, "return os.clock()", &[]);
    assert!(
        reply.starts_with(
            "-ERR user_script:1: Script attempted to access nonexistent global variable 'os'"
        ),
        "{reply}"
    );
    let library = "#!lua name=l\nredis.register_function('f', function() return type(os) end)";
    c.cmd(&["FUNCTION", "LOAD", library]);
    let reply = c.cmd(&["FCALL", "f", "0"]);
    assert!(
        reply.contains("nonexistent global variable 'os'"),
        "{reply}"
    );
}
