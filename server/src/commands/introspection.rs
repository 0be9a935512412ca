//! (being written)

use crate::command::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
