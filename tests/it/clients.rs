//! A Rust application's view of embedis: the `redis` crate (synchronous and tokio-async) against
//! an in-process server, in RESP2 and in RESP3.
//!
//! The differential fixtures prove that embedis answers the same bytes as Redis; these tests prove
//! that a real client library, with its own connection handshake (HELLO 3, AUTH, SELECT, CLIENT
//! SETINFO), its own reply parser and its own error classification, works against those bytes
//! end to end: typed results, nulls, maps and verbatim strings in RESP3, pipelines, the scan
//! iterator, binary-safe values, error kinds, and a lock acquired and released the usual way.
//!
//! Every test runs once per protocol on a fresh embedis, and then the same way on a real
//! redis-server: the expectations written here are checked against Redis itself, so they cannot
//! drift into describing embedis's own behaviour. (Without redis-server that reference half is
//! skipped loudly, unless EMBEDIS_REQUIRE_REDIS=1.) The connection helper checks with CLIENT INFO
//! that the handshake really negotiated the protocol under test.

use crate::support;

use redis::{
    AsyncCommands, Commands, ErrorKind, ExistenceCheck, InfoDict, RedisError, SetExpiry,
    SetOptions, Value,
};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use support::RedisServer;

const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Resp2,
    Resp3,
}

const PROTOCOLS: [Protocol; 2] = [Protocol::Resp2, Protocol::Resp3];

impl Protocol {
    fn number(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }

    /// `base` (a `redis://…/` URL, optionally with a database number after the slash) with the
    /// crate's protocol query parameter.
    fn url(self, base: &str) -> String {
        match self {
            Protocol::Resp2 => base.to_string(),
            Protocol::Resp3 => format!("{base}?protocol=resp3"),
        }
    }
}

/// A fresh server under test: embedis, or the redis-server the expectations are checked against.
enum Target {
    Embedis(embedis::Server),
    Redis(RedisServer),
}

impl Target {
    /// Fresh servers for one run of a test: embedis, then Redis when it is installed.
    fn fresh(test: &str, password: Option<&str>) -> Vec<Target> {
        let mut builder = support::builder();
        if let Some(password) = password {
            builder = builder.password(password);
        }
        let mut targets = vec![Target::Embedis(builder.start().unwrap())];
        let extra: Vec<&str> = password.map_or(vec![], |p| vec!["--requirepass", p]);
        if let Some(redis) = RedisServer::start(test, &extra) {
            targets.push(Target::Redis(redis));
        }
        targets
    }

    fn port(&self) -> u16 {
        match self {
            Target::Embedis(server) => server.addr().port(),
            Target::Redis(server) => server.port,
        }
    }

    /// `redis://127.0.0.1:<port>/`: a database number may be appended.
    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port())
    }

    fn name(&self) -> &'static str {
        match self {
            Target::Embedis(_) => "embedis",
            Target::Redis(_) => "redis-server",
        }
    }
}

fn client(url: &str) -> redis::Client {
    redis::Client::open(url).expect("valid URL")
}

/// Connects to `url` and checks that the handshake negotiated `protocol`.
fn connect_url(url: &str, protocol: Protocol) -> redis::Connection {
    let mut con = client(url)
        .get_connection_with_timeout(TIMEOUT)
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"));
    con.set_read_timeout(Some(TIMEOUT)).unwrap();
    con.set_write_timeout(Some(TIMEOUT)).unwrap();
    let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut con).unwrap();
    assert_negotiated(&info, protocol);
    con
}

/// Checks CLIENT INFO's `resp=` field.
#[track_caller]
fn assert_negotiated(client_info: &str, protocol: Protocol) {
    let resp = client_info
        .split_whitespace()
        .find_map(|field| field.strip_prefix("resp="));
    assert_eq!(
        resp,
        Some(protocol.number().to_string().as_str()),
        "{client_info}"
    );
}

/// The error a connection attempt to `url` fails with.
#[track_caller]
fn connect_error(url: &str, why: &str) -> RedisError {
    match client(url).get_connection_with_timeout(TIMEOUT) {
        Ok(_) => panic!("connecting to {url} succeeded; expected a failure: {why}"),
        Err(e) => e,
    }
}

fn connect(target: &Target, protocol: Protocol) -> redis::Connection {
    connect_url(&protocol.url(&target.url()), protocol)
}

/// Runs `body` once per protocol and per target, each time on a fresh server.
fn each_protocol(test: &str, body: impl Fn(&Target, &mut redis::Connection, Protocol)) {
    for protocol in PROTOCOLS {
        for target in Target::fresh(test, None) {
            eprintln!("--- {test}: {} in {protocol:?}", target.name());
            let mut con = connect(&target, protocol);
            body(&target, &mut con, protocol);
        }
    }
}

/// Asserts that `result` failed with a server error of `kind` whose code and text are exactly
/// `code` and `detail`.
#[track_caller]
fn assert_server_error<T: std::fmt::Debug>(
    result: redis::RedisResult<T>,
    kind: ErrorKind,
    code: &str,
    detail: &str,
) {
    let err: RedisError = result.expect_err("an error reply");
    assert_eq!(err.kind(), kind, "{err:?}");
    assert_eq!(err.code(), Some(code), "{err:?}");
    assert_eq!(err.detail(), Some(detail), "{err:?}");
}

// ---------------------------------------------------------------------------------------------
// Strings
// ---------------------------------------------------------------------------------------------

