//! RDB persistence as a service: SAVE (the whole dataset now, on the executor's thread), BGSAVE
//! (a forkless point-in-time snapshot walked in slices between the event loop's turns,
//! [`crate::model::snapshot`], written by its own thread, [`crate::base::formats::rdb_file`]), the `save` points the
//! tick checks, the save at shutdown, and loading a file into the keyspace (start-up, DEBUG
//! RELOAD).
//!
//! It decides when and where, as Redis's `rdb.c` does around `rdbSaveRio`: the file is
//! `dir/dbfilename`, written through a temporary file and renamed; a successful save resets
//! `dirty` (by what the snapshot covered, for a background one) and LASTSAVE; a failed
//! background save sets `rdb_last_bgsave_status:err`, which refuses writes with `-MISCONF` while
//! `stop-writes-on-bgsave-error` and save points are set, and is retried by the tick after five
//! seconds. The log lines are Redis's.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use embedis_datatypes::SmallBytes;
use embedis_rdb::{AuxInfo, Event, RdbError, RdbReader, RdbWriter, WriterOptions};

use crate::base::formats::rdb_child::ChildFileKind;
use crate::base::formats::rdb_file::{self, Target, WriterThread};
use crate::kernel::table::Registry;
use crate::model::keyspace::Keyspace;
use crate::model::snapshot::{BgSave, ClockInFile, SnapshotWalk};
use crate::model::state::ServerState;

/// Seconds before a failed background save may be retried by the `save` points.
const BGSAVE_RETRY_DELAY_S: i64 = 5;

/// Where this server's RDB file goes.
pub fn target(server: &ServerState) -> Target {
    let c = &server.config;
    Target::new(&c.dir, &c.dbfilename, &server.persistence.temp_tag)
}

pub fn writer_options(server: &ServerState) -> WriterOptions {
    WriterOptions {
        compression: server.config.rdbcompression,
        checksum: server.config.rdbchecksum,
        version: server.config.compat_version.rdb_version(),
    }
}

/// The AUX fields and function libraries at the top of every file, as Redis writes them
/// (`aof_base`: the file is the base of an AOF).
pub fn write_preamble<W: std::io::Write>(
    server: &ServerState,
    writer: &mut RdbWriter<W>,
    aof_base: bool,
) -> Result<(), RdbError> {
    // An RDB file keeps the replication history (Redis's `rdbPopulateSaveInfo`), so that a
    // restarted replica continues with a partial resync and a restarted primary's replicas
    // can; an AOF's base does not.
    let repl = (!aof_base).then(|| saved_history(server)).flatten();
    write_preamble_with(server, writer, aof_base, repl, true)
}

/// The history a file saved now records: a primary's once it has a backlog (replicas have
/// seen its history), a replica's once it has synced.
fn saved_history(server: &ServerState) -> Option<(i64, String, i64)> {
    let repl = &server.repl;
    repl.backlog.as_ref()?;
    let db = if repl.primary.is_some() {
        repl.stream_db as i64
    } else {
        0
    };
    Some((db, repl.replid.clone(), repl.offset as i64))
}

/// [`write_preamble`] for the image a replica's full resync sends: with Redis's replication AUX
/// fields (`repl-stream-db`, `repl-id`, `repl-offset`) for the client's database and `offset`,
/// and the functions unless the replica filtered them out (`REPLCONF rdb-filter-only`).
pub fn write_preamble_for_replica<W: std::io::Write>(
    server: &ServerState,
    writer: &mut RdbWriter<W>,
    (db, offset): (i64, i64),
    functions: bool,
) -> Result<(), RdbError> {
    let repl = (db, server.repl.replid.clone(), offset);
    write_preamble_with(server, writer, false, Some(repl), functions)
}

fn write_preamble_with<W: std::io::Write>(
    server: &ServerState,
    writer: &mut RdbWriter<W>,
    aof_base: bool,
    repl: Option<(i64, String, i64)>,
    functions: bool,
) -> Result<(), RdbError> {
    writer.standard_aux(&AuxInfo {
        redis_ver: server.config.compat_version.redis_version().into(),
        ctime: server.clock.now_ms().div_euclid(1000),
        used_mem: crate::base::alloc::used_memory(),
        aof_base,
        repl,
    })?;
    if let Some(functions) = server.functions.get().filter(|_| functions) {
        for library in functions.libraries() {
            writer.function(&library.code)?;
        }
    }
    Ok(())
}

/// How this configuration's files carry the access clock (LRU idle time, LFU counter).
pub fn clock_in_file(ks: &Keyspace, server: &ServerState) -> ClockInFile {
    ClockInFile::for_config(&server.config, ks.access, server.clock.now_ms())
}

/// A save that failed; the reason is in the log, as Redis leaves it there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaveFailed;

/// True while a background save is running.
pub fn bgsave_in_progress(server: &ServerState) -> bool {
    server.persistence.bgsave.is_some()
}

/// Writes the whole dataset to `target` now: preamble, keys, then commit (fsync and rename).
/// SAVE's work, and the base of a new AOF at start-up (`aof_base`). Returns the file's size.
pub fn write_file_now(
    ks: &Keyspace,
    server: &ServerState,
    target: &Target,
    aof_base: bool,
) -> Result<u64, rdb_file::SaveError> {
    let mut writer = rdb_file::create(target, writer_options(server))?;
    write_preamble(server, &mut writer, aof_base).map_err(rdb_file::SaveError::rdb)?;
    let mut sink = Paced {
        inner: writer,
        delay_us: server.config.rdb_key_save_delay,
    };
    crate::model::snapshot::write_keyspace(ks, &mut sink, clock_in_file(ks, server))?;
    rdb_file::commit(target, sink.inner)
}

/// A synchronous save's sink with `rdb-key-save-delay`'s pause after each key, as Redis's
/// `rdbSaveRio` pauses in every save (its tests keep a SHUTDOWN's save running with it).
struct Paced<S> {
    inner: S,
    delay_us: i64,
}

impl<S: rdb_file::KeyspaceSink> rdb_file::KeyspaceSink for Paced<S> {
    fn select_db(&mut self, db: u64, keys: u64, expires: u64) -> Result<(), rdb_file::SaveError> {
        self.inner.select_db(db, keys, expires)
    }

