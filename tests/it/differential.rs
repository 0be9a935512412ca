//! Differential tests: every fixture in tests/diff/ is a sequence of commands, one per line; each
//! command is sent to a real redis-server and to embedis, and the replies must be the same bytes.
//!
//! Fixture lines use redis-cli's quoting (`"a b"`, `"\x00\r\n"`, `''`). A line may start with a
//! directive:
//!
//! - `@sort CMD …`  compare after sorting the reply's top-level elements (KEYS, SMEMBERS, maps
//!   whose order Redis leaves to its hash table);
//! - `@type CMD …`  compare only the kind of reply (`:` `$` `*` `+` `-` …): values that differ by
//!   nature (TIME, client ids, PTTL a millisecond apart);
//! - `@ids CMD …`   compare after replacing, in each server's reply, every integer frame that
//!   is a `@let` value of that server (below) by `:{NAME}` (CLIENT GETREDIR, CLIENT
//!   TRACKINGINFO's redirect, a `tracking-redir-broken` push: client ids, which differ);
//! - `@run CMD …`   send to both, compare nothing (set-up whose reply varies);
//! - `@info FIELD …` compare the values of these fields of `INFO everything` (counters such as
//!   `tracking_total_keys` or `blocked_clients`, in a reply whose other fields differ);
//! - `@events CMD …` compare everything the connection receives up to the reply of an `ECHO`
//!   sent after CMD: the pushes CMD causes (keyspace notifications to a subscribed RESP3
//!   connection) and its reply, in the order they arrive;
//! - `@reconnect`   open fresh connections (after QUIT, or to reset connection state); the named
//!   connections are closed too;
//! - `@read`        send nothing, read and compare one more frame (a push that followed a reply,
//!   such as a client-tracking invalidation, or the pending reply of `@send`/`@block`); a
//!   connection the server closed reads as `(closed)`, which must match too. `@sort @read`,
//!   `@type @read` and `@ids @read` compare the frame as those directives do;
//! - `@sleep MS`    wait MS milliseconds of real time (both servers run on the real clock): a
//!   deadline a few milliseconds away passes, for lazy expiry with active expiry switched off.
//!
//! Several connections, as Redis's own tests use deferring clients: a line that starts with
//! `@NAME ` (a lowercase word, letters, digits and `_`, that is not one of the directives) runs
//! the rest of the line — a command or any directive but `@reconnect` and `@sleep` — on the
//! connection NAME, opened on both servers at its first use; lines without it use the fixture's
//! default connection. For the commands that leave a client waiting:
//!
//! - `@send CMD …`  send and read nothing yet (the reply is read later with `@read`);
//! - `@block CMD …` send, read nothing, and wait until each server counts one more blocked client
//!   (INFO's `blocked_clients`, asked over a probe connection of the fixture's own): a blocking
//!   command parked, or a command held by CLIENT PAUSE WRITE. The next line runs only then, so
//!   the order in which clients block is the order they wait in;
//! - `@quiet`       nothing may arrive on the connection for 150 ms, on either server (a waiter
//!   not served, a subscriber that gets no message);
//! - `@close`      close the connection on both servers, and wait until each counts one client
//!   less (a subscriber that went away, a client whose WATCH or blocked command goes with it);
//!   a later line naming it opens a new one;
//! - `@let NAME CMD …` compare the kind of reply, and remember each server's own value (an
//!   integer or a string) as `{NAME}`: later lines have `{NAME}` replaced by that server's value
//!   before they are sent (client ids for CLIENT KILL ID, CLIENT UNBLOCK, TRACKING REDIRECT).
//!
//! ```text
//! @b @block BLPOP q 0
//! @c @block BLPOP q 0
//! LPUSH q x y
//! @b @read
//! @c @read
//! @a @let bid CLIENT ID
//! ```
//!
//! `#` starts a comment line. DIFF_ONLY=<name> runs only matching fixtures; DIFF_TRACE=1 prints
//! each line as it is sent. Each fixture starts on fresh connections after FLUSHALL.
//! Needs redis-server: skipped loudly when it is missing, unless EMBEDIS_REQUIRE_REDIS=1.
//!
//! The fixtures in tests/diff8/ cover commands Redis added after 7.0 (hash field expiration, in
//! 7.4 and 8.0): they run against a Redis 8.2 server, `$EMBEDIS_REDIS8_SERVER` (`.ci/run` installs
//! one), skipped loudly when it is not set, unless EMBEDIS_REQUIRE_REDIS=1. Everything else in
//! embedis, INFO's version included, stays 7.0, so those fixtures stick to the new commands and
//! what they touch.
//!
//! The fixtures in tests/diff74/ cover what Redis 7.2 and 7.4 changed (listpack sets…): embedis
//! runs as `--compat-version 7.4` against Redis 7.4.1, `$EMBEDIS_REDIS74_SERVER` (`.ci/run`
//! builds one from its tag).

