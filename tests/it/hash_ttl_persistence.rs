//! Hash field TTLs across RDB files and DUMP payloads, with Redis 8.2 as the reference.
//!
//! embedis writes a hash with field TTLs with Redis 7.4's types (`HASH_LISTPACK_EX`,
//! `HASH_METADATA`) inside an RDB version-10 file or DUMP payload; Redis 8.2 loads those. The
//! other way, Redis 8.2 writes version 12, which embedis refuses as Redis 7.0 does ("Can't handle
//! RDB format version"); so its files and payloads are given to embedis with the version field
//! set to 10 and the checksum recomputed — the bodies are Redis 8.2's own bytes.
//!
//! On each side the test compares, key by key, OBJECT ENCODING, HGETALL (in order for a packed
//! hash, whose order both servers define; sorted for a table) and HPEXPIRETIME of every field.
//! A second test, on a frozen clock, checks DEBUG RELOAD and DUMP/RESTORE within embedis and
//! what becomes of fields whose deadline passed before the load: loaded, as Redis 8.2 loads
//! them, hidden from reads, and removed (the hash with them if it empties) by field expiry.
//!
//! The Redis 8.2 parts are skipped loudly without `$EMBEDIS_REDIS8_SERVER`, unless
//! EMBEDIS_REQUIRE_REDIS=1.

use crate::support;
use support::text;

use embedis_protocol::Value;
use std::time::{Duration, UNIX_EPOCH};
use support::{flat, Conn, RedisServer};

const EMBEDIS: &str = env!("CARGO_BIN_EXE_embedis-server");

/// Deadlines far ahead (2100-01-01 and after), so that nothing expires during the test.
const FAR: i64 = 4_102_444_800_000;

fn reply(c: &mut Conn, args: &[&str]) -> (Vec<u8>, Value) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.send_raw(&Conn::encode(&args));
    c.read_reply().expect("a reply")
}

fn words(c: &mut Conn, args: &[&str]) -> Vec<String> {
    flat(&reply(c, args).1)
}

fn bulk_bytes(c: &mut Conn, args: &[&str]) -> Vec<u8> {
    match reply(c, args).1 {
        Value::Bulk(b) => b.to_vec(),
        other => panic!("{args:?}: {other:?}"),
    }
}

/// Builds the keys: packed hashes with some fields' TTLs (ties included, fields without one
/// among them), one whose TTLs were all removed again (still `listpackex`), a table by count
/// and one by a long value, each with TTLs on some fields, and a plain hash.
fn build(c: &mut Conn) {
    let run = |c: &mut Conn, args: &[&str]| {
        let r = text(c, args);
        assert!(!r.starts_with('-'), "{args:?}: {r}");
    };
    run(
        c,
        &["HSET", "lpx", "a", "1", "b", "two", "c", "3", "d", "-4"],
    );
    let (t1, t2) = ((FAR + 5000).to_string(), (FAR + 1000).to_string());
    run(c, &["HPEXPIREAT", "lpx", &t1, "FIELDS", "2", "c", "a"]);
    run(c, &["HPEXPIREAT", "lpx", &t2, "FIELDS", "1", "d"]);
    run(c, &["HSET", "lpx", "e", "5"]);
    run(c, &["HSET", "persisted", "x", "1", "y", "2"]);
    run(c, &["HPEXPIREAT", "persisted", &t2, "FIELDS", "1", "x"]);
    run(c, &["HPERSIST", "persisted", "FIELDS", "1", "x"]);
    for i in 0..600 {
        run(c, &["HSET", "table", &format!("f{i}"), &format!("v{i}")]);
    }
    let t3 = (FAR + 77).to_string();
    run(
        c,
        &[
            "HPEXPIREAT",
            "table",
            &t3,
            "FIELDS",
            "3",
            "f0",
            "f10",
            "f599",
        ],
    );
    run(c, &["HPEXPIREAT", "table", &t1, "FIELDS", "1", "f300"]);
    let long = "L".repeat(100);
    run(c, &["HSET", "long", "k", &long, "m", "short"]);
    run(c, &["HPEXPIREAT", "long", &t2, "FIELDS", "1", "m"]);
    run(c, &["HSET", "plain", "p", "1", "q", "2"]);
}

