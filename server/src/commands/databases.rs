//! Database commands: DBSIZE, SWAPDB, FLUSHDB and FLUSHALL (with ASYNC / SYNC), plus the
//! database-number parsing MOVE and COPY share.
//!
//! Emptying is the one place where a single command can have unbounded work: freeing millions of
//! keys takes long enough to stall every client. FLUSHDB/FLUSHALL ASYNC therefore detach the old
//! tables and hand them to the keyspace's background thread; the reply comes at once and the
//! databases are empty for every later command. Without an option `lazyfree-lazy-user-flush`
//! decides (synchronous by default), as in Redis.
//!
//! DBSIZE counts every stored key, including keys whose TTL has passed but which nobody has
//! touched since (active expiry reclaims them shortly): Redis 7.0 answers the same.

use crate::base::compat::CompatVersion;
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::commands::common::{db_index, int32_arg};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::{Acl, CommandSpec, Flags};

fn dbsize(ctx: &mut Ctx<'_>) -> CmdResult {
    let n = ctx.ks.dbs[ctx.client.db].len();
    ctx.out.integer(n as i64);
    Ok(())
}

fn swapdb(ctx: &mut Ctx<'_>) -> CmdResult {
    let a = int32_arg(ctx, 1, Some("ERR invalid first DB index"))?;
    let b = int32_arg(ctx, 2, Some("ERR invalid second DB index"))?;
    let (a, b) = (db_index(ctx, a)?, db_index(ctx, b)?);
    ctx.ks.swap_dbs(a, b, ctx.now_ms);
    ctx.ks.dirty += 1;
    ctx.force_propagation();
    ctx.out.ok();
    Ok(())
}

/// The flush mode: the explicit ASYNC or SYNC word, or `lazyfree-lazy-user-flush` without
/// one. Any other argument, or more than one, is a syntax error.
fn lazy_flush(ctx: &Ctx<'_>) -> CmdResult<bool> {
    match ctx.argc() {
        1 => Ok(ctx.server.config.lazyfree_lazy_user_flush),
        2 if word_is(ctx.arg(1), "sync") => Ok(false),
        2 if word_is(ctx.arg(1), "async") => Ok(true),
        _ => Err(Error::Syntax),
    }
}

/// Redis 7.4 runs a synchronous flush of a client that may block (not in MULTI or a script) as
/// a blocking ASYNC one: the tables go to the background thread and the client's `+OK` waits
/// until they are freed (counted in `lazyfreed_objects`), after its own tracking invalidation
/// — where 7.0 frees them inline and answers before the invalidation. embedis's executor waits
/// for the background thread rather than serving other clients meanwhile.
fn blocking_async(ctx: &Ctx<'_>, lazy: bool) -> bool {
    !lazy && ctx.may_block && ctx.registry.version >= CompatVersion::V7_4
}

/// FLUSHALL's and FLUSHDB's `+OK`, once a blocking ASYNC flush is done ([`blocking_async`]).
fn flushed(ctx: &mut Ctx<'_>, blocking_async: bool) {
    if blocking_async {
        crate::model::lazyfree::wait_for_background();
        crate::kernel::invalidation::send_own_before_reply(ctx);
    }
    ctx.out.ok();
}

fn flushdb(ctx: &mut Ctx<'_>) -> CmdResult {
    let lazy = lazy_flush(ctx)?;
    let blocking_async = blocking_async(ctx, lazy);
    ctx.ks.flush_db(ctx.client.db, lazy || blocking_async);
    // Propagated even when the database was already empty (a replica's may not be).
    ctx.force_propagation();
    flushed(ctx, blocking_async);
    Ok(())
}

fn flushall(ctx: &mut Ctx<'_>) -> CmdResult {
    let lazy = lazy_flush(ctx)?;
    let blocking_async = blocking_async(ctx, lazy);
    // A running background save would write the data FLUSHALL removes: Redis kills it.
    crate::services::rdb_saving::bgsave_kill(ctx.ks, ctx.server);
    ctx.ks.flush_all(lazy || blocking_async);
    // With save points set, the empty dataset is saved at once (`dirty` is reset by it: 0
    // changes since the last save). Otherwise the keys removed are the changes (Redis 7's
    // `flushAllDataAndResetRDB`; 6.2 counted FLUSHALL itself as one more).
    if !ctx.server.config.save_points.is_empty() {
        let _ = crate::services::rdb_saving::save(ctx.ks, ctx.server);
    }
    // Propagated whatever `dirty` did: the save above resets it, and an empty dataset adds
    // nothing, so without this a FLUSHALL would reach neither the AOF nor the replicas (Redis
    // forces it too).
    ctx.force_propagation();
    flushed(ctx, blocking_async);
    Ok(())
}

const ALL_SHARDS_SUCCEEDED: &[&str] =
    &["request_policy:all_shards", "response_policy:all_succeeded"];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("dbsize", 1, dbsize)
        .flags(Flags::READONLY.union(Flags::FAST))
        .acl(Acl::KEYSPACE)
        .tips(&["request_policy:all_shards", "response_policy:agg_sum"])
        .doc(
            "server",
            "1.0.0",
            "O(1)",
            "Returns the number of keys in the selected database.",
            "",
        ),
    CommandSpec::new("swapdb", 3, swapdb)
        .flags(Flags::WRITE.union(Flags::FAST))
        .acl(Acl::KEYSPACE.union(Acl::DANGEROUS))
        .doc(
            "server",
            "4.0.0",
            "O(N) for N clients watching or blocked on keys of either database.",
            "Exchanges the contents of two databases.",
            "index1:integer index2:integer",
        ),
    CommandSpec::new("flushdb", -1, flushdb)
        .flags(Flags::WRITE)
        .acl(Acl::KEYSPACE.union(Acl::DANGEROUS))
        .tips(ALL_SHARDS_SUCCEEDED)
        .doc(
            "server",
            "1.0.0",
            "O(N) for N keys in the database.",
            "Deletes every key of the selected database.",
            "async=[ASYNC|SYNC]",
        ),
    CommandSpec::new("flushall", -1, flushall)
        .flags(Flags::WRITE)
        .acl(Acl::KEYSPACE.union(Acl::DANGEROUS))
        .tips(ALL_SHARDS_SUCCEEDED)
        .doc(
            "server",
            "1.0.0",
            "O(N) for N keys in all databases.",
            "Deletes every key of every database.",
            "async=[ASYNC|SYNC]",
        ),
];

