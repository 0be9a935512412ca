//! The shutdown sequence, as Redis 7.0's `prepareForShutdown` and `finishShutdown` run it, for
//! SHUTDOWN and for a signal's request (which the tick takes up with the flags of
//! `shutdown-on-sigint` / `shutdown-on-sigterm`).
//!
//! Preparing: unless NOW is given or `shutdown-timeout` is 0, a primary whose replicas have not
//! all acknowledged its whole stream waits for them — writes paused, the replicas asked for an
//! acknowledgement — until they have or the timeout passes ([`cron`] checks every tick).
//! Finishing: the lagging replicas are logged, a background save is abandoned, an AOF that is
//! still writing its first base stops the shutdown (unless FORCE), the AOF is fsynced, and the
//! final RDB file is saved where save points are set (or SAVE is given, and not NOSAVE); a failed
//! save stops the shutdown too (unless FORCE). A stopped shutdown is cancelled: the server goes
//! on serving and the clients blocked in SHUTDOWN get its error. A shutdown that finished sets
//! [`ServerState::shutdown`], on which the I/O layer stops the process.

use crate::base::config::process::ShutdownFlags;
use crate::base::signals::{self, ShutdownSignal};
use crate::model::aof_state::AofStatus;
use crate::model::keyspace::Keyspace;
use crate::model::state::{EngineRequest, Pause, ServerState, ShutdownRequest};

/// Where a step of the sequence left the shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Finished: the process stops.
    Done,
    /// Waiting for replicas.
    Waiting,
    /// Stopped by an error and cancelled (the log says why).
    Failed,
}

/// A shutdown is under way (Redis's `isShutdownInitiated`).
pub fn initiated(server: &ServerState) -> bool {
    server.stopping.deadline_ms.is_some()
}

/// Redis's `prepareForShutdown`. A shutdown already under way makes no second one: the caller
/// waits for the first.
pub fn prepare(ks: &mut Keyspace, server: &mut ServerState, flags: ShutdownFlags) -> Step {
    if initiated(server) {
        return Step::Waiting;
    }
    let mut flags = flags;
    // A dataset half loaded is not saved over the file it comes from.
    if server.persistence.loading {
        flags = ShutdownFlags((flags.0 & !ShutdownFlags::SAVE) | ShutdownFlags::NOSAVE);
    }
    server.stopping.flags = flags;
    server.log.warning("User requested shutdown...");
    if !flags.has(ShutdownFlags::NOW)
        && server.config.process.shutdown_timeout != 0
        && !replicas_in_sync(ks, server)
    {
        let now = server.clock.now_ms();
        server.stopping.deadline_ms =
            Some(now + server.config.process.shutdown_timeout as i64 * 1000);
        if server.pause.is_none() {
            server.repl.get_ack = true;
            // The writes wait with the shutdown (Redis's PAUSE_DURING_SHUTDOWN), so that the
            // replicas can catch up with a stream that no longer grows.
            server.pause = Some(Pause {
                until_ms: i64::MAX,
                writes_only: true,
            });
            server.stopping.paused_writes = true;
            server.timers_changed = true;
        }
        server
            .log
            .notice("Waiting for replicas before shutting down.");
        return Step::Waiting;
    }
    finish(ks, server)
}

/// Every replica has acknowledged the whole stream (Redis's `isReadyToShutdown`).
fn replicas_in_sync(ks: &Keyspace, server: &ServerState) -> bool {
    let end = stream_end(ks, server);
    server.repl.replicas.iter().all(|r| r.ack_offset == end)
}

/// The primary's offset with what this turn has written and not yet handed to the replicas.
fn stream_end(ks: &Keyspace, server: &ServerState) -> u64 {
    server.repl.offset + ks.stream.len() as u64
}

