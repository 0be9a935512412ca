//! The command table: one static description per command — name, arity, flags, key positions,
//! ACL categories, documentation and handler — from which everything about a command is derived.
//!
//! The executor's generic gates (unknown command, arity, authentication, and the later gates for
//! transactions, scripts and pub/sub) read the flags here instead of each handler checking for
//! itself; COMMAND INFO / DOCS / COUNT / LIST / GETKEYS and the README's list of supported
//! commands are rendered from the same entries, so documentation cannot drift from behaviour.
//!
//! Families declare their commands next to their handlers (`commands/strings.rs` has a
//! `COMMANDS` slice, and so on) with the const builder methods of [`CommandSpec`];
//! [`registry`] gathers them once into lookup tables with numeric ids for per-command statistics.

pub mod docs;
pub mod keys;

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::ctx::Ctx;
use crate::error::CmdResult;

pub use keys::{Begin, Find, KeySpec};

/// A command's implementation.
pub type Handler = fn(&mut Ctx<'_>) -> CmdResult;

/// Command flags, named as COMMAND INFO names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags(pub u32);

impl Flags {
    pub const NONE: Flags = Flags(0);
    pub const WRITE: Flags = Flags(1 << 0);
    pub const READONLY: Flags = Flags(1 << 1);
    pub const DENYOOM: Flags = Flags(1 << 2);
    pub const ADMIN: Flags = Flags(1 << 4);
    pub const PUBSUB: Flags = Flags(1 << 5);
    pub const NOSCRIPT: Flags = Flags(1 << 6);
    pub const BLOCKING: Flags = Flags(1 << 7);
    pub const LOADING: Flags = Flags(1 << 8);
    pub const STALE: Flags = Flags(1 << 9);
    pub const SKIP_MONITOR: Flags = Flags(1 << 10);
    pub const SKIP_SLOWLOG: Flags = Flags(1 << 11);
    pub const ASKING: Flags = Flags(1 << 12);
    pub const FAST: Flags = Flags(1 << 13);
    pub const NO_AUTH: Flags = Flags(1 << 14);
    pub const NO_MANDATORY_KEYS: Flags = Flags(1 << 15);
    pub const NO_ASYNC_LOADING: Flags = Flags(1 << 16);
    pub const NO_MULTI: Flags = Flags(1 << 17);
    pub const MOVABLE_KEYS: Flags = Flags(1 << 18);
    pub const ALLOW_BUSY: Flags = Flags(1 << 19);
    /// Hidden from COMMAND INFO, as in Redis.
    pub const MAY_REPLICATE: Flags = Flags(1 << 24);
    /// Hidden: refused unless enable-debug-command (or the like) allows it.
    pub const PROTECTED: Flags = Flags(1 << 25);
    pub const SENTINEL: Flags = Flags(1 << 26);

    /// The names COMMAND INFO shows, in Redis's order (hidden flags left out).
    pub const NAMES: &'static [(Flags, &'static str)] = &[
        (Flags::WRITE, "write"),
        (Flags::READONLY, "readonly"),
        (Flags::DENYOOM, "denyoom"),
        (Flags::ADMIN, "admin"),
        (Flags::PUBSUB, "pubsub"),
        (Flags::NOSCRIPT, "noscript"),
        (Flags::BLOCKING, "blocking"),
        (Flags::LOADING, "loading"),
        (Flags::STALE, "stale"),
        (Flags::SKIP_MONITOR, "skip_monitor"),
        (Flags::SKIP_SLOWLOG, "skip_slowlog"),
        (Flags::ASKING, "asking"),
        (Flags::FAST, "fast"),
        (Flags::NO_AUTH, "no_auth"),
        (Flags::NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (Flags::NO_ASYNC_LOADING, "no_async_loading"),
        (Flags::NO_MULTI, "no_multi"),
        (Flags::MOVABLE_KEYS, "movablekeys"),
        (Flags::ALLOW_BUSY, "allow_busy"),
    ];

    pub const fn union(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// These flags less those of `other`.
    pub const fn without(self, other: Flags) -> Flags {
        Flags(self.0 & !other.0)
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        self.union(rhs)
    }
}

/// ACL categories, as a bit set in Redis's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Acl(pub u32);

impl Acl {
    pub const NONE: Acl = Acl(0);
    pub const KEYSPACE: Acl = Acl(1 << 0);
    pub const READ: Acl = Acl(1 << 1);
    pub const WRITE: Acl = Acl(1 << 2);
    pub const SET: Acl = Acl(1 << 3);
    pub const SORTEDSET: Acl = Acl(1 << 4);
    pub const LIST: Acl = Acl(1 << 5);
    pub const HASH: Acl = Acl(1 << 6);
    pub const STRING: Acl = Acl(1 << 7);
    pub const BITMAP: Acl = Acl(1 << 8);
    pub const HYPERLOGLOG: Acl = Acl(1 << 9);
    pub const GEO: Acl = Acl(1 << 10);
    pub const STREAM: Acl = Acl(1 << 11);
    pub const PUBSUB: Acl = Acl(1 << 12);
    pub const ADMIN: Acl = Acl(1 << 13);
    pub const FAST: Acl = Acl(1 << 14);
    pub const SLOW: Acl = Acl(1 << 15);
    pub const BLOCKING: Acl = Acl(1 << 16);
    pub const DANGEROUS: Acl = Acl(1 << 17);
    pub const CONNECTION: Acl = Acl(1 << 18);
    pub const TRANSACTION: Acl = Acl(1 << 19);
    pub const SCRIPTING: Acl = Acl(1 << 20);

    pub const NAMES: &'static [&'static str] = &[
        "keyspace",
        "read",
        "write",
        "set",
        "sortedset",
        "list",
        "hash",
        "string",
        "bitmap",
        "hyperloglog",
        "geo",
        "stream",
        "pubsub",
        "admin",
        "fast",
        "slow",
        "blocking",
        "dangerous",
        "connection",
        "transaction",
        "scripting",
    ];

    pub const fn union(self, other: Acl) -> Acl {
        Acl(self.0 | other.0)
    }

    pub const fn contains(self, other: Acl) -> bool {
        self.0 & other.0 == other.0
    }

    /// The categories a command has, adding the ones Redis derives from its flags
    /// (`setImplicitACLCategories`).
    pub fn with_implicit(self, flags: Flags) -> Acl {
        let mut acl = self;
        if flags.contains(Flags::WRITE) {
            acl = acl | Acl::WRITE;
        }
        if flags.contains(Flags::READONLY) && !acl.contains(Acl::SCRIPTING) {
            acl = acl | Acl::READ;
        }
        if flags.contains(Flags::ADMIN) {
            acl = acl | Acl::ADMIN | Acl::DANGEROUS;
        }
        if flags.contains(Flags::PUBSUB) {
            acl = acl | Acl::PUBSUB;
        }
        if flags.contains(Flags::FAST) {
            acl = acl | Acl::FAST;
        }
        if flags.contains(Flags::BLOCKING) {
            acl = acl | Acl::BLOCKING;
        }
        if !acl.contains(Acl::FAST) {
            acl = acl | Acl::SLOW;
        }
        acl
    }

    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Acl::NAMES
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, n)| *n)
    }
}