#[test]
fn get_and_set_with_every_option() {
    each_protocol("get_and_set_with_every_option", |_, con, _| {
        assert_eq!(con.get::<_, Option<String>>("missing").unwrap(), None);
        assert_eq!(con.set::<_, _, Value>("k", "v1").unwrap(), Value::Okay);
        assert_eq!(con.get::<_, String>("k").unwrap(), "v1");

        let nx = SetOptions::default().conditional_set(ExistenceCheck::NX);
        let xx = SetOptions::default().conditional_set(ExistenceCheck::XX);
        assert_eq!(
            con.set_options::<_, _, Value>("k", "v2", nx).unwrap(),
            Value::Nil
        );
        assert_eq!(
            con.set_options::<_, _, Value>("new", "n", nx).unwrap(),
            Value::Okay
        );
        assert_eq!(
            con.set_options::<_, _, Value>("absent", "x", xx).unwrap(),
            Value::Nil
        );
        assert_eq!(
            con.set_options::<_, _, Value>("k", "v3", xx).unwrap(),
            Value::Okay
        );
        assert!(!con.exists::<_, bool>("absent").unwrap());

        // GET returns the previous value (nil when there was none), NX+GET is allowed in 7.0.
        let get = SetOptions::default().get(true);
        assert_eq!(
            con.set_options::<_, _, Option<String>>("k", "v4", get)
                .unwrap(),
            Some("v3".into())
        );
        assert_eq!(
            con.set_options::<_, _, Option<String>>("fresh", "f", get)
                .unwrap(),
            None
        );
        assert_eq!(
            con.set_options::<_, _, Option<String>>("k", "ignored", nx.get(true))
                .unwrap(),
            Some("v4".into())
        );
        assert_eq!(con.get::<_, String>("k").unwrap(), "v4");

        // Expirations: EX / PX set a TTL, KEEPTTL keeps it, a plain SET drops it.
        let ex = SetOptions::default().with_expiration(SetExpiry::EX(100));
        let _: () = con.set_options("t", "a", ex).unwrap();
        assert_eq!(con.ttl::<_, i64>("t").unwrap(), 100);
        let px = SetOptions::default().with_expiration(SetExpiry::PX(1500));
        let _: () = con.set_options("t", "b", px).unwrap();
        let pttl: i64 = con.pttl("t").unwrap();
        assert!((1..=1500).contains(&pttl), "PTTL {pttl}");
        let keep = SetOptions::default().with_expiration(SetExpiry::KEEPTTL);
        let _: () = con.set_options("t", "c", keep).unwrap();
        assert!(con.pttl::<_, i64>("t").unwrap() > 0);
        assert_eq!(con.get::<_, String>("t").unwrap(), "c");
        let _: () = con.set("t", "d").unwrap();
        assert_eq!(con.ttl::<_, i64>("t").unwrap(), -1);
        // An absolute deadline in the past: the write is accepted and the key is gone.
        let past = SetOptions::default().with_expiration(SetExpiry::PXAT(1));
        assert_eq!(
            con.set_options::<_, _, Value>("t", "e", past).unwrap(),
            Value::Okay
        );
        assert_eq!(con.get::<_, Option<String>>("t").unwrap(), None);

        // The short forms.
        assert!(con.set_nx::<_, _, bool>("nx", 1).unwrap());
        assert!(!con.set_nx::<_, _, bool>("nx", 2).unwrap());
        let _: () = con.set_ex("sx", "v", 50).unwrap();
        assert_eq!(con.ttl::<_, i64>("sx").unwrap(), 50);
        let _: () = con.pset_ex("px", "v", 50_000).unwrap();
        assert!(con.pttl::<_, i64>("px").unwrap() > 49_000);
        assert_eq!(
            con.getset::<_, _, Option<String>>("gs", "one").unwrap(),
            None
        );
        assert_eq!(
            con.getset::<_, _, Option<String>>("gs", "two").unwrap(),
            Some("one".into())
        );
        assert_eq!(
            con.get_del::<_, Option<String>>("gs").unwrap(),
            Some("two".into())
        );
        assert_eq!(con.get_del::<_, Option<String>>("gs").unwrap(), None);
        assert_eq!(
            con.get_ex::<_, String>("sx", redis::Expiry::PERSIST)
                .unwrap(),
            "v"
        );
        assert_eq!(con.ttl::<_, i64>("sx").unwrap(), -1);
        assert_eq!(con.strlen::<_, i64>("sx").unwrap(), 1);
        assert_eq!(con.strlen::<_, i64>("missing").unwrap(), 0);
    });
}

#[test]
fn mget_and_mset() {
    each_protocol("mget_and_mset", |_, con, _| {
        let _: () = con.mset(&[("a", "1"), ("b", "2"), ("c", "3")]).unwrap();
        let values: Vec<Option<String>> = con.mget(&["a", "missing", "c", "b"]).unwrap();
        assert_eq!(
            values,
            vec![Some("1".into()), None, Some("3".into()), Some("2".into())]
        );
        // The nil inside the array is RESP2's $-1 or RESP3's _: the crate gives Nil for both.
        let raw: Value = redis::cmd("MGET")
            .arg("a")
            .arg("missing")
            .query(con)
            .unwrap();
        assert_eq!(
            raw,
            Value::Array(vec![Value::BulkString(b"1".to_vec()), Value::Nil])
        );
        assert!(!con
            .mset_nx::<_, _, bool>(&[("a", "x"), ("d", "4")])
            .unwrap());
        assert!(!con.exists::<_, bool>("d").unwrap());
        assert!(con
            .mset_nx::<_, _, bool>(&[("d", "4"), ("e", "5")])
            .unwrap());
        let values: Vec<String> = con.mget(&["a", "d", "e"]).unwrap();
        assert_eq!(values, ["1", "4", "5"]);
        // MSET with an odd number of arguments.
        assert_server_error(
            redis::cmd("MSET").arg("a").arg(1).arg("b").query::<()>(con),
            ErrorKind::ResponseError,
            "ERR",
            "wrong number of arguments for 'mset' command",
        );
    });
}

