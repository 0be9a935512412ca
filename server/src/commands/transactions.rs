//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, and the per-client queue they manage.
//!
//! After MULTI the engine queues each command that passes its generic gates instead of running
//! it ([`crate::model::multi::Transaction::queue`], called from `Engine::process`), answering `+QUEUED`; a command refused by a gate
//! (unknown, wrong arity, not allowed in a transaction…) marks the transaction aborted, and EXEC
//! then answers EXECABORT. EXEC runs the queue through [`crate::kernel::call::call`] as Redis's `call`
//! does — statistics, MONITOR lines, blocking commands run as their non-blocking twins — and
//! gathers the replies in one array, or answers a null array if a watched key changed (the
//! watch index is [`crate::model::watch`], inside the keyspace).

use crate::base::error::{CmdResult, Error};
use crate::kernel::call::{How, Parts};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::{flag, KeySpec};
use crate::kernel::table::{Acl, CommandSpec, Flags};

fn multi(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(Error::msg("ERR MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(Box::default());
    ctx.out.ok();
    Ok(())
}

/// Ends the client's transaction, if any, and forgets what it watches (Redis's
/// `discardTransaction`; also RESET's and a rejected EXEC's).
pub fn discard_transaction(ctx: &mut Ctx<'_>) {
    ctx.client.multi = None;
    ctx.ks.watches.unwatch_all(ctx.client.id);
}

fn discard(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.client.multi.is_none() {
        return Err(Error::msg("ERR DISCARD without MULTI"));
    }
    discard_transaction(ctx);
    ctx.out.ok();
    Ok(())
}

fn exec(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(transaction) = ctx.client.multi.take() else {
        return Err(Error::msg("ERR EXEC without MULTI"));
    };
    // Its commands propagate, wrapped in MULTI/EXEC when more than one does; EXEC never.
    ctx.prevent_propagation();
    let id = ctx.client.id;
    let broken = ctx.ks.watches.is_broken(id) || ctx.ks.watched_key_expired(id, ctx.now_ms);
    ctx.ks.watches.unwatch_all(id);
    if transaction.aborted {
        return Err(Error::msg(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    if broken {
        ctx.out.null_array();
        return Ok(());
    }
    ctx.out.array(transaction.commands.len());
    let exec_name = ctx.client.last_command;
    for (command, args) in &transaction.commands {
        let command = &ctx.registry.commands[*command];
        // The rules may have changed since the command was queued: checked again, as Redis does.
        let multi = crate::model::acl_users::Context::Multi;
        if let Some(denied) =
            crate::kernel::gates::acl_check(ctx.server, ctx.client, (command, args), multi)
        {
            let error = Error::owned(crate::kernel::acl_rules::exec_error(denied.reason));
            ctx.server.count_error(&error.code());
            ctx.out.error_line(&error.line());
            continue;
        }
        let mut parts = Parts {
            ks: &mut *ctx.ks,
            server: &mut *ctx.server,
            clients: &mut *ctx.clients,
            registry: ctx.registry,
        };
        // A queued HELLO may change the protocol of the replies after it.
        let version = ctx.client.resp;
        let block = crate::kernel::call::call(
            &mut parts,
            ctx.client,
            command,
            args,
            ctx.out.buffer(),
            version,
            ctx.now_us,
            How::IN_MULTI,
        );
        debug_assert!(block.is_none(), "nothing blocks inside EXEC");
        // CLIENT LIST shows EXEC as the running command throughout, as Redis does.
        ctx.client.last_command = exec_name;
    }
    Ok(())
}

fn watch(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(Error::msg("ERR WATCH inside MULTI is not allowed"));
    }
    let db = ctx.db();
    let id = ctx.client.id;
    for key in &ctx.args[1..] {
        // A key stored but past its deadline counts as already gone (see crate::model::watch).
        let expired = ctx.ks.dbs[db].is_expired(key, ctx.now_ms);
        ctx.ks.watches.watch(id, db, key, expired);
    }
    ctx.out.ok();
    Ok(())
}

fn unwatch(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.ks.watches.unwatch_all(ctx.client.id);
    ctx.out.ok();
    Ok(())
}

const CONTROL_FLAGS: Flags = Flags::NOSCRIPT
    .union(Flags::LOADING)
    .union(Flags::STALE)
    .union(Flags::FAST)
    .union(Flags::ALLOW_BUSY);

static WATCHED_KEYS: &[KeySpec] = &[KeySpec::range(1, -1, 1, flag::RO)];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("multi", 1, multi)
        .flags(CONTROL_FLAGS)
        .acl(Acl::TRANSACTION)
        .doc(
            "transactions",
            "1.2.0",
            "O(1)",
            "Opens a transaction: the following commands are queued until EXEC or DISCARD.",
            "",
        ),
    CommandSpec::new("exec", 1, exec)
        .flags(
            Flags::NOSCRIPT
                .union(Flags::LOADING)
                .union(Flags::STALE)
                .union(Flags::SKIP_SLOWLOG),
        )
        .acl(Acl::TRANSACTION)
        .doc(
            "transactions",
            "1.2.0",
            "Depends on commands in the transaction",
            "Runs the queued commands of the transaction and answers all their replies at once.",
            "",
        ),
    CommandSpec::new("discard", 1, discard)
        .flags(CONTROL_FLAGS)
        .acl(Acl::TRANSACTION)
        .doc(
            "transactions",
            "2.0.0",
            "O(N), when N is the number of queued commands",
            "Drops the queued commands of the transaction and forgets the watched keys.",
            "",
        ),
    CommandSpec::new("watch", -2, watch)
        .flags(CONTROL_FLAGS)
        .acl(Acl::TRANSACTION)
        .keys(WATCHED_KEYS)
        .doc(
            "transactions",
            "2.2.0",
            "O(1) for every key.",
            "Makes the next EXEC fail if any of these keys is modified before it.",
            "key...",
        ),
    CommandSpec::new("unwatch", 1, unwatch)
        .flags(CONTROL_FLAGS)
        .acl(Acl::TRANSACTION)
        .doc(
            "transactions",
            "2.2.0",
            "O(1)",
            "Forgets every key this connection watches.",
            "",
        ),
];
