//! The replication buffer: one copy of the replication stream, shared by the backlog and every
//! replica (Redis 7.0's `repl_buffer_blocks`). Replicas are readers at offsets in it, not
//! buffers of their own: ten replicas of a stream that outruns them hold its bytes once.
//!
//! The stream is kept in blocks of at least 16 KB and at most `repl-backlog-size / 16` (a
//! bigger write spreads over several, so that a block that is no longer needed is never a
//! huge one). The backlog is the whole buffer: it keeps at least `repl-backlog-size` bytes,
//! and more while a reader still needs older ones — a replica that has not taken them yet, or
//! one whose full sync's image is still going out and that will continue from the image's
//! offset. Only blocks no reader needs, beyond the size, leave (Redis's
//! `incrementalTrimReplicationBacklog`), so a partial resync may continue from anything the
//! buffer still holds.
//!
//! Readers are read by their connection's I/O task ([`crate::model::client::ClientHandle`]
//! copies a bounded slice at a time into its output), so the buffer sits behind a mutex: the
//! executor appends once a turn, each task copies when it writes.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::BytesMut;
use parking_lot::Mutex;

use crate::model::client_id::ClientId;

/// The smallest block (Redis's PROTO_REPLY_CHUNK_BYTES).
pub const BLOCK_MIN: usize = 16 * 1024;

/// What each block costs beyond its bytes (its entry in the list), counted as Redis counts its
/// `replBufBlock` header and list node.
const BLOCK_OVERHEAD: usize = std::mem::size_of::<Block>();

/// The buffer as the executor and the replicas' tasks share it.
pub type SharedReplBuffer = Arc<Mutex<ReplBuffer>>;

#[derive(Debug)]
struct Block {
    /// The stream offset of its first byte.
    start: u64,
    /// Its bytes; the capacity is the block's size.
    data: Vec<u8>,
}

impl Block {
    fn end(&self) -> u64 {
        self.start + self.data.len() as u64
    }
}

/// A replica's place in the stream.
#[derive(Debug, Clone, Copy)]
struct Reader {
    id: ClientId,
    /// The offset of the next byte it takes.
    next: u64,
    /// Its task may take bytes (false while its full sync's image goes out first: the reader
    /// only keeps the stream since the image).
    active: bool,
}

#[derive(Debug)]
pub struct ReplBuffer {
    blocks: VecDeque<Block>,
    /// The offset of the first byte kept (`repl_backlog_first_byte_offset`).
    first: u64,
    /// The offset the next byte appended gets.
    end: u64,
    /// `repl-backlog-size`: what the buffer keeps with no reader needing more.
    size: usize,
    readers: Vec<Reader>,
    /// Bytes allocated for blocks, their overhead included (`mem_total_replication_buffers`).
    allocated: usize,
}

impl ReplBuffer {
    /// An empty buffer whose first byte will be the stream's byte at `next_offset`.
    pub fn new(size: usize, next_offset: u64) -> ReplBuffer {
        ReplBuffer {
            blocks: VecDeque::new(),
            first: next_offset,
            end: next_offset,
            size: size.max(1),
            readers: Vec::new(),
            allocated: 0,
        }
    }

    pub fn shared(size: usize, next_offset: u64) -> SharedReplBuffer {
        Arc::new(Mutex::new(ReplBuffer::new(size, next_offset)))
    }

    /// Bytes kept (`repl_backlog_histlen`): may pass the size while readers need them.
    pub fn histlen(&self) -> usize {
        (self.end - self.first) as usize
    }

    /// The offset of the oldest byte kept.
    pub fn first_offset(&self) -> u64 {
        self.first
    }

    /// `repl-backlog-size`.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Bytes allocated (`mem_total_replication_buffers`).
    pub fn allocated(&self) -> usize {
        self.allocated
    }

    /// What `maxmemory` leaves out of its count (Redis's `freeMemoryGetNotCountedMemory`):
    /// the buffer beyond the backlog's size and the overhead of its blocks, which is the
    /// replicas' own consumption — the backlog itself stays counted. Counted even with no
    /// replica left while the buffer shrinks, so that its trimming causes no eviction.
    pub fn not_counted_for_eviction(&self) -> usize {
        let counted = self.size + (self.size / BLOCK_MIN + 1) * BLOCK_OVERHEAD;
        self.allocated.saturating_sub(counted)
    }

