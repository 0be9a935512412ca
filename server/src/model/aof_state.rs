//! The append-only file's state: Redis 7.0's multi-part layout and the file being appended to.
//!
//! An AOF is a directory (`appenddirname`) holding a *manifest* (`appendonly.aof.manifest`) that
//! lists, in order, one *base* file — a snapshot, RDB-encoded (`appendonly.aof.N.base.rdb`) or,
//! under `aof-use-rdb-preamble no`, as commands (`appendonly.aof.N.base.aof`) — and
//! the *incremental* files (`appendonly.aof.M.incr.aof`) of commands written since, in the RESP
//! form of the write stream ([`crate::model::write_stream`]); *history* files are those a rewrite has
//! replaced, deleted once the new manifest is on disk. A rewrite writes a new base and starts a
//! new incremental file at the same point in time, so that base + increments always describe the
//! dataset. The manifest's format (`file <name> seq <n> type <b|h|i>` per line) is Redis's, so
//! either server reads the other's directory.
//!
//! This module holds the data and the file operations (append, fsync in the background once a
//! second under `appendfsync everysec`); [`crate::services::aof`] decides when, loads, and rewrites.

use crate::base::disk_faults::{DiskFaults, DiskOp};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One file the manifest lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AofFile {
    pub name: String,
    pub seq: i64,
    /// `b` base, `h` history, `i` incremental.
    pub kind: u8,
}

/// The manifest (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<AofFile>,
    pub history: Vec<AofFile>,
    pub incr: Vec<AofFile>,
    pub base_seq: i64,
    pub incr_seq: i64,
}

/// Redis reads a manifest with `fgets` into a buffer of [`MANIFEST_MAX_LINE`] bytes: each piece
/// ends after a newline or when the buffer is full, so a longer line arrives in pieces, the
/// first without its newline (refused as too long), as does a last line without one.
const MANIFEST_MAX_LINE: usize = 1024;

