//! SYNC, PSYNC and REPLCONF: a replica attaching to this server, over [`crate::model::replication`].
//!
//! A full resynchronisation (`super::full_sync`, which also says when it starts) sends the RDB
//! image of the dataset at one offset, then the stream from there. The image is built in
//! memory when the sync starts, so it is the dataset at that exact point without a fork; the
//! stream bytes of commands run earlier in the same turn are handed out first, so they do not
//! reach the new replica. A PSYNC whose ID is ours (or the previous one, up to where it was
//! valid) and whose offset the backlog still holds answers `+CONTINUE <replid>` and the
//! backlog from there.
//!
//! REPLICAOF switches the role (see [`replicaof`]); the link to the primary is made by the I/O
//! layer's `primary_link` task, which the new [`crate::model::replication::Primary`] wakes.
//!
//! A replica serves sub-replicas once its link is up, from the same history (ID, offset,
//! backlog) as its primary's.

use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::kernel::parts::Parts;
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::replication::{Backlog, Replica};

/// REPLICAOF host port | NO ONE (Redis's `replicaofCommand`). Becoming a replica disconnects
/// this server's own replicas and refuses client writes (`-READONLY`, with `replica-read-only
/// yes`); NO ONE makes it a primary again under a new replication ID, the old one kept as the
/// previous ID. The link to the primary is the I/O layer's (`primary_link`), woken here.
fn replicaof(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.server.repl.failover.is_on() {
        // FAILOVER ABORT is the way out of a failover.
        return Err(Error::msg("ERR REPLICAOF not allowed while failing over."));
    }
    if ctx.arg_is(1, "no") && ctx.arg_is(2, "one") {
        if stop_following(&mut parts_of(ctx)) {
            ctx.server.log.notice(&format!(
                "MASTER MODE enabled (user request from 'id={} addr={}')",
                ctx.client.id,
                ctx.client.peer.addr()
            ));
        }
        ctx.out.ok();
        return Ok(());
    }
    if ctx.client.replica {
        return Err(Error::msg(
            "ERR Command is not valid when client is a replica.",
        ));
    }
    let port = std::str::from_utf8(ctx.arg(2))
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|p| (0..=65535).contains(p))
        .ok_or(Error::msg("ERR Invalid master port"))? as u16;
    let host = String::from_utf8_lossy(ctx.arg(1)).into_owned();
    if let Some(primary) = &ctx.server.repl.primary {
        if primary.host.eq_ignore_ascii_case(&host) && primary.port == port {
            ctx.server.log.notice(
                "REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.",
            );
            ctx.out.simple(b"OK Already connected to specified master");
            return Ok(());
        }
    }
    follow_primary(&mut parts_of(ctx), host.clone(), port);
    ctx.server.log.notice(&format!(
        "REPLICAOF {host}:{port} enabled (user request from 'id={} addr={}')",
        ctx.client.id,
        ctx.client.peer.addr()
    ));
    ctx.out.ok();
    Ok(())
}

/// The engine's data a command was lent, as one borrow (what the helpers below share with
/// the engine, which runs them without a command).
pub(super) fn parts_of<'a>(ctx: &'a mut Ctx<'_>) -> Parts<'a> {
    Parts {
        ks: &mut *ctx.ks,
        server: &mut *ctx.server,
        clients: &mut *ctx.clients,
        registry: ctx.registry,
    }
}

/// Makes this replica a primary again (REPLICAOF NO ONE, CLUSTER FAILOVER): its link goes,
/// a new replication ID (the old one kept as the previous ID), our replicas reconnect to learn
/// it. False if it was no replica.
pub(crate) fn stop_following(ctx: &mut Parts<'_>) -> bool {
    let Some(primary) = ctx.server.repl.primary.take() else {
        return false;
    };
    drop_link(ctx, primary.client);
    disconnect_replicas(ctx);
    let replid = ctx.server.random_id();
    ctx.server.repl.promote(replid);
    ctx.server.log.set_replica(false);
    ctx.ks.expiry_rule = crate::model::keyspace::ExpiryRule::Delete;
    ctx.ks.replica_keys_with_expire.clear();
    // Our replicas get our own stream from now on: its first command names its database.
    ctx.ks.stream.reselect();
    let _ = crate::base::oom::apply(
        &ctx.server.config.process,
        crate::base::config::process::OomClass::Primary,
        &ctx.server.log,
    );
    true
}

