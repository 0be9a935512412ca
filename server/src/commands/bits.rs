//! Bit commands over string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP and BITFIELD
//! (BITOP with Redis 8.2's DIFF, DIFF1, ANDOR and ONE from compat-version 8.2).
//!
//! A string is a bitmap whose bit 0 is the most significant bit of its first byte; bytes past the
//! end read as zero. BITCOUNT and BITPOS take Redis 7.0's ranges in bytes (the default) or bits,
//! with negative indexes counted from the end, and keep Redis's corner cases: BITCOUNT and BITPOS
//! on a missing key answer before their arguments are even parsed in 7.0 (7.4 checks the arguments
//! first, answering their errors), BITCOUNT (but not BITPOS) treats a
//! reversed range of two negative indexes as empty, and BITPOS looking for a 0 without an explicit
//! end answers the first bit past the string when the range is all ones.
//!
//! Like Redis, SETBIT and BITOP produce `raw` strings (SETBIT converts an `int` or `embstr` value
//! even when the bit does not change), and SETBIT only counts as a change (`dirty`) when the
//! string grew or the bit flipped.

use crate::base::config::event_class::{GENERIC, STRING};
use embedis_protocol::number::parse_i64;

use super::strings::{string_len, string_of};
use crate::base::compat::CompatVersion;
use crate::base::cstr::word_is;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::kernel::ctx::Ctx;
use crate::kernel::table::keys::flag;
use crate::kernel::table::{Acl, CommandSpec, Flags, KeySpec};
use crate::model::keyspace::{StoreIf, Ttl};

/// A bit offset argument: a canonical integer from 0 to 8 × proto-max-bulk-len − 1.
fn bit_offset(arg: &[u8], limit: i64) -> CmdResult<u64> {
    match parse_i64(arg) {
        Some(n) if n >= 0 && (n >> 3) < limit => Ok(n as u64),
        _ => Err(Error::msg(
            "ERR bit offset is not an integer or out of range",
        )),
    }
}

/// Bit `offset` of `bytes` (0 past the end).
fn bit_at(bytes: &[u8], offset: u64) -> u8 {
    let byte = (offset >> 3) as usize;
    bytes.get(byte).map_or(0, |b| (b >> (7 - (offset & 7))) & 1)
}

fn setbit(ctx: &mut Ctx<'_>) -> CmdResult {
    let limit = ctx.server.config.proto_max_bulk_len;
    let offset = bit_offset(ctx.arg(2), limit)?;
    let on = match parse_i64(ctx.arg(3)) {
        Some(v @ (0 | 1)) => v as u8,
        _ => return Err(Error::msg("ERR bit is not an integer or out of range")),
    };
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    let byte = (offset >> 3) as usize;
    let shift = 7 - (offset & 7) as u32;
    let previous = match ctx.ks.write(db, key, now) {
        Some(value) => {
            let old_len = string_len(value)?;
            let buffer = value.make_raw().expect("a string");
            let grew = buffer.len() <= byte;
            if grew {
                buffer.resize(byte + 1, 0);
            }
            let previous = (buffer[byte] >> shift) & 1;
            buffer[byte] = (buffer[byte] & !(1 << shift)) | (on << shift);
            if grew && old_len == 0 {
                // Redis 8.2.3 counts the growth of an existing empty string nowhere.
                ctx.ks.keysize_uncounted(db, key);
            }
            if grew || previous != on {
                ctx.ks.dirty += 1;
                ctx.notify(STRING, "setbit", key);
            }
            previous
        }
        None => {
            let mut buffer = vec![0u8; byte + 1];
            buffer[byte] = on << shift;
            ctx.ks.add(db, key, Value::Raw(Box::new(buffer)), None, now);
            ctx.notify(STRING, "setbit", key);
            0
        }
    };
    ctx.out.integer(previous as i64);
    Ok(())
}

fn getbit(ctx: &mut Ctx<'_>) -> CmdResult {
    let limit = ctx.server.config.proto_max_bulk_len;
    let offset = bit_offset(ctx.arg(2), limit)?;
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    let bit = match ctx.ks.read(db, key, now) {
        Some(value) => bit_at(&string_of(value)?, offset),
        None => 0,
    };
    ctx.out.integer(bit as i64);
    Ok(())
}

/// BYTE or BIT (as C strings, case-insensitively); anything else is a syntax error.
fn unit_is_bit(arg: &[u8]) -> CmdResult<bool> {
    if word_is(arg, "bit") {
        Ok(true)
    } else if word_is(arg, "byte") {
        Ok(false)
    } else {
        Err(Error::Syntax)
    }
}

