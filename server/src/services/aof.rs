//! The append-only file as a service: loading it at start-up (base RDB, then each incremental
//! file's commands replayed through `call` as Redis's fake AOF client does), appending the write
//! stream with Redis's three fsync policies, rewriting it in the background (a new base from the
//! forkless snapshot of [`crate::model::snapshot`] while a new incremental file takes the writes made
//! meanwhile), turning it on and off at run time, and the tick's automatic rewrite.
//!
//! The layout and its state are [`crate::model::aof_state`]'s. What is appended is exactly what the
//! write stream ([`crate::model::write_stream`]) produced for the commands that ran, so the file replays to
//! the same dataset. Under `appendfsync always` the I/O layer calls [`flush`] before any reply
//! leaves, and a reply is only sent once its write is on disk; under `everysec` a thread fsyncs
//! once a second; under `no` the OS decides.
//!
//! The base is an RDB file (`.base.rdb`) or, under `aof-use-rdb-preamble no`, commands
//! (`.base.aof`, encoded by [`crate::base::formats::aof_command_base`] on the same snapshot walk's writer thread).
//! Loading tells them apart as Redis does, by the `REDIS` magic at the start of any file.
//! Under `aof-timestamp-enabled` the files carry Redis's `#TS:<unix seconds>` annotations (the
//! write stream adds them, [`configure`] turns them on); loading skips every `#` line.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use embedis_protocol::Version;

use crate::base::config::{AppendFsync, Config};
use crate::base::error::os_error_text;
use crate::base::formats::aof_command_base::{self, CommandWriter};
use crate::base::formats::rdb_file::{SaveError, SnapshotSink, Target, WriterThread};
use crate::kernel::call::{How, Parts};
use crate::model::aof_state::{AofStatus, AppendError, AppendOnly, Appender};
use crate::model::client::{ClientHandle, ClientState, Peer};
use crate::model::keyspace::Keyspace;
use crate::model::snapshot::{ClockInFile, SnapshotWalk};
use crate::model::state::ServerState;

/// Applies the configuration's AOF settings that live outside this module: the write stream's
/// `#TS:` annotations (`aof-timestamp-enabled`). At start and after every CONFIG SET.
pub fn configure(ks: &mut Keyspace, server: &ServerState) {
    ks.stream.set_aof_timestamps(
        server
            .config
            .aof_timestamp_enabled
            .then(|| server.clock.clone()),
    );
}

/// Removes the manifest's history files and writes the manifest without them (Redis's
/// `aofDelHistoryFiles`), unless `aof-disable-auto-gc` keeps them: after a rewrite, at start,
/// and when CONFIG SET turns `aof-disable-auto-gc` off again.
pub fn delete_history(server: &mut ServerState) {
    if server.config.aof_disable_auto_gc || server.aof.manifest.history.is_empty() {
        return;
    }
    let dir = dir_of(&server.config);
    for f in &server.aof.manifest.history {
        server.log.notice(&format!(
            "Removing the history file {} in the background",
            f.name
        ));
    }
    server.aof.delete_history(&dir);
    let filename = server.config.appendfilename.clone();
    if let Err(e) = server.aof.persist_manifest(&dir, &filename) {
        server
            .log
            .warning(&format!("Can't persist the AOF manifest: {e}"));
    }
}

/// The AOF directory of this configuration.
pub fn dir_of(config: &Config) -> PathBuf {
    AppendOnly::dir_path(&config.dir, &config.appenddirname)
}

/// How loading one file ended (Redis's `AOF_*` results).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileLoad {
    Ok,
    Empty,
    Truncated,
}

/// Why loading failed: Redis's log line.
#[derive(Debug)]
pub struct AofError(pub String);

/// The client the AOF's commands run as: a fake one, like Redis's `CLIENT_ID_AOF`.
fn aof_client(now_ms: i64) -> ClientState {
    use std::net::{Ipv4Addr, SocketAddr};
    let mut client = ClientState::new(
        std::sync::Arc::new(ClientHandle::new(crate::model::client::AOF_CLIENT_ID)),
        Peer::Tcp {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            local: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        },
        -1,
        now_ms,
        true,
    );
    // The AOF replays what was already allowed: no ACL user restricts it.
    client.user = crate::model::acl_users::NO_USER;
    client
}

