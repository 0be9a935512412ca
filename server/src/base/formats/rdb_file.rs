//! RDB files on disk: writing one atomically (a temporary file in the same directory, flushed,
//! fsynced, then renamed over the target and the directory fsynced, as Redis's `rdbSave` does, so
//! that a crash at any point leaves either the old file or the new one), and the thread that
//! writes a background snapshot.
//!
//! The background snapshot ([`crate::model::snapshot`]) walks the keyspace on the executor's thread,
//! where the data lives, and turns each key into an [`RdbItem`]; the encoding into bytes (string
//! compression, listpack blobs, the CRC64 over everything) and the file I/O happen here, on a
//! thread of their own, so that the executor's share of a BGSAVE is only copying each value out
//! once. The two talk over a channel whose length the walk watches ([`WriterThread::in_flight`]):
//! when the writer falls behind, the walk waits instead of copying the dataset into the queue.
//! This module knows nothing of the keyspace; it only lays out what it is given. What the thread
//! writes into is a [`SnapshotSink`]: an RDB file here, or an AOF base of commands
//! ([`crate::base::formats::aof_command_base`]), fed by the same walk.

use embedis_rdb::{EntryMeta, RdbError, RdbValue, RdbWriter, WriterOptions};

use crate::base::formats::rdb_child::{ChildFile, ChildFileKind};
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// One key as a snapshot writes it.
#[derive(Debug, Clone)]
pub struct SavedEntry {
    pub key: Vec<u8>,
    pub value: RdbValue,
    pub meta: EntryMeta,
}

/// What the snapshot hands the writer thread, in file order.
#[derive(Debug)]
pub enum RdbItem {
    /// SELECTDB and RESIZEDB (the database's sizes when the snapshot began).
    SelectDb { db: u64, keys: u64, expires: u64 },
    /// Keys in file order, sent a batch at a time: one hand-over (and at most one wake-up of
    /// the writer) per batch rather than per key.
    Entries(Vec<SavedEntry>),
    /// The walk is over: write EOF and the checksum, then sync and rename.
    Finish,
}

/// Where a save goes: the target path and the temporary file it is written to first.
#[derive(Debug, Clone)]
pub struct Target {
    pub path: PathBuf,
    pub temp: PathBuf,
}

impl Target {
    /// `dir/dbfilename`, written through `dir/temp-<tag>.rdb` (Redis names it after the pid of
    /// the process writing it; `tag` makes two servers in one process use different files).
    pub fn new(dir: &str, filename: &str, tag: &str) -> Target {
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(dir)
        };
        Target {
            path: dir.join(filename),
            temp: dir.join(format!("temp-{tag}.rdb")),
        }
    }
}

/// Why a save failed, with the step for the log (Redis's "Write error saving DB on disk(%s)").
#[derive(Debug)]
pub struct SaveError {
    pub step: &'static str,
    pub error: io::Error,
}

impl std::fmt::Display for SaveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.step, self.error)
    }
}

impl SaveError {
    /// An encoding or write error while laying the file out.
    pub fn rdb(e: RdbError) -> SaveError {
        SaveError {
            step: "rdbSaveRio",
            error: rdb_io(e),
        }
    }
}

fn rdb_io(e: RdbError) -> io::Error {
    match e {
        RdbError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    }
}

/// Opens the temporary file of `target` for a new RDB (header written).
pub fn create(
    target: &Target,
    opts: WriterOptions,
) -> Result<RdbWriter<BufWriter<File>>, SaveError> {
    let file = File::create(&target.temp).map_err(|error| SaveError {
        step: "open",
        error,
    })?;
    RdbWriter::new(BufWriter::with_capacity(1 << 16, file), opts).map_err(SaveError::rdb)
}

/// Ends the file `writer` holds and moves it over the target: EOF and checksum, then
/// [`finish_file`]. On failure the temporary file is removed.
pub fn commit(target: &Target, writer: RdbWriter<BufWriter<File>>) -> Result<u64, SaveError> {
    let buffered = or_discard(target, writer.finish().map_err(SaveError::rdb))?;
    finish_file(target, buffered)
}