#[cfg(test)]
mod tests {
    use crate::base::value::Value;
    use crate::io::test_harness::*;
    use crate::model::keyspace::Keyspace;
    use crate::model::lazyfree::{handed_to_background, lazyfree_pending_objects};
    use std::time::{Duration, Instant};

    fn fill(ks: &mut Keyspace, n: usize) {
        for i in 0..n {
            let key = format!("key:{i}");
            ks.add(
                i % 4,
                key.as_bytes(),
                Value::string(key.as_bytes()),
                None,
                0,
            );
        }
    }

    #[test]
    fn flushall_async_hands_the_keys_to_the_background_thread() {
        // Where the memory is freed, not how long the reply took: a timing comparison failed
        // on a loaded machine (the background thread shares the two cores).
        const KEYS: usize = 10_000;
        let mut h = Harness::new();
        fill(&mut h.engine.ks, KEYS);
        let before = handed_to_background();
        assert_eq!(
            h.run("FLUSHALL ASYNC"),
            embedis_protocol::Value::Simple("OK".into())
        );
        assert_eq!(handed_to_background() - before, KEYS);
        assert_eq!(h.engine.ks.total_keys(), 0);
        for db in 0..4 {
            h.run(&format!("SELECT {db}"));
            assert_eq!(int(&h.run("DBSIZE")), 0);
        }
        // SYNC in MULTI frees inline, whatever lazyfree-lazy-user-flush says.
        fill(&mut h.engine.ks, KEYS);
        let before = handed_to_background();
        h.run("MULTI");
        h.run("FLUSHALL SYNC");
        h.run("EXEC");
        assert_eq!(handed_to_background(), before);
        assert_eq!(h.engine.ks.total_keys(), 0);
        // A client's own SYNC, as Redis 7.4 (the harness is the newest version): a blocking
        // ASYNC flush, answered once the background thread has freed the keys.
        fill(&mut h.engine.ks, KEYS);
        let before = handed_to_background();
        h.run("FLUSHALL SYNC");
        assert_eq!(handed_to_background() - before, KEYS);
        assert_eq!(h.engine.ks.total_keys(), 0);
        // The background thread gets through it.
        let deadline = Instant::now() + Duration::from_secs(60);
        while lazyfree_pending_objects() > 0 {
            assert!(Instant::now() < deadline, "background free never finished");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn flushdb_empties_only_the_selected_database() {
        let mut h = Harness::new();
        h.add(0, "a", Some(1000));
        h.add(1, "b", None);
        h.add(1, "c", Some(1000));
        h.run("SELECT 1");
        h.run("FLUSHDB ASYNC");
        assert_eq!(int(&h.run("DBSIZE")), 0);
        assert!(h.engine.ks.dbs[1].expires.is_empty());
        h.run("SELECT 0");
        assert_eq!(int(&h.run("DBSIZE")), 1);
        assert_eq!(error(&h.run("FLUSHDB ASYNC SYNC")), "ERR syntax error");
        h.run("FLUSHDB SYNC");
        assert_eq!(h.engine.ks.total_keys(), 0);
    }

    #[test]
    fn swapdb_exchanges_contents_and_ttls() {
        let mut h = Harness::new();
        h.add(0, "zero", Some(50_000));
        h.add(3, "three", None);
        assert_eq!(
            h.run("SWAPDB 0 3"),
            embedis_protocol::Value::Simple("OK".into())
        );
        assert_eq!(
            int(&h.run("EXISTS three")),
            1,
            "the client on 0 sees 3's keys"
        );
        assert_eq!(int(&h.run("TTL three")), -1);
        h.run("SELECT 3");
        assert_eq!(int(&h.run("TTL zero")), 50);
        assert_eq!(h.engine.ks.dbs[3].id, 3, "numbers stay with positions");
        assert_eq!(h.engine.ks.dbs[0].id, 0);
        assert_eq!(error(&h.run("SWAPDB 0 99")), "ERR DB index is out of range");
        assert_eq!(error(&h.run("SWAPDB x 0")), "ERR invalid first DB index");
        assert_eq!(
            error(&h.run("SWAPDB 0 2147483648")),
            "ERR invalid second DB index"
        );
    }

    #[test]
    fn database_index_parsing() {
        let mut h = Harness::new();
        assert_eq!(
            error(&h.run("MOVE k 2147483648")),
            "ERR value is out of range, value must between -2147483648 and 2147483647"
        );
        assert_eq!(
            error(&h.run("SELECT -2147483649")),
            "ERR value is out of range, value must between -2147483648 and 2147483647"
        );
        assert_eq!(error(&h.run("SELECT 16")), "ERR DB index is out of range");
        assert_eq!(
            error(&h.run("COPY a b DB 1x")),
            "ERR value is not an integer or out of range"
        );
    }
}
