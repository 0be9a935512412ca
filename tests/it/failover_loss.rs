//! Locks lost at failover, measured on embedis-server and on redis-server 7.0 under the same
//! schedule (issue 32): a primary with two replicas and three real redis-sentinels, lock clients
//! taking `SET lock NX PX` locks and releasing them with the compare-and-delete script (two of
//! the four clients `WAIT 1` after each acquisition), the replication links held, then released
//! or not, and the primary's process stopped (SIGSTOP) until the sentinels promote a replica;
//! then the old primary continues (SIGCONT) and the sentinels demote it.
//!
//! Both servers run as processes and meet the same two mechanisms, neither of which they know
//! of: a proxy of the test's own holds the replication links ([`LinkProxy`]), and the primary
//! stops as a process does in a long GC pause or a stalled VM. The schedule is sequential (the
//! test thread drives the clients in turn), so the order in which writes were acknowledged is
//! the order the primary applied them, and the counts are the same on every run:
//!
//! - a write is *acknowledged* when the primary answered it (`+OK` to the SET, 1 from the
//!   release script), *WAIT-acknowledged* when `WAIT 1` after it answered at least 1;
//! - the new primary must hold the state after some prefix of the acknowledged writes (a
//!   replica applies its primary's stream in order); the longest prefix that matches every
//!   lock key there is what survived, and the writes after it are *lost*. A state that matches
//!   no prefix fails the test: that would be a replica applying writes out of order.
//!
//! What must hold: embedis loses no WAIT-acknowledged write, and no more writes than Redis on
//! the same schedule. The figures are printed and quoted in the README's reliability section.
//!
//! The tests take the sentinel module's lock: three sentinels on a 1 s down-after period each,
//! whose timing another sentinel test running at the same time would stretch.

use crate::sentinel::{self, Sentinels};
use crate::support;
use support::link_proxy::LinkProxy;
use support::locks::Lock;
use support::{field, text, Conn, RedisServer};

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const EMBEDIS: &str = env!("CARGO_BIN_EXE_embedis-server");

/// Leases far longer than a run, so that no lock expires and every state comes from writes.
const LEASE_MS: i64 = 600_000;
/// Lock clients, the last [`WAITING`] of them calling `WAIT 1` after each acquisition.
const CLIENTS: usize = 4;
const WAITING: usize = 2;
/// Acquire-and-release rounds per client before the hold, and while the links are held.
const STEADY_ROUNDS: usize = 10;
const HELD_ROUNDS: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Embedis,
    Redis,
}

/// What happens to the held links before the primary stops.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Links {
    /// They stay held: the writes made meanwhile reach no replica.
    StayHeld,
    /// Both are released while the waiting clients' last `WAIT 1` is blocked, and the replicas
    /// catch up before the primary stops.
    Released,
    /// Only the first replica's link is released, as above; the sentinels see that replica
    /// ahead of the other before the primary stops.
    OneReleased,
}

impl Links {
    /// The replicas whose links are released, of the group's two.
    fn released(self) -> usize {
        match self {
            Links::StayHeld => 0,
            Links::Released => 2,
            Links::OneReleased => 1,
        }
    }
}

/// One acknowledged write: the lock key, the token an acquisition set (None for a release),
/// and what the `WAIT 1` after it answered (None when the client did not wait).
#[derive(Debug)]
struct Write {
    key: String,
    token: Option<String>,
    waited: Option<i64>,
}

/// The acknowledged writes, in the order the primary acknowledged them.
#[derive(Default)]
struct Ledger {
    writes: Vec<Write>,
}

/// A run's figures: writes acknowledged and lost, and among the waiting clients' acquisitions
/// those WAIT acknowledged (answered ≥ 1) and those it answered 0 to — the warning a lock
/// client can heed.
#[derive(Debug, Default, PartialEq, Clone, Copy)]
struct Figures {
    acked: usize,
    lost: usize,
    wait_acked: usize,
    wait_acked_lost: usize,
    wait_zero: usize,
    wait_zero_lost: usize,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "writes acknowledged {}, lost {}; WAIT-acknowledged {}, lost {}; WAIT answered 0 {}, lost {}",
            self.acked,
            self.lost,
            self.wait_acked,
            self.wait_acked_lost,
            self.wait_zero,
            self.wait_zero_lost
        )
    }
}

