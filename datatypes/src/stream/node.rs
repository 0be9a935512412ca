//! [`Node`]: up to `stream-node-max-entries` consecutive stream entries packed into one byte
//! buffer — the unit a stream's tree is made of (Redis keeps a listpack per radix-tree node for
//! the same reason: a stream entry is a few small strings, and a separate allocation per entry
//! and per field would cost several times the data).
//!
//! The buffer starts with the *master fields* (the field names of the node's first entry) and
//! then holds the entries back to back:
//!
//! ```text
//! master = [nfields: varint] ([len: varint] [bytes])*
//! entry  = [flags: u8] [ms delta: varint] [seq: varint]
//!          same fields:  ([len] [value])*            (one value per master field)
//!          other fields: [nfields] ([len] [field] [len] [value])*
//! ```
//!
//! IDs are stored relative to the node's first ID (its key in the tree): `ms delta` is the
//! millisecond difference, and `seq` the sequence difference while the millisecond is the
//! master's, the raw sequence afterwards — so an entry of `XADD s * f1 v1 f2 v2` costs ten-odd
//! bytes. Deleting an entry only sets its flag (as Redis does): iteration skips it, the node is
//! dropped when no live entry remains. The node also keeps the size Redis's listpack would have,
//! because Redis starts a new node when that size passes `stream-node-max-bytes`, and the node
//! boundaries are visible (approximate trimming removes whole nodes only).

use super::StreamId;
use crate::listpack::redis_entry_size;

pub(crate) const FLAG_DELETED: u8 = 1;
pub(crate) const FLAG_SAME_FIELDS: u8 = 2;

/// A packed run of entries (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Node {
    pub(crate) buf: Vec<u8>,
    /// Entries not deleted.
    pub(crate) live: u32,
    /// Entries flagged deleted, still in the buffer.
    pub(crate) deleted: u32,
    /// Bytes of the master fields at the head of `buf`.
    master_len: u32,
    /// Number of master fields.
    master_fields: u32,
    /// Offset of the last entry in `buf`.
    last_at: u32,
    /// Redis's listpack size for this node without its count/deleted integers (added on demand,
    /// they change size as they grow).
    redis_body: u32,
}

pub(crate) fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

#[inline]
fn read_str<'a>(buf: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let len = read_varint(buf, pos) as usize;
    let s = &buf[*pos..*pos + len];
    *pos += len;
    s
}

fn push_str(out: &mut Vec<u8>, s: &[u8]) {
    push_varint(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Redis's listpack bytes for an integer element (encoding byte(s) plus a one-byte back length).
fn redis_int_size(n: i64) -> usize {
    let head = match n {
        0..=127 => 1,
        -4096..=4095 => 2,
        _ if i16::try_from(n).is_ok() => 3,
        _ if (-(1 << 23)..(1 << 23)).contains(&n) => 4,
        _ if i32::try_from(n).is_ok() => 5,
        _ => 9,
    };
    head + 1
}

/// One entry of a node, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct EntryRef<'a> {
    pub id: StreamId,
    node: &'a Node,
    /// Offset just past the ID, where the fields or values start.
    body: usize,
    flags: u8,
}

impl<'a> EntryRef<'a> {
    /// Number of field-value pairs.
    pub fn field_count(&self) -> usize {
        if self.flags & FLAG_SAME_FIELDS != 0 {
            self.node.master_fields as usize
        } else {
            let mut pos = self.body;
            read_varint(&self.node.buf, &mut pos) as usize
        }
    }

    /// The entry's field-value pairs, in order.
    pub fn fields(&self) -> FieldIter<'a> {
        let buf = &self.node.buf;
        if self.flags & FLAG_SAME_FIELDS != 0 {
            let mut master = 0;
            let n = read_varint(buf, &mut master) as usize;
            FieldIter {
                buf,
                pos: self.body,
                master: Some(master),
                left: n,
            }
        } else {
            let mut pos = self.body;
            let n = read_varint(buf, &mut pos) as usize;
            FieldIter {
                buf,
                pos,
                master: None,
                left: n,
            }
        }
    }
}