/// True if BITCOUNT and BITPOS check their arguments before looking at the key (Redis 7.4; 7.2.6 still looked at the key first): a
/// missing key no longer hides a syntax or integer error.
fn arguments_before_key(ctx: &Ctx<'_>) -> bool {
    ctx.registry.version >= CompatVersion::V7_4
}

/// BITCOUNT's range arguments checked alone (7.4: before the key's type, or its absence).
fn check_bitcount_range(args: &[bytes::Bytes]) -> CmdResult<()> {
    match args.len() {
        2 => Ok(()),
        4 | 5 => {
            parse_i64(&args[2]).ok_or(Error::NotInteger)?;
            parse_i64(&args[3]).ok_or(Error::NotInteger)?;
            args.get(4).map(|unit| unit_is_bit(unit)).transpose()?;
            Ok(())
        }
        _ => Err(Error::Syntax),
    }
}

/// BITPOS's range arguments checked alone, in Redis's order: start, unit, then end.
fn check_bitpos_range(args: &[bytes::Bytes]) -> CmdResult<()> {
    match args.len() {
        3 => Ok(()),
        4..=6 => {
            parse_i64(&args[3]).ok_or(Error::NotInteger)?;
            args.get(5).map(|unit| unit_is_bit(unit)).transpose()?;
            let end = args
                .get(4)
                .map(|end| parse_i64(end).ok_or(Error::NotInteger));
            end.transpose()?;
            Ok(())
        }
        _ => Err(Error::Syntax),
    }
}

/// Converts a clamped range in `bits` or bytes to an inclusive bit range.
fn to_bit_range((start, end): (i64, i64), bits: bool) -> (u64, u64) {
    if bits {
        (start as u64, end as u64)
    } else {
        (start as u64 * 8, end as u64 * 8 + 7)
    }
}

/// Number of set bits in bits `first..=last` of `bytes` (both within the string).
fn count_ones(bytes: &[u8], first: u64, last: u64) -> u64 {
    let (first_byte, last_byte) = ((first >> 3) as usize, (last >> 3) as usize);
    let span = &bytes[first_byte..=last_byte];
    let mut chunks = span.chunks_exact(8);
    let mut count: u64 = (&mut chunks)
        .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")).count_ones() as u64)
        .sum();
    count += chunks
        .remainder()
        .iter()
        .map(|b| b.count_ones() as u64)
        .sum::<u64>();
    // Take back the bits of the edge bytes that lie outside the range.
    let before = !(0xFFu8 >> (first & 7));
    let after = 0xFFu8.checked_shr(1 + (last & 7) as u32).unwrap_or(0);
    count -= (bytes[first_byte] & before).count_ones() as u64;
    count -= (bytes[last_byte] & after).count_ones() as u64;
    count
}

fn bitcount(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    let args_first = arguments_before_key(ctx);
    // Before 7.4 the key comes first: a missing key is 0 whatever the other arguments say.
    let value = ctx.ks.read(db, key, now);
    if value.is_none() && !args_first {
        ctx.out.integer(0);
        return Ok(());
    }
    if args_first {
        check_bitcount_range(args)?;
    }
    // A missing key is an empty string, once its arguments are read.
    let bytes = match value {
        Some(value) => string_of(value)?,
        None => super::strings::StrBytes::Slice(b""),
    };
    let len = bytes.len() as i64;
    let range = match args.len() {
        2 => (len > 0).then(|| (0, len as u64 * 8 - 1)),
        4 | 5 => {
            let start = parse_i64(&args[2]).ok_or(Error::NotInteger)?;
            let end = parse_i64(&args[3]).ok_or(Error::NotInteger)?;
            let bits = match args.get(4) {
                Some(unit) => unit_is_bit(unit)?,
                None => false,
            };
            let total = if bits { len * 8 } else { len };
            if start < 0 && end < 0 && start > end {
                None
            } else {
                super::strings::clamp_range(start, end, total).map(|r| to_bit_range(r, bits))
            }
        }
        _ => return Err(Error::Syntax),
    };
    let count = range.map_or(0, |(first, last)| count_ones(&bytes, first, last));
    ctx.out.integer(count as i64);
    Ok(())
}