/// Loads the AOF of `config` into the engine's data at start-up. Ok(false): there is no AOF.
pub fn load_at_start(parts: &mut Parts<'_>) -> Result<bool, AofError> {
    let config = &parts.server.config;
    let dir = dir_of(config);
    let filename = config.appendfilename.clone();
    let manifest_path = dir.join(format!("{filename}.manifest"));
    let manifest = if manifest_path.exists() {
        let text = std::fs::read_to_string(&manifest_path).map_err(|e| {
            AofError(format!(
                "Fatal error: can't open the AOF manifest file {} for reading: {e}",
                manifest_path.display()
            ))
        })?;
        let parsed = crate::model::aof_state::Manifest::parse(&text)
            .map_err(|e| AofError(format!("*** FATAL AOF MANIFEST FILE ERROR *** {e}")))?;
        Some(parsed)
    } else {
        None
    };
    let Some(manifest) = upgrade_old_aof(parts, &dir, manifest)? else {
        return Ok(false);
    };
    let files: Vec<String> = manifest
        .base
        .iter()
        .chain(&manifest.incr)
        .map(|f| f.name.clone())
        .collect();
    let started = Instant::now();
    let mut total = 0u64;
    for name in &files {
        match std::fs::metadata(dir.join(name)) {
            Ok(m) => total += m.len(),
            Err(e) => {
                return Err(AofError(format!(
                    "Unable to obtain the AOF file {name} length. stat: {}",
                    crate::base::error::os_error_text(&e)
                )))
            }
        }
    }
    parts.server.aof.manifest = manifest;
    if total == 0 {
        return Ok(true);
    }
    parts.server.persistence.loading = true;
    // While loading, no key counts as expired (Redis's expireIfNeeded returns at once when
    // `server.loading`): the file's commands see the dataset they were written against, and a
    // replica keeps keys whose TTL passed until its primary deletes them.
    let rule = std::mem::replace(
        &mut parts.ks.expiry_rule,
        crate::model::keyspace::ExpiryRule::Keep,
    );
    let mut client = aof_client(parts.server.clock.now_ms());
    let count = files.len();
    let mut result = Ok(true);
    for (i, name) in files.iter().enumerate() {
        let last = i + 1 == count;
        let file_started = Instant::now();
        match load_file(parts, &mut client, &dir, name) {
            Ok(FileLoad::Truncated) if !last => {
                result = Err(AofError(
                    "Fatal error: the truncated file is not the last file".into(),
                ));
                break;
            }
            Ok(_) => {
                let kind = if parts
                    .server
                    .aof
                    .manifest
                    .base
                    .as_ref()
                    .is_some_and(|b| &b.name == name)
                {
                    "base"
                } else {
                    "incr"
                };
                parts.server.log.notice(&format!(
                    "DB loaded from {kind} file {name}: {:.3} seconds",
                    file_started.elapsed().as_secs_f64()
                ));
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    parts.server.persistence.loading = false;
    parts.ks.expiry_rule = rule;
    if result.is_ok() {
        let aof = &mut parts.server.aof;
        aof.current_size = total;
        aof.base_size = aof
            .manifest
            .base
            .as_ref()
            .and_then(|b| std::fs::metadata(dir.join(&b.name)).ok())
            .map_or(0, |m| m.len());
        parts.server.log.notice(&format!(
            "DB loaded from append only file: {:.3} seconds",
            started.elapsed().as_secs_f64()
        ));
        parts.ks.dirty = 0;
    }
    result
}

/// A single-file AOF of Redis before 7 (`appendfilename` in `dir`) becomes the base of a new
/// AOF directory, as Redis's `aofUpgradePrepare` does: when there is no directory, no manifest,
/// or a manifest left by an upgrade interrupted before the file was moved (only that base,
/// not in the directory yet). The manifest is written before the file moves, so a crash in
/// between is finished at the next start. Returns the manifest to load, if any.
fn upgrade_old_aof(
    parts: &mut Parts<'_>,
    dir: &Path,
    manifest: Option<crate::model::aof_state::Manifest>,
) -> Result<Option<crate::model::aof_state::Manifest>, AofError> {
    let config = &parts.server.config;
    let filename = config.appendfilename.clone();
    let old = Path::new(if config.dir.is_empty() {
        "."
    } else {
        &config.dir
    })
    .join(&filename);
    let interrupted = |m: &crate::model::aof_state::Manifest| {
        m.incr.is_empty()
            && m.base.as_ref().is_some_and(|b| b.name == filename)
            && !dir.join(&filename).exists()
    };
    let upgrade = old.is_file() && (!dir.is_dir() || manifest.as_ref().is_none_or(interrupted));
    if !upgrade {
        return Ok(manifest);
    }
    let fatal = |what: String| AofError(what);
    std::fs::create_dir_all(dir).map_err(|e| {
        fatal(format!(
            "Can't open or create append-only dir {}: {}",
            dir.display(),
            crate::base::error::os_error_text(&e)
        ))
    })?;
    let aof = &mut parts.server.aof;
    aof.manifest = crate::model::aof_state::Manifest {
        base: Some(crate::model::aof_state::AofFile {
            name: filename.clone(),
            seq: 1,
            kind: b'b',
        }),
        base_seq: 1,
        ..Default::default()
    };
    aof.persist_manifest(dir, &filename).map_err(|e| {
        fatal(format!(
            "Can't persist the AOF manifest file {filename}.manifest: {}",
            crate::base::error::os_error_text(&e)
        ))
    })?;
    std::fs::rename(&old, dir.join(&filename)).map_err(|e| {
        fatal(format!(
            "Error trying to move the old AOF file {filename} into dir {}: {}",
            dir.display(),
            crate::base::error::os_error_text(&e)
        ))
    })?;
    parts.server.log.notice(&format!(
        "Successfully migrated an old-style AOF file ({filename}) into the AOF directory ({}).",
        parts.server.config.appenddirname
    ));
    Ok(Some(parts.server.aof.manifest.clone()))
}

/// Loads one file of the AOF: an RDB (a base) followed by commands, or only commands.
fn load_file(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    dir: &Path,
    name: &str,
) -> Result<FileLoad, AofError> {
    let path = dir.join(name);
    let file = File::open(&path).map_err(|e| {
        AofError(format!(
            "Fatal error: can't open the append log file {name} for reading: {e}"
        ))
    })?;
    if file.metadata().map(|m| m.len()).unwrap_or(0) == 0 {
        return Ok(FileLoad::Empty);
    }
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let is_rdb = reader.fill_buf().is_ok_and(|b| b.starts_with(b"REDIS"));
    if is_rdb {
        parts
            .server
            .log
            .notice("Reading RDB base file on AOF loading...");
        crate::services::rdb_saving::load_from(
            parts.ks,
            parts.server,
            parts.registry,
            &mut reader,
            false,
        )
        .map_err(|e| {
            AofError(format!(
                "Error reading the RDB base file {name}, AOF loading aborted ({})",
                e.0
            ))
        })?;
    }
    replay_commands(parts, client, &path, name, reader)
}

/// Redis's loop over an AOF's commands, with `aof-load-truncated`'s treatment of a short tail.
fn replay_commands<R: Read>(
    parts: &mut Parts<'_>,
    client: &mut ClientState,
    path: &Path,
    name: &str,
    reader: BufReader<R>,
) -> Result<FileLoad, AofError> {
    let mut input = Counting {
        inner: reader,
        offset: 0,
    };
    let base_offset = 0u64;
    let mut valid_up_to = base_offset;
    let mut valid_before_multi = base_offset;
    let delay = parts.server.config.key_load_delay;
    let bad_format = || {
        AofError(format!(
            "Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
        ))
    };
    let mut start_offset = None;
    loop {
        let mut line = Vec::new();
        if start_offset.is_none() {
            start_offset = Some(input.offset);
            valid_up_to = input.offset;
            valid_before_multi = input.offset;
        }
        let n = input.read_line(&mut line);
        if n == 0 {
            break;
        }
        if line[0] == b'#' {
            continue;
        }
        if line[0] != b'*' {
            return Err(bad_format());
        }
        if !line.ends_with(b"\n") {
            return truncated(parts, path, name, valid_up_to);
        }
        let argc = atoi(&line[1..]);
        if argc < 1 {
            return Err(bad_format());
        }
        // The counts and lengths are the file's word: room is made as the bytes arrive, so
        // that a corrupt header cannot make the loader allocate more than the file holds.
        let mut args = Vec::with_capacity((argc as usize).min(1024));
        for _ in 0..argc {
            let mut header = Vec::new();
            let n = input.read_line(&mut header);
            if n == 0 || !header.ends_with(b"\n") {
                return truncated(parts, path, name, valid_up_to);
            }
            if header[0] != b'$' {
                return Err(bad_format());
            }
            let len = atoi(&header[1..]).max(0) as u64;
            let Some(mut arg) = input.read_bulk(len + 2) else {
                return truncated(parts, path, name, valid_up_to);
            };
            arg.truncate(len as usize);
            args.push(Bytes::from(arg));
        }
        let command = match crate::kernel::gates::resolve(parts.registry, &args) {
            Ok(command) => command,
            Err(_) => {
                return Err(AofError(format!(
                    "Unknown command '{}' reading the append only file {name}",
                    String::from_utf8_lossy(&args[0])
                )))
            }
        };
        if command.full_name == "multi" {
            valid_before_multi = valid_up_to;
        }
        let in_multi = client.multi.is_some();
        if in_multi && command.full_name != "exec" {
            let flags = command.spec.flags;
            if let Some(transaction) = client.multi.as_mut() {
                transaction.queue(command.id, flags, args, false);
            }
        } else {
            let mut out = BytesMut::new();
            let now_us = parts.server.clock.now_us();
            crate::kernel::call::call(
                parts,
                client,
                command,
                &args,
                &mut out,
                Version::Resp2,
                now_us,
                How {
                    counted: false,
                    may_block: false,
                    woken_by: None,
                    from_script: false,
                    nested: false,
                    script: None,
                },
            );
        }
        valid_up_to = input.offset;
        if delay > 0 {
            std::thread::sleep(Duration::from_micros(delay as u64));
        }
    }
    if client.multi.is_some() {
        parts.server.log.warning(&format!(
            "Revert incomplete MULTI/EXEC transaction in AOF file {name}"
        ));
        client.multi = None;
        return truncated(parts, path, name, valid_before_multi);
    }
    Ok(FileLoad::Ok)
}

/// A short read: truncate and go on under `aof-load-truncated yes`, else fail.
fn truncated(
    parts: &mut Parts<'_>,
    path: &Path,
    name: &str,
    valid_up_to: u64,
) -> Result<FileLoad, AofError> {
    let log = &parts.server.log;
    if parts.server.config.aof_load_truncated {
        log.warning(&format!(
            "!!! Warning: short read while loading the AOF file {name}!!!"
        ));
        log.warning(&format!(
            "!!! Truncating the AOF {name} at offset {valid_up_to} !!!"
        ));
        let cut = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(valid_up_to));
        match cut {
            Ok(()) => {
                log.warning(&format!(
                    "AOF {name} loaded anyway because aof-load-truncated is enabled"
                ));
                return Ok(FileLoad::Truncated);
            }
            Err(e) => log.warning(&format!("Error truncating the AOF file {name}: {e}")),
        }
    }
    Err(AofError(format!(
        "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
    )))
}

fn atoi(bytes: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(bytes);
    let digits: String = text
        .trim()
        .chars()
        .enumerate()
        .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && *c == '-'))
        .map(|(_, c)| c)
        .collect();
    digits.parse().unwrap_or(0)
}

