//! ACL rules against the command table: parsing the rules of ACL SETUSER (and of `user` lines
//! in config and ACL files), describing a user back as rules (ACL LIST, GETUSER, SAVE), and
//! checking a command line against a user's selectors — Redis 7.0's `ACLSetUser`,
//! `ACLDescribeUser` and `ACLCheckAllUserCommandPerm`.
//!
//! The users themselves are plain data in `crate::model::acl_users`; this module is where command names,
//! categories and key specs give the rules their meaning, which is why it sits in the kernel
//! layer beside the table. Categories come from the table's entries (explicit ones plus those
//! implied by the flags), so COMMAND INFO, ACL CAT and the checks cannot disagree.
//!
//! Describing a selector's commands is Redis's best-fit: start from `+@all` or `-@all`, apply the
//! category that fits the user's bits best while one fits better than it misfits, then name the
//! single commands still different. Redis walks its command dictionary in hash order for the
//! single commands (so their order differs between runs of Redis itself); we walk the table's.

use bytes::Bytes;

use crate::base::flags::{Acl, Flags};
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Command, Registry};
use crate::model::acl_users::{self, KeyPattern, Reason, Sanitize, Selector, User};

/// Why a rule was refused; [`OpError::message`] gives Redis's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpError {
    Syntax,
    UnknownCommand,
    KeysAfterAll,
    ChannelsAfterAll,
    NoSuchPassword,
    BadHash,
    FirstArgOfSubcommand,
}

