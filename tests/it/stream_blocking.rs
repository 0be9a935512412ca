//! Blocking XREAD and XREADGROUP seen from clients: real TCP connections to a server whose clock
//! the test controls (`Clock::manual()`), so that BLOCK timeouts fire when the test advances the
//! clock. The scenarios that do not depend on time (FIFO service, `$` resolved when the client
//! blocks, a woken reader served from its key only, groups destroyed or keys deleted under a
//! blocked XREADGROUP, BLOCK inside MULTI) also run against a real redis-server 7.0, and the
//! transcripts must be the same.

use crate::support;

use std::net::SocketAddr;
use support::{advance_ms, bulk, check_transcripts, manual_server, Client};

/// One stream's part of an XREAD reply (RESP2): `[key, [[id, [f, v]]…]]`.
fn read_reply(key: &str, entries: &[(&str, &str, &str)]) -> String {
    let mut out = format!("*1\r\n*2\r\n{}*{}\r\n", bulk(key), entries.len());
    for (id, field, value) in entries {
        out += &format!("*2\r\n{}*2\r\n{}{}", bulk(id), bulk(field), bulk(value));
    }
    out
}

fn stream_transcript(addr: SocketAddr) -> Vec<String> {
    let mut log = Vec::new();
    let mut w = Client::connect(addr);
    w.cmd(&["FLUSHALL"]);
    let mut c: Vec<Client> = (0..3).map(|_| Client::connect(addr)).collect();

    // FIFO on one key: every XREAD waiter is served by one XADD (all of them can read it).
    w.cmd(&["XADD", "s", "1-1", "f", "old"]);
    for client in c.iter_mut() {
        client.block(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    }
    log.push(w.cmd(&["XADD", "s", "2-1", "f", "new"]));
    for (i, client) in c.iter_mut().enumerate() {
        log.push(format!("client {i}: {}", client.reply()));
    }

    // `$` is the last ID when the client blocked: a later XADD is all it gets.
    c[0].block(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    log.push(w.cmd(&["XADD", "s", "3-1", "f", "a"]));
    log.push(format!("client 0: {}", c[0].reply()));

    // Several keys: served from the key that was written, and only that one.
    c[1].block(&["XREAD", "BLOCK", "0", "STREAMS", "s", "t", "$", "$"]);
    log.push(w.cmd(&["XADD", "t", "1-1", "g", "h"]));
    log.push(format!("client 1: {}", c[1].reply()));

    // COUNT limits what a woken reader receives; an explicit ID reads from there.
    c[2].block(&["XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "u", "0-0"]);
    log.push(w.cmd(&["XADD", "u", "1-1", "a", "1"]));
    log.push(format!("client 2: {}", c[2].reply()));

    // A write that adds nothing (XDEL, XTRIM) does not release a reader.
    c[0].block(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    log.push(w.cmd(&["XDEL", "s", "1-1"]));
    log.push(w.cmd(&["XTRIM", "s", "MAXLEN", "1"]));
    c[0].no_reply();
    // Deleting the key does not release XREAD either; a new stream there does.
    log.push(w.cmd(&["DEL", "s"]));
    c[0].no_reply();
    log.push(w.cmd(&["XADD", "s", "9-9", "f", "z"]));
    log.push(format!("client 0: {}", c[0].reply()));

    // XADD inside MULTI wakes readers after EXEC; all the transaction's entries are there.
    c[1].block(&["XREAD", "BLOCK", "0", "STREAMS", "m", "$"]);
    w.cmd(&["MULTI"]);
    w.cmd(&["XADD", "m", "1-1", "a", "1"]);
    w.cmd(&["XADD", "m", "1-2", "a", "2"]);
    log.push(w.cmd(&["EXEC"]));
    log.push(format!("client 1: {}", c[1].reply()));

    // BLOCK inside MULTI does not block: a null array, whatever the timeout.
    w.cmd(&["XGROUP", "CREATE", "m", "g", "$"]);
    w.cmd(&["MULTI"]);
    w.cmd(&["XREAD", "BLOCK", "0", "STREAMS", "nothing", "$"]);
    w.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "m",
        ">",
    ]);
    log.push(w.cmd(&["EXEC"]));

    // XREADGROUP `>`: the first waiter gets the new entry, the next one waits for more.
    w.cmd(&["XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"]);
    c[0].block(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "alice",
        "BLOCK",
        "0",
        "STREAMS",
        "q",
        ">",
    ]);
    c[1].block(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "bob",
        "BLOCK",
        "0",
        "STREAMS",
        "q",
        ">",
    ]);
    log.push(w.cmd(&["XADD", "q", "1-1", "job", "1"]));
    log.push(format!("client 0: {}", c[0].reply()));
    c[1].no_reply();
    log.push(w.cmd(&["XADD", "q", "2-1", "job", "2"]));
    log.push(format!("client 1: {}", c[1].reply()));
    log.push(w.cmd(&["XPENDING", "q", "g"]));
    // NOACK leaves nothing pending.
    c[2].block(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "carol",
        "NOACK",
        "BLOCK",
        "0",
        "STREAMS",
        "q",
        ">",
    ]);
    log.push(w.cmd(&["XADD", "q", "3-1", "job", "3"]));
    log.push(format!("client 2: {}", c[2].reply()));
    log.push(w.cmd(&["XPENDING", "q", "g"]));

    // XGROUP DESTROY releases the group's readers with NOGROUP; DEL, SET and FLUSHALL release
    // them with UNBLOCKED.
    c[0].block(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "alice",
        "BLOCK",
        "0",
        "STREAMS",
        "q",
        ">",
    ]);
    log.push(w.cmd(&["XGROUP", "DESTROY", "q", "g"]));
    log.push(format!("client 0: {}", c[0].reply()));
    w.cmd(&["XGROUP", "CREATE", "q", "g", "$"]);
    c[0].block(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "alice",
        "BLOCK",
        "0",
        "STREAMS",
        "q",
        ">",
    ]);
    c[1].block(&["XREAD", "BLOCK", "0", "STREAMS", "q", "$"]);
    log.push(w.cmd(&["DEL", "q"]));
    log.push(format!("client 0: {}", c[0].reply()));
    c[1].no_reply();
    log.push(w.cmd(&["XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"]));
    c[0].block(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "alice",
        "BLOCK",
        "0",
        "STREAMS",
        "q",
        ">",
    ]);
    log.push(w.cmd(&["SET", "q", "string"]));
    log.push(format!("client 0: {}", c[0].reply()));
    c[1].no_reply();
    log.push(w.cmd(&["DEL", "q"]));
    log.push(w.cmd(&["XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"]));
    c[0].block(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "alice",
        "BLOCK",
        "0",
        "STREAMS",
        "q",
        ">",
    ]);
    log.push(w.cmd(&["FLUSHALL"]));
    log.push(format!("client 0: {}", c[0].reply()));
    // The plain reader still waits; a new stream at the key serves it.
    log.push(w.cmd(&["XADD", "q", "5-5", "x", "y"]));
    log.push(format!("client 1: {}", c[1].reply()));
    log
}

