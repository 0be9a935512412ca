//! Disk faults on demand: the append-only file's writes and fsyncs failing as a full or broken
//! disk makes them fail (`ENOSPC`, `EIO`), including a short write that leaves part of the
//! bytes in the file, so that tests can check what Redis promises about them — writes refused
//! with `-MISCONF` while the AOF cannot be written, the server stopping rather than answering a
//! write it could not persist under `appendfsync always`, and no partial command left in the
//! file — without a full disk or root.
//!
//! [`DiskFaults`] is a rule list shared by the server's controllers (the Rust API through
//! `Faults::disk`, DEBUG FAULT DISK over the wire) and the file layer that consults it before
//! each write and fsync ([`crate::model::aof_state::Appender`]). A flag says whether any rule
//! exists, so a write with none set costs one atomic load. This is a base-layer mechanism: it
//! knows files and errno values, not commands or clients.

use parking_lot::Mutex;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The file operation a rule fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskOp {
    Write,
    Fsync,
}

/// One disk fault: which operation on the AOF fails, with which errno, how many more times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFault {
    pub op: DiskOp,
    /// The errno the operation fails with (`libc::ENOSPC`, `libc::EIO`, …).
    pub errno: i32,
    /// For a write: this many bytes of it reach the file before the error (a short write, as a
    /// disk that fills up in the middle of a write gives); 0 = none.
    pub written_first: usize,
    /// How many more operations it fails; `None` = every one until cleared.
    pub times: Option<u64>,
}

impl DiskFault {
    /// Every AOF write fails with `errno` (narrow it with [`DiskFault::times`]).
    pub fn write(errno: i32) -> DiskFault {
        DiskFault {
            op: DiskOp::Write,
            errno,
            written_first: 0,
            times: None,
        }
    }

    /// Every AOF fsync fails with `errno`.
    pub fn fsync(errno: i32) -> DiskFault {
        DiskFault {
            op: DiskOp::Fsync,
            ..DiskFault::write(errno)
        }
    }

    /// The write puts `bytes` into the file before failing (a short write).
    pub fn short(mut self, bytes: usize) -> DiskFault {
        self.written_first = bytes;
        self
    }

    /// Only the next `n` operations (0 = all of them).
    pub fn times(mut self, n: u64) -> DiskFault {
        self.times = (n != 0).then_some(n);
        self
    }

    /// The rule as DEBUG FAULT LIST shows it: the arguments after `DEBUG FAULT`.
    pub fn describe(&self) -> String {
        let op = match self.op {
            DiskOp::Write => "WRITE",
            DiskOp::Fsync => "FSYNC",
        };
        let errno = errno_name(self.errno);
        let times = self.times.unwrap_or(0);
        format!("DISK AOF {op} {errno} {times} SHORT {}", self.written_first)
    }
}

/// The errno names DEBUG FAULT DISK takes, as their C names.
const ERRNOS: &[(&str, i32)] = &[
    ("ENOSPC", libc::ENOSPC),
    ("EIO", libc::EIO),
    ("EDQUOT", libc::EDQUOT),
    ("EROFS", libc::EROFS),
    ("EFBIG", libc::EFBIG),
];

/// An errno by its C name (ASCII case folded).
pub fn errno_by_name(name: &str) -> Option<i32> {
    ERRNOS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, e)| e)
}

fn errno_name(errno: i32) -> String {
    ERRNOS
        .iter()
        .find(|&&(_, e)| e == errno)
        .map_or_else(|| errno.to_string(), |(n, _)| n.to_string())
}

/// What a failing operation does: the bytes to let through first, and the error.
#[derive(Debug)]
pub struct Failure {
    pub written_first: usize,
    pub error: io::Error,
}

/// One server's disk fault rules; clones share them.
#[derive(Clone, Default, Debug)]
pub struct DiskFaults {
    inner: Arc<Inner>,
}

#[derive(Default, Debug)]
struct Inner {
    any: AtomicBool,
    rules: Mutex<Vec<DiskFault>>,
}

impl DiskFaults {
    /// Adds a rule after the existing ones (the first matching rule applies).
    pub fn add(&self, rule: DiskFault) {
        let mut rules = self.inner.rules.lock();
        rules.push(rule);
        self.inner.any.store(true, Ordering::Release);
    }

    /// The rules in force, with their remaining counts.
    pub fn rules(&self) -> Vec<DiskFault> {
        self.inner.rules.lock().clone()
    }

    /// Removes every rule: the disk works again.
    pub fn clear(&self) {
        let mut rules = self.inner.rules.lock();
        rules.clear();
        self.inner.any.store(false, Ordering::Release);
    }

    /// The failure the next `op` meets, spending one use of the first matching rule; `None`
    /// when the disk works (one atomic load while no rule is set).
    #[inline]
    pub fn take(&self, op: DiskOp) -> Option<Failure> {
        if !self.inner.any.load(Ordering::Acquire) {
            return None;
        }
        let mut rules = self.inner.rules.lock();
        let at = rules.iter().position(|r| r.op == op)?;
        let rule = rules[at].clone();
        if let Some(n) = rules[at].times.as_mut() {
            *n -= 1;
            if *n == 0 {
                rules.remove(at);
            }
        }
        self.inner.any.store(!rules.is_empty(), Ordering::Release);
        Some(Failure {
            written_first: rule.written_first,
            error: io::Error::from_raw_os_error(rule.errno),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counted_rule_is_spent_and_the_first_matching_one_applies() {
        let faults = DiskFaults::default();
        assert!(faults.take(DiskOp::Write).is_none());
        faults.add(DiskFault::fsync(libc::EIO).times(1));
        faults.add(DiskFault::write(libc::ENOSPC).short(3).times(2));
        let first = faults.take(DiskOp::Write).unwrap();
        assert_eq!(first.written_first, 3);
        assert_eq!(first.error.raw_os_error(), Some(libc::ENOSPC));
        assert!(faults.take(DiskOp::Write).is_some());
        assert!(faults.take(DiskOp::Write).is_none());
        assert_eq!(
            faults.take(DiskOp::Fsync).unwrap().error.raw_os_error(),
            Some(libc::EIO)
        );
        assert!(faults.take(DiskOp::Fsync).is_none());
        assert!(faults.rules().is_empty());
    }

    #[test]
    fn rules_describe_themselves_as_debug_fault_takes_them() {
        let rule = DiskFault::write(libc::ENOSPC).short(10).times(4);
        assert_eq!(rule.describe(), "DISK AOF WRITE ENOSPC 4 SHORT 10");
        assert_eq!(errno_by_name("eio"), Some(libc::EIO));
        assert_eq!(errno_by_name("EWHAT"), None);
    }
}
