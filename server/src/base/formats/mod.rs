//! Values and datasets as bytes on disk: converting values to and from the `rdb` crate's
//! model, writing RDB files on a thread of their own (through a child process in the binary), and an AOF base written as commands.

pub mod aof_command_base;
pub mod rdb_child;
pub mod rdb_convert;
pub mod rdb_file;
pub mod rdb_pipe_child;
pub mod vset_rdb;
