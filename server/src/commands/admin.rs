//! Server administration: TIME, LASTSAVE, ROLE, WAIT, MONITOR, SHUTDOWN and DEBUG.
//!
//! ROLE reports the replication role as Redis does: a master with its replicas and the offsets
//! they acknowledged, or a replica with its link's state. WAIT blocks until enough replicas
//! acknowledge what was written so far, or its timeout passes; WAITAOF's replicas never
//! acknowledge an fsync here, so asking for any waits out the timeout. SHUTDOWN reads its flags
//! and runs the shutdown sequence of [`crate::services::shutdown`], blocking its client while the
//! sequence waits for lagging replicas.
//!
//! DEBUG is one command with its subcommands parsed by the handler, as in Redis; the engine lets
//! it run only where `enable-debug-command` allows. Of Redis's many DEBUG subcommands embedis has
//! the ones that make sense for it: SLEEP (which, as in Redis, stops the whole server),
//! SET-ACTIVE-EXPIRE, PAUSE-CRON, OBJECT and LOG here, PROTOCOL, ERROR, DIGEST, DIGEST-VALUE and two inert
//! switches in [`crate::commands::debug_internals`] — plus embedis's own test controls (CLOCK, FAULT, PAUSE,
//! DROP-CONNECTIONS), which live in [`crate::commands::debug_controls`].

use crate::base::config::process::ShutdownFlags;
use crate::base::cstr::c_str;
use crate::base::error::{CmdResult, Error};
use crate::base::value::{lru_clock, Value};
use crate::commands::common::{deadline_from_ms, write_help};
use crate::commands::debug_controls;
use crate::commands::debug_internals::{self, atoi};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::blocking::{BlockReason, Blocked, TimeoutReply};
use crate::services::shutdown::Step;

const LSF: Flags = Flags::LOADING.union(Flags::STALE).union(Flags::FAST);
const ADMIN: Flags = Flags::ADMIN
    .union(Flags::NOSCRIPT)
    .union(Flags::LOADING)
    .union(Flags::STALE);

fn time(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.array(2);
    ctx.out.bulk_integer(ctx.now_us.div_euclid(1_000_000));
    ctx.out.bulk_integer(ctx.now_us.rem_euclid(1_000_000));
    Ok(())
}

fn lastsave(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.integer(ctx.server.lastsave);
    Ok(())
}

fn role(ctx: &mut Ctx<'_>) -> CmdResult {
    let repl = &ctx.server.repl;
    if let Some(primary) = &repl.primary {
        // The link's state; the offset only once the stream is followed (-1 before).
        ctx.out.array(5);
        ctx.out.bulk(b"slave");
        ctx.out.bulk(primary.host.as_bytes());
        ctx.out.integer(i64::from(primary.port));
        ctx.out.bulk(primary.state.role_name().as_bytes());
        ctx.out.integer(if primary.client.is_some() {
            repl.offset as i64
        } else {
            -1
        });
        return Ok(());
    }
    ctx.out.array(3);
    ctx.out.bulk(b"master");
    ctx.out.integer(repl.offset as i64);
    // Only replicas whose sync has started (Redis lists the online ones).
    let synced: Vec<_> = repl.replicas.iter().filter(|r| r.is_synced()).collect();
    ctx.out.array(synced.len());
    for r in synced {
        ctx.out.array(3);
        ctx.out.bulk(r.ip.as_bytes());
        ctx.out.bulk(r.listening_port.to_string().as_bytes());
        ctx.out.bulk(r.ack_offset.to_string().as_bytes());
    }
    Ok(())
}