/// A buffered reader that knows its offset in the file.
struct Counting<R> {
    inner: BufReader<R>,
    offset: u64,
}

impl<R: Read> Counting<R> {
    /// Reads a line (up to and including `\n`); 0 at the end.
    fn read_line(&mut self, line: &mut Vec<u8>) -> usize {
        let n = self.inner.read_until(b'\n', line).unwrap_or(0);
        self.offset += n as u64;
        n
    }

    /// Reads exactly `len` bytes, or None at the end of the file. The buffer grows with what
    /// is read (from at most 1 MB up front), not with what `len` claims.
    fn read_bulk(&mut self, len: u64) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(len.min(1 << 20) as usize);
        let n = (&mut self.inner).take(len).read_to_end(&mut out).ok()?;
        self.offset += n as u64;
        (n as u64 == len).then_some(out)
    }
}

/// After start-up with `appendonly yes`: creates the directory, a base of the dataset if the
/// AOF is new, opens the incremental file to append to, writes the manifest and deletes history
/// files (Redis's `aofOpenIfNeededOnServerStart` and `aofDelHistoryFiles`).
pub fn open_on_start(ks: &mut Keyspace, server: &mut ServerState) -> Result<(), AofError> {
    let dir = dir_of(&server.config);
    std::fs::create_dir_all(&dir).map_err(|e| {
        AofError(format!(
            "Can't open or create append-only dir {}: {e}",
            dir.display()
        ))
    })?;
    let filename = server.config.appendfilename.clone();
    if server.aof.manifest.base.is_none() && server.aof.manifest.incr.is_empty() {
        let rdb = server.config.aof_use_rdb_preamble;
        let name = server.aof.manifest.new_base(&filename, rdb);
        let target = Target {
            path: dir.join(&name),
            temp: dir.join(format!(
                "temp-rewriteaof-{}.aof",
                server.persistence.temp_tag
            )),
        };
        write_base_now(ks, server, &target, rdb)
            .map_err(|e| AofError(format!("Write error writing the AOF base: {e}")))?;
        server
            .log
            .notice(&format!("Creating AOF base file {name} on server start"));
    }
    let opened_existing = !server.aof.manifest.incr.is_empty();
    let name = match server.aof.manifest.incr.last() {
        Some(f) => f.name.clone(),
        None => server.aof.manifest.new_incr(&filename),
    };
    let appender = Appender::open(&dir.join(&name), !opened_existing, server.faults.disk())
        .map_err(|e| AofError(format!("Can't open the append-only file {name}: {e}")))?;
    server.aof.appender = Some(appender);
    server
        .aof
        .persist_manifest(&dir, &filename)
        .map_err(|e| AofError(format!("Can't persist the AOF manifest: {e}")))?;
    delete_history(server);
    server.aof.status = AofStatus::On;
    ks.stream.set_aof(true);
    server.log.notice(&format!(
        "{} AOF incr file {name} on server start",
        if opened_existing {
            "Opening"
        } else {
            "Creating"
        }
    ));
    Ok(())
}

