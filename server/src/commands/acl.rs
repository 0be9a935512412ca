//! ACL: the users' commands — SETUSER, GETUSER, DELUSER, USERS, LIST, WHOAMI, CAT, GENPASS,
//! LOG, DRYRUN, LOAD, SAVE, HELP — with Redis 7.0's replies and errors.
//!
//! The users are `crate::model::acl_users` (data) and `crate::kernel::acl_rules` (what rules mean); the checks run in
//! the gates before any handler. What this module adds is what changes to users do to
//! connections, as in Redis: a deleted user's connections are closed, ACL LOAD closes every
//! connection authenticated as a user other than `default`, and a SETUSER that takes channels
//! away closes that user's subscribers to them. The ACL file is read and written here too
//! ([`load_file`], also used at start-up).

use bytes::Bytes;
use embedis_protocol::number::parse_i64;

use crate::base::error::{CmdResult, Error};
use crate::commands::common::write_help;
use crate::kernel::acl_rules;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags, Registry};
use crate::model::acl_users::{self, UserId, Users, DEFAULT_USER};
use crate::model::state::EngineRequest;

const HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    The categories, or the commands of <category>.",
    "DELUSER <username> [<username> ...]",
    "    Deletes users (their connections are closed).",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Whether <username> could run the command line (nothing runs).",
    "GETUSER <username>",
    "    A user's flags, password hashes, commands, keys, channels and selectors.",
    "GENPASS [<bits>]",
    "    A random password of 256 bits, or of <bits>, in hex digits.",
    "LIST",
    "    Every user as the rules of a config-file line.",
    "LOAD",
    "    Replaces the users by those of the ACL file.",
    "LOG [<count> | RESET]",
    "    The newest entries of the ACL log (10 by default), or empties it.",
    "SAVE",
    "    Writes the users to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Creates a user or changes its attributes.",
    "USERS",
    "    The users' names.",
    "WHOAMI",
    "    The name of this connection's user.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asks the engine to close every connection of `user` but the caller's, and closes the
/// caller's after its reply if it is one; all are made default, unauthenticated connections
/// at once, so no command of theirs runs as the old user meanwhile (Redis's
/// `ACLFreeUserAndKillClients`).
fn close_connections_of(ctx: &mut Ctx<'_>, matches: impl Fn(UserId) -> bool) {
    let default_name = ctx.server.users.default_user().name.clone();
    for other in ctx.clients.iter_mut() {
        if other.user != acl_users::NO_USER && matches(other.user) {
            other.user = DEFAULT_USER;
            other.user_name = default_name.clone();
            other.authenticated = false;
            ctx.server
                .requests
                .push(EngineRequest::Kill { id: other.id });
        }
    }
    if ctx.client.user != acl_users::NO_USER && matches(ctx.client.user) {
        ctx.client.user = DEFAULT_USER;
        ctx.client.user_name = default_name;
        ctx.client.authenticated = false;
        ctx.client.close_after_reply = true;
    }
}

fn setuser(ctx: &mut Ctx<'_>) -> CmdResult {
    let name = ctx.arg(2).to_vec();
    if acl_users::has_spaces(&name) {
        return Err(Error::msg(
            "ERR Usernames can't contain spaces or null characters",
        ));
    }
    let rules: Vec<Vec<u8>> = ctx.args[3..].iter().map(|a| a.to_vec()).collect();
    let existing = ctx.server.users.find(&name);
    let all_channels = ctx.server.config.acl_pubsub_all;
    let user = acl_rules::set_user(
        existing.map(|id| ctx.server.users.get(id)),
        &name,
        &rules,
        ctx.registry,
        all_channels,
    )
    .map_err(|e| Error::owned(format!("ERR {}", e.replace(['\r', '\n'], " "))))?;
    match existing {
        Some(id) => {
            close_revoked_subscribers(ctx, id, &user);
            ctx.server.users.replace(id, user);
        }
        None => {
            ctx.server.users.insert(user);
        }
    }
    ctx.out.ok();
    Ok(())
}

