//! `compat-version`: the Redis the server behaves as. Each version reports its release and has
//! exactly the commands that release has, less the ones embedis does not implement yet — asked
//! of the real servers where this machine has them (Redis 7.0.15, Redis 8.2.3): COMMAND LIST
//! compared name for name. A newer command answers Redis's unknown-command error, a newer
//! subcommand its unknown-subcommand error, a newer argument a syntax error.

use std::collections::BTreeSet;

use crate::support;
use support::{Client, RedisServer};

fn command_list(addr: std::net::SocketAddr) -> BTreeSet<String> {
    let raw = Client::connect(addr).raw(&["COMMAND", "LIST"]);
    let text = String::from_utf8_lossy(&raw).into_owned();
    // An array of bulk strings: every second line past the header is a name.
    text.lines()
        .skip(1)
        .filter(|line| !line.starts_with('$'))
        .map(str::to_lowercase)
        .collect()
}

/// One `name:value` field of an INFO reply.
fn field(info: &str, name: &str) -> String {
    info.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or_default()
        .to_string()
}

/// What embedis does not implement yet, by version (the unknown-command error answers for it).
const NOT_YET_7_0: &[&str] = &[];

#[test]
fn as_redis_7_0_the_commands_are_redis_7_0_s() {
    let Some(redis) = RedisServer::start("compat 7.0 commands", &[]) else {
        return;
    };
    let ours = support::builder().start().unwrap();
    let theirs = command_list(redis.addr());
    let mine = command_list(ours.addr());
    let extra: Vec<_> = mine.difference(&theirs).collect();
    assert!(
        extra.is_empty(),
        "commands Redis 7.0 does not have: {extra:?}"
    );
    let missing: Vec<_> = theirs.difference(&mine).map(String::as_str).collect();
    assert_eq!(missing, NOT_YET_7_0, "Redis 7.0's commands embedis lacks");
    let mut c = Client::connect(ours.addr());
    let mut r = Client::connect(redis.addr());
    for line in [
        vec!["HEXPIRE", "h", "10", "FIELDS", "1", "f"],
        vec!["CLIENT", "SETINFO", "LIB-NAME", "x"],
        vec!["WAITAOF", "0", "0", "0"],
        vec!["SET", "k", "v", "IFEQ", "v"],
        vec!["COMMAND", "COUNT"],
    ] {
        // Every top-level command of Redis 7.0 is ours too (SCRIPT DEBUG is a subcommand).
        let expected = r.raw(&line);
        assert_eq!(
            String::from_utf8_lossy(&c.raw(&line)),
            String::from_utf8_lossy(&expected),
            "{line:?}"
        );
    }
    assert_eq!(
        field(&c.text(&["INFO", "server"]), "redis_version"),
        "7.0.15"
    );
}

#[test]
fn as_redis_8_2_every_command_is_one_of_redis_8_2_s() {
    let Some(redis) = RedisServer::start_redis8("compat 8.2 commands", &[]) else {
        return;
    };
    let ours = support::builder_as("8.2").start().unwrap();
    let theirs = command_list(redis.addr());
    let mine = command_list(ours.addr());
    let extra: Vec<_> = mine.difference(&theirs).collect();
    assert!(
        extra.is_empty(),
        "commands Redis 8.2 does not have: {extra:?}"
    );
    assert!(mine.contains("hgetex") && mine.contains("client|setinfo"));
    let mut c = Client::connect(ours.addr());
    assert!(c
        .cmd(&["DIGEST", "k"])
        .starts_with("-ERR unknown command 'DIGEST'"));
    assert_eq!(
        c.cmd(&["SET", "k", "v", "IFEQ", "v"]),
        "-ERR syntax error\r\n"
    );
    let info = c.text(&["INFO", "server"]);
    assert_eq!(field(&info, "redis_version"), "8.2.3");
    let hello = c.raw(&["HELLO", "2"]);
    assert!(String::from_utf8_lossy(&hello).contains("$5\r\n8.2.3\r\n"));
}

