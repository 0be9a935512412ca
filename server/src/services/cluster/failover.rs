//! Failover as Redis 7.0 runs it: a replica whose primary is FAIL (or that was asked by
//! CLUSTER FAILOVER) waits a delay by its rank, asks the primaries for their votes under a new
//! epoch, and with a majority takes its primary's slots; primaries vote once an epoch, and
//! not twice for one shard within twice the node timeout. The coordinated manual failover
//! pauses the primary's writes (MFSTART) until the replica has caught up. Replica migration
//! gives an orphaned primary a replica from the shard with the most.

use embedis_bus::{kind, message_flag, Body, Header, Message};
use rand::Rng;

use super::{
    broadcast, broadcast_pong, header, id_of, node_timeout, send_ping, set_node_as_primary,
    set_primary, update_state,
};
use crate::model::cluster_bus_state::{BusEffect, ManualFailover};
use crate::model::cluster_view::{LinkId, Role, MYSELF, NO_NODE, SLOTS};
use crate::model::state::ServerState;

/// The manual failover's time limit (ms), and how long the primary pauses (× 2).
const MF_TIMEOUT: i64 = 5000;
/// How long an orphaned primary waits for a migrating replica (ms).
const MIGRATION_DELAY: i64 = 5000;

/// Ends a manual failover, unpausing this primary's writes if it was the paused side.
pub fn reset_manual_failover(server: &mut ServerState) {
    let manual = std::mem::take(&mut server.cluster.bus.manual);
    if manual.replica.is_some() {
        server.cluster.bus.effects.push(BusEffect::Unpause);
    }
}

/// The manual failover timed out.
pub(super) fn check_manual_timeout(server: &mut ServerState, now: i64) {
    let end = server.cluster.bus.manual.end;
    if end != 0 && end < now {
        server.log.warning("Manual failover timed out.");
        reset_manual_failover(server);
    }
}

/// This node's primary, if it is a replica of a known node.
fn my_primary(server: &ServerState) -> Option<u32> {
    match &server.cluster.myself().role {
        Role::Replica(id) => server.cluster.find(id.as_bytes()),
        Role::Primary => None,
    }
}

/// CLUSTER FAILOVER [FORCE] on this replica: the checks and errors of Redis, then either the
/// coordinated start (MFSTART to the primary) or, forced, an election at once.
pub fn manual_failover_start(server: &mut ServerState, force: bool) -> Result<(), &'static str> {
    let Some(primary) = check_can_fail_over(server, force)? else {
        return Err("ERR I'm a replica but my master is unknown to me");
    };
    reset_manual_failover(server);
    let now = server.clock.now_ms();
    server.cluster.bus.manual.end = now + MF_TIMEOUT;
    if force {
        server.log.warning("Forced failover user request accepted.");
        server.cluster.bus.manual.can_start = true;
    } else {
        server.log.warning("Manual failover user request accepted.");
        if let Some(link) = server.cluster.node(primary).and_then(|n| n.link) {
            let message = Message {
                header: header(server, kind::MFSTART),
                body: Body::Empty,
            };
            server.cluster.bus.send(link, message);
        }
    }
    Ok(())
}

/// Redis's preconditions of CLUSTER FAILOVER; `Ok(None)` when the primary is unknown.
fn check_can_fail_over(server: &ServerState, force: bool) -> Result<Option<u32>, &'static str> {
    if server.cluster.myself().is_primary() {
        return Err("ERR You should send CLUSTER FAILOVER to a replica");
    }
    let Some(primary) = my_primary(server) else {
        return Ok(None);
    };
    let node = server.cluster.node(primary).expect("found");
    if !force && (node.fail || node.link.is_none()) {
        return Err("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE");
    }
    Ok(Some(primary))
}

