//! [`Packed`]: the compact form of a small sorted set (Redis's `listpack` encoding) — its
//! (member, score) pairs back to back in one exactly sized allocation, in (score, member) order.
//!
//! ```text
//! [count: u32 LE] [pair] [pair] …      pair = [member: listpack entry] [score: f64 LE, 8 bytes]
//! ```
//!
//! The member uses the listpack entry codec (forward length, data, backward length), and the
//! score is a fixed 8 bytes, so pairs can be walked from either end: forward by decoding the
//! member's length, backward by stepping over the score and reading the member's backward length.
//! A pair costs its member plus 10 bytes for any member under 128 bytes. Operations are linear,
//! and every change rebuilds the allocation at its new size, which is what Redis pays too and is
//! cheap at the sizes this form is limited to (`zset-max-listpack-entries`, 128 by default).
//!
//! Scores are stored exactly, except that -0 is stored as 0: Redis keeps listpack scores as
//! text or integers, where -0 becomes 0, and ZSCORE shows it.

use crate::listpack::{encode_entry, entry_at, entry_before};
use std::ops::Range;

const HEADER: usize = 4;
const SCORE: usize = 8;

/// A small sorted set; see the module documentation. Positions are byte offsets of pairs.
#[derive(Clone, Default, PartialEq)]
pub struct Packed {
    buf: Box<[u8]>,
}

/// How a score is stored (see the module documentation on -0).
#[inline]
fn stored(score: f64) -> [u8; 8] {
    if score == 0.0 { 0.0f64 } else { score }.to_le_bytes()
}

impl Packed {
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
        let (member, score_at) = entry_at(&self.buf, pos);
        let score = f64::from_le_bytes(
            self.buf[score_at..score_at + SCORE]
                .try_into()
                .expect("8 bytes"),
        );
        (member, score, score_at + SCORE)
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
        Some(entry_before(&self.buf, end - SCORE).0)
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
        encode_entry(&mut pair, member);
        pair.extend_from_slice(&stored(score));
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
            encode_entry(&mut out, member);
            out.extend_from_slice(&stored(score));
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
