//! Cluster mode's model: this node's view of the cluster — its own 40-hex ID, the nodes it
//! knows, which node serves each of the 16,384 hash slots, the slots being migrated or imported,
//! and the epochs — plus [`key_slot`], the hash that maps a key to its slot.
//!
//! It exists only to answer two questions fast, on every request of a `cluster-enabled` server:
//! which slot does this key hash to, and does this node serve that slot (and if not, who does).
//! So the slot table holds node *numbers* (an index into `nodes`), and this node is always
//! number 0. A server without `cluster-enabled` never looks here: the gate that does is behind
//! one `enabled` branch.
//!
//! Unlike a fresh redis-server, a fresh embedis cluster node serves every slot (so that a
//! cluster client can be pointed at one embedis without any set-up); CLUSTER commands (DELSLOTS,
//! RESET, SETSLOT…) and what other nodes say over the bus then change that.
//!
//! Nodes carry what the bus learns of them (flags, failure reports, epochs, links): the bus's
//! state machine (`crate::services::cluster`) keeps them, and [`Cluster::state`] is what it last
//! computed (`ok` or `fail`), read by the redirection gate.

use std::collections::BTreeMap;

/// Number of hash slots.
pub const SLOTS: usize = 16384;

/// The slot table's mark for a slot no node serves.
pub const NO_NODE: u32 = u32::MAX;

/// CRC16's table (the XMODEM variant: polynomial 0x1021, initial value 0, no reflection), built
/// at compile time; a `static`, so that every call reads the same table.
static CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The table for two bytes at a time: CRC16 is linear, so two one-byte steps from the value
/// `x = crc ^ (b0 << 8 | b1)` come to `CRC16_TABLE2[x >> 8] ^ CRC16_TABLE[x & 0xff]`.
static CRC16_TABLE2: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut v = 0;
    while v < 256 {
        let t = CRC16_TABLE[v];
        table[v] = ((t & 0xff) << 8) ^ CRC16_TABLE[(t >> 8) as usize];
        v += 1;
    }
    table
};

#[inline(always)]
fn crc16_step(crc: u16, byte: u8) -> u16 {
    (crc << 8) ^ CRC16_TABLE[((crc >> 8) as u8 ^ byte) as usize]
}

/// CRC16 as Redis Cluster uses it (XMODEM), two bytes a step, eight bytes a load: a key's
/// bytes are read as big-endian words of 64 bits, and each word feeds four two-byte steps (on
/// every request of a cluster node; a per-chunk slice iterator cost a third more).
#[inline]
pub fn crc16(data: &[u8]) -> u16 {
    #[inline(always)]
    fn pair(crc: u16, two: u16) -> u16 {
        let x = crc ^ two;
        CRC16_TABLE2[(x >> 8) as usize] ^ CRC16_TABLE[(x & 0xff) as usize]
    }
    let mut crc = 0u16;
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_be_bytes(word.try_into().expect("8 bytes"));
        crc = pair(crc, (w >> 48) as u16);
        crc = pair(crc, (w >> 32) as u16);
        crc = pair(crc, (w >> 16) as u16);
        crc = pair(crc, w as u16);
    }
    let rest = words.remainder();
    let mut pairs = rest.chunks_exact(2);
    for two in &mut pairs {
        crc = pair(crc, u16::from_be_bytes([two[0], two[1]]));
    }
    pairs
        .remainder()
        .iter()
        .fold(crc, |crc, &byte| crc16_step(crc, byte))
}

/// The position of the first `{` in `key`, looked for eight bytes at a time.
#[inline]
fn first_brace(key: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let words = key.chunks_exact(8);
    let rest = words.remainder();
    for (index, word) in words.enumerate() {
        let x = u64::from_ne_bytes(word.try_into().expect("8 bytes")) ^ (ONES * b'{' as u64);
        // A zero byte in `x` is a `{` in the word (the classic "has a zero byte" test).
        if x.wrapping_sub(ONES) & !x & HIGHS != 0 {
            let at = word
                .iter()
                .position(|&b| b == b'{')
                .expect("a brace in the word");
            return Some(index * 8 + at);
        }
    }
    rest.iter()
        .position(|&b| b == b'{')
        .map(|at| key.len() - rest.len() + at)
}

