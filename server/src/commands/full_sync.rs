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
use crate::model::client::{ClientId, ClientState};
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
    diskless && (config.repl_diskless_sync_delay > 0 || others)
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
    for (id, psync) in due {
        if let Some(replica) = server.repl.replica_mut(id) {
            replica.awaiting = None;
        }
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

/// After an image sent whole: the replica reads its stream from the backlog from now on (a
/// paced image's replica, once the image is out).
pub(crate) fn start_stream_unless_paced(server: &mut ServerState, client: &mut ClientState) {
    let paced = server
        .repl
        .replicas
        .iter()
        .any(|r| r.id == client.id && r.image.is_some());
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
    let mut body = dataset_image(server, ks, client)?;
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
    // The replica reads the stream since the image from the backlog, once the image is out:
    // meanwhile its reader keeps that stream there.
    if let Some(backlog) = &server.repl.backlog {
        let from = server.repl.offset + 1;
        backlog.shared.lock().attach(client.id, from, false);
        client.handle.set_feed(Some(backlog.shared.clone()));
    }
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

/// The RDB image a full resync sends: the dataset now, with the replication AUX fields.
fn dataset_image(
    server: &ServerState,
    ks: &Keyspace,
    client: &ClientState,
) -> Result<Vec<u8>, String> {
    use crate::services::rdb_saving;
    let options = rdb_saving::writer_options(server);
    let mut writer = embedis_rdb::RdbWriter::new(Vec::new(), options).map_err(|e| e.to_string())?;
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
