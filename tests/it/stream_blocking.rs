//! Blocking XREAD and XREADGROUP seen from clients: real TCP connections to a server whose clock
//! the test controls (`Clock::manual()`), so that BLOCK timeouts fire when the test advances the
//! clock. The scenarios that do not depend on time (FIFO service, `$` resolved when the client
//! blocks, a woken reader served from its key only, groups destroyed or keys deleted under a
//! blocked XREADGROUP, BLOCK inside MULTI, WATCH and the stream writes) are differential fixture
//! lines compared with a real redis-server 7.0: tests/diff/streams_blocking.txt.

use crate::support;

use support::{advance_ms, bulk, manual_server, Client};

/// One stream's part of an XREAD reply (RESP2): `[key, [[id, [f, v]]…]]`.
fn read_reply(key: &str, entries: &[(&str, &str, &str)]) -> String {
    let mut out = format!("*1\r\n*2\r\n{}*{}\r\n", bulk(key), entries.len());
    for (id, field, value) in entries {
        out += &format!("*2\r\n{}*2\r\n{}{}", bulk(id), bulk(field), bulk(value));
    }
    out
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
