//! [`Quicklist`]: list values — a deque of packed nodes, Redis's `quicklist` encoding, with a
//! list of one small node held in a single block.
//!
//! A list must push and pop at both ends in O(1) (queues, stacks, BLPOP workers), and also reach
//! the middle (LINDEX, LSET, LINSERT, LRANGE) without costing a pointer and an allocation per
//! element. Like Redis, we keep a deque of *nodes* ([`nodes`]), each a packed run of entries in
//! the listpack entry format ([`crate::listpack`]: a length, the bytes, a backward length),
//! bounded by `list-max-listpack-size`: negative fills bound a node's bytes (-1 = 4 KB, -2 = 8 KB
//! … -5 = 64 KB), positive fills its number of entries (with an 8 KB safety cap). An element too
//! big for any node gets a node of its own. A node's size is measured as Redis measures it — the
//! bytes of Redis's listpack for the same entries, kept up to date per node, with Redis 7.0's
//! estimate for the entry to add — so that nodes split where Redis's do: DUMP shows every node
//! boundary.
//!
//! Unlike a listpack, which re-allocates at its exact size on every change, a node keeps spare
//! room at *both* ends of its buffer: entries live in `buf[start..]`, pushes at the back append
//! into spare capacity and pushes at the front write into the gap before `start`; when there is
//! no room the buffer grows geometrically (capped by the node limit), so a push costs amortised
//! O(1) instead of copying up to 8 KB each time. Pops only move `start` or truncate. Operations
//! in the middle rebuild one node (bounded by the node size) and split or merge nodes as needed;
//! positions are found by walking node counts from the nearer end, then entries from the nearer
//! end of the node. Removals never merge nodes (Redis merges only around an insertion that
//! split a node: LINSERT's [`Quicklist::insert_at`]).
//!
//! **Two forms.** Most lists never pass one node, and for them the deque costs three allocations
//! (the list's header, the node deque, the node's buffer) where Redis has one listpack: 2× its
//! memory for a list of ten elements. So a list of at most one raw packed node is held as
//! [`small::Small`], the node's entries behind an eight-byte header in one block, and becomes
//! [`nodes::Nodes`] when a change needs a second node (or a plain one); a many-node list that
//! shrinks to one node under half the node limit is packed back (the half keeps a list that
//! hovers at a node boundary from converting on every push and pop). Both forms hold the same
//! entries with the same node boundaries: the form is memory layout only, never behaviour.
//! Common changes (pushes, pops, LSET, LREM, trims, an insertion that fits) are made in the
//! small form directly; the rest run on the many-node form and pack back if the list is still
//! one node.

mod nodes;
mod small;

use std::collections::VecDeque;

use crate::listpack::{entry_at, entry_before};

use nodes::{byte_limit, is_plain, node_exceeds_limit, node_limits, Node, Nodes};
pub use nodes::{set_packed_threshold, DEFAULT_FILL, MAX_COMPRESS_DEPTH};
use small::Small;

/// A list's encoding as Redis reports it. Redis 7.0 has only quicklists. From 7.2 a small list
/// is one listpack: it becomes a quicklist when what is added would pass the node limit of
/// `list-max-listpack-size` (the listpack's bytes plus the new elements' lengths, or its count),
/// and a quicklist of one packed node goes back to a listpack when removals bring it under half
/// the limit (or, for a list just built, under the limit). The entries are stored alike either
/// way: only the name and the conversion points differ, which are Redis's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListEncoding {
    /// Redis 7.0's lists: always `quicklist`.
    Quicklist70,
    Listpack,
    Quicklist,
}

/// A list of byte strings; see the module documentation. Two words.
#[derive(Clone)]
pub struct Quicklist {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    Small(Small),
    Big(Box<Nodes>),
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
    /// Where the value's first heap block starts (or the value itself, when it has none): what
    /// a pipeline's prefetch asks the CPU for before the command that reads it runs.
    #[inline]
    pub fn heap_address(&self) -> *const u8 {
        match &self.repr {
            Repr::Small(small) => small.address(),
            Repr::Big(nodes) => (&**nodes as *const Nodes).cast(),
        }
    }

    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list whose nodes follow `fill` (`list-max-listpack-size`).
    pub fn with_fill(fill: i32) -> Self {
        Self::with_options(fill, 0)
    }

