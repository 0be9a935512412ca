//! [`Packed`]: the compact form of a small sorted set (Redis's `listpack` encoding) — its
//! (member, score) pairs back to back in one exactly sized allocation, in (score, member) order.
//!
//! ```text
//! [count: u32 LE] [pair] [pair] …
//! pair = [score kind] [score bytes] [member length: varint] [member] [backward length of the pair]
//! ```
//!
//! Scores are mostly small integers (ranks, counters, all zeros for a lexicographic set) or
//! integral timestamps, so a score takes what its value needs, as Redis stores an integral score
//! as a listpack integer: a kind byte under 0x80 *is* the score (0 to 127), 0x80–0x84 announce a
//! signed integer of 1, 2, 3, 4 or 6 bytes, 0x85 an `f64` (any other score, exactly). The
//! backward length covers the whole pair, so pairs walk from either end: forward by decoding the
//! score's kind and the member's length, backward by the length at the pair's end. A pair of a
//! member under 128 bytes and a score from 0 to 127 costs its member plus 3 bytes, as in Redis;
//! a fractional score costs 11. Operations are linear, and every change rebuilds the allocation
//! at its new size, which is what Redis pays too and is cheap at the sizes this form is limited
//! to (`zset-max-listpack-entries`, 128 by default).
//!
//! Scores are stored exactly, except that -0 is stored as 0: Redis keeps listpack scores as
//! text or integers, where -0 becomes 0, and ZSCORE shows it.

use crate::listpack::{backlen_size, entry_at, push_backlen, start_before};
use std::ops::Range;

const HEADER: usize = 4;
/// The first kind byte that is not a score of its own.
const SMALL_LIMIT: u8 = 0x80;
/// Kind bytes of the integer widths (1, 2, 3, 4 and 6 bytes, little-endian, sign-extended).
const INT_WIDTHS: [usize; 5] = [1, 2, 3, 4, 6];
/// Kind byte of an `f64` score.
const FLOAT: u8 = 0x85;

/// A small sorted set; see the module documentation. Positions are byte offsets of pairs.
#[derive(Clone, Default, PartialEq)]
pub struct Packed {
    buf: Box<[u8]>,
}

/// Appends the encoding of `score` (-0 as 0; see the module documentation).
fn push_score(out: &mut Vec<u8>, score: f64) {
    let score = if score == 0.0 { 0.0 } else { score };
    // Integral and within 48 bits: an integer of the fewest bytes (the cast is exact there).
    if score.fract() == 0.0 && score.abs() < (1u64 << 47) as f64 {
        let n = score as i64;
        if (0..SMALL_LIMIT as i64).contains(&n) {
            out.push(n as u8);
            return;
        }
        for (kind, &width) in INT_WIDTHS.iter().enumerate() {
            let bits = 8 * width as u32;
            if n >= -(1i64 << (bits - 1)) && n < (1i64 << (bits - 1)) {
                out.push(SMALL_LIMIT + kind as u8);
                out.extend_from_slice(&n.to_le_bytes()[..width]);
                return;
            }
        }
    }
    out.push(FLOAT);
    out.extend_from_slice(&score.to_le_bytes());
}

/// The score encoded at `pos` and the position after it.
#[inline]
fn score_at(buf: &[u8], pos: usize) -> (f64, usize) {
    let kind = buf[pos];
    if kind < SMALL_LIMIT {
        return (kind as f64, pos + 1);
    }
    if kind == FLOAT {
        let bytes = buf[pos + 1..pos + 9].try_into().expect("8 bytes");
        return (f64::from_le_bytes(bytes), pos + 9);
    }
    let width = INT_WIDTHS[(kind - SMALL_LIMIT) as usize];
    let mut bytes = [0u8; 8];
    bytes[..width].copy_from_slice(&buf[pos + 1..pos + 1 + width]);
    // Sign-extend from the top byte stored.
    let shift = 64 - 8 * width as u32;
    let n = (i64::from_le_bytes(bytes) << shift) >> shift;
    (n as f64, pos + 1 + width)
}

