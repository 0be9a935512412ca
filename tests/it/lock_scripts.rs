//! The distributed-lock scripts of tests/fixtures/lock-scripts run unmodified on embedis with the
//! replies and keyspace effects real Redis 7.0 gives.
//!
//! One scenario per script family (re-entrant acquire in both its forms with release and unlock
//! messages over PUBLISH and SPUBLISH, watchdog renewal, the `SET key token NX PX` recipe with
//! compare-and-delete / compare-and-pexpire, the fair lock's queue and timeouts, and its
//! arithmetic on fractional and 13-digit numbers) is played over RESP2 and RESP3, with every
//! script sent by EVAL, or by EVALSHA after SCRIPT LOAD (and refused with NOSCRIPT before it and
//! after SCRIPT FLUSH). Over RESP3 a subscriber also runs the release itself and must get its own
//! unlock message before the script's reply. Each step checks the reply the fixture README lists
//! (or that follows from the scripts), on both servers; then the two transcripts — embedis on a
//! frozen manual clock, redis-server on real time — must be the same bytes. The numbers that
//! depend on elapsed time (PTTLs, the fair lock's wait estimates and the timeouts derived from
//! them) are logged by meaning rather than value: on embedis they must be exact (the clock does
//! not move), on redis-server within a few seconds below the lease; the values derived from them
//! (a later waiter's estimate, the queue's timeout scores) must follow exactly on both. Without
//! redis-server the embedis half still runs all its checks, and the comparison is skipped loudly
//! (EMBEDIS_REQUIRE_REDIS=1 makes that a failure). LOCK_SCRIPTS_SHOW=1 (with `--nocapture`)
//! prints both transcripts side by side.
//!
//! The last tests run on embedis alone and move its clock: a lease is there at its deadline and
//! gone one millisecond later for every client, through the active expiry cycle and, with that
//! cycle switched off (DEBUG SET-ACTIVE-EXPIRE 0), lazily inside the scripts themselves.

use crate::support;

use embedis_protocol::Value;
use std::net::SocketAddr;
use support::{advance_ms, eventually, flat, manual_server, show, Conn, RedisServer};

struct Script {
    file: &'static str,
    body: &'static str,
}

macro_rules! fixture {
    ($file:literal) => {
        Script {
            file: $file,
            body: include_str!(concat!("../fixtures/lock-scripts/", $file)),
        }
    };
}

const REENTRANT_ACQUIRE: Script = fixture!("reentrant-acquire.lua");
const REENTRANT_ACQUIRE_HSET: Script = fixture!("reentrant-acquire-hset.lua");
const REENTRANT_RELEASE: Script = fixture!("reentrant-release.lua");
const RENEW: Script = fixture!("renew.lua");
const COMPARE_AND_DELETE: Script = fixture!("compare-and-delete.lua");
const COMPARE_AND_PEXPIRE: Script = fixture!("compare-and-pexpire.lua");
const FAIR_ACQUIRE: Script = fixture!("fair-acquire.lua");

const ALL_SCRIPTS: [&Script; 7] = [
    &REENTRANT_ACQUIRE,
    &REENTRANT_ACQUIRE_HSET,
    &REENTRANT_RELEASE,
    &RENEW,
    &COMPARE_AND_DELETE,
    &COMPARE_AND_PEXPIRE,
    &FAIR_ACQUIRE,
];

impl Script {
    /// The script's SHA1 in hex, computed here rather than asked of a server.
    fn sha(&self) -> String {
        sha1_smol::Sha1::from(self.body).digest().to_string()
    }
}

/// How scripts reach the server.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    Eval,
    Evalsha,
}

struct Reply {
    raw: Vec<u8>,
    value: Value,
}

/// One connection, speaking RESP2 or RESP3, sending scripts by EVAL or EVALSHA.
struct Client {
    conn: Conn,
    via: Via,
}

impl Client {
    fn connect(addr: SocketAddr, proto: u8, via: Via) -> Client {
        let mut client = Client {
            conn: Conn::connect(addr).expect("connect"),
            via,
        };
        if proto == 3 {
            // HELLO's reply carries the connection id: checked for its shape, not compared.
            let hello = client.cmd(&["HELLO", "3"]);
            assert!(
                matches!(hello.value, Value::Map(_)),
                "HELLO 3: {}",
                show(&hello.raw)
            );
        }
        client
    }

    fn cmd<S: AsRef<[u8]>>(&mut self, args: &[S]) -> Reply {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_ref()).collect();
        self.conn.send_raw(&Conn::encode(&args));
        self.next_frame()
    }

    /// The next frame the server sends (a reply or a pushed message), waiting at most the
    /// connection's read timeout.
    fn next_frame(&mut self) -> Reply {
        let (raw, value) = self.conn.read_reply().expect("connection closed");
        Reply { raw, value }
    }

    fn run(&mut self, script: &Script, keys: &[&str], argv: &[&str]) -> Reply {
        let numkeys = keys.len().to_string();
        let rest: Vec<&str> = keys.iter().chain(argv).copied().collect();
        self.run_raw(script, &numkeys, &rest)
    }

    /// EVAL or EVALSHA with `numkeys` as given, then `rest`.
    fn run_raw(&mut self, script: &Script, numkeys: &str, rest: &[&str]) -> Reply {
        let sha = script.sha();
        let mut args: Vec<&str> = match self.via {
            Via::Eval => vec!["EVAL", script.body],
            Via::Evalsha => vec!["EVALSHA", &sha],
        };
        args.push(numkeys);
        args.extend_from_slice(rest);
        self.cmd(&args)
    }
}