/// CLUSTER FAILOVER TAKEOVER: a new epoch without consensus, and the primary's slots.
pub fn take_over(server: &mut ServerState) -> Result<(), &'static str> {
    if check_can_fail_over(server, true)?.is_none() {
        return Err("ERR I'm a replica but my master is unknown to me");
    }
    reset_manual_failover(server);
    let now = server.clock.now_ms();
    server.cluster.bus.manual.end = now + MF_TIMEOUT;
    server.log.warning("Taking over the master (user request).");
    bump_epoch_without_consensus(server);
    replace_primary(server);
    Ok(())
}

/// Redis's `clusterBumpConfigEpochWithoutConsensus`: a new epoch unless this node's is already
/// the highest and not 0. True if it changed.
pub fn bump_epoch_without_consensus(server: &mut ServerState) -> bool {
    let cluster = &mut server.cluster;
    let max = cluster.max_epoch();
    let mine = cluster.myself().config_epoch;
    if mine != 0 && mine == max {
        return false;
    }
    cluster.current_epoch += 1;
    let epoch = cluster.current_epoch;
    cluster.myself_mut().config_epoch = epoch;
    cluster.version += 1;
    cluster.bus.save_config = true;
    true
}

/// The end of every failover (Redis's `clusterFailoverReplaceYourMaster`): this replica
/// becomes a primary, takes its primary's slots and tells every node at once.
pub(super) fn replace_primary(server: &mut ServerState) {
    let Some(old) = my_primary(server) else {
        return;
    };
    set_node_as_primary(server, MYSELF);
    server.cluster.bus.effects.push(BusEffect::Promote);
    let cluster = &mut server.cluster;
    for slot in 0..SLOTS as u16 {
        if cluster.owner(slot) == old {
            cluster.set_owner(slot, MYSELF);
        }
    }
    cluster.bus.save_config = true;
    update_state(server);
    broadcast_pong(server, false);
    reset_manual_failover(server);
}

/// A primary's vote for the replica `number` asking (Redis's `clusterSendFailoverAuthIfNeeded`).
pub(super) fn vote_if_needed(server: &mut ServerState, number: u32, request: &Header) {
    let now = server.clock.now_ms();
    let timeout = node_timeout(server);
    if let Err(reason) = may_vote(server, number, request, now, timeout) {
        if !reason.is_empty() {
            let id = id_of(server, number);
            server
                .log
                .warning(&format!("Failover auth denied to {id}: {reason}"));
        }
        return;
    }
    let cluster = &mut server.cluster;
    cluster.last_vote_epoch = cluster.current_epoch;
    let epoch = cluster.current_epoch;
    if let Some(primary) = cluster.primary_of(number).and_then(|p| cluster.node_mut(p)) {
        primary.voted_time = now;
    }
    cluster.bus.save_config = true;
    if let Some(link) = cluster.node(number).and_then(|n| n.link) {
        let message = Message {
            header: header(server, kind::FAILOVER_AUTH_ACK),
            body: Body::Empty,
        };
        server.cluster.bus.send(link, message);
    }
    let id = id_of(server, number);
    server
        .log
        .warning(&format!("Failover auth granted to {id} for epoch {epoch}"));
}

