//! Sorted set values in Redis's two encodings, and every operation the sorted set commands need,
//! written once for both.
//!
//! - [`Packed`] (OBJECT ENCODING `listpack`): the pairs in one allocation, while the set has at
//!   most `zset-max-listpack-entries` members of at most `zset-max-listpack-value` bytes.
//! - [`SkipSet`] (`skiplist`): a [`SkipList`] in an arena for order and rank, plus a member index
//!   for O(1) ZSCORE. The index is a `hashbrown::HashTable<u32>` holding node numbers only: it
//!   hashes and compares members by looking them up in the arena, so each member is stored once
//!   (Redis stores a pointer to the member in its dict; a second copy here would cost more than
//!   the rest of the element together).
//!
//! A set converts from the packed form to the skiplist as Redis does, one way: when an insertion
//! would exceed either limit (so ZADD of one long member converts at once). Sets built whole by a
//! command (ZUNIONSTORE, ZRANGESTORE…) take the packed form when their final size and longest
//! member allow it, as Redis's do.
//!
//! Range operations follow Redis's algorithms step by step — find the first element in range,
//! skip `offset` elements without looking at them, then emit while in range — because replies to
//! odd requests (negative offsets, lexicographic ranges over mixed scores in a small set) depend
//! on those steps.

mod packed;
pub mod range;
mod skiplist;

pub use packed::Packed;
pub use range::{LexBound, LexRange, ScoreRange};
pub use skiplist::{SkipList, MAX_LEVEL, NIL};

use crate::small_bytes::SmallBytes;
use hashbrown::HashTable;
use rand::Rng;
use std::sync::OnceLock;

/// The thresholds of the packed form (`zset-max-listpack-entries`, `zset-max-listpack-value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_entries: usize,
    pub max_value: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 128,
            max_value: 64,
        }
    }
}

impl Limits {
    /// True if a set of `len` members, the longest `max_len` bytes, fits the packed form.
    pub fn fits(&self, len: usize, max_len: usize) -> bool {
        len <= self.max_entries && max_len <= self.max_value
    }
}

/// ZADD's options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddFlags {
    /// Only add new members.
    pub nx: bool,
    /// Only update existing members.
    pub xx: bool,
    /// Only update to a greater score.
    pub gt: bool,
    /// Only update to a lower score.
    pub lt: bool,
    /// Add the score to the current one.
    pub incr: bool,
}

/// What [`ZSetValue::add`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AddOutcome {
    /// A new member, with its score.
    Added(f64),
    /// An existing member got this new score.
    Updated(f64),
    /// An existing member already had this score.
    Unchanged(f64),
    /// Nothing done: NX on an existing member, XX on a missing one, GT/LT refusing.
    Skipped,
    /// INCR would make the score NaN; nothing done.
    NotANumber,
}

fn member_hasher() -> &'static ahash::RandomState {
    static STATE: OnceLock<ahash::RandomState> = OnceLock::new();
    STATE.get_or_init(ahash::RandomState::new)
}

#[inline]
fn hash_member(member: &[u8]) -> u64 {
    member_hasher().hash_one(member)
}

/// A big sorted set: skiplist plus member index (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct SkipSet {
    list: SkipList,
    index: HashTable<u32>,
    /// Bumped when the arena is compacted (node numbers change), so that a SCAN cursor from
    /// before restarts instead of skipping elements.
    generation: u32,
}