/// What a step's reply must be, on every server (from the fixture README and the scripts).
enum Want<'a> {
    Nil,
    Int(i64),
    Simple(&'a str),
    Bulk(&'a str),
    /// An error reply starting with this text.
    Error(&'a str),
    /// An array, map or push whose flattened strings are these.
    Strs(&'a [&'a str]),
}

const OK: Want = Want::Simple("OK");

/// PING's answer to a subscribed client: RESP2 answers in the subscription's array form.
fn subscribed_pong(proto: u8) -> Want<'static> {
    if proto == 2 {
        Want::Strs(&["pong", ""])
    } else {
        Want::Simple("PONG")
    }
}

/// Elapsed time a running redis-server may show between setting a TTL and reading it.
const SLACK_MS: i64 = 5_000;

/// What one run saw: each step and its reply as text, with the numbers that depend on elapsed
/// time replaced by their meaning.
struct Transcript {
    /// True on embedis's frozen clock: remaining times are exact.
    frozen: bool,
    steps: Vec<(String, String)>,
}

impl Transcript {
    fn new(frozen: bool) -> Transcript {
        Transcript {
            frozen,
            steps: Vec::new(),
        }
    }

    #[track_caller]
    fn step(&mut self, step: &str, reply: Reply, want: Want) -> Reply {
        let ok = match (&want, &reply.value) {
            (Want::Nil, Value::Null) => true,
            (Want::Int(n), Value::Integer(got)) => n == got,
            (Want::Simple(want), Value::Simple(s)) => s.as_ref() == want.as_bytes(),
            (Want::Bulk(want), Value::Bulk(s)) => s.as_ref() == want.as_bytes(),
            (Want::Error(prefix), Value::Error(e)) => e.starts_with(prefix.as_bytes()),
            (Want::Strs(strs), Value::Array(_) | Value::Map(_) | Value::Push(_)) => {
                flat(&reply.value) == *strs
            }
            _ => false,
        };
        assert!(ok, "{step}: unexpected reply {}", show(&reply.raw));
        self.steps.push((step.to_string(), show(&reply.raw)));
        reply
    }

    /// An integer reply counting down from `full` ms: exactly `full` on the frozen clock, at most
    /// SLACK_MS less on a running one. Returns the value.
    #[track_caller]
    fn remaining(&mut self, step: &str, reply: Reply, full: i64) -> i64 {
        let Value::Integer(n) = reply.value else {
            panic!("{step}: not an integer: {}", show(&reply.raw));
        };
        assert_eq!(reply.raw, format!(":{n}\r\n").into_bytes(), "{step}");
        if self.frozen {
            assert_eq!(n, full, "{step}: on a frozen clock");
        } else {
            assert!(
                (full - SLACK_MS..=full).contains(&n),
                "{step}: {n} not within {SLACK_MS} ms below {full}"
            );
        }
        self.steps
            .push((step.to_string(), format!(":<{full} less elapsed>\\r\\n")));
        n
    }

    /// An integer reply that must be `expected`, a value derived from earlier timing-dependent
    /// replies; logged by its `meaning`.
    #[track_caller]
    fn derived(&mut self, step: &str, reply: Reply, expected: i64, meaning: &str) {
        assert_eq!(
            show(&reply.raw),
            show(format!(":{expected}\r\n").as_bytes()),
            "{step}: {meaning}"
        );
        self.steps
            .push((step.to_string(), format!(":<{meaning}>\\r\\n")));
    }

    /// A reply holding timing-dependent numbers: checked with `want` and logged with each number
    /// in `names` replaced by its name.
    #[track_caller]
    fn named(&mut self, step: &str, reply: Reply, want: &[&str], names: &[(i64, &str)]) {
        assert_eq!(flat(&reply.value), want, "{step}: {}", show(&reply.raw));
        let mut text = show(&reply.raw);
        for (number, name) in names {
            text = text.replace(&number.to_string(), name);
        }
        self.steps.push((step.to_string(), text));
    }
}

/// The server's time in ms (TIME): the "client's now" the fair lock passes in ARGV[4].
fn server_time_ms(client: &mut Client) -> i64 {
    let reply = client.cmd(&["TIME"]);
    match flat(&reply.value).as_slice() {
        [s, us] => s.parse::<i64>().unwrap() * 1000 + us.parse::<i64>().unwrap() / 1000,
        _ => panic!("TIME: {}", show(&reply.raw)),
    }
}

fn script_exists(t: &mut Transcript, admin: &mut Client, step: &str, want: &[&str]) {
    let mut args = vec!["SCRIPT".to_string(), "EXISTS".to_string()];
    args.extend(ALL_SCRIPTS.iter().map(|s| s.sha()));
    t.step(step, admin.cmd(&args), Want::Strs(want));
}

