//! Hash field expiration seen from clients, on a server whose clock the test controls.
//!
//! As in tests/it/expiry.rs, every server runs on a frozen clock that only `advance` moves, so field
//! deadlines are exact to the millisecond: a field whose deadline is `t` is there at `t` and gone
//! at `t + 1 ms`. Lazy expiry is watched with active expiry switched off (DEBUG
//! SET-ACTIVE-EXPIRE 0); the active cycle, which moving the clock wakes at once, is polled for
//! briefly (wall clock). The Redis facts relied on (HLEN counts stored expired fields, HGETALL
//! hides them, a read of the field deletes it, one `hexpired` per hash from the active cycle, a
//! WATCHed hash losing a field breaks the transaction) were checked on Redis 8.2.3; the replies
//! themselves are compared byte for byte in tests/diff8/.

use crate::support;
use support::redis_connection;

use redis::Value;
use std::time::{Duration, UNIX_EPOCH};
use support::{advance_ms, eventually};

/// 2030-01-01T00:00:00Z, a whole second.
const START_S: u64 = 1_893_456_000;
const START_MS: i64 = START_S as i64 * 1000;

fn server() -> embedis::Server {
    support::builder_as("8.2")
        .clock(embedis::Clock::frozen_at(
            UNIX_EPOCH + Duration::from_secs(START_S),
        ))
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap()
}

