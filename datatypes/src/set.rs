//! Set values in Redis's three encodings: an [`Intset`] while every member is an integer in
//! canonical form and there are at most `set-max-intset-entries` of them; from Redis 7.2 a
//! [`Listpack`](crate::listpack::Listpack), behind a thin pointer, while the set is small
//! (`set-max-listpack-entries` members of at most `set-max-listpack-value` bytes); a [`Dict`]
//! beyond. OBJECT ENCODING reports `intset`, `listpack` or `hashtable`.
//!
//! The rules follow Redis because users can observe them (OBJECT ENCODING, and the order of
//! SMEMBERS, which is ascending for an intset and insertion order for a listpack):
//!
//! - a member is an integer only in the canonical form of Redis's `string2ll` ([`parse_i64`]):
//!   `"01"`, `"-0"`, `"+1"` and `"9223372036854775808"` are strings, and adding one converts the
//!   set;
//! - an intset that grows past its limit becomes a table; an intset given a string becomes a
//!   listpack if the result (and the longest integer already in it) fits the listpack limits,
//!   a table otherwise; a listpack that would pass its limits becomes a table;
//! - [`SetLimits`] carries the limits and which Redis decides: under Redis 7.0's rules
//!   ([`SetLimits::v7_0`]) there are no listpacks and a new set's encoding follows its first
//!   member; from 7.2 a new set is sized for the members the command brings ([`SetValue::create`]);
//! - conversion is one-way: removing the strings or members does not bring the intset back (only
//!   commands that build a new set, like SPOP's rebuild or the *STORE commands, start compact
//!   again — that is their business, not this type's);
//! - removing from the table shrinks it when under 10% full, as Redis does on every removal, so
//!   that random picks (SPOP, SRANDMEMBER) stay O(1) after a set has been mostly emptied.
//!
//! Members travel as [`Member`]: an intset's integer is never turned into text unless it has to
//! be (a reply writes it as a number; a lookup in a table formats it on the stack).

use rand::Rng;

use crate::dict::{self, Dict};
use crate::intset::{self, format_i64, parse_i64, Intset, I64_TEXT_MAX};
use crate::listpack::{self, ThinListpack};
use crate::small_bytes::{SmallBytes, INLINE_CAPACITY};

/// The limits a set converts at, and whose rules decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetLimits {
    /// `set-max-intset-entries`.
    pub max_intset: usize,
    /// `set-max-listpack-entries` (0 under Redis 7.0: no listpacks).
    pub max_listpack_entries: usize,
    /// `set-max-listpack-value`.
    pub max_listpack_value: usize,
    /// Redis 7.2's creation by size hint ([`SetValue::create`], [`SetValue::fit_for`]); 7.0
    /// creates a set from its first member and converts as members arrive.
    pub sized_creation: bool,
}

impl SetLimits {
    /// Redis 7.0's rules: intsets and tables only.
    pub fn v7_0(max_intset: usize) -> Self {
        SetLimits {
            max_intset,
            max_listpack_entries: 0,
            max_listpack_value: 0,
            sized_creation: false,
        }
    }

    /// Redis 7.2's (and later) rules.
    pub fn v7_2(max_intset: usize, max_listpack_entries: usize, max_listpack_value: usize) -> Self {
        SetLimits {
            max_intset,
            max_listpack_entries,
            max_listpack_value,
            sized_creation: true,
        }
    }

    /// The intset limit as Redis applies it (capped at 2^30 entries).
    fn intset_max(&self) -> usize {
        self.max_intset.min(1 << 30)
    }
}

/// A set value. Every encoding sits behind one thin pointer so that a set stays two words: with
/// three encodings an inline 16-byte listpack would have made every [`SetValue`], and so every
/// stored value, a word bigger. The intset is unboxed — its block carries its own length
/// ([`crate::thin_bytes::ThinBytes`]) — which saves a set of integers a whole allocation.
#[derive(Clone, Debug)]
pub enum SetValue {
    Ints(Intset),
    Pack(ThinListpack),
    Table(Box<Dict<SmallBytes, ()>>),
}

