//! Expiry seen from clients, on a server whose clock the test controls.
//!
//! Every server here runs on a frozen clock (`Clock::frozen_at`) that only `advance` moves, so
//! deadlines are exact to the millisecond and no test sleeps until a TTL runs out. A key whose
//! deadline is `t` exists at `t` and is gone at `t + 1 ms` for every way of looking at it (lazy
//! expiry), and the active expiry cycle removes it without anyone looking: moving the clock wakes
//! the server's cron at once, so a test only polls briefly (wall clock) for that asynchronous
//! effect. The Redis facts these tests rely on (KEYS hides expired keys without deleting them,
//! EXISTS and SCAN delete them, TTL/TYPE/EXISTS do not reset the idle time) were checked on
//! redis-server 7.0.15.

use crate::support;
use support::redis_connection;

use redis::{Commands, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{advance_ms, eventually};

/// 2030-01-01T00:00:00Z: a whole second, so LRU-clock seconds and TTL rounding are exact.
const START_S: u64 = 1_893_456_000;

fn start_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(START_S)
}

fn server() -> embedis::Server {
    support::builder()
        .clock(embedis::Clock::frozen_at(start_time()))
        .start()
        .unwrap()
}

fn dbsize(con: &mut redis::Connection) -> i64 {
    redis::cmd("DBSIZE").query(con).unwrap()
}

fn scan_all(con: &mut redis::Connection) -> Vec<String> {
    let mut keys: Vec<String> = con.scan().unwrap().collect();
    keys.sort();
    keys
}

/// The `db0:` line of INFO keyspace, if any.
fn keyspace_db0(con: &mut redis::Connection) -> Option<String> {
    let info: String = redis::cmd("INFO").arg("keyspace").query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("db0:"))
        .map(String::from)
}

#[test]
fn a_px_100_key_exists_at_100_ms_and_is_gone_at_101_for_every_reader() {
    let server = server();
    let mut writer = redis_connection(&server);
    let mut reader = redis_connection(&server);
    // Each way of looking gets its own key, so that one reader's lazy deletion cannot hide
    // another reader's view.
    type Probe = fn(&mut redis::Connection, &str) -> bool;
    let probes: [(&str, Probe); 8] = [
        ("GET", |c, k| {
            c.get::<_, Option<String>>(k).unwrap().is_some()
        }),
        ("EXISTS", |c, k| c.exists(k).unwrap()),
        ("KEYS", |c, k| c.keys::<_, Vec<String>>("*").unwrap() == [k]),
        ("SCAN", |c, k| scan_all(c) == [k]),
        ("TYPE", |c, k| {
            c.key_type::<_, String>(k).unwrap() == "string"
        }),
        ("STRLEN", |c, k| c.strlen::<_, i64>(k).unwrap() == 1),
        ("PTTL", |c, k| c.pttl::<_, i64>(k).unwrap() >= 0),
        ("RANDOMKEY", |c, k| {
            redis::cmd("RANDOMKEY")
                .query::<Option<String>>(c)
                .unwrap()
                .as_deref()
                == Some(k)
        }),
    ];
    for (name, probe) in probes {
        let key = format!("lease:{name}");
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg("v")
            .arg("PX")
            .arg(100)
            .query(&mut writer)
            .unwrap();
        advance_ms(&server, 100);
        assert!(probe(&mut reader, &key), "{name}: there at its deadline");
        assert!(probe(&mut writer, &key), "{name}: there for the writer too");
        assert_eq!(reader.pttl::<_, i64>(&key).unwrap(), 0);
        advance_ms(&server, 1);
        assert!(!probe(&mut reader, &key), "{name}: gone 1 ms later");
        assert!(!probe(&mut writer, &key), "{name}: gone for the writer too");
        assert_eq!(reader.pttl::<_, i64>(&key).unwrap(), -2);
        // Gone for good (lazily or by the active cycle): nothing to reclaim afterwards.
        eventually("the key is reclaimed", || dbsize(&mut reader) == 0);
    }
}

