//! Client eviction (`maxmemory-clients`): closing the clients that use the most memory once
//! all clients together use more than the limit, as Redis 7.0's `evictClients` does. The
//! ledger and each client's figure are the model's ([`crate::model::client_memory`]); this
//! is the act, shared by the engine (after a command, a read, the tick) and the commands that
//! change what is allowed (CONFIG SET, CLIENT NO-EVICT).
//!
//! An evicted client is logged as Redis logs it, counted in INFO's `evicted_clients`, taken
//! out of the ledger at once (so that the next victim is chosen against the new sum) and
//! closed by the engine after the running command ([`EngineRequest::Kill`]), with nothing more
//! written to it.

use crate::model::client::{ClientState, Clients};
use crate::model::keyspace::Keyspace;
use crate::model::state::{EngineRequest, ServerState};

/// Counts `client`'s memory afresh; `output`: bytes of its running turn's replies (see
/// [`ClientState::memory_usage`]). Costs one branch while client eviction is off.
#[inline]
pub fn update(server: &mut ServerState, ks: &Keyspace, client: &mut ClientState, output: usize) {
    if server.client_memory.on() {
        let watched = ks.watches.watching(client.id).keys;
        server.client_memory.update(client, watched, output);
    }
}

/// Evicts clients, largest first, until their sum is back under the limit; `current` is the
/// running client (out of `clients` while its command runs). True if `current` was evicted:
/// its command's reply must not be sent.
pub fn evict(
    server: &mut ServerState,
    clients: &mut Clients,
    ks: &Keyspace,
    mut current: Option<&mut ClientState>,
    now_ms: i64,
) -> bool {
    if !server.client_memory.over() {
        return false;
    }
    let victims = server.client_memory.victims(clients, current.as_deref());
    let mut evicted_current = false;
    for id in victims {
        let client = match current.as_deref_mut() {
            Some(c) if c.id == id => {
                evicted_current = true;
                c
            }
            _ => match clients.get_mut(id) {
                Some(c) => c,
                None => continue,
            },
        };
        let watching = ks.watches.watching(id);
        let info = client.info_line(now_ms, watching, server.config.compat_version);
        server.log.notice(&format!("Evicting client: {info}"));
        // Its connection gives back what it holds once it runs (see `closing_bytes`): the
        // figure it was counted at, output waiting for its write included.
        let held = client.mem_usage.max(client.handle.held() as u64);
        server.client_memory.forget(client);
        client.obuf.closing = true;
        client.pending.clear();
        server.client_memory.closing(client.handle.clone(), held);
        server.client_memory.evicted += 1;
        server.requests.push(EngineRequest::Kill { id });
    }
    if server.client_memory.over() {
        server
            .log
            .warning("Over client maxmemory after evicting all evictable clients");
    }
    evicted_current
}

/// Counts every client afresh (client eviction was just turned on), then evicts.
pub fn recount_all(
    server: &mut ServerState,
    clients: &mut Clients,
    ks: &Keyspace,
    current: &mut ClientState,
) {
    for client in clients.iter_mut() {
        update(server, ks, client, 0);
    }
    update(server, ks, current, 0);
}