/// The hash slot of `key`: CRC16 of the key modulo 16,384, or, when the key holds a `{…}` with
/// at least one byte between the first `{` and the first `}` after it, of those bytes only (a
/// hash tag, which lets related keys share a slot). Called on every request of a cluster node:
/// the `{` is looked for and the key hashed a word and two bytes at a time.
#[inline]
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match first_brace(key) {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16(hashed) & (SLOTS as u16 - 1)
}

/// A node's role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    Primary,
    /// A replica of the node with this ID.
    Replica(String),
}

pub use crate::model::cluster_bus_state::LinkId;

/// One node as this node knows it.
#[derive(Debug, Clone)]
pub struct Node {
    pub id: String,
    /// Empty until known (a lone node does not know its own address, as in Redis).
    pub ip: String,
    pub port: u16,
    /// The plaintext port when `port` is the TLS one (0: none).
    pub pport: u16,
    pub bus_port: u16,
    /// `cluster-announce-hostname` as the node announces it (empty: none).
    pub hostname: String,
    pub role: Role,
    pub config_epoch: u64,
    /// Milliseconds (of the server's clock) of the pending ping (0: none), of the last pong,
    /// and of the last byte received from the node.
    pub ping_sent: i64,
    pub pong_received: i64,
    pub data_received: i64,
    /// When this node learnt of it (a handshake lasts at most the node timeout).
    pub created: i64,
    /// Met but not yet answered with its ID (Redis's `handshake` flag); such a node has a
    /// random provisional ID.
    pub handshake: bool,
    /// A MEET, not a PING, opens the next link to it.
    pub meet: bool,
    /// No address known (a node that answered a link with another ID).
    pub noaddr: bool,
    /// No pong within the node timeout (`PFAIL`), and failing by the majority's reports (`FAIL`).
    pub pfail: bool,
    pub fail: bool,
    pub fail_time: i64,
    /// A replica that never fails over (`cluster-replica-no-failover` as it announces it).
    pub nofailover: bool,
    /// A primary that had replicas once (replica migration may give it one back).
    pub migrate_to: bool,
    /// Primaries that reported it failing, by ID, with the time of their last report.
    pub fail_reports: Vec<(String, i64)>,
    /// When this node last voted for a replica of it (a primary).
    pub voted_time: i64,
    /// Since when it is a primary with no working replica (replica migration waits 5 s).
    pub orphaned_time: i64,
    /// Its replication offset, as its last message said.
    pub repl_offset: u64,
    /// This node's link to it, and its link to this node.
    pub link: Option<LinkId>,
    pub inbound_link: Option<LinkId>,
}

impl Node {
    /// A node named `id` at `ip:port@bus_port`, learnt of at `now`; a primary until told.
    pub fn new(id: String, ip: String, port: u16, bus_port: u16, now: i64) -> Node {
        Node {
            id,
            ip,
            port,
            pport: 0,
            bus_port,
            hostname: String::new(),
            role: Role::Primary,
            config_epoch: 0,
            ping_sent: 0,
            pong_received: 0,
            data_received: 0,
            created: now,
            handshake: false,
            meet: false,
            noaddr: false,
            pfail: false,
            fail: false,
            fail_time: 0,
            nofailover: false,
            migrate_to: false,
            fail_reports: Vec::new(),
            voted_time: 0,
            orphaned_time: 0,
            repl_offset: 0,
            link: None,
            inbound_link: None,
        }
    }

    /// `ip:port@bus_port`, as CLUSTER NODES writes it.
    pub fn address(&self) -> String {
        format!("{}:{}@{}", self.ip, self.port, self.bus_port)
    }

    pub fn is_primary(&self) -> bool {
        self.role == Role::Primary
    }

    /// How clients are told to reach it under `cluster-preferred-endpoint-type` (Redis's
    /// `getPreferredEndpoint`): its IP, its hostname (`?` if it has none), or nothing.
    pub fn endpoint(&self, preferred: &str) -> &str {
        match preferred {
            "hostname" if self.hostname.is_empty() => "?",
            "hostname" => &self.hostname,
            "unknown-endpoint" => "",
            _ => &self.ip,
        }
    }