/// Closes the subscribers of user `id` whose channels or patterns the new rules no longer
/// allow (Redis's `ACLKillPubsubClientsIfNeeded`): nothing to do if the new user has every
/// channel or a superset of the old patterns.
fn close_revoked_subscribers(ctx: &mut Ctx<'_>, id: UserId, new: &acl_users::User) {
    if new.selectors.iter().any(|s| s.all_channels) {
        return;
    }
    let upcoming: Vec<Vec<u8>> = new
        .selectors
        .iter()
        .flat_map(|s| s.channels.iter().cloned())
        .collect();
    let old = ctx.server.users.get(id);
    let superset = old
        .selectors
        .iter()
        .all(|s| !s.all_channels && s.channels.iter().all(|c| upcoming.contains(c)));
    if superset {
        return;
    }
    let revoked = |client: &crate::model::client::ClientState| {
        client.user == id
            && client.subs.total() > 0
            && (client
                .subs
                .patterns
                .iter()
                .any(|p| !acl_users::channel_in(&upcoming, p, true))
                || client
                    .subs
                    .channels
                    .iter()
                    .chain(client.subs.shard.iter())
                    .any(|c| !acl_users::channel_in(&upcoming, c, false)))
    };
    for other in ctx.clients.iter() {
        if revoked(other) {
            ctx.server
                .requests
                .push(EngineRequest::Kill { id: other.id });
        }
    }
    if revoked(ctx.client) {
        ctx.client.close_after_reply = true;
    }
}

fn deluser(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.args[2..].iter().any(|name| name.as_ref() == b"default") {
        return Err(Error::msg("ERR The 'default' user cannot be removed"));
    }
    let mut deleted = 0;
    for j in 2..ctx.argc() {
        let name = ctx.args[j].clone();
        if let Some(id) = ctx.server.users.remove(&name) {
            close_connections_of(ctx, |user| user == id);
            deleted += 1;
        }
    }
    ctx.out.integer(deleted);
    Ok(())
}

/// One selector's `commands`, `keys`, `channels` fields of ACL GETUSER.
fn write_selector(ctx: &mut Ctx<'_>, selector: &acl_users::Selector) {
    ctx.out.bulk(b"commands");
    ctx.out
        .bulk(&acl_rules::describe_commands(selector, ctx.registry));
    ctx.out.bulk(b"keys");
    let keys = if selector.all_keys {
        b"~*".to_vec()
    } else {
        selector
            .keys
            .iter()
            .map(acl_rules::describe_key_pattern)
            .collect::<Vec<_>>()
            .join(&b' ')
    };
    ctx.out.bulk(&keys);
    ctx.out.bulk(b"channels");
    let channels = if selector.all_channels {
        b"&*".to_vec()
    } else {
        selector
            .channels
            .iter()
            .map(|c| [&b"&"[..], c].concat())
            .collect::<Vec<_>>()
            .join(&b' ')
    };
    ctx.out.bulk(&channels);
}

fn getuser(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(id) = ctx.server.users.find(ctx.arg(2)) else {
        ctx.out.null();
        return Ok(());
    };
    let user = ctx.server.users.get(id).clone();
    ctx.out.map(6);
    ctx.out.bulk(b"flags");
    let flags = acl_rules::user_flags(&user);
    ctx.out.set(flags.len());
    for flag in flags {
        ctx.out.bulk(flag.as_bytes());
    }
    ctx.out.bulk(b"passwords");
    ctx.out.array(user.passwords.len());
    for hash in &user.passwords {
        ctx.out.bulk(hash.as_bytes());
    }
    write_selector(ctx, user.root());
    ctx.out.bulk(b"selectors");
    ctx.out.array(user.selectors.len() - 1);
    for selector in &user.selectors[1..] {
        ctx.out.map(3);
        write_selector(ctx, selector);
    }
    Ok(())
}

use acl_rules::user_line;

