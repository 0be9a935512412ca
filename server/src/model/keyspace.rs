//! The keyspace: the databases (16 by default), each a [`Dict`] of keys plus an expiry index, and
//! the rules every command follows to read and write keys.
//!
//! All key access goes through [`Keyspace`] methods so that the cross-cutting rules live in one
//! place: a key whose TTL has passed is deleted on access (lazy expiry) and never seen by a
//! command; reads count keyspace hits and misses for INFO; every access refreshes the key's LRU
//! clock (OBJECT IDLETIME), or its LFU counter under an LFU policy ([`Keyspace::access`]),
//! unless the command asked not to touch it (TYPE, TTL, OBJECT…); every write bumps the `dirty`
//! counter. Time comes in as the command's frozen `now`. Eviction (`crate::model::evict`) picks keys
//! and removes each through [`Keyspace::evicted`].
//!
//! Like Redis, the expiry index is a second dict from key to deadline (milliseconds since the
//! epoch). Hashes whose fields have TTLs are listed in a third index, `field_expires`, by their
//! earliest field deadline, for the active expiry cycle to find (`crate::services::expire`). Its entries
//! are hints: whatever moves a hash's earliest deadline earlier re-indexes the key
//! (`Keyspace::index_hash_fields`), removing the key drops its entry, and an entry that is
//! stale (later fields, another value under the key) is corrected when the cycle visits it. A key expires when `now > deadline`, so a key set with `PX 100` at t is still there at
//! t + 100 and gone at t + 101. While CLIENT PAUSE is in force, an expired key reads as absent
//! but stays in place and uncounted (the paused dataset stays constant, as in Redis).
//!
//! Besides single-key access, the keyspace offers the whole-key operations of the generic
//! commands, so that the TTL index and the object header stay consistent in one place: moving a
//! key with its TTL and LRU clock ([`Keyspace::take`] / [`Keyspace::put`], used by RENAME, MOVE),
//! exchanging and emptying databases (SWAPDB, FLUSHDB, FLUSHALL), picking a random live key
//! (RANDOMKEY) and walking the keys with a SCAN cursor. Emptying a database with `lazy` hands the
//! old tables to a background thread ([`crate::model::lazyfree`]), because freeing millions of entries
//! takes long enough to stall every client.

use embedis_datatypes::deadline_index::DeadlineIndex;
use embedis_datatypes::{Dict, SmallBytes};
use rand::Rng;
use std::collections::{HashSet, VecDeque};

use crate::base::config::event_class;
use crate::base::value::{AccessClock, Object, Value};
use crate::model::keysizes::KeySizes;
use crate::model::lazyfree::{dispose, free_effort, free_in_background, LAZYFREE_THRESHOLD};
use crate::model::notify::Notifications;
use crate::model::snapshot_capture::{expire_of, saved_entry};
use crate::model::tracking::Tracking;
use crate::model::watch::Watches;
use crate::model::write_stream::WriteStream;

/// One database.
pub struct Db {
    pub id: usize,
    pub main: Dict<SmallBytes, Object>,
    pub expires: Dict<SmallBytes, i64>,
    /// Running average of the TTL of keys seen by the active expiry cycle (INFO keyspace).
    pub avg_ttl: i64,
    /// Where the active expiry cycle resumes its scan of `expires`.
    pub expires_cursor: u64,
    /// Hashes with field TTLs, by their earliest field deadline (see the module documentation).
    pub field_expires: DeadlineIndex,
    /// The background snapshot's parity and pre-images (see [`crate::model::snapshot`]).
    pub snapshot: crate::model::snapshot_capture::DbSnapshot,
    /// INFO keysizes's histogram, from `compat-version` 8.2 (see [`crate::model::keysizes`]).
    pub keysizes: Option<Box<KeySizes>>,
    /// The key tables may resize: no child process runs (see
    /// `crate::services::child_processes`). [`hold_growth`] holds `main` back for a moment
    /// beside this.
    pub resize_allowed: bool,
}

impl Db {
    pub fn new(id: usize) -> Self {
        Db {
            id,
            main: Dict::new(),
            expires: Dict::new(),
            avg_ttl: 0,
            expires_cursor: 0,
            field_expires: DeadlineIndex::new(),
            snapshot: Default::default(),
            keysizes: None,
            resize_allowed: true,
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
        self.before_change(key);
        let (_, obj) = self.main.remove_entry(key)?;
        if obj.has_expire() {
            self.expires.remove(key);
        }
        self.unindex_hash_fields(key);
        self.uncount(&obj);
        Some(obj)
    }

    /// Counts a key just stored in INFO keysizes's histogram, if it is kept.
    #[inline(always)]
    fn count(&mut self, obj: &mut Object) {
        if let Some(h) = &mut self.keysizes {
            h.count(obj);
        }
    }

    /// Uncounts a key being removed from INFO keysizes's histogram, if it is kept.
    #[inline(always)]
    fn uncount(&mut self, obj: &Object) {
        if let Some(h) = &mut self.keysizes {
            h.uncount(obj);
        }
    }

    /// Re-bins the object under `key` in INFO keysizes's histogram, if it is kept: for the
    /// paths that change a value in place.
    #[inline]
    pub fn resync_keysize(&mut self, key: &[u8]) {
        if let Some(h) = &mut self.keysizes {
            if let Some(obj) = self.main.get_mut(key) {
                h.resync(obj);
            }
        }
    }

    /// Starts (or stops) keeping INFO keysizes's histogram, counting the keys present.
    fn keep_keysizes(&mut self, keep: bool) {
        if keep == self.keysizes.is_some() {
            return;
        }
        if !keep {
            self.keysizes = None;
            return;
        }
        let mut h = Box::<KeySizes>::default();
        let mut cursor = 0;
        loop {
            cursor = self.main.scan_mut(cursor, |_, obj| h.count(obj));
            if cursor == 0 {
                break;
            }
        }
        self.keysizes = Some(h);
    }

    /// Empties INFO keysizes's histogram along with the database.
    fn reset_keysizes(&mut self) {
        if let Some(h) = &mut self.keysizes {
            **h = KeySizes::default();
        }
    }

    /// Lists `key` in `field_expires` with `deadline`, the earliest field deadline of the hash
    /// just stored under it ([`fields_deadline`]), if it has one.
    #[inline]
    fn index_hash_fields(&mut self, key: &[u8], deadline: Option<i64>) {
        if let Some(deadline) = deadline {
            self.field_expires.set(key, deadline);
        }
    }

    /// Drops `key` from `field_expires` (one branch while no hash has field TTLs).
    #[inline]
    fn unindex_hash_fields(&mut self, key: &[u8]) {
        if !self.field_expires.is_empty() {
            self.field_expires.remove(key);
        }
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.main.clear();
        self.expires.clear();
        self.field_expires.clear();
        self.avg_ttl = 0;
        self.expires_cursor = 0;
        self.reset_keysizes();
    }

    /// Exchanges everything but the database number with `other`.
    fn swap_contents(&mut self, other: &mut Db) {
        std::mem::swap(&mut self.main, &mut other.main);
        std::mem::swap(&mut self.expires, &mut other.expires);
        std::mem::swap(&mut self.avg_ttl, &mut other.avg_ttl);
        std::mem::swap(&mut self.expires_cursor, &mut other.expires_cursor);
        std::mem::swap(&mut self.field_expires, &mut other.field_expires);
        std::mem::swap(&mut self.keysizes, &mut other.keysizes);
    }

    /// Empties the database and returns the old tables, for the caller to drop where it likes.
    fn take_contents(&mut self) -> Tables {
        self.avg_ttl = 0;
        self.expires_cursor = 0;
        self.field_expires.clear();
        self.reset_keysizes();
        (self.main.take(), self.expires.take())
    }
}

impl Db {
    /// Call before changing or removing `key`'s object (value or TTL): while a snapshot has still
    /// to write this database, an unwritten object is written as it is now. One branch otherwise.
    #[inline(always)]
    pub fn before_change(&mut self, key: &[u8]) {
        if self.snapshot.capture.is_some() {
            self.capture_before_change(key);
        }
    }

