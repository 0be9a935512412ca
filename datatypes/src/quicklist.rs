//! [`Quicklist`]: list values — a deque of packed nodes, Redis's `quicklist` encoding.
//!
//! A list must push and pop at both ends in O(1) (queues, stacks, BLPOP workers), and also reach
//! the middle (LINDEX, LSET, LINSERT, LRANGE) without costing a pointer and an allocation per
//! element. Like Redis, we keep a deque of *nodes*, each a packed run of entries in the listpack
//! entry format ([`crate::listpack`]: a length, the bytes, a backward length), bounded by
//! `list-max-listpack-size`: negative fills bound a node's bytes (-1 = 4 KB, -2 = 8 KB … -5 =
//! 64 KB), positive fills its number of entries (with an 8 KB safety cap). An element too big for
//! any node gets a node of its own.
//!
//! Unlike a listpack, which re-allocates at its exact size on every change, a node keeps spare
//! room at *both* ends of its buffer: entries live in `buf[start..]`, pushes at the back append
//! into spare capacity and pushes at the front write into the gap before `start`; when there is
//! no room the buffer grows geometrically (capped by the node limit), so a push costs amortised
//! O(1) instead of copying up to 8 KB each time. Pops only move `start` or truncate. Operations
//! in the middle rebuild one node (bounded by the node size) and split or merge nodes as needed;
//! positions are found by walking node counts from the nearer end, then entries from the nearer
//! end of the node.

use std::collections::VecDeque;

use crate::listpack::{
    encode_entry, entry_at, entry_before, entry_size, redis_entry_size, REDIS_OVERHEAD,
};

/// Byte limits of the negative fill levels: -1 = 4 KB … -5 = 64 KB (beyond -5 stays at 64 KB).
const SIZE_LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// Positive fills count entries, but a node never grows past this many bytes (Redis's safety
/// limit) unless it holds a single element.
const SAFETY_LIMIT: usize = 8192;
/// Redis's default `list-max-listpack-size`: 8 KB nodes.
pub const DEFAULT_FILL: i32 = -2;

/// Whether a node that holds `count` entries may grow to `new_size` bytes by taking one more.
fn fill_allows(fill: i32, count: usize, new_size: usize) -> bool {
    if fill < 0 {
        new_size <= SIZE_LEVELS[level(fill)]
    } else {
        new_size <= SAFETY_LIMIT && count < fill as usize
    }
}

fn level(fill: i32) -> usize {
    ((-(fill as i64)) - 1).clamp(0, SIZE_LEVELS.len() as i64 - 1) as usize
}

/// The most bytes a node of this fill normally reaches: how far spare room is worth growing.
fn byte_limit(fill: i32) -> usize {
    if fill < 0 {
        SIZE_LEVELS[level(fill)]
    } else {
        SAFETY_LIMIT
    }
}

