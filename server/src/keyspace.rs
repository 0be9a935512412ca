//! The keyspace: the databases (16 by default), each a [`Dict`] of keys plus an expiry index, and
//! the rules every command follows to read and write keys.
//!
//! All key access goes through [`Keyspace`] methods so that the cross-cutting rules live in one
//! place: a key whose TTL has passed is deleted on access (lazy expiry) and never seen by a
//! command; reads count keyspace hits and misses for INFO; every access refreshes the key's LRU
//! clock (OBJECT IDLETIME) unless the command asked not to touch it (TYPE, TTL, OBJECT…); every
//! write bumps the `dirty` counter. Time comes in as the command's frozen `now`.
//!
//! Like Redis, the expiry index is a second dict from key to deadline (milliseconds since the
//! epoch). A key expires when `now > deadline`, so a key set with `PX 100` at t is still there at
//! t + 100 and gone at t + 101.

use embedis_datatypes::{Dict, SmallBytes};

use crate::value::{lru_clock, Object, Value};

/// One database.
pub struct Db {
    pub id: usize,
    pub main: Dict<SmallBytes, Object>,
    pub expires: Dict<SmallBytes, i64>,
    /// Running average of the TTL of keys seen by the active expiry cycle (INFO keyspace).
    pub avg_ttl: i64,
    /// Where the active expiry cycle resumes its scan of `expires`.
    pub expires_cursor: u64,
}

impl Db {
    pub fn new(id: usize) -> Self {
        Db {
            id,
            main: Dict::new(),
            expires: Dict::new(),
            avg_ttl: 0,
            expires_cursor: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.main.len()
    }

    pub fn is_empty(&self) -> bool {
        self.main.is_empty()
    }

    /// The key's deadline in ms, if it has one.
    pub fn expire_of(&self, key: &[u8]) -> Option<i64> {
        match self.main.get(key) {
            Some(obj) if obj.has_expire() => self.expires.get(key).copied(),
            _ => None,
        }
    }

    /// True if `key` exists but its deadline has passed at `now`.
    pub fn is_expired(&self, key: &[u8], now: i64) -> bool {
        matches!(self.expire_of(key), Some(when) if now > when)
    }

    /// Removes `key` and its TTL; returns the object.
    pub fn remove(&mut self, key: &[u8]) -> Option<Object> {
        let (_, obj) = self.main.remove_entry(key)?;
        if obj.has_expire() {
            self.expires.remove(key);
        }
        Some(obj)
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.main.clear();
        self.expires.clear();
        self.avg_ttl = 0;
        self.expires_cursor = 0;
    }
}

/// Counters the keyspace keeps for INFO stats.
#[derive(Debug, Default, Clone)]
pub struct KeyspaceStats {
    pub hits: u64,
    pub misses: u64,
    pub expired_keys: u64,
    pub expired_stale_perc: f64,
    pub expired_time_cap_reached_count: u64,
    pub expire_cycle_cpu_milliseconds: u64,
}

/// How a lookup treats the key's LRU clock and the hit/miss counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A command reading the key: counts a hit or miss, refreshes the LRU clock.
    Read,
    /// A command about to modify the key: refreshes the LRU clock, no hit/miss.
    Write,
    /// Introspection (TYPE, TTL, OBJECT, EXISTS…): neither.
    NoTouch,
}

/// When [`Keyspace::store`] writes (SET's NX and XX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreIf {
    Always,
    /// Only if the key does not exist (NX).
    Absent,
    /// Only if the key exists (XX).
    Present,
}

/// What a write does to the key's TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// Remove it: a new value replaces the key (SET, MSET, GETSET…).
    Clear,
    /// Leave it as it is (SET KEEPTTL).
    Keep,
    /// Set this deadline, in ms since the epoch.
    At(i64),
}

/// All databases and the counters that span them.
pub struct Keyspace {
    pub dbs: Vec<Db>,
    pub stats: KeyspaceStats,
    /// Writes since the last save (INFO rdb_changes_since_last_save).
    pub dirty: u64,
}

impl Keyspace {
    pub fn new(databases: usize) -> Self {
        Keyspace {
            dbs: (0..databases).map(Db::new).collect(),
            stats: KeyspaceStats::default(),
            dirty: 0,
        }
    }

    pub fn db(&mut self, db: usize) -> &mut Db {
        &mut self.dbs[db]
    }

    /// Deletes `key` if its TTL has passed at `now`; true if it did.
    pub fn expire_if_needed(&mut self, db: usize, key: &[u8], now: i64) -> bool {
        let d = &mut self.dbs[db];
        // Only keys with a TTL are in `expires`: one probe there, none of the main table, so a
        // lookup costs one probe per table at most (GET is the hottest path of all).
        if d.expires.is_empty() || d.expires.get(key).is_none_or(|&when| now <= when) {
            return false;
        }
        d.remove(key);
        self.stats.expired_keys += 1;
        self.dirty += 1;
        true
    }

