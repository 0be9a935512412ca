//! The embedis server: a Redis 7.0–compatible command executor and its networking.
//!
//! The crate is built in seven layers, one folder each, lowest first; a module uses only its own
//! layer and lower ones (`tests/layers.rs` checks it from the folders, DEVELOPERS.md draws it):
//! [`base`] (words, numbers, time, configuration, values, file formats), [`model`] (what the
//! executor owns: keys, clients, replication…), [`kernel`] (the command table, `ctx`, `call`, the
//! gates), [`services`] (scripts, expiry, persistence), [`commands`] (the handlers), [`engine`]
//! (the request path and its life cycle) and [`io`] (sockets, the event loop, start and stop).
//!
//! The path of a request: [`io::net`] reads bytes and decodes requests (with
//! `embedis-protocol`), [`engine`] resolves each against the command table and admits it through
//! [`kernel::gates`], runs the handler from [`commands`] over the [`model::keyspace`], and the
//! reply is written back in the connection's RESP version. One thread owns all of it.

pub mod base;
pub mod commands;
pub mod engine;
pub mod io;
pub mod kernel;
pub mod model;
pub mod services;

pub use model::fault_rules::{FaultAction, FaultRule, Faults};

pub use base::clock::Clock;
pub use base::config::Config;
pub use io::direct::Dataset;
pub use io::server::{run, start, start_with, EngineJob, ServerHandle, ServerOptions};
