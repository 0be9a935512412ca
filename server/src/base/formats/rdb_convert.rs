//! Our values to and from [`RdbValue`], the RDB 7.0 model of the `embedis-rdb` crate: what DUMP,
//! RESTORE, SAVE, BGSAVE, the AOF's RDB base and loading go through.
//!
//! [`to_rdb`] picks the RDB type Redis's `rdbSaveObject` picks for the value's current OBJECT
//! ENCODING: strings of every encoding (and HyperLogLogs, which are strings) as `STRING`; a list
//! node by node as `QUICKLIST_2` (a plain node only where our list has one, which is where Redis
//! would); an intset as its blob, at the width the set has (Redis never narrows it); listpack
//! hashes and sorted sets as listpack blobs (scores as Redis's `d2string` text); tables and
//! skiplists as plain `SET` / `HASH` / `ZSET_2` lists; a stream as its nodes' listpacks (deleted
//! entries still flagged inside, as Redis keeps them), counters, groups, PELs and consumers. So
//! a DUMP is byte-identical to Redis's wherever the layout is deterministic — everything but the
//! order of a hash table's elements, which follows each server's own hash function.
//!
//! [`from_rdb`] gives the value the encoding Redis 7.0's `rdbLoadObject` gives it under the
//! current limits: a `SET` of at most `set-max-intset-entries` integers becomes an intset, an
//! intset above that limit a table; a `HASH` / `ZSET_2` small enough (count and longest element)
//! packs into a listpack; a listpack blob stays packed unless it has more entries than the limit
//! (long elements alone do not convert it, as in Redis); list nodes are kept as saved, whatever
//! the current fill. Strings get `int` / `embstr` / `raw` as `tryObjectEncoding` decides. A v1
//! stream (RDB 9 and older) gets its first ID from its first live entry and each group an
//! estimated `entries_read`, as Redis does. Empty collections, duplicate members and malformed
//! blobs are errors ([`RdbError::Corrupt`], in the words of Redis's loader: "Duplicate set
//! members detected"), which RESTORE reports as a bad data format; a file's load asks
//! [`holds_nothing`] first and skips an empty key, as Redis's loader does.
//!
//! A hash given field TTLs (Redis 7.4+) takes Redis 8.2's types, which RDB 7.0 lacks: a packed
//! one (`listpackex`) is `HASH_LISTPACK_EX` (field, value, deadline triplets in its order), a
//! table with a TTL left `HASH_METADATA`; loading gives them back as Redis 8.2 does (a
//! `HASH_METADATA` of few fields packs, placing each field by its deadline). Fields whose
//! deadline has passed are loaded too, as Redis 8.2 loads them: the keyspace indexes the hash
//! and its field expiry removes them (an emptied hash with them).
//!
//! Left out: a legacy linked list or ziplist list (RDB 7 and older) arrives from the rdb crate
//! already packed into nodes of about 8 KB, where Redis would re-pack it under the current
//! `list-max-listpack-size`.