/// Writes what the write stream produced for the AOF to its file (Redis's
/// `flushAppendOnlyFile`): called by the I/O layer before any reply leaves (so that under
/// `always` a reply is sent only once its write is on disk), by the tick, and when stopping.
pub fn flush(ks: &mut Keyspace, server: &mut ServerState) {
    if ks.stream.aof_pending() {
        let bytes = ks.stream.take_aof();
        server.aof.buf.extend_from_slice(&bytes);
    }
    let aof = &mut server.aof;
    if aof.buf.is_empty() {
        return;
    }
    let Some(appender) = aof.appender.as_ref() else {
        return;
    };
    if aof.flush_sleep_us > 0 {
        std::thread::sleep(Duration::from_micros(aof.flush_sleep_us));
    }
    let policy = server.config.appendfsync;
    let result = appender.append(
        &aof.buf,
        policy == AppendFsync::Always,
        policy == AppendFsync::Everysec,
    );
    match result {
        Ok(()) => {
            aof.current_size += aof.buf.len() as u64;
            aof.buf.clear();
            if !aof.last_write_ok {
                server
                    .log
                    .warning("AOF write error looks solved, Redis can write again.");
            }
            aof.last_write_ok = true;
        }
        Err(AppendError::Fsync(e)) => server.stop_fatally(
            &format!(
                "Can't persist AOF for fsync error when the AOF fsync policy is 'always': {}. Exiting...",
                os_error_text(&e)
            ),
        ),
        Err(AppendError::Write {
            error,
            short,
            left,
            undo,
        }) => write_failed(server, &error, short, left, undo.as_ref()),
    }
}

/// A failed AOF write, as Redis's `flushAppendOnlyFile` handles it: logged (one line per 30 s),
/// then under `always` the server stops — the replies of the writes are waiting and the writes
/// cannot be undone — and otherwise the bytes stay buffered for the next try, writes are refused
/// with `-MISCONF` meanwhile ([`disk_error_message`]), and the tick tries again.
fn write_failed(
    server: &mut ServerState,
    error: &std::io::Error,
    short: usize,
    left: usize,
    undo: Option<&std::io::Error>,
) {
    let now_s = server.clock.now_ms().div_euclid(1000);
    let aof = &mut server.aof;
    let can_log = now_s - aof.last_write_error_log_s > 30 || aof.last_write_ok;
    if can_log {
        aof.last_write_error_log_s = now_s;
    }
    let expected = aof.buf.len();
    if short == 0 {
        aof.last_write_errno = error.raw_os_error().unwrap_or(libc::EIO);
        if can_log {
            server.log.warning(&format!(
                "Error writing to the AOF file: {}",
                os_error_text(error)
            ));
        }
    } else {
        aof.last_write_errno = libc::ENOSPC;
        if can_log {
            server.log.warning(&format!(
                "Short write while writing to the AOF file: (nwritten={short}, expected={expected})"
            ));
            if let Some(undo) = undo {
                server.log.warning(&format!("Could not remove short write from the append-only file.  Redis may refuse to load the AOF the next time it starts.  ftruncate: {}", os_error_text(undo)));
            }
        }
    }
    if server.config.appendfsync == AppendFsync::Always {
        server.stop_fatally(
            "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...",
        );
        return;
    }
    let aof = &mut server.aof;
    aof.last_write_ok = false;
    // What stayed in the file (the cut failed) is not written again.
    aof.current_size += left as u64;
    aof.buf.drain(..left);
}