    fn entry(&mut self, entry: &rdb_file::SavedEntry) -> Result<(), rdb_file::SaveError> {
        self.inner.entry(entry)?;
        if self.delay_us > 0 {
            std::thread::sleep(Duration::from_micros(self.delay_us as u64));
        }
        Ok(())
    }
}

/// Opens `target` with its preamble written and hands it to a writer thread, for a
/// background snapshot (BGSAVE, an AOF rewrite's base).
pub fn start_writer(
    server: &ServerState,
    target: &Target,
    aof_base: bool,
) -> Result<WriterThread, rdb_file::SaveError> {
    let mut writer = rdb_file::create(target, writer_options(server))?;
    write_preamble(server, &mut writer, aof_base).map_err(rdb_file::SaveError::rdb)?;
    WriterThread::spawn(target.clone(), writer, server.config.rdb_key_save_delay).map_err(|error| {
        rdb_file::SaveError {
            step: "thread",
            error,
        }
    })
}

/// Logs a failed save as Redis does.
fn log_save_error(server: &ServerState, target: &Target, e: &rdb_file::SaveError) {
    if e.step == "open" {
        server.log.warning(&format!(
            "Failed opening the temp RDB file {} (in server root dir {}) for saving: {}",
            target.temp.display(),
            server.config.dir,
            e.error
        ));
    } else {
        server.log.warning(&format!(
            "Write error saving DB on disk({}): {}",
            e.step, e.error
        ));
    }
}

/// Redis's `rdbSave`: writes the whole dataset to the RDB file now. On success `dirty` and
/// LASTSAVE are reset and the last save status is ok. Errors are logged as Redis logs them.
pub fn save(ks: &mut Keyspace, server: &mut ServerState) -> Result<(), SaveFailed> {
    let target = target(server);
    match write_file_now(ks, server, &target, false) {
        Ok(_) => {
            server.log.notice("DB saved on disk");
            ks.dirty = 0;
            server.lastsave = server.clock.now_ms().div_euclid(1000);
            server.persistence.last_bgsave_ok = true;
            Ok(())
        }
        Err(e) => {
            log_save_error(server, &target, &e);
            Err(SaveFailed)
        }
    }
}

/// Redis's `rdbSaveBackground`: begins a background save. The caller has checked that none is
/// running. A file that cannot be opened fails the save after BGSAVE has answered, as Redis's
/// child does: the status turns to err and the log says why.
pub fn bgsave_start(ks: &mut Keyspace, server: &mut ServerState) {
    server.persistence.saves += 1;
    server.persistence.last_ended = None;
    let now_s = server.clock.now_ms().div_euclid(1000);
    server.persistence.last_bgsave_try = now_s;
    let target = target(server);
    let (writer, child) = match start_background_writer(server, &target, false) {
        Ok(started) => started,
        Err(e) => {
            server.persistence.last_bgsave_ok = false;
            server.persistence.last_bgsave_time_sec = 0;
            log_save_error(server, &target, &e);
            server.log.warning("Background saving error");
            return;
        }
    };
    let walk = SnapshotWalk::begin(ks, writer, clock_in_file(ks, server));
    server.persistence.forks += 1;
    server.persistence.bgsave = Some(BgSave {
        walk,
        started: Instant::now(),
        dirty_before: ks.dirty,
        child,
    });
    crate::services::child_processes::update_resize_policy(ks, server);
    match child {
        Some(pid) => server
            .log
            .notice(&format!("Background saving started by pid {pid}")),
        None => server
            .log
            .notice("Background saving started (forkless snapshot)"),
    }
}

/// A BGSAVE's writer, or a background AOF rewrite's RDB base (`aof_base`): through a child
/// process where the server has the program for one (the binary, see
/// [`rdb_file::create_in_child`]), else on a thread writing the file itself. With the child's
/// pid.
pub fn start_background_writer(
    server: &ServerState,
    target: &Target,
    aof_base: bool,
) -> Result<(WriterThread, Option<u32>), rdb_file::SaveError> {
    let Some(program) = server.save_child.as_deref() else {
        return start_writer(server, target, aof_base).map(|writer| (writer, None));
    };
    let kind = if aof_base {
        ChildFileKind::AofRewrite
    } else {
        ChildFileKind::Save
    };
    let oom = crate::base::oom::score_for(
        &server.config.process,
        crate::base::config::process::OomClass::BackgroundChild,
    );
    let (target, mut writer, pid) =
        rdb_file::create_in_child(program, &target.path, oom, kind, writer_options(server))?;
    write_preamble(server, &mut writer, aof_base).map_err(rdb_file::SaveError::rdb)?;
    let thread =
        WriterThread::spawn(target, writer, server.config.rdb_key_save_delay).map_err(|error| {
            rdb_file::SaveError {
                step: "thread",
                error,
            }
        })?;
    Ok((thread, Some(pid)))
}

/// Advances a running background save by about `budget` of walking, and finishes it if its
/// writer is done. Returns true while one is still running.
pub fn bgsave_step(ks: &mut Keyspace, server: &mut ServerState, budget: Duration) -> bool {
    let Some(job) = server.persistence.bgsave.as_mut() else {
        return false;
    };
    if job.walk.advance(ks, budget) {
        finish_bgsave(ks, server);
        return false;
    }
    true
}

/// True if a running background save's walk is waiting for its writer (no point in stepping).
pub fn bgsave_waiting(server: &ServerState) -> bool {
    server
        .persistence
        .bgsave
        .as_ref()
        .is_some_and(|job| job.walk.waiting())
}

fn finish_bgsave(ks: &mut Keyspace, server: &mut ServerState) {
    let Some(job) = server.persistence.bgsave.take() else {
        return;
    };
    let elapsed = job.started.elapsed().as_secs() as i64;
    server.persistence.last_bgsave_time_sec = elapsed;
    let copied = crate::model::snapshot::SnapshotWalk::copied_bytes(ks);
    match job.walk.into_writer().join() {
        Ok(_) => {
            server.persistence.last_cow_size = copied;
            server
                .log
                .notice("Background saving terminated with success");
            ks.dirty = ks.dirty.saturating_sub(job.dirty_before);
            server.lastsave = server.clock.now_ms().div_euclid(1000);
            server.persistence.last_bgsave_ok = true;
            server.persistence.last_ended = Some(true);
        }
        Err(e) => {
            match crate::base::formats::rdb_child::killed_by_signal(&e.error) {
                Some(signal) => server
                    .log
                    .warning(&format!("Background saving terminated by signal {signal}")),
                None => {
                    server.log.warning(&format!(
                        "Write error saving DB on disk({}): {}",
                        e.step, e.error
                    ));
                    server.log.warning("Background saving error");
                }
            }
            server.persistence.last_bgsave_ok = false;
            server.persistence.last_ended = Some(false);
        }
    }
}

