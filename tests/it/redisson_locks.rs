//! The Redisson lock protocol, played by several clients against one embedis: the fixture scripts
//! (tests/fixtures/lock-scripts) sent the way Redisson sends them (EVALSHA, falling back to EVAL
//! on NOSCRIPT), waiters subscribed to the unlock channel, a watchdog renewing every lease/3, and
//! the fair lock's FIFO queue with its waiters' timeouts.
//!
//! It proves that a lock behaves as its clients rely on: one owner at a time; a waiter learns the
//! remaining lease, is woken by the unlock message and then acquires; re-entrant holds must all be
//! released and only the last release publishes; an abandoned lease frees the lock exactly when it
//! ends, with no message; a renewed lease survives indefinitely and ends one lease after the
//! renewals stop; fair waiters are served in arrival order and a waiter whose wait has timed out
//! is passed over. The server runs on a manual clock and time moves only by `clock.advance`, so
//! every remaining time and wait estimate is asserted exactly; the only wall-clock waits are for a
//! pub/sub message to arrive on a socket and for the active expiry cycle to run.

use crate::support;

use embedis_protocol::Value;
use std::net::SocketAddr;
use support::{advance_ms, eventually, flat, manual_server, Conn};

const ACQUIRE: &str = include_str!("../fixtures/lock-scripts/reentrant-acquire.lua");
const RELEASE: &str = include_str!("../fixtures/lock-scripts/reentrant-release.lua");
const RENEW: &str = include_str!("../fixtures/lock-scripts/renew.lua");
const FAIR_ACQUIRE: &str = include_str!("../fixtures/lock-scripts/fair-acquire.lua");
const COMPARE_AND_PEXPIRE: &str = include_str!("../fixtures/lock-scripts/compare-and-pexpire.lua");
const COMPARE_AND_DELETE: &str = include_str!("../fixtures/lock-scripts/compare-and-delete.lua");

/// A test helper, not one of the fixtures: releases a fair lock taken with fair-acquire.lua and
/// wakes the waiter at the head of the queue on that waiter's own channel.
/// KEYS[1] lock, KEYS[2] queue, KEYS[3] unlock channel prefix; ARGV[1] message, ARGV[2] lease in
/// ms, ARGV[3] owner. Returns nil when not held, 0 when a re-entrant hold remains, 1 when released.
const FAIR_RELEASE: &str = r#"
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
local head = redis.call('lindex', KEYS[2], 0)
if head then
  redis.call('publish', KEYS[3] .. ':' .. head, ARGV[1])
end
return 1
"#;

/// Redisson's default lease (the watchdog's lockWatchdogTimeout).
const LEASE: i64 = 30_000;
const LEASE_ARG: &str = "30000";
/// The fair lock's per-waiter wait (threadWaitTime).
const WAIT: i64 = 5_000;
const WAIT_ARG: &str = "5000";
const LOCK: &str = "myLock";

fn channel(lock: &str) -> String {
    format!("redisson_lock__channel:{{{lock}}}")
}

/// What an acquire script answered: acquired (nil) or refused with a remaining time.
#[derive(Debug, PartialEq)]
enum Acquire {
    Acquired,
    Wait(i64),
}

/// One lock client (one Redisson thread): its own connection and owner id.
struct Client {
    conn: Conn,
    id: String,
}

impl Client {
    fn connect(addr: SocketAddr, id: &str, proto: u8) -> Client {
        let mut client = Client {
            conn: Conn::connect(addr).expect("connect"),
            id: id.to_string(),
        };
        if proto == 3 {
            let hello = client.call(&["HELLO", "3"]);
            assert!(matches!(hello, Value::Map(_)), "HELLO 3: {hello:?}");
        }
        client
    }

    fn call(&mut self, args: &[&str]) -> Value {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.conn.send_raw(&Conn::encode(&args));
        self.next_frame()
    }

    /// The next frame (a reply or a pushed message), waiting at most the read timeout.
    fn next_frame(&mut self) -> Value {
        self.conn.read_reply().expect("connection open").1
    }

    fn int(&mut self, args: &[&str]) -> i64 {
        match self.call(args) {
            Value::Integer(n) => n,
            other => panic!("{args:?}: not an integer: {other:?}"),
        }
    }

