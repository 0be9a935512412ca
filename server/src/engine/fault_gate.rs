//! Applying the fault rules ([`crate::model::fault_rules`], the tests' control) to requests: while any rule,
//! server pause or drop request is set, a fresh request takes this path instead of going
//! straight to the gates (`Engine::process` pays one branch for it otherwise), and the timer
//! ends the pause and carries out drops.

use bytes::{Bytes, BytesMut};

use super::{Engine, Outcome, Run};
use crate::base::error::Error;
use crate::kernel::table::Command;
use crate::model::blocking::{BlockReason, Blocked};
use crate::model::client::{ClientState, ReplyMode};
use crate::model::fault_rules::{self, FaultAction, Faults};

impl Engine {
    /// The engine's path for a fresh request while some fault is set (see `Engine::process`).
    pub(super) fn process_with_faults(
        &mut self,
        client: &mut ClientState,
        args: Vec<Bytes>,
        out: &mut BytesMut,
    ) -> Outcome {
        let faults = self.server.faults.clone();
        if faults.drop_pending() {
            // This client is out of the engine's table while it runs: close it here, the rest there.
            client.handle.kill();
            let closed = self.drop_all() + 1;
            faults.drop_carried_out(closed);
            return Outcome::Close;
        }
        let is_debug = args
            .first()
            .is_some_and(|a| a.eq_ignore_ascii_case(b"debug"));
        if is_debug {
            return self.process_command(client, args, out, Run::Fresh);
        }
        let now_ms = self.server.clock.now_ms();
        if faults.paused_until().is_some() {
            if faults.paused_until().is_some_and(|until| now_ms < until) {
                // As CLIENT PAUSE postpones a command: parked, re-run in arrival order at the end,
                // and shown meanwhile as the client's command (CLIENT LIST's cmd=).
                if let Ok(command) = self.registry.lookup(&args) {
                    client.last_command = &command.full_name;
                }
                self.park(
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
            self.end_fault_pause(now_ms);
        }
        let Ok(command) = self.registry.lookup(&args) else {
            return self.process_command(client, args, out, Run::Fresh);
        };
        match take_action(&faults, command, &args) {
            None => self.process_command(client, args, out, Run::Fresh),
            Some(FaultAction::Error(text)) => {
                client.last_command = &command.full_name;
                let error = Error::owned(fault_rules::error_line(&text));
                self.reject(client, Some(command), error, &args, out);
                Outcome::Continue
            }
            Some(FaultAction::Close) => {
                client.close_after_reply = true;
                Outcome::Close
            }
            Some(FaultAction::Latency(delay)) => {
                // A client that asked for no replies has nothing to delay.
                if client.reply_mode != ReplyMode::On {
                    return self.process_command(client, args, out, Run::Fresh);
                }
                let start = out.len();
                let outcome = self.process_command(client, args, out, Run::Fresh);
                // A command that blocked (or closes the connection) keeps its own timing.
                if outcome != Outcome::Continue {
                    return outcome;
                }
                let held = out.split_off(start).freeze();
                let delay_ms = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
                // Deadlines fire once the clock is past them: the reply goes out at now + delay.
                let deadline = now_ms.saturating_add(delay_ms).saturating_sub(1);
                self.park(
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

    /// Closes every connection registered with the engine; returns how many.
    fn drop_all(&mut self) -> usize {
        let ids = self.clients.ids();
        for &id in &ids {
            if let Some(client) = self.clients.get(id) {
                client.handle.kill();
            }
            self.disconnect(id);
        }
        ids.len()
    }

    /// Ends the server pause: the commands it held run in the order they arrived. (A CLIENT PAUSE
    /// still in force holds back again those it covers.)
    fn end_fault_pause(&mut self, now_ms: i64) {
        if !self.server.faults.end_pause_if_over(now_ms) {
            return;
        }
        if self.server.pause.is_none() {
            self.unpause();
            return;
        }
        let queued: Vec<_> = self.server.blocked.postponed.iter().copied().collect();
        for id in queued {
            self.release_postponed(id);
        }
    }

    /// The engine's timer hook while some fault is set: carries out a drop request and ends the
    /// pause when due. Returns true while the server is paused (nothing else may run).
    pub(super) fn faults_on_timer(&mut self) -> bool {
        let faults = self.server.faults.clone();
        if faults.drop_pending() {
            let closed = self.drop_all();
            faults.drop_carried_out(closed);
        }
        let now_ms = self.server.clock.now_ms();
        self.end_fault_pause(now_ms);
        faults.paused_until().is_some()
    }
}

/// The action of the first fault rule matching this request, spending one of its uses: a rule
/// names the command, and may ask for a key matching a glob among the command's keys (its key
/// specs; a malformed command line has no keys).
fn take_action(faults: &Faults, command: &Command, args: &[Bytes]) -> Option<FaultAction> {
    let mut any_key_matches = |pattern: &[u8]| command.any_key_matches(args, pattern);
    faults.take_action(&command.full_name, &mut any_key_matches, |_| true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fault_rules::FaultRule;
    use std::time::Duration;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    fn action(faults: &Faults, words: &[&str]) -> Option<FaultAction> {
        let args = args(words);
        let Ok(command) = crate::commands::registry().lookup(&args) else {
            panic!("unknown command {words:?}")
        };
        take_action(faults, command, &args)
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
        assert_eq!(fault_rules::error_line("-ERR a\r\nb"), "ERR a  b");
        assert_eq!(fault_rules::error_line(""), "ERR injected fault");
    }
}
