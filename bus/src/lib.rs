//! Redis Cluster's bus messages, byte for byte as Redis 7.0 writes and checks them
//! (`clusterMsg` in Redis's `cluster.h`), with no I/O: a node of a Redis cluster speaks this on
//! its cluster port, so an embedis node that is to be a member of one must read and write it
//! exactly. This crate only encodes, frames and validates; what a message means (gossip, failure
//! reports, elections) belongs to the server.
//!
//! A message is a fixed 2,256-byte [`Header`] and a body that depends on its type ([`Body`]).
//! Integers are big-endian (network order), names are 40 bytes of hex, the slot bitmap has one
//! bit per slot, least significant bit first within each byte. [`frame_len`] reads the length
//! from the first 8 bytes of a frame (Redis drops the link when the signature or the length is
//! wrong); [`decode`] applies the checks of Redis's `clusterProcessPacket` before it reads the
//! body — an invalid message is one Redis ignores — and [`encode`] writes what Redis writes,
//! counts and lengths computed from the body.

mod codec;

pub use codec::{decode, encode, frame_len, BadFrame, Invalid};

/// The signature every message starts with ("Redis Cluster message bus").
pub const SIGNATURE: &[u8; 4] = b"RCmb";
/// The bus protocol version Redis 7.0 speaks; a message of another version is ignored.
pub const VERSION: u16 = 1;
/// A node name: 40 hex characters.
pub const NAME_LEN: usize = 40;
/// An IP address field (`NET_IP_STR_LEN`), NUL-padded.
pub const IP_LEN: usize = 46;
/// The number of hash slots, one bit each in a slot bitmap.
pub const SLOTS: usize = 16384;
/// The fixed header's length (`CLUSTERMSG_MIN_LEN`): the shortest valid message.
pub const HEADER_LEN: usize = 2256;
/// One gossip section of PING, PONG and MEET.
pub const GOSSIP_LEN: usize = 104;

/// Message types, as numbered on the wire.
pub mod kind {
    pub const PING: u16 = 0;
    pub const PONG: u16 = 1;
    pub const MEET: u16 = 2;
    pub const FAIL: u16 = 3;
    pub const PUBLISH: u16 = 4;
    pub const FAILOVER_AUTH_REQUEST: u16 = 5;
    pub const FAILOVER_AUTH_ACK: u16 = 6;
    pub const UPDATE: u16 = 7;
    pub const MFSTART: u16 = 8;
    pub const MODULE: u16 = 9;
    pub const PUBLISHSHARD: u16 = 10;
}

/// Node flags, as a header's `flags` and a gossip section carry them.
pub mod node_flag {
    pub const PRIMARY: u16 = 1;
    pub const REPLICA: u16 = 2;
    pub const PFAIL: u16 = 4;
    pub const FAIL: u16 = 8;
    pub const MYSELF: u16 = 16;
    pub const HANDSHAKE: u16 = 32;
    pub const NOADDR: u16 = 64;
    pub const MEET: u16 = 128;
    pub const MIGRATE_TO: u16 = 256;
    pub const NOFAILOVER: u16 = 512;
}

/// Bits of the first message-flags byte (`mflags[0]`).
pub mod message_flag {
    /// The sending primary is paused for a manual failover.
    pub const PAUSED: u8 = 1;
    /// Vote for this failover even though the primary is up (CLUSTER FAILOVER FORCE).
    pub const FORCEACK: u8 = 2;
    /// PING, PONG or MEET carries extensions after its gossip sections.
    pub const EXT_DATA: u8 = 4;
}

/// The hostname extension's type (the only extension Redis 7.0 defines).
pub const EXT_HOSTNAME: u16 = 0;

/// The 16,384-bit slot bitmap of a header or an UPDATE.
#[derive(Clone, PartialEq, Eq)]
pub struct Slots(pub Box<[u8; SLOTS / 8]>);

impl Slots {
    pub fn empty() -> Slots {
        Slots(Box::new([0; SLOTS / 8]))
    }

    pub fn contains(&self, slot: u16) -> bool {
        let slot = slot as usize % SLOTS;
        self.0[slot / 8] & (1 << (slot % 8)) != 0
    }