#[test]
fn stream_readers_match_redis() {
    let ours = manual_server();
    let transcript = stream_transcript(ours.addr());
    let new_entry = read_reply("s", &[("2-1", "f", "new")]);
    assert_eq!(
        transcript[..4],
        [
            "$3\r\n2-1\r\n".to_string(),
            format!("client 0: {new_entry}"),
            format!("client 1: {new_entry}"),
            format!("client 2: {new_entry}"),
        ]
    );
    assert!(transcript.contains(&format!(
        "client 1: {}",
        read_reply("t", &[("1-1", "g", "h")])
    )));
    assert!(transcript.contains(&format!(
        "client 0: {}",
        read_reply("s", &[("9-9", "f", "z")])
    )));
    assert!(transcript.contains(&"*2\r\n*-1\r\n*-1\r\n".to_string()));
    assert!(transcript.contains(
        &"client 0: -NOGROUP the consumer group this client was blocked on no longer exists\r\n"
            .to_string()
    ));
    assert!(transcript
        .contains(&"client 0: -UNBLOCKED the stream key no longer exists\r\n".to_string()));
    let Some(redis) = support::RedisServer::start("blocking streams", &[]) else {
        return;
    };
    let theirs = stream_transcript(redis.addr());
    check_transcripts("blocking streams", &transcript, &theirs);
}

