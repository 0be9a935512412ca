//! SLOWLOG: reading and clearing the slow log (GET, LEN, RESET, HELP).
//!
//! The log itself is [`crate::model::slowlog`]; `call` fills it as commands finish (see
//! `crate::kernel::call`), under `slowlog-log-slower-than` and `slowlog-max-len`.

use embedis_protocol::number::parse_i64;

use crate::base::error::{CmdResult, Error};
use crate::commands::common::write_help;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags};

const HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Returns the newest <count> entries of the slow log (default: 10, -1 for all).",
    "    Each entry: its id, UNIX time, run time in microseconds, arguments, client",
    "    address and client name.",
    "LEN",
    "    Returns the number of entries in the slow log.",
    "RESET",
    "    Empties the slow log.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

fn len(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.integer(ctx.server.slowlog.entries.len() as i64);
    Ok(())
}

fn reset(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.server.slowlog.reset();
    ctx.out.ok();
    Ok(())
}

fn get(ctx: &mut Ctx<'_>) -> CmdResult {
    // Redis checks the count only for SLOWLOG GET <count>; more arguments get the generic
    // subcommand error.
    if ctx.argc() > 3 {
        // The subcommand quoted as the client wrote it (a C string, as Redis prints it).
        let mut line = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
        line.extend_from_slice(crate::base::cstr::c_str(ctx.arg(1)));
        line.extend_from_slice(b"'. Try SLOWLOG HELP.");
        return Err(Error::bytes(line));
    }
    let count = if ctx.argc() == 3 {
        match parse_i64(ctx.arg(2)) {
            Some(n) if n >= -1 => n,
            _ => {
                return Err(Error::msg(
                    "ERR count should be greater than or equal to -1",
                ))
            }
        }
    } else {
        10
    };
    let log = &ctx.server.slowlog;
    let n = if count == -1 {
        log.entries.len()
    } else {
        log.entries.len().min(count as usize)
    };
    ctx.out.array(n);
    for entry in log.entries.iter().take(n) {
        ctx.out.array(6);
        ctx.out.integer(entry.id as i64);
        ctx.out.integer(entry.time);
        ctx.out.integer(entry.duration_us as i64);
        ctx.out.array(entry.args.len());
        for arg in &entry.args {
            ctx.out.bulk(arg);
        }
        ctx.out.bulk(entry.peer.as_bytes());
        ctx.out.bulk(&entry.client_name);
    }
    Ok(())
}

const ADMIN: Flags = Flags::ADMIN.union(Flags::LOADING).union(Flags::STALE);

static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("len", 2, len)
        .flags(ADMIN)
        .tips(&[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ])
        .doc(
            "server",
            "2.2.12",
            "O(1)",
            "Counts the entries of the slow log.",
            "",
        ),
    CommandSpec::new("help", 2, help)
        .flags(Flags::LOADING.union(Flags::STALE))
        .doc(
            "server",
            "6.2.0",
            "O(1)",
            "Lists the SLOWLOG subcommands.",
            "",
        ),
    CommandSpec::new("reset", 2, reset)
        .flags(ADMIN)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "server",
            "2.2.12",
            "O(N) where N is the number of entries in the slowlog",
            "Empties the slow log.",
            "",
        ),
    CommandSpec::new("get", -2, get)
        .flags(ADMIN)
        .tips(&["request_policy:all_nodes", "nondeterministic_output"])
        .doc(
            "server",
            "2.2.12",
            "O(N) where N is the number of entries returned",
            "Returns the newest entries of the slow log (10 by default, -1 for all).",
            "[count:integer]",
        ),
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec::container("slowlog", SUBCOMMANDS)
    .acl(Acl::NONE)
    .doc(
        "server",
        "2.2.12",
        "Depends on subcommand.",
        "Container for the commands that read and clear the slow log.",
        "",
    )];
