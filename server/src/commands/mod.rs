//! Command handlers, one module per family, each declaring its table entries in a `COMMANDS`
//! slice next to the handlers. [`FAMILIES`] lists them for the registry.

use crate::command::CommandSpec;

pub mod admin;
pub mod bits;
pub mod client;
pub mod configuration;
pub mod connection;
pub mod databases;
pub mod debug_controls;
pub mod expiry;
pub mod functions;
pub mod hashes;
pub mod hll;
pub mod info;
pub mod introspection;
pub mod keys;
pub mod lists;
pub mod pubsub;
pub mod scripting;
pub mod sets;
pub mod strings;
pub mod transactions;
pub mod zsets;

/// Every family's table, in the order COMMAND and the README list them.
pub static FAMILIES: &[&[CommandSpec]] = &[
    strings::COMMANDS,
    bits::COMMANDS,
    hashes::COMMANDS,
    lists::COMMANDS,
    keys::COMMANDS,
    expiry::COMMANDS,
    databases::COMMANDS,
    connection::COMMANDS,
    client::COMMANDS,
    info::COMMANDS,
    configuration::COMMANDS,
    introspection::COMMANDS,
    admin::COMMANDS,
    sets::COMMANDS,
    zsets::COMMANDS,
    hll::COMMANDS,
    pubsub::COMMANDS,
    transactions::COMMANDS,
    scripting::COMMANDS,
    functions::COMMANDS,
];
