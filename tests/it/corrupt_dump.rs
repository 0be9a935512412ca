//! Corrupt values, as Redis 7.0's `integration/corrupt-dump` tests feed them (issue 32): what
//! embedis-server logs when RESTORE refuses a payload or a start-up load meets a corrupt value,
//! and the keys of a file it skips. The replies themselves are compared with redis-server's in
//! `tests/diff/dump.txt`; these tests read the log, which the differential tests cannot.

use crate::support;
use embedis_rdb::{EntryMeta, RdbValue, RdbWriter, WriterOptions};
use std::path::Path;
use std::time::{Duration, Instant};
use support::{temp_dir, text, Conn, RedisServer};

const EMBEDIS: &str = env!("CARGO_BIN_EXE_embedis-server");

/// A hash ziplist whose first entry's length runs past its end (Redis's "hash with valid zip
/// list header, invalid entry len"), with a valid CRC.
const HASH_ZIPLIST_BAD_ENTRY: &[u8] = b"\x0D\x1B\x1B\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x02\x61\x00\x04\x02\x62\x00\x04\x14\x63\x00\x04\x02\x64\x00\xFF\x09\x00\xD9\x10\x54\x92\x15\xF5\x5F\x52";

/// A hash listpack `a b a d` (a repeated field), with a valid CRC.
const HASH_LISTPACK_DUP: &[u8] = b"\x10\x17\x17\x00\x00\x00\x04\x00\x82\x61\x00\x03\x82\x62\x00\x03\x82\x61\x00\x03\x82\x64\x00\x03\xff\x0a\x00\xc0\xcf\xa6\x87\xe5\xa7\xc5\xbe";

/// An empty zipmap hash.
const EMPTY_ZIPMAP: &[u8] = b"\x09\x02\x00\xFF\x09\x00\xC0\xF1\xB8\x67\x4C\x16\xAC\xE3";

/// embedis-server at verbose level, logging to `log`.
fn start_logging(test: &str, log: &Path) -> RedisServer {
    let log = log.to_str().unwrap();
    RedisServer::start_binary(
        EMBEDIS,
        test,
        &[
            "--enable-debug-command",
            "yes",
            "--compat-version",
            "7.0",
            "--loglevel",
            "verbose",
            "--logfile",
            log,
        ],
    )
}

