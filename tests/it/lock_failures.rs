//! The source documents' five lock-failure stories, played by real lock code against embedis:
//! lease expiry without a watchdog, the watchdog, Redlock's majority over five nodes, a process
//! pause, and clock drift. Each test asserts the outcome the documents predict — including the
//! unsafe ones (two clients holding the lock at once), which is what a lock client's own tests
//! need a backend to reproduce on demand.
//!
//! The lock clients are ours (tests/it/support/locks.rs): a `SET NX PX` lock released by
//! compare-and-delete, and a Redlock client written from the published algorithm. Time moves only
//! when a test advances a manual clock — the servers' and, for Redlock, the client's own — so
//! every lease, validity time and expiry is exact and each test runs in milliseconds. The only
//! waits are bounded polls for a request to reach a server.

use crate::support;

use embedis::{Clock, Nodes};
use std::time::Duration;
use support::locks::{Attempt, Lock, Redlock, COMPARE_AND_DELETE};
use support::{eventually, held_commands, manual_server};

const LOCK: &str = "lock:orders";
/// The lease (single-instance lock) and TTL (Redlock) of every story.
const TTL: i64 = 10_000;
/// Redlock's drift allowance for [`TTL`]: 1% of it plus 2 ms.
const DRIFT: i64 = TTL / 100 + 2;

fn ms(n: i64) -> Duration {
    Duration::from_millis(n.try_into().expect("a duration is not negative"))
}

/// The Redlock client's own clock: a manual clock frozen at the nodes' starting instant.
fn client_clock(nodes: &Nodes) -> Clock {
    Clock::frozen_at(nodes[0].clock().now())
}

/// Lets `n` ms pass for the clients and then for the nodes (each node at its own rate), so that
/// a client that receives a reply released by the advance already reads the later time.
fn advance(clock: &Clock, nodes: &Nodes, n: i64) {
    clock.advance(ms(n));
    nodes.advance(ms(n));
}

/// Which token each node's copy of the lock holds.
fn holders(nodes: &Nodes) -> Vec<Option<String>> {
    nodes
        .iter()
        .map(|n| n.get(LOCK).map(|v| String::from_utf8(v).unwrap()))
        .collect()
}

fn held_by(tokens: &[Option<&str>]) -> Vec<Option<String>> {
    tokens.iter().map(|t| t.map(str::to_string)).collect()
}

// ---- 1. Lease expiry without a watchdog ----

/// Client 1 takes a 10 s lease and then works longer than that — a slow job, or a client
/// process stalled by GC. Nothing extends the lease: the key is still there at its last
/// millisecond, gone one millisecond later, and client 2 takes the lock while client 1 still
/// believes it holds it. When client 1 finishes, its release is a compare-and-delete, which sees
/// another token, answers 0 and leaves client 2's lock alone.
#[test]
fn a_holder_working_past_its_lease_loses_the_lock_and_its_late_release_spares_the_new_owner() {
    let server = manual_server();
    let mut one = Lock::connect(server.addr(), LOCK, "client-1");
    let mut two = Lock::connect(server.addr(), LOCK, "client-2");
    assert!(one.acquire(TTL));

    server.clock().advance(ms(TTL));
    assert!(!two.acquire(TTL), "held to the end of its lease");
    server.clock().advance(ms(1));
    assert!(two.acquire(TTL), "the lease ran out under client 1");

    assert_eq!(
        one.release(),
        0,
        "client 1's late release finds another token"
    );
    assert_eq!(server.get(LOCK), Some(b"client-2".to_vec()));
    assert_eq!(server.pttl(LOCK), TTL);
}

// ---- 2. The watchdog ----