    /// The flag bits the bus carries for it (`myself`: this node's own entry).
    pub fn flag_bits(&self, myself: bool) -> u16 {
        use embedis_bus::node_flag as f;
        let mut bits = if self.is_primary() {
            f::PRIMARY
        } else {
            f::REPLICA
        };
        for (on, bit) in [
            (myself, f::MYSELF),
            (self.pfail, f::PFAIL),
            (self.fail, f::FAIL),
            (self.handshake, f::HANDSHAKE),
            (self.noaddr, f::NOADDR),
            (self.meet, f::MEET),
            (self.migrate_to, f::MIGRATE_TO),
            (self.nofailover, f::NOFAILOVER),
        ] {
            if on {
                bits |= bit;
            }
        }
        bits
    }

    /// Counts the failure reports younger than `validity` ms, dropping the others.
    pub fn live_fail_reports(&mut self, now: i64, validity: i64) -> usize {
        self.fail_reports.retain(|(_, at)| now - at <= validity);
        self.fail_reports.len()
    }
}

/// Whether this node can serve requests: Redis's `cluster_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Ok,
    Fail,
}

/// This node's view of the cluster (see the module docs).
#[derive(Debug)]
pub struct Cluster {
    /// `cluster-enabled`: fixed at start-up.
    pub enabled: bool,
    /// Known nodes by number; `None` where a node was forgotten. Number 0 is this node.
    pub nodes: Vec<Option<Node>>,
    /// Serving node number of every slot, or [`NO_NODE`]. Written only through this type's
    /// methods, which keep [`Cluster::served`] in step.
    slots: Box<[u32]>,
    /// How many slots have a node.
    served: usize,
    /// `cluster_state`, as the last [`Cluster::update_state`] found it; read on every request.
    pub state: State,
    /// Primaries serving at least one slot (`cluster_size`), as of the last state update.
    pub size: usize,
    /// Slots this node is giving away (SETSLOT MIGRATING), with the receiving node's number.
    pub migrating: BTreeMap<u16, u32>,
    /// Slots this node is receiving (SETSLOT IMPORTING), with the giving node's number.
    pub importing: BTreeMap<u16, u32>,
    pub current_epoch: u64,
    /// The epoch this node last voted in (a primary votes once an epoch).
    pub last_vote_epoch: u64,
    /// Counts changes of the view (slots, nodes, epochs, roles): `nodes.conf` is written when
    /// it moved.
    pub version: u64,
    /// Node IDs FORGET removed, with the ms until which the bus must not re-add them (Redis's
    /// 60-second blacklist).
    pub forgotten: BTreeMap<String, i64>,
    /// The slot of the running command's keys, as the cluster gate found it (Redis's
    /// `c->slot`): a script's `redis.call` must stay in it.
    pub current_slot: Option<u16>,
    /// The running command came after ASKING (the client's flag is cleared before the command
    /// runs; a script's `redis.call` still counts as asked, as in Redis).
    pub current_asking: bool,
    /// This node serves every slot only because it was never told otherwise (a fresh node):
    /// the first ADDSLOTS, MEET or REPLICATE, or a message from another node, replaces that
    /// default with what it is told.
    pub implicit: bool,
    /// The bus's own state: links, elections, what to send (see [`crate::model::cluster_bus_state`]).
    pub bus: crate::model::cluster_bus_state::BusState,
}

/// This node's number in [`Cluster::nodes`].
pub const MYSELF: u32 = 0;

impl Cluster {
    /// A node whose ID is `id`. With `enabled`, it serves every slot (see the module docs).
    pub fn new(enabled: bool, id: String) -> Cluster {
        let myself = Node::new(id, String::new(), 0, 0, 0);
        let owner = if enabled { MYSELF } else { NO_NODE };
        Cluster {
            enabled,
            nodes: vec![Some(myself)],
            slots: vec![owner; SLOTS].into_boxed_slice(),
            served: if enabled { SLOTS } else { 0 },
            state: if enabled { State::Ok } else { State::Fail },
            size: usize::from(enabled),
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            current_epoch: 0,
            last_vote_epoch: 0,
            version: 0,
            forgotten: BTreeMap::new(),
            current_slot: None,
            current_asking: false,
            implicit: enabled,
            bus: Default::default(),
        }
    }

    pub fn myself(&self) -> &Node {
        self.nodes[0]
            .as_ref()
            .expect("this node is never forgotten")
    }

    pub fn myself_mut(&mut self) -> &mut Node {
        self.nodes[0]
            .as_mut()
            .expect("this node is never forgotten")
    }

