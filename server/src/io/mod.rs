//! Layer 7, I/O and embedding: sockets and the event loop (plain, threaded and io_uring), the
//! replica's link to its primary, the cluster bus, starting and stopping a server, and the direct
//! API that the embedding crate uses.

pub mod cluster_bus;
pub mod direct;
pub mod load_pace;
pub mod net;
pub mod net_threaded;
pub mod net_uring;
pub mod primary_link;
pub mod rdb_pipe;
pub mod server;
pub mod startup;
#[cfg(test)]
pub(crate) mod test_harness;
