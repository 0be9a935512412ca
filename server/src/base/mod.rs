//! Layer 1, base: what every other layer speaks — errors, C-string numbers, time, memory figures,
//! configuration and the Redis version the server behaves as, logging, the process title, listeners and TLS
//! contexts, values and command flags, and the file formats on disk (`formats`). Nothing here
//! knows of keys, clients or commands.

pub mod alloc;
pub mod clock;
pub mod compat;
pub mod config;
pub mod cstr;
pub mod disk_faults;
pub mod error;
pub mod flags;
pub mod formats;
pub mod listeners;
pub mod log;
pub mod oom;
pub mod proc_title;
pub mod signals;
pub mod tls;
pub mod value;
pub mod watchdog;
