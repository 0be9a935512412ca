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
//! Semantics, all on the server's [`crate::clock::Clock`] (real time on the system clock or a
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

use bytes::{Bytes, BytesMut};
use embedis_datatypes::glob;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::blocking::{BlockReason, Blocked};
use crate::client::{ClientState, ReplyMode};
use crate::command::keys::flag;
use crate::command::{registry, Command};
use crate::engine::{Engine, Outcome, Run};
use crate::error::Error;

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

    fn matches(&self, command: &Command, args: &[Bytes]) -> bool {
        // `client|kill` names one subcommand, `client` all of them (the command's first word);
        // a subcommand's own name (`get` of CONFIG GET) is not the command's.
        let pattern = self.command.as_bytes();
        let full = command.full_name.as_bytes();
        let first_word = full.split(|&b| b == b'|').next().unwrap_or(full);
        let named = glob::matches(pattern, full, true) || glob::matches(pattern, first_word, true);
        if !named {
            return false;
        }
        let Some(key_pattern) = &self.key_pattern else {
            return true;
        };
        // Key positions assume a well-formed command line; a malformed one has no keys.
        if !command.arity_ok(args.len()) {
            return false;
        }
        command
            .spec
            .keys
            .iter()
            .filter(|spec| spec.flags & flag::NOT_KEY == 0)
            .flat_map(|spec| spec.key_positions(args))
            .filter_map(|i| args.get(i))
            .any(|key| glob::matches(key_pattern, key, false))
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

    /// Removes every rule (a pause runs on until its end).
    pub fn clear(&self) {
        self.update(|s| s.rules.clear());
    }

    /// Pauses the server until `until_ms` on its clock (a later pause replaces an earlier one;
    /// a time already past ends the pause at the engine's next look).
    pub fn pause_until(&self, until_ms: i64) {
        self.update(|s| s.pause_until_ms = Some(until_ms));
        self.notify();
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
    fn drop_pending(&self) -> bool {
        let state = self.inner.state.lock();
        state.drops_requested > state.drops_done
    }

    fn drop_carried_out(&self, closed: usize) {
        self.update(|s| {
            s.drops_done = s.drops_requested;
            s.last_dropped = closed;
        });
        self.inner.dropped.notify_all();
    }

    /// The action of the first rule matching this command, spending one of its uses.
    fn take_action(&self, command: &Command, args: &[Bytes]) -> Option<FaultAction> {
        self.update(|s| {
            let i = s.rules.iter().position(|r| r.matches(command, args))?;
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
    fn end_pause_if_over(&self, now_ms: i64) -> bool {
        self.update(|s| match s.pause_until_ms {
            Some(until) if now_ms >= until => {
                s.pause_until_ms = None;
                true
            }
            _ => false,
        })
    }
}

/// The engine's path for a fresh request while some fault is set (see [`Engine`]'s `process`).
pub(crate) fn process_with_faults(
    engine: &mut Engine,
    client: &mut ClientState,
    args: Vec<Bytes>,
    out: &mut BytesMut,
) -> Outcome {
    let faults = engine.server.faults.clone();
    if faults.drop_pending() {
        // This client is out of the engine's table while it runs: close it here, the rest there.
        client.handle.kill();
        let closed = drop_all(engine) + 1;
        faults.drop_carried_out(closed);
        return Outcome::Close;
    }
    let is_debug = args
        .first()
        .is_some_and(|a| a.eq_ignore_ascii_case(b"debug"));
    if is_debug {
        return engine.process_command(client, args, out, Run::Fresh);
    }
    let now_ms = engine.server.clock.now_ms();
    if faults.paused_until().is_some() {
        if faults.paused_until().is_some_and(|until| now_ms < until) {
            // As CLIENT PAUSE postpones a command: parked, re-run in arrival order at the end,
            // and shown meanwhile as the client's command (CLIENT LIST's cmd=).
            if let Ok(command) = registry().lookup(&args) {
                client.last_command = &command.full_name;
            }
            engine.park(
                client,
                Blocked {
                    args,
                    reason: BlockReason::Postponed,
                    deadline_ms: None,
                },
            );
            return Outcome::Blocked;
        }
        // Over, but the timer has not noticed yet: the queued commands go first.
        end_pause(engine, now_ms);
    }
    let Ok(command) = registry().lookup(&args) else {
        return engine.process_command(client, args, out, Run::Fresh);
    };
    match faults.take_action(command, &args) {
        None => engine.process_command(client, args, out, Run::Fresh),
        Some(FaultAction::Error(text)) => {
            client.last_command = &command.full_name;
            let error = Error::owned(error_line(&text));
            engine.reject(client, Some(command), error, &args, out);
            Outcome::Continue
        }
        Some(FaultAction::Close) => {
            client.close_after_reply = true;
            Outcome::Close
        }
        Some(FaultAction::Latency(delay)) => {
            // A client that asked for no replies has nothing to delay.
            if client.reply_mode != ReplyMode::On {
                return engine.process_command(client, args, out, Run::Fresh);
            }
            let start = out.len();
            let outcome = engine.process_command(client, args, out, Run::Fresh);
            // A command that blocked (or closes the connection) keeps its own timing.
            if outcome != Outcome::Continue {
                return outcome;
            }
            let held = out.split_off(start).freeze();
            let delay_ms = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
            // Deadlines fire once the clock is past them: the reply goes out at now + delay.
            let deadline = now_ms.saturating_add(delay_ms).saturating_sub(1);
            engine.park(
                client,
                Blocked {
                    args: Vec::new(),
                    reason: BlockReason::Delayed(held),
                    deadline_ms: Some(deadline),
                },
            );
            Outcome::Blocked
        }
    }
}

/// An error reply line from user text: one line (Redis turns newlines in errors into spaces),
/// never empty.
fn error_line(text: &str) -> String {
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

/// Closes every connection registered with the engine; returns how many.
fn drop_all(engine: &mut Engine) -> usize {
    let ids = engine.clients.ids();
    for &id in &ids {
        if let Some(client) = engine.clients.get(id) {
            client.handle.kill();
        }
        engine.disconnect(id);
    }
    ids.len()
}

/// Ends the server pause: the commands it held run in the order they arrived. (A CLIENT PAUSE
/// still in force holds back again those it covers.)
fn end_pause(engine: &mut Engine, now_ms: i64) {
    if !engine.server.faults.end_pause_if_over(now_ms) {
        return;
    }
    if engine.server.pause.is_none() {
        engine.unpause();
        return;
    }
    let queued: Vec<_> = engine.server.blocked.postponed.iter().copied().collect();
    for id in queued {
        engine.release_postponed(id);
    }
}

/// The engine's timer hook while some fault is set: carries out a drop request and ends the
/// pause when due. Returns true while the server is paused (nothing else may run).
pub(crate) fn on_timer(engine: &mut Engine) -> bool {
    let faults = engine.server.faults.clone();
    if faults.drop_pending() {
        let closed = drop_all(engine);
        faults.drop_carried_out(closed);
    }
    let now_ms = engine.server.clock.now_ms();
    end_pause(engine, now_ms);
    faults.paused_until().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    fn action(faults: &Faults, words: &[&str]) -> Option<FaultAction> {
        let args = args(words);
        let Ok(command) = registry().lookup(&args) else {
            panic!("unknown command {words:?}")
        };
        faults.take_action(command, &args)
    }

    #[test]
    fn rules_match_names_keys_and_run_out() {
        let faults = Faults::new();
        assert!(!faults.active());
        faults.add(FaultRule::error("SET", "ERR one").keys("lock:*").times(2));
        faults.add(FaultRule::close("client|kill"));
        faults.add(FaultRule::error("get", "ERR get"));
        assert!(faults.active());
        let err = Some(FaultAction::Error("ERR one".into()));
        assert_eq!(
            action(&faults, &["get", "lock:a"]),
            Some(FaultAction::Error("ERR get".into()))
        );
        assert_eq!(action(&faults, &["config", "get", "port"]), None);
        assert_eq!(action(&faults, &["set", "other", "v"]), None);
        assert_eq!(action(&faults, &["set", "lock:a", "v"]), err);
        assert_eq!(action(&faults, &["SET", "lock:b", "v", "NX"]), err);
        assert_eq!(action(&faults, &["set", "lock:c", "v"]), None, "spent");
        assert_eq!(
            action(&faults, &["client", "kill", "1.2.3.4:5"]),
            Some(FaultAction::Close)
        );
        assert_eq!(action(&faults, &["client", "list"]), None);
        faults.add(FaultRule::close("CLIENT"));
        assert_eq!(
            action(&faults, &["client", "list"]),
            Some(FaultAction::Close)
        );
        assert_eq!(faults.rules().len(), 3);
        faults.clear();
        assert!(!faults.active());
    }

    #[test]
    fn key_patterns_follow_key_specs() {
        let faults = Faults::new();
        faults.add(FaultRule::latency("eval*", Duration::from_millis(5)).keys("k?"));
        let delay = Some(FaultAction::Latency(Duration::from_millis(5)));
        assert_eq!(action(&faults, &["eval", "return 1", "1", "k1"]), delay);
        assert_eq!(action(&faults, &["eval", "return 1", "0", "k1"]), None);
        assert_eq!(action(&faults, &["evalsha", "abc", "2", "x", "k2"]), delay);
        assert_eq!(action(&faults, &["ping"]), None, "no keys, no match");
    }

    #[test]
    fn descriptions_read_as_debug_fault_lines() {
        let rule = FaultRule::error("set", "ERR boom now").keys("a*").times(3);
        assert_eq!(rule.describe(), "ERROR set a* 3 ERR boom now");
        let rule = FaultRule::latency("get", Duration::from_millis(250));
        assert_eq!(rule.describe(), "LATENCY get * 250 0");
        assert_eq!(FaultRule::close("*").describe(), "CLOSE * * 0");
        assert_eq!(error_line("-ERR a\r\nb"), "ERR a  b");
        assert_eq!(error_line(""), "ERR injected fault");
    }
}