    /// EVALSHA, and EVAL when the server does not know the script yet (NOSCRIPT), as Redisson
    /// does.
    fn script(&mut self, body: &str, keys: &[&str], argv: &[&str]) -> Value {
        let sha = sha1_smol::Sha1::from(body).digest().to_string();
        let numkeys = keys.len().to_string();
        let tail: Vec<&str> = [numkeys.as_str()]
            .into_iter()
            .chain(keys.iter().copied())
            .chain(argv.iter().copied())
            .collect();
        let by_sha: Vec<&str> = ["EVALSHA", sha.as_str()]
            .into_iter()
            .chain(tail.clone())
            .collect();
        match self.call(&by_sha) {
            Value::Error(e) if e.starts_with(b"NOSCRIPT") => {
                let by_body: Vec<&str> = ["EVAL", body].into_iter().chain(tail).collect();
                self.call(&by_body)
            }
            reply => reply,
        }
    }

    fn acquire_reply(reply: Value) -> Acquire {
        match reply {
            Value::Null => Acquire::Acquired,
            Value::Integer(ms) => Acquire::Wait(ms),
            other => panic!("acquire answered {other:?}"),
        }
    }

    fn try_lock(&mut self, lock: &str) -> Acquire {
        let id = self.id.clone();
        Self::acquire_reply(self.script(ACQUIRE, &[lock], &[LEASE_ARG, &id]))
    }

    /// reentrant-release.lua with PUBLISH: None when not ours, else Some(0) still held, Some(1)
    /// released.
    fn unlock(&mut self, lock: &str) -> Option<i64> {
        let id = self.id.clone();
        match self.script(
            RELEASE,
            &[lock, &channel(lock)],
            &["0", LEASE_ARG, &id, "publish"],
        ) {
            Value::Null => None,
            Value::Integer(n) => Some(n),
            other => panic!("release answered {other:?}"),
        }
    }

    fn renew(&mut self, lock: &str) -> i64 {
        let id = self.id.clone();
        match self.script(RENEW, &[lock], &[LEASE_ARG, &id]) {
            Value::Integer(n) => n,
            other => panic!("renew answered {other:?}"),
        }
    }

    /// fair-acquire.lua with the client's clock reading `now` (ms).
    fn try_fair_lock(&mut self, lock: &str, now: i64) -> Acquire {
        let id = self.id.clone();
        let (queue, timeouts) = fair_keys(lock);
        Self::acquire_reply(self.script(
            FAIR_ACQUIRE,
            &[lock, &queue, &timeouts],
            &[LEASE_ARG, &id, WAIT_ARG, &now.to_string()],
        ))
    }

    fn fair_unlock(&mut self, lock: &str) -> Option<i64> {
        let id = self.id.clone();
        let (queue, _) = fair_keys(lock);
        match self.script(
            FAIR_RELEASE,
            &[lock, &queue, &channel(lock)],
            &["0", LEASE_ARG, &id],
        ) {
            Value::Null => None,
            Value::Integer(n) => Some(n),
            other => panic!("fair release answered {other:?}"),
        }
    }

    fn subscribe(&mut self, channel: &str) {
        assert_eq!(
            flat(&self.call(&["SUBSCRIBE", channel])),
            ["subscribe", channel, "1"]
        );
    }

    /// The next pub/sub message: its channel and payload.
    fn message(&mut self) -> (String, String) {
        match flat(&self.next_frame()).as_slice() {
            [kind, channel, payload] if kind == "message" => (channel.clone(), payload.clone()),
            other => panic!("{}: expected a message, got {other:?}", self.id),
        }
    }

    /// Proves that no message is waiting: the next frame is the answer to a PING.
    fn assert_no_message(&mut self) {
        let pong = self.call(&["PING"]);
        let got = flat(&pong);
        assert!(
            got == ["pong", ""] || got == ["PONG"],
            "{}: a message arrived: {got:?}",
            self.id
        );
    }
}

fn fair_keys(lock: &str) -> (String, String) {
    (
        format!("redisson_lock_queue:{{{lock}}}"),
        format!("redisson_lock_timeout:{{{lock}}}"),
    )
}