    #[cold]
    #[inline(never)]
    fn capture_before_change(&mut self, key: &[u8]) {
        let mark = self.snapshot.mark;
        let Some(obj) = self.main.get_mut(key) else {
            return;
        };
        if obj.snapshot_mark() == mark {
            return;
        }
        obj.set_snapshot_mark(mark);
        let expire = expire_of(&self.expires, key, obj);
        let capture = self.snapshot.capture.as_mut().expect("checked");
        let entry = saved_entry(key, obj, expire, capture.clock);
        self.snapshot.copied += crate::model::snapshot_capture::preimage_bytes(&entry);
        capture.preimages.push(entry);
    }

    /// Marks a new object as not part of a running snapshot (it did not exist when it began).
    #[inline(always)]
    pub fn born(&self, obj: &mut Object) {
        obj.set_snapshot_mark(self.snapshot.mark);
    }
}

/// Captures every unwritten object of `db` now (SWAPDB and FLUSHDB during a snapshot: the
/// database's contents are about to go where the walk will not find them).
pub fn capture_all(db: &mut Db) {
    let Some(capture) = db.snapshot.capture.as_mut() else {
        return;
    };
    let mark = db.snapshot.mark;
    let clock = capture.clock;
    let expires = &db.expires;
    let copied = &mut db.snapshot.copied;
    let mut cursor = 0;
    loop {
        cursor = db.main.scan_mut(cursor, |key, obj| {
            if obj.snapshot_mark() != mark {
                obj.set_snapshot_mark(mark);
                let expire = expire_of(expires, key, obj);
                let entry = saved_entry(key, obj, expire, clock);
                *copied += crate::model::snapshot_capture::preimage_bytes(&entry);
                capture.preimages.push(entry);
            }
        });
        if cursor == 0 {
            break;
        }
    }
}

/// The earliest field deadline of `value` if it is a hash with field TTLs.
#[inline]
pub fn fields_deadline(value: &Value) -> Option<i64> {
    match value {
        Value::Hash(hash) => hash.min_deadline(),
        _ => None,
    }
}

/// A database's two tables, detached from it.
type Tables = (Dict<SmallBytes, Object>, Dict<SmallBytes, i64>);

/// Counters the keyspace keeps for INFO stats.
#[derive(Debug, Default, Clone)]
pub struct KeyspaceStats {
    pub hits: u64,
    pub misses: u64,
    pub expired_keys: u64,
    pub expired_stale_perc: f64,
    pub expired_time_cap_reached_count: u64,
    /// Keys removed by eviction (INFO `evicted_keys`).
    pub evicted_keys: u64,
    pub expire_cycle_cpu_milliseconds: u64,
}

/// What a lookup does with a key whose TTL has passed (Redis's `expireIfNeeded` on a primary
/// and on a replica).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiryRule {
    /// A primary deletes it (and propagates a DEL).
    Delete,
    /// A replica's clients see it as gone, but it stays until the primary's DEL: the replica's
    /// dataset follows the primary's stream only.
    Hide,
    /// The replica's primary link is running a command: the key is still there, as it is on
    /// the primary that sent the command.
    Keep,
}

/// How a lookup treats the key's LRU clock and the hit/miss counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A command reading the key: counts a hit or miss, refreshes the LRU clock.
    Read,
    /// A command about to modify the key: refreshes the LRU clock, no hit/miss.
    Write,
    /// Introspection of a key (EXISTS, TYPE, TTL, OBJECT, SCAN's TYPE filter): counts a hit or
    /// miss like a read but leaves the LRU clock alone (Redis's `LOOKUP_NOTOUCH`), so that
    /// looking at a key does not make it look recently used.
    Inspect,
    /// OBJECT's look at a key: like `Inspect`, but a miss is no `keymiss` event (Redis's
    /// `LOOKUP_NONOTIFY`: OBJECT is about the key's internals, not a read of its value).
    Object,
    /// Neither counts nor touches.
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

/// Keys that blocked clients wait on, and which of them a command has written to.
///
/// Blocking pops (BLPOP, BZPOPMIN…) wait for a key to hold something. Rather than every push
/// command knowing about blocked clients, the keyspace notices writes to watched keys — a write
/// lookup, or a new value stored under the key — and queues the key as *ready*; after the
/// command, the engine serves the clients waiting on each ready key. A spurious signal (a write
/// that removed elements) is harmless: the client's command runs again, finds nothing, and keeps
/// waiting. When nobody is blocked the cost is one emptiness check per write.
#[derive(Debug, Default)]
pub struct ReadyKeys {
    watched: HashSet<(usize, SmallBytes)>,
    queue: VecDeque<(usize, SmallBytes)>,
    queued: HashSet<(usize, SmallBytes)>,
}

impl ReadyKeys {
    /// A client now waits on `key` of `db`.
    pub fn watch(&mut self, db: usize, key: SmallBytes) {
        self.watched.insert((db, key));
    }

    /// Nobody waits on `key` of `db` anymore.
    pub fn unwatch(&mut self, db: usize, key: &SmallBytes) {
        self.watched.remove(&(db, key.clone()));
    }

    /// Notes a write to `key` of `db`: queued as ready if someone waits on it.
    #[inline(always)]
    pub fn signal(&mut self, db: usize, key: &[u8]) {
        // Inlined: one branch on every write while no client is blocked.
        if !self.watched.is_empty() {
            self.signal_watched(db, key);
        }
    }

    #[inline(never)]
    fn signal_watched(&mut self, db: usize, key: &[u8]) {
        let slot = (db, SmallBytes::new(key));
        if self.watched.contains(&slot) && self.queued.insert(slot.clone()) {
            self.queue.push_back(slot);
        }
    }

    /// Queues every watched key of `db` (SWAPDB changed what the database holds).
    pub fn signal_db(&mut self, db: usize) {
        let keys: Vec<SmallBytes> = self
            .watched
            .iter()
            .filter(|(d, _)| *d == db)
            .map(|(_, k)| k.clone())
            .collect();
        for key in keys {
            self.signal(db, &key);
        }
    }

    pub fn has_ready(&self) -> bool {
        !self.queue.is_empty()
    }

    /// The next ready key, in the order they were signalled.
    pub fn pop(&mut self) -> Option<(usize, SmallBytes)> {
        let slot = self.queue.pop_front()?;
        self.queued.remove(&slot);
        Some(slot)
    }
}

