//! `Faults`: a server's fault injection, the Rust API's `Server::faults()` argument for argument
//! — the failures that break locks: an error on the next matching command, a reply held back,
//! a connection closed without a reply, the whole server paused, every connection dropped.

use std::sync::Arc;

use pyo3::prelude::*;

use crate::convert::duration as to_duration;
use crate::members::{Group, Raise};

#[pyclass(module = "embedis._embedis", frozen)]
pub struct Faults {
    group: Arc<Group>,
    index: usize,
}

impl Faults {
    pub fn new(group: Arc<Group>, index: usize) -> Faults {
        Faults { group, index }
    }

    fn with<T>(&self, f: impl FnOnce(embedis::Faults<'_>) -> T) -> PyResult<T> {
        self.group
            .with_server(self.index, |s| f(s.faults()))
            .raise()
    }
}

#[pymethods]
impl Faults {
    /// The next `times` commands `command` on a key matching `key_pattern` fail with `error`
    /// (e.g. `faults.error("set", "lock:*", "ERR injected", 2)`).
    #[pyo3(signature = (command, key_pattern, error, times=1))]
    fn error(&self, command: &str, key_pattern: &str, error: &str, times: u64) -> PyResult<()> {
        self.with(|f| f.error(command, key_pattern, error, times))
    }

    /// Replies to matching commands are held back by `delay` (a `timedelta` or milliseconds).
    fn latency(&self, command: &str, key_pattern: &str, delay: &Bound<'_, PyAny>) -> PyResult<()> {
        let delay = to_duration(delay)?;
        self.with(|f| f.latency(command, key_pattern, delay))
    }

    /// Matching commands close their connection instead of answering.
    fn close(&self, command: &str, key_pattern: &str) -> PyResult<()> {
        self.with(|f| f.close(command, key_pattern))
    }

    /// The server accepts but answers nothing for `duration`, as in a GC pause.
    fn pause(&self, duration: &Bound<'_, PyAny>) -> PyResult<()> {
        let duration = to_duration(duration)?;
        self.with(|f| f.pause(duration))
    }

    /// A replica stops applying its primary's stream while held (and catches up after).
    #[pyo3(signature = (held=true))]
    fn hold_replication(&self, held: bool) -> PyResult<()> {
        self.with(|f| f.hold_replication(held))
    }

    /// The end of the current pause, in UNIX ms on the server's clock, or None.
    #[getter]
    fn paused_until(&self) -> PyResult<Option<i64>> {
        self.with(|f| f.paused_until())
    }

    /// Closes every client connection now; returns how many.
    fn drop_connections(&self) -> PyResult<usize> {
        self.with(|f| f.drop_connections())
    }

    /// The append-only file's next `times` writes (0 = all) fail with `errno` (Python's
    /// `errno.ENOSPC`, `errno.EIO`…), each after `short` of its bytes reached the file: a full
    /// or failing disk. Writes then get `-MISCONF`, or under `appendfsync always` the server
    /// stops without answering, as Redis does.
    #[pyo3(signature = (errno, short=0, times=0))]
    fn disk_write_error(&self, errno: i32, short: usize, times: u64) -> PyResult<()> {
        self.with(|f| f.disk_write_error(errno, short, times))
    }

    /// The append-only file's next `times` fsyncs (0 = all) fail with `errno`.
    #[pyo3(signature = (errno, times=0))]
    fn disk_fsync_error(&self, errno: i32, times: u64) -> PyResult<()> {
        self.with(|f| f.disk_fsync_error(errno, times))
    }

    /// The rules in force, described.
    fn list(&self) -> PyResult<Vec<String>> {
        self.with(|f| f.list().iter().map(|r| format!("{r:?}")).collect())
    }

    /// Removes every rule.
    fn clear(&self) -> PyResult<()> {
        self.with(|f| f.clear())
    }
}
