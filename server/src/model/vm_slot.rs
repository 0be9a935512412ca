//! Where the executor keeps its Lua: the two VMs ([`VmSlot`]: EVAL's and the functions') and
//! what other clients may learn of a script running too long ([`RunningScript`]).
//!
//! They are part of the server state (`crate::model::state`), so they sit with the rest of what the
//! executor owns; what runs a script against the server — the host its `redis.call` reaches and
//! the busy loop — is a service above the command kernel (`crate::services::script_host`, `crate::services::busy`).

use bytes::Bytes;
use embedis_scripting::{Functions, ScriptVm};
use std::time::Instant;

use crate::base::compat::CompatVersion;
use crate::base::error::Error;

/// Bytes a script's Lua VM may allocate before its allocations fail with an error.
pub const LUA_MEMORY_LIMIT: usize = 1 << 30;

/// A Lua VM that belongs to the executor: created at first use, on the executor's thread, and
/// lent out for one command at a time ([`VmSlot::take`] / [`VmSlot::put_back`]), so that a
/// running script's host can borrow the server state mutably. EVAL's [`ScriptVm`] and the
/// functions VM ([`Functions`]) each have one.
pub struct VmSlot<T> {
    vm: Option<Box<T>>,
    /// The VM offers `os.clock`, as Redis 7.4's sandbox does (7.0's has no `os`).
    os_clock: bool,
}

impl<T> VmSlot<T> {
    /// An empty slot whose VM, once created, is the sandbox of Redis `version`.
    pub fn for_version(version: CompatVersion) -> Self {
        VmSlot {
            vm: None,
            os_clock: version >= CompatVersion::V7_4,
        }
    }
}

// SAFETY: the VM is created on the executor's thread at first use and never leaves it: the
// engine moves between threads only before it starts serving (threaded I/O mode hands the new
// engine to its executor thread), when the slot is still empty.
unsafe impl<T> Send for VmSlot<T> {}

/// How a slot creates its VM.
pub trait LuaVm: Sized {
    fn create(memory_limit: usize, os_clock: bool) -> Result<Self, String>;
}

impl LuaVm for ScriptVm {
    fn create(memory_limit: usize, os_clock: bool) -> Result<Self, String> {
        ScriptVm::with_os_clock(memory_limit, os_clock).map_err(|e| e.to_string())
    }
}

impl LuaVm for Functions {
    fn create(memory_limit: usize, os_clock: bool) -> Result<Self, String> {
        Functions::with_os_clock(memory_limit, os_clock).map_err(|e| e.to_string())
    }
}

impl<T: LuaVm> VmSlot<T> {
    /// Takes the VM out for one command, creating it at first use.
    pub fn take(&mut self) -> Result<Box<T>, Error> {
        match self.vm.take() {
            Some(vm) => Ok(vm),
            None => T::create(LUA_MEMORY_LIMIT, self.os_clock)
                .map(Box::new)
                .map_err(|e| Error::owned(format!("ERR could not create the Lua VM: {e}"))),
        }
    }
}

impl<T> VmSlot<T> {
    /// Puts the VM back after the command.
    pub fn put_back(&mut self, vm: Box<T>) {
        self.vm = Some(vm);
    }

    /// The VM, if a command ever created it (INFO, SCRIPT EXISTS, FUNCTION LIST… without
    /// creating one).
    pub fn get(&self) -> Option<&T> {
        self.vm.as_deref()
    }

    pub fn get_mut(&mut self) -> Option<&mut T> {
        self.vm.as_deref_mut()
    }

    /// Takes the VM away for good, if there is one: the next command creates a fresh one.
    pub fn discard(&mut self) -> Option<Box<T>> {
        self.vm.take()
    }
}

/// What kind of script is running: the BUSY and kill texts name their own KILL command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptKind {
    Eval,
    Function,
}

/// A script that has run past the threshold, as FUNCTION STATS shows it.
#[derive(Debug, Clone)]
pub struct RunningScript {
    pub kind: ScriptKind,
    pub name: String,
    /// The command that runs it (FCALL name numkeys …).
    pub command: Vec<Bytes>,
    pub started: Instant,
    /// The function libraries and functions loaded (the functions are lent to the running
    /// function, so FUNCTION STATS reads them here).
    pub function_counts: (usize, usize),
}
