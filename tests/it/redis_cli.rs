//! The real `redis-cli` against embedis: one-shot commands and their output formats, database
//! selection, authentication options, `--pipe` mass insertion, `--scan`, and an interactive
//! session fed through stdin (which makes redis-cli fetch COMMAND DOCS at start-up and render
//! `help` from it).
//!
//! redis-cli is the client people reach for first, and it is particular: it sends HELLO for `-3`,
//! AUTH before anything else, a trailing ECHO to find the end of a `--pipe` stream, SCAN with its
//! own cursor loop, and COMMAND DOCS to build its hints. Wherever the output can be compared,
//! the same invocation runs against a real redis-server and the two outputs (stdout, stderr and
//! exit status) must be identical. Needs redis-cli (and redis-server for the comparisons):
//! skipped loudly without them, unless EMBEDIS_REQUIRE_REDIS=1.
//!
//! `--eval` is not tested: embedis has no scripting yet.

use crate::support;

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;
use support::{find_binary, show, Conn, RedisServer};

/// What one redis-cli run printed.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    code: Option<i32>,
}

impl Run {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Runs redis-cli with `args` (where `{port}` stands for the server's port), feeding `stdin`.
fn cli(binary: &str, port: u16, args: &[&str], stdin: &[u8]) -> Run {
    let port = port.to_string();
    let args: Vec<String> = args.iter().map(|a| a.replace("{port}", &port)).collect();
    let mut child = Command::new(binary)
        .arg("-p")
        .arg(&port)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn redis-cli");
    // Written from another thread: redis-cli may print a lot before it has read all of stdin.
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let output = child.wait_with_output().expect("redis-cli runs");
    writer.join().unwrap();
    Run {
        stdout: output.stdout,
        stderr: output.stderr,
        code: output.status.code(),
    }
}

/// An embedis and a redis-server, both fresh, and the redis-cli binary.
struct Servers {
    cli: String,
    embedis: embedis::Server,
    redis: RedisServer,
}

impl Servers {
    /// None (after a loud message) when redis-cli or redis-server is missing.
    fn start(test: &str, password: Option<&str>) -> Option<Servers> {
        Self::start_as(test, password, "7.0")
    }

    /// [`Servers::start`] with embedis behaving as Redis `version`.
    fn start_as(test: &str, password: Option<&str>, version: &str) -> Option<Servers> {
        let cli = find_binary("redis-cli", test)?;
        let extra: Vec<&str> = password.map_or(vec![], |p| vec!["--requirepass", p]);
        let redis = RedisServer::start(test, &extra)?;
        let mut builder = support::builder_as(version);
        if let Some(password) = password {
            builder = builder.password(password);
        }
        let embedis = builder.start().unwrap();
        Some(Servers {
            cli,
            embedis,
            redis,
        })
    }

    /// Runs the same invocation against both servers and asserts identical output; returns
    /// embedis's.
    #[track_caller]
    fn same(&self, args: &[&str], stdin: &[u8]) -> Run {
        let expected = cli(&self.cli, self.redis.port, args, stdin);
        let got = cli(&self.cli, self.embedis.addr().port(), args, stdin);
        assert_eq!(
            got,
            expected,
            "redis-cli {args:?} printed differently\n--- redis-server stdout:\n{}\n--- embedis stdout:\n{}\n--- redis-server stderr:\n{}\n--- embedis stderr:\n{}",
            show(&expected.stdout),
            show(&got.stdout),
            show(&expected.stderr),
            show(&got.stderr)
        );
        got
    }
}

#[test]
fn one_shot_commands_print_what_redis_prints() {
    let Some(s) = Servers::start("redis_cli one-shot", None) else {
        return;
    };
    // Not a tty: raw output by default.
    assert_eq!(s.same(&["SET", "k", "v"], b"").stdout(), "OK\n");
    assert_eq!(s.same(&["GET", "k"], b"").stdout(), "v\n");
    assert_eq!(s.same(&["GET", "missing"], b"").stdout(), "\n");
    assert_eq!(
        s.same(&["--no-raw", "GET", "missing"], b"").stdout(),
        "(nil)\n"
    );
    assert_eq!(s.same(&["--no-raw", "GET", "k"], b"").stdout(), "\"v\"\n");
    assert_eq!(s.same(&["--raw", "GET", "k"], b"").stdout(), "v\n");
    s.same(&["--no-raw", "INCR", "n"], b"");
    s.same(&["INCRBYFLOAT", "n", "0.25"], b"");
    s.same(&["--no-raw", "MGET", "k", "missing", "n"], b"");
    s.same(&["--csv", "MGET", "k", "missing", "n"], b"");
    s.same(&["-r", "3", "INCR", "r"], b"");
    // A lease in database 5, deleted at once: INFO keyspace below lists only databases that
    // never held a TTL (avg_ttl is an estimate the expiry cycle updates in its own time).
    let lock = [
        "-n", "5", "--no-raw", "SET", "lock", "token", "NX", "PX", "30000",
    ];
    assert_eq!(s.same(&lock, b"").stdout(), "OK\n");
    let lock = [
        "-n", "5", "--no-raw", "SET", "lock", "other", "NX", "PX", "30000",
    ];
    assert_eq!(s.same(&lock, b"").stdout(), "(nil)\n");
    s.same(&["-n", "5", "TTL", "lock"], b"");
    s.same(&["-n", "5", "DEL", "lock"], b"");
    // Binary values: -x reads the last argument from stdin; --no-raw escapes it.
    s.same(&["-x", "SET", "bin"], b"a\x00b\r\nc");
    assert_eq!(
        s.same(&["--no-raw", "GET", "bin"], b"").stdout(),
        "\"a\\x00b\\r\\nc\"\n"
    );
    s.same(&["--quoted-input", "SET", "\"q\\x00k\"", "\"\\r\\n\""], b"");
    s.same(&["--no-raw", "--quoted-input", "GET", "\"q\\x00k\""], b"");
    s.same(&["STRLEN", "bin"], b"");
    s.same(&["--no-raw", "SETBIT", "bits", "7", "1"], b"");
    s.same(&["--no-raw", "GET", "bits"], b"");
    // Errors: printed on stdout; exit status 1 only with -e.
    let unknown = s.same(&["NOSUCH", "a"], b"");
    assert_eq!(
        unknown.stdout(),
        "ERR unknown command 'NOSUCH', with args beginning with: 'a' \n\n"
    );
    assert_eq!(unknown.code, Some(0));
    assert_eq!(s.same(&["-e", "NOSUCH", "a"], b"").code, Some(1));
    s.same(&["--no-raw", "GET"], b"");
    s.same(&["--no-raw", "SET", "k", "v", "NX", "XX"], b"");
    s.same(&["--no-raw", "INCR", "k"], b"");
    s.same(&["-e", "--no-raw", "SELECT", "16"], b"");
    // Database selection with -n and with a URL.
    s.same(&["-n", "3", "SET", "k", "three"], b"");
    assert_eq!(s.same(&["-n", "3", "GET", "k"], b"").stdout(), "three\n");
    assert_eq!(s.same(&["GET", "k"], b"").stdout(), "v\n");
    s.same(&["-n", "3", "DBSIZE"], b"");
    s.same(&["-u", "redis://127.0.0.1:{port}/3", "GET", "k"], b"");
    s.same(&["-n", "16", "GET", "k"], b"");
    s.same(&["DBSIZE"], b"");
    // RESP3 (-3 sends HELLO 3 first) and the formats that show the difference.
    s.same(&["-3", "--no-raw", "GET", "missing"], b"");
    s.same(&["-3", "--no-raw", "CONFIG", "GET", "databases"], b"");
    s.same(&["-3", "CONFIG", "GET", "databases"], b"");
    s.same(&["-3", "--json", "CONFIG", "GET", "databases"], b"");
    s.same(&["-2", "--json", "CONFIG", "GET", "databases"], b"");
    s.same(&["-3", "--no-raw", "INCRBYFLOAT", "n", "1e3"], b"");
    s.same(&["-3", "--no-raw", "COMMAND", "INFO", "get"], b"");
    s.same(&["-3", "--no-raw", "MGET", "k", "missing"], b"");
    s.same(&["-3", "--no-raw", "GETDEL", "missing"], b"");
    s.same(&["-3", "--no-raw", "INFO", "keyspace"], b"");
    s.same(&["INFO", "keyspace"], b"");
    s.same(&["--no-raw", "FLUSHALL"], b"");
    s.same(&["-n", "3", "DBSIZE"], b"");
}

#[test]
fn authentication_options_print_what_redis_prints() {
    let Some(s) = Servers::start("redis_cli auth", Some("s3cret")) else {
        return;
    };
    let noauth = s.same(&["PING"], b"");
    assert_eq!(noauth.stdout(), "NOAUTH Authentication required.\n\n");
    // Without --no-auth-warning, -a prints a warning on stderr.
    let warned = s.same(&["-a", "s3cret", "PING"], b"");
    assert_eq!(warned.stdout(), "PONG\n");
    assert!(!warned.stderr.is_empty());
    assert_eq!(
        s.same(&["-a", "s3cret", "--no-auth-warning", "SET", "k", "v"], b"")
            .stdout(),
        "OK\n"
    );
    let wrong = s.same(&["-a", "wrong", "--no-auth-warning", "GET", "k"], b"");
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("AUTH failed: WRONGPASS"),
        "{wrong:?}"
    );
    s.same(
        &[
            "--user",
            "default",
            "--pass",
            "s3cret",
            "--no-auth-warning",
            "GET",
            "k",
        ],
        b"",
    );
    s.same(
        &[
            "--user",
            "nobody",
            "--pass",
            "s3cret",
            "--no-auth-warning",
            "GET",
            "k",
        ],
        b"",
    );
    s.same(
        &[
            "-u",
            "redis://default:s3cret@127.0.0.1:{port}/2",
            "--no-auth-warning",
            "SET",
            "k",
            "two",
        ],
        b"",
    );
    s.same(
        &["-a", "s3cret", "--no-auth-warning", "-n", "2", "GET", "k"],
        b"",
    );
    s.same(
        &[
            "-a",
            "s3cret",
            "--no-auth-warning",
            "-3",
            "--no-raw",
            "GET",
            "k",
        ],
        b"",
    );
    s.same(&["-3", "PING"], b"");
    // Interactive, authenticated by the AUTH command itself.
    s.same(
        &[],
        b"GET k\nAUTH wrong\nAUTH s3cret\nGET k\nAUTH default s3cret\n",
    );
}

/// `SET key:NNNNNN value:NNNNNN` for `0..n`, in RESP (what `--pipe` expects).
fn mass_insert_input(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 48);
    for i in 0..n {
        write!(
            out,
            "*3\r\n$3\r\nSET\r\n$10\r\nkey:{i:06}\r\n$12\r\nvalue:{i:06}\r\n"
        )
        .unwrap();
    }
    out
}