    /// An empty list whose nodes follow `fill`, with `depth` raw nodes at each end and the
    /// others LZF-compressed (`list-compress-depth`; capped as Redis caps it).
    pub fn with_options(fill: i32, depth: usize) -> Self {
        let depth = depth.min(MAX_COMPRESS_DEPTH);
        let repr = match Small::new(fill, depth, ListEncoding::Quicklist70) {
            Some(small) => Repr::Small(small),
            None => Repr::Big(Box::new(Nodes::with_options(fill, depth))),
        };
        Quicklist { repr }
    }

    /// Redis 7.2's rules for this list: a listpack while small (see [`ListEncoding`]).
    pub fn with_listpack_encoding(self) -> Self {
        self.with_encoding(ListEncoding::Listpack)
    }

    /// This list under `encoding`'s rules, converted as a list just built is ([`Self::settle`]).
    pub fn with_encoding(mut self, encoding: ListEncoding) -> Self {
        match &mut self.repr {
            Repr::Small(s) => s.set_encoding(encoding),
            Repr::Big(b) => b.encoding = encoding,
        }
        self.settle();
        self
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding_name(&self) -> &'static str {
        match self.encoding() {
            ListEncoding::Listpack => "listpack",
            ListEncoding::Quicklist70 | ListEncoding::Quicklist => "quicklist",
        }
    }

    pub fn encoding(&self) -> ListEncoding {
        match &self.repr {
            Repr::Small(s) => s.encoding(),
            Repr::Big(b) => b.encoding,
        }
    }

    /// The many-node form, converting a small list to it.
    fn nodes_mut(&mut self) -> &mut Nodes {
        if let Repr::Small(s) = &self.repr {
            let mut nodes = Nodes::with_options(s.fill(), s.compress());
            nodes.encoding = s.encoding();
            nodes.len = s.count();
            if let Some(node) = s.to_node() {
                nodes.nodes.reserve_exact(1);
                nodes.nodes.push_back(node);
            }
            self.repr = Repr::Big(Box::new(nodes));
        }
        match &mut self.repr {
            Repr::Big(b) => b,
            Repr::Small(_) => unreachable!("converted above"),
        }
    }

    /// Packs a many-node list of at most one node back into the small form: one within the
    /// node limit divided by `divisor` (1 after a change that started small, 2 — the
    /// hysteresis — after one that started with many nodes).
    fn pack_if_small(&mut self, divisor: usize) {
        let Repr::Big(b) = &self.repr else {
            return;
        };
        if b.nodes.len() > 1 {
            return;
        }
        if let Some(node) = b.nodes.front() {
            let count_limit = node_limits(b.fill).1;
            if divisor > 1
                && (node.redis_sz > byte_limit(b.fill) / divisor
                    || node.count > count_limit / divisor)
            {
                return;
            }
        }
        if let Some(small) = Small::from_node(b.nodes.front(), b.fill, b.compress, b.encoding) {
            self.repr = Repr::Small(small);
        }
    }

    /// Runs `f` on the many-node form, then packs the list back if it is one small node.
    fn on_nodes<R>(&mut self, f: impl FnOnce(&mut Nodes) -> R) -> R {
        let divisor = if matches!(self.repr, Repr::Small(_)) {
            1
        } else {
            2
        };
        let result = f(self.nodes_mut());
        self.pack_if_small(divisor);
        result
    }

