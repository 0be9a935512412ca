//! [`Listpack`]: a sequence of byte strings packed into one exactly-sized allocation — the
//! compact form of small hashes and sorted sets (Redis's `listpack` encoding plays this role), and
//! the entry codec that list nodes reuse.
//!
//! Small collections are the common case (a reentrant lock is a hash with one field), and giving
//! each element its own allocation and pointers would cost several times the element itself. Here
//! the elements sit back to back:
//!
//! ```text
//! [count: u32 LE] [entry] [entry] …
//! entry = [len: LEB128 varint] [data: len bytes] [backlen: size of len+data, 7-bit groups, read backwards]
//! ```
//!
//! The forward length lets iteration go front to back, the backward length back to front, so both
//! ends are reachable without an index. A one-byte header and a one-byte trailer suffice for any
//! element under 128 bytes. Every change rebuilds the allocation at its new exact size (one
//! allocation and one copy): fine for the few hundred bytes these forms are limited to, and what
//! keeps them as small as possible. Callers convert to a real hash table or skiplist past their
//! thresholds.

use std::ops::{Deref, Range};

use crate::thin_bytes::ThinBytes;

/// Bytes of the entry count at the start of a non-empty listpack.
pub const HEADER: usize = 4;

/// The bytes Redis's listpack spends on an entry holding `data` (encoding, data, back length):
/// canonical integers take Redis's integer encodings, other strings a 1-, 2- or 5-byte length.
/// Our own codec differs; MEMORY USAGE estimates Redis's allocation with this.
pub fn redis_entry_size(data: &[u8]) -> usize {
    let canonical_int = crate::number::parse_i64(data);
    let head = match canonical_int {
        Some(n) if (0..=127).contains(&n) => 1,
        Some(n) if (-4096..=4095).contains(&n) => 2,
        Some(n) if i16::try_from(n).is_ok() => 3,
        Some(n) if (-(1 << 23)..(1 << 23)).contains(&n) => 4,
        Some(n) if i32::try_from(n).is_ok() => 5,
        Some(_) => 9,
        None if data.len() < 64 => 1 + data.len(),
        None if data.len() < 4096 => 2 + data.len(),
        None => 5 + data.len(),
    };
    let back = match head {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        2_097_152..=268_435_455 => 4,
        _ => 5,
    };
    head + back
}

/// Redis's listpack header (total bytes and element count) and end byte.
pub const REDIS_OVERHEAD: usize = 7;

/// Appends the encoding of one entry holding `data` to `out`.
pub fn encode_entry(out: &mut Vec<u8>, data: &[u8]) {
    let start = out.len();
    push_varint(out, data.len() as u64);
    out.extend_from_slice(data);
    let body = out.len() - start;
    push_backlen(out, body as u64);
}

/// Bytes `encode_entry` would write for `data`.
pub fn entry_size(data: &[u8]) -> usize {
    let body = varint_size(data.len() as u64) + data.len();
    body + backlen_size(body as u64)
}

