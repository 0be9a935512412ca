//! Layer 2, model: what the executor owns — the keyspace and its databases, clients and their
//! subscriptions, blocked clients and open transactions, ACL users, the write stream for the AOF
//! and replicas, replication and cluster state, the snapshot's walk, slow log, latency and fault
//! rules. The model knows command ids, never commands: the table lives in the kernel above.

pub mod acl_users;
pub mod aof_state;
pub mod blocking;
pub mod client;
pub mod client_id;
pub mod client_memory;
pub mod cluster_bus_state;
pub mod cluster_view;
pub mod evict;
pub mod fault_rules;
pub mod keysizes;
pub mod keyspace;
pub mod latency;
pub mod lazyfree;
pub mod multi;
pub mod nodes_conf;
pub mod notify;
pub mod prefetch;
pub mod pubsub;
pub mod query_buffer;
pub mod rdb_transfer;
pub mod repl_buffer;
pub mod replication;
pub mod reply_buffer;
pub mod slowlog;
pub mod snapshot;
pub mod snapshot_capture;
pub mod state;
pub mod tracking;
pub mod vm_slot;
pub mod watch;
pub mod write_stream;
