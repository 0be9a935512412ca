//! The cluster bus's own state beside the node table: the links (each TCP connection of the
//! bus, outbound to a node or inbound from one), what is waiting to be sent or done, the
//! replica election and the manual failover in progress, and the message counters.
//!
//! The bus is a state machine (`crate::services::cluster`) that reads and writes this; the I/O
//! layer (`crate::io::cluster_bus`) only moves bytes. They meet here: the state machine queues
//! [`BusAction`]s (connect, send, close) and wakes the I/O task, which reports back what
//! happened on the sockets. [`BusEffect`]s are what the engine must do beyond the cluster view
//! (replicate another node, publish a message that came over the bus, pause writes for a
//! manual failover).

use std::collections::BTreeMap;
use std::sync::Arc;

use embedis_bus::Message;

/// A bus link's number: links are numbered in creation order and never reused, so that an
/// event of a closed link cannot reach a newer one.
pub type LinkId = u64;

/// One bus connection.
#[derive(Debug, Clone)]
pub struct Link {
    /// The node at the other end, once known (an inbound link learns it from the first
    /// message of a known node).
    pub node: Option<u32>,
    /// Accepted from the other node (else dialled by this one).
    pub inbound: bool,
    /// When it was created (CLUSTER LINKS' `create-time`).
    pub created: i64,
    /// Bytes queued and not yet written (CLUSTER LINKS' send buffer figures).
    pub send_buffer: usize,
    /// The other end's address, and this end's (an inbound link tells a node its own IP).
    pub peer_ip: String,
    pub local_ip: String,
}

/// What the I/O layer is asked to do.
#[derive(Debug, Clone)]
pub enum BusAction {
    /// Dial `ip:port` for `link`; on success the state machine hears `connected`.
    Connect {
        link: LinkId,
        ip: String,
        port: u16,
    },
    Send {
        link: LinkId,
        message: Box<Message>,
    },
    Close {
        link: LinkId,
    },
}

/// What the engine is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusEffect {
    /// Replicate the node at `ip:port` (a replica's primary changed).
    Follow { ip: String, port: u16 },
    /// Stop replicating: this replica became a primary.
    Promote,
    /// A message another node published (SPUBLISH's when `shard`).
    Publish {
        channel: Vec<u8>,
        message: Vec<u8>,
        shard: bool,
    },
    /// Hold writes until `until` (ms): a replica asked this primary for a manual failover.
    PauseWrites { until: i64 },
    /// End the manual failover's pause.
    Unpause,
    /// Delete the keys of slots this primary lost while keeping others.
    DeleteKeysInSlots(Vec<u16>),
}

/// A replica's election (Redis's `failover_auth_*`).
#[derive(Debug, Clone, Default)]
pub struct Election {
    /// When the election may start (or started); 0: none scheduled.
    pub auth_time: i64,
    pub votes: usize,
    pub requested: bool,
    pub rank: usize,
    pub epoch: u64,
}

/// A manual failover (CLUSTER FAILOVER without TAKEOVER) in progress, on either side.
#[derive(Debug, Clone, Default)]
pub struct ManualFailover {
    /// When it times out; 0: none in progress.
    pub end: i64,
    /// The replica has the primary's final offset: the election may start.
    pub can_start: bool,
    /// On the primary: the replica that asked.
    pub replica: Option<String>,
    /// On the replica: the offset the paused primary announced.
    pub primary_offset: Option<u64>,
}

