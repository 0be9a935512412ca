//! `Dict`: Redis's hash table — chained buckets, power-of-two tables, incremental rehashing, and
//! the reverse-binary SCAN cursor — with its entries packed in per-table slabs.
//!
//! Why not `std::collections::HashMap`? Two things Redis users depend on need control over the
//! table itself:
//!
//! 1. **No latency spikes when the table grows.** A HashMap doubles in one step, copying every
//!    entry while the single executor thread (and so every client) waits. Here a resize allocates
//!    the new table and then moves entries over a little at a time: each operation moves one
//!    bucket (looking at no more than ten empty ones), and the server's periodic tick moves more
//!    for up to a millisecond. While rehashing, lookups check both tables and inserts go to the
//!    new one. The table grows when it holds as many entries as buckets (load factor 1) and is
//!    shrunk by the periodic tick when under 10% full.
//!
//! 2. **SCAN guarantees.** SCAN returns every key present for the whole iteration, however the
//!    table is resized between calls. The cursor is a bucket index incremented in reversed bit
//!    order, so that the buckets of a table twice (or half) the size are visited in an order that
//!    never skips the entries that moved there (Pieter Noordhuis's algorithm, as in Redis's
//!    `dictScan`). Entries may be returned more than once; callers deduplicate if needed.
//!
//! **Memory.** A key costs what its entry costs, so the entries are not boxed one by one (a
//! 56-byte key/value pair plus an 8-byte link is a 64-byte request, which glibc rounds to an
//! 80-byte chunk). Entries live in [`Slab`]s instead: packed in chunks that grow from 8 to 4,096
//! entries, addressed by 32-bit indices; a chain link is a `u32` kept in a parallel array (so it
//! costs no padding beside the entry) and a bucket is a `u32` too. The 1,000,000 keys of
//! `SET key:%012d xxx` take 56 + 4 bytes of entry and link and ~4 bytes of bucket each. Removed
//! entries' slots are reused through a free list linked through the link array. A dict has two
//! slabs and each table says which one its indices point into: growing, the new table shares the
//! old table's slab (rehashing relinks entries and copies nothing, so memory never peaks at two
//! copies); shrinking — which the periodic tick does after mass deletion — the new table takes
//! the other slab and rehashing moves the survivors there, packed, and then frees the old slab.
//! A dict holds at most `u32::MAX - 1` entries.
//!
//! Invariants: `tables[0]` is the main table; `tables[1]` is non-empty only while rehashing; while
//! rehashing, every bucket of `tables[0]` below `rehash_index` is empty. Buckets are singly linked
//! chains of indices into the table's slab (`NIL` ends a chain), new entries at the head. A slab
//! slot holds an initialised entry exactly when it is on a chain of a table using that slab.
//! Outside a rehash the unused slab has no chunks.

use rand::Rng;
use std::borrow::Borrow;

use crate::prefetch::prefetch_read;
use std::hash::{BuildHasher, Hash};
use std::mem::MaybeUninit;
use std::time::{Duration, Instant};

/// Size of the first table allocated.
const INITIAL_SIZE: usize = 4;
/// Empty buckets a rehash step may look at per bucket it is asked to move.
const EMPTY_VISITS_PER_STEP: usize = 10;
/// A table fuller than `used / size` of this forces growth even when resizing is discouraged.
const FORCE_RESIZE_RATIO: usize = 5;
/// Shrink below this fill percentage.
const MIN_FILL_PERCENT: usize = 10;

/// The end of a chain, an empty bucket, an empty free list.
const NIL: u32 = u32::MAX;

/// Set in a bucket word whose chain has more than one entry. A bucket word is [`NIL`] or the
/// head's slab index, with this bit when the head has a successor: SPOP's draw
/// ([`Dict::pop_fair_random`]) then reads no link for a bucket of one entry — as Redis 8 keeps
/// a lone key in the bucket itself — and most sampled buckets cost no cache miss beyond the
/// bucket array (measured in BENCHMARKS.md, "SPOP"). Slab indices stay below this bit.
const MORE: u32 = 1 << 31;

/// The head index a bucket word holds ([`NIL`] for an empty bucket).
#[inline(always)]
fn head_of(word: u32) -> u32 {
    if word == NIL {
        NIL
    } else {
        word & !MORE
    }
}

/// The bucket word of a chain headed by `head` (not [`NIL`]), with more entries or not.
#[inline(always)]
fn bucket_word(head: u32, more: bool) -> u32 {
    if more {
        head | MORE
    } else {
        head
    }
}
/// Entries in a slab's first chunk; each next chunk doubles the capacity until chunks reach
/// `1 << MAX_CHUNK_LOG` entries, after which every chunk has that size (so a big table wastes at
/// most one chunk, and a small one at most half its capacity).
const FIRST_CHUNK_LOG: u32 = 3;
const MAX_CHUNK_LOG: u32 = 12;
/// Chunks `0..DOUBLING_CHUNKS` double; they cover indices below `DOUBLING_END`.
const DOUBLING_CHUNKS: usize = (MAX_CHUNK_LOG - FIRST_CHUNK_LOG + 2) as usize;
const DOUBLING_END: usize = 1 << (MAX_CHUNK_LOG + 1);

/// The chunk and the offset in it of slab index `index`.
#[inline(always)]
fn place(index: u32) -> (usize, usize) {
    let i = index as usize;
    if i >= DOUBLING_END {
        let j = i - DOUBLING_END;
        (
            DOUBLING_CHUNKS + (j >> MAX_CHUNK_LOG),
            j & ((1 << MAX_CHUNK_LOG) - 1),
        )
    } else if i < 1 << FIRST_CHUNK_LOG {
        (0, i)
    } else {
        // i is in [2^(bits-1), 2^bits): chunk `bits - FIRST_CHUNK_LOG` starts at 2^(bits-1).
        let bits = usize::BITS - i.leading_zeros();
        ((bits - FIRST_CHUNK_LOG) as usize, i - (1 << (bits - 1)))
    }
}

/// Entries in chunk `chunk`.
fn chunk_capacity(chunk: usize) -> usize {
    if chunk == 0 {
        1 << FIRST_CHUNK_LOG
    } else if chunk < DOUBLING_CHUNKS {
        1 << (chunk as u32 + FIRST_CHUNK_LOG - 1)
    } else {
        1 << MAX_CHUNK_LOG
    }
}

struct Chunk<K, V> {
    entries: Box<[MaybeUninit<(K, V)>]>,
    /// Each slot's chain link (or, for a free slot, its free-list link).
    next: Box<[u32]>,
}

/// Entries of a dict's tables (see the module documentation). The slab does not know which
/// slots are initialised: the chains do, and the dict drops what they reach.
struct Slab<K, V> {
    chunks: Vec<Chunk<K, V>>,
    /// Slots handed out so far: every slot below is on a chain or on the free list.
    issued: u32,
    /// Capacity of the chunks allocated so far.
    capacity: u32,
    /// First slot of the free list.
    free: u32,
}

impl<K, V> Slab<K, V> {
    const fn new() -> Self {
        Slab {
            chunks: Vec::new(),
            issued: 0,
            capacity: 0,
            free: NIL,
        }
    }

    /// Stores an entry in a free slot and returns its index; its link is left for the caller.
    #[inline]
    fn alloc(&mut self, key: K, value: V) -> u32 {
        let index = if self.free != NIL {
            let index = self.free;
            self.free = self.next(index);
            index
        } else {
            if self.issued == self.capacity {
                self.grow();
            }
            self.issued += 1;
            self.issued - 1
        };
        let (c, o) = place(index);
        self.chunks[c].entries[o] = MaybeUninit::new((key, value));
        index
    }

    #[cold]
    fn grow(&mut self) {
        let size = chunk_capacity(self.chunks.len());
        let capacity = self.capacity as usize + size;
        assert!(
            capacity < MORE as usize,
            "a dict table holds at most 2^31 - 1 entries"
        );
        let mut entries = Vec::with_capacity(size);
        entries.resize_with(size, MaybeUninit::uninit);
        self.chunks.push(Chunk {
            entries: entries.into_boxed_slice(),
            next: vec![NIL; size].into_boxed_slice(),
        });
        self.capacity = capacity as u32;
    }

