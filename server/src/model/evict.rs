//! Eviction: what the server does when memory use passes `maxmemory`, as Redis 7.0's
//! `performEvictions` does it — removing keys chosen by `maxmemory-policy` until memory is back
//! under the limit, or refusing memory-growing commands when nothing more can go.
//!
//! Redis does not keep keys in LRU or LFU order (that would cost memory and time on every
//! access); it approximates: each pass samples `maxmemory-samples` keys of every database (from
//! all keys, or only those with a TTL for the `volatile-*` policies) and offers them to a pool
//! of the 16 best candidates seen so far, ranked by a score — idle time under LRU, 255 minus the
//! decayed access counter under LFU, nearness of the deadline under `volatile-ttl`. The best
//! candidate that still exists is evicted; the pool survives between evictions, so with more
//! samples the choice gets closer to the true LRU. The random policies pick a random key of the
//! next database in turn.
//!
//! [`Evictor::perform`] runs before every command while `maxmemory` is set (and as soon as the
//! event loop is free after CONFIG SET sets it, through [`Evictor::running`]). It evicts until the memory to free is freed, checking every 16 keys whether its
//! time budget (from `maxmemory-eviction-tenacity`) is spent; if so it leaves the rest to the
//! timer ([`Evictor::running`]: the engine calls it again between commands) and lets commands
//! run. Only when nothing evictable is left (or the policy is `noeviction`) is the answer
//! [`Outcome::Fail`], which refuses `denyoom` commands. Memory freed is measured as the change
//! of used memory around each deletion, so a value freed on the lazy-free thread
//! (`lazyfree-lazy-eviction`) counts once that thread has freed it.
//!
//! The module only picks keys; the deletion itself is [`Keyspace::evicted`], the one place that
//! counts an eviction and tells watchers, tracking and keyspace notifications about it.

use embedis_datatypes::SmallBytes;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::{Duration, Instant};

use crate::base::config::{Config, MaxmemoryPolicy};
use crate::base::value::lru_clock;
use crate::model::keyspace::Keyspace;

/// Candidates the pool keeps (Redis's `EVPOOL_SIZE`).
pub const POOL_SIZE: usize = 16;

/// The result of one eviction pass (Redis's `EVICT_OK`, `EVICT_RUNNING`, `EVICT_FAIL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Memory is under the limit (or evicting is not safe now, which counts as fine).
    Ok,
    /// Still over the limit, but the pass ran out of time with keys left to evict: the timer
    /// goes on, and commands are not refused.
    Running,
    /// Over the limit with nothing (more) to evict: `denyoom` commands are refused.
    Fail,
}

/// One candidate of the pool.
#[derive(Debug, Clone)]
struct Candidate {
    /// Higher is a better candidate.
    score: u64,
    db: usize,
    key: SmallBytes,
}

/// How used memory is measured: [`used_memory`] in the server, a model in tests.
pub type Meter = fn(&Keyspace) -> u64;

/// INFO's `used_memory`, what eviction compares with `maxmemory`: the allocator's count less
/// the key tables' idle slots (see [`Keyspace::idle_table_bytes`]).
pub fn used_memory(ks: &Keyspace) -> u64 {
    crate::base::alloc::used_memory().saturating_sub(ks.idle_table_bytes())
}