impl Ledger {
    fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.writes.iter().map(|w| w.key.clone()).collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Each key's value after the first `prefix` writes (absent keys left out).
    fn state_after(&self, prefix: usize) -> BTreeMap<&str, &str> {
        let mut state = BTreeMap::new();
        for write in &self.writes[..prefix] {
            match &write.token {
                Some(token) => state.insert(write.key.as_str(), token.as_str()),
                None => state.remove(write.key.as_str()),
            };
        }
        state
    }

    /// How many writes survived on a server whose lock keys hold `found`: the longest prefix of
    /// the writes whose state is `found`; None if no prefix's is.
    fn survivors(&self, found: &BTreeMap<String, String>) -> Option<usize> {
        let found: BTreeMap<&str, &str> = found
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        (0..=self.writes.len())
            .rev()
            .find(|&prefix| self.state_after(prefix) == found)
    }

    /// The figures against `found`, every lock key's value on the new primary (see the module
    /// documentation).
    fn count(&self, found: &BTreeMap<String, String>) -> Figures {
        let survived = self.survivors(found).unwrap_or_else(|| {
            panic!("the new primary's locks {found:?} are no prefix of the writes acknowledged")
        });
        let mut figures = Figures {
            acked: self.writes.len(),
            lost: self.writes.len() - survived,
            ..Figures::default()
        };
        for (i, write) in self.writes.iter().enumerate() {
            let lost = usize::from(i >= survived);
            match write.waited {
                Some(n) if n >= 1 => {
                    figures.wait_acked += 1;
                    figures.wait_acked_lost += lost;
                }
                Some(_) => {
                    figures.wait_zero += 1;
                    figures.wait_zero_lost += lost;
                }
                None => {}
            }
        }
        figures
    }
}

/// One lock client: its connection to the primary, its next key, and the lock it holds.
struct Client {
    lock: Lock,
    id: usize,
    waits: bool,
    next: usize,
    held: Option<(String, String)>,
}

impl Client {
    fn connect(primary: SocketAddr, id: usize) -> Client {
        Client {
            lock: Lock::connect(primary, "", ""),
            id,
            waits: id >= CLIENTS - WAITING,
            next: 0,
            held: None,
        }
    }

    /// Takes a fresh lock (`lock:<client>:<n>`, a token of its own) and records it; a waiting
    /// client then waits `wait_ms` for one replica, unless `wait_ms` is None (the caller sends
    /// the WAIT itself).
    fn acquire(&mut self, ledger: &mut Ledger, wait_ms: Option<i64>) {
        let key = format!("lock:{}:{}", self.id, self.next);
        let token = format!("token-{}-{}", self.id, self.next);
        self.next += 1;
        self.lock.key = key.clone();
        self.lock.token = token.clone();
        assert!(self.lock.acquire(LEASE_MS), "{key} is free");
        let waited = match (self.waits, wait_ms) {
            (true, Some(ms)) => {
                self.lock.send_wait(1, ms);
                Some(self.lock.read_wait())
            }
            _ => None,
        };
        ledger.writes.push(Write {
            key: key.clone(),
            token: Some(token.clone()),
            waited,
        });
        self.held = Some((key, token));
    }

    /// Releases the lock it holds with the compare-and-delete script and records the release.
    fn release(&mut self, ledger: &mut Ledger) {
        let (key, token) = self.held.take().expect("a lock to release");
        self.lock.key = key.clone();
        self.lock.token = token;
        assert_eq!(self.lock.release(), 1, "{key} was ours");
        ledger.writes.push(Write {
            key,
            token: None,
            waited: None,
        });
    }
}

/// A primary, two replicas linked through the proxy, and the sentinels watching the proxy's
/// address. The sentinels go first on drop: a stopped primary is killed as it is.
struct Group {
    sentinels: Option<Sentinels>,
    proxy: LinkProxy,
    primary: RedisServer,
    replicas: Vec<RedisServer>,
}

