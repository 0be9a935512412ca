//! A primary and its replicas in one test process, and a failover as a ready scenario.
//!
//! Each member is a [`Server`] of its own (port, data, engine thread, clock, faults) linked by
//! Redis's replication protocol over loopback TCP — the same link a redis-server replica makes —
//! so what a test sees is what a deployment with replicas shows: writes reach the replicas
//! asynchronously, WAIT counts their acknowledgements, a replica refuses writes
//! (`-READONLY`), and [`ReplicaSet::fail_over`] does what Sentinel does when the primary dies:
//! the primary is stopped, a replica is promoted (REPLICAOF NO ONE) and the others follow it
//! (continuing with PSYNC, no full resync). A write that had not reached the promoted replica is
//! lost — the asynchronous-replication hazard a distributed lock must be tested against:
//!
//! ```
//! use std::time::Duration;
//! let mut set = embedis::ReplicaSet::start(2).unwrap();
//! set.primary().set("lock", "token-a");
//! assert!(set.wait_for_replicas(Duration::from_secs(5)));
//! assert_eq!(set.replica(0).get("lock"), Some(b"token-a".to_vec()));
//! // The primary dies; replica 0 takes over with everything it had received.
//! set.fail_over(0);
//! assert_eq!(set.primary().get("lock"), Some(b"token-a".to_vec()));
//! set.primary().set("after", "1");
//! assert!(set.wait_for_replicas(Duration::from_secs(5)));
//! assert_eq!(set.replica(0).get("after"), Some(b"1".to_vec()));
//! ```

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::{Reply, Server, ServerBuilder};

impl ServerBuilder {
    /// A member of a group of servers made for a test ([`ReplicaSet`], [`crate::Cluster`]): a
    /// full sync starts at once. Redis's `repl-diskless-sync-delay` (5 s by default, which a
    /// lone server keeps) waits for more replicas to share one sync, and would hold every
    /// replica of the group that long; `configure` may set it again.
    pub(crate) fn group_member(mut self) -> Self {
        self.options.config.repl_diskless_sync_delay = 0;
        self
    }

    /// Starts as a replica of `primary` (`replicaof` at start-up): a full sync from it, then
    /// its writes. `server.command(&["REPLICAOF", "NO", "ONE"])` makes it a primary.
    pub fn replica_of(mut self, primary: SocketAddr) -> Self {
        self.options.config.replicaof = Some((primary.ip().to_string(), primary.port()));
        self
    }
}

impl Server {
    /// The value of one INFO replication field.
    fn replication_field(&self, name: &str) -> Option<String> {
        let text = match self.command(&["INFO", "replication"]) {
            Reply::Verbatim { text, .. } | Reply::Bulk(text) => text,
            _ => return None,
        };
        String::from_utf8_lossy(&text).lines().find_map(|line| {
            line.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        })
    }

    /// The replication offset: on a primary, the bytes of stream it produced; on a replica, the
    /// bytes of its primary's stream it applied.
    pub fn replication_offset(&self) -> u64 {
        self.replication_field("master_repl_offset")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// True if this is a replica whose link to its primary is up.
    pub fn link_up(&self) -> bool {
        self.replication_field("master_link_status").as_deref() == Some("up")
    }
}

/// A primary and its replicas (see the module documentation).
pub struct ReplicaSet {
    /// The current primary first; stopped members are gone.
    primary: Server,
    replicas: Vec<Server>,
}

impl ReplicaSet {
    /// Starts a primary and `replicas` replicas of it, and waits until every replica is linked.
    pub fn start(replicas: usize) -> io::Result<ReplicaSet> {
        Self::start_with(replicas, |_, builder| builder)
    }

    /// As [`ReplicaSet::start`], letting `configure` adjust each member's builder: index 0 is the
    /// primary, 1.. the replicas (their builder already names the primary), e.g. to give each
    /// its own manual clock.
    pub fn start_with(
        replicas: usize,
        mut configure: impl FnMut(usize, ServerBuilder) -> ServerBuilder,
    ) -> io::Result<ReplicaSet> {
        let member = || Server::builder().group_member();
        let primary = configure(0, member()).start()?;
        let replicas = (1..=replicas)
            .map(|i| configure(i, member().replica_of(primary.addr())).start())
            .collect::<io::Result<Vec<Server>>>()?;
        let set = ReplicaSet { primary, replicas };
        if !set.wait_until(Duration::from_secs(10), |s| {
            s.replicas.iter().all(Server::link_up)
        }) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the replicas did not link to the primary",
            ));
        }
        Ok(set)
    }

    /// The current primary.
    pub fn primary(&self) -> &Server {
        &self.primary
    }

    /// Replica `i` (in start order; after a failover, the promoted one is no longer a replica).
    pub fn replica(&self, i: usize) -> &Server {
        &self.replicas[i]
    }

    pub fn replicas(&self) -> &[Server] {
        &self.replicas
    }

    /// Waits until every replica's link is up and it has applied everything the primary
    /// produced so far; false after `timeout`.
    pub fn wait_for_replicas(&self, timeout: Duration) -> bool {
        let target = self.primary.replication_offset();
        self.wait_until(timeout, |s| {
            s.replicas
                .iter()
                .all(|r| r.link_up() && r.replication_offset() >= target)
        })
    }

    /// What Sentinel does when the primary fails: the primary is stopped (its data and any
    /// write its replicas had not received are gone), replica `to` becomes the primary, and the
    /// other replicas follow it. Returns once they are linked to it.
    ///
    /// # Panics
    /// If `to` is not a replica's index, or the others do not link to the new primary in 10 s.
    pub fn fail_over(&mut self, to: usize) {
        let promoted = self.replicas.remove(to);
        let old = std::mem::replace(&mut self.primary, promoted);
        old.shutdown();
        let addr = self.primary.addr();
        self.primary.command(&["REPLICAOF", "NO", "ONE"]);
        for replica in &self.replicas {
            let (host, port) = (addr.ip().to_string(), addr.port().to_string());
            replica.command(&["REPLICAOF", host.as_str(), port.as_str()]);
        }
        let linked = self.wait_until(Duration::from_secs(10), |s| {
            s.replicas.iter().all(|r| {
                r.link_up() && r.replication_field("master_port") == Some(addr.port().to_string())
            })
        });
        assert!(linked, "the replicas did not follow the new primary");
    }

    fn wait_until(&self, timeout: Duration, done: impl Fn(&ReplicaSet) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if done(self) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