#[test]
fn each_version_reports_its_release_and_the_setting_is_fixed_at_start() {
    for (version, release) in [
        ("7.0", "7.0.15"),
        ("7.2", "7.2.6"),
        ("7.4", "7.4.1"),
        ("8.2", "8.2.3"),
        ("8.4", "8.4.0"),
    ] {
        let server = support::builder_as(version).start().unwrap();
        let mut c = Client::connect(server.addr());
        let info = c.text(&["INFO", "server"]);
        assert_eq!(field(&info, "redis_version"), release);
        assert_eq!(
            c.cmd(&["CONFIG", "GET", "compat-version"]),
            format!("*2\r\n$14\r\ncompat-version\r\n$3\r\n{version}\r\n")
        );
        assert!(c.text(&["LOLWUT"]).contains(release));
        let newest = version == "8.4";
        assert_eq!(
            c.cmd(&["DIGEST", "nokey"]) == "$-1\r\n",
            newest,
            "{version}"
        );
    }
    let server = support::builder().start().unwrap();
    let mut c = Client::connect(server.addr());
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "compat-version", "8.2"]),
        "-ERR CONFIG SET failed (possibly related to argument 'compat-version') - can't set immutable config\r\n"
    );
    let listed = c.cmd(&["CONFIG", "GET", "*"]);
    assert!(
        !listed.contains("compat-version"),
        "Redis's parameters only"
    );
    let refused = embedis::Server::builder().config("compat-version", "6.2");
    assert!(refused.is_err());
}

/// A parameter a later Redis added exists only from that version: under 7.0 it is unknown to
/// CONFIG GET (by name and by pattern), CONFIG SET and the config file, as in Redis 7.0.15.
#[test]
fn newer_parameters_exist_only_in_their_versions() {
    let old = support::builder().start().unwrap();
    let mut c = Client::connect(old.addr());
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "set-max-listpack-entries"]),
        "*0\r\n"
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "set-max-*"]),
        "*2\r\n$22\r\nset-max-intset-entries\r\n$3\r\n512\r\n"
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "set-max-listpack-value", "10"]),
        "-ERR Unknown option or number of arguments for CONFIG SET - 'set-max-listpack-value'\r\n"
    );
    assert!(support::builder()
        .config("set-max-listpack-entries", "3")
        .is_err());
    // The default is 7.4, which has it.
    assert!(embedis::Server::builder()
        .config("set-max-listpack-entries", "3")
        .is_ok());
    let new = support::builder_as("7.2").start().unwrap();
    let mut c = Client::connect(new.addr());
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "set-max-listpack-entries", "3"]),
        "+OK\r\n"
    );
    // A config text may name the version after the parameter: the version is read first.
    let mut config = embedis_core::base::config::Config::default();
    config
        .load_text("set-max-listpack-entries 7\ncompat-version 7.4\n")
        .unwrap();
    assert_eq!(config.encodings.set_max_listpack_entries, 7);
    assert!(embedis_core::base::config::Config::default()
        .load_text("compat-version 7.0\nset-max-listpack-entries 7\n")
        .is_err());
}

/// Listpack sets are Redis 7.2's: as 7.0 a small set of strings is a hashtable (byte-exact
/// comparisons of both are in tests/diff/sets.txt and tests/diff74/sets.txt).
#[test]
fn small_sets_of_strings_are_listpacks_from_7_2() {
    for (version, encoding) in [
        ("7.0", "hashtable"),
        ("7.2", "listpack"),
        ("8.2", "listpack"),
    ] {
        let server = support::builder_as(version).start().unwrap();
        let mut c = Client::connect(server.addr());
        c.cmd(&["SADD", "s", "b", "a", "1"]);
        assert_eq!(
            c.cmd(&["OBJECT", "ENCODING", "s"]),
            format!("${}\r\n{encoding}\r\n", encoding.len()),
            "{version}"
        );
    }
}

