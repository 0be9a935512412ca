//! The one-block form of a list ([`Small`]): a list whose entries fit one packed node, held as
//! that node's entries behind an eight-byte header in a single exactly-sized allocation.
//!
//! Most lists are small (a queue between two workers, the last ten events of a user), and the
//! many-node form costs three allocations for them — the list's header, a one-slot node deque
//! and the node's buffer — where Redis holds one listpack. Here a list of ten short elements is
//! one 128-byte chunk. The entries are encoded exactly as a node's ([`crate::listpack`]'s entry
//! codec), so the form holds what a list of one raw, packed node holds and the decisions about
//! it (the fill, Redis's size estimate) are the node's; every change rebuilds the block at its
//! new size, as Redis's listpack is reallocated on every change.
//!
//! ```text
//! [count: u16] [Redis's listpack bytes - 7: u16] [fill: i16] [compress depth (14 bits) | encoding (2 bits): u16] [entry] [entry] …
//! ```
//!
//! A list whose count, Redis size, fill or depth does not fit these fields stays in the
//! many-node form ([`Small::fits`]): the header is a memory saving, never a limit.

use std::ops::Range;

use crate::listpack::{entry_at, entry_before, entry_size, redis_entry_size, REDIS_OVERHEAD};

use super::nodes::{
    is_plain, node_limits, offset_in, redis_bytes_of, redis_fill_allows, write_entry, Node,
    SIZE_ESTIMATE_OVERHEAD,
};
use super::ListEncoding;

/// Bytes of the header before the entries.
pub(super) const HEADER: usize = 8;
/// The largest compress depth the header holds (14 bits).
const MAX_DEPTH: usize = (1 << 14) - 1;

/// A list of one packed node in one block; see the module documentation.
#[derive(Clone)]
pub(super) struct Small {
    block: Box<[u8]>,
}

fn encoding_bits(encoding: ListEncoding) -> u16 {
    match encoding {
        ListEncoding::Quicklist70 => 0,
        ListEncoding::Listpack => 1,
        ListEncoding::Quicklist => 2,
    }
}

impl Small {
    /// Where the block starts (see `Quicklist::heap_address`).
    #[inline]
    pub(super) fn address(&self) -> *const u8 {
        self.block.as_ptr()
    }

    /// An empty list with these settings, if the header holds them.
    pub(super) fn new(fill: i32, compress: usize, encoding: ListEncoding) -> Option<Small> {
        let fill = i16::try_from(fill).ok()?;
        if compress > MAX_DEPTH {
            return None;
        }
        let mut block = vec![0u8; HEADER];
        block[4..6].copy_from_slice(&fill.to_le_bytes());
        let meta = compress as u16 | (encoding_bits(encoding) << 14);
        block[6..8].copy_from_slice(&meta.to_le_bytes());
        Some(Small {
            block: block.into_boxed_slice(),
        })
    }

    /// The list of one raw packed `node` (or none), if it fits.
    pub(super) fn from_node(
        node: Option<&Node>,
        fill: i32,
        compress: usize,
        encoding: ListEncoding,
    ) -> Option<Small> {
        let mut small = Small::new(fill, compress, encoding)?;
        let Some(node) = node else {
            return Some(small);
        };
        if node.plain || node.lzf.is_some() || !Small::fits(node.count, node.redis_sz) {
            return None;
        }
        let mut block = Vec::with_capacity(HEADER + node.buf.len() - node.start);
        block.extend_from_slice(&small.block);
        block.extend_from_slice(&node.buf[node.start..]);
        small.block = block.into_boxed_slice();
        small.set_counts(node.count, node.redis_sz);
        Some(small)
    }

    /// The node holding these entries (none for an empty list).
    pub(super) fn to_node(&self) -> Option<Node> {
        (self.count() > 0).then(|| Node {
            buf: self.entries().to_vec(),
            start: 0,
            count: self.count(),
            plain: false,
            lzf: None,
            redis_sz: self.redis_sz(),
        })
    }