/// Starts one server of `kind`. Both kinds start a full sync at once: Redis's default
/// `repl-diskless-sync-delay` of 5 s (embedis accepts it but does not wait) would add 5 s to
/// Redis's runs at the start and again when the old primary resynchronises.
fn start_server(kind: Kind, test: &str, extra: &[&str]) -> Option<RedisServer> {
    let mut args = vec!["--repl-diskless-sync-delay", "0"];
    args.extend_from_slice(extra);
    match kind {
        Kind::Redis => RedisServer::start(test, &args),
        Kind::Embedis => {
            args.extend(["--compat-version", "7.0"]);
            Some(RedisServer::start_binary(EMBEDIS, test, &args))
        }
    }
}

fn info(addr: SocketAddr, section: &str) -> String {
    sentinel::strings(addr, &["INFO", section]).concat()
}

/// Waits up to 10 s for `done`.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Group {
    /// Starts the servers of `kind` and the sentinels; None (a loud skip) when a binary is
    /// missing and EMBEDIS_REQUIRE_REDIS is not set.
    fn start(kind: Kind, test: &str) -> Option<Group> {
        let primary = start_server(kind, test, &[])?;
        let proxy = LinkProxy::start(primary.addr());
        let port = proxy.addr().port().to_string();
        let replicas = (0..2)
            .map(|_| start_server(kind, test, &["--replicaof", "127.0.0.1", &port]))
            .collect::<Option<Vec<_>>>()?;
        for replica in &replicas {
            wait_until("the replica's link", || {
                field(&info(replica.addr(), "replication"), "master_link_status") == "up"
            });
        }
        let sentinels = Sentinels::start_with(test, proxy.addr(), "")?;
        sentinels.wait_until_settled();
        Some(Group {
            sentinels: Some(sentinels),
            proxy,
            primary,
            replicas,
        })
    }

    fn sentinels(&self) -> &Sentinels {
        self.sentinels.as_ref().unwrap()
    }

    /// Writes a key of its own and waits until `replicas` replicas acknowledge it: the stream
    /// is in order, so every write before it is on them then.
    fn barrier(&self, replicas: usize) {
        let mut c = Conn::connect(self.primary.addr()).unwrap();
        let n = replicas.to_string();
        assert_eq!(text(&mut c, &["SET", "barrier", "1"]), "+OK\r\n");
        assert_eq!(text(&mut c, &["WAIT", &n, "10000"]), format!(":{n}\r\n"));
    }

    /// Waits until every sentinel has seen the first replica's offset ahead of the second's
    /// (SENTINEL REPLICAS' `slave-repl-offset`, from the replicas' INFO): the offset is how a
    /// sentinel chooses the replica to promote.
    fn wait_until_sentinels_see_the_first_ahead(&self) {
        let (first, second) = (self.replicas[0].port, self.replicas[1].port);
        let sentinels = self.sentinels();
        sentinels.wait_for("the sentinels to see the first replica ahead", 10, || {
            sentinels.addrs().iter().all(|&addr| {
                let offsets = replica_offsets(addr);
                matches!(
                    (offsets.get(&first), offsets.get(&second)),
                    (Some(a), Some(b)) if a > b
                )
            })
        });
    }

    fn hold_links(&self) {
        for replica in &self.replicas {
            self.proxy.hold(replica.port);
        }
    }

    /// Releases the first `count` replicas' links.
    fn release_links(&self, count: usize) {
        for replica in &self.replicas[..count] {
            self.proxy.release(replica.port);
        }
    }

    fn signal_primary(&self, signal: i32) {
        // SAFETY: a signal to a child process this test started.
        let sent = unsafe { libc::kill(self.primary.pid() as i32, signal) };
        assert_eq!(sent, 0, "signal {signal} to the primary");
    }

    /// Every lock key's value on the server at `addr` (present keys only).
    fn locks_on(addr: SocketAddr, keys: &[String]) -> BTreeMap<String, String> {
        let mut c = Conn::connect(addr).unwrap();
        let mut found = BTreeMap::new();
        for key in keys {
            let reply = c.command(&["GET", key.as_str()]);
            let value = support::lossy(&reply);
            if let Some(body) = value.strip_prefix('$').filter(|v| !v.starts_with("-1")) {
                let token = body.split("\r\n").nth(1).unwrap().to_string();
                found.insert(key.clone(), token);
            }
        }
        found
    }
}

