//! Vector sets through the write stream and the disk, as Redis 8.2: a replica — embedis or
//! Redis 8.2.3 — of an embedis primary, and embedis as a replica of Redis 8.2.3, end with the
//! same elements, vectors (VEMB RAW: the stored bytes), attributes, sizes and DEBUG DIGEST after
//! VADD, VREM and VSETATTR sent before the link came up (the full sync's image) and after (the
//! stream); an AOF (`appendonly yes`) restart and one after BGREWRITEAOF keep the sets.
//!
//! The Redis 8.2.3 parts are skipped loudly when `$EMBEDIS_REDIS8_SERVER` is not set, unless
//! EMBEDIS_REQUIRE_REDIS=1.

use crate::support;
use support::{digest, eventually, field, link_up, temp_dir, text, Conn, RedisServer};

/// The elements any of the writes names.
const ELEMENTS: usize = 40;

/// VADD (new elements, each quantisation, REDUCE, attributes), VREM (including the last
/// element of a set, which deletes the key) and VSETATTR (set and remove), under keys tagged
/// `tag`. (A VADD that updates an element is not propagated: see [`an_update_stays_local`].)
fn vector_writes(c: &mut Conn, tag: &str) {
    let q8 = format!("va:{tag}");
    for i in 0..ELEMENTS {
        let (x, y, z) = (
            (i % 7).to_string(),
            (i % 5 + 1).to_string(),
            (i % 3).to_string(),
        );
        let name = format!("e{i}");
        let mut args = vec!["VADD", &q8, "VALUES", "3", &x, &y, &z, &name];
        let attributes = format!("{{\"i\":{i}}}");
        if i % 4 == 0 {
            args.extend(["SETATTR", &attributes]);
        }
        assert_eq!(text(c, &args), ":1\r\n", "{args:?}");
    }
    for i in [3, 5, 11] {
        assert_eq!(text(c, &["VREM", &q8, &format!("e{i}")]), ":1\r\n");
    }
    assert_eq!(text(c, &["VSETATTR", &q8, "e7", "{\"x\":1}"]), ":1\r\n");
    assert_eq!(text(c, &["VSETATTR", &q8, "e8", ""]), ":1\r\n");
    let f32 = format!("vn:{tag}");
    let bin = format!("vb:{tag}");
    let reduced = format!("vr:{tag}");
    for i in 0..12 {
        let (x, y) = (format!("{}.25", i % 4), format!("-{}.5", i % 3));
        let name = format!("e{i}");
        text(c, &["VADD", &f32, "VALUES", "2", &x, &y, &name, "NOQUANT"]);
        text(c, &["VADD", &bin, "VALUES", "2", &x, &y, &name, "BIN"]);
        let args = [
            "VADD", &reduced, "REDUCE", "2", "VALUES", "4", &x, &y, "1", "2", &name,
        ];
        text(c, &args);
    }
    let single = format!("v1:{tag}");
    text(c, &["VADD", &single, "VALUES", "1", "1", "x"]);
    assert_eq!(text(c, &["VREM", &single, "x"]), ":1\r\n");
}

/// Everything a client can read of the sets `vector_writes(tag)` made, element by element.
fn view(c: &mut Conn, tag: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for prefix in ["va", "vn", "vb", "vr", "v1"] {
        let key = format!("{prefix}:{tag}");
        seen.push(format!("{key} {}", text(c, &["VCARD", &key])));
        seen.push(format!("{key} {}", text(c, &["VDIM", &key])));
        let info = text(c, &["VINFO", &key]);
        // VINFO's fields but the random ones (max-level, vset-uid).
        for name in [
            "quant-type",
            "vector-dim",
            "projection-input-dim",
            "size",
            "attributes-count",
        ] {
            let lines: Vec<&str> = info.split("\r\n").collect();
            let at = lines.iter().position(|l| l.get(1..) == Some(name));
            seen.push(format!("{key} {name} {:?}", at.map(|i| lines[i + 1])));
        }
        for i in 0..ELEMENTS {
            let e = format!("e{i}");
            for command in ["VISMEMBER", "VEMB", "VGETATTR"] {
                seen.push(format!("{key} {e} {}", text(c, &[command, &key, &e])));
            }
            seen.push(format!("{key} {e} {}", text(c, &["VEMB", &key, &e, "RAW"])));
        }
    }
    seen
}

/// Redis 8.2.3 propagates a VADD only when it adds the element: an update of an existing one
/// (a new vector, SETATTR) reaches neither the replicas nor the AOF, which keep the element as
/// it was. embedis propagates what Redis does; a later write shows the stream has passed.
fn an_update_stays_local(primary: &mut Conn, replica: &mut Conn) {
    let update = [
        "VADD", "va:after", "VALUES", "3", "9", "9", "9", "e10", "SETATTR", "{}",
    ];
    assert_eq!(text(primary, &update), ":0\r\n");
    text(
        primary,
        &["VADD", "va:after", "VALUES", "3", "1", "1", "1", "marker"],
    );
    eventually("the marker to arrive", || {
        text(replica, &["VISMEMBER", "va:after", "marker"]) == ":1\r\n"
    });
    let e10 = |c: &mut Conn| {
        let vemb = text(c, &["VEMB", "va:after", "e10", "RAW"]);
        (vemb, text(c, &["VGETATTR", "va:after", "e10"]))
    };
    assert_ne!(e10(primary), e10(replica));
    assert_eq!(text(replica, &["VGETATTR", "va:after", "e10"]), "$-1\r\n");
}

