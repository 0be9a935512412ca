//! Client tracking seen from several connections: invalidations redirected to another client
//! (a RESP2 subscriber of `__redis__:invalidate` or a RESP3 client), BCAST prefixes written by
//! another client, NOLOOP, a redirection broken by the redirect client going away, FLUSHALL's
//! null invalidation, the tracking table's size limit, INFO's tracking fields and CLIENT LIST's
//! flags. One connection's behaviour (pushes after the reply, argument errors) is in
//! tests/diff/tracking.txt.
//!
//! The scenario transcript runs against embedis (both I/O modes) and a real redis-server 7.0;
//! the transcripts must be the same bytes. Client ids differ between the servers, so frames
//! that carry one are shown with the id replaced. Active expiry, which Redis drives by its own
//! clock, is checked on embedis alone with a manual clock.

use crate::support;
use support::info_field;

use std::net::SocketAddr;
use std::time::Duration;
use support::{
    advance_ms, check_transcripts, cmd, connect, eventually, frame, manual_server, send, Conn,
    RedisServer,
};

/// The id of the connection, as the number CLIENT ID answers.
fn client_id(conn: &mut Conn) -> String {
    let reply = cmd(conn, &["CLIENT", "ID"]);
    reply
        .trim_start_matches(':')
        .trim_end_matches("\\r\\n")
        .to_string()
}

/// CLIENT LIST's `flags=` and `redir=` of the client with id `id`, redir shown relative to
/// `redirect_id` (the ids differ between the servers).
fn flags_and_redir(probe: &mut Conn, id: &str, redirect_id: &str) -> String {
    let list = String::from_utf8_lossy(&probe.command(&["CLIENT", "LIST", "ID", id])).into_owned();
    let field = |name: &str| {
        list.split(' ')
            .find_map(|f| f.strip_prefix(name))
            .unwrap_or("?")
            .trim()
            .to_string()
    };
    let redir = field("redir=");
    let redir = if redir == redirect_id {
        "<redirect>".to_string()
    } else {
        redir
    };
    format!("flags={} redir={redir}", field("flags="))
}

