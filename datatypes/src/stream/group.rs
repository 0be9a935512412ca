//! Consumer groups: what a group has delivered and to whom.
//!
//! A [`ConsumerGroup`] keeps its last delivered ID and `entries_read` counter (Redis 7.0's lag
//! bookkeeping), its pending entries list (PEL: every entry delivered and not yet acknowledged,
//! with its owner, last delivery time and delivery count) and its consumers, each with the set of
//! IDs it owns in the PEL and the time it was last seen. Both PELs are ordered maps because XPENDING,
//! XCLAIM and XAUTOCLAIM walk them in ID order from a start ID; the consumer's own set lets
//! XREADGROUP replay one consumer's history and DELCONSUMER drop it without a scan of the group's.

use std::collections::{BTreeMap, BTreeSet};

use super::StreamId;

/// `entries_read` when the group's position in the stream's history is unknown (Redis shows
/// `entries-read` as null and estimates lag when it can).
pub const ENTRIES_READ_UNKNOWN: i64 = -1;

/// One delivered, unacknowledged entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingEntry {
    /// The consumer that owns it.
    pub consumer: Box<[u8]>,
    /// When it was last delivered (ms since the epoch).
    pub delivery_time: i64,
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consumer {
    /// When it last read or claimed (ms since the epoch).
    pub seen_time: i64,
    /// When it was last given entries, read or claimed (Redis 7.2's `active-time`); -1 while
    /// it never was.
    pub active_time: i64,
    /// The IDs it owns in the group's PEL.
    pub pending: BTreeSet<StreamId>,
}

/// A consumer group (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroup {
    pub last_id: StreamId,
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, PendingEntry>,
    pub consumers: BTreeMap<Box<[u8]>, Consumer>,
}

impl ConsumerGroup {
    pub fn new(last_id: StreamId, entries_read: i64) -> ConsumerGroup {
        ConsumerGroup {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// The consumer `name`, created (seen now) if missing; the flag says whether it was created.
    pub fn consumer_or_create(&mut self, name: &[u8], now_ms: i64) -> (&mut Consumer, bool) {
        let created = !self.consumers.contains_key(name);
        let consumer = self
            .consumers
            .entry(name.into())
            .or_insert_with(|| Consumer {
                seen_time: now_ms,
                active_time: -1,
                pending: BTreeSet::new(),
            });
        (consumer, created)
    }

    /// Removes consumer `name` and its pending entries; returns how many it had, `None` if
    /// there was no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let consumer = self.consumers.remove(name)?;
        for id in &consumer.pending {
            self.pel.remove(id);
        }
        Some(consumer.pending.len())
    }

    /// Records entry `id` as delivered to `consumer` now: a new pending entry, or an existing one
    /// moved to it (its count and time as the caller decides).
    pub fn assign(&mut self, id: StreamId, consumer: &[u8], delivery_time: i64, count: u64) {
        if let Some(old) = self.pel.get(&id) {
            if &*old.consumer != consumer {
                let owner = old.consumer.clone();
                if let Some(c) = self.consumers.get_mut(&owner) {
                    c.pending.remove(&id);
                }
            }
        }
        self.pel.insert(
            id,
            PendingEntry {
                consumer: consumer.into(),
                delivery_time,
                delivery_count: count,
            },
        );
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pending.insert(id);
        }
    }

    /// Acknowledges `id`: removes it from the PEL and its owner's. True if it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(entry) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = self.consumers.get_mut(&entry.consumer) {
            c.pending.remove(&id);
        }
        true
    }
}
