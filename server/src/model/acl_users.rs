//! ACL users as Redis 7.0 keeps them: who may log in (passwords, on/off) and what each user may
//! do — its selectors of commands, key patterns and channel patterns — plus the ACL log.
//!
//! This module is the model only: users, selectors and their flags, passwords (SHA-256, as
//! Redis stores them, so ACL files move between Redis and embedis), the store of users by name
//! and the security log. What a rule means in terms of commands and categories needs the
//! command table, one layer up: `crate::kernel::acl_rules` parses and describes rules and checks a
//! command line against a user. Commands are named here by the command table's ids only.
//!
//! Clients refer to their user by slot ([`UserId`]), not by name: a slot's name never changes
//! while it is occupied, ACL SETUSER edits a user in place (every connection sees the new rules
//! at its next command, as in Redis), and a deleted user's connections are closed before its
//! slot is reused. Slot 0 is always `default`. Each user caches whether it may do everything
//! ([`User::unrestricted`]), so the check of a command by the default user is one branch.

use std::collections::BTreeMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// A key pattern's permissions: read (`%R~`), write (`%W~`), both (`~`).
pub const READ: u8 = 1;
pub const WRITE: u8 = 2;
pub const READ_WRITE: u8 = READ | WRITE;

/// A client's user: a slot in [`Users`].
pub type UserId = u32;
/// The `default` user's slot.
pub const DEFAULT_USER: UserId = 0;
/// The user of internal clients that may run anything (Redis's `NULL` user): the AOF's and
/// the primary link's.
pub const NO_USER: UserId = UserId::MAX;

/// One key pattern and the access it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    pub perms: u8,
    /// How the pattern is matched: most are a literal name or a prefix and a `*`, which need no
    /// glob matcher (the check of every key a restricted user names goes through here).
    shape: Shape,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// No special character: the key must be the pattern.
    Exact,
    /// One `*` at the end and no other special character: the key must start with the rest.
    Prefix,
    Glob,
}

impl KeyPattern {
    pub fn new(pattern: &[u8], perms: u8) -> KeyPattern {
        let special = |b: &u8| matches!(b, b'*' | b'?' | b'[' | b'\\');
        let shape = match pattern.iter().position(special) {
            None => Shape::Exact,
            Some(at) if at == pattern.len() - 1 && pattern[at] == b'*' => Shape::Prefix,
            Some(_) => Shape::Glob,
        };
        KeyPattern {
            pattern: pattern.to_vec(),
            perms,
            shape,
        }
    }

    /// True if `key` matches, as Redis's `stringmatchlen` would say.
    #[inline]
    pub fn matches(&self, key: &[u8]) -> bool {
        let pattern = self.pattern.as_slice();
        match self.shape {
            // Most patterns a key does not match differ from it at the first byte: that is
            // tested before the rest is compared (a call to memcmp).
            Shape::Exact => {
                key.len() == pattern.len() && key.first() == pattern.first() && key == pattern
            }
            // Redis's matcher never matches an empty key to anything but an empty pattern.
            Shape::Prefix => {
                let fixed = pattern.len() - 1;
                !key.is_empty()
                    && key.len() >= fixed
                    && (fixed == 0 || (key[0] == pattern[0] && key[1..fixed] == pattern[1..fixed]))
            }
            Shape::Glob => embedis_datatypes::glob::matches(pattern, key, false),
        }
    }
}