impl SkipSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn list(&self) -> &SkipList {
        &self.list
    }

    /// Bytes allocated (arena, members on the heap, index).
    pub fn heap_bytes(&self) -> usize {
        // hashbrown: one u32 and one control byte per bucket, plus a group of control bytes.
        let buckets = if self.index.capacity() == 0 {
            0
        } else {
            (self.index.capacity() * 8 / 7).next_power_of_two()
        };
        self.list.heap_bytes() + buckets * 5 + 16
    }

    /// The node holding `member`.
    #[inline]
    pub fn find(&self, member: &[u8]) -> Option<u32> {
        let list = &self.list;
        self.index
            .find(hash_member(member), |&x| list.member(x) == member)
            .copied()
    }

    /// Inserts a member known to be absent.
    pub fn insert_new(&mut self, member: &[u8], score: f64) -> u32 {
        let x = self.list.insert(score, SmallBytes::new(member));
        let list = &self.list;
        self.index
            .insert_unique(hash_member(member), x, |&y| hash_member(list.member(y)));
        x
    }

    /// Appends a member that sorts after all others and is absent (building sorted sets).
    fn push_back(&mut self, member: &[u8], score: f64) {
        let x = self.list.push_back(score, SmallBytes::new(member));
        let list = &self.list;
        self.index
            .insert_unique(hash_member(member), x, |&y| hash_member(list.member(y)));
    }

    /// Removes `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let list = &self.list;
        let entry = self
            .index
            .find_entry(hash_member(member), |&x| list.member(x) == member)
            .ok()?;
        let (x, _) = entry.remove();
        let score = self.list.score(x);
        self.list.remove(x);
        self.after_removal();
        Some(score)
    }

    fn unindex(index: &mut HashTable<u32>, x: u32, member: &[u8]) {
        if let Ok(entry) = index.find_entry(hash_member(member), |&y| y == x) {
            entry.remove();
        }
    }

    /// Gives memory back after removals: the index shrinks below 10% use (as Redis's dict does)
    /// and the arena is compacted when three quarters of its slots are free.
    fn after_removal(&mut self) {
        let len = self.list.len();
        if self.index.capacity() > 64 && len * 10 < self.index.capacity() {
            let list = &self.list;
            self.index.shrink_to(len, |&y| hash_member(list.member(y)));
        }
        let slots = self.list.slots();
        if slots > 64 && len * 4 < slots {
            self.compact();
        }
    }

    fn compact(&mut self) {
        let mut mapping: Vec<(u32, u32)> = Vec::with_capacity(self.list.len());
        let fresh = self.list.compacted(|old, new| mapping.push((old, new)));
        self.list = fresh;
        let list = &self.list;
        let mut index = HashTable::with_capacity(list.len());
        let mut x = list.first();
        while x != NIL {
            index.insert_unique(hash_member(list.member(x)), x, |&y| {
                hash_member(list.member(y))
            });
            x = list.next(x);
        }
        self.index = index;
        self.generation = self.generation.wrapping_add(1);
    }

    /// Sets the score of node `x`.
    pub fn update_score(&mut self, x: u32, score: f64) {
        self.list.update_score(x, score);
    }

    fn remove_score_range(&mut self, range: &ScoreRange) -> usize {
        let index = &mut self.index;
        let n = self
            .list
            .remove_score_range(range, |x, m| Self::unindex(index, x, m));
        self.after_removal();
        n
    }

    fn remove_lex_range(&mut self, range: &LexRange<'_>) -> usize {
        let index = &mut self.index;
        let n = self
            .list
            .remove_lex_range(range, |x, m| Self::unindex(index, x, m));
        self.after_removal();
        n
    }

    fn remove_rank_range(&mut self, start: usize, end: usize) -> usize {
        let index = &mut self.index;
        let n = self
            .list
            .remove_rank_range(start, end, |x, m| Self::unindex(index, x, m));
        self.after_removal();
        n
    }
}

/// A sorted set value.
#[derive(Clone, Debug)]
pub enum ZSetValue {
    /// OBJECT ENCODING `listpack`.
    Packed(Packed),
    /// OBJECT ENCODING `skiplist`.
    Skip(Box<SkipSet>),
}

impl Default for ZSetValue {
    fn default() -> Self {
        ZSetValue::Packed(Packed::new())
    }
}

/// Where an element sits: a byte offset in the packed form, a node in the skiplist.
type Pos = usize;

impl ZSetValue {
    /// Where the value's first heap block starts (or the value itself, when it has none): what
    /// a pipeline's prefetch asks the CPU for before the command that reads it runs.
    #[inline]
    pub fn heap_address(&self) -> *const u8 {
        match self {
            ZSetValue::Packed(packed) => packed.heap_address(),
            ZSetValue::Skip(skip) => (&**skip as *const SkipSet).cast(),
        }
    }

    pub fn new() -> Self {
        Self::default()
    }

    /// An empty set in the form Redis would create for `len` members, the longest `max_len`.
    pub fn for_size(len: usize, max_len: usize, limits: &Limits) -> Self {
        if limits.fits(len, max_len) {
            ZSetValue::Packed(Packed::new())
        } else {
            ZSetValue::Skip(Box::default())
        }
    }

