//! Redis's HyperLogLog, to the byte: the value is a string that Redis 7.0 would write for the same
//! commands, so GET of an HLL key, PFCOUNT and PFMERGE agree with Redis and an HLL written by one
//! can be read by the other.
//!
//! The string is a 16-byte header — `HYLL`, the encoding (0 dense, 1 sparse), 3 unused bytes,
//! the cached cardinality as 8 little-endian bytes whose top bit marks it stale — followed by the
//! 16384 registers, either [`dense`] (6 bits each, 12,288 bytes) or [`sparse`] (a run-length code
//! for small cardinalities, promoted to dense past `hll-sparse-max-bytes` or at a register value
//! above 32). An element is hashed with [`murmur::murmur64a`] (seed `0xadc83b19`): the low 14 bits
//! choose the register, the position of the first 1 bit in the rest is the value it offers.
//! PFCOUNT uses Ertl's estimator over the histogram of register values ([`estimate`]).
//!
//! Beyond Redis: once a dense [`Hll`] has been counted it keeps the histogram up to date as
//! registers change, so a PFCOUNT after a PFADD costs the estimator alone (about a hundred
//! floating-point steps) rather than a pass over 16384 registers; and a sparse [`Hll`] keeps an
//! index of its opcodes ([`sparse::Index`], at most a quarter of the code's size once it is
//! past 256 bytes, nothing below 64), so that PFADD finds a register's opcode from a nearby
//! checkpoint rather than by walking the code from its start. Neither is part of the string: GET
//! still returns exactly Redis's bytes, and two HLLs are equal when their strings are.

pub mod dense;
pub mod estimate;
pub mod murmur;
pub mod sparse;

#[cfg(test)]
mod tests;

use estimate::Histogram;

/// Register-index bits.
pub const P: usize = 14;
pub const REGISTERS: usize = 1 << P;
/// Bits of the hash that count zeros: a register holds at most `Q + 1`.
pub const Q: usize = 64 - P;
pub const HEADER: usize = 16;
/// Length of a dense HLL string.
pub const DENSE_SIZE: usize = HEADER + dense::DENSE_BYTES;
/// The hash seed Redis uses.
pub const SEED: u64 = 0xadc8_3b19;
/// `hll-sparse-max-bytes`' default.
pub const DEFAULT_SPARSE_MAX_BYTES: usize = 3000;

const MAGIC: &[u8; 4] = b"HYLL";
const ENCODING_DENSE: u8 = 0;
const ENCODING_SPARSE: u8 = 1;
/// Byte 15's top bit: the cached cardinality is stale.
const STALE: u8 = 0x80;

/// The string claims to be an HLL but its registers do not add up (Redis's `INVALIDOBJ`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Dense,
    Sparse,
}

/// Where an element goes: its register and the value it offers (`hllPatLen`).
#[inline]
pub fn position(element: &[u8]) -> (usize, u8) {
    let hash = murmur::murmur64a(element, SEED);
    let index = (hash as usize) & (REGISTERS - 1);
    // The sentinel bit bounds the count at Q + 1.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// The cardinality estimate for one byte per register (PFCOUNT of several keys merges into
/// this form, Redis's internal `HLL_RAW`).
pub fn count_registers(registers: &[u8; REGISTERS]) -> u64 {
    estimate::cardinality(&byte_histogram(registers))
}

/// The histogram of one byte per register, counted in four lanes (see [`dense::histogram`]).
fn byte_histogram(registers: &[u8; REGISTERS]) -> Histogram {
    let mut lanes = [[0u32; 64]; 4];
    for chunk in registers.chunks_exact(4) {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            lane[v as usize & 63] += 1;
        }
    }
    let mut histogram = [0u32; 64];
    for (i, h) in histogram.iter_mut().enumerate() {
        *h = lanes.iter().map(|l| l[i]).sum();
    }
    histogram
}

/// The encoding of a string that passes [`Hll::is_hll`].
pub fn encoding_of(bytes: &[u8]) -> Encoding {
    if bytes[4] == ENCODING_DENSE {
        Encoding::Dense
    } else {
        Encoding::Sparse
    }
}

/// `max[i] = max(max[i], register i)` for a string that passes [`Hll::is_hll`] (`hllMerge`),
/// without making an [`Hll`] of it: PFCOUNT of several keys and PFMERGE only read their sources.
pub fn merge_bytes_into(bytes: &[u8], max: &mut [u8; REGISTERS]) -> Result<(), Corrupt> {
    match encoding_of(bytes) {
        Encoding::Dense => {
            dense::merge_into(&bytes[HEADER..], max);
            Ok(())
        }
        Encoding::Sparse => sparse::for_each_set(&bytes[HEADER..], |i, v| {
            if v > max[i] {
                max[i] = v;
            }
        }),
    }
}

