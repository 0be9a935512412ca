//! Command handlers, one module per family (a folder where a family outgrew one file), each
//! declaring its table entries in a `COMMANDS` slice at the end of the family's file, after
//! its handlers. [`FAMILIES`] lists them, and [`registry`] builds the command
//! table from them once: the table's own module (`crate::kernel::table`) knows no family, so that
//! everything below the handlers — the gates, `call`, the script host — can look commands up
//! without depending on every handler.

use std::sync::OnceLock;

use crate::base::compat::CompatVersion;

use crate::kernel::table::{CommandSpec, Registry};

pub mod acl;
pub mod admin;
pub mod bits;
pub mod client;
pub mod cluster;
pub mod common;
pub mod configuration;
pub mod connection;
pub mod databases;
pub mod debug_cluster;
pub mod debug_collections;
pub mod debug_controls;
pub mod debug_internals;
pub mod dump;
pub mod expiry;
pub mod failover;
pub mod full_sync;
pub mod functions;
pub mod geo;
pub mod hash_ttl;
pub mod hashes;
pub mod hll;
pub mod info;
pub mod introspection;
pub mod keys;
pub mod latency;
pub mod lists;
pub mod memory;
pub mod modules;
pub mod persistence;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod sets;
pub mod slowlog;
pub mod sort;
pub mod streams;
pub mod strings;
pub mod transactions;
pub mod vsets;
pub mod zsets;

/// Every family's table, in the order COMMAND and the README list them.
pub static FAMILIES: &[&[CommandSpec]] = &[
    strings::COMMANDS,
    bits::COMMANDS,
    hashes::COMMANDS,
    hash_ttl::COMMANDS,
    vsets::COMMANDS,
    lists::COMMANDS,
    keys::COMMANDS,
    persistence::COMMANDS,
    replication::COMMANDS,
    failover::COMMANDS,
    dump::COMMANDS,
    expiry::COMMANDS,
    databases::COMMANDS,
    connection::COMMANDS,
    client::COMMANDS,
    info::COMMANDS,
    configuration::COMMANDS,
    introspection::COMMANDS,
    memory::COMMANDS,
    admin::COMMANDS,
    slowlog::COMMANDS,
    acl::COMMANDS,
    latency::COMMANDS,
    sets::COMMANDS,
    zsets::COMMANDS,
    hll::COMMANDS,
    pubsub::COMMANDS,
    transactions::COMMANDS,
    scripting::COMMANDS,
    functions::COMMANDS,
    modules::COMMANDS,
    sort::COMMANDS,
    geo::COMMANDS,
    streams::COMMANDS,
    cluster::COMMANDS,
];

/// The command table of the newest version: every command embedis has.
pub fn registry() -> &'static Registry {
    registry_for(CompatVersion::NEWEST)
}

/// The process-wide command table of one Redis version (`compat-version`), built from
/// [`FAMILIES`] at first use. The engine keeps its server's and lends it to every command it
/// runs.
pub fn registry_for(version: CompatVersion) -> &'static Registry {
    static REGISTRIES: [OnceLock<Registry>; CompatVersion::ALL.len()] =
        [const { OnceLock::new() }; CompatVersion::ALL.len()];
    REGISTRIES[version as usize].get_or_init(|| Registry::build(FAMILIES, version))
}