    pub fn node(&self, number: u32) -> Option<&Node> {
        self.nodes.get(number as usize)?.as_ref()
    }

    pub fn node_mut(&mut self, number: u32) -> Option<&mut Node> {
        self.nodes.get_mut(number as usize)?.as_mut()
    }

    /// The number of the node whose ID is `id` (exactly, as Redis compares them).
    pub fn find(&self, id: &[u8]) -> Option<u32> {
        self.nodes
            .iter()
            .position(|n| n.as_ref().is_some_and(|n| n.id.as_bytes() == id))
            .map(|i| i as u32)
    }

    /// Adds a node and returns its number (reusing a forgotten node's place).
    pub fn add(&mut self, node: Node) -> u32 {
        self.version += 1;
        match self.nodes.iter().position(Option::is_none) {
            Some(free) => {
                self.nodes[free] = Some(node);
                free as u32
            }
            None => {
                self.nodes.push(Some(node));
                (self.nodes.len() - 1) as u32
            }
        }
    }

    /// Forgets node `number` (Redis's `clusterDelNode`): its slots become unserved, its
    /// replicas' primary unknown, its reports on others void; its links are closed.
    pub fn remove(&mut self, number: u32) {
        let Some(node) = self.nodes.get_mut(number as usize).and_then(Option::take) else {
            return;
        };
        for owner in self.slots.iter_mut() {
            if *owner == number {
                *owner = NO_NODE;
                self.served -= 1;
            }
        }
        self.migrating.retain(|_, to| *to != number);
        self.importing.retain(|_, from| *from != number);
        for other in self.nodes.iter_mut().flatten() {
            other.fail_reports.retain(|(by, _)| *by != node.id);
        }
        for link in [node.link, node.inbound_link].into_iter().flatten() {
            self.bus.close(link);
        }
        self.version += 1;
        self.bus.update_state = true;
    }

