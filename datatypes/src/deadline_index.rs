//! A set of names, each with a deadline (milliseconds since the epoch), that answers both "what
//! is the deadline of this name" and "which names are due" quickly.
//!
//! Hash field expiration needs it twice: each hash with field TTLs keeps one for its fields
//! (HTTL reads a field's deadline; lazy and active expiry take the due fields in deadline order),
//! and each database keeps one of the hashes that have field TTLs, keyed by their earliest field
//! deadline, so that the active expiry cycle finds the hashes with something due without walking
//! the keyspace (Redis keeps the same per-database index, ordered by each hash's minimum expiry).
//!
//! A hash map gives the lookup by name and an ordered set of (deadline, name) the order; both
//! are kept in step by every method. A name is due at `now` when `now > deadline`, the rule keys
//! follow too.

use std::collections::{BTreeSet, HashMap};

use crate::small_bytes::SmallBytes;

/// Names with deadlines (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct DeadlineIndex {
    by_name: HashMap<SmallBytes, i64, ahash::RandomState>,
    by_deadline: BTreeSet<(i64, SmallBytes)>,
}

impl DeadlineIndex {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The deadline of `name`, if it has one.
    pub fn get(&self, name: &[u8]) -> Option<i64> {
        self.by_name.get(name).copied()
    }

    /// Sets the deadline of `name`; returns the previous one.
    pub fn set(&mut self, name: &[u8], deadline: i64) -> Option<i64> {
        let previous = self.remove(name);
        let name = SmallBytes::new(name);
        self.by_deadline.insert((deadline, name.clone()));
        self.by_name.insert(name, deadline);
        previous
    }

    /// Removes `name`; returns its deadline if it had one.
    pub fn remove(&mut self, name: &[u8]) -> Option<i64> {
        let (name, deadline) = self.by_name.remove_entry(name)?;
        self.by_deadline.remove(&(deadline, name));
        Some(deadline)
    }

    /// Removes every name.
    pub fn clear(&mut self) {
        self.by_name.clear();
        self.by_deadline.clear();
    }

    /// The earliest deadline and its name.
    pub fn first(&self) -> Option<(i64, &[u8])> {
        self.by_deadline
            .first()
            .map(|(deadline, name)| (*deadline, name.as_slice()))
    }

    /// True if `name` has a deadline that has passed at `now`.
    pub fn is_due(&self, name: &[u8], now: i64) -> bool {
        self.get(name).is_some_and(|deadline| now > deadline)
    }

    /// The names due at `now`, earliest first.
    pub fn due(&self, now: i64) -> impl Iterator<Item = &[u8]> {
        self.by_deadline
            .iter()
            .take_while(move |(deadline, _)| now > *deadline)
            .map(|(_, name)| name.as_slice())
    }

    /// How many names are due at `now`.
    pub fn count_due(&self, now: i64) -> usize {
        self.due(now).count()
    }

    /// Removes and returns up to `limit` names due at `now`, earliest first.
    pub fn take_due(&mut self, now: i64, limit: usize) -> Vec<SmallBytes> {
        let mut taken = Vec::new();
        while taken.len() < limit {
            match self.by_deadline.first() {
                Some((deadline, _)) if now > *deadline => {
                    let (_, name) = self.by_deadline.pop_first().expect("not empty");
                    self.by_name.remove(name.as_slice());
                    taken.push(name);
                }
                _ => break,
            }
        }
        taken
    }

    /// Every name with its deadline, earliest first.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.by_deadline
            .iter()
            .map(|(deadline, name)| (name.as_slice(), *deadline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    enum Op {
        Set(u8, i64),
        Remove(u8),
        TakeDue(i64, usize),
        Clear,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u8..12, 0i64..50).prop_map(|(n, d)| Op::Set(n, d)),
            2 => (0u8..12).prop_map(Op::Remove),
            2 => (0i64..60, 0usize..5).prop_map(|(t, l)| Op::TakeDue(t, l)),
            1 => Just(Op::Clear),
        ]
    }

    proptest! {
        /// The index agrees with a map from name to deadline: lookups, the earliest entry, the
        /// due names in deadline order, and taking them.
        #[test]
        fn behaves_like_a_map_ordered_by_deadline(ops in proptest::collection::vec(op(), 1..60), now in 0i64..60) {
            let mut index = DeadlineIndex::new();
            let mut model: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
            let sorted = |model: &BTreeMap<Vec<u8>, i64>| {
                let mut all: Vec<(i64, Vec<u8>)> = model.iter().map(|(n, d)| (*d, n.clone())).collect();
                all.sort();
                all
            };
            for op in ops {
                match op {
                    Op::Set(n, d) => {
                        prop_assert_eq!(index.set(&[n], d), model.insert(vec![n], d));
                    }
                    Op::Remove(n) => {
                        prop_assert_eq!(index.remove(&[n]), model.remove(&vec![n]));
                    }
                    Op::TakeDue(t, limit) => {
                        let expected: Vec<Vec<u8>> = sorted(&model)
                            .into_iter()
                            .filter(|(d, _)| t > *d)
                            .take(limit)
                            .map(|(_, n)| n)
                            .collect();
                        let taken: Vec<Vec<u8>> = index.take_due(t, limit).iter().map(|n| n.to_vec()).collect();
                        prop_assert_eq!(&taken, &expected);
                        for n in expected {
                            model.remove(&n);
                        }
                    }
                    Op::Clear => {
                        index.clear();
                        model.clear();
                    }
                }
                prop_assert_eq!(index.len(), model.len());
                let all = sorted(&model);
                prop_assert_eq!(index.first().map(|(d, n)| (d, n.to_vec())), all.first().cloned());
                let due: Vec<Vec<u8>> = index.due(now).map(<[u8]>::to_vec).collect();
                let expected: Vec<Vec<u8>> = all.iter().filter(|(d, _)| now > *d).map(|(_, n)| n.clone()).collect();
                prop_assert_eq!(index.count_due(now), expected.len());
                prop_assert_eq!(due, expected);
                for n in 0u8..12 {
                    prop_assert_eq!(index.get(&[n]), model.get(&vec![n]).copied());
                    prop_assert_eq!(index.is_due(&[n], now), model.get(&vec![n]).is_some_and(|d| now > *d));
                }
            }
        }
    }
}