/// Makes this server a replica of `host:port` (REPLICAOF, and CLUSTER REPLICATE in cluster
/// mode): the previous link goes, the link task is woken. Our replicas stay (Redis 7.0's
/// `replicationSetMaster`): they may continue with us if the new primary continues our history;
/// they are disconnected when it does not — a new replication ID on a partial resync, or the
/// load of a full sync's image.
pub(crate) fn follow_primary(ctx: &mut Parts<'_>, host: String, port: u16) {
    // What we propagated so far still reaches them.
    let server = &mut *ctx.server;
    crate::model::replication::drain(
        &mut server.repl,
        &mut ctx.ks.stream,
        ctx.clients,
        &mut server.pending_writes,
    );
    // Clients blocked on a primary cannot be served by a replica.
    ctx.server
        .requests
        .push(crate::model::state::EngineRequest::UnblockAll);
    if let Some(primary) = ctx.server.repl.primary.take() {
        drop_link(ctx, primary.client);
    }
    ctx.server.repl.follow(host, port);
    ctx.server.log.set_replica(true);
    ctx.ks.expiry_rule = crate::model::keyspace::ExpiryRule::Hide;
    // A replica's OOM score (Redis's `replicationSetMaster`).
    let _ = crate::base::oom::apply(
        &ctx.server.config.process,
        crate::base::config::process::OomClass::Replica,
        &ctx.server.log,
    );
}

/// Our replicas must learn of the change of history (Redis's `disconnectSlaves`): they are
/// disconnected, and reconnect with PSYNC — what was propagated so far still reaches them first.
fn disconnect_replicas(ctx: &mut Parts<'_>) {
    let server = &mut *ctx.server;
    crate::model::replication::drain(
        &mut server.repl,
        &mut ctx.ks.stream,
        ctx.clients,
        &mut server.pending_writes,
    );
    for replica in std::mem::take(&mut ctx.server.repl.replicas) {
        if let Some(client) = ctx.clients.get_mut(replica.id) {
            client.close_after_reply = true;
            client.handle.kill();
        }
    }
}

/// Closes the link to the previous primary: its client goes (the link task sees the kill and
/// the new generation, and gives up its socket).
fn drop_link(ctx: &mut Parts<'_>, client: Option<crate::model::client::ClientId>) {
    if let Some(id) = client {
        if let Some(c) = ctx.clients.get_mut(id) {
            c.handle.kill();
        }
        ctx.server
            .requests
            .push(crate::model::state::EngineRequest::Kill { id });
    }
}

fn sync(ctx: &mut Ctx<'_>) -> CmdResult {
    attach(ctx, None)
}

fn psync(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() > 3 && ctx.arg_is(3, "failover") && !ctx.client.replica {
        take_over(ctx)?;
    }
    let replid = ctx.arg(1).to_vec();
    // Redis reads the offset with strtoll semantics through getLongLongFromObjectOrReply.
    let offset = std::str::from_utf8(ctx.arg(2))
        .ok()
        .and_then(|s| s.parse::<i64>().ok());
    let Some(offset) = offset else {
        let name = crate::model::replication::replica_name(
            &ctx.client.peer.ip_string(),
            ctx.client.replica_port,
        );
        ctx.server.log.warning(&format!(
            "Replica {name} asks for synchronization but with a wrong offset"
        ));
        return Err(Error::NotInteger);
    };
    attach(ctx, Some((replid, offset)))
}