impl OpError {
    pub fn message(self) -> &'static str {
        match self {
            OpError::Syntax => "Syntax error",
            OpError::UnknownCommand => "Unknown command or category name in ACL",
            OpError::KeysAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            OpError::ChannelsAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            OpError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            OpError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            OpError::FirstArgOfSubcommand => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// A category by name, case-insensitively (`all` is not one: `+@all` is a rule of its own).
pub fn category(name: &[u8]) -> Option<Acl> {
    Acl::NAMES
        .iter()
        .position(|n| n.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| Acl(1 << i))
}

/// The commands (and subcommands) of a category that the table's version has, in table order
/// (ACL CAT <category>).
pub fn category_commands(registry: &Registry, category: Acl) -> impl Iterator<Item = &Command> {
    registry
        .commands
        .iter()
        .filter(move |c| c.acl.contains(category) && registry.has(c))
}

/// Allows or denies one command; a container's rule covers its subcommands (Redis's
/// `ACLChangeSelectorPerm`).
fn change_perm(selector: &mut Selector, registry: &Registry, command: &Command, allow: bool) {
    selector.set_id(command.id, allow);
    selector.first_args.remove(&command.id);
    for &sub in command.subcommands.values() {
        selector.set_id(registry.commands[sub].id, allow);
    }
}

fn set_category(selector: &mut Selector, registry: &Registry, category: Acl, allow: bool) {
    for command in category_commands(registry, category) {
        change_perm(selector, registry, command, allow);
    }
}

fn eq(op: &[u8], word: &str) -> bool {
    op.eq_ignore_ascii_case(word.as_bytes())
}

/// Applies one rule to a selector (Redis's `ACLSetSelector`): commands, categories, first
/// arguments, key and channel patterns.
pub fn apply_selector_op(
    selector: &mut Selector,
    registry: &Registry,
    op: &[u8],
) -> Result<(), OpError> {
    if eq(op, "allkeys") || eq(op, "~*") {
        selector.all_keys = true;
        selector.keys.clear();
    } else if eq(op, "resetkeys") {
        selector.all_keys = false;
        selector.keys.clear();
    } else if eq(op, "allchannels") || eq(op, "&*") {
        selector.all_channels = true;
        selector.channels.clear();
    } else if eq(op, "resetchannels") {
        selector.all_channels = false;
        selector.channels.clear();
    } else if eq(op, "allcommands") || eq(op, "+@all") {
        selector.allow_all();
    } else if eq(op, "nocommands") || eq(op, "-@all") {
        selector.deny_all();
    } else if op[0] == b'~' || op[0] == b'%' {
        if selector.all_keys {
            return Err(OpError::KeysAfterAll);
        }
        let (perms, pattern) = key_pattern(op)?;
        if acl_users::has_spaces(pattern) {
            return Err(OpError::Syntax);
        }
        match selector.keys.iter_mut().find(|p| p.pattern == pattern) {
            Some(existing) => existing.perms |= perms,
            None => selector.keys.push(KeyPattern::new(pattern, perms)),
        }
        selector.all_keys = false;
    } else if op[0] == b'&' {
        if selector.all_channels {
            return Err(OpError::ChannelsAfterAll);
        }
        let pattern = &op[1..];
        if acl_users::has_spaces(pattern) {
            return Err(OpError::Syntax);
        }
        if !selector.channels.iter().any(|p| p == pattern) {
            selector.channels.push(pattern.to_vec());
        }
        selector.all_channels = false;
    } else if op[0] == b'+' && op.get(1) != Some(&b'@') {
        let name = &op[1..];
        match name.iter().rposition(|&b| b == b'|') {
            None => {
                let command = registry.by_full_name(name).ok_or(OpError::UnknownCommand)?;
                change_perm(selector, registry, command, true);
            }
            Some(bar) => {
                let command = registry
                    .by_full_name(&name[..bar])
                    .ok_or(OpError::UnknownCommand)?;
                if command.parent.is_some() {
                    return Err(OpError::FirstArgOfSubcommand);
                }
                let first_arg = &name[bar + 1..];
                if first_arg.is_empty() {
                    return Err(OpError::Syntax);
                }
                if !command.subcommands.is_empty() {
                    let sub = registry.by_full_name(name).ok_or(OpError::UnknownCommand)?;
                    change_perm(selector, registry, sub, true);
                } else {
                    // SELECT|0, DEBUG|OBJECT: a first argument of a command that has no
                    // subcommands (Redis logs a deprecation warning for it).
                    let allowed = selector.first_args.entry(command.id).or_default();
                    if !allowed.iter().any(|a| a.eq_ignore_ascii_case(first_arg)) {
                        allowed.push(first_arg.to_vec());
                    }
                }
            }
        }
    } else if op[0] == b'-' && op.get(1) != Some(&b'@') {
        let command = registry
            .by_full_name(&op[1..])
            .ok_or(OpError::UnknownCommand)?;
        change_perm(selector, registry, command, false);
    } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
        let category = category(&op[2..]).ok_or(OpError::UnknownCommand)?;
        set_category(selector, registry, category, op[0] == b'+');
    } else {
        return Err(OpError::Syntax);
    }
    Ok(())
}

/// `~pattern` (read and write), or `%R~`, `%W~`, `%RW~` with the permissions named.
fn key_pattern(op: &[u8]) -> Result<(u8, &[u8]), OpError> {
    if op[0] == b'~' {
        return Ok((acl_users::READ_WRITE, &op[1..]));
    }
    let mut perms = 0;
    let mut offset = 1;
    while offset < op.len() {
        match op[offset].to_ascii_uppercase() {
            b'R' if perms & acl_users::READ == 0 => perms |= acl_users::READ,
            b'W' if perms & acl_users::WRITE == 0 => perms |= acl_users::WRITE,
            b'~' => {
                offset += 1;
                break;
            }
            _ => return Err(OpError::Syntax),
        }
        offset += 1;
    }
    // `%~x` grants nothing; Redis accepts it and then cannot describe it (it aborts), so it is
    // refused here as the syntax error it is.
    if perms == 0 {
        return Err(OpError::Syntax);
    }
    Ok((perms, &op[offset..]))
}

/// Applies one rule to a user (Redis's `ACLSetUser`): the user's flags and passwords,
/// selectors `(…)`, `clearselectors`, `reset`, and anything else to its root selector.
/// `all_channels` is `acl-pubsub-default allchannels`.
pub fn apply_user_op(
    user: &mut User,
    registry: &Registry,
    op: &[u8],
    all_channels: bool,
) -> Result<(), OpError> {
    if op.is_empty() {
        return Ok(());
    }
    if eq(op, "on") {
        user.enabled = true;
    } else if eq(op, "off") {
        user.enabled = false;
    } else if eq(op, "skip-sanitize-payload") {
        user.sanitize = Sanitize::Skip;
    } else if eq(op, "sanitize-payload") {
        user.sanitize = Sanitize::Sanitize;
    } else if eq(op, "nopass") {
        user.nopass = true;
        user.passwords.clear();
    } else if eq(op, "resetpass") {
        user.nopass = false;
        user.passwords.clear();
    } else if op[0] == b'>' || op[0] == b'#' {
        let hash = if op[0] == b'>' {
            acl_users::hash_password(&op[1..])
        } else if acl_users::valid_hash(&op[1..]) {
            String::from_utf8_lossy(&op[1..]).into_owned()
        } else {
            return Err(OpError::BadHash);
        };
        if !user.passwords.contains(&hash) {
            user.passwords.push(hash);
        }
        user.nopass = false;
    } else if op[0] == b'<' || op[0] == b'!' {
        let hash = if op[0] == b'<' {
            acl_users::hash_password(&op[1..])
        } else if acl_users::valid_hash(&op[1..]) {
            String::from_utf8_lossy(&op[1..]).into_owned()
        } else {
            return Err(OpError::BadHash);
        };
        let at = user
            .passwords
            .iter()
            .position(|p| *p == hash)
            .ok_or(OpError::NoSuchPassword)?;
        user.passwords.remove(at);
    } else if op[0] == b'(' && op[op.len() - 1] == b')' {
        let mut selector = Selector::new(all_channels);
        // Unbalanced quotes leave an empty selector, as Redis's split gives no rules then.
        let rules = embedis_protocol::inline::split_args(&op[1..op.len() - 1]).unwrap_or_default();
        for rule in rules {
            apply_selector_op(&mut selector, registry, &rule)?;
        }
        user.selectors.push(selector);
    } else if eq(op, "clearselectors") {
        user.selectors.truncate(1);
    } else if eq(op, "reset") {
        user.nopass = false;
        user.passwords.clear();
        let root = user.root_mut();
        root.all_keys = false;
        root.keys.clear();
        root.all_channels = all_channels;
        root.channels.clear();
        root.deny_all();
        user.enabled = false;
        user.sanitize = Sanitize::Sanitize;
        user.selectors.truncate(1);
    } else {
        apply_selector_op(user.root_mut(), registry, op)?;
    }
    user.refresh();
    Ok(())
}

/// Joins selectors written over several arguments (`(~x`, `+get)`) into one, as Redis accepts
/// them (`ACLMergeSelectorArguments`). `Err` holds the index of an unclosed `(`.
pub fn merge_selector_args(args: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, usize> {
    let mut merged = Vec::with_capacity(args.len());
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (j, op) in args.iter().enumerate() {
        if let Some((start, mut selector)) = open.take() {
            selector.push(b' ');
            selector.extend_from_slice(op);
            if op.last() == Some(&b')') {
                merged.push(selector);
            } else {
                open = Some((start, selector));
            }
            continue;
        }
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((j, op.clone()));
            continue;
        }
        merged.push(op.clone());
    }
    match open {
        Some((start, _)) => Err(start),
        None => Ok(merged),
    }
}

/// ACL SETUSER's rules applied to a copy of `existing` (or to a new user `name`): the user they
/// make, or Redis's error text. Nothing changes unless every rule is valid.
pub fn set_user(
    existing: Option<&User>,
    name: &[u8],
    rules: &[Vec<u8>],
    registry: &Registry,
    all_channels: bool,
) -> Result<User, String> {
    let merged = merge_selector_args(rules).map_err(|at| {
        format!(
            "Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(crate::base::cstr::c_str(&rules[at]))
        )
    })?;
    let mut user = match existing {
        Some(user) => user.clone(),
        None => User::new(name, all_channels),
    };
    for op in &merged {
        apply_user_op(&mut user, registry, op, all_channels).map_err(|e| {
            format!(
                "Error in ACL SETUSER modifier '{}': {}",
                String::from_utf8_lossy(crate::base::cstr::c_str(op)),
                e.message()
            )
        })?;
    }
    Ok(user)
}

/// A selector's command rules, `+@all`/`-@all` first (Redis's
/// `ACLDescribeSelectorCommandRules`). Descriptions are bytes, not text: first arguments, key
/// and channel patterns and names may be any bytes, and ACL SAVE must write them back as they
/// are (the `acl_file` fuzz target found names mangled by a conversion to text).
pub fn describe_commands(selector: &Selector, registry: &Registry) -> Vec<u8> {
    let additive = !selector.future_commands;
    let mut rules = Vec::from(if additive { "-@all " } else { "+@all " });
    let mut fake = Selector::new(false);
    if additive {
        fake.deny_all();
    } else {
        fake.allow_all();
    }
    // The categories not yet accounted for are measured on a copy of the user's bits, from
    // which every applied category is taken back.
    let mut temp = selector.clone();
    let mut applied = [false; Acl::NAMES.len()];
    loop {
        let mut best = None;
        let (mut min_diff, mut max_same) = (usize::MAX, 0);
        for (j, name) in Acl::NAMES.iter().enumerate() {
            if applied[j] {
                continue;
            }
            let (mut on, mut off) = (0, 0);
            for command in category_commands(registry, Acl(1 << j)) {
                if temp.allows_id(command.id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                best = Some((j, *name));
                min_diff = diff;
                max_same = same;
            }
        }
        let Some((j, name)) = best else { break };
        set_category(&mut fake, registry, Acl(1 << j), additive);
        set_category(&mut temp, registry, Acl(1 << j), !additive);
        rules.extend_from_slice(if additive { b"+@" } else { b"-@" });
        rules.extend_from_slice(name.as_bytes());
        rules.push(b' ');
        applied[j] = true;
    }
    for command in registry.top_level() {
        describe_single(selector, &mut fake, registry, command, &mut rules);
        for sub in registry.subcommands_of(command) {
            describe_single(selector, &mut fake, registry, sub, &mut rules);
        }
        if !selector.allows_id(command.id) {
            for arg in selector.first_args.get(&command.id).into_iter().flatten() {
                rules.push(b'+');
                rules.extend_from_slice(command.full_name.as_bytes());
                rules.push(b'|');
                rules.extend_from_slice(arg);
                rules.push(b' ');
            }
        }
    }
    rules.pop();
    debug_assert!(
        fake.same_commands(selector, registry.commands.len()),
        "the description {:?} does not rebuild the user's commands",
        String::from_utf8_lossy(&rules)
    );
    rules
}

fn describe_single(
    selector: &Selector,
    fake: &mut Selector,
    registry: &Registry,
    command: &Command,
    rules: &mut Vec<u8>,
) {
    let allowed = selector.allows_id(command.id);
    if allowed != fake.allows_id(command.id) {
        rules.push(if allowed { b'+' } else { b'-' });
        // A module's command is named in upper case (`VADD`) but its rule, as Redis writes
        // it, in lower case.
        rules.extend_from_slice(command.full_name.to_ascii_lowercase().as_bytes());
        rules.push(b' ');
        change_perm(fake, registry, command, allowed);
    }
}

/// One key pattern as a rule: `~p`, `%R~p`, `%W~p`.
pub fn describe_key_pattern(pattern: &KeyPattern) -> Vec<u8> {
    let prefix: &[u8] = match pattern.perms {
        acl_users::READ => b"%R~",
        acl_users::WRITE => b"%W~",
        _ => b"~",
    };
    [prefix, &pattern.pattern].concat()
}

/// A selector as rules: keys, channels, commands (Redis's `ACLDescribeSelector`).
pub fn describe_selector(selector: &Selector, registry: &Registry) -> Vec<u8> {
    let mut out = Vec::new();
    if selector.all_keys {
        out.extend_from_slice(b"~* ");
    } else {
        for pattern in &selector.keys {
            out.extend(describe_key_pattern(pattern));
            out.push(b' ');
        }
    }
    if selector.all_channels {
        out.extend_from_slice(b"&* ");
    } else {
        out.extend_from_slice(b"resetchannels ");
        for channel in &selector.channels {
            out.push(b'&');
            out.extend_from_slice(channel);
            out.push(b' ');
        }
    }
    out.extend(describe_commands(selector, registry));
    out
}

/// The flags ACL GETUSER lists, in Redis's order.
pub fn user_flags(user: &User) -> Vec<&'static str> {
    let mut flags = vec![if user.enabled { "on" } else { "off" }];
    if user.nopass {
        flags.push("nopass");
    }
    match user.sanitize {
        Sanitize::Skip => flags.push("skip-sanitize-payload"),
        Sanitize::Sanitize => flags.push("sanitize-payload"),
        Sanitize::Unset => {}
    }
    flags
}

/// A user as rules, as ACL LIST and ACL SAVE write it after `user <name> `.
pub fn describe_user(user: &User, registry: &Registry) -> Vec<u8> {
    let mut out = Vec::new();
    for flag in user_flags(user) {
        out.extend_from_slice(flag.as_bytes());
        out.push(b' ');
    }
    for hash in &user.passwords {
        out.push(b'#');
        out.extend_from_slice(hash.as_bytes());
        out.push(b' ');
    }
    for (i, selector) in user.selectors.iter().enumerate() {
        let described = describe_selector(selector, registry);
        if i == 0 {
            out.extend(described);
        } else {
            out.extend_from_slice(b" (");
            out.extend(described);
            out.push(b')');
        }
    }
    out
}

/// `user <name> <rules>`: a user as ACL LIST, ACL SAVE and CONFIG REWRITE write it.
pub fn user_line(user: &User, registry: &Registry) -> Vec<u8> {
    let mut line = b"user ".to_vec();
    line.extend_from_slice(&user.name);
    line.push(b' ');
    line.extend(describe_user(user, registry));
    line
}

/// A refusal: why, and the position of the key or channel refused (0 for a command).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Denied {
    pub reason: Reason,
    pub at: usize,
}

