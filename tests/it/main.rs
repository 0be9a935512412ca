//! The integration tests, one test crate: a module per topic, sharing [`support`] (a real
//! redis-server to compare against, the raw RESP connection, waits, transcript comparison, an
//! embedis on a manual clock). One crate means `support` and the dependencies are compiled and
//! linked once, and `cargo test --test it <module>::` runs one topic.
//!
//! Everything here shares one process, so no test may change what the process holds for all of
//! them: no environment variables set, no `set_current_dir`, no panic hook, no rlimit or signal
//! handler; ports come from [`support::free_port`] (or the server's own ephemeral port); every
//! server a test starts gets a temporary `dir` of its own. Tests that must run alone among their
//! topic's tests take that module's lock (sentinel, busy scripts).
//!
//! Two tests stay crates of their own: `tests/eviction.rs`, which installs the counting global
//! allocator that eviction measures memory with (in this crate every other test's allocations
//! would count against its limits), and `tests/layers.rs`, which reads the source tree's text
//! with the standard library only.
//!
//! Fixture folders stay beside this folder: `tests/diff`, `tests/diff8` (differential fixtures),
//! `tests/fixtures` (lock scripts), `tests/node`, `tests/python`, `tests/redis-suite`.

mod support;

// The differential fixtures (tests/diff, tests/diff8) and byte-for-byte comparisons.
mod acl;
mod compat_versions;
mod differential;
mod dump_interop;
mod hll;
mod lzf_compat;
mod protected_mode;
mod protocol_tcp;
mod scripting_debug;

// Several connections at once: blocking, pub/sub, tracking, transactions, clients.
mod blocking;
mod client_eviction;
mod client_limits;
mod notifications;
mod pubsub;
mod redis_8_2;
mod server_commands;
mod since_7_2;
mod stream_blocking;
mod tracking;
mod transactions;

// Time on a manual clock.
mod expiry;
mod hash_field_expiry;

// Persistence and the write stream.
mod aof;
mod corrupt_dump;
mod disk_faults;
mod hash_ttl_persistence;
mod persistence;
mod propagation;

// Distribution: replication, cluster, sentinel, TLS, io_uring.
mod cluster;
mod cluster_bus_format;
mod cluster_mixed;
mod failover;
mod failover_loss;
mod full_sync_delay;
mod io_uring;
mod replica_loading;
mod replication;
mod sentinel;
mod shutdown;
mod tls;
mod vector_set_replication;

// Scripts and locks.
mod busy_scripts;
mod compare_and_set;
mod lock_clients;
mod lock_failures;
mod lock_scripts;
mod redisson_locks;
mod script_versions;

// The public API, the binary, real clients and the documents.
mod binary;
mod clients;
mod docs_examples;
mod examples;
mod faults;
mod in_process;
mod language_apis;
mod process;
mod readme;
mod redis_cli;
mod repository;
mod test_api;