    /// Appends stream bytes: the tail block's room first, then new blocks.
    pub fn append(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = self
                .blocks
                .back()
                .map_or(0, |b| b.data.capacity() - b.data.len());
            if room == 0 {
                let most = (self.size / 16).max(BLOCK_MIN);
                let size = bytes.len().clamp(BLOCK_MIN, most);
                self.blocks.push_back(Block {
                    start: self.end,
                    data: Vec::with_capacity(size),
                });
                self.allocated += size + BLOCK_OVERHEAD;
                continue;
            }
            let tail = self.blocks.back_mut().expect("a block with room");
            let n = room.min(bytes.len());
            tail.data.extend_from_slice(&bytes[..n]);
            self.end += n as u64;
            bytes = &bytes[n..];
        }
        self.trim();
    }

    /// Lets go of the oldest blocks no reader needs, while what is left is still more than the
    /// size (never the last block).
    pub fn trim(&mut self) {
        while self.blocks.len() > 1 && self.histlen() > self.size {
            let head = &self.blocks[0];
            let head_end = head.end();
            if self.readers.iter().any(|r| r.next < head_end) {
                break;
            }
            if self.histlen() - head.data.len() <= self.size {
                break;
            }
            let head = self.blocks.pop_front().expect("a head block");
            self.allocated -= head.data.capacity() + BLOCK_OVERHEAD;
            self.first = head_end;
        }
    }

    /// A new `repl-backlog-size` (CONFIG SET): more is kept from now on, or less at once.
    pub fn resize(&mut self, size: usize) {
        self.size = size.max(1);
        self.trim();
    }

    /// True if the stream from offset `from` is all here (`from` may be the offset just past
    /// the end: nothing to send).
    pub fn covers(&self, from: u64) -> bool {
        from >= self.first && from <= self.end
    }

    /// A copy of the stream from offset `from` to the end, if the buffer covers it.
    pub fn since(&self, from: u64) -> Option<Vec<u8>> {
        if !self.covers(from) {
            return None;
        }
        let mut out = BytesMut::new();
        self.copy_from(from, &mut out, usize::MAX);
        Some(out.to_vec())
    }

    /// Appends up to `max` bytes of the stream from `from` to `out`; returns how many.
    fn copy_from(&self, from: u64, out: &mut BytesMut, max: usize) -> usize {
        let mut at = self.blocks.partition_point(|b| b.end() <= from);
        let mut pos = from;
        let mut copied = 0;
        while copied < max && at < self.blocks.len() {
            let block = &self.blocks[at];
            let skip = (pos - block.start) as usize;
            let n = (block.data.len() - skip).min(max - copied);
            out.extend_from_slice(&block.data[skip..skip + n]);
            copied += n;
            pos += n as u64;
            at += 1;
        }
        copied
    }

    /// Adds replica `id` as a reader from offset `from` (which the buffer must cover), its
    /// task allowed to take bytes or not yet.
    pub fn attach(&mut self, id: ClientId, from: u64, active: bool) {
        debug_assert!(self.covers(from));
        self.readers.retain(|r| r.id != id);
        self.readers.push(Reader {
            id,
            next: from.clamp(self.first, self.end),
            active,
        });
    }

    /// The reader's task may take bytes from now on.
    pub fn activate(&mut self, id: ClientId) {
        if let Some(r) = self.readers.iter_mut().find(|r| r.id == id) {
            r.active = true;
        }
    }

    /// Forgets the reader (its replica is gone): the blocks it kept may go.
    pub fn detach(&mut self, id: ClientId) {
        self.readers.retain(|r| r.id != id);
        self.trim();
    }

    /// Bytes the reader's task may take now.
    pub fn waiting(&self, id: ClientId) -> usize {
        self.readers
            .iter()
            .find(|r| r.id == id && r.active)
            .map_or(0, |r| (self.end - r.next) as usize)
    }

    /// The reader's task takes up to `max` bytes into `out`; returns how many.
    pub fn take(&mut self, id: ClientId, out: &mut BytesMut, max: usize) -> usize {
        let Some(at) = self.readers.iter().position(|r| r.id == id && r.active) else {
            return 0;
        };
        let from = self.readers[at].next;
        let n = self.copy_from(from, out, max);
        self.readers[at].next += n as u64;
        n
    }

    /// The memory the reader keeps, as Redis counts a replica's output buffer: from the start
    /// of the block it reads in to the end of the last block, with the blocks' overhead.
    pub fn referenced(&self, id: ClientId) -> usize {
        let Some(reader) = self.readers.iter().find(|r| r.id == id) else {
            return 0;
        };
        let at = self.blocks.partition_point(|b| b.end() <= reader.next);
        let at = at.min(self.blocks.len().saturating_sub(1));
        let Some(first) = self.blocks.get(at) else {
            return 0;
        };
        let last = self.blocks.back().expect("blocks");
        let span = last.start as usize + last.data.capacity() - first.start as usize;
        span + (self.blocks.len() - at) * BLOCK_OVERHEAD
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id(n: u64) -> ClientId {
        n + 1
    }

    #[test]
    fn a_reader_behind_keeps_the_stream_past_the_size() {
        let mut b = ReplBuffer::new(BLOCK_MIN, 1);
        b.attach(id(1), 1, true);
        let chunk = vec![7u8; 10_000];
        for _ in 0..20 {
            b.append(&chunk);
        }
        assert_eq!(b.histlen(), 200_000, "the reader needs all of it");
        assert_eq!(b.since(1).unwrap().len(), 200_000);
        let mut out = BytesMut::new();
        assert_eq!(b.take(id(1), &mut out, 150_000), 150_000);
        b.trim();
        assert!(b.histlen() < 200_000 && b.first_offset() <= 150_001);
        b.detach(id(1));
        assert!(b.histlen() <= BLOCK_MIN * 2, "{}", b.histlen());
        assert!(b.allocated() < 3 * (BLOCK_MIN + BLOCK_OVERHEAD));
    }

    #[test]
    fn an_inactive_reader_takes_nothing_but_keeps_its_bytes() {
        let mut b = ReplBuffer::new(1, 1);
        b.attach(id(2), 1, false);
        b.append(&[1u8; 100_000]);
        let mut out = BytesMut::new();
        assert_eq!(b.take(id(2), &mut out, 1000), 0);
        assert_eq!(b.waiting(id(2)), 0);
        assert!(b.referenced(id(2)) >= 100_000);
        b.activate(id(2));
        assert_eq!(b.waiting(id(2)), 100_000);
    }

    proptest! {
        /// Against a model: the whole stream as one vector. Whatever the buffer still covers
        /// is the stream's bytes, each reader takes exactly the stream from where it began,
        /// and nothing a reader needs is let go.
        #[test]
        fn readers_take_the_stream_exactly(
            size in 1usize..100_000,
            ops in proptest::collection::vec((0u8..4, 1usize..40_000), 1..60),
        ) {
            let mut b = ReplBuffer::new(size, 1);
            let mut stream: Vec<u8> = Vec::new();
            let mut taken: Vec<Vec<u8>> = vec![Vec::new(), Vec::new()];
            let mut began = [None::<usize>; 2];
            for (n, (op, len)) in ops.into_iter().enumerate() {
                match op {
                    0 | 1 => {
                        let bytes: Vec<u8> = (0..len).map(|i| (n * 31 + i) as u8).collect();
                        stream.extend_from_slice(&bytes);
                        b.append(&bytes);
                    }
                    2 => {
                        let r = len % 2;
                        if began[r].is_none() {
                            let from = b.first_offset();
                            b.attach(id(r as u64), from, true);
                            began[r] = Some((from - 1) as usize);
                        }
                    }
                    _ => {
                        let r = len % 2;
                        let mut out = BytesMut::new();
                        b.take(id(r as u64), &mut out, len);
                        taken[r].extend_from_slice(&out);
                    }
                }
                let first = (b.first_offset() - 1) as usize;
                prop_assert_eq!(&b.since(b.first_offset()).unwrap()[..], &stream[first..]);
                prop_assert!(b.histlen() >= size.min(stream.len()));
            }
            for r in 0..2 {
                if let Some(start) = began[r] {
                    let got = &taken[r];
                    prop_assert_eq!(&got[..], &stream[start..start + got.len()]);
                }
            }
        }
    }
}
