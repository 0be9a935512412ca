//! [`SkipList`]: the ordered half of a big sorted set — a skiplist with spans, as in Redis
//! (probability 1/4 per extra level, at most 32 levels, elements ordered by score and then by
//! member bytes, a backward pointer on level 0), laid out in an arena.
//!
//! Every level link carries a *span*, the number of elements it jumps over, so that the rank of an
//! element (ZRANK) and the element at a rank (ZRANGE 1000 1010) cost O(log n) like a search.
//!
//! Memory is what decides the layout. Redis allocates each node separately, with 8-byte pointers
//! and a 16-byte link per level. Here nodes live in one `Vec` and refer to each other by `u32`
//! index; a node (48 bytes) holds its member inline when it is at most 23 bytes
//! ([`SmallBytes`]), its score, its backward index and its level-0 forward index (level 0 needs
//! no span: it is always 1). Only the quarter of nodes that are taller keep their upper levels,
//! in a second `Vec`, in a block of `height - 1` consecutive 24-byte links. Freed nodes and freed
//! level blocks (by height) go on free lists and are reused, so a node keeps its index for life:
//! the member index of [`super::SkipSet`] stores only that index, and a SCAN cursor can be a node
//! index (elements present for a whole scan never move). With P = 1/4 a node has 1/3 of an upper
//! link on average: 48 + 24/3 = 56 bytes per element, plus the member index.
//!
//! Cache misses are what decides the speed of a search (ZRANK, ZADD, ZRANGEBYSCORE on a big
//! set). An upper link therefore carries, besides `(next, span)`, a copy of the score of the node
//! it points to and the position of that node's own level block (`next_upper`): a descent
//! compares and steps from link to link in `levels` alone and reads a node only on a score tie
//! (to compare members) and at level 0 — one miss per step where reading the node's score and
//! then its links would cost two. Every path that links, unlinks or rescores a node keeps those
//! copies exact ([`SkipList::check`] verifies them). Level 0 keeps no copy: it would make a node
//! 56 bytes, straddling more cache lines on the walks along level 0 that range replies make.
//!
//! Invariant of spans: a link to a node covers the ranks between; a link to nothing (the end)
//! covers the distance to the end of the list, so that inserting after it keeps it exact.

use super::range::{LexRange, ScoreRange};
use crate::small_bytes::SmallBytes;

/// Most levels a node (and the list) may have.
pub const MAX_LEVEL: usize = 32;
/// "No node".
pub const NIL: u32 = u32::MAX;
/// The header node: no element, `MAX_LEVEL` levels.
const HEAD: u32 = 0;

/// One link of an upper level. Besides where it goes and how far, it caches what a search
/// needs to know about the node it points to — its score and where its own links start — so a
/// descent steps from link to link in `levels` and reads a node only on a score tie.
#[derive(Clone, Copy, Debug)]
struct Level {
    next: u32,
    span: u32,
    /// `nodes[next].upper` (unused when `next` is NIL).
    next_upper: u32,
    /// `nodes[next].score` (unused when `next` is NIL).
    next_score: f64,
}

const NO_LINK: Level = Level {
    next: NIL,
    span: 0,
    next_upper: NIL,
    next_score: 0.0,
};

#[derive(Clone, Debug)]
struct Node {
    member: SmallBytes,
    score: f64,
    backward: u32,
    next0: u32,
    /// Index in `levels` of level 1; levels 1..height follow it.
    upper: u32,
    /// 0 for a free node.
    height: u8,
}

/// A skiplist of (score, member) elements in an arena; see the module documentation.
#[derive(Clone, Debug)]
pub struct SkipList {
    nodes: Vec<Node>,
    levels: Vec<Level>,
    /// Free nodes, chained through `next0`.
    free_node: u32,
    free_count: u32,
    /// Free level blocks by their size (`height - 1`), chained through the first entry's `next`.
    free_levels: [u32; MAX_LEVEL],
    tail: u32,
    len: u32,
    /// Levels in use (at least 1).
    level: u8,
    rng: u64,
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

/// The predecessors of a place at each level, from a search: the node and where its links start
/// in `levels` (the descent knows it without reading the node, and relinking then needs not).
#[derive(Clone, Copy)]
struct Path {
    node: [u32; MAX_LEVEL],
    upper: [u32; MAX_LEVEL],
}

impl Path {
    /// The header at every level (its links are the first block).
    fn new() -> Self {
        Path {
            node: [HEAD; MAX_LEVEL],
            upper: [0; MAX_LEVEL],
        }
    }