/// `result`, with the temporary file of `target` removed if it is an error.
fn or_discard<T>(target: &Target, result: Result<T, SaveError>) -> Result<T, SaveError> {
    if result.is_err() {
        let _ = std::fs::remove_file(&target.temp);
    }
    result
}

/// Moves a written temporary file over the target: flush, fsync, rename, fsync of the
/// directory; returns the file's size. On failure the temporary file is removed.
pub fn finish_file(target: &Target, buffered: BufWriter<File>) -> Result<u64, SaveError> {
    let result = (|| {
        let file = buffered.into_inner().map_err(|e| SaveError {
            step: "fflush",
            error: e.into_error(),
        })?;
        file.sync_all().map_err(|error| SaveError {
            step: "fsync",
            error,
        })?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        drop(file);
        std::fs::rename(&target.temp, &target.path).map_err(|error| SaveError {
            step: "rename",
            error,
        })?;
        if let Some(dir) = target.path.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if let Ok(d) = File::open(dir) {
                d.sync_all().map_err(|error| SaveError {
                    step: "fsyncFileDir",
                    error,
                })?;
            }
        }
        Ok(size)
    })();
    or_discard(target, result)
}

/// What a keyspace is written into, section by section and key by key: an RDB stream (a file,
/// or the in-memory image a replica's full resync sends) or an AOF base of commands.
pub trait KeyspaceSink {
    /// A database's section begins (its key and TTL counts when the snapshot began).
    fn select_db(&mut self, db: u64, keys: u64, expires: u64) -> Result<(), SaveError>;
    /// One key.
    fn entry(&mut self, entry: &SavedEntry) -> Result<(), SaveError>;
}

impl<W: std::io::Write> KeyspaceSink for RdbWriter<W> {
    fn select_db(&mut self, db: u64, keys: u64, expires: u64) -> Result<(), SaveError> {
        RdbWriter::select_db(self, db, keys, expires).map_err(SaveError::rdb)
    }

    fn entry(&mut self, e: &SavedEntry) -> Result<(), SaveError> {
        RdbWriter::entry(self, &e.key, &e.value, e.meta).map_err(SaveError::rdb)
    }
}

/// What a snapshot is written into (an RDB file, or an AOF base of commands): the file's
/// sections and keys in order, then the commit that moves it over its target.
pub trait SnapshotSink: KeyspaceSink + Send + 'static {
    /// Ends the file and moves it over `target`; returns its size.
    fn commit(self, target: &Target) -> Result<u64, SaveError>
    where
        Self: Sized;

    /// Writes one item of a background snapshot.
    fn write_item(&mut self, item: &RdbItem) -> Result<(), SaveError> {
        match item {
            RdbItem::SelectDb { db, keys, expires } => self.select_db(*db, *keys, *expires),
            RdbItem::Entries(entries) => entries.iter().try_for_each(|e| self.entry(e)),
            RdbItem::Finish => Ok(()),
        }
    }
}

impl SnapshotSink for RdbWriter<BufWriter<File>> {
    fn commit(self, target: &Target) -> Result<u64, SaveError> {
        commit(target, self)
    }
}

/// Starts a save's child process (see [`crate::base::formats::rdb_child`]) writing into the
/// directory of `path`, the header written; the target's temporary file is the child's. With
/// the child's pid.
pub fn create_in_child(
    program: &Path,
    path: &Path,
    oom_score: Option<i32>,
    kind: ChildFileKind,
    opts: WriterOptions,
) -> Result<(Target, RdbWriter<BufWriter<ChildFile>>, u32), SaveError> {
    let (target, out, pid) = spawn_file_child(program, path, oom_score, kind)?;
    let writer = RdbWriter::new(out, opts).map_err(SaveError::rdb)?;
    Ok((target, writer, pid))
}

