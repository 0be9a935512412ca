//! The Lua engine of embedis: Lua 5.1 as Redis 7.0 embeds it.
//!
//! Owns the Lua VM, the sandbox Redis scripts run in, the libraries Redis preloads (`bit`,
//! `cjson`, `cmsgpack`, `struct`), the script cache and the conversions between RESP replies and
//! Lua values. It knows nothing of the keyspace: the server hands [`ScriptVm::run`] a [`Host`]
//! that runs commands, so that `redis.call` goes through the same command table and gates as a
//! client's command, and answers the periodic "should this script stop?" question.
//!
//! Module map: [`sandbox`] builds the VM and its read-only globals; [`host`] is the server as a
//! script sees it; [`bridge`] is the `redis.*` table; [`convert`] turns replies into Lua values
//! and a script's result into a reply; [`errors`] gives script errors Redis's shapes; `memory_limit` lifts the VM's memory limit
//! while Rust builds Lua values; [`scripts`] is the EVAL script cache and its
//! shebang flags; [`debugger`] is Redis's Lua debugger (SCRIPT DEBUG SYNC); [`functions`] holds Redis 7 function libraries in a VM of their own, and
//! [`dump`] their FUNCTION DUMP / RESTORE payload.

pub mod bridge;
pub mod convert;
pub mod debugger;
pub mod dump;
pub mod errors;
pub mod functions;
pub mod host;
pub mod libs;
mod memory_limit;
pub mod sandbox;
pub mod scripts;

pub use bridge::{Host, HostLog, Interrupt};
pub use functions::{Functions, RestorePolicy};
pub use mlua::Function as LuaFunction;
pub use sandbox::ScriptVm;
pub use scripts::{ScriptFlags, ShebangError};

/// The lower-case hex SHA1 of `data`: a script's name in the cache (EVALSHA, SCRIPT EXISTS).
pub fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}