/// A waits for nothing; B is refused with the remaining lease, subscribes, and is woken by A's
/// release. Over RESP3, B listens and runs its scripts on one connection.
fn waiter_is_woken_by_the_unlock_message(proto: u8) {
    let server = manual_server();
    let addr = server.addr();
    let mut a = Client::connect(addr, "uuid-a:1", 2);
    let mut b = Client::connect(addr, "uuid-b:1", proto);
    let mut b_listener = (proto == 2).then(|| Client::connect(addr, "uuid-b:listener", 2));
    let mut observer = Client::connect(addr, "observer", 2);

    assert_eq!(a.try_lock(LOCK), Acquire::Acquired);
    assert_eq!(b.try_lock(LOCK), Acquire::Wait(LEASE));
    b_listener
        .as_mut()
        .unwrap_or(&mut b)
        .subscribe(&channel(LOCK));
    advance_ms(&server, 1000);
    assert_eq!(b.try_lock(LOCK), Acquire::Wait(LEASE - 1000));

    assert_eq!(a.unlock(LOCK), Some(1));
    assert_eq!(observer.int(&["EXISTS", LOCK]), 0);
    assert_eq!(
        b_listener.as_mut().unwrap_or(&mut b).message(),
        (channel(LOCK), "0".to_string())
    );
    assert_eq!(b.try_lock(LOCK), Acquire::Acquired);
    assert_eq!(flat(&observer.call(&["HGETALL", LOCK])), ["uuid-b:1", "1"]);
    assert_eq!(observer.int(&["PTTL", LOCK]), LEASE);
    assert_eq!(a.try_lock(LOCK), Acquire::Wait(LEASE));
    assert_eq!(a.unlock(LOCK), None, "A no longer holds it");
    b_listener.as_mut().unwrap_or(&mut b).assert_no_message();
}

#[test]
fn a_resp2_waiter_is_woken_by_the_unlock_message_and_then_acquires() {
    waiter_is_woken_by_the_unlock_message(2);
}

#[test]
fn a_resp3_waiter_is_woken_by_the_unlock_message_on_its_command_connection() {
    waiter_is_woken_by_the_unlock_message(3);
}

#[test]
fn a_reentrant_lock_is_released_as_often_as_it_was_taken_and_only_the_last_release_publishes() {
    let server = manual_server();
    let addr = server.addr();
    let mut a = Client::connect(addr, "uuid-a:1", 2);
    let mut b = Client::connect(addr, "uuid-b:1", 2);
    let mut b_listener = Client::connect(addr, "uuid-b:listener", 2);
    let mut observer = Client::connect(addr, "observer", 2);

    assert_eq!(a.try_lock(LOCK), Acquire::Acquired);
    advance_ms(&server, 1000);
    assert_eq!(a.try_lock(LOCK), Acquire::Acquired, "re-entry");
    assert_eq!(flat(&observer.call(&["HGET", LOCK, "uuid-a:1"])), ["2"]);
    assert_eq!(observer.int(&["PTTL", LOCK]), LEASE, "re-entry renews");
    assert_eq!(b.try_lock(LOCK), Acquire::Wait(LEASE));
    b_listener.subscribe(&channel(LOCK));

    advance_ms(&server, 5000);
    assert_eq!(a.unlock(LOCK), Some(0), "one hold remains");
    assert_eq!(flat(&observer.call(&["HGET", LOCK, "uuid-a:1"])), ["1"]);
    assert_eq!(observer.int(&["PTTL", LOCK]), LEASE, "the release renews");
    b_listener.assert_no_message();
    assert_eq!(b.try_lock(LOCK), Acquire::Wait(LEASE));

    assert_eq!(a.unlock(LOCK), Some(1));
    assert_eq!(b_listener.message(), (channel(LOCK), "0".to_string()));
    assert_eq!(
        a.unlock(LOCK),
        None,
        "a third release finds nothing to release"
    );
    b_listener.assert_no_message();
    assert_eq!(b.try_lock(LOCK), Acquire::Acquired);
}

