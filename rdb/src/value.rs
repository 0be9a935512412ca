//! [`RdbValue`]: a key's value as RDB 7.0 stores it (and a hash with field TTLs as Redis 7.4
//! does), and its reading and writing.
//!
//! Compact encodings (listpack hashes and zsets, intsets, list nodes, stream nodes) stay the
//! Redis-format blobs the file carries — re-encoding them would cost time and lose byte
//! identity with Redis's DUMP — while hash-table and skiplist encodings are plain element lists.
//! Reading also accepts every older encoding Redis 7.0 still loads (linked lists, ziplists,
//! quicklists of ziplists, zipmaps, text scores, v1 streams) and converts it to this model.

use crate::encodings::{
    listpack_decode, listpack_encode, listpack_readable_prefix, listpack_shallow_check,
    ziplist_decode, zipmap_decode,
};
use crate::error::{corrupt, RdbError};
use crate::hash_ttl::{self, TtlField};
use crate::primitives::*;
use crate::types;
use std::io::{Read, Write};

/// A quicklist node's container, as `RDB_TYPE_LIST_QUICKLIST_2` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeContainer {
    /// One element stored as-is (an element too large for a listpack node).
    Plain = 1,
    /// A Redis-format listpack of elements.
    Packed = 2,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListNode {
    pub container: NodeContainer,
    /// A listpack (packed) or the element's bytes (plain), uncompressed.
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    /// The 16-byte big-endian form used as rax keys (node master IDs, PEL entries).
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }
    pub fn from_bytes(b: &[u8]) -> Option<StreamId> {
        if b.len() != 16 {
            return None;
        }
        Some(StreamId {
            ms: u64::from_be_bytes(b[..8].try_into().ok()?),
            seq: u64::from_be_bytes(b[8..].try_into().ok()?),
        })
    }
}

