//! Behaviour that changed in Redis 7.2 and 7.4 (bits, clients, streams, propagation): each test
//! asks embedis as the newer version and as 7.0, which must keep Redis 7.0.15's answer. The
//! expected replies are those of the real servers (Redis 7.4.1 and 7.0.15).

use crate::support;
use std::net::SocketAddr;
use support::Client;

/// Runs `check` against embedis as each version named.
fn as_versions(versions: &[&str], mut check: impl FnMut(&str, &mut Client, SocketAddr)) {
    for version in versions {
        let server = support::builder_as(version).start().unwrap();
        let mut c = Client::connect(server.addr());
        check(version, &mut c, server.addr());
    }
}

#[test]
fn bitcount_and_bitpos_check_their_arguments_before_the_key_from_7_4() {
    // Redis 7.2.6's bitops.c still looks the key up first (checked in its source).
    as_versions(&["7.0", "7.2", "7.4"], |version, c, _| {
        let new = version == "7.4";
        let syntax = if new {
            "-ERR syntax error\r\n"
        } else {
            ":0\r\n"
        };
        let integer = if new {
            "-ERR value is not an integer or out of range\r\n"
        } else {
            ":0\r\n"
        };
        assert_eq!(c.cmd(&["BITCOUNT", "nokey", "0"]), syntax, "{version}");
        assert_eq!(c.cmd(&["BITCOUNT", "nokey", "0", "1", "bat"]), syntax);
        assert_eq!(c.cmd(&["BITCOUNT", "nokey", "a", "b"]), integer);
        assert_eq!(c.cmd(&["BITPOS", "nokey", "0", "1", "a", "b"]), syntax);
        assert_eq!(c.cmd(&["BITPOS", "nokey", "0", "a"]), integer);
        // Valid arguments on a missing key answer as before.
        assert_eq!(c.cmd(&["BITCOUNT", "nokey", "0", "1", "bit"]), ":0\r\n");
        assert_eq!(c.cmd(&["BITPOS", "nokey", "0", "0", "5"]), ":0\r\n");
        assert_eq!(c.cmd(&["BITPOS", "nokey", "1", "0", "5", "bit"]), ":-1\r\n");
        assert_eq!(c.cmd(&["BITPOS", "nokey", "0"]), ":0\r\n");
        // The range comes before the key's type too.
        c.cmd(&["LPUSH", "list", "a"]);
        let wrongtype = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
        let integer = if new {
            "-ERR value is not an integer or out of range\r\n"
        } else {
            wrongtype
        };
        assert_eq!(c.cmd(&["BITCOUNT", "list", "a", "b"]), integer);
        assert_eq!(c.cmd(&["BITPOS", "list", "0", "a", "b"]), integer);
        assert_eq!(c.cmd(&["BITPOS", "list", "0", "1", "2"]), wrongtype);
    });
}

#[test]
fn client_list_shows_watched_keys_from_7_4() {
    as_versions(&["7.0", "7.2", "7.4"], |version, c, _| {
        c.cmd(&["WATCH", "a", "b", "a"]);
        let line = c.text(&["CLIENT", "INFO"]);
        let shown = line.contains(" multi=-1 watch=2 qbuf=");
        assert_eq!(shown, version == "7.4", "{version}: {line}");
        if version != "7.4" {
            assert!(line.contains(" multi=-1 qbuf="), "{line}");
        }
    });
}