/// Why this node may not vote for `number` (empty: silently).
fn may_vote(
    server: &ServerState,
    number: u32,
    request: &Header,
    now: i64,
    timeout: i64,
) -> Result<(), String> {
    let cluster = &server.cluster;
    if !cluster.myself().is_primary() || cluster.slot_count(MYSELF) == 0 {
        return Err(String::new());
    }
    if request.current_epoch < cluster.current_epoch {
        return Err(format!(
            "reqEpoch ({}) < curEpoch({})",
            request.current_epoch, cluster.current_epoch
        ));
    }
    if cluster.last_vote_epoch == cluster.current_epoch {
        return Err(format!("already voted for epoch {}", cluster.current_epoch));
    }
    let node = cluster.node(number).expect("sender");
    let primary = cluster
        .primary_of(number)
        .filter(|&p| p != number)
        .and_then(|p| cluster.node(p));
    let force = request.mflags[0] & message_flag::FORCEACK != 0;
    match primary {
        _ if node.is_primary() => return Err("it is a master node".into()),
        None => return Err("I don't know its master".into()),
        Some(p) if !p.fail && !force => return Err("its master is up".into()),
        Some(p) if now - p.voted_time < timeout * 2 => {
            return Err(format!(
                "can't vote about this master before {} milliseconds",
                timeout * 2 - (now - p.voted_time)
            ))
        }
        Some(_) => {}
    }
    for slot in 0..SLOTS as u16 {
        if !request.slots.contains(slot) {
            continue;
        }
        let owner = cluster.owner(slot);
        if owner == NO_NODE {
            continue;
        }
        let epoch = cluster.node(owner).map_or(0, |o| o.config_epoch);
        if epoch > request.config_epoch {
            return Err(format!(
                "slot {slot} epoch ({epoch}) > reqEpoch ({})",
                request.config_epoch
            ));
        }
    }
    Ok(())
}

/// A vote for this replica: it counts if it comes from a primary serving slots, cast in this
/// election's epoch or later.
pub(super) fn vote_received(server: &mut ServerState, number: u32, sender_epoch: u64) {
    let cluster = &mut server.cluster;
    let serving = cluster.slot_count(number) > 0;
    let primary = cluster.node(number).is_some_and(|n| n.is_primary());
    if primary && serving && sender_epoch >= cluster.bus.election.epoch {
        cluster.bus.election.votes += 1;
        // Perhaps a majority now: look at once rather than at the next tick.
        let now = server.clock.now_ms();
        handle_replica_failover(server, now);
    }
}

/// MFSTART from one of this primary's replicas: writes pause (for twice the time limit) and
/// the replica gets a PING carrying the final offset.
pub(super) fn manual_failover_asked(server: &mut ServerState, number: u32, link: LinkId) {
    let mine = matches!(&server.cluster.node(number).map(|n| &n.role),
        Some(Role::Replica(id)) if *id == server.cluster.myself().id);
    if !mine {
        return;
    }
    reset_manual_failover(server);
    let now = server.clock.now_ms();
    let id = id_of(server, number);
    server.cluster.bus.manual = ManualFailover {
        end: now + MF_TIMEOUT,
        can_start: false,
        replica: Some(id.clone()),
        primary_offset: None,
    };
    server.cluster.bus.effects.push(BusEffect::PauseWrites {
        until: now + MF_TIMEOUT * 2,
    });
    server
        .log
        .warning(&format!("Manual failover requested by replica {id}."));
    send_ping(server, link, kind::PING);
}

/// The replica's side of a manual failover: once it processed the paused primary's final
/// offset, the election may start.
pub(super) fn handle_manual_failover(server: &mut ServerState) {
    let manual = &server.cluster.bus.manual;
    if manual.end == 0 || manual.can_start {
        return;
    }
    if manual.primary_offset == Some(server.repl.offset) {
        server.cluster.bus.manual.can_start = true;
        server
            .log
            .warning("All master replication stream processed, manual failover can start.");
        let now = server.clock.now_ms();
        handle_replica_failover(server, now);
    }
}

/// How many other replicas of this node's primary have a greater offset (they go first).
fn rank(server: &ServerState, primary: u32) -> usize {
    let mine = server.repl.offset;
    server
        .cluster
        .replicas_of(primary)
        .into_iter()
        .filter(|&r| r != MYSELF)
        .filter_map(|r| server.cluster.node(r))
        .filter(|r| !r.nofailover && r.repl_offset > mine)
        .count()
}

/// How long (ms) this replica has been without its primary's data, less the node timeout.
fn data_age(server: &ServerState, now: i64, timeout: i64) -> i64 {
    // Since the last byte from the primary: while the link is up, and after it went down
    // (Redis's `repl_down_since` is the cached time of the last interaction, not of the
    // moment the dead link is noticed). Never linked: as old as can be, as in Redis.
    let age = match &server.repl.primary {
        Some(p) if p.last_data_ms > 0 => now - p.last_data_ms,
        Some(_) => i64::MAX / 4,
        None => 0,
    };
    if age > timeout {
        age - timeout
    } else {
        age
    }
}

