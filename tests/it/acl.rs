//! ACL users beyond what the byte-for-byte fixtures (tests/diff/acl.txt) can show: the ACL log's
//! entries, what changing users does to open connections, the ACL file (written by embedis and
//! read by redis-server 7.0, and the other way round), users declared at start-up, and
//! `requirepass` as the default user's password.

use crate::support;

use support::{connect, eventually, RedisServer};

/// A command's reply as text, without the final CRLF.
fn cmd(conn: &mut support::Conn, args: &[&str]) -> String {
    let raw = conn.command(args);
    let text = String::from_utf8_lossy(&raw);
    text.strip_suffix("\r\n").unwrap_or(&text).to_string()
}

fn server() -> embedis::Server {
    support::builder().start().unwrap()
}

/// The fields of the ACL LOG entry `index`, as (name, value) text pairs.
fn log_entry(conn: &mut support::Conn, index: usize) -> Vec<(String, String)> {
    use embedis_protocol::Value;
    conn.send_raw(&support::Conn::encode(&[b"ACL", b"LOG"]));
    let (_, value) = conn.read_reply().expect("a reply");
    let Value::Array(entries) = value else {
        panic!("ACL LOG: {value:?}")
    };
    let Value::Array(fields) = &entries[index] else {
        panic!("entry: {:?}", entries[index])
    };
    fields
        .chunks(2)
        .map(|pair| (value_text(&pair[0]), value_text(&pair[1])))
        .collect()
}