    /// Builds a set from distinct members in any order, in the form Redis gives a set built whole
    /// (ZUNIONSTORE and friends): packed if the final size and longest member fit.
    pub fn from_unsorted(mut elements: Vec<(&[u8], f64)>, limits: &Limits) -> Self {
        // Members are distinct, so the order is total; -0 and 0 are equal scores, as in Redis.
        elements.sort_unstable_by(|a, b| {
            a.1.partial_cmp(&b.1)
                .expect("no NaN scores")
                .then_with(|| a.0.cmp(b.0))
        });
        Self::from_sorted(&elements, limits)
    }

    /// Builds a set from distinct members in (score, member) order.
    pub fn from_sorted(elements: &[(&[u8], f64)], limits: &Limits) -> Self {
        let max_len = elements.iter().map(|e| e.0.len()).max().unwrap_or(0);
        if limits.fits(elements.len(), max_len) {
            ZSetValue::Packed(Packed::from_sorted(elements.iter().copied()))
        } else {
            let mut set = SkipSet::new();
            set.index.reserve(elements.len(), |_| 0);
            for &(member, score) in elements {
                set.push_back(member, score);
            }
            ZSetValue::Skip(Box::new(set))
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ZSetValue::Packed(p) => p.len(),
            ZSetValue::Skip(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            ZSetValue::Packed(_) => "listpack",
            ZSetValue::Skip(_) => "skiplist",
        }
    }

    /// Bytes allocated beyond the value itself.
    pub fn heap_bytes(&self) -> usize {
        match self {
            ZSetValue::Packed(p) => p.byte_size(),
            ZSetValue::Skip(s) => std::mem::size_of::<SkipSet>() + s.heap_bytes(),
        }
    }

    /// Converts to the skiplist form (one way).
    pub fn convert_to_skiplist(&mut self) {
        if let ZSetValue::Packed(p) = self {
            let mut set = SkipSet::new();
            for (member, score) in p.iter() {
                set.push_back(member, score);
            }
            *self = ZSetValue::Skip(Box::new(set));
        }
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSetValue::Packed(p) => p.find(member).map(|(_, s)| s),
            ZSetValue::Skip(s) => s.find(member).map(|x| s.list.score(x)),
        }
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        self.score(member).is_some()
    }

    /// ZADD of one element with `flags`, converting the form when Redis would.
    pub fn add(
        &mut self,
        member: &[u8],
        score: f64,
        flags: AddFlags,
        limits: &Limits,
    ) -> AddOutcome {
        // Existing member: the same rules in both forms.
        let current = match self {
            ZSetValue::Packed(p) => p.find(member),
            ZSetValue::Skip(s) => s.find(member).map(|x| (x as usize, s.list.score(x))),
        };
        if let Some((pos, current)) = current {
            if flags.nx {
                return AddOutcome::Skipped;
            }
            let mut new = score;
            if flags.incr {
                new += current;
                if new.is_nan() {
                    return AddOutcome::NotANumber;
                }
            }
            if (flags.lt && new >= current) || (flags.gt && new <= current) {
                return AddOutcome::Skipped;
            }
            if new == current {
                return AddOutcome::Unchanged(new);
            }
            match self {
                ZSetValue::Packed(p) => {
                    p.remove_at(pos);
                    p.insert(new, member);
                }
                ZSetValue::Skip(s) => s.update_score(pos as u32, new),
            }
            return AddOutcome::Updated(new);
        }
        if flags.xx {
            return AddOutcome::Skipped;
        }
        if let ZSetValue::Packed(p) = self {
            if p.len() + 1 > limits.max_entries || member.len() > limits.max_value {
                self.convert_to_skiplist();
            }
        }
        match self {
            ZSetValue::Packed(p) => p.insert(score, member),
            ZSetValue::Skip(s) => {
                s.insert_new(member, score);
            }
        }
        AddOutcome::Added(score)
    }