/// Redis's `clusterHandleSlaveFailover`: schedule the election, ask for votes, and with a
/// majority take over.
pub(super) fn handle_replica_failover(server: &mut ServerState, now: i64) {
    let timeout = node_timeout(server);
    let auth_timeout = (timeout * 2).max(2000);
    let retry = auth_timeout * 2;
    let manual = server.cluster.bus.manual.end != 0 && server.cluster.bus.manual.can_start;
    let Some(primary) = my_primary(server) else {
        return;
    };
    let failed = server.cluster.node(primary).is_some_and(|p| p.fail);
    let no_failover = server.config.cluster.replica_no_failover;
    if (!manual && (!failed || no_failover)) || server.cluster.slot_count(primary) == 0 {
        server.cluster.bus.cant_failover_reason = 0;
        return;
    }
    let factor = i64::from(server.config.cluster.replica_validity_factor);
    let ping_period = i64::from(server.config.repl_ping_replica_period) * 1000;
    if factor != 0 && data_age(server, now, timeout) > ping_period + timeout * factor && !manual {
        return log_cant_failover(server, 1, now, "Disconnected from master for longer than allowed. Please check the 'cluster-replica-validity-factor' configuration option.");
    }
    let election = &server.cluster.bus.election;
    if now - election.auth_time > retry {
        return schedule_election(server, primary, now);
    }
    if !election.requested && server.cluster.bus.manual.end == 0 {
        let new_rank = rank(server, primary);
        let election = &mut server.cluster.bus.election;
        if new_rank > election.rank {
            election.auth_time += (new_rank - election.rank) as i64 * 1000;
            election.rank = new_rank;
        }
    }
    let election = &server.cluster.bus.election;
    if now < election.auth_time {
        return log_cant_failover(
            server,
            2,
            now,
            "Waiting the delay before I can start a new failover.",
        );
    }
    if now - election.auth_time > auth_timeout {
        return log_cant_failover(server, 3, now, "Failover attempt expired.");
    }
    if !election.requested {
        return request_votes(server);
    }
    let quorum = server.cluster.size / 2 + 1;
    if server.cluster.bus.election.votes >= quorum {
        server
            .log
            .warning("Failover election won: I'm the new master.");
        let epoch = server.cluster.bus.election.epoch;
        if server.cluster.myself().config_epoch < epoch {
            server.cluster.myself_mut().config_epoch = epoch;
            server.log.warning(&format!(
                "configEpoch set to {epoch} after successful failover"
            ));
        }
        replace_primary(server);
    } else {
        log_cant_failover(
            server,
            4,
            now,
            "Waiting for votes, but majority still not reached.",
        );
    }
}

/// Schedules the election: 500 ms plus up to 500 at random plus a second per rank (at once
/// for a manual failover), and tells the shard's other replicas this node's offset.
fn schedule_election(server: &mut ServerState, primary: u32, now: i64) {
    let jitter = server.rng.gen_range(0..500);
    let rank = rank(server, primary);
    let manual = server.cluster.bus.manual.end != 0;
    let election = &mut server.cluster.bus.election;
    election.votes = 0;
    election.requested = false;
    if manual {
        election.auth_time = now;
        election.rank = 0;
    } else {
        election.auth_time = now + 500 + jitter + rank as i64 * 1000;
        election.rank = rank;
    }
    let (delay, rank) = (election.auth_time - now, election.rank);
    let offset = server.repl.offset;
    server.log.warning(&format!(
        "Start of election delayed for {delay} milliseconds (rank #{rank}, offset {offset})."
    ));
    broadcast_pong(server, true);
    if manual {
        handle_replica_failover(server, now);
    }
}

