//! Reading and writing a server's data from the embedding process, without a client: the
//! helpers a test uses to arrange a state before its client runs and to check the state after.
//!
//! Every helper is a real command ([`Server::command`]): it runs on the server's own thread,
//! between two client commands, through the same command handlers a client's command goes
//! through, so its effects are exactly a client's — a key whose TTL passed is expired by the read,
//! keyspace hits and misses are counted, a write breaks other clients' WATCH and wakes the
//! clients blocked on the key (an `LPUSH` releases a `BLPOP`). The helpers work on database 0
//! ([`Server::command_in`] takes another) and in both I/O modes. They never wait for a blocked
//! client (a blocking command answers at once, as inside MULTI), but they do wait for a script
//! that is running, as a client would.
//!
//! Errors: the typed helpers panic when Redis would answer an error (`GET` of a hash: WRONGTYPE)
//! or when the server has stopped, which in a test is the failure to report; [`Server::command`]
//! returns error replies as [`Reply::Error`].

use bytes::Bytes;
use std::time::Duration;

use crate::Server;

/// A reply as the server sends it in RESP3 (the protocol crate's value tree): maps, sets and
/// doubles keep their types.
pub use embedis_protocol::Value as Reply;

impl Server {
    /// Runs one command on database 0 as the embedding process and returns its reply, e.g.
    /// `server.command(&["LPUSH", "queue", "job"])`. It runs as a client of its own that needs no
    /// AUTH and is never paused by CLIENT PAUSE; commands that only make sense on a connection
    /// (MULTI, WATCH, SUBSCRIBE, MONITOR…) answer an error. A command that answers nothing
    /// (a successful SHUTDOWN) gives [`Reply::Null`].
    ///
    /// # Panics
    /// If the server has stopped.
    pub fn command<A: AsRef<[u8]>>(&self, args: &[A]) -> Reply {
        self.command_in(0, args)
    }

