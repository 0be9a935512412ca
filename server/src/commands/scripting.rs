//! The scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and the SCRIPT container (LOAD,
//! EXISTS, FLUSH, KILL, HELP).
//!
//! A script runs whole, as one command: the clock frozen at its start, nothing else running
//! meanwhile, its writes waking blocked clients once it returns. The VM, the sandbox and the
//! conversions are the `embedis-scripting` crate's; the gates a script's commands pass and the
//! VM's home are [`crate::services::script_host`]. Here: argument checks in Redis's order and words, the
//! script cache commands, and what a script's flags allow (`*_RO` refuses a script that may
//! write; a `no-writes` script or an `*_RO` call refuses write commands).

use bytes::Bytes;

use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, Begin, Find, KeySpec};
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::vm_slot::ScriptKind;
use crate::services::script_host::{split_keys, Permissions};

/// Which script an EVAL-family command names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Body,
    Sha,
}

fn eval(ctx: &mut Ctx<'_>) -> CmdResult {
    run_script(ctx, Source::Body, false)
}

fn evalsha(ctx: &mut Ctx<'_>) -> CmdResult {
    run_script(ctx, Source::Sha, false)
}

fn eval_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    run_script(ctx, Source::Body, true)
}

fn evalsha_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    run_script(ctx, Source::Sha, true)
}

const NO_SCRIPT: Error = Error::msg("NOSCRIPT No matching script. Please use EVAL.");

/// EVAL, EVALSHA and their read-only forms.
/// A script that declares `no-cluster` on a cluster node (Redis's `scriptPrepareForRun`).
pub(crate) const NO_CLUSTER: &str = "ERR Can not run script on cluster, 'no-cluster' flag is set.";

fn run_script(ctx: &mut Ctx<'_>, source: Source, ro_command: bool) -> CmdResult {
    // No script has a name of another length: Redis's `evalShaCommand` answers so before it
    // reads the number of keys.
    if source == Source::Sha && ctx.args[1].len() != 40 {
        return Err(NO_SCRIPT);
    }
    // The debugger lists the script's source, which only EVAL has (Redis 7.0's words).
    if source == Source::Sha && ctx.client.debug_scripts {
        return Err(Error::msg(
            "ERR Please use EVAL instead of EVALSHA for debugging",
        ));
    }
    // The arguments outlive the command (`ctx.args` is a shared slice): KEYS and ARGV are
    // slices of the request, no copies.
    let (keys, argv) = split_keys(ctx.args, ctx.int_arg(2)?)?;
    let mut vm = ctx.server.scripting.take()?;
    let result = run_in(ctx, &mut vm, source, ro_command, keys, argv);
    ctx.server.scripting.put_back(vm);
    result
}

fn run_in(
    ctx: &mut Ctx<'_>,
    vm: &mut embedis_scripting::ScriptVm,
    source: Source,
    ro_command: bool,
    keys: &[Bytes],
    argv: &[Bytes],
) -> CmdResult {
    // EVALSHA names its script by 40 hex digits in any case; the cache's names are lower case.
    // Looked up from a copy on the stack: no allocation per call.
    let mut folded = [0u8; 40];
    let loaded;
    let sha: &str = match source {
        Source::Body => {
            loaded = vm.load_script(&ctx.args[1]).map_err(Error::bytes)?;
            &loaded
        }
        Source::Sha => {
            let sha = &ctx.args[1];
            if sha.len() != 40 {
                return Err(NO_SCRIPT);
            }
            folded.copy_from_slice(sha);
            folded.make_ascii_lowercase();
            std::str::from_utf8(&folded).map_err(|_| NO_SCRIPT)?
        }
    };
    let Some(script) = vm.script(sha) else {
        return Err(NO_SCRIPT);
    };
    if script.flags.declared && script.flags.no_cluster && ctx.server.cluster.enabled {
        return Err(Error::msg(NO_CLUSTER));
    }
    // A script without a shebang on a stale replica that serves no stale data: EVAL itself
    // is `stale`, so the refusal comes here, as Redis's `scriptPrepareForRun` makes it (a
    // script with a shebang gets its flags' refusal before it runs).
    let stale = ctx.server.repl.link_down() && !ctx.server.config.replica_serve_stale_data;
    if stale && !script.flags.declared {
        return Err(Error::msg(crate::kernel::gates::MASTERDOWN_ERROR));
    }
    if ro_command && script.flags.declared && !script.flags.no_writes {
        return Err(Error::msg(
            "ERR Can not execute a script with write flag using *_ro command.",
        ));
    }
    let permissions = Permissions {
        read_only: ro_command || (script.flags.declared && script.flags.no_writes),
        allow_oom: script.flags.declared && script.flags.allow_oom,
        // A script without a shebang may touch keys of any slot, as in Redis 7.0.
        allow_cross_slot: !script.flags.declared || script.flags.allow_cross_slot_keys,
    };
    let Some(function) = vm.script_function(sha) else {
        return Err(NO_SCRIPT);
    };
    if ctx.client.debug_scripts {
        return run_debugged(ctx, vm, &function, sha, permissions, keys, argv);
    }
    crate::services::script_host::run_script(
        ctx,
        permissions,
        ScriptKind::Eval,
        sha,
        (0, 0),
        |host, out| vm.run(host, &function, sha, keys, argv, out),
    )
}

