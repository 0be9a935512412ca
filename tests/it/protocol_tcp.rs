//! Raw bytes over TCP, as tokio-rs/mini-redis tests its server: pipelining, inline commands,
//! partial writes, and protocol errors — each malformed stream is also sent to a real
//! redis-server and the complete output (up to the close) must be identical. A protocol error
//! closes only that connection; the server and other clients carry on.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use support::{show, Conn, RedisServer};

/// Sends `input` and returns everything received until the server closes the connection or stays
/// quiet for a moment, plus whether it closed.
fn exchange(addr: SocketAddr, input: &[u8]) -> (Vec<u8>, bool) {
    let mut stream = TcpStream::connect(addr).unwrap();
    // A server that closes on a protocol error may do so before a long input is all written.
    let _ = stream.write_all(input);
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return (out, false)
            }
            Err(_) => return (out, true),
        }
    }
}

fn cases() -> Vec<(&'static str, Vec<u8>)> {
    let mut long_inline = vec![b'a'; 70 * 1024];
    long_inline.extend_from_slice(b"\r\n");
    let mut long_count = b"*".to_vec();
    long_count.extend(vec![b'1'; 70 * 1024]);
    let mut long_bulk_len = b"*1\r\n$".to_vec();
    long_bulk_len.extend(vec![b'1'; 70 * 1024]);
    vec![
        (
            "pipelined multibulk",
            b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$3\r\na\0b\r\n".to_vec(),
        ),
        (
            "inline commands",
            b"PING\r\nECHO \"a b\"\nPING x\r\n\r\n  \r\nECHO 'it\\'s'\r\n".to_vec(),
        ),
        (
            "empty multibulk is skipped",
            b"*0\r\n*-1\r\nPING\r\n".to_vec(),
        ),
        ("bad multibulk length", b"PING\r\n*abc\r\nPING\r\n".to_vec()),
        ("huge multibulk length", b"*3000000000\r\n".to_vec()),
        ("expected dollar", b"*1\r\n+PING\r\nPING\r\n".to_vec()),
        ("negative bulk length", b"*1\r\n$-1\r\n".to_vec()),
        (
            "bulk over proto-max-bulk-len",
            b"*1\r\n$536870913\r\n".to_vec(),
        ),
        (
            "bulk length with leading zero",
            b"*1\r\n$04\r\nPING\r\n".to_vec(),
        ),
        (
            "unbalanced quotes",
            b"PING\r\nECHO \"abc\r\nPING\r\n".to_vec(),
        ),
        (
            "closing quote followed by a letter",
            b"ECHO \"abc\"x\r\n".to_vec(),
        ),
        ("too big inline request", long_inline),
        ("too big multibulk count line", long_count),
        ("too big bulk count line", long_bulk_len),
        (
            "unknown command then valid",
            b"NOPE 1 2\r\nPING\r\n".to_vec(),
        ),
        (
            "wrong arity keeps the connection",
            b"*1\r\n$4\r\nECHO\r\nPING\r\n".to_vec(),
        ),
        (
            "byte after CR is not checked",
            b"*1\rx$4\r\nPINGxyPING\r\n".to_vec(),
        ),
    ]
}

