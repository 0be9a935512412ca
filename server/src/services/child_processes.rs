//! What the keyspace does while a child process runs — BGSAVE's, an AOF rewrite's RDB base, a
//! diskless full sync's pipe: its key tables do not resize (unless a table holds five times as
//! many keys as buckets), as Redis's `updateDictResizePolicy` holds them while it has a child.
//!
//! Redis does it to spare the child copy-on-write copies of the table; our children are not
//! forks, but the policy is observable (DEBUG HTSTATS, memory during a save) and cheap, and
//! keeping it means a table grows and shrinks when Redis's would. The policy is set when a
//! child starts and by every tick (which sees the children end).

use crate::model::keyspace::Keyspace;
use crate::model::state::ServerState;

/// True while one of the server's child processes runs.
pub fn any_running(server: &ServerState) -> bool {
    let bgsave = server
        .persistence
        .bgsave
        .as_ref()
        .is_some_and(|job| job.child.is_some());
    let rewrite = server
        .aof
        .rewrite
        .as_ref()
        .is_some_and(|job| job.child.is_some());
    bgsave || rewrite || server.repl.transfer.is_some()
}

/// Lets the key tables resize, or holds them, as the children running decide.
pub fn update_resize_policy(ks: &mut Keyspace, server: &ServerState) {
    ks.set_resize_allowed(!any_running(server));
}
