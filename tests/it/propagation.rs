//! The write stream (what AOF and replicas receive) compared with Redis 7.0's replication
//! stream, byte for byte.
//!
//! A reader attaches to redis-server as an old-style replica (`SYNC`: Redis answers `$<len>\r\n`
//! and the RDB bytes, then streams the commands it propagates); embedis's stream is read through
//! its tap ([`embedis::Server::tap_write_stream`]). Each script below runs on both servers, then
//! a marker write on a connection of its own closes the script's part of the stream; the two
//! parts must be the same bytes once absolute timestamps (PEXPIREAT's, PXAT's, stream IDs') are
//! replaced, after checking that each pair is within a few seconds.
//!
//! Script lines: a command in redis-cli's quoting (`"a b"`, `"\x00"`), optionally prefixed with
//! `>N ` to run it on connection N (1 by default) and suffixed with ` &` to send it without
//! waiting for its reply (a command that blocks); `@read N` reads connection N's pending reply;
//! `@sleep MS` waits.
//!
//! A second test replays random write sequences' streams into a fresh server and compares the
//! datasets.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::{Conn, RedisServer};

type Command = Vec<Vec<u8>>;

/// The scripts, one per behaviour. Each starts after FLUSHALL on fresh connections in db 0.
const SCRIPTS: &[(&str, &str)] = &[
    (
        "plain writes, reads and no-op writes",
        r##"
SET a 1
GET a
SET a 2 NX
SET missing 1 XX
DEL nothing
INCR counter
APPEND a xyz
MSET m1 1 m2 2
SETNX a 5
SETRANGE a 0 q
"##,
    ),
    (
        "SELECT when the database changes",
        r##"
SET a 1
SELECT 3
SET b 2
GET b
SET c 3
SELECT 0
SET d 4
>2 SELECT 5
>2 SET e 5
SET f 6
"##,
    ),
    (
        "relative expiries become absolute",
        r##"
SET k v
EXPIRE k 100
PEXPIRE k 100000
EXPIREAT k 4102444800
PEXPIREAT k 4102444800000
EXPIRE missing 10
EXPIRE k 100 NX
EXPIRE k 200 XX
PERSIST k
PERSIST k
EXPIRE k -1
SET k v
PEXPIREAT k 1
"##,
    ),
    (
        "SET with expiry options, SETEX, PSETEX, GETSET",
        r##"
SET k v EX 100
SET k v PX 100000
SET k v EXAT 4102444800
SET k v PXAT 4102444800000
SET k v2 KEEPTTL
SET k v3 GET
SET k v4 EX 100 GET
SET k v5 NX EX 100
SETEX k 100 v
PSETEX k 100000 v
GETSET k w
"##,
    ),
    (
        "GETEX and GETDEL",
        r##"
SET k v
GETEX k
GETEX k EX 100
GETEX k PX 100000
GETEX k EXAT 4102444800
GETEX k PXAT 4102444800000
GETEX k PERSIST
GETEX k PERSIST
GETEX missing EX 100
GETEX k EXAT 1
SET k v
GETDEL k
GETDEL k
CONFIG SET lazyfree-lazy-user-del yes
SET k v
GETDEL k
CONFIG SET lazyfree-lazy-user-del no
"##,
    ),
    (
        "floats as their results",
        r##"
SET f 10.5
EXPIRE f 100
INCRBYFLOAT f 0.1
INCRBYFLOAT g 3
HINCRBYFLOAT h x 1.5
HINCRBYFLOAT h x 2
"##,
    ),
    (
        "SPOP as SREM, SRANDMEMBER as nothing (random members)",
        r##"
SADD s a
SPOP s
SADD s a b c d e f
SRANDMEMBER s
SRANDMEMBER s 3
SPOP s 0
SPOP missing
SPOP missing 2
SPOP s 10
SADD s 1 2 3 4 5 6 7 8 9 10
SPOP s 2
SPOP s 8
"##,
    ),
    (
        "blocking list pops served at once",
        r##"
RPUSH l a b c d e f g
BLPOP l 0
BRPOP l 0
BLMOVE l dst LEFT RIGHT 0
BRPOPLPUSH l dst 0
LMOVE l dst right left
RPOPLPUSH l dst
BLMPOP 0 1 l LEFT COUNT 10
RPUSH l a b c
LMPOP 2 nothing l RIGHT COUNT 2
LMPOP 1 l LEFT
LPOP dst 0
BLPOP missing 0.01
"##,
    ),
    (
        "blocking list pops served later",
        r##"
>2 BLPOP l 0 &
@sleep 50
RPUSH l a
@read 2
>2 BLMOVE l dst RIGHT LEFT 0 &
@sleep 50
RPUSH l b
@read 2
>2 BRPOPLPUSH l dst 0 &
@sleep 50
RPUSH l c
@read 2
>2 BLMPOP 0 1 l RIGHT COUNT 5 &
@sleep 50
RPUSH l d e
@read 2
"##,
    ),
    (
        "sorted-set pops",
        r##"
ZADD z 1 a 2 b 3 c 4 d 5 e
BZPOPMIN z 0
BZPOPMAX z 0
ZPOPMIN z
BZMPOP 0 1 z MIN COUNT 1
ZMPOP 1 z MAX COUNT 10
>2 BZPOPMIN z 0 &
@sleep 50
ZADD z 1 x
@read 2
>2 BZMPOP 0 1 z MAX COUNT 3 &
@sleep 50
ZADD z 1 y 2 w
@read 2
"##,
    ),
    (
        "streams",
        r##"
XADD s 1-1 f v
XADD s * f v
XADD s 2-* f v
XADD s MAXLEN ~ 2 * f v
XADD s MAXLEN 2 * f v
XADD s NOMKSTREAM * f v
XADD missing NOMKSTREAM * f v
XTRIM s MAXLEN ~ 1
XTRIM s MAXLEN 1
XTRIM s MINID ~ 0
DEL s
XADD q 5-1 a b
XADD q 5-2 a b
XADD q 5-3 a b
XADD q 5-4 a b
XGROUP CREATE q g 0
XREADGROUP GROUP g c1 COUNT 2 STREAMS q >
XREADGROUP GROUP g c1 STREAMS q 0
XREADGROUP GROUP g c2 NOACK COUNT 1 STREAMS q >
XCLAIM q g c3 0 5-1
XCLAIM q g c3 0 5-2 JUSTID
XCLAIM q g c3 0 5-9 LASTID 5-3
XCLAIM q g c3 0 5-9 LASTID 5-4
XDEL q 5-2
XAUTOCLAIM q g c4 0 0
XACK q g 5-1
XGROUP SETID q g 0
XGROUP CREATECONSUMER q g c9
XGROUP DELCONSUMER q g c9
XGROUP DESTROY q g
XADD big MAXLEN ~ 5 * a 1
XADD big MAXLEN ~ 5 * a 2
XADD big MAXLEN ~ 5 * a 3
XADD big MAXLEN ~ 5 * a 4
XADD big MAXLEN ~ 5 * a 5
XADD big MAXLEN ~ 5 * a 6
XADD big MAXLEN ~ 5 * a 7
XADD big MINID ~ 0 * a 8
XGROUP CREATE q2 g $ MKSTREAM
>2 XREADGROUP GROUP g c1 BLOCK 0 STREAMS q2 > &
@sleep 50
XADD q2 7-1 a b
@read 2
>2 XREADGROUP GROUP g c2 BLOCK 0 NOACK STREAMS q2 > &
@sleep 50
XADD q2 7-2 a b
@read 2
"##,
    ),
    (
        "transactions",
        r##"
MULTI
SET a 1
SET b 2
EXEC
MULTI
SET c 1
EXEC
MULTI
GET a
EXEC
MULTI
GET a
INCR n
GET a
EXEC
MULTI
SET a 3
SELECT 2
SET a 4
EXEC
MULTI
SET x 1
DISCARD
"##,
    ),
    (
        "scripts and functions",
        r##"
EVAL "redis.call('set', KEYS[1], 'a'); redis.call('set', KEYS[2], 'b')" 2 k1 k2
EVAL "redis.call('set', KEYS[1], 'c')" 1 k1
EVAL "return redis.call('get', KEYS[1])" 1 k1
EVAL "redis.call('select', 4); redis.call('set', 'x', 1); redis.call('select', 0); redis.call('incr', 'y')" 0
EVAL "redis.call('get', 'k1'); redis.call('del', 'nothing')" 0
SCRIPT LOAD "redis.call('incr', 'z'); redis.call('incr', 'z')"
EVALSHA 406ead14f1e4e11e022bd54d764195229b3182bd 0
FUNCTION LOAD "#!lua name=lib\nredis.register_function('two', function(keys, args) redis.call('set', keys[1], args[1]); return redis.call('incr', keys[2]) end)"
FCALL two 2 fa fb v
FCALL_RO two 0
"##,
    ),
    (
        "redis.set_repl: what a script's commands propagate to the replicas",
        r##"
EVAL "redis.call('set', 'a', '1'); redis.set_repl(redis.REPL_NONE); redis.call('set', 'b', '2'); redis.set_repl(redis.REPL_AOF); redis.call('set', 'c', '3'); redis.set_repl(redis.REPL_ALL); redis.call('set', 'd', '4')" 0
EVAL "redis.set_repl(redis.REPL_AOF); redis.call('set', 'e', '5')" 0
EVAL "redis.set_repl(redis.REPL_NONE); redis.call('set', 'f', '6'); redis.set_repl(redis.REPL_REPLICA); redis.call('set', 'g', '7')" 0
EVAL "redis.set_repl(redis.REPL_NONE); redis.call('set', 'h', '8')" 0
SET i 9
"##,
    ),
    (
        "lazy expiry",
        r##"
DEBUG POPULATE 3 pop
SET after-populate 1
DEBUG SET-ACTIVE-EXPIRE 0
SET k v PX 1
SET k2 v PX 1
SET k3 v PX 1
@sleep 10
GET k
SET k2 new
EXISTS k3
SET k v PX 1
SET k2 v PX 1
@sleep 10
MULTI
GET k
SET k2 x
EXEC
SET e1 v PX 1
SET e2 v PX 1
SET e3 v PX 1
@sleep 10
SCAN 0 COUNT 100
SELECT 6
SET e1 v PX 1
SET e2 v PX 1
SET e3 v PX 1
@sleep 10
RANDOMKEY
SELECT 0
CONFIG SET lazyfree-lazy-expire yes
SET k v PX 1
@sleep 10
GET k
SET k v
EXPIRE k -1
SET k v
GETEX k PXAT 1
CONFIG SET lazyfree-lazy-expire no
DEBUG SET-ACTIVE-EXPIRE 1
"##,
    ),
    (
        "active expiry",
        r##"
SET k v PX 1
SELECT 1
SET k3 v PX 1
@sleep 400
SELECT 0
"##,
    ),
    (
        "GEOADD as ZADD",
        r##"
GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
GEOADD g NX CH 13.361389 38.115556 Palermo 2 3 x
GEOADD g XX 1 1 nothing
GEOADD g xx ch 1 1 x
"##,
    ),
    (
        "eviction",
        r##"
SET a 1
CONFIG SET maxmemory-policy allkeys-random
CONFIG SET maxmemory 1
SET b 2
CONFIG SET maxmemory 0
CONFIG SET maxmemory-policy noeviction
SET c 3
CONFIG SET lazyfree-lazy-eviction yes
CONFIG SET maxmemory-policy allkeys-random
CONFIG SET maxmemory 1
SET d 4
CONFIG SET maxmemory 0
CONFIG SET maxmemory-policy noeviction
CONFIG SET lazyfree-lazy-eviction no
CONFIG SET maxmemory-policy allkeys-lru
MULTI
INCR x
CONFIG SET maxmemory 1
INCR x
EXEC
@sleep 20
CONFIG SET maxmemory 0
CONFIG SET maxmemory-policy noeviction
"##,
    ),
    (
        "keyspace-wide writes",
        r##"
FLUSHALL
FLUSHDB
SET a 1
SWAPDB 0 1
SELECT 1
MOVE a 2
SELECT 2
COPY a b
COPY a b DB 3
RENAME a c
RENAME c c
DEL b c
UNLINK nothing
PUBLISH channel message
"##,
    ),
];

