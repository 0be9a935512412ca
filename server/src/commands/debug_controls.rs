//! DEBUG's embedis extensions: the test controls of the clock and of fault injection, for tests
//! written in any language. They exist only behind DEBUG, so only where `enable-debug-command`
//! allows it (Redis's protected-command gate, in the engine), and they take subcommand names
//! Redis's DEBUG does not have, so nothing Redis has changes:
//!
//! - `DEBUG CLOCK GET` — the server's time, in UNIX milliseconds.
//! - `DEBUG CLOCK ADVANCE <ms>` · `SET <unix-ms>` · `FREEZE` · `RESUME` · `RATE <r>` ·
//!   `OFFSET <ms>` (the server's time becomes real time + ms, running or frozen as before). These
//!   need a controllable clock: `embedis-server` runs on one whenever enable-debug-command is
//!   yes or local; on the system clock they answer an error saying so.
//! - `DEBUG FAULT ERROR <command> <key-pattern|*> <times|0> <error text…>` ·
//!   `LATENCY <command> <key-pattern|*> <ms> [<times>]` · `CLOSE <command> <key-pattern|*>
//!   [<times>]` · `LIST` · `CLEAR` — the rules of [`crate::model::fault_rules`]; `times` 0 means always.
//! - `DEBUG FAULT DISK AOF <WRITE|FSYNC> <ENOSPC|EIO|EDQUOT|EROFS|EFBIG> [<times> [SHORT <bytes>]]`
//!   — the AOF's next writes or fsyncs fail with that errno, a write after letting `bytes` of
//!   it into the file ([`crate::base::disk_faults`]); CLEAR removes these too.
//! - `DEBUG PAUSE <ms>` — the server answers nothing for ms on its clock, then everything queued,
//!   in order (0 ends a pause). DEBUG itself is never held, so a test can move the clock meanwhile.
//! - `DEBUG DROP-CONNECTIONS` — closes every other connection at once; answers how many.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::base::disk_faults::{errno_by_name, DiskFault, DiskOp};
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::model::fault_rules::FaultRule;
use crate::model::state::EngineRequest;

/// The DEBUG HELP lines of the extensions.
pub const HELP: &[&str] = &[
    "CLOCK GET|FREEZE|RESUME",
    "    embedis: reads the server's clock (UNIX ms), stops it, lets it run again.",
    "CLOCK ADVANCE <ms>|SET <unix-ms>|RATE <rate>|OFFSET <ms>",
    "    embedis: moves the server's clock forward, sets it, changes its speed, or sets it",
    "    to real time plus <ms>. Needs a controllable clock.",
    "FAULT ERROR <command> <key-pattern|*> <times|0> <error text...>",
    "    embedis: answers the error to the next <times> matching commands (0 = all).",
    "FAULT LATENCY <command> <key-pattern|*> <ms> [<times>]",
    "    embedis: delays the replies of matching commands by <ms> on the server's clock.",
    "FAULT CLOSE <command> <key-pattern|*> [<times>]",
    "    embedis: closes the connection, without reply, on matching commands.",
    "FAULT DISK AOF WRITE|FSYNC <errno-name> [<times> [SHORT <bytes>]]",
    "    embedis: the AOF's next <times> writes or fsyncs fail with ENOSPC, EIO, EDQUOT,",
    "    EROFS or EFBIG (0 = all), a write after <bytes> of it reached the file.",
    "FAULT LIST|CLEAR",
    "    embedis: lists the fault rules, or removes them all.",
    "PAUSE <ms>",
    "    embedis: the server answers nothing (except DEBUG) for <ms> on its clock, then",
    "    answers everything queued in order. 0 ends a pause.",
    "DROP-CONNECTIONS",
    "    embedis: closes every other connection at once.",
];