/// Appends one pair's encoding.
fn push_pair(out: &mut Vec<u8>, member: &[u8], score: f64) {
    let start = out.len();
    push_score(out, score);
    let mut len = member.len();
    while len >= 0x80 {
        out.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(member);
    let body = out.len() - start;
    push_backlen(out, body as u64);
}

impl Packed {
    /// Where the value's first heap block starts (or the value itself, when it has none): what
    /// a pipeline's prefetch asks the CPU for before the command that reads it runs.
    #[inline]
    pub fn heap_address(&self) -> *const u8 {
        self.buf.as_ptr()
    }

    pub fn new() -> Self {
        Packed::default()
    }

    pub fn len(&self) -> usize {
        if self.buf.is_empty() {
            0
        } else {
            u32::from_le_bytes(self.buf[..HEADER].try_into().expect("4 bytes")) as usize
        }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes allocated.
    pub fn byte_size(&self) -> usize {
        self.buf.len()
    }

    /// The member range, the score and the position after the pair at `pos`.
    #[inline]
    fn pair_at(&self, pos: usize) -> (Range<usize>, f64, usize) {
        let (score, member_at) = score_at(&self.buf, pos);
        // The member's length and bytes decode as a listpack entry's; the backward length that
        // follows is the pair's.
        let (member, _) = entry_at(&self.buf, member_at);
        let end = member.end + backlen_size((member.end - pos) as u64);
        (member, score, end)
    }

    /// The element at `pos`.
    #[inline]
    pub fn get(&self, pos: usize) -> (&[u8], f64) {
        let (member, score, _) = self.pair_at(pos);
        (&self.buf[member], score)
    }

    /// Position of the first pair.
    pub fn first(&self) -> Option<usize> {
        (!self.buf.is_empty()).then_some(HEADER)
    }

    /// Position of the last pair.
    pub fn last(&self) -> Option<usize> {
        self.before_end(self.buf.len())
    }

    /// The pair that ends at byte `end`.
    fn before_end(&self, end: usize) -> Option<usize> {
        if end <= HEADER {
            return None;
        }
        Some(start_before(&self.buf, end))
    }

    /// Position of the pair after the one at `pos`.
    #[inline]
    pub fn next(&self, pos: usize) -> Option<usize> {
        let (_, _, end) = self.pair_at(pos);
        (end < self.buf.len()).then_some(end)
    }

    /// Position of the pair before the one at `pos`.
    #[inline]
    pub fn prev(&self, pos: usize) -> Option<usize> {
        self.before_end(pos)
    }

    /// The elements in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            set: self,
            front: if self.buf.is_empty() { 0 } else { HEADER },
            back: self.buf.len(),
            remaining: self.len(),
        }
    }

    /// Position and score of `member`.
    pub fn find(&self, member: &[u8]) -> Option<(usize, f64)> {
        let mut pos = HEADER;
        let end = self.buf.len();
        while pos < end {
            let (m, score, next) = self.pair_at(pos);
            if &self.buf[m] == member {
                return Some((pos, score));
            }
            pos = next;
        }
        None
    }

    /// Replaces bytes `range` (holding `removed` pairs) with `insert` (holding `added` pairs).
    fn splice(&mut self, range: Range<usize>, removed: usize, insert: &[u8], added: usize) {
        let count = self.len() + added - removed;
        if count == 0 {
            self.buf = Box::default();
            return;
        }
        let old: &[u8] = if self.buf.is_empty() {
            &[0u8; HEADER]
        } else {
            &self.buf
        };
        let (start, end) = if self.buf.is_empty() {
            (HEADER, HEADER)
        } else {
            (range.start, range.end)
        };
        let mut out = Vec::with_capacity(old.len() - (end - start) + insert.len());
        out.extend_from_slice(&(count as u32).to_le_bytes());
        out.extend_from_slice(&old[HEADER..start]);
        out.extend_from_slice(insert);
        out.extend_from_slice(&old[end..]);
        self.buf = out.into_boxed_slice();
    }

    /// Inserts (score, member) at its place; the member must not be present.
    pub fn insert(&mut self, score: f64, member: &[u8]) {
        let mut pos = HEADER;
        let end = self.buf.len();
        while pos < end {
            let (m, s, next) = self.pair_at(pos);
            if s > score || (s == score && &self.buf[m] > member) {
                break;
            }
            pos = next;
        }
        let mut pair = Vec::with_capacity(member.len() + 16);
        push_pair(&mut pair, member, score);
        self.splice(pos..pos, 0, &pair, 1);
    }

    /// Removes the pair at `pos`.
    pub fn remove_at(&mut self, pos: usize) {
        let (_, _, end) = self.pair_at(pos);
        self.splice(pos..end, 1, &[], 0);
    }

    /// Removes `count` pairs starting at `pos`.
    pub fn remove_run(&mut self, pos: usize, count: usize) {
        let mut end = pos;
        for _ in 0..count {
            end = self.pair_at(end).2;
        }
        self.splice(pos..end, count, &[], 0);
    }

    /// Builds the form from pairs already in (score, member) order.
    pub fn from_sorted<'a>(pairs: impl IntoIterator<Item = (&'a [u8], f64)>) -> Packed {
        let mut out = vec![0u8; HEADER];
        let mut count: u32 = 0;
        for (member, score) in pairs {
            push_pair(&mut out, member, score);
            count += 1;
        }
        if count == 0 {
            return Packed::new();
        }
        out[..HEADER].copy_from_slice(&count.to_le_bytes());
        Packed {
            buf: out.into_boxed_slice(),
        }
    }
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.iter()
                    .map(|(m, s)| (String::from_utf8_lossy(m).into_owned(), s)),
            )
            .finish()
    }
}