/// A member as stored: an intset's integer, or bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Member<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl Member<'_> {
    /// Calls `f` with the member's bytes (an integer formatted on the stack).
    pub fn with_bytes<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Member::Int(n) => f(format_i64(n, &mut [0; I64_TEXT_MAX])),
            Member::Bytes(b) => f(b),
        }
    }

    /// An owned copy.
    pub fn into_owned(self) -> OwnedMember {
        match self {
            Member::Int(n) => OwnedMember::Int(n),
            Member::Bytes(b) => OwnedMember::Bytes(SmallBytes::new(b)),
        }
    }
}

/// A member taken out of a set (SPOP).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OwnedMember {
    Int(i64),
    Bytes(SmallBytes),
}

impl OwnedMember {
    pub fn as_member(&self) -> Member<'_> {
        match self {
            OwnedMember::Int(n) => Member::Int(*n),
            OwnedMember::Bytes(b) => Member::Bytes(b.as_slice()),
        }
    }
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::new()
    }
}

/// Characters of `n` in decimal (Redis's `sdigits10`: the sign counts).
fn text_len(n: i64) -> usize {
    format_i64(n, &mut [0; I64_TEXT_MAX]).len()
}

impl SetValue {
    /// Where the value's first heap block starts (or the value itself, when it has none): what
    /// a pipeline's prefetch asks the CPU for before the command that reads it runs.
    #[inline]
    pub fn heap_address(&self) -> *const u8 {
        match self {
            SetValue::Ints(ints) => ints.heap_address(),
            SetValue::Pack(pack) => pack.heap_address(),
            SetValue::Table(table) => (&**table as *const Dict<SmallBytes, ()>).cast(),
        }
    }

    /// An empty intset: where a set built member by member starts (the first string converts
    /// it, which is what Redis's choice by first member amounts to).
    pub fn new() -> Self {
        SetValue::Ints(Intset::default())
    }

    /// An empty listpack (Redis 7.2 starts some built sets as one).
    pub fn new_pack() -> Self {
        SetValue::Pack(ThinListpack::default())
    }

    /// The set a command creates for `size_hint` members of which `first` is one (Redis's
    /// `setTypeCreate`): from 7.2 an intset if `first` is an integer and the hint fits one,
    /// else a listpack if the hint fits one, else a table sized for the hint; under 7.0's
    /// rules an intset for an integer, a table otherwise.
    pub fn create(first: &[u8], size_hint: usize, limits: &SetLimits) -> Self {
        let integer = parse_i64(first).is_some();
        if !limits.sized_creation {
            return if integer {
                SetValue::new()
            } else {
                SetValue::table_for(0)
            };
        }
        if integer && size_hint <= limits.max_intset {
            SetValue::new()
        } else if size_hint <= limits.max_listpack_entries {
            SetValue::new_pack()
        } else {
            SetValue::table_for(size_hint)
        }
    }

    /// An empty table sized for `capacity` members.
    fn table_for(capacity: usize) -> Self {
        let mut d = Dict::new();
        if capacity > 0 {
            d.expand(capacity);
        }
        SetValue::Table(Box::new(d))
    }

