//! [`Intset`]: a sorted array of distinct integers, the compact form of all-integer sets.

/// Sorted, distinct 64-bit integers in one exactly-sized allocation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intset {
    values: Box<[i64]>,
}

impl Intset {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn contains(&self, value: i64) -> bool {
        self.values.binary_search(&value).is_ok()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = i64> + '_ {
        self.values.iter().copied()
    }
}
