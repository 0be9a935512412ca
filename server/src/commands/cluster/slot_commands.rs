//! The hash slots: KEYSLOT, COUNTKEYSINSLOT and GETKEYSINSLOT (walking database 0), and the
//! commands that change which node serves a slot: ADDSLOTS, DELSLOTS, their RANGE forms,
//! FLUSHSLOTS and SETSLOT.

use bytes::Bytes;
use embedis_protocol::number::parse_i64;

use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::model::cluster_view::{key_slot, Cluster, MYSELF, NO_NODE, SLOTS};

use super::node_commands::bump_epoch;
use super::{enabled, is_replica, unknown_node};

pub(super) fn keyslot(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let slot = key_slot(ctx.arg(2));
    ctx.out.integer(slot as i64);
    Ok(())
}

/// A slot argument as Redis's `getSlotOrReply` reads it.
fn slot_arg(arg: &[u8]) -> CmdResult<u16> {
    parse_i64(arg)
        .filter(|slot| (0..SLOTS as i64).contains(slot))
        .map(|slot| slot as u16)
        .ok_or(Error::msg("ERR Invalid or out of range slot"))
}

/// The keys of database 0 that hash to `slot` (and have not expired), up to `limit`.
fn keys_in_slot(ctx: &Ctx<'_>, slot: u16, limit: usize) -> Vec<Bytes> {
    let db = &ctx.ks.dbs[0];
    let mut keys = Vec::new();
    if limit == 0 {
        return keys;
    }
    for (key, _) in db.main.iter() {
        let key: &[u8] = key.as_ref();
        if key_slot(key) == slot && !db.is_expired(key, ctx.now_ms) {
            keys.push(Bytes::copy_from_slice(key));
            if keys.len() >= limit {
                break;
            }
        }
    }
    keys
}

/// True if database 0 holds a key of `slot`.
pub fn slot_has_keys(ks: &crate::model::keyspace::Keyspace, slot: u16) -> bool {
    ks.dbs[0]
        .main
        .iter()
        .any(|(key, _)| key_slot(key.as_ref()) == slot)
}

pub(super) fn countkeysinslot(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let slot =
        parse_i64(ctx.arg(2)).ok_or(Error::msg("ERR value is not an integer or out of range"))?;
    if !(0..SLOTS as i64).contains(&slot) {
        return Err(Error::msg("ERR Invalid slot"));
    }
    let count = keys_in_slot(ctx, slot as u16, usize::MAX).len();
    ctx.out.integer(count as i64);
    Ok(())
}

pub(super) fn getkeysinslot(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let not_int = || Error::msg("ERR value is not an integer or out of range");
    let slot = parse_i64(ctx.arg(2)).ok_or_else(not_int)?;
    let count = parse_i64(ctx.arg(3)).ok_or_else(not_int)?;
    if !(0..SLOTS as i64).contains(&slot) || count < 0 {
        return Err(Error::msg("ERR Invalid slot or number of keys"));
    }
    let keys = keys_in_slot(ctx, slot as u16, count as usize);
    ctx.out.array(keys.len());
    for key in keys {
        ctx.out.bulk(&key);
    }
    Ok(())
}

/// Redis's `checkSlotAssignmentsOrReply` for one range: adding needs unserved slots, deleting
/// served ones, and no slot may be named twice in one command.
fn check_range(cluster: &Cluster, seen: &mut [bool], del: bool, start: u16, end: u16) -> CmdResult {
    for slot in start..=end {
        let owner = cluster.owner(slot);
        if del && owner == NO_NODE {
            return Err(Error::owned(format!(
                "ERR Slot {slot} is already unassigned"
            )));
        }
        if !del && owner != NO_NODE {
            return Err(Error::owned(format!("ERR Slot {slot} is already busy")));
        }
        if std::mem::replace(&mut seen[slot as usize], true) {
            return Err(Error::owned(format!(
                "ERR Slot {slot} specified multiple times"
            )));
        }
    }
    Ok(())
}

/// Applies ADDSLOTS / DELSLOTS (and their ranges) once every slot passed the checks.
fn update_slots(cluster: &mut Cluster, seen: &[bool], del: bool) {
    for (slot, _) in seen.iter().enumerate().filter(|(_, &s)| s) {
        let slot = slot as u16;
        if del {
            cluster.set_owner(slot, NO_NODE);
        } else {
            // Serving the slot now, this node imports it no longer.
            cluster.importing.remove(&slot);
            cluster.set_owner(slot, MYSELF);
        }
    }
}

pub(super) fn addslots(ctx: &mut Ctx<'_>) -> CmdResult {
    change_slots(ctx, false)
}

pub(super) fn delslots(ctx: &mut Ctx<'_>) -> CmdResult {
    change_slots(ctx, true)
}

