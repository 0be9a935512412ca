//! Diskless full syncs through a child process: Redis's "rdb pipe" (`rdbSaveToSlavesSockets`,
//! `rdbPipeReadHandler`, `backgroundSaveDoneHandlerSocket`), with its log lines.
//!
//! In the binary, a diskless full sync's image (framing included) goes into a child process
//! ([`crate::base::formats::rdb_pipe_child`]) and comes back out of its pipe; the I/O layer's
//! reader (`io::rdb_pipe`) hands each piece to every target still attached, and reads the next
//! once no target is congested ([`ready`], [`deliver`]). The tick collects the child
//! ([`collect`]): a child that ended well, its pipe read to the end, puts the targets on the
//! replication stream; one that failed (killed, as by the OOM killer or FLUSHALL) drops them,
//! and they sync again. A target that writes nothing for `repl-timeout` seconds is dropped
//! ([`drop_stalled`]); the last target gone kills the child. A server inside another process
//! has no child to start and sends the image itself (`commands::full_sync`).

use crate::base::config::process::OomClass;
use crate::base::formats::rdb_child::ChildEnd;
use crate::base::formats::rdb_pipe_child::PipeChild;
use crate::model::client::{ClientId, Clients};
use crate::model::rdb_transfer::RdbTransfer;
use crate::model::state::ServerState;

/// What the pipe's reader does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Read the next piece.
    Read,
    /// A target's connection still writes the last pieces: look again shortly.
    Wait,
    /// The transfer is over (or another one runs): stop reading.
    Stop,
}

/// True if a full sync can go through a child now: the binary has one to start, and none is
/// running (Redis starts no second saving child; waiting replicas wait for the next).
pub fn possible(server: &ServerState) -> bool {
    server.save_child.is_some() && server.repl.transfer.is_none()
}

/// Starts the child with `image` (the framing and the RDB file) for `targets`, paced by
/// `rdb-key-save-delay` over `keys` keys as Redis's child is. Returns its pid.
pub fn start(
    server: &mut ServerState,
    image: Vec<u8>,
    keys: usize,
    targets: &[ClientId],
) -> Result<u32, String> {
    let program = server.save_child.clone().ok_or("no child program")?;
    let delay_us = server.config.rdb_key_save_delay;
    let us_per_byte = if delay_us > 0 {
        keys.max(1) as f64 * delay_us as f64 / image.len().max(1) as f64
    } else {
        0.0
    };
    let oom = crate::base::oom::score_for(&server.config.process, OomClass::BackgroundChild);
    let (child, output) =
        PipeChild::spawn(&program, oom, image, us_per_byte).map_err(|e| e.to_string())?;
    let pid = child.pid();
    for &id in targets {
        if let Some(replica) = server.repl.replica_mut(id) {
            replica.piped = true;
        }
    }
    server.repl.transfer = Some(RdbTransfer::new(child, output, targets));
    server.repl.transfer_wake.notify_one();
    server.persistence.forks += 1;
    server
        .log
        .notice(&format!("Background RDB transfer started by pid {pid}"));
    Ok(pid)
}

/// The transfer whose child is `pid`, if it still runs and its pipe is still being read.
fn reading(server: &mut ServerState, pid: u32) -> Option<&mut RdbTransfer> {
    server
        .repl
        .transfer
        .as_mut()
        .filter(|t| t.pid() == pid && !t.done_reading)
}

/// Before the next piece: wait while a target's connection holds a congesting amount of image
/// unwritten (noting, for [`drop_stalled`], whether it moved).
pub fn ready(server: &mut ServerState, clients: &Clients, pid: u32, now_ms: i64) -> Flow {
    let Some(transfer) = reading(server, pid) else {
        return Flow::Stop;
    };
    let ids: Vec<ClientId> = transfer.targets.iter().map(|t| t.id).collect();
    let mut congested = false;
    for id in ids {
        // Delivered and not taken, or taken by the connection's task and not yet written.
        let unsent = clients
            .get(id)
            .map_or(0, |c| c.handle.unsent() + c.handle.held());
        congested |= transfer.note_unsent(id, unsent, now_ms);
    }
    if congested {
        Flow::Wait
    } else {
        Flow::Read
    }
}

/// A piece read from the pipe goes to every target still attached. None left: the child is
/// killed (Redis: "last replica dropped").
pub fn deliver(server: &mut ServerState, clients: &Clients, pid: u32, piece: &[u8]) -> Flow {
    let Some(transfer) = reading(server, pid) else {
        return Flow::Stop;
    };
    transfer
        .targets
        .retain(|t| clients.get(t.id).is_some_and(|c| !c.handle.is_killed()));
    for target in &transfer.targets {
        if let Some(client) = clients.get(target.id) {
            client.handle.deliver(piece);
        }
    }
    if !transfer.targets.is_empty() {
        return Flow::Read;
    }
    transfer.child.kill();
    server
        .log
        .warning("Diskless rdb transfer, last replica dropped, killing fork child.");
    Flow::Stop
}

