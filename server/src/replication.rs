//! Replication, the primary's side: the replication ID and offset, the backlog a replica
//! continues from, and the replicas attached — what Redis keeps in `server.master_replid`,
//! `master_repl_offset`, `repl_backlog` and `server.slaves`.
//!
//! It consumes the write stream ([`crate::propagate`]): at the end of each turn of the event
//! loop (the engine's "before sleep") the bytes the turn's commands propagated are appended to
//! the backlog, the offset moves by their length, and each attached replica gets them as
//! out-of-turn output, as a subscriber gets its messages. SYNC and PSYNC (`commands/
//! replication.rs`) attach a replica: a full resynchronisation sends an RDB image of the dataset
//! at the current offset and then everything after it; a PSYNC whose ID and offset the backlog
//! still covers continues from there instead.
//!
//! The backlog is created by the first replica, starting at the next byte (Redis's
//! `createReplicationBacklog`), and keeps the stream on from then on, replicas or not, so that a
//! replica that reconnects can continue. Its size is `repl-backlog-size`; the oldest bytes go
//! first.

use crate::client::{ClientId, Clients};
use crate::propagate::WriteStream;

/// Hands what the write stream holds to the backlog and to every replica's pending output (the
/// engine hands pending output to the connections at the turn's end). The engine calls it once a
/// turn; SYNC and REPLICAOF call it first, so that writes made before them go where they belong.
/// A replica's backlog is for its primary's stream, not its own writes: then the bytes are
/// dropped (Redis's `replicationFeedSlaves` returns at once on a replica).
pub fn drain(
    repl: &mut Replication,
    stream: &mut WriteStream,
    clients: &mut Clients,
    pending_writes: &mut Vec<ClientId>,
) {
    if !repl.is_on() || stream.is_empty() {
        return;
    }
    let bytes = stream.take();
    if repl.primary.is_some() {
        return;
    }
    repl.append(&bytes);
    for replica in &repl.replicas {
        if let Some(client) = clients.get_mut(replica.id) {
            client.pending.extend_from_slice(&bytes);
            pending_writes.push(replica.id);
        }
    }
}

/// The last `size` bytes of the replication stream and the offset of the first one kept.
#[derive(Debug)]
pub struct Backlog {
    /// A ring: `len` bytes ending just before `end`, wrapping around.
    buf: Vec<u8>,
    end: usize,
    len: usize,
    /// The offset of the oldest byte kept (`repl_backlog_first_byte_offset`).
    pub first_offset: u64,
}

impl Backlog {
    /// An empty backlog whose first byte will be the stream's byte at `next_offset`.
    pub fn new(size: usize, next_offset: u64) -> Backlog {
        Backlog {
            buf: vec![0; size.max(1)],
            end: 0,
            len: 0,
            first_offset: next_offset,
        }
    }

    /// Bytes kept (`repl_backlog_histlen`).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Capacity (`repl_backlog_size`).
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// Appends stream bytes, dropping the oldest beyond the size.
    pub fn append(&mut self, mut bytes: &[u8]) {
        let size = self.buf.len();
        if bytes.len() > size {
            let skip = bytes.len() - size;
            self.drop_oldest(self.len);
            self.first_offset += skip as u64;
            bytes = &bytes[skip..];
        }
        let overflow = (self.len + bytes.len()).saturating_sub(size);
        self.drop_oldest(overflow);
        let first = bytes.len().min(size - self.end);
        self.buf[self.end..self.end + first].copy_from_slice(&bytes[..first]);
        self.buf[..bytes.len() - first].copy_from_slice(&bytes[first..]);
        self.end = (self.end + bytes.len()) % size;
        self.len += bytes.len();
    }

    fn drop_oldest(&mut self, n: usize) {
        self.len -= n;
        self.first_offset += n as u64;
    }

    /// The bytes from stream offset `from` to the end, if the backlog still holds them all
    /// (`from` may be the offset just past the end: nothing to send).
    pub fn since(&self, from: u64) -> Option<Vec<u8>> {
        if from < self.first_offset || from > self.first_offset + self.len as u64 {
            return None;
        }
        let skip = (from - self.first_offset) as usize;
        let size = self.buf.len();
        let start = (self.end + size - self.len + skip) % size;
        let n = self.len - skip;
        let mut out = Vec::with_capacity(n);
        let first = n.min(size - start);
        out.extend_from_slice(&self.buf[start..start + first]);
        out.extend_from_slice(&self.buf[..n - first]);
        Some(out)
    }

