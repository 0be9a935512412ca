//! A replica while it takes in a full sync, as Redis 7.0 serves it: the image loads a slice at
//! a time (`loading-process-events-interval-bytes`), INFO shows `loading:1` and the progress,
//! other commands get `-LOADING`, and CONFIG SET still works (a `key-load-delay` can be lifted
//! mid-load). Under `repl-diskless-load swapdb`, a replica resyncing the history it already
//! had keeps serving its old data with `async_loading:1`, and keeps it when the transfer dies.
//! And the history an RDB file records lets restarted replicas and primaries continue (PSYNC).

use crate::support;
use support::{eventually, field, link_up, text, Conn};

const LOADING: &str = "-LOADING Redis is loading the dataset in memory\r\n";

fn primary() -> embedis::Server {
    support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("repl-diskless-sync-delay", "0")
        .unwrap()
        .start()
        .unwrap()
}

#[test]
fn a_replica_answers_loading_while_its_image_loads_and_info_shows_the_progress() {
    let primary = primary();
    let mut p = Conn::connect(primary.addr()).unwrap();
    text(&mut p, &["DEBUG", "POPULATE", "5000", "key", "100"]);
    let replica = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("key-load-delay", "1000")
        .unwrap()
        .config("loading-process-events-interval-bytes", "1024")
        .unwrap()
        .start()
        .unwrap();
    let mut r = Conn::connect(replica.addr()).unwrap();
    text(&mut r, &["SET", "old", "1"]);
    let port = primary.addr().port().to_string();
    assert_eq!(text(&mut r, &["REPLICAOF", "127.0.0.1", &port]), "+OK\r\n");
    // 5,000 keys at a millisecond each: the load takes seconds, unless the delay is lifted.
    eventually("the load to begin", || {
        field(&text(&mut r, &["INFO", "persistence"]), "loading") == "1"
    });
    assert_eq!(text(&mut r, &["GET", "old"]), LOADING);
    assert_eq!(text(&mut r, &["DBSIZE"]), LOADING);
    let info = text(&mut r, &["INFO", "persistence"]);
    assert_eq!(field(&info, "async_loading"), "0", "{info}");
    let total: u64 = field(&info, "loading_total_bytes").parse().unwrap();
    let loaded: u64 = field(&info, "loading_loaded_bytes").parse().unwrap();
    assert!(total > 0 && loaded < total, "{info}");
    // Still a replica whose link transfers: INFO replication says so.
    let repl = text(&mut r, &["INFO", "replication"]);
    assert_eq!(field(&repl, "master_sync_in_progress"), "1", "{repl}");
    // CONFIG SET is served mid-load and takes effect in the next slice.
    assert_eq!(
        text(&mut r, &["CONFIG", "SET", "key-load-delay", "0"]),
        "+OK\r\n"
    );
    eventually("the link to come up", || link_up(&mut r));
    assert_eq!(text(&mut r, &["DBSIZE"]), ":5000\r\n");
    assert_eq!(text(&mut r, &["EXISTS", "old"]), ":0\r\n");
    let info = text(&mut r, &["INFO", "persistence"]);
    assert_eq!(field(&info, "loading"), "0", "{info}");
    assert!(!info.contains("loading_total_bytes"), "{info}");
    assert_eq!(
        text(&mut p, &["DEBUG", "DIGEST"]),
        text(&mut r, &["DEBUG", "DIGEST"])
    );
}

