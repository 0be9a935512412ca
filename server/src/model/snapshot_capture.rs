//! What one database keeps of a running point-in-time snapshot (its mark parity and the
//! pre-images captured for it, [`DbSnapshot`]) and how one key is copied out as a file holds it
//! ([`saved_entry`]). The keyspace embeds a [`DbSnapshot`] in every database and captures
//! pre-images on its write paths, while the walk in [`crate::model::snapshot`] works over the
//! keyspace; this module sits below both so that neither needs the other's file to exist.

use crate::base::formats::rdb_file::SavedEntry;
use crate::base::value::{lru_clock, AccessClock, Object, Value};
use embedis_datatypes::dict::Dict;
use embedis_datatypes::SmallBytes;
use embedis_rdb::{EntryMeta, RdbValue};

/// How entries carry the access clock: Redis writes the LRU idle time under an LRU policy and
/// the LFU counter under an LFU policy, and nothing otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockInFile {
    #[default]
    Nothing,
    /// Idle seconds, measured at this time (ms).
    Idle { now_ms: i64 },
    /// The LFU counter as of this time (ms), decayed by the policy.
    Freq { now_ms: i64, clock: AccessClock },
}

impl ClockInFile {
    /// What the configuration asks for.
    pub fn for_config(
        config: &crate::base::config::Config,
        clock: AccessClock,
        now_ms: i64,
    ) -> Self {
        let policy = config.maxmemory_policy.name();
        if policy.contains("lfu") {
            ClockInFile::Freq { now_ms, clock }
        } else if policy.contains("lru") {
            ClockInFile::Idle { now_ms }
        } else {
            ClockInFile::Nothing
        }
    }
}

/// The snapshot state of one database.
#[derive(Debug, Default)]
pub struct DbSnapshot {
    /// The parity that marks an object as written (or born after the snapshot began).
    pub mark: bool,
    /// While a snapshot still has this database to write: the pre-images waiting for it.
    pub capture: Option<Box<Capture>>,
    /// Bytes of the pre-images this database has kept since the snapshot began: embedis's
    /// counterpart of the copy-on-write a Redis child reports (INFO's `current_cow_size`),
    /// the memory the save costs because clients wrote during it.
    pub copied: u64,
}

/// What a kept pre-image costs: its key and its value's buffers.
pub fn preimage_bytes(entry: &SavedEntry) -> u64 {
    (entry.key.len() + entry.value.payload_bytes()) as u64
}

/// Pre-images of one database, waiting for the walk to reach it.
#[derive(Debug, Default)]
pub struct Capture {
    pub preimages: Vec<SavedEntry>,
    pub clock: ClockInFile,
}

/// One key as a file holds it.
pub fn saved_entry(
    key: &[u8],
    obj: &Object,
    expire_ms: Option<i64>,
    clock: ClockInFile,
) -> SavedEntry {
    SavedEntry {
        key: key.to_vec(),
        value: crate::base::formats::rdb_convert::to_rdb(&obj.value),
        meta: entry_meta(obj, expire_ms, clock),
    }
}

/// A key's TTL as a file holds it: the expiry table is read only for objects flagged as having
/// one (most have none, and the lookup is a second hash probe).
pub(crate) fn expire_of(expires: &Dict<SmallBytes, i64>, key: &[u8], obj: &Object) -> Option<i64> {
    if obj.has_expire() {
        expires.get(key).copied()
    } else {
        None
    }
}

/// The TTL and LRU/LFU information written before a key.
fn entry_meta(obj: &Object, expire_ms: Option<i64>, clock: ClockInFile) -> EntryMeta {
    let mut meta = EntryMeta {
        expire_ms,
        ..Default::default()
    };
    match clock {
        ClockInFile::Nothing => {}
        ClockInFile::Idle { now_ms } => meta.idle = Some(obj.idle_ms(lru_clock(now_ms)) / 1000),
        ClockInFile::Freq { now_ms, clock } => meta.freq = Some(clock.freq(obj, now_ms)),
    }
    meta
}

/// [`saved_entry`] into an entry already written, keeping its buffers: the key's, and a string
/// value's when the new value is a string too (the common case of a walk).
pub fn refill_entry(
    entry: &mut SavedEntry,
    key: &[u8],
    obj: &Object,
    expire_ms: Option<i64>,
    clock: ClockInFile,
) {
    entry.key.clear();
    entry.key.extend_from_slice(key);
    entry.meta = entry_meta(obj, expire_ms, clock);
    match (&mut entry.value, &obj.value) {
        (RdbValue::String(buf), Value::Int(n)) => {
            buf.clear();
            buf.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes());
        }
        (RdbValue::String(buf), value @ (Value::Str(_) | Value::Raw(_) | Value::Hll(_))) => {
            buf.clear();
            buf.extend_from_slice(&value.string_bytes().expect("a string value"));
        }
        (_, value) => entry.value = crate::base::formats::rdb_convert::to_rdb(value),
    }
}