fn manifest_lines(text: &str) -> impl Iterator<Item = &[u8]> {
    let mut rest = text.as_bytes();
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let window = &rest[..rest.len().min(MANIFEST_MAX_LINE)];
        let end = window
            .iter()
            .position(|&b| b == b'\n')
            .map_or(window.len(), |at| at + 1);
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

impl Manifest {
    /// Parses a manifest's text with Redis's checks; the error is Redis's message for it.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut m = Manifest::default();
        let mut lines = 0;
        let mut max_seq = 0;
        for raw in manifest_lines(text) {
            lines += 1;
            if raw.starts_with(b"#") {
                continue;
            }
            if !raw.ends_with(b"\n") {
                return Err("The AOF manifest file contains too long line".into());
            }
            let raw = std::str::from_utf8(raw).map_err(|_| "Invalid AOF manifest file format")?;
            let line = raw.trim_matches([' ', '\t', '\r', '\n']);
            if line.is_empty() {
                return Err("Invalid AOF manifest file format".into());
            }
            let words = embedis_protocol::inline::split_args(line.as_bytes())
                .map_err(|_| "Invalid AOF manifest file format".to_string())?;
            if words.len() < 6 || words.len() % 2 != 0 {
                return Err("Invalid AOF manifest file format".into());
            }
            let (mut name, mut seq, mut kind) = (None, 0i64, 0u8);
            for pair in words.chunks(2) {
                let key = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
                match key.as_str() {
                    "file" => {
                        let n = String::from_utf8_lossy(&pair[1]).into_owned();
                        if n.contains('/') {
                            return Err("File can't be a path, just a filename".into());
                        }
                        name = Some(n);
                    }
                    "seq" => {
                        seq = embedis_protocol::number::parse_i64(&pair[1]).unwrap_or(0);
                    }
                    "type" => kind = pair[1].first().copied().unwrap_or(0),
                    _ => {}
                }
            }
            let Some(name) = name.filter(|_| seq != 0 && kind != 0) else {
                return Err("Invalid AOF manifest file format".into());
            };
            let file = AofFile { name, seq, kind };
            match kind {
                b'b' => {
                    if m.base.is_some() {
                        return Err("Found duplicate base file information".into());
                    }
                    m.base_seq = seq;
                    m.base = Some(file);
                }
                b'h' => m.history.push(file),
                b'i' => {
                    if seq <= max_seq {
                        return Err("Found a non-monotonic sequence number".into());
                    }
                    max_seq = seq;
                    m.incr_seq = seq;
                    m.incr.push(file);
                }
                _ => return Err("Unknown AOF file type".into()),
            }
        }
        if lines == 0 {
            return Err("Found an empty AOF manifest".into());
        }
        Ok(m)
    }

    /// The manifest's text: base, history, then incremental files.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let files = self.base.iter().chain(&self.history).chain(&self.incr);
        for f in files {
            let mut repr = Vec::new();
            let name = if f
                .name
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
            {
                f.name.clone()
            } else {
                crate::base::cstr::push_repr(&mut repr, f.name.as_bytes());
                String::from_utf8_lossy(&repr).into_owned()
            };
            out.push_str(&format!(
                "file {name} seq {} type {}\n",
                f.seq, f.kind as char
            ));
        }
        out
    }

    /// Starts a new base file (the old one becomes history); returns its name, which ends in
    /// `.base.rdb` for an RDB base and `.base.aof` for one of commands.
    pub fn new_base(&mut self, filename: &str, rdb: bool) -> String {
        if let Some(mut old) = self.base.take() {
            old.kind = b'h';
            self.history.insert(0, old);
        }
        self.base_seq += 1;
        let format = if rdb { "rdb" } else { "aof" };
        let name = format!("{filename}.{}.base.{format}", self.base_seq);
        self.base = Some(AofFile {
            name: name.clone(),
            seq: self.base_seq,
            kind: b'b',
        });
        name
    }

    /// Starts a new incremental file; returns its name.
    pub fn new_incr(&mut self, filename: &str) -> String {
        self.incr_seq += 1;
        let name = format!("{filename}.{}.incr.aof", self.incr_seq);
        self.incr.push(AofFile {
            name: name.clone(),
            seq: self.incr_seq,
            kind: b'i',
        });
        name
    }

    /// After a rewrite: every incremental file is history but, while the AOF is on
    /// (`appending`), the last one, which is being appended to (Redis's
    /// `markRewrittenIncrAofAsHistory`).
    pub fn retire_rewritten_incr(&mut self, appending: bool) {
        // Redis walks them from the newest, putting each at the head of the history list.
        let keep = if appending { self.incr.pop() } else { None };
        while let Some(mut f) = self.incr.pop() {
            f.kind = b'h';
            self.history.insert(0, f);
        }
        self.incr.extend(keep);
    }
}

/// Whether the AOF is on (Redis's `aof_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AofStatus {
    #[default]
    Off,
    On,
    /// `CONFIG SET appendonly yes`: writes are recorded from now on, but the AOF counts only
    /// once its first rewrite (the base) is done.
    WaitRewrite,
}

/// The file being appended to, shared with the once-a-second fsync thread.
#[derive(Debug)]
pub struct Appender {
    file: Arc<Mutex<AppendFile>>,
    /// Bytes written and not yet fsynced (for `everysec`); left set when an fsync fails, so
    /// that the thread tries again a second later.
    unsynced: Arc<AtomicBool>,
    /// Set when the thread must stop.
    stop: Arc<AtomicBool>,
    /// The errno of the thread's last fsync if it failed, else 0 (Redis's
    /// `aof_bio_fsync_status` and `aof_bio_fsync_errno`): writes are refused with `-MISCONF`
    /// while it is set.
    pub fsync_errno: Arc<AtomicI32>,
    faults: DiskFaults,
}