/// The eviction state of a server: the pool, the random policies' next database, whether the
/// timer must go on evicting, and the figures INFO shows.
pub struct Evictor {
    /// Candidates in ascending score order (the best at the end).
    pool: Vec<Candidate>,
    next_db: usize,
    /// A pass ran out of time with memory still over the limit: the engine calls
    /// [`Evictor::perform`] again between commands until it is not [`Outcome::Running`]
    /// (Redis's eviction time event).
    pub running: bool,
    /// The outcome of the pass before the current command was [`Outcome::Fail`] (Redis's
    /// `pre_command_oom_state`): scripts check it rather than memory, which their own stack and
    /// arguments move.
    pub out_of_memory: bool,
    /// Since when memory has been over the limit (INFO `current_eviction_exceeded_time`).
    exceeded_since: Option<Instant>,
    /// Time spent over the limit in earlier episodes (INFO `total_eviction_exceeded_time`).
    total_exceeded: Duration,
    /// How long the last pass that evicted (or tried to) took, for LATENCY's `eviction-cycle`
    /// event; taken by whoever records it.
    pub last_cycle: Option<Duration>,
    /// Keys evicted since the start (INFO's `evicted_keys` is zeroed by CONFIG RESETSTAT): the
    /// I/O loop writes a turn's output before reading again when this moved.
    pub keys_evicted: u64,
    /// Memory the pass leaves out of its count (Redis's `freeMemoryGetNotCountedMemory`): the
    /// output of clients `maxmemory-clients` evicted, which their connections give back once
    /// they run, where Redis frees it at once. Set by the caller before [`Evictor::perform`].
    pub not_counted: u64,
    rng: StdRng,
    meter: Meter,
}

impl Default for Evictor {
    fn default() -> Self {
        Evictor::with_meter(used_memory)
    }
}

impl Evictor {
    /// An evictor measuring memory with `meter`.
    pub fn with_meter(meter: Meter) -> Self {
        Evictor {
            pool: Vec::with_capacity(POOL_SIZE),
            next_db: 0,
            running: false,
            out_of_memory: false,
            exceeded_since: None,
            total_exceeded: Duration::ZERO,
            last_cycle: None,
            keys_evicted: 0,
            not_counted: 0,
            rng: StdRng::from_entropy(),
            meter,
        }
    }

    /// INFO's `current_eviction_exceeded_time` and `total_eviction_exceeded_time`, in ms.
    pub fn exceeded_ms(&self) -> (u64, u64) {
        let current = self
            .exceeded_since
            .map_or(Duration::ZERO, |at| at.elapsed());
        (
            current.as_millis() as u64,
            (self.total_exceeded + current).as_millis() as u64,
        )
    }

    /// CONFIG RESETSTAT: the exceeded-time figures start again.
    pub fn reset_stats(&mut self) {
        self.total_exceeded = Duration::ZERO;
        self.exceeded_since = None;
    }

    /// Memory use, before [`Evictor::not_counted`] is taken off.
    pub fn used_memory(&self, ks: &Keyspace) -> u64 {
        (self.meter)(ks)
    }

    /// The memory a pass weighs against the limit: [`Evictor::used_memory`] without
    /// [`Evictor::not_counted`].
    fn counted_memory(&self, ks: &Keyspace) -> u64 {
        self.used_memory(ks).saturating_sub(self.not_counted)
    }

    /// One eviction pass (Redis's `performEvictions`). `safe` is false while evicting must not
    /// happen (clients paused: the data set must stay still), which answers [`Outcome::Ok`]
    /// without touching anything. `now_ms` is the time the LRU and LFU scores are taken at.
    pub fn perform(
        &mut self,
        ks: &mut Keyspace,
        config: &Config,
        safe: bool,
        now_ms: i64,
    ) -> Outcome {
        if !safe {
            return Outcome::Ok;
        }
        let used = self.counted_memory(ks);
        let outcome = if config.maxmemory == 0 || used <= config.maxmemory {
            Outcome::Ok
        } else if config.maxmemory_policy == MaxmemoryPolicy::NoEviction {
            Outcome::Fail
        } else {
            self.evict(ks, config, used - config.maxmemory, now_ms)
        };
        if outcome != Outcome::Running {
            self.running = false;
        }
        match outcome {
            Outcome::Running | Outcome::Fail => {
                self.exceeded_since.get_or_insert_with(Instant::now);
            }
            Outcome::Ok => {
                if let Some(since) = self.exceeded_since.take() {
                    self.total_exceeded += since.elapsed();
                }
            }
        }
        outcome
    }