use crate::base::config::{Config, EncodingLimits};
use crate::base::value::Value;
use embedis_datatypes::deadline_index::DeadlineIndex;
use embedis_datatypes::hash::{self, HashValue, View};
use embedis_datatypes::intset::{parse_i64, Intset};
use embedis_datatypes::listpack::Listpack;
use embedis_datatypes::quicklist::{ListEncoding, Quicklist};
use embedis_datatypes::set::{SetLimits, SetValue};
use embedis_datatypes::stream::{
    self, Consumer, ConsumerGroup, PendingEntry, Stream, ENTRIES_READ_UNKNOWN,
};
use embedis_datatypes::zset::{self, Packed, ZSetValue};
use embedis_rdb::encodings::{intset_decode, listpack_decode, listpack_encode};
use embedis_rdb::hash_ttl::listpack_ex_fields;
use embedis_rdb::{
    ListNode, NodeContainer, RdbError, RdbStream, RdbValue, StreamConsumer, StreamGroup, StreamId,
    StreamNack, TtlField,
};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The RDB form Redis 7.0 writes for this value in its current encoding (Redis 8.2's for a hash
/// with field TTLs, see `hash_to_rdb`).
pub fn to_rdb(value: &Value) -> RdbValue {
    match value {
        Value::Int(_) | Value::Str(_) | Value::Raw(_) | Value::Hll(_) => {
            RdbValue::String(value.string_bytes().expect("a string value").into_owned())
        }
        Value::List(list) => RdbValue::List(
            list.node_elements()
                .map(|(plain, items)| {
                    if plain && items.len() == 1 {
                        ListNode {
                            container: NodeContainer::Plain,
                            data: items[0].to_vec(),
                        }
                    } else {
                        ListNode {
                            container: NodeContainer::Packed,
                            data: listpack_encode(&items),
                        }
                    }
                })
                .collect(),
        ),
        Value::Set(SetValue::Ints(ints)) => RdbValue::SetIntset(intset_blob(ints)),
        // Only a server that is Redis 7.2 or later makes listpack sets.
        Value::Set(SetValue::Pack(pack)) => {
            let items: Vec<&[u8]> = pack.iter().collect();
            RdbValue::SetListpack(listpack_encode(&items))
        }
        Value::Set(set) => {
            RdbValue::Set(set.iter().map(|m| m.with_bytes(<[u8]>::to_vec)).collect())
        }
        Value::Hash(h) => hash_to_rdb(h),
        Value::ZSet(ZSetValue::Packed(p)) => {
            let mut items: Vec<Vec<u8>> = Vec::with_capacity(p.len() * 2);
            for (member, score) in p.iter() {
                items.push(member.to_vec());
                items.push(d2string(score));
            }
            RdbValue::ZsetListpack(listpack_encode(&items))
        }
        Value::ZSet(z) => RdbValue::Zset(z.to_vec()),
        Value::Stream(s) => RdbValue::Stream(Box::new(stream_to_rdb(s))),
        Value::VectorSet(s) => RdbValue::Module(Box::new(super::vset_rdb::to_module(s))),
    }
}

/// Our value from a loaded RDB value, in the encoding Redis 7.0 gives it after loading
/// (conversions against the config's listpack/intset limits as rdbLoadObject does them).
pub fn from_rdb(value: RdbValue, config: &Config) -> Result<Value, RdbError> {
    let limits = &config.encodings;
    Ok(match value {
        RdbValue::String(s) => Value::string(&s),
        RdbValue::List(nodes) => Value::List(list_from_rdb(nodes, config)?),
        RdbValue::SetIntset(blob) => {
            let values = intset_decode(&blob)?;
            if values.is_empty() {
                return corrupt("empty intset");
            }
            if values.len() > limits.set_max_intset_entries {
                let mut set = SetValue::new();
                set.convert_to_table();
                for v in values {
                    set.insert_int(v, &SetLimits::v7_0(0));
                }
                Value::Set(set)
            } else {
                let width = u32::from_le_bytes(blob[0..4].try_into().expect("4 bytes")) as usize;
                let ints = Intset::from_sorted_with_width(width, &values)
                    .ok_or_else(|| RdbError::Corrupt("intset values do not fit".into()))?;
                Value::Set(SetValue::Ints(ints))
            }
        }
        RdbValue::Set(members) => {
            if members.is_empty() {
                return corrupt("empty set");
            }
            Value::Set(set_from_members(&members, &config.set_limits())?)
        }
        RdbValue::SetListpack(blob) => {
            let members = listpack_decode(&blob)?;
            if members.is_empty() {
                return corrupt("empty set listpack");
            }
            let limits = config.set_limits();
            let unlimited = SetLimits::v7_2(0, usize::MAX, usize::MAX);
            let mut set = SetValue::new_pack();
            for m in &members {
                if !set.insert(m, &unlimited) {
                    return corrupt("Duplicate set members detected");
                }
            }
            if set.len() > limits.max_listpack_entries {
                set.convert_to_table();
            }
            Value::Set(set)
        }
        RdbValue::HashListpack(blob) => {
            let items = listpack_decode(&blob)?;
            if items.is_empty() || items.len() % 2 != 0 {
                return corrupt("empty or odd hash listpack");
            }
            let fields = items.len() / 2;
            if items
                .iter()
                .step_by(2)
                .map(Vec::as_slice)
                .collect::<HashSet<_>>()
                .len()
                != fields
            {
                // Deep sanitization finds them in Redis's listpack check; without it, Redis
                // finds them only converting to a table (and panics after this log line).
                return corrupt(if config.sanitize_dump_payload == "no" {
                    "listpack with dup elements"
                } else {
                    "Hash listpack integrity check failed."
                });
            }
            let mut h = HashValue::Packed(Listpack::from_items(items.iter().map(Vec::as_slice)));
            if fields > limits.hash_max_listpack_entries {
                h.convert_to_table();
            }
            Value::Hash(h)
        }
        RdbValue::Hash(pairs) => {
            if pairs.is_empty() {
                return corrupt("empty hash");
            }
            let hash_limits = hash::Limits {
                max_entries: limits.hash_max_listpack_entries,
                max_value: limits.hash_max_listpack_value,
            };
            let mut h = HashValue::new();
            if pairs.len() > hash_limits.max_entries {
                h.convert_to_table();
            }
            for (f, v) in &pairs {
                if !h.set(f, v, hash_limits) {
                    return corrupt("Hash with dup elements");
                }
            }
            Value::Hash(h)
        }
        RdbValue::HashWithTtls(fields) => hash_with_ttls_from_rdb(fields, limits)?,
        RdbValue::HashListpackEx { listpack, .. } => listpack_ex_from_rdb(&listpack, limits)?,
        RdbValue::ZsetListpack(blob) => {
            let items = listpack_decode(&blob)?;
            if items.is_empty() || items.len() % 2 != 0 {
                return corrupt("empty or odd zset listpack");
            }
            let mut elements = Vec::with_capacity(items.len() / 2);
            for pair in items.chunks(2) {
                elements.push((pair[0].as_slice(), parse_score(&pair[1])?));
            }
            check_zset(&elements)?;
            let z = if elements.len() > limits.zset_max_listpack_entries {
                let mut z = ZSetValue::Packed(Packed::from_sorted(elements.iter().copied()));
                z.convert_to_skiplist();
                z
            } else {
                ZSetValue::Packed(Packed::from_sorted(elements.iter().copied()))
            };
            Value::ZSet(z)
        }
        RdbValue::Zset(entries) => {
            if entries.is_empty() {
                return corrupt("empty zset");
            }
            let elements: Vec<(&[u8], f64)> =
                entries.iter().map(|(m, s)| (m.as_slice(), *s)).collect();
            check_zset(&elements)?;
            let zset_limits = zset::Limits {
                max_entries: limits.zset_max_listpack_entries,
                max_value: limits.zset_max_listpack_value,
            };
            Value::ZSet(ZSetValue::from_sorted(&elements, &zset_limits))
        }
        RdbValue::Stream(s) => Value::Stream(Box::new(stream_from_rdb(*s)?)),
        RdbValue::Module(m) => Value::VectorSet(Box::new(super::vset_rdb::from_module(*m)?)),
    })
}

/// Whether a loaded value has no element: Redis's file loader skips such a key (RESTORE refuses
/// it, through [`from_rdb`]). A packed blob is empty when it is only its header and end mark.
pub fn holds_nothing(value: &RdbValue) -> bool {
    const EMPTY_LISTPACK: usize = 7;
    match value {
        RdbValue::List(nodes) => nodes
            .iter()
            .all(|n| n.container == NodeContainer::Packed && n.data.len() == EMPTY_LISTPACK),
        RdbValue::Set(m) => m.is_empty(),
        RdbValue::Hash(p) => p.is_empty(),
        RdbValue::Zset(e) => e.is_empty(),
        RdbValue::SetIntset(blob) => blob.len() == 8,
        RdbValue::SetListpack(blob)
        | RdbValue::HashListpack(blob)
        | RdbValue::ZsetListpack(blob) => blob.len() == EMPTY_LISTPACK,
        _ => false,
    }
}

fn corrupt<T>(msg: &str) -> Result<T, RdbError> {
    Err(RdbError::Corrupt(msg.into()))
}

/// A set loaded from `RDB_TYPE_SET` members, in the encoding Redis's loader gives it: an
/// intset while the count fits one and the members are integers; under 7.2's rules a listpack
/// once a string arrives while the members so far (and the longest) fit one; a table otherwise,
/// sized for the whole count.
fn set_from_members(members: &[Vec<u8>], limits: &SetLimits) -> Result<SetValue, RdbError> {
    let len = members.len();
    let mut set = SetValue::new();
    let too_many = len > limits.max_intset.min(1 << 30);
    if !limits.sized_creation {
        // Redis 7.0: an intset takes integers until a member is not one; the table anything.
        if too_many {
            set.convert_to_table();
        }
        let unlimited = SetLimits::v7_0(usize::MAX);
        for m in members {
            if !set.insert(m, &unlimited) {
                return corrupt("Duplicate set members detected");
            }
        }
        return Ok(set);
    }
    if too_many {
        set.convert_to_table_sized(len);
    }
    let unlimited = SetLimits::v7_2(usize::MAX, usize::MAX, usize::MAX);
    let mut longest = 0;
    for m in members {
        longest = longest.max(m.len());
        let fits_pack = |set: &SetValue| {
            set.len() < limits.max_listpack_entries && longest <= limits.max_listpack_value
        };
        match &set {
            SetValue::Ints(_) if parse_i64(m).is_none() => {
                if fits_pack(&set) {
                    set.convert_to_pack();
                } else {
                    set.convert_to_table_sized(len);
                }
            }
            SetValue::Pack(_) if !fits_pack(&set) => set.convert_to_table_sized(len),
            _ => {}
        }
        // Each encoding takes anything now: the conversions above are the loader's.
        if !set.insert(m, &unlimited) {
            return corrupt("Duplicate set members detected");
        }
    }
    Ok(set)
}

/// Redis's intset blob: width and count (u32 LE each), then the values at that width.
fn intset_blob(ints: &Intset) -> Vec<u8> {
    let width = ints.width();
    let mut out = Vec::with_capacity(8 + width * ints.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(ints.len() as u32).to_le_bytes());
    for v in ints.iter() {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

/// A hash in the type Redis 8.2's `rdbSaveObject` picks: `HASH_LISTPACK` / `HASH` without
/// field TTLs; with them (our `Volatile`), `HASH_LISTPACK_EX` for a packed body — even once
/// every TTL is gone, as Redis's `listpackex` encoding stays — and `HASH_METADATA` for a table
/// that still has a TTL (a table whose TTLs are all gone is a plain `HASH` again, as in Redis).
fn hash_to_rdb(h: &HashValue) -> RdbValue {
    match h.view() {
        View::Packed(lp) => RdbValue::HashListpack(listpack_encode(lp.iter())),
        View::Table(_) => RdbValue::Hash(h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()),
        View::Volatile(v) => {
            let deadline = |field: &[u8]| v.ttls.get(field).map_or(0, file_deadline);
            if v.body.is_packed() {
                // The body already keeps the listpack's order (deadlines first, ascending).
                let mut items: Vec<Cow<'_, [u8]>> = Vec::with_capacity(v.body.len() * 3);
                for (field, value) in v.body.iter() {
                    items.push(Cow::Borrowed(field));
                    items.push(Cow::Borrowed(value));
                    items.push(Cow::Owned(deadline(field).to_string().into_bytes()));
                }
                RdbValue::HashListpackEx {
                    // Redis writes its expiry index's entry for the key here, which loaders
                    // ignore; the exact earliest deadline is what that entry normally holds.
                    min_expire: v.ttls.first().map_or(0, |(d, _)| file_deadline(d)),
                    listpack: listpack_encode(items),
                }
            } else if v.ttls.is_empty() {
                hash_to_rdb(&v.body)
            } else {
                RdbValue::HashWithTtls(
                    v.body
                        .iter()
                        .map(|(field, value)| TtlField {
                            field: field.to_vec(),
                            value: value.to_vec(),
                            expire_ms: deadline(field),
                        })
                        .collect(),
                )
            }
        }
    }
}

/// A field deadline as the file holds it, where 0 means "none": a deadline at or before the
/// epoch (possible only under a test clock; long past either way) is written as 1 ms.
fn file_deadline(deadline: i64) -> u64 {
    deadline.max(1) as u64
}

/// A hash with field TTLs from `fields` in file order, as Redis 8.2's `rdbLoadObject` builds
/// it from `HASH_METADATA`: packed (`listpackex`, each field placed by its deadline) unless it
/// has more fields than `hash-max-listpack-entries` or a string longer than
/// `hash-max-listpack-value`, else a table. Fields already expired are kept: Redis loads them
/// too, and the keyspace's field expiry removes them (the loader indexes the key).
fn hash_with_ttls_from_rdb(
    fields: Vec<TtlField>,
    limits: &EncodingLimits,
) -> Result<Value, RdbError> {
    if fields.is_empty() {
        return corrupt("empty hash");
    }
    let hash_limits = hash::Limits {
        max_entries: limits.hash_max_listpack_entries,
        max_value: limits.hash_max_listpack_value,
    };
    let mut h = volatile(HashValue::new(), DeadlineIndex::new());
    if fields.len() > hash_limits.max_entries {
        h.convert_to_table();
    }
    for f in &fields {
        if !h.set(&f.field, &f.value, hash_limits) {
            return corrupt("duplicate hash field");
        }
        if f.expire_ms != 0 {
            h.set_ttl(&f.field, f.expire_ms as i64);
        }
    }
    Ok(Value::Hash(h))
}

/// A `HASH_LISTPACK_EX` hash: the listpack's pairs kept in its order (the rdb crate checked that
/// it is the order of deadlines), with their deadlines; a table if it has more fields than
/// `hash-max-listpack-entries` (long strings alone do not convert it, as in Redis).
fn listpack_ex_from_rdb(listpack: &[u8], limits: &EncodingLimits) -> Result<Value, RdbError> {
    let fields = listpack_ex_fields(listpack)?;
    if fields.is_empty() {
        return corrupt("empty hash");
    }
    if fields
        .iter()
        .map(|f| f.field.as_slice())
        .collect::<HashSet<_>>()
        .len()
        != fields.len()
    {
        return corrupt("duplicate hash field");
    }
    let mut ttls = DeadlineIndex::new();
    for f in fields.iter().filter(|f| f.expire_ms != 0) {
        ttls.set(&f.field, f.expire_ms as i64);
    }
    let body = Listpack::from_items(
        fields
            .iter()
            .flat_map(|f| [f.field.as_slice(), f.value.as_slice()]),
    );
    let mut h = volatile(HashValue::Packed(body), ttls);
    if fields.len() > limits.hash_max_listpack_entries {
        h.convert_to_table();
    }
    Ok(Value::Hash(h))
}

/// `body` with the field deadlines `ttls`: the form a hash given field TTLs takes.
fn volatile(body: HashValue, ttls: DeadlineIndex) -> HashValue {
    HashValue::Boxed(Box::new(hash::Boxed::Volatile(hash::Volatile {
        body,
        ttls,
    })))
}

/// A score as a Redis listpack holds it (`d2string`): an integer's digits when it is one of
/// magnitude below 2^52, `-0` for negative zero, `inf` / `-inf`, else `%.17g`.
fn d2string(score: f64) -> Vec<u8> {
    if score.is_infinite() {
        return if score < 0.0 {
            b"-inf".to_vec()
        } else {
            b"inf".to_vec()
        };
    }
    if score == 0.0 {
        return if score.is_sign_negative() {
            b"-0".to_vec()
        } else {
            b"0".to_vec()
        };
    }
    if score > -4503599627370495.0 && score < 4503599627370496.0 && score == (score as i64) as f64 {
        return (score as i64).to_string().into_bytes();
    }
    embedis_protocol::float::format_g17(score).into_bytes()
}

/// A listpack score's text as `strtod` reads it; NaN or garbage is corrupt.
fn parse_score(text: &[u8]) -> Result<f64, RdbError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|s| !s.is_nan())
        .ok_or_else(|| RdbError::Corrupt("invalid zset score".into()))
}

/// Sorted sets must come in (score, member) order without repeated members.
fn check_zset(elements: &[(&[u8], f64)]) -> Result<(), RdbError> {
    let ordered = elements
        .windows(2)
        .all(|w| w[0].1 < w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0));
    if !ordered {
        // Older files write skiplists in hash order: the rdb crate sorts those; a listpack out
        // of order, or a repeated member, is damage.
        return corrupt("zset elements out of order or repeated");
    }
    let distinct: HashSet<&[u8]> = elements.iter().map(|e| e.0).collect();
    if distinct.len() != elements.len() {
        return corrupt("Duplicate zset fields detected");
    }
    Ok(())
}