/// The open file and its length: what a short write is cut back to.
#[derive(Debug)]
struct AppendFile {
    file: File,
    len: u64,
}

/// Why an append failed.
#[derive(Debug)]
pub enum AppendError {
    /// The write failed after `short` of its bytes reached the file; `left` of them are still
    /// there (0 once the file was cut back to its length before the write; `undo` says why
    /// that failed otherwise).
    Write {
        error: io::Error,
        short: usize,
        left: usize,
        undo: Option<io::Error>,
    },
    /// The bytes are written, the fsync `appendfsync always` asked for failed.
    Fsync(io::Error),
}

impl Appender {
    /// Opens `path` for appending (created if missing; emptied first with `fresh`, for a new
    /// incremental file) and starts its fsync thread. `faults` are the disk faults tests set.
    pub fn open(path: &Path, fresh: bool, faults: &DiskFaults) -> io::Result<Appender> {
        if fresh {
            File::create(path)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let len = file.metadata()?.len();
        let appender = Appender {
            file: Arc::new(Mutex::new(AppendFile { file, len })),
            unsynced: Arc::new(AtomicBool::new(false)),
            stop: Arc::new(AtomicBool::new(false)),
            fsync_errno: Arc::new(AtomicI32::new(0)),
            faults: faults.clone(),
        };
        let thread = FsyncThread {
            file: appender.file.clone(),
            unsynced: appender.unsynced.clone(),
            stop: appender.stop.clone(),
            errno: appender.fsync_errno.clone(),
            faults: faults.clone(),
        };
        std::thread::Builder::new()
            .name("embedis-aof-fsync".into())
            .spawn(move || thread.run())?;
        Ok(appender)
    }

    /// Appends `bytes`; with `fsync`, also waits for them to reach the disk (`always`),
    /// otherwise leaves that to the thread (`everysec`, when `background`) or the OS (`no`).
    /// A write that fails part way is cut back out of the file, as Redis's
    /// `flushAppendOnlyFile` truncates a short write, so that no half command is left in it.
    pub fn append(&self, bytes: &[u8], fsync: bool, background: bool) -> Result<(), AppendError> {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let f = &mut *guard;
        if let Err((error, short)) = write_counting(&mut f.file, bytes, &self.faults) {
            let undo = if short > 0 {
                f.file.set_len(f.len).err()
            } else {
                None
            };
            let left = if undo.is_some() { short } else { 0 };
            f.len += left as u64;
            return Err(AppendError::Write {
                error,
                short,
                left,
                undo,
            });
        }
        f.len += bytes.len() as u64;
        if fsync {
            sync(&f.file, &self.faults).map_err(AppendError::Fsync)?;
        } else if background {
            self.unsynced.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Flushes to disk now (closing the file, stopping the AOF).
    pub fn sync(&self) -> io::Result<()> {
        let f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        sync(&f.file, &self.faults)
    }

    /// True if the thread has writes to sync.
    pub fn fsync_pending(&self) -> bool {
        self.unsynced.load(Ordering::Acquire)
    }

    /// The errno of the background fsync's last failure, if the last one failed.
    pub fn fsync_error(&self) -> Option<i32> {
        match self.fsync_errno.load(Ordering::Acquire) {
            0 => None,
            errno => Some(errno),
        }
    }
}

/// Writes all of `bytes` (retrying interrupted and partial writes, as Redis's `aofWrite`), or
/// fails with the error and how many bytes went in first. A disk fault set by a test applies
/// first.
fn write_counting(
    file: &mut File,
    bytes: &[u8],
    faults: &DiskFaults,
) -> Result<(), (io::Error, usize)> {
    if let Some(failure) = faults.take(DiskOp::Write) {
        let first = failure.written_first.min(bytes.len());
        file.write_all(&bytes[..first]).map_err(|e| (e, 0))?;
        return Err((failure.error, first));
    }
    let mut done = 0;
    while done < bytes.len() {
        match file.write(&bytes[done..]) {
            Ok(0) => return Err((io::Error::from_raw_os_error(libc::ENOSPC), done)),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((e, done)),
        }
    }
    Ok(())
}

/// fdatasync, or the failure a test's disk fault gives it.
fn sync(file: &File, faults: &DiskFaults) -> io::Result<()> {
    match faults.take(DiskOp::Fsync) {
        Some(failure) => Err(failure.error),
        None => file.sync_data(),
    }
}

/// The `everysec` thread: once a second, an fsync if anything was written since the last good
/// one (Redis's `BIO_AOF_FSYNC` job); a failure is recorded for the engine and tried again.
struct FsyncThread {
    file: Arc<Mutex<AppendFile>>,
    unsynced: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    errno: Arc<AtomicI32>,
    faults: DiskFaults,
}

impl FsyncThread {
    fn run(self) {
        while !self.stop.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1000));
            if !self.unsynced.swap(false, Ordering::AcqRel) {
                continue;
            }
            let result = {
                let f = self.file.lock().unwrap_or_else(|p| p.into_inner());
                sync(&f.file, &self.faults)
            };
            match result {
                Ok(()) => self.errno.store(0, Ordering::Release),
                Err(e) => {
                    self.errno
                        .store(e.raw_os_error().unwrap_or(libc::EIO), Ordering::Release);
                    self.unsynced.store(true, Ordering::Release);
                }
            }
        }
    }
}

