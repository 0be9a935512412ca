//! WATCH bookkeeping: which clients watch which keys, and whose transaction a modification broke.
//!
//! It lives inside the [`crate::model::keyspace::Keyspace`] because the keyspace is where writes happen:
//! a handler that stores, deletes, moves or expires a key goes through a keyspace method, and
//! that method reports the key here. So does every other path to a write — another client's
//! command, a command inside another client's EXEC, a script's `redis.call`, the active expiry
//! cycle — without any of them knowing about WATCH.
//!
//! Redis breaks a transaction only when a command really changed the key (`SET k v NX` on an
//! existing key, `HDEL k nosuchfield` or `SREM k nonmember` do not). Whole-key operations report
//! exactly (a store that stored, a delete that deleted). In-place changes go through a write
//! lookup, which cannot know yet whether the command will change anything: the looked-up key is
//! only *noted*, and the executor settles the notes after the command with whether it counted a
//! change in the `dirty` counter — Redis bumps `dirty` exactly where it signals a modified key.
//!
//! Redis 7.0's rule for keys that had already expired (but were still stored) when WATCH ran: such
//! a key disappearing (lazy or active expiry, FLUSHDB) is no logical change, and from then on the
//! key counts as a missing one that any write breaks. A key that was alive at WATCH and whose TTL
//! has passed by EXEC breaks the transaction even if nobody deleted it yet (EXEC checks that).
//!
//! Nothing here costs anything measurable while nobody watches: every report first checks that
//! the index is empty.

use embedis_datatypes::SmallBytes;
use std::collections::{HashMap, HashSet};

use crate::model::client::{ClientId, Watching};

/// One client watching one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Watcher {
    client: ClientId,
    /// The key was stored but logically expired when the client watched it.
    expired_at_watch: bool,
}

/// Every watched key and its watchers, plus the transactions already broken.
#[derive(Debug, Default)]
pub struct Watches {
    by_key: HashMap<(usize, SmallBytes), Vec<Watcher>, ahash::RandomState>,
    by_client: HashMap<ClientId, Vec<(usize, SmallBytes)>, ahash::RandomState>,
    /// Clients whose watched keys changed: their next EXEC answers null.
    broken: HashSet<ClientId, ahash::RandomState>,
    /// Watched keys looked up for writing by the running command (see the module documentation).
    noted: Vec<(usize, SmallBytes)>,
}

impl Watches {
    /// True if no client watches anything: every report is then a no-op.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// `client` watches `key` of `db`; `expired_now` says whether the key is stored but past its
    /// deadline. Watching a key twice is watching it once, as in Redis (the first state stays).
    pub fn watch(&mut self, client: ClientId, db: usize, key: &[u8], expired_now: bool) {
        let slot = (db, SmallBytes::new(key));
        let mine = self.by_client.entry(client).or_default();
        if mine.contains(&slot) {
            return;
        }
        mine.push(slot.clone());
        self.by_key.entry(slot).or_default().push(Watcher {
            client,
            expired_at_watch: expired_now,
        });
    }

    /// Forgets every key `client` watches and whether its transaction was broken (UNWATCH,
    /// EXEC, DISCARD, RESET, disconnection).
    pub fn unwatch_all(&mut self, client: ClientId) {
        self.broken.remove(&client);
        self.forget_keys(client);
    }

    fn forget_keys(&mut self, client: ClientId) {
        let Some(keys) = self.by_client.remove(&client) else {
            return;
        };
        for slot in keys {
            if let Some(watchers) = self.by_key.get_mut(&slot) {
                watchers.retain(|w| w.client != client);
                if watchers.is_empty() {
                    self.by_key.remove(&slot);
                }
            }
        }
    }

    /// How many clients watch keys (INFO watching_clients).
    pub fn clients(&self) -> usize {
        self.by_client.len()
    }

    /// How many keys are watched, over every database (INFO total_watched_keys).
    pub fn keys(&self) -> usize {
        self.by_key.len()
    }

    /// What CLIENT LIST shows of `client`'s watching: `flags=d` and `watch=`.
    pub fn watching(&self, client: ClientId) -> Watching {
        Watching {
            broken: self.is_broken(client),
            keys: self.by_client.get(&client).map_or(0, Vec::len),
        }
    }

    /// True if a watched key of `client` changed since it watched it.
    pub fn is_broken(&self, client: ClientId) -> bool {
        self.broken.contains(&client)
    }

    /// The keys `client` watches, with whether each was already expired when watched.
    pub fn keys_of(&self, client: ClientId) -> Vec<(usize, SmallBytes, bool)> {
        let Some(keys) = self.by_client.get(&client) else {
            return Vec::new();
        };
        keys.iter()
            .map(|(db, key)| {
                let expired = self.by_key[&(*db, key.clone())]
                    .iter()
                    .any(|w| w.client == client && w.expired_at_watch);
                (*db, key.clone(), expired)
            })
            .collect()
    }