/// The scenario: every frame every client receives, in the order the test reads them.
fn transcript(addr: SocketAddr) -> Vec<String> {
    let mut log = Vec::new();
    let mut writer = connect(addr);
    let mut probe = connect(addr);

    // A RESP2 redirect client subscribed to __redis__:invalidate, and a RESP2 tracking client.
    let mut sub = connect(addr);
    let sub_id = client_id(&mut sub);
    send(&mut sub, &["SUBSCRIBE", "__redis__:invalidate"]);
    log.push(format!("sub: {}", frame(&mut sub)));
    let mut r = connect(addr);
    let r_id = client_id(&mut r);
    log.push(format!(
        "r: {}",
        cmd(&mut r, &["CLIENT", "TRACKING", "on", "REDIRECT", &sub_id])
    ));
    log.push(format!(
        "r getredir is the subscriber: {}",
        cmd(&mut r, &["CLIENT", "GETREDIR"]).contains(&sub_id)
    ));
    log.push(format!(
        "r list: {}",
        flags_and_redir(&mut probe, &r_id, &sub_id)
    ));
    cmd(&mut writer, &["MSET", "a", "1", "b", "1"]);
    log.push(format!("r: {}", cmd(&mut r, &["GET", "a"])));
    log.push(format!("writer: {}", cmd(&mut writer, &["INCR", "b"])));
    log.push(format!("writer: {}", cmd(&mut writer, &["INCR", "a"])));
    log.push(format!("sub: {}", frame(&mut sub)));
    log.push(format!(
        "tracking_total_keys {}",
        info_field(&mut probe, "all", "tracking_total_keys").unwrap()
    ));
    log.push(format!(
        "tracking_clients {}",
        info_field(&mut probe, "all", "tracking_clients").unwrap()
    ));
    // FLUSHALL: a null for "all keys", in the tracking client's protocol (RESP2: $-1).
    log.push(format!("r: {}", cmd(&mut r, &["GET", "a"])));
    log.push(format!("writer: {}", cmd(&mut writer, &["FLUSHALL"])));
    log.push(format!("sub: {}", frame(&mut sub)));
    log.push(format!(
        "tracking_total_keys {}",
        info_field(&mut probe, "all", "tracking_total_keys").unwrap()
    ));

    // NOLOOP in standard mode: r's own write is not reported, the writer's are.
    cmd(&mut r, &["CLIENT", "TRACKING", "off"]);
    cmd(
        &mut r,
        &["CLIENT", "TRACKING", "on", "REDIRECT", &sub_id, "NOLOOP"],
    );
    log.push(format!("r: {}", cmd(&mut r, &["MGET", "k1", "loop", "k2"])));
    log.push(format!("writer: {}", cmd(&mut writer, &["SET", "k1", "1"])));
    log.push(format!("r: {}", cmd(&mut r, &["SET", "loop", "1"])));
    log.push(format!("writer: {}", cmd(&mut writer, &["SET", "k2", "1"])));
    log.push(format!("sub: {}", frame(&mut sub)));
    log.push(format!("sub: {}", frame(&mut sub)));

    // BCAST with prefixes: one message per prefix, keys in order, others' writes only reported
    // to a NOLOOP client.
    cmd(&mut r, &["CLIENT", "TRACKING", "off"]);
    log.push(format!(
        "r: {}",
        cmd(
            &mut r,
            &[
                "CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", &sub_id, "PREFIX", "a:", "PREFIX",
                "b:"
            ]
        )
    ));
    log.push(format!(
        "r list: {}",
        flags_and_redir(&mut probe, &r_id, &sub_id)
    ));
    log.push(format!(
        "tracking_total_prefixes {}",
        info_field(&mut probe, "all", "tracking_total_prefixes").unwrap()
    ));
    send(&mut writer, &["MULTI"]);
    for key in ["a:2", "a:1", "b:1", "c:1"] {
        send(&mut writer, &["INCR", key]);
    }
    send(&mut writer, &["EXEC"]);
    for _ in 0..6 {
        frame(&mut writer);
    }
    log.push(format!("sub: {}", frame(&mut sub)));
    log.push(format!("sub: {}", frame(&mut sub)));
    cmd(&mut r, &["CLIENT", "TRACKING", "off"]);
    cmd(
        &mut r,
        &[
            "CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", &sub_id, "NOLOOP",
        ],
    );
    log.push(format!("writer: {}", cmd(&mut writer, &["SET", "x1", "1"])));
    log.push(format!("sub: {}", frame(&mut sub)));
    log.push(format!(
        "r: {}",
        cmd(&mut r, &["MSET", "mine", "1", "x2", "1"])
    ));
    log.push(format!("writer: {}", cmd(&mut writer, &["SET", "x3", "1"])));
    log.push(format!("sub: {}", frame(&mut sub)));
    cmd(&mut r, &["CLIENT", "TRACKING", "off"]);

    // Two clients redirecting to a RESP3 client (pushes, even while it is subscribed).
    let mut push = connect(addr);
    send(&mut push, &["HELLO", "3"]);
    frame(&mut push);
    let push_id = client_id(&mut push);
    let mut other = connect(addr);
    cmd(&mut r, &["CLIENT", "TRACKING", "on", "REDIRECT", &push_id]);
    cmd(
        &mut other,
        &["CLIENT", "TRACKING", "on", "REDIRECT", &push_id],
    );
    cmd(&mut writer, &["MSET", "p1", "1", "p2", "1"]);
    log.push(format!("r: {}", cmd(&mut r, &["GET", "p1"])));
    log.push(format!("other: {}", cmd(&mut other, &["GET", "p2"])));
    log.push(format!("writer: {}", cmd(&mut writer, &["INCR", "p2"])));
    log.push(format!("push: {}", frame(&mut push)));
    log.push(format!("writer: {}", cmd(&mut writer, &["INCR", "p1"])));
    log.push(format!("push: {}", frame(&mut push)));
    // The redirect client itself writes a key another client tracks: the invalidation is
    // pushed ahead of its own reply, where Redis sends it (from the write, mid-command).
    log.push(format!("r: {}", cmd(&mut r, &["GET", "p1"])));
    send(&mut push, &["SET", "p1", "2"]);
    log.push(format!("push: {}", frame(&mut push)));
    log.push(format!("push: {}", frame(&mut push)));
    // RESP3 tracking client redirecting to the RESP2 subscriber: FLUSHALL's null is RESP3's.
    cmd(&mut other, &["CLIENT", "TRACKING", "off"]);
    cmd(&mut r, &["CLIENT", "TRACKING", "off"]);
    send(&mut r, &["HELLO", "3"]);
    frame(&mut r);
    cmd(&mut r, &["CLIENT", "TRACKING", "on", "REDIRECT", &sub_id]);
    log.push(format!("writer: {}", cmd(&mut writer, &["FLUSHALL"])));
    log.push(format!("sub: {}", frame(&mut sub)));

    // The redirect client goes away: the RESP3 tracking client is told, once per message.
    cmd(&mut r, &["CLIENT", "TRACKING", "off"]);
    cmd(&mut r, &["CLIENT", "TRACKING", "on", "REDIRECT", &push_id]);
    log.push(format!("r: {}", cmd(&mut r, &["GET", "gone"])));
    drop(push);
    eventually("the redirect client is gone", || {
        !String::from_utf8_lossy(&probe.command(&["CLIENT", "LIST"]))
            .contains(&format!("id={push_id} "))
    });
    log.push(format!(
        "writer: {}",
        cmd(&mut writer, &["SET", "gone", "1"])
    ));
    let id_integer = format!(":{push_id}\\r\\n");
    let broken = frame(&mut r).replace(&id_integer, ":<redirect>");
    log.push(format!("r: {broken}"));
    let info = cmd(&mut r, &["CLIENT", "TRACKINGINFO"]).replace(&id_integer, ":<redirect>");
    log.push(format!("r: {info}"));
    log.push(format!(
        "r list: {}",
        flags_and_redir(&mut probe, &r_id, &push_id)
    ));
    cmd(&mut r, &["CLIENT", "TRACKING", "off"]);

    // The table's size limit: evicting a key tells its clients, as if it had changed.
    cmd(&mut r, &["CLIENT", "TRACKING", "on", "REDIRECT", &sub_id]);
    cmd(&mut writer, &["MSET", "m1", "1", "m2", "2"]);
    log.push(format!("r: {}", cmd(&mut r, &["MGET", "m1", "m2"])));
    log.push(format!(
        "tracking_total_keys {}",
        info_field(&mut probe, "all", "tracking_total_keys").unwrap()
    ));
    log.push(format!(
        "tracking_total_items {}",
        info_field(&mut probe, "all", "tracking_total_items").unwrap()
    ));
    log.push(format!(
        "probe: {}",
        cmd(
            &mut probe,
            &["CONFIG", "SET", "tracking-table-max-keys", "1"]
        )
    ));
    let evicted = frame(&mut sub);
    log.push(format!(
        "sub: one of the two keys: {}",
        evicted.contains("$2\\r\\nm1\\r\\n") || evicted.contains("$2\\r\\nm2\\r\\n")
    ));
    log.push(format!(
        "tracking_total_keys {}",
        info_field(&mut probe, "all", "tracking_total_keys").unwrap()
    ));
    cmd(
        &mut probe,
        &["CONFIG", "SET", "tracking-table-max-keys", "0"],
    );

    // Unblocked BLMOVE: its own invalidation follows the reply it gets when served.
    let mut blocked = connect(addr);
    send(&mut blocked, &["HELLO", "3"]);
    frame(&mut blocked);
    cmd(&mut blocked, &["CLIENT", "TRACKING", "on"]);
    cmd(&mut writer, &["RPUSH", "dst", "a"]);
    log.push(format!(
        "blocked: {}",
        cmd(&mut blocked, &["LRANGE", "dst", "0", "-1"])
    ));
    send(&mut blocked, &["BLMOVE", "src", "dst", "LEFT", "LEFT", "0"]);
    support::wait_blocked(&mut probe, 1);
    log.push(format!(
        "writer: {}",
        cmd(&mut writer, &["RPUSH", "src", "foo"])
    ));
    log.push(format!("blocked: {}", frame(&mut blocked)));
    log.push(format!("blocked: {}", frame(&mut blocked)));

    // RESET turns tracking off, and INFO counts the clients that still track.
    log.push(format!(
        "tracking_clients {}",
        info_field(&mut probe, "all", "tracking_clients").unwrap()
    ));
    log.push(format!("r: {}", cmd(&mut r, &["RESET"])));
    log.push(format!(
        "r list: {}",
        flags_and_redir(&mut probe, &r_id, &sub_id)
    ));
    log.push(format!(
        "tracking_clients {}",
        info_field(&mut probe, "all", "tracking_clients").unwrap()
    ));
    log
}

