//! CLUSTER and the per-connection cluster commands (ASKING, READONLY, READWRITE): reading and
//! changing this node's view of the cluster ([`crate::model::cluster_view`]), with Redis 7.0's replies and
//! error texts.
//!
//! Every CLUSTER subcommand, HELP included, answers "This instance has cluster support disabled"
//! on a server started without `cluster-enabled yes`, as Redis does. A change another node must
//! learn (slots, epochs, a new node) reaches it in this node's next PING or PONG over the
//! cluster bus (`crate::services::cluster`).
//!
//! A fresh node serves every slot by default ([`crate::model::cluster_view::Cluster::implicit`]); CLUSTER
//! SLOTS, SHARDS and INFO show it, but CLUSTER NODES lists no slots for it, because cluster
//! managers read NODES to tell an empty node and build their ADDSLOTS from what it lists
//! (`redis-cli --cluster create` would otherwise give every node the same slots).
//!
//! COUNTKEYSINSLOT and GETKEYSINSLOT walk database 0 (a cluster node has no other) instead of
//! keeping Redis's per-slot key index: the index would cost every write of a cluster node, these
//! two commands are rare (resharding, once per slot moved) and a walk is exact.
//!
//! The subcommands are in `slot_commands` (the hash slots and their assignment), `node_commands`
//! (epochs, MEET, FORGET, REPLICATE, FAILOVER, RESET…) and `topology` (LINKS, NODES, INFO, SLOTS,
//! SHARDS); this module keeps what they and the cluster bus share, and the command table at its end.

mod node_commands;
mod slot_commands;
mod slot_stats;
mod topology;

use crate::base::error::{CmdResult, Error};
use crate::commands::common::write_help;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags};
use crate::model::cluster_view::{Node, Role};

use node_commands::{
    bumpepoch, count_failure_reports, failover, forget, meet, replicas, replicate, reset,
    saveconfig, set_config_epoch,
};
use slot_commands::{
    addslots, addslotsrange, countkeysinslot, delslots, delslotsrange, flushslots, getkeysinslot,
    keyslot, setslot,
};
use slot_stats::slot_stats;
use topology::{info, links, nodes, shards, slots};

const DISABLED: &str = "ERR This instance has cluster support disabled";

/// The gate of every handler here: cluster mode must be on.
fn enabled(ctx: &mut Ctx<'_>) -> CmdResult {
    if !ctx.server.cluster.enabled {
        return Err(Error::msg(DISABLED));
    }
    crate::services::cluster::refresh_myself(ctx.server);
    // Whatever the subcommand changes, the engine then recomputes the state and carries out
    // what the bus asks of it.
    ctx.server
        .requests
        .push(crate::model::state::EngineRequest::ClusterBus);
    Ok(())
}

const HELP: &[&str] = &[
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Makes this node serve the given slots.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Makes this node serve every slot of the given ranges.",
    "BUMPEPOCH",
    "    Gives this node a new config epoch, higher than any other.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Returns how many primaries reported <node-id> failing recently.",
    "COUNTKEYSINSLOT <slot>",
    "    Returns how many keys of <slot> this node holds.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Makes the given slots unserved.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Makes every slot of the given ranges unserved.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Makes this replica take its primary's place (coordinated, forced, or without a vote).",
    "FORGET <node-id>",
    "    Removes <node-id> from this node's view of the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Returns up to <count> keys of <slot> held by this node.",
    "FLUSHSLOTS",
    "    Makes every slot this node serves unserved.",
    "INFO",
    "    Returns the state of the cluster as this node sees it.",
    "KEYSLOT <key>",
    "    Returns the hash slot of <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Joins the cluster of the node at <ip>:<port>.",
    "MYID",
    "    Returns this node's ID.",
    "NODES",
    "    Returns the cluster's nodes as this node sees them, one a line:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Makes this node a replica of <node-id>.",
    "RESET [HARD|SOFT]",
    "    Makes this node forget the cluster (default: soft; hard also takes a new ID).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Sets the config epoch of a node that knows no other node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Marks <slot> as being imported, migrated or neither, or binds it to a node.",
    "REPLICAS <node-id>",
    "    Lists the replicas of <node-id>.",
    "SAVECONFIG",
    "    Writes the cluster configuration to its file.",
    "SLOTS",
    "    Returns the slot ranges, each with its primary and replicas (address, port, ID).",
    "SHARDS",
    "    Returns the shards: their slot ranges and their nodes.",
    "LINKS",
    "    Returns this node's bus links to other nodes, one map each.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    write_help(ctx, HELP);
    Ok(())
}

fn myid(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let id = ctx.server.cluster.myself().id.clone();
    ctx.out.bulk(id.as_bytes());
    Ok(())
}