    /// Redis's `listTypeTryConvertListpack`, before elements are added: a listpack that would
    /// pass the node limit with `add_count` more elements of `add_bytes` bytes in all becomes a
    /// quicklist. Each push and insert checks its own element; a command adding several calls
    /// this first with all of them, as Redis does.
    #[inline]
    pub fn before_growth(&mut self, add_bytes: usize, add_count: usize) {
        match &mut self.repr {
            Repr::Small(s) => small_before_growth(s, add_bytes, add_count),
            Repr::Big(b) => b.before_growth(add_bytes, add_count),
        }
    }

    /// Redis's conversion of a list just built (SORT … STORE, a load): a quicklist of one
    /// packed node within the node limit becomes a listpack, a listpack past it a quicklist.
    pub fn settle(&mut self) {
        match &mut self.repr {
            Repr::Small(s) => match s.encoding() {
                ListEncoding::Quicklist if s.count() > 0 && s.within(1) => {
                    s.set_encoding(ListEncoding::Listpack)
                }
                ListEncoding::Listpack => small_before_growth(s, 0, 0),
                _ => {}
            },
            Repr::Big(b) => b.settle(),
        }
    }

    /// The compress depth the list was created with.
    pub fn compress_depth(&self) -> usize {
        match &self.repr {
            Repr::Small(s) => s.compress(),
            Repr::Big(b) => b.compress_depth(),
        }
    }

    /// Number of nodes held compressed.
    pub fn compressed_nodes(&self) -> usize {
        match &self.repr {
            Repr::Small(_) => 0,
            Repr::Big(b) => b.compressed_nodes(),
        }
    }

    /// Drops the decompressed copies that reads made of compressed nodes, so that a list read
    /// (LRANGE, LINDEX…) goes back to its compressed size, as Redis compresses a node again
    /// after each access. Free when nothing was read since.
    pub fn release_decompressed(&mut self) {
        if let Repr::Big(b) = &mut self.repr {
            b.release_decompressed();
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(s) => s.count(),
            Repr::Big(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of packed nodes.
    pub fn node_count(&self) -> usize {
        match &self.repr {
            Repr::Small(s) => usize::from(s.count() > 0),
            Repr::Big(b) => b.node_count(),
        }
    }

    /// The fill the list was created with.
    pub fn fill(&self) -> i32 {
        match &self.repr {
            Repr::Small(s) => s.fill(),
            Repr::Big(b) => b.fill(),
        }
    }

    /// Bytes of packed entries in all nodes.
    pub fn byte_size(&self) -> usize {
        match &self.repr {
            Repr::Small(s) => s.entries().len(),
            Repr::Big(b) => b.byte_size(),
        }
    }

    /// Each node's size as Redis's listpack would have it (its entry encodings plus the 6-byte
    /// header and the end byte) — or, compressed, its LZF bytes and Redis's 8-byte header —
    /// head first: what MEMORY USAGE samples.
    pub fn node_listpack_sizes(&self) -> impl Iterator<Item = usize> + '_ {
        let (small, big) = self.forms();
        let small = small.filter(|s| s.count() > 0).map(Small::redis_sz);
        small
            .into_iter()
            .chain(big.into_iter().flat_map(Nodes::node_listpack_sizes))
    }

    fn forms(&self) -> (Option<&Small>, Option<&Nodes>) {
        match &self.repr {
            Repr::Small(s) => (Some(s), None),
            Repr::Big(b) => (None, Some(b)),
        }
    }

    /// Pushes `items` in order at the back (or each at the front), as that many pushes do; a
    /// node the call starts gets room for the items still to come, up to its byte limit. A list
    /// one command builds then holds no spare room (nodes grown by doubling keep up to half
    /// their bytes spare, where Redis's listpacks are exact), and pushes after it grow as usual.
    pub fn push_all<T: AsRef<[u8]>>(&mut self, items: &[T], back: bool) {
        match &mut self.repr {
            Repr::Big(b) => b.push_all(items, back),
            Repr::Small(s) => {
                let taken = small_push_all(s, items, back);
                if taken < items.len() {
                    self.nodes_mut().push_all(&items[taken..], back);
                }
            }
        }
    }

    pub fn push_back(&mut self, item: &[u8]) {
        match &mut self.repr {
            Repr::Big(b) => b.push_back(item),
            Repr::Small(_) => self.push_all(&[item], true),
        }
    }

    pub fn push_front(&mut self, item: &[u8]) {
        match &mut self.repr {
            Repr::Big(b) => b.push_front(item),
            Repr::Small(_) => self.push_all(&[item], false),
        }
    }

    pub fn front(&self) -> Option<&[u8]> {
        match &self.repr {
            Repr::Small(s) => (s.count() > 0).then(|| s.get(0)),
            Repr::Big(b) => b.front(),
        }
    }

    pub fn back(&self) -> Option<&[u8]> {
        match &self.repr {
            Repr::Small(s) => {
                let entries = s.entries();
                (s.count() > 0).then(|| &entries[entry_before(entries, entries.len()).1])
            }
            Repr::Big(b) => b.back(),
        }
    }

    /// Removes the first element, handing it to `f` in place (no copy).
    pub fn pop_front_with<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        match &mut self.repr {
            Repr::Small(s) if s.count() == 0 => None,
            Repr::Small(s) => {
                let result = s.pop_front_with(f);
                small_after_shrink(s);
                Some(result)
            }
            Repr::Big(b) => {
                let result = b.pop_front_with(f);
                self.pack_if_small(2);
                result
            }
        }
    }

    /// Removes the last element, handing it to `f` in place (no copy).
    pub fn pop_back_with<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        match &mut self.repr {
            Repr::Small(s) if s.count() == 0 => None,
            Repr::Small(s) => {
                let result = s.pop_back_with(f);
                small_after_shrink(s);
                Some(result)
            }
            Repr::Big(b) => {
                let result = b.pop_back_with(f);
                self.pack_if_small(2);
                result
            }
        }
    }