/// Position of the first bit equal to `bit` in bits `first..=last` of `bytes`.
fn find_bit(bytes: &[u8], first: u64, last: u64, bit: u8) -> Option<u64> {
    let (first_byte, last_byte) = ((first >> 3) as usize, (last >> 3) as usize);
    // Bytes made only of the other bit value are skipped whole.
    let skip = if bit == 1 { 0x00 } else { 0xFF };
    let mut i = first_byte;
    while i <= last_byte {
        // Looking for a 1 in `candidate`, with the bits outside the range cleared.
        let mut candidate = if bit == 1 { bytes[i] } else { !bytes[i] };
        if i == first_byte {
            candidate &= 0xFF >> (first & 7);
        }
        if i == last_byte {
            candidate &= 0xFF << (7 - (last & 7));
        }
        if candidate != 0 {
            return Some(i as u64 * 8 + candidate.leading_zeros() as u64);
        }
        i += 1;
        if i < last_byte {
            i += bytes[i..last_byte]
                .iter()
                .position(|&b| b != skip)
                .unwrap_or(last_byte - i);
        }
    }
    None
}

fn bitpos(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let bit = match parse_i64(&args[2]) {
        Some(b @ (0 | 1)) => b as u8,
        Some(_) => return Err(Error::msg("ERR The bit argument must be 1 or 0.")),
        None => return Err(Error::NotInteger),
    };
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    let args_first = arguments_before_key(ctx);
    // A missing key is an endless run of zeros (answered before reading the range before 7.4).
    let missing_answer = if bit == 1 { -1 } else { 0 };
    let value = ctx.ks.read(db, key, now);
    let missing = value.is_none();
    if missing && !args_first {
        ctx.out.integer(missing_answer);
        return Ok(());
    }
    if args_first {
        check_bitpos_range(args)?;
    }
    let bytes = match value {
        Some(value) => string_of(value)?,
        None => super::strings::StrBytes::Slice(b""),
    };
    let len = bytes.len() as i64;
    let (range, end_given) = match args.len() {
        3 => ((len > 0).then(|| (0, len as u64 * 8 - 1)), false),
        4..=6 => {
            let start = parse_i64(&args[3]).ok_or(Error::NotInteger)?;
            let bits = match args.get(5) {
                Some(unit) => unit_is_bit(unit)?,
                None => false,
            };
            let end = match args.get(4) {
                Some(end) => parse_i64(end).ok_or(Error::NotInteger)?,
                None => len - 1,
            };
            let total = if bits { len * 8 } else { len };
            let range =
                super::strings::clamp_range(start, end, total).map(|r| to_bit_range(r, bits));
            (range, args.len() >= 5)
        }
        _ => return Err(Error::Syntax),
    };
    let position = match range {
        _ if missing => missing_answer,
        None => -1,
        Some((first, last)) => match find_bit(&bytes, first, last, bit) {
            Some(p) => p as i64,
            // No explicit end: the string continues with zeros after the range.
            None if bit == 0 && !end_given => last as i64 + 1,
            None => -1,
        },
    };
    ctx.out.integer(position);
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
    /// Redis 8.2: the first source without any bit of the others.
    Diff,
    /// Redis 8.2: the bits of any other source that the first lacks.
    Diff1,
    /// Redis 8.2: the first source's bits that some other source has too.
    AndOr,
    /// Redis 8.2: the bits set in exactly one source.
    One,
}

impl BitOp {
    /// The operation named `word`; the four of Redis 8.2 only from that version on.
    fn parse(word: &[u8], version: CompatVersion) -> CmdResult<BitOp> {
        const OPS: [(&str, BitOp); 8] = [
            ("and", BitOp::And),
            ("or", BitOp::Or),
            ("xor", BitOp::Xor),
            ("not", BitOp::Not),
            ("diff", BitOp::Diff),
            ("diff1", BitOp::Diff1),
            ("andor", BitOp::AndOr),
            ("one", BitOp::One),
        ];
        let known = if version >= CompatVersion::V8_2 { 8 } else { 4 };
        OPS[..known]
            .iter()
            .find(|(name, _)| word_is(word, name))
            .map(|(_, op)| *op)
            .ok_or(Error::Syntax)
    }

    /// DIFF, DIFF1 and ANDOR combine the first source with the union of the others.
    fn against_union(self) -> bool {
        matches!(self, BitOp::Diff | BitOp::Diff1 | BitOp::AndOr)
    }