/// `PSYNC <replid> <offset> FAILOVER`: our primary, failing over to us, asks us to take its
/// role (Redis's `syncCommand`). We do if we still share its history (the same replication
/// ID): a primary under a new ID, the old one kept as the previous ID, from which the old
/// primary then continues as our replica.
fn take_over(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.server.log.warning(&format!(
        "Failover request received for replid {}.",
        String::from_utf8_lossy(crate::base::cstr::c_str(ctx.arg(1)))
    ));
    if ctx.server.repl.primary.is_none() {
        return Err(Error::msg("ERR PSYNC FAILOVER can't be sent to a master."));
    }
    if !ctx
        .arg(1)
        .eq_ignore_ascii_case(ctx.server.repl.replid.as_bytes())
    {
        return Err(Error::msg(
            "ERR PSYNC FAILOVER replid must match my replid.",
        ));
    }
    stop_following(&mut parts_of(ctx));
    ctx.server.log.notice(&format!(
        "MASTER MODE enabled (failover request from 'id={} addr={}')",
        ctx.client.id,
        ctx.client.peer.addr()
    ));
    Ok(())
}

/// SYNC (`request: None`) and PSYNC: attaches the running client as a replica.
fn attach(ctx: &mut Ctx<'_>, request: Option<(Vec<u8>, i64)>) -> CmdResult {
    if ctx.client.replica {
        // Redis ignores SYNC from a connection already attached.
        return Ok(());
    }
    if ctx.server.repl.failover.is_on() {
        return Err(Error::msg("NOMASTERLINK Can't SYNC while failing over"));
    }
    if ctx.server.repl.link_down() {
        // A replica serves sub-replicas only once linked to its own primary.
        return Err(Error::msg(
            "NOMASTERLINK Can't SYNC while not connected with my master",
        ));
    }
    if ctx.client.rdb_filter.is_on() && !ctx.client.replica_eof {
        // A filtered image is sent only over the socket framing (Redis never writes one to
        // disk, where it could be taken for the dataset's).
        return Err(Error::msg("ERR Filtered replica requires EOF capability"));
    }
    // What earlier commands of this turn propagated belongs before the point the replica starts
    // from: hand it to the backlog and the replicas attached so far.
    let server = &mut *ctx.server;
    crate::model::replication::drain(
        &mut server.repl,
        &mut ctx.ks.stream,
        ctx.clients,
        &mut server.pending_writes,
    );
    if let Some((replid, offset)) = &request {
        let asked = replid.as_slice() != b"?";
        let continued = continuation(ctx, replid, *offset);
        if asked && continued.is_none() {
            // A PSYNC that named a history we cannot continue (Redis counts it, then syncs).
            ctx.server.repl.sync_partial_err += 1;
        }
        if let Some(backlog) = continued {
            ctx.server.repl.sync_partial_ok += 1;
            let line = format!("+CONTINUE {}\r\n", ctx.server.repl.replid);
            ctx.out.buffer().extend_from_slice(line.as_bytes());
            register(ctx, request.is_none());
            // The replica reads the backlog from its offset: nothing is copied for it.
            let from = *offset as u64;
            backlog.shared.lock().attach(ctx.client.id, from, true);
            ctx.client.handle.set_feed(Some(backlog.shared.clone()));
            ctx.server.log.notice(&format!(
                "Partial resynchronization request from {} accepted. Sending {} bytes of backlog starting from offset {}.",
                ctx.client.peer.addr(), ctx.server.repl.offset + 1 - from, offset
            ));
            return Ok(());
        }
    }
    if !ctx.server.repl.is_on() {
        let size = ctx.server.config.repl_backlog_size.max(1) as usize;
        let next = ctx.server.repl.offset + 1;
        ctx.server.repl.backlog = Some(Backlog::new(size, next));
        ctx.ks.stream.add_consumer();
        ctx.server.log.notice(&format!(
            "Replication backlog created, my new replication IDs are '{}' and '{}'",
            ctx.server.repl.replid, ctx.server.repl.replid2
        ));
    }
    ctx.server.repl.sync_full += 1;
    let psync = request.is_some();
    register(ctx, !psync);
    if super::full_sync::waits(ctx.server, ctx.client) {
        super::full_sync::wait(ctx.server, ctx.client.id, ctx.now_ms, psync);
        return Ok(());
    }
    let sent = if super::full_sync::via_disk(ctx.server, ctx.client) {
        let when = (ctx.now_ms, psync);
        super::full_sync::sync_via_disk(ctx.server, ctx.ks, ctx.client, ctx.out.buffer(), when)
    } else if super::full_sync::pipes(ctx.server, ctx.client) {
        super::full_sync::send_piped(ctx.server, ctx.ks, ctx.client, ctx.out.buffer(), psync)
    } else {
        super::full_sync::send(ctx.server, ctx.ks, ctx.client, ctx.out.buffer(), psync)
    };
    if let Err(e) = sent {
        ctx.server.repl.remove(ctx.client.id);
        ctx.client.handle.set_feed(None);
        ctx.client.replica = false;
        return Err(Error::owned(format!("ERR {e}")));
    }
    // The image is in this reply (unless it goes paced or through a child): the stream, taken
    // after it, may follow.
    super::full_sync::start_stream_unless_paced(ctx.server, ctx.client);
    Ok(())
}