    /// [`Server::command`] on database `db`.
    ///
    /// # Panics
    /// If the server has stopped.
    pub fn command_in<A: AsRef<[u8]>>(&self, db: usize, args: &[A]) -> Reply {
        let args: Vec<Bytes> = args
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_ref()))
            .collect();
        let reply = self
            .handle
            .with_engine(move |engine| engine.run_direct(db, &args))
            .expect("the server is not running");
        if reply.is_empty() {
            // SHUTDOWN answers nothing when it succeeds.
            return Reply::Null;
        }
        match embedis_protocol::decode_value(&reply.freeze()) {
            Ok(Some((value, _))) => value,
            other => panic!("unreadable reply from the server: {other:?}"),
        }
    }

    /// Runs a command that must succeed; panics with the server's error otherwise.
    fn run<A: AsRef<[u8]>>(&self, args: &[A]) -> Reply {
        match self.command(args) {
            Reply::Error(e) | Reply::BlobError(e) => panic!(
                "{}: {}",
                String::from_utf8_lossy(args[0].as_ref()),
                String::from_utf8_lossy(&e)
            ),
            reply => reply,
        }
    }

    fn integer<A: AsRef<[u8]>>(&self, args: &[A]) -> i64 {
        match self.run(args) {
            Reply::Integer(n) => n,
            other => panic!("expected an integer, got {other:?}"),
        }
    }

    /// The string value of `key` (GET); None if it does not exist.
    ///
    /// # Panics
    /// If the key holds another type, or the server has stopped.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<Vec<u8>> {
        match self.run(&[b"GET".as_slice(), key.as_ref()]) {
            Reply::Bulk(value) => Some(value.to_vec()),
            Reply::Null => None,
            other => panic!("GET answered {other:?}"),
        }
    }

    /// Sets `key` to `value` without a TTL (SET; replaces any value and TTL).
    pub fn set(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.run(&[b"SET".as_slice(), key.as_ref(), value.as_ref()]);
    }

    /// Sets `key` to `value` with a TTL of `ttl`, to the millisecond (SET … PX).
    ///
    /// # Panics
    /// If `ttl` is under a millisecond (Redis refuses a zero TTL), or the server has stopped.
    pub fn set_with_ttl(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, ttl: Duration) {
        let ms = ttl.as_millis().to_string();
        self.run(&[
            b"SET".as_slice(),
            key.as_ref(),
            value.as_ref(),
            b"PX",
            ms.as_bytes(),
        ]);
    }

    /// Deletes `key` (DEL); true if it existed.
    pub fn del(&self, key: impl AsRef<[u8]>) -> bool {
        self.integer(&[b"DEL".as_slice(), key.as_ref()]) == 1
    }

    /// True if `key` exists (EXISTS).
    pub fn exists(&self, key: impl AsRef<[u8]>) -> bool {
        self.integer(&[b"EXISTS".as_slice(), key.as_ref()]) == 1
    }

    /// The remaining TTL of `key` in seconds, as TTL answers: -2 if the key does not exist, -1
    /// if it has no TTL.
    pub fn ttl(&self, key: impl AsRef<[u8]>) -> i64 {
        self.integer(&[b"TTL".as_slice(), key.as_ref()])
    }

    /// The remaining TTL of `key` in milliseconds, as PTTL answers: -2 if the key does not
    /// exist, -1 if it has no TTL.
    pub fn pttl(&self, key: impl AsRef<[u8]>) -> i64 {
        self.integer(&[b"PTTL".as_slice(), key.as_ref()])
    }

    /// The fields and values of the hash at `key` (HGETALL), in the hash's own order; empty if
    /// the key does not exist.
    ///
    /// # Panics
    /// If the key holds another type, or the server has stopped.
    pub fn hgetall(&self, key: impl AsRef<[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
        match self.run(&[b"HGETALL".as_slice(), key.as_ref()]) {
            Reply::Map(pairs) => pairs
                .into_iter()
                .map(|pair| match pair {
                    (Reply::Bulk(field), Reply::Bulk(value)) => (field.to_vec(), value.to_vec()),
                    other => panic!("HGETALL answered a pair {other:?}"),
                })
                .collect(),
            other => panic!("HGETALL answered {other:?}"),
        }
    }

    /// Adds members with their scores to the sorted set at `key`, or updates their scores
    /// (ZADD); returns how many were new.
    pub fn zadd(&self, key: impl AsRef<[u8]>, members: &[(f64, impl AsRef<[u8]>)]) -> i64 {
        let scores: Vec<String> = members.iter().map(|(s, _)| s.to_string()).collect();
        let mut args: Vec<&[u8]> = vec![b"ZADD", key.as_ref()];
        for ((_, member), score) in members.iter().zip(&scores) {
            args.push(score.as_bytes());
            args.push(member.as_ref());
        }
        self.integer(&args)
    }

    /// The approximate number of distinct elements added to the HyperLogLog at `key`
    /// (PFCOUNT); 0 if the key does not exist.
    pub fn pfcount(&self, key: impl AsRef<[u8]>) -> i64 {
        self.integer(&[b"PFCOUNT".as_slice(), key.as_ref()])
    }

    /// The keys matching the glob-style `pattern` (KEYS), in no particular order.
    pub fn keys(&self, pattern: impl AsRef<[u8]>) -> Vec<Vec<u8>> {
        match self.run(&[b"KEYS".as_slice(), pattern.as_ref()]) {
            Reply::Array(keys) => keys
                .into_iter()
                .map(|k| match k {
                    Reply::Bulk(k) => k.to_vec(),
                    other => panic!("KEYS answered a key {other:?}"),
                })
                .collect(),
            other => panic!("KEYS answered {other:?}"),
        }
    }

    /// The number of keys in database 0 (DBSIZE; keys whose TTL passed count until expired).
    pub fn dbsize(&self) -> usize {
        self.integer(&["DBSIZE"]) as usize
    }

    /// Removes every key of every database (FLUSHALL).
    pub fn flushall(&self) {
        self.run(&["FLUSHALL"]);
    }
}
