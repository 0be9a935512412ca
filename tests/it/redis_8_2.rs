//! What Redis 8.2 added, beyond what tests/diff8 compares line by line: the new BITOP
//! operations and stream options exist only from `compat-version 8.2` (7.4 answers as 7.4.1
//! did), and a seeded random comparison with Redis 8.2.3 (`$EMBEDIS_REDIS8_SERVER`) of each
//! family: random commands over a few keys, reply for reply.

use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};

use crate::support;
use support::{show, Client, Conn, RedisServer};

/// Sends `count` random command lines from `line` to Redis 8.2 and to embedis as 8.2, running
/// `reset` on both every 200 lines, and fails listing the replies that differ. Skipped loudly
/// without a Redis 8.2, unless EMBEDIS_REQUIRE_REDIS=1.
fn compare_random(
    name: &str,
    seed: u64,
    count: usize,
    reset: &[&[&str]],
    mut line: impl FnMut(&mut StdRng) -> Vec<Vec<u8>>,
) {
    let Some(redis) = RedisServer::start_redis8(name, &[]) else {
        return;
    };
    let ours = support::builder_as("8.2").start().unwrap();
    let mut theirs_conn = Conn::connect(redis.addr()).unwrap();
    let mut ours_conn = Conn::connect(ours.addr()).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut failures = Vec::new();
    for i in 0..count {
        if i % 200 == 0 {
            for conn in [&mut theirs_conn, &mut ours_conn] {
                conn.command(&["FLUSHALL"]);
                for args in reset {
                    conn.command(args);
                }
            }
        }
        let args = line(&mut rng);
        let expected = theirs_conn.command(&args);
        let got = ours_conn.command(&args);
        if expected != got {
            let shown: Vec<_> = args.iter().map(|a| show(a)).collect();
            failures.push(format!(
                "{}\n    redis:   {}\n    embedis: {}",
                shown.join(" "),
                show(&expected),
                show(&got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} replies differ from Redis 8.2:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

fn pick<'a>(rng: &mut StdRng, words: &[&'a str]) -> &'a str {
    words.choose(rng).unwrap()
}

#[test]
fn bitop_s_new_operations_exist_from_8_2() {
    let as_7_4 = support::builder_as("7.4").start().unwrap();
    let as_8_2 = support::builder_as("8.2").start().unwrap();
    let mut old = Client::connect(as_7_4.addr());
    let mut new = Client::connect(as_8_2.addr());
    for c in [&mut old, &mut new] {
        c.cmd(&["SET", "a", "\u{f}"]);
        c.cmd(&["SET", "b", "\u{3}"]);
    }
    for op in ["DIFF", "DIFF1", "ANDOR", "ONE"] {
        let line = ["BITOP", op, "r", "a", "b"];
        assert_eq!(old.cmd(&line), "-ERR syntax error\r\n", "{op} as 7.4");
        assert_eq!(new.cmd(&line), ":1\r\n", "{op} as 8.2");
    }
    assert_eq!(new.cmd(&["BITOP", "DIFF", "r", "a", "b"]), ":1\r\n");
    assert_eq!(new.cmd(&["GET", "r"]), "$1\r\n\u{c}\r\n");
    assert_eq!(
        old.cmd(&["BITOP", "DIFF", "r", "a"]),
        "-ERR syntax error\r\n",
        "7.4 knows no DIFF, so no source count either"
    );
}

/// Random BITOP lines (every operation, sources of random bytes and lengths, missing keys, a
/// list) against Redis 8.2.
#[test]
fn random_bitops_answer_as_redis_8_does() {
    let keys = ["k1", "k2", "k3", "k4", "nokey", "list"];
    let ops = [
        "AND", "OR", "XOR", "NOT", "DIFF", "DIFF1", "ANDOR", "ONE", "diff", "One", "NOPE",
    ];
    compare_random(
        "bitop random",
        82,
        3000,
        &[&["LPUSH", "list", "x"]],
        |rng| {
            let mut args: Vec<Vec<u8>> = Vec::new();
            match rng.gen_range(0..10) {
                0..=2 => {
                    // A string of random bytes, sometimes longer than the word-at-a-time step.
                    let len = *[0usize, 1, 3, 8, 31, 32, 33, 70].choose(rng).unwrap();
                    let value: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                    let key = pick(rng, &keys[..4]);
                    args.extend([b"SET".to_vec(), key.into(), value]);
                }
                3 => args.extend([b"GET".to_vec(), pick(rng, &keys[..4]).into()]),
                _ => {
                    args.extend([b"BITOP".to_vec(), pick(rng, &ops).into()]);
                    args.push(pick(rng, &["k1", "dest", "list"]).into());
                    for _ in 0..rng.gen_range(0..=4) {
                        args.push(pick(rng, &keys).into());
                    }
                }
            }
            args
        },
    );
}

#[test]
fn stream_reference_options_exist_from_8_2() {
    let as_7_4 = support::builder_as("7.4").start().unwrap();
    let mut c = Client::connect(as_7_4.addr());
    c.cmd(&["XADD", "s", "1-0", "a", "1"]);
    assert_eq!(
        c.cmd(&["XDELEX", "s", "IDS", "1", "1-0"]),
        "-ERR unknown command 'XDELEX', with args beginning with: 's' 'IDS' '1' '1-0' \r\n"
    );
    assert!(c
        .cmd(&["XACKDEL", "s", "g", "IDS", "1", "1-0"])
        .starts_with("-ERR unknown command"));
    assert_eq!(
        c.cmd(&["XADD", "s", "ACKED", "2-0", "a", "1"]),
        "-ERR Invalid stream ID specified as stream command argument\r\n"
    );
    assert_eq!(
        c.cmd(&["XTRIM", "s", "MAXLEN", "0", "DELREF"]),
        "-ERR syntax error\r\n"
    );
    let as_8_2 = support::builder_as("8.2").start().unwrap();
    let mut c = Client::connect(as_8_2.addr());
    c.cmd(&["XADD", "s", "1-0", "a", "1"]);
    assert_eq!(c.cmd(&["XTRIM", "s", "MAXLEN", "0", "DELREF"]), ":1\r\n");
}

/// Random stream commands over one stream with two groups, nodes of 4 entries: XADD (with
/// trimming and KEEPREF / DELREF / ACKED), XTRIM, XDEL, XDELEX, XACKDEL, XACK, XREADGROUP, and
/// what shows the result (XRANGE, XPENDING's summary, XINFO STREAM), against Redis
/// 8.2. IDs are explicit, so every reply is deterministic.
#[test]
fn random_stream_deletions_answer_as_redis_8_does() {
    let refs = ["KEEPREF", "DELREF", "ACKED", "acked", ""];
    let mut top = 0u64;
    compare_random(
        "stream random",
        8,
        4000,
        &[
            &["CONFIG", "SET", "stream-node-max-entries", "4"],
            &["XADD", "s", "1-0", "a", "1"],
            &["XGROUP", "CREATE", "s", "g", "0"],
            &["XGROUP", "CREATE", "s", "h", "0"],
            &["SET", "str", "x"],
        ],
        |rng| {
            let id = |rng: &mut StdRng| format!("{}-0", rng.gen_range(1..60));
            let ids = |rng: &mut StdRng, args: &mut Vec<String>| {
                let n = rng.gen_range(1..=4);
                let claimed = if rng.gen_bool(0.9) { n } else { n + 1 };
                args.extend(["IDS".into(), claimed.to_string()]);
                for _ in 0..n {
                    args.push(if rng.gen_bool(0.03) {
                        "bad".into()
                    } else {
                        id(rng)
                    });
                }
            };
            let key = pick(rng, &["s", "s", "s", "s", "nokey", "str"]).to_string();
            let option = pick(rng, &refs).to_string();
            let mut args: Vec<String> = Vec::new();
            match rng.gen_range(0..14) {
                0..=2 => {
                    top = if rng.gen_bool(0.9) {
                        top % 60 + 1
                    } else {
                        rng.gen_range(1..60)
                    };
                    args.extend(["XADD".into(), key, option]);
                    if rng.gen_bool(0.4) {
                        args.push(pick(rng, &["MAXLEN", "MINID"]).into());
                        args.push(pick(rng, &["~", "=", ""]).into());
                        args.push(if args[3] == "MINID" {
                            id(rng)
                        } else {
                            rng.gen_range(0..12).to_string()
                        });
                    }
                    args.extend([format!("{top}-0"), "f".into(), "v".into()]);
                }
                3 => {
                    args.extend(["XTRIM".into(), key, option]);
                    args.push(pick(rng, &["MAXLEN", "MINID"]).into());
                    args.push(pick(rng, &["~", "=", ""]).into());
                    args.push(if args[3] == "MINID" {
                        id(rng)
                    } else {
                        rng.gen_range(0..12).to_string()
                    });
                    if rng.gen_bool(0.2) {
                        args.extend(["LIMIT".into(), rng.gen_range(0..10).to_string()]);
                    }
                }
                4 | 5 => {
                    args.extend(["XDELEX".into(), key, option]);
                    ids(rng, &mut args);
                }
                6 | 7 => {
                    args.extend([
                        "XACKDEL".into(),
                        key,
                        pick(rng, &["g", "h", "nogroup"]).into(),
                        option,
                    ]);
                    ids(rng, &mut args);
                }
                8 => args.extend([
                    "XREADGROUP".into(),
                    "GROUP".into(),
                    pick(rng, &["g", "h"]).into(),
                    "c".into(),
                    "COUNT".into(),
                    rng.gen_range(1..5).to_string(),
                    "STREAMS".into(),
                    key,
                    ">".into(),
                ]),
                9 => args.extend(["XACK".into(), key, pick(rng, &["g", "h"]).into(), id(rng)]),
                10 => args.extend(["XDEL".into(), key, id(rng)]),
                11 => args.extend(["XPENDING".into(), key, pick(rng, &["g", "h"]).into()]),
                // Not XINFO GROUPS: its entries-read and lag follow Redis 7.x's rules in embedis
                // and differ from 8.2's after deletions (with or without the 8.2 commands).
                12 => args.extend(["XINFO".into(), "STREAM".into(), key]),
                _ => args.extend(["XRANGE".into(), key, "-".into(), "+".into()]),
            }
            args.retain(|a| !a.is_empty());
            args.into_iter().map(String::into_bytes).collect()
        },
    );
}