/// All databases and the counters that span them.
pub struct Keyspace {
    pub dbs: Vec<Db>,
    pub stats: KeyspaceStats,
    /// Writes since the last save (INFO rdb_changes_since_last_save).
    pub dirty: u64,
    /// Keys blocked clients wait on (see [`ReadyKeys`]).
    pub ready: ReadyKeys,
    /// Keys clients WATCH, told about every modification (see [`crate::model::watch`]).
    pub watches: Watches,
    /// Keyspace notifications: the classes that are on and the events noted here (expired,
    /// keymiss, new, evicted) until the kernel publishes them (see [`crate::model::notify`]).
    pub notify: Notifications,
    /// Client tracking, told about every modification too (see [`crate::model::tracking`]).
    pub tracking: Tracking,
    /// The write stream for AOF and replicas (see [`crate::model::write_stream`]): the keyspace queues
    /// the deletions no command asked for (expiry, eviction).
    pub stream: WriteStream,
    /// While CLIENT PAUSE is in force (until this time, exclusive), expired keys read as absent
    /// but stay in place, uncounted: a paused server keeps its dataset constant, as Redis's
    /// `expireIfNeeded` does, and they expire normally once the pause ends. `i64::MIN`: no pause.
    pub expiry_held_until: i64,
    /// Who deletes expired keys: this server (a primary), or its primary (a replica, whose
    /// primary sends a DEL for each; see [`ExpiryRule`]).
    pub expiry_rule: ExpiryRule,
    /// On a writable replica: keys its own clients gave a TTL (Redis's `slaveKeysWithExpire`).
    /// Its primary will never send their DELs, so the replica's tick expires them itself.
    pub replica_keys_with_expire: std::collections::HashSet<(usize, SmallBytes)>,
    /// What an access does to an object's header under the eviction policy (LRU clock or LFU
    /// counter), and how new objects start. Set from the configuration with `maxmemory`
    /// ([`Keyspace::apply_config`]) by the engine at start and after every CONFIG SET.
    pub access: AccessClock,
    /// `maxmemory` (0: none): a key table may not double past it (see [`hold_growth`]).
    maxmemory: u64,
    /// `maxmemory` is set or the policy is LFU: a new key takes the slow path of
    /// [`new_object`], so that without them adding a key costs one branch more.
    limits: bool,
    /// The databases keep INFO keysizes's histogram (`compat-version` 8.2 and later).
    keysizes: bool,
    /// Keys lent for writing during the running command, re-binned in the histogram after it
    /// ([`Keyspace::settle_keysizes`]): a handler changes a value in place, out of sight.
    keysizes_pending: Vec<(usize, SmallBytes)>,
}

/// Which events a read that finds hash fields expired sends (see
/// [`Keyspace::expire_hash_fields`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldEvents {
    /// `hexpired`, then `del` if the hash emptied.
    Always,
    /// As HMGET: nothing if the only field removed was the one that emptied the hash.
    HmgetQuirk,
}

impl Keyspace {
    pub fn new(databases: usize) -> Self {
        Keyspace {
            dbs: (0..databases).map(Db::new).collect(),
            stats: KeyspaceStats::default(),
            dirty: 0,
            ready: ReadyKeys::default(),
            watches: Watches::default(),
            notify: Notifications::default(),
            tracking: Tracking::default(),
            stream: WriteStream::default(),
            expiry_held_until: i64::MIN,
            expiry_rule: ExpiryRule::Delete,
            replica_keys_with_expire: std::collections::HashSet::new(),
            access: AccessClock::default(),
            maxmemory: 0,
            limits: false,
            keysizes: false,
            keysizes_pending: Vec::new(),
        }
    }

    /// Notes that eviction removed `key` of `db` (the `evicted` event, class `e`); the caller
    /// has deleted the key. For the eviction loop, which runs before a command.
    pub fn note_evicted(&mut self, db: usize, key: &[u8]) {
        self.notify.note(event_class::EVICTED, "evicted", db, key);
    }

    /// Notes that `key` of `db` was created (the `new` event, class `n`, as Redis's `dbAdd`).
    #[inline]
    fn note_new(&mut self, db: usize, key: &[u8]) {
        self.notify.note(event_class::NEW, "new", db, key);
    }

    /// True while a CLIENT PAUSE keeps expired keys in place (see `expiry_held_until`).
    #[inline]
    pub fn expiry_held(&self, now: i64) -> bool {
        now < self.expiry_held_until
    }

    /// Takes up what the configuration says about objects' headers and memory limits.
    pub fn apply_config(&mut self, config: &crate::base::config::Config) {
        self.access = config.access_clock();
        self.maxmemory = config.maxmemory;
        self.limits = self.maxmemory != 0 || self.access.lfu;
        self.stream.lazy_expire = config.lazyfree_lazy_expire;
        self.stream.bare_multi = config.compat_version >= crate::base::compat::CompatVersion::V7_2;
        let keysizes = config.compat_version >= crate::base::compat::CompatVersion::V8_2;
        self.dbs.iter_mut().for_each(|d| d.keep_keysizes(keysizes));
        self.keysizes = keysizes;
    }

    pub fn db(&mut self, db: usize) -> &mut Db {
        &mut self.dbs[db]
    }

    /// Whether a deadline already past deletes at once (EXPIRE -1, GETEX EXAT 1, RESTORE with
    /// an old ABSTTL, HEXPIRE 0): only where keys expire here. While a file loads and on a
    /// replica the key keeps the past deadline and waits for its primary's DEL, as Redis's
    /// `checkAlreadyExpired` answers false under `server.loading` or `server.masterhost`.
    pub fn deletes_past_deadlines(&self) -> bool {
        self.expiry_rule == ExpiryRule::Delete
    }

    /// Deletes `key` if its TTL has passed at `now`; true if it has expired (deleted, or only
    /// hidden while a CLIENT PAUSE holds expired keys in place).
    #[inline]
    pub fn expire_if_needed(&mut self, db: usize, key: &[u8], now: i64) -> bool {
        // Inlined up to here: a database without TTLs costs every lookup one branch.
        if self.dbs[db].expires.is_empty() {
            return false;
        }
        self.expire_if_due(db, key, now, false)
    }

    /// [`Keyspace::expire_if_needed`] before a write: on a replica too, a client's write
    /// deletes the expired key it is about to replace (Redis's `EXPIRE_FORCE_DELETE_EXPIRED`:
    /// an INCR on a writable replica starts from nothing, without the old TTL).
    #[inline]
    pub fn expire_if_needed_for_write(&mut self, db: usize, key: &[u8], now: i64) -> bool {
        if self.dbs[db].expires.is_empty() {
            return false;
        }
        self.expire_if_due(db, key, now, true)
    }

    /// [`Keyspace::expire_if_needed`] for a database that has keys with a TTL.
    #[inline(never)]
    fn expire_if_due(&mut self, db: usize, key: &[u8], now: i64, write: bool) -> bool {
        // Only keys with a TTL are in `expires`: one probe there, none of the main table, so a
        // lookup costs one probe per table at most (GET is the hottest path of all).
        if self.dbs[db]
            .expires
            .get(key)
            .is_none_or(|&when| now <= when)
        {
            return false;
        }
        match self.expiry_rule {
            ExpiryRule::Delete => {}
            ExpiryRule::Hide if !write => return true,
            ExpiryRule::Hide => {}
            ExpiryRule::Keep => return false,
        }
        if now < self.expiry_held_until {
            return true;
        }
        self.dbs[db].remove(key);
        self.stats.expired_keys += 1;
        self.dirty += 1;
        self.notify.note(event_class::EXPIRED, "expired", db, key);
        self.touched_by_expiry(db, key);
        if self.stream.is_on() {
            // Not the running command's change: it propagates as a DEL of its own.
            self.stream.side_dirty += 1;
            self.stream.expired(db, key);
        }
        true
    }

    /// Tells the watchers of `key` of `db`, and client tracking, that a command modified it
    /// (Redis's `signalModifiedKey`). One branch while nobody watches or tracks.
    #[inline(always)]
    pub fn touched(&mut self, db: usize, key: &[u8]) {
        self.signal_modified(db, key, true);
    }