#[test]
fn client_kill_maxage_from_7_4() {
    let server = support::builder_as("7.4")
        .clock(embedis::Clock::manual())
        .start()
        .unwrap();
    let mut old = Client::connect(server.addr());
    assert_eq!(old.cmd(&["PING"]), "+PONG\r\n");
    server.clock().advance(std::time::Duration::from_secs(10));
    let mut young = Client::connect(server.addr());
    for (arg, error) in [
        ("str", "-ERR maxage is not an integer or out of range\r\n"),
        (
            "9999999999999999999",
            "-ERR maxage is not an integer or out of range\r\n",
        ),
        ("-1", "-ERR maxage should be greater than 0\r\n"),
        ("0", "-ERR maxage should be greater than 0\r\n"),
    ] {
        assert_eq!(young.cmd(&["CLIENT", "KILL", "MAXAGE", arg]), error);
    }
    // Only the client connected 10 seconds ago is old enough.
    assert_eq!(
        young.cmd(&["CLIENT", "KILL", "MAXAGE", "5", "SKIPME", "no"]),
        ":1\r\n"
    );
    assert_eq!(old.reply_or_close(), None);
    assert_eq!(young.cmd(&["PING"]), "+PONG\r\n");
    // Redis 7.0 has no MAXAGE filter.
    let server = support::builder().start().unwrap();
    let mut c = Client::connect(server.addr());
    assert_eq!(
        c.cmd(&["CLIENT", "KILL", "MAXAGE", "5"]),
        "-ERR syntax error\r\n"
    );
}

/// The commands of a write stream, each as its arguments joined by spaces.
fn commands(stream: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stream);
    let mut lines = text.split("\r\n");
    let mut out = Vec::new();
    while let Some(header) = lines.next() {
        let Some(n) = header.strip_prefix('*') else {
            continue;
        };
        let n: usize = n.parse().unwrap();
        let args: Vec<&str> = (0..n)
            .map(|_| {
                lines.next();
                lines.next().unwrap()
            })
            .collect();
        // Command names as written in either case: upper-cased here.
        let name = args[0].to_uppercase();
        out.push(
            [&name[..]]
                .into_iter()
                .chain(args[1..].iter().copied())
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    out
}

/// A server as `version` with its write stream tapped, and a client on it.
fn tapped(version: &str) -> (embedis::Server, Client) {
    let server = support::builder_as(version).start().unwrap();
    server.tap_write_stream();
    let c = Client::connect(server.addr());
    (server, c)
}

#[test]
fn xread_plus_reads_the_last_entry_from_7_4() {
    let (_server, mut c) = tapped("7.4");
    for id in ["1-0", "2-0", "3-0"] {
        c.cmd(&["XADD", "s", id, "k", id]);
    }
    assert_eq!(
        c.cmd(&["XREAD", "COUNT", "3", "STREAMS", "s", "nokey", "+", "+"]),
        "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nk\r\n$3\r\n3-0\r\n"
    );
    // The last entry deleted: nothing to read.
    c.cmd(&["XDEL", "s", "3-0"]);
    assert_eq!(c.cmd(&["XREAD", "STREAMS", "s", "+"]), "*-1\r\n");
    c.cmd(&["XGROUP", "CREATE", "e", "g", "$", "MKSTREAM"]);
    assert_eq!(
        c.cmd(&["XREAD", "STREAMS", "e", "+"]),
        "-ERR the stream last element ID is 0-0\r\n"
    );
    assert!(c
        .cmd(&["XREADGROUP", "GROUP", "g", "a", "STREAMS", "e", "+"])
        .starts_with("-ERR The + ID is meaningless in the context of XREADGROUP"));
    // Blocked with `+` on a missing stream: the first entry added is served.
    c.send(&["XREAD", "BLOCK", "0", "STREAMS", "late", "+"]);
    let server = &_server;
    let mut other = Client::connect(server.addr());
    support::wait_blocked(&mut support::connect(server.addr()), 1);
    other.cmd(&["XADD", "late", "5-0", "f", "v"]);
    assert!(c.reply().contains("5-0"));
    // Redis 7.0 has no `+` there.
    let server = support::builder().start().unwrap();
    let mut c = Client::connect(server.addr());
    assert_eq!(
        c.cmd(&["XREAD", "STREAMS", "s", "+"]),
        "-ERR Invalid stream ID specified as stream command argument\r\n"
    );
}

#[test]
fn stream_argument_checks_from_7_2() {
    as_versions(&["7.0", "7.4"], |version, c, _| {
        let new = version != "7.0";
        for id in ["1-1", "1-2", "1-3"] {
            c.cmd(&["XADD", "x", id, "a", "1"]);
        }
        c.cmd(&["XDEL", "x", "1-2", "1-3"]);
        let setid = c.cmd(&["XSETID", "x", "1-2"]);
        if new {
            assert_eq!(
                setid,
                "-ERR The ID specified in XSETID is smaller than current max_deleted_entry_id\r\n"
            );
        } else {
            assert_eq!(setid, "+OK\r\n");
        }
        let unbalanced = c.cmd(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "COUNT",
            "1",
            "STREAMS",
            "x",
        ]);
        let expected = if new {
            "-ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified.\r\n"
        } else {
            "-ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.\r\n"
        };
        assert_eq!(unbalanced, expected);
    });
}