/// A set of permissions: commands, keys, channels. A user has a root selector and any number of
/// further ones `(…)`; a command runs if one selector allows all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// `allcommands`/`+@all` and nothing taken away since (clearing any bit clears it).
    pub all_commands: bool,
    /// `+@all` was the starting point: commands added later (modules) would be allowed — Redis's
    /// reserved command bit, which decides whether a description starts with `+@all`. It is
    /// also the value of every bit past the end of `commands`.
    pub future_commands: bool,
    pub all_keys: bool,
    pub all_channels: bool,
    /// One bit per command id (commands and subcommands alike); ids past its end read as
    /// `future_commands`, so `+@all` needs no knowledge of the table's size.
    pub commands: Vec<u64>,
    /// `+cmd|arg` for a command without subcommands: the first arguments allowed while the
    /// command itself is not, by command id, in the order given.
    pub first_args: BTreeMap<usize, Vec<Vec<u8>>>,
    pub keys: Vec<KeyPattern>,
    pub channels: Vec<Vec<u8>>,
}

impl Selector {
    /// An empty selector: no commands, keys or channels (except the channels
    /// `acl-pubsub-default allchannels` grants).
    pub fn new(all_channels: bool) -> Selector {
        Selector {
            all_commands: false,
            future_commands: false,
            all_keys: false,
            all_channels,
            commands: Vec::new(),
            first_args: BTreeMap::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    #[inline]
    pub fn allows_id(&self, id: usize) -> bool {
        match self.commands.get(id / 64) {
            Some(word) => word & (1 << (id % 64)) != 0,
            None => self.future_commands,
        }
    }

    /// Sets or clears one command's bit; clearing one ends `all_commands`.
    pub fn set_id(&mut self, id: usize, allowed: bool) {
        let word = id / 64;
        if self.commands.len() <= word {
            let fill = if self.future_commands { u64::MAX } else { 0 };
            self.commands.resize(word + 1, fill);
        }
        if allowed {
            self.commands[word] |= 1 << (id % 64);
        } else {
            self.commands[word] &= !(1 << (id % 64));
            self.all_commands = false;
        }
    }

    /// `+@all`: every command, and future ones.
    pub fn allow_all(&mut self) {
        self.commands.clear();
        self.all_commands = true;
        self.future_commands = true;
        self.first_args.clear();
    }

    /// `-@all`.
    pub fn deny_all(&mut self) {
        self.commands.clear();
        self.all_commands = false;
        self.future_commands = false;
        self.first_args.clear();
    }

    /// The same command bits (ignoring the unused tail of the last word).
    pub fn same_commands(&self, other: &Selector, count: usize) -> bool {
        (0..count).all(|id| self.allows_id(id) == other.allows_id(id))
    }

    /// True if a key `key` needing `perms` may be named (Redis's `ACLSelectorCheckKey`).
    #[inline]
    pub fn key_allowed(&self, key: &[u8], perms: u8) -> bool {
        if self.all_keys {
            return true;
        }
        for pattern in &self.keys {
            if pattern.perms & perms == perms && pattern.matches(key) {
                return true;
            }
        }
        false
    }

    /// True if every key may be accessed with `perms` (`~*`, `%R~*`…): SORT's BY and GET.
    pub fn all_keys_allowed(&self, perms: u8) -> bool {
        self.all_keys
            || self
                .keys
                .iter()
                .any(|p| p.perms & perms == perms && p.pattern == b"*")
    }

    /// True if `channel` may be used: a channel name is matched against the patterns, a
    /// pattern (PSUBSCRIBE's) only literally.
    pub fn channel_allowed(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_channels || channel_in(&self.channels, channel, is_pattern)
    }

    /// May do everything: every command, key and channel.
    fn unrestricted(&self) -> bool {
        self.all_commands && self.all_keys && self.all_channels
    }
}

/// True if `channel` is allowed by the channel patterns `list` (see
/// [`Selector::channel_allowed`]).
pub fn channel_in(list: &[Vec<u8>], channel: &[u8], is_pattern: bool) -> bool {
    list.iter().any(|p| {
        if is_pattern {
            p.as_slice() == channel
        } else {
            embedis_datatypes::glob::matches(p, channel, false)
        }
    })
}

/// `skip-sanitize-payload` / `sanitize-payload`: neither until one is set (a new user), as in
/// Redis, whose `reset` sets `sanitize-payload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sanitize {
    Unset,
    Skip,
    Sanitize,
}

/// One ACL user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: Arc<[u8]>,
    pub enabled: bool,
    pub nopass: bool,
    pub sanitize: Sanitize,
    /// SHA-256 hashes as 64 lower-case hex digits, in the order added.
    pub passwords: Vec<String>,
    /// The root selector first, then the `(…)` ones.
    pub selectors: Vec<Selector>,
    /// Cached: the root selector may do everything (see [`User::refresh`]).
    pub unrestricted: bool,
}