impl Drop for Appender {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let _ = f.file.sync_data();
    }
}

/// A background rewrite in progress: the snapshot walk writing the new base.
pub struct Rewrite {
    pub walk: crate::model::snapshot::SnapshotWalk,
    pub started: std::time::Instant,
    pub base_name: String,
    /// The base is an RDB (else commands): `aof-use-rdb-preamble` when the rewrite began.
    pub rdb_base: bool,
    /// The pid of the child process writing the base, if one does (Redis's `child_pid`).
    pub child: Option<u32>,
}

impl std::fmt::Debug for Rewrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rewrite")
            .field("base_name", &self.base_name)
            .finish()
    }
}

/// The AOF's state (INFO persistence's `aof_*` fields come from here).
#[derive(Debug, Default)]
pub struct AppendOnly {
    /// The rewrite in progress, if any.
    pub rewrite: Option<Rewrite>,
    /// While the AOF waits for its first rewrite: the increment opened for it and the manifest
    /// that will list it once the base is written.
    pub pending_incr: Option<(String, Manifest)>,
    pub status: AofStatus,
    pub manifest: Manifest,
    /// The incremental file being appended to (None while off).
    pub appender: Option<Appender>,
    /// Bytes propagated and not yet appended (Redis's `aof_buf`).
    pub buf: Vec<u8>,
    /// Size of the AOF (base + increments) and of the base after the last rewrite, for
    /// `auto-aof-rewrite-percentage`.
    pub current_size: u64,
    pub base_size: u64,
    pub last_write_ok: bool,
    /// The errno of the last failed write (Redis's `aof_last_write_errno`; ENOSPC for a short
    /// write), for `-MISCONF Errors writing to the AOF file: …`.
    pub last_write_errno: i32,
    /// When a write error was last logged (seconds): at most one line per 30 s, as Redis.
    pub last_write_error_log_s: i64,
    /// The background fsync's failure has been logged (once until an fsync succeeds again).
    pub fsync_error_logged: bool,
    /// DEBUG AOF-FLUSH-SLEEP: microseconds to sleep before each write of a non-empty buffer
    /// (Redis's `aof_flush_sleep`, which its tests use to widen the window between a write and
    /// its reply).
    pub flush_sleep_us: u64,
    pub rewrite_scheduled: bool,
    pub rewrites: u64,
    pub rewrite_failures: u64,
    /// Automatic rewrites held back after repeated failures (see [`AppendOnly::rewrite_limited`]).
    pub limit: RewriteLimit,
    pub last_rewrite_ok: bool,
    pub last_rewrite_time_sec: i64,
    /// Bytes written to the AOF since the last fsync (`appendfsync always` fsyncs each write).
    pub written_since_fsync: u64,
}