#[test]
fn counters_integer_and_float() {
    each_protocol("counters_integer_and_float", |_, con, _| {
        assert_eq!(con.incr::<_, _, i64>("n", 1).unwrap(), 1);
        assert_eq!(redis::cmd("INCR").arg("n").query::<i64>(con).unwrap(), 2);
        assert_eq!(con.incr::<_, _, i64>("n", 40).unwrap(), 42);
        assert_eq!(con.decr::<_, _, i64>("n", 50).unwrap(), -8);
        assert_eq!(redis::cmd("DECR").arg("n").query::<i64>(con).unwrap(), -9);
        assert_eq!(con.get::<_, i64>("n").unwrap(), -9);
        assert_eq!(con.object_encoding::<_, String>("n").unwrap(), "int");

        let _: () = con.set("max", i64::MAX).unwrap();
        assert_server_error(
            con.incr::<_, _, i64>("max", 1),
            ErrorKind::ResponseError,
            "ERR",
            "increment or decrement would overflow",
        );
        let _: () = con.set("word", "abc").unwrap();
        assert_server_error(
            con.incr::<_, _, i64>("word", 1),
            ErrorKind::ResponseError,
            "ERR",
            "value is not an integer or out of range",
        );

        // INCRBYFLOAT is a bulk string in both protocols (not a RESP3 double).
        assert_eq!(con.incr::<_, _, f64>("price", 10.5).unwrap(), 10.5);
        assert_eq!(con.incr::<_, _, String>("price", 0.1).unwrap(), "10.6");
        let raw: Value = redis::cmd("INCRBYFLOAT")
            .arg("price")
            .arg("-0.6")
            .query(con)
            .unwrap();
        assert_eq!(raw, Value::BulkString(b"10".to_vec()));
        assert_eq!(con.object_encoding::<_, String>("price").unwrap(), "embstr");
        assert_server_error(
            con.incr::<_, _, f64>("word", 1.5),
            ErrorKind::ResponseError,
            "ERR",
            "value is not a valid float",
        );
        assert_server_error(
            redis::cmd("INCRBYFLOAT")
                .arg("price")
                .arg("inf")
                .query::<f64>(con),
            ErrorKind::ResponseError,
            "ERR",
            "increment would produce NaN or Infinity",
        );
    });
}

#[test]
fn append_getrange_setrange() {
    each_protocol("append_getrange_setrange", |_, con, _| {
        assert_eq!(con.append::<_, _, i64>("s", "Hello").unwrap(), 5);
        assert_eq!(con.append::<_, _, i64>("s", ", World").unwrap(), 12);
        assert_eq!(con.getrange::<_, String>("s", 0, 4).unwrap(), "Hello");
        assert_eq!(con.getrange::<_, String>("s", -5, -1).unwrap(), "World");
        assert_eq!(con.getrange::<_, String>("s", 5, 1).unwrap(), "");
        assert_eq!(
            con.getrange::<_, String>("s", 0, 1000).unwrap(),
            "Hello, World"
        );
        assert_eq!(con.getrange::<_, String>("missing", 0, -1).unwrap(), "");
        assert_eq!(con.setrange::<_, _, i64>("s", 7, "Redis").unwrap(), 12);
        assert_eq!(con.get::<_, String>("s").unwrap(), "Hello, Redis");
        // Past the end of a missing key: zero padding.
        assert_eq!(con.setrange::<_, _, i64>("pad", 3, "abc").unwrap(), 6);
        assert_eq!(con.get::<_, Vec<u8>>("pad").unwrap(), b"\0\0\0abc");
        assert_eq!(con.object_encoding::<_, String>("pad").unwrap(), "raw");
        assert_server_error(
            con.setrange::<_, _, i64>("pad", -1, "x"),
            ErrorKind::ResponseError,
            "ERR",
            "offset is out of range",
        );
    });
}

#[test]
fn bit_operations() {
    each_protocol("bit_operations", |_, con, _| {
        assert!(!con.setbit::<_, bool>("b", 7, true).unwrap());
        assert!(con.setbit::<_, bool>("b", 7, true).unwrap());
        assert!(!con.setbit::<_, bool>("b", 9, true).unwrap());
        assert!(con.getbit::<_, bool>("b", 7).unwrap());
        assert!(!con.getbit::<_, bool>("b", 8).unwrap());
        assert!(!con.getbit::<_, bool>("b", 1_000_000).unwrap());
        assert_eq!(con.get::<_, Vec<u8>>("b").unwrap(), [0x01, 0x40]);
        assert_eq!(con.bitcount::<_, i64>("b").unwrap(), 2);
        assert_eq!(con.bitcount_range::<_, i64>("b", 1, 1).unwrap(), 1);
        let bits_0_to_7: i64 = redis::cmd("BITCOUNT")
            .arg("b")
            .arg(0)
            .arg(7)
            .arg("BIT")
            .query(con)
            .unwrap();
        assert_eq!(bits_0_to_7, 1);
        let first_set: i64 = redis::cmd("BITPOS").arg("b").arg(1).query(con).unwrap();
        assert_eq!(first_set, 7);
        let first_clear: i64 = redis::cmd("BITPOS").arg("b").arg(0).query(con).unwrap();
        assert_eq!(first_clear, 0);

        let _: () = con.set("x", b"\xf0\x0f".as_slice()).unwrap();
        assert_eq!(con.bit_and::<_, _, i64>("and", &["b", "x"]).unwrap(), 2);
        assert_eq!(con.get::<_, Vec<u8>>("and").unwrap(), [0x00, 0x00]);
        assert_eq!(con.bit_or::<_, _, i64>("or", &["b", "x"]).unwrap(), 2);
        assert_eq!(con.get::<_, Vec<u8>>("or").unwrap(), [0xf1, 0x4f]);
        assert_eq!(con.bit_xor::<_, _, i64>("xor", &["b", "x"]).unwrap(), 2);
        assert_eq!(con.get::<_, Vec<u8>>("xor").unwrap(), [0xf1, 0x4f]);
        assert_eq!(con.bit_not::<_, _, i64>("not", "x").unwrap(), 2);
        assert_eq!(con.get::<_, Vec<u8>>("not").unwrap(), [0x0f, 0xf0]);
        assert_server_error(
            redis::cmd("SETBIT")
                .arg("b")
                .arg(0)
                .arg(2)
                .query::<i64>(con),
            ErrorKind::ResponseError,
            "ERR",
            "bit is not an integer or out of range",
        );
    });
}