    /// Redis's source-count errors: NOT takes one source, the union operations two or more.
    fn check_sources(self, sources: usize) -> CmdResult<()> {
        if self == BitOp::Not && sources != 1 {
            return Err(Error::msg(
                "ERR BITOP NOT must be called with a single source key.",
            ));
        }
        if self.against_union() && sources < 2 {
            // Redis names the operation as matched (a C string: nothing past a NUL).
            let name = match self {
                BitOp::Diff => "DIFF",
                BitOp::Diff1 => "DIFF1",
                _ => "ANDOR",
            };
            return Err(Error::owned(format!(
                "ERR BITOP {name} must be called with at least two source keys."
            )));
        }
        Ok(())
    }
}

/// The running result of a BITOP: sources are folded in one at a time, missing keys and bytes
/// past a source's end being zeros. For DIFF, DIFF1 and ANDOR `acc` is the union of the sources
/// after the first (kept in `first`); for ONE, `seen_twice` holds the bits already seen in more
/// than one source.
struct BitFold {
    op: BitOp,
    acc: Vec<u8>,
    first: Vec<u8>,
    seen_twice: Vec<u8>,
}

impl BitFold {
    fn new(op: BitOp, source: &[u8]) -> BitFold {
        let (acc, first) = match op {
            BitOp::Not => (source.iter().map(|b| !b).collect(), Vec::new()),
            op if op.against_union() => (Vec::new(), source.to_vec()),
            _ => (source.to_vec(), Vec::new()),
        };
        BitFold {
            op,
            acc,
            first,
            seen_twice: Vec::new(),
        }
    }

    fn add(&mut self, source: &[u8]) {
        if self.acc.len() < source.len() {
            // For AND the new bytes stay 0: an earlier source was shorter (zeros) there.
            self.acc.resize(source.len(), 0);
        }
        if self.op == BitOp::One {
            self.seen_twice.resize(self.acc.len(), 0);
        }
        let pairs = self.acc.iter_mut().zip(source);
        match self.op {
            BitOp::And => {
                pairs.for_each(|(r, s)| *r &= s);
                self.acc[source.len()..].fill(0);
            }
            BitOp::Or | BitOp::Diff | BitOp::Diff1 | BitOp::AndOr => {
                pairs.for_each(|(r, s)| *r |= s)
            }
            BitOp::Xor => pairs.for_each(|(r, s)| *r ^= s),
            BitOp::One => {
                for ((r, s), twice) in pairs.zip(self.seen_twice.iter_mut()) {
                    *twice |= *r & s;
                    *r = (*r ^ s) & !*twice;
                }
            }
            BitOp::Not => unreachable!("NOT has one source"),
        }
    }

    /// The result, as long as the longest source.
    fn finish(self) -> Vec<u8> {
        if !self.op.against_union() {
            return self.acc;
        }
        let (first, union) = (self.first, self.acc);
        let len = first.len().max(union.len());
        let byte = |v: &[u8], i: usize| v.get(i).copied().unwrap_or(0);
        (0..len)
            .map(|i| {
                let (x, u) = (byte(&first, i), byte(&union, i));
                match self.op {
                    BitOp::Diff => x & !u,
                    BitOp::Diff1 => !x & u,
                    _ => x & u,
                }
            })
            .collect()
    }
}

fn bitop(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = ctx.args;
    let op = BitOp::parse(&args[1], ctx.registry.version)?;
    op.check_sources(args.len() - 3)?;
    let (db, now, target) = (ctx.client.db, ctx.now_ms, ctx.arg(2));
    let mut fold: Option<BitFold> = None;
    for key in &args[3..] {
        let source = match ctx.ks.read(db, key, now) {
            Some(value) => Some(string_of(value)?),
            None => None,
        };
        let source: &[u8] = source.as_deref().unwrap_or(&[]);
        match fold.as_mut() {
            None => fold = Some(BitFold::new(op, source)),
            Some(fold) => fold.add(source),
        }
    }
    let result = fold.expect("arity: one source at least").finish();
    let len = result.len();
    if len == 0 {
        if ctx.ks.delete(db, target, now) {
            ctx.notify(GENERIC, "del", target);
        }
    } else {
        ctx.ks
            .store(db, target, StoreIf::Always, Ttl::Clear, now, || {
                Value::Raw(Box::new(result))
            });
        ctx.notify(STRING, "set", target);
    }
    ctx.out.integer(len as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// BITFIELD
// ---------------------------------------------------------------------------------------------

/// What BITFIELD does when a SET or INCRBY does not fit the field's width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Overflow {
    /// Modular arithmetic (the default): unsigned wraps to 0, signed to the most negative value.
    Wrap,
    /// Clamp to the field's minimum or maximum.
    Sat,
    /// Write nothing and answer a null for that operation.
    Fail,
}

/// A field: `i1`..`i64` or `u1`..`u63` (u64 would not fit the protocol's signed integers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FieldType {
    signed: bool,
    bits: u32,
}