    /// The watched keys of `db`.
    pub fn keys_in(&self, db: usize) -> Vec<SmallBytes> {
        self.by_key
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, k)| k.clone())
            .collect()
    }

    /// `key` of `db` was modified; `exists_now` says whether it is stored after the change.
    /// Breaks the transaction of every watcher, except that a key already expired at WATCH time
    /// which has now disappeared is no change: its watchers then watch a missing key.
    pub fn touch(&mut self, db: usize, key: &[u8], exists_now: bool) {
        if self.is_empty() {
            return;
        }
        let slot = (db, SmallBytes::new(key));
        let Some(watchers) = self.by_key.get_mut(&slot) else {
            return;
        };
        let mut broken = Vec::new();
        for watcher in watchers.iter_mut() {
            if watcher.expired_at_watch {
                if !exists_now {
                    watcher.expired_at_watch = false;
                }
                // Still stored: Redis leaves such a watcher alone too.
                continue;
            }
            broken.push(watcher.client);
        }
        for client in broken {
            self.break_transaction(client);
        }
    }

    /// Marks `client`'s transaction broken. Its watches are dropped at once: nothing can
    /// un-break it, so they would only cost lookups until EXEC.
    pub fn break_transaction(&mut self, client: ClientId) {
        self.broken.insert(client);
        self.forget_keys(client);
    }

    /// Whether each watcher of `key` of `db` watched it already expired, by client.
    pub fn watchers_of(&self, db: usize, key: &[u8]) -> Vec<(ClientId, bool)> {
        self.by_key
            .get(&(db, SmallBytes::new(key)))
            .map(|ws| ws.iter().map(|w| (w.client, w.expired_at_watch)).collect())
            .unwrap_or_default()
    }

    /// Sets one watcher's expired-at-watch state.
    pub fn set_watcher_expired(&mut self, client: ClientId, db: usize, key: &[u8], expired: bool) {
        if let Some(watchers) = self.by_key.get_mut(&(db, SmallBytes::new(key))) {
            for w in watchers.iter_mut().filter(|w| w.client == client) {
                w.expired_at_watch = expired;
            }
        }
    }

    /// A command looked `key` of `db` up for writing: remembered until the command ends, when
    /// [`Watches::take_noted`] hands it to the keyspace to settle.
    #[inline]
    pub fn note_write(&mut self, db: usize, key: &[u8]) {
        if self.is_empty() {
            return;
        }
        self.note_write_slow(db, key);
    }

    fn note_write_slow(&mut self, db: usize, key: &[u8]) {
        let slot = (db, SmallBytes::new(key));
        if self.by_key.contains_key(&slot) && !self.noted.contains(&slot) {
            self.noted.push(slot);
        }
    }

    /// Takes back the note of a write lookup that turned out to change nothing while the command
    /// changed another key (SMOVE to a set that already has the member).
    pub fn unnote(&mut self, db: usize, key: &[u8]) {
        if !self.noted.is_empty() {
            self.noted
                .retain(|(d, k)| !(*d == db && k.as_slice() == key));
        }
    }

    /// True if the running command looked up watched keys for writing.
    #[inline]
    pub fn has_noted(&self) -> bool {
        !self.noted.is_empty()
    }

    /// The watched keys the running command looked up for writing, forgotten here.
    pub fn take_noted(&mut self) -> Vec<(usize, SmallBytes)> {
        std::mem::take(&mut self.noted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_touch_breaks_every_watcher_of_that_key_only() {
        let mut w = Watches::default();
        assert!(w.is_empty());
        w.watch(1, 0, b"k", false);
        w.watch(2, 0, b"k", false);
        w.watch(3, 1, b"k", false);
        w.watch(3, 0, b"other", false);
        w.touch(0, b"k", true);
        assert!(w.is_broken(1) && w.is_broken(2));
        assert!(!w.is_broken(3), "same name, other database");
        assert!(
            w.keys_of(1).is_empty(),
            "a broken client's watches are dropped"
        );
        assert_eq!(w.keys_of(3).len(), 2);
        w.unwatch_all(1);
        assert!(!w.is_broken(1));
        w.unwatch_all(2);
        w.unwatch_all(3);
        assert!(w.is_empty(), "nothing left behind");
        w.touch(0, b"k", true);
    }

    #[test]
    fn watching_twice_is_watching_once() {
        let mut w = Watches::default();
        w.watch(1, 0, b"k", false);
        w.watch(1, 0, b"k", true);
        assert_eq!(w.keys_of(1), vec![(0, SmallBytes::new(b"k"), false)]);
        assert_eq!(w.watchers_of(0, b"k").len(), 1);
    }

    #[test]
    fn an_expired_key_disappearing_is_no_change() {
        let mut w = Watches::default();
        w.watch(1, 0, b"k", true);
        // Deleted by expiry: logically it was already gone.
        w.touch(0, b"k", false);
        assert!(!w.is_broken(1));
        assert_eq!(w.keys_of(1), vec![(0, SmallBytes::new(b"k"), false)]);
        // From now on it is a missing key: creating it breaks the transaction.
        w.touch(0, b"k", true);
        assert!(w.is_broken(1));
    }

    #[test]
    fn noted_writes_are_kept_only_for_watched_keys() {
        let mut w = Watches::default();
        w.note_write(0, b"k");
        assert!(!w.has_noted(), "nobody watches: nothing noted");
        w.watch(1, 0, b"k", false);
        w.note_write(0, b"x");
        w.note_write(0, b"k");
        w.note_write(0, b"k");
        assert_eq!(w.take_noted(), vec![(0, SmallBytes::new(b"k"))]);
        assert!(!w.has_noted());
    }
}
