//! The embedis server: a Redis 7.0–compatible command executor and its networking.
//!
//! The path of a request: [`net`] reads bytes and decodes requests (with `embedis-protocol`),
//! [`engine`] resolves each against the [`command`] table, applies the generic gates and runs the
//! handler from [`commands`] over the [`keyspace`], and the reply is written back in the
//! connection's RESP version. One thread owns all of it. Time comes from [`clock`]; configuration
//! from [`config`]; [`server`] starts and stops the whole.

pub mod alloc;
pub mod blocking;
pub mod busy;
pub mod call;
pub mod client;
pub mod clock;
pub mod command;
pub mod commands;
pub mod config;
pub mod cstr;
pub mod ctx;
pub mod direct;
pub mod engine;
pub mod error;
pub mod expire;
pub mod faults;
pub mod functions;
pub mod keyspace;
pub mod listeners;
pub mod log;
pub mod net;
pub mod net_threaded;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod state;
#[cfg(test)]
pub(crate) mod test_harness;
pub mod value;
pub mod watch;

pub use faults::{FaultAction, FaultRule, Faults};

pub use clock::Clock;
pub use config::Config;
pub use direct::Dataset;
pub use server::{run, start, start_with, EngineJob, ServerHandle, ServerOptions};