/// The script cache before the scenarios: empty; with EVALSHA, each script refused with NOSCRIPT
/// and then loaded under its SHA1.
fn script_cache_prelude(t: &mut Transcript, admin: &mut Client) {
    script_exists(t, admin, "SCRIPT EXISTS before", &["0"; 7]);
    if admin.via == Via::Evalsha {
        for script in ALL_SCRIPTS {
            let step = format!("EVALSHA {} before SCRIPT LOAD", script.file);
            t.step(
                &step,
                admin.run(script, &["k"], &[]),
                Want::Error("NOSCRIPT"),
            );
        }
        for script in ALL_SCRIPTS {
            let step = format!("SCRIPT LOAD {}", script.file);
            let sha = script.sha();
            t.step(
                &step,
                admin.cmd(&["SCRIPT", "LOAD", script.body]),
                Want::Bulk(&sha),
            );
        }
        script_exists(t, admin, "SCRIPT EXISTS after SCRIPT LOAD", &["1"; 7]);
        let upper = RENEW.sha().to_uppercase();
        t.step(
            "EVALSHA in upper case",
            admin.cmd(&["EVALSHA", &upper, "1", "nolock", "30000", "A:1"]),
            Want::Int(0),
        );
        t.step(
            "EVALSHA of a short name",
            admin.cmd(&["EVALSHA", "a46cb6b9", "0"]),
            Want::Error("NOSCRIPT"),
        );
    }
    t.step(
        "more keys than arguments",
        admin.run_raw(&RENEW, "2", &["k"]),
        Want::Error("ERR Number of keys can't be greater than number of args"),
    );
    t.step(
        "negative number of keys",
        admin.run_raw(&RENEW, "-1", &[]),
        Want::Error("ERR Number of keys can't be negative"),
    );
}

/// The re-entrant lock (acquired by `acquire`, either form), released by reentrant-release.lua
/// with its unlock message to a subscriber and a shard subscriber.
fn reentrant_scenario(t: &mut Transcript, addr: SocketAddr, proto: u8, via: Via, acquire: &Script) {
    let lock = format!("lock:{}", acquire.file);
    let chan = format!("redisson_lock__channel:{{{lock}}}");
    let keys = [lock.as_str(), chan.as_str()];
    let mut a = Client::connect(addr, proto, via);
    let mut b = Client::connect(addr, proto, via);
    let mut sub = Client::connect(addr, proto, via);
    let mut ssub = Client::connect(addr, proto, via);
    let s = |what: &str| format!("{}: {what}", acquire.file);

    let subscribed = ["subscribe", chan.as_str(), "1"];
    t.step(
        &s("SUBSCRIBE"),
        sub.cmd(&["SUBSCRIBE", &chan]),
        Want::Strs(&subscribed),
    );
    let ssubscribed = ["ssubscribe", chan.as_str(), "1"];
    t.step(
        &s("SSUBSCRIBE"),
        ssub.cmd(&["SSUBSCRIBE", &chan]),
        Want::Strs(&ssubscribed),
    );

    t.step(
        &s("A acquires"),
        a.run(acquire, &[&lock], &["30000", "A:1"]),
        Want::Nil,
    );
    t.step(
        &s("HGETALL"),
        a.cmd(&["HGETALL", &lock]),
        Want::Strs(&["A:1", "1"]),
    );
    t.remaining(&s("PTTL"), a.cmd(&["PTTL", &lock]), 30_000);
    t.step(
        &s("A re-enters"),
        a.run(acquire, &[&lock], &["30000", "A:1"]),
        Want::Nil,
    );
    t.step(
        &s("HGETALL"),
        a.cmd(&["HGETALL", &lock]),
        Want::Strs(&["A:1", "2"]),
    );
    t.remaining(
        &s("B is refused with the PTTL"),
        b.run(acquire, &[&lock], &["30000", "B:1"]),
        30_000,
    );
    t.step(
        &s("HGETALL unchanged"),
        b.cmd(&["HGETALL", &lock]),
        Want::Strs(&["A:1", "2"]),
    );
    t.step(
        &s("B releases what it does not hold"),
        b.run(&REENTRANT_RELEASE, &keys, &["0", "30000", "B:1", "publish"]),
        Want::Nil,
    );
    // A lease different from the acquire's shows that the release renewed it.
    t.step(
        &s("A releases one hold"),
        a.run(&REENTRANT_RELEASE, &keys, &["0", "45000", "A:1", "publish"]),
        Want::Int(0),
    );
    t.step(
        &s("HGETALL"),
        a.cmd(&["HGETALL", &lock]),
        Want::Strs(&["A:1", "1"]),
    );
    t.remaining(&s("PTTL renewed"), a.cmd(&["PTTL", &lock]), 45_000);
    t.step(
        &s("A releases the last hold"),
        a.run(&REENTRANT_RELEASE, &keys, &["0", "30000", "A:1", "publish"]),
        Want::Int(1),
    );
    t.step(&s("EXISTS"), a.cmd(&["EXISTS", &lock]), Want::Int(0));
    let message = ["message", chan.as_str(), "0"];
    t.step(
        &s("the subscriber gets the unlock message"),
        sub.next_frame(),
        Want::Strs(&message),
    );
    // A PING answered next proves that nothing else arrived: the re-entrant release published
    // nothing, and PUBLISH does not reach shard subscribers.
    t.step(
        &s("subscriber PING: nothing else arrived"),
        sub.cmd(&["PING"]),
        subscribed_pong(proto),
    );
    t.step(
        &s("shard subscriber PING: PUBLISH did not reach it"),
        ssub.cmd(&["PING"]),
        subscribed_pong(proto),
    );

    if proto == 3 {
        // Over RESP3 a subscriber runs commands too: its own release publishes to itself, and
        // the message comes before the script's reply, as on Redis.
        t.step(
            &s("the subscriber acquires"),
            sub.run(acquire, &[&lock], &["30000", "S:1"]),
            Want::Nil,
        );
        t.step(
            &s("the subscriber releases: first frame"),
            sub.run(&REENTRANT_RELEASE, &keys, &["0", "30000", "S:1", "publish"]),
            Want::Strs(&message),
        );
        t.step(
            &s("the subscriber releases: second frame"),
            sub.next_frame(),
            Want::Int(1),
        );
        // What PUBLISH answers the script is the receiver count, not the message.
        let publish = "return redis.call('publish', KEYS[1], ARGV[1])";
        t.step(
            &s("a script returns its PUBLISH's reply: the message first"),
            sub.cmd(&["EVAL", publish, "1", &chan, "x"]),
            Want::Strs(&[message[0], message[1], "x"]),
        );
        t.step(
            &s("a script returns its PUBLISH's reply: the count"),
            sub.next_frame(),
            Want::Int(1),
        );
    }

    // The publish command's name arrives as data: SPUBLISH reaches the shard subscriber only.
    t.step(
        &s("A acquires again"),
        a.run(acquire, &[&lock], &["30000", "A:1"]),
        Want::Nil,
    );
    t.step(
        &s("A releases with spublish"),
        a.run(
            &REENTRANT_RELEASE,
            &keys,
            &["0", "30000", "A:1", "spublish"],
        ),
        Want::Int(1),
    );
    let smessage = ["smessage", chan.as_str(), "0"];
    t.step(
        &s("the shard subscriber gets the unlock message"),
        ssub.next_frame(),
        Want::Strs(&smessage),
    );
    t.step(
        &s("subscriber PING: SPUBLISH did not reach it"),
        sub.cmd(&["PING"]),
        subscribed_pong(proto),
    );
    t.step(
        &s("releasing a free lock"),
        a.run(&REENTRANT_RELEASE, &keys, &["0", "30000", "A:1", "publish"]),
        Want::Nil,
    );

    // A publish command that is no command fails the script after its DEL, which stays done.
    t.step(
        &s("A acquires once more"),
        a.run(acquire, &[&lock], &["30000", "A:1"]),
        Want::Nil,
    );
    t.step(
        &s("release naming an unknown command"),
        a.run(
            &REENTRANT_RELEASE,
            &keys,
            &["0", "30000", "A:1", "nosuchcmd"],
        ),
        Want::Error("ERR Unknown Redis command called from script"),
    );
    t.step(
        &s("EXISTS after the failed script"),
        a.cmd(&["EXISTS", &lock]),
        Want::Int(0),
    );

    // A lock key holding a string: the hash commands fail inside the script.
    t.step(&s("SET a string"), a.cmd(&["SET", &lock, "x"]), OK);
    t.step(
        &s("acquire on a string"),
        b.run(acquire, &[&lock], &["30000", "B:1"]),
        Want::Error("WRONGTYPE"),
    );
    t.step(
        &s("release on a string"),
        b.run(&REENTRANT_RELEASE, &keys, &["0", "30000", "B:1", "publish"]),
        Want::Error("WRONGTYPE"),
    );
    t.step(&s("DEL"), a.cmd(&["DEL", &lock]), Want::Int(1));
}