    /// Moves the entry out of slot `index` and puts the slot on the free list.
    ///
    /// # Safety
    /// The slot holds an initialised entry, and the caller has unlinked it from its chain.
    #[inline]
    unsafe fn release(&mut self, index: u32) -> (K, V) {
        let (c, o) = place(index);
        let chunk = &mut self.chunks[c];
        let entry = chunk.entries[o].assume_init_read();
        chunk.next[o] = self.free;
        self.free = index;
        entry
    }

    #[inline(always)]
    fn next(&self, index: u32) -> u32 {
        let (c, o) = place(index);
        self.chunks[c].next[o]
    }

    #[inline(always)]
    fn set_next(&mut self, index: u32, next: u32) {
        let (c, o) = place(index);
        self.chunks[c].next[o] = next;
    }

    /// The entry in slot `index` and its link.
    ///
    /// # Safety
    /// The slot holds an initialised entry (it is on a chain).
    #[inline(always)]
    unsafe fn entry(&self, index: u32) -> (&(K, V), u32) {
        let (c, o) = place(index);
        let chunk = self.chunks.get_unchecked(c);
        (
            chunk.entries.get_unchecked(o).assume_init_ref(),
            *chunk.next.get_unchecked(o),
        )
    }

    /// # Safety
    /// As [`Slab::entry`].
    #[inline(always)]
    unsafe fn entry_mut(&mut self, index: u32) -> (&mut (K, V), u32) {
        let (c, o) = place(index);
        let chunk = self.chunks.get_unchecked_mut(c);
        (
            chunk.entries.get_unchecked_mut(o).assume_init_mut(),
            *chunk.next.get_unchecked(o),
        )
    }

    /// Asks the CPU to fetch slot `index`'s entry (both cache lines a 56-byte entry may span)
    /// and, for a chain of more than one, its link. A hint: an index past the slab is ignored.
    #[inline(always)]
    fn prefetch(&self, index: u32, more: bool) {
        let (c, o) = place(index);
        let Some(chunk) = self.chunks.get(c) else {
            return;
        };
        if let Some(entry) = chunk.entries.get(o) {
            let start = entry.as_ptr().cast::<u8>();
            prefetch_read(start);
            prefetch_read(start.wrapping_add(std::mem::size_of::<(K, V)>().saturating_sub(1)));
        }
        if more {
            if let Some(next) = chunk.next.get(o) {
                prefetch_read(next as *const u32);
            }
        }
    }

    /// Heap bytes of the chunks (entries and links, used or not).
    fn allocated_bytes(&self) -> usize {
        self.capacity as usize * (std::mem::size_of::<(K, V)>() + 4)
    }
}

struct Table {
    buckets: Vec<u32>,
    used: usize,
    /// Which of the dict's two slabs this table's indices point into.
    slab: usize,
}

impl Table {
    const fn empty(slab: usize) -> Self {
        Table {
            buckets: Vec::new(),
            used: 0,
            slab,
        }
    }

    fn with_size(size: usize, slab: usize) -> Self {
        Table {
            buckets: vec![NIL; size],
            used: 0,
            slab,
        }
    }

    fn size(&self) -> usize {
        self.buckets.len()
    }

    fn mask(&self) -> usize {
        self.buckets.len().wrapping_sub(1)
    }

    /// Links a new entry, stored in `slab` (this table's), at the head of bucket `slot`.
    #[inline]
    fn push<K, V>(&mut self, slab: &mut Slab<K, V>, slot: usize, key: K, value: V) -> u32 {
        let index = slab.alloc(key, value);
        self.link(slab, slot, index);
        index
    }

    /// Puts the entry in `slab`'s slot `index` (this table's slab) at the head of bucket `slot`.
    #[inline(always)]
    fn link<K, V>(&mut self, slab: &mut Slab<K, V>, slot: usize, index: u32) {
        let old = head_of(self.buckets[slot]);
        slab.set_next(index, old);
        self.buckets[slot] = bucket_word(index, old != NIL);
        self.used += 1;
    }

    /// Takes an entry (whose successor is `next`, whose predecessor is `prev`, or [`NIL`] for
    /// the head) off bucket `slot`'s chain, keeping the bucket word's [`MORE`] bit true. The
    /// caller releases the entry's slot.
    #[inline]
    fn unlink<K, V>(&mut self, slab: &mut Slab<K, V>, slot: usize, prev: u32, next: u32) {
        let word = self.buckets[slot];
        if prev == NIL {
            // The successor becomes the head: does it have one of its own?
            self.buckets[slot] = if next == NIL {
                NIL
            } else {
                bucket_word(next, slab.next(next) != NIL)
            };
        } else {
            slab.set_next(prev, next);
            if next == NIL && prev == head_of(word) {
                // Only the head is left.
                self.buckets[slot] = prev;
            }
        }
        self.used -= 1;
    }

    /// Calls `visit` for each entry of bucket `bucket`'s chain (`slab` is this table's).
    #[inline]
    fn each<'a, K, V>(
        &self,
        slab: &'a Slab<K, V>,
        bucket: usize,
        visit: &mut dyn FnMut(&'a K, &'a V),
    ) {
        let mut link = head_of(self.buckets[bucket]);
        while link != NIL {
            // SAFETY: a slot on a chain holds an entry.
            let ((k, v), next) = unsafe { slab.entry(link) };
            visit(k, v);
            link = next;
        }
    }

    /// [`Table::each`] with the values lent mutably.
    #[inline]
    fn each_mut<K, V>(
        &self,
        slab: &mut Slab<K, V>,
        bucket: usize,
        visit: &mut dyn FnMut(&K, &mut V),
    ) {
        let mut link = head_of(self.buckets[bucket]);
        while link != NIL {
            // SAFETY: a slot on a chain holds an entry.
            let ((k, v), next) = unsafe { slab.entry_mut(link) };
            visit(k, v);
            link = next;
        }
    }
}

/// Counters that let tests and INFO see the rehashing work.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RehashStats {
    /// Buckets moved from the old table to the new one, over the dict's lifetime.
    pub buckets_moved: u64,
    /// Most buckets moved by a single insert/remove/lookup step.
    pub max_buckets_per_operation: u64,
}

/// One table's chain statistics (see [`Dict::chain_stats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainStats {
    /// Buckets, and entries in them.
    pub size: usize,
    pub used: usize,
    /// Buckets holding at least one entry, the longest chain, and the entries counted along
    /// the chains.
    pub slots: usize,
    pub max_chain: usize,
    pub total_chain: usize,
    pub lengths: Vec<usize>,
}

/// A hash table with incremental rehashing; see the module documentation.
pub struct Dict<K, V, S = ahash::RandomState> {
    tables: [Table; 2],
    slabs: [Slab<K, V>; 2],
    /// `Some(i)`: rehashing, buckets of `tables[0]` below `i` already moved.
    rehash_index: Option<usize>,
    hasher: S,
    /// When false, growth waits until the load factor reaches 5 (Redis disables resizing while a
    /// child process saves, to avoid copy-on-write; we keep the switch for the same purpose).
    resize_allowed: bool,
    stats: RehashStats,
}

impl<K, V> Default for Dict<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> Dict<K, V> {
    /// An empty table hashing with this thread's keys ([`crate::hash_seed`]).
    pub fn new() -> Self {
        Self::with_hasher(crate::hash_seed::random_state())
    }
}

