//! Fault injection: the failures a lock client's tests need on demand — error replies, slow
//! replies, connections closed in the middle of a command, a server that stops answering (as a
//! process in a long GC pause does) and every connection dropped at once.
//!
//! [`Faults`] owns one server's rules. It is shared between the engine and whoever controls the
//! server (the in-process Rust API, or DEBUG FAULT / DEBUG PAUSE over the wire): the rules live
//! behind a mutex, and an atomic flag says whether there is anything at all, so the engine's
//! cost per command while no fault is set is one load and one branch (GET and SET are benchmarked
//! against Redis). Only the controller's thread and, when the flag is set, the engine take the
//! lock. Work only the engine can do (dropping connections, ending a pause on time) is asked for
//! through listeners the server registers, as a clock change is.
//!
//! Semantics, all on the server's [`crate::base::clock::Clock`] (real time on the system clock or a
//! running controllable one; test-controlled on a manual one):
//! - A rule matches a command by name (a glob, ASCII case folded, against the command's first
//!   word, or its `parent|sub` full name for one subcommand) and, optionally, by key (a Redis glob that any of the command's
//!   keys must match; a command without keys never matches a key pattern). The first matching
//!   rule applies; one with a count is spent after that many commands.
//! - Error: the command does not run; the client gets the error (counted as a rejected call).
//! - Latency: the command runs at once, its reply is held until the clock reaches now + D, as a
//!   slow network would deliver it; later requests of that connection wait behind it.
//! - Close: the command does not run; the connection closes without a reply.
//! - Pause: until the clock reaches its end no command runs (they queue, connections are still
//!   accepted, no timeout fires); then everything queued runs in arrival order.
//! - Drop: every connection is closed at once, nothing more written to any.
//!
//! DEBUG commands are exempt from rules and from the pause: they are the test's control channel
//! (a test paused over the wire must be able to advance the clock over the wire).
//!
//! This module is the rule store, part of what the executor owns; the engine applies the rules
//! to requests in `engine/fault_gate.rs`.

use crate::base::disk_faults::DiskFaults;
use embedis_datatypes::glob;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a matching rule does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultAction {
    /// Reply with this error line (e.g. `ERR injected` or `READONLY …`) instead of running.
    Error(String),
    /// Run the command, deliver its reply this much later on the server's clock.
    Latency(Duration),
    /// Close the connection without running the command or replying.
    Close,
}

/// One fault rule: which commands it matches, what it does, how many more times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRule {
    /// Glob for the command name (`set`, `eval*`, `client|kill`, `*`), ASCII case folded.
    pub command: String,
    /// Glob one of the command's keys must match; `None` matches any command, keys or not.
    pub key_pattern: Option<Vec<u8>>,
    pub action: FaultAction,
    /// How many more matching commands it applies to; `None` = every one until cleared.
    pub times: Option<u64>,
}

impl FaultRule {
    /// Replies `error` to every `command` (narrow it with [`FaultRule::keys`] and
    /// [`FaultRule::times`]).
    pub fn error(command: &str, error: &str) -> FaultRule {
        FaultRule::new(command, FaultAction::Error(error.to_string()))
    }

    /// Delays the reply of every `command` by `delay`.
    pub fn latency(command: &str, delay: Duration) -> FaultRule {
        FaultRule::new(command, FaultAction::Latency(delay))
    }

    /// Closes the connection on every `command`.
    pub fn close(command: &str) -> FaultRule {
        FaultRule::new(command, FaultAction::Close)
    }

    fn new(command: &str, action: FaultAction) -> FaultRule {
        FaultRule {
            command: command.to_string(),
            key_pattern: None,
            action,
            times: None,
        }
    }

    /// Only commands with a key matching `pattern` (a Redis glob; `*` = any command at all).
    pub fn keys(mut self, pattern: impl AsRef<[u8]>) -> FaultRule {
        let pattern = pattern.as_ref();
        self.key_pattern = (pattern != b"*").then(|| pattern.to_vec());
        self
    }

    /// Only the next `n` matching commands (0 = all of them).
    pub fn times(mut self, n: u64) -> FaultRule {
        self.times = (n != 0).then_some(n);
        self
    }

