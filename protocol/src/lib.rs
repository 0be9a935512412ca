//! RESP, the Redis serialization protocol, without any I/O.
//!
//! This crate owns the bytes on the wire and nothing else: turning a client's byte stream into
//! commands ([`request`], with the inline form's quoting rules in [`inline`]), writing replies in
//! RESP2 or RESP3 ([`writer`], with Redis's `%.17g` doubles from [`float`]), and parsing any RESP
//! value back into a tree ([`value`]) for clients, tests and the scripting bridge. Keeping it free
//! of tokio and sockets lets the parser be property-tested and fuzzed on plain byte slices, and lets
//! every transport (TCP, unix socket, in-process) share one implementation.

pub mod ahead;
pub mod float;
pub mod inline;
pub mod number;
pub mod repr;
pub mod request;
pub mod value;
pub mod writer;

pub use request::{ProtocolError, RequestDecoder};
pub use value::{decode_value, Value, ValueError};
pub use writer::{Version, Writer};
