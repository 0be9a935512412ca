//! The many-node form of a list ([`Nodes`]): a deque of packed nodes, Redis's `quicklist`, for
//! lists past one small node (the module above keeps a list of one small node in one block).
//! Everything about node boundaries lives here — fills, splits, merges, compression — so that
//! node boundaries fall where Redis's do.

use std::cell::{Cell, OnceCell};
use std::collections::VecDeque;
use std::ops::Range;

use super::{Iter, ListEncoding};
use crate::listpack::{
    encode_entry, entry_at, entry_before, entry_size, redis_entry_size, REDIS_OVERHEAD,
};

/// Byte limits of the negative fill levels: -1 = 4 KB … -5 = 64 KB (beyond -5 stays at 64 KB).
const SIZE_LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// Positive fills count entries, but a node never grows past this many bytes (Redis's safety
/// limit) unless it holds a single element.
const SAFETY_LIMIT: usize = 8192;
/// Redis's default `list-max-listpack-size`: 8 KB nodes.
pub const DEFAULT_FILL: i32 = -2;

/// Redis's estimate of what one more entry of `len` bytes adds to a node's listpack (an
/// overestimate: its string encoding and back length, plus slack).
pub(super) const SIZE_ESTIMATE_OVERHEAD: usize = 8;

/// Whether a node whose listpack would be `new_sz` bytes in Redis, `count` entries after the
/// change (Redis: `count` before an insert, the merged count for a merge, with `<` and `<=`
/// folded into `count_ok`), stays within `fill` — Redis 7.0's `_quicklistNodeAllowInsert` /
/// `_quicklistNodeAllowMerge` decision: a negative fill is a size level (-1..-5; beyond -5 no
/// level applies, and only the count rule is left, which a negative fill never passes); a
/// positive fill counts entries under the 8 KB safety limit.
pub(super) fn redis_fill_allows(
    fill: i32,
    new_sz: usize,
    count_ok: impl FnOnce(usize) -> bool,
) -> bool {
    if fill < 0 {
        let offset = (-(fill as i64) - 1) as usize;
        if offset < SIZE_LEVELS.len() && new_sz <= SIZE_LEVELS[offset] {
            return true;
        }
    }
    new_sz <= SAFETY_LIMIT && fill >= 0 && count_ok(fill as usize)
}

/// Redis's `quicklistNodeLimit`: the bytes and entries one node may hold under `fill`
/// (`usize::MAX` for the bound that does not apply).
pub(super) fn node_limits(fill: i32) -> (usize, usize) {
    if fill >= 0 {
        (usize::MAX, (fill as usize).max(1))
    } else {
        (SIZE_LEVELS[level(fill)], usize::MAX)
    }
}

/// Redis's `quicklistNodeExceedsLimit`: whether a node of `bytes` and `count` entries passes
/// `fill` (a count limit is also held to the 8 KB safety limit).
pub(super) fn node_exceeds_limit(fill: i32, bytes: usize, count: usize) -> bool {
    let (size_limit, count_limit) = node_limits(fill);
    if size_limit != usize::MAX {
        bytes > size_limit
    } else {
        bytes > SAFETY_LIMIT || count > count_limit
    }
}

fn level(fill: i32) -> usize {
    ((-(fill as i64)) - 1).clamp(0, SIZE_LEVELS.len() as i64 - 1) as usize
}

/// The most bytes a node of this fill normally reaches: how far spare room is worth growing.
pub(super) fn byte_limit(fill: i32) -> usize {
    if fill < 0 {
        SIZE_LEVELS[level(fill)]
    } else {
        SAFETY_LIMIT
    }
}

