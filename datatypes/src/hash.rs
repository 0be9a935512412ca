//! Hash values (field → value) in Redis's two encodings: a [`Listpack`] of alternating fields and
//! values while the hash is small (at most `hash-max-listpack-entries` fields, none of the
//! strings written longer than `hash-max-listpack-value` bytes), a [`Dict`] beyond. OBJECT
//! ENCODING reports `listpack` or `hashtable`.
//!
//! Most hashes in real workloads are small (a session, a user record, a lock), and a listpack
//! holds one with two bytes of framing per string in a single allocation, where a table pays an
//! entry allocation and two strings per field. Lookups in the packed form are linear, which the
//! size limit keeps cheap; past it the table gives O(1) access.
//!
//! The conversion rules are Redis 7.0's, because OBJECT ENCODING and memory use make them
//! visible:
//! - before a write, if any field or value it writes is longer than `max_value`, the hash
//!   converts (Redis's `hashTypeTryConversion`; HSETNX only checks when it really writes);
//! - after a field is added, if the hash has more than `max_entries` fields, it converts;
//! - the conversion is one-way: deleting fields, or raising the limits, never packs a table again.
//!
//! Writes to the packed form edit its buffer in place: a multi-field HSET or HDEL takes the bytes
//! out of the listpack, edits them with the listpack codec (memmoves, at most one growth and one
//! shrink), and puts them back — not one rebuild per field. A value replaced by one of the same
//! encoded size costs no allocation at all.
//!
//! Iteration order is the listpack's (insertion order) or the table's bucket order; HSCAN of a
//! packed hash returns everything at once with cursor 0, as Redis does for its compact encodings,
//! and uses the dict's reverse-binary cursor for a table.
//!
//! Field TTLs (hash field expiration, Redis 7.4+) are kept only by hashes that were given one:
//! the first TTL wraps the hash in a [`Volatile`], a body in either form plus a
//! [`DeadlineIndex`] of its fields' deadlines, so a plain hash pays nothing for the feature. The
//! wrapping is one-way, as Redis's `listpackex` encoding is (OBJECT ENCODING stays `listpackex`
//! once every TTL is gone). A packed body keeps the order Redis's `listpackex` keeps, which
//! HGETALL shows: the fields with a TTL first, by deadline (a tie before the fields that had it
//! first), then the others; a field that gains a TTL moves to its place, a field that loses one
//! moves to the end. This type keeps deadlines only: deciding that a field has expired (and
//! removing it) is the caller's, which knows the time.

use std::collections::HashSet;
use std::ops::Range;

use rand::Rng;

use crate::deadline_index::DeadlineIndex;
use crate::dict::{self, Dict};
use crate::listpack::{self, encode_entry, entry_at, entry_size, replace_entry, Listpack, HEADER};
use crate::small_bytes::SmallBytes;

/// The thresholds of the packed form (`hash-max-listpack-entries`, `hash-max-listpack-value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most fields a packed hash may hold.
    pub max_entries: usize,
    /// Longest field or value, in bytes, a packed hash may be written.
    pub max_value: usize,
}

impl Default for Limits {
    /// Redis 7.0's defaults.
    fn default() -> Self {
        Limits {
            max_entries: 512,
            max_value: 64,
        }
    }
}

/// The table form.
pub type Table = Dict<SmallBytes, SmallBytes>;

/// A hash value.
#[derive(Clone, Debug)]
pub enum HashValue {
    /// Fields and values alternating: `f1 v1 f2 v2 …`, in insertion order.
    Packed(Listpack),
    /// A table, or a hash given field TTLs (see the module documentation). Both live behind one
    /// box so that a hash stays two words (a third variant would cost every value a word more).
    Boxed(Box<Boxed>),
}

/// What a [`HashValue::Boxed`] holds.
#[derive(Clone, Debug)]
pub enum Boxed {
    Table(Table),
    Volatile(Volatile),
}