/// The field-value pairs of an entry.
pub struct FieldIter<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Where the next master field name is, for a same-fields entry.
    master: Option<usize>,
    left: usize,
}

impl<'a> Iterator for FieldIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let field = match &mut self.master {
            Some(at) => read_str(self.buf, at),
            None => read_str(self.buf, &mut self.pos),
        };
        let value = read_str(self.buf, &mut self.pos);
        Some((field, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl Node {
    /// A node whose first entry is `id` with `pairs` (field, value, field, value…).
    pub(crate) fn new<T: AsRef<[u8]>>(id: StreamId, pairs: &[T]) -> Node {
        let mut node = Node::default();
        let nfields = pairs.len() / 2;
        push_varint(&mut node.buf, nfields as u64);
        // Redis: deleted count's header is added in `redis_bytes`; num-fields, fields, 0.
        let mut redis = redis_int_size(nfields as i64) + redis_int_size(0);
        for pair in pairs.chunks(2) {
            push_str(&mut node.buf, pair[0].as_ref());
            redis += redis_entry_size(pair[0].as_ref());
        }
        node.master_len = node.buf.len() as u32;
        node.master_fields = nfields as u32;
        node.redis_body = redis as u32;
        node.push(id, id, pairs);
        node
    }

    /// Redis's listpack size of this node (what `stream-node-max-bytes` is compared with).
    pub fn redis_bytes(&self) -> usize {
        crate::listpack::REDIS_OVERHEAD
            + redis_int_size(i64::from(self.live))
            + redis_int_size(i64::from(self.deleted))
            + self.redis_body as usize
    }

    /// Entries in the buffer, deleted ones included.
    pub fn total(&self) -> u32 {
        self.live + self.deleted
    }

    pub fn live(&self) -> u32 {
        self.live
    }

    /// Bytes held (for MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity() + std::mem::size_of::<Node>()
    }

    /// Appends entry `id` (greater than every ID in the node); `master` is the node's first ID.
    pub(crate) fn push<T: AsRef<[u8]>>(&mut self, master: StreamId, id: StreamId, pairs: &[T]) {
        let at = self.buf.len();
        let nfields = pairs.len() / 2;
        let same = nfields == self.master_fields as usize && {
            let mut pos = 0;
            read_varint(&self.buf, &mut pos);
            pairs
                .chunks(2)
                .all(|pair| read_str(&self.buf, &mut pos) == pair[0].as_ref())
        };
        let ms_delta = id.ms - master.ms;
        let seq = if ms_delta == 0 {
            id.seq - master.seq
        } else {
            id.seq
        };
        self.buf.push(if same { FLAG_SAME_FIELDS } else { 0 });
        push_varint(&mut self.buf, ms_delta);
        push_varint(&mut self.buf, seq);
        // Redis: flags, ms-diff, seq-diff, [num-fields], [field] value…, lp-count.
        let mut redis = redis_int_size(if same { 2 } else { 0 })
            + redis_int_size(ms_delta as i64)
            + redis_int_size(id.seq.wrapping_sub(master.seq) as i64);
        if !same {
            push_varint(&mut self.buf, nfields as u64);
            redis += redis_int_size(nfields as i64);
        }
        for pair in pairs.chunks(2) {
            if !same {
                push_str(&mut self.buf, pair[0].as_ref());
                redis += redis_entry_size(pair[0].as_ref());
            }
            push_str(&mut self.buf, pair[1].as_ref());
            redis += redis_entry_size(pair[1].as_ref());
        }
        let lp_count = if same { nfields + 3 } else { nfields * 2 + 4 };
        redis += redis_int_size(lp_count as i64);
        self.redis_body += redis as u32;
        self.last_at = at as u32;
        self.live += 1;
    }

    /// The elements of the listpack Redis keeps for this node, integers as decimal text: the
    /// master entry (live count, deleted count, the master fields, a 0 terminator), then every
    /// entry, deleted ones included (flags, ms and seq differences from `master`, the fields
    /// unless they are the master's, the values, the entry's element count). An RDB file stores
    /// exactly this listpack.
    pub fn redis_elements(&self, master: StreamId) -> Vec<Vec<u8>> {
        let int = |n: i64| n.to_string().into_bytes();
        let mut out = vec![int(i64::from(self.live)), int(i64::from(self.deleted))];
        let mut pos = 0;
        let nfields = read_varint(&self.buf, &mut pos);
        out.push(int(nfields as i64));
        for _ in 0..nfields {
            out.push(read_str(&self.buf, &mut pos).to_vec());
        }
        out.push(int(0));
        for (_, e) in self.raw_entries(master) {
            let same = e.flags & FLAG_SAME_FIELDS != 0;
            out.push(int(i64::from(e.flags)));
            out.push(int(e.id.ms.wrapping_sub(master.ms) as i64));
            out.push(int(e.id.seq.wrapping_sub(master.seq) as i64));
            let n = e.field_count();
            if !same {
                out.push(int(n as i64));
            }
            for (f, v) in e.fields() {
                if !same {
                    out.push(f.to_vec());
                }
                out.push(v.to_vec());
            }
            out.push(int(if same { n + 3 } else { n * 2 + 4 } as i64));
        }
        out
    }

    /// The node whose Redis listpack has these elements (see [`Node::redis_elements`]), keyed
    /// by `master`; `None` if they do not form a valid node (counts that disagree with the
    /// entries, IDs out of order, malformed numbers).
    pub fn from_redis_elements(master: StreamId, items: &[Vec<u8>]) -> Option<Node> {
        let (node, whole) = Self::read_redis_elements(master, items)?;
        whole.then_some(node)
    }

    /// The entries of a node's Redis listpack up to the first that does not form a valid entry
    /// (what can be kept of a payload restored without deep sanitization); `None` if not even
    /// the master entry and one entry can be read.
    pub fn from_redis_elements_prefix(master: StreamId, items: &[Vec<u8>]) -> Option<Node> {
        let (node, _) = Self::read_redis_elements(master, items)?;
        (node.live + node.deleted > 0).then_some(node)
    }

    /// The node read from a Redis listpack's elements as far as they form valid entries, and
    /// whether that is all of them with the counts the master entry declares.
    fn read_redis_elements(master: StreamId, items: &[Vec<u8>]) -> Option<(Node, bool)> {
        let mut it = items.iter().map(Vec::as_slice);
        let live = redis_int(it.next()?)?;
        let deleted = redis_int(it.next()?)?;
        let nfields = usize::try_from(redis_int(it.next()?)?).ok()?;
        let mut fields = Vec::with_capacity(nfields.min(1024));
        for _ in 0..nfields {
            fields.push(it.next()?.to_vec());
        }
        if redis_int(it.next()?)? != 0 {
            return None;
        }
        let mut node = Node::default();
        push_varint(&mut node.buf, nfields as u64);
        let mut redis = redis_int_size(nfields as i64) + redis_int_size(0);
        for f in &fields {
            push_str(&mut node.buf, f);
            redis += redis_entry_size(f);
        }
        node.master_len = node.buf.len() as u32;
        node.master_fields = nfields as u32;
        node.redis_body = redis as u32;
        let mut last: Option<StreamId> = None;
        while it.len() > 0 {
            let Some((flags, id, pairs)) = next_redis_entry(&mut it, master, &fields) else {
                return Some((node, false));
            };
            if last.is_some_and(|l| id <= l) {
                return Some((node, false));
            }
            node.push(master, id, &pairs);
            if flags & i64::from(FLAG_DELETED) != 0 {
                node.mark_deleted(node.last_at as usize);
            }
            last = Some(id);
        }
        let whole =
            last.is_some() && i64::from(node.live) == live && i64::from(node.deleted) == deleted;
        Some((node, whole))
    }

    /// Frees spare capacity (a node that will not grow anymore).
    pub(crate) fn shrink(&mut self) {
        self.buf.shrink_to_fit();
    }

    /// The entry at `pos` and the offset of the next one.
    #[inline]
    fn entry_at(&self, master: StreamId, pos: usize) -> (EntryRef<'_>, usize) {
        let buf = &self.buf;
        let mut p = pos;
        let flags = buf[p];
        p += 1;
        let ms_delta = read_varint(buf, &mut p);
        let seq = read_varint(buf, &mut p);
        let id = if ms_delta == 0 {
            StreamId::new(master.ms, master.seq.wrapping_add(seq))
        } else {
            StreamId::new(master.ms.wrapping_add(ms_delta), seq)
        };
        let body = p;
        if flags & FLAG_SAME_FIELDS != 0 {
            for _ in 0..self.master_fields {
                let len = read_varint(buf, &mut p) as usize;
                p += len;
            }
        } else {
            let n = read_varint(buf, &mut p);
            for _ in 0..n * 2 {
                let len = read_varint(buf, &mut p) as usize;
                p += len;
            }
        }
        (
            EntryRef {
                id,
                node: self,
                body,
                flags,
            },
            p,
        )
    }

    /// Every entry (deleted ones too) with its offset, in order.
    pub(crate) fn raw_entries(&self, master: StreamId) -> RawEntries<'_> {
        RawEntries {
            node: self,
            master,
            pos: self.master_len as usize,
        }
    }

    /// Offsets of every entry, in order (for walking a node backwards).
    pub(crate) fn offsets(&self, master: StreamId) -> Vec<u32> {
        self.raw_entries(master).map(|(at, _)| at as u32).collect()
    }

    pub(crate) fn entry(&self, master: StreamId, at: usize) -> EntryRef<'_> {
        self.entry_at(master, at).0
    }

    /// The last entry's ID, deleted or not.
    pub fn last_id(&self, master: StreamId) -> StreamId {
        self.entry_at(master, self.last_at as usize).0.id
    }

    /// Flags the entry at `at` deleted (it must be live).
    pub(crate) fn mark_deleted(&mut self, at: usize) {
        debug_assert!(self.buf[at] & FLAG_DELETED == 0);
        // Redis rewrites the flags integer: 2 → 3 or 0 → 1, both one byte.
        self.buf[at] |= FLAG_DELETED;
        self.live -= 1;
        self.deleted += 1;
    }
}

