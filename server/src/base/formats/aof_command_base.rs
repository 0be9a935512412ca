//! An AOF base written as commands (`aof-use-rdb-preamble no`, `appendonly.aof.N.base.aof`):
//! the RESP commands that rebuild a snapshot, in the exact form Redis 7.0's
//! `rewriteAppendOnlyFileRio` writes them, so that a base from either server loads in the other
//! and a deterministic dataset gives the same bytes.
//!
//! It encodes the same [`SavedEntry`] values an RDB snapshot is made of ([`RdbValue`], the
//! RDB 7.0 model), on the snapshot's writer thread ([`crate::base::formats::rdb_file::WriterThread`]): the
//! executor's share of a rewrite — walking the keyspace and copying each value out — is the same
//! whichever format the base has, and there is one walk. The value model keeps compact encodings
//! as Redis-format blobs (listpacks, intsets, stream nodes), which this module unpacks into the
//! elements the commands carry.
//!
//! What is written, in order: an optional `#TS:` annotation; a `FUNCTION LOAD` per library;
//! then, per non-empty database, `SELECT n` and per key: `SET` for a string; `RPUSH`, `SADD`,
//! `ZADD` (scores as C's `%.17g`) and `HMSET` in batches of at most 64 elements; for a stream,
//! an `XADD` per live entry with its ID (an empty stream: `XADD key MAXLEN 0 0-1 x y`), `XSETID`
//! with `ENTRIESADDED` and `MAXDELETEDID`, per group `XGROUP CREATE … ENTRIESREAD`, and per
//! consumer either `XGROUP CREATECONSUMER` (no pending entries) or an `XCLAIM … TIME …
//! RETRYCOUNT … JUSTID FORCE` per pending entry; then `PEXPIREAT` for a key with a TTL. A hash
//! whose fields have TTLs (hash field expiration, from Redis 7.4) is written as Redis 7.4+
//! writes it: one `HMSET key field value` per field, each followed by `HPEXPIREAT key ms FIELDS
//! 1 field` when that field has a deadline.
//!
//! The file is written through a temporary file and renamed, as an RDB base is
//! ([`crate::base::formats::rdb_file::finish_file`]); a background rewrite in the binary writes
//! it through its child process, as an RDB base (`rdb_file::finish_child_file`).

use crate::base::formats::rdb_child::ChildFile;
use crate::base::formats::rdb_file::{KeyspaceSink, SaveError, SavedEntry, SnapshotSink, Target};
use embedis_rdb::encodings::{intset_decode, listpack_decode};
use embedis_rdb::{RdbError, RdbStream, RdbValue, StreamId, TtlField};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};

/// Elements per variadic command (Redis's `AOF_REWRITE_ITEMS_PER_CMD`).
pub const ITEMS_PER_CMD: usize = 64;

/// Writes the commands of a base to `W` (see the module documentation).
pub struct CommandWriter<W: Write> {
    out: W,
}

fn corrupt(e: RdbError) -> io::Error {
    io::Error::other(e.to_string())
}

impl<W: Write> CommandWriter<W> {
    pub fn new(out: W) -> Self {
        CommandWriter { out }
    }

