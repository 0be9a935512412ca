//! The server's side of Lua scripting: where the VM lives, and the [`Host`] through which a
//! running script's `redis.call` reaches the command table.
//!
//! The VM belongs to the executor like everything else. It is created at the first script, on
//! the executor's thread, and lent out for the length of one script: the EVAL handler takes it
//! from [`crate::model::state::ServerState`] (so that the host can borrow the server state mutably while Lua runs)
//! and puts it back afterwards — no script can start another, since EVAL and friends are
//! `noscript`.
//!
//! [`ScriptHost::call`] applies Redis's script gates in Redis's order (`scriptCall`): unknown
//! command, arity, `noscript` commands, writes from a read-only script; then runs the command
//! through [`crate::kernel::call::call`] as the calling client, with the script's frozen time, never
//! blocking (`noscript` is waived after DEBUG SET-DISABLE-DENY-SCRIPTS 1, a test hook). SELECT
//! inside a script changes the script's database only: the caller's is put back when the script
//! ends. [`run_script`] settles errorstats and failed_calls for the script's own reply as Redis
//! does: a failed command's error is counted once, when the command fails.

use bytes::{Bytes, BytesMut};
use embedis_protocol::{Version, Writer};
use embedis_scripting::{Host, HostLog, Interrupt};

use crate::base::config::LogLevel;
use crate::base::error::{CmdResult, Error};
use crate::base::flags::Flags;
use crate::kernel::call::{call, How, Parts};
use crate::kernel::ctx::Ctx;
use crate::kernel::gates;
use crate::kernel::table::Command;
use crate::model::client::ClientState;
use crate::model::fault_rules::{self, FaultAction};
use crate::model::vm_slot::ScriptKind;
use crate::model::write_stream::Targets;
use crate::services::busy::{BusyWatch, Kill};

