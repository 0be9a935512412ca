//! Connection commands: PING, ECHO, QUIT, SELECT.

use crate::command::{Acl, CommandSpec, Flags};
use crate::ctx::Ctx;
use crate::error::{CmdResult, Error};

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("ping", -1, ping)
        .flags(Flags::FAST)
        .acl(Acl::CONNECTION)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .doc(
            "connection",
            "1.0.0",
            "O(1)",
            "Returns the server's liveliness response.",
            "[message]",
        ),
    CommandSpec::new("echo", 2, echo)
        .flags(Flags::LOADING.union(Flags::STALE).union(Flags::FAST))
        .acl(Acl::CONNECTION)
        .doc(
            "connection",
            "1.0.0",
            "O(1)",
            "Returns the given string.",
            "message",
        ),
    CommandSpec::new("quit", -1, quit)
        .flags(
            Flags::NOSCRIPT
                .union(Flags::LOADING)
                .union(Flags::STALE)
                .union(Flags::FAST)
                .union(Flags::NO_AUTH)
                .union(Flags::ALLOW_BUSY),
        )
        .acl(Acl::CONNECTION)
        .doc("connection", "1.0.0", "O(1)", "Closes the connection.", ""),
    CommandSpec::new("select", 2, select)
        .flags(Flags::LOADING.union(Flags::STALE).union(Flags::FAST))
        .acl(Acl::CONNECTION)
        .doc(
            "connection",
            "1.0.0",
            "O(1)",
            "Changes the selected database.",
            "index:integer",
        ),
];

fn ping(ctx: &mut Ctx<'_>) -> CmdResult {
    match ctx.argc() {
        1 => ctx.out.simple(b"PONG"),
        2 => ctx.out.bulk(ctx.arg(1)),
        _ => return Err(Error::WrongArity("ping".into())),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.bulk(ctx.arg(1));
    Ok(())
}

fn quit(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn select(ctx: &mut Ctx<'_>) -> CmdResult {
    // Redis reads the index as a C int: beyond 32 bits is its range error, not "out of range".
    let index = crate::commands::databases::int32_arg(ctx, 1, None)?;
    ctx.client.db = crate::commands::databases::db_index(ctx, index)?;
    ctx.out.ok();
    Ok(())
}