/// PFSELFTEST: the same elements (`j ^ seed` as 8 little-endian bytes, j = 1..=`elements`) go
/// into a dense HLL and one that starts sparse; at 1, 10, 100… the sparse one must still be sparse
/// while small, both must count the same, and the count must be within 6 standard errors (1 at
/// 10, where collisions make a larger error likely). Redis's test, on our implementation.
pub fn self_test(elements: u64, sparse_max_bytes: usize, seed: u64) -> Result<(), String> {
    let mut dense = Hll::new();
    dense
        .to_dense()
        .map_err(|_| "cannot build a dense HLL".to_string())?;
    let mut sparse = Hll::new();
    let relative_error = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint = 1u64;
    for j in 1..=elements {
        let element = (j ^ seed).to_le_bytes();
        let corrupt = |_| "corrupted HLL".to_string();
        dense.add(&element, sparse_max_bytes).map_err(corrupt)?;
        sparse.add(&element, sparse_max_bytes).map_err(corrupt)?;
        if j != checkpoint {
            continue;
        }
        if j < sparse_max_bytes as u64 / 2 && sparse.encoding() != Encoding::Sparse {
            return Err("sparse encoding not used".into());
        }
        let count = dense.estimate().map_err(corrupt)?;
        if sparse.estimate().map_err(corrupt)? != count {
            return Err("dense/sparse disagree".into());
        }
        let error = (checkpoint as i64 - count as i64).unsigned_abs();
        let max_error = if j == 10 {
            1
        } else {
            (relative_error * 6.0 * checkpoint as f64).ceil() as u64
        };
        if error > max_error {
            return Err(format!("Too big error. card:{checkpoint} abserr:{error}"));
        }
        checkpoint *= 10;
    }
    Ok(())
}

/// An HLL string with, when dense, the histogram of its registers, and when sparse, an index of
/// its opcodes. Two HLLs are equal when their strings are: the rest is derived from the string.
#[derive(Clone, Debug)]
pub struct Hll {
    bytes: Vec<u8>,
    /// For dense HLLs: the histogram of register values once a count has needed it, then kept
    /// up to date by every register change; `None` until then (and always for sparse HLLs, which
    /// are short enough to scan).
    histogram: Option<Box<[u16; 64]>>,
    /// For sparse HLLs whose code has grown past a few dozen bytes: checkpoints that let an
    /// update start its scan near the register ([`sparse::Index`]); `None` otherwise.
    index: Option<sparse::Index>,
}

impl PartialEq for Hll {
    fn eq(&self, other: &Hll) -> bool {
        self.bytes == other.bytes
    }
}

impl Default for Hll {
    fn default() -> Self {
        Self::new()
    }
}

