//! Lock clients written for the failure stories of tests/it/lock_failures.rs: a single-instance
//! lock ([`Lock`]: `SET key token NX PX` to acquire, the compare-and-delete / compare-and-pexpire
//! fixtures to release and extend, and a naive `DEL` release for contrast) and a Redlock client
//! ([`Redlock`]) written from the published algorithm (antirez, "Distributed locks with Redis").
//!
//! They are ours rather than a library's so that a test controls everything a story depends on:
//! every request is split into a send and a read, so a test can leave a request waiting in a
//! paused or slow server while it moves the clocks, and the Redlock client measures elapsed
//! time on a clock the test gives it, so the test decides how long an acquisition took. They
//! speak RESP through [`Conn`]; a node that answers an error or closes the connection counts as
//! one that did not grant the lock.

use super::{send, Conn};
use embedis::Clock;
use embedis_protocol::Value;
use std::net::SocketAddr;

/// Deletes the key if it still holds the caller's token: 1 deleted, 0 not ours.
pub const COMPARE_AND_DELETE: &str =
    include_str!("../../fixtures/lock-scripts/compare-and-delete.lua");
/// Sets a new lease on the key if it still holds the caller's token: 1 renewed, 0 not ours.
pub const COMPARE_AND_PEXPIRE: &str =
    include_str!("../../fixtures/lock-scripts/compare-and-pexpire.lua");

/// The Redlock paper's clock drift factor: the validity time loses 1% of the TTL, plus 2 ms
/// for the granularity of the nodes' expiry.
pub const CLOCK_DRIFT_FACTOR: f64 = 0.01;
pub const DRIFT_CONSTANT_MS: i64 = 2;

/// The next reply; `None` if the server closed the connection.
fn read(conn: &mut Conn) -> Option<Value> {
    conn.read_reply().map(|(_, value)| value)
}

fn is_ok(reply: &Option<Value>) -> bool {
    matches!(reply, Some(Value::Simple(s)) if &s[..] == b"OK")
}

/// A script called the way clients call one: EVALSHA, and EVAL when the server answers NOSCRIPT.
/// Both fixtures take one key.
struct Script {
    body: &'static str,
    sha: String,
}

impl Script {
    fn new(body: &'static str) -> Script {
        let sha = sha1_smol::Sha1::from(body).digest().to_string();
        Script { body, sha }
    }

    fn send(&self, conn: &mut Conn, key: &str, argv: &[&str]) {
        let mut args = vec!["EVALSHA", &self.sha, "1", key];
        args.extend_from_slice(argv);
        send(conn, &args);
    }

    /// Reads the reply to [`Script::send`], sending the script itself if the server did not
    /// know it; the script's integer reply, `None` for an error or a closed connection.
    fn read(&self, conn: &mut Conn, key: &str, argv: &[&str]) -> Option<i64> {
        let mut reply = read(conn);
        if matches!(&reply, Some(Value::Error(e)) if e.starts_with(b"NOSCRIPT")) {
            let mut args = vec!["EVAL", self.body, "1", key];
            args.extend_from_slice(argv);
            send(conn, &args);
            reply = read(conn);
        }
        match reply {
            Some(Value::Integer(n)) => Some(n),
            _ => None,
        }
    }
}

/// A lock on one server: `SET key token NX PX lease` (see the module documentation).
pub struct Lock {
    conn: Conn,
    pub key: String,
    pub token: String,
    release: Script,
    extend: Script,
}

impl Lock {
    /// A client of the server at `addr` that locks `key` with its own `token`.
    pub fn connect(addr: SocketAddr, key: &str, token: &str) -> Lock {
        Lock {
            conn: Conn::connect(addr).expect("connect"),
            key: key.to_string(),
            token: token.to_string(),
            release: Script::new(COMPARE_AND_DELETE),
            extend: Script::new(COMPARE_AND_PEXPIRE),
        }
    }

    /// Tries once to take the lock for `lease_ms`; true if it did.
    pub fn acquire(&mut self, lease_ms: i64) -> bool {
        self.send_acquire(lease_ms);
        self.read_acquire()
    }

    pub fn send_acquire(&mut self, lease_ms: i64) {
        let lease = lease_ms.to_string();
        send(
            &mut self.conn,
            &["SET", &self.key, &self.token, "NX", "PX", &lease],
        );
    }

    pub fn read_acquire(&mut self) -> bool {
        is_ok(&read(&mut self.conn))
    }

    /// Renews the lease to `lease_ms` if the lock is still ours (compare-and-pexpire): 1
    /// renewed, 0 lost.
    pub fn extend(&mut self, lease_ms: i64) -> i64 {
        let lease = lease_ms.to_string();
        self.extend
            .send(&mut self.conn, &self.key, &[&self.token, &lease]);
        let reply = self
            .extend
            .read(&mut self.conn, &self.key, &[&self.token, &lease]);
        reply.expect("compare-and-pexpire answers an integer")
    }

