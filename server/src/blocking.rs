//! Blocked clients: a client whose command cannot complete yet waits here, with its command, until
//! something releases it or its deadline passes.
//!
//! In this issue two things block: CLIENT PAUSE (affected commands are postponed and re-run, in
//! arrival order, when the pause ends) and WAIT (no replicas exist, so it waits out its timeout).
//! Blocking pops join later with their per-key queues. A blocked client's connection stops
//! feeding commands until released; its deadline is read from the server's [`crate::clock::Clock`],
//! so a test can fire it by advancing the clock.

use bytes::Bytes;
use std::collections::{BTreeSet, VecDeque};

use crate::client::ClientId;

/// Why a client is blocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockReason {
    /// Postponed by CLIENT PAUSE: the command re-runs when the pause ends.
    Postponed,
    /// WAIT for replica acknowledgements; replies with the count (0) at the deadline.
    Wait,
}

/// A client's blocked command.
#[derive(Debug, Clone)]
pub struct Blocked {
    pub args: Vec<Bytes>,
    pub reason: BlockReason,
    /// Absolute deadline in ms; `None` = no timeout.
    pub deadline_ms: Option<i64>,
}

/// The executor's index of blocked clients.
#[derive(Debug, Default)]
pub struct BlockedIndex {
    /// (deadline, client) for every blocked client with a timeout.
    pub timeouts: BTreeSet<(i64, ClientId)>,
    /// Clients postponed by CLIENT PAUSE, in arrival order.
    pub postponed: VecDeque<ClientId>,
    /// How many clients are blocked (INFO blocked_clients).
    pub count: usize,
}

impl BlockedIndex {
    pub fn add(&mut self, id: ClientId, blocked: &Blocked) {
        self.count += 1;
        if let Some(deadline) = blocked.deadline_ms {
            self.timeouts.insert((deadline, id));
        }
        if blocked.reason == BlockReason::Postponed {
            self.postponed.push_back(id);
        }
    }

    pub fn remove(&mut self, id: ClientId, blocked: &Blocked) {
        self.count = self.count.saturating_sub(1);
        if let Some(deadline) = blocked.deadline_ms {
            self.timeouts.remove(&(deadline, id));
        }
        if blocked.reason == BlockReason::Postponed {
            self.postponed.retain(|&c| c != id);
        }
    }

    /// Clients whose deadline is at or before `now`.
    pub fn due(&self, now_ms: i64) -> Vec<ClientId> {
        self.timeouts
            .iter()
            .take_while(|(d, _)| *d <= now_ms)
            .map(|(_, id)| *id)
            .collect()
    }

    /// The earliest deadline, if any.
    pub fn next_deadline(&self) -> Option<i64> {
        self.timeouts.iter().next().map(|(d, _)| *d)
    }
}
