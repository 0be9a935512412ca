//! maxmemory eviction over the wire, on a frozen clock: OBJECT IDLETIME / FREQ under each kind
//! of policy (LFU counters climbing and decaying with the clock), eviction under a small limit
//! with every policy (each one only from its key set, LRU and LFU preferring the cold keys,
//! volatile-ttl the near deadlines), OOM when nothing is evictable, CONFIG SET maxmemory
//! evicting as soon as the event loop is free (not inside a MULTI), and INFO's evicted_keys.
//!
//! Eviction measures memory with the allocator's count, so this test binary installs the same
//! counting allocator as `embedis-server`, and its tests run one at a time (a lock) so that one
//! test's allocations do not count against another's limit.

#[path = "it/support/mod.rs"]
mod support;

use embedis_core::base::alloc::CountingAllocator;
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};
use support::{advance_ms, info_field, text, Conn};

#[global_allocator]
static ALLOCATOR: CountingAllocator<std::alloc::System> = CountingAllocator(std::alloc::System);

static SERIAL: Mutex<()> = Mutex::new(());

/// 2030-01-01T00:00:00Z: whole minutes, so LFU minute arithmetic below is exact.
const START_S: u64 = 1_893_456_000;

fn server() -> embedis::Server {
    support::builder()
        .clock(embedis::Clock::frozen_at(
            UNIX_EPOCH + Duration::from_secs(START_S),
        ))
        .config("enable-debug-command", "yes")
        .unwrap()
        .start()
        .unwrap()
}

fn ok(conn: &mut Conn, args: &[&str]) {
    assert_eq!(text(conn, args), "+OK\r\n", "{args:?}");
}

fn int(conn: &mut Conn, args: &[&str]) -> i64 {
    let reply = text(conn, args);
    reply
        .strip_prefix(':')
        .and_then(|r| r.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("{args:?} answered {reply:?}"))
}

fn info(conn: &mut Conn, field: &str) -> u64 {
    info_field(conn, "everything", field)
        .unwrap_or_else(|| panic!("no {field} in INFO"))
        .parse()
        .unwrap()
}

const LRU_ERROR: &str = "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n";
const LFU_ERROR: &str = "-ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n";

#[test]
fn object_idletime_and_freq_follow_the_policy() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = server();
    let mut c = Conn::connect(server.addr()).unwrap();
    ok(&mut c, &["SET", "k", "v"]);
    advance_ms(&server, 10_000);
    assert_eq!(int(&mut c, &["OBJECT", "IDLETIME", "k"]), 10);
    assert_eq!(text(&mut c, &["OBJECT", "FREQ", "k"]), LRU_ERROR);
    assert_eq!(text(&mut c, &["OBJECT", "FREQ", "nokey"]), "$-1\r\n");

    // LFU: every access counts at factor 0, and the counter loses one per minute at decay 1.
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    ok(&mut c, &["CONFIG", "SET", "lfu-log-factor", "0"]);
    assert_eq!(text(&mut c, &["OBJECT", "IDLETIME", "k"]), LFU_ERROR);
    assert_eq!(text(&mut c, &["OBJECT", "IDLETIME", "nokey"]), "$-1\r\n");
    ok(&mut c, &["SET", "n", "v"]);
    assert_eq!(int(&mut c, &["OBJECT", "FREQ", "n"]), 5, "LFU_INIT_VAL");
    for _ in 0..3 {
        text(&mut c, &["GET", "n"]);
    }
    assert_eq!(
        int(&mut c, &["OBJECT", "FREQ", "n"]),
        8,
        "OBJECT itself is no access"
    );
    advance_ms(&server, 2 * 60_000);
    assert_eq!(int(&mut c, &["OBJECT", "FREQ", "n"]), 6);
    assert_eq!(int(&mut c, &["TOUCH", "n"]), 1);
    assert_eq!(int(&mut c, &["OBJECT", "FREQ", "n"]), 7);
    // DEBUG OBJECT shows the raw 24 bits: access minute and counter.
    let minutes = ((START_S + 10 + 120) / 60) & 0xFFFF;
    let debug = text(&mut c, &["DEBUG", "OBJECT", "n"]);
    assert!(
        debug.contains(&format!(" lru:{} ", (minutes << 8) | 7)),
        "{debug}"
    );
    // Overwriting keeps (and counts) the key's counter under LFU, as Redis's dbOverwrite does.
    ok(&mut c, &["SET", "n", "w"]);
    assert_eq!(int(&mut c, &["OBJECT", "FREQ", "n"]), 8);
    // Decay time 0: no decay however long.
    ok(&mut c, &["CONFIG", "SET", "lfu-decay-time", "0"]);
    advance_ms(&server, 600 * 60_000);
    assert_eq!(int(&mut c, &["OBJECT", "FREQ", "n"]), 8);

    // Back to LRU: the bits are read as a clock again (Redis does not convert them); a new
    // access sets a real clock.
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "volatile-lru"],
    );
    text(&mut c, &["GET", "n"]);
    advance_ms(&server, 3_000);
    assert_eq!(int(&mut c, &["OBJECT", "IDLETIME", "n"]), 3);
    assert_eq!(text(&mut c, &["OBJECT", "FREQ", "n"]), LRU_ERROR);
}