/// One command's arguments as redis-cli quotes them.
fn split(line: &str) -> Vec<Vec<u8>> {
    let mut args = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        if i >= bytes.len() {
            break;
        }
        let mut arg = Vec::new();
        if bytes[i] == b'"' {
            i += 1;
            while bytes[i] != b'"' {
                if bytes[i] == b'\\' {
                    i += 1;
                    match bytes[i] {
                        b'n' => arg.push(b'\n'),
                        b'r' => arg.push(b'\r'),
                        b't' => arg.push(b'\t'),
                        b'x' => {
                            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                            arg.push(u8::from_str_radix(hex, 16).unwrap());
                            i += 2;
                        }
                        other => arg.push(other),
                    }
                } else {
                    arg.push(bytes[i]);
                }
                i += 1;
            }
            i += 1;
        } else {
            while i < bytes.len() && bytes[i] != b' ' {
                arg.push(bytes[i]);
                i += 1;
            }
        }
        args.push(arg);
    }
    args
}

/// Parses a stream of RESP multibulk commands; panics on anything else.
fn parse_commands(mut bytes: &[u8]) -> Vec<Command> {
    let mut commands = Vec::new();
    while !bytes.is_empty() {
        let (command, used) = parse_one(bytes).expect("a whole multibulk command");
        commands.push(command);
        bytes = &bytes[used..];
    }
    commands
}

