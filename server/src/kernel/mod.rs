//! Layer 3, kernel: how a command runs — the command table's types, ACL rules read against it,
//! what a handler gets (`ctx`), Redis's `call`, the admission gates in Redis's order, and
//! delivering pushes and tracking invalidations to clients. It names no command family.

pub mod acl_rules;
pub mod call;
pub mod client_eviction;
pub mod ctx;
pub mod gates;
pub mod invalidation;
pub mod parts;
pub mod publish;
pub mod route;
pub mod script_flags;
pub mod table;