use crate::support;

use embedis_protocol::{Value, Version, Writer};
use std::collections::BTreeMap;
use std::path::Path;
use support::{show, Conn, Received, RedisServer};

/// One connection to each server, used in step: a fixture's default connection or a named one.
struct Pair {
    redis: Conn,
    ours: Conn,
}

/// Where the two servers are reached: their plain ports, or both TLS ports with one client
/// configuration (`fixtures_match_redis_over_tls`).
struct Servers {
    redis: std::net::SocketAddr,
    ours: std::net::SocketAddr,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

impl Servers {
    fn plain(redis: &RedisServer, ours: &embedis::Server) -> Servers {
        Servers {
            redis: redis.addr(),
            ours: ours.addr(),
            tls: None,
        }
    }
}

impl Pair {
    fn connect(servers: &Servers) -> Pair {
        let connect = |addr| match &servers.tls {
            None => Conn::connect(addr).unwrap(),
            Some(config) => Conn::connect_tls(addr, config.clone()).unwrap(),
        };
        Pair {
            redis: connect(servers.redis),
            ours: connect(servers.ours),
        }
    }

    /// Waits until each server sees only this pair's connection.
    fn wait_alone(&mut self) {
        // The connections just dropped are forgotten by each server in its own time (with
        // io-threads 2, after the new connection's first commands may already have run): wait
        // until each sees only the new one, so that their subscriptions and the like are gone.
        for conn in [&mut self.redis, &mut self.ours] {
            for _ in 0..400 {
                let list = conn.command(&["CLIENT", "LIST"]);
                if list.windows(6).filter(|w| w == b" addr=").count() <= 1 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    }
}

/// A fixture's connections: the default one, the named ones (`@a …`) opened at their first
/// use, the probe that `@block` asks INFO over, and what `@let` remembered from each server.
struct Session<'s> {
    servers: &'s Servers,
    default: Pair,
    named: BTreeMap<String, Pair>,
    probe: Option<Pair>,
    /// `@let` names: (redis's value, embedis's value).
    vars: BTreeMap<String, (String, String)>,
}

impl<'s> Session<'s> {
    fn open(servers: &'s Servers) -> Session<'s> {
        let mut default = Pair::connect(servers);
        // The previous fixture's connections may still be closing (its subscriptions counted by
        // PUBSUB NUMPAT, with io-threads 2 under load): start once each server sees only this
        // pair.
        default.wait_alone();
        Session {
            servers,
            default,
            named: BTreeMap::new(),
            probe: None,
            vars: BTreeMap::new(),
        }
    }

    /// `@reconnect`: every connection closed, a new default one once each server has let the
    /// old ones go.
    fn reopen(&mut self) {
        self.named.clear();
        self.probe = None;
        self.vars.clear();
        self.default = Pair::connect(self.servers);
        self.default.wait_alone();
    }

    /// The connection pair a line runs on: the default one, or `name`'s (opened now if new).
    fn pair(&mut self, name: Option<&str>) -> &mut Pair {
        match name {
            None => &mut self.default,
            Some(name) => self
                .named
                .entry(name.to_string())
                .or_insert_with(|| Pair::connect(self.servers)),
        }
    }

    /// Closes the named connection on both servers and waits until each counts one client
    /// less (INFO's `connected_clients`, over the probe): what it held — subscriptions, a
    /// WATCH, a blocked command — is gone before the next line.
    fn close(&mut self, name: &str) {
        let servers = self.servers;
        let probe = self.probe.get_or_insert_with(|| Pair::connect(servers));
        let before = (connected(&mut probe.redis), connected(&mut probe.ours));
        drop(self.named.remove(name));
        let probe = self.probe.as_mut().unwrap();
        support::eventually("the closed connection to go", || {
            connected(&mut probe.redis) < before.0 && connected(&mut probe.ours) < before.1
        });
    }

    /// The command text as sent to each server: `{name}` replaced by what `@let name` read
    /// from that server.
    fn substitute(&self, command: &str) -> (String, String) {
        let (mut redis, mut ours) = (command.to_string(), command.to_string());
        for (name, (r, o)) in &self.vars {
            let pattern = format!("{{{name}}}");
            redis = redis.replace(&pattern, r);
            ours = ours.replace(&pattern, o);
        }
        (redis, ours)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    Bytes,
    Sorted,
    Type,
    Nothing,
    Events,
    /// `@send`: sent, nothing read.
    Send,
    /// `@block`: sent, nothing read, and each server counts one more blocked client.
    Block,
    /// `@let NAME`: the reply's type compared, its value remembered for `{NAME}`.
    Let,
    /// `@ids`: compared with each `@let` value in an integer frame read as its `{NAME}`.
    Ids,
}

/// The words after `@` that are directives; any other word after `@` names a connection.
const DIRECTIVES: &[&str] = &[
    "sort",
    "type",
    "run",
    "events",
    "reconnect",
    "read",
    "sleep",
    "send",
    "block",
    "quiet",
    "let",
    "close",
    "ids",
    "info",
];

/// How long `@quiet` watches for a frame that must not come.
const QUIET: std::time::Duration = std::time::Duration::from_millis(150);

/// What `@events` sends after the command: its reply ends the frames the command caused.
const EVENTS_END: &[u8] = b"@events-end";

/// Reads frames until the reply to the `ECHO` that `@events` sent, returning them all (that
/// reply included), or None if the connection closed first.
fn read_through_echo(conn: &mut Conn) -> Option<Vec<u8>> {
    let mut all = Vec::new();
    loop {
        let (raw, value) = conn.read_reply()?;
        all.extend_from_slice(&raw);
        if matches!(&value, Value::Bulk(b) if b.as_ref() == EVENTS_END) {
            return Some(all);
        }
    }
}

/// INFO's `connected_clients`.
fn connected(probe: &mut Conn) -> usize {
    support::info_field(probe, "clients", "connected_clients")
        .expect("connected_clients in INFO")
        .parse()
        .unwrap()
}

/// A reply's value as the text `{NAME}` stands for: an integer's digits, a string's bytes.
fn value_text(value: &Value) -> String {
    match value {
        Value::Integer(n) => n.to_string(),
        Value::Simple(s) | Value::Bulk(s) => String::from_utf8_lossy(s).into_owned(),
        other => panic!("@let keeps integers and strings, not {other:?}"),
    }
}

/// Names the fixture line being run when a panic (a reply that never came) unwinds through it,
/// which the panic's own message, raised in the connection helper, cannot know.
struct AtLine<'a> {
    name: &'a str,
    line_no: usize,
}

impl Drop for AtLine<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("while running {}:{}", self.name, self.line_no);
        }
    }
}