/// Redis's AOF rewrite limit (`aofRewriteLimited`): after three failed rewrites in a row, an
/// automatic or scheduled rewrite waits 1 minute, then 2, 4 … up to 60 after each further
/// failure, so that a rewrite that keeps failing does not open a new increment each time.
/// BGREWRITEAOF still runs at once.
#[derive(Debug, Default)]
pub struct RewriteLimit {
    next_delay_minutes: i64,
    /// When the next rewrite may run (unix seconds; 0: not limited now).
    next_rewrite_s: i64,
}

/// Failed rewrites in a row that start the limit (Redis's `AOF_REWRITE_LIMITE_THRESHOLD`).
const REWRITE_LIMIT_THRESHOLD: u64 = 3;
/// The longest wait (Redis's `AOF_REWRITE_LIMITE_MAX_MINUTES`).
const REWRITE_LIMIT_MAX_MINUTES: i64 = 60;

impl AppendOnly {
    /// True if an automatic or scheduled rewrite must wait (Redis's `aofRewriteLimited`), at
    /// `now_s` (unix seconds). A wait that begins is returned as its minutes, for the log.
    pub fn rewrite_limited(&mut self, now_s: i64) -> Result<(), Option<i64>> {
        let limit = &mut self.limit;
        if self.rewrite_failures < REWRITE_LIMIT_THRESHOLD {
            *limit = RewriteLimit::default();
            return Ok(());
        }
        if limit.next_rewrite_s != 0 {
            if now_s < limit.next_rewrite_s {
                return Err(None);
            }
            limit.next_rewrite_s = 0;
            return Ok(());
        }
        limit.next_delay_minutes = match limit.next_delay_minutes {
            0 => 1,
            m => (m * 2).min(REWRITE_LIMIT_MAX_MINUTES),
        };
        limit.next_rewrite_s = now_s + limit.next_delay_minutes * 60;
        Err(Some(limit.next_delay_minutes))
    }

    /// The errno that keeps the AOF from being written, if it cannot be (Redis's
    /// `DISK_ERROR_TYPE_AOF`): the last write failed, or the background fsync's last try did.
    #[inline]
    pub fn unwritable(&self) -> Option<i32> {
        if self.status == AofStatus::Off {
            None
        } else if !self.last_write_ok {
            Some(self.last_write_errno)
        } else {
            self.appender.as_ref()?.fsync_error()
        }
    }

    pub fn new() -> Self {
        AppendOnly {
            last_write_ok: true,
            flush_sleep_us: 0,
            last_rewrite_ok: true,
            last_rewrite_time_sec: -1,
            ..Default::default()
        }
    }

    /// The AOF directory of a server whose `dir` and `appenddirname` are these.
    pub fn dir_path(dir: &str, dirname: &str) -> PathBuf {
        let dir = if dir.is_empty() { "." } else { dir };
        Path::new(dir).join(dirname)
    }

    /// Writes the manifest atomically (temporary file, fsync, rename, directory fsync).
    pub fn persist_manifest(&self, dir: &Path, filename: &str) -> io::Result<()> {
        let name = format!("{filename}.manifest");
        let temp = dir.join(format!("temp-{name}"));
        {
            let mut f = File::create(&temp)?;
            f.write_all(self.manifest.to_text().as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&temp, dir.join(&name))?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Deletes the history files and forgets them.
    pub fn delete_history(&mut self, dir: &Path) {
        for f in self.manifest.history.drain(..) {
            let _ = std::fs::remove_file(dir.join(&f.name));
        }
    }
}