/// A loaded list: its nodes as saved; from Redis 7.2 a listpack if it is one small node.
fn list_from_rdb(nodes: Vec<ListNode>, config: &Config) -> Result<Quicklist, RdbError> {
    let limits = &config.encodings;
    let mut list = Quicklist::with_options(
        limits
            .list_max_listpack_size
            .clamp(i32::MIN as i64, i32::MAX as i64) as i32,
        limits.list_compress_depth.max(0) as usize,
    );
    for node in nodes {
        match node.container {
            NodeContainer::Plain => {
                if node.data.is_empty() {
                    return corrupt("empty plain list node");
                }
                list.append_node(true, &[&node.data]);
            }
            NodeContainer::Packed => {
                let items = listpack_decode(&node.data)?;
                // Redis skips empty nodes silently.
                if !items.is_empty() {
                    let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
                    list.append_node(false, &refs);
                }
            }
        }
    }
    if list.is_empty() {
        return corrupt("empty list");
    }
    if config.compat_version >= crate::base::compat::CompatVersion::V7_2 {
        list = list.with_encoding(ListEncoding::Quicklist);
    }
    Ok(list)
}

fn id_to_rdb(id: stream::StreamId) -> StreamId {
    StreamId {
        ms: id.ms,
        seq: id.seq,
    }
}