fn value_text(value: &embedis_protocol::Value) -> String {
    match value {
        embedis_protocol::Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        embedis_protocol::Value::Integer(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

fn entry_field<'a>(entry: &'a [(String, String)], name: &str) -> &'a str {
    &entry.iter().find(|(n, _)| n == name).expect(name).1
}

#[test]
fn the_acl_log_records_refusals_by_reason_and_context_and_groups_repeats() {
    let server = server();
    let mut admin = connect(server.addr());
    cmd(
        &mut admin,
        &[
            "ACL", "SETUSER", "app", "on", ">pw", "~app:*", "+get", "+multi", "+exec", "+eval",
        ],
    );
    let mut app = connect(server.addr());
    assert_eq!(cmd(&mut app, &["AUTH", "app", "pw"]), "+OK");
    assert!(cmd(&mut app, &["GET", "other"]).starts_with("-NOPERM"));
    assert!(cmd(&mut app, &["GET", "other"]).starts_with("-NOPERM"));
    let entry = log_entry(&mut admin, 0);
    assert_eq!(entry_field(&entry, "count"), "2");
    assert_eq!(entry_field(&entry, "reason"), "key");
    assert_eq!(entry_field(&entry, "context"), "toplevel");
    assert_eq!(entry_field(&entry, "object"), "other");
    assert_eq!(entry_field(&entry, "username"), "app");
    assert!(entry_field(&entry, "client-info").contains(" user=app "));
    // A command refused inside MULTI, a command refused to a script, a failed AUTH.
    cmd(&mut app, &["MULTI"]);
    assert!(cmd(&mut app, &["SET", "app:1", "x"]).starts_with("-NOPERM"));
    cmd(&mut app, &["EXEC"]);
    for _ in 0..2 {
        let refused = cmd(
            &mut app,
            &["EVAL", "return redis.call('get', 'elsewhere')", "0"],
        );
        assert!(
            refused.starts_with("-ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"),
            "{refused}"
        );
    }
    assert_eq!(
        cmd(&mut app, &["AUTH", "app", "wrong"]).as_str(),
        "-WRONGPASS invalid username-password pair or user is disabled."
    );
    let auth = log_entry(&mut admin, 0);
    assert_eq!(
        (
            entry_field(&auth, "reason"),
            entry_field(&auth, "context"),
            entry_field(&auth, "object"),
            entry_field(&auth, "username")
        ),
        ("auth", "toplevel", "AUTH", "app")
    );
    let script = log_entry(&mut admin, 1);
    assert_eq!(
        (
            entry_field(&script, "reason"),
            entry_field(&script, "context"),
            entry_field(&script, "object"),
            entry_field(&script, "count")
        ),
        ("key", "lua", "elsewhere", "2")
    );
    let multi = log_entry(&mut admin, 2);
    assert_eq!(
        (
            entry_field(&multi, "reason"),
            entry_field(&multi, "context"),
            entry_field(&multi, "object")
        ),
        ("command", "multi", "set")
    );
    // acllog-max-len bounds it; RESET empties it.
    cmd(&mut admin, &["CONFIG", "SET", "acllog-max-len", "2"]);
    assert!(cmd(&mut app, &["GET", "third"]).starts_with("-NOPERM"));
    assert_eq!(
        cmd(&mut admin, &["ACL", "LOG", "100"]).lines().next(),
        Some("*2")
    );
    assert_eq!(cmd(&mut admin, &["ACL", "LOG", "RESET"]), "+OK");
    assert_eq!(cmd(&mut admin, &["ACL", "LOG"]), "*0");
}

#[test]
fn deleting_or_reloading_users_closes_their_connections() {
    let dir = tempdir();
    let aclfile = dir.join("users.acl");
    std::fs::write(
        &aclfile,
        "user default on nopass ~* &* +@all\nuser a on >pw ~* +@all\n",
    )
    .unwrap();
    let server = support::builder()
        .config("aclfile", aclfile.to_str().unwrap())
        .unwrap()
        .start()
        .unwrap();
    let mut admin = connect(server.addr());
    let mut a = connect(server.addr());
    assert_eq!(cmd(&mut a, &["AUTH", "a", "pw"]), "+OK");
    assert_eq!(
        cmd(&mut admin, &["CLIENT", "KILL", "USER", "nosuch"]),
        "-ERR No such user 'nosuch'"
    );
    assert!(cmd(&mut admin, &["CLIENT", "LIST"]).contains(" user=a "));
    // ACL LOAD closes every connection of a user other than default, even one still in the file.
    assert_eq!(cmd(&mut admin, &["ACL", "LOAD"]), "+OK");
    assert!(a.read_to_close().is_empty());
    let mut a = connect(server.addr());
    assert_eq!(cmd(&mut a, &["AUTH", "a", "pw"]), "+OK");
    assert_eq!(cmd(&mut admin, &["ACL", "DELUSER", "a"]), ":1");
    assert!(a.read_to_close().is_empty());
    assert_eq!(cmd(&mut admin, &["PING"]), "+PONG");
    // A user deleting itself gets its reply, then the connection closes.
    cmd(
        &mut admin,
        &["ACL", "SETUSER", "self", "on", ">pw", "+@all", "~*"],
    );
    let mut own = connect(server.addr());
    cmd(&mut own, &["AUTH", "self", "pw"]);
    assert_eq!(cmd(&mut own, &["ACL", "DELUSER", "self"]), ":1");
    assert!(own.read_to_close().is_empty());
    // CLIENT KILL USER.
    cmd(
        &mut admin,
        &["ACL", "SETUSER", "k", "on", ">pw", "+@all", "~*"],
    );
    let mut k = connect(server.addr());
    cmd(&mut k, &["AUTH", "k", "pw"]);
    assert_eq!(cmd(&mut admin, &["CLIENT", "KILL", "USER", "k"]), ":1");
    assert!(k.read_to_close().is_empty());
}

#[test]
fn taking_channels_away_closes_the_users_subscribers() {
    let server = server();
    let mut admin = connect(server.addr());
    cmd(
        &mut admin,
        &[
            "ACL", "SETUSER", "sub", "on", ">pw", "+@all", "&news.*", "&sport",
        ],
    );
    let mut subscriber = connect(server.addr());
    cmd(&mut subscriber, &["AUTH", "sub", "pw"]);
    assert!(cmd(&mut subscriber, &["SUBSCRIBE", "news.a"]).starts_with("*3"));
    // A superset of the channels keeps it.
    cmd(&mut admin, &["ACL", "SETUSER", "sub", "&weather"]);
    assert_eq!(cmd(&mut admin, &["PUBLISH", "news.a", "1"]), ":1");
    // Dropping a channel it does not use keeps it too.
    cmd(
        &mut admin,
        &["ACL", "SETUSER", "sub", "resetchannels", "&news.*"],
    );
    assert_eq!(cmd(&mut admin, &["PUBLISH", "news.a", "2"]), ":1");
    // Taking its channel away closes it.
    cmd(
        &mut admin,
        &["ACL", "SETUSER", "sub", "resetchannels", "&sport"],
    );
    let rest = subscriber.read_to_close();
    assert!(!String::from_utf8_lossy(&rest).contains("$1\r\n3"));
    eventually("the subscriber to be closed", || {
        cmd(&mut admin, &["PUBLISH", "news.a", "3"]) == ":0"
    });
}

#[test]
fn acl_files_move_between_embedis_and_redis() {
    let dir = tempdir();
    let ours = dir.join("ours.acl");
    std::fs::write(&ours, "").unwrap();
    let server = support::builder()
        .config("aclfile", ours.to_str().unwrap())
        .unwrap()
        .start()
        .unwrap();
    let mut conn = connect(server.addr());
    cmd(
        &mut conn,
        &[
            "ACL",
            "SETUSER",
            "app",
            "on",
            ">secret",
            "~app:*",
            "%R~cache:*",
            "&events",
            "-@all",
            "+@read",
            "+set",
            "(+hset ~h:*)",
        ],
    );
    cmd(
        &mut conn,
        &[
            "ACL",
            "SETUSER",
            "off-user",
            "off",
            "#2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
        ],
    );
    assert_eq!(cmd(&mut conn, &["ACL", "SAVE"]), "+OK");
    let our_list = cmd(&mut conn, &["ACL", "LIST"]);
    let Some(redis) = RedisServer::start("acl_files", &["--aclfile", ours.to_str().unwrap()])
    else {
        return;
    };
    let mut theirs = connect(redis.addr());
    assert_eq!(cmd(&mut theirs, &["ACL", "LIST"]), our_list);
    assert_eq!(cmd(&mut theirs, &["AUTH", "app", "secret"]), "+OK");
    // And back: redis-server's ACL SAVE, loaded by embedis.
    let mut theirs = connect(redis.addr());
    cmd(
        &mut theirs,
        &["ACL", "SETUSER", "extra", "on", "nopass", "+ping"],
    );
    assert_eq!(cmd(&mut theirs, &["ACL", "SAVE"]), "+OK");
    let their_list = cmd(&mut theirs, &["ACL", "LIST"]);
    assert_eq!(cmd(&mut conn, &["ACL", "LOAD"]), "+OK");
    let mut conn = connect(server.addr());
    assert_eq!(cmd(&mut conn, &["ACL", "LIST"]), their_list);
    // A broken file changes nothing and says why, in Redis's words.
    std::fs::write(&ours, "user a on +nosuch\nnot a user line\n").unwrap();
    let error = cmd(&mut conn, &["ACL", "LOAD"]);
    let redis_error = cmd(&mut theirs, &["ACL", "LOAD"]);
    assert_eq!(
        error.replace(ours.to_str().unwrap(), "F"),
        redis_error.replace(ours.to_str().unwrap(), "F")
    );
    assert_eq!(cmd(&mut conn, &["ACL", "LIST"]), their_list);
}

#[test]
fn users_declared_at_start_and_requirepass() {
    let server = support::builder()
        .user("locker", "on >secret ~lock:* +@all")
        .password("defaultpw")
        .start()
        .unwrap();
    let mut conn = connect(server.addr());
    assert!(cmd(&mut conn, &["GET", "x"]).starts_with("-NOAUTH"));
    assert_eq!(cmd(&mut conn, &["AUTH", "locker", "secret"]), "+OK");
    assert_eq!(
        cmd(&mut conn, &["SET", "lock:1", "t", "NX", "PX", "1000"]),
        "+OK"
    );
    assert!(cmd(&mut conn, &["SET", "other", "t"]).starts_with("-NOPERM"));
    let mut default = connect(server.addr());
    assert_eq!(cmd(&mut default, &["AUTH", "defaultpw"]), "+OK");
    // requirepass is the default user's password: changing it changes the user.
    cmd(&mut default, &["CONFIG", "SET", "requirepass", ""]);
    assert!(cmd(&mut default, &["ACL", "LIST"]).contains("user default on nopass"));
    let mut fresh = connect(server.addr());
    assert_eq!(cmd(&mut fresh, &["GET", "x"]), "$-1");
    // Rules that do not parse stop the server from starting, with Redis's error.
    let error = support::builder()
        .user("bad", "on +nosuch")
        .start()
        .err()
        .expect("refused");
    assert!(
        error
            .to_string()
            .contains("Unknown command or category name in ACL"),
        "{error}"
    );
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "embedis-acl-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// SLOWLOG shows ACL SETUSER with its name and rules redacted, as Redis does (found by Redis's
/// unit/slowlog, whose test was deferred until ACL users existed).
#[test]
fn slowlog_redacts_acl_setuser() {
    let server = server();
    let mut conn = connect(server.addr());
    cmd(
        &mut conn,
        &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
    );
    cmd(&mut conn, &["SLOWLOG", "RESET"]);
    assert_eq!(
        cmd(&mut conn, &["ACL", "SETUSER", "u", "on", ">secret"]),
        "+OK"
    );
    let log = cmd(&mut conn, &["SLOWLOG", "GET", "2"]);
    assert!(
        log.contains("$3\r\nACL\r\n$7\r\nSETUSER\r\n$10\r\n(redacted)\r\n$10\r\n(redacted)\r\n$10\r\n(redacted)\r\n"),
        "{log:?}"
    );
    assert!(!log.contains("secret"));
}
