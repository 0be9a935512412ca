//! The server as a running script sees it: the [`Host`] trait through which `redis.call`,
//! `redis.log`, the periodic interrupt check and the debugger's I/O reach the server, and the
//! [`RunState`] a run keeps in the VM's app data. Apart from [`crate::bridge`] (the `redis`
//! table) so that the debugger, which the bridge calls into, can reach the host too.

use bytes::{Bytes, BytesMut};
use embedis_protocol::Version;

/// Log levels of `redis.log`, as Redis numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostLog {
    Debug = 0,
    Verbose = 1,
    Notice = 2,
    Warning = 3,
}

/// What the periodic check during a script decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    Continue,
    /// Stop the script with this error line (SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE).
    Kill(&'static str),
}

/// The server, as a running script sees it.
pub trait Host {
    /// Runs `args` as a command of the script and appends its reply to `out`, in protocol
    /// `version` (the script's `redis.setresp`). Refusals (unknown command, wrong arity, a
    /// command not allowed from scripts, a write in a read-only script…) are error replies too.
    fn call(&mut self, args: &[Bytes], version: Version, out: &mut BytesMut);
    /// `redis.log`: writes `message` to the server log at `level`.
    fn log(&mut self, level: HostLog, message: &[u8]);
    /// Called every few thousand Lua instructions: time limits, SCRIPT KILL.
    fn interrupt(&mut self) -> Interrupt;
    /// `redis.acl_check_cmd`: may the script's user run this command line? `None` if there is
    /// no such command.
    fn acl_check(&mut self, args: &[Bytes]) -> Option<bool>;
    /// The script ends with the error reply `line` (raised, or an error table returned).
    /// `already_counted`: the error came from a command the script ran (Redis marks such tables
    /// `ignore_error_stats_update`), so errorstats saw it when the command failed.
    fn script_error(&mut self, _line: &[u8], _already_counted: bool) {}
    /// `redis.set_repl`: the script's next commands propagate to the AOF if `flags & 1`, to
    /// the replicas if `flags & 2`.
    fn set_repl(&mut self, _flags: u8) {}
    /// True if the last [`Host::call`] was refused by the script gates (the command did not
    /// run): the debugger logs such an error differently.
    fn refused(&self) -> bool {
        false
    }
    /// A debugging session (see [`crate::debugger`]): writes `bytes` to the debugging client
    /// now, waiting until they are sent.
    fn debug_write(&mut self, _bytes: &[u8]) {}
    /// A debugging session: waits for the client's next bytes and appends them to `buf`.
    /// False if the client is gone.
    fn debug_read(&mut self, _buf: &mut Vec<u8>) -> bool {
        false
    }
}

/// The state of the script being run, kept in the VM's app data.
pub struct RunState {
    /// The host lent for this run. Only dereferenced while [`crate::ScriptVm::run`] holds the
    /// borrow it was made from.
    pub host: *mut (dyn Host + 'static),
    /// The script's protocol (`redis.setresp`).
    pub resp: Version,
    /// The host said stop: the hook now fires at every instruction.
    pub killed: bool,
}