/// Redis's `addReplySubcommandSyntaxError`, naming the subcommand as the client wrote it.
fn subcommand_syntax_error(name: &[u8]) -> Error {
    Error::owned(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLUSTER HELP.",
        String::from_utf8_lossy(name)
    ))
}

fn unknown_node(id: &[u8]) -> Error {
    Error::owned(format!("ERR Unknown node {}", String::from_utf8_lossy(id)))
}

fn is_replica(node: &Node) -> bool {
    matches!(node.role, Role::Replica(_))
}

fn asking(ctx: &mut Ctx<'_>) -> CmdResult {
    if !ctx.server.cluster.enabled {
        return Err(Error::msg(DISABLED));
    }
    ctx.client.asking = true;
    ctx.out.ok();
    Ok(())
}

fn readonly(ctx: &mut Ctx<'_>) -> CmdResult {
    if !ctx.server.cluster.enabled {
        return Err(Error::msg(DISABLED));
    }
    ctx.client.cluster_readonly = true;
    ctx.out.ok();
    Ok(())
}

fn readwrite(ctx: &mut Ctx<'_>) -> CmdResult {
    if !ctx.server.cluster.enabled {
        return Err(Error::msg(DISABLED));
    }
    ctx.client.cluster_readonly = false;
    ctx.out.ok();
    Ok(())
}

const ADMIN: Flags = Flags::ADMIN
    .union(Flags::STALE)
    .union(Flags::NO_ASYNC_LOADING);

/// The admin subcommands that only read (Redis does not flag them `no_async_loading`).
const ADMIN_READ: Flags = Flags::ADMIN.union(Flags::STALE);

const ADMIN_ACL: Acl = Acl::ADMIN.union(Acl::SLOW).union(Acl::DANGEROUS);

const NONDETERMINISTIC: &[&str] = &["nondeterministic_output"];

macro_rules! sub {
    ($name:literal, $arity:expr, $handler:expr, $flags:expr, $acl:expr, $since:literal, $complexity:literal, $summary:literal, $syntax:literal) => {
        CommandSpec::new($name, $arity, $handler)
            .flags($flags)
            .acl($acl)
            .doc("cluster", $since, $complexity, $summary, $syntax)
    };
}