    /// Every known node, with its number.
    pub fn known(&self) -> impl Iterator<Item = (u32, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.as_ref().map(|n| (i as u32, n)))
    }

    /// The numbers of every known node but this one.
    pub fn others(&self) -> Vec<u32> {
        self.known()
            .map(|(n, _)| n)
            .filter(|&n| n != MYSELF)
            .collect()
    }

    /// The serving node's number of `slot`, or [`NO_NODE`].
    #[inline]
    pub fn owner(&self, slot: u16) -> u32 {
        self.slots[slot as usize]
    }

    pub fn set_owner(&mut self, slot: u16, number: u32) {
        let old = std::mem::replace(&mut self.slots[slot as usize], number);
        if old != number {
            // This node's shard lost the slot: its shard channels go (Redis's clusterDelSlot).
            if old != NO_NODE && (old == MYSELF || self.primary_of(MYSELF) == Some(old)) {
                self.bus.lost_channel_slots.push(slot);
            }
            match (old == NO_NODE, number == NO_NODE) {
                (true, false) => self.served += 1,
                (false, true) => self.served -= 1,
                _ => {}
            }
            self.version += 1;
            self.bus.update_state = true;
        }
    }

    /// The slots node `number` serves, as inclusive ranges.
    pub fn ranges_of(&self, number: u32) -> Vec<(u16, u16)> {
        let mut ranges: Vec<(u16, u16)> = Vec::new();
        for (slot, &owner) in self.slots.iter().enumerate() {
            if owner != number {
                continue;
            }
            let slot = slot as u16;
            match ranges.last_mut() {
                Some((_, end)) if *end + 1 == slot => *end = slot,
                _ => ranges.push((slot, slot)),
            }
        }
        ranges
    }

    /// How many slots node `number` serves.
    pub fn slot_count(&self, number: u32) -> usize {
        self.slots.iter().filter(|&&o| o == number).count()
    }

    /// The slots node `number` serves, as the bus's bitmap.
    pub fn slot_bitmap(&self, number: u32) -> embedis_bus::Slots {
        let mut bitmap = embedis_bus::Slots::empty();
        for (slot, &owner) in self.slots.iter().enumerate() {
            if owner == number {
                bitmap.insert(slot as u16);
            }
        }
        bitmap
    }

    /// Slots with a serving node.
    pub fn slots_assigned(&self) -> usize {
        self.served
    }

    /// Slots whose node is flagged PFAIL and FAIL (CLUSTER INFO's `slots_pfail`, `slots_fail`).
    pub fn slots_failing(&self) -> (usize, usize) {
        let (mut pfail, mut fail) = (0, 0);
        for &owner in self.slots.iter() {
            if let Some(node) = self.node(owner) {
                pfail += usize::from(node.pfail);
                fail += usize::from(node.fail);
            }
        }
        (pfail, fail)
    }

    /// `ok` when this node may serve requests (see [`Cluster::update_state`]).
    #[inline]
    pub fn state_ok(&self) -> bool {
        self.state == State::Ok
    }

    /// The primary whose slots this node serves or mirrors: itself, or its primary.
    pub fn primary_of(&self, number: u32) -> Option<u32> {
        match &self.node(number)?.role {
            Role::Primary => Some(number),
            Role::Replica(id) => self.find(id.as_bytes()),
        }
    }

    /// The numbers of the replicas of primary `number`.
    pub fn replicas_of(&self, number: u32) -> Vec<u32> {
        let Some(id) = self.node(number).map(|n| n.id.clone()) else {
            return Vec::new();
        };
        self.known()
            .filter(|(_, n)| matches!(&n.role, Role::Replica(p) if *p == id))
            .map(|(n, _)| n)
            .collect()
    }

    /// Node `number` changed role from `old` (Redis's `clusterNodeRemoveSlave` and
    /// `clusterNodeAddSlave`): a primary that gains a replica may later take one by migration
    /// (MIGRATE_TO), one whose last replica left may not.
    pub fn role_changed(&mut self, number: u32, old: &Role) {
        if let Role::Replica(id) = old {
            if let Some(p) = self.find(id.as_bytes()) {
                if self.replicas_of(p).is_empty() {
                    self.node_mut(p).expect("found").migrate_to = false;
                }
            }
        }
        let new = self.node(number).map(|n| n.role.clone());
        if let Some(Role::Replica(id)) = new {
            if let Some(p) = self.find(id.as_bytes()) {
                self.node_mut(p).expect("found").migrate_to = true;
            }
        }
    }

    /// Primaries serving at least one slot (CLUSTER INFO's `cluster_size`).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Redis's `clusterResetSoft`/`Hard` minus the data flush (the caller's): this node forgets
    /// every other node, serves no slot and becomes a primary; a hard reset also zeroes the
    /// epochs and takes the new ID `new_id`.
    pub fn reset(&mut self, new_id: Option<String>) {
        self.implicit = false;
        // Every slot is deleted, as Redis's clusterDelSlot: the shard's channels go with them.
        for slot in 0..SLOTS as u16 {
            self.set_owner(slot, NO_NODE);
        }
        for number in self.others() {
            self.remove(number);
        }
        self.nodes.truncate(1);
        self.slots.fill(NO_NODE);
        self.served = 0;
        self.migrating.clear();
        self.importing.clear();
        self.forgotten.clear();
        let myself = self.myself_mut();
        myself.role = Role::Primary;
        if let Some(id) = new_id {
            myself.id = id;
            myself.config_epoch = 0;
            self.current_epoch = 0;
            self.last_vote_epoch = 0;
        }
        self.version += 1;
        self.bus.update_state = true;
    }

    /// Ends the default of a fresh node (see [`Cluster::implicit`]): with `forget_slots`, the
    /// slots it served by default become unserved.
    pub fn end_implicit(&mut self, forget_slots: bool) {
        if std::mem::take(&mut self.implicit) {
            self.bus.update_state = true;
            if forget_slots {
                self.slots.fill(NO_NODE);
                self.served = 0;
                self.version += 1;
            }
        }
    }

    /// The highest config epoch of all known nodes (Redis's `clusterGetMaxEpoch`, which also
    /// counts the current epoch).
    pub fn max_epoch(&self) -> u64 {
        self.known()
            .map(|(_, n)| n.config_epoch)
            .max()
            .unwrap_or(0)
            .max(self.current_epoch)
    }

    /// The config epoch a node's slots are claimed under: its own, or its primary's.
    pub fn claim_epoch(&self, number: u32) -> u64 {
        self.primary_of(number)
            .and_then(|p| self.node(p))
            .or(self.node(number))
            .map_or(0, |n| n.config_epoch)
    }

    /// Frees `link`, clearing the field of its node that names it (Redis's `freeClusterLink`).
    pub fn free_link(&mut self, link: LinkId) {
        let node = self.bus.links.get(&link).and_then(|l| l.node);
        if let Some(node) = node.and_then(|n| self.node_mut(n)) {
            if node.link == Some(link) {
                node.link = None;
            }
            if node.inbound_link == Some(link) {
                node.inbound_link = None;
            }
        }
        self.bus.close(link);
    }

    /// What Redis's `clusterUpdateState` would make the state: `fail` when a slot has no node
    /// or a FAILing one (under `require_full_coverage`), or when this node sees less than a
    /// majority of the serving primaries reachable; a fresh node serving everything by default
    /// is `ok`. Counts [`Cluster::size`] on the way; the caller applies Redis's delays. Also
    /// says whether this node is in a minority.
    pub fn compute_state(&mut self, require_full_coverage: bool) -> (State, bool) {
        let mut counts = vec![0usize; self.nodes.len()];
        for &owner in self.slots.iter() {
            if let Some(count) = counts.get_mut(owner as usize) {
                *count += 1;
            }
        }
        let (mut size, mut reachable) = (0, 0);
        for (number, node) in self.known() {
            if node.is_primary() && counts[number as usize] > 0 {
                size += 1;
                reachable += usize::from(!node.pfail && !node.fail);
            }
        }
        self.size = size;
        let uncovered = require_full_coverage
            && self
                .slots
                .iter()
                .any(|&o| self.node(o).is_none_or(|n| n.fail));
        let minority = reachable < size / 2 + 1;
        let state = if self.implicit || !(uncovered || minority) {
            State::Ok
        } else {
            State::Fail
        };
        (state, minority && !self.implicit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_matches_the_xmodem_check_value() {
        // The standard check input of CRC catalogues: CRC-16/XMODEM("123456789") = 0x31C3.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(crc16(b""), 0);
        // Two bytes a step agrees with one byte a step, for every length and alignment.
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + i / 3) as u8).collect();
        for len in 0..data.len() {
            let bytewise = data[..len].iter().fold(0, |crc, &b| crc16_step(crc, b));
            assert_eq!(crc16(&data[..len]), bytewise, "length {len}");
        }
    }

    #[test]
    fn first_brace_finds_the_first_one_anywhere() {
        for len in 0..40 {
            for at in 0..=len {
                let mut key = vec![b'x'; len];
                if at < len {
                    key[at] = b'{';
                    if at + 3 < len {
                        key[at + 3] = b'{';
                    }
                }
                let expected = (at < len).then_some(at);
                assert_eq!(first_brace(&key), expected, "len {len} at {at}");
            }
        }
        // Bytes next to `{` in value (`z` 0x7a, `|` 0x7c) and 0xfb are not braces.
        assert_eq!(first_brace(b"zzzz||||\xfb\xfbzz|"), None);
    }

    #[test]
    fn key_slot_follows_hash_tags() {
        // Values asked of redis-server 7.0 (CLUSTER KEYSLOT).
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"a"), 15495);
        assert_eq!(key_slot(b"{a}b"), key_slot(b"a"));
        assert_eq!(key_slot(b"{}"), key_slot(b"{}"));
        assert_eq!(key_slot(b"{}"), crc16(b"{}") & 16383);
        // An empty first tag makes the whole key count, even with a later non-empty tag.
        assert_eq!(key_slot(b"a{}{b}"), crc16(b"a{}{b}") & 16383);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        // Only the first `}` after the first `{` closes the tag.
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    }

    #[test]
    fn ranges_and_state() {
        let mut cluster = Cluster::new(true, "a".repeat(40));
        assert!(cluster.state_ok());
        cluster.end_implicit(false);
        assert_eq!(cluster.ranges_of(MYSELF), vec![(0, 16383)]);
        cluster.set_owner(5, NO_NODE);
        cluster.set_owner(7, NO_NODE);
        assert_eq!(cluster.compute_state(true).0, State::Fail);
        assert_eq!(cluster.compute_state(false).0, State::Ok);
        assert_eq!(cluster.ranges_of(MYSELF), vec![(0, 4), (6, 6), (8, 16383)]);
        assert_eq!(cluster.slots_assigned(), 16382);
        cluster.reset(None);
        assert_eq!(cluster.slots_assigned(), 0);
        assert_eq!(cluster.compute_state(true).0, State::Fail);
        assert_eq!(cluster.size(), 0);
    }
}
