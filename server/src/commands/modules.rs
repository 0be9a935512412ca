//! MODULE and LOLWUT: commands that client libraries and tools send on connecting or probing,
//! answered as a Redis server with `enable-module-command no` (its default) answers them.
//!
//! embedis cannot load Redis modules (they are C shared objects written against Redis's own
//! internals), so LOAD, LOADEX and UNLOAD are refused with the error Redis gives where module
//! commands are not enabled. MODULE LIST (and HELLO's `modules`, INFO's `modules` section) show
//! what that Redis has built in: nothing before 8.0, the `vectorset` module from 8.0 on
//! ([`builtin_modules`]). LOLWUT replies with Redis's version
//! line, which is all that Redis 7.0 prints by default; Redis's pictures for versions 5 and 6
//! are art of its own, which embedis does not reproduce.

use embedis_protocol::Writer;

use crate::base::compat::CompatVersion;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags};

/// A module Redis loads by itself, as MODULE LIST and INFO describe it.
pub struct BuiltinModule {
    pub name: &'static str,
    pub ver: i64,
    /// INFO's `options=[…]`: the module's declared options.
    pub options: &'static str,
}

/// The modules a version's Redis has built in: Redis 8 compiles the vector sets in as the
/// `vectorset` module (version 1), which declares that it handles I/O errors and asynchronous
/// replica loading.
pub fn builtin_modules(version: CompatVersion) -> &'static [BuiltinModule] {
    const VECTORSET: &[BuiltinModule] = &[BuiltinModule {
        name: "vectorset",
        ver: 1,
        options: "handle-io-errors|handle-repl-async-load",
    }];
    if version >= CompatVersion::V8_2 {
        VECTORSET
    } else {
        &[]
    }
}

/// MODULE LIST's reply, which HELLO repeats: one map per module (name, version, the path and
/// arguments it was loaded with, both empty for a built-in module).
pub fn write_module_list(out: &mut Writer<'_>, version: CompatVersion) {
    let modules = builtin_modules(version);
    out.array(modules.len());
    for module in modules {
        out.map(4);
        out.bulk(b"name");
        out.bulk(module.name.as_bytes());
        out.bulk(b"ver");
        out.integer(module.ver);
        out.bulk(b"path");
        out.bulk(b"");
        out.bulk(b"args");
        out.array(0);
    }
}

fn list(ctx: &mut Ctx<'_>) -> CmdResult {
    write_module_list(&mut ctx.out, ctx.server.config.compat_version);
    Ok(())
}

/// LOAD, LOADEX and UNLOAD are protected commands: the engine's protected-command gate refuses
/// them under `enable-module-command no`, the only value embedis accepts (it has no way to run
/// a module), counting a rejected call as Redis does. This handler is never reached; it answers
/// the same refusal in case the gate ever lets one through.
fn not_allowed(_ctx: &mut Ctx<'_>) -> CmdResult {
    Err(Error::msg(
        "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
    ))
}

const HELP: &[&str] = &[
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    crate::commands::common::write_help(ctx, HELP);
    Ok(())
}

/// LOLWUT [VERSION v] …: only VERSION's number is checked (the other arguments size Redis's
/// pictures); the reply is Redis's version line.
fn lolwut(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() >= 3 && ctx.arg_is(1, "version") {
        ctx.int_arg(2)?;
    }
    // A verbatim text string in RESP3, a bulk string in RESP2, as in Redis.
    let version = ctx.server.config.compat_version.redis_version();
    ctx.out
        .verbatim(b"txt", format!("Redis ver. {version}\n").as_bytes());
    Ok(())
}

const MODULE_FLAGS: Flags = Flags::ADMIN.union(Flags::NOSCRIPT);

const MODULE_ACL: Acl = Acl::ADMIN.union(Acl::DANGEROUS);

static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("unload", 3, not_allowed)
        .flags(
            MODULE_FLAGS
                .union(Flags::NO_ASYNC_LOADING)
                .union(Flags::PROTECTED),
        )
        .acl(MODULE_ACL)
        .doc(
            "server",
            "4.0.0",
            "O(1)",
            "Unloads a module (refused: embedis loads none).",
            "name",
        ),
    CommandSpec::new("list", 2, list)
        .flags(MODULE_FLAGS)
        .acl(MODULE_ACL)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "server",
            "4.0.0",
            "O(N) where N is the number of loaded modules.",
            "Lists the loaded modules: the built-in ones.",
            "",
        ),
    CommandSpec::new("load", -3, not_allowed)
        .flags(
            MODULE_FLAGS
                .union(Flags::NO_ASYNC_LOADING)
                .union(Flags::PROTECTED),
        )
        .acl(MODULE_ACL)
        .doc(
            "server",
            "4.0.0",
            "O(1)",
            "Loads a module (refused: embedis cannot run Redis modules).",
            "path [arg...]",
        ),
    CommandSpec::new("loadex", -3, not_allowed)
        .flags(
            MODULE_FLAGS
                .union(Flags::NO_ASYNC_LOADING)
                .union(Flags::PROTECTED),
        )
        .acl(MODULE_ACL)
        .doc(
            "server",
            "7.0.0",
            "O(1)",
            "Loads a module with configuration (refused: embedis cannot run Redis modules).",
            "path [configs=CONFIG (name value)...+] [args=ARGS (arg)...]",
        ),
    CommandSpec::new("help", 2, help)
        .flags(Flags::LOADING.union(Flags::STALE))
        .doc(
            "server",
            "5.0.0",
            "O(1)",
            "Lists the MODULE subcommands.",
            "",
        ),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::container("module", SUBCOMMANDS).doc(
        "server",
        "4.0.0",
        "Depends on subcommand.",
        "Container for the module commands.",
        "",
    ),
    CommandSpec::new("lolwut", -1, lolwut)
        .flags(Flags::READONLY.union(Flags::FAST))
        .acl(Acl::READ)
        .doc(
            "server",
            "5.0.0",
            "",
            "Shows the server's version (Redis adds computer art).",
            "[VERSION version:integer]",
        ),
];