/// The pairs of a [`Packed`], from either end.
pub struct Iter<'a> {
    set: &'a Packed,
    front: usize,
    back: usize,
    remaining: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        let (m, score, next) = self.set.pair_at(self.front);
        self.front = next;
        self.remaining -= 1;
        Some((&self.set.buf[m], score))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        let start = self.set.before_end(self.back).expect("counted");
        self.back = start;
        self.remaining -= 1;
        Some(self.set.get(start))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(score: f64) -> (f64, usize) {
        let mut out = Vec::new();
        push_score(&mut out, score);
        let (back, end) = score_at(&out, 0);
        assert_eq!(
            end,
            out.len(),
            "{score}: the length read is the length written"
        );
        (back, out.len())
    }

    /// Each score takes the fewest bytes its kind allows and reads back exactly (-0 as 0).
    #[test]
    fn scores_take_the_bytes_their_values_need() {
        let cases: &[(f64, usize)] = &[
            (0.0, 1),
            (127.0, 1),
            (128.0, 3),
            (-1.0, 2),
            (-128.0, 2),
            (-129.0, 3),
            (32_767.0, 3),
            (32_768.0, 4),
            (-8_388_608.0, 4),
            (8_388_608.0, 5),
            (2_147_483_647.0, 5),
            (2_147_483_648.0, 7),
            // A timestamp in milliseconds.
            (1_764_547_200_000.0, 7),
            ((1u64 << 47) as f64 - 1.0, 7),
            (-((1u64 << 47) as f64) + 1.0, 7),
            ((1u64 << 47) as f64, 9),
            (1.5, 9),
            (f64::INFINITY, 9),
            (f64::NEG_INFINITY, 9),
            (f64::MAX, 9),
            (f64::MIN_POSITIVE, 9),
        ];
        for &(score, bytes) in cases {
            assert_eq!(round_trip(score), (score, bytes), "{score}");
        }
        let (zero, bytes) = round_trip(-0.0);
        assert!(zero == 0.0 && zero.is_sign_positive() && bytes == 1);
    }

    /// Ten members "member:N" with scores 0..9 take 3 bytes each beyond the member, as Redis's
    /// listpack does.
    #[test]
    fn a_small_integral_pair_costs_its_member_and_three_bytes() {
        let members: Vec<Vec<u8>> = (0..10)
            .map(|i| format!("member:{i}").into_bytes())
            .collect();
        let set = Packed::from_sorted(members.iter().enumerate().map(|(i, m)| (&m[..], i as f64)));
        assert_eq!(set.byte_size(), HEADER + 10 * (8 + 3));
    }

    proptest! {
        /// Any score reads back exactly, and pairs of any sizes walk from both ends.
        #[test]
        fn pairs_walk_both_ways(
            pairs in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 0..300),
                 any::<f64>().prop_filter("a score", |v| !v.is_nan())),
                0..20),
        ) {
            let expected: Vec<(&[u8], f64)> = pairs
                .iter()
                .map(|(m, s)| (&m[..], if *s == 0.0 { 0.0 } else { *s }))
                .collect();
            let set = Packed::from_sorted(expected.iter().copied());
            prop_assert_eq!(set.len(), expected.len());
            let forward: Vec<(&[u8], f64)> = set.iter().collect();
            prop_assert_eq!(&forward, &expected);
            let mut backward: Vec<(&[u8], f64)> = set.iter().rev().collect();
            backward.reverse();
            prop_assert_eq!(&backward, &expected);
        }
    }
}