/// The tick's look at the background fsync: its failure is logged once, as Redis's fsync job
/// logs the first failure in a row.
pub fn watch_fsync(server: &mut ServerState) {
    let failed = server.aof.appender.as_ref().and_then(|a| a.fsync_error());
    match failed {
        Some(errno) if !server.aof.fsync_error_logged => {
            server.aof.fsync_error_logged = true;
            let text = os_error_text(&std::io::Error::from_raw_os_error(errno));
            server
                .log
                .warning(&format!("Fail to fsync the AOF file: {text}"));
        }
        None => server.aof.fsync_error_logged = false,
        _ => {}
    }
}

/// Writes and fsyncs everything appended so far (WAITAOF's local acknowledgement). True if the
/// file is in sync.
pub fn fsync_now(ks: &mut Keyspace, server: &mut ServerState) -> bool {
    flush(ks, server);
    server.aof.buf.is_empty()
        && server
            .aof
            .appender
            .as_ref()
            .is_some_and(|a| a.sync().is_ok())
}

/// Opens a base file of commands with its head written (see [`write_commands_head`]).
fn commands_base(
    server: &ServerState,
    target: &Target,
) -> Result<CommandWriter<BufWriter<File>>, SaveError> {
    let mut writer = aof_command_base::create(target)?;
    write_commands_head(server, target, &mut writer)?;
    Ok(writer)
}

/// The head of a base of commands: the timestamp annotation (`aof-timestamp-enabled`), then a
/// `FUNCTION LOAD` per library, as Redis's `rewriteAppendOnlyFileRio` begins. On failure the
/// temporary file goes.
fn write_commands_head<W: std::io::Write>(
    server: &ServerState,
    target: &Target,
    writer: &mut CommandWriter<W>,
) -> Result<(), SaveError> {
    let head = (|| {
        if server.config.aof_timestamp_enabled {
            writer.timestamp(server.clock.now_ms().div_euclid(1000))?;
        }
        if let Some(functions) = server.functions.get() {
            for library in functions.libraries() {
                writer.function(&library.code)?;
            }
        }
        Ok(())
    })();
    head.map_err(|error| {
        let _ = std::fs::remove_file(&target.temp);
        SaveError {
            step: "rewriteAppendOnlyFileRio",
            error,
        }
    })
}

/// Writes a base of the whole dataset now (a new AOF at start-up), as an RDB (`rdb`) or as
/// commands.
fn write_base_now(
    ks: &Keyspace,
    server: &ServerState,
    target: &Target,
    rdb: bool,
) -> Result<u64, SaveError> {
    if rdb {
        return crate::services::rdb_saving::write_file_now(ks, server, target, true);
    }
    let mut writer = commands_base(server, target)?;
    if let Err(e) = crate::model::snapshot::write_keyspace(ks, &mut writer, ClockInFile::Nothing) {
        let _ = std::fs::remove_file(&target.temp);
        return Err(e);
    }
    writer.commit(target)
}

/// Opens a base file, an RDB (`rdb`) or commands, and hands it to a writer thread for a
/// background rewrite. Where the binary can start a child process, the base goes through it
/// (as BGSAVE's file, see `rdb_saving::start_background_writer`), whichever its format: with its
/// pid, which Redis's tests and SHUTDOWN look for.
fn start_base_writer(
    server: &ServerState,
    target: &Target,
    rdb: bool,
) -> Result<(WriterThread, Option<u32>), SaveError> {
    if rdb {
        return crate::services::rdb_saving::start_background_writer(server, target, true);
    }
    let delay = server.config.rdb_key_save_delay;
    let spawned = |error| SaveError {
        step: "thread",
        error,
    };
    let Some(program) = server.save_child.as_deref() else {
        let writer = commands_base(server, target)?;
        let thread = WriterThread::spawn(target.clone(), writer, delay).map_err(spawned)?;
        return Ok((thread, None));
    };
    let oom = crate::base::oom::score_for(
        &server.config.process,
        crate::base::config::process::OomClass::BackgroundChild,
    );
    let kind = crate::base::formats::rdb_child::ChildFileKind::AofRewrite;
    let (target, out, pid) =
        crate::base::formats::rdb_file::spawn_file_child(program, &target.path, oom, kind)?;
    let mut writer = CommandWriter::new(out);
    write_commands_head(server, &target, &mut writer)?;
    let thread = WriterThread::spawn(target, writer, delay).map_err(spawned)?;
    Ok((thread, Some(pid)))
}

/// `BGREWRITEAOF`'s work, or the first rewrite of `CONFIG SET appendonly yes`: a new base from a
/// point-in-time snapshot, and a new incremental file from the same point on.
pub fn rewrite_start(ks: &mut Keyspace, server: &mut ServerState) -> Result<(), String> {
    let started = begin_rewrite(ks, server);
    if started.is_err() {
        // A rewrite that cannot start counts as a failed one (Redis's
        // `rewriteAppendOnlyFileBackground` sets `aof_lastbgrewrite_status` so).
        server.aof.last_rewrite_ok = false;
    }
    started
}

