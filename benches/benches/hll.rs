//! Redis-compatible HyperLogLog (embedis_datatypes::hll) beside the `hyperloglogplus` crate's
//! `HyperLogLogPF` (the classic algorithm, 2^14 registers as well), for context: the crate is
//! free to choose its representation, ours must produce Redis's bytes.
//!
//! - PFADD per element into a sparse HLL (1,000 new elements into an empty one) and into a dense
//!   one (new elements into an HLL of 100,000);
//! - PFCOUNT with a stale cache: sparse (1,000 elements), dense with the kept histogram (what
//!   PFCOUNT does), and dense by a full pass over the registers (what Redis does);
//! - PFCOUNT of 2 and 10 dense keys (merge into one byte per register, then estimate);
//! - PFMERGE of 2 and 10 dense HLLs into a dense destination.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use embedis_datatypes::hll::{self, dense, estimate, Hll, DEFAULT_SPARSE_MAX_BYTES, REGISTERS};
use hyperloglogplus::{HyperLogLog, HyperLogLogPF};
use std::collections::hash_map::RandomState;

const MAX: usize = DEFAULT_SPARSE_MAX_BYTES;

fn element(i: u64) -> [u8; 8] {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes()
}

fn filled(n: u64, offset: u64) -> Hll {
    let mut h = Hll::new();
    for i in 0..n {
        h.add(&element(offset + i), MAX).unwrap();
    }
    h
}

fn crate_filled(n: u64, offset: u64) -> HyperLogLogPF<[u8; 8], RandomState> {
    let mut h = HyperLogLogPF::new(14, RandomState::new()).unwrap();
    for i in 0..n {
        h.insert(&element(offset + i));
    }
    h
}

fn pfadd(c: &mut Criterion) {
    let mut g = c.benchmark_group("hll/PFADD per element");
    g.throughput(Throughput::Elements(1_000));
    g.bench_function("embedis sparse (1,000 into empty)", |b| {
        b.iter_batched_ref(
            Hll::new,
            |h| {
                for i in 0..1_000 {
                    h.add(&element(i), MAX).unwrap();
                }
            },
            BatchSize::SmallInput,
        )
    });
    let mut next = 1_000_000u64;
    let mut dense_hll = filled(100_000, 0);
    g.bench_function("embedis dense (into 100,000)", |b| {
        b.iter(|| {
            for _ in 0..1_000 {
                next += 1;
                dense_hll.add(&element(next), MAX).unwrap();
            }
        })
    });
    let mut theirs = crate_filled(100_000, 0);
    g.bench_function("hyperloglogplus PF (into 100,000)", |b| {
        b.iter(|| {
            for _ in 0..1_000 {
                next += 1;
                theirs.insert(&element(next));
            }
        })
    });
    g.finish();
}

fn pfcount(c: &mut Criterion) {
    let mut g = c.benchmark_group("hll/PFCOUNT stale cache");
    let mut sparse = filled(1_000, 0);
    assert_eq!(sparse.encoding(), hll::Encoding::Sparse);
    g.bench_function("embedis sparse (1,000)", |b| {
        b.iter(|| {
            sparse.invalidate_cache();
            black_box(sparse.count().unwrap())
        })
    });
    let mut dense_hll = filled(100_000, 0);
    g.bench_function("embedis dense, kept histogram", |b| {
        b.iter(|| {
            dense_hll.invalidate_cache();
            black_box(dense_hll.count().unwrap())
        })
    });
    let bytes = dense_hll.as_bytes().to_vec();
    g.bench_function("embedis dense, full register pass", |b| {
        b.iter(|| {
            let h = dense::histogram(&black_box(&bytes)[hll::HEADER..]);
            black_box(estimate::cardinality(&h))
        })
    });
    let mut theirs = crate_filled(100_000, 0);
    g.bench_function("hyperloglogplus PF dense", |b| {
        b.iter(|| black_box(theirs.count()))
    });
    g.finish();

    let mut g = c.benchmark_group("hll/PFCOUNT of several dense keys");
    for keys in [2usize, 10] {
        let sources: Vec<Hll> = (0..keys as u64)
            .map(|k| filled(20_000, k * 10_000))
            .collect();
        g.bench_function(format!("embedis {keys} keys"), |b| {
            b.iter(|| {
                let mut max = Box::new([0u8; REGISTERS]);
                for s in &sources {
                    s.merge_into(&mut max).unwrap();
                }
                black_box(hll::count_registers(&max))
            })
        });
    }
    g.finish();
}

fn pfmerge(c: &mut Criterion) {
    let mut g = c.benchmark_group("hll/PFMERGE dense");
    for keys in [2usize, 10] {
        let sources: Vec<Hll> = (0..keys as u64)
            .map(|k| filled(20_000, k * 10_000))
            .collect();
        let mut dest = sources[0].clone();
        g.bench_function(format!("embedis {keys} HLLs"), |b| {
            b.iter(|| {
                // PFMERGE dest src…: the destination is read as a source too.
                let mut max = Box::new([0u8; REGISTERS]);
                dest.merge_into(&mut max).unwrap();
                for s in &sources[1..] {
                    s.merge_into(&mut max).unwrap();
                }
                dest.raise_all(&max, MAX);
            })
        });
        let theirs: Vec<_> = (0..keys as u64)
            .map(|k| crate_filled(20_000, k * 10_000))
            .collect();
        let mut their_dest = theirs[0].clone();
        g.bench_function(format!("hyperloglogplus PF {keys} HLLs"), |b| {
            b.iter(|| {
                for s in &theirs[1..] {
                    their_dest.merge(s).unwrap();
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, pfadd, pfcount, pfmerge);
criterion_main!(benches);
