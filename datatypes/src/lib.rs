//! The data structures behind the keyspace and the values, free of I/O and of RESP.
//!
//! - [`dict`]: Redis's hash table with incremental rehashing and the reverse-binary SCAN cursor;
//!   it holds every database's keys and the expiry index.
//! - [`small_bytes`]: an owned byte string that keeps short values inline (keys and small
//!   values cost no second allocation).
//! - [`deadline_index`]: names with deadlines, by name and in deadline order (hash field TTLs
//!   and the per-database index of hashes that have them).
//! - [`glob`]: Redis's glob matcher for KEYS, SCAN MATCH, PSUBSCRIBE and CONFIG GET.
//! - [`listpack`]: byte strings packed into one allocation, the compact form of small collections.
//! - [`hash`], [`set`] (with [`intset`]), [`quicklist`], [`zset`]: the collection values, each in
//!   Redis's encodings with its conversion thresholds.
//! - [`stream`]: the stream type (entries in packed nodes, consumer groups and their PELs).
//! - [`vset`]: the vector set (Redis 8.2): an HNSW graph of quantised vectors, FILTER expressions.
//! - [`hll`]: Redis's HyperLogLog string, sparse and dense, byte for byte.
//! - [`lzf`]: the LZF codec of compressed list nodes (and of RDB strings).
//! - [`long_double`]: an exact model of the x87 80-bit `long double` (parse, add, `%.17Lf`),
//!   because INCRBYFLOAT replies are computed in it.
//!
//! Each structure is tested against a simple model (property tests) in its own module.

pub mod deadline_index;
pub mod dict;
pub mod glob;
pub mod hash;
pub mod hash_seed;
pub mod hll;
pub mod intset;
pub mod listpack;
pub mod long_double;
pub mod lzf;
pub mod number;
pub mod prefetch;
pub mod quicklist;
pub mod set;
pub mod small_bytes;
pub mod stream;
pub mod thin_bytes;
pub mod vset;
pub mod zset;

pub use dict::Dict;
pub use small_bytes::SmallBytes;
