//! CLUSTER SLOT-STATS (Redis 8.2): per-slot statistics of the slots this node serves, for a
//! range of slots (SLOTSRANGE) or the slots ranked by a metric (ORDERBY … [LIMIT n] [ASC|DESC]).
//!
//! Only `key-count` is reported, as Redis 8.2.3 does with its default
//! `cluster-slot-stats-enabled no` (the CPU and network metrics exist only with that setting,
//! which embedis does not have, so ORDERBY names them as unrecognized, as Redis does then).
//! The key counts come from one walk of database 0, as COUNTKEYSINSLOT's do (see the module
//! documentation of `commands::cluster`): they are exact, and like Redis's per-slot dict sizes
//! they include keys whose TTL has passed but that nobody has deleted yet.

use embedis_protocol::number::parse_i64;

use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;
use crate::model::cluster_view::{key_slot, MYSELF, SLOTS};

use super::{enabled, subcommand_syntax_error};

/// Which slots to report, in which order.
enum Filter {
    /// Every served slot from `start` to `end`, in slot order.
    Range(u16, u16),
    /// Served slots ranked by key count (ties in slot order), the first `limit`.
    Ranked { limit: usize, ascending: bool },
}

pub(super) fn slot_stats(ctx: &mut Ctx<'_>) -> CmdResult {
    enabled(ctx)?;
    let filter = parse(&ctx.args[2..])
        .map_err(|e| e.unwrap_or_else(|| subcommand_syntax_error(&ctx.args[1])))?;
    let counts = key_counts(ctx);
    let cluster = &ctx.server.cluster;
    let served = |slot: &u16| cluster.owner(*slot) == MYSELF;
    let slots: Vec<u16> = match filter {
        Filter::Range(start, end) => (start..=end).filter(served).collect(),
        Filter::Ranked { limit, ascending } => {
            let mut slots: Vec<u16> = (0..SLOTS as u16).filter(served).collect();
            // A stable sort keeps slot order among equal counts, in either direction.
            if ascending {
                slots.sort_by_key(|&s| counts[s as usize]);
            } else {
                slots.sort_by_key(|&s| std::cmp::Reverse(counts[s as usize]));
            }
            slots.truncate(limit);
            slots
        }
    };
    ctx.out.array(slots.len());
    for slot in slots {
        ctx.out.array(2);
        ctx.out.integer(slot as i64);
        ctx.out.map(1);
        ctx.out.bulk(b"key-count");
        ctx.out.integer(counts[slot as usize] as i64);
    }
    Ok(())
}

/// The arguments after SLOT-STATS, checked in Redis 8.2.3's order with its error texts; `None`
/// for its "unknown subcommand or wrong number of arguments" (which names the subcommand).
fn parse(args: &[bytes::Bytes]) -> Result<Filter, Option<Error>> {
    if word_is(&args[0], "slotsrange") {
        if args.len() != 3 {
            return Err(None);
        }
        let (start, end) = (slot_arg(&args[1])?, slot_arg(&args[2])?);
        if start > end {
            return Err(Some(Error::owned(format!(
                "ERR Start slot number {start} is greater than end slot number {end}"
            ))));
        }
        return Ok(Filter::Range(start, end));
    }
    if !word_is(&args[0], "orderby") {
        return Err(None);
    }
    if !word_is(&args[1], "key-count") {
        return Err(Some(Error::msg(
            "ERR Unrecognized sort metric for ORDERBY.",
        )));
    }
    Ok(ranking_options(&args[2..])?)
}

/// ORDERBY's options after the metric: LIMIT n, ASC or DESC, each once at most.
fn ranking_options(args: &[bytes::Bytes]) -> CmdResult<Filter> {
    let twice = || Error::msg("ERR Multiple filters of the same type are disallowed.");
    let (mut limit, mut order) = (None, None);
    let mut i = 0;
    while i < args.len() {
        let word = &args[i];
        if word_is(word, "limit") && i + 1 < args.len() {
            let n = parse_i64(&args[i + 1])
                .filter(|n| (1..=SLOTS as i64).contains(n))
                .ok_or(Error::msg(
                    "ERR Limit has to lie in between 1 and 16384 (maximum number of slots).",
                ))?;
            if limit.replace(n as usize).is_some() {
                return Err(twice());
            }
            i += 2;
        } else if word_is(word, "asc") || word_is(word, "desc") {
            if order.replace(word_is(word, "asc")).is_some() {
                return Err(twice());
            }
            i += 1;
        } else {
            return Err(Error::Syntax);
        }
    }
    Ok(Filter::Ranked {
        limit: limit.unwrap_or(SLOTS),
        ascending: order.unwrap_or(false),
    })
}

/// A slot argument as Redis's `getSlotOrReply` reads it.
fn slot_arg(arg: &[u8]) -> CmdResult<u16> {
    parse_i64(arg)
        .filter(|slot| (0..SLOTS as i64).contains(slot))
        .map(|slot| slot as u16)
        .ok_or(Error::msg("ERR Invalid or out of range slot"))
}

/// The keys database 0 holds in each slot.
fn key_counts(ctx: &Ctx<'_>) -> Vec<u64> {
    let mut counts = vec![0u64; SLOTS];
    for (key, _) in ctx.ks.dbs[0].main.iter() {
        counts[key_slot(key.as_ref()) as usize] += 1;
    }
    counts
}
