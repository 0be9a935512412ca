//! FAILOVER: a primary hands its role to one of its replicas without losing an acknowledged
//! write (Redis 6.2's coordinated failover, `failoverCommand` and `updateFailoverStatus` in
//! replication.c), over the state in [`crate::model::replication::Failover`].
//!
//! The command pauses writes (as `CLIENT PAUSE WRITE` would, but until the failover ends:
//! CLIENT UNPAUSE does not lift it) and enters `waiting-for-sync`. The engine's tick then
//! watches the replicas' acknowledgements ([`update_failover_status`]): once the target — the
//! one TO named, or else the first found — has acknowledged our whole stream, or once TIMEOUT
//! ran out with FORCE, the failover is `failover-in-progress`: this server becomes a replica
//! of the target (its blocked clients are released with `-UNBLOCKED`), and its link asks the
//! target with `PSYNC <replid> <offset> FAILOVER` to become a primary and take it as its
//! replica. The target's answer ends the failover ([`psync_answered`]): `+CONTINUE` or
//! `+FULLRESYNC` and the writes held by the pause run again, now against a replica
//! (`-READONLY`); an error, and this server is a primary again ([`abort_failover`]), as it is
//! after a TIMEOUT without FORCE or FAILOVER ABORT. The target's side, PSYNC's `FAILOVER`
//! argument, is in `commands/replication.rs`.

use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::kernel::parts::Parts;
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::replication::FailoverState;
use crate::model::state::EngineRequest;

