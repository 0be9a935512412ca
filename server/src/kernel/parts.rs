//! What a command that runs other commands is lent: the engine's data ([`Parts`]) and how the
//! inner command comes to run ([`How`]). Their own module, below `call` and the tracking
//! invalidations that `call` triggers, so that both can name them without naming each other.

use bytes::Bytes;

use crate::kernel::table::Registry;
use crate::model::client::Clients;
use crate::model::keyspace::Keyspace;
use crate::model::state::ServerState;

/// The engine's data, lent to a command that runs other commands.
pub struct Parts<'a> {
    pub ks: &'a mut Keyspace,
    pub server: &'a mut ServerState,
    pub clients: &'a mut Clients,
    /// The command table (built by the handlers' layer, kept by the engine).
    pub registry: &'static Registry,
}

/// How a command comes to run.
#[derive(Debug, Clone, Copy)]
pub struct How<'k> {
    /// Count it in the statistics and feed MONITOR (false for a blocked command run again: it
    /// was counted when it first ran).
    pub counted: bool,
    /// May it block? False inside MULTI and scripts, where Redis runs blocking commands as their
    /// non-blocking twins.
    pub may_block: bool,
    /// The key whose write woke a blocked command.
    pub woken_by: Option<&'k [u8]>,
    /// Run from a script: MONITOR shows it as `[db lua]`.
    pub from_script: bool,
    /// Run by another command (EXEC, a script's `redis.call`): the client's own tracking
    /// invalidations wait for the outer command's reply (see [`crate::kernel::invalidation`]).
    pub nested: bool,
    /// For a script's command: the command running the script (EVAL's or FCALL's arguments),
    /// whose declared keys client tracking remembers when the script reads.
    pub script: Option<&'k [Bytes]>,
}

impl How<'static> {
    /// A client's own command, run for the first time.
    pub const FRESH: How<'static> = How {
        counted: true,
        may_block: true,
        woken_by: None,
        from_script: false,
        nested: false,
        script: None,
    };
    /// A command run by EXEC.
    pub const IN_MULTI: How<'static> = How {
        counted: true,
        may_block: false,
        woken_by: None,
        from_script: false,
        nested: true,
        script: None,
    };
    /// A command run by a script's `redis.call`.
    pub const FROM_SCRIPT: How<'static> = How {
        counted: true,
        may_block: false,
        woken_by: None,
        from_script: true,
        nested: true,
        script: None,
    };
}