    /// Looks `key` up for `access`, deleting it first if it has expired.
    pub fn lookup(
        &mut self,
        db: usize,
        key: &[u8],
        now: i64,
        access: Access,
    ) -> Option<&mut Object> {
        self.expire_if_needed(db, key, now);
        let found = self.dbs[db].main.get_mut(key);
        match access {
            Access::Read => {
                if found.is_some() {
                    self.stats.hits += 1;
                } else {
                    self.stats.misses += 1;
                }
            }
            Access::Write | Access::NoTouch => {}
        }
        let obj = found?;
        if access != Access::NoTouch {
            obj.touch(lru_clock(now));
        }
        Some(obj)
    }

    /// Read access to a key's value.
    pub fn read(&mut self, db: usize, key: &[u8], now: i64) -> Option<&mut Value> {
        self.lookup(db, key, now, Access::Read)
            .map(|o| &mut o.value)
    }

    /// Write access to a key's value (after lazy expiry).
    pub fn write(&mut self, db: usize, key: &[u8], now: i64) -> Option<&mut Value> {
        self.lookup(db, key, now, Access::Write)
            .map(|o| &mut o.value)
    }

    /// True if the key exists (after lazy expiry), without touching it.
    pub fn exists(&mut self, db: usize, key: &[u8], now: i64) -> bool {
        self.lookup(db, key, now, Access::NoTouch).is_some()
    }

    /// Stores `value` under `key`, replacing any previous value. The TTL is removed unless
    /// `keep_ttl` (SET KEEPTTL, and commands that modify a value rather than replace it).
    pub fn set(&mut self, db: usize, key: &[u8], value: Value, keep_ttl: bool, now: i64) {
        let lru = lru_clock(now);
        let d = &mut self.dbs[db];
        match d.main.get_mut(key) {
            Some(obj) => {
                let had_expire = obj.has_expire();
                obj.value = value;
                obj.touch(lru);
                if had_expire && !keep_ttl {
                    obj.set_has_expire(false);
                    d.expires.remove(key);
                }
            }
            None => {
                d.main
                    .insert_new(SmallBytes::new(key), Object::new(value, lru));
            }
        }
        self.dirty += 1;
    }

    /// Redis's `setKey` with SET's conditions in one lookup: after lazy expiry, stores the value
    /// `make` builds under `key` if `when` allows (`Always`, `IfAbsent` for NX, `IfPresent` for
    /// XX) and applies `ttl`. Returns true if it wrote. The value is built only when it is
    /// stored, so a refused `SET … NX` allocates nothing.
    pub fn store(
        &mut self,
        db: usize,
        key: &[u8],
        when: StoreIf,
        ttl: Ttl,
        now: i64,
        make: impl FnOnce() -> Value,
    ) -> bool {
        self.expire_if_needed(db, key, now);
        let lru = lru_clock(now);
        let d = &mut self.dbs[db];
        match d.main.get_mut(key) {
            Some(obj) => {
                if when == StoreIf::Absent {
                    return false;
                }
                obj.value = make();
                obj.touch(lru);
                match ttl {
                    Ttl::Keep => {}
                    Ttl::Clear => {
                        if obj.has_expire() {
                            obj.set_has_expire(false);
                            d.expires.remove(key);
                        }
                    }
                    Ttl::At(when_ms) => {
                        let had = obj.has_expire();
                        obj.set_has_expire(true);
                        match d.expires.get_mut(key) {
                            Some(deadline) if had => *deadline = when_ms,
                            _ => {
                                d.expires.insert(SmallBytes::new(key), when_ms);
                            }
                        }
                    }
                }
            }
            None => {
                if when == StoreIf::Present {
                    return false;
                }
                let obj = d
                    .main
                    .insert_new(SmallBytes::new(key), Object::new(make(), lru));
                if let Ttl::At(when_ms) = ttl {
                    obj.set_has_expire(true);
                    d.expires.insert(SmallBytes::new(key), when_ms);
                }
            }
        }
        self.dirty += 1;
        true
    }

    /// Adds a key known to be absent (the caller checked), with an optional deadline.
    pub fn add(&mut self, db: usize, key: &[u8], value: Value, expire_at: Option<i64>, now: i64) {
        let d = &mut self.dbs[db];
        let obj = d
            .main
            .insert_new(SmallBytes::new(key), Object::new(value, lru_clock(now)));
        if let Some(when) = expire_at {
            obj.set_has_expire(true);
            d.expires.insert(SmallBytes::new(key), when);
        }
        self.dirty += 1;
    }