#[test]
fn pipe_mass_insertion_of_100000_commands() {
    let Some(binary) = find_binary("redis-cli", "redis_cli --pipe") else {
        return;
    };
    let server = support::builder().start().unwrap();
    let input = mass_insert_input(100_000);
    let started = Instant::now();
    let run = cli(&binary, server.addr().port(), &["--pipe"], &input);
    eprintln!("--pipe of 100,000 SETs: {:?}", started.elapsed());
    assert_eq!(
        run.stdout(),
        "All data transferred. Waiting for the last reply...\n\
         Last reply received from server.\n\
         errors: 0, replies: 100000\n",
        "stderr: {}",
        show(&run.stderr)
    );
    assert_eq!(run.code, Some(0));

    let mut c = Conn::connect(server.addr()).unwrap();
    assert_eq!(c.command(&["DBSIZE"]), b":100000\r\n");
    for i in [0, 1, 9_999, 54_321, 99_999] {
        let expected = format!("$12\r\nvalue:{i:06}\r\n");
        assert_eq!(
            c.command(&["GET", &format!("key:{i:06}")]),
            expected.as_bytes()
        );
    }
    assert_eq!(c.command(&["GET", "key:100000"]), b"$-1\r\n");
}

#[test]
fn pipe_with_errors_and_inline_commands_prints_what_redis_prints() {
    let Some(s) = Servers::start("redis_cli --pipe errors", None) else {
        return;
    };
    // RESP and inline commands mixed, three of them failing.
    let mut input = mass_insert_input(1000);
    input.extend_from_slice(b"INCR key:000001\r\nGET\r\nSET \"a b\" \"c d\"\r\nINCR counter\r\n");
    input.extend_from_slice(b"*2\r\n$4\r\nINCR\r\n$3\r\na b\r\nNOSUCH x\r\n");
    let run = s.same(&["--pipe"], &input);
    assert!(
        run.stdout().ends_with("errors: 4, replies: 1006\n"),
        "{}",
        run.stdout()
    );
    assert_eq!(run.code, Some(1));
    s.same(&["DBSIZE"], b"");
    s.same(&["GET", "a b"], b"");
}