/// A hash's form, seen through its box: what callers match on.
pub enum View<'a> {
    Packed(&'a Listpack),
    Table(&'a Table),
    Volatile(&'a Volatile),
}

/// [`View`] for writing.
enum ViewMut<'a> {
    Packed(&'a mut Listpack),
    Table(&'a mut Table),
    Volatile(&'a mut Volatile),
}

/// A hash with field TTLs: its fields and values, and the deadlines of those that have one.
#[derive(Clone, Debug)]
pub struct Volatile {
    /// `Packed` or `Table`, never `Volatile`.
    pub body: HashValue,
    /// Field → deadline (ms since the epoch), for the fields that have a TTL.
    pub ttls: DeadlineIndex,
}

/// Moves the pair of `field` (present) in a packed buffer to just before the first other pair
/// whose field `goes_after` accepts, or to the end.
fn packed_move(lp: &mut Listpack, field: &[u8], goes_after: impl Fn(&[u8]) -> bool) {
    let mut raw = std::mem::take(lp).into_raw();
    let slot = find_packed(&raw, field).expect("the field is there");
    let pair: Vec<u8> = raw.drain(slot.pair_start..slot.value_entry.end).collect();
    let mut at = raw.len();
    let mut pos = HEADER;
    while pos < raw.len() {
        let (name, value_at) = entry_at(&raw, pos);
        if goes_after(&raw[name]) {
            at = pos;
            break;
        }
        let (_, next) = entry_at(&raw, value_at);
        pos = next;
    }
    raw.splice(at..at, pair);
    *lp = Listpack::from_raw(raw);
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Packed(Listpack::new())
    }
}

/// Where a field's pair sits in a packed buffer.
struct Slot {
    /// Offset of the field entry (the pair starts here).
    pair_start: usize,
    /// The whole value entry (the pair ends at its end).
    value_entry: Range<usize>,
    /// The value's bytes.
    value: Range<usize>,
}

/// Finds `field` among the pairs of a packed buffer (raw listpack bytes, possibly empty).
fn find_packed(buf: &[u8], field: &[u8]) -> Option<Slot> {
    if buf.is_empty() {
        return None;
    }
    let mut pos = HEADER;
    while pos < buf.len() {
        let (name, value_at) = entry_at(buf, pos);
        let (value, next) = entry_at(buf, value_at);
        if buf[name] == *field {
            return Some(Slot {
                pair_start: pos,
                value_entry: value_at..next,
                value,
            });
        }
        pos = next;
    }
    None
}

fn raw_count(raw: &[u8]) -> usize {
    if raw.len() < HEADER {
        0
    } else {
        u32::from_le_bytes(raw[..HEADER].try_into().expect("4 bytes")) as usize
    }
}

fn set_raw_count(raw: &mut [u8], entries: usize) {
    raw[..HEADER].copy_from_slice(&(entries as u32).to_le_bytes());
}

/// The pairs of a packed buffer.
fn raw_pairs(raw: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut pos = if raw.is_empty() { 0 } else { HEADER };
    std::iter::from_fn(move || {
        if pos >= raw.len() {
            return None;
        }
        let (name, value_at) = entry_at(raw, pos);
        let (value, next) = entry_at(raw, value_at);
        pos = next;
        Some((&raw[name], &raw[value]))
    })
}

/// A table holding the pairs of a packed buffer, sized for them up front.
fn table_from_raw(raw: &[u8]) -> Table {
    let mut table = Table::new();
    table.expand(raw_count(raw) / 2);
    for (field, value) in raw_pairs(raw) {
        table.insert_new(SmallBytes::new(field), SmallBytes::new(value));
    }
    table
}

/// Sets a field of a table; true if it was added. The field is copied only when it is new.
fn table_set(table: &mut Table, field: &[u8], value: &[u8]) -> bool {
    match table.get_mut(field) {
        Some(old) => {
            *old = SmallBytes::new(value);
            false
        }
        None => {
            table.insert_new(SmallBytes::new(field), SmallBytes::new(value));
            true
        }
    }
}

/// Sets a field of a packed buffer (raw listpack bytes with a header); true if it was added.
/// `exact` reserves only what this write needs (a lone write), otherwise growth is amortised.
fn packed_set(raw: &mut Vec<u8>, field: &[u8], value: &[u8], exact: bool) -> bool {
    let reserve = |raw: &mut Vec<u8>, more: usize| {
        if exact {
            raw.reserve_exact(more);
        } else {
            raw.reserve(more);
        }
    };
    match find_packed(raw, field) {
        Some(slot) => {
            reserve(
                raw,
                entry_size(value).saturating_sub(slot.value_entry.len()),
            );
            replace_entry(raw, slot.value_entry, value);
            false
        }
        None => {
            reserve(raw, entry_size(field) + entry_size(value));
            encode_entry(raw, field);
            encode_entry(raw, value);
            let entries = raw_count(raw) + 2;
            set_raw_count(raw, entries);
            true
        }
    }
}

impl HashValue {
    /// Where the value's first heap block starts (or the value itself, when it has none): what
    /// a pipeline's prefetch asks the CPU for before the command that reads it runs.
    #[inline]
    pub fn heap_address(&self) -> *const u8 {
        match self {
            HashValue::Packed(pack) => pack.heap_address(),
            HashValue::Boxed(boxed) => (&**boxed as *const Boxed).cast(),
        }
    }

    pub fn new() -> Self {
        Self::default()
    }

    fn table(table: Table) -> Self {
        HashValue::Boxed(Box::new(Boxed::Table(table)))
    }

    /// The form of the hash, for matching on.
    pub fn view(&self) -> View<'_> {
        match self {
            HashValue::Packed(lp) => View::Packed(lp),
            HashValue::Boxed(b) => match &**b {
                Boxed::Table(d) => View::Table(d),
                Boxed::Volatile(v) => View::Volatile(v),
            },
        }
    }

    fn view_mut(&mut self) -> ViewMut<'_> {
        match self {
            HashValue::Packed(lp) => ViewMut::Packed(lp),
            HashValue::Boxed(b) => match &mut **b {
                Boxed::Table(d) => ViewMut::Table(d),
                Boxed::Volatile(v) => ViewMut::Volatile(v),
            },
        }
    }

    fn volatile_mut(&mut self) -> Option<&mut Volatile> {
        match self.view_mut() {
            ViewMut::Volatile(v) => Some(v),
            _ => None,
        }
    }

    /// A hash holding `pairs` (alternating fields and values; a repeated field keeps its last
    /// value), encoded as writing them one by one into an empty hash would leave it.
    pub fn from_pairs<T: AsRef<[u8]>>(pairs: &[T], limits: Limits) -> Self {
        let mut hash = HashValue::new();
        hash.set_pairs(pairs, limits);
        hash
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match self.view() {
            View::Packed(lp) => lp.len() / 2,
            View::Table(d) => d.len(),
            View::Volatile(v) => v.body.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// OBJECT ENCODING's name for the current form.
    pub fn encoding_name(&self) -> &'static str {
        match self.view() {
            View::Packed(_) => "listpack",
            View::Table(_) => "hashtable",
            View::Volatile(v) if v.body.is_packed() => "listpackex",
            View::Volatile(_) => "hashtable",
        }
    }

    pub fn is_packed(&self) -> bool {
        match self.view() {
            View::Packed(_) => true,
            View::Table(_) => false,
            View::Volatile(v) => v.body.is_packed(),
        }
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self.view() {
            View::Packed(lp) => {
                let buf = lp.as_bytes();
                find_packed(buf, field).map(|slot| &buf[slot.value])
            }
            View::Table(d) => d.get(field).map(SmallBytes::as_slice),
            View::Volatile(v) => v.body.get(field),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts to the table form (no-op if already there). One-way.
    pub fn convert_to_table(&mut self) {
        match self.view_mut() {
            ViewMut::Packed(lp) => {
                let table = table_from_raw(lp.as_bytes());
                *self = HashValue::table(table);
            }
            ViewMut::Table(_) => {}
            ViewMut::Volatile(v) => v.body.convert_to_table(),
        }
    }

    /// Sets one field; true if it was added (false: an existing field's value was replaced).
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: Limits) -> bool {
        self.set_pairs(&[field, value], limits) == 1
    }

    /// Sets every pair of `pairs` (alternating fields and values), in order, converting as Redis
    /// does (see the module documentation). Returns how many fields were added.
    pub fn set_pairs<T: AsRef<[u8]>>(&mut self, pairs: &[T], limits: Limits) -> usize {
        debug_assert!(pairs.len().is_multiple_of(2), "fields and values alternate");
        if let Some(v) = self.volatile_mut() {
            // Writing a field's value ends its TTL (HSET, HSETNX): it moves to the end, before
            // the next pair is written (a new field after it lands behind it).
            let mut added = 0;
            for pair in pairs.chunks_exact(2) {
                let field = pair[0].as_ref();
                added += v.body.set_pairs(pair, limits);
                if v.ttls.remove(field).is_some() {
                    if let HashValue::Packed(lp) = &mut v.body {
                        packed_move(lp, field, |_| false);
                    }
                }
            }
            return added;
        }
        if self.is_packed() && pairs.iter().any(|a| a.as_ref().len() > limits.max_value) {
            self.convert_to_table();
        }
        let lp = match self.view_mut() {
            ViewMut::Table(d) => {
                return pairs
                    .chunks_exact(2)
                    .filter(|p| table_set(d, p[0].as_ref(), p[1].as_ref()))
                    .count();
            }
            ViewMut::Packed(lp) => lp,
            ViewMut::Volatile(_) => unreachable!("handled above"),
        };
        let mut raw = std::mem::take(lp).into_raw();
        let lone = pairs.len() == 2;
        let mut fields = raw_count(&raw) / 2;
        // One reservation for the whole command when every pair could be new without passing
        // the limit: exact when they are (a new key written whole), and a lone write into a new
        // hash is one allocation. A lone write into an existing hash reserves what it needs
        // once it knows whether the field exists.
        let fits = fields + pairs.len() / 2 <= limits.max_entries;
        let all = || -> usize { pairs.iter().map(|a| entry_size(a.as_ref())).sum() };
        if raw.is_empty() {
            raw.reserve_exact(HEADER + if fits { all() } else { 0 });
            raw.extend_from_slice(&[0; HEADER]);
        } else if fits && !lone {
            raw.reserve_exact(all());
        }
        let mut added = 0;
        let mut rest = pairs.chunks_exact(2);
        for pair in rest.by_ref() {
            if packed_set(&mut raw, pair[0].as_ref(), pair[1].as_ref(), lone) {
                added += 1;
                fields += 1;
                if fields > limits.max_entries {
                    // Past the limit: the rest of the command writes to the table.
                    let mut table = table_from_raw(&raw);
                    added += rest
                        .filter(|p| table_set(&mut table, p[0].as_ref(), p[1].as_ref()))
                        .count();
                    *self = HashValue::table(table);
                    return added;
                }
            }
        }
        *lp = Listpack::from_raw(raw);
        added
    }

    /// Sets `field` to the value `make` computes from its current one (None if absent), with a
    /// single lookup (HINCRBY, HINCRBYFLOAT). If `make` fails, nothing changes. Converts as a
    /// write of that field and value does.
    pub fn upsert<V: AsRef<[u8]>, E>(
        &mut self,
        field: &[u8],
        limits: Limits,
        make: impl FnOnce(Option<&[u8]>) -> Result<V, E>,
    ) -> Result<V, E> {
        let lp = match self.view_mut() {
            // The field keeps its TTL and its place (HINCRBY).
            ViewMut::Volatile(v) => return v.body.upsert(field, limits, make),
            ViewMut::Table(d) => {
                if let Some(old) = d.get_mut(field) {
                    let value = make(Some(old))?;
                    *old = SmallBytes::new(value.as_ref());
                    return Ok(value);
                }
                let value = make(None)?;
                d.insert_new(SmallBytes::new(field), SmallBytes::new(value.as_ref()));
                return Ok(value);
            }
            ViewMut::Packed(lp) => lp,
        };
        let slot = find_packed(lp.as_bytes(), field);
        let value = make(slot.as_ref().map(|s| &lp.as_bytes()[s.value.clone()]))?;
        let new = value.as_ref();
        let fits = field.len() <= limits.max_value && new.len() <= limits.max_value;
        let grows = slot.is_none() && self.len() + 1 > limits.max_entries;
        if !fits || grows {
            self.convert_to_table();
            if let ViewMut::Table(d) = self.view_mut() {
                table_set(d, field, new);
            }
            return Ok(value);
        }
        let HashValue::Packed(lp) = self else {
            unreachable!("still packed")
        };
        let mut raw = std::mem::take(lp).into_raw();
        match slot {
            Some(slot) => {
                raw.reserve_exact(entry_size(new).saturating_sub(slot.value_entry.len()));
                replace_entry(&mut raw, slot.value_entry, new);
            }
            None => {
                let header = if raw.is_empty() { HEADER } else { 0 };
                raw.reserve_exact(header + entry_size(field) + entry_size(new));
                raw.resize(raw.len() + header, 0);
                encode_entry(&mut raw, field);
                encode_entry(&mut raw, new);
                let entries = raw_count(&raw) + 2;
                set_raw_count(&mut raw, entries);
            }
        }
        *lp = Listpack::from_raw(raw);
        Ok(value)
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        self.remove_fields(&[field]) == 1
    }

    /// Removes every field of `fields` present; returns how many were. A table is shrunk when
    /// mostly empty, as Redis resizes after each delete; a packed hash stays packed.
    pub fn remove_fields<T: AsRef<[u8]>>(&mut self, fields: &[T]) -> usize {
        match self.view_mut() {
            ViewMut::Volatile(v) => {
                for field in fields {
                    v.ttls.remove(field.as_ref());
                }
                v.body.remove_fields(fields)
            }
            ViewMut::Table(d) => {
                let mut removed = 0;
                for field in fields {
                    if d.remove(field.as_ref()).is_some() {
                        removed += 1;
                        d.shrink_if_needed();
                    }
                }
                removed
            }
            ViewMut::Packed(lp) => {
                if lp.is_empty() {
                    return 0;
                }
                let mut raw = std::mem::take(lp).into_raw();
                let mut removed = 0;
                for field in fields {
                    if let Some(slot) = find_packed(&raw, field.as_ref()) {
                        raw.drain(slot.pair_start..slot.value_entry.end);
                        removed += 1;
                    }
                }
                if removed > 0 {
                    let entries = raw_count(&raw) - 2 * removed;
                    set_raw_count(&mut raw, entries);
                }
                *lp = Listpack::from_raw(raw);
                removed
            }
        }
    }

    /// The pairs, in the encoding's order.
    pub fn iter(&self) -> Iter<'_> {
        match self.view() {
            View::Packed(lp) => Iter::Packed(lp.iter()),
            View::Table(d) => Iter::Table(d.iter()),
            View::Volatile(v) => v.body.iter(),
        }
    }

    /// A pair chosen uniformly (on a table, as uniformly as [`Dict::random_entry`]).
    pub fn random_pair(&self, rng: &mut impl Rng) -> Option<(&[u8], &[u8])> {
        match self.view() {
            View::Packed(lp) => {
                if lp.is_empty() {
                    return None;
                }
                let index = rng.gen_range(0..self.len());
                raw_pairs(lp.as_bytes()).nth(index)
            }
            View::Table(d) => d
                .fair_random_entry(rng)
                .map(|(k, v)| (k.as_slice(), v.as_slice())),
            View::Volatile(v) => v.body.random_pair(rng),
        }
    }

    /// Calls `emit` `count` times with a pair chosen independently each time (repeats
    /// possible), in random order: HRANDFIELD with a negative count. A packed hash is indexed
    /// once so that each pick costs O(1). Does nothing on an empty hash.
    pub fn sample_with_repeats(
        &self,
        count: u64,
        rng: &mut impl Rng,
        mut emit: impl FnMut(&[u8], &[u8]),
    ) {
        if self.is_empty() {
            return;
        }
        match self.view() {
            View::Volatile(v) => v.body.sample_with_repeats(count, rng, emit),
            View::Packed(lp) if count > 1 => {
                let index: Vec<(&[u8], &[u8])> = raw_pairs(lp.as_bytes()).collect();
                for _ in 0..count {
                    let (field, value) = index[rng.gen_range(0..index.len())];
                    emit(field, value);
                }
            }
            _ => {
                for _ in 0..count {
                    let (field, value) = self.random_pair(rng).expect("not empty");
                    emit(field, value);
                }
            }
        }
    }

    /// Calls `emit` with `count` distinct pairs chosen at random, `count` being less than the
    /// hash's size: HRANDFIELD with a positive count. A packed hash is sampled in one pass and
    /// the pairs come in listpack order; a table is either thinned out from a full list (when
    /// most of it is wanted) or sampled with a set of fields already picked.
    pub fn sample_distinct(
        &self,
        count: usize,
        rng: &mut impl Rng,
        mut emit: impl FnMut(&[u8], &[u8]),
    ) {
        let len = self.len();
        let count = count.min(len);
        match self.view() {
            View::Volatile(v) => v.body.sample_distinct(count, rng, emit),
            View::Packed(lp) => {
                // Selection sampling: each pair is taken with probability needed / left.
                let mut needed = count;
                let mut left = len;
                for (field, value) in raw_pairs(lp.as_bytes()) {
                    if needed == 0 {
                        break;
                    }
                    if rng.gen_range(0..left) < needed {
                        emit(field, value);
                        needed -= 1;
                    }
                    left -= 1;
                }
            }
            View::Table(d) if count.saturating_mul(3) > len => {
                let mut all: Vec<(&[u8], &[u8])> = d
                    .iter()
                    .map(|(k, v)| (k.as_slice(), v.as_slice()))
                    .collect();
                while all.len() > count {
                    let victim = rng.gen_range(0..all.len());
                    all.swap_remove(victim);
                }
                for (field, value) in all {
                    emit(field, value);
                }
            }
            View::Table(d) => {
                let mut picked: HashSet<&[u8], ahash::RandomState> =
                    HashSet::with_capacity_and_hasher(count, ahash::RandomState::new());
                while picked.len() < count {
                    let (field, value) = d.fair_random_entry(rng).expect("not empty");
                    if picked.insert(field.as_slice()) {
                        emit(field, value);
                    }
                }
            }
        }
    }

    /// One HSCAN step from `cursor`: a table visits the bucket(s) the cursor designates and
    /// returns the next cursor (0 at the end); a packed hash visits everything and returns 0.
    pub fn scan<'a>(&'a self, cursor: u64, mut visit: impl FnMut(&'a [u8], &'a [u8])) -> u64 {
        match self.view() {
            View::Packed(lp) => {
                for (field, value) in raw_pairs(lp.as_bytes()) {
                    visit(field, value);
                }
                0
            }
            View::Table(d) => d.scan(cursor, |k, v| visit(k, v)),
            View::Volatile(v) => v.body.scan(cursor, visit),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Field TTLs
    // -----------------------------------------------------------------------------------------

    /// The field deadlines, if this hash was ever given one.
    pub fn ttls(&self) -> Option<&DeadlineIndex> {
        match self.view() {
            View::Volatile(v) => Some(&v.ttls),
            _ => None,
        }
    }

    /// The deadline of `field` (ms since the epoch), if it has one.
    pub fn ttl(&self, field: &[u8]) -> Option<i64> {
        self.ttls().and_then(|t| t.get(field))
    }

    /// True if `field` has a deadline that has passed at `now` (it is still stored).
    pub fn is_expired(&self, field: &[u8], now: i64) -> bool {
        self.ttls().is_some_and(|t| t.is_due(field, now))
    }

    /// The earliest field deadline.
    pub fn min_deadline(&self) -> Option<i64> {
        self.ttls().and_then(|t| t.first()).map(|(d, _)| d)
    }

    /// The number of fields not expired at `now` (HLEN counts them all, stored as they are).
    pub fn live_len(&self, now: i64) -> usize {
        self.len() - self.ttls().map_or(0, |t| t.count_due(now))
    }

    /// The fields expired at `now`, earliest deadline first.
    pub fn expired_fields(&self, now: i64) -> Vec<SmallBytes> {
        self.ttls()
            .map_or_else(Vec::new, |t| t.due(now).map(SmallBytes::new).collect())
    }

    /// Removes `field` if it has expired at `now`; true if it did.
    pub fn remove_expired(&mut self, field: &[u8], now: i64) -> bool {
        self.is_expired(field, now) && self.remove(field)
    }

    /// Gives `field`, which must be present, the deadline `deadline` (ms since the epoch). A
    /// packed body moves the pair to its place in deadline order.
    pub fn set_ttl(&mut self, field: &[u8], deadline: i64) {
        debug_assert!(self.contains(field), "only a present field gets a TTL");
        if self.ttls().is_none() {
            let body = std::mem::take(self);
            *self = HashValue::Boxed(Box::new(Boxed::Volatile(Volatile {
                body,
                ttls: DeadlineIndex::new(),
            })));
        }
        let Some(v) = self.volatile_mut() else {
            unreachable!("wrapped above")
        };
        v.ttls.set(field, deadline);
        if let HashValue::Packed(lp) = &mut v.body {
            let ttls = &v.ttls;
            packed_move(lp, field, |other| {
                other != field && ttls.get(other).is_none_or(|d| d >= deadline)
            });
        }
    }

    /// Removes the TTL of `field`; true if it had one. A packed body moves the pair to the end.
    pub fn persist(&mut self, field: &[u8]) -> bool {
        let Some(v) = self.volatile_mut() else {
            return false;
        };
        if v.ttls.remove(field).is_none() {
            return false;
        }
        if let HashValue::Packed(lp) = &mut v.body {
            packed_move(lp, field, |_| false);
        }
        true
    }
}

/// Iterator over a hash's pairs.
pub enum Iter<'a> {
    Packed(listpack::Iter<'a>),
    Table(dict::Iter<'a, SmallBytes, SmallBytes>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed(it) => {
                let field = it.next()?;
                let value = it.next()?;
                Some((field, value))
            }
            Iter::Table(it) => it.next().map(|(k, v)| (k.as_slice(), v.as_slice())),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Iter::Packed(it) => it.len() / 2,
            Iter::Table(it) => it.size_hint().0,
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn contents(h: &HashValue) -> HashMap<Vec<u8>, Vec<u8>> {
        let map: HashMap<Vec<u8>, Vec<u8>> =
            h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
        assert_eq!(map.len(), h.len(), "no field twice");
        map
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(Vec<(Vec<u8>, Vec<u8>)>),
        Remove(Vec<Vec<u8>>),
        Get(Vec<u8>),
        /// Append a suffix to the field's value (or set it), through `upsert`.
        Upsert(Vec<u8>, Vec<u8>),
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(0u8), Just(b'\r')], 0..3),
            1 => proptest::collection::vec(any::<u8>(), 0..20),
            1 => proptest::collection::vec(any::<u8>(), 120..140),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => proptest::collection::vec((bytes(), bytes()), 1..5).prop_map(Op::Set),
            2 => proptest::collection::vec(bytes(), 1..4).prop_map(Op::Remove),
            1 => bytes().prop_map(Op::Get),
            2 => (bytes(), bytes()).prop_map(|(f, v)| Op::Upsert(f, v)),
        ]
    }

    fn flat(pairs: &[(Vec<u8>, Vec<u8>)]) -> Vec<&[u8]> {
        pairs
            .iter()
            .flat_map(|(f, v)| [f.as_slice(), v.as_slice()])
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// A hash behaves like a HashMap, converts exactly when a write exceeds a limit, never
        /// converts back, and a packed hash and a table given the same operations agree.
        #[test]
        fn behaves_like_a_hashmap(ops in proptest::collection::vec(op(), 1..40),
                                  max_entries in 0usize..10, max_value in 0usize..150) {
            let limits = Limits { max_entries, max_value };
            let mut hash = HashValue::new();
            let mut table = HashValue::new();
            table.convert_to_table();
            let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            let mut converted = false;
            for op in ops {
                match op {
                    Op::Set(pairs) => {
                        let args = flat(&pairs);
                        if args.iter().any(|a| a.len() > max_value) {
                            converted = true;
                        }
                        let mut added = 0;
                        for (f, v) in &pairs {
                            if model.insert(f.clone(), v.clone()).is_none() {
                                added += 1;
                                if model.len() > max_entries {
                                    converted = true;
                                }
                            }
                        }
                        prop_assert_eq!(hash.set_pairs(&args, limits), added);
                        prop_assert_eq!(table.set_pairs(&args, limits), added);
                    }
                    Op::Remove(fields) => {
                        let mut removed = 0;
                        for f in &fields {
                            if model.remove(f).is_some() {
                                removed += 1;
                            }
                        }
                        prop_assert_eq!(hash.remove_fields(&fields), removed);
                        prop_assert_eq!(table.remove_fields(&fields), removed);
                    }
                    Op::Upsert(f, suffix) => {
                        let expected = [model.get(&f).map_or(&[][..], |v| v.as_slice()), &suffix].concat();
                        if f.len() > max_value || expected.len() > max_value {
                            converted = true;
                        }
                        if model.insert(f.clone(), expected.clone()).is_none() && model.len() > max_entries {
                            converted = true;
                        }
                        let append = |old: Option<&[u8]>| -> Result<Vec<u8>, ()> {
                            Ok([old.unwrap_or_default(), &suffix].concat())
                        };
                        prop_assert_eq!(hash.upsert(&f, limits, append), Ok(expected.clone()));
                        prop_assert_eq!(table.upsert(&f, limits, append), Ok(expected));
                        // A failing computation changes nothing.
                        prop_assert_eq!(hash.upsert(&f, limits, |_| Err::<Vec<u8>, _>(7)), Err(7));
                    }
                    Op::Get(f) => {
                        prop_assert_eq!(hash.get(&f), model.get(&f).map(|v| v.as_slice()));
                        prop_assert_eq!(table.get(&f), model.get(&f).map(|v| v.as_slice()));
                        prop_assert_eq!(hash.contains(&f), model.contains_key(&f));
                    }
                }
                prop_assert_eq!(hash.len(), model.len());
                prop_assert_eq!(&contents(&hash), &model);
                prop_assert_eq!(&contents(&table), &model);
                prop_assert_eq!(hash.is_packed(), !converted);
                prop_assert!(!table.is_packed());
                if let HashValue::Packed(lp) = &hash {
                    let expected = if model.is_empty() {
                        0
                    } else {
                        HEADER + model.iter().map(|(f, v)| entry_size(f) + entry_size(v)).sum::<usize>()
                    };
                    prop_assert_eq!(lp.byte_size(), expected, "exactly sized");
                }
            }
        }

        /// Packed hashes keep insertion order, and a whole-hash HSCAN returns every pair with
        /// cursor 0; a table's cursor walk returns every pair too.
        #[test]
        fn order_and_scan(fields in proptest::collection::vec(bytes(), 1..30)) {
            let mut hash = HashValue::new();
            let mut order: Vec<Vec<u8>> = Vec::new();
            for f in &fields {
                if hash.set(f, b"v", Limits { max_entries: 1000, max_value: 1000 }) {
                    order.push(f.clone());
                }
            }
            let keys: Vec<Vec<u8>> = hash.iter().map(|(f, _)| f.to_vec()).collect();
            prop_assert_eq!(&keys, &order);
            let mut seen = Vec::new();
            prop_assert_eq!(hash.scan(12345, |f, _| seen.push(f.to_vec())), 0);
            prop_assert_eq!(&seen, &order);
            hash.convert_to_table();
            let mut seen = Vec::new();
            let mut cursor = 0;
            loop {
                cursor = hash.scan(cursor, |f, _| seen.push(f.to_vec()));
                if cursor == 0 { break; }
            }
            seen.sort();
            let mut expected = order.clone();
            expected.sort();
            prop_assert_eq!(seen, expected);
        }

        /// Sampling returns pairs of the hash; distinct sampling returns exactly `count`
        /// distinct pairs, in listpack order for a packed hash.
        #[test]
        fn sampling(n in 1usize..60, count in 0usize..70, seed in any::<u64>(), packed in any::<bool>()) {
            use rand::SeedableRng;
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let pairs: Vec<Vec<u8>> = (0..n).flat_map(|i| [format!("f{i}").into_bytes(), format!("v{i}").into_bytes()]).collect();
            let mut hash = HashValue::from_pairs(&pairs, Limits { max_entries: 100, max_value: 64 });
            if !packed {
                hash.convert_to_table();
            }
            let model = contents(&hash);
            let mut got = Vec::new();
            hash.sample_with_repeats(count as u64, &mut rng, |f, v| got.push((f.to_vec(), v.to_vec())));
            prop_assert_eq!(got.len(), count);
            for (f, v) in &got {
                prop_assert_eq!(model.get(f), Some(v));
            }
            let want = count.min(n);
            let mut got = Vec::new();
            hash.sample_distinct(want, &mut rng, |f, v| got.push((f.to_vec(), v.to_vec())));
            prop_assert_eq!(got.len(), want);
            let distinct: HashSet<&Vec<u8>> = got.iter().map(|(f, _)| f).collect();
            prop_assert_eq!(distinct.len(), want);
            for (f, v) in &got {
                prop_assert_eq!(model.get(f), Some(v));
            }
            if packed {
                let positions: Vec<usize> = got.iter().map(|(f, _)| hash.iter().position(|(g, _)| g == f.as_slice()).unwrap()).collect();
                prop_assert!(positions.windows(2).all(|w| w[0] < w[1]), "listpack order");
            }
        }
    }

    #[derive(Debug, Clone)]
    enum TtlOp {
        /// HSET of these fields (a small alphabet, so that fields repeat).
        Set(Vec<u8>),
        SetTtl(u8, i64),
        Persist(u8),
        Remove(u8),
        /// HINCRBY-like: the value changes, the deadline and the place stay.
        Upsert(u8),
    }

    fn ttl_op() -> impl Strategy<Value = TtlOp> {
        prop_oneof![
            3 => proptest::collection::vec(0u8..8, 1..4).prop_map(TtlOp::Set),
            4 => (0u8..8, 0i64..20).prop_map(|(f, d)| TtlOp::SetTtl(f, d)),
            1 => (0u8..8).prop_map(TtlOp::Persist),
            1 => (0u8..8).prop_map(TtlOp::Remove),
            1 => (0u8..8).prop_map(TtlOp::Upsert),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Field deadlines: a model list in Redis's listpackex order (fields with a deadline
        /// first by deadline, a tie before the older ones, then the others; a field losing its
        /// deadline to a write or HPERSIST moves to the end). A packed hash iterates in exactly
        /// that order; both forms agree with the model on values, deadlines, the earliest
        /// deadline and the fields due at any time.
        #[test]
        fn field_deadlines_follow_the_listpackex_model(ops in proptest::collection::vec(ttl_op(), 1..40),
                                                      max_entries in 2usize..12, now in 0i64..22) {
            let limits = Limits { max_entries, max_value: 64 };
            let mut hash = HashValue::new();
            let mut table = HashValue::new();
            table.convert_to_table();
            let mut model: Vec<(Vec<u8>, Vec<u8>, Option<i64>)> = Vec::new();
            let mut counter = 0u32;
            let name = |f: u8| vec![b'f', b'0' + f];
            for op in ops {
                counter += 1;
                let value = counter.to_string().into_bytes();
                match op {
                    TtlOp::Set(fields) => {
                        let mut pairs = Vec::new();
                        for f in &fields {
                            pairs.push(name(*f));
                            pairs.push(value.clone());
                            match model.iter().position(|(n, _, _)| *n == name(*f)) {
                                Some(i) => {
                                    let (n, _, ttl) = model.remove(i);
                                    if ttl.is_some() {
                                        model.push((n, value.clone(), None));
                                    } else {
                                        model.insert(i, (n, value.clone(), None));
                                    }
                                }
                                None => model.push((name(*f), value.clone(), None)),
                            }
                        }
                        hash.set_pairs(&pairs, limits);
                        table.set_pairs(&pairs, limits);
                    }
                    TtlOp::SetTtl(f, deadline) => {
                        if let Some(i) = model.iter().position(|(n, _, _)| *n == name(f)) {
                            let (n, v, _) = model.remove(i);
                            let at = model
                                .iter()
                                .position(|(_, _, t)| t.is_none_or(|t| t >= deadline))
                                .unwrap_or(model.len());
                            model.insert(at, (n, v, Some(deadline)));
                            hash.set_ttl(&name(f), deadline);
                            table.set_ttl(&name(f), deadline);
                        }
                    }
                    TtlOp::Persist(f) => {
                        let had = match model.iter().position(|(n, _, _)| *n == name(f)) {
                            Some(i) if model[i].2.is_some() => {
                                let (n, v, _) = model.remove(i);
                                model.push((n, v, None));
                                true
                            }
                            _ => false,
                        };
                        prop_assert_eq!(hash.persist(&name(f)), had);
                        prop_assert_eq!(table.persist(&name(f)), had);
                    }
                    TtlOp::Remove(f) => {
                        let had = model.iter().position(|(n, _, _)| *n == name(f)).map(|i| model.remove(i)).is_some();
                        prop_assert_eq!(hash.remove(&name(f)), had);
                        prop_assert_eq!(table.remove(&name(f)), had);
                    }
                    TtlOp::Upsert(f) => {
                        match model.iter_mut().find(|(n, _, _)| *n == name(f)) {
                            Some(entry) => entry.1 = value.clone(),
                            None => model.push((name(f), value.clone(), None)),
                        }
                        let set = |_: Option<&[u8]>| Ok::<_, ()>(value.clone());
                        prop_assert!(hash.upsert(&name(f), limits, set).is_ok());
                        prop_assert!(table.upsert(&name(f), limits, set).is_ok());
                    }
                }
                for h in [&hash, &table] {
                    prop_assert_eq!(h.len(), model.len());
                    for (n, v, t) in &model {
                        prop_assert_eq!(h.get(n), Some(v.as_slice()));
                        prop_assert_eq!(h.ttl(n), *t);
                        prop_assert_eq!(h.is_expired(n, now), t.is_some_and(|t| now > t));
                    }
                    let min = model.iter().filter_map(|(_, _, t)| *t).min();
                    prop_assert_eq!(h.min_deadline(), min);
                    let due = model.iter().filter(|(_, _, t)| t.is_some_and(|t| now > t)).count();
                    prop_assert_eq!(h.expired_fields(now).len(), due);
                    prop_assert_eq!(h.live_len(now), model.len() - due);
                }
                if hash.is_packed() {
                    let order: Vec<Vec<u8>> = hash.iter().map(|(f, _)| f.to_vec()).collect();
                    let expected: Vec<Vec<u8>> = model.iter().map(|(n, _, _)| n.clone()).collect();
                    prop_assert_eq!(order, expected);
                    if hash.ttls().is_some() {
                        prop_assert_eq!(hash.encoding_name(), "listpackex");
                    }
                } else {
                    prop_assert_eq!(hash.encoding_name(), "hashtable");
                }
                prop_assert!(!table.is_packed());
            }
        }
    }

    #[test]
    fn conversions_follow_redis() {
        let limits = Limits {
            max_entries: 2,
            max_value: 4,
        };
        let mut h = HashValue::from_pairs(&[&b"a"[..], b"1", b"b", b"2"], limits);
        assert_eq!(h.encoding_name(), "listpack");
        // Replacing a value does not add a field.
        assert!(!h.set(b"a", b"3", limits));
        assert_eq!(h.encoding_name(), "listpack");
        assert!(h.set(b"c", b"3", limits));
        assert_eq!(h.encoding_name(), "hashtable");
        h.remove_fields(&[&b"a"[..], b"b", b"c"]);
        assert!(h.is_empty());
        assert_eq!(h.encoding_name(), "hashtable", "one-way");
        // A long value converts before it is written, even on a new hash.
        let h = HashValue::from_pairs(&[&b"a"[..], b"12345"], limits);
        assert_eq!(h.encoding_name(), "hashtable");
        let h = HashValue::from_pairs(&[&b"a"[..], b"1234"], limits);
        assert_eq!(h.encoding_name(), "listpack");
        // A field repeated in one write counts once.
        let h = HashValue::from_pairs(&[&b"a"[..], b"1", b"a", b"2", b"a", b"3"], limits);
        assert_eq!(
            (h.encoding_name(), h.get(b"a")),
            ("listpack", Some(&b"3"[..]))
        );
        // Zero entries allowed: every hash is a table.
        let zero = Limits {
            max_entries: 0,
            max_value: 64,
        };
        assert_eq!(
            HashValue::from_pairs(&[&b"a"[..], b"1"], zero).encoding_name(),
            "hashtable"
        );
    }

    #[test]
    fn packed_edits_allocate_exactly() {
        let limits = Limits::default();
        let pairs: Vec<Vec<u8>> = (0..10)
            .flat_map(|i| {
                [
                    format!("field:{i}").into_bytes(),
                    format!("value:{i}").into_bytes(),
                ]
            })
            .collect();
        let h = HashValue::from_pairs(&pairs, limits);
        let HashValue::Packed(lp) = &h else {
            panic!("packed")
        };
        // 10 pairs of 7-byte strings, 2 bytes of framing each, plus the count.
        assert_eq!(lp.byte_size(), 4 + 20 * 9);
        assert_eq!(std::mem::size_of::<HashValue>(), 16);
        let mut h = h;
        let before = h.get(b"field:3").unwrap().as_ptr();
        h.set(b"field:3", b"VALUE:3", limits);
        assert_eq!(
            h.get(b"field:3").unwrap().as_ptr(),
            before,
            "same-size replacement happens in place"
        );
        assert!(h.remove(b"field:0"));
        assert!(!h.remove(b"field:0"));
        assert_eq!(h.len(), 9);
        assert_eq!(h.get(b"field:3"), Some(&b"VALUE:3"[..]));
        assert_eq!(h.iter().next().unwrap().0, b"field:1");
    }
}