/// The watchdog's renewal of a re-entrant lock.
fn renew_scenario(t: &mut Transcript, addr: SocketAddr, proto: u8, via: Via) {
    let mut a = Client::connect(addr, proto, via);
    let mut b = Client::connect(addr, proto, via);
    let lock = "lock2";
    t.step(
        "renew: A acquires",
        a.run(&REENTRANT_ACQUIRE, &[lock], &["30000", "A:1"]),
        Want::Nil,
    );
    t.step(
        "renew: A renews",
        a.run(&RENEW, &[lock], &["60000", "A:1"]),
        Want::Int(1),
    );
    t.remaining("renew: PTTL", a.cmd(&["PTTL", lock]), 60_000);
    t.step(
        "renew: B cannot renew",
        b.run(&RENEW, &[lock], &["90000", "B:1"]),
        Want::Int(0),
    );
    t.remaining("renew: PTTL unchanged", a.cmd(&["PTTL", lock]), 60_000);
    t.step(
        "renew: HGETALL",
        a.cmd(&["HGETALL", lock]),
        Want::Strs(&["A:1", "1"]),
    );
    t.step(
        "renew: a missing lock",
        a.run(&RENEW, &["nolock"], &["60000", "A:1"]),
        Want::Int(0),
    );
    t.step(
        "renew: did not create it",
        a.cmd(&["EXISTS", "nolock"]),
        Want::Int(0),
    );
}

