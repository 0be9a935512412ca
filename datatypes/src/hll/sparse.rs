//! The sparse encoding: the registers as a run-length code of three opcodes, exactly as Redis
//! writes it (`hllSparseSet`), so that the bytes a GET returns are Redis's bytes.
//!
//! - ZERO `00xxxxxx`: 1..=64 registers set to 0;
//! - XZERO `01xxxxxx yyyyyyyy`: 1..=16384 registers set to 0;
//! - VAL `1vvvvvxx`: 1..=4 registers set to 1..=32.
//!
//! Updating a register splits the opcode that covers it into at most three (at most 5 bytes) and
//! then merges equal neighbouring VALs in a window of five opcodes — not an optimal code, but the
//! one Redis produces, which is what byte-identity needs. The functions here work on the opcode
//! bytes (after the 16-byte header) and, like Redis's, read a zero past the end where a
//! truncated XZERO would have its second byte (Redis reads the string's NUL terminator).

use super::estimate::Histogram;
use super::{Corrupt, REGISTERS};

pub const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
pub const XZERO_MAX_LEN: usize = 16384;

/// One decoded opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Zero(usize),
    XZero(usize),
    Val { value: u8, len: usize },
}

impl Op {
    /// Registers covered.
    #[inline]
    pub fn span(self) -> usize {
        match self {
            Op::Zero(n) | Op::XZero(n) => n,
            Op::Val { len, .. } => len,
        }
    }

    /// Bytes the opcode takes.
    #[inline]
    fn size(self) -> usize {
        match self {
            Op::XZero(_) => 2,
            _ => 1,
        }
    }
}

#[inline]
fn byte_at(code: &[u8], i: usize) -> u8 {
    code.get(i).copied().unwrap_or(0)
}

/// The opcode starting at `code[at]`.
#[inline]
pub fn op_at(code: &[u8], at: usize) -> Op {
    let b = code[at];
    if b & 0x80 != 0 {
        Op::Val {
            value: ((b >> 2) & 0x1f) + 1,
            len: (b & 3) as usize + 1,
        }
    } else if b & 0x40 != 0 {
        Op::XZero((((b & 0x3f) as usize) << 8 | byte_at(code, at + 1) as usize) + 1)
    } else {
        Op::Zero((b & 0x3f) as usize + 1)
    }
}

#[inline]
fn val_byte(value: u8, len: usize) -> u8 {
    0x80 | (value - 1) << 2 | (len - 1) as u8
}

/// Appends the opcode for `len` zero registers (ZERO up to 64, else XZERO).
fn push_zeros(seq: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        let l = len - 1;
        seq.push((l >> 8) as u8 | 0x40);
        seq.push(l as u8);
    } else {
        seq.push((len - 1) as u8);
    }
}

/// The opcodes of a new, empty HLL: XZERO covering all registers.
pub fn empty() -> [u8; 2] {
    let l = REGISTERS - 1;
    [(l >> 8) as u8 | 0x40, l as u8]
}

/// Every opcode with the index of its first register, in order.
pub fn ops(code: &[u8]) -> impl Iterator<Item = (usize, Op)> + '_ {
    let mut at = 0;
    let mut first = 0;
    std::iter::from_fn(move || {
        if at >= code.len() {
            return None;
        }
        let op = op_at(code, at);
        let item = (first, op);
        at += op.size();
        first += op.span();
        Some(item)
    })
}

/// What [`set`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOutcome {
    /// The register already held at least the value.
    Unchanged,
    /// The code was updated in place.
    Updated,
    /// The value does not fit this encoding (above 32, or the code would grow beyond
    /// `max_bytes`): the caller converts to dense and sets the register there.
    Promote,
}