#[test]
fn an_abandoned_lock_is_freed_exactly_when_its_lease_ends_without_a_message() {
    let server = manual_server();
    let addr = server.addr();
    let mut a = Client::connect(addr, "uuid-a:1", 2);
    let mut b = Client::connect(addr, "uuid-b:1", 2);
    let mut b_listener = Client::connect(addr, "uuid-b:listener", 2);

    assert_eq!(a.try_lock(LOCK), Acquire::Acquired);
    drop(a); // A's process dies holding the lock.
    assert_eq!(b.try_lock(LOCK), Acquire::Wait(LEASE));
    b_listener.subscribe(&channel(LOCK));

    advance_ms(&server, LEASE - 1);
    assert_eq!(b.try_lock(LOCK), Acquire::Wait(1));
    advance_ms(&server, 1);
    assert_eq!(
        b.try_lock(LOCK),
        Acquire::Wait(0),
        "still there at its deadline"
    );
    advance_ms(&server, 1);
    assert_eq!(b.try_lock(LOCK), Acquire::Acquired);
    // Nothing announces an expiry: waiters retry after the remaining time they were told.
    b_listener.assert_no_message();
}

#[test]
fn the_watchdog_keeps_a_lock_for_ten_leases_and_it_ends_one_lease_after_renewals_stop() {
    let server = manual_server();
    let addr = server.addr();
    let mut a = Client::connect(addr, "uuid-a:1", 2);
    let mut b = Client::connect(addr, "uuid-b:1", 2);
    let mut observer = Client::connect(addr, "observer", 2);

    assert_eq!(a.try_lock(LOCK), Acquire::Acquired);
    let period = LEASE / 3;
    for round in 0..30 {
        advance_ms(&server, period);
        assert_eq!(
            observer.int(&["PTTL", LOCK]),
            LEASE - period,
            "round {round}"
        );
        assert_eq!(a.renew(LOCK), 1, "round {round}");
        assert_eq!(observer.int(&["PTTL", LOCK]), LEASE, "round {round}");
        assert_eq!(b.try_lock(LOCK), Acquire::Wait(LEASE), "round {round}");
    }
    assert_eq!(flat(&observer.call(&["HGETALL", LOCK])), ["uuid-a:1", "1"]);

    // A's watchdog stops (its process hangs): the lease runs out one lease later.
    advance_ms(&server, LEASE - 1);
    assert_eq!(b.try_lock(LOCK), Acquire::Wait(1));
    advance_ms(&server, 1);
    assert_eq!(observer.int(&["PTTL", LOCK]), 0);
    advance_ms(&server, 1);
    // Nobody touches the key: the active expiry cycle reclaims it.
    eventually("the lapsed lock is reclaimed", || {
        observer.int(&["DBSIZE"]) == 0
    });
    assert_eq!(observer.int(&["PTTL", LOCK]), -2);
    assert_eq!(a.renew(LOCK), 0, "the watchdog learns the lock is lost");
    assert_eq!(b.try_lock(LOCK), Acquire::Acquired);
    assert_eq!(a.renew(LOCK), 0, "and cannot renew B's lock");
    assert_eq!(observer.int(&["PTTL", LOCK]), LEASE);
}

