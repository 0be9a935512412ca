//! The periodic tick and what the clock drives: a signal's shutdown and the end of a shutdown's
//! wait for replicas, blocked-client and CLIENT PAUSE timeouts, idle
//! clients, active expiry, incremental rehashing, and eviction left over by a pass that ran out
//! of time. It runs `hz` times a second from the timer
//! task, and at once before the next command when a test moves the clock.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::Engine;
use crate::kernel::publish;
use crate::model::client::ClientId;
use crate::services::expire;

impl Engine {
    /// Fires blocked-client timeouts and the end of CLIENT PAUSE that are due at the clock's now.
    pub fn process_timeouts(&mut self) {
        // A paused server (a fault) fires nothing until the pause ends.
        if self.server.faults.active() && self.faults_on_timer() {
            return;
        }
        let now = self.server.clock.now_ms();
        if let Some(pause) = self.server.timed_pause {
            if now >= pause.until_ms {
                self.unpause();
            }
        }
        for id in self.server.blocked.due(now) {
            self.release(id, false);
        }
        // An eviction pass that ran out of time goes on between commands until memory is under
        // the limit or nothing more can go (Redis's eviction time event).
        if self.server.eviction.running {
            self.continue_eviction(now);
        }
        // Commands re-run when a pause ended may have written to keys others wait on.
        if self.ks.ready.has_ready() {
            self.serve_ready_keys();
        }
    }

    /// Runs the tick now if a test moved the clock since the last one ([`crate::model::state::ServerState::clock_changed`]),
    /// so that every command after `Clock::advance` returns sees its keys expired and its
    /// timeouts fired — without waiting for the timer task, which the change also wakes.
    #[inline]
    pub fn catch_up_with_clock(&mut self) {
        if self.server.clock_changed.load(Ordering::Relaxed)
            && self.server.clock_changed.swap(false, Ordering::AcqRel)
        {
            self.cron();
            // The bus's timeouts follow the clock too (a node fails over when a test moves it).
            if self.server.cluster.enabled {
                self.cluster_cron();
            }
        }
    }

    /// The periodic tick.
    pub fn cron(&mut self) {
        // The watchdog is re-armed by every tick (only the binary has one).
        if self.server.owns_process {
            crate::base::watchdog::tick(
                self.server.config.process.watchdog_period,
                &self.server.log,
            );
        }
        if self.server.cron_paused {
            return;
        }
        let now = self.server.clock.now_ms();
        // A signal's shutdown begins here, and one waiting for replicas ends here.
        if crate::services::shutdown::cron(&mut self.ks, &mut self.server).is_some() {
            self.carry_out_requests();
        }
        self.process_timeouts();
        // A FAILOVER waiting for its replica (Redis checks it in `beforeSleep` and its
        // replication cron, which runs every 100 ms while a failover is on).
        if self.server.repl.failover.is_on() {
            crate::commands::failover::update_failover_status(&mut self.parts(), now);
            self.carry_out_requests();
        }
        if self.server.cluster.enabled {
            self.redirect_blocked_clients();
        }
        self.close_idle_clients(now);
        self.close_clients_over_output_limits(now);
        self.resize_query_buffers(now);
        if self.server.client_memory.on() {
            self.client_memory_cron();
        }
        self.server.stats.sample(now);
        let hz = self.server.config.hz.max(1) as u64;
        // Redis gives the slow expiry cycle 25% of each tick.
        let budget = Duration::from_micros(1_000_000 * 25 / 100 / hz);
        // A paused server keeps its dataset constant: no active expiry (Redis's
        // `activeExpireCycle` returns at once while clients are paused).
        // A replica's keys expire by its primary's DELs (Redis runs the cycle on primaries),
        // except those its own clients wrote with a TTL (a writable replica).
        if self.ks.expiry_rule != crate::model::keyspace::ExpiryRule::Delete {
            self.ks.expire_replica_keys(now);
        }
        if self.server.active_expire
            && !self.ks.expiry_held(now)
            && self.ks.expiry_rule == crate::model::keyspace::ExpiryRule::Delete
        {
            let started = Instant::now();
            expire::active_expire_cycle(&mut self.ks, &mut self.server, now, budget);
            // LATENCY's `expire-cycle` event: the cycle's own time, deletions included.
            let threshold = self.server.config.latency_monitor_threshold;
            let ms = started.elapsed().as_millis() as u64;
            let now_s = now.div_euclid(1000);
            self.server
                .latency
                .add_if_needed("expire-cycle", ms, threshold, now_s);
        }
        // Keyspace events noted outside any command (active expiry's `expired`): no command
        // will publish them, so they go out now.
        if self.ks.notify.has_pending() {
            publish::keyspace_events_detached(
                &mut self.ks,
                &mut self.server,
                &mut self.clients,
                now,
            );
        }
        // Save points and scheduled saves; a running background save advances a little here too
        // (the I/O layer drives it between turns; this keeps it going where that does not).
        crate::services::rdb_saving::cron(&mut self.ks, &mut self.server);
        crate::services::aof::cron(&mut self.ks, &mut self.server);
        // MIGRATE's cached connections unused for 10 s close (Redis's
        // `migrateCloseTimedoutSockets`).
        if !self.server.migrate_sockets.is_empty() {
            let idle = crate::model::state::MigrateSocket::IDLE_MS;
            self.server
                .migrate_sockets
                .retain(|_, socket| now - socket.last_use_ms <= idle);
        }
        self.ping_replicas(now);
        // After the children's ends were seen above, before the tables resize.
        crate::services::child_processes::update_resize_policy(&mut self.ks, &self.server);
        self.resize_and_rehash();
        // Keys the cycle expired, and the tracking table's size limit, outside any command.
        if self.ks.tracking.is_on() {
            crate::kernel::invalidation::between_commands(&mut self.parts(), now);
        }
    }