/// A watchdog renews the lease every lease/3 with compare-and-pexpire while its holder works:
/// the lock survives ten leases' worth of time and nobody else gets it. When the watchdog stops
/// (the holder's process hangs) the lock expires one lease after the last renewal, and the
/// watchdog's next renewal answers 0: the lock is lost. (tests/it/redisson_locks.rs tells the same
/// story with Redisson's hash lock and renew.lua.)
#[test]
fn a_watchdog_renewing_every_third_of_the_lease_keeps_the_lock_until_it_stops() {
    let server = manual_server();
    let mut holder = Lock::connect(server.addr(), LOCK, "client-1");
    let mut other = Lock::connect(server.addr(), LOCK, "client-2");
    assert!(holder.acquire(TTL));
    for round in 0..30 {
        server.clock().advance(ms(TTL / 3));
        assert!(!other.acquire(TTL), "round {round}");
        assert_eq!(holder.extend(TTL), 1, "round {round}");
        assert_eq!(server.pttl(LOCK), TTL);
    }

    server.clock().advance(ms(TTL));
    assert!(!other.acquire(TTL), "one lease after the last renewal");
    server.clock().advance(ms(1));
    assert!(other.acquire(TTL));
    assert_eq!(
        holder.extend(TTL),
        0,
        "the watchdog learns the lock is lost"
    );
    assert_eq!(server.get(LOCK), Some(b"client-2".to_vec()));
}

// ---- 3. Redlock's majority ----

/// Redlock over five nodes tolerates two failures: three of five grant the lock (a majority),
/// and with the nodes answering at once the validity is the TTL less the drift allowance. The
/// release goes to all five: the three that hold the key delete it, the two others answer 0.
#[test]
fn redlock_acquires_on_three_of_five_nodes_while_two_fail() {
    let nodes = Nodes::start_with(5, support::with_dir).unwrap();
    for i in [3, 4] {
        nodes[i].faults().error("set", "*", "ERR injected", 0);
    }
    let clock = client_clock(&nodes);
    let mut client = Redlock::connect(&nodes.addrs(), clock.clone());
    let attempt = client.acquire(LOCK, "client-1", TTL);
    assert_eq!(
        attempt,
        Attempt {
            acquired: true,
            successes: 3,
            elapsed_ms: 0,
            validity_ms: TTL - DRIFT,
            valid_until_ms: clock.now_ms() + TTL - DRIFT,
        }
    );
    let one = Some("client-1");
    assert_eq!(holders(&nodes), held_by(&[one, one, one, None, None]));
    assert!(client.still_valid(&attempt));

    assert_eq!(
        client.release(LOCK, "client-1"),
        [Some(1), Some(1), Some(1), Some(0), Some(0)]
    );
    assert_eq!(holders(&nodes), held_by(&[None; 5]));
}

/// With three of five nodes failing, the two that grant the lock are no majority: the attempt
/// fails and releases what it took at once, so the two keys do not block other clients for the
/// TTL. (The nodes' clocks have not moved: the keys are gone because the client deleted them.)
#[test]
fn redlock_fails_with_three_of_five_nodes_failing_and_releases_what_it_took() {
    let nodes = Nodes::start_with(5, support::with_dir).unwrap();
    for i in [2, 3, 4] {
        nodes[i].faults().error("set", "*", "ERR injected", 1);
    }
    let mut client = Redlock::connect(&nodes.addrs(), client_clock(&nodes));
    let attempt = client.acquire(LOCK, "client-1", TTL);
    assert!(!attempt.acquired, "{attempt:?}");
    assert_eq!(attempt.successes, 2);
    assert_eq!(holders(&nodes), held_by(&[None; 5]));

    // The faults are spent: the nodes are free for the next client at once.
    let mut other = Redlock::connect(&nodes.addrs(), client_clock(&nodes));
    let attempt = other.acquire(LOCK, "client-2", TTL);
    assert!(attempt.acquired && attempt.successes == 5, "{attempt:?}");
}

