//! [`Stream`]: the value behind Redis's stream type — an append-only log of entries keyed by
//! 128-bit IDs (`ms-seq`), each entry a list of field-value pairs, plus the consumer groups that
//! read it ([`group`]).
//!
//! Entries live in a `BTreeMap` from a node's first ID to a [`Node`], a packed buffer of up to
//! `stream-node-max-entries` entries (or about `stream-node-max-bytes` of Redis's listpack),
//! with the field names shared through the node's master entry and IDs delta-encoded — Redis's
//! radix tree of listpacks, in the shape that makes the same operations cheap here: appending
//! goes to the last node, a range seek is one tree lookup, trimming drops whole nodes from the
//! front. Deletion flags an entry in place; a node with no live entry left is dropped.
//!
//! The stream also keeps the counters Redis 7.0 reports and uses for consumer-group lag:
//! `last_id` (the top ID ever added), `first_id` (the first live entry), `max_deleted_entry_id`
//! and `entries_added`. Trimming follows Redis exactly, including its node-granular approximate
//! mode and the LIMIT on work, because both are visible in XLEN after `XADD … MAXLEN ~`.

pub mod group;
mod node;
pub mod refs;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::ops::Bound;

pub use group::{Consumer, ConsumerGroup, PendingEntry, ENTRIES_READ_UNKNOWN};
pub use node::{EntryRef, FieldIter, Node};
pub use refs::{Deletion, ReadFloor, Refs};

/// An entry ID: milliseconds and a sequence number, ordered as a 128-bit number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next ID, `None` past the maximum.
    pub fn next(self) -> Option<StreamId> {
        if self.seq < u64::MAX {
            Some(StreamId::new(self.ms, self.seq + 1))
        } else if self.ms < u64::MAX {
            Some(StreamId::new(self.ms + 1, 0))
        } else {
            None
        }
    }

    /// The previous ID, `None` below zero.
    pub fn prev(self) -> Option<StreamId> {
        if self.seq > 0 {
            Some(StreamId::new(self.ms, self.seq - 1))
        } else if self.ms > 0 {
            Some(StreamId::new(self.ms - 1, u64::MAX))
        } else {
            None
        }
    }

    /// `ms-seq`, as replies show it.
    pub fn to_bytes(self) -> Vec<u8> {
        format!("{}-{}", self.ms, self.seq).into_bytes()
    }

    /// Parses `ms-seq` or `ms` (with `missing_seq` as the sequence). `None` if malformed. With
    /// `seq_given` the caller learns whether a sequence was present.
    pub fn parse(bytes: &[u8], missing_seq: u64) -> Option<(StreamId, bool)> {
        fn number(part: &[u8]) -> Option<u64> {
            // Redis reads both parts with strtoull-like checks: digits only, no sign, no space.
            if part.is_empty() || part.len() > 20 || !part.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(part).ok()?.parse().ok()
        }
        match bytes.iter().position(|&b| b == b'-') {
            None => Some((StreamId::new(number(bytes)?, missing_seq), false)),
            Some(dash) => Some((
                StreamId::new(number(&bytes[..dash])?, number(&bytes[dash + 1..])?),
                true,
            )),
        }
    }
}

/// How big a node may grow (`stream-node-max-bytes`, `stream-node-max-entries`; 0 = no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: u64,
    pub max_entries: u64,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// The largest listpack Redis builds (1 GB); bounds a node and an entry.
pub const LISTPACK_MAX_SIZE: u64 = 1 << 30;

/// The nodes of a Redis radix tree (`rax`) holding these IDs (in order) as 16-byte big-endian
/// keys. A radix tree with maximal path compression is determined by its key set: the root, a
/// node where keys branch, a node after each maximal single-child run, and a leaf per key.
pub fn radix_tree_nodes(ids: impl Iterator<Item = StreamId>) -> usize {
    fn key(id: StreamId) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&id.ms.to_be_bytes());
        k[8..].copy_from_slice(&id.seq.to_be_bytes());
        k
    }
    fn count(keys: &[[u8; 16]], depth: usize) -> usize {
        if depth == 16 {
            return 1;
        }
        let (first, last) = (keys[0], keys[keys.len() - 1]);
        if first[depth] == last[depth] {
            // One child: a compressed run to where the keys part (or to the end).
            let common = (depth..16).take_while(|&i| first[i] == last[i]).count();
            return 1 + count(keys, depth + common);
        }
        let mut total = 1;
        let mut start = 0;
        while start < keys.len() {
            let byte = keys[start][depth];
            let end = start
                + keys[start..]
                    .iter()
                    .take_while(|k| k[depth] == byte)
                    .count();
            total += count(&keys[start..end], depth + 1);
            start = end;
        }
        total
    }
    let keys: Vec<[u8; 16]> = ids.map(key).collect();
    if keys.is_empty() {
        return 1;
    }
    count(&keys, 0)
}