    /// Redis's `replicationCron` ping: every `repl-ping-replica-period` seconds a PING goes
    /// down the replication stream (into the backlog too, with no SELECT), so that replicas can
    /// tell a quiet primary from a dead link.
    fn ping_replicas(&mut self, now_ms: i64) {
        self.sync_children_cron(now_ms);
        if self.server.repl.replicas.is_empty() {
            self.free_lonely_backlog(now_ms);
            return;
        }
        self.server.repl.alone_since_ms = None;
        crate::commands::full_sync::start_due_syncs(&mut self.parts(), now_ms);
        crate::model::replication::release_paced_images(
            &mut self.server.repl,
            &mut self.clients,
            &mut self.server.pending_writes,
        );
        // A replica silent for `repl-timeout` is dropped (Redis's replicationCron); one attached
        // by the old SYNC never acknowledges and is kept, and so is one still waiting for or
        // receiving its image (Redis checks only replicas online).
        let timeout_ms = i64::from(self.server.config.repl_timeout) * 1000;
        let silent: Vec<_> = self
            .server
            .repl
            .replicas
            .iter()
            .filter(|r| r.is_synced() && !r.pre_psync && !r.receiving_image())
            .filter(|r| now_ms - r.ack_time_ms > timeout_ms)
            .map(|r| (r.id, format!("{}:{}", r.ip, r.listening_port)))
            .collect();
        for (id, addr) in silent {
            self.server.log.warning(&format!(
                "Disconnecting timedout replica (streaming sync): {addr}"
            ));
            if let Some(client) = self.clients.get(id) {
                client.handle.kill();
            }
            self.disconnect(id);
        }
        let period_ms = i64::from(self.server.config.repl_ping_replica_period) * 1000;
        // No PING while a failover waits for a replica to acknowledge our offset: it would
        // move the offset it waits for (Redis holds it during a paused failover too).
        let failing_over = self.server.repl.failover.is_on();
        if now_ms - self.server.repl.last_ping_ms >= period_ms && !failing_over {
            self.server.repl.last_ping_ms = now_ms;
            self.ks
                .stream
                .to_replicas_only(&[bytes::Bytes::from_static(b"PING")]);
        }
    }

