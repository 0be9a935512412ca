//! [`Transaction`]: a client's open MULTI — the commands queued for EXEC and whether EXEC is
//! already bound to fail — and the EXECABORT text a refused EXEC answers.
//!
//! It belongs to the client's state (`ClientState::multi`), below the command table: a queued
//! command is kept by its id in the table, and the EXEC handler
//! (`crate::commands::transactions`) looks it up again when it runs the queue.

use bytes::Bytes;

use crate::base::error::Error;
use crate::base::flags::Flags;

/// An open transaction: what MULTI started.
#[derive(Default)]
pub struct Transaction {
    /// The queued commands — their ids in the command table — with their arguments, in order.
    pub commands: Vec<(usize, Vec<Bytes>)>,
    /// The union of the queued commands' flags (CLIENT PAUSE WRITE holds back an EXEC that
    /// would write).
    pub flags: Flags,
    /// A command was refused while queueing: EXEC will answer EXECABORT.
    pub aborted: bool,
    /// A queued command lacks the `stale` flag (Redis's `cmd_inv_flags & CMD_STALE`): a stale
    /// replica refuses the EXEC with `-MASTERDOWN`.
    pub not_stale: bool,
}

impl Transaction {
    /// True if running the queue may write (or replicate), as CLIENT PAUSE WRITE sees it.
    pub fn may_write(&self) -> bool {
        self.flags.contains(Flags::WRITE) || self.flags.contains(Flags::MAY_REPLICATE)
    }

    /// Queues the command with table id `command`, whose effective flags are `flags` (see
    /// `Engine::effective_flags`). Like Redis, a transaction already bound to fail (aborted, or
    /// a watched key changed) keeps nothing more: the reply is the same.
    pub fn queue(&mut self, command: usize, flags: Flags, args: Vec<Bytes>, broken: bool) {
        if self.aborted || broken {
            return;
        }
        self.flags = self.flags | flags;
        self.not_stale |= !flags.contains(Flags::STALE);
        self.commands.push((command, args));
    }
}

/// The commands that act on the transaction itself and so are never queued. (QUIT is not
/// queued either: it closes the connection.)
pub fn is_transaction_control(full_name: &str) -> bool {
    matches!(
        full_name,
        "exec" | "discard" | "multi" | "watch" | "reset" | "quit"
    )
}

/// The error a refused EXEC answers: EXECABORT with the gate's reason — a plain error without
/// its `ERR` code, an error with its own code (NOAUTH…) whole, as Redis words it.
pub fn exec_abort_error(reason: &Error) -> Error {
    let line = reason.line();
    let message = line.strip_prefix(b"ERR ").unwrap_or(&line);
    let mut text = b"EXECABORT Transaction discarded because of: ".to_vec();
    text.extend_from_slice(message);
    Error::bytes(text)
}
