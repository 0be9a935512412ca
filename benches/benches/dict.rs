//! The keyspace dict against std's HashMap (same hasher), for context: insert with incremental
//! rehashing, hits, misses, and a full SCAN.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use embedis_benches::benchmark_keys;
use embedis_datatypes::{Dict, SmallBytes};
use std::collections::HashMap;

const N: usize = 100_000;

fn filled_dict(keys: &[Vec<u8>]) -> Dict<SmallBytes, u64> {
    let mut d = Dict::new();
    for (i, k) in keys.iter().enumerate() {
        d.insert(SmallBytes::new(k), i as u64);
    }
    while d.rehash(1000) {}
    d
}

fn bench(c: &mut Criterion) {
    let keys = benchmark_keys(N);
    let mut group = c.benchmark_group("dict");
    group.bench_function("insert 100k (Dict)", |b| {
        b.iter_batched(
            Dict::<SmallBytes, u64>::new,
            |mut d| {
                for (i, k) in keys.iter().enumerate() {
                    d.insert(SmallBytes::new(k), i as u64);
                }
                d
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("insert 100k (std HashMap, ahash)", |b| {
        b.iter_batched(
            HashMap::<SmallBytes, u64, ahash::RandomState>::default,
            |mut d| {
                for (i, k) in keys.iter().enumerate() {
                    d.insert(SmallBytes::new(k), i as u64);
                }
                d
            },
            BatchSize::LargeInput,
        )
    });
    let dict = filled_dict(&keys);
    let map: HashMap<SmallBytes, u64, ahash::RandomState> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (SmallBytes::new(k), i as u64))
        .collect();
    group.bench_function("get hit (Dict)", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 7919) % N;
            black_box(dict.get(&keys[i][..]))
        })
    });
    group.bench_function("get hit (std HashMap)", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 7919) % N;
            black_box(map.get(&keys[i][..]))
        })
    });
    group.bench_function("get miss (Dict)", |b| {
        b.iter(|| black_box(dict.get(&b"key:missing0000"[..])))
    });
    group.bench_function("full scan 100k (Dict)", |b| {
        b.iter(|| {
            let mut cursor = 0;
            let mut n = 0;
            loop {
                cursor = dict.scan(cursor, |_, _| n += 1);
                if cursor == 0 {
                    break;
                }
            }
            black_box(n)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