    /// Whether the header holds a count and a Redis size.
    pub(super) fn fits(count: usize, redis_sz: usize) -> bool {
        count <= u16::MAX as usize
            && redis_sz >= REDIS_OVERHEAD
            && redis_sz - REDIS_OVERHEAD <= u16::MAX as usize
    }

    fn field(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.block[at], self.block[at + 1]])
    }

    fn set_field(&mut self, at: usize, value: u16) {
        self.block[at..at + 2].copy_from_slice(&value.to_le_bytes());
    }

    fn set_counts(&mut self, count: usize, redis_sz: usize) {
        debug_assert!(Small::fits(count, redis_sz));
        self.set_field(0, count as u16);
        self.set_field(2, (redis_sz - REDIS_OVERHEAD) as u16);
    }

    pub(super) fn count(&self) -> usize {
        self.field(0) as usize
    }

    /// The bytes of Redis's listpack for these entries, header and end byte included.
    pub(super) fn redis_sz(&self) -> usize {
        self.field(2) as usize + REDIS_OVERHEAD
    }

    pub(super) fn fill(&self) -> i32 {
        self.field(4) as i16 as i32
    }

    pub(super) fn compress(&self) -> usize {
        (self.field(6) & MAX_DEPTH as u16) as usize
    }

    pub(super) fn encoding(&self) -> ListEncoding {
        match self.field(6) >> 14 {
            0 => ListEncoding::Quicklist70,
            1 => ListEncoding::Listpack,
            _ => ListEncoding::Quicklist,
        }
    }

    pub(super) fn set_encoding(&mut self, encoding: ListEncoding) {
        let meta = (self.field(6) & MAX_DEPTH as u16) | (encoding_bits(encoding) << 14);
        self.set_field(6, meta);
    }

    /// The entries, back to back.
    #[inline]
    pub(super) fn entries(&self) -> &[u8] {
        &self.block[HEADER..]
    }

    /// Whether the node may take `item` as one more entry: the many-node form's decision for
    /// its one node (an empty list starts a node for any packed element), within the header.
    pub(super) fn accepts(&self, item: &[u8]) -> bool {
        Small::accepts_after(self.fill(), self.count(), self.redis_sz(), item)
    }

    fn accepts_after(fill: i32, count: usize, redis_sz: usize, item: &[u8]) -> bool {
        !is_plain(item)
            && Small::fits(count + 1, redis_sz + redis_entry_size(item))
            && (count == 0
                || redis_fill_allows(fill, redis_sz + item.len() + SIZE_ESTIMATE_OVERHEAD, |f| {
                    count < f
                }))
    }

    /// Byte offset (in [`Small::entries`]) of entry `i` (`i == count`: the end).
    pub(super) fn offset_of(&self, i: usize) -> usize {
        offset_in(self.entries(), 0, self.count(), i)
    }

    /// Element `i` (< count).
    pub(super) fn get(&self, i: usize) -> &[u8] {
        let entries = self.entries();
        let (data, _) = entry_at(entries, self.offset_of(i));
        &entries[data]
    }

    /// The byte range of the entry at `pos` in the entries.
    pub(super) fn entry_range(&self, pos: usize) -> Range<usize> {
        pos..entry_at(self.entries(), pos).1
    }

    /// Replaces the entries in `range` (`removed` of them) with `items`, at the block's new
    /// exact size; false, changing nothing, if the result would not fit the header.
    pub(super) fn splice(&mut self, range: Range<usize>, removed: usize, items: &[&[u8]]) -> bool {
        let count = self.count() - removed + items.len();
        let redis_sz = self.redis_sz() - redis_bytes_of(self.entries(), range.start, range.end)
            + items.iter().map(|i| redis_entry_size(i)).sum::<usize>();
        if !Small::fits(count, redis_sz) {
            return false;
        }
        let added: usize = items.iter().map(|i| entry_size(i)).sum();
        let (from, to) = (HEADER + range.start, HEADER + range.end);
        let mut block = std::mem::take(&mut self.block).into_vec();
        let old_len = block.len();
        if added > to - from {
            // Grows by exactly what is added (a `resize` alone could double the capacity).
            block.reserve_exact(added - (to - from));
            block.resize(old_len + added - (to - from), 0);
            block.copy_within(to..old_len, from + added);
        } else {
            block.copy_within(to..old_len, from + added);
            block.truncate(old_len - (to - from) + added);
        }
        let mut at = from;
        for item in items {
            let size = entry_size(item);
            write_entry(&mut block[at..at + size], item);
            at += size;
        }
        self.block = block.into_boxed_slice();
        self.set_counts(count, redis_sz);
        true
    }

    /// Removes the first element, handing it to `f` first.
    pub(super) fn pop_front_with<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> R {
        let entries = self.entries();
        let (data, next) = entry_at(entries, 0);
        let result = f(&entries[data]);
        self.splice(0..next, 1, &[]);
        result
    }

    /// Removes the last element, handing it to `f` first.
    pub(super) fn pop_back_with<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> R {
        let entries = self.entries();
        let end = entries.len();
        let (start, data) = entry_before(entries, end);
        let result = f(&entries[data]);
        self.splice(start..end, 1, &[]);
        result
    }

    /// How many of `items`, pushed one by one, the node takes (each must be accepted after the
    /// ones before it), calling `before_each` with the count, the Redis size and each item
    /// first, as a push checks its growth first.
    pub(super) fn accepted_prefix<T: AsRef<[u8]>>(
        &self,
        items: &[T],
        mut before_each: impl FnMut(usize, usize, &[u8]),
    ) -> usize {
        let (mut count, mut redis_sz) = (self.count(), self.redis_sz());
        for (k, item) in items.iter().enumerate() {
            let item = item.as_ref();
            before_each(count, redis_sz, item);
            if !Small::accepts_after(self.fill(), count, redis_sz, item) {
                return k;
            }
            count += 1;
            redis_sz += redis_entry_size(item);
        }
        items.len()
    }

    /// Removes up to `limit` entries equal to `item` (0: all), from the head or the tail.
    pub(super) fn remove_matching(&mut self, item: &[u8], limit: usize, from_tail: bool) -> usize {
        let entries = self.entries();
        let mut ranges: Vec<Range<usize>> = Vec::new();
        let mut pos = 0;
        while pos < entries.len() {
            let (data, next) = entry_at(entries, pos);
            if &entries[data] == item {
                ranges.push(pos..next);
            }
            pos = next;
        }
        if limit > 0 && ranges.len() > limit {
            if from_tail {
                ranges.drain(..ranges.len() - limit);
            } else {
                ranges.truncate(limit);
            }
        }
        if ranges.is_empty() {
            return 0;
        }
        let gone: usize = ranges.iter().map(|r| r.len()).sum();
        let redis_sz = self.redis_sz()
            - ranges
                .iter()
                .map(|r| redis_bytes_of(entries, r.start, r.end))
                .sum::<usize>();
        let mut block = Vec::with_capacity(self.block.len() - gone);
        block.extend_from_slice(&self.block[..HEADER]);
        let mut copied = 0;
        for range in &ranges {
            block.extend_from_slice(&entries[copied..range.start]);
            copied = range.end;
        }
        block.extend_from_slice(&entries[copied..]);
        let count = self.count() - ranges.len();
        self.block = block.into_boxed_slice();
        self.set_counts(count, redis_sz);
        ranges.len()
    }

    /// Redis's `listTypeTryConvertQuicklist` for this one node: whether it is within the node
    /// limit divided by `divisor`.
    pub(super) fn within(&self, divisor: usize) -> bool {
        let (size_limit, count_limit) = node_limits(self.fill());
        self.redis_sz() <= size_limit / divisor && self.count() <= count_limit / divisor
    }
}
