//! [`Intset`]: a sorted array of distinct integers, the compact form of all-integer sets.
//!
//! Redis stores a small set of integers as a sorted array whose elements all have the width of
//! the widest one (16, 32 or 64 bits), so that `{1, 2, 3}` costs six bytes of payload. We keep
//! the same idea in one exactly-sized heap block: byte 0 is the element width in bytes (2, 4 or
//! 8), the rest are the values, little-endian, in ascending order. The empty set owns no block at
//! all. The width only grows: inserting a value that does not fit re-encodes every element at the
//! wider width (the new value is then necessarily the new minimum or maximum), and removals never
//! narrow it — Redis behaves the same way, and a set that shrinks is soon deleted or grows again.
//!
//! Membership is a binary search; insertion and removal move the tail and re-allocate the block
//! to its new exact size (O(n), as in Redis — the encoding is only used up to
//! `set-max-intset-entries` members, 512 by default).
//!
//! Whether a member belongs here is decided by [`crate::number::parse_i64`] (Redis's strict
//! `string2ll`: "01", "+1", "-0", " 1" and out-of-range numbers are strings, not integers).

use rand::Rng;

use crate::thin_bytes::ThinBytes;

pub use crate::number::{format_i64, parse_i64, I64_TEXT_MAX};

/// Bytes needed to store `value`: 2, 4 or 8.
fn width_of(value: i64) -> usize {
    if i16::try_from(value).is_ok() {
        2
    } else if i32::try_from(value).is_ok() {
        4
    } else {
        8
    }
}

/// Sorted, distinct 64-bit integers packed at the narrowest common width, in one exactly-sized
/// allocation (see the module documentation for the layout).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Intset {
    /// Empty, or `[width, values…]`, behind a thin pointer so that a set's intset sits unboxed
    /// in its two-word value.
    data: ThinBytes,
}

impl std::fmt::Debug for Intset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Intset {
    /// Where the value's first heap block starts (or the value itself, when it has none): what
    /// a pipeline's prefetch asks the CPU for before the command that reads it runs.
    #[inline]
    pub fn heap_address(&self) -> *const u8 {
        self.data.as_slice().as_ptr()
    }

    pub fn new() -> Self {
        Self::default()
    }

    /// An intset of `values` (ascending and distinct) at element width `width` (2, 4 or 8, wide
    /// enough for every value): the width an intset blob of an RDB file records, which Redis
    /// keeps on loading even where the values would fit a narrower one. `None` if the values
    /// are not ascending or do not fit.
    pub fn from_sorted_with_width(width: usize, values: &[i64]) -> Option<Intset> {
        if !matches!(width, 2 | 4 | 8)
            || values.windows(2).any(|w| w[0] >= w[1])
            || values.iter().any(|&v| width_of(v) > width)
        {
            return None;
        }
        if values.is_empty() {
            return Some(Intset::new());
        }
        let data = ThinBytes::build(1 + values.len() * width, |data| {
            data[0] = width as u8;
            for (i, &v) in values.iter().enumerate() {
                Self::put(data, width, i, v);
            }
        });
        Some(Intset { data })
    }

    /// Element width in bytes (2 for the empty set, which has none yet).
    pub fn width(&self) -> usize {
        self.data.first().map_or(2, |&w| w as usize)
    }