/// Runs an extension subcommand; `None` if `args[1]` is none of them (or the argument count
/// does not fit), for DEBUG's own unknown-subcommand error.
pub fn run(ctx: &mut Ctx<'_>) -> Option<CmdResult> {
    let argc = ctx.argc();
    if ctx.arg_is(1, "clock") && argc >= 3 {
        clock(ctx)
    } else if ctx.arg_is(1, "fault") && argc >= 3 {
        fault(ctx)
    } else if ctx.arg_is(1, "pause") && argc == 3 {
        Some(pause(ctx))
    } else if ctx.arg_is(1, "drop-connections") && argc == 2 {
        let ids = ctx.clients.ids();
        ctx.server
            .requests
            .extend(ids.iter().map(|&id| EngineRequest::Kill { id }));
        ctx.out.integer(ids.len() as i64);
        Some(Ok(()))
    } else {
        None
    }
}

fn clock(ctx: &mut Ctx<'_>) -> Option<CmdResult> {
    let argc = ctx.argc();
    let clock = ctx.server.clock.clone();
    if ctx.arg_is(2, "get") && argc == 3 {
        ctx.out.integer(clock.now_ms());
        return Some(Ok(()));
    }
    let known = [
        ("freeze", 3),
        ("resume", 3),
        ("advance", 4),
        ("set", 4),
        ("rate", 4),
        ("offset", 4),
    ];
    if !known
        .iter()
        .any(|&(name, n)| ctx.arg_is(2, name) && argc == n)
    {
        return None;
    }
    if !clock.is_controllable() {
        return Some(Err(Error::msg(
            "ERR this server runs on the system clock: DEBUG CLOCK needs a controllable clock (embedis-server has one when enable-debug-command is yes or local)",
        )));
    }
    Some(clock_change(ctx, &clock))
}

fn clock_change(ctx: &mut Ctx<'_>, clock: &crate::base::clock::Clock) -> CmdResult {
    if ctx.arg_is(2, "freeze") {
        clock.freeze();
    } else if ctx.arg_is(2, "resume") {
        clock.resume();
    } else if ctx.arg_is(2, "advance") {
        let ms = ctx.int_arg(3)?;
        if ms < 0 {
            return Err(Error::msg(
                "ERR a clock only moves forward with ADVANCE (use SET to go back)",
            ));
        }
        clock.advance(Duration::from_millis(ms as u64));
    } else if ctx.arg_is(2, "set") {
        let ms = ctx.int_arg(3)?;
        if ms < 0 {
            return Err(Error::msg("ERR the time must be UNIX milliseconds, >= 0"));
        }
        clock.set(UNIX_EPOCH + Duration::from_millis(ms as u64));
    } else if ctx.arg_is(2, "rate") {
        let rate = std::str::from_utf8(ctx.arg(3))
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|r| r.is_finite() && *r >= 0.0)
            .ok_or(Error::msg("ERR rate must be a finite number >= 0"))?;
        clock.set_rate(rate);
    } else {
        let offset = ctx.int_arg(3)?;
        let real = SystemTime::now();
        let magnitude = Duration::from_millis(offset.unsigned_abs());
        let to = if offset >= 0 {
            real + magnitude
        } else {
            real.checked_sub(magnitude).unwrap_or(UNIX_EPOCH)
        };
        clock.set(to);
    }
    ctx.out.ok();
    Ok(())
}