// ---------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------

#[test]
fn generic_key_commands() {
    each_protocol("generic_key_commands", |_, con, _| {
        let _: () = con.mset(&[("a", "1"), ("b", "two"), ("c", "3")]).unwrap();
        assert_eq!(
            con.exists::<_, i64>(&["a", "b", "missing", "a"]).unwrap(),
            3
        );
        assert_eq!(con.del::<_, i64>(&["a", "missing"]).unwrap(), 1);
        assert!(!con.exists::<_, bool>("a").unwrap());

        assert_eq!(con.key_type::<_, String>("b").unwrap(), "string");
        assert_eq!(con.key_type::<_, String>("missing").unwrap(), "none");
        assert_eq!(con.object_encoding::<_, String>("c").unwrap(), "int");
        assert_eq!(con.object_encoding::<_, String>("b").unwrap(), "embstr");
        let _: () = con.set("long", "x".repeat(45)).unwrap();
        assert_eq!(con.object_encoding::<_, String>("long").unwrap(), "raw");
        assert_eq!(
            con.object_encoding::<_, Option<String>>("missing").unwrap(),
            None
        );

        // TTLs.
        assert_eq!(con.ttl::<_, i64>("missing").unwrap(), -2);
        assert_eq!(con.ttl::<_, i64>("b").unwrap(), -1);
        assert!(con.expire::<_, bool>("b", 100).unwrap());
        assert_eq!(con.ttl::<_, i64>("b").unwrap(), 100);
        let pttl: i64 = con.pttl("b").unwrap();
        assert!((99_000..=100_000).contains(&pttl), "PTTL {pttl}");
        assert!(con.pexpire::<_, bool>("b", 5_000).unwrap());
        assert_eq!(con.ttl::<_, i64>("b").unwrap(), 5);
        assert!(con.persist::<_, bool>("b").unwrap());
        assert!(!con.persist::<_, bool>("b").unwrap());
        assert_eq!(con.ttl::<_, i64>("b").unwrap(), -1);
        assert!(!con.expire::<_, bool>("missing", 100).unwrap());
        let nx: bool = redis::cmd("EXPIRE")
            .arg("b")
            .arg(10)
            .arg("NX")
            .query(con)
            .unwrap();
        assert!(nx);
        let nx_again: bool = redis::cmd("EXPIRE")
            .arg("b")
            .arg(20)
            .arg("NX")
            .query(con)
            .unwrap();
        assert!(!nx_again);

        // RENAME keeps the value and the TTL.
        let _: () = con.rename("b", "renamed").unwrap();
        assert!(!con.exists::<_, bool>("b").unwrap());
        assert_eq!(con.get::<_, String>("renamed").unwrap(), "two");
        assert_eq!(con.ttl::<_, i64>("renamed").unwrap(), 10);
        assert_server_error(
            con.rename::<_, _, ()>("missing", "x"),
            ErrorKind::ResponseError,
            "ERR",
            "no such key",
        );
        assert!(!con.rename_nx::<_, _, bool>("renamed", "c").unwrap());
        assert!(con.rename_nx::<_, _, bool>("renamed", "d").unwrap());

        let mut keys: Vec<String> = con.keys("*").unwrap();
        keys.sort();
        assert_eq!(keys, ["c", "d", "long"]);
        let keys: Vec<String> = con.keys("l?ng").unwrap();
        assert_eq!(keys, ["long"]);
        assert!(con.keys::<_, Vec<String>>("nomatch*").unwrap().is_empty());
    });
}

#[test]
fn scan_iterator_walks_every_key_once() {
    each_protocol("scan_iterator_walks_every_key_once", |_, con, _| {
        let pairs: Vec<(String, usize)> = (0..1000).map(|i| (format!("key:{i}"), i)).collect();
        for chunk in pairs.chunks(250) {
            let _: () = con.mset(chunk).unwrap();
        }
        let _: () = con.set("other", 1).unwrap();

        let seen: Vec<String> = con.scan().unwrap().collect();
        let unique: HashSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), 1001);
        assert!(unique.contains(&"other".to_string()));

        // "key:1*" = key:1, key:10..19, key:100..199.
        let matched: HashSet<String> = con.scan_match("key:1*").unwrap().collect();
        assert_eq!(matched.len(), 111);
        let keys: HashSet<String> = con.keys("key:1*").unwrap();
        assert_eq!(matched, keys);

        let none: Vec<String> = con.scan_match("nomatch:*").unwrap().collect();
        assert!(none.is_empty());
    });
}