/// EVAL (or EVAL_RO) after SCRIPT DEBUG SYNC: the script runs under the Lua debugger, which
/// talks to the client over its socket until the script ends; the connection then closes
/// after the reply, as Redis ends a session.
#[allow(clippy::too_many_arguments)]
fn run_debugged(
    ctx: &mut Ctx<'_>,
    vm: &mut embedis_scripting::ScriptVm,
    function: &embedis_scripting::LuaFunction,
    sha: &str,
    permissions: Permissions,
    keys: &[Bytes],
    argv: &[Bytes],
) -> CmdResult {
    if !ctx.client.handle.is_debuggable() {
        ctx.client.debug_scripts = false;
        return Err(Error::msg(
            "ERR this connection cannot be debugged: SCRIPT DEBUG needs a plain TCP or unix \
             connection served by the main thread (not TLS, io_uring or io-threads)",
        ));
    }
    let source = ctx.args[1].clone();
    let threshold = ctx.server.config.busy_reply_threshold;
    let timeout = std::time::Duration::from_millis(if threshold > 0 { threshold } else { 5000 });
    ctx.server
        .log
        .warning("Redis synchronous debugging eval session started");
    let result = crate::services::script_host::run_script(
        ctx,
        permissions,
        ScriptKind::Eval,
        sha,
        (0, 0),
        |host, out| vm.run_debugged(host, function, sha, keys, argv, out, &source, timeout),
    );
    ctx.server
        .log
        .warning("Redis synchronous debugging eval session ended");
    ctx.client.debug_scripts = false;
    ctx.client.close_after_reply = true;
    result
}

/// SCRIPT DEBUG SYNC|NO: whether the client's next EVAL runs under the debugger. YES asks for
/// Redis's forked session, whose changes are thrown away when it ends: embedis has no forked
/// sessions, and debugging synchronously instead would keep changes the user expects gone, so
/// it is refused with a pointer to SYNC.
fn script_debug(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.in_exec() {
        return Err(Error::msg(
            "ERR SCRIPT DEBUG must be called outside a pipeline",
        ));
    }
    if ctx.arg_is(2, "no") {
        ctx.client.debug_scripts = false;
    } else if ctx.arg_is(2, "sync") {
        ctx.client.debug_scripts = true;
    } else if ctx.arg_is(2, "yes") {
        return Err(Error::msg(
            "ERR SCRIPT DEBUG YES (a forked session whose changes are discarded) is not \
             supported: use SCRIPT DEBUG SYNC, whose changes are kept",
        ));
    } else {
        return Err(Error::msg("ERR Use SCRIPT DEBUG YES/SYNC/NO"));
    }
    ctx.out.ok();
    Ok(())
}

fn script_load(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut vm = ctx.server.scripting.take()?;
    let loaded = vm.load_script(&ctx.args[2]);
    ctx.server.scripting.put_back(vm);
    let sha = loaded.map_err(Error::bytes)?;
    ctx.out.bulk(sha.as_bytes());
    Ok(())
}

fn script_exists(ctx: &mut Ctx<'_>) -> CmdResult {
    let vm = ctx.server.scripting.get();
    let found: Vec<bool> = ctx.args[2..]
        .iter()
        .map(|sha| {
            sha.len() == 40
                && vm.is_some_and(|vm| {
                    vm.script(&String::from_utf8_lossy(sha).to_ascii_lowercase())
                        .is_some()
                })
        })
        .collect();
    ctx.out.array(found.len());
    for f in found {
        ctx.out.integer(f as i64);
    }
    Ok(())
}

fn script_flush(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() > 3 || (ctx.argc() == 3 && !ctx.arg_is(2, "sync") && !ctx.arg_is(2, "async")) {
        return Err(Error::msg(
            "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
        ));
    }
    if let Some(vm) = ctx.server.scripting.get_mut() {
        vm.flush_scripts();
    }
    ctx.out.ok();
    Ok(())
}

/// SCRIPT KILL as a command: a script runs whole on the executor, so when this command runs
/// none is running. (While a script runs too long, the connection side answers SCRIPT KILL.)
fn script_kill(_ctx: &mut Ctx<'_>) -> CmdResult {
    Err(Error::msg("NOTBUSY No scripts in execution right now."))
}

fn script_help(ctx: &mut Ctx<'_>) -> CmdResult {
    const LINES: &[&str] = &[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed (SYNC only here).",
        "EXISTS <sha1> [<sha1> ...]",
        "    For each SHA1, 1 if the script is in the cache, else 0.",
        "FLUSH [ASYNC|SYNC]",
        "    Empty the script cache.",
        "KILL",
        "    Stop the running script, if it has not written anything.",
        "LOAD <script>",
        "    Compile a script into the cache without running it; reply its SHA1.",
        "HELP",
        "    Print this list.",
    ];
    ctx.out.array(LINES.len());
    for line in LINES {
        ctx.out.simple(line.as_bytes());
    }
    Ok(())
}