fn list(ctx: &mut Ctx<'_>) -> CmdResult {
    let lines: Vec<Vec<u8>> = ctx
        .server
        .users
        .iter()
        .map(|(_, user)| user_line(user, ctx.registry))
        .collect();
    ctx.out.array(lines.len());
    for line in lines {
        ctx.out.bulk(&line);
    }
    Ok(())
}

fn users(ctx: &mut Ctx<'_>) -> CmdResult {
    let names: Vec<_> = ctx
        .server
        .users
        .iter()
        .map(|(_, user)| user.name.clone())
        .collect();
    ctx.out.array(names.len());
    for name in names {
        ctx.out.bulk(&name);
    }
    Ok(())
}

fn whoami(ctx: &mut Ctx<'_>) -> CmdResult {
    let name = ctx.client.user_name.clone();
    ctx.out.bulk(&name);
    Ok(())
}

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

fn load(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.server.config.aclfile.is_empty() {
        return Err(Error::msg(NO_ACL_FILE));
    }
    let path = ctx.server.config.aclfile.clone();
    let loaded = load_file(
        &path,
        &ctx.server.users,
        ctx.registry,
        ctx.server.config.acl_pubsub_all,
    )
    .map_err(|e| Error::owned(format!("ERR {e}")))?;
    ctx.server.users = loaded;
    // Every connection authenticated as another user than `default` is closed, as in Redis
    // (whose users are all replaced by new ones).
    close_connections_of(ctx, |user| user != DEFAULT_USER);
    ctx.out.ok();
    Ok(())
}

fn save(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.server.config.aclfile.is_empty() {
        return Err(Error::msg(NO_ACL_FILE));
    }
    let path = ctx.server.config.aclfile.clone();
    if let Err(e) = save_file(&path, &ctx.server.users, ctx.registry) {
        ctx.server
            .log
            .warning(&format!("Writing the ACL file for ACL SAVE: {e}"));
        return Err(Error::msg("ERR There was an error trying to save the ACLs. Please check the server logs for more information"));
    }
    ctx.out.ok();
    Ok(())
}

/// Writes every user to `path` (a temporary file renamed over it, as Redis does).
pub fn save_file(path: &str, users: &Users, registry: &Registry) -> std::io::Result<()> {
    let mut text = Vec::new();
    for (_, user) in users.iter() {
        text.extend(user_line(user, registry));
        text.push(b'\n');
    }
    let temp = format!(
        "{path}.tmp-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    );
    let written = std::fs::write(&temp, &text).and_then(|_| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Reads the users of the ACL file at `path` (Redis's `ACLLoadFromFile`): each non-blank
/// line `user <name> <rules…>`. Any error leaves `current` as it was and returns every
/// problem found, in Redis's words; a file without `default` keeps a fresh default user
/// (with the current default's password settings reset to `nopass`, as Redis creates it).
pub fn load_file(
    path: &str,
    current: &Users,
    registry: &Registry,
    all_channels: bool,
) -> Result<Users, String> {
    let text = std::fs::read(path).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{path}': {}",
            crate::commands::configuration::os_error_text(&e)
        )
    })?;
    parse_acl_file(&text, path, current, registry, all_channels)
}

/// The users of ACL file text (see [`load_file`]; `path` names the file in the errors). Never
/// panics, whatever the bytes: the fuzz target `acl_file` feeds it arbitrary input.
pub fn parse_acl_file(
    text: &[u8],
    path: &str,
    current: &Users,
    registry: &Registry,
    all_channels: bool,
) -> Result<Users, String> {
    let mut errors = String::new();
    let mut loaded: Vec<acl_users::User> = Vec::new();
    for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
        let number = i + 1;
        let line = trim(raw, b" \t\r\n");
        if line.is_empty() {
            continue;
        }
        // Words are separated by single spaces, without quoting, as Redis splits them.
        let words: Vec<&[u8]> = line
            .split(|&b| b == b' ')
            .filter(|w| !w.is_empty())
            .collect();
        if words.first() != Some(&&b"user"[..]) || words.len() < 2 {
            errors.push_str(&format!(
                "{path}:{number} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = words[1];
        if acl_users::has_spaces(name) {
            errors.push_str(&format!(
                "'{path}:{number}: username '{}' contains invalid characters. ",
                text_of(name)
            ));
            continue;
        }
        if loaded.iter().any(|u| &*u.name == name) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{}' found on line {number}. ",
                text_of(name)
            ));
            continue;
        }
        let rules: Vec<Vec<u8>> = words[2..].iter().map(|w| w.to_vec()).collect();
        let Ok(merged) = acl_rules::merge_selector_args(&rules) else {
            errors.push_str(&format!(
                "{path}:{number}: Unmatched parenthesis in selector definition."
            ));
            continue;
        };
        let mut user = acl_users::User::new(name, all_channels);
        let mut syntax_error = false;
        for rule in merged {
            let rule = trim(&rule, b"\t\r\n");
            if let Err(e) = acl_rules::apply_user_op(&mut user, registry, rule, all_channels) {
                if e == acl_rules::OpError::UnknownCommand {
                    errors.push_str(&format!(
                        "{path}:{number}: Error in applying operation '{}': {}. ",
                        text_of(rule),
                        e.message()
                    ));
                } else if !syntax_error {
                    errors.push_str(&format!("{path}:{number}: {}. ", e.message()));
                    syntax_error = true;
                }
            }
        }
        loaded.push(user);
    }
    if !errors.is_empty() {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
        );
        return Err(errors);
    }
    let mut users = Users::new(b"");
    users.log = current.log.clone();
    for user in loaded {
        match users.find(&user.name) {
            Some(id) => users.replace(id, user),
            None => {
                users.insert(user);
            }
        }
    }
    Ok(users)
}