impl User {
    /// A new user as ACL SETUSER creates one: off, no password, no permissions.
    pub fn new(name: &[u8], all_channels: bool) -> User {
        User {
            name: name.into(),
            enabled: false,
            nopass: false,
            sanitize: Sanitize::Unset,
            passwords: Vec::new(),
            selectors: vec![Selector::new(all_channels)],
            unrestricted: false,
        }
    }

    pub fn root(&self) -> &Selector {
        &self.selectors[0]
    }

    pub fn root_mut(&mut self) -> &mut Selector {
        &mut self.selectors[0]
    }

    /// Recomputes the cached facts after a change.
    pub fn refresh(&mut self) {
        self.unrestricted = self.root().unrestricted();
    }

    /// True if `password` is one of the user's (or the user is `nopass`). The comparison of
    /// hashes takes the same time whatever their first difference, as Redis's.
    pub fn password_ok(&self, password: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let hashed = hash_password(password);
        self.passwords.iter().any(|known| {
            known.len() == hashed.len()
                && known
                    .bytes()
                    .zip(hashed.bytes())
                    .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                    == 0
        })
    }
}

/// A password's SHA-256 as 64 lower-case hex digits (the form of `#<hash>` and ACL GETUSER).
pub fn hash_password(password: &[u8]) -> String {
    let digest = Sha256::digest(password);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from_digit((byte >> 4) as u32, 16).unwrap());
        hex.push(char::from_digit((byte & 15) as u32, 16).unwrap());
    }
    hex
}

/// True if `hash` is a password hash as `#`/`!` take it: 64 digits `0-9a-f`.
pub fn valid_hash(hash: &[u8]) -> bool {
    hash.len() == 64 && hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Redis's `ACLStringHasSpaces`: usernames and patterns may not hold white space or NUL.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&b| b == 0 || matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// Why a command was refused (Redis's `ACL_DENIED_*`, in its order of precedence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One ACL LOG entry.
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command, key, channel or (for AUTH) the command name as typed.
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// When it last happened (the server clock's milliseconds).
    pub at_ms: i64,
    /// The CLIENT LIST line of the client it last happened to.
    pub client_info: String,
}

/// How close in time two events must be to share an entry, and how many recent entries are
/// searched for one to share (Redis's grouping).
const GROUPING_MS: i64 = 60_000;
const GROUPING_SCAN: usize = 10;

/// Every user, by slot and by name, and the ACL log.
#[derive(Debug, Clone)]
pub struct Users {
    slots: Vec<Option<User>>,
    by_name: BTreeMap<Arc<[u8]>, UserId>,
    /// The log, newest first.
    pub log: std::collections::VecDeque<LogEntry>,
}

impl Users {
    /// Just the default user, with every permission, and the password `requirepass` (none if
    /// empty: `nopass`).
    pub fn new(requirepass: &[u8]) -> Users {
        let mut users = Users {
            slots: Vec::new(),
            by_name: BTreeMap::new(),
            log: Default::default(),
        };
        users.insert(default_user());
        users.set_default_password(requirepass);
        users
    }

    /// `requirepass`: the default user's only password, or `nopass` when empty.
    pub fn set_default_password(&mut self, password: &[u8]) {
        let user = self.get_mut(DEFAULT_USER);
        user.passwords.clear();
        user.nopass = password.is_empty();
        if !password.is_empty() {
            user.passwords.push(hash_password(password));
        }
    }