#[test]
fn a_swapdb_replica_serves_its_old_data_during_the_transfer_and_keeps_it_when_it_fails() {
    let primary = primary();
    let mut p = Conn::connect(primary.addr()).unwrap();
    text(&mut p, &["SET", "kept", "before"]);
    let replica = support::builder()
        .config("repl-diskless-load", "swapdb")
        .unwrap()
        .start()
        .unwrap();
    let mut r = Conn::connect(replica.addr()).unwrap();
    let port = primary.addr().port().to_string();
    text(&mut r, &["REPLICAOF", "127.0.0.1", &port]);
    eventually("the first sync", || {
        text(&mut r, &["GET", "kept"]) == "$6\r\nbefore\r\n"
    });
    // The primary's backlog cannot cover what follows: the replica must resync in full, the
    // same history (replication ID) as it has — and the image is written slowly.
    text(&mut p, &["CONFIG", "SET", "repl-backlog-size", "16384"]);
    text(&mut p, &["CONFIG", "SET", "rdb-key-save-delay", "100000"]);
    // In one transaction, so that the replica cannot be back before the writes are done.
    text(&mut p, &["MULTI"]);
    text(&mut p, &["CLIENT", "KILL", "TYPE", "replica"]);
    text(
        &mut p,
        &[
            "EVAL",
            "for i = 1, 200 do redis.call('set', 'big:' .. i, string.rep('x', 1000)) end",
            "0",
        ],
    );
    text(&mut p, &["DEL", "kept"]);
    text(&mut p, &["EXEC"]);
    eventually("the async load", || {
        field(&text(&mut r, &["INFO", "persistence"]), "async_loading") == "1"
    });
    let info = text(&mut r, &["INFO", "persistence"]);
    assert_eq!(field(&info, "loading"), "0", "{info}");
    // The old data is served meanwhile; what Redis flags no-async-loading waits.
    assert_eq!(text(&mut r, &["GET", "kept"]), "$6\r\nbefore\r\n");
    assert_eq!(text(&mut r, &["BGSAVE"]), LOADING);
    // The primary goes away mid-transfer: the replica stops loading and keeps its data.
    drop(p);
    primary.shutdown();
    eventually("the transfer to end", || {
        field(&text(&mut r, &["INFO", "persistence"]), "async_loading") == "0"
    });
    assert_eq!(text(&mut r, &["GET", "kept"]), "$6\r\nbefore\r\n");
    assert_eq!(text(&mut r, &["EXISTS", "big:1"]), ":0\r\n");
}

/// An RDB file keeps the replication history (`repl-id`, `repl-offset`, `repl-stream-db`),
/// as Redis's does: a restarted replica continues from its primary with a partial resync,
/// and a restarted primary lets its replica continue too (the old ID becomes its previous one).
#[test]
fn restarted_replicas_and_primaries_continue_with_a_partial_resync() {
    let primary_dir = support::temp_dir("history-primary");
    let replica_dir = support::temp_dir("history-replica");
    // No pings in the stream: a ping the replica has not applied when the primary stops
    // would put it behind the restarted primary's history.
    let mut primary = support::builder()
        .dir(&primary_dir)
        .config("repl-ping-replica-period", "3600")
        .unwrap()
        .start()
        .unwrap();
    let port = primary.addr().port().to_string();
    let mut replica = support::builder()
        .dir(&replica_dir)
        .config("replicaof", &format!("127.0.0.1 {port}"))
        .unwrap()
        .start()
        .unwrap();
    let mut r = Conn::connect(replica.addr()).unwrap();
    // Linked before the first write, so that its SELECT travels in the stream: the replica's
    // file must then record database 3 as where the stream stands (it recorded 0 when the
    // link was up at the save, and `b` below landed in database 0).
    eventually("the first link", || link_up(&mut r));
    let mut p = Conn::connect(primary.addr()).unwrap();
    text(&mut p, &["SELECT", "3"]);
    text(&mut p, &["SET", "a", "1"]);
    eventually("the first sync", || {
        text(&mut r, &["SELECT", "3"]);
        text(&mut r, &["GET", "a"]) == "$1\r\n1\r\n"
    });
    let replid = field(&text(&mut p, &["INFO", "replication"]), "master_replid");
    // The replica stops (saving its file) while the primary goes on in database 3.
    drop(r);
    replica.restart().unwrap();
    text(&mut p, &["SET", "b", "2"]);
    let mut r = Conn::connect(replica.addr()).unwrap();
    eventually("the continued link", || link_up(&mut r));
    text(&mut r, &["SELECT", "3"]);
    eventually("the write made while it was away", || {
        text(&mut r, &["GET", "b"]) == "$1\r\n2\r\n"
    });
    let stats = text(&mut p, &["INFO", "stats"]);
    assert_eq!(field(&stats, "sync_full"), "1", "{stats}");
    assert_eq!(field(&stats, "sync_partial_ok"), "1", "{stats}");
    // The first sync asked `PSYNC ? -1`, as a replica without history asks Redis.
    assert_eq!(field(&stats, "sync_partial_err"), "0", "{stats}");
    // CONFIG RESETSTAT zeroes them, as Redis's resetServerStats does (psync2-master-restart
    // counts the syncs after it).
    text(&mut p, &["CONFIG", "RESETSTAT"]);
    let stats = text(&mut p, &["INFO", "stats"]);
    assert_eq!(field(&stats, "sync_full"), "0", "{stats}");
    assert_eq!(field(&stats, "sync_partial_ok"), "0", "{stats}");
    // Now the primary restarts from its file: same history as previous ID, a backlog ready.
    drop(p);
    primary.restart().unwrap();
    let mut p = Conn::connect(primary.addr()).unwrap();
    let info = text(&mut p, &["INFO", "replication"]);
    assert_eq!(field(&info, "master_replid2"), replid, "{info}");
    assert_eq!(field(&info, "repl_backlog_active"), "1", "{info}");
    eventually("the replica continues from the restarted primary", || {
        field(&text(&mut p, &["INFO", "stats"]), "sync_partial_ok") == "1"
    });
    let stats = text(&mut p, &["INFO", "stats"]);
    assert_eq!(field(&stats, "sync_full"), "0", "{stats}");
    assert_eq!(field(&stats, "sync_partial_ok"), "1", "{stats}");
    text(&mut p, &["SELECT", "3"]);
    text(&mut p, &["SET", "c", "3"]);
    eventually("a write after the primary's restart", || {
        text(&mut r, &["GET", "c"]) == "$1\r\n3\r\n"
    });
}