const KEYS: [&str; 5] = ["lpx", "persisted", "table", "long", "plain"];

/// What a key looks like: encoding, pairs (sorted for a table), and each field's
/// HPEXPIRETIME, fields sorted.
fn describe(c: &mut Conn, key: &str) -> (String, Vec<String>, Vec<(String, String)>) {
    let encoding = words(c, &["OBJECT", "ENCODING", key]).concat();
    let flat_pairs = words(c, &["HGETALL", key]);
    let mut pairs: Vec<(String, String)> = flat_pairs
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    let packed = encoding.starts_with("listpack");
    if !packed {
        pairs.sort();
    }
    let mut fields: Vec<String> = pairs.iter().map(|p| p.0.clone()).collect();
    fields.sort();
    let mut args = vec!["HPEXPIRETIME", key, "FIELDS"];
    let n = fields.len().to_string();
    args.push(&n);
    args.extend(fields.iter().map(String::as_str));
    let times = words(c, &args);
    let pairs_text = pairs.into_iter().flat_map(|(f, v)| [f, v]).collect();
    (
        encoding,
        pairs_text,
        fields.into_iter().zip(times).collect(),
    )
}

/// Sets the version in a DUMP payload's footer to 10 and recomputes its checksum.
fn as_version_10_payload(mut payload: Vec<u8>) -> Vec<u8> {
    let n = payload.len();
    payload[n - 10..n - 8].copy_from_slice(&10u16.to_le_bytes());
    let crc = embedis_rdb::crc64::crc64(&payload[..n - 8]);
    payload[n - 8..].copy_from_slice(&crc.to_le_bytes());
    payload
}

fn start_embedis(test: &str) -> RedisServer {
    let args = ["--enable-debug-command", "yes", "--compat-version", "8.2"];
    RedisServer::start_binary(EMBEDIS, test, &args)
}

