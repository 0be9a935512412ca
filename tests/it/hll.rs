//! HyperLogLog against redis-server 7.0, byte for byte: the same streams of elements (text and
//! binary, with duplicates) go to both servers, and after every batch of checks the HLL strings
//! (GET), their counts (PFCOUNT, which also stores the cached cardinality), merges (PFMERGE) and
//! union counts (PFCOUNT of several keys) must be identical. Streams reach 0, 1, 100, 3,000,
//! 20,000 and 1,000,000 distinct elements, crossing the sparse → dense promotion. Finally HLL
//! strings are carried from one server to the other with GET/SET and keep working there.
//!
//! Without redis-server the test is skipped (it fails under `EMBEDIS_REQUIRE_REDIS=1`, as in CI).

use crate::support;

use support::Conn;

/// A deterministic xorshift stream, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Element number `i` in one of several shapes: plain text, 8 binary bytes, text with NUL and
/// CRLF inside, and (rarely) the empty string.
fn element(i: u64) -> Vec<u8> {
    match i % 4 {
        0 => format!("user:{i}").into_bytes(),
        1 => (i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .to_le_bytes()
            .to_vec(),
        2 => format!("\0{i}\r\n").into_bytes(),
        _ if i == 3 => Vec::new(),
        _ => format!("{i}").into_bytes(),
    }
}

/// Both servers, driven in lockstep; every reply must be the same bytes.
struct Pair {
    redis: Conn,
    ours: Conn,
}

impl Pair {
    /// Sends `commands` pipelined to both and asserts equal replies; returns them.
    #[track_caller]
    fn same(&mut self, commands: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
        let mut wire = Vec::new();
        for c in commands {
            let args: Vec<&[u8]> = c.iter().map(|a| a.as_slice()).collect();
            wire.extend_from_slice(&Conn::encode(&args));
        }
        self.redis.send_raw(&wire);
        self.ours.send_raw(&wire);
        let mut replies = Vec::new();
        for c in commands {
            let theirs = self.redis.read_reply().expect("redis reply").0;
            let mine = self.ours.read_reply().expect("embedis reply").0;
            assert!(
                theirs == mine,
                "{} differs:\n  redis:   {}\n  embedis: {}",
                String::from_utf8_lossy(&c[0]),
                support::show(&theirs[..theirs.len().min(300)]),
                support::show(&mine[..mine.len().min(300)])
            );
            replies.push(mine);
        }
        replies
    }

    #[track_caller]
    fn one(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let command: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        self.same(&[command]).remove(0)
    }
}

/// Feeds `distinct` distinct elements (plus a quarter as many repeats) into `key`, checking GET,
/// PFCOUNT and the encoding about ten times along the way and at the end.
fn stream(pair: &mut Pair, rng: &mut Rng, key: &[u8], distinct: u64, offset: u64) {
    let batch = 500;
    let checks = 10u64;
    let mut sent = 0u64;
    let mut next_check = distinct / checks;
    if distinct == 0 {
        pair.one(&[b"PFADD", key]);
    }
    while sent < distinct {
        let mut commands = Vec::new();
        // A round of up to 20 PFADDs between checks.
        for _ in 0..20 {
            if sent >= distinct {
                break;
            }
            let mut command = vec![b"PFADD".to_vec(), key.to_vec()];
            for _ in 0..batch {
                if sent >= distinct {
                    break;
                }
                if sent > 0 && rng.next().is_multiple_of(5) {
                    command.push(element(offset + rng.next() % sent));
                } else {
                    command.push(element(offset + sent));
                    sent += 1;
                }
            }
            commands.push(command);
        }
        pair.same(&commands);
        if sent >= next_check || sent >= distinct {
            pair.one(&[b"GET", key]);
            pair.one(&[b"PFCOUNT", key]);
            pair.one(&[b"GET", key]);
            pair.one(&[b"PFDEBUG", b"ENCODING", key]);
            next_check = sent + distinct / checks;
        }
    }
    pair.one(&[b"GET", key]);
    pair.one(&[b"PFCOUNT", key]);
}

fn count_of(reply: &[u8]) -> i64 {
    std::str::from_utf8(&reply[1..reply.len() - 2])
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn streams_merges_and_counts_match_redis_byte_for_byte() {
    let Some(redis) =
        support::RedisServer::start("hll byte-identity", &["--enable-debug-command", "yes"])
    else {
        return;
    };
    let server = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut pair = Pair {
        redis: Conn::connect(redis.addr()).unwrap(),
        ours: Conn::connect(server.addr()).unwrap(),
    };
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let sizes = [0u64, 1, 100, 3_000, 20_000, 1_000_000];
    let mut keys = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let key = format!("visitors:{n}").into_bytes();
        // Overlapping element ranges, so unions are not plain sums.
        stream(&mut pair, &mut rng, &key, n, i as u64 * 50);
        keys.push(key);
    }
    // The counts are estimates within a few standard errors of the truth.
    for (key, &n) in keys.iter().zip(&sizes) {
        let count = count_of(&pair.one(&[b"PFCOUNT", key])) as f64;
        let error = (count - n as f64).abs();
        assert!(error <= 0.05 * n as f64 + 1.0, "{n}: {count}");
    }

    // Unions without writes, of every pair and of all keys.
    for a in &keys {
        for b in &keys {
            pair.one(&[b"PFCOUNT", a, b]);
        }
    }
    let mut all: Vec<&[u8]> = vec![b"PFCOUNT"];
    all.extend(keys.iter().map(|k| k.as_slice()));
    pair.one(&all);
    for key in &keys {
        pair.one(&[b"GET", key]);
    }

    // Merges: into a new key (sparse sources stay sparse; a dense one makes it dense), into a
    // source, several at once, then more elements on top.
    pair.one(&[b"PFMERGE", b"m:small", &keys[1], &keys[2], &keys[3]]);
    pair.one(&[b"GET", b"m:small"]);
    pair.one(&[b"PFMERGE", b"m:big", &keys[3], &keys[4]]);
    pair.one(&[b"GET", b"m:big"]);
    pair.one(&[b"PFMERGE", &keys[2], &keys[3]]);
    pair.one(&[b"GET", &keys[2]]);
    let mut merge_all: Vec<&[u8]> = vec![b"PFMERGE", b"m:all"];
    merge_all.extend(keys.iter().map(|k| k.as_slice()));
    pair.one(&merge_all);
    pair.one(&[b"GET", b"m:all"]);
    for key in [b"m:small".as_slice(), b"m:big", b"m:all", &keys[2]] {
        pair.one(&[b"PFCOUNT", key]);
        pair.one(&[b"GET", key]);
        pair.one(&[b"PFDEBUG", b"ENCODING", key]);
    }
    stream(&mut pair, &mut rng, b"m:small", 2_000, 7_777_777);

    // Carried across: Redis's bytes SET into embedis, ours into Redis, then used on both.
    for (i, key) in keys.iter().enumerate() {
        let theirs = pair.redis.command(&[b"GET".as_slice(), key]);
        let value = bulk_payload(&theirs);
        let copy = format!("copy:{i}").into_bytes();
        pair.one(&[b"SET", &copy, &value]);
        pair.one(&[b"PFCOUNT", &copy]);
        pair.one(&[b"PFADD", &copy, b"one more", b"and another"]);
        pair.one(&[b"GET", &copy]);
    }
    let ours = pair.ours.command(&[b"GET".as_slice(), b"m:all"]);
    let value = bulk_payload(&ours);
    pair.one(&[b"SET", b"copy:all", &value]);
    pair.one(&[b"PFCOUNT", b"copy:all", b"m:all"]);
    pair.one(&[b"PFMERGE", b"copy:all", &keys[1]]);
    pair.one(&[b"GET", b"copy:all"]);
}

fn bulk_payload(reply: &[u8]) -> Vec<u8> {
    let header_end = reply.iter().position(|&b| b == b'\n').unwrap() + 1;
    reply[header_end..reply.len() - 2].to_vec()
}
