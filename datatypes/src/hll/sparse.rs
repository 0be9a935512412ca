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
//!
//! Finding the opcode that covers a register means walking the code from its start, which made
//! PFADD into a sparse HLL cost a pass over up to 3000 bytes. An [`Index`] of checkpoints kept
//! beside the code lets [`set`] start the walk near the register instead; it changes where the
//! walk starts, never what is written (`set_reference`, the plain scan, is kept for the tests
//! that hold the two to the same bytes).

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

/// Emits the opcode for `len` zero registers (ZERO up to 64, else XZERO).
fn zeros(len: usize, push: &mut impl FnMut(u8)) {
    if len > ZERO_MAX_LEN {
        let l = len - 1;
        push((l >> 8) as u8 | 0x40);
        push(l as u8);
    } else {
        push((len - 1) as u8);
    }
}

#[cfg(test)]
fn push_zeros(seq: &mut Vec<u8>, len: usize) {
    zeros(len, &mut |b| seq.push(b));
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

/// Checkpoints on the walk through a sparse code, so that [`set`] need not scan from the first
/// opcode: the 16384 registers are cut into `blocks` equal blocks (a power of two, 16..=256), and
/// for each block the index holds the opcode covering the block's first register — its offset in
/// the code, its first register and the size of the opcode before it (0 when it is the first) —
/// packed into a `u32` (offset in bits 0..16, previous size in 16..18, first register in 18..32).
/// A scan starting there passes through exactly the opcodes, and remembers exactly the previous
/// opcode, that a scan from the start would, so the bytes written are the same.
///
/// An update changes the code only from the opcode before the one it splits (where Redis's merge
/// window starts) to the end of what it rewrote or merged; [`set`] re-walks that stretch to
/// rewrite the checkpoints of the blocks starting in it, and moves every later checkpoint by the
/// change in length (their opcodes, and the registers they start at, are otherwise the same).
/// Only codes that cover exactly 16384 registers, end on an opcode boundary and are under 64 KiB
/// are indexed (every code Redis writes; a corrupt one is scanned as Redis scans it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    entries: Box<[u32]>,
}

/// Codes shorter than this are scanned from the start (a few dozen opcodes at most).
const INDEX_MIN_CODE: usize = 64;
const INDEX_MIN_BLOCKS: usize = 16;
const INDEX_MAX_BLOCKS: usize = 256;

#[inline]
fn pack(offset: usize, first: usize, prev_size: usize) -> u32 {
    offset as u32 | (prev_size as u32) << 16 | (first as u32) << 18
}

/// (offset, first register, size of the previous opcode).
#[inline]
fn unpack(entry: u32) -> (usize, usize, usize) {
    (
        (entry & 0xffff) as usize,
        (entry >> 18) as usize,
        ((entry >> 16) & 3) as usize,
    )
}

impl Index {
    /// The number of blocks worth keeping for a code of `code_len` bytes (0: none): about one
    /// checkpoint per 16 bytes of code (at least 16, at most 256), so that a scan from a
    /// checkpoint passes a dozen opcodes or so, and the index (4 bytes a block) costs at most as
    /// much as the code, a quarter of it past 256 bytes.
    pub fn blocks_for(code_len: usize) -> usize {
        if code_len < INDEX_MIN_CODE {
            return 0;
        }
        let wanted = code_len / 16;
        (1usize << (usize::BITS - 1 - wanted.leading_zeros()))
            .clamp(INDEX_MIN_BLOCKS, INDEX_MAX_BLOCKS)
    }

    /// Builds the index of `code` with `blocks` blocks (a power of two, at most 16384), unless
    /// the code is not one this index can describe (see [`Index`]).
    pub fn build(code: &[u8], blocks: usize) -> Option<Index> {
        debug_assert!(blocks.is_power_of_two() && blocks <= REGISTERS);
        if code.len() > u16::MAX as usize {
            return None;
        }
        let shift = REGISTERS.trailing_zeros() - blocks.trailing_zeros();
        let mut entries = vec![0u32; blocks].into_boxed_slice();
        let (mut at, mut first, mut prev_size) = (0, 0, 0);
        let mut block = 0;
        while at < code.len() {
            let op = op_at(code, at);
            let (span, size) = (op.span(), op.size());
            if at + size > code.len() || first + span > REGISTERS {
                return None;
            }
            while block < blocks && block << shift < first + span {
                entries[block] = pack(at, first, prev_size);
                block += 1;
            }
            prev_size = size;
            at += size;
            first += span;
        }
        (first == REGISTERS).then_some(Index { entries })
    }

    /// Builds or rebuilds `index` when the code has grown enough to deserve more blocks (never on
    /// shrinking, so that a code hovering at a threshold is not re-indexed at every update).
    pub fn keep_up(index: &mut Option<Index>, code: &[u8]) {
        let wanted = Self::blocks_for(code.len());
        if wanted > index.as_ref().map_or(0, Index::blocks) {
            *index = Self::build(code, wanted);
        }
    }