/// The one-command lock `SET key token NX PX ms`, renewed by compare-and-pexpire and released by
/// compare-and-delete; and the unsafe two-step SETNX + EXPIRE.
fn set_nx_scenario(t: &mut Transcript, addr: SocketAddr, proto: u8, via: Via) {
    let mut a = Client::connect(addr, proto, via);
    let mut b = Client::connect(addr, proto, via);
    let k = "resource";
    t.step(
        "SET NX PX",
        a.cmd(&["SET", k, "tok", "PX", "30000", "NX"]),
        OK,
    );
    t.step(
        "SET NX PX by another",
        b.cmd(&["SET", k, "other", "PX", "30000", "NX"]),
        Want::Nil,
    );
    t.remaining("PTTL", a.cmd(&["PTTL", k]), 30_000);
    t.step(
        "compare-and-pexpire with another token",
        b.run(&COMPARE_AND_PEXPIRE, &[k], &["other", "90000"]),
        Want::Int(0),
    );
    t.remaining("PTTL unchanged", a.cmd(&["PTTL", k]), 30_000);
    t.step(
        "compare-and-pexpire",
        a.run(&COMPARE_AND_PEXPIRE, &[k], &["tok", "90000"]),
        Want::Int(1),
    );
    t.remaining("PTTL renewed", a.cmd(&["PTTL", k]), 90_000);
    t.step(
        "compare-and-delete with another token",
        b.run(&COMPARE_AND_DELETE, &[k], &["other"]),
        Want::Int(0),
    );
    t.step("GET", a.cmd(&["GET", k]), Want::Bulk("tok"));
    t.step(
        "compare-and-delete",
        a.run(&COMPARE_AND_DELETE, &[k], &["tok"]),
        Want::Int(1),
    );
    t.step("EXISTS", a.cmd(&["EXISTS", k]), Want::Int(0));
    t.step(
        "compare-and-delete of a missing key",
        a.run(&COMPARE_AND_DELETE, &[k], &["tok"]),
        Want::Int(0),
    );
    t.step(
        "compare-and-pexpire of a missing key",
        a.run(&COMPARE_AND_PEXPIRE, &[k], &["tok", "90000"]),
        Want::Int(0),
    );
    t.step("EXISTS", a.cmd(&["EXISTS", k]), Want::Int(0));
    t.step(
        "SET NX EX",
        b.cmd(&["SET", k, "other", "EX", "30", "NX"]),
        OK,
    );
    t.remaining("PTTL of EX 30", b.cmd(&["PTTL", k]), 30_000);
    t.step(
        "compare-and-pexpire with a lease that is no number",
        b.run(&COMPARE_AND_PEXPIRE, &[k], &["other", "soon"]),
        Want::Error("ERR value is not an integer or out of range"),
    );
    t.step(
        "compare-and-pexpire with a negative lease deletes",
        b.run(&COMPARE_AND_PEXPIRE, &[k], &["other", "-1"]),
        Want::Int(1),
    );
    t.step("EXISTS", a.cmd(&["EXISTS", k]), Want::Int(0));

    // The two-step form: between SETNX and EXPIRE the lock has no lease at all.
    t.step("SETNX", a.cmd(&["SETNX", "k2", "tok"]), Want::Int(1));
    t.step(
        "SETNX again",
        b.cmd(&["SETNX", "k2", "other"]),
        Want::Int(0),
    );
    t.step("PTTL before EXPIRE", a.cmd(&["PTTL", "k2"]), Want::Int(-1));
    t.step("EXPIRE", a.cmd(&["EXPIRE", "k2", "30"]), Want::Int(1));
    t.remaining("PTTL after EXPIRE", a.cmd(&["PTTL", "k2"]), 30_000);
    t.step(
        "PTTL of a missing key",
        a.cmd(&["PTTL", "k3"]),
        Want::Int(-2),
    );

    t.step("HSET", a.cmd(&["HSET", "h", "f", "v"]), Want::Int(1));
    t.step(
        "compare-and-delete of a hash",
        a.run(&COMPARE_AND_DELETE, &["h"], &["tok"]),
        Want::Error("WRONGTYPE"),
    );
}