#[test]
fn block_timeouts_follow_the_clock() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    let mut w = Client::connect(server.addr());
    a.block(&["XREAD", "BLOCK", "5000", "STREAMS", "s", "$"]);
    advance_ms(&server, 5000);
    a.no_reply();
    advance_ms(&server, 1);
    assert_eq!(a.reply(), "*-1\r\n");
    w.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    a.block(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "100",
        "STREAMS",
        "s",
        ">",
    ]);
    advance_ms(&server, 101);
    assert_eq!(a.reply(), "*-1\r\n");
    // A write before the deadline serves the reader; the deadline is then forgotten.
    a.block(&["XREAD", "BLOCK", "1000", "STREAMS", "s", "$"]);
    advance_ms(&server, 500);
    assert_eq!(w.cmd(&["XADD", "s", "1-1", "f", "v"]), "$3\r\n1-1\r\n");
    assert_eq!(a.reply(), read_reply("s", &[("1-1", "f", "v")]));
    advance_ms(&server, 1000);
    a.no_reply();
    // RESP3: the timeout is a null, the reply a map.
    a.cmd(&["HELLO", "3"]);
    a.block(&["XREAD", "BLOCK", "10", "STREAMS", "s", "$"]);
    advance_ms(&server, 11);
    assert_eq!(a.reply(), "_\r\n");
    a.block(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    w.cmd(&["XADD", "s", "2-1", "f", "w"]);
    assert_eq!(
        a.reply(),
        "%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nf\r\n$1\r\nw\r\n"
    );
    // Bad BLOCK arguments.
    assert_eq!(
        w.cmd(&["XREAD", "BLOCK", "-1", "STREAMS", "s", "$"]),
        "-ERR timeout is negative\r\n"
    );
    assert_eq!(
        w.cmd(&["XREAD", "BLOCK", "1.5", "STREAMS", "s", "$"]),
        "-ERR timeout is not an integer or out of range\r\n"
    );
}

#[test]
fn scripts_cannot_block() {
    let server = manual_server();
    let mut a = Client::connect(server.addr());
    assert_eq!(
        a.cmd(&[
            "EVAL",
            "return redis.pcall('xread','BLOCK','0','STREAMS','s','$')",
            "0"
        ]),
        "-ERR xread command is not allowed with BLOCK option from scripts\r\n"
    );
    assert_eq!(
        a.cmd(&[
            "EVAL",
            "return redis.pcall('XREADGROUP','GROUP','g','c','BLOCK','0','STREAMS','s','>')",
            "0"
        ]),
        "-ERR XREADGROUP command is not allowed with BLOCK option from scripts\r\n"
    );
}

/// WATCH sees the stream writes Redis signals as modifications (XADD, XDEL and XTRIM that
/// remove entries, a stream created by XGROUP CREATE … MKSTREAM) and not the group bookkeeping
/// (XGROUP on an existing stream, XSETID, XREADGROUP, XACK, XCLAIM), on embedis and on Redis.
fn watch_transcript(addr: SocketAddr) -> Vec<String> {
    let mut log = Vec::new();
    let mut a = Client::connect(addr);
    let mut b = Client::connect(addr);
    let cases: &[&[&str]] = &[
        &["XADD", "s", "5-1", "f", "v"],
        &["XDEL", "s", "1-1"],
        &["XDEL", "s", "9-9"],
        &["XTRIM", "s", "MAXLEN", "0"],
        &["XTRIM", "s", "MAXLEN", "100"],
        &["XGROUP", "CREATE", "s", "g2", "0"],
        &["XGROUP", "CREATE", "fresh", "g", "$", "MKSTREAM"],
        &["XGROUP", "SETID", "s", "g", "0"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "x"],
        &["XGROUP", "DELCONSUMER", "s", "g", "c"],
        &["XGROUP", "DESTROY", "s", "g"],
        &["XSETID", "s", "99-0"],
        &["XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", "0"],
        &["XACK", "s", "g", "1-1"],
        &["XCLAIM", "s", "g", "e", "0", "1-1"],
    ];
    for case in cases {
        b.cmd(&["DEL", "s", "fresh"]);
        b.cmd(&["XADD", "s", "1-1", "f", "v"]);
        b.cmd(&["XGROUP", "CREATE", "s", "g", "0"]);
        b.cmd(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"]);
        a.cmd(&["WATCH", "s", "fresh"]);
        b.cmd(case);
        a.cmd(&["MULTI"]);
        a.cmd(&["PING"]);
        log.push(format!("{}: {}", case.join(" "), a.cmd(&["EXEC"])));
    }
    log
}

#[test]
fn watch_sees_the_stream_writes_redis_signals() {
    let ours = manual_server();
    let transcript = watch_transcript(ours.addr());
    assert_eq!(transcript[0], "XADD s 5-1 f v: *-1\r\n");
    assert_eq!(transcript[2], "XDEL s 9-9: *1\r\n+PONG\r\n");
    assert_eq!(transcript[11], "XSETID s 99-0: *1\r\n+PONG\r\n");
    let Some(redis) = support::RedisServer::start("stream WATCH", &[]) else {
        return;
    };
    let theirs = watch_transcript(redis.addr());
    check_transcripts("stream WATCH", &transcript, &theirs);
}