    /// The writer the commands went to.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn count(&mut self, n: usize) -> io::Result<()> {
        let mut digits = itoa::Buffer::new();
        self.out.write_all(b"*")?;
        self.out.write_all(digits.format(n).as_bytes())?;
        self.out.write_all(b"\r\n")
    }

    fn bulk(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut digits = itoa::Buffer::new();
        self.out.write_all(b"$")?;
        self.out.write_all(digits.format(bytes.len()).as_bytes())?;
        self.out.write_all(b"\r\n")?;
        self.out.write_all(bytes)?;
        self.out.write_all(b"\r\n")
    }

    fn bulk_int(&mut self, n: i64) -> io::Result<()> {
        self.bulk(itoa::Buffer::new().format(n).as_bytes())
    }

    fn bulk_id(&mut self, id: StreamId) -> io::Result<()> {
        self.bulk(format!("{}-{}", id.ms, id.seq).as_bytes())
    }

    /// `#TS:<unix seconds>` (`aof-timestamp-enabled`): the rewrite's time, first in the file.
    pub fn timestamp(&mut self, unix_secs: i64) -> io::Result<()> {
        write!(self.out, "#TS:{unix_secs}\r\n")
    }

    /// `FUNCTION LOAD <code>` for one library (all of them come before the first SELECT).
    pub fn function(&mut self, code: &[u8]) -> io::Result<()> {
        self.count(3)?;
        self.bulk(b"FUNCTION")?;
        self.bulk(b"LOAD")?;
        self.bulk(code)
    }

    /// `SELECT <db>` before a database's keys.
    pub fn select_db(&mut self, db: u64) -> io::Result<()> {
        self.count(2)?;
        self.bulk(b"SELECT")?;
        self.bulk(itoa::Buffer::new().format(db).as_bytes())
    }

    /// The commands that rebuild one key: its value, field TTLs, then its own TTL.
    pub fn entry(&mut self, e: &SavedEntry) -> io::Result<()> {
        let key = e.key.as_slice();
        match &e.value {
            RdbValue::String(s) => {
                self.count(3)?;
                self.bulk(b"SET")?;
                self.bulk(key)?;
                self.bulk(s)?;
            }
            RdbValue::List(nodes) => {
                let mut items = Vec::new();
                for node in nodes {
                    match node.container {
                        embedis_rdb::NodeContainer::Plain => items.push(node.data.clone()),
                        embedis_rdb::NodeContainer::Packed => {
                            items.extend(listpack_decode(&node.data).map_err(corrupt)?)
                        }
                    }
                }
                self.batches(b"RPUSH", key, &items, 1, |w, item| w.bulk(item))?;
            }
            RdbValue::SetIntset(blob) => {
                let ints = intset_decode(blob).map_err(corrupt)?;
                self.batches(b"SADD", key, &ints, 1, |w, n| w.bulk_int(*n))?;
            }
            RdbValue::Set(members) => {
                self.batches(b"SADD", key, members, 1, |w, m| w.bulk(m))?;
            }
            RdbValue::SetListpack(lp) => {
                let members = listpack_decode(lp).map_err(corrupt)?;
                self.batches(b"SADD", key, &members, 1, |w, m| w.bulk(m))?;
            }
            RdbValue::ZsetListpack(lp) => {
                let items = listpack_decode(lp).map_err(corrupt)?;
                let mut pairs = Vec::with_capacity(items.len() / 2);
                for pair in items.chunks(2) {
                    let [member, score] = pair else {
                        return Err(io::Error::other("odd sorted set listpack"));
                    };
                    pairs.push((member.as_slice(), parse_score(score)?));
                }
                self.batches(b"ZADD", key, &pairs, 2, |w, (m, score)| {
                    w.score(*score)?;
                    w.bulk(m)
                })?;
            }
            RdbValue::Zset(entries) => {
                self.batches(b"ZADD", key, entries, 2, |w, (m, score)| {
                    w.score(*score)?;
                    w.bulk(m)
                })?;
            }
            RdbValue::HashListpack(lp) => {
                let items = listpack_decode(lp).map_err(corrupt)?;
                let mut pairs = Vec::with_capacity(items.len() / 2);
                for pair in items.chunks(2) {
                    let [field, value] = pair else {
                        return Err(io::Error::other("odd hash listpack"));
                    };
                    pairs.push((field.as_slice(), value.as_slice()));
                }
                self.hash(key, &pairs, &[])?;
            }
            RdbValue::Hash(pairs) => {
                let pairs: Vec<(&[u8], &[u8])> = pairs
                    .iter()
                    .map(|(f, v)| (f.as_slice(), v.as_slice()))
                    .collect();
                self.hash(key, &pairs, &[])?;
            }
            RdbValue::HashWithTtls(fields) => self.hash_with_ttls(key, fields)?,
            RdbValue::HashListpackEx { listpack, .. } => {
                let fields =
                    embedis_rdb::hash_ttl::listpack_ex_fields(listpack).map_err(corrupt)?;
                self.hash_with_ttls(key, &fields)?;
            }
            RdbValue::Stream(s) => self.stream(key, s)?,
            // Redis's vector set type has no AOF rewrite callback: a rewrite without the RDB
            // preamble fails on it, as Redis's does.
            RdbValue::Module(_) => {
                return Err(io::Error::other(
                    "the module type vectorset doesn't implement the aof_rewrite callback",
                ))
            }
        }
        if let Some(at) = e.meta.expire_ms {
            self.count(3)?;
            self.bulk(b"PEXPIREAT")?;
            self.bulk(key)?;
            self.bulk_int(at)?;
        }
        Ok(())
    }

    /// `CMD key e1 e2 …` in batches of [`ITEMS_PER_CMD`] elements, each element `width`
    /// arguments, as Redis's rewrite functions count them.
    fn batches<T>(
        &mut self,
        cmd: &[u8],
        key: &[u8],
        items: &[T],
        width: usize,
        mut each: impl FnMut(&mut Self, &T) -> io::Result<()>,
    ) -> io::Result<()> {
        for chunk in items.chunks(ITEMS_PER_CMD) {
            self.count(2 + chunk.len() * width)?;
            self.bulk(cmd)?;
            self.bulk(key)?;
            for item in chunk {
                each(self, item)?;
            }
        }
        Ok(())
    }

    /// A score as Redis's `rioWriteBulkDouble` writes it: `%.17g`.
    fn score(&mut self, score: f64) -> io::Result<()> {
        let mut text = Vec::with_capacity(24);
        embedis_protocol::float::push_g17(&mut text, score);
        self.bulk(&text)
    }

    /// A hash in one of Redis 7.4's field-TTL types: its fields in the type's order, each with its
    /// deadline (0: none).
    fn hash_with_ttls(&mut self, key: &[u8], fields: &[TtlField]) -> io::Result<()> {
        let pairs: Vec<(&[u8], &[u8])> = fields
            .iter()
            .map(|f| (f.field.as_slice(), f.value.as_slice()))
            .collect();
        let ttls: Vec<(Vec<u8>, i64)> = fields
            .iter()
            .filter(|f| f.expire_ms != 0)
            .map(|f| (f.field.clone(), f.expire_ms as i64))
            .collect();
        self.hash(key, &pairs, &ttls)
    }

    fn hash(
        &mut self,
        key: &[u8],
        pairs: &[(&[u8], &[u8])],
        ttls: &[(Vec<u8>, i64)],
    ) -> io::Result<()> {
        if ttls.is_empty() {
            return self.batches(b"HMSET", key, pairs, 2, |w, (f, v)| {
                w.bulk(f)?;
                w.bulk(v)
            });
        }
        let deadline: HashMap<&[u8], i64> = ttls.iter().map(|(f, t)| (f.as_slice(), *t)).collect();
        for (field, value) in pairs {
            self.count(4)?;
            self.bulk(b"HMSET")?;
            self.bulk(key)?;
            self.bulk(field)?;
            self.bulk(value)?;
            if let Some(at) = deadline.get(field) {
                self.count(6)?;
                self.bulk(b"HPEXPIREAT")?;
                self.bulk(key)?;
                self.bulk_int(*at)?;
                self.bulk(b"FIELDS")?;
                self.bulk(b"1")?;
                self.bulk(field)?;
            }
        }
        Ok(())
    }

    fn stream(&mut self, key: &[u8], s: &RdbStream) -> io::Result<()> {
        if s.length > 0 {
            for (master, lp) in &s.nodes {
                let items = listpack_decode(lp).map_err(corrupt)?;
                let mut entries = StreamNode::parse(*master, &items)?;
                while let Some((id, pairs)) = entries.next_live()? {
                    self.count(3 + pairs.len() * 2)?;
                    self.bulk(b"XADD")?;
                    self.bulk(key)?;
                    self.bulk_id(id)?;
                    for (field, value) in pairs {
                        self.bulk(field)?;
                        self.bulk(value)?;
                    }
                }
            }
        } else {
            // An empty stream is made by adding an entry and trimming it away at once.
            self.count(7)?;
            self.bulk(b"XADD")?;
            self.bulk(key)?;
            self.bulk(b"MAXLEN")?;
            self.bulk(b"0")?;
            self.bulk_id(StreamId { ms: 0, seq: 1 })?;
            self.bulk(b"x")?;
            self.bulk(b"y")?;
        }
        self.count(7)?;
        self.bulk(b"XSETID")?;
        self.bulk(key)?;
        self.bulk_id(s.last_id)?;
        self.bulk(b"ENTRIESADDED")?;
        self.bulk_int(s.entries_added as i64)?;
        self.bulk(b"MAXDELETEDID")?;
        self.bulk_id(s.max_deleted_id)?;
        for g in &s.groups {
            self.count(7)?;
            self.bulk(b"XGROUP")?;
            self.bulk(b"CREATE")?;
            self.bulk(key)?;
            self.bulk(&g.name)?;
            self.bulk_id(g.last_id)?;
            self.bulk(b"ENTRIESREAD")?;
            // u64::MAX is the model's "unknown", Redis's -1.
            self.bulk_int(g.entries_read as i64)?;
            let nacks: HashMap<StreamId, (i64, u64)> = g
                .pel
                .iter()
                .map(|n| (n.id, (n.delivery_time_ms, n.delivery_count)))
                .collect();
            for c in &g.consumers {
                if c.pel.is_empty() {
                    self.count(5)?;
                    self.bulk(b"XGROUP")?;
                    self.bulk(b"CREATECONSUMER")?;
                    self.bulk(key)?;
                    self.bulk(&g.name)?;
                    self.bulk(&c.name)?;
                    continue;
                }
                for id in &c.pel {
                    let (time, count) = nacks.get(id).copied().unwrap_or((0, 0));
                    self.count(12)?;
                    self.bulk(b"XCLAIM")?;
                    self.bulk(key)?;
                    self.bulk(&g.name)?;
                    self.bulk(&c.name)?;
                    self.bulk(b"0")?;
                    self.bulk_id(*id)?;
                    self.bulk(b"TIME")?;
                    self.bulk_int(time)?;
                    self.bulk(b"RETRYCOUNT")?;
                    self.bulk_int(count as i64)?;
                    self.bulk(b"JUSTID")?;
                    self.bulk(b"FORCE")?;
                }
            }
        }
        Ok(())
    }
}