    pub fn pop_front(&mut self) -> Option<Vec<u8>> {
        self.pop_front_with(<[u8]>::to_vec)
    }

    pub fn pop_back(&mut self) -> Option<Vec<u8>> {
        self.pop_back_with(<[u8]>::to_vec)
    }

    /// Element `index` (0-based from the head).
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        match &self.repr {
            Repr::Small(s) => (index < s.count()).then(|| s.get(index)),
            Repr::Big(b) => b.get(index),
        }
    }

    /// Replaces element `index`; false if out of range.
    pub fn set(&mut self, index: usize, item: &[u8]) -> bool {
        if let Repr::Small(s) = &mut self.repr {
            if index >= s.count() {
                return false;
            }
            // As the node would: growth checked first, a packed element replaced in place
            // whatever the node's size, the shrinking checked after.
            small_before_growth(s, item.len(), 1);
            let at = s.entry_range(s.offset_of(index));
            if !is_plain(item) && s.splice(at, 1, &[item]) {
                small_after_shrink(s);
                return true;
            }
        }
        self.on_nodes(|b| b.set(index, item))
    }

    /// Inserts `item` so that it becomes element `index` (`index == len` appends).
    pub fn insert(&mut self, index: usize, item: &[u8]) {
        assert!(index <= self.len(), "insert out of bounds");
        if index == 0 {
            return self.push_front(item);
        }
        if index == self.len() {
            return self.push_back(item);
        }
        if let Repr::Small(s) = &mut self.repr {
            small_before_growth(s, item.len(), 1);
            let at = s.offset_of(index);
            if s.accepts(item) && s.splice(at..at, 0, &[item]) {
                return;
            }
        }
        self.on_nodes(|b| b.insert(index, item))
    }

    /// Removes element `index` (< len).
    pub fn remove(&mut self, index: usize) {
        assert!(index < self.len(), "remove out of bounds");
        match &mut self.repr {
            Repr::Small(s) => {
                let at = s.entry_range(s.offset_of(index));
                s.splice(at, 1, &[]);
                small_after_shrink(s);
            }
            Repr::Big(_) => self.on_nodes(|b| b.remove(index)),
        }
    }

    /// LINSERT: inserts `item` before or after element `pivot` (< len), where Redis 7.0's
    /// `_quicklistInsert` puts it ([`Nodes::insert_at`]): into the pivot's node when it has
    /// room, else beside it or into a split of it, merging around the split.
    pub fn insert_at(&mut self, pivot: usize, after: bool, item: &[u8]) {
        assert!(pivot < self.len(), "pivot out of bounds");
        if let Repr::Small(s) = &mut self.repr {
            small_before_growth(s, item.len(), 1);
            let at = s.offset_of(if after { pivot + 1 } else { pivot });
            if s.accepts(item) && s.splice(at..at, 0, &[item]) {
                return;
            }
        }
        self.on_nodes(|b| b.insert_at(pivot, after, item))
    }

    /// Removes the first `n` elements (all if `n >= len`).
    pub fn drain_front(&mut self, n: usize) {
        match &mut self.repr {
            Repr::Small(s) => {
                let n = n.min(s.count());
                s.splice(0..s.offset_of(n), n, &[]);
                small_after_shrink(s);
            }
            Repr::Big(_) => self.on_nodes(|b| b.drain_front(n)),
        }
    }

    /// Removes the last `n` elements (all if `n >= len`).
    pub fn drain_back(&mut self, n: usize) {
        match &mut self.repr {
            Repr::Small(s) => {
                let n = n.min(s.count());
                let from = s.offset_of(s.count() - n);
                s.splice(from..s.entries().len(), n, &[]);
                small_after_shrink(s);
            }
            Repr::Big(_) => self.on_nodes(|b| b.drain_back(n)),
        }
    }

    /// Removes up to `limit` elements equal to `item` (0 = all of them), scanning from the head,
    /// or from the tail if `from_tail`. Returns how many were removed.
    pub fn remove_matching(&mut self, item: &[u8], limit: usize, from_tail: bool) -> usize {
        match &mut self.repr {
            Repr::Small(s) => {
                let removed = s.remove_matching(item, limit, from_tail);
                if removed > 0 {
                    small_after_shrink(s);
                }
                removed
            }
            Repr::Big(_) => self.on_nodes(|b| b.remove_matching(item, limit, from_tail)),
        }
    }

    /// Each node head to tail: whether it is plain, and its elements — what an RDB file records
    /// of a list (Redis saves a quicklist node by node).
    pub fn node_elements(&self) -> impl Iterator<Item = (bool, Vec<&[u8]>)> + '_ {
        let (small, big) = self.forms();
        let small = small
            .filter(|s| s.count() > 0)
            .map(|_| (false, self.iter().collect()));
        small
            .into_iter()
            .chain(big.into_iter().flat_map(Nodes::node_elements))
    }

    /// Appends a whole node holding `items` (at least one; one for a plain node) at the tail,
    /// whatever the fill says: loading an RDB file keeps the saved nodes as they are (Redis's
    /// `quicklistAppendListpack` / `quicklistAppendPlainNode`).
    pub fn append_node(&mut self, plain: bool, items: &[&[u8]]) {
        if let Repr::Small(s) = &mut self.repr {
            if s.count() == 0 && !plain && s.splice(0..0, 0, items) {
                return;
            }
        }
        self.on_nodes(|b| b.append_node(plain, items))
    }

    /// Index of the first element equal to `item`, from the head.
    pub fn position(&self, item: &[u8]) -> Option<usize> {
        self.iter().position(|e| e == item)
    }

    /// All elements, head to tail (reversible).
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Small(s) => Iter::of_entries(s.entries(), 0, s.count()),
            Repr::Big(b) => b.iter(),
        }
    }

    /// The elements from `index` to the tail, finding `index` from the nearer end.
    pub fn iter_from(&self, index: usize) -> Iter<'_> {
        match &self.repr {
            Repr::Small(s) => {
                let index = index.min(s.count());
                Iter::of_entries(s.entries(), s.offset_of(index), s.count() - index)
            }
            Repr::Big(b) => b.iter_from(index),
        }
    }
}