fn varint_size(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Writes the entry encoding of `data` into `dst`, which is exactly `entry_size(data)` bytes:
/// the same bytes [`encode_entry`] appends, for writing into the gap before a node's first entry.
fn write_entry(dst: &mut [u8], data: &[u8]) {
    let mut p = 0;
    let mut v = data.len();
    while v >= 0x80 {
        dst[p] = (v as u8 & 0x7f) | 0x80;
        v >>= 7;
        p += 1;
    }
    dst[p] = v as u8;
    p += 1;
    dst[p..p + data.len()].copy_from_slice(data);
    p += data.len();
    let body = p;
    let n = varint_size(body);
    for i in (0..n).rev() {
        let group = ((body >> (7 * i)) & 0x7f) as u8;
        dst[p] = if i == n - 1 { group } else { group | 0x80 };
        p += 1;
    }
    debug_assert_eq!(p, dst.len());
}

/// Redis's default packed threshold: elements of 1 GB or more get a plain node.
const DEFAULT_PACKED_THRESHOLD: usize = 1 << 30;
/// Redis's largest packed threshold: 4 GB less 1 MB.
const MAX_PACKED_THRESHOLD: u64 = (1 << 32) - (1 << 20);

std::thread_local! {
    /// The packed threshold (DEBUG QUICKLIST-PACKED-THRESHOLD). Global in Redis; here it belongs
    /// to the thread that owns the data, so that servers (and tests) in one process do not
    /// share it.
    static PACKED_THRESHOLD: std::cell::Cell<usize> =
        const { std::cell::Cell::new(DEFAULT_PACKED_THRESHOLD) };
}

/// Sets the size from which an element gets a *plain* node of its own, as Redis's
/// `quicklistisSetPackedThreshold`: 0 restores the 1 GB default; above 4 GB less 1 MB is refused
/// (`false`).
pub fn set_packed_threshold(size: u64) -> bool {
    if size > MAX_PACKED_THRESHOLD {
        return false;
    }
    let size = if size == 0 {
        DEFAULT_PACKED_THRESHOLD
    } else {
        size as usize
    };
    PACKED_THRESHOLD.with(|t| t.set(size));
    true
}

/// Whether `item` is big enough for a plain node.
fn is_plain(item: &[u8]) -> bool {
    item.len() >= PACKED_THRESHOLD.with(|t| t.get())
}

/// One node: `count` entries packed in `buf[start..]`, with spare room before `start` and in the
/// vector's unused capacity. A *plain* node holds one element that was at least the packed
/// threshold when it came in; like Redis's, it never takes another element nor merges.
#[derive(Clone, Default)]
struct Node {
    buf: Vec<u8>,
    start: usize,
    count: usize,
    plain: bool,
}

impl Node {
    fn with_entry(item: &[u8]) -> Node {
        let mut buf = Vec::with_capacity(entry_size(item));
        encode_entry(&mut buf, item);
        Node {
            buf,
            start: 0,
            count: 1,
            plain: is_plain(item),
        }
    }

    /// Bytes of entries.
    fn size(&self) -> usize {
        self.buf.len() - self.start
    }

    fn push_back(&mut self, item: &[u8], limit: usize) {
        let need = entry_size(item);
        if self.buf.capacity() - self.buf.len() < need {
            // Grow geometrically, but not (much) past what the node may hold.
            let size = self.size();
            let room = limit.saturating_sub(size + need);
            self.buf.reserve_exact(need + size.min(room));
        }
        encode_entry(&mut self.buf, item);
        self.count += 1;
    }

    fn push_front(&mut self, item: &[u8], limit: usize) {
        let need = entry_size(item);
        if self.start < need {
            let size = self.size();
            let room = limit.saturating_sub(size + need);
            let gap = need + size.min(room);
            let mut buf = Vec::with_capacity(gap + size);
            buf.resize(gap, 0);
            buf.extend_from_slice(&self.buf[self.start..]);
            self.buf = buf;
            self.start = gap;
        }
        let at = self.start - need;
        write_entry(&mut self.buf[at..self.start], item);
        self.start = at;
        self.count += 1;
    }

    /// Byte offset of entry `i` (`i == count`: the end), walking from the nearer end.
    fn offset_of(&self, i: usize) -> usize {
        if i <= self.count / 2 {
            let mut pos = self.start;
            for _ in 0..i {
                pos = entry_at(&self.buf, pos).1;
            }
            pos
        } else {
            let mut pos = self.buf.len();
            for _ in i..self.count {
                pos = entry_before(&self.buf, pos).0;
            }
            pos
        }
    }

    fn get(&self, i: usize) -> &[u8] {
        let (data, _) = entry_at(&self.buf, self.offset_of(i));
        &self.buf[data]
    }

    /// Replaces the entries in bytes `from..to` (`removed` of them) with `items`, rebuilding the
    /// node at its exact size.
    fn splice(&mut self, from: usize, to: usize, removed: usize, items: &[&[u8]]) {
        let added: usize = items.iter().map(|i| entry_size(i)).sum();
        let mut buf = Vec::with_capacity(self.size() - (to - from) + added);
        buf.extend_from_slice(&self.buf[self.start..from]);
        for item in items {
            encode_entry(&mut buf, item);
        }
        buf.extend_from_slice(&self.buf[to..]);
        self.buf = buf;
        self.start = 0;
        self.count = self.count - removed + items.len();
    }

    /// Splits off entries `i..` into a new node; `self` keeps `..i`.
    fn split_off(&mut self, i: usize) -> Node {
        let at = self.offset_of(i);
        let right = Node {
            buf: self.buf[at..].to_vec(),
            start: 0,
            count: self.count - i,
            plain: false,
        };
        self.buf.truncate(at);
        self.buf.shrink_to_fit();
        self.count = i;
        right
    }

    /// Appends all of `other`'s entries.
    fn append(&mut self, other: &Node) {
        self.buf.extend_from_slice(&other.buf[other.start..]);
        self.count += other.count;
    }

    /// Drops the first `n` entries (fewer than `count`).
    fn drop_front(&mut self, n: usize) {
        for _ in 0..n {
            self.start = entry_at(&self.buf, self.start).1;
        }
        self.count -= n;
    }

    /// Drops the last `n` entries (fewer than `count`).
    fn drop_back(&mut self, n: usize) {
        let mut end = self.buf.len();
        for _ in 0..n {
            end = entry_before(&self.buf, end).0;
        }
        self.buf.truncate(end);
        self.count -= n;
    }
}

/// A list of byte strings: nodes of packed entries, pushed and popped at both ends.
#[derive(Clone)]
pub struct Quicklist {
    nodes: VecDeque<Node>,
    len: usize,
    /// `list-max-listpack-size` when the list was created (as in Redis, a later change of the
    /// setting does not reshape existing lists).
    fill: i32,
}

impl Default for Quicklist {
    fn default() -> Self {
        Self::with_fill(DEFAULT_FILL)
    }
}

impl std::fmt::Debug for Quicklist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

impl Quicklist {
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list whose nodes follow `fill` (`list-max-listpack-size`).
    pub fn with_fill(fill: i32) -> Self {
        Quicklist {
            nodes: VecDeque::new(),
            len: 0,
            fill,
        }
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

    /// The fill the list was created with.
    pub fn fill(&self) -> i32 {
        self.fill
    }

    /// Bytes of packed entries in all nodes.
    pub fn byte_size(&self) -> usize {
        self.nodes.iter().map(Node::size).sum()
    }

    /// Each node's size as Redis's listpack would have it (its entry encodings plus the 6-byte
    /// header and the end byte), head first: what MEMORY USAGE samples.
    pub fn node_listpack_sizes(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().map(|node| {
            if node.plain {
                return node.size();
            }
            let mut size = REDIS_OVERHEAD;
            let mut pos = node.start;
            for _ in 0..node.count {
                let (data, next) = entry_at(&node.buf, pos);
                size += redis_entry_size(&node.buf[data]);
                pos = next;
            }
            size
        })
    }

    /// Whether `node` may take `item` too.
    fn allows(&self, node: &Node, item: &[u8]) -> bool {
        !node.plain
            && !is_plain(item)
            && fill_allows(self.fill, node.count, node.size() + entry_size(item))
    }

    /// Most lists are small: their first node gets a one-slot deque (a deque's first push
    /// would reserve four); more slots come by doubling as nodes are added.
    fn reserve_node(&mut self) {
        if self.nodes.capacity() == 0 {
            self.nodes.reserve_exact(1);
        }
    }

    pub fn push_back(&mut self, item: &[u8]) {
        let limit = byte_limit(self.fill);
        match self.nodes.back() {
            Some(node) if self.allows(node, item) => {
                let node = self.nodes.back_mut().expect("checked");
                node.push_back(item, limit);
            }
            _ => {
                self.reserve_node();
                self.nodes.push_back(Node::with_entry(item));
            }
        }
        self.len += 1;
    }

    pub fn push_front(&mut self, item: &[u8]) {
        let limit = byte_limit(self.fill);
        match self.nodes.front() {
            Some(node) if self.allows(node, item) => {
                let node = self.nodes.front_mut().expect("checked");
                node.push_front(item, limit);
            }
            _ => {
                self.reserve_node();
                self.nodes.push_front(Node::with_entry(item));
            }
        }
        self.len += 1;
    }

    pub fn front(&self) -> Option<&[u8]> {
        let node = self.nodes.front()?;
        let (data, _) = entry_at(&node.buf, node.start);
        Some(&node.buf[data])
    }

    pub fn back(&self) -> Option<&[u8]> {
        let node = self.nodes.back()?;
        let (_, data) = entry_before(&node.buf, node.buf.len());
        Some(&node.buf[data])
    }

    /// Removes the first element, handing it to `f` in place (no copy).
    pub fn pop_front_with<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let node = self.nodes.front_mut()?;
        let (data, next) = entry_at(&node.buf, node.start);
        let result = f(&node.buf[data]);
        node.start = next;
        node.count -= 1;
        if node.count == 0 {
            self.nodes.pop_front();
        }
        self.len -= 1;
        Some(result)
    }

    /// Removes the last element, handing it to `f` in place (no copy).
    pub fn pop_back_with<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let node = self.nodes.back_mut()?;
        let (start, data) = entry_before(&node.buf, node.buf.len());
        let result = f(&node.buf[data]);
        node.buf.truncate(start);
        node.count -= 1;
        if node.count == 0 {
            self.nodes.pop_back();
        }
        self.len -= 1;
        Some(result)
    }

    pub fn pop_front(&mut self) -> Option<Vec<u8>> {
        self.pop_front_with(<[u8]>::to_vec)
    }

    pub fn pop_back(&mut self) -> Option<Vec<u8>> {
        self.pop_back_with(<[u8]>::to_vec)
    }

    /// The node holding element `index` (< len) and the element's position in it, walking node
    /// counts from the nearer end.
    fn locate(&self, index: usize) -> (usize, usize) {
        debug_assert!(index < self.len);
        if index < self.len / 2 {
            let mut rest = index;
            for (n, node) in self.nodes.iter().enumerate() {
                if rest < node.count {
                    return (n, rest);
                }
                rest -= node.count;
            }
        } else {
            let mut rest = self.len - index;
            for (n, node) in self.nodes.iter().enumerate().rev() {
                if rest <= node.count {
                    return (n, node.count - rest);
                }
                rest -= node.count;
            }
        }
        unreachable!("index {index} within length {}", self.len)
    }

    /// Element `index` (0-based from the head).
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let (n, i) = self.locate(index);
        Some(self.nodes[n].get(i))
    }

    /// Replaces element `index`; false if out of range.
    pub fn set(&mut self, index: usize, item: &[u8]) -> bool {
        if index >= self.len {
            return false;
        }
        let (n, i) = self.locate(index);
        let fill = self.fill;
        let node = &mut self.nodes[n];
        let from = node.offset_of(i);
        let to = entry_at(&node.buf, from).1;
        let new_size = node.size() - (to - from) + entry_size(item);
        // A plain element replaces a plain one in place; between plain and packed the element
        // moves to a node of the right kind.
        let same_kind = node.plain == is_plain(item);
        if same_kind && (node.count == 1 || fill_allows(fill, node.count - 1, new_size)) {
            node.splice(from, to, 1, &[item]);
        } else {
            self.remove(index);
            self.insert(index, item);
        }
        true
    }

    /// Inserts `item` so that it becomes element `index` (`index == len` appends).
    pub fn insert(&mut self, index: usize, item: &[u8]) {
        assert!(index <= self.len, "insert out of bounds");
        if index == 0 {
            return self.push_front(item);
        }
        if index == self.len {
            return self.push_back(item);
        }
        let (n, i) = self.locate(index);
        let limit = byte_limit(self.fill);
        if self.allows(&self.nodes[n], item) {
            let node = &mut self.nodes[n];
            let at = node.offset_of(i);
            node.splice(at, at, 0, &[item]);
        } else if i == 0 {
            // At a node boundary: the end of the previous node, or a node of its own.
            if self.allows(&self.nodes[n - 1], item) {
                self.nodes[n - 1].push_back(item, limit);
            } else {
                self.nodes.insert(n, Node::with_entry(item));
            }
        } else {
            // Inside a full node: split it there and put the item on whichever side has room.
            let right = self.nodes[n].split_off(i);
            if self.allows(&self.nodes[n], item) {
                self.nodes[n].push_back(item, limit);
                self.nodes.insert(n + 1, right);
            } else if self.allows(&right, item) {
                let mut right = right;
                right.push_front(item, limit);
                self.nodes.insert(n + 1, right);
            } else {
                self.nodes.insert(n + 1, Node::with_entry(item));
                self.nodes.insert(n + 2, right);
            }
        }
        self.len += 1;
    }

    /// Removes element `index` (< len).
    pub fn remove(&mut self, index: usize) {
        assert!(index < self.len, "remove out of bounds");
        let (n, i) = self.locate(index);
        let node = &mut self.nodes[n];
        let from = node.offset_of(i);
        let to = entry_at(&node.buf, from).1;
        node.splice(from, to, 1, &[]);
        self.len -= 1;
        if node.count == 0 {
            self.nodes.remove(n);
        } else {
            self.merge_around(n);
        }
    }

    /// Merges node `n` into a neighbour when together they fit in one node, so that deletions
    /// in the middle do not leave a trail of small nodes.
    fn merge_around(&mut self, n: usize) {
        let mut n = n;
        if n > 0 && self.can_merge(n - 1, n) {
            let right = self.nodes.remove(n).expect("exists");
            self.nodes[n - 1].append(&right);
            n -= 1;
        }
        if n + 1 < self.nodes.len() && self.can_merge(n, n + 1) {
            let right = self.nodes.remove(n + 1).expect("exists");
            self.nodes[n].append(&right);
        }
    }

    fn can_merge(&self, a: usize, b: usize) -> bool {
        let (a, b) = (&self.nodes[a], &self.nodes[b]);
        !a.plain && !b.plain && fill_allows(self.fill, a.count + b.count - 1, a.size() + b.size())
    }

    /// Removes the first `n` elements (all if `n >= len`).
    pub fn drain_front(&mut self, n: usize) {
        let mut n = n.min(self.len);
        self.len -= n;
        while n > 0 {
            let node = self.nodes.front_mut().expect("counted");
            if node.count <= n {
                n -= node.count;
                self.nodes.pop_front();
            } else {
                node.drop_front(n);
                n = 0;
            }
        }
    }

    /// Removes the last `n` elements (all if `n >= len`).
    pub fn drain_back(&mut self, n: usize) {
        let mut n = n.min(self.len);
        self.len -= n;
        while n > 0 {
            let node = self.nodes.back_mut().expect("counted");
            if node.count <= n {
                n -= node.count;
                self.nodes.pop_back();
            } else {
                node.drop_back(n);
                n = 0;
            }
        }
    }

    /// Removes up to `limit` elements equal to `item` (0 = all of them), scanning from the head,
    /// or from the tail if `from_tail`. Returns how many were removed.
    pub fn remove_matching(&mut self, item: &[u8], limit: usize, from_tail: bool) -> usize {
        let mut removed = 0;
        let mut touched = false;
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        let mut k = 0;
        while k < self.nodes.len() {
            let n = if from_tail {
                self.nodes.len() - 1 - k
            } else {
                k
            };
            let node = &self.nodes[n];
            ranges.clear();
            let mut pos = node.start;
            while pos < node.buf.len() {
                let (data, next) = entry_at(&node.buf, pos);
                if &node.buf[data] == item {
                    ranges.push((pos, next));
                }
                pos = next;
            }
            if limit > 0 && ranges.len() > limit - removed {
                let keep = limit - removed;
                if from_tail {
                    ranges.drain(..ranges.len() - keep);
                } else {
                    ranges.truncate(keep);
                }
            }
            k += 1;
            if ranges.is_empty() {
                continue;
            }
            let node = &mut self.nodes[n];
            let mut buf =
                Vec::with_capacity(node.size() - ranges.iter().map(|(a, b)| b - a).sum::<usize>());
            let mut copied = node.start;
            for &(from, to) in &ranges {
                buf.extend_from_slice(&node.buf[copied..from]);
                copied = to;
            }
            buf.extend_from_slice(&node.buf[copied..]);
            node.buf = buf;
            node.start = 0;
            node.count -= ranges.len();
            removed += ranges.len();
            self.len -= ranges.len();
            touched = true;
            if node.count == 0 {
                self.nodes.remove(n);
                // The next node to visit moved into this one's place in the walk.
                k -= 1;
            }
            if limit > 0 && removed == limit {
                break;
            }
        }
        if touched {
            self.merge_small_nodes();
        }
        removed
    }

    /// One pass merging neighbours that fit together (after deletions in the middle).
    fn merge_small_nodes(&mut self) {
        let mut n = 0;
        while n + 1 < self.nodes.len() {
            if self.can_merge(n, n + 1) {
                let right = self.nodes.remove(n + 1).expect("exists");
                self.nodes[n].append(&right);
            } else {
                n += 1;
            }
        }
    }

    /// Index of the first element equal to `item`, from the head.
    pub fn position(&self, item: &[u8]) -> Option<usize> {
        self.iter().position(|e| e == item)
    }

    /// All elements, head to tail (reversible).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            nodes: &self.nodes,
            front: (0, self.nodes.front().map_or(0, |n| n.start)),
            back: (
                self.nodes.len().saturating_sub(1),
                self.nodes.back().map_or(0, |n| n.buf.len()),
            ),
            remaining: self.len,
        }
    }

    /// The elements from `index` to the tail, finding `index` from the nearer end.
    pub fn iter_from(&self, index: usize) -> Iter<'_> {
        if index >= self.len {
            let mut it = self.iter();
            it.remaining = 0;
            return it;
        }
        let (n, i) = self.locate(index);
        let mut it = self.iter();
        it.front = (n, self.nodes[n].offset_of(i));
        it.remaining = self.len - index;
        it
    }
}