/// A listpack score's text as `strtod` reads it.
fn parse_score(text: &[u8]) -> io::Result<f64> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .ok_or_else(|| io::Error::other("bad sorted set score"))
}

/// The entries of one stream node, read from its Redis listpack elements: a master entry
/// (live count, deleted count, the master fields, a 0), then per entry its flags, ID deltas
/// from the master ID, its fields (or only values, when it has the master's fields) and a
/// trailing element count.
struct StreamNode<'a> {
    master: StreamId,
    fields: &'a [Vec<u8>],
    rest: std::slice::Iter<'a, Vec<u8>>,
}

const FLAG_DELETED: i64 = 1;
const FLAG_SAME_FIELDS: i64 = 2;

fn node_int(item: Option<&Vec<u8>>) -> io::Result<i64> {
    item.and_then(|b| embedis_protocol::number::parse_i64(b))
        .ok_or_else(|| io::Error::other("bad stream node"))
}

impl<'a> StreamNode<'a> {
    fn parse(master: StreamId, items: &'a [Vec<u8>]) -> io::Result<Self> {
        let bad = || io::Error::other("bad stream node");
        if items.len() < 4 {
            return Err(bad());
        }
        let nfields = usize::try_from(node_int(items.get(2))?).map_err(|_| bad())?;
        let fields = items.get(3..3 + nfields).ok_or_else(bad)?;
        if node_int(items.get(3 + nfields))? != 0 {
            return Err(bad());
        }
        Ok(StreamNode {
            master,
            fields,
            rest: items[4 + nfields..].iter(),
        })
    }