    /// Full syncs through the binary's children: a diskless one's targets that stopped
    /// reading for `repl-timeout` are dropped and its child collected
    /// ([`crate::services::rdb_transfer`]); the replicas waiting for a BGSAVE to disk get its
    /// file once it ends. Replicas whose child failed are dropped (they sync again).
    fn sync_children_cron(&mut self, now_ms: i64) {
        let mut dropped = crate::commands::full_sync::serve_disk_syncs(&mut self.parts());
        if self.server.repl.transfer.is_some() {
            dropped.extend(crate::services::rdb_transfer::drop_stalled(
                &mut self.server,
                now_ms,
            ));
            dropped.extend(crate::services::rdb_transfer::collect(
                &mut self.server,
                &mut self.clients,
            ));
        }
        for id in dropped {
            if let Some(client) = self.clients.get(id) {
                client.handle.kill();
            }
            self.disconnect(id);
        }
    }

    /// A primary whose backlog has had no replica for `repl-backlog-ttl` seconds frees it
    /// (Redis's replicationCron): the stream stops, and a new replication ID says that no
    /// replica can continue the old history from here.
    fn free_lonely_backlog(&mut self, now_ms: i64) {
        let repl = &mut self.server.repl;
        if repl.backlog.is_none() || repl.primary.is_some() {
            repl.alone_since_ms = None;
            return;
        }
        let since = *repl.alone_since_ms.get_or_insert(now_ms);
        let ttl = i64::from(self.server.config.repl_backlog_ttl);
        if ttl == 0 || (now_ms - since) / 1000 < ttl {
            return;
        }
        let replid = self.server.random_id();
        let repl = &mut self.server.repl;
        repl.backlog = None;
        repl.alone_since_ms = None;
        repl.replid = replid;
        repl.replid2 = "0".repeat(40);
        repl.second_offset = -1;
        self.ks.stream.remove_consumer();
        self.server.log.notice(&format!(
            "Replication backlog freed after {ttl} seconds without connected replicas."
        ));
    }

    /// Shrinks tables that fell under 10% full and gives incremental rehashing one millisecond
    /// per tick in total — to the first table that needs it, as Redis's `databasesCron` does —
    /// so that the tick never holds clients up for long.
    /// Cluster mode: a client blocked on a key whose slot this node no longer serves (moved
    /// away, unassigned, the cluster down) would wait for a write that never comes here; it is
    /// released with the redirection instead, as Redis's `clusterRedirectBlockedClientIfNeeded`
    /// does. A slot being imported keeps its waiters.
    fn redirect_blocked_clients(&mut self) {
        use crate::model::blocking::BlockReason;
        use crate::model::cluster_view::{key_slot, Role, MYSELF, NO_NODE};
        let cluster = &self.server.cluster;
        let preferred = &self.server.config.cluster.preferred_endpoint_type;
        let mut redirected = Vec::new();
        for client in self.clients.iter() {
            let Some(blocked) = &client.blocked else {
                continue;
            };
            let BlockReason::Keys(wait) = &blocked.reason else {
                continue;
            };
            if !cluster.state_ok() {
                redirected.push((client.id, "CLUSTERDOWN The cluster is down".to_string()));
                continue;
            }
            let Some(key) = wait.keys.first() else {
                continue;
            };
            let slot = key_slot(key.as_ref());
            let mut owner = cluster.owner(slot);
            let replica_of_owner = matches!(&cluster.myself().role, Role::Replica(primary)
                if cluster.node(owner).is_some_and(|n| &n.id == primary));
            if client.cluster_readonly && replica_of_owner {
                owner = MYSELF;
            }
            if owner == MYSELF || cluster.importing.contains_key(&slot) {
                continue;
            }
            let error = if owner == NO_NODE {
                "CLUSTERDOWN Hash slot not served".to_string()
            } else {
                let node = cluster.node(owner).expect("slot owner");
                format!("MOVED {slot} {}:{}", node.endpoint(preferred), node.port)
            };
            redirected.push((client.id, error));
        }
        for (id, error) in redirected {
            self.release_with_error(id, error.as_bytes());
        }
    }

    fn resize_and_rehash(&mut self) {
        for db in self.ks.dbs.iter_mut() {
            db.main.shrink_if_needed();
            db.expires.shrink_if_needed();
        }
        if !self.server.config.activerehashing {
            return;
        }
        for db in self.ks.dbs.iter_mut() {
            if db.main.is_rehashing() {
                db.main.rehash_for(Duration::from_millis(1));
                return;
            }
            if db.expires.is_rehashing() {
                db.expires.rehash_for(Duration::from_millis(1));
                return;
            }
        }
    }