/// The access a key of these key-spec flags needs.
#[inline]
fn perms_of(key_flags: u16) -> u8 {
    let mut perms = 0;
    if key_flags & flag::ACCESS != 0 {
        perms |= acl_users::READ;
    }
    if key_flags & (flag::INSERT | flag::DELETE | flag::UPDATE) != 0 {
        perms |= acl_users::WRITE;
    }
    perms
}

/// The channels a command names: (first position, publish-or-subscribe, patterns). Redis 7.0
/// checks publishing and subscribing; unsubscribing is always allowed.
fn channels_of(command: &Command, argc: usize) -> Option<(std::ops::Range<usize>, bool)> {
    match command.full_name.as_str() {
        "publish" | "spublish" => Some((1..2.min(argc), false)),
        "subscribe" | "ssubscribe" => Some((1..argc, false)),
        "psubscribe" => Some((1..argc, true)),
        _ => None,
    }
}

/// The command part of a selector's check: its bit, or an allowed first argument.
#[inline(always)]
fn command_allowed(selector: &Selector, command: &Command, args: &[Bytes]) -> bool {
    if selector.all_commands
        || command.flags.contains(Flags::NO_AUTH)
        || selector.allows_id(command.id)
    {
        return true;
    }
    let index = if command.parent.is_some() { 2 } else { 1 };
    match (selector.first_args.get(&command.id), args.get(index)) {
        (Some(list), Some(arg)) => list.iter().any(|a| a.eq_ignore_ascii_case(arg)),
        _ => false,
    }
}

