//! A diskless full sync in progress through a child process: what Redis keeps in
//! `server.rdb_pipe_conns`, `rdb_child_pid` and each replica's `repl_last_partial_write`.
//!
//! The image goes through the child ([`crate::base::formats::rdb_pipe_child`]); the I/O
//! layer reads it back piece by piece and hands each piece to every target still attached,
//! reading the next only once every target's connection has written the last (the slowest
//! replica sets the pace, and no replica's output holds more than a piece or so of image).
//! This is the bookkeeping: the child, the targets, how far each got, and whether the pipe
//! has been read to its end. The service that drives it is `services::rdb_transfer`.

use crate::base::formats::rdb_child::ChildEnd;
use crate::base::formats::rdb_pipe_child::{PipeChild, PipeOutput};
use crate::model::client_id::ClientId;

/// A target's connection holding this many bytes of image unwritten is congested: the pipe is
/// not read again until it has written them (Redis waits for each write to complete; a few
/// pieces in flight keep a fast replica's socket busy meanwhile).
pub const CONGESTED_BYTES: usize = 256 * 1024;

/// The transfer in progress.
pub struct RdbTransfer {
    pub child: PipeChild,
    /// The child's output, until the I/O layer's reader takes it.
    pub output: Option<PipeOutput>,
    /// The replicas it feeds, in the order they were attached.
    pub targets: Vec<Target>,
    /// The pipe gave its end: every byte of the image was handed to the targets.
    pub done_reading: bool,
    /// How the child ended, once collected.
    pub ended: Option<ChildEnd>,
}

/// A replica receiving the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub id: ClientId,
    /// While congested: its unwritten bytes when last looked at, and when (ms) they last went
    /// down — `repl-timeout` seconds without progress drop it (Redis's
    /// `repl_last_partial_write`).
    pub stalled: Option<(usize, i64)>,
}

impl std::fmt::Debug for RdbTransfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdbTransfer")
            .field("pid", &self.pid())
            .field("targets", &self.targets)
            .field("done_reading", &self.done_reading)
            .finish()
    }
}

impl RdbTransfer {
    pub fn new(child: PipeChild, output: PipeOutput, targets: &[ClientId]) -> RdbTransfer {
        RdbTransfer {
            child,
            output: Some(output),
            targets: targets
                .iter()
                .map(|&id| Target { id, stalled: None })
                .collect(),
            done_reading: false,
            ended: None,
        }
    }

    /// The child's pid, which also names this transfer for the reader (a later transfer has
    /// another).
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    pub fn feeds(&self, id: ClientId) -> bool {
        self.targets.iter().any(|t| t.id == id)
    }

    /// Forgets a target (its connection closed, or it was dropped).
    pub fn forget(&mut self, id: ClientId) {
        self.targets.retain(|t| t.id != id);
    }

    /// Notes `unsent` bytes of image waiting in `id`'s connection at `now_ms`: true if that
    /// congests it.
    pub fn note_unsent(&mut self, id: ClientId, unsent: usize, now_ms: i64) -> bool {
        self.targets
            .iter_mut()
            .find(|t| t.id == id)
            .is_some_and(|t| t.note_unsent(unsent, now_ms))
    }

    /// The targets that made no progress for `timeout_ms`.
    pub fn stalled_for(&self, timeout_ms: i64, now_ms: i64) -> Vec<ClientId> {
        self.targets
            .iter()
            .filter(|t| {
                t.stalled
                    .is_some_and(|(_, since)| now_ms - since > timeout_ms)
            })
            .map(|t| t.id)
            .collect()
    }
}

impl Target {
    /// [`RdbTransfer::note_unsent`] for this target: a congested target's progress clock
    /// restarts whenever its unwritten bytes go down.
    fn note_unsent(&mut self, unsent: usize, now_ms: i64) -> bool {
        if unsent < CONGESTED_BYTES {
            self.stalled = None;
            return false;
        }
        self.stalled = match self.stalled {
            Some((before, since)) if unsent >= before => Some((unsent, since)),
            _ => Some((unsent, now_ms)),
        };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Progress restarts the stall clock; standing still for the timeout makes a target stalled.
    #[test]
    fn a_target_that_writes_nothing_for_the_timeout_is_stalled() {
        let mut slow = Target {
            id: 1,
            stalled: None,
        };
        let mut fast = Target {
            id: 2,
            stalled: None,
        };
        assert!(!slow.note_unsent(1000, 0));
        assert_eq!(slow.stalled, None);
        assert!(slow.note_unsent(CONGESTED_BYTES, 0));
        assert!(slow.note_unsent(CONGESTED_BYTES + 10, 2500));
        assert_eq!(slow.stalled, Some((CONGESTED_BYTES + 10, 0)));
        assert!(fast.note_unsent(CONGESTED_BYTES * 2, 1000));
        assert!(fast.note_unsent(CONGESTED_BYTES + 1, 2600));
        assert_eq!(fast.stalled, Some((CONGESTED_BYTES + 1, 2600)));
        let all = [slow, fast];
        let stalled: Vec<_> = all
            .iter()
            .filter(|t| t.stalled.is_some_and(|(_, since)| 3000 - since > 2000))
            .map(|t| t.id)
            .collect();
        assert_eq!(stalled, vec![1]);
        assert!(!fast.note_unsent(0, 2700));
        assert_eq!(fast.stalled, None);
    }
}
