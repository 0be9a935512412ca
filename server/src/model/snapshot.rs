//! Point-in-time snapshots of the keyspace without fork: what BGSAVE writes while clients keep
//! writing.
//!
//! Redis forks and lets the kernel's copy-on-write keep the child's view frozen. embedis also runs
//! inside test processes, where fork with live threads is unsafe, so it keeps the point in time
//! itself, in the spirit of Dragonfly's versioned snapshots: every object header carries one
//! *snapshot mark* bit, and each database a parity
//! ([`DbSnapshot::mark`](crate::model::snapshot_capture::DbSnapshot::mark)). Outside a snapshot
//! every object's mark equals its database's parity. Starting a snapshot flips the parity of every
//! database — O(databases), not O(keys) — which makes every existing object *unwritten*; objects
//! created afterwards are born with the new parity (they did not exist at the snapshot's point in
//! time). The walk ([`SnapshotWalk`]) then visits each database with the SCAN cursor, writes every
//! unwritten object it meets and flips its mark. A write to an unwritten object first writes the
//! object as it was (its *pre-image*: [`Db::before_change`](crate::model::keyspace::Db::before_change),
//! called by the keyspace's write paths and `Db::remove`), so the walk, arriving later, finds it
//! marked and skips it. SCAN may visit a key twice across a resize; the mark makes that harmless.
//! When the walk ends, every object has the new parity again, and the invariant holds.
//!
//! Pre-images wait in their database's [`Capture`] until the walk writes that database's section
//! (an RDB file groups keys by SELECTDB); a database the walk has finished drops its capture, so
//! writes there cost one branch again. Whole-database operations are handled by their callers:
//! SWAPDB and FLUSHDB first capture every unwritten object of the databases involved
//! ([`capture_all`](crate::model::keyspace::capture_all)); FLUSHALL aborts the snapshot, as Redis kills its saving child.
//!
//! Copying a value out ([`crate::base::formats::rdb_convert::to_rdb`]) is the only work on the executor's thread;
//! the bytes are laid out and written by [`crate::base::formats::rdb_file::WriterThread`].

use crate::base::formats::rdb_file::{KeyspaceSink, RdbItem, SaveError, SavedEntry, WriterThread};
use crate::model::keyspace::Keyspace;
pub use crate::model::snapshot_capture::ClockInFile;
use crate::model::snapshot_capture::{expire_of, refill_entry, saved_entry, Capture};
use std::time::{Duration, Instant};

/// A background snapshot walking the keyspace (see the module documentation).
pub struct SnapshotWalk {
    writer: WriterThread,
    /// Each database's key and TTL counts when the snapshot began (RESIZEDB).
    sizes: Vec<(u64, u64)>,
    db: usize,
    cursor: u64,
    /// SELECTDB has been sent for `db`.
    in_section: bool,
    /// Every item, Finish included, has been sent.
    walked: bool,
    /// Keys handed to the writer so far, and the keys the snapshot holds (INFO's
    /// `current_save_keys_processed` / `_total`).
    written: u64,
    total: u64,
    /// Entries waiting to be handed over as one batch.
    batch: Vec<SavedEntry>,
    /// Written entries back from the writer, refilled by [`refill_entry`] rather than allocated.
    spare: Vec<SavedEntry>,
    /// Entries refilled so far (tests check that the reuse path is taken).
    pub reused: u64,
}

/// Entries handed to the writer at a time.
const BATCH: usize = 256;
/// Hash-table buckets the walk takes per call into the table ([`scan_mut_batch`](embedis_datatypes::dict::Dict::scan_mut_batch) warms a
/// batch's buckets before visiting them; a call per bucket spent its time in cache misses).
const BUCKETS_PER_CALL: usize = 64;

/// Batches the walk lets the writer fall behind by before it waits.
const MAX_IN_FLIGHT: usize = 32;

impl SnapshotWalk {
    /// Begins a snapshot of `ks` now: flips every database's parity and opens its capture.
    pub fn begin(ks: &mut Keyspace, writer: WriterThread, clock: ClockInFile) -> SnapshotWalk {
        let mut sizes = Vec::with_capacity(ks.dbs.len());
        for db in ks.dbs.iter_mut() {
            sizes.push((db.main.len() as u64, db.expires.len() as u64));
            db.snapshot.mark = !db.snapshot.mark;
            db.snapshot.copied = 0;
            db.snapshot.capture = (!db.main.is_empty()).then(|| {
                Box::new(Capture {
                    preimages: Vec::new(),
                    clock,
                })
            });
        }
        let sizes_total = sizes.iter().map(|(keys, _)| keys).sum();
        SnapshotWalk {
            writer,
            sizes,
            db: 0,
            cursor: 0,
            in_section: false,
            walked: false,
            written: 0,
            total: sizes_total,
            batch: Vec::with_capacity(BATCH),
            spare: Vec::new(),
            reused: 0,
        }
    }