impl EntryRef<'_> {
    pub fn is_deleted(&self) -> bool {
        self.flags & FLAG_DELETED != 0
    }
}

/// Entries of a node with their offsets.
pub(crate) struct RawEntries<'a> {
    node: &'a Node,
    master: StreamId,
    pos: usize,
}

impl<'a> Iterator for RawEntries<'a> {
    type Item = (usize, EntryRef<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.node.buf.len() {
            return None;
        }
        let at = self.pos;
        let (entry, next) = self.node.entry_at(self.master, at);
        self.pos = next;
        Some((at, entry))
    }
}

/// A number as a Redis listpack holds it (its decimal text here).
fn redis_int(b: &[u8]) -> Option<i64> {
    crate::number::parse_i64(b)
}

/// The next entry of a node's Redis listpack elements: its flags, ID and field/value pairs;
/// `None` if the elements do not form one (bad flags or numbers, an ID before the master's,
/// too few elements, a count that disagrees).
fn next_redis_entry<'a, I: Iterator<Item = &'a [u8]>>(
    it: &mut I,
    master: StreamId,
    fields: &'a [Vec<u8>],
) -> Option<(i64, StreamId, Vec<&'a [u8]>)> {
    let flags = redis_int(it.next()?)?;
    if !(0..=3).contains(&flags) {
        return None;
    }
    let ms = master.ms.wrapping_add(redis_int(it.next()?)? as u64);
    let seq = master.seq.wrapping_add(redis_int(it.next()?)? as u64);
    let id = StreamId::new(ms, seq);
    if id < master {
        return None;
    }
    let same = flags & i64::from(FLAG_SAME_FIELDS) != 0;
    let n = if same {
        fields.len()
    } else {
        usize::try_from(redis_int(it.next()?)?).ok()?
    };
    let mut pairs: Vec<&[u8]> = Vec::with_capacity(2 * n.min(1024));
    if same {
        for field in fields {
            pairs.push(field);
            pairs.push(it.next()?);
        }
    } else {
        for _ in 0..n {
            pairs.push(it.next()?);
            pairs.push(it.next()?);
        }
    }
    let lp_count = redis_int(it.next()?)?;
    if lp_count != if same { n + 3 } else { n * 2 + 4 } as i64 {
        return None;
    }
    Some((flags, id, pairs))
}