/// The backlog, if the replica's ID and offset allow a partial resync from it (Redis's
/// `masterTryPartialResynchronization`).
fn continuation(ctx: &Ctx<'_>, replid: &[u8], offset: i64) -> Option<Backlog> {
    let repl = &ctx.server.repl;
    let ours = replid == repl.replid.as_bytes();
    let previous = replid == repl.replid2.as_bytes() && offset <= repl.second_offset;
    if !(ours || previous) || offset < 0 {
        return None;
    }
    let backlog = repl.backlog.as_ref()?;
    backlog.covers(offset as u64).then(|| backlog.clone())
}

/// Marks the client a replica and adds it to the list the stream is fed to.
fn register(ctx: &mut Ctx<'_>, pre_psync: bool) {
    ctx.client.replica = true;
    let id = ctx.client.id;
    if ctx.server.repl.replicas.is_empty() {
        // The first ping comes a whole `repl-ping-replica-period` after the first replica.
        ctx.server.repl.last_ping_ms = ctx.now_ms;
    }
    if !ctx.server.repl.is_replica(id) {
        ctx.server.repl.replicas.push(Replica {
            id,
            listening_port: ctx.client.replica_port,
            ip: ctx.client.peer.ip_string(),
            ack_offset: 0,
            ack_time_ms: ctx.now_ms,
            pre_psync,
            image: None,
            piped: false,
            bgsave_wait: false,
            awaiting: None,
        });
    }
}

fn replconf(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc().is_multiple_of(2) {
        return Err(Error::Syntax);
    }
    let mut i = 1;
    while i < ctx.argc() {
        let value = ctx.arg(i + 1);
        if ctx.arg_is(i, "listening-port") {
            let port = std::str::from_utf8(value)
                .ok()
                .and_then(|s| s.parse::<u16>().ok())
                .ok_or(Error::NotInteger)?;
            ctx.client.replica_port = port;
            if let Some(r) = ctx.server.repl.replica_mut(ctx.client.id) {
                r.listening_port = port;
            }
        } else if ctx.arg_is(i, "ip-address") {
            let ip = String::from_utf8_lossy(value).into_owned();
            if let Some(r) = ctx.server.repl.replica_mut(ctx.client.id) {
                r.ip = ip;
            }
        } else if ctx.arg_is(i, "capa") {
            // `eof`: the replica takes the diskless framing; `psync2` changes nothing here.
            if value.eq_ignore_ascii_case(b"eof") {
                ctx.client.replica_eof = true;
            }
        } else if ctx.arg_is(i, "rdb-only") {
            // A replica that wants only the image (redis-cli --rdb): it gets the same here.
        } else if ctx.arg_is(i, "rdb-filter-only") {
            ctx.client.rdb_filter = rdb_filter(value)?;
        } else if ctx.arg_is(i, "ack") || ctx.arg_is(i, "fack") {
            // An acknowledgement gets no reply (nothing is written).
            let offset = std::str::from_utf8(value)
                .ok()
                .and_then(|s| s.parse::<u64>().ok());
            let now = ctx.now_ms;
            let ack = ctx.arg_is(i, "ack");
            if let (Some(offset), Some(r)) = (offset, ctx.server.repl.replica_mut(ctx.client.id)) {
                if ack && offset > r.ack_offset {
                    r.ack_offset = offset;
                }
                r.ack_time_ms = now;
                // WAITing clients may be released by it (the executor looks after the command).
                if !ctx.server.repl.waiting.is_empty() {
                    ctx.server
                        .requests
                        .push(crate::model::state::EngineRequest::ReleaseAcknowledged);
                }
            }
            return Ok(());
        } else if ctx.arg_is(i, "getack") {
            // Only a primary's request to its replica; a primary ignores it.
            return Ok(());
        } else {
            // The option as `%s` prints it: up to a NUL, any bytes.
            let mut line = b"ERR Unrecognized REPLCONF option: ".to_vec();
            line.extend_from_slice(crate::base::cstr::c_str(ctx.arg(i)));
            return Err(Error::bytes(line));
        }
        i += 2;
    }
    ctx.out.ok();
    Ok(())
}