    /// Releases the lock if it is still ours (compare-and-delete): 1 deleted, 0 not ours.
    pub fn release(&mut self) -> i64 {
        self.send_release();
        self.read_release()
    }

    pub fn send_release(&mut self) {
        self.release.send(&mut self.conn, &self.key, &[&self.token]);
    }

    pub fn read_release(&mut self) -> i64 {
        let reply = self.release.read(&mut self.conn, &self.key, &[&self.token]);
        reply.expect("compare-and-delete answers an integer")
    }

    /// Sends `WAIT replicas timeout_ms` on the lock's connection, where it waits for the
    /// connection's own writes (Redis counts from the client's last write).
    pub fn send_wait(&mut self, replicas: i64, timeout_ms: i64) {
        let (replicas, timeout) = (replicas.to_string(), timeout_ms.to_string());
        send(&mut self.conn, &["WAIT", &replicas, &timeout]);
    }

    /// WAIT's reply: how many replicas acknowledged the connection's writes.
    pub fn read_wait(&mut self) -> i64 {
        match read(&mut self.conn) {
            Some(Value::Integer(n)) => n,
            other => panic!("WAIT answered {other:?}"),
        }
    }

    /// The unsafe release the documents warn about: `DEL key`, whoever holds it now.
    pub fn send_naive_release(&mut self) {
        send(&mut self.conn, &["DEL", &self.key]);
    }

    /// DEL's reply: how many keys it deleted.
    pub fn read_naive_release(&mut self) -> i64 {
        match read(&mut self.conn) {
            Some(Value::Integer(n)) => n,
            other => panic!("DEL answered {other:?}"),
        }
    }
}

/// What one Redlock acquisition attempt found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// A majority granted the lock and some validity time was left.
    pub acquired: bool,
    /// How many nodes answered OK to the SET.
    pub successes: usize,
    /// The acquisition's duration on the client's clock.
    pub elapsed_ms: i64,
    /// TTL − elapsed − drift: how long the lock may be relied on after the attempt.
    pub validity_ms: i64,
    /// Start + TTL − drift on the client's clock: when the validity ends.
    pub valid_until_ms: i64,
}

/// A Redlock client over N independent servers (see the module documentation).
pub struct Redlock {
    nodes: Vec<Conn>,
    clock: Clock,
    release: Script,
}

impl Redlock {
    /// Connects to every node; `clock` is the client machine's clock.
    pub fn connect(addrs: &[SocketAddr], clock: Clock) -> Redlock {
        Redlock {
            nodes: addrs
                .iter()
                .map(|&a| Conn::connect(a).expect("connect"))
                .collect(),
            clock,
            release: Script::new(COMPARE_AND_DELETE),
        }
    }

    /// N/2 + 1.
    pub fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    /// One acquisition attempt, as the algorithm describes it: note the time, `SET key token NX
    /// PX ttl` on every node (all sent first, then the replies read, so a slow node delays the
    /// attempt by its own delay only), count the OKs, and take the validity time as the TTL
    /// minus the time the attempt took minus the clock drift allowance. The lock is acquired if a
    /// majority granted it and validity is left; otherwise it is released on every node at once,
    /// including those that did not seem to grant it.
    pub fn acquire(&mut self, key: &str, token: &str, ttl_ms: i64) -> Attempt {
        let start = self.clock.now_ms();
        let ttl = ttl_ms.to_string();
        for conn in &mut self.nodes {
            send(conn, &["SET", key, token, "NX", "PX", &ttl]);
        }
        let successes = self
            .nodes
            .iter_mut()
            .map(|conn| is_ok(&read(conn)))
            .filter(|&ok| ok)
            .count();
        let elapsed_ms = self.clock.now_ms() - start;
        let drift = (ttl_ms as f64 * CLOCK_DRIFT_FACTOR) as i64 + DRIFT_CONSTANT_MS;
        let validity_ms = ttl_ms - elapsed_ms - drift;
        let acquired = successes >= self.quorum() && validity_ms > 0;
        if !acquired {
            self.release(key, token);
        }
        Attempt {
            acquired,
            successes,
            elapsed_ms,
            validity_ms,
            valid_until_ms: start + ttl_ms - drift,
        }
    }

    /// True while an acquired lock's validity lasts, on the client's clock.
    pub fn still_valid(&self, attempt: &Attempt) -> bool {
        attempt.acquired && self.clock.now_ms() < attempt.valid_until_ms
    }

    /// Compare-and-delete on every node; each node's reply (1 deleted, 0 not ours), `None` for a
    /// node that answered an error or closed the connection.
    pub fn release(&mut self, key: &str, token: &str) -> Vec<Option<i64>> {
        for conn in &mut self.nodes {
            self.release.send(conn, key, &[token]);
        }
        let release = &self.release;
        self.nodes
            .iter_mut()
            .map(|conn| release.read(conn, key, &[token]))
            .collect()
    }
}