/// What XADD's and XTRIM's trimming options ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimTo {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop entries with smaller IDs.
    MinId(StreamId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trim {
    pub to: TrimTo,
    /// `~`: only whole nodes are removed.
    pub approx: bool,
    /// Most entries to remove (0 = unlimited); only with `approx`.
    pub limit: u64,
    /// Redis 8.2's KEEPREF (the default), DELREF or ACKED.
    pub refs: Refs,
}

/// A stream value (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Stream {
    nodes: BTreeMap<StreamId, Node>,
    /// Live entries.
    pub length: u64,
    /// The greatest ID ever added (or set by XSETID).
    pub last_id: StreamId,
    /// The first live entry's ID, zero when empty.
    pub first_id: StreamId,
    /// The greatest ID ever deleted by XDEL (or set by XSETID).
    pub max_deleted_entry_id: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// Consumer groups by name (sorted, as XINFO GROUPS lists them).
    pub groups: BTreeMap<Box<[u8]>, ConsumerGroup>,
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Appends an entry with `pairs` (field, value, field, value…) under `id`, which must be
    /// greater than `last_id` (the caller checked, with Redis's errors).
    pub fn append<T: AsRef<[u8]>>(&mut self, id: StreamId, pairs: &[T], limits: NodeLimits) {
        debug_assert!(id > self.last_id || (self.last_id.is_zero() && self.entries_added == 0));
        let data_len: u64 = pairs.iter().map(|p| p.as_ref().len() as u64).sum();
        let max_bytes = match limits.max_bytes {
            0 => LISTPACK_MAX_SIZE,
            n => n.min(LISTPACK_MAX_SIZE),
        };
        let mut fits = false;
        if let Some((&master, node)) = self.nodes.iter_mut().next_back() {
            let full = node.redis_bytes() as u64 + data_len >= max_bytes
                || (limits.max_entries != 0 && u64::from(node.total()) >= limits.max_entries);
            if full {
                node.shrink();
            } else {
                node.push(master, id, pairs);
                fits = true;
            }
        }
        if !fits {
            self.nodes.insert(id, Node::new(id, pairs));
        }
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// The nodes in ID order, each with its master ID (its key in the tree).
    pub fn nodes(&self) -> impl Iterator<Item = (StreamId, &Node)> + '_ {
        self.nodes.iter().map(|(id, node)| (*id, node))
    }

    /// Adds a whole node under its master ID, as loading an RDB file does; the counters are the
    /// caller's to set. False (nothing added) if a node with that key exists.
    pub fn insert_node(&mut self, master: StreamId, node: Node) -> bool {
        if self.nodes.contains_key(&master) {
            return false;
        }
        self.nodes.insert(master, node);
        true
    }

    /// Number of nodes (XINFO STREAM's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The nodes Redis's radix tree would have for this stream's node keys (XINFO STREAM's
    /// `radix-tree-nodes`); see [`radix_tree_nodes`].
    pub fn radix_tree_nodes(&self) -> usize {
        radix_tree_nodes(self.nodes.keys().copied())
    }

    /// Live entries with `start <= id <= end`, in ID order.
    pub fn range(&self, start: StreamId, end: StreamId) -> Range<'_> {
        let from = self
            .nodes
            .range(..=start)
            .next_back()
            .map(|(k, _)| *k)
            .unwrap_or(StreamId::MIN);
        Range {
            nodes: if start <= end {
                Some(self.nodes.range(from..))
            } else {
                None
            },
            current: None,
            start,
            end,
        }
    }

    /// Live entries with `start <= id <= end`, greatest ID first.
    pub fn rev_range(&self, start: StreamId, end: StreamId) -> RevRange<'_> {
        RevRange {
            nodes: if start <= end {
                Some(RevRange::new_nodes(self.nodes.range(..=end)))
            } else {
                None
            },
            current: None,
            start,
            end,
        }
    }

    /// The live entry with this ID.
    pub fn get(&self, id: StreamId) -> Option<EntryRef<'_>> {
        self.range(id, id).next()
    }

    /// The first (or with `last`, the last) live entry.
    pub fn edge(&self, last: bool) -> Option<EntryRef<'_>> {
        if last {
            self.rev_range(StreamId::MIN, StreamId::MAX).next()
        } else {
            self.range(StreamId::MIN, StreamId::MAX).next()
        }
    }

    /// Deletes the live entry `id`; true if there was one. Keeps `length` but not `first_id` or
    /// `max_deleted_entry_id` (see [`Stream::delete_ids`]).
    fn delete_one(&mut self, id: StreamId) -> bool {
        let Some((&master, node)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        let found = node
            .raw_entries(master)
            .find(|(_, e)| e.id >= id)
            .filter(|(_, e)| e.id == id && !e.is_deleted())
            .map(|(at, _)| at);
        let Some(at) = found else {
            return false;
        };
        node.mark_deleted(at);
        if node.live() == 0 {
            self.nodes.remove(&master);
        }
        self.length -= 1;
        true
    }

    /// XDEL: deletes these entries and updates `first_id` and `max_deleted_entry_id` as Redis
    /// does. Returns how many existed.
    pub fn delete_ids(&mut self, ids: &[StreamId]) -> u64 {
        let mut deleted = 0;
        let mut first_gone = false;
        for &id in ids {
            if self.delete_one(id) {
                first_gone |= id == self.first_id;
                if id > self.max_deleted_entry_id {
                    self.max_deleted_entry_id = id;
                }
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.length == 0 {
                self.first_id = StreamId::MIN;
            } else if first_gone {
                self.first_id = self.edge(false).map(|e| e.id).unwrap_or(StreamId::MAX);
            }
        }
        deleted
    }

    /// Trims as XADD's and XTRIM's options ask, the way Redis 8.2.3 does: whole nodes from the
    /// front while that stays within the target (KEEPREF only: the others look at each entry),
    /// then, in exact mode only, entries one by one — through every node that lies wholly within
    /// the target, since DELREF and ACKED may keep some of its entries, and into the first that
    /// does not. ACKED skips entries a group still references. Returns the entries removed.
    pub fn trim(&mut self, trim: Trim) -> u64 {
        let floor = ReadFloor::of(&self.groups);
        let mut deleted = 0u64;
        let mut kept: Option<StreamId> = None; // the last node walked and kept
        loop {
            let next = match kept {
                None => self.nodes.iter_mut().next(),
                Some(after) => self
                    .nodes
                    .range_mut((Bound::Excluded(after), Bound::Unbounded))
                    .next(),
            };
            let Some((&master, node)) = next else { break };
            if let TrimTo::MaxLen(max) = trim.to {
                if self.length <= max {
                    break;
                }
            }
            let live = u64::from(node.live());
            if trim.limit != 0 && deleted + live > trim.limit {
                break;
            }
            let whole = match trim.to {
                TrimTo::MaxLen(max) => self.length - live >= max,
                TrimTo::MinId(min) => node.last_id(master) < min,
            };
            if whole && trim.refs == Refs::KeepRef {
                self.nodes.remove(&master);
                self.length -= live;
                deleted += live;
                continue;
            }
            // Redis 8.2.3 stops an approximate trim at the first node it cannot drop whole.
            if trim.approx {
                break;
            }
            let offsets: Vec<(usize, StreamId, bool)> = node
                .raw_entries(master)
                .map(|(at, e)| (at, e.id, e.is_deleted()))
                .collect();
            let mut removed = 0;
            for (at, id, was_deleted) in offsets {
                let stop = match trim.to {
                    TrimTo::MaxLen(max) => self.length <= max,
                    TrimTo::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                if was_deleted {
                    continue;
                }
                match trim.refs {
                    Refs::Acked if floor.references(&self.groups, id) => continue,
                    Refs::DelRef => refs::drop_references(&mut self.groups, id),
                    _ => {}
                }
                node.mark_deleted(at);
                self.length -= 1;
                removed += 1;
            }
            deleted += removed;
            if whole && removed == live {
                self.nodes.remove(&master);
                continue;
            }
            if !whole {
                break;
            }
            kept = Some(master);
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.edge(false).map(|e| e.id).unwrap_or(StreamId::MAX);
        }
        deleted
    }

    /// Redis's listpack size of each node, in order (MEMORY USAGE estimates Redis's figure).
    pub fn node_redis_bytes(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.values().map(Node::redis_bytes)
    }

    /// Heap bytes of the entries.
    pub fn entries_bytes(&self) -> usize {
        // A B-tree node holds up to 11 keys and values; count the per-entry share.
        self.nodes
            .values()
            .map(|n| n.heap_bytes() + std::mem::size_of::<StreamId>())
            .sum()
    }

    /// Whether `start..=end` (open ends when `None`) may hold a deleted entry (Redis's
    /// `streamRangeHasTombstones`, from the maximal deleted ID).
    pub fn range_has_tombstones(&self, start: Option<StreamId>, end: Option<StreamId>) -> bool {
        if self.length == 0 || self.max_deleted_entry_id.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted_entry_id {
            return false;
        }
        let start = start.unwrap_or(StreamId::MIN);
        let end = end.unwrap_or(StreamId::MAX);
        start <= self.max_deleted_entry_id && self.max_deleted_entry_id <= end
    }

    /// The number of entries added up to and including `id`, when it can be known (Redis's
    /// `streamEstimateDistanceFromFirstEverEntry`); [`ENTRIES_READ_UNKNOWN`] otherwise.
    pub fn entries_before(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return self.entries_added as i64,
            std::cmp::Ordering::Greater => return ENTRIES_READ_UNKNOWN,
            std::cmp::Ordering::Less => {}
        }
        if self.max_deleted_entry_id.is_zero() || self.max_deleted_entry_id < self.first_id {
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => {
                    return self.entries_added.wrapping_sub(self.length) as i64;
                }
                std::cmp::Ordering::Equal => {
                    return self.entries_added.wrapping_sub(self.length).wrapping_add(1) as i64;
                }
                std::cmp::Ordering::Greater => {}
            }
        }
        ENTRIES_READ_UNKNOWN
    }

    /// A group's lag (XINFO GROUPS): entries not yet delivered to it, `None` when unknown.
    pub fn lag(&self, group: &ConsumerGroup) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if group.entries_read != ENTRIES_READ_UNKNOWN
            && !self.range_has_tombstones(Some(group.last_id), None)
        {
            return Some((self.entries_added as i64).wrapping_sub(group.entries_read));
        }
        let read = self.entries_before(group.last_id);
        (read != ENTRIES_READ_UNKNOWN).then(|| (self.entries_added as i64).wrapping_sub(read))
    }
}

