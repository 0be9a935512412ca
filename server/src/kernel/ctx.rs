//! [`Ctx`]: what a command handler gets — its arguments, a reply writer, the keyspace, the server
//! state, its own client and the other clients, the command's frozen `now`.
//!
//! The fields are public and disjoint so that a handler can hold a value borrowed from the
//! keyspace while writing it to `out` (`ctx.ks` and `ctx.out` are different fields). Argument
//! helpers return Redis's errors for bad numbers.

use bytes::Bytes;
use embedis_protocol::number::parse_i64;
use embedis_protocol::Writer;

use crate::base::error::{CmdResult, Error};
use crate::base::value::ValueType;
use crate::kernel::table::{Command, Registry};
use crate::model::blocking::{BlockReason, Blocked, KeyWait, TimeoutReply};
use crate::model::client::{ClientId, ClientState, Clients};
use crate::model::keyspace::Keyspace;
use crate::model::state::ServerState;
use crate::model::write_stream::Propagation;
use embedis_datatypes::SmallBytes;

/// Everything a command handler works with.
pub struct Ctx<'a> {
    pub args: &'a [Bytes],
    pub out: Writer<'a>,
    pub ks: &'a mut Keyspace,
    pub server: &'a mut ServerState,
    /// The client running the command.
    pub client: &'a mut ClientState,
    /// Every other client.
    pub clients: &'a mut Clients,
    pub cmd: &'static Command,
    /// The command table, for commands that look others up (COMMAND, EXEC, INFO).
    pub registry: &'static Registry,
    /// The command's time, frozen for its whole execution: milliseconds and microseconds.
    pub now_ms: i64,
    pub now_us: i64,
    /// Set by a handler that must wait (the executor parks the client).
    pub block: Option<Blocked>,
    /// False where Redis runs blocking commands as their non-blocking twins (inside MULTI or a
    /// script): a handler that would block replies as if it had timed out instead.
    pub may_block: bool,
    /// When a blocked command runs again because a key was written: that key. Redis 7.0 serves
    /// a client from the key that became ready, not from the first non-empty key it listed.
    pub woken_by: Option<&'a [u8]>,
    /// Run by a script's `redis.call`, whose reply buffer holds the command's reply alone: output
    /// for the calling client itself (its own pub/sub messages) goes to its pending buffer, which
    /// the script command sends ahead of the script's reply.
    pub from_script: bool,
    /// Where in `out` the keyspace events noted but not yet published belong: the start of the
    /// command's reply, moved past whatever a published event was written after. Events the
    /// keyspace notes during a lookup (`expired`, `keymiss`, `new`) come before the reply in
    /// Redis; `call` inserts the ones still queued when the handler returns here.
    pub events_at: usize,
}

impl<'a> Ctx<'a> {
    /// True inside EXEC: a command that may not block and was not called by a script (where
    /// Redis's `server.in_exec` makes BGSAVE, BGREWRITEAOF and the AOF's first rewrite wait for
    /// the tick).
    pub fn in_exec(&self) -> bool {
        !self.may_block && !self.from_script
    }

    /// The selected database.
    pub fn db(&self) -> usize {
        self.client.db
    }

    pub fn argc(&self) -> usize {
        self.args.len()
    }