impl<K, V, S> Dict<K, V, S> {
    pub fn with_hasher(hasher: S) -> Self {
        Dict {
            tables: [Table::empty(0), Table::empty(0)],
            slabs: [Slab::new(), Slab::new()],
            rehash_index: None,
            hasher,
            resize_allowed: true,
            stats: RehashStats::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.tables[0].used + self.tables[1].used
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total buckets in both tables.
    pub fn buckets(&self) -> usize {
        self.tables[0].size() + self.tables[1].size()
    }

    /// Bucket counts of the main and (while rehashing) the new table.
    pub fn table_sizes(&self) -> (usize, usize) {
        (self.tables[0].size(), self.tables[1].size())
    }

    /// The chains of table `table` (0 the main one, 1 the one a rehash fills), as Redis's
    /// `dictGetStats` counts them: `lengths[n]` buckets hold `n` entries (the last element
    /// counts the longer chains too, up to `classes` of them).
    pub fn chain_stats(&self, table: usize, classes: usize) -> ChainStats {
        let t = &self.tables[table];
        let slab = &self.slabs[t.slab];
        let mut stats = ChainStats {
            size: t.size(),
            used: t.used,
            lengths: vec![0; classes.max(1)],
            ..ChainStats::default()
        };
        for &word in &t.buckets {
            let mut index = head_of(word);
            let mut length = 0;
            while index != NIL {
                length += 1;
                index = slab.next(index);
            }
            let class = length.min(stats.lengths.len() - 1);
            stats.lengths[class] += 1;
            if length > 0 {
                stats.slots += 1;
                stats.total_chain += length;
                stats.max_chain = stats.max_chain.max(length);
            }
        }
        stats
    }

    /// Heap bytes the dict holds: bucket arrays and slab chunks (used or not).
    pub fn allocated_bytes(&self) -> usize {
        let buckets: usize = self.tables.iter().map(|t| t.buckets.capacity() * 4).sum();
        buckets + self.slabs.iter().map(Slab::allocated_bytes).sum::<usize>()
    }

    /// Heap bytes of slab slots that hold no entry: the unused rest of the newest chunk, and
    /// the slots deleted entries left on the free list (the next insertions take them; the
    /// periodic tick gives them back when it shrinks the table). This is free memory the dict
    /// keeps for itself, as an allocator keeps freed chunks: an entry removed here frees its
    /// slot even though the allocator sees no change.
    pub fn idle_bytes(&self) -> usize {
        let capacity: usize = self.slabs.iter().map(|s| s.capacity as usize).sum();
        capacity.saturating_sub(self.len()) * (std::mem::size_of::<(K, V)>() + 4)
    }

    pub fn is_rehashing(&self) -> bool {
        self.rehash_index.is_some()
    }

    pub fn rehash_stats(&self) -> RehashStats {
        self.stats
    }

    /// Allows or discourages growth (see the field's documentation).
    pub fn set_resize_allowed(&mut self, allowed: bool) {
        self.resize_allowed = allowed;
    }

    /// Moves every entry out into a dict of their own, leaving this one empty with the same
    /// hasher (so that the entries loaded next land where the old ones were, as in Redis,
    /// whose tables share one seed per process).
    pub fn take(&mut self) -> Dict<K, V, S>
    where
        S: Clone,
    {
        let empty = Dict::with_hasher(self.hasher.clone());
        std::mem::replace(self, empty)
    }

    /// Removes every entry, keeping the hasher.
    pub fn clear(&mut self) {
        self.drop_entries();
        self.tables = [Table::empty(0), Table::empty(0)];
        self.slabs = [Slab::new(), Slab::new()];
        self.rehash_index = None;
    }

    /// Drops every entry, leaving the tables' chains dangling: the caller resets or frees the
    /// tables and slabs next. A slab without free slots holds an entry in every slot it has
    /// issued, and is dropped front to back (a sequential sweep: a million-member set is gone in
    /// a few milliseconds); one with free slots is dropped by walking its tables' chains.
    fn drop_entries(&mut self) {
        if !std::mem::needs_drop::<(K, V)>() {
            return;
        }
        for (id, slab) in self.slabs.iter_mut().enumerate() {
            if slab.free == NIL {
                for index in 0..slab.issued {
                    let (c, o) = place(index);
                    // SAFETY: with no free slot, every issued slot holds an entry.
                    unsafe { slab.chunks[c].entries[o].assume_init_drop() };
                }
                continue;
            }
            for table in self.tables.iter().filter(|t| t.slab == id) {
                for &word in &table.buckets {
                    let mut link = head_of(word);
                    while link != NIL {
                        let (c, o) = place(link);
                        let chunk = &mut slab.chunks[c];
                        link = chunk.next[o];
                        // SAFETY: a slot on a chain holds an entry; each is on one chain.
                        unsafe { chunk.entries[o].assume_init_drop() };
                    }
                }
            }
        }
    }

    /// Iterates over all entries (both tables while rehashing), in bucket order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter {
            tables: &self.tables,
            slabs: &self.slabs,
            table: 0,
            bucket: 0,
            link: NIL,
            remaining: self.len(),
        }
    }

    /// Visits every entry mutably, in no particular order.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&K, &mut V)) {
        for table in &self.tables {
            for bucket in 0..table.size() {
                table.each_mut(&mut self.slabs[table.slab], bucket, &mut f);
            }
        }
    }

    /// Moves up to `n` buckets from the old table to the new one, looking at no more than
    /// `10 × n` empty buckets. Returns true while there is more to move.
    pub fn rehash(&mut self, n: usize) -> bool
    where
        K: Hash,
        S: BuildHasher,
    {
        let Some(mut index) = self.rehash_index else {
            return false;
        };
        let mut empty_visits = n * EMPTY_VISITS_PER_STEP;
        let mut moved = 0u64;
        let [old, new] = &mut self.tables;
        // Growing, both tables use one slab and entries are only relinked; shrinking, they move
        // into the new table's slab (see the module documentation).
        let same_slab = old.slab == new.slab;
        let [slab_a, slab_b] = &mut self.slabs;
        let (old_slab, new_slab) = if old.slab == 0 {
            (slab_a, slab_b)
        } else {
            (slab_b, slab_a)
        };
        for _ in 0..n {
            if old.used == 0 {
                break;
            }
            while old.buckets[index] == NIL {
                index += 1;
                empty_visits -= 1;
                if empty_visits == 0 {
                    self.rehash_index = Some(index);
                    self.record_moved(moved);
                    return true;
                }
            }
            let mut link = head_of(std::mem::replace(&mut old.buckets[index], NIL));
            while link != NIL {
                let next = old_slab.next(link);
                if same_slab {
                    // SAFETY: `link` was on the chain just detached from the bucket.
                    let ((key, _), _) = unsafe { old_slab.entry(link) };
                    let slot = (self.hasher.hash_one(key) as usize) & new.mask();
                    new.link(old_slab, slot, link);
                } else {
                    // SAFETY: as above; the entry leaves the chain and the slab together.
                    let (key, value) = unsafe { old_slab.release(link) };
                    let slot = (self.hasher.hash_one(&key) as usize) & new.mask();
                    new.push(new_slab, slot, key, value);
                }
                old.used -= 1;
                link = next;
            }
            moved += 1;
            index += 1;
        }
        self.record_moved(moved);
        if self.tables[0].used == 0 {
            let old_slab = self.tables[0].slab;
            self.tables.swap(0, 1);
            self.tables[1] = Table::empty(self.tables[0].slab);
            if old_slab != self.tables[0].slab {
                // A shrink has moved every entry out: free the old slab's chunks.
                self.slabs[old_slab] = Slab::new();
            }
            self.rehash_index = None;
            return false;
        }
        self.rehash_index = Some(index);
        true
    }

    fn record_moved(&mut self, moved: u64) {
        self.stats.buckets_moved += moved;
    }

    /// Rehashes in steps of 100 buckets until done or `budget` has passed; returns the number of
    /// steps taken. The server's periodic tick calls this with 1 ms.
    pub fn rehash_for(&mut self, budget: Duration) -> usize
    where
        K: Hash,
        S: BuildHasher,
    {
        let start = Instant::now();
        let mut steps = 0;
        while self.rehash(100) {
            steps += 1;
            if start.elapsed() >= budget {
                break;
            }
        }
        steps
    }

    /// One bucket of rehashing, done by ordinary operations.
    #[inline]
    fn rehash_step(&mut self)
    where
        K: Hash,
        S: BuildHasher,
    {
        if self.rehash_index.is_some() {
            let before = self.stats.buckets_moved;
            self.rehash(1);
            let moved = self.stats.buckets_moved - before;
            self.stats.max_buckets_per_operation = self.stats.max_buckets_per_operation.max(moved);
        }
    }

    /// Starts moving to a table of the smallest power of two ≥ `size` (and ≥ 4). Does nothing
    /// while already rehashing or when the size would not change.
    pub fn expand(&mut self, size: usize) -> bool {
        if self.is_rehashing() || self.tables[0].used > size {
            return false;
        }
        let new_size = size
            .max(INITIAL_SIZE)
            .checked_next_power_of_two()
            .unwrap_or(usize::MAX);
        if new_size == self.tables[0].size() {
            return false;
        }
        // Shrinking moves the entries to the other slab, to pack them (module documentation).
        let current = self.tables[0].slab;
        let slab = if new_size < self.tables[0].size() {
            1 - current
        } else {
            current
        };
        let table = Table::with_size(new_size, slab);
        if self.tables[0].size() == 0 {
            // First allocation: nothing to move.
            self.tables[0] = table;
        } else {
            self.tables[1] = table;
            self.rehash_index = Some(0);
        }
        true
    }

    /// Shrinks the table when under 10% full (called from the periodic tick, as in Redis).
    /// Returns true if a resize started.
    pub fn shrink_if_needed(&mut self) -> bool {
        let size = self.tables[0].size();
        if self.is_rehashing() || size <= INITIAL_SIZE || !self.resize_allowed {
            return false;
        }
        if self.tables[0].used * 100 / size < MIN_FILL_PERCENT {
            return self.expand(self.tables[0].used.max(INITIAL_SIZE));
        }
        false
    }

    #[inline]
    fn expand_if_needed(&mut self) {
        if self.is_rehashing() {
            return;
        }
        let (size, used) = (self.tables[0].size(), self.tables[0].used);
        if size == 0 {
            self.expand(INITIAL_SIZE);
        } else if used >= size && (self.resize_allowed || used / size > FORCE_RESIZE_RATIO) {
            self.expand(used + 1);
        }
    }

    /// Which tables to search: both while rehashing, else only the main one.
    #[inline]
    fn live_tables(&self) -> usize {
        if self.is_rehashing() {
            2
        } else {
            1
        }
    }
}

