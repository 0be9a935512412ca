//! Reply buffers: what CLIENT LIST reports of each connection's reply buffer (`rbs`, its size,
//! and `rbp`, its recent peak) and Redis's rule for sizing it (`clientsCron`'s resize, Redis 7.0
//! on): a buffer whose recent peak stays under half its size shrinks to that peak (not under
//! 1 KB), and one that filled up doubles (not over 16 KB). The peak starts again every
//! `peak-reset-time` (5 s; DEBUG REPLYBUFFER tunes both rules, as in Redis).
//!
//! The buffer itself is the connection task's output buffer (`io/net.rs`), which keeps this
//! size between turns: an idle connection holds 1 KB rather than 16 KB, as in Redis. The task
//! notes how much of it each turn's replies used (one load and, when the peak grows, one store,
//! relaxed); the executor's tick reads the peak and decides the size.

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

/// A new buffer's size and the most it grows to (Redis's PROTO_REPLY_CHUNK_BYTES).
pub const REPLY_CHUNK: usize = 16 * 1024;
/// The least it shrinks to (PROTO_REPLY_MIN_BYTES).
const REPLY_MIN: usize = 1024;
/// How often the peak starts again, by default (REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME).
pub const DEFAULT_PEAK_RESET_MS: i64 = 5000;

/// DEBUG REPLYBUFFER's settings: how often the peak starts again (-1: never), and whether
/// buffers are resized at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyTuning {
    pub peak_reset_ms: i64,
    pub resizing: bool,
}

impl Default for ReplyTuning {
    fn default() -> Self {
        ReplyTuning {
            peak_reset_ms: DEFAULT_PEAK_RESET_MS,
            resizing: true,
        }
    }
}

/// How many buffers shrank and grew (INFO's `reply_buffer_shrinks` and `_expands`).
#[derive(Debug, Default)]
pub struct ReplyResizes {
    pub shrinks: AtomicU64,
    pub expands: AtomicU64,
}

/// A connection's reply-buffer figures, shared by its task and the executor.
#[derive(Debug)]
pub struct ReplyBuffer {
    size: AtomicUsize,
    peak: AtomicUsize,
    last_reset_ms: AtomicI64,
}

impl Default for ReplyBuffer {
    fn default() -> Self {
        ReplyBuffer {
            size: AtomicUsize::new(REPLY_CHUNK),
            peak: AtomicUsize::new(0),
            last_reset_ms: AtomicI64::new(0),
        }
    }
}

impl ReplyBuffer {
    /// The task wrote a turn's replies of `bytes`: the buffer held as much of them as fits.
    #[inline]
    pub fn used(&self, bytes: usize) {
        let held = bytes.min(self.size.load(Ordering::Relaxed));
        if held > self.peak.load(Ordering::Relaxed) {
            self.peak.store(held, Ordering::Relaxed);
        }
    }

    /// The size the task keeps between turns.
    #[inline]
    pub fn size(&self) -> usize {
        self.size.load(Ordering::Relaxed)
    }

    /// `(rbs, rbp)` as CLIENT LIST shows them.
    pub fn sizes(&self) -> (usize, usize) {
        (self.size(), self.peak.load(Ordering::Relaxed))
    }

    /// The executor's tick: Redis's `clientsCronResizeOutputBuffer` at `now_ms`, counted in
    /// `resizes`. Between turns the buffer holds nothing, so a peak starts again at zero. True
    /// if the buffer shrank: the task is to give the room back.
    pub fn cron(&self, now_ms: i64, tuning: ReplyTuning, resizes: &ReplyResizes) -> bool {
        if !tuning.resizing {
            return false;
        }
        let size = self.size();
        let peak = self.peak.load(Ordering::Relaxed);
        let new_size = if size / 2 >= REPLY_MIN && peak < size / 2 {
            resizes.shrinks.fetch_add(1, Ordering::Relaxed);
            Some(REPLY_MIN.max(peak + 1))
        } else if size * 2 < REPLY_CHUNK * 2 && peak == size {
            resizes.expands.fetch_add(1, Ordering::Relaxed);
            Some(REPLY_CHUNK.min(size * 2))
        } else {
            None
        };
        let last = self.last_reset_ms.load(Ordering::Relaxed);
        if tuning.peak_reset_ms >= 0 && now_ms - last >= tuning.peak_reset_ms {
            self.peak.store(0, Ordering::Relaxed);
            self.last_reset_ms.store(now_ms, Ordering::Relaxed);
        }
        if let Some(new) = new_size {
            self.size.store(new, Ordering::Relaxed);
        }
        new_size.is_some_and(|new| new < size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEVER: ReplyTuning = ReplyTuning {
        peak_reset_ms: -1,
        resizing: true,
    };

    #[test]
    fn an_idle_buffer_shrinks_to_1_kb_and_a_busy_one_grows_back_to_16_kb() {
        let b = ReplyBuffer::default();
        let counts = ReplyResizes::default();
        let tuning = ReplyTuning {
            peak_reset_ms: 100,
            resizing: true,
        };
        b.used(26);
        let mut now = 0;
        for _ in 0..8 {
            now += 100;
            b.cron(now, tuning, &counts);
        }
        assert_eq!(
            b.sizes().0,
            REPLY_MIN,
            "down to 1 KB at once: the peak is small"
        );
        // A 32 KB reply fills the buffer every turn: it doubles up to 16 KB.
        for _ in 0..8 {
            b.used(32 * 1024 + 7);
            now += 100;
            b.cron(now, NEVER, &counts);
        }
        assert_eq!(b.sizes(), (REPLY_CHUNK, REPLY_CHUNK));
        assert_eq!(counts.expands.load(Ordering::Relaxed), 4);
        assert_eq!(counts.shrinks.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_peak_just_under_half_shrinks_to_it_and_resizing_can_be_off() {
        let b = ReplyBuffer::default();
        let counts = ReplyResizes::default();
        b.used(5000);
        b.cron(0, NEVER, &counts);
        assert_eq!(b.sizes().0, 5001);
        let off = ReplyTuning {
            peak_reset_ms: 0,
            resizing: false,
        };
        b.cron(10, off, &counts);
        assert_eq!(
            b.sizes(),
            (5001, 5000),
            "nothing changes while resizing is off"
        );
    }
}