#[test]
fn a_fair_lock_serves_its_waiters_in_arrival_order() {
    let server = manual_server();
    let addr = server.addr();
    let now = || server.clock().now_ms();
    let (queue, timeouts) = fair_keys(LOCK);
    let mut a = Client::connect(addr, "uuid-a:1", 2);
    let mut waiters: Vec<Client> = ["uuid-b:1", "uuid-c:1", "uuid-d:1"]
        .iter()
        .map(|id| Client::connect(addr, id, 2))
        .collect();
    // Each waiter listens on its own channel: the fair release wakes only the head.
    let mut listeners: Vec<Client> = waiters
        .iter()
        .map(|w| {
            let mut l = Client::connect(addr, &format!("{}:listener", w.id), 2);
            l.subscribe(&format!("{}:{}", channel(LOCK), w.id));
            l
        })
        .collect();
    let mut observer = Client::connect(addr, "observer", 2);

    let t0 = now();
    assert_eq!(a.try_fair_lock(LOCK, t0), Acquire::Acquired);
    // Each waiter's estimate: the lock's PTTL for the first, then one wait more per waiter
    // ahead; each waiter's timeout is its estimate + wait from now.
    for (i, w) in waiters.iter_mut().enumerate() {
        let estimate = LEASE + WAIT * i as i64;
        assert_eq!(
            w.try_fair_lock(LOCK, t0),
            Acquire::Wait(estimate),
            "{}",
            w.id
        );
    }
    assert_eq!(
        flat(&observer.call(&["LRANGE", &queue, "0", "-1"])),
        ["uuid-b:1", "uuid-c:1", "uuid-d:1"]
    );
    let mut timeout: Vec<i64> = (0..3).map(|i| t0 + LEASE + WAIT * (i + 1)).collect();
    assert_eq!(
        flat(&observer.call(&["ZRANGE", &timeouts, "0", "-1", "WITHSCORES"])),
        [
            "uuid-b:1".to_string(),
            timeout[0].to_string(),
            "uuid-c:1".to_string(),
            timeout[1].to_string(),
            "uuid-d:1".to_string(),
            timeout[2].to_string()
        ]
    );

    // Each holder releases after a second; the head of the queue is woken and served, while the
    // others, asking first, are told to wait (their timeout less the wait, from now).
    let mut holder = a;
    for served in 0..3 {
        advance_ms(&server, 1000);
        assert_eq!(holder.fair_unlock(LOCK), Some(1));
        assert_eq!(
            listeners[served].message(),
            (
                format!("{}:{}", channel(LOCK), waiters[served].id),
                "0".to_string()
            )
        );
        for listener in &mut listeners[served + 1..] {
            listener.assert_no_message();
        }
        for later in (served + 1..3).rev() {
            assert_eq!(
                waiters[later].try_fair_lock(LOCK, now()),
                Acquire::Wait(timeout[later] - WAIT - now()),
                "{} asks before its turn",
                waiters[later].id
            );
        }
        assert_eq!(
            observer.int(&["EXISTS", LOCK]),
            0,
            "nobody jumped the queue"
        );
        assert_eq!(
            waiters[served].try_fair_lock(LOCK, now()),
            Acquire::Acquired
        );
        // The waiters left move up: their timeouts come earlier by one wait.
        for t in &mut timeout[served + 1..] {
            *t -= WAIT;
        }
        let expected: Vec<String> = (served + 1..3)
            .flat_map(|i| [waiters[i].id.clone(), timeout[i].to_string()])
            .collect();
        assert_eq!(
            flat(&observer.call(&["ZRANGE", &timeouts, "0", "-1", "WITHSCORES"])),
            expected
        );
        let ids: Vec<String> = (served + 1..3).map(|i| waiters[i].id.clone()).collect();
        assert_eq!(flat(&observer.call(&["LRANGE", &queue, "0", "-1"])), ids);
        assert_eq!(
            flat(&observer.call(&["HGETALL", LOCK])),
            [waiters[served].id.clone(), "1".to_string()]
        );
        holder = std::mem::replace(&mut waiters[served], Client::connect(addr, "served", 2));
    }
    assert_eq!(holder.fair_unlock(LOCK), Some(1));
    assert_eq!(observer.int(&["EXISTS", LOCK, &queue, &timeouts]), 0);
}