/// The fair lock: waiters queue in order, get estimates from the lock's PTTL and the waiters
/// ahead, are served from the head, and are dropped once their wait has timed out by the
/// client's clock (ARGV[4]).
fn fair_scenario(t: &mut Transcript, addr: SocketAddr, proto: u8, via: Via) {
    let (f, q, z) = (
        "fair",
        "redisson_lock_queue:{fair}",
        "redisson_lock_timeout:{fair}",
    );
    let mut c: Vec<Client> = (0..6).map(|_| Client::connect(addr, proto, via)).collect();
    let now = server_time_ms(&mut c[0]);
    let mut acquire = |i: usize, owner: &str, now: i64| -> Reply {
        c[i].run(
            &FAIR_ACQUIRE,
            &[f, q, z],
            &["30000", owner, "5000", &now.to_string()],
        )
    };
    const WAIT: i64 = 5000;

    t.step("fair: A acquires", acquire(0, "A:1", now), Want::Nil);
    let mut admin = Client::connect(addr, proto, via);
    let mut cmd = |args: &[&str]| admin.cmd(args);
    t.step(
        "fair: HGETALL",
        cmd(&["HGETALL", f]),
        Want::Strs(&["A:1", "1"]),
    );
    let est_b = t.remaining("fair: B queues", acquire(1, "B:1", now), 30_000);
    t.step(
        "fair: LRANGE",
        cmd(&["LRANGE", q, "0", "-1"]),
        Want::Strs(&["B:1"]),
    );
    t.derived(
        "fair: C queues behind B",
        acquire(2, "C:1", now),
        est_b + WAIT,
        "B's estimate + wait",
    );
    t.derived(
        "fair: B asks again",
        acquire(1, "B:1", now),
        est_b,
        "B's estimate",
    );
    t.step(
        "fair: LRANGE",
        cmd(&["LRANGE", q, "0", "-1"]),
        Want::Strs(&["B:1", "C:1"]),
    );
    let (tb, tc) = (now + est_b + WAIT, now + est_b + 2 * WAIT);
    let names = [(tb, "<tB>"), (tc, "<tC>")];
    t.named(
        "fair: ZRANGE WITHSCORES",
        cmd(&["ZRANGE", z, "0", "-1", "WITHSCORES"]),
        &["B:1", &tb.to_string(), "C:1", &tc.to_string()],
        &names,
    );
    t.named(
        "fair: ZSCORE",
        cmd(&["ZSCORE", z, "C:1"]),
        &[&tc.to_string()],
        &names,
    );
    t.step("fair: A re-enters", acquire(0, "A:1", now), Want::Nil);
    t.step(
        "fair: HGETALL",
        cmd(&["HGETALL", f]),
        Want::Strs(&["A:1", "2"]),
    );

    // A frees the lock. C is not at the head: it waits; B is, and takes it.
    t.step("fair: A frees the lock", cmd(&["DEL", f]), Want::Int(1));
    t.derived(
        "fair: C is not at the head",
        acquire(2, "C:1", now),
        est_b + WAIT,
        "C's estimate",
    );
    t.step("fair: EXISTS", cmd(&["EXISTS", f]), Want::Int(0));
    t.step("fair: B acquires", acquire(1, "B:1", now), Want::Nil);
    t.step(
        "fair: LRANGE",
        cmd(&["LRANGE", q, "0", "-1"]),
        Want::Strs(&["C:1"]),
    );
    // The waiters left have their timeouts moved earlier by B's wait.
    t.named(
        "fair: ZRANGE WITHSCORES",
        cmd(&["ZRANGE", z, "0", "-1", "WITHSCORES"]),
        &["C:1", &tb.to_string()],
        &names,
    );
    t.step(
        "fair: HGETALL",
        cmd(&["HGETALL", f]),
        Want::Strs(&["B:1", "1"]),
    );
    t.remaining("fair: PTTL", cmd(&["PTTL", f]), 30_000);

    // D's clock has reached C's timeout: C is dropped, D queues after the lock's PTTL.
    let now_d = tb;
    let est_d = t.remaining("fair: D queues", acquire(3, "D:1", now_d), 30_000);
    t.step(
        "fair: LRANGE",
        cmd(&["LRANGE", q, "0", "-1"]),
        Want::Strs(&["D:1"]),
    );
    let td = now_d + est_d + WAIT;
    let names = [
        (td, "<tD>"),
        (td + WAIT, "<tD+wait>"),
        (td + 2 * WAIT, "<tD+2wait>"),
    ];
    t.named(
        "fair: ZRANGE WITHSCORES",
        cmd(&["ZRANGE", z, "0", "-1", "WITHSCORES"]),
        &["D:1", &td.to_string()],
        &names,
    );
    // E's clock is 1 ms short of D's timeout: D stays, E queues behind it.
    t.derived(
        "fair: E queues",
        acquire(4, "E:1", td - 1),
        1,
        "D's timeout - E's now",
    );
    t.step(
        "fair: LRANGE",
        cmd(&["LRANGE", q, "0", "-1"]),
        Want::Strs(&["D:1", "E:1"]),
    );
    t.named(
        "fair: ZRANGE WITHSCORES",
        cmd(&["ZRANGE", z, "0", "-1", "WITHSCORES"]),
        &["D:1", &td.to_string(), "E:1", &(td + WAIT).to_string()],
        &names,
    );
    // The lock is free but F is a newcomer: it queues at the tail instead of jumping ahead.
    t.step("fair: B frees the lock", cmd(&["DEL", f]), Want::Int(1));
    t.derived(
        "fair: F cannot jump the queue",
        acquire(5, "F:1", td - 1),
        WAIT + 1,
        "E's timeout - F's now",
    );
    t.step("fair: EXISTS", cmd(&["EXISTS", f]), Want::Int(0));
    t.named(
        "fair: ZRANGE WITHSCORES",
        cmd(&["ZRANGE", z, "0", "-1", "WITHSCORES"]),
        &[
            "D:1",
            &td.to_string(),
            "E:1",
            &(td + WAIT).to_string(),
            "F:1",
            &(td + 2 * WAIT).to_string(),
        ],
        &names,
    );
    t.step("fair: D acquires", acquire(3, "D:1", td - 1), Want::Nil);
    t.step(
        "fair: LRANGE",
        cmd(&["LRANGE", q, "0", "-1"]),
        Want::Strs(&["E:1", "F:1"]),
    );
    t.named(
        "fair: ZRANGE WITHSCORES",
        cmd(&["ZRANGE", z, "0", "-1", "WITHSCORES"]),
        &["E:1", &td.to_string(), "F:1", &(td + WAIT).to_string()],
        &names,
    );
    t.step(
        "fair: HGETALL",
        cmd(&["HGETALL", f]),
        Want::Strs(&["D:1", "1"]),
    );
}

