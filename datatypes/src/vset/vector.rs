//! The stored form of one vector and the arithmetic on it, bit for bit as Redis 8.2's vector
//! sets compute it: L2 normalisation, the three quantisations (`f32`, `int8` with a per-vector
//! range, `bin` with one sign bit per component), the cosine distance (1 − dot product of
//! normalised vectors, in 0..2) and the de-quantised vector VEMB returns.
//!
//! Why bit for bit: VSIM WITHSCORES and VEMB print these floats, and clients compare them with
//! Redis's. The order of the float additions is therefore Redis's: four products summed before
//! being added to the accumulator, two accumulators for the dot product, and for vectors of 16
//! components or more the 16-lane fused multiply-add and reduction tree that Redis's AVX-512
//! path computes on the machines that have it (the scalar order otherwise, selected at run time
//! as Redis does). The `int8` and `bin` distances are integer sums, exact in any order.

/// How a set stores its vectors (Redis's `HNSW_QUANT_*` numbers, saved in RDB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quant {
    F32 = 0,
    Q8 = 1,
    Bin = 2,
}

impl Quant {
    pub fn from_code(code: u64) -> Option<Quant> {
        match code {
            0 => Some(Quant::F32),
            1 => Some(Quant::Q8),
            2 => Some(Quant::Bin),
            _ => None,
        }
    }

    /// The name VINFO and VEMB RAW give.
    pub fn name(self) -> &'static str {
        match self {
            Quant::F32 => "f32",
            Quant::Q8 => "int8",
            Quant::Bin => "bin",
        }
    }

    /// Bytes one vector of `dim` components takes (Redis's `hnsw_quants_bytes`).
    pub fn bytes(self, dim: usize) -> usize {
        match self {
            Quant::F32 => dim * 4,
            Quant::Q8 => dim,
            Quant::Bin => dim.div_ceil(64) * 8,
        }
    }
}

/// A vector as stored: normalised, then quantised. `range` is the `int8` scale (the largest
/// absolute component of the normalised vector); `l2` the norm the input had.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    pub data: Data,
    pub l2: f32,
    pub range: f32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    F32(Box<[f32]>),
    Q8(Box<[i8]>),
    Bin(Box<[u64]>),
}

/// Normalises `x` in place and returns its L2 norm, or `None` for the zero vector (left as
/// is). The sum of squares adds four squares at a time, as Redis does.
pub fn normalize(x: &mut [f32]) -> Option<f32> {
    let mut l2 = 0f32;
    let mut chunks = x.chunks_exact(4);
    for c in &mut chunks {
        l2 += c[0] * c[0] + c[1] * c[1] + c[2] * c[2] + c[3] * c[3];
    }
    for v in chunks.remainder() {
        l2 += v * v;
    }
    if l2 == 0.0 {
        return None;
    }
    let l2 = l2.sqrt();
    for v in x.iter_mut() {
        *v /= l2;
    }
    Some(l2)
}

/// `int8` quantisation: components scaled so that the largest magnitude becomes ±127.
pub fn quantize_q8(x: &[f32]) -> (Box<[i8]>, f32) {
    let max_abs = x.iter().fold(0f32, |m, &v| {
        let m = if v > m { v } else { m };
        if -v > m {
            -v
        } else {
            m
        }
    });
    if max_abs == 0.0 {
        return (vec![0i8; x.len()].into_boxed_slice(), 0.0);
    }
    let scale = 127.0f32 / max_abs;
    let q = x.iter().map(|&v| (v * scale).round() as i8).collect();
    (q, max_abs)
}

/// Binary quantisation: bit j of the words is set when component j is positive.
pub fn quantize_bin(x: &[f32]) -> Box<[u64]> {
    let mut words = vec![0u64; x.len().div_ceil(64)];
    for (j, &v) in x.iter().enumerate() {
        if v > 0.0 {
            words[j / 64] |= 1 << (j % 64);
        }
    }
    words.into_boxed_slice()
}

impl Stored {
    /// Redis's node creation from a float vector: normalise (keeping the norm, 1 for the zero
    /// vector), then quantise.
    pub fn from_floats(mut x: Vec<f32>, quant: Quant) -> Stored {
        let l2 = normalize(&mut x).unwrap_or(1.0);
        Stored::quantized(x, quant, l2)
    }

    /// A query: normalised and quantised like a node, without keeping the norm.
    pub fn query(x: &[f32], quant: Quant) -> Stored {
        let mut x = x.to_vec();
        normalize(&mut x);
        Stored::quantized(x, quant, 1.0)
    }

