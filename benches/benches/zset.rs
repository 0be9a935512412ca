//! The sorted set (arena skiplist + member index) against two baselines built the obvious ways:
//! std's `BTreeSet<(score, member)>` with a `HashMap` for scores, and the `indexset` crate's
//! `BTreeSet` (a B-tree that can also answer ranks) with the same `HashMap`.
//!
//! At 1,000, 100,000 and 1,000,000 members `member:%07d` with random scores, per operation:
//! ZADD of a new member, ZSCORE, ZRANK, ZRANGEBYSCORE with LIMIT 10, ZREM. Inserts and removals
//! are timed with `iter_custom` so that the set keeps its size: the members added (or removed)
//! during a batch are removed (or put back) outside the timed section.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use embedis_datatypes::zset::{AddFlags, Limits, ScoreRange, ZSetValue};
use embedis_datatypes::SmallBytes;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// A score with a total order (no NaN here).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
struct Score(f64);
impl Eq for Score {}
#[allow(clippy::derive_ord_xor_partial_ord)]
impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

type Key = (Score, SmallBytes);
type Scores = HashMap<SmallBytes, f64, ahash::RandomState>;

fn rng_scores(n: usize) -> Vec<f64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 1_000_000_000) as f64 / 1000.0
        })
        .collect()
}

fn member(i: usize) -> Vec<u8> {
    format!("member:{i:07}").into_bytes()
}

/// What each implementation must answer, as the commands use it.
trait SortedSet {
    fn add(&mut self, member: &[u8], score: f64);
    fn remove(&mut self, member: &[u8]);
    fn score(&self, member: &[u8]) -> Option<f64>;
    fn rank(&self, member: &[u8]) -> Option<usize>;
    /// The first 10 members with a score ≥ min; returns their total length.
    fn range_10(&self, min: f64) -> usize;
}

impl SortedSet for ZSetValue {
    fn add(&mut self, member: &[u8], score: f64) {
        ZSetValue::add(self, member, score, AddFlags::default(), &Limits::default());
    }
    fn remove(&mut self, member: &[u8]) {
        ZSetValue::remove(self, member);
    }
    fn score(&self, member: &[u8]) -> Option<f64> {
        ZSetValue::score(self, member)
    }
    fn rank(&self, member: &[u8]) -> Option<usize> {
        ZSetValue::rank(self, member, false)
    }
    fn range_10(&self, min: f64) -> usize {
        let mut total = 0;
        let range = ScoreRange {
            min,
            ..ScoreRange::ALL
        };
        self.for_each_in_scores(&range, false, 0, 10, |m, _| total += m.len());
        total
    }
}

#[derive(Default)]
struct StdSet {
    order: BTreeSet<Key>,
    scores: Scores,
}

impl SortedSet for StdSet {
    fn add(&mut self, member: &[u8], score: f64) {
        let m = SmallBytes::new(member);
        if let Some(old) = self.scores.insert(m.clone(), score) {
            self.order.remove(&(Score(old), m.clone()));
        }
        self.order.insert((Score(score), m));
    }
    fn remove(&mut self, member: &[u8]) {
        if let Some((m, s)) = self.scores.remove_entry(member) {
            self.order.remove(&(Score(s), m));
        }
    }
    fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }
    fn rank(&self, member: &[u8]) -> Option<usize> {
        // std's B-tree cannot count: a rank is a walk.
        let s = *self.scores.get(member)?;
        Some(
            self.order
                .range(..(Score(s), SmallBytes::new(member)))
                .count(),
        )
    }
    fn range_10(&self, min: f64) -> usize {
        self.order
            .range((Score(min), SmallBytes::empty())..)
            .take(10)
            .map(|(_, m)| m.len())
            .sum()
    }
}

#[derive(Default)]
struct IndexSet {
    order: indexset::BTreeSet<Key>,
    scores: Scores,
}