#[test]
fn the_active_cycle_reclaims_a_key_nobody_reads() {
    let server = server();
    let mut con = redis_connection(&server);
    let _: () = con.set("persistent", 1).unwrap();
    let _: () = redis::cmd("SET")
        .arg("lease")
        .arg("v")
        .arg("PX")
        .arg(100)
        .query(&mut con)
        .unwrap();
    // The cycle's next tick samples the lease and estimates the average TTL.
    eventually("avg_ttl estimated", || {
        keyspace_db0(&mut con).as_deref() == Some("keys=2,expires=1,avg_ttl=100")
    });
    advance_ms(&server, 100);
    assert_eq!(
        dbsize(&mut con),
        2,
        "nothing expires at the deadline itself"
    );
    advance_ms(&server, 1);
    // DBSIZE and INFO do not look keys up: only the active cycle can bring these down.
    let took = eventually("DBSIZE drops to 1", || dbsize(&mut con) == 1);
    eprintln!("reclaimed {took:?} after the clock moved");
    eventually("INFO keyspace shows no volatile key", || {
        keyspace_db0(&mut con).as_deref() == Some("keys=1,expires=0,avg_ttl=0")
    });
    let info: redis::InfoDict = redis::cmd("INFO").arg("stats").query(&mut con).unwrap();
    assert_eq!(info.get::<i64>("expired_keys"), Some(1));
    assert_eq!(
        info.get::<i64>("keyspace_misses"),
        Some(0),
        "nobody read it"
    );

    // A whole database of volatile keys disappears from INFO keyspace.
    let _: () = con.del("persistent").unwrap();
    let _: () = redis::cmd("SET")
        .arg("lease")
        .arg("v")
        .arg("PX")
        .arg(5)
        .query(&mut con)
        .unwrap();
    advance_ms(&server, 6);
    eventually("db0 leaves INFO keyspace", || {
        keyspace_db0(&mut con).is_none()
    });
    assert_eq!(dbsize(&mut con), 0);
}

#[test]
fn ttl_and_pttl_follow_the_clock() {
    let server = server();
    let mut con = redis_connection(&server);
    let _: () = con.set_ex("k", "v", 100).unwrap();
    assert_eq!(con.ttl::<_, i64>("k").unwrap(), 100);
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), 100_000);
    let deadline_s = START_S as i64 + 100;
    assert_eq!(con.expire_time::<_, i64>("k").unwrap(), deadline_s);
    assert_eq!(con.pexpire_time::<_, i64>("k").unwrap(), deadline_s * 1000);

    advance_ms(&server, 30_500);
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), 69_500);
    // TTL rounds to the nearest second, as Redis does.
    assert_eq!(con.ttl::<_, i64>("k").unwrap(), 70);
    advance_ms(&server, 29_401);
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), 40_099);
    assert_eq!(con.ttl::<_, i64>("k").unwrap(), 40);
    // The absolute deadline does not move with the clock.
    assert_eq!(con.expire_time::<_, i64>("k").unwrap(), deadline_s);

    advance_ms(&server, 40_098);
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), 1);
    assert_eq!(con.ttl::<_, i64>("k").unwrap(), 0);
    advance_ms(&server, 1);
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), 0);
    assert_eq!(con.get::<_, String>("k").unwrap(), "v");
    advance_ms(&server, 1);
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), -2);
    assert_eq!(con.ttl::<_, i64>("k").unwrap(), -2);
    assert_eq!(con.expire_time::<_, i64>("k").unwrap(), -2);

    // EXPIRE counts from the clock's now; PERSIST stops the countdown.
    let _: () = con.set("p", "v").unwrap();
    assert!(con.expire::<_, bool>("p", 10).unwrap());
    advance_ms(&server, 9_000);
    assert_eq!(con.ttl::<_, i64>("p").unwrap(), 1);
    assert!(con.persist::<_, bool>("p").unwrap());
    advance_ms(&server, 3_600_000);
    assert_eq!(con.ttl::<_, i64>("p").unwrap(), -1);
    assert_eq!(con.get::<_, String>("p").unwrap(), "v");

    // TIME is the clock's too.
    let (seconds, micros): (i64, i64) = redis::cmd("TIME").query(&mut con).unwrap();
    assert_eq!(
        seconds * 1_000_000 + micros,
        server.clock().now_us(),
        "TIME follows the clock"
    );
}

