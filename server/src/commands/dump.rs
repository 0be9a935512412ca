//! DUMP, RESTORE and RESTORE-ASKING: a key's value as a self-checking payload (the value as an
//! RDB file holds it, the RDB version and a CRC64), and a key made from one.
//!
//! The bytes are the `embedis-rdb` crate's and the encodings are [`crate::base::formats::rdb_convert`]'s, so a
//! payload from DUMP is the one Redis 7.0 gives for the same value (compressed with LZF above 20
//! bytes, as Redis's default `rdbcompression yes`), except for the order of a hash table's
//! elements; and any payload Redis writes — back to the legacy ziplist and zipmap encodings of
//! older versions — restores here.
//!
//! RESTORE follows Redis's `restoreCommand` step by step, because its errors come in that
//! order: the options (IDLETIME and FREQ exclude each other as a syntax error), the target key
//! (`-BUSYKEY` unless REPLACE), the TTL, the payload's footer (its CRC64 unless DEBUG
//! SET-SKIP-CHECKSUM-VALIDATION 1), then its body. Every body is checked whole first: our
//! structures are built from it. Under `sanitize-dump-payload no` (Redis 7.0's default) Redis
//! takes a payload that passes a shallow check and keeps its bytes, to crash on them later; a
//! body that fails the whole check but passes Redis's shallow one is kept as far as it can be
//! read (a stream's, hash's or list's listpack up to its first malformed entry, see
//! `rdb_convert::from_rdb_salvaged`) and the reason logged. A refused body is logged at verbose level
//! with the loader's reason in Redis's words ("Hash ziplist integrity check failed."), which
//! Redis's corrupt-dump tests look for. A TTL already in
//! the past restores nothing and replies OK (a key REPLACE removed counts as deleted: `del`
//! event). IDLETIME sets the LRU clock under an LRU policy and FREQ the LFU counter under an LFU
//! policy; each is ignored under the other. The new key is written like any other (`new` and
//! `restore` events, WATCH, blocked clients woken).
//!
//! MIGRATE dumps the keys and RESTOREs them on the target over a blocking connection, as Redis
//! does (the server waits, up to the timeout). The connection is kept for the next MIGRATE to the
//! same `host:port` (`ServerState::migrate_sockets`: SELECT only when the database changes, one
//! retry on a new connection when a kept one turns out closed, closed by the tick after ten idle
//! seconds), as Redis's `migrateGetSocket` keeps it.

use crate::base::compat::CompatVersion;
use crate::base::config::event_class::GENERIC;
use crate::base::error::{CmdResult, Error};
use crate::base::formats::rdb_convert::{from_rdb, from_rdb_salvaged, to_rdb};
use crate::base::value::{lfu_minutes, lru_clock, Value, LRU_CLOCK_MAX};
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::Access;
use crate::model::state::MigrateSocket;
use bytes::Bytes;
use embedis_rdb::{
    dump_payload_as, parse_dump_payload_checked, parse_dump_payload_sanitized, RdbError, Sanitize,
};

/// MIGRATE's keys on one command line (Redis's `migrateGetKeys`): those after KEYS, or the key
/// argument.
fn migrate_keys(args: &[Bytes]) -> Vec<(usize, u16)> {
    let mut i = 6;
    while i < args.len() {
        if args[i].eq_ignore_ascii_case(b"auth") {
            i += 1; // its password is no key
        } else if args[i].eq_ignore_ascii_case(b"auth2") {
            i += 2;
        } else if args[i].eq_ignore_ascii_case(b"keys") && args[3].is_empty() {
            return (i + 1..args.len())
                .map(|k| (k, MIGRATE_KEY_FLAGS))
                .collect();
        }
        i += 1;
    }
    vec![(3, MIGRATE_KEY_FLAGS)]
}