fn varint_size(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

pub(crate) fn backlen_size(v: u64) -> usize {
    varint_size(v)
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The backward length: 7-bit groups, most significant first, every byte but the first flagged
/// with 0x80, so that a reader starting at the entry's last byte finds the least significant group
/// first and knows whether more bytes precede.
pub(crate) fn push_backlen(out: &mut Vec<u8>, v: u64) {
    let n = backlen_size(v);
    for i in (0..n).rev() {
        let group = ((v >> (7 * i)) & 0x7f) as u8;
        out.push(if i == n - 1 { group } else { group | 0x80 });
    }
}

/// Decodes the entry starting at `pos`: the byte range of its data and where the next entry starts.
pub fn entry_at(buf: &[u8], pos: usize) -> (Range<usize>, usize) {
    let mut len: u64 = 0;
    let mut shift = 0;
    let mut p = pos;
    loop {
        let b = buf[p];
        p += 1;
        len |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let data = p..p + len as usize;
    let body = data.end - pos;
    (data.clone(), data.end + backlen_size(body as u64))
}

/// Writes the encoding of `data` over `dst`, which must be exactly `entry_size(data)` bytes.
fn write_entry(dst: &mut [u8], data: &[u8]) {
    let mut p = 0;
    let mut v = data.len() as u64;
    while v >= 0x80 {
        dst[p] = (v as u8 & 0x7f) | 0x80;
        v >>= 7;
        p += 1;
    }
    dst[p] = v as u8;
    p += 1;
    dst[p..p + data.len()].copy_from_slice(data);
    p += data.len();
    let body = p as u64;
    let n = backlen_size(body);
    for i in (0..n).rev() {
        let group = ((body >> (7 * i)) & 0x7f) as u8;
        dst[p] = if i == n - 1 { group } else { group | 0x80 };
        p += 1;
    }
    debug_assert_eq!(p, dst.len());
}

/// Replaces the bytes `range` of an encoded buffer (one whole entry, or an empty range to insert
/// at) with the encoding of `data`, moving what follows: one memmove, and an allocation only when
/// `buf` must grow past its capacity. An entry of the same size is overwritten in place.
pub fn replace_entry(buf: &mut Vec<u8>, range: Range<usize>, data: &[u8]) {
    let new_len = entry_size(data);
    let old_len = range.len();
    let tail = range.end..buf.len();
    if new_len > old_len {
        buf.resize(buf.len() + new_len - old_len, 0);
        buf.copy_within(tail, range.start + new_len);
    } else if new_len < old_len {
        let shrunk = buf.len() - (old_len - new_len);
        buf.copy_within(tail, range.start + new_len);
        buf.truncate(shrunk);
    }
    write_entry(&mut buf[range.start..range.start + new_len], data);
}

/// Decodes the entry that ends just before `end`: its start and the byte range of its data.
pub fn entry_before(buf: &[u8], end: usize) -> (usize, Range<usize>) {
    let start = start_before(buf, end);
    let (data, _) = entry_at(buf, start);
    (start, data)
}

/// Where the body starts whose backward length ends just before `end`: the backward length read
/// from its last byte, stepped over, and the body's size stepped back.
pub(crate) fn start_before(buf: &[u8], end: usize) -> usize {
    let mut body: u64 = 0;
    let mut shift = 0;
    let mut p = end;
    loop {
        p -= 1;
        let b = buf[p];
        body |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    p - body as usize
}

/// Where a listpack keeps its bytes: a fat `Box<[u8]>` (the default, sixteen bytes beside the
/// value), or a [`ThinBytes`] (eight bytes, the length in the block), for a form that must sit
/// in one word beside others — a set's, whose enum would otherwise box it again.
pub trait PackBytes: Deref<Target = [u8]> + Default + Clone + PartialEq + Eq {
    /// A buffer of exactly `len` bytes written by `fill` (which sees them zeroed).
    fn build(len: usize, fill: impl FnOnce(&mut [u8])) -> Self;
    fn from_vec(raw: Vec<u8>) -> Self;
    fn into_vec(self) -> Vec<u8>;
}

impl PackBytes for Box<[u8]> {
    fn build(len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        let mut out = vec![0u8; len].into_boxed_slice();
        fill(&mut out);
        out
    }

    fn from_vec(raw: Vec<u8>) -> Self {
        raw.into_boxed_slice()
    }

    fn into_vec(self) -> Vec<u8> {
        Vec::from(self)
    }
}

impl PackBytes for ThinBytes {
    fn build(len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        ThinBytes::build(len, fill)
    }

    fn from_vec(raw: Vec<u8>) -> Self {
        ThinBytes::from_slice(&raw)
    }

    fn into_vec(self) -> Vec<u8> {
        self.to_vec()
    }
}

/// A packed sequence of byte strings; see the module documentation.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Listpack<B: PackBytes = Box<[u8]>> {
    /// Empty (no allocation) for an empty listpack, else the header and the entries.
    buf: B,
}

/// A listpack behind one thin pointer (see [`PackBytes`]): a set's compact form.
pub type ThinListpack = Listpack<ThinBytes>;

impl Listpack {
    pub fn new() -> Self {
        Listpack {
            buf: Box::default(),
        }
    }
}

impl<B: PackBytes> Listpack<B> {
    /// Where the value's first heap block starts (or the value itself, when it has none): what
    /// a pipeline's prefetch asks the CPU for before the command that reads it runs.
    #[inline]
    pub fn heap_address(&self) -> *const u8 {
        self.buf.as_ptr()
    }

    /// Builds a listpack from `items` in one allocation.
    pub fn from_items<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut out = vec![0u8; HEADER];
        let mut count: u32 = 0;
        for item in items {
            encode_entry(&mut out, item);
            count += 1;
        }
        if count == 0 {
            return Self::default();
        }
        out[..HEADER].copy_from_slice(&count.to_le_bytes());
        Listpack {
            buf: B::from_vec(out),
        }
    }

    pub fn len(&self) -> usize {
        if self.buf.is_empty() {
            0
        } else {
            u32::from_le_bytes(self.buf[..HEADER].try_into().expect("4 bytes")) as usize
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes allocated.
    pub fn byte_size(&self) -> usize {
        self.buf.len()
    }

    /// The raw bytes (header and entries).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn iter(&self) -> Iter<'_> {
        let (front, back) = if self.buf.is_empty() {
            (0, 0)
        } else {
            (HEADER, self.buf.len())
        };
        Iter {
            buf: &self.buf,
            front,
            back,
            remaining: self.len(),
        }
    }

    /// Entry `index`, walking from the nearer end.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        let len = self.len();
        if index >= len {
            return None;
        }
        if index <= len / 2 {
            self.iter().nth(index)
        } else {
            self.iter().rev().nth(len - 1 - index)
        }
    }

    /// Byte offset where entry `index` starts (or the end, for `index == len`).
    fn offset_of(&self, index: usize) -> usize {
        if self.buf.is_empty() {
            return HEADER;
        }
        let mut pos = HEADER;
        for _ in 0..index {
            pos = entry_at(&self.buf, pos).1;
        }
        pos
    }

    /// Replaces the entries in byte range `range` (covering `removed` entries) with `items`,
    /// building the new buffer at its exact size in one allocation.
    fn splice_bytes(&mut self, range: Range<usize>, removed: usize, items: &[&[u8]]) {
        let count = self.len() - removed + items.len();
        if count == 0 {
            self.buf = B::default();
            return;
        }
        let old: &[u8] = if self.buf.is_empty() {
            &[0u8; HEADER]
        } else {
            &self.buf
        };
        let added: usize = items.iter().map(|i| entry_size(i)).sum();
        let len = old.len() - range.len() + added;
        self.buf = B::build(len, |out| {
            out[..HEADER].copy_from_slice(&(count as u32).to_le_bytes());
            out[HEADER..range.start].copy_from_slice(&old[HEADER..range.start]);
            let mut pos = range.start;
            for item in items {
                let size = entry_size(item);
                write_entry(&mut out[pos..pos + size], item);
                pos += size;
            }
            out[pos..].copy_from_slice(&old[range.end..]);
        });
    }

    /// Replaces `count` entries starting at `index` with `items`.
    pub fn splice(&mut self, index: usize, count: usize, items: &[&[u8]]) {
        let len = self.len();
        assert!(index <= len && count <= len - index, "splice out of bounds");
        let start = self.offset_of(index);
        let mut end = start;
        for _ in 0..count {
            end = entry_at(&self.buf, end).1;
        }
        self.splice_bytes(start..end, count, items);
    }

    pub fn push_back(&mut self, item: &[u8]) {
        let end = if self.buf.is_empty() {
            HEADER
        } else {
            self.buf.len()
        };
        self.splice_bytes(end..end, 0, &[item]);
    }

    pub fn push_front(&mut self, item: &[u8]) {
        self.splice_bytes(HEADER..HEADER, 0, &[item]);
    }

    pub fn insert(&mut self, index: usize, item: &[u8]) {
        self.splice(index, 0, &[item]);
    }

    pub fn remove(&mut self, index: usize) {
        self.splice(index, 1, &[]);
    }

    pub fn replace(&mut self, index: usize, item: &[u8]) {
        self.splice(index, 1, &[item]);
    }

    pub fn pop_front(&mut self) -> Option<Vec<u8>> {
        let first = self.iter().next()?.to_vec();
        self.splice(0, 1, &[]);
        Some(first)
    }

    pub fn pop_back(&mut self) -> Option<Vec<u8>> {
        let last = self.iter().next_back()?.to_vec();
        let len = self.len();
        let (start, _) = entry_before(&self.buf, self.buf.len());
        let end = self.buf.len();
        self.splice_bytes(start..end, 1, &[]);
        debug_assert_eq!(self.len(), len - 1);
        Some(last)
    }

    /// Index of the first entry equal to `item` among entries `index % step == offset`
    /// (step 2 offset 0 finds a field among field/value pairs).
    pub fn position(&self, item: &[u8], step: usize, offset: usize) -> Option<usize> {
        self.iter()
            .enumerate()
            .skip(offset)
            .step_by(step.max(1))
            .find(|(_, e)| *e == item)
            .map(|(i, _)| i)
    }
}

/// Raw access, for structures that edit several entries in one pass with the codec functions
/// (a hash's HSET of many fields, HDEL of many) instead of one rebuild per entry.
impl<B: PackBytes> Listpack<B> {
    /// The bytes as a vector (header and entries; empty for an empty listpack), without copying
    /// a fat buffer.
    pub fn into_raw(self) -> Vec<u8> {
        self.buf.into_vec()
    }

    /// Wraps bytes laid out as this module describes: empty, or a [`HEADER`] holding the entry
    /// count followed by exactly that many entries. A count of zero gives the empty listpack.
    /// The buffer is shrunk to its length (no copy when its capacity is exact).
    pub fn from_raw(raw: Vec<u8>) -> Self {
        if raw.len() <= HEADER || raw[..HEADER] == [0; HEADER] {
            return Self::default();
        }
        let lp = Listpack {
            buf: B::from_vec(raw),
        };
        debug_assert!(
            {
                let (mut pos, mut n) = (HEADER, 0);
                while pos < lp.buf.len() {
                    pos = entry_at(&lp.buf, pos).1;
                    n += 1;
                }
                pos == lp.buf.len() && n == lp.len()
            },
            "the count matches the entries"
        );
        lp
    }
}

impl<B: PackBytes> std::fmt::Debug for Listpack<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|e| String::from_utf8_lossy(e).into_owned()))
            .finish()
    }
}

