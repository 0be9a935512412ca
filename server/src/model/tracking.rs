//! Client tracking's state (server-assisted client-side caching, CLIENT TRACKING): the tracking
//! table (key → the clients that may cache it), the prefix table of broadcasting (BCAST)
//! clients, and the modifications not yet turned into invalidation messages. Each tracking
//! client's options are kept with the client ([`ClientTracking`]).
//!
//! It sits in the model layer, inside the [`crate::model::keyspace::Keyspace`], for the same reason as
//! WATCH: every path to a modified key (a command, a script's `redis.call`, EXEC, lazy and active
//! expiry, FLUSHDB) goes through a keyspace method, and that method reports the key here
//! ([`Tracking::signal_key`], [`Tracking::signal_flush`]) without knowing who tracks it. The
//! report is only queued: whom to tell, and when, depends on the running client (NOLOOP, and a
//! client's own invalidations follow its reply), which the kernel knows and the keyspace does
//! not. The kernel (`crate::kernel::invalidation`) drains the queue after every command and delivers
//! through `crate::kernel::publish`.
//!
//! As in Redis, keys are tracked across databases (a key name stands for itself in every
//! database), the table forgets a key once it has been invalidated, and the ids of clients that
//! stopped tracking are dropped lazily, when their key is next invalidated. While no client
//! tracks and the table is empty, [`Tracking::is_on`] is false and the keyspace's and the
//! kernel's hooks cost one branch.

use bytes::Bytes;
use indexmap::IndexMap;
use std::collections::{BTreeMap, BTreeSet};

use crate::model::client::{ClientId, ClientTracking};

/// CLIENT TRACKING ON's options, parsed.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub redirect: ClientId,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    pub prefixes: Vec<Bytes>,
}

/// A modification not yet turned into messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// `key` changed; `by_command`: by the running command (false: it expired), which decides
    /// whether a BCAST client in NOLOOP mode is told.
    Key { key: Bytes, by_command: bool },
    /// A database was emptied: every tracking client is told that all its keys are invalid.
    Flush,
}

/// Two BCAST prefixes that overlap: Redis's error, and whether it stops CLIENT TRACKING.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    pub text: Vec<u8>,
    pub fatal: bool,
}

/// The keys modified under one BCAST prefix since the last broadcast, and its clients.
#[derive(Debug, Default)]
pub struct Prefix {
    /// Key → the client whose command last modified it (None: it expired), for NOLOOP.
    pub keys: BTreeMap<Bytes, Option<ClientId>>,
    pub clients: BTreeSet<ClientId>,
}

/// One prefix's broadcast: the keys modified under it (with who modified each) and the clients
/// to tell.
pub type Broadcast = (BTreeMap<Bytes, Option<ClientId>>, Vec<ClientId>);

/// The server's tracking state (see the module documentation).
#[derive(Debug, Default)]
pub struct Tracking {
    /// Cached `clients > 0 || table, queue or own list not empty`: the hooks' one branch.
    on: bool,
    /// Clients with tracking on (INFO `tracking_clients`).
    clients: usize,
    /// Key → ids of the clients that read it. An index map, so that the size limit can evict a
    /// random key in constant time.
    table: IndexMap<Bytes, Vec<ClientId>, ahash::RandomState>,
    /// Ids across the table (INFO `tracking_total_items`).
    items: u64,
    /// BCAST prefixes, in byte order (the order broadcasts go out in).
    prefixes: BTreeMap<Bytes, Prefix>,
    /// Modifications reported by the keyspace, in order.
    queue: Vec<Signal>,
    /// Keys the running command looked up for writing: modified if it changes something (the
    /// keyspace settles them after the command, as for WATCH).
    noted: Vec<Bytes>,
    /// Invalidations for the running client itself, sent after its reply (None: all keys).
    own: Vec<Option<Bytes>>,
    /// Rounds the size limit has ended still over it: each round tries harder, as Redis does.
    evict_rounds: u32,
}

impl Tracking {
    /// True while anything here may need work: the hooks' one branch.
    #[inline]
    pub fn is_on(&self) -> bool {
        self.on
    }