#[test]
fn absolute_deadlines_are_relative_to_the_clocks_now() {
    let server = server();
    let mut con = redis_connection(&server);
    let now_s = START_S as i64;
    let _: () = con.set("k", "v").unwrap();
    assert!(con.expire_at::<_, bool>("k", now_s + 100).unwrap());
    assert_eq!(con.ttl::<_, i64>("k").unwrap(), 100);
    assert!(con.pexpire_at::<_, bool>("k", now_s * 1000 + 500).unwrap());
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), 500);
    assert_eq!(con.pexpire_time::<_, i64>("k").unwrap(), now_s * 1000 + 500);
    advance_ms(&server, 500);
    assert_eq!(con.get::<_, String>("k").unwrap(), "v");
    advance_ms(&server, 1);
    assert_eq!(con.get::<_, Option<String>>("k").unwrap(), None);

    // A deadline that is in the future for the wall clock but in the past for the server's
    // clock (set to 2100) deletes the key at once.
    let year_2100 = UNIX_EPOCH + Duration::from_secs(4_102_444_800);
    assert!(server.clock().set(year_2100));
    let _: () = con.set("k", "v").unwrap();
    assert!(con.expire_at::<_, bool>("k", 2_000_000_000).unwrap());
    assert!(!con.exists::<_, bool>("k").unwrap());
    let past = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("EXAT")
        .arg(2_000_000_000)
        .query::<Value>(&mut con)
        .unwrap();
    assert_eq!(past, Value::Okay);
    assert!(!con.exists::<_, bool>("k").unwrap());
    // And deadlines past the clock's now count from it.
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("PXAT")
        .arg(4_102_444_800_250i64)
        .query(&mut con)
        .unwrap();
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), 250);
    let got: Option<String> = con.get_ex("k", redis::Expiry::EXAT(4_102_444_900)).unwrap();
    assert_eq!(got.as_deref(), Some("v"));
    assert_eq!(con.ttl::<_, i64>("k").unwrap(), 100);
}

#[test]
fn ten_thousand_volatile_keys_half_expired_are_all_reclaimed() {
    let server = support::builder()
        .clock(embedis::Clock::frozen_at(start_time()))
        // More cycles per second: the tail of a mostly-live table is found faster.
        .config("hz", "100")
        .unwrap()
        .start()
        .unwrap();
    let mut con = redis_connection(&server);
    let mut pipe = redis::pipe();
    for i in 0..10_000 {
        let ttl_ms = if i % 2 == 0 { 1_000 } else { 3_600_000 };
        pipe.cmd("SET")
            .arg(format!("k{i}"))
            .arg(i)
            .arg("PX")
            .arg(ttl_ms)
            .ignore();
    }
    let _: () = pipe.query(&mut con).unwrap();
    assert_eq!(dbsize(&mut con), 10_000);

    advance_ms(&server, 1_001);
    let took = eventually("5,000 expired keys reclaimed", || dbsize(&mut con) == 5_000);
    eprintln!("5,000 keys reclaimed in {took:?}");
    assert_eq!(
        keyspace_db0(&mut con)
            .unwrap()
            .split(",avg_ttl=")
            .next()
            .unwrap(),
        "keys=5000,expires=5000"
    );
    let info: redis::InfoDict = redis::cmd("INFO").arg("stats").query(&mut con).unwrap();
    assert_eq!(info.get::<i64>("expired_keys"), Some(5_000));
    // Exactly the live half is left.
    let mut live = redis::pipe();
    for i in (1..10_000).step_by(2) {
        live.exists(format!("k{i}"));
    }
    let present: Vec<bool> = live.query(&mut con).unwrap();
    assert!(present.iter().all(|p| *p));
}

#[test]
fn set_keepttl_keeps_the_deadline_and_plain_set_drops_it() {
    let server = server();
    let mut con = redis_connection(&server);
    let set = |con: &mut redis::Connection, args: &[&str]| -> Value {
        redis::cmd("SET").arg(args).query(con).unwrap()
    };
    set(&mut con, &["k", "v1", "PX", "1000"]);
    advance_ms(&server, 400);
    assert_eq!(set(&mut con, &["k", "v2", "KEEPTTL"]), Value::Okay);
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), 600);
    assert_eq!(
        set(&mut con, &["k", "v3", "KEEPTTL", "GET"]),
        Value::BulkString(b"v2".to_vec())
    );
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), 600);
    // Commands that modify a value in place keep its TTL too.
    let _: i64 = con.append("k", "!").unwrap();
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), 600);
    advance_ms(&server, 600);
    assert_eq!(con.get::<_, String>("k").unwrap(), "v3!");
    advance_ms(&server, 1);
    assert_eq!(con.get::<_, Option<String>>("k").unwrap(), None);
    // KEEPTTL on a key without a TTL (or a missing key) stores it without one.
    assert_eq!(set(&mut con, &["k", "v", "KEEPTTL"]), Value::Okay);
    assert_eq!(con.pttl::<_, i64>("k").unwrap(), -1);

    set(&mut con, &["n", "1", "PX", "1000"]);
    assert_eq!(con.incr::<_, _, i64>("n", 1).unwrap(), 2);
    assert_eq!(con.pttl::<_, i64>("n").unwrap(), 1000, "INCR keeps the TTL");
    assert_eq!(set(&mut con, &["n", "3"]), Value::Okay);
    assert_eq!(con.pttl::<_, i64>("n").unwrap(), -1, "a plain SET drops it");
    advance_ms(&server, 5_000);
    assert_eq!(con.get::<_, String>("n").unwrap(), "3");
}