/// The channel part of a selector's check (only pub/sub commands name channels).
#[inline(always)]
fn check_channels(selector: &Selector, command: &Command, args: &[Bytes]) -> Result<(), Denied> {
    if selector.all_channels || !command.acl.contains(Acl::PUBSUB) {
        return Ok(());
    }
    if let Some((positions, is_pattern)) = channels_of(command, args.len()) {
        for at in positions {
            if !selector.channel_allowed(&args[at], is_pattern) {
                return Err(Denied {
                    reason: Reason::Channel,
                    at,
                });
            }
        }
    }
    Ok(())
}

/// Checks one selector; `keys` caches the command line's keys between selectors.
fn check_selector(
    selector: &Selector,
    command: &Command,
    args: &[Bytes],
    keys: &mut Option<Vec<(usize, u16)>>,
) -> Result<(), Denied> {
    if !command_allowed(selector, command, args) {
        return Err(Denied {
            reason: Reason::Command,
            at: 0,
        });
    }
    if !selector.all_keys {
        if keys.is_none() {
            *keys = Some(match command.single_key(args) {
                Some(key) => vec![key],
                None => command.keys(args),
            });
        }
        for &(at, key_flags) in keys.as_deref().unwrap_or_default() {
            if !selector.key_allowed(&args[at], perms_of(key_flags)) {
                return Err(Denied {
                    reason: Reason::Key,
                    at,
                });
            }
        }
    }
    check_channels(selector, command, args)
}