/// Starts the election: a new epoch, and a FAILOVER_AUTH_REQUEST to every node.
fn request_votes(server: &mut ServerState) {
    let cluster = &mut server.cluster;
    cluster.current_epoch += 1;
    let epoch = cluster.current_epoch;
    cluster.bus.election.epoch = epoch;
    cluster.bus.election.requested = true;
    cluster.bus.save_config = true;
    server
        .log
        .warning(&format!("Starting a failover election for epoch {epoch}."));
    let mut h = header(server, kind::FAILOVER_AUTH_REQUEST);
    if server.cluster.bus.manual.end != 0 {
        h.mflags[0] |= message_flag::FORCEACK;
    }
    broadcast(
        server,
        Message {
            header: h,
            body: Body::Empty,
        },
    );
}

/// Logs why the failover cannot go on, when the reason changed or every 10 s, and not in the
/// first node timeout + 5 s after the primary failed (Redis's `clusterLogCantFailover`).
fn log_cant_failover(server: &mut ServerState, reason: u8, now: i64, text: &str) {
    let bus = &server.cluster.bus;
    if reason == bus.cant_failover_reason && now - bus.cant_failover_logged < 10_000 {
        return;
    }
    server.cluster.bus.cant_failover_reason = reason;
    let quiet = node_timeout(server) + 5000;
    let recent = my_primary(server)
        .and_then(|p| server.cluster.node(p))
        .is_some_and(|p| p.fail && now - p.fail_time < quiet);
    if recent {
        return;
    }
    server.cluster.bus.cant_failover_logged = now;
    server
        .log
        .warning(&format!("Currently unable to failover: {text}"));
}

/// Redis's `clusterHandleSlaveMigration`: a replica of a shard with more working replicas
/// than `cluster-migration-barrier` moves to a primary orphaned for 5 s, if it is the
/// shard's replica with the smallest ID.
pub(super) fn handle_replica_migration(server: &mut ServerState, max_replicas: usize) {
    if !server.cluster.state_ok() {
        return;
    }
    let Some(mine) = my_primary(server) else {
        return;
    };
    let ok = working_replicas(server, mine);
    if ok <= server.config.cluster.migration_barrier as usize {
        return;
    }
    let now = server.clock.now_ms();
    let mut target = None;
    let mut candidate = server.cluster.myself().id.clone();
    for number in server.cluster.known().map(|(n, _)| n).collect::<Vec<_>>() {
        let node = server.cluster.node(number).expect("known");
        let working = if node.is_primary() {
            working_replicas(server, number)
        } else {
            0
        };
        let orphaned = node.is_primary() && !node.fail && node.migrate_to && working == 0;
        let serving = server.cluster.slot_count(number) > 0;
        let node = server.cluster.node_mut(number).expect("known");
        if orphaned {
            if target.is_none() && serving {
                target = Some(number);
            }
            if node.orphaned_time == 0 {
                node.orphaned_time = now;
            }
        } else {
            node.orphaned_time = 0;
        }
        if working == max_replicas {
            for replica in server.cluster.replicas_of(number) {
                let id = id_of(server, replica);
                if id < candidate {
                    candidate = id;
                }
            }
        }
    }
    let Some(target) = target else {
        return;
    };
    let since = server.cluster.node(target).map_or(now, |n| n.orphaned_time);
    if candidate == server.cluster.myself().id && now - since > MIGRATION_DELAY {
        let id = id_of(server, target);
        server
            .log
            .warning(&format!("Migrating to orphaned master {id}"));
        set_primary(server, target);
    }
}

/// Replicas of `primary` not flagged FAIL.
pub(super) fn working_replicas(server: &ServerState, primary: u32) -> usize {
    server
        .cluster
        .replicas_of(primary)
        .into_iter()
        .filter(|&r| server.cluster.node(r).is_some_and(|n| !n.fail))
        .count()
}