/// One multibulk command at the start of `bytes`: the arguments and the bytes it took, or None
/// if it is not all there yet.
fn parse_one(bytes: &[u8]) -> Option<(Command, usize)> {
    fn line(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
        let end = bytes[at..].windows(2).position(|w| w == b"\r\n")? + at;
        let n = std::str::from_utf8(&bytes[at + 1..end])
            .unwrap()
            .parse()
            .unwrap();
        Some((n, end + 2))
    }
    assert_eq!(bytes[0], b'*', "a multibulk command: {:?}", show(bytes));
    let (n, mut at) = line(bytes, 0)?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        if at >= bytes.len() {
            return None;
        }
        assert_eq!(bytes[at], b'$');
        let (len, start) = line(bytes, at)?;
        if bytes.len() < start + len + 2 {
            return None;
        }
        args.push(bytes[start..start + len].to_vec());
        at = start + len + 2;
    }
    Some((args, at))
}

fn encode(commands: &[Command]) -> Vec<u8> {
    let mut out = Vec::new();
    for command in commands {
        let args: Vec<&[u8]> = command.iter().map(|a| a.as_slice()).collect();
        out.extend(Conn::encode(&args));
    }
    out
}

fn show(bytes: &[u8]) -> String {
    support::show(bytes)
}