/// Each replica's `slave-repl-offset` as the sentinel at `addr` knows it, by port.
fn replica_offsets(addr: SocketAddr) -> BTreeMap<u16, u64> {
    let fields = sentinel::strings(addr, &["SENTINEL", "REPLICAS", sentinel::NAME]);
    let mut offsets = BTreeMap::new();
    let mut port = 0;
    for pair in fields.chunks(2) {
        match pair {
            [name, value] if name == "port" => port = value.parse().unwrap_or(0),
            [name, value] if name == "slave-repl-offset" => {
                offsets.insert(port, value.parse().unwrap_or(0));
            }
            _ => {}
        }
    }
    offsets
}

impl Drop for Group {
    fn drop(&mut self) {
        drop(self.sentinels.take());
        // A primary left stopped by a failed assertion is killed stopped; nothing to undo.
    }
}

/// The workload before the hold: every client takes and releases locks, then takes one it
/// keeps; a barrier makes sure both replicas have all of it.
fn steady_load(group: &Group, clients: &mut [Client], ledger: &mut Ledger) {
    for _ in 0..STEADY_ROUNDS {
        for client in clients.iter_mut() {
            client.acquire(ledger, Some(5000));
            client.release(ledger);
        }
    }
    for client in clients.iter_mut() {
        client.acquire(ledger, Some(5000));
    }
    group.barrier(2);
}

/// The workload while the links are held: each client releases the lock it kept (a release
/// lost at failover brings it back), takes and releases locks, and takes one more it keeps.
/// The waiting clients' WAITs time out after 100 ms; the last one is left to the caller.
fn held_load(clients: &mut [Client], ledger: &mut Ledger) {
    for client in clients.iter_mut() {
        client.release(ledger);
    }
    for _ in 0..HELD_ROUNDS {
        for client in clients.iter_mut() {
            client.acquire(ledger, Some(100));
            client.release(ledger);
        }
    }
    for client in clients.iter_mut() {
        client.acquire(ledger, None);
    }
}

/// The waiting clients' WAIT after their last acquisition: with the links still held it
/// answers 0 after 100 ms; otherwise links are released while every WAIT is blocked, so each
/// answers once a replica caught up.
fn last_waits(group: &Group, clients: &mut [Client], ledger: &mut Ledger, links: Links) {
    let release = links.released();
    let timeout = if release > 0 { 10_000 } else { 100 };
    let waiting: Vec<usize> = (0..clients.len()).filter(|&i| clients[i].waits).collect();
    for &i in &waiting {
        clients[i].lock.send_wait(1, timeout);
    }
    if release > 0 {
        let mut probe = Conn::connect(group.primary.addr()).unwrap();
        support::wait_blocked(&mut probe, waiting.len());
        group.release_links(release);
    }
    for &i in &waiting {
        let answer = clients[i].lock.read_wait();
        let key = &clients[i].held.as_ref().unwrap().0;
        let write = ledger.writes.iter_mut().rev().find(|w| &w.key == key);
        write.unwrap().waited = Some(answer);
    }
    if release > 0 {
        group.barrier(release);
    }
    if links == Links::OneReleased {
        group.wait_until_sentinels_see_the_first_ahead();
    }
}