/// Runs a command given as words.
fn run<T: redis::FromRedisValue>(con: &mut redis::Connection, line: &str) -> T {
    let mut words = line.split_whitespace();
    let mut cmd = redis::cmd(words.next().unwrap());
    for w in words {
        cmd.arg(w);
    }
    cmd.query(con).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn int(con: &mut redis::Connection, line: &str) -> i64 {
    run(con, line)
}

fn ints(con: &mut redis::Connection, line: &str) -> Vec<i64> {
    run(con, line)
}

fn strings(con: &mut redis::Connection, line: &str) -> Vec<Option<String>> {
    run(con, line)
}

#[test]
fn a_field_is_there_at_its_deadline_and_gone_one_ms_later_for_every_reader() {
    let server = server();
    let mut con = redis_connection(&server);
    run::<()>(&mut con, "DEBUG SET-ACTIVE-EXPIRE 0");
    run::<()>(&mut con, "HSET h a 1 b 2 c 3");
    assert_eq!(ints(&mut con, "HPEXPIRE h 100 FIELDS 2 a b"), [1, 1]);
    advance_ms(&server, 100);
    assert_eq!(
        strings(&mut con, "HMGET h a b c"),
        [Some("1".into()), Some("2".into()), Some("3".into())]
    );
    assert_eq!(ints(&mut con, "HPTTL h FIELDS 2 a b"), [0, 0]);
    advance_ms(&server, 1);
    // Stored but expired: counted by HLEN, hidden from the whole-hash reads, -2 for HTTL.
    assert_eq!(int(&mut con, "HLEN h"), 3);
    assert_eq!(strings(&mut con, "HKEYS h"), [Some("c".into())]);
    assert_eq!(strings(&mut con, "HGETALL h").len(), 2);
    assert_eq!(ints(&mut con, "HTTL h FIELDS 2 a b"), [-2, -2]);
    assert_eq!(int(&mut con, "HLEN h"), 3, "none of those deleted anything");
    // A read of the field deletes it.
    assert_eq!(strings(&mut con, "HMGET h a"), [None]);
    assert_eq!(int(&mut con, "HLEN h"), 2);
    assert_eq!(int(&mut con, "HEXISTS h b"), 0);
    assert_eq!(int(&mut con, "HLEN h"), 1);
    // An expired field is a new one for HINCRBY: it starts from 0 and has no deadline.
    run::<()>(&mut con, "HSET h n 10");
    run::<()>(&mut con, "HPEXPIRE h 5 FIELDS 1 n");
    advance_ms(&server, 6);
    assert_eq!(int(&mut con, "HINCRBY h n 1"), 1);
    assert_eq!(ints(&mut con, "HTTL h FIELDS 1 n"), [-1]);
    // The last field read after its deadline takes the key with it.
    run::<()>(&mut con, "HSET last f v");
    run::<()>(&mut con, "HPEXPIRE last 10 FIELDS 1 f");
    advance_ms(&server, 11);
    assert_eq!(int(&mut con, "EXISTS last"), 1, "not read yet");
    assert_eq!(run::<Option<String>>(&mut con, "HGET last f"), None);
    assert_eq!(int(&mut con, "EXISTS last"), 0);
}

#[test]
fn ttls_and_deadlines_follow_the_clock() {
    let server = server();
    let mut con = redis_connection(&server);
    run::<()>(&mut con, "HSET h a 1 b 2");
    assert_eq!(ints(&mut con, "HPEXPIRE h 1500 FIELDS 1 a"), [1]);
    assert_eq!(ints(&mut con, "HTTL h FIELDS 2 a b"), [2, -1], "rounded up");
    assert_eq!(ints(&mut con, "HPTTL h FIELDS 1 a"), [1500]);
    assert_eq!(
        ints(&mut con, "HPEXPIRETIME h FIELDS 1 a"),
        [START_MS + 1500]
    );
    assert_eq!(
        ints(&mut con, "HEXPIRETIME h FIELDS 1 a"),
        [START_S as i64 + 2]
    );
    advance_ms(&server, 600);
    assert_eq!(ints(&mut con, "HTTL h FIELDS 1 a"), [1]);
    assert_eq!(ints(&mut con, "HPTTL h FIELDS 1 a"), [900]);
    // Relative and absolute forms name the same deadline on this clock.
    let at = START_MS + 600 + 5000;
    assert_eq!(
        ints(&mut con, &format!("HPEXPIREAT h {at} FIELDS 1 b")),
        [1]
    );
    assert_eq!(ints(&mut con, "HPTTL h FIELDS 1 b"), [5000]);
    assert_eq!(
        ints(&mut con, "HEXPIRE h 5 GT FIELDS 1 b"),
        [0],
        "the same deadline is not later"
    );
    assert_eq!(ints(&mut con, "HPEXPIRE h 5001 GT FIELDS 1 b"), [1]);
    // A deadline that is now or past deletes the field.
    let now = START_MS + 600;
    assert_eq!(
        ints(&mut con, &format!("HPEXPIREAT h {now} FIELDS 1 a")),
        [2]
    );
    assert_eq!(ints(&mut con, "HTTL h FIELDS 1 a"), [-2]);
}

#[test]
fn the_active_cycle_removes_due_fields_and_the_key_with_its_last_field() {
    let server = server();
    let mut con = redis_connection(&server);
    run::<()>(&mut con, "HSET keep a 1 b 2");
    run::<()>(&mut con, "HPEXPIRE keep 100 FIELDS 1 a");
    run::<()>(&mut con, "HSET gone a 1 b 2");
    run::<()>(&mut con, "HPEXPIRE gone 100 FIELDS 2 a b");
    run::<()>(&mut con, "HSET later a 1");
    run::<()>(&mut con, "HPEXPIRE later 10000 FIELDS 1 a");
    advance_ms(&server, 101);
    let mut probe = redis_connection(&server);
    eventually("the active cycle removes the due fields", || {
        int(&mut probe, "DBSIZE") == 2
    });
    // Nobody read them: the cycle did it. HLEN counts stored fields, so it shows the removal.
    assert_eq!(int(&mut con, "HLEN keep"), 1);
    assert_eq!(int(&mut con, "EXISTS gone"), 0);
    assert_eq!(int(&mut con, "HLEN later"), 1);
    advance_ms(&server, 10_000);
    eventually("the later field goes too", || {
        int(&mut probe, "DBSIZE") == 1
    });
}

#[test]
fn thousands_of_hashes_with_due_fields_are_all_reclaimed() {
    let server = server();
    let mut con = redis_connection(&server);
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        let key = format!("h{i}");
        pipe.cmd("HSET")
            .arg(&key)
            .arg("a")
            .arg(1)
            .arg("b")
            .arg(2)
            .ignore();
        // Half the hashes lose one field, half lose both (and the key).
        let fields: &[&str] = if i % 2 == 0 { &["a"] } else { &["a", "b"] };
        pipe.cmd("HPEXPIRE")
            .arg(&key)
            .arg(50)
            .arg("FIELDS")
            .arg(fields.len())
            .arg(fields)
            .ignore();
    }
    pipe.query::<()>(&mut con).unwrap();
    advance_ms(&server, 51);
    eventually("every due field is removed", || {
        int(&mut con, "DBSIZE") == 1500
    });
    for i in (0..3000).step_by(2) {
        assert_eq!(int(&mut con, &format!("HLEN h{i}")), 1);
    }
}

