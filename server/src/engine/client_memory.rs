//! The engine's side of client eviction (`maxmemory-clients`, see
//! [`crate::kernel::client_eviction`]): where a client's memory moves on the engine's watch —
//! after its command (its turn's replies, a queued transaction, new subscriptions), after a
//! read (its query buffer) and at every tick (output written out or piled up) — the client is
//! counted afresh and, over the limit, the largest clients are evicted at the end of the turn
//! (the I/O layer calls [`Engine::evict_clients_now`]). Every entry point is
//! behind one test of [`crate::model::client_memory::ClientMemory::on`] at its caller, so
//! nothing here runs while the feature is off.

use bytes::BytesMut;

use super::Engine;
use crate::kernel::client_eviction::{evict, update};
use crate::model::client::{ClientId, ClientState};

impl Engine {
    /// After `client`'s command, with its turn's replies so far in `out`: counts it, with the
    /// room `out` takes (the allocator's figure, which `maxmemory` sees too); eviction, if due,
    /// comes before the next command or at the turn's end.
    #[cold]
    pub(super) fn client_memory_after_command(&mut self, client: &mut ClientState, out: &BytesMut) {
        update(&mut self.server, &self.ks, client, out.capacity());
    }

    /// After a read of client `id` (its query buffer grew): counts it.
    #[cold]
    pub(super) fn client_memory_after_read(&mut self, id: ClientId) {
        if let Some(client) = self.clients.get_mut(id) {
            update(&mut self.server, &self.ks, client, 0);
        }
    }

    /// The tick: every client counted afresh, then eviction.
    #[cold]
    pub(super) fn client_memory_cron(&mut self) {
        for client in self.clients.iter_mut() {
            update(&mut self.server, &self.ks, client, 0);
        }
        self.evict_clients_now();
    }

    /// Evicts over the limit, and closes the evicted clients at once: at the end of the event
    /// loop's turn when [`crate::model::client_memory::ClientMemory::due`], and by the tick.
    pub fn evict_clients_now(&mut self) {
        let now_ms = self.server.clock.now_ms();
        evict(&mut self.server, &mut self.clients, &self.ks, None, now_ms);
        if !self.server.requests.is_empty() {
            self.carry_out_requests();
        }
    }
}
