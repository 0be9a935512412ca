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
pub mod debug_tables;
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
/// The table for `version` with the configuration's `rename-command` lines applied: the shared
/// table when there are none, else a table of this server's own (built once, kept for the
/// process's life, as a server's table is).
pub fn registry_renamed(
    version: CompatVersion,
    renames: &[(String, String)],
) -> Result<&'static Registry, String> {
    if renames.is_empty() {
        return Ok(registry_for(version));
    }
    let mut registry = Registry::build(FAMILIES, version);
    for (name, new_name) in renames {
        registry
            .rename(name, new_name)
            .map_err(|e| format!("rename-command {name} {new_name:?}: {e}"))?;
    }
    Ok(Box::leak(Box::new(registry)))
}

pub fn registry_for(version: CompatVersion) -> &'static Registry {
    static REGISTRIES: [OnceLock<Registry>; CompatVersion::ALL.len()] =
        [const { OnceLock::new() }; CompatVersion::ALL.len()];
    REGISTRIES[version as usize].get_or_init(|| Registry::build(FAMILIES, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rename-command` lines as redis-server 7.0.15 takes them: the command answers to its
    /// new name only, an empty name takes it away, and an unknown command or a name taken
    /// stop the start with Redis's reason.
    #[test]
    fn rename_command_lines() {
        let renames = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
            registry_renamed(CompatVersion::V7_0, &pairs)
        };
        let r = renames(&[("FLUSHDB", "badger"), ("keys", "")]).unwrap();
        assert!(r.by_name(b"flushdb").is_none());
        assert_eq!(r.by_name(b"BADGER").unwrap().full_name, "flushdb");
        assert!(r.by_name(b"keys").is_none());
        assert!(registry_for(CompatVersion::V7_0)
            .by_name(b"flushdb")
            .is_some());
        let Err(err) = renames(&[("nosuch", "x")]) else {
            panic!("an unknown command renamed")
        };
        assert!(err.ends_with("No such command in rename-command"), "{err}");
        let Err(err) = renames(&[("get", "set")]) else {
            panic!("a name taken twice")
        };
        assert!(err.ends_with("Target command name already exists"), "{err}");
    }
}
