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
//! There is no failure detection and no failover: a known node is always taken as reachable,
//! and the cluster is `ok` when every slot has a serving node.

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

/// One node as this node knows it.
#[derive(Debug, Clone)]
pub struct Node {
    pub id: String,
    /// Empty until known (a lone node does not know its own address, as in Redis).
    pub ip: String,
    pub port: u16,
    pub bus_port: u16,
    pub role: Role,
    pub config_epoch: u64,
    /// Milliseconds (UNIX time) of the last ping sent and pong received over the bus; 0 = none.
    pub ping_sent: i64,
    pub pong_received: i64,
    /// The bus link to it is up (always true for this node).
    pub connected: bool,
    /// Met but not yet answered with its ID (Redis's `handshake` flag); such a node has a
    /// random provisional ID.
    pub handshake: bool,
}

impl Node {
    /// `ip:port@bus_port`, as CLUSTER NODES writes it.
    pub fn address(&self) -> String {
        format!("{}:{}@{}", self.ip, self.port, self.bus_port)
    }
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
    /// How many slots have a node: the cluster is `ok` when all do. Kept as a count because
    /// the redirection gate asks on every request.
    served: usize,
    /// Slots this node is giving away (SETSLOT MIGRATING), with the receiving node's number.
    pub migrating: BTreeMap<u16, u32>,
    /// Slots this node is receiving (SETSLOT IMPORTING), with the giving node's number.
    pub importing: BTreeMap<u16, u32>,
    pub current_epoch: u64,
    /// Counts changes of the view (slots, nodes, epochs, roles). The bus sends the whole view
    /// every period whatever it says; it tells a test or a log that something changed.
    pub version: u64,
    /// Bus messages counted for CLUSTER INFO.
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Node IDs FORGET removed, with the UNIX ms until which the bus must not re-add them
    /// (Redis's 60-second blacklist).
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
}

/// This node's number in [`Cluster::nodes`].
pub const MYSELF: u32 = 0;

impl Cluster {
    /// A node whose ID is `id`. With `enabled`, it serves every slot (see the module docs).
    pub fn new(enabled: bool, id: String) -> Cluster {
        let myself = Node {
            id,
            ip: String::new(),
            port: 0,
            bus_port: 0,
            role: Role::Primary,
            config_epoch: 0,
            ping_sent: 0,
            pong_received: 0,
            connected: true,
            handshake: false,
        };
        let owner = if enabled { MYSELF } else { NO_NODE };
        Cluster {
            enabled,
            nodes: vec![Some(myself)],
            slots: vec![owner; SLOTS].into_boxed_slice(),
            served: if enabled { SLOTS } else { 0 },
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            current_epoch: 0,
            version: 0,
            messages_sent: 0,
            messages_received: 0,
            forgotten: BTreeMap::new(),
            current_slot: None,
            current_asking: false,
            implicit: enabled,
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

    /// Forgets node `number`: its slots become unserved, and its replicas primaries.
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
            if other.role == Role::Replica(node.id.clone()) {
                other.role = Role::Primary;
            }
        }
        self.version += 1;
    }

