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