/// Re-encodes a reply with its top-level elements (or map pairs) sorted.
fn sorted(value: &Value) -> Vec<u8> {
    fn enc(v: &Value) -> Vec<u8> {
        let mut buf = bytes::BytesMut::new();
        // Version only matters for down-conversion, which never happens for decoded values
        // of the same protocol: write them as RESP3 to keep their types.
        v.write_to(&mut Writer::new(&mut buf, Version::Resp3));
        buf.to_vec()
    }
    match value {
        Value::Array(items) | Value::Set(items) | Value::Push(items) => {
            let mut parts: Vec<Vec<u8>> = items.iter().map(enc).collect();
            parts.sort();
            parts.concat()
        }
        Value::Map(pairs) => {
            let mut parts: Vec<Vec<u8>> = pairs
                .iter()
                .map(|(k, v)| [enc(k), enc(v)].concat())
                .collect();
            parts.sort();
            parts.concat()
        }
        other => enc(other),
    }
}

/// Whether two replies are alike as `mode` compares them.
fn same_reply(
    mode: Compare,
    (expected_raw, expected_value): (&[u8], &Value),
    (got_raw, got_value): (&[u8], &Value),
    vars: &BTreeMap<String, (String, String)>,
) -> bool {
    match mode {
        Compare::Bytes => expected_raw == got_raw,
        Compare::Sorted => sorted(expected_value) == sorted(got_value),
        Compare::Type | Compare::Let => expected_raw.first() == got_raw.first(),
        Compare::Ids => {
            let named = |raw: &[u8], redis: bool| {
                let mut text = String::from_utf8_lossy(raw).into_owned();
                for (name, (r, o)) in vars {
                    let value = if redis { r } else { o };
                    text = text.replace(&format!(":{value}\r\n"), &format!(":{{{name}}}\r\n"));
                }
                text
            };
            named(expected_raw, true) == named(got_raw, false)
        }
        Compare::Nothing => true,
        Compare::Events | Compare::Send | Compare::Block => unreachable!("not a comparison"),
    }
}