    fn refresh(&mut self) {
        self.on = self.clients > 0
            || !self.table.is_empty()
            || !self.queue.is_empty()
            || !self.own.is_empty();
    }

    /// Turns tracking on for `id` (or changes its options): its state becomes `options`, its
    /// BCAST prefixes are added to those it had. The caller checked the options (Redis's errors).
    pub fn enable(
        &mut self,
        id: ClientId,
        state: &mut Option<Box<ClientTracking>>,
        options: Options,
    ) {
        let tracking = state.get_or_insert_with(|| {
            self.clients += 1;
            Box::default()
        });
        tracking.redirect = options.redirect;
        tracking.bcast = options.bcast;
        tracking.optin = options.optin;
        tracking.optout = options.optout;
        tracking.noloop = options.noloop;
        tracking.broken_redirect = false;
        if options.bcast {
            let prefixes = if options.prefixes.is_empty() {
                vec![Bytes::new()]
            } else {
                options.prefixes
            };
            for prefix in prefixes {
                self.prefixes
                    .entry(prefix.clone())
                    .or_default()
                    .clients
                    .insert(id);
                tracking.prefixes.insert(prefix);
            }
        }
        self.refresh();
    }

    /// Turns tracking off for `id` (CLIENT TRACKING OFF, RESET, disconnection). Its ids in the
    /// table stay until their keys are invalidated, as in Redis.
    pub fn disable(&mut self, id: ClientId, state: &mut Option<Box<ClientTracking>>) {
        let Some(tracking) = state.take() else {
            return;
        };
        for prefix in &tracking.prefixes {
            if let Some(entry) = self.prefixes.get_mut(prefix) {
                entry.clients.remove(&id);
                if entry.clients.is_empty() {
                    self.prefixes.remove(prefix);
                }
            }
        }
        self.clients -= 1;
        self.refresh();
    }

    /// The first of `prefixes` that overlaps one the client has or another of `prefixes` (one
    /// is a prefix of the other), with Redis's error text.
    pub fn prefix_collision(existing: &BTreeSet<Bytes>, prefixes: &[Bytes]) -> Option<Collision> {
        let overlap = |a: &[u8], b: &[u8]| {
            let n = a.len().min(b.len());
            a[..n] == b[..n]
        };
        for (i, prefix) in prefixes.iter().enumerate() {
            if let Some(old) = existing.iter().find(|old| overlap(old, prefix)) {
                return Some(Collision {
                    text: collision_text(prefix, old, "an existing"),
                    fatal: true,
                });
            }
            if let Some(other) = prefixes[i + 1..].iter().find(|o| overlap(prefix, o)) {
                return Some(Collision {
                    text: collision_text(prefix, other, "another provided"),
                    // Redis 7.0 returns the prefix's index as its "no collision" verdict: an
                    // overlap found from the second prefix on does not stop the command.
                    fatal: i == 0,
                });
            }
        }
        None
    }

    /// Remembers that client `id` read `key` (Redis's `trackingRememberKeys`).
    pub fn remember(&mut self, id: ClientId, key: &[u8]) {
        let ids = match self.table.get_mut(key) {
            Some(ids) => ids,
            None => self.table.entry(Bytes::copy_from_slice(key)).or_default(),
        };
        if !ids.contains(&id) {
            ids.push(id);
            self.items += 1;
        }
        self.refresh();
    }

    /// The keyspace modified `key` (Redis's `trackingInvalidateKey` from `signalModifiedKey`).
    #[inline]
    pub fn signal_key(&mut self, key: &[u8], by_command: bool) {
        if self.table.is_empty() && self.prefixes.is_empty() {
            return;
        }
        self.queue.push(Signal::Key {
            key: Bytes::copy_from_slice(key),
            by_command,
        });
        self.on = true;
    }

    /// The running command looked `key` up for writing (see [`Tracking::take_noted`]).
    pub fn note_write(&mut self, key: &[u8]) {
        if (self.table.is_empty() && self.prefixes.is_empty())
            || self.noted.iter().any(|k| k[..] == *key)
        {
            return;
        }
        self.noted.push(Bytes::copy_from_slice(key));
    }