#[test]
fn field_ttls_cross_files_and_payloads_with_redis_8() {
    let test = "hash_ttl_persistence with redis 8";
    let Some(redis) = RedisServer::start_redis8(test, &["--enable-debug-command", "yes"]) else {
        return;
    };
    let ours = start_embedis(test);
    let (mut r, mut e) = (
        Conn::connect(redis.addr()).unwrap(),
        Conn::connect(ours.addr()).unwrap(),
    );
    build(&mut r);
    build(&mut e);
    let expected: Vec<_> = KEYS.iter().map(|k| describe(&mut r, k)).collect();
    for (key, want) in KEYS.iter().zip(&expected) {
        assert_eq!(&describe(&mut e, key), want, "{key} as built");
    }
    // The encodings Redis 8.2 gives them (these pick the RDB types).
    let encodings: Vec<&str> = expected.iter().map(|d| d.0.as_str()).collect();
    assert_eq!(
        encodings,
        [
            "listpackex",
            "listpackex",
            "hashtable",
            "hashtable",
            "listpack"
        ]
    );

    // DUMP: a packed hash's payload is Redis 8.2's byte for byte but for the footer (version
    // 10, not 12, and so the checksum), and the header time of `persisted`, where Redis writes
    // the stale deadline its expiry index still holds and we write 0 (loaders ignore it).
    let ours_lpx = bulk_bytes(&mut e, &["DUMP", "lpx"]);
    let theirs_lpx = bulk_bytes(&mut r, &["DUMP", "lpx"]);
    assert_eq!(ours_lpx[0], 25, "HASH_LISTPACK_EX");
    assert_eq!(
        ours_lpx[..ours_lpx.len() - 10],
        theirs_lpx[..theirs_lpx.len() - 10]
    );
    assert_eq!(
        bulk_bytes(&mut e, &["DUMP", "table"])[0],
        24,
        "HASH_METADATA"
    );
    assert_eq!(
        bulk_bytes(&mut e, &["DUMP", "plain"])[0],
        16,
        "HASH_LISTPACK"
    );

    // Our DUMP restored on Redis 8.2, Redis 8.2's on ours (its footer made version 10).
    for key in KEYS {
        let copy = format!("{key}:copy");
        let ours_payload = bulk_bytes(&mut e, &["DUMP", key]);
        let theirs_payload = bulk_bytes(&mut r, &["DUMP", key]);
        let restore = |c: &mut Conn, payload: &[u8]| {
            let args: [&[u8]; 4] = [b"RESTORE", copy.as_bytes(), b"0", payload];
            c.send_raw(&Conn::encode(&args));
            let (raw, _) = c.read_reply().unwrap();
            assert_eq!(raw, b"+OK\r\n", "RESTORE {copy}: {}", support::show(&raw));
        };
        restore(&mut r, &ours_payload);
        restore(&mut e, &as_version_10_payload(theirs_payload));
        let want = describe(&mut r, key);
        assert_eq!(
            describe(&mut r, &copy),
            want,
            "our DUMP of {key} on Redis 8.2"
        );
        assert_eq!(
            describe(&mut e, &copy),
            want,
            "Redis 8.2's DUMP of {key} on ours"
        );
        text(&mut r, &["DEL", &copy]);
        text(&mut e, &["DEL", &copy]);
    }

    // The pre-release forms (22: absolute TTLs; 23: no header time), which Redis 8.2 still
    // loads: both servers read the same payloads alike.
    let far = FAR as u64;
    let mut body22 = vec![3u8];
    for (field, value, ttl) in [("a", "1", far), ("b", "2", 0), ("c", "3", far - 9)] {
        embedis_rdb::primitives::write_len(&mut body22, ttl).unwrap();
        embedis_rdb::primitives::write_string(&mut body22, field.as_bytes(), false).unwrap();
        embedis_rdb::primitives::write_string(&mut body22, value.as_bytes(), false).unwrap();
    }
    let (t, t9) = (far.to_string(), (far + 9).to_string());
    let lp = embedis_rdb::encodings::listpack_encode(["a", "1", &t, "c", "3", &t9, "b", "2", "0"]);
    let mut body23 = Vec::new();
    embedis_rdb::primitives::write_string(&mut body23, &lp, false).unwrap();
    for (ty, body) in [(22u8, body22), (23, body23)] {
        let mut payload = vec![ty];
        payload.extend_from_slice(&body);
        payload.extend_from_slice(&10u16.to_le_bytes());
        let crc = embedis_rdb::crc64::crc64(&payload);
        payload.extend_from_slice(&crc.to_le_bytes());
        let key = format!("pre-ga-{ty}");
        for c in [&mut r, &mut e] {
            let args: [&[u8]; 4] = [b"RESTORE", key.as_bytes(), b"0", &payload];
            c.send_raw(&Conn::encode(&args));
            assert_eq!(
                c.read_reply().unwrap().0,
                b"+OK\r\n",
                "RESTORE of type {ty}"
            );
        }
        let want = describe(&mut r, &key);
        assert_eq!(want.2.len(), 3, "{want:?}");
        assert_eq!(describe(&mut e, &key), want, "type {ty}");
        text(&mut r, &["DEL", &key]);
        text(&mut e, &["DEL", &key]);
    }

    // Our file loaded by Redis 8.2.
    assert_eq!(text(&mut e, &["SAVE"]), "+OK\r\n");
    let ours_file = ours.dir().join("dump.rdb");
    // As 8.2, embedis writes Redis 8.2's RDB version, 12.
    assert!(std::fs::read(&ours_file).unwrap().starts_with(b"REDIS0012"));
    std::fs::copy(&ours_file, redis.dir().join("dump.rdb")).unwrap();
    text(&mut r, &["FLUSHALL"]);
    assert_eq!(text(&mut r, &["DEBUG", "RELOAD", "NOSAVE"]), "+OK\r\n");
    for (key, want) in KEYS.iter().zip(&expected) {
        assert_eq!(&describe(&mut r, key), want, "{key}: our file on Redis 8.2");
    }

    // Redis 8.2's file loaded by us (as 8.2, version 12 is ours too).
    text(&mut r, &["HSET", "lpx", "late", "1"]);
    text(
        &mut r,
        &["HPEXPIREAT", "lpx", &FAR.to_string(), "FIELDS", "1", "late"],
    );
    let expected: Vec<_> = KEYS.iter().map(|k| describe(&mut r, k)).collect();
    assert_eq!(text(&mut r, &["SAVE"]), "+OK\r\n");
    let theirs_file = std::fs::read(redis.dir().join("dump.rdb")).unwrap();
    assert!(theirs_file.starts_with(b"REDIS0012"));
    std::fs::write(&ours_file, &theirs_file).unwrap();
    assert_eq!(text(&mut e, &["DEBUG", "RELOAD", "NOSAVE"]), "+OK\r\n");
    for (key, want) in KEYS.iter().zip(&expected) {
        assert_eq!(
            &describe(&mut e, key),
            want,
            "{key}: Redis 8.2's file on ours"
        );
    }

    // Redis 7.0 cannot hold field TTLs, and refuses a file that has them (it stops at the
    // version, 12, before it reaches them).
    if let Some(check) = support::find_binary("redis-check-rdb", test) {
        assert_eq!(text(&mut e, &["SAVE"]), "+OK\r\n");
        let out = std::process::Command::new(check)
            .arg(&ours_file)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{report}");
        assert!(
            report.contains("Can't handle RDB format version 12"),
            "{report}"
        );
    }
}

