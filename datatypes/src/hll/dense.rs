//! The dense encoding: 16384 registers of 6 bits packed least-significant bit first, 12,288
//! bytes after the header — Redis's `HLL_DENSE_GET_REGISTER` / `HLL_DENSE_SET_REGISTER` layout.
//!
//! Register `i` occupies bits `6i .. 6i+6` of the little-endian bit stream, so every 12 bytes hold
//! exactly 16 registers; the bulk operations (histogram, merge, encode) work 12 bytes at a time
//! with two word loads instead of one register at a time, which lets the compiler use vector
//! instructions for the merge's maxima.

use super::estimate::Histogram;
use super::REGISTERS;

/// Bytes of the register area.
pub const DENSE_BYTES: usize = REGISTERS * 6 / 8;

/// The value of register `index`.
#[inline]
pub fn get(registers: &[u8], index: usize) -> u8 {
    let bit = index * 6;
    let byte = bit / 8;
    let shift = bit % 8;
    let b0 = registers[byte] as u16;
    // The last register ends inside the last byte; Redis reads the string's NUL terminator.
    let b1 = registers.get(byte + 1).copied().unwrap_or(0) as u16;
    (((b0 | (b1 << 8)) >> shift) & 63) as u8
}

/// Sets register `index` to `value` (< 64).
#[inline]
pub fn set(registers: &mut [u8], index: usize, value: u8) {
    let bit = index * 6;
    let byte = bit / 8;
    let shift = bit % 8;
    let v = (value as u16) << shift;
    let mask = 63u16 << shift;
    registers[byte] = (registers[byte] & !(mask as u8)) | v as u8;
    if shift > 2 {
        let b = &mut registers[byte + 1];
        *b = (*b & !((mask >> 8) as u8)) | (v >> 8) as u8;
    }
}

/// The 16 registers packed in 12 bytes (96 bits: a 64-bit and a 32-bit little-endian word).
/// Each 3-byte group (4 registers) is spread into one 32-bit word with a register per byte —
/// the bytes land in register order — by a few shifts and masks on the whole word.
#[inline(always)]
fn unpack16(chunk: &[u8]) -> [u8; 16] {
    let a = u64::from_le_bytes(chunk[0..8].try_into().expect("8 bytes"));
    let b = u32::from_le_bytes(chunk[8..12].try_into().expect("4 bytes")) as u64;
    let groups = [
        a & 0xff_ffff,
        (a >> 24) & 0xff_ffff,
        ((a >> 48) | (b << 16)) & 0xff_ffff,
        b >> 8,
    ];
    let mut v = [0u8; 16];
    for (out, g) in v.chunks_exact_mut(4).zip(groups) {
        let g = g as u32;
        let spread =
            (g & 0x3f) | ((g << 2) & 0x3f00) | ((g << 4) & 0x3f_0000) | ((g << 6) & 0x3f00_0000);
        out.copy_from_slice(&spread.to_le_bytes());
    }
    v
}

/// The inverse of [`unpack16`]: each 32-bit word of 4 registers is squeezed back into 24 bits.
#[inline(always)]
fn pack16(v: &[u8], chunk: &mut [u8]) {
    let mut groups = [0u64; 4];
    for (g, word) in groups.iter_mut().zip(v.chunks_exact(4)) {
        let w = u32::from_le_bytes(word.try_into().expect("4 bytes")) & 0x3f3f_3f3f;
        *g = ((w & 0x3f) | ((w >> 2) & 0xfc0) | ((w >> 4) & 0x3_f000) | ((w >> 6) & 0xfc_0000))
            as u64;
    }
    let a = groups[0] | groups[1] << 24 | groups[2] << 48;
    let b = (groups[2] >> 16) | groups[3] << 8;
    chunk[0..8].copy_from_slice(&a.to_le_bytes());
    chunk[8..12].copy_from_slice(&(b as u32).to_le_bytes());
}

/// How many registers hold each value. Four histograms are summed at the end: consecutive
/// increments of the same counter would otherwise wait on each other.
pub fn histogram(registers: &[u8]) -> Histogram {
    let mut lanes = [[0u32; 64]; 4];
    for chunk in registers[..DENSE_BYTES].chunks_exact(12) {
        let v = unpack16(chunk);
        for quad in v.chunks_exact(4) {
            lanes[0][quad[0] as usize] += 1;
            lanes[1][quad[1] as usize] += 1;
            lanes[2][quad[2] as usize] += 1;
            lanes[3][quad[3] as usize] += 1;
        }
    }
    let mut total = [0u32; 64];
    for (i, t) in total.iter_mut().enumerate() {
        *t = lanes[0][i] + lanes[1][i] + lanes[2][i] + lanes[3][i];
    }
    total
}

/// `max[i] = max(max[i], register i)` for every register: 32 at a time with AVX2 where the CPU
/// has it (as Redis 8 does; PFCOUNT of several keys and PFMERGE spend most of their time here),
/// else, and for the tail, 16 at a time.
pub fn merge_into(registers: &[u8], max: &mut [u8; REGISTERS]) {
    let registers = &registers[..DENSE_BYTES];
    #[allow(unused_mut)]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        done = unsafe { merge_into_avx2(registers, max) };
    }
    merge_into_scalar(&registers[done * 6 / 8..], &mut max[done..]);
}