#[test]
fn scan_lists_every_key_and_honours_the_pattern() {
    let Some(s) = Servers::start("redis_cli --scan", None) else {
        return;
    };
    let input = mass_insert_input(1000);
    s.same(&["--pipe"], &input);
    s.same(&["SET", "other", "x"], b"");

    let lines =
        |run: &Run| -> BTreeSet<String> { run.stdout().lines().map(String::from).collect() };
    let port = s.embedis.addr().port();
    let all = cli(&s.cli, port, &["--scan"], b"");
    let expected: BTreeSet<String> = (0..1000)
        .map(|i| format!("key:{i:06}"))
        .chain(["other".to_string()])
        .collect();
    assert_eq!(lines(&all), expected);
    assert_eq!(all.stdout().lines().count(), 1001, "each key once");

    // key:0001NN: 100 keys; compare with KEYS and with Redis's (unordered) output.
    let pattern = cli(&s.cli, port, &["--scan", "--pattern", "key:0001*"], b"");
    let keys = cli(&s.cli, port, &["KEYS", "key:0001*"], b"");
    assert_eq!(lines(&pattern).len(), 100);
    assert_eq!(lines(&pattern), lines(&keys));
    let redis = cli(
        &s.cli,
        s.redis.port,
        &["--scan", "--pattern", "key:0001*"],
        b"",
    );
    assert_eq!(lines(&pattern), lines(&redis));
    let none = cli(&s.cli, port, &["--scan", "--pattern", "nomatch*"], b"");
    assert_eq!(none.stdout(), "");
    let quoted = cli(
        &s.cli,
        port,
        &["--scan", "--quoted-pattern", "\"oth*\""],
        b"",
    );
    assert_eq!(quoted.stdout(), "other\n");
}

