//! [`Quicklist`]: list values — a deque of packed nodes, Redis's `quicklist` encoding.

use std::collections::VecDeque;

use crate::listpack::Listpack;

/// A list of byte strings: nodes of packed entries, pushed and popped at both ends.
#[derive(Clone, Debug, Default)]
pub struct Quicklist {
    nodes: VecDeque<Listpack>,
    len: usize,
}

impl Quicklist {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of packed nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}