/// A restarting primary deletes the keys its file holds expired and feeds those deletions to
/// its backlog after the file's history (Redis's `RDBFLAGS_FEED_REPL`), so a replica that
/// continues with PSYNC drops them too.
#[test]
fn a_restarted_primary_tells_continuing_replicas_which_keys_expired_while_it_was_down() {
    let clock = embedis::Clock::manual();
    // No pings in the stream (the minute below would send some): the replica's offset is the
    // primary's when it stops, as in Redis's psync2-master-restart.
    let mut primary = support::builder()
        .dir(support::temp_dir("history-expired"))
        .clock(clock.clone())
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("repl-ping-replica-period", "3600")
        .unwrap()
        .start()
        .unwrap();
    let port = primary.addr().port().to_string();
    let replica = support::builder()
        .config("replicaof", &format!("127.0.0.1 {port}"))
        .unwrap()
        .start()
        .unwrap();
    let mut p = Conn::connect(primary.addr()).unwrap();
    text(&mut p, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    text(&mut p, &["SELECT", "2"]);
    text(&mut p, &["SET", "session", "x", "PX", "60000"]);
    text(&mut p, &["SET", "kept", "y"]);
    let mut r = Conn::connect(replica.addr()).unwrap();
    text(&mut r, &["SELECT", "2"]);
    eventually("the replica has the session", || {
        text(&mut r, &["EXISTS", "session", "kept"]) == ":2\r\n"
    });
    // A minute passes on the primary's clock while nothing reads the key; then it restarts.
    clock.advance(std::time::Duration::from_secs(61));
    drop(p);
    primary.restart().unwrap();
    let mut p = Conn::connect(primary.addr()).unwrap();
    let info = text(&mut p, &["INFO", "persistence"]);
    assert_eq!(field(&info, "rdb_last_load_keys_expired"), "1", "{info}");
    eventually("the replica drops the expired key", || {
        text(&mut r, &["EXISTS", "session", "kept"]) == ":1\r\n"
    });
    let stats = text(&mut p, &["INFO", "stats"]);
    assert_eq!(field(&stats, "sync_partial_ok"), "1", "{stats}");
    assert_eq!(field(&stats, "sync_full"), "0", "{stats}");
}