/// Redis's `finishShutdown`.
pub fn finish(ks: &mut Keyspace, server: &mut ServerState) -> Step {
    let flags = server.stopping.flags;
    let force = flags.has(ShutdownFlags::FORCE);
    log_replicas(ks, server);
    if crate::services::rdb_saving::bgsave_in_progress(server) {
        server
            .log
            .warning("There is a child saving an .rdb. Killing it!");
        crate::services::rdb_saving::bgsave_kill(ks, server);
    }
    if server.aof.rewrite.is_some() {
        if server.aof.status == AofStatus::WaitRewrite {
            if force {
                server.log.warning("Writing initial AOF. Exit anyway.");
            } else {
                server.log.warning("Writing initial AOF, can't exit.");
                return fail(server);
            }
        }
        crate::services::aof::rewrite_kill(ks, server);
    }
    if server.aof.status != AofStatus::Off {
        server.log.notice("Calling fsync() on the AOF file.");
        crate::services::aof::fsync_now(ks, server);
    }
    let save_points = !server.config.save_points.is_empty();
    if (save_points && !flags.has(ShutdownFlags::NOSAVE)) || flags.has(ShutdownFlags::SAVE) {
        server
            .log
            .notice("Saving the final RDB snapshot before exiting.");
        if crate::services::rdb_saving::save(ks, server).is_err() {
            if force {
                server
                    .log
                    .warning("Error trying to save the DB. Exit anyway.");
            } else {
                server
                    .log
                    .warning("Error trying to save the DB, can't exit.");
                return fail(server);
            }
        }
    }
    server.persistence.shutdown_handled = true;
    server.shutdown = Some(ShutdownRequest::Shutdown);
    Step::Done
}

/// Logs each replica that has not acknowledged the whole stream, and how many have.
fn log_replicas(ks: &Keyspace, server: &ServerState) {
    let end = stream_end(ks, server);
    let now_s = server.clock.now_ms().div_euclid(1000);
    let mut lagging = 0;
    for replica in server.repl.replicas.iter().filter(|r| r.ack_offset != end) {
        lagging += 1;
        let online = !replica.receiving_image();
        let lag = if online {
            now_s - replica.ack_time_ms.div_euclid(1000)
        } else {
            0
        };
        let name = if replica.listening_port != 0 {
            format!("{}:{}", replica.ip, replica.listening_port)
        } else {
            format!("{}:<unknown-replica-port>", replica.ip)
        };
        server.log.warning(&format!(
            "Lagging replica {name} reported offset {} behind master, lag={lag}, state={}.",
            end.saturating_sub(replica.ack_offset),
            if online { "online" } else { "send_bulk" }
        ));
    }
    let count = server.repl.replicas.len();
    if count > 0 {
        server.log.notice(&format!(
            "{} of {count} replicas are in sync when shutting down.",
            count - lagging
        ));
    }
}

fn fail(server: &mut ServerState) -> Step {
    server
        .log
        .warning("Errors trying to shut down the server. Check the logs for more information.");
    cancel(server);
    Step::Failed
}

/// Redis's `cancelShutdown`: the request is forgotten and the engine answers the clients
/// blocked in SHUTDOWN and resumes the writes (an [`EngineRequest::ShutdownCancelled`]).
fn cancel(server: &mut ServerState) {
    signals::clear();
    server.stopping.flags = ShutdownFlags::default();
    server.stopping.deadline_ms = None;
    server.requests.push(EngineRequest::ShutdownCancelled);
}

/// SHUTDOWN ABORT (Redis's `abortShutdown`): false if no shutdown was under way or asked for.
pub fn abort(server: &mut ServerState) -> bool {
    if initiated(server) {
        cancel(server);
    } else if signals::pending().is_some() {
        signals::clear();
    } else {
        return false;
    }
    server.log.notice("Shutdown manually aborted.");
    true
}

/// The tick's part (Redis's `serverCron`): begins the shutdown a signal asked for, or finishes
/// the one waiting for replicas once they caught up or its time ran out. `None` when nothing
/// happened.
pub fn cron(ks: &mut Keyspace, server: &mut ServerState) -> Option<Step> {
    if !initiated(server) {
        let flags = match signals::pending()? {
            ShutdownSignal::Int => server.config.process.shutdown_on_sigint,
            ShutdownSignal::Term => server.config.process.shutdown_on_sigterm,
        };
        return Some(prepare(ks, server, flags));
    }
    let deadline = server.stopping.deadline_ms?;
    if server.clock.now_ms() >= deadline || replicas_in_sync(ks, server) {
        return Some(finish(ks, server));
    }
    None
}

/// INFO's `shutdown_in_milliseconds`, while a shutdown waits.
pub fn remaining_ms(server: &ServerState, now_ms: i64) -> Option<i64> {
    server
        .stopping
        .deadline_ms
        .map(|deadline| deadline - now_ms)
}
