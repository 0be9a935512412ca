//! COMMAND: the command table describing itself — every command (COMMAND, COMMAND INFO), how
//! many (COUNT), their documentation (DOCS), names by filter (LIST), and where the keys are in a
//! given command line (GETKEYS, GETKEYSANDFLAGS).
//!
//! Everything is rendered from the command table ([`crate::commands::registry`]) by [`crate::kernel::table::docs`], so the
//! answers cannot drift from what the executor does. redis-cli asks COMMAND DOCS at start-up to
//! build its hints.

use bytes::Bytes;
use embedis_datatypes::glob;

use crate::base::error::{CmdResult, Error};
use crate::commands::common::write_help;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::docs::{write_docs, write_info};
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, Command, CommandSpec, Flags, Registry};

const HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Describes every command, as COMMAND INFO does.",
    "COUNT",
    "    Returns how many commands there are.",
    "DOCS [<command-name> ...]",
    "    Returns the documentation of the named commands, or of all of them.",
    "GETKEYS <full-command>",
    "    Returns the keys of a full command line.",
    "GETKEYSANDFLAGS <full-command>",
    "    Returns the keys of a full command line with their flags.",
    "INFO [<command-name> ...]",
    "    Describes the named commands, or all of them.",
    "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
    "    Returns the command names, optionally only those matching the filter.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

fn all(ctx: &mut Ctx<'_>) -> CmdResult {
    let registry = ctx.registry;
    let commands: Vec<&Command> = registry.top_level().collect();
    ctx.out.array(commands.len());
    for command in commands {
        write_info(&mut ctx.out, registry, command);
    }
    Ok(())
}

fn count(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.integer(ctx.registry.top_level().count() as i64);
    Ok(())
}

