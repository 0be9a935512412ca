//! CLIENT: the connection-management container — naming (SETNAME, GETNAME, SETINFO), listing
//! (ID, INFO, LIST), killing, reply modes, CLIENT PAUSE / UNPAUSE, CLIENT UNBLOCK.
//!
//! A handler cannot reach into another client's blocked state or close its connection while the
//! engine is lent out to it, so CLIENT KILL, UNBLOCK and UNPAUSE decide and reply here and leave
//! the act itself to the engine as an [`EngineRequest`], carried out before the next command.
//! CLIENT PAUSE only records the pause: the engine's gate postpones the affected commands and
//! re-runs them in arrival order when the pause ends.
//!
//! Client tracking's subcommands (TRACKING, CACHING, GETREDIR, TRACKINGINFO) check their options
//! and report state here; the tables live in [`crate::model::tracking`] and the messages are sent by
//! [`crate::kernel::invalidation`]. CLIENT SETINFO is Redis 7.2's (modern client libraries send it on
//! connect); it is implemented as 7.2 does it.

use embedis_protocol::number::parse_i64;

use crate::base::compat::CompatVersion;
use crate::base::cstr::c_str;
use crate::base::error::{CmdResult, Error};
use crate::commands::common::subcommand_syntax_error;
use crate::commands::common::{deadline_from_ms, write_help};
use crate::commands::connection::{set_client_name, valid_name};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::blocking::BlockReason;
use crate::model::client::{ClientId, ClientState, ReplyMode};
use crate::model::state::EngineRequest;
use crate::model::tracking::{Options as TrackingOptions, Tracking};

/// Writes CLIENT LIST / CLIENT INFO text: a bulk string, or a verbatim `txt` string in RESP3.
fn write_text(ctx: &mut Ctx<'_>, text: &str) {
    ctx.out.verbatim(b"txt", text.as_bytes());
}