/// Whether `user` may run this command line (Redis's `ACLCheckAllUserCommandPerm`): one
/// selector must allow all of it. When none does, the refusal is the one Redis reports: a
/// key or channel over a command, and the last position among equals.
pub fn check(user: &User, command: &Command, args: &[Bytes]) -> Result<(), Denied> {
    if user.unrestricted {
        return Ok(());
    }
    check_restricted(user, command, args)
}

#[inline(never)]
fn check_restricted(user: &User, command: &Command, args: &[Bytes]) -> Result<(), Denied> {
    // One selector (the usual user): its keys are walked where the specs find them, without
    // collecting them into a list — one key at a fixed place (GET, SET, INCR…) the quickest.
    if let [selector] = user.selectors.as_slice() {
        if !command_allowed(selector, command, args) {
            return Err(Denied {
                reason: Reason::Command,
                at: 0,
            });
        }
        if !selector.all_keys {
            let mut refused = None;
            let key_ok = |at: usize, key_flags: u16| {
                let ok = selector.key_allowed(&args[at], perms_of(key_flags));
                if !ok {
                    refused = Some(at);
                }
                ok
            };
            match command.single_key(args) {
                Some((at, key_flags)) => {
                    let mut key_ok = key_ok;
                    key_ok(at, key_flags);
                }
                None => {
                    command.for_each_key(args, key_ok);
                }
            }
            if let Some(at) = refused {
                return Err(Denied {
                    reason: Reason::Key,
                    at,
                });
            }
        }
        return check_channels(selector, command, args);
    }
    let mut keys = None;
    let mut relevant = Denied {
        reason: Reason::Command,
        at: 0,
    };
    for selector in &user.selectors {
        match check_selector(selector, command, args, &mut keys) {
            Ok(()) => return Ok(()),
            Err(denied) => {
                if denied.reason > relevant.reason
                    || (denied.reason == relevant.reason && denied.at > relevant.at)
                {
                    relevant = denied;
                }
            }
        }
    }
    Err(relevant)
}