    pub fn blocks(&self) -> usize {
        self.entries.len()
    }

    /// Bytes the index takes on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.entries.len() * 4
    }

    #[inline]
    fn shift(&self) -> u32 {
        REGISTERS.trailing_zeros() - self.entries.len().trailing_zeros()
    }

    /// The checkpoint of the block holding register `index`.
    #[inline]
    fn checkpoint(&self, index: usize) -> (usize, usize, usize) {
        unpack(self.entries[index >> self.shift()])
    }

    /// Brings the checkpoints up to date after an update of `code` (see [`Index`]): `from` is a
    /// point of the walk at or before the first changed opcode, `dirty_end` the end of the bytes
    /// rewritten, `delta` the change in length. False if the index cannot describe the code any
    /// more.
    fn repair(
        &mut self,
        code: &[u8],
        from: (usize, usize, usize),
        dirty_end: usize,
        delta: isize,
    ) -> bool {
        if code.len() > u16::MAX as usize {
            return false;
        }
        let shift = self.shift();
        let round_up = (1usize << shift) - 1;
        let blocks = self.entries.len();
        let (mut at, mut first, mut prev_size) = from;
        // The opcodes from `from` through the first one past the rewritten bytes (whose previous
        // opcode may have changed size): rewrite the checkpoints of the blocks they start.
        let after = loop {
            let op = op_at(code, at);
            let (span, size) = (op.span(), op.size());
            let last_block = ((first + span - 1) >> shift).min(blocks - 1);
            for entry in &mut self.entries[(first + round_up) >> shift..=last_block] {
                *entry = pack(at, first, prev_size);
            }
            if at >= dirty_end || at + size >= code.len() {
                break first + span;
            }
            prev_size = size;
            at += size;
            first += span;
        };
        // Later opcodes only moved. Offsets stay in 0..65536, so the wrapping add never carries
        // into the other fields.
        let shift_by = delta as i32 as u32;
        for entry in &mut self.entries[((after + round_up) >> shift).min(blocks)..] {
            *entry = entry.wrapping_add(shift_by);
        }
        true
    }
}

/// Where step 1 of [`set`] found the register.
struct Found {
    /// The opcode covering the register: its offset, first register and itself.
    p: usize,
    first: usize,
    op: Op,
    /// The opcode before it, if any.
    prev: Option<usize>,
    /// The register.
    index: usize,
    /// The walk's state (offset, first register, size of the opcode before) at `prev`, when the
    /// scan passed through it.
    prev_state: Option<(usize, usize, usize)>,
}

/// Step 1 of [`set`]: walks from the opcode at `p` (on the walk from the first opcode, covering
/// registers from `first`, after an opcode of `prev_size` bytes at `prev`) to the one covering
/// `index`.
#[inline]
fn find(
    bytes: &[u8],
    mut p: usize,
    mut first: usize,
    mut prev: Option<usize>,
    mut prev_size: usize,
    index: usize,
) -> Option<Found> {
    let mut prev_state = None;
    while p < bytes.len() {
        let op = op_at(bytes, p);
        let span = op.span();
        if index < first + span {
            return Some(Found {
                p,
                first,
                op,
                prev,
                index,
                prev_state,
            });
        }
        prev = Some(p);
        prev_state = Some((p, first, prev_size));
        prev_size = op.size();
        p += prev_size;
        first += span;
    }
    None
}

/// What steps 2–4 of [`set`] did to the code: the bytes up to `dirty_end` (from the previous
/// opcode on) may have changed, the rest moved by `delta`.
struct Change {
    dirty_end: usize,
    delta: isize,
}

/// Raises register `index` to `value` in the code that follows a `header`-byte header in
/// `bytes` (`hllSparseSet`); `max_bytes` limits the whole string (`hll-sparse-max-bytes`).
///
/// With an [`Index`] of the code, the scan for the register starts at the checkpoint of its
/// block and the index is kept valid (or dropped if it can no longer describe the code); with
/// `None` it scans from the first opcode, as Redis does. Either way the bytes are Redis's.
pub fn set(
    bytes: &mut Vec<u8>,
    header: usize,
    index_of_code: &mut Option<Index>,
    index: usize,
    value: u8,
    max_bytes: usize,
) -> Result<SetOutcome, Corrupt> {
    if value > VAL_MAX_VALUE {
        return Ok(SetOutcome::Promote);
    }
    let Some(checkpoints) = index_of_code.as_mut() else {
        let found = find(bytes, header, 0, None, 0, index).ok_or(Corrupt)?;
        return Ok(update(bytes, header, &found, value, max_bytes).0);
    };
    // Step 1 from the block's checkpoint.
    let (at, first, prev_size) = checkpoints.checkpoint(index);
    let prev = (prev_size != 0).then(|| header + at - prev_size);
    let found = find(bytes, header + at, first, prev, prev_size, index).ok_or(Corrupt)?;
    // Where the repair walk starts: at the previous opcode (where the merge window starts) when
    // the scan passed it, else at the checkpoint of the block holding its first register (the
    // opcode there starts no later, and nothing before the previous opcode changes).
    let from = match (found.prev_state, found.prev) {
        (Some((at, first, prev_size)), _) => (at - header, first, prev_size),
        (None, None) => (0, 0, 0),
        (None, Some(prev)) => {
            let prev_first = found.first - op_at(bytes, prev).span();
            checkpoints.checkpoint(prev_first)
        }
    };
    let (outcome, change) = update(bytes, header, &found, value, max_bytes);
    if let Some(change) = change {
        let code = &bytes[header..];
        if !checkpoints.repair(code, from, change.dirty_end - header, change.delta) {
            *index_of_code = None;
        }
    }
    Ok(outcome)
}