    /// Keys written so far and keys in the snapshot.
    pub fn progress(&self) -> (u64, u64) {
        (self.written, self.total)
    }

    /// Bytes of pre-images kept since the snapshot began, across databases (see
    /// [`DbSnapshot::copied`](crate::model::snapshot_capture::DbSnapshot::copied)).
    pub fn copied_bytes(ks: &Keyspace) -> u64 {
        ks.dbs.iter().map(|db| db.snapshot.copied).sum()
    }

    /// Walks on for about `budget` unless waiting for the writer; true once the walk is over
    /// and the writer has ended (committed or failed).
    pub fn advance(&mut self, ks: &mut Keyspace, budget: Duration) -> bool {
        if !self.walked {
            self.step(ks, budget);
        }
        self.walked && self.writer.is_finished()
    }

    /// True while stepping would do nothing: the walk is over, or the writer is behind.
    pub fn waiting(&self) -> bool {
        self.walked || !self.writer_has_room()
    }

    /// Signalled when the writer has room again or has ended (what a waiting walk waits for).
    pub fn writer_signal(&self) -> std::sync::Arc<tokio::sync::Notify> {
        self.writer.progress()
    }

    /// True once the walk has handed everything to the writer.
    pub fn walked(&self) -> bool {
        self.walked
    }

    /// True while the writer has room for more.
    fn writer_has_room(&self) -> bool {
        let limit = if self.writer.paced() {
            1
        } else {
            MAX_IN_FLIGHT
        };
        self.writer.in_flight() < limit
    }

    /// The writer thread (to wait for it once the walk is over).
    pub fn into_writer(self) -> WriterThread {
        self.writer
    }

    /// Walks on for about `budget` (or until the writer is `MAX_IN_FLIGHT` behind). Returns true
    /// when the walk is over.
    pub fn step(&mut self, ks: &mut Keyspace, budget: Duration) -> bool {
        let started = Instant::now();
        let mut visited = 0usize;
        while !self.walked {
            if self.db >= ks.dbs.len() {
                self.flush_batch();
                self.writer.send(RdbItem::Finish);
                self.walked = true;
                break;
            }
            if visited >= 64 {
                visited = 0;
                if started.elapsed() >= budget || !self.writer_has_room() {
                    break;
                }
            }
            let db = &mut ks.dbs[self.db];
            let Some(capture) = db.snapshot.capture.as_mut() else {
                self.next_db();
                continue;
            };
            if !self.in_section {
                let (keys, expires) = self.sizes.get(self.db).copied().unwrap_or_default();
                self.flush_batch();
                self.writer.send(RdbItem::SelectDb {
                    db: self.db as u64,
                    keys,
                    expires,
                });
                self.in_section = true;
            }
            self.written += capture.preimages.len() as u64;
            self.batch.append(&mut capture.preimages);
            let (mark, clock) = (db.snapshot.mark, capture.clock);
            let expires = &db.expires;
            let batch = &mut self.batch;
            let written = &mut self.written;
            if self.spare.is_empty() {
                if let Some(spent) = self.writer.take_spent() {
                    self.spare = spent;
                }
            }
            let spare = &mut self.spare;
            let reused = &mut self.reused;
            self.cursor = db
                .main
                .scan_mut_batch(self.cursor, BUCKETS_PER_CALL, |key, obj| {
                    visited += 1;
                    if obj.snapshot_mark() != mark {
                        obj.set_snapshot_mark(mark);
                        *written += 1;
                        let expire = expire_of(expires, key, obj);
                        batch.push(match spare.pop() {
                            Some(mut entry) => {
                                *reused += 1;
                                refill_entry(&mut entry, key, obj, expire, clock);
                                entry
                            }
                            None => saved_entry(key, obj, expire, clock),
                        });
                    }
                });
            visited += 1;
            if self.batch.len() >= BATCH {
                self.flush_batch();
            }
            if self.cursor == 0 {
                if let Some(mut capture) = db.snapshot.capture.take() {
                    self.written += capture.preimages.len() as u64;
                    self.batch.append(&mut capture.preimages);
                }
                self.next_db();
            }
        }
        self.walked
    }

    /// Hands the waiting entries to the writer.
    fn flush_batch(&mut self) {
        if !self.batch.is_empty() {
            let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            self.writer.send(RdbItem::Entries(batch));
        }
    }

