//! DEBUG HTSTATS and HTSTATS-KEY: the statistics of a database's key tables, or of a value's
//! table, in the words of Redis's `dictGetStats` — table size, elements, chain lengths —
//! measured on our own tables, which are built as Redis's (power-of-two bucket arrays with
//! chains, incremental rehashing, resizing held while a child process runs). Redis's tests read
//! the table size to see whether a table grew.

use embedis_datatypes::dict::{ChainStats, Dict};
use embedis_datatypes::hash::View;
use embedis_datatypes::set::SetValue;

use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::model::keyspace::Access;

/// Chain lengths counted one by one up to this many (Redis's `DICT_STATS_VECTLEN`).
const CLASSES: usize = 50;

pub fn run(ctx: &mut Ctx<'_>) -> Option<CmdResult> {
    let argc = ctx.argc();
    if ctx.arg_is(1, "htstats") && argc >= 3 {
        Some(htstats(ctx))
    } else if ctx.arg_is(1, "htstats-key") && argc >= 3 {
        Some(htstats_key(ctx))
    } else {
        None
    }
}

/// DEBUG HTSTATS <db>: the database's key table, then its expiry table (further arguments are
/// ignored, as Redis 7.0 ignores them).
fn htstats(ctx: &mut Ctx<'_>) -> CmdResult {
    let db = ctx.int_arg(2)?;
    let db = usize::try_from(db)
        .ok()
        .filter(|&d| d < ctx.ks.dbs.len())
        .ok_or(Error::msg("ERR Out of range database"))?;
    let d = &ctx.ks.dbs[db];
    let mut text = String::from("[Dictionary HT]\n");
    dict_stats(&mut text, &d.main);
    text.push_str("[Expires HT]\n");
    dict_stats(&mut text, &d.expires);
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// DEBUG HTSTATS-KEY <key>: the table of a hash or set kept as one.
fn htstats_key(ctx: &mut Ctx<'_>) -> CmdResult {
    let db = ctx.db();
    let key = ctx.args[2].clone();
    let object = ctx
        .ks
        .lookup(db, &key, ctx.now_ms, Access::NoTouch)
        .ok_or(Error::NoSuchKey)?;
    let mut text = String::new();
    match &object.value {
        Value::Hash(h) => match h.view() {
            View::Table(table) => dict_stats(&mut text, table),
            _ => return Err(not_a_table()),
        },
        Value::Set(SetValue::Table(table)) => dict_stats(&mut text, table),
        // Our sorted sets index members without a Redis dict: nothing of Redis's shape to show.
        _ => return Err(not_a_table()),
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

fn not_a_table() -> Error {
    Error::msg("ERR The value stored at the specified key is not represented using an hash table")
}

/// Redis's `dictGetStats`: the main table, and the one a rehash fills while it runs.
fn dict_stats<K, V, S>(text: &mut String, dict: &Dict<K, V, S>) {
    table_stats(text, 0, &dict.chain_stats(0, CLASSES));
    if dict.is_rehashing() {
        table_stats(text, 1, &dict.chain_stats(1, CLASSES));
    }
}

/// One table's lines, as Redis's `_dictGetStatsHt` prints them (its averages and percentages
/// are C floats).
fn table_stats(text: &mut String, index: usize, stats: &ChainStats) {
    use std::fmt::Write;
    let role = if index == 0 {
        "main hash table"
    } else {
        "rehashing target"
    };
    let _ = writeln!(text, "Hash table {index} stats ({role}):");
    if stats.used == 0 {
        text.push_str("No stats available for empty dictionaries\n");
        return;
    }
    let slots = stats.slots as f32;
    let _ = write!(
        text,
        " table size: {}\n number of elements: {}\n different slots: {}\n \
         max chain length: {}\n avg chain length (counted): {:.2}\n \
         avg chain length (computed): {:.2}\n Chain length distribution:\n",
        stats.size,
        stats.used,
        stats.slots,
        stats.max_chain,
        stats.total_chain as f32 / slots,
        stats.used as f32 / slots,
    );
    // The last class (the longest chains together) is counted but not printed, as in Redis.
    for (length, &buckets) in stats.lengths.iter().enumerate().take(CLASSES - 1) {
        if buckets == 0 {
            continue;
        }
        let share = buckets as f32 / stats.size as f32 * 100.0;
        let _ = writeln!(text, "   {length}: {buckets} ({share:.2}%)");
    }
}