#[test]
fn tracking_transcript_matches_redis() {
    let Some(redis) = RedisServer::start("tracking", &[]) else {
        return;
    };
    let theirs = transcript(redis.addr());
    if std::env::var_os("TRACKING_TRACE").is_some() {
        eprintln!("{}", theirs.join("\n"));
    }
    let ours = support::builder().start().unwrap();
    check_transcripts("tracking", &transcript(ours.addr()), &theirs);
    let threaded = support::builder()
        .config("io-threads", "2")
        .unwrap()
        .start()
        .unwrap();
    check_transcripts(
        "tracking, io-threads 2",
        &transcript(threaded.addr()),
        &theirs,
    );
}

/// Keys deleted by the active expiry cycle are invalidated between commands: told at once to
/// a NOLOOP BCAST client too (nobody's command changed them), and to a client that read them.
#[test]
fn active_expiry_invalidates_on_the_servers_clock() {
    let server = manual_server();
    let addr = server.addr();
    let mut bcast = connect(addr);
    send(&mut bcast, &["HELLO", "3"]);
    frame(&mut bcast);
    assert_eq!(
        cmd(&mut bcast, &["CLIENT", "TRACKING", "on", "BCAST", "NOLOOP"]),
        "+OK\\r\\n"
    );
    let mut reader = connect(addr);
    send(&mut reader, &["HELLO", "3"]);
    frame(&mut reader);
    cmd(&mut reader, &["CLIENT", "TRACKING", "on"]);
    assert_eq!(
        cmd(&mut bcast, &["SET", "ttl", "v", "PX", "100"]),
        "+OK\\r\\n"
    );
    assert_eq!(cmd(&mut bcast, &["SET", "other", "v"]), "+OK\\r\\n");
    assert_eq!(cmd(&mut reader, &["GET", "ttl"]), "$1\\r\\nv\\r\\n");
    // The writes were bcast's own (NOLOOP): nothing came for them.
    assert_eq!(bcast.reply_within(Duration::from_millis(50)), None);
    advance_ms(&server, 101);
    let invalidation = ">2\\r\\n$10\\r\\ninvalidate\\r\\n*1\\r\\n$3\\r\\nttl\\r\\n";
    assert_eq!(frame(&mut reader), invalidation);
    assert_eq!(frame(&mut bcast), invalidation);
    assert_eq!(cmd(&mut reader, &["DBSIZE"]), ":1\\r\\n");
}

/// Invalidations keep coming while the tracking client's replies are off (CLIENT REPLY OFF),
/// and nothing else reaches it.
#[test]
fn invalidations_pass_client_reply_off() {
    let Some(redis) = RedisServer::start("tracking-reply-off", &[]) else {
        return;
    };
    let run = |addr: SocketAddr| -> Vec<String> {
        let mut c = connect(addr);
        let mut writer = connect(addr);
        send(&mut c, &["HELLO", "3"]);
        frame(&mut c);
        let mut log = vec![cmd(&mut c, &["CLIENT", "TRACKING", "on"])];
        cmd(&mut writer, &["SET", "foo", "bar"]);
        log.push(cmd(&mut c, &["GET", "foo"]));
        send(&mut c, &["CLIENT", "REPLY", "OFF"]);
        cmd(&mut writer, &["SET", "foo", "bar2"]);
        log.push(frame(&mut c));
        log.push(cmd(&mut c, &["CLIENT", "REPLY", "ON"]));
        log.push(cmd(&mut c, &["PING"]));
        log
    };
    let theirs = run(redis.addr());
    let ours = support::builder().start().unwrap();
    check_transcripts("reply off", &run(ours.addr()), &theirs);
}