fn begin_rewrite(ks: &mut Keyspace, server: &mut ServerState) -> Result<(), String> {
    let dir = dir_of(&server.config);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let filename = server.config.appendfilename.clone();
    // Everything before this point belongs to the current increment.
    flush(ks, server);
    let mut manifest = server.aof.manifest.clone();
    let incr_name = manifest.new_incr(&filename);
    let rdb_base = server.config.aof_use_rdb_preamble;
    let base_name = manifest.clone().new_base(&filename, rdb_base);
    let temp = dir.join(format!(
        "temp-rewriteaof-bg-{}.aof",
        server.persistence.temp_tag
    ));
    let target = Target {
        path: dir.join(&base_name),
        temp,
    };
    let (thread, child) =
        start_base_writer(server, &target, rdb_base).map_err(|e| e.to_string())?;
    // The child's own temporary file is the one to remove if the rewrite fails from here.
    let target = Target {
        temp: match child {
            Some(pid) => dir.join(format!("temp-rewriteaof-bg-{pid}.aof")),
            None => target.temp,
        },
        ..target
    };
    // The new increment takes the writes from now on: opened (and, when the AOF is on, listed
    // in the manifest) before the snapshot's point in time. With the AOF off, a rewrite writes
    // only a base.
    if server.aof.status != AofStatus::Off {
        // Until the new manifest is on disk the AOF stays as it was (a full disk fails here):
        // the base's temporary file and the new increment go.
        let undo = |error: String| {
            let _ = std::fs::remove_file(&target.temp);
            let _ = std::fs::remove_file(dir.join(&incr_name));
            error
        };
        let appender = Appender::open(&dir.join(&incr_name), true, server.faults.disk())
            .map_err(|e| undo(e.to_string()))?;
        if server.aof.status == AofStatus::On {
            let old = std::mem::replace(&mut server.aof.manifest, manifest);
            if let Err(e) = server.aof.persist_manifest(&dir, &filename) {
                server.aof.manifest = old;
                return Err(undo(e.to_string()));
            }
        } else {
            server.aof.pending_incr = Some((incr_name.clone(), manifest));
        }
        // The new file starts with a SELECT; from now on the stream is recorded for it.
        ks.stream.set_aof(true);
        ks.stream.aof_reselect();
        server.aof.appender = Some(appender);
        server.log.notice(&format!(
            "Creating AOF incr file {incr_name} on background rewrite"
        ));
    }
    // Commands carry no access clock; an RDB base does, as Redis's preamble.
    let clock = if rdb_base {
        crate::services::rdb_saving::clock_in_file(ks, server)
    } else {
        ClockInFile::Nothing
    };
    let walk = SnapshotWalk::begin(ks, thread, clock);
    server.persistence.forks += 1;
    server.aof.rewrite = Some(crate::model::aof_state::Rewrite {
        walk,
        started: Instant::now(),
        base_name,
        rdb_base,
        child,
    });
    crate::services::child_processes::update_resize_policy(ks, server);
    server.aof.rewrite_scheduled = false;
    server.log.notice(&match child {
        Some(pid) => format!("Background append only file rewriting started by pid {pid}"),
        None => "Background append only file rewriting started (forkless snapshot)".to_string(),
    });
    Ok(())
}

/// Advances a running rewrite; finishes it when its writer is done. True while one runs.
pub fn rewrite_step(ks: &mut Keyspace, server: &mut ServerState, budget: Duration) -> bool {
    let Some(job) = server.aof.rewrite.as_mut() else {
        return false;
    };
    if job.walk.advance(ks, budget) {
        rewrite_done(ks, server);
        return false;
    }
    true
}

/// True if a running rewrite waits for its writer.
pub fn rewrite_waiting(server: &ServerState) -> bool {
    server
        .aof
        .rewrite
        .as_ref()
        .is_some_and(|job| job.walk.waiting())
}

fn rewrite_done(ks: &mut Keyspace, server: &mut ServerState) {
    let Some(job) = server.aof.rewrite.take() else {
        return;
    };
    let dir = dir_of(&server.config);
    let filename = server.config.appendfilename.clone();
    let elapsed = job.started.elapsed().as_secs() as i64;
    server.aof.last_rewrite_time_sec = elapsed;
    match job.walk.into_writer().join() {
        Ok(size) => {
            let aof = &mut server.aof;
            if let Some((_, manifest)) = aof.pending_incr.take() {
                aof.manifest = manifest;
            }
            let base = aof.manifest.new_base(&filename, job.rdb_base);
            debug_assert_eq!(base, job.base_name);
            aof.manifest.retire_rewritten_incr(aof.appender.is_some());
            if let Err(e) = aof.persist_manifest(&dir, &filename) {
                server
                    .log
                    .warning(&format!("Can't persist the AOF manifest: {e}"));
                server.aof.last_rewrite_ok = false;
                server.aof.rewrite_failures += 1;
                return;
            }
            aof.base_size = size;
            aof.current_size = size;
            aof.rewrites += 1;
            aof.rewrite_failures = 0;
            aof.last_rewrite_ok = true;
            // History files go, and the manifest is written again without them.
            delete_history(server);
            let aof = &mut server.aof;
            if aof.status == AofStatus::WaitRewrite {
                aof.status = AofStatus::On;
                server
                    .log
                    .notice("Background AOF rewrite finished successfully");
            }
            server
                .log
                .notice("Background AOF rewrite terminated with success");
        }
        Err(e) => {
            let message = match crate::base::formats::rdb_child::killed_by_signal(&e.error) {
                Some(signal) => format!("Background AOF rewrite terminated by signal {signal}"),
                None => format!("Background AOF rewrite failed: {}: {}", e.step, e.error),
            };
            rewrite_failed(ks, server, &message);
        }
    }
}