#[test]
fn events_of_field_expiry_active_and_lazy() {
    let server = server();
    let mut con = redis_connection(&server);
    run::<()>(&mut con, "CONFIG SET notify-keyspace-events Eghx");
    let mut sub = redis_connection(&server);
    sub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:*").unwrap();
    let mut next = || {
        let msg = pubsub.get_message().unwrap();
        let key: String = msg.get_payload().unwrap();
        (
            msg.get_channel_name()
                .trim_start_matches("__keyevent@0__:")
                .to_string(),
            key,
        )
    };
    let ev = |e: &str, k: &str| (e.to_string(), k.to_string());
    run::<()>(&mut con, "HSET h a 1 b 2");
    assert_eq!(next(), ev("hset", "h"));
    run::<()>(&mut con, "HPEXPIRE h 100 FIELDS 2 a b");
    assert_eq!(next(), ev("hexpire", "h"));
    run::<()>(&mut con, "HPERSIST h FIELDS 1 b");
    assert_eq!(next(), ev("hpersist", "h"));
    // Active expiry: one `hexpired` for the hash.
    advance_ms(&server, 101);
    assert_eq!(next(), ev("hexpired", "h"));
    // The last field: `hexpired`, then `del` (class g) — no `expired` (class x): the key had no
    // TTL of its own.
    run::<()>(&mut con, "HPEXPIRE h 100 FIELDS 1 b");
    assert_eq!(next(), ev("hexpire", "h"));
    advance_ms(&server, 101);
    assert_eq!(next(), ev("hexpired", "h"));
    assert_eq!(next(), ev("del", "h"));
    // Lazy: a read finds the field expired.
    run::<()>(&mut con, "DEBUG SET-ACTIVE-EXPIRE 0");
    run::<()>(&mut con, "HSET l a 1 b 2");
    assert_eq!(next(), ev("hset", "l"));
    run::<()>(&mut con, "HPEXPIRE l 10 FIELDS 1 a");
    assert_eq!(next(), ev("hexpire", "l"));
    advance_ms(&server, 11);
    assert_eq!(run::<Option<String>>(&mut con, "HGET l a"), None);
    assert_eq!(next(), ev("hexpired", "l"));
    // A past deadline deletes: `hdel`, and `del` for the last field.
    assert_eq!(ints(&mut con, "HEXPIRE l 0 FIELDS 1 b"), [2]);
    assert_eq!(next(), ev("hdel", "l"));
    assert_eq!(next(), ev("del", "l"));
}