impl FieldType {
    fn parse(arg: &[u8]) -> CmdResult<FieldType> {
        let invalid = || {
            Error::msg(
                "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
            )
        };
        // Redis reads the width as a C string: anything after a NUL is not part of it.
        let arg = arg.split(|&b| b == 0).next().unwrap_or_default();
        let signed = match arg.first() {
            Some(b'i') => true,
            Some(b'u') => false,
            _ => return Err(invalid()),
        };
        match parse_i64(&arg[1..]) {
            Some(bits) if bits >= 1 && bits <= if signed { 64 } else { 63 } => Ok(FieldType {
                signed,
                bits: bits as u32,
            }),
            _ => Err(invalid()),
        }
    }

    fn max(self) -> i128 {
        if self.signed {
            (1i128 << (self.bits - 1)) - 1
        } else {
            (1i128 << self.bits) - 1
        }
    }

    fn min(self) -> i128 {
        if self.signed {
            -(1i128 << (self.bits - 1))
        } else {
            0
        }
    }

    /// `value` reduced into the field's range modulo 2^bits (two's complement for signed).
    fn wrap(self, value: i128) -> i128 {
        let modulus = 1i128 << self.bits;
        let v = value.rem_euclid(modulus);
        if self.signed && v > self.max() {
            v - modulus
        } else {
            v
        }
    }