/// Runs the whole schedule on servers of `kind`; the figures, None on a loud skip.
fn run(kind: Kind, links: Links) -> Option<Figures> {
    let test = "failover loss";
    let started = Instant::now();
    let group = Group::start(kind, test)?;
    let mut clients: Vec<Client> = (0..CLIENTS)
        .map(|id| Client::connect(group.primary.addr(), id))
        .collect();
    let mut ledger = Ledger::default();
    steady_load(&group, &mut clients, &mut ledger);
    group.hold_links();
    held_load(&mut clients, &mut ledger);
    last_waits(&group, &mut clients, &mut ledger, links);

    group.signal_primary(libc::SIGSTOP);
    let new = group
        .sentinels()
        .wait_for_new_primary(group.proxy.addr().port());
    if links == Links::OneReleased {
        assert_eq!(
            new, group.replicas[0].port,
            "the replica ahead was promoted"
        );
    } else {
        assert!(
            group.replicas.iter().any(|r| r.port == new),
            "a replica was promoted"
        );
    }
    let keys = ledger.keys();
    let on_new = Group::locks_on(SocketAddr::from(([127, 0, 0, 1], new)), &keys);
    let figures = ledger.count(&on_new);

    // The old primary continues, is demoted by the sentinels and drops what it alone had.
    group.signal_primary(libc::SIGCONT);
    group
        .sentinels()
        .wait_for("the old primary to follow the new one", 30, || {
            let replication = info(group.primary.addr(), "replication");
            field(&replication, "role") == "slave"
                && field(&replication, "master_port") == new.to_string()
                && field(&replication, "master_link_status") == "up"
        });
    assert_eq!(
        Group::locks_on(group.primary.addr(), &keys),
        on_new,
        "the demoted primary holds the new primary's locks"
    );
    eprintln!(
        "failover loss, {kind:?}, links {links:?}: {figures} ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    Some(figures)
}

/// Runs `links` on Redis, then on embedis, and checks embedis against Redis; both figures.
fn compare(links: Links) -> Option<(Figures, Figures)> {
    let _serial = sentinel::serial();
    let theirs = run(Kind::Redis, links)?;
    let ours = run(Kind::Embedis, links)?;
    assert_eq!(
        ours.wait_acked_lost, 0,
        "embedis lost a WAIT-acknowledged write"
    );
    assert!(
        ours.lost <= theirs.lost,
        "embedis lost more than Redis: {ours} against {theirs}"
    );
    assert_eq!(ours.acked, theirs.acked, "the same schedule");
    Some((ours, theirs))
}

/// Writes acknowledged while the links are held reach no replica, and the failover loses every
/// one of them — on Redis as on embedis: the release of each client's earlier lock (that lock
/// is back on the new primary), and each lock taken since. Every one of them was a write whose
/// `WAIT 1` answered 0.
#[test]
fn writes_made_while_the_links_are_held_are_lost_at_failover() {
    let Some((ours, theirs)) = compare(Links::StayHeld) else {
        return;
    };
    let held = CLIENTS * (1 + 2 * HELD_ROUNDS + 1);
    for figures in [ours, theirs] {
        assert_eq!(figures.lost, held, "{figures}");
        assert_eq!(figures.wait_zero, WAITING * (HELD_ROUNDS + 1), "{figures}");
        assert_eq!(figures.wait_zero_lost, figures.wait_zero, "{figures}");
        assert_eq!(figures.wait_acked_lost, 0, "{figures}");
    }
}

/// Released links carry the held writes to the replicas before the primary stops: nothing is
/// lost, and the waiting clients' last `WAIT 1`, blocked across the release, acknowledges
/// their last lock.
#[test]
fn writes_made_while_the_links_were_held_survive_once_released() {
    let Some((ours, theirs)) = compare(Links::Released) else {
        return;
    };
    for figures in [ours, theirs] {
        assert_eq!(figures.lost, 0, "{figures}");
        assert_eq!(
            figures.wait_acked,
            WAITING * (STEADY_ROUNDS + 2),
            "{figures}"
        );
    }
}

/// With one link released, `WAIT 1` acknowledges the waiting clients' last locks through that
/// replica alone, and the sentinels promote it — the replica with the greater offset — so
/// nothing is lost, though the other replica never saw the held writes before the failover.
#[test]
fn the_sentinels_promote_the_replica_that_acknowledged_the_writes() {
    let Some((ours, theirs)) = compare(Links::OneReleased) else {
        return;
    };
    for figures in [ours, theirs] {
        assert_eq!(figures.lost, 0, "{figures}");
        assert_eq!(
            figures.wait_acked,
            WAITING * (STEADY_ROUNDS + 2),
            "{figures}"
        );
    }
}

/// What `WAIT 1` answers each client while the replica's link is held, on one server of
/// `kind`: A wrote before the hold (acknowledged), B after it, C never.
fn wait_transcript(kind: Kind) -> Option<Vec<String>> {
    let primary = start_server(kind, "failover loss: WAIT", &[])?;
    let proxy = LinkProxy::start(primary.addr());
    let port = proxy.addr().port().to_string();
    let replica = start_server(
        kind,
        "failover loss: WAIT",
        &["--replicaof", "127.0.0.1", &port],
    )?;
    wait_until("the replica's link", || {
        field(&info(replica.addr(), "replication"), "master_link_status") == "up"
    });
    let [mut a, mut b, mut c] = [0; 3].map(|_| Conn::connect(primary.addr()).unwrap());
    let mut transcript = vec![
        text(&mut a, &["SET", "a", "1"]),
        text(&mut a, &["WAIT", "1", "5000"]),
    ];
    proxy.hold(replica.port);
    transcript.extend([
        text(&mut b, &["SET", "b", "1"]),
        text(&mut a, &["WAIT", "1", "100"]),
        text(&mut c, &["WAIT", "1", "100"]),
        text(&mut b, &["WAIT", "1", "100"]),
    ]);
    proxy.release(replica.port);
    transcript.push(text(&mut b, &["WAIT", "1", "5000"]));
    Some(transcript)
}

/// WAIT waits for the calling client's own writes (Redis's `c->woff`), not for the stream's
/// end: a lock client whose lock reached a replica hears 1 even while another client's later
/// write has not, and a client that never wrote hears every replica at once. (embedis used to
/// wait for the stream's end, and answered both 0 after the timeout.)
#[test]
fn wait_counts_the_replicas_that_have_the_clients_own_writes() {
    let Some(theirs) = wait_transcript(Kind::Redis) else {
        return;
    };
    let ours = wait_transcript(Kind::Embedis).unwrap();
    assert_eq!(
        theirs,
        ["+OK\r\n", ":1\r\n", "+OK\r\n", ":1\r\n", ":1\r\n", ":0\r\n", ":1\r\n"]
    );
    assert_eq!(ours, theirs);
}

/// The count itself, without servers: the survivors are the longest prefix of the writes that
/// matches the new primary. A lock taken and released after the last write the new primary
/// shows is lost with the writes around it, though its key is absent on both sides.
#[test]
fn the_writes_lost_are_those_after_the_longest_matching_prefix() {
    let write = |key: &str, token: Option<&str>, waited: Option<i64>| Write {
        key: key.into(),
        token: token.map(String::from),
        waited,
    };
    let ledger = Ledger {
        writes: vec![
            write("a", Some("1"), Some(2)),
            write("a", None, None),
            write("b", Some("2"), Some(0)),
            write("b", None, None),
            write("c", Some("3"), Some(0)),
        ],
    };
    let found = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let all = ledger.count(&found(&[("c", "3")]));
    assert_eq!(
        (all.acked, all.lost, all.wait_acked, all.wait_zero),
        (5, 0, 1, 2)
    );
    // No lock at all: the state after b's release (the longest prefix), only c's lock lost.
    let no_lock = ledger.count(&found(&[]));
    assert_eq!((no_lock.lost, no_lock.wait_zero_lost), (1, 1));
    // a's lock still there: its release is lost, and b's lock and release with it.
    let a_held = ledger.count(&found(&[("a", "1")]));
    assert_eq!(
        (a_held.lost, a_held.wait_acked_lost, a_held.wait_zero_lost),
        (4, 0, 2)
    );
    // c's lock (the last write) without a's release before it: no prefix leaves that.
    assert_eq!(ledger.survivors(&found(&[("a", "1"), ("c", "3")])), None);
}