/// A majority that answers too late is no lock: three nodes hold their replies for 9,950 ms
/// (network delay), so every node granted the lock but the acquisition took 9,950 ms of the
/// client's clock and the validity (10,000 − 9,950 − 102) is negative. The client treats the
/// attempt as failed and releases on every node — the keys are gone from all five while their
/// TTL still had 50 ms to run.
#[test]
fn redlock_acquisition_slower_than_the_validity_time_fails_and_releases_on_every_node() {
    let nodes = Nodes::start_with(5, support::with_dir).unwrap();
    let start = nodes[0].clock().now_ms();
    for i in [2, 3, 4] {
        nodes[i].faults().latency("set", "*", ms(9_950));
    }
    let clock = client_clock(&nodes);
    let mut client = Redlock::connect(&nodes.addrs(), clock.clone());
    let attempt = std::thread::scope(|s| {
        let acquiring = s.spawn(|| client.acquire(LOCK, "client-1", TTL));
        // Each SET runs at once; the three slow nodes hold their replies until their clocks
        // have moved 9,950 ms.
        eventually("the SET reached every node", || {
            nodes.iter().all(|n| n.exists(LOCK))
        });
        advance(&clock, &nodes, 9_950);
        acquiring.join().unwrap()
    });
    assert_eq!(
        attempt,
        Attempt {
            acquired: false,
            successes: 5,
            elapsed_ms: 9_950,
            validity_ms: TTL - 9_950 - DRIFT,
            valid_until_ms: start + TTL - DRIFT,
        }
    );
    assert_eq!(holders(&nodes), held_by(&[None; 5]));
    for node in &nodes {
        assert_eq!(node.clock().now_ms() - start, 9_950, "before the TTL");
    }
}

// ---- 4. Process pause ----

/// Plays the pause story against one node and returns what client 2's acquire answered, what
/// client 1's release answered, and who holds the lock afterwards. Client 1 holds the lock; the
/// node then pauses (as a process in a long GC pause does: it accepts connections and reads
/// nothing) for longer than the lease. Client 2's acquire arrives during the pause, then client
/// 1's release; when the pause ends the node runs them in that order.
fn pause_story(naive_release: bool) -> (bool, i64, Option<Vec<u8>>) {
    let server = manual_server();
    // Client 1's library loaded its release script earlier, so EVALSHA finds it.
    server.command(&["SCRIPT", "LOAD", COMPARE_AND_DELETE]);
    let mut one = Lock::connect(server.addr(), LOCK, "client-1");
    assert!(one.acquire(TTL));
    server.faults().pause(ms(TTL + 5_000));
    let mut two = Lock::connect(server.addr(), LOCK, "client-2");
    two.send_acquire(TTL);
    // The direct helpers run on the server's thread even while it is paused: CLIENT LIST shows
    // each request parked (flags=b) with its command, as Redis shows a client postponed by
    // CLIENT PAUSE. Client 1 sends its release only once client 2's request is queued.
    eventually("client 2's SET is queued", || {
        held_commands(&server) == ["set"]
    });
    let release = if naive_release {
        one.send_naive_release();
        "del"
    } else {
        one.send_release();
        "evalsha"
    };
    eventually("client 1's release is queued", || {
        let mut parked = held_commands(&server);
        parked.sort();
        parked == ["set", release] || parked == [release, "set"]
    });
    assert_eq!(server.get(LOCK), Some(b"client-1".to_vec()), "nothing ran");

    server.clock().advance(ms(TTL + 5_000));
    let acquired = two.read_acquire();
    let released = if naive_release {
        one.read_naive_release()
    } else {
        one.read_release()
    };
    (acquired, released, server.get(LOCK))
}

/// A node paused past the lease: when it resumes, client 2's queued acquire runs first and
/// succeeds (the lease expired on the node's clock during the pause), then client 1's
/// compare-and-delete release runs, sees client 2's token, answers 0 and leaves client 2's lock.
#[test]
fn after_a_pause_past_the_lease_a_compare_and_delete_release_spares_the_new_owners_lock() {
    let (acquired, released, holder) = pause_story(false);
    assert!(acquired, "client 2 acquires when the pause ends");
    assert_eq!(released, 0);
    assert_eq!(holder, Some(b"client-2".to_vec()));
}

/// The same schedule with a naive `DEL` release: client 1 deletes client 2's lock, which is why
/// the documents release by compare-and-delete.
#[test]
fn after_a_pause_past_the_lease_a_naive_del_release_deletes_the_new_owners_lock() {
    let (acquired, released, holder) = pause_story(true);
    assert!(acquired);
    assert_eq!(released, 1, "DEL deleted a key: client 2's");
    assert_eq!(holder, None);
}