    /// Evicts until `to_free` bytes are freed, the time budget is spent, or nothing is left.
    fn evict(&mut self, ks: &mut Keyspace, config: &Config, to_free: u64, now_ms: i64) -> Outcome {
        let started = Instant::now();
        let outcome = self.evict_for(ks, config, to_free, now_ms, started);
        // Each eviction propagates as a DEL of its own, never as a transaction.
        ks.stream.flush(false);
        // One more clock read per pass only when the latency monitor is on, as in Redis.
        if config.latency_monitor_threshold != 0 {
            self.last_cycle = Some(started.elapsed());
        }
        outcome
    }

    fn evict_for(
        &mut self,
        ks: &mut Keyspace,
        config: &Config,
        to_free: u64,
        now_ms: i64,
        started: Instant,
    ) -> Outcome {
        let limit = time_limit(config.maxmemory_eviction_tenacity);
        let lazy = config.lazyfree_lazy_eviction;
        let mut freed: i64 = 0;
        let mut evicted = 0u64;
        while freed < to_free as i64 {
            let Some((db, key)) = self.pick(ks, config, now_ms) else {
                return self.wait_for_lazy_free(ks, config, started, limit);
            };
            let meter = self.meter;
            freed += ks.evicted(db, &key, lazy, meter).unwrap_or(0);
            evicted += 1;
            self.keys_evicted += 1;
            if evicted.is_multiple_of(16) {
                // Memory freed on the lazy-free thread is not seen around the deletion: look
                // at the total now and then.
                if lazy && self.counted_memory(ks) <= config.maxmemory {
                    break;
                }
                if started.elapsed() > limit {
                    self.running = true;
                    break;
                }
            }
        }
        if self.running {
            Outcome::Running
        } else {
            Outcome::Ok
        }
    }

    /// Nothing left to evict: values being freed on the lazy-free thread may still bring memory
    /// under the limit, so wait for them a little (within the time budget), as Redis does.
    fn wait_for_lazy_free(
        &mut self,
        ks: &Keyspace,
        config: &Config,
        started: Instant,
        limit: Duration,
    ) -> Outcome {
        while crate::model::lazyfree::lazyfree_pending_objects() > 0 && started.elapsed() < limit {
            if self.counted_memory(ks) <= config.maxmemory {
                return Outcome::Ok;
            }
            std::thread::sleep(limit.min(Duration::from_millis(1)));
        }
        Outcome::Fail
    }

    /// The next key to evict under the configured policy, or None if no key may be evicted.
    pub fn pick(
        &mut self,
        ks: &Keyspace,
        config: &Config,
        now_ms: i64,
    ) -> Option<(usize, SmallBytes)> {
        let policy = config.maxmemory_policy;
        let allkeys = policy.is_allkeys();
        match policy {
            MaxmemoryPolicy::NoEviction => None,
            MaxmemoryPolicy::AllkeysRandom | MaxmemoryPolicy::VolatileRandom => {
                let dbs = ks.dbs.len();
                for _ in 0..dbs {
                    self.next_db = (self.next_db + 1) % dbs;
                    let db = &ks.dbs[self.next_db];
                    let key = if allkeys {
                        db.main.random_entry(&mut self.rng).map(|(k, _)| k)
                    } else {
                        db.expires.random_entry(&mut self.rng).map(|(k, _)| k)
                    };
                    if let Some(key) = key {
                        return Some((self.next_db, key.clone()));
                    }
                }
                None
            }
            _ => loop {
                let mut total = 0;
                for db in 0..ks.dbs.len() {
                    let size = if allkeys {
                        ks.dbs[db].main.len()
                    } else {
                        ks.dbs[db].expires.len()
                    };
                    if size != 0 {
                        self.populate(ks, db, config, now_ms);
                        total += size;
                    }
                }
                if total == 0 {
                    return None;
                }
                // The best candidate that still exists (and, for volatile-*, still has a
                // TTL); the others are ghosts of keys deleted since they were pooled.
                while let Some(best) = self.pool.pop() {
                    let db = &ks.dbs[best.db];
                    let alive = if allkeys {
                        db.main.contains_key(best.key.as_slice())
                    } else {
                        db.expires.contains_key(best.key.as_slice())
                    };
                    if alive {
                        return Some((best.db, best.key));
                    }
                }
            },
        }
    }

