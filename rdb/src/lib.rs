//! The RDB format of Redis 7.0 (RDB version 10): whole files and DUMP/RESTORE payloads.
//!
//! This crate owns the *bytes* — how a value, a key's metadata and a whole snapshot are laid
//! out — and nothing about *when* they are written or where: it reads from any
//! [`std::io::Read`] and writes to any [`std::io::Write`]. The server converts its values to and
//! from [`RdbValue`], a model close to the file (compact encodings stay opaque Redis-format
//! blobs, so a listpack hash costs one copy either way), and decides what to do with events.
//!
//! One thing newer than 7.0 is here: Redis 7.4's types for hashes whose fields have TTLs
//! ([`hash_ttl`], types 24 and 25), written into version-10 files all the same. Redis 7.4 and
//! later load them from such files; Redis 7.0 refuses them as an unknown type, which is right,
//! since it cannot hold field TTLs. Files of versions 11 and 12 are still refused, as 7.0 does.
//!
//! Bad input is an [`RdbError`], never a panic: no length read from a file is trusted for an
//! allocation before the bytes behind it have actually arrived.

pub mod crc64;
pub mod dump;
pub mod encodings;
pub mod error;
pub mod file;
pub mod hash_ttl;
pub mod module;
pub mod primitives;
pub mod value;

pub use dump::{
    dump_payload, dump_payload_as, dump_payload_with, parse_dump_payload,
    parse_dump_payload_checked, parse_dump_payload_sanitized, parse_dump_payload_upto,
};
pub use error::RdbError;
pub use file::{AuxInfo, EntryMeta, Event, RdbReader, RdbWriter, WriterOptions};
pub use hash_ttl::TtlField;
pub use module::{module_type_id, ModuleItem, ModuleValue};
pub use value::{
    ListNode, NodeContainer, RdbStream, RdbValue, Sanitize, StreamConsumer, StreamGroup, StreamId,
    StreamNack,
};

/// The RDB version this crate writes by default (`REDIS0010`, Redis 7.0's).
pub const RDB_VERSION: u16 = 10;

/// The newest RDB version this crate reads (Redis 7.4's): a caller may write it too (see
/// [`WriterOptions::version`]), the streams then with their consumers' active times.
pub const RDB_VERSION_NEWEST: u16 = 12;

/// Type bytes and opcodes, as numbered by Redis's `rdb.h` (7.0's, and 7.4's hash types).
pub mod types {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const MODULE: u8 = 6;
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    /// Redis 7.2's small sets: one listpack of members.
    pub const SET_LISTPACK: u8 = 20;
    /// Redis 7.2's (RDB 11): consumers' active times too.
    pub const STREAM_LISTPACKS_3: u8 = 21;
    /// Redis 7.4's hashes with field TTLs (`crate::hash_ttl`); 22 and 23 are their pre-release
    /// forms, which Redis 8.2 still loads. Type 21 (RDB 12's stream) is not read.
    pub const HASH_METADATA_PRE_GA: u8 = 22;
    pub const HASH_LISTPACK_EX_PRE_GA: u8 = 23;
    pub const HASH_METADATA: u8 = 24;
    pub const HASH_LISTPACK_EX: u8 = 25;
}

/// Opcodes that may appear where a type byte is expected.
pub mod opcodes {
    pub const FUNCTION2: u8 = 245;
    pub const FUNCTION: u8 = 246;
    pub const MODULE_AUX: u8 = 247;
    pub const IDLE: u8 = 248;
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZEDB: u8 = 251;
    pub const EXPIRETIME_MS: u8 = 252;
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;
}