    /// Every known node, with its number.
    pub fn known(&self) -> impl Iterator<Item = (u32, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.as_ref().map(|n| (i as u32, n)))
    }

    /// The serving node's number of `slot`, or [`NO_NODE`].
    #[inline]
    pub fn owner(&self, slot: u16) -> u32 {
        self.slots[slot as usize]
    }

    pub fn set_owner(&mut self, slot: u16, number: u32) {
        let old = std::mem::replace(&mut self.slots[slot as usize], number);
        if old != number {
            match (old == NO_NODE, number == NO_NODE) {
                (true, false) => self.served += 1,
                (false, true) => self.served -= 1,
                _ => {}
            }
            self.version += 1;
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

    /// Slots with a serving node.
    pub fn slots_assigned(&self) -> usize {
        self.served
    }

    /// `ok` when every slot is served (Redis's default `cluster-require-full-coverage yes`;
    /// with no failure detection, a known node counts as up).
    #[inline]
    pub fn state_ok(&self) -> bool {
        self.served == SLOTS
    }

    /// The primary whose slots this node serves or mirrors: itself, or its primary.
    pub fn primary_of(&self, number: u32) -> Option<u32> {
        match &self.node(number)?.role {
            Role::Primary => Some(number),
            Role::Replica(id) => self.find(id.as_bytes()),
        }
    }

    /// Primaries serving at least one slot (CLUSTER INFO's `cluster_size`).
    pub fn size(&self) -> usize {
        let mut serving: Vec<u32> = self
            .slots
            .iter()
            .copied()
            .filter(|&o| o != NO_NODE)
            .collect();
        serving.sort_unstable();
        serving.dedup();
        serving.len()
    }

    /// Redis's `clusterResetSoft`/`Hard` minus the data flush (the caller's): this node forgets
    /// every other node, serves no slot and becomes a primary; a hard reset also zeroes the
    /// epochs and takes the new ID `new_id`.
    pub fn reset(&mut self, new_id: Option<String>) {
        self.implicit = false;
        let me = self.myself().clone();
        self.nodes = vec![Some(me)];
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
        }
        self.version += 1;
    }

    /// Ends the default of a fresh node (see [`Cluster::implicit`]): with `forget_slots`, the
    /// slots it served by default become unserved.
    pub fn end_implicit(&mut self, forget_slots: bool) {
        if std::mem::take(&mut self.implicit) && forget_slots {
            self.slots.fill(NO_NODE);
            self.served = 0;
            self.version += 1;
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
}

/// What one node tells another over embedis's cluster bus: its own entry, its slots, the
/// address it reached the receiver at, and the other nodes it knows (gossip). See
/// `crate::io::cluster_bus` for the transport; this is the message and how a receiver merges it.
///
/// The wire form is text, one item a line, ending with `end`:
///
/// ```text
/// embedis-bus 1
/// from <id> <ip|-> <port> <bus-port> <primary-id|-> <config-epoch> <current-epoch> <ranges|->
/// to <ip|->
/// node <id> <ip|-> <port> <bus-port> <primary-id|->
/// end
/// ```
///
/// where `<ranges>` is `0-5460,5461,…`. It is not Redis's binary `clusterMsg`: embedis nodes
/// talk only to embedis nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub sender: Gossip,
    pub config_epoch: u64,
    pub current_epoch: u64,
    pub ranges: Vec<(u16, u16)>,
    /// The address the sender used to reach the receiver (the receiver's own IP, which a lone
    /// node does not know).
    pub to_ip: String,
    pub others: Vec<Gossip>,
}

/// A node as a [`View`] names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gossip {
    pub id: String,
    pub ip: String,
    pub port: u16,
    pub bus_port: u16,
    pub primary: Option<String>,
}

fn dash(text: &str) -> &str {
    if text.is_empty() {
        "-"
    } else {
        text
    }
}

fn undash(text: &str) -> String {
    if text == "-" {
        String::new()
    } else {
        text.to_string()
    }
}

impl Gossip {
    fn of(node: &Node) -> Gossip {
        Gossip {
            id: node.id.clone(),
            ip: node.ip.clone(),
            port: node.port,
            bus_port: node.bus_port,
            primary: match &node.role {
                Role::Primary => None,
                Role::Replica(id) => Some(id.clone()),
            },
        }
    }

    fn encode(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.id,
            dash(&self.ip),
            self.port,
            self.bus_port,
            self.primary.as_deref().unwrap_or("-")
        )
    }

    fn decode(words: &[&str]) -> Option<Gossip> {
        let [id, ip, port, bus_port, primary] = words else {
            return None;
        };
        Some(Gossip {
            id: id.to_string(),
            ip: undash(ip),
            port: port.parse().ok()?,
            bus_port: bus_port.parse().ok()?,
            primary: (*primary != "-").then(|| primary.to_string()),
        })
    }
}

impl View {
    /// The text of the message (see the type's docs).
    pub fn encode(&self) -> String {
        let ranges: Vec<String> = self
            .ranges
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        let mut text = format!(
            "embedis-bus 1\nfrom {} {} {} {}\nto {}\n",
            self.sender.encode(),
            self.config_epoch,
            self.current_epoch,
            if ranges.is_empty() {
                "-".to_string()
            } else {
                ranges.join(",")
            },
            dash(&self.to_ip),
        );
        for other in &self.others {
            text.push_str("node ");
            text.push_str(&other.encode());
            text.push('\n');
        }
        text.push_str("end\n");
        text
    }

    /// Parses the lines of one message (without the final `end`); `None` if malformed.
    pub fn decode(lines: &[String]) -> Option<View> {
        let mut lines = lines.iter();
        if lines.next()?.trim() != "embedis-bus 1" {
            return None;
        }
        let from: Vec<&str> = lines.next()?.split(' ').collect();
        if from.len() != 9 || from[0] != "from" {
            return None;
        }
        let sender = Gossip::decode(&from[1..6])?;
        let mut ranges = Vec::new();
        if from[8] != "-" {
            for range in from[8].split(',') {
                let (a, b) = match range.split_once('-') {
                    Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
                    None => {
                        let a: u16 = range.parse().ok()?;
                        (a, a)
                    }
                };
                if a > b || b as usize >= SLOTS {
                    return None;
                }
                ranges.push((a, b));
            }
        }
        let to = lines.next()?;
        let to_ip = undash(to.strip_prefix("to ")?);
        let mut others = Vec::new();
        for line in lines {
            let words: Vec<&str> = line.split(' ').collect();
            if words.first() != Some(&"node") {
                return None;
            }
            others.push(Gossip::decode(&words[1..])?);
        }
        Some(View {
            sender,
            config_epoch: from[6].parse().ok()?,
            current_epoch: from[7].parse().ok()?,
            ranges,
            to_ip,
            others,
        })
    }
}

