//! A pipeline's keys fetched into the CPU's cache before its requests run.
//!
//! A connection's loop (`crate::io::net`) decodes the requests waiting behind the one in hand
//! (`embedis_protocol::ahead`) and hands their keys here. The key table is bigger than the
//! caches once it holds more than a few thousand keys, and one lookup after the other each
//! request waited for its own misses: at `-P 16` with 100,000 keys, GET spent 300 ns more per
//! request than with one key. Here the misses of a batch of requests are started together, in
//! three passes (bucket, entry, value), and the requests then run as before, decoded once and in
//! order (docs/benchmarks/hot-path.md has the figures).

use bytes::Bytes;
use embedis_datatypes::prefetch::prefetch_read;

use crate::model::keyspace::Db;

/// Requests of a pipeline whose keys [`Db::prefetch_keys`] fetches at once: enough to overlap
/// the misses of a `-P 16` pipeline, few enough that the first fetched are still in the cache
/// when their request runs.
pub const PIPELINE_PREFETCH: usize = 16;

/// Keys below which a database is not prefetched: 16,384 entries of 56 bytes and their
/// buckets are about 1 MB, which the 2 MB second-level cache of the benchmark machine holds.
const PREFETCH_MIN_KEYS: usize = 16 * 1024;

impl Db {
    /// Whether prefetching this database's keys can save a miss: a table this small stays in
    /// the caches, and decoding ahead for it would cost and save nothing.
    #[inline]
    pub fn wants_prefetch(&self) -> bool {
        self.main.len() >= PREFETCH_MIN_KEYS
    }

    /// [`Db::prefetch_keys`] of the first [`PIPELINE_PREFETCH`] of a pipeline's `requests`,
    /// each request's key taken to be its second argument, as for most commands (for others the
    /// prefetch is merely useless); returns how many requests that covers.
    pub fn prefetch_requests<'a>(&self, requests: impl Iterator<Item = &'a [Bytes]>) -> usize {
        let mut covered = 0;
        let keys = requests.take(PIPELINE_PREFETCH).filter_map(|args| {
            covered += 1;
            args.get(1).map(|key| &key[..])
        });
        self.prefetch_keys(keys);
        covered
    }

    /// Asks the CPU to fetch the key-table entries, and the values' first blocks, of up to
    /// [`PIPELINE_PREFETCH`] `keys`; returns how many keys it fetched. A key the batch repeats
    /// right after itself (a hot key, a pipeline on one list) is fetched once.
    pub fn prefetch_keys<'a>(&self, keys: impl Iterator<Item = &'a [u8]>) -> usize {
        let mut hashes = [0usize; PIPELINE_PREFETCH];
        let mut names: [&[u8]; PIPELINE_PREFETCH] = [&[]; PIPELINE_PREFETCH];
        let mut count = 0;
        for key in keys {
            if count == PIPELINE_PREFETCH {
                break;
            }
            if count > 0 && names[count - 1] == key {
                continue;
            }
            hashes[count] = self.main.hash_of(key);
            names[count] = key;
            count += 1;
        }
        // Three passes, each reading what the one before asked for: every bucket is on its way
        // before the first is read for its entry, every entry before the first is read for the
        // value's block (a small set's or hash's listpack, a list's node). The last pass looks
        // each key up: taking the chain's head without comparing keys saved 60 instructions a
        // request but fetched the wrong block for a key that shares its bucket (LPUSH on
        // 100,000 lists: 15% more CPU).
        for &hash in &hashes[..count] {
            self.main.prefetch_bucket(hash);
        }
        for &hash in &hashes[..count] {
            self.main.prefetch_entry(hash);
        }
        for (&hash, &key) in hashes[..count].iter().zip(&names[..count]) {
            if let Some(obj) = self.main.get_hashed(hash, key) {
                prefetch_read(obj.value.heap_address());
            }
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::value::Value;
    use crate::model::keyspace::Keyspace;

    /// The prefetch fetches each key once in a row, at most a batch, whatever their values,
    /// and changes nothing; a table the caches hold does not ask for one.
    #[test]
    fn a_prefetch_fetches_a_batch_of_keys_once_each() {
        let mut ks = Keyspace::new(1);
        ks.add(0, b"l", Value::List(Default::default()), None, 0);
        assert!(!ks.dbs[0].wants_prefetch());
        for i in 0..PREFETCH_MIN_KEYS {
            ks.add(0, format!("s{i}").as_bytes(), Value::string(b"v"), None, 0);
        }
        let db = &ks.dbs[0];
        assert!(db.wants_prefetch());
        let keys: [&[u8]; 5] = [b"l", b"missing", b"s1", b"s1", b"l"];
        assert_eq!(db.prefetch_keys(keys.into_iter()), 4);
        let many = std::iter::repeat([&b"s1"[..], b"s2"]).flatten().take(100);
        assert_eq!(db.prefetch_keys(many), PIPELINE_PREFETCH);
        // A request of one argument (PING) is covered with no key; at most a batch is.
        let requests: Vec<Vec<Bytes>> = (0..20)
            .map(|i| match i % 2 {
                0 => vec![Bytes::from("PING")],
                _ => vec![Bytes::from("GET"), Bytes::from(format!("s{i}"))],
            })
            .collect();
        assert_eq!(
            db.prefetch_requests(requests[..3].iter().map(Vec::as_slice)),
            3
        );
        assert_eq!(
            db.prefetch_requests(requests.iter().map(Vec::as_slice)),
            PIPELINE_PREFETCH
        );
        assert_eq!(db.len(), PREFETCH_MIN_KEYS + 1);
    }
}