    /// As [`Keyspace::touched`] for a key deleted because it expired (lazily or by the active
    /// cycle): no client's command changed it, which matters to NOLOOP broadcasting clients.
    #[inline]
    pub fn touched_by_expiry(&mut self, db: usize, key: &[u8]) {
        self.signal_modified(db, key, false);
    }

    #[inline(always)]
    fn signal_modified(&mut self, db: usize, key: &[u8], by_command: bool) {
        // A deleted or replaced key concerns clients blocked on it too (an XREADGROUP whose
        // stream is gone is released with an error); one emptiness check when nobody waits.
        self.ready.signal(db, key);
        // `|`, not `||`: one branch for both listeners on the write path, inlined into it.
        if !self.watches.is_empty() | self.tracking.is_on() {
            self.signal_listeners(db, key, by_command);
        }
    }

    #[inline(never)]
    fn signal_listeners(&mut self, db: usize, key: &[u8], by_command: bool) {
        if !self.watches.is_empty() {
            let exists = self.dbs[db].main.get(key).is_some();
            self.watches.touch(db, key, exists);
        }
        self.tracking.signal_key(key, by_command);
    }

    /// True if a command left work for `call` to do after it: watched keys it looked up for
    /// writing, for WATCH or client tracking (see [`Keyspace::settle_noted_writes`]), or keyspace
    /// events to publish. They are tested with one branch (`|`, not `||`), so the hot path pays
    /// nothing for notifications.
    #[inline]
    pub fn has_after_command_work(&self) -> bool {
        self.watches.has_noted()
            | self.tracking.has_noted()
            | self.notify.has_pending()
            | !self.keysizes_pending.is_empty()
    }

    /// Notes that `key` of `db` is lent for writing, for [`Keyspace::settle_keysizes`].
    #[inline(always)]
    fn note_keysize_write(&mut self, db: usize, key: &[u8]) {
        if self.keysizes {
            self.keysizes_pending.push((db, SmallBytes::new(key)));
        }
    }

    /// Re-bins in INFO keysizes's histogram the keys lent for writing since the last call (the
    /// end of a command, and INFO before it renders them).
    pub fn settle_keysizes(&mut self) {
        // Drained in place: the list keeps its allocation from one command to the next.
        for (db, key) in self.keysizes_pending.drain(..) {
            self.dbs[db].resync_keysize(&key);
        }
    }

    /// Redis 8.2.3 leaves some size changes uncounted (SETBIT growing an empty string): the
    /// object's tag follows its value while the counts stay, so that what later changes and
    /// deletions move is what Redis's would.
    pub fn keysize_uncounted(&mut self, db: usize, key: &[u8]) {
        if self.keysizes {
            if let Some(obj) = self.dbs[db].main.get_mut(key) {
                obj.keysize = crate::model::keysizes::tag_of(&obj.value);
            }
        }
    }

    /// INFO keysizes's lines for every database, empty while no histogram is kept.
    pub fn render_keysizes(&mut self, out: &mut String) {
        self.settle_keysizes();
        for d in &self.dbs {
            if let Some(h) = &d.keysizes {
                h.render(d.id, out);
            }
        }
    }

    /// After a command: the watched keys it looked up for writing count as modified if it
    /// changed anything (`changed`: the `dirty` counter moved). See [`crate::model::watch`].
    #[inline]
    pub fn settle_noted_writes(&mut self, changed: bool) {
        // `|`: one branch for WATCH's notes and client tracking's.
        if self.watches.has_noted() | self.tracking.has_noted() {
            for (db, key) in self.watches.take_noted() {
                if changed {
                    let exists = self.dbs[db].main.get(key.as_slice()).is_some();
                    self.watches.touch(db, &key, exists);
                }
            }
            for key in self.tracking.take_noted() {
                if changed {
                    self.tracking.signal_key(&key, true);
                }
            }
        }
    }

    /// A command looked `key` of `db` up for writing: WATCH and client tracking note it, and
    /// count it as modified if the command turns out to change something (see
    /// [`Keyspace::settle_noted_writes`]).
    #[inline(always)]
    fn note_write(&mut self, db: usize, key: &[u8]) {
        if !self.watches.is_empty() | self.tracking.is_on() {
            self.note_write_listeners(db, key);
        }
    }

    #[inline(never)]
    fn note_write_listeners(&mut self, db: usize, key: &[u8]) {
        self.watches.note_write(db, key);
        self.tracking.note_write(key);
    }

    /// Takes back the note of a write lookup that changed nothing while the command changed
    /// another key (SMOVE to a set that already has the member).
    pub fn unnote_write(&mut self, db: usize, key: &[u8]) {
        self.watches.unnote(db, key);
        self.tracking.unnote_write(key);
    }

    /// True if a key `client` watched alive has passed its deadline since (EXEC refuses to run
    /// then, deleted or not).
    pub fn watched_key_expired(&self, client: crate::model::client::ClientId, now: i64) -> bool {
        self.watches
            .keys_of(client)
            .iter()
            .any(|(db, key, expired_at_watch)| {
                !expired_at_watch && self.dbs[*db].is_expired(key, now)
            })
    }

    /// Looks `key` up for `access`, deleting it first if it has expired.
    // Always inlined: every caller names its `access`, so each copy keeps only its own arms,
    // and GET's copy is the hottest path there is.
    #[inline(always)]
    pub fn lookup(
        &mut self,
        db: usize,
        key: &[u8],
        now: i64,
        access: Access,
    ) -> Option<&mut Object> {
        // An expired key is gone — or, while a pause holds it in place, only looks it.
        let expired = if access == Access::Write {
            self.expire_if_needed_for_write(db, key, now)
        } else {
            self.expire_if_needed(db, key, now)
        };
        if access == Access::Write {
            self.ready.signal(db, key);
            self.note_write(db, key);
            self.note_keysize_write(db, key);
        }
        let found = if expired {
            None
        } else {
            let d = &mut self.dbs[db];
            if access == Access::Write {
                d.before_change(key);
            }
            d.main.get_mut(key)
        };
        match access {
            Access::Read | Access::Inspect | Access::Object => {
                if found.is_some() {
                    self.stats.hits += 1;
                } else {
                    self.stats.misses += 1;
                    if access != Access::Object {
                        self.notify.note(event_class::KEY_MISS, "keymiss", db, key);
                    }
                }
            }
            Access::Write | Access::NoTouch => {}
        }
        let obj = found?;
        if matches!(access, Access::Read | Access::Write) {
            self.access.touch(obj, now);
        }
        Some(obj)
    }

    /// Read access to a key's value.
    #[inline]
    pub fn read(&mut self, db: usize, key: &[u8], now: i64) -> Option<&mut Value> {
        self.lookup(db, key, now, Access::Read)
            .map(|o| &mut o.value)
    }

