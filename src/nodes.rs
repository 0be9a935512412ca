//! Several independent servers started together: the five nodes of a Redlock test.
//!
//! Each node is a [`Server`] of its own — its own port, data, engine thread and clock. By
//! default every node runs on a manual clock, all frozen at the same instant, so that a test
//! moves time for all of them with [`Nodes::advance`] and makes one differ from the others with
//! its own clock: `nodes[2].clock().set_offset(…)` (or `skew`) makes it jump ahead or behind,
//! `nodes[2].clock().set_rate(1.05)` makes it drift — [`Nodes::advance`] moves each node by the
//! time given times its rate, so that node gains 5% on the others at every advance although every
//! clock is frozen. Dropping the `Nodes` stops every server.
//!
//! ```
//! use std::time::Duration;
//! let nodes = embedis::Nodes::start(3).unwrap();
//! let start = nodes[0].clock().now_ms();
//! nodes[2].clock().set_rate(1.05); // node 2's clock runs 5% fast
//! nodes.advance(Duration::from_secs(10));
//! assert_eq!(nodes[0].clock().now_ms() - start, 10_000);
//! assert_eq!(nodes[2].clock().now_ms() - start, 10_500);
//! ```

use std::io;
use std::net::SocketAddr;
use std::ops::{Index, IndexMut};
use std::time::{Duration, SystemTime};

use crate::{Clock, Server, ServerBuilder};

/// `n` independent servers (see the module documentation).
pub struct Nodes {
    servers: Vec<Server>,
}

impl Nodes {
    /// Starts `n` servers on free ports, each on its own manual clock, all frozen at the current
    /// time.
    pub fn start(n: usize) -> io::Result<Nodes> {
        Self::start_with(n, |_, builder| builder)
    }

    /// Starts `n` servers, letting `configure` adjust each node's builder (its index and a
    /// builder that already has the node's manual clock), e.g.
    /// `Nodes::start_with(5, |i, b| b.seed(i as u64))`.
    pub fn start_with(
        n: usize,
        mut configure: impl FnMut(usize, ServerBuilder) -> ServerBuilder,
    ) -> io::Result<Nodes> {
        let now = SystemTime::now();
        let servers = (0..n)
            .map(|i| configure(i, Server::builder().clock(Clock::frozen_at(now))).start())
            .collect::<io::Result<Vec<Server>>>()?;
        Ok(Nodes { servers })
    }

    /// How many nodes there are.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The nodes in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Server> {
        self.servers.iter()
    }

    /// Every node's `redis://127.0.0.1:<port>/`, in order.
    pub fn urls(&self) -> Vec<String> {
        self.servers.iter().map(Server::url).collect()
    }

    /// Every node's address, in order.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.servers.iter().map(Server::addr).collect()
    }

    /// Lets `by` of real time pass for every node: each node's clock moves forward by `by`
    /// times its rate ([`Clock::rate`], 1.0 unless the test called `set_rate`), to the
    /// microsecond, and keeps its offset. Keys expire and blocking timeouts fire on every node at
    /// once. (A node's own `clock().advance(by)` moves it by exactly `by`, whatever its rate.)
    ///
    /// # Panics
    /// If a node runs on the system clock (a builder closure gave it one).
    pub fn advance(&self, by: Duration) {
        for (i, server) in self.servers.iter().enumerate() {
            let clock = server.clock();
            assert!(
                clock.advance(scaled(by, clock.rate())),
                "node {i} runs on the system clock, which cannot be advanced"
            );
        }
    }

    /// Stops every node and waits until they have stopped.
    pub fn shutdown(self) {
        for server in self.servers {
            server.shutdown();
        }
    }
}

/// `by × rate`, rounded to the microsecond (a negative or non-finite rate counts as 0).
fn scaled(by: Duration, rate: f64) -> Duration {
    let us = by.as_micros() as f64 * rate;
    if us.is_finite() && us > 0.0 {
        Duration::from_micros(us.round() as u64)
    } else {
        Duration::ZERO
    }
}

impl Index<usize> for Nodes {
    type Output = Server;

    fn index(&self, i: usize) -> &Server {
        &self.servers[i]
    }
}

/// Mutable access, for [`Server::restart`] of one node.
impl IndexMut<usize> for Nodes {
    fn index_mut(&mut self, i: usize) -> &mut Server {
        &mut self.servers[i]
    }
}

impl<'a> IntoIterator for &'a Nodes {
    type Item = &'a Server;
    type IntoIter = std::slice::Iter<'a, Server>;

    fn into_iter(self) -> Self::IntoIter {
        self.servers.iter()
    }
}