    pub fn insert(&mut self, slot: u16) {
        let slot = slot as usize % SLOTS;
        self.0[slot / 8] |= 1 << (slot % 8);
    }

    /// How many slots are set.
    pub fn count(&self) -> usize {
        self.0.iter().map(|b| b.count_ones() as usize).sum()
    }
}

impl std::fmt::Debug for Slots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Slots({} set)", self.count())
    }
}

/// The fixed part of every message: who sends it and how it sees itself. `count` and
/// `extensions` and the total length are not here: [`encode`] derives them from the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The message type (see [`kind`]); an unknown one is kept as it came.
    pub kind: u16,
    /// The sender's client port.
    pub port: u16,
    pub current_epoch: u64,
    /// The sender's config epoch, or its primary's if it is a replica.
    pub config_epoch: u64,
    /// The primary's replication offset, or the offset a replica processed.
    pub offset: u64,
    pub sender: [u8; NAME_LEN],
    /// The slots the sender (or, for a replica, its primary) serves.
    pub slots: Slots,
    /// The primary's name if the sender is a replica, else zeros.
    pub replica_of: [u8; NAME_LEN],
    /// The IP the sender announces (`cluster-announce-ip`), or zeros: the receiver then uses the
    /// address it sees.
    pub ip: [u8; IP_LEN],
    /// The plaintext port when `port` is the TLS one.
    pub pport: u16,
    /// The sender's cluster bus port.
    pub cport: u16,
    /// The sender's node flags (see [`node_flag`]).
    pub flags: u16,
    /// The cluster's state as the sender sees it: 0 ok, 1 fail.
    pub state: u8,
    /// Message flags (see [`message_flag`]); [`encode`] sets `EXT_DATA` itself.
    pub mflags: [u8; 3],
}

impl Header {
    /// A header of type `kind` from `sender`, every other field zero.
    pub fn new(kind: u16, sender: [u8; NAME_LEN]) -> Header {
        Header {
            kind,
            port: 0,
            current_epoch: 0,
            config_epoch: 0,
            offset: 0,
            sender,
            slots: Slots::empty(),
            replica_of: [0; NAME_LEN],
            ip: [0; IP_LEN],
            pport: 0,
            cport: 0,
            flags: 0,
            state: 0,
            mflags: [0; 3],
        }
    }
}

/// One node as a PING, PONG or MEET tells of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gossip {
    pub name: [u8; NAME_LEN],
    /// When the sender last pinged it, in seconds (of Unix time), 0 if no ping is pending.
    pub ping_sent: u32,
    /// When the sender last got its PONG, in seconds.
    pub pong_received: u32,
    pub ip: [u8; IP_LEN],
    pub port: u16,
    pub cport: u16,
    pub flags: u16,
    pub pport: u16,
}

/// An extension of a PING, PONG or MEET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extension {
    /// The sender's announced hostname (`cluster-announce-hostname`).
    Hostname(Vec<u8>),
    /// A type Redis 7.0 does not know: kept whole (its bytes after the 8-byte extension header,
    /// padding included) and ignored, as Redis logs and ignores it.
    Unknown { kind: u16, data: Vec<u8> },
}

/// What follows the header, by message type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// PING, PONG and MEET.
    Ping {
        gossip: Vec<Gossip>,
        extensions: Vec<Extension>,
    },
    /// FAIL: the node the sender saw fail.
    Fail { about: [u8; NAME_LEN] },
    /// PUBLISH and PUBLISHSHARD.
    Publish { channel: Vec<u8>, message: Vec<u8> },
    /// FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK and MFSTART: the header says it all.
    Empty,
    /// UPDATE: a node's slots and config epoch, sent to a node with an older view.
    Update {
        config_epoch: u64,
        name: [u8; NAME_LEN],
        slots: Slots,
    },
    /// MODULE: a module's message (the id as the sender wrote it: Redis does not reorder it).
    Module {
        module_id: [u8; 8],
        kind: u8,
        payload: Vec<u8>,
    },
    /// A type Redis 7.0 does not know: the bytes after the header.
    Unknown(Vec<u8>),
}

/// One bus message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub header: Header,
    pub body: Body,
}