    /// Converts to a table before `size_hint` members arrive when they would pass the current
    /// encoding's limit anyway (Redis 7.2's `setTypeMaybeConvert`; nothing under 7.0's rules).
    pub fn fit_for(&mut self, size_hint: usize, limits: &SetLimits) {
        if !limits.sized_creation {
            return;
        }
        let over = match self {
            SetValue::Pack(_) => size_hint > limits.max_listpack_entries,
            SetValue::Ints(_) => size_hint > limits.max_intset,
            SetValue::Table(_) => false,
        };
        if over {
            self.convert_to_table_sized(size_hint);
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            SetValue::Ints(i) => i.len(),
            SetValue::Pack(p) => p.len(),
            SetValue::Table(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            SetValue::Ints(_) => "intset",
            SetValue::Pack(_) => "listpack",
            SetValue::Table(_) => "hashtable",
        }
    }

    pub fn is_intset(&self) -> bool {
        matches!(self, SetValue::Ints(_))
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        match self {
            SetValue::Ints(ints) => parse_i64(member).is_some_and(|n| ints.contains(n)),
            SetValue::Pack(p) => p.position(member, 1, 0).is_some(),
            SetValue::Table(d) => d.contains_key(member),
        }
    }

    /// Membership of a member of another set.
    pub fn contains_member(&self, member: Member<'_>) -> bool {
        match (self, member) {
            (SetValue::Ints(ints), Member::Int(n)) => ints.contains(n),
            (_, Member::Int(n)) => self.contains(format_i64(n, &mut [0; I64_TEXT_MAX])),
            (_, Member::Bytes(b)) => self.contains(b),
        }
    }

    /// Adds `member`; false if it was there already. Converts as Redis's `setTypeAdd` does
    /// (see the module documentation).
    pub fn insert(&mut self, member: &[u8], limits: &SetLimits) -> bool {
        match self {
            SetValue::Ints(ints) => {
                if let Some(n) = parse_i64(member) {
                    return self.insert_int(n, limits);
                }
                if pack_takes_string_of(ints, member, limits) {
                    self.convert_to_pack();
                } else {
                    let cap = self.len() + 1;
                    self.convert_to_table_sized(cap);
                }
                self.insert(member, limits)
            }
            SetValue::Pack(p) => {
                if p.position(member, 1, 0).is_some() {
                    return false;
                }
                if p.len() < limits.max_listpack_entries
                    && member.len() <= limits.max_listpack_value
                {
                    p.push_back(member);
                    return true;
                }
                let cap = p.len() + 1;
                self.convert_to_table_sized(cap);
                self.insert(member, limits)
            }
            SetValue::Table(d) => {
                if member.len() <= INLINE_CAPACITY {
                    // One hash, no allocation either way.
                    d.insert(SmallBytes::new(member), ()).is_none()
                } else if d.contains_key(member) {
                    false
                } else {
                    d.insert_new(SmallBytes::new(member), ());
                    true
                }
            }
        }
    }

    /// Adds an integer member (see [`SetValue::insert`]).
    pub fn insert_int(&mut self, n: i64, limits: &SetLimits) -> bool {
        match self {
            SetValue::Ints(ints) => {
                if !ints.insert(n) {
                    return false;
                }
                if ints.len() > limits.intset_max() {
                    self.convert_to_table();
                }
                true
            }
            _ => self.insert(format_i64(n, &mut [0; I64_TEXT_MAX]), limits),
        }
    }

    /// Adds a member of another set.
    pub fn insert_member(&mut self, member: Member<'_>, limits: &SetLimits) -> bool {
        match member {
            Member::Int(n) => self.insert_int(n, limits),
            Member::Bytes(b) => self.insert(b, limits),
        }
    }

    /// Removes `member`; false if it was not there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            SetValue::Ints(ints) => parse_i64(member).is_some_and(|n| ints.remove(n)),
            SetValue::Pack(p) => match p.position(member, 1, 0) {
                Some(i) => {
                    p.remove(i);
                    true
                }
                None => false,
            },
            SetValue::Table(d) => {
                let removed = d.remove(member).is_some();
                if removed {
                    d.shrink_if_needed();
                }
                removed
            }
        }
    }

    /// Removes a member of another set.
    pub fn remove_member(&mut self, member: Member<'_>) -> bool {
        match (&mut *self, member) {
            (SetValue::Ints(ints), Member::Int(n)) => ints.remove(n),
            (_, Member::Int(n)) => self.remove(format_i64(n, &mut [0; I64_TEXT_MAX])),
            (_, Member::Bytes(b)) => self.remove(b),
        }
    }

    /// A random member (uniform for an intset or a listpack; a random non-empty bucket, then a
    /// random entry of its chain, for a table), or None when empty.
    pub fn random(&self, rng: &mut impl Rng) -> Option<Member<'_>> {
        match self {
            SetValue::Ints(ints) => ints.random(rng).map(Member::Int),
            SetValue::Pack(p) => {
                if p.is_empty() {
                    return None;
                }
                p.get(rng.gen_range(0..p.len())).map(Member::Bytes)
            }
            SetValue::Table(d) => d
                .fair_random_entry(rng)
                .map(|(k, _)| Member::Bytes(k.as_slice())),
        }
    }

    /// Removes and returns a random member.
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<OwnedMember> {
        match self {
            SetValue::Ints(ints) => ints.pop_random(rng).map(OwnedMember::Int),
            SetValue::Pack(p) => {
                if p.is_empty() {
                    return None;
                }
                let i = rng.gen_range(0..p.len());
                let member = OwnedMember::Bytes(SmallBytes::new(p.get(i)?));
                p.remove(i);
                Some(member)
            }
            SetValue::Table(d) => {
                let (key, ()) = d.pop_fair_random(rng)?;
                d.shrink_if_needed();
                Some(OwnedMember::Bytes(key))
            }
        }
    }

    /// The members: ascending for an intset, insertion order for a listpack, table order
    /// otherwise.
    pub fn iter(&self) -> Iter<'_> {
        match self {
            SetValue::Ints(ints) => Iter::Ints(ints.iter()),
            SetValue::Pack(p) => Iter::Pack(p.iter()),
            SetValue::Table(d) => Iter::Table(d.iter()),
        }
    }

    /// One SSCAN call, as Redis does it: an intset or a listpack is returned whole with cursor
    /// 0 (whatever cursor was given); a table is walked from `cursor` bucket by bucket until
    /// `count` members were collected or `count × 10` more buckets were visited. Returns the
    /// next cursor.
    pub fn scan(&self, cursor: u64, count: u64, mut visit: impl FnMut(Member<'_>)) -> u64 {
        match self {
            SetValue::Ints(_) | SetValue::Pack(_) => {
                self.iter().for_each(visit);
                0
            }
            SetValue::Table(d) => {
                let mut cursor = cursor;
                let mut found = 0u64;
                // Redis keeps this budget in a signed, wrapping counter: a huge COUNT makes it
                // negative and so, in practice, unlimited.
                let mut budget = (count as i64).wrapping_mul(10);
                loop {
                    cursor = d.scan(cursor, |k, _| {
                        found += 1;
                        visit(Member::Bytes(k.as_slice()));
                    });
                    if cursor == 0 || budget == 0 || found >= count {
                        return cursor;
                    }
                    budget = budget.wrapping_sub(1);
                }
            }
        }
    }

    /// Converts an intset or a listpack to a table (sized for its members up front, as Redis
    /// does).
    pub fn convert_to_table(&mut self) {
        let len = self.len();
        self.convert_to_table_sized(len);
    }

    /// Converts to a table sized for `capacity` members, adding the members in the current
    /// encoding's order (Redis's `setTypeConvertAndExpand`).
    pub fn convert_to_table_sized(&mut self, capacity: usize) {
        if matches!(self, SetValue::Table(_)) {
            return;
        }
        let mut d = Dict::new();
        d.expand(capacity.max(self.len()));
        for m in self.iter() {
            m.with_bytes(|b| d.insert_new(SmallBytes::new(b), ()));
        }
        *self = SetValue::Table(Box::new(d));
    }

    /// Converts an intset to a listpack, its integers in ascending order.
    pub fn convert_to_pack(&mut self) {
        if let SetValue::Ints(ints) = self {
            let mut buf = [0; I64_TEXT_MAX];
            let texts: Vec<Vec<u8>> = ints
                .iter()
                .map(|n| format_i64(n, &mut buf).to_vec())
                .collect();
            *self = SetValue::Pack(ThinListpack::from_items(texts.iter().map(Vec::as_slice)));
        }
    }

    /// Makes an intset of a set whose members are all integers, when they fit one (Redis's
    /// `maybeConvertToIntset`, which the *STORE commands apply to their result).
    pub fn compact_integers(&mut self, limits: &SetLimits) {
        if self.is_intset() || self.len() > limits.intset_max() {
            return;
        }
        let mut ints = Intset::new();
        for m in self.iter() {
            let n = match m {
                Member::Int(n) => n,
                Member::Bytes(b) => match parse_i64(b) {
                    Some(n) => n,
                    None => return,
                },
            };
            ints.insert(n);
        }
        *self = SetValue::Ints(ints);
    }

    /// `count` distinct listpack positions chosen uniformly, in ascending order (Redis's
    /// `lpNextRandom` walk: SPOP and SRANDMEMBER with a count answer a listpack in its order).
    pub fn pack_sample(&self, count: usize, rng: &mut impl Rng) -> Vec<usize> {
        let len = self.len();
        let mut picked = rand::seq::index::sample(rng, len, count.min(len)).into_vec();
        picked.sort_unstable();
        picked
    }

    /// Removes the listpack entries at `positions` (ascending); no-op for other encodings.
    pub fn pack_remove_positions(&mut self, positions: &[usize]) {
        if let SetValue::Pack(p) = self {
            let kept: Vec<&[u8]> = p
                .iter()
                .enumerate()
                .filter(|(i, _)| positions.binary_search(i).is_err())
                .map(|(_, e)| e)
                .collect();
            *p = ThinListpack::from_items(kept);
        }
    }

    /// Finishes any incremental rehash of a table (for tests and the periodic tick).
    pub fn rehash_step(&mut self, n: usize) {
        if let SetValue::Table(d) = self {
            d.rehash(n);
        }
    }
}