const SCRIPT_FLAGS: Flags = Flags::NOSCRIPT
    .union(Flags::STALE)
    .union(Flags::SKIP_MONITOR)
    .union(Flags::NO_MANDATORY_KEYS)
    .union(Flags::MOVABLE_KEYS);

/// The keys of EVAL and friends: `numkeys` at 2, then that many keys.
const fn script_keys(flags: u16) -> KeySpec {
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

const RW_KEYS: &[KeySpec] = &[script_keys(flag::RW | flag::ACCESS | flag::UPDATE)
    .notes("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE")];

const RW_KEYS_SHA: &[KeySpec] = &[script_keys(flag::RW | flag::ACCESS | flag::UPDATE)];

const RO_KEYS: &[KeySpec] = &[script_keys(flag::RO | flag::ACCESS)
    .notes("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS")];

const RO_KEYS_SHA: &[KeySpec] = &[script_keys(flag::RO | flag::ACCESS)];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("eval", -3, eval)
        .flags(SCRIPT_FLAGS.union(Flags::MAY_REPLICATE))
        .acl(Acl::SCRIPTING)
        .keys(RW_KEYS)
        .doc(
            "scripting",
            "2.6.0",
            "Depends on the script that is executed.",
            "Runs a Lua script on the server, caching it by its SHA1.",
            "script numkeys:integer [key...] [arg...]",
        ),
    CommandSpec::new("evalsha", -3, evalsha)
        .flags(SCRIPT_FLAGS.union(Flags::MAY_REPLICATE))
        .acl(Acl::SCRIPTING)
        .keys(RW_KEYS_SHA)
        .doc(
            "scripting",
            "2.6.0",
            "Depends on the script that is executed.",
            "Runs a cached Lua script named by its SHA1.",
            "sha1 numkeys:integer [key...] [arg...]",
        ),
    CommandSpec::new("eval_ro", -3, eval_ro)
        .flags(SCRIPT_FLAGS.union(Flags::READONLY))
        .acl(Acl::SCRIPTING)
        .keys(RO_KEYS)
        .doc(
            "scripting",
            "7.0.0",
            "Depends on the script that is executed.",
            "Runs a Lua script that may only read.",
            "script numkeys:integer [key...] [arg...]",
        ),
    CommandSpec::new("evalsha_ro", -3, evalsha_ro)
        .flags(SCRIPT_FLAGS.union(Flags::READONLY))
        .acl(Acl::SCRIPTING)
        .keys(RO_KEYS_SHA)
        .doc(
            "scripting",
            "7.0.0",
            "Depends on the script that is executed.",
            "Runs a cached Lua script, named by its SHA1, that may only read.",
            "sha1 numkeys:integer [key...] [arg...]",
        ),
    CommandSpec::container("script", SCRIPT_SUBCOMMANDS).doc(
        "scripting",
        "2.6.0",
        "Depends on subcommand.",
        "A container for the script cache commands.",
        "",
    ),
];

static SCRIPT_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("debug", 3, script_debug)
        .flags(Flags::NOSCRIPT)
        .acl(Acl::SCRIPTING)
        .doc(
            "scripting",
            "3.2.0",
            "O(1)",
            "Sets the debug mode of server-side Lua scripts.",
            "mode=(YES|SYNC|NO)",
        ),
    CommandSpec::new("exists", -3, script_exists)
        .flags(Flags::NOSCRIPT)
        .acl(Acl::SCRIPTING)
        .tips(&[
            "request_policy:all_shards",
            "response_policy:agg_logical_and",
        ])
        .doc(
            "scripting",
            "2.6.0",
            "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
            "Tells, for each SHA1, whether the script is in the cache.",
            "sha1...",
        ),
    CommandSpec::new("flush", -2, script_flush)
        .flags(Flags::NOSCRIPT)
        .acl(Acl::SCRIPTING)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "scripting",
            "2.6.0",
            "O(N) with N being the number of scripts in cache",
            "Empties the script cache.",
            "[flush-type=(ASYNC|SYNC)]",
        ),
    CommandSpec::new("help", 2, script_help)
        .flags(Flags::LOADING.union(Flags::STALE))
        .acl(Acl::SCRIPTING)
        .doc(
            "scripting",
            "5.0.0",
            "O(1)",
            "Lists the SCRIPT subcommands.",
            "",
        ),
    CommandSpec::new("kill", 2, script_kill)
        .flags(Flags::NOSCRIPT.union(Flags::ALLOW_BUSY))
        .acl(Acl::SCRIPTING)
        .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
        .doc(
            "scripting",
            "2.6.0",
            "O(1)",
            "Stops the running script if it has not written yet.",
            "",
        ),
    CommandSpec::new("load", 3, script_load)
        .flags(Flags::NOSCRIPT.union(Flags::STALE))
        .acl(Acl::SCRIPTING)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "scripting",
            "2.6.0",
            "O(N) with N being the length in bytes of the script body.",
            "Compiles a script into the cache without running it; answers its SHA1.",
            "script",
        ),
];
