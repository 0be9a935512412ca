//! The command table: one static description per command — name, arity, flags, key positions,
//! ACL categories, documentation and handler — from which everything about a command is derived.
//!
//! The executor's generic gates (unknown command, arity, authentication, and the later gates for
//! transactions, scripts and pub/sub) read the flags here instead of each handler checking for
//! itself; COMMAND INFO / DOCS / COUNT / LIST / GETKEYS and the README's list of supported
//! commands are rendered from the same entries, so documentation cannot drift from behaviour.
//!
//! Families declare their commands after their handlers (`commands/strings/mod.rs` ends with a
//! `COMMANDS` slice, and so on) with the const builder methods of [`CommandSpec`];
//! [`Registry::build`] gathers them into lookup tables with numeric ids for per-command
//! statistics. The table knows no family: the handlers' layer builds it once
//! (`crate::commands::registry`), the engine takes it from there and lends it down to every
//! command it runs ([`crate::kernel::call::Parts`], [`crate::kernel::ctx::Ctx`]), as Redis builds
//! `server.commands` at start-up.

pub mod docs;
pub mod keys;

use std::collections::HashMap;

use crate::base::compat::CompatVersion;
use crate::base::error::CmdResult;
use crate::kernel::ctx::Ctx;

pub use crate::base::flags::{Acl, Flags};
pub use keys::{Begin, Find, KeySpec};

/// A command's implementation.
pub type Handler = fn(&mut Ctx<'_>) -> CmdResult;

/// A command's own key finder: the (position, flags) of each key of one command line.
pub type KeysFn = fn(&[bytes::Bytes]) -> Vec<(usize, u16)>;

/// The static description of one command (or subcommand).
#[derive(Clone, Copy)]
pub struct CommandSpec {
    /// Lower-case name (`get`; for a subcommand just `get`, under its container `config`).
    pub name: &'static str,
    /// Redis's arity: N = exactly N arguments including the name, -N = at least N.
    pub arity: i32,
    pub flags: Flags,
    /// Explicit ACL categories (implicit ones are derived from the flags).
    pub acl: Acl,
    pub keys: &'static [KeySpec],
    /// Command tips (`nondeterministic_output`, `request_policy:all_shards`…).
    pub tips: &'static [&'static str],
    pub group: &'static str,
    pub since: &'static str,
    /// The versions this spec describes the command in, when its arity or arguments changed:
    /// from `from` ("" = `since`) to before `until` ("" = the newest). Such a command has one
    /// spec per span, under the same name (ZRANK: arity 3 until 7.2, -3 with WITHSCORE from
    /// 7.2); `since` stays the command's own, as COMMAND DOCS shows it.
    pub from: &'static str,
    pub until: &'static str,
    pub complexity: &'static str,
    pub summary: &'static str,
    /// The arguments in the documentation mini-language of [`docs`].
    pub syntax: &'static str,
    /// Subcommands of a container command (CONFIG, CLIENT, OBJECT…).
    pub subcommands: &'static [CommandSpec],
    /// `None` for containers, which only dispatch to subcommands.
    pub handler: Option<Handler>,
    /// For key specs flagged `variable_flags`: the flags a particular command line really has
    /// (Redis's per-command getkeys procedures; SET is `OW update` unless it has GET).
    pub key_flags: Option<fn(&[bytes::Bytes], u16) -> u16>,
    /// For commands whose keys the specs cannot locate (an `unknown` spec: SORT's STORE may
    /// be anywhere): the positions and flags of the keys of one command line (Redis's
    /// getkeys procedure), which COMMAND GETKEYS uses instead of the specs.
    pub keys_fn: Option<KeysFn>,
    /// The module a command belongs to ("" for Redis's own commands): Redis 8's vector set
    /// commands are the built-in `vectorset` module's, and show it (see [`CommandSpec::module`]).
    pub module: &'static str,
}

impl CommandSpec {
    pub const fn new(name: &'static str, arity: i32, handler: Handler) -> Self {
        CommandSpec {
            name,
            arity,
            flags: Flags::NONE,
            acl: Acl::NONE,
            keys: &[],
            tips: &[],
            group: "generic",
            since: "1.0.0",
            from: "",
            until: "",
            complexity: "",
            summary: "",
            syntax: "",
            subcommands: &[],
            handler: Some(handler),
            key_flags: None,
            keys_fn: None,
            module: "",
        }
    }