/// The users of the configuration, at start-up (Redis's `ACLLoadUsersAtStartup`): the config
/// file's `user` lines, or the ACL file — not both. An error stops the server, in Redis's words.
pub fn load_at_start(
    server: &mut crate::model::state::ServerState,
    registry: &Registry,
) -> Result<(), String> {
    let lines = std::mem::take(&mut server.config.users);
    let all_channels = server.config.acl_pubsub_all;
    if !server.config.aclfile.is_empty() && !lines.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    let mut seen: Vec<&[u8]> = Vec::new();
    for words in &lines {
        let name = &words[0];
        if seen.contains(&name.as_slice()) {
            return Err(format!(
                "Error in user declaration '{}': Duplicate user found. A user can only be defined once in config files",
                text_of(name)
            ));
        }
        seen.push(name);
        if acl_users::has_spaces(name) {
            return Err("Spaces not allowed in ACL usernames".into());
        }
        let rules = acl_rules::merge_selector_args(&words[1..]).map_err(|at| {
            format!(
                "Error in user declaration '{}': Unmatched parenthesis in acl selector starting at '{}'.",
                text_of(name),
                text_of(&words[1 + at])
            )
        })?;
        // `default` is reset first, then given the line's rules, as in Redis.
        let mut user = acl_users::User::new(name, all_channels);
        for rule in &rules {
            acl_rules::apply_user_op(&mut user, registry, rule, all_channels).map_err(|e| {
                format!(
                    "Error in user declaration '{}': {}",
                    text_of(rule),
                    e.message()
                )
            })?;
        }
        if !user.enabled {
            server.log.notice(&format!(
                "The user '{}' is disabled (there is no 'on' modifier in the user description). Make sure this is not a configuration error.",
                text_of(name)
            ));
        }
        match server.users.find(name) {
            Some(id) => server.users.replace(id, user),
            None => {
                server.users.insert(user);
            }
        }
    }
    server.config.users = lines;
    if !server.config.aclfile.is_empty() {
        let path = server.config.aclfile.clone();
        server.users = load_file(&path, &server.users, registry, all_channels)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
    }
    Ok(())
}

fn trim<'a>(bytes: &'a [u8], set: &[u8]) -> &'a [u8] {
    let start = bytes
        .iter()
        .position(|b| !set.contains(b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !set.contains(b))
        .map_or(start, |e| e + 1);
    &bytes[start..end.max(start)]
}