/// The fair lock's arithmetic on numbers that are not whole or not small: a lock without a lease
/// (PTTL -1), fractional waits and clocks. Lua computes in doubles; Redis turns the numbers a
/// script passes to ZADD / ZINCRBY into strings and the numbers it returns into integers (by
/// truncation), and every server must do both alike. All of it is deterministic.
fn fair_numbers_scenario(t: &mut Transcript, addr: SocketAddr, proto: u8, via: Via) {
    let keys = [
        "fairnum",
        "redisson_lock_queue:{fairnum}",
        "redisson_lock_timeout:{fairnum}",
    ];
    let mut c = Client::connect(addr, proto, via);
    let mut acquire = |owner: &str, wait: &str, now: &str| {
        c.run(&FAIR_ACQUIRE, &keys, &["30000", owner, wait, now])
    };
    let zrange = ["ZRANGE", keys[2], "0", "-1", "WITHSCORES"];
    let mut admin = Client::connect(addr, proto, via);
    t.step(
        "fair numbers: a lock without a lease",
        admin.cmd(&["HSET", keys[0], "A:1", "1"]),
        Want::Int(1),
    );
    t.step(
        "fair numbers: G queues after PTTL -1",
        acquire("G:1", "2.5", "1000"),
        Want::Int(-1),
    );
    t.step(
        "fair numbers: H's estimate 1.5 truncates",
        acquire("H:1", "2.5", "1000"),
        Want::Int(1),
    );
    t.step(
        "fair numbers: G asks again",
        acquire("G:1", "2.5", "1000"),
        Want::Int(-1),
    );
    t.step(
        "fair numbers: ZRANGE WITHSCORES",
        admin.cmd(&zrange),
        Want::Strs(&["G:1", "1001.5", "H:1", "1004"]),
    );
    t.step(
        "fair numbers: G times out, H's estimate -2.4 truncates",
        acquire("H:1", "2.5", "1003.9"),
        Want::Int(-2),
    );
    t.step(
        "fair numbers: ZRANGE WITHSCORES",
        admin.cmd(&zrange),
        Want::Strs(&["H:1", "1004"]),
    );
    // A clock of 13 digits and a tenth: the sums lose bits, and their text must be Redis's.
    // (The score's text was observed on redis-server 7.0.15.)
    t.step(
        "fair numbers: H times out, G queues again after PTTL -1",
        acquire("G:1", "0.1", "1795477396086.3"),
        Want::Int(-1),
    );
    t.step(
        "fair numbers: ZRANGE WITHSCORES",
        admin.cmd(&zrange),
        Want::Strs(&["G:1", "1795477396085.4001"]),
    );
    t.step(
        "fair numbers: A re-enters",
        acquire("A:1", "0.1", "1795477396086.3"),
        Want::Nil,
    );
    t.step(
        "fair numbers: HGETALL",
        admin.cmd(&["HGETALL", keys[0]]),
        Want::Strs(&["A:1", "2"]),
    );
    t.remaining(
        "fair numbers: the re-entry set a lease",
        admin.cmd(&["PTTL", keys[0]]),
        30_000,
    );
}

/// All the scenarios on one server, as one client protocol and one way of sending scripts.
fn transcript(addr: SocketAddr, proto: u8, via: Via, frozen: bool) -> Vec<(String, String)> {
    let mut t = Transcript::new(frozen);
    let mut admin = Client::connect(addr, proto, via);
    script_cache_prelude(&mut t, &mut admin);
    reentrant_scenario(&mut t, addr, proto, via, &REENTRANT_ACQUIRE);
    reentrant_scenario(&mut t, addr, proto, via, &REENTRANT_ACQUIRE_HSET);
    renew_scenario(&mut t, addr, proto, via);
    set_nx_scenario(&mut t, addr, proto, via);
    fair_scenario(&mut t, addr, proto, via);
    fair_numbers_scenario(&mut t, addr, proto, via);
    // EVAL caches what it runs, as SCRIPT LOAD does.
    script_exists(&mut t, &mut admin, "SCRIPT EXISTS after", &["1"; 7]);
    t.step("SCRIPT FLUSH", admin.cmd(&["SCRIPT", "FLUSH"]), OK);
    script_exists(&mut t, &mut admin, "SCRIPT EXISTS after FLUSH", &["0"; 7]);
    t.step(
        "EVALSHA after SCRIPT FLUSH",
        admin.cmd(&["EVALSHA", &RENEW.sha(), "1", "nolock", "30000", "A:1"]),
        Want::Error("NOSCRIPT"),
    );
    t.steps
}

/// Runs the scenarios on embedis (frozen clock) and, when installed, on redis-server; the
/// transcripts must be equal.
fn compare_with_redis(test: &str, proto: u8, via: Via) {
    let embedis = manual_server();
    let ours = transcript(embedis.addr(), proto, via, true);
    let Some(redis) = RedisServer::start(test, &[]) else {
        return;
    };
    let theirs = transcript(redis.addr(), proto, via, false);
    if std::env::var_os("LOCK_SCRIPTS_SHOW").is_some() {
        for ((step, o), (_, r)) in ours.iter().zip(&theirs) {
            eprintln!("{step}\n  embedis: {o}\n  redis:   {r}");
        }
    }
    for ((step, o), (redis_step, r)) in ours.iter().zip(&theirs) {
        assert_eq!(step, redis_step);
        assert_eq!(
            o, r,
            "{step}: embedis (left) differs from redis-server (right)"
        );
    }
    assert_eq!(ours.len(), theirs.len());
}

#[test]
fn eval_over_resp2_matches_redis() {
    compare_with_redis("eval_over_resp2_matches_redis", 2, Via::Eval);
}

#[test]
fn eval_over_resp3_matches_redis() {
    compare_with_redis("eval_over_resp3_matches_redis", 3, Via::Eval);
}

#[test]
fn evalsha_over_resp2_matches_redis() {
    compare_with_redis("evalsha_over_resp2_matches_redis", 2, Via::Evalsha);
}

#[test]
fn evalsha_over_resp3_matches_redis() {
    compare_with_redis("evalsha_over_resp3_matches_redis", 3, Via::Evalsha);
}