/// Iterator over a listpack's entries, from either end.
pub struct Iter<'a> {
    buf: &'a [u8],
    front: usize,
    back: usize,
    remaining: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        let (data, next) = entry_at(self.buf, self.front);
        self.front = next;
        self.remaining -= 1;
        Some(&self.buf[data])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<'a> DoubleEndedIterator for Iter<'a> {
    fn next_back(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        let (start, data) = entry_before(self.buf, self.back);
        self.back = start;
        self.remaining -= 1;
        Some(&self.buf[data])
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[derive(Debug, Clone)]
    enum Op {
        PushBack(Vec<u8>),
        PushFront(Vec<u8>),
        PopBack,
        PopFront,
        Insert(usize, Vec<u8>),
        Remove(usize),
        Replace(usize, Vec<u8>),
    }

    fn item() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..10),
            proptest::collection::vec(any::<u8>(), 120..140),
            proptest::collection::vec(any::<u8>(), 16_380..16_390),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            item().prop_map(Op::PushBack),
            item().prop_map(Op::PushFront),
            Just(Op::PopBack),
            Just(Op::PopFront),
            (any::<usize>(), item()).prop_map(|(i, v)| Op::Insert(i, v)),
            any::<usize>().prop_map(Op::Remove),
            (any::<usize>(), item()).prop_map(|(i, v)| Op::Replace(i, v)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// A listpack behaves like a VecDeque of byte strings, read from either end; the thin
        /// form holds the same bytes after every step.
        #[test]
        fn behaves_like_a_deque(ops in proptest::collection::vec(op(), 1..60)) {
            let mut lp = Listpack::new();
            let mut thin = ThinListpack::default();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for op in ops {
                match op {
                    Op::PushBack(v) => { lp.push_back(&v); thin.push_back(&v); model.push_back(v); }
                    Op::PushFront(v) => { lp.push_front(&v); thin.push_front(&v); model.push_front(v); }
                    Op::PopBack => {
                        prop_assert_eq!(thin.pop_back(), model.back().cloned());
                        prop_assert_eq!(lp.pop_back(), model.pop_back());
                    }
                    Op::PopFront => {
                        prop_assert_eq!(thin.pop_front(), model.front().cloned());
                        prop_assert_eq!(lp.pop_front(), model.pop_front());
                    }
                    Op::Insert(i, v) => { let i = i % (model.len() + 1); lp.insert(i, &v); thin.insert(i, &v); model.insert(i, v); }
                    Op::Remove(i) => if !model.is_empty() { let i = i % model.len(); lp.remove(i); thin.remove(i); model.remove(i); },
                    Op::Replace(i, v) => if !model.is_empty() { let i = i % model.len(); lp.replace(i, &v); thin.replace(i, &v); model[i] = v; },
                }
                prop_assert_eq!(thin.as_bytes(), lp.as_bytes());
                prop_assert_eq!(lp.len(), model.len());
                let forward: Vec<&[u8]> = lp.iter().collect();
                let expected: Vec<&[u8]> = model.iter().map(|v| v.as_slice()).collect();
                prop_assert_eq!(&forward, &expected);
                let backward: Vec<&[u8]> = lp.iter().rev().collect();
                let expected_back: Vec<&[u8]> = model.iter().rev().map(|v| v.as_slice()).collect();
                prop_assert_eq!(backward, expected_back);
                for (i, v) in model.iter().enumerate() {
                    prop_assert_eq!(lp.get(i), Some(v.as_slice()));
                }
                prop_assert_eq!(lp.byte_size(), if model.is_empty() { 0 } else { HEADER + model.iter().map(|v| entry_size(v)).sum::<usize>() });
            }
        }
    }

    proptest! {
        /// Editing raw bytes with `replace_entry` (insert, replace, grow, shrink) gives the same
        /// listpack as the splice operations.
        #[test]
        fn raw_edits_match_splices(items in proptest::collection::vec(item(), 1..8),
                                   edits in proptest::collection::vec((any::<usize>(), item(), any::<bool>()), 1..8)) {
            let mut lp: Listpack = Listpack::from_items(items.iter().map(|v| v.as_slice()));
            for (at, data, insert) in edits {
                let len = lp.len();
                let mut raw = lp.clone().into_raw();
                let index = at % (len + usize::from(insert));
                let start = lp.offset_of(index);
                let end = if insert { start } else { entry_at(&raw, start).1 };
                replace_entry(&mut raw, start..end, &data);
                let count = len + usize::from(insert);
                raw[..HEADER].copy_from_slice(&(count as u32).to_le_bytes());
                if insert { lp.insert(index, &data) } else { lp.replace(index, &data) }
                prop_assert_eq!(Listpack::from_raw(raw), lp.clone());
            }
        }
    }

    #[test]
    fn small_entries_cost_two_bytes_of_framing() {
        let lp: Listpack = Listpack::from_items([&b"field:0"[..], b"value:0"]);
        assert_eq!(lp.byte_size(), HEADER + 2 * (1 + 7 + 1));
        assert_eq!(lp.position(b"value:0", 2, 1), Some(1));
        assert_eq!(lp.position(b"value:0", 2, 0), None);
        assert_eq!(Listpack::new().byte_size(), 0);
        assert_eq!(std::mem::size_of::<Listpack>(), 16);
        assert_eq!(std::mem::size_of::<ThinListpack>(), 8);
    }
}
