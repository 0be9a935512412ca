//! The server's side of Redis 7 functions: where the functions VM lives, and the host a library
//! runs against while it loads.
//!
//! Like EVAL's VM, the functions VM ([`embedis_scripting::Functions`], which also owns the
//! libraries) belongs to the executor, is created at first use and is lent out for one command
//! at a time, so that a running function's host can borrow the server state mutably. Running a
//! function uses EVAL's [`crate::scripting::ScriptHost`]; loading a library uses [`LoadHost`],
//! which can only log and enforce the load time limit (nothing else of `redis.*` exists at load
//! time).

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use embedis_protocol::Version;
use embedis_scripting::{Functions, Host, HostLog, Interrupt};

use crate::command::registry;
use crate::config::LogLevel;
use crate::log::Logger;

/// How long a library's code may run at load time before it is stopped (Redis: 500 ms).
pub const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// The functions VM slot in the server state.
#[derive(Default)]
pub struct FunctionsSlot {
    functions: Option<Box<Functions>>,
}

// SAFETY: as for `crate::scripting::Scripting`: the VM is created on the executor's thread at
// first use and never leaves it.
unsafe impl Send for FunctionsSlot {}

impl FunctionsSlot {
    /// Takes the VM out for one command, creating it at first use.
    pub fn take(&mut self) -> Result<Box<Functions>, String> {
        match self.functions.take() {
            Some(functions) => Ok(functions),
            None => Functions::new(crate::scripting::LUA_MEMORY_LIMIT)
                .map(Box::new)
                .map_err(|e| format!("ERR could not create the Lua VM: {e}")),
        }
    }

    pub fn put_back(&mut self, functions: Box<Functions>) {
        self.functions = Some(functions);
    }

    /// The VM, if a function command ever created it (INFO, FUNCTION LIST without creating one).
    pub fn get(&self) -> Option<&Functions> {
        self.functions.as_deref()
    }

    pub fn get_mut(&mut self) -> Option<&mut Functions> {
        self.functions.as_deref_mut()
    }
}

/// The host of a library's code while it loads: `redis.log` and the time limit.
pub struct LoadHost<'a> {
    pub log: &'a Logger,
    pub started: Instant,
}

impl Host for LoadHost<'_> {
    fn call(&mut self, _args: &[Bytes], _version: Version, out: &mut BytesMut) {
        // redis.call does not exist at load time; nothing can reach this.
        out.extend_from_slice(b"-ERR redis.call is not available while a library loads\r\n");
    }

    fn log(&mut self, level: HostLog, message: &[u8]) {
        let level = match level {
            HostLog::Debug => LogLevel::Debug,
            HostLog::Verbose => LogLevel::Verbose,
            HostLog::Notice => LogLevel::Notice,
            HostLog::Warning => LogLevel::Warning,
        };
        self.log.log(level, &String::from_utf8_lossy(message));
    }

    fn interrupt(&mut self) -> Interrupt {
        if self.started.elapsed() > LOAD_TIMEOUT {
            Interrupt::Kill("ERR FUNCTION LOAD timeout")
        } else {
            Interrupt::Continue
        }
    }

    fn command_exists(&mut self, name: &[u8]) -> bool {
        registry().by_name(name).is_some()
    }
}