#[test]
fn shared_integers_stop_under_lru_and_lfu_with_maxmemory() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = server();
    let mut c = Conn::connect(server.addr()).unwrap();
    let shared = i32::MAX as i64;
    ok(&mut c, &["SET", "a", "1"]);
    assert_eq!(int(&mut c, &["OBJECT", "REFCOUNT", "a"]), shared);
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "1gb"]);
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
    );
    ok(&mut c, &["SET", "a", "1"]);
    assert_eq!(int(&mut c, &["OBJECT", "REFCOUNT", "a"]), shared);
    for policy in ["allkeys-lru", "volatile-lfu"] {
        ok(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
        ok(&mut c, &["SET", "a", "1"]);
        assert_eq!(int(&mut c, &["OBJECT", "REFCOUNT", "a"]), 1, "{policy}");
    }
}

/// Fills db 0 with `n` cold keys then `n` hot ones (1 KB values; odd ones with a TTL whose
/// deadline grows with the key number), with the hot ones read `reads` times a minute later.
fn fill(server: &embedis::Server, c: &mut Conn, n: usize, reads: usize) {
    ok(c, &["FLUSHALL"]);
    let value = "x".repeat(1000);
    for (prefix, from) in [("cold", 0), ("hot", n)] {
        for i in 0..n {
            let key = format!("{prefix}:{i}");
            if i % 2 == 1 {
                let ttl = (100_000 + from + i).to_string();
                ok(c, &["SET", &key, &value, "EX", &ttl]);
            } else {
                ok(c, &["SET", &key, &value]);
            }
        }
    }
    advance_ms(server, 60_000);
    for _ in 0..reads {
        for i in 0..n {
            text(c, &["GET", &format!("hot:{i}")]);
        }
    }
}

fn survivors(c: &mut Conn, prefix: &str, n: usize) -> Vec<usize> {
    (0..n)
        .filter(|i| int(c, &["EXISTS", &format!("{prefix}:{i}")]) == 1)
        .collect()
}

