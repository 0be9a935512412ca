//! A replica's full synchronisation: when it starts, and what it sends.
//!
//! PSYNC (or SYNC) that cannot continue from the backlog asks for a full sync. Redis starts a
//! saving child for it, and with diskless sync (`repl-diskless-sync yes`, the default) waits
//! `repl-diskless-sync-delay` seconds first (5 by default) so that replicas arriving meanwhile
//! share the one child; `repl-diskless-sync-max-replicas` waiting replicas start it sooner.
//! embedis has no child to share (the image is built in memory at the moment the sync
//! starts) but keeps the timing replicas and tests see: a waiting replica stays in its
//! handshake, gets a newline a second as Redis's replication cron sends one, and gets neither
//! the `+FULLRESYNC` line nor the stream until its sync starts ([`start_due_syncs`], from the
//! tick).
//!
//! A sync that starts sends `+FULLRESYNC <replid> <offset>` (PSYNC only; SYNC, the old
//! protocol, gets no such line), then the RDB image of the dataset at that offset — as a bulk
//! payload without a trailing CRLF (`$<len>\r\n` and the file's bytes, as Redis sends a file
//! from disk), or in Redis's diskless framing (`$EOF:<mark>`, the image, the mark) to a
//! replica that can read it — then the replication stream from that offset on, which the
//! replica reads from the backlog (the replication buffer all replicas share).

use bytes::BytesMut;

use crate::kernel::parts::Parts;
use crate::model::client::{ClientId, ClientState, Clients};
use crate::model::keyspace::Keyspace;
use crate::model::replication::{AwaitingSync, PacedImage};
use crate::model::state::ServerState;

/// True if the full sync `client` asks for waits for more replicas (Redis's `syncCommand`:
/// diskless sync to a replica that reads the diskless framing, with a delay configured), or
/// because other replicas are already waiting for theirs.
pub(crate) fn waits(server: &ServerState, client: &ClientState) -> bool {
    let config = &server.config;
    let diskless = config.repl_diskless_sync && client.replica_eof;
    let others = server.repl.replicas.iter().any(|r| r.awaiting.is_some());
    // A child is running (the binary's): the next one starts when it ends.
    let busy = server.repl.transfer.is_some()
        || (server.save_child.is_some() && crate::services::rdb_saving::bgsave_in_progress(server));
    diskless && (config.repl_diskless_sync_delay > 0 || others || busy)
}

/// True if `client`'s full sync goes through a child process (the binary's rdb pipe, see
/// [`crate::services::rdb_transfer`]): a diskless sync to a replica that reads the diskless
/// framing and filters nothing out (filtered images are sent by this process).
pub(crate) fn pipes(server: &ServerState, client: &ClientState) -> bool {
    crate::services::rdb_transfer::possible(server)
        && server.config.repl_diskless_sync
        && client.replica_eof
        && !client.rdb_filter.is_on()
}

/// Marks the replica `id` (registered already) as waiting for its sync.
pub(crate) fn wait(server: &mut ServerState, id: ClientId, now_ms: i64, psync: bool) {
    if let Some(replica) = server.repl.replica_mut(id) {
        replica.awaiting = Some(AwaitingSync {
            since_ms: now_ms,
            psync,
        });
    }
    server.log.notice("Delay next BGSAVE for diskless SYNC");
}

