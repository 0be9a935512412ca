//! Set values in Redis 7.0's two encodings: an [`Intset`] while every member is an integer in
//! canonical form and there are at most `set-max-intset-entries` of them, a [`Dict`] beyond.
//! OBJECT ENCODING reports `intset` or `hashtable`.
//!
//! The rules follow Redis because users can observe them (OBJECT ENCODING, and the order of
//! SMEMBERS, which is ascending for an intset):
//!
//! - a member is an integer only in the canonical form of Redis's `string2ll` ([`parse_i64`]):
//!   `"01"`, `"-0"`, `"+1"` and `"9223372036854775808"` are strings, and adding one converts the
//!   set;
//! - the set converts when an insertion makes it exceed the limit (so with a limit of 0 a new set
//!   converts on its first member);
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
use crate::small_bytes::{SmallBytes, INLINE_CAPACITY};

/// A set value.
#[derive(Clone, Debug)]
pub enum SetValue {
    Ints(Intset),
    Table(Box<Dict<SmallBytes, ()>>),
}

/// A member as stored: an intset's integer, or a table's bytes.
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

impl SetValue {
    /// An empty set, compact (every new set starts as an intset; the first non-integer converts
    /// it, which is what Redis's choice by first member amounts to).
    pub fn new() -> Self {
        SetValue::Ints(Intset::new())
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            SetValue::Ints(i) => i.len(),
            SetValue::Table(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            SetValue::Ints(_) => "intset",
            SetValue::Table(_) => "hashtable",
        }
    }

    pub fn is_intset(&self) -> bool {
        matches!(self, SetValue::Ints(_))
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        match self {
            SetValue::Ints(ints) => parse_i64(member).is_some_and(|n| ints.contains(n)),
            SetValue::Table(d) => d.contains_key(member),
        }
    }

    /// Membership of a member of another set.
    pub fn contains_member(&self, member: Member<'_>) -> bool {
        match (self, member) {
            (SetValue::Ints(ints), Member::Int(n)) => ints.contains(n),
            (SetValue::Table(d), Member::Int(n)) => {
                d.contains_key(format_i64(n, &mut [0; I64_TEXT_MAX]))
            }
            (_, Member::Bytes(b)) => self.contains(b),
        }
    }

    /// Adds `member`; false if it was there already. Converts to a table when `member` is not an
    /// integer or the intset grows past `max_intset` entries.
    pub fn insert(&mut self, member: &[u8], max_intset: usize) -> bool {
        match self {
            SetValue::Ints(_) => match parse_i64(member) {
                Some(n) => self.insert_int(n, max_intset),
                None => {
                    self.convert_to_table();
                    self.insert(member, max_intset)
                }
            },
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
    pub fn insert_int(&mut self, n: i64, max_intset: usize) -> bool {
        match self {
            SetValue::Ints(ints) => {
                if !ints.insert(n) {
                    return false;
                }
                if ints.len() > max_intset {
                    self.convert_to_table();
                }
                true
            }
            SetValue::Table(_) => self.insert(format_i64(n, &mut [0; I64_TEXT_MAX]), max_intset),
        }
    }

    /// Adds a member of another set.
    pub fn insert_member(&mut self, member: Member<'_>, max_intset: usize) -> bool {
        match member {
            Member::Int(n) => self.insert_int(n, max_intset),
            Member::Bytes(b) => self.insert(b, max_intset),
        }
    }

    /// Removes `member`; false if it was not there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            SetValue::Ints(ints) => parse_i64(member).is_some_and(|n| ints.remove(n)),
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
            (SetValue::Table(_), Member::Int(n)) => {
                self.remove(format_i64(n, &mut [0; I64_TEXT_MAX]))
            }
            (_, Member::Bytes(b)) => self.remove(b),
        }
    }