/// The pipe's end: every piece has been handed out; the child may now be collected.
pub fn done_reading(server: &mut ServerState, pid: u32) {
    let Some(transfer) = reading(server, pid) else {
        return;
    };
    transfer.done_reading = true;
    let up = transfer.targets.len();
    server.log.warning(&format!(
        "Diskless rdb transfer, done reading from pipe, {up} replicas still up."
    ));
}

/// Reading the pipe failed: the targets are dropped and the child killed.
pub fn read_failed(server: &mut ServerState, clients: &Clients, pid: u32, error: &str) {
    let Some(transfer) = reading(server, pid) else {
        return;
    };
    transfer.done_reading = true;
    for target in &transfer.targets {
        if let Some(client) = clients.get(target.id) {
            client.handle.kill();
        }
    }
    transfer.child.kill();
    server.log.warning(&format!(
        "Diskless rdb transfer, read error sending DB to replicas: {error}"
    ));
}

/// Kills the child (Redis's `killRDBChild`: FLUSHALL, SHUTDOWN); [`collect`] ends the
/// transfer then, dropping its targets.
pub fn kill(server: &ServerState) {
    if let Some(transfer) = &server.repl.transfer {
        transfer.child.kill();
    }
}

/// The targets that wrote nothing for `repl-timeout` seconds, logged as Redis logs them and
/// forgotten: the caller disconnects them.
pub fn drop_stalled(server: &mut ServerState, now_ms: i64) -> Vec<ClientId> {
    let timeout_ms = i64::from(server.config.repl_timeout) * 1000;
    let Some(transfer) = &mut server.repl.transfer else {
        return Vec::new();
    };
    let stalled = transfer.stalled_for(timeout_ms, now_ms);
    for &id in &stalled {
        transfer.forget(id);
        if let Some(replica) = server.repl.replicas.iter().find(|r| r.id == id) {
            server.log.warning(&format!(
                "Disconnecting timedout replica (full sync): {}",
                replica.name()
            ));
        }
    }
    stalled
}

/// The tick's part (Redis's `checkChildrenDone` for the socket child): once the child has
/// ended — and, if it ended well, its pipe has been read to the end — the transfer ends. Its
/// targets read the replication stream from the image's offset on; after a failure they are
/// returned for the caller to disconnect.
pub fn collect(server: &mut ServerState, clients: &mut Clients) -> Vec<ClientId> {
    let Some(transfer) = &mut server.repl.transfer else {
        return Vec::new();
    };
    if transfer.ended.is_none() {
        transfer.ended = transfer.child.try_end();
    }
    let ok = match transfer.ended {
        None => return Vec::new(),
        Some(ChildEnd::Exit(0)) if !transfer.done_reading => return Vec::new(),
        Some(ChildEnd::Exit(0)) => true,
        Some(_) => false,
    };
    let Some(transfer) = server.repl.transfer.take() else {
        return Vec::new();
    };
    let targets: Vec<ClientId> = transfer.targets.iter().map(|t| t.id).collect();
    for &id in &targets {
        if let Some(replica) = server.repl.replica_mut(id) {
            replica.piped = false;
        }
    }
    if !ok {
        let end = transfer.ended.unwrap_or(ChildEnd::Exit(1));
        let line = end.describe("Background transfer", "Background transfer error");
        server.log.warning(&line);
        for _ in &targets {
            server
                .log
                .warning("SYNC failed. BGSAVE child returned an error");
        }
        return targets;
    }
    server
        .log
        .notice("Background RDB transfer terminated with success");
    for &id in &targets {
        put_online(server, clients, id);
    }
    Vec::new()
}

/// A target whose image went out whole reads the stream that waited behind it.
fn put_online(server: &mut ServerState, clients: &mut Clients, id: ClientId) {
    let Some(replica) = server.repl.replicas.iter().find(|r| r.id == id) else {
        return;
    };
    server.log.notice(&format!(
        "Streamed RDB transfer with replica {} succeeded (socket). Waiting for REPLCONF ACK from slave to enable streaming",
        replica.name()
    ));
    server.log.notice(&format!(
        "Synchronization with replica {} succeeded",
        replica.name()
    ));
    if let (Some(client), Some(backlog)) = (clients.get_mut(id), &server.repl.backlog) {
        crate::model::replication::start_reading(backlog, client);
    }
}