fn info(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() == 2 {
        return all(ctx);
    }
    let registry = ctx.registry;
    ctx.out.array(ctx.argc() - 2);
    for name in &ctx.args[2..] {
        match registry.by_full_name(name) {
            Some(command) => write_info(&mut ctx.out, registry, command),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

fn docs(ctx: &mut Ctx<'_>) -> CmdResult {
    let registry = ctx.registry;
    let commands: Vec<&Command> = if ctx.argc() == 2 {
        registry.top_level().collect()
    } else {
        // Unknown names are left out of the map.
        ctx.args[2..]
            .iter()
            .filter_map(|name| registry.by_full_name(name))
            .collect()
    };
    ctx.out.map(commands.len());
    for command in commands {
        ctx.out.bulk(command.full_name.as_bytes());
        write_docs(&mut ctx.out, registry, command);
    }
    Ok(())
}

/// Every command and subcommand the server's version has, as COMMAND LIST names them.
fn every_name(registry: &'static Registry) -> impl Iterator<Item = &'static Command> {
    registry.commands.iter().filter(|c| registry.has(c))
}

fn list(ctx: &mut Ctx<'_>) -> CmdResult {
    let names: Vec<&str> = match ctx.argc() {
        2 => every_name(ctx.registry)
            .map(|c| c.full_name.as_str())
            .collect(),
        5 if ctx.arg_is(2, "filterby") => {
            let value = ctx.arg(4);
            if ctx.arg_is(3, "module") {
                // The built-in module's commands (Redis finds modules by name in any case).
                every_name(ctx.registry)
                    .filter(|c| {
                        !c.spec.module.is_empty()
                            && c.spec.module.as_bytes().eq_ignore_ascii_case(value)
                    })
                    .map(|c| c.full_name.as_str())
                    .collect()
            } else if ctx.arg_is(3, "aclcat") {
                let category = value.to_ascii_lowercase();
                match Acl::NAMES.iter().position(|n| n.as_bytes() == category) {
                    Some(bit) => every_name(ctx.registry)
                        .filter(|c| c.acl.0 & (1 << bit) != 0)
                        .map(|c| c.full_name.as_str())
                        .collect(),
                    None => Vec::new(),
                }
            } else if ctx.arg_is(3, "pattern") {
                every_name(ctx.registry)
                    .filter(|c| glob::matches(value, c.full_name.as_bytes(), true))
                    .map(|c| c.full_name.as_str())
                    .collect()
            } else {
                return Err(Error::Syntax);
            }
        }
        _ => return Err(Error::Syntax),
    };
    ctx.out.array(names.len());
    for name in names {
        ctx.out.bulk(name.as_bytes());
    }
    Ok(())
}

/// The keys of the command line in `args` (COMMAND GETKEYS's arguments), with the flags of the
/// key spec that found each, after Redis's checks and with its error texts.
fn keys_of(registry: &Registry, args: &[Bytes]) -> CmdResult<Vec<(Bytes, u16)>> {
    let command = registry
        .lookup(args)
        .map_err(|_| Error::msg("ERR Invalid command specified"))?;
    let specs = command.spec.keys;
    // Specs of names that are not keys (shard channels) do not count, as in Redis.
    if specs.iter().all(|spec| spec.flags & flag::NOT_KEY != 0) {
        return Err(Error::msg("ERR The command has no key arguments"));
    }
    if !command.arity_ok(args.len()) {
        return Err(Error::msg(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    if let Some(find) = command.spec.keys_fn {
        return Ok(find(args)
            .into_iter()
            .map(|(at, flags)| (args[at].clone(), flags))
            .collect());
    }
    let mut keys = Vec::new();
    for spec in specs {
        let flags = match command.spec.key_flags {
            Some(refine) if spec.flags & flag::VARIABLE_FLAGS != 0 => refine(args, spec.flags),
            _ => spec.flags,
        };
        // One malformed spec voids them all, as in Redis (whose key-finding callbacks, tried
        // next, refuse the same lines).
        let Some(positions) = spec.strict_key_positions(args) else {
            keys.clear();
            break;
        };
        for position in positions {
            keys.push((args[position].clone(), flags));
        }
    }
    if keys.is_empty() && !command.flags.contains(Flags::NO_MANDATORY_KEYS) {
        return Err(Error::msg("ERR Invalid arguments specified for command"));
    }
    Ok(keys)
}

fn getkeys(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = keys_of(ctx.registry, &ctx.args[2..])?;
    ctx.out.array(keys.len());
    for (key, _) in keys {
        ctx.out.bulk(&key);
    }
    Ok(())
}

fn getkeysandflags(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = keys_of(ctx.registry, &ctx.args[2..])?;
    ctx.out.array(keys.len());
    for (key, flags) in keys {
        ctx.out.array(2);
        ctx.out.bulk(&key);
        let names: Vec<&str> = flag::NAMES
            .iter()
            .filter(|(f, _)| flags & f != 0)
            .map(|(_, n)| *n)
            .collect();
        ctx.out.set(names.len());
        for name in names {
            ctx.out.simple(name.as_bytes());
        }
    }
    Ok(())
}

const BASE: Flags = Flags::LOADING.union(Flags::STALE);

const fn sub(
    name: &'static str,
    arity: i32,
    handler: crate::kernel::table::Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, handler)
        .flags(BASE)
        .acl(Acl::CONNECTION)
}

static SUBCOMMANDS: &[CommandSpec] = &[
    sub("count", 2, count).doc(
        "server",
        "2.8.13",
        "O(1)",
        "Returns how many commands the server has.",
        "",
    ),
    sub("docs", -2, docs)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "server",
            "7.0.0",
            "O(N) where N is the number of commands to look up",
            "Returns the documentation of the named commands, or of all of them.",
            "[command-name...]",
        ),
    sub("getkeys", -4, getkeys).doc(
        "server",
        "2.8.13",
        "O(N) where N is the number of arguments to the command",
        "Returns the keys of a full command line.",
        // Redis 7.0 documents no arguments for it (7.2 added them).
        "",
    ),
    sub("getkeysandflags", -4, getkeysandflags).doc(
        "server",
        "7.0.0",
        "O(N) where N is the number of arguments to the command",
        "Returns the keys of a full command line, each with how the command uses it.",
        // Redis 7.0 documents no arguments for it (7.2 added them).
        "",
    ),
    sub("help", 2, help).doc(
        "server",
        "5.0.0",
        "O(1)",
        "Lists the COMMAND subcommands.",
        "",
    ),
    sub("info", -2, info)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "server",
            "2.8.13",
            "O(N) where N is the number of commands to look up",
            "Describes the named commands, or all of them: arity, flags, keys, categories.",
            "[command-name...]",
        ),
    sub("list", -2, list)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "server",
            "7.0.0",
            "O(N) where N is the total number of Redis commands",
            "Returns the names of the commands, optionally only those matching a filter.",
            "[FILTERBY filterby=(MODULE module-name|ACLCAT category|PATTERN pattern:pattern)]",
        ),
];

/// COMMAND alone lists everything; with a subcommand it dispatches like any container.
pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    handler: Some(all),
    arity: -1,
    ..CommandSpec::container("command", SUBCOMMANDS)
        .flags(BASE)
        .acl(Acl::CONNECTION)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "server",
            "2.8.13",
            "O(N) where N is the total number of Redis commands",
            "Describes every command the server has.",
            "",
        )
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::registry;
    use crate::kernel::table::docs::write_docs;
    use embedis_protocol::{decode_value, Value, Version, Writer};

    fn docs_of(name: &str, version: Version) -> Value {
        let registry = registry();
        let command = registry.by_full_name(name.as_bytes()).unwrap();
        let mut buf = bytes::BytesMut::new();
        write_docs(&mut Writer::new(&mut buf, version), registry, command);
        let (value, used) = decode_value(&buf.freeze()).unwrap().unwrap();
        assert!(used > 0);
        value
    }

    fn map_get<'a>(map: &'a Value, key: &str) -> Option<&'a Value> {
        match map {
            Value::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| matches!(k, Value::Bulk(b) if b.as_ref() == key.as_bytes()))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    #[test]
    fn every_command_has_well_formed_docs() {
        let registry = registry();
        for command in &registry.commands {
            let spec = command.spec;
            assert!(
                crate::kernel::table::docs::parse(spec.syntax, spec.keys.len()).is_ok(),
                "{}: syntax {:?} does not parse",
                command.full_name,
                spec.syntax
            );
            let docs = docs_of(&command.full_name, Version::Resp3);
            let fields: &[&str] = if spec.module.is_empty() {
                &["summary", "since", "group"]
            } else {
                &["group", "module"]
            };
            for &field in fields {
                assert!(
                    map_get(&docs, field).is_some(),
                    "{} lacks {field}",
                    command.full_name
                );
            }
            assert!(
                !spec.summary.is_empty(),
                "{} has no summary",
                command.full_name
            );
        }
    }

    #[test]
    fn client_docs_list_subcommands_and_arguments() {
        let docs = docs_of("client", Version::Resp3);
        let Some(Value::Map(subs)) = map_get(&docs, "subcommands") else {
            panic!("no subcommands: {docs:?}");
        };
        assert!(subs
            .iter()
            .any(|(k, _)| matches!(k, Value::Bulk(b) if b.as_ref() == b"client|kill")));
        let kill = docs_of("client|kill", Version::Resp3);
        let Some(Value::Array(args)) = map_get(&kill, "arguments") else {
            panic!("no arguments: {kill:?}");
        };
        assert_eq!(args.len(), 1);
        assert!(
            matches!(map_get(&args[0], "type"), Some(Value::Bulk(b)) if b.as_ref() == b"oneof")
        );
    }

    #[test]
    fn list_filters() {
        let names: Vec<&str> = every_name(registry())
            .filter(|c| glob::matches(b"client|*", c.full_name.as_bytes(), true))
            .map(|c| c.full_name.as_str())
            .collect();
        assert!(names.contains(&"client|list"));
        assert!(!names.contains(&"client"));
    }

    #[test]
    fn getkeys_errors() {
        let args = |s: &str| -> Vec<Bytes> {
            s.split(' ')
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect()
        };
        assert_eq!(
            keys_of(registry(), &args("nosuchcommand a"))
                .unwrap_err()
                .to_string(),
            "ERR Invalid command specified"
        );
        assert_eq!(
            keys_of(registry(), &args("ping a"))
                .unwrap_err()
                .to_string(),
            "ERR The command has no key arguments"
        );
        assert_eq!(
            keys_of(registry(), &args("config get x"))
                .unwrap_err()
                .to_string(),
            "ERR The command has no key arguments"
        );
    }
}