    /// Takes back a note (the write lookup changed nothing, see `Keyspace::unnote_write`).
    pub fn unnote_write(&mut self, key: &[u8]) {
        self.noted.retain(|k| k[..] != *key);
    }

    /// True if the running command looked up keys for writing that may concern tracking.
    #[inline]
    pub fn has_noted(&self) -> bool {
        !self.noted.is_empty()
    }

    /// The keys the running command looked up for writing, forgotten here.
    pub fn take_noted(&mut self) -> Vec<Bytes> {
        std::mem::take(&mut self.noted)
    }

    /// The keyspace emptied a database (FLUSHDB, FLUSHALL).
    pub fn signal_flush(&mut self) {
        if self.clients > 0 || !self.table.is_empty() {
            self.queue.push(Signal::Flush);
            self.on = true;
        }
    }

    /// The modifications reported since the last call, in order.
    pub fn take_signals(&mut self) -> Vec<Signal> {
        let signals = std::mem::take(&mut self.queue);
        self.refresh();
        signals
    }

    /// Forgets `key` and returns the clients that had read it, in Redis's order (its table
    /// keeps client ids as native-endian bytes, sorted).
    pub fn invalidate(&mut self, key: &[u8]) -> Vec<ClientId> {
        let Some(mut ids) = self.table.swap_remove(key) else {
            return Vec::new();
        };
        self.items -= ids.len() as u64;
        ids.sort_unstable_by_key(|id| id.to_ne_bytes());
        self.refresh();
        ids
    }

    /// Notes `key` for the BCAST prefixes it falls under, with the client that modified it.
    pub fn note_for_broadcast(&mut self, key: &Bytes, by: Option<ClientId>) {
        for (prefix, entry) in self.prefixes.iter_mut() {
            if key.starts_with(prefix) {
                entry.keys.insert(key.clone(), by);
            }
        }
    }

    /// True if some BCAST prefix has keys to broadcast.
    pub fn has_broadcasts(&self) -> bool {
        self.prefixes.values().any(|p| !p.keys.is_empty())
    }

    /// The prefixes with keys to broadcast, their keys taken: (keys, clients) in prefix order.
    pub fn take_broadcasts(&mut self) -> Vec<Broadcast> {
        self.prefixes
            .values_mut()
            .filter(|p| !p.keys.is_empty())
            .map(|p| {
                (
                    std::mem::take(&mut p.keys),
                    p.clients.iter().copied().collect(),
                )
            })
            .collect()
    }

    /// Forgets every tracked key (a database was emptied: all clients were told already).
    pub fn clear_table(&mut self) {
        self.table = IndexMap::default();
        self.items = 0;
        self.refresh();
    }

    /// Queues an invalidation for the running client itself, sent after its reply.
    pub fn defer_own(&mut self, key: Option<Bytes>) {
        self.own.push(key);
        self.on = true;
    }

    /// The running client's deferred invalidations.
    pub fn take_own(&mut self) -> Vec<Option<Bytes>> {
        let own = std::mem::take(&mut self.own);
        self.refresh();
        own
    }

    /// The keys to evict to bring the table back to `max_keys` (0: no limit), picked at random
    /// with `pick(len)` — at most 100 per round that ends still over the limit, 200 the next
    /// round, and so on, so that one round never stalls the server (Redis's
    /// `trackingLimitUsedSlots`). The keys are removed from the table with their clients.
    pub fn evict_over_limit(
        &mut self,
        max_keys: u64,
        mut pick: impl FnMut(usize) -> usize,
    ) -> Vec<(Bytes, Vec<ClientId>)> {
        let mut evicted = Vec::new();
        if max_keys == 0 || self.table.len() as u64 <= max_keys {
            self.evict_rounds = 0;
            return evicted;
        }
        let effort = 100 * (self.evict_rounds as usize + 1);
        for _ in 0..effort {
            let Some((key, _)) = self.table.get_index(pick(self.table.len())) else {
                break;
            };
            let key = key.clone();
            let ids = self.invalidate(&key);
            evicted.push((key, ids));
            if self.table.len() as u64 <= max_keys {
                self.evict_rounds = 0;
                return evicted;
            }
        }
        self.evict_rounds += 1;
        evicted
    }

    /// INFO `tracking_clients`.
    pub fn clients(&self) -> usize {
        self.clients
    }