#[test]
fn each_policy_evicts_from_its_key_set_under_a_small_maxmemory() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = server();
    let mut c = Conn::connect(server.addr()).unwrap();
    ok(&mut c, &["CONFIG", "SET", "maxmemory-samples", "10"]);
    ok(&mut c, &["CONFIG", "SET", "lfu-log-factor", "0"]);
    let n = 200;
    for policy in [
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
        ok(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
        fill(&server, &mut c, n, 3);
        // Not CONFIG RESETSTAT: it frees the commands' latency histograms, and each command's
        // next slow call (64 µs or more) allocates one again (about 24 KB, as Redis allocates
        // its hdr_histogram), which would count against the limit below and evict twice the
        // keys meant.
        let evicted_before = info(&mut c, "evicted_keys") as usize;
        // Room for about 50 keys fewer (of the 100 cold ones with a TTL): evicted before the
        // next command.
        let limit = info(&mut c, "used_memory") - 50 * 1100;
        ok(&mut c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
        let evicted = info(&mut c, "evicted_keys") as usize - evicted_before;
        let used = info(&mut c, "used_memory");
        // About 50 go (a key and its value are a little over 1,000 bytes), not all the cold
        // ones: eviction stops once under the limit. Up to 25 more when CONFIG SET, slowed by
        // its evictions past 64 µs, allocates its latency histogram (about 24 KB) after them,
        // and the next command evicts for that.
        assert!((30..=80).contains(&evicted), "{policy}: {evicted} evicted");
        assert!(used <= limit + 16 * 1024, "{policy}: {used} > {limit}");
        // Under the limit a write goes on working.
        ok(&mut c, &["SET", "after", "1"]);
        // No more evictions while the survivors are counted.
        ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
        let evicted = info(&mut c, "evicted_keys") as usize - evicted_before;
        let cold = survivors(&mut c, "cold", n);
        let hot = survivors(&mut c, "hot", n);
        let after = usize::from(int(&mut c, &["EXISTS", "after"]) == 1);
        assert_eq!(
            2 * n + 1 - cold.len() - hot.len() - after,
            evicted,
            "{policy}: every eviction counted"
        );
        if policy.starts_with("volatile") {
            // Keys without a TTL (the even ones) all stay.
            for (name, kept) in [("cold", &cold), ("hot", &hot)] {
                let even = kept.iter().filter(|i| *i % 2 == 0).count();
                assert_eq!(even, n / 2, "{policy}: {name} persistent keys kept");
            }
        }
        let hot_lost = n - hot.len();
        let cold_lost = n - cold.len();
        if policy.ends_with("lru") || policy.ends_with("lfu") {
            assert!(
                hot_lost * 10 <= cold_lost,
                "{policy}: {hot_lost} hot and {cold_lost} cold keys evicted"
            );
        }
        if policy == "volatile-ttl" {
            // The cold keys' deadlines are the nearest: they go first.
            assert!(hot_lost * 10 <= cold_lost, "{hot_lost} vs {cold_lost}");
            let mean = |v: Vec<usize>| v.iter().sum::<usize>() as f64 / v.len().max(1) as f64;
            let lost = mean((1..n).step_by(2).filter(|i| !cold.contains(i)).collect());
            let kept = mean((1..n).step_by(2).filter(|i| cold.contains(i)).collect());
            assert!(
                lost < kept,
                "near deadlines first: lost {lost} kept {kept} on average"
            );
        }
    }
}

#[test]
fn oom_only_when_nothing_is_evictable() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = server();
    let mut c = Conn::connect(server.addr()).unwrap();
    let value = "x".repeat(1000);
    for i in 0..100 {
        ok(&mut c, &["SET", &format!("k{i}"), &value]);
    }
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "volatile-lru"],
    );
    let limit = info(&mut c, "used_memory") - 20 * 1100;
    ok(&mut c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    let oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    // No key has a TTL: nothing may go, writes that may grow memory are refused.
    assert_eq!(text(&mut c, &["SET", "new", "v"]), oom);
    assert_eq!(text(&mut c, &["SETEX", "new", "100", "v"]), oom);
    assert_eq!(
        text(&mut c, &["GET", "k1"]),
        format!("${}\r\n{value}\r\n", 1000)
    );
    assert_eq!(int(&mut c, &["DEL", "k1"]), 1, "DEL is not denyoom");
    assert_eq!(info(&mut c, "evicted_keys"), 0);
    assert!(info(&mut c, "total_eviction_exceeded_time") < 60_000);
    // A policy that may evict these keys makes room at the next command.
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
    );
    ok(&mut c, &["SET", "new", "v"]);
    assert!(info(&mut c, "evicted_keys") > 0);
    assert_eq!(info(&mut c, "current_eviction_exceeded_time"), 0);
    // noeviction refuses too.
    ok(&mut c, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "1"]);
    assert_eq!(text(&mut c, &["SET", "new", "v"]), oom);
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    ok(&mut c, &["SET", "new", "v"]);
}

