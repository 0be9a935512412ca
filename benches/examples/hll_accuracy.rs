//! How accurate is PFCOUNT? Many independent sets of n distinct random elements (n = 10^3 … 10^6)
//! go into fresh HLLs exactly as PFADD would put them; the relative error of each estimate is
//! collected, and the table gives its mean, its standard deviation (theory for 16384 registers:
//! 1.04 / √16384 ≈ 0.81%) and the worst case.
//!
//! `cargo run --release -p embedis-benches --example hll_accuracy [trials-scale]`

use embedis_datatypes::hll::{Hll, DEFAULT_SPARSE_MAX_BYTES, REGISTERS};

fn main() {
    let scale: f64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("a number"))
        .unwrap_or(1.0);
    let plan = [
        (1_000u64, 1_000usize),
        (10_000, 500),
        (100_000, 500),
        (1_000_000, 200),
    ];
    let mut state = 0x853c_49e6_748f_ea9bu64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    println!(
        "theory: standard error 1.04 / sqrt({REGISTERS}) = {:.3}%\n",
        104.0 / (REGISTERS as f64).sqrt()
    );
    println!("| distinct elements | sets | mean error | std dev of error | worst |error| |");
    println!("|---|---|---|---|---|");
    for (n, trials) in plan {
        let trials = ((trials as f64 * scale) as usize).max(2);
        let mut errors = Vec::with_capacity(trials);
        for _ in 0..trials {
            let mut hll = Hll::new();
            for _ in 0..n {
                hll.add(&next().to_le_bytes(), DEFAULT_SPARSE_MAX_BYTES)
                    .expect("valid");
            }
            let estimate = hll.estimate().expect("valid") as f64;
            errors.push((estimate - n as f64) / n as f64);
        }
        let mean = errors.iter().sum::<f64>() / trials as f64;
        let variance =
            errors.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (trials as f64 - 1.0);
        let worst = errors.iter().fold(0f64, |w, e| w.max(e.abs()));
        println!(
            "| {n} | {trials} | {:+.3}% | {:.3}% | {:.3}% |",
            mean * 100.0,
            variance.sqrt() * 100.0,
            worst * 100.0
        );
    }
}