/// WAIT numreplicas timeout (Redis's `waitCommand`): blocks until `numreplicas` replicas have
/// acknowledged this client's writes (the offset after its last command that propagated, not
/// the stream's end: other clients' later writes are not waited for, and a client that never
/// wrote has every replica's acknowledgement), or the timeout (0 = for ever) passes; answers
/// how many did. The turn's end asks the replicas for an acknowledgement (REPLCONF GETACK).
/// Inside MULTI or a script it counts at once.
fn wait(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.server.repl.primary.is_some() {
        return Err(Error::msg(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        ));
    }
    let wanted = ctx.int_arg(1)?;
    let deadline = deadline_from_ms(ctx, 2)?;
    let offset = ctx.client.woff;
    let acked = ctx.server.repl.acknowledged(offset);
    if acked as i64 >= wanted || !ctx.may_block {
        ctx.out.integer(acked as i64);
        return Ok(());
    }
    ctx.block = Some(Blocked {
        args: ctx.args.to_vec(),
        reason: BlockReason::Replicas {
            offset,
            wanted: wanted as usize,
        },
        deadline_ms: (deadline != 0).then_some(deadline),
    });
    let id = ctx.client.id;
    ctx.server.repl.waiting.push(id);
    ctx.server.repl.get_ack = true;
    Ok(())
}

/// WAITAOF numlocal numreplicas timeout, as Redis 7.2 answers it without an AOF or replicas:
/// nothing is ever fsynced, so asking for none answers `[0, 0]` at once, asking for replicas
/// waits out the timeout (0 = for ever) and then answers `[0, 0]`, asking for a local fsync is
/// refused.
fn waitaof(ctx: &mut Ctx<'_>) -> CmdResult {
    let deadline = deadline_from_ms(ctx, 3)?;
    let count = |i: usize| -> CmdResult<i64> {
        let n = ctx.int_arg(i)?;
        if n < 0 {
            return Err(Error::msg("ERR value is out of range, must be positive"));
        }
        Ok(n)
    };
    let numlocal = count(1)?;
    let numreplicas = count(2)?;
    // With the AOF on, this client's writes are in the file and fsynced once this returns
    // (everything before this command is flushed and synced now): one local acknowledgement.
    let aof_on = ctx.server.aof.status == crate::model::aof_state::AofStatus::On;
    if numlocal > 0 && !aof_on {
        return Err(Error::msg(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        ));
    }
    let local = i64::from(aof_on && crate::services::aof::fsync_now(ctx.ks, ctx.server));
    if numreplicas == 0 || !ctx.may_block {
        ctx.out.array(2);
        ctx.out.integer(local);
        ctx.out.integer(0);
        return Ok(());
    }
    let timeout_reply = if local == 1 {
        TimeoutReply::LocalPair
    } else {
        TimeoutReply::ZeroPair
    };
    ctx.block = Some(Blocked {
        args: ctx.args.to_vec(),
        reason: BlockReason::Wait(timeout_reply),
        deadline_ms: (deadline != 0).then_some(deadline),
    });
    Ok(())
}