    /// Samples database `db` and offers the samples to the pool (Redis's
    /// `evictionPoolPopulate`).
    fn populate(&mut self, ks: &Keyspace, db: usize, config: &Config, now_ms: i64) {
        let policy = config.maxmemory_policy;
        let d = &ks.dbs[db];
        let samples = config.maxmemory_samples.max(1) as usize;
        let clock = ks.access;
        let now_lru = lru_clock(now_ms);
        let pool = &mut self.pool;
        let mut offer = |key: &SmallBytes, score: u64| offer(pool, db, key, score);
        if policy == MaxmemoryPolicy::VolatileTtl {
            d.expires.sample(samples, &mut self.rng, |key, &deadline| {
                // The sooner the deadline, the better the candidate.
                offer(key, u64::MAX - deadline as u64)
            });
            return;
        }
        let score = |obj: &crate::base::value::Object| {
            if policy.is_lfu() {
                255 - clock.freq(obj, now_ms) as u64
            } else {
                obj.idle_ms(now_lru)
            }
        };
        if policy.is_allkeys() {
            d.main
                .sample(samples, &mut self.rng, |key, obj| offer(key, score(obj)));
        } else {
            d.expires.sample(samples, &mut self.rng, |key, _| {
                if let Some(obj) = d.main.get(key.as_slice()) {
                    offer(key, score(obj));
                }
            });
        }
    }
}

/// Offers a sampled key to the pool, kept sorted by ascending score: it goes in if there is room
/// or if it beats the worst candidate, which then drops out.
fn offer(pool: &mut Vec<Candidate>, db: usize, key: &SmallBytes, score: u64) {
    let at = pool.partition_point(|c| c.score < score);
    if at == 0 && pool.len() == POOL_SIZE {
        return;
    }
    let candidate = Candidate {
        score,
        db,
        key: key.clone(),
    };
    if pool.len() < POOL_SIZE {
        pool.insert(at, candidate);
    } else {
        pool.remove(0);
        pool.insert(at - 1, candidate);
    }
}