    /// Deletes `key` (after lazy expiry: an expired key counts as absent). True if it existed.
    pub fn delete(&mut self, db: usize, key: &[u8], now: i64) -> bool {
        if self.expire_if_needed(db, key, now) {
            return false;
        }
        let removed = self.dbs[db].remove(key).is_some();
        if removed {
            self.dirty += 1;
        }
        removed
    }

    /// Sets the deadline of an existing key. Returns false if the key does not exist.
    pub fn set_expire(&mut self, db: usize, key: &[u8], when_ms: i64) -> bool {
        let d = &mut self.dbs[db];
        let Some(obj) = d.main.get_mut(key) else {
            return false;
        };
        obj.set_has_expire(true);
        d.expires.insert(SmallBytes::new(key), when_ms);
        true
    }

    /// Removes the deadline of a key; true if it had one.
    pub fn persist(&mut self, db: usize, key: &[u8]) -> bool {
        let d = &mut self.dbs[db];
        let Some(obj) = d.main.get_mut(key) else {
            return false;
        };
        if !obj.has_expire() {
            return false;
        }
        obj.set_has_expire(false);
        d.expires.remove(key);
        true
    }

    /// The key's deadline in ms, if it exists and has one (no lazy expiry here).
    pub fn expire_of(&self, db: usize, key: &[u8]) -> Option<i64> {
        self.dbs[db].expire_of(key)
    }

    /// Total keys across databases.
    pub fn total_keys(&self) -> usize {
        self.dbs.iter().map(Db::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_expiry_on_access() {
        let mut ks = Keyspace::new(2);
        ks.add(0, b"k", Value::string(b"v"), Some(1000), 0);
        assert!(
            ks.read(0, b"k", 1000).is_some(),
            "alive at the deadline itself"
        );
        assert!(ks.read(0, b"k", 1001).is_none(), "gone one ms later");
        assert_eq!(ks.dbs[0].len(), 0, "deleted, not just hidden");
        assert_eq!(ks.dbs[0].expires.len(), 0);
        assert_eq!(ks.stats.expired_keys, 1);
        assert_eq!((ks.stats.hits, ks.stats.misses), (1, 1));
    }

    #[test]
    fn set_clears_ttl_unless_kept() {
        let mut ks = Keyspace::new(1);
        ks.add(0, b"k", Value::string(b"v"), Some(5000), 0);
        ks.set(0, b"k", Value::string(b"w"), true, 1);
        assert_eq!(ks.expire_of(0, b"k"), Some(5000));
        ks.set(0, b"k", Value::string(b"x"), false, 2);
        assert_eq!(ks.expire_of(0, b"k"), None);
        assert!(ks.dbs[0].expires.is_empty());
    }

    #[test]
    fn store_conditions_and_ttls() {
        let mut ks = Keyspace::new(1);
        let v = || Value::string(b"v");
        assert!(!ks.store(0, b"k", StoreIf::Present, Ttl::Clear, 0, v));
        assert!(ks.store(0, b"k", StoreIf::Absent, Ttl::At(100), 0, v));
        assert_eq!(ks.expire_of(0, b"k"), Some(100));
        assert!(!ks.store(0, b"k", StoreIf::Absent, Ttl::Clear, 1, || unreachable!()));
        assert!(ks.store(0, b"k", StoreIf::Present, Ttl::Keep, 2, v));
        assert_eq!(ks.expire_of(0, b"k"), Some(100));
        assert!(ks.store(0, b"k", StoreIf::Always, Ttl::At(50), 3, v));
        assert_eq!(ks.expire_of(0, b"k"), Some(50));
        assert!(ks.store(0, b"k", StoreIf::Always, Ttl::Clear, 4, v));
        assert_eq!(ks.expire_of(0, b"k"), None);
        assert!(ks.dbs[0].expires.is_empty());
        // An expired key is gone before the condition is checked, and its TTL with it.
        assert!(ks.store(0, b"e", StoreIf::Always, Ttl::At(10), 5, v));
        assert!(ks.store(0, b"e", StoreIf::Absent, Ttl::Keep, 11, v));
        assert_eq!(ks.expire_of(0, b"e"), None);
        assert_eq!(ks.stats.expired_keys, 1);
    }

    #[test]
    fn delete_and_persist() {
        let mut ks = Keyspace::new(1);
        ks.add(0, b"a", Value::Int(1), Some(100), 0);
        assert!(ks.persist(0, b"a"));
        assert!(!ks.persist(0, b"a"));
        assert!(ks.set_expire(0, b"a", 50));
        assert!(
            !ks.delete(0, b"a", 60),
            "expired keys are not deleted twice"
        );
        assert!(!ks.set_expire(0, b"missing", 1));
    }
}