    pub fn len(&self) -> usize {
        match self.data.len() {
            0 => 0,
            n => (n - 1) / self.width(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes of the heap block (0 when empty).
    pub fn byte_size(&self) -> usize {
        self.data.len()
    }

    /// The element at `index` (ascending order). Panics when out of range.
    #[inline]
    pub fn get(&self, index: usize) -> i64 {
        let w = self.width();
        let at = 1 + index * w;
        let bytes = &self.data[at..at + w];
        match w {
            2 => i16::from_le_bytes([bytes[0], bytes[1]]) as i64,
            4 => i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as i64,
            _ => i64::from_le_bytes(bytes.try_into().expect("8 bytes")),
        }
    }

    /// Writes `value` at `index`, at width `w`, into `data` (a block laid out as ours).
    #[inline]
    fn put(data: &mut [u8], w: usize, index: usize, value: i64) {
        let at = 1 + index * w;
        data[at..at + w].copy_from_slice(&value.to_le_bytes()[..w]);
    }

    /// Where `value` is (`Ok`) or would go (`Err`), as `slice::binary_search`.
    fn search(&self, value: i64) -> Result<usize, usize> {
        let len = self.len();
        if len == 0 {
            return Err(0);
        }
        // Values outside the range of the current width cannot be here.
        if width_of(value) > self.width() {
            return Err(if value < 0 { 0 } else { len });
        }
        let (mut low, mut high) = (0, len);
        while low < high {
            let mid = low + (high - low) / 2;
            match self.get(mid).cmp(&value) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(low)
    }

    pub fn contains(&self, value: i64) -> bool {
        self.search(value).is_ok()
    }

    /// Adds `value`; false if it was already there.
    pub fn insert(&mut self, value: i64) -> bool {
        let len = self.len();
        let needed = width_of(value);
        if needed > self.width() || len == 0 {
            self.insert_widening(value, needed.max(self.width()));
            return true;
        }
        let Err(index) = self.search(value) else {
            return false;
        };
        let w = self.width();
        let old = &self.data;
        let at = 1 + index * w;
        self.data = ThinBytes::build(old.len() + w, |data| {
            data[..at].copy_from_slice(&old[..at]);
            data[at + w..].copy_from_slice(&old[at..]);
            Self::put(data, w, index, value);
        });
        true
    }

    /// Inserts a value that is not present and needs width `w` ≥ the current one: re-encodes
    /// every element at `w`. A value wider than the current elements is below or above all of
    /// them, so it goes first or last.
    fn insert_widening(&mut self, value: i64, w: usize) {
        let len = self.len();
        let (shift, at) = if value < 0 { (1, 0) } else { (0, len) };
        self.data = ThinBytes::build(1 + (len + 1) * w, |data| {
            data[0] = w as u8;
            for i in 0..len {
                Self::put(data, w, i + shift, self.get(i));
            }
            Self::put(data, w, at, value);
        });
    }

    /// Removes `value`; false if it was not there.
    pub fn remove(&mut self, value: i64) -> bool {
        match self.search(value) {
            Ok(index) => {
                self.remove_at(index);
                true
            }
            Err(_) => false,
        }
    }

    /// Removes and returns the element at `index`. Panics when out of range.
    pub fn remove_at(&mut self, index: usize) -> i64 {
        let value = self.get(index);
        let len = self.len();
        if len == 1 {
            self.data = ThinBytes::new();
            return value;
        }
        let w = self.width();
        let old = &self.data;
        let at = 1 + index * w;
        self.data = ThinBytes::build(old.len() - w, |data| {
            data[..at].copy_from_slice(&old[..at]);
            data[at..].copy_from_slice(&old[at + w..]);
        });
        value
    }

    /// A uniformly chosen element, or None when empty.
    pub fn random(&self, rng: &mut impl Rng) -> Option<i64> {
        match self.len() {
            0 => None,
            len => Some(self.get(rng.gen_range(0..len))),
        }
    }

    /// Removes and returns a uniformly chosen element.
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<i64> {
        match self.len() {
            0 => None,
            len => Some(self.remove_at(rng.gen_range(0..len))),
        }
    }

    /// The elements in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            set: self,
            front: 0,
            back: self.len(),
        }
    }
}

impl FromIterator<i64> for Intset {
    fn from_iter<T: IntoIterator<Item = i64>>(iter: T) -> Self {
        let mut set = Intset::new();
        for v in iter {
            set.insert(v);
        }
        set
    }
}

/// Ascending iterator over an [`Intset`].
#[derive(Clone)]
pub struct Iter<'a> {
    set: &'a Intset,
    front: usize,
    back: usize,
}

impl Iterator for Iter<'_> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        if self.front == self.back {
            return None;
        }
        self.front += 1;
        Some(self.set.get(self.front - 1))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<i64> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        Some(self.set.get(self.back))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn canonical_integers_only() {
        for (text, want) in [
            (&b"0"[..], Some(0)),
            (b"1", Some(1)),
            (b"-1", Some(-1)),
            (b"9223372036854775807", Some(i64::MAX)),
            (b"-9223372036854775808", Some(i64::MIN)),
            (b"9223372036854775808", None),
            (b"-9223372036854775809", None),
            (b"01", None),
            (b"-0", None),
            (b"+1", None),
            (b" 1", None),
            (b"1 ", None),
            (b"", None),
            (b"-", None),
            (b"00", None),
            (b"1a", None),
            (b"1\x00", None),
            (b"12345678901234567890", None),
        ] {
            assert_eq!(parse_i64(text), want, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn widths_grow_and_never_shrink() {
        let mut s = Intset::new();
        assert_eq!((s.len(), s.byte_size()), (0, 0), "empty owns nothing");
        assert!(s.insert(5));
        assert!(!s.insert(5));
        assert_eq!((s.width(), s.byte_size()), (2, 3));
        assert!(s.insert(-40_000));
        assert_eq!(s.width(), 4);
        assert!(s.insert(1 << 40));
        assert_eq!(s.width(), 8);
        assert_eq!(s.byte_size(), 1 + 3 * 8);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![-40_000, 5, 1 << 40]);
        assert!(s.remove(1 << 40));
        assert!(s.remove(-40_000));
        assert_eq!(s.width(), 8, "Redis never narrows an intset");
        assert!(s.remove(5));
        assert!(s.is_empty());
        assert_eq!(s.byte_size(), 0);
    }

    #[test]
    fn extremes() {
        let s: Intset = [i64::MIN, i64::MAX, 0, -1, i16::MIN as i64, i32::MAX as i64]
            .into_iter()
            .collect();
        let mut want = vec![i64::MIN, i64::MAX, 0, -1, i16::MIN as i64, i32::MAX as i64];
        want.sort();
        assert_eq!(s.iter().collect::<Vec<_>>(), want);
        assert_eq!(s.width(), 8);
        assert!(s.contains(i64::MIN) && s.contains(i64::MAX) && !s.contains(1));
        assert_eq!(s.iter().next_back(), Some(i64::MAX));
    }

    #[test]
    fn formats_like_itoa() {
        let mut buf = [0u8; I64_TEXT_MAX];
        for v in [0, 1, -1, 10, -10, i64::MAX, i64::MIN, 1234567890] {
            assert_eq!(format_i64(v, &mut buf), v.to_string().as_bytes());
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(i64),
        Remove(i64),
        PopAt(usize),
    }

    fn value() -> impl Strategy<Value = i64> {
        prop_oneof![
            -300i64..300,
            any::<i16>().prop_map(i64::from),
            any::<i32>().prop_map(i64::from),
            any::<i64>(),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => value().prop_map(Op::Insert),
            2 => value().prop_map(Op::Remove),
            1 => any::<usize>().prop_map(Op::PopAt),
        ]
    }

    proptest! {
        /// Against a BTreeSet: same answers, same contents in the same order, exact block size.
        #[test]
        fn behaves_like_a_btreeset(ops in prop::collection::vec(op(), 0..200)) {
            let mut s = Intset::new();
            let mut model = BTreeSet::new();
            let mut widest = 2;
            for op in ops {
                match op {
                    Op::Insert(v) => {
                        prop_assert_eq!(s.insert(v), model.insert(v));
                        widest = widest.max(width_of(v));
                    }
                    Op::Remove(v) => prop_assert_eq!(s.remove(v), model.remove(&v)),
                    Op::PopAt(i) => {
                        if !model.is_empty() {
                            let i = i % model.len();
                            let want = *model.iter().nth(i).unwrap();
                            prop_assert_eq!(s.remove_at(i), want);
                            model.remove(&want);
                        }
                    }
                }
                prop_assert_eq!(s.len(), model.len());
                if model.is_empty() {
                    prop_assert_eq!(s.byte_size(), 0);
                    widest = 2;
                } else {
                    prop_assert_eq!(s.width(), widest);
                    prop_assert_eq!(s.byte_size(), 1 + model.len() * widest);
                }
            }
            prop_assert!(s.iter().eq(model.iter().copied()));
            prop_assert!(s.iter().rev().eq(model.iter().rev().copied()));
            for v in model.iter() {
                prop_assert!(s.contains(*v));
            }
        }

        #[test]
        fn parse_and_format_round_trip(v in any::<i64>()) {
            let mut buf = [0u8; I64_TEXT_MAX];
            let text = format_i64(v, &mut buf).to_vec();
            prop_assert_eq!(parse_i64(&text), Some(v));
        }

        /// Anything parse accepts formats back to the same bytes (canonical form only).
        #[test]
        fn parse_accepts_only_canonical(text in "-?[0-9]{0,21}") {
            if let Some(v) = parse_i64(text.as_bytes()) {
                prop_assert_eq!(v.to_string(), text);
            } else {
                prop_assert!(text.parse::<i64>().map_or(true, |v| v.to_string() != text));
            }
        }

        #[test]
        fn random_members_belong(values in prop::collection::btree_set(value(), 1..50), seed in any::<u64>()) {
            use rand::SeedableRng;
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut s: Intset = values.iter().copied().collect();
            for _ in 0..10 {
                prop_assert!(values.contains(&s.random(&mut rng).unwrap()));
            }
            let mut popped = BTreeSet::new();
            while let Some(v) = s.pop_random(&mut rng) {
                prop_assert!(popped.insert(v));
            }
            prop_assert_eq!(popped, values);
        }
    }
}