/// True if a selector that allows the command line also allows `perms` on every key: SORT's
/// BY and GET patterns read keys no spec names (Redis's
/// `ACLUserCheckCmdWithUnrestrictedKeyAccess`).
pub fn all_keys_allowed(user: &User, command: &Command, args: &[Bytes], perms: u8) -> bool {
    let mut keys = None;
    user.selectors.iter().any(|selector| {
        check_selector(selector, command, args, &mut keys).is_ok()
            && selector.all_keys_allowed(perms)
    })
}

/// Redis's `getAclErrorMessage`: what a script's refused `redis.call` says after
/// "The user executing the script ".
pub fn script_message(reason: Reason) -> &'static str {
    match reason {
        Reason::Command => "can't run this command or subcommand",
        Reason::Key => "can't access at least one of the keys mentioned in the command arguments",
        Reason::Channel => "can't publish to the channel mentioned in the command",
        Reason::Auth => "lacking the permissions for the command",
    }
}

/// The error a client's refused command gets (`processCommand`'s texts).
pub fn toplevel_error(denied: Denied, command: &Command) -> String {
    match denied.reason {
        Reason::Command => format!(
            "NOPERM this user has no permissions to run the '{}' command",
            command.full_name
        ),
        Reason::Key => {
            "NOPERM this user has no permissions to access one of the keys used as arguments"
                .to_string()
        }
        _ => "NOPERM this user has no permissions to access one of the channels used as arguments"
            .to_string(),
    }
}