fn restore(c: &mut Conn, key: &str, payload: &[u8]) -> String {
    support::lossy(&c.command(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", payload]))
}

/// Waits for `needle` in the log (the logger writes as it goes, but not under our lock).
fn log_has(log: &Path, needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) {
            return true;
        }
        if Instant::now() > deadline {
            eprintln!("log without {needle:?}:\n{text}");
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn restore_logs_the_check_that_refused_a_payload() {
    let dir = temp_dir("corrupt-dump-restore");
    let log = dir.join("embedis.log");
    let server = start_logging("corrupt-dump-restore", &log);
    let mut c = Conn::connect(server.addr()).unwrap();

    assert_eq!(
        restore(&mut c, "h", HASH_ZIPLIST_BAD_ENTRY),
        "-ERR Bad data format\r\n"
    );
    assert!(log_has(&log, "-> Hash ziplist integrity check failed."));

    assert_eq!(
        text(&mut c, &["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1"]),
        "+OK\r\n"
    );
    assert_eq!(
        restore(&mut c, "z", EMPTY_ZIPMAP),
        "-ERR Bad data format\r\n"
    );
    assert!(log_has(&log, "-> Zipmap integrity check failed."));

    // A repeated field: deep sanitization names the listpack check; without it Redis finds the
    // repetition converting the listpack (and panics), embedis refuses with that line.
    text(&mut c, &["CONFIG", "SET", "sanitize-dump-payload", "yes"]);
    assert_eq!(
        restore(&mut c, "d", HASH_LISTPACK_DUP),
        "-ERR Bad data format\r\n"
    );
    assert!(log_has(&log, "-> Hash listpack integrity check failed."));
    text(&mut c, &["CONFIG", "SET", "sanitize-dump-payload", "no"]);
    assert_eq!(
        restore(&mut c, "d", HASH_LISTPACK_DUP),
        "-ERR Bad data format\r\n"
    );
    assert!(log_has(&log, "-> listpack with dup elements"));
    assert_eq!(text(&mut c, &["DBSIZE"]), ":0\r\n");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes an RDB file of these keys into `dir` as `dump.rdb`.
fn write_file(dir: &Path, keys: &[(&str, RdbValue)]) {
    let file = std::fs::File::create(dir.join("dump.rdb")).unwrap();
    let mut w = RdbWriter::new(file, WriterOptions::default()).unwrap();
    w.select_db(0, keys.len() as u64, 0).unwrap();
    for (key, value) in keys {
        w.entry(key.as_bytes(), value, EntryMeta::default())
            .unwrap();
    }
    w.finish().unwrap();
}

/// A listpack of these elements, as Redis builds it.
fn listpack(items: &[&str]) -> Vec<u8> {
    embedis_rdb::encodings::listpack_encode(items)
}

#[test]
fn a_corrupt_value_stops_the_start_with_the_loaders_report() {
    let dir = temp_dir("corrupt-dump-file");
    let mut broken = listpack(&["field", "value"]);
    broken[6] = 0xfd; // the first entry's encoding: no listpack encoding starts so
    write_file(
        &dir,
        &[
            ("fine", RdbValue::String(b"v".to_vec())),
            ("broken", RdbValue::HashListpack(broken)),
        ],
    );
    let (exited_ok, output) = crate::persistence::run_binary(&dir, &["--compat-version", "7.0"]);
    assert!(!exited_ok, "the server must not start: {output}");
    // Redis's line, then its checker's report naming the key, then the end.
    assert_eq!(
        output
            .matches("Hash listpack integrity check failed.")
            .count(),
        2,
        "{output}"
    );
    assert!(output.contains("Reading key 'broken'"), "{output}");
    assert!(output.contains("[info] 1 keys read"), "{output}");
    assert_eq!(
        output
            .matches("Terminating server after rdb file reading failure.")
            .count(),
        1,
        "{output}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn empty_values_in_a_file_are_skipped_with_a_warning() {
    let dir = temp_dir("corrupt-dump-empty");
    write_file(
        &dir,
        &[
            ("set", RdbValue::Set(vec![])),
            ("hash_listpack", RdbValue::HashListpack(listpack(&[]))),
            ("list", RdbValue::List(vec![])),
            ("kept", RdbValue::String(b"v".to_vec())),
        ],
    );
    let log = dir.join("embedis.log");
    let log_arg = log.to_str().unwrap();
    let dir_arg = dir.to_str().unwrap();
    let server = RedisServer::start_binary(
        EMBEDIS,
        "corrupt-dump-empty",
        &[
            "--dir",
            dir_arg,
            "--logfile",
            log_arg,
            "--compat-version",
            "7.0",
        ],
    );
    let mut c = Conn::connect(server.addr()).unwrap();
    support::wait_loaded(&mut c);
    assert_eq!(text(&mut c, &["DBSIZE"]), ":1\r\n");
    for key in ["set", "hash_listpack", "list"] {
        assert!(log_has(
            &log,
            &format!("rdbLoadObject skipping empty key: {key}")
        ));
    }
    assert!(log_has(
        &log,
        "Done loading RDB, keys loaded: 1, keys expired: 0, empty keys skipped: 3."
    ));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stream of one node, master ID 1-1 and field `f`: its entries 1-1 `v1` and 1-2 `v2`, the
/// second one's closing element count wrong (9 where 4 belongs), declared as two entries.
fn stream_with_bad_second_entry() -> Vec<u8> {
    let node = listpack(&[
        "2", "0", "1", "f", "0", // live, deleted, master fields, terminator
        "2", "0", "0", "v1", "4", // same fields as the master, 1-1
        "2", "0", "1", "v2", "9", // 1-2, its count wrong
    ]);
    let id = |ms, seq| embedis_rdb::StreamId { ms, seq };
    let stream = embedis_rdb::RdbStream {
        nodes: vec![(id(1, 1), node)],
        length: 2,
        last_id: id(1, 2),
        first_id: id(1, 1),
        max_deleted_id: id(0, 0),
        entries_added: 2,
        groups: Vec::new(),
    };
    embedis_rdb::dump_payload(&RdbValue::Stream(Box::new(stream)))
}

/// A hash listpack `a 1 b 2` whose last entry's back length is broken, as a DUMP payload.
fn hash_with_broken_last_entry() -> Vec<u8> {
    let mut lp = listpack(&["a", "1", "b", "2"]);
    let last_backlen = lp.len() - 2;
    lp[last_backlen] = 0x7f;
    hash_listpack_payload(&lp)
}

/// A DUMP payload of a hash listpack blob (short: its length fits 6 bits), with its CRC.
fn hash_listpack_payload(lp: &[u8]) -> Vec<u8> {
    let mut payload = vec![embedis_rdb::types::HASH_LISTPACK, lp.len() as u8];
    payload.extend_from_slice(lp);
    payload.extend_from_slice(&[10, 0]); // RDB version 10
    let crc = embedis_rdb::crc64::crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

/// Under `sanitize-dump-payload no` (Redis 7.0's default) Redis takes a payload after a shallow
/// check and keeps its bytes; embedis builds its own structures, so it keeps what it can read
/// (the entries before the first malformed one) and logs why. Deep sanitization refuses both.
#[test]
fn restore_without_deep_sanitization_keeps_the_readable_part() {
    let dir = temp_dir("corrupt-dump-salvage");
    let log = dir.join("embedis.log");
    let server = start_logging("corrupt-dump-salvage", &log);
    let mut c = Conn::connect(server.addr()).unwrap();
    let (stream, hash) = (
        stream_with_bad_second_entry(),
        hash_with_broken_last_entry(),
    );

    text(&mut c, &["CONFIG", "SET", "sanitize-dump-payload", "yes"]);
    assert_eq!(restore(&mut c, "s", &stream), "-ERR Bad data format\r\n");
    assert_eq!(restore(&mut c, "h", &hash), "-ERR Bad data format\r\n");

    text(&mut c, &["CONFIG", "SET", "sanitize-dump-payload", "no"]);
    assert_eq!(restore(&mut c, "s", &stream), "+OK\r\n");
    assert_eq!(text(&mut c, &["XLEN", "s"]), ":1\r\n");
    assert_eq!(
        text(&mut c, &["XRANGE", "s", "-", "+"]),
        "*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$2\r\nv1\r\n"
    );
    // The stream goes on after what was kept.
    assert!(text(&mut c, &["XADD", "s", "*", "f", "v3"]).starts_with('$'));
    assert_eq!(text(&mut c, &["XLEN", "s"]), ":2\r\n");
    assert!(log_has(
        &log,
        "RESTORE kept the readable part of a payload that fails deep sanitization"
    ));

    assert_eq!(restore(&mut c, "h", &hash), "+OK\r\n");
    assert_eq!(
        text(&mut c, &["HGETALL", "h"]),
        "*2\r\n$1\r\na\r\n$1\r\n1\r\n"
    );
    // A payload that fails even the shallow check is refused either way.
    let mut torn = listpack(&["a", "1", "b", "2"]);
    torn[0] += 1; // the listpack's declared size
    let torn = hash_listpack_payload(&torn);
    assert_eq!(restore(&mut c, "t", &torn), "-ERR Bad data format\r\n");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