fn cat(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() == 2 {
        ctx.out.array(Acl::NAMES.len());
        for name in Acl::NAMES {
            ctx.out.bulk(name.as_bytes());
        }
        return Ok(());
    }
    if ctx.argc() > 3 {
        return Err(crate::commands::common::subcommand_syntax_error(ctx));
    }
    let Some(category) = acl_rules::category(ctx.arg(2)) else {
        let mut line = b"ERR Unknown category '".to_vec();
        line.extend(crate::base::cstr::c_str(ctx.arg(2)).iter().take(128));
        line.push(b'\'');
        return Err(Error::bytes(line));
    };
    let names: Vec<&str> = acl_rules::category_commands(ctx.registry, category)
        .map(|c| c.full_name.as_str())
        .collect();
    ctx.out.array(names.len());
    for name in names {
        ctx.out.bulk(name.as_bytes());
    }
    Ok(())
}

fn genpass(ctx: &mut Ctx<'_>) -> CmdResult {
    use rand::RngCore;
    if ctx.argc() > 3 {
        return Err(crate::commands::common::subcommand_syntax_error(ctx));
    }
    let bits = if ctx.argc() == 3 {
        parse_i64(ctx.arg(2)).ok_or(Error::NotInteger)?
    } else {
        256
    };
    if bits <= 0 || bits > 4096 {
        return Err(Error::msg("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"));
    }
    let chars = ((bits + 3) / 4) as usize;
    let mut random = vec![0u8; chars.div_ceil(2)];
    rand::rngs::OsRng.fill_bytes(&mut random);
    let mut hex = String::with_capacity(chars + 1);
    for byte in random {
        hex.push(char::from_digit((byte >> 4) as u32, 16).unwrap());
        hex.push(char::from_digit((byte & 15) as u32, 16).unwrap());
    }
    hex.truncate(chars);
    ctx.out.bulk(hex.as_bytes());
    Ok(())
}

fn log(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() > 3 {
        return Err(crate::commands::common::subcommand_syntax_error(ctx));
    }
    let mut count = 10;
    if ctx.argc() == 3 {
        if ctx.arg_is(2, "reset") {
            ctx.server.users.log.clear();
            ctx.out.ok();
            return Ok(());
        }
        count = parse_i64(ctx.arg(2)).ok_or(Error::NotInteger)?.max(0);
    }
    let now_ms = ctx.server.clock.now_ms();
    let entries: Vec<acl_users::LogEntry> = ctx
        .server
        .users
        .log
        .iter()
        .take(count as usize)
        .cloned()
        .collect();
    ctx.out.array(entries.len());
    for entry in entries {
        ctx.out.map(7);
        ctx.out.bulk(b"count");
        ctx.out.integer(entry.count as i64);
        ctx.out.bulk(b"reason");
        ctx.out.bulk(entry.reason.name().as_bytes());
        ctx.out.bulk(b"context");
        ctx.out.bulk(entry.context.name().as_bytes());
        ctx.out.bulk(b"object");
        ctx.out.bulk(&entry.object);
        ctx.out.bulk(b"username");
        ctx.out.bulk(&entry.username);
        ctx.out.bulk(b"age-seconds");
        ctx.out.double((now_ms - entry.at_ms) as f64 / 1000.0);
        ctx.out.bulk(b"client-info");
        ctx.out.bulk(entry.client_info.as_bytes());
    }
    Ok(())
}

