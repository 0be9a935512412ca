//! Where the cluster bus (`crate::services::cluster`) meets the rest of the engine: the I/O
//! layer's bus events go through here, and after each the bus's requests of the engine
//! ([`BusEffect`]) are carried out — replicate another node, stop replicating, publish a
//! message from another node, pause writes for a manual failover, drop the keys of lost
//! slots — and the cluster's state is computed again if it may have changed.

use embedis_bus::Message;

use super::Engine;
use crate::model::cluster_bus_state::{BusAction, BusEffect};
use crate::model::cluster_view::LinkId;
use crate::services::cluster as bus;

impl Engine {
    /// The bus's tick (ten times a second, and when a test moves the clock).
    pub fn cluster_cron(&mut self) {
        bus::cron(&mut self.server);
        self.apply_cluster_effects();
    }

    /// A message received on `link`; false if the link was closed because of it.
    pub fn cluster_receive(&mut self, link: LinkId, message: Message) -> bool {
        let kept = bus::receive(&mut self.server, link, message);
        self.apply_cluster_effects();
        kept
    }

    /// A connection accepted on the bus port: its link number.
    pub fn cluster_accepted(&mut self, peer_ip: String, local_ip: String) -> LinkId {
        bus::accepted(&mut self.server, peer_ip, local_ip)
    }

    /// An outbound link connected.
    pub fn cluster_connected(&mut self, link: LinkId, local_ip: String) {
        bus::connected(&mut self.server, link, local_ip);
        self.apply_cluster_effects();
    }

    /// A link lost (or a connection that failed).
    pub fn cluster_link_lost(&mut self, link: LinkId) {
        bus::link_lost(&mut self.server, link);
    }

    /// A replica's announced offset changed meaning (a full sync began: 0, no data yet; the
    /// link came up: its data): the other nodes hear it now rather than at their next ping, so
    /// that CLUSTER SLOTS hides a replica while it loads and shows it once it is usable.
    pub(crate) fn cluster_offset_changed(&mut self) {
        if self.server.cluster.enabled {
            bus::broadcast_pong(&mut self.server, false);
        }
    }

    /// What the I/O layer must do now.
    pub fn cluster_actions(&mut self) -> Vec<BusAction> {
        self.server.cluster.bus.take_actions()
    }

    /// Carries out the bus's requests of the engine, then recomputes the cluster's state if
    /// something may have changed it.
    pub(crate) fn apply_cluster_effects(&mut self) {
        let effects = std::mem::take(&mut self.server.cluster.bus.effects);
        for effect in effects {
            self.apply_cluster_effect(effect);
        }
        let lost = std::mem::take(&mut self.server.cluster.bus.lost_channel_slots);
        if !lost.is_empty() && self.server.pubsub.channel_count(true) > 0 {
            self.drop_shard_channels(&lost);
        }
        if self.server.cluster.bus.update_state {
            bus::update_state(&mut self.server);
        }
        bus::config_file::save_if_changed(&mut self.server);
    }

    fn apply_cluster_effect(&mut self, effect: BusEffect) {
        let now = self.server.clock.now_ms();
        match effect {
            BusEffect::Follow { ip, port } => {
                let same = self
                    .server
                    .repl
                    .primary
                    .as_ref()
                    .is_some_and(|p| p.host == ip && p.port == port);
                if !same && !ip.is_empty() {
                    crate::commands::replication::follow_primary(&mut self.parts(), ip, port);
                }
            }
            BusEffect::Promote => {
                crate::commands::replication::stop_following(&mut self.parts());
            }
            BusEffect::Publish {
                channel,
                message,
                shard,
            } => {
                crate::kernel::publish::publish_detached(
                    &mut self.parts(),
                    &channel,
                    &message,
                    shard,
                    now,
                );
            }
            BusEffect::PauseWrites { until } => {
                let pause = self.server.pause_until(until, true);
                self.ks.expiry_held_until = pause.until_ms;
            }
            BusEffect::Unpause => self.unpause(),
            BusEffect::DeleteKeysInSlots(slots) => {
                let slots: std::collections::HashSet<u16> = slots.into_iter().collect();
                self.delete_keys_in_slots(&slots);
            }
        }
    }

    /// Unsubscribes every client from the shard channels of `slots`, each told with a
    /// `sunsubscribe` push (Redis's `removeChannelsInSlot`).
    fn drop_shard_channels(&mut self, slots: &[u16]) {
        use crate::model::pubsub::Kind;
        let names: Vec<bytes::Bytes> = self
            .server
            .pubsub
            .channel_names(true, None)
            .into_iter()
            .filter(|name| slots.contains(&crate::model::cluster_view::key_slot(name)))
            .cloned()
            .collect();
        for name in names {
            for id in self.server.pubsub.subscribers(&name, true).to_vec() {
                self.server.pubsub.unsubscribe(Kind::Shard, &name, id);
                let Some(client) = self.clients.get_mut(id) else {
                    continue;
                };
                client.subs.of_mut(Kind::Shard).shift_remove(&name);
                let count = client.subs.count(Kind::Shard);
                let version = client.resp;
                let mut out = embedis_protocol::Writer::new(&mut client.pending, version);
                out.push(3);
                out.bulk(b"sunsubscribe");
                out.bulk(&name);
                out.integer(count as i64);
                self.server.pending_writes.push(id);
            }
        }
    }

    /// Deletes the keys of database 0 whose slot is in `slots` (Redis's `delKeysInSlot`).
    fn delete_keys_in_slots(&mut self, slots: &std::collections::HashSet<u16>) {
        let keys: Vec<Vec<u8>> = self.ks.dbs[0]
            .main
            .iter()
            .map(|(key, _)| key.as_ref())
            .filter(|k| slots.contains(&crate::model::cluster_view::key_slot(k)))
            .map(<[u8]>::to_vec)
            .collect();
        let now = self.server.clock.now_ms();
        for key in keys {
            self.ks.delete(0, &key, now);
        }
    }
}