    /// A container: `name subcommand …` dispatches to `subcommands`.
    pub const fn container(name: &'static str, subcommands: &'static [CommandSpec]) -> Self {
        CommandSpec {
            name,
            arity: -2,
            flags: Flags::NONE,
            acl: Acl::NONE,
            keys: &[],
            tips: &[],
            group: "generic",
            since: "1.0.0",
            from: "",
            until: "",
            complexity: "",
            summary: "",
            syntax: "",
            subcommands,
            handler: None,
            key_flags: None,
            keys_fn: None,
            module: "",
        }
    }

    pub const fn flags(mut self, flags: Flags) -> Self {
        self.flags = flags;
        self
    }

    pub const fn acl(mut self, acl: Acl) -> Self {
        self.acl = acl;
        self
    }

    pub const fn keys(mut self, keys: &'static [KeySpec]) -> Self {
        self.keys = keys;
        self
    }

    pub const fn keys_fn(mut self, f: KeysFn) -> Self {
        self.keys_fn = Some(f);
        self
    }

    pub const fn key_flags(mut self, f: fn(&[bytes::Bytes], u16) -> u16) -> Self {
        self.key_flags = Some(f);
        self
    }

    pub const fn tips(mut self, tips: &'static [&'static str]) -> Self {
        self.tips = tips;
        self
    }

    /// Documentation: group, version introduced, complexity, one-line summary, argument syntax.
    pub const fn doc(
        mut self,
        group: &'static str,
        since: &'static str,
        complexity: &'static str,
        summary: &'static str,
        syntax: &'static str,
    ) -> Self {
        self.group = group;
        self.since = since;
        self.complexity = complexity;
        self.summary = summary;
        self.syntax = syntax;
        self
    }

    /// The command is a module's, as Redis registers a module's commands: flagged `module`,
    /// named in upper case as the module spelled it (COMMAND INFO, INFO's `cmdstat_VADD`,
    /// NOPERM errors, ACL LOG), in no ACL category but `@all` (a module that declares none gets
    /// none, not even those its flags imply), and documented only by group and module.
    pub const fn module(mut self, module: &'static str) -> Self {
        self.module = module;
        self.flags = self.flags.union(Flags::MODULE);
        self
    }

    /// The spec describes the command only in versions before `version` (see `until`).
    pub const fn until(mut self, version: &'static str) -> Self {
        self.until = version;
        self
    }

    /// The spec describes the command only from `version` on (see `from`).
    pub const fn from(mut self, version: &'static str) -> Self {
        self.from = version;
        self
    }

    /// True if this spec describes the command in `version`.
    pub fn in_version(&self, version: CompatVersion) -> bool {
        let from = if self.from.is_empty() {
            self.since
        } else {
            self.from
        };
        version.spans(from, self.until)
    }
}

/// A command as registered: its spec plus what is derived from it once.
pub struct Command {
    pub spec: &'static CommandSpec,
    /// `get`, or `config|get` for a subcommand.
    pub full_name: String,
    /// Index into per-command statistics.
    pub id: usize,
    pub parent: Option<usize>,
    pub subcommands: HashMap<Vec<u8>, usize>,
    /// Flags including the derived `movablekeys`.
    pub flags: Flags,
    pub acl: Acl,
    /// COMMAND INFO's first key, last key and step (Redis's legacy range).
    pub legacy_range: (i32, i32, i32),
}