    /// The value stored for `value` under `overflow`, or `None` when FAIL refuses it.
    fn fit(self, value: i128, overflow: Overflow) -> Option<i128> {
        if (self.min()..=self.max()).contains(&value) {
            return Some(value);
        }
        match overflow {
            Overflow::Wrap => Some(self.wrap(value)),
            Overflow::Sat => Some(value.clamp(self.min(), self.max())),
            Overflow::Fail => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldOp {
    Get,
    Set(i64),
    IncrBy(i64),
}

#[derive(Debug, Clone, Copy)]
struct BitfieldOp {
    op: FieldOp,
    field: FieldType,
    offset: u64,
    overflow: Overflow,
}

/// The field's bits at `offset` (big-endian bit order, as SETBIT's), zero past the end.
fn read_field(bytes: &[u8], offset: u64, field: FieldType) -> i128 {
    let mut raw: u64 = 0;
    for i in 0..field.bits as u64 {
        raw = (raw << 1) | bit_at(bytes, offset + i) as u64;
    }
    if field.signed && field.bits < 64 && raw >> (field.bits - 1) & 1 == 1 {
        raw as i128 - (1i128 << field.bits)
    } else if field.signed {
        raw as i64 as i128
    } else {
        raw as i128
    }
}

/// Writes the low `field.bits` bits of `value` at `offset`; `bytes` is long enough.
fn write_field(bytes: &mut [u8], offset: u64, field: FieldType, value: i128) {
    let raw = value as u64;
    for i in 0..field.bits as u64 {
        let bit = (raw >> (field.bits as u64 - 1 - i)) & 1;
        let at = offset + i;
        let byte = (at >> 3) as usize;
        let shift = 7 - (at & 7);
        bytes[byte] = (bytes[byte] & !(1 << shift)) | ((bit as u8) << shift);
    }
}

/// The key flags of one BITFIELD command line (Redis's `bitfieldGetKeys`): read-only while it
/// has only GETs and OVERFLOWs, read-write from the first SET or INCRBY or anything unparsable.
fn bitfield_key_flags(args: &[bytes::Bytes], _declared: u16) -> u16 {
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - i - 1;
        if word_is(&args[i], "get") && more >= 2 {
            i += 3;
        } else if word_is(&args[i], "overflow") && more >= 1 {
            i += 2;
        } else {
            return flag::RW | flag::ACCESS | flag::UPDATE;
        }
    }
    RO_ACCESS
}

/// Parses BITFIELD's operations in order; the first bad argument is the error, before the key
/// is looked at.
fn parse_bitfield_ops(ctx: &Ctx<'_>) -> CmdResult<Vec<BitfieldOp>> {
    let limit = ctx.server.config.proto_max_bulk_len;
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < ctx.argc() {
        let more = ctx.argc() - j - 1;
        let word = ctx.arg(j);
        let op = if word_is(word, "get") && more >= 2 {
            FieldOp::Get
        } else if word_is(word, "set") && more >= 3 {
            FieldOp::Set(0)
        } else if word_is(word, "incrby") && more >= 3 {
            FieldOp::IncrBy(0)
        } else if word_is(word, "overflow") && more >= 1 {
            let kind = ctx.arg(j + 1);
            overflow = if word_is(kind, "wrap") {
                Overflow::Wrap
            } else if word_is(kind, "sat") {
                Overflow::Sat
            } else if word_is(kind, "fail") {
                Overflow::Fail
            } else {
                return Err(Error::msg("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(Error::Syntax);
        };
        let field = FieldType::parse(ctx.arg(j + 1))?;
        let offset = field_offset(ctx.arg(j + 2), field.bits, limit)?;
        let op = match op {
            FieldOp::Get => FieldOp::Get,
            FieldOp::Set(_) => FieldOp::Set(ctx.int_arg(j + 3)?),
            FieldOp::IncrBy(_) => FieldOp::IncrBy(ctx.int_arg(j + 3)?),
        };
        ops.push(BitfieldOp {
            op,
            field,
            offset,
            overflow,
        });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    Ok(ops)
}

/// A BITFIELD offset: a bit number, or `#n` for the n-th field of this width.
fn field_offset(arg: &[u8], bits: u32, limit: i64) -> CmdResult<u64> {
    let err = || Error::msg("ERR bit offset is not an integer or out of range");
    let (digits, scale) = match arg.strip_prefix(b"#") {
        Some(rest) => (rest, bits as i64),
        None => (arg, 1),
    };
    let n = parse_i64(digits).ok_or_else(err)?;
    // Redis multiplies in 64 bits; a product that overflows is refused like any other.
    let offset = n.checked_mul(scale).ok_or_else(err)?;
    if offset < 0 || (offset >> 3) >= limit {
        return Err(err());
    }
    Ok(offset as u64)
}

fn bitfield(ctx: &mut Ctx<'_>) -> CmdResult {
    bitfield_generic(ctx, false)
}

fn bitfield_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    bitfield_generic(ctx, true)
}

/// BITFIELD and BITFIELD_RO: every operation is parsed first; a command with only GETs reads
/// the key (a missing key reads as zeros), one that writes grows the string to the farthest bit
/// it writes. Each SET answers the old value, each INCRBY the new one, a FAIL overflow a null;
/// only operations that changed a value (or created the key) count as changes.
fn bitfield_generic(ctx: &mut Ctx<'_>, read_only_command: bool) -> CmdResult {
    let ops = parse_bitfield_ops(ctx)?;
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    let writes = ops.iter().any(|o| o.op != FieldOp::Get);
    if !writes {
        let bytes = match ctx.ks.read(db, key, now) {
            Some(value) => Some(string_of(value)?.to_vec()),
            None => None,
        };
        let bytes = bytes.as_deref().unwrap_or_default();
        ctx.out.array(ops.len());
        for op in &ops {
            let v = read_field(bytes, op.offset, op.field);
            ctx.out.integer(v as i64);
        }
        return Ok(());
    }
    if read_only_command {
        return Err(Error::msg(
            "ERR BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let highest = ops
        .iter()
        .filter(|o| o.op != FieldOp::Get)
        .map(|o| o.offset + o.field.bits as u64 - 1)
        .max()
        .unwrap_or(0);
    let needed = (highest >> 3) as usize + 1;
    let mut created = false;
    let mut grew = false;
    let mut old_len = 0;
    match ctx.ks.write(db, key, now) {
        Some(value) => {
            old_len = string_len(value)?;
            let buffer = value.make_raw().expect("a string");
            if buffer.len() < needed {
                buffer.resize(needed, 0);
                grew = true;
            }
        }
        None => {
            ctx.ks
                .add(db, key, Value::Raw(Box::new(vec![0u8; needed])), None, now);
            // Redis counts a change per operation that wrote, not the creation itself.
            ctx.ks.dirty -= 1;
            created = true;
        }
    }
    let buffer = ctx
        .ks
        .write(db, key, now)
        .and_then(|v| v.make_raw())
        .expect("the string just made room for");
    let mut replies: Vec<Option<i64>> = Vec::with_capacity(ops.len());
    let mut changes = 0u64;
    for op in &ops {
        let old = read_field(buffer, op.offset, op.field);
        match op.op {
            FieldOp::Get => replies.push(Some(old as i64)),
            FieldOp::Set(v) | FieldOp::IncrBy(v) => {
                let (target, answer_old) = match op.op {
                    // Redis takes an unsigned field's new value as the unsigned reading of the
                    // 64-bit argument: -1 is 2^64-1, which overflows (SAT gives the maximum).
                    FieldOp::Set(_) if !op.field.signed => (v as u64 as i128, true),
                    FieldOp::Set(_) => (v as i128, true),
                    _ => (old + v as i128, false),
                };
                match op.field.fit(target, op.overflow) {
                    Some(new) => {
                        write_field(buffer, op.offset, op.field, new);
                        replies.push(Some(if answer_old { old } else { new } as i64));
                        if created || grew || old != new {
                            changes += 1;
                        }
                    }
                    None => replies.push(None),
                }
            }
        }
    }
    ctx.ks.dirty += changes;
    if grew && (old_len == 0 || changes == 0) {
        // Redis 8.2.3 counts a string's growth only when it was not empty and a field changed.
        ctx.ks.keysize_uncounted(db, key);
    }
    // A new key's event before the reply, `setbit` after it, as in Redis.
    ctx.publish_events();
    ctx.out.array(replies.len());
    for reply in replies {
        match reply {
            Some(v) => ctx.out.integer(v),
            None => ctx.out.null(),
        }
    }
    if changes > 0 {
        ctx.notify(STRING, "setbit", key);
    }
    Ok(())
}

const RO_ACCESS: u16 = flag::RO | flag::ACCESS;

const BITOP: CommandSpec = CommandSpec::new("bitop", -4, bitop)
    .flags(Flags::WRITE.union(Flags::DENYOOM))
    .acl(Acl::BITMAP)
    .keys(&[
        KeySpec::single(2, flag::OW | flag::UPDATE),
        KeySpec::range(3, -1, 1, RO_ACCESS),
    ])
    .doc(
        "bitmap",
        "2.6.0",
        "O(N)",
        "Stores the AND, OR, XOR or NOT of strings under a destination key; returns its length.",
        "operation destkey:key key...",
    );

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("setbit", 4, setbit)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::BITMAP)
        .keys(&[KeySpec::single(1, flag::RW | flag::ACCESS | flag::UPDATE)])
        .doc(
            "bitmap",
            "2.2.0",
            "O(1)",
            "Sets or clears one bit of a key's string, growing it as needed; returns the previous bit.",
            "key offset:integer value:integer",
        ),
    CommandSpec::new("getbit", 3, getbit)
        .flags(Flags::READONLY.union(Flags::FAST))
        .acl(Acl::BITMAP)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "bitmap",
            "2.2.0",
            "O(1)",
            "Returns one bit of a key's string (0 past its end).",
            "key offset:integer",
        ),
    CommandSpec::new("bitcount", -2, bitcount)
        .flags(Flags::READONLY)
        .acl(Acl::BITMAP)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "bitmap",
            "2.6.0",
            "O(N)",
            "Counts the set bits of a key's string, optionally within a byte or bit range.",
            "key index=[start:integer end:integer unit=[BYTE|BIT]]",
        ),
    CommandSpec::new("bitpos", -3, bitpos)
        .flags(Flags::READONLY)
        .acl(Acl::BITMAP)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "bitmap",
            "2.8.7",
            "O(N)",
            "Finds the first set or clear bit of a key's string, optionally within a byte or bit range.",
            "key bit:integer index=[start:integer end_index=[end:integer unit=[BYTE|BIT]]]",
        ),
    BITOP.until("8.2.0"),
    // Redis 8.2 adds DIFF, DIFF1, ANDOR and ONE, and documents the operation as a one-of.
    BITOP
        .from("8.2.0")
        .doc(
            "bitmap",
            "2.6.0",
            "O(N)",
            "Stores the AND, OR, XOR, NOT, DIFF, DIFF1, ANDOR or ONE of strings under a destination key; returns its length.",
            "operation=(AND|OR|XOR|NOT|DIFF|DIFF1|ANDOR|ONE) destkey:key key...",
        ),
    CommandSpec::new("bitfield", -2, bitfield)
        .flags(Flags::WRITE.union(Flags::DENYOOM))
        .acl(Acl::BITMAP)
        .keys(&[KeySpec::single(
            1,
            flag::RW | flag::UPDATE | flag::ACCESS | flag::VARIABLE_FLAGS,
        )
        .notes("This command allows both access and modification of the key")])
        .key_flags(bitfield_key_flags)
        .doc(
            "bitmap",
            "3.2.0",
            "O(1) for each subcommand specified",
            "Reads, writes and increments integers of any width from 1 to 64 bits at any bit offset of a key's string.",
            "key [operation=(GET encoding_offset=(encoding offset:integer)|write=([OVERFLOW wrap_sat_fail=(WRAP|SAT|FAIL)] write_operation=(SET encoding_offset_value=(encoding offset:integer value:integer)|INCRBY encoding_offset_increment=(encoding offset:integer increment:integer))))...]",
        ),
    CommandSpec::new("bitfield_ro", -2, bitfield_ro)
        .flags(Flags::READONLY.union(Flags::FAST))
        .acl(Acl::BITMAP)
        .keys(&[KeySpec::single(1, RO_ACCESS)])
        .doc(
            "bitmap",
            "6.0.0",
            "O(1) for each subcommand specified",
            "Reads integers of any width from 1 to 64 bits at any bit offset of a key's string.",
            "key [GET encoding_offset=(encoding offset:integer)...+]",
        ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a model of the string as a vector of bits: writing a field changes exactly
        /// its bits, reading it back gives the value reduced to the field's width (two's
        /// complement for signed fields), and GETBIT-order bit numbering is the same.
        #[test]
        fn bitfield_fields_match_bit_model(
            bytes in proptest::collection::vec(any::<u8>(), 0..12),
            offset in 0u64..64,
            signed in any::<bool>(),
            width in 1u32..=64,
            value in any::<i64>(),
        ) {
            let bits = if signed { width } else { width.min(63) };
            let field = FieldType { signed, bits };
            let mut buffer = bytes.clone();
            let needed = ((offset + bits as u64 - 1) >> 3) as usize + 1;
            if buffer.len() < needed {
                buffer.resize(needed, 0);
            }
            let mut model = bits_of(&buffer);
            let stored = field.wrap(value as i128);
            write_field(&mut buffer, offset, field, stored);
            for i in 0..bits as u64 {
                model[(offset + i) as usize] = ((stored as u64 >> (bits as u64 - 1 - i)) & 1) as u8;
            }
            prop_assert_eq!(bits_of(&buffer), model);
            prop_assert_eq!(read_field(&buffer, offset, field), stored);
            prop_assert!(stored >= field.min() && stored <= field.max());
            prop_assert_eq!(stored.rem_euclid(1i128 << bits), (value as i128).rem_euclid(1i128 << bits));
        }
    }

    fn bits_of(bytes: &[u8]) -> Vec<u8> {
        (0..bytes.len() as u64 * 8)
            .map(|i| bit_at(bytes, i))
            .collect()
    }

    #[test]
    fn bit_order_is_msb_first() {
        assert_eq!(bit_at(b"\x80", 0), 1);
        assert_eq!(bit_at(b"\x01", 7), 1);
        assert_eq!(bit_at(b"\x01", 8), 0, "past the end");
        assert_eq!(count_ones(b"foobar", 0, 47), 26);
        assert_eq!(count_ones(b"foobar", 5, 30), 17);
        assert_eq!(find_bit(b"\xff\xf0", 0, 15, 0), Some(12));
        assert_eq!(find_bit(b"\x00\x00\x01", 0, 23, 1), Some(23));
        assert_eq!(find_bit(b"\x00\x00\x01", 0, 22, 1), None);
    }

    proptest! {
        /// Counting and searching agree with a bit-by-bit model on any range.
        #[test]
        fn count_and_find_match_a_model(
            bytes in proptest::collection::vec(any::<u8>(), 1..40),
            a in 0u64..320,
            b in 0u64..320,
            bit in 0u8..2,
        ) {
            let total = bytes.len() as u64 * 8;
            let (first, last) = (a.min(b) % total, a.max(b) % total);
            let (first, last) = (first.min(last), first.max(last));
            let model = bits_of(&bytes);
            let range = &model[first as usize..=last as usize];
            prop_assert_eq!(
                count_ones(&bytes, first, last),
                range.iter().filter(|&&x| x == 1).count() as u64
            );
            prop_assert_eq!(
                find_bit(&bytes, first, last, bit),
                range.iter().position(|&x| x == bit).map(|p| first + p as u64)
            );
        }
    }
}