    #[inline]
    fn set(&mut self, i: usize, node: u32, upper: usize) {
        self.node[i] = node;
        self.upper[i] = upper as u32;
    }
}

fn seed() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    // splitmix64 of a global counter: every list gets its own sequence, never zero.
    let mut z = COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) | 1
}

impl SkipList {
    pub fn new() -> Self {
        let mut list = SkipList {
            nodes: Vec::new(),
            levels: Vec::new(),
            free_node: NIL,
            free_count: 0,
            free_levels: [NIL; MAX_LEVEL],
            tail: NIL,
            len: 0,
            level: 1,
            rng: seed(),
        };
        let upper = list.alloc_levels(MAX_LEVEL);
        list.nodes.push(Node {
            member: SmallBytes::empty(),
            score: 0.0,
            backward: NIL,
            next0: NIL,
            upper,
            height: MAX_LEVEL as u8,
        });
        list
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Node slots in the arena, free ones included (not the header).
    pub fn slots(&self) -> usize {
        self.nodes.len() - 1
    }

    /// Bytes allocated by the list (arena capacity and members stored on the heap).
    pub fn heap_bytes(&self) -> usize {
        let members: usize = self.nodes.iter().map(|n| n.member.heap_size()).sum();
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.levels.capacity() * std::mem::size_of::<Level>()
            + members
    }

    #[inline]
    pub fn member(&self, x: u32) -> &[u8] {
        self.nodes[x as usize].member.as_slice()
    }

    #[inline]
    pub fn score(&self, x: u32) -> f64 {
        self.nodes[x as usize].score
    }

    /// The lowest element (or NIL).
    #[inline]
    pub fn first(&self) -> u32 {
        self.nodes[HEAD as usize].next0
    }

    /// The highest element (or NIL).
    #[inline]
    pub fn last(&self) -> u32 {
        self.tail
    }

    /// The element after `x` (or NIL).
    #[inline]
    pub fn next(&self, x: u32) -> u32 {
        self.nodes[x as usize].next0
    }

    /// The element before `x` (or NIL).
    #[inline]
    pub fn prev(&self, x: u32) -> u32 {
        self.nodes[x as usize].backward
    }

    #[inline]
    fn forward(&self, x: u32, i: usize) -> u32 {
        let n = &self.nodes[x as usize];
        if i == 0 {
            n.next0
        } else {
            self.levels[n.upper as usize + i - 1].next
        }
    }

    #[inline]
    fn span(&self, x: u32, i: usize) -> u32 {
        if i == 0 {
            1
        } else {
            self.levels[self.nodes[x as usize].upper as usize + i - 1].span
        }
    }

    /// The link of `x` at level `i`; level 0's has span 1 and no `next_upper`.
    #[inline]
    fn get(&self, x: u32, i: usize) -> Level {
        let n = &self.nodes[x as usize];
        if i == 0 {
            Level {
                next: n.next0,
                span: 1,
                ..NO_LINK
            }
        } else {
            self.levels[n.upper as usize + i - 1]
        }
    }

    /// Sets the link of `x` at level `i` (level 0 keeps only `next` and `next_score`).
    #[inline]
    fn put(&mut self, x: u32, i: usize, link: Level) {
        let n = &mut self.nodes[x as usize];
        if i == 0 {
            n.next0 = link.next;
        } else {
            let at = n.upper as usize + i - 1;
            self.levels[at] = link;
        }
    }

    /// A link to `to` (or to the end) covering `span`, with `to`'s cached fields.
    #[inline]
    fn link_to(&self, to: u32, span: u32) -> Level {
        if to == NIL {
            Level { span, ..NO_LINK }
        } else {
            let n = &self.nodes[to as usize];
            Level {
                next: to,
                span,
                next_upper: n.upper,
                next_score: n.score,
            }
        }
    }

    /// The link at level `i` of the predecessor `path` gives.
    #[inline]
    fn get_at(&self, path: &Path, i: usize) -> Level {
        if i == 0 {
            self.get(path.node[0], 0)
        } else {
            self.levels[path.upper[i] as usize + i - 1]
        }
    }

    /// Sets the link at level `i` of the predecessor `path` gives.
    #[inline]
    fn put_at(&mut self, path: &Path, i: usize, link: Level) {
        if i == 0 {
            self.put(path.node[0], 0, link);
        } else {
            self.levels[path.upper[i] as usize + i - 1] = link;
        }
    }

    /// Updates the score cached in the link of `u` at level `i` (which points to a node whose
    /// score changed in place).
    #[inline]
    fn cache_score(&mut self, path: &Path, i: usize, score: f64) {
        if i > 0 {
            self.levels[path.upper[i] as usize + i - 1].next_score = score;
        }
    }

    /// The descent every search is made of: from the header, at each level from the top, move
    /// forward while `go(next, next_score, rank_of_next)` says so, then call
    /// `visit(level, node, upper, rank)` with the node reached (at level 0: with each node
    /// reached), where its links start (meaningless at level 0) and its rank, stopping early if
    /// it returns true.
    /// Returns the last node reached and its rank.
    ///
    /// Upper levels are walked in `levels` alone thanks to the cached `next_score` and
    /// `next_upper`; a node is read at level 0, and when `go` looks at a member.
    #[inline(always)]
    fn descend(
        &self,
        mut go: impl FnMut(u32, f64, u32) -> bool,
        mut visit: impl FnMut(usize, u32, usize, u32) -> bool,
    ) -> (u32, u32) {
        let mut x = HEAD;
        // The header's levels are the first block.
        let mut upper = 0usize;
        let mut rank = 0u32;
        for i in (1..self.level as usize).rev() {
            loop {
                let l = self.levels[upper + i - 1];
                if l.next != NIL && go(l.next, l.next_score, rank + l.span) {
                    rank += l.span;
                    x = l.next;
                    upper = l.next_upper as usize;
                } else {
                    break;
                }
            }
            if visit(i, x, upper, rank) {
                return (x, rank);
            }
        }
        // Level 0 asks `visit` at every node, so that ZRANK stops on its node without reading
        // the one after it.
        while !visit(0, x, upper, rank) {
            let n = self.nodes[x as usize].next0;
            if n != NIL && go(n, self.nodes[n as usize].score, rank + 1) {
                rank += 1;
                x = n;
            } else {
                break;
            }
        }
        (x, rank)
    }

    /// Sets a span; level 0's is implicit.
    #[inline]
    fn set_span(&mut self, x: u32, i: usize, span: u32) {
        if i > 0 {
            let at = self.nodes[x as usize].upper as usize + i - 1;
            self.levels[at].span = span;
        }
    }

    /// True if node `x` sorts before (score, member).
    #[inline]
    fn before(&self, x: u32, score: f64, member: &[u8]) -> bool {
        let n = &self.nodes[x as usize];
        n.score < score || (n.score == score && n.member.as_slice() < member)
    }

    fn random_height(&mut self) -> usize {
        // xorshift64*: each pair of low bits is zero with probability 1/4, one more level each.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (1 + (r.trailing_zeros() / 2) as usize).min(MAX_LEVEL)
    }

    fn alloc_levels(&mut self, height: usize) -> u32 {
        if height <= 1 {
            return NIL;
        }
        let size = height - 1;
        let head = self.free_levels[size];
        if head != NIL {
            self.free_levels[size] = self.levels[head as usize].next;
            return head;
        }
        let at = self.levels.len();
        self.levels.resize(at + size, NO_LINK);
        at as u32
    }

    fn alloc_node(&mut self, member: SmallBytes, score: f64, height: usize) -> u32 {
        let upper = self.alloc_levels(height);
        let node = Node {
            member,
            score,
            backward: NIL,
            next0: NIL,
            upper,
            height: height as u8,
        };
        if self.free_node != NIL {
            let x = self.free_node;
            self.free_node = self.nodes[x as usize].next0;
            self.free_count -= 1;
            self.nodes[x as usize] = node;
            x
        } else {
            assert!(self.nodes.len() < NIL as usize, "sorted set too large");
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        }
    }

    fn free(&mut self, x: u32) {
        let free_node = self.free_node;
        let n = &mut self.nodes[x as usize];
        let (upper, height) = (n.upper, n.height as usize);
        n.member = SmallBytes::empty();
        n.next0 = free_node;
        n.backward = NIL;
        n.height = 0;
        self.free_node = x;
        self.free_count += 1;
        if height > 1 {
            self.levels[upper as usize].next = self.free_levels[height - 1];
            self.free_levels[height - 1] = upper;
        }
        if self.len == 0 {
            // Nothing left: give the arena back. The header is node 0 and its levels are the
            // first block, allocated before any other.
            debug_assert_eq!(self.nodes[HEAD as usize].upper, 0);
            self.nodes.truncate(1);
            self.nodes.shrink_to_fit();
            self.levels.truncate(MAX_LEVEL - 1);
            self.levels.shrink_to_fit();
            self.free_node = NIL;
            self.free_count = 0;
            self.free_levels = [NIL; MAX_LEVEL];
        }
    }

    /// The predecessors of (score, member) at every level in use, and their ranks.
    fn search(&self, score: f64, member: &[u8]) -> (Path, [u32; MAX_LEVEL]) {
        let mut update = Path::new();
        let mut rank = [0u32; MAX_LEVEL];
        self.descend(
            |n, s, _| s < score || (s == score && self.member(n) < member),
            |i, x, upper, r| {
                update.set(i, x, upper);
                rank[i] = r;
                false
            },
        );
        (update, rank)
    }

    /// Links node `x` (allocated, not in the list) at its place.
    fn link(&mut self, x: u32) {
        let (score, height) = {
            let n = &self.nodes[x as usize];
            (n.score, n.height as usize)
        };
        let (update, rank) = self.search(score, self.member(x));
        let level = self.level as usize;
        if height > level {
            // The search left the header (rank 0) as the predecessor at the new levels.
            for i in level..height {
                self.set_span(HEAD, i, self.len);
            }
            self.level = height as u8;
        }
        let to_x = self.link_to(x, 0);
        for i in 0..height {
            let old = self.get_at(&update, i);
            let before = rank[0] - rank[i];
            self.put(
                x,
                i,
                Level {
                    span: old.span - before,
                    ..old
                },
            );
            self.put_at(
                &update,
                i,
                Level {
                    span: before + 1,
                    ..to_x
                },
            );
        }
        for i in height..self.level as usize {
            let mut link = self.get_at(&update, i);
            link.span += 1;
            self.put_at(&update, i, link);
        }
        let before = update.node[0];
        self.nodes[x as usize].backward = if before == HEAD { NIL } else { before };
        let after = self.nodes[x as usize].next0;
        if after != NIL {
            self.nodes[after as usize].backward = x;
        } else {
            self.tail = x;
        }
        self.len += 1;
    }

    /// Unlinks node `x`, whose predecessors are `update`; the node stays allocated.
    fn unlink(&mut self, x: u32, update: &Path) {
        for i in 0..self.level as usize {
            let link = self.get_at(update, i);
            if link.next == x {
                // The predecessor now links where `x` did, with `x`'s cached fields for that
                // node.
                let from_x = self.get(x, i);
                self.put_at(
                    update,
                    i,
                    Level {
                        span: link.span + from_x.span - 1,
                        ..from_x
                    },
                );
            } else if i > 0 {
                self.put_at(
                    update,
                    i,
                    Level {
                        span: link.span - 1,
                        ..link
                    },
                );
            }
        }
        let (after, before) = {
            let n = &self.nodes[x as usize];
            (n.next0, n.backward)
        };
        if after != NIL {
            self.nodes[after as usize].backward = before;
        } else {
            self.tail = before;
        }
        while self.level > 1 && self.forward(HEAD, self.level as usize - 1) == NIL {
            self.level -= 1;
        }
        self.len -= 1;
    }

    fn path_to(&self, x: u32) -> Path {
        let n = &self.nodes[x as usize];
        let (update, _) = self.search(n.score, n.member.as_slice());
        debug_assert_eq!(self.forward(update.node[0], 0), x);
        update
    }

    /// Inserts an element whose member is not in the list; returns its node.
    pub fn insert(&mut self, score: f64, member: SmallBytes) -> u32 {
        let height = self.random_height();
        let x = self.alloc_node(member, score, height);
        self.link(x);
        x
    }

    /// Removes node `x`.
    pub fn remove(&mut self, x: u32) {
        let update = self.path_to(x);
        self.unlink(x, &update);
        self.free(x);
    }

    /// Gives node `x` a new score, moving it if its place changes. It keeps its index.
    pub fn update_score(&mut self, x: u32, score: f64) {
        let (before, after, height) = {
            let n = &self.nodes[x as usize];
            (n.backward, n.next0, n.height as usize)
        };
        if (before == NIL || self.score(before) < score)
            && (after == NIL || self.score(after) > score)
        {
            // It stays in place, but the links to it cache its score: a short node's only
            // predecessor is the one before it; a tall one's are found by a search.
            if height > 1 {
                let update = self.path_to(x);
                for i in 1..height {
                    self.cache_score(&update, i, score);
                }
            }
            self.nodes[x as usize].score = score;
            return;
        }
        let update = self.path_to(x);
        self.unlink(x, &update);
        self.nodes[x as usize].score = score;
        self.link(x);
    }

    /// 1-based rank of node `x`.
    pub fn rank(&self, x: u32) -> usize {
        let (score, member) = (self.score(x), self.member(x));
        let (y, rank) = self.descend(
            |n, s, _| s < score || (s == score && (n == x || self.member(n) < member)),
            |_, y, _, _| y == x,
        );
        assert_eq!(y, x, "node {x} is not in the list");
        rank as usize
    }

    /// The node at 1-based `rank` (or NIL).
    pub fn by_rank(&self, rank: usize) -> u32 {
        if rank == 0 || rank > self.len as usize {
            return NIL;
        }
        let rank = rank as u32;
        let (y, traversed) = self.descend(|_, _, r| r <= rank, |_, _, _, r| r == rank);
        debug_assert_eq!(traversed, rank);
        y
    }

    fn may_hold_scores(&self, range: &ScoreRange) -> bool {
        !range.is_empty()
            && self.tail != NIL
            && range.gte_min(self.score(self.tail))
            && range.lte_max(self.score(self.first()))
    }

    /// The first node in `range` (or NIL).
    pub fn first_in_score(&self, range: &ScoreRange) -> u32 {
        if !self.may_hold_scores(range) {
            return NIL;
        }
        let (y, _) = self.descend(|_, s, _| !range.gte_min(s), |_, _, _, _| false);
        let x = self.next(y);
        if x == NIL || !range.lte_max(self.score(x)) {
            NIL
        } else {
            x
        }
    }

    /// The last node in `range` (or NIL).
    pub fn last_in_score(&self, range: &ScoreRange) -> u32 {
        if !self.may_hold_scores(range) {
            return NIL;
        }
        let (y, _) = self.descend(|_, s, _| range.lte_max(s), |_, _, _, _| false);
        if y == HEAD || !range.gte_min(self.score(y)) {
            NIL
        } else {
            y
        }
    }

    fn may_hold_members(&self, range: &LexRange<'_>) -> bool {
        !range.is_empty()
            && self.tail != NIL
            && range.gte_min(self.member(self.tail))
            && range.lte_max(self.member(self.first()))
    }

    /// The first node whose member is in `range`, searching as if members were ordered (the
    /// lexicographic commands assume all scores are equal).
    pub fn first_in_lex(&self, range: &LexRange<'_>) -> u32 {
        if !self.may_hold_members(range) {
            return NIL;
        }
        let (y, _) = self.descend(|n, _, _| !range.gte_min(self.member(n)), |_, _, _, _| false);
        let x = self.next(y);
        if x == NIL || !range.lte_max(self.member(x)) {
            NIL
        } else {
            x
        }
    }

    /// The last node whose member is in `range` (see [`SkipList::first_in_lex`]).
    pub fn last_in_lex(&self, range: &LexRange<'_>) -> u32 {
        if !self.may_hold_members(range) {
            return NIL;
        }
        let (y, _) = self.descend(|n, _, _| range.lte_max(self.member(n)), |_, _, _, _| false);
        if y == HEAD || !range.gte_min(self.member(y)) {
            NIL
        } else {
            y
        }
    }

    /// Removes the nodes from `start` onward while `keep_going` says so, after the predecessors
    /// `update` of `start`. Calls `removed` with each node before it is freed.
    fn remove_run(
        &mut self,
        update: &Path,
        mut keep_going: impl FnMut(&Self, u32) -> bool,
        mut removed: impl FnMut(u32, &[u8]),
    ) -> usize {
        let mut x = self.next(update.node[0]);
        let mut count = 0;
        while x != NIL && keep_going(self, x) {
            let after = self.next(x);
            self.unlink(x, update);
            removed(x, self.member(x));
            self.free(x);
            count += 1;
            x = after;
        }
        count
    }

    /// Removes the elements with a score in `range`.
    pub fn remove_score_range(
        &mut self,
        range: &ScoreRange,
        removed: impl FnMut(u32, &[u8]),
    ) -> usize {
        let mut update = Path::new();
        self.descend(
            |_, s, _| !range.gte_min(s),
            |i, y, upper, _| {
                update.set(i, y, upper);
                false
            },
        );
        self.remove_run(&update, |l, x| range.lte_max(l.score(x)), removed)
    }

    /// Removes the elements whose member is in `range` (scanning as [`SkipList::first_in_lex`]).
    pub fn remove_lex_range(
        &mut self,
        range: &LexRange<'_>,
        removed: impl FnMut(u32, &[u8]),
    ) -> usize {
        let mut update = Path::new();
        self.descend(
            |n, _, _| !range.gte_min(self.member(n)),
            |i, y, upper, _| {
                update.set(i, y, upper);
                false
            },
        );
        self.remove_run(&update, |l, x| range.lte_max(l.member(x)), removed)
    }

    /// Removes the elements of 1-based ranks `start..=end`.
    pub fn remove_rank_range(
        &mut self,
        start: usize,
        end: usize,
        removed: impl FnMut(u32, &[u8]),
    ) -> usize {
        let mut update = Path::new();
        let (_, traversed) = self.descend(
            |_, _, r| (r as usize) < start,
            |i, y, upper, _| {
                update.set(i, y, upper);
                false
            },
        );
        let mut rank = traversed as usize;
        self.remove_run(
            &update,
            |_, _| {
                rank += 1;
                rank <= end
            },
            removed,
        )
    }

    /// One step of a scan over node slots: from slot `cursor`, collects up to `count` live
    /// nodes, visiting at most `10 * count` free slots. Returns the slot to resume from (0 when
    /// the arena has been walked to its end).
    pub fn scan(&self, cursor: usize, count: usize, mut found: impl FnMut(u32)) -> usize {
        let mut slot = cursor.max(1);
        let (mut live, mut empty) = (0, 0);
        while slot < self.nodes.len() && live < count && empty < count.saturating_mul(10) {
            if self.nodes[slot].height != 0 {
                found(slot as u32);
                live += 1;
            } else {
                empty += 1;
            }
            slot += 1;
        }
        if slot >= self.nodes.len() {
            0
        } else {
            slot
        }
    }

    /// Moves every element into a fresh, dense list (in order); `moved(old, new)` reports each
    /// node's new index.
    pub fn compacted(&mut self, mut moved: impl FnMut(u32, u32)) -> SkipList {
        let mut fresh = SkipList::new();
        fresh.nodes.reserve_exact(self.len as usize);
        let mut x = self.first();
        while x != NIL {
            let member = std::mem::replace(&mut self.nodes[x as usize].member, SmallBytes::empty());
            let score = self.score(x);
            let new = fresh.push_back(score, member);
            moved(x, new);
            x = self.next(x);
        }
        fresh
    }

    /// Appends an element that sorts after every element of the list (building from sorted
    /// input without searching).
    pub fn push_back(&mut self, score: f64, member: SmallBytes) -> u32 {
        debug_assert!(self.tail == NIL || self.before(self.tail, score, &member));
        let height = self.random_height();
        let x = self.alloc_node(member, score, height);
        if height > self.level as usize {
            for i in self.level as usize..height {
                self.set_span(HEAD, i, self.len);
            }
            self.level = height as u8;
        }
        // The last node of each level is found by walking that level's tail: track it by
        // descending from the head along the rightmost path.
        let mut y = HEAD;
        let mut rank = 0u32;
        for i in (0..self.level as usize).rev() {
            loop {
                let n = self.forward(y, i);
                if n != NIL {
                    rank += self.span(y, i);
                    y = n;
                } else {
                    break;
                }
            }
            if i < height {
                let to_x = self.link_to(x, self.len - rank + 1);
                self.put(y, i, to_x);
                self.put(x, i, NO_LINK);
            } else {
                let span = self.span(y, i);
                self.set_span(y, i, span + 1);
            }
        }
        self.nodes[x as usize].backward = if self.tail == NIL { NIL } else { self.tail };
        self.tail = x;
        self.len += 1;
        x
    }

    /// Free slots in the arena.
    pub fn free_slots(&self) -> usize {
        self.free_count as usize
    }

    /// Checks every invariant (tests).
    #[doc(hidden)]
    pub fn check(&self) {
        let mut x = self.first();
        let mut prev = NIL;
        let mut count = 0u32;
        let mut ranks = std::collections::HashMap::new();
        ranks.insert(HEAD, 0u32);
        while x != NIL {
            count += 1;
            ranks.insert(x, count);
            assert_eq!(self.prev(x), prev, "backward of {x}");
            if prev != NIL {
                assert!(self.before(prev, self.score(x), self.member(x)), "order");
            }
            prev = x;
            x = self.next(x);
        }
        assert_eq!(count, self.len);
        assert_eq!(self.tail, prev);
        for (&node, &rank) in &ranks {
            let height = if node == HEAD {
                self.level as usize
            } else {
                self.nodes[node as usize].height as usize
            };
            for i in 0..height {
                let link = self.get(node, i);
                if link.next != NIL && i > 0 {
                    let target = &self.nodes[link.next as usize];
                    assert_eq!(
                        link.next_score.to_bits(),
                        target.score.to_bits(),
                        "cached score in {node} at level {i}"
                    );
                    if i > 0 {
                        assert_eq!(link.next_upper, target.upper, "next_upper of {node}");
                    }
                }
                if i == 0 {
                    continue;
                }
                let n = self.forward(node, i);
                let expected = if n == NIL {
                    self.len - rank
                } else {
                    ranks[&n] - rank
                };
                assert_eq!(self.span(node, i), expected, "span of {node} at level {i}");
            }
        }
        for i in self.level as usize..MAX_LEVEL {
            assert_eq!(self.forward(HEAD, i), NIL);
        }
    }
}

#[cfg(test)]
mod layout_tests {
    /// The sizes the module documentation (and the memory budget) count on.
    #[test]
    fn node_and_link_sizes() {
        assert_eq!(std::mem::size_of::<super::Node>(), 48);
        assert_eq!(std::mem::size_of::<super::Level>(), 24);
    }
}
