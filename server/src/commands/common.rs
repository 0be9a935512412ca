//! Helpers every handler family may use: argument parsing with Redis's own errors (C `int`
//! arguments, database numbers, millisecond timeouts, SCAN cursors and options), HELP replies,
//! and the long-double sum INCRBYFLOAT and HINCRBYFLOAT share.
//!
//! They live here rather than in the family that first needed them, so that families do not
//! borrow from each other: a family module imports `common` and the layers below, and another
//! family only where it really builds on that family's value type (bits on strings).

use embedis_datatypes::long_double::LongDouble;
use embedis_protocol::number::parse_i64;

use crate::base::cstr::{c_str, word_is};
use crate::base::error::{CmdResult, Error};
use crate::kernel::ctx::Ctx;

/// Writes a HELP reply: one simple string per line.
/// Redis's `addReplySubcommandSyntaxError`: a subcommand given arguments none of its forms
/// takes, named as the client typed it (at most 128 bytes), with the container's HELP.
pub fn subcommand_syntax_error(ctx: &Ctx<'_>) -> Error {
    let mut line = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    let name = crate::base::cstr::c_str(ctx.arg(1));
    line.extend_from_slice(&name[..name.len().min(128)]);
    line.extend_from_slice(b"'. Try ");
    line.extend(crate::base::cstr::c_str(ctx.arg(0)).to_ascii_uppercase());
    line.extend_from_slice(b" HELP.");
    Error::bytes(line)
}

pub fn write_help(ctx: &mut Ctx<'_>, lines: &[&str]) {
    ctx.out.array(lines.len());
    for line in lines {
        ctx.out.simple(line.as_bytes());
    }
}

/// Parses a millisecond timeout as Redis's `getTimeoutFromObjectOrReply`: an integer, not
/// negative. Returns the absolute deadline, or 0 for "no timeout". Like Redis, a huge timeout
/// wraps around rather than saturating (so `CLIENT PAUSE 9223372036854775807` ends at once).
pub fn deadline_from_ms(ctx: &Ctx<'_>, arg: usize) -> CmdResult<i64> {
    let timeout = parse_i64(ctx.arg(arg))
        .ok_or(Error::msg("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Error::msg("ERR timeout is negative"));
    }
    Ok(if timeout > 0 {
        timeout.wrapping_add(ctx.now_ms)
    } else {
        0
    })
}

/// Argument `i` as a C `int`, with Redis's `getIntFromObjectOrReply` errors: `msg` (or the
/// generic not-an-integer text) for a non-integer, and `msg` (or the generic range text) for an
/// integer beyond 32 bits.
pub fn int32_arg(ctx: &Ctx<'_>, i: usize, msg: Option<&'static str>) -> CmdResult<i32> {
    let custom = |m: Option<&'static str>| m.map(Error::msg);
    let n = ctx.int_arg(i).map_err(|e| custom(msg).unwrap_or(e))?;
    i32::try_from(n).map_err(|_| {
        custom(msg).unwrap_or(Error::msg(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        ))
    })
}

/// `index` as a database number of this server, or `ERR DB index is out of range`.
pub fn db_index(ctx: &Ctx<'_>, index: i32) -> CmdResult<usize> {
    usize::try_from(index)
        .ok()
        .filter(|&i| i < ctx.ks.dbs.len())
        .ok_or(Error::DbIndexOutOfRange)
}

/// A SCAN cursor, parsed as Redis does with `strtoul`: the argument is read as a C string (up to
/// a NUL byte), may not start with white space, may carry a sign (a negative number wraps
/// modulo 2^64, as `strtoul` does), must be all digits otherwise and fit in 64 bits. The empty
/// string is cursor 0.
pub fn parse_cursor(arg: &[u8]) -> CmdResult<u64> {
    let invalid = Error::msg("ERR invalid cursor");
    let text = c_str(arg);
    let Some(&first) = text.first() else {
        return Ok(0);
    };
    // C's isspace: space, \t, \n, \v, \f, \r.
    if matches!(first, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return Err(invalid);
    }
    let (negative, digits) = match first {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid);
    }
    let mut value: u64 = 0;
    for &d in digits {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add((d - b'0') as u64))
            .ok_or(invalid.clone())?;
    }
    Ok(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// The options of SCAN and of HSCAN / SSCAN / ZSCAN, as Redis's `scanGenericCommand` parses
/// them: `COUNT n` (an integer ≥ 1, else a syntax error), `MATCH pattern` (a lone `*` filters
/// nothing, so it is dropped — it would otherwise miss the empty key) and, for SCAN only,
/// `TYPE name`; anything else is a syntax error.
pub struct ScanOptions<'a> {
    pub count: i64,
    pub pattern: Option<&'a [u8]>,
    pub type_name: Option<&'a [u8]>,
    /// HSCAN … NOVALUES (Redis 7.4): fields only.
    pub no_values: bool,
}

pub fn parse_scan_options<'a>(
    args: &'a [bytes::Bytes],
    start: usize,
    allow_type: bool,
) -> CmdResult<ScanOptions<'a>> {
    parse_scan_options_with(args, start, allow_type, None)
}

/// How the scans of `ctx`'s version treat the word NOVALUES, for [`parse_scan_options_with`]:
/// from Redis 7.4 HSCAN (`hscan`) takes it and the others refuse it by name; before, it is an
/// unknown option.
pub fn novalues_word(ctx: &Ctx<'_>, hscan: bool) -> Option<bool> {
    (ctx.server.config.compat_version >= crate::base::compat::CompatVersion::V7_4).then_some(hscan)
}

/// [`parse_scan_options`] where Redis 7.4's NOVALUES is a word: `Some(true)` for HSCAN, which
/// takes it, `Some(false)` for the other scans, which refuse it with 7.4's error (`None`, as
/// 7.0: a syntax error).
pub fn parse_scan_options_with<'a>(
    args: &'a [bytes::Bytes],
    start: usize,
    allow_type: bool,
    novalues: Option<bool>,
) -> CmdResult<ScanOptions<'a>> {
    let mut options = ScanOptions {
        count: 10,
        pattern: None,
        type_name: None,
        no_values: false,
    };
    let mut i = start;
    while i < args.len() {
        let has_value = args.len() - i >= 2;
        let word = &args[i][..];
        if novalues.is_some() && word_is(word, "novalues") {
            if novalues != Some(true) {
                return Err(Error::msg("ERR NOVALUES option can only be used in HSCAN"));
            }
            options.no_values = true;
            i += 1;
            continue;
        }
        if word_is(word, "count") && has_value {
            options.count =
                embedis_protocol::number::parse_i64(&args[i + 1]).ok_or(Error::NotInteger)?;
            if options.count < 1 {
                return Err(Error::Syntax);
            }
        } else if word_is(word, "match") && has_value {
            let p = &args[i + 1][..];
            options.pattern = (p != b"*").then_some(p);
        } else if allow_type && word_is(word, "type") && has_value {
            // Compared as a C string, case-insensitively, like the option words.
            options.type_name = Some(c_str(&args[i + 1]));
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }
    Ok(options)
}

/// The arithmetic INCRBYFLOAT and HINCRBYFLOAT share: `value + increment` in x87 precision,
/// refused when the sum is not finite, printed in Redis's human form.
pub fn long_double_add(value: LongDouble, increment: LongDouble) -> CmdResult<String> {
    let sum = value + increment;
    if !sum.is_finite() {
        return Err(Error::msg("ERR increment would produce NaN or Infinity"));
    }
    Ok(sum.to_human_string())
}