// ---------------------------------------------------------------------------------------------
// Connection and server
// ---------------------------------------------------------------------------------------------

#[test]
fn ping_echo_select_and_client_name() {
    each_protocol(
        "ping_echo_select_and_client_name",
        |target, con, protocol| {
            assert_eq!(redis::cmd("PING").query::<String>(con).unwrap(), "PONG");
            assert_eq!(
                redis::cmd("PING").arg("hi").query::<String>(con).unwrap(),
                "hi"
            );
            let echoed: Vec<u8> = redis::cmd("ECHO").arg(b"a\0b\r\n").query(con).unwrap();
            assert_eq!(echoed, b"a\0b\r\n");

            // Databases: the URL's path selects one during the handshake, SELECT switches.
            let _: () = con.set("where", "db0").unwrap();
            let mut db3 = connect_url(&protocol.url(&format!("{}3", target.url())), protocol);
            assert_eq!(db3.get::<_, Option<String>>("where").unwrap(), None);
            let _: () = db3.set("where", "db3").unwrap();
            let _: () = redis::cmd("SELECT").arg(3).query(con).unwrap();
            assert_eq!(con.get::<_, String>("where").unwrap(), "db3");
            let _: () = redis::cmd("SELECT").arg(0).query(con).unwrap();
            assert_eq!(con.get::<_, String>("where").unwrap(), "db0");
            assert_server_error(
                redis::cmd("SELECT").arg(16).query::<()>(con),
                ErrorKind::ResponseError,
                "ERR",
                "DB index is out of range",
            );
            // A URL naming a database that does not exist fails the handshake.
            let err = connect_error(
                &protocol.url(&format!("{}16", target.url())),
                "database 16 does not exist",
            );
            assert_eq!(err.kind(), ErrorKind::ResponseError, "{err:?}");

            assert_eq!(con.client_getname::<Option<String>>().unwrap(), None);
            let _: () = con.client_setname("worker-1").unwrap();
            assert_eq!(
                con.client_getname::<Option<String>>().unwrap(),
                Some("worker-1".into())
            );
            assert_server_error(
                con.client_setname::<_, ()>("has space"),
                ErrorKind::ResponseError,
                "ERR",
                "Client names cannot contain spaces, newlines or special characters.",
            );
            let list: String = redis::cmd("CLIENT").arg("LIST").query(con).unwrap();
            assert!(list.contains(" name=worker-1 "), "{list}");
            // The crate announces itself with CLIENT SETINFO during the handshake; Redis 7.0
            // (and embedis as 7.0) refuses it, the crate ignores the refusal, and CLIENT LIST
            // has no lib-name field before 7.2 (tests/it/server_commands.rs has 7.2's).
            assert!(!list.contains("lib-name="), "{list}");
        },
    );
}

#[test]
fn hello_reports_the_negotiated_protocol() {
    each_protocol(
        "hello_reports_the_negotiated_protocol",
        |_, con, protocol| {
            let raw: Value = redis::cmd("HELLO").query(con).unwrap();
            match protocol {
                Protocol::Resp2 => assert!(matches!(raw, Value::Array(ref a) if a.len() == 14)),
                Protocol::Resp3 => assert!(matches!(raw, Value::Map(ref m) if m.len() == 7)),
            }
            let hello: HashMap<String, Value> =
                redis::FromRedisValue::from_redis_value(&raw).unwrap();
            assert_eq!(
                hello["server"],
                Value::BulkString(b"redis".to_vec()),
                "{hello:?}"
            );
            assert_eq!(hello["version"], Value::BulkString(b"7.0.15".to_vec()));
            assert_eq!(hello["proto"], Value::Int(protocol.number()));
            assert_eq!(hello["mode"], Value::BulkString(b"standalone".to_vec()));
            assert_eq!(hello["role"], Value::BulkString(b"master".to_vec()));
            assert_eq!(hello["modules"], Value::Array(vec![]));
            let id: i64 = redis::cmd("CLIENT").arg("ID").query(con).unwrap();
            assert_eq!(hello["id"], Value::Int(id));

            assert_server_error(
                redis::cmd("HELLO").arg(4).query::<Value>(con),
                ErrorKind::ExtensionError,
                "NOPROTO",
                "unsupported protocol version",
            );
            // Still usable, still in its protocol.
            let again: HashMap<String, Value> = redis::cmd("HELLO").query(con).unwrap();
            assert_eq!(again["proto"], Value::Int(protocol.number()));
        },
    );
}