/// A background save whose child process died before its end (killed, as Redis's tests do
/// with `kill -9`, or failed) ends now as failed, as Redis's `backgroundSaveDoneHandler` ends
/// it: logged, `rdb_last_bgsave_status:err`, the temporary file removed (by the cancelled
/// writer). True if it did.
fn child_died(ks: &mut Keyspace, server: &mut ServerState) -> bool {
    let child = server.persistence.bgsave.as_ref().and_then(|job| job.child);
    let Some(end) = crate::base::formats::rdb_child::failed_end(child) else {
        return false;
    };
    if let Some(job) = server.persistence.bgsave.take() {
        job.walk.abort(ks);
    }
    let message = end.describe("Background saving", "Background saving error");
    server.log.warning(&message);
    server.persistence.last_bgsave_ok = false;
    server.persistence.last_ended = Some(false);
    true
}

/// Waits for a running background save to end (used before a synchronous save would race it:
/// SHUTDOWN, DEBUG RELOAD). Walks it to the end on this thread.
pub fn bgsave_wait(ks: &mut Keyspace, server: &mut ServerState) {
    while bgsave_step(ks, server, Duration::from_millis(50)) {
        if bgsave_waiting(server) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Stops a running background save without a file (Redis's `killRDBChild`: FLUSHALL,
/// SHUTDOWN), and a diskless sync's child. Its temporary file is removed; the last save status
/// is unchanged.
pub fn bgsave_kill(ks: &mut Keyspace, server: &mut ServerState) {
    // Redis has one saving child, for a file or for replicas' sockets: both go.
    crate::services::rdb_transfer::kill(server);
    if let Some(job) = server.persistence.bgsave.take() {
        job.walk.abort(ks);
        server
            .log
            .warning("Background saving terminated by signal 10");
        server.persistence.last_ended = Some(false);
    }
}

/// The tick's part: start a background save when a `save` point is reached (or one was
/// scheduled), as Redis's `serverCron` does.
pub fn cron(ks: &mut Keyspace, server: &mut ServerState) {
    if server.persistence.bgsave.is_some() {
        if !child_died(ks, server) {
            bgsave_step(ks, server, Duration::from_millis(1));
        }
        return;
    }
    if server.aof.rewrite.is_some() {
        return;
    }
    let now_s = server.clock.now_ms().div_euclid(1000);
    if std::mem::take(&mut server.persistence.scheduled) {
        bgsave_start(ks, server);
        return;
    }
    let due = server
        .config
        .save_points
        .iter()
        .find(|&&(seconds, changes)| {
            ks.dirty >= changes
                && now_s - server.lastsave > seconds as i64
                && (now_s - server.persistence.last_bgsave_try > BGSAVE_RETRY_DELAY_S
                    || server.persistence.last_bgsave_ok)
        });
    if let Some(&(seconds, changes)) = due {
        server.log.notice(&format!(
            "{changes} changes in {seconds} seconds. Saving..."
        ));
        bgsave_start(ks, server);
    }
}

/// What a load found.
#[derive(Debug, Default, Clone)]
pub struct LoadStats {
    pub keys_loaded: u64,
    pub keys_expired: u64,
    /// Keys whose value held no element (Redis's loader skips them, with a warning each).
    pub empty_keys_skipped: u64,
    /// The file's replication history (`repl-stream-db`, `repl-id`, `repl-offset`), if any.
    pub history: SavedHistory,
    /// A restarting primary's stream of deletions for the keys the load found expired
    /// ([`Loading::feed_expired`]).
    pub expired_stream: Vec<u8>,
    expired_stream_db: Option<usize>,
}

impl LoadStats {
    fn feed_deletion(&mut self, db: usize, key: &[u8], lazy: bool) {
        use crate::model::write_stream::{del_verb, write_multibulk};
        let mut out = bytes::BytesMut::new();
        if self.expired_stream_db != Some(db) {
            write_multibulk(&mut out, &[b"SELECT".as_slice(), db.to_string().as_bytes()]);
            self.expired_stream_db = Some(db);
        }
        write_multibulk(&mut out, &[del_verb(lazy).as_ref(), key]);
        self.expired_stream.extend_from_slice(&out);
    }
}

/// The replication AUX fields of a loaded file.
#[derive(Debug, Default, Clone)]
pub struct SavedHistory {
    pub stream_db: Option<i64>,
    pub replid: Option<String>,
    pub offset: Option<i64>,
}

impl SavedHistory {
    fn note(&mut self, key: &[u8], value: &[u8]) {
        let text = || String::from_utf8_lossy(value).into_owned();
        match key {
            b"repl-stream-db" => self.stream_db = text().parse().ok(),
            b"repl-id" => self.replid = Some(text()),
            b"repl-offset" => self.offset = text().parse().ok(),
            _ => {}
        }
    }

    /// All three fields, usable (Redis's `rsi_is_valid`).
    fn valid(&self) -> Option<(usize, &str, u64)> {
        let db = usize::try_from(self.stream_db?).ok()?;
        let offset = u64::try_from(self.offset?).ok()?;
        let replid = self.replid.as_deref().filter(|id| id.len() == 40)?;
        Some((db, replid, offset))
    }
}

/// Why a load failed: Redis's log line for it.
#[derive(Debug)]
pub struct LoadError(pub String);

fn load_error(e: RdbError) -> LoadError {
    LoadError(match e {
        RdbError::BadChecksum { expected, got } => {
            // Redis's two lines: the checksums, then its report of a corrupt file.
            format!(
                "Wrong RDB checksum expected: ({expected:x}) but got ({got:x}). Aborting now.\n\
                 Internal error in RDB reading offset 0, function at rdb_saving -> RDB CRC error"
            )
        }
        other => {
            format!("Short read or OOM loading DB. Unrecoverable error, aborting now. ({other})")
        }
    })
}

/// Loads the RDB file at `path` into the keyspace (which the caller has emptied if it wants
/// to): function libraries, then keys. Keys already expired are skipped, as a master does.
/// `dirty` is left as it was.
pub fn load_file(
    ks: &mut Keyspace,
    server: &mut ServerState,
    registry: &'static Registry,
    path: &Path,
    merge: bool,
) -> Result<LoadStats, LoadError> {
    let file = File::open(path)
        .map_err(|e| LoadError(format!("Fatal error loading the DB: {e}. Exiting.")))?;
    server.persistence.loading = true;
    let input = BufReader::with_capacity(1 << 16, file);
    let result = load_from(ks, server, registry, input, merge);
    server.persistence.loading = false;
    if let Ok(stats) = &result {
        server.persistence.last_load_keys_loaded = stats.keys_loaded;
        server.persistence.last_load_keys_expired = stats.keys_expired;
    }
    result
}

/// [`load_file`] from any reader. With `merge` (DEBUG RELOAD MERGE) a key or library that
/// exists already is replaced; otherwise it is an error.
pub fn load_from<R: std::io::Read>(
    ks: &mut Keyspace,
    server: &mut ServerState,
    registry: &'static Registry,
    input: R,
    merge: bool,
) -> Result<LoadStats, LoadError> {
    let mut loading = Loading::new(input, merge, server.config.compat_version.rdb_version())?;
    while !loading.step(ks, server, registry, usize::MAX)? {}
    Ok(loading.stats())
}

/// The most keys a RESIZEDB hint pre-sizes a table for (32 MB of buckets); a bigger database
/// grows its tables as its keys arrive.
const RESIZE_HINT_MAX: u64 = 1 << 22;

/// A load in progress, resumable key by key: the start-up load of `embedis-server` runs in
/// slices between the event loop's turns, answering `-LOADING` to clients meanwhile.
pub struct Loading<R: std::io::Read> {
    reader: RdbReader<R>,
    db: usize,
    stats: LoadStats,
    merge: bool,
    feed_expired: bool,
    /// `key-load-delay` does not apply (its pauses were taken elsewhere).
    no_key_delay: bool,
}

impl<R: std::io::Read> Loading<R> {
    /// A failed read: a corrupt value gets the report Redis's loader gives before it stops
    /// (its own line, then its checker's summary of where it was), anything else
    /// [`load_error`]'s line.
    fn failure(&self, e: RdbError) -> LoadError {
        match (e, self.reader.failed_entry()) {
            (RdbError::Corrupt(reason), Some((key, ty))) => self.report(&reason, key, ty),
            (e, _) => load_error(e),
        }
    }

    /// A value read whole that the server cannot hold (a repeated member, an empty node…).
    fn corrupt_entry(&self, e: RdbError, key: &[u8]) -> LoadError {
        match e {
            RdbError::Corrupt(reason) => self.report(&reason, key, 0),
            e => load_error(e),
        }
    }

    fn report(&self, reason: &str, key: &[u8], ty: u8) -> LoadError {
        let line =
            format!("Internal error in RDB reading offset 0, function at embedis_rdb -> {reason}");
        let kind = if ty == 0 {
            String::new()
        } else {
            format!("\n[additional info] Reading type {ty}")
        };
        let read = self.stats.keys_loaded + self.stats.keys_expired + self.stats.empty_keys_skipped;
        LoadError(format!(
            "{line}\n--- RDB ERROR DETECTED ---\n[error] {line}\n\
             [additional info] Reading key '{}'{kind}\n[info] {read} keys read\n\
             Terminating server after rdb file reading failure.",
            String::from_utf8_lossy(key)
        ))
    }

    /// Reads the header; the file's first problem is reported here (a version newer than
    /// `newest`, the server's Redis's, among them).
    pub fn new(input: R, merge: bool, newest: u16) -> Result<Self, LoadError> {
        Ok(Loading {
            reader: RdbReader::new_upto(input, newest).map_err(load_error)?,
            db: 0,
            stats: LoadStats::default(),
            merge,
            feed_expired: false,
            no_key_delay: false,
        })
    }

    /// With `skip`, loads without `key-load-delay`'s pauses.
    pub fn without_key_delay(mut self, skip: bool) -> Self {
        self.no_key_delay = skip;
        self
    }

    /// Writes a DEL (UNLINK with `lazyfree-lazy-expire`) for every expired key it skips, as a
    /// restarting primary feeds them to its backlog (Redis's `RDBFLAGS_FEED_REPL`): replicas
    /// that continue from the file's history learn of them.
    pub fn feed_expired(mut self) -> Self {
        self.feed_expired = true;
        self
    }

    pub fn stats(&self) -> LoadStats {
        self.stats.clone()
    }

    /// Loads up to `max_keys` more keys. Ok(true) once the file is read to its end (checksum
    /// verified).
    pub fn step(
        &mut self,
        ks: &mut Keyspace,
        server: &mut ServerState,
        registry: &'static Registry,
        max_keys: usize,
    ) -> Result<bool, LoadError> {
        let now = server.clock.now_ms();
        let delay = if self.no_key_delay {
            0
        } else {
            server.config.key_load_delay
        };
        let mut keys = 0usize;
        while keys < max_keys {
            let event = self.reader.next_event();
            let event = event.map_err(|e| self.failure(e))?;
            match event {
                Event::Aux { key, value } => self.stats.history.note(&key, &value),
                // Size the tables once, as Redis does, instead of growing them key by key —
                // but only as far as [`RESIZE_HINT_MAX`]: the sizes are the file's word, and a
                // corrupt one must not allocate gigabytes before a single key is read.
                Event::ResizeDb { keys, expires } => {
                    let d = &mut ks.dbs[self.db];
                    let keys = keys.min(RESIZE_HINT_MAX) as usize;
                    let expires = expires.min(RESIZE_HINT_MAX) as usize;
                    d.main.expand(d.main.len() + keys);
                    d.expires.expand(d.expires.len() + expires);
                }
                Event::SelectDb(n) => {
                    if n as usize >= ks.dbs.len() {
                        return Err(LoadError(format!(
                            "FATAL: Data file was created with a Redis server configured to handle more than {} databases. Exiting\n",
                            ks.dbs.len()
                        )));
                    }
                    self.db = n as usize;
                }
                Event::Function(code) => load_library(server, registry, code, self.merge)?,
                Event::Entry { key, value, meta } => {
                    keys += 1;
                    // A replica keeps them: its primary sends their DELs (Redis's `iAmMaster`);
                    // so does an AOF's base (loaded under the AOF's Keep rule, as Redis never
                    // skips them in an AOF preamble).
                    let skip = server.repl.primary.is_none()
                        && ks.expiry_rule == crate::model::keyspace::ExpiryRule::Delete;
                    if meta.expire_ms.is_some_and(|at| at < now) && skip {
                        self.stats.keys_expired += 1;
                        if self.feed_expired {
                            let lazy = server.config.lazyfree_lazy_expire;
                            self.stats.feed_deletion(self.db, &key, lazy);
                        }
                        continue;
                    }
                    if crate::base::formats::rdb_convert::holds_nothing(&value) {
                        let key = String::from_utf8_lossy(&key);
                        let line = format!("rdbLoadObject skipping empty key: {key}");
                        server.log.warning(&line);
                        self.stats.empty_keys_skipped += 1;
                        continue;
                    }
                    let value = crate::base::formats::rdb_convert::from_rdb(value, &server.config)
                        .map_err(|e| self.corrupt_entry(e, &key))?;
                    let lru = match (meta.idle, meta.freq) {
                        (_, Some(freq)) if ks.access.lfu => {
                            Some(crate::base::value::lfu_bits(now, freq))
                        }
                        (Some(idle), _) if !ks.access.lfu => {
                            Some(crate::base::value::lru_clock(now - idle as i64 * 1000))
                        }
                        _ => None,
                    };
                    let db = self.db;
                    if self.merge {
                        ks.dbs[db].remove(&key);
                    }
                    if !ks.load_entry(db, SmallBytes::new(&key), value, meta.expire_ms, lru, now) {
                        return Err(LoadError(format!(
                            "RDB has duplicated key '{}' in DB {db}",
                            String::from_utf8_lossy(&key)
                        )));
                    }
                    self.stats.keys_loaded += 1;
                    if delay > 0 {
                        std::thread::sleep(Duration::from_micros(delay as u64));
                    }
                }
                Event::Eof { .. } => return Ok(true),
            }
        }
        Ok(false)
    }
}

/// Counts the bytes read through it (INFO's `loading_loaded_bytes`).
pub struct Counting<R> {
    inner: R,
    pub count: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R> Counting<R> {
    pub fn new(inner: R, count: std::rc::Rc<std::cell::Cell<u64>>) -> Counting<R> {
        Counting { inner, count }
    }
}

impl<R: std::io::Read> std::io::Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// A file read through a buffer, counted.
pub type CountingFile = Counting<BufReader<File>>;

/// A load in slices and the count of bytes it has read.
pub type BackgroundLoad = (Loading<CountingFile>, std::rc::Rc<std::cell::Cell<u64>>);

/// Opens this server's RDB file for a load in slices (the binary's start-up), if there is one:
/// the header is checked here, so a file that is not an RDB stops the start.
pub fn open_for_background_load(
    server: &mut ServerState,
) -> Result<Option<BackgroundLoad>, LoadError> {
    let path = target(server).path;
    if !path.exists() {
        return Ok(None);
    }
    let file = File::open(&path)
        .map_err(|e| LoadError(format!("Fatal error loading the DB: {e}. Exiting.")))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let count = std::rc::Rc::new(std::cell::Cell::new(0));
    let input = Counting::new(BufReader::with_capacity(1 << 16, file), count.clone());
    let loading =
        Loading::new(input, false, server.config.compat_version.rdb_version())?.feed_expired();
    let p = &mut server.persistence;
    p.loading = true;
    p.loading_total_bytes = total;
    p.loading_started_s = server.clock.now_ms().div_euclid(1000);
    Ok(Some((loading, count)))
}

/// Ends a start-up load: the log lines and figures Redis gives.
pub fn finish_load(
    ks: &mut Keyspace,
    server: &mut ServerState,
    stats: LoadStats,
    started: Instant,
) {
    let p = &mut server.persistence;
    p.loading = false;
    p.last_load_keys_loaded = stats.keys_loaded;
    p.last_load_keys_expired = stats.keys_expired;
    let done = format!(
        "Done loading RDB, keys loaded: {}, keys expired: {}",
        stats.keys_loaded, stats.keys_expired
    );
    // Redis warns when it skipped empty keys, and says how many.
    match stats.empty_keys_skipped {
        0 => server.log.notice(&format!("{done}.")),
        n => server
            .log
            .warning(&format!("{done}, empty keys skipped: {n}.")),
    }
    server.log.notice(&format!(
        "DB loaded from disk: {:.3} seconds",
        started.elapsed().as_secs_f64()
    ));
    ks.dirty = 0;
    restore_history(ks, server, &stats);
    // A replica's link waited for the history: it may connect now.
    server.repl.link_wake.notify_one();
}

/// The replication history a start-up file recorded (Redis's `loadDataFromDisk`): a replica
/// takes it as its own, to continue from its primary with PSYNC; a primary keeps it as its
/// previous ID, with a backlog, so that its replicas can continue from it.
fn restore_history(ks: &mut Keyspace, server: &mut ServerState, stats: &LoadStats) {
    let Some((db, replid, offset)) = stats.history.valid() else {
        return;
    };
    let repl = &mut server.repl;
    if repl.primary.is_some() {
        repl.replid = replid.to_string();
        repl.offset = offset;
        repl.stream_db = db.min(ks.dbs.len() - 1);
    } else {
        repl.replid2 = replid.to_string();
        repl.second_offset = offset as i64 + 1;
        repl.offset = offset;
    }
    repl.no_history = false;
    if repl.backlog.is_none() {
        ks.stream.add_consumer();
    }
    let size = server.config.repl_backlog_size.max(1) as usize;
    repl.backlog = Some(crate::model::replication::Backlog::new(size, offset + 1));
    // A primary's history goes on with the deletions of the keys that expired while it was
    // down (too many, and the backlog no longer reaches back to the file's offset).
    if repl.primary.is_none() {
        repl.append(&stats.expired_stream);
    }
}

fn load_library(
    server: &mut ServerState,
    registry: &'static Registry,
    code: Vec<u8>,
    replace: bool,
) -> Result<(), LoadError> {
    let mut functions = server
        .functions
        .take()
        .map_err(|e| LoadError(format!("Failed loading library: {e:?}")))?;
    let mut host = crate::services::function_host::LoadHost {
        log: &server.log,
        registry,
        started: Instant::now(),
    };
    let result = functions.load(&mut host, &Bytes::from(code), replace);
    server.functions.put_back(functions);
    result.map(drop).map_err(|e| {
        LoadError(format!(
            "Failed loading library: {}",
            String::from_utf8_lossy(&e)
        ))
    })
}

/// Loads `dir/dbfilename` at start-up if it exists, logging as Redis does. An unreadable or
/// corrupt file is an error (the server must not start on half a dataset).
pub fn load_at_start(
    ks: &mut Keyspace,
    server: &mut ServerState,
    registry: &'static Registry,
) -> Result<(), LoadError> {
    let path = target(server).path;
    if !path.exists() {
        return Ok(());
    }
    let started = Instant::now();
    let file = File::open(&path)
        .map_err(|e| LoadError(format!("Fatal error loading the DB: {e}. Exiting.")))?;
    server.persistence.loading = true;
    let input = BufReader::with_capacity(1 << 16, file);
    let loaded = Loading::new(input, false, server.config.compat_version.rdb_version())
        .map(Loading::feed_expired);
    let stats = loaded.and_then(|mut loading| {
        while !loading.step(ks, server, registry, usize::MAX)? {}
        Ok(loading.stats())
    });
    server.persistence.loading = false;
    finish_load(ks, server, stats?, started);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_harness::Harness;
    use proptest::prelude::*;

    /// Found by the `rdb_loader` fuzz target: a RESIZEDB record claiming 0x425a1301 (about 1.1
    /// billion) keys made the loader size its table for them — a 16 GB allocation — before
    /// reading a single key. The record is the fuzzer's; the second claims 2^40 keys, which no
    /// machine can allocate, so that the test fails wherever the cap is missing.
    #[test]
    fn a_resizedb_hint_does_not_allocate_what_the_file_claims() {
        let mut huge = vec![0xfb, 0x81];
        huge.extend_from_slice(&(1u64 << 40).to_be_bytes());
        huge.push(0x01);
        for resize in [vec![0xfb, 0x80, 0x42, 0x5a, 0x13, 0x01, 0x78, 0x01], huge] {
            let mut file = b"REDIS0010".to_vec();
            file.extend_from_slice(&resize);
            file.extend_from_slice(&[0x00, 0x01, b'k', 0x01, b'v', 0xff]);
            file.extend_from_slice(&[0; 8]);
            let mut h = Harness::new();
            let engine = &mut h.engine;
            let stats = load_from(
                &mut engine.ks,
                &mut engine.server,
                engine.registry,
                &file[..],
                false,
            )
            .expect("the file loads");
            assert_eq!(stats.keys_loaded, 1);
            assert_eq!(h.run_text("GET k"), "$1\r\nv\r\n");
        }
    }

    /// Found by the `rdb_loader` fuzz target (minimized by libFuzzer to these 126 bytes, cut
    /// short after the stream): a stream whose recorded last ID is before its entries' IDs.
    /// Loaded, the next `XADD key *` appended an ID below its node's first one, and the node's
    /// delta encoding overflowed (a panic with overflow checks, a corrupt node without). Redis
    /// never writes such a stream; it is refused as corrupt.
    #[test]
    fn a_stream_whose_last_id_is_before_its_entries_is_refused() {
        let file: &[u8] = &[
            0x52, 0x45, 0x44, 0x49, 0x53, 0x30, 0x30, 0x31, 0x30, 0x00, 0x03, 0x68, 0x6c, 0x6c,
            0x1b, 0x48, 0x59, 0x4c, 0x4c, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
            0x00, 0x00, 0x80, 0x60, 0xf3, 0x80, 0x50, 0xb1, 0x84, 0x00, 0x00, 0x03, 0x86, 0x5a,
            0x13, 0x01, 0x78, 0x01, 0x10, 0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0xa6, 0x24,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x33, 0x33, 0x00, 0x00, 0x00, 0x13, 0x00,
            0x02, 0x01, 0x00, 0x01, 0x01, 0x01, 0x81, 0x66, 0x02, 0x00, 0x01, 0x02, 0x01, 0x00,
            0x01, 0x00, 0x01, 0x81, 0x76, 0x02, 0x04, 0x01, 0x00, 0x01, 0x01, 0x01, 0x00, 0x01,
            0x02, 0x01, 0x81, 0x66, 0x02, 0x81, 0x76, 0x02, 0x81, 0x67, 0x02, 0x81, 0x77, 0x02,
            0x08, 0x01, 0xff, 0x02, 0x01, 0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0xa6, 0x24,
        ];
        let mut h = Harness::new();
        let engine = &mut h.engine;
        let error = load_from(
            &mut engine.ks,
            &mut engine.server,
            engine.registry,
            file,
            false,
        )
        .expect_err("a corrupt stream");
        assert!(
            error.0.contains("stream last ID before its entries"),
            "{}",
            error.0
        );
    }

    /// A fresh directory under the system's temporary one.
    fn temp_dir(name: &str) -> std::path::PathBuf {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "embedis-persistence-{name}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn harness_in(dir: &std::path::Path) -> Harness {
        let mut h = Harness::new();
        h.engine.server.config.dir = dir.display().to_string();
        h.engine.server.config.enable_debug_command = crate::base::config::Access::Yes;
        h
    }

    fn digest(h: &mut Harness) -> String {
        let text = h.run_text("DEBUG DIGEST");
        assert!(text.starts_with('+'), "{text}");
        text
    }

    /// Loads the RDB file of `dir` into a fresh engine on `h`'s clock and returns its digest.
    fn digest_of_file(dir: &std::path::Path, clock_of: &Harness) -> String {
        let mut fresh = harness_in(dir);
        let at = std::time::UNIX_EPOCH + Duration::from_millis(clock_of.now() as u64);
        fresh.clock.set(at);
        let path = dir.join("dump.rdb");
        let e = &mut fresh.engine;
        load_file(&mut e.ks, &mut e.server, e.registry, &path, false).expect("loads");
        digest(&mut fresh)
    }

    /// Commands a client might send while a snapshot is being taken, over a small key space so
    /// that they hit keys the walk has and has not written yet.
    fn op() -> impl Strategy<Value = String> {
        let key = (0..40u32).prop_map(|k| format!("k{k}"));
        let db = 0..3u32;
        prop_oneof![
            (key.clone(), 0..1000u32).prop_map(|(k, v)| format!("SET {k} v{v}")),
            key.clone().prop_map(|k| format!("DEL {k}")),
            key.clone().prop_map(|k| format!("APPEND {k} xyz")),
            key.clone().prop_map(|k| format!("INCR n{k}")),
            (key.clone(), 1..100u32).prop_map(|(k, s)| format!("EXPIRE {k} {}", 1000 + s)),
            key.clone().prop_map(|k| format!("PERSIST {k}")),
            (key.clone(), key.clone()).prop_map(|(a, b)| format!("RENAME {a} {b}")),
            (key.clone(), db.clone()).prop_map(|(k, d)| format!("MOVE {k} {d}")),
            db.clone().prop_map(|d| format!("SELECT {d}")),
            (db.clone(), db.clone()).prop_map(|(a, b)| format!("SWAPDB {a} {b}")),
            Just("FLUSHDB".to_string()),
            (key.clone(), 0..5u32).prop_map(|(k, o)| format!("SETRANGE {k} {o} ab")),
            (key.clone(), 0..50u32).prop_map(|(k, v)| format!("RPUSH l{k} e{v} {v}")),
            key.clone().prop_map(|k| format!("LPOP l{k}")),
            (key.clone(), 0..700u32).prop_map(|(k, v)| format!("SADD s{k} {v}")),
            (key.clone(), 0..50u32).prop_map(|(k, v)| format!("SADD s{k} m{v}")),
            (key.clone(), 0..700u32).prop_map(|(k, v)| format!("SREM s{k} {v}")),
            (key.clone(), 0..200u32).prop_map(|(k, v)| format!("HSET h{k} f{v} {v}")),
            (key.clone(), 0..200u32).prop_map(|(k, v)| format!("HDEL h{k} f{v}")),
            (key.clone(), 0..200u32).prop_map(|(k, v)| format!("ZADD z{k} {v}.5 m{v}")),
            (key.clone(), 0..200u32).prop_map(|(k, v)| format!("ZREM z{k} m{v}")),
            (key.clone(), 0..9u32).prop_map(|(k, v)| format!("XADD x{k} * f{v} {v}")),
            (key.clone(), 0..9u32).prop_map(|(k, v)| format!("PFADD p{k} a{v}")),
        ]
    }

    /// `keys` keys of every type over three databases, some with TTLs; returns the digest.
    fn fill_for_snapshot(h: &mut Harness, keys: usize) -> String {
        for i in 0..keys {
            h.run(&format!("SELECT {}", i % 3));
            h.run(&format!("SET k{} value{i}", i % 40 + (i / 120) * 40));
            if i % 7 == 0 {
                h.run(&format!("EXPIRE k{} 5000", i % 40));
            }
            let k = i % 40;
            match i % 6 {
                0 => h.run(&format!("RPUSH lk{k} a{i} {i}")),
                1 => h.run(&format!("SADD sk{k} {i} {}", i * 3)),
                2 => h.run(&format!("HSET hk{k} f{i} {i}")),
                3 => h.run(&format!("ZADD zk{k} {i} m{i}")),
                4 => h.run(&format!("XADD xk{k} * f {i}")),
                _ => h.run(&format!("PFADD pk{k} e{i}")),
            };
        }
        h.run("SELECT 0");
        digest(h)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The same for an AOF rewrite whose base is written as commands: the base, replayed
        /// into a fresh server, is the dataset as it was when BGREWRITEAOF answered.
        #[test]
        fn a_commands_base_is_a_point_in_time(
            keys in 0..300usize,
            ops in proptest::collection::vec(op(), 0..120),
            steps_between in 0..4usize,
        ) {
            let dir = temp_dir("pit-aof");
            let mut h = harness_in(&dir);
            h.engine.server.config.aof_use_rdb_preamble = false;
            let before = fill_for_snapshot(&mut h, keys);
            prop_assert_eq!(
                h.run_text("BGREWRITEAOF"),
                "+Background append only file rewriting started\r\n"
            );
            for op in &ops {
                h.run(op);
                for _ in 0..steps_between {
                    let e = &mut h.engine;
                    crate::services::aof::rewrite_step(&mut e.ks, &mut e.server, Duration::ZERO);
                }
            }
            let e = &mut h.engine;
            while crate::services::aof::rewrite_step(&mut e.ks, &mut e.server, Duration::from_millis(50)) {
                if crate::services::aof::rewrite_waiting(&e.server) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            prop_assert!(e.server.aof.last_rewrite_ok);
            let base = e.server.aof.manifest.base.clone().expect("a base");
            prop_assert!(base.name.ends_with(".base.aof"));
            let mut fresh = harness_in(&dir);
            let at = std::time::UNIX_EPOCH + Duration::from_millis(h.now() as u64);
            fresh.clock.set(at);
            prop_assert!(crate::services::aof::load_at_start(&mut fresh.engine.parts()).is_ok());
            prop_assert_eq!(digest(&mut fresh), before);
            let _ = std::fs::remove_dir_all(&dir);
        }

        /// A background save holds the dataset as it was when BGSAVE answered, whatever
        /// clients write while the walk goes on; afterwards every object carries its database's
        /// parity again, so the next snapshot is right too.
        #[test]
        fn bgsave_is_a_point_in_time(
            keys in 0..300usize,
            ops in proptest::collection::vec(op(), 0..120),
            steps_between in 0..4usize,
        ) {
            let dir = temp_dir("pit");
            let mut h = harness_in(&dir);
            let before = fill_for_snapshot(&mut h, keys);
            prop_assert_eq!(h.run_text("BGSAVE"), "+Background saving started\r\n");
            for op in &ops {
                h.run(op);
                for _ in 0..steps_between {
                    let e = &mut h.engine;
                    bgsave_step(&mut e.ks, &mut e.server, Duration::ZERO);
                }
            }
            let after = digest(&mut h);
            let e = &mut h.engine;
            bgsave_wait(&mut e.ks, &mut e.server);
            prop_assert!(e.server.persistence.last_bgsave_ok);
            prop_assert_eq!(digest_of_file(&dir, &h), before);
            for db in &h.engine.ks.dbs {
                let mark = db.snapshot.mark;
                prop_assert!(db.snapshot.capture.is_none());
                prop_assert!(db.main.iter().all(|(_, o)| o.snapshot_mark() == mark));
            }
            // A second snapshot, with nothing written during it, is the dataset as it is now.
            h.run("BGSAVE");
            let e = &mut h.engine;
            bgsave_wait(&mut e.ks, &mut e.server);
            prop_assert_eq!(digest_of_file(&dir, &h), after);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// A walk longer than a few batches refills the entries the writer hands back (strings into
    /// strings, and across types both ways); the file still holds exactly the dataset, TTLs
    /// included.
    #[test]
    fn a_long_walk_refills_written_entries_and_keeps_the_dataset() {
        let dir = temp_dir("refill");
        let mut h = harness_in(&dir);
        for i in 0..6000 {
            match i % 6 {
                0 => h.run(&format!("SET k{i} value-{i}")),
                1 => h.run(&format!("SET k{i} {i}")),
                2 => h.run(&format!("RPUSH k{i} a{i} b{i}")),
                3 => h.run(&format!("HSET k{i} f v{i}")),
                4 => h.run(&format!(
                    "SET k{i} {} PX {}",
                    "long".repeat(i % 20),
                    100_000 + i
                )),
                _ => h.run(&format!("SET k{i} {}", "x".repeat(i % 300))),
            };
        }
        let before = digest(&mut h);
        assert_eq!(h.run_text("BGSAVE"), "+Background saving started\r\n");
        let mut reused = 0;
        loop {
            let e = &mut h.engine;
            if let Some(bg) = &e.server.persistence.bgsave {
                reused = bg.walk.reused;
            }
            if !bgsave_step(&mut e.ks, &mut e.server, Duration::from_micros(200)) {
                break;
            }
            // Let the writer catch up, so that written batches come back during the walk.
            std::thread::sleep(Duration::from_micros(300));
        }
        let e = &mut h.engine;
        bgsave_wait(&mut e.ks, &mut e.server);
        assert!(e.server.persistence.last_bgsave_ok);
        assert!(reused > 1000, "entries refilled: {reused}");
        assert_eq!(digest_of_file(&dir, &h), before);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Field TTLs are part of what a snapshot holds: changed during the walk (HPEXPIRE,
    /// HPERSIST, a field deleted by lazy expiry), the file still has them as they were when
    /// BGSAVE answered, so every path that changes them takes the pre-image first.
    #[test]
    fn bgsave_keeps_field_ttls_as_they_were() {
        let dir = temp_dir("field-ttls");
        let mut h = harness_in(&dir);
        let t0 = h.now();
        h.run("HSET small a 1 b 2 c 3");
        h.run("HPEXPIRE small 1000 FIELDS 1 a");
        h.run("HPEXPIRE small 5000 FIELDS 1 b");
        for i in 0..600 {
            h.run(&format!("HSET big f{i} {i}"));
        }
        h.run("HPEXPIRE big 2000 FIELDS 2 f1 f2");
        assert_eq!(h.run_text("BGSAVE"), "+Background saving started\r\n");
        h.run("HPERSIST small FIELDS 1 a");
        h.run("HPEXPIRE small 9000 FIELDS 1 c");
        h.run("HPERSIST big FIELDS 1 f1");
        h.run("HPEXPIRE big 100 FIELDS 1 f3");
        h.advance_ms(2500);
        assert_eq!(h.run_text("HGET big f2"), "$-1\r\n", "expired, and deleted");
        let e = &mut h.engine;
        bgsave_wait(&mut e.ks, &mut e.server);
        assert!(e.server.persistence.last_bgsave_ok);

        // The file, loaded at the time BGSAVE answered, is the dataset of that moment.
        let mut fresh = harness_in(&dir);
        fresh
            .clock
            .set(std::time::UNIX_EPOCH + Duration::from_millis(t0 as u64));
        let e = &mut fresh.engine;
        load_file(
            &mut e.ks,
            &mut e.server,
            e.registry,
            &dir.join("dump.rdb"),
            false,
        )
        .expect("loads");
        assert_eq!(
            fresh.run_text("HPEXPIRETIME small FIELDS 3 a b c"),
            format!("*3\r\n:{}\r\n:{}\r\n:-1\r\n", t0 + 1000, t0 + 5000)
        );
        assert_eq!(
            fresh.run_text("OBJECT ENCODING small"),
            "$10\r\nlistpackex\r\n"
        );
        assert_eq!(
            fresh.run_text("HPEXPIRETIME big FIELDS 3 f1 f2 f3"),
            format!("*3\r\n:{}\r\n:{}\r\n:-1\r\n", t0 + 2000, t0 + 2000)
        );
        assert_eq!(fresh.run_text("HLEN big"), ":600\r\n");
        assert_eq!(fresh.run_text("OBJECT ENCODING big"), "$9\r\nhashtable\r\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn save_and_debug_reload_keep_the_dataset() {
        let dir = temp_dir("reload");
        let mut h = harness_in(&dir);
        h.run("SET a 1");
        h.run("SET b hello");
        h.run("PEXPIRE b 100000");
        h.run("SELECT 5");
        h.run("SET c 12345678901234567890123");
        let before = digest(&mut h);
        assert_eq!(h.run_text("SAVE"), "+OK\r\n");
        assert_eq!(h.run_text("DEBUG RELOAD"), "+OK\r\n");
        assert_eq!(digest(&mut h), before);
        h.run("SELECT 0");
        assert_eq!(h.run_text("PTTL b"), ":100000\r\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
