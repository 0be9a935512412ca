//! Commands run by the embedding process, without a connection, and the data a server keeps
//! across a restart.
//!
//! A test that embeds a server arranges and checks its data directly (`embedis::Server::get`,
//! `set`, …). Those helpers must behave exactly like a client's commands — lazy expiry, keyspace
//! statistics, WATCH signals, blocked clients woken by a push — so rather than touching the
//! keyspace themselves they run the real command handlers through [`crate::kernel::call::call`] as a
//! connection-less client of their own ([`Engine::run_direct`]), on the engine's thread (the
//! closure arrives over the server's job channel, see [`crate::io::server::ServerHandle::with_engine`]).
//! The reply is RESP3 so that the caller can tell maps, sets and doubles apart.
//!
//! [`Dataset`] is what survives [`crate::io::server::ServerHandle::stop`] and seeds the next start:
//! what a Redis restart would reload from its RDB file — every database's keys with their values
//! and TTLs, and the function libraries — and nothing else (no clients, statistics or CONFIG
//! SET changes).

use bytes::{Bytes, BytesMut};
use embedis_protocol::{decode_value, Value, Version, Writer};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use crate::base::error::Error;
use crate::engine::Engine;
use crate::kernel::call::{self, How};
use crate::kernel::gates;
use crate::model::client::{ClientHandle, ClientId, ClientState, Peer};
use crate::model::keyspace::Db;

/// The client id the embedding process's commands run as (CLIENT ID shows it). Connections
/// count up from 1 and never reach it.
pub const DIRECT_CLIENT_ID: ClientId = ClientId::MAX;

/// Commands that leave state on their connection for the commands after them (a transaction,
/// watched keys, subscriptions, a MONITOR feed): a direct command's client lives for one command.
pub const NEEDS_CONNECTION: &[&str] = &[
    "multi",
    "exec",
    "discard",
    "watch",
    "unwatch",
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "ssubscribe",
    "sunsubscribe",
    "monitor",
];

/// How a direct command runs: counted like a client's, never blocking (a blocking command
/// answers at once, as inside MULTI).
const DIRECT: How<'static> = How::IN_MULTI;

/// Reloading the data on start is not a command anyone sent: no statistics.
const RELOAD: How<'static> = How {
    counted: false,
    may_block: false,
    woken_by: None,
    from_script: false,
    nested: false,
    script: None,
};

impl Engine {
    /// Runs `args` as a command of the embedding process on database `db` and returns its RESP3
    /// reply. The command passes the gates that concern a command's shape (unknown command,
    /// arity) but not those of a connection (AUTH, CLIENT PAUSE, protected commands): the
    /// embedding process owns the server. Commands that keep state on a connection for later
    /// commands ([`NEEDS_CONNECTION`]) are refused; blocking commands answer at once. Clients
    /// blocked on a key the command wrote are served before this returns.
    pub fn run_direct(&mut self, db: usize, args: &[Bytes]) -> BytesMut {
        // SHUTDOWN would wait for lagging replicas by blocking its caller, which the embedding
        // process cannot be: from here it stops at once (NOW), as a blocking command answers
        // at once. (A client inside MULTI still gets Redis's DENY BLOCKING error.)
        let shutdown = args
            .first()
            .is_some_and(|a| a.eq_ignore_ascii_case(b"shutdown"));
        let immediate =
            |a: &Bytes| a.eq_ignore_ascii_case(b"now") || a.eq_ignore_ascii_case(b"abort");
        if shutdown && !args[1..].iter().any(immediate) {
            let mut now = args.to_vec();
            now.push(Bytes::from_static(b"NOW"));
            return self.run_direct_as(db, &now, DIRECT);
        }
        self.run_direct_as(db, args, DIRECT)
    }