#[test]
fn info_config_dbsize_flushall() {
    each_protocol("info_config_dbsize_flushall", |target, con, protocol| {
        let _: () = con.set("a", 1).unwrap();
        let _: () = con.set_ex("b", 2, 100).unwrap();
        let info: InfoDict = redis::cmd("INFO").query(con).unwrap();
        assert_eq!(
            info.get::<String>("redis_version").as_deref(),
            Some("7.0.15")
        );
        assert_eq!(info.get::<u16>("tcp_port"), Some(target.port()));
        assert_eq!(
            info.get::<String>("redis_mode").as_deref(),
            Some("standalone")
        );
        assert!(info.get::<i64>("connected_clients").unwrap() >= 1);
        let db0 = info.get::<String>("db0").expect("keyspace line for db0");
        assert!(db0.starts_with("keys=2,expires=1,avg_ttl="), "{db0}");
        assert_eq!(info.get::<String>("db1"), None);
        // RESP3 carries INFO as a verbatim string of format txt, RESP2 as a bulk string.
        let raw: Value = redis::cmd("INFO").arg("server").query(con).unwrap();
        match (protocol, raw) {
            (Protocol::Resp2, Value::BulkString(text)) => {
                assert!(text.starts_with(b"# Server\r\n"))
            }
            (Protocol::Resp3, Value::VerbatimString { format, text }) => {
                assert_eq!(format, redis::VerbatimFormat::Text);
                assert!(text.starts_with("# Server\r\n"));
            }
            (_, other) => panic!("INFO in {protocol:?}: {other:?}"),
        }

        // CONFIG GET is a map in RESP3 and a flat array in RESP2; the crate maps both.
        let raw: Value = redis::cmd("CONFIG")
            .arg("GET")
            .arg("databases")
            .query(con)
            .unwrap();
        let expected_pair = (
            Value::BulkString(b"databases".to_vec()),
            Value::BulkString(b"16".to_vec()),
        );
        match protocol {
            Protocol::Resp2 => {
                assert_eq!(raw, Value::Array(vec![expected_pair.0, expected_pair.1]))
            }
            Protocol::Resp3 => assert_eq!(raw, Value::Map(vec![expected_pair])),
        }
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("timeout")
            .arg(30)
            .arg("hz")
            .arg(50)
            .query(con)
            .unwrap();
        let config: HashMap<String, String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("timeout")
            .arg("hz")
            .arg("nosuch")
            .query(con)
            .unwrap();
        assert_eq!(
            config,
            HashMap::from([("timeout".into(), "30".into()), ("hz".into(), "50".into())])
        );
        assert_server_error(
            redis::cmd("CONFIG")
                .arg("SET")
                .arg("nosuch")
                .arg(1)
                .query::<()>(con),
            ErrorKind::ResponseError,
            "ERR",
            "Unknown option or number of arguments for CONFIG SET - 'nosuch'",
        );
        assert_server_error(
            redis::cmd("CONFIG")
                .arg("SET")
                .arg("hz")
                .arg("fast")
                .query::<()>(con),
            ErrorKind::ResponseError,
            "ERR",
            "CONFIG SET failed (possibly related to argument 'hz') - argument couldn't be parsed \
             into an integer",
        );

        assert_eq!(redis::cmd("DBSIZE").query::<i64>(con).unwrap(), 2);
        let _: () = redis::cmd("SELECT").arg(5).query(con).unwrap();
        let _: () = con.set("c", 3).unwrap();
        assert_eq!(redis::cmd("DBSIZE").query::<i64>(con).unwrap(), 1);
        assert_eq!(
            redis::cmd("FLUSHALL").query::<Value>(con).unwrap(),
            Value::Okay
        );
        assert_eq!(redis::cmd("DBSIZE").query::<i64>(con).unwrap(), 0);
        let _: () = redis::cmd("SELECT").arg(0).query(con).unwrap();
        assert_eq!(redis::cmd("DBSIZE").query::<i64>(con).unwrap(), 0);
        let info: InfoDict = redis::cmd("INFO").arg("keyspace").query(con).unwrap();
        assert_eq!(info.get::<String>("db0"), None);
    });
}

// ---------------------------------------------------------------------------------------------
// Pipelines and the async client
// ---------------------------------------------------------------------------------------------

#[test]
fn pipelines_answer_in_order() {
    each_protocol("pipelines_answer_in_order", |_, con, _| {
        let (set, incr, got, values, missing): (
            Value,
            i64,
            String,
            Vec<Option<String>>,
            Option<String>,
        ) = redis::pipe()
            .set("p", "v")
            .incr("counter", 5)
            .get("p")
            .set("ignored", 1)
            .ignore()
            .mget(&["p", "nope", "ignored"])
            .get("nope")
            .query(con)
            .unwrap();
        assert_eq!(set, Value::Okay);
        assert_eq!(incr, 5);
        assert_eq!(got, "v");
        assert_eq!(values, vec![Some("v".into()), None, Some("1".into())]);
        assert_eq!(missing, None);

        // A thousand commands in one round trip.
        let mut pipe = redis::pipe();
        for i in 0..1000 {
            pipe.incr("counter", 1).set(format!("k{i}"), i).ignore();
        }
        let counts: Vec<i64> = pipe.query(con).unwrap();
        assert_eq!(counts, (6..1006).collect::<Vec<i64>>());
        assert_eq!(redis::cmd("DBSIZE").query::<i64>(con).unwrap(), 1003);

        // An error reply inside a pipeline fails the whole query, but every command ran and
        // the connection stays in step.
        let _: () = con.set("word", "abc").unwrap();
        let result: redis::RedisResult<(i64, i64, i64)> = redis::pipe()
            .incr("a", 1)
            .incr("word", 1)
            .incr("b", 1)
            .query(con);
        assert_server_error(
            result,
            ErrorKind::ResponseError,
            "ERR",
            "value is not an integer or out of range",
        );
        let after: Vec<i64> = con.mget(&["a", "b"]).unwrap();
        assert_eq!(after, [1, 1]);
        assert_eq!(redis::cmd("PING").query::<String>(con).unwrap(), "PONG");
    });
}

