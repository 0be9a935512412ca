//! The server's side of Redis 7 functions: where the functions VM lives, and the host a library
//! runs against while it loads.
//!
//! Like EVAL's VM, the functions VM ([`embedis_scripting::Functions`], which also owns the
//! libraries) belongs to the executor, in a [`crate::model::vm_slot::VmSlot`]. Running a
//! function uses EVAL's [`crate::services::script_host::ScriptHost`]; loading a library uses [`LoadHost`],
//! which can only log and enforce the load time limit (nothing else of `redis.*` exists at load
//! time).

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use embedis_protocol::Version;
use embedis_scripting::{Host, HostLog, Interrupt};

use crate::base::log::Logger;
use crate::kernel::table::Registry;

/// How long a library's code may run at load time before it is stopped (Redis: 500 ms).
pub const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// The host of a library's code while it loads: `redis.log` and the time limit.
pub struct LoadHost<'a> {
    pub log: &'a Logger,
    /// For `redis.call`'s command names checked at load time (none can run).
    pub registry: &'static Registry,
    pub started: Instant,
}

impl Host for LoadHost<'_> {
    fn call(&mut self, _args: &[Bytes], _version: Version, out: &mut BytesMut) {
        // redis.call does not exist at load time; nothing can reach this.
        out.extend_from_slice(b"-ERR redis.call is not available while a library loads\r\n");
    }

    fn log(&mut self, level: HostLog, message: &[u8]) {
        self.log
            .log(level.into(), &String::from_utf8_lossy(message));
    }

    fn interrupt(&mut self) -> Interrupt {
        if self.started.elapsed() > LOAD_TIMEOUT {
            Interrupt::Kill("ERR FUNCTION LOAD timeout")
        } else {
            Interrupt::Continue
        }
    }

    /// FUNCTION LOAD runs no command: only whether the command exists is known here.
    fn acl_check(&mut self, args: &[bytes::Bytes]) -> Option<bool> {
        self.registry.lookup(args).ok().map(|_| true)
    }
}