fn monitor(ctx: &mut Ctx<'_>) -> CmdResult {
    // Inside EXEC (where nothing may block) every command owes exactly one reply.
    if !ctx.may_block {
        return Err(Error::msg(
            "ERR MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    // Already monitoring: Redis ignores the command, without a reply.
    if ctx.client.monitor {
        return Ok(());
    }
    ctx.client.monitor = true;
    ctx.server.monitors.push(ctx.client.id);
    ctx.out.ok();
    Ok(())
}

fn shutdown(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut flags = 0;
    let mut abort = false;
    for i in 1..ctx.argc() {
        if ctx.arg_is(i, "nosave") {
            flags |= ShutdownFlags::NOSAVE;
        } else if ctx.arg_is(i, "save") {
            flags |= ShutdownFlags::SAVE;
        } else if ctx.arg_is(i, "now") {
            flags |= ShutdownFlags::NOW;
        } else if ctx.arg_is(i, "force") {
            flags |= ShutdownFlags::FORCE;
        } else if ctx.arg_is(i, "abort") {
            abort = true;
        } else {
            return Err(Error::Syntax);
        }
    }
    let flags = ShutdownFlags(flags);
    if (abort && flags.0 != 0)
        || (flags.has(ShutdownFlags::NOSAVE) && flags.has(ShutdownFlags::SAVE))
    {
        return Err(Error::Syntax);
    }
    if abort {
        if !crate::services::shutdown::abort(ctx.server) {
            return Err(Error::msg("ERR No shutdown in progress."));
        }
        ctx.out.ok();
        return Ok(());
    }
    if !flags.has(ShutdownFlags::NOW) && !ctx.may_block {
        return Err(Error::msg(
            "ERR SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client",
        ));
    }
    // While a script is busy only SHUTDOWN NOSAVE may stop the server (see crate::services::busy).
    if let Some(running) = &ctx.server.running_script {
        if !flags.has(ShutdownFlags::NOSAVE) {
            return Err(crate::kernel::gates::busy_error(running.kind));
        }
    }
    match crate::services::shutdown::prepare(ctx.ks, ctx.server, flags) {
        // As in Redis, the caller gets no reply: the connection closes as the server stops.
        Step::Done => ctx.client.close_after_reply = true,
        // The client waits with the shutdown: the process ends, or the shutdown fails and it
        // gets the error the others blocked in SHUTDOWN get.
        Step::Waiting => {
            ctx.block = Some(Blocked {
                args: ctx.args.to_vec(),
                reason: BlockReason::Shutdown,
                deadline_ms: None,
            })
        }
        Step::Failed => return Err(Error::msg("ERR Errors trying to SHUTDOWN. Check logs.")),
    }
    Ok(())
}

const DEBUG_HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "AOF-FLUSH-SLEEP <microsec>",
    "    The server sleeps before each write to the AOF (for tests).",
    "DIGEST",
    "    A hex signature of the whole dataset (Redis's, for the same data).",
    "DIGEST-VALUE <key> [<key> ...]",
    "    A hex signature of each key's value (zeros for a missing key).",
    "ERROR <string>",
    "    Replies with <string> as an error line, for testing clients.",
    "LOG <message>",
    "    Writes <message> to the server log.",
    "SEGFAULT",
    "    Crashes the server with signal 11 (SIGSEGV): a crash report goes to the log.",
    "OBJECT <key>",
    "    Shows how the value of <key> is stored.",
    "LOADAOF",
    "    Flushes the AOF, empties the dataset and loads the AOF back.",
    "RELOAD [MERGE] [NOFLUSH] [NOSAVE]",
    "    Saves the RDB file, empties the dataset and loads the file back. MERGE: keys and",
    "    libraries in the file replace loaded ones; NOFLUSH: keep the dataset; NOSAVE: load",
    "    the file as it is.",
    "PAUSE-CRON <0|1>",
    "    1 stops the periodic tick (timeouts, active expiry, the tracking table's limit);",
    "    0 resumes it.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Creates <count> string keys <prefix>:<n> (prefix 'key') holding value:<n>, cut or",
    "    zero-padded to <size> bytes if given. Existing keys are kept.",
    "REPLICATE <command> [<arg> ...]",
    "    Sends the command to the replicas alone (not run here, not in the AOF).",
    "PROTOCOL <type>",
    "    Replies with a sample of a reply type: string, integer, double, bignum, null,",
    "    array, set, map, attrib, push, verbatim, true or false.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    0 stops removing expired keys in the background (they still expire when",
    "    accessed); 1 resumes it.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    1 makes RESTORE skip the payload's CRC64 check (the RDB version is still checked);",
    "    0 checks it again.",
    "SET-DISABLE-DENY-SCRIPTS <0|1>",
    "    1 lets scripts call commands that are not allowed from scripts; 0 forbids it again.",
    "REPLYBUFFER PEAK-RESET-TIME <time>|RESIZING <0|1>",
    "    Accepted for Redis's tests; embedis has no reply-buffer resizing to tune.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    CONFIG REWRITE writing every parameter, those at their defaults too.",
    "SLEEP <seconds>",
    "    Stops the whole server for <seconds> (decimals allowed).",
    "HELP",
    "    Prints this help.",
];

/// C's `strtod` as DEBUG SLEEP uses it: the longest prefix that is a number, 0 if none.
fn strtod(bytes: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_start();
    (1..=text.len())
        .rev()
        .filter(|&end| text.is_char_boundary(end))
        .find_map(|end| text[..end].parse::<f64>().ok())
        .unwrap_or(0.0)
}

fn debug(ctx: &mut Ctx<'_>) -> CmdResult {
    let argc = ctx.argc();
    if ctx.arg_is(1, "help") && argc == 2 {
        // Redis's subcommands, then ours, then HELP itself (the last two lines).
        let (own, help) = DEBUG_HELP.split_at(DEBUG_HELP.len() - 2);
        let lines: Vec<&str> =
            [own, super::debug_cluster::HELP, debug_controls::HELP, help].concat();
        write_help(ctx, &lines);
    } else if let Some(result) = debug_controls::run(ctx) {
        return result;
    } else if let Some(result) = super::debug_cluster::run(ctx) {
        return result;
    } else if let Some(result) = debug_internals::run(ctx) {
        return result;
    } else if let Some(result) = super::debug_collections::run(ctx) {
        return result;
    } else if let Some(result) = super::debug_tables::run(ctx) {
        return result;
    } else if ctx.arg_is(1, "sleep") && argc == 3 {
        // Redis converts to whole microseconds in a C cast: anything out of range (or NaN)
        // becomes a negative duration, which sleeps not at all.
        let micros = strtod(ctx.arg(2)) * 1e6;
        if micros.is_finite() && micros >= 1.0 && micros < i64::MAX as f64 {
            std::thread::sleep(std::time::Duration::from_micros(micros as u64));
        }
        ctx.out.ok();
    } else if ctx.arg_is(1, "segfault") {
        // The crash Redis's DEBUG SEGFAULT causes, by the signal itself rather than a write to
        // an invalid address (which Rust leaves undefined).
        // SAFETY: raise only sends the signal to this thread.
        unsafe {
            libc::raise(libc::SIGSEGV);
        }
        ctx.out.ok();
    } else if ctx.arg_is(1, "config-rewrite-force-all") && argc == 2 {
        return super::configuration::rewrite_config(ctx, true);
    } else if ctx.arg_is(1, "reload") {
        return debug_reload(ctx);
    } else if ctx.arg_is(1, "loadaof") && argc == 2 {
        return debug_loadaof(ctx);
    } else if ctx.arg_is(1, "set-active-expire") && argc == 3 {
        ctx.server.active_expire = atoi(ctx.arg(2)) != 0;
        ctx.out.ok();
    } else if ctx.arg_is(1, "set-skip-checksum-validation") && argc == 3 {
        ctx.server.skip_checksum_validation = atoi(ctx.arg(2)) != 0;
        ctx.out.ok();
    } else if ctx.arg_is(1, "aof-flush-sleep") && argc == 3 {
        // Redis's atoi: garbage is 0 (off), a negative value would be a huge usleep there.
        ctx.server.aof.flush_sleep_us = atoi(ctx.arg(2)).max(0) as u64;
        ctx.out.ok();
    } else if ctx.arg_is(1, "replicate") && argc >= 3 {
        // Redis's replicationFeedSlaves of the arguments as they are: how its tests make a
        // primary send a replica something it would never propagate itself.
        let args = ctx.args[2..].to_vec();
        ctx.ks.stream.to_replicas_only(&args);
        ctx.out.ok();
    } else if ctx.arg_is(1, "pause-cron") && argc == 3 {
        ctx.server.cron_paused = atoi(ctx.arg(2)) != 0;
        ctx.out.ok();
    } else if ctx.arg_is(1, "log") && argc == 3 {
        let message = format!("DEBUG LOG: {}", String::from_utf8_lossy(ctx.arg(2)));
        ctx.server.log.warning(&message);
        ctx.out.ok();
    } else if ctx.arg_is(1, "object") && argc == 3 {
        let line = {
            let db = ctx.db();
            // A raw look-up, as Redis's: an expired key not removed yet is still shown (the
            // scripting tests check that a key is there before a script expires it).
            let key = ctx.args[2].clone();
            let object = ctx.ks.db(db).main.get(&key[..]).ok_or(Error::NoSuchKey)?;
            let address = object as *const _ as usize;
            let idle = object.idle_ms(lru_clock(ctx.now_ms)) / 1000;
            // Redis shares the objects of the integers 0..10000: their refcount is "infinite".
            let refcount = match object.value {
                Value::Int(n) if (0..10_000).contains(&n) => i32::MAX as i64,
                _ => 1,
            };
            let mut line = format!(
                "Value at:{address:#x} refcount:{refcount} encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{idle}",
                object.value.encoding_name(),
                serialized_length(&object.value, ctx.server.config.rdbcompression),
                object.lru(),
            );
            // Lists add their node statistics, as Redis's quicklist does (sizes are of our
            // own node encoding, uncompressed; `ql_compressed` says whether the list has a
            // compress depth).
            if let Value::List(list) = &object.value {
                let nodes = list.node_count();
                let avg = if nodes == 0 {
                    0.0
                } else {
                    list.len() as f64 / nodes as f64
                };
                line.push_str(&format!(
                    " ql_nodes:{nodes} ql_avg_node:{avg:.2} ql_listpack_max:{} ql_compressed:{} ql_uncompressed_size:{}",
                    list.fill(),
                    u8::from(list.compress_depth() != 0),
                    list.byte_size()
                ));
            }
            line
        };
        ctx.out.simple(line.as_bytes());
    } else {
        let mut line = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
        let name = c_str(ctx.arg(1));
        line.extend_from_slice(&name[..name.len().min(128)]);
        line.extend_from_slice(b"'. Try DEBUG HELP.");
        return Err(Error::bytes(line));
    }
    Ok(())
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save the RDB file, empty the dataset (functions
/// included), load the file back — Redis's way to check that everything survives a restart.
fn debug_reload(ctx: &mut Ctx<'_>) -> CmdResult {
    let (mut merge, mut flush, mut save) = (false, true, true);
    for i in 2..ctx.argc() {
        if ctx.arg_is(i, "merge") {
            merge = true;
        } else if ctx.arg_is(i, "noflush") {
            flush = false;
        } else if ctx.arg_is(i, "nosave") {
            save = false;
        } else {
            return Err(Error::msg(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    if crate::services::rdb_saving::bgsave_in_progress(ctx.server) {
        crate::services::rdb_saving::bgsave_wait(ctx.ks, ctx.server);
    }
    if save && crate::services::rdb_saving::save(ctx.ks, ctx.server).is_err() {
        return Err(Error::msg("ERR"));
    }
    if flush {
        ctx.ks.flush_all(false);
        if let Some(functions) = ctx.server.functions.get_mut() {
            functions.flush();
        }
    }
    let path = crate::services::rdb_saving::target(ctx.server).path;
    let loaded =
        crate::services::rdb_saving::load_file(ctx.ks, ctx.server, ctx.registry, &path, merge);
    if let Err(e) = loaded {
        ctx.server.log.warning(&e.0);
        return Err(Error::msg("ERR Error trying to load the RDB dump"));
    }
    ctx.server.log.warning("DB reloaded by DEBUG RELOAD");
    ctx.out.ok();
    Ok(())
}

/// DEBUG LOADAOF: flush the AOF, empty the dataset, load the AOF back.
fn debug_loadaof(ctx: &mut Ctx<'_>) -> CmdResult {
    crate::services::aof::flush(ctx.ks, ctx.server);
    // The commands replayed are the AOF's own: they must not be appended to it again.
    let aof_on = ctx.server.aof.status != crate::model::aof_state::AofStatus::Off;
    ctx.ks.stream.set_aof(false);
    ctx.ks.flush_all(false);
    if let Some(functions) = ctx.server.functions.get_mut() {
        functions.flush();
    }
    let loaded = {
        let (mut parts, _) = crate::kernel::call::Parts::of(ctx);
        crate::services::aof::load_at_start(&mut parts)
    };
    ctx.ks.stream.set_aof(aof_on);
    if let Err(e) = loaded {
        ctx.server.log.warning(&e.0);
        return Err(Error::msg("ERR Error trying to load the AOF"));
    }
    ctx.ks.dirty = 0;
    ctx.server
        .log
        .warning("Append Only File loaded by DEBUG LOADAOF");
    ctx.out.ok();
    Ok(())
}

/// The size of the value in an RDB file, as DEBUG OBJECT reports it (Redis's
/// `rdbSavedObjectLen`): the value's RDB body, LZF-compressed where `compress` would.
fn serialized_length(value: &Value, compress: bool) -> usize {
    let mut body = Vec::new();
    let _ = crate::base::formats::rdb_convert::to_rdb(value).write_body(&mut body, compress);
    body.len()
}

/// WAIT: `noscript` until Redis 7.2; from 7.2 a `blocking` command that scripts may run (it
/// answers at once there, as inside MULTI), in the @blocking category.
const WAIT: CommandSpec = CommandSpec::new("wait", 3, wait)
    .flags(Flags::BLOCKING)
    .acl(Acl::CONNECTION)
    .tips(&["request_policy:all_shards", "response_policy:agg_min"])
    .doc(
        "generic",
        "3.0.0",
        "O(1)",
        "Waits until replicas acknowledge this connection's writes, or a timeout.",
        "numreplicas:integer timeout:integer",
    );

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("time", 1, time)
        .flags(LSF)
        .tips(&["nondeterministic_output"])
        .doc(
            "server",
            "2.6.0",
            "O(1)",
            "Returns the server's time: UNIX seconds and microseconds.",
            "",
        ),
    CommandSpec::new("lastsave", 1, lastsave)
        .flags(LSF)
        .acl(Acl::ADMIN.union(Acl::DANGEROUS))
        .tips(&["nondeterministic_output"])
        .doc(
            "server",
            "1.0.0",
            "O(1)",
            "Returns the UNIX time of the last successful save.",
            "",
        ),
    CommandSpec::new("role", 1, role)
        .flags(LSF.union(Flags::NOSCRIPT))
        .acl(Acl::ADMIN.union(Acl::DANGEROUS))
        .doc(
            "server",
            "2.8.12",
            "O(1)",
            "Returns the replication role: a master with its replicas, or a replica and its primary.",
            "",
        ),
    WAIT.flags(Flags::NOSCRIPT).until("7.2.0"),
    WAIT.from("7.2.0"),
    // Redis 7.2's (lock clients such as Redisson send it around locked scripts); a 7.0 server
    // answers unknown command, which those clients handle less gracefully.
    CommandSpec::new("waitaof", 4, waitaof)
        .flags(Flags::BLOCKING)
        .acl(Acl::CONNECTION)
        .tips(&["request_policy:all_shards", "response_policy:agg_min"])
        .doc(
            "generic",
            "7.2.0",
            "O(1)",
            "Waits until this connection's writes reach the append-only file locally and on replicas, or a timeout.",
            "numlocal:integer numreplicas:integer timeout:integer",
        ),
    CommandSpec::new("monitor", 1, monitor).flags(ADMIN).doc(
        "server",
        "1.0.0",
        "",
        "Streams every command the server runs to this connection.",
        "",
    ),
    CommandSpec::new("shutdown", -1, shutdown)
        .flags(ADMIN.union(Flags::NO_MULTI).union(Flags::ALLOW_BUSY))
        .doc(
            "server",
            "1.0.0",
            "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
            "Stops the server.",
            "[save_selector=(NOSAVE|SAVE)] [NOW] [FORCE] [ABORT]",
        ),
    CommandSpec::new("debug", -2, debug)
        .flags(ADMIN.union(Flags::PROTECTED))
        .doc(
            "server",
            "1.0.0",
            "Depends on subcommand.",
            "Commands for testing and inspecting the server's internals.",
            "",
        ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_number_parsing() {
        assert_eq!(strtod(b"0.5"), 0.5);
        assert_eq!(strtod(b"x"), 0.0);
        assert_eq!(strtod(b"1.5s"), 1.5);
        assert_eq!(strtod(b" 2e-1"), 0.2);
        assert!(strtod(b"inf").is_infinite());
    }

    #[test]
    fn serialized_lengths_follow_rdb_encodings() {
        let len = |v: &[u8]| serialized_length(&Value::string(v), true);
        assert_eq!(len(b"v"), 2);
        assert_eq!(len(b"123"), 2);
        assert_eq!(len(b"1000"), 3);
        assert_eq!(len(b"100000"), 5);
        assert_eq!(len(b"vx"), 3);
        // Redis 7.0.15 reports 13 for 100 'a's (LZF), 102 without compression.
        assert_eq!(len(&[b'a'; 100]), 13);
        assert_eq!(serialized_length(&Value::string(&[b'a'; 100]), false), 102);
    }
}