    fn quantized(x: Vec<f32>, quant: Quant, l2: f32) -> Stored {
        let (data, range) = match quant {
            Quant::F32 => (Data::F32(x.into_boxed_slice()), 0.0),
            Quant::Q8 => {
                let (q, range) = quantize_q8(&x);
                (Data::Q8(q), range)
            }
            Quant::Bin => (Data::Bin(quantize_bin(&x)), 0.0),
        };
        Stored { data, l2, range }
    }

    /// The vector VEMB returns: de-quantised, then multiplied back by the norm (not for `bin`,
    /// whose components are ±1).
    pub fn dequantize(&self, dim: usize) -> Vec<f32> {
        match &self.data {
            Data::F32(v) => v.iter().map(|&c| c * self.l2).collect(),
            Data::Q8(q) => q
                .iter()
                .map(|&c| (c as f32 * self.range) / 127.0 * self.l2)
                .collect(),
            Data::Bin(w) => (0..dim)
                .map(|j| {
                    if w[j / 64] & (1 << (j % 64)) != 0 {
                        1.0
                    } else {
                        -1.0
                    }
                })
                .collect(),
        }
    }

    /// The stored bytes, as VEMB RAW and RDB show them (little-endian).
    pub fn raw_bytes(&self) -> Vec<u8> {
        match &self.data {
            Data::F32(v) => v.iter().flat_map(|c| c.to_le_bytes()).collect(),
            Data::Q8(q) => q.iter().map(|&c| c as u8).collect(),
            Data::Bin(w) => w.iter().flat_map(|c| c.to_le_bytes()).collect(),
        }
    }

    /// The inverse of [`Stored::raw_bytes`]; `None` if the length does not fit `dim`.
    pub fn from_raw(quant: Quant, dim: usize, raw: &[u8], l2: f32, range: f32) -> Option<Stored> {
        if raw.len() != quant.bytes(dim) {
            return None;
        }
        let data = match quant {
            Quant::F32 => Data::F32(
                raw.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect(),
            ),
            Quant::Q8 => Data::Q8(raw.iter().map(|&b| b as i8).collect()),
            Quant::Bin => Data::Bin(
                raw.chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect(),
            ),
        };
        Some(Stored { data, l2, range })
    }

    /// The cosine distance between two stored vectors of the same set (0 identical, 2 opposite).
    pub fn distance(&self, other: &Stored, dim: usize) -> f32 {
        match (&self.data, &other.data) {
            (Data::F32(a), Data::F32(b)) => distance_f32(a, b),
            (Data::Q8(a), Data::Q8(b)) => distance_q8(a, b, self.range, other.range),
            (Data::Bin(a), Data::Bin(b)) => distance_bin(a, b, dim),
            _ => unreachable!("vectors of one set share their quantisation"),
        }
    }
}

/// Whether this CPU takes Redis's AVX-512 path (`avx512f` and `avx512bw`).
fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// 1 − dot product of two normalised float vectors.
pub fn distance_f32(x: &[f32], y: &[f32]) -> f32 {
    if x.len() >= 16 && avx512() {
        return 1.0 - dot_lanes16(x, y);
    }
    let (mut dot0, mut dot1) = (0f32, 0f32);
    let mut i = 0;
    while i + 7 < x.len() {
        dot0 += x[i] * y[i] + x[i + 1] * y[i + 1] + x[i + 2] * y[i + 2] + x[i + 3] * y[i + 3];
        dot1 +=
            x[i + 4] * y[i + 4] + x[i + 5] * y[i + 5] + x[i + 6] * y[i + 6] + x[i + 7] * y[i + 7];
        i += 8;
    }
    while i < x.len() {
        dot0 += x[i] * y[i];
        i += 1;
    }
    1.0 - (dot0 + dot1)
}

/// The dot product as 16 fused multiply-add lanes, reduced as GCC's `_mm512_reduce_add_ps`
/// does (upper half onto lower half, down to two sums), then the remaining components.
fn dot_lanes16(x: &[f32], y: &[f32]) -> f32 {
    let mut lanes = [0f32; 16];
    let mut i = 0;
    while i + 15 < x.len() {
        for (l, lane) in lanes.iter_mut().enumerate() {
            *lane = x[i + l].mul_add(y[i + l], *lane);
        }
        i += 16;
    }
    let mut t3 = [0f32; 8];
    for l in 0..8 {
        t3[l] = lanes[8 + l] + lanes[l];
    }
    let t6 = [t3[4] + t3[0], t3[5] + t3[1], t3[6] + t3[2], t3[7] + t3[3]];
    let mut dot = (t6[0] + t6[2]) + (t6[1] + t6[3]);
    while i < x.len() {
        dot = x[i].mul_add(y[i], dot);
        i += 1;
    }
    dot
}