fn caching(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(tracking) = ctx.client.tracking.as_mut() else {
        return Err(Error::msg("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"));
    };
    let mode = &ctx.args[2];
    if mode.eq_ignore_ascii_case(b"yes") {
        if !tracking.optin {
            return Err(Error::msg(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if mode.eq_ignore_ascii_case(b"no") {
        if !tracking.optout {
            return Err(Error::msg(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(Error::Syntax);
    }
    // Lasts for the next command or transaction (see `crate::kernel::invalidation::after_call`).
    tracking.caching = true;
    ctx.out.ok();
    Ok(())
}

/// CLIENT TRACKING ON|OFF with its options, checked in Redis's order and with its texts.
fn tracking(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut options = TrackingOptions::default();
    let argc = ctx.argc();
    let mut j = 3;
    while j < argc {
        let more = argc - 1 - j;
        if ctx.arg_is(j, "redirect") && more > 0 {
            j += 1;
            if options.redirect != 0 {
                return Err(Error::msg(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            // Negative ids wrap around as in Redis, and so name nobody.
            let id = ctx.int_arg(j)? as ClientId;
            if id != ctx.client.id && ctx.clients.get(id).is_none() {
                return Err(Error::msg(
                    "ERR The client ID you want redirect to does not exist",
                ));
            }
            options.redirect = id;
        } else if ctx.arg_is(j, "bcast") {
            options.bcast = true;
        } else if ctx.arg_is(j, "optin") {
            options.optin = true;
        } else if ctx.arg_is(j, "optout") {
            options.optout = true;
        } else if ctx.arg_is(j, "noloop") {
            options.noloop = true;
        } else if ctx.arg_is(j, "prefix") && more > 0 {
            j += 1;
            options.prefixes.push(ctx.args[j].clone());
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let id = ctx.client.id;
    if ctx.arg_is(2, "off") {
        ctx.ks.tracking.disable(id, &mut ctx.client.tracking);
        ctx.out.ok();
        return Ok(());
    }
    if !ctx.arg_is(2, "on") {
        return Err(Error::Syntax);
    }
    if !options.bcast && !options.prefixes.is_empty() {
        return Err(Error::msg(
            "ERR PREFIX option requires BCAST mode to be enabled",
        ));
    }
    let current = ctx.client.tracking.as_deref();
    if current.is_some_and(|t| t.bcast != options.bcast) {
        return Err(Error::msg("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if options.bcast && (options.optin || options.optout) {
        return Err(Error::msg(
            "ERR OPTIN and OPTOUT are not compatible with BCAST",
        ));
    }
    if options.optin && options.optout {
        return Err(Error::msg(
            "ERR You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if current.is_some_and(|t| (options.optin && t.optout) || (options.optout && t.optin)) {
        return Err(Error::msg("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if options.bcast {
        let existing = current.map(|t| t.prefixes.clone()).unwrap_or_default();
        if let Some(collision) = Tracking::prefix_collision(&existing, &options.prefixes) {
            if collision.fatal {
                return Err(Error::bytes(collision.text));
            }
            // Redis 7.0 reports an overlap among the new prefixes after the first one and then
            // goes on to enable tracking and answer OK as well: two replies, reproduced.
            ctx.out.error_line(&collision.text);
            ctx.server.count_error("ERR");
            ctx.server.command_stats[ctx.cmd.id].failed_calls += 1;
        }
    }
    ctx.ks
        .tracking
        .enable(id, &mut ctx.client.tracking, options);
    ctx.out.ok();
    Ok(())
}

fn getname(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.client.name.is_empty() {
        ctx.out.null();
    } else {
        ctx.out.bulk(&ctx.client.name);
    }
    Ok(())
}

fn getredir(ctx: &mut Ctx<'_>) -> CmdResult {
    let redirect = ctx
        .client
        .tracking
        .as_ref()
        .map_or(-1, |t| t.redirect as i64);
    ctx.out.integer(redirect);
    Ok(())
}

fn trackinginfo(ctx: &mut Ctx<'_>) -> CmdResult {
    let tracking = ctx.client.tracking.as_deref();
    let mut flags: Vec<&[u8]> = Vec::new();
    match tracking {
        None => flags.push(b"off"),
        Some(t) => {
            flags.push(b"on");
            if t.bcast {
                flags.push(b"bcast");
            }
            if t.optin {
                flags.push(b"optin");
                if t.caching {
                    flags.push(b"caching-yes");
                }
            }
            if t.optout {
                flags.push(b"optout");
                if t.caching {
                    flags.push(b"caching-no");
                }
            }
            if t.noloop {
                flags.push(b"noloop");
            }
            if t.broken_redirect {
                flags.push(b"broken_redirect");
            }
        }
    }
    ctx.out.map(3);
    ctx.out.bulk(b"flags");
    ctx.out.set(flags.len());
    for flag in flags {
        ctx.out.bulk(flag);
    }
    ctx.out.bulk(b"redirect");
    ctx.out.integer(tracking.map_or(-1, |t| t.redirect as i64));
    ctx.out.bulk(b"prefixes");
    let prefixes = tracking.map(|t| t.prefixes.iter().collect::<Vec<_>>());
    let prefixes = prefixes.unwrap_or_default();
    ctx.out.array(prefixes.len());
    for prefix in prefixes {
        ctx.out.bulk(prefix);
    }
    Ok(())
}

const HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    In OPTIN (YES) or OPTOUT (NO) tracking mode: track, or do not track, the keys read by",
    "    the next command or transaction.",
    "GETNAME",
    "    Returns the name of this connection.",
    "GETREDIR",
    "    Returns the id of the client this connection's invalidations are redirected to (0: none,",
    "    -1: tracking is off).",
    "ID",
    "    Returns the id of this connection.",
    "INFO",
    "    Describes this connection, in the format of CLIENT LIST.",
    "KILL <ip:port>",
    "    Closes the connection from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Closes the connections matching every filter given. Filters:",
    "    * ID <client-id>",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "    * USER <username>",
    "    * ADDR <ip:port>: the address the client connected from.",
    "    * LADDR <ip:port>: the address of the server it connected to.",
    "    * SKIPME (YES|NO): whether to spare this connection (YES unless told).",
    "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <client-id> [<client-id> ...]]",
    "    Describes the connections, one line each.",
    "NO-EVICT (ON|OFF)",
    "    Exempts this connection from client eviction, or not.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Holds back the commands of every client for <timeout> milliseconds: all",
    "    commands (ALL, the default), or only those that may write (WRITE).",
    "REPLY (ON|OFF|SKIP)",
    "    Turns replies on, off, or off for the next command only.",
    "SETINFO (LIB-NAME|LIB-VER) <value>",
    "    Records the client library's name or version (shown by CLIENT LIST).",
    "SETNAME <name>",
    "    Names this connection.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]] [OPTIN] [OPTOUT] [NOLOOP]",
    "    Turns server-assisted client-side caching on or off: this connection (or <id>) is told",
    "    when keys it read change, or keys under the prefixes in BCAST mode.",
    "TRACKINGINFO",
    "    Describes this connection's client-side caching state.",
    "UNBLOCK <client-id> [TIMEOUT|ERROR]",
    "    Ends another client's blocking command, as if it timed out (default) or with an",
    "    error.",
    "UNPAUSE",
    "    Ends CLIENT PAUSE.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

fn id(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.integer(ctx.client.id as i64);
    Ok(())
}

fn info(ctx: &mut Ctx<'_>) -> CmdResult {
    let watching = ctx.ks.watches.watching(ctx.client.id);
    let mut text = ctx
        .client
        .info_line(ctx.now_ms, watching, ctx.server.config.compat_version);
    text.push('\n');
    write_text(ctx, &text);
    Ok(())
}

/// Redis's client types, for TYPE filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientType {
    Normal,
    Replica,
    Master,
    PubSub,
}

fn client_type(name: &[u8]) -> CmdResult<ClientType> {
    let lower = name.to_ascii_lowercase();
    Ok(match lower.as_slice() {
        b"normal" => ClientType::Normal,
        b"slave" | b"replica" => ClientType::Replica,
        b"master" => ClientType::Master,
        b"pubsub" => ClientType::PubSub,
        _ => {
            let mut line = b"ERR Unknown client type '".to_vec();
            line.extend_from_slice(c_str(name));
            line.push(b'\'');
            return Err(Error::bytes(line));
        }
    })
}

/// The type Redis gives a client: a replica attached by SYNC/PSYNC; MONITOR clients count as
/// normal; a client with any subscription is a pub/sub client; the primary's link is `master`.
fn type_of(client: &ClientState) -> ClientType {
    if client.master {
        ClientType::Master
    } else if client.replica {
        ClientType::Replica
    } else if client.subs.total() > 0 {
        ClientType::PubSub
    } else {
        ClientType::Normal
    }
}

/// Every client, the caller included, in id order (Redis lists them in connection order).
fn all_clients<'a>(ctx: &'a Ctx<'_>) -> Vec<&'a ClientState> {
    let mut all: Vec<&ClientState> = ctx.clients.iter().collect();
    all.push(&*ctx.client);
    all.sort_unstable_by_key(|c| c.id);
    all
}

fn list(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut wanted_type = None;
    let mut ids: Option<Vec<i64>> = None;
    if ctx.argc() == 4 && ctx.arg_is(2, "type") {
        wanted_type = Some(client_type(ctx.arg(3))?);
    } else if ctx.argc() >= 4 && ctx.arg_is(2, "id") {
        let mut parsed = Vec::with_capacity(ctx.argc() - 3);
        for i in 3..ctx.argc() {
            parsed.push(parse_i64(ctx.arg(i)).ok_or(Error::msg("ERR Invalid client ID"))?);
        }
        ids = Some(parsed);
    } else if ctx.argc() != 2 {
        return Err(Error::Syntax);
    }
    let mut text = String::new();
    {
        let all = all_clients(ctx);
        let mut push = |c: &ClientState| {
            text.push_str(&c.info_line(
                ctx.now_ms,
                ctx.ks.watches.watching(c.id),
                ctx.server.config.compat_version,
            ));
            text.push('\n');
        };
        match &ids {
            // Redis looks each id up in turn: repeated ids are listed again.
            Some(ids) => {
                for &id in ids {
                    if let Some(c) = all.iter().find(|c| c.id as i64 == id) {
                        push(c);
                    }
                }
            }
            None => {
                for c in all
                    .iter()
                    .filter(|c| wanted_type.is_none_or(|t| type_of(c) == t))
                {
                    push(c);
                }
            }
        }
    }
    write_text(ctx, &text);
    Ok(())
}

/// CLIENT KILL's filters (new form); `None` = not filtered on.
#[derive(Default)]
struct KillFilter<'a> {
    id: Option<ClientId>,
    kind: Option<ClientType>,
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    user: Option<crate::model::acl_users::UserId>,
    skip_me: bool,
    /// MAXAGE (Redis 7.4): only clients connected at least this many seconds.
    max_age: Option<i64>,
}

impl KillFilter<'_> {
    fn matches(&self, client: &ClientState, caller: ClientId, now_ms: i64) -> bool {
        // Ages in whole seconds, as Redis compares them.
        let age = now_ms / 1000 - client.created_ms / 1000;
        self.max_age.is_none_or(|max| age >= max)
            && self.addr.is_none_or(|a| client.peer.addr().as_bytes() == a)
            && self
                .laddr
                .is_none_or(|a| client.peer.local_addr().as_bytes() == a)
            && self.kind.is_none_or(|t| type_of(client) == t)
            && self.id.is_none_or(|id| client.id == id)
            && self.user.is_none_or(|user| client.user == user)
            && !(self.skip_me && client.id == caller)
    }
}

fn kill(ctx: &mut Ctx<'_>) -> CmdResult {
    let old_form = ctx.argc() == 3;
    let filter = if old_form {
        // CLIENT KILL ip:port: the caller is not spared.
        KillFilter {
            addr: Some(ctx.arg(2)),
            ..KillFilter::default()
        }
    } else {
        let mut filter = KillFilter {
            skip_me: true,
            ..KillFilter::default()
        };
        let mut i = 2;
        while i < ctx.argc() {
            let more = i + 1 < ctx.argc();
            if !more {
                return Err(Error::Syntax);
            }
            let value = ctx.arg(i + 1);
            if ctx.arg_is(i, "id") {
                match parse_i64(value) {
                    Some(id) if id >= 1 => filter.id = Some(id as ClientId),
                    _ => return Err(Error::msg("ERR client-id should be greater than 0")),
                }
            } else if ctx.arg_is(i, "maxage") && ctx.registry.version >= CompatVersion::V7_4 {
                match parse_i64(value) {
                    Some(age) if age > 0 => filter.max_age = Some(age),
                    Some(_) => return Err(Error::msg("ERR maxage should be greater than 0")),
                    None => return Err(Error::msg("ERR maxage is not an integer or out of range")),
                }
            } else if ctx.arg_is(i, "type") {
                filter.kind = Some(client_type(value)?);
            } else if ctx.arg_is(i, "addr") {
                filter.addr = Some(value);
            } else if ctx.arg_is(i, "laddr") {
                filter.laddr = Some(value);
            } else if ctx.arg_is(i, "user") {
                let Some(user) = ctx.server.users.find(value) else {
                    let mut line = b"ERR No such user '".to_vec();
                    line.extend_from_slice(c_str(value));
                    line.push(b'\'');
                    return Err(Error::bytes(line));
                };
                filter.user = Some(user);
            } else if ctx.arg_is(i, "skipme") {
                if value.eq_ignore_ascii_case(b"yes") {
                    filter.skip_me = true;
                } else if value.eq_ignore_ascii_case(b"no") {
                    filter.skip_me = false;
                } else {
                    return Err(Error::Syntax);
                }
            } else {
                return Err(Error::Syntax);
            }
            i += 2;
        }
        filter
    };
    let (caller, now_ms) = (ctx.client.id, ctx.now_ms);
    let mut killed = 0;
    for other in ctx.clients.iter() {
        if filter.matches(other, caller, now_ms) {
            ctx.server
                .requests
                .push(EngineRequest::Kill { id: other.id });
            killed += 1;
        }
    }
    if filter.matches(ctx.client, caller, now_ms) {
        // Killing oneself: the reply goes out, then the connection closes.
        ctx.client.close_after_reply = true;
        killed += 1;
    }
    if old_form {
        if killed == 0 {
            return Err(Error::msg("ERR No such client"));
        }
        ctx.out.ok();
    } else {
        ctx.out.integer(killed);
    }
    Ok(())
}

/// The ON|OFF argument of CLIENT NO-EVICT and NO-TOUCH, with Redis's syntax error otherwise.
fn on_off(ctx: &Ctx<'_>) -> CmdResult<bool> {
    if ctx.arg_is(2, "on") {
        Ok(true)
    } else if ctx.arg_is(2, "off") {
        Ok(false)
    } else {
        Err(Error::Syntax)
    }
}

fn no_evict(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.client.no_evict = on_off(ctx)?;
    crate::kernel::client_eviction::update(ctx.server, ctx.ks, ctx.client, 0);
    ctx.out.ok();
    Ok(())
}

/// CLIENT NO-TOUCH ON|OFF (Redis 7.2): the connection's commands leave the LRU/LFU of the
/// keys they read alone, except TOUCH (see `kernel::call`).
fn no_touch(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.client.no_touch = on_off(ctx)?;
    ctx.out.ok();
    Ok(())
}

fn pause(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() > 4 {
        return Err(subcommand_syntax_error(ctx));
    }
    let mut writes_only = false;
    if ctx.argc() == 4 {
        if ctx.arg_is(3, "write") {
            writes_only = true;
        } else if !ctx.arg_is(3, "all") {
            return Err(Error::msg("ERR CLIENT PAUSE mode must be WRITE or ALL"));
        }
    }
    let until_ms = deadline_from_ms(ctx, 2)?;
    // A new pause never weakens an active one: the later end and the stricter mode win.
    let pause = ctx.server.pause_until(until_ms, writes_only);
    // Expired keys stay in place (reading as absent) for as long as the pause lasts.
    ctx.ks.expiry_held_until = pause.until_ms;
    ctx.out.ok();
    Ok(())
}

fn unpause(ctx: &mut Ctx<'_>) -> CmdResult {
    // The pause ends now, for the rest of a MULTI too (Redis's `unpauseClients` runs in the
    // command); the engine re-runs the postponed commands afterwards.
    let pause = ctx.server.end_timed_pause();
    ctx.ks.expiry_held_until = pause.map_or(i64::MIN, |p| p.until_ms);
    ctx.server.requests.push(EngineRequest::Unpause);
    ctx.out.ok();
    Ok(())
}

fn reply(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.arg_is(2, "on") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.out.ok();
    } else if ctx.arg_is(2, "off") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if ctx.arg_is(2, "skip") {
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        return Err(Error::Syntax);
    }
    Ok(())
}

fn setinfo(ctx: &mut Ctx<'_>) -> CmdResult {
    let attr = ctx.arg(2);
    let value = ctx.arg(3);
    let is_name = attr.eq_ignore_ascii_case(b"lib-name");
    if !is_name && !attr.eq_ignore_ascii_case(b"lib-ver") {
        let mut line = b"ERR Unrecognized option '".to_vec();
        line.extend_from_slice(c_str(attr));
        line.push(b'\'');
        return Err(Error::bytes(line));
    }
    if !valid_name(value) {
        let mut line = b"ERR ".to_vec();
        line.extend_from_slice(c_str(attr));
        line.extend_from_slice(b" cannot contain spaces, newlines or special characters.");
        return Err(Error::bytes(line));
    }
    if is_name {
        ctx.client.lib_name = value.to_vec();
    } else {
        ctx.client.lib_ver = value.to_vec();
    }
    ctx.out.ok();
    Ok(())
}

fn setname(ctx: &mut Ctx<'_>) -> CmdResult {
    set_client_name(ctx, ctx.arg(2))?;
    ctx.out.ok();
    Ok(())
}

fn unblock(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argc() > 4 {
        return Err(subcommand_syntax_error(ctx));
    }
    let mut with_error = false;
    if ctx.argc() == 4 {
        if ctx.arg_is(3, "error") {
            with_error = true;
        } else if !ctx.arg_is(3, "timeout") {
            return Err(Error::msg(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ));
        }
    }
    let id = ctx.int_arg(2)?;
    // Only a command blocked on its own account can be unblocked; one postponed by CLIENT
    // PAUSE cannot (Redis 7.0.15 crashes there; later versions answer 0), nor a reply held by
    // a latency fault (Redis has no such state).
    let unblockable = id != ctx.client.id as i64
        && ctx
            .clients
            .get(id as ClientId)
            .and_then(|c| c.blocked.as_ref())
            .is_some_and(|b| {
                matches!(
                    b.reason,
                    BlockReason::Keys(_) | BlockReason::Wait(_) | BlockReason::Replicas { .. }
                )
            });
    if unblockable {
        ctx.server.requests.push(EngineRequest::Unblock {
            id: id as ClientId,
            with_error,
        });
    }
    ctx.out.integer(unblockable as i64);
    Ok(())
}

const BASE: Flags = Flags::NOSCRIPT.union(Flags::LOADING).union(Flags::STALE);

const ADMIN: Flags = Flags::ADMIN.union(BASE);

const fn sub(
    name: &'static str,
    arity: i32,
    handler: crate::kernel::table::Handler,
    flags: Flags,
) -> CommandSpec {
    CommandSpec::new(name, arity, handler)
        .flags(flags)
        .acl(Acl::CONNECTION)
}

static SUBCOMMANDS: &[CommandSpec] = &[
    sub("caching", 3, caching, BASE).doc(
        "connection",
        "6.0.0",
        "O(1)",
        "Tells the server whether to track the keys of the next command (needs tracking mode).",
        "mode=(YES|NO)",
    ),
    sub("getname", 2, getname, BASE).doc(
        "connection",
        "2.6.9",
        "O(1)",
        "Returns the name of the connection, if it has one.",
        "",
    ),
    sub("getredir", 2, getredir, BASE).doc(
        "connection",
        "6.0.0",
        "O(1)",
        "Returns the client id tracking notifications are redirected to (-1: none).",
        "",
    ),
    sub("help", 2, help, Flags::LOADING.union(Flags::STALE)).doc(
        "connection",
        "5.0.0",
        "O(1)",
        "Lists the CLIENT subcommands.",
        "",
    ),
    sub("id", 2, id, BASE).doc(
        "connection",
        "5.0.0",
        "O(1)",
        "Returns the unique id of the connection.",
        "",
    ),
    sub("info", 2, info, BASE)
        .tips(&["nondeterministic_output"])
        .doc(
            "connection",
            "6.2.0",
            "O(1)",
            "Describes the current connection in CLIENT LIST's format.",
            "",
        ),
    sub("kill", -3, kill, ADMIN).doc(
        "connection",
        "2.4.0",
        "O(N) where N is the number of client connections",
        "Closes the connections that match an address or a set of filters.",
        "filter=(ip:port|new-format=([ID client-id:integer]|[TYPE normal_master_slave_pubsub=(NORMAL|MASTER|SLAVE|REPLICA|PUBSUB)]|[USER username]|[ADDR ip:port]|[LADDR ip:port]|[SKIPME yes/no])...)",
    ),
    sub("list", -2, list, ADMIN)
        .tips(&["nondeterministic_output"])
        .doc(
            "connection",
            "2.4.0",
            "O(N) where N is the number of client connections",
            "Describes every connection, one line each, optionally only some types or ids.",
            "[TYPE normal_master_replica_pubsub=(NORMAL|MASTER|REPLICA|PUBSUB)] [ID client-id:integer...]",
        ),
    sub("no-evict", 3, no_evict, ADMIN).doc(
        "connection",
        "7.0.0",
        "O(1)",
        "Exempts the connection from client eviction, or not.",
        "enabled=(ON|OFF)",
    ),
    sub("no-touch", 3, no_touch, BASE).doc(
        "connection",
        "7.2.0",
        "O(1)",
        "Keeps this connection's commands from changing the LRU/LFU of the keys they read, or not.",
        "enabled=(ON|OFF)",
    ),
    sub("pause", -3, pause, ADMIN).doc(
        "connection",
        "2.9.50",
        "O(1)",
        "Holds back the commands of all clients (or only writes) for a number of milliseconds.",
        "timeout:integer [mode=(WRITE|ALL)]",
    ),
    sub("reply", 3, reply, BASE).doc(
        "connection",
        "3.2.0",
        "O(1)",
        "Turns the replies to this connection's commands off, on, or off for the next command only.",
        "on_off_skip=(ON|OFF|SKIP)",
    ),
    sub("setinfo", 4, setinfo, BASE)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "connection",
            "7.2.0",
            "O(1)",
            "Records the name or version of the client library behind the connection.",
            "attr=(LIB-NAME libname|LIB-VER libver)",
        ),
    sub("setname", 3, setname, BASE).doc(
        "connection",
        "2.6.9",
        "O(1)",
        "Names the connection.",
        "connection-name",
    ),
    sub("tracking", -3, tracking, BASE).doc(
        "connection",
        "6.0.0",
        "O(1). Some options may introduce additional complexity.",
        "Turns server-assisted client-side caching (invalidation messages) on or off.",
        "status=(ON|OFF) [REDIRECT client-id:integer] [PREFIX prefix...+] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]",
    ),
    sub("trackinginfo", 2, trackinginfo, BASE).doc(
        "connection",
        "6.2.0",
        "O(1)",
        "Describes the connection's client-side caching state.",
        "",
    ),
    sub("unblock", -3, unblock, ADMIN).doc(
        "connection",
        "5.0.0",
        "O(log N) where N is the number of client connections",
        "Ends the blocking command of another client, as a timeout or with an error.",
        "client-id:integer [timeout_error=(TIMEOUT|ERROR)]",
    ),
    sub("unpause", 2, unpause, ADMIN).doc(
        "connection",
        "6.2.0",
        "O(N) Where N is the number of paused clients",
        "Ends CLIENT PAUSE and lets the held-back commands run.",
        "",
    ),
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec::container("client", SUBCOMMANDS).doc(
    "connection",
    "2.4.0",
    "Depends on subcommand.",
    "Container for the commands that manage client connections.",
    "",
)];