#[test]
fn a_blocked_xreadgroup_reruns_when_its_key_goes_from_7_2() {
    as_versions(&["7.0", "7.4"], |version, c, addr| {
        let new = version != "7.0";
        let addr_probe = |c: &mut Client| {
            let info = c.text(&["INFO", "clients"]);
            let n = |name: &str| support::field(&info, name);
            (n("total_blocking_keys"), n("total_blocking_keys_on_nokey"))
        };
        let mut reader = Client::connect(addr);
        let mut lister = Client::connect(addr);
        // A list reader first in the key's queue: the group reader behind it is still woken.
        lister.send(&["BLPOP", "s2", "0"]);
        support::wait_blocked(&mut support::connect(addr), 1);
        c.cmd(&["XGROUP", "CREATE", "s2", "g", "$", "MKSTREAM"]);
        for (change, error_new) in [
            (
                vec!["DEL", "s2"],
                "-NOGROUP No such key 's2' or consumer group 'g'",
            ),
            (vec!["SET", "s2", "x"], "-WRONGTYPE"),
        ] {
            c.cmd(&["DEL", "s2"]);
            c.cmd(&["XGROUP", "CREATE", "s2", "g", "$", "MKSTREAM"]);
            reader.send(&[
                "XREADGROUP",
                "GROUP",
                "g",
                "a",
                "BLOCK",
                "0",
                "STREAMS",
                "s2",
                ">",
            ]);
            support::wait_blocked(&mut support::connect(addr), 2);
            if new {
                assert_eq!(addr_probe(c), ("1".into(), "1".into()));
            } else {
                assert_eq!(addr_probe(c), (String::new(), String::new()));
            }
            c.cmd(&change.iter().map(|s| &**s).collect::<Vec<_>>());
            let reply = reader.reply();
            let expected = if new {
                error_new
            } else {
                "-UNBLOCKED the stream key no longer exists"
            };
            assert!(reply.starts_with(expected), "{version}: {reply}");
        }
        if new {
            assert_eq!(addr_probe(c), ("1".into(), "0".into()));
        }
    });
}