/// Whether an intset given the string `member` becomes a listpack (rather than a table): the
/// members, the new one and the longest integer's text must fit the listpack limits.
fn pack_takes_string_of(ints: &Intset, member: &[u8], limits: &SetLimits) -> bool {
    let longest = match ints.len() {
        0 => 0,
        n => text_len(ints.get(0)).max(text_len(ints.get(n - 1))),
    };
    ints.len() < limits.max_listpack_entries
        && member.len() <= limits.max_listpack_value
        && longest <= limits.max_listpack_value
}

/// Iterator over a set's members (see [`SetValue::iter`]).
pub enum Iter<'a> {
    Ints(intset::Iter<'a>),
    Pack(listpack::Iter<'a>),
    Table(dict::Iter<'a, SmallBytes, ()>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = Member<'a>;

    #[inline]
    fn next(&mut self) -> Option<Member<'a>> {
        match self {
            Iter::Ints(i) => i.next().map(Member::Int),
            Iter::Pack(p) => p.next().map(Member::Bytes),
            Iter::Table(t) => t.next().map(|(k, _)| Member::Bytes(k.as_slice())),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Ints(i) => i.size_hint(),
            Iter::Pack(p) => p.size_hint(),
            Iter::Table(t) => t.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use std::collections::HashSet;

    /// Two words, the intset unboxed in them.
    #[test]
    fn a_set_value_is_two_words() {
        assert_eq!(std::mem::size_of::<SetValue>(), 16);
        assert_eq!(std::mem::size_of::<Intset>(), 8);
    }

    fn bytes_of(m: Member<'_>) -> Vec<u8> {
        m.with_bytes(|b| b.to_vec())
    }

    fn members(s: &SetValue) -> HashSet<Vec<u8>> {
        s.iter().map(bytes_of).collect()
    }

    #[test]
    fn encodings_follow_redis() {
        let mut s = SetValue::new();
        assert!(s.insert(b"1", &SetLimits::v7_0(3)));
        assert!(s.insert(b"-2", &SetLimits::v7_0(3)));
        assert!(!s.insert(b"1", &SetLimits::v7_0(3)));
        assert_eq!(s.encoding_name(), "intset");
        // Not canonical: strings, not integers.
        assert!(!s.contains(b"01"));
        assert!(!s.contains(b"+1"));
        assert!(s.contains(b"-2"));
        assert!(!s.remove(b"01"));
        assert!(s.insert(b"3", &SetLimits::v7_0(3)));
        assert_eq!(s.encoding_name(), "intset", "3 entries fit a limit of 3");
        assert!(s.insert(b"4", &SetLimits::v7_0(3)));
        assert_eq!(s.encoding_name(), "hashtable", "the 4th converts");
        assert_eq!(
            members(&s),
            ["1", "-2", "3", "4"].map(|m| m.as_bytes().to_vec()).into()
        );
        for m in ["1", "-2", "3"] {
            assert!(s.remove(m.as_bytes()));
        }
        assert_eq!(s.encoding_name(), "hashtable", "conversion is one-way");

        let mut s = SetValue::new();
        assert!(s.insert(b"9223372036854775808", &SetLimits::v7_0(512)));
        assert_eq!(s.encoding_name(), "hashtable");
        let mut s = SetValue::new();
        assert!(s.insert(b"-0", &SetLimits::v7_0(512)));
        assert_eq!(s.encoding_name(), "hashtable");
        let mut s = SetValue::new();
        assert!(s.insert(b"7", &SetLimits::v7_0(0)));
        assert_eq!(
            s.encoding_name(),
            "hashtable",
            "a limit of 0 converts at once"
        );
        assert!(s.contains_member(Member::Int(7)));
    }

    #[test]
    fn members_cross_encodings() {
        let mut table = SetValue::new();
        table.insert(b"a", &SetLimits::v7_0(512));
        table.insert(b"5", &SetLimits::v7_0(512));
        assert!(table.contains_member(Member::Int(5)));
        assert!(!table.contains_member(Member::Int(6)));
        let mut ints = SetValue::new();
        ints.insert_member(Member::Bytes(b"5"), &SetLimits::v7_0(512));
        assert!(ints.is_intset());
        assert!(ints.contains_member(Member::Bytes(b"5")));
        assert!(!ints.contains_member(Member::Bytes(b"a")));
        assert!(table.remove_member(Member::Int(5)));
        assert!(ints.remove_member(Member::Bytes(b"5")));
        assert!(ints.is_empty());
    }

    #[test]
    fn popping_a_big_table_empty_stays_cheap() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut s = SetValue::new();
        for i in 0..10_000 {
            s.insert(format!("m{i}").as_bytes(), &SetLimits::v7_0(512));
        }
        let mut seen = HashSet::new();
        while let Some(m) = s.pop_random(&mut rng) {
            let OwnedMember::Bytes(b) = m else {
                panic!("table members are bytes")
            };
            assert!(seen.insert(b.as_slice().to_vec()));
            if let SetValue::Table(d) = &s {
                // Shrinking keeps the table at least 10% full (or at its minimum size), so
                // a random pick probes few empty buckets.
                let (main, _) = d.table_sizes();
                assert!(d.is_rehashing() || main <= 4 || d.len() * 10 >= main);
            }
            s.rehash_step(100);
        }
        assert_eq!(seen.len(), 10_000);
    }

    #[test]
    fn scan_walks_everything() {
        let mut s = SetValue::new();
        for i in 0..1000 {
            s.insert(format!("k{i}").as_bytes(), &SetLimits::v7_0(512));
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        loop {
            let mut got = 0;
            cursor = s.scan(cursor, 10, |m| {
                got += 1;
                seen.insert(bytes_of(m));
            });
            assert!(got < 100, "COUNT bounds one call");
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen, members(&s));
        let ints: SetValue = {
            let mut s = SetValue::new();
            s.insert(b"3", &SetLimits::v7_0(512));
            s.insert(b"1", &SetLimits::v7_0(512));
            s
        };
        let mut order = Vec::new();
        assert_eq!(ints.scan(77, 1, |m| order.push(bytes_of(m))), 0);
        assert_eq!(order, vec![b"1".to_vec(), b"3".to_vec()]);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>),
        Remove(Vec<u8>),
        Pop,
    }

    fn member() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => (-50i64..50).prop_map(|n| n.to_string().into_bytes()),
            1 => any::<i64>().prop_map(|n| n.to_string().into_bytes()),
            1 => prop::sample::select(vec![
                &b"01"[..], b"-0", b"+1", b"", b"9223372036854775808", b"a", b"\x00", b"\r\n",
            ]).prop_map(|b| b.to_vec()),
            1 => prop::collection::vec(any::<u8>(), 0..30),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            5 => member().prop_map(Op::Insert),
            3 => member().prop_map(Op::Remove),
            1 => Just(Op::Pop),
        ]
    }

    proptest! {
        /// Against a std HashSet: same answers and contents; the encoding is intset exactly
        /// while every member ever added was an integer and the count never exceeded the limit.
        #[test]
        fn behaves_like_a_hashset(ops in prop::collection::vec(op(), 0..150),
                                  limit in 0usize..20, seed in any::<u64>()) {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut s = SetValue::new();
            let mut model: HashSet<Vec<u8>> = HashSet::new();
            let mut compact = true;
            for op in ops {
                match op {
                    Op::Insert(m) => {
                        prop_assert_eq!(s.insert(&m, &SetLimits::v7_0(limit)), model.insert(m.clone()));
                        compact &= parse_i64(&m).is_some() && model.len() <= limit;
                    }
                    Op::Remove(m) => prop_assert_eq!(s.remove(&m), model.remove(&m)),
                    Op::Pop => match s.pop_random(&mut rng) {
                        Some(m) => prop_assert!(model.remove(&bytes_of(m.as_member()))),
                        None => prop_assert!(model.is_empty()),
                    },
                }
                prop_assert_eq!(s.len(), model.len());
                prop_assert_eq!(s.is_intset(), compact);
            }
            prop_assert_eq!(members(&s), model.clone());
            for m in &model {
                prop_assert!(s.contains(m));
            }
            if let Some(m) = s.random(&mut rng) {
                prop_assert!(model.contains(&bytes_of(m)));
            }
            if s.is_intset() {
                let v: Vec<i64> = s.iter().map(|m| match m { Member::Int(n) => n, _ => unreachable!() }).collect();
                prop_assert!(v.windows(2).all(|w| w[0] < w[1]), "intsets iterate ascending");
            }
        }

        /// The two encodings answer every question alike.
        #[test]
        fn intset_and_table_agree(values in prop::collection::btree_set(any::<i64>(), 0..60),
                                  probes in prop::collection::vec(member(), 0..40)) {
            let mut ints = SetValue::new();
            for v in &values {
                ints.insert_int(*v, &SetLimits::v7_0(usize::MAX));
            }
            let mut table = ints.clone();
            table.convert_to_table();
            prop_assert!(ints.is_intset() && !table.is_intset());
            prop_assert_eq!(members(&ints), members(&table));
            for p in &probes {
                prop_assert_eq!(ints.contains(p), table.contains(p));
                if let Some(n) = parse_i64(p) {
                    prop_assert_eq!(ints.contains_member(Member::Int(n)), table.contains_member(Member::Int(n)));
                }
            }
            for p in &probes {
                prop_assert_eq!(ints.remove(p), table.remove(p));
            }
            prop_assert_eq!(members(&ints), members(&table));
        }
    }

    #[test]
    fn listpacks_follow_redis_7_2() {
        let limits = SetLimits::v7_2(512, 3, 5);
        let mut s = SetValue::new();
        assert!(s.insert(b"10", &limits));
        assert!(s.insert(b"b", &limits));
        assert_eq!(s.encoding_name(), "listpack", "an intset given a string");
        assert!(s.insert(b"a", &limits));
        assert!(!s.insert(b"a", &limits));
        let order: Vec<Vec<u8>> = s.iter().map(bytes_of).collect();
        assert_eq!(
            order,
            [&b"10"[..], b"b", b"a"].map(<[u8]>::to_vec),
            "insertion order"
        );
        assert!(s.insert(b"c", &limits));
        assert_eq!(
            s.encoding_name(),
            "hashtable",
            "past set-max-listpack-entries"
        );

        let mut s = SetValue::new();
        s.insert(b"x", &limits);
        assert!(s.insert(b"toolong", &limits));
        assert_eq!(
            s.encoding_name(),
            "hashtable",
            "past set-max-listpack-value"
        );

        // The intset's longest integer must fit a listpack value too.
        let mut s = SetValue::new();
        s.insert(b"-100000", &limits);
        s.insert(b"a", &limits);
        assert_eq!(s.encoding_name(), "hashtable");

        // Creation by size hint.
        assert_eq!(SetValue::create(b"1", 3, &limits).encoding_name(), "intset");
        assert_eq!(
            SetValue::create(b"1", 600, &limits).encoding_name(),
            "hashtable"
        );
        assert_eq!(
            SetValue::create(b"a", 3, &limits).encoding_name(),
            "listpack"
        );
        assert_eq!(
            SetValue::create(b"a", 4, &limits).encoding_name(),
            "hashtable"
        );
        let old = SetLimits::v7_0(512);
        assert_eq!(SetValue::create(b"a", 1, &old).encoding_name(), "hashtable");
        assert_eq!(SetValue::create(b"1", 600, &old).encoding_name(), "intset");
        let mut pack = SetValue::create(b"a", 1, &limits);
        pack.fit_for(4, &limits);
        assert_eq!(pack.encoding_name(), "hashtable");

        // *STORE results of integers only go back to an intset.
        let mut s = SetValue::new_pack();
        s.insert(b"3", &limits);
        s.insert(b"1", &limits);
        s.compact_integers(&limits);
        assert_eq!(s.encoding_name(), "intset");
        assert_eq!(
            s.iter().map(bytes_of).collect::<Vec<_>>(),
            [b"1".to_vec(), b"3".to_vec()]
        );
    }

    #[test]
    fn pack_samples_are_distinct_and_in_order() {
        let limits = SetLimits::v7_2(512, 128, 64);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut s = SetValue::new_pack();
        for i in 0..20 {
            s.insert(format!("m{i}").as_bytes(), &limits);
        }
        let picked = s.pack_sample(5, &mut rng);
        assert_eq!(picked.len(), 5);
        assert!(picked.windows(2).all(|w| w[0] < w[1]));
        s.pack_remove_positions(&picked);
        assert_eq!(s.len(), 15);
        assert_eq!(s.pack_sample(50, &mut rng).len(), 15);
    }

    proptest! {
        /// Redis 7.2's rules against a model: the contents of a std HashSet, a listpack's order
        /// the order members were first added, and each encoding within its limits.
        #[test]
        fn listpack_sets_behave_like_a_model(ops in prop::collection::vec(op(), 0..150),
                                             max_intset in 0usize..10, entries in 0usize..12,
                                             value in 0usize..8, seed in any::<u64>()) {
            let limits = SetLimits::v7_2(max_intset, entries, value);
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut s = SetValue::new();
            let mut model: Vec<Vec<u8>> = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(m) => {
                        let fresh = !model.contains(&m);
                        let was_intset = s.is_intset();
                        prop_assert_eq!(s.insert(&m, &limits), fresh);
                        if was_intset && matches!(s, SetValue::Pack(_)) {
                            // An intset becomes a listpack in ascending order.
                            model.sort_by_key(|x| parse_i64(x));
                        }
                        if fresh {
                            model.push(m);
                        }
                    }
                    Op::Remove(m) => {
                        let at = model.iter().position(|x| *x == m);
                        prop_assert_eq!(s.remove(&m), at.is_some());
                        if let Some(i) = at {
                            model.remove(i);
                        }
                    }
                    Op::Pop => match s.pop_random(&mut rng) {
                        Some(m) => {
                            let b = bytes_of(m.as_member());
                            let i = model.iter().position(|x| *x == b);
                            prop_assert!(i.is_some());
                            model.remove(i.unwrap());
                        }
                        None => prop_assert!(model.is_empty()),
                    },
                }
                prop_assert_eq!(s.len(), model.len());
                match &s {
                    SetValue::Pack(_) => {
                        let order: Vec<Vec<u8>> = s.iter().map(bytes_of).collect();
                        prop_assert_eq!(&order, &model);
                        prop_assert!(model.len() <= entries.max(1));
                        prop_assert!(model.iter().all(|m| m.len() <= value.max(20)));
                    }
                    SetValue::Ints(_) => {
                        prop_assert!(model.len() <= max_intset);
                        prop_assert!(model.iter().all(|m| parse_i64(m).is_some()));
                    }
                    SetValue::Table(_) => {}
                }
            }
            let got: HashSet<Vec<u8>> = members(&s);
            prop_assert_eq!(got, model.iter().cloned().collect::<HashSet<_>>());
        }
    }
}
