//! Layer 4, services: what runs on the kernel beside the handlers — the hosts a script's
//! `redis.call` and a function library's load reach, busy scripts, active expiry, RDB saving and
//! loading, the AOF, and the shutdown sequence.

pub mod aof;
pub mod busy;
pub mod child_processes;
pub mod cluster;
pub mod expire;
pub mod function_host;
pub mod rdb_saving;
pub mod rdb_transfer;
pub mod script_debug;
pub mod script_host;
pub mod shutdown;