    /// A random member (uniform for an intset; a random non-empty bucket, then a random entry
    /// of its chain, for a table), or None when empty.
    pub fn random(&self, rng: &mut impl Rng) -> Option<Member<'_>> {
        match self {
            SetValue::Ints(ints) => ints.random(rng).map(Member::Int),
            SetValue::Table(d) => d
                .fair_random_entry(rng)
                .map(|(k, _)| Member::Bytes(k.as_slice())),
        }
    }

    /// Removes and returns a random member.
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<OwnedMember> {
        match self {
            SetValue::Ints(ints) => ints.pop_random(rng).map(OwnedMember::Int),
            SetValue::Table(d) => {
                let (key, ()) = d.pop_fair_random(rng)?;
                d.shrink_if_needed();
                Some(OwnedMember::Bytes(key))
            }
        }
    }

    /// The members: ascending for an intset, in table order otherwise.
    pub fn iter(&self) -> Iter<'_> {
        match self {
            SetValue::Ints(ints) => Iter::Ints(ints.iter()),
            SetValue::Table(d) => Iter::Table(d.iter()),
        }
    }

    /// One SSCAN call, as Redis does it: an intset is returned whole with cursor 0 (whatever
    /// cursor was given); a table is walked from `cursor` bucket by bucket until `count` members
    /// were collected or `count × 10` more buckets were visited. Returns the next cursor.
    pub fn scan(&self, cursor: u64, count: u64, mut visit: impl FnMut(Member<'_>)) -> u64 {
        match self {
            SetValue::Ints(ints) => {
                ints.iter().for_each(|n| visit(Member::Int(n)));
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

    /// Converts an intset to a table (sized for its members up front, as Redis does).
    pub fn convert_to_table(&mut self) {
        if let SetValue::Ints(ints) = self {
            let mut d = Dict::new();
            d.expand(ints.len());
            let mut buf = [0; I64_TEXT_MAX];
            for n in ints.iter() {
                d.insert_new(SmallBytes::new(format_i64(n, &mut buf)), ());
            }
            *self = SetValue::Table(Box::new(d));
        }
    }

    /// Finishes any incremental rehash of a table (for tests and the periodic tick).
    pub fn rehash_step(&mut self, n: usize) {
        if let SetValue::Table(d) = self {
            d.rehash(n);
        }
    }
}

/// Iterator over a set's members (see [`SetValue::iter`]).
pub enum Iter<'a> {
    Ints(intset::Iter<'a>),
    Table(dict::Iter<'a, SmallBytes, ()>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = Member<'a>;

    #[inline]
    fn next(&mut self) -> Option<Member<'a>> {
        match self {
            Iter::Ints(i) => i.next().map(Member::Int),
            Iter::Table(t) => t.next().map(|(k, _)| Member::Bytes(k.as_slice())),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Ints(i) => i.size_hint(),
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

    fn bytes_of(m: Member<'_>) -> Vec<u8> {
        m.with_bytes(|b| b.to_vec())
    }

    fn members(s: &SetValue) -> HashSet<Vec<u8>> {
        s.iter().map(bytes_of).collect()
    }

    #[test]
    fn encodings_follow_redis() {
        let mut s = SetValue::new();
        assert!(s.insert(b"1", 3));
        assert!(s.insert(b"-2", 3));
        assert!(!s.insert(b"1", 3));
        assert_eq!(s.encoding_name(), "intset");
        // Not canonical: strings, not integers.
        assert!(!s.contains(b"01"));
        assert!(!s.contains(b"+1"));
        assert!(s.contains(b"-2"));
        assert!(!s.remove(b"01"));
        assert!(s.insert(b"3", 3));
        assert_eq!(s.encoding_name(), "intset", "3 entries fit a limit of 3");
        assert!(s.insert(b"4", 3));
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
        assert!(s.insert(b"9223372036854775808", 512));
        assert_eq!(s.encoding_name(), "hashtable");
        let mut s = SetValue::new();
        assert!(s.insert(b"-0", 512));
        assert_eq!(s.encoding_name(), "hashtable");
        let mut s = SetValue::new();
        assert!(s.insert(b"7", 0));
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
        table.insert(b"a", 512);
        table.insert(b"5", 512);
        assert!(table.contains_member(Member::Int(5)));
        assert!(!table.contains_member(Member::Int(6)));
        let mut ints = SetValue::new();
        ints.insert_member(Member::Bytes(b"5"), 512);
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
            s.insert(format!("m{i}").as_bytes(), 512);
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
            s.insert(format!("k{i}").as_bytes(), 512);
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
            s.insert(b"3", 512);
            s.insert(b"1", 512);
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
                        prop_assert_eq!(s.insert(&m, limit), model.insert(m.clone()));
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
                ints.insert_int(*v, usize::MAX);
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
}