#[test]
fn a_watched_hash_losing_a_field_aborts_the_transaction() {
    let server = server();
    let mut con = redis_connection(&server);
    // Active expiry.
    run::<()>(&mut con, "HSET w a 1 b 2");
    run::<()>(&mut con, "HPEXPIRE w 100 FIELDS 1 a");
    run::<()>(&mut con, "WATCH w");
    advance_ms(&server, 101);
    let mut probe = redis_connection(&server);
    eventually("the field expires", || int(&mut probe, "HLEN w") == 1);
    run::<()>(&mut con, "MULTI");
    run::<()>(&mut con, "PING");
    assert_eq!(run::<Value>(&mut con, "EXEC"), Value::Nil);
    // Lazy expiry by another client's read.
    run::<()>(&mut con, "DEBUG SET-ACTIVE-EXPIRE 0");
    run::<()>(&mut con, "HPEXPIRE w 100 FIELDS 1 b");
    run::<()>(&mut con, "HSET w c 3");
    run::<()>(&mut con, "WATCH w");
    advance_ms(&server, 101);
    assert_eq!(run::<Option<String>>(&mut probe, "HGET w b"), None);
    run::<()>(&mut con, "MULTI");
    run::<()>(&mut con, "PING");
    assert_eq!(run::<Value>(&mut con, "EXEC"), Value::Nil);
    // Nothing expired, nothing touched: the transaction runs.
    run::<()>(&mut con, "WATCH w");
    advance_ms(&server, 1000);
    run::<()>(&mut con, "MULTI");
    run::<()>(&mut con, "PING");
    assert_ne!(run::<Value>(&mut con, "EXEC"), Value::Nil);
}

#[test]
fn rename_move_copy_and_swapdb_keep_field_deadlines_for_the_active_cycle() {
    let server = server();
    let mut con = redis_connection(&server);
    for key in ["r", "m", "c", "s"] {
        run::<()>(&mut con, &format!("HSET {key} a 1 b 2"));
        run::<()>(&mut con, &format!("HPEXPIRE {key} 100 FIELDS 1 a"));
    }
    run::<()>(&mut con, "RENAME r r2");
    run::<()>(&mut con, "MOVE m 1");
    run::<()>(&mut con, "COPY c c2");
    run::<()>(&mut con, "SELECT 2");
    run::<()>(&mut con, "HSET s2 a 1 b 2");
    run::<()>(&mut con, "HPEXPIRE s2 100 FIELDS 1 a");
    run::<()>(&mut con, "SWAPDB 2 3");
    run::<()>(&mut con, "SELECT 0");
    assert_eq!(ints(&mut con, "HPTTL r2 FIELDS 2 a b"), [100, -1]);
    assert_eq!(ints(&mut con, "HPTTL c2 FIELDS 2 a b"), [100, -1]);
    assert_eq!(run::<String>(&mut con, "OBJECT ENCODING c2"), "listpackex");
    advance_ms(&server, 101);
    let mut probe = redis_connection(&server);
    for (db, key) in [
        (0, "r2"),
        (1, "m"),
        (0, "c"),
        (0, "c2"),
        (0, "s"),
        (3, "s2"),
    ] {
        eventually(&format!("{key} in db {db} loses its field"), || {
            run::<()>(&mut probe, &format!("SELECT {db}"));
            int(&mut probe, &format!("HLEN {key}")) == 1
        });
    }
}

#[test]
fn overwrites_end_a_field_ttl_and_other_writes_keep_it() {
    let server = server();
    let mut con = redis_connection(&server);
    run::<()>(&mut con, "HSET h a 1 b 2 c 3 d 4");
    run::<()>(&mut con, "HPEXPIRE h 1000 FIELDS 4 a b c d");
    run::<()>(&mut con, "HSET h a 9");
    run::<()>(&mut con, "HINCRBY h b 1");
    run::<()>(&mut con, "HINCRBYFLOAT h c 1.5");
    run::<()>(&mut con, "HSETEX h KEEPTTL FIELDS 1 d 5");
    assert_eq!(
        ints(&mut con, "HPTTL h FIELDS 4 a b c d"),
        [-1, 1000, 1000, 1000]
    );
    run::<()>(&mut con, "HSETEX h FIELDS 1 d 6");
    assert_eq!(ints(&mut con, "HPTTL h FIELDS 1 d"), [-1]);
    // HSETNX does not write an existing field, so its deadline stays.
    assert_eq!(int(&mut con, "HSETNX h b 0"), 0);
    assert_eq!(ints(&mut con, "HPTTL h FIELDS 1 b"), [1000]);
    // Replacing the whole key drops the fields' deadlines with the old value.
    run::<()>(&mut con, "SET h plain");
    advance_ms(&server, 1001);
    let mut probe = redis_connection(&server);
    eventually("the stale index entry is harmless", || {
        run::<String>(&mut probe, "GET h") == "plain"
    });
    run::<()>(&mut con, "DEL h");
    run::<()>(&mut con, "FLUSHALL");
    assert_eq!(int(&mut con, "DBSIZE"), 0);
}