/// Forward iteration over a range of live entries.
pub struct Range<'a> {
    nodes: Option<std::collections::btree_map::Range<'a, StreamId, Node>>,
    current: Option<node::RawEntries<'a>>,
    start: StreamId,
    end: StreamId,
}

impl<'a> Iterator for Range<'a> {
    type Item = EntryRef<'a>;

    fn next(&mut self) -> Option<EntryRef<'a>> {
        loop {
            if let Some(entries) = &mut self.current {
                for (_, entry) in entries.by_ref() {
                    if entry.id > self.end {
                        self.nodes = None;
                        self.current = None;
                        return None;
                    }
                    if entry.id >= self.start && !entry.is_deleted() {
                        return Some(entry);
                    }
                }
            }
            let (&master, node) = self.nodes.as_mut()?.next()?;
            if master > self.end {
                self.nodes = None;
                return None;
            }
            self.current = Some(node.raw_entries(master));
        }
    }
}

/// Backward iteration over a range of live entries.
pub struct RevRange<'a> {
    nodes: Option<std::iter::Rev<std::collections::btree_map::Range<'a, StreamId, Node>>>,
    current: Option<(StreamId, &'a Node, Vec<u32>)>,
    start: StreamId,
    end: StreamId,
}

impl<'a> RevRange<'a> {
    fn new_nodes(
        r: std::collections::btree_map::Range<'a, StreamId, Node>,
    ) -> std::iter::Rev<std::collections::btree_map::Range<'a, StreamId, Node>> {
        r.rev()
    }
}

impl<'a> Iterator for RevRange<'a> {
    type Item = EntryRef<'a>;

    fn next(&mut self) -> Option<EntryRef<'a>> {
        loop {
            if let Some((master, node, offsets)) = &mut self.current {
                while let Some(at) = offsets.pop() {
                    let entry = node.entry(*master, at as usize);
                    if entry.id < self.start {
                        self.nodes = None;
                        self.current = None;
                        return None;
                    }
                    if entry.id <= self.end && !entry.is_deleted() {
                        return Some(entry);
                    }
                }
            }
            let (&master, node) = match self.nodes.as_mut()?.next() {
                Some(found) => found,
                None => {
                    self.nodes = None;
                    return None;
                }
            };
            self.current = Some((master, node, node.offsets(master)));
        }
    }
}