/// A reader attached to redis-server as a replica with SYNC.
struct ReplicaReader {
    socket: TcpStream,
    buf: Vec<u8>,
}

impl ReplicaReader {
    fn attach(addr: SocketAddr) -> ReplicaReader {
        let mut socket = TcpStream::connect(addr).unwrap();
        socket.write_all(b"SYNC\r\n").unwrap();
        let mut reader = ReplicaReader {
            socket,
            buf: Vec::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        // Newlines keep the link alive while the RDB is produced; then `$<len>\r\n` + RDB.
        loop {
            while reader.buf.first() == Some(&b'\n') {
                reader.buf.remove(0);
            }
            if let Some(end) = reader.buf.windows(2).position(|w| w == b"\r\n") {
                assert_eq!(reader.buf[0], b'$', "{}", show(&reader.buf));
                let len: usize = std::str::from_utf8(&reader.buf[1..end])
                    .unwrap()
                    .parse()
                    .unwrap();
                if reader.buf.len() >= end + 2 + len {
                    assert_eq!(&reader.buf[end + 2..end + 7], b"REDIS");
                    reader.buf.drain(..end + 2 + len);
                    return reader;
                }
            }
            reader.fill(deadline);
        }
    }

    fn fill(&mut self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "the replication stream stalled");
        self.socket.set_read_timeout(Some(left)).unwrap();
        let mut chunk = [0u8; 65536];
        match self.socket.read(&mut chunk) {
            Ok(0) => panic!("redis-server closed the replication link"),
            Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("replication link: {e}"),
        }
    }