/// The way Redisson's native map cache (RMapCacheNative on Redis 8) writes entries with a time
/// to live and then reads one back while making it permanent.
#[test]
fn hsetex_with_a_ttl_then_hgetex_persist() {
    let server = server();
    let mut con = redis_connection(&server);
    assert_eq!(
        int(&mut con, "HSETEX cache PX 10000 FIELDS 2 k1 v1 k2 v2"),
        1
    );
    assert_eq!(
        run::<String>(&mut con, "OBJECT ENCODING cache"),
        "listpackex"
    );
    assert_eq!(ints(&mut con, "HPTTL cache FIELDS 2 k1 k2"), [10000, 10000]);
    assert_eq!(
        strings(&mut con, "HGETEX cache PERSIST FIELDS 1 k1"),
        [Some("v1".into())]
    );
    assert_eq!(ints(&mut con, "HPTTL cache FIELDS 2 k1 k2"), [-1, 10000]);
    // FNX refuses to overwrite, FXX updates and keeps the TTL with KEEPTTL.
    assert_eq!(int(&mut con, "HSETEX cache FNX PX 5 FIELDS 1 k1 x"), 0);
    assert_eq!(int(&mut con, "HSETEX cache FXX KEEPTTL FIELDS 1 k2 v2b"), 1);
    assert_eq!(ints(&mut con, "HPTTL cache FIELDS 1 k2"), [10000]);
    advance_ms(&server, 10_001);
    let mut probe = redis_connection(&server);
    eventually("k2 expires", || int(&mut probe, "HLEN cache") == 1);
    assert_eq!(
        strings(&mut con, "HGETALL cache"),
        [Some("k1".into()), Some("v1".into())]
    );
}

#[test]
fn a_hash_with_field_ttls_converts_to_a_table_and_keeps_them() {
    let server = server();
    let mut con = redis_connection(&server);
    run::<()>(&mut con, "CONFIG SET hash-max-listpack-entries 4");
    run::<()>(&mut con, "HSET h a 1 b 2");
    run::<()>(&mut con, "HPEXPIRE h 100 FIELDS 1 a");
    assert_eq!(run::<String>(&mut con, "OBJECT ENCODING h"), "listpackex");
    run::<()>(&mut con, "HSET h c 3 d 4 e 5");
    assert_eq!(run::<String>(&mut con, "OBJECT ENCODING h"), "hashtable");
    assert_eq!(ints(&mut con, "HPTTL h FIELDS 2 a b"), [100, -1]);
    advance_ms(&server, 101);
    let mut probe = redis_connection(&server);
    eventually("the table's field expires", || {
        int(&mut probe, "HLEN h") == 4
    });
}

