//! Fault injection for tests, through a server's handle: `server.faults()` answers errors, slows
//! replies, closes connections on chosen commands, pauses the whole server as a long GC pause
//! would, and drops every connection — the failures a distributed lock must survive.
//!
//! The rules are shared with the server directly (no round trip to its thread), so a rule is in
//! force when the call returns. Durations are on the server's clock: with
//! [`Clock::manual`](crate::Clock::manual) a held reply or a pause ends when the test advances
//! the clock past it; on a running clock they are real time. The same controls exist over the
//! wire as DEBUG FAULT / DEBUG PAUSE / DEBUG DROP-CONNECTIONS (see
//! `embedis_core::commands::debug_controls`).
//!
//! ```
//! use std::time::Duration;
//! let server = embedis::Server::builder().clock(embedis::Clock::manual()).start().unwrap();
//! // The next two SETs of a lock key fail; other commands run.
//! server.faults().error("set", "lock:*", "ERR injected", 2);
//! // Replies to GET arrive 200 ms (of the server's clock) late.
//! server.faults().latency("get", "*", Duration::from_millis(200));
//! assert_eq!(server.faults().list().len(), 2);
//! server.faults().clear();
//! ```

pub use embedis_core::{FaultAction, FaultRule};

use std::time::Duration;

use crate::Server;

/// How long [`Faults::drop_connections`] waits for the server's thread to do it.
const DROP_WAIT: Duration = Duration::from_secs(10);

/// The fault controls of one server (see the module documentation).
pub struct Faults<'a> {
    server: &'a Server,
}

impl Server {
    /// This server's fault controls.
    pub fn faults(&self) -> Faults<'_> {
        Faults { server: self }
    }
}

impl Faults<'_> {
    fn shared(&self) -> &embedis_core::Faults {
        self.server.handle.faults()
    }

    /// Adds a rule built with [`FaultRule`] (rules are tried in the order they were added; the
    /// first that matches applies).
    pub fn add(&self, rule: FaultRule) {
        self.shared().add(rule);
    }

    /// Answers `error` (e.g. `"ERR injected"`, `"READONLY …"`) instead of running the next
    /// `times` commands named `command` (a glob, case-insensitive) with a key matching
    /// `key_pattern` (a Redis glob; `"*"` = any command, keys or not). `times` 0 = every one.
    pub fn error(&self, command: &str, key_pattern: &str, error: &str, times: u64) {
        self.add(
            FaultRule::error(command, error)
                .keys(key_pattern)
                .times(times),
        );
    }

    /// Runs matching commands at once but holds each reply for `delay` on the server's clock
    /// (the connection's later requests wait behind it).
    pub fn latency(&self, command: &str, key_pattern: &str, delay: Duration) {
        self.add(FaultRule::latency(command, delay).keys(key_pattern));
    }

    /// Closes the connection, without running the command or replying, on matching commands.
    pub fn close(&self, command: &str, key_pattern: &str) {
        self.add(FaultRule::close(command).keys(key_pattern));
    }

    /// Pauses the whole server for `duration` on its clock: connections are still accepted but
    /// nothing is answered (DEBUG excepted); when the clock reaches the end, everything queued
    /// runs, in order. A new pause replaces the current one; `Duration::ZERO` ends it.
    pub fn pause(&self, duration: Duration) {
        let ms = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        let until = self.server.clock().now_ms().saturating_add(ms);
        self.shared().pause_until(until);
    }

    /// Cuts (`true`) or restores (`false`) this replica's link to its primary, as a network
    /// partition would: while cut, the primary's writes do not reach it and it acknowledges
    /// nothing (WAIT on the primary counts it out); once restored it applies what it missed.
    /// A failover meanwhile promotes a replica without those writes.
    pub fn hold_replication(&self, held: bool) {
        self.shared().hold_replication(held);
    }

    /// The end of the current pause, in UNIX ms on the server's clock.
    pub fn paused_until(&self) -> Option<i64> {
        self.shared().paused_until()
    }

    /// Closes every connection now, without writing anything more to them; returns how many
    /// (0 if the server's thread did not answer in time).
    pub fn drop_connections(&self) -> usize {
        self.shared().drop_connections(DROP_WAIT).unwrap_or(0)
    }

    /// The append-only file's next `times` writes (0 = every one until [`Faults::clear`]) fail
    /// with `errno` (`libc::ENOSPC` for a full disk, `libc::EIO`…), each after `short` of its
    /// bytes reached the file, as a disk filling up mid-write leaves them. The server answers
    /// as Redis does: under `appendfsync always` it stops without acknowledging the write;
    /// otherwise writes get `-MISCONF` until the disk takes them again.
    pub fn disk_write_error(&self, errno: i32, short: usize, times: u64) {
        let rule = embedis_core::base::disk_faults::DiskFault::write(errno)
            .short(short)
            .times(times);
        self.shared().disk().add(rule);
    }

    /// The append-only file's next `times` fsyncs (0 = every one) fail with `errno`.
    pub fn disk_fsync_error(&self, errno: i32, times: u64) {
        let rule = embedis_core::base::disk_faults::DiskFault::fsync(errno).times(times);
        self.shared().disk().add(rule);
    }

    /// The rules in force, with their remaining counts (disk faults are not listed; DEBUG
    /// FAULT LIST shows them).
    pub fn list(&self) -> Vec<FaultRule> {
        self.shared().rules()
    }

    /// Removes every rule, disk faults included (a pause runs on until its end).
    pub fn clear(&self) {
        self.shared().clear();
    }
}