impl SortedSet for IndexSet {
    fn add(&mut self, member: &[u8], score: f64) {
        let m = SmallBytes::new(member);
        if let Some(old) = self.scores.insert(m.clone(), score) {
            self.order.remove(&(Score(old), m.clone()));
        }
        self.order.insert((Score(score), m));
    }
    fn remove(&mut self, member: &[u8]) {
        if let Some((m, s)) = self.scores.remove_entry(member) {
            self.order.remove(&(Score(s), m));
        }
    }
    fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }
    fn rank(&self, member: &[u8]) -> Option<usize> {
        let s = *self.scores.get(member)?;
        Some(self.order.rank(&(Score(s), SmallBytes::new(member))))
    }
    fn range_10(&self, min: f64) -> usize {
        self.order
            .range((Score(min), SmallBytes::empty())..)
            .take(10)
            .map(|(_, m)| m.len())
            .sum()
    }
}

fn fill<S: SortedSet>(mut set: S, members: &[Vec<u8>], scores: &[f64]) -> S {
    for (m, &s) in members.iter().zip(scores) {
        set.add(m, s);
    }
    set
}

fn bench_one<S: SortedSet>(
    c: &mut Criterion,
    name: &str,
    n: usize,
    set: &mut S,
    members: &[Vec<u8>],
    scores: &[f64],
) {
    let mut group = c.benchmark_group(format!("zset/{name}"));
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    // Batches change the size by at most 10%.
    let batch_max = (n / 10).max(1);
    let fresh: Vec<Vec<u8>> = (n..n + batch_max).map(member).collect();
    let fresh_scores = rng_scores(n + batch_max)[n..].to_vec();
    group.bench_function(BenchmarkId::new("ZADD new member", n), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0u64;
            while done < iters {
                let batch = (iters - done).min(fresh.len() as u64) as usize;
                let start = Instant::now();
                for i in 0..batch {
                    set.add(&fresh[i], fresh_scores[i]);
                }
                total += start.elapsed();
                for m in &fresh[..batch] {
                    set.remove(m);
                }
                done += batch as u64;
            }
            total
        })
    });
    let mut i = 0usize;
    group.bench_function(BenchmarkId::new("ZSCORE", n), |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            black_box(set.score(&members[i]))
        })
    });
    group.bench_function(BenchmarkId::new("ZRANK", n), |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            black_box(set.rank(&members[i]))
        })
    });
    group.bench_function(BenchmarkId::new("ZRANGEBYSCORE LIMIT 10", n), |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            black_box(set.range_10(scores[i]))
        })
    });
    group.bench_function(BenchmarkId::new("ZREM", n), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0u64;
            while done < iters {
                let batch = (iters - done).min(batch_max as u64) as usize;
                let picks: Vec<usize> =
                    (0..batch).map(|k| (k * 7919 + done as usize) % n).collect();
                let start = Instant::now();
                for &p in &picks {
                    set.remove(&members[p]);
                }
                total += start.elapsed();
                for &p in &picks {
                    set.add(&members[p], scores[p]);
                }
                done += batch as u64;
            }
            total
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    let sizes: Vec<usize> = match std::env::var("ZSET_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|s| s.parse().expect("a size"))
            .collect(),
        Err(_) => vec![1_000, 100_000, 1_000_000],
    };
    for n in sizes {
        let members: Vec<Vec<u8>> = (0..n).map(member).collect();
        let scores = rng_scores(n);
        {
            let empty = ZSetValue::for_size(n, 0, &Limits::default());
            let mut set = fill(empty, &members, &scores);
            bench_one(c, "embedis skiplist", n, &mut set, &members, &scores);
        }
        {
            let mut set = fill(StdSet::default(), &members, &scores);
            bench_one(c, "std BTreeSet+HashMap", n, &mut set, &members, &scores);
        }
        {
            let mut set = fill(IndexSet::default(), &members, &scores);
            bench_one(
                c,
                "indexset BTreeSet+HashMap",
                n,
                &mut set,
                &members,
                &scores,
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