    /// INFO `tracking_total_keys`.
    pub fn total_keys(&self) -> usize {
        self.table.len()
    }

    /// INFO `tracking_total_items`.
    pub fn total_items(&self) -> u64 {
        self.items
    }

    /// INFO `tracking_total_prefixes`.
    pub fn total_prefixes(&self) -> usize {
        self.prefixes.len()
    }
}

fn collision_text(prefix: &[u8], other: &[u8], which: &str) -> Vec<u8> {
    let mut text = b"ERR Prefix '".to_vec();
    text.extend_from_slice(crate::base::cstr::c_str(prefix));
    text.extend_from_slice(format!("' overlaps with {which} prefix '").as_bytes());
    text.extend_from_slice(crate::base::cstr::c_str(other));
    text.extend_from_slice(b"'. Prefixes for a single client must not overlap.");
    // Redis's formatted errors never carry a line break.
    for byte in text.iter_mut() {
        if matches!(*byte, b'\r' | b'\n') {
            *byte = b' ';
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_counts_and_forgets() {
        let mut t = Tracking::default();
        assert!(!t.is_on());
        let mut state = None;
        t.enable(7, &mut state, Options::default());
        assert!(t.is_on() && t.clients() == 1);
        t.remember(7, b"a");
        t.remember(7, b"a");
        t.remember(9, b"a");
        t.remember(7, b"b");
        assert_eq!((t.total_keys(), t.total_items()), (2, 3));
        assert_eq!(t.invalidate(b"a"), vec![7, 9]);
        assert!(t.invalidate(b"a").is_empty());
        assert_eq!((t.total_keys(), t.total_items()), (1, 1));
        t.disable(7, &mut state);
        assert!(state.is_none() && t.clients() == 0);
        assert!(t.is_on(), "the table still holds b");
        t.clear_table();
        assert!(!t.is_on());
    }

    #[test]
    fn prefixes_and_collisions() {
        let mut t = Tracking::default();
        let mut state = None;
        let p = |s: &str| Bytes::copy_from_slice(s.as_bytes());
        let options = Options {
            bcast: true,
            prefixes: vec![p("foo"), p("bar")],
            ..Options::default()
        };
        t.enable(1, &mut state, options);
        let mine = &state.as_ref().unwrap().prefixes;
        let err = Tracking::prefix_collision(mine, &[p("fo")]).unwrap();
        assert!(err.fatal);
        assert!(err
            .text
            .starts_with(b"ERR Prefix 'fo' overlaps with an existing prefix 'foo'"));
        let err = Tracking::prefix_collision(&BTreeSet::new(), &[p("a"), p("ab")]).unwrap();
        assert!(err.fatal);
        assert!(err
            .text
            .starts_with(b"ERR Prefix 'a' overlaps with another provided prefix 'ab'"));
        let err = Tracking::prefix_collision(&BTreeSet::new(), &[p("x"), p("a"), p("ab")]);
        assert!(!err.unwrap().fatal, "Redis goes on after the first prefix");
        assert_eq!(t.total_prefixes(), 2);
        t.signal_key(b"food", true);
        let signals = t.take_signals();
        assert_eq!(signals.len(), 1);
        t.note_for_broadcast(&p("food"), Some(1));
        t.note_for_broadcast(&p("other"), Some(1));
        let out = t.take_broadcasts();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0.keys().collect::<Vec<_>>(), vec![&p("food")]);
        t.disable(1, &mut state);
        assert_eq!(t.total_prefixes(), 0);
    }

    #[test]
    fn eviction_effort_grows() {
        let mut t = Tracking::default();
        for i in 0..250u32 {
            t.remember(1, format!("k{i}").as_bytes());
        }
        let first = t.evict_over_limit(1, |_| 0);
        assert_eq!(first.len(), 100);
        let second = t.evict_over_limit(1, |_| 0);
        assert_eq!(second.len(), 149, "200 allowed, stops at the limit");
        assert_eq!(t.total_keys(), 1);
        assert!(t.evict_over_limit(1, |_| 0).is_empty());
        assert!(t.evict_over_limit(0, |_| 0).is_empty());
    }
}