// ---- Lease expiry on embedis's manual clock ----

fn int(reply: &Reply) -> i64 {
    match reply.value {
        Value::Integer(n) => n,
        _ => panic!("not an integer: {}", show(&reply.raw)),
    }
}

fn is_nil(reply: &Reply) -> bool {
    matches!(reply.value, Value::Null)
}

#[test]
fn a_lease_ends_at_its_deadline_for_every_client_without_anyone_touching_it() {
    let server = manual_server();
    let addr = server.addr();
    let mut a = Client::connect(addr, 2, Via::Eval);
    let mut b = Client::connect(addr, 3, Via::Eval);
    let mut observer = Client::connect(addr, 2, Via::Eval);

    assert!(is_nil(&a.run(
        &REENTRANT_ACQUIRE,
        &["lock"],
        &["30000", "A:1"]
    )));
    advance_ms(&server, 29_999);
    assert_eq!(int(&observer.cmd(&["PTTL", "lock"])), 1);
    assert_eq!(
        int(&b.run(&REENTRANT_ACQUIRE, &["lock"], &["30000", "B:1"])),
        1,
        "B is refused with the 1 ms left"
    );
    advance_ms(&server, 1);
    assert_eq!(
        int(&observer.cmd(&["PTTL", "lock"])),
        0,
        "there at its deadline"
    );
    advance_ms(&server, 1);
    // Nobody looks at the key: the active expiry cycle, woken by the clock, removes it.
    eventually("the expired lease is reclaimed", || {
        int(&observer.cmd(&["DBSIZE"])) == 0
    });
    let stats = observer.cmd(&["INFO", "stats"]);
    assert!(
        flat(&stats.value)[0].contains("expired_keys:1\r\n"),
        "{}",
        show(&stats.raw)
    );
    assert_eq!(int(&observer.cmd(&["EXISTS", "lock"])), 0);
    assert_eq!(int(&a.cmd(&["PTTL", "lock"])), -2);
    assert_eq!(
        int(&a.run(&RENEW, &["lock"], &["30000", "A:1"])),
        0,
        "the old owner's watchdog learns it lost the lock"
    );
    assert!(is_nil(&b.run(
        &REENTRANT_ACQUIRE,
        &["lock"],
        &["30000", "B:1"]
    )));
    assert_eq!(
        flat(&observer.cmd(&["HGETALL", "lock"]).value),
        ["B:1", "1"]
    );
    assert_eq!(int(&observer.cmd(&["PTTL", "lock"])), 30_000);
}

#[test]
fn an_expired_lease_is_absent_inside_scripts_with_active_expiry_off() {
    let server = support::builder()
        .clock(embedis::Clock::manual())
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .expect("embedis starts");
    let addr = server.addr();
    let mut a = Client::connect(addr, 2, Via::Eval);
    let mut b = Client::connect(addr, 2, Via::Eval);
    let mut admin = Client::connect(addr, 2, Via::Eval);
    assert_eq!(
        admin.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]).raw,
        b"+OK\r\n"
    );

    for acquire in [&REENTRANT_ACQUIRE, &REENTRANT_ACQUIRE_HSET] {
        let lock = format!("lock:{}", acquire.file);
        assert!(is_nil(&a.run(acquire, &[&lock], &["30000", "A:1"])));
        advance_ms(&server, 30_001);
        // Still stored (nothing reclaimed it), but no script may see it.
        assert_eq!(int(&admin.cmd(&["DBSIZE"])), 1, "{lock}");
        assert!(
            is_nil(&b.run(acquire, &[&lock], &["30000", "B:1"])),
            "{lock}: B acquires the expired lock"
        );
        assert_eq!(flat(&admin.cmd(&["HGETALL", &lock]).value), ["B:1", "1"]);
        assert_eq!(int(&admin.cmd(&["PTTL", &lock])), 30_000);
        assert!(
            is_nil(&a.run(
                &REENTRANT_RELEASE,
                &[&lock, "chan"],
                &["0", "30000", "A:1", "publish"]
            )),
            "{lock}: A no longer holds it"
        );
        assert_eq!(int(&admin.cmd(&["DEL", &lock])), 1);
    }

    // The SET NX PX recipe: a lapsed lease cannot be revived or deleted by its old owner.
    assert_eq!(
        a.cmd(&["SET", "res", "tok", "PX", "100", "NX"]).raw,
        b"+OK\r\n"
    );
    advance_ms(&server, 100);
    assert_eq!(
        int(&a.run(&COMPARE_AND_PEXPIRE, &["res"], &["tok", "100"])),
        1
    );
    advance_ms(&server, 101);
    assert_eq!(int(&admin.cmd(&["DBSIZE"])), 1);
    assert_eq!(
        int(&a.run(&COMPARE_AND_PEXPIRE, &["res"], &["tok", "30000"])),
        0
    );
    assert_eq!(int(&a.run(&COMPARE_AND_DELETE, &["res"], &["tok"])), 0);
    assert_eq!(
        b.cmd(&["SET", "res", "tok2", "PX", "30000", "NX"]).raw,
        b"+OK\r\n"
    );
    assert_eq!(int(&a.run(&COMPARE_AND_DELETE, &["res"], &["tok"])), 0);
    assert_eq!(admin.cmd(&["GET", "res"]).raw, b"$4\r\ntok2\r\n");
}