impl<K, V, S> Dict<K, V, S>
where
    K: Hash + Eq,
    S: BuildHasher,
{
    #[inline]
    fn hash<Q: Hash + ?Sized>(&self, key: &Q) -> usize {
        self.hasher.hash_one(key) as usize
    }

    /// The hash a lookup of `key` starts from, for [`Dict::prefetch_bucket`] and
    /// [`Dict::prefetch_entry`].
    #[inline]
    pub fn hash_of<Q: Hash + ?Sized>(&self, key: &Q) -> usize {
        self.hash(key)
    }

    /// Asks the CPU to fetch the bucket a lookup of `hash` reads first, in every live table.
    ///
    /// Prefetching is how a batch of lookups overlaps its cache misses: a pipeline's keys are
    /// first given to this, then to [`Dict::prefetch_entry`], then looked up, so that the misses
    /// of all of them are in flight at once instead of one after another (a key table larger
    /// than the CPU's caches costs a miss for the bucket and one or two for the entry).
    #[inline]
    pub fn prefetch_bucket(&self, hash: usize) {
        for table in &self.tables[..self.live_tables()] {
            if let Some(word) = table.buckets.get(hash & table.mask()) {
                prefetch_read(word as *const u32);
            }
        }
    }

    /// Reads the bucket of `hash` (which [`Dict::prefetch_bucket`] brought in) and asks the CPU
    /// to fetch the entry at the head of its chain, and the link to the next for a longer chain.
    #[inline]
    pub fn prefetch_entry(&self, hash: usize) {
        for table in &self.tables[..self.live_tables()] {
            let Some(&word) = table.buckets.get(hash & table.mask()) else {
                continue;
            };
            if word != NIL {
                self.slabs[table.slab].prefetch(head_of(word), word & MORE != 0);
            }
        }
    }

    /// [`Dict::get`] for a key whose [`Dict::hash_of`] the caller has (a prefetch's last pass).
    #[inline]
    pub fn get_hashed<Q>(&self, hash: usize, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (t, index) = self.locate(hash, key)?;
        // SAFETY: `locate` found the entry on a chain of table `t`.
        let ((_, v), _) = unsafe { self.slabs[self.tables[t].slab].entry(index) };
        Some(v)
    }

    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get_key_value(key).map(|(_, v)| v)
    }

    #[inline]
    pub fn get_key_value<Q>(&self, key: &Q) -> Option<(&K, &V)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.is_empty() {
            return None;
        }
        let (t, index) = self.locate(self.hash(key), key)?;
        // SAFETY: `locate` found the entry on a chain of table `t`.
        let ((k, v), _) = unsafe { self.slabs[self.tables[t].slab].entry(index) };
        Some((k, v))
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get_key_value(key).is_some()
    }

    /// Mutable lookup; also performs one rehash step.
    #[inline]
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.is_empty() {
            return None;
        }
        self.rehash_step();
        let position = self.locate(self.hash(key), key)?;
        Some(self.value_at_mut(position))
    }

    /// Where `key` is: (table, slab index).
    #[inline]
    fn locate<Q>(&self, hash: usize, key: &Q) -> Option<(usize, u32)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.is_empty() {
            return None;
        }
        for (t, table) in self.tables[..self.live_tables()].iter().enumerate() {
            let slab = &self.slabs[table.slab];
            let mut link = head_of(table.buckets[hash & table.mask()]);
            while link != NIL {
                // SAFETY: a slot on a chain holds an entry.
                let ((k, _), next) = unsafe { slab.entry(link) };
                if k.borrow() == key {
                    return Some((t, link));
                }
                link = next;
            }
        }
        None
    }

    #[inline]
    fn value_at_mut(&mut self, (table, index): (usize, u32)) -> &mut V {
        // SAFETY: positions come from `locate` with no change to the tables since.
        unsafe { &mut self.slabs[self.tables[table].slab].entry_mut(index).0 .1 }
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.rehash_step();
        let hash = self.hash(&key);
        match self.locate(hash, &key) {
            Some(position) => Some(std::mem::replace(self.value_at_mut(position), value)),
            None => {
                self.insert_unchecked(hash, key, value);
                None
            }
        }
    }

    /// Inserts a key the caller knows to be absent (it has just looked it up), skipping the
    /// lookup. Returns the stored value.
    #[inline]
    pub fn insert_new(&mut self, key: K, value: V) -> &mut V {
        self.rehash_step();
        let hash = self.hash(&key);
        self.insert_unchecked(hash, key, value)
    }

    /// Links a new entry at the head of its bucket, growing the table first if needed.
    #[inline]
    fn insert_unchecked(&mut self, hash: usize, key: K, value: V) -> &mut V {
        self.expand_if_needed();
        let target = if self.is_rehashing() { 1 } else { 0 };
        let table = &mut self.tables[target];
        let slot = hash & table.mask();
        let index = table.push(&mut self.slabs[table.slab], slot, key, value);
        self.value_at_mut((target, index))
    }

    /// Returns the value for `key`, inserting `make()` first if it is absent.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        self.rehash_step();
        let hash = self.hash(&key);
        match self.locate(hash, &key) {
            Some(position) => self.value_at_mut(position),
            None => self.insert_unchecked(hash, key, make()),
        }
    }

    /// Removes `key`, returning its key and value.
    pub fn remove_entry<Q>(&mut self, key: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.is_empty() {
            return None;
        }
        self.rehash_step();
        let hash = self.hash(key);
        let live = self.live_tables();
        for table in self.tables[..live].iter_mut() {
            let slab = &mut self.slabs[table.slab];
            let slot = hash & table.mask();
            let mut prev = NIL;
            let mut link = head_of(table.buckets[slot]);
            while link != NIL {
                // SAFETY: a slot on a chain holds an entry.
                let ((k, _), next) = unsafe { slab.entry(link) };
                if k.borrow() == key {
                    table.unlink(slab, slot, prev, next);
                    // SAFETY: the entry is initialised and now unlinked.
                    return Some(unsafe { slab.release(link) });
                }
                prev = link;
                link = next;
            }
        }
        None
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.remove_entry(key).map(|(_, v)| v)
    }

    /// One SCAN step: calls `visit` for every entry of the bucket(s) `cursor` designates and
    /// returns the next cursor (0 when the iteration is complete). See the module documentation
    /// for the guarantees. The entries are lent for as long as the dict is, so that callers can
    /// collect references.
    pub fn scan<'a>(&'a self, cursor: u64, mut visit: impl FnMut(&'a K, &'a V)) -> u64 {
        if self.is_empty() {
            return 0;
        }
        let mut v = cursor as usize;
        if !self.is_rehashing() {
            let t0 = &self.tables[0];
            let m0 = t0.mask();
            t0.each(&self.slabs[t0.slab], v & m0, &mut visit);
            v |= !m0;
            v = v.reverse_bits().wrapping_add(1).reverse_bits();
        } else {
            let (small, large) = if self.tables[0].size() <= self.tables[1].size() {
                (&self.tables[0], &self.tables[1])
            } else {
                (&self.tables[1], &self.tables[0])
            };
            let (m0, m1) = (small.mask(), large.mask());
            small.each(&self.slabs[small.slab], v & m0, &mut visit);
            // Visit every bucket of the larger table that expands the smaller table's bucket.
            loop {
                large.each(&self.slabs[large.slab], v & m1, &mut visit);
                v |= !m1;
                v = v.reverse_bits().wrapping_add(1).reverse_bits();
                if v & (m0 ^ m1) == 0 {
                    break;
                }
            }
        }
        v as u64
    }

    /// [`Dict::scan`] with each entry's value lent mutably: the same cursor and the same
    /// guarantees (every entry present for the whole walk is visited at least once, some may be
    /// visited twice across a resize). The background snapshot walks a database with it and
    /// marks each object it has written.
    pub fn scan_mut(&mut self, cursor: u64, mut visit: impl FnMut(&K, &mut V)) -> u64 {
        if self.is_empty() {
            return 0;
        }
        let mut v = cursor as usize;
        if !self.is_rehashing() {
            let t0 = &self.tables[0];
            let m0 = t0.mask();
            t0.each_mut(&mut self.slabs[t0.slab], v & m0, &mut visit);
            v |= !m0;
            v = v.reverse_bits().wrapping_add(1).reverse_bits();
        } else {
            let (small, large) = if self.tables[0].size() <= self.tables[1].size() {
                (0, 1)
            } else {
                (1, 0)
            };
            let (small, large) = (&self.tables[small], &self.tables[large]);
            let (m0, m1) = (small.mask(), large.mask());
            small.each_mut(&mut self.slabs[small.slab], v & m0, &mut visit);
            loop {
                large.each_mut(&mut self.slabs[large.slab], v & m1, &mut visit);
                v |= !m1;
                v = v.reverse_bits().wrapping_add(1).reverse_bits();
                if v & (m0 ^ m1) == 0 {
                    break;
                }
            }
        }
        v as u64
    }

    /// Up to `buckets` steps of [`Dict::scan_mut`] in one call, with the same cursor and the same
    /// guarantees. A long walk (the background snapshot's) spends most of its time waiting for
    /// memory: the reverse-binary order jumps across the bucket array, so each bucket and each
    /// entry is a cache miss. Outside a rehash this first touches the next steps' buckets and
    /// their first entries in a tight loop, whose loads the CPU overlaps, and then visits them
    /// from the cache (a BGSAVE of 1M keys walked in half the time).
    pub fn scan_mut_batch(
        &mut self,
        cursor: u64,
        buckets: usize,
        mut visit: impl FnMut(&K, &mut V),
    ) -> u64 {
        const AHEAD: usize = 16;
        let mut v = cursor;
        let mut left = buckets;
        while left > 0 {
            if self.is_empty() {
                return 0;
            }
            if self.is_rehashing() {
                v = self.scan_mut(v, &mut visit);
                left -= 1;
                if v == 0 {
                    return 0;
                }
                continue;
            }
            let table = &self.tables[0];
            let slab = &mut self.slabs[table.slab];
            let mask = table.mask();
            // The next steps' buckets, stopping where the cursor wraps to 0 (the walk's end).
            let mut indices = [0usize; AHEAD];
            let mut n = 0;
            let mut w = v as usize;
            while n < AHEAD.min(left) {
                indices[n] = w & mask;
                n += 1;
                w |= !mask;
                w = w.reverse_bits().wrapping_add(1).reverse_bits();
                if w == 0 {
                    break;
                }
            }
            let mut warm = 0usize;
            for &index in &indices[..n] {
                // Reading each first entry's link and key pulls the bucket slot and the entry in.
                let link = head_of(table.buckets[index]);
                if link != NIL {
                    // SAFETY: a slot on a chain holds an entry.
                    let (_, next) = unsafe { slab.entry(link) };
                    warm += usize::from(next != NIL);
                }
            }
            std::hint::black_box(warm);
            for &index in &indices[..n] {
                table.each_mut(slab, index, &mut visit);
            }
            left -= n;
            v = w as u64;
            if v == 0 {
                return 0;
            }
        }
        v
    }

    /// A random entry drawn more fairly than [`Dict::random_entry`] (Redis's
    /// `dictGetFairRandomKey`): picking a bucket and then a place in its chain favours entries in
    /// short chains, so this gathers up to 15 entries from consecutive buckets starting at a
    /// random one and picks among them uniformly. SRANDMEMBER and HRANDFIELD use it; Redis's
    /// tests check their histograms.
    pub fn fair_random_entry(&self, rng: &mut impl Rng) -> Option<(&K, &V)> {
        let (t, _, link) = match self.fair_random_position(rng) {
            Some(position) => position,
            None => return self.random_entry(rng),
        };
        // SAFETY: the position is on a chain of table `t`.
        let ((k, v), _) = unsafe { self.slabs[self.tables[t].slab].entry(link) };
        Some((k, v))
    }

    /// Removes and returns an entry drawn as [`Dict::fair_random_entry`] draws one (SPOP):
    /// unlinked where it was found, without hashing its key again.
    pub fn pop_fair_random(&mut self, rng: &mut impl Rng) -> Option<(K, V)>
    where
        K: Hash,
        S: BuildHasher,
    {
        let (t, bucket, link) = match self.fair_random_position(rng) {
            Some(position) => position,
            None => {
                let (t, index) = self.random_position(rng)?;
                let table = &self.tables[t];
                // SAFETY: `index` is on a chain of table `t`.
                let ((key, _), _) = unsafe { self.slabs[table.slab].entry(index) };
                let bucket = (self.hasher.hash_one(key) as usize) & table.mask();
                (t, bucket, index)
            }
        };
        let table = &mut self.tables[t];
        let slab = &mut self.slabs[table.slab];
        let next = slab.next(link);
        let mut prev = NIL;
        let mut at = head_of(table.buckets[bucket]);
        while at != link {
            prev = at;
            at = slab.next(at);
        }
        table.unlink(slab, bucket, prev, next);
        // SAFETY: the entry was on the chain it has just left.
        let entry = unsafe { slab.release(link) };
        self.rehash_step();
        Some(entry)
    }

    /// Where [`Dict::fair_random_entry`]'s draw is: (table, bucket, slab index), or `None` when
    /// the walk found nothing (a sparse table), for the caller to fall back on a plain draw.
    /// Like Redis's `dictGetSomeKeys` called by `dictGetFairRandomKey`, it stops at 15 entries
    /// (`GETFAIR_NUM_ENTRIES`) after at most 150 buckets; only their links are read.
    fn fair_random_position(&self, rng: &mut impl Rng) -> Option<(usize, usize, u32)> {
        const SAMPLES: usize = 15;
        if self.is_empty() {
            return None;
        }
        let live = if self.rehash_index.is_some() { 2 } else { 1 };
        let size = self.tables[..live]
            .iter()
            .map(Table::size)
            .max()
            .unwrap_or(0);
        let mask = size - 1;
        // First the non-empty buckets (a sequential walk over the bucket arrays), then their
        // heads' links, read in a loop of their own: the loads are independent, so their cache
        // misses overlap instead of queueing one behind the other as a chain walk would (one
        // walk instead: SPOP -P 16 at 2.10 µs of CPU per request against 1.76, 1.5M members).
        // Bucket words: a lone entry's needs nothing more read (no MORE bit).
        let mut heads = [(0usize, 0usize, NIL); SAMPLES];
        let mut nheads = 0;
        let mut index = rng.gen_range(0..size);
        // Enough steps to cross the whole table when it is sparse, bounded for big ones.
        let mut steps = size.clamp(1, SAMPLES * 10);
        while nheads < SAMPLES && steps > 0 {
            for (t, table) in self.tables[..live].iter().enumerate() {
                if index < table.size() && nheads < SAMPLES {
                    let word = table.buckets[index];
                    if word != NIL {
                        heads[nheads] = (t, index, word);
                        nheads += 1;
                    }
                }
            }
            index = (index + 1) & mask;
            steps -= 1;
        }
        // Then the links of the chains of more than one entry, read in a loop of their own:
        // the loads are independent, so their cache misses overlap.
        let mut nexts = [NIL; SAMPLES];
        for (next, &(t, _, word)) in nexts.iter_mut().zip(&heads[..nheads]) {
            if word & MORE != 0 {
                *next = self.slabs[self.tables[t].slab].next(head_of(word));
            }
        }
        // Every entry of those chains, in bucket order, up to SAMPLES.
        let mut found = [(0usize, 0usize, NIL); SAMPLES];
        let mut n = 0;
        for (&(t, bucket, word), &next) in heads[..nheads].iter().zip(&nexts) {
            if n == SAMPLES {
                break;
            }
            found[n] = (t, bucket, head_of(word));
            n += 1;
            let slab = &self.slabs[self.tables[t].slab];
            let mut link = next;
            while link != NIL && n < SAMPLES {
                found[n] = (t, bucket, link);
                n += 1;
                link = slab.next(link);
            }
        }
        (n > 0).then(|| found[rng.gen_range(0..n)])
    }

    /// Up to `count` entries from consecutive buckets starting at a random one, handed to
    /// `visit` (Redis's `dictGetSomeKeys`, the sampler of eviction): much cheaper than `count`
    /// calls of [`Dict::random_entry`], at the price of entries that are not independent. Walks
    /// at most `count * 10` buckets, and jumps to a new random bucket after a run of more than
    /// `count` (and at least five) empty ones, so that a sparse table does not cost a long walk.
    /// Returns how many entries were visited.
    pub fn sample<'a>(
        &'a self,
        count: usize,
        rng: &mut impl Rng,
        mut visit: impl FnMut(&'a K, &'a V),
    ) -> usize {
        let count = count.min(self.len());
        if count == 0 {
            return 0;
        }
        let tables: &[Table] = if self.rehash_index.is_some() {
            &self.tables[..]
        } else {
            &self.tables[..1]
        };
        let mask = tables.iter().map(Table::mask).max().unwrap_or(0);
        let mut index = rng.gen::<usize>() & mask;
        let mut found = 0;
        let mut empty_run = 0;
        let mut steps = count * 10;
        while found < count && steps > 0 {
            steps -= 1;
            for (t, table) in tables.iter().enumerate() {
                // Buckets of the old table below the rehash index are empty: go on in the new
                // one from there, as Redis does.
                if t == 0 && self.rehash_index.is_some_and(|moved| index < moved) {
                    continue;
                }
                if index >= table.size() {
                    continue;
                }
                let mut link = head_of(table.buckets[index]);
                if link == NIL {
                    empty_run += 1;
                    if empty_run >= 5 && empty_run > count {
                        index = rng.gen::<usize>() & mask;
                        empty_run = 0;
                    }
                    continue;
                }
                empty_run = 0;
                let slab = &self.slabs[table.slab];
                while link != NIL {
                    // SAFETY: a slot on a chain holds an entry.
                    let ((k, v), next) = unsafe { slab.entry(link) };
                    visit(k, v);
                    found += 1;
                    if found == count {
                        return found;
                    }
                    link = next;
                }
            }
            index = (index + 1) & mask;
        }
        found
    }

    /// A random entry: a random non-empty bucket, then a random entry of its chain (Redis's
    /// `dictGetRandomKey`; [`Dict::fair_random_entry`] is fairer when chains differ in length).
    pub fn random_entry(&self, rng: &mut impl Rng) -> Option<(&K, &V)> {
        let (t, index) = self.random_position(rng)?;
        // SAFETY: the position is on a chain of table `t`.
        let ((k, v), _) = unsafe { self.slabs[self.tables[t].slab].entry(index) };
        Some((k, v))
    }

    /// [`Dict::random_entry`]'s draw: (table, slab index).
    fn random_position(&self, rng: &mut impl Rng) -> Option<(usize, u32)> {
        if self.is_empty() {
            return None;
        }
        let (t, head) = loop {
            let (t, index) = match self.rehash_index {
                Some(moved) => {
                    // Buckets below `moved` in the old table are empty: skip them.
                    let s0 = self.tables[0].size();
                    let span = s0 - moved + self.tables[1].size();
                    let i = moved + rng.gen_range(0..span);
                    if i >= s0 {
                        (1, i - s0)
                    } else {
                        (0, i)
                    }
                }
                None => (0, rng.gen_range(0..self.tables[0].size())),
            };
            let head = head_of(self.tables[t].buckets[index]);
            if head != NIL {
                break (t, head);
            }
        };
        let slab = &self.slabs[self.tables[t].slab];
        let mut chain_len = 0;
        let mut link = head;
        while link != NIL {
            chain_len += 1;
            link = slab.next(link);
        }
        let mut pick = rng.gen_range(0..chain_len);
        let mut link = head;
        while pick > 0 {
            link = slab.next(link);
            pick -= 1;
        }
        Some((t, link))
    }
}