/// A pending entry of a consumer group.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamNack {
    pub id: StreamId,
    pub delivery_time_ms: i64,
    pub delivery_count: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StreamConsumer {
    pub name: Vec<u8>,
    pub seen_time_ms: i64,
    /// When it was last given entries (-1: never), as `RDB_TYPE_STREAM_LISTPACKS_3` (Redis 7.2)
    /// stores it; older types load it as the seen time, as Redis does. Written as type 21
    /// in RDB 11 and later; type 19 has no place for it.
    pub active_time_ms: i64,
    /// The IDs this consumer owns; each is in its group's `pel`.
    pub pel: Vec<StreamId>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StreamGroup {
    pub name: Vec<u8>,
    pub last_id: StreamId,
    /// Redis's `entries_read`; `u64::MAX` is its "invalid" (-1) value.
    pub entries_read: u64,
    pub pel: Vec<StreamNack>,
    pub consumers: Vec<StreamConsumer>,
}

/// A stream as Redis persists it: its listpack nodes keyed by master ID, its counters, groups.
#[derive(Debug, Clone, PartialEq)]
pub struct RdbStream {
    pub nodes: Vec<(StreamId, Vec<u8>)>,
    pub length: u64,
    pub last_id: StreamId,
    pub first_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    pub groups: Vec<StreamGroup>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RdbValue {
    String(Vec<u8>),
    /// `RDB_TYPE_LIST_QUICKLIST_2`.
    List(Vec<ListNode>),
    /// `RDB_TYPE_SET_INTSET`: a Redis intset blob.
    SetIntset(Vec<u8>),
    /// `RDB_TYPE_SET`: a hash-table set's members.
    Set(Vec<Vec<u8>>),
    /// `RDB_TYPE_SET_LISTPACK` (Redis 7.2+): a small set's members in a Redis listpack.
    SetListpack(Vec<u8>),
    /// `RDB_TYPE_ZSET_LISTPACK`: member, score, member, score … in score order.
    ZsetListpack(Vec<u8>),
    /// `RDB_TYPE_ZSET_2`: a skiplist zset's members and scores, in ascending order.
    Zset(Vec<(Vec<u8>, f64)>),
    /// `RDB_TYPE_HASH_LISTPACK`: field, value, field, value …
    HashListpack(Vec<u8>),
    /// `RDB_TYPE_HASH`: a hash-table hash's pairs.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// `RDB_TYPE_HASH_METADATA` (Redis 7.4+): a hash-table hash with field TTLs (see
    /// [`crate::hash_ttl`]). Also what the pre-release type 22 reads as.
    HashWithTtls(Vec<TtlField>),
    /// `RDB_TYPE_HASH_LISTPACK_EX` (Redis 7.4+): field, value, deadline triplets (deadline 0 for
    /// none), the fields with a deadline first and in order; `min_expire` is the header time,
    /// which loaders ignore. Also what the pre-release type 23 reads as.
    HashListpackEx {
        min_expire: u64,
        listpack: Vec<u8>,
    },
    /// `RDB_TYPE_STREAM_LISTPACKS_2`.
    Stream(Box<RdbStream>),
    /// `RDB_TYPE_MODULE_2`: a module type's value (Redis 8.2's vector sets).
    Module(Box<crate::module::ModuleValue>),
}

/// Bytes a listpack node built from a legacy linked list may reach (Redis's default node size).
const LEGACY_NODE_BYTES: usize = 8192;

impl RdbValue {
    /// The bytes this value's buffers hold (elements and listpacks; bookkeeping left out):
    /// what a copy of it costs, for the memory a snapshot spends on copies.
    pub fn payload_bytes(&self) -> usize {
        match self {
            RdbValue::String(b)
            | RdbValue::SetIntset(b)
            | RdbValue::SetListpack(b)
            | RdbValue::ZsetListpack(b)
            | RdbValue::HashListpack(b)
            | RdbValue::HashListpackEx { listpack: b, .. } => b.len(),
            RdbValue::List(nodes) => nodes.iter().map(|n| n.data.len()).sum(),
            RdbValue::Set(members) => members.iter().map(Vec::len).sum(),
            RdbValue::Zset(pairs) => pairs.iter().map(|(m, _)| m.len() + 8).sum(),
            RdbValue::Hash(pairs) => pairs.iter().map(|(f, v)| f.len() + v.len()).sum(),
            RdbValue::HashWithTtls(fields) => fields
                .iter()
                .map(|f| f.field.len() + f.value.len() + 8)
                .sum(),
            RdbValue::Stream(s) => s.nodes.iter().map(|(_, lp)| lp.len() + 16).sum(),
            RdbValue::Module(m) => m
                .items
                .iter()
                .map(|item| match item {
                    crate::module::ModuleItem::String(b) => b.len(),
                    _ => 8,
                })
                .sum(),
        }
    }

    /// The type byte Redis writes for this value (7.0's, or 7.4's for a hash with field TTLs).
    pub fn type_byte(&self) -> u8 {
        match self {
            RdbValue::String(_) => types::STRING,
            RdbValue::List(_) => types::LIST_QUICKLIST_2,
            RdbValue::SetIntset(_) => types::SET_INTSET,
            RdbValue::Set(_) => types::SET,
            RdbValue::SetListpack(_) => types::SET_LISTPACK,
            RdbValue::ZsetListpack(_) => types::ZSET_LISTPACK,
            RdbValue::Zset(_) => types::ZSET_2,
            RdbValue::HashListpack(_) => types::HASH_LISTPACK,
            RdbValue::Hash(_) => types::HASH,
            RdbValue::HashWithTtls(_) => types::HASH_METADATA,
            RdbValue::HashListpackEx { .. } => types::HASH_LISTPACK_EX,
            RdbValue::Stream(_) => types::STREAM_LISTPACKS_2,
            RdbValue::Module(_) => types::MODULE_2,
        }
    }

    /// The type byte an RDB of `version` has for this value: from 11 (Redis 7.2) a stream is
    /// `RDB_TYPE_STREAM_LISTPACKS_3`, with its consumers' active times.
    pub fn type_byte_as(&self, version: u16) -> u8 {
        match self {
            RdbValue::Stream(_) if version >= 11 => types::STREAM_LISTPACKS_3,
            _ => self.type_byte(),
        }
    }

    /// [`RdbValue::write_body`] for an RDB of `version` (see [`RdbValue::type_byte_as`]).
    pub fn write_body_as<W: Write>(
        &self,
        w: &mut W,
        compress: bool,
        version: u16,
    ) -> Result<(), RdbError> {
        match self {
            RdbValue::Stream(s) => write_stream(w, s, compress, version >= 11),
            _ => self.write_body(w, compress),
        }
    }

    /// Writes the value (without its type byte), as Redis's `rdbSaveObject` lays it out.
    pub fn write_body<W: Write>(&self, w: &mut W, compress: bool) -> Result<(), RdbError> {
        match self {
            RdbValue::String(s)
            | RdbValue::SetIntset(s)
            | RdbValue::SetListpack(s)
            | RdbValue::ZsetListpack(s)
            | RdbValue::HashListpack(s) => write_string(w, s, compress)?,
            RdbValue::List(nodes) => {
                write_len(w, nodes.len() as u64)?;
                for n in nodes {
                    write_len(w, n.container as u64)?;
                    write_string(w, &n.data, compress)?;
                }
            }
            RdbValue::Set(members) => {
                write_len(w, members.len() as u64)?;
                for m in members {
                    write_string(w, m, compress)?;
                }
            }
            RdbValue::Zset(entries) => {
                write_len(w, entries.len() as u64)?;
                // Redis writes from the highest score down, so that loading inserts each
                // element at the head of the skiplist.
                for (m, score) in entries.iter().rev() {
                    write_string(w, m, compress)?;
                    write_binary_double(w, *score)?;
                }
            }
            RdbValue::Hash(pairs) => {
                write_len(w, pairs.len() as u64)?;
                for (f, v) in pairs {
                    write_string(w, f, compress)?;
                    write_string(w, v, compress)?;
                }
            }
            RdbValue::HashWithTtls(fields) => hash_ttl::write_metadata(w, fields, compress)?,
            RdbValue::HashListpackEx {
                min_expire,
                listpack,
            } => hash_ttl::write_listpack_ex(w, *min_expire, listpack, compress)?,
            RdbValue::Stream(s) => write_stream(w, s, compress, false)?,
            RdbValue::Module(m) => crate::module::write_module(w, m, compress)?,
        }
        Ok(())
    }

    /// Reads a value of type `ty` (any type Redis 7.0 loads, and Redis 7.4's hashes with field
    /// TTLs), converting older encodings.
    pub fn read_body<R: Read>(r: &mut R, ty: u8) -> Result<RdbValue, RdbError> {
        Self::read_body_as(r, ty, Sanitize::Deep)
    }

    /// [`RdbValue::read_body`], checking the listpacks of hashes, lists and streams as
    /// `sanitize` says.
    pub fn read_body_as<R: Read>(
        r: &mut R,
        ty: u8,
        sanitize: Sanitize,
    ) -> Result<RdbValue, RdbError> {
        Ok(match ty {
            types::STRING => RdbValue::String(read_string(r)?),
            types::LIST => {
                let n = read_count(r)?;
                let mut items = Vec::with_capacity(cap(n));
                for _ in 0..n {
                    items.push(read_string(r)?);
                }
                RdbValue::List(nodes_from_items(&items))
            }
            types::SET => {
                let n = read_count(r)?;
                let mut m = Vec::with_capacity(cap(n));
                for _ in 0..n {
                    m.push(read_string(r)?);
                }
                RdbValue::Set(m)
            }
            types::ZSET | types::ZSET_2 => {
                let n = read_count(r)?;
                let mut e = Vec::with_capacity(cap(n));
                for _ in 0..n {
                    let m = read_string(r)?;
                    let s = if ty == types::ZSET_2 {
                        read_binary_double(r)?
                    } else {
                        read_text_double(r)?
                    };
                    if s.is_nan() {
                        return corrupt("zset score is NaN");
                    }
                    e.push((m, s));
                }
                // Redis 7.0 writes the highest score first, older versions in hash order, and
                // loading sorts either way: the model is ascending by (score, member).
                e.sort_by(|a, b| {
                    a.1.partial_cmp(&b.1)
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then_with(|| a.0.cmp(&b.0))
                });
                RdbValue::Zset(e)
            }
            types::HASH => {
                let n = read_count(r)?;
                let mut p = Vec::with_capacity(cap(n));
                for _ in 0..n {
                    let f = read_string(r)?;
                    let v = read_string(r)?;
                    p.push((f, v));
                }
                RdbValue::Hash(p)
            }
            types::SET_INTSET
            | types::SET_LISTPACK
            | types::HASH_LISTPACK
            | types::ZSET_LISTPACK
            | types::HASH_ZIPMAP
            | types::HASH_ZIPLIST
            | types::ZSET_ZIPLIST => read_packed(r, ty, sanitize)?,
            types::LIST_ZIPLIST => {
                let items = integrity(ziplist_decode(&read_string(r)?), "List ziplist")?;
                RdbValue::List(nodes_from_items(&items))
            }
            types::LIST_QUICKLIST | types::LIST_QUICKLIST_2 => {
                let n = read_count(r)?;
                let mut nodes = Vec::with_capacity(cap(n));
                for _ in 0..n {
                    if ty == types::LIST_QUICKLIST {
                        let items = integrity(ziplist_decode(&read_string(r)?), "Ziplist")?;
                        if !items.is_empty() {
                            nodes.push(ListNode {
                                container: NodeContainer::Packed,
                                data: listpack_encode(&items),
                            });
                        }
                        continue;
                    }
                    let container = match read_len(r)? {
                        1 => NodeContainer::Plain,
                        2 => NodeContainer::Packed,
                        c => return corrupt(format!("unknown quicklist container {c}")),
                    };
                    let mut data = read_string(r)?;
                    if container == NodeContainer::Packed {
                        let items = sanitize.listpack(&mut data, "Listpack", false)?;
                        if items == 0 {
                            return corrupt("empty quicklist node");
                        }
                    }
                    nodes.push(ListNode { container, data });
                }
                RdbValue::List(nodes)
            }
            types::MODULE_2 => RdbValue::Module(Box::new(crate::module::read_module(r)?)),
            types::STREAM_LISTPACKS | types::STREAM_LISTPACKS_2 | types::STREAM_LISTPACKS_3 => {
                RdbValue::Stream(Box::new(read_stream(r, ty, sanitize)?))
            }
            types::HASH_METADATA | types::HASH_METADATA_PRE_GA => RdbValue::HashWithTtls(
                hash_ttl::read_metadata(r, ty == types::HASH_METADATA_PRE_GA)?,
            ),
            types::HASH_LISTPACK_EX | types::HASH_LISTPACK_EX_PRE_GA => {
                let (min_expire, listpack) =
                    hash_ttl::read_listpack_ex(r, ty == types::HASH_LISTPACK_EX_PRE_GA)?;
                RdbValue::HashListpackEx {
                    min_expire,
                    listpack,
                }
            }
            types::MODULE => return Err(RdbError::Unsupported("module value".into())),
            t => return corrupt(format!("unknown object type {t}")),
        })
    }
}

/// A value of one of the packed types (a single blob: intset, listpack, zipmap, ziplist), its
/// blob checked as Redis's loader checks it.
fn read_packed<R: Read>(r: &mut R, ty: u8, sanitize: Sanitize) -> Result<RdbValue, RdbError> {
    Ok(match ty {
        types::SET_INTSET => {
            let blob = read_string(r)?;
            integrity(crate::encodings::intset_decode(&blob), "Intset")?;
            RdbValue::SetIntset(blob)
        }
        types::SET_LISTPACK => {
            let blob = read_string(r)?;
            integrity(listpack_decode(&blob), "Set listpack")?;
            RdbValue::SetListpack(blob)
        }
        types::HASH_LISTPACK if sanitize == Sanitize::Shallow => {
            let mut blob = read_string(r)?;
            if sanitize.listpack(&mut blob, "Hash listpack", true)? < 2 {
                return corrupt("Empty listpack");
            }
            RdbValue::HashListpack(blob)
        }
        types::HASH_LISTPACK | types::ZSET_LISTPACK => {
            let blob = read_string(r)?;
            let what = if ty == types::HASH_LISTPACK {
                "Hash listpack"
            } else {
                "Zset listpack"
            };
            // A hash's repeated fields are the server's to find (`from_rdb`): Redis reports
            // them differently with and without deep sanitization.
            let check = if ty == types::HASH_LISTPACK {
                even
            } else {
                unique_pairs
            };
            integrity(listpack_decode(&blob).and_then(check), what)?;
            if ty == types::HASH_LISTPACK {
                RdbValue::HashListpack(blob)
            } else {
                RdbValue::ZsetListpack(blob)
            }
        }
        // As field/value pairs, not a listpack: Redis converts a zipmap hash to a hash table
        // when a field or value is longer than `hash-max-listpack-value`, which it does not
        // check for the other packed types.
        types::HASH_ZIPMAP => {
            let pairs = zipmap_pairs(&read_string(r)?).and_then(|p| {
                if p.is_empty() {
                    corrupt("empty zipmap")
                } else {
                    Ok(p)
                }
            });
            RdbValue::Hash(integrity(pairs, "Zipmap")?)
        }
        types::HASH_ZIPLIST | types::ZSET_ZIPLIST => {
            let blob = read_string(r)?;
            let what = if ty == types::HASH_ZIPLIST {
                "Hash ziplist"
            } else {
                "Zset ziplist"
            };
            let items = integrity(ziplist_decode(&blob).and_then(unique_pairs), what)?;
            let lp = listpack_encode(&items);
            if ty == types::ZSET_ZIPLIST {
                RdbValue::ZsetListpack(lp)
            } else {
                RdbValue::HashListpack(lp)
            }
        }
        t => return corrupt(format!("unknown object type {t}")),
    })
}

/// Packs elements of a legacy list into listpack nodes of at most about 8 KB each.
fn nodes_from_items(items: &[Vec<u8>]) -> Vec<ListNode> {
    let mut nodes = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, it) in items.iter().enumerate() {
        let sz = it.len() + 11;
        if i > start && bytes + sz > LEGACY_NODE_BYTES {
            nodes.push(ListNode {
                container: NodeContainer::Packed,
                data: listpack_encode(&items[start..i]),
            });
            start = i;
            bytes = 0;
        }
        bytes += sz;
    }
    if start < items.len() {
        nodes.push(ListNode {
            container: NodeContainer::Packed,
            data: listpack_encode(&items[start..]),
        });
    }
    nodes
}

fn write_id<W: Write>(w: &mut W, id: StreamId) -> Result<(), RdbError> {
    write_len(w, id.ms)?;
    write_len(w, id.seq)
}

fn read_id<R: Read>(r: &mut R) -> Result<StreamId, RdbError> {
    Ok(StreamId {
        ms: read_len(r)?,
        seq: read_len(r)?,
    })
}

/// `active_times`: type 21's layout, each consumer's active time after its seen time.
fn write_stream<W: Write>(
    w: &mut W,
    s: &RdbStream,
    compress: bool,
    active_times: bool,
) -> Result<(), RdbError> {
    write_len(w, s.nodes.len() as u64)?;
    for (id, lp) in &s.nodes {
        write_string(w, &id.to_bytes(), compress)?;
        write_string(w, lp, compress)?;
    }
    write_len(w, s.length)?;
    write_id(w, s.last_id)?;
    write_id(w, s.first_id)?;
    write_id(w, s.max_deleted_id)?;
    write_len(w, s.entries_added)?;
    write_len(w, s.groups.len() as u64)?;
    for g in &s.groups {
        write_string(w, &g.name, compress)?;
        write_id(w, g.last_id)?;
        write_len(w, g.entries_read)?;
        write_len(w, g.pel.len() as u64)?;
        for n in &g.pel {
            w.write_all(&n.id.to_bytes())?;
            write_millis(w, n.delivery_time_ms)?;
            write_len(w, n.delivery_count)?;
        }
        write_len(w, g.consumers.len() as u64)?;
        for c in &g.consumers {
            write_string(w, &c.name, compress)?;
            write_millis(w, c.seen_time_ms)?;
            if active_times {
                write_millis(w, c.active_time_ms)?;
            }
            write_len(w, c.pel.len() as u64)?;
            for id in &c.pel {
                w.write_all(&id.to_bytes())?;
            }
        }
    }
    Ok(())
}

/// A stream of type `ty`: 15 (v1), 19 (v2: first ID, max deleted ID, entries added and read)
/// or 21 (v3: consumers' active times too).
fn read_stream<R: Read>(r: &mut R, ty: u8, sanitize: Sanitize) -> Result<RdbStream, RdbError> {
    let v2 = ty >= types::STREAM_LISTPACKS_2;
    let v3 = ty >= types::STREAM_LISTPACKS_3;
    let n = read_count(r)?;
    let mut nodes = Vec::with_capacity(cap(n));
    for _ in 0..n {
        let key = read_string(r)?;
        let id = StreamId::from_bytes(&key)
            .ok_or_else(|| RdbError::Corrupt("stream node key is not a 128-bit ID".into()))?;
        let mut lp = read_string(r)?;
        if sanitize.listpack(&mut lp, "Stream listpack", false)? == 0 {
            return corrupt("Empty listpack inside stream");
        }
        nodes.push((id, lp));
    }
    let length = read_len(r)?;
    let last_id = read_id(r)?;
    let (first_id, max_deleted_id, entries_added) = if v2 {
        (read_id(r)?, read_id(r)?, read_len(r)?)
    } else {
        // v1 files lack these: as Redis does on loading, count every entry as added and no
        // deletion; the first ID is left for the server to take from the first live entry.
        (StreamId::default(), StreamId::default(), length)
    };
    let ngroups = read_count(r)?;
    let mut groups = Vec::with_capacity(cap(ngroups));
    for _ in 0..ngroups {
        let name = read_string(r)?;
        let last_id = read_id(r)?;
        let entries_read = if v2 { read_len(r)? } else { u64::MAX };
        let npel = read_count(r)?;
        let mut pel = Vec::with_capacity(cap(npel));
        for _ in 0..npel {
            let id = StreamId::from_bytes(&read_array::<_, 16>(r)?).unwrap_or_default();
            let delivery_time_ms = read_millis(r)?;
            let delivery_count = read_len(r)?;
            pel.push(StreamNack {
                id,
                delivery_time_ms,
                delivery_count,
            });
        }
        let pel_ids: std::collections::HashSet<StreamId> = pel.iter().map(|n| n.id).collect();
        let nconsumers = read_count(r)?;
        let mut consumers = Vec::with_capacity(cap(nconsumers));
        for _ in 0..nconsumers {
            let name = read_string(r)?;
            let seen_time_ms = read_millis(r)?;
            let active_time_ms = if v3 { read_millis(r)? } else { seen_time_ms };
            let np = read_count(r)?;
            let mut ids = Vec::with_capacity(cap(np));
            for _ in 0..np {
                let id = StreamId::from_bytes(&read_array::<_, 16>(r)?).unwrap_or_default();
                if !pel_ids.contains(&id) {
                    return corrupt("consumer PEL entry missing from its group's PEL");
                }
                ids.push(id);
            }
            consumers.push(StreamConsumer {
                name,
                seen_time_ms,
                active_time_ms,
                pel: ids,
            });
        }
        groups.push(StreamGroup {
            name,
            last_id,
            entries_read,
            pel,
            consumers,
        });
    }
    Ok(RdbStream {
        nodes,
        length,
        last_id,
        first_id,
        max_deleted_id,
        entries_added,
        groups,
    })
}

/// How closely a value's listpacks are checked, as Redis's `sanitize-dump-payload` decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sanitize {
    /// Every entry read and checked (Redis's deep sanitization; always, for RDB files).
    Deep,
    /// Only what Redis's loader checks without deep sanitization (`sanitize-dump-payload no`,
    /// for RESTORE): the listpack's frame and first entry. Redis then keeps the bytes and may
    /// crash on them later; our structures are built from the blob, so what follows the first
    /// unreadable entry is dropped (and a hash's unpaired last field): the blob is rewritten to
    /// its readable prefix.
    Shallow,
}