    fn close_idle_clients(&mut self, now_ms: i64) {
        let timeout = self.server.config.timeout;
        if timeout == 0 {
            return;
        }
        let limit = timeout as i64 * 1000;
        let idle: Vec<ClientId> = self
            .clients
            .iter()
            .filter(|c| c.blocked.is_none() && !c.monitor && now_ms - c.last_interaction_ms > limit)
            .map(|c| c.id)
            .collect();
        for id in idle {
            self.server.log.verbose("Closing idle client");
            if let Some(c) = self.clients.get(id) {
                c.handle.kill();
            }
        }
    }

    /// Redis's `clientsCron` check of output-buffer limits: a client over its soft limit is
    /// closed once its seconds run out even when nothing more is written to it (the check on
    /// delivery alone would keep an idle subscriber over the limit connected). Replicas'
    /// limits are checked as their stream is fed.
    fn close_clients_over_output_limits(&mut self, now_ms: i64) {
        let limits = &self.server.config.obuf_limits;
        let over: Vec<ClientId> = self
            .clients
            .iter()
            .filter(|c| !c.replica && !c.master && !c.obuf.closing)
            .filter(|c| {
                let limit = &limits[publish::class_of(c)];
                limit.hard != 0 || limit.soft != 0
            })
            .filter(|c| crate::model::client::unsent_output(c) > 0)
            .map(|c| c.id)
            .collect();
        if over.is_empty() {
            return;
        }
        for id in over {
            let watching = self.ks.watches.watching(id);
            let Some(client) = self.clients.get_mut(id) else {
                continue;
            };
            let used = crate::model::client::unsent_output(client);
            publish::close_if_over_output_limit(&mut self.server, client, watching, used, now_ms);
        }
        self.carry_out_requests();
    }

    /// Redis's `clientsCron` resize of query buffers: asks idle clients' tasks to free their
    /// read buffers and others to drop room a big request left (see [`crate::model::query_buffer`]).
    fn resize_query_buffers(&mut self, now_ms: i64) {
        let (tuning, resizes) = (self.server.reply_tuning, &self.server.reply_resizes);
        for c in self.clients.iter() {
            let idle_seconds = (now_ms - c.last_interaction_ms).max(0) / 1000;
            let query_shrank = c.handle.query_buffer.cron(idle_seconds).is_some();
            let reply_shrank = c.handle.reply_buffer.cron(now_ms, tuning, resizes);
            if query_shrank || reply_shrank {
                c.handle.wake();
            }
        }
    }

    /// One more eviction pass for a pass that ran out of time (see [`crate::model::evict`]).
    pub fn continue_eviction(&mut self, now_ms: i64) {
        let safe = self.server.pause.is_none();
        let server = &mut self.server;
        server.eviction.not_counted = server.client_memory.closing_bytes()
            + server.repl.not_counted_for_eviction(&self.clients);
        server
            .eviction
            .perform(&mut self.ks, &server.config, safe, now_ms);
        crate::kernel::gates::record_eviction_latency(server, now_ms);
        // The `evicted` events go out now, as Redis publishes them at each deletion: queued
        // until the next command, their copies of the keys would count against its pass.
        if self.ks.notify.has_pending() {
            publish::keyspace_events_detached(
                &mut self.ks,
                &mut self.server,
                &mut self.clients,
                now_ms,
            );
        }
    }

    /// When the next timer-driven event is due (ms on the server clock), if any besides the tick.
    pub fn next_deadline(&self) -> Option<i64> {
        if self.server.eviction.running {
            // Evicting goes on as soon as the event loop is free.
            return Some(self.server.clock.now_ms());
        }
        let pause = self.server.timed_pause.map(|p| p.until_ms);
        let fault_pause = if self.server.faults.active() {
            self.server.faults.paused_until()
        } else {
            None
        };
        [pause, fault_pause, self.server.blocked.next_deadline()]
            .into_iter()
            .flatten()
            .min()
    }
}
