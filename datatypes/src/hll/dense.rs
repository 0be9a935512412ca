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

/// `max[i] = max(max[i], register i)` for every register, 16 at a time.
pub fn merge_into(registers: &[u8], max: &mut [u8; REGISTERS]) {
    for (chunk, out) in registers[..DENSE_BYTES]
        .chunks_exact(12)
        .zip(max.chunks_exact_mut(16))
    {
        let values = unpack16(chunk);
        for (o, v) in out.iter_mut().zip(values) {
            *o = (*o).max(v);
        }
    }
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
