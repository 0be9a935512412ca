//! Redis 8.4's compare-and-set and compare-and-delete, which lock clients now use to release a
//! lock instead of a Lua script: SET's IFEQ / IFNE / IFDEQ / IFDNE conditions, DELEX and DIGEST.
//! No redis-server here knows these commands, so the expected replies are written out from
//! Redis's documented semantics; the digests are computed in the test with the xxhash-rust crate,
//! independently of the server.
//!
//! Every condition is played against a missing key, a key holding the compared value, a key
//! holding another value and a key of another type; then GET with a condition, the expiry
//! options, digests of known and of integer-encoded values, the option conflicts, what
//! keyspace events, WATCH and client tracking see (only a write is a change), and the lock story
//! a compare-and-delete exists for — on a manual clock, so the lease ends exactly when the test
//! says.

use crate::support;
use support::bulk;

use std::time::Duration;

use support::Client;
use xxhash_rust::xxh3::xxh3_64;

/// A server behaving as Redis 8.4 (the version that added these commands), on a manual clock.
fn manual_server() -> embedis::Server {
    support::builder_as("8.4")
        .clock(embedis::Clock::manual())
        .start()
        .unwrap()
}

const NIL: &str = "$-1\r\n";
const OK: &str = "+OK\r\n";
const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const SYNTAX: &str = "-ERR syntax error\r\n";

/// The digest DIGEST must answer for `value`: XXH3-64, 16 lower-case hex digits.
fn xxh3_digest(value: &[u8]) -> String {
    format!("{:016x}", xxh3_64(value))
}

/// The key states a condition is played against.
#[derive(Debug, Clone, Copy)]
enum State {
    Missing,
    /// Holds the string the condition compares with.
    Equal,
    /// Holds another string.
    Different,
    /// Holds a list.
    WrongType,
}

const STATES: [State; 4] = [
    State::Missing,
    State::Equal,
    State::Different,
    State::WrongType,
];

/// Puts `key` in `state`; the compared value is always "old".
fn arrange(c: &mut Client, key: &str, state: State) {
    c.cmd(&["DEL", key]);
    match state {
        State::Missing => {}
        State::Equal => assert_eq!(c.cmd(&["SET", key, "old"]), OK),
        State::Different => assert_eq!(c.cmd(&["SET", key, "other"]), OK),
        State::WrongType => assert_eq!(c.cmd(&["RPUSH", key, "old"]), ":1\r\n"),
    }
}

/// The four conditions, each with the operand that compares with "old", and whether it holds
/// for the missing / equal / different state.
fn conditions() -> Vec<(&'static str, String, [bool; 3])> {
    vec![
        ("IFEQ", "old".to_string(), [false, true, false]),
        ("IFNE", "old".to_string(), [true, false, true]),
        ("IFDEQ", xxh3_digest(b"old"), [false, true, false]),
        ("IFDNE", xxh3_digest(b"old"), [true, false, true]),
    ]
}

#[test]
fn set_with_each_condition_against_each_key_state() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    for (word, operand, holds) in conditions() {
        for state in STATES {
            arrange(&mut c, "k", state);
            let reply = c.cmd(&["SET", "k", "new", word, &operand]);
            let what = format!("SET k new {word} {operand} on {state:?}");
            let before = match state {
                State::Missing => None,
                State::Equal => Some("old"),
                State::Different => Some("other"),
                State::WrongType => {
                    assert_eq!(reply, WRONGTYPE, "{what}");
                    assert_eq!(c.cmd(&["LRANGE", "k", "0", "-1"]), "*1\r\n$3\r\nold\r\n");
                    continue;
                }
            };
            let expected = holds[state as usize];
            assert_eq!(reply, if expected { OK } else { NIL }, "{what}");
            let now = if expected { Some("new") } else { before };
            assert_eq!(c.cmd(&["GET", "k"]), now.map_or(NIL.into(), bulk), "{what}");
        }
    }
}