/// The portable merge, from register 0 of `registers` into `max[0..]`.
fn merge_into_scalar(registers: &[u8], max: &mut [u8]) {
    for (chunk, out) in registers.chunks_exact(12).zip(max.chunks_exact_mut(16)) {
        let values = unpack16(chunk);
        for (o, v) in out.iter_mut().zip(values) {
            *o = (*o).max(v);
        }
    }
}

/// The merge of the first registers, 32 (24 bytes) a step: the two 12-byte halves go into the
/// two 128-bit lanes, a byte shuffle spreads each 3-byte group of 4 registers over a 32-bit word,
/// and shifts and masks put each register in a byte of its own, as [`unpack16`] does one word at
/// a time. Each step reads 28 bytes (the upper half's load runs 4 bytes past its 12), so it stops
/// before the last step would read past the registers. Returns how many registers it merged.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn merge_into_avx2(registers: &[u8], max: &mut [u8; REGISTERS]) -> usize {
    use std::arch::x86_64::*;
    const STEP_BYTES: usize = 24;
    const READ_BYTES: usize = 28;
    let steps = (registers.len() - READ_BYTES) / STEP_BYTES + 1;
    #[rustfmt::skip]
    let spread = _mm256_setr_epi8(
        0, 1, 2, -128, 3, 4, 5, -128, 6, 7, 8, -128, 9, 10, 11, -128,
        0, 1, 2, -128, 3, 4, 5, -128, 6, 7, 8, -128, 9, 10, 11, -128,
    );
    let masks = [
        _mm256_set1_epi32(0x3f),
        _mm256_set1_epi32(0x3f00),
        _mm256_set1_epi32(0x3f_0000),
        _mm256_set1_epi32(0x3f00_0000),
    ];
    for step in 0..steps {
        let at = registers.as_ptr().add(step * STEP_BYTES);
        let low = _mm_loadu_si128(at as *const __m128i);
        let high = _mm_loadu_si128(at.add(12) as *const __m128i);
        let words = _mm256_shuffle_epi8(_mm256_set_m128i(high, low), spread);
        let r0 = _mm256_and_si256(words, masks[0]);
        let r1 = _mm256_and_si256(_mm256_slli_epi32(words, 2), masks[1]);
        let r2 = _mm256_and_si256(_mm256_slli_epi32(words, 4), masks[2]);
        let r3 = _mm256_and_si256(_mm256_slli_epi32(words, 6), masks[3]);
        let values = _mm256_or_si256(_mm256_or_si256(r0, r1), _mm256_or_si256(r2, r3));
        let out = max.as_mut_ptr().add(step * 32) as *mut __m256i;
        _mm256_storeu_si256(out, _mm256_max_epu8(_mm256_loadu_si256(out), values));
    }
    steps * 32
}

/// Packs one byte per register (each < 64) into the register area.
pub fn encode(values: &[u8; REGISTERS], registers: &mut [u8]) {
    for (chunk, v) in registers[..DENSE_BYTES]
        .chunks_exact_mut(12)
        .zip(values.chunks_exact(16))
    {
        pack16(v, chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn set_then_get_leaves_the_neighbours_alone(
            writes in proptest::collection::vec((0..REGISTERS, 0u8..64), 1..200)
        ) {
            let mut registers = vec![0u8; DENSE_BYTES];
            let mut model = vec![0u8; REGISTERS];
            for (i, v) in writes {
                set(&mut registers, i, v);
                model[i] = v;
            }
            for (i, &v) in model.iter().enumerate() {
                prop_assert_eq!(get(&registers, i), v);
            }
            let mut values = [0u8; REGISTERS];
            merge_into(&registers, &mut values);
            prop_assert_eq!(&values[..], &model[..]);
            let mut encoded = vec![0u8; DENSE_BYTES];
            encode(&values, &mut encoded);
            prop_assert_eq!(&encoded, &registers);
            let h = histogram(&registers);
            for (v, &n) in h.iter().enumerate() {
                prop_assert_eq!(n as usize, model.iter().filter(|&&x| x as usize == v).count());
            }
        }
    }

    proptest! {
        /// The merge (AVX2 where the CPU has it) equals the register-by-register maximum over
        /// arbitrary register bytes and arbitrary starting maxima.
        #[test]
        fn merge_is_the_registerwise_maximum(
            bytes in proptest::collection::vec(any::<u8>(), DENSE_BYTES),
            start in proptest::collection::vec(0u8..64, REGISTERS),
        ) {
            let mut max = [0u8; REGISTERS];
            max.copy_from_slice(&start);
            merge_into(&bytes, &mut max);
            for i in 0..REGISTERS {
                prop_assert_eq!(max[i], start[i].max(get(&bytes, i)), "register {}", i);
            }
            let mut scalar = [0u8; REGISTERS];
            scalar.copy_from_slice(&start);
            merge_into_scalar(&bytes, &mut scalar);
            prop_assert_eq!(&scalar[..], &max[..]);
        }
    }

    #[test]
    fn layout_is_redis_bit_order() {
        let mut registers = vec![0u8; DENSE_BYTES];
        set(&mut registers, 0, 0b10_1101);
        set(&mut registers, 1, 0b11_0011);
        // Register 0 in bits 0..6 of byte 0; register 1 in bits 6..12.
        assert_eq!(registers[0], 0b1110_1101);
        assert_eq!(registers[1], 0b0000_1100);
        set(&mut registers, REGISTERS - 1, 63);
        assert_eq!(registers[DENSE_BYTES - 1], 0b1111_1100);
        assert_eq!(get(&registers, REGISTERS - 1), 63);
    }
}