    /// Write access to a key's value (after lazy expiry).
    #[inline]
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
        let (clock, limits, maxmemory) = (self.access, self.limits, self.maxmemory);
        let fields_deadline = fields_deadline(&value);
        let d = &mut self.dbs[db];
        d.before_change(key);
        match d.main.get_mut(key) {
            Some(obj) => {
                let had_expire = obj.has_expire();
                obj.value = value;
                // Redis looks the key up for writing (an access) and the new object inherits
                // the header under LFU: one touch is both.
                clock.touch(obj, now);
                // A new value is a new object in Redis: shared again if it is a small integer
                // and the policy shares them.
                obj.set_private(clock.private_ints);
                if had_expire && !keep_ttl {
                    obj.set_has_expire(false);
                    d.expires.remove(key);
                }
                if let Some(h) = &mut d.keysizes {
                    h.resync(obj);
                }
                d.unindex_hash_fields(key);
                d.index_hash_fields(key, fields_deadline);
            }
            None => {
                let (obj, held) = new_object(d, clock, limits, maxmemory, value, now);
                d.main.insert_new(SmallBytes::new(key), obj);
                release_growth(d, held);
                d.index_hash_fields(key, fields_deadline);
                self.note_new(db, key);
            }
        }
        // `touched` also queues the key for clients blocked on it.
        self.touched(db, key);
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
        self.expire_if_needed_for_write(db, key, now);
        if matches!(ttl, Ttl::At(_)) && self.expiry_rule == ExpiryRule::Hide {
            self.replica_keys_with_expire
                .insert((db, SmallBytes::new(key)));
        }
        let (clock, limits, maxmemory) = (self.access, self.limits, self.maxmemory);
        let d = &mut self.dbs[db];
        if when != StoreIf::Absent {
            d.before_change(key);
        }
        match d.main.get_mut(key) {
            Some(obj) => {
                if when == StoreIf::Absent {
                    return false;
                }
                obj.value = make();
                clock.touch(obj, now);
                obj.set_private(clock.private_ints);
                if let Some(h) = &mut d.keysizes {
                    h.resync(obj);
                }
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
                let (obj, held) = new_object(d, clock, limits, maxmemory, make(), now);
                let obj = d.main.insert_new(SmallBytes::new(key), obj);
                if let Ttl::At(when_ms) = ttl {
                    obj.set_has_expire(true);
                    d.expires.insert(SmallBytes::new(key), when_ms);
                }
                release_growth(d, held);
                self.note_new(db, key);
            }
        }
        // `touched` also queues the key for clients blocked on it.
        self.touched(db, key);
        self.dirty += 1;
        true
    }

    /// Adds a key known to be absent (the caller checked), with an optional deadline.
    pub fn add(&mut self, db: usize, key: &[u8], value: Value, expire_at: Option<i64>, now: i64) {
        let (clock, limits, maxmemory) = (self.access, self.limits, self.maxmemory);
        let fields_deadline = fields_deadline(&value);
        let d = &mut self.dbs[db];
        let (obj, held) = new_object(d, clock, limits, maxmemory, value, now);
        let obj = d.main.insert_new(SmallBytes::new(key), obj);
        if let Some(when) = expire_at {
            obj.set_has_expire(true);
            d.expires.insert(SmallBytes::new(key), when);
        }
        release_growth(d, held);
        d.index_hash_fields(key, fields_deadline);
        self.note_new(db, key);
        // `touched` also queues the key for clients blocked on it.
        self.touched(db, key);
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
            self.touched(db, key);
        }
        removed
    }

    /// Deletes the key of a collection its command just emptied (Redis's `dbDelete` after an
    /// SREM, LPOP, ZREM…). Not a change of its own: the command already counted the elements it
    /// removed, and Redis's `rdb_changes_since_last_save` (what save points count) adds nothing
    /// for the key.
    pub fn delete_emptied(&mut self, db: usize, key: &[u8], now: i64) {
        if self.delete(db, key, now) {
            self.dirty -= 1;
        }
    }

    /// UNLINK's delete: as [`Keyspace::delete`], but a value that takes long to free (Redis's
    /// free effort above 64 allocations) is freed on the background thread, as one object.
    pub fn unlink(&mut self, db: usize, key: &[u8], now: i64) -> bool {
        if self.expire_if_needed(db, key, now) {
            return false;
        }
        let Some(obj) = self.dbs[db].remove(key) else {
            return false;
        };
        if free_effort(&obj.value) > LAZYFREE_THRESHOLD {
            free_in_background(obj, 1);
        } else {
            drop(obj);
        }
        self.dirty += 1;
        self.touched(db, key);
        true
    }

    /// Removes `key` of `db` for eviction (the one place eviction deletes a key): counted in
    /// INFO's `evicted_keys`, told to watchers and client tracking as a modification
    /// ([`Keyspace::touched`]), not counted in `dirty` (Redis propagates a DEL instead). With
    /// `lazy` (`lazyfree-lazy-eviction`), a value big enough to be worth it is freed on the
    /// background thread, as Redis's `dbAsyncDelete` does. Returns the memory the deletion
    /// freed as `meter` sees it, or None if there was no such key.
    ///
    /// As in Redis's `performEvictions`, only the deletion is measured: the DEL propagated,
    /// the `evicted` event and the tracking invalidations, all after it, take memory of
    /// their own (freed once sent), which would otherwise count against the freed bytes — with
    /// clients tracking long keys, every eviction then "freed" less than nothing and the pass
    /// evicted the whole database.
    pub fn evicted(
        &mut self,
        db: usize,
        key: &[u8],
        lazy: bool,
        meter: impl Fn(&Keyspace) -> u64,
    ) -> Option<i64> {
        let before = meter(self) as i64;
        let obj = self.dbs[db].remove(key)?;
        if lazy {
            let effort = free_effort(&obj.value);
            if effort > LAZYFREE_THRESHOLD {
                free_in_background(obj, effort);
            }
        } else {
            drop(obj);
        }
        let freed = before - meter(self) as i64;
        self.stats.evicted_keys += 1;
        self.stream.deleted(db, key, lazy);
        // As Redis: the `evicted` event, then the modification signal (WATCH, tracking).
        self.note_evicted(db, key);
        self.touched(db, key);
        Some(freed)
    }

    /// Re-lists the hash at `key` of `db` in the database's index of hashes with field TTLs, by
    /// its earliest field deadline now, or drops it from there (no such hash, or no field TTL
    /// left). For the commands that change field TTLs in place.
    pub fn reindex_hash_fields(&mut self, db: usize, key: &[u8]) {
        let d = &mut self.dbs[db];
        match d.main.get(key).and_then(|obj| fields_deadline(&obj.value)) {
            Some(deadline) => {
                d.field_expires.set(key, deadline);
            }
            None => d.unindex_hash_fields(key),
        }
    }

    /// Deletes the fields of the hash at `key` of `db` that have expired at `now`: those of
    /// `fields` (a command about to read them), or with `fields` None every due field: one
    /// `hexpired` event however many fields expired (Redis 7.4.1 and 8.2.3 send one for an
    /// HMGET of two expired fields, as for the active cycle), and `del` if that empties the
    /// hash, which deletes the key. With [`FieldEvents::HmgetQuirk`] the events are sent only
    /// if a field expired before the one whose removal emptied the hash (HMGET counts only
    /// those, so a hash whose one field expires goes silently). Like key expiry, nothing is
    /// deleted while a CLIENT PAUSE holds expired data in place (readers treat the fields as
    /// absent). Returns true if the key is gone.
    pub fn expire_hash_fields<T: AsRef<[u8]>>(
        &mut self,
        db: usize,
        key: &[u8],
        now: i64,
        fields: Option<&[T]>,
        events: FieldEvents,
    ) -> bool {
        if self.expiry_held(now) {
            return false;
        }
        let d = &mut self.dbs[db];
        d.before_change(key);
        let Some(Value::Hash(hash)) = d.main.get_mut(key).map(|o| &mut o.value) else {
            return false;
        };
        let mut expired = 0;
        let mut announce_del = true;
        // As Redis 8 propagates a field's expiry: HDEL of each field, on its own.
        let propagating = self.stream.is_on();
        match fields {
            Some(fields) => {
                for field in fields {
                    let field = field.as_ref();
                    if hash.is_expired(field, now) {
                        hash.remove(field);
                        expired += 1;
                        if propagating {
                            self.stream.hash_field_expired(db, key, &[field]);
                        }
                    }
                }
                let emptied = hash.is_empty() as usize;
                if expired > 0 && (events == FieldEvents::Always || expired > emptied) {
                    self.notify.note(event_class::HASH, "hexpired", db, key);
                } else {
                    announce_del = false;
                }
            }
            None => {
                let due = hash.expired_fields(now);
                expired = hash.remove_fields(&due);
                if expired > 0 {
                    self.notify.note(event_class::HASH, "hexpired", db, key);
                    if propagating {
                        self.stream.hash_field_expired(db, key, &due);
                    }
                }
            }
        }
        if propagating {
            self.stream.side_dirty += expired as u64;
        }
        if expired == 0 {
            return false;
        }
        let emptied = hash.is_empty();
        if emptied {
            d.remove(key);
            if announce_del {
                self.notify.note(event_class::GENERIC, "del", db, key);
            }
        } else {
            d.resync_keysize(key);
        }
        self.dirty += expired as u64;
        self.touched_by_expiry(db, key);
        emptied
    }

    /// Notes that a command's lookup found field(s) of the hash at `key` of `db` expired and
    /// removed them itself (HINCRBY, HSETNX: the hash stays, the field is written again): the
    /// `hexpired` event, the change, the modification signal.
    pub fn note_hash_field_expired(&mut self, db: usize, key: &[u8]) {
        self.notify.note(event_class::HASH, "hexpired", db, key);
        self.dirty += 1;
        // The command rewrites the field: its own propagation carries the new value.
        self.stream.side_dirty += 1;
        self.touched_by_expiry(db, key);
    }

    /// Sets the deadline of an existing key. Returns false if the key does not exist.
    pub fn set_expire(&mut self, db: usize, key: &[u8], when_ms: i64) -> bool {
        let d = &mut self.dbs[db];
        d.before_change(key);
        let Some(obj) = d.main.get_mut(key) else {
            return false;
        };
        obj.set_has_expire(true);
        d.expires.insert(SmallBytes::new(key), when_ms);
        if self.expiry_rule == ExpiryRule::Hide {
            self.replica_keys_with_expire
                .insert((db, SmallBytes::new(key)));
        }
        self.touched(db, key);
        true
    }

    /// A writable replica's tick: the keys its own clients gave a TTL that has passed are
    /// deleted (nobody else will); keys that lost their TTL or are gone are forgotten.
    pub fn expire_replica_keys(&mut self, now: i64) {
        if self.replica_keys_with_expire.is_empty() {
            return;
        }
        let tracked: Vec<(usize, SmallBytes)> = self.replica_keys_with_expire.drain().collect();
        for (db, key) in tracked {
            match self.dbs[db].expire_of(key.as_slice()) {
                Some(when) if now > when => {
                    self.expire_if_needed_for_write(db, key.as_slice(), now);
                }
                Some(_) => {
                    self.replica_keys_with_expire.insert((db, key));
                }
                None => {}
            }
        }
    }

    /// Removes the deadline of a key; true if it had one.
    pub fn persist(&mut self, db: usize, key: &[u8]) -> bool {
        let d = &mut self.dbs[db];
        d.before_change(key);
        let Some(obj) = d.main.get_mut(key) else {
            return false;
        };
        if !obj.has_expire() {
            return false;
        }
        obj.set_has_expire(false);
        d.expires.remove(key);
        self.touched(db, key);
        true
    }

    /// The key's deadline in ms, if it exists and has one (no lazy expiry here).
    pub fn expire_of(&self, db: usize, key: &[u8]) -> Option<i64> {
        self.dbs[db].expire_of(key)
    }

    /// Total keys across databases.
    /// Lets every database's key tables resize, or holds them (a child process runs: see
    /// `crate::services::child_processes`).
    pub fn set_resize_allowed(&mut self, allowed: bool) {
        for d in &mut self.dbs {
            d.resize_allowed = allowed;
            d.main.set_resize_allowed(allowed);
            d.expires.set_resize_allowed(allowed);
        }
    }

    pub fn total_keys(&self) -> usize {
        self.dbs.iter().map(Db::len).sum()
    }

    /// Bytes of the key tables' slab slots that hold no key (see `Dict::idle_bytes`). Memory
    /// as INFO and eviction count it leaves them out, as Redis's `used_memory` leaves out what
    /// its allocator keeps free: a key's entry lives inside a slab chunk, so evicting a short
    /// key frees no allocation, and a new chunk (up to 4,096 entries) arrives all at once.
    /// Counting the slots would make the first eviction past a new chunk evict every key and
    /// then refuse writes with DBSIZE 0 (Redis's "is the memory limit honoured?" test).
    pub fn idle_table_bytes(&self) -> u64 {
        let idle = |d: &Db| d.main.idle_bytes() + d.expires.idle_bytes();
        self.dbs.iter().map(idle).sum::<usize>() as u64
    }

    /// Removes `key` and hands back its name, object (LRU clock included) and deadline, for a
    /// command that moves the key elsewhere with [`Keyspace::put`] (RENAME, MOVE). No lazy
    /// expiry here: the caller has just looked the key up. Not counted in `dirty`: the command
    /// counts its change once, as Redis does.
    pub fn take(&mut self, db: usize, key: &[u8]) -> Option<(SmallBytes, Object, Option<i64>)> {
        let d = &mut self.dbs[db];
        d.before_change(key);
        let (name, mut obj) = d.main.remove_entry(key)?;
        d.uncount(&obj);
        let deadline = if obj.has_expire() {
            d.expires.remove(key)
        } else {
            None
        };
        d.unindex_hash_fields(key);
        obj.set_has_expire(false);
        self.touched(db, key);
        Some((name, obj, deadline))
    }

    /// Stores `obj` under `key`, which must be absent (the caller checked), with an optional
    /// deadline. The object keeps its header (LRU clock, private-integer mark). Not counted in
    /// `dirty` (see [`Keyspace::take`]).
    pub fn put(&mut self, db: usize, key: SmallBytes, mut obj: Object, expire_at: Option<i64>) {
        self.ready.signal(db, &key);
        let d = &mut self.dbs[db];
        d.index_hash_fields(&key, fields_deadline(&obj.value));
        obj.set_has_expire(expire_at.is_some());
        d.born(&mut obj);
        d.count(&mut obj);
        match expire_at {
            Some(when) => {
                d.main.insert_new(key.clone(), obj);
                d.expires.insert(key.clone(), when);
            }
            None => {
                d.main.insert_new(key.clone(), obj);
            }
        }
        self.note_new(db, &key);
        self.touched(db, &key);
    }

    /// Adds a key read from a file (RDB load, RESTORE's twin at start-up): no events, no
    /// `dirty`, no modification signal — loading is not a command. `lru` is the access bits the
    /// file gave (idle time or LFU counter), else the object starts fresh. False if the key
    /// already exists (a file with a duplicate key is corrupt).
    pub fn load_entry(
        &mut self,
        db: usize,
        key: SmallBytes,
        value: Value,
        expire_at: Option<i64>,
        lru: Option<u32>,
        now: i64,
    ) -> bool {
        let (clock, limits, maxmemory) = (self.access, self.limits, self.maxmemory);
        let fields_deadline = fields_deadline(&value);
        let d = &mut self.dbs[db];
        let (mut obj, held) = new_object(d, clock, limits, maxmemory, value, now);
        if let Some(bits) = lru {
            obj.touch(bits);
        }
        obj.set_has_expire(expire_at.is_some());
        // One probe: a duplicate (a corrupt file) is put back as it was and reported.
        if let Some(old) = d.main.insert(key.clone(), obj) {
            if let Some(new) = d.main.insert(key, old) {
                d.uncount(&new);
            }
            release_growth(d, held);
            return false;
        }
        d.index_hash_fields(&key, fields_deadline);
        if let Some(when) = expire_at {
            d.expires.insert(key, when);
        }
        release_growth(d, held);
        true
    }

    /// Exchanges the contents of databases `a` and `b` (SWAPDB): clients that selected `a` now
    /// see what was in `b`. Each database keeps its number. Not counted in `dirty`: SWAPDB
    /// counts one change even when `a == b`.
    pub fn swap_dbs(&mut self, a: usize, b: usize, now: i64) {
        if a == b {
            return;
        }
        let (low, high) = (a.min(b), a.max(b));
        capture_all(&mut self.dbs[a]);
        capture_all(&mut self.dbs[b]);
        if !self.watches.is_empty() {
            self.touch_watched_on_swap(a, b, now);
            self.touch_watched_on_swap(b, a, now);
        }
        let (left, right) = self.dbs.split_at_mut(high);
        left[low].swap_contents(&mut right[0]);
        // Clients blocked on either database may now find their keys.
        self.ready.signal_db(a);
        self.ready.signal_db(b);
    }

    /// SWAPDB is about to replace what database `db` holds with what `incoming` holds: a
    /// watched key of `db` changes if either holds it, with Redis 7.0's exceptions for expired
    /// keys — an expired key replaced by nothing or by another expired key is no change, and a
    /// missing key replaced by an expired one becomes a key watched expired.
    fn touch_watched_on_swap(&mut self, db: usize, incoming: usize, now: i64) {
        for key in self.watches.keys_in(db) {
            let here = self.dbs[db].main.get(key.as_slice()).is_some();
            let there = self.dbs[incoming].main.get(key.as_slice()).is_some();
            if !here && !there {
                continue;
            }
            let there_expired = self.dbs[incoming].is_expired(&key, now);
            for (client, expired_at_watch) in self.watches.watchers_of(db, &key) {
                if expired_at_watch {
                    if !there {
                        self.watches.set_watcher_expired(client, db, &key, false);
                        continue;
                    }
                    if there_expired {
                        continue;
                    }
                } else if !here && there_expired {
                    self.watches.set_watcher_expired(client, db, &key, true);
                    continue;
                }
                self.watches.break_transaction(client);
            }
        }
    }

    /// FLUSHDB / FLUSHALL is about to empty `db`: its watched keys that are stored change (an
    /// already expired one only disappears, which is no change).
    fn touch_watched_on_flush(&mut self, db: usize) {
        if self.watches.is_empty() {
            return;
        }
        for key in self.watches.keys_in(db) {
            if self.dbs[db].main.get(key.as_slice()).is_some() {
                self.watches.touch(db, &key, false);
            }
        }
    }

    /// Removes every key of database `db` (FLUSHDB) and returns how many there were. With
    /// `lazy`, the entries are freed on the background thread and the call returns at once.
    pub fn flush_db(&mut self, db: usize, lazy: bool) -> usize {
        self.touch_watched_on_flush(db);
        // Blocked stream group readers learn that their keys are gone.
        self.ready.signal_db(db);
        self.tracking.signal_flush();
        capture_all(&mut self.dbs[db]);
        let removed = self.dbs[db].len();
        let tables = self.dbs[db].take_contents();
        dispose(tables, removed, lazy);
        self.dirty += removed as u64;
        removed
    }

    /// Removes every key of every database (FLUSHALL); returns how many there were.
    pub fn flush_all(&mut self, lazy: bool) -> usize {
        for db in 0..self.dbs.len() {
            self.touch_watched_on_flush(db);
            self.ready.signal_db(db);
            capture_all(&mut self.dbs[db]);
        }
        self.tracking.signal_flush();
        let removed = self.total_keys();
        let tables: Vec<Tables> = self.dbs.iter_mut().map(Db::take_contents).collect();
        dispose(tables, removed, lazy);
        self.dirty += removed as u64;
        removed
    }

    /// A random key of `db` that has not expired at `now` (RANDOMKEY), or None if there is none.
    /// Expired keys picked on the way are deleted, as a Redis master does, so the search ends.
    pub fn random_key(&mut self, db: usize, now: i64, rng: &mut impl Rng) -> Option<SmallBytes> {
        // While a pause holds expired keys in place none is deleted: like a Redis replica, give
        // up after 100 expired picks and return the last (else the search might never end).
        let mut tries = 100;
        loop {
            let d = &self.dbs[db];
            let (key, obj) = d.main.random_entry(rng)?;
            let expired = obj.has_expire()
                && matches!(d.expires.get(key.as_slice()), Some(&when) if now > when);
            if !expired {
                return Some(key.clone());
            }
            if self.expiry_held(now) {
                tries -= 1;
                if tries == 0 {
                    return Some(key.clone());
                }
                continue;
            }
            let key = key.clone();
            self.expire_if_needed(db, &key, now);
        }
    }

    /// One SCAN call's walk over `db`'s keys, from `cursor`: visits buckets until `count` keys
    /// were collected or `count * 10` more buckets were visited (so that a sparse table cannot
    /// make one call walk it all), and returns the next cursor (0 = iteration complete) with the
    /// keys found. Keys come as stored, expired or not: SCAN filters them afterwards.
    pub fn scan_keys(&self, db: usize, cursor: u64, count: u64) -> (u64, Vec<SmallBytes>) {
        let main = &self.dbs[db].main;
        let mut keys = Vec::new();
        let mut cursor = cursor;
        // Redis counts this budget down with a signed, wrapping counter: a huge COUNT makes it
        // negative and so, in practice, unlimited.
        let mut budget = (count as i64).wrapping_mul(10);
        loop {
            cursor = main.scan(cursor, |key, _| keys.push(key.clone()));
            if cursor == 0 || budget == 0 || keys.len() as u64 >= count {
                break;
            }
            budget = budget.wrapping_sub(1);
        }
        (cursor, keys)
    }
}

