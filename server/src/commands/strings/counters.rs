//! The counters: INCR, DECR, INCRBY, DECRBY (in place on an `int` value) and INCRBYFLOAT (in
//! long double, as Redis computes it).

use bytes::Bytes;
use embedis_datatypes::long_double::LongDouble;
use embedis_protocol::number::parse_i64;

use crate::base::config::event_class::STRING;
use crate::base::error::{CmdResult, Error};
use crate::base::value::Value;
use crate::commands::common::long_double_add;
use crate::kernel::ctx::Ctx;

use super::string_of;

// ---------------------------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------------------------

/// INCR and friends: the stored string must be a canonical i64; the result is `int`-encoded and
/// keeps the key's TTL.
fn incr_by(ctx: &mut Ctx<'_>, by: i64) -> CmdResult {
    let (db, now, key) = (ctx.client.db, ctx.now_ms, ctx.arg(1));
    match ctx.ks.write(db, key, now) {
        Some(value) => {
            let current = match &*value {
                Value::Int(n) => *n,
                other => parse_i64(&string_of(other)?).ok_or(Error::NotInteger)?,
            };
            let result = current.checked_add(by).ok_or(Error::Overflow)?;
            *value = Value::Int(result);
            ctx.ks.dirty += 1;
            ctx.notify(STRING, "incrby", key);
            ctx.out.integer(result);
        }
        None => {
            ctx.ks.add(db, key, Value::Int(by), None, now);
            ctx.notify(STRING, "incrby", key);
            ctx.out.integer(by);
        }
    }
    Ok(())
}

pub(super) fn incr(ctx: &mut Ctx<'_>) -> CmdResult {
    incr_by(ctx, 1)
}

pub(super) fn decr(ctx: &mut Ctx<'_>) -> CmdResult {
    incr_by(ctx, -1)
}

pub(super) fn incrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let by = ctx.int_arg(2)?;
    incr_by(ctx, by)
}

pub(super) fn decrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let by = ctx.int_arg(2)?;
    if by == i64::MIN {
        return Err(Error::msg("ERR decrement would overflow"));
    }
    incr_by(ctx, -by)
}

/// INCRBYFLOAT's arithmetic: the stored number (0 if missing) plus `increment`, both read as
/// Redis reads long doubles, added in x87 precision and printed in Redis's human form.
fn float_sum(current: Option<&Value>, increment: &[u8]) -> CmdResult<String> {
    let value = match current {
        None => LongDouble::ZERO,
        Some(Value::Int(n)) => LongDouble::from_i64(*n),
        Some(other) => LongDouble::from_redis_bytes(&string_of(other)?).ok_or(Error::NotFloat)?,
    };
    let increment = LongDouble::from_redis_bytes(increment).ok_or(Error::NotFloat)?;
    long_double_add(value, increment)
}

pub(super) fn incrbyfloat(ctx: &mut Ctx<'_>) -> CmdResult {
    let (db, now, key, increment) = (ctx.client.db, ctx.now_ms, ctx.arg(1), ctx.arg(2));
    let text = match ctx.ks.write(db, key, now) {
        Some(value) => {
            let text = float_sum(Some(value), increment)?;
            // A plain string, never int-encoded, and the TTL stays.
            *value = Value::plain_string(text.as_bytes());
            ctx.ks.dirty += 1;
            text
        }
        None => {
            let text = float_sum(None, increment)?;
            ctx.ks
                .add(db, key, Value::plain_string(text.as_bytes()), None, now);
            text
        }
    };
    // Propagated as the value it left, so that a replica does not redo the float sum.
    let args = ctx.args;
    ctx.propagate_as(|| {
        vec![
            Bytes::from_static(b"SET"),
            args[1].clone(),
            Bytes::copy_from_slice(text.as_bytes()),
            Bytes::from_static(b"KEEPTTL"),
        ]
    });
    ctx.notify(STRING, "incrbyfloat", key);
    ctx.out.bulk(text.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::io::test_harness::Harness;

    #[test]
    fn incrbyfloat_uses_long_double() {
        let mut h = Harness::new();
        h.run_text("SET f 10.5");
        assert_eq!(h.run_text("INCRBYFLOAT f 0.1"), "$4\r\n10.6\r\n");
        assert_eq!(
            h.run_text("INCRBYFLOAT g 0.000003814697265625"),
            "$19\r\n0.00000381469726562\r\n"
        );
        assert_eq!(
            h.run_text("INCRBYFLOAT f inf"),
            "-ERR increment would produce NaN or Infinity\r\n"
        );
        h.run_text("SET h abc");
        assert_eq!(
            h.run_text("INCRBYFLOAT h 1"),
            "-ERR value is not a valid float\r\n"
        );
    }
}
