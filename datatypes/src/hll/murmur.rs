//! MurmurHash64A, the hash Redis's HyperLogLog applies to every element.
//!
//! Austin Appleby's public-domain algorithm, 64-bit variant "A", reading the input as
//! little-endian words as Redis does on every platform, so that an element lands in the same
//! register with the same run of zeros here and in Redis.

const M: u64 = 0xc6a4_a793_5bd1_e995;
const R: u32 = 47;

/// MurmurHash64A of `data` with `seed`.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut k = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        // The C code's fall-through switch: byte i goes to bits 8i.
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A straight transcription of the C reference (byte-wise tail switch), to check the
    /// chunked version against.
    fn reference(data: &[u8], seed: u64) -> u64 {
        let len = data.len();
        let mut h = seed ^ (len as u64).wrapping_mul(M);
        let mut i = 0;
        while i + 8 <= len {
            let mut k = 0u64;
            for j in 0..8 {
                k |= (data[i + j] as u64) << (8 * j);
            }
            k = k.wrapping_mul(M);
            k ^= k >> R;
            k = k.wrapping_mul(M);
            h ^= k;
            h = h.wrapping_mul(M);
            i += 8;
        }
        let rest = len & 7;
        if rest >= 7 {
            h ^= (data[i + 6] as u64) << 48;
        }
        if rest >= 6 {
            h ^= (data[i + 5] as u64) << 40;
        }
        if rest >= 5 {
            h ^= (data[i + 4] as u64) << 32;
        }
        if rest >= 4 {
            h ^= (data[i + 3] as u64) << 24;
        }
        if rest >= 3 {
            h ^= (data[i + 2] as u64) << 16;
        }
        if rest >= 2 {
            h ^= (data[i + 1] as u64) << 8;
        }
        if rest >= 1 {
            h ^= data[i] as u64;
            h = h.wrapping_mul(M);
        }
        h ^= h >> R;
        h = h.wrapping_mul(M);
        h ^= h >> R;
        h
    }

    #[test]
    fn matches_the_reference_for_every_tail_length() {
        let data: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        for len in 0..data.len() {
            for seed in [0, 0xadc8_3b19, u64::MAX] {
                assert_eq!(murmur64a(&data[..len], seed), reference(&data[..len], seed));
            }
        }
    }

    #[test]
    fn empty_input_depends_only_on_the_seed() {
        // h = seed; then the final mix.
        let mut h = 0xadc8_3b19u64;
        h ^= h >> R;
        h = h.wrapping_mul(M);
        h ^= h >> R;
        assert_eq!(murmur64a(b"", 0xadc8_3b19), h);
    }
}