    /// Changes the size, keeping the newest bytes that fit (CONFIG SET repl-backlog-size).
    pub fn resize(&mut self, size: usize) {
        let kept = self.since(self.first_offset).unwrap_or_default();
        let mut fresh = Backlog::new(size, self.first_offset);
        fresh.append(&kept);
        *self = fresh;
    }
}

/// A replica attached to this server.
#[derive(Debug, Clone)]
pub struct Replica {
    pub id: ClientId,
    /// The port it listens on (REPLCONF listening-port), for INFO and ROLE.
    pub listening_port: u16,
    /// The address it announced (REPLCONF ip-address), or its connection's.
    pub ip: String,
    /// The offset it last acknowledged (REPLCONF ACK) and when, in ms.
    pub ack_offset: u64,
    pub ack_time_ms: i64,
}

/// The primary's replication state (see the module documentation).
#[derive(Debug)]
pub struct Replication {
    pub replid: String,
    /// The previous ID and the offset up to which it is valid (after a promotion; none yet).
    pub replid2: String,
    pub second_offset: i64,
    /// Bytes of stream produced so far (`master_repl_offset`).
    pub offset: u64,
    pub backlog: Option<Backlog>,
    pub replicas: Vec<Replica>,
    /// When the tick last pinged the replicas (ms).
    pub last_ping_ms: i64,
    /// INFO stats' `sync_full`, `sync_partial_ok`, `sync_partial_err`.
    pub sync_full: u64,
    pub sync_partial_ok: u64,
    pub sync_partial_err: u64,
    /// The primary this server follows (REPLICAOF host port), if any. The link itself — the
    /// sync from it and the stream it sends — is not made yet: the server switches role (writes
    /// refused with `-READONLY`, INFO and ROLE say `slave`, link down) and waits.
    pub primary: Option<(String, u16)>,
}

impl Replication {
    pub fn new(replid: String) -> Replication {
        Replication {
            replid,
            replid2: "0".repeat(40),
            second_offset: -1,
            offset: 0,
            backlog: None,
            replicas: Vec::new(),
            last_ping_ms: 0,
            sync_full: 0,
            sync_partial_ok: 0,
            sync_partial_err: 0,
            primary: None,
        }
    }

    /// True once anything consumes the stream here (a backlog exists).
    #[inline]
    pub fn is_on(&self) -> bool {
        self.backlog.is_some()
    }

    /// Appends the stream bytes of a turn: the backlog keeps them and the offset moves.
    pub fn append(&mut self, bytes: &[u8]) {
        if let Some(backlog) = &mut self.backlog {
            backlog.append(bytes);
            self.offset += bytes.len() as u64;
        }
    }

    /// Becomes a primary again (REPLICAOF NO ONE): a new replication ID, the old one kept as
    /// the previous ID up to the current offset, as Redis's `shiftReplicationId`, so that
    /// replicas of the old primary may continue from here.
    pub fn promote(&mut self, new_replid: String) {
        self.primary = None;
        self.replid2 = std::mem::replace(&mut self.replid, new_replid);
        self.second_offset = self.offset as i64 + 1;
    }

    pub fn is_replica(&self, id: ClientId) -> bool {
        self.replicas.iter().any(|r| r.id == id)
    }

    /// Forgets a replica (its connection closed).
    pub fn remove(&mut self, id: ClientId) {
        self.replicas.retain(|r| r.id != id);
    }

    pub fn replica_mut(&mut self, id: ClientId) -> Option<&mut Replica> {
        self.replicas.iter_mut().find(|r| r.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The backlog holds exactly the last `size` bytes of everything appended, and serves
        /// any offset inside them, as a plain vector of the whole stream would.
        #[test]
        fn backlog_keeps_the_newest_bytes(
            size in 1usize..64,
            start in 0u64..1000,
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..30),
            resize_to in proptest::option::of(1usize..64),
        ) {
            let mut backlog = Backlog::new(size, start);
            let mut all: Vec<u8> = Vec::new();
            for (i, chunk) in chunks.iter().enumerate() {
                backlog.append(chunk);
                all.extend_from_slice(chunk);
                if i == chunks.len() / 2 {
                    if let Some(n) = resize_to {
                        backlog.resize(n);
                    }
                }
            }
            let kept = backlog.len();
            prop_assert!(kept <= backlog.size());
            let end = start + all.len() as u64;
            prop_assert_eq!(backlog.first_offset, end - kept as u64);
            for from in backlog.first_offset..=end {
                let want = &all[(from - start) as usize..];
                let got = backlog.since(from);
                prop_assert_eq!(got.as_deref(), Some(want));
            }
            if backlog.first_offset > 0 {
                prop_assert_eq!(backlog.since(backlog.first_offset - 1), None);
            }
            prop_assert_eq!(backlog.since(end + 1), None);
        }
    }
}