/// Writes on `primary` before and after `replica` links to it, then compares what each shows.
fn replicate_and_compare(primary: &mut Conn, replica: &mut Conn) {
    eventually("the link to come up", || link_up(replica));
    eventually("the image to load", || {
        text(replica, &["VCARD", "va:before"]) == ":37\r\n"
    });
    vector_writes(primary, "after");
    eventually("the replica to catch up", || {
        text(replica, &["EXISTS", "vr:after"]) == ":1\r\n"
            && text(replica, &["VCARD", "vr:after"]) == ":12\r\n"
    });
    for tag in ["before", "after"] {
        assert_eq!(view(primary, tag), view(replica, tag), "{tag}");
    }
    assert_eq!(digest(primary), digest(replica));
    assert_eq!(text(replica, &["EXISTS", "v1:after"]), ":0\r\n");
    assert_eq!(text(replica, &["VCARD", "va:after"]), ":37\r\n");
    an_update_stays_local(primary, replica);
}

fn embedis_8_2() -> embedis::ServerBuilder {
    support::builder_as("8.2")
        .config("enable-debug-command", "yes")
        .unwrap()
}

#[test]
fn an_embedis_replica_of_embedis_receives_vector_sets() {
    let primary = embedis_8_2().start().unwrap();
    let mut p = Conn::connect(primary.addr()).unwrap();
    vector_writes(&mut p, "before");
    let address = format!("127.0.0.1 {}", primary.addr().port());
    let replica = embedis_8_2()
        .config("replicaof", &address)
        .unwrap()
        .start()
        .unwrap();
    let mut r = Conn::connect(replica.addr()).unwrap();
    replicate_and_compare(&mut p, &mut r);
}

#[test]
fn redis_8_2_replicates_vector_sets_from_embedis() {
    let primary = embedis_8_2().start().unwrap();
    let mut p = Conn::connect(primary.addr()).unwrap();
    vector_writes(&mut p, "before");
    let port = primary.addr().port().to_string();
    let args = [
        "--enable-debug-command",
        "yes",
        "--replicaof",
        "127.0.0.1",
        &port,
    ];
    let Some(redis) = RedisServer::start_redis8("vector sets to a Redis replica", &args) else {
        return;
    };
    let mut r = Conn::connect(redis.addr()).unwrap();
    replicate_and_compare(&mut p, &mut r);
}

#[test]
fn embedis_replicates_vector_sets_from_redis_8_2() {
    let args = [
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ];
    let Some(redis) = RedisServer::start_redis8("vector sets from a Redis primary", &args) else {
        return;
    };
    let mut p = Conn::connect(redis.addr()).unwrap();
    vector_writes(&mut p, "before");
    let address = format!("127.0.0.1 {}", redis.addr().port());
    let replica = embedis_8_2()
        .config("replicaof", &address)
        .unwrap()
        .start()
        .unwrap();
    let mut r = Conn::connect(replica.addr()).unwrap();
    replicate_and_compare(&mut p, &mut r);
}

#[test]
fn an_aof_restart_keeps_vector_sets() {
    let dir = temp_dir("vector-sets-aof");
    let mut server = embedis_8_2()
        .dir(&dir)
        .config("appendonly", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    vector_writes(&mut c, "before");
    let (seen, sum) = (view(&mut c, "before"), digest(&mut c));
    drop(c);
    // Replayed from the commands of the AOF's increment.
    server.restart().unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(view(&mut c, "before"), seen);
    assert_eq!(digest(&mut c), sum);
    // From a rewritten base (an RDB preamble) plus a new increment.
    assert!(text(&mut c, &["BGREWRITEAOF"]).starts_with("+Background append only file"));
    eventually("the rewrite to finish", || {
        let info = text(&mut c, &["INFO", "persistence"]);
        field(&info, "aof_rewrite_in_progress") == "0"
            && field(&info, "aof_last_bgrewrite_status") == "ok"
    });
    vector_writes(&mut c, "after");
    let after = (
        view(&mut c, "before"),
        view(&mut c, "after"),
        digest(&mut c),
    );
    // Not propagated, so not in the AOF either (as in Redis 8.2.3): lost at the restart.
    let update = [
        "VADD", "va:after", "VALUES", "3", "9", "9", "9", "e10", "SETATTR", "{}",
    ];
    assert_eq!(text(&mut c, &update), ":0\r\n");
    drop(c);
    server.restart().unwrap();
    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(
        (
            view(&mut c, "before"),
            view(&mut c, "after"),
            digest(&mut c)
        ),
        after
    );
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