/// The object of a key about to be added to `d`, as the policy makes it (see
/// [`AccessClock::object`]), and whether [`hold_growth`] held the table back (the caller
/// inserts, then calls [`release_growth`]). Without `limits` (no `maxmemory`, no LFU policy) a
/// plain object with the LRU clock, after one branch.
#[inline]
fn new_object(
    d: &mut Db,
    clock: AccessClock,
    limits: bool,
    maxmemory: u64,
    value: Value,
    now: i64,
) -> (Object, bool) {
    if !limits {
        let mut obj = Object::new(value, crate::base::value::lru_clock(now));
        d.born(&mut obj);
        d.count(&mut obj);
        return (obj, false);
    }
    let held = maxmemory != 0 && hold_growth(d, maxmemory);
    let mut obj = clock.object(value, now);
    d.born(&mut obj);
    d.count(&mut obj);
    (obj, held)
}

/// Redis's `dictExpandAllowed` for a database's key table: when the next key would make the
/// table double, and the new bucket array would take memory over `maxmemory`, the table is
/// not allowed to grow (unless it is already more than 1.618 keys per bucket full), so that one
/// insertion does not suddenly push memory over the limit and evict many keys. True if it held
/// the table back.
#[cold]
fn hold_growth(d: &mut Db, maxmemory: u64) -> bool {
    let main = &d.main;
    let (len, size) = (main.len(), main.buckets());
    if main.is_rehashing() || size == 0 || len < size || len as f64 / size as f64 > 1.618 {
        return false;
    }
    let bucket_array = (size * 2 * std::mem::size_of::<usize>()) as u64;
    // This database's idle slots only (the others' are out of reach here): this counts
    // memory a little high, so at worst it holds the table back a little early.
    let idle = (d.main.idle_bytes() + d.expires.idle_bytes()) as u64;
    let used = crate::base::alloc::used_memory().saturating_sub(idle);
    if used + bucket_array <= maxmemory {
        return false;
    }
    d.main.set_resize_allowed(false);
    true
}