/// A session as a person would type it, one command per line. (INFO keyspace comes before any
/// key has a TTL: avg_ttl is an estimate that each server's expiry cycle updates in its own time.)
const SESSION: &str = r#"PING
SET greeting "hello world"
GET greeting
GET missing
SET "bin key" "a\x00b\r\nc"
GET "bin key"
STRLEN "bin key"
INCR counter
INCRBY counter 41
INCRBYFLOAT counter 0.5
INCR greeting
MSET a 1 b 2
MGET a b missing
INFO keyspace
SET lock token NX PX 30000
SET lock other NX PX 30000
TTL lock
DEL lock
EXPIRE a 100
TTL a
PERSIST a
TTL a
TYPE a
TYPE missing
OBJECT ENCODING a
OBJECT ENCODING greeting
EXISTS a b missing
RENAME b c
DEL a c missing
KEYS greeting*
SCAN 0 MATCH greeting COUNT 1000
SELECT 3
GET greeting
DBSIZE
SELECT 0
DBSIZE
CONFIG GET databases
CONFIG SET hz 11
CONFIG GET hz
SETBIT bits 7 1
GETBIT bits 7
BITCOUNT bits
GET bits
ECHO "quoted \"inner\" 'single'"
"unbalanced
NOSUCH command here
GET
SET k v NX XX
SELECT 99
COMMAND INFO get
CLIENT SETNAME session
CLIENT GETNAME
FLUSHDB
DBSIZE
quit
GET never-sent
"#;

#[test]
fn interactive_session_prints_what_redis_prints() {
    let Some(s) = Servers::start("redis_cli interactive", None) else {
        return;
    };
    for args in [
        &[][..],
        &["--no-raw"][..],
        &["-3"][..],
        &["-3", "--no-raw"][..],
        &["-n", "3", "--no-raw"][..],
    ] {
        let run = s.same(args, SESSION.as_bytes());
        assert!(run.stdout().contains("hello world"), "{args:?}: {run:?}");
        s.same(&["FLUSHALL"], b"");
    }
}

