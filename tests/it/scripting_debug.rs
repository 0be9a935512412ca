//! Scripts and the DEBUG subcommands Redis's scripting tests lean on, compared byte for byte
//! with a redis-server started with `enable-debug-command yes` (the differential fixtures run
//! without it): DEBUG PROTOCOL's sample replies, straight and through a script's conversions in
//! both protocols, and DEBUG SET-DISABLE-DENY-SCRIPTS, which lets a script run `noscript`
//! commands. Needs redis-server: skipped loudly when it is missing, unless
//! EMBEDIS_REQUIRE_REDIS=1.

use crate::support;

use support::{show, Conn, RedisServer};

const TYPES: &[&str] = &[
    "string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push",
    "verbatim", "true", "false", "nosuch", "MAP",
];

/// The commands of the transcript: each sent to both servers in turn.
fn transcript() -> Vec<Vec<String>> {
    let mut lines: Vec<Vec<String>> = Vec::new();
    let line = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    lines.push(line(&["DEBUG", "PROTOCOL"]));
    // DEBUG HTSTATS's text for empty tables (filled ones depend on each server's hash
    // function), its errors, and HTSTATS-KEY's for a value that is not a table.
    lines.push(line(&["DEBUG", "HTSTATS", "15"]));
    lines.push(line(&["DEBUG", "HTSTATS", "99"]));
    lines.push(line(&["DEBUG", "HTSTATS", "x"]));
    lines.push(line(&["DEBUG", "HTSTATS"]));
    lines.push(line(&["SET", "htstats:string", "v"]));
    lines.push(line(&["DEBUG", "HTSTATS-KEY", "htstats:string"]));
    lines.push(line(&["DEBUG", "HTSTATS-KEY", "htstats:missing"]));
    // Refused to scripts until the test hook allows it.
    lines.push(line(&[
        "EVAL",
        "return redis.call('debug', 'protocol', 'string')",
        "0",
    ]));
    lines.push(line(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"]));
    for hello in ["2", "3"] {
        lines.push(line(&["HELLO", hello]));
        for t in TYPES {
            lines.push(line(&["DEBUG", "PROTOCOL", t]));
            for resp in ["2", "3"] {
                let script =
                    format!("redis.setresp({resp}); return redis.call('debug', 'protocol', '{t}')");
                lines.push(vec!["EVAL".into(), script, "0".into()]);
                // Redis's parser pushes nothing for a push reply, so the local picks up
                // whatever its stack held (a function): a quirk not reproduced.
                if *t == "push" {
                    continue;
                }
                let script = format!(
                    "redis.setresp({resp}); local r = redis.pcall('debug', 'protocol', '{t}') return type(r)"
                );
                lines.push(vec!["EVAL".into(), script, "0".into()]);
            }
        }
    }
    lines.push(line(&["HELLO", "2"]));
    lines.push(line(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"]));
    lines.push(line(&[
        "EVAL",
        "return redis.call('debug', 'protocol', 'string')",
        "0",
    ]));
    lines
}

#[test]
fn debug_protocol_and_deny_scripts_match_redis() {
    let Some(redis) = RedisServer::start(
        "debug_protocol_and_deny_scripts_match_redis",
        &["--enable-debug-command", "yes"],
    ) else {
        return;
    };
    let ours = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut theirs = Conn::connect(redis.addr()).unwrap();
    let mut mine = Conn::connect(ours.addr()).unwrap();
    for command in transcript() {
        let expected = theirs.command(&command);
        let got = mine.command(&command);
        if command[0] == "HELLO" {
            // Its reply holds the client id, which differs by nature.
            continue;
        }
        if command[..2] == ["DEBUG", "PROTOCOL"] && expected.starts_with(b">") {
            // A push frame comes first, then the command's own reply.
            let expected = theirs.read_reply().map(|r| r.0).unwrap_or_default();
            let got = mine.read_reply().map(|r| r.0).unwrap_or_default();
            assert_eq!(show(&got), show(&expected), "{command:?}: after the push");
        }
        assert_eq!(
            show(&got),
            show(&expected),
            "{command:?}: embedis differs from redis-server"
        );
    }
    // A script hides nothing between the two: EVAL's failure names the script.
    let reply = mine.command(&[
        "EVAL",
        "return redis.call('debug', 'protocol', 'string')",
        "0",
    ]);
    assert!(
        show(&reply).contains("This Redis command is not allowed from script"),
        "{}",
        show(&reply)
    );
}

/// DEBUG OBJECT looks a key up raw, as Redis does: an expired key active expiry has not removed
/// yet is still shown, until a script's (or a client's) access expires it.
#[test]
fn debug_object_sees_an_expired_key_until_a_script_expires_it() {
    let server = support::builder()
        .clock(embedis::Clock::manual())
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut conn = Conn::connect(server.addr()).unwrap();
    assert_eq!(
        conn.command(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
        b"+OK\r\n"
    );
    assert_eq!(
        conn.command(&["SET", "key", "value", "PX", "1"]),
        b"+OK\r\n"
    );
    support::advance_ms(&server, 2);
    let object = conn.command(&["DEBUG", "OBJECT", "key"]);
    assert!(object.starts_with(b"+Value at:"), "{}", show(&object));
    assert_eq!(
        conn.command(&["EVAL", "return redis.call('EXISTS', 'key')", "0"]),
        b":0\r\n"
    );
    assert_eq!(
        conn.command(&["DEBUG", "OBJECT", "key"]),
        b"-ERR no such key\r\n"
    );
    assert_eq!(conn.command(&["EXISTS", "key"]), b":0\r\n");
}

/// Debugger sessions (SCRIPT DEBUG SYNC): each a script and the commands the client sends it,
/// `|` between a command's arguments. The last command ends the session.
const SESSIONS: &[(&str, &[&str])] = &[
    (
        "local a = 1\nlocal t = {1,2,x='y'}\nredis.debug(a, t)\nredis.breakpoint()\nlocal r = redis.call('set','x',a)\nreturn r",
        &[
            "h", "s", "n", "p", "p|a", "p|t", "p|nosuch", "l", "l|2|1", "w", "t", "b|5", "b",
            "b|-5", "b|0", "b|99", "b|x", "c", "e|return 1+1", "e|x y", "r|ping", "r|get|x",
            "m", "m|10", "m|0", "'hello\0world'", "a",
        ],
    ),
    (
        "local function f(x)\n  local y = x * 2\n  return y\nend\nlocal v = f(21)\nredis.call('set', 'k', v)\nredis.call('incr', 'nokey:' .. v)\nlocal big = string.rep('x', 300)\nredis.call('set', 'big', big)\nredis.pcall('hget', 'k', 'f')\nreturn {v, 'done', {1, 2}}\n",
        &[
            "s", "s", "t", "p", "s", "s", "s", "s", "s", "s", "r|get|big",
            "e|return {1,\"a\",{x=1}}", "e|error(\"boom\")", "p|KEYS", "s", "s",
        ],
    ),
    (
        "redis.call('set', 'k', 'v')\nredis.pcall('nosuchcmd', 'a')\nredis.pcall('get')\nredis.call('set', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l')\nreturn redis.call('get', 'k')\n",
        &[
            "r|test|test|test", "s", "s", "s", "r|lrange|k|0|1", "r|hello|3",
            "r|hgetall|nokey", "e|redis.setresp(3)", "r|hgetall|nokey", "e|{}", "e|nil",
            "e|\"a\\n\\\"b\"", "e|1.5", "e|true", "e|print", "c",
        ],
    ),
];

/// Redis's Lua debugger, synchronous sessions: every answer the same bytes as redis-server's,
/// down to the end of the session (the last lines, the script's reply, the connection closed).
#[test]
fn lua_debugger_sessions_match_redis() {
    let Some(redis) = RedisServer::start("lua_debugger_sessions_match_redis", &[]) else {
        return;
    };
    let ours = support::builder().start().unwrap();
    for (script, steps) in SESSIONS {
        let mut theirs = Conn::connect(redis.addr()).unwrap();
        let mut mine = Conn::connect(ours.addr()).unwrap();
        let start: [&[&str]; 2] = [&["SCRIPT", "DEBUG", "SYNC"], &["EVAL", script, "0"]];
        for command in start {
            assert_eq!(
                show(&mine.command(command)),
                show(&theirs.command(command)),
                "{command:?}"
            );
        }
        for step in steps.iter() {
            let args: Vec<&str> = step.split('|').collect();
            assert_eq!(
                show(&mine.command(&args)),
                show(&theirs.command(&args)),
                "{script:?}: {step:?}"
            );
        }
        // The session's end: the script's reply, then the connection closes.
        assert_eq!(show(&mine.read_to_close()), show(&theirs.read_to_close()));
    }
    // SCRIPT DEBUG's refusals.
    let mut theirs = Conn::connect(redis.addr()).unwrap();
    let mut mine = Conn::connect(ours.addr()).unwrap();
    for command in [
        &["SCRIPT", "DEBUG", "maybe"][..],
        &["SCRIPT", "DEBUG"],
        &["SCRIPT", "DEBUG", "SYNC"],
        &["EVALSHA", "0000000000000000000000000000000000000000", "0"],
        &[
            "EVALSHA_RO",
            "0000000000000000000000000000000000000000",
            "0",
        ],
        &["EVALSHA", "x", "0"],
        &["SCRIPT", "DEBUG", "NO"],
        &["EVAL", "return 1", "0"],
    ] {
        assert_eq!(
            show(&mine.command(command)),
            show(&theirs.command(command)),
            "{command:?}"
        );
    }
}
