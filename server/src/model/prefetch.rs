//! A pipeline's keys fetched into the CPU's cache before its requests run.
//!
//! A connection's loop (`crate::io::net`) hands this the read buffer when requests wait behind
//! the one it has just decoded. The key table is bigger than the caches once it holds more than
//! a few thousand keys, and one lookup after the other each request waited for its own misses:
//! at `-P 16` with 100,000 keys, GET spent 300 ns more per request than with one key. Here the
//! misses of a batch of requests are started together, in three passes (bucket, entry, value),
//! and the requests then run as before, decoded once and in order
//! (docs/benchmarks/hot-path.md has the figures).

use embedis_datatypes::prefetch::prefetch_read;
use embedis_protocol::peek;

use crate::model::keyspace::Db;

/// Requests of a pipeline whose keys [`Db::prefetch_pipeline`] fetches at once: enough to
/// overlap the misses of a `-P 16` pipeline, few enough that the first fetched are still in the
/// cache when their request runs.
pub const PIPELINE_PREFETCH: usize = 16;

/// Keys below which a database is not prefetched: 16,384 entries of 56 bytes and their
/// buckets are about 1 MB, which the 2 MB second-level cache of the benchmark machine holds.
const PREFETCH_MIN_KEYS: usize = 16 * 1024;

impl Db {
    /// Asks the CPU to fetch the key-table entries, and the values' first blocks, of `first`
    /// and of the keys of up to `PIPELINE_PREFETCH - 1` requests waiting in `waiting` (a
    /// connection's read buffer, at the start of a request); returns how many requests that
    /// covers, `first`'s included. A request's key is taken to be its second argument, as for
    /// most commands; for others the prefetch is merely useless.
    pub fn prefetch_pipeline(&self, first: Option<&[u8]>, waiting: &[u8]) -> usize {
        // A table this small stays in the caches: the walk would cost and save nothing, so the
        // next batch is let through without one.
        if self.main.len() < PREFETCH_MIN_KEYS {
            return PIPELINE_PREFETCH;
        }
        let mut hashes = [0usize; PIPELINE_PREFETCH];
        let mut names: [&[u8]; PIPELINE_PREFETCH] = [&[]; PIPELINE_PREFETCH];
        let mut keys = 0;
        if let Some(key) = first {
            hashes[0] = self.main.hash_of(key);
            names[0] = key;
            keys = 1;
        }
        let walked = peek::second_arguments(waiting, PIPELINE_PREFETCH - 1, |key| {
            // A key the batch repeats (a hot key, a pipeline on one list) is fetched once.
            if keys > 0 && names[keys - 1] == key {
                return;
            }
            hashes[keys] = self.main.hash_of(key);
            names[keys] = key;
            keys += 1;
        });
        // Three passes, each reading what the one before asked for: every bucket is on its way
        // before the first is read for its entry, every entry before the first is read for the
        // value's block (a small set's or hash's listpack, a list's node).
        for &hash in &hashes[..keys] {
            self.main.prefetch_bucket(hash);
        }
        for &hash in &hashes[..keys] {
            self.main.prefetch_entry(hash);
        }
        for (&hash, &key) in hashes[..keys].iter().zip(&names[..keys]) {
            if let Some(obj) = self.main.get_hashed(hash, key) {
                prefetch_read(obj.value.heap_address());
            }
        }
        walked + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::value::Value;
    use crate::model::keyspace::Keyspace;

    /// The prefetch covers the request being run and the complete ones waiting (at most a
    /// batch), whatever their keys and values, and changes nothing.
    #[test]
    fn a_pipeline_prefetch_counts_the_requests_it_covers() {
        let mut ks = Keyspace::new(1);
        ks.add(0, b"l", Value::List(Default::default()), None, 0);
        let get = |key: &str| format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len());
        let waiting = [get("l"), get("missing"), get("s"), get("s")].concat();
        // A table the caches hold is not walked: the next batch goes through without a walk.
        assert_eq!(
            ks.dbs[0].prefetch_pipeline(Some(b"s"), waiting.as_bytes()),
            PIPELINE_PREFETCH
        );
        for i in 0..PREFETCH_MIN_KEYS {
            ks.add(0, format!("s{i}").as_bytes(), Value::string(b"v"), None, 0);
        }
        let db = &ks.dbs[0];
        assert_eq!(db.prefetch_pipeline(Some(b"s1"), waiting.as_bytes()), 5);
        // A partial request ends the walk; an inline one too.
        let partial = &waiting[..waiting.len() - 3];
        assert_eq!(db.prefetch_pipeline(None, partial.as_bytes()), 4);
        assert_eq!(db.prefetch_pipeline(Some(b"l"), b"GET s\r\n"), 1);
        let many = get("s").repeat(3 * PIPELINE_PREFETCH);
        assert_eq!(
            db.prefetch_pipeline(Some(b"s"), many.as_bytes()),
            PIPELINE_PREFETCH
        );
        assert_eq!(db.len(), PREFETCH_MIN_KEYS + 1);
    }
}