/// RESTORE's payload as a value: checked whole, or — under `sanitize-dump-payload no`, for a
/// payload Redis would take after its shallow check — what can be read of it
/// ([`from_rdb_salvaged`]), logged at verbose level with the reason the whole check gave.
fn restored_value(ctx: &mut Ctx<'_>) -> Result<Value, Error> {
    let newest = ctx.registry.version.rdb_version();
    let verify_crc = !ctx.server.skip_checksum_validation;
    let payload = ctx.arg(3);
    let whole = parse_dump_payload_checked(payload, newest, verify_crc)
        .and_then(|v| from_rdb(v, &ctx.server.config));
    let err = match whole {
        Ok(v) => return Ok(v),
        Err(RdbError::BadDumpPayload) => {
            return Err(Error::msg("ERR DUMP payload version or checksum are wrong"))
        }
        Err(e) => e,
    };
    if ctx.server.config.sanitize_dump_payload == "no" {
        let salvaged = parse_dump_payload_sanitized(payload, newest, verify_crc, Sanitize::Shallow)
            .and_then(|v| from_rdb_salvaged(v, &ctx.server.config));
        if let Ok(v) = salvaged {
            ctx.server.log.verbose(&format!(
                "RESTORE kept the readable part of a payload that fails deep sanitization: {err}"
            ));
            return Ok(v);
        }
    }
    Err(bad_data_format(ctx, &err))
}

fn dump(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let Some(obj) = ctx.ks.lookup(db, ctx.arg(1), now, Access::Read) else {
        ctx.out.null();
        return Ok(());
    };
    let version = ctx.registry.version.rdb_version();
    let payload = dump_payload_as(&to_rdb(&obj.value), true, version);
    ctx.out.bulk(&payload);
    Ok(())
}

/// RESTORE's answer to a body the loader refused, after the verbose log line Redis's
/// `rdbReportCorruptRDB` writes for it (the reason, such as "Ziplist integrity check failed.",
/// is what Redis's tests look for; the offset is 0 as in a payload's own reader).
fn bad_data_format(ctx: &Ctx<'_>, e: &RdbError) -> Error {
    let reason = match e {
        RdbError::Corrupt(reason) => reason.clone(),
        other => other.to_string(),
    };
    ctx.server.log.verbose(&format!(
        "Internal error in RDB reading offset 0, function at embedis_rdb -> {reason}"
    ));
    Error::msg("ERR Bad data format")
}