/// Raises register `index` to `value` in the code that follows a 16-byte header in `bytes`
/// (`hllSparseSet`); `max_bytes` limits the whole string (`hll-sparse-max-bytes`).
pub fn set(
    bytes: &mut Vec<u8>,
    header: usize,
    index: usize,
    value: u8,
    max_bytes: usize,
) -> Result<SetOutcome, Corrupt> {
    if value > VAL_MAX_VALUE {
        return Ok(SetOutcome::Promote);
    }
    // Step 1: find the opcode covering `index`, and the one before it.
    let end = bytes.len();
    let mut p = header;
    let mut first = 0usize;
    let mut prev: Option<usize> = None;
    let mut op = Op::Zero(0);
    let mut span = 0;
    while p < end {
        op = op_at(&bytes[..], p);
        span = op.span();
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += op.size();
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupt);
    }
    let next = Some(p + op.size()).filter(|&n| n < end);

    // Step 2: the trivial cases, updated in place.
    let mut end = end;
    let replaced_in_place = match op {
        Op::Val { value: old, .. } if old >= value => return Ok(SetOutcome::Unchanged),
        Op::Val { len: 1, .. } | Op::Zero(1) => {
            bytes[p] = val_byte(value, 1);
            true
        }
        _ => false,
    };
    if !replaced_in_place {
        // Step 3: split the opcode into (before, our register, after).
        let last = first + span - 1;
        let mut seq: Vec<u8> = Vec::with_capacity(5);
        match op {
            Op::Zero(_) | Op::XZero(_) => {
                if index != first {
                    push_zeros(&mut seq, index - first);
                }
                seq.push(val_byte(value, 1));
                if index != last {
                    push_zeros(&mut seq, last - index);
                }
            }
            Op::Val { value: current, .. } => {
                if index != first {
                    seq.push(val_byte(current, index - first));
                }
                seq.push(val_byte(value, 1));
                if index != last {
                    seq.push(val_byte(current, last - index));
                }
            }
        }
        let old_len = op.size();
        let delta = seq.len() as isize - old_len as isize;
        if delta > 0 && bytes.len() + delta as usize > max_bytes {
            return Ok(SetOutcome::Promote);
        }
        // Redis moves what follows (if anything does) by `delta`, copies the sequence over the
        // old opcode and sets the length to old + delta.
        let new_len = (end as isize + delta) as usize;
        let tail: Vec<u8> = match next {
            Some(n) => bytes[n..end].to_vec(),
            None => Vec::new(),
        };
        bytes.truncate(p);
        bytes.extend_from_slice(&seq);
        bytes.extend_from_slice(&tail);
        bytes.resize(new_len, 0);
        end = new_len;
    }

    // Step 4: merge equal adjacent VALs, scanning up to 5 opcodes from the previous one.
    let mut p = prev.unwrap_or(header);
    let mut window = 5;
    while p < end && window > 0 {
        window -= 1;
        let b = bytes[p];
        if b & 0xc0 == 0x40 {
            p += 2;
            continue;
        }
        if b & 0xc0 == 0 {
            p += 1;
            continue;
        }
        if p + 1 < end && bytes[p + 1] & 0x80 != 0 {
            let (Op::Val { value: v1, len: l1 }, Op::Val { value: v2, len: l2 }) =
                (op_at(&bytes[..], p), op_at(&bytes[..], p + 1))
            else {
                unreachable!("both are VAL opcodes")
            };
            if v1 == v2 && l1 + l2 <= VAL_MAX_LEN {
                bytes[p + 1] = val_byte(v1, l1 + l2);
                bytes.remove(p);
                end -= 1;
                // Try again from the same place (the merged VAL may merge with the next); as in
                // Redis the retry counts against the window.
                continue;
            }
        }
        p += 1;
    }
    Ok(SetOutcome::Updated)
}

/// Calls `f(index, value)` for every register covered by a VAL opcode, in order; fails when the
/// code covers anything but exactly 16384 registers (`hllSparseToDense` / `hllMerge`; Redis 7.0.15
/// stops at the first opcode that runs past the last register).
pub fn for_each_set(code: &[u8], mut f: impl FnMut(usize, u8)) -> Result<(), Corrupt> {
    let mut at = 0;
    let mut index = 0usize;
    while at < code.len() {
        let op = op_at(code, at);
        at += op.size();
        if index + op.span() > REGISTERS {
            return Err(Corrupt);
        }
        if let Op::Val { value, len } = op {
            for i in index..index + len {
                f(i, value);
            }
        }
        index += op.span();
    }
    if index == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// The histogram of register values (`hllSparseRegHisto`): invalid unless the code covers
/// exactly 16384 registers, but counted either way.
pub fn histogram(code: &[u8]) -> (Histogram, bool) {
    let mut h = [0u32; 64];
    let mut index = 0usize;
    let mut at = 0;
    while at < code.len() {
        let op = op_at(code, at);
        at += op.size();
        match op {
            Op::Zero(n) | Op::XZero(n) => h[0] += n as u32,
            Op::Val { value, len } => h[value as usize] += len as u32,
        }
        index += op.span();
    }
    (h, index == REGISTERS)
}

/// PFDEBUG DECODE's text: `z:<n>`, `Z:<n>` and `v:<value>,<n>`, space-separated.
pub fn decode(code: &[u8]) -> String {
    let mut out = String::new();
    let mut at = 0;
    while at < code.len() {
        let op = op_at(code, at);
        at += op.size();
        if !out.is_empty() {
            out.push(' ');
        }
        match op {
            Op::Zero(n) => out.push_str(&format!("z:{n}")),
            Op::XZero(n) => out.push_str(&format!("Z:{n}")),
            Op::Val { value, len } => out.push_str(&format!("v:{value},{len}")),
        }
    }
    out
}
