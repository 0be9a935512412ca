//! The native half of the Node package `embedis` (napi-rs): the Rust API's servers, clocks
//! and faults for `index.js`, which shapes them into the JavaScript classes users see
//! (`Server`, `Nodes`, `ReplicaSet`, `Cluster`, `Clock`) and declares them in `index.d.ts`.
//!
//! In process, not a child process, because that is what makes the package worth having: a
//! server starts in milliseconds on its own thread inside Node, and the test moves its clock
//! and injects its faults by direct calls. What may wait (starting servers, a failover, a
//! cluster's agreement) runs on libuv's thread pool and answers a Promise, so the test's own
//! Redis clients keep running on the event loop meanwhile.
//!
//! Servers belong to an `embedis::bindings::Group` (a lone server is a group of one), shared
//! with the Python package; a JavaScript server object is a group and a member index.

mod clock;
mod convert;
mod faults;
mod group;
mod kinds;
mod task;

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;

/// Counts allocated bytes for INFO's `used_memory` (and so `maxmemory`), as the
/// `embedis-server` binary does: this library is the process's Rust code in a Node process.
#[global_allocator]
static ALLOCATOR: embedis_core::base::alloc::CountingAllocator<std::alloc::System> =
    embedis_core::base::alloc::CountingAllocator(std::alloc::System);

/// Runs redis-server's command line (`embedis-server [config-file] [--option value ...]`) on
/// the calling thread until the server shuts down; returns the exit code. The package's
/// `embedis-server` command calls it.
#[napi]
pub fn serve(args: Vec<String>) -> i32 {
    match embedis::command_line(args) == std::process::ExitCode::SUCCESS {
        true => 0,
        false => 1,
    }
}

/// The key slot of `key` (CRC16 mod 16384), as cluster clients compute it.
#[napi]
pub fn slot_of(key: Either<String, Buffer>) -> u16 {
    embedis::Cluster::slot_of(convert::bytes(&key))
}

/// The crate's version.
#[napi]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