/// The `int8` distance: an exact integer dot product scaled back by both ranges, clamped to
/// 0..2; a zero vector is at distance 1 from everything.
pub fn distance_q8(x: &[i8], y: &[i8], range_a: f32, range_b: f32) -> f32 {
    if range_a == 0.0 || range_b == 0.0 {
        return 1.0;
    }
    let scale = (range_a / 127.0) * (range_b / 127.0);
    let dot: i32 = x.iter().zip(y).map(|(&a, &b)| a as i32 * b as i32).sum();
    let distance = 1.0 - dot as f32 * scale;
    distance.clamp(0.0, 2.0)
}

/// The `bin` distance: twice the share of differing signs.
pub fn distance_bin(x: &[u64], y: &[u64], dim: usize) -> f32 {
    let opposite: u32 = x.iter().zip(y).map(|(a, b)| (a ^ b).count_ones()).sum();
    opposite as f32 * 2.0 / dim as f32
}

/// Redis's deterministic REDUCE projection: a Hadamard-pattern matrix of ±1/√input, row i
/// column j negative when `i & j` has an odd number of bits, stored row by row.
pub fn projection_matrix(input: usize, output: usize) -> Vec<f32> {
    let scale = (1.0f64 / (input as f64).sqrt()) as f32;
    let mut m = Vec::with_capacity(input * output);
    for i in 0..output {
        for j in 0..input {
            let sign = if (i & j).count_ones() % 2 == 0 {
                1.0
            } else {
                -1.0
            };
            m.push(sign * scale);
        }
    }
    m
}

/// The projected vector: one sequential float sum per output component.
pub fn project(x: &[f32], matrix: &[f32], output: usize) -> Vec<f32> {
    let input = x.len();
    (0..output)
        .map(|i| {
            let row = &matrix[i * input..(i + 1) * input];
            row.iter().zip(x).fold(0f32, |sum, (m, v)| sum + m * v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn vemb_of_an_int8_vector_is_redis_s() {
        // Redis 8.2.3: VADD k VALUES 3 1 2 3 a; VEMB k a → 0.992125928401947 2.007874011993408 3
        let s = Stored::from_floats(vec![1.0, 2.0, 3.0], Quant::Q8);
        let v = s.dequantize(3);
        assert_eq!(v[0] as f64, 0.992125928401947);
        assert_eq!(v[1] as f64, 2.007874011993408);
        assert_eq!(v[2] as f64, 3.0);
        assert_eq!(s.l2 as f64, 3.7416574954986572);
        assert_eq!(s.range as f64, 0.8017836809158325);
    }

    #[test]
    fn reduce_uses_the_hadamard_pattern() {
        // Redis 8.2.3: VADD r REDUCE 2 VALUES 4 1 2 3 4 a; VEMB → 5, -0.98425… (int8 of 5, -1)
        let m = projection_matrix(4, 2);
        assert_eq!(project(&[1.0, 2.0, 3.0, 4.0], &m, 2), vec![5.0, -1.0]);
    }

    proptest! {
        #[test]
        fn distances_stay_in_range(a in prop::collection::vec(-10f32..10.0, 1..40),
                                   seed in any::<u64>()) {
            let b: Vec<f32> = a.iter().enumerate()
                .map(|(i, v)| v * ((seed >> (i % 64)) & 1) as f32 - 0.5).collect();
            for quant in [Quant::F32, Quant::Q8, Quant::Bin] {
                let (x, y) = (Stored::from_floats(a.clone(), quant), Stored::query(&b, quant));
                let d = x.distance(&y, a.len());
                prop_assert!((-1e-5..=2.0 + 1e-5).contains(&d), "{quant:?} {d}");
                let raw = x.raw_bytes();
                prop_assert_eq!(Stored::from_raw(quant, a.len(), &raw, x.l2, x.range), Some(x));
            }
        }

        #[test]
        fn lanes_agree_with_a_plain_sum(a in prop::collection::vec(-1f32..1.0, 16..80)) {
            let plain: f64 = a.iter().map(|v| (*v as f64) * (*v as f64)).sum();
            prop_assert!((dot_lanes16(&a, &a) as f64 - plain).abs() < 1e-3);
        }
    }
}