#[test]
fn delex_with_each_condition_against_each_key_state() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    for (word, operand, holds) in conditions() {
        for state in STATES {
            arrange(&mut c, "k", state);
            let reply = c.cmd(&["DELEX", "k", word, &operand]);
            let what = format!("DELEX k {word} {operand} on {state:?}");
            match state {
                State::WrongType => {
                    assert_eq!(reply, WRONGTYPE, "{what}");
                    assert_eq!(c.cmd(&["EXISTS", "k"]), ":1\r\n", "{what}");
                }
                // Nothing to delete, whatever the condition.
                State::Missing => assert_eq!(reply, ":0\r\n", "{what}"),
                _ => {
                    let deleted = holds[state as usize];
                    assert_eq!(reply, format!(":{}\r\n", deleted as u8), "{what}");
                    let exists = if deleted { ":0\r\n" } else { ":1\r\n" };
                    assert_eq!(c.cmd(&["EXISTS", "k"]), exists, "{what}");
                }
            }
        }
    }
}

#[test]
fn delex_without_a_condition_deletes_any_type_like_del() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    c.cmd(&["SET", "s", "v"]);
    c.cmd(&["RPUSH", "l", "a"]);
    c.cmd(&["HSET", "h", "f", "v"]);
    for key in ["s", "l", "h"] {
        assert_eq!(c.cmd(&["DELEX", key]), ":1\r\n", "{key}");
        assert_eq!(c.cmd(&["EXISTS", key]), ":0\r\n", "{key}");
    }
    assert_eq!(c.cmd(&["DELEX", "s"]), ":0\r\n");
}

#[test]
fn digest_operands_ignore_case_and_a_malformed_one_never_matches() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    let upper = xxh3_digest(b"old").to_uppercase();
    c.cmd(&["SET", "k", "old"]);
    assert_eq!(c.cmd(&["SET", "k", "new", "IFDEQ", &upper]), OK);
    assert_eq!(
        c.cmd(&["DELEX", "k", "IFDNE", &xxh3_digest(b"new").to_uppercase()]),
        ":0\r\n"
    );
    // Not 16 hex digits: equal to no digest.
    for bad in ["", "xyz", &xxh3_digest(b"new")[1..], "0x1234"] {
        assert_eq!(c.cmd(&["SET", "k", "x", "IFDEQ", bad]), NIL, "{bad:?}");
        assert_eq!(c.cmd(&["DELEX", "k", "IFDEQ", bad]), ":0\r\n", "{bad:?}");
    }
    assert_eq!(c.cmd(&["DELEX", "k", "IFDNE", "xyz"]), ":1\r\n");
}

#[test]
fn get_with_a_condition_replies_the_old_value_whether_or_not_it_writes() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    c.cmd(&["SET", "k", "old"]);
    assert_eq!(
        c.cmd(&["SET", "k", "new", "IFEQ", "old", "GET"]),
        bulk("old")
    );
    assert_eq!(c.cmd(&["GET", "k"]), bulk("new"));
    // Condition false: the reply is still the value, which stays.
    assert_eq!(
        c.cmd(&["SET", "k", "x", "GET", "IFEQ", "nope"]),
        bulk("new")
    );
    assert_eq!(c.cmd(&["GET", "k"]), bulk("new"));
    // Missing key: nil either way; IFNE creates it, IFEQ does not.
    assert_eq!(c.cmd(&["SET", "m", "v", "IFEQ", "v", "GET"]), NIL);
    assert_eq!(c.cmd(&["EXISTS", "m"]), ":0\r\n");
    assert_eq!(c.cmd(&["SET", "m", "v", "IFNE", "v", "GET"]), NIL);
    assert_eq!(c.cmd(&["GET", "m"]), bulk("v"));
    // Another type: WRONGTYPE, nothing replied before it.
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(c.cmd(&["SET", "l", "v", "IFNE", "v", "GET"]), WRONGTYPE);
    assert_eq!(c.cmd(&["TYPE", "l"]), "+list\r\n");
}

