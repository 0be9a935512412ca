//! Connection commands: PING, ECHO, QUIT, SELECT, and the connection's identity and protocol —
//! AUTH, HELLO, RESET.
//!
//! AUTH and HELLO … AUTH log in as an ACL user (`crate::model::acl_users`; `requirepass` is the default
//! user's password); RESET returns to the default user.
//! HELLO switches the connection's protocol; every later reply is written in that version by the
//! [`embedis_protocol::Writer`], so nothing else needs to know about RESP3.

use embedis_protocol::number::parse_i64;
use embedis_protocol::Version;

use crate::base::cstr::c_str;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::client::ReplyMode;

fn ping(ctx: &mut Ctx<'_>) -> CmdResult {
    // A RESP2 subscriber gets PING's answer in the shape of a pushed message.
    if ctx.client.resp == Version::Resp2 && ctx.client.subs.total() > 0 && ctx.argc() <= 2 {
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        ctx.out.bulk(if ctx.argc() == 2 { ctx.arg(1) } else { b"" });
        return Ok(());
    }
    match ctx.argc() {
        1 => ctx.out.simple(b"PONG"),
        2 => ctx.out.bulk(ctx.arg(1)),
        _ => return Err(Error::WrongArity("ping".into())),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.bulk(ctx.arg(1));
    Ok(())
}

fn quit(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn select(ctx: &mut Ctx<'_>) -> CmdResult {
    // Redis reads the index as a C int: beyond 32 bits is its range error, not "out of range".
    let index = crate::commands::common::int32_arg(ctx, 1, None)?;
    // A cluster node keeps its keys in database 0 only.
    if ctx.server.cluster.enabled && index != 0 {
        return Err(Error::msg("ERR SELECT is not allowed in cluster mode"));
    }
    ctx.client.db = crate::commands::common::db_index(ctx, index)?;
    ctx.out.ok();
    Ok(())
}

/// Authenticates the connection as `username` if the user exists, is on and `password` is one
/// of its own (Redis's `ACLAuthenticateUser`); a failure is written in the ACL log and answered
/// `-WRONGPASS`.
fn authenticate(ctx: &mut Ctx<'_>, username: &[u8], password: &[u8]) -> CmdResult {
    let found = ctx.server.users.find(username).filter(|&id| {
        let user = ctx.server.users.get(id);
        user.enabled && user.password_ok(password)
    });
    let Some(id) = found else {
        let context = crate::kernel::gates::acl_context(ctx.client);
        let denied = crate::kernel::acl_rules::Denied {
            reason: crate::model::acl_users::Reason::Auth,
            at: 0,
        };
        crate::kernel::gates::log_acl_denial(
            ctx.server,
            ctx.client,
            (denied, context),
            (Some(ctx.cmd), ctx.args),
            Some(username),
        );
        return Err(Error::WrongPass);
    };
    ctx.client.authenticated = true;
    ctx.client.user = id;
    ctx.client.user_name = ctx.server.users.get(id).name.clone();
    Ok(())
}

fn auth(ctx: &mut Ctx<'_>) -> CmdResult {
    let (username, password) = match ctx.argc() {
        2 => {
            if ctx.server.users.default_user().nopass {
                return Err(Error::msg("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"));
            }
            (bytes::Bytes::from_static(b"default"), ctx.args[1].clone())
        }
        3 => (ctx.args[1].clone(), ctx.args[2].clone()),
        _ => return Err(Error::Syntax),
    };
    authenticate(ctx, &username, &password)?;
    ctx.out.ok();
    Ok(())
}

/// Redis's rule for connection names (CLIENT SETNAME, HELLO SETNAME): printable ASCII without
/// spaces.
pub fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

/// Sets the connection's name (empty = no name), with Redis's error for a bad one.
pub fn set_client_name(ctx: &mut Ctx<'_>, name: &[u8]) -> CmdResult {
    if !valid_name(name) {
        return Err(Error::msg(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    ctx.client.name = name.to_vec();
    Ok(())
}

fn hello(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut version = None;
    if ctx.argc() >= 2 {
        let v = parse_i64(ctx.arg(1)).ok_or(Error::msg(
            "ERR Protocol version is not an integer or out of range",
        ))?;
        version = Some(match v {
            2 => Version::Resp2,
            3 => Version::Resp3,
            _ => return Err(Error::msg("NOPROTO unsupported protocol version")),
        });
    }
    let mut credentials = None;
    let mut j = 2;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        let option = ctx.arg(j);
        if option.eq_ignore_ascii_case(b"auth") && more >= 2 {
            credentials = Some((&ctx.args[j + 1], &ctx.args[j + 2]));
            j += 2;
        } else if option.eq_ignore_ascii_case(b"setname") && more >= 1 {
            // Redis 7.0 names the connection as it reads the option, before authenticating
            // and even if a later option is refused.
            set_client_name(ctx, ctx.arg(j + 1))?;
            j += 1;
        } else {
            let mut line = b"ERR Syntax error in HELLO option '".to_vec();
            line.extend_from_slice(c_str(option));
            line.push(b'\'');
            return Err(Error::bytes(line));
        }
        j += 1;
    }
    if let Some((username, password)) = credentials {
        let (username, password) = (username.clone(), password.clone());
        authenticate(ctx, &username, &password)?;
    }
    if !ctx.client.authenticated {
        return Err(Error::msg("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(version) = version {
        ctx.client.resp = version;
    }
    // The reply is written in the protocol just chosen.
    let mut out = embedis_protocol::Writer::new(ctx.out.buffer(), ctx.client.resp);
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(ctx.server.config.compat_version.redis_version().as_bytes());
    out.bulk(b"proto");
    out.integer(if ctx.client.resp == Version::Resp3 {
        3
    } else {
        2
    });
    out.bulk(b"id");
    out.integer(ctx.client.id as i64);
    out.bulk(b"mode");
    out.bulk(if ctx.server.cluster.enabled {
        b"cluster".as_slice()
    } else {
        b"standalone"
    });
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    crate::commands::modules::write_module_list(&mut out, ctx.server.config.compat_version);
    Ok(())
}

/// RESET: what Redis's `clearClientConnectionState` undoes — MONITOR, the selected database,
/// the protocol, authentication, the name, CLIENT REPLY, every pub/sub subscription, the open
/// transaction and the watched keys. CLIENT NO-EVICT stays, as in Redis 7.0.
fn reset(ctx: &mut Ctx<'_>) -> CmdResult {
    crate::commands::transactions::discard_transaction(ctx);
    if ctx.client.monitor {
        ctx.client.monitor = false;
        let id = ctx.client.id;
        ctx.server.monitors.retain(|&m| m != id);
    }
    crate::model::client::unsubscribe_all(&mut ctx.server.pubsub, ctx.client);
    let id = ctx.client.id;
    ctx.ks.tracking.disable(id, &mut ctx.client.tracking);
    ctx.client.db = 0;
    ctx.client.resp = Version::Resp2;
    // The default user again, authenticated if it needs no password (`clientSetDefaultAuth`).
    ctx.client.user = crate::model::acl_users::DEFAULT_USER;
    ctx.client.user_name = ctx.server.users.default_user().name.clone();
    ctx.client.authenticated = !ctx.server.users.default_needs_auth();
    ctx.client.name.clear();
    ctx.client.asking = false;
    ctx.client.cluster_readonly = false;
    if ctx.client.reply_mode != ReplyMode::Skip {
        ctx.client.reply_mode = ReplyMode::On;
    }
    embedis_protocol::Writer::new(ctx.out.buffer(), Version::Resp2).simple(b"RESET");
    Ok(())
}

/// The flags of the commands a client may send before authenticating (AUTH, HELLO, RESET, QUIT).
const NO_AUTH_FLAGS: Flags = Flags::NOSCRIPT
    .union(Flags::LOADING)
    .union(Flags::STALE)
    .union(Flags::FAST)
    .union(Flags::NO_AUTH)
    .union(Flags::ALLOW_BUSY);

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("ping", -1, ping)
        .flags(Flags::FAST)
        .acl(Acl::CONNECTION)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .doc(
            "connection",
            "1.0.0",
            "O(1)",
            "Returns the server's liveliness response.",
            "[message]",
        ),
    CommandSpec::new("echo", 2, echo)
        .flags(Flags::LOADING.union(Flags::STALE).union(Flags::FAST))
        .acl(Acl::CONNECTION)
        .doc(
            "connection",
            "1.0.0",
            "O(1)",
            "Returns the given string.",
            "message",
        ),
    CommandSpec::new("quit", -1, quit)
        .flags(
            Flags::NOSCRIPT
                .union(Flags::LOADING)
                .union(Flags::STALE)
                .union(Flags::FAST)
                .union(Flags::NO_AUTH)
                .union(Flags::ALLOW_BUSY),
        )
        .acl(Acl::CONNECTION)
        .doc("connection", "1.0.0", "O(1)", "Closes the connection.", ""),
    CommandSpec::new("auth", -2, auth)
        .flags(NO_AUTH_FLAGS)
        .acl(Acl::CONNECTION)
        .doc(
            "connection",
            "1.0.0",
            "O(N) where N is the number of passwords defined for the user",
            "Authenticates the connection, as the default user or a named one.",
            "[username] password",
        ),
    CommandSpec::new("hello", -1, hello)
        .flags(NO_AUTH_FLAGS)
        .acl(Acl::CONNECTION)
        .doc(
            "connection",
            "6.0.0",
            "O(1)",
            "Chooses the protocol version, optionally authenticating and naming the connection; answers with facts about the server.",
            "[arguments=(protover:integer [AUTH username password] [SETNAME clientname])]",
        ),
    CommandSpec::new("reset", 1, reset)
        .flags(NO_AUTH_FLAGS)
        .acl(Acl::CONNECTION)
        .doc(
            "connection",
            "6.2.0",
            "O(1)",
            "Returns the connection to the state of a new one.",
            "",
        ),
    CommandSpec::new("select", 2, select)
        .flags(Flags::LOADING.union(Flags::STALE).union(Flags::FAST))
        .acl(Acl::CONNECTION)
        .doc(
            "connection",
            "1.0.0",
            "O(1)",
            "Changes the selected database.",
            "index:integer",
        ),
];