/// `REPLCONF rdb-filter-only <filters>`: the filters, split as Redis splits arguments, name
/// what the image keeps — everything else is left out; `functions` is the only filter there
/// is, and "" asks for an empty image.
fn rdb_filter(value: &[u8]) -> Result<crate::model::client::RdbFilter, Error> {
    let filters = embedis_protocol::inline::split_args(value)
        .map_err(|_| Error::msg("ERR Missing rdb-filter-only values"))?;
    let mut filter = crate::model::client::RdbFilter {
        exclude_data: true,
        exclude_functions: true,
    };
    for word in filters {
        if !word.eq_ignore_ascii_case(b"functions") {
            let mut line = b"ERR Unsupported rdb-filter-only option: ".to_vec();
            line.extend_from_slice(crate::base::cstr::c_str(&word));
            return Err(Error::bytes(line));
        }
        filter.exclude_functions = false;
    }
    Ok(filter)
}

const ADMIN: Flags = Flags::ADMIN
    .union(Flags::NOSCRIPT)
    .union(Flags::NO_ASYNC_LOADING)
    .union(Flags::NO_MULTI);

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("sync", 1, sync)
        .flags(ADMIN)
        .acl(Acl::ADMIN.union(Acl::DANGEROUS))
        .doc(
            "server",
            "1.0.0",
            "",
            "Attaches the connection as a replica: a full copy of the dataset, then every write.",
            "",
        ),
    CommandSpec::new("psync", -3, psync)
        .flags(ADMIN)
        .acl(Acl::ADMIN.union(Acl::DANGEROUS))
        .doc(
            "server",
            "2.8.0",
            "",
            "Attaches the connection as a replica, continuing from the backlog when it can.",
            "replicationid:string offset:integer",
        ),
    CommandSpec::new("replconf", -1, replconf)
        .flags(
            Flags::ADMIN
                .union(Flags::NOSCRIPT)
                .union(Flags::LOADING)
                .union(Flags::STALE)
                .union(Flags::ALLOW_BUSY),
        )
        .acl(Acl::ADMIN.union(Acl::DANGEROUS))
        .doc(
            "server",
            "3.0.0",
            "O(1)",
            "A replica's settings and acknowledgements on its link (listening-port, capa, ACK).",
            "",
        ),
    CommandSpec::new("replicaof", 3, replicaof)
        .flags(REPLICAOF_FLAGS)
        .acl(Acl::ADMIN.union(Acl::DANGEROUS))
        .doc(
            "server",
            "5.0.0",
            "O(1)",
            "Makes the server a replica of another instance, or a primary again (NO ONE).",
            "args=(host-port=(host:string port:integer)|no-one=(NO ONE))",
        ),
    CommandSpec::new("slaveof", 3, replicaof)
        .flags(REPLICAOF_FLAGS)
        .acl(Acl::ADMIN.union(Acl::DANGEROUS))
        .doc(
            "server",
            "1.0.0",
            "O(1)",
            "REPLICAOF's old name (deprecated since Redis 5.0.0).",
            "args=(host-port=(host:string port:integer)|no-one=(NO ONE))",
        ),
];

const REPLICAOF_FLAGS: Flags = Flags::ADMIN
    .union(Flags::NOSCRIPT)
    .union(Flags::STALE)
    .union(Flags::NO_ASYNC_LOADING);