/// The error a queued command gets at EXEC when the rules changed since it was queued.
pub fn exec_error(reason: Reason) -> String {
    let why = match reason {
        Reason::Command => "no permission to execute the command or subcommand",
        Reason::Key => "no permission to touch the specified keys",
        Reason::Channel => "no permission to access one of the channels used as arguments",
        Reason::Auth => "no permission",
    };
    format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn registry() -> &'static Registry {
        crate::commands::registry()
    }

    fn user_from(rules: &[&str]) -> User {
        let rules: Vec<Vec<u8>> = rules.iter().map(|r| r.as_bytes().to_vec()).collect();
        set_user(None, b"u", &rules, registry(), false).unwrap()
    }

    /// Rules that name commands, subcommands, categories and first arguments.
    fn rule() -> impl Strategy<Value = String> {
        let commands = [
            "get",
            "set",
            "config",
            "config|get",
            "client|list",
            "hset",
            "select",
            "acl",
            "eval",
            "debug",
            "flushall",
            "keys",
            "info",
        ];
        prop_oneof![
            (any::<bool>(), 0..Acl::NAMES.len()).prop_map(|(plus, i)| format!(
                "{}@{}",
                if plus { '+' } else { '-' },
                Acl::NAMES[i]
            )),
            (any::<bool>(), 0..commands.len()).prop_map(move |(plus, i)| format!(
                "{}{}",
                if plus { '+' } else { '-' },
                commands[i]
            )),
            Just("+select|0".to_string()),
            Just("+debug|object".to_string()),
            Just("+@all".to_string()),
            Just("-@all".to_string()),
        ]
    }

    proptest! {
        /// A user's description, applied to a fresh user, gives back the same commands (what
        /// ACL SAVE and LOAD rely on): Redis checks this at every description and aborts if not.
        #[test]
        fn describing_commands_round_trips(rules in proptest::collection::vec(rule(), 0..12)) {
            let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
            let user = user_from(&rules);
            let described = String::from_utf8(describe_commands(user.root(), registry())).unwrap();
            let again = user_from(&described.split(' ').collect::<Vec<_>>());
            prop_assert!(again.root().same_commands(user.root(), registry().commands.len()),
                "{rules:?} described as {described:?}");
            // First arguments of a command allowed anyway change nothing, and are not described
            // (as in Redis).
            let effective = |s: &Selector| -> Vec<(usize, Vec<Vec<u8>>)> {
                s.first_args
                    .iter()
                    .filter(|(id, _)| !s.allows_id(**id))
                    .map(|(id, args)| (*id, args.clone()))
                    .collect()
            };
            prop_assert_eq!(effective(again.root()), effective(user.root()));
            prop_assert_eq!(again.root().future_commands, user.root().future_commands);
        }
    }

    #[test]
    fn walking_keys_finds_what_collecting_them_does() {
        let lines: &[&[&str]] = &[
            &["get", "k"],
            &["mget", "a", "b", "c"],
            &["mset", "a", "1", "b", "2"],
            &["eval", "s", "2", "a", "b", "x"],
            &["eval", "s", "0"],
            &["eval", "s", "5", "a"],
            &["zunionstore", "d", "2", "a", "b", "weights", "1", "2"],
            &["set", "k", "v", "get"],
            &["georadius", "g", "1", "2", "3", "km", "store", "dst"],
            &["sort", "k", "by", "w*", "store", "dst"],
            &["xread", "count", "1", "streams", "a", "b", "0", "0"],
            &["migrate", "h", "1", "", "0", "5", "keys", "a", "b"],
            &["lmpop", "2", "a", "b", "left"],
            &["object", "encoding", "k"],
        ];
        for line in lines {
            let args: Vec<Bytes> = line.iter().map(|a| Bytes::from(a.to_string())).collect();
            let command = registry().lookup(&args).unwrap();
            let mut walked = Vec::new();
            command.for_each_key(&args, |at, flags| {
                walked.push((at, flags));
                true
            });
            assert_eq!(walked, command.keys(&args), "{line:?}");
            if let Some(single) = command.single_key(&args) {
                assert_eq!(vec![single], command.keys(&args), "{line:?}");
            }
        }
    }

    #[test]
    fn checks_pick_redis_s_refusal() {
        let user = user_from(&["on", "~a*", "%R~r*", "+get", "+set", "+mget", "(~b* +mget)"]);
        let line = |words: &[&str]| -> Vec<Bytes> {
            words.iter().map(|w| Bytes::from(w.to_string())).collect()
        };
        let registry = registry();
        let check_line = |words: &[&str]| {
            let args = line(words);
            check(&user, registry.lookup(&args).unwrap(), &args)
        };
        assert_eq!(check_line(&["get", "a1"]), Ok(()));
        assert_eq!(check_line(&["get", "r1"]), Ok(()));
        assert_eq!(
            check_line(&["set", "r1", "x"]),
            Err(Denied {
                reason: Reason::Key,
                at: 1
            })
        );
        // The second selector allows keys b*: MGET b1 b2 runs; MGET a1 b1 is allowed by none,
        // and the refusal names the last key any selector refused.
        assert_eq!(check_line(&["mget", "b1", "b2"]), Ok(()));
        assert_eq!(
            check_line(&["mget", "a1", "b1"]),
            Err(Denied {
                reason: Reason::Key,
                at: 2
            })
        );
        assert_eq!(
            check_line(&["del", "a1"]),
            Err(Denied {
                reason: Reason::Command,
                at: 0
            })
        );
    }
}