/// The tick's part (Redis's `replicationStartPendingFork` and the newlines of its replication
/// cron): starts the waiting syncs once due, and otherwise sends each waiting replica a
/// newline a second.
pub(crate) fn start_due_syncs(parts: &mut Parts<'_>, now_ms: i64) {
    // One saving child at a time, as Redis forks one (the binary's children; in a process
    // of its own a BGSAVE does not hold syncs back).
    let child_busy = parts.server.save_child.is_some()
        && crate::services::rdb_saving::bgsave_in_progress(parts.server);
    if parts.server.repl.transfer.is_some() || child_busy {
        keep_alive(parts, now_ms);
        return;
    }
    let config = &parts.server.config;
    let due = parts.server.repl.syncs_due(
        now_ms,
        config.repl_diskless_sync,
        config.repl_diskless_sync_delay,
        config.repl_diskless_sync_max_replicas,
    );
    if due.is_empty() {
        keep_alive(parts, now_ms);
        return;
    }
    let server = &mut *parts.server;
    // What was propagated so far belongs before the point these replicas start from.
    crate::model::replication::drain(
        &mut server.repl,
        &mut parts.ks.stream,
        parts.clients,
        &mut server.pending_writes,
    );
    server.log.notice(&format!(
        "Starting BGSAVE for SYNC with target: replicas sockets ({} replicas)",
        due.len()
    ));
    for &(id, _) in &due {
        if let Some(replica) = server.repl.replica_mut(id) {
            replica.awaiting = None;
        }
    }
    let clients = &*parts.clients;
    if due
        .iter()
        .all(|&(id, _)| clients.get(id).is_some_and(|c| pipes(server, c)))
    {
        start_piped(server, parts.ks, parts.clients, &due);
        return;
    }
    if due
        .iter()
        .all(|&(id, _)| clients.get(id).is_some_and(|c| via_disk(server, c)))
    {
        start_via_disk(server, parts.ks, parts.clients, &due);
        return;
    }
    for (id, psync) in due {
        let Some(client) = parts.clients.get_mut(id) else {
            continue;
        };
        let mut out = std::mem::take(&mut client.pending);
        let sent = send(server, parts.ks, client, &mut out, psync);
        client.pending = out;
        server.pending_writes.push(id);
        if let Err(e) = sent {
            server
                .log
                .warning(&format!("Can't start the full sync: {e}"));
            client.handle.kill();
        } else {
            start_stream_unless_paced(server, client);
        }
    }
}

/// True if `client`'s full sync goes through a BGSAVE to disk, as Redis's disk target does
/// (the binary, whose BGSAVE has a child: `repl-diskless-sync no`, or a replica that cannot
/// read the diskless framing): the replica waits for the save, then gets the file.
pub(crate) fn via_disk(server: &ServerState, client: &ClientState) -> bool {
    server.save_child.is_some()
        && !(server.config.repl_diskless_sync && client.replica_eof)
        && !client.rdb_filter.is_on()
}

/// Redis's `syncCommand` for a disk target: shares the BGSAVE another replica waits for,
/// else waits for the running child to end, else starts a BGSAVE. The first line goes into
/// `out` unless the replica waits.
pub(crate) fn sync_via_disk(
    server: &mut ServerState,
    ks: &mut Keyspace,
    client: &ClientState,
    out: &mut BytesMut,
    (now_ms, psync): (i64, bool),
) -> Result<(), String> {
    let shared = server
        .repl
        .disk_sync_offset
        .filter(|_| server.repl.replicas.iter().any(|r| r.bgsave_wait));
    if let Some(offset) = shared {
        begin_via_disk(server, client, out, psync, offset);
        server.log.notice("Waiting for end of BGSAVE for SYNC");
        return Ok(());
    }
    let busy = if crate::services::rdb_saving::bgsave_in_progress(server) {
        Some("Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC")
    } else if server.repl.transfer.is_some() {
        Some("Current BGSAVE has socket target. Waiting for next BGSAVE for SYNC")
    } else {
        None
    };
    if let Some(line) = busy {
        if let Some(replica) = server.repl.replica_mut(client.id) {
            replica.awaiting = Some(AwaitingSync {
                since_ms: now_ms,
                psync,
            });
        }
        server.log.notice(line);
        return Ok(());
    }
    let offset = start_disk_bgsave(server, ks)?;
    begin_via_disk(server, client, out, psync, offset);
    Ok(())
}