/// Iterator over a quicklist's elements, from either end.
pub struct Iter<'a> {
    nodes: &'a VecDeque<Node>,
    /// (node, byte offset of the next entry from the front).
    front: (usize, usize),
    /// (node, byte offset just past the next entry from the back).
    back: (usize, usize),
    remaining: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        let (mut n, mut pos) = self.front;
        let mut node = &self.nodes[n];
        if pos == node.buf.len() {
            n += 1;
            node = &self.nodes[n];
            pos = node.start;
        }
        let (data, next) = entry_at(&node.buf, pos);
        self.front = (n, next);
        self.remaining -= 1;
        Some(&node.buf[data])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<'a> DoubleEndedIterator for Iter<'a> {
    #[inline]
    fn next_back(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        let (mut n, mut end) = self.back;
        let mut node = &self.nodes[n];
        if end == node.start {
            n -= 1;
            node = &self.nodes[n];
            end = node.buf.len();
        }
        let (start, data) = entry_before(&node.buf, end);
        self.back = (n, start);
        self.remaining -= 1;
        Some(&node.buf[data])
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Checks the structure: counts add up, no empty node, every node within its fill (a node
    /// may exceed it only when it holds a single element).
    fn check_invariants(q: &Quicklist) {
        let total: usize = q.nodes.iter().map(|n| n.count).sum();
        assert_eq!(total, q.len);
        for node in &q.nodes {
            assert!(node.count > 0, "empty node");
            assert!(
                !node.plain || node.count == 1,
                "a plain node holds one element"
            );
            let mut pos = node.start;
            let mut count = 0;
            while pos < node.buf.len() {
                pos = entry_at(&node.buf, pos).1;
                count += 1;
            }
            assert_eq!(pos, node.buf.len());
            assert_eq!(count, node.count);
            if node.count > 1 {
                assert!(
                    fill_allows(q.fill, node.count - 1, node.size()),
                    "node of {} entries, {} bytes over fill {}",
                    node.count,
                    node.size(),
                    q.fill
                );
            }
        }
    }

    #[test]
    fn front_writes_match_the_listpack_codec() {
        for len in [0usize, 1, 5, 126, 127, 128, 200, 16_383, 16_384, 70_000] {
            let data = vec![b'x'; len];
            let mut expected = Vec::new();
            encode_entry(&mut expected, &data);
            let mut got = vec![0; entry_size(&data)];
            write_entry(&mut got, &data);
            assert_eq!(got, expected, "length {len}");
        }
    }

    #[test]
    fn nodes_follow_the_fill() {
        let mut q = Quicklist::with_fill(-2);
        for i in 0..10_000 {
            q.push_back(format!("element:{i}").as_bytes());
        }
        // ~14 bytes per entry: about 580 per 8 KB node.
        assert!((15..=20).contains(&q.node_count()), "{}", q.node_count());
        check_invariants(&q);
        let mut q = Quicklist::with_fill(3);
        for i in 0..10 {
            q.push_front(format!("{i}").as_bytes());
        }
        assert_eq!(q.node_count(), 4);
        check_invariants(&q);
        // Fill 0 is one element per node; a huge element gets a node of its own.
        let mut q = Quicklist::with_fill(0);
        q.push_back(b"a");
        q.push_back(b"b");
        assert_eq!(q.node_count(), 2);
        let mut q = Quicklist::new();
        q.push_back(b"a");
        q.push_back(&[b'z'; 20_000]);
        q.push_back(b"b");
        assert_eq!(q.node_count(), 3);
        check_invariants(&q);
    }

    #[test]
    fn pushes_reuse_spare_room() {
        let mut q = Quicklist::new();
        for _ in 0..500 {
            q.push_front(b"abcdef");
        }
        let node = &q.nodes[0];
        assert!(node.buf.capacity() <= 2 * 8192, "{}", node.buf.capacity());
        for _ in 0..500 {
            q.pop_back();
        }
        assert!(q.is_empty() && q.node_count() == 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        PushBack(Vec<u8>),
        PushFront(Vec<u8>),
        PopBack,
        PopFront,
        Insert(usize, Vec<u8>),
        Remove(usize),
        Set(usize, Vec<u8>),
        DrainFront(usize),
        DrainBack(usize),
        RemoveMatching(Vec<u8>, usize, bool),
    }

    fn item() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => proptest::collection::vec(b'a'..b'd', 0..3),
            2 => proptest::collection::vec(any::<u8>(), 0..200),
            1 => proptest::collection::vec(any::<u8>(), 1000..5000),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => item().prop_map(Op::PushBack),
            4 => item().prop_map(Op::PushFront),
            2 => Just(Op::PopBack),
            2 => Just(Op::PopFront),
            3 => (any::<usize>(), item()).prop_map(|(i, v)| Op::Insert(i, v)),
            2 => any::<usize>().prop_map(Op::Remove),
            2 => (any::<usize>(), item()).prop_map(|(i, v)| Op::Set(i, v)),
            1 => (0usize..5).prop_map(Op::DrainFront),
            1 => (0usize..5).prop_map(Op::DrainBack),
            1 => (proptest::collection::vec(b'a'..b'd', 0..3), 0usize..3, any::<bool>())
                .prop_map(|(v, l, t)| Op::RemoveMatching(v, l, t)),
        ]
    }

    /// Elements at or above the packed threshold get nodes of their own, which take no
    /// neighbour and never merge; LSET moves an element between plain and packed nodes.
    #[test]
    fn plain_nodes_hold_one_element() {
        assert!(!set_packed_threshold(MAX_PACKED_THRESHOLD + 1));
        assert!(set_packed_threshold(5));
        let mut q = Quicklist::with_fill(-2);
        for item in [&b"aa"[..], b"bb", b"plain", b"cc", b"longer!", b"dd"] {
            q.push_back(item);
        }
        // [aa bb] [plain] [cc] [longer!] [dd]
        assert_eq!(q.node_count(), 5);
        q.insert(1, b"biggest");
        assert_eq!(q.node_count(), 7, "a plain element splits the packed node");
        q.remove(1);
        assert_eq!(
            q.node_count(),
            6,
            "packed halves do not merge across a plain node"
        );
        q.set(2, b"xx");
        assert_eq!(q.get(2), Some(&b"xx"[..]));
        q.set(0, b"plain again");
        assert_eq!(q.get(0), Some(&b"plain again"[..]));
        check_invariants(&q);
        let items: Vec<&[u8]> = q.iter().collect();
        let expected: Vec<&[u8]> = vec![b"plain again", b"bb", b"xx", b"cc", b"longer!", b"dd"];
        assert_eq!(items, expected);
        assert!(set_packed_threshold(0));
        q.push_back(b"plain-sized but packed now");
        check_invariants(&q);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// A quicklist behaves like a VecDeque of byte strings, whatever its fill.
        #[test]
        fn behaves_like_a_deque(
            fill in prop_oneof![Just(-2), Just(-1), Just(1), Just(2), Just(3), Just(0), Just(-7)],
            // The packed threshold: the default, or low enough that some elements are plain.
            threshold in prop_oneof![Just(0u64), Just(1), Just(2), Just(3)],
            ops in proptest::collection::vec(op(), 1..120),
        ) {
            assert!(set_packed_threshold(threshold));
            let mut q = Quicklist::with_fill(fill);
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for op in ops {
                match op {
                    Op::PushBack(v) => { q.push_back(&v); model.push_back(v); }
                    Op::PushFront(v) => { q.push_front(&v); model.push_front(v); }
                    Op::PopBack => prop_assert_eq!(q.pop_back(), model.pop_back()),
                    Op::PopFront => prop_assert_eq!(q.pop_front(), model.pop_front()),
                    Op::Insert(i, v) => {
                        let i = i % (model.len() + 1);
                        q.insert(i, &v);
                        model.insert(i, v);
                    }
                    Op::Remove(i) => if !model.is_empty() {
                        let i = i % model.len();
                        q.remove(i);
                        model.remove(i);
                    },
                    Op::Set(i, v) => {
                        let i = if model.is_empty() { i % 3 } else { i % (model.len() + 1) };
                        let ok = q.set(i, &v);
                        prop_assert_eq!(ok, i < model.len());
                        if ok { model[i] = v; }
                    }
                    Op::DrainFront(n) => { q.drain_front(n); model.drain(..n.min(model.len())); }
                    Op::DrainBack(n) => {
                        q.drain_back(n);
                        let keep = model.len().saturating_sub(n);
                        model.truncate(keep);
                    }
                    Op::RemoveMatching(v, limit, from_tail) => {
                        let expected = remove_from_model(&mut model, &v, limit, from_tail);
                        prop_assert_eq!(q.remove_matching(&v, limit, from_tail), expected);
                    }
                }
                check_invariants(&q);
                prop_assert_eq!(q.len(), model.len());
                let forward: Vec<&[u8]> = q.iter().collect();
                let expected: Vec<&[u8]> = model.iter().map(|v| v.as_slice()).collect();
                prop_assert_eq!(&forward, &expected);
                let backward: Vec<&[u8]> = q.iter().rev().collect();
                let expected_back: Vec<&[u8]> = model.iter().rev().map(|v| v.as_slice()).collect();
                prop_assert_eq!(backward, expected_back);
                prop_assert_eq!(q.front(), model.front().map(|v| v.as_slice()));
                prop_assert_eq!(q.back(), model.back().map(|v| v.as_slice()));
                for (i, v) in model.iter().enumerate() {
                    prop_assert_eq!(q.get(i), Some(v.as_slice()));
                }
                prop_assert_eq!(q.get(model.len()), None);
                for start in [0, 1, model.len() / 2, model.len().saturating_sub(1), model.len()] {
                    let tail: Vec<&[u8]> = q.iter_from(start).collect();
                    let expected: Vec<&[u8]> = model.iter().skip(start).map(|v| v.as_slice()).collect();
                    prop_assert_eq!(tail, expected);
                    // Mixed ends on a suffix iterator meet in the middle.
                    let mut it = q.iter_from(start);
                    let mut both = Vec::new();
                    while let Some(a) = it.next() {
                        both.push(a);
                        if let Some(b) = it.next_back() { both.push(b); }
                    }
                    prop_assert_eq!(both.len(), model.len().saturating_sub(start));
                }
            }
        }
    }

    fn remove_from_model(
        model: &mut VecDeque<Vec<u8>>,
        v: &[u8],
        limit: usize,
        from_tail: bool,
    ) -> usize {
        let mut removed = 0;
        let mut out: VecDeque<Vec<u8>> = VecDeque::new();
        let items: Vec<Vec<u8>> = if from_tail {
            model.drain(..).rev().collect()
        } else {
            model.drain(..).collect()
        };
        for e in items {
            if e == v && (limit == 0 || removed < limit) {
                removed += 1;
            } else if from_tail {
                out.push_front(e);
            } else {
                out.push_back(e);
            }
        }
        *model = out;
        removed
    }
}