/// Starts the child that writes the file for `path` (of either format): its temporary file,
/// the buffered pipe to it, and its pid.
pub fn spawn_file_child(
    program: &Path,
    path: &Path,
    oom_score: Option<i32>,
    kind: ChildFileKind,
) -> Result<(Target, BufWriter<ChildFile>, u32), SaveError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let child = ChildFile::spawn(program, dir, oom_score, kind).map_err(|error| SaveError {
        step: "fork",
        error,
    })?;
    let target = Target {
        path: path.to_path_buf(),
        temp: child.temp.clone(),
    };
    let pid = child.pid();
    Ok((target, BufWriter::with_capacity(1 << 16, child), pid))
}

impl SnapshotSink for RdbWriter<BufWriter<ChildFile>> {
    /// EOF and checksum down the pipe, the child's sync and exit, then the rename.
    fn commit(self, target: &Target) -> Result<u64, SaveError> {
        let buffered = or_discard(target, self.finish().map_err(SaveError::rdb))?;
        finish_child_file(target, buffered)
    }
}

/// The end of a file written through its child: the last bytes down the pipe, the child's sync
/// and exit, then the rename over `target`; returns the file's size. A failure removes the
/// temporary file.
pub fn finish_child_file(
    target: &Target,
    buffered: BufWriter<ChildFile>,
) -> Result<u64, SaveError> {
    let result = (|| {
        let child = buffered.into_inner().map_err(|e| SaveError {
            step: "fflush",
            error: e.into_error(),
        })?;
        child.finish().map_err(|error| SaveError {
            step: "child",
            error,
        })?;
        let size = std::fs::metadata(&target.temp)
            .map(|m| m.len())
            .unwrap_or(0);
        std::fs::rename(&target.temp, &target.path).map_err(|error| SaveError {
            step: "rename",
            error,
        })?;
        Ok(size)
    })();
    or_discard(target, result)
}

/// The thread writing a background snapshot.
pub struct WriterThread {
    tx: Option<mpsc::Sender<RdbItem>>,
    /// Batches the thread has written, handed back with their entries for the walk to refill:
    /// a walk of small keys then allocates nothing per key, and the thread frees nothing (with
    /// the system allocator, a key's two allocations here and two frees there cost more than
    /// the walk itself).
    spent: mpsc::Receiver<Vec<SavedEntry>>,
    /// Items sent and not yet written.
    in_flight: Arc<AtomicUsize>,
    /// Signalled by the thread when its queue runs low ([`LOW_WATER`] items) and when it ends:
    /// a walk waiting for room resumes then rather than after a timer (on one core a 1 ms
    /// sleep left both threads idle once the writer had caught up).
    progress: Arc<tokio::sync::Notify>,
    /// Set to make the thread stop and remove its temporary file.
    cancelled: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<u64, SaveError>>>,
    /// `rdb-key-save-delay` slows each key down (see [`WriterThread::paced`]).
    paced: bool,
}

/// Queue length at or under which the writer thread wakes a waiting walk.
const LOW_WATER: usize = 8;

impl WriterThread {
    /// Starts the thread on an already opened file (header, AUX fields and functions written by
    /// the caller). `key_delay_us` is `rdb-key-save-delay`: a pause after each key, which Redis's
    /// tests use to keep a save running.
    pub fn spawn<S: SnapshotSink>(
        target: Target,
        writer: S,
        key_delay_us: i64,
    ) -> io::Result<WriterThread> {
        let (tx, rx) = mpsc::channel::<RdbItem>();
        let (spent_tx, spent) = mpsc::channel::<Vec<SavedEntry>>();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let cancelled = Arc::new(AtomicBool::new(false));
        let (count, stop) = (in_flight.clone(), cancelled.clone());
        let progress = Arc::new(tokio::sync::Notify::new());
        let signal = progress.clone();
        let handle = std::thread::Builder::new()
            .name("embedis-bgsave".into())
            .spawn(move || {
                let result = Self::run(
                    target,
                    writer,
                    key_delay_us,
                    rx,
                    spent_tx,
                    &count,
                    &stop,
                    &signal,
                );
                signal.notify_one();
                result
            })?;
        Ok(WriterThread {
            tx: Some(tx),
            spent,
            in_flight,
            progress,
            cancelled,
            handle: Some(handle),
            paced: key_delay_us != 0,
        })
    }

