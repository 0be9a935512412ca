//! Client memory: what each connection costs (CLIENT LIST's `tot-mem`, INFO's
//! `mem_clients_normal`) and the ledger client eviction (`maxmemory-clients`) reads, as Redis
//! 7.0 keeps them (`getClientMemoryUsage`, `updateClientMemUsageAndBucket`).
//!
//! A client's figure is our own accounting of what it holds: its query buffer (the read
//! buffer's capacity), its reply buffer and every byte of output not yet written (the running
//! turn's replies, out-of-turn output, what a connection whose peer stopped reading holds), the
//! arguments a transaction queued or a blocked command keeps, its watched keys, its
//! subscriptions, its tracking prefixes and the client's own structures. Redis counts the same
//! parts of its C structures; the totals are close but not the same bytes.
//!
//! While `maxmemory-clients` is set, [`ClientMemory`] keeps the sum of the figures of the
//! clients Redis counts (normal and pub/sub ones: not replicas, not the primary's link), each
//! client remembering what it last added ([`ClientState::mem_usage`]) so that an update costs
//! the difference only. Clients are updated where their memory moves — after their commands,
//! after a read, when output is delivered to them — and all of them by the tick. When the sum
//! passes the limit, eviction is due at the end of the event loop's turn (Redis evicts in
//! `beforeSleep` and before the next command: a client that closed in the same turn is gone by
//! then, and no other pays for it), and the largest evictable clients go first (Redis groups clients in buckets
//! by the log2 of their memory and empties the largest bucket first; picking by exact size
//! keeps that order). While the limit is 0 nothing here runs: the callers test
//! [`ClientMemory::on`], one branch.

use crate::base::config::Config;
use crate::model::client::{ClientHandle, ClientId, ClientState, Clients};
use std::sync::Arc;

/// Redis's floor for `maxmemory-clients`: below it a bad setting could leave no way to talk
/// to the server at all.
const MIN_LIMIT: u64 = 128 * 1024;

/// The limit `maxmemory-clients` sets under `config` (Redis's `getClientEvictionLimit`): a
/// size, or a percentage of `maxmemory` (none while `maxmemory` is 0), never under 128 KB;
/// 0 when client eviction is off.
pub fn limit(config: &Config) -> u64 {
    let limit = match config.maxmemory_clients {
        0 => return 0,
        n if n > 0 => n as u64,
        _ if config.maxmemory == 0 => return 0,
        percent => (config.maxmemory as f64 * percent.unsigned_abs() as f64 / 100.0) as u64,
    };
    limit.max(MIN_LIMIT)
}

/// Whether Redis counts `client` in the clients' memory and may evict it for it: normal and
/// pub/sub clients (MONITOR clients among them), not replicas nor this server's primary.
pub fn counted(client: &ClientState) -> bool {
    !client.replica && !client.master
}

/// An evicted client whose connection has not ended, with the output it held then.
struct Closing {
    handle: Arc<ClientHandle>,
    bytes: u64,
}

impl std::fmt::Debug for Closing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Closing(id {}, {} bytes)", self.handle.id, self.bytes)
    }
}

/// The clients' memory ledger of client eviction.
#[derive(Debug, Default)]
pub struct ClientMemory {
    /// The limit in bytes (see [`limit`]); 0: client eviction is off.
    limit: u64,
    /// The sum of the counted clients' last figures.
    total: u64,
    /// Clients evicted since start or CONFIG RESETSTAT (INFO's `evicted_clients`).
    pub evicted: u64,
    /// A client was counted while the sum is over the limit: eviction is due at the end of
    /// the event loop's turn.
    pub due: bool,
    /// Evicted clients whose connections have not ended, with the output they held then.
    closing: Vec<Closing>,
}

impl ClientMemory {
    /// Client eviction is on: clients' memory is kept up to date.
    #[inline(always)]
    pub fn on(&self) -> bool {
        self.limit != 0
    }

    /// The sum of the counted clients passed the limit.
    pub fn over(&self) -> bool {
        self.on() && self.total > self.limit
    }

    /// Sets the limit from `config` (after CONFIG SET); true if client eviction has just
    /// been turned on, and every client must be counted afresh.
    pub fn configure(&mut self, config: &Config) -> bool {
        let was_on = self.on();
        self.limit = limit(config);
        if !self.on() {
            self.total = 0;
        }
        self.on() && !was_on
    }

    /// Counts `client`'s memory afresh (see [`ClientState::memory_usage`] for `watched` and
    /// `output`).
    pub fn update(&mut self, client: &mut ClientState, watched: usize, output: usize) {
        self.total -= client.mem_usage.min(self.total);
        client.mem_usage = if counted(client) && !client.obuf.closing {
            client.memory_usage(watched, output)
        } else {
            0
        };
        self.total += client.mem_usage;
        self.due |= self.total > self.limit;
    }