#[test]
fn async_client_with_concurrent_tasks() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (protocol, target) in PROTOCOLS.into_iter().flat_map(|protocol| {
        Target::fresh("async_client_with_concurrent_tasks", None)
            .into_iter()
            .map(move |target| (protocol, target))
    }) {
        eprintln!("--- {} in {protocol:?}", target.name());
        let url = protocol.url(&target.url());
        runtime.block_on(async move {
            let client = client(&url);
            let mut con = client
                .get_multiplexed_async_connection()
                .await
                .expect("async connect");
            let info: String = redis::cmd("CLIENT")
                .arg("INFO")
                .query_async(&mut con)
                .await
                .unwrap();
            assert_negotiated(&info, protocol);

            let _: () = con.set("a", "1").await.unwrap();
            assert_eq!(con.get::<_, String>("a").await.unwrap(), "1");
            assert_eq!(con.get::<_, Option<String>>("nope").await.unwrap(), None);

            // 20 tasks share the multiplexed connection, 5 more use their own.
            let mut tasks = Vec::new();
            for t in 0..25 {
                let mut con = if t < 20 {
                    con.clone()
                } else {
                    client.get_multiplexed_async_connection().await.unwrap()
                };
                tasks.push(tokio::spawn(async move {
                    for i in 0..40 {
                        let _: i64 = con.incr("shared", 1).await.unwrap();
                        let _: () = con.set(format!("t{t}:{i}"), i).await.unwrap();
                    }
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
            assert_eq!(con.get::<_, i64>("shared").await.unwrap(), 1000);
            let size: i64 = redis::cmd("DBSIZE").query_async(&mut con).await.unwrap();
            assert_eq!(size, 1002);

            let (x, y): (i64, Option<String>) = redis::pipe()
                .incr("x", 7)
                .get("nope")
                .query_async(&mut con)
                .await
                .unwrap();
            assert_eq!((x, y), (7, None));

            // INCRBYFLOAT on a string holding an integer.
            assert_eq!(con.incr::<_, _, f64>("a", 0.5f64).await.unwrap(), 1.5);
            let _: () = con.set("word", "abc").await.unwrap();
            assert_server_error(
                con.incr::<_, _, i64>("word", 1).await,
                ErrorKind::ResponseError,
                "ERR",
                "value is not an integer or out of range",
            );

            let mut keys: Vec<String> = Vec::new();
            {
                let mut iter = con.scan_match::<_, String>("t1:*").await.unwrap();
                while let Some(key) = iter.next_item().await {
                    keys.push(key);
                }
            }
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), 40);
            // t1:0..t1:39 but not t10:… — the pattern's colon comes right after "t1".
            assert!(keys.iter().all(|k| k.starts_with("t1:")));
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Errors and authentication
// ---------------------------------------------------------------------------------------------

#[test]
fn error_replies_surface_as_the_crates_error_kinds() {
    each_protocol(
        "error_replies_surface_as_the_crates_error_kinds",
        |_, con, _| {
            assert_server_error(
                redis::cmd("SET")
                    .arg("k")
                    .arg("v")
                    .arg("NX")
                    .arg("XX")
                    .query::<()>(con),
                ErrorKind::ResponseError,
                "ERR",
                "syntax error",
            );
            assert_server_error(
                redis::cmd("EXPIRE").arg("k").arg("soon").query::<i64>(con),
                ErrorKind::ResponseError,
                "ERR",
                "value is not an integer or out of range",
            );
            assert_server_error(
                redis::cmd("GET").query::<()>(con),
                ErrorKind::ResponseError,
                "ERR",
                "wrong number of arguments for 'get' command",
            );
            assert_server_error(
                redis::cmd("NOSUCH").arg("a").query::<()>(con),
                ErrorKind::ResponseError,
                "ERR",
                "unknown command 'NOSUCH', with args beginning with: 'a' ",
            );
            assert_server_error(
                redis::cmd("SET")
                    .arg("k")
                    .arg("v")
                    .arg("EX")
                    .arg(0)
                    .query::<()>(con),
                ErrorKind::ResponseError,
                "ERR",
                "invalid expire time in 'set' command",
            );
            // The connection is still fine after errors.
            assert_eq!(redis::cmd("PING").query::<String>(con).unwrap(), "PONG");
        },
    );
}

#[test]
fn authentication_through_the_url() {
    for (protocol, target) in PROTOCOLS.into_iter().flat_map(|protocol| {
        Target::fresh("authentication_through_the_url", Some("s3cret"))
            .into_iter()
            .map(move |target| (protocol, target))
    }) {
        eprintln!("--- {} in {protocol:?}", target.name());
        let port = target.port();

        // Password only (AUTH <password> or HELLO 3 AUTH default <password>), and user + password.
        for url in [
            format!("redis://:s3cret@127.0.0.1:{port}/"),
            format!("redis://default:s3cret@127.0.0.1:{port}/"),
        ] {
            let mut con = connect_url(&protocol.url(&url), protocol);
            let _: () = con.set("k", "v").unwrap();
            assert_eq!(con.get::<_, String>("k").unwrap(), "v");
        }
        // With a database too: AUTH comes before SELECT in the handshake.
        let mut con = connect_url(
            &protocol.url(&format!("redis://:s3cret@127.0.0.1:{port}/2")),
            protocol,
        );
        assert_eq!(con.get::<_, Option<String>>("k").unwrap(), None);

        // A wrong password fails the handshake.
        let err = connect_error(
            &protocol.url(&format!("redis://:wrong@127.0.0.1:{port}/")),
            "wrong password",
        );
        match protocol {
            // The crate reports a failed AUTH as its own kind and keeps no server detail.
            Protocol::Resp2 => assert_eq!(err.kind(), ErrorKind::AuthenticationFailed, "{err:?}"),
            // HELLO 3 AUTH's error is passed on as the server sent it.
            Protocol::Resp3 => {
                assert_eq!(err.kind(), ErrorKind::ExtensionError, "{err:?}");
                assert_eq!(err.code(), Some("WRONGPASS"));
                assert_eq!(
                    err.detail(),
                    Some("invalid username-password pair or user is disabled.")
                );
            }
        }

        // No password: RESP2 connects (nothing to send) and then gets NOAUTH for every command;
        // RESP3's HELLO 3 is itself refused.
        let url = protocol.url(&format!("redis://127.0.0.1:{port}/"));
        match protocol {
            Protocol::Resp2 => {
                let mut con = client(&url).get_connection_with_timeout(TIMEOUT).unwrap();
                assert_server_error(
                    con.get::<_, Option<String>>("k"),
                    ErrorKind::ExtensionError,
                    "NOAUTH",
                    "Authentication required.",
                );
                // AUTH on the open connection then lets it in.
                let _: () = redis::cmd("AUTH").arg("s3cret").query(&mut con).unwrap();
                assert_eq!(con.get::<_, String>("k").unwrap(), "v");
            }
            Protocol::Resp3 => {
                let err = connect_error(&url, "HELLO 3 without AUTH");
                assert_eq!(err.kind(), ErrorKind::ExtensionError, "{err:?}");
                assert_eq!(err.code(), Some("NOAUTH"));
                assert_eq!(
                    err.detail(),
                    Some(
                        "HELLO must be called with the client already authenticated, otherwise \
                         the HELLO AUTH <user> <pass> option can be used to authenticate \
                         the client and select the RESP protocol version at the same time"
                    )
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Binary data and a lock
// ---------------------------------------------------------------------------------------------

#[test]
fn binary_keys_and_values_round_trip() {
    each_protocol("binary_keys_and_values_round_trip", |_, con, _| {
        let all_bytes: Vec<u8> = (0..=255u8).chain(*b"\r\n\0\r\n").collect();
        let key: &[u8] = b"bin\0key\r\n";
        let _: () = con.set(key, &all_bytes).unwrap();
        assert_eq!(con.get::<_, Vec<u8>>(key).unwrap(), all_bytes);
        assert_eq!(con.strlen::<_, usize>(key).unwrap(), 261);
        assert_eq!(con.getrange::<_, Vec<u8>>(key, 0, 2).unwrap(), [0, 1, 2]);
        assert_eq!(
            con.getrange::<_, Vec<u8>>(key, -5, -1).unwrap(),
            b"\r\n\0\r\n"
        );
        assert_eq!(con.append::<_, _, usize>(key, b"\0").unwrap(), 262);

        let _: () = con.set(b"\r\n".as_slice(), b"".as_slice()).unwrap();
        let values: Vec<Option<Vec<u8>>> = con
            .mget(&[b"\r\n".as_slice(), b"\0".as_slice(), key])
            .unwrap();
        assert_eq!(values[0].as_deref(), Some(b"".as_slice()));
        assert_eq!(values[1], None);
        assert_eq!(values[2].as_ref().map(Vec::len), Some(262));
        assert_eq!(con.exists::<_, i64>(b"\r\n".as_slice()).unwrap(), 1);
        assert_eq!(con.strlen::<_, i64>(b"\r\n".as_slice()).unwrap(), 0);

        let mut keys: Vec<Vec<u8>> = con.keys("*").unwrap();
        keys.sort();
        assert_eq!(keys, [b"\r\n".to_vec(), key.to_vec()]);
        let scanned: HashSet<Vec<u8>> = con.scan_match(b"bin\0*".as_slice()).unwrap().collect();
        assert_eq!(scanned, HashSet::from([key.to_vec()]));
        let _: () = con.rename(key, b"\0").unwrap();
        assert_eq!(con.get::<_, Vec<u8>>(b"\0").unwrap().len(), 262);
    });
}

#[test]
fn lock_acquire_contend_and_release() {
    each_protocol(
        "lock_acquire_contend_and_release",
        |target, con, protocol| {
            let acquire = |con: &mut redis::Connection, token: &str| -> bool {
                let reply: Value = con
                    .set_options(
                        "lock:orders",
                        token,
                        SetOptions::default()
                            .conditional_set(ExistenceCheck::NX)
                            .with_expiration(SetExpiry::PX(30_000)),
                    )
                    .unwrap();
                match reply {
                    Value::Okay => true,
                    Value::Nil => false,
                    other => panic!("SET NX PX replied {other:?}"),
                }
            };
            // Compare-and-delete done client-side (no scripting yet): release only our own lock.
            let release = |con: &mut redis::Connection, token: &str| -> bool {
                let holder: Option<String> = con.get("lock:orders").unwrap();
                if holder.as_deref() == Some(token) {
                    con.del::<_, i64>("lock:orders").unwrap() == 1
                } else {
                    false
                }
            };

            let mut other = connect(target, protocol);

            assert!(acquire(con, "token-42"));
            assert!(!acquire(&mut other, "token-43"), "the lock is held");
            let pttl: i64 = other.pttl("lock:orders").unwrap();
            assert!((29_000..=30_000).contains(&pttl), "PTTL {pttl}");
            assert_eq!(other.get::<_, String>("lock:orders").unwrap(), "token-42");
            assert!(!release(&mut other, "token-43"), "not the holder");
            assert!(con.exists::<_, bool>("lock:orders").unwrap());
            assert!(release(con, "token-42"));
            assert!(!con.exists::<_, bool>("lock:orders").unwrap());
            assert!(acquire(&mut other, "token-43"), "free again");
            assert!(!release(con, "token-42"));
            assert!(release(&mut other, "token-43"));
        },
    );
}
