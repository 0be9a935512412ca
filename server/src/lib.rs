//! The embedis server: a Redis 7.0–compatible command executor and its networking.
//!
//! The path of a request: [`net`] reads bytes and decodes requests (with `embedis-protocol`),
//! [`engine`] resolves each against the command [`table`], applies the generic [`gates`] and runs
//! the handler from [`commands`] over the [`keyspace`], and the reply is written back in the
//! connection's RESP version. One thread owns all of it. Time comes from [`clock`]; configuration
//! from [`config`]; [`server`] starts and stops the whole.

// The modules by layer, lowest first; a module uses only its own layer and lower ones
// (DEVELOPERS.md has the table; tests/layers.rs checks it).

// 1. base: words, numbers, time, configuration, values.
pub mod alloc;
pub mod aof_commands;
pub mod clock;
pub mod config;
pub mod cstr;
pub mod error;
pub mod flags;
pub mod listeners;
pub mod log;
pub mod rdb_convert;
pub mod rdb_file;
pub mod tls;
pub mod value;

// 2. model: what the executor owns.
pub mod acl;
pub mod append_only;
pub mod blocking;
pub mod client;
pub mod cluster;
pub mod evict;
pub mod faults;
pub mod keyspace;
pub mod latency;
pub mod multi;
pub mod notify;
pub mod propagate;
pub mod pubsub;
pub mod query_buffer;
pub mod replication;
pub mod slowlog;
pub mod snapshot;
pub mod state;
pub mod tracking;
pub mod vm_slot;
pub mod watch;

// 3. command kernel: the table, what a handler gets, how a command runs, the gates.
pub mod acl_rules;
pub mod call;
pub mod ctx;
pub mod gates;
pub mod invalidation;
pub mod publish;
pub mod table;

// 4. services: scripts and their hosts, busy scripts, expiry.
pub mod aof;
pub mod busy;
pub mod expire;
pub mod function_host;
pub mod persistence;
pub mod script_host;

// 5. handlers: every command family; the command table is assembled here.
pub mod commands;

// 6. executor.
pub mod engine;

// 7. I/O and embedding.
pub mod cluster_bus;
pub mod direct;
pub mod net;
pub mod net_threaded;
pub mod net_uring;
pub mod primary_link;
pub mod server;
#[cfg(test)]
pub(crate) mod test_harness;

pub use faults::{FaultAction, FaultRule, Faults};

pub use clock::Clock;
pub use config::Config;
pub use direct::Dataset;
pub use server::{run, start, start_with, EngineJob, ServerHandle, ServerOptions};