fn id_from_rdb(id: StreamId) -> stream::StreamId {
    stream::StreamId::new(id.ms, id.seq)
}

fn stream_to_rdb(s: &Stream) -> RdbStream {
    RdbStream {
        nodes: s
            .nodes()
            .map(|(master, node)| {
                (
                    id_to_rdb(master),
                    listpack_encode(node.redis_elements(master)),
                )
            })
            .collect(),
        length: s.length,
        last_id: id_to_rdb(s.last_id),
        first_id: id_to_rdb(s.first_id),
        max_deleted_id: id_to_rdb(s.max_deleted_entry_id),
        entries_added: s.entries_added,
        groups: s
            .groups
            .iter()
            .map(|(name, g)| StreamGroup {
                name: name.to_vec(),
                last_id: id_to_rdb(g.last_id),
                entries_read: g.entries_read as u64,
                pel: g
                    .pel
                    .iter()
                    .map(|(id, p)| StreamNack {
                        id: id_to_rdb(*id),
                        delivery_time_ms: p.delivery_time,
                        delivery_count: p.delivery_count,
                    })
                    .collect(),
                consumers: g
                    .consumers
                    .iter()
                    .map(|(cname, c)| StreamConsumer {
                        name: cname.to_vec(),
                        seen_time_ms: c.seen_time,
                        active_time_ms: c.active_time,
                        pel: c.pending.iter().map(|id| id_to_rdb(*id)).collect(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// [`from_rdb`] for a value read without deep sanitization ([`embedis_rdb::Sanitize::Shallow`]),
/// which may hold what Redis would keep and trip over later: a stream keeps the entries it can
/// read of each node (up to the first malformed one; a node with none is dropped), its length
/// and last ID follow what was kept, and pending entries whose consumer is missing are dropped.
/// Every other type converts as [`from_rdb`] converts it.
pub fn from_rdb_salvaged(value: RdbValue, config: &Config) -> Result<Value, RdbError> {
    match value {
        RdbValue::Stream(s) => Ok(Value::Stream(Box::new(stream_from_rdb_as(*s, true)?))),
        other => from_rdb(other, config),
    }
}

fn stream_from_rdb(r: RdbStream) -> Result<Stream, RdbError> {
    stream_from_rdb_as(r, false)
}

/// A stream's nodes and counters, every node whole unless `salvage` (see [`from_rdb_salvaged`]).
fn stream_from_rdb_as(r: RdbStream, salvage: bool) -> Result<Stream, RdbError> {
    let mut s = Stream::new();
    let mut live = 0u64;
    let mut first_live = None;
    // The last entry so far, deleted ones included: every node's entries must come after
    // the previous node's, and the stream's last ID after all of them — an XADD appends after
    // the last ID, into the last node, and a corrupt file must not make it go backwards.
    let mut last_entry: Option<stream::StreamId> = None;
    for (master, lp) in r.nodes {
        let master = id_from_rdb(master);
        let items = listpack_decode(&lp)?;
        let node = if salvage {
            stream::Node::from_redis_elements_prefix(master, &items)
        } else {
            stream::Node::from_redis_elements(master, &items)
        };
        let node = match node {
            Some(n) if last_entry.is_none_or(|m| m < master) => n,
            _ if salvage => continue,
            Some(_) => return corrupt("stream nodes out of order"),
            None => return corrupt("bad stream listpack node"),
        };
        last_entry = Some(node.last_id(master));
        live += u64::from(node.live());
        if !s.insert_node(master, node) {
            return corrupt("Listpack re-added with existing key");
        }
    }
    if let Some(e) = s.edge(false) {
        first_live = Some(e.id);
    }
    if live != r.length && !salvage {
        return corrupt("Stream length inconsistent with rax entries");
    }
    s.length = live;
    s.last_id = id_from_rdb(r.last_id);
    if let Some(e) = last_entry.filter(|e| *e > s.last_id) {
        if !salvage {
            return corrupt("stream last ID before its entries");
        }
        s.last_id = e;
    }
    s.max_deleted_entry_id = id_from_rdb(r.max_deleted_id);
    s.entries_added = r.entries_added;
    s.first_id = id_from_rdb(r.first_id);
    // A v1 stream (no first ID recorded) with entries: as Redis, take the first live entry and
    // estimate each group's entries_read.
    let legacy = s.first_id.is_zero() && s.length > 0;
    if legacy {
        s.first_id = first_live.unwrap_or_default();
    }
    for g in r.groups {
        let last_id = id_from_rdb(g.last_id);
        let entries_read = if legacy && g.entries_read == u64::MAX {
            s.entries_before(last_id)
        } else if g.entries_read == u64::MAX {
            ENTRIES_READ_UNKNOWN
        } else {
            g.entries_read as i64
        };
        let mut group = ConsumerGroup::new(last_id, entries_read);
        let mut owner: BTreeMap<stream::StreamId, (i64, u64)> = BTreeMap::new();
        for n in g.pel {
            if owner
                .insert(id_from_rdb(n.id), (n.delivery_time_ms, n.delivery_count))
                .is_some()
            {
                return corrupt("duplicate PEL entry");
            }
        }
        for c in g.consumers {
            let mut pending = BTreeSet::new();
            for id in c.pel {
                let id = id_from_rdb(id);
                let Some((time, count)) = owner.remove(&id) else {
                    return corrupt("consumer PEL entry not in its group's PEL");
                };
                pending.insert(id);
                group.pel.insert(
                    id,
                    PendingEntry {
                        consumer: c.name.clone().into_boxed_slice(),
                        delivery_time: time,
                        delivery_count: count,
                    },
                );
            }
            if group
                .consumers
                .insert(
                    c.name.into_boxed_slice(),
                    Consumer {
                        seen_time: c.seen_time_ms,
                        active_time: c.active_time_ms,
                        pending,
                    },
                )
                .is_some()
            {
                return corrupt("Duplicate stream consumer detected");
            }
        }
        if !owner.is_empty() && !salvage {
            return corrupt("Stream CG PEL entry without consumer");
        }
        if s.groups.insert(g.name.into_boxed_slice(), group).is_some() {
            return corrupt("duplicate consumer group");
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use embedis_datatypes::hll::Hll;
    use embedis_datatypes::stream::NodeLimits;
    use embedis_rdb::{dump_payload_as, parse_dump_payload_upto, RDB_VERSION_NEWEST};
    use proptest::prelude::*;

    /// `to_rdb` with hash-table element order sorted away: equal for equal contents and layout.
    fn canonical(v: &Value) -> RdbValue {
        match to_rdb(v) {
            RdbValue::Set(mut m) => {
                m.sort();
                RdbValue::Set(m)
            }
            RdbValue::Hash(mut p) => {
                p.sort();
                RdbValue::Hash(p)
            }
            RdbValue::HashWithTtls(mut f) => {
                f.sort_by(|a, b| a.field.cmp(&b.field));
                RdbValue::HashWithTtls(f)
            }
            other => other,
        }
    }

    /// Through the newest layout, which keeps everything (consumers' active times too).
    fn round_trip(v: &Value, config: &Config) -> Value {
        let payload = dump_payload_as(&to_rdb(v), true, RDB_VERSION_NEWEST);
        let parsed = parse_dump_payload_upto(&payload, RDB_VERSION_NEWEST).expect("parses");
        from_rdb(parsed, config).expect("loads")
    }

    fn check(v: &Value, config: &Config) {
        let back = round_trip(v, config);
        // A string loads as tryObjectEncoding makes it (APPEND's raw "abc" comes back embstr).
        let expected = match v.string_bytes() {
            Some(b) => Value::string(&b).encoding_name(),
            None => v.encoding_name(),
        };
        assert_eq!(back.encoding_name(), expected);
        assert_eq!(canonical(&back), canonical(v));
    }

    fn element() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            (-70000i64..70000).prop_map(|n| n.to_string().into_bytes()),
            any::<i64>().prop_map(|n| n.to_string().into_bytes()),
            proptest::collection::vec(any::<u8>(), 0..12),
            proptest::collection::vec(b'a'..b'e', 60..90),
        ]
    }

    fn score() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-1000i64..1000).prop_map(|n| n as f64),
            (-1e6f64..1e6),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(1e20),
            Just(-0.0),
        ]
    }

    /// Stream entries: (ms step, (field number, value) pairs).
    type Entries = Vec<(u8, Vec<(u8, Vec<u8>)>)>;
    /// Consumer groups: (name, (entry index, consumer) deliveries).
    type Groups = Vec<(u8, Vec<(usize, u8)>)>;

    #[derive(Debug, Clone)]
    enum Spec {
        Str(Vec<u8>, bool),
        List(Vec<Vec<u8>>, i32, bool),
        Set(Vec<Vec<u8>>),
        Hash(Vec<(Vec<u8>, Vec<u8>)>, bool),
        /// A hash as `Hash`, then field TTL changes: (pair index, deadline; 0 = HPERSIST).
        HashTtl(Vec<(Vec<u8>, Vec<u8>)>, bool, Vec<(usize, i64)>),
        ZSet(Vec<(Vec<u8>, f64)>, bool),
        /// Entries, indexes to delete, node size step, groups.
        Stream(Entries, Vec<usize>, u64, Groups),
    }

    fn spec() -> impl Strategy<Value = Spec> {
        let elems = |n| proptest::collection::vec(element(), 1..n);
        prop_oneof![
            (element(), any::<bool>()).prop_map(|(e, raw)| Spec::Str(e, raw)),
            (
                elems(300),
                prop_oneof![Just(-2), Just(-1), Just(3), Just(128)],
                any::<bool>()
            )
                .prop_map(|(e, fill, deep)| Spec::List(e, fill, deep)),
            prop_oneof![
                proptest::collection::vec(
                    any::<i64>().prop_map(|n| n.to_string().into_bytes()),
                    1..600
                ),
                proptest::collection::vec(
                    (-300i32..300).prop_map(|n| n.to_string().into_bytes()),
                    1..40
                ),
                elems(40),
            ]
            .prop_map(Spec::Set),
            (
                proptest::collection::vec((element(), element()), 1..600),
                any::<bool>()
            )
                .prop_map(|(p, small)| Spec::Hash(p, small)),
            (
                proptest::collection::vec((element(), element()), 1..40),
                any::<bool>(),
                proptest::collection::vec(
                    (
                        0usize..40,
                        prop_oneof![Just(0i64), 1_700_000_000_000i64..1_700_000_000_050]
                    ),
                    1..20
                )
            )
                .prop_map(|(p, small, ttls)| Spec::HashTtl(p, small, ttls)),
            (
                proptest::collection::vec((element(), score()), 1..200),
                any::<bool>()
            )
                .prop_map(|(p, small)| Spec::ZSet(p, small)),
            (
                proptest::collection::vec(
                    (0u8..3, proptest::collection::vec((0u8..4, element()), 1..4)),
                    1..250
                ),
                proptest::collection::vec(0usize..250, 0..30),
                0u64..200,
                proptest::collection::vec(
                    (
                        0u8..4,
                        proptest::collection::vec((0usize..250, 0u8..3), 0..10)
                    ),
                    0..3
                ),
            )
                .prop_map(|(e, d, nb, g)| Spec::Stream(e, d, nb, g)),
        ]
    }

    /// The value a spec describes, built through the data types' own operations, and the
    /// configuration it was built under.
    fn build(spec: &Spec) -> (Value, Config) {
        // 7.0's encoding rules, which `check` expects (listpack lists and sets are 7.2's).
        let mut config = Config {
            compat_version: crate::base::compat::CompatVersion::V7_0,
            ..Config::default()
        };
        let limits = &mut config.encodings;
        let v = match spec {
            Spec::Str(bytes, raw) => {
                let mut v = Value::string(bytes);
                if *raw {
                    v.make_raw();
                }
                v
            }
            Spec::List(items, fill, deep) => {
                limits.list_max_listpack_size = i64::from(*fill);
                limits.list_compress_depth = if *deep { 1 } else { 0 };
                let mut q = Quicklist::with_options(*fill, if *deep { 1 } else { 0 });
                for (i, it) in items.iter().enumerate() {
                    if i % 3 == 0 {
                        q.push_front(it);
                    } else {
                        q.push_back(it);
                    }
                }
                Value::List(q)
            }
            Spec::Set(members) => {
                let mut s = SetValue::new();
                for m in members {
                    s.insert(m, &SetLimits::v7_0(limits.set_max_intset_entries));
                }
                Value::Set(s)
            }
            Spec::Hash(pairs, small) | Spec::HashTtl(pairs, small, _) => {
                if *small {
                    limits.hash_max_listpack_entries = 8;
                }
                let hl = hash::Limits {
                    max_entries: limits.hash_max_listpack_entries,
                    max_value: limits.hash_max_listpack_value,
                };
                let mut h = HashValue::new();
                for (f, v) in pairs {
                    h.set(f, v, hl);
                }
                if let Spec::HashTtl(_, _, ttls) = spec {
                    for &(i, deadline) in ttls {
                        let field = &pairs[i % pairs.len()].0;
                        if deadline == 0 {
                            h.persist(field);
                        } else {
                            h.set_ttl(field, deadline);
                        }
                    }
                }
                Value::Hash(h)
            }
            Spec::ZSet(pairs, small) => {
                if *small {
                    limits.zset_max_listpack_entries = 5;
                }
                let zl = zset::Limits {
                    max_entries: limits.zset_max_listpack_entries,
                    max_value: limits.zset_max_listpack_value,
                };
                let mut seen = HashSet::new();
                let elements: Vec<(&[u8], f64)> = pairs
                    .iter()
                    .filter(|(m, _)| seen.insert(m.clone()))
                    .map(|(m, s)| (m.as_slice(), if *s == 0.0 { 0.0 } else { *s }))
                    .collect();
                Value::ZSet(ZSetValue::from_unsorted(elements, &zl))
            }
            Spec::Stream(entries, deletes, node_bytes, groups) => {
                let nl = NodeLimits {
                    max_bytes: 200 + node_bytes * 20,
                    max_entries: 10,
                };
                let mut s = Stream::new();
                let mut ids = Vec::new();
                let mut ms = 1000u64;
                for (step, fields) in entries {
                    ms += u64::from(*step);
                    let id = match s.last_id {
                        last if last.ms >= ms => last.next().expect("room"),
                        _ => stream::StreamId::new(ms, 0),
                    };
                    let pairs: Vec<Vec<u8>> = fields
                        .iter()
                        .flat_map(|(f, v)| [format!("f{f}").into_bytes(), v.clone()])
                        .collect();
                    s.append(id, &pairs, nl);
                    ids.push(id);
                }
                let del: Vec<stream::StreamId> = deletes
                    .iter()
                    .filter_map(|i| ids.get(*i).copied())
                    .collect();
                s.delete_ids(&del);
                for (name, pel) in groups {
                    let mut g = ConsumerGroup::new(s.last_id, s.entries_added as i64);
                    for (i, consumer) in pel {
                        let Some(id) = ids.get(*i) else { continue };
                        let cname = [b'c', b'0' + consumer];
                        g.consumer_or_create(&cname, 5000);
                        g.assign(*id, &cname, 7000 + *i as i64, 1 + *i as u64);
                    }
                    s.groups
                        .insert(vec![b'g', b'0' + name].into_boxed_slice(), g);
                }
                if s.length == 0 {
                    // An emptied stream still round-trips.
                    s.first_id = stream::StreamId::MIN;
                }
                Value::Stream(Box::new(s))
            }
        };
        (v, config)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn every_type_round_trips_with_its_encoding(spec in spec()) {
            let (v, config) = build(&spec);
            check(&v, &config);
        }
    }

    /// A zipmap hash is read as pairs, which become a hash table when a field or value is
    /// longer than `hash-max-listpack-value` (Redis's zipmap loader, and 7.0.15's
    /// integration/convert-zipmap-hash-on-load).
    #[test]
    fn pairs_longer_than_the_listpack_value_limit_load_as_a_table() {
        let pairs = || RdbValue::Hash(vec![(b"f1".to_vec(), b"v1".to_vec())]);
        let mut config = Config::default();
        let loaded = from_rdb(pairs(), &config).unwrap();
        assert_eq!(loaded.encoding_name(), "listpack");
        config.encodings.hash_max_listpack_value = 1;
        let loaded = from_rdb(pairs(), &config).unwrap();
        assert_eq!(loaded.encoding_name(), "hashtable");
    }

    #[test]
    fn hll_and_int_strings() {
        let config = Config::default();
        let mut h = Hll::new();
        h.add(b"a", 3000).unwrap();
        let v = Value::Hll(Box::new(h));
        let back = round_trip(&v, &config);
        assert_eq!(back.string_bytes(), v.string_bytes());
        assert_eq!(back.encoding_name(), "embstr", "a sparse HLL is short");
        check(&Value::Int(-5), &config);
        check(&Value::Int(i64::MAX), &config);
        check(&Value::plain_string(b"12"), &config);
    }

    #[test]
    fn plain_list_nodes_round_trip() {
        embedis_datatypes::quicklist::set_packed_threshold(100);
        let mut q = Quicklist::new();
        q.push_back(b"small");
        q.push_back(&[b'x'; 150]);
        q.push_back(b"small2");
        let v = Value::List(q);
        let rdb = to_rdb(&v);
        let RdbValue::List(nodes) = &rdb else {
            panic!()
        };
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[1].container, NodeContainer::Plain);
        check(&v, &Config::default());
        embedis_datatypes::quicklist::set_packed_threshold(0);
    }

    #[test]
    fn loading_converts_as_redis_does() {
        let mut config = Config::default();
        // A hash-table set of integers loads as an intset; past the limit as a table.
        let ints = RdbValue::Set(vec![b"3".to_vec(), b"1".to_vec()]);
        assert_eq!(
            from_rdb(ints.clone(), &config).unwrap().encoding_name(),
            "intset"
        );
        config.encodings.set_max_intset_entries = 1;
        assert_eq!(
            from_rdb(ints, &config).unwrap().encoding_name(),
            "hashtable"
        );
        let blob = RdbValue::SetIntset(embedis_rdb::encodings::intset_encode(&[1, 2]));
        assert_eq!(
            from_rdb(blob, &config).unwrap().encoding_name(),
            "hashtable"
        );
        // Small hash-table hashes and skiplists pack; a listpack with long values stays packed.
        let config = Config::default();
        let h = RdbValue::Hash(vec![(b"f".to_vec(), b"v".to_vec())]);
        assert_eq!(from_rdb(h, &config).unwrap().encoding_name(), "listpack");
        let long = listpack_encode([b"f".to_vec(), vec![b'v'; 100]]);
        assert_eq!(
            from_rdb(RdbValue::HashListpack(long), &config)
                .unwrap()
                .encoding_name(),
            "listpack"
        );
        let z = RdbValue::Zset(vec![(b"m".to_vec(), 1.5)]);
        assert_eq!(from_rdb(z, &config).unwrap().encoding_name(), "listpack");
        // Empty collections and repeated members are refused.
        assert!(from_rdb(RdbValue::Set(vec![]), &config).is_err());
        assert!(from_rdb(RdbValue::Set(vec![b"a".to_vec(), b"a".to_vec()]), &config).is_err());
        assert!(from_rdb(RdbValue::List(vec![]), &config).is_err());
    }

    fn ttl_field(f: &str, v: &str, e: u64) -> TtlField {
        TtlField {
            field: f.into(),
            value: v.into(),
            expire_ms: e,
        }
    }

    #[test]
    fn hashes_with_field_ttls_take_redis_8s_types() {
        let limits = hash::Limits::default();
        let mut h = HashValue::from_pairs(&["a", "1", "b", "2", "c", "3"], limits);
        h.set_ttl(b"c", 2_000);
        h.set_ttl(b"b", 1_000);
        // Packed: the listpack's triplets in the body's order, deadlines first; the earliest
        // deadline in the header.
        let RdbValue::HashListpackEx {
            min_expire,
            listpack,
        } = to_rdb(&Value::Hash(h.clone()))
        else {
            panic!("a packed hash with field TTLs is HASH_LISTPACK_EX")
        };
        assert_eq!(min_expire, 1_000);
        assert_eq!(
            listpack_decode(&listpack).unwrap(),
            [
                &b"b"[..],
                b"2",
                b"1000",
                b"c",
                b"3",
                b"2000",
                b"a",
                b"1",
                b"0"
            ]
        );
        // Every TTL gone: still HASH_LISTPACK_EX, as Redis's listpackex stays.
        let mut gone = h.clone();
        gone.persist(b"b");
        gone.persist(b"c");
        assert!(matches!(
            to_rdb(&Value::Hash(gone)),
            RdbValue::HashListpackEx { min_expire: 0, .. }
        ));
        // A table: HASH_METADATA while a TTL is left, a plain HASH after.
        let mut table = h;
        table.convert_to_table();
        let RdbValue::HashWithTtls(mut fields) = to_rdb(&Value::Hash(table.clone())) else {
            panic!("a table with field TTLs is HASH_METADATA")
        };
        fields.sort_by(|x, y| x.field.cmp(&y.field));
        assert_eq!(
            fields,
            [
                ttl_field("a", "1", 0),
                ttl_field("b", "2", 1_000),
                ttl_field("c", "3", 2_000)
            ]
        );
        table.persist(b"b");
        table.persist(b"c");
        assert!(matches!(to_rdb(&Value::Hash(table)), RdbValue::Hash(_)));
    }

    #[test]
    fn hashes_with_field_ttls_load_as_redis_8_builds_them() {
        let config = Config::default();
        // A few fields of HASH_METADATA pack (listpackex), each placed by its deadline as it
        // arrives (a tie goes before the fields that had the deadline already), the fields
        // without one after. Deadlines long past are kept: expiry is the keyspace's.
        let loaded = from_rdb(
            RdbValue::HashWithTtls(vec![
                ttl_field("x", "1", 0),
                ttl_field("p", "2", 50),
                ttl_field("q", "3", 10),
                ttl_field("r", "4", 50),
            ]),
            &config,
        )
        .unwrap();
        let Value::Hash(h) = &loaded else { panic!() };
        assert_eq!(loaded.encoding_name(), "listpackex");
        let order: Vec<&[u8]> = h.iter().map(|(f, _)| f).collect();
        assert_eq!(order, [&b"q"[..], b"r", b"p", b"x"]);
        assert_eq!(
            (h.ttl(b"q"), h.ttl(b"p"), h.ttl(b"x")),
            (Some(10), Some(50), None)
        );
        // Past hash-max-listpack-entries, or with a long value, a table.
        let mut small = Config::default();
        small.encodings.hash_max_listpack_entries = 2;
        let fields = vec![
            ttl_field("a", "1", 5),
            ttl_field("b", "2", 0),
            ttl_field("c", "3", 0),
        ];
        let loaded = from_rdb(RdbValue::HashWithTtls(fields), &small).unwrap();
        assert_eq!(loaded.encoding_name(), "hashtable");
        let Value::Hash(h) = &loaded else { panic!() };
        assert_eq!((h.ttl(b"a"), h.len()), (Some(5), 3));
        let long = "v".repeat(65);
        let loaded = from_rdb(
            RdbValue::HashWithTtls(vec![ttl_field("a", &long, 5)]),
            &config,
        )
        .unwrap();
        assert_eq!(loaded.encoding_name(), "hashtable");
        // HASH_LISTPACK_EX keeps its listpack's order; too many fields make a table (long
        // values alone do not).
        let lp = listpack_encode(["k", "1", "7", "m", &long, "0"]);
        let loaded = from_rdb(
            RdbValue::HashListpackEx {
                min_expire: 0,
                listpack: lp.clone(),
            },
            &config,
        )
        .unwrap();
        assert_eq!(loaded.encoding_name(), "listpackex");
        let Value::Hash(h) = &loaded else { panic!() };
        assert_eq!((h.ttl(b"k"), h.ttl(b"m")), (Some(7), None));
        let loaded = from_rdb(
            RdbValue::HashListpackEx {
                min_expire: 0,
                listpack: listpack_encode(["a", "1", "0", "b", "2", "0", "c", "3", "0"]),
            },
            &small,
        )
        .unwrap();
        assert_eq!(loaded.encoding_name(), "hashtable");
        // Empty hashes and repeated fields are refused.
        for bad in [
            RdbValue::HashWithTtls(vec![]),
            RdbValue::HashWithTtls(vec![ttl_field("a", "1", 5), ttl_field("a", "2", 0)]),
            RdbValue::HashListpackEx {
                min_expire: 0,
                listpack: listpack_encode(["a", "1", "0", "a", "2", "0"]),
            },
            RdbValue::HashListpackEx {
                min_expire: 0,
                listpack: listpack_encode::<_, &str>([]),
            },
        ] {
            assert!(from_rdb(bad, &config).is_err());
        }
    }

    #[test]
    fn scores_as_redis_writes_them() {
        assert_eq!(d2string(1.0), b"1");
        assert_eq!(d2string(-0.0), b"-0");
        assert_eq!(d2string(1.5), b"1.5");
        assert_eq!(d2string(0.1), b"0.10000000000000001");
        assert_eq!(d2string(1e20), b"1e+20");
        assert_eq!(d2string(f64::NEG_INFINITY), b"-inf");
    }
}