    /// The next entry that is not deleted: its ID and field-value pairs.
    #[allow(clippy::type_complexity)]
    fn next_live(&mut self) -> io::Result<Option<(StreamId, Vec<(&'a [u8], &'a [u8])>)>> {
        let bad = || io::Error::other("bad stream node");
        loop {
            let Some(flags) = self.rest.next() else {
                return Ok(None);
            };
            let flags = node_int(Some(flags))?;
            let ms = self
                .master
                .ms
                .wrapping_add(node_int(self.rest.next())? as u64);
            let seq = self
                .master
                .seq
                .wrapping_add(node_int(self.rest.next())? as u64);
            let mut pairs = Vec::new();
            if flags & FLAG_SAME_FIELDS != 0 {
                for field in self.fields {
                    pairs.push((
                        field.as_slice(),
                        self.rest.next().ok_or_else(bad)?.as_slice(),
                    ));
                }
            } else {
                let n = usize::try_from(node_int(self.rest.next())?).map_err(|_| bad())?;
                for _ in 0..n {
                    let field = self.rest.next().ok_or_else(bad)?;
                    let value = self.rest.next().ok_or_else(bad)?;
                    pairs.push((field.as_slice(), value.as_slice()));
                }
            }
            // The entry's element count, which lets Redis walk a node backwards.
            self.rest.next().ok_or_else(bad)?;
            if flags & FLAG_DELETED == 0 {
                return Ok(Some((StreamId { ms, seq }, pairs)));
            }
        }
    }
}