#[test]
fn lazy_eviction_frees_big_values_in_the_background() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = server();
    let mut c = Conn::connect(server.addr()).unwrap();
    ok(&mut c, &["CONFIG", "SET", "lazyfree-lazy-eviction", "yes"]);
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    );
    let before = info(&mut c, "used_memory");
    let members: Vec<String> = (0..500).map(|i| format!("member-{i}")).collect();
    for k in 0..40 {
        let mut args = vec!["SADD".to_string(), format!("set{k}")];
        args.extend(members.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(int(&mut c, &args), 500);
    }
    let used = info(&mut c, "used_memory");
    let limit = used - (used - before) / 2;
    ok(&mut c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    // The background thread frees what eviction handed it; commands see memory come down.
    support::eventually("memory under the limit", || {
        text(&mut c, &["PING"]);
        info(&mut c, "used_memory") <= limit + 16 * 1024
    });
    // How many go depends on how soon the background thread runs (eviction checks the total
    // every 16 keys), so only the bounds are certain.
    let evicted = info(&mut c, "evicted_keys");
    assert!((1..=40).contains(&evicted), "{evicted}");
    assert_eq!(int(&mut c, &["DBSIZE"]), 40 - evicted as i64);
}

/// Redis's unit/maxmemory "is the memory limit honoured?": small keys with a TTL up to 100 KB
/// over the memory at the start, then as many again. A key's entry lives in a slab chunk of
/// its table, so evicting one frees no allocation, and past 256 or 512 keys a chunk for as many
/// more arrives at once: counted as used, the first eviction after it emptied the database
/// and every write after that was refused (OOM, DBSIZE 0). The tables' idle slots now count as
/// free memory, as the allocator's free chunks do in Redis.
#[test]
fn the_limit_holds_for_small_keys_through_table_growth() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = server();
    let mut c = Conn::connect(server.addr()).unwrap();
    // No per-command latency histogram allocated mid-test (24 KB on a command's first slow
    // call), which would count against the 4 KB margin below.
    ok(&mut c, &["CONFIG", "SET", "latency-tracking", "no"]);
    for policy in [
        "allkeys-random",
        "allkeys-lru",
        "volatile-lru",
        "volatile-ttl",
    ] {
        ok(&mut c, &["FLUSHALL"]);
        ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
        let limit = info(&mut c, "used_memory") + 100 * 1024;
        ok(&mut c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
        ok(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
        let mut added = 0;
        let setex = |c: &mut Conn, i: usize| {
            ok(c, &["SETEX", &format!("key:{i:012}"), "10000", "x"]);
        };
        while info(&mut c, "used_memory") + 4096 <= limit {
            setex(&mut c, added);
            added += 1;
        }
        assert!(added > 600, "{policy}: only {added} keys in 100 KB");
        for i in 0..added {
            setex(&mut c, added + i);
        }
        let used = info(&mut c, "used_memory");
        assert!(used < limit + 4096, "{policy}: {used} over {limit}");
        let kept = int(&mut c, &["DBSIZE"]) as usize;
        assert!(kept * 2 > added, "{policy}: {kept} of {added} keys kept");
    }
}

/// Ten clients track 300 keys with 1,000-byte names, then every key is deleted: each client
/// is sent 300 invalidations (about 300 KB). Once they are written, the buffers that carried
/// them are given back, as Redis frees a reply's blocks once written: kept (each connection
/// kept up to three buffers of such a burst), they held about 4.7 MB counted in used_memory,
/// which eviction then took from the keys (Redis's unit/maxmemory "client tracking don't cause
/// eviction feedback loop" drained the database).
#[test]
fn a_burst_of_invalidations_does_not_stay_allocated() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = server();
    let mut c = Conn::connect(server.addr()).unwrap();
    ok(&mut c, &["CONFIG", "SET", "latency-tracking", "no"]);
    let mut trackers: Vec<Conn> = (0..10)
        .map(|_| {
            let mut t = Conn::connect(server.addr()).unwrap();
            text(&mut t, &["HELLO", "3"]);
            ok(&mut t, &["CLIENT", "TRACKING", "on"]);
            t
        })
        .collect();
    let keys: Vec<String> = (0..300)
        .map(|j| format!("{j}{}", "x".repeat(1000)))
        .collect();
    for key in &keys {
        ok(&mut c, &["SET", key, "x"]);
        for t in &mut trackers {
            text(t, &["GET", key]);
        }
    }
    let before = info(&mut c, "used_memory");
    for key in &keys {
        assert_eq!(int(&mut c, &["DEL", key]), 1);
    }
    // The keys' memory is gone too, so once the invalidations are written memory is under
    // what it was.
    support::eventually("the invalidations' buffers given back", || {
        info(&mut c, "used_memory") < before
    });
}

/// Clients whose replies pile up (they send MGETs of a 100 KB value and never read) are
/// evicted under `maxmemory-clients` before any key is, as Redis's unit/maxmemory "eviction due
/// to output buffers of many MGET clients, client eviction: true" expects: keys take 5 MB, the
/// limit is 11 MB and the clients may use 3 MB. Keys went first while a slow reader's held
/// output counted its bytes, not the buffer they sat in (two to three times more), and while
/// evicted clients' output still counted until their connections had closed.
#[test]
fn clients_piling_up_replies_are_evicted_before_keys() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = server();
    let mut c = Conn::connect(server.addr()).unwrap();
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    );
    ok(&mut c, &["CLIENT", "NO-EVICT", "on"]);
    for j in 0..50 {
        let key = j.to_string();
        assert_eq!(int(&mut c, &["SETRANGE", &key, "100000", "x"]), 100_001);
    }
    let limit = (info(&mut c, "used_memory") + 6 * 1024 * 1024).to_string();
    ok(&mut c, &["CONFIG", "SET", "maxmemory", &limit]);
    ok(&mut c, &["CONFIG", "SET", "maxmemory-clients", "3mb"]);
    let mut readers: Vec<std::net::TcpStream> = (0..20)
        .map(|_| {
            let s = std::net::TcpStream::connect(server.addr()).unwrap();
            s.set_nonblocking(true).unwrap();
            s
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while info(&mut c, "evicted_clients") == 0 && std::time::Instant::now() < deadline {
        for r in &mut readers {
            // A full socket (or one closed by its eviction) only skips the round.
            let _ = std::io::Write::write(r, b"*2\r\n$4\r\nMGET\r\n$1\r\n1\r\n");
        }
    }
    assert!(info(&mut c, "evicted_clients") > 0, "no client evicted");
    assert_eq!(info(&mut c, "evicted_keys"), 0);
    assert_eq!(int(&mut c, &["DBSIZE"]), 50);
}