#[test]
fn protocol_streams_match_redis() {
    let Some(redis) = RedisServer::start("protocol_tcp", &[]) else {
        return;
    };
    let ours = support::builder().start().unwrap();
    let mut failures = Vec::new();
    for (name, input) in cases() {
        let expected = exchange(redis.addr(), &input);
        let got = exchange(ours.addr(), &input);
        if expected != got {
            failures.push(format!(
                "{name}:\n  redis:   {} (closed: {})\n  embedis: {} (closed: {})",
                show(&expected.0),
                expected.1,
                show(&got.0),
                got.1
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_protocol_error_closes_only_that_connection() {
    let server = support::builder().start().unwrap();
    let mut bystander = Conn::connect(server.addr()).unwrap();
    assert_eq!(bystander.command(&["PING"]), b"+PONG\r\n");
    let (out, closed) = exchange(server.addr(), b"*1\r\n$-5\r\n");
    assert_eq!(out, b"-ERR Protocol error: invalid bulk length\r\n");
    assert!(closed);
    assert_eq!(
        bystander.command(&["ECHO", "still here"]),
        b"$10\r\nstill here\r\n"
    );
    let mut fresh = Conn::connect(server.addr()).unwrap();
    assert_eq!(fresh.command(&["PING"]), b"+PONG\r\n");
}

#[test]
fn requests_split_across_writes_are_reassembled() {
    let server = support::builder().start().unwrap();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_nodelay(true).unwrap();
    let request = b"*2\r\n$4\r\nECHO\r\n$11\r\nhello world\r\n";
    for chunk in request.chunks(3) {
        stream.write_all(chunk).unwrap();
        stream.flush().unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut buf = [0u8; 64];
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut got = Vec::new();
    while got.len() < 18 {
        let n = stream.read(&mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"$11\r\nhello world\r\n");
}

#[test]
fn a_large_pipeline_is_answered_in_order() {
    let server = support::builder().start().unwrap();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    let mut request = Vec::new();
    let mut expected = Vec::new();
    for i in 0..20_000 {
        let msg = format!("m{i}");
        request.extend_from_slice(&Conn::encode(&[b"ECHO", msg.as_bytes()]));
        expected.extend_from_slice(format!("${}\r\n{msg}\r\n", msg.len()).as_bytes());
    }
    let writer = {
        let mut stream = stream.try_clone().unwrap();
        std::thread::spawn(move || stream.write_all(&request).unwrap())
    };
    let mut got = vec![0u8; expected.len()];
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.read_exact(&mut got).unwrap();
    writer.join().unwrap();
    assert!(got == expected, "replies out of order or corrupted");
}

#[test]
fn unauthenticated_clients_get_redis_stricter_limits() {
    let Some(redis) = RedisServer::start("protocol_tcp_auth", &["--requirepass", "pw"]) else {
        return;
    };
    let ours = support::builder().password("pw").start().unwrap();
    let mut big_bulk = b"*2\r\n$4\r\nECHO\r\n$20000\r\n".to_vec();
    big_bulk.extend(vec![b'x'; 20000]);
    big_bulk.extend_from_slice(b"\r\n");
    for input in [b"*11\r\n".to_vec(), big_bulk, b"PING\r\n".to_vec()] {
        let expected = exchange(redis.addr(), &input);
        let got = exchange(ours.addr(), &input);
        assert_eq!(show(&got.0), show(&expected.0));
        assert_eq!(got.1, expected.1);
    }
}

/// Inline commands, one per line, as one stream.
fn inline(lines: &[&str]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| [l.as_bytes(), b"\r\n"].concat())
        .collect()
}

/// Like [`exchange`], after a first request whose reply (HELLO's, which names the server's
/// version and the client id) is read and dropped.
fn exchange_after(addr: SocketAddr, setup: &[u8], input: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    stream.write_all(setup).unwrap();
    let mut buf = [0u8; 65536];
    let _ = stream.read(&mut buf);
    stream.write_all(input).unwrap();
    let mut out = Vec::new();
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// DEBUG PROTOCOL's sample of every RESP type, DEBUG ERROR, and the data digests (which must be
/// Redis's own, for every type and encoding, with and without TTLs, and equal for a key and its
/// COPY) — byte for byte as redis-server sends them, in RESP2 and RESP3.
#[test]
fn debug_internals_match_redis() {
    let Some(redis) = RedisServer::start("debug internals", &["--enable-debug-command", "yes"])
    else {
        return;
    };
    let ours = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let protocol: Vec<String> = [
        "string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push",
        "verbatim", "true", "false", "TRUE", "nosuch",
    ]
    .iter()
    .map(|t| format!("DEBUG PROTOCOL {t}"))
    .chain(
        [
            "DEBUG PROTOCOL",
            "DEBUG PROTOCOL a b",
            "DEBUG ERROR \"hello world\"",
            "DEBUG ERROR \"-FOO bar\"",
            "DEBUG ERROR \"\"",
            "DEBUG ERROR a b",
            "DEBUG SET-DISABLE-DENY-SCRIPTS 0",
            "DEBUG REPLYBUFFER RESIZING 1",
            "DEBUG REPLYBUFFER nosuch 1",
            "DEBUG STRINGMATCH-LEN a b",
            // Scripts: DEBUG is `noscript` unless SET-DISABLE-DENY-SCRIPTS lifts that gate;
            // read-only scripts may not PUBLISH (may-replicate), others may.
            "EVAL \"return redis.call('debug','protocol','string')\" 0",
            "DEBUG SET-DISABLE-DENY-SCRIPTS 1",
            "EVAL \"return redis.call('debug','protocol','integer')\" 0",
            "EVAL \"return redis.call('client','setname','x')\" 0",
            "DEBUG SET-DISABLE-DENY-SCRIPTS 0",
            "EVAL \"return redis.call('debug','protocol','string')\" 0",
            "EVAL_RO \"return redis.call('publish','ch','msg')\" 0",
            "EVAL_RO \"return redis.pcall('spublish','ch','msg')\" 0",
            "EVAL \"#!lua flags=no-writes\\nreturn redis.call('publish','ch','msg')\" 0",
            "EVAL \"return redis.call('publish','ch','msg')\" 0",
        ]
        .map(String::from),
    )
    .collect();
    let protocol: Vec<&str> = protocol.iter().map(String::as_str).collect();
    let digests = [
        "FLUSHALL",
        "DEBUG DIGEST",
        "DEBUG DIGEST-VALUE",
        "DEBUG DIGEST-VALUE nokey",
        "SET s hello",
        "SET n 12345",
        "EXPIRE n 1000",
        "RPUSH l a b 1 \"\"",
        "SADD st a 1 2",
        "SADD is 3 1 2",
        "ZADD z 1.5 a 2 b 0.1 c -inf d",
        "HSET h f v g 2",
        "DEBUG DIGEST-VALUE s n l st is z h nokey",
        "SELECT 3",
        "SET x 1",
        "SELECT 0",
        "DEBUG DIGEST",
        // COPY, and the big encodings: a digest ignores the encoding.
        "CONFIG SET zset-max-listpack-entries 1",
        "CONFIG SET hash-max-listpack-entries 1",
        "CONFIG SET set-max-intset-entries 1",
        "COPY z z2",
        "COPY h h2",
        "COPY is is2",
        "ZADD z2 3 x",
        "ZREM z2 x",
        "HSET h2 x y",
        "HDEL h2 x",
        "SADD is2 9",
        "SREM is2 9",
        "OBJECT ENCODING z2",
        "DEBUG DIGEST-VALUE z z2 h h2 is is2",
        "DEBUG DIGEST x",
        // POPULATE: key:<n> = value:<n>, existing keys kept, sizes cut or zero-padded.
        "SET key:1 old",
        "DEBUG POPULATE 5",
        "DEBUG POPULATE 2 p 10",
        "DEBUG POPULATE 2 q 3",
        "DEBUG POPULATE 1 big 50",
        "DEBUG POPULATE 0",
        "DEBUG POPULATE -1",
        "DEBUG POPULATE 1 a x",
        "DEBUG POPULATE 1 a 1 x",
        "MGET key:0 key:1 key:4 key:5 p:1 q:1",
        "OBJECT ENCODING key:0",
        "OBJECT ENCODING big:0",
        "DBSIZE",
        "DEBUG DIGEST",
    ];
    for setup in ["HELLO 2\r\n", "HELLO 3\r\n"] {
        for lines in [&protocol[..], &digests[..]] {
            let input = inline(lines);
            let expected = exchange_after(redis.addr(), setup.as_bytes(), &input);
            let got = exchange_after(ours.addr(), setup.as_bytes(), &input);
            assert!(expected.len() > 100, "{setup}: {}", show(&expected));
            assert_eq!(
                show(&got),
                show(&expected),
                "{setup}: embedis vs redis-server"
            );
        }
    }
}

/// Everything that arrives on `stream` until it stays quiet for a moment.
fn drain(stream: &mut TcpStream) -> Vec<u8> {
    stream
        .set_read_timeout(Some(Duration::from_millis(150)))
        .unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// A reply with CLIENT INFO's varying fields (ids, addresses, ages, buffer sizes) and its length
/// prefix left out, and without the lib-name/lib-ver fields that embedis already reports (Redis
/// 7.2's; 7.0 has none).
fn stable_client_info(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply);
    let Some(start) = text.find("id=") else {
        return text.into_owned();
    };
    const VARYING: &[&str] = &[
        "id",
        "addr",
        "laddr",
        "fd",
        "age",
        "idle",
        "qbuf",
        "qbuf-free",
        "argv-mem",
        "multi-mem",
        "rbs",
        "rbp",
        "obl",
        "oll",
        "omem",
        "tot-mem",
        "lib-name",
        "lib-ver",
    ];
    text[start..]
        .split([' ', '\n'])
        .filter(|field| {
            let key = field.split('=').next().unwrap_or("");
            !VARYING.contains(&key)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What RESET leaves of a connection's state (name, database, protocol, transaction, watches,
/// subscriptions, reply mode, authentication), seen through CLIENT INFO and through behaviour,
/// command by command as redis-server shows it.
fn reset_transcript(addr: SocketAddr) -> Vec<String> {
    let mut conn = TcpStream::connect(addr).unwrap();
    let steps: &[&[&str]] = &[
        &[
            "CLIENT SETNAME foo",
            "SELECT 3",
            "CLIENT NO-EVICT on",
            "WATCH k",
            "MULTI",
        ],
        &["HELLO 3"],
        &["RESET"],
        &["CLIENT INFO"],
        &["EXEC"],
        &["HELLO 3"],
        &["SUBSCRIBE a", "PSUBSCRIBE b*", "RESET"],
        &["CLIENT INFO"],
        &["MULTI", "SUBSCRIBE a", "RESET", "EXEC"],
        &["CLIENT REPLY OFF", "RESET", "PING"],
        &["CLIENT REPLY SKIP", "RESET", "PING"],
        &["MONITOR", "RESET", "CLIENT INFO"],
        &[
            "CONFIG SET requirepass pw",
            "AUTH pw",
            "PING",
            "RESET",
            "PING",
            "CLIENT INFO",
        ],
        &["HELLO 3"],
        &["AUTH default pw", "RESET"],
        &["HELLO 3"],
        &["AUTH pw", "CONFIG SET requirepass \"\"", "RESET", "PING"],
    ];
    let mut log = Vec::new();
    for lines in steps {
        conn.write_all(&inline(lines)).unwrap();
        let reply = drain(&mut conn);
        // HELLO's reply names the client id: only its kind is compared.
        let shown = if lines == &["HELLO 3"] {
            reply
                .first()
                .map(|&b| (b as char).to_string())
                .unwrap_or_default()
        } else {
            stable_client_info(&reply)
        };
        log.push(format!("{lines:?}: {shown}"));
    }
    log
}

#[test]
fn reset_clears_client_state_as_redis_does() {
    let Some(redis) = RedisServer::start("reset", &[]) else {
        return;
    };
    let ours = support::builder().start().unwrap();
    let expected = reset_transcript(redis.addr());
    assert!(expected[3].contains("flags="), "{expected:?}");
    assert!(expected[12].contains("NOAUTH"), "{expected:?}");
    assert_eq!(reset_transcript(ours.addr()), expected);
}

/// `qbuf + qbuf-free` of the client named `name`, from CLIENT LIST over `probe`.
fn query_buffer_room(probe: &mut Conn, name: &str) -> usize {
    let list = String::from_utf8_lossy(&probe.command(&["CLIENT", "LIST"])).into_owned();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))
        .expect("the client is listed");
    let field = |key: &str| -> usize {
        line.split(' ')
            .find_map(|f| f.strip_prefix(&format!("{key}=")))
            .unwrap()
            .parse()
            .unwrap()
    };
    field("qbuf") + field("qbuf-free")
}

/// Once the header of a big argument is read, the query buffer has room for all of it, as
/// Redis makes room for a bulk of 32 KB or more (Redis 7.4.1's unit/querybuf "query buffer
/// resized correctly with fat argv"); the value then arrives whole.
#[test]
fn room_is_made_for_a_big_argument_once_its_header_is_read() {
    let server = support::builder().start().unwrap();
    let mut client = TcpStream::connect(server.addr()).unwrap();
    client.write_all(b"CLIENT SETNAME fat\r\n").unwrap();
    let mut ok = [0u8; 5];
    client.read_exact(&mut ok).unwrap();
    client
        .write_all(b"*3\r\n$3\r\nset\r\n$1\r\na\r\n$1000000\r\n")
        .unwrap();
    let mut probe = Conn::connect(server.addr()).unwrap();
    let started = std::time::Instant::now();
    while query_buffer_room(&mut probe, "fat") < 1_000_000 {
        assert!(started.elapsed() < Duration::from_secs(10), "no room made");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut value = vec![b'x'; 1_000_000];
    value.extend_from_slice(b"\r\n");
    client.write_all(&value).unwrap();
    client.read_exact(&mut ok).unwrap();
    assert_eq!(&ok, b"+OK\r\n");
    assert_eq!(probe.command(&["STRLEN", "a"]), b":1000000\r\n");
}

/// A keyspace big enough that a pipeline's requests are decoded ahead and their keys prefetched
/// (the server's threshold is 16,384 keys).
const PREFETCHED_KEYSPACE: &str = "20000";

/// One request, multibulk.
fn request(args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    Conn::encode(&args)
}

/// Pipelines into a big keyspace, where the server decodes up to 16 requests ahead of the one it
/// runs: everything comes back as from Redis, in order, however the requests before change what
/// may be decoded (a lowered `proto-max-bulk-len`, a RESET that needs AUTH again) and whatever
/// follows (an inline request, a protocol error).
#[test]
fn pipelines_decoded_ahead_answer_as_redis_does() {
    let redis_args = ["--requirepass", "pw", "--enable-debug-command", "yes"];
    let Some(redis) = RedisServer::start("protocol_ahead", &redis_args) else {
        return;
    };
    let ours = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .password("pw")
        .start()
        .unwrap();
    let auth = request(&["AUTH", "pw"]);
    for addr in [redis.addr(), ours.addr()] {
        let mut setup = Conn::connect(addr).unwrap();
        assert_eq!(setup.command(&["AUTH", "pw"]), b"+OK\r\n");
        let populate = ["DEBUG", "POPULATE", PREFETCHED_KEYSPACE];
        assert_eq!(setup.command(&populate), b"+OK\r\n");
    }
    let gets: Vec<u8> = (0..20)
        .flat_map(|i| request(&["GET", &format!("key:{}", i * 997)]))
        .collect();
    let writes: Vec<u8> = (0..20)
        .flat_map(|i| request(&["INCR", &format!("n:{}", i % 3)]))
        .chain(request(&["LPUSH", "l", "a", "b"]))
        .chain(request(&["LRANGE", "l", "0", "-1"]))
        .collect();
    let mut big_bulk = request(&["SET", "big", &"x".repeat(2 * 1024 * 1024)]);
    let lower_limit = request(&["CONFIG", "SET", "proto-max-bulk-len", "1048576"]);
    let mut after_reset = request(&["RESET"]);
    after_reset.extend(request(&["a"; 11]));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("reads", [auth.clone(), gets.clone()].concat()),
        ("writes", [auth.clone(), writes, gets.clone()].concat()),
        (
            "inline and a protocol error inside",
            [
                auth.clone(),
                gets.clone(),
                b"PING\r\n".to_vec(),
                gets.clone(),
                b"*1\r\n$-5\r\n".to_vec(),
            ]
            .concat(),
        ),
        (
            "limit lowered",
            [
                auth.clone(),
                gets.clone(),
                lower_limit,
                std::mem::take(&mut big_bulk),
            ]
            .concat(),
        ),
        (
            "reset needs auth again",
            [auth.clone(), gets.clone(), after_reset, gets].concat(),
        ),
    ];
    for (name, input) in cases {
        let expected = exchange(redis.addr(), &input);
        let got = exchange(ours.addr(), &input);
        assert_eq!(show(&got.0), show(&expected.0), "{name}");
        assert_eq!(got.1, expected.1, "{name}");
        for addr in [redis.addr(), ours.addr()] {
            let restore = request(&["CONFIG", "SET", "proto-max-bulk-len", "536870912"]);
            exchange(addr, &[auth.clone(), restore].concat());
        }
    }
}

/// A request that blocks in the middle of a pipeline decoded ahead: the requests behind it wait,
/// and run in order once it is served.
#[test]
fn a_pipeline_resumes_after_a_request_that_blocked() {
    let server = support::builder()
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap();
    let mut setup = Conn::connect(server.addr()).unwrap();
    let populate = ["DEBUG", "POPULATE", PREFETCHED_KEYSPACE];
    assert_eq!(setup.command(&populate), b"+OK\r\n");
    let mut pipeline = request(&["SET", "a", "1"]);
    pipeline.extend(request(&["BLPOP", "queue", "0"]));
    for _ in 0..20 {
        pipeline.extend(request(&["INCR", "a"]));
    }
    let mut client = Conn::connect(server.addr()).unwrap();
    client.send_raw(&pipeline);
    assert_eq!(client.read_reply().unwrap().0, b"+OK\r\n");
    while support::blocked_clients(&mut setup) == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    // Nothing behind the blocked request ran.
    assert_eq!(setup.command(&["GET", "a"]), b"$1\r\n1\r\n");
    assert_eq!(setup.command(&["RPUSH", "queue", "job"]), b":1\r\n");
    assert_eq!(
        client.read_reply().unwrap().0,
        b"*2\r\n$5\r\nqueue\r\n$3\r\njob\r\n"
    );
    for n in 2..22 {
        assert_eq!(
            client.read_reply().unwrap().0,
            format!(":{n}\r\n").as_bytes()
        );
    }
}