fn dryrun(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(id) = ctx.server.users.find(ctx.arg(2)) else {
        return Err(Error::owned(format!(
            "ERR User '{}' not found",
            text_of(crate::base::cstr::c_str(ctx.arg(2)))
        )));
    };
    let line: &[Bytes] = &ctx.args[3..];
    let Ok(command) = ctx.registry.lookup(line) else {
        return Err(Error::owned(format!(
            "ERR Command '{}' not found",
            text_of(crate::base::cstr::c_str(ctx.arg(3)))
        )));
    };
    if !command.arity_ok(line.len()) {
        return Err(Error::owned(format!(
            "ERR wrong number of arguments for '{}' command",
            command.full_name
        )));
    }
    let user = ctx.server.users.get(id);
    match acl_rules::check(user, command, line) {
        Ok(()) => ctx.out.ok(),
        Err(denied) => {
            let text = match denied.reason {
                acl_users::Reason::Command => format!(
                    "This user has no permissions to run the '{}' command",
                    command.full_name
                ),
                acl_users::Reason::Key => format!(
                    "This user has no permissions to access the '{}' key",
                    text_of(&line[denied.at])
                ),
                _ => format!(
                    "This user has no permissions to access the '{}' channel",
                    text_of(&line[denied.at])
                ),
            };
            ctx.out.bulk(text.as_bytes());
        }
    }
    Ok(())
}

const ADMIN: Flags = Flags::ADMIN
    .union(Flags::NOSCRIPT)
    .union(Flags::LOADING)
    .union(Flags::STALE);

const PLAIN: Flags = Flags::NOSCRIPT.union(Flags::LOADING).union(Flags::STALE);