    /// The commands up to and including `SET <marker> …`, PINGs left out.
    fn until_marker(&mut self, marker: &[u8]) -> Vec<Command> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut commands = Vec::new();
        loop {
            while !self.buf.is_empty() {
                let Some((command, used)) = parse_one(&self.buf) else {
                    break;
                };
                self.buf.drain(..used);
                if command == [b"PING".to_vec()] {
                    continue;
                }
                let done = command.len() >= 2 && command[0] == b"SET" && command[1] == marker;
                commands.push(command);
                if done {
                    return commands;
                }
            }
            self.fill(deadline);
        }
    }
}

/// A command sent on one of a script's connections.
struct Connections {
    conns: Vec<Conn>,
}

impl Connections {
    fn open(addr: SocketAddr) -> Connections {
        Connections {
            conns: (0..3).map(|_| Conn::connect(addr).unwrap()).collect(),
        }
    }
}

/// Runs `script` on both servers' connections, line by line in step (so that a blocked command
/// is blocked on both before the write that serves it).
fn run_script(script: &str, redis: &mut Connections, ours: &mut Connections) {
    for line in script.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(ms) = line.strip_prefix("@sleep ") {
            std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
            continue;
        }
        if let Some(n) = line.strip_prefix("@read ") {
            let n: usize = n.parse().unwrap();
            for side in [&mut *redis, &mut *ours] {
                side.conns[n - 1].read_reply().expect("a reply");
            }
            continue;
        }
        let (conn, rest) = match line.strip_prefix('>') {
            Some(rest) => {
                let (n, rest) = rest.split_once(' ').unwrap();
                (n.parse::<usize>().unwrap() - 1, rest)
            }
            None => (0, line),
        };
        let (rest, wait) = match rest.strip_suffix(" &") {
            Some(rest) => (rest, false),
            None => (rest, true),
        };
        let args = split(rest);
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        for side in [&mut *redis, &mut *ours] {
            side.conns[conn].send_raw(&Conn::encode(&args));
            if wait {
                side.conns[conn].read_reply().expect("a reply");
            }
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// An argument that holds a time of the last hour or the next few days, in milliseconds or as
/// a stream ID's first part: its milliseconds.
fn timestamp(arg: &[u8]) -> Option<(i64, Vec<u8>)> {
    let text = std::str::from_utf8(arg).ok()?;
    let (ms, rest) = match text.split_once('-') {
        Some((ms, seq)) => (ms, format!("-{seq}")),
        None => (text, String::new()),
    };
    let value: i64 = ms.parse().ok()?;
    let now = now_ms();
    (value > now - 3_600_000 && value < now + 10 * 86_400_000).then(|| (value, rest.into_bytes()))
}

/// Replaces the timestamps of `theirs` and `ours` that stand at the same place and are within a
/// few seconds of each other by a placeholder (offset by the relative time the script gave,
/// which both share).
fn normalise(theirs: &mut [Command], ours: &mut [Command], random_members: bool) {
    for (a, b) in theirs.iter_mut().zip(ours.iter_mut()) {
        // SPOP's members are the servers' random choice: only the shape must agree.
        if random_members && a[0] == b"SREM" && b[0] == b"SREM" && a.len() == 3 && b.len() == 3 {
            a[2] = b"<random>".to_vec();
            b[2] = b"<random>".to_vec();
        }
        for (x, y) in a.iter_mut().zip(b.iter_mut()) {
            if x == y {
                if let Some((_, rest)) = timestamp(x) {
                    let mut placeholder = b"<time>".to_vec();
                    placeholder.extend(rest);
                    *x = placeholder.clone();
                    *y = placeholder;
                }
                continue;
            }
            if let (Some((tx, rx)), Some((ty, ry))) = (timestamp(x), timestamp(y)) {
                // Stream IDs generated by `*` split into milliseconds differently on each server: their
                // sequence numbers are as much a matter of timing as their milliseconds.
                let same_sequence = rx == ry || (!rx.is_empty() && !ry.is_empty());
                if (tx - ty).abs() < 5_000 && same_sequence {
                    let mut placeholder = b"<time>".to_vec();
                    if rx == ry {
                        placeholder.extend(rx);
                    } else {
                        placeholder.extend(b"-<seq>");
                    }
                    *x = placeholder.clone();
                    *y = placeholder;
                }
            }
        }
    }
}

/// Keys that expire together (SCAN, RANDOMKEY, the active cycle) are deleted in the order of
/// each server's hash table: runs of consecutive DELs (UNLINKs) are compared as sets.
fn sort_deletion_runs(commands: &mut [Command]) {
    let mut i = 0;
    while i < commands.len() {
        let verb = commands[i][0].clone();
        if verb != b"DEL" && verb != b"UNLINK" {
            i += 1;
            continue;
        }
        let start = i;
        while i < commands.len() && commands[i][0] == verb && commands[i].len() == 2 {
            i += 1;
        }
        commands[start..i].sort();
        i = i.max(start + 1);
    }
}

fn readable(commands: &[Command]) -> String {
    commands
        .iter()
        .map(|c| c.iter().map(|a| show(a)).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn write_stream_matches_redis_replication_stream() {
    let Some(redis) = RedisServer::start(
        "write_stream_matches_redis_replication_stream",
        &[
            "--enable-debug-command",
            "yes",
            "--repl-diskless-sync",
            "no",
        ],
    ) else {
        return;
    };
    let ours = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    compare_scripts(&redis, &ours, SCRIPTS);
}

/// What Redis 8.2 added, propagated: BITOP's new operations, XDELEX and XACKDEL (verbatim when
/// they changed something, not at all otherwise), XADD and XTRIM with KEEPREF, DELREF or ACKED
/// (an approximate trim rewritten to the exact one, the option kept).
const SCRIPTS_8_2: &[(&str, &str)] = &[
    (
        "bitop 8.2",
        "SET a abc
        SET b zz
        BITOP DIFF r a b
        BITOP DIFF1 r a b
        BITOP ANDOR r a b nokey
        BITOP ONE r a b
        BITOP ONE r nokey1 nokey2",
    ),
    (
        "stream deletions 8.2",
        "XADD s 1-0 a 1
        XADD s 2-0 a 2
        XADD s 3-0 a 3
        XGROUP CREATE s g 0
        XGROUP CREATE s h 0
        XREADGROUP GROUP g c COUNT 3 STREAMS s >
        XDELEX s ACKED IDS 2 1-0 9-0
        XDELEX s DELREF IDS 1 9-0
        XDELEX s KEEPREF IDS 2 1-0 1-0
        XDELEX s DELREF IDS 1 2-0
        XACKDEL s g ACKED IDS 1 3-0
        XACKDEL s g IDS 1 3-0
        XACKDEL s h IDS 1 3-0
        XDELEX nokey IDS 1 1-0",
    ),
    (
        "stream trims 8.2",
        "CONFIG SET stream-node-max-entries 4
        XADD s 1-0 a 1
        XADD s 2-0 a 2
        XADD s 3-0 a 3
        XADD s 4-0 a 4
        XADD s 5-0 a 5
        XADD s 6-0 a 6
        XGROUP CREATE s g 0
        XREADGROUP GROUP g c COUNT 2 STREAMS s >
        XTRIM s MAXLEN ~ 1 ACKED
        XTRIM s MAXLEN 1 ACKED
        XADD s MAXLEN ~ 2 DELREF 7-0 a 7
        XADD s MINID ~ 9-0 ACKED * a 8
        XTRIM s MINID 5-0 DELREF
        XADD s KEEPREF MAXLEN ~ 1 9-0 a 9
        CONFIG SET stream-node-max-entries 100",
    ),
];

#[test]
fn redis_8_2_s_additions_propagate_as_redis_8_2_s() {
    let Some(redis) = RedisServer::start_redis8(
        "redis_8_2_s_additions_propagate_as_redis_8_2_s",
        &["--repl-diskless-sync", "no"],
    ) else {
        return;
    };
    let ours = support::builder_as("8.2").start().unwrap();
    compare_scripts(&redis, &ours, SCRIPTS_8_2);
}

/// Runs each script on both servers and compares what each propagated (see the module
/// documentation); PROPAGATION_ONLY=<part of a name> runs only matching scripts.
fn compare_scripts(redis: &RedisServer, ours: &embedis::Server, scripts: &[(&str, &str)]) {
    let mut replica = ReplicaReader::attach(redis.addr());
    ours.tap_write_stream();
    let mut control = (
        Conn::connect(redis.addr()).unwrap(),
        Conn::connect(ours.addr()).unwrap(),
    );
    let only = std::env::var("PROPAGATION_ONLY").ok();
    let mut failures = Vec::new();
    for (i, (name, script)) in scripts.iter().enumerate() {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        // A clean start, then everything up to a first marker is dropped.
        let before = format!("before-{i}");
        for conn in [&mut control.0, &mut control.1] {
            conn.command(&["FLUSHALL"]);
            conn.command(&["SET", &before, "x"]);
        }
        replica.until_marker(before.as_bytes());
        ours.take_write_stream();
        let mut theirs_conns = Connections::open(redis.addr());
        let mut ours_conns = Connections::open(ours.addr());
        run_script(script, &mut theirs_conns, &mut ours_conns);
        let marker = format!("after-{i}");
        control.0.command(&["SET", &marker, "x"]);
        control.1.command(&["SET", &marker, "x"]);
        let mut theirs = replica.until_marker(marker.as_bytes());
        let ours_bytes = ours.take_write_stream();
        let mut ours_commands = parse_commands(&ours_bytes);
        assert_eq!(
            encode(&ours_commands),
            ours_bytes,
            "embedis wrote well-formed RESP"
        );
        sort_deletion_runs(&mut theirs);
        sort_deletion_runs(&mut ours_commands);
        normalise(&mut theirs, &mut ours_commands, name.contains("random"));
        if encode(&theirs) != encode(&ours_commands) {
            failures.push(format!(
                "--- {name}\nredis:\n{}\nembedis:\n{}",
                readable(&theirs),
                readable(&ours_commands)
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

// ---- Replaying the stream rebuilds the dataset ----

mod replay {
    use super::*;
    use embedis::Clock;
    use proptest::prelude::*;
    use support::digest;

    /// One step of a random write sequence.
    #[derive(Debug, Clone)]
    enum Step {
        Command(Vec<String>),
        Multi(Vec<Vec<String>>),
        Advance(u64),
    }

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    /// A write (or read) command over a few keys of each type.
    fn command() -> impl Strategy<Value = Vec<String>> {
        let k = || 0..3u8;
        let n = || 1..40i64;
        prop_oneof![
            (k(), n()).prop_map(|(k, n)| words(&format!("SET s{k} v{n}"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("SET s{k} v{n} PX {n}"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("SET s{k} v{n} EX {n} GET"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("SET s{k} v{n} NX"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("SET s{k} v{n} KEEPTTL"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("SETEX s{k} {n} v"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("PSETEX s{k} {n} v"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("GETEX s{k} PX {n}"))),
            k().prop_map(|k| words(&format!("GETEX s{k} PERSIST"))),
            k().prop_map(|k| words(&format!("GETDEL s{k}"))),
            k().prop_map(|k| words(&format!("GET s{k}"))),
            k().prop_map(|k| words(&format!("INCRBYFLOAT f{k} 1.25"))),
            k().prop_map(|k| words(&format!("INCR i{k}"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("PEXPIRE i{k} {n}"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("EXPIRE s{k} {n}"))),
            k().prop_map(|k| words(&format!("EXPIRE s{k} -1"))),
            k().prop_map(|k| words(&format!("DEL s{k} i{k}"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("RPUSH l{k} a{n} b{n}"))),
            k().prop_map(|k| words(&format!("LPOP l{k}"))),
            (k(), k()).prop_map(|(a, b)| words(&format!("LMOVE l{a} l{b} LEFT RIGHT"))),
            k().prop_map(|k| words(&format!("LMPOP 2 l{k} l0 RIGHT COUNT 2"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("SADD t{k} m{n} {n} x"))),
            k().prop_map(|k| words(&format!("SPOP t{k}"))),
            k().prop_map(|k| words(&format!("SPOP t{k} 2"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("HSET h{k} f{n} {n}"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("HINCRBYFLOAT h{k} f{n} 0.5"))),
            (k(), n()).prop_map(|(k, n)| words(&format!("ZADD z{k} {n} m{n}"))),
            k().prop_map(|k| words(&format!("ZPOPMIN z{k}"))),
            k().prop_map(|k| words(&format!("ZMPOP 1 z{k} MAX COUNT 2"))),
            k().prop_map(|k| words(&format!("XADD x{k} * f v"))),
            k().prop_map(|k| words(&format!("XADD x{k} MAXLEN ~ 2 * f v"))),
            k().prop_map(|k| words(&format!("XTRIM x{k} MAXLEN 1"))),
            (0..3u8).prop_map(|db| words(&format!("SELECT {db}"))),
            k().prop_map(|k| vec![
                "EVAL".into(),
                "redis.call('incr', KEYS[1]); redis.call('rpush', KEYS[2], 'e')".into(),
                "2".into(),
                format!("i{k}"),
                format!("l{k}"),
            ]),
            k().prop_map(|k| vec![
                "EVAL".into(),
                "return redis.call('get', KEYS[1])".into(),
                "1".into(),
                format!("s{k}"),
            ]),
        ]
    }

    /// Blocking commands, sent only inside MULTI (where they never block; the manual clock
    /// would never time them out).
    fn in_multi() -> impl Strategy<Value = Vec<String>> {
        let k = || 0..3u8;
        prop_oneof![
            4 => command(),
            1 => k().prop_map(|k| words(&format!("BLPOP l{k} 0"))),
            1 => k().prop_map(|k| words(&format!("BZPOPMAX z{k} 0"))),
            1 => (k(), k()).prop_map(|(a, b)| words(&format!("BLMOVE l{a} l{b} RIGHT LEFT 0"))),
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => command().prop_map(Step::Command),
            1 => prop::collection::vec(in_multi(), 1..4).prop_map(Step::Multi),
            1 => (1..30u64).prop_map(Step::Advance),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        #[test]
        fn replaying_the_write_stream_rebuilds_the_dataset(
            steps in prop::collection::vec(step(), 1..60)
        ) {
            // Both on one manual clock; the replica is fed after every step, before the clock
            // moves (as a replica, it must not expire keys on its own: the source's DELs do).
            let clock = Clock::manual();
            let start = |clock: &Clock| {
                let server = support::builder()
                    .clock(clock.clone())
                    .config("enable-debug-command", "yes")
                    .unwrap()
                    .start()
                    .unwrap();
                let mut conn = Conn::connect(server.addr()).unwrap();
                conn.command(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
                (server, conn)
            };
            let (source, mut conn) = start(&clock);
            let (replica, mut feed) = start(&clock);
            source.tap_write_stream();
            let mut fed = Vec::new();
            for step in &steps {
                match step {
                    Step::Command(args) => {
                        conn.command(args);
                    }
                    Step::Multi(commands) => {
                        conn.command(&["MULTI"]);
                        for args in commands {
                            conn.command(args);
                        }
                        conn.command(&["EXEC"]);
                    }
                    Step::Advance(ms) => {
                        clock.advance(Duration::from_millis(*ms));
                    }
                }
                let bytes = source.take_write_stream();
                for command in parse_commands(&bytes) {
                    let reply = feed.command(&command);
                    prop_assert!(!reply.starts_with(b"-"), "replayed {} -> {}", readable(&[command]), show(&reply));
                    fed.push(command);
                }
            }
            prop_assert_eq!(
                digest(&mut conn),
                digest(&mut feed),
                "stream:\n{}",
                readable(&fed)
            );
            drop(replica);
        }
    }
}