// ---- 5. Clock drift ----

/// Kleppmann's schedule up to its turning point: five nodes A–E (0–4), C's clock running at
/// `c_rate`, and client 1 holding a Redlock on A, B and C — D and E were unreachable for its
/// attempt (their SET failed once). Returns the nodes, the clients' clock, both clients and
/// client 1's attempt.
fn client_one_holds_a_b_and_c(c_rate: f64) -> (Nodes, Clock, Redlock, Redlock, Attempt) {
    let nodes = Nodes::start_with(5, support::with_dir).unwrap();
    assert!(nodes[2].clock().set_rate(c_rate));
    for i in [3, 4] {
        nodes[i].faults().error("set", "*", "ERR unreachable", 1);
    }
    let clock = client_clock(&nodes);
    let mut one = Redlock::connect(&nodes.addrs(), clock.clone());
    let two = Redlock::connect(&nodes.addrs(), clock.clone());
    let held = one.acquire(LOCK, "client-1", TTL);
    assert!(held.acquired && held.successes == 3, "{held:?}");
    let one_ = Some("client-1");
    assert_eq!(holders(&nodes), held_by(&[one_, one_, one_, None, None]));
    (nodes, clock, one, two, held)
}

/// Clock drift breaks Redlock's safety: C's clock runs 5% fast, so its copy of client 1's key
/// expires after 9,524 ms of real time. At 9,600 ms client 2 acquires on C, D and E (A and B
/// still refuse: they hold client 1's key) — a majority — while client 1's validity, 9,898 ms on
/// its own correct clock, has 298 ms to go. Both clients hold the lock.
#[test]
fn a_node_clock_running_fast_lets_two_clients_hold_a_redlock_majority_at_once() {
    let (nodes, clock, one, mut two, held) = client_one_holds_a_b_and_c(1.05);
    assert_eq!(held.validity_ms, TTL - DRIFT);
    advance(&clock, &nodes, 9_600);
    let second = two.acquire(LOCK, "client-2", TTL);
    assert!(second.acquired && second.successes == 3, "{second:?}");
    assert!(one.still_valid(&held), "client 1's validity has not ended");
    let (one_, two_) = (Some("client-1"), Some("client-2"));
    assert_eq!(holders(&nodes), held_by(&[one_, one_, two_, two_, two_]));
}

/// The window closes when drift stays within the algorithm's allowance: with C running 1% fast
/// (the drift factor), C's copy of client 1's key outlives client 1's validity time. Client 2
/// tries every 100 ms, then every millisecond of the validity's last 50 ms, and fails each time;
/// it acquires only after client 1's validity has ended.
#[test]
fn a_node_clock_drifting_within_the_allowance_cannot_let_a_second_client_in_during_validity() {
    let (nodes, clock, one, mut two, held) = client_one_holds_a_b_and_c(1.0 + 0.01);
    let validity = held.validity_ms;
    let mut checkpoints: Vec<i64> = (100..validity - 50).step_by(100).collect();
    checkpoints.extend(validity - 50..validity);
    let mut now = 0;
    for t in checkpoints {
        advance(&clock, &nodes, t - now);
        now = t;
        assert!(one.still_valid(&held), "at {t} ms");
        let attempt = two.acquire(LOCK, "client-2", TTL);
        assert!(!attempt.acquired, "at {t} ms: {attempt:?}");
        assert_eq!(nodes[2].get(LOCK), Some(b"client-1".to_vec()), "at {t} ms");
    }

    // Client 1's validity is over; C drops its key a few milliseconds later.
    loop {
        advance(&clock, &nodes, 1);
        now += 1;
        assert!(!one.still_valid(&held));
        if two.acquire(LOCK, "client-2", TTL).acquired {
            break;
        }
        assert!(now < validity + 10, "C never let client 2 in");
    }
    assert!(
        now > validity,
        "acquired at {now} ms, validity {validity} ms"
    );
}