impl<K, V, S> Clone for Dict<K, V, S>
where
    K: Hash + Eq + Clone,
    V: Clone,
    S: BuildHasher + Clone,
{
    /// A copy with the same entries (rehashing finished: the copy has one table sized for them).
    fn clone(&self) -> Self {
        let mut copy = Dict::with_hasher(self.hasher.clone());
        copy.expand(self.len());
        for (k, v) in self.iter() {
            copy.insert_new(k.clone(), v.clone());
        }
        copy
    }
}

impl<K, V, S> Drop for Dict<K, V, S> {
    fn drop(&mut self) {
        self.drop_entries();
    }
}

impl<K: std::fmt::Debug, V: std::fmt::Debug, S> std::fmt::Debug for Dict<K, V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Iterator over a dict's entries.
pub struct Iter<'a, K, V> {
    tables: &'a [Table; 2],
    slabs: &'a [Slab<K, V>; 2],
    table: usize,
    bucket: usize,
    /// The next entry of the current chain (`NIL`: go to the next bucket).
    link: u32,
    remaining: usize,
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.link != NIL {
                let slab = &self.slabs[self.tables[self.table].slab];
                // SAFETY: a slot on a chain holds an entry.
                let ((k, v), next) = unsafe { slab.entry(self.link) };
                self.link = next;
                self.remaining -= 1;
                return Some((k, v));
            }
            let table = self.tables.get(self.table)?;
            if self.bucket >= table.size() {
                self.table += 1;
                self.bucket = 0;
                continue;
            }
            self.link = head_of(table.buckets[self.bucket]);
            self.bucket += 1;
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