impl std::ops::BitOr for Acl {
    type Output = Acl;
    fn bitor(self, rhs: Acl) -> Acl {
        self.union(rhs)
    }
}

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
            complexity: "",
            summary: "",
            syntax: "",
            subcommands: &[],
            handler: Some(handler),
            key_flags: None,
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
            complexity: "",
            summary: "",
            syntax: "",
            subcommands,
            handler: None,
            key_flags: None,
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
}

/// Every command, by id and by name.
pub struct Registry {
    pub commands: Vec<Command>,
    top_level: HashMap<Vec<u8>, usize, ahash::RandomState>,
}

/// Why a command name could not be resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    UnknownCommand,
    /// The container exists but not this subcommand.
    UnknownSubcommand(usize),
}

impl Registry {
    fn build(families: &[&'static [CommandSpec]]) -> Registry {
        let mut registry = Registry {
            commands: Vec::new(),
            top_level: HashMap::with_hasher(Default::default()),
        };
        for family in families {
            for spec in family.iter() {
                let id = registry.add(spec, None);
                let previous = registry.top_level.insert(spec.name.as_bytes().to_vec(), id);
                assert!(previous.is_none(), "command {} registered twice", spec.name);
            }
        }
        registry
    }

    fn add(&mut self, spec: &'static CommandSpec, parent: Option<usize>) -> usize {
        let id = self.commands.len();
        let full_name = match parent {
            Some(p) => format!("{}|{}", self.commands[p].spec.name, spec.name),
            None => spec.name.to_string(),
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
            acl: spec.acl.with_implicit(spec.flags),
            legacy_range,
        });
        for sub in spec.subcommands {
            let sub_id = self.add(sub, Some(id));
            self.commands[id]
                .subcommands
                .insert(sub.name.as_bytes().to_vec(), sub_id);
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

    /// Top-level commands in table order.
    pub fn top_level(&self) -> impl Iterator<Item = &Command> {
        self.commands.iter().filter(|c| c.parent.is_none())
    }

    pub fn subcommands_of<'a>(&'a self, command: &'a Command) -> impl Iterator<Item = &'a Command> {
        self.commands
            .iter()
            .filter(move |c| c.parent == Some(command.id))
    }
}

fn lowercase(bytes: &[u8]) -> Vec<u8> {
    bytes.to_ascii_lowercase()
}

/// The process-wide command table.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::build(crate::commands::FAMILIES))
}
