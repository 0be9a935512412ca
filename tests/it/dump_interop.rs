//! DUMP and RESTORE across servers: every type and encoding is built the same way on
//! redis-server 7.0 and on embedis, then each server's DUMP of a key is RESTOREd into the other
//! under a new name. The restored value must have the original's DEBUG DIGEST-VALUE (each server
//! compares with its own digest, so the test does not depend on the two digests agreeing) and
//! OBJECT ENCODING, and where the layout is deterministic (everything but hash tables) the two
//! DUMPs must be the same bytes.
//!
//! Needs redis-server: skipped loudly when it is missing, unless EMBEDIS_REQUIRE_REDIS=1.

use crate::support;

use support::{Conn, RedisServer};

/// The value of a bulk-string reply, `None` for anything else.
fn bulk_payload(raw: &[u8]) -> Option<Vec<u8>> {
    let rest = raw.strip_prefix(b"$")?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    let len: usize = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    Some(rest[end + 2..end + 2 + len].to_vec())
}

/// An extended XPENDING reply with each entry's idle time blanked: the ids, consumers and
/// delivery counts must cross over, while the idle milliseconds move with the clock between the
/// two calls (comparing lengths alone was flaky when an idle time gained a digit).
fn without_idle(raw: &[u8]) -> String {
    let mut blank_next_integer = false;
    let mut out = Vec::new();
    let text = String::from_utf8_lossy(raw);
    for line in text.split("\r\n") {
        if line == "*4" {
            blank_next_integer = true;
        } else if blank_next_integer && line.starts_with(':') {
            blank_next_integer = false;
            out.push(":<idle>");
            continue;
        }
        out.push(line);
    }
    out.join("\r\n")
}

/// Commands that build the keys on each server (the same on both).
const SETUP: &[&[&str]] = &[
    &["SET", "str:int", "123456"],
    &["SET", "str:emb", "hello world"],
    &[
        "SET",
        "str:raw",
        "a long string that takes more than forty-four bytes, so raw, and compressible compressible",
    ],
    &["PFADD", "str:hll", "a", "b", "c"],
    &["RPUSH", "list:small", "a", "1", "-2", "300000", "x"],
    &[
        "EVAL",
        "for i=1,3000 do redis.call('rpush', KEYS[1], 'item-'..i) end",
        "1",
        "list:big",
    ],
    &["SADD", "set:int", "1", "2", "3", "-70000"],
    &["SADD", "set:ht", "a", "b", "c", "1"],
    &[
        "EVAL",
        "for i=1,1000 do redis.call('sadd', KEYS[1], 'm'..i) end",
        "1",
        "set:big",
    ],
    &["HSET", "hash:lp", "f1", "v1", "f2", "22", "f3", "-3"],
    &[
        "EVAL",
        "for i=1,1000 do redis.call('hset', KEYS[1], 'f'..i, 'v'..i) end",
        "1",
        "hash:ht",
    ],
    &["ZADD", "zset:lp", "1", "a", "2.5", "b", "-0.1", "c", "inf", "d"],
    &[
        "EVAL",
        "for i=1,500 do redis.call('zadd', KEYS[1], i * 1.5, 'm'..i) end",
        "1",
        "zset:skip",
    ],
    &[
        "EVAL",
        "for i=1,300 do redis.call('xadd', KEYS[1], i..'-1', 'f', i, 'g', 'v'..i) end",
        "1",
        "stream",
    ],
    &["XDEL", "stream", "3-1", "200-1"],
    &["XGROUP", "CREATE", "stream", "g1", "0"],
    &["XGROUP", "CREATE", "stream", "g2", "$"],
    &[
        "XREADGROUP",
        "GROUP",
        "g1",
        "alice",
        "COUNT",
        "5",
        "STREAMS",
        "stream",
        ">",
    ],
    &["XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "stream", ">"],
    &["XACK", "stream", "g1", "2-1"],
];

const KEYS: &[(&str, bool)] = &[
    // (key, DUMP bytes comparable between the servers)
    ("str:int", true),
    ("str:emb", true),
    ("str:raw", true),
    ("str:hll", true),
    ("list:small", true),
    ("list:big", true),
    ("set:int", true),
    ("set:ht", false),
    ("set:big", false),
    ("hash:lp", true),
    ("hash:ht", false),
    ("zset:lp", true),
    ("zset:skip", true),
    // Consumers' seen times and delivery times differ between the servers.
    ("stream", false),
];

fn value_digest(conn: &mut Conn, key: &str) -> Vec<u8> {
    conn.command(&["DEBUG", "DIGEST-VALUE", key])
}

/// DUMPs `key` from `from`, RESTOREs it into `to` as `new_key`, and checks digest and encoding
/// there against `to`'s own `key`.
fn transfer(from: &mut Conn, to: &mut Conn, key: &str, new_key: &str, direction: &str) {
    let payload = bulk_payload(&from.command(&["DUMP", key]))
        .unwrap_or_else(|| panic!("{direction}: DUMP {key} gave no payload"));
    let reply = to.command(&[b"RESTORE".as_slice(), new_key.as_bytes(), b"0", &payload]);
    assert_eq!(reply, b"+OK\r\n", "{direction}: RESTORE {key}");
    assert_eq!(
        value_digest(to, new_key),
        value_digest(to, key),
        "{direction}: digest of {key} after the round trip"
    );
    // A restored string is encoded afresh: a short HLL (raw, as PFADD leaves it) comes back
    // embstr on both servers.
    if key != "str:hll" {
        assert_eq!(
            to.command(&["OBJECT", "ENCODING", new_key]),
            to.command(&["OBJECT", "ENCODING", key]),
            "{direction}: encoding of {key}"
        );
    }
}

#[test]
fn dumps_restore_across_servers() {
    let Some(redis) = RedisServer::start("dump-interop", &[]) else {
        return;
    };
    let ours = support::builder().start().unwrap();
    let mut r = Conn::connect(redis.addr()).unwrap();
    let mut o = Conn::connect(ours.addr()).unwrap();
    for cmd in SETUP {
        let a = r.command(cmd);
        let b = o.command(cmd);
        if !cmd[0].eq_ignore_ascii_case("XREADGROUP") {
            assert_eq!(a, b, "setup {cmd:?}");
        }
    }
    for &(key, same_bytes) in KEYS {
        if same_bytes {
            assert_eq!(
                bulk_payload(&r.command(&["DUMP", key])),
                bulk_payload(&o.command(&["DUMP", key])),
                "DUMP {key}"
            );
        }
        transfer(
            &mut r,
            &mut o,
            key,
            &format!("from-redis:{key}"),
            "redis -> embedis",
        );
        transfer(
            &mut o,
            &mut r,
            key,
            &format!("from-embedis:{key}"),
            "embedis -> redis",
        );
    }
    // The stream's groups, PELs and consumers crossed over whole.
    for (conn, copy) in [
        (&mut r, "from-embedis:stream"),
        (&mut o, "from-redis:stream"),
    ] {
        for group in ["g1", "g2"] {
            assert_eq!(
                conn.command(&["XPENDING", "stream", group]),
                conn.command(&["XPENDING", copy, group])
            );
            assert_eq!(
                without_idle(&conn.command(&["XPENDING", "stream", group, "-", "+", "10"])),
                without_idle(&conn.command(&["XPENDING", copy, group, "-", "+", "10"]))
            );
        }
        assert_eq!(
            conn.command(&["XINFO", "GROUPS", "stream"]),
            conn.command(&["XINFO", "GROUPS", copy])
        );
    }
}