fn change_slots(ctx: &mut Ctx<'_>, del: bool) -> CmdResult {
    let args = ctx.args;
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    cluster.end_implicit(!del);
    let slots: Vec<u16> = args[2..]
        .iter()
        .map(|a| slot_arg(a))
        .collect::<CmdResult<_>>()?;
    let mut seen = vec![false; SLOTS];
    for &slot in &slots {
        check_range(cluster, &mut seen, del, slot, slot)?;
    }
    update_slots(cluster, &seen, del);
    ctx.out.ok();
    Ok(())
}

pub(super) fn addslotsrange(ctx: &mut Ctx<'_>) -> CmdResult {
    change_ranges(ctx, false)
}

pub(super) fn delslotsrange(ctx: &mut Ctx<'_>) -> CmdResult {
    change_ranges(ctx, true)
}

fn change_ranges(ctx: &mut Ctx<'_>, del: bool) -> CmdResult {
    let args = ctx.args;
    let full_name = ctx.cmd.full_name.clone();
    enabled(ctx)?;
    let cluster = &mut ctx.server.cluster;
    if args.len() % 2 == 1 {
        return Err(Error::WrongArity(full_name.into()));
    }
    cluster.end_implicit(!del);
    let mut seen = vec![false; SLOTS];
    for pair in args[2..].chunks(2) {
        let start = slot_arg(&pair[0])?;
        let end = slot_arg(&pair[1])?;
        if start > end {
            return Err(Error::owned(format!(
                "ERR start slot number {start} is greater than end slot number {end}"
            )));
        }
        check_range(cluster, &mut seen, del, start, end)?;
    }
    update_slots(cluster, &seen, del);
    ctx.out.ok();
    Ok(())
}

pub(super) fn flushslots(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    if !ctx.ks.dbs[0].main.is_empty() {
        return Err(Error::msg(
            "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.",
        ));
    }
    let cluster = &mut ctx.server.cluster;
    cluster.end_implicit(false);
    for slot in 0..SLOTS as u16 {
        if cluster.owner(slot) == MYSELF {
            cluster.set_owner(slot, NO_NODE);
        }
    }
    ctx.out.ok();
    Ok(())
}

pub(super) fn setslot(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    enabled(ctx)?;
    if is_replica(ctx.server.cluster.myself()) {
        return Err(Error::msg("ERR Please use SETSLOT only with masters."));
    }
    let slot = slot_arg(&args[2])?;
    ctx.server.cluster.end_implicit(false);
    let action = args[3].to_ascii_lowercase();
    let cluster = &ctx.server.cluster;
    let lookup = |id: &[u8], unknown: bool| -> CmdResult<u32> {
        let number = cluster.find(id).ok_or_else(|| {
            if unknown {
                unknown_node(id)
            } else {
                Error::owned(format!(
                    "ERR I don't know about node {}",
                    String::from_utf8_lossy(id)
                ))
            }
        })?;
        if cluster.node(number).is_some_and(is_replica) {
            return Err(Error::msg("ERR Target node is not a master"));
        }
        Ok(number)
    };
    match (action.as_slice(), args.len()) {
        (b"migrating", 5) => {
            if cluster.owner(slot) != MYSELF {
                return Err(Error::owned(format!(
                    "ERR I'm not the owner of hash slot {slot}"
                )));
            }
            let to = lookup(&args[4], false)?;
            ctx.server.cluster.migrating.insert(slot, to);
        }
        (b"importing", 5) => {
            if cluster.owner(slot) == MYSELF {
                return Err(Error::owned(format!(
                    "ERR I'm already the owner of hash slot {slot}"
                )));
            }
            let from = lookup(&args[4], false)?;
            ctx.server.cluster.importing.insert(slot, from);
        }
        (b"stable", 4) => {
            ctx.server.cluster.migrating.remove(&slot);
            ctx.server.cluster.importing.remove(&slot);
        }
        (b"node", 5) => {
            let to = lookup(&args[4], true)?;
            let was_mine = cluster.owner(slot) == MYSELF;
            let has_keys = slot_has_keys(ctx.ks, slot);
            if was_mine && to != MYSELF && has_keys {
                return Err(Error::owned(format!("ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot.")));
            }
            let cluster = &mut ctx.server.cluster;
            if !has_keys {
                cluster.migrating.remove(&slot);
            }
            cluster.set_owner(slot, to);
            cluster.bus.update_state = true;
            if to == MYSELF && cluster.importing.remove(&slot).is_some() {
                // The slot moved by hand: a new epoch lets this node's claim win over the old
                // owner's wherever the bus carries both.
                bump_epoch(ctx.server);
            }
            // A primary left without slots becomes a replica of the node that took its last one
            // (under `cluster-allow-replica-migration`, on by default).
            let cluster = &ctx.server.cluster;
            if was_mine
                && to != MYSELF
                && cluster.ranges_of(MYSELF).is_empty()
                && ctx.server.config.cluster.allow_replica_migration
            {
                crate::services::cluster::set_primary(ctx.server, to);
            }
        }
        _ => {
            return Err(Error::msg(
                "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP",
            ))
        }
    }
    ctx.server.cluster.version += 1;
    ctx.out.ok();
    Ok(())
}
