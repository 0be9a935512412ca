//! What consumer groups hold on to an entry, and the three ways Redis 8.2 deletes entries with
//! respect to it (XDELEX, XACKDEL, and XADD's and XTRIM's KEEPREF / DELREF / ACKED).
//!
//! An entry is *referenced* while some group may still need it: a group has not read that far
//! yet (its last delivered ID is below the entry's), or the entry is in some group's PEL.
//! Redis keeps an index from entry to groups for this; here each group's PEL is an ordered map,
//! so the question costs one lookup per group, and the lowest last delivered ID is computed
//! once per command that asks. Nothing is kept per entry, so streams without these commands pay
//! nothing.

use std::collections::BTreeMap;

use super::{ConsumerGroup, Stream, StreamId};

/// How a deletion treats the consumer groups' references to the entries it removes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Refs {
    /// Delete, leaving the PEL entries in place (XDEL's way, the default).
    #[default]
    KeepRef,
    /// Delete, and remove the entry from every group's PEL.
    DelRef,
    /// Delete only entries that every group has read and acknowledged.
    Acked,
}

/// The groups' view for ACKED: the lowest last delivered ID, `None` without groups.
#[derive(Clone, Copy, Debug)]
pub struct ReadFloor(Option<StreamId>);

impl ReadFloor {
    pub fn of(groups: &BTreeMap<Box<[u8]>, ConsumerGroup>) -> ReadFloor {
        ReadFloor(groups.values().map(|g| g.last_id).min())
    }

    /// True if some group has not read `id` yet or has it pending (Redis's
    /// `streamEntryIsReferenced`). The entry need not exist.
    pub fn references(self, groups: &BTreeMap<Box<[u8]>, ConsumerGroup>, id: StreamId) -> bool {
        match self.0 {
            None => false,
            Some(floor) if floor < id => true,
            Some(_) => groups.values().any(|g| g.pel.contains_key(&id)),
        }
    }
}

/// Removes `id` from every group's PEL and its owner's (Redis's
/// `streamCleanupEntryCGroupRefs`).
pub fn drop_references(groups: &mut BTreeMap<Box<[u8]>, ConsumerGroup>, id: StreamId) {
    for group in groups.values_mut() {
        group.ack(id);
    }
}

/// What deleting one ID did (XDELEX's and XACKDEL's per-ID answers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deletion {
    /// No such entry.
    Missing,
    Deleted,
    /// ACKED: some group still references it; nothing was done.
    Referenced,
}

impl Stream {
    /// Deletes entry `id` as `refs` says, keeping `first_id` and `max_deleted_entry_id` as XDEL
    /// does. Under DELREF the references go even when the entry does not exist, as in Redis.
    pub fn delete_with_refs(&mut self, id: StreamId, refs: Refs, floor: ReadFloor) -> Deletion {
        match refs {
            Refs::Acked if floor.references(&self.groups, id) => return Deletion::Referenced,
            Refs::DelRef => drop_references(&mut self.groups, id),
            _ => {}
        }
        if self.delete_ids(&[id]) == 1 {
            Deletion::Deleted
        } else {
            Deletion::Missing
        }
    }

    /// The groups' read floor now (see [`ReadFloor`]).
    pub fn read_floor(&self) -> ReadFloor {
        ReadFloor::of(&self.groups)
    }
}