#[test]
fn consumers_active_time_from_7_2() {
    let server = support::builder_as("7.4")
        .clock(embedis::Clock::manual())
        .start()
        .unwrap();
    let mut c = Client::connect(server.addr());
    c.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"]);
    server
        .clock()
        .advance(std::time::Duration::from_millis(100));
    let consumers = c.cmd(&["XINFO", "CONSUMERS", "s", "g"]);
    assert!(
        consumers.ends_with("$4\r\nidle\r\n:100\r\n$8\r\ninactive\r\n:-1\r\n"),
        "{consumers}"
    );
    c.cmd(&["XADD", "s", "1-0", "f", "v"]);
    c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"]);
    server.clock().advance(std::time::Duration::from_millis(30));
    // A history read is seen, not active; and changes nothing worth saving.
    let dirty = |c: &mut Client| {
        support::field(
            &c.text(&["INFO", "persistence"]),
            "rdb_changes_since_last_save",
        )
    };
    let before = dirty(&mut c);
    c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"]);
    assert_eq!(dirty(&mut c), before);
    let consumers = c.cmd(&["XINFO", "CONSUMERS", "s", "g"]);
    assert!(
        consumers.ends_with("$4\r\nidle\r\n:0\r\n$8\r\ninactive\r\n:30\r\n"),
        "{consumers}"
    );
    let full = c.cmd(&["XINFO", "STREAM", "s", "FULL"]);
    assert!(full.contains("$11\r\nactive-time\r\n"), "{full}");
    // A payload of RDB version 11 (Redis 7.2) restores as 7.4; its type-19 consumers' active
    // time is their seen time.
    // Redis 7.2's layout of a stream dumped by 7.0 (type 19, no active times) in RDB 11.
    let old = support::builder().start().unwrap();
    let mut seven = Client::connect(old.addr());
    seven.cmd(&["XADD", "s", "1-0", "f", "v"]);
    seven.cmd(&["XGROUP", "CREATE", "s", "g", "0"]);
    seven.cmd(&["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"]);
    let payload = seven.raw(&["DUMP", "s"]);
    let body = &payload[payload.iter().position(|&b| b == b'\n').unwrap() + 1..payload.len() - 2];
    let mut v11 = body[..body.len() - 10].to_vec();
    v11.extend_from_slice(&11u16.to_le_bytes());
    let crc = crc64(&v11);
    v11.extend_from_slice(&crc.to_le_bytes());
    let mut restore = b"*4\r\n$7\r\nRESTORE\r\n$2\r\nr2\r\n$1\r\n0\r\n".to_vec();
    restore.extend_from_slice(format!("${}\r\n", v11.len()).as_bytes());
    restore.extend_from_slice(&v11);
    restore.extend_from_slice(b"\r\n");
    c.send_raw(&restore);
    assert_eq!(c.reply(), "+OK\r\n");
    let full = c.cmd(&["XINFO", "STREAM", "r2", "FULL"]);
    let seen = full
        .split("seen-time\r\n:")
        .nth(1)
        .unwrap()
        .split("\r\n")
        .next();
    let active = full
        .split("active-time\r\n:")
        .nth(1)
        .unwrap()
        .split("\r\n")
        .next();
    assert_eq!(seen, active);
    // Redis 7.0 refuses it, and shows no active time.
    let server = support::builder().start().unwrap();
    let mut c = Client::connect(server.addr());
    c.send_raw(&restore);
    assert_eq!(
        c.reply(),
        "-ERR DUMP payload version or checksum are wrong\r\n"
    );
    c.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"]);
    assert!(!c
        .cmd(&["XINFO", "CONSUMERS", "s", "g"])
        .contains("inactive"));
}

/// Redis's CRC-64 (Jones, reflected), as DUMP payloads end with.
fn crc64(bytes: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in bytes {
        crc ^= b as u64;
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x95ac_9329_ac4b_c9b5
            } else {
                crc >> 1
            };
        }
    }
    crc
}

