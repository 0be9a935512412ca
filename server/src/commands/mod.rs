//! Command handlers, one module per family, each declaring its table entries in a `COMMANDS`
//! slice next to the handlers. [`FAMILIES`] lists them for the registry.

use crate::command::CommandSpec;

pub mod connection;

/// Every family's table, in the order COMMAND and the README list them.
pub static FAMILIES: &[&[CommandSpec]] = &[connection::COMMANDS];