/// [`Quicklist::before_growth`] for a small list: its one node's Redis size is the list's.
fn small_before_growth(s: &mut Small, add_bytes: usize, add_count: usize) {
    if s.encoding() == ListEncoding::Listpack
        && node_exceeds_limit(s.fill(), s.redis_sz() + add_bytes, s.count() + add_count)
    {
        s.set_encoding(ListEncoding::Quicklist);
    }
}

/// Redis's `listTypeTryConvertQuicklist` after a removal, for a small list (the many-node
/// form's `after_shrink` for its one node).
fn small_after_shrink(s: &mut Small) {
    if s.encoding() == ListEncoding::Quicklist && s.count() > 0 && s.within(2) {
        s.set_encoding(ListEncoding::Listpack);
    }
}

/// The pushes of [`Quicklist::push_all`] that the small list's node takes, made in one
/// rebuild of the block; returns how many (the rest go to a node of their own).
fn small_push_all<T: AsRef<[u8]>>(s: &mut Small, items: &[T], back: bool) -> usize {
    // What each push's `before_growth` decides, in order (once a quicklist, it stays one).
    let fill = s.fill();
    let mut grows_past = false;
    let taken = s.accepted_prefix(items, |count, redis_sz, item| {
        grows_past |= node_exceeds_limit(fill, redis_sz + item.len(), count + 1);
    });
    if grows_past && s.encoding() == ListEncoding::Listpack {
        s.set_encoding(ListEncoding::Quicklist);
    }
    if taken == 0 {
        return 0;
    }
    let at = if back { s.entries().len() } else { 0 };
    let spliced = if taken == 1 {
        s.splice(at..at, 0, &[items[0].as_ref()])
    } else {
        // Pushed one by one at the front, the items end up in reverse order.
        let mut taken_items: Vec<&[u8]> = items[..taken].iter().map(AsRef::as_ref).collect();
        if !back {
            taken_items.reverse();
        }
        s.splice(at..at, 0, &taken_items)
    };
    if spliced {
        taken
    } else {
        0
    }
}