    fn next_db(&mut self) {
        self.db += 1;
        self.cursor = 0;
        self.in_section = false;
    }

    /// Abandons the snapshot: restores the invariant (every object carries its database's
    /// parity) and stops the writer, which removes its temporary file.
    pub fn abort(self, ks: &mut Keyspace) {
        for db in ks.dbs.iter_mut() {
            if db.snapshot.capture.take().is_some() {
                let mark = db.snapshot.mark;
                db.main.for_each_mut(|_, obj| obj.set_snapshot_mark(mark));
            }
        }
        self.writer.cancel();
    }
}

/// Writes the whole keyspace to `writer` now (SAVE, SHUTDOWN, DEBUG RELOAD, the base of a new
/// AOF): databases in order, empty ones skipped, as Redis's `rdbSaveRio`.
pub fn write_keyspace<S: KeyspaceSink>(
    ks: &Keyspace,
    writer: &mut S,
    clock: ClockInFile,
) -> Result<(), SaveError> {
    for (index, db) in ks.dbs.iter().enumerate() {
        if db.main.is_empty() {
            continue;
        }
        writer.select_db(index as u64, db.main.len() as u64, db.expires.len() as u64)?;
        for (key, obj) in db.main.iter() {
            let expire = expire_of(&db.expires, key, obj);
            writer.entry(&saved_entry(key, obj, expire, clock))?;
        }
    }
    Ok(())
}

/// A background save in progress.
pub struct BgSave {
    pub walk: SnapshotWalk,
    pub started: Instant,
    /// `dirty` when it began: what remains after it is the changes since this snapshot.
    pub dirty_before: u64,
    /// The child process writing the file, in the binary (see `rdb_child`).
    pub child: Option<u32>,
}

/// What the server knows about its saves (INFO persistence, LASTSAVE, `-MISCONF`).
pub struct SaveState {
    pub bgsave: Option<BgSave>,
    /// The last background (or SHUTDOWN/SAVE) save succeeded (`rdb_last_bgsave_status`).
    pub last_bgsave_ok: bool,
    /// How the last background save ended, until replication takes it: true if its file is
    /// complete (a killed save is not, whatever `last_bgsave_ok` keeps).
    pub last_ended: Option<bool>,
    /// Seconds the last background save took (-1: none yet).
    pub last_bgsave_time_sec: i64,
    /// Bytes of pre-images the last successful background save kept (`rdb_last_cow_size`).
    pub last_cow_size: u64,
    /// Saves started, background or not (`rdb_saves`).
    pub saves: u64,
    /// Background snapshots begun, BGSAVE's and the AOF rewrite's: what Redis forks for them
    /// (INFO `total_forks`).
    pub forks: u64,
    /// When the last background save was tried (s): a failed one is retried after 5 s.
    pub last_bgsave_try: i64,
    /// BGSAVE SCHEDULE (or BGSAVE inside MULTI) is waiting for its turn.
    pub scheduled: bool,
    /// Keys the last load added and skipped as expired.
    pub last_load_keys_loaded: u64,
    pub last_load_keys_expired: u64,
    /// A file is being loaded (INFO `loading`; commands without the `loading` flag are refused
    /// with `-LOADING`), its size, how much is read, and when it began (s).
    pub loading: bool,
    /// A replica's `swapdb` full sync of the history it already had: the old data is served
    /// meanwhile, and only commands flagged `no_async_loading` get `-LOADING`.
    pub async_loading: bool,
    pub loading_total_bytes: u64,
    pub loading_loaded_bytes: u64,
    pub loading_started_s: i64,
    /// SHUTDOWN has done the shutdown's save (or decided against it): stopping must not again.
    pub shutdown_handled: bool,
    /// Distinguishes this server's temporary files from another's in the same process.
    pub temp_tag: String,
}

impl Default for SaveState {
    fn default() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let pid = std::process::id();
        SaveState {
            bgsave: None,
            last_bgsave_ok: true,
            last_ended: None,
            last_bgsave_time_sec: -1,
            last_cow_size: 0,
            saves: 0,
            forks: 0,
            last_bgsave_try: 0,
            scheduled: false,
            last_load_keys_loaded: 0,
            last_load_keys_expired: 0,
            loading: false,
            async_loading: false,
            loading_total_bytes: 0,
            loading_loaded_bytes: 0,
            loading_started_s: 0,
            shutdown_handled: false,
            temp_tag: if n == 0 {
                pid.to_string()
            } else {
                format!("{pid}-{n}")
            },
        }
    }
}