/// Splits the arguments of EVAL, FCALL and their forms (`name numkeys key… arg…`, `numkeys` at
/// index 2, already parsed) into KEYS and ARGV, with Redis's errors for a bad count.
pub fn split_keys(args: &[Bytes], numkeys: i64) -> Result<(&[Bytes], &[Bytes]), Error> {
    let rest = &args[3..];
    if numkeys > rest.len() as i64 {
        return Err(Error::msg(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if numkeys < 0 {
        return Err(Error::msg("ERR Number of keys can't be negative"));
    }
    Ok(rest.split_at(numkeys as usize))
}

impl From<HostLog> for LogLevel {
    fn from(level: HostLog) -> LogLevel {
        match level {
            HostLog::Debug => LogLevel::Debug,
            HostLog::Verbose => LogLevel::Verbose,
            HostLog::Notice => LogLevel::Notice,
            HostLog::Warning => LogLevel::Warning,
        }
    }
}

/// What one script may do, from the command that runs it and the flags it declares.
#[derive(Debug, Clone, Copy)]
pub struct Permissions {
    /// EVAL_RO / FCALL_RO, or a script declaring `no-writes`.
    pub read_only: bool,
    /// The script declares `allow-oom`: it may run `denyoom` commands over `maxmemory`.
    pub allow_oom: bool,
    /// Cluster mode: the script may touch keys of several slots (`allow-cross-slot-keys`, or
    /// an EVAL script without a shebang).
    pub allow_cross_slot: bool,
}

/// The server as a running script sees it.
pub struct ScriptHost<'a> {
    pub parts: Parts<'a>,
    pub client: &'a mut ClientState,
    pub now_us: i64,
    pub permissions: Permissions,
    /// How long the script has run, and what other clients asked of it meanwhile.
    pub busy: BusyWatch<'a>,
    /// The script ended with an error reply; true if errorstats had already counted it (a
    /// failed command's error, raised by `redis.call` or returned from `redis.pcall`).
    pub error: Option<bool>,
    /// The server was over `maxmemory` when the script started (and it does not declare
    /// `allow-oom`): until its first write, its `denyoom` commands are refused, as Redis's
    /// `scriptVerifyOOM` does — once it has written, stopping it halfway would be worse.
    pub oom_at_start: bool,
    /// The last `call` was refused by the gates (for the debugger's log).
    pub refused: bool,
}

impl Host for ScriptHost<'_> {
    fn call(&mut self, args: &[Bytes], version: Version, out: &mut BytesMut) {
        self.refused = false;
        let asker = gates::Asker::Script(gates::ScriptCall {
            read_only: self.permissions.read_only,
            allow_cross_slot: self.permissions.allow_cross_slot,
            refuse_denyoom: self.oom_at_start && !self.busy.wrote,
            dirty: self.busy.wrote,
        });
        let command =
            match gates::admit(&mut self.parts, self.client, args, asker, self.now_us, out) {
                gates::Admission::Run(command) => command,
                gates::Admission::Refuse(command, error) => {
                    return self.refuse(out, version, command, error);
                }
                // A script's command never waits.
                gates::Admission::Queue(..) | gates::Admission::Postpone(_) => unreachable!(),
            };
        if let Some(error) = self.injected_error(command, args) {
            return self.refuse(out, version, Some(command), error);
        }
        let flags = command.spec.flags;
        if flags.contains(Flags::WRITE) {
            // From the first write on, SCRIPT KILL would leave the dataset half changed.
            self.busy.wrote = true;
        }
        call(
            &mut self.parts,
            self.client,
            command,
            args,
            out,
            version,
            self.now_us,
            How {
                script: Some(self.busy.command()),
                ..How::FROM_SCRIPT
            },
        );
    }

    fn log(&mut self, level: HostLog, message: &[u8]) {
        self.parts
            .server
            .log
            .log(level.into(), &String::from_utf8_lossy(message));
    }

    fn interrupt(&mut self) -> Interrupt {
        self.busy.check(&mut self.parts);
        match self.busy.kill {
            Some(_) => Interrupt::Kill(self.busy.kill_line()),
            None => Interrupt::Continue,
        }
    }

    fn acl_check(&mut self, args: &[Bytes]) -> Option<bool> {
        let command = self.parts.registry.lookup(args).ok()?;
        Some(gates::acl_denied(&self.parts.server.users, self.client, command, args).is_none())
    }

    fn refused(&self) -> bool {
        self.refused
    }

    fn debug_write(&mut self, bytes: &[u8]) {
        crate::services::script_debug::write_all(self.client.fd, bytes);
    }

    fn debug_read(&mut self, buf: &mut Vec<u8>) -> bool {
        crate::services::script_debug::read_some(self.client.fd, buf)
    }

    fn set_repl(&mut self, flags: u8) {
        self.parts.ks.stream.script_targets = Targets::from_flags(flags);
    }

    /// Noted for `run_script`, which settles errorstats and failed_calls once the reply is
    /// written.
    fn script_error(&mut self, _line: &[u8], already_counted: bool) {
        self.error = Some(already_counted);
    }
}

/// Runs one script or function for the command in `ctx`: lends the engine's parts to a
/// [`ScriptHost`], lets `run` drive the VM with it, then restores the caller's database and
/// writes what the script's commands sent the caller itself (its own pub/sub messages) ahead of
/// the script's reply or error, as Redis writes those to the caller's buffer at once.
pub fn run_script(
    ctx: &mut Ctx<'_>,
    permissions: Permissions,
    kind: ScriptKind,
    name: &str,
    function_counts: (usize, usize),
    run: impl FnOnce(&mut ScriptHost<'_>, &mut Writer<'_>) -> Result<(), Vec<u8>>,
) -> CmdResult {
    // The script's writes propagate as the commands it ran, not as the script.
    ctx.prevent_propagation();
    let command = ctx.args;
    let caller_db = ctx.client.db;
    let now_us = ctx.now_us;
    let version = ctx.out.version();
    let shortest = ctx.out.doubles_are_shortest();
    let own_output_mark = ctx.client.pending.len();
    let threshold = ctx.server.config.busy_reply_threshold;
    // The reply goes straight into the caller's buffer after what it holds (no buffer of its
    // own to allocate and copy); it moves behind the script's own output below, and goes on
    // failure.
    let out = ctx.out.buffer();
    let reply_mark = out.len();
    let outcome = {
        let mut busy = BusyWatch::new(kind, name, command, threshold);
        busy.function_counts = function_counts;
        let oom_at_start =
            !permissions.allow_oom && crate::kernel::gates::over_maxmemory(ctx.server);
        let mut host = ScriptHost {
            parts: Parts {
                ks: &mut *ctx.ks,
                server: &mut *ctx.server,
                clients: &mut *ctx.clients,
                registry: ctx.registry,
            },
            client: &mut *ctx.client,
            now_us,
            permissions,
            busy,
            error: None,
            oom_at_start,
            refused: false,
        };
        let outcome = run(
            &mut host,
            &mut Writer::new(out, version).shortest_doubles(shortest),
        );
        (outcome, host.busy.kill, host.error)
    };
    let (outcome, killed, script_error) = outcome;
    ctx.server.running_script = None;
    // `redis.set_repl` lasts as long as its script.
    ctx.ks.stream.script_targets = Targets::ALL;
    ctx.client.db = caller_db;
    let out = ctx.out.buffer();
    if killed == Some(Kill::Shutdown) {
        // The server is going down: like Redis, the script's caller gets no reply.
        out.truncate(reply_mark);
        return Ok(());
    }
    if outcome.is_err() {
        out.truncate(reply_mark);
    }
    // errorstats and failed_calls as Redis keeps them: the script's command failed if its reply
    // is an error; that error counts in errorstats once — a failed command's error (raised by
    // `redis.call`, returned from `redis.pcall`) was counted when the command failed.
    let outcome = match (outcome, script_error) {
        (Ok(()), Some(counted)) => {
            if !counted {
                let line = &out[reply_mark..];
                let line = line.strip_prefix(b"-").unwrap_or(line);
                let line = line.strip_suffix(b"\r\n").unwrap_or(line);
                ctx.server.count_error(&Error::bytes(line.to_vec()).code());
            }
            ctx.server.command_stats[ctx.cmd.id].failed_calls += 1;
            Ok(())
        }
        (Err(line), Some(true)) => {
            ctx.server.command_stats[ctx.cmd.id].failed_calls += 1;
            Writer::new(out, version).error_line(&line);
            Ok(())
        }
        (outcome, _) => outcome,
    };
    // Usually there is none; splitting an unchanged buffer would still make it shared (an
    // allocation) and cut its capacity to its length.
    // Under CLIENT REPLY OFF/SKIP the reply is thrown away but that output (pushes) is not: it
    // stays pending, and the engine sends it in the reply's place.
    let replies_suppressed = matches!(
        ctx.client.reply_mode,
        crate::model::client::ReplyMode::Off | crate::model::client::ReplyMode::Skip
    );
    if ctx.client.pending.len() > own_output_mark && !replies_suppressed {
        let own_output = ctx.client.pending.split_off(own_output_mark);
        let reply = out.split_off(reply_mark);
        out.extend_from_slice(&own_output);
        out.extend_from_slice(&reply);
    }
    outcome.map_err(Error::bytes)
}

impl ScriptHost<'_> {
    /// A refusal by the script gates: an error reply (which the script sees as an error,
    /// raised or returned by `pcall`), counted in errorstats as Redis counts it.
    /// A fault rule's error for this call (the tests' `faults().error`, DEBUG FAULT ERROR): a
    /// lock's `SET NX` fails the same whether a client or a script sends it.
    fn injected_error(&mut self, command: &Command, args: &[Bytes]) -> Option<Error> {
        let faults = &self.parts.server.faults;
        if !faults.active() {
            return None;
        }
        let mut any_key_matches = |pattern: &[u8]| command.any_key_matches(args, pattern);
        let is_error = |action: &FaultAction| matches!(action, FaultAction::Error(_));
        match faults.take_action(&command.full_name, &mut any_key_matches, is_error)? {
            FaultAction::Error(text) => Some(Error::owned(fault_rules::error_line(&text))),
            _ => None,
        }
    }

    fn refuse(
        &mut self,
        out: &mut BytesMut,
        version: Version,
        command: Option<&Command>,
        error: Error,
    ) {
        self.refused = true;
        // A known command refused counts as a rejected call, as Redis's `scriptCall` counts it.
        if let Some(command) = command {
            self.parts.server.command_stats[command.id].rejected_calls += 1;
        }
        self.parts.server.count_error(&error.code());
        Writer::new(out, version).error_line(&error.line());
    }
}