#[test]
fn propagation_changes_of_7_2() {
    for version in ["7.0", "7.4"] {
        let new = version != "7.0";
        let (server, mut c) = tapped(version);
        c.cmd(&["SELECT", "9"]);
        c.cmd(&["MULTI"]);
        c.cmd(&["SET", "a", "1"]);
        c.cmd(&["SET", "b", "2"]);
        c.cmd(&["EXEC"]);
        c.cmd(&["SET", "p", "v", "pxat", "99999999999999"]);
        c.cmd(&["XADD", "s", "1-0", "f", "v"]);
        c.cmd(&["XGROUP", "CREATE", "s", "g", "0"]);
        c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"]);
        let got = commands(&server.take_write_stream());
        let mut expected = if new {
            vec!["MULTI", "SELECT 9", "SET a 1", "SET b 2", "EXEC"]
        } else {
            vec!["SELECT 9", "MULTI", "SET a 1", "SET b 2", "EXEC"]
        };
        expected.push(if new {
            "SET p v pxat 99999999999999"
        } else {
            "SET p v PXAT 99999999999999"
        });
        expected.extend(["XADD s 1-0 f v", "XGROUP CREATE s g 0"]);
        let got: Vec<String> = got
            .into_iter()
            .map(|line| match line.find(" TIME ") {
                Some(at) if line.starts_with("XCLAIM") => line[..at].to_string(),
                _ => line,
            })
            .collect();
        let claim = "XCLAIM s g alice 0 1-0";
        if new {
            expected.extend(["MULTI", claim, "XGROUP SETID s g 1-0 ENTRIESREAD 1", "EXEC"]);
        } else {
            expected.push(claim);
        }
        assert_eq!(got, expected, "{version}");
    }
}

#[test]
fn restore_of_an_expired_key_propagates_unlink_when_server_deletions_are_lazy_from_7_2() {
    for version in ["7.0", "7.4"] {
        let (server, mut c) = tapped(version);
        c.cmd(&["SET", "k", "v"]);
        c.cmd(&["SET", "old", "x"]);
        let payload = c.raw(&["DUMP", "k"]);
        let body =
            &payload[payload.iter().position(|&b| b == b'\n').unwrap() + 1..payload.len() - 2];
        assert_eq!(
            c.cmd(&["CONFIG", "SET", "lazyfree-lazy-server-del", "yes"]),
            "+OK\r\n"
        );
        server.take_write_stream();
        let mut restore = b"*6\r\n$7\r\nRESTORE\r\n$3\r\nold\r\n$1\r\n1\r\n".to_vec();
        restore.extend_from_slice(format!("${}\r\n", body.len()).as_bytes());
        restore.extend_from_slice(body);
        restore.extend_from_slice(b"\r\n$7\r\nREPLACE\r\n$6\r\nABSTTL\r\n");
        c.send_raw(&restore);
        assert_eq!(c.reply(), "+OK\r\n");
        let expected = if version == "7.0" {
            "DEL old"
        } else {
            "UNLINK old"
        };
        assert_eq!(commands(&server.take_write_stream()), vec![expected]);
    }
}