/// Lets a table held back by [`hold_growth`] resize again (shrinking included).
#[inline]
fn release_growth(d: &mut Db, held: bool) {
    if held {
        d.main.set_resize_allowed(d.resize_allowed);
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
    fn notes_expired_keymiss_new_and_evicted_in_order() {
        use crate::base::config::event_class::*;
        let mut ks = Keyspace::new(2);
        ks.add(1, b"k", Value::Int(1), Some(10), 0);
        assert!(!ks.notify.has_pending(), "nothing noted while off");
        ks.notify
            .configure(EXPIRED | EVICTED | KEY_MISS | NEW | KEYEVENT);
        assert!(ks.read(1, b"k", 11).is_none());
        ks.add(1, b"j", Value::Int(1), None, 11);
        assert!(ks.lookup(1, b"gone", 11, Access::Object).is_none());
        ks.dbs[1].remove(b"j");
        ks.note_evicted(1, b"j");
        let events: Vec<(usize, &[u8], &str)> = ks
            .notify
            .take()
            .iter()
            .map(|e| (e.db, e.key.as_slice().to_vec().leak() as &[u8], e.event))
            .collect();
        assert_eq!(
            events,
            [
                (1, &b"k"[..], "expired"),
                (1, &b"k"[..], "keymiss"),
                (1, &b"j"[..], "new"),
                (1, &b"j"[..], "evicted"),
            ]
        );
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

    #[test]
    fn take_and_put_move_ttl_and_header() {
        let mut ks = Keyspace::new(2);
        ks.add(0, b"a", Value::string(b"v"), Some(500), 3_000);
        ks.add(0, b"b", Value::Int(1), None, 0);
        let (name, obj, deadline) = ks.take(0, b"a").unwrap();
        assert_eq!(
            (name.as_slice(), deadline, obj.lru()),
            (&b"a"[..], Some(500), 3)
        );
        assert!(ks.dbs[0].expires.is_empty());
        ks.put(1, name, obj, deadline);
        assert_eq!(ks.expire_of(1, b"a"), Some(500));
        let (name, obj, deadline) = ks.take(0, b"b").unwrap();
        assert_eq!(deadline, None);
        ks.put(1, name, obj, Some(9));
        assert_eq!(ks.expire_of(1, b"b"), Some(9));
        assert!(ks.take(0, b"a").is_none());
        assert_eq!((ks.dbs[0].len(), ks.dbs[1].len()), (0, 2));
    }

    #[test]
    fn swap_and_flush() {
        let mut ks = Keyspace::new(3);
        ks.add(0, b"x", Value::Int(1), Some(100), 0);
        ks.add(2, b"y", Value::Int(2), None, 0);
        ks.dbs[0].avg_ttl = 7;
        ks.swap_dbs(0, 2, 0);
        assert_eq!(ks.expire_of(2, b"x"), Some(100));
        assert_eq!((ks.dbs[0].id, ks.dbs[2].id, ks.dbs[2].avg_ttl), (0, 2, 7));
        assert!(ks.exists(0, b"y", 0));
        ks.swap_dbs(1, 1, 0);
        assert_eq!(ks.flush_db(2, false), 1);
        assert!(ks.dbs[2].expires.is_empty() && ks.dbs[2].avg_ttl == 0);
        assert_eq!(ks.flush_all(true), 1);
        assert_eq!(ks.total_keys(), 0);
    }

    #[test]
    fn eviction_counts_and_frees_big_values_lazily() {
        let mut ks = Keyspace::new(1);
        ks.add(0, b"small", Value::Int(1), Some(10), 0);
        let mut big = embedis_datatypes::quicklist::Quicklist::default();
        for i in 0..100 {
            big.push_back(format!("{i}").as_bytes());
        }
        assert!(free_effort(&Value::List(big.clone())) > LAZYFREE_THRESHOLD);
        assert_eq!(free_effort(&Value::Int(1)), 1);
        ks.add(0, b"big", Value::List(big), None, 0);
        let dirty = ks.dirty;
        let meter = |_: &Keyspace| 0;
        assert!(ks.evicted(0, b"small", true, meter).is_some());
        assert!(ks.dbs[0].expires.is_empty(), "its TTL goes with it");
        assert!(ks.evicted(0, b"big", true, meter).is_some());
        assert!(ks.evicted(0, b"big", true, meter).is_none());
        assert_eq!((ks.stats.evicted_keys, ks.dirty), (2, dirty));
        assert!(ks.dbs[0].is_empty());
    }

    /// Over `maxmemory`, a key table full to one key per bucket does not double (the new bucket
    /// array would push memory further over) until it is more than 1.618 full; without a limit
    /// it doubles at once.
    #[test]
    fn key_tables_do_not_double_past_maxmemory() {
        let grow = |maxmemory: &str| {
            let mut config = crate::base::config::Config::default();
            config.set_many(&[("maxmemory", maxmemory)]).unwrap();
            let mut ks = Keyspace::new(1);
            ks.apply_config(&config);
            let mut sizes = Vec::new();
            for i in 0..40u32 {
                ks.add(0, &i.to_be_bytes(), Value::Int(1), None, 0);
                while ks.dbs[0].main.is_rehashing() {
                    ks.dbs[0].main.rehash(100);
                }
                sizes.push(ks.dbs[0].main.buckets());
            }
            sizes
        };
        let free = grow("0");
        // One byte of maxmemory: every process is over it.
        let held = grow("1");
        let first_growth =
            |sizes: &[usize], from: usize| sizes.iter().position(|&s| s > from).map(|i| i + 1);
        assert_eq!(first_growth(&free, 16), Some(17), "{free:?}");
        // 16 buckets: held at 17..=25 keys (25/16 < 1.618), grows at the 27th insertion.
        assert_eq!(first_growth(&held, 16), Some(27), "{held:?}");
        let mut ks = Keyspace::new(1);
        ks.apply_config(&crate::base::config::Config::default());
        assert!(!ks.limits);
    }

    #[test]
    fn random_key_skips_expired() {
        let mut ks = Keyspace::new(1);
        let mut rng = rand::rngs::mock::StepRng::new(0, 0x9E37_79B9_7F4A_7C15);
        assert!(ks.random_key(0, 0, &mut rng).is_none());
        for i in 0..10u8 {
            ks.add(0, &[i], Value::Int(1), Some(5), 0);
        }
        ks.add(0, b"live", Value::Int(1), None, 0);
        assert_eq!(ks.random_key(0, 6, &mut rng).unwrap().as_slice(), b"live");
        for _ in 0..50 {
            ks.random_key(0, 6, &mut rng);
        }
        ks.flush_db(0, false);
        ks.add(0, b"old", Value::Int(1), Some(5), 0);
        assert!(ks.random_key(0, 6, &mut rng).is_none());
        assert_eq!(ks.stats.expired_keys, ks.stats.expired_keys.max(1));
        assert!(ks.dbs[0].is_empty());
    }
}