/// The values of INFO's `fields` (names separated by spaces), asked with `INFO everything`.
fn info_fields(conn: &mut Conn, fields: &str) -> String {
    let info = support::text(conn, &["INFO", "everything"]);
    fields
        .split_whitespace()
        .map(|f| format!("{f}:{}", support::field(&info, f)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A frame, or the close, as a failure message shows it.
fn show_frame(frame: &Option<Vec<u8>>) -> String {
    frame.as_deref().map_or("(closed)".into(), show)
}

/// What a connection received by `deadline` (or within a few milliseconds, for what is already
/// there), as a failure message shows it; None if nothing.
fn heard(conn: &mut Conn, deadline: std::time::Instant) -> Option<String> {
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    match conn.read_within(left.max(std::time::Duration::from_millis(5))) {
        Received::Nothing => None,
        Received::Reply { raw, .. } => Some(show(&raw)),
        Received::Closed => Some("(closed)".into()),
    }
}

/// Encodes a command line (redis-cli quoting) as a RESP request.
fn request(command: &str, name: &str, line_no: usize) -> Vec<u8> {
    let args = embedis_protocol::inline::split_args(command.as_bytes())
        .unwrap_or_else(|_| panic!("{name}:{line_no}: unbalanced quotes"));
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    Conn::encode(&args)
}

/// Lines mentioning any of `type_only` are compared by reply type only (settings that differ by
/// design between the two servers under test).
fn run_fixture(path: &Path, servers: &Servers, type_only: &[&str]) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let mut failures = Vec::new();
    let mut session = Session::open(servers);
    session.default.redis.command(&["FLUSHALL"]);
    session.default.ours.command(&["FLUSHALL"]);
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let _at = AtLine {
            name: &name,
            line_no,
        };
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        // `@NAME rest`: the rest runs on the named connection.
        let (connection, trimmed) = match trimmed.strip_prefix('@').and_then(|r| r.split_once(' '))
        {
            Some((word, rest)) if !DIRECTIVES.contains(&word) => {
                assert!(
                    word.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                    "{name}:{line_no}: a connection name is lowercase letters, digits and _"
                );
                (Some(word), rest.trim())
            }
            _ => (None, trimmed),
        };
        let at = connection.map_or(String::new(), |c| format!("@{c} "));
        if trimmed == "@reconnect" {
            assert!(
                connection.is_none(),
                "{name}:{line_no}: @reconnect is for all"
            );
            session.reopen();
            continue;
        }
        if let Some(ms) = trimmed.strip_prefix("@sleep ") {
            let ms: u64 = ms.trim().parse().expect("@sleep takes milliseconds");
            std::thread::sleep(std::time::Duration::from_millis(ms));
            continue;
        }
        if trimmed == "@close" {
            let connection = connection
                .unwrap_or_else(|| panic!("{name}:{line_no}: @close is for a named connection"));
            session.close(connection);
            continue;
        }
        if trimmed == "@quiet" {
            let pair = session.pair(connection);
            // Both servers watched over the same QUIET.
            let deadline = std::time::Instant::now() + QUIET;
            let (expected, got) = (
                heard(&mut pair.redis, deadline),
                heard(&mut pair.ours, deadline),
            );
            if expected.is_some() || got.is_some() {
                let nothing = || "(nothing)".to_string();
                failures.push(format!(
                    "{name}:{line_no}: {at}@quiet\n    redis:   {}\n    embedis: {}",
                    expected.unwrap_or_else(nothing),
                    got.unwrap_or_else(nothing)
                ));
            }
            continue;
        }
        if let Some(fields) = trimmed.strip_prefix("@info ") {
            let pair = session.pair(connection);
            let (expected, got) = (
                info_fields(&mut pair.redis, fields),
                info_fields(&mut pair.ours, fields),
            );
            if expected != got {
                failures.push(format!(
                    "{name}:{line_no}: {at}@info {fields}\n    redis:   {expected}\n    embedis: {got}"
                ));
            }
            continue;
        }
        let (mode, command) = match trimmed.split_once(' ') {
            Some(("@sort", rest)) => (Compare::Sorted, rest),
            Some(("@type", rest)) => (Compare::Type, rest),
            Some(("@ids", rest)) => (Compare::Ids, rest),
            Some(("@run", rest)) => (Compare::Nothing, rest),
            Some(("@events", rest)) => (Compare::Events, rest),
            Some(("@send", rest)) => (Compare::Send, rest),
            Some(("@block", rest)) => (Compare::Block, rest),
            Some(("@let", rest)) => (Compare::Let, rest),
            _ => (Compare::Bytes, trimmed),
        };
        if command == "@read" {
            // One more frame, compared as the mode says (`@read`, `@type @read`, `@ids @read`…).
            assert!(
                matches!(
                    mode,
                    Compare::Bytes | Compare::Sorted | Compare::Type | Compare::Ids
                ),
                "{name}:{line_no}: @read takes @sort, @type or @ids only"
            );
            let pair = session.pair(connection);
            let expected = pair.redis.read_reply();
            let got = pair.ours.read_reply();
            let same = match (&expected, &got) {
                (Some((er, ev)), Some((gr, gv))) => {
                    same_reply(mode, (er, ev), (gr, gv), &session.vars)
                }
                (None, None) => true,
                _ => false,
            };
            if !same {
                let raw = |r: &Option<(Vec<u8>, Value)>| r.as_ref().map(|(raw, _)| raw.clone());
                failures.push(format!(
                    "{name}:{line_no}: {at}{trimmed}\n    redis:   {}\n    embedis: {}",
                    show_frame(&raw(&expected)),
                    show_frame(&raw(&got))
                ));
            }
            continue;
        }
        let (variable, command) = if mode == Compare::Let {
            let (variable, command) = command
                .split_once(' ')
                .unwrap_or_else(|| panic!("{name}:{line_no}: @let NAME COMMAND …"));
            (variable, command)
        } else {
            ("", command)
        };
        let comparable = matches!(mode, Compare::Bytes | Compare::Sorted | Compare::Events);
        let mode = if comparable && type_only.iter().any(|w| command.contains(w)) {
            Compare::Type
        } else {
            mode
        };
        if std::env::var_os("DIFF_TRACE").is_some() {
            eprintln!("{name}:{line_no}: {at}{command}");
        }
        let (for_redis, for_ours) = session.substitute(command);
        let (mut to_redis, mut to_ours) = (
            request(&for_redis, &name, line_no),
            request(&for_ours, &name, line_no),
        );
        if mode == Compare::Block {
            let probe = session.probe.get_or_insert_with(|| Pair::connect(servers));
            let before = (
                support::blocked_clients(&mut probe.redis),
                support::blocked_clients(&mut probe.ours),
            );
            let pair = session.pair(connection);
            pair.redis.send_raw(&to_redis);
            pair.ours.send_raw(&to_ours);
            let probe = session.probe.as_mut().unwrap();
            support::wait_blocked(&mut probe.redis, before.0 + 1);
            support::wait_blocked(&mut probe.ours, before.1 + 1);
            continue;
        }
        let pair = session.pair(connection);
        if mode == Compare::Send {
            pair.redis.send_raw(&to_redis);
            pair.ours.send_raw(&to_ours);
            continue;
        }
        if mode == Compare::Events {
            let echo = Conn::encode(&[b"ECHO", EVENTS_END]);
            to_redis.extend_from_slice(&echo);
            to_ours.extend_from_slice(&echo);
            pair.redis.send_raw(&to_redis);
            pair.ours.send_raw(&to_ours);
            let (expected, got) = (
                read_through_echo(&mut pair.redis),
                read_through_echo(&mut pair.ours),
            );
            if expected != got {
                failures.push(format!(
                    "{name}:{line_no}: {at}{command}\n    redis:   {}\n    embedis: {}",
                    show(&expected.unwrap_or_default()),
                    show(&got.unwrap_or_default())
                ));
            }
            continue;
        }
        pair.redis.send_raw(&to_redis);
        pair.ours.send_raw(&to_ours);
        let expected = pair.redis.read_reply();
        let got = pair.ours.read_reply();
        let (Some((expected_raw, expected_value)), Some((got_raw, got_value))) = (expected, got)
        else {
            // One or both closed the connection (QUIT): both must have.
            continue;
        };
        let same = same_reply(
            mode,
            (&expected_raw, &expected_value),
            (&got_raw, &got_value),
            &session.vars,
        );
        if !same {
            failures.push(format!(
                "{name}:{line_no}: {at}{command}\n    redis:   {}\n    embedis: {}",
                show(&expected_raw),
                show(&got_raw)
            ));
        } else if mode == Compare::Let {
            session.vars.insert(
                variable.to_string(),
                (value_text(&expected_value), value_text(&got_value)),
            );
        }
    }
    failures
}

/// Runs every fixture (or those named by DIFF_ONLY) against `redis` and `ours`.
fn compare_all(redis: &RedisServer, ours: &embedis::Server, label: &str, type_only: &[&str]) {
    compare_folder("tests/diff", &Servers::plain(redis, ours), label, type_only);
}

/// Runs every fixture of `folder` (relative to the crate; or those named by DIFF_ONLY).
fn compare_folder(folder: &str, servers: &Servers, label: &str, type_only: &[&str]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    let mut fixtures: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    fixtures.sort();
    let only = std::env::var("DIFF_ONLY").ok();
    let mut failures = Vec::new();
    let mut commands = 0;
    for fixture in &fixtures {
        if let Some(only) = &only {
            if !fixture.to_string_lossy().contains(only.as_str()) {
                continue;
            }
        }
        commands += std::fs::read_to_string(fixture)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim().starts_with('#'))
            .count();
        failures.extend(run_fixture(fixture, servers, type_only));
    }
    eprintln!(
        "differential ({label}, {folder}): {} fixtures, {commands} command lines, {} mismatches",
        fixtures.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} replies differ from Redis ({label}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---- The fixture format's own tests: two embedis servers in the places of redis-server and
// embedis, which differ where a test needs them to ----

/// Two embedis servers for the format's tests: the first allows DEBUG and runs at `hz 20`, and
/// its client ids run three ahead of the second's.
fn two_servers() -> (embedis::Server, embedis::Server) {
    let first = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("hz", "20")
        .unwrap()
        .start()
        .unwrap();
    let second = support::builder().start().unwrap();
    for _ in 0..3 {
        drop(support::connect(first.addr()));
    }
    (first, second)
}

/// Runs `fixture` (as the file `self.txt`) with `first` in redis-server's place and `second` in
/// embedis's; the failures.
fn run_text(fixture: &str, first: &embedis::Server, second: &embedis::Server) -> Vec<String> {
    let servers = Servers {
        redis: first.addr(),
        ours: second.addr(),
        tls: None,
    };
    let n = {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        N.fetch_add(1, Ordering::Relaxed)
    };
    let dir = support::temp_dir(&format!("differential-self-{n}"));
    let path = dir.join("self.txt");
    std::fs::write(&path, fixture).unwrap();
    let failures = run_fixture(&path, &servers, &[]);
    let _ = std::fs::remove_dir_all(&dir);
    failures
}

/// What both servers answer alike passes — a waiter served by another connection, `{NAME}`
/// replaced by each server's own id — and the one difference (DEBUG allowed on the first only)
/// is found at its line by `@quiet`.
#[test]
fn named_connections_find_what_differs_and_only_that() {
    let (first, second) = two_servers();
    let fixture = "\
@w @block BLPOP q 0
@w @quiet
RPUSH q a
@w @read
@w @let wid CLIENT ID
@w GET nothing
CLIENT KILL ID {wid}
@w @read
@s @send DEBUG SLEEP 0.5
@s @quiet
";
    let failures = run_text(fixture, &first, &second);
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert!(
        failures[0]
            .starts_with("self.txt:10: @s @quiet\n    redis:   (nothing)\n    embedis: -ERR"),
        "{}",
        failures[0]
    );
}

/// `@ids` reads each server's own `@let` value as its name; compared as bytes, the ids differ.
#[test]
fn ids_compare_client_ids_by_name() {
    let (first, second) = two_servers();
    let fixture = "\
@a @let aid CLIENT ID
@a @ids CLIENT ID
@b CLIENT TRACKING on REDIRECT {aid}
@b @ids CLIENT GETREDIR
@b CLIENT GETREDIR
";
    let failures = run_text(fixture, &first, &second);
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert!(
        failures[0].starts_with("self.txt:5: @b CLIENT GETREDIR\n"),
        "{failures:#?}"
    );
}

/// `@type @read` and `@sort @read` compare a pending frame as those directives do; a plain
/// `@read` compares its bytes.
#[test]
fn read_takes_the_comparison_directives() {
    let (first, second) = two_servers();
    let fixture = "\
@a @send CLIENT ID
@a @type @read
@a @send CLIENT ID
@a @read
SADD s a b c
@a @send SMEMBERS s
@a @sort @read
";
    let failures = run_text(fixture, &first, &second);
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert!(
        failures[0].starts_with("self.txt:4: @a @read\n"),
        "{failures:#?}"
    );
}

/// `@info` compares only the fields it names: the same count of clients, a different hz.
#[test]
fn info_compares_the_fields_it_names() {
    let (first, second) = two_servers();
    let fixture = "\
@info connected_clients blocked_clients
@info configured_hz
";
    let failures = run_text(fixture, &first, &second);
    assert_eq!(
        failures,
        ["self.txt:2: @info configured_hz\n    redis:   configured_hz:20\n    embedis: configured_hz:10"]
    );
}

/// `@close` returns once each server has let the connection go (its subscription no longer
/// counts, asked at once on a new connection), and `@reconnect` closes the named connections.
#[test]
fn close_and_reconnect_let_named_connections_go() {
    let (first, second) = two_servers();
    let servers = Servers {
        redis: first.addr(),
        ours: second.addr(),
        tls: None,
    };
    let numsub = |addr| support::cmd(&mut support::connect(addr), &["PUBSUB", "NUMSUB", "x"]);
    let subscribed = "*2\\r\\n$1\\r\\nx\\r\\n:1\\r\\n";
    let none = "*2\\r\\n$1\\r\\nx\\r\\n:0\\r\\n";
    let mut session = Session::open(&servers);
    for _ in 0..2 {
        let pair = session.pair(Some("a"));
        pair.redis.command(&["SUBSCRIBE", "x"]);
        pair.ours.command(&["SUBSCRIBE", "x"]);
        assert_eq!(numsub(first.addr()), subscribed);
        assert_eq!(numsub(second.addr()), subscribed);
        session.close("a");
        assert_eq!(numsub(first.addr()), none);
        assert_eq!(numsub(second.addr()), none);
    }
    let pair = session.pair(Some("b"));
    pair.redis.command(&["SUBSCRIBE", "x"]);
    pair.ours.command(&["SUBSCRIBE", "x"]);
    session.reopen();
    assert!(session.named.is_empty());
    support::eventually("the subscriber to go", || {
        numsub(first.addr()) == none && numsub(second.addr()) == none
    });
}

/// `{NAME}` stands for a `@let` value only: other braces (Lua tables, hash tags) stay.
#[test]
fn let_values_replace_their_names_only() {
    let (first, second) = two_servers();
    let servers = Servers {
        redis: first.addr(),
        ours: second.addr(),
        tls: None,
    };
    let mut session = Session::open(&servers);
    session.vars.insert("id".into(), ("12".into(), "7".into()));
    assert_eq!(
        session.substitute("EVAL \"return {1}\" 1 {tag}:k {id} {id}"),
        (
            "EVAL \"return {1}\" 1 {tag}:k 12 12".to_string(),
            "EVAL \"return {1}\" 1 {tag}:k 7 7".to_string()
        )
    );
}

/// Every line of every fixture is well formed — a known directive, a valid connection name,
/// balanced quotes, a number after `@sleep`, fields after `@info`, a name after `@let` — so
/// that a typo fails here, with or without redis-server.
#[test]
fn every_fixture_line_is_well_formed() {
    let mut problems = Vec::new();
    let mut lines = 0;
    for folder in ["tests/diff", "tests/diff8", "tests/diff74"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "txt") {
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            for (index, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                lines += 1;
                if let Err(problem) = check_line(line) {
                    problems.push(format!("{folder}/{name}:{}: {problem}: {line}", index + 1));
                }
            }
        }
    }
    assert!(lines > 1000, "only {lines} fixture lines found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What [`every_fixture_line_is_well_formed`] checks of one line.
fn check_line(line: &str) -> Result<(), String> {
    let mut rest = line;
    if let Some((word, after)) = rest.strip_prefix('@').and_then(|r| r.split_once(' ')) {
        if !DIRECTIVES.contains(&word) {
            if !word
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                return Err(format!(
                    "@{word} is neither a directive nor a connection name"
                ));
            }
            rest = after.trim();
            if rest == "@reconnect" || rest.starts_with("@sleep") {
                return Err("@reconnect and @sleep are for all connections".into());
            }
        }
    }
    for mode in ["@sort ", "@type ", "@ids "] {
        if let Some(after) = rest.strip_prefix(mode) {
            rest = after;
        }
    }
    let command = match rest.split_once(' ') {
        _ if ["@read", "@quiet", "@close", "@reconnect"].contains(&rest) => return Ok(()),
        Some(("@sleep", ms)) => {
            return ms
                .trim()
                .parse::<u64>()
                .map(drop)
                .map_err(|_| "@sleep takes milliseconds".into())
        }
        Some(("@info", fields)) if !fields.trim().is_empty() => return Ok(()),
        Some(("@let", after)) => match after.split_once(' ') {
            Some((name, command)) if !name.is_empty() => command,
            _ => return Err("@let NAME COMMAND …".into()),
        },
        Some((word, command)) if word.starts_with('@') => {
            if !DIRECTIVES.contains(&word.trim_start_matches('@')) {
                return Err(format!("unknown directive {word}"));
            }
            command
        }
        _ if rest.starts_with('@') => return Err(format!("unknown directive {rest}")),
        _ => rest,
    };
    embedis_protocol::inline::split_args(command.as_bytes())
        .map(drop)
        .map_err(|_| "unbalanced quotes".to_string())
}

/// A connection's name is lowercase letters, digits and `_`: anything else after `@` is a
/// mistake, not a connection.
#[test]
#[should_panic(expected = "a connection name is lowercase letters, digits and _")]
fn a_connection_name_in_capitals_is_refused() {
    let (first, second) = two_servers();
    run_text("@Main PING\n", &first, &second);
}

#[test]
fn fixtures_match_redis_byte_for_byte() {
    let Some(redis) = RedisServer::start("differential", &[]) else {
        return;
    };
    let ours = support::builder().start().unwrap();
    compare_all(&redis, &ours, "io-threads 1", &[]);
}

/// The same fixtures over TLS, with both servers on TLS ports serving the same test
/// certificates: the TLS connection's path (handshake, then the same connection code) must not
/// change a byte of any reply.
#[test]
fn fixtures_match_redis_over_tls() {
    let certs = std::sync::Arc::new(embedis::TestCerts::generate().unwrap());
    let path = |p: std::path::PathBuf| p.display().to_string();
    let tls_port = support::free_port();
    let redis_args = [
        "--tls-port".to_string(),
        tls_port.to_string(),
        "--tls-cert-file".into(),
        path(certs.server_cert_path()),
        "--tls-key-file".into(),
        path(certs.server_key_path()),
        "--tls-ca-cert-file".into(),
        path(certs.ca_cert_path()),
    ];
    let redis_args: Vec<&str> = redis_args.iter().map(String::as_str).collect();
    let Some(redis) = RedisServer::start("differential-tls", &redis_args) else {
        return;
    };
    let ours = support::builder().tls_certs(certs.clone()).start().unwrap();
    let servers = Servers {
        redis: std::net::SocketAddr::from(([127, 0, 0, 1], tls_port)),
        ours: ours.tls_addr().unwrap(),
        tls: Some(std::sync::Arc::new(certs.client_config())),
    };
    compare_folder("tests/diff", &servers, "TLS", &[]);
    // redis-server stops here, not before the comparison.
    drop(redis);
}

/// The same fixtures through the threaded I/O mode, whose request path differs.
#[test]
fn fixtures_match_redis_with_threaded_io() {
    let Some(redis) = RedisServer::start("differential-threaded", &[]) else {
        return;
    };
    let ours = support::builder()
        .config("io-threads", "2")
        .unwrap()
        .start()
        .unwrap();
    compare_all(&redis, &ours, "io-threads 2", &["io-threads"]);
}

/// The same fixtures with the clients' socket I/O through io_uring (`io-uring yes`).
#[test]
fn fixtures_match_redis_through_io_uring() {
    let Some(redis) = RedisServer::start("differential-uring", &[]) else {
        return;
    };
    let ours = support::builder()
        .config("io-uring", "yes")
        .unwrap()
        .start()
        .unwrap();
    support::assert_io_uring(&mut support::connect(ours.addr()));
    compare_all(&redis, &ours, "io-uring", &[]);
}

/// Both servers of the Redis 8.2 comparison accept DEBUG: the fixtures switch active expiry
/// off to watch lazy field expiry (DEBUG SET-ACTIVE-EXPIRE 0).
const REDIS8_ARGS: &[&str] = &["--enable-debug-command", "yes"];

/// The fixtures of commands newer than Redis 7.0 (tests/diff8/), against Redis 8.2.
#[test]
fn redis8_fixtures_match_redis_8_byte_for_byte() {
    let Some(redis) = RedisServer::start_redis8("differential-redis8", REDIS8_ARGS) else {
        return;
    };
    let ours = support::builder_as("8.2")
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    compare_folder(
        "tests/diff8",
        &Servers::plain(&redis, &ours),
        "redis 8.2",
        &[],
    );
}

/// The same, through the threaded I/O mode.
#[test]
fn redis8_fixtures_match_redis_8_with_threaded_io() {
    let Some(redis) = RedisServer::start_redis8("differential-redis8-threaded", REDIS8_ARGS) else {
        return;
    };
    let ours = support::builder_as("8.2")
        .config("enable-debug-command", "yes")
        .unwrap()
        .config("io-threads", "2")
        .unwrap()
        .start()
        .unwrap();
    compare_folder(
        "tests/diff8",
        &Servers::plain(&redis, &ours),
        "redis 8.2, io-threads 2",
        &[],
    );
}

/// The fixtures of what Redis 7.2 and 7.4 changed (tests/diff74/), against Redis 7.4.1 with
/// embedis as `--compat-version 7.4`.
#[test]
fn redis74_fixtures_match_redis_7_4_byte_for_byte() {
    let Some(redis) = RedisServer::start_redis74("differential-redis74", REDIS8_ARGS) else {
        return;
    };
    let ours = support::builder_as("7.4")
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    compare_folder(
        "tests/diff74",
        &Servers::plain(&redis, &ours),
        "redis 7.4",
        &[],
    );
}