/// The tick's start of due replicas' disk-target syncs: one BGSAVE for all of them.
fn start_via_disk(
    server: &mut ServerState,
    ks: &mut Keyspace,
    clients: &mut Clients,
    due: &[(ClientId, bool)],
) {
    let started = start_disk_bgsave(server, ks);
    for &(id, psync) in due {
        let Some(client) = clients.get_mut(id) else {
            continue;
        };
        match started {
            Ok(offset) => {
                let mut out = std::mem::take(&mut client.pending);
                begin_via_disk(server, client, &mut out, psync, offset);
                client.handle.deliver_from(&mut out);
                client.pending = out;
            }
            Err(ref e) => {
                server
                    .log
                    .warning(&format!("Can't start the full sync: {e}"));
                client.handle.kill();
            }
        }
    }
}

/// A BGSAVE for replicas (Redis's `startBgsaveForReplication` with a disk target): its file
/// is taken at the current offset, which it returns.
fn start_disk_bgsave(server: &mut ServerState, ks: &mut Keyspace) -> Result<u64, String> {
    // The replicas start from the file: the next command they get says its database.
    ks.stream.reselect();
    crate::services::rdb_saving::bgsave_start(ks, server);
    if !crate::services::rdb_saving::bgsave_in_progress(server) {
        return Err("BGSAVE for replication failed".into());
    }
    server
        .log
        .notice("Starting BGSAVE for SYNC with target: disk");
    let offset = server.repl.offset;
    server.repl.disk_sync_offset = Some(offset);
    Ok(offset)
}

/// A disk-target replica's first line, and its place in the stream from `offset` on; it
/// waits for the BGSAVE's end.
fn begin_via_disk(
    server: &mut ServerState,
    client: &ClientState,
    out: &mut BytesMut,
    psync: bool,
    offset: u64,
) {
    begin_full_sync(server, client, out, psync, offset);
    if let Some(replica) = server.repl.replica_mut(client.id) {
        replica.bgsave_wait = true;
    }
}

/// The tick's part once a BGSAVE for replicas has ended (Redis's `updateSlavesWaitingBgsave`
/// for a disk target): each replica waiting for it gets the file and then its stream — or,
/// if the save failed, is returned for the caller to disconnect (it syncs again).
pub(crate) fn serve_disk_syncs(parts: &mut Parts<'_>) -> Vec<ClientId> {
    let server = &mut *parts.server;
    if server.repl.disk_sync_offset.is_none()
        || crate::services::rdb_saving::bgsave_in_progress(server)
    {
        return Vec::new();
    }
    server.repl.disk_sync_offset = None;
    let mut waiting = Vec::new();
    for replica in server.repl.replicas.iter_mut().filter(|r| r.bgsave_wait) {
        replica.bgsave_wait = false;
        waiting.push((replica.id, replica.name()));
    }
    let file = match server.persistence.last_ended.take() {
        Some(true) => {
            let path = crate::services::rdb_saving::target(server).path;
            std::fs::read(path)
                .map_err(|e| format!("SYNC failed. Can't open/stat DB after BGSAVE: {e}"))
        }
        _ => Err("SYNC failed. BGSAVE child returned an error".to_string()),
    };
    let file = match file {
        Ok(file) => file,
        Err(line) => {
            waiting.iter().for_each(|_| server.log.warning(&line));
            return waiting.into_iter().map(|(id, _)| id).collect();
        }
    };
    for (id, name) in waiting {
        let (Some(client), Some(backlog)) = (parts.clients.get_mut(id), &server.repl.backlog)
        else {
            continue;
        };
        client
            .pending
            .extend_from_slice(format!("${}\r\n", file.len()).as_bytes());
        client.pending.extend_from_slice(&file);
        crate::model::replication::start_reading(backlog, client);
        server
            .log
            .notice(&format!("Synchronization with replica {name} succeeded"));
    }
    Vec::new()
}

/// A replica that was waiting for a BGSAVE to disk has gone: with no other replica waiting
/// and no `save` points (nobody wants the file), the save is killed (Redis's `freeClient`).
pub(crate) fn disk_sync_abandoned(server: &mut ServerState, ks: &mut Keyspace) {
    let waited_on = server.repl.disk_sync_offset.is_some()
        && !server.repl.replicas.iter().any(|r| r.bgsave_wait);
    if waited_on && server.config.save_points.is_empty() {
        crate::services::rdb_saving::bgsave_kill(ks, server);
        server.repl.disk_sync_offset = None;
    }
}