#[test]
fn with_active_expiry_off_keys_stay_until_read_but_are_never_visible() {
    let server = support::builder()
        .clock(embedis::Clock::frozen_at(start_time()))
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("hz", "100")
        .unwrap()
        .start()
        .unwrap();
    let mut con = redis_connection(&server);
    let ok: Value = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(ok, Value::Okay);
    let _: () = con.set("persistent", 1).unwrap();
    for i in 0..100 {
        let _: () = con.pset_ex(format!("v{i}"), i, 100).unwrap();
    }
    advance_ms(&server, 101);
    // The clock change runs the cron at once; give it a few more ticks (hz 100) to be sure
    // nothing is reclaimed.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(dbsize(&mut con), 101);
    assert_eq!(
        keyspace_db0(&mut con)
            .unwrap()
            .split(",avg_ttl=")
            .next()
            .unwrap(),
        "keys=101,expires=100"
    );

    // Lazy expiry hides them from every reader. KEYS skips them without deleting them (as
    // Redis 7.0 does); GET, EXISTS and SCAN delete the ones they meet.
    assert_eq!(con.keys::<_, Vec<String>>("*").unwrap(), ["persistent"]);
    assert_eq!(dbsize(&mut con), 101);
    assert_eq!(con.get::<_, Option<i64>>("v0").unwrap(), None);
    assert_eq!(dbsize(&mut con), 100);
    assert!(!con.exists::<_, bool>("v1").unwrap());
    assert_eq!(dbsize(&mut con), 99);
    assert_eq!(con.ttl::<_, i64>("v2").unwrap(), -2);
    assert_eq!(scan_all(&mut con), ["persistent"]);
    assert_eq!(dbsize(&mut con), 1);
    let info: redis::InfoDict = redis::cmd("INFO").arg("stats").query(&mut con).unwrap();
    assert_eq!(info.get::<i64>("expired_keys"), Some(100));

    // Switched back on, the cycle reclaims what nobody reads.
    for i in 0..50 {
        let _: () = con.pset_ex(format!("w{i}"), i, 100).unwrap();
    }
    advance_ms(&server, 101);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(dbsize(&mut con), 51);
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(1)
        .query(&mut con)
        .unwrap();
    eventually("the cycle reclaims the rest", || dbsize(&mut con) == 1);
}

#[test]
fn object_idletime_follows_the_clock() {
    let server = server();
    let mut con = redis_connection(&server);
    let idle = |con: &mut redis::Connection, key: &str| -> i64 {
        redis::cmd("OBJECT")
            .arg("IDLETIME")
            .arg(key)
            .query(con)
            .unwrap()
    };
    let _: () = con.set("k", "v").unwrap();
    let _: () = con.set("g", "v").unwrap();
    assert_eq!(idle(&mut con, "k"), 0);
    advance_ms(&server, 10_000);
    assert_eq!(idle(&mut con, "k"), 10);
    // TTL, EXISTS and TYPE look without touching; GET touches.
    let _: i64 = con.ttl("k").unwrap();
    let _: bool = con.exists("k").unwrap();
    let _: String = con.key_type("k").unwrap();
    let _: String = con.get("g").unwrap();
    assert_eq!(idle(&mut con, "k"), 10);
    assert_eq!(idle(&mut con, "g"), 0);
    // Whole seconds of the clock, as Redis's LRU clock counts them.
    advance_ms(&server, 2_500);
    assert_eq!(idle(&mut con, "g"), 2);
    advance_ms(&server, 500);
    assert_eq!(idle(&mut con, "g"), 3);
    assert_eq!(idle(&mut con, "k"), 13);
    let touched: i64 = redis::cmd("TOUCH")
        .arg("k")
        .arg("missing")
        .query(&mut con)
        .unwrap();
    assert_eq!(touched, 1);
    assert_eq!(idle(&mut con, "k"), 0);
    // A day later.
    advance_ms(&server, 86_400_000);
    assert_eq!(idle(&mut con, "k"), 86_400);
}