impl Command {
    /// True if `argc` arguments (name included) satisfy the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let arity = self.spec.arity;
        if arity >= 0 {
            argc == arity as usize
        } else {
            argc >= (-arity) as usize
        }
    }

    pub fn is_container(&self) -> bool {
        self.spec.handler.is_none()
    }

    /// True if some key of the command line matches the glob `pattern` (fault rules narrowed to
    /// keys, in the engine's fault gate and in `redis.call`). A line of the wrong arity has no
    /// keys.
    pub fn any_key_matches(&self, args: &[bytes::Bytes], pattern: &[u8]) -> bool {
        self.arity_ok(args.len())
            && self
                .spec
                .keys
                .iter()
                .filter(|spec| spec.flags & keys::flag::NOT_KEY == 0)
                .flat_map(|spec| spec.key_positions(args))
                .filter_map(|i| args.get(i))
                .any(|key| embedis_datatypes::glob::matches(pattern, key, false))
    }

    /// The keys of one command line — (position, key-spec flags) — as Redis's
    /// `getKeysFromCommandWithSpecs` finds them for ACL checks and COMMAND GETKEYS: the
    /// command's own key finder where it has one, else every key spec that names keys (not
    /// shard channels), with the flags refined per line where a spec's flags vary. A line that
    /// one spec finds malformed has no keys (Redis's `invalid_spec`).
    pub fn keys(&self, args: &[bytes::Bytes]) -> Vec<(usize, u16)> {
        if let Some(find) = self.spec.keys_fn {
            return find(args);
        }
        let mut found = Vec::new();
        for spec in self.spec.keys {
            if spec.flags & keys::flag::NOT_KEY != 0 {
                continue;
            }
            let flags = match self.spec.key_flags {
                Some(refine) if spec.flags & keys::flag::VARIABLE_FLAGS != 0 => {
                    refine(args, spec.flags)
                }
                _ => spec.flags,
            };
            let Some(positions) = spec.strict_key_positions(args) else {
                return Vec::new();
            };
            found.extend(positions.into_iter().map(|at| (at, flags)));
        }
        found
    }

    /// Calls `visit` with each key of the command line (position, flags), as [`Command::keys`]
    /// finds them, without collecting them unless the command has its own key finder; stops
    /// and returns false when `visit` does.
    pub fn for_each_key(
        &self,
        args: &[bytes::Bytes],
        mut visit: impl FnMut(usize, u16) -> bool,
    ) -> bool {
        if self.spec.keys_fn.is_some() {
            return self.keys(args).into_iter().all(|(at, f)| visit(at, f));
        }
        // A malformed line has no keys at all (see `keys`): check every spec first.
        let specs = self
            .spec
            .keys
            .iter()
            .filter(|s| s.flags & keys::flag::NOT_KEY == 0);
        if specs
            .clone()
            .any(|spec| spec.positions(args, true).is_none())
        {
            return true;
        }
        for spec in specs {
            let flags = match self.spec.key_flags {
                Some(refine) if spec.flags & keys::flag::VARIABLE_FLAGS != 0 => {
                    refine(args, spec.flags)
                }
                _ => spec.flags,
            };
            for at in spec.positions(args, true).into_iter().flatten() {
                if !visit(at, flags) {
                    return false;
                }
            }
        }
        true
    }

    /// The position and flags of the one key of a command whose only key spec names a single
    /// argument at a fixed index (GET, SET, INCR…): the common case, found without allocating
    /// (SET's flags refined by its own procedure, as [`Command::keys`] does).
    #[inline]
    pub fn single_key(&self, args: &[bytes::Bytes]) -> Option<(usize, u16)> {
        if self.spec.keys_fn.is_some() {
            return None;
        }
        match self.spec.keys {
            [spec] if spec.flags & keys::flag::NOT_KEY == 0 => match (spec.begin, spec.find) {
                (Begin::Index(at), Find::Range { last_key: 0, .. })
                    if (at as usize) < args.len() =>
                {
                    let flags = match self.spec.key_flags {
                        Some(refine) if spec.flags & keys::flag::VARIABLE_FLAGS != 0 => {
                            refine(args, spec.flags)
                        }
                        _ => spec.flags,
                    };
                    Some((at as usize, flags))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// Every command, by id and by name. Every version's table holds every command under the same
/// ids (so statistics and ACL bits mean the same everywhere); only the names of the commands
/// the version has can be looked up, and only those are listed.
pub struct Registry {
    pub commands: Vec<Command>,
    top_level: HashMap<Vec<u8>, usize, ahash::RandomState>,
    /// The Redis version whose commands this table shows.
    pub version: CompatVersion,
}

/// Why a command name could not be resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    UnknownCommand,
    /// The container exists but not this subcommand.
    UnknownSubcommand(usize),
}

impl Registry {
    /// Builds the table from every family's entries, in order (the handlers' layer assembles
    /// the families: see `crate::commands::registry`).
    /// Only the commands `version` has are found by name.
    pub fn build(families: &[&'static [CommandSpec]], version: CompatVersion) -> Registry {
        let mut registry = Registry {
            commands: Vec::new(),
            top_level: HashMap::with_hasher(Default::default()),
            version,
        };
        for family in families {
            for spec in family.iter() {
                let id = registry.add(spec, None);
                if !spec.in_version(version) {
                    continue;
                }
                let previous = registry.top_level.insert(spec.name.as_bytes().to_vec(), id);
                assert!(previous.is_none(), "command {} registered twice", spec.name);
            }
        }
        registry
    }

    /// True if this table's version has the command (and, for a subcommand, its parent).
    pub fn has(&self, command: &Command) -> bool {
        let here = |spec: &CommandSpec| spec.in_version(self.version);
        here(command.spec) && command.parent.is_none_or(|p| here(self.commands[p].spec))
    }

    fn add(&mut self, spec: &'static CommandSpec, parent: Option<usize>) -> usize {
        let id = self.commands.len();
        let full_name = match parent {
            Some(p) => format!("{}|{}", self.commands[p].spec.name, spec.name),
            None if !spec.module.is_empty() => spec.name.to_ascii_uppercase(),
            None => spec.name.to_string(),
        };
        let acl = if spec.module.is_empty() {
            spec.acl.with_implicit(spec.flags)
        } else {
            spec.acl
        };
        let (legacy_range, movable) = keys::legacy_range(spec.keys);
        let flags = if movable {
            spec.flags | Flags::MOVABLE_KEYS
        } else {
            spec.flags
        };
        self.commands.push(Command {
            spec,
            full_name,
            id,
            parent,
            subcommands: HashMap::new(),
            flags,
            acl,
            legacy_range,
        });
        for sub in spec.subcommands {
            let sub_id = self.add(sub, Some(id));
            if sub.in_version(self.version) {
                self.commands[id]
                    .subcommands
                    .insert(sub.name.as_bytes().to_vec(), sub_id);
            }
        }
        id
    }

    /// Resolves a request's command (and subcommand), as Redis's `lookupCommand` does.
    pub fn lookup(&self, args: &[bytes::Bytes]) -> Result<&Command, Lookup> {
        let name = args.first().map(|a| a.as_ref()).unwrap_or(b"");
        let base = self.by_name(name).ok_or(Lookup::UnknownCommand)?;
        if args.len() == 1 || base.subcommands.is_empty() {
            return Ok(base);
        }
        let sub = lowercase(&args[1]);
        match base.subcommands.get(&sub) {
            Some(&id) => Ok(&self.commands[id]),
            None => Err(Lookup::UnknownSubcommand(base.id)),
        }
    }

    /// `rename-command name new-name` (Redis's config line): the command answers to the new
    /// name only, or to none if it is empty. Errors in Redis's words.
    pub fn rename(&mut self, name: &str, new_name: &str) -> Result<(), &'static str> {
        let old = lowercase(name.as_bytes());
        let id = match self.top_level.get(&old) {
            Some(&id) if self.has(&self.commands[id]) => id,
            _ => return Err("No such command in rename-command"),
        };
        self.top_level.remove(&old);
        if new_name.is_empty() {
            return Ok(());
        }
        let new = lowercase(new_name.as_bytes());
        if self.by_name(&new).is_some() {
            return Err("Target command name already exists");
        }
        self.top_level.insert(new, id);
        Ok(())
    }

    /// A top-level command by (case-insensitive) name.
    pub fn by_name(&self, name: &[u8]) -> Option<&Command> {
        // Lower-case into a stack buffer: no allocation on the hot path.
        let mut buf = [0u8; 32];
        let folded = buf.get_mut(..name.len())?;
        for (dst, src) in folded.iter_mut().zip(name) {
            *dst = src.to_ascii_lowercase();
        }
        self.top_level.get(&*folded).map(|&id| &self.commands[id])
    }

    /// A command or subcommand by full name (`config|get`), case-insensitively.
    pub fn by_full_name(&self, name: &[u8]) -> Option<&Command> {
        let lower = lowercase(name);
        match lower.iter().position(|&b| b == b'|') {
            None => self.by_name(&lower),
            Some(bar) => {
                let parent = self.by_name(&lower[..bar])?;
                parent
                    .subcommands
                    .get(&lower[bar + 1..])
                    .map(|&id| &self.commands[id])
            }
        }
    }

    /// Top-level commands the version has, in table order.
    pub fn top_level(&self) -> impl Iterator<Item = &Command> {
        self.commands
            .iter()
            .filter(|c| c.parent.is_none() && self.has(c))
    }

    /// The subcommands of `command` the version has.
    pub fn subcommands_of<'a>(&'a self, command: &'a Command) -> impl Iterator<Item = &'a Command> {
        self.commands
            .iter()
            .filter(move |c| c.parent == Some(command.id) && self.has(c))
    }
}

fn lowercase(bytes: &[u8]) -> Vec<u8> {
    bytes.to_ascii_lowercase()
}