fn restore(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (i64, i64) = (-1, -1);
    let mut j = 4;
    while j < ctx.argc() {
        let more = ctx.argc() - j - 1;
        if ctx.arg_is(j, "replace") {
            replace = true;
        } else if ctx.arg_is(j, "absttl") {
            absttl = true;
        } else if ctx.arg_is(j, "idletime") && more >= 1 && freq == -1 {
            idle = ctx.int_arg(j + 1)?;
            if idle < 0 {
                return Err(Error::msg("ERR Invalid IDLETIME value, must be >= 0"));
            }
            j += 1;
        } else if ctx.arg_is(j, "freq") && more >= 1 && idle == -1 {
            freq = ctx.int_arg(j + 1)?;
            if !(0..=255).contains(&freq) {
                return Err(Error::msg(
                    "ERR Invalid FREQ value, must be >= 0 and <= 255",
                ));
            }
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let key = ctx.arg(1);
    if !replace && ctx.ks.lookup(db, key, now, Access::Write).is_some() {
        return Err(Error::msg("BUSYKEY Target key name already exists."));
    }
    let ttl = ctx.int_arg(2)?;
    if ttl < 0 {
        return Err(Error::msg("ERR Invalid TTL value, must be >= 0"));
    }
    let value = restored_value(ctx)?;

    let deleted = replace && ctx.ks.db(db).remove(key).is_some();
    let deadline = match ttl {
        0 => None,
        t if absttl => Some(t),
        t => Some(t.wrapping_add(now)),
    };
    if deadline.is_some_and(|when| when <= now) && ctx.ks.deletes_past_deadlines() {
        if deleted {
            ctx.ks.touched(db, key);
            ctx.notify(GENERIC, "del", key);
            ctx.ks.dirty += 1;
            // What happened is a deletion: it propagates as one (since 7.2 as an UNLINK when
            // the server's own deletions are lazy).
            let name = ctx.args[1].clone();
            let unlink = ctx.server.config.lazyfree_lazy_server_del
                && ctx.registry.version >= CompatVersion::V7_2;
            let verb: &'static [u8] = if unlink { b"UNLINK" } else { b"DEL" };
            ctx.propagate_as(|| vec![Bytes::from_static(verb), name]);
        }
        ctx.out.ok();
        return Ok(());
    }
    ctx.ks.add(db, key, value, deadline, now);
    // A relative TTL propagates as the absolute time it stood for (Redis adds ABSTTL).
    if let (Some(when), false, true) = (deadline, absttl, ctx.propagating()) {
        let mut args = ctx.args.to_vec();
        ctx.propagate_as(|| {
            args[2] = crate::model::write_stream::integer_arg(when);
            args.push(Bytes::from_static(b"ABSTTL"));
            args
        });
    }
    let lfu = ctx.ks.access.lfu;
    if let Some(obj) = ctx.ks.db(db).main.get_mut(key) {
        if lfu {
            if freq >= 0 {
                obj.touch((lfu_minutes(now) << 8) | freq as u32);
            }
        } else if idle >= 0 {
            let clock = i64::from(lru_clock(now));
            let mut abs = clock.wrapping_sub(idle.wrapping_mul(1000) / 1000);
            if abs < 0 {
                abs = abs.wrapping_add(i64::from(LRU_CLOCK_MAX));
            }
            obj.touch(abs as u32);
        }
    }
    ctx.notify(GENERIC, "restore", key);
    ctx.out.ok();
    Ok(())
}

/// Opens a connection to a MIGRATE target, with Redis's connect timeout.
fn migrate_connect(name: &str, timeout: std::time::Duration) -> Option<std::net::TcpStream> {
    use std::net::{TcpStream, ToSocketAddrs};
    let addr = name.to_socket_addrs().ok()?.next()?;
    let stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    let _ = stream.set_nodelay(true);
    Some(stream)
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    )
}

/// What MIGRATE's options say.
struct MigrateOptions {
    copy: bool,
    replace: bool,
    username: Option<Bytes>,
    password: Option<Bytes>,
    /// The key argument, or the keys after KEYS.
    keys: Vec<Bytes>,
}

/// One key to move: its name, its DUMP payload and its TTL (0 for none).
type Payload = (Bytes, Vec<u8>, i64);

/// What came back from the target: the connection, whether SELECT was sent, the reply lines
/// read, and whether reading them failed.
struct Exchange {
    stream: std::net::TcpStream,
    select: bool,
    replies: Vec<String>,
    socket_error: bool,
}

/// MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw | AUTH2 user pw] [KEYS k…]:
/// RESTORE each key on the target over a blocking connection (the whole server waits, as
/// Redis's does), then delete the keys the target accepted unless COPY. Connections are kept
/// in `migrate_sockets` (SELECT is sent when the target's database is not known to be the one).
fn migrate(ctx: &mut Ctx<'_>) -> CmdResult {
    use std::time::Duration;

    let opts = parse_migrate(ctx)?;
    let timeout = ctx.int_arg(5)?;
    let dbid = ctx.int_arg(4)?;
    let cluster = ctx.server.cluster.enabled;
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let (db, now) = (ctx.db(), ctx.now_ms);
    let found = migrate_payloads(ctx, &opts.keys);
    if found.is_empty() {
        ctx.out.simple(b"NOKEY");
        return Ok(());
    }
    let host = String::from_utf8_lossy(ctx.arg(1)).into_owned();
    let port = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    let name = format!("{host}:{port}");
    let reading_error = || Error::msg("IOERR error or timeout reading to target instance");
    let exchange = migrate_exchange(ctx, &name, timeout, dbid, cluster, &opts, &found)?;
    let mut replies = exchange.replies.into_iter();
    let auth_reply = if opts.password.is_some() {
        replies.next()
    } else {
        None
    };
    let select_reply = if exchange.select {
        replies.next()
    } else {
        None
    };
    let header_error = [&auth_reply, &select_reply]
        .into_iter()
        .flatten()
        .find(|r| r.starts_with('-'))
        .cloned();
    let mut target_error: Option<String> = None;
    let mut moved: Vec<Bytes> = Vec::new();
    for ((key, _, _), reply) in found.iter().zip(replies) {
        if let Some(error) = header_error
            .as_ref()
            .or(reply.starts_with('-').then_some(&reply))
        {
            if target_error.is_none() {
                target_error = Some(error[1..].to_string());
            }
        } else if !opts.copy {
            ctx.ks.delete(db, key, now);
            ctx.notify(GENERIC, "del", key);
            moved.push(key.clone());
        }
    }
    if !exchange.socket_error {
        keep_migrate_socket(ctx, name, exchange.stream, &select_reply, dbid);
    }
    // What left propagates as a DEL of those keys, as Redis rewrites MIGRATE.
    if opts.copy || moved.is_empty() {
        ctx.prevent_propagation();
    } else {
        ctx.propagate_as(|| {
            let mut args = vec![Bytes::from_static(b"DEL")];
            args.extend(moved);
            args
        });
    }
    if let Some(error) = target_error {
        return Err(Error::owned(format!(
            "ERR Target instance replied with error: {error}"
        )));
    }
    if exchange.socket_error {
        return Err(reading_error());
    }
    ctx.out.ok();
    Ok(())
}

/// Reads MIGRATE's options from argument 6 on, in order.
fn parse_migrate(ctx: &Ctx<'_>) -> CmdResult<MigrateOptions> {
    let (mut copy, mut replace) = (false, false);
    let (mut username, mut password): (Option<Bytes>, Option<Bytes>) = (None, None);
    let mut keys: Vec<Bytes> = vec![ctx.args[3].clone()];
    let mut j = 6;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        if ctx.arg_is(j, "copy") {
            copy = true;
        } else if ctx.arg_is(j, "replace") {
            replace = true;
        } else if ctx.arg_is(j, "auth") {
            if more == 0 {
                return Err(Error::Syntax);
            }
            j += 1;
            password = Some(ctx.args[j].clone());
        } else if ctx.arg_is(j, "auth2") {
            if more < 2 {
                return Err(Error::Syntax);
            }
            username = Some(ctx.args[j + 1].clone());
            password = Some(ctx.args[j + 2].clone());
            j += 2;
        } else if ctx.arg_is(j, "keys") {
            if !ctx.args[3].is_empty() {
                return Err(Error::msg(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            keys = ctx.args[j + 1..].to_vec();
            break;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok(MigrateOptions {
        copy,
        replace,
        username,
        password,
        keys,
    })
}

/// The keys that exist, with their values' payloads and TTLs.
fn migrate_payloads(ctx: &mut Ctx<'_>, keys: &[Bytes]) -> Vec<Payload> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let rdb_version = ctx.registry.version.rdb_version();
    let mut found: Vec<Payload> = Vec::new();
    for key in keys {
        let Some(obj) = ctx.ks.lookup(db, key, now, Access::Read) else {
            continue;
        };
        let payload = dump_payload_as(&to_rdb(&obj.value), true, rdb_version);
        let ttl = match ctx.ks.expire_of(db, key) {
            None => 0,
            Some(at) if at - now < 0 => continue,
            Some(at) => (at - now).max(1),
        };
        found.push((key.clone(), payload, ttl));
    }
    found
}

/// Sends the AUTH, SELECT and RESTORE commands to the target (on a kept connection, or a new
/// one) and reads their replies. Redis retries once, on a new connection, when a write fails or
/// the first reply cannot be read for a reason other than a timeout: a cached connection the
/// target has closed.
fn migrate_exchange(
    ctx: &mut Ctx<'_>,
    name: &str,
    timeout: std::time::Duration,
    dbid: i64,
    cluster: bool,
    opts: &MigrateOptions,
    found: &[Payload],
) -> CmdResult<Exchange> {
    use std::io::Write;

    let mut may_retry = true;
    loop {
        let cached = ctx.server.migrate_sockets.remove(name);
        let (stream, last_dbid) = match cached {
            Some(socket) => (socket.stream, socket.last_dbid),
            None => {
                let Some(stream) = migrate_connect(name, timeout) else {
                    return Err(Error::msg(
                        "IOERR error or timeout connecting to the client",
                    ));
                };
                (stream, -1)
            }
        };
        let _ = stream.set_read_timeout(Some(timeout));
        let _ = stream.set_write_timeout(Some(timeout));
        let select = last_dbid != dbid;
        let request = migrate_request(opts, found, select.then_some(dbid), cluster);
        if let Err(e) = (&stream).write_all(&request) {
            if may_retry && !is_timeout(&e) {
                may_retry = false;
                continue;
            }
            return Err(Error::msg(
                "IOERR error or timeout writing to target instance",
            ));
        }
        let expected = usize::from(opts.password.is_some()) + usize::from(select) + found.len();
        let (replies, failure) = read_replies(&stream, expected);
        if let Some(e) = &failure {
            // Nothing was processed if not even the first reply came: safe to retry.
            if replies.is_empty() && may_retry && !is_timeout(e) {
                may_retry = false;
                continue;
            }
        }
        let socket_error = failure.is_some();
        return Ok(Exchange {
            stream,
            select,
            replies,
            socket_error,
        });
    }
}

/// The commands MIGRATE sends: AUTH, SELECT `dbid` when given, then a RESTORE per key.
fn migrate_request(
    opts: &MigrateOptions,
    found: &[Payload],
    select: Option<i64>,
    cluster: bool,
) -> bytes::BytesMut {
    let mut request = bytes::BytesMut::new();
    let mut push = |args: &[&[u8]]| crate::model::write_stream::write_multibulk(&mut request, args);
    if let Some(password) = &opts.password {
        match &opts.username {
            Some(user) => push(&[b"AUTH", user, password]),
            None => push(&[b"AUTH", password]),
        }
    }
    if let Some(dbid) = select {
        let dbid_text = dbid.to_string();
        push(&[b"SELECT", dbid_text.as_bytes()]);
    }
    // A cluster node's target is importing the keys' slot: RESTORE-ASKING gets past its
    // redirection, as Redis sends it.
    let restore: &[u8] = if cluster {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    for (key, payload, ttl) in found {
        let ttl = ttl.to_string();
        if opts.replace {
            push(&[restore, key, ttl.as_bytes(), payload, b"REPLACE"]);
        } else {
            push(&[restore, key, ttl.as_bytes(), payload]);
        }
    }
    request
}

/// Reads up to `expected` reply lines from the target; the error that stopped it early, if any.
fn read_replies(
    stream: &std::net::TcpStream,
    expected: usize,
) -> (Vec<String>, Option<std::io::Error>) {
    use std::io::{BufRead, BufReader};

    let mut reader = BufReader::new(stream);
    let mut read_line = || -> Result<String, std::io::Error> {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) => Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => Ok(line.trim_end_matches(['\r', '\n']).to_string()),
            Err(e) => Err(e),
        }
    };
    let mut replies: Vec<String> = Vec::with_capacity(expected);
    let mut failure = None;
    while replies.len() < expected {
        match read_line() {
            Ok(line) => replies.push(line),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    (replies, failure)
}

/// Keeps a working connection to the target for the next MIGRATE (one kept connection goes when
/// they are as many as Redis keeps, as Redis evicts a random one).
fn keep_migrate_socket(
    ctx: &mut Ctx<'_>,
    name: String,
    stream: std::net::TcpStream,
    select_reply: &Option<String>,
    dbid: i64,
) {
    if ctx.server.migrate_sockets.len() < MigrateSocket::MAX || {
        // Full: one kept connection goes, as Redis evicts a random one.
        let victim = ctx.server.migrate_sockets.keys().next().cloned();
        victim.is_some_and(|v| ctx.server.migrate_sockets.remove(&v).is_some())
    } {
        // A SELECT the target refused leaves the database unknown (Redis sets -1).
        let last_dbid = match select_reply {
            Some(r) if r.starts_with('-') => -1,
            _ => dbid,
        };
        ctx.server.migrate_sockets.insert(
            name,
            MigrateSocket {
                stream,
                last_dbid,
                last_use_ms: ctx.now_ms,
            },
        );
    }
}

const RESTORE_SYNTAX: &str = "key ttl:integer serialized-value:string [REPLACE@3.0.0] \
     [ABSTTL@5.0.0] [IDLETIME seconds:integer@5.0.0] [FREQ frequency:integer@5.0.0]";

const RESTORE_COMPLEXITY: &str =
    "O(1) for the key plus O(N*M) to rebuild N elements of average size M (O(N*M*log(N)) for \
     sorted sets).";

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("dump", 2, dump)
        .flags(Flags::READONLY)
        .acl(Acl::KEYSPACE)
        .keys(&[KeySpec::single(1, flag::RO | flag::ACCESS)])
        .tips(&["nondeterministic_output"])
        .doc(
            "generic",
            "2.6.0",
            "O(1) to find the key plus O(N*M) to serialize N elements of average size M.",
            "Serializes a key's value into Redis's DUMP format.",
            "key",
        ),
    CommandSpec::new("restore", -4, restore)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::KEYSPACE.union(Acl::DANGEROUS))
        .keys(&[KeySpec::single(1, flag::OW | flag::UPDATE)])
        .doc(
            "generic",
            "2.6.0",
            RESTORE_COMPLEXITY,
            "Creates a key from a value serialized by DUMP.",
            RESTORE_SYNTAX,
        ),
    CommandSpec::new("restore-asking", -4, restore)
        .flags(Flags::WRITE.union(Flags::DENYOOM).union(Flags::ASKING))
        .acl(Acl::KEYSPACE.union(Acl::DANGEROUS))
        .keys(&[KeySpec::single(1, flag::OW | flag::UPDATE)])
        .doc(
            "server",
            "3.0.0",
            RESTORE_COMPLEXITY,
            "RESTORE for a cluster's key migration (internal).",
            RESTORE_SYNTAX,
        ),
    CommandSpec::new("migrate", -6, migrate)
        .flags(Flags::WRITE)
        .acl(Acl::KEYSPACE.union(Acl::DANGEROUS))
        .keys(MIGRATE_KEYS)
        .keys_fn(migrate_keys)
        .tips(&["nondeterministic_output"])
        .doc(
            "generic",
            "2.6.0",
            "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
            "Moves keys to another Redis-compatible server: DUMP here, RESTORE there, DEL here.",
            "host:string port:integer key_or_empty_string=(key:key|empty_string=\"\") destination-db:integer timeout:integer [COPY@3.0.0] [REPLACE@3.0.0] [authentication=([AUTH password:string@4.0.7]|[AUTH2 username_password=(username:string password:string)])] [KEYS key:key...]",
        ),
];

const MIGRATE_KEY_FLAGS: u16 = flag::RW | flag::ACCESS | flag::DELETE;

/// MIGRATE's key specs, as Redis declares them: the key argument, and the keys after KEYS
/// (searched from the end; incomplete, since KEYS may be a key name).
static MIGRATE_KEYS: &[KeySpec] = &[
    KeySpec::single(3, MIGRATE_KEY_FLAGS),
    KeySpec {
        flags: MIGRATE_KEY_FLAGS | flag::INCOMPLETE,
        begin: crate::kernel::table::keys::Begin::Keyword {
            keyword: "KEYS",
            start_from: -2,
        },
        find: crate::kernel::table::keys::Find::Range {
            last_key: -1,
            step: 1,
            limit: 0,
        },
        notes: "",
    },
];