impl Sanitize {
    /// Checks a listpack blob and returns how many elements it holds, after rewriting it to
    /// its readable prefix when shallow (an even number of them if `pairs`).
    fn listpack(self, blob: &mut Vec<u8>, what: &str, pairs: bool) -> Result<usize, RdbError> {
        if self == Sanitize::Deep {
            return Ok(integrity(listpack_decode(blob), what)?.len());
        }
        integrity(listpack_shallow_check(blob), what)?;
        if let Ok(items) = listpack_decode(blob) {
            return Ok(items.len());
        }
        let mut items = listpack_readable_prefix(blob);
        if pairs && items.len() % 2 == 1 {
            items.pop();
        }
        *blob = listpack_encode(&items);
        Ok(items.len())
    }
}

/// A blob that failed its check, in the words of Redis's loader ("Hash ziplist integrity check
/// failed."): the server logs the reason, and Redis's tests look for it.
fn integrity<T>(checked: Result<T, RdbError>, what: &str) -> Result<T, RdbError> {
    checked.map_err(|_| RdbError::Corrupt(format!("{what} integrity check failed.")))
}

/// A packed hash's or sorted set's elements pass Redis's deep check only as pairs whose
/// first halves (fields, members) are all different.
fn unique_pairs(items: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, RdbError> {
    let items = even(items)?;
    let firsts: std::collections::HashSet<&[u8]> =
        items.iter().step_by(2).map(Vec::as_slice).collect();
    if firsts.len() != items.len() / 2 {
        return corrupt("duplicate field");
    }
    Ok(items)
}

/// Pairs need an even number of elements.
fn even(items: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, RdbError> {
    if !items.len().is_multiple_of(2) {
        return corrupt("odd number of elements");
    }
    Ok(items)
}

/// Field/value pairs, as [`RdbValue::Hash`] holds them.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// A legacy zipmap's field/value pairs.
fn zipmap_pairs(blob: &[u8]) -> Result<Pairs, RdbError> {
    let items = zipmap_decode(blob)?;
    if items.len() % 2 != 0 {
        return corrupt("zipmap with an odd number of elements");
    }
    let mut items = items.into_iter();
    let mut pairs = Vec::new();
    while let (Some(field), Some(value)) = (items.next(), items.next()) {
        pairs.push((field, value));
    }
    Ok(pairs)
}