/// Starts the due replicas' full sync through one child (see [`pipes`]): each gets its first
/// line now, and the image as the pipe's reader hands it out.
fn start_piped(
    server: &mut ServerState,
    ks: &mut Keyspace,
    clients: &mut Clients,
    due: &[(ClientId, bool)],
) {
    let ids: Vec<ClientId> = due.iter().map(|&(id, _)| id).collect();
    let Some(first) = ids.first().and_then(|&id| clients.get(id)) else {
        return;
    };
    let started = piped_image(server, ks, first).and_then(|image| {
        crate::services::rdb_transfer::start(server, image, ks.total_keys(), &ids)
    });
    crate::services::child_processes::update_resize_policy(ks, server);
    for &(id, psync) in due {
        let Some(client) = clients.get_mut(id) else {
            continue;
        };
        if let Err(e) = &started {
            server
                .log
                .warning(&format!("Can't start the full sync: {e}"));
            client.handle.kill();
            continue;
        }
        let mut out = std::mem::take(&mut client.pending);
        begin_full_sync(server, client, &mut out, psync, server.repl.offset);
        // Before any piece of the image, which the reader delivers straight to the connection.
        client.handle.deliver_from(&mut out);
        client.pending = out;
    }
}

/// A full sync through a child for `client` alone, asked for now (no delay to wait): its first
/// line into `out`, the image through the pipe.
pub(crate) fn send_piped(
    server: &mut ServerState,
    ks: &mut Keyspace,
    client: &ClientState,
    out: &mut BytesMut,
    psync: bool,
) -> Result<(), String> {
    server
        .log
        .notice("Starting BGSAVE for SYNC with target: replicas sockets (1 replicas)");
    let image = piped_image(server, ks, client)?;
    crate::services::rdb_transfer::start(server, image, ks.total_keys(), &[client.id])?;
    crate::services::child_processes::update_resize_policy(ks, server);
    begin_full_sync(server, client, out, psync, server.repl.offset);
    Ok(())
}

/// A full sync's first line (PSYNC's `+FULLRESYNC`, at the image's `offset`), and the
/// replica's place in the stream: the backlog keeps what follows the image for it.
fn begin_full_sync(
    server: &ServerState,
    client: &ClientState,
    out: &mut BytesMut,
    psync: bool,
    offset: u64,
) {
    if psync {
        let line = format!("+FULLRESYNC {} {offset}\r\n", server.repl.replid);
        out.extend_from_slice(line.as_bytes());
    }
    keep_stream_after(server, client, offset);
}

/// The bytes a child pipes: the diskless framing around the RDB image (one image for every
/// target, so one mark).
fn piped_image(
    server: &mut ServerState,
    ks: &mut Keyspace,
    client: &ClientState,
) -> Result<Vec<u8>, String> {
    ks.stream.reselect();
    let mark = server.random_id();
    // The image is written after the framing's first line, in place: one copy of it in memory.
    let head = format!("$EOF:{mark}\r\n").into_bytes();
    let mut image = dataset_image(server, ks, client, head)?;
    image.extend_from_slice(mark.as_bytes());
    Ok(image)
}

/// The replica reads the stream after the image (taken at `offset`) from the backlog, once
/// the image is out: meanwhile its (inactive) reader keeps that stream there.
fn keep_stream_after(server: &ServerState, client: &ClientState, offset: u64) {
    if let Some(backlog) = &server.repl.backlog {
        backlog.shared.lock().attach(client.id, offset + 1, false);
        client.handle.set_feed(Some(backlog.shared.clone()));
    }
}

/// After an image sent whole: the replica reads its stream from the backlog from now on (a
/// paced image's replica, once the image is out).
pub(crate) fn start_stream_unless_paced(server: &mut ServerState, client: &mut ClientState) {
    let paced = server
        .repl
        .replicas
        .iter()
        .any(|r| r.id == client.id && r.receiving_image());
    if let (false, Some(backlog)) = (paced, &server.repl.backlog) {
        crate::model::replication::start_reading(backlog, client);
    }
}

