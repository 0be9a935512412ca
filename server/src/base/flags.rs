//! [`Flags`] and [`Acl`]: the command flags and ACL categories as bit sets, named as COMMAND INFO
//! names them.
//!
//! They live at the bottom of the crate, apart from the command table that uses them, because
//! what the executor owns refers to them too: an open transaction keeps the union of its queued
//! commands' flags (CLIENT PAUSE WRITE asks whether an EXEC would write), and the gates, the
//! script host and the handlers all test them.

/// Command flags, named as COMMAND INFO names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags(pub u32);

impl Flags {
    pub const NONE: Flags = Flags(0);
    pub const WRITE: Flags = Flags(1 << 0);
    pub const READONLY: Flags = Flags(1 << 1);
    pub const DENYOOM: Flags = Flags(1 << 2);
    /// A command of a module (in Redis 8.2, the vector set commands of its built-in module).
    pub const MODULE: Flags = Flags(1 << 3);
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
        (Flags::MODULE, "module"),
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
