//! Query buffers: what CLIENT LIST reports of each connection's read buffer (`qbuf`,
//! `qbuf-free`) and Redis's rule for giving its spare room back (`clientsCron`'s resize).
//!
//! The buffer itself belongs to the connection's I/O task (`io/net.rs`), which reads into it with
//! 16 KB of room and keeps it between requests, so that a busy connection allocates nothing per
//! request. The task publishes the buffer's length and capacity here with two relaxed stores per
//! read (and once more when it goes idle, the requests consumed), and remembers the largest
//! length seen (the peak). The executor's tick reads them and, as Redis does, asks the task to
//! give room back: all of it when the client has been idle more than 2 seconds, or down to the
//! recent peak when the buffer is over 32 KB and more than twice that peak (a big request has
//! passed). The task acts on the request the next time it waits for input — the request wakes
//! it — so the request path itself pays one load of an atomic.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Spare room worth giving back at all (Redis: 4 KB).
const MIN_WASTE: usize = 4 * 1024;
/// Above this capacity a buffer shrinks to its recent peak (Redis's PROTO_RESIZE_THRESHOLD).
const RESIZE_THRESHOLD: usize = 32 * 1024;
/// Seconds without a command after which the whole buffer is freed.
const IDLE_SECONDS: i64 = 2;
/// An argument this long gets room for all of it once its header is read (Redis's
/// PROTO_MBULK_BIG_ARG).
pub const BIG_ARG: usize = 32 * 1024;

/// What the task is asked to do with its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resize {
    /// Free it (the client is idle); the next read allocates again.
    Free,
    /// Replace it by one of the usual size (it grew for a request long gone).
    Shrink,
}

/// A connection's query-buffer figures, shared by its task and the executor.
#[derive(Default)]
pub struct QueryBuffer {
    len: AtomicUsize,
    capacity: AtomicUsize,
    peak: AtomicUsize,
    /// The bytes of the big argument being read (its length and CRLF), 0 when none: the
    /// buffer is not shrunk below it, as Redis keeps room for the bulk in progress.
    bulk: AtomicUsize,
    /// 0 none, 1 [`Resize::Free`], 2 [`Resize::Shrink`].
    request: AtomicU8,
    /// Bytes of the arguments of a request in progress that the decoder already cut out of the
    /// buffer (Redis's `argv_len_sum` of a request not complete yet: CLIENT LIST's `argv-mem`).
    partial: AtomicUsize,
}

impl QueryBuffer {
    /// The task's buffer holds `len` bytes in `capacity`.
    #[inline]
    pub fn report(&self, len: usize, capacity: usize) {
        self.len.store(len, Ordering::Relaxed);
        self.capacity.store(capacity, Ordering::Relaxed);
        if len > self.peak.load(Ordering::Relaxed) {
            self.peak.store(len, Ordering::Relaxed);
        }
    }

    /// The task made room for a big argument of `bytes` (length and CRLF), still arriving.
    pub fn awaiting_bulk(&self, bytes: usize) {
        self.bulk.store(bytes, Ordering::Relaxed);
    }

    /// No big argument is arriving (one load while there was none).
    #[inline]
    pub fn no_bulk(&self) {
        if self.bulk.load(Ordering::Relaxed) != 0 {
            self.bulk.store(0, Ordering::Relaxed);
        }
    }

    /// The decoder holds `bytes` of a request's arguments while the rest is awaited (stored
    /// only when it changed: one load per turn otherwise).
    #[inline]
    pub fn partial_args(&self, bytes: usize) {
        if self.partial.load(Ordering::Relaxed) != bytes {
            self.partial.store(bytes, Ordering::Relaxed);
        }
    }

    /// CLIENT LIST's `argv-mem`: see [`QueryBuffer::partial_args`].
    pub fn argv_mem(&self) -> usize {
        self.partial.load(Ordering::Relaxed)
    }

    /// `(qbuf, qbuf-free)` as CLIENT LIST shows them.
    pub fn sizes(&self) -> (usize, usize) {
        let len = self.len.load(Ordering::Relaxed);
        let capacity = self.capacity.load(Ordering::Relaxed);
        (len, capacity.saturating_sub(len))
    }

    /// The executor's tick: Redis's `clientsCronResizeQueryBuffer` for a client idle for
    /// `idle_seconds`. Returns the resize to ask of the task, if any, and starts a new peak.
    pub fn cron(&self, idle_seconds: i64) -> Option<Resize> {
        let (len, free) = self.sizes();
        let capacity = len + free;
        let bulk = self.bulk.load(Ordering::Relaxed);
        let peak = self.peak.load(Ordering::Relaxed).max(bulk);
        let resize = if free <= MIN_WASTE {
            None
        } else if idle_seconds > IDLE_SECONDS {
            Some(Resize::Free)
        } else if capacity > RESIZE_THRESHOLD && capacity / 2 > peak {
            Some(Resize::Shrink)
        } else {
            None
        };
        self.peak.store(len, Ordering::Relaxed);
        if let Some(resize) = resize {
            let code = match resize {
                Resize::Free => 1,
                Resize::Shrink => 2,
            };
            self.request.store(code, Ordering::Relaxed);
        }
        resize
    }

    /// The task, before it waits for input: the resize asked of it, if any.
    #[inline]
    pub fn take_request(&self) -> Option<Resize> {
        if self.request.load(Ordering::Relaxed) == 0 {
            return None;
        }
        match self.request.swap(0, Ordering::Relaxed) {
            1 => Some(Resize::Free),
            2 => Some(Resize::Shrink),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_clients_free_their_room_and_big_buffers_shrink_to_their_peak() {
        let q = QueryBuffer::default();
        q.report(26, 16 * 1024);
        q.report(0, 16 * 1024);
        assert_eq!(q.sizes(), (0, 16 * 1024));
        assert_eq!(q.cron(2), None, "16 KB is the usual size while active");
        assert_eq!(q.cron(3), Some(Resize::Free), "idle more than 2 s");
        assert_eq!(q.take_request(), Some(Resize::Free));
        assert_eq!(q.take_request(), None);
        q.report(0, 0);
        assert_eq!(q.cron(10), None, "nothing left to give back");

        // A 400 KB request passed: not shrunk in the tick that saw it (its peak)...
        q.report(400_000, 400_000 + 16 * 1024);
        q.report(0, 400_000 + 16 * 1024);
        assert_eq!(q.cron(0), None);
        // ...but in the next one, the peak since being small.
        q.report(130, 400_000 + 16 * 1024);
        assert_eq!(q.cron(0), Some(Resize::Shrink));
        assert_eq!(q.take_request(), Some(Resize::Shrink));
        // A buffer under the threshold keeps its room.
        q.report(0, 30_000);
        q.cron(0);
        assert_eq!(q.cron(0), None);
    }

    #[test]
    fn room_made_for_a_big_argument_stays_until_the_client_is_idle() {
        let q = QueryBuffer::default();
        // The header of a 1,000,000-byte argument was read; the task made room for it.
        q.awaiting_bulk(1_000_002);
        q.report(0, 1_000_002);
        assert_eq!(q.cron(0), None, "not shrunk below the argument in progress");
        assert_eq!(q.cron(2), None);
        assert_eq!(q.cron(3), Some(Resize::Free), "given back once idle");
        q.no_bulk();
        q.report(0, 1_000_002);
        q.cron(0);
        assert_eq!(
            q.cron(0),
            Some(Resize::Shrink),
            "without it, a big empty buffer shrinks"
        );
    }
}