#[test]
fn client_no_touch_leaves_access_clocks_alone_but_for_touch() {
    let server = support::builder_as("7.2")
        .clock(embedis::Clock::manual())
        .start()
        .unwrap();
    let (mut plain, mut quiet) = (
        Client::connect(server.addr()),
        Client::connect(server.addr()),
    );
    let idle = |c: &mut Client| c.cmd(&["OBJECT", "IDLETIME", "k"]);
    plain.cmd(&["SET", "k", "v"]);
    assert_eq!(quiet.cmd(&["CLIENT", "NO-TOUCH", "on"]), "+OK\r\n");
    assert!(quiet.text(&["CLIENT", "INFO"]).contains(" flags=T "));
    server.clock().advance(std::time::Duration::from_secs(10));
    assert_eq!(quiet.cmd(&["GET", "k"]), "$1\r\nv\r\n");
    assert_eq!(quiet.cmd(&["APPEND", "k", "w"]), ":2\r\n");
    assert_eq!(
        idle(&mut plain),
        ":10\r\n",
        "reads and writes of a no-touch client"
    );
    assert_eq!(quiet.cmd(&["TOUCH", "k"]), ":1\r\n");
    assert_eq!(idle(&mut plain), ":0\r\n", "TOUCH still touches");
    server.clock().advance(std::time::Duration::from_secs(3));
    plain.cmd(&["GET", "k"]);
    assert_eq!(idle(&mut plain), ":0\r\n", "other clients touch as ever");
    quiet.cmd(&["CLIENT", "NO-TOUCH", "off"]);
    assert!(!quiet.text(&["CLIENT", "INFO"]).contains(" flags=T "));
    let as_7_0 = support::builder().start().unwrap();
    let reply = Client::connect(as_7_0.addr()).cmd(&["CLIENT", "NO-TOUCH", "on"]);
    assert!(
        reply.starts_with("-ERR unknown subcommand 'NO-TOUCH'"),
        "{reply}"
    );
}

/// What Redis 7.4.1's suite found and tests/diff74 compares byte for byte (skipped where no Redis
/// 7.4.1 can be built, CI among them), asserted here with the replies Redis 7.4.1 gave, so that
/// CI guards them: listpack lists and their conversions, LPOS RANK of LLONG_MIN, a blocking
/// timeout out of range, HSCAN NOVALUES. As 7.0 each answers as before.
#[test]
fn lists_ranks_timeouts_and_novalues_as_7_4() {
    let server = support::builder_as("7.4").start().unwrap();
    let mut c = Client::connect(server.addr());
    let encoding = |c: &mut Client, key: &str| c.cmd(&["OBJECT", "ENCODING", key]);
    c.cmd(&["CONFIG", "SET", "list-max-listpack-size", "3"]);
    c.cmd(&["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(encoding(&mut c, "l"), "$8\r\nlistpack\r\n");
    c.cmd(&["RPUSH", "l", "d"]);
    assert_eq!(encoding(&mut c, "l"), "$9\r\nquicklist\r\n");
    c.cmd(&["RPOP", "l", "2"]);
    assert_eq!(
        encoding(&mut c, "l"),
        "$9\r\nquicklist\r\n",
        "not under half yet"
    );
    c.cmd(&["RPOP", "l"]);
    assert_eq!(encoding(&mut c, "l"), "$8\r\nlistpack\r\n");
    c.cmd(&["RPUSH", "f", "a", "b", "c"]);
    c.cmd(&["LSET", "f", "0", "q"]);
    assert_eq!(encoding(&mut c, "f"), "$9\r\nquicklist\r\n");
    let out_of_range = "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n";
    assert_eq!(
        c.cmd(&["LPOS", "f", "q", "RANK", "-9223372036854775808"]),
        out_of_range
    );
    assert_eq!(
        c.cmd(&["BLPOP", "empty", "0x7FFFFFFFFFFFFF"]),
        "-ERR timeout is out of range\r\n"
    );
    c.cmd(&["HSET", "h", "a", "1"]);
    assert_eq!(
        c.cmd(&["HSCAN", "h", "0", "NOVALUES"]),
        "*2\r\n$1\r\n0\r\n*1\r\n$1\r\na\r\n"
    );
    c.cmd(&["ZADD", "z", "1", "m"]);
    assert_eq!(
        c.cmd(&["ZSCAN", "z", "0", "NOVALUES"]),
        "-ERR NOVALUES option can only be used in HSCAN\r\n"
    );

    let old = support::builder().start().unwrap();
    let mut c = Client::connect(old.addr());
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(encoding(&mut c, "l"), "$9\r\nquicklist\r\n");
    assert_eq!(
        c.cmd(&["LPOS", "l", "a", "RANK", "-9223372036854775808"]),
        ":0\r\n"
    );
    assert_eq!(
        c.cmd(&["BLPOP", "empty", "0x7FFFFFFFFFFFFF"]),
        "-ERR timeout is negative\r\n"
    );
    c.cmd(&["HSET", "h", "a", "1"]);
    assert_eq!(
        c.cmd(&["HSCAN", "h", "0", "NOVALUES"]),
        "-ERR syntax error\r\n"
    );
}