#[test]
fn a_fair_waiter_whose_wait_timed_out_is_dropped_and_the_next_is_served() {
    let server = manual_server();
    let addr = server.addr();
    let now = || server.clock().now_ms();
    let (queue, timeouts) = fair_keys(LOCK);
    let mut a = Client::connect(addr, "uuid-a:1", 2);
    let mut b = Client::connect(addr, "uuid-b:1", 2);
    let mut c = Client::connect(addr, "uuid-c:1", 2);
    let mut d = Client::connect(addr, "uuid-d:1", 2);
    let mut d_listener = Client::connect(addr, "uuid-d:listener", 2);
    d_listener.subscribe(&format!("{}:uuid-d:1", channel(LOCK)));
    let mut observer = Client::connect(addr, "observer", 2);

    let t0 = now();
    assert_eq!(a.try_fair_lock(LOCK, t0), Acquire::Acquired);
    assert_eq!(b.try_fair_lock(LOCK, t0), Acquire::Wait(LEASE));
    assert_eq!(c.try_fair_lock(LOCK, t0), Acquire::Wait(LEASE + WAIT));
    assert_eq!(d.try_fair_lock(LOCK, t0), Acquire::Wait(LEASE + 2 * WAIT));
    let (tb, tc, td) = (
        t0 + LEASE + WAIT,
        t0 + LEASE + 2 * WAIT,
        t0 + LEASE + 3 * WAIT,
    );

    // B gives up waiting (it stops asking). A releases: B, the head, would be served, but is
    // gone; C may not take the free lock while B's wait has not timed out.
    advance_ms(&server, 1000);
    assert_eq!(a.fair_unlock(LOCK), Some(1));
    assert_eq!(
        c.try_fair_lock(LOCK, now()),
        Acquire::Wait(tc - WAIT - now())
    );
    advance_ms(&server, tb - 1 - now());
    assert_eq!(
        c.try_fair_lock(LOCK, now()),
        Acquire::Wait(tc - WAIT - now()),
        "1 ms before B's timeout"
    );
    assert_eq!(
        flat(&observer.call(&["LRANGE", &queue, "0", "-1"])),
        ["uuid-b:1", "uuid-c:1", "uuid-d:1"]
    );
    assert_eq!(observer.int(&["EXISTS", LOCK]), 0);

    // At B's timeout (by C's clock) B is dropped and C, now the head, acquires.
    advance_ms(&server, 1);
    assert_eq!(c.try_fair_lock(LOCK, now()), Acquire::Acquired);
    assert_eq!(flat(&observer.call(&["HGETALL", LOCK])), ["uuid-c:1", "1"]);
    assert_eq!(
        flat(&observer.call(&["ZRANGE", &timeouts, "0", "-1", "WITHSCORES"])),
        ["uuid-d:1".to_string(), (td - WAIT).to_string()]
    );

    // B comes back: it queues again, at the tail, behind D.
    assert_eq!(
        b.try_fair_lock(LOCK, now()),
        Acquire::Wait(td - WAIT - now())
    );
    assert_eq!(
        flat(&observer.call(&["LRANGE", &queue, "0", "-1"])),
        ["uuid-d:1", "uuid-b:1"]
    );

    assert_eq!(c.fair_unlock(LOCK), Some(1));
    assert_eq!(
        d_listener.message(),
        (format!("{}:uuid-d:1", channel(LOCK)), "0".to_string())
    );
    assert_eq!(
        b.try_fair_lock(LOCK, now()),
        Acquire::Wait(td - WAIT - now()),
        "B still waits behind D"
    );
    assert_eq!(d.try_fair_lock(LOCK, now()), Acquire::Acquired);
    assert_eq!(
        flat(&observer.call(&["LRANGE", &queue, "0", "-1"])),
        ["uuid-b:1"]
    );
}

#[test]
fn a_set_nx_px_lock_renewed_by_compare_and_pexpire_and_released_only_by_its_owner() {
    let server = manual_server();
    let addr = server.addr();
    let mut one = Client::connect(addr, "token-1", 2);
    let mut two = Client::connect(addr, "token-2", 2);
    let set_nx = |c: &mut Client| {
        let token = c.id.clone();
        c.call(&["SET", "resource", &token, "PX", LEASE_ARG, "NX"])
    };

    assert_eq!(set_nx(&mut one), Value::Simple("OK".into()));
    for round in 0..30 {
        advance_ms(&server, LEASE / 3);
        assert_eq!(set_nx(&mut two), Value::Null, "round {round}");
        assert_eq!(
            one.script(COMPARE_AND_PEXPIRE, &["resource"], &["token-1", LEASE_ARG]),
            Value::Integer(1),
            "round {round}"
        );
        assert_eq!(one.int(&["PTTL", "resource"]), LEASE);
    }
    // One's process pauses longer than its lease: two takes the lock, and one's late renewal
    // and release must not touch two's lock.
    advance_ms(&server, LEASE + 1);
    assert_eq!(set_nx(&mut two), Value::Simple("OK".into()));
    assert_eq!(
        one.script(COMPARE_AND_PEXPIRE, &["resource"], &["token-1", LEASE_ARG]),
        Value::Integer(0)
    );
    assert_eq!(
        one.script(COMPARE_AND_DELETE, &["resource"], &["token-1"]),
        Value::Integer(0)
    );
    assert_eq!(
        two.call(&["GET", "resource"]),
        Value::Bulk("token-2".into())
    );
    assert_eq!(
        two.script(COMPARE_AND_DELETE, &["resource"], &["token-2"]),
        Value::Integer(1)
    );
    assert_eq!(two.int(&["EXISTS", "resource"]), 0);
}
