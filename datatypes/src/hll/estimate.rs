//! The cardinality estimate from a histogram of register values: Otmar Ertl's improved estimator
//! ("New cardinality estimation algorithms for HyperLogLog sketches", arXiv:1702.01284), computed
//! with the same double-precision steps, in the same order, as Redis 7.0's `hllCount`, so that
//! PFCOUNT answers the same integer.

use super::{Q, REGISTERS};

/// `0.5 / ln 2`, Redis's `HLL_ALPHA_INF`.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// How many registers hold each value; index 0..=63 (a dense register has 6 bits, so a corrupt
/// one can hold up to 63; values above `Q + 1` are counted but, as in Redis, never used).
pub type Histogram = [u32; 64];

/// σ(x) = x + Σ x^(2^k) 2^(k-1), summed until it stops changing.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let previous = z;
        z += x * y;
        y += y;
        if previous == z {
            return z;
        }
    }
}

/// τ(x) = (1 - x - Σ (1 - x^(2^-k))² 2^-k) / 3, summed until it stops changing.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let previous = z;
        y *= 0.5;
        // Redis writes pow(1 - x, 2), which C compilers turn into this exact product.
        let d = 1.0 - x;
        z -= d * d * y;
        if previous == z {
            return z / 3.0;
        }
    }
}

/// The estimated cardinality for a histogram of the 16384 registers.
pub fn cardinality(histogram: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histogram[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += histogram[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histogram[0] as f64 / m);
    // llroundl: halves away from zero; an all-zero histogram gives z = ∞ and 0. Out of range
    // (z = 0 when every register is saturated) x86-64's llroundl answers LLONG_MIN.
    let estimate = (ALPHA_INF * m * m / z).round();
    if estimate < 9_223_372_036_854_775_808.0 {
        estimate as i64 as u64
    } else {
        i64::MIN as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_zero() {
        let mut h = [0u32; 64];
        h[0] = REGISTERS as u32;
        assert_eq!(cardinality(&h), 0);
    }

    #[test]
    fn one_register_set_is_about_one() {
        let mut h = [0u32; 64];
        h[0] = REGISTERS as u32 - 1;
        h[1] = 1;
        assert_eq!(cardinality(&h), 1);
    }

    #[test]
    fn every_register_saturated_is_finite() {
        let mut h = [0u32; 64];
        h[Q + 1] = REGISTERS as u32;
        // τ(0) = 0 and σ(0) = 0 make z = 0: the estimate is +∞, which llroundl turns into
        // LLONG_MIN on x86-64.
        assert_eq!(cardinality(&h), 1 << 63);
    }
}