/// Iterator over a quicklist's elements, from either end. Each end keeps the buffer of the node
/// it is in (decompressed if need be), so that stepping within a node costs what it always did.
pub struct Iter<'a> {
    /// The nodes of a many-node list; `None` for a small one, whose one buffer both ends hold.
    nodes: Option<&'a VecDeque<Node>>,
    /// (node, byte offset of the next entry from the front).
    front: (usize, usize),
    /// That node's entries.
    front_buf: &'a [u8],
    /// (node, byte offset just past the next entry from the back).
    back: (usize, usize),
    back_buf: &'a [u8],
    /// Where the back node's entries start.
    back_start: usize,
    remaining: usize,
}

impl<'a> Iter<'a> {
    /// The `remaining` entries of one buffer from byte `from`.
    fn of_entries(entries: &'a [u8], from: usize, remaining: usize) -> Iter<'a> {
        Iter {
            nodes: None,
            front: (0, from),
            front_buf: entries,
            back: (0, entries.len()),
            back_buf: entries,
            back_start: 0,
            remaining,
        }
    }

    fn node(&self, n: usize) -> &'a Node {
        &self
            .nodes
            .expect("a small list's iterator stays in its buffer")[n]
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        let (mut n, mut pos) = self.front;
        if pos == self.front_buf.len() {
            n += 1;
            let node = self.node(n);
            self.front_buf = node.bytes();
            pos = node.start;
        }
        let buf = self.front_buf;
        let (data, next) = entry_at(buf, pos);
        self.front = (n, next);
        self.remaining -= 1;
        Some(&buf[data])
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
        if end == self.back_start {
            n -= 1;
            let node = self.node(n);
            self.back_buf = node.bytes();
            self.back_start = node.start;
            end = self.back_buf.len();
        }
        let buf = self.back_buf;
        let (start, data) = entry_before(buf, end);
        self.back = (n, start);
        self.remaining -= 1;
        Some(&buf[data])
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests;