    /// True when `rdb-key-save-delay` paces the thread: the walk then keeps only a batch
    /// ahead of it, as a Redis child reaches a key only when it writes it, so that keys
    /// written meanwhile are still unsaved and keep pre-images (the copy-on-write tests watch).
    pub fn paced(&self) -> bool {
        self.paced
    }

    /// The thread's loop: writes items in order until Finish (commit), an error or a cancel.
    #[allow(clippy::too_many_arguments)]
    fn run<S: SnapshotSink>(
        target: Target,
        mut writer: S,
        key_delay_us: i64,
        rx: mpsc::Receiver<RdbItem>,
        spent_tx: mpsc::Sender<Vec<SavedEntry>>,
        count: &AtomicUsize,
        stop: &AtomicBool,
        progress: &tokio::sync::Notify,
    ) -> Result<u64, SaveError> {
        let fail = |e: SaveError| {
            let _ = std::fs::remove_file(&target.temp);
            Err(e)
        };
        for item in rx {
            count.fetch_sub(1, Ordering::AcqRel);
            if stop.load(Ordering::Acquire) {
                break;
            }
            if let RdbItem::Finish = item {
                return writer.commit(&target);
            }
            if key_delay_us > 0 {
                if let RdbItem::Entries(entries) = &item {
                    // rdb-key-save-delay: the pause after each key, as Redis's child.
                    for e in entries {
                        if let Err(err) = writer.entry(e) {
                            return fail(err);
                        }
                        if !pause_unless_stopped(key_delay_us as u64, stop) {
                            break;
                        }
                    }
                    continue;
                }
            }
            if let Err(e) = writer.write_item(&item) {
                return fail(e);
            }
            if let RdbItem::Entries(entries) = item {
                // The walk may have ended; then the batch is simply dropped here.
                let _ = spent_tx.send(entries);
            }
            if count.load(Ordering::Acquire) <= LOW_WATER {
                progress.notify_one();
            }
        }
        drop(writer);
        fail(SaveError {
            step: "cancelled",
            error: io::Error::other("background save cancelled"),
        })
    }

    /// Queues an item (never blocks).
    pub fn send(&self, item: RdbItem) {
        if let Some(tx) = &self.tx {
            self.in_flight.fetch_add(1, Ordering::AcqRel);
            if tx.send(item).is_err() {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// A batch the thread has written, if one is waiting: its entries are for reuse.
    pub fn take_spent(&self) -> Option<Vec<SavedEntry>> {
        self.spent.try_recv().ok()
    }

    /// Signalled when the thread's queue runs low and when it ends (see `progress`).
    pub fn progress(&self) -> Arc<tokio::sync::Notify> {
        self.progress.clone()
    }

    /// Items queued and not written yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// True once the thread has ended (committed, failed or cancelled).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }

    /// The thread's outcome; waits for it if it is still running.
    pub fn join(mut self) -> Result<u64, SaveError> {
        self.tx = None;
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(result)) => result,
            _ => Err(SaveError {
                step: "thread",
                error: io::Error::other("background save thread failed"),
            }),
        }
    }

    /// Stops the thread and waits for it; it removes its temporary file (see the `Drop`).
    pub fn cancel(self) {
        drop(self);
    }
}

/// `rdb-key-save-delay`'s pause after a key, cut short when the save is cancelled (a delay of
/// seconds per key must not hold a cancel — the engine waits for it — that long). False if
/// the save was cancelled.
fn pause_unless_stopped(delay_us: u64, stop: &AtomicBool) -> bool {
    let mut left = Duration::from_micros(delay_us);
    let slice = Duration::from_millis(10);
    while !left.is_zero() {
        if stop.load(Ordering::Acquire) {
            return false;
        }
        let step = left.min(slice);
        std::thread::sleep(step);
        left -= step;
    }
    !stop.load(Ordering::Acquire)
}

impl Drop for WriterThread {
    /// A save abandoned (killed, or its start failed half way) waits for its thread, which
    /// removes the temporary file: a removal left to run later could take the file of the next
    /// save of the same name (a rewrite retried at once after a full disk lost its base so).
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Release);
        self.tx = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}