    fn run_direct_as(&mut self, db: usize, args: &[Bytes], how: How<'_>) -> BytesMut {
        let mut out = BytesMut::new();
        let refuse = |out: &mut BytesMut, error: Error| {
            Writer::new(out, Version::Resp3).error_line(&error.line());
        };
        if args.is_empty() {
            refuse(&mut out, Error::msg("ERR empty command"));
            return out;
        }
        let command = match gates::resolve(self.registry, args) {
            Ok(command) => command,
            Err(refused) => {
                refuse(&mut out, refused.error(args));
                return out;
            }
        };
        if NEEDS_CONNECTION.contains(&command.full_name.as_str()) {
            refuse(
                &mut out,
                Error::owned(format!(
                    "ERR {} needs a connection; it cannot run from the embedding process",
                    command.spec.name.to_ascii_uppercase()
                )),
            );
            return out;
        }
        if db >= self.ks.dbs.len() {
            refuse(&mut out, Error::msg("ERR DB index is out of range"));
            return out;
        }
        self.catch_up_with_clock();
        let now_us = self.server.clock.now_us();
        let mut client = ClientState::new(
            Arc::new(ClientHandle::new(DIRECT_CLIENT_ID)),
            Peer::Tcp {
                addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
                local: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            },
            -1,
            now_us.div_euclid(1000),
            true,
        );
        client.db = db;
        client.resp = Version::Resp3;
        call::call(
            &mut self.parts(),
            &mut client,
            command,
            args,
            &mut out,
            Version::Resp3,
            now_us,
            how,
        );
        // What a client's command would have set off: CLIENT KILL / UNBLOCK / UNPAUSE, and the
        // clients blocked on keys it wrote.
        if !self.server.requests.is_empty() {
            self.carry_out_requests();
        }
        if self.ks.ready.has_ready() {
            self.serve_ready_keys();
        }
        out
    }
}

/// What a server keeps across a restart (see the module documentation).
pub struct Dataset {
    dbs: Vec<Db>,
    /// FUNCTION DUMP's payload, if any library was loaded.
    functions: Option<Bytes>,
}

impl Dataset {
    /// Takes the data out of a stopping server's engine.
    pub(crate) fn take(engine: &mut Engine) -> Dataset {
        let has_libraries = engine
            .server
            .functions
            .get()
            .is_some_and(|f| f.library_count() > 0);
        let functions = if has_libraries {
            let args = [Bytes::from_static(b"FUNCTION"), Bytes::from_static(b"DUMP")];
            let reply = engine.run_direct_as(0, &args, RELOAD).freeze();
            match decode_value(&reply) {
                Ok(Some((Value::Bulk(payload), _))) => Some(payload),
                _ => None,
            }
        } else {
            None
        };
        let databases = engine.ks.dbs.len();
        let dbs = std::mem::replace(&mut engine.ks.dbs, (0..databases).map(Db::new).collect());
        Dataset { dbs, functions }
    }

    /// Loads the data into a new server's engine, as Redis loads its RDB file: keys whose TTL
    /// has already passed are left out, the databases beyond the configured number too.
    pub(crate) fn restore(self, engine: &mut Engine) {
        let now = engine.server.clock.now_ms();
        for (id, mut db) in self.dbs.into_iter().enumerate() {
            if id >= engine.ks.dbs.len() {
                break;
            }
            let expired: Vec<Vec<u8>> = db
                .expires
                .iter()
                .filter(|(_, &when)| now > when)
                .map(|(key, _)| key.to_vec())
                .collect();
            for key in expired {
                db.remove(&key);
            }
            db.id = id;
            db.avg_ttl = 0;
            db.expires_cursor = 0;
            engine.ks.dbs[id] = db;
        }
        if let Some(payload) = self.functions {
            let args = [
                Bytes::from_static(b"FUNCTION"),
                Bytes::from_static(b"RESTORE"),
                payload,
            ];
            engine.run_direct_as(0, &args, RELOAD);
        }
        // Loading is not a change since the last save.
        engine.ks.dirty = 0;
    }
}