static SUBCOMMANDS: &[CommandSpec] = &[
    sub!("addslots", -3, addslots, ADMIN, ADMIN_ACL, "3.0.0",
        "O(N) where N is the total number of hash slot arguments",
        "Assigns slots to this node.", "slot:integer..."),
    sub!("addslotsrange", -4, addslotsrange, ADMIN, ADMIN_ACL, "7.0.0",
        "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        "Assigns ranges of slots to this node.",
        "range=(start-slot:integer end-slot:integer)..."),
    sub!("bumpepoch", 2, bumpepoch, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Gives this node a new, highest config epoch.", "")
        .tips(NONDETERMINISTIC),
    sub!("count-failure-reports", 3, count_failure_reports, ADMIN_READ, ADMIN_ACL, "3.0.0",
        "O(N) where N is the number of failure reports",
        "Returns how many failure reports a node has.", "node-id")
        .tips(NONDETERMINISTIC),
    sub!("countkeysinslot", 3, countkeysinslot, Flags::STALE, Acl::SLOW, "3.0.0", "O(1)",
        "Returns how many keys of a slot this node holds.", "slot:integer"),
    sub!("delslots", -3, delslots, ADMIN, ADMIN_ACL, "3.0.0",
        "O(N) where N is the total number of hash slot arguments",
        "Stops assigning slots to any node.", "slot:integer..."),
    sub!("delslotsrange", -4, delslotsrange, ADMIN, ADMIN_ACL, "7.0.0",
        "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        "Stops assigning ranges of slots to any node.",
        "range=(start-slot:integer end-slot:integer)..."),
    sub!("failover", -2, failover, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Makes a replica take its primary's place.", "[options=(FORCE|TAKEOVER)]"),
    sub!("flushslots", 2, flushslots, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Stops assigning this node's slots.", ""),
    sub!("forget", 3, forget, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Removes a node from this node's view.", "node-id"),
    sub!("getkeysinslot", 4, getkeysinslot, Flags::STALE, Acl::SLOW, "3.0.0",
        "O(log(N)) where N is the number of requested keys",
        "Returns up to a count of the keys of a slot.", "slot:integer count:integer")
        .tips(NONDETERMINISTIC),
    sub!("help", 2, help, Flags::LOADING.union(Flags::STALE), Acl::SLOW, "5.0.0", "O(1)",
        "Lists the CLUSTER subcommands.", ""),
    sub!("info", 2, info, Flags::STALE, Acl::SLOW, "3.0.0", "O(1)",
        "Returns the state of the cluster as this node sees it.", "")
        .tips(NONDETERMINISTIC),
    sub!("keyslot", 3, keyslot, Flags::STALE, Acl::SLOW, "3.0.0", "O(N) where N is the number of bytes in the key",
        "Returns the hash slot of a key.", "key:string"),
    sub!("links", 2, links, Flags::STALE, Acl::SLOW, "7.0.0", "O(N) where N is the total number of Cluster nodes",
        "Returns this node's bus links to other nodes.", "")
        .tips(NONDETERMINISTIC),
    sub!("meet", -4, meet, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Makes this node join another node's cluster.",
        "ip port:integer [cluster_bus_port:integer@4.0.0]"),
    sub!("myid", 2, myid, Flags::STALE, Acl::SLOW, "3.0.0", "O(1)",
        "Returns this node's ID.", ""),
    sub!("nodes", 2, nodes, Flags::STALE, Acl::SLOW, "3.0.0", "O(N) where N is the total number of Cluster nodes",
        "Returns the cluster's configuration as this node sees it.", "")
        .tips(NONDETERMINISTIC),
    sub!("replicas", 3, replicas, ADMIN_READ, ADMIN_ACL, "5.0.0", "O(1)",
        "Lists the replicas of a primary node.", "node-id")
        .tips(NONDETERMINISTIC),
    sub!("replicate", 3, replicate, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Makes this node a replica of a primary node.", "node-id"),
    sub!("reset", -2, reset, ADMIN.union(Flags::NOSCRIPT).without(Flags::NO_ASYNC_LOADING), ADMIN_ACL, "3.0.0",
        "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
        "Makes this node forget the cluster.", "[reset-type=(HARD|SOFT)]"),
    sub!("saveconfig", 2, saveconfig, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Forces the node to save the cluster configuration on disk.", ""),
    sub!("set-config-epoch", 3, set_config_epoch, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Sets the config epoch of a fresh node.", "config-epoch:integer"),
    sub!("setslot", -4, setslot, ADMIN, ADMIN_ACL, "3.0.0", "O(1)",
        "Binds a slot to a node, or marks it migrating, importing or stable.",
        "slot:integer subcommand=(IMPORTING node-id|MIGRATING node-id|NODE node-id|STABLE)"),
    sub!("shards", 2, shards, Flags::STALE, Acl::SLOW, "7.0.0", "O(N) where N is the total number of cluster nodes",
        "Returns the cluster's shards: their slots and nodes.", "")
        .tips(NONDETERMINISTIC),
    sub!("slaves", 3, replicas, ADMIN_READ, ADMIN_ACL, "3.0.0", "O(1)",
        "Lists the replicas of a primary node (old name of REPLICAS).", "node-id")
        .tips(NONDETERMINISTIC),
    sub!("slot-stats", -4, slot_stats, Flags::LOADING.union(Flags::STALE), Acl::SLOW, "8.2.0",
        "O(N) where N is the total number of slots based on arguments. O(N*log(N)) with ORDERBY subcommand.",
        "Returns per-slot statistics of the slots this node serves.",
        "filter=(SLOTSRANGE (start-slot:integer end-slot:integer)|ORDERBY (metric [LIMIT limit:integer] [order=(ASC|DESC)]))")
        .tips(&["nondeterministic_output", "request_policy:all_shards"]),
    sub!("slots", 2, slots, Flags::STALE, Acl::SLOW, "3.0.0", "O(N) where N is the total number of Cluster nodes",
        "Returns the slot ranges and the nodes serving them.", "")
        .tips(NONDETERMINISTIC),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::container("cluster", SUBCOMMANDS)
        .acl(Acl::SLOW)
        .doc(
            "cluster",
            "3.0.0",
            "Depends on subcommand.",
            "Container for the cluster commands.",
            "",
        ),
    CommandSpec::new("asking", 1, asking)
        .flags(Flags::FAST)
        .acl(Acl::FAST.union(Acl::CONNECTION))
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Lets the next command reach a slot this node is importing.",
            "",
        ),
    CommandSpec::new("readonly", 1, readonly)
        .flags(Flags::FAST.union(Flags::LOADING).union(Flags::STALE))
        .acl(Acl::FAST.union(Acl::CONNECTION))
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Lets this connection read from a replica node.",
            "",
        ),
    CommandSpec::new("readwrite", 1, readwrite)
        .flags(Flags::FAST.union(Flags::LOADING).union(Flags::STALE))
        .acl(Acl::FAST.union(Acl::CONNECTION))
        .doc(
            "cluster",
            "3.0.0",
            "O(1)",
            "Ends READONLY on this connection.",
            "",
        ),
];