/// The blocks of a `help` output (one per command: name and syntax, summary, since, group) for
/// the commands in `known`, without their summary line. `help client` lists every CLIENT
/// subcommand the server documents, and only those both servers have can be compared.
fn comparable_help(run: &Run, known: &BTreeSet<String>) -> Vec<String> {
    run.stdout()
        .split("\r\n\r\n")
        .flat_map(|chunk| chunk.split("\n\n"))
        .filter_map(|block| {
            let block = block.trim_matches(|c| c == '\r' || c == '\n');
            // "  \x1b[1mCLIENT KILL\x1b[0m \x1b[90m<syntax>\x1b[0m"
            let name = block.split("\x1b[1m").nth(1)?.split("\x1b[0m").next()?;
            let name = name.to_lowercase().replace(' ', "|");
            known.contains(&name).then(|| {
                block
                    .lines()
                    .filter(|l| !l.contains("summary:"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        })
        .collect()
}

/// Arguments our COMMAND DOCS documents that Redis 7.0's does not (Redis 8.4's compare-and-set
/// conditions of SET), as redis-cli renders them inside the command's syntax line. Commands 7.0
/// does not have at all (DELEX, DIGEST) are left out of the comparison by COMMAND LIST.
const NEWER_ARGUMENTS: &[(&str, &str)] = &[(
    "set",
    "|IFEQ ifeq-value|IFNE ifne-value|IFDEQ ifdeq-digest|IFDNE ifdne-digest",
)];

/// redis-cli fetches COMMAND DOCS when its interactive session starts and renders `help <cmd>`
/// from it: every command's syntax, version and group must come out as Redis's do; the summary
/// line is ours (our own words), and showing it proves the help came from our COMMAND DOCS.
#[test]
fn interactive_help_is_rendered_from_our_command_docs() {
    let Some(s) = Servers::start("redis_cli help", None) else {
        return;
    };
    let list = |port: u16| -> BTreeSet<String> {
        cli(&s.cli, port, &["COMMAND", "LIST"], b"")
            .stdout()
            .lines()
            .map(String::from)
            .collect()
    };
    let ours = list(s.embedis.addr().port());
    let theirs = list(s.redis.port);
    // CLIENT SETINFO is Redis 7.2's, which 7.0's COMMAND DOCS cannot be compared with.
    let common: BTreeSet<String> = ours.intersection(&theirs).cloned().collect();
    assert!(common.len() >= 95, "{} commands in common", common.len());

    let mut conn = Conn::connect(s.embedis.addr()).unwrap();
    for command in &common {
        let words = command.replace('|', " ");
        let input = format!("help {words}\n");
        let ours = cli(&s.cli, s.embedis.addr().port(), &[], input.as_bytes());
        let theirs = cli(&s.cli, s.redis.port, &[], input.as_bytes());
        let (ours_blocks, theirs_blocks) = (
            comparable_help(&ours, &common),
            comparable_help(&theirs, &common),
        );
        assert!(!theirs_blocks.is_empty(), "help {words}: {theirs:?}");
        for (got, expected) in ours_blocks.iter().zip(&theirs_blocks) {
            // Arguments newer than 7.0 are rendered where Redis renders them, and only they
            // may differ: take them out before comparing (and prove they were there).
            let mut got = got.clone();
            for (name, newer) in NEWER_ARGUMENTS {
                if *name == command.as_str() && got.contains("\x1b[1mSET\x1b[0m") {
                    assert!(
                        got.contains(newer),
                        "help {words} renders {newer:?}: {got:?}"
                    );
                    got = got.replacen(newer, "", 1);
                }
            }
            assert_eq!(
                got.escape_debug().to_string(),
                expected.escape_debug().to_string(),
                "help {words}"
            );
        }
        assert_eq!(ours_blocks.len(), theirs_blocks.len(), "help {words}");
        // Our summary, as COMMAND DOCS gives it, is what redis-cli shows.
        let docs = conn.command(&["COMMAND", "DOCS", command]);
        let docs = String::from_utf8_lossy(&docs);
        let summary = docs
            .split("\r\n")
            .skip_while(|l| *l != "summary")
            .nth(2)
            .unwrap_or_else(|| panic!("COMMAND DOCS {command} has a summary: {docs}"));
        assert!(
            ours.stdout().contains(summary),
            "help {words} shows our summary {summary:?}: {}",
            ours.stdout()
        );
    }
}

/// The commands Redis added after 7.0 (hash field expiration) are rendered by redis-cli from our
/// COMMAND DOCS as from Redis 8.2's: the same syntax, version and group (redis-cli 7.0 knows
/// nothing of them itself, so its rendering of each server's COMMAND DOCS is what is compared).
/// Skipped loudly without a Redis 8.2 (`$EMBEDIS_REDIS8_SERVER`), unless EMBEDIS_REQUIRE_REDIS=1.
#[test]
fn interactive_help_of_commands_newer_than_7_0_matches_redis_8() {
    let Some(s) = Servers::start_as("redis_cli help (redis 8.2)", None, "8.4") else {
        return;
    };
    let Some(redis8) = RedisServer::start_redis8("redis_cli help (redis 8.2)", &[]) else {
        return;
    };
    let list = |port: u16| -> BTreeSet<String> {
        cli(&s.cli, port, &["COMMAND", "LIST"], b"")
            .stdout()
            .lines()
            .map(String::from)
            .collect()
    };
    let ours = list(s.embedis.addr().port());
    let redis7 = list(s.redis.port);
    let redis8_list = list(redis8.port);
    let newer: BTreeSet<String> = ours
        .intersection(&redis8_list)
        .filter(|c| !redis7.contains(*c))
        .cloned()
        .collect();
    for command in ["hexpire", "hsetex", "hgetex", "hgetdel", "httl", "hpersist"] {
        assert!(newer.contains(command), "{command} in {newer:?}");
    }
    let mut conn = Conn::connect(s.embedis.addr()).unwrap();
    for command in &newer {
        let input = format!("help {}\n", command.replace('|', " "));
        let ours = cli(&s.cli, s.embedis.addr().port(), &[], input.as_bytes());
        let theirs = cli(&s.cli, redis8.port, &[], input.as_bytes());
        let (ours_blocks, theirs_blocks) = (
            comparable_help(&ours, &newer),
            comparable_help(&theirs, &newer),
        );
        // Vector sets are Redis 8's built-in module: their COMMAND DOCS has no summary or
        // syntax, so redis-cli renders no help for them from either server.
        if command.chars().all(|c| c.is_ascii_uppercase()) {
            assert!(theirs_blocks.is_empty(), "help {command}: {theirs:?}");
            assert!(ours_blocks.is_empty(), "help {command}: {ours:?}");
            continue;
        }
        assert_eq!(theirs_blocks.len(), 1, "help {command}: {theirs:?}");
        assert_eq!(
            ours_blocks
                .iter()
                .map(|b| b.escape_debug().to_string())
                .collect::<Vec<_>>(),
            theirs_blocks
                .iter()
                .map(|b| b.escape_debug().to_string())
                .collect::<Vec<_>>(),
            "help {command}"
        );
        let docs = conn.command(&["COMMAND", "DOCS", command]);
        let docs = String::from_utf8_lossy(&docs);
        let summary = docs
            .split("\r\n")
            .skip_while(|l| *l != "summary")
            .nth(2)
            .unwrap_or_else(|| panic!("COMMAND DOCS {command} has a summary: {docs}"));
        assert!(
            ours.stdout().contains(summary),
            "help {command} shows our summary {summary:?}"
        );
    }
}

/// The functions and keys in an RDB file redis-cli dumped: (libraries, keys).
fn rdb_contents(path: &std::path::Path) -> (usize, usize) {
    use embedis_rdb::file::{Event, RdbReader};
    let file = std::fs::File::open(path).expect("redis-cli wrote the file");
    let mut reader = RdbReader::new_upto(std::io::BufReader::new(file), 12).expect("an RDB file");
    let (mut functions, mut keys) = (0, 0);
    loop {
        match reader.next_event().expect("a well-formed RDB file") {
            Event::Function(_) => functions += 1,
            Event::Entry { .. } => keys += 1,
            Event::Eof { .. } => return (functions, keys),
            _ => {}
        }
    }
}

/// `redis-cli --rdb` dumps keys and functions; `--functions-rdb` (REPLCONF rdb-filter-only
/// functions) the functions alone, from embedis as from redis-server; an rdb-filter-only
/// filter other than `functions` is refused with Redis's error.
#[test]
fn functions_rdb_dumps_only_the_functions() {
    let Some(s) = Servers::start("redis_cli functions-rdb", None) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("embedis-cli-rdb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let library = "#!lua name=lib\nredis.register_function('f', function() return 1 end)";
    for (name, port) in [
        ("redis", s.redis.port),
        ("embedis", s.embedis.addr().port()),
    ] {
        let mut c = Conn::connect(([127, 0, 0, 1], port).into()).unwrap();
        c.command(&["SET", "k", "v"]);
        c.command(&["FUNCTION", "LOAD", library]);
        let whole = dir.join(format!("{name}-whole.rdb"));
        let functions = dir.join(format!("{name}-functions.rdb"));
        cli(&s.cli, port, &["--rdb", whole.to_str().unwrap()], b"");
        cli(
            &s.cli,
            port,
            &["--functions-rdb", functions.to_str().unwrap()],
            b"",
        );
        assert_eq!(rdb_contents(&whole), (1, 1), "{name} --rdb");
        assert_eq!(rdb_contents(&functions), (1, 0), "{name} --functions-rdb");
        assert_eq!(
            show(&c.command(&["REPLCONF", "rdb-filter-only", "keys"])),
            "-ERR Unsupported rdb-filter-only option: keys\\r\\n",
            "{name}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