    /// The rule as the arguments of the DEBUG FAULT line that would create it (DEBUG FAULT LIST
    /// shows this), with the remaining count.
    pub fn describe(&self) -> String {
        let pattern = self
            .key_pattern
            .as_deref()
            .map_or("*".into(), String::from_utf8_lossy);
        let times = self.times.unwrap_or(0);
        match &self.action {
            FaultAction::Error(text) => {
                format!("ERROR {} {pattern} {times} {text}", self.command)
            }
            FaultAction::Latency(d) => format!(
                "LATENCY {} {pattern} {} {times}",
                self.command,
                d.as_millis()
            ),
            FaultAction::Close => format!("CLOSE {} {pattern} {times}", self.command),
        }
    }

    /// True if the rule applies to the command with this full name (`get`, `client|kill`), whose
    /// keys `any_key_matches` tests against a glob.
    fn matches(&self, full_name: &str, any_key_matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        // `client|kill` names one subcommand, `client` all of them (the command's first word);
        // a subcommand's own name (`get` of CONFIG GET) is not the command's.
        let pattern = self.command.as_bytes();
        let full = full_name.as_bytes();
        let first_word = full.split(|&b| b == b'|').next().unwrap_or(full);
        let named = glob::matches(pattern, full, true) || glob::matches(pattern, first_word, true);
        if !named {
            return false;
        }
        match &self.key_pattern {
            None => true,
            Some(key_pattern) => any_key_matches(key_pattern),
        }
    }
}

/// One server's fault rules, pause and drop requests; clones share them.
#[derive(Clone, Default)]
pub struct Faults {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// True while there is any rule, pause or pending drop: the engine's fast-path check.
    active: AtomicBool,
    state: Mutex<State>,
    /// Signalled when the engine has carried out a drop request.
    dropped: Condvar,
    listeners: Mutex<Vec<Arc<dyn Fn() + Send + Sync>>>,
    /// A replica's link stops reading its primary's stream (a partition between them).
    replication_held: AtomicBool,
    /// The AOF's writes and fsyncs that fail (see [`crate::base::disk_faults`]).
    disk: DiskFaults,
}

#[derive(Default)]
struct State {
    rules: Vec<FaultRule>,
    /// End of the server pause (ms on the server's clock).
    pause_until_ms: Option<i64>,
    drops_requested: u64,
    drops_done: u64,
    /// Connections closed by the last drop.
    last_dropped: usize,
}

impl State {
    fn any(&self) -> bool {
        !self.rules.is_empty()
            || self.pause_until_ms.is_some()
            || self.drops_requested > self.drops_done
    }
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("Faults")
            .field("rules", &state.rules)
            .field("pause_until_ms", &state.pause_until_ms)
            .finish()
    }
}

impl Faults {
    pub fn new() -> Faults {
        Faults::default()
    }

    /// True if any rule, pause or drop request exists (the engine's one branch per command).
    #[inline]
    pub fn active(&self) -> bool {
        self.inner.active.load(Ordering::Acquire)
    }

    /// Changes the state and keeps the fast-path flag in step with it.
    fn update<R>(&self, change: impl FnOnce(&mut State) -> R) -> R {
        let mut state = self.inner.state.lock();
        let result = change(&mut state);
        self.inner.active.store(state.any(), Ordering::Release);
        result
    }

    /// Adds a rule after the existing ones.
    pub fn add(&self, rule: FaultRule) {
        self.update(|s| s.rules.push(rule));
    }

    /// The rules in force, in the order they are tried, with their remaining counts.
    pub fn rules(&self) -> Vec<FaultRule> {
        self.inner.state.lock().rules.clone()
    }

    /// Removes every rule, disk faults included (a pause runs on until its end).
    pub fn clear(&self) {
        self.update(|s| s.rules.clear());
        self.inner.disk.clear();
    }

    /// The disk fault rules: the AOF's writes and fsyncs that fail, as a full or broken disk
    /// fails them.
    pub fn disk(&self) -> &DiskFaults {
        &self.inner.disk
    }