    /// Removes `member`; true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            ZSetValue::Packed(p) => match p.find(member) {
                Some((pos, _)) => {
                    p.remove_at(pos);
                    true
                }
                None => false,
            },
            ZSetValue::Skip(s) => s.remove(member).is_some(),
        }
    }

    /// 0-based rank of `member`, from the lowest (or from the highest if `reverse`).
    pub fn rank(&self, member: &[u8], reverse: bool) -> Option<usize> {
        let len = self.len();
        let rank = match self {
            ZSetValue::Packed(p) => p.iter().position(|(m, _)| m == member)?,
            ZSetValue::Skip(s) => s.list.rank(s.find(member)?) - 1,
        };
        Some(if reverse { len - 1 - rank } else { rank })
    }

    /// The element at 0-based `rank` from the lowest.
    pub fn by_rank(&self, rank: usize) -> Option<(&[u8], f64)> {
        match self {
            ZSetValue::Packed(p) => p.iter().nth(rank),
            ZSetValue::Skip(s) => {
                let x = s.list.by_rank(rank + 1);
                (x != NIL).then(|| (s.list.member(x), s.list.score(x)))
            }
        }
    }

    // --- positions: a cursor over either form -------------------------------------------------

    fn pos_get(&self, pos: Pos) -> (&[u8], f64) {
        match self {
            ZSetValue::Packed(p) => p.get(pos),
            ZSetValue::Skip(s) => (s.list.member(pos as u32), s.list.score(pos as u32)),
        }
    }

    fn pos_step(&self, pos: Pos, reverse: bool) -> Option<Pos> {
        match self {
            ZSetValue::Packed(p) => {
                if reverse {
                    p.prev(pos)
                } else {
                    p.next(pos)
                }
            }
            ZSetValue::Skip(s) => {
                let x = if reverse {
                    s.list.prev(pos as u32)
                } else {
                    s.list.next(pos as u32)
                };
                (x != NIL).then_some(x as usize)
            }
        }
    }

    fn pos_of_rank(&self, rank: usize) -> Option<Pos> {
        match self {
            ZSetValue::Packed(p) => {
                let mut pos = p.first()?;
                for _ in 0..rank {
                    pos = p.next(pos)?;
                }
                Some(pos)
            }
            ZSetValue::Skip(s) => {
                let x = s.list.by_rank(rank + 1);
                (x != NIL).then_some(x as usize)
            }
        }
    }

    /// Skips `offset` elements from `pos` without looking at them (as Redis's LIMIT does).
    fn pos_skip(&self, mut pos: Pos, offset: usize, reverse: bool) -> Option<Pos> {
        if let ZSetValue::Skip(s) = self {
            if offset > 16 {
                // Jump by rank rather than walking.
                let rank = s.list.rank(pos as u32);
                let target = if reverse {
                    rank.checked_sub(offset)?
                } else {
                    rank + offset
                };
                let x = s.list.by_rank(target);
                return (x != NIL).then_some(x as usize);
            }
        }
        for _ in 0..offset {
            pos = self.pos_step(pos, reverse)?;
        }
        Some(pos)
    }

    /// Calls `emit` for the elements of 0-based ranks `start..=end` (both within the set), from
    /// `start` upward, or from the highest down when `reverse` (ranks then count from the top).
    pub fn for_each_in_ranks<'s>(
        &'s self,
        start: usize,
        end: usize,
        reverse: bool,
        mut emit: impl FnMut(&'s [u8], f64),
    ) {
        let len = self.len();
        if start > end || end >= len {
            return;
        }
        if let ZSetValue::Packed(p) = self {
            // Walk the bytes once instead of seeking.
            if reverse {
                for (m, s) in p.iter().rev().skip(start).take(end - start + 1) {
                    emit(m, s);
                }
            } else {
                for (m, s) in p.iter().skip(start).take(end - start + 1) {
                    emit(m, s);
                }
            }
            return;
        }
        let first = if reverse { len - 1 - start } else { start };
        let mut pos = self.pos_of_rank(first);
        for _ in start..=end {
            let Some(at) = pos else { break };
            let (m, s) = self.pos_get(at);
            emit(m, s);
            pos = self.pos_step(at, reverse);
        }
    }

    fn first_in_score(&self, range: &ScoreRange, reverse: bool) -> Option<Pos> {
        match self {
            ZSetValue::Packed(p) => {
                if range.is_empty() {
                    return None;
                }
                packed_first_in(
                    p,
                    reverse,
                    |at| range.gte_min(p.get(at).1),
                    |at| range.lte_max(p.get(at).1),
                )
            }
            ZSetValue::Skip(s) => {
                let x = if reverse {
                    s.list.last_in_score(range)
                } else {
                    s.list.first_in_score(range)
                };
                (x != NIL).then_some(x as usize)
            }
        }
    }

    fn first_in_lex(&self, range: &LexRange<'_>, reverse: bool) -> Option<Pos> {
        match self {
            ZSetValue::Packed(p) => {
                if range.is_empty() {
                    return None;
                }
                packed_first_in(
                    p,
                    reverse,
                    |at| range.gte_min(p.get(at).0),
                    |at| range.lte_max(p.get(at).0),
                )
            }
            ZSetValue::Skip(s) => {
                let x = if reverse {
                    s.list.last_in_lex(range)
                } else {
                    s.list.first_in_lex(range)
                };
                (x != NIL).then_some(x as usize)
            }
        }
    }

    /// ZRANGEBYSCORE: the elements in `range`, lowest first (highest first if `reverse`), after
    /// skipping `offset` (a negative offset selects nothing, as in Redis), at most `limit` of
    /// them (negative: no limit).
    pub fn for_each_in_scores<'s>(
        &'s self,
        range: &ScoreRange,
        reverse: bool,
        offset: i64,
        limit: i64,
        mut emit: impl FnMut(&'s [u8], f64),
    ) {
        if offset < 0 || limit == 0 {
            return;
        }
        let Some(start) = self.first_in_score(range, reverse) else {
            return;
        };
        let mut pos = self.pos_skip(start, offset as usize, reverse);
        let mut left = limit;
        while let Some(at) = pos {
            if left == 0 {
                break;
            }
            let (m, s) = self.pos_get(at);
            let inside = if reverse {
                range.gte_min(s)
            } else {
                range.lte_max(s)
            };
            if !inside {
                break;
            }
            emit(m, s);
            left -= 1;
            pos = self.pos_step(at, reverse);
        }
    }

    /// ZRANGEBYLEX: as [`ZSetValue::for_each_in_scores`] over member bytes.
    pub fn for_each_in_lex<'s>(
        &'s self,
        range: &LexRange<'_>,
        reverse: bool,
        offset: i64,
        limit: i64,
        mut emit: impl FnMut(&'s [u8], f64),
    ) {
        if offset < 0 || limit == 0 {
            return;
        }
        let Some(start) = self.first_in_lex(range, reverse) else {
            return;
        };
        let mut pos = self.pos_skip(start, offset as usize, reverse);
        let mut left = limit;
        while let Some(at) = pos {
            if left == 0 {
                break;
            }
            let (m, s) = self.pos_get(at);
            let inside = if reverse {
                range.gte_min(m)
            } else {
                range.lte_max(m)
            };
            if !inside {
                break;
            }
            emit(m, s);
            left -= 1;
            pos = self.pos_step(at, reverse);
        }
    }

    /// ZCOUNT.
    pub fn count_in_scores(&self, range: &ScoreRange) -> usize {
        match self {
            ZSetValue::Packed(p) => {
                let Some(start) = self.first_in_score(range, false) else {
                    return 0;
                };
                let mut count = 0;
                let mut pos = Some(start);
                while let Some(at) = pos {
                    if !range.lte_max(p.get(at).1) {
                        break;
                    }
                    count += 1;
                    pos = p.next(at);
                }
                count
            }
            ZSetValue::Skip(s) => {
                let first = s.list.first_in_score(range);
                if first == NIL {
                    return 0;
                }
                let last = s.list.last_in_score(range);
                s.list.rank(last) + 1 - s.list.rank(first)
            }
        }
    }

    /// ZLEXCOUNT.
    pub fn count_in_lex(&self, range: &LexRange<'_>) -> usize {
        match self {
            ZSetValue::Packed(p) => {
                let Some(start) = self.first_in_lex(range, false) else {
                    return 0;
                };
                let mut count = 0;
                let mut pos = Some(start);
                while let Some(at) = pos {
                    if !range.lte_max(p.get(at).0) {
                        break;
                    }
                    count += 1;
                    pos = p.next(at);
                }
                count
            }
            ZSetValue::Skip(s) => {
                let first = s.list.first_in_lex(range);
                if first == NIL {
                    return 0;
                }
                // As Redis counts: from the first to the end, less what follows the last.
                let mut count = s.len() + 1 - s.list.rank(first);
                let last = s.list.last_in_lex(range);
                if last != NIL {
                    count = count.saturating_sub(s.len() - s.list.rank(last));
                }
                count
            }
        }
    }

    /// ZREMRANGEBYRANK with 0-based inclusive ranks within the set.
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        if start > end || end >= self.len() {
            return 0;
        }
        if let ZSetValue::Skip(s) = self {
            return s.remove_rank_range(start + 1, end + 1);
        }
        let pos = self.pos_of_rank(start).expect("in range");
        if let ZSetValue::Packed(p) = self {
            p.remove_run(pos, end - start + 1);
        }
        end - start + 1
    }

    /// ZREMRANGEBYSCORE.
    pub fn remove_scores(&mut self, range: &ScoreRange) -> usize {
        if let ZSetValue::Skip(s) = self {
            return s.remove_score_range(range);
        }
        let Some(start) = self.first_in_score(range, false) else {
            return 0;
        };
        self.remove_packed_run(start, |_, s| range.lte_max(s))
    }

    /// ZREMRANGEBYLEX.
    pub fn remove_lex(&mut self, range: &LexRange<'_>) -> usize {
        if let ZSetValue::Skip(s) = self {
            return s.remove_lex_range(range);
        }
        let Some(start) = self.first_in_lex(range, false) else {
            return 0;
        };
        self.remove_packed_run(start, |m, _| range.lte_max(m))
    }

    /// Removes the pairs from `start` on while `pred` holds (packed form).
    fn remove_packed_run(&mut self, start: Pos, pred: impl Fn(&[u8], f64) -> bool) -> usize {
        let ZSetValue::Packed(p) = self else {
            return 0;
        };
        let mut count = 0;
        let mut pos = Some(start);
        while let Some(at) = pos {
            let (m, s) = p.get(at);
            if !pred(m, s) {
                break;
            }
            count += 1;
            pos = p.next(at);
        }
        if count > 0 {
            p.remove_run(start, count);
        }
        count
    }

    /// Every element, lowest first.
    pub fn for_each<'s>(&'s self, mut f: impl FnMut(&'s [u8], f64)) {
        match self {
            ZSetValue::Packed(p) => p.iter().for_each(|(m, s)| f(m, s)),
            ZSetValue::Skip(s) => {
                let mut x = s.list.first();
                while x != NIL {
                    f(s.list.member(x), s.list.score(x));
                    x = s.list.next(x);
                }
            }
        }
    }

    /// The elements as owned pairs, lowest first.
    pub fn to_vec(&self) -> Vec<(Vec<u8>, f64)> {
        let mut out = Vec::with_capacity(self.len());
        self.for_each(|m, s| out.push((m.to_vec(), s)));
        out
    }

    /// One ZSCAN step: the packed form returns everything with cursor 0 (as Redis does); the
    /// skiplist walks its arena from the cursor (see [`SkipList::scan`]). Returns the next cursor.
    pub fn scan<'s>(&'s self, cursor: u64, count: usize, mut f: impl FnMut(&'s [u8], f64)) -> u64 {
        match self {
            ZSetValue::Packed(p) => {
                p.iter().for_each(|(m, s)| f(m, s));
                0
            }
            ZSetValue::Skip(s) => {
                // Cursor = generation << 32 | slot; a cursor from before a compaction restarts.
                let slot = if (cursor >> 32) as u32 == s.generation {
                    (cursor & 0xffff_ffff) as usize
                } else {
                    0
                };
                let next = s
                    .list
                    .scan(slot, count.max(1), |x| f(s.list.member(x), s.list.score(x)));
                if next == 0 {
                    0
                } else {
                    ((s.generation as u64) << 32) | next as u64
                }
            }
        }
    }

    /// A uniformly random element.
    pub fn random_element(&self, rng: &mut impl Rng) -> Option<(&[u8], f64)> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        self.by_rank(rng.gen_range(0..len))
    }
}

#[cfg(test)]
mod tests;

/// The first element of a packed set inside a range (the last one if `reverse`), given the
/// range's two bounds as tests on the element at a position: a walk from the matching end, as
/// Redis walks its listpack (a packed set has at most a few hundred elements).
fn packed_first_in(
    p: &Packed,
    reverse: bool,
    above_min: impl Fn(usize) -> bool,
    below_max: impl Fn(usize) -> bool,
) -> Option<Pos> {
    let (first, last) = (p.first()?, p.last()?);
    if !above_min(last) || !below_max(first) {
        return None;
    }
    let mut pos = Some(if reverse { last } else { first });
    while let Some(at) = pos {
        if reverse {
            if below_max(at) {
                return above_min(at).then_some(at);
            }
            pos = p.prev(at);
        } else {
            if above_min(at) {
                return below_max(at).then_some(at);
            }
            pos = p.next(at);
        }
    }
    None
}