/// A rewrite that ended without a base (its writer failed, or its child died), as Redis's
/// `backgroundRewriteDoneHandler` ends it: logged, `aof_last_bgrewrite_status:err`, the
/// increment it opened kept in the manifest (the next rewrite opens another). The first
/// rewrite of `CONFIG SET appendonly yes` removes the increment it opened, which no manifest
/// lists, stops recording writes for it (the next rewrite's base will hold them) and is tried
/// again (Redis's `aofDelTempIncrAofFile` and `aof_rewrite_scheduled`).
fn rewrite_failed(ks: &mut Keyspace, server: &mut ServerState, message: &str) {
    server.log.warning(message);
    server.aof.last_rewrite_ok = false;
    server.aof.rewrite_failures += 1;
    if server.aof.status != AofStatus::WaitRewrite {
        return;
    }
    if let Some((incr_name, _)) = server.aof.pending_incr.take() {
        server.log.notice(&format!(
            "Removing the temp incr aof file {incr_name} in the background"
        ));
        server.aof.appender = None;
        let _ = std::fs::remove_file(dir_of(&server.config).join(&incr_name));
    }
    ks.stream.set_aof(false);
    let _ = ks.stream.take_aof();
    server.aof.buf.clear();
    server.aof.rewrite_scheduled = true;
}

/// A rewrite whose child process died before its end (killed, as Redis's tests do with
/// `kill -9`) fails now rather than when its writer next writes, which `rdb-key-save-delay` may
/// put off for long (Redis's `checkChildrenDone`). True if it did.
fn rewrite_child_died(ks: &mut Keyspace, server: &mut ServerState) -> bool {
    let child = server.aof.rewrite.as_ref().and_then(|job| job.child);
    let Some(end) = crate::base::formats::rdb_child::failed_end(child) else {
        return false;
    };
    if let Some(job) = server.aof.rewrite.take() {
        server.aof.last_rewrite_time_sec = job.started.elapsed().as_secs() as i64;
        job.walk.abort(ks);
    }
    let message = end.describe(
        "Background AOF rewrite",
        "Background AOF rewrite terminated with error",
    );
    rewrite_failed(ks, server, &message);
    true
}

/// `CONFIG SET appendonly yes` at run time: the first rewrite makes the base — scheduled for
/// the tick behind a BGSAVE, or when asked inside a transaction (`in_exec`), as Redis's
/// `startAppendOnly` does.
pub fn start(ks: &mut Keyspace, server: &mut ServerState, in_exec: bool) -> Result<(), String> {
    if server.aof.status != AofStatus::Off {
        return Ok(());
    }
    server.aof.status = AofStatus::WaitRewrite;
    if server.persistence.bgsave.is_some() {
        server.aof.rewrite_scheduled = true;
        server.log.warning("AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible.");
        return Ok(());
    }
    if in_exec {
        server.aof.rewrite_scheduled = true;
        server.log.warning("AOF was enabled during a transaction. An AOF background was scheduled to start when possible.");
        return Ok(());
    }
    rewrite_start(ks, server).inspect_err(|_| {
        server.aof.status = AofStatus::Off;
        ks.stream.set_aof(false);
        server.log.warning("Redis needs to enable the AOF but can't trigger a background AOF rewrite operation. Check the above logs for more info about the error.");
    })
}

/// `CONFIG SET appendonly no`: flush, fsync, close.
pub fn stop(ks: &mut Keyspace, server: &mut ServerState) {
    if server.aof.status == AofStatus::Off {
        return;
    }
    flush(ks, server);
    ks.stream.set_aof(false);
    if let Some(appender) = server.aof.appender.take() {
        let _ = appender.sync();
    }
    kill_rewrite(ks, server);
    server.aof.status = AofStatus::Off;
    server.aof.rewrite_scheduled = false;
    server.aof.pending_incr = None;
    server.aof.buf.clear();
}

/// The tick: a scheduled rewrite, or an automatic one when the AOF grew by
/// `auto-aof-rewrite-percentage` over its size after the last rewrite.
pub fn cron(ks: &mut Keyspace, server: &mut ServerState) {
    if server.aof.rewrite.is_some() {
        if !rewrite_child_died(ks, server) {
            rewrite_step(ks, server, Duration::from_millis(1));
        }
        return;
    }
    if server.aof.status == AofStatus::Off && !server.aof.rewrite_scheduled {
        return;
    }
    flush(ks, server);
    watch_fsync(server);
    if server.persistence.bgsave.is_some() {
        return;
    }
    if server.aof.rewrite_scheduled {
        if !rewrite_limited(server) {
            let _ = rewrite_start(ks, server);
        }
        return;
    }
    let c = &server.config;
    let aof = &server.aof;
    if aof.status == AofStatus::On
        && c.auto_aof_rewrite_percentage > 0
        && aof.current_size > c.auto_aof_rewrite_min_size
    {
        let base = aof.base_size.max(1);
        let growth = (aof.current_size * 100 / base).saturating_sub(100);
        if growth >= c.auto_aof_rewrite_percentage && !rewrite_limited(server) {
            server.log.notice(&format!(
                "Starting automatic rewriting of AOF on {growth}% growth"
            ));
            let _ = rewrite_start(ks, server);
        }
    }
}