/// 2030-01-01T00:00:00Z.
const START_MS: u64 = 1_893_456_000_000;

#[test]
fn debug_reload_and_restore_keep_field_ttls_and_expired_fields_go() {
    let dir = std::env::temp_dir().join(format!("embedis-hash-ttl-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let server = support::builder_as("8.2")
        .clock(embedis::Clock::frozen_at(
            UNIX_EPOCH + Duration::from_millis(START_MS),
        ))
        .dir(&dir)
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    let t0 = START_MS as i64;
    text(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    text(&mut c, &["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    text(&mut c, &["HPEXPIRE", "h", "1000", "FIELDS", "1", "a"]);
    text(&mut c, &["HPEXPIRE", "h", "5000", "FIELDS", "1", "b"]);
    text(&mut c, &["HSET", "gone", "x", "1", "y", "2"]);
    text(
        &mut c,
        &["HPEXPIRE", "gone", "1000", "FIELDS", "2", "x", "y"],
    );
    for i in 0..600 {
        text(&mut c, &["HSET", "big", &format!("f{i}"), "v"]);
    }
    text(&mut c, &["HPEXPIRE", "big", "1000", "FIELDS", "1", "f7"]);
    let times = |c: &mut Conn| {
        (
            words(c, &["HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c"]),
            words(c, &["HPEXPIRETIME", "big", "FIELDS", "2", "f7", "f8"]),
            words(c, &["OBJECT", "ENCODING", "h"]),
        )
    };
    let before = times(&mut c);
    assert_eq!(
        before.0,
        [
            (t0 + 1000).to_string(),
            (t0 + 5000).to_string(),
            "-1".into()
        ]
    );

    assert_eq!(text(&mut c, &["DEBUG", "RELOAD"]), "+OK\r\n");
    assert_eq!(times(&mut c), before, "DEBUG RELOAD keeps field TTLs");

    let payload = bulk_bytes(&mut c, &["DUMP", "h"]);
    let args: [&[u8]; 4] = [b"RESTORE", b"h2", b"0", &payload];
    c.send_raw(&Conn::encode(&args));
    assert_eq!(c.read_reply().unwrap().0, b"+OK\r\n");
    assert_eq!(
        words(
            &mut c,
            &["HPEXPIRETIME", "h2", "FIELDS", "3", "a", "b", "c"]
        ),
        before.0,
        "DUMP/RESTORE keeps field TTLs"
    );
    assert_eq!(words(&mut c, &["OBJECT", "ENCODING", "h2"]), ["listpackex"]);

    // Saved now, loaded after `a`, `x`, `y` and `f7` have expired: as Redis 8.2 does, the file's
    // fields are all loaded (HLEN counts stored fields), reads skip the expired ones, and field
    // expiry removes them — and `gone`, emptied, with them.
    assert_eq!(text(&mut c, &["SAVE"]), "+OK\r\n");
    assert!(server.clock().advance(Duration::from_millis(2000)));
    assert_eq!(text(&mut c, &["DEBUG", "RELOAD", "NOSAVE"]), "+OK\r\n");
    assert_eq!(text(&mut c, &["HLEN", "h"]), ":3\r\n");
    assert_eq!(words(&mut c, &["HGETALL", "h"]), ["b", "2", "c", "3"]);
    assert_eq!(text(&mut c, &["HLEN", "big"]), ":600\r\n");
    assert_eq!(text(&mut c, &["EXISTS", "gone"]), ":1\r\n");
    text(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    support::eventually("field expiry after the load", || {
        text(&mut c, &["EXISTS", "gone"]) == ":0\r\n"
            && text(&mut c, &["HLEN", "h"]) == ":2\r\n"
            && text(&mut c, &["HLEN", "big"]) == ":599\r\n"
    });
    assert_eq!(
        words(&mut c, &["HPEXPIRETIME", "h", "FIELDS", "2", "a", "b"]),
        ["-2".to_string(), (t0 + 5000).to_string()]
    );
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// BGREWRITEAOF writes the AOF's base as an RDB file: a restart that loads it (its incremental
/// file empty) has the field TTLs back.
#[test]
fn the_aof_base_keeps_field_ttls() {
    let dir = std::env::temp_dir().join(format!("embedis-hash-ttl-aof-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let start = || {
        support::builder_as("8.2")
            .clock(embedis::Clock::frozen_at(
                UNIX_EPOCH + Duration::from_millis(START_MS),
            ))
            .dir(&dir)
            .config("appendonly", "yes")
            .unwrap()
            .start()
            .unwrap()
    };
    let t0 = START_MS as i64;
    let expected = [(t0 + 60_000).to_string(), "-1".into()];
    {
        let server = start();
        let mut c = Conn::connect(server.addr()).unwrap();
        text(&mut c, &["HSET", "h", "a", "1", "b", "2"]);
        text(&mut c, &["HPEXPIRE", "h", "60000", "FIELDS", "1", "a"]);
        for i in 0..600 {
            text(&mut c, &["HSET", "big", &format!("f{i}"), "v"]);
        }
        text(&mut c, &["HPEXPIRE", "big", "60000", "FIELDS", "1", "f1"]);
        assert!(text(&mut c, &["BGREWRITEAOF"]).starts_with('+'));
        support::eventually("the rewrite ends", || {
            let info = words(&mut c, &["INFO", "persistence"]).concat();
            info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0")
        });
    }
    let server = start();
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(
        words(&mut c, &["HPEXPIRETIME", "h", "FIELDS", "2", "a", "b"]),
        expected
    );
    assert_eq!(
        words(&mut c, &["HPEXPIRETIME", "big", "FIELDS", "2", "f1", "f2"]),
        expected
    );
    assert_eq!(words(&mut c, &["OBJECT", "ENCODING", "h"]), ["listpackex"]);
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