/// The options of one FAILOVER, parsed in Redis's order.
struct Options {
    timeout_ms: i64,
    force: bool,
    target: Option<(String, i64)>,
}

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms] (Redis's `failoverCommand`).
fn failover(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.server.cluster.enabled {
        return Err(Error::msg(
            "ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.",
        ));
    }
    if ctx.argc() == 2 && ctx.arg_is(1, "abort") {
        if !ctx.server.repl.failover.is_on() {
            return Err(Error::msg("ERR No failover in progress."));
        }
        abort_failover(
            &mut super::replication::parts_of(ctx),
            "Failover manually aborted",
        );
        ctx.out.ok();
        return Ok(());
    }
    let options = parse(ctx)?;
    let repl = &ctx.server.repl;
    if repl.failover.is_on() {
        return Err(Error::msg("ERR FAILOVER already in progress."));
    }
    if repl.primary.is_some() {
        return Err(Error::msg(
            "ERR FAILOVER is not valid when server is a replica.",
        ));
    }
    if repl.replicas.is_empty() {
        return Err(Error::msg("ERR FAILOVER requires connected replicas."));
    }
    if options.force && (options.timeout_ms == 0 || options.target.is_none()) {
        return Err(Error::msg(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        ));
    }
    if let Some((host, port)) = &options.target {
        let Some(replica) = repl.find_replica(host, *port) else {
            return Err(Error::msg(
                "ERR FAILOVER target HOST and PORT is not a replica.",
            ));
        };
        // A replica still receiving its full sync's image is not online yet.
        if replica.receiving_image() {
            return Err(Error::msg("ERR FAILOVER target replica is not online."));
        }
        ctx.server
            .log
            .notice(&format!("FAILOVER requested to {host}:{port}."));
    } else {
        ctx.server.log.notice("FAILOVER requested to any replica.");
    }
    let failover = &mut ctx.server.repl.failover;
    // Like Redis's `mstime() + timeout`, a huge timeout wraps around (and so ends at once).
    failover.end_ms =
        (options.timeout_ms != 0).then(|| ctx.now_ms.wrapping_add(options.timeout_ms));
    failover.force = options.force;
    failover.target = options.target;
    failover.state = FailoverState::WaitForSync;
    let pause = ctx.server.set_failover_pause(true);
    ctx.ks.expiry_held_until = pause.map_or(i64::MIN, |p| p.until_ms);
    ctx.out.ok();
    Ok(())
}

/// The arguments, each at most once, as Redis's loop reads them: `TIMEOUT ms` (greater than
/// 0), `TO host port`, `FORCE`; anything else (ABORT among other arguments) is a syntax error.
fn parse(ctx: &Ctx<'_>) -> CmdResult<Options> {
    let mut options = Options {
        timeout_ms: 0,
        force: false,
        target: None,
    };
    let mut j = 1;
    while j < ctx.argc() {
        if ctx.arg_is(j, "timeout") && j + 1 < ctx.argc() && options.timeout_ms == 0 {
            options.timeout_ms = ctx.int_arg(j + 1)?;
            if options.timeout_ms <= 0 {
                return Err(Error::msg("ERR FAILOVER timeout must be greater than 0"));
            }
            j += 2;
        } else if ctx.arg_is(j, "to") && j + 2 < ctx.argc() && options.target.is_none() {
            let port = ctx.int_arg(j + 2)?;
            let host = String::from_utf8_lossy(crate::base::cstr::c_str(ctx.arg(j + 1)));
            options.target = Some((host.into_owned(), port));
            j += 3;
        } else if ctx.arg_is(j, "force") && !options.force {
            options.force = true;
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
    }
    Ok(options)
}

/// Ends the failover, whichever way: the state goes, and so does the pause of writes (the
/// engine re-runs the commands it held, after the command or the tick that ended it).
fn clear_failover(ctx: &mut Parts<'_>) {
    ctx.server.repl.failover = Default::default();
    let pause = ctx.server.set_failover_pause(false);
    ctx.ks.expiry_held_until = pause.map_or(i64::MIN, |p| p.until_ms);
    ctx.server.requests.push(EngineRequest::ReleasePostponed);
}

/// Gives the failover up (Redis's `abortFailover`): a server already following the target is a
/// primary again, under a new replication ID that its replicas continue from.
pub(crate) fn abort_failover(ctx: &mut Parts<'_>, why: &str) {
    let failover = &ctx.server.repl.failover;
    if !failover.is_on() {
        return;
    }
    let line = match &failover.target {
        Some((host, port)) => format!("FAILOVER to {host}:{port} aborted: {why}"),
        None => format!("FAILOVER to any replica aborted: {why}"),
    };
    ctx.server.log.notice(&line);
    if failover.state == FailoverState::InProgress {
        crate::commands::replication::stop_following(ctx);
    }
    clear_failover(ctx);
}

/// The target's answer to `PSYNC … FAILOVER` (`accepted`: `+CONTINUE` or `+FULLRESYNC`): the
/// failover is over, done or given up.
pub(crate) fn psync_answered(ctx: &mut Parts<'_>, accepted: bool) {
    if ctx.server.repl.failover.state != FailoverState::InProgress {
        return;
    }
    if accepted {
        clear_failover(ctx);
    } else {
        abort_failover(ctx, "Failover target rejected psync request");
    }
}

/// Moves a failover that waits for its sync on (Redis's `updateFailoverStatus`, which the
/// engine runs from its tick): past the TIMEOUT it is given up, or forced with FORCE; a target
/// (or, without TO, any replica) that acknowledged our whole stream is handed the role.
pub(crate) fn update_failover_status(ctx: &mut Parts<'_>, now_ms: i64) {
    let failover = &ctx.server.repl.failover;
    if failover.state != FailoverState::WaitForSync {
        return;
    }
    if failover.end_ms.is_some_and(|end| end <= now_ms) {
        if failover.force {
            ctx.server.log.notice(&format!(
                "FAILOVER to {} time out exceeded, failing over.",
                failover.target_name()
            ));
            hand_over(ctx);
        } else {
            abort_failover(ctx, "Replica never caught up before timeout");
        }
        return;
    }
    let repl = &mut ctx.server.repl;
    let offset = repl.offset;
    let caught_up = match &repl.failover.target {
        Some((host, port)) => repl
            .find_replica(host, *port)
            .is_some_and(|r| r.ack_offset == offset),
        None => match repl.replicas.iter().find(|r| r.ack_offset == offset) {
            Some(r) => {
                repl.failover.target = Some((r.ip.clone(), i64::from(r.listening_port)));
                true
            }
            None => false,
        },
    };
    if caught_up {
        let line = format!(
            "Failover target {} is synced, failing over.",
            repl.failover.target_name()
        );
        ctx.server.log.notice(&line);
        hand_over(ctx);
    }
}

/// Becomes a replica of the target (Redis's `replicationSetMaster`), the failover in progress:
/// the link's PSYNC carries `FAILOVER`.
fn hand_over(ctx: &mut Parts<'_>) {
    ctx.server.repl.failover.state = FailoverState::InProgress;
    let Some((host, port)) = ctx.server.repl.failover.target.clone() else {
        return;
    };
    crate::commands::replication::follow_primary(ctx, host, port as u16);
}

pub static COMMANDS: &[CommandSpec] = &[CommandSpec::new("failover", -1, failover)
    .flags(Flags::ADMIN.union(Flags::NOSCRIPT).union(Flags::STALE))
    .acl(Acl::ADMIN.union(Acl::DANGEROUS))
    .doc(
        "server",
        "6.2.0",
        "O(1)",
        "Hands the primary's role to one of its replicas, pausing writes until it caught up.",
        "[TO target=(host:string port:integer [FORCE])] [ABORT] [TIMEOUT milliseconds:integer]",
    )];