    pub fn get(&self, id: UserId) -> &User {
        self.slots[id as usize]
            .as_ref()
            .expect("a client's user exists until its connection is closed")
    }

    pub fn get_mut(&mut self, id: UserId) -> &mut User {
        self.slots[id as usize]
            .as_mut()
            .expect("a client's user exists until its connection is closed")
    }

    /// The user a client runs as, `None` for [`NO_USER`].
    #[inline]
    pub fn of_client(&self, id: UserId) -> Option<&User> {
        if id == NO_USER {
            None
        } else {
            Some(self.get(id))
        }
    }

    pub fn find(&self, name: &[u8]) -> Option<UserId> {
        self.by_name.get(name).copied()
    }

    pub fn default_user(&self) -> &User {
        self.get(DEFAULT_USER)
    }

    /// Adds a user whose name is not taken; returns its slot.
    pub fn insert(&mut self, mut user: User) -> UserId {
        user.refresh();
        let name = user.name.clone();
        let id = match self.slots.iter().position(Option::is_none) {
            Some(free) => {
                self.slots[free] = Some(user);
                free as UserId
            }
            None => {
                self.slots.push(Some(user));
                (self.slots.len() - 1) as UserId
            }
        };
        self.by_name.insert(name, id);
        id
    }

    /// Replaces a user's rules (its name stays).
    pub fn replace(&mut self, id: UserId, mut user: User) {
        user.name = self.get(id).name.clone();
        user.refresh();
        self.slots[id as usize] = Some(user);
    }

    /// Removes a user (never the default one); returns its slot if it existed.
    pub fn remove(&mut self, name: &[u8]) -> Option<UserId> {
        let id = self.by_name.remove(name)?;
        self.slots[id as usize] = None;
        Some(id)
    }

    /// The users in name order (ACL USERS, LIST, SAVE), with their slots.
    pub fn iter(&self) -> impl Iterator<Item = (UserId, &User)> {
        self.by_name.values().map(|&id| (id, self.get(id)))
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// True if a client that has not authenticated may run only AUTH and the like: the default
    /// user has a password or is off (Redis's `authRequired`).
    pub fn default_needs_auth(&self) -> bool {
        let default = self.default_user();
        !default.nopass || !default.enabled
    }

    /// Adds an event to the log, or counts it in a recent entry that matches it, keeping at
    /// most `max_len` entries (Redis's `addACLLogEntry`).
    pub fn log_event(&mut self, entry: LogEntry, max_len: usize) {
        let matching = self.log.iter().take(GROUPING_SCAN).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && (e.at_ms - entry.at_ms).abs() <= GROUPING_MS
                && e.object == entry.object
                && e.username == entry.username
        });
        match matching {
            Some(at) => {
                let mut found = self.log.remove(at).expect("found above");
                found.count += 1;
                found.at_ms = entry.at_ms;
                found.client_info = entry.client_info;
                self.log.push_front(found);
            }
            None => {
                self.log.push_front(entry);
                self.log.truncate(max_len);
            }
        }
    }
}