    /// Argument `i` (0 = the command name), living as long as the request.
    pub fn arg(&self, i: usize) -> &'a [u8] {
        let args: &'a [Bytes] = self.args;
        &args[i]
    }

    /// Argument `i` as a Redis integer (`ERR value is not an integer or out of range`).
    pub fn int_arg(&self, i: usize) -> CmdResult<i64> {
        parse_i64(self.arg(i)).ok_or(Error::NotInteger)
    }

    /// True if argument `i` is the option `word`, compared as Redis does (ASCII case folded,
    /// nothing after a NUL byte; see [`crate::base::cstr`]).
    pub fn arg_is(&self, i: usize, word: &str) -> bool {
        self.args
            .get(i)
            .is_some_and(|a| crate::base::cstr::word_is(a, word))
    }

    /// True while the write stream has a consumer: a handler that rewrites its propagation
    /// builds the new form only then.
    #[inline(always)]
    pub fn propagating(&self) -> bool {
        self.ks.stream.is_on()
    }

    /// Propagates the command as `build()`'s arguments instead of its own, if it changes the
    /// dataset (Redis's `rewriteClientCommandVector`): relative expiries as absolute ones, a
    /// blocking pop as the pop it did. `build` runs only while the stream has a consumer.
    #[inline]
    pub fn propagate_as(&mut self, build: impl FnOnce() -> Vec<Bytes>) {
        if self.ks.stream.is_on() {
            *self.ks.stream.propagation() = Propagation::Replaced(build());
        }
    }

    /// Propagates `build()`'s arguments on the selected database, after whatever is pending and
    /// before the command itself (Redis's `alsoPropagate`): the SREMs of SPOP with a count, the
    /// XCLAIMs of XREADGROUP.
    #[inline]
    pub fn also_propagate(&mut self, build: impl FnOnce() -> Vec<Bytes>) {
        if self.ks.stream.is_on() {
            let db = self.db();
            self.ks.stream.also(db, build());
        }
    }

    /// The command itself does not propagate, whatever it changed (Redis's
    /// `preventCommandPropagation`): what it did goes out through [`Ctx::also_propagate`] or
    /// through the commands it ran (EXEC, scripts).
    #[inline]
    pub fn prevent_propagation(&mut self) {
        if self.ks.stream.is_on() {
            *self.ks.stream.propagation() = Propagation::Prevented;
        }
    }

    /// The command propagates even if it changed nothing (Redis's `forceCommandPropagation`:
    /// FLUSHALL and FLUSHDB of empty databases, PUBLISH).
    #[inline]
    pub fn force_propagation(&mut self) {
        if self.ks.stream.is_on() {
            let propagation = self.ks.stream.propagation();
            if matches!(propagation, Propagation::AsIs) {
                *propagation = Propagation::Forced;
            }
        }
    }

    /// The effects of this command, when it is a client's own (not run by EXEC or a script),
    /// are not wrapped in MULTI/EXEC (Redis's `CMD_TOUCHES_ARBITRARY_KEYS`: the keys SCAN and
    /// RANDOMKEY expire on their way go out as separate DELs).
    #[inline]
    pub fn propagate_unwrapped(&mut self) {
        self.ks.stream.unwrap_outermost();
    }

    /// Sends out-of-turn output to client `id` (MONITOR lines, pub/sub messages). Output for the
    /// running client itself goes after its reply, in order.
    pub fn deliver(&mut self, id: ClientId, bytes: &[u8]) {
        if id == self.client.id {
            self.client.pending.extend_from_slice(bytes);
            self.server.pending_writes.push(id);
        } else if let Some(other) = self.clients.get_mut(id) {
            other.pending.extend_from_slice(bytes);
            self.server.pending_writes.push(id);
        }
    }

    /// Parks the running command's client on `keys` until one of them holds a `wants` value — or,
    /// where blocking is not allowed (inside MULTI or a script), replies at once as the timeout would:
    /// a null array, what every blocking list and sorted-set pop answers on timeout in Redis 7.0.
    pub fn block_on_keys(&mut self, keys: &[Bytes], wants: ValueType, deadline_ms: Option<i64>) {
        if !self.may_block {
            self.out.null_array();
            return;
        }
        self.block = Some(Blocked {
            args: self.args.to_vec(),
            reason: BlockReason::Keys(KeyWait {
                db: self.db(),
                keys: keys.iter().map(|k| SmallBytes::new(k)).collect(),
                wants,
                on_timeout: TimeoutReply::NullArray,
                on_nokey: false,
            }),
            deadline_ms,
        });
    }
}