static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("cat", -2, cat).flags(PLAIN).doc(
        "server",
        "6.0.0",
        "O(1) since the categories and commands are a fixed set.",
        "Lists the ACL categories, or the commands of one.",
        "[categoryname]",
    ),
    CommandSpec::new("deluser", -3, deluser).flags(ADMIN).doc(
        "server",
        "6.0.0",
        "O(1) amortized time considering the typical user.",
        "Deletes users and closes their connections.",
        "username...",
    ),
    CommandSpec::new("dryrun", -4, dryrun).flags(ADMIN).doc(
        "server",
        "7.0.0",
        "O(1).",
        "Tells whether a user could run a command line, without running it.",
        "username command [arg...]",
    ),
    CommandSpec::new("genpass", -2, genpass).flags(PLAIN).doc(
        "server",
        "6.0.0",
        "O(N)",
        "Generates a random password (256 bits unless told).",
        "[bits:integer]",
    ),
    CommandSpec::new("getuser", 3, getuser).flags(ADMIN).doc(
        "server",
        "6.0.0",
        "O(N). Where N is the number of password, command and pattern rules that the user has.",
        "Describes a user: flags, password hashes, commands, keys, channels, selectors.",
        "username",
    ),
    CommandSpec::new("help", 2, help)
        .flags(Flags::LOADING.union(Flags::STALE))
        .doc("server", "6.0.0", "O(1)", "Lists the ACL subcommands.", ""),
    CommandSpec::new("list", 2, list).flags(ADMIN).doc(
        "server",
        "6.0.0",
        "O(N). Where N is the number of configured users.",
        "Lists every user as the rules that define it.",
        "",
    ),
    CommandSpec::new("load", 2, load).flags(ADMIN).doc(
        "server",
        "6.0.0",
        "O(N). Where N is the number of configured users.",
        "Replaces the users by those of the ACL file.",
        "",
    ),
    CommandSpec::new("log", -2, log).flags(ADMIN).doc(
        "server",
        "6.0.0",
        "O(N) with N being the number of entries shown.",
        "Shows the newest refusals and failed logins, or empties the log.",
        "[count:integer|RESET]",
    ),
    CommandSpec::new("save", 2, save).flags(ADMIN).doc(
        "server",
        "6.0.0",
        "O(N). Where N is the number of configured users.",
        "Writes the users to the ACL file.",
        "",
    ),
    CommandSpec::new("setuser", -3, setuser).flags(ADMIN).doc(
        "server",
        "6.0.0",
        "O(N). Where N is the number of rules provided.",
        "Creates a user or changes its rules.",
        "username [rule...]",
    ),
    CommandSpec::new("users", 2, users).flags(ADMIN).doc(
        "server",
        "6.0.0",
        "O(N). Where N is the number of configured users.",
        "Lists the users' names.",
        "",
    ),
    CommandSpec::new("whoami", 2, whoami).flags(PLAIN).doc(
        "server",
        "6.0.0",
        "O(1)",
        "Returns the name of the connection's user.",
        "",
    ),
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec::container("acl", SUBCOMMANDS)
    .acl(Acl::NONE)
    .doc(
        "server",
        "6.0.0",
        "Depends on subcommand.",
        "Container for the commands that manage ACL users.",
        "",
    )];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever an ACL file holds, loading it answers users or errors, never a panic; and
        /// a file that loads describes its users in lines that load to the same users.
        #[test]
        fn acl_files_never_panic_and_round_trip(
            lines in proptest::collection::vec(
                proptest::collection::vec(
                    prop_oneof![
                        Just("user".to_string()), Just("on".to_string()), Just("off".to_string()),
                        Just("nopass".to_string()), Just(">pw".to_string()), Just("<pw".to_string()),
                        Just("~k*".to_string()), Just("%R~r*".to_string()), Just("&ch".to_string()),
                        Just("+@all".to_string()), Just("-@all".to_string()), Just("+get".to_string()),
                        Just("-config|set".to_string()), Just("+select|0".to_string()),
                        Just("(~x".to_string()), Just("+set)".to_string()), Just("(+hset ~h)".to_string()),
                        Just("allkeys".to_string()), Just("reset".to_string()), Just("\t".to_string()),
                        "[a-z]{1,3}", "[ -~]{0,6}",
                    ],
                    0..8,
                ),
                0..6,
            ),
            raw in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let registry = crate::commands::registry();
            let current = Users::new(b"");
            let _ = parse_acl_file(&raw, "f", &current, registry, false);
            // Most lines name a user (a different one each, or the same twice: an error).
            let text = lines
                .iter()
                .enumerate()
                .map(|(i, l)| format!("user u{} {}", i % 4, l.join(" ")))
                .collect::<Vec<_>>()
                .join("\n");
            if let Ok(users) = parse_acl_file(text.as_bytes(), "f", &current, registry, false) {
                let mut described = Vec::new();
                for (_, user) in users.iter() {
                    described.extend(user_line(user, registry));
                    described.push(b'\n');
                }
                let again = parse_acl_file(&described, "f", &current, registry, false)
                    .expect("a description loads");
                let names = |u: &Users| u.iter().map(|(_, u)| user_line(u, registry)).collect::<Vec<_>>();
                prop_assert_eq!(names(&again), names(&users));
            }
        }
    }

    /// Found by the `acl_file` fuzz target: names and patterns that are not UTF-8 were written
    /// back by ACL SAVE with replacement characters, so a saved file named other users.
    #[test]
    fn acl_save_keeps_names_and_patterns_that_are_not_text() {
        let file: &[u8] = b"user app\xef\xbf\xbd\xef on nopass ~*def +@all\n\
user app\xe0\x90\x91\xe4>pw ~app:* %R~r*:* %R~r* &\xdf\xd4\xbf\x8dead +set (~x +get)\n";
        let registry = crate::commands::registry();
        let users = parse_acl_file(file, "f", &Users::new(b""), registry, false).unwrap();
        let mut saved = Vec::new();
        for (_, user) in users.iter() {
            saved.extend(user_line(user, registry));
            saved.push(b'\n');
        }
        let name: &[u8] = b"user app\xe0\x90\x91\xe4>pw ";
        assert!(saved.windows(name.len()).any(|w| w == name));
        let again = parse_acl_file(&saved, "f", &Users::new(b""), registry, false).unwrap();
        let lines = |u: &Users| {
            u.iter()
                .map(|(_, u)| user_line(u, registry))
                .collect::<Vec<_>>()
        };
        assert_eq!(lines(&again), lines(&users));
        assert_eq!(again.len(), 3);
    }

    #[test]
    fn trim_like_sdstrim() {
        assert_eq!(trim(b"  user a \r", b" \t\r\n"), b"user a");
        assert_eq!(trim(b" \t ", b" \t\r\n"), b"");
        assert_eq!(trim(b"", b" "), b"");
    }
}