/// True if repeated failures hold an automatic or scheduled rewrite back now (logged when the
/// wait begins, in Redis's words).
fn rewrite_limited(server: &mut ServerState) -> bool {
    let now_s = server.clock.now_ms().div_euclid(1000);
    match server.aof.rewrite_limited(now_s) {
        Ok(()) => false,
        Err(started) => {
            if let Some(minutes) = started {
                server.log.warning(&format!(
                    "Background AOF rewrite has repeatedly failed and triggered the limit, will retry in {minutes} minutes"
                ));
            }
            true
        }
    }
}

/// True if a rewrite is running.
pub fn rewrite_in_progress(server: &ServerState) -> bool {
    server.aof.rewrite.is_some()
}

/// Stops a running rewrite the way Redis kills its rewrite child when it shuts down: the walk is
/// abandoned, the temporary base file removed, and the manifest keeps the increment the rewrite
/// opened (so everything written since is still loaded on restart).
pub fn rewrite_kill(ks: &mut Keyspace, server: &mut ServerState) {
    if server.aof.rewrite.is_some() {
        server
            .log
            .warning("There is a child rewriting the AOF. Killing it!");
        kill_rewrite(ks, server);
    }
}

/// Abandons a running rewrite, its child killed and its temporary base removed, logged as
/// Redis's `killAppendOnlyChild` logs it.
fn kill_rewrite(ks: &mut Keyspace, server: &mut ServerState) {
    let Some(job) = server.aof.rewrite.take() else {
        return;
    };
    server.log.notice(&match job.child {
        Some(pid) => format!("Killing running AOF rewrite child: {pid}"),
        None => "Killing running AOF rewrite (forkless)".to_string(),
    });
    job.walk.abort(ks);
}

#[cfg(test)]
mod tests {
    use crate::io::test_harness::Harness;
    use crate::model::aof_state::Manifest;

    /// Loads an AOF made of one incremental file holding `commands`, as at start-up, into a
    /// fresh harness; returns the harness and the loader's result.
    fn load_incr(name: &str, commands: &[u8]) -> (Harness, Result<bool, super::AofError>) {
        let root = std::env::temp_dir().join(format!("embedis-aof-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("appendonlydir");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("appendonly.aof.manifest"),
            "file appendonly.aof.1.incr.aof seq 1 type i\n",
        )
        .unwrap();
        std::fs::write(dir.join("appendonly.aof.1.incr.aof"), commands).unwrap();
        let mut h = Harness::new();
        h.engine.server.config.dir = root.display().to_string();
        let result = super::load_at_start(&mut h.engine.parts());
        let _ = std::fs::remove_dir_all(&root);
        (h, result)
    }

    /// The counts in an AOF are the file's word. A bulk claiming 99,999,999,999,999 bytes, or a
    /// command claiming as many arguments, made the loader allocate that much up front (an
    /// abort, not an error) before finding the file ends; now it reads what is there and treats
    /// the rest as the truncated tail Redis would (`aof-load-truncated yes`).
    #[test]
    fn huge_counts_in_an_aof_are_a_truncated_tail_not_an_allocation() {
        for (name, tail) in [
            ("bulk", &b"*2\r\n$3\r\nGET\r\n$99999999999999\r\nabc"[..]),
            ("argc", &b"*99999999999999\r\n$4\r\nPING\r\n"[..]),
        ] {
            let mut file = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n".to_vec();
            file.extend_from_slice(tail);
            let (mut h, result) = load_incr(name, &file);
            assert!(result.is_ok(), "{name}: {:?}", result.err());
            assert_eq!(h.run_text("GET k"), "$1\r\nv\r\n", "{name}");
        }
    }

    #[test]
    fn manifest_round_trips_and_checks_as_redis() {
        let text = "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\nfile appendonly.aof.2.incr.aof seq 2 type i\n";
        let m = Manifest::parse(text).unwrap();
        assert_eq!(m.to_text(), text);
        assert_eq!(m.base_seq, 1);
        assert_eq!(m.incr_seq, 2);
        assert_eq!(
            Manifest::parse("file a seq 2 type i\nfile b seq 1 type i\n").unwrap_err(),
            "Found a non-monotonic sequence number"
        );
        assert_eq!(
            Manifest::parse("file a/b seq 1 type b\n").unwrap_err(),
            "File can't be a path, just a filename"
        );
        assert_eq!(
            Manifest::parse("").unwrap_err(),
            "Found an empty AOF manifest"
        );
        assert_eq!(
            Manifest::parse("file a seq 1 type x\n").unwrap_err(),
            "Unknown AOF file type"
        );
        // Redis reads lines with fgets into 1024 bytes: a longer line, or a last line without
        // its newline, is "too long"; a comment of any length is skipped whole.
        let long = format!("file {} seq 1 type b\n", "a".repeat(1010));
        assert_eq!(
            Manifest::parse(&long).unwrap_err(),
            "The AOF manifest file contains too long line"
        );
        let fits = format!("file {} seq 1 type b\n", "a".repeat(1000));
        assert!(Manifest::parse(&fits).is_ok());
        assert_eq!(
            Manifest::parse("file a seq 1 type b").unwrap_err(),
            "The AOF manifest file contains too long line"
        );
        let mut m = m;
        assert_eq!(
            m.clone().new_base("appendonly.aof", false),
            "appendonly.aof.2.base.aof"
        );
        assert_eq!(
            m.new_base("appendonly.aof", true),
            "appendonly.aof.2.base.rdb"
        );
        m.retire_rewritten_incr(true);
        assert_eq!(
            m.to_text(),
            "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.1.incr.aof seq 1 type h\nfile appendonly.aof.1.base.rdb seq 1 type h\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
        );
    }
}