#[test]
fn expiry_options_apply_only_when_the_condition_writes() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    c.cmd(&["SET", "k", "v", "PX", "5000"]);
    // A refused write leaves the TTL alone.
    assert_eq!(c.cmd(&["SET", "k", "w", "IFEQ", "nope", "PX", "100"]), NIL);
    assert_eq!(c.cmd(&["PTTL", "k"]), ":5000\r\n");
    // A write without an expiry option removes the TTL, as plain SET does …
    assert_eq!(c.cmd(&["SET", "k", "w", "IFEQ", "v"]), OK);
    assert_eq!(c.cmd(&["PTTL", "k"]), ":-1\r\n");
    // … and each option sets it.
    assert_eq!(c.cmd(&["SET", "k", "x", "IFEQ", "w", "PX", "1500"]), OK);
    assert_eq!(c.cmd(&["PTTL", "k"]), ":1500\r\n");
    assert_eq!(c.cmd(&["SET", "k", "y", "IFNE", "w", "KEEPTTL"]), OK);
    assert_eq!(c.cmd(&["PTTL", "k"]), ":1500\r\n");
    assert_eq!(
        c.cmd(&["SET", "k", "z", "EX", "20", "IFDEQ", &xxh3_digest(b"y")]),
        OK
    );
    assert_eq!(c.cmd(&["PTTL", "k"]), ":20000\r\n");
    let now_ms = server.clock().now_ms();
    let at = (now_ms + 7000).to_string();
    assert_eq!(
        c.cmd(&["SET", "k", "a", "PXAT", &at, "IFDNE", &xxh3_digest(b"q")]),
        OK
    );
    assert_eq!(c.cmd(&["PTTL", "k"]), ":7000\r\n");
    // Past its deadline the key is missing to the condition.
    server.clock().advance(Duration::from_millis(7001));
    assert_eq!(c.cmd(&["SET", "k", "b", "IFEQ", "a"]), NIL);
    assert_eq!(c.cmd(&["EXISTS", "k"]), ":0\r\n");
    // An invalid expire time is reported, not a refused condition.
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(
        c.cmd(&["SET", "k", "w", "IFEQ", "v", "EX", "0"]),
        "-ERR invalid expire time in 'set' command\r\n"
    );
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
}

#[test]
fn digest_is_xxh3_of_the_string_and_of_an_integers_decimal_text() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    let big = "x".repeat(1024);
    for value in ["", "hello", "a\x00b\r\nc", big.as_str(), "0123", "1.5"] {
        c.cmd(&["SET", "k", value]);
        assert_eq!(
            c.cmd(&["DIGEST", "k"]),
            bulk(&xxh3_digest(value.as_bytes())),
            "{value:?}"
        );
    }
    // Stored as integers (OBJECT ENCODING int): hashed as the decimal text a client sees.
    for value in ["12345", "-7", "0", "9223372036854775807"] {
        c.cmd(&["SET", "n", value]);
        assert_eq!(c.cmd(&["OBJECT", "ENCODING", "n"]), "$3\r\nint\r\n");
        assert_eq!(
            c.cmd(&["DIGEST", "n"]),
            bulk(&xxh3_digest(value.as_bytes())),
            "{value}"
        );
    }
    c.cmd(&["DEL", "counter"]);
    c.cmd(&["INCRBY", "counter", "41"]);
    c.cmd(&["INCR", "counter"]);
    assert_eq!(c.cmd(&["DIGEST", "counter"]), bulk(&xxh3_digest(b"42")));
    // The same digest whichever way "42" was stored, so a digest taken before INCR matches.
    c.cmd(&["APPEND", "appended", "4"]);
    c.cmd(&["APPEND", "appended", "2"]);
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "appended"]), "$3\r\nraw\r\n");
    assert_eq!(c.cmd(&["DIGEST", "appended"]), bulk(&xxh3_digest(b"42")));
    assert_eq!(
        c.cmd(&["SET", "counter", "43", "IFDEQ", &xxh3_digest(b"42")]),
        OK
    );
    // Leading zero digits are kept: 16 digits always.
    let small = (0..10_000)
        .map(|i| format!("v{i}"))
        .find(|v| xxh3_64(v.as_bytes()) >> 60 == 0)
        .expect("one value in 16 hashes below 2^60");
    c.cmd(&["SET", "k", &small]);
    let reply = c.cmd(&["DIGEST", "k"]);
    assert_eq!(reply, bulk(&xxh3_digest(small.as_bytes())));
    assert!(reply.starts_with("$16\r\n0"), "{reply:?}");
    // Missing key, other type, arity.
    assert_eq!(c.cmd(&["DIGEST", "nokey"]), NIL);
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(c.cmd(&["DIGEST", "l"]), WRONGTYPE);
    assert_eq!(
        c.cmd(&["DIGEST", "k", "extra"]),
        "-ERR wrong number of arguments for 'digest' command\r\n"
    );
}