    /// `client` leaves: what it added goes.
    pub fn forget(&mut self, client: &mut ClientState) {
        self.total -= std::mem::take(&mut client.mem_usage).min(self.total);
    }

    /// Notes that an evicted client holds `bytes` of output until its connection's task ends
    /// and drops its `handle` (see [`ClientMemory::closing_bytes`]).
    pub fn closing(&mut self, handle: Arc<ClientHandle>, bytes: u64) {
        if bytes != 0 {
            self.closing.push(Closing { handle, bytes });
        }
    }

    /// What the evicted clients held when evicted, for those whose connections have not ended
    /// yet (the task holds the last other reference to the handle): key eviction leaves it out,
    /// since Redis frees an evicted client's memory at once.
    pub fn closing_bytes(&mut self) -> u64 {
        if self.closing.is_empty() {
            return 0;
        }
        self.closing.retain(|c| Arc::strong_count(&c.handle) > 1);
        self.closing.iter().map(|c| c.bytes).sum()
    }

    /// The clients to evict to get back under the limit, largest first (Redis's
    /// `evictClients`): `clients` and the running client `current`, if any. Clients with
    /// CLIENT NO-EVICT ON, those being closed and those not counted stay. Only plans: the
    /// caller closes them, which [`ClientMemory::forget`]s each.
    pub fn victims(&mut self, clients: &Clients, current: Option<&ClientState>) -> Vec<ClientId> {
        self.due = false;
        if !self.over() {
            return Vec::new();
        }
        let mut candidates: Vec<(u64, ClientId)> = clients
            .iter()
            .chain(current)
            .filter(|c| !c.no_evict && !c.obuf.closing && c.mem_usage != 0)
            .map(|c| (c.mem_usage, c.id))
            .collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        let mut total = self.total;
        let mut victims = Vec::new();
        for (mem, id) in candidates {
            if total <= self.limit {
                break;
            }
            total -= mem.min(total);
            victims.push(id);
        }
        victims
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_a_size_or_a_percentage_never_under_128_kb() {
        let mut c = Config::default();
        assert_eq!(limit(&c), 0);
        c.maxmemory_clients = 1;
        assert_eq!(limit(&c), MIN_LIMIT);
        c.maxmemory_clients = 3_000_000;
        assert_eq!(limit(&c), 3_000_000);
        // A percentage of no maxmemory is no limit.
        c.maxmemory_clients = -7;
        assert_eq!(limit(&c), 0);
        c.maxmemory = 6 << 20;
        assert_eq!(limit(&c), (6u64 << 20) * 7 / 100);
    }

    fn client(id: ClientId) -> Box<ClientState> {
        let handle = std::sync::Arc::new(crate::model::client::ClientHandle::new(id));
        let peer = crate::model::client::Peer::Unix { path: "t".into() };
        Box::new(ClientState::new(handle, peer, 0, 0, true))
    }

    #[test]
    fn the_largest_evictable_clients_go_until_the_sum_is_under_the_limit() {
        let mut config = Config {
            maxmemory_clients: 1536 * 1024,
            ..Config::default()
        };
        let mut ledger = ClientMemory::default();
        assert!(ledger.configure(&config));
        let mut clients = Clients::default();
        // Pending output of 100 KB times the id; client 4 may not be evicted.
        for id in 1..=4 {
            let mut c = client(id);
            c.pending
                .extend_from_slice(&vec![0; id as usize * 100 * 1024]);
            c.no_evict = id == 4;
            ledger.update(&mut c, 0, 0);
            clients.insert(c);
        }
        // 1000 KB plus the clients' own bytes and reply buffers: under 1.5 MB.
        assert!(!ledger.over() && !ledger.due);
        let mut c = client(5);
        c.pending.extend_from_slice(&vec![0; 500 * 1024]);
        ledger.update(&mut c, 0, 0);
        assert!(ledger.over() && ledger.due);
        // 5 alone is enough.
        assert_eq!(ledger.victims(&clients, Some(&c)), vec![5]);
        assert!(!ledger.due);
        // Under a lower limit 3 goes too, not 4 (no-evict), largest first.
        config.maxmemory_clients = 800 * 1024;
        assert!(!ledger.configure(&config));
        assert_eq!(ledger.victims(&clients, Some(&c)), vec![5, 3]);
        ledger.forget(&mut c);
        config.maxmemory_clients = 0;
        ledger.configure(&config);
        assert!(!ledger.on() && ledger.victims(&clients, None).is_empty());
    }
}
