//! A client's number: all that the lower model files (pub/sub's index, blocked clients' queues)
//! need to know of a client, so it sits below [`crate::model::client`], which holds their state.

pub type ClientId = u64;