#[test]
fn conditions_exclude_nx_xx_and_each_other() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    c.cmd(&["SET", "k", "v"]);
    for line in [
        &["SET", "k", "w", "NX", "IFEQ", "v"][..],
        &["SET", "k", "w", "IFEQ", "v", "XX"],
        &["SET", "k", "w", "IFEQ", "v", "IFNE", "v"],
        &["SET", "k", "w", "IFDEQ", "v", "IFDNE", "v"],
        &["SET", "k", "w", "IFEQ"],
        &["SET", "k", "w", "IFEQ", "v", "GET", "IFDEQ"],
        &["DELEX", "k", "IFEQ"],
        &["DELEX", "k", "IFEQ", "v", "extra"],
        &["DELEX", "k", "NX", "v"],
        &["DELEX", "k", "IFEQ", "v", "IFNE", "v"],
    ] {
        assert_eq!(c.cmd(line), SYNTAX, "{line:?}");
    }
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
    // The same condition twice: the last operand counts, as a repeated EX does.
    assert_eq!(c.cmd(&["SET", "k", "w", "IFEQ", "nope", "IFEQ", "v"]), OK);
    assert_eq!(
        c.cmd(&["DELEX"]),
        "-ERR wrong number of arguments for 'delex' command\r\n"
    );
    // Option words compare case-insensitively, like NX and XX.
    assert_eq!(c.cmd(&["SET", "k", "x", "ifEq", "w"]), OK);
    assert_eq!(
        c.cmd(&["DELEX", "k", "ifdeq", &xxh3_digest(b"x")]),
        ":1\r\n"
    );
}

/// The key specs' flags for one line: a condition reads the value.
#[test]
fn key_flags_follow_the_condition() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    let flags = |c: &mut Client, line: &[&str]| {
        let mut args = vec!["COMMAND", "GETKEYSANDFLAGS"];
        args.extend_from_slice(line);
        c.cmd(&args)
    };
    let rm = "*1\r\n*2\r\n$1\r\nk\r\n*2\r\n+RM\r\n+delete\r\n";
    let rw = "*1\r\n*2\r\n$1\r\nk\r\n*3\r\n+RW\r\n+access\r\n+delete\r\n";
    assert_eq!(flags(&mut c, &["DELEX", "k"]), rm);
    assert_eq!(flags(&mut c, &["DELEX", "k", "IFEQ", "v"]), rw);
    let ow = "*1\r\n*2\r\n$1\r\nk\r\n*2\r\n+OW\r\n+update\r\n";
    let read = "*1\r\n*2\r\n$1\r\nk\r\n*3\r\n+RW\r\n+access\r\n+update\r\n";
    assert_eq!(flags(&mut c, &["SET", "k", "v", "XX"]), ow);
    assert_eq!(flags(&mut c, &["SET", "k", "v", "IFNE", "v"]), read);
}

/// Keyspace events are sent for what happened: `set` (and `expire`) for a write, `del` for a
/// deletion, nothing for a condition that did not hold.
#[test]
fn events_only_for_writes() {
    let server = manual_server();
    let mut c = Client::connect(server.addr());
    let mut sub = Client::connect(server.addr());
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    let event = |sub: &mut Client, name: &str, key: &str| {
        let channel = format!("__keyevent@0__:{name}");
        format!(
            "*4\r\n$8\r\npmessage\r\n$16\r\n__keyevent@0__:*\r\n${}\r\n{channel}\r\n${}\r\n{key}\r\n",
            channel.len(),
            key.len()
        )
        .eq(&sub.reply())
    };
    c.cmd(&["SET", "k", "v"]);
    assert!(event(&mut sub, "set", "k"));
    // Refused: no events; the marker that follows is the next thing the subscriber sees.
    c.cmd(&["SET", "k", "w", "IFEQ", "nope", "PX", "100"]);
    c.cmd(&["SET", "k", "w", "IFDNE", &xxh3_digest(b"v")]);
    c.cmd(&["DELEX", "k", "IFNE", "v"]);
    c.cmd(&["DELEX", "missing", "IFNE", "v"]);
    c.cmd(&["DELEX", "missing"]);
    c.cmd(&["SET", "marker", "1"]);
    assert!(event(&mut sub, "set", "marker"));
    // Written: set and expire; deleted: del.
    c.cmd(&["SET", "k", "w", "IFEQ", "v", "PX", "100"]);
    assert!(event(&mut sub, "set", "k"));
    assert!(event(&mut sub, "expire", "k"));
    c.cmd(&["DELEX", "k", "IFDEQ", &xxh3_digest(b"w")]);
    assert!(event(&mut sub, "del", "k"));
    sub.assert_quiet("no other event");
}