/// How long one eviction pass may run (Redis's `evictionTimeLimitUs`): 50 µs per step of
/// tenacity up to 10 (500 µs at the default), then 15% more per step, unlimited at 100.
pub fn time_limit(tenacity: u32) -> Duration {
    let us = match tenacity {
        0..=10 => 50 * tenacity as u64,
        11..=99 => (500.0 * 1.15f64.powi(tenacity as i32 - 10)) as u64,
        _ => return Duration::MAX,
    };
    Duration::from_micros(us)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::value::Value;
    use proptest::prelude::*;

    /// Memory modelled as 100 bytes per key, so that a limit is a number of keys.
    fn per_key(ks: &Keyspace) -> u64 {
        ks.total_keys() as u64 * 100
    }

    fn config(policy: &str, max_keys: u64, samples: &str) -> Config {
        // The sizes these tests' limits were chosen for are 7.0's encodings.
        let mut c = Config {
            compat_version: crate::base::compat::CompatVersion::V7_0,
            ..Config::default()
        };
        c.set_many(&[
            ("maxmemory-policy", policy),
            ("maxmemory-samples", samples),
            ("maxmemory-eviction-tenacity", "100"),
        ])
        .unwrap();
        c.maxmemory = max_keys * 100;
        c
    }

    const T0: i64 = 1_700_000_000_000;

    #[test]
    fn time_limits_follow_tenacity() {
        assert_eq!(time_limit(0), Duration::ZERO);
        assert_eq!(time_limit(10), Duration::from_micros(500));
        assert_eq!(time_limit(11), Duration::from_micros(575));
        assert!(time_limit(99) > Duration::from_secs(100));
        assert_eq!(time_limit(100), Duration::MAX);
    }

    #[test]
    fn pool_keeps_the_sixteen_best_in_order() {
        let mut pool = Vec::new();
        for score in [5u64, 1, 9, 3] {
            offer(&mut pool, 0, &SmallBytes::new(&score.to_be_bytes()), score);
        }
        let scores: Vec<u64> = pool.iter().map(|c| c.score).collect();
        assert_eq!(scores, [1, 3, 5, 9]);
        for score in 10..30u64 {
            offer(&mut pool, 0, &SmallBytes::new(b"k"), score);
        }
        assert_eq!(pool.len(), POOL_SIZE);
        assert_eq!(pool[0].score, 14, "the worst fell out");
        assert_eq!(pool[POOL_SIZE - 1].score, 29);
        offer(&mut pool, 0, &SmallBytes::new(b"k"), 2);
        assert_eq!(pool[0].score, 14, "worse than all and no room: ignored");
    }

    #[test]
    fn noeviction_fails_and_nothing_evictable_fails() {
        let mut ks = Keyspace::new(2);
        for i in 0..10u8 {
            ks.add(0, &[i], Value::Int(1), None, T0);
        }
        let mut ev = Evictor::with_meter(per_key);
        let c = config("noeviction", 5, "5");
        assert_eq!(ev.perform(&mut ks, &c, true, T0), Outcome::Fail);
        assert!(ev.exceeded_ms().1 < 1000);
        // volatile-* with no key having a TTL: nothing may go.
        let c = config("volatile-lru", 5, "5");
        assert_eq!(ev.perform(&mut ks, &c, true, T0), Outcome::Fail);
        assert_eq!(ks.total_keys(), 10);
        // Not safe (paused): nothing happens, and it is not a failure.
        let c = config("allkeys-lru", 5, "5");
        assert_eq!(ev.perform(&mut ks, &c, false, T0), Outcome::Ok);
        assert_eq!(ks.total_keys(), 10);
        assert_eq!(ev.perform(&mut ks, &c, true, T0), Outcome::Ok);
        assert_eq!((ks.total_keys(), ks.stats.evicted_keys), (5, 5));
        assert_eq!(ks.dirty, 10, "evictions are not counted as writes");
    }

    #[test]
    fn lru_with_enough_samples_evicts_the_idlest() {
        let mut ks = Keyspace::new(1);
        // Key i was last used i seconds after T0: the low numbers are the idlest.
        for i in 0..100u32 {
            ks.add(0, format!("k{i}").as_bytes(), Value::Int(1), None, T0);
            ks.read(0, format!("k{i}").as_bytes(), T0 + i as i64 * 1000);
        }
        let mut ev = Evictor::with_meter(per_key);
        let c = config("allkeys-lru", 90, "200");
        ev.perform(&mut ks, &c, true, T0 + 200_000);
        for i in 0..100u32 {
            let present = ks.dbs[0].main.contains_key(format!("k{i}").as_bytes());
            assert_eq!(present, i >= 10, "k{i}");
        }
    }

    #[test]
    fn lfu_evicts_the_least_frequently_used() {
        let mut ks = Keyspace::new(1);
        let mut c = config("allkeys-lfu", 10, "200");
        c.lfu_log_factor = 0; // every access counts
        ks.apply_config(&c);
        for i in 0..20u32 {
            ks.add(0, format!("k{i}").as_bytes(), Value::Int(1), None, T0);
            for _ in 0..i {
                ks.read(0, format!("k{i}").as_bytes(), T0);
            }
        }
        assert_eq!(
            ks.access.freq(ks.dbs[0].main.get(&b"k3"[..]).unwrap(), T0),
            8
        );
        let mut ev = Evictor::with_meter(per_key);
        ev.perform(&mut ks, &c, true, T0);
        for i in 0..20u32 {
            let present = ks.dbs[0].main.contains_key(format!("k{i}").as_bytes());
            assert_eq!(present, i >= 10, "k{i}");
        }
    }

    #[test]
    fn volatile_ttl_prefers_the_nearest_deadline() {
        let mut ks = Keyspace::new(3);
        for i in 0..30u32 {
            let deadline = T0 + 1_000_000 + (i as i64 % 10) * 1000 + i as i64;
            ks.add(
                (i % 3) as usize,
                &i.to_be_bytes(),
                Value::Int(1),
                Some(deadline),
                T0,
            );
            ks.add(
                0,
                format!("persistent{i}").as_bytes(),
                Value::Int(1),
                None,
                T0,
            );
        }
        let mut ev = Evictor::with_meter(per_key);
        let c = config("volatile-ttl", 50, "100");
        assert_eq!(ev.perform(&mut ks, &c, true, T0), Outcome::Ok);
        // The ten nearest deadlines (i % 10 == 0 or 1 … ) went first: those with i % 10 == 0
        // (three keys) and == 1, == 2 (six), and the nearest of i % 10 == 3.
        let mut left: Vec<i64> = (0..3)
            .flat_map(|db| {
                ks.dbs[db]
                    .expires
                    .iter()
                    .map(|(_, &d)| d)
                    .collect::<Vec<_>>()
            })
            .collect();
        left.sort();
        assert_eq!(left.len(), 20);
        let mut all: Vec<i64> = (0..30u32)
            .map(|i| T0 + 1_000_000 + (i as i64 % 10) * 1000 + i as i64)
            .collect();
        all.sort();
        assert_eq!(left, all[10..]);
    }

    #[derive(Debug, Clone)]
    struct Spec {
        ttl: bool,
        db: usize,
        idle_s: i64,
    }

    fn specs() -> impl Strategy<Value = Vec<Spec>> {
        prop::collection::vec(
            (any::<bool>(), 0..3usize, 0..1000i64).prop_map(|(ttl, db, idle_s)| Spec {
                ttl,
                db,
                idle_s,
            }),
            1..80,
        )
    }

    proptest! {
        /// Every policy evicts only from its key set: `volatile-*` only keys with a TTL, and
        /// it stops when it has freed enough or nothing is left to evict.
        #[test]
        fn each_policy_evicts_only_from_its_key_set(
            keys in specs(),
            policy in prop::sample::select(MaxmemoryPolicy::NAMES),
            keep in 0..80u64,
            samples in 1..20u32,
        ) {
            let mut ks = Keyspace::new(3);
            let mut c = config(policy, keep, &samples.to_string());
            ks.apply_config(&c);
            let now = T0 + 2_000_000;
            for (i, spec) in keys.iter().enumerate() {
                let key = format!("k{i}");
                let ttl = spec.ttl.then_some(now + 1_000_000 + i as i64);
                ks.add(spec.db, key.as_bytes(), Value::Int(1), ttl, T0);
                ks.read(spec.db, key.as_bytes(), now - spec.idle_s * 1000);
            }
            c.maxmemory = c.maxmemory.max(1);
            let volatile_before: usize = ks.dbs.iter().map(|d| d.expires.len()).sum();
            let persistent_before = ks.total_keys() - volatile_before;
            let mut ev = Evictor::with_meter(per_key);
            let outcome = ev.perform(&mut ks, &c, true, now);
            let volatile_after: usize = ks.dbs.iter().map(|d| d.expires.len()).sum();
            let persistent_after = ks.total_keys() - volatile_after;
            let fits = ks.total_keys() as u64 * 100 <= c.maxmemory;
            let p = c.maxmemory_policy;
            if p == MaxmemoryPolicy::NoEviction {
                prop_assert_eq!(ks.stats.evicted_keys, 0);
            } else if !p.is_allkeys() {
                prop_assert_eq!(persistent_after, persistent_before);
                prop_assert!(fits || volatile_after == 0);
            } else {
                prop_assert!(fits);
            }
            prop_assert_eq!(outcome == Outcome::Fail, !fits);
            prop_assert_eq!(
                ks.stats.evicted_keys as usize,
                volatile_before + persistent_before - ks.total_keys()
            );
            if fits && p != MaxmemoryPolicy::NoEviction {
                // No more than needed: one key fewer would not have fitted.
                prop_assert!((ks.total_keys() as u64 + 1) * 100 > c.maxmemory
                    || ks.stats.evicted_keys == 0);
            }
        }
    }
}