    /// Pauses the server until `until_ms` on its clock (a later pause replaces an earlier one;
    /// a time already past ends the pause at the engine's next look).
    pub fn pause_until(&self, until_ms: i64) {
        self.update(|s| s.pause_until_ms = Some(until_ms));
        self.notify();
    }

    /// Holds (or releases) this replica's stream from its primary: while held, the link reads
    /// nothing and acknowledges nothing, as if the network between them were cut; the
    /// primary's writes wait in the socket and its backlog, and are applied once released.
    pub fn hold_replication(&self, held: bool) {
        self.inner.replication_held.store(held, Ordering::Release);
        self.notify();
    }

    /// True while [`Faults::hold_replication`] holds the stream.
    pub fn replication_held(&self) -> bool {
        self.inner.replication_held.load(Ordering::Acquire)
    }

    /// The end of the current server pause, if one is set.
    pub fn paused_until(&self) -> Option<i64> {
        self.inner.state.lock().pause_until_ms
    }

    /// Asks the engine to close every connection and waits until it has (at most `wait`).
    /// Returns how many it closed, or `None` if the server did not answer in time (stopped).
    pub fn drop_connections(&self, wait: Duration) -> Option<usize> {
        let mut state = self.inner.state.lock();
        state.drops_requested += 1;
        let ticket = state.drops_requested;
        self.inner.active.store(true, Ordering::Release);
        drop(state);
        self.notify();
        let mut state = self.inner.state.lock();
        let deadline = std::time::Instant::now() + wait;
        while state.drops_done < ticket {
            if self
                .inner
                .dropped
                .wait_until(&mut state, deadline)
                .timed_out()
            {
                return None;
            }
        }
        Some(state.last_dropped)
    }

    /// Registers `listener`, called when the engine has work to do at once (a pause set or a
    /// drop requested from outside the engine's thread). The server wakes its timer with it.
    pub fn on_change(&self, listener: Arc<dyn Fn() + Send + Sync>) {
        self.inner.listeners.lock().push(listener);
    }

    fn notify(&self) {
        let listeners = self.inner.listeners.lock().clone();
        for listener in listeners {
            listener();
        }
    }

    /// True (once per request) if a drop of all connections is waiting for the engine.
    pub fn drop_pending(&self) -> bool {
        let state = self.inner.state.lock();
        state.drops_requested > state.drops_done
    }

    /// The engine closed `closed` connections for the drop requests so far.
    pub fn drop_carried_out(&self, closed: usize) {
        self.update(|s| {
            s.drops_done = s.drops_requested;
            s.last_dropped = closed;
        });
        self.inner.dropped.notify_all();
    }

    /// The action of the first rule matching the command named `full_name` (whose keys
    /// `any_key_matches` tests against a rule's key glob), spending one of its uses.
    /// Only rules whose action `wanted` accepts count (a script's `redis.call` takes errors
    /// only: it cannot close its caller's connection or hold a reply back halfway).
    pub fn take_action(
        &self,
        full_name: &str,
        any_key_matches: &mut dyn FnMut(&[u8]) -> bool,
        wanted: impl Fn(&FaultAction) -> bool,
    ) -> Option<FaultAction> {
        self.update(|s| {
            let i = s
                .rules
                .iter()
                .position(|r| wanted(&r.action) && r.matches(full_name, &mut *any_key_matches))?;
            let rule = &mut s.rules[i];
            let action = rule.action.clone();
            if let Some(n) = rule.times.as_mut() {
                *n -= 1;
                if *n == 0 {
                    s.rules.remove(i);
                }
            }
            Some(action)
        })
    }

    /// If the pause is over at `now_ms`, forgets it and returns true.
    pub fn end_pause_if_over(&self, now_ms: i64) -> bool {
        self.update(|s| match s.pause_until_ms {
            Some(until) if now_ms >= until => {
                s.pause_until_ms = None;
                true
            }
            _ => false,
        })
    }
}

/// An error reply line from user text: one line (Redis turns newlines in errors into spaces),
/// never empty.
pub fn error_line(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    let line = line.strip_prefix('-').unwrap_or(&line).trim().to_string();
    if line.is_empty() {
        "ERR injected fault".to_string()
    } else {
        line
    }
}