#[cfg(test)]
impl<K, V, S> Dict<K, V, S> {
    /// Panics unless every bucket word's [`MORE`] bit says whether its chain has more than one
    /// entry, and every head index is below the bit.
    fn assert_bucket_words(&self) {
        for table in &self.tables {
            let slab = &self.slabs[table.slab];
            for (b, &word) in table.buckets.iter().enumerate() {
                if word == NIL {
                    continue;
                }
                let head = head_of(word);
                assert!(head < MORE, "bucket {b}: head {head} reaches the MORE bit");
                let more = slab.next(head) != NIL;
                assert_eq!(word & MORE != 0, more, "bucket {b}: MORE bit wrong");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};

    fn fixed() -> Dict<u64, u64, ahash::RandomState> {
        Dict::with_hasher(ahash::RandomState::with_seeds(1, 2, 3, 4))
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16, u64),
        Remove(u16),
        Get(u16),
        Shrink,
        RehashAll,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (any::<u16>(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k % 512, v)),
            4 => any::<u16>().prop_map(|k| Op::Remove(k % 512)),
            3 => any::<u16>().prop_map(|k| Op::Get(k % 512)),
            1 => Just(Op::Shrink),
            1 => Just(Op::RehashAll),
        ]
    }

    proptest! {
        /// (a) The dict behaves like a HashMap under random inserts, removes and lookups,
        /// through growth, shrinking and partial rehashes.
        #[test]
        fn behaves_like_hashmap(ops in proptest::collection::vec(op(), 1..2000)) {
            let mut dict = fixed();
            let mut model: HashMap<u64, u64> = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        prop_assert_eq!(dict.insert(k as u64, v), model.insert(k as u64, v));
                    }
                    Op::Remove(k) => {
                        prop_assert_eq!(dict.remove(&(k as u64)), model.remove(&(k as u64)));
                    }
                    Op::Get(k) => {
                        // Prefetching (of the key's own hash and of any hash) changes nothing,
                        // in every state of the tables, rehashing or empty.
                        for hash in [dict.hash_of(&(k as u64)), (k as usize).wrapping_mul(0x9e37_79b9_7f4a_7c15)] {
                            dict.prefetch_bucket(hash);
                            dict.prefetch_entry(hash);
                        }
                        prop_assert_eq!(dict.get(&(k as u64)), model.get(&(k as u64)));
                        prop_assert_eq!(dict.get_mut(&(k as u64)).copied(), model.get(&(k as u64)).copied());
                    }
                    Op::Shrink => { dict.shrink_if_needed(); }
                    Op::RehashAll => while dict.rehash(100) {},
                }
                prop_assert_eq!(dict.len(), model.len());
                dict.assert_bucket_words();
                // Slab memory is the live entries (with their links) plus the idle slots.
                let slabs: usize = dict.slabs.iter().map(Slab::allocated_bytes).sum();
                prop_assert_eq!(slabs, dict.len() * (std::mem::size_of::<(u64, u64)>() + 4) + dict.idle_bytes());
            }
            let mut seen: Vec<(u64, u64)> = dict.iter().map(|(k, v)| (*k, *v)).collect();
            let mut expected: Vec<(u64, u64)> = model.into_iter().collect();
            seen.sort();
            expected.sort();
            prop_assert_eq!(seen, expected);
        }

        /// (b) A SCAN started before a resize and finished after it (with inserts and removes in
        /// between) returns every key present for the whole iteration.
        #[test]
        fn scan_survives_rehashing(initial in 1usize..3000, churn in proptest::collection::vec(any::<(bool, u16)>(), 0..400),
                                   grow in any::<bool>()) {
            let mut dict = fixed();
            for k in 0..initial as u64 {
                dict.insert(k, k);
            }
            while dict.rehash(100) {}
            // Keys that are never removed must all be returned.
            let stable: HashSet<u64> = (0..initial as u64).filter(|k| k % 3 != 0).collect();
            let mut returned = HashSet::new();
            let mut cursor = 0;
            let mut step = 0;
            let mut churn = churn.into_iter();
            loop {
                cursor = dict.scan(cursor, |k, _| { returned.insert(*k); });
                step += 1;
                if step == 2 {
                    // Force a resize in the middle of the scan.
                    if grow {
                        for k in 0..initial as u64 * 2 { dict.insert(1_000_000 + k, 0); }
                    } else {
                        for k in (0..initial as u64).filter(|k| k % 3 == 0) { dict.remove(&k); }
                        dict.shrink_if_needed();
                    }
                }
                if let Some((insert, k)) = churn.next() {
                    if insert { dict.insert(2_000_000 + k as u64, 0); }
                    else if (k as u64).is_multiple_of(3) { dict.remove(&(k as u64)); }
                }
                if cursor == 0 { break; }
            }
            for k in &stable {
                prop_assert!(returned.contains(k), "key {} missing from SCAN", k);
            }
        }
    }

    /// `scan_mut` walks exactly as `scan` does, including mid-rehash, and lends each value
    /// mutably.
    #[test]
    fn scan_mut_follows_scan() {
        let mut dict = fixed();
        // Stop inserting while the table rehashes, so that the walk starts over two tables.
        let mut k = 0u64;
        while k < 3_000 || !dict.is_rehashing() {
            dict.insert(k, 0u64);
            k += 1;
        }
        let (mut cursor, mut seen) = (0u64, Vec::new());
        loop {
            let mut step = Vec::new();
            let next_a = dict.scan(cursor, |k, _| step.push(*k));
            let next_b = dict.scan_mut(cursor, |k, v| {
                *v += 1;
                seen.push(*k);
            });
            assert_eq!(next_a, next_b);
            assert_eq!(&seen[seen.len() - step.len()..], &step[..]);
            cursor = next_b;
            if cursor == 0 {
                break;
            }
        }
        let mut all: Vec<u64> = dict.iter().map(|(k, _)| *k).collect();
        all.sort_unstable();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, all);
        assert!(dict.iter().all(|(_, v)| *v >= 1));
    }

    proptest! {
        /// `scan_mut_batch(c, n)` is `n` steps of `scan_mut` from `c`: the same entries in the
        /// same order and the same cursor, in plain and rehashing tables, whatever the batch.
        #[test]
        fn scan_mut_batch_is_that_many_scan_mut_steps(
            size in 0u64..5_000,
            batches in proptest::collection::vec(1usize..80, 1..40),
        ) {
            let mut a = fixed();
            let mut b = fixed();
            for k in 0..size {
                a.insert(k, 0u64);
                b.insert(k, 0u64);
            }
            let (mut ca, mut cb) = (0u64, 0u64);
            for n in batches.iter().cycle().take(10_000) {
                let mut seen_a = Vec::new();
                for _ in 0..*n {
                    ca = a.scan_mut(ca, |k, _| seen_a.push(*k));
                    if ca == 0 {
                        break;
                    }
                }
                let mut seen_b = Vec::new();
                cb = b.scan_mut_batch(cb, *n, |k, v| {
                    *v += 1;
                    seen_b.push(*k);
                });
                prop_assert_eq!(ca, cb);
                prop_assert_eq!(seen_a, seen_b);
                if cb == 0 {
                    break;
                }
            }
            prop_assert_eq!(ca, 0, "the walk ends within the steps given");
            prop_assert!(b.iter().all(|(_, v)| *v >= 1));
        }
    }

    /// (c) Ordinary operations move at most one bucket each; the rest happens in bulk rehash calls.
    #[test]
    fn single_operations_move_a_bounded_number_of_buckets() {
        let mut dict = fixed();
        let mut was_rehashing = 0;
        for k in 0..100_000u64 {
            let before = dict.rehash_stats().buckets_moved;
            dict.insert(k, k);
            let moved = dict.rehash_stats().buckets_moved - before;
            assert!(moved <= 1, "insert moved {moved} buckets");
            if dict.is_rehashing() {
                was_rehashing += 1;
            }
        }
        assert!(
            was_rehashing > 0,
            "the table must have been rehashing at some point"
        );
        assert_eq!(dict.rehash_stats().max_buckets_per_operation, 1);
        for k in 0..100_000u64 {
            assert_eq!(dict.get(&k), Some(&k));
        }
    }

    #[test]
    fn grows_at_load_factor_one_and_shrinks_below_ten_percent() {
        let mut dict = fixed();
        for k in 0..4u64 {
            dict.insert(k, k);
        }
        assert_eq!(dict.table_sizes(), (4, 0));
        dict.insert(4, 4);
        assert!(dict.is_rehashing(), "the fifth key triggers growth");
        while dict.rehash(1) {}
        assert_eq!(dict.table_sizes(), (8, 0));
        for k in 5..1024u64 {
            dict.insert(k, k);
        }
        while dict.rehash(100) {}
        let (size, _) = dict.table_sizes();
        assert_eq!(size, 1024);
        for k in 0..1000u64 {
            dict.remove(&k);
        }
        assert!(dict.shrink_if_needed());
        while dict.rehash(100) {}
        assert_eq!(dict.table_sizes(), (32, 0));
        assert_eq!(dict.len(), 24);
    }

    #[test]
    fn scan_of_a_stable_table_returns_each_key_once() {
        let mut dict = fixed();
        for k in 0..1000u64 {
            dict.insert(k, k);
        }
        while dict.rehash(100) {}
        let mut seen = Vec::new();
        let mut cursor = 0;
        loop {
            cursor = dict.scan(cursor, |k, _| seen.push(*k));
            if cursor == 0 {
                break;
            }
        }
        seen.sort();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn random_entries_cover_the_table() {
        let mut dict = fixed();
        for k in 0..50u64 {
            dict.insert(k, k);
        }
        let mut rng = rand::rngs::mock::StepRng::new(0, 0x9E37_79B9_7F4A_7C15);
        let mut seen = HashSet::new();
        for _ in 0..5000 {
            seen.insert(*dict.random_entry(&mut rng).unwrap().0);
        }
        assert!(seen.len() > 40, "saw only {} distinct keys", seen.len());
        assert!(fixed().random_entry(&mut rng).is_none());
    }

    /// The histogram test Redis runs on SRANDMEMBER/HRANDFIELD: 10 entries (chains of
    /// different lengths in 16 buckets, some of them mid-rehash), 1000 draws, chi-square under 40
    /// (a 0.001% chance for a uniform draw). Also every entry can come up.
    #[test]
    fn fair_random_entries_are_uniform() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for rehashing in [false, true] {
            let mut dict = fixed();
            for k in 0..10u64 {
                dict.insert(k, k);
            }
            if rehashing {
                dict.expand(64);
                dict.rehash(3);
            }
            for _ in 0..20 {
                let mut counts = [0u32; 10];
                for _ in 0..1000 {
                    counts[*dict.fair_random_entry(&mut rng).unwrap().0 as usize] += 1;
                }
                let chi: f64 = counts
                    .iter()
                    .map(|&c| (c as f64 - 100.0).powi(2) / 100.0)
                    .sum();
                assert!(chi < 40.0, "chi-square {chi} for {counts:?}");
            }
        }
        assert!(fixed().fair_random_entry(&mut rng).is_none());
    }

    #[test]
    fn get_or_insert_with_inserts_once() {
        let mut dict = fixed();
        *dict.get_or_insert_with(7, || 1) += 1;
        *dict.get_or_insert_with(7, || 100) += 1;
        assert_eq!(dict.get(&7), Some(&3));
        for k in 0..100 {
            *dict.get_or_insert_with(k, || 0) += 1;
        }
        assert_eq!(dict.get(&7), Some(&4));
        assert_eq!(dict.len(), 100);
    }

    #[test]
    fn long_chains_drop_without_recursion() {
        let mut dict = fixed();
        dict.set_resize_allowed(false);
        for k in 0..20_000u64 {
            dict.insert(k, k);
        }
        drop(dict);
    }

    /// A value that counts how many of its kind are alive, to check that the slabs drop every
    /// entry exactly once: on replace, remove, rehash (entries move between slabs), clear,
    /// take and drop.
    #[derive(Debug)]
    struct Counted(std::rc::Rc<std::cell::Cell<i64>>);

    impl Counted {
        fn new(live: &std::rc::Rc<std::cell::Cell<i64>>) -> Self {
            live.set(live.get() + 1);
            Counted(live.clone())
        }
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() - 1);
        }
    }

    proptest! {
        /// Every value stored is dropped exactly once, whatever mix of operations and resizes
        /// came before, and the slabs reuse freed slots (the live count never exceeds `len`).
        #[test]
        fn slabs_drop_each_entry_once(ops in proptest::collection::vec(op(), 1..1500), clear_at in 0usize..1500) {
            let live = std::rc::Rc::new(std::cell::Cell::new(0i64));
            let mut dict: Dict<u64, Counted, ahash::RandomState> =
                Dict::with_hasher(ahash::RandomState::with_seeds(1, 2, 3, 4));
            for (i, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Insert(k, _) => { dict.insert(k as u64, Counted::new(&live)); }
                    Op::Remove(k) => { dict.remove(&(k as u64)); }
                    Op::Get(k) => { dict.get_mut(&(k as u64)); }
                    Op::Shrink => { dict.shrink_if_needed(); }
                    Op::RehashAll => while dict.rehash(100) {},
                }
                if i == clear_at {
                    if i % 2 == 0 { dict.clear(); } else { drop(dict.take()); }
                }
                prop_assert_eq!(live.get(), dict.len() as i64);
            }
            drop(dict);
            prop_assert_eq!(live.get(), 0);
        }
    }

    /// SPOP's removal: every entry comes out exactly once, through growth, shrinking and
    /// rehashing in between, and what is left is always what was not popped.
    #[test]
    fn pop_fair_random_takes_each_entry_once() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut dict = fixed();
        let mut left: HashSet<u64> = HashSet::new();
        for k in 0..5_000u64 {
            dict.insert(k, k * 2);
            left.insert(k);
        }
        let mut popped = 0;
        while let Some((k, v)) = dict.pop_fair_random(&mut rng) {
            assert_eq!(v, k * 2);
            assert!(left.remove(&k), "{k} popped twice");
            popped += 1;
            if popped % 500 == 0 {
                dict.shrink_if_needed();
            }
            if popped % 97 == 0 {
                dict.assert_bucket_words();
            }
            assert_eq!(dict.len(), left.len());
        }
        assert!(left.is_empty());
        assert_eq!(popped, 5_000);
    }

    /// After mass deletion the periodic shrink moves the survivors into a slab of their size.
    #[test]
    fn shrinking_compacts_the_slab() {
        let mut dict = fixed();
        for k in 0..100_000u64 {
            dict.insert(k, k);
        }
        while dict.rehash(100) {}
        let full = dict.allocated_bytes();
        for k in 100..100_000u64 {
            dict.remove(&k);
        }
        assert!(dict.shrink_if_needed());
        while dict.rehash(100) {}
        assert!(
            dict.allocated_bytes() * 100 < full,
            "{} of {full}",
            dict.allocated_bytes()
        );
        assert_eq!(dict.len(), 100);
        for k in 0..100u64 {
            assert_eq!(dict.get(&k), Some(&k));
        }
    }

    #[test]
    fn sample_visits_distinct_entries_up_to_count() {
        let mut rng = rand::rngs::mock::StepRng::new(7, 0x9E37_79B9_7F4A_7C15);
        let mut d: Dict<u32, u32> = Dict::new();
        assert_eq!(d.sample(5, &mut rng, |_, _| unreachable!()), 0);
        for i in 0..1000 {
            d.insert(i, i);
        }
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2000 {
            let mut got = Vec::new();
            let n = d.sample(5, &mut rng, |k, _| got.push(*k));
            assert_eq!((n, got.len()), (5, 5));
            let distinct: std::collections::HashSet<_> = got.iter().collect();
            assert_eq!(distinct.len(), 5, "one walk never repeats an entry");
            seen.extend(got);
        }
        assert!(
            seen.len() > 900,
            "walks start everywhere: {} seen",
            seen.len()
        );
        // Mid-rehash (shrinking to a sparse table) and small tables still answer.
        for i in 3..1000 {
            d.remove(&i);
        }
        d.shrink_if_needed();
        // A sparse walk may come back empty-handed (as Redis's does); repeated walks find all.
        // Their starts come from a seeded random source here: the step sequence above revisits
        // few start buckets of a small table, and where the keys land depends on the table's
        // random hash seed, so with it some layouts were never reached (a CI failure).
        let mut rng = {
            use rand::SeedableRng;
            rand::rngs::StdRng::seed_from_u64(17)
        };
        let mut got = std::collections::BTreeSet::new();
        for _ in 0..1000 {
            assert!(
                d.sample(10, &mut rng, |k, _| {
                    got.insert(*k);
                }) <= 3
            );
        }
        assert_eq!(got.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
    }
}
#[cfg(test)]
mod shrink_during_load {
    use super::*;
    #[test]
    fn inserts_while_shrinking_find_no_phantom_duplicates() {
        let mut d: Dict<u64, u64> = Dict::new();
        d.expand(32768);
        for k in 0..20_000u64 {
            if k % 1024 == 0 {
                d.shrink_if_needed();
                d.rehash(100);
            }
            assert!(d.insert(k, k).is_none(), "phantom duplicate at {k}");
        }
        assert_eq!(d.len(), 20_000);
    }
}