impl Hll {
    /// An empty HLL as PFADD creates it: sparse, one XZERO, cached cardinality 0 and valid.
    pub fn new() -> Hll {
        let mut bytes = Vec::with_capacity(HEADER + 2);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&[ENCODING_SPARSE, 0, 0, 0]);
        bytes.extend_from_slice(&[0; 8]);
        bytes.extend_from_slice(&sparse::empty());
        Hll {
            bytes,
            histogram: None,
            index: None,
        }
    }

    /// Whether `bytes` passes Redis's checks for an HLL string (`isHLLObjectOrReply`): the magic,
    /// a known encoding, and the exact length when dense. The sparse code is checked only when
    /// used, as in Redis.
    pub fn is_hll(bytes: &[u8]) -> bool {
        bytes.len() >= HEADER
            && &bytes[..4] == MAGIC
            && bytes[4] <= ENCODING_SPARSE
            && (bytes[4] != ENCODING_DENSE || bytes.len() == DENSE_SIZE)
    }

    /// Takes a string that passes [`Hll::is_hll`]; gives it back otherwise.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Hll, Vec<u8>> {
        if !Self::is_hll(&bytes) {
            return Err(bytes);
        }
        Ok(Hll {
            bytes,
            histogram: None,
            index: None,
        })
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn encoding(&self) -> Encoding {
        encoding_of(&self.bytes)
    }

    /// The cached cardinality, unless marked stale.
    pub fn cached_count(&self) -> Option<u64> {
        (self.bytes[15] & STALE == 0)
            .then(|| u64::from_le_bytes(self.bytes[8..16].try_into().expect("8 bytes")))
    }

    /// Stores a cardinality in the cache (which makes it valid unless its top bit is set).
    pub fn store_count(&mut self, count: u64) {
        self.bytes[8..16].copy_from_slice(&count.to_le_bytes());
    }

    pub fn invalidate_cache(&mut self) {
        self.bytes[15] |= STALE;
    }

    /// Adds an element (`hllAdd`): true if a register changed. Does not touch the cache except
    /// where Redis's sparse update does; PFADD invalidates it when anything changed.
    pub fn add(&mut self, element: &[u8], sparse_max_bytes: usize) -> Result<bool, Corrupt> {
        let (index, value) = position(element);
        self.raise(index, value, sparse_max_bytes)
    }

    /// Raises register `index` to `value` if it is lower (`hllDenseSet` / `hllSparseSet`,
    /// promoting to dense as Redis does).
    pub fn raise(
        &mut self,
        index: usize,
        value: u8,
        sparse_max_bytes: usize,
    ) -> Result<bool, Corrupt> {
        if self.encoding() == Encoding::Sparse {
            sparse::Index::keep_up(&mut self.index, &self.bytes[HEADER..]);
            let outcome = sparse::set(
                &mut self.bytes,
                HEADER,
                &mut self.index,
                index,
                value,
                sparse_max_bytes,
            )?;
            match outcome {
                sparse::SetOutcome::Unchanged => return Ok(false),
                sparse::SetOutcome::Updated => {
                    self.invalidate_cache();
                    return Ok(true);
                }
                sparse::SetOutcome::Promote => {
                    self.to_dense()?;
                }
            }
        }
        Ok(self.raise_dense(index, value))
    }

    fn raise_dense(&mut self, index: usize, value: u8) -> bool {
        let registers = &mut self.bytes[HEADER..];
        let old = dense::get(registers, index);
        if value <= old {
            return false;
        }
        dense::set(registers, index, value);
        if let Some(histogram) = self.histogram.as_mut() {
            histogram[old as usize] -= 1;
            histogram[value as usize] += 1;
        }
        true
    }

    /// Converts a sparse HLL to dense (`hllSparseToDense`): the header is kept (cache and unused
    /// bytes included). True if it was sparse.
    pub fn to_dense(&mut self) -> Result<bool, Corrupt> {
        if self.encoding() == Encoding::Dense {
            return Ok(false);
        }
        let mut bytes = vec![0u8; DENSE_SIZE];
        bytes[..HEADER].copy_from_slice(&self.bytes[..HEADER]);
        bytes[4] = ENCODING_DENSE;
        let mut values = [0u8; REGISTERS];
        sparse::for_each_set(&self.bytes[HEADER..], |i, v| values[i] = v)?;
        dense::encode(&values, &mut bytes[HEADER..]);
        self.bytes = bytes;
        self.histogram = None;
        self.index = None;
        Ok(true)
    }

    /// The histogram of register values, and whether the registers add up to 16384; a dense
    /// HLL's is computed once and kept from then on.
    fn histogram(&mut self) -> (Histogram, bool) {
        if self.encoding() == Encoding::Sparse {
            return sparse::histogram(&self.bytes[HEADER..]);
        }
        let bytes = &self.bytes;
        let kept = self
            .histogram
            .get_or_insert_with(|| Box::new(dense::histogram(&bytes[HEADER..]).map(|n| n as u16)));
        (kept.map(|n| n as u32), true)
    }

    /// Estimates the cardinality from the registers, ignoring the cache (`hllCount`).
    pub fn estimate(&mut self) -> Result<u64, Corrupt> {
        let (histogram, valid) = self.histogram();
        if valid {
            Ok(estimate::cardinality(&histogram))
        } else {
            Err(Corrupt)
        }
    }

    /// PFCOUNT of one key: the cached cardinality, or a fresh estimate that is then cached.
    /// The flag says whether the string changed (Redis counts that as a write).
    pub fn count(&mut self) -> Result<(u64, bool), Corrupt> {
        if let Some(cached) = self.cached_count() {
            return Ok((cached, false));
        }
        let count = self.estimate()?;
        self.store_count(count);
        Ok((count, true))
    }

    /// `max[i] = max(max[i], register i)` (`hllMerge`).
    pub fn merge_into(&self, max: &mut [u8; REGISTERS]) -> Result<(), Corrupt> {
        merge_bytes_into(&self.bytes, max)
    }

    /// PFMERGE's write: raises every register to `max`'s value, through the sparse code (and its
    /// promotions) when sparse as Redis does, in one pass when dense. `max` must already hold
    /// this HLL's registers (PFMERGE reads its destination as a source), so the dense result is
    /// `max` itself. Invalidates the cache.
    pub fn raise_all(&mut self, max: &[u8; REGISTERS], sparse_max_bytes: usize) {
        debug_assert!({
            let mut check = Box::new(*max);
            self.merge_into(&mut check).is_err() || check[..] == max[..]
        });
        for (index, &value) in max.iter().enumerate() {
            if self.encoding() == Encoding::Dense {
                dense::encode(max, &mut self.bytes[HEADER..]);
                self.histogram = None;
                break;
            }
            if value != 0 {
                // Redis ignores a failure here: the sources were all checked while merging.
                let _ = self.raise(index, value, sparse_max_bytes);
            }
        }
        self.invalidate_cache();
    }

    /// Every register's value (PFDEBUG GETREG, after converting to dense).
    pub fn registers(&self) -> Result<Vec<u8>, Corrupt> {
        let mut values = [0u8; REGISTERS];
        self.merge_into(&mut values)?;
        Ok(values.to_vec())
    }

    /// PFDEBUG DECODE's text, for a sparse HLL.
    pub fn decode_sparse(&self) -> Option<String> {
        (self.encoding() == Encoding::Sparse).then(|| sparse::decode(&self.bytes[HEADER..]))
    }
}