/// WATCH sees a compare-and-set or compare-and-delete only if it wrote.
#[test]
fn watch_is_broken_only_by_a_write() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    b.cmd(&["SET", "k", "v"]);
    let transaction = |a: &mut Client| {
        a.cmd(&["MULTI"]);
        a.cmd(&["INCR", "n"]);
        a.cmd(&["EXEC"])
    };
    for refused in [
        &["SET", "k", "w", "IFEQ", "nope"][..],
        &["SET", "k", "w", "IFNE", "v", "GET"],
        &["DELEX", "k", "IFEQ", "nope"],
        &["DELEX", "k", "IFDNE", &xxh3_digest(b"v")],
    ] {
        a.cmd(&["WATCH", "k"]);
        b.cmd(refused);
        assert!(transaction(&mut a).starts_with("*1\r\n:"), "{refused:?}");
    }
    a.cmd(&["WATCH", "k"]);
    assert_eq!(b.cmd(&["SET", "k", "w", "IFEQ", "v"]), OK);
    assert_eq!(transaction(&mut a), "*-1\r\n");
    a.cmd(&["WATCH", "k"]);
    assert_eq!(b.cmd(&["DELEX", "k", "IFEQ", "w"]), ":1\r\n");
    assert_eq!(transaction(&mut a), "*-1\r\n");
}

/// A tracking client's cached key is invalidated by a conditional write that wrote, not by one
/// that was refused.
#[test]
fn tracking_is_invalidated_only_by_a_write() {
    let server = manual_server();
    let mut reader = Client::connect(server.addr());
    let mut writer = Client::connect(server.addr());
    writer.cmd(&["SET", "k", "v"]);
    reader.cmd(&["HELLO", "3"]);
    assert_eq!(reader.cmd(&["CLIENT", "TRACKING", "ON"]), OK);
    let invalidation = ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n";
    reader.cmd(&["GET", "k"]);
    writer.cmd(&["SET", "k", "w", "IFEQ", "nope"]);
    writer.cmd(&["DELEX", "k", "IFNE", "v"]);
    reader.assert_quiet("a refused write invalidates nothing");
    assert_eq!(writer.cmd(&["SET", "k", "w", "IFEQ", "v"]), OK);
    assert_eq!(reader.reply(), invalidation);
    reader.cmd(&["GET", "k"]);
    assert_eq!(writer.cmd(&["DELEX", "k", "IFEQ", "w"]), ":1\r\n");
    assert_eq!(reader.reply(), invalidation);
}

/// The lock story: A's lease runs out while it works, B takes the lock, and A's late release
/// (compare-and-delete of its own token) deletes nothing; B's release does.
#[test]
fn a_late_release_by_compare_and_delete_spares_the_new_holder() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    assert_eq!(a.cmd(&["SET", "lock", "tokA", "NX", "PX", "1000"]), OK);
    assert_eq!(b.cmd(&["SET", "lock", "tokB", "NX", "PX", "1000"]), NIL);
    server.clock().advance(Duration::from_millis(1000));
    assert_eq!(
        b.cmd(&["SET", "lock", "tokB", "NX", "PX", "1000"]),
        NIL,
        "held to its last ms"
    );
    server.clock().advance(Duration::from_millis(1));
    assert_eq!(b.cmd(&["SET", "lock", "tokB", "NX", "PX", "1000"]), OK);

    assert_eq!(
        a.cmd(&["DELEX", "lock", "IFEQ", "tokA"]),
        ":0\r\n",
        "A's late release"
    );
    assert_eq!(server.get("lock"), Some(b"tokB".to_vec()));
    assert_eq!(server.pttl("lock"), 1000);
    // Extending by compare-and-set follows the same rule: only the holder's token renews.
    assert_eq!(
        a.cmd(&["SET", "lock", "tokA", "IFEQ", "tokA", "PX", "1000"]),
        NIL
    );
    assert_eq!(
        b.cmd(&["SET", "lock", "tokB", "IFEQ", "tokB", "PX", "2000"]),
        OK
    );
    assert_eq!(server.pttl("lock"), 2000);

    assert_eq!(
        b.cmd(&["DELEX", "lock", "IFEQ", "tokB"]),
        ":1\r\n",
        "B's release"
    );
    assert_eq!(server.get("lock"), None);
    assert_eq!(a.cmd(&["SET", "lock", "tokA", "NX", "PX", "1000"]), OK);
}