/// Steps 2–4 of [`set`] on the opcode step 1 found.
fn update(
    bytes: &mut Vec<u8>,
    header: usize,
    found: &Found,
    value: u8,
    max_bytes: usize,
) -> (SetOutcome, Option<Change>) {
    let Found {
        p,
        first,
        op,
        prev,
        index,
        ..
    } = *found;
    let old_end = bytes.len();
    // Step 2: the trivial cases, updated in place.
    let mut dirty_end = match op {
        Op::Val { value: old, .. } if old >= value => return (SetOutcome::Unchanged, None),
        Op::Val { len: 1, .. } | Op::Zero(1) => {
            bytes[p] = val_byte(value, 1);
            p + 1
        }
        _ => {
            // Step 3: split the opcode into (before, our register, after).
            let last = first + op.span() - 1;
            let mut seq = [0u8; 5];
            let mut n = 0;
            let mut push = |b: u8| {
                seq[n] = b;
                n += 1;
            };
            match op {
                Op::Zero(_) | Op::XZero(_) => {
                    if index != first {
                        zeros(index - first, &mut push);
                    }
                    push(val_byte(value, 1));
                    if index != last {
                        zeros(last - index, &mut push);
                    }
                }
                Op::Val { value: current, .. } => {
                    if index != first {
                        push(val_byte(current, index - first));
                    }
                    push(val_byte(value, 1));
                    if index != last {
                        push(val_byte(current, last - index));
                    }
                }
            }
            let seq = &seq[..n];
            let old_len = op.size();
            let delta = n as isize - old_len as isize;
            if delta > 0 && old_end + delta as usize > max_bytes {
                return (SetOutcome::Promote, None);
            }
            // Redis moves what follows the opcode (if anything does) by `delta`, copies the
            // sequence over the old opcode and sets the length to old + delta — which, after a
            // truncated XZERO at the very end, cuts the sequence short.
            let new_len = (old_end as isize + delta) as usize;
            let next = p + old_len;
            if next < old_end {
                if delta > 0 {
                    bytes.resize(new_len, 0);
                }
                bytes.copy_within(next..old_end, p + n);
                bytes.truncate(new_len);
                bytes[p..p + n].copy_from_slice(seq);
            } else {
                bytes.truncate(p);
                bytes.extend_from_slice(seq);
                bytes.resize(new_len, 0);
            }
            p + n
        }
    };

    // Step 4: merge equal adjacent VALs, scanning up to 5 opcodes from the previous one.
    let mut end = bytes.len();
    let mut q = prev.unwrap_or(header);
    let mut window = 5;
    while q < end && window > 0 {
        window -= 1;
        let b = bytes[q];
        if b & 0xc0 == 0x40 {
            q += 2;
            continue;
        }
        if b & 0xc0 == 0 {
            q += 1;
            continue;
        }
        if q + 1 < end && bytes[q + 1] & 0x80 != 0 {
            let (Op::Val { value: v1, len: l1 }, Op::Val { value: v2, len: l2 }) =
                (op_at(bytes, q), op_at(bytes, q + 1))
            else {
                unreachable!("both are VAL opcodes")
            };
            if v1 == v2 && l1 + l2 <= VAL_MAX_LEN {
                bytes[q + 1] = val_byte(v1, l1 + l2);
                bytes.remove(q);
                end -= 1;
                // What follows `q` moved back one byte; the merged opcode at `q` is rewritten.
                if dirty_end > q {
                    dirty_end -= 1;
                }
                dirty_end = dirty_end.max(q + 1);
                // Try again from the same place (the merged VAL may merge with the next); as in
                // Redis the retry counts against the window.
                continue;
            }
        }
        q += 1;
    }
    let delta = end as isize - old_end as isize;
    (SetOutcome::Updated, Some(Change { dirty_end, delta }))
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

/// The first implementation of [`set`], kept verbatim as the reference the property tests
/// hold the indexed path to: a plain scan from the first opcode and a copied tail.
#[cfg(test)]
pub fn set_reference(
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
