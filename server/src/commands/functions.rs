//! The function commands of Redis 7: FCALL, FCALL_RO and the FUNCTION container (LOAD, LIST,
//! DELETE, FLUSH, DUMP, RESTORE, STATS, KILL, HELP).
//!
//! Libraries, their load-time environment and the DUMP payload are `embedis-scripting`'s
//! ([`embedis_scripting::Functions`]); the VM's home and the load host are [`crate::services::function_host`].
//! A function runs like an EVAL script — whole, with the clock frozen, through EVAL's
//! [`crate::services::script_host::ScriptHost`] — except that functions always hold to their flags: without `no-writes` a
//! function may write and FCALL_RO refuses it; with it, its write commands are refused.

use std::time::Instant;

use bytes::Bytes;
use embedis_scripting::{Functions, RestorePolicy};

use crate::base::compat::CompatVersion;
use crate::base::cstr::c_str;
use crate::base::error::{CmdResult, Error};
use crate::commands::common::subcommand_syntax_error;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, Begin, Find, KeySpec};
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::lazyfree::LAZYFREE_THRESHOLD;
use crate::model::vm_slot::ScriptKind;
use crate::services::function_host::LoadHost;
use crate::services::script_host::{split_keys, Permissions};

/// Runs `f` with the functions VM taken out of the server state (created at first use).
fn with_functions<R>(
    ctx: &mut Ctx<'_>,
    f: impl FnOnce(&mut Ctx<'_>, &mut Functions) -> CmdResult<R>,
) -> CmdResult<R> {
    let mut functions = ctx.server.functions.take()?;
    let result = f(ctx, &mut functions);
    ctx.server.functions.put_back(functions);
    result
}

fn fcall(ctx: &mut Ctx<'_>) -> CmdResult {
    run_function(ctx, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    run_function(ctx, true)
}

/// FCALL and FCALL_RO: the function is looked up first, then `numkeys` checked.
fn run_function(ctx: &mut Ctx<'_>, ro_command: bool) -> CmdResult {
    // Redis's math.random state is one for both VMs: the EVAL VM holds it (created here if no
    // script ran yet) and the function runs on from it.
    let eval_vm = ctx.server.scripting.take()?;
    let rand_state = embedis_scripting::libs::rand48::state(eval_vm.lua());
    ctx.server.scripting.put_back(eval_vm);
    let (outcome, rand_state) = with_functions(ctx, |ctx, functions| {
        let Some(def) = functions.function(&ctx.args[1]) else {
            return Err(Error::msg("ERR Function not found"));
        };
        let numkeys = ctx
            .int_arg(2)
            .map_err(|_| Error::msg("ERR Bad number of keys provided"))?;
        // Slices of the request (it outlives the command), as for EVAL.
        let args = ctx.args;
        let (keys, argv) = split_keys(args, numkeys)?;
        if def.flags.no_cluster && ctx.server.cluster.enabled {
            return Err(Error::msg(super::scripting::NO_CLUSTER));
        }
        if ro_command && !def.flags.no_writes {
            return Err(Error::msg(
                "ERR Can not execute a script with write flag using *_ro command.",
            ));
        }
        let permissions = Permissions {
            read_only: ro_command || def.flags.no_writes,
            allow_oom: def.flags.allow_oom,
            allow_cross_slot: def.flags.allow_cross_slot_keys,
        };
        let name = &args[1];
        embedis_scripting::libs::rand48::set_state(functions.lua(), rand_state);
        let outcome = crate::services::script_host::run_script(
            ctx,
            permissions,
            ScriptKind::Function,
            &String::from_utf8_lossy(name),
            (functions.library_count(), functions.function_count()),
            |host, out| functions.call(host, name, keys, argv, out),
        );
        let rand_state = embedis_scripting::libs::rand48::state(functions.lua());
        Ok((outcome, rand_state))
    })?;
    if let Some(vm) = ctx.server.scripting.get_mut() {
        embedis_scripting::libs::rand48::set_state(vm.lua(), rand_state);
    }
    outcome
}

fn function_load(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut replace = false;
    for i in 2..ctx.argc() - 1 {
        if ctx.arg_is(i, "replace") {
            replace = true;
        } else {
            let mut line = b"ERR Unknown option given: ".to_vec();
            line.extend_from_slice(c_str(ctx.arg(i)));
            return Err(Error::bytes(line));
        }
    }
    let code = ctx.args[ctx.argc() - 1].clone();
    let name = with_functions(ctx, |ctx, functions| {
        let mut host = LoadHost {
            log: &ctx.server.log,
            registry: ctx.registry,
            started: Instant::now(),
        };
        functions
            .load(&mut host, &code, replace)
            .map_err(Error::bytes)
    })?;
    ctx.ks.dirty += 1;
    ctx.out.bulk(name.as_bytes());
    Ok(())
}

fn function_delete(ctx: &mut Ctx<'_>) -> CmdResult {
    let name = ctx.args[2].clone();
    let deleted = ctx
        .server
        .functions
        .get_mut()
        .is_some_and(|functions| functions.delete(&name));
    if !deleted {
        return Err(Error::msg("ERR Library not found"));
    }
    ctx.ks.dirty += 1;
    ctx.out.ok();
    Ok(())
}

fn function_flush(ctx: &mut Ctx<'_>) -> CmdResult {
    let lazy = match ctx.argc() {
        2 => ctx.server.config.lazyfree_lazy_user_flush,
        3 if ctx.arg_is(2, "async") => true,
        3 if ctx.arg_is(2, "sync") => false,
        3 => {
            return Err(Error::msg(
                "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
            ))
        }
        _ => return Err(subcommand_syntax_error(ctx)),
    };
    flush_functions(ctx, lazy);
    ctx.ks.dirty += 1;
    ctx.out.ok();
    Ok(())
}

/// Drops every library. An ASYNC flush of more than 64 functions is lazy-free work in Redis,
/// counted in `lazyfreed_objects` (one per function); from 7.4 it frees the whole VM, whose
/// engine counts one more, and the next command gets a fresh VM (so `used_memory_vm_functions`
/// falls back at once).
fn flush_functions(ctx: &mut Ctx<'_>, lazy: bool) {
    let whole_vm = lazy && ctx.registry.version >= CompatVersion::V7_4;
    let (count, engine) = if whole_vm {
        match ctx.server.functions.discard() {
            Some(old) => (old.function_count(), 1),
            None => return,
        }
    } else {
        match ctx.server.functions.get_mut() {
            Some(functions) => {
                let count = functions.function_count();
                functions.flush();
                (count, 0)
            }
            None => return,
        }
    };
    if lazy && count > LAZYFREE_THRESHOLD {
        crate::model::lazyfree::count_as_lazyfreed(count + engine);
    }
}

fn function_dump(ctx: &mut Ctx<'_>) -> CmdResult {
    let payload = match ctx.server.functions.get() {
        Some(functions) => functions.dump(true),
        None => embedis_scripting::dump::dump(&[], true),
    };
    ctx.out.bulk(&payload);
    Ok(())
}

fn function_restore(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() > 4 {
        return Err(subcommand_syntax_error(ctx));
    }
    let policy = if ctx.argc() == 4 {
        if ctx.arg_is(3, "flush") {
            RestorePolicy::Flush
        } else if ctx.arg_is(3, "append") {
            RestorePolicy::Append
        } else if ctx.arg_is(3, "replace") {
            RestorePolicy::Replace
        } else {
            return Err(Error::msg(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ));
        }
    } else {
        RestorePolicy::Append
    };
    let payload = ctx.args[2].clone();
    with_functions(ctx, |ctx, functions| {
        let mut host = LoadHost {
            log: &ctx.server.log,
            registry: ctx.registry,
            started: Instant::now(),
        };
        functions
            .restore(&mut host, &payload, policy)
            .map_err(Error::bytes)
    })?;
    ctx.ks.dirty += 1;
    ctx.out.ok();
    Ok(())
}

fn function_list(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut with_code = false;
    let mut pattern: Option<Bytes> = None;
    let mut i = 2;
    while i < ctx.argc() {
        if !with_code && ctx.arg_is(i, "withcode") {
            with_code = true;
        } else if pattern.is_none() && ctx.arg_is(i, "libraryname") {
            if i + 1 >= ctx.argc() {
                return Err(Error::msg("ERR library name argument was not given"));
            }
            i += 1;
            pattern = Some(ctx.args[i].clone());
        } else {
            // Redis writes this one unformatted (`addReplyErrorSdsSafe`): a line break at the
            // end stays, as spaces.
            let mut line = b"ERR Unknown argument ".to_vec();
            line.extend_from_slice(c_str(ctx.arg(i)));
            return Err(Error::untrimmed(line));
        }
        i += 1;
    }
    let Some(functions) = ctx.server.functions.get() else {
        ctx.out.array(0);
        return Ok(());
    };
    let libraries: Vec<_> = functions
        .libraries()
        .filter(|lib| {
            pattern
                .as_ref()
                .is_none_or(|p| embedis_datatypes::glob::matches(p, lib.name.as_bytes(), true))
        })
        .collect();
    let out = &mut ctx.out;
    out.array(libraries.len());
    for lib in libraries {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(lib.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(lib.functions.len());
        for def in lib.functions.values() {
            out.map(3);
            out.bulk(b"name");
            out.bulk(def.name.as_bytes());
            out.bulk(b"description");
            match &def.description {
                Some(d) => out.bulk(d),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names = def.flags.names();
            out.set(names.len());
            for name in names {
                out.simple(name.as_bytes());
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&lib.code);
        }
    }
    Ok(())
}

fn function_stats(ctx: &mut Ctx<'_>) -> CmdResult {
    // Reached while a script runs only when it is busy (see crate::services::busy): during an EVAL script
    // Redis refuses; during a function it describes it.
    let running = ctx.server.running_script.clone();
    if let Some(running) = &running {
        if running.kind == ScriptKind::Eval {
            return Err(crate::kernel::gates::busy_error(ScriptKind::Eval));
        }
    }
    let (libraries, functions) = match &running {
        Some(running) => running.function_counts,
        None => ctx
            .server
            .functions
            .get()
            .map_or((0, 0), |f| (f.library_count(), f.function_count())),
    };
    let out = &mut ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    match &running {
        Some(running) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(running.name.as_bytes());
            out.bulk(b"command");
            out.array(running.command.len());
            for arg in &running.command {
                out.bulk(arg);
            }
            out.bulk(b"duration_ms");
            out.integer(running.started.elapsed().as_millis() as i64);
        }
        None => out.null(),
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.integer(libraries as i64);
    out.bulk(b"functions_count");
    out.integer(functions as i64);
    Ok(())
}

/// FUNCTION KILL as a command: a function runs whole on the executor, so when this command
/// runs none is running.
fn function_kill(_ctx: &mut Ctx<'_>) -> CmdResult {
    Err(Error::msg("NOTBUSY No scripts in execution right now."))
}

fn function_help(ctx: &mut Ctx<'_>) -> CmdResult {
    const LINES: &[&str] = &[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Load a library from its code (`#!lua name=<library>` first); REPLACE overwrites a",
        "    library of the same name.",
        "DELETE <LIBRARY NAME>",
        "    Remove a library and its functions.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Describe the libraries (those whose name matches PATTERN), their functions, and",
        "    with WITHCODE their code.",
        "STATS",
        "    The function running now (nil when none) and the number of libraries and functions.",
        "KILL",
        "    Stop the running function, if it has not written anything.",
        "FLUSH [ASYNC|SYNC]",
        "    Remove every library.",
        "DUMP",
        "    Serialize every library into a payload for FUNCTION RESTORE.",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Load the libraries of a payload: FLUSH drops the current ones first, APPEND (the",
        "    default) refuses a library that exists, REPLACE replaces it.",
        "HELP",
        "    Print this list.",
    ];
    ctx.out.array(LINES.len());
    for line in LINES {
        ctx.out.simple(line.as_bytes());
    }
    Ok(())
}

const FCALL_FLAGS: Flags = Flags::NOSCRIPT
    .union(Flags::STALE)
    .union(Flags::SKIP_MONITOR)
    .union(Flags::NO_MANDATORY_KEYS)
    .union(Flags::MOVABLE_KEYS);

/// The keys of FCALL: `numkeys` at 2, then that many keys.
const fn fcall_keys(flags: u16) -> KeySpec {
    KeySpec {
        flags,
        begin: Begin::Index(2),
        find: Find::Keynum {
            count_index: 0,
            first_key: 1,
            step: 1,
        },
        notes: "",
    }
}

const RW_KEYS: &[KeySpec] = &[fcall_keys(flag::RW | flag::ACCESS | flag::UPDATE)
    .notes("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE")];

const RO_KEYS: &[KeySpec] = &[fcall_keys(flag::RO | flag::ACCESS)
    .notes("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS")];

const ALL_SHARDS: &[&str] = &["request_policy:all_shards", "response_policy:all_succeeded"];

const WRITE_ACL: Acl = Acl::WRITE.union(Acl::SCRIPTING);

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("fcall", -3, fcall)
        .flags(FCALL_FLAGS.union(Flags::MAY_REPLICATE))
        .acl(Acl::SCRIPTING)
        .keys(RW_KEYS)
        .doc(
            "scripting",
            "7.0.0",
            "Depends on the function that is executed.",
            "Calls a function of a loaded library.",
            "function numkeys:integer [key...] [arg...]",
        ),
    CommandSpec::new("fcall_ro", -3, fcall_ro)
        .flags(FCALL_FLAGS.union(Flags::READONLY))
        .acl(Acl::SCRIPTING)
        .keys(RO_KEYS)
        .doc(
            "scripting",
            "7.0.0",
            "Depends on the function that is executed.",
            "Calls a function that declares it does not write.",
            "function numkeys:integer [key...] [arg...]",
        ),
    CommandSpec::container("function", FUNCTION_SUBCOMMANDS).doc(
        "scripting",
        "7.0.0",
        "Depends on subcommand.",
        "A container for the function library commands.",
        "",
    ),
];

static FUNCTION_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("delete", 3, function_delete)
        .flags(Flags::WRITE.union(Flags::NOSCRIPT))
        .acl(WRITE_ACL)
        .tips(ALL_SHARDS)
        .doc(
            "scripting",
            "7.0.0",
            "O(1)",
            "Removes a library and its functions.",
            "library-name",
        ),
    CommandSpec::new("dump", 2, function_dump)
        .flags(Flags::NOSCRIPT)
        .acl(Acl::SCRIPTING)
        .doc(
            "scripting",
            "7.0.0",
            "O(N) where N is the number of functions",
            "Serializes every library into a payload FUNCTION RESTORE takes back.",
            "",
        ),
    CommandSpec::new("flush", -2, function_flush)
        .flags(Flags::WRITE.union(Flags::NOSCRIPT))
        .acl(WRITE_ACL)
        .tips(ALL_SHARDS)
        .doc(
            "scripting",
            "7.0.0",
            "O(N) where N is the number of functions deleted",
            "Removes every library.",
            "async=[ASYNC|SYNC]",
        ),
    CommandSpec::new("help", 2, function_help)
        .flags(Flags::LOADING.union(Flags::STALE))
        .acl(Acl::SCRIPTING)
        .doc(
            "scripting",
            "7.0.0",
            "O(1)",
            "Lists the FUNCTION subcommands.",
            "",
        ),
    CommandSpec::new("kill", 2, function_kill)
        .flags(Flags::NOSCRIPT.union(Flags::ALLOW_BUSY))
        .acl(Acl::SCRIPTING)
        .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
        .doc(
            "scripting",
            "7.0.0",
            "O(1)",
            "Stops the running function if it has not written yet.",
            "",
        ),
    CommandSpec::new("list", -2, function_list)
        .flags(Flags::NOSCRIPT)
        .acl(Acl::SCRIPTING)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "scripting",
            "7.0.0",
            "O(N) where N is the number of functions",
            "Describes the loaded libraries and their functions, optionally with their code.",
            "[LIBRARYNAME library-name-pattern] [WITHCODE]",
        ),
    CommandSpec::new("load", -3, function_load)
        .flags(Flags::WRITE.union(Flags::DENYOOM).union(Flags::NOSCRIPT))
        .acl(WRITE_ACL)
        .tips(ALL_SHARDS)
        .doc(
            "scripting",
            "7.0.0",
            "O(1) (considering compilation time is redundant)",
            "Loads a library of functions from its Lua code.",
            "[REPLACE] function-code",
        ),
    CommandSpec::new("restore", -3, function_restore)
        .flags(Flags::WRITE.union(Flags::DENYOOM).union(Flags::NOSCRIPT))
        .acl(WRITE_ACL)
        .tips(ALL_SHARDS)
        .doc(
            "scripting",
            "7.0.0",
            "O(N) where N is the number of functions on the payload",
            "Loads the libraries of a FUNCTION DUMP payload.",
            "serialized-value policy=[FLUSH|APPEND|REPLACE]",
        ),
    CommandSpec::new("stats", 2, function_stats)
        .flags(Flags::NOSCRIPT.union(Flags::ALLOW_BUSY))
        .acl(Acl::SCRIPTING)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc(
            "scripting",
            "7.0.0",
            "O(1)",
            "Tells which function runs, if any, and how many libraries and functions are loaded.",
            "",
        ),
];
