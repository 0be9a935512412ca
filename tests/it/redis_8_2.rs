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
