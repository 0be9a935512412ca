//! A command-level harness for unit tests: an engine on a manual clock with one connected
//! client, running commands through the real executor (gates, statistics, lazy expiry) without
//! sockets. Keys can also be arranged directly in the keyspace so that a family's tests do not
//! depend on another family's commands.

use bytes::{Bytes, BytesMut};
use embedis_protocol::{decode_value, Value as Reply};
use std::time::Duration;

use crate::base::clock::Clock;
use crate::base::config::Config;
use crate::base::log::Logger;
use crate::base::value::Value;
use crate::engine::Engine;
use crate::model::client::{ClientId, Peer};

pub struct Harness {
    pub engine: Engine,
    pub clock: Clock,
    id: ClientId,
    /// The harness's own `dir`, so that SAVE or DEBUG RELOAD in a test never writes into the
    /// working directory (the repository); removed with the harness.
    dir: std::path::PathBuf,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh directory under the system's temporary one, unique to this process and harness.
fn own_dir() -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("embedis-harness-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

impl Harness {
    /// An engine of the newest version (every command there is), on a manual clock.
    pub fn new() -> Harness {
        Harness::as_version(crate::base::compat::CompatVersion::NEWEST)
    }

    /// An engine that is the Redis `version` names, on a manual clock.
    pub fn as_version(version: crate::base::compat::CompatVersion) -> Harness {
        let clock = Clock::manual();
        let dir = own_dir();
        let config = Config {
            compat_version: version,
            dir: dir.display().to_string(),
            ..Config::default()
        };
        let mut engine = Engine::new(config, clock.clone(), Logger::silent(), Some(7));
        let addr = "127.0.0.1:40000".parse().unwrap();
        let local = "127.0.0.1:6379".parse().unwrap();
        let id = engine.connect(Peer::Tcp { addr, local }, -1).unwrap().id;
        Harness {
            engine,
            clock,
            id,
            dir,
        }
    }

    /// Runs a command given as space-separated words (`""` for an empty word) and decodes the
    /// reply.
    pub fn run(&mut self, line: &str) -> Reply {
        let raw = self.run_raw(line);
        let raw = Bytes::from(raw);
        let (reply, used) = decode_value(&raw).unwrap().expect("a whole reply");
        assert_eq!(used, raw.len(), "exactly one reply");
        reply
    }

    /// Runs a command given as its arguments (binary ones included) and decodes the reply.
    pub fn run_args(&mut self, args: &[&[u8]]) -> Reply {
        let raw = Bytes::from(self.run_args_raw(args));
        let (reply, used) = decode_value(&raw).unwrap().expect("a whole reply");
        assert_eq!(used, raw.len(), "exactly one reply");
        reply
    }

    /// Runs a command and returns the reply bytes as text.
    pub fn run_text(&mut self, line: &str) -> String {
        String::from_utf8_lossy(&self.run_raw(line)).into_owned()
    }

    fn run_raw(&mut self, line: &str) -> Vec<u8> {
        let args: Vec<&[u8]> = line
            .split(' ')
            .map(|w| if w == "\"\"" { &b""[..] } else { w.as_bytes() })
            .collect();
        self.run_args_raw(&args)
    }

    fn run_args_raw(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let mut out = BytesMut::new();
        self.engine.execute(self.id, args, &mut out);
        out.to_vec()
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn advance_ms(&self, ms: u64) {
        self.clock.advance(Duration::from_millis(ms));
    }

    /// Adds a string key to database `db`, with a TTL of `ttl_ms` if given.
    pub fn add(&mut self, db: usize, key: &str, ttl_ms: Option<i64>) {
        let now = self.now();
        let ks = &mut self.engine.ks;
        ks.delete(db, key.as_bytes(), now);
        ks.add(
            db,
            key.as_bytes(),
            Value::string(b"v"),
            ttl_ms.map(|t| now + t),
            now,
        );
    }

    /// OBJECT ENCODING of a key in database 0, read without touching it.
    pub fn encoding(&mut self, key: &str) -> &'static str {
        self.engine.ks.dbs[0]
            .main
            .get(key.as_bytes())
            .map_or("(none)", |o| o.value.encoding_name())
    }

    /// The deadline of a key in database 0.
    pub fn expire_of(&self, key: &str) -> Option<i64> {
        self.engine.ks.expire_of(0, key.as_bytes())
    }
}

pub fn int(reply: &Reply) -> i64 {
    match reply {
        Reply::Integer(n) => *n,
        other => panic!("expected an integer, got {other:?}"),
    }
}

pub fn bulk(reply: &Reply) -> Option<Vec<u8>> {
    match reply {
        Reply::Bulk(b) => Some(b.to_vec()),
        Reply::Null => None,
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

pub fn strings(reply: &Reply) -> Vec<Vec<u8>> {
    match reply {
        Reply::Array(items) => items.iter().map(|i| bulk(i).expect("not null")).collect(),
        other => panic!("expected an array, got {other:?}"),
    }
}

pub fn error(reply: &Reply) -> String {
    match reply {
        Reply::Error(e) => String::from_utf8_lossy(e).into_owned(),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// A SCAN reply's cursor and keys.
pub fn scan_reply(reply: &Reply) -> (u64, Vec<Vec<u8>>) {
    match reply {
        Reply::Array(parts) if parts.len() == 2 => {
            let cursor = bulk(&parts[0]).expect("cursor");
            let cursor = std::str::from_utf8(&cursor).unwrap().parse().unwrap();
            (cursor, strings(&parts[1]))
        }
        other => panic!("expected a SCAN reply, got {other:?}"),
    }
}