fn varint_size(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Writes the entry encoding of `data` into `dst`, which is exactly `entry_size(data)` bytes:
/// the same bytes [`encode_entry`] appends, for writing into the gap before a node's first entry.
pub(super) fn write_entry(dst: &mut [u8], data: &[u8]) {
    let mut p = 0;
    let mut v = data.len();
    while v >= 0x80 {
        dst[p] = (v as u8 & 0x7f) | 0x80;
        v >>= 7;
        p += 1;
    }
    dst[p] = v as u8;
    p += 1;
    dst[p..p + data.len()].copy_from_slice(data);
    p += data.len();
    let body = p;
    let n = varint_size(body);
    for i in (0..n).rev() {
        let group = ((body >> (7 * i)) & 0x7f) as u8;
        dst[p] = if i == n - 1 { group } else { group | 0x80 };
        p += 1;
    }
    debug_assert_eq!(p, dst.len());
}

/// Redis's default packed threshold: elements of 1 GB or more get a plain node.
const DEFAULT_PACKED_THRESHOLD: usize = 1 << 30;
/// Redis's largest packed threshold: 4 GB less 1 MB.
pub(super) const MAX_PACKED_THRESHOLD: u64 = (1 << 32) - (1 << 20);

std::thread_local! {
    /// The packed threshold (DEBUG QUICKLIST-PACKED-THRESHOLD). Global in Redis; here it belongs
    /// to the thread that owns the data, so that servers (and tests) in one process do not
    /// share it.
    static PACKED_THRESHOLD: std::cell::Cell<usize> =
        const { std::cell::Cell::new(DEFAULT_PACKED_THRESHOLD) };
}

/// Sets the size from which an element gets a *plain* node of its own, as Redis's
/// `quicklistisSetPackedThreshold`: 0 restores the 1 GB default; above 4 GB less 1 MB is refused
/// (`false`).
pub fn set_packed_threshold(size: u64) -> bool {
    if size > MAX_PACKED_THRESHOLD {
        return false;
    }
    let size = if size == 0 {
        DEFAULT_PACKED_THRESHOLD
    } else {
        size as usize
    };
    PACKED_THRESHOLD.with(|t| t.set(size));
    true
}

/// Whether `item` is big enough for a plain node.
pub(super) fn is_plain(item: &[u8]) -> bool {
    item.len() >= PACKED_THRESHOLD.with(|t| t.get())
}

/// Redis's compression thresholds: a node under 48 bytes is not worth compressing, and a
/// compressed node must save more than 8 bytes, else it stays raw.
const MIN_COMPRESS_BYTES: usize = 48;
pub(super) const MIN_COMPRESS_IMPROVE: usize = 8;
/// Redis's largest compress depth (its quicklist keeps the depth in 16 bits).
pub const MAX_COMPRESS_DEPTH: usize = (1 << 16) - 1;
/// The header of a compressed node's allocation in Redis (`quicklistLZF`'s size field), for
/// MEMORY USAGE.
pub(super) const REDIS_LZF_HEADER: usize = 8;

/// One node: `count` entries packed in `buf[start..]`, with spare room before `start` and in the
/// vector's unused capacity. A *plain* node holds one element that was at least the packed
/// threshold when it came in; like Redis's, it never takes another element nor merges.
///
/// An interior node of a list with a compress depth may be LZF-compressed (`lzf`): `buf` is
/// then empty and `start` 0, and the entries come back, at the same offsets, from
/// [`Node::bytes`] (reads) or [`Node::make_raw`] (before any change).
#[derive(Clone, Default)]
pub(super) struct Node {
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    pub(super) count: usize,
    pub(super) plain: bool,
    pub(super) lzf: Option<Box<Compressed>>,
    /// The bytes of the listpack Redis would hold for these entries (header and end byte
    /// included; the element's size for a plain node): what Redis's fill decisions measure.
    pub(super) redis_sz: usize,
}

/// Redis's listpack bytes of the entries in `buf[from..to]`.
pub(super) fn redis_bytes_of(buf: &[u8], from: usize, to: usize) -> usize {
    let mut pos = from;
    let mut total = 0;
    while pos < to {
        let (data, next) = entry_at(buf, pos);
        total += redis_entry_size(&buf[data]);
        pos = next;
    }
    total
}

/// A compressed node's entries.
#[derive(Clone)]
pub(super) struct Compressed {
    pub(super) data: Box<[u8]>,
    /// Bytes of entries once decompressed.
    pub(super) raw_len: usize,
    /// The entries, decompressed by a read through `&self` (iterators hand out slices of them,
    /// so they must outlive the read); dropped again by [`Quicklist::release_decompressed`] or
    /// taken over by the next change of the node. Redis likewise decompresses a node for the
    /// access and compresses it again afterwards.
    pub(super) raw: OnceCell<Box<[u8]>>,
}

impl Compressed {
    fn raw(&self) -> &[u8] {
        self.raw.get_or_init(|| {
            crate::lzf::decompress(&self.data, self.raw_len)
                .expect("a node decompresses to its recorded size")
                .into_boxed_slice()
        })
    }
}

/// Byte offset of entry `i` of the `count` entries in `buf[start..]` (`i == count`: the end),
/// walking from the nearer end.
pub(super) fn offset_in(buf: &[u8], start: usize, count: usize, i: usize) -> usize {
    if i <= count / 2 {
        let mut pos = start;
        for _ in 0..i {
            pos = entry_at(buf, pos).1;
        }
        pos
    } else {
        let mut pos = buf.len();
        for _ in i..count {
            pos = entry_before(buf, pos).0;
        }
        pos
    }
}

impl Node {
    fn with_entry(item: &[u8]) -> Node {
        Node::with_entry_room(item, 0, true)
    }

    /// A node of one entry with `room` spare bytes where the entries still to come will go:
    /// after it (`back`) or before it. A plain node (one big element) gets none.
    fn with_entry_room(item: &[u8], room: usize, back: bool) -> Node {
        let plain = is_plain(item);
        let room = if plain { 0 } else { room };
        let mut buf = Vec::with_capacity(entry_size(item) + room);
        let start = if back {
            0
        } else {
            buf.resize(room, 0);
            room
        };
        encode_entry(&mut buf, item);
        Node {
            buf,
            start,
            count: 1,
            plain,
            lzf: None,
            redis_sz: if plain {
                item.len()
            } else {
                REDIS_OVERHEAD + redis_entry_size(item)
            },
        }
    }

    /// The buffer the entries live in, at `start..`: decompressed if need be.
    #[inline]
    pub(super) fn bytes(&self) -> &[u8] {
        match &self.lzf {
            None => &self.buf,
            Some(c) => c.raw(),
        }
    }

    /// Bytes of entries (uncompressed).
    fn size(&self) -> usize {
        match &self.lzf {
            None => self.buf.len() - self.start,
            Some(c) => c.raw_len,
        }
    }

    /// Makes the node raw before a change: one predictable branch when it already is.
    #[inline]
    fn make_raw(&mut self) {
        if self.lzf.is_some() {
            self.decompress();
        }
    }

    #[cold]
    fn decompress(&mut self) {
        let Some(c) = self.lzf.take() else { return };
        let raw_len = c.raw_len;
        self.buf = match c.raw.into_inner() {
            Some(raw) => raw.into_vec(),
            None => crate::lzf::decompress(&c.data, raw_len)
                .expect("a node decompresses to its recorded size"),
        };
        self.start = 0;
    }

    /// Compresses the node as Redis does, unless it is too small or would not shrink enough.
    fn compress(&mut self) {
        if self.lzf.is_some() {
            return;
        }
        let size = self.size();
        if size < MIN_COMPRESS_BYTES {
            return;
        }
        // As Redis: compressed within the node's own size, kept only if that saves more than
        // MIN_COMPRESS_IMPROVE bytes.
        let packed = crate::lzf::compress(&self.buf[self.start..], size)
            .filter(|data| data.len() + MIN_COMPRESS_IMPROVE < size);
        if let Some(data) = packed {
            self.lzf = Some(Box::new(Compressed {
                data: data.into_boxed_slice(),
                raw_len: size,
                raw: OnceCell::new(),
            }));
            self.buf = Vec::new();
            self.start = 0;
        }
    }

    /// Drops the entries a read decompressed, keeping only the compressed form.
    fn release(&mut self) {
        if let Some(c) = &mut self.lzf {
            c.raw.take();
        }
    }

    fn push_back(&mut self, item: &[u8], limit: usize) {
        self.make_raw();
        let need = entry_size(item);
        if self.buf.capacity() - self.buf.len() < need {
            // Grow geometrically, but not (much) past what the node may hold.
            let size = self.size();
            let room = limit.saturating_sub(size + need);
            self.buf.reserve_exact(need + size.min(room));
        }
        encode_entry(&mut self.buf, item);
        self.count += 1;
        self.redis_sz += redis_entry_size(item);
    }

    fn push_front(&mut self, item: &[u8], limit: usize) {
        self.make_raw();
        let need = entry_size(item);
        if self.start < need {
            let size = self.size();
            let room = limit.saturating_sub(size + need);
            let gap = need + size.min(room);
            let mut buf = Vec::with_capacity(gap + size);
            buf.resize(gap, 0);
            buf.extend_from_slice(&self.buf[self.start..]);
            self.buf = buf;
            self.start = gap;
        }
        let at = self.start - need;
        write_entry(&mut self.buf[at..self.start], item);
        self.start = at;
        self.count += 1;
        self.redis_sz += redis_entry_size(item);
    }

    /// Byte offset of entry `i` (`i == count`: the end), walking from the nearer end.
    fn offset_of(&self, i: usize) -> usize {
        offset_in(self.bytes(), self.start, self.count, i)
    }

    fn get(&self, i: usize) -> &[u8] {
        let buf = self.bytes();
        let (data, _) = entry_at(buf, self.offset_of(i));
        &buf[data]
    }

    /// Replaces the entries in bytes `from..to` (`removed` of them) with `items`, rebuilding the
    /// node at its exact size.
    fn splice(&mut self, from: usize, to: usize, removed: usize, items: &[&[u8]]) {
        self.make_raw();
        if self.plain {
            self.redis_sz = items.iter().map(|i| i.len()).sum();
        } else {
            self.redis_sz -= redis_bytes_of(&self.buf, from, to);
            self.redis_sz += items.iter().map(|i| redis_entry_size(i)).sum::<usize>();
        }
        let added: usize = items.iter().map(|i| entry_size(i)).sum();
        let mut buf = Vec::with_capacity(self.size() - (to - from) + added);
        buf.extend_from_slice(&self.buf[self.start..from]);
        for item in items {
            encode_entry(&mut buf, item);
        }
        buf.extend_from_slice(&self.buf[to..]);
        self.buf = buf;
        self.start = 0;
        self.count = self.count - removed + items.len();
    }

    /// Splits off entries `i..` into a new node; `self` keeps `..i`.
    fn split_off(&mut self, i: usize) -> Node {
        self.make_raw();
        let at = self.offset_of(i);
        let moved = redis_bytes_of(&self.buf, at, self.buf.len());
        let right = Node {
            buf: self.buf[at..].to_vec(),
            start: 0,
            count: self.count - i,
            plain: false,
            lzf: None,
            redis_sz: REDIS_OVERHEAD + moved,
        };
        self.redis_sz -= moved;
        self.buf.truncate(at);
        self.buf.shrink_to_fit();
        self.count = i;
        right
    }

    /// Appends all of `other`'s entries.
    fn append(&mut self, other: &Node) {
        self.make_raw();
        self.buf.extend_from_slice(&other.bytes()[other.start..]);
        self.count += other.count;
        self.redis_sz += other.redis_sz - REDIS_OVERHEAD;
    }

    /// Drops the first `n` entries (fewer than `count`).
    fn drop_front(&mut self, n: usize) {
        self.make_raw();
        let from = self.start;
        for _ in 0..n {
            self.start = entry_at(&self.buf, self.start).1;
        }
        self.redis_sz -= redis_bytes_of(&self.buf, from, self.start);
        self.count -= n;
    }

    /// Drops the last `n` entries (fewer than `count`).
    fn drop_back(&mut self, n: usize) {
        self.make_raw();
        let mut end = self.buf.len();
        for _ in 0..n {
            end = entry_before(&self.buf, end).0;
        }
        self.redis_sz -= redis_bytes_of(&self.buf, end, self.buf.len());
        self.buf.truncate(end);
        self.count -= n;
    }
}

/// A list of byte strings: nodes of packed entries, pushed and popped at both ends.
#[derive(Clone)]
pub(super) struct Nodes {
    pub(super) nodes: VecDeque<Node>,
    pub(super) len: usize,
    /// `list-max-listpack-size` when the list was created (as in Redis, a later change of the
    /// setting does not reshape existing lists).
    pub(super) fill: i32,
    /// `list-compress-depth` when the list was created: this many nodes at each end stay raw,
    /// the ones between are compressed as they pass that boundary or are changed (0: never).
    pub(super) compress: usize,
    /// Set by a read that may have decompressed nodes (only with a compress depth), so that
    /// [`Quicklist::release_decompressed`] knows whether there is anything to drop.
    decompressed: Cell<bool>,
    /// What OBJECT ENCODING reports (see [`ListEncoding`]).
    pub(super) encoding: ListEncoding,
}

impl Nodes {
    /// An empty list whose nodes follow `fill`, with `depth` raw nodes at each end and the
    /// others LZF-compressed (`list-compress-depth`; capped as Redis caps it).
    pub fn with_options(fill: i32, depth: usize) -> Self {
        Nodes {
            nodes: VecDeque::new(),
            len: 0,
            fill,
            compress: depth.min(MAX_COMPRESS_DEPTH),
            decompressed: Cell::new(false),
            encoding: ListEncoding::Quicklist70,
        }
    }

    /// Redis's `listTypeTryConvertListpack`, before elements are added: a listpack that would
    /// pass the node limit with `add_count` more elements of `add_bytes` bytes in all becomes a
    /// quicklist. Each push and insert checks its own element; a command adding several calls
    /// this first with all of them, as Redis does.
    #[inline]
    pub fn before_growth(&mut self, add_bytes: usize, add_count: usize) {
        if self.encoding == ListEncoding::Listpack {
            let bytes = self
                .nodes
                .iter()
                .map(|n| n.redis_sz)
                .sum::<usize>()
                .max(REDIS_OVERHEAD);
            if node_exceeds_limit(self.fill, bytes + add_bytes, self.len + add_count) {
                self.encoding = ListEncoding::Quicklist;
            }
        }
    }

    /// Redis's `listTypeTryConvertQuicklist` after a removal: a quicklist of one packed node
    /// under half the node limit becomes a listpack. Every removal checks (the result is the
    /// same as Redis's one check per command: once true it stays true as the list shrinks).
    #[inline]
    fn after_shrink(&mut self) {
        if self.encoding == ListEncoding::Quicklist && self.nodes.len() == 1 {
            self.try_to_listpack(2);
        }
    }

    /// Redis's conversion of a list just built (SORT … STORE, a load): a quicklist of one
    /// packed node within the node limit becomes a listpack, a listpack past it a quicklist.
    pub fn settle(&mut self) {
        match self.encoding {
            ListEncoding::Quicklist => self.try_to_listpack(1),
            ListEncoding::Listpack => self.before_growth(0, 0),
            ListEncoding::Quicklist70 => {}
        }
    }

    fn try_to_listpack(&mut self, divisor: usize) {
        let [node] = self.nodes.as_slices().0 else {
            return;
        };
        if self.nodes.len() != 1 || node.plain {
            return;
        }
        let (size_limit, count_limit) = node_limits(self.fill);
        if node.redis_sz <= size_limit / divisor && self.len <= count_limit / divisor {
            self.encoding = ListEncoding::Listpack;
        }
    }

    /// The compress depth the list was created with.
    pub fn compress_depth(&self) -> usize {
        self.compress
    }

    /// Number of nodes held compressed.
    pub fn compressed_nodes(&self) -> usize {
        self.nodes.iter().filter(|n| n.lzf.is_some()).count()
    }

    /// Drops the decompressed copies that reads made of compressed nodes, so that a list read
    /// (LRANGE, LINDEX…) goes back to its compressed size, as Redis compresses a node again
    /// after each access. Free when nothing was read since.
    pub fn release_decompressed(&mut self) {
        if self.decompressed.get() {
            self.decompressed.set(false);
            for node in &mut self.nodes {
                node.release();
            }
        }
    }

    /// Notes that a read may decompress nodes (only lists with a compress depth have any).
    #[inline]
    fn note_read(&self) {
        if self.compress != 0 {
            self.decompressed.set(true);
        }
    }

    /// Redis's `__quicklistCompress` after a change to the nodes in `touched`: the `compress`
    /// nodes at each end are made raw, and — unless the ends meet — the touched nodes between
    /// them and the first node past each boundary are compressed. (Below `2 * compress` nodes
    /// every node is near an end and stays raw.)
    fn recompress(&mut self, touched: Range<usize>) {
        let depth = self.compress;
        if depth == 0 {
            return;
        }
        let len = self.nodes.len();
        if len <= depth * 2 {
            for node in &mut self.nodes {
                node.make_raw();
            }
            return;
        }
        for d in 0..depth {
            self.nodes[d].make_raw();
            self.nodes[len - 1 - d].make_raw();
        }
        for i in touched.start.max(depth)..touched.end.min(len - depth) {
            self.nodes[i].compress();
        }
        self.nodes[depth].compress();
        self.nodes[len - 1 - depth].compress();
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of packed nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The fill the list was created with.
    pub fn fill(&self) -> i32 {
        self.fill
    }

    /// Bytes of packed entries in all nodes.
    pub fn byte_size(&self) -> usize {
        self.nodes.iter().map(Node::size).sum()
    }

    /// Each node's size as Redis's listpack would have it (its entry encodings plus the 6-byte
    /// header and the end byte) — or, compressed, its LZF bytes and Redis's 8-byte header —
    /// head first: what MEMORY USAGE samples.
    pub fn node_listpack_sizes(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().map(|node| {
            if let Some(c) = &node.lzf {
                return REDIS_LZF_HEADER + c.data.len();
            }
            if node.plain {
                return node.size();
            }
            let mut size = REDIS_OVERHEAD;
            let mut pos = node.start;
            for _ in 0..node.count {
                let (data, next) = entry_at(&node.buf, pos);
                size += redis_entry_size(&node.buf[data]);
                pos = next;
            }
            size
        })
    }

    /// Whether `node` may take `item` too.
    fn allows(&self, node: &Node, item: &[u8]) -> bool {
        !node.plain
            && !is_plain(item)
            && redis_fill_allows(
                self.fill,
                node.redis_sz + item.len() + SIZE_ESTIMATE_OVERHEAD,
                |fill| node.count < fill,
            )
    }

    /// Most lists are small: their first node gets a one-slot deque (a deque's first push
    /// would reserve four); more slots come by doubling as nodes are added.
    fn reserve_node(&mut self) {
        if self.nodes.capacity() == 0 {
            self.nodes.reserve_exact(1);
        }
    }

    /// Pushes `items` in order at the back (or each at the front), as that many pushes do; a
    /// node the call starts gets room for the items still to come, up to its byte limit. A list
    /// one command builds then holds no spare room (nodes grown by doubling keep up to half
    /// their bytes spare, where Redis's listpacks are exact), and pushes after it grow as usual.
    pub fn push_all<T: AsRef<[u8]>>(&mut self, items: &[T], back: bool) {
        for (i, item) in items.iter().enumerate() {
            let room = |list: &Self| list.room_for(&items[i + 1..]);
            if back {
                self.push_back_with_room(item.as_ref(), room);
            } else {
                self.push_front_with_room(item.as_ref(), room);
            }
        }
    }

    /// The bytes of the items in `rest` that a node started just before them may take: as
    /// many as its count limit allows, within its byte limit.
    fn room_for<T: AsRef<[u8]>>(&self, rest: &[T]) -> usize {
        let count_limit = node_limits(self.fill).1;
        let limit = byte_limit(self.fill);
        let mut room = 0;
        for item in rest.iter().take(count_limit.saturating_sub(1)) {
            let size = entry_size(item.as_ref());
            if room + size > limit {
                break;
            }
            room += size;
        }
        room
    }

    pub fn push_back(&mut self, item: &[u8]) {
        self.push_back_with_room(item, |_| 0);
    }

    pub fn push_front(&mut self, item: &[u8]) {
        self.push_front_with_room(item, |_| 0);
    }

    /// A push at the back; a node it starts gets `room` spare bytes after its entry (asked only
    /// then).
    fn push_back_with_room(&mut self, item: &[u8], room: impl FnOnce(&Self) -> usize) {
        self.before_growth(item.len(), 1);
        let limit = byte_limit(self.fill);
        match self.nodes.back() {
            Some(node) if self.allows(node, item) => {
                let node = self.nodes.back_mut().expect("checked");
                node.push_back(item, limit);
            }
            _ => {
                let room = room(self);
                self.reserve_node();
                self.nodes
                    .push_back(Node::with_entry_room(item, room, true));
                // The old tail moved inward (Redis compresses around it).
                if self.compress != 0 {
                    let old = self.nodes.len().saturating_sub(2);
                    self.recompress(old..old + 1);
                }
            }
        }
        self.len += 1;
    }

    /// A push at the front; a node it starts gets `room` spare bytes before its entry (asked
    /// only then).
    fn push_front_with_room(&mut self, item: &[u8], room: impl FnOnce(&Self) -> usize) {
        self.before_growth(item.len(), 1);
        let limit = byte_limit(self.fill);
        match self.nodes.front() {
            Some(node) if self.allows(node, item) => {
                let node = self.nodes.front_mut().expect("checked");
                node.push_front(item, limit);
            }
            _ => {
                let room = room(self);
                self.reserve_node();
                self.nodes
                    .push_front(Node::with_entry_room(item, room, false));
                if self.compress != 0 {
                    self.recompress(1..2);
                }
            }
        }
        self.len += 1;
    }

    pub fn front(&self) -> Option<&[u8]> {
        let node = self.nodes.front()?;
        self.note_read();
        let buf = node.bytes();
        let (data, _) = entry_at(buf, node.start);
        Some(&buf[data])
    }

    pub fn back(&self) -> Option<&[u8]> {
        let node = self.nodes.back()?;
        self.note_read();
        let buf = node.bytes();
        let (_, data) = entry_before(buf, buf.len());
        Some(&buf[data])
    }

    /// Removes the first element, handing it to `f` in place (no copy).
    pub fn pop_front_with<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let node = self.nodes.front_mut()?;
        node.make_raw();
        let (data, next) = entry_at(&node.buf, node.start);
        node.redis_sz = node
            .redis_sz
            .saturating_sub(redis_entry_size(&node.buf[data.clone()]));
        let result = f(&node.buf[data]);
        node.start = next;
        node.count -= 1;
        if node.count == 0 {
            self.nodes.pop_front();
            if self.compress != 0 {
                self.recompress(0..0);
            }
        }
        self.len -= 1;
        self.after_shrink();
        Some(result)
    }

    /// Removes the last element, handing it to `f` in place (no copy).
    pub fn pop_back_with<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let node = self.nodes.back_mut()?;
        node.make_raw();
        let (start, data) = entry_before(&node.buf, node.buf.len());
        node.redis_sz = node
            .redis_sz
            .saturating_sub(redis_entry_size(&node.buf[data.clone()]));
        let result = f(&node.buf[data]);
        node.buf.truncate(start);
        node.count -= 1;
        if node.count == 0 {
            self.nodes.pop_back();
            if self.compress != 0 {
                self.recompress(0..0);
            }
        }
        self.len -= 1;
        self.after_shrink();
        Some(result)
    }

    /// The node holding element `index` (< len) and the element's position in it, walking node
    /// counts from the nearer end.
    fn locate(&self, index: usize) -> (usize, usize) {
        debug_assert!(index < self.len);
        if index < self.len / 2 {
            let mut rest = index;
            for (n, node) in self.nodes.iter().enumerate() {
                if rest < node.count {
                    return (n, rest);
                }
                rest -= node.count;
            }
        } else {
            let mut rest = self.len - index;
            for (n, node) in self.nodes.iter().enumerate().rev() {
                if rest <= node.count {
                    return (n, node.count - rest);
                }
                rest -= node.count;
            }
        }
        unreachable!("index {index} within length {}", self.len)
    }

    /// Element `index` (0-based from the head).
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let (n, i) = self.locate(index);
        self.note_read();
        Some(self.nodes[n].get(i))
    }

    /// Replaces element `index`; false if out of range.
    pub fn set(&mut self, index: usize, item: &[u8]) -> bool {
        if index >= self.len {
            return false;
        }
        // Redis 7.2's LSET checks the growth first and the shrinking after.
        self.before_growth(item.len(), 1);
        let (n, i) = self.locate(index);
        let node = &mut self.nodes[n];
        node.make_raw();
        let from = node.offset_of(i);
        let to = entry_at(&node.buf, from).1;
        // As Redis 7.0's `quicklistReplaceEntry`: a packed element replaces a packed one in
        // place whatever the node's size, a plain one a plain one; between plain and packed the
        // element moves to a node of the right kind.
        let same_kind = node.plain == is_plain(item);
        if same_kind {
            node.splice(from, to, 1, &[item]);
            self.recompress(n..n + 1);
        } else {
            self.remove(index);
            self.insert(index, item);
        }
        self.after_shrink();
        true
    }

    /// Inserts `item` so that it becomes element `index` (`index == len` appends).
    pub fn insert(&mut self, index: usize, item: &[u8]) {
        assert!(index <= self.len, "insert out of bounds");
        if index == 0 {
            return self.push_front(item);
        }
        if index == self.len {
            return self.push_back(item);
        }
        self.before_growth(item.len(), 1);
        let (n, i) = self.locate(index);
        let limit = byte_limit(self.fill);
        if self.allows(&self.nodes[n], item) {
            let node = &mut self.nodes[n];
            let at = node.offset_of(i);
            node.splice(at, at, 0, &[item]);
        } else if i == 0 {
            // At a node boundary: the end of the previous node, or a node of its own.
            if self.allows(&self.nodes[n - 1], item) {
                self.nodes[n - 1].push_back(item, limit);
            } else {
                self.nodes.insert(n, Node::with_entry(item));
            }
        } else {
            // Inside a full node: split it there and put the item on whichever side has room.
            let right = self.nodes[n].split_off(i);
            if self.allows(&self.nodes[n], item) {
                self.nodes[n].push_back(item, limit);
                self.nodes.insert(n + 1, right);
            } else if self.allows(&right, item) {
                let mut right = right;
                right.push_front(item, limit);
                self.nodes.insert(n + 1, right);
            } else {
                self.nodes.insert(n + 1, Node::with_entry(item));
                self.nodes.insert(n + 2, right);
            }
        }
        self.len += 1;
        self.recompress(n.saturating_sub(1)..n + 3);
    }

    /// Removes element `index` (< len).
    pub fn remove(&mut self, index: usize) {
        assert!(index < self.len, "remove out of bounds");
        let (n, i) = self.locate(index);
        let node = &mut self.nodes[n];
        node.make_raw();
        let from = node.offset_of(i);
        let to = entry_at(&node.buf, from).1;
        node.splice(from, to, 1, &[]);
        self.len -= 1;
        // As Redis's `quicklistDelIndex`: an emptied node goes, the others stay as they are
        // (Redis merges nodes only around an insertion that split one).
        if node.count == 0 {
            self.nodes.remove(n);
            self.recompress(0..0);
        } else {
            self.recompress(n..n + 1);
        }
        self.after_shrink();
    }

    /// LINSERT: inserts `item` before or after element `pivot` (< len), where Redis 7.0's
    /// `_quicklistInsert` puts it — into the pivot's node if it has room; else at the head of
    /// the next node or the tail of the previous one when the pivot is at that edge and the
    /// neighbour has room, or in a node of its own between them when it has not; else the
    /// pivot's node is split at the pivot, the item joins the part on its side, and the nodes
    /// around are merged where they fit (`_quicklistMergeNodes`). Node boundaries show in DUMP.
    pub fn insert_at(&mut self, pivot: usize, after: bool, item: &[u8]) {
        assert!(pivot < self.len, "pivot out of bounds");
        self.before_growth(item.len(), 1);
        let (n, i) = self.locate(pivot);
        let limit = byte_limit(self.fill);
        let len = self.nodes.len();
        let full = !self.allows(&self.nodes[n], item);
        let at_tail = after && i + 1 == self.nodes[n].count;
        let at_head = !after && i == 0;
        let avail_next = at_tail && n + 1 < len && self.allows(&self.nodes[n + 1], item);
        let avail_prev = at_head && n > 0 && self.allows(&self.nodes[n - 1], item);
        let touched;
        if is_plain(item) {
            // A large element gets a plain node: beside the pivot's node when the pivot is at
            // its edge (or the node is plain), else between the two halves of the split node.
            if self.nodes[n].plain || at_tail || at_head {
                let at = if after { n + 1 } else { n };
                self.nodes.insert(at, Node::with_entry(item));
                touched = at..at + 1;
            } else {
                let right = self.nodes[n].split_off(if after { i + 1 } else { i });
                self.nodes.insert(n + 1, Node::with_entry(item));
                self.nodes.insert(n + 2, right);
                touched = n..n + 3;
            }
        } else if !full {
            let node = &mut self.nodes[n];
            let at = node.offset_of(if after { i + 1 } else { i });
            node.splice(at, at, 0, &[item]);
            touched = n..n + 1;
        } else if avail_next {
            self.nodes[n + 1].push_front(item, limit);
            touched = n + 1..n + 2;
        } else if avail_prev {
            self.nodes[n - 1].push_back(item, limit);
            touched = n - 1..n;
        } else if at_tail || at_head {
            let at = if after { n + 1 } else { n };
            self.nodes.insert(at, Node::with_entry(item));
            touched = at..at + 1;
        } else {
            // Split the pivot's node; Redis's "center" for the merges is the part that stays
            // the original node: the left one when inserting after, the right one before.
            let center = if after {
                let mut right = self.nodes[n].split_off(i + 1);
                right.push_front(item, limit);
                self.nodes.insert(n + 1, right);
                n
            } else {
                let right = self.nodes[n].split_off(i);
                self.nodes[n].push_back(item, limit);
                self.nodes.insert(n + 1, right);
                n + 1
            };
            self.merge_nodes(center);
            touched = 0..self.nodes.len();
        }
        self.len += 1;
        self.recompress(touched.start.saturating_sub(1)..touched.end + 1);
    }

    /// Redis's `_quicklistMergeNodes` around node `center`: the two nodes before it, the two
    /// after it, then the center with its previous node and the result with its next one,
    /// each pair merged when `_quicklistNodeAllowMerge` allows.
    fn merge_nodes(&mut self, center: usize) {
        let mut c = center;
        if c >= 2 && self.can_merge(c - 2, c - 1) {
            self.merge_pair(c - 2);
            c -= 1;
        }
        if c + 2 < self.nodes.len() && self.can_merge(c + 1, c + 2) {
            self.merge_pair(c + 1);
        }
        let target = if c >= 1 && self.can_merge(c - 1, c) {
            self.merge_pair(c - 1);
            c - 1
        } else {
            c
        };
        if target + 1 < self.nodes.len() && self.can_merge(target, target + 1) {
            self.merge_pair(target);
        }
    }

    /// Merges node `a + 1` into node `a`.
    fn merge_pair(&mut self, a: usize) {
        let right = self.nodes.remove(a + 1).expect("exists");
        self.nodes[a].append(&right);
    }

    fn can_merge(&self, a: usize, b: usize) -> bool {
        let (a, b) = (&self.nodes[a], &self.nodes[b]);
        // Redis's estimate of the merged listpack: both, less one header and end byte (and a
        // few bytes more, as its code subtracts).
        !a.plain
            && !b.plain
            && redis_fill_allows(
                self.fill,
                (a.redis_sz + b.redis_sz).saturating_sub(11),
                |fill| a.count + b.count <= fill,
            )
    }

    /// Removes the first `n` elements (all if `n >= len`).
    pub fn drain_front(&mut self, n: usize) {
        let mut n = n.min(self.len);
        self.len -= n;
        while n > 0 {
            let node = self.nodes.front_mut().expect("counted");
            if node.count <= n {
                n -= node.count;
                self.nodes.pop_front();
            } else {
                node.drop_front(n);
                n = 0;
            }
        }
        self.recompress(0..0);
        self.after_shrink();
    }

    /// Removes the last `n` elements (all if `n >= len`).
    pub fn drain_back(&mut self, n: usize) {
        let mut n = n.min(self.len);
        self.len -= n;
        while n > 0 {
            let node = self.nodes.back_mut().expect("counted");
            if node.count <= n {
                n -= node.count;
                self.nodes.pop_back();
            } else {
                node.drop_back(n);
                n = 0;
            }
        }
        self.recompress(0..0);
        self.after_shrink();
    }

    /// Removes up to `limit` elements equal to `item` (0 = all of them), scanning from the head,
    /// or from the tail if `from_tail`. Returns how many were removed.
    pub fn remove_matching(&mut self, item: &[u8], limit: usize, from_tail: bool) -> usize {
        self.note_read();
        let mut removed = 0;
        let mut touched = false;
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        let mut k = 0;
        while k < self.nodes.len() {
            let n = if from_tail {
                self.nodes.len() - 1 - k
            } else {
                k
            };
            let node = &self.nodes[n];
            ranges.clear();
            let mut pos = node.start;
            let buf = node.bytes();
            while pos < buf.len() {
                let (data, next) = entry_at(buf, pos);
                if &buf[data] == item {
                    ranges.push((pos, next));
                }
                pos = next;
            }
            if limit > 0 && ranges.len() > limit - removed {
                let keep = limit - removed;
                if from_tail {
                    ranges.drain(..ranges.len() - keep);
                } else {
                    ranges.truncate(keep);
                }
            }
            k += 1;
            if ranges.is_empty() {
                continue;
            }
            let node = &mut self.nodes[n];
            // A compressed node's decompressed copy has the same offsets.
            node.make_raw();
            let mut buf =
                Vec::with_capacity(node.size() - ranges.iter().map(|(a, b)| b - a).sum::<usize>());
            let mut copied = node.start;
            for &(from, to) in &ranges {
                node.redis_sz = node
                    .redis_sz
                    .saturating_sub(redis_bytes_of(&node.buf, from, to));
                buf.extend_from_slice(&node.buf[copied..from]);
                copied = to;
            }
            buf.extend_from_slice(&node.buf[copied..]);
            node.buf = buf;
            node.start = 0;
            node.count -= ranges.len();
            removed += ranges.len();
            self.len -= ranges.len();
            touched = true;
            if node.count == 0 {
                self.nodes.remove(n);
                // The next node to visit moved into this one's place in the walk.
                k -= 1;
            }
            if limit > 0 && removed == limit {
                break;
            }
        }
        if touched {
            // Any node may have changed: each interior one is compressed again.
            self.recompress(0..self.nodes.len());
            self.after_shrink();
        }
        removed
    }

    /// Each node head to tail: whether it is plain, and its elements — what an RDB file records
    /// of a list (Redis saves a quicklist node by node).
    pub fn node_elements(&self) -> impl Iterator<Item = (bool, Vec<&[u8]>)> + '_ {
        self.note_read();
        self.nodes.iter().map(|node| {
            let buf = node.bytes();
            let mut pos = node.start;
            let mut items = Vec::with_capacity(node.count);
            for _ in 0..node.count {
                let (data, next) = entry_at(buf, pos);
                items.push(&buf[data]);
                pos = next;
            }
            (node.plain, items)
        })
    }

    /// Appends a whole node holding `items` (at least one; one for a plain node) at the tail,
    /// whatever the fill says: loading an RDB file keeps the saved nodes as they are (Redis's
    /// `quicklistAppendListpack` / `quicklistAppendPlainNode`).
    pub fn append_node(&mut self, plain: bool, items: &[&[u8]]) {
        let Some((first, rest)) = items.split_first() else {
            return;
        };
        let mut node = Node::with_entry(first);
        node.plain = plain;
        node.redis_sz = if plain {
            first.len()
        } else {
            REDIS_OVERHEAD + redis_entry_size(first)
        };
        for item in rest {
            node.push_back(item, usize::MAX);
        }
        self.reserve_node();
        self.nodes.push_back(node);
        self.len += items.len();
        if self.compress != 0 {
            let old = self.nodes.len().saturating_sub(2);
            self.recompress(old..old + 1);
        }
    }

    /// All elements, head to tail (reversible).
    pub fn iter(&self) -> Iter<'_> {
        self.note_read();
        let empty: &[u8] = &[];
        let front_buf = self.nodes.front().map_or(empty, Node::bytes);
        let back_buf = self.nodes.back().map_or(empty, Node::bytes);
        Iter {
            nodes: Some(&self.nodes),
            front: (0, self.nodes.front().map_or(0, |n| n.start)),
            front_buf,
            back: (self.nodes.len().saturating_sub(1), back_buf.len()),
            back_buf,
            back_start: self.nodes.back().map_or(0, |n| n.start),
            remaining: self.len,
        }
    }

    /// The elements from `index` to the tail, finding `index` from the nearer end.
    pub fn iter_from(&self, index: usize) -> Iter<'_> {
        if index >= self.len {
            let mut it = self.iter();
            it.remaining = 0;
            return it;
        }
        let (n, i) = self.locate(index);
        let mut it = self.iter();
        it.front = (n, self.nodes[n].offset_of(i));
        it.front_buf = self.nodes[n].bytes();
        it.remaining = self.len - index;
        it
    }
}