/// A newline a second to the replicas still waiting, which they skip as a keep-alive.
fn keep_alive(parts: &mut Parts<'_>, now_ms: i64) {
    let repl = &mut parts.server.repl;
    if now_ms - repl.last_keepalive_ms < 1000 {
        return;
    }
    repl.last_keepalive_ms = now_ms;
    for replica in repl.replicas.iter().filter(|r| r.awaiting.is_some()) {
        if let Some(client) = parts.clients.get_mut(replica.id) {
            client.pending.extend_from_slice(b"\n");
            parts.server.pending_writes.push(replica.id);
        }
    }
}

/// Starts `client`'s full sync (registered as a replica already): its first line, the image's
/// framing and the image into `out`, the image at once or paced.
pub(crate) fn send(
    server: &mut ServerState,
    ks: &mut Keyspace,
    client: &ClientState,
    out: &mut BytesMut,
    psync: bool,
) -> Result<(), String> {
    // The replica starts from a full copy: the next command it gets says its database.
    ks.stream.reselect();
    let mut body = dataset_image(server, ks, client, Vec::new())?;
    if psync {
        let line = format!(
            "+FULLRESYNC {} {}\r\n",
            server.repl.replid, server.repl.offset
        );
        out.extend_from_slice(line.as_bytes());
    }
    // A filtered image always goes with the socket framing, as Redis sends it.
    if (server.config.repl_diskless_sync || client.rdb_filter.is_on()) && client.replica_eof {
        // Redis's diskless framing: a random 40-byte mark, the image, the mark again (a
        // replica that streams the image to its loader learns its end without a length).
        let mark = server.random_id();
        out.extend_from_slice(format!("$EOF:{mark}\r\n").as_bytes());
        body.extend_from_slice(mark.as_bytes());
    } else {
        out.extend_from_slice(format!("${}\r\n", body.len()).as_bytes());
    }
    keep_stream_after(server, client, server.repl.offset);
    send_image(server, ks, client.id, out, body);
    server.log.notice(&format!(
        "Synchronization with replica {} succeeded",
        client.peer.addr()
    ));
    Ok(())
}

/// The image's bytes after their header: at once, or at the pace `rdb-key-save-delay` (µs
/// per key) sets, the stream waiting behind them ([`PacedImage`]).
fn send_image(
    server: &mut ServerState,
    ks: &Keyspace,
    id: ClientId,
    out: &mut BytesMut,
    body: Vec<u8>,
) {
    let delay_us = server.config.rdb_key_save_delay;
    let replica = server.repl.replica_mut(id);
    let (true, Some(replica)) = (delay_us > 0, replica) else {
        out.extend_from_slice(&body);
        return;
    };
    let keys = ks.total_keys().max(1) as f64;
    replica.image = Some(PacedImage {
        us_per_byte: keys * delay_us as f64 / body.len().max(1) as f64,
        bytes: body,
        sent: 0,
        started: std::time::Instant::now(),
    });
}

/// The RDB image a full resync sends: the dataset now, with the replication AUX fields,
/// written after `head` (the bytes that go before it).
fn dataset_image(
    server: &ServerState,
    ks: &Keyspace,
    client: &ClientState,
    head: Vec<u8>,
) -> Result<Vec<u8>, String> {
    use crate::services::rdb_saving;
    let options = rdb_saving::writer_options(server);
    let mut writer = embedis_rdb::RdbWriter::new(head, options).map_err(|e| e.to_string())?;
    let filter = client.rdb_filter;
    rdb_saving::write_preamble_for_replica(
        server,
        &mut writer,
        (client.db as i64, server.repl.offset as i64),
        !filter.exclude_functions,
    )
    .map_err(|e| e.to_string())?;
    if !filter.exclude_data {
        let clock = rdb_saving::clock_in_file(ks, server);
        crate::model::snapshot::write_keyspace(ks, &mut writer, clock)
            .map_err(|e| e.error.to_string())?;
    }
    writer.finish().map_err(|e| e.to_string())
}