#[test]
fn dump_and_rdb_files_are_of_the_version_s_rdb_version() {
    for (version, rdb_version, stream_type) in
        [("7.0", 10u16, 19u8), ("7.2", 11, 21), ("7.4", 12, 21)]
    {
        let dir = support::temp_dir(&format!("rdb-version-{version}"));
        let server = support::builder_as(version)
            .config("dir", &dir.display().to_string())
            .unwrap()
            .start()
            .unwrap();
        let mut c = Client::connect(server.addr());
        c.cmd(&["XADD", "s", "1-1", "f", "v"]);
        c.cmd(&["XGROUP", "CREATE", "s", "g", "0"]);
        let reply = c.raw(&["DUMP", "s"]);
        let payload = &reply[reply.iter().position(|&b| b == b'\n').unwrap() + 1..reply.len() - 2];
        assert_eq!(payload[0], stream_type, "{version}");
        let footer = &payload[payload.len() - 10..payload.len() - 8];
        assert_eq!(footer, rdb_version.to_le_bytes(), "{version}");
        assert_eq!(c.cmd(&["SAVE"]), "+OK\r\n");
        let file = std::fs::read(dir.join("dump.rdb")).unwrap();
        assert_eq!(&file[..9], format!("REDIS{rdb_version:04}").as_bytes());
        // Redis 7.4.1's DUMP of a two-member set (RDB_TYPE_SET_LISTPACK, RDB 12).
        let set: &[u8] =
            b"\x14\r\r\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff\x0c\x00\xa8E\x83\x07N\x16\xa1\x94";
        let mut restore = b"*4\r\n$7\r\nRESTORE\r\n$3\r\nset\r\n$1\r\n0\r\n".to_vec();
        restore.extend_from_slice(format!("${}\r\n", set.len()).as_bytes());
        restore.extend_from_slice(set);
        restore.extend_from_slice(b"\r\n");
        c.send_raw(&restore);
        let expected = if rdb_version >= 12 {
            "+OK\r\n"
        } else {
            "-ERR DUMP payload version or checksum are wrong\r\n"
        };
        assert_eq!(c.reply(), expected, "{version}");
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `rdb_changes_since_last_save`, what save points count.
fn changes(c: &mut Client) -> i64 {
    let info = c.cmd(&["INFO", "persistence"]);
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
        .expect("INFO persistence has the field");
    line.trim().parse().unwrap()
}

/// The changes each command counts, as Redis 7.0.15 and 7.4.1 both count them: the elements
/// removed, not one more for the key an emptied collection loses; one for a move, whether or
/// not it creates its destination; a change per member when SPOP takes the whole set.
#[test]
fn commands_that_empty_or_create_keys_count_changes_as_redis_does() {
    let cases: &[(&[&str], &[&str], i64)] = &[
        (&["SADD", "s", "a"], &["SREM", "s", "a"], 1),
        (&["ZADD", "z", "1", "a"], &["ZREM", "z", "a"], 1),
        (
            &["ZADD", "z", "1", "a", "2", "b"],
            &["ZPOPMIN", "z", "5"],
            2,
        ),
        (&["RPUSH", "l", "a"], &["LREM", "l", "0", "a"], 1),
        (&["RPUSH", "l", "a"], &["LTRIM", "l", "1", "0"], 1),
        (&["RPUSH", "l", "a", "b"], &["RPOP", "l", "5"], 2),
        (&["RPUSH", "l", "a"], &["LMPOP", "1", "l", "LEFT"], 1),
        (&["HSET", "h", "f", "v"], &["HDEL", "h", "f"], 1),
        (
            &["RPUSH", "l", "a", "b"],
            &["LMOVE", "l", "new", "LEFT", "LEFT"],
            1,
        ),
        (&["RPUSH", "l", "a", "b"], &["RPOPLPUSH", "l", "new2"], 1),
        (&["SADD", "s", "a", "b", "c"], &["SPOP", "s", "5"], 3),
        (&["SADD", "s", "a", "b"], &["SMOVE", "s", "new3", "a"], 2),
    ];
    as_versions(&["7.0", "7.4"], |version, c, _| {
        for (setup, command, expected) in cases {
            c.cmd(setup);
            let before = changes(c);
            c.cmd(command);
            assert_eq!(changes(c) - before, *expected, "{command:?} as {version}");
        }
    });
}

/// From 7.2 a blocked pop that is served counts its change, as the command run directly does
/// (Redis 7.4.1's unit/type/list "BLPOP/BLMOVE should increase dirty": the LPUSH and the pop).
#[test]
fn a_served_blocked_pop_counts_its_change_from_7_2() {
    as_versions(&["7.4"], |_, c, addr| {
        let mut blocked = Client::connect(addr);
        for (command, reply) in [
            (&["BLPOP", "lst", "0"][..], "*2\r\n$3\r\nlst\r\n$1\r\na\r\n"),
            (
                &["BLMOVE", "lst", "lst1", "LEFT", "LEFT", "0"],
                "$1\r\na\r\n",
            ),
        ] {
            let before = changes(c);
            blocked.send(command);
            let mut probe = support::Conn::connect(addr).unwrap();
            support::wait_blocked(&mut probe, 1);
            c.cmd(&["LPUSH", "lst", "a"]);
            assert_eq!(blocked.reply(), reply);
            assert_eq!(changes(c) - before, 2, "{command:?}");
        }
    });
}

/// From 7.2 a client's messages to itself (it publishes to a channel it subscribed to) come
/// after its command's whole reply — after EXEC's and the script's, not amid them; 7.0 writes
/// them before the reply of the command that published. Frames as Redis 7.4.1 and 7.0.15 send
/// them (RESP3).
#[test]
fn messages_to_self_follow_the_whole_reply_from_7_2() {
    let message = ">3\r\n$7\r\nmessage\r\n$3\r\nfoo\r\n$3\r\nbar\r\n";
    as_versions(&["7.0", "7.4"], |version, c, _| {
        let new = version == "7.4";
        c.cmd(&["HELLO", "3"]);
        c.cmd(&["SUBSCRIBE", "foo"]);
        c.send(&["PUBLISH", "foo", "bar"]);
        let order = [c.reply(), c.reply()];
        let expected = [":1\r\n", message];
        if new {
            assert_eq!(order, expected, "{version}");
        } else {
            assert_eq!(order, [expected[1], expected[0]], "{version}");
        }
        c.cmd(&["MULTI"]);
        c.cmd(&["PING", "abc"]);
        c.cmd(&["PUBLISH", "foo", "bar"]);
        c.send(&["EXEC"]);
        let exec = "*2\r\n$3\r\nabc\r\n:1\r\n";
        if new {
            assert_eq!([c.reply(), c.reply()], [exec, message]);
        } else {
            // The message sits inside EXEC's array, before PUBLISH's `:1`.
            let whole = format!("*2\r\n$3\r\nabc\r\n{message}:1\r\n");
            let mut got = Vec::new();
            while got.len() < whole.len() {
                got.extend(c.raw_reply());
            }
            assert_eq!(String::from_utf8_lossy(&got), whole);
        }
        c.send(&["EVAL", "redis.call('publish','foo','bar') return 7", "0"]);
        if new {
            assert_eq!([c.reply(), c.reply()], [":7\r\n", message]);
        } else {
            assert_eq!([c.reply(), c.reply()], [message, ":7\r\n"]);
        }
    });
}

/// SLOWLOG's redactions: `masteruser` is a secret in every version (Redis 7.0.15's config.c
/// flags it), the TLS key passwords and ACL DELUSER's and GETUSER's user names from 7.4.
#[test]
fn slowlog_redacts_the_arguments_of_the_version() {
    as_versions(&["7.0", "7.4"], |version, c, _| {
        let new = version == "7.4";
        c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        c.cmd(&["SLOWLOG", "RESET"]);
        c.cmd(&["CONFIG", "SET", "masteruser", ""]);
        c.cmd(&["CONFIG", "SET", "tls-key-file-pass", ""]);
        c.cmd(&["ACL", "SETUSER", "u1", "+get"]);
        c.cmd(&["ACL", "GETUSER", "u1"]);
        c.cmd(&["ACL", "DELUSER", "u1", "nobody"]);
        c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
        // The log keeps the words as sent; the comparison ignores their case.
        let log = c.cmd(&["SLOWLOG", "GET", "-1"]).to_lowercase();
        let shown = |args: &[&str]| {
            let mut frame = format!("*{}\r\n", args.len());
            for a in args {
                frame.push_str(&format!("${}\r\n{a}\r\n", a.len()));
            }
            log.contains(&frame)
        };
        let r = "(redacted)";
        assert!(
            shown(&["config", "set", "masteruser", r]),
            "{version}: {log}"
        );
        assert!(shown(&["acl", "setuser", r, r]), "{version}: {log}");
        let tls = if new { r } else { "" };
        assert!(
            shown(&["config", "set", "tls-key-file-pass", tls]),
            "{version}: {log}"
        );
        let user = if new { r } else { "u1" };
        assert!(shown(&["acl", "getuser", user]), "{version}: {log}");
        let nobody = if new { r } else { "nobody" };
        assert!(shown(&["acl", "deluser", user, nobody]), "{version}: {log}");
    });
}
