//! The DEBUG subcommands of cluster mode that Redis's cluster tests use: DROP-CLUSTER-PACKET-FILTER
//! (bus messages of one type are dropped on receipt, the suite's way to cut traffic) and
//! CLUSTERLINK KILL (closes this node's links with another).

use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use embedis_protocol::number::parse_i64;

pub const HELP: &[&str] = &[
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "CLUSTERLINK KILL <to|from|all> <node-id>",
    "    Kills the link based on the direction to/from (both) with the provided node.",
];

/// Runs the subcommand if it is one of these; `None` otherwise.
pub fn run(ctx: &mut Ctx<'_>) -> Option<CmdResult> {
    let argc = ctx.argc();
    if ctx.arg_is(1, "drop-cluster-packet-filter") && argc == 3 {
        return Some(drop_filter(ctx));
    }
    if ctx.arg_is(1, "clusterlink") && argc == 5 && ctx.arg_is(2, "kill") {
        return Some(kill_link(ctx));
    }
    None
}

fn drop_filter(ctx: &mut Ctx<'_>) -> CmdResult {
    let kind =
        parse_i64(ctx.arg(2)).ok_or(Error::msg("ERR value is not an integer or out of range"))?;
    // Redis keeps a C int: a type out of range filters nothing that can arrive.
    ctx.server.cluster.bus.drop_filter = i32::try_from(kind).unwrap_or(i32::MIN);
    ctx.out.ok();
    Ok(())
}

fn kill_link(ctx: &mut Ctx<'_>) -> CmdResult {
    if !ctx.server.cluster.enabled {
        return Err(Error::msg(
            "ERR Debug option only available for cluster mode enabled setup!",
        ));
    }
    let id = ctx.arg(4);
    let (from_only, to_only, all) = (
        ctx.arg_is(3, "from"),
        ctx.arg_is(3, "to"),
        ctx.arg_is(3, "all"),
    );
    let cluster = &mut ctx.server.cluster;
    let number = cluster
        .find(id)
        .ok_or_else(|| Error::owned(format!("ERR Unknown node {}", String::from_utf8_lossy(id))))?;
    let node = cluster.node(number).expect("found");
    let (to, from) = (node.link, node.inbound_link);
    let links = if from_only {
        vec![from]
    } else if to_only {
        vec![to]
    } else if all {
        vec![to, from]
    } else {
        // Redis also adds +OK after this error (two replies to one command); one is sent here.
        return Err(Error::owned(format!(
            "ERR Unknown direction {}",
            String::from_utf8_lossy(ctx.arg(3))
        )));
    };
    for link in links.into_iter().flatten() {
        cluster.free_link(link);
    }
    ctx.out.ok();
    Ok(())
}