/// The default user as Redis creates it: on, nopass, every command, key and channel.
pub fn default_user() -> User {
    let mut user = User::new(b"default", true);
    user.root_mut().allow_all();
    user.root_mut().all_keys = true;
    user.root_mut().all_channels = true;
    user.enabled = true;
    user.nopass = true;
    user.refresh();
    user
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_sha256_hex() {
        // The SHA-256 of "foo", as `ACL GETUSER` shows it in Redis.
        assert_eq!(
            hash_password(b"foo"),
            "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
        );
        assert!(valid_hash(hash_password(b"x").as_bytes()));
        assert!(!valid_hash(b"2C26"));
        let mut user = User::new(b"u", false);
        assert!(!user.password_ok(b"foo"));
        user.passwords.push(hash_password(b"foo"));
        assert!(user.password_ok(b"foo"));
        assert!(!user.password_ok(b"fo"));
        user.nopass = true;
        assert!(user.password_ok(b"anything"));
    }

    #[test]
    fn default_user_and_requirepass() {
        let mut users = Users::new(b"");
        assert!(users.default_user().unrestricted);
        assert!(!users.default_needs_auth());
        users.set_default_password(b"secret");
        assert!(users.default_needs_auth());
        assert!(users.default_user().password_ok(b"secret"));
        users.set_default_password(b"");
        assert!(!users.default_needs_auth());
    }

    #[test]
    fn slots_are_reused_and_names_sorted() {
        let mut users = Users::new(b"");
        let b = users.insert(User::new(b"b", false));
        let a = users.insert(User::new(b"a", false));
        assert_eq!((b, a), (1, 2));
        let names: Vec<&[u8]> = users.iter().map(|(_, u)| &*u.name).collect();
        assert_eq!(names, vec![&b"a"[..], b"b", b"default"]);
        assert_eq!(users.remove(b"b"), Some(1));
        assert_eq!(users.insert(User::new(b"c", false)), 1);
        assert_eq!(users.find(b"c"), Some(1));
        assert_eq!(users.find(b"b"), None);
    }

    #[test]
    fn keys_and_channels() {
        let mut s = Selector::new(false);
        s.keys.push(KeyPattern::new(b"r:*", READ));
        s.keys.push(KeyPattern::new(b"rw:*", READ_WRITE));
        assert!(s.key_allowed(b"r:1", READ));
        assert!(!s.key_allowed(b"r:1", WRITE));
        assert!(s.key_allowed(b"rw:1", READ_WRITE));
        assert!(!s.key_allowed(b"x", READ));
        assert!(s.key_allowed(b"r:x", 0));
        assert!(!s.all_keys_allowed(READ));
        s.keys.push(KeyPattern::new(b"*", READ));
        assert!(s.all_keys_allowed(READ));
        assert!(!s.all_keys_allowed(WRITE));
        s.channels.push(b"news.*".to_vec());
        assert!(s.channel_allowed(b"news.a", false));
        assert!(!s.channel_allowed(b"news.a", true));
        assert!(s.channel_allowed(b"news.*", true));
    }

    #[test]
    fn pattern_shapes_match_as_globs_do() {
        let cases: &[&[u8]] = &[
            b"key:*", b"key", b"*", b"k?y", b"a*b", b"[ab]*", b"x\\*", b"",
        ];
        let keys: &[&[u8]] = &[
            b"key:1", b"key", b"key:", b"kay", b"ab", b"a", b"x*", b"", b"b1",
        ];
        for pattern in cases {
            let p = KeyPattern::new(pattern, READ);
            for key in keys {
                assert_eq!(
                    p.matches(key),
                    embedis_datatypes::glob::matches(pattern, key, false),
                    "{pattern:?} {key:?}"
                );
            }
        }
    }

    #[test]
    fn log_groups_like_events() {
        let mut users = Users::new(b"");
        let event = |object: &[u8], at_ms| LogEntry {
            count: 1,
            reason: Reason::Key,
            context: Context::Toplevel,
            object: object.to_vec(),
            username: b"u".to_vec(),
            at_ms,
            client_info: String::new(),
        };
        users.log_event(event(b"k", 0), 3);
        users.log_event(event(b"k", 1000), 3);
        assert_eq!(users.log.len(), 1);
        assert_eq!(users.log[0].count, 2);
        users.log_event(event(b"k", 62_000), 3);
        assert_eq!(users.log.len(), 2);
        for i in 0..5 {
            users.log_event(event(format!("o{i}").as_bytes(), 70_000), 3);
        }
        assert_eq!(users.log.len(), 3);
        assert_eq!(users.log[0].object, b"o4");
    }
}
