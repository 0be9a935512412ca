//! SAVE, BGSAVE and BGREWRITEAOF: the commands of RDB and AOF persistence, over [`crate::services::rdb_saving`] (which also
//! serves LASTSAVE's figure, SHUTDOWN's save, FLUSHALL's save and DEBUG RELOAD).
//!
//! BGSAVE starts a forkless snapshot ([`crate::model::snapshot`]) and answers at once, as Redis's fork
//! does; inside MULTI (where Redis cannot fork either) and with SCHEDULE while one runs it is
//! scheduled for the tick instead.

use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::services::rdb_saving;

fn save(ctx: &mut Ctx<'_>) -> CmdResult {
    if rdb_saving::bgsave_in_progress(ctx.server) {
        return Err(Error::msg("ERR Background save already in progress"));
    }
    ctx.server.persistence.saves += 1;
    match rdb_saving::save(ctx.ks, ctx.server) {
        Ok(()) => {
            ctx.out.ok();
            Ok(())
        }
        Err(_) => Err(Error::msg("ERR")),
    }
}

fn bgsave(ctx: &mut Ctx<'_>) -> CmdResult {
    let schedule = match ctx.argc() {
        1 => false,
        2 if ctx.arg_is(1, "schedule") => true,
        _ => return Err(Error::Syntax),
    };
    let in_exec = ctx.in_exec();
    // Redis schedules only behind another kind of child (an AOF rewrite); behind a running
    // BGSAVE it refuses, SCHEDULE or not.
    if rdb_saving::bgsave_in_progress(ctx.server) {
        return Err(Error::msg("ERR Background save already in progress"));
    }
    if crate::services::aof::rewrite_in_progress(ctx.server) || in_exec {
        if !schedule && !in_exec {
            return Err(Error::msg("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible."));
        }
        ctx.server.persistence.scheduled = true;
        ctx.out.simple(b"Background saving scheduled");
        return Ok(());
    }
    rdb_saving::bgsave_start(ctx.ks, ctx.server);
    ctx.out.simple(b"Background saving started");
    Ok(())
}

fn bgrewriteaof(ctx: &mut Ctx<'_>) -> CmdResult {
    if crate::services::aof::rewrite_in_progress(ctx.server) {
        return Err(Error::msg(
            "ERR Background append only file rewriting already in progress",
        ));
    }
    let in_exec = ctx.in_exec();
    if rdb_saving::bgsave_in_progress(ctx.server) || in_exec {
        ctx.server.aof.rewrite_scheduled = true;
        ctx.server.aof.rewrite_failures = 0;
        ctx.out
            .simple(b"Background append only file rewriting scheduled");
        return Ok(());
    }
    match crate::services::aof::rewrite_start(ctx.ks, ctx.server) {
        Ok(()) => {
            ctx.out
                .simple(b"Background append only file rewriting started");
            Ok(())
        }
        Err(e) => {
            ctx.server.log.warning(&format!(
                "Can't rewrite append only file in background: {e}"
            ));
            Err(Error::msg("ERR Can't execute an AOF background rewriting. Please check the server logs for more information."))
        }
    }
}

const ADMIN: Flags = Flags::ADMIN
    .union(Flags::NOSCRIPT)
    .union(Flags::NO_ASYNC_LOADING);

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("save", 1, save)
        .flags(ADMIN.union(Flags::NO_MULTI))
        .acl(Acl::ADMIN.union(Acl::DANGEROUS))
        .doc(
            "server",
            "1.0.0",
            "O(N) where N is the total number of keys in all databases",
            "Writes the whole dataset to the RDB file now, blocking the server while it does.",
            "",
        ),
    CommandSpec::new("bgsave", -1, bgsave)
        .flags(ADMIN)
        .acl(Acl::ADMIN.union(Acl::DANGEROUS))
        .doc(
            "server",
            "1.0.0",
            "O(1)",
            "Writes a point-in-time snapshot of the dataset to the RDB file while clients are served.",
            "[SCHEDULE]",
        ),
    CommandSpec::new("bgrewriteaof", 1, bgrewriteaof)
        .flags(ADMIN)
        .acl(Acl::ADMIN.union(Acl::DANGEROUS))
        .doc(
            "server",
            "1.0.0",
            "O(1)",
            "Rewrites the append-only file from a point-in-time snapshot while clients are served.",
            "",
        ),
];