fn io_step(step: &'static str) -> impl Fn(io::Error) -> SaveError {
    move |error| SaveError { step, error }
}

/// Opens the temporary file of `target` for a commands base.
pub fn create(target: &Target) -> Result<CommandWriter<BufWriter<File>>, SaveError> {
    let file = File::create(&target.temp).map_err(io_step("open"))?;
    Ok(CommandWriter::new(BufWriter::with_capacity(1 << 16, file)))
}

impl<W: Write> KeyspaceSink for CommandWriter<BufWriter<W>> {
    fn select_db(&mut self, db: u64, _keys: u64, _expires: u64) -> Result<(), SaveError> {
        CommandWriter::select_db(self, db).map_err(io_step("rewriteAppendOnlyFileRio"))
    }

    fn entry(&mut self, entry: &SavedEntry) -> Result<(), SaveError> {
        CommandWriter::entry(self, entry).map_err(io_step("rewriteAppendOnlyFileRio"))
    }
}

impl SnapshotSink for CommandWriter<BufWriter<File>> {
    fn commit(self, target: &Target) -> Result<u64, SaveError> {
        crate::base::formats::rdb_file::finish_file(target, self.out)
    }
}

/// A base written through its child process (the binary's background rewrite, as Redis's
/// forked child writes it).
impl SnapshotSink for CommandWriter<BufWriter<ChildFile>> {
    fn commit(self, target: &Target) -> Result<u64, SaveError> {
        crate::base::formats::rdb_file::finish_child_file(target, self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use embedis_rdb::encodings::{intset_encode, listpack_encode};
    use embedis_rdb::{EntryMeta, StreamConsumer, StreamGroup, StreamNack};

    fn entry(key: &str, value: RdbValue) -> SavedEntry {
        SavedEntry {
            key: key.as_bytes().to_vec(),
            value,
            meta: EntryMeta::default(),
        }
    }

    fn text(e: &SavedEntry) -> String {
        let mut w = CommandWriter::new(Vec::new());
        w.entry(e).unwrap();
        String::from_utf8(w.into_inner()).unwrap()
    }

    #[test]
    fn lists_and_sets_go_in_batches_of_64() {
        let items: Vec<String> = (0..130).map(|i| format!("e{i}")).collect();
        let out = text(&entry(
            "l",
            RdbValue::List(vec![embedis_rdb::ListNode {
                container: embedis_rdb::NodeContainer::Packed,
                data: listpack_encode(items.iter().map(String::as_bytes)),
            }]),
        ));
        let headers: Vec<&str> = out.lines().filter(|l| l.starts_with('*')).collect();
        assert_eq!(headers, ["*66", "*66", "*4"]);
        assert!(out.starts_with("*66\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n$2\r\ne0\r\n"));
        assert!(out.ends_with("$4\r\ne129\r\n"));

        let out = text(&entry("s", RdbValue::SetIntset(intset_encode(&[-5, 7]))));
        assert_eq!(
            out,
            "*4\r\n$4\r\nSADD\r\n$1\r\ns\r\n$2\r\n-5\r\n$1\r\n7\r\n"
        );
    }

    #[test]
    fn scores_are_written_as_percent_17g_and_ttls_follow_the_value() {
        let lp = listpack_encode([&b"a"[..], b"1", b"b", b"0.1", b"c", b"inf"]);
        let mut e = entry("z", RdbValue::ZsetListpack(lp));
        e.meta.expire_ms = Some(1_700_000_000_000);
        assert_eq!(
            text(&e),
            "*8\r\n$4\r\nZADD\r\n$1\r\nz\r\n$1\r\n1\r\n$1\r\na\r\n$19\r\n0.10000000000000001\r\n$1\r\nb\r\n$3\r\ninf\r\n$1\r\nc\r\n\
             *3\r\n$9\r\nPEXPIREAT\r\n$1\r\nz\r\n$13\r\n1700000000000\r\n"
        );
    }

    #[test]
    fn a_hash_with_field_ttls_is_written_field_by_field() {
        let field = |f: &[u8], v: &[u8], expire_ms| TtlField {
            field: f.to_vec(),
            value: v.to_vec(),
            expire_ms,
        };
        let e = entry(
            "h",
            RdbValue::HashWithTtls(vec![field(b"f", b"1", 0), field(b"g", b"2", 42)]),
        );
        assert_eq!(
            text(&e),
            "*4\r\n$5\r\nHMSET\r\n$1\r\nh\r\n$1\r\nf\r\n$1\r\n1\r\n\
             *4\r\n$5\r\nHMSET\r\n$1\r\nh\r\n$1\r\ng\r\n$1\r\n2\r\n\
             *6\r\n$10\r\nHPEXPIREAT\r\n$1\r\nh\r\n$2\r\n42\r\n$6\r\nFIELDS\r\n$1\r\n1\r\n$1\r\ng\r\n"
        );
    }

    #[test]
    fn streams_skip_deleted_entries_and_rebuild_groups() {
        // Master 5-0 with fields [a]; entries 5-0 {a:1} (same fields), 5-1 deleted, 6-0 {b:2}.
        let node: Vec<&[u8]> = vec![
            b"2", b"1", b"1", b"a", b"0", // master entry
            b"2", b"0", b"0", b"1", b"4", // 5-0 same fields
            b"3", b"0", b"1", b"9", b"4", // 5-1 deleted
            b"0", b"1", b"0", b"1", b"b", b"2", b"6", // 6-0
        ];
        let s = RdbStream {
            nodes: vec![(StreamId { ms: 5, seq: 0 }, listpack_encode(node))],
            length: 2,
            last_id: StreamId { ms: 6, seq: 0 },
            first_id: StreamId { ms: 5, seq: 0 },
            max_deleted_id: StreamId { ms: 5, seq: 1 },
            entries_added: 3,
            groups: vec![StreamGroup {
                name: b"g".to_vec(),
                last_id: StreamId { ms: 6, seq: 0 },
                entries_read: u64::MAX,
                pel: vec![StreamNack {
                    id: StreamId { ms: 6, seq: 0 },
                    delivery_time_ms: 99,
                    delivery_count: 2,
                }],
                consumers: vec![
                    StreamConsumer {
                        name: b"alice".to_vec(),
                        seen_time_ms: 0,
                        active_time_ms: 0,
                        pel: vec![StreamId { ms: 6, seq: 0 }],
                    },
                    StreamConsumer {
                        name: b"bob".to_vec(),
                        seen_time_ms: 0,
                        active_time_ms: 0,
                        pel: vec![],
                    },
                ],
            }],
        };
        let out = text(&entry("x", RdbValue::Stream(Box::new(s))));
        let words: Vec<&str> = out
            .split("\r\n")
            .filter(|w| !w.starts_with('$') && !w.is_empty())
            .collect();
        assert_eq!(
            words.join(" "),
            "*5 XADD x 5-0 a 1 *5 XADD x 6-0 b 2 \
             *7 XSETID x 6-0 ENTRIESADDED 3 MAXDELETEDID 5-1 \
             *7 XGROUP CREATE x g 6-0 ENTRIESREAD -1 \
             *12 XCLAIM x g alice 0 6-0 TIME 99 RETRYCOUNT 2 JUSTID FORCE \
             *5 XGROUP CREATECONSUMER x g bob"
        );
    }
}