fn fault(ctx: &mut Ctx<'_>) -> Option<CmdResult> {
    let argc = ctx.argc();
    if ctx.arg_is(2, "list") && argc == 3 {
        let mut lines: Vec<String> = ctx
            .server
            .faults
            .rules()
            .iter()
            .map(|r| r.describe())
            .collect();
        lines.extend(
            ctx.server
                .faults
                .disk()
                .rules()
                .iter()
                .map(|r| r.describe()),
        );
        ctx.out.array(lines.len());
        for line in lines {
            ctx.out.bulk(line.as_bytes());
        }
        return Some(Ok(()));
    }
    if ctx.arg_is(2, "disk") && ctx.arg_is(3, "aof") && matches!(argc, 6 | 7 | 9) {
        return Some(disk_fault(ctx));
    }
    if ctx.arg_is(2, "clear") && argc == 3 {
        ctx.server.faults.clear();
        ctx.out.ok();
        return Some(Ok(()));
    }
    let rule = if ctx.arg_is(2, "error") && argc >= 7 {
        let text: Vec<String> = (6..argc)
            .map(|i| String::from_utf8_lossy(ctx.arg(i)).into_owned())
            .collect();
        count_arg(ctx, 5).map(|times| {
            FaultRule::error(&name_arg(ctx, 3), &text.join(" "))
                .keys(ctx.arg(4))
                .times(times)
        })
    } else if ctx.arg_is(2, "latency") && (argc == 6 || argc == 7) {
        let ms = match ctx.int_arg(5) {
            Ok(ms) if ms >= 0 => ms as u64,
            Ok(_) => return Some(Err(Error::msg("ERR latency must be >= 0 ms"))),
            Err(e) => return Some(Err(e)),
        };
        let times = if argc == 7 { count_arg(ctx, 6) } else { Ok(0) };
        times.map(|times| {
            FaultRule::latency(&name_arg(ctx, 3), Duration::from_millis(ms))
                .keys(ctx.arg(4))
                .times(times)
        })
    } else if ctx.arg_is(2, "close") && (argc == 5 || argc == 6) {
        let times = if argc == 6 { count_arg(ctx, 5) } else { Ok(0) };
        times.map(|times| {
            FaultRule::close(&name_arg(ctx, 3))
                .keys(ctx.arg(4))
                .times(times)
        })
    } else {
        return None;
    };
    Some(rule.map(|rule| {
        ctx.server.faults.add(rule);
        ctx.out.ok();
    }))
}

/// `DEBUG FAULT DISK AOF <WRITE|FSYNC> <errno-name> [<times> [SHORT <bytes>]]`.
fn disk_fault(ctx: &mut Ctx<'_>) -> CmdResult {
    let argc = ctx.argc();
    let errno = errno_by_name(&name_arg(ctx, 5)).ok_or(Error::msg(
        "ERR the errno must be one of ENOSPC, EIO, EDQUOT, EROFS, EFBIG",
    ))?;
    let rule = if ctx.arg_is(4, "write") {
        DiskFault::write(errno)
    } else if ctx.arg_is(4, "fsync") {
        DiskFault::fsync(errno)
    } else {
        return Err(Error::msg("ERR the operation must be WRITE or FSYNC"));
    };
    let times = if argc >= 7 { count_arg(ctx, 6)? } else { 0 };
    let mut rule = rule.times(times);
    if argc == 9 {
        if !ctx.arg_is(7, "short") || rule.op != DiskOp::Write {
            return Err(Error::Syntax);
        }
        let bytes = count_arg(ctx, 8)?;
        rule = rule.short(bytes as usize);
    }
    ctx.server.faults.disk().add(rule);
    ctx.out.ok();
    Ok(())
}

fn name_arg(ctx: &Ctx<'_>, i: usize) -> String {
    String::from_utf8_lossy(ctx.arg(i)).into_owned()
}

/// A rule's count: a non-negative integer, 0 = always.
fn count_arg(ctx: &Ctx<'_>, i: usize) -> CmdResult<u64> {
    match ctx.int_arg(i)? {
        n if n >= 0 => Ok(n as u64),
        _ => Err(Error::msg("ERR times must be >= 0 (0 = always)")),
    }
}

fn pause(ctx: &mut Ctx<'_>) -> CmdResult {
    let ms = ctx.int_arg(2)?;
    if ms < 0 {
        return Err(Error::msg("ERR pause must be >= 0 ms"));
    }
    ctx.server.faults.pause_until(ctx.now_ms.saturating_add(ms));
    // The timer must wake at the pause's end (or at once, for 0).
    ctx.server.timers_changed = true;
    ctx.out.ok();
    Ok(())
}