/// Seeded random HEXPIRE…/HTTL/HPERSIST/HGETEX/HSETEX/HGETDEL commands, well-formed or not, on a
/// hash, a string and a missing key, sent to Redis 8.2 and to embedis (both on the real clock):
/// every reply must be the same bytes. Deadlines are far (minutes) or past, so that no field
/// expires while the two servers are asked; the queries whose value depends on the
/// millisecond (HPTTL, HEXPIRETIME of a relative deadline) are compared by reply type only.
/// Skipped loudly without a Redis 8.2 (`$EMBEDIS_REDIS8_SERVER`), unless
/// EMBEDIS_REQUIRE_REDIS=1.
#[test]
fn random_field_ttl_commands_answer_as_redis_8_does() {
    use rand::{seq::SliceRandom, Rng, SeedableRng};
    use support::{show, Conn, RedisServer};
    let Some(redis) = RedisServer::start_redis8("hash_field_expiry random", &[]) else {
        return;
    };
    let ours = support::builder_as("8.2").start().unwrap();
    let mut theirs_conn = Conn::connect(redis.addr()).unwrap();
    let mut ours_conn = Conn::connect(ours.addr()).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(14);
    let commands = [
        "HEXPIRE",
        "HPEXPIRE",
        "HEXPIREAT",
        "HPEXPIREAT",
        "HTTL",
        "HPTTL",
        "HEXPIRETIME",
        "HPEXPIRETIME",
        "HPERSIST",
        "HGETEX",
        "HSETEX",
        "HGETDEL",
        "HGET",
        "HSET",
        "HGETALL",
        "HLEN",
        "HINCRBY",
        "HDEL",
    ];
    let words = [
        "EX",
        "PX",
        "EXAT",
        "PXAT",
        "PERSIST",
        "KEEPTTL",
        "FNX",
        "FXX",
        "NX",
        "XX",
        "GT",
        "LT",
        "FIELDS",
        "fields",
        "-1",
        "0",
        "1000",
        "300000",
        "4000000000",
        "4000000000000",
        "70368744177663",
        "9223372036854775807",
        "x",
    ];
    let fields = ["a", "b", "c", "d"];
    let mut failures = Vec::new();
    for i in 0..4000 {
        if i % 200 == 0 {
            for conn in [&mut theirs_conn, &mut ours_conn] {
                conn.command(&["FLUSHALL"]);
                conn.command(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
                conn.command(&["SET", "s", "x"]);
            }
        }
        let command = *commands.choose(&mut rng).unwrap();
        let key = *["h", "h", "h", "s", "nokey"].choose(&mut rng).unwrap();
        let mut args: Vec<String> = vec![command.into(), key.into()];
        match command {
            "HGET" | "HDEL" => args.push(fields.choose(&mut rng).unwrap().to_string()),
            "HINCRBY" => args.extend([fields.choose(&mut rng).unwrap().to_string(), "1".into()]),
            "HSET" => {
                for _ in 0..rng.gen_range(1..=3) {
                    args.push(fields.choose(&mut rng).unwrap().to_string());
                    args.push(rng.gen_range(0..10).to_string());
                }
            }
            "HGETALL" | "HLEN" => {}
            _ => {
                for _ in 0..rng.gen_range(0..=3) {
                    args.push(words.choose(&mut rng).unwrap().to_string());
                }
                if rng.gen_bool(0.9) {
                    let n: usize = rng.gen_range(1..=3);
                    let claimed = if rng.gen_bool(0.85) { n } else { n + 1 };
                    args.extend(["FIELDS".to_string(), claimed.to_string()]);
                    for j in 0..n * if command == "HSETEX" { 2 } else { 1 } {
                        if command == "HSETEX" && j % 2 == 1 {
                            args.push(j.to_string());
                        } else {
                            args.push(fields.choose(&mut rng).unwrap().to_string());
                        }
                    }
                }
            }
        }
        let expected = theirs_conn.command(&args);
        let got = ours_conn.command(&args);
        let by_type = matches!(command, "HPTTL" | "HEXPIRETIME" | "HPEXPIRETIME");
        let same = if by_type {
            expected.first() == got.first()
        } else {
            expected == got
        };
        if !same {
            failures.push(format!(
                "{}\n    redis:   {}\n    embedis: {}",
                args.join(" "),
                show(&expected),
                show(&got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 4000 replies differ from Redis 8.2:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}
