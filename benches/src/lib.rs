//! criterion benchmarks for embedis (see `benches/`); this library only hosts shared helpers.

/// `count` keys shaped like the ones redis-benchmark uses (`key:000000012345`).
pub fn benchmark_keys(count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| format!("key:{i:012}").into_bytes())
        .collect()
}