/// The bus's state (see the module docs).
#[derive(Debug)]
pub struct BusState {
    pub links: BTreeMap<LinkId, Link>,
    next_link: LinkId,
    pub outbox: Vec<BusAction>,
    pub effects: Vec<BusEffect>,
    /// Wakes the I/O task when [`BusState::outbox`] has something.
    pub wake: Arc<tokio::sync::Notify>,
    /// Messages sent and received, by type (CLUSTER INFO's `cluster_stats_messages_*`).
    pub sent: [u64; 11],
    pub received: [u64; 11],
    pub election: Election,
    pub manual: ManualFailover,
    /// How many times the cron ran (a random node is pinged every tenth).
    pub iteration: u64,
    /// When the state was first computed, and when this node last found itself in a minority
    /// (a primary waits before it serves again).
    pub first_state_update: i64,
    pub among_minority_time: i64,
    /// DEBUG DROP-CLUSTER-PACKET-FILTER: messages of this type are dropped on receipt (-1: none).
    pub drop_filter: i32,
    /// Links closed for exceeding `cluster-link-sendbuf-limit`.
    pub buffer_limit_exceeded: u64,
    /// Why the last election could not go on, and when that was last logged.
    pub cant_failover_reason: u8,
    pub cant_failover_logged: i64,
    /// The state must be computed again before the next request (Redis's
    /// `CLUSTER_TODO_UPDATE_STATE`).
    pub update_state: bool,
    /// The configuration changed and must reach `nodes.conf`.
    pub save_config: bool,
    /// The view's version `nodes.conf` holds.
    pub saved_version: u64,
    /// Slots this node's shard stopped serving: the engine unsubscribes their shard channels.
    pub lost_channel_slots: Vec<u16>,
}

impl Default for BusState {
    fn default() -> BusState {
        BusState {
            links: BTreeMap::new(),
            next_link: 1,
            outbox: Vec::new(),
            effects: Vec::new(),
            wake: Arc::default(),
            sent: [0; 11],
            received: [0; 11],
            election: Election::default(),
            manual: ManualFailover::default(),
            iteration: 0,
            first_state_update: 0,
            among_minority_time: 0,
            drop_filter: -1,
            buffer_limit_exceeded: 0,
            cant_failover_reason: 0,
            cant_failover_logged: 0,
            update_state: false,
            save_config: false,
            saved_version: 0,
            lost_channel_slots: Vec::new(),
        }
    }
}

impl BusState {
    /// A new link (not yet connected, for an outbound one): its number.
    pub fn open(&mut self, node: Option<u32>, inbound: bool, now: i64) -> LinkId {
        self.open_from(node, inbound, now, String::new(), String::new())
    }

    /// As [`BusState::open`], with the addresses of both ends.
    pub fn open_from(
        &mut self,
        node: Option<u32>,
        inbound: bool,
        now: i64,
        peer_ip: String,
        local_ip: String,
    ) -> LinkId {
        let id = self.next_link;
        self.next_link += 1;
        self.links.insert(
            id,
            Link {
                node,
                inbound,
                created: now,
                send_buffer: 0,
                peer_ip,
                local_ip,
            },
        );
        id
    }

    /// Forgets `link` and asks the I/O layer to close it. The caller clears the node's field.
    pub fn close(&mut self, link: LinkId) {
        if self.links.remove(&link).is_some() {
            self.outbox.push(BusAction::Close { link });
            self.wake.notify_one();
        }
    }

    /// Queues `message` on `link`, counting it by type.
    pub fn send(&mut self, link: LinkId, message: Message) {
        if !self.links.contains_key(&link) {
            return;
        }
        if let Some(count) = self.sent.get_mut(message.header.kind as usize) {
            *count += 1;
        }
        self.outbox.push(BusAction::Send {
            link,
            message: Box::new(message),
        });
        self.wake.notify_one();
    }

    /// Takes what the I/O layer must do.
    pub fn take_actions(&mut self) -> Vec<BusAction> {
        std::mem::take(&mut self.outbox)
    }
}

/// The names of the message types as CLUSTER INFO prints them, by type number.
pub const MESSAGE_NAMES: [&str; 11] = [
    "ping",
    "pong",
    "meet",
    "fail",
    "publish",
    "auth-req",
    "auth-ack",
    "update",
    "mfstart",
    "module",
    "publishshard",
];