/// While CLIENT PAUSE is in force a paused server keeps its dataset constant: expired keys read
/// as absent, but neither lazy nor active expiry deletes or counts them (Redis's
/// `expireIfNeeded` and `activeExpireCycle` both stand down). Once the pause ends — by CLIENT
/// UNPAUSE or by running out — they expire normally.
#[test]
fn expired_keys_stay_in_place_while_clients_are_paused() {
    let server = server();
    let mut con = redis_connection(&server);
    let expired_keys = |con: &mut redis::Connection| {
        let info: redis::InfoDict = redis::cmd("INFO").arg("stats").query(con).unwrap();
        info.get::<i64>("expired_keys").unwrap()
    };
    for key in ["a", "b", "c"] {
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg("v")
            .arg("PX")
            .arg(100)
            .query(&mut con)
            .unwrap();
    }
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(60_000)
        .arg("WRITE")
        .query(&mut con)
        .unwrap();
    advance_ms(&server, 101);
    // Readers see the keys gone…
    assert_eq!(con.get::<_, Option<String>>("a").unwrap(), None);
    assert!(!con.exists::<_, bool>("b").unwrap());
    assert!(scan_all(&mut con).is_empty());
    // …RANDOMKEY, with only expired keys to pick, still answers instead of searching forever…
    let _: Option<String> = redis::cmd("RANDOMKEY").query(&mut con).unwrap();
    // …but nothing was deleted or counted, by lookups or by the cycle (which the clock's move
    // woke; give it a few ticks).
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(dbsize(&mut con), 3);
    assert_eq!(expired_keys(&mut con), 0);
    // Unpause and read in one transaction, so the cycle (free to run again once the pause ends)
    // cannot reach the key before GET does.
    let (_, a, size): ((), Option<String>, i64) = redis::pipe()
        .atomic()
        .cmd("CLIENT")
        .arg("UNPAUSE")
        .cmd("GET")
        .arg("a")
        .cmd("DBSIZE")
        .query(&mut con)
        .unwrap();
    assert_eq!(a, None);
    assert_eq!(size, 2, "GET expires it now");
    assert!(expired_keys(&mut con) >= 1);
    eventually("the cycle reclaims the rest", || dbsize(&mut con) == 0);
    assert_eq!(expired_keys(&mut con), 3);

    // A pause that runs out ends the hold too.
    let _: () = redis::cmd("SET")
        .arg("d")
        .arg("v")
        .arg("PX")
        .arg(100)
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(500)
        .arg("WRITE")
        .query(&mut con)
        .unwrap();
    advance_ms(&server, 101);
    assert!(!con.exists::<_, bool>("d").unwrap());
    assert_eq!(expired_keys(&mut con), 3);
    advance_ms(&server, 400);
    assert!(!con.exists::<_, bool>("d").unwrap());
    assert_eq!(expired_keys(&mut con), 4);
}

/// LATENCY's `expire-cycle` event: the active cycle that deletes a big key records its time
/// when it reaches `latency-monitor-threshold` (Redis's unit/latency-monitor checks this with a
/// 1,000,000-member set and a 20 ms threshold, which embedis now frees in about 1 ms: here
/// 300,000 members of 40 bytes each, a heap block apiece, against a 1 ms threshold).
#[test]
fn a_slow_expiry_is_a_latency_event() {
    let server = server();
    let mut con = redis_connection(&server);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("latency-monitor-threshold")
        .arg(1)
        .query(&mut con)
        .unwrap();
    let mut pipe = redis::pipe();
    for batch in 0..300 {
        let members: Vec<String> = (0..1000)
            .map(|i| format!("member-{batch:04}-{i:04}-padded-to-forty-bytes"))
            .collect();
        pipe.cmd("SADD").arg("bigset").arg(members).ignore();
    }
    let _: () = pipe.query(&mut con).unwrap();
    let _: () = redis::cmd("PEXPIRE")
        .arg("bigset")
        .arg(50)
        .query(&mut con)
        .unwrap();
    advance_ms(&server, 51);
    eventually("the active cycle deletes the set", || dbsize(&mut con) == 0);
    let latest: Vec<Vec<Value>> = redis::cmd("LATENCY").arg("LATEST").query(&mut con).unwrap();
    let events: Vec<String> = latest
        .iter()
        .map(|e| redis::from_redis_value::<String>(&e[0]).unwrap())
        .collect();
    assert!(
        events.iter().any(|e| e == "expire-cycle"),
        "LATENCY LATEST: {events:?}"
    );
}