impl Cluster {
    /// This node's view for the node at `to_ip` (see [`View`]).
    pub fn view_for(&self, to_ip: &str) -> View {
        let myself = self.myself();
        View {
            sender: Gossip::of(myself),
            config_epoch: myself.config_epoch,
            current_epoch: self.current_epoch,
            ranges: self.ranges_of(MYSELF),
            to_ip: to_ip.to_string(),
            others: self
                .known()
                .filter(|(n, node)| *n != MYSELF && !node.handshake)
                .map(|(_, node)| Gossip::of(node))
                .collect(),
        }
    }

    /// Merges a view received from the node at `peer_ip` (the address the connection came
    /// from). `dialed`: the number of the node this node connected to and got the view as the
    /// answer from — a node met by CLUSTER MEET learns its real ID this way. Returns the
    /// sender's number, or `None` if the view was ignored (a forgotten node).
    ///
    /// Slots follow Redis's rule: the sender's claim on a slot wins when the slot has no
    /// node or its node's config epoch is lower; a slot this node is importing is left alone.
    /// Two primaries with the same config epoch are told apart as in Redis: the one with the
    /// smaller ID takes a new epoch.
    pub fn merge(
        &mut self,
        view: &View,
        peer_ip: &str,
        dialed: Option<u32>,
        now_ms: i64,
    ) -> Option<u32> {
        self.forgotten.retain(|_, until| *until > now_ms);
        if self.forgotten.contains_key(&view.sender.id) || view.sender.id == self.myself().id {
            return None;
        }
        // Someone talks to this node: it is part of a cluster now.
        self.end_implicit(true);
        self.messages_received += 1;
        if self.myself().ip.is_empty() && !view.to_ip.is_empty() {
            self.myself_mut().ip = view.to_ip.clone();
            self.version += 1;
        }
        let ip = if view.sender.ip.is_empty() {
            peer_ip.to_string()
        } else {
            view.sender.ip.clone()
        };
        let known = self.find(view.sender.id.as_bytes());
        let number = match (known, dialed) {
            (Some(number), Some(dialed)) if number != dialed => {
                // Met again under a provisional ID: the provisional entry goes.
                if self.node(dialed).is_some_and(|n| n.handshake) {
                    self.remove(dialed);
                }
                number
            }
            (Some(number), _) => number,
            (None, Some(dialed)) if self.node(dialed).is_some_and(|n| n.handshake) => {
                let node = self.nodes[dialed as usize].as_mut().expect("dialed node");
                node.id = view.sender.id.clone();
                node.handshake = false;
                self.version += 1;
                dialed
            }
            _ => self.add(Node {
                id: view.sender.id.clone(),
                ip: ip.clone(),
                port: view.sender.port,
                bus_port: view.sender.bus_port,
                role: Role::Primary,
                config_epoch: 0,
                ping_sent: 0,
                pong_received: 0,
                connected: false,
                handshake: false,
            }),
        };
        let role = match &view.sender.primary {
            Some(id) => Role::Replica(id.clone()),
            None => Role::Primary,
        };
        {
            let node = self.nodes[number as usize].as_mut().expect("sender");
            let changed = node.ip != ip
                || node.port != view.sender.port
                || node.bus_port != view.sender.bus_port
                || node.role != role
                || node.config_epoch != view.config_epoch;
            node.ip = ip;
            node.port = view.sender.port;
            node.bus_port = view.sender.bus_port;
            node.role = role;
            node.config_epoch = view.config_epoch;
            node.connected = true;
            node.pong_received = now_ms;
            if changed {
                self.version += 1;
            }
        }
        if view.current_epoch > self.current_epoch {
            self.current_epoch = view.current_epoch;
        }
        if view.sender.primary.is_none() {
            for &(start, end) in &view.ranges {
                for slot in start..=end {
                    let owner = self.owner(slot);
                    if owner == number || self.importing.contains_key(&slot) {
                        continue;
                    }
                    let owner_epoch = self.node(owner).map(|n| n.config_epoch);
                    if owner_epoch.is_none_or(|epoch| epoch < view.config_epoch) {
                        self.set_owner(slot, number);
                    }
                }
            }
            let myself = self.myself();
            if myself.role == Role::Primary
                && myself.config_epoch == view.config_epoch
                && myself.id < view.sender.id
            {
                self.current_epoch += 1;
                let epoch = self.current_epoch;
                self.myself_mut().config_epoch = epoch;
                self.version += 1;
            }
        }
        for other in &view.others {
            if other.id == self.myself().id
                || self.forgotten.contains_key(&other.id)
                || self.find(other.id.as_bytes()).is_some()
                || other.ip.is_empty()
            {
                continue;
            }
            self.add(Node {
                id: other.id.clone(),
                ip: other.ip.clone(),
                port: other.port,
                bus_port: other.bus_port,
                role: match &other.primary {
                    Some(id) => Role::Replica(id.clone()),
                    None => Role::Primary,
                },
                config_epoch: 0,
                ping_sent: 0,
                pong_received: 0,
                connected: false,
                handshake: false,
            });
        }
        Some(number)
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
        assert_eq!(cluster.ranges_of(MYSELF), vec![(0, 16383)]);
        cluster.set_owner(5, NO_NODE);
        cluster.set_owner(7, NO_NODE);
        assert!(!cluster.state_ok());
        assert_eq!(cluster.ranges_of(MYSELF), vec![(0, 4), (6, 6), (8, 16383)]);
        assert_eq!(cluster.slots_assigned(), 16382);
        cluster.reset(None);
        assert_eq!(cluster.slots_assigned(), 0);
        assert_eq!(cluster.size(), 0);
    }

