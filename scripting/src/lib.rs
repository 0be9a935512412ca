//! The Lua engine of embedis: Lua 5.1 as Redis 7.0 embeds it.
//!
//! Owns the Lua VM, the sandbox Redis scripts run in, the libraries Redis preloads (`bit`,
//! `cjson`, `cmsgpack`, `struct`) and the conversions between RESP replies and Lua values. It
//! knows nothing of the keyspace: the server hands it a [`Host`] that runs commands, so that
//! `redis.call` goes through the same command table and gates as a client's command.

pub mod libs;