    fn node(id: &str, port: u16) -> Node {
        Node {
            id: id.repeat(40),
            ip: "127.0.0.1".into(),
            port,
            bus_port: port + 10000,
            role: Role::Primary,
            config_epoch: 0,
            ping_sent: 0,
            pong_received: 0,
            connected: false,
            handshake: false,
        }
    }

    #[test]
    fn views_round_trip_and_merge_by_epoch() {
        let mut a = Cluster::new(true, "a".repeat(40));
        a.myself_mut().ip = "127.0.0.1".into();
        a.end_implicit(true);
        for slot in 0..100 {
            a.set_owner(slot, MYSELF);
        }
        a.set_owner(200, MYSELF);
        a.myself_mut().config_epoch = 3;
        a.add(node("c", 7002));
        let view = a.view_for("127.0.0.1");
        let text = view.encode();
        let lines: Vec<String> = text
            .lines()
            .take_while(|l| *l != "end")
            .map(String::from)
            .collect();
        assert_eq!(View::decode(&lines), Some(view.clone()));
        assert_eq!(view.ranges, vec![(0, 99), (200, 200)]);

        // b (fresh, serving everything by default) hears from a: the default goes, a's slots
        // are a's, and b learns c from the gossip.
        let mut b = Cluster::new(true, "b".repeat(40));
        let sender = b.merge(&view, "127.0.0.1", None, 0).expect("merged");
        assert_eq!(b.owner(5), sender);
        assert_eq!(b.owner(150), NO_NODE);
        assert_eq!(b.known().count(), 3);
        assert_eq!(b.myself().ip, "127.0.0.1");

        // A lower epoch's claim loses to the slot's current node; a higher one wins.
        let mut claim = view.clone();
        claim.sender = Gossip::of(&node("d", 7003));
        claim.config_epoch = 2;
        let d = b.merge(&claim, "127.0.0.1", None, 0).expect("merged");
        assert_eq!(b.owner(5), sender);
        claim.config_epoch = 4;
        b.merge(&claim, "127.0.0.1", None, 0);
        assert_eq!(b.owner(5), d);
    }

    #[test]
    fn a_met_node_takes_its_real_id_and_forgotten_ones_stay_out() {
        let mut a = Cluster::new(true, "a".repeat(40));
        let mut provisional = node("f", 7001);
        provisional.handshake = true;
        let dialed = a.add(provisional);
        let b = Cluster::new(true, "b".repeat(40));
        let number = a.merge(&b.view_for("127.0.0.1"), "127.0.0.1", Some(dialed), 0);
        assert_eq!(number, Some(dialed));
        assert_eq!(a.node(dialed).map(|n| n.id.clone()), Some("b".repeat(40)));
        assert!(!a.node(dialed).expect("b").handshake);
        a.remove(dialed);
        a.forgotten.insert("b".repeat(40), 60_000);
        assert_eq!(a.merge(&b.view_for(""), "127.0.0.1", None, 1000), None);
        assert!(a
            .merge(&b.view_for(""), "127.0.0.1", None, 61_000)
            .is_some());
    }
}
